/*
 * pvrdma core: what only the core's own files share.
 *
 * Owns the declarations the core's files (hw/rdma/pvrdma_*.c, not the QOM
 * glue pvrdma.c) use between each other.  Does not own the core's public
 * API (include/hw/rdma/pvrdma_core.h: what the QOM glue, the transports
 * and the tests use) nor the transport interface
 * (include/hw/rdma/rdma_backend.h).  Nothing outside hw/rdma/pvrdma_*.c
 * includes this header.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_PVRDMA_INT_H
#define HW_RDMA_PVRDMA_INT_H

#include "hw/rdma/pvrdma_core.h"

/* A WQE copied out of a guest ring (at most the QP's SGE count is read). */
typedef struct PvrdmaSendWqe {
    struct pvrdma_sq_wqe_hdr hdr;
    struct pvrdma_sge sge[PVRDMA_HARD_MAX_SGE];
} PvrdmaSendWqe;

typedef struct PvrdmaRecvWqe {
    struct pvrdma_rq_wqe_hdr hdr;
    struct pvrdma_sge sge[PVRDMA_HARD_MAX_SGE];
} PvrdmaRecvWqe;

/* Is the port up (the paired NIC's link)? */
bool pvrdma_port_up(PvrdmaCore *c);

/* IBV_SEND_INLINE: SGEs with a key that does not cover them read their MR */
void pvrdma_inline_sges(PvrdmaCore *c, const PvrdmaQP *qp, PvrdmaSendWqe *w);
/* Copy WQE idx of ring r out: its header and at most max_sge SGEs. */
void pvrdma_fetch_send_wqe(const PvrdmaRing *r, uint32_t idx,
                           uint32_t max_sge, PvrdmaSendWqe *w);
void pvrdma_fetch_recv_wqe(const PvrdmaRing *r, uint32_t idx,
                           uint32_t max_sge, PvrdmaRecvWqe *w);

/* The completion opcode of a send work request's opcode. */
uint32_t pvrdma_wc_opcode(uint32_t wr_opcode);

void pvrdma_raise(PvrdmaCore *c, unsigned vector);
void pvrdma_post_async(PvrdmaCore *c, uint32_t type, uint32_t info);
void pvrdma_exec_command(PvrdmaCore *c);
void pvrdma_destroy_all(PvrdmaCore *c);

int pvrdma_qp_modify(PvrdmaCore *c, PvrdmaQP *qp, uint32_t mask,
                     const struct pvrdma_qp_attr *a);
void pvrdma_qp_to_error(PvrdmaCore *c, PvrdmaQP *qp);
void pvrdma_qp_free(PvrdmaCore *c, PvrdmaQP *qp);
void pvrdma_qp_schedule(PvrdmaCore *c, PvrdmaQP *qp);
void pvrdma_qp_send_doorbell(PvrdmaCore *c, PvrdmaQP *qp);
void pvrdma_qp_set_rnr_wait(PvrdmaCore *c, PvrdmaQP *qp, bool wait);
void pvrdma_cq_doorbell(PvrdmaCore *c, PvrdmaCQ *cq, uint32_t val);
void pvrdma_srq_doorbell(PvrdmaCore *c, PvrdmaSRQ *srq);
void pvrdma_wake_rnr(PvrdmaCore *c);
void pvrdma_gids_changed(PvrdmaCore *c);
/* A QP is destroyed or reset: transports drop requests waiting on it. */
void pvrdma_qp_gone(PvrdmaCore *c, uint32_t qpn);
void pvrdma_cq_post(PvrdmaCore *c, uint32_t cq_handle,
                    const struct pvrdma_cqe *e, bool solicited);
/* Host HCA mode (pvrdma_hca.c): hand guest WQEs to the host queues. */
void pvrdma_hca_post_sq(PvrdmaCore *c, PvrdmaQP *qp);
void pvrdma_hca_post_rq(PvrdmaCore *c, PvrdmaQP *qp);
void pvrdma_hca_post_srq(PvrdmaCore *c, PvrdmaSRQ *srq);
/* Guest QP qp of host HCA mode goes to error (host QP too). */
void pvrdma_hca_qp_error(PvrdmaCore *c, PvrdmaQP *qp);
void pvrdma_mr_free(PvrdmaCore *c, PvrdmaMR *mr);

/* Effective UAR page owner check for doorbells. */
uint32_t pvrdma_ctx_of_pd(PvrdmaCore *c, uint32_t pd);

#endif
