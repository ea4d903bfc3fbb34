/*
 * VMware paravirtual RDMA (PVRDMA) device ABI.
 *
 * Written for this project from the ABI as used by the Linux vmw_pvrdma
 * driver (drivers/infiniband/hw/vmw_pvrdma) and rdma-core's vmw_pvrdma
 * provider: register offsets, the device shared region (DSR), command and
 * response layouts, ring state, WQE and CQE formats.  All structures are
 * little-endian guest memory layouts; sizes are pinned by build asserts.
 * The command channel (command codes, request and response layouts) is in
 * pvrdma_abi_cmd.h, which this header includes.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_PVRDMA_ABI_H
#define HW_RDMA_PVRDMA_ABI_H

#include <stdint.h>

#define PVRDMA_VENDOR_ID                0x15ad
#define PVRDMA_DEVICE_ID                0x0820
#define PVRDMA_VMXNET3_DEVICE_ID        0x07b0

/* Device versions (REG_VERSION and dsr.driver_version). */
#define PVRDMA_ROCEV1_VERSION           17
#define PVRDMA_ROCEV2_VERSION           18
#define PVRDMA_PPN64_VERSION            19
#define PVRDMA_QPHANDLE_VERSION         20
#define PVRDMA_VERSION                  PVRDMA_QPHANDLE_VERSION

#define PVRDMA_PAGE_SIZE                4096u
#define PVRDMA_PAGE_SHIFT               12

/* Page directory: 1 directory page -> up to 512 table pages -> 512 pages. */
#define PVRDMA_PDIR_SHIFT               18
#define PVRDMA_PTABLE_SHIFT             9
#define PVRDMA_PDIR_ENTRIES             512u
#define PVRDMA_PAGE_DIR_DIR(x)          (((x) >> PVRDMA_PDIR_SHIFT) & 0x1)
#define PVRDMA_PAGE_DIR_TABLE(x)        (((x) >> PVRDMA_PTABLE_SHIFT) & 0x1ff)
#define PVRDMA_PAGE_DIR_PAGE(x)         ((x) & 0x1ff)
#define PVRDMA_PAGE_DIR_MAX_PAGES       (1u * 512u * 512u)
#define PVRDMA_MAX_FAST_REG_PAGES       128

/* BARs */
#define PVRDMA_BAR_MSIX                 0
#define PVRDMA_BAR_REGS                 1
#define PVRDMA_BAR_UAR                  2
#define PVRDMA_MAX_INTERRUPTS           3

/* BAR1 registers */
#define PVRDMA_REG_VERSION              0x00
#define PVRDMA_REG_DSRLOW               0x04
#define PVRDMA_REG_DSRHIGH              0x08
#define PVRDMA_REG_CTL                  0x0c
#define PVRDMA_REG_REQUEST              0x10
#define PVRDMA_REG_ERR                  0x14
#define PVRDMA_REG_ICR                  0x18
#define PVRDMA_REG_IMR                  0x1c
#define PVRDMA_REG_MACL                 0x20
#define PVRDMA_REG_MACH                 0x24
#define PVRDMA_REGS_SIZE                0x28

enum pvrdma_device_ctl {
    PVRDMA_DEVICE_CTL_ACTIVATE,
    PVRDMA_DEVICE_CTL_UNQUIESCE,
    PVRDMA_DEVICE_CTL_RESET,
};

enum pvrdma_intr_vector {
    PVRDMA_INTR_VECTOR_RESPONSE,
    PVRDMA_INTR_VECTOR_ASYNC,
    PVRDMA_INTR_VECTOR_CQ,
};

#define PVRDMA_INTR_CAUSE_RESPONSE      (1u << PVRDMA_INTR_VECTOR_RESPONSE)
#define PVRDMA_INTR_CAUSE_ASYNC         (1u << PVRDMA_INTR_VECTOR_ASYNC)
#define PVRDMA_INTR_CAUSE_CQ            (1u << PVRDMA_INTR_VECTOR_CQ)

/* UAR doorbells (offsets within a 4 KiB UAR page, values) */
#define PVRDMA_UAR_HANDLE_MASK          0x00ffffffu
#define PVRDMA_UAR_QP_OFFSET            0
#define PVRDMA_UAR_QP_SEND              (1u << 30)
#define PVRDMA_UAR_QP_RECV              (1u << 31)
#define PVRDMA_UAR_CQ_OFFSET            4
#define PVRDMA_UAR_CQ_ARM_SOL           (1u << 29)
#define PVRDMA_UAR_CQ_ARM               (1u << 30)
#define PVRDMA_UAR_CQ_POLL              (1u << 31)
#define PVRDMA_UAR_SRQ_OFFSET           8
#define PVRDMA_UAR_SRQ_RECV             (1u << 30)

/* Capability bits */
#define PVRDMA_ATOMIC_OP_COMP_SWAP      (1u << 0)
#define PVRDMA_ATOMIC_OP_FETCH_ADD      (1u << 1)
#define PVRDMA_BMME_FLAG_LOCAL_INV      (1u << 0)
#define PVRDMA_BMME_FLAG_REMOTE_INV     (1u << 1)
#define PVRDMA_BMME_FLAG_FAST_REG_WR    (1u << 2)
#define PVRDMA_GID_TYPE_FLAG_ROCE_V1    (1u << 0)
#define PVRDMA_GID_TYPE_FLAG_ROCE_V2    (1u << 1)
#define PVRDMA_DEVICE_MODE_ROCE         0

#define PVRDMA_MR_FLAG_DMA              (1u << 0)
#define PVRDMA_MR_FLAG_FRMR             (1u << 1)

/* ib_device_cap_flags bits the device advertises */
#define PVRDMA_DEV_CAP_RC_RNR_NAK_GEN   (1u << 3)
#define PVRDMA_DEV_CAP_PORT_ACTIVE_EVENT (1u << 12)
#define PVRDMA_DEV_CAP_MEM_MGT_EXT      (1u << 21)

/* Interpretation of values in guest structures */
enum pvrdma_port_state {
    PVRDMA_PORT_NOP = 0,
    PVRDMA_PORT_DOWN = 1,
    PVRDMA_PORT_INIT = 2,
    PVRDMA_PORT_ARMED = 3,
    PVRDMA_PORT_ACTIVE = 4,
};

enum pvrdma_mtu {
    PVRDMA_MTU_256 = 1,
    PVRDMA_MTU_512 = 2,
    PVRDMA_MTU_1024 = 3,
    PVRDMA_MTU_2048 = 4,
    PVRDMA_MTU_4096 = 5,
};

#define PVRDMA_PORT_CM_SUP              (1u << 16)
#define PVRDMA_PORT_IP_BASED_GIDS       (1u << 26)
#define PVRDMA_WIDTH_4X                 2
#define PVRDMA_SPEED_QDR                4
#define PVRDMA_PHYS_STATE_DISABLED      3
#define PVRDMA_PHYS_STATE_LINKUP        5

enum pvrdma_qp_type {
    PVRDMA_QPT_SMI,
    PVRDMA_QPT_GSI,
    PVRDMA_QPT_RC,
    PVRDMA_QPT_UC,
    PVRDMA_QPT_UD,
};

enum pvrdma_qp_state {
    PVRDMA_QPS_RESET,
    PVRDMA_QPS_INIT,
    PVRDMA_QPS_RTR,
    PVRDMA_QPS_RTS,
    PVRDMA_QPS_SQD,
    PVRDMA_QPS_SQE,
    PVRDMA_QPS_ERR,
};

/* modify/query QP attribute mask */
#define PVRDMA_QP_STATE                 (1u << 0)
#define PVRDMA_QP_CUR_STATE             (1u << 1)
#define PVRDMA_QP_EN_SQD_ASYNC_NOTIFY   (1u << 2)
#define PVRDMA_QP_ACCESS_FLAGS          (1u << 3)
#define PVRDMA_QP_PKEY_INDEX            (1u << 4)
#define PVRDMA_QP_PORT                  (1u << 5)
#define PVRDMA_QP_QKEY                  (1u << 6)
#define PVRDMA_QP_AV                    (1u << 7)
#define PVRDMA_QP_PATH_MTU              (1u << 8)
#define PVRDMA_QP_TIMEOUT               (1u << 9)
#define PVRDMA_QP_RETRY_CNT             (1u << 10)
#define PVRDMA_QP_RNR_RETRY             (1u << 11)
#define PVRDMA_QP_RQ_PSN                (1u << 12)
#define PVRDMA_QP_MAX_QP_RD_ATOMIC      (1u << 13)
#define PVRDMA_QP_ALT_PATH              (1u << 14)
#define PVRDMA_QP_MIN_RNR_TIMER         (1u << 15)
#define PVRDMA_QP_SQ_PSN                (1u << 16)
#define PVRDMA_QP_MAX_DEST_RD_ATOMIC    (1u << 17)
#define PVRDMA_QP_PATH_MIG_STATE        (1u << 18)
#define PVRDMA_QP_CAP                   (1u << 19)
#define PVRDMA_QP_DEST_QPN              (1u << 20)
#define PVRDMA_QP_ATTR_MASK_ALL         ((1u << 21) - 1)

/* SRQ attribute mask (ib_srq_attr_mask) */
#define PVRDMA_SRQ_MAX_WR               (1u << 0)
#define PVRDMA_SRQ_LIMIT                (1u << 1)

/* access flags */
#define PVRDMA_ACCESS_LOCAL_WRITE       (1u << 0)
#define PVRDMA_ACCESS_REMOTE_WRITE      (1u << 1)
#define PVRDMA_ACCESS_REMOTE_READ       (1u << 2)
#define PVRDMA_ACCESS_REMOTE_ATOMIC     (1u << 3)
#define PVRDMA_ACCESS_MW_BIND           (1u << 4)
#define PVRDMA_ZERO_BASED               (1u << 5)
#define PVRDMA_ACCESS_ON_DEMAND         (1u << 6)
#define PVRDMA_ACCESS_FLAGS_ALL         ((1u << 7) - 1)
/*
 * ib_access_flags bits 20..29 are "optional" (IB_ACCESS_RELAXED_ORDERING is
 * bit 20): a device may ignore them, and the Linux driver passes them
 * through unchanged (perftest sets relaxed ordering).
 */
#define PVRDMA_ACCESS_OPTIONAL          (0x3ffu << 20)

/* send flags */
#define PVRDMA_SEND_FENCE               (1u << 0)
#define PVRDMA_SEND_SIGNALED            (1u << 1)
#define PVRDMA_SEND_SOLICITED           (1u << 2)
#define PVRDMA_SEND_INLINE              (1u << 3)
#define PVRDMA_SEND_IP_CSUM             (1u << 4)

enum pvrdma_wr_opcode {
    PVRDMA_WR_RDMA_WRITE,
    PVRDMA_WR_RDMA_WRITE_WITH_IMM,
    PVRDMA_WR_SEND,
    PVRDMA_WR_SEND_WITH_IMM,
    PVRDMA_WR_RDMA_READ,
    PVRDMA_WR_ATOMIC_CMP_AND_SWP,
    PVRDMA_WR_ATOMIC_FETCH_AND_ADD,
    PVRDMA_WR_LSO,
    PVRDMA_WR_SEND_WITH_INV,
    PVRDMA_WR_RDMA_READ_WITH_INV,
    PVRDMA_WR_LOCAL_INV,
    PVRDMA_WR_FAST_REG_MR,
    PVRDMA_WR_MASKED_ATOMIC_CMP_AND_SWP,
    PVRDMA_WR_MASKED_ATOMIC_FETCH_AND_ADD,
    PVRDMA_WR_BIND_MW,
    PVRDMA_WR_REG_SIG_MR,
    PVRDMA_WR_ERROR,
};

enum pvrdma_wc_status {
    PVRDMA_WC_SUCCESS,
    PVRDMA_WC_LOC_LEN_ERR,
    PVRDMA_WC_LOC_QP_OP_ERR,
    PVRDMA_WC_LOC_EEC_OP_ERR,
    PVRDMA_WC_LOC_PROT_ERR,
    PVRDMA_WC_WR_FLUSH_ERR,
    PVRDMA_WC_MW_BIND_ERR,
    PVRDMA_WC_BAD_RESP_ERR,
    PVRDMA_WC_LOC_ACCESS_ERR,
    PVRDMA_WC_REM_INV_REQ_ERR,
    PVRDMA_WC_REM_ACCESS_ERR,
    PVRDMA_WC_REM_OP_ERR,
    PVRDMA_WC_RETRY_EXC_ERR,
    PVRDMA_WC_RNR_RETRY_EXC_ERR,
    PVRDMA_WC_LOC_RDD_VIOL_ERR,
    PVRDMA_WC_REM_INV_RD_REQ_ERR,
    PVRDMA_WC_REM_ABORT_ERR,
    PVRDMA_WC_INV_EECN_ERR,
    PVRDMA_WC_INV_EEC_STATE_ERR,
    PVRDMA_WC_FATAL_ERR,
    PVRDMA_WC_RESP_TIMEOUT_ERR,
    PVRDMA_WC_GENERAL_ERR,
};

enum pvrdma_wc_opcode {
    PVRDMA_WC_SEND,
    PVRDMA_WC_RDMA_WRITE,
    PVRDMA_WC_RDMA_READ,
    PVRDMA_WC_COMP_SWAP,
    PVRDMA_WC_FETCH_ADD,
    PVRDMA_WC_BIND_MW,
    PVRDMA_WC_LSO,
    PVRDMA_WC_LOCAL_INV,
    PVRDMA_WC_FAST_REG_MR,
    PVRDMA_WC_MASKED_COMP_SWAP,
    PVRDMA_WC_MASKED_FETCH_ADD,
    PVRDMA_WC_RECV = 1 << 7,
    PVRDMA_WC_RECV_RDMA_WITH_IMM,
};

#define PVRDMA_WC_GRH                   (1u << 0)
#define PVRDMA_WC_WITH_IMM              (1u << 1)
#define PVRDMA_WC_WITH_INVALIDATE       (1u << 2)
#define PVRDMA_WC_IP_CSUM_OK            (1u << 3)
#define PVRDMA_WC_WITH_SMAC             (1u << 4)
#define PVRDMA_WC_WITH_VLAN             (1u << 5)
#define PVRDMA_WC_WITH_NETWORK_HDR_TYPE (1u << 6)

enum pvrdma_network_type {
    PVRDMA_NETWORK_ROCE_V1 = 0,
    PVRDMA_NETWORK_IPV4,
    PVRDMA_NETWORK_IPV6,
};

enum pvrdma_eqe_type {
    PVRDMA_EVENT_CQ_ERR,
    PVRDMA_EVENT_QP_FATAL,
    PVRDMA_EVENT_QP_REQ_ERR,
    PVRDMA_EVENT_QP_ACCESS_ERR,
    PVRDMA_EVENT_COMM_EST,
    PVRDMA_EVENT_SQ_DRAINED,
    PVRDMA_EVENT_PATH_MIG,
    PVRDMA_EVENT_PATH_MIG_ERR,
    PVRDMA_EVENT_DEVICE_FATAL,
    PVRDMA_EVENT_PORT_ACTIVE,
    PVRDMA_EVENT_PORT_ERR,
    PVRDMA_EVENT_LID_CHANGE,
    PVRDMA_EVENT_PKEY_CHANGE,
    PVRDMA_EVENT_SM_CHANGE,
    PVRDMA_EVENT_SRQ_ERR,
    PVRDMA_EVENT_SRQ_LIMIT_REACHED,
    PVRDMA_EVENT_QP_LAST_WQE_REACHED,
    PVRDMA_EVENT_CLIENT_REREGISTER,
    PVRDMA_EVENT_GID_CHANGE,
};

/* ------------------------------------------------------------------ */
/* Shared structures                                                   */

struct pvrdma_ring {
    uint32_t prod_tail;
    uint32_t cons_head;
};

/* Page 0 of every ring: tx at 0, rx at 8. */
struct pvrdma_ring_state {
    struct pvrdma_ring tx;
    struct pvrdma_ring rx;
};

struct pvrdma_gos_info {
    uint32_t bits_type_ver_misc;   /* bits:2 type:4 ver:16 misc:10 */
    uint32_t pad;
};

struct pvrdma_device_caps {
    uint64_t fw_ver;
    uint64_t node_guid;             /* big endian */
    uint64_t sys_image_guid;        /* big endian */
    uint64_t max_mr_size;
    uint64_t page_size_cap;
    uint64_t atomic_arg_sizes;
    uint32_t ex_comp_mask;
    uint32_t device_cap_flags2;
    uint32_t max_fa_bit_boundary;
    uint32_t log_max_atomic_inline_arg;
    uint32_t vendor_id;
    uint32_t vendor_part_id;
    uint32_t hw_ver;
    uint32_t max_qp;
    uint32_t max_qp_wr;
    uint32_t device_cap_flags;
    uint32_t max_sge;
    uint32_t max_sge_rd;
    uint32_t max_cq;
    uint32_t max_cqe;
    uint32_t max_mr;
    uint32_t max_pd;
    uint32_t max_qp_rd_atom;
    uint32_t max_ee_rd_atom;
    uint32_t max_res_rd_atom;
    uint32_t max_qp_init_rd_atom;
    uint32_t max_ee_init_rd_atom;
    uint32_t max_ee;
    uint32_t max_rdd;
    uint32_t max_mw;
    uint32_t max_raw_ipv6_qp;
    uint32_t max_raw_ethy_qp;
    uint32_t max_mcast_grp;
    uint32_t max_mcast_qp_attach;
    uint32_t max_total_mcast_qp_attach;
    uint32_t max_ah;
    uint32_t max_fmr;
    uint32_t max_map_per_fmr;
    uint32_t max_srq;
    uint32_t max_srq_wr;
    uint32_t max_srq_sge;
    uint32_t max_uar;
    uint32_t gid_tbl_len;
    uint16_t max_pkeys;
    uint8_t local_ca_ack_delay;
    uint8_t phys_port_cnt;
    uint8_t mode;
    uint8_t atomic_ops;
    uint8_t bmme_flags;
    uint8_t gid_types;
    uint32_t max_fast_reg_page_list_len;
};

struct pvrdma_ring_page_info {
    uint32_t num_pages;             /* including the ring-state page */
    uint32_t reserved;
    uint64_t pdir_dma;
};

/* The DSR is packed (no padding between uar_pfn64 and caps). */
struct __attribute__((packed)) pvrdma_device_shared_region {
    uint32_t driver_version;
    uint32_t pad;
    struct pvrdma_gos_info gos_info;
    uint64_t cmd_slot_dma;
    uint64_t resp_slot_dma;
    struct pvrdma_ring_page_info async_ring_pages;
    struct pvrdma_ring_page_info cq_ring_pages;
    union {
        uint32_t uar_pfn;           /* driver version < 19 */
        uint64_t uar_pfn64;
    };
    struct pvrdma_device_caps caps;
};

struct pvrdma_eqe {
    uint32_t type;
    uint32_t info;
};

struct pvrdma_cqne {
    uint32_t info;
};

union pvrdma_gid {
    uint8_t raw[16];
    struct {
        uint64_t subnet_prefix;
        uint64_t interface_id;
    } global;
};

struct pvrdma_port_attr {
    uint32_t state;
    uint32_t max_mtu;
    uint32_t active_mtu;
    uint32_t gid_tbl_len;
    uint32_t port_cap_flags;
    uint32_t max_msg_sz;
    uint32_t bad_pkey_cntr;
    uint32_t qkey_viol_cntr;
    uint16_t pkey_tbl_len;
    uint16_t lid;
    uint16_t sm_lid;
    uint8_t lmc;
    uint8_t max_vl_num;
    uint8_t sm_sl;
    uint8_t subnet_timeout;
    uint8_t init_type_reply;
    uint8_t active_width;
    uint8_t active_speed;
    uint8_t phys_state;
    uint8_t reserved[2];
};

struct pvrdma_global_route {
    union pvrdma_gid dgid;
    uint32_t flow_label;
    uint8_t sgid_index;
    uint8_t hop_limit;
    uint8_t traffic_class;
    uint8_t reserved;
};

struct pvrdma_ah_attr {
    struct pvrdma_global_route grh;
    uint16_t dlid;
    uint16_t vlan_id;
    uint8_t sl;
    uint8_t src_path_bits;
    uint8_t static_rate;
    uint8_t ah_flags;
    uint8_t port_num;
    uint8_t dmac[6];
    uint8_t reserved;
};

struct pvrdma_qp_cap {
    uint32_t max_send_wr;
    uint32_t max_recv_wr;
    uint32_t max_send_sge;
    uint32_t max_recv_sge;
    uint32_t max_inline_data;
    uint32_t reserved;
};

struct pvrdma_srq_attr {
    uint32_t max_wr;
    uint32_t max_sge;
    uint32_t srq_limit;
    uint32_t reserved;
};

struct pvrdma_qp_attr {
    uint32_t qp_state;
    uint32_t cur_qp_state;
    uint32_t path_mtu;
    uint32_t path_mig_state;
    uint32_t qkey;
    uint32_t rq_psn;
    uint32_t sq_psn;
    uint32_t dest_qp_num;
    uint32_t qp_access_flags;
    uint16_t pkey_index;
    uint16_t alt_pkey_index;
    uint8_t en_sqd_async_notify;
    uint8_t sq_draining;
    uint8_t max_rd_atomic;
    uint8_t max_dest_rd_atomic;
    uint8_t min_rnr_timer;
    uint8_t port_num;
    uint8_t timeout;
    uint8_t retry_cnt;
    uint8_t rnr_retry;
    uint8_t alt_port_num;
    uint8_t alt_timeout;
    uint8_t reserved[5];
    struct pvrdma_qp_cap cap;
    struct pvrdma_ah_attr ah_attr;
    struct pvrdma_ah_attr alt_ah_attr;
};

/* ------------------------------------------------------------------ */
/* Commands: pvrdma_abi_cmd.h, which needs the structures above       */

#include "hw/rdma/pvrdma_abi_cmd.h"

/* ------------------------------------------------------------------ */
/* Work requests and completions                                       */

struct pvrdma_av {
    uint32_t port_pd;
    uint32_t sl_tclass_flowlabel;
    uint8_t dgid[16];
    uint8_t src_path_bits;
    uint8_t gid_index;
    uint8_t stat_rate;
    uint8_t hop_limit;
    uint8_t dmac[6];
    uint8_t reserved[6];
};

struct pvrdma_sge {
    uint64_t addr;
    uint32_t length;
    uint32_t lkey;
};

struct pvrdma_rq_wqe_hdr {
    uint64_t wr_id;
    uint32_t num_sge;
    uint32_t total_len;
};

struct pvrdma_ex_cmp_swap {
    uint64_t swap_val;
    uint64_t compare_val;
    uint64_t swap_mask;
    uint64_t compare_mask;
};

struct pvrdma_ex_fetch_add {
    uint64_t add_val;
    uint64_t field_boundary;
};

struct pvrdma_sq_wqe_hdr {
    uint64_t wr_id;
    uint32_t num_sge;
    uint32_t total_len;
    uint32_t opcode;
    uint32_t send_flags;
    union {
        uint32_t imm_data;          /* big endian, passed through */
        uint32_t invalidate_rkey;
    } ex;
    uint32_t reserved;
    union {
        struct {
            uint64_t remote_addr;
            uint32_t rkey;
            uint8_t reserved[4];
        } rdma;
        struct {
            uint64_t remote_addr;
            uint64_t compare_add;
            uint64_t swap;
            uint32_t rkey;
            uint32_t reserved;
        } atomic;
        struct {
            uint64_t remote_addr;
            uint32_t log_arg_sz;
            uint32_t rkey;
            union {
                struct pvrdma_ex_cmp_swap cmp_swap;
                struct pvrdma_ex_fetch_add fetch_add;
            } wr_data;
        } masked_atomics;
        struct pvrdma_fast_reg {    /* named here, anonymous in the driver */
            uint64_t iova_start;
            uint64_t pl_pdir_dma;
            uint32_t page_shift;
            uint32_t page_list_len;
            uint32_t length;
            uint32_t access_flags;
            uint32_t rkey;
            uint32_t reserved;
        } fast_reg;
        struct {
            uint32_t remote_qpn;
            uint32_t remote_qkey;
            struct pvrdma_av av;
        } ud;
    } wr;
};

struct pvrdma_cqe {
    uint64_t wr_id;
    uint64_t qp;
    uint32_t opcode;
    uint32_t status;
    uint32_t byte_len;
    uint32_t imm_data;              /* big endian, passed through */
    uint32_t src_qp;
    uint32_t wc_flags;
    uint32_t vendor_err;
    uint16_t pkey_index;
    uint16_t slid;
    uint8_t sl;
    uint8_t dlid_path_bits;
    uint8_t port_num;
    uint8_t smac[6];
    uint8_t network_hdr_type;
    uint8_t reserved2[6];
};

/* Layout pins (values checked against the Linux driver's structures). */
_Static_assert(sizeof(struct pvrdma_device_caps) == 208, "caps");
_Static_assert(sizeof(struct pvrdma_device_shared_region) == 280, "dsr");
_Static_assert(sizeof(struct pvrdma_port_attr) == 48, "port_attr");
_Static_assert(sizeof(struct pvrdma_ah_attr) == 40, "ah_attr");
_Static_assert(sizeof(struct pvrdma_qp_attr) == 160, "qp_attr");
_Static_assert(sizeof(struct pvrdma_sq_wqe_hdr) == 80, "sq_wqe_hdr");
_Static_assert(sizeof(struct pvrdma_rq_wqe_hdr) == 16, "rq_wqe_hdr");
_Static_assert(sizeof(struct pvrdma_cqe) == 64, "cqe");
_Static_assert(sizeof(struct pvrdma_av) == 40, "av");

#endif
