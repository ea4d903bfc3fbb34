/*
 * Tests of the RoCEv2 transport: UD, immediate data on the wire, the fence,
 * UD drops.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "roce/rt.h"

static void ud_ready(Ep *e, uint32_t qkey)
{
    struct pvrdma_qp_attr at = { 0 };

    at.qp_state = PVRDMA_QPS_INIT;
    at.port_num = 1;
    at.qkey = qkey;
    g_assert_cmpuint(modify_qp(ep_dev(e), &e->qp, PVRDMA_QP_STATE |
                               PVRDMA_QP_PKEY_INDEX | PVRDMA_QP_PORT |
                               PVRDMA_QP_QKEY, &at), ==, 0);
    at.qp_state = PVRDMA_QPS_RTR;
    g_assert_cmpuint(modify_qp(ep_dev(e), &e->qp, PVRDMA_QP_STATE, &at), ==,
                     0);
    at.qp_state = PVRDMA_QPS_RTS;
    at.sq_psn = 0x77;
    g_assert_cmpuint(modify_qp(ep_dev(e), &e->qp, PVRDMA_QP_STATE |
                               PVRDMA_QP_SQ_PSN, &at), ==, 0);
}

static void ud_post(Ep *e, Ep *to, uint64_t wr_id, uint32_t opcode,
                    uint32_t imm, uint32_t qkey, const struct pvrdma_sge *s)
{
    struct pvrdma_sq_wqe_hdr w = { 0 };

    w.wr_id = wr_id;
    w.opcode = opcode;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.ex.imm_data = imm;
    w.wr.ud.remote_qpn = to->qp.qpn;
    w.wr.ud.remote_qkey = qkey;
    memcpy(w.wr.ud.av.dgid, to->nd->gid, 16);
    memcpy(w.wr.ud.av.dmac, to->nd->d.h.mac, 6);
    w.wr.ud.av.gid_index = 0;
    w.wr.ud.av.hop_limit = 64;
    w.wr.ud.av.port_pd = 1 << 24;
    post_send(ep_dev(e), &e->qp, &w, s, 1);
}

static void test_ud_send(void)
{
    Net net, *n = &net;
    Ep a, b;
    uint8_t *d = pattern(2000, 51), grh[40];
    struct pvrdma_sge s;
    struct pvrdma_cqe c;
    uint64_t drops;

    net_init(n, 17);
    ep_init(&a, &n->node[0], PVRDMA_QPT_UD, 64 * KIB);
    ep_init(&b, &n->node[1], PVRDMA_QPT_UD, 64 * KIB);
    ud_ready(&a, 0x1111);
    ud_ready(&b, 0x1111);
    ep_put(&a, 0, d, 2000);
    buf_fill(ep_dev(&b), &b.mr, 0, 64 * KIB, 0xcc);
    wr_recv(&b, 0xb1, 0, 40 + 2000);
    wr_recv(&b, 0xb2, 4096, 40 + 2000);
    s = ep_sge(&a, 0, 2000);
    ud_post(&a, &b, 0xa1, PVRDMA_WR_SEND, 0, 0x1111, &s);
    WAIT_CQES(n, 10000, &a, 1, &b, 1);
    ep_expect(&a, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 2000);
    c = ep_expect_recv(&b, 0xb1, PVRDMA_WC_RECV, 40 + 2000, a.qp.qpn);
    g_assert_true(c.wc_flags & PVRDMA_WC_GRH);
    g_assert_false(c.wc_flags & PVRDMA_WC_WITH_IMM);
    g_assert_cmpmem(c.smac, 6, n->node[0].d.h.mac, 6);
    /* RoCEv2 over IPv4: the IPv4 header in the GRH's last 20 bytes */
    buf_read(ep_dev(&b), &b.mr, 0, grh, 40);
    g_assert_cmphex(grh[20], ==, 0x45);
    g_assert_cmphex(grh[29], ==, 17);           /* UDP */
    g_assert_cmpmem(grh + 32, 4, n->node[0].gid + 12, 4);   /* source */
    g_assert_cmpmem(grh + 36, 4, n->node[1].gid + 12, 4);   /* destination */
    ep_check(&b, 40, d, 2000);
    g_assert_cmphex(ep_byte(&b, 2040), ==, 0xcc);
    g_assert_cmpuint(ops(n, 0, ROCE_UD_SEND_ONLY), ==, 1);
    g_assert_cmphex(n->dir[0].last_deth.deth.qkey, ==, 0x1111);
    g_assert_cmphex(n->dir[0].last_deth.deth.sqp, ==, a.qp.qpn);
    g_assert_cmphex(n->dir[0].last_deth.dqpn, ==, b.qp.qpn);
    g_assert_true(net_settle(n));

    /* a wrong Q_Key: dropped and counted, the receive stays posted */
    drops = stats(&n->node[1]).drops;
    ud_post(&a, &b, 0xa2, PVRDMA_WR_SEND, 0, 0x2222, &s);
    WAIT_CQES(n, 10000, &a, 1, NULL, 0);
    ep_expect(&a, 0xa2, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 2000);
    g_assert_true(net_settle(n));
    g_assert_cmpuint(ep_cq_avail(&b), ==, 0);
    g_assert_cmpuint(stats(&n->node[1]).drops, ==, drops + 1);
    g_assert_cmpuint(ops(n, 0, ROCE_UD_SEND_ONLY), ==, 2);

    /* SEND_WITH_IMM takes the receive that is still there */
    s = ep_sge(&a, 0, 500);
    ud_post(&a, &b, 0xa3, PVRDMA_WR_SEND_WITH_IMM, 0xfeedf00d, 0x1111, &s);
    WAIT_CQES(n, 10000, &a, 1, &b, 1);
    ep_expect(&a, 0xa3, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 500);
    c = ep_expect_recv(&b, 0xb2, PVRDMA_WC_RECV, 40 + 500, a.qp.qpn);
    g_assert_true(c.wc_flags & PVRDMA_WC_WITH_IMM);
    g_assert_cmphex(c.imm_data, ==, 0xfeedf00d);
    ep_check(&b, 4096 + 40, d, 500);
    g_assert_cmpuint(ops(n, 0, ROCE_UD_SEND_ONLY_WITH_IMMEDIATE), ==, 1);
    g_assert_true(net_settle(n));
    expect_cq_empty(ep_dev(&a), &a.cq);
    expect_cq_empty(ep_dev(&b), &b.cq);
    g_free(d);
    ep_fini(&a);
    ep_fini(&b);
    net_fini(n);
}

/*
 * Immediate data is big endian in the WQE and the CQE (the driver passes
 * the verbs' __be32 through): the wire's ImmDt bytes are the WQE's bytes,
 * as rxe and HCAs send and expect them.
 */
static void test_imm_wire(void)
{
    Rc r;
    Net *n = &r.n;
    Ep ua, ub;
    struct pvrdma_sge s;
    struct pvrdma_cqe c;
    uint32_t be;

    rc_setup(&r, NULL, 64 * KIB, 21);
    /* bytes 11 22 33 44 in the WQE, as the driver stores htonl(0x11223344) */
    memcpy(&be, "\x11\x22\x33\x44", 4);
    wr_recv(&r.b, 0xb1, 0, 100);
    wr_recv(&r.b, 0xb2, 0, 100);
    s = ep_sge(&r.a, 0, 10);
    wr_send(&r.a, 0xa1, PVRDMA_WR_SEND_WITH_IMM, be, &s, 1);
    WAIT_CQES(n, 10000, &r.a, 1, &r.b, 1);
    ep_expect(&r.a, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 10);
    c = ep_expect_recv(&r.b, 0xb1, PVRDMA_WC_RECV, 10, r.a.qp.qpn);
    g_assert_cmphex(n->dir[0].last_imm, ==, 0x11223344);
    g_assert_cmpmem(&c.imm_data, 4, "\x11\x22\x33\x44", 4);
    wr_rdma(&r.a, 0xa2, PVRDMA_WR_RDMA_WRITE_WITH_IMM, &s, 1, ep_va(&r.b, 0),
            r.b.mr.rkey, be);
    WAIT_CQES(n, 10000, &r.a, 1, &r.b, 1);
    ep_expect(&r.a, 0xa2, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE, 10);
    c = ep_expect_recv(&r.b, 0xb2, PVRDMA_WC_RECV_RDMA_WITH_IMM, 10,
                       r.a.qp.qpn);
    g_assert_cmphex(n->dir[0].last_imm, ==, 0x11223344);
    g_assert_cmpmem(&c.imm_data, 4, "\x11\x22\x33\x44", 4);
    g_assert_true(net_settle(n));

    ep_init(&ua, &n->node[0], PVRDMA_QPT_UD, 16 * KIB);
    ep_init(&ub, &n->node[1], PVRDMA_QPT_UD, 16 * KIB);
    ud_ready(&ua, 0x1111);
    ud_ready(&ub, 0x1111);
    wr_recv(&ub, 0xb3, 0, 100);
    s = ep_sge(&ua, 0, 10);
    ud_post(&ua, &ub, 0xa3, PVRDMA_WR_SEND_WITH_IMM, be, 0x1111, &s);
    WAIT_CQES(n, 10000, &ua, 1, &ub, 1);
    ep_expect(&ua, 0xa3, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 10);
    c = ep_expect_recv(&ub, 0xb3, PVRDMA_WC_RECV, 40 + 10, ua.qp.qpn);
    g_assert_cmphex(n->dir[0].last_imm, ==, 0x11223344);
    g_assert_cmpmem(&c.imm_data, 4, "\x11\x22\x33\x44", 4);
    g_assert_true(net_settle(n));
    expect_cq_empty(ep_dev(&ua), &ua.cq);
    expect_cq_empty(ep_dev(&ub), &ub.cq);
    ep_fini(&ua);
    ep_fini(&ub);
    rc_fini(&r);
}

/*
 * PVRDMA_SEND_FENCE: a request waits until the READs and atomics before it
 * have completed, so it sends what they brought.
 */
static void test_rc_fence(void)
{
    Rc r;
    Net *n = &r.n;
    uint8_t *d = pattern(8 * KIB, 43);
    struct pvrdma_sge s;

    rc_setup(&r, NULL, 64 * KIB, 22);
    ep_put(&r.b, 0, d, 8 * KIB);
    buf_fill(ep_dev(&r.a), &r.a.mr, 0, 64 * KIB, 0xcc);
    s = ep_sge(&r.a, 16 * KIB, 8 * KIB);
    wr_rdma(&r.a, 0xa1, PVRDMA_WR_RDMA_READ, &s, 1, ep_va(&r.b, 0),
            r.b.mr.rkey, 0);
    /* a small SEND and a large WRITE of what the READ brings */
    wr_recv(&r.b, 0xb1, 32 * KIB, 100);
    s = ep_sge(&r.a, 16 * KIB, 100);
    wr_send_flags(&r.a, 0xa2, PVRDMA_WR_SEND, PVRDMA_SEND_FENCE, 0, &s, 1);
    s = ep_sge(&r.a, 16 * KIB, 8 * KIB);
    {
        struct pvrdma_sq_wqe_hdr w = { 0 };

        w.wr_id = 0xa3;
        w.opcode = PVRDMA_WR_RDMA_WRITE;
        w.send_flags = PVRDMA_SEND_SIGNALED | PVRDMA_SEND_FENCE;
        w.wr.rdma.remote_addr = ep_va(&r.b, 40 * KIB);
        w.wr.rdma.rkey = r.b.mr.rkey;
        post_send(ep_dev(&r.a), &r.a.qp, &w, &s, 1);
    }
    WAIT_CQES(n, 10000, &r.a, 3, &r.b, 1);
    ep_expect(&r.a, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_READ, 8 * KIB);
    ep_expect(&r.a, 0xa2, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 100);
    ep_expect(&r.a, 0xa3, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE, 8 * KIB);
    ep_expect_recv(&r.b, 0xb1, PVRDMA_WC_RECV, 100, r.a.qp.qpn);
    ep_check(&r.a, 16 * KIB, d, 8 * KIB);
    ep_check(&r.b, 32 * KIB, d, 100);
    ep_check(&r.b, 40 * KIB, d, 8 * KIB);
    g_assert_true(net_settle(n));
    g_free(d);
    rc_fini(&r);
}

/*
 * UD frames the transport takes and then drops (a wrong Q_Key, a QP that
 * is not UD, no such QP) are counted in stats.drops like every other
 * dropped frame.
 */
static void test_ud_drops_counted(void)
{
    Net net, *n = &net;
    Ep a, b, rc;
    struct pvrdma_sge s;
    uint64_t drops;

    net_init(n, 23);
    ep_init(&a, &n->node[0], PVRDMA_QPT_UD, 16 * KIB);
    ep_init(&b, &n->node[1], PVRDMA_QPT_UD, 16 * KIB);
    ep_init(&rc, &n->node[1], PVRDMA_QPT_RC, 16 * KIB);
    ud_ready(&a, 0x1111);
    ud_ready(&b, 0x1111);
    wr_recv(&b, 0xb1, 0, 100);
    s = ep_sge(&a, 0, 10);
    drops = stats(&n->node[1]).drops;
    ud_post(&a, &b, 0xa1, PVRDMA_WR_SEND, 0, 0x2222, &s);   /* Q_Key */
    WAIT_CQES(n, 10000, &a, 1, NULL, 0);
    ep_expect(&a, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 10);
    g_assert_true(net_settle(n));
    g_assert_cmpuint(stats(&n->node[1]).drops, ==, drops + 1);
    ud_post(&a, &rc, 0xa2, PVRDMA_WR_SEND, 0, 0x1111, &s);  /* an RC QP */
    WAIT_CQES(n, 10000, &a, 1, NULL, 0);
    ep_expect(&a, 0xa2, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 10);
    g_assert_true(net_settle(n));
    g_assert_cmpuint(stats(&n->node[1]).drops, ==, drops + 2);
    rc.qp.qpn = 0xabcdef;                                   /* nobody */
    ud_post(&a, &rc, 0xa3, PVRDMA_WR_SEND, 0, 0x1111, &s);
    WAIT_CQES(n, 10000, &a, 1, NULL, 0);
    ep_expect(&a, 0xa3, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 10);
    g_assert_true(net_settle(n));
    g_assert_cmpuint(stats(&n->node[1]).drops, ==, drops + 3);
    g_assert_cmpuint(ep_cq_avail(&b), ==, 0);
    ep_fini(&a);
    ep_fini(&b);
    ep_fini(&rc);
    net_fini(n);
}

void rt_add_ud_tests(void)
{
    g_test_add_func("/pvrdma/roce/ud-send", test_ud_send);
    g_test_add_func("/pvrdma/roce/imm-wire", test_imm_wire);
    g_test_add_func("/pvrdma/roce/rc-fence", test_rc_fence);
    g_test_add_func("/pvrdma/roce/ud-drops-counted", test_ud_drops_counted);
}
