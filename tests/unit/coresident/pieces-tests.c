/*
 * Tests of the co-resident transport: a peer's request longer than the
 * responder's byte budget of a pass (PvrdmaCore.run_bytes, made small
 * here) is executed in pieces, one per run of the responder's loop, and
 * stays first in line for its QP meanwhile.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "coresident/cr.h"

#define PIECE 4096u
#define LEN   20000u                /* five pieces: four before the last */

static PvrdmaQP *core_qp(Vm *v, Side *s)
{
    return pvrdma_table_get(&v->d.c.qp, s->qp.handle);
}

/*
 * SEND, WRITE and READ of 20000 bytes: b (the responder) moves each in
 * five pieces; a SEND behind the first completes after it, on both sides.
 */
static void test_pieces(void)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    uint8_t data[LEN], got[LEN];
    struct pvrdma_sge ga, gb;

    x_setup(&x, 7);
    x.b.d.c.run_bytes = PIECE;
    fill_pattern(data, sizeof(data), 5);
    mr_write(&x.a.d, &sa->mr, S_IOVA + 100, data, sizeof(data));
    mr_fill(&x.b.d, &sb->mr, 0xcc);
    gb = mr_sge(sb, 1000, LEN);
    post_recv(&x.b.d, &sb->qp, 0xb1, &gb, 1);
    gb = mr_sge(sb, 30000, 500);
    post_recv(&x.b.d, &sb->qp, 0xb2, &gb, 1);
    ga = mr_sge(sa, 100, LEN);
    send_wqe(sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &ga, 1);
    ga = mr_sge(sa, 100, 300);
    send_wqe(sa, 0xa2, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &ga, 1);
    PUMP(&x.a, &x.b);
    g_assert_cmpuint(x.b.d.c.seg_pieces, ==, 4);
    side_expect_cqe(sa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, LEN);
    side_expect_cqe(sa, 0xa2, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 300);
    side_expect_cqe(sb, 0xb1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, LEN);
    side_expect_cqe(sb, 0xb2, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 300);
    mr_read(&x.b.d, &sb->mr, S_IOVA + 1000, got, LEN);
    g_assert_cmpmem(got, LEN, data, LEN);
    g_assert_cmphex(*mr_byte(&x.b.d, &sb->mr, S_IOVA + 1000 + LEN), ==,
                    0xcc);
    g_assert_null(core_qp(&x.b, sb)->seg_rx);

    /* WRITE: into b's MR at 24000 */
    ga = mr_sge(sa, 100, LEN);
    rdma_wqe(sa, 0xa3, PVRDMA_WR_RDMA_WRITE, &ga, 1, S_IOVA + 24000,
             sb->mr.rkey, 0);
    PUMP(&x.a, &x.b);
    g_assert_cmpuint(x.b.d.c.seg_pieces, ==, 8);
    side_expect_cqe(sa, 0xa3, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE, LEN);
    mr_read(&x.b.d, &sb->mr, S_IOVA + 24000, got, LEN);
    g_assert_cmpmem(got, LEN, data, LEN);

    /* READ: b's bytes at 1000 into a's MR at 22000 */
    ga = mr_sge(sa, 22000, LEN);
    rdma_wqe(sa, 0xa4, PVRDMA_WR_RDMA_READ, &ga, 1, S_IOVA + 1000,
             sb->mr.rkey, 0);
    PUMP(&x.a, &x.b);
    g_assert_cmpuint(x.b.d.c.seg_pieces, ==, 12);
    g_assert_cmpuint(x.a.d.c.seg_pieces, ==, 0);
    side_expect_cqe(sa, 0xa4, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_READ, LEN);
    mr_read(&x.a.d, &sa->mr, S_IOVA + 22000, got, LEN);
    g_assert_cmpmem(got, LEN, data, LEN);
    x_fini(&x);
}

/* a's SEND is in b, half-way: b has moved a piece of it, not all. */
static void send_half_way(X *x, uint8_t *data)
{
    Side *sa = &x->sa, *sb = &x->sb;
    struct pvrdma_sge ga, gb;
    FakeHost *hb[] = { &x->b.d.h };

    x_setup(x, 7);
    x->b.d.c.run_bytes = PIECE;
    ga = mr_sge(sa, 100, LEN);
    gb = mr_sge(sb, 1000, LEN);
    fill_pattern(data, LEN, 6);
    mr_write(&x->a.d, &sa->mr, S_IOVA + 100, data, LEN);
    post_recv(&x->b.d, &sb->qp, 0xb1, &gb, 1);
    send_wqe(sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &ga, 1);
    PUMP(&x->a);
    for (int i = 0; i < 1000 && !x->b.d.c.seg_pieces; i++) {
        fh_step(hb, 1);
    }
    g_assert_cmpuint(x->b.d.c.seg_pieces, >=, 1);
    g_assert_nonnull(core_qp(&x->b, sb)->seg_rx);
}

/*
 * b's VM stops half-way through a's SEND: the pause moves the rest at
 * once, so that no request is given back half-way.
 */
static void test_pieces_pause(void)
{
    X x;
    uint8_t data[LEN], got[LEN];
    Pumper pa;

    send_half_way(&x, data);
    pumper_start(&pa, &x.a);
    g_assert_true(pvrdma_core_quiesce(&x.b.d.c, 10000));
    pumper_stop(&pa);
    g_assert_null(core_qp(&x.b, &x.sb)->seg_rx);
    side_expect_cqe(&x.sb, 0xb1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, LEN);
    mr_read(&x.b.d, &x.sb.mr, S_IOVA + 1000, got, LEN);
    g_assert_cmpmem(got, LEN, data, LEN);
    pvrdma_core_resume(&x.b.d.c);
    PUMP(&x.a, &x.b);
    side_expect_cqe(&x.sa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, LEN);
    x_fini(&x);
}

/*
 * a's QP is destroyed half-way through its SEND: b drops the request and
 * the receive it took (no completion), and takes the next receive for the
 * next message.
 */
static void test_pieces_requester_gone(void)
{
    X x;
    uint8_t data[LEN];
    union pvrdma_cmd_req req = { 0 };
    struct pvrdma_sge g;
    Side a2;
    Pumper pb;

    send_half_way(&x, data);
    pumper_start(&pb, &x.b);
    req.destroy_qp.qp_handle = x.sa.qp.handle;
    g_assert_cmpuint(dev_cmd(&x.a.d, &req, PVRDMA_CMD_DESTROY_QP, NULL), ==,
                     0);
    pumper_stop(&pb);
    PUMP(&x.a, &x.b);
    g_assert_null(core_qp(&x.b, &x.sb)->seg_rx);
    expect_cq_empty(&x.b.d, &x.sb.cq);
    /* the fence's answer, before DESTROY_QP returned: flushed */
    side_expect_cqe(&x.sa, 0xa1, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_SEND, 0);
    expect_cq_empty(&x.a.d, &x.sa.cq);

    /* a new QP of a: its SEND takes b's next receive */
    side_init(&a2, &x.a, PVRDMA_QPT_RC);
    rc_to_rts_gid(&x.a.d, &a2.qp, x.sb.qp.qpn, x.b.gid, 7);
    g = mr_sge(&x.sb, 40000, 100);
    post_recv(&x.b.d, &x.sb.qp, 0xb2, &g, 1);
    g = mr_sge(&a2, 0, 100);
    send_wqe(&a2, 0xc1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a, &x.b);
    side_expect_cqe(&a2, 0xc1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 100);
    side_expect_cqe(&x.sb, 0xb2, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 100);
    x_fini(&x);
}

void cr_add_pieces_tests(void)
{
    g_test_add_func("/pvrdma/cr/pieces", test_pieces);
    g_test_add_func("/pvrdma/cr/pieces-pause", test_pieces_pause);
    g_test_add_func("/pvrdma/cr/pieces-requester-gone",
                    test_pieces_requester_gone);
}
