/*
 * pvrdma co-resident transport, per QP: what the transport keeps of one QP
 * number of ours (CrQp), both ways, and the flight table that finds our
 * requests at peers by the cookie on the wire.  A leaf.
 *
 * A CrQp holds, as requester, the QP's requests in flight at peers (its
 * flights, a list), and as responder, the peers' requests for it that
 * wait for a receive (RNR), in order.  It is found by QP number
 * (t->qps), not through the QP: a flight outlives its QP until the peer
 * answers it (the QP's destruction only cancels it), and a peer may
 * reach a QP that another transport still carries, just before the QP
 * moves here.  It lives from the QP's first request either way until the
 * QP is gone (cr_qp_gone()) and nothing of it is left; a QP number used
 * again takes it up again.  So a QP's requests cost no allocation after
 * its first.
 *
 * The flight table: slots rather than a hash table.  The wire cookie is
 * the slot's index (low half) and a sequence number (high half, so that
 * a late or forged answer for a slot used again finds nothing), a lookup
 * is an index and a compare, and a slot, with its record, is kept for the
 * next request when its flight ends.  Nothing is allocated per request
 * once the table has grown to the most requests ever in flight (a hash
 * table allocated as its count swung, about once per operation with one
 * request in flight).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "coresident_int.h"

/* ------------------------------------------------------------------ */
/* Per QP                                                              */

static void cr_qp_free(gpointer p)
{
    CrQp *q = p;

    /*
     * Idle, or the transport goes: the peers went first, and their
     * requests waiting here with them (cr_data_peer_gone()).
     */
    g_free(q);
}

void cr_qps_init(CrTransport *t)
{
    t->qps = g_hash_table_new_full(NULL, NULL, NULL, cr_qp_free);
}

/* The record of our QP qpn, or NULL. */
CrQp *cr_qp_find(CrTransport *t, uint32_t qpn)
{
    return g_hash_table_lookup(t->qps, GUINT_TO_POINTER(qpn));
}

/* The record of our QP qpn, made if there is none; in use again. */
CrQp *cr_qp_get(CrTransport *t, uint32_t qpn)
{
    CrQp *q = cr_qp_find(t, qpn);

    if (!q) {
        q = g_new0(CrQp, 1);
        q->qpn = qpn;
        g_hash_table_insert(t->qps, GUINT_TO_POINTER(qpn), q);
    }
    q->gone = false;
    return q;
}

/*
 * q may have emptied: free it if its QP is gone.  Not while iterating
 * t->qps (cr_qp_next() does it there).
 */
void cr_qp_put(CrTransport *t, CrQp *q)
{
    if (q->gone && cr_qp_idle(q)) {
        g_hash_table_remove(t->qps, GUINT_TO_POINTER(q->qpn));
    }
}

/*
 * Every record in turn: cr_qp_iter_init(t, &it), then cr_qp_next(&it)
 * until NULL.  The record returned last is freed by the next call if it
 * is gone and idle by then.
 */
void cr_qp_iter_init(CrTransport *t, CrQpIter *it)
{
    g_hash_table_iter_init(&it->it, t->qps);
    it->last = NULL;
}

CrQp *cr_qp_next(CrQpIter *it)
{
    gpointer key, val;

    if (it->last && it->last->gone && cr_qp_idle(it->last)) {
        g_hash_table_iter_remove(&it->it);
    }
    it->last = g_hash_table_iter_next(&it->it, &key, &val) ? val : NULL;
    return it->last;
}

void cr_qps_fini(CrTransport *t)
{
    g_hash_table_destroy(t->qps);
}

/* ------------------------------------------------------------------ */
/* Flights                                                             */

/*
 * A new flight of q (its fields but wire and q are the caller's),
 * at the end of q's list.
 */
CrFlight *cr_flight_add(CrTransport *t, CrQp *q)
{
    CrFlight *f;
    uint32_t i;

    if (!t->nflight_free) {
        uint32_t cap = MAX(64, t->flight_cap * 2);

        t->flights = g_renew(CrFlight *, t->flights, cap);
        t->flight_free = g_renew(uint32_t, t->flight_free, cap);
        for (i = cap; i-- > t->flight_cap;) {
            t->flights[i] = g_new0(CrFlight, 1);
            t->flight_free[t->nflight_free++] = i;
        }
        t->flight_cap = cap;
    }
    i = t->flight_free[--t->nflight_free];
    f = t->flights[i];
    t->flight_seq++;
    *f = (CrFlight) {
        .wire = (uint64_t)t->flight_seq << 32 | i,
        .q = q,
        .qprev = q->last,
        .written = f->written,
        .written_cap = f->written_cap,
    };
    if (q->last) {
        q->last->qnext = f;
    } else {
        q->first = f;
    }
    q->last = f;
    q->nflights++;
    t->nflights++;
    return f;
}

/* The flight with wire cookie wire, or NULL. */
CrFlight *cr_flight_find(CrTransport *t, uint64_t wire)
{
    uint32_t i = wire;      /* the low half */
    CrFlight *f = i < t->flight_cap ? t->flights[i] : NULL;

    return f && f->q && f->wire == wire ? f : NULL;
}

/*
 * f ended: its slot is free for the next request, and its QP's record is
 * freed if nothing is left of it (no cr_qp_next() iteration may be under
 * way).  The flight record is reused then: what the caller still needs of
 * it, it copies first.
 */
void cr_flight_remove(CrTransport *t, CrFlight *f)
{
    CrQp *q = f->q;

    if (f->qprev) {
        f->qprev->qnext = f->qnext;
    } else {
        q->first = f->qnext;
    }
    if (f->qnext) {
        f->qnext->qprev = f->qprev;
    } else {
        q->last = f->qprev;
    }
    q->nflights--;
    f->q = NULL;
    f->qprev = f->qnext = NULL;
    t->flight_free[t->nflight_free++] = (uint32_t)f->wire;  /* its slot */
    t->nflights--;
    cr_qp_put(t, q);
}

bool cr_fenced(CrTransport *t)
{
    CrQp *q;

    if (t->fence_qpn == CR_ANY_QP) {
        return !t->nflights;
    }
    q = cr_qp_find(t, t->fence_qpn);
    return !q || !q->nflights;
}

/* The flight in slot *i or after it (*i moves past it), or NULL. */
CrFlight *cr_flight_next(CrTransport *t, uint32_t *i)
{
    while (*i < t->flight_cap) {
        CrFlight *f = t->flights[(*i)++];

        if (f->q) {
            return f;
        }
    }
    return NULL;
}

/*
 * A READ's or an atomic's buffers in flight f: the peer may have written
 * them (it answered, or it is gone): dirty for a migration.
 */
void cr_flight_written(CrTransport *t, CrFlight *f)
{
    for (uint32_t i = 0; i < f->nwritten; i++) {
        pvrdma_dirty(t->t.core, f->written[i].host, f->written[i].len);
    }
    f->nwritten = 0;
}

/* The transport is freed: every slot. */
void cr_flights_fini(CrTransport *t)
{
    for (uint32_t i = 0; i < t->flight_cap; i++) {
        g_free(t->flights[i]->written);
        g_free(t->flights[i]);
    }
    g_free(t->flights);
    g_free(t->flight_free);
}
