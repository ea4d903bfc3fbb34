/*
 * pvrdma RoCEv2 transport, the responder (as Linux rxe's rxe_resp.c): a
 * request packet for an RC QP is checked (PSN, opcode sequence, lengths)
 * and executed with the core's responder primitives; a duplicate is
 * answered (the replay cache for READs and atomics), a gap gets one
 * sequence NAK; ACKs, NAKs, READ responses and atomic ACKs go out in
 * order from a response queue (roce_resp_push()).  See roce.c for the
 * transport as a whole, roce_int.h for what its files share.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "roce_int.h"

const char *roce_in_msg_name(RoceInMsg s)
{
    static const char *const name[] = {
        [ROCE_IN_NONE] = "IDLE",
        [ROCE_IN_SEND] = "IN_SEND",
        [ROCE_IN_WRITE] = "IN_WRITE",
    };

    return (unsigned)s < G_N_ELEMENTS(name) ? name[s] : "?";
}

void roce_set_in_msg(RoceQp *q, RoceInMsg to)
{
    if (q->in_msg != to) {
        trace_pvrdma_roce_state(q->qpn, "responder",
                                roce_in_msg_name(q->in_msg),
                                roce_in_msg_name(to));
        q->in_msg = to;
    }
}

static void resp_queue(RoceQp *q, const RoceResp *r)
{
    RoceResp *last = g_queue_peek_tail(&q->resps);

    /* ACKs are cumulative: a newer one replaces one not sent yet */
    if (r->kind == RESP_ACK && last && last->kind == RESP_ACK &&
        roce_aeth_type(last->syndrome) == ROCE_AETH_ACK &&
        roce_aeth_type(r->syndrome) == ROCE_AETH_ACK) {
        *last = *r;
        return;
    }
    g_queue_push_tail(&q->resps, g_memdup2(r, sizeof(*r)));
}

void roce_resp_ack(RoceQp *q, uint32_t psn, uint8_t syndrome)
{
    RoceResp r = { .kind = RESP_ACK, .psn = psn, .syndrome = syndrome,
                   .msn = q->msn };

    resp_queue(q, &r);
}

/* The next response packet of READ r. */
static void resp_read_pkt(RoceQp *q, RoceResp *r)
{
    RoceTransport *t = q->t;
    uint32_t mtu = pvrdma_qp_mtu(q->qp), len = MIN(mtu, r->left);
    bool last = r->left <= mtu;
    PvrdmaSg sg = { 0 };
    PvrdmaSg dst = { .iov = &(PvrdmaIov) { t->data, len }, .n = 1,
                     .len = len };
    RocePkt p;

    if (len && pvrdma_resp_remote(t->t.core, q->qp, r->rkey, r->va, len,
                                  PVRDMA_ACCESS_REMOTE_READ, &sg) !=
               PVRDMA_WC_SUCCESS) {
        /* deregistered meanwhile: the QP failed, the requester learns */
        roce_rc_pkt(q, &p, ROCE_RC_ACKNOWLEDGE, r->psn);
        p.aeth.syndrome = roce_aeth_nak(ROCE_NAK_REMOTE_ACCESS);
        p.aeth.msn = r->msn & PSN_MASK;
        roce_pkt_send(t, q, &p);
        r->first = false;
        r->left = 0;
        return;
    }
    if (len) {
        pvrdma_sg_copy(&dst, 0, &sg, 0, len);
        pvrdma_sg_release(t->t.core, &sg);
    }
    roce_rc_pkt(q, &p, r->first ? (last ? ROCE_RC_RDMA_READ_RESPONSE_ONLY :
                                   ROCE_RC_RDMA_READ_RESPONSE_FIRST) :
                       (last ? ROCE_RC_RDMA_READ_RESPONSE_LAST :
                        ROCE_RC_RDMA_READ_RESPONSE_MIDDLE), r->psn);
    p.aeth.syndrome = roce_aeth_ack(ROCE_AETH_NO_CREDITS);
    p.aeth.msn = r->msn & PSN_MASK;
    p.payload = t->data;
    p.payload_len = len;
    roce_pkt_send(t, q, &p);
    r->first = false;
    r->psn = psn_add(r->psn, 1);
    r->va += len;
    r->left -= len;
}

/* Send queued responses, at most a budget of packets. */
void roce_resp_push(RoceQp *q)
{
    RoceTransport *t = q->t;
    uint32_t budget = ROCE_RESP_BUDGET;
    RoceResp *r;
    RocePkt p;

    while (budget && (r = g_queue_peek_head(&q->resps))) {
        switch (r->kind) {
        case RESP_ACK:
            roce_rc_pkt(q, &p, ROCE_RC_ACKNOWLEDGE, r->psn);
            p.aeth.syndrome = r->syndrome;
            p.aeth.msn = r->msn & PSN_MASK;
            roce_pkt_send(t, q, &p);
            budget--;
            break;
        case RESP_ATOMIC:
            roce_rc_pkt(q, &p, ROCE_RC_ATOMIC_ACKNOWLEDGE, r->psn);
            p.aeth.syndrome = roce_aeth_ack(ROCE_AETH_NO_CREDITS);
            p.aeth.msn = r->msn & PSN_MASK;
            p.atmack = r->orig;
            roce_pkt_send(t, q, &p);
            budget--;
            break;
        case RESP_READ:
            while (budget && (r->first || r->left)) {
                resp_read_pkt(q, r);
                budget--;
            }
            break;
        }
        if (r->first || r->left) {
            break;      /* budget spent in the middle of a READ */
        }
        g_free(g_queue_pop_head(&q->resps));
    }
    if (q->resps.length) {
        pvrdma_transport_timer(t->t.core, 0);   /* the rest next turn */
    }
}

static RoceRes *resp_res_find(RoceQp *q, uint32_t psn)
{
    for (unsigned i = 0; i < q->nres; i++) {
        RoceRes *r = &q->res[i];

        if (r->valid && psn_cmp(psn, r->first_psn) >= 0 &&
            psn_cmp(psn, r->last_psn) <= 0) {
            return r;
        }
    }
    return NULL;
}

static void resp_res_add(RoceQp *q, bool atomic, uint32_t first,
                         uint32_t last, uint64_t orig)
{
    RoceRes *r = &q->res[q->res_next++ % q->nres];

    *r = (RoceRes) { .valid = true, .atomic = atomic, .first_psn = first,
                     .last_psn = last, .orig = orig };
}

/*
 * Queued responses of READ res not sent yet are stale once the requester
 * asks again (it gave up on them): drop them, or every repeated request
 * would queue one more copy of the whole READ in front of the answer.
 */
static void resp_drop_replays(RoceQp *q, const RoceRes *res)
{
    GList *l = q->resps.head;

    while (l) {
        GList *next = l->next;
        RoceResp *r = l->data;

        if (r->kind == RESP_READ && l != q->resps.head &&
            psn_cmp(r->psn, res->first_psn) >= 0 &&
            psn_cmp(r->psn, res->last_psn) <= 0) {
            g_free(r);
            g_queue_delete_link(&q->resps, l);
        }
        l = next;
    }
}

/*
 * The PSN an ACK of a duplicate SEND/WRITE packet names: the newest one
 * executed, short of READ and atomic requests.  Their answers are their
 * responses: an ACK naming a READ's last PSN tells the requester it is
 * done, and rxe 6.1's completer then completes the READ without its data
 * (the verbs checker saw READs and atomics "succeed" with nothing written
 * under loss).  rxe's responder keeps an ack_psn that READs and atomics
 * do not move; here the replay cache tells where they are (a requester
 * has at most max_dest_rd_atomic of them unanswered, all in the cache).
 */
uint32_t roce_resp_ack_psn(RoceQp *q)
{
    uint32_t psn = psn_add(q->epsn, PSN_MASK);
    RoceRes *res;

    for (unsigned n = 0; n < q->nres && (res = resp_res_find(q, psn)); n++) {
        psn = psn_add(res->first_psn, PSN_MASK);
    }
    return psn;
}

/* A request packet with a PSN already seen. */
static void resp_duplicate(RoceQp *q, const RocePkt *p)
{
    RoceRes *res;

    q->st.dups++;
    q->t->st.dups++;
    trace_pvrdma_roce_resp(q->qpn, "duplicate", p->psn);
    switch (p->opcode) {
    case ROCE_RC_RDMA_READ_REQUEST:
        res = resp_res_find(q, p->psn);
        if (res && !res->atomic) {
            /* read again (IBA 9.7.5.1.4.2): from what this one asks */
            RoceResp r = { .kind = RESP_READ, .psn = p->psn, .va = p->reth.va,
                           .rkey = p->reth.rkey, .left = p->reth.len,
                           .first = true, .msn = q->msn };

            resp_drop_replays(q, res);
            resp_queue(q, &r);
        }
        break;
    case ROCE_RC_COMPARE_SWAP:
    case ROCE_RC_FETCH_ADD:
        res = resp_res_find(q, p->psn);
        if (res && res->atomic && res->first_psn == p->psn) {
            /* the saved result: an atomic never runs twice */
            RoceResp r = { .kind = RESP_ATOMIC, .psn = p->psn,
                           .orig = res->orig, .msn = q->msn };

            resp_queue(q, &r);
        }
        break;
    default:
        /*
         * SEND / WRITE: acknowledge again what we have, when the packet
         * asks for it (AckReq: the requester sets it at least every 32
         * packets and on a message's last, so every retransmission gets
         * an answer).  One ACK per duplicate packet would send back as
         * many ACKs as a go-back-N resends, all alike: on a congested
         * path they queue up behind each other, arrive after the
         * requester's timer fired again and make it resend once more,
         * until its retries run out.  The responders of Linux qib/hfi1
         * do the same; rxe answers every duplicate.
         */
        if (p->ack_req) {
            roce_resp_ack(q, roce_resp_ack_psn(q),
                          roce_aeth_ack(ROCE_AETH_NO_CREDITS));
        }
        break;
    }
}

/*
 * No receive posted: RNR NAK.  The rest of the message, already on its
 * way, is dropped without a sequence NAK (nak_sent): the requester waits
 * out the RNR timer and sends again from this PSN.
 */
static void resp_rnr_nak(RoceQp *q, const RocePkt *p)
{
    trace_pvrdma_roce_resp(q->qpn, "RNR NAK", p->psn);
    roce_resp_ack(q, p->psn, roce_aeth_rnr_nak(q->qp->attr.min_rnr_timer));
    q->nak_sent = true;
}

/* The request fails: NAK, the QP goes to error (class A/B errors). */
static void resp_nak(RoceQp *q, const RocePkt *p, uint8_t code)
{
    PvrdmaCore *c = q->t->t.core;

    trace_pvrdma_roce_resp(q->qpn, "NAK", p->psn);
    roce_resp_ack(q, p->psn, roce_aeth_nak(code));
    if (q->rctx) {
        pvrdma_recv_abort(q->rctx);
        q->rctx = NULL;
    }
    roce_set_in_msg(q, ROCE_IN_NONE);
    if (q->qp->state != PVRDMA_QPS_ERR) {
        pvrdma_transport_event(c, PVRDMA_EVENT_QP_REQ_ERR, q->qp->handle);
    }
}

static uint8_t nak_code(int st)
{
    switch (st) {
    case PVRDMA_WC_REM_ACCESS_ERR:
        return ROCE_NAK_REMOTE_ACCESS;
    case PVRDMA_WC_REM_INV_REQ_ERR:
        return ROCE_NAK_INVALID_REQUEST;
    default:
        return ROCE_NAK_REMOTE_OP;
    }
}

/*
 * Take the receive WQE that request p consumes and place data (len bytes:
 * SEND FIRST or ONLY; 0: WRITE with immediate); false if there is none
 * (RNR NAK sent), it is bad or the data does not fit (NAK sent, the QP in
 * error).
 */
static bool resp_take_recv(RoceQp *q, const RocePkt *p, PvrdmaRecvCtx **ctx,
                           const PvrdmaSg *data, uint64_t len)
{
    int st = pvrdma_recv_begin(q->t->t.core, q->qp, ctx, data, len);

    if (st == PVRDMA_TRANSPORT_RNR) {
        resp_rnr_nak(q, p);
        return false;
    }
    if (st != PVRDMA_WC_SUCCESS) {
        resp_nak(q, p, nak_code(st));
        return false;
    }
    return true;
}

/*
 * SEND packet p of a request whose checks passed: its receive WQE at the
 * first, its data, the receive CQE at the last.  False if it failed (NAK
 * or RNR NAK sent).
 */
static bool resp_send(RoceQp *q, const RocePkt *p, const PvrdmaSg *data,
                      PvrdmaReq *req, bool first, bool last)
{
    PvrdmaCore *c = q->t->t.core;
    uint8_t op = p->opcode;
    int st;

    if (first) {
        /* the receive WQE's SGEs resolved once for it and the data */
        if (!resp_take_recv(q, p, &q->rctx, data, p->payload_len)) {
            return false;
        }
        q->rlen = 0;
        roce_set_in_msg(q, last ? ROCE_IN_NONE : ROCE_IN_SEND);
    } else {
        st = pvrdma_recv_data(c, q->qp, q->rctx, data, p->payload_len);
        if (st != PVRDMA_WC_SUCCESS) {
            q->rctx = NULL;     /* freed by the failure */
            resp_nak(q, p, nak_code(st));
            return false;
        }
    }
    q->rlen += p->payload_len;
    if (last) {
        req->opcode = op == ROCE_RC_SEND_LAST_WITH_IMMEDIATE ||
                      op == ROCE_RC_SEND_ONLY_WITH_IMMEDIATE ?
                      PVRDMA_WR_SEND_WITH_IMM :
                      op == ROCE_RC_SEND_LAST_WITH_INVALIDATE ||
                      op == ROCE_RC_SEND_ONLY_WITH_INVALIDATE ?
                      PVRDMA_WR_SEND_WITH_INV : PVRDMA_WR_SEND;
        req->imm = req->opcode == PVRDMA_WR_SEND_WITH_INV ? p->ieth_rkey :
                   imm_from_wire(p->imm);
        st = pvrdma_recv_end(c, q->qp, q->rctx, req, q->rlen);
        q->rctx = NULL;
        roce_set_in_msg(q, ROCE_IN_NONE);
        if (st != PVRDMA_WC_SUCCESS) {
            resp_nak(q, p, nak_code(st));
            return false;
        }
        q->msn++;
    }
    return true;
}

/*
 * RDMA WRITE packet p of a request whose checks passed: its data where
 * the RETH said, and with immediate a receive CQE at the last.  False if
 * it failed (NAK or RNR NAK sent).
 */
static bool resp_write(RoceQp *q, const RocePkt *p, const PvrdmaSg *data,
                       PvrdmaReq *req, bool first, bool last)
{
    PvrdmaCore *c = q->t->t.core;
    uint8_t op = p->opcode;
    bool imm = op == ROCE_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE ||
               op == ROCE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE;
    PvrdmaRecvCtx *ctx = NULL;
    PvrdmaSg rem = { 0 };
    int st;

    if (first) {
        q->wva = p->reth.va;
        q->wrkey = p->reth.rkey;
        q->wleft = p->reth.len;
        q->rlen = 0;
    }
    if (p->payload_len > q->wleft || (last && p->payload_len != q->wleft)) {
        resp_nak(q, p, ROCE_NAK_INVALID_REQUEST);
        return false;
    }
    if (imm && !resp_take_recv(q, p, &ctx, NULL, 0)) {
        return false;   /* the receive WQE first: none, no write */
    }
    if (p->payload_len) {
        st = pvrdma_resp_remote(c, q->qp, q->wrkey, q->wva,
                                p->payload_len,
                                PVRDMA_ACCESS_REMOTE_WRITE, &rem);
        if (st != PVRDMA_WC_SUCCESS) {
            if (ctx) {
                pvrdma_recv_abort(ctx);
            }
            resp_nak(q, p, ROCE_NAK_REMOTE_ACCESS);
            return false;
        }
        pvrdma_sg_copy(&rem, 0, data, 0, p->payload_len);
        pvrdma_sg_release(c, &rem);
    }
    q->wva += p->payload_len;
    q->wleft -= p->payload_len;
    q->rlen += p->payload_len;
    roce_set_in_msg(q, last ? ROCE_IN_NONE : ROCE_IN_WRITE);
    if (imm) {
        req->opcode = PVRDMA_WR_RDMA_WRITE_WITH_IMM;
        req->imm = imm_from_wire(p->imm);
        st = pvrdma_recv_end(c, q->qp, ctx, req, q->rlen);
        if (st != PVRDMA_WC_SUCCESS) {
            resp_nak(q, p, nak_code(st));
            return false;
        }
    }
    if (last) {
        q->msn++;
    }
    return true;
}

/*
 * RDMA READ request p (its checks passed): the whole range checked now,
 * its responses queued, remembered for a duplicate; the next PSN expected
 * is past its responses.
 */
static void resp_read(RoceQp *q, const RocePkt *p, uint32_t mtu)
{
    PvrdmaCore *c = q->t->t.core;
    uint32_t n = p->reth.len ? (p->reth.len + mtu - 1) / mtu : 1;
    PvrdmaSg rem = { 0 };
    RoceResp r = { .kind = RESP_READ, .psn = p->psn, .va = p->reth.va,
                   .rkey = p->reth.rkey, .left = p->reth.len,
                   .first = true };
    int st;

    if (p->reth.len) {
        /* check the whole range now; responses read it again */
        st = pvrdma_resp_remote(c, q->qp, p->reth.rkey, p->reth.va,
                                p->reth.len, PVRDMA_ACCESS_REMOTE_READ,
                                &rem);
        pvrdma_sg_release(c, &rem);
        if (st != PVRDMA_WC_SUCCESS) {
            resp_nak(q, p, ROCE_NAK_REMOTE_ACCESS);
            return;
        }
    }
    q->msn++;
    r.msn = q->msn;
    resp_res_add(q, false, p->psn, psn_add(p->psn, n - 1), 0);
    resp_queue(q, &r);
    q->epsn = psn_add(p->psn, n);
    q->nak_sent = false;
}

/*
 * Atomic request p (its checks passed): executed once, its result queued
 * and remembered for a duplicate.
 */
static void resp_atomic(RoceQp *q, const RocePkt *p, PvrdmaReq *req)
{
    PvrdmaCore *c = q->t->t.core;
    uint8_t op = p->opcode;
    uint64_t orig = 0;
    RoceResp r = { .kind = RESP_ATOMIC, .psn = p->psn };
    int st;

    req->opcode = op == ROCE_RC_COMPARE_SWAP ?
                  PVRDMA_WR_ATOMIC_CMP_AND_SWP :
                  PVRDMA_WR_ATOMIC_FETCH_AND_ADD;
    req->remote_addr = p->atmeth.va;
    req->rkey = p->atmeth.rkey;
    if (op == ROCE_RC_COMPARE_SWAP) {
        req->compare_add = p->atmeth.compare;
        req->swap = p->atmeth.swap_add;
    } else {
        req->compare_add = p->atmeth.swap_add;
    }
    st = pvrdma_resp_atomic(c, q->qp, req, &orig);
    if (st != PVRDMA_WC_SUCCESS) {
        resp_nak(q, p, ROCE_NAK_REMOTE_ACCESS);
        return;
    }
    q->msn++;
    r.msn = q->msn;
    r.orig = orig;
    resp_res_add(q, true, p->psn, p->psn, orig);
    resp_queue(q, &r);
    q->epsn = psn_add(p->psn, 1);
    q->nak_sent = false;
}

/* A request packet for our QP in RTR/RTS; p->psn == q->epsn. */
static void resp_request(RoceQp *q, const RocePkt *p)
{
    PvrdmaCore *c = q->t->t.core;
    const RoceOpInfo *oi = roce_opcode_info(p->opcode);
    uint32_t mtu = pvrdma_qp_mtu(q->qp);
    bool first = oi->pos == ROCE_POS_FIRST || oi->pos == ROCE_POS_ONLY;
    bool last = oi->pos == ROCE_POS_LAST || oi->pos == ROCE_POS_ONLY;
    uint8_t op = p->opcode;
    bool is_send = op <= ROCE_RC_SEND_ONLY_WITH_IMMEDIATE ||
                   op == ROCE_RC_SEND_LAST_WITH_INVALIDATE ||
                   op == ROCE_RC_SEND_ONLY_WITH_INVALIDATE;
    bool is_write = op >= ROCE_RC_RDMA_WRITE_FIRST &&
                    op <= ROCE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE;
    PvrdmaSg data = { .iov = &(PvrdmaIov) { (uint8_t *)p->payload,
                                            p->payload_len },
                      .n = 1, .len = p->payload_len };
    PvrdmaReq req = { 0 };

    /* opcode sequence: a message in progress goes on or nothing does */
    if ((q->in_msg != ROCE_IN_NONE &&
         (first || (is_send ? q->in_msg != ROCE_IN_SEND :
                    q->in_msg != ROCE_IN_WRITE) ||
          (!is_send && !is_write))) ||
        (q->in_msg == ROCE_IN_NONE && !first)) {
        resp_nak(q, p, ROCE_NAK_INVALID_REQUEST);
        return;
    }
    /* FIRST and MIDDLE carry exactly an MTU, LAST and ONLY at most one */
    if ((is_send || is_write) &&
        (last ? p->payload_len > mtu : p->payload_len != mtu)) {
        resp_nak(q, p, ROCE_NAK_INVALID_REQUEST);
        return;
    }
    req.qp_type = PVRDMA_QPT_RC;
    req.src_qpn = q->qp->attr.dest_qp_num;
    req.dest_qpn = q->qpn;
    memcpy(req.sgid, p->sgid, 16);
    memcpy(req.dgid, p->dgid, 16);
    req.sgid_type = PVRDMA_GID_TYPE_FLAG_ROCE_V2;
    memcpy(req.smac, p->smac, 6);
    req.send_flags = p->se ? PVRDMA_SEND_SOLICITED : 0;
    pvrdma_resp_comm_est(c, q->qp);

    if (is_send) {
        if (!resp_send(q, p, &data, &req, first, last)) {
            return;
        }
    } else if (is_write) {
        if (!resp_write(q, p, &data, &req, first, last)) {
            return;
        }
    } else if (op == ROCE_RC_RDMA_READ_REQUEST) {
        resp_read(q, p, mtu);
        return;
    } else if (op == ROCE_RC_COMPARE_SWAP || op == ROCE_RC_FETCH_ADD) {
        resp_atomic(q, p, &req);
        return;
    } else {
        resp_nak(q, p, ROCE_NAK_INVALID_REQUEST);
        return;
    }
    q->epsn = psn_add(p->psn, 1);
    q->nak_sent = false;
    if (p->ack_req) {
        roce_resp_ack(q, p->psn, roce_aeth_ack(ROCE_AETH_NO_CREDITS));
    }
}

void roce_resp_rc(RoceQp *q, const RocePkt *p)
{
    int32_t d = psn_cmp(p->psn, q->epsn);

    if (d == 0) {
        resp_request(q, p);
    } else if (d < 0) {
        resp_duplicate(q, p);
    } else if (!q->nak_sent) {
        /* a gap: ask for epsn once, drop until it comes */
        trace_pvrdma_roce_resp(q->qpn, "sequence NAK", q->epsn);
        q->nak_sent = true;
        roce_resp_ack(q, q->epsn, roce_aeth_nak(ROCE_NAK_PSN_SEQ_ERR));
    }
    roce_resp_push(q);
}
