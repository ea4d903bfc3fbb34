/*
 * pvrdma co-resident transport, the responder: peers' requests executed
 * here, straight between the two guests' memory, in order per QP; one
 * that finds no receive waits (RNR) with what follows it for that QP, and
 * one longer than the core's byte budget of a run moves in pieces, one
 * per run; each is answered RESP.  Its requests come from
 * coresident_data.c (REQ, MORE), which also drops them (CANCEL, a peer
 * gone).  See coresident.c for the transport as a whole.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "coresident_int.h"

/* A record from pool (its first member links it), or NULL. */
static void *cr_pool_get(CrPool *pool)
{
    void *o = pool->head;

    if (o) {
        pool->head = *(void **)o;
        pool->n--;
    }
    return o;
}

/* Keep o in pool; false if the pool is full (the caller frees it). */
static bool cr_pool_put(CrPool *pool, void *o)
{
    if (pool->n >= CR_POOL_MAX) {
        return false;
    }
    *(void **)o = pool->head;
    pool->head = o;
    pool->n++;
    return true;
}

/* A peer's request from the pool, its iov array kept (or a new one). */
CrInReq *cr_inreq_new(CrTransport *t)
{
    CrInReq *r = cr_pool_get(&t->inreq_pool);

    if (!r) {
        return g_new0(CrInReq, 1);
    }
    r->next_free = NULL;
    return r;
}

void cr_inreq_free(CrInReq *r)
{
    CrTransport *t = r->peer->t;
    PvrdmaIov *iov = r->req.local.iov;
    uint32_t cap = r->req.local.cap;

    if (r->seg_off) {
        /* dropped half-way: the receive a SEND took goes */
        pvrdma_transport_seg_drop(t->t.core, r->req.dest_qpn,
                                  r->req.src_qpn);
    }
    r->peer->nreqs--;
    if (cap > PVRDMA_HARD_MAX_SGE * 4) {
        g_free(iov);        /* a huge request: not kept */
        iov = NULL;
        cap = 0;
    }
    memset(r, 0, sizeof(*r));
    r->req.local.iov = iov;
    r->req.local.cap = cap;
    if (!cr_pool_put(&t->inreq_pool, r)) {
        g_free(iov);
        g_free(r);
    }
}

void cr_inreq_pool_fini(CrTransport *t)
{
    CrInReq *r;

    while ((r = cr_pool_get(&t->inreq_pool))) {
        g_free(r->req.local.iov);
        g_free(r);
    }
}

void cr_respond(CrInReq *r, int status)
{
    CrRespMsg m = {
        .h = { CR_RESP, sizeof(m) },
        .cookie = r->req.cookie,
        .status = status,
    };

    trace_pvrdma_cr_resp(r->req.dest_qpn, r->req.cookie, status);
    if (r->peer) {
        cr_send(r->peer, &m, sizeof(m), -1);
    }
}

/*
 * Drop the requests of peer p (of its QP src_qpn, or CR_ANY_QP) waiting in
 * q, answering each with status unless CR_NO_ANSWER.
 */
static void cr_queue_drop(CrWaitList *q, CrPeer *p, uint32_t src_qpn,
                          int status)
{
    CrInReq **link = &q->head, *prev = NULL, *r;

    while ((r = *link)) {
        if (r->peer != p ||
            (src_qpn != CR_ANY_QP && r->req.src_qpn != src_qpn)) {
            prev = r;
            link = &r->wnext;
            continue;
        }
        *link = r->wnext;       /* off the list, then answered and freed */
        if (q->tail == r) {
            q->tail = prev;
        }
        q->length--;
        if (status != CR_NO_ANSWER) {
            cr_respond(r, status);
        }
        cr_inreq_free(r);
    }
}

/* The same for every QP of ours. */
void cr_waiting_drop(CrTransport *t, CrPeer *p, uint32_t src_qpn,
                     int status)
{
    CrQpIter it;
    CrQp *q;

    cr_qp_iter_init(t, &it);
    while ((q = cr_qp_next(&it))) {
        cr_queue_drop(&q->waiting, p, src_qpn, status);
    }
}

static int64_t cr_rnr_deadline(CrTransport *t, CrInReq *r)
{
    PvrdmaCore *c = t->t.core;

    return pvrdma_rnr_deadline(c, r->req.rnr_retry,
                               pvrdma_qp_by_qpn(c, r->req.dest_qpn));
}

/* Moved in pieces, one per run of the loop (PvrdmaCore.run_bytes) */
static bool cr_in_pieces(PvrdmaCore *c, const CrInReq *r)
{
    return pvrdma_wr_in_pieces(r->req.opcode) &&
           r->req.qp_type == PVRDMA_QPT_RC &&
           (r->seg_off || r->req.local.len > c->run_bytes);
}

/*
 * The responder on r's next piece: at most run_bytes of it (the rest, at
 * the save); PVRDMA_TRANSPORT_PAUSED if more pieces follow.
 */
static int cr_serve_piece(CrTransport *t, CrInReq *r)
{
    PvrdmaCore *c = t->t.core;
    uint64_t left = r->req.local.len - r->seg_off;
    uint64_t n = c->seg_whole ? left : MIN(left, c->run_bytes);
    PvrdmaReq piece = r->req;
    int st;

    pvrdma_sg_view(&r->req.local, r->seg_off, n, &piece.local);
    piece.seg_off = r->seg_off;
    piece.msg_len = r->req.local.len;
    st = pvrdma_responder(c, &piece);
    g_free(piece.local.iov);
    if (st == PVRDMA_WC_SUCCESS && n < left) {
        r->seg_off += n;
        c->seg_pieces++;
        trace_pvrdma_segment(r->req.dest_qpn, piece.seg_off, n,
                             piece.msg_len);
        pvrdma_transport_wake_senders(c);   /* the next piece next run */
        return PVRDMA_TRANSPORT_PAUSED;
    }
    if (st != PVRDMA_TRANSPORT_RNR) {
        r->seg_off = 0;         /* done, or failed (the responder's doing) */
    }
    return st;
}

/*
 * Serve r, the first request in line for its QP: false while it still
 * finds no receive (nothing done) or has pieces to move, true when it is
 * answered (*st).
 */
static bool cr_serve_one(CrTransport *t, CrInReq *r, int *st)
{
    PvrdmaCore *c = t->t.core;

    *st = cr_in_pieces(c, r) ? cr_serve_piece(t, r) :
                               pvrdma_responder(c, &r->req);
    if (*st == PVRDMA_TRANSPORT_PAUSED) {
        return false;           /* its next piece in the next run */
    }
    if (*st == PVRDMA_TRANSPORT_RNR) {
        if (r->deadline < 0) {
            r->deadline = cr_rnr_deadline(t, r);
        }
        if (!r->deadline || c->ops->now_ms(c->opaque) < r->deadline) {
            trace_pvrdma_rnr_wait(r->req.dest_qpn);
            if (r->deadline > 0) {
                pvrdma_core_timer_at(c, r->deadline);
            }
            return false;
        }
        *st = PVRDMA_WC_RNR_RETRY_EXC_ERR;
    }
    if (*st == PVRDMA_WC_SUCCESS && r->req.qp_type == PVRDMA_QPT_RC) {
        PvrdmaQP *qp = pvrdma_qp_by_qpn(c, r->req.dest_qpn);

        if (qp) {
            pvrdma_qp_count_psns(qp, false,
                                 pvrdma_qp_npsn(qp, r->req.opcode,
                                                r->req.local.len));
        }
    }
    cr_respond(r, *st);
    return true;
}

/*
 * Serve the requests waiting on QP q, in order; stop at the first that
 * still finds no receive.
 */
static void cr_serve_waiting(CrTransport *t, CrQp *q)
{
    CrInReq *r;
    int st;

    while ((r = q->waiting.head)) {
        if (!cr_serve_one(t, r, &st)) {
            return;
        }
        cr_wait_pop(&q->waiting);
        if (st == PVRDMA_WC_RNR_RETRY_EXC_ERR) {
            /* the requester QP is in error now: what it sent next fails */
            cr_queue_drop(&q->waiting, r->peer, r->req.src_qpn,
                          PVRDMA_WC_RETRY_EXC_ERR);
        }
        cr_inreq_free(r);
    }
}

void cr_execute_in(CrTransport *t, CrInReq *r)
{
    CrQp *q = cr_qp_find(t, r->req.dest_qpn);
    int st;

    trace_pvrdma_cr_req(r->req.dest_qpn, r->req.opcode, r->req.cookie,
                        r->req.local.len);
    if (t->quiesced) {
        /* our VM's state is being saved: nothing may change it now */
        cr_respond(r, PVRDMA_TRANSPORT_NOT_EXECUTED);
        cr_inreq_free(r);
        return;
    }
    if (!q || !q->waiting.head) {
        /* nothing waits for this QP: served now, queued only if it waits */
        if (cr_serve_one(t, r, &st)) {
            cr_inreq_free(r);
            return;
        }
        q = cr_qp_get(t, r->req.dest_qpn);
        cr_wait_push(&q->waiting, r);
        return;
    }
    if (r->peer->nreqs > CR_MAX_WAITING) {
        /* a guest flooding a QP that never receives: no unbounded queue */
        cr_respond(r, PVRDMA_WC_RNR_RETRY_EXC_ERR);
        cr_inreq_free(r);
        return;
    }
    cr_wait_push(&q->waiting, r);   /* behind one waiting for a receive */
}

void cr_finish_pieces(CrTransport *t)
{
    PvrdmaCore *c = t->t.core;
    CrQpIter it;
    CrQp *q;

    c->seg_whole = true;
    cr_qp_iter_init(t, &it);
    while ((q = cr_qp_next(&it))) {
        if (q->waiting.head && q->waiting.head->seg_off) {
            cr_serve_waiting(t, q);
        }
    }
    c->seg_whole = false;
}

void cr_wake(PvrdmaTransport *pt)
{
    CrTransport *t = cr(pt);
    CrQpIter it;
    CrQp *q;

    cr_qp_iter_init(t, &it);
    while ((q = cr_qp_next(&it))) {
        cr_serve_waiting(t, q);
    }
    cr_done(t);
}
