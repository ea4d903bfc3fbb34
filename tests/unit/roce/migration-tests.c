/*
 * Tests of the RoCEv2 transport: migration: a pause on the wire, the QP
 * state carried over.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "roce/rt.h"

/*
 * Node i's VM migrates: its device pauses (quiesce: requests in flight go
 * back to the send queue), its state is saved, it stays on the wire but
 * deaf and dumb for pause_ms while the peer retransmits into the void, and
 * the state goes to a new core on the same host (the guest's RAM moves as
 * it is) with a new RoCEv2 transport.
 */
static void node_migrate(Net *n, unsigned i, int64_t pause_ms)
{
    Node *nd = &n->node[i];
    Dev *d = &nd->d;
    PvrdmaLimits l = d->c.lim;
    PvrdmaHostOps no_tx = fh_ops;
    g_autoptr(GByteArray) st = g_byte_array_new();
    Error *err = NULL;
    char *why;

    g_assert_true(pvrdma_core_quiesce(&d->c, 1000));
    why = pvrdma_core_migration_blocker(&d->c, true);
    g_assert_null(why);
    pvrdma_core_save(&d->c, st);
    /* the old device must not touch the guest now: the state is taken */
    net_for(n, pause_ms);
    pvrdma_core_moved(&d->c);
    pvrdma_core_fini(&d->c);
    g_assert_cmpuint(fh_outstanding(&d->h), ==, 0);
    /*
     * a destination without RoCEv2 (its host has no frame_tx, so no
     * RoCEv2 transport) refuses the state, and says why
     */
    no_tx.frame_tx = NULL;
    pvrdma_core_init(&d->c, &no_tx, &d->h, &l);
    g_assert_null(pvrdma_roce_new(&d->c));
    pvrdma_core_add_transport(&d->c, pvrdma_loopback_new(&d->c));
    g_assert_false(pvrdma_core_load(&d->c, st->data, st->len, &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "roce transport, which this "
                            "device does not have"));
    g_clear_pointer(&err, error_free);
    g_assert_cmpuint(fh_outstanding(&d->h), ==, 0);
    pvrdma_core_fini(&d->c);
    pvrdma_core_init(&d->c, &fh_ops, &d->h, &l);
    pvrdma_core_add_transport(&d->c, pvrdma_loopback_new(&d->c));
    nd->t = pvrdma_roce_new(&d->c);     /* d->h still sends with node_tx */
    g_assert_true(pvrdma_core_add_transport(&d->c, nd->t));
    if (!pvrdma_core_load(&d->c, st->data, st->len, &err)) {
        g_test_message("load: %s", error_get_pretty(err));
        g_test_fail();
        error_free(err);
    }
}

/* Node arg was just given a SEND's middle packet. */
static bool mid_send(Net *n, void *arg)
{
    return n->last_op[GPOINTER_TO_UINT(arg)] == ROCE_RC_SEND_MIDDLE;
}

/* Every CQE of e: the receives' and the others' wr_ids, each in order. */
static void ep_drain(Ep *e, GArray *sends, GArray *recvs)
{
    struct pvrdma_cqe c;

    while (poll_cq(ep_dev(e), &e->cq, &c)) {
        if (c.status != PVRDMA_WC_SUCCESS) {
            g_test_message("QP %u: wr_id 0x%" PRIx64 " status %u",
                           e->qp.qpn, (uint64_t)c.wr_id, c.status);
            g_test_fail();
        }
        g_array_append_val(c.opcode == PVRDMA_WC_RECV ? recvs : sends,
                           c.wr_id);
    }
}

static void expect_ids(GArray *got, uint64_t first, unsigned n)
{
    g_assert_cmpuint(got->len, ==, n);
    for (unsigned i = 0; i < n; i++) {
        g_assert_cmphex(g_array_index(got, uint64_t, i), ==, first + i);
    }
}

/*
 * Both ends migrate, one after the other, with traffic running both ways
 * over a wire that also loses 1 %: SENDs both ways, WRITEs, READs and
 * fetch-and-adds from A.  Every request completes exactly once and in
 * order (the adds' results are distinct and sum up), the data is intact,
 * PSNs go on without a gap (the wire checks), the QPs stay in RTS.
 */
static void test_rc_migrate(void)
{
    Rc r;
    Net *n = &r.n;
    const unsigned nsend = 40, nrdma = 10, nadd = 16;
    const uint64_t sbase = 0, wbase = 1024 * KIB, rbase = 2048 * KIB;
    const uint64_t abase = 3072 * KIB, rcv = 3200 * KIB;
    uint8_t *da = pattern(nsend * 16 * KIB, 81);
    uint8_t *db = pattern(nsend * 16 * KIB, 82);
    uint8_t *w = pattern(nrdma * 64 * KIB, 83);
    g_autoptr(GArray) sa = g_array_new(false, false, sizeof(uint64_t));
    g_autoptr(GArray) ra = g_array_new(false, false, sizeof(uint64_t));
    g_autoptr(GArray) sb = g_array_new(false, false, sizeof(uint64_t));
    g_autoptr(GArray) rb = g_array_new(false, false, sizeof(uint64_t));
    PvrdmaPathStats st;
    uint64_t retx;
    struct pvrdma_sge s;
    uint64_t sum = 1000;

    rc_setup(&r, NULL, 4096 * KIB, 9);
    for (unsigned i = 0; i < 2; i++) {
        n->dir[i].drop_pm = 20;
    }
    ep_put(&r.a, sbase, da, nsend * 16 * KIB);
    ep_put(&r.b, sbase, db, nsend * 16 * KIB);
    ep_put(&r.b, wbase, w, nrdma * 64 * KIB);
    ep_set_u64(&r.b, abase, 1000);
    for (unsigned i = 0; i < nsend; i++) {
        wr_recv(&r.b, 0xb000 + i, rcv + i * 16 * KIB, 16 * KIB);
        wr_recv(&r.a, 0xa800 + i, rcv + i * 16 * KIB, 16 * KIB);
    }
    for (unsigned i = 0; i < nsend; i++) {
        s = ep_sge(&r.a, sbase + i * 16 * KIB, 16 * KIB);
        wr_send(&r.a, 0xa000 + i, PVRDMA_WR_SEND, 0, &s, 1);
        s = ep_sge(&r.b, sbase + i * 16 * KIB, 16 * KIB);
        wr_send(&r.b, 0xb800 + i, PVRDMA_WR_SEND, 0, &s, 1);
    }
    for (unsigned i = 0; i < nrdma; i++) {
        s = ep_sge(&r.a, wbase + i * 64 * KIB, 64 * KIB);
        wr_rdma(&r.a, 0xa000 + nsend + i, PVRDMA_WR_RDMA_READ, &s, 1,
                ep_va(&r.b, wbase + i * 64 * KIB), r.b.mr.rkey, 0);
    }
    for (unsigned i = 0; i < nrdma; i++) {
        s = ep_sge(&r.a, sbase + i * 64 * KIB, 64 * KIB);
        wr_rdma(&r.a, 0xa000 + nsend + nrdma + i, PVRDMA_WR_RDMA_WRITE, &s,
                1, ep_va(&r.b, rbase + i * 64 * KIB), r.b.mr.rkey, 0);
    }
    for (unsigned i = 0; i < nadd; i++) {
        s = ep_sge(&r.a, abase + i * 8, 8);
        wr_atomic(&r.a, 0xa000 + nsend + 2 * nrdma + i,
                  PVRDMA_WR_ATOMIC_FETCH_AND_ADD, &s, ep_va(&r.b, abase),
                  r.b.mr.rkey, 1u << (i % 8), 0);
    }

    /*
     * A moves after 30 completions, B after 40, each in the middle of a
     * SEND it receives (a receive WQE taken, part of the data in)
     */
    g_assert_true(wait_cqes(n, 600000, &r.a, 30, NULL, 0));
    g_assert_true(net_run(n, 600000, mid_send, GUINT_TO_POINTER(0)));
    st = stats(&n->node[1]);
    retx = st.retransmits;
    node_migrate(n, 0, 300);
    st = stats(&n->node[1]);
    g_test_message("B retransmitted %" PRIu64 " while A was away",
                   st.retransmits - retx);
    g_assert_cmpuint(st.retransmits, >, retx);
    g_assert_true(wait_cqes(n, 600000, &r.a, 40, NULL, 0));
    g_assert_true(net_run(n, 600000, mid_send, GUINT_TO_POINTER(1)));
    node_migrate(n, 1, 300);

    WAIT_CQES(n, 600000, &r.a, 2 * nsend + 2 * nrdma + nadd, &r.b,
              2 * nsend);
    g_assert_true(net_settle(n));
    ep_drain(&r.a, sa, ra);
    ep_drain(&r.b, sb, rb);
    expect_ids(sa, 0xa000, nsend + 2 * nrdma + nadd);
    expect_ids(ra, 0xa800, nsend);
    expect_ids(sb, 0xb800, nsend);
    expect_ids(rb, 0xb000, nsend);
    ep_check(&r.b, rcv, da, nsend * 16 * KIB);
    ep_check(&r.a, rcv, db, nsend * 16 * KIB);
    ep_check(&r.a, wbase, w, nrdma * 64 * KIB);
    ep_check(&r.b, rbase, da, nrdma * 64 * KIB);
    /* each add ran once, in order: each saw the sum of those before */
    for (unsigned i = 0; i < nadd; i++) {
        g_assert_cmpuint(ep_u64(&r.a, abase + i * 8), ==, sum);
        sum += 1u << (i % 8);
    }
    g_assert_cmpuint(ep_u64(&r.b, abase), ==, sum);
    g_assert_cmpuint(ep_state(&r.a), ==, PVRDMA_QPS_RTS);
    g_assert_cmpuint(ep_state(&r.b), ==, PVRDMA_QPS_RTS);
    g_assert_true(ep_qp(&r.a)->tp == n->node[0].t);
    g_assert_true(ep_qp(&r.b)->tp == n->node[1].t);
    g_free(da);
    g_free(db);
    g_free(w);
    rc_fini(&r);
}

void rt_add_migration_tests(void)
{
    g_test_add_func("/pvrdma/roce/rc-migrate", test_rc_migrate);
}
