/*
 * pvrdma co-resident transport, the data path.  Our requests go to the
 * peer that owns their destination GID as REQ (and MORE) messages naming
 * our RAM, and are in flight (CrFlight) until it answers RESP.  A peer's
 * requests are taken in here and executed by the responder
 * (coresident_resp.c); CANCEL drops what a gone QP still has waiting.
 * OFFER and ANSWER move a QP from RoCEv2 to here, and a peer's PAUSE,
 * PAUSED, RESUME and MOVED are handled here too.  See
 * coresident.c for the transport as a whole, coresident_int.h for what
 * its files share.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "coresident_int.h"

/*
 * PSNs.  Nothing here needs them, but an RC QP may have to carry on over
 * RoCEv2 if its peer moves to another host (PvrdmaMoveOps.moving):
 * both ends count what the wire would have counted, the requester when a
 * request succeeds, the responder when it executes one, in the QP's
 * attributes (what QUERY_QP reports, and what migrates), through
 * pvrdma_qp_count_psns().  Both use their own path MTU, which a working
 * wire connection has the same at both ends.
 */

/*
 * The request of flight f finished with status (pvrdma_complete).  The
 * completion names the guest's QP handle, which is not the QP number with
 * a host HCA as object owner; a QP that is gone completes nothing.
 */
static void cr_flight_done(PvrdmaCore *c, CrFlight f, uint32_t status)
{
    PvrdmaQP *qp = pvrdma_qp_by_qpn(c, f.qpn);
    PvrdmaWc wc = {
        .is_send = true, .cookie = f.cookie, .status = status,
    };

    if (qp) {
        if (status == PVRDMA_WC_SUCCESS && f.rc) {
            pvrdma_qp_count_psns(qp, true, f.npsn);
        }
        wc.qp = qp->handle;
        pvrdma_complete(c, &wc);
    }
}

void cr_data_fini(CrTransport *t)
{
    cr_inreq_pool_fini(t);
    g_free(t->txmsg);
    g_free(t->sgs);
}


/*
 * Dead peer p is freed (CrUpcalls.peer_gone, from cr_peer_free()): fail
 * what it owes us, drop what it asked of us.
 */
void cr_data_peer_gone(CrPeer *p)
{
    CrTransport *t = p->t;
    PvrdmaCore *c = t->t.core;
    GArray *done = g_array_new(false, false, sizeof(CrFlight));
    uint32_t i = 0;
    CrFlight *f;

    /* requests of this peer waiting for a receive here */
    cr_waiting_drop(t, p, CR_ANY_QP, CR_NO_ANSWER);
    if (p->partial) {
        cr_inreq_free(p->partial);
    }
    /* our requests it will never answer (copies: completing reuses slots) */
    while ((f = cr_flight_next(t, &i))) {
        if (f->peer == p) {
            cr_flight_written(t, f);
            g_array_append_val(done, *f);
            cr_flight_remove(t, f);
        }
    }
    for (i = 0; i < done->len; i++) {
        CrFlight d = g_array_index(done, CrFlight, i);

        /* RC: nobody answers any more; UD: the datagram is lost */
        cr_flight_done(c, d, d.rc ? PVRDMA_TRANSPORT_NO_RESPONDER :
                                    PVRDMA_WC_SUCCESS);
    }
    g_array_free(done, true);
}


/*
 * QP q is gone: tell every peer that holds requests of it to drop them,
 * once each.  The flights stay until the peer answers them.
 */
static void cr_cancel_qp(CrQp *q)
{
    GPtrArray *told = g_ptr_array_new();
    CrCancelMsg m = {
        .h = { CR_CANCEL, sizeof(m) },
        .src_qpn = q->qpn,
    };

    for (CrFlight *f = q->first; f; f = f->qnext) {
        if (!f->cancelled && !g_ptr_array_find(told, f->peer, NULL)) {
            g_ptr_array_add(told, f->peer);
            cr_send(f->peer, &m, sizeof(m), -1);
        }
        f->cancelled = true;
    }
    g_ptr_array_free(told, true);
}

/* The same for our QP qpn, or every QP (CR_ANY_QP). */
void cr_cancel_flights(CrTransport *t, uint32_t qpn)
{
    CrQpIter it;
    CrQp *q;

    if (qpn != CR_ANY_QP) {
        q = cr_qp_find(t, qpn);
        if (q) {
            cr_cancel_qp(q);
        }
        return;
    }
    cr_qp_iter_init(t, &it);
    while ((q = cr_qp_next(&it))) {
        cr_cancel_qp(q);
    }
}

void cr_qp_gone(PvrdmaTransport *pt, uint32_t qpn)
{
    CrTransport *t = cr(pt);
    CrQp *q = cr_qp_find(t, qpn);
    CrInReq *r;

    if (q) {
        cr_cancel_qp(q);
        while ((r = cr_wait_pop(&q->waiting))) {
            cr_respond(r, PVRDMA_TRANSPORT_NO_RESPONDER);
            cr_inreq_free(r);
        }
        q->gone = true;
        cr_qp_put(t, q);
    }
    cr_flush(t);    /* no reaping: this may run inside the core's run loop */
}

/* Append a peer's sg entries to r->req.local (checked against its RAM). */
static bool cr_add_sg(CrPeer *p, CrInReq *r, const CrSge *sg, uint32_t n)
{
    PvrdmaSg *l = &r->req.local;

    if (n > r->nsg_total - l->n) {
        return false;
    }
    for (uint32_t i = 0; i < n; i++) {
        const CrSge *s = &sg[i];

        if (s->region >= p->nregions || !s->len ||
            s->off > p->region[s->region].size ||
            s->len > p->region[s->region].size - s->off ||
            s->len > r->len - l->len) {
            return false;
        }
        l->iov[l->n++] = (PvrdmaIov) {
            .host = p->region[s->region].host + s->off,
            .len = s->len,
            .is_write = true,
        };
        l->len += s->len;
    }
    return true;
}

static bool cr_rx_req(CrPeer *p, const CrReqMsg *m, size_t len)
{
    CrInReq *r;

    if (len < sizeof(*m) || m->nsg > CR_REQ_SG_MAX ||
        len != sizeof(*m) + m->nsg * sizeof(CrSge) ||
        m->nsg > m->nsg_total || m->nsg_total > CR_MAX_REQ_SG ||
        m->len > (1ull << 31) || p->partial || !cr_peer_ready(p)) {
        return false;
    }
    r = cr_inreq_new(p->t);
    r->peer = p;
    p->nreqs++;
    r->deadline = -1;
    r->nsg_total = m->nsg_total;
    r->len = m->len;
    r->req = (PvrdmaReq) {
        .cookie = m->cookie,
        .opcode = m->opcode,
        .send_flags = m->send_flags,
        .src_qpn = m->src_qpn & 0xffffff,
        .qp_type = m->qp_type,
        .rnr_retry = m->rnr_retry,
        .remote_addr = m->remote_addr,
        .rkey = m->rkey,
        .imm = m->imm,
        .compare_add = m->compare_add,
        .swap = m->swap,
        .dest_qpn = m->dest_qpn & 0xffffff,
        .qkey = m->qkey,
        .sgid_type = m->sgid_type,
        .local = { .iov = r->req.local.iov, .cap = r->req.local.cap },
    };
    memcpy(r->req.sgid, m->sgid, 16);
    memcpy(r->req.dgid, m->dgid, 16);
    memcpy(r->req.smac, m->smac, 6);
    if (r->req.local.cap < MAX(1, m->nsg_total)) {
        g_free(r->req.local.iov);
        r->req.local.iov = g_new(PvrdmaIov, MAX(1, m->nsg_total));
        r->req.local.cap = MAX(1, m->nsg_total);
    }
    if (!cr_add_sg(p, r, m->sg, m->nsg)) {
        cr_inreq_free(r);
        return false;
    }
    if (r->req.local.n < r->nsg_total) {
        p->partial = r;
        return true;
    }
    if (r->req.local.len != r->len) {
        cr_inreq_free(r);
        return false;
    }
    cr_execute_in(p->t, r);
    return true;
}

static bool cr_rx_more(CrPeer *p, const CrMoreMsg *m, size_t len)
{
    CrInReq *r = p->partial;

    if (!r || len < sizeof(*m) || m->nsg > CR_MORE_SG_MAX ||
        len != sizeof(*m) + m->nsg * sizeof(CrSge) ||
        m->cookie != r->req.cookie || !cr_add_sg(p, r, m->sg, m->nsg)) {
        return false;
    }
    if (r->req.local.n < r->nsg_total) {
        return true;
    }
    p->partial = NULL;
    if (r->req.local.len != r->len) {
        cr_inreq_free(r);
        return false;
    }
    cr_execute_in(p->t, r);
    return true;
}

/* ------------------------------------------------------------------ */
/* Receiving                                                           */

static bool cr_rx_resp(CrPeer *p, const CrRespMsg *m, size_t len)
{
    CrTransport *t = p->t;
    CrFlight *f;

    if (len != sizeof(*m)) {
        return false;
    }
    f = cr_flight_find(t, m->cookie);
    if (!f || f->peer != p) {
        return false;   /* never asked this peer */
    }
    if ((m->status < 0 || m->status > PVRDMA_WC_GENERAL_ERR) &&
        m->status != PVRDMA_TRANSPORT_NO_RESPONDER &&
        (m->status != PVRDMA_TRANSPORT_NOT_EXECUTED ||
         !(p->paused || t->paused))) {
        return false;   /* given back only across a pause */
    }
    cr_flight_written(t, f);
    cr_flight_remove(t, f);
    p->inflight--;
    cr_flight_done(t->t.core, *f, m->status);  /* a copy: f may be reused */
    return true;
}

/* The peer's QP src_qpn is gone: drop its requests waiting here. */
static bool cr_rx_cancel(CrPeer *p, const CrCancelMsg *m, size_t len)
{
    if (len != sizeof(*m)) {
        return false;
    }
    cr_waiting_drop(p->t, p, m->src_qpn & 0xffffff, PVRDMA_WC_WR_FLUSH_ERR);
    return true;
}

/*
 * OFFER: the peer's RC QP on RoCEv2 to our QP dest_qpn is idle and would
 * carry on here (pvrdma_transport_offered()).  Offers that cross are each
 * answered: the first one taken moves both QPs (the other then finds ours
 * here already, and its answer is moot); a refusal ends our own offer too.
 */
static bool cr_rx_offer(CrPeer *p, const CrOfferMsg *m, size_t len)
{
    CrTransport *t = p->t;
    PvrdmaCore *c = t->t.core;
    CrAnswerMsg a = {
        .h = { CR_ANSWER, sizeof(a) },
        .src_qpn = m->src_qpn, .dest_qpn = m->dest_qpn,
    };
    PvrdmaQP *qp;
    bool crossed;

    if (len != sizeof(*m)) {
        return false;
    }
    qp = pvrdma_qp_by_qpn(c, m->dest_qpn & 0xffffff);
    crossed = qp && qp->offer_to == &t->t;
    a.ok = qp && qp->type == PVRDMA_QPT_RC &&
           qp->attr.dest_qp_num == m->src_qpn && !t->paused && !p->paused &&
           cr_peer_for_gid(t, qp->attr.ah_attr.grh.dgid.raw) == p &&
           pvrdma_transport_offered(c, qp, &t->t, m->sq_psn, m->rq_psn);
    trace_pvrdma_cr_offer(m->dest_qpn, m->src_qpn, a.ok);
    cr_send(p, &a, sizeof(a), -1);
    if (crossed && !a.ok) {
        pvrdma_transport_answered(c, qp, &t->t, false);
    }
    return true;
}

/* ANSWER to our OFFER for QP src_qpn */
static bool cr_rx_answer(CrPeer *p, const CrAnswerMsg *m, size_t len)
{
    CrTransport *t = p->t;
    PvrdmaQP *qp;

    if (len != sizeof(*m) || m->ok > 1) {
        return false;
    }
    qp = pvrdma_qp_by_qpn(t->t.core, m->src_qpn & 0xffffff);
    if (qp && qp->attr.dest_qp_num == m->dest_qpn &&
        cr_peer_for_gid(t, qp->attr.ah_attr.grh.dgid.raw) == p) {
        pvrdma_transport_answered(t->t.core, qp, &t->t, m->ok);
    }
    return true;
}

/* p moved: its GIDs wait for the QEMU that took its place, then it goes. */
static void cr_peer_moved(CrTransport *t, CrPeer *p)
{
    PvrdmaCore *c = t->t.core;
    int64_t until = c->ops->now_ms(c->opaque) + CR_MOVE_GRACE_MS;

    for (uint32_t i = 0; i < p->ngids; i++) {
        CrMovedGid m = { .until = until };

        memcpy(m.gid, p->gids[i].gid, 16);
        g_array_append_val(t->moved_gids, m);
    }
    if (p->ngids) {
        pvrdma_core_timer_at(c, until);     /* then its senders give up */
    }
    cr_peer_fail(p, NULL);
    /* a QP whose peer was already heard elsewhere goes there now */
    pvrdma_transport_wake_senders(c);
}

/* PAUSE, PAUSED, RESUME, MOVED (pvrdma_coresident_wire.h) */
static bool cr_rx_ctl(CrPeer *p, const CrHdr *h, size_t len)
{
    CrTransport *t = p->t;
    CrPeer *rival;

    if (len != sizeof(*h)) {
        return false;
    }
    switch (h->type) {
    case CR_PAUSE:
        if (p->paused || p->partial) {
            return false;
        }
        p->paused = true;
        trace_pvrdma_cr_pause(p->node, "paused");
        /* its requests waiting here for a receive: it runs them again */
        cr_waiting_drop(t, p, CR_ANY_QP, PVRDMA_TRANSPORT_NOT_EXECUTED);
        cr_send_ctl(p, CR_PAUSED);
        return true;
    case CR_PAUSED:
        if (!p->pause_sent || p->acked) {
            return false;
        }
        p->acked = true;
        return true;
    case CR_RESUME:
        if (!p->paused) {
            return false;
        }
        p->paused = false;
        trace_pvrdma_cr_pause(p->node, "resumed");
        rival = cr_gid_rival(t, p);
        if (rival) {
            /*
             * Its migration failed after the destination loaded its
             * state, or was cancelled after the destination started:
             * QEMU runs the VM here again either way.  The first owner
             * keeps its GIDs (the destination gets them once the source
             * is gone); it is management's to stop one of the two.
             */
            warn_report("pvrdma: co-resident peer %s runs again while peer %s "
                        "announces its GIDs: two QEMUs may run one VM "
                        "(a migration that failed or was cancelled "
                        "at its end?); %s keeps them", p->name,
                        rival->name, p->name);
        }
        pvrdma_transport_wake_senders(t->t.core);
        return true;
    case CR_MOVED:
        if (!p->paused) {
            return false;   /* a peer moves only from a pause */
        }
        trace_pvrdma_cr_pause(p->node, "moved");
        cr_peer_moved(t, p);
        return true;
    default:
        return false;
    }
}

/*
 * A message of accepted peer p past the handshake (CrUpcalls.rx, from
 * cr_rx()): false if it is malformed.
 */
bool cr_data_rx(CrPeer *p, const uint8_t *buf, size_t len)
{
    const CrHdr *h = (const CrHdr *)buf;

    switch (h->type) {
    case CR_REQ:
        return cr_rx_req(p, (const CrReqMsg *)buf, len);
    case CR_MORE:
        return cr_rx_more(p, (const CrMoreMsg *)buf, len);
    case CR_RESP:
        return cr_rx_resp(p, (const CrRespMsg *)buf, len);
    case CR_CANCEL:
        return cr_rx_cancel(p, (const CrCancelMsg *)buf, len);
    case CR_OFFER:
        return cr_rx_offer(p, (const CrOfferMsg *)buf, len);
    case CR_ANSWER:
        return cr_rx_answer(p, (const CrAnswerMsg *)buf, len);
    case CR_PAUSE:
    case CR_PAUSED:
    case CR_RESUME:
    case CR_MOVED:
        return cr_rx_ctl(p, h, len);
    default:
        return false;
    }
}

/* ------------------------------------------------------------------ */
/* Requester                                                           */

/* The way back (PvrdmaMoveOps.qp_offer): OFFER to qp's peer. */
int cr_qp_offer(PvrdmaTransport *pt, PvrdmaQP *qp, uint32_t sq_psn,
                uint32_t rq_psn)
{
    CrTransport *t = cr(pt);
    CrPeer *p = cr_peer_for_gid(t, qp->attr.ah_attr.grh.dgid.raw);
    CrOfferMsg m = {
        .h = { CR_OFFER, sizeof(m) },
        .src_qpn = qp->qpn, .dest_qpn = qp->attr.dest_qp_num,
        .sq_psn = sq_psn, .rq_psn = rq_psn,
    };

    if (!p || p->paused || t->paused || t->moved) {
        return -EAGAIN;
    }
    if (!(p->features & CR_F_OFFER)) {
        return -EOPNOTSUPP;     /* its build cannot take the QP */
    }
    cr_send(p, &m, sizeof(m), -1);
    return p->dead ? -EPIPE : 0;
}

/* Our RAM as (region, offset); false if not in a shared region. */
static bool cr_local_sge(CrTransport *t, const PvrdmaIov *v, CrSge *s)
{
    for (unsigned i = 0; i < t->nregions; i++) {
        const PvrdmaShmRegion *r = &t->regions[i];
        uintptr_t base = (uintptr_t)r->host, h = (uintptr_t)v->host;

        if (h >= base && h - base <= r->size &&
            v->len <= r->size - (h - base)) {
            *s = (CrSge) { .region = i, .off = h - base, .len = v->len };
            return true;
        }
    }
    return false;
}

/*
 * How req ends if it does not go to p (the owner of its destination GID,
 * or NULL) now; PVRDMA_TRANSPORT_PENDING if it goes.
 */
static int cr_execute_check(CrTransport *t, CrPeer *p, const PvrdmaReq *req)
{
    bool rc = req->qp_type == PVRDMA_QPT_RC;

    if (t->moved) {
        return rc ? PVRDMA_TRANSPORT_NO_RESPONDER : PVRDMA_WC_SUCCESS;
    }
    if (t->paused || (p && p->paused) || (!p && cr_gid_moved(t, req->dgid))) {
        /* RC waits for the pause to end; a datagram is lost */
        return rc ? PVRDMA_TRANSPORT_PAUSED : PVRDMA_WC_SUCCESS;
    }
    if (!p) {
        return rc ? PVRDMA_TRANSPORT_NO_RESPONDER : PVRDMA_WC_SUCCESS;
    }
    if (p->inflight >= CR_MAX_INFLIGHT) {
        cr_peer_fail(p, "does not answer");     /* freed by the next event */
        return rc ? PVRDMA_TRANSPORT_NO_RESPONDER : PVRDMA_WC_SUCCESS;
    }
    return PVRDMA_TRANSPORT_PENDING;
}

/*
 * req's buffer as (region, offset, length) of our RAM, without its empty
 * entries: *pnsg of them, in t->sgs until the next request; NULL if not
 * all in shared RAM.
 */
static CrSge *cr_execute_sg(CrTransport *t, const PvrdmaReq *req,
                            uint32_t *pnsg)
{
    CrSge *sg;
    uint32_t nsg = 0;

    if (t->sgs_cap < MAX(1, req->local.n)) {
        t->sgs_cap = MAX(MAX(1, req->local.n), 2 * t->sgs_cap);
        t->sgs = g_renew(CrSge, t->sgs, t->sgs_cap);
    }
    sg = t->sgs;

    for (uint32_t i = 0; i < req->local.n; i++) {
        if (!req->local.iov[i].len) {
            continue;
        }
        if (!cr_local_sge(t, &req->local.iov[i], &sg[nsg])) {
            PVRDMA_GUEST_ERR(t->t.core, "QP %u: buffer outside shared guest "
                             "RAM", req->src_qpn);
            return NULL;
        }
        nsg++;
    }
    *pnsg = nsg;
    return sg;
}

/* Flight f of a READ or an atomic: the buffers the peer will write */
static void cr_flight_keep_written(CrFlight *f, const PvrdmaSg *local)
{
    if (f->written_cap < local->n) {
        f->written_cap = MAX(local->n, 2 * f->written_cap);
        f->written = g_renew(PvrdmaIov, f->written, f->written_cap);
    }
    memcpy(f->written, local->iov, local->n * sizeof(PvrdmaIov));
    f->nwritten = local->n;
}

/*
 * REQ of req to p as wire cookie wire, with sg[nsg]; MORE messages for
 * what does not fit.
 */
static void cr_execute_send(CrPeer *p, const PvrdmaReq *req, uint64_t wire,
                            const CrSge *sg, uint32_t nsg)
{
    uint32_t first, sent;
    CrReqMsg *m;

    first = MIN(nsg, CR_REQ_SG_MAX);
    m = (CrReqMsg *)p->t->txmsg;
    *m = (CrReqMsg) {
        .h = { CR_REQ, sizeof(*m) + first * sizeof(CrSge) },
        .cookie = wire,
        .opcode = req->opcode,
        .send_flags = req->send_flags,
        .src_qpn = req->src_qpn,
        .dest_qpn = req->dest_qpn,
        .qkey = req->qkey,
        .rkey = req->rkey,
        .imm = req->imm,
        .qp_type = req->qp_type,
        .rnr_retry = req->rnr_retry,
        .sgid_type = req->sgid_type,
        .remote_addr = req->remote_addr,
        .compare_add = req->compare_add,
        .swap = req->swap,
        .len = req->local.len,
        .nsg_total = nsg,
        .nsg = first,
    };
    memcpy(m->sgid, req->sgid, 16);
    memcpy(m->dgid, req->dgid, 16);
    memcpy(m->smac, req->smac, 6);
    memcpy(m->sg, sg, first * sizeof(CrSge));
    cr_send(p, m, m->h.len, -1);
    for (sent = first; sent < nsg;) {
        uint32_t k = MIN(nsg - sent, CR_MORE_SG_MAX);
        CrMoreMsg *mm = (CrMoreMsg *)p->t->txmsg;

        *mm = (CrMoreMsg) {
            .h = { CR_MORE, sizeof(*mm) + k * sizeof(CrSge) },
            .cookie = wire,
            .nsg = k,
        };
        memcpy(mm->sg, sg + sent, k * sizeof(CrSge));
        cr_send(p, mm, mm->h.len, -1);
        sent += k;
    }
}

int cr_execute(PvrdmaTransport *pt, PvrdmaReq *req)
{
    CrTransport *t = cr(pt);
    CrPeer *p = cr_peer_for_gid(t, req->dgid);
    bool rc = req->qp_type == PVRDMA_QPT_RC;
    int st = cr_execute_check(t, p, req);
    uint32_t nsg;
    CrFlight *f;
    PvrdmaQP *qp;
    CrSge *sg;

    if (st != PVRDMA_TRANSPORT_PENDING) {
        return st;
    }
    sg = cr_execute_sg(t, req, &nsg);
    if (!sg) {
        return PVRDMA_WC_LOC_PROT_ERR;
    }
    qp = rc ? pvrdma_qp_by_qpn(t->t.core, req->src_qpn) : NULL;
    f = cr_flight_add(t, cr_qp_get(t, req->src_qpn));
    f->cookie = req->cookie;
    f->peer = p;
    f->qpn = req->src_qpn;
    f->rc = rc;
    f->npsn = qp ? pvrdma_qp_npsn(qp, req->opcode, req->local.len) : 0;
    if (req->opcode == PVRDMA_WR_RDMA_READ ||
        pvrdma_wr_is_atomic(req->opcode)) {
        cr_flight_keep_written(f, &req->local);
    }
    cr_execute_send(p, req, f->wire, sg, nsg);
    if (p->dead) {
        /*
         * The send failed.  No reaping here: the core is in the middle of
         * this QP's send queue; the peer is freed at its next event.
         */
        cr_flight_remove(t, f);
        return rc ? PVRDMA_TRANSPORT_NO_RESPONDER : PVRDMA_WC_SUCCESS;
    }
    p->inflight++;
    trace_pvrdma_cr_send(req->src_qpn, req->opcode, req->cookie,
                         req->local.len);
    return PVRDMA_TRANSPORT_PENDING;
}
