/*
 * pvrdma: the completer.  A send WQE between execution and completion
 * lives in the QP's send slot; pvrdma_drain_sq() completes finished slots
 * in order, from the consumer index up to the first still in flight, and
 * publishes the consumer index (the guest reuses a ring slot only then);
 * pvrdma_complete() is where every transport reports completions: a message
 * transport's request it answered PVRDMA_TRANSPORT_PENDING, or a queue
 * transport's CQE; pvrdma_flush_queues() completes everything posted to a
 * QP in error with WR_FLUSH_ERR.  Builds the send and receive CQEs.
 *
 * Not here: writing a CQE into the guest's CQ ring and notifying the guest
 * (pvrdma_event.c), executing WQEs (pvrdma_req.c, pvrdma_resp.c), the
 * move to the error state (pvrdma_qp.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_transport_calls.h"
#include "pvrdma_int.h"

static void send_cqe(PvrdmaCore *c, PvrdmaQP *qp, const PvrdmaSendWqe *w,
                     uint32_t status, uint32_t byte_len)
{
    struct pvrdma_cqe e = { 0 };

    e.wr_id = w->hdr.wr_id;
    e.opcode = pvrdma_wc_opcode(w->hdr.opcode);
    e.status = status;
    e.byte_len = byte_len;
    e.src_qp = qp->qpn;
    e.port_num = 1;
    pvrdma_cq_post(c, qp, qp->scq, &e, false);
}

void pvrdma_recv_cqe(PvrdmaCore *c, PvrdmaQP *qp, const PvrdmaRecvWqe *w,
                     uint32_t status, uint32_t opcode, uint32_t byte_len,
                     const PvrdmaReq *req, uint32_t flags, bool solicited)
{
    struct pvrdma_cqe e = { 0 };

    e.wr_id = w->hdr.wr_id;
    e.opcode = opcode;
    e.status = status;
    e.byte_len = byte_len;
    e.port_num = 1;
    if (req) {
        e.src_qp = req->src_qpn;
        e.imm_data = req->imm;
        memcpy(e.smac, req->smac, 6);
        e.network_hdr_type =
            req->sgid_type == PVRDMA_GID_TYPE_FLAG_ROCE_V1 ?
            PVRDMA_NETWORK_ROCE_V1 :
            (pvrdma_gid_is_v4(req->sgid) ? PVRDMA_NETWORK_IPV4 :
                                           PVRDMA_NETWORK_IPV6);
    }
    e.wc_flags = flags;
    pvrdma_cq_post(c, qp, qp->rcq, &e, solicited);
}

static void slot_cqe(PvrdmaCore *c, PvrdmaQP *qp, const PvrdmaSendSlot *s,
                     uint32_t status)
{
    struct pvrdma_cqe e = { 0 };

    e.wr_id = s->wr_id;
    e.opcode = pvrdma_wc_opcode(s->opcode);
    e.status = status;
    e.byte_len = s->byte_len;
    e.src_qp = qp->qpn;
    e.port_num = 1;
    pvrdma_cq_post(c, qp, qp->scq, &e, false);
}

/* Complete every posted WQE with WR_FLUSH_ERR (QP in error). */
void pvrdma_flush_queues(PvrdmaCore *c, PvrdmaQP *qp)
{
    uint32_t prod, n = 0;

    /* in flight: their late results will find no slot */
    while (qp->sq.priv != qp->sq_head && n++ < qp->sq.nelems) {
        PvrdmaSendSlot *s = pvrdma_send_slot(qp, qp->sq.priv);

        /* each slot free before its completion is seen (drain_sq) */
        qp->sq.priv = pvrdma_idx_next(qp->sq.priv, qp->sq.nelems);
        pvrdma_ring_publish_cons(&qp->sq);
        slot_cqe(c, qp, s, PVRDMA_WC_WR_FLUSH_ERR);
        memset(s, 0, sizeof(*s));
    }
    qp->sq_head = qp->sq.priv;
    if (pvrdma_ring_guest_prod(&qp->sq, &prod)) {
        n = 0;
        while (qp->sq.priv != prod && n++ < qp->sq.nelems) {
            PvrdmaSendWqe w;

            pvrdma_fetch_send_wqe(&qp->sq, qp->sq.priv, qp->max_send_sge,
                                  &w);
            qp->sq.priv = pvrdma_idx_next(qp->sq.priv, qp->sq.nelems);
            pvrdma_ring_publish_cons(&qp->sq);
            send_cqe(c, qp, &w, PVRDMA_WC_WR_FLUSH_ERR, 0);
        }
        qp->sq_head = qp->sq.priv;
    }
    pvrdma_ring_publish_cons(&qp->sq);
    if (!qp->is_srq && qp->rq.page &&
        pvrdma_ring_guest_prod(&qp->rq, &prod)) {
        n = 0;
        while (qp->rq.priv != prod && n++ < qp->rq.nelems) {
            PvrdmaRecvWqe w;

            pvrdma_fetch_recv_wqe(&qp->rq, qp->rq.priv, 0, &w);
            qp->rq.priv = pvrdma_idx_next(qp->rq.priv, qp->rq.nelems);
            pvrdma_ring_publish_cons(&qp->rq);
            pvrdma_recv_cqe(c, qp, &w, PVRDMA_WC_WR_FLUSH_ERR,
                            PVRDMA_WC_RECV, 0, NULL, 0, false);
        }
        pvrdma_ring_publish_cons(&qp->rq);
    }
}

/*
 * The slot at the consumer index came back unexecuted (redo).  Once every
 * slot after it is back too, they all go back to the send queue: sq_head
 * returns to the consumer index and the WQEs run again (true).  False
 * while some are still in flight.  A responder gives back a suffix of what
 * a QP sent it (its requests wait in order); one that answers a later
 * request after giving an earlier one back broke that: the one given back
 * fails instead (RETRY_EXC_ERR).
 */
static bool redo_tail(PvrdmaCore *c, PvrdmaQP *qp, PvrdmaSendSlot *first)
{
    uint32_t n = 0;

    for (uint32_t i = qp->sq.priv; i != qp->sq_head;
         i = pvrdma_idx_next(i, qp->sq.nelems), n++) {
        PvrdmaSendSlot *s = pvrdma_send_slot(qp, i);

        if (!s->done) {
            return false;
        }
        if (!s->redo) {
            first->redo = false;
            first->status = PVRDMA_WC_RETRY_EXC_ERR;
            qp->sq_failed = true;
            return false;
        }
    }
    trace_pvrdma_redo(qp->qpn, n, qp->sq.priv);
    for (uint32_t i = qp->sq.priv; i != qp->sq_head;
         i = pvrdma_idx_next(i, qp->sq.nelems)) {
        memset(pvrdma_send_slot(qp, i), 0, sizeof(PvrdmaSendSlot));
    }
    qp->sq_head = qp->sq.priv;
    pvrdma_qp_schedule(c, qp);
    return true;
}

/*
 * Complete finished WQEs in order, from the consumer index up to the
 * first one still in flight.  The first error moves the QP to error.
 */
void pvrdma_drain_sq(PvrdmaCore *c, PvrdmaQP *qp)
{
    while (qp->sq.priv != qp->sq_head) {
        PvrdmaSendSlot *s = pvrdma_send_slot(qp, qp->sq.priv);
        int st;

        if (!s->done) {
            break;
        }
        /* given back: wait for the rest, or run them all again */
        if (s->redo && (redo_tail(c, qp, s) || s->redo)) {
            break;
        }
        st = s->status;
        if (s->held) {
            /* the requester's retries have not run out yet */
            if (qp->hold_until == INT64_MAX) {
                break;
            }
            if (c->ops->now_ms(c->opaque) < qp->hold_until) {
                pvrdma_core_timer_at(c, qp->hold_until);
                break;
            }
            pvrdma_qp_hold(c, qp, 0);
        }
        /*
         * The WQE's slot is free before its completion can be seen: the
         * guest (another thread) may post again as soon as it polls the
         * CQE, and the provider checks for room against this index.
         */
        qp->sq.priv = pvrdma_idx_next(qp->sq.priv, qp->sq.nelems);
        pvrdma_ring_publish_cons(&qp->sq);
        if (st != PVRDMA_WC_SUCCESS || s->signaled) {
            slot_cqe(c, qp, s, st);
        }
        memset(s, 0, sizeof(*s));
        if (st != PVRDMA_WC_SUCCESS) {
            pvrdma_qp_to_error(c, qp);
            return;
        }
    }
}

void pvrdma_slot_done(PvrdmaCore *c, PvrdmaQP *qp, PvrdmaSendSlot *s, int st)
{
    if (st == PVRDMA_WC_SUCCESS && c->inject_wcs) {
        uint32_t inj = pvrdma_inject_wc(c, qp);

        st = inj ? (int)inj : st;   /* then flushed as any error */
    }
    if (qp->type != PVRDMA_QPT_RC && (st == PVRDMA_TRANSPORT_NOT_EXECUTED ||
                                      st == PVRDMA_TRANSPORT_NO_RESPONDER)) {
        st = PVRDMA_WC_SUCCESS;     /* UD: the datagram is lost */
    }
    if (st == PVRDMA_TRANSPORT_NOT_EXECUTED) {
        s->done = true;
        s->redo = true;
        s->status = PVRDMA_WC_SUCCESS;
        return;
    }
    if (st == PVRDMA_TRANSPORT_NO_RESPONDER) {
        int64_t w = pvrdma_retry_window_ms(qp);

        trace_pvrdma_no_responder(qp->qpn, w);
        st = PVRDMA_WC_RETRY_EXC_ERR;
        s->held = true;
        if (!qp->hold_until) {
            pvrdma_qp_hold(c, qp, w ? c->ops->now_ms(c->opaque) + w :
                                      INT64_MAX);
        }
    }
    s->done = true;
    s->status = st;
    if (st != PVRDMA_WC_SUCCESS) {
        qp->sq_failed = true;   /* execute nothing after it */
    }
}

/* A message transport's request that execute() answered PENDING finished. */
static void req_done(PvrdmaCore *c, PvrdmaQP *qp, uint64_t cookie,
                     int status)
{
    uint32_t i, n = 0;

    if (qp->state == PVRDMA_QPS_ERR) {
        return;
    }
    for (i = qp->sq.priv; i != qp->sq_head && n++ < qp->sq.nelems;
         i = pvrdma_idx_next(i, qp->sq.nelems)) {
        PvrdmaSendSlot *s = pvrdma_send_slot(qp, i);

        if (s->cookie == cookie && !s->done) {
            trace_pvrdma_req_done(qp->qpn, cookie, status);
            pvrdma_slot_done(c, qp, s, status);
            pvrdma_drain_sq(c, qp);
            /*
             * A full window may have held back more WQEs; and while the
             * QP waits for the run loop, its doorbells queue there too,
             * so that one run sends what several QPs posted (a transport
             * that batches sends them in one message instead of one
             * each).
             */
            pvrdma_qp_schedule(c, qp);
            return;
        }
    }
}

/* A queue transport's completion, as its owner reported it, for CQ cq. */
static void queue_cqe(PvrdmaCore *c, PvrdmaCQ *cq, PvrdmaQP *qp,
                      const PvrdmaWc *wc)
{
    struct pvrdma_cqe e = { 0 };

    e.wr_id = wc->wr_id;
    e.opcode = wc->opcode;
    e.status = wc->status;
    e.byte_len = wc->byte_len;
    e.imm_data = wc->imm;
    e.src_qp = wc->src_qp;
    if (!wc->is_send && qp->type == PVRDMA_QPT_RC) {
        e.src_qp = qp->attr.dest_qp_num;    /* hosts leave it 0 for RC */
    }
    e.wc_flags = wc->wc_flags;
    e.vendor_err = wc->vendor_err;
    e.pkey_index = wc->pkey_index;
    e.sl = wc->sl;
    e.port_num = 1;
    e.network_hdr_type = wc->network_hdr_type;
    if (!wc->is_send && wc->status == PVRDMA_WC_SUCCESS &&
        (wc->wc_flags & PVRDMA_WC_WITH_INVALIDATE)) {
        pvrdma_mr_remote_inv(c, qp->pd, wc->imm);
    }
    /* the host does not say whether a receive was solicited: wake anyway */
    pvrdma_cq_post(c, qp, cq->handle, &e, !wc->is_send);
    pvrdma_queue_completed(c, qp, wc->is_send, wc->status);
}

void pvrdma_complete(PvrdmaCore *c, const PvrdmaWc *wc)
{
    PvrdmaQP *qp = wc->qp ? pvrdma_qp_get(c, wc->qp) : NULL;
    PvrdmaCQ *cq;

    if (wc->cookie) {
        if (qp && !pvrdma_qp_on_queue_transport(qp)) {
            req_done(c, qp, wc->cookie, wc->status);
        }
        return;
    }
    if (qp && !pvrdma_qp_on_queue_transport(qp)) {
        return;     /* the core completes a message transport's WQEs itself */
    }
    cq = pvrdma_table_get(&c->cq, wc->cq);
    /*
     * Only for a QP the guest still has, on one of its CQs: the driver
     * would stop at a CQE of a QP it destroyed (pvrdma_cq_post()).
     */
    if (!qp || !cq || (wc->cq != qp->scq && wc->cq != qp->rcq)) {
        trace_pvrdma_wc_dropped(wc->qp, wc->cq, wc->wr_id, wc->status);
        return;
    }
    queue_cqe(c, cq, qp, wc);
}
