/*
 * Driver-side helpers for the device tests (fake-driver.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef PVRDMA_UNIT_FAKE_DRIVER_H
#define PVRDMA_UNIT_FAKE_DRIVER_H

#include "fake-host.h"

typedef struct Dev {
    FakeHost h;
    PvrdmaCore c;
    uint64_t dsr, cmd, resp;
    uint64_t async_pages[2], cqn_pages[2];
} Dev;

typedef struct TCq {
    uint32_t handle, cqe, npages;
    uint64_t pages[64];
    uint32_t cons;
} TCq;

typedef struct TMr {
    uint32_t handle, lkey, rkey;
    uint64_t iova, len, first;
    uint32_t npages;
    uint64_t pages[64];
} TMr;

typedef struct TQp {
    uint32_t handle, qpn, type;
    uint32_t send_wr, send_sge, recv_wr, recv_sge;
    uint32_t sq_stride, rq_stride, send_chunks, recv_chunks, npages;
    uint64_t pages[64];
    uint32_t sq_prod, rq_prod;
} TQp;

#define RC_ACCESS (PVRDMA_ACCESS_REMOTE_WRITE | PVRDMA_ACCESS_REMOTE_READ | \
                   PVRDMA_ACCESS_REMOTE_ATOMIC)

#define RTR_MASK (PVRDMA_QP_STATE | PVRDMA_QP_AV | PVRDMA_QP_PATH_MTU | \
                  PVRDMA_QP_DEST_QPN | PVRDMA_QP_RQ_PSN | \
                  PVRDMA_QP_MAX_DEST_RD_ATOMIC | PVRDMA_QP_MIN_RNR_TIMER)

#define RTS_MASK (PVRDMA_QP_STATE | PVRDMA_QP_SQ_PSN | PVRDMA_QP_TIMEOUT | \
                  PVRDMA_QP_RETRY_CNT | PVRDMA_QP_RNR_RETRY | \
                  PVRDMA_QP_MAX_QP_RD_ATOMIC)

extern const uint8_t test_gid[16];

struct pvrdma_device_shared_region *dsr_of(Dev *d);
void dev_init(Dev *d, const PvrdmaLimits *lim);
void dev_write_dsr(Dev *d);
void dev_setup(Dev *d, const PvrdmaLimits *lim);
/* CTL_RESET must release every guest mapping. */
void dev_fini(Dev *d);
/* The QEMU exits: no guest reset first. */
void dev_exit(Dev *d);
/*
 * A field of a message or request, set to val in a copy of a good one
 * (size 0: unused): the rows of the tables of malformed input.
 */
typedef struct TField {
    size_t off;
    uint8_t size;
    uint64_t val;
} TField;
#define TFIELD(type, member, v) \
    { offsetof(type, member), sizeof(((type *)0)->member), (v) }
/* Set the n fields f in obj (a little-endian host, as the device's). */
void tfields_apply(void *obj, const TField *f, unsigned n);
/* The response slot was written since dev_cmd() cleared it. */
bool dev_cmd_answered(Dev *d);
/* Serve d until its command's response is there (at most 10 s). */
void dev_cmd_wait(Dev *d);
uint32_t dev_cmd(Dev *d, union pvrdma_cmd_req *req, uint32_t cmd,
                 union pvrdma_cmd_resp *rsp);
void expect_err(Dev *d, union pvrdma_cmd_req *req, uint32_t cmd,
                uint32_t want);
uint32_t create_pd(Dev *d, uint32_t ctx);
void bind_gid(Dev *d, uint32_t index, const uint8_t gid[16]);
struct pvrdma_ring_state *cq_state(Dev *d, TCq *cq);
void create_cq(Dev *d, TCq *cq, uint32_t cqe);
bool poll_cq(Dev *d, TCq *cq, struct pvrdma_cqe *out);
void expect_cqe(Dev *d, TCq *cq, uint64_t wr_id, uint32_t status,
                uint32_t opcode, uint32_t byte_len, uint32_t qp);
void expect_cq_empty(Dev *d, TCq *cq);
/*
 * Nobody answers SEND wr1 of qp (SEND wr2 posted behind it): nothing
 * happens until left ms have passed (a run 1 ms earlier changes nothing),
 * then wr1 completes with RETRY_EXC_ERR, wr2 is flushed, the QP is in
 * error and nothing is held.
 */
void expect_retry_window(Dev *d, TCq *cq, TQp *qp, int64_t left,
                         uint64_t wr1, uint64_t wr2);
/*
 * CREATE_MR of [iova, iova + len) over npages pages it allocates (pages[]
 * gets them: pairs of contiguous pages, not contiguous with each other).
 */
void create_mr_pages(Dev *d, uint32_t pd, uint64_t iova, uint64_t len,
                     uint32_t access, uint64_t *pages, uint32_t npages,
                     uint32_t *handle, uint32_t *lkey, uint32_t *rkey);
void create_mr(Dev *d, TMr *mr, uint32_t pd, uint64_t iova,
               uint64_t len, uint32_t access);
uint8_t *mr_byte(Dev *d, TMr *mr, uint64_t va);
void mr_write(Dev *d, TMr *mr, uint64_t va, const void *buf,
              uint64_t len);
void mr_read(Dev *d, TMr *mr, uint64_t va, void *buf, uint64_t len);
void mr_fill(Dev *d, TMr *mr, uint8_t v);
uint32_t pow2_ceil(uint32_t x);
void fill_create_qp(Dev *d, TQp *qp, union pvrdma_cmd_req *req,
                    uint32_t pd, uint32_t scq, uint32_t rcq,
                    uint8_t type, uint32_t send_wr, uint32_t send_sge,
                    uint32_t recv_wr, uint32_t recv_sge);
void create_qp(Dev *d, TQp *qp, uint32_t pd, uint32_t scq,
               uint32_t rcq, uint8_t type);
struct pvrdma_ring *qp_rings(Dev *d, TQp *qp);
void *sq_elem(Dev *d, TQp *qp, uint32_t idx);
void *rq_elem(Dev *d, TQp *qp, uint32_t idx);
void put_send(Dev *d, TQp *qp, struct pvrdma_sq_wqe_hdr *hdr,
              const struct pvrdma_sge *sge, uint32_t nsge);
void ring_send(Dev *d, TQp *qp);
void post_send(Dev *d, TQp *qp, struct pvrdma_sq_wqe_hdr *hdr,
               const struct pvrdma_sge *sge, uint32_t nsge);
/* Write a receive WQE (no doorbell); ring_recv rings once for several. */
void put_recv(Dev *d, TQp *qp, uint64_t wr_id,
              const struct pvrdma_sge *sge, uint32_t nsge);
void ring_recv(Dev *d, TQp *qp);
void post_recv(Dev *d, TQp *qp, uint64_t wr_id,
               const struct pvrdma_sge *sge, uint32_t nsge);
uint32_t modify_qp(Dev *d, TQp *qp, uint32_t mask,
                   struct pvrdma_qp_attr *a);
uint32_t query_qp_state(Dev *d, TQp *qp);
void rc_to_init(Dev *d, TQp *qp);
/* RTR attributes towards dest_qpn at test_gid (or dgid) */
void rc_rtr_attrs(struct pvrdma_qp_attr *a, uint32_t dest_qpn);
void rc_rtr_attrs_gid(struct pvrdma_qp_attr *a, uint32_t dest_qpn,
                      const uint8_t dgid[16]);
void rc_to_rts(Dev *d, TQp *qp, uint32_t dest_qpn, uint8_t rnr_retry);
void rc_to_rts_gid(Dev *d, TQp *qp, uint32_t dest_qpn, const uint8_t dgid[16],
                   uint8_t rnr_retry);
/* The same with the peer's MAC (dmac, 6 bytes; NULL: none), for RoCEv2. */
void rc_to_rts_mac(Dev *d, TQp *qp, uint32_t dest_qpn, const uint8_t dgid[16],
                   const uint8_t *dmac, uint8_t rnr_retry);
/* Serve queued work until the device is idle (what the BH would do). */
/* Run the core until nothing is queued; returns the passes it took. */
unsigned run_all(Dev *d);
void fill_pattern(uint8_t *buf, size_t len, uint32_t seed);

/* Two connected RC QPs with a CQ and an MR each. */
typedef struct Pair {
    Dev d;
    uint32_t pd;
    TCq cqa, cqb;
    TQp a, b;
    TMr mra, mrb;
} Pair;

#define MRA_IOVA 0x00007f0000000100ull
#define MRA_LEN  (3 * FH_PAGE + 500)
#define MRB_IOVA 0x00007f1000000f00ull
#define MRB_LEN  (4 * FH_PAGE)
#define MR_ACCESS (PVRDMA_ACCESS_LOCAL_WRITE | RC_ACCESS)

/* Pair p set up on a new device: both QPs in RTS with rnr_retry. */
void pair_setup(Pair *p, uint8_t rnr_retry);
/* Both CQs empty, then the device torn down. */
void pair_fini(Pair *p);

#endif
