/*
 * VMware paravirtual RDMA (PVRDMA) device ABI: the command channel.
 *
 * The command codes, the requests a driver writes to the command slot and
 * the responses the device writes to the response slot (dsr.cmd_slot_dma,
 * dsr.resp_slot_dma; PVRDMA_REG_REQUEST starts one).  pvrdma_abi.h, the
 * rest of the ABI, includes this after the shared structures the commands
 * carry (port, SRQ and QP attributes); included first, this header brings
 * in pvrdma_abi.h itself.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_PVRDMA_ABI_CMD_H
#define HW_RDMA_PVRDMA_ABI_CMD_H

#include <stdint.h>
#include "hw/rdma/pvrdma_abi.h"

/* ------------------------------------------------------------------ */
/* Commands                                                            */

enum {
    PVRDMA_CMD_QUERY_PORT,
    PVRDMA_CMD_QUERY_PKEY,
    PVRDMA_CMD_CREATE_PD,
    PVRDMA_CMD_DESTROY_PD,
    PVRDMA_CMD_CREATE_MR,
    PVRDMA_CMD_DESTROY_MR,
    PVRDMA_CMD_CREATE_CQ,
    PVRDMA_CMD_RESIZE_CQ,
    PVRDMA_CMD_DESTROY_CQ,
    PVRDMA_CMD_CREATE_QP,
    PVRDMA_CMD_MODIFY_QP,
    PVRDMA_CMD_QUERY_QP,
    PVRDMA_CMD_DESTROY_QP,
    PVRDMA_CMD_CREATE_UC,
    PVRDMA_CMD_DESTROY_UC,
    PVRDMA_CMD_CREATE_BIND,
    PVRDMA_CMD_DESTROY_BIND,
    PVRDMA_CMD_CREATE_SRQ,
    PVRDMA_CMD_MODIFY_SRQ,
    PVRDMA_CMD_QUERY_SRQ,
    PVRDMA_CMD_DESTROY_SRQ,
    PVRDMA_CMD_MAX,
};

/* A response's ack is the command code with bit 31 set. */
#define PVRDMA_CMD_RESP(cmd)            ((uint32_t)(cmd) | (1u << 31))

struct pvrdma_cmd_hdr {
    uint64_t response;
    uint32_t cmd;
    uint32_t reserved;
};

struct pvrdma_cmd_resp_hdr {
    uint64_t response;
    uint32_t ack;
    uint8_t err;
    uint8_t reserved[3];
};

struct pvrdma_cmd_query_port {
    struct pvrdma_cmd_hdr hdr;
    uint8_t port_num;
    uint8_t reserved[7];
};

struct pvrdma_cmd_query_port_resp {
    struct pvrdma_cmd_resp_hdr hdr;
    struct pvrdma_port_attr attrs;
};

struct pvrdma_cmd_query_pkey {
    struct pvrdma_cmd_hdr hdr;
    uint8_t port_num;
    uint8_t index;
    uint8_t reserved[6];
};

struct pvrdma_cmd_query_pkey_resp {
    struct pvrdma_cmd_resp_hdr hdr;
    uint16_t pkey;
    uint8_t reserved[6];
};

struct pvrdma_cmd_create_uc {
    struct pvrdma_cmd_hdr hdr;
    union {
        uint32_t pfn;               /* driver version < 19 */
        uint64_t pfn64;
    };
};

struct pvrdma_cmd_create_uc_resp {
    struct pvrdma_cmd_resp_hdr hdr;
    uint32_t ctx_handle;
    uint8_t reserved[4];
};

struct pvrdma_cmd_destroy_uc {
    struct pvrdma_cmd_hdr hdr;
    uint32_t ctx_handle;
    uint8_t reserved[4];
};

struct pvrdma_cmd_create_pd {
    struct pvrdma_cmd_hdr hdr;
    uint32_t ctx_handle;
    uint8_t reserved[4];
};

struct pvrdma_cmd_create_pd_resp {
    struct pvrdma_cmd_resp_hdr hdr;
    uint32_t pd_handle;
    uint8_t reserved[4];
};

struct pvrdma_cmd_destroy_pd {
    struct pvrdma_cmd_hdr hdr;
    uint32_t pd_handle;
    uint8_t reserved[4];
};

struct pvrdma_cmd_create_mr {
    struct pvrdma_cmd_hdr hdr;
    uint64_t start;
    uint64_t length;
    uint64_t pdir_dma;
    uint32_t pd_handle;
    uint32_t access_flags;
    uint32_t flags;
    uint32_t nchunks;
};

struct pvrdma_cmd_create_mr_resp {
    struct pvrdma_cmd_resp_hdr hdr;
    uint32_t mr_handle;
    uint32_t lkey;
    uint32_t rkey;
    uint8_t reserved[4];
};

struct pvrdma_cmd_destroy_mr {
    struct pvrdma_cmd_hdr hdr;
    uint32_t mr_handle;
    uint8_t reserved[4];
};

struct pvrdma_cmd_create_cq {
    struct pvrdma_cmd_hdr hdr;
    uint64_t pdir_dma;
    uint32_t ctx_handle;
    uint32_t cqe;
    uint32_t nchunks;
    uint8_t reserved[4];
};

struct pvrdma_cmd_create_cq_resp {
    struct pvrdma_cmd_resp_hdr hdr;
    uint32_t cq_handle;
    uint32_t cqe;
};

struct pvrdma_cmd_resize_cq {
    struct pvrdma_cmd_hdr hdr;
    uint32_t cq_handle;
    uint32_t cqe;
};

struct pvrdma_cmd_resize_cq_resp {
    struct pvrdma_cmd_resp_hdr hdr;
    uint32_t cqe;
    uint8_t reserved[4];
};

struct pvrdma_cmd_destroy_cq {
    struct pvrdma_cmd_hdr hdr;
    uint32_t cq_handle;
    uint8_t reserved[4];
};

struct pvrdma_cmd_create_srq {
    struct pvrdma_cmd_hdr hdr;
    uint64_t pdir_dma;
    uint32_t pd_handle;
    uint32_t nchunks;
    struct pvrdma_srq_attr attrs;
    uint8_t srq_type;
    uint8_t reserved[7];
};

struct pvrdma_cmd_create_srq_resp {
    struct pvrdma_cmd_resp_hdr hdr;
    uint32_t srqn;
    uint8_t reserved[4];
};

struct pvrdma_cmd_modify_srq {
    struct pvrdma_cmd_hdr hdr;
    uint32_t srq_handle;
    uint32_t attr_mask;
    struct pvrdma_srq_attr attrs;
};

struct pvrdma_cmd_query_srq {
    struct pvrdma_cmd_hdr hdr;
    uint32_t srq_handle;
    uint8_t reserved[4];
};

struct pvrdma_cmd_query_srq_resp {
    struct pvrdma_cmd_resp_hdr hdr;
    struct pvrdma_srq_attr attrs;
};

struct pvrdma_cmd_destroy_srq {
    struct pvrdma_cmd_hdr hdr;
    uint32_t srq_handle;
    uint8_t reserved[4];
};

struct pvrdma_cmd_create_qp {
    struct pvrdma_cmd_hdr hdr;
    uint64_t pdir_dma;
    uint32_t pd_handle;
    uint32_t send_cq_handle;
    uint32_t recv_cq_handle;
    uint32_t srq_handle;
    uint32_t max_send_wr;
    uint32_t max_recv_wr;
    uint32_t max_send_sge;
    uint32_t max_recv_sge;
    uint32_t max_inline_data;
    uint32_t lkey;
    uint32_t access_flags;
    uint16_t total_chunks;
    uint16_t send_chunks;
    uint16_t max_atomic_arg;
    uint8_t sq_sig_all;
    uint8_t qp_type;
    uint8_t is_srq;
    uint8_t reserved[3];
};

/* Layout for devices/drivers before version 20: qpn doubles as handle. */
struct pvrdma_cmd_create_qp_resp {
    struct pvrdma_cmd_resp_hdr hdr;
    uint32_t qpn;
    uint32_t max_send_wr;
    uint32_t max_recv_wr;
    uint32_t max_send_sge;
    uint32_t max_recv_sge;
    uint32_t max_inline_data;
};

struct pvrdma_cmd_create_qp_resp_v2 {
    struct pvrdma_cmd_resp_hdr hdr;
    uint32_t qpn;
    uint32_t qp_handle;
    uint32_t max_send_wr;
    uint32_t max_recv_wr;
    uint32_t max_send_sge;
    uint32_t max_recv_sge;
    uint32_t max_inline_data;
};

struct pvrdma_cmd_modify_qp {
    struct pvrdma_cmd_hdr hdr;
    uint32_t qp_handle;
    uint32_t attr_mask;
    struct pvrdma_qp_attr attrs;
};

struct pvrdma_cmd_query_qp {
    struct pvrdma_cmd_hdr hdr;
    uint32_t qp_handle;
    uint32_t attr_mask;
};

struct pvrdma_cmd_query_qp_resp {
    struct pvrdma_cmd_resp_hdr hdr;
    struct pvrdma_qp_attr attrs;
};

struct pvrdma_cmd_destroy_qp {
    struct pvrdma_cmd_hdr hdr;
    uint32_t qp_handle;
    uint8_t reserved[4];
};

struct pvrdma_cmd_destroy_qp_resp {
    struct pvrdma_cmd_resp_hdr hdr;
    uint32_t events_reported;
    uint8_t reserved[4];
};

struct pvrdma_cmd_create_bind {
    struct pvrdma_cmd_hdr hdr;
    uint32_t mtu;
    uint32_t vlan;
    uint32_t index;
    uint8_t new_gid[16];
    uint8_t gid_type;
    uint8_t reserved[3];
};

struct pvrdma_cmd_destroy_bind {
    struct pvrdma_cmd_hdr hdr;
    uint32_t index;
    uint8_t dest_gid[16];
    uint8_t reserved[4];
};

/* The command slot holds one request; modify_qp is the largest. */
union pvrdma_cmd_req {
    struct pvrdma_cmd_hdr hdr;
    struct pvrdma_cmd_query_port query_port;
    struct pvrdma_cmd_query_pkey query_pkey;
    struct pvrdma_cmd_create_uc create_uc;
    struct pvrdma_cmd_destroy_uc destroy_uc;
    struct pvrdma_cmd_create_pd create_pd;
    struct pvrdma_cmd_destroy_pd destroy_pd;
    struct pvrdma_cmd_create_mr create_mr;
    struct pvrdma_cmd_destroy_mr destroy_mr;
    struct pvrdma_cmd_create_cq create_cq;
    struct pvrdma_cmd_resize_cq resize_cq;
    struct pvrdma_cmd_destroy_cq destroy_cq;
    struct pvrdma_cmd_create_qp create_qp;
    struct pvrdma_cmd_modify_qp modify_qp;
    struct pvrdma_cmd_query_qp query_qp;
    struct pvrdma_cmd_destroy_qp destroy_qp;
    struct pvrdma_cmd_create_bind create_bind;
    struct pvrdma_cmd_destroy_bind destroy_bind;
    struct pvrdma_cmd_create_srq create_srq;
    struct pvrdma_cmd_modify_srq modify_srq;
    struct pvrdma_cmd_query_srq query_srq;
    struct pvrdma_cmd_destroy_srq destroy_srq;
};

union pvrdma_cmd_resp {
    struct pvrdma_cmd_resp_hdr hdr;
    struct pvrdma_cmd_query_port_resp query_port_resp;
    struct pvrdma_cmd_query_pkey_resp query_pkey_resp;
    struct pvrdma_cmd_create_uc_resp create_uc_resp;
    struct pvrdma_cmd_create_pd_resp create_pd_resp;
    struct pvrdma_cmd_create_mr_resp create_mr_resp;
    struct pvrdma_cmd_create_cq_resp create_cq_resp;
    struct pvrdma_cmd_resize_cq_resp resize_cq_resp;
    struct pvrdma_cmd_create_qp_resp create_qp_resp;
    struct pvrdma_cmd_create_qp_resp_v2 create_qp_resp_v2;
    struct pvrdma_cmd_query_qp_resp query_qp_resp;
    struct pvrdma_cmd_destroy_qp_resp destroy_qp_resp;
    struct pvrdma_cmd_create_srq_resp create_srq_resp;
    struct pvrdma_cmd_query_srq_resp query_srq_resp;
};

/* Layout pins (values checked against the Linux driver's structures). */
_Static_assert(sizeof(struct pvrdma_cmd_modify_qp) == 184, "modify_qp");
_Static_assert(sizeof(union pvrdma_cmd_req) == 184, "cmd_req");
_Static_assert(sizeof(union pvrdma_cmd_resp) == 176, "cmd_resp");
_Static_assert(sizeof(struct pvrdma_cmd_create_qp) == 80, "create_qp");

#endif
