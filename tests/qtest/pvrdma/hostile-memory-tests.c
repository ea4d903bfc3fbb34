/*
 * QTest for the pvrdma device: a hostile guest's memory and DMA: garbage
 * ring indices, page directories that point at MMIO, a CQ resized to a
 * lying geometry, MSI-X aimed at the device's own registers, and
 * create/destroy cycles that must leak nothing.
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

void pvrdma_add_hostile_memory_tests(void)
{
    qtest_add_func("/pvrdma/hostile/garbage-indices",
                   test_garbage_indices);
    qtest_add_func("/pvrdma/hostile/pdir-mmio", test_pdir_mmio);
    qtest_add_func("/pvrdma/hostile/resize-cq-geometry",
                   test_resize_cq_geometry);
    qtest_add_func("/pvrdma/hostile/msix-at-own-registers",
                   test_msix_at_own_registers);
    qtest_add_func("/pvrdma/hostile/leak-cycles", test_leak_cycles);
}
