/*
 * pvrdma: the requester.  Walks a QP's send queue from its own cursor
 * (sq_head) to the guest's producer index, which it reads once per pass;
 * copies each WQE out of the ring before looking at it, validates the copy
 * (opcode, SGE count, lkeys), executes LOCAL_INV and FAST_REG_MR itself
 * (pvrdma_mr.c) and hands every other WQE, as a PvrdmaReq, to the QP's
 * transport (pvrdma_transport.c: RC chose it at RTR, UD and GSI choose per
 * request).
 * A WQE is always consumed, good or bad, except while the responder has no
 * receive posted (RNR): then it stays at the head until a receive doorbell,
 * or the RNR deadline fails it.  The outcome goes into the WQE's send slot.
 * A pass handles at most PVRDMA_RUN_BUDGET WQEs (PVRDMA_INLINE_BUDGET from
 * a send doorbell) and copies at most run_bytes here (a transport that
 * copies, PVRDMA_TP_SEGMENTED: a longer message moves one piece per pass),
 * then the QP goes to the back of the run list.
 *
 * Not here: completing WQEs and building their CQEs (pvrdma_comp.c), the
 * responder (pvrdma_resp.c), memory keys (pvrdma_mr.c), the run list
 * (pvrdma_sched.c), doorbells (pvrdma_dp.c), RNR wake-ups
 * (pvrdma_transport.c), QP states and the RNR deadline (pvrdma_qp.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_transport_calls.h"
#include "pvrdma_int.h"

static bool opcode_ok(PvrdmaQP *qp, uint32_t op)
{
    if (qp->type != PVRDMA_QPT_RC) {
        return op == PVRDMA_WR_SEND || op == PVRDMA_WR_SEND_WITH_IMM;
    }
    switch (op) {
    case PVRDMA_WR_RDMA_WRITE:
    case PVRDMA_WR_RDMA_WRITE_WITH_IMM:
    case PVRDMA_WR_SEND:
    case PVRDMA_WR_SEND_WITH_IMM:
    case PVRDMA_WR_RDMA_READ:
    case PVRDMA_WR_ATOMIC_CMP_AND_SWP:
    case PVRDMA_WR_ATOMIC_FETCH_AND_ADD:
    case PVRDMA_WR_SEND_WITH_INV:
    case PVRDMA_WR_LOCAL_INV:
    case PVRDMA_WR_FAST_REG_MR:
        return true;
    default:
        return false;
    }
}

/*
 * The local scatter list of a WQE that moves data; on an error (a
 * PVRDMA_WC_* status) the list is released.
 */
static int execute_local(PvrdmaCore *c, PvrdmaQP *qp, PvrdmaSendWqe *w,
                         uint32_t op, PvrdmaSg *local)
{
    const struct pvrdma_sq_wqe_hdr *h = &w->hdr;
    bool sink;
    int st;

    /* PVRDMA_SEND_INLINE: the SGEs carry the data */
    pvrdma_inline_sges(c, qp, w);
    sink = op == PVRDMA_WR_RDMA_READ || pvrdma_wr_is_atomic(op);
    st = pvrdma_resolve_sges(c, qp->pd, w->sge, h->num_sge, sink, local);
    if (st != PVRDMA_WC_SUCCESS) {
        pvrdma_sg_release(c, local);
        return st;
    }
    if (pvrdma_wr_is_atomic(op) && local->len != 8) {
        pvrdma_sg_release(c, local);
        return PVRDMA_WC_LOC_LEN_ERR;
    }
    return PVRDMA_WC_SUCCESS;
}

/* An RC request goes where the QP's attributes say */
static void execute_rc_dest(PvrdmaQP *qp, const struct pvrdma_sq_wqe_hdr *h,
                            uint32_t op, PvrdmaReq *req, const uint8_t **dgid,
                            uint32_t *sgid_index)
{
    bool atomic = pvrdma_wr_is_atomic(op);

    req->remote_addr = atomic ? h->wr.atomic.remote_addr :
                                h->wr.rdma.remote_addr;
    req->rkey = atomic ? h->wr.atomic.rkey : h->wr.rdma.rkey;
    req->compare_add = h->wr.atomic.compare_add;
    req->swap = h->wr.atomic.swap;
    req->dest_qpn = qp->attr.dest_qp_num;
    *dgid = qp->attr.ah_attr.grh.dgid.raw;
    *sgid_index = qp->attr.ah_attr.grh.sgid_index;
    memcpy(req->dmac, qp->attr.ah_attr.dmac, 6);
    req->hop_limit = qp->attr.ah_attr.grh.hop_limit;
    req->traffic_class = qp->attr.ah_attr.grh.traffic_class;
    req->flow_label = qp->attr.ah_attr.grh.flow_label;
}

/* A UD (or GSI) request goes where the WQE's address vector says */
static void execute_ud_dest(PvrdmaQP *qp, const struct pvrdma_sq_wqe_hdr *h,
                            PvrdmaReq *req, const uint8_t **dgid,
                            uint32_t *sgid_index)
{
    req->dest_qpn = h->wr.ud.remote_qpn & 0xffffff;
    req->qkey = (h->wr.ud.remote_qkey & 0x80000000u) ? qp->attr.qkey :
                h->wr.ud.remote_qkey;
    *dgid = h->wr.ud.av.dgid;
    *sgid_index = h->wr.ud.av.gid_index;
    memcpy(req->dmac, h->wr.ud.av.dmac, 6);
    req->hop_limit = h->wr.ud.av.hop_limit;
    req->traffic_class = h->wr.ud.av.sl_tclass_flowlabel >> 20;
    req->flow_label = h->wr.ud.av.sl_tclass_flowlabel & 0xfffff;
}

/* execute_wqe(): a piece moved, more follow (the WQE stays at the head) */
#define SEG_MORE (-100)

/*
 * The next piece of the head WQE's message (qp->seg_off of its seg_msg
 * bytes moved) into req: at most run_bytes, the whole rest for the save.
 * The WQE is read from the ring again each pass: one the guest changed
 * meanwhile fails.
 */
static int seg_piece(PvrdmaCore *c, PvrdmaQP *qp, PvrdmaSendWqe *w,
                     uint32_t op, PvrdmaReq *req)
{
    uint64_t left = qp->seg_msg - qp->seg_off;
    uint64_t len = c->seg_whole ? left : MIN(left, c->run_bytes);
    int st;

    if (pvrdma_sges_len(w->sge, w->hdr.num_sge) != qp->seg_msg) {
        PVRDMA_GUEST_ERR(c, "QP %u: send WQE changed while its message "
                         "moved", qp->qpn);
        return PVRDMA_WC_LOC_QP_OP_ERR;
    }
    st = pvrdma_resolve_sges_at(c, qp->pd, w->sge, w->hdr.num_sge,
                                op == PVRDMA_WR_RDMA_READ, qp->seg_off, len,
                                &req->local);
    if (st != PVRDMA_WC_SUCCESS) {
        pvrdma_sg_release(c, &req->local);
        return st;
    }
    req->seg_off = qp->seg_off;
    req->msg_len = qp->seg_msg;
    return PVRDMA_WC_SUCCESS;
}

/*
 * The local scatter list: the whole message, or its next piece when it
 * moves in pieces (an RC message longer than run_bytes on transport t).
 */
static int execute_data(PvrdmaCore *c, PvrdmaQP *qp, PvrdmaTransport *t,
                        PvrdmaSendWqe *w, uint32_t op, PvrdmaReq *req)
{
    int st;

    if (qp->seg_off) {
        pvrdma_inline_sges(c, qp, w);
        return seg_piece(c, qp, w, op, req);
    }
    st = execute_local(c, qp, w, op, &req->local);
    if (st != PVRDMA_WC_SUCCESS || qp->type != PVRDMA_QPT_RC || !t ||
        !pvrdma_transport_segmented(t) || !pvrdma_wr_in_pieces(op) ||
        req->local.len <= c->run_bytes || c->seg_whole) {
        return st;
    }
    /* checked whole (keys, length) once; then one piece at a time */
    qp->seg_msg = req->local.len;
    qp->seg_op = op;
    pvrdma_sg_release(c, &req->local);
    return seg_piece(c, qp, w, op, req);
}

/*
 * What the outcome st of a piece of len bytes makes of the WQE (see
 * execute_wqe())
 */
static int seg_moved(PvrdmaCore *c, PvrdmaQP *qp, const PvrdmaReq *req,
                     uint64_t len, int st)
{
    if (st == PVRDMA_TRANSPORT_RNR) {
        return st;              /* the same piece again later */
    }
    if (st == PVRDMA_WC_SUCCESS && req->seg_off + len < req->msg_len) {
        qp->seg_off += len;
        c->seg_pieces++;
        trace_pvrdma_segment(qp->qpn, req->seg_off, len, req->msg_len);
        return SEG_MORE;
    }
    if (st == PVRDMA_WC_SUCCESS) {
        qp->seg_off = 0;        /* the last piece */
    } else {
        pvrdma_seg_drop_sent(c, qp);
    }
    return st;
}

/* Hand the request to transport t; returns what execute_wqe does */
static int execute_on_transport(PvrdmaQP *qp, PvrdmaTransport *t,
                                PvrdmaReq *req)
{
    if (t && qp->offer_to) {
        return PVRDMA_TRANSPORT_PAUSED;     /* until the peer answers */
    }
    if (t && !pvrdma_transport_is_queue(t)) {
        return pvrdma_transport_execute(t, req);
    }
    /* (a queue transport never gets here: its QPs are run by it) */
    trace_pvrdma_unreachable(qp->qpn);
    return qp->type == PVRDMA_QPT_RC ? PVRDMA_TRANSPORT_NO_RESPONDER :
                                       PVRDMA_WC_SUCCESS;
}

/*
 * Execute one send WQE on transport t (wqe_transport()); returns a WC
 * status, PVRDMA_TRANSPORT_RNR, PVRDMA_TRANSPORT_PENDING (then *cookie
 * names it for pvrdma_complete) or SEG_MORE.
 */
static int execute_wqe(PvrdmaCore *c, PvrdmaQP *qp, PvrdmaTransport *t,
                       PvrdmaSendWqe *w, uint32_t *byte_len,
                       uint64_t *cookie)
{
    const struct pvrdma_sq_wqe_hdr *h = &w->hdr;
    uint32_t op = h->opcode, sgid_index;
    const uint8_t *dgid;
    PvrdmaReq req = { 0 };
    uint64_t piece;
    int st;

    *byte_len = 0;
    *cookie = 0;
    if (qp->seg_off && (op != qp->seg_op || !w->sge_ok)) {
        PVRDMA_GUEST_ERR(c, "QP %u: send WQE changed while its message "
                         "moved", qp->qpn);
        pvrdma_seg_drop_sent(c, qp);
        return PVRDMA_WC_LOC_QP_OP_ERR;
    }
    if (!opcode_ok(qp, op)) {
        PVRDMA_GUEST_ERR(c, "QP %u: opcode %u not supported", qp->qpn, op);
        return PVRDMA_WC_LOC_QP_OP_ERR;
    }
    if (!w->sge_ok) {
        PVRDMA_GUEST_ERR(c, "QP %u: WQE with %u sges (max %u)", qp->qpn,
                         h->num_sge, qp->max_send_sge);
        return PVRDMA_WC_LOC_LEN_ERR;
    }
    if (op == PVRDMA_WR_LOCAL_INV) {
        return pvrdma_mr_local_inv(c, qp, h->ex.invalidate_rkey, NULL, NULL);
    }
    if (op == PVRDMA_WR_FAST_REG_MR) {
        return pvrdma_mr_fast_reg(c, qp, &h->wr.fast_reg, NULL, NULL);
    }
    st = execute_data(c, qp, t, w, op, &req);
    if (st != PVRDMA_WC_SUCCESS) {
        pvrdma_seg_drop_sent(c, qp);
        return st;
    }
    req.opcode = op;
    req.send_flags = h->send_flags;
    req.src_qpn = qp->qpn;
    req.qp_type = qp->type;
    req.imm = h->ex.imm_data;
    if (qp->type == PVRDMA_QPT_RC) {
        execute_rc_dest(qp, h, op, &req, &dgid, &sgid_index);
    } else {
        if (req.local.len > 4096) {
            pvrdma_sg_release(c, &req.local);
            return PVRDMA_WC_LOC_LEN_ERR;   /* larger than the MTU */
        }
        execute_ud_dest(qp, h, &req, &dgid, &sgid_index);
    }
    req.pd = qp->pd;
    req.sge = w->sge;
    req.num_sge = h->num_sge;
    if (sgid_index < c->lim.gid_tbl_len) {
        memcpy(req.sgid, c->gid[sgid_index].gid.raw, 16);
        req.sgid_type = c->gid[sgid_index].type;
    }
    memcpy(req.dgid, dgid, 16);
    c->ops->get_mac(c->opaque, req.smac);
    req.rnr_retry = qp->attr.rnr_retry;
    req.cookie = *cookie = ++c->next_cookie;
    *byte_len = req.msg_len ? req.msg_len : req.local.len;
    piece = req.local.len;
    st = execute_on_transport(qp, t, &req);
    pvrdma_sg_release(c, &req.local);
    return req.msg_len ? seg_moved(c, qp, &req, piece, st) : st;
}

/*
 * The transport that carries this WQE (NULL: none reaches its
 * destination), chosen once per WQE: the doorbell's check and the
 * execution use the same.
 */
static PvrdmaTransport *wqe_transport(PvrdmaCore *c, PvrdmaQP *qp,
                                      const PvrdmaSendWqe *w)
{
    const uint8_t *dgid = qp->type == PVRDMA_QPT_RC ?
                          qp->attr.ah_attr.grh.dgid.raw : w->hdr.wr.ud.av.dgid;

    return pvrdma_transport_for(c, qp, dgid);
}

/*
 * May the send queue run?  A QP in error flushes, one not in RTS waits, a
 * failed WQE drains the queue, a bad producer index fails the QP; else
 * *prod is the guest's producer index.
 */
static bool sq_runs(PvrdmaCore *c, PvrdmaQP *qp, uint32_t *prod)
{
    if (qp->state == PVRDMA_QPS_ERR) {
        pvrdma_flush_queues(c, qp);
        if (qp->gone_pending) {
            qp->gone_pending = false;
            pvrdma_qp_gone(c, qp->qpn); /* peers' requests waiting on it */
        }
        return false;
    }
    if (qp->state != PVRDMA_QPS_RTS) {
        return false;   /* WQEs wait in the ring until the QP is ready */
    }
    if (pvrdma_qp_fencing(c, qp)) {
        return false;   /* going to RESET: nothing new to fence */
    }
    if (qp->sq_failed) {
        /*
         * A WQE failed behind ones still in flight: nothing after it may
         * run; the QP goes to error when it completes in order.
         */
        pvrdma_drain_sq(c, qp);
        return false;
    }
    if (!pvrdma_ring_guest_prod(&qp->sq, prod) ||
        pvrdma_idx_used(*prod, qp->sq_head, qp->sq.nelems) >
        pvrdma_idx_used(*prod, qp->sq.priv, qp->sq.nelems)) {
        PVRDMA_GUEST_ERR(c, "SQ of QP %u: producer index invalid", qp->qpn);
        pvrdma_qp_fail(c, qp, PVRDMA_EVENT_QP_FATAL);
        return false;
    }
    return true;
}

/* The transport takes nothing now: wait for its wake-up */
static void sq_pause(PvrdmaCore *c, PvrdmaQP *qp)
{
    if (!qp->paused) {
        trace_pvrdma_paused_wait(qp->qpn);
    }
    pvrdma_qp_set_rnr_wait(c, qp, true);
    qp->paused = true;
    qp->rnr_deadline = 0;
}

/*
 * The head WQE met RNR: false while it waits for a receive (the RNR wait
 * set, its deadline armed), true once its deadline has passed.
 */
static bool sq_rnr_expired(PvrdmaCore *c, PvrdmaQP *qp)
{
    int64_t now = c->ops->now_ms(c->opaque);

    if (!qp->rnr_wait || qp->paused) {
        qp->paused = false;
        pvrdma_qp_set_rnr_wait(c, qp, true);
        qp->rnr_deadline = pvrdma_rnr_deadline(c, qp->attr.rnr_retry,
            pvrdma_qp_by_qpn(c, qp->attr.dest_qp_num));
    }
    if (qp->rnr_deadline && now >= qp->rnr_deadline) {
        return true;
    }
    trace_pvrdma_rnr_wait(qp->qpn);
    if (qp->rnr_deadline) {
        pvrdma_core_timer_at(c, qp->rnr_deadline);
    }
    return false;
}

/* The head WQE is consumed: its send slot records it (and st, if final) */
static void sq_consume(PvrdmaCore *c, PvrdmaQP *qp, const PvrdmaSendWqe *w,
                       uint32_t len, uint64_t cookie, int st)
{
    PvrdmaSendSlot *s = pvrdma_send_slot(qp, qp->sq_head);

    s->wr_id = w->hdr.wr_id;
    s->opcode = w->hdr.opcode;
    s->byte_len = len;
    s->signaled = qp->sq_sig_all ||
                  (w->hdr.send_flags & PVRDMA_SEND_SIGNALED);
    s->cookie = cookie;
    s->done = s->held = s->redo = false;
    s->status = PVRDMA_WC_SUCCESS;
    if (st != PVRDMA_TRANSPORT_PENDING) {
        pvrdma_slot_done(c, qp, s, st);
    }
    qp->sq_head = pvrdma_idx_next(qp->sq_head, qp->sq.nelems);
}

/*
 * Serve qp's send queue.  inline_budget > 0: called from a send doorbell
 * (vCPU thread): serve at most that many WQEs and only those that cost no
 * data copy here (requests for a co-resident peer, whose responder copies),
 * leaving the rest to the run loop.
 */
static void serve_sq(PvrdmaCore *c, PvrdmaQP *qp, uint32_t inline_budget,
                     uint32_t budget)
{
    uint64_t copied = 0;
    uint32_t prod;

    if (!sq_runs(c, qp, &prod)) {
        return;
    }
    while (qp->sq_head != prod) {
        PvrdmaTransport *t;
        uint64_t cookie;
        uint32_t len;
        PvrdmaSendWqe w;
        int st;

        if (!budget--) {
            pvrdma_qp_schedule(c, qp);
            break;
        }
        pvrdma_fetch_send_wqe(&qp->sq, qp->sq_head, qp->max_send_sge, &w);
        t = wqe_transport(c, qp, &w);
        if (inline_budget && !(t && pvrdma_transport_doorbell_ok(t))) {
            pvrdma_qp_schedule(c, qp);
            break;
        }
        st = execute_wqe(c, qp, t, &w, &len, &cookie);
        if (st == SEG_MORE) {
            pvrdma_qp_schedule(c, qp);  /* the next piece in the next pass */
            break;
        }
        if (st == PVRDMA_TRANSPORT_PAUSED) {
            sq_pause(c, qp);
            break;
        }
        if (st == PVRDMA_TRANSPORT_RNR) {
            if (!sq_rnr_expired(c, qp)) {
                break;
            }
            st = PVRDMA_WC_RNR_RETRY_EXC_ERR;
        }
        pvrdma_qp_set_rnr_wait(c, qp, false);
        sq_consume(c, qp, &w, len, cookie, st);
        if (qp->sq_failed) {
            break;      /* the QP goes to error when this one completes */
        }
        copied += t && pvrdma_transport_segmented(t) ? len : 0;
        if (copied >= c->run_bytes && qp->sq_head != prod) {
            pvrdma_qp_schedule(c, qp);  /* the byte budget is spent */
            break;
        }
    }
    pvrdma_drain_sq(c, qp);
}

void pvrdma_serve_sq(PvrdmaCore *c, PvrdmaQP *qp, uint32_t inline_budget)
{
    serve_sq(c, qp, inline_budget,
             inline_budget ? inline_budget : PVRDMA_RUN_BUDGET);
}

void pvrdma_seg_finish(PvrdmaCore *c)
{
    c->seg_whole = true;
    for (uint32_t h = 0; h < c->qp.size; h++) {
        PvrdmaQP *qp = c->qp.slot[h];

        if (qp && qp->seg_off) {
            serve_sq(c, qp, 0, 1);      /* the head WQE's rest, at once */
        }
    }
    c->seg_whole = false;
}
