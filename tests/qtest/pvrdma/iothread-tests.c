/*
 * QTest for the pvrdma device: the data path in an IOThread (iothread=).
 * The data and migration topics run again in that mode
 * (qpvrdma_add_func_both());
 * here, what only that mode has: the passes are the IOThread's, the data
 * path comes back to the main loop while the VM is stopped and goes again
 * with cont, and a reset or an unplug in the middle of traffic is clean.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "libqos/pvrdma.h"
#include "qobject/qdict.h"
#include "pvrdma/framework.h"

/* A loopback RC pair whose device has its data path in IOThread io0. */
static void iothread_pair(Pair *p, uint64_t *buf, uint32_t *key)
{
    qpvrdma_iothread_mode(true);
    pair_setup(p, PVRDMA_QPT_RC, 64);
    *buf = qpvrdma_alloc(p->d, 65536);
    *key = qpvrdma_create_mr(p->d, p->pd, *buf, 65536,
                             PVRDMA_ACCESS_LOCAL_WRITE);
}

/* n SENDs of 1 KiB from a to b, each received and compared. */
static void exchange(Pair *p, uint64_t buf, uint32_t key, unsigned n,
                     uint8_t seed)
{
    QPvrdma *d = p->d;

    fill(d, buf, 16384, seed);
    for (unsigned i = 0; i < n; i++) {
        qpvrdma_post_recv(d, &p->b, 0xb00 + i, buf + 32768 + i * 1024, 1024,
                          key);
        qpvrdma_send_wr(d, &p->a, PVRDMA_WR_SEND, 0xa00 + i,
                        buf + (i % 16) * 1024, 1024, key, 0, 0);
    }
    for (unsigned i = 0; i < n; i++) {
        qpvrdma_expect_cqe(d, &p->cq, 0xb00 + i, PVRDMA_WC_RECV,
                           PVRDMA_WC_SUCCESS, 1024);
        qpvrdma_expect_cqe(d, &p->cq, 0xa00 + i, PVRDMA_WC_SEND,
                           PVRDMA_WC_SUCCESS, 1024);
        same(d, buf + (i % 16) * 1024, buf + 32768 + i * 1024, 1024);
    }
}

static void qmp_ok(QPvrdma *d, const char *cmd)
{
    QDict *r = qtest_qmp(d->qts, "{ 'execute': %s }", cmd);

    g_assert(qdict_haskey(r, "return"));
    qobject_unref(r);
}

/*
 * The passes are the IOThread's while the VM runs; while it is stopped
 * the main loop serves the doorbells (and the IOThread none); after cont
 * the IOThread again.
 */
static void test_iothread_passes(void)
{
    uint64_t buf, runs;
    uint32_t key;
    Pair p;

    iothread_pair(&p, &buf, &key);
    exchange(&p, buf, key, 8, 1);
    runs = qpvrdma_counter(p.d, "x-iothread-runs");
    g_assert_cmpuint(runs, >, 0);

    qmp_ok(p.d, "stop");
    runs = qpvrdma_counter(p.d, "x-iothread-runs");
    exchange(&p, buf, key, 8, 2);
    g_assert_cmpuint(qpvrdma_counter(p.d, "x-iothread-runs"), ==, runs);

    qmp_ok(p.d, "cont");
    exchange(&p, buf, key, 8, 3);
    g_assert_cmpuint(qpvrdma_counter(p.d, "x-iothread-runs"), >, runs);
    qpvrdma_cq_empty(p.d, &p.cq);
    qpvrdma_iothread_mode(false);
    qpvrdma_stop(p.d);
}

/* 32 SENDs and their receives posted: the IOThread has work to do. */
static void post_traffic(Pair *p, uint64_t buf, uint32_t key)
{
    for (unsigned i = 0; i < 32; i++) {
        qpvrdma_post_recv(p->d, &p->b, 0xb00 + i, buf + 32768, 1024, key);
        qpvrdma_send_wr(p->d, &p->a, PVRDMA_WR_SEND, 0xa00 + i, buf, 1024,
                        key, 0, 0);
    }
}

/* Unplugged while the IOThread has SENDs to run: nothing is left. */
static void test_iothread_unplug_during_traffic(void)
{
    uint64_t buf;
    uint32_t key;
    Pair p;

    iothread_pair(&p, &buf, &key);
    post_traffic(&p, buf, key);
    qpvrdma_unplug(p.d);
    qpvrdma_iothread_mode(false);
    qpvrdma_stop(p.d);
}

/* A system reset while the IOThread has SENDs to run; then traffic again */
static void test_iothread_reset_during_traffic(void)
{
    uint64_t buf;
    uint32_t key;
    Pair p;

    iothread_pair(&p, &buf, &key);
    post_traffic(&p, buf, key);
    qpvrdma_system_reset(p.d);
    g_assert_cmpuint(qpvrdma_counter(p.d, "x-used-qp"), ==, 0);
    g_assert_cmpuint(qpvrdma_counter(p.d, "x-mapped"), ==, 0);
    qpvrdma_setup_dsr(p.d, PVRDMA_VERSION);
    g_assert_cmpuint(qpvrdma_activate(p.d), ==, 0);
    pair_connect(&p, p.d, PVRDMA_QPT_RC, 64);
    buf = qpvrdma_alloc(p.d, 65536);
    key = qpvrdma_create_mr(p.d, p.pd, buf, 65536, PVRDMA_ACCESS_LOCAL_WRITE);
    exchange(&p, buf, key, 8, 4);
    qpvrdma_iothread_mode(false);
    qpvrdma_stop(p.d);
}

void pvrdma_add_iothread_tests(void)
{
    qtest_add_func("/pvrdma/iothread/passes", test_iothread_passes);
    qtest_add_func("/pvrdma/iothread/unplug-during-traffic",
                   test_iothread_unplug_during_traffic);
    qtest_add_func("/pvrdma/iothread/reset-during-traffic",
                   test_iothread_reset_during_traffic);
}
