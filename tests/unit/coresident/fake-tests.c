/*
 * Tests of the co-resident transport: a fake peer (a raw socket speaking
 * the wire format): what the device sends, polling, rings.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "coresident/cr.h"

static void test_fake_peer(void)
{
    fake_peer_run(false);
}

/*
 * Polling (poll-max-ns): after taking the fake's first answer the device
 * polls its ring, the fake sees it (polling set) and writes its second
 * answer without a WAKE; the poll finds it (the host's poll_wait says so)
 * and completes it in the same event.
 */
static void test_fake_peer_poll(void)
{
    Env e;
    Vm a;
    Side sa;
    Fake f;
    FakePoller fp = { .f = &f, .h = &a.d.h };
    CrRespMsg r = { { CR_RESP, sizeof(r) } };
    uint8_t fgid[16], buf[CR_MAX_MSG];
    struct pvrdma_sge g;
    uint64_t hits;
    char *path;
    GThread *th;

    path = fake_side_up(&e, &a, &sa, &f, fgid);
    fake_hello(&f, 1);
    fake_region(&f, 0, FAKE_RAM, 0, f.memfd);
    fake_gids(&f, fgid);
    PUMP(&a);
    g_assert_cmpuint(peers(&a), ==, 1);
    g_assert_true(fake_ring_on(&f, true));

    g = mr_sge(&sa, 0, 8);
    send_wqe(&sa, 0xf0, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    send_wqe(&sa, 0xf1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&a);
    fake_expect(&f, buf, sizeof(buf), CR_REQ);
    r.cookie = ((CrReqMsg *)buf)->cookie;
    fake_expect(&f, buf, sizeof(buf), CR_REQ);
    fp.cookie = ((CrReqMsg *)buf)->cookie;

    /*
     * A poll long enough for a loaded machine (the fake's thread may
     * wait for a core), this event's only; the thread ends it.
     */
    pvrdma_coresident_set_poll(a.t, 30ull * 1000 * 1000 * 1000);
    pvrdma_coresident_poll_self(a.t, true);
    th = g_thread_new("fake-poller", fake_poller_run, &fp);
    fake_send(&f, &r, sizeof(r), -1);   /* the first, with a WAKE */
    hits = a.d.h.poll_hits;
    PUMP(&a);
    g_thread_join(th);
    g_assert_false(fp.timed_out);
    g_assert_cmpuint(fp.polling, ==, 1);
    g_assert_cmpuint(fp.wakes, ==, 0);
    g_assert_cmpuint(a.d.h.poll_hits, >, hits);
    pvrdma_coresident_set_poll(a.t, 0);
    a.d.h.poll_stop = 0;
    side_expect_cqe(&sa, 0xf0, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 8);
    side_expect_cqe(&sa, 0xf1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 8);
    expect_cq_empty(&a.d, &sa.cq);
    g_assert_cmpuint(peers(&a), ==, 1);

    /* the fake's QEMU quits: the host hears it */
    fake_close(&f);
    PUMP(&a);
    g_assert_cmpuint(peers(&a), ==, 0);
    /* "hung up", or "Connection reset by peer" if it left data unread */
    g_assert_cmpuint(a.d.h.reports->len, ==, 1);
    g_assert_true(g_str_has_prefix(g_ptr_array_index(a.d.h.reports, 0),
                                   "peer-lost "));
    g_free(path);
    vm_fini(&a);
    env_fini(&e);
}

/* The same with the rings: every message after RING_ON goes through them. */
static void test_fake_peer_ring(void)
{
    fake_peer_run(true);
}

void cr_add_fake_tests(void)
{
    g_test_add_func("/pvrdma/cr/fake-peer", test_fake_peer);
    g_test_add_func("/pvrdma/cr/fake-peer-ring", test_fake_peer_ring);
    g_test_add_func("/pvrdma/cr/fake-peer-poll", test_fake_peer_poll);
}
