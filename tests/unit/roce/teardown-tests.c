/*
 * Tests of the RoCEv2 transport: teardown with work in flight, and a
 * pingpong soak over a lossy, jittery wire.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "roce/rt.h"

/*
 * e's QP to RESET, as the driver does it: its work requests are gone
 * without completions, and it starts its rings again from 0.
 */
static void ep_reset(Ep *e)
{
    struct pvrdma_qp_attr at = { .qp_state = PVRDMA_QPS_RESET };

    g_assert_cmpuint(modify_qp(ep_dev(e), &e->qp, PVRDMA_QP_STATE, &at), ==,
                     0);
    memset(qp_rings(ep_dev(e), &e->qp), 0, 2 * sizeof(struct pvrdma_ring));
    e->qp.sq_prod = e->qp.rq_prod = 0;
}

/* a and b back to RESET, then connected again from new PSNs */
static void rc_reconnect(Net *n, Ep *a, Ep *b, uint32_t psn_a, uint32_t psn_b)
{
    RcOpts o = rc_default;

    ep_reset(a);
    ep_reset(b);
    o.psn_a = psn_a;
    o.psn_b = psn_b;
    rc_connect(n, a, b, &o);
}

static void fh_step2(Net *n)
{
    fh_step((FakeHost *const[]) { &n->node[0].d.h, &n->node[1].d.h }, 2);
}

static void test_teardown(void)
{
    Rc r;
    Net *n;
    Ep a3, b3;
    struct pvrdma_sge s;
    struct pvrdma_cqe c;
    union pvrdma_cmd_req req = { 0 };

    /* A's QP is reset with requests in flight and its timer armed */
    rc_setup(&r, NULL, 256 * KIB, 19);
    n = &r.n;
    n->dir[0].drop_all = true;
    s = ep_sge(&r.a, 0, 64 * KIB);
    wr_send(&r.a, 0xa1, PVRDMA_WR_SEND, 0, &s, 1);
    wr_rdma(&r.a, 0xa2, PVRDMA_WR_RDMA_READ, &s, 1, ep_va(&r.b, 0),
            r.b.mr.rkey, 0);
    net_run(n, 10, NULL, NULL);
    g_assert_cmpuint(n->dir[0].frames, >, 0);
    ep_reset(&r.a);
    g_assert_null(ep_qp(&r.a)->tp);
    g_assert_null(ep_qp(&r.a)->tp_state);
    /* its timers fire into nothing */
    net_for(n, 5000);
    g_assert_cmpuint(ep_cq_avail(&r.a), ==, 0);
    n->dir[0].drop_all = false;

    /* connected again; B's QP is destroyed in the middle of a message */
    rc_reconnect(n, &r.a, &r.b, 0x3000, 0x4000);
    wr_recv(&r.b, 0xb1, 0, 64 * KIB);
    wr_send(&r.a, 0xa3, PVRDMA_WR_SEND, 0, &s, 1);
    for (unsigned i = 0; i < 20; i++) {
        net_deliver(n);
        fh_step2(n);
    }
    req.destroy_qp.qp_handle = r.b.qp.handle;
    g_assert_cmpuint(dev_cmd(ep_dev(&r.b), &req, PVRDMA_CMD_DESTROY_QP, NULL),
                     ==, 0);
    WAIT_CQES(n, 60000, &r.a, 1, NULL, 0);
    g_assert_true(poll_cq(ep_dev(&r.a), &r.a.cq, &c));
    g_assert_cmphex(c.wr_id, ==, 0xa3);
    g_test_message("send to a QP destroyed under it: status %u", c.status);
    g_assert_cmpuint(c.status, !=, PVRDMA_WC_SUCCESS);
    g_assert_true(net_settle(n));
    while (poll_cq(ep_dev(&r.b), &r.b.cq, &c)) {
        /* what the destroyed QP may have left; nothing to check */
    }

    /* the devices go away with frames on the wire and timers armed */
    ep_init(&a3, &n->node[0], PVRDMA_QPT_RC, 128 * KIB);
    ep_init(&b3, &n->node[1], PVRDMA_QPT_RC, 128 * KIB);
    rc_connect(n, &a3, &b3, &rc_default);
    wr_recv(&b3, 0xb1, 0, 64 * KIB);
    n->dir[1].drop_all = true;
    s = ep_sge(&a3, 0, 64 * KIB);
    wr_send(&a3, 0xa4, PVRDMA_WR_SEND, 0, &s, 1);
    wr_rdma(&a3, 0xa5, PVRDMA_WR_RDMA_READ, &s, 1, ep_va(&b3, 0),
            b3.mr.rkey, 0);
    fh_step2(n);
    for (unsigned i = 0; i < 30; i++) {
        net_deliver(n);
    }
    fh_step2(n);
    g_assert_cmpuint(n->wire.length, >, 0);
    ep_fini(&a3);
    ep_fini(&b3);
    ep_fini(&r.a);
    ep_fini(&r.b);
    net_fini(n);
}

/*
 * As ibv_rc_pingpong: A SENDs a message to B, B answers with one of the
 * same size, and so on.  The wire loses, reorders and delays frames in
 * both directions, ACKs included, with the applications' usual timeout 14
 * (67 ms) and retry_cnt 7.  Every received byte is compared.  An exchange
 * that neither completes nor fails within SOAK_HANG_MS of fake time is a
 * hang; a completion with an error ends the cell.
 */
#define SOAK_HANG_MS    120000

#define SOAK_RECV_OFF   (2048 * KIB)

typedef struct SoakCell {
    uint32_t size;
    unsigned loss_pm, reorder_pm, delay_ms, jitter_ms;
    bool jitter_reorders;       /* see WireDir */
    unsigned n;                 /* exchanges (one each way) */
} SoakCell;

typedef struct SoakResult {
    unsigned done, hangs, retry_exc, other_err, data_err;
    int64_t fake_ms;
    uint64_t frames, dropped, retransmits, timeouts, seq_naks;
} SoakResult;

/* The message of exchange i: a window of one long pattern. */
static const uint8_t *soak_msg(const uint8_t *pat, unsigned i)
{
    return pat + (i * 4099u) % (1024 * KIB);
}

/* Wait for e's completion of wr_id; false (counted) if it is not a good one. */
static bool soak_cqe(Ep *e, uint64_t wr_id, uint32_t size, SoakResult *res)
{
    struct pvrdma_cqe c;

    if (!poll_cq(ep_dev(e), &e->cq, &c)) {
        res->hangs++;
        return false;
    }
    if (c.status == PVRDMA_WC_RETRY_EXC_ERR) {
        res->retry_exc++;
        return false;
    }
    if (c.status != PVRDMA_WC_SUCCESS || c.wr_id != wr_id ||
        (c.opcode == PVRDMA_WC_RECV && c.byte_len != size)) {
        g_test_message("soak: wr_id 0x%" PRIx64 " (want 0x%" PRIx64
                       ") status %u byte_len %u", c.wr_id, wr_id, c.status,
                       c.byte_len);
        res->other_err++;
        return false;
    }
    return true;
}

/* One message from s to r; false if the cell must end. */
static bool soak_one(Net *n, Ep *s, Ep *r, const uint8_t *msg, uint32_t size,
                     uint64_t id, SoakResult *res)
{
    struct pvrdma_sge sg = ep_sge(s, 0, size);
    int64_t t0 = net_now(n);

    ep_put(s, 0, msg, size);
    wr_send(s, id, PVRDMA_WR_SEND, 0, &sg, 1);
    if (!net_run(n, SOAK_HANG_MS, cq_want_done,
                 &(CqWant) { s, r, 1, 1 }) &&
        !ep_cq_avail(s) && !ep_cq_avail(r)) {
        g_test_message("soak: message 0x%" PRIx64 " of %u bytes: nothing "
                       "after %" PRId64 " ms", id, size, net_now(n) - t0);
        res->hangs++;
        return false;
    }
    if (!soak_cqe(s, id, size, res) || !soak_cqe(r, id | 1, size, res)) {
        return false;
    }
    {
        uint8_t *got = g_malloc(size);

        buf_read(ep_dev(r), &r->mr, SOAK_RECV_OFF, got, size);
        if (memcmp(got, msg, size)) {
            res->data_err++;
        }
        g_free(got);
    }
    /* the next receive, over a cleared buffer */
    buf_fill(ep_dev(r), &r->mr, SOAK_RECV_OFF, size, 0);
    wr_recv(r, (id + 2) | 1, SOAK_RECV_OFF, size);
    return true;
}

static SoakResult soak_cell(const SoakCell *cell, uint32_t seed)
{
    Rc r;
    Net *n = &r.n;
    SoakResult res = { 0 };
    uint8_t *pat = pattern(2048 * KIB, seed);
    int64_t t0;

    rc_setup(&r, NULL, 4096 * KIB, seed);
    for (unsigned i = 0; i < 2; i++) {
        n->dir[i].drop_pm = cell->loss_pm;
        n->dir[i].reorder_pm = cell->reorder_pm;
        n->dir[i].delay_ms = cell->delay_ms;
        n->dir[i].jitter_ms = cell->jitter_ms;
        n->dir[i].jitter_reorders = cell->jitter_reorders;
    }
    t0 = net_now(n);
    /* wr_ids: even for SENDs, odd for receives, 2 per message */
    wr_recv(&r.a, 0xa0000001, SOAK_RECV_OFF, cell->size);
    wr_recv(&r.b, 0xb0000001, SOAK_RECV_OFF, cell->size);
    for (unsigned i = 0; i < cell->n; i++) {
        if (!soak_one(n, &r.a, &r.b, soak_msg(pat, 2 * i), cell->size,
                      0xb0000000 + 2 * i, &res) ||
            !soak_one(n, &r.b, &r.a, soak_msg(pat, 2 * i + 1), cell->size,
                      0xa0000000 + 2 * i, &res)) {
            break;
        }
        res.done++;
    }
    res.fake_ms = net_now(n) - t0;
    for (unsigned i = 0; i < 2; i++) {
        PvrdmaPathStats st = stats(&n->node[i]);

        res.frames += n->dir[i].frames;
        res.dropped += n->dir[i].dropped;
        res.retransmits += st.retransmits;
        res.timeouts += st.timeouts;
        res.seq_naks += st.seq_naks;
    }
    if (res.done < cell->n) {
        /* what the wire saw last, for the note */
        g_test_message("soak cell %u B, %u/1000 lost, %u/1000 reordered, "
                       "%u+%u ms: stopped after %u exchanges", cell->size,
                       cell->loss_pm, cell->reorder_pm, cell->delay_ms,
                       cell->jitter_ms, res.done);
        for (GList *l = n->trace.head; l; l = l->next) {
            g_test_message("%s", (char *)l->data);
        }
        log_stats(n);
    }
    /* whatever is left (the cell may have ended on an error) */
    n->dead = true;
    ep_fini(&r.a);
    ep_fini(&r.b);
    net_free(n);
    g_free(pat);
    return res;
}

static void soak_print(const SoakCell *c, const SoakResult *r)
{
    g_test_message("soak %7u B loss %4.1f%% reorder %3.1f%% delay %u+%u ms: "
                   "%u/%u exchanges, %u hangs, %u retry-exceeded, %u other "
                   "errors, %u data errors; %" PRIu64 " frames, %" PRIu64
                   " dropped, %" PRIu64 " retransmits, %" PRIu64
                   " timeouts, %" PRIu64 " seq NAKs, %.1f s fake",
                   c->size, c->loss_pm / 10.0, c->reorder_pm / 10.0,
                   c->delay_ms, c->jitter_ms, r->done, c->n, r->hangs,
                   r->retry_exc, r->other_err, r->data_err, r->frames,
                   r->dropped, r->retransmits, r->timeouts, r->seq_naks,
                   r->fake_ms / 1000.0);
}

/*
 * The requester's local buffer goes (its MR destroyed) while a WRITE is
 * still being sent: what the window held back cannot be read.  The
 * completer fails it with LOC_PROT_ERR, in order after the WRITE before
 * it, and flushes what follows; the QP goes to error.
 */
static void test_rc_mr_gone(void)
{
    Rc r;
    Net *n = &r.n;
    uint8_t *d = pattern(8 * KIB, 31);
    union pvrdma_cmd_req req = { 0 };
    struct pvrdma_sge s;
    Buf m2;

    rc_setup(&r, NULL, 64 * KIB, 29);
    buf_create(ep_dev(&r.a), &m2, r.a.pd, EP_IOVA + 1024 * KIB, 512 * KIB,
               EP_ACCESS);
    ep_put(&r.a, 0, d, 8 * KIB);
    s = ep_sge(&r.a, 0, 8 * KIB);
    wr_rdma(&r.a, 0xa1, PVRDMA_WR_RDMA_WRITE, &s, 1, ep_va(&r.b, 0),
            r.b.mr.rkey, 0);
    s = (struct pvrdma_sge) { m2.iova, 512 * KIB, m2.lkey };
    wr_rdma(&r.a, 0xa2, PVRDMA_WR_RDMA_WRITE, &s, 1, ep_va(&r.b, 16 * KIB),
            r.b.mr.rkey, 0);
    s = ep_sge(&r.a, 0, 8 * KIB);
    wr_rdma(&r.a, 0xa3, PVRDMA_WR_RDMA_WRITE, &s, 1, ep_va(&r.b, 0),
            r.b.mr.rkey, 0);
    fh_step2(n);        /* executed: the first window of 0xa2 is out */
    g_assert_cmpuint(ops(n, 0, ROCE_RC_RDMA_WRITE_FIRST), ==, 2);
    g_assert_cmpuint(ops(n, 0, ROCE_RC_RDMA_WRITE_MIDDLE), <, 6 + 510);
    req.destroy_mr.mr_handle = m2.handle;
    g_assert_cmpuint(dev_cmd(ep_dev(&r.a), &req, PVRDMA_CMD_DESTROY_MR, NULL),
                     ==, 0);
    WAIT_CQES(n, 10000, &r.a, 3, NULL, 0);
    ep_expect(&r.a, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE, 8 * KIB);
    ep_expect(&r.a, 0xa2, PVRDMA_WC_LOC_PROT_ERR, PVRDMA_WC_RDMA_WRITE, 0);
    ep_expect(&r.a, 0xa3, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_RDMA_WRITE, 0);
    g_assert_cmpuint(ep_state(&r.a), ==, PVRDMA_QPS_ERR);
    ep_check(&r.b, 0, d, 8 * KIB);
    g_assert_true(net_settle(n));
    /* no timer decided it: nothing was sent again */
    g_assert_cmpuint(stats(&n->node[0]).timeouts, ==, 0);
    g_free(m2.pages);
    g_free(d);
    rc_fini(&r);
}

/*
 * A path whose delay varies frame by frame (1 + [0, 5] ms, each frame its
 * own): most frames of a window overtake each other, with no loss at all.
 * Go-back-N then goes back often (sequence NAKs, retransmissions), but
 * every exchange completes with every byte, and no request ends with
 * RETRY_EXC_ERR: a sequence NAK is the responder's answer, not a lost
 * one, so reordering alone must never exhaust the retry count.  (READs
 * under such a path: rc-read-reordered.)
 */
static void test_rc_jitter_reorders(void)
{
    static const SoakCell cells[] = {
        { .size = 65536, .delay_ms = 1, .jitter_ms = 5,
          .jitter_reorders = true, .n = 20 },
        { .size = 1024 * 1024, .delay_ms = 1, .jitter_ms = 5,
          .jitter_reorders = true, .n = 6 },
    };

    for (unsigned i = 0; i < G_N_ELEMENTS(cells); i++) {
        SoakResult r = soak_cell(&cells[i], 70 + i);

        soak_print(&cells[i], &r);
        g_assert_cmpuint(r.retry_exc, ==, 0);
        g_assert_cmpuint(r.hangs + r.other_err + r.data_err, ==, 0);
        g_assert_cmpuint(r.done, ==, cells[i].n);
        g_assert_cmpuint(r.seq_naks, >, 0);     /* it did reorder */
    }
}

/*
 * READs of 1 MiB over a path whose every frame has its own delay (1 + [0,
 * 5] ms), no loss: responses arrive out of order all the time; then over
 * one that loses 2 % both ways, and over one that does both.  Every READ
 * completes with every byte, and the responder sends less than 1.5 times
 * the responses the READs need: the requester keeps what comes ahead of
 * its turn and asks again only for the packets missing before it.  (Taken
 * in order only, each gap asked again for the rest of the READ: 1,555,290
 * response packets for 4096, 3401 READ requests.)
 */
static void rc_read_path(bool reorder, unsigned drop_pm, uint32_t seed)
{
    const unsigned nread = 4, len = 1024 * KIB;
    Rc r;
    Net *n = &r.n;
    uint8_t *d = pattern(len, seed);
    struct pvrdma_sge s;
    uint64_t resp;

    rc_setup(&r, NULL, 4 * len, seed + 1);
    for (unsigned i = 0; i < 2; i++) {
        n->dir[i].delay_ms = 1;
        n->dir[i].jitter_ms = reorder ? 5 : 0;
        n->dir[i].jitter_reorders = reorder;
        n->dir[i].drop_pm = drop_pm;
    }
    ep_put(&r.b, 0, d, len);
    for (unsigned i = 0; i < nread; i++) {
        buf_fill(ep_dev(&r.a), &r.a.mr, len, len, 0xcc);
        s = ep_sge(&r.a, len, len);
        wr_rdma(&r.a, 0xa0 + i, PVRDMA_WR_RDMA_READ, &s, 1, ep_va(&r.b, 0),
                r.b.mr.rkey, 0);
        WAIT_CQES(n, 120000, &r.a, 1, NULL, 0);
        ep_expect(&r.a, 0xa0 + i, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_READ,
                  len);
        ep_check(&r.a, len, d, len);
    }
    resp = ops(n, 1, ROCE_RC_RDMA_READ_RESPONSE_FIRST) +
           ops(n, 1, ROCE_RC_RDMA_READ_RESPONSE_MIDDLE) +
           ops(n, 1, ROCE_RC_RDMA_READ_RESPONSE_LAST);
    g_test_message("%u READs of 1 MiB, %s, %u/1000 lost: %" PRIu64
                   " response packets for %u needed, %u READ requests",
                   nread, reorder ? "every frame its own delay" : "in order",
                   drop_pm, resp, nread * 1024,
                   ops(n, 0, ROCE_RC_RDMA_READ_REQUEST));
    g_assert_cmpuint(resp, <, 3 * nread * 1024 / 2);
    g_free(d);
    rc_fini(&r);
}

static void test_rc_read_reordered(void)
{
    rc_read_path(true, 0, 77);      /* reordered, nothing lost */
    rc_read_path(false, 20, 79);    /* in order, 2 % lost both ways */
    rc_read_path(true, 20, 81);     /* both */
}

static void test_rc_soak(void)
{
    static const uint32_t sizes[] = { 1024, 65536, 1024 * 1024 };
    static const unsigned loss[] = { 0, 10, 50 };
    static const unsigned jitter[] = { 0, 100 };
    const char *env = g_getenv("PVRDMA_ROCE_SOAK");
    unsigned n = env ? (unsigned)g_ascii_strtoull(env, NULL, 10) : 0;
    uint32_t seed = 40;

    for (unsigned si = 0; si < G_N_ELEMENTS(sizes); si++) {
        for (unsigned li = 0; li < G_N_ELEMENTS(loss); li++) {
            for (unsigned ji = 0; ji < G_N_ELEMENTS(jitter); ji++) {
                SoakCell c = {
                    .size = sizes[si], .loss_pm = loss[li],
                    .reorder_pm = loss[li] ? 10 : 0, .delay_ms = 1,
                    .jitter_ms = jitter[ji],
                    .n = n ? n : sizes[si] > 65536 ? 3 : 20,
                };
                SoakResult r = soak_cell(&c, seed++);

                soak_print(&c, &r);
                g_assert_cmpuint(r.done, ==, c.n);
                g_assert_cmpuint(r.data_err, ==, 0);
                /*
                 * Without loss every expiry is early (the wire stalled):
                 * the congestion window it cut must be given back, or it
                 * stays at a packet or two, each waiting out a stall and
                 * the timer (925 expiries per 1 MiB exchange, 17 before
                 * the congestion window, 4 in 100 exchanges with it).
                 */
                if (!loss[li]) {
                    g_assert_cmpuint(r.timeouts, <=, 20 * c.n);
                }
            }
        }
    }
}

void rt_add_teardown_tests(void)
{
    g_test_add_func("/pvrdma/roce/teardown", test_teardown);
    g_test_add_func("/pvrdma/roce/rc-mr-gone", test_rc_mr_gone);
    g_test_add_func("/pvrdma/roce/rc-soak", test_rc_soak);
    g_test_add_func("/pvrdma/roce/rc-jitter-reorders", test_rc_jitter_reorders);
    g_test_add_func("/pvrdma/roce/rc-read-reordered", test_rc_read_reordered);
}
