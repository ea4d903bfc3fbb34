/*
 * Tests of the co-resident transport: the data path across two devices:
 * every verb, through the socket and the rings, big and scattered MRs, UD.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "coresident/cr.h"

static void test_send(void)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    uint8_t data[5000], got[5000];
    struct pvrdma_sge ga[2], gb[2];
    struct pvrdma_cqe e;

    x_setup(&x, 7);
    fill_pattern(data, sizeof(data), 1);
    mr_fill(&x.b.d, &sb->mr, 0xcc);
    mr_write(&x.a.d, &sa->mr, S_IOVA + 50, data, sizeof(data));
    ga[0] = mr_sge(sa, 50, 3000);
    ga[1] = mr_sge(sa, 3050, 2000);
    gb[0] = mr_sge(sb, 10, 1000);
    gb[1] = mr_sge(sb, 8000, 5000);
    post_recv(&x.b.d, &sb->qp, 0xb1, gb, 2);
    send_wqe(sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, ga, 2);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 5000);
    g_assert_true(poll_cq(&x.b.d, &sb->cq, &e));
    g_assert_cmphex(e.wr_id, ==, 0xb1);
    g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
    g_assert_cmpuint(e.opcode, ==, PVRDMA_WC_RECV);
    g_assert_cmpuint(e.byte_len, ==, 5000);
    g_assert_cmpuint(e.qp, ==, sb->qp.handle);
    g_assert_cmpuint(e.src_qp, ==, sa->qp.qpn);
    g_assert_cmpmem(e.smac, 6, x.a.d.h.mac, 6);     /* the sender's MAC */
    g_assert_cmpuint(e.network_hdr_type, ==, PVRDMA_NETWORK_IPV4);
    g_assert_true(e.wc_flags & PVRDMA_WC_WITH_NETWORK_HDR_TYPE);
    g_assert_false(e.wc_flags & PVRDMA_WC_WITH_IMM);
    mr_read(&x.b.d, &sb->mr, S_IOVA + 10, got, 1000);
    g_assert_cmpmem(got, 1000, data, 1000);
    mr_read(&x.b.d, &sb->mr, S_IOVA + 8000, got, 4000);
    g_assert_cmpmem(got, 4000, data + 1000, 4000);
    g_assert_cmphex(*mr_byte(&x.b.d, &sb->mr, S_IOVA + 9), ==, 0xcc);
    g_assert_cmphex(*mr_byte(&x.b.d, &sb->mr, S_IOVA + 1010), ==, 0xcc);
    g_assert_cmphex(*mr_byte(&x.b.d, &sb->mr, S_IOVA + 12000), ==, 0xcc);
    g_assert_cmpuint(qp_rings(&x.a.d, &sa->qp)[0].cons_head, ==, 1);
    g_assert_cmpuint(qp_rings(&x.b.d, &sb->qp)[1].cons_head, ==, 1);

    /* SEND_WITH_IMM, unsignaled: silent at the requester */
    gb[0] = mr_sge(sb, 20000, 4000);
    post_recv(&x.b.d, &sb->qp, 0xb2, gb, 1);
    {
        struct pvrdma_sq_wqe_hdr w = { 0 };

        w.wr_id = 0xa2;
        w.opcode = PVRDMA_WR_SEND_WITH_IMM;
        w.ex.imm_data = 0x11223344;
        post_send(&x.a.d, &sa->qp, &w, ga, 1);
    }
    PUMP(&x.a, &x.b);
    expect_cq_empty(&x.a.d, &sa->cq);
    g_assert_cmpuint(qp_rings(&x.a.d, &sa->qp)[0].cons_head, ==, 2);
    g_assert_true(poll_cq(&x.b.d, &sb->cq, &e));
    g_assert_cmphex(e.wr_id, ==, 0xb2);
    g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
    g_assert_cmpuint(e.opcode, ==, PVRDMA_WC_RECV);
    g_assert_cmpuint(e.byte_len, ==, 3000);
    g_assert_cmphex(e.imm_data, ==, 0x11223344);
    g_assert_true(e.wc_flags & PVRDMA_WC_WITH_IMM);
    mr_read(&x.b.d, &sb->mr, S_IOVA + 20000, got, 3000);
    g_assert_cmpmem(got, 3000, data, 3000);

    /* SEND_WITH_INV: invalidates a fast-registered MR of the responder */
    {
        union pvrdma_cmd_req req = { 0 };
        union pvrdma_cmd_resp rsp;
        struct pvrdma_sq_wqe_hdr w = { 0 };
        uint64_t pl[2];
        uint32_t key;

        req.create_mr.pd_handle = sb->pd;
        req.create_mr.flags = PVRDMA_MR_FLAG_FRMR;
        req.create_mr.nchunks = 2;
        g_assert_cmpuint(dev_cmd(&x.b.d, &req, PVRDMA_CMD_CREATE_MR, &rsp),
                         ==, 0);
        key = rsp.create_mr_resp.mr_handle << 8 | 0x5e;
        pl[0] = fh_alloc(&x.b.d.h, 1);
        pl[1] = fh_alloc(&x.b.d.h, 1);
        w.wr_id = 0xbf;
        w.opcode = PVRDMA_WR_FAST_REG_MR;
        w.send_flags = PVRDMA_SEND_SIGNALED;
        w.wr.fast_reg.iova_start = 0x30000000;
        w.wr.fast_reg.pl_pdir_dma = fh_make_pdir(&x.b.d.h, pl, 2);
        w.wr.fast_reg.page_shift = 12;
        w.wr.fast_reg.page_list_len = 2;
        w.wr.fast_reg.length = 2 * FH_PAGE;
        w.wr.fast_reg.access_flags = PVRDMA_ACCESS_LOCAL_WRITE |
                                     PVRDMA_ACCESS_REMOTE_WRITE;
        w.wr.fast_reg.rkey = key;
        post_send(&x.b.d, &sb->qp, &w, NULL, 0);
        PUMP(&x.a, &x.b);
        side_expect_cqe(sb, 0xbf, PVRDMA_WC_SUCCESS, PVRDMA_WC_FAST_REG_MR, 0);
        g_assert_true(pvrdma_mr_by_key(&x.b.d.c, key)->valid);

        gb[0] = mr_sge(sb, 0, 100);
        post_recv(&x.b.d, &sb->qp, 0xb3, gb, 1);
        memset(&w, 0, sizeof(w));
        w.wr_id = 0xa3;
        w.opcode = PVRDMA_WR_SEND_WITH_INV;
        w.send_flags = PVRDMA_SEND_SIGNALED;
        w.ex.invalidate_rkey = key;
        ga[0].length = 64;
        post_send(&x.a.d, &sa->qp, &w, ga, 1);
        PUMP(&x.a, &x.b);
        side_expect_cqe(sa, 0xa3, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 64);
        g_assert_true(poll_cq(&x.b.d, &sb->cq, &e));
        g_assert_cmphex(e.wr_id, ==, 0xb3);
        g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
        g_assert_cmpuint(e.byte_len, ==, 64);
        g_assert_true(e.wc_flags & PVRDMA_WC_WITH_INVALIDATE);
        g_assert_false(pvrdma_mr_by_key(&x.b.d.c, key)->valid);
        mr_read(&x.b.d, &sb->mr, S_IOVA, got, 64);
        g_assert_cmpmem(got, 64, data, 64);

        /* invalidating an rkey that is no FRMR: both QPs to error */
        post_recv(&x.b.d, &sb->qp, 0xb4, gb, 1);
        w.wr_id = 0xa4;
        w.ex.invalidate_rkey = sb->mr.rkey;
        post_send(&x.a.d, &sa->qp, &w, ga, 1);
        PUMP(&x.a, &x.b);
        side_expect_cqe(sa, 0xa4, PVRDMA_WC_REM_INV_REQ_ERR, PVRDMA_WC_SEND,
                        0);
        side_expect_cqe(sb, 0xb4, PVRDMA_WC_REM_INV_REQ_ERR, PVRDMA_WC_RECV,
                        0);
        g_assert_cmpuint(qp_state(sa), ==, PVRDMA_QPS_ERR);
        g_assert_cmpuint(qp_state(sb), ==, PVRDMA_QPS_ERR);
    }
    x_fini(&x);
}

static void test_write(void)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    uint8_t data[6000], got[6000];
    struct pvrdma_sge g, r;
    struct pvrdma_cqe e;

    x_setup(&x, 7);
    fill_pattern(data, sizeof(data), 2);
    mr_fill(&x.b.d, &sb->mr, 0x11);
    mr_write(&x.a.d, &sa->mr, S_IOVA + 700, data, sizeof(data));
    g = mr_sge(sa, 700, 6000);
    rdma_wqe(sa, 0xa1, PVRDMA_WR_RDMA_WRITE, &g, 1, S_IOVA + 300,
             sb->mr.rkey, 0);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE, 6000);
    expect_cq_empty(&x.b.d, &sb->cq);   /* no receive consumed */
    mr_read(&x.b.d, &sb->mr, S_IOVA + 300, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));
    g_assert_cmphex(*mr_byte(&x.b.d, &sb->mr, S_IOVA + 299), ==, 0x11);
    g_assert_cmphex(*mr_byte(&x.b.d, &sb->mr, S_IOVA + 6300), ==, 0x11);

    /* WRITE_WITH_IMM consumes a receive; byte_len is the write's */
    r = mr_sge(sb, 0, 16);
    post_recv(&x.b.d, &sb->qp, 0xb1, &r, 1);
    g.length = 100;
    rdma_wqe(sa, 0xa2, PVRDMA_WR_RDMA_WRITE_WITH_IMM, &g, 1, S_IOVA + 10000,
             sb->mr.rkey, 0xdeadbeef);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa2, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE, 100);
    g_assert_true(poll_cq(&x.b.d, &sb->cq, &e));
    g_assert_cmphex(e.wr_id, ==, 0xb1);
    g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
    g_assert_cmpuint(e.opcode, ==, PVRDMA_WC_RECV_RDMA_WITH_IMM);
    g_assert_cmpuint(e.byte_len, ==, 100);
    g_assert_cmphex(e.imm_data, ==, 0xdeadbeef);
    g_assert_cmpuint(e.src_qp, ==, sa->qp.qpn);
    mr_read(&x.b.d, &sb->mr, S_IOVA + 10000, got, 100);
    g_assert_cmpmem(got, 100, data, 100);

    x_fini(&x);
}

/*
 * A burst through a nearly full socket (no rings): the requester queues
 * what does not fit and sends it when the peer has read; all complete, in
 * order, every write landed.  (A full ring: test_ring_backlog().)
 */
static void burst_run_features(uint32_t ring_size, unsigned n, uint64_t fa,
                               uint64_t fb)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    uint8_t data[15 * 300], got[300];
    FhWatch *w;
    int sz = 1;

    g_assert_cmpuint(n * 300, <=, sizeof(data));
    g_ring_size = ring_size;
    x_setup_features(&x, 7, fa, fb);
    g_ring_size = CR_RING_SIZE;
    g_assert_cmphex(pvrdma_coresident_peer_features(x.a.t, 0), ==, fa & fb);
    g_assert_cmphex(pvrdma_coresident_peer_features(x.b.t, 0), ==, fa & fb);
    /* without the feature on either side, no rings: as ring_size 0 */
    if (!(fa & fb & CR_F_RINGS)) {
        ring_size = 0;
    }
    fill_pattern(data, sizeof(data), 3);
    mr_write(&x.a.d, &sa->mr, S_IOVA + 700, data, sizeof(data));
    w = peer_watch(&x.a);
    g_assert_nonnull(w);
    if (!ring_size) {
        g_assert_cmpint(setsockopt(w->fd, SOL_SOCKET, SO_SNDBUF, &sz,
                                   sizeof(sz)), ==, 0);
    }
    for (unsigned i = 0; i < n; i++) {
        struct pvrdma_sq_wqe_hdr h = { 0 };
        struct pvrdma_sge s = mr_sge(sa, 700 + i * 300, 300);

        h.wr_id = 0x100 + i;
        h.opcode = PVRDMA_WR_RDMA_WRITE;
        h.send_flags = PVRDMA_SEND_SIGNALED;
        h.wr.rdma.remote_addr = S_IOVA + 40000 - i * 300;
        h.wr.rdma.rkey = sb->mr.rkey;
        put_send(&x.a.d, &sa->qp, &h, &s, 1);
        /* one run's requests share a datagram or record: one run each */
        ring_send(&x.a.d, &sa->qp);
        PUMP(&x.a);
    }
    if (!ring_size) {
        w = peer_watch(&x.a);
        g_assert_nonnull(w);
        g_assert_nonnull(w->write);     /* waiting for room in the socket */
    }
    expect_cq_empty(&x.a.d, &sa->cq);
    PUMP(&x.a, &x.b);
    g_assert_null(peer_watch(&x.a)->write);
    for (unsigned i = 0; i < n; i++) {
        side_expect_cqe(sa, 0x100 + i, PVRDMA_WC_SUCCESS,
                        PVRDMA_WC_RDMA_WRITE, 300);
        mr_read(&x.b.d, &sb->mr, S_IOVA + 40000 - i * 300, got, 300);
        g_assert_cmpmem(got, 300, data + i * 300, 300);
    }
    x_fini(&x);
}

static void burst_run(uint32_t ring_size, unsigned n)
{
    burst_run_features(ring_size, n, CR_F_ALL, CR_F_ALL);
}

static void test_burst_socket(void)
{
    burst_run(0, 15);
}

/* The same through the rings: nothing queues, the same order and data. */
static void test_burst_ring(void)
{
    burst_run(CR_RING_SIZE, 15);
}

/*
 * Two builds, one without the rings (CR_F_RINGS): the connection stays on
 * the socket whichever side lacks them (b connected: it would make the
 * rings), with both offering ring memory; the same order and data.  The
 * other feature is used as both offer it.
 */
static void test_features_no_rings(void)
{
    burst_run_features(CR_RING_SIZE, 15, CR_F_OFFER, CR_F_ALL);
    burst_run_features(CR_RING_SIZE, 15, CR_F_ALL, CR_F_OFFER);
    burst_run_features(CR_RING_SIZE, 15, 0, 0);
    /* what both have: the rings */
    burst_run_features(CR_RING_SIZE, 15, CR_F_RINGS, CR_F_ALL);
}

static void test_read(void)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    uint8_t data[9000], got[9000];
    struct pvrdma_sge g[3];

    x_setup(&x, 7);
    fill_pattern(data, sizeof(data), 3);
    mr_write(&x.b.d, &sb->mr, S_IOVA + 4000, data, sizeof(data));
    mr_fill(&x.a.d, &sa->mr, 0);
    g[0] = mr_sge(sa, 8000, 4000);
    g[1] = mr_sge(sa, 0, 1);
    g[2] = mr_sge(sa, 1, 4999);
    rdma_wqe(sa, 0xa1, PVRDMA_WR_RDMA_READ, g, 3, S_IOVA + 4000,
             sb->mr.rkey, 0);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_READ, 9000);
    mr_read(&x.a.d, &sa->mr, S_IOVA + 8000, got, 4000);
    mr_read(&x.a.d, &sa->mr, S_IOVA, got + 4000, 5000);
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));
    g_assert_cmpuint(*mr_byte(&x.a.d, &sa->mr, S_IOVA + 12000), ==, 0);
    x_fini(&x);
}

/* Is the page of side's MR holding S_IOVA + off reported dirty? */
static bool side_dirty(Side *s, uint64_t off)
{
    uint64_t page0 = s->mr.iova & ~(uint64_t)(FH_PAGE - 1);
    uint64_t va = S_IOVA + off;

    return fh_dirty_page(&s->v->d.h, s->mr.pages[(va - page0) / FH_PAGE]);
}

/*
 * A READ and an atomic the peer executes write this VM's memory through
 * the peer's mapping, which this QEMU's dirty logging cannot see: when the
 * peer answers, the requester reports its buffers dirty (for a
 * migration's RAM passes).  A SEND or WRITE the peer receives is written
 * by the peer's device into its own memory, which reports it there.
 */
static void test_dirty(void)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    struct pvrdma_sge g;
    struct pvrdma_sq_wqe_hdr w = { 0 };

    x_setup(&x, 7);
    fh_dirty_clear(&x.a.d.h);
    fh_dirty_clear(&x.b.d.h);
    g = mr_sge(sa, 2 * FH_PAGE + 100, 3000);
    rdma_wqe(sa, 0xa1, PVRDMA_WR_RDMA_READ, &g, 1, S_IOVA, sb->mr.rkey, 0);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_READ, 3000);
    g_assert_true(side_dirty(sa, 2 * FH_PAGE + 100));
    g_assert_true(side_dirty(sa, 2 * FH_PAGE + 3099));
    g_assert_false(side_dirty(sa, 0));
    g_assert_false(side_dirty(sb, 0));      /* only read there */

    /* fetch-and-add: the local result word at the requester */
    fh_dirty_clear(&x.a.d.h);
    g = mr_sge(sa, 5 * FH_PAGE, 8);
    w.wr_id = 0xa2;
    w.opcode = PVRDMA_WR_ATOMIC_FETCH_AND_ADD;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.wr.atomic.remote_addr = S_IOVA + 3 * FH_PAGE;
    w.wr.atomic.compare_add = 1;
    w.wr.atomic.rkey = sb->mr.rkey;
    post_send(&x.a.d, &sa->qp, &w, &g, 1);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa2, PVRDMA_WC_SUCCESS, PVRDMA_WC_FETCH_ADD, 8);
    g_assert_true(side_dirty(sa, 5 * FH_PAGE));
    g_assert_true(side_dirty(sb, 3 * FH_PAGE));     /* its device wrote it */

    /* RDMA WRITE: the target, reported by the device that wrote it */
    fh_dirty_clear(&x.a.d.h);
    fh_dirty_clear(&x.b.d.h);
    g = mr_sge(sa, 0, 5000);
    rdma_wqe(sa, 0xa3, PVRDMA_WR_RDMA_WRITE, &g, 1, S_IOVA + 6 * FH_PAGE,
             sb->mr.rkey, 0);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa3, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE, 5000);
    g_assert_true(side_dirty(sb, 6 * FH_PAGE));
    g_assert_true(side_dirty(sb, 6 * FH_PAGE + 4999));
    g_assert_false(side_dirty(sa, 0));
    x_fini(&x);
}

static void test_atomics(void)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    const uint64_t raddr = S_IOVA + 0x100;
    struct pvrdma_sge g;
    struct pvrdma_sq_wqe_hdr w = { 0 };
    uint64_t v = 100, r;

    x_setup(&x, 7);
    mr_write(&x.b.d, &sb->mr, raddr, &v, 8);
    g = mr_sge(sa, 8, 8);
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.wr.atomic.remote_addr = raddr;
    w.wr.atomic.rkey = sb->mr.rkey;

    /* fetch-add 5: remote 105, local gets 100 */
    w.wr_id = 1;
    w.opcode = PVRDMA_WR_ATOMIC_FETCH_AND_ADD;
    w.wr.atomic.compare_add = 5;
    post_send(&x.a.d, &sa->qp, &w, &g, 1);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 1, PVRDMA_WC_SUCCESS, PVRDMA_WC_FETCH_ADD, 8);
    mr_read(&x.b.d, &sb->mr, raddr, &r, 8);
    g_assert_cmpuint(r, ==, 105);
    mr_read(&x.a.d, &sa->mr, S_IOVA + 8, &r, 8);
    g_assert_cmpuint(r, ==, 100);

    /* compare-swap that matches, then one that does not */
    w.wr_id = 2;
    w.opcode = PVRDMA_WR_ATOMIC_CMP_AND_SWP;
    w.wr.atomic.compare_add = 105;
    w.wr.atomic.swap = 7;
    post_send(&x.a.d, &sa->qp, &w, &g, 1);
    g.addr = S_IOVA + 16;
    w.wr_id = 3;
    w.wr.atomic.compare_add = 1;
    w.wr.atomic.swap = 9;
    post_send(&x.a.d, &sa->qp, &w, &g, 1);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 2, PVRDMA_WC_SUCCESS, PVRDMA_WC_COMP_SWAP, 8);
    side_expect_cqe(sa, 3, PVRDMA_WC_SUCCESS, PVRDMA_WC_COMP_SWAP, 8);
    mr_read(&x.b.d, &sb->mr, raddr, &r, 8);
    g_assert_cmpuint(r, ==, 7);
    mr_read(&x.a.d, &sa->mr, S_IOVA + 8, &r, 8);
    g_assert_cmpuint(r, ==, 105);
    mr_read(&x.a.d, &sa->mr, S_IOVA + 16, &r, 8);
    g_assert_cmpuint(r, ==, 7);

    /* the other way round: b adds to a's memory */
    v = 1000;
    mr_write(&x.a.d, &sa->mr, S_IOVA + 64, &v, 8);
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xb1;
    w.opcode = PVRDMA_WR_ATOMIC_FETCH_AND_ADD;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.wr.atomic.remote_addr = S_IOVA + 64;
    w.wr.atomic.rkey = sa->mr.rkey;
    w.wr.atomic.compare_add = (uint64_t)-1;
    g = mr_sge(sb, 0, 8);
    post_send(&x.b.d, &sb->qp, &w, &g, 1);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sb, 0xb1, PVRDMA_WC_SUCCESS, PVRDMA_WC_FETCH_ADD, 8);
    mr_read(&x.a.d, &sa->mr, S_IOVA + 64, &r, 8);
    g_assert_cmpuint(r, ==, 999);
    mr_read(&x.b.d, &sb->mr, S_IOVA, &r, 8);
    g_assert_cmpuint(r, ==, 1000);

    /* misaligned remote address: remote access error, both QPs in error */
    memset(&w, 0, sizeof(w));
    w.wr_id = 4;
    w.opcode = PVRDMA_WR_ATOMIC_FETCH_AND_ADD;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.wr.atomic.remote_addr = raddr + 4;
    w.wr.atomic.rkey = sb->mr.rkey;
    g = mr_sge(sa, 8, 8);
    post_send(&x.a.d, &sa->qp, &w, &g, 1);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 4, PVRDMA_WC_REM_ACCESS_ERR, PVRDMA_WC_FETCH_ADD, 0);
    g_assert_cmpuint(qp_state(sa), ==, PVRDMA_QPS_ERR);
    g_assert_cmpuint(qp_state(sb), ==, PVRDMA_QPS_ERR);
    mr_read(&x.b.d, &sb->mr, raddr, &r, 8);
    g_assert_cmpuint(r, ==, 7);
    x_fini(&x);
}

/*
 * A DMA MR on the requester: its SGEs are guest physical addresses, mapped
 * for the request and unmapped when the core hands it over; the peer still
 * finds the bytes (SEND) and its READ lands there.
 */
static void test_dma_mr(void)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    union pvrdma_cmd_req req = { 0 };
    union pvrdma_cmd_resp rsp;
    struct pvrdma_sge g, r;
    uint8_t data[6000], got[6000];
    uint64_t buf;
    unsigned maps;

    x_setup(&x, 7);
    req.create_mr.pd_handle = sa->pd;
    req.create_mr.flags = PVRDMA_MR_FLAG_DMA;
    req.create_mr.access_flags = PVRDMA_ACCESS_LOCAL_WRITE;
    g_assert_cmpuint(dev_cmd(&x.a.d, &req, PVRDMA_CMD_CREATE_MR, &rsp), ==, 0);
    buf = fh_alloc(&x.a.d.h, 4);
    fill_pattern(data, sizeof(data), 11);
    memcpy((uint8_t *)fh_ptr(&x.a.d.h, buf) + 1000, data, sizeof(data));
    maps = fh_outstanding(&x.a.d.h);

    r = mr_sge(sb, 0, 8000);
    post_recv(&x.b.d, &sb->qp, 0xb1, &r, 1);
    g = (struct pvrdma_sge) { buf + 1000, sizeof(data),
                              rsp.create_mr_resp.lkey };
    send_wqe(sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    g_assert_cmpuint(fh_outstanding(&x.a.d.h), ==, maps);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 6000);
    side_expect_cqe(sb, 0xb1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 6000);
    mr_read(&x.b.d, &sb->mr, S_IOVA, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));

    fill_pattern(data, sizeof(data), 12);
    mr_write(&x.b.d, &sb->mr, S_IOVA + 10, data, sizeof(data));
    g.addr = buf + 7000;
    rdma_wqe(sa, 0xa2, PVRDMA_WR_RDMA_READ, &g, 1, S_IOVA + 10, sb->mr.rkey,
             0);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa2, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_READ, 6000);
    g_assert_cmpmem((uint8_t *)fh_ptr(&x.a.d.h, buf) + 7000, sizeof(data),
                    data, sizeof(data));
    g_assert_cmpuint(fh_outstanding(&x.a.d.h), ==, maps);
    g_assert_cmpuint(x.a.d.h.bad_unmaps, ==, 0);
    x_fini(&x);
}

/* An MR of npages guest pages laid out by 'stride' (runs of 'run' pages). */
typedef struct BigMr {
    uint32_t handle, lkey, rkey;
    uint64_t iova;
    uint32_t npages;
    uint64_t *pages;
} BigMr;

static void big_mr(Dev *d, BigMr *mr, uint32_t pd, uint64_t iova,
                   uint32_t npages, uint32_t run)
{
    union pvrdma_cmd_req req = { 0 };
    union pvrdma_cmd_resp rsp;

    mr->iova = iova;
    mr->npages = npages;
    mr->pages = g_new(uint64_t, npages);
    for (uint32_t i = 0; i < npages; i++) {
        mr->pages[i] = fh_alloc(&d->h, 1);
        if (i % run == run - 1) {
            fh_skip(&d->h, 1);
        }
    }
    req.create_mr.start = iova;
    req.create_mr.length = (uint64_t)npages * FH_PAGE;
    req.create_mr.pdir_dma = fh_make_pdir(&d->h, mr->pages, npages);
    req.create_mr.pd_handle = pd;
    req.create_mr.access_flags = CR_MR_ACCESS;
    req.create_mr.nchunks = npages;
    g_assert_cmpuint(dev_cmd(d, &req, PVRDMA_CMD_CREATE_MR, &rsp), ==, 0);
    mr->handle = rsp.create_mr_resp.mr_handle;
    mr->lkey = rsp.create_mr_resp.lkey;
    mr->rkey = rsp.create_mr_resp.rkey;
}

static void big_fill(Dev *d, BigMr *mr, uint32_t seed)
{
    for (uint32_t i = 0; i < mr->npages; i++) {
        fill_pattern(fh_ptr(&d->h, mr->pages[i]), FH_PAGE, seed + i);
    }
}

/* Does every page of mr on d hold what every page of src on s holds? */
static bool big_equal(Dev *d, BigMr *mr, Dev *s, BigMr *src)
{
    g_assert_cmpuint(mr->npages, ==, src->npages);
    for (uint32_t i = 0; i < mr->npages; i++) {
        if (memcmp(fh_ptr(&d->h, mr->pages[i]), fh_ptr(&s->h, src->pages[i]),
                   FH_PAGE)) {
            g_test_message("page %u differs", i);
            return false;
        }
    }
    return true;
}

/*
 * One message over thousands of discontiguous pages: the request carries
 * one (region, offset, length) entry per page, more than a REQ holds, so
 * it continues in MORE messages (two of them here).
 */
static void test_many_sg(void)
{
    const uint32_t npages = 6000;
    const uint64_t len = (uint64_t)npages * FH_PAGE;
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    BigMr ma, mb;
    struct pvrdma_sge g;

    g_assert_cmpuint(npages, >, CR_REQ_SG_MAX + CR_MORE_SG_MAX);
    x_setup(&x, 7);
    big_mr(&x.a.d, &ma, sa->pd, 0x10000000, npages, 1);    /* all apart */
    big_mr(&x.b.d, &mb, sb->pd, 0x20000000, npages, 3);    /* runs of 3 */
    big_fill(&x.a.d, &ma, 1000);

    /* SEND: a's list goes to b, b copies into its receive buffer */
    g = (struct pvrdma_sge) { mb.iova, len, mb.lkey };
    post_recv(&x.b.d, &sb->qp, 0xb1, &g, 1);
    g = (struct pvrdma_sge) { ma.iova, len, ma.lkey };
    send_wqe(sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, len);
    side_expect_cqe(sb, 0xb1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, len);
    g_assert_true(big_equal(&x.b.d, &mb, &x.a.d, &ma));

    /* READ: b copies its MR into a's discontiguous pages */
    big_fill(&x.b.d, &mb, 50000);
    rdma_wqe(sa, 0xa2, PVRDMA_WR_RDMA_READ, &g, 1, mb.iova, mb.rkey, 0);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa2, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_READ, len);
    g_assert_true(big_equal(&x.a.d, &ma, &x.b.d, &mb));

    /* WRITE of all but the first and last 100 bytes, at an offset */
    big_fill(&x.a.d, &ma, 90000);
    g = (struct pvrdma_sge) { ma.iova + 100, len - 200, ma.lkey };
    rdma_wqe(sa, 0xa3, PVRDMA_WR_RDMA_WRITE, &g, 1, mb.iova + 100, mb.rkey, 0);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa3, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE,
                    len - 200);
    g_assert_cmpmem((uint8_t *)fh_ptr(&x.b.d.h, mb.pages[0]) + 100,
                    FH_PAGE - 100,
                    (uint8_t *)fh_ptr(&x.a.d.h, ma.pages[0]) + 100,
                    FH_PAGE - 100);
    g_assert_cmpmem(fh_ptr(&x.b.d.h, mb.pages[npages / 2]), FH_PAGE,
                    fh_ptr(&x.a.d.h, ma.pages[npages / 2]), FH_PAGE);
    g_assert_cmpmem(fh_ptr(&x.b.d.h, mb.pages[npages - 1]), FH_PAGE - 100,
                    fh_ptr(&x.a.d.h, ma.pages[npages - 1]), FH_PAGE - 100);
    /* the 100 bytes at each end kept the READ's data */
    {
        uint8_t want[100];

        fill_pattern(want, 100, 50000);
        g_assert_cmpmem(fh_ptr(&x.b.d.h, mb.pages[0]), 100, want, 100);
    }
    g_free(ma.pages);
    g_free(mb.pages);
    x_fini(&x);
}

static void ud_to_rts(Dev *d, TQp *q, uint32_t qkey)
{
    struct pvrdma_qp_attr at = { 0 };

    at.qp_state = PVRDMA_QPS_INIT;
    at.port_num = 1;
    at.qkey = qkey;
    g_assert_cmpuint(modify_qp(d, q, PVRDMA_QP_STATE | PVRDMA_QP_PKEY_INDEX |
                               PVRDMA_QP_PORT | PVRDMA_QP_QKEY, &at), ==, 0);
    at.qp_state = PVRDMA_QPS_RTR;
    g_assert_cmpuint(modify_qp(d, q, PVRDMA_QP_STATE, &at), ==, 0);
    at.qp_state = PVRDMA_QPS_RTS;
    g_assert_cmpuint(modify_qp(d, q, PVRDMA_QP_STATE | PVRDMA_QP_SQ_PSN, &at),
                     ==, 0);
}

static void ud_send(Side *s, uint64_t wr_id, const struct pvrdma_sge *g,
                    uint32_t qpn, uint32_t qkey, const uint8_t dgid[16])
{
    struct pvrdma_sq_wqe_hdr w = { 0 };

    w.wr_id = wr_id;
    w.opcode = PVRDMA_WR_SEND;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.wr.ud.remote_qpn = qpn;
    w.wr.ud.remote_qkey = qkey;
    memcpy(w.wr.ud.av.dgid, dgid, 16);
    post_send(&s->v->d, &s->qp, &w, g, 1);
}

/* UD across: the receiver gets a GRH naming both ends, then the payload. */
static void test_ud(void)
{
    Env e;
    Vm a, b;
    Side sa, sb;
    struct pvrdma_sge g, r;
    struct pvrdma_cqe c;
    uint8_t data[300], got[340], nobody[16];

    env_init(&e);
    vm_init(&a, e.dir, 1);
    vm_init(&b, e.dir, 2);
    vm_up(&a);
    vm_up(&b);
    side_init(&sa, &a, PVRDMA_QPT_UD);
    side_init(&sb, &b, PVRDMA_QPT_UD);
    ud_to_rts(&a.d, &sa.qp, 0x1111);
    ud_to_rts(&b.d, &sb.qp, 0x1111);
    PUMP(&a, &b);

    fill_pattern(data, sizeof(data), 4);
    mr_write(&a.d, &sa.mr, S_IOVA, data, sizeof(data));
    mr_fill(&b.d, &sb.mr, 0xee);
    r = mr_sge(&sb, FH_PAGE - 20, 400);
    post_recv(&b.d, &sb.qp, 0xb1, &r, 1);
    g = mr_sge(&sa, 0, sizeof(data));
    ud_send(&sa, 0xa1, &g, sb.qp.qpn, 0x1111, b.gid);
    /* wrong qkey, unknown QP, unknown GID: lost, the sender succeeds */
    ud_send(&sa, 0xa2, &g, sb.qp.qpn, 0x2222, b.gid);
    ud_send(&sa, 0xa3, &g, sb.qp.qpn + 100, 0x1111, b.gid);
    make_gid(nobody, 10, 99);
    ud_send(&sa, 0xa4, &g, sb.qp.qpn, 0x1111, nobody);
    PUMP(&a, &b);
    side_expect_cqe(&sa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 300);
    side_expect_cqe(&sa, 0xa2, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 300);
    side_expect_cqe(&sa, 0xa3, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 300);
    side_expect_cqe(&sa, 0xa4, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 300);
    g_assert_true(poll_cq(&b.d, &sb.cq, &c));
    g_assert_cmphex(c.wr_id, ==, 0xb1);
    g_assert_cmpuint(c.status, ==, PVRDMA_WC_SUCCESS);
    g_assert_cmpuint(c.opcode, ==, PVRDMA_WC_RECV);
    g_assert_cmpuint(c.byte_len, ==, 340);     /* GRH + payload */
    g_assert_true(c.wc_flags & PVRDMA_WC_GRH);
    g_assert_cmpuint(c.src_qp, ==, sa.qp.qpn);
    g_assert_cmpuint(c.qp, ==, sb.qp.handle);
    g_assert_cmpmem(c.smac, 6, a.d.h.mac, 6);
    expect_cq_empty(&b.d, &sb.cq);
    mr_read(&b.d, &sb.mr, S_IOVA + FH_PAGE - 20, got, sizeof(got));
    g_assert_cmpmem(got + 40, 300, data, 300);
    /* RoCEv2 over IPv4: an IPv4 header in the GRH's last 20 bytes */
    g_assert_cmphex(got[20], ==, 0x45);
    g_assert_cmpuint(got[29], ==, 17);                  /* UDP */
    g_assert_cmpmem(got + 32, 4, a.gid + 12, 4);        /* source */
    g_assert_cmpmem(got + 36, 4, b.gid + 12, 4);        /* destination */
    g_assert_cmphex(*mr_byte(&b.d, &sb.mr, S_IOVA + FH_PAGE - 21), ==, 0xee);
    g_assert_cmphex(*mr_byte(&b.d, &sb.mr, S_IOVA + FH_PAGE + 320), ==, 0xee);

    /* no receive posted: a UD datagram is dropped, not held (no RNR) */
    ud_send(&sa, 0xa5, &g, sb.qp.qpn, 0x1111, b.gid);
    PUMP(&a, &b);
    side_expect_cqe(&sa, 0xa5, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 300);
    post_recv(&b.d, &sb.qp, 0xb2, &r, 1);
    PUMP(&a, &b);
    expect_cq_empty(&b.d, &sb.cq);

    /* and back, b to a */
    r = mr_sge(&sa, 8192, 400);
    post_recv(&a.d, &sa.qp, 0xa9, &r, 1);
    g = mr_sge(&sb, FH_PAGE + 20, 300);
    ud_send(&sb, 0xb9, &g, sa.qp.qpn, 0x1111, a.gid);
    PUMP(&a, &b);
    side_expect_cqe(&sb, 0xb9, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 300);
    side_expect_cqe(&sa, 0xa9, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 340);
    mr_read(&a.d, &sa.mr, S_IOVA + 8192, got, sizeof(got));
    g_assert_cmpmem(got + 32, 4, b.gid + 12, 4);
    g_assert_cmpmem(got + 40, 300, data, 300);

    expect_cq_empty(&a.d, &sa.cq);
    expect_cq_empty(&b.d, &sb.cq);
    vm_fini(&a);
    vm_fini(&b);
    env_fini(&e);
}

void cr_add_data_tests(void)
{
    g_test_add_func("/pvrdma/cr/send", test_send);
    g_test_add_func("/pvrdma/cr/write", test_write);
    g_test_add_func("/pvrdma/cr/dirty", test_dirty);
    g_test_add_func("/pvrdma/cr/burst-socket", test_burst_socket);
    g_test_add_func("/pvrdma/cr/burst-ring", test_burst_ring);
    g_test_add_func("/pvrdma/cr/features/no-rings", test_features_no_rings);
    g_test_add_func("/pvrdma/cr/read", test_read);
    g_test_add_func("/pvrdma/cr/atomics", test_atomics);
    g_test_add_func("/pvrdma/cr/dma-mr", test_dma_mr);
    g_test_add_func("/pvrdma/cr/many-sg", test_many_sg);
    g_test_add_func("/pvrdma/cr/ud", test_ud);
}
