/*
 * pvrdma co-resident transport, who owns which GID.  Each peer announces
 * its GID table (GIDS) and gets the GIDs nobody else owns here: first
 * owner wins, and a GID of this device is never taken.  The GIDs of a
 * peer that moved wait a while for the QEMU that took its place.  A
 * request goes to the ready peer that owns its destination GID.  See
 * coresident.c for the transport as a whole, coresident_int.h for what
 * its files share.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "coresident_int.h"

CrPeer *cr_peer_for_gid(CrTransport *t, const uint8_t gid[16])
{
    for (guint i = 0; i < t->peers->len; i++) {
        CrPeer *p = g_ptr_array_index(t->peers, i);

        if (!cr_peer_ready(p)) {
            continue;
        }
        for (uint32_t j = 0; j < p->ngids; j++) {
            if (!memcmp(p->gids[j].gid, gid, 16)) {
                return p;
            }
        }
    }
    return NULL;
}

/*
 * Where gid is in moved_gids (a moved peer owned it, and it still waits
 * for the QEMU that took its place), or -1.  Forgets those whose wait is
 * over.
 */
static int cr_moved_index(CrTransport *t, const uint8_t gid[16])
{
    PvrdmaCore *c = t->t.core;
    int64_t now = c->ops->now_ms(c->opaque);

    for (guint i = 0; i < t->moved_gids->len;) {
        CrMovedGid *m = &g_array_index(t->moved_gids, CrMovedGid, i);

        if (now >= m->until) {
            g_array_remove_index_fast(t->moved_gids, i);
        } else if (!memcmp(m->gid, gid, 16)) {
            return i;
        } else {
            i++;
        }
    }
    return -1;
}

bool cr_gid_moved(CrTransport *t, const uint8_t gid[16])
{
    return cr_moved_index(t, gid) >= 0;
}

static bool cr_gid_in(const CrGid *g, uint32_t n, const uint8_t gid[16])
{
    for (uint32_t i = 0; i < n; i++) {
        if (!memcmp(g[i].gid, gid, 16)) {
            return true;
        }
    }
    return false;
}

/*
 * Who other than peer p owns gid: "this device", a peer's name, NULL.
 * *paused: that owner is paused (a migration hands its GIDs over).
 */
static const char *cr_gid_owner(CrTransport *t, const CrPeer *p,
                                const uint8_t gid[16], bool *paused)
{
    if (pvrdma_gid_is_local(t->t.core, gid)) {
        *paused = t->paused;
        return "this device";
    }
    for (guint i = 0; i < t->peers->len; i++) {
        const CrPeer *q = g_ptr_array_index(t->peers, i);

        if (q != p && !q->dead && cr_gid_in(q->gids, q->ngids, gid)) {
            *paused = q->paused;
            return q->name;
        }
    }
    return NULL;
}

/*
 * p announces the GIDs gids[n] (its whole table): it gets those nobody
 * else owns here.  First owner wins, and a GID of this device is never
 * taken.  A refusal is logged once, not at every announcement.  A GID a
 * moved peer left behind (moved_gids) has its new owner: whoever waited
 * for it carries on.
 */
void cr_claim_gids(CrPeer *p, const CrGid *gids, uint32_t n)
{
    CrTransport *t = p->t;
    CrGid *keep = g_new(CrGid, MAX(1, n));
    CrGid *refused = g_new(CrGid, MAX(1, n));
    uint32_t nkeep = 0, nrefused = 0;
    bool wake = false;

    for (uint32_t i = 0; i < n; i++) {
        bool paused = false;
        const char *owner = cr_gid_owner(t, p, gids[i].gid, &paused);
        char s[64];

        if (!owner) {
            int j = cr_moved_index(t, gids[i].gid);

            keep[nkeep++] = gids[i];
            if (j >= 0) {
                /* the new home of a moved peer's GID: its senders go on */
                g_array_remove_index_fast(t->moved_gids, j);
                wake = true;
            }
            continue;
        }
        refused[nrefused++] = gids[i];
        /* not worth a word while a migration hands the GID over */
        if (!paused && !p->paused &&
            !cr_gid_in(p->refused, p->nrefused, gids[i].gid)) {
            pvrdma_gid_str(gids[i].gid, s, sizeof(s));
            warn_report("pvrdma: co-resident peer %s announces GID %s, which "
                        "%s "
                        "owns: not routed to it", p->name, s, owner);
        }
    }
    g_free(p->gids);
    g_free(p->refused);
    p->gids = keep;
    p->ngids = nkeep;
    p->refused = refused;
    p->nrefused = nrefused;
    trace_pvrdma_cr_gids(p->node, nkeep);
    if (wake) {
        pvrdma_transport_wake_senders(t->t.core);
    }
}

/* A peer went: others may now own the GIDs they announced and were refused. */
void cr_reclaim(CrTransport *t)
{
    for (guint i = 0; i < t->peers->len; i++) {
        CrPeer *q = g_ptr_array_index(t->peers, i);
        g_autofree CrGid *all = NULL;
        uint32_t n = q->ngids + q->nrefused;

        if (q->dead || !q->nrefused) {
            continue;
        }
        all = g_new(CrGid, n);
        memcpy(all, q->gids, q->ngids * sizeof(CrGid));
        memcpy(all + q->ngids, q->refused, q->nrefused * sizeof(CrGid));
        cr_claim_gids(q, all, n);
    }
}

CrPeer *cr_gid_rival(CrTransport *t, const CrPeer *p)
{
    for (guint i = 0; i < t->peers->len; i++) {
        CrPeer *q = g_ptr_array_index(t->peers, i);

        if (q == p || q->dead) {
            continue;
        }
        for (uint32_t j = 0; j < q->nrefused; j++) {
            if (cr_gid_in(p->gids, p->ngids, q->refused[j].gid)) {
                return q;
            }
        }
    }
    return NULL;
}
