/*
 * Unit tests: a message longer than the byte budget of a pass moves in
 * pieces on the loopback transport (PVRDMA_TP_SEGMENTED), one piece per
 * pass of the run loop, so one large work request cannot hold the event
 * loop for its whole copy.  The budget is made small here (run_bytes) so
 * that the pair's small MRs hold messages of several pieces.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "fake-driver.h"

#define PIECE 1024u

/* The device's QP of handle h */
static PvrdmaQP *qp_of(Dev *d, uint32_t h)
{
    return pvrdma_table_get(&d->c.qp, h);
}

/*
 * A 5000-byte SEND: five pieces, one per pass; nothing completes before
 * the last, the receive buffer fills piece by piece, and a short SEND
 * posted behind it completes after it, on both sides.
 */
static void test_seg_send(void)
{
    Pair p;
    Dev *d = &p.d;
    uint8_t data[5000], got[5000];
    struct pvrdma_sge sa[2], sb[2], s2 = { MRB_IOVA + 13100, 3000, 0 };
    struct pvrdma_sq_wqe_hdr w = { 0 };

    pair_setup(&p, 7);
    d->c.run_bytes = PIECE;
    fill_pattern(data, sizeof(data), 7);
    mr_fill(d, &p.mrb, 0xcc);
    mr_write(d, &p.mra, MRA_IOVA + 50, data, sizeof(data));
    sa[0] = (struct pvrdma_sge) { MRA_IOVA + 50, 3000, p.mra.lkey };
    sa[1] = (struct pvrdma_sge) { MRA_IOVA + 3050, 2000, p.mra.lkey };
    sb[0] = (struct pvrdma_sge) { MRB_IOVA + 10, 1000, p.mrb.lkey };
    sb[1] = (struct pvrdma_sge) { MRB_IOVA + 8000, 5000, p.mrb.lkey };
    s2.lkey = p.mrb.lkey;
    post_recv(d, &p.b, 0xb1, sb, 2);
    post_recv(d, &p.b, 0xb2, &s2, 1);
    w.opcode = PVRDMA_WR_SEND;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.wr_id = 0xa1;
    post_send(d, &p.a, &w, sa, 2);

    /* one pass: the first piece only (1000 + 24 bytes of SGE 2) */
    pvrdma_core_run(&d->c);
    expect_cq_empty(d, &p.cqa);
    expect_cq_empty(d, &p.cqb);
    g_assert_cmpuint(d->c.run.length, ==, 1);
    mr_read(d, &p.mrb, MRB_IOVA + 10, got, 1000);
    g_assert_cmpmem(got, 1000, data, 1000);
    mr_read(d, &p.mrb, MRB_IOVA + 8000, got, 24);
    g_assert_cmpmem(got, 24, data + 1000, 24);
    g_assert_cmphex(*mr_byte(d, &p.mrb, MRB_IOVA + 8024), ==, 0xcc);
    g_assert_cmpuint(qp_rings(d, &p.a)[0].cons_head, ==, 0);
    g_assert_nonnull(qp_of(d, p.b.handle)->seg_rx);

    /* a shorter SEND (3 pieces) is posted behind it now */
    w.wr_id = 0xa2;
    post_send(d, &p.a, &w, sa, 1);
    g_assert_cmpuint(run_all(d), ==, 4 + 3);
    expect_cqe(d, &p.cqa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 5000,
               p.a.handle);
    expect_cqe(d, &p.cqa, 0xa2, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 3000,
               p.a.handle);
    expect_cqe(d, &p.cqb, 0xb1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 5000,
               p.b.handle);
    expect_cqe(d, &p.cqb, 0xb2, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 3000,
               p.b.handle);
    mr_read(d, &p.mrb, MRB_IOVA + 10, got, 1000);
    mr_read(d, &p.mrb, MRB_IOVA + 8000, got + 1000, 4000);
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));
    g_assert_cmphex(*mr_byte(d, &p.mrb, MRB_IOVA + 12000), ==, 0xcc);
    g_assert_null(qp_of(d, p.b.handle)->seg_rx);
    mr_read(d, &p.mrb, MRB_IOVA + 13100, got, 3000);
    g_assert_cmpmem(got, 3000, data, 3000);
    pair_fini(&p);
}

/*
 * RDMA WRITE, WRITE with immediate and READ in pieces: the data arrives
 * whole, the immediate takes one receive, with the last piece.
 */
static void test_seg_write_read(void)
{
    Pair p;
    Dev *d = &p.d;
    uint8_t data[6000], got[9000];
    struct pvrdma_sge sa = { MRA_IOVA + 700, 6000, 0 }, sr[3];
    struct pvrdma_sge sb = { MRB_IOVA, 16, 0 };
    struct pvrdma_sq_wqe_hdr w = { 0 };
    struct pvrdma_cqe e;

    pair_setup(&p, 7);
    d->c.run_bytes = PIECE;
    sa.lkey = p.mra.lkey;
    sb.lkey = p.mrb.lkey;
    fill_pattern(data, sizeof(data), 8);
    mr_fill(d, &p.mrb, 0x11);
    mr_write(d, &p.mra, MRA_IOVA + 700, data, sizeof(data));
    w.wr_id = 0xa1;
    w.opcode = PVRDMA_WR_RDMA_WRITE;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.wr.rdma.remote_addr = MRB_IOVA + 300;
    w.wr.rdma.rkey = p.mrb.rkey;
    post_send(d, &p.a, &w, &sa, 1);
    pvrdma_core_run(&d->c);
    expect_cq_empty(d, &p.cqa);
    g_assert_cmphex(*mr_byte(d, &p.mrb, MRB_IOVA + 300 + PIECE - 1), ==,
                    data[PIECE - 1]);
    g_assert_cmphex(*mr_byte(d, &p.mrb, MRB_IOVA + 300 + PIECE), ==, 0x11);
    g_assert_cmpuint(run_all(d), ==, 5);     /* 6000 = 5 + 1 pieces */
    expect_cqe(d, &p.cqa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE, 6000,
               p.a.handle);
    mr_read(d, &p.mrb, MRB_IOVA + 300, got, 6000);
    g_assert_cmpmem(got, 6000, data, 6000);
    g_assert_cmphex(*mr_byte(d, &p.mrb, MRB_IOVA + 6300), ==, 0x11);

    /* with immediate: one receive, taken with the last piece */
    post_recv(d, &p.b, 0xb1, &sb, 1);
    post_recv(d, &p.b, 0xb2, &sb, 1);
    w.wr_id = 0xa2;
    w.opcode = PVRDMA_WR_RDMA_WRITE_WITH_IMM;
    w.ex.imm_data = 0x5eed;
    w.wr.rdma.remote_addr = MRB_IOVA + 9000;
    post_send(d, &p.a, &w, &sa, 1);
    pvrdma_core_run(&d->c);
    expect_cq_empty(d, &p.cqb);
    run_all(d);
    expect_cqe(d, &p.cqa, 0xa2, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE, 6000,
               p.a.handle);
    g_assert_true(poll_cq(d, &p.cqb, &e));
    g_assert_cmphex(e.wr_id, ==, 0xb1);
    g_assert_cmpuint(e.opcode, ==, PVRDMA_WC_RECV_RDMA_WITH_IMM);
    g_assert_cmpuint(e.byte_len, ==, 6000);
    g_assert_cmphex(e.imm_data, ==, 0x5eed);
    expect_cq_empty(d, &p.cqb);
    mr_read(d, &p.mrb, MRB_IOVA + 9000, got, 6000);
    g_assert_cmpmem(got, 6000, data, 6000);

    /* READ of 9000 bytes into three SGEs of A */
    fill_pattern(got, sizeof(got), 9);
    mr_write(d, &p.mrb, MRB_IOVA + 4000, got, sizeof(got));
    mr_fill(d, &p.mra, 0);
    sr[0] = (struct pvrdma_sge) { MRA_IOVA + 8000, 4000, p.mra.lkey };
    sr[1] = (struct pvrdma_sge) { MRA_IOVA, 1, p.mra.lkey };
    sr[2] = (struct pvrdma_sge) { MRA_IOVA + 1, 4999, p.mra.lkey };
    w.wr_id = 0xa3;
    w.opcode = PVRDMA_WR_RDMA_READ;
    w.wr.rdma.remote_addr = MRB_IOVA + 4000;
    post_send(d, &p.a, &w, sr, 3);
    g_assert_cmpuint(run_all(d), ==, 9);
    expect_cqe(d, &p.cqa, 0xa3, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_READ, 9000,
               p.a.handle);
    {
        uint8_t back[9000];

        mr_read(d, &p.mra, MRA_IOVA + 8000, back, 4000);
        mr_read(d, &p.mra, MRA_IOVA, back + 4000, 5000);
        g_assert_cmpmem(back, sizeof(back), got, sizeof(got));
    }
    pair_fini(&p);
}

/*
 * The byte budget spans WQEs too: with 600-byte WRITEs a pass stops once
 * it copied PIECE bytes (two WQEs), then the QP queues again.
 */
static void test_seg_budget(void)
{
    Pair p;
    Dev *d = &p.d;
    struct pvrdma_sge sa = { MRA_IOVA, 600, 0 };
    struct pvrdma_sq_wqe_hdr w = { 0 };

    pair_setup(&p, 7);
    d->c.run_bytes = PIECE;
    sa.lkey = p.mra.lkey;
    w.opcode = PVRDMA_WR_RDMA_WRITE;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.wr.rdma.remote_addr = MRB_IOVA;
    w.wr.rdma.rkey = p.mrb.rkey;
    for (uint64_t i = 0; i < 6; i++) {
        w.wr_id = i;
        put_send(d, &p.a, &w, &sa, 1);
    }
    ring_send(d, &p.a);
    pvrdma_core_run(&d->c);
    g_assert_cmpuint(qp_rings(d, &p.a)[0].cons_head, ==, 2);
    g_assert_cmpuint(d->c.run.length, ==, 1);
    g_assert_cmpuint(run_all(d), ==, 2);
    for (uint64_t i = 0; i < 6; i++) {
        expect_cqe(d, &p.cqa, i, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE, 600,
                   p.a.handle);
    }
    pair_fini(&p);
}

/* A SEND half-way: a's first piece is in, b holds its receive. */
static void seg_send_started(Pair *p, struct pvrdma_sge *sb)
{
    Dev *d = &p->d;
    struct pvrdma_sge sa = { MRA_IOVA, 5000, p->mra.lkey };
    struct pvrdma_sq_wqe_hdr w = { .wr_id = 0xa1, .opcode = PVRDMA_WR_SEND,
                                   .send_flags = PVRDMA_SEND_SIGNALED };

    pair_setup(p, 7);
    d->c.run_bytes = PIECE;
    sa.lkey = p->mra.lkey;
    *sb = (struct pvrdma_sge) { MRB_IOVA, 6000, p->mrb.lkey };
    post_recv(d, &p->b, 0xb1, sb, 1);
    post_recv(d, &p->b, 0xb2, sb, 1);
    post_send(d, &p->a, &w, &sa, 1);
    pvrdma_core_run(&d->c);
    g_assert_nonnull(qp_of(d, p->b.handle)->seg_rx);
}

/*
 * The requester goes half-way (destroyed): the receive its SEND took is
 * dropped without a completion, the responder takes the next one for the
 * next message, and nothing stays mapped.
 */
static void test_seg_requester_gone(void)
{
    Pair p;
    Dev *d = &p.d;
    union pvrdma_cmd_req req = { 0 };
    struct pvrdma_sge sb, s = { MRA_IOVA, 100, 0 };
    struct pvrdma_sq_wqe_hdr w = { .wr_id = 0xc1, .opcode = PVRDMA_WR_SEND,
                                   .send_flags = PVRDMA_SEND_SIGNALED };
    TQp a2;

    seg_send_started(&p, &sb);
    req.destroy_qp.qp_handle = p.a.handle;
    g_assert_cmpuint(dev_cmd(d, &req, PVRDMA_CMD_DESTROY_QP, NULL), ==, 0);
    g_assert_null(qp_of(d, p.b.handle)->seg_rx);
    run_all(d);
    expect_cq_empty(d, &p.cqb);
    /* a new requester's SEND lands in the second receive */
    create_qp(d, &a2, p.pd, p.cqa.handle, p.cqa.handle, PVRDMA_QPT_RC);
    rc_to_rts(d, &a2, p.b.qpn, 7);
    s.lkey = p.mra.lkey;
    post_send(d, &a2, &w, &s, 1);
    run_all(d);
    expect_cqe(d, &p.cqa, 0xc1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 100,
               a2.handle);
    expect_cqe(d, &p.cqb, 0xb2, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 100,
               p.b.handle);
    expect_cq_empty(d, &p.cqa);
    expect_cq_empty(d, &p.cqb);
    dev_fini(d);
}

/*
 * The responder is reset half-way: the requester's next piece finds no
 * receive in progress and its SEND fails (remote operation error).
 */
static void test_seg_responder_reset(void)
{
    Pair p;
    Dev *d = &p.d;
    struct pvrdma_sge sb;
    struct pvrdma_cqe e;

    seg_send_started(&p, &sb);
    g_assert_cmpuint(modify_qp(d, &p.b, PVRDMA_QP_STATE,
                               &(struct pvrdma_qp_attr) {
                                   .qp_state = PVRDMA_QPS_RESET }), ==, 0);
    g_assert_null(qp_of(d, p.b.handle)->seg_rx);
    rc_to_rts(d, &p.b, p.a.qpn, 7);
    post_recv(d, &p.b, 0xb3, &sb, 1);
    run_all(d);
    g_assert_true(poll_cq(d, &p.cqa, &e));
    g_assert_cmphex(e.wr_id, ==, 0xa1);
    g_assert_cmpuint(e.status, ==, PVRDMA_WC_REM_OP_ERR);
    expect_cq_empty(d, &p.cqb);     /* 0xb3 waits, untouched */
    dev_fini(d);
}

/* The guest rewrites the head WQE half-way: it fails, the receive goes. */
static void test_seg_wqe_changed(void)
{
    Pair p;
    Dev *d = &p.d;
    struct pvrdma_sge sb;
    struct pvrdma_sq_wqe_hdr *h;
    struct pvrdma_cqe e;
    uint64_t errs;

    seg_send_started(&p, &sb);
    h = sq_elem(d, &p.a, 0);
    h->opcode = PVRDMA_WR_RDMA_WRITE;
    errs = d->c.guest_errors;
    run_all(d);
    g_assert_cmpuint(d->c.guest_errors, ==, errs + 1);
    g_assert_true(poll_cq(d, &p.cqa, &e));
    g_assert_cmphex(e.wr_id, ==, 0xa1);
    g_assert_cmpuint(e.status, ==, PVRDMA_WC_LOC_QP_OP_ERR);
    g_assert_null(qp_of(d, p.b.handle)->seg_rx);
    dev_fini(d);
}

/*
 * The save (pvrdma_core_quiesce()) moves the rest of a message at once:
 * nothing stays half-way in a saved state.
 */
static void test_seg_quiesce(void)
{
    Pair p;
    Dev *d = &p.d;
    struct pvrdma_sge sb;
    uint8_t want[5000], got[5000];

    seg_send_started(&p, &sb);
    g_assert_true(pvrdma_core_quiesce(&d->c, 100));
    g_assert_cmpuint(qp_of(d, p.a.handle)->seg_off, ==, 0);
    g_assert_null(qp_of(d, p.b.handle)->seg_rx);
    expect_cqe(d, &p.cqa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 5000,
               p.a.handle);
    expect_cqe(d, &p.cqb, 0xb1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 5000,
               p.b.handle);
    mr_read(d, &p.mra, MRA_IOVA, want, sizeof(want));
    mr_read(d, &p.mrb, MRB_IOVA, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), want, sizeof(want));
    pvrdma_core_resume(&d->c);
    run_all(d);
    expect_cq_empty(d, &p.cqa);
    expect_cq_empty(d, &p.cqb);
    dev_fini(d);
}

int main(int argc, char **argv)
{
    fh_test_init(&argc, &argv);
    g_test_add_func("/pvrdma/seg/send", test_seg_send);
    g_test_add_func("/pvrdma/seg/write-read", test_seg_write_read);
    g_test_add_func("/pvrdma/seg/budget", test_seg_budget);
    g_test_add_func("/pvrdma/seg/requester-gone", test_seg_requester_gone);
    g_test_add_func("/pvrdma/seg/responder-reset", test_seg_responder_reset);
    g_test_add_func("/pvrdma/seg/wqe-changed", test_seg_wqe_changed);
    g_test_add_func("/pvrdma/seg/quiesce", test_seg_quiesce);
    return g_test_run();
}
