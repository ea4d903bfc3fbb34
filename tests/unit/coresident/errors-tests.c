/*
 * Tests of the co-resident transport: RNR waits and errors: retries, bad
 * keys, QPs gone at either end, the fence, peers gone.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "coresident/cr.h"

/* Sends wait at the responder until receives are posted, in order. */
static void test_rnr_recover(void)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    struct pvrdma_sge g[2], r[2];
    uint8_t d0[64], d1[64], got[64];

    x_setup(&x, 7);     /* rnr_retry 7: wait forever */
    fill_pattern(d0, 64, 5);
    fill_pattern(d1, 64, 6);
    mr_write(&x.a.d, &sa->mr, S_IOVA, d0, 64);
    mr_write(&x.a.d, &sa->mr, S_IOVA + 64, d1, 64);
    g[0] = mr_sge(sa, 0, 64);
    g[1] = mr_sge(sa, 64, 64);
    r[0] = mr_sge(sb, 1000, 64);
    r[1] = mr_sge(sb, 2000, 64);
    send_wqe(sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g[0], 1);
    send_wqe(sa, 0xa2, PVRDMA_WR_SEND_WITH_IMM, PVRDMA_SEND_SIGNALED, &g[1],
             1);
    PUMP(&x.a, &x.b);
    expect_cq_empty(&x.a.d, &sa->cq);
    expect_cq_empty(&x.b.d, &sb->cq);
    g_assert_cmpuint(qp_rings(&x.a.d, &sa->qp)[0].cons_head, ==, 0);
    x.a.d.h.now += 1000000;
    x.b.d.h.now += 1000000;
    PUMP(&x.a, &x.b);
    expect_cq_empty(&x.a.d, &sa->cq);

    post_recv(&x.b.d, &sb->qp, 0xb1, &r[0], 1);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 64);
    side_expect_cqe(sb, 0xb1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 64);
    expect_cq_empty(&x.a.d, &sa->cq);
    post_recv(&x.b.d, &sb->qp, 0xb2, &r[1], 1);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa2, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 64);
    side_expect_cqe(sb, 0xb2, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 64);
    mr_read(&x.b.d, &sb->mr, S_IOVA + 1000, got, 64);
    g_assert_cmpmem(got, 64, d0, 64);
    mr_read(&x.b.d, &sb->mr, S_IOVA + 2000, got, 64);
    g_assert_cmpmem(got, 64, d1, 64);
    g_assert_cmpuint(qp_state(sa), ==, PVRDMA_QPS_RTS);
    x_fini(&x);
}

/*
 * A WQE that fails locally behind one still in flight: nothing posted after
 * it runs (the peer's memory stays untouched); once the first completes,
 * the failed one reports its error and the rest are flushed.
 */
static void test_fail_behind_inflight(void)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    struct pvrdma_sge g, bad, r;
    uint8_t before[64], after[64];

    x_setup(&x, 7);
    g = mr_sge(sa, 0, 64);
    bad = g;
    r = mr_sge(sb, 0, 64);
    mr_read(&x.b.d, &sb->mr, S_IOVA + 4096, before, 64);
    send_wqe(sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a, &x.b);                   /* waits at b: no receive */
    bad.lkey ^= 0x80;                   /* fails at a, at once */
    send_wqe(sa, 0xa2, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &bad, 1);
    PUMP(&x.a, &x.b);
    mr_write(&x.a.d, &sa->mr, S_IOVA + 128, "must not land", 13);
    g = mr_sge(sa, 128, 13);
    rdma_wqe(sa, 0xa3, PVRDMA_WR_RDMA_WRITE, &g, 1, S_IOVA + 4096,
             sb->mr.rkey, 0);
    PUMP(&x.a, &x.b);
    expect_cq_empty(&x.a.d, &sa->cq);
    mr_read(&x.b.d, &sb->mr, S_IOVA + 4096, after, 64);
    g_assert_cmpmem(after, 64, before, 64);

    post_recv(&x.b.d, &sb->qp, 0xb1, &r, 1);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sb, 0xb1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 64);
    side_expect_cqe(sa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 64);
    side_expect_cqe(sa, 0xa2, PVRDMA_WC_LOC_PROT_ERR, PVRDMA_WC_SEND, 64);
    side_expect_cqe(sa, 0xa3, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_RDMA_WRITE,
                    0);
    g_assert_cmpuint(qp_state(sa), ==, PVRDMA_QPS_ERR);
    mr_read(&x.b.d, &sb->mr, S_IOVA + 4096, after, 64);
    g_assert_cmpmem(after, 64, before, 64);
    x_fini(&x);
}

/* A finite rnr_retry runs out: RNR_RETRY_EXC_ERR at the requester. */
static void test_rnr_timeout(void)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    struct pvrdma_sge g, r;

    x_setup(&x, 1);     /* rnr_retry 1, min_rnr_timer 1: 20 ms */
    r = mr_sge(sa, 4096, 64);
    post_recv(&x.a.d, &sa->qp, 0xa0, &r, 1);   /* flushed with the error */
    g = mr_sge(sa, 0, 64);
    send_wqe(sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    send_wqe(sa, 0xa2, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a, &x.b);
    expect_cq_empty(&x.a.d, &sa->cq);
    /* the responder asked for a run at the deadline */
    g_assert_cmpint(x.b.d.h.timer_due, ==, x.b.d.h.now + 20);
    x.a.d.h.now += 19;
    x.b.d.h.now += 19;
    PUMP(&x.a, &x.b);
    expect_cq_empty(&x.a.d, &sa->cq);
    x.a.d.h.now += 1;
    x.b.d.h.now += 1;
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa1, PVRDMA_WC_RNR_RETRY_EXC_ERR, PVRDMA_WC_SEND, 0);
    side_expect_cqe(sa, 0xa2, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_SEND, 0);
    side_expect_cqe(sa, 0xa0, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_RECV, 0);
    g_assert_cmpuint(qp_state(sa), ==, PVRDMA_QPS_ERR);
    g_assert_cmpuint(qp_state(sb), ==, PVRDMA_QPS_RTS);
    /* the dropped sends do not come back when a receive shows up */
    r = mr_sge(sb, 0, 64);
    post_recv(&x.b.d, &sb->qp, 0xb1, &r, 1);
    PUMP(&x.a, &x.b);
    expect_cq_empty(&x.b.d, &sb->cq);
    g_assert_cmpuint(peers(&x.a), ==, 1);
    x_fini(&x);
}

/* A bad rkey: REM_ACCESS_ERR at the requester, responder QP in error. */
static void test_bad_rkey(void)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    struct pvrdma_sge g, ra, rb;
    uint8_t before[256], after[256];

    x_setup(&x, 7);
    mr_fill(&x.b.d, &sb->mr, 0x77);
    mr_read(&x.b.d, &sb->mr, S_IOVA, before, sizeof(before));
    ra = mr_sge(sa, 8192, 64);
    rb = mr_sge(sb, 8192, 64);
    post_recv(&x.a.d, &sa->qp, 0xa0, &ra, 1);
    post_recv(&x.b.d, &sb->qp, 0xb0, &rb, 1);
    rb.addr += 64;
    post_recv(&x.b.d, &sb->qp, 0xb1, &rb, 1);
    g = mr_sge(sa, 0, 256);
    rdma_wqe(sa, 0xa1, PVRDMA_WR_RDMA_WRITE, &g, 1, S_IOVA, sb->mr.rkey ^ 1,
             0);
    send_wqe(sa, 0xa2, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa1, PVRDMA_WC_REM_ACCESS_ERR, PVRDMA_WC_RDMA_WRITE,
                    0);
    side_expect_cqe(sa, 0xa2, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_SEND, 0);
    side_expect_cqe(sa, 0xa0, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_RECV, 0);
    g_assert_cmpuint(qp_state(sa), ==, PVRDMA_QPS_ERR);
    /* the responder's QP is in error, its receives flushed, memory intact */
    g_assert_cmpuint(qp_state(sb), ==, PVRDMA_QPS_ERR);
    side_expect_cqe(sb, 0xb0, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_RECV, 0);
    side_expect_cqe(sb, 0xb1, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_RECV, 0);
    mr_read(&x.b.d, &sb->mr, S_IOVA, after, sizeof(after));
    g_assert_cmpmem(before, sizeof(before), after, sizeof(after));
    g_assert_cmpuint(peers(&x.a), ==, 1);
    g_assert_cmpuint(peers(&x.b), ==, 1);
    x_fini(&x);
}

static void test_responder_qp_gone(void)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    Side a2, b2;
    struct pvrdma_sge g;
    struct pvrdma_qp_attr at = { 0 };
    union pvrdma_cmd_req req = { 0 };

    x_setup(&x, 7);
    g = mr_sge(sa, 0, 64);
    send_wqe(sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a, &x.b);
    expect_cq_empty(&x.a.d, &sa->cq);
    at.qp_state = PVRDMA_QPS_ERR;
    g_assert_cmpuint(modify_qp(&x.b.d, &sb->qp, PVRDMA_QP_STATE, &at), ==, 0);
    PUMP(&x.a, &x.b);
    pass_retry_window(sa);
    side_expect_cqe(sa, 0xa1, PVRDMA_WC_RETRY_EXC_ERR, PVRDMA_WC_SEND, 0);
    g_assert_cmpuint(qp_state(sa), ==, PVRDMA_QPS_ERR);

    side_init(&a2, &x.a, PVRDMA_QPT_RC);
    side_init(&b2, &x.b, PVRDMA_QPT_RC);
    rc_connect(&a2, &b2, 7);
    g = mr_sge(&a2, 0, 64);
    send_wqe(&a2, 0xa2, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a, &x.b);
    expect_cq_empty(&x.a.d, &a2.cq);
    req.destroy_qp.qp_handle = b2.qp.handle;
    g_assert_cmpuint(dev_cmd(&x.b.d, &req, PVRDMA_CMD_DESTROY_QP, NULL), ==,
                     0);
    PUMP(&x.a, &x.b);
    pass_retry_window(&a2);
    side_expect_cqe(&a2, 0xa2, PVRDMA_WC_RETRY_EXC_ERR, PVRDMA_WC_SEND, 0);
    g_assert_cmpuint(peers(&x.a), ==, 1);
    g_assert_cmpuint(peers(&x.b), ==, 1);
    expect_cq_empty(&x.a.d, &a2.cq);
    expect_cq_empty(&x.b.d, &b2.cq);
    x_fini(&x);
}

/*
 * The requester's QP is destroyed, reset or moved to error while its sends
 * wait at the responder for a receive: they must not be delivered when a
 * receive shows up later (the QP that sent them is gone, and so may be the
 * memory they would be read from).
 */
static void test_requester_qp_gone(void)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    Side a2, b2, a3, b3;
    struct pvrdma_sge g, r;
    struct pvrdma_qp_attr at = { 0 };
    union pvrdma_cmd_req req = { 0 };
    Pumper pb;

    x_setup(&x, 7);
    side_init(&a2, &x.a, PVRDMA_QPT_RC);
    side_init(&b2, &x.b, PVRDMA_QPT_RC);
    rc_connect(&a2, &b2, 7);
    side_init(&a3, &x.a, PVRDMA_QPT_RC);
    side_init(&b3, &x.b, PVRDMA_QPT_RC);
    rc_connect(&a3, &b3, 7);
    g = mr_sge(sa, 0, 64);
    send_wqe(sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    g = mr_sge(&a2, 0, 64);
    send_wqe(&a2, 0xa2, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    g = mr_sge(&a3, 0, 64);
    send_wqe(&a3, 0xa3, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a, &x.b);
    expect_cq_empty(&x.a.d, &sa->cq);

    /*
     * sa destroyed, a2 reset (each waits for b, served meanwhile by its
     * own QEMU, to drop the request waiting there: the fence), a3 to error
     */
    pumper_start(&pb, &x.b);
    req.destroy_qp.qp_handle = sa->qp.handle;
    g_assert_cmpuint(dev_cmd(&x.a.d, &req, PVRDMA_CMD_DESTROY_QP, NULL), ==,
                     0);
    at.qp_state = PVRDMA_QPS_RESET;
    g_assert_cmpuint(modify_qp(&x.a.d, &a2.qp, PVRDMA_QP_STATE, &at), ==, 0);
    pumper_stop(&pb);
    side_expect_cqe(&a2, 0xa2, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_SEND, 0);
    at.qp_state = PVRDMA_QPS_ERR;
    g_assert_cmpuint(modify_qp(&x.a.d, &a3.qp, PVRDMA_QP_STATE, &at), ==, 0);
    PUMP(&x.a, &x.b);
    side_expect_cqe(&a3, 0xa3, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_SEND, 0);

    r = mr_sge(sb, 0, 64);
    post_recv(&x.b.d, &sb->qp, 0xb1, &r, 1);
    r = mr_sge(&b2, 0, 64);
    post_recv(&x.b.d, &b2.qp, 0xb2, &r, 1);
    r = mr_sge(&b3, 0, 64);
    post_recv(&x.b.d, &b3.qp, 0xb3, &r, 1);
    PUMP(&x.a, &x.b);
    expect_cq_empty(&x.b.d, &sb->cq);
    expect_cq_empty(&x.b.d, &b2.cq);
    expect_cq_empty(&x.b.d, &b3.cq);
    g_assert_cmpuint(peers(&x.a), ==, 1);
    g_assert_cmpuint(peers(&x.b), ==, 1);
    expect_cq_empty(&x.a.d, &a2.cq);
    expect_cq_empty(&x.a.d, &a3.cq);
    expect_cq_empty(&x.b.d, &sb->cq);
    vm_fini(&x.a);
    vm_fini(&x.b);
    env_fini(&x.e);
}

/*
 * The fence.  The responder copies from and to the requester's memory when
 * it executes a request, which may be long after it was sent (a busy
 * peer's socket backlog, an RNR wait).  a destroys its QP (or resets it,
 * or the guest resets the device) with a SEND, a READ and a SEND waiting
 * for a receive still at b, which runs late, and then reuses the memory
 * at once, as a guest does once the command returned: b must have
 * received the data as it was, and nothing may land in the memory later.
 */
enum { FENCE_DESTROY, FENCE_RESET_QP, FENCE_RESET_DEVICE };

static void fence_case(int how)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    uint8_t p1[P_LEN], p2[2 * 4096], p3[P_LEN], got[P_LEN];
    struct pvrdma_sge g, r;
    Pumper pb;

    x_setup(&x, 7);
    fill_pattern(p1, sizeof(p1), 41);
    fill_pattern(p2, sizeof(p2), 42);
    fill_pattern(p3, sizeof(p3), 43);
    mr_write(&x.a.d, &sa->mr, S_IOVA, p1, sizeof(p1));
    mr_write(&x.b.d, &sb->mr, S_IOVA + 8192, p3, sizeof(p3));
    r = mr_sge(sb, 0, P_LEN);
    post_recv(&x.b.d, &sb->qp, 0xb1, &r, 1);
    PUMP(&x.b);
    g = mr_sge(sa, 0, P_LEN);
    send_wqe(sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    g = mr_sge(sa, 4096, P_LEN);
    rdma_wqe(sa, 0xa2, PVRDMA_WR_RDMA_READ, &g, 1, S_IOVA + 8192,
             sb->mr.rkey, 0);
    g = mr_sge(sa, 0, P_LEN);
    send_wqe(sa, 0xa3, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a);                 /* sent; b has not run */
    expect_cq_empty(&x.a.d, &sa->cq);

    pumper_start_late(&pb, &x.b, 100);
    if (how == FENCE_DESTROY) {
        union pvrdma_cmd_req req = { 0 };

        req.destroy_qp.qp_handle = sa->qp.handle;
        g_assert_cmpuint(dev_cmd(&x.a.d, &req, PVRDMA_CMD_DESTROY_QP, NULL),
                         ==, 0);
    } else if (how == FENCE_RESET_QP) {
        struct pvrdma_qp_attr at = { .qp_state = PVRDMA_QPS_RESET };

        g_assert_cmpuint(modify_qp(&x.a.d, &sa->qp, PVRDMA_QP_STATE, &at),
                         ==, 0);
    } else {
        pvrdma_core_reg_write(&x.a.d.c, PVRDMA_REG_CTL,
                              PVRDMA_DEVICE_CTL_RESET);
    }
    mr_write(&x.a.d, &sa->mr, S_IOVA, p2, sizeof(p2));  /* reused at once */
    pumper_stop(&pb);
    PUMP(&x.a, &x.b);

    side_expect_cqe(sb, 0xb1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, P_LEN);
    mr_read(&x.b.d, &sb->mr, S_IOVA, got, P_LEN);
    g_assert_cmpmem(got, P_LEN, p1, P_LEN);
    mr_read(&x.a.d, &sa->mr, S_IOVA + 4096, got, P_LEN);
    g_assert_cmpmem(got, P_LEN, p2 + 4096, P_LEN);  /* no late READ */
    /* the last SEND was dropped at b, not kept for a later receive */
    r = mr_sge(sb, 4096, P_LEN);
    post_recv(&x.b.d, &sb->qp, 0xb2, &r, 1);
    PUMP(&x.a, &x.b);
    expect_cq_empty(&x.b.d, &sb->cq);
    g_assert_cmpuint(peers(&x.a), ==, 1);
    if (how == FENCE_RESET_DEVICE) {
        vm_fini(&x.a);          /* its CQ went with the reset */
        vm_fini(&x.b);
        env_fini(&x.e);
        return;
    }
    /* what a's QP saw before it went: the drop is a flush */
    side_expect_cqe(sa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, P_LEN);
    side_expect_cqe(sa, 0xa2, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_READ, P_LEN);
    side_expect_cqe(sa, 0xa3, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_SEND, 0);
    x_fini(&x);
}

static void test_fence_destroy(void)
{
    fence_case(FENCE_DESTROY);
}

static void test_fence_reset_qp(void)
{
    fence_case(FENCE_RESET_QP);
}

static void test_fence_reset_device(void)
{
    fence_case(FENCE_RESET_DEVICE);
}

/* A requester QP towards gid on v, connected to dest's QP (fresh objects). */
static void side_reconnect(Side *s, Vm *v, Side *dest, uint8_t rnr)
{
    side_init(s, v, PVRDMA_QPT_RC);
    side_init(dest, dest->v, PVRDMA_QPT_RC);
    rc_connect(s, dest, rnr);
}

/*
 * MODIFY_QP to RESET with a peer that does not answer (its QEMU hangs):
 * the command returns at once with ERR 0 and its response waits for the
 * fence; another command meanwhile is refused (EBUSY, no response) and a
 * doorbell of the QP sends nothing.  The response comes at the fence's
 * bound, the QP in RESET; b, running again, drops what it held.  Then the
 * same wait ended by the peer's answer, and by a device reset (no
 * response at all).
 */
static void post_modify_reset(Vm *v, TQp *qp)
{
    union pvrdma_cmd_req req = { 0 };

    req.modify_qp.hdr.cmd = PVRDMA_CMD_MODIFY_QP;
    req.modify_qp.hdr.response = 0x5a5a0000ull + PVRDMA_CMD_MODIFY_QP;
    req.modify_qp.qp_handle = qp->handle;
    req.modify_qp.attr_mask = PVRDMA_QP_STATE;
    req.modify_qp.attrs.qp_state = PVRDMA_QPS_RESET;
    memcpy(fh_ptr(&v->d.h, v->d.cmd), &req, sizeof(req));
    memset(fh_ptr(&v->d.h, v->d.resp), 0xee, sizeof(union pvrdma_cmd_resp));
    pvrdma_core_reg_write(&v->d.c, PVRDMA_REG_REQUEST, 0);
    g_assert_cmpuint(pvrdma_core_reg_read(&v->d.c, PVRDMA_REG_ERR), ==, 0);
}

static void expect_modify_answered(Vm *v)
{
    const union pvrdma_cmd_resp *r = fh_ptr(&v->d.h, v->d.resp);

    g_assert_true(dev_cmd_answered(&v->d));
    g_assert_cmphex(r->hdr.ack, ==, PVRDMA_CMD_RESP(PVRDMA_CMD_MODIFY_QP));
    g_assert_cmphex(r->hdr.response, ==,
                    0x5a5a0000ull + PVRDMA_CMD_MODIFY_QP);
    g_assert_cmpuint(r->hdr.err, ==, 0);
}

static void test_fence_silent_peer(void)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    FakeHost *ha = &x.a.d.h;
    union pvrdma_cmd_req q = { 0 };
    uint64_t errs;
    struct pvrdma_sge g, r;
    Pumper pb;

    x_setup(&x, 7);
    g = mr_sge(sa, 0, 64);
    send_wqe(sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a);                 /* at b, which does not run */

    post_modify_reset(&x.a, &sa->qp);
    g_assert_true(x.a.d.c.cmd_waits);
    g_assert_false(dev_cmd_answered(&x.a.d));
    errs = x.a.d.c.guest_errors;
    q.query_qp.hdr.cmd = PVRDMA_CMD_QUERY_QP;
    q.query_qp.qp_handle = sa->qp.handle;
    memcpy(fh_ptr(ha, x.a.d.cmd), &q, sizeof(q));
    pvrdma_core_reg_write(&x.a.d.c, PVRDMA_REG_REQUEST, 0);
    g_assert_cmpuint(pvrdma_core_reg_read(&x.a.d.c, PVRDMA_REG_ERR), ==,
                     EBUSY);
    g_assert_cmpuint(x.a.d.c.guest_errors, ==, errs + 1);
    g_assert_false(dev_cmd_answered(&x.a.d));
    send_wqe(sa, 0xa2, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    g_assert_true(fh_pump(&ha, 1, 20000));
    g_assert_false(dev_cmd_answered(&x.a.d));
    g_assert_cmpint(ha->timer_due, ==, ha->now + PVRDMA_FENCE_MS);

    ha->now += PVRDMA_FENCE_MS - 1;
    g_assert_true(fh_pump(&ha, 1, 20000));
    g_assert_false(dev_cmd_answered(&x.a.d));
    ha->now += 1;
    g_assert_true(fh_pump(&ha, 1, 20000));
    expect_modify_answered(&x.a);
    g_assert_false(x.a.d.c.cmd_waits);
    g_assert_cmpuint(qp_state(sa), ==, PVRDMA_QPS_RESET);

    /* b runs again: it drops the SEND (0xa2 never went) */
    PUMP(&x.a, &x.b);
    r = mr_sge(sb, 0, 64);
    post_recv(&x.b.d, &sb->qp, 0xb1, &r, 1);
    PUMP(&x.a, &x.b);
    expect_cq_empty(&x.b.d, &sb->cq);
    expect_cq_empty(&x.a.d, &sa->cq);

    /* the same wait, ended by b's answer */
    side_reconnect(sa, &x.a, sb, 7);
    g = mr_sge(sa, 0, 64);
    send_wqe(sa, 0xa3, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a);
    post_modify_reset(&x.a, &sa->qp);
    g_assert_false(dev_cmd_answered(&x.a.d));
    /* sent meanwhile, it would hold the fence until its bound */
    send_wqe(sa, 0xa5, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    pumper_start(&pb, &x.b);
    dev_cmd_wait(&x.a.d);
    pumper_stop(&pb);
    expect_modify_answered(&x.a);
    g_assert_cmpuint(qp_state(sa), ==, PVRDMA_QPS_RESET);

    /* and by a device reset: no response, nothing left waiting */
    side_reconnect(sa, &x.a, sb, 7);
    g = mr_sge(sa, 0, 64);
    send_wqe(sa, 0xa4, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a);
    post_modify_reset(&x.a, &sa->qp);
    pumper_start_late(&pb, &x.b, 50);
    pvrdma_core_reg_write(&x.a.d.c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_RESET);
    pumper_stop(&pb);
    g_assert_false(x.a.d.c.cmd_waits);
    ha->now += PVRDMA_FENCE_MS;
    PUMP(&x.a, &x.b);
    g_assert_false(dev_cmd_answered(&x.a.d));
    vm_fini(&x.a);
    vm_fini(&x.b);
    env_fini(&x.e);
}

/*
 * The VM stops for a save while MODIFY_QP to RESET waits for a silent
 * peer: the pause drops the peer (it does not answer PAUSE either) and
 * the command is answered then, before the state would be saved.
 */
static void test_fence_wait_quiesce(void)
{
    X x;
    Side *sa = &x.sa;
    struct pvrdma_sge g;

    x_setup(&x, 7);
    g = mr_sge(sa, 0, 64);
    send_wqe(sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a);
    post_modify_reset(&x.a, &sa->qp);
    g_assert_false(dev_cmd_answered(&x.a.d));
    g_assert_false(pvrdma_core_quiesce(&x.a.d.c, 50));
    expect_modify_answered(&x.a);
    g_assert_false(x.a.d.c.cmd_waits);
    g_assert_cmpuint(peers(&x.a), ==, 0);
    pvrdma_core_resume(&x.a.d.c);
    g_assert_cmpuint(qp_state(sa), ==, PVRDMA_QPS_RESET);
    vm_fini(&x.a);
    vm_fini(&x.b);
    env_fini(&x.e);
}

/*
 * A peer goes away with requests in flight (not read yet) and waiting
 * (RNR): they fail with RETRY_EXC_ERR, the QP goes to error and flushes.
 * Its own requests waiting here are dropped.  A new peer joins and
 * traffic works again.
 */
static void test_peer_gone(void)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    Side a2, b2, ab, bb, a3;
    Vm b2vm;
    struct pvrdma_sge g, r;
    uint8_t data[128], got[128];

    x_setup(&x, 7);
    /* b's send waits at a, which has no receive for it */
    side_init(&ab, &x.a, PVRDMA_QPT_RC);
    side_init(&bb, &x.b, PVRDMA_QPT_RC);
    rc_connect(&bb, &ab, 7);
    g = mr_sge(&bb, 0, 64);
    send_wqe(&bb, 0xb9, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a, &x.b);
    expect_cq_empty(&x.b.d, &bb.cq);
    /* a's send waits at b for a receive */
    r = mr_sge(sa, 8192, 64);
    post_recv(&x.a.d, &sa->qp, 0xa0, &r, 1);
    g = mr_sge(sa, 0, 64);
    send_wqe(sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a, &x.b);
    expect_cq_empty(&x.a.d, &sa->cq);
    /* in flight: b has not run since */
    rdma_wqe(sa, 0xa2, PVRDMA_WR_RDMA_WRITE, &g, 1, S_IOVA, sb->mr.rkey, 0);
    PUMP(&x.a);
    expect_cq_empty(&x.a.d, &sa->cq);

    vm_fini(&x.b);
    pass_retry_window(sa);
    side_expect_cqe(sa, 0xa1, PVRDMA_WC_RETRY_EXC_ERR, PVRDMA_WC_SEND, 0);
    side_expect_cqe(sa, 0xa2, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_RDMA_WRITE, 0);
    side_expect_cqe(sa, 0xa0, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_RECV, 0);
    expect_cq_empty(&x.a.d, &sa->cq);
    g_assert_cmpuint(qp_state(sa), ==, PVRDMA_QPS_ERR);
    g_assert_cmpuint(peers(&x.a), ==, 0);
    g_assert_false(reaches(&x.a, x.b.gid));
    g_assert_cmpuint(fh_watch_count(&x.a.d.h), ==, 1);
    g_assert_cmpuint(count_socks(x.e.dir), ==, 1);
    /* b's send is gone: nothing arrives once a receive is posted */
    r = mr_sge(&ab, 0, 64);
    post_recv(&x.a.d, &ab.qp, 0xab, &r, 1);
    PUMP(&x.a);
    expect_cq_empty(&x.a.d, &ab.cq);
    g_assert_cmpuint(qp_state(&ab), ==, PVRDMA_QPS_RTS);

    /* a new VM (same GID) joins: traffic works again */
    vm_init(&b2vm, x.e.dir, 2);
    vm_up(&b2vm);
    PUMP(&x.a, &b2vm);
    g_assert_cmpuint(peers(&x.a), ==, 1);
    g_assert_cmpuint(peers(&b2vm), ==, 1);
    b2.v = &b2vm;
    side_reconnect(&a2, &x.a, &b2, 7);
    fill_pattern(data, sizeof(data), 8);
    mr_write(&x.a.d, &a2.mr, S_IOVA, data, sizeof(data));
    g = mr_sge(&a2, 0, sizeof(data));
    r = mr_sge(&b2, 100, sizeof(data));
    post_recv(&b2vm.d, &b2.qp, 0xb1, &r, 1);
    send_wqe(&a2, 0xa3, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    rdma_wqe(&a2, 0xa4, PVRDMA_WR_RDMA_WRITE, &g, 1, S_IOVA + 5000,
             b2.mr.rkey, 0);
    PUMP(&x.a, &b2vm);
    side_expect_cqe(&a2, 0xa3, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 128);
    side_expect_cqe(&a2, 0xa4, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE, 128);
    side_expect_cqe(&b2, 0xb1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 128);
    mr_read(&b2vm.d, &b2.mr, S_IOVA + 100, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));
    mr_read(&b2vm.d, &b2.mr, S_IOVA + 5000, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));

    /* this one goes too, with a request it never read */
    rdma_wqe(&a2, 0xa5, PVRDMA_WR_RDMA_READ, &g, 1, S_IOVA, b2.mr.rkey, 0);
    PUMP(&x.a);
    vm_fini(&b2vm);
    pass_retry_window(&a2);
    side_expect_cqe(&a2, 0xa5, PVRDMA_WC_RETRY_EXC_ERR, PVRDMA_WC_RDMA_READ,
                    0);
    g_assert_cmpuint(qp_state(&a2), ==, PVRDMA_QPS_ERR);
    g_assert_cmpuint(peers(&x.a), ==, 0);
    /* with nobody there, an RC send fails after its retries too */
    side_init(&a3, &x.a, PVRDMA_QPT_RC);
    rc_to_rts_gid(&x.a.d, &a3.qp, 5, x.b.gid, 7);
    g = mr_sge(&a3, 0, 64);
    send_wqe(&a3, 0xa6, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    pass_retry_window(&a3);
    side_expect_cqe(&a3, 0xa6, PVRDMA_WC_RETRY_EXC_ERR, PVRDMA_WC_SEND, 0);
    expect_cq_empty(&x.a.d, &a2.cq);
    vm_fini(&x.a);
    env_fini(&x.e);
}

/*
 * The peer goes while requests are still queued in the requester (its
 * socket was full): every one of them completes, the first with
 * RETRY_EXC_ERR, the rest flushed; nothing leaks.
 */
static void peer_gone_backlog_run(uint32_t ring_size, unsigned n)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    FhWatch *w;
    int sz = 1;

    g_ring_size = ring_size;
    x_setup(&x, 7);
    g_ring_size = CR_RING_SIZE;
    w = peer_watch(&x.a);
    g_assert_nonnull(w);
    if (!ring_size) {
        g_assert_cmpint(setsockopt(w->fd, SOL_SOCKET, SO_SNDBUF, &sz,
                                   sizeof(sz)), ==, 0);
    }
    for (unsigned i = 0; i < n; i++) {
        struct pvrdma_sge g = mr_sge(sa, i * 100, 100);

        rdma_wqe(sa, 0x100 + i, PVRDMA_WR_RDMA_WRITE, &g, 1, S_IOVA,
                 sb->mr.rkey, 0);
        PUMP(&x.a);     /* one run's requests share a datagram: one each */
    }
    PUMP(&x.a);
    if (!ring_size) {
        g_assert_nonnull(peer_watch(&x.a)->write);
    }
    vm_fini(&x.b);
    pass_retry_window(sa);
    side_expect_cqe(sa, 0x100, PVRDMA_WC_RETRY_EXC_ERR, PVRDMA_WC_RDMA_WRITE,
                    0);
    for (unsigned i = 1; i < n; i++) {
        side_expect_cqe(sa, 0x100 + i, PVRDMA_WC_WR_FLUSH_ERR,
                        PVRDMA_WC_RDMA_WRITE, 0);
    }
    expect_cq_empty(&x.a.d, &sa->cq);
    g_assert_cmpuint(peers(&x.a), ==, 0);
    g_assert_cmpuint(fh_watch_count(&x.a.d.h), ==, 1);
    vm_fini(&x.a);
    env_fini(&x.e);
}

static void test_peer_gone_backlog(void)
{
    peer_gone_backlog_run(0, 15);
}

/* The same with the requests in the ring: the same completions. */
static void test_peer_gone_backlog_ring(void)
{
    peer_gone_backlog_run(CR_RING_SIZE, 15);
}

void cr_add_errors_tests(void)
{
    g_test_add_func("/pvrdma/cr/rnr-recover", test_rnr_recover);
    g_test_add_func("/pvrdma/cr/fail-behind-inflight", test_fail_behind_inflight);
    g_test_add_func("/pvrdma/cr/rnr-timeout", test_rnr_timeout);
    g_test_add_func("/pvrdma/cr/bad-rkey", test_bad_rkey);
    g_test_add_func("/pvrdma/cr/responder-qp-gone", test_responder_qp_gone);
    g_test_add_func("/pvrdma/cr/requester-qp-gone", test_requester_qp_gone);
    g_test_add_func("/pvrdma/cr/fence/destroy", test_fence_destroy);
    g_test_add_func("/pvrdma/cr/fence/reset-qp", test_fence_reset_qp);
    g_test_add_func("/pvrdma/cr/fence/reset-device", test_fence_reset_device);
    g_test_add_func("/pvrdma/cr/fence/silent-peer", test_fence_silent_peer);
    g_test_add_func("/pvrdma/cr/fence/wait-quiesce", test_fence_wait_quiesce);
    g_test_add_func("/pvrdma/cr/peer-gone", test_peer_gone);
    g_test_add_func("/pvrdma/cr/peer-gone-backlog", test_peer_gone_backlog);
    g_test_add_func("/pvrdma/cr/peer-gone-backlog-ring",
                    test_peer_gone_backlog_ring);
}
