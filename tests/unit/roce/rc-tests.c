/*
 * Tests of the RoCEv2 transport: RC SEND, WRITE, READ and atomics, data
 * compared byte for byte.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "roce/rt.h"

static void test_rc_send(void)
{
    static const uint32_t size[] = { 0, 1, 1024, 1025, 64 * KIB };
    const unsigned ns = G_N_ELEMENTS(size);
    Rc r;
    Net *n = &r.n;
    uint8_t *data[G_N_ELEMENTS(size)];
    PvrdmaPathStats sa, sb, qs;
    uint64_t src = 0, dst = 0, soff[G_N_ELEMENTS(size)];
    uint64_t doff[G_N_ELEMENTS(size)];

    rc_setup(&r, NULL, 1024 * KIB, 1);
    for (unsigned i = 0; i < ns; i++) {
        data[i] = pattern(size[i], 100 + i);
        soff[i] = src;
        doff[i] = dst;
        ep_put(&r.a, src, data[i], size[i]);
        buf_fill(ep_dev(&r.b), &r.b.mr, dst, size[i] + 64, 0xcc);
        src += size[i] + 7;
        dst += size[i] + 4096 + 64;
        /* room for more than the message */
        wr_recv(&r.b, 0xb00 + i, doff[i], size[i] + 4096);
    }
    for (unsigned i = 0; i < ns; i++) {
        struct pvrdma_sge s = ep_sge(&r.a, soff[i], size[i]);

        wr_send(&r.a, 0xa00 + i, PVRDMA_WR_SEND, 0, &s, size[i] ? 1 : 0);
    }
    WAIT_CQES(n, 10000, &r.a, ns, &r.b, ns);
    for (unsigned i = 0; i < ns; i++) {
        ep_expect(&r.a, 0xa00 + i, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND,
                  size[i]);
        ep_expect_recv(&r.b, 0xb00 + i, PVRDMA_WC_RECV, size[i],
                       r.a.qp.qpn);
        ep_check(&r.b, doff[i], data[i], size[i]);
        g_assert_cmphex(ep_byte(&r.b, doff[i] + size[i]), ==, 0xcc);
    }

    /* segmentation at the path MTU (1024) */
    g_assert_cmpuint(ops(n, 0, ROCE_RC_SEND_ONLY), ==, 3);
    g_assert_cmpuint(ops(n, 0, ROCE_RC_SEND_FIRST), ==, 2);
    g_assert_cmpuint(ops(n, 0, ROCE_RC_SEND_MIDDLE), ==, 62);
    g_assert_cmpuint(ops(n, 0, ROCE_RC_SEND_LAST), ==, 2);
    g_assert_cmpuint(psn_sent(n, 0, rc_default.psn_a), ==, 1);
    g_assert_cmpuint(psn_sent(n, 0, rc_default.psn_a + 68), ==, 1);
    g_assert_cmpuint(psn_sent(n, 0, rc_default.psn_a + 69), ==, 0);

    /* SEND_WITH_IMM, two SGEs each side; the immediate passes through */
    {
        struct pvrdma_sge gs[2], gr[2];
        uint8_t *d2 = pattern(3000, 7);
        struct pvrdma_cqe c;

        ep_put(&r.a, 200000, d2, 1000);
        ep_put(&r.a, 300000, d2 + 1000, 2000);
        gs[0] = ep_sge(&r.a, 200000, 1000);
        gs[1] = ep_sge(&r.a, 300000, 2000);
        gr[0] = ep_sge(&r.b, 400000, 1500);
        gr[1] = ep_sge(&r.b, 500000, 4000);
        post_recv(ep_dev(&r.b), &r.b.qp, 0xb10, gr, 2);
        wr_send(&r.a, 0xa10, PVRDMA_WR_SEND_WITH_IMM, 0x11223344, gs, 2);
        WAIT_CQES(n, 10000, &r.a, 1, &r.b, 1);
        ep_expect(&r.a, 0xa10, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 3000);
        c = ep_expect_recv(&r.b, 0xb10, PVRDMA_WC_RECV, 3000, r.a.qp.qpn);
        g_assert_true(c.wc_flags & PVRDMA_WC_WITH_IMM);
        g_assert_cmphex(c.imm_data, ==, 0x11223344);
        ep_check(&r.b, 400000, d2, 1500);
        ep_check(&r.b, 500000, d2 + 1500, 1500);
        g_free(d2);
    }

    g_assert_true(net_settle(n));
    sa = stats(&r.n.node[0]);
    sb = stats(&r.n.node[1]);
    /* a clean wire: nothing sent twice, nothing dropped */
    g_assert_cmpuint(sa.retransmits, ==, 0);
    g_assert_cmpuint(sa.timeouts, ==, 0);
    g_assert_cmpuint(sa.seq_naks, ==, 0);
    g_assert_cmpuint(sa.rnr_naks, ==, 0);
    g_assert_cmpuint(sb.dups, ==, 0);
    g_assert_cmpuint(sa.drops + sb.drops, ==, 0);
    g_assert_cmpuint(n->dir[0].resent, ==, 0);
    g_assert_cmpuint(n->dir[1].aeth_nak + n->dir[1].aeth_rnr, ==, 0);
    g_assert_cmpuint(n->dir[1].aeth_ack, >=, 1);
    g_assert_cmpuint(sa.tx_pkts, ==, n->dir[0].frames);
    g_assert_cmpuint(sb.tx_pkts, ==, n->dir[1].frames);
    g_assert_cmpuint(sb.rx_pkts, ==, n->dir[0].frames);
    g_assert_cmpuint(sa.rx_pkts, ==, n->dir[1].frames);
    g_assert_true(pvrdma_roce_qp_stats(r.n.node[0].t, ep_qp(&r.a), &qs));
    g_assert_cmpuint(qs.tx_pkts, ==, n->dir[0].frames);

    /*
     * One packet in the middle of a 64 KiB SEND is lost: the responder's
     * sequence NAK makes the requester go back to it, no timeout.
     */
    n->dir[0].drop_nth[n->dir[0].ndrop_nth++] = n->dir[0].frames + 10;
    wr_recv(&r.b, 0xb20, 0, 64 * KIB);
    {
        struct pvrdma_sge s = ep_sge(&r.a, soff[4], 64 * KIB);

        wr_send(&r.a, 0xa20, PVRDMA_WR_SEND, 0, &s, 1);
    }
    WAIT_CQES(n, 10000, &r.a, 1, &r.b, 1);
    ep_expect(&r.a, 0xa20, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 64 * KIB);
    ep_expect_recv(&r.b, 0xb20, PVRDMA_WC_RECV, 64 * KIB, r.a.qp.qpn);
    ep_check(&r.b, 0, data[4], 64 * KIB);
    g_assert_true(net_settle(n));
    g_assert_cmpuint(n->dir[0].dropped, ==, 1);
    sa = stats(&r.n.node[0]);
    g_assert_cmpuint(sa.seq_naks, ==, 1);
    g_assert_cmpuint(sa.timeouts, ==, 0);
    g_assert_cmpuint(sa.retransmits, >=, 1);
    g_assert_cmpuint(n->dir[1].nak_code[ROCE_NAK_PSN_SEQ_ERR], ==, 1);
    for (unsigned i = 0; i < ns; i++) {
        g_free(data[i]);
    }
    rc_fini(&r);
}

/* A message across the end of the 24-bit PSN space, both directions. */
static void test_rc_psn_wrap(void)
{
    RcOpts o = rc_default;
    Rc r;
    uint8_t *d = pattern(64 * KIB, 9), *e = pattern(64 * KIB, 10);

    o.psn_a = 0xfffff0;
    o.psn_b = 0xffffff;
    rc_setup(&r, &o, 512 * KIB, 2);
    ep_put(&r.a, 0, d, 64 * KIB);
    ep_put(&r.b, 256 * KIB, e, 64 * KIB);
    wr_recv(&r.b, 0xb1, 0, 64 * KIB);
    {
        struct pvrdma_sge s = ep_sge(&r.a, 0, 64 * KIB);

        wr_send(&r.a, 0xa1, PVRDMA_WR_SEND, 0, &s, 1);
    }
    {
        struct pvrdma_sge s = ep_sge(&r.b, 128 * KIB, 64 * KIB);

        wr_rdma(&r.b, 0xb2, PVRDMA_WR_RDMA_READ, &s, 1, ep_va(&r.a, 0),
                r.a.mr.rkey, 0);
        /* and a write after it */
        s = ep_sge(&r.b, 256 * KIB, 64 * KIB);
        wr_rdma(&r.b, 0xb3, PVRDMA_WR_RDMA_WRITE, &s, 1,
                ep_va(&r.a, 256 * KIB), r.a.mr.rkey, 0);
    }
    WAIT_CQES(&r.n, 10000, &r.a, 1, &r.b, 3);
    ep_expect(&r.a, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 64 * KIB);
    ep_expect_recv(&r.b, 0xb1, PVRDMA_WC_RECV, 64 * KIB, r.a.qp.qpn);
    ep_expect(&r.b, 0xb2, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_READ, 64 * KIB);
    ep_expect(&r.b, 0xb3, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE, 64 * KIB);
    ep_check(&r.b, 0, d, 64 * KIB);
    ep_check(&r.b, 128 * KIB, d, 64 * KIB);
    ep_check(&r.a, 256 * KIB, e, 64 * KIB);
    /* A's PSNs 0xfffff0 .. 0x00002f, B's READ 0xffffff .. 0x3e, WRITE */
    g_assert_cmpuint(psn_sent(&r.n, 0, 0xffffff), ==, 1);
    g_assert_cmpuint(psn_sent(&r.n, 0, 0x000000), ==, 1);
    g_assert_cmpuint(psn_sent(&r.n, 0, 0x00002f), ==, 1);
    g_assert_cmpuint(psn_sent(&r.n, 1, 0xffffff), ==, 1);   /* READ */
    g_assert_cmpuint(psn_sent(&r.n, 1, 0x00003f), ==, 1);   /* WRITE_FIRST */
    g_assert_true(net_settle(&r.n));
    g_assert_cmpuint(stats(&r.n.node[0]).retransmits +
                     stats(&r.n.node[1]).retransmits, ==, 0);
    g_free(d);
    g_free(e);
    rc_fini(&r);
}

static void test_rc_write(void)
{
    Rc r;
    Net *n = &r.n;
    uint8_t *d = pattern(64 * KIB, 11), *d2 = pattern(5000, 12);
    struct pvrdma_sge s;
    struct pvrdma_cqe c;

    rc_setup(&r, NULL, 512 * KIB, 3);
    ep_put(&r.a, 0, d, 64 * KIB);
    ep_put(&r.a, 100 * KIB, d2, 5000);
    buf_fill(ep_dev(&r.b), &r.b.mr, 0, 512 * KIB, 0xcc);
    /* one receive: the plain WRITE must not take it, WRITE_WITH_IMM must */
    wr_recv(&r.b, 0xb1, 300 * KIB, 16);

    s = ep_sge(&r.a, 0, 64 * KIB);
    wr_rdma(&r.a, 0xa1, PVRDMA_WR_RDMA_WRITE, &s, 1, ep_va(&r.b, 8),
            r.b.mr.rkey, 0);
    s = ep_sge(&r.a, 100 * KIB, 5000);
    wr_rdma(&r.a, 0xa2, PVRDMA_WR_RDMA_WRITE_WITH_IMM, &s, 1,
            ep_va(&r.b, 200 * KIB + 3), r.b.mr.rkey, 0xa1b2c3d4);
    WAIT_CQES(n, 10000, &r.a, 2, &r.b, 1);
    ep_expect(&r.a, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE, 64 * KIB);
    ep_expect(&r.a, 0xa2, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE, 5000);
    c = ep_expect_recv(&r.b, 0xb1, PVRDMA_WC_RECV_RDMA_WITH_IMM, 5000,
                       r.a.qp.qpn);
    g_assert_true(c.wc_flags & PVRDMA_WC_WITH_IMM);
    g_assert_cmphex(c.imm_data, ==, 0xa1b2c3d4);
    ep_check(&r.b, 8, d, 64 * KIB);
    ep_check(&r.b, 200 * KIB + 3, d2, 5000);
    g_assert_cmphex(ep_byte(&r.b, 7), ==, 0xcc);
    g_assert_cmphex(ep_byte(&r.b, 8 + 64 * KIB), ==, 0xcc);
    g_assert_cmphex(ep_byte(&r.b, 200 * KIB + 2), ==, 0xcc);
    g_assert_cmphex(ep_byte(&r.b, 200 * KIB + 5003), ==, 0xcc);
    g_assert_cmphex(ep_byte(&r.b, 300 * KIB), ==, 0xcc);  /* recv buffer */
    /* 64 + 5 packets; the RETH carries the whole length */
    g_assert_cmpuint(ops(n, 0, ROCE_RC_RDMA_WRITE_FIRST), ==, 2);
    g_assert_cmpuint(ops(n, 0, ROCE_RC_RDMA_WRITE_MIDDLE), ==, 62 + 3);
    g_assert_cmpuint(ops(n, 0, ROCE_RC_RDMA_WRITE_LAST), ==, 1);
    g_assert_cmpuint(ops(n, 0, ROCE_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE), ==,
                     1);
    g_assert_cmpuint(n->dir[0].last_reth_pkt.reth.len, ==, 5000);
    g_assert_cmphex(n->dir[0].last_reth_pkt.reth.va, ==,
                    ep_va(&r.b, 200 * KIB + 3));
    g_assert_cmphex(n->dir[0].last_reth_pkt.reth.rkey, ==, r.b.mr.rkey);

    /* a zero-length WRITE_WITH_IMM and a small WRITE_WITH_IMM (ONLY) */
    wr_recv(&r.b, 0xb2, 300 * KIB, 16);
    wr_recv(&r.b, 0xb3, 300 * KIB, 16);
    wr_rdma(&r.a, 0xa3, PVRDMA_WR_RDMA_WRITE_WITH_IMM, NULL, 0, 0, 0, 0x5);
    s = ep_sge(&r.a, 100 * KIB, 100);
    wr_rdma(&r.a, 0xa4, PVRDMA_WR_RDMA_WRITE_WITH_IMM, &s, 1,
            ep_va(&r.b, 400 * KIB), r.b.mr.rkey, 0x6);
    WAIT_CQES(n, 10000, &r.a, 2, &r.b, 2);
    ep_expect(&r.a, 0xa3, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE, 0);
    ep_expect(&r.a, 0xa4, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE, 100);
    c = ep_expect_recv(&r.b, 0xb2, PVRDMA_WC_RECV_RDMA_WITH_IMM, 0,
                       r.a.qp.qpn);
    g_assert_cmphex(c.imm_data, ==, 0x5);
    c = ep_expect_recv(&r.b, 0xb3, PVRDMA_WC_RECV_RDMA_WITH_IMM, 100,
                       r.a.qp.qpn);
    g_assert_cmphex(c.imm_data, ==, 0x6);
    ep_check(&r.b, 400 * KIB, d2, 100);
    g_assert_cmpuint(ops(n, 0, ROCE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE), ==,
                     2);
    g_assert_true(net_settle(n));
    g_assert_cmpuint(stats(&n->node[0]).retransmits, ==, 0);
    g_free(d);
    g_free(d2);
    rc_fini(&r);
}

static void test_rc_read(void)
{
    Rc r;
    Net *n = &r.n;
    uint8_t *d[4];
    struct pvrdma_sge s;

    rc_setup(&r, NULL, 1024 * KIB, 4);
    for (unsigned i = 0; i < 4; i++) {
        d[i] = pattern(64 * KIB, 20 + i);
        ep_put(&r.b, i * 65 * KIB + 5, d[i], 64 * KIB);
    }
    buf_fill(ep_dev(&r.a), &r.a.mr, 0, 1024 * KIB, 0xcc);
    /* four READs outstanding at once (max_rd_atomic 4) */
    for (unsigned i = 0; i < 4; i++) {
        s = ep_sge(&r.a, 300 * KIB + i * 65 * KIB, 64 * KIB);
        wr_rdma(&r.a, 0xa0 + i, PVRDMA_WR_RDMA_READ, &s, 1,
                ep_va(&r.b, i * 65 * KIB + 5), r.b.mr.rkey, 0);
    }
    /* and a SEND behind them (fence: rc-fence) */
    wr_recv(&r.b, 0xb1, 900 * KIB, 100);
    s = ep_sge(&r.a, 900 * KIB, 100);
    ep_put(&r.a, 900 * KIB, d[3], 100);
    wr_send(&r.a, 0xa9, PVRDMA_WR_SEND, 0, &s, 1);
    WAIT_CQES(n, 10000, &r.a, 5, &r.b, 1);
    for (unsigned i = 0; i < 4; i++) {
        ep_expect(&r.a, 0xa0 + i, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_READ,
                  64 * KIB);
        ep_check(&r.a, 300 * KIB + i * 65 * KIB, d[i], 64 * KIB);
        g_assert_cmphex(ep_byte(&r.a, 300 * KIB + i * 65 * KIB + 64 * KIB),
                        ==, 0xcc);
    }
    ep_expect(&r.a, 0xa9, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 100);
    ep_expect_recv(&r.b, 0xb1, PVRDMA_WC_RECV, 100, r.a.qp.qpn);
    ep_check(&r.b, 900 * KIB, d[3], 100);
    g_assert_cmpuint(ops(n, 0, ROCE_RC_RDMA_READ_REQUEST), ==, 4);
    g_assert_cmpuint(ops(n, 1, ROCE_RC_RDMA_READ_RESPONSE_FIRST), ==, 4);
    g_assert_cmpuint(ops(n, 1, ROCE_RC_RDMA_READ_RESPONSE_MIDDLE), ==, 4 * 62);
    g_assert_cmpuint(ops(n, 1, ROCE_RC_RDMA_READ_RESPONSE_LAST), ==, 4);
    /* the SEND's PSN follows the 4 x 64 READ response PSNs */
    g_assert_cmpuint(psn_sent(n, 0, rc_default.psn_a + 4 * 64), ==, 1);

    /* a zero-length READ and a one-byte READ */
    s = ep_sge(&r.a, 0, 1);
    wr_rdma(&r.a, 0xaa, PVRDMA_WR_RDMA_READ, NULL, 0, ep_va(&r.b, 5),
            r.b.mr.rkey, 0);
    wr_rdma(&r.a, 0xab, PVRDMA_WR_RDMA_READ, &s, 1, ep_va(&r.b, 65 * KIB + 5),
            r.b.mr.rkey, 0);
    WAIT_CQES(n, 10000, &r.a, 2, NULL, 0);
    ep_expect(&r.a, 0xaa, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_READ, 0);
    ep_expect(&r.a, 0xab, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_READ, 1);
    g_assert_cmphex(ep_byte(&r.a, 0), ==, d[1][0]);
    g_assert_cmpuint(ops(n, 1, ROCE_RC_RDMA_READ_RESPONSE_ONLY), ==, 2);
    g_assert_true(net_settle(n));
    g_assert_cmpuint(stats(&n->node[0]).retransmits, ==, 0);
    for (unsigned i = 0; i < 4; i++) {
        g_free(d[i]);
    }
    rc_fini(&r);
}

static void test_rc_atomic(void)
{
    Rc r;
    Net *n = &r.n;
    struct pvrdma_sge s0 = { 0 }, s1 = { 0 }, s2 = { 0 };

    rc_setup(&r, NULL, 64 * KIB, 5);
    ep_set_u64(&r.b, 4096, 100);
    ep_set_u64(&r.b, 4104, 0x1111222233334444ull);
    ep_set_u64(&r.a, 0, 0xdeadbeefdeadbeefull);
    ep_set_u64(&r.a, 8, 0xdeadbeefdeadbeefull);
    ep_set_u64(&r.a, 16, 0xdeadbeefdeadbeefull);
    s0 = ep_sge(&r.a, 0, 8);
    s1 = ep_sge(&r.a, 8, 8);
    s2 = ep_sge(&r.a, 16, 8);
    wr_atomic(&r.a, 0xa1, PVRDMA_WR_ATOMIC_FETCH_AND_ADD, &s0,
              ep_va(&r.b, 4096), r.b.mr.rkey, 0x100000005ull, 0);
    /* compare matches: swapped */
    wr_atomic(&r.a, 0xa2, PVRDMA_WR_ATOMIC_CMP_AND_SWP, &s1,
              ep_va(&r.b, 4104), r.b.mr.rkey, 0x1111222233334444ull,
              0x5555666677778888ull);
    /* compare does not match: left alone */
    wr_atomic(&r.a, 0xa3, PVRDMA_WR_ATOMIC_CMP_AND_SWP, &s2,
              ep_va(&r.b, 4096), r.b.mr.rkey, 7, 8);
    WAIT_CQES(n, 10000, &r.a, 3, NULL, 0);
    ep_expect(&r.a, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_FETCH_ADD, 8);
    ep_expect(&r.a, 0xa2, PVRDMA_WC_SUCCESS, PVRDMA_WC_COMP_SWAP, 8);
    ep_expect(&r.a, 0xa3, PVRDMA_WC_SUCCESS, PVRDMA_WC_COMP_SWAP, 8);
    g_assert_cmphex(ep_u64(&r.a, 0), ==, 100);
    g_assert_cmphex(ep_u64(&r.a, 8), ==, 0x1111222233334444ull);
    g_assert_cmphex(ep_u64(&r.a, 16), ==, 100 + 0x100000005ull);
    g_assert_cmphex(ep_u64(&r.b, 4096), ==, 100 + 0x100000005ull);
    g_assert_cmphex(ep_u64(&r.b, 4104), ==, 0x5555666677778888ull);
    g_assert_cmpuint(ops(n, 0, ROCE_RC_FETCH_ADD), ==, 1);
    g_assert_cmpuint(ops(n, 0, ROCE_RC_COMPARE_SWAP), ==, 2);
    g_assert_cmpuint(ops(n, 1, ROCE_RC_ATOMIC_ACKNOWLEDGE), ==, 3);
    /* the last CMP_SWAP on the wire: host-order numbers of the WQE's */
    g_assert_cmphex(n->dir[0].last_atomic.atmeth.va, ==, ep_va(&r.b, 4096));
    g_assert_cmphex(n->dir[0].last_atomic.atmeth.compare, ==, 7);
    g_assert_cmphex(n->dir[0].last_atomic.atmeth.swap_add, ==, 8);
    g_assert_cmphex(n->dir[1].last_atmack, ==, 100 + 0x100000005ull);
    g_assert_true(net_settle(n));
    rc_fini(&r);
}

void rt_add_rc_tests(void)
{
    g_test_add_func("/pvrdma/roce/rc-send", test_rc_send);
    g_test_add_func("/pvrdma/roce/rc-psn-wrap", test_rc_psn_wrap);
    g_test_add_func("/pvrdma/roce/rc-write", test_rc_write);
    g_test_add_func("/pvrdma/roce/rc-read", test_rc_read);
    g_test_add_func("/pvrdma/roce/rc-atomic", test_rc_atomic);
}
