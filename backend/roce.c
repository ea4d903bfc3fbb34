/*
 * pvrdma RoCEv2 transport: standard RoCEv2 (the IBA transport in UDP 4791)
 * on the paired NIC's network, to Linux rxe, RoCE HCAs and pvrdma devices
 * on other hosts.  Shaped like Linux rxe, the wire reference: a file per
 * state machine (roce_req.c, roce_comp.c, roce_resp.c, roce_net.c; design
 * in docs/devel/pvrdma-roce.rst).  This one: frames in
 * (UD to the core's responder, responses to the completer, requests to
 * the responder, duplicates for a QP destroyed a moment ago), the hooks,
 * the pause for migration, the constructor and the counters.
 *
 * A frame from the network is as untrusted as the guest: roce_parse()
 * checks every header, length and the ICRC, then every field is checked
 * against the QP it names; anything else is dropped and counted.
 * Everything runs under the device's lock; timers on the device's clock.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "roce_int.h"

/* ------------------------------------------------------------------ */
/* Receive                                                             */

static bool pkey_ok(uint16_t pkey)
{
    return (pkey & 0x7fff) == 0x7fff;
}

static void rx_ud(RoceTransport *t, const RocePkt *p)
{
    PvrdmaCore *c = t->t.core;
    PvrdmaReq req = { 0 };
    PvrdmaSg data = { .iov = &(PvrdmaIov) { (uint8_t *)p->payload,
                                            p->payload_len },
                      .n = 1, .len = p->payload_len };

    req.qp_type = PVRDMA_QPT_UD;
    req.opcode = p->opcode == ROCE_UD_SEND_ONLY_WITH_IMMEDIATE ?
                 PVRDMA_WR_SEND_WITH_IMM : PVRDMA_WR_SEND;
    req.imm = imm_from_wire(p->imm);
    req.send_flags = p->se ? PVRDMA_SEND_SOLICITED : 0;
    req.src_qpn = p->deth.sqp;
    req.dest_qpn = p->dqpn;
    req.qkey = p->deth.qkey;
    memcpy(req.sgid, p->sgid, 16);
    memcpy(req.dgid, p->dgid, 16);
    req.sgid_type = PVRDMA_GID_TYPE_FLAG_ROCE_V2;
    memcpy(req.smac, p->smac, 6);
    req.local = data;
    if (!pvrdma_ud_accepts(c, req.dest_qpn, req.qkey)) {
        trace_pvrdma_roce_drop("UD: no such QP or a wrong Q_Key");
        t->st.drops++;
        return;
    }
    pvrdma_responder(c, &req);
}

/* A response (ACK, READ response, atomic ACK) for our requester. */
static void rx_response(RoceQp *q, const RocePkt *p)
{
    if (!q->req_init) {
        q->t->st.drops++;
        return;
    }
    switch (p->opcode) {
    case ROCE_RC_ACKNOWLEDGE:
        roce_comp_ack(q, p);
        break;
    case ROCE_RC_ATOMIC_ACKNOWLEDGE:
        roce_comp_atomic_ack(q, p);
        break;
    default:
        roce_comp_read_resp(q, p);
        break;
    }
}

static void linger_forget(RoceTransport *t, uint32_t qpn)
{
    for (unsigned i = 0; i < ROCE_LINGER_N; i++) {
        if (t->linger[i].qpn == qpn) {
            t->linger[i].qpn = 0;
        }
    }
}

/* q's QP is being destroyed, connected: remember where its responder was */
static void linger_add(RoceTransport *t, RoceQp *q)
{
    RoceLinger *l = &t->linger[t->linger_next++ % ROCE_LINGER_N];

    linger_forget(t, q->qpn);
    l->qpn = q->qpn;
    memcpy(l->peer_gid, q->qp->attr.ah_attr.grh.dgid.raw, 16);
    l->peer_qpn = q->qp->attr.dest_qp_num & PSN_MASK;
    l->epsn = q->epsn;
    l->ack_psn = roce_resp_ack_psn(q);
    l->msn = q->msn;
    l->until = roce_now_ms(t) + ROCE_LINGER_MS;
}

/*
 * A request for a QP that no longer exists.  An application that ends
 * when it has received its last message (ibv_rc_pingpong's client)
 * destroys its QP as soon as the message is there, and nothing answers
 * the peer's retransmission of that message if our ACK of it was lost or
 * not taken: the peer fails it after its retries (a RoCE HCA), or waits
 * forever (rxe with retry_cnt 7, whose completer can move past an ACK
 * that came while the WQE was being resent and then wait for another
 * that only the destroyed QP could send).  So for ROCE_LINGER_MS the
 * transport answers what the destroyed responder would have answered to
 * a duplicate SEND or WRITE packet with AckReq: an ACK of everything
 * before the PSN it expected (all of that was executed), short of READs
 * and atomics as roce_resp_ack_psn() says.  A READ or an atomic cannot be
 * answered again (the QP's saved results are gone) and a new request is
 * dropped, as before.  Real HCAs forget at once; the answers here are the
 * ones the QP gave or would have given.
 */
static bool linger_rx(RoceTransport *t, const RocePkt *p)
{
    int64_t now = roce_now_ms(t);
    RoceLinger *l = NULL;
    RocePkt a;

    for (unsigned i = 0; i < ROCE_LINGER_N; i++) {
        if (t->linger[i].qpn && t->linger[i].qpn == p->dqpn &&
            !memcmp(t->linger[i].peer_gid, p->sgid, 16)) {
            l = &t->linger[i];
            break;
        }
    }
    if (!l || now >= l->until) {
        return false;
    }
    if (!roce_opcode_is_rc_request(p->opcode) || !p->ack_req ||
        psn_cmp(p->psn, l->epsn) >= 0 ||
        p->opcode == ROCE_RC_RDMA_READ_REQUEST ||
        p->opcode == ROCE_RC_COMPARE_SWAP || p->opcode == ROCE_RC_FETCH_ADD) {
        return false;
    }
    trace_pvrdma_roce_resp(l->qpn, "destroyed: duplicate acknowledged",
                           p->psn);
    t->st.dups++;
    roce_pkt_addr(t, &a, p->dgid, p->sgid, p->smac, 0, 0, 0, l->qpn);
    a.opcode = ROCE_RC_ACKNOWLEDGE;
    a.dqpn = l->peer_qpn;
    a.psn = l->ack_psn;
    a.aeth.syndrome = roce_aeth_ack(ROCE_AETH_NO_CREDITS);
    a.aeth.msn = l->msn & PSN_MASK;
    roce_pkt_send(t, NULL, &a);
    return true;
}

bool pvrdma_roce_rx(PvrdmaTransport *pt, const uint8_t *frame, size_t len)
{
    RoceTransport *t = roce(pt);
    PvrdmaCore *c = t->t.core;
    uint8_t mac[6];
    PvrdmaQP *qp;
    RoceQp *q;
    RocePkt p;
    int r;

    c->ops->get_mac(c->opaque, mac);
    if (len < ROCE_ETH_HLEN || memcmp(frame, mac, 6)) {
        return false;       /* not to our port */
    }
    memset(&p, 0, sizeof(p));
    r = roce_parse(frame, len, &p);
    /*
     * Ours: UDP to 4791 for one of our GIDs.  A frame that fails before the
     * UDP port is known is not (the NIC and the guest's IP stack get it).
     */
    if ((r != ROCE_OK && r > ROCE_DROP_UDP_CSUM) ||
        !pvrdma_gid_is_local(c, p.dgid)) {
        return false;
    }
    t->st.rx_pkts++;
    t->st.rx_bytes += len;
    if (r != ROCE_OK) {
        trace_pvrdma_roce_drop(roce_drop_reason_str(r));
        t->st.drops++;
        return true;
    }
    if (t->paused) {
        /* lost on the wire: the peer sends it again to where we go */
        trace_pvrdma_roce_drop("paused for a migration or snapshot");
        t->st.drops++;
        return true;
    }
    trace_pvrdma_roce_recv(roce_opcode_name(p.opcode), p.dqpn, p.psn,
                           (uint32_t)p.payload_len);
    if (!pkey_ok(p.pkey)) {
        trace_pvrdma_roce_drop("P_Key");
        t->st.drops++;
        return true;
    }
    if (p.opcode >= ROCE_UD_SEND_ONLY) {
        rx_ud(t, &p);
        return true;
    }
    qp = pvrdma_qp_by_qpn(c, p.dqpn);
    q = roce_qp(t, qp);
    if (!q && qp && qp->tp && qp->type == PVRDMA_QPT_RC &&
        !memcmp(p.sgid, qp->attr.ah_attr.grh.dgid.raw, 16) &&
        pvrdma_transport_heard(c, qp, &t->t)) {
        /* its peer left the QP's transport (moved) and is on the wire now */
        q = roce_qp(t, qp);
    }
    if (!qp && linger_rx(t, &p)) {
        return true;
    }
    if (!q || qp->type != PVRDMA_QPT_RC || qp->state < PVRDMA_QPS_RTR ||
        qp->state == PVRDMA_QPS_ERR ||
        memcmp(p.sgid, qp->attr.ah_attr.grh.dgid.raw, 16)) {
        /* no connection: a QP of another transport, reset, or a stranger */
        trace_pvrdma_roce_drop("no connection");
        t->st.drops++;
        return true;
    }
    q->st.rx_pkts++;
    q->st.rx_bytes += len;
    if (roce_opcode_is_rc_request(p.opcode)) {
        roce_resp_rc(q, &p);
    } else {
        rx_response(q, &p);
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* Transport hooks                                                     */

static bool roce_reaches(PvrdmaTransport *pt, const uint8_t dgid[16])
{
    static const uint8_t zero[16];

    /* anything that is not ours: the network decides (last in the list) */
    return memcmp(dgid, zero, 16) && !pvrdma_gid_is_local(pt->core, dgid);
}

static int roce_attach(PvrdmaTransport *pt, PvrdmaQP *qp)
{
    RoceTransport *t = roce(pt);
    RoceQp *q = g_new0(RoceQp, 1);

    linger_forget(t, qp->qpn);      /* the number is used again */
    q->t = t;
    q->qp = qp;
    q->qpn = qp->qpn;
    q->epsn = qp->attr.rq_psn & PSN_MASK;
    q->nres = MAX(qp->attr.max_dest_rd_atomic, 1);
    q->res = g_new0(RoceRes, q->nres);
    g_queue_init(&q->wqes);
    g_queue_init(&q->resps);
    t->qps = g_list_prepend(t->qps, q);
    qp->tp_state = q;
    trace_pvrdma_roce_resp(q->qpn, "attached, expecting", q->epsn);
    return 0;
}

/*
 * The way back (PvrdmaMoveOps.qp_idle): nothing of qp on the wire
 * either way that the PSNs do not say: every request acknowledged, every
 * response sent, no message half received.
 */
static bool roce_qp_idle(PvrdmaTransport *pt, PvrdmaQP *qp, uint32_t *sq_psn,
                         uint32_t *rq_psn)
{
    RoceTransport *t = roce(pt);
    RoceQp *q = roce_qp(t, qp);

    if (!q || t->paused || q->wqes.length || q->resps.length ||
        q->in_msg != ROCE_IN_NONE || q->rctx) {
        return false;
    }
    *sq_psn = q->req_init ? q->next_psn : qp->attr.sq_psn & PSN_MASK;
    *rq_psn = q->epsn;
    return true;
}

/*
 * qp came here from another transport in RTR..SQD: an ACK of what it has
 * (a duplicate ACK to a peer on the wire already) tells a peer that still
 * waits on the old transport where it is (pvrdma_transport_heard()).
 */
static void roce_announce(PvrdmaTransport *pt, PvrdmaQP *qp)
{
    RoceQp *q = roce_qp(roce(pt), qp);

    if (q) {
        trace_pvrdma_roce_resp(q->qpn, "announced, expecting", q->epsn);
        roce_resp_ack(q, psn_add(q->epsn, PSN_MASK),
                      roce_aeth_ack(ROCE_AETH_NO_CREDITS));
        roce_resp_push(q);
    }
}

static void roce_qp_free(RoceTransport *t, RoceQp *q)
{
    roce_qp_drop_requests(q);
    g_queue_clear_full(&q->resps, g_free);
    if (q->rctx) {
        pvrdma_recv_abort(q->rctx);
    }
    t->qps = g_list_remove(t->qps, q);
    g_free(q->res);
    g_free(q);
}

static void roce_detach(PvrdmaTransport *pt, PvrdmaQP *qp)
{
    RoceQp *q = qp->tp_state;

    if (q) {
        if (pvrdma_qp_by_qpn(pt->core, qp->qpn) != qp &&
            qp->state >= PVRDMA_QPS_RTR && qp->state != PVRDMA_QPS_ERR) {
            linger_add(roce(pt), q);    /* destroyed while connected */
        }
        roce_qp_free(roce(pt), q);
        qp->tp_state = NULL;
    }
}

static int roce_execute(PvrdmaTransport *pt, PvrdmaReq *req)
{
    RoceTransport *t = roce(pt);
    PvrdmaCore *c = pt->core;
    PvrdmaQP *qp = pvrdma_qp_by_qpn(c, req->src_qpn);
    RocePkt p;

    if (t->paused) {
        /* RC waits for the pause to end; a datagram is lost */
        return req->qp_type == PVRDMA_QPT_RC ? PVRDMA_TRANSPORT_PAUSED :
                                               PVRDMA_WC_SUCCESS;
    }
    if (req->qp_type == PVRDMA_QPT_RC) {
        RoceQp *q = roce_qp(t, qp);

        if (!q) {
            return PVRDMA_WC_RETRY_EXC_ERR;
        }
        return roce_execute_rc(t, q, req);
    }
    if (req->sgid_type != PVRDMA_GID_TYPE_FLAG_ROCE_V2) {
        trace_pvrdma_roce_drop("UD from a GID that is not RoCEv2");
        return PVRDMA_WC_SUCCESS;
    }
    if (req->local.len > sizeof(t->data)) {
        return PVRDMA_WC_LOC_LEN_ERR;
    }
    roce_pkt_addr(t, &p, req->sgid, req->dgid, req->dmac, req->hop_limit,
                  req->traffic_class, req->flow_label, req->src_qpn);
    p.opcode = req->opcode == PVRDMA_WR_SEND_WITH_IMM ?
               ROCE_UD_SEND_ONLY_WITH_IMMEDIATE : ROCE_UD_SEND_ONLY;
    p.se = req->send_flags & PVRDMA_SEND_SOLICITED;
    p.dqpn = req->dest_qpn & PSN_MASK;
    p.psn = t->ud_psn++ & PSN_MASK;
    p.deth.qkey = req->qkey;
    p.deth.sqp = req->qp_type == PVRDMA_QPT_GSI ? 1 :
                 req->src_qpn & PSN_MASK;
    p.imm = imm_to_wire(req->imm);
    {
        PvrdmaSg dst = { .iov = &(PvrdmaIov) { t->data, req->local.len },
                         .n = 1, .len = req->local.len };

        pvrdma_sg_copy(&dst, 0, &req->local, 0, req->local.len);
    }
    p.payload = t->data;
    p.payload_len = req->local.len;
    roce_pkt_send(t, NULL, &p);
    return PVRDMA_WC_SUCCESS;
}

/* Timers and responses left for the next turn. */
static void roce_timer(PvrdmaTransport *pt)
{
    RoceTransport *t = roce(pt);
    int64_t now = roce_now_ms(t), next = 0;
    GList *l, *nl;

    t->armed = 0;
    if (t->paused) {
        return;     /* no retransmission while the state is saved */
    }
    for (l = t->qps; l; l = nl) {
        RoceQp *q = l->data;

        nl = l->next;
        roce_req_timers(q, now);
        if (q->resps.length) {
            roce_resp_push(q);
        }
        if (q->cur && !q->rnr_deadline) {
            roce_req_push(q);
        }
        if (q->rto_deadline && (!next || q->rto_deadline < next)) {
            next = q->rto_deadline;
        }
        if (q->rnr_deadline && (!next || q->rnr_deadline < next)) {
            next = q->rnr_deadline;
        }
    }
    roce_arm(t, next);
}

static bool roce_stats(PvrdmaTransport *pt, const PvrdmaQP *qp,
                       PvrdmaPathStats *st)
{
    if (qp) {
        return pvrdma_roce_qp_stats(pt, qp, st);
    }
    pvrdma_roce_stats(pt, st);
    return true;
}

static void roce_destroy(PvrdmaTransport *pt)
{
    RoceTransport *t = roce(pt);
    while (t->qps) {
        RoceQp *q = t->qps->data;

        q->qp->tp_state = NULL;
        roce_qp_free(t, q);
    }
    g_free(t);
}

/* ------------------------------------------------------------------ */
/* Migration and snapshots: a pause on the wire                        */

/*
 * The VM stops for its state to be saved.  The wire loses whatever comes
 * or would go meanwhile, and retransmission covers it, as for any loss:
 *  - requests in flight are given back (NOT_EXECUTED): the core puts them
 *    back into the send queue, and they run again, wherever the state
 *    lands, with the same PSNs (the requester goes back to the first PSN
 *    of the oldest; the same WQEs at the same path MTU take the same
 *    PSNs).  The responder answers those it executed as duplicates: ACK
 *    again, READ again, an atomic's saved result (the replay cache
 *    moves with it);
 *  - responses not sent yet are dropped: the peer asks again;
 *  - frames that arrive are dropped, nothing is sent, no timer runs.
 * What is left is a few numbers per QP (qp_save): the next PSN, what the
 * peer acknowledged, the expected PSN and MSN, a message in progress and
 * the replay cache.
 */
static void roce_qp_pause(RoceQp *q)
{
    PvrdmaCore *c = q->t->t.core;
    g_autoptr(GArray) back = g_array_new(false, false, sizeof(uint64_t));
    RoceWqe *w = g_queue_peek_head(&q->wqes);

    if (w) {
        q->psn = q->next_psn = q->una = w->first_psn;
        trace_pvrdma_roce_req(q->qpn, "paused, resends from", w->first_psn);
    }
    for (GList *l = q->wqes.head; l; l = l->next) {
        g_array_append_val(back, ((RoceWqe *)l->data)->cookie);
    }
    roce_qp_drop_requests(q);
    q->cur_pkt = q->noack = 0;
    q->seq_retry = false;
    q->nak_sent = false;
    g_queue_clear_full(&q->resps, g_free);
    for (guint i = 0; i < back->len; i++) {
        PvrdmaWc wc = {
            .qp = q->qp->handle, .is_send = true,
            .cookie = g_array_index(back, uint64_t, i),
            .status = PVRDMA_TRANSPORT_NOT_EXECUTED,
        };

        pvrdma_complete(c, &wc);
    }
}

static bool roce_quiesce(PvrdmaTransport *pt, unsigned timeout_ms)
{
    RoceTransport *t = roce(pt);

    t->paused = true;
    for (GList *l = t->qps; l; l = l->next) {
        roce_qp_pause(l->data);
    }
    return true;
}

/*
 * The VM runs here again (a snapshot, a failed migration); the core then
 * wakes the senders that waited on the pause (pvrdma_core_resume()).
 */
static void roce_resume(PvrdmaTransport *pt)
{
    roce(pt)->paused = false;
}

/* moved: the state runs elsewhere now; this device stays off the wire. */
static void roce_moved(PvrdmaTransport *pt)
{
    roce(pt)->paused = true;
}

static void roce_qp_save(PvrdmaTransport *pt, PvrdmaQP *qp, GByteArray *b)
{
    RoceQp *q = roce_qp(roce(pt), qp), fresh;
    RoceWqe *w;

    if (!q) {
        /* not attached (cannot happen in RTR..SQD): a connection's start */
        fresh = (RoceQp) {
            .epsn = qp->attr.rq_psn & PSN_MASK,
            .nres = MAX(qp->attr.max_dest_rd_atomic, 1),
        };
        q = &fresh;
    }
    w = g_queue_peek_head(&q->wqes);

    /* requester: where it goes on (the first PSN of what runs again) */
    pvrdma_mig_put8(b, q->req_init);
    pvrdma_mig_put32(b, w ? w->first_psn : q->next_psn);
    pvrdma_mig_put32(b, q->ack_psn);
    pvrdma_mig_put32(b, q->max_psn);
    /* responder */
    pvrdma_mig_put32(b, q->epsn);
    pvrdma_mig_put32(b, q->msn);
    pvrdma_mig_put8(b, q->in_msg);
    pvrdma_mig_put64(b, q->rlen);
    pvrdma_mig_put64(b, q->wva);
    pvrdma_mig_put64(b, q->wleft);
    pvrdma_mig_put32(b, q->wrkey);
    pvrdma_mig_put8(b, q->rctx != NULL);
    if (q->rctx) {
        pvrdma_recv_ctx_save(q->rctx, b);
    }
    pvrdma_mig_put32(b, q->nres);
    pvrdma_mig_put32(b, q->res_next % q->nres);
    for (unsigned i = 0; i < q->nres; i++) {
        const RoceRes *res = q->res ? &q->res[i] : &(RoceRes) { 0 };

        pvrdma_mig_put8(b, res->valid);
        pvrdma_mig_put8(b, res->atomic);
        pvrdma_mig_put32(b, res->first_psn);
        pvrdma_mig_put32(b, res->last_psn);
        pvrdma_mig_put64(b, res->orig);
    }
}

/* What roce_qp_save() wrote before the replay cache, as loaded. */
typedef struct RoceQpLoad {
    uint32_t psn[5];            /* next, acked, max, epsn, msn */
    uint8_t req_init, in_msg, has_rctx;
    uint64_t rlen, wva, wleft;
    uint32_t wrkey;
} RoceQpLoad;

/* Read and check the requester's PSNs and the message in progress. */
static bool roce_qp_load_psns(PvrdmaMigReader *r, RoceQpLoad *l)
{
    l->req_init = pvrdma_mig_get8(r);
    for (unsigned i = 0; i < 5; i++) {
        l->psn[i] = pvrdma_mig_get32(r);  /* next, acked, max, epsn, msn */
        if (!r->err && l->psn[i] > PSN_MASK) {
            return pvrdma_mig_fail(r, "PSN 0x%x", l->psn[i]);
        }
    }
    l->in_msg = pvrdma_mig_get8(r);
    l->rlen = pvrdma_mig_get64(r);
    l->wva = pvrdma_mig_get64(r);
    l->wleft = pvrdma_mig_get64(r);
    l->wrkey = pvrdma_mig_get32(r);
    l->has_rctx = pvrdma_mig_get8(r);
    if (r->err) {
        return false;
    }
    if (l->req_init > 1 || l->in_msg > ROCE_IN_WRITE || l->has_rctx > 1 ||
        (l->has_rctx != (l->in_msg == ROCE_IN_SEND)) ||
        l->rlen > (1ull << 31) || l->wleft > (1ull << 31) ||
        (l->in_msg != ROCE_IN_WRITE && l->wleft)) {
        return pvrdma_mig_fail(r, "message in progress (%u, %u)", l->in_msg,
                               l->has_rctx);
    }
    /* what the peer acknowledged lies between where it goes on and max */
    if (l->req_init && (psn_cmp(l->psn[1], l->psn[0]) < 0 ||
                        psn_cmp(l->psn[2], l->psn[1]) < 0)) {
        return pvrdma_mig_fail(r, "requester PSNs 0x%x 0x%x 0x%x",
                               l->psn[0], l->psn[1], l->psn[2]);
    }
    return true;
}

/* Read and check q's replay cache into q->res; *res_next: its next slot. */
static bool roce_qp_load_res(RoceQp *q, PvrdmaMigReader *r,
                             uint32_t *res_next)
{
    uint32_t nres;

    nres = pvrdma_mig_get32(r);
    *res_next = pvrdma_mig_get32(r);
    if (!r->err && (nres != q->nres || *res_next >= nres)) {
        return pvrdma_mig_fail(r, "%u responder resources (%u here)", nres,
                               q->nres);
    }
    for (unsigned i = 0; i < nres && !r->err; i++) {
        RoceRes *res = &q->res[i];
        uint8_t valid = pvrdma_mig_get8(r), atomic = pvrdma_mig_get8(r);

        res->first_psn = pvrdma_mig_get32(r);
        res->last_psn = pvrdma_mig_get32(r);
        res->orig = pvrdma_mig_get64(r);
        if (!r->err && (valid > 1 || atomic > 1 ||
                        res->first_psn > PSN_MASK ||
                        res->last_psn > PSN_MASK ||
                        psn_cmp(res->last_psn, res->first_psn) < 0)) {
            return pvrdma_mig_fail(r, "responder resource %u", i);
        }
        res->valid = valid;
        res->atomic = atomic;
    }
    return !r->err;
}

static bool roce_qp_load(PvrdmaTransport *pt, PvrdmaQP *qp,
                         PvrdmaMigReader *r)
{
    RoceQp *q = roce_qp(roce(pt), qp);
    uint32_t res_next;
    RoceQpLoad l = { 0 };

    if (!q) {
        return pvrdma_mig_fail(r, "not on this transport");
    }
    if (!roce_qp_load_psns(r, &l)) {
        return false;
    }
    if (l.has_rctx) {
        PvrdmaRecvCtx *ctx = pvrdma_recv_ctx_load(pt->core, qp, r);

        if (!ctx) {
            return false;
        }
        if (q->rctx) {
            pvrdma_recv_abort(q->rctx);
        }
        q->rctx = ctx;
    }
    if (!roce_qp_load_res(q, r, &res_next)) {
        return false;
    }
    q->req_init = l.req_init;
    if (l.req_init) {
        q->psn = q->next_psn = q->una = l.psn[0];
        q->ack_psn = l.psn[1];
        q->max_psn = l.psn[2];
    }
    q->retry_left = qp->attr.retry_cnt;
    q->rnr_left = qp->attr.rnr_retry;
    q->epsn = l.psn[3];
    q->msn = l.psn[4];
    roce_set_in_msg(q, l.in_msg);
    q->rlen = l.rlen;
    q->wva = l.wva;
    q->wleft = l.wleft;
    q->wrkey = l.wrkey;
    q->res_next = res_next;
    trace_pvrdma_roce_resp(q->qpn, "moved here, expecting", q->epsn);
    return true;
}

static const PvrdmaMessageOps roce_msg = {
    .execute = roce_execute,
    .timer = roce_timer,
};

static const PvrdmaMoveOps roce_move = {
    .qp_announce = roce_announce,
    .qp_idle = roce_qp_idle,
};

static const PvrdmaMigOps roce_mig = {
    .quiesce = roce_quiesce,
    .resume = roce_resume,
    .moved = roce_moved,
    .qp_save = roce_qp_save,
    .qp_load = roce_qp_load,
};

static const PvrdmaTransportOps roce_ops = {
    .name = "roce",
    .reaches = roce_reaches,
    .qp_attach = roce_attach,
    .qp_detach = roce_detach,
    .stats = roce_stats,
    .destroy = roce_destroy,
    .msg = &roce_msg,
    .move = &roce_move,
    .mig = &roce_mig,
};

PvrdmaTransport *pvrdma_roce_new(PvrdmaCore *c)
{
    RoceTransport *t;

    if (!c->ops->frame_tx) {
        return NULL;
    }
    t = g_new0(RoceTransport, 1);
    t->t = (PvrdmaTransport) { .ops = &roce_ops, .core = c };
    return &t->t;
}

void pvrdma_roce_stats(PvrdmaTransport *pt, PvrdmaPathStats *s)
{
    *s = roce(pt)->st;
}

bool pvrdma_roce_qp_stats(PvrdmaTransport *pt, const PvrdmaQP *qp,
                          PvrdmaPathStats *s)
{
    RoceQp *q = roce_qp(roce(pt), (PvrdmaQP *)qp);

    if (!q) {
        return false;
    }
    *s = q->st;
    return true;
}
