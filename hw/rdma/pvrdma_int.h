/*
 * pvrdma core: what only the core's own files share.
 *
 * Owns the declarations the core's files (hw/rdma/pvrdma_*.c, not the QOM
 * glue pvrdma.c) use between each other, grouped by the file that defines
 * them.  Does not own the core's public API (include/hw/rdma/pvrdma_core.h:
 * what the QOM glue, the transports and the tests use) nor the transport
 * interface (include/hw/rdma/rdma_backend.h: PvrdmaReq, pvrdma_responder(),
 * pvrdma_req_done()).  Nothing outside hw/rdma/pvrdma_*.c includes this
 * header.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_PVRDMA_INT_H
#define HW_RDMA_PVRDMA_INT_H

#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/rdma_backend.h"

/* pvrdma_ring.c: WQE copy-out */

/* A WQE copied out of a guest ring (at most the QP's SGE count is read). */
typedef struct PvrdmaSendWqe {
    struct pvrdma_sq_wqe_hdr hdr;
    struct pvrdma_sge sge[PVRDMA_HARD_MAX_SGE];
    bool sge_ok;            /* hdr.num_sge within the ring's SGE limit */
} PvrdmaSendWqe;

typedef struct PvrdmaRecvWqe {
    struct pvrdma_rq_wqe_hdr hdr;
    struct pvrdma_sge sge[PVRDMA_HARD_MAX_SGE];
    bool sge_ok;            /* hdr.num_sge within the ring's SGE limit */
} PvrdmaRecvWqe;

/* Copy WQE idx of ring r out: its header and at most max_sge SGEs. */
void pvrdma_fetch_send_wqe(const PvrdmaRing *r, uint32_t idx,
                           uint32_t max_sge, PvrdmaSendWqe *w);
void pvrdma_fetch_recv_wqe(const PvrdmaRing *r, uint32_t idx,
                           uint32_t max_sge, PvrdmaRecvWqe *w);

/* pvrdma_core.c: the core as a whole */

/* Is the port up (the paired NIC's link)? */
bool pvrdma_port_up(PvrdmaCore *c);

/* pvrdma_gid.c: the GID table */

/* The GID table changed: tell the transports. */
void pvrdma_gids_changed(PvrdmaCore *c);

/* pvrdma_cmd.c: the command channel, object lifetimes */

void pvrdma_exec_command(PvrdmaCore *c);
void pvrdma_destroy_all(PvrdmaCore *c);
void pvrdma_qp_free(PvrdmaCore *c, PvrdmaQP *qp);
void pvrdma_mr_free(PvrdmaCore *c, PvrdmaMR *mr);
/* Effective UAR page owner check for doorbells. */
uint32_t pvrdma_ctx_of_pd(PvrdmaCore *c, uint32_t pd);

/* pvrdma_event.c: interrupts, async events, CQEs, CQ arming, notification */

/* Raise interrupt vector unless IMR masks it. */
void pvrdma_raise(PvrdmaCore *c, unsigned vector);
/* Post an async event (PVRDMA_EVENT_*, object handle) and raise its vector. */
void pvrdma_post_async(PvrdmaCore *c, uint32_t type, uint32_t info);
void pvrdma_cq_post(PvrdmaCore *c, uint32_t cq_handle,
                    const struct pvrdma_cqe *e, bool solicited);
void pvrdma_cq_doorbell(PvrdmaCore *c, PvrdmaCQ *cq, uint32_t val);

/* pvrdma_mr.c: memory keys */

/* Resolve [va, va+len) of an MR into host memory. */
bool pvrdma_mr_resolve(PvrdmaCore *c, PvrdmaMR *mr, uint64_t va,
                       uint64_t len, bool is_write, PvrdmaSg *sg);
/* Local scatter list through lkeys; returns a PVRDMA_WC_* status. */
int pvrdma_resolve_sges(PvrdmaCore *c, uint32_t pd,
                        const struct pvrdma_sge *s, uint32_t n,
                        bool is_write, PvrdmaSg *sg);
/* IBV_SEND_INLINE: SGEs with a key that does not cover them read their MR */
void pvrdma_inline_sges(PvrdmaCore *c, const PvrdmaQP *qp, PvrdmaSendWqe *w);

/* pvrdma_qp.c: the QP state machine */

int pvrdma_qp_modify(PvrdmaCore *c, PvrdmaQP *qp, uint32_t mask,
                     const struct pvrdma_qp_attr *a);
void pvrdma_qp_to_error(PvrdmaCore *c, PvrdmaQP *qp);
/* QP error no completion reports: async event, then the error state. */
void pvrdma_qp_fail(PvrdmaCore *c, PvrdmaQP *qp, uint32_t event);

/* pvrdma_dp.c: run list, run loop, doorbells, RNR waiters, transport hooks */

void pvrdma_qp_schedule(PvrdmaCore *c, PvrdmaQP *qp);
void pvrdma_qp_send_doorbell(PvrdmaCore *c, PvrdmaQP *qp);
void pvrdma_srq_doorbell(PvrdmaCore *c, PvrdmaSRQ *srq);
void pvrdma_qp_set_rnr_wait(PvrdmaCore *c, PvrdmaQP *qp, bool wait);
void pvrdma_wake_rnr(PvrdmaCore *c);
/* A QP is destroyed or reset: transports drop requests waiting on it. */
void pvrdma_qp_gone(PvrdmaCore *c, uint32_t qpn);

/* pvrdma_req.c: the requester */

/*
 * Serve qp's send queue; inline_budget > 0 from a send doorbell (at most
 * that many WQEs, none that would copy data here), 0 from the run loop.
 */
void pvrdma_serve_sq(PvrdmaCore *c, PvrdmaQP *qp, uint32_t inline_budget);

/* pvrdma_comp.c: the completer */

/* The send slot of send queue index idx. */
static inline PvrdmaSendSlot *pvrdma_send_slot(PvrdmaQP *qp, uint32_t idx)
{
    return &qp->slot[idx & (qp->sq.nelems - 1)];
}

void pvrdma_recv_cqe(PvrdmaCore *c, PvrdmaQP *qp, const PvrdmaRecvWqe *w,
                     uint32_t status, uint32_t opcode, uint32_t byte_len,
                     const PvrdmaReq *req, uint32_t flags, bool solicited);
/* Complete every posted WQE with WR_FLUSH_ERR (QP in error). */
void pvrdma_flush_queues(PvrdmaCore *c, PvrdmaQP *qp);
/* Complete finished send WQEs in order; the first error moves to error. */
void pvrdma_drain_sq(PvrdmaCore *c, PvrdmaQP *qp);

/* pvrdma_hca.c: host HCA mode, guest WQEs to the host queues */

void pvrdma_hca_post_sq(PvrdmaCore *c, PvrdmaQP *qp);
void pvrdma_hca_post_rq(PvrdmaCore *c, PvrdmaQP *qp);
void pvrdma_hca_post_srq(PvrdmaCore *c, PvrdmaSRQ *srq);
void pvrdma_hca_serve_qp(PvrdmaCore *c, PvrdmaQP *qp);
void pvrdma_hca_serve_srqs(PvrdmaCore *c);
/* Guest QP qp of host HCA mode goes to error (host QP too). */
void pvrdma_hca_qp_error(PvrdmaCore *c, PvrdmaQP *qp);

#endif
