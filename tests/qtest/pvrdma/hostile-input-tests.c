/*
 * QTest for the pvrdma device against a hostile guest: further classes of
 * hostile input (ring sizes, stale handles and doorbells, a command in
 * flight, DSR changes, a reset during traffic); its memory and DMA are in
 * hostile-memory-tests.c.
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

/* ------------------------------------------------------------------ */
/* Page directory entries pointing at MMIO or outside RAM              */

/* ------------------------------------------------------------------ */
/* A CQ resized in place: the device must use the new geometry          */

/* ------------------------------------------------------------------ */
/* MSI-X vectors aimed at the device's own registers                   */

/* ------------------------------------------------------------------ */
/* Create/destroy cycles of every object type, activate/reset cycles   */
/* (PVRDMA_LEAK_CYCLES / PVRDMA_LEAK_RESETS: a few by default, 1000 /  */
/* 100 under valgrind)                                                 */

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
}
