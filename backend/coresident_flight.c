/*
 * pvrdma co-resident transport, the flight table: our requests at peers
 * until they answer, found by the cookie we put on the wire.  A leaf.
 *
 * A table of slots rather than a hash table: the wire cookie is the
 * slot's index (low half) and a sequence number (high half, so that a
 * late or forged answer for a slot used again finds nothing), a lookup is
 * an index and a compare, and a slot, with its record, is kept for the
 * next request when its flight ends.  Nothing is allocated per request
 * once the table has grown to the most requests ever in flight (a hash
 * table allocated as its count swung, about once per operation with one
 * request in flight).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef PVRDMA_STANDALONE
#include "qemu/osdep.h"
#endif
#include "coresident_int.h"

/* A new flight (its fields but wire and slot are the caller's). */
CrFlight *cr_flight_add(CrTransport *t)
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
        .slot = i,
        .used = true,
    };
    t->nflights++;
    return f;
}

/* The flight with wire cookie wire, or NULL. */
CrFlight *cr_flight_find(CrTransport *t, uint64_t wire)
{
    uint32_t i = wire;      /* the low half */
    CrFlight *f = i < t->flight_cap ? t->flights[i] : NULL;

    return f && f->used && f->wire == wire ? f : NULL;
}

/*
 * f ended: its slot is free for the next request.  The record is reused
 * then: what the caller still needs of it, it copies first.
 */
void cr_flight_remove(CrTransport *t, CrFlight *f)
{
    f->used = false;
    t->flight_free[t->nflight_free++] = f->slot;
    t->nflights--;
}

/* The flight in slot *i or after it (*i moves past it), or NULL. */
CrFlight *cr_flight_next(CrTransport *t, uint32_t *i)
{
    while (*i < t->flight_cap) {
        CrFlight *f = t->flights[(*i)++];

        if (f->used) {
            return f;
        }
    }
    return NULL;
}

/* The transport is freed: every slot. */
void cr_flights_fini(CrTransport *t)
{
    for (uint32_t i = 0; i < t->flight_cap; i++) {
        g_free(t->flights[i]);
    }
    g_free(t->flights);
    g_free(t->flight_free);
}
