/*
 * QTest for the pvrdma device against a hostile guest: further classes of
 * hostile input (ring sizes and indices, stale handles and doorbells, DSR
 * changes, MMIO page directories, MSI-X at the device's own registers,
 * create/destroy cycles).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "libqos/pvrdma.h"
#include "hw/pci/pci_regs.h"
#include "qapi/error.h"
#include "qobject/qdict.h"
#include "qobject/qjson.h"
#include "pvrdma/hostile.h"

/* Zero-sized and maximal rings                                        */

static void test_ring_sizes(void)
{
    QPvrdma *d = qpvrdma_start_active(",max-cqe=512,max-qp-wr=512,"
                                      "max-srq-wr=512");
    QPvrdmaCounts before;
    union pvrdma_cmd_resp r;
    QPvrdmaRing ring;
    uint32_t pd = qpvrdma_create_pd(d, 0);
    QPvrdmaCq cq;
    Pair p;

    qpvrdma_create_cq(d, &cq, 64);
    qpvrdma_ring_alloc(d, &ring, 40);
    qpvrdma_counts(d, &before);
    /* zero-sized: CQ, send queue, receive queue, SRQ */
    {
        struct pvrdma_cmd_create_cq c = cq_req(&ring, 0);
        struct pvrdma_cmd_create_qp q = qp_req(&ring, pd, cq.handle, 0, 1);
        struct pvrdma_cmd_create_srq s = srq_req(&ring, pd, 0, 1);

        c.nchunks = 2;
        qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
        q.total_chunks = 3;
        q.max_recv_wr = 16;
        qpvrdma_cmd_err(d, &q, sizeof(q), EINVAL);
        q.max_send_wr = 16;
        q.max_recv_wr = 0;
        qpvrdma_cmd_err(d, &q, sizeof(q), EINVAL);
        q.max_recv_wr = 16;
        q.max_send_sge = 0;
        qpvrdma_cmd_err(d, &q, sizeof(q), EINVAL);
        q.max_send_sge = 2;
        q.max_recv_sge = 0;
        qpvrdma_cmd_err(d, &q, sizeof(q), EINVAL);
        q.max_recv_sge = 2;
        q.send_chunks = 0;
        q.total_chunks = 1;
        qpvrdma_cmd_err(d, &q, sizeof(q), EINVAL);
        s.nchunks = 2;
        qpvrdma_cmd_err(d, &s, sizeof(s), EINVAL);
        s.attrs.max_wr = 16;
        s.attrs.max_sge = 0;
        qpvrdma_cmd_err(d, &s, sizeof(s), EINVAL);
    }
    /* maximal: exactly the limit works, twice the limit does not */
    {
        struct pvrdma_cmd_create_cq c = cq_req(&ring, 512);
        struct pvrdma_cmd_create_srq s = srq_req(&ring, pd, 512, 1);
        uint32_t sp = 512 * qpvrdma_wqe_stride(
            sizeof(struct pvrdma_sq_wqe_hdr), 2) / 4096;
        uint32_t rp = 512 * qpvrdma_wqe_stride(
            sizeof(struct pvrdma_rq_wqe_hdr), 2) / 4096;
        struct pvrdma_cmd_create_qp q = qp_req(&ring, pd, cq.handle, 512,
                                               sp);

        c.nchunks = 1 + 512 * 64 / 4096;
        qpvrdma_cmd_ok(d, &c, sizeof(c), &r);
        g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_CQ,
                                         r.create_cq_resp.cq_handle), ==, 0);
        c.cqe = 1024;
        c.nchunks = 1 + 1024 * 64 / 4096;
        qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
        c.cqe = 0x80000000;
        qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);

        q.total_chunks = 1 + sp + rp;
        qpvrdma_cmd_ok(d, &q, sizeof(q), &r);
        g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_QP,
                                         r.create_qp_resp_v2.qp_handle), ==,
                         0);
        q.max_send_wr = 1024;
        qpvrdma_cmd_err(d, &q, sizeof(q), EINVAL);
        q.max_send_wr = 512;
        q.max_recv_wr = 0x80000000;
        qpvrdma_cmd_err(d, &q, sizeof(q), EINVAL);

        s.nchunks = 1 + 512 * 32 / 4096;
        qpvrdma_cmd_ok(d, &s, sizeof(s), &r);
        g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_SRQ,
                                         r.create_srq_resp.srqn), ==, 0);
        s.attrs.max_wr = 1024;
        qpvrdma_cmd_err(d, &s, sizeof(s), EINVAL);
    }
    qpvrdma_assert_counts(d, &before);
    /* the smallest rings (one entry) wrap correctly */
    qpvrdma_bind_gid(d, 0);
    pair_setup(&p, d, PVRDMA_QPT_RC, 1);
    for (int i = 0; i < 5; i++) {
        pair_works(&p);
    }
    pair_destroy(&p);
    qpvrdma_ring_free(&ring);
    qpvrdma_stop(d);
}

/* ------------------------------------------------------------------ */
/* Doorbells for destroyed QPs, CQs and SRQs                           */

static void test_doorbell_after_destroy(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    QPvrdmaCounts before;
    QPvrdmaRing sring;
    union pvrdma_cmd_resp r;
    uint64_t buf, errs;
    uint32_t key, srq, cq_prod;
    QPvrdmaCq cq2;
    Pair p;

    qpvrdma_bind_gid(d, 0);
    qpvrdma_counts(d, &before);
    pair_setup(&p, d, PVRDMA_QPT_RC, 8);
    buf = qpvrdma_alloc(d, 4096);
    key = qpvrdma_create_mr(d, p.pd, buf, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    qpvrdma_create_cq(d, &cq2, 64);
    qpvrdma_ring_alloc(d, &sring, 2);
    {
        struct pvrdma_cmd_create_srq s = srq_req(&sring, p.pd, 16, 1);

        qpvrdma_cmd_ok(d, &s, sizeof(s), &r);
        srq = r.create_srq_resp.srqn;
    }
    /* a send waiting for a receive (RNR), then its QP is destroyed */
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_SEND, 1, buf, 32, key, 0, 0);
    qpvrdma_cq_empty(d, &p.cq);
    g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_QP, p.a.handle),
                     ==, 0);
    g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_CQ, cq2.handle),
                     ==, 0);
    g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_SRQ, srq), ==, 0);
    /* the receive that would have woken it, and doorbells for the dead */
    qpvrdma_post_recv(d, &p.b, 2, buf + 2048, 64, key);
    errs = guest_errors(d);
    for (int i = 0; i < 10; i++) {
        qpvrdma_uar_write(d, 0, PVRDMA_UAR_QP_OFFSET,
                          PVRDMA_UAR_QP_SEND | PVRDMA_UAR_QP_RECV |
                          p.a.handle);
        qpvrdma_uar_write(d, 0, PVRDMA_UAR_CQ_OFFSET,
                          PVRDMA_UAR_CQ_ARM | PVRDMA_UAR_CQ_POLL |
                          cq2.handle);
        qpvrdma_uar_write(d, 0, PVRDMA_UAR_SRQ_OFFSET,
                          PVRDMA_UAR_SRQ_RECV | srq);
    }
    g_assert_cmpuint(guest_errors(d), >=, errs + 30);
    qtest_clock_step(d->qts, 10000);
    /* nothing completed anywhere: the dead QP's WQE is gone with it */
    qpvrdma_cq_empty(d, &p.cq);
    cq_prod = qtest_readl(d->qts, cq2.ring.pages[0] + 8);
    g_assert_cmpuint(cq_prod, ==, 0);
    g_assert(!qpvrdma_vector_seen(d, PVRDMA_INTR_VECTOR_CQ));
    /* clean up what is left; counts back to where they started */
    g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_QP, p.b.handle),
                     ==, 0);
    g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_MR, key >> 8), ==,
                     0);
    g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_CQ, p.cq.handle),
                     ==, 0);
    g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_PD, p.pd), ==, 0);
    qpvrdma_assert_counts(d, &before);
    device_works(d);
    qpvrdma_stop(d);
}

/* ------------------------------------------------------------------ */
/* Handles used after their object was destroyed                       */

static void test_handle_reuse(void)
{
    QPvrdma *d = qpvrdma_start_active(",max-pd=4,max-cq=4,max-qp=6");
    uint64_t uar = bar_addr(d, PVRDMA_BAR_UAR);
    QPvrdmaCounts before;
    union pvrdma_cmd_resp r;
    QPvrdmaRing ring;
    uint64_t buf;
    uint32_t key, ctx, dead_pd, dead_cq, dead_qp, dead_srq;
    struct pvrdma_cqe e;
    QPvrdmaCq cq;
    Pair p;

    qpvrdma_bind_gid(d, 0);
    qpvrdma_counts(d, &before);
    qpvrdma_ring_alloc(d, &ring, 8);
    /* a user context, destroyed, then named by CREATE_PD/CQ */
    {
        struct pvrdma_cmd_create_uc uc = { .hdr.cmd = PVRDMA_CMD_CREATE_UC,
                                           .pfn64 = (uar >> 12) + 2 };
        struct pvrdma_cmd_create_pd c = { .hdr.cmd = PVRDMA_CMD_CREATE_PD };
        struct pvrdma_cmd_create_cq cc = cq_req(&ring, 64);

        qpvrdma_cmd_ok(d, &uc, sizeof(uc), &r);
        ctx = r.create_uc_resp.ctx_handle;
        g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_UC, ctx), ==,
                         0);
        c.ctx_handle = ctx;
        qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
        cc.ctx_handle = ctx;
        cc.nchunks = 2;
        qpvrdma_cmd_err(d, &cc, sizeof(cc), EINVAL);
        /* and its UAR page is no doorbell page any more */
        qpvrdma_uar_write(d, 2, PVRDMA_UAR_CQ_OFFSET, PVRDMA_UAR_CQ_ARM | 1);
    }
    /* PD, CQ, QP, SRQ destroyed, then named by the next commands */
    dead_pd = qpvrdma_create_pd(d, 0);
    qpvrdma_create_cq(d, &cq, 64);
    dead_cq = cq.handle;
    {
        struct pvrdma_cmd_create_qp q = qp_req(&ring, dead_pd, dead_cq, 16,
                                               1);
        struct pvrdma_cmd_create_srq s = srq_req(&ring, dead_pd, 16, 1);

        q.total_chunks = 3;
        qpvrdma_cmd_ok(d, &q, sizeof(q), &r);
        dead_qp = r.create_qp_resp_v2.qp_handle;
        s.nchunks = 2;
        qpvrdma_cmd_ok(d, &s, sizeof(s), &r);
        dead_srq = r.create_srq_resp.srqn;
        g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_QP, dead_qp),
                         ==, 0);
        g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_SRQ,
                                         dead_srq), ==, 0);
        g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_CQ, dead_cq),
                         ==, 0);
        g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_PD, dead_pd),
                         ==, 0);
        qpvrdma_cmd_err(d, &q, sizeof(q), EINVAL);        /* dead PD and CQ */
        qpvrdma_cmd_err(d, &s, sizeof(s), EINVAL);        /* dead PD */
    }
    {
        struct pvrdma_cmd_query_qp qq = { .hdr.cmd = PVRDMA_CMD_QUERY_QP,
                                          .qp_handle = dead_qp };
        struct pvrdma_cmd_query_srq qs = { .hdr.cmd = PVRDMA_CMD_QUERY_SRQ,
                                           .srq_handle = dead_srq };
        struct pvrdma_cmd_resize_cq rc = { .hdr.cmd = PVRDMA_CMD_RESIZE_CQ,
                                           .cq_handle = dead_cq, .cqe = 32 };
        struct pvrdma_qp_attr a = { .qp_state = PVRDMA_QPS_ERR };

        qpvrdma_cmd_err(d, &qq, sizeof(qq), EINVAL);
        qpvrdma_cmd_err(d, &qs, sizeof(qs), EINVAL);
        qpvrdma_cmd_err(d, &rc, sizeof(rc), EINVAL);
        g_assert_cmpuint(qpvrdma_modify_qp(d, dead_qp, PVRDMA_QP_STATE, &a),
                         !=, 0);
    }
    /* a new PD/CQ/QP set (may reuse the handles): the old names now */
    /* point at new objects, and an MR key of a dead MR is refused */
    pair_setup(&p, d, PVRDMA_QPT_RC, 8);
    buf = qpvrdma_alloc(d, 4096);
    key = qpvrdma_create_mr(d, p.pd, buf, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_MR, key >> 8), ==,
                     0);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 5, buf, 16, key, buf + 64,
                    key);
    g_assert(qpvrdma_poll_cq(d, &p.cq, &e));
    g_assert_cmpuint(e.wr_id, ==, 5);
    g_assert_cmpuint(e.status, ==, PVRDMA_WC_LOC_PROT_ERR);
    pair_destroy(&p);
    /* the handle spaces are intact: 3 PDs and 3 CQs fit again */
    {
        uint32_t pds[3];
        QPvrdmaCq cqs[3];

        for (int i = 0; i < 3; i++) {
            pds[i] = qpvrdma_create_pd(d, 0);
            qpvrdma_create_cq(d, &cqs[i], 16);
        }
        for (int i = 0; i < 3; i++) {
            g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_CQ,
                                             cqs[i].handle), ==, 0);
            g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_PD,
                                             pds[i]), ==, 0);
        }
    }
    qpvrdma_assert_counts(d, &before);
    qpvrdma_ring_free(&ring);
    device_works(d);
    qpvrdma_stop(d);
}

/* ------------------------------------------------------------------ */
/* A command while the previous one has not been collected             */

static void test_cmd_in_flight(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    struct pvrdma_cmd_create_pd c = { .hdr.cmd = PVRDMA_CMD_CREATE_PD,
                                      .hdr.response = 1 };
    struct pvrdma_cmd_query_pkey q = { .hdr.cmd = PVRDMA_CMD_QUERY_PKEY,
                                       .hdr.response = 2, .port_num = 1 };
    struct pvrdma_cmd_hdr junk = { .cmd = 0x5555, .response = 3 };
    union pvrdma_cmd_resp r;
    QPvrdmaCounts before;

    qpvrdma_counts(d, &before);
    /* two requests back to back: the second answer overwrites the first */
    qtest_memwrite(d->qts, d->cmd, &c, sizeof(c));
    qpvrdma_reg_write(d, PVRDMA_REG_REQUEST, 0);
    qtest_memwrite(d->qts, d->cmd, &q, sizeof(q));
    qpvrdma_reg_write(d, PVRDMA_REG_REQUEST, 0);
    g_assert_cmpuint(qpvrdma_reg_read(d, PVRDMA_REG_ERR), ==, 0);
    qtest_memread(d->qts, d->resp, &r, sizeof(r));
    g_assert_cmphex(r.hdr.response, ==, 2);
    g_assert_cmphex(r.hdr.ack, ==, PVRDMA_CMD_RESP(PVRDMA_CMD_QUERY_PKEY));
    g_assert_cmpuint(qpvrdma_counter(d, "x-used-pd"), ==, before.pd + 1);
    /* the same request twice without rewriting the slot: two PDs */
    qtest_memwrite(d->qts, d->cmd, &c, sizeof(c));
    qpvrdma_reg_write(d, PVRDMA_REG_REQUEST, 0);
    qpvrdma_reg_write(d, PVRDMA_REG_REQUEST, 0);
    g_assert_cmpuint(qpvrdma_counter(d, "x-used-pd"), ==, before.pd + 3);
    /* a flood of garbage requests, with and without a non-zero value */
    qtest_memwrite(d->qts, d->cmd, &junk, sizeof(junk));
    for (int i = 0; i < 500; i++) {
        qpvrdma_reg_write(d, PVRDMA_REG_REQUEST, i & 1 ? 0 : 0xdead);
        g_assert_cmpuint(qpvrdma_reg_read(d, PVRDMA_REG_ERR), ==, EINVAL);
    }
    qtest_memread(d->qts, d->resp, &r, sizeof(r));
    g_assert_cmphex(r.hdr.response, ==, 3);
    g_assert_cmpuint(r.hdr.err, ==, EINVAL);
    /* the response vector was raised for each: drain, then it works */
    for (uint32_t h = 1; h <= 3; h++) {
        g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_PD, h), ==, 0);
    }
    qpvrdma_assert_counts(d, &before);
    device_works(d);
    qpvrdma_stop(d);
}

/* ------------------------------------------------------------------ */
/* The DSR moved or cleared while active                               */

static void test_dsr_moved(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    struct pvrdma_device_shared_region dsr;
    uint64_t other = qpvrdma_alloc(d, 4096);

    /* the guest rewrites the DSR's contents: the device kept a copy */
    qtest_memread(d->qts, d->dsr, &dsr, sizeof(dsr));
    dsr.cmd_slot_dma = bar_addr(d, PVRDMA_BAR_REGS);
    dsr.resp_slot_dma = 0;
    dsr.async_ring_pages.num_pages = 0xffffffff;
    dsr.cq_ring_pages.pdir_dma = 0;
    qtest_memwrite(d->qts, d->dsr, &dsr, sizeof(dsr));
    device_works(d);
    /* and moves or clears its address: ignored while active */
    qpvrdma_reg_write(d, PVRDMA_REG_DSRLOW, (uint32_t)other);
    qpvrdma_reg_write(d, PVRDMA_REG_DSRHIGH, other >> 32);
    qpvrdma_reg_write(d, PVRDMA_REG_DSRLOW, 0);
    qpvrdma_reg_write(d, PVRDMA_REG_DSRHIGH, 0);
    g_assert_cmphex(qpvrdma_reg_read(d, PVRDMA_REG_DSRLOW), ==,
                    (uint32_t)d->dsr);
    g_assert_cmphex(qpvrdma_reg_read(d, PVRDMA_REG_DSRHIGH), ==,
                    d->dsr >> 32);
    /* the capabilities were not republished into the other page */
    g_assert_cmpuint(qtest_readq(d->qts, other +
                                 offsetof(struct pvrdma_device_shared_region,
                                          caps)), ==, 0);
    device_works(d);
    /* after a reset, a cleared DSR cannot be activated */
    qpvrdma_reg_write(d, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_RESET);
    qpvrdma_reg_write(d, PVRDMA_REG_DSRLOW, 0);
    qpvrdma_reg_write(d, PVRDMA_REG_DSRHIGH, 0);
    g_assert_cmpuint(qpvrdma_activate(d), !=, 0);
    expect_inactive(d);
    /* the garbage the guest left in the old DSR is refused too */
    qpvrdma_reg_write(d, PVRDMA_REG_DSRLOW, (uint32_t)d->dsr);
    qpvrdma_reg_write(d, PVRDMA_REG_DSRHIGH, d->dsr >> 32);
    g_assert_cmpuint(qpvrdma_activate(d), !=, 0);
    expect_inactive(d);
    qpvrdma_setup_dsr(d, PVRDMA_VERSION);
    g_assert_cmpuint(qpvrdma_activate(d), ==, 0);
    device_works(d);
    qpvrdma_stop(d);
}

/* ------------------------------------------------------------------ */
/* Reset while work is queued                                          */

static void test_reset_during_traffic(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    QPvrdmaCounts zero;
    uint64_t buf;
    uint32_t key;
    Pair p;

    for (int how = 0; how < 2; how++) {
        qpvrdma_bind_gid(d, 0);
        pair_setup(&p, d, PVRDMA_QPT_RC, 64);
        buf = qpvrdma_alloc(d, 4096);
        key = qpvrdma_create_mr(d, p.pd, buf, 4096,
                                PVRDMA_ACCESS_LOCAL_WRITE);
        qpvrdma_uar_write(d, 0, PVRDMA_UAR_CQ_OFFSET,
                          PVRDMA_UAR_CQ_ARM | p.cq.handle);
        /* a send waiting on RNR and a full ring of writes behind it */
        qpvrdma_send_wr(d, &p.a, PVRDMA_WR_SEND, 1, buf, 32, key, 0, 0);
        for (int i = 0; i < 40; i++) {
            qpvrdma_send_wr(d, &p.b, PVRDMA_WR_RDMA_WRITE, 100 + i, buf, 8,
                            key, buf + 64, key);
        }
        if (how == 0) {
            qpvrdma_reg_write(d, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_RESET);
        } else {
            qpvrdma_system_reset(d);
        }
        /* everything is gone, nothing is mapped */
        qpvrdma_counts(d, &zero);
        g_assert_cmpuint(zero.uc + zero.pd + zero.mr + zero.cq + zero.qp +
                         zero.srq + zero.mapped, ==, 0);
        /* the old rings are left alone: no completion lands after reset */
        qtest_writel(d->qts, p.cq.ring.pages[0] + 8, 0x1234);
        qtest_writel(d->qts, p.b.ring.pages[0] + 4, 0x4321);
        qpvrdma_uar_write(d, 0, PVRDMA_UAR_QP_OFFSET,
                          PVRDMA_UAR_QP_SEND | p.a.handle);
        qtest_clock_step(d->qts, 100000);
        g_assert_cmphex(qtest_readl(d->qts, p.cq.ring.pages[0] + 8), ==,
                        0x1234);
        g_assert_cmphex(qtest_readl(d->qts, p.b.ring.pages[0] + 4), ==,
                        0x4321);
        /* the driver probes again */
        qpvrdma_ring_free(&p.a.ring);
        qpvrdma_ring_free(&p.b.ring);
        qpvrdma_ring_free(&p.cq.ring);
        qpvrdma_setup_dsr(d, PVRDMA_VERSION);
        g_assert_cmpuint(qpvrdma_activate(d), ==, 0);
        device_works(d);
    }
    qpvrdma_stop(d);
}

/* ------------------------------------------------------------------ */
/* Ring indices outside [0, 2N), or more than N ahead                  */

static void test_garbage_indices(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    static const uint32_t bad_prod[] = { 8, 9, 15, 0x80000000, 0xffffffff,
                                         5 };
    struct pvrdma_eqe eqe;
    QPvrdmaCounts before;
    struct pvrdma_cqe e;
    uint64_t buf;
    uint32_t key, prod, k;
    Pair p;

    qpvrdma_bind_gid(d, 0);
    qpvrdma_counts(d, &before);
    /* SQ producer: outside [0, 2N) for N = 4, or N + 1 ahead (5) */
    for (unsigned i = 0; i < ARRAY_SIZE(bad_prod); i++) {
        pair_setup(&p, d, PVRDMA_QPT_RC, 4);
        qtest_writel(d->qts, p.a.ring.pages[0], bad_prod[i]);
        qpvrdma_uar_write(d, 0, PVRDMA_UAR_QP_OFFSET,
                          PVRDMA_UAR_QP_SEND | p.a.handle);
        qtest_clock_step(d->qts, 1000);
        g_assert_cmpuint(query_qp_state(d, p.a.handle), ==, PVRDMA_QPS_ERR);
        /* the device's consumer index did not move */
        g_assert_cmpuint(qtest_readl(d->qts, p.a.ring.pages[0] + 4), ==, 0);
        pair_destroy(&p);
    }
    /* RQ producer garbage at the responder: the sender gets an error */
    pair_setup(&p, d, PVRDMA_QPT_RC, 4);
    buf = qpvrdma_alloc(d, 4096);
    key = qpvrdma_create_mr(d, p.pd, buf, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    qtest_writel(d->qts, p.b.ring.pages[0] + 8, 0xfffffff0);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_SEND, 0xa1, buf, 16, key, 0, 0);
    g_assert(qpvrdma_poll_cq(d, &p.cq, &e));
    g_assert_cmpuint(e.wr_id, ==, 0xa1);
    g_assert_cmpuint(e.status, !=, PVRDMA_WC_SUCCESS);
    g_assert_cmpuint(query_qp_state(d, p.b.handle), ==, PVRDMA_QPS_ERR);
    g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_MR, key >> 8), ==,
                     0);
    pair_destroy(&p);

    /* CQ consumer garbage: the CQ goes to error, CQ_ERR is reported */
    pair_setup(&p, d, PVRDMA_QPT_RC, 4);
    key = qpvrdma_create_mr(d, p.pd, buf, 4096, PVRDMA_ACCESS_LOCAL_WRITE |
                            PVRDMA_ACCESS_REMOTE_WRITE);
    qtest_writel(d->qts, p.cq.ring.pages[0] + 12, 0xdeadbeef);
    for (int i = 0; i < 3; i++) {
        qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, i, buf, 8, key,
                        buf + 64, key);
    }
    g_assert(qpvrdma_wait_vector(d, PVRDMA_INTR_VECTOR_ASYNC));
    /*
     * The bad SQ/RQ producer indices above reported QP_FATAL events first;
     * CQ_ERR for this CQ follows them.
     */
    prod = qtest_readl(d->qts, d->async_pages[0] + 8);
    g_assert_cmpuint(prod, >=, 1);
    for (k = 0; k < prod; k++) {
        qtest_memread(d->qts, d->async_pages[1] + k * sizeof(eqe), &eqe,
                      sizeof(eqe));
        if (eqe.type != PVRDMA_EVENT_QP_FATAL) {
            break;
        }
    }
    g_assert_cmpuint(k, <, prod);
    g_assert_cmpuint(eqe.type, ==, PVRDMA_EVENT_CQ_ERR);
    g_assert_cmpuint(eqe.info, ==, p.cq.handle);
    g_assert_cmpuint(qtest_readl(d->qts, p.cq.ring.pages[0] + 8), ==, 0);
    /* async ring consumer garbage: further events are dropped, no harm */
    qtest_writel(d->qts, d->async_pages[0] + 12, 0xffffffff);
    prod = qtest_readl(d->qts, d->async_pages[0] + 8);
    {
        struct pvrdma_qp_attr a = { .qp_state = PVRDMA_QPS_SQD,
                                    .en_sqd_async_notify = 1 };

        qpvrdma_modify_qp(d, p.b.handle, PVRDMA_QP_STATE |
                          PVRDMA_QP_EN_SQD_ASYNC_NOTIFY, &a);
    }
    qtest_clock_step(d->qts, 1000);
    g_assert_cmpuint(qtest_readl(d->qts, d->async_pages[0] + 8), ==, prod);
    g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_MR, key >> 8), ==,
                     0);
    pair_destroy(&p);

    /* CQ notification ring consumer garbage: notification dropped */
    pair_setup(&p, d, PVRDMA_QPT_RC, 4);
    key = qpvrdma_create_mr(d, p.pd, buf, 4096, PVRDMA_ACCESS_LOCAL_WRITE |
                            PVRDMA_ACCESS_REMOTE_WRITE);
    qtest_writel(d->qts, d->cq_pages[0] + 12, 0x7fffffff);
    qpvrdma_uar_write(d, 0, PVRDMA_UAR_CQ_OFFSET,
                      PVRDMA_UAR_CQ_ARM | p.cq.handle);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 9, buf, 8, key, buf + 64,
                    key);
    qpvrdma_expect_cqe(d, &p.cq, 9, PVRDMA_WC_RDMA_WRITE, PVRDMA_WC_SUCCESS,
                       8);
    g_assert(!qpvrdma_vector_seen(d, PVRDMA_INTR_VECTOR_CQ));
    g_assert_cmpuint(qtest_readl(d->qts, d->cq_pages[0] + 8), ==, 0);
    g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_MR, key >> 8), ==,
                     0);
    pair_destroy(&p);

    /* SRQ producer garbage: the receive side errors, the sender too */
    {
        QPvrdmaRing sring;
        union pvrdma_cmd_resp r;
        QPvrdmaCq cq;
        QPvrdmaQp a, b;
        uint32_t pd = qpvrdma_create_pd(d, 0), srq;
        struct pvrdma_cmd_create_srq s;

        qpvrdma_create_cq(d, &cq, 64);
        qpvrdma_ring_alloc(d, &sring, 2);
        s = srq_req(&sring, pd, 16, 1);
        qpvrdma_cmd_ok(d, &s, sizeof(s), &r);
        srq = r.create_srq_resp.srqn;
        qpvrdma_create_qp(d, &a, pd, cq.handle, cq.handle, PVRDMA_QPT_RC, 4,
                          0);
        qpvrdma_create_qp(d, &b, pd, cq.handle, cq.handle, PVRDMA_QPT_RC, 4,
                          srq);
        qpvrdma_qp_to_rts(d, &a, PVRDMA_QPT_RC, b.qpn);
        qpvrdma_qp_to_rts(d, &b, PVRDMA_QPT_RC, a.qpn);
        key = qpvrdma_create_mr(d, pd, buf, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
        qtest_writel(d->qts, sring.pages[0] + 8, 33);
        qpvrdma_uar_write(d, 0, PVRDMA_UAR_SRQ_OFFSET,
                          PVRDMA_UAR_SRQ_RECV | srq);
        qpvrdma_send_wr(d, &a, PVRDMA_WR_SEND, 0xa2, buf, 16, key, 0, 0);
        g_assert(qpvrdma_poll_cq(d, &cq, &e));
        g_assert_cmpuint(e.wr_id, ==, 0xa2);
        g_assert_cmpuint(e.status, !=, PVRDMA_WC_SUCCESS);
        g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_QP, a.handle),
                         ==, 0);
        g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_QP, b.handle),
                         ==, 0);
        g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_SRQ, srq), ==,
                         0);
        g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_MR, key >> 8),
                         ==, 0);
        g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_CQ,
                                         cq.handle), ==, 0);
        g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_PD, pd), ==,
                         0);
    }
    qpvrdma_assert_counts(d, &before);
    /* the rings' indices are fixed by the guest: the device works again */
    qtest_writel(d->qts, d->cq_pages[0] + 12, 0);
    qtest_writel(d->qts, d->async_pages[0] + 12,
                 qtest_readl(d->qts, d->async_pages[0] + 8));
    device_works(d);
    qpvrdma_stop(d);
}

/* ------------------------------------------------------------------ */
/* Page directory entries pointing at MMIO or outside RAM              */

static void test_pdir_mmio(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    QPvrdmaCounts before;
    QPvrdmaRing ring;
    uint64_t bad[NBAD], dir;
    uint32_t pd = qpvrdma_create_pd(d, 0);
    QPvrdmaCq cq;

    bad_pages(d, bad);
    qpvrdma_create_cq(d, &cq, 64);
    qpvrdma_ring_alloc(d, &ring, 3);
    qpvrdma_counts(d, &before);
    for (unsigned b = 0; b < NBAD; b++) {
        struct pvrdma_cmd_create_cq c = cq_req(&ring, 64);
        struct pvrdma_cmd_create_qp q = qp_req(&ring, pd, cq.handle, 16, 1);
        struct pvrdma_cmd_create_srq s = srq_req(&ring, pd, 16, 1);

        c.nchunks = 2;
        s.nchunks = 2;
        q.total_chunks = 3;
        if (b >= NBAD_READ) {
            goto pages;     /* ROM is readable: only its pages fail */
        }
        /* the directory is MMIO */
        c.pdir_dma = q.pdir_dma = s.pdir_dma = bad[b];
        qpvrdma_cmd_err(d, &c, sizeof(c), EFAULT);
        qpvrdma_cmd_err(d, &q, sizeof(q), EFAULT);
        qpvrdma_cmd_err(d, &s, sizeof(s), EFAULT);
        /* the directory's table is MMIO */
        dir = qpvrdma_alloc(d, 4096);
        qtest_writeq(d->qts, dir, bad[b]);
        c.pdir_dma = q.pdir_dma = s.pdir_dma = dir;
        qpvrdma_cmd_err(d, &c, sizeof(c), EFAULT);
        qpvrdma_cmd_err(d, &q, sizeof(q), EFAULT);
        qpvrdma_cmd_err(d, &s, sizeof(s), EFAULT);
    pages:
        /* the state page (page 0) is MMIO */
        c.pdir_dma = q.pdir_dma = s.pdir_dma =
            qpvrdma_pdir(d, (uint64_t[]) { bad[b], ring.pages[1],
                         ring.pages[2] }, 3);
        qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
        qpvrdma_cmd_err(d, &q, sizeof(q), EINVAL);
        qpvrdma_cmd_err(d, &s, sizeof(s), EINVAL);
        /* an element page is MMIO */
        c.pdir_dma = q.pdir_dma = s.pdir_dma =
            qpvrdma_pdir(d, (uint64_t[]) { ring.pages[0], bad[b],
                         ring.pages[2] }, 3);
        qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
        qpvrdma_cmd_err(d, &q, sizeof(q), EINVAL);
        qpvrdma_cmd_err(d, &s, sizeof(s), EINVAL);
    }
    /* a page that straddles the end of RAM (128 MiB) */
    {
        struct pvrdma_cmd_create_cq c = cq_req(&ring, 64);

        c.nchunks = 2;
        c.pdir_dma = qpvrdma_pdir(d, (uint64_t[]) { ring.pages[0],
                                  128 * 1024 * 1024 - 2048 }, 2);
        qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    }
    qpvrdma_assert_counts(d, &before);
    /* the device did not write its registers through any of this */
    g_assert_cmpuint(qpvrdma_reg_read(d, PVRDMA_REG_VERSION), ==, 20);
    g_assert_cmphex(qpvrdma_reg_read(d, PVRDMA_REG_DSRLOW), ==,
                    (uint32_t)d->dsr);
    qpvrdma_ring_free(&ring);
    device_works(d);
    qpvrdma_stop(d);
}

/* ------------------------------------------------------------------ */
/* A CQ resized in place: the device must use the new geometry          */

static void test_resize_cq_geometry(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    struct pvrdma_cmd_resize_cq rc = { .hdr.cmd = PVRDMA_CMD_RESIZE_CQ,
                                       .cqe = 128 };
    struct pvrdma_cmd_create_cq c;
    union pvrdma_cmd_resp r;
    struct pvrdma_cqe e;
    QPvrdmaCq cq;
    QPvrdmaQp a, b;
    uint64_t buf;
    uint32_t pd, key;

    qpvrdma_bind_gid(d, 0);
    pd = qpvrdma_create_pd(d, 0);
    /* 64 entries in pages that can hold 128 (one spare page is allowed) */
    memset(&cq, 0, sizeof(cq));
    qpvrdma_ring_alloc(d, &cq.ring, 3);
    c = cq_req(&cq.ring, 64);
    qpvrdma_cmd_ok(d, &c, sizeof(c), &r);
    cq.handle = rc.cq_handle = r.create_cq_resp.cq_handle;
    qpvrdma_cmd_ok(d, &rc, sizeof(rc), &r);
    g_assert_cmpuint(r.resize_cq_resp.cqe, ==, 128);
    cq.cqe = 128;
    qpvrdma_create_qp(d, &a, pd, cq.handle, cq.handle, PVRDMA_QPT_RC, 64, 0);
    qpvrdma_create_qp(d, &b, pd, cq.handle, cq.handle, PVRDMA_QPT_RC, 64, 0);
    qpvrdma_qp_to_rts(d, &a, PVRDMA_QPT_RC, b.qpn);
    qpvrdma_qp_to_rts(d, &b, PVRDMA_QPT_RC, a.qpn);
    buf = qpvrdma_alloc(d, 4096);
    key = qpvrdma_create_mr(d, pd, buf, 4096, PVRDMA_ACCESS_LOCAL_WRITE |
                            PVRDMA_ACCESS_REMOTE_WRITE);
    /* 100 completions outstanding fit a 128-entry CQ */
    for (int i = 0; i < 100; i++) {
        qpvrdma_send_wr(d, &a, PVRDMA_WR_RDMA_WRITE, i, buf, 8, key,
                        buf + 64, key);
        if (i % 50 == 49) {
            qtest_clock_step(d->qts, 100);
        }
    }
    for (int i = 0; i < 100; i++) {
        g_assert(qpvrdma_poll_cq(d, &cq, &e));
        g_assert_cmpuint(e.wr_id, ==, i);
        g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
    }
    /* and the indices wrap at 2N = 256, as the driver's do */
    for (int i = 100; i < 300; i++) {
        qpvrdma_send_wr(d, &a, PVRDMA_WR_RDMA_WRITE, i, buf, 8, key,
                        buf + 64, key);
        qpvrdma_expect_cqe(d, &cq, i, PVRDMA_WC_RDMA_WRITE,
                           PVRDMA_WC_SUCCESS, 8);
    }
    g_assert(!qpvrdma_vector_seen(d, PVRDMA_INTR_VECTOR_ASYNC));
    qpvrdma_stop(d);
}

/* ------------------------------------------------------------------ */
/* MSI-X vectors aimed at the device's own registers                   */

static void test_msix_at_own_registers(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    uint64_t regs = bar_addr(d, PVRDMA_BAR_REGS);
    struct pvrdma_qp_attr a = { .rnr_retry = 1 };
    uint64_t buf;
    uint32_t key;
    Pair p;

    qpvrdma_bind_gid(d, 0);
    pair_setup(&p, d, PVRDMA_QPT_RC, 8);
    /* RNR retries run out after a few ms of virtual time: a timer */
    g_assert_cmpuint(qpvrdma_modify_qp(d, p.a.handle, PVRDMA_QP_RNR_RETRY,
                                       &a), ==, 0);
    buf = qpvrdma_alloc(d, 4096);
    key = qpvrdma_create_mr(d, p.pd, buf, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    qpvrdma_uar_write(d, 0, PVRDMA_UAR_CQ_OFFSET,
                      PVRDMA_UAR_CQ_ARM | p.cq.handle);
    /* every vector now writes RESET into CTL, as a guest may program */
    for (unsigned v = 0; v < PVRDMA_MAX_INTERRUPTS; v++) {
        qpvrdma_msix_vector(d, v, regs + PVRDMA_REG_CTL,
                            PVRDMA_DEVICE_CTL_RESET);
    }
    /* no receive posted: the send fails from the RNR timer, and its */
    /* completion raises the CQ vector while the QP is being served */
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_SEND, 1, buf, 32, key, 0, 0);
    qtest_clock_step(d->qts, 2000000000LL);
    /* the device did not reset itself from inside its own work */
    g_assert_cmpuint(qpvrdma_counter(d, "x-used-qp"), ==, 2);
    for (unsigned v = 0; v < PVRDMA_MAX_INTERRUPTS; v++) {
        qpvrdma_msix_vector(d, v, d->msix_addr + 4 * v, 0x5a5a0000u | v);
    }
    qpvrdma_expect_cqe(d, &p.cq, 1, 0, PVRDMA_WC_RNR_RETRY_EXC_ERR, 0);
    g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_MR, key >> 8), ==,
                     0);
    pair_destroy(&p);
    device_works(d);
    qpvrdma_stop(d);
}

/* ------------------------------------------------------------------ */
/* Create/destroy cycles of every object type, activate/reset cycles   */
/* (PVRDMA_LEAK_CYCLES / PVRDMA_LEAK_RESETS; scripts/leakcheck.sh runs */
/* 1000 / 100 under valgrind, make check a few)                        */

static void test_leak_cycles(void)
{
    unsigned cycles = env_count("PVRDMA_LEAK_CYCLES", 10);
    unsigned resets = env_count("PVRDMA_LEAK_RESETS", 3);
    QPvrdma *d = qpvrdma_start_active(NULL);
    uint64_t uar = bar_addr(d, PVRDMA_BAR_UAR);
    uint64_t buf = qpvrdma_alloc(d, 4 * 4096);
    QPvrdmaRing cqr, qpr, srqr;
    QPvrdmaCounts before;
    union pvrdma_cmd_resp r;
    uint32_t pd, cq;

    qpvrdma_ring_alloc(d, &cqr, 2);
    qpvrdma_ring_alloc(d, &qpr, 3);
    qpvrdma_ring_alloc(d, &srqr, 2);
    pd = qpvrdma_create_pd(d, 0);
    {
        struct pvrdma_cmd_create_cq c = cq_req(&cqr, 64);

        qpvrdma_cmd_ok(d, &c, sizeof(c), &r);
        cq = r.create_cq_resp.cq_handle;
    }
    qpvrdma_counts(d, &before);
    for (unsigned i = 0; i < cycles; i++) {
        struct pvrdma_cmd_create_uc uc = { .hdr.cmd = PVRDMA_CMD_CREATE_UC,
                                           .pfn64 = (uar >> 12) + 1 };
        struct pvrdma_cmd_create_cq c = cq_req(&cqr, 64);
        struct pvrdma_cmd_create_qp q = qp_req(&qpr, pd, cq, 16, 1);
        struct pvrdma_cmd_create_srq s = srq_req(&srqr, pd, 16, 1);
        struct pvrdma_cmd_create_mr m = { .hdr.cmd = PVRDMA_CMD_CREATE_MR,
                                          .pd_handle = pd,
                                          .access_flags =
                                              PVRDMA_ACCESS_LOCAL_WRITE };
        struct pvrdma_cmd_create_bind b = { .hdr.cmd =
                                            PVRDMA_CMD_CREATE_BIND,
                                            .index = i % 16,
                                            .gid_type =
                                            PVRDMA_GID_TYPE_FLAG_ROCE_V2 };
        struct pvrdma_cmd_destroy_bind db = { .hdr.cmd =
                                              PVRDMA_CMD_DESTROY_BIND,
                                              .index = i % 16 };
        uint32_t h;

        qpvrdma_cmd_ok(d, &uc, sizeof(uc), &r);
        g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_UC,
                                         r.create_uc_resp.ctx_handle), ==, 0);
        h = qpvrdma_create_pd(d, 0);
        g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_PD, h), ==, 0);
        qpvrdma_cmd_ok(d, &c, sizeof(c), &r);
        g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_CQ,
                                         r.create_cq_resp.cq_handle), ==, 0);
        q.total_chunks = 3;
        for (int t = 0; t < 2; t++) {
            q.qp_type = t ? PVRDMA_QPT_UD : PVRDMA_QPT_RC;
            qpvrdma_cmd_ok(d, &q, sizeof(q), &r);
            g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_QP,
                                             r.create_qp_resp_v2.qp_handle),
                             ==, 0);
        }
        s.nchunks = 2;
        qpvrdma_cmd_ok(d, &s, sizeof(s), &r);
        g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_SRQ,
                                         r.create_srq_resp.srqn), ==, 0);
        /* user MR over parts of 4 pages, DMA MR, FRMR */
        h = qpvrdma_create_mr(d, pd, buf + 100, 3 * 4096, 0) >> 8;
        g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_MR, h), ==, 0);
        m.flags = PVRDMA_MR_FLAG_DMA;
        qpvrdma_cmd_ok(d, &m, sizeof(m), &r);
        g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_MR,
                                         r.create_mr_resp.mr_handle), ==, 0);
        m.flags = PVRDMA_MR_FLAG_FRMR;
        m.nchunks = 128;
        qpvrdma_cmd_ok(d, &m, sizeof(m), &r);
        g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_MR,
                                         r.create_mr_resp.mr_handle), ==, 0);
        memcpy(b.new_gid, qpvrdma_test_gid, 16);
        memcpy(db.dest_gid, qpvrdma_test_gid, 16);
        qpvrdma_cmd_ok(d, &b, sizeof(b), &r);
        qpvrdma_cmd_ok(d, &db, sizeof(db), &r);
    }
    qpvrdma_assert_counts(d, &before);
    /* activate / reset, with objects alive at each reset */
    for (unsigned i = 0; i < resets; i++) {
        struct pvrdma_cmd_create_srq s = srq_req(&srqr, 0, 16, 1);
        QPvrdmaCq c;
        QPvrdmaQp qp;

        qpvrdma_reg_write(d, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_RESET);
        g_assert_cmpuint(qpvrdma_counter(d, "x-mapped"), ==, 0);
        qpvrdma_setup_dsr(d, PVRDMA_VERSION);
        g_assert_cmpuint(qpvrdma_activate(d), ==, 0);
        pd = qpvrdma_create_pd(d, 0);
        qpvrdma_create_cq(d, &c, 64);
        qpvrdma_create_qp(d, &qp, pd, c.handle, c.handle, PVRDMA_QPT_RC, 16,
                          0);
        qpvrdma_create_mr(d, pd, buf, 4096, 0);
        s.pd_handle = pd;
        s.nchunks = 2;
        qpvrdma_cmd_ok(d, &s, sizeof(s), &r);
        qpvrdma_bind_gid(d, 0);
        qpvrdma_ring_free(&c.ring);
        qpvrdma_ring_free(&qp.ring);
    }
    qpvrdma_reg_write(d, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_RESET);
    qpvrdma_counts(d, &before);
    g_assert_cmpuint(before.uc + before.pd + before.mr + before.cq +
                     before.qp + before.srq + before.mapped, ==, 0);
    qpvrdma_ring_free(&cqr);
    qpvrdma_ring_free(&qpr);
    qpvrdma_ring_free(&srqr);
    qpvrdma_stop(d);
}

void pvrdma_add_hostile_input_tests(void)
{
    qtest_add_func("/pvrdma/hostile/ring-sizes", test_ring_sizes);
    qtest_add_func("/pvrdma/hostile/doorbell-after-destroy",
                   test_doorbell_after_destroy);
    qtest_add_func("/pvrdma/hostile/handle-reuse", test_handle_reuse);
    qtest_add_func("/pvrdma/hostile/cmd-in-flight", test_cmd_in_flight);
    qtest_add_func("/pvrdma/hostile/dsr-moved", test_dsr_moved);
    qtest_add_func("/pvrdma/hostile/reset-during-traffic",
                   test_reset_during_traffic);
    qtest_add_func("/pvrdma/hostile/garbage-indices", test_garbage_indices);
    qtest_add_func("/pvrdma/hostile/pdir-mmio", test_pdir_mmio);
    qtest_add_func("/pvrdma/hostile/resize-cq-geometry",
                   test_resize_cq_geometry);
    qtest_add_func("/pvrdma/hostile/msix-at-own-registers",
                   test_msix_at_own_registers);
    qtest_add_func("/pvrdma/hostile/leak-cycles", test_leak_cycles);
}
