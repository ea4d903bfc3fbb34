/*
 * pvrdma: queue transports (pvrdma_transport.h), the QPs the object owner
 * (a host HCA) runs.
 *
 * Such a QP is not run by the software requester and responder: its WQEs
 * are copied out of the guest rings, checked for what only the device can
 * check (opcode, SGE count against the QP's limits) and handed to the
 * owner's queues; keys, addresses and lengths pass through unchanged and
 * the host device checks them against the host MRs, which cover only
 * guest RAM.  FAST_REG_MR and LOCAL_INV are checked and applied to the
 * device's MR (pvrdma_mr.c) before they go to the owner, which registers
 * or invalidates its twin in order with the QP's other work; undone if
 * the owner's queue was full.  Its completions come back through
 * pvrdma_complete() (pvrdma_comp.c), which calls pvrdma_queue_completed()
 * here.
 *
 * The rings' private indices (sq.priv, rq.priv) are the next WQEs to hand
 * to the owner.  When its queue is full the rest stays in the guest ring
 * and is handed over after the next completion of that QP (or SRQ).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_transport_calls.h"
#include "pvrdma_int.h"

static void hca_err_cqe(PvrdmaCore *c, PvrdmaQP *qp, uint32_t cq,
                        uint64_t wr_id, uint32_t opcode, uint32_t status)
{
    struct pvrdma_cqe e = { 0 };

    e.wr_id = wr_id;
    e.opcode = opcode;
    e.status = status;
    e.src_qp = qp->qpn;
    e.port_num = 1;
    pvrdma_cq_post(c, qp, cq, &e, false);
}

void pvrdma_queue_qp_error(PvrdmaCore *c, PvrdmaQP *qp)
{
    struct pvrdma_qp_attr a = { .qp_state = PVRDMA_QPS_ERR };

    if (qp->state == PVRDMA_QPS_ERR) {
        return;
    }
    /* the owner flushes what it holds */
    pvrdma_owner_qp_modify(c, qp, PVRDMA_QP_STATE, &a);
    qp->state = PVRDMA_QPS_ERR;
}

/* May the host take sends (receives) of qp in its current state? */
static bool sq_open(const PvrdmaQP *qp)
{
    return qp->state == PVRDMA_QPS_RTS || qp->state == PVRDMA_QPS_SQD ||
           qp->state == PVRDMA_QPS_SQE || qp->state == PVRDMA_QPS_ERR;
}

static bool rq_open(const PvrdmaQP *qp)
{
    return qp->state != PVRDMA_QPS_RESET;
}

/*
 * Check one send WQE; fill wr.  Returns 0 or a PVRDMA_WC_* error status.
 * A FAST_REG_MR or LOCAL_INV is applied to wr->mr, as it was in *undo.
 */
static uint32_t send_wr(PvrdmaCore *c, PvrdmaQP *qp, const PvrdmaSendWqe *w,
                        PvrdmaSendWr *wr, PvrdmaMrUndo *undo)
{
    const struct pvrdma_sq_wqe_hdr *h = &w->hdr;

    memset(wr, 0, sizeof(*wr));
    wr->wr_id = h->wr_id;
    wr->opcode = h->opcode;
    wr->send_flags = h->send_flags;
    wr->imm = h->ex.imm_data;
    wr->sge = w->sge;
    wr->num_sge = h->num_sge;
    if (!w->sge_ok) {
        PVRDMA_GUEST_ERR(c, "QP %u: WQE with %u sges (max %u)", qp->handle,
                         h->num_sge, qp->max_send_sge);
        return PVRDMA_WC_LOC_LEN_ERR;
    }
    if (qp->type == PVRDMA_QPT_UD) {
        if (h->opcode != PVRDMA_WR_SEND &&
            h->opcode != PVRDMA_WR_SEND_WITH_IMM) {
            goto bad_opcode;
        }
        if (h->wr.ud.av.gid_index >= c->lim.gid_tbl_len ||
            !c->gid[h->wr.ud.av.gid_index].type) {
            PVRDMA_GUEST_ERR(c, "QP %u: UD WQE with unknown GID index %u",
                             qp->handle, h->wr.ud.av.gid_index);
            return PVRDMA_WC_LOC_QP_OP_ERR;
        }
        wr->remote_qpn = h->wr.ud.remote_qpn & 0xffffff;
        wr->remote_qkey = h->wr.ud.remote_qkey;
        wr->sgid = &c->gid[h->wr.ud.av.gid_index];
        wr->av = &h->wr.ud.av;
        return 0;
    }
    switch (h->opcode) {
    case PVRDMA_WR_SEND:
    case PVRDMA_WR_SEND_WITH_IMM:
    case PVRDMA_WR_SEND_WITH_INV:
        return 0;
    case PVRDMA_WR_FAST_REG_MR:
        return pvrdma_mr_fast_reg(c, qp, &h->wr.fast_reg, &wr->mr, undo);
    case PVRDMA_WR_LOCAL_INV:
        wr->imm = h->ex.invalidate_rkey;
        return pvrdma_mr_local_inv(c, qp, wr->imm, &wr->mr, undo);
    case PVRDMA_WR_RDMA_WRITE:
    case PVRDMA_WR_RDMA_WRITE_WITH_IMM:
    case PVRDMA_WR_RDMA_READ:
        wr->remote_addr = h->wr.rdma.remote_addr;
        wr->rkey = h->wr.rdma.rkey;
        return 0;
    case PVRDMA_WR_ATOMIC_CMP_AND_SWP:
    case PVRDMA_WR_ATOMIC_FETCH_AND_ADD:
        wr->remote_addr = h->wr.atomic.remote_addr;
        wr->rkey = h->wr.atomic.rkey;
        wr->compare_add = h->wr.atomic.compare_add;
        wr->swap = h->wr.atomic.swap;
        return 0;
    default:
        break;
    }
bad_opcode:
    PVRDMA_GUEST_ERR(c, "QP %u: opcode %u not supported with a host HCA",
                     qp->handle, h->opcode);
    return PVRDMA_WC_LOC_QP_OP_ERR;
}

void pvrdma_queue_post_sq(PvrdmaCore *c, PvrdmaQP *qp)
{
    uint32_t prod, n;
    bool moved = false;

    if (!pvrdma_qp_on_queue_transport(qp) || !sq_open(qp) ||
        qp->queue_sq_blocked) {
        return;
    }
    if (!pvrdma_ring_guest_prod(&qp->sq, &prod)) {
        PVRDMA_GUEST_ERR(c, "QP %u: send ring producer index invalid",
                         qp->handle);
        pvrdma_queue_qp_error(c, qp);
        return;
    }
    for (n = 0; qp->sq.priv != prod && n < PVRDMA_RUN_BUDGET; n++) {
        PvrdmaSendWqe w;
        PvrdmaSendWr wr;
        PvrdmaMrUndo undo;
        uint32_t st;
        int err;

        pvrdma_fetch_send_wqe(&qp->sq, qp->sq.priv, qp->max_send_sge, &w);
        pvrdma_inline_sges(c, qp, &w);
        st = send_wr(c, qp, &w, &wr, &undo);
        if (!st) {
            err = pvrdma_owner_post_send(c, qp, &wr);
            if (err && wr.mr) {
                pvrdma_mr_undo(c, wr.mr, &undo);
            }
            if (err == -ENOMEM) {
                qp->queue_sq_blocked = true;
                break;
            }
            if (err) {
                PVRDMA_GUEST_ERR(c, "QP %u: host refused send WQE (%d)",
                                 qp->handle, err);
                st = PVRDMA_WC_LOC_QP_OP_ERR;
            }
        }
        trace_pvrdma_queue_post_send(qp->handle, w.hdr.opcode, st);
        qp->sq.priv = pvrdma_idx_next(qp->sq.priv, qp->sq.nelems);
        moved = true;
        if (st) {
            hca_err_cqe(c, qp, qp->scq, w.hdr.wr_id,
                        pvrdma_wc_opcode(w.hdr.opcode), st);
            pvrdma_queue_qp_error(c, qp);
        }
    }
    if (moved) {
        pvrdma_ring_publish_cons(&qp->sq);
    }
    if (qp->sq.priv != prod && sq_open(qp) && !qp->queue_sq_blocked) {
        pvrdma_qp_schedule(c, qp);      /* the rest on the next turn */
    }
}

/*
 * Hand at most PVRDMA_RUN_BUDGET receive WQEs of ring r to the host (qp's
 * RQ, or srq); true if more are waiting.
 */
static bool post_recvs(PvrdmaCore *c, PvrdmaQP *qp, PvrdmaSRQ *srq,
                       PvrdmaRing *r, uint32_t max_sge, bool *blocked)
{
    uint32_t prod, n, handle = qp ? qp->handle : srq->handle;
    bool moved = false;

    if (!pvrdma_ring_guest_prod(r, &prod)) {
        PVRDMA_GUEST_ERR(c, "%s %u: receive ring producer index invalid",
                         qp ? "QP" : "SRQ", handle);
        if (qp) {
            pvrdma_queue_qp_error(c, qp);
        } else {
            pvrdma_post_async(c, PVRDMA_EVENT_SRQ_ERR, handle);
        }
        return false;
    }
    for (n = 0; r->priv != prod && n < PVRDMA_RUN_BUDGET; n++) {
        PvrdmaRecvWqe w;
        int err = -EINVAL;

        pvrdma_fetch_recv_wqe(r, r->priv, max_sge, &w);
        if (qp && qp->state == PVRDMA_QPS_ERR) {
            /*
             * A receive posted in the error state is flushed (IBA
             * 10.8.3.3); by the device, not the host: Linux rxe flushes
             * a user QP's receive queue only when the QP enters the error
             * state, never a receive posted later (the guest's
             * ib_drain_rq() would wait for it forever).
             */
            hca_err_cqe(c, qp, qp->rcq, w.hdr.wr_id, PVRDMA_WC_RECV,
                        PVRDMA_WC_WR_FLUSH_ERR);
            trace_pvrdma_queue_post_recv(handle, false, -EPIPE);
            r->priv = pvrdma_idx_next(r->priv, r->nelems);
            moved = true;
            continue;
        }
        if (w.sge_ok) {
            err = pvrdma_owner_post_recv(c, qp, srq, w.hdr.wr_id, w.sge,
                                         w.hdr.num_sge);
            if (err == -ENOMEM) {
                *blocked = true;
                break;
            }
        }
        trace_pvrdma_queue_post_recv(handle, !qp, err);
        r->priv = pvrdma_idx_next(r->priv, r->nelems);
        moved = true;
        if (err) {
            PVRDMA_GUEST_ERR(c, "%s %u: receive WQE with %u sges refused (%d)",
                             qp ? "QP" : "SRQ", handle, w.hdr.num_sge, err);
            if (qp) {
                hca_err_cqe(c, qp, qp->rcq, w.hdr.wr_id, PVRDMA_WC_RECV,
                            PVRDMA_WC_LOC_QP_OP_ERR);
                pvrdma_queue_qp_error(c, qp);
            } else {
                pvrdma_post_async(c, PVRDMA_EVENT_SRQ_ERR, handle);
            }
        }
    }
    if (moved) {
        pvrdma_ring_publish_cons(r);
    }
    return r->priv != prod && !*blocked;
}

void pvrdma_queue_post_rq(PvrdmaCore *c, PvrdmaQP *qp)
{
    if (pvrdma_qp_on_queue_transport(qp) && !qp->is_srq && rq_open(qp) &&
        !qp->queue_rq_blocked &&
        post_recvs(c, qp, NULL, &qp->rq, qp->max_recv_sge,
                   &qp->queue_rq_blocked)) {
        pvrdma_qp_schedule(c, qp);      /* the rest from the run loop */
    }
}

void pvrdma_queue_post_srq(PvrdmaCore *c, PvrdmaSRQ *srq)
{
    if (srq->twin && !srq->queue_blocked &&
        post_recvs(c, NULL, srq, &srq->ring, srq->max_sge,
                   &srq->queue_blocked)) {
        srq->hca_pending = true;        /* the rest from the run loop */
        c->hca_srqs = true;
        c->ops->kick(c->opaque, 0);
    }
}

/* The run loop's turn for qp: its new receives, then its sends. */
void pvrdma_queue_serve_qp(PvrdmaCore *c, PvrdmaQP *qp)
{
    pvrdma_queue_post_rq(c, qp);
    pvrdma_queue_post_sq(c, qp);
}

/* The run loop's turn for SRQs whose receives did not all fit a turn. */
void pvrdma_queue_serve_srqs(PvrdmaCore *c)
{
    c->hca_srqs = false;
    for (uint32_t h = 0; h < c->srq.size; h++) {
        PvrdmaSRQ *srq = c->srq.slot[h];

        if (srq && srq->hca_pending) {
            srq->hca_pending = false;
            pvrdma_queue_post_srq(c, srq);
        }
    }
}

void pvrdma_queue_completed(PvrdmaCore *c, PvrdmaQP *qp, bool is_send,
                         uint32_t status)
{
    if (status != PVRDMA_WC_SUCCESS && qp->state != PVRDMA_QPS_ERR) {
        /* an error completion leaves the host QP in the error state */
        qp->state = PVRDMA_QPS_ERR;
    }
    if (is_send && qp->queue_sq_blocked) {
        qp->queue_sq_blocked = false;
        pvrdma_queue_post_sq(c, qp);
    } else if (!is_send && qp->queue_rq_blocked) {
        qp->queue_rq_blocked = false;
        pvrdma_queue_post_rq(c, qp);
    } else if (!is_send && qp->is_srq) {
        PvrdmaSRQ *srq = pvrdma_table_get(&c->srq, qp->srq);

        if (srq && srq->queue_blocked) {
            srq->queue_blocked = false;
            pvrdma_queue_post_srq(c, srq);
        }
    }
}
