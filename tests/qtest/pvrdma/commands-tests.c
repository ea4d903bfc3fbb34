/*
 * QTest for the pvrdma device: the verbs commands, each on its success and
 * error paths: user contexts and PDs, MRs, CQs, QPs and their states,
 * GID binding, SRQs.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "qemu/bswap.h"
#include "libqos/pvrdma.h"
#include "hw/pci/pci_regs.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "qobject/qjson.h"
#include "qapi/error.h"
#include "pvrdma/framework.h"

static void test_uc_pd(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    uint64_t uar = qpci_config_readl(d->dev, PCI_BASE_ADDRESS_2) & ~0xfull;
    struct pvrdma_cmd_create_uc uc = { .hdr.cmd = PVRDMA_CMD_CREATE_UC };
    struct pvrdma_cmd_destroy_uc du = { .hdr.cmd = PVRDMA_CMD_DESTROY_UC };
    struct pvrdma_cmd_destroy_pd dp = { .hdr.cmd = PVRDMA_CMD_DESTROY_PD };
    struct pvrdma_cmd_create_pd cp = { .hdr.cmd = PVRDMA_CMD_CREATE_PD };
    union pvrdma_cmd_resp r;
    uint32_t ctx, pd;

    uar |= (uint64_t)qpci_config_readl(d->dev, PCI_BASE_ADDRESS_3) << 32;
    /* UAR page 0 is the driver's own */
    uc.pfn64 = uar >> 12;
    qpvrdma_cmd_err(d, &uc, sizeof(uc), EINVAL);
    uc.pfn64 = (uar >> 12) + 512;       /* beyond the BAR */
    qpvrdma_cmd_err(d, &uc, sizeof(uc), EINVAL);
    uc.pfn64 = (uar >> 12) + 3;
    qpvrdma_cmd_ok(d, &uc, sizeof(uc), &r);
    ctx = r.create_uc_resp.ctx_handle;
    qpvrdma_cmd_err(d, &uc, sizeof(uc), EBUSY);      /* page already taken */

    pd = qpvrdma_create_pd(d, ctx);
    cp.ctx_handle = 4242;               /* no such context */
    qpvrdma_cmd_err(d, &cp, sizeof(cp), EINVAL);
    du.ctx_handle = ctx;
    qpvrdma_cmd_err(d, &du, sizeof(du), EBUSY);    /* context has a PD */
    dp.pd_handle = pd;
    qpvrdma_cmd_ok(d, &dp, sizeof(dp), &r);
    qpvrdma_cmd_err(d, &dp, sizeof(dp), EINVAL);      /* double destroy */
    qpvrdma_cmd_ok(d, &du, sizeof(du), &r);
    qpvrdma_cmd_err(d, &du, sizeof(du), EINVAL);
    dp.pd_handle = 0;
    qpvrdma_cmd_err(d, &dp, sizeof(dp), EINVAL);
    qpvrdma_stop(d);
}

static void test_pd_exhaustion(void)
{
    QPvrdma *d = qpvrdma_start_active(",max-pd=8");
    struct pvrdma_cmd_create_pd cp = { .hdr.cmd = PVRDMA_CMD_CREATE_PD };
    struct pvrdma_cmd_destroy_pd dp = { .hdr.cmd = PVRDMA_CMD_DESTROY_PD };
    union pvrdma_cmd_resp r;
    uint32_t h[8], n = 0;

    while (qpvrdma_cmd(d, &cp, sizeof(cp), &r) == 0) {
        g_assert_cmpuint(n, <, 8);
        h[n++] = r.create_pd_resp.pd_handle;
        g_assert_cmpuint(h[n - 1], <, 8);
    }
    g_assert_cmpuint(r.hdr.err, ==, ENOMEM);
    g_assert_cmpuint(n, ==, 7);
    for (uint32_t i = 0; i < n; i++) {
        dp.pd_handle = h[i];
        qpvrdma_cmd_ok(d, &dp, sizeof(dp), &r);
    }
    qpvrdma_create_pd(d, 0);
    qpvrdma_stop(d);
}

static void test_mr(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    uint32_t pd = qpvrdma_create_pd(d, 0);
    uint64_t buf = qpvrdma_alloc(d, 3 * 4096);
    uint64_t pages[3] = { buf, buf + 4096, buf + 8192 };
    struct pvrdma_cmd_create_mr c = { .hdr.cmd = PVRDMA_CMD_CREATE_MR };
    struct pvrdma_cmd_destroy_mr dm = { .hdr.cmd = PVRDMA_CMD_DESTROY_MR };
    struct pvrdma_cmd_destroy_pd dp = { .hdr.cmd = PVRDMA_CMD_DESTROY_PD,
                                        .pd_handle = pd };
    union pvrdma_cmd_resp r;
    uint32_t key;

    key = qpvrdma_create_mr(d, pd, buf + 100, 8000, PVRDMA_ACCESS_LOCAL_WRITE);
    g_assert_cmpuint(key, !=, 0);
    /* optional bits (relaxed ordering, as perftest asks) are ignored */
    g_assert_cmpuint(qpvrdma_create_mr(d, pd, buf, 4096,
                                       PVRDMA_ACCESS_LOCAL_WRITE |
                                       (1u << 20)), !=, 0);

    c.pd_handle = pd;
    c.start = buf;
    c.length = 3 * 4096;
    c.nchunks = 3;
    c.pdir_dma = qpvrdma_pdir(d, pages, 3);
    c.access_flags = PVRDMA_ACCESS_REMOTE_WRITE;   /* needs LOCAL_WRITE */
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.access_flags = 0x4000;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.access_flags = 0;
    c.nchunks = 2;                                  /* too few pages */
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.nchunks = 3;
    c.length = 0;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.length = 1ull << 40;                          /* beyond max-mr-size */
    c.nchunks = 1u << 28;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.length = 3 * 4096;
    c.nchunks = 3;
    c.pd_handle = 77;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.pd_handle = pd;
    pages[1] = 0xfffffffff0000000ull;               /* not RAM */
    c.pdir_dma = qpvrdma_pdir(d, pages, 3);
    qpvrdma_cmd_err(d, &c, sizeof(c), EFAULT);
    pages[1] = buf + 4097;                          /* not page aligned */
    c.pdir_dma = qpvrdma_pdir(d, pages, 3);
    qpvrdma_cmd_err(d, &c, sizeof(c), EFAULT);
    c.pdir_dma = 0x123;                             /* bad directory */
    qpvrdma_cmd_err(d, &c, sizeof(c), EFAULT);

    /* DMA MR and fast-reg MR */
    c.flags = PVRDMA_MR_FLAG_DMA;
    c.access_flags = PVRDMA_ACCESS_LOCAL_WRITE;
    qpvrdma_cmd_ok(d, &c, sizeof(c), &r);
    c.flags = PVRDMA_MR_FLAG_FRMR;
    c.nchunks = 129;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.nchunks = 16;
    qpvrdma_cmd_ok(d, &c, sizeof(c), &r);
    c.flags = 0x80;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);

    qpvrdma_cmd_err(d, &dp, sizeof(dp), EBUSY);    /* PD has MRs */
    dm.mr_handle = r.create_mr_resp.mr_handle;
    qpvrdma_cmd_ok(d, &dm, sizeof(dm), &r);
    qpvrdma_cmd_err(d, &dm, sizeof(dm), EINVAL);
    dm.mr_handle = 0;
    qpvrdma_cmd_err(d, &dm, sizeof(dm), EINVAL);
    qpvrdma_stop(d);
}

static void test_cq(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    struct pvrdma_cmd_create_cq c = { .hdr.cmd = PVRDMA_CMD_CREATE_CQ };
    struct pvrdma_cmd_resize_cq rc = { .hdr.cmd = PVRDMA_CMD_RESIZE_CQ };
    struct pvrdma_cmd_destroy_cq dc = { .hdr.cmd = PVRDMA_CMD_DESTROY_CQ };
    union pvrdma_cmd_resp r;
    QPvrdmaRing ring;
    QPvrdmaCq cq;

    qpvrdma_create_cq(d, &cq, 128);
    qpvrdma_ring_alloc(d, &ring, 3);
    c.pdir_dma = ring.pdir;
    c.nchunks = 3;
    c.cqe = 100;                        /* not a power of two */
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.cqe = 1u << 30;                   /* beyond max-cqe */
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.cqe = 128;                        /* needs 3 pages: fine */
    c.nchunks = 0xffffffff;             /* CVE-2018-20125 class */
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.nchunks = 1;                      /* no room for entries */
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.nchunks = 3;
    c.cqe = 256;                        /* 256 entries need 5 pages */
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.cqe = 64;
    c.ctx_handle = 9;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);

    rc.cq_handle = cq.handle;
    rc.cqe = 64;
    qpvrdma_cmd_ok(d, &rc, sizeof(rc), &r);
    g_assert_cmpuint(r.resize_cq_resp.cqe, ==, 64);
    rc.cqe = 1024;                      /* does not fit the pages */
    qpvrdma_cmd_err(d, &rc, sizeof(rc), EINVAL);
    rc.cq_handle = 999;
    qpvrdma_cmd_err(d, &rc, sizeof(rc), EINVAL);

    dc.cq_handle = cq.handle;
    qpvrdma_cmd_ok(d, &dc, sizeof(dc), &r);
    qpvrdma_cmd_err(d, &dc, sizeof(dc), EINVAL);
    qpvrdma_ring_free(&ring);
    qpvrdma_ring_free(&cq.ring);
    qpvrdma_stop(d);
}

static void test_qp_create(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    uint32_t pd = qpvrdma_create_pd(d, 0);
    struct pvrdma_cmd_create_qp c = { .hdr.cmd = PVRDMA_CMD_CREATE_QP };
    struct pvrdma_cmd_destroy_qp dq = { .hdr.cmd = PVRDMA_CMD_DESTROY_QP };
    struct pvrdma_cmd_destroy_cq dc = { .hdr.cmd = PVRDMA_CMD_DESTROY_CQ };
    struct pvrdma_cmd_query_qp qq = { .hdr.cmd = PVRDMA_CMD_QUERY_QP };
    union pvrdma_cmd_resp r;
    QPvrdmaRing ring;
    QPvrdmaCq cq;
    QPvrdmaQp qp, gsi, gsi2;

    qpvrdma_create_cq(d, &cq, 64);
    qpvrdma_create_qp(d, &qp, pd, cq.handle, cq.handle, PVRDMA_QPT_RC, 16, 0);
    g_assert_cmpuint(qp.qpn, >=, 2);
    qpvrdma_create_qp(d, &gsi, pd, cq.handle, cq.handle, PVRDMA_QPT_GSI, 16, 0);
    g_assert_cmpuint(gsi.qpn, ==, 1);

    qpvrdma_ring_alloc(d, &ring, 4);
    c.pdir_dma = ring.pdir;
    c.pd_handle = pd;
    c.send_cq_handle = c.recv_cq_handle = cq.handle;
    c.max_send_wr = c.max_recv_wr = 16;
    c.max_send_sge = c.max_recv_sge = 2;
    c.total_chunks = 4;
    c.send_chunks = 2;
    c.qp_type = PVRDMA_QPT_GSI;         /* only one GSI QP */
    qpvrdma_cmd_err(d, &c, sizeof(c), EBUSY);
    c.qp_type = PVRDMA_QPT_UC;          /* the driver never creates UC */
    qpvrdma_cmd_err(d, &c, sizeof(c), EOPNOTSUPP);
    c.qp_type = PVRDMA_QPT_RC;
    c.send_cq_handle = 55;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.send_cq_handle = cq.handle;
    c.max_send_wr = 15;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.max_send_wr = 1u << 20;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.max_send_wr = 16;
    c.max_send_sge = 1000;              /* CVE-2018-20124 class */
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.max_send_sge = 2;
    c.max_inline_data = 64;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.max_inline_data = 0;
    c.send_chunks = 4;                  /* no receive pages left */
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.send_chunks = 1;                  /* 16 x 128 B needs 1 page: ok */
    c.total_chunks = 0xffff;            /* far more pages than needed */
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.total_chunks = 4;
    c.is_srq = 1;
    c.srq_handle = 3;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.is_srq = 0;
    c.pd_handle = 99;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);

    qq.qp_handle = qp.handle;
    qpvrdma_cmd_ok(d, &qq, sizeof(qq), &r);
    g_assert_cmpuint(r.query_qp_resp.attrs.qp_state, ==, PVRDMA_QPS_RESET);
    g_assert_cmpuint(r.query_qp_resp.attrs.cap.max_send_wr, ==, 16);
    qq.qp_handle = 0;
    qpvrdma_cmd_err(d, &qq, sizeof(qq), EINVAL);

    dc.cq_handle = cq.handle;
    qpvrdma_cmd_err(d, &dc, sizeof(dc), EBUSY);      /* CQ in use */
    dq.qp_handle = qp.handle;
    qpvrdma_cmd_ok(d, &dq, sizeof(dq), &r);
    qpvrdma_cmd_err(d, &dq, sizeof(dq), EINVAL);
    dq.qp_handle = gsi.handle;
    qpvrdma_cmd_ok(d, &dq, sizeof(dq), &r);
    /* the GSI QP can be created again */
    qpvrdma_create_qp(d, &gsi2, pd, cq.handle, cq.handle, PVRDMA_QPT_GSI, 16,
                      0);
    g_assert_cmpuint(gsi2.qpn, ==, 1);
    dq.qp_handle = gsi2.handle;
    qpvrdma_cmd_ok(d, &dq, sizeof(dq), &r);
    qpvrdma_cmd_ok(d, &dc, sizeof(dc), &r);
    qpvrdma_stop(d);
}

static void test_qp_modify(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    uint32_t pd = qpvrdma_create_pd(d, 0);
    struct pvrdma_qp_attr a = { 0 };
    QPvrdmaCq cq;
    QPvrdmaQp qp;

    qpvrdma_create_cq(d, &cq, 64);
    qpvrdma_create_qp(d, &qp, pd, cq.handle, cq.handle, PVRDMA_QPT_RC, 8, 0);
    /* RESET -> RTR is not a legal transition */
    a.qp_state = PVRDMA_QPS_RTR;
    g_assert_cmpuint(qpvrdma_modify_qp(d, qp.handle, PVRDMA_QP_STATE, &a), ==,
                     EINVAL);
    /* RESET -> INIT without the required attributes */
    a.qp_state = PVRDMA_QPS_INIT;
    g_assert_cmpuint(qpvrdma_modify_qp(d, qp.handle, PVRDMA_QP_STATE, &a), ==,
                     EINVAL);
    /* bad port, bad mask bits, bad handle */
    a.port_num = 3;
    g_assert_cmpuint(qpvrdma_modify_qp(d, qp.handle, PVRDMA_QP_STATE |
                               PVRDMA_QP_PKEY_INDEX | PVRDMA_QP_PORT |
                               PVRDMA_QP_ACCESS_FLAGS, &a), ==, EINVAL);
    g_assert_cmpuint(qpvrdma_modify_qp(d, qp.handle, 1u << 25, &a), !=, 0);
    g_assert_cmpuint(qpvrdma_modify_qp(d, 777, PVRDMA_QP_STATE, &a), !=, 0);
    /* wrong current state */
    a.cur_qp_state = PVRDMA_QPS_RTS;
    g_assert_cmpuint(qpvrdma_modify_qp(d, qp.handle, PVRDMA_QP_CUR_STATE, &a),
                     !=, 0);
    a.qp_state = 9;
    g_assert_cmpuint(qpvrdma_modify_qp(d, qp.handle, PVRDMA_QP_STATE, &a), !=,
                     0);

    qpvrdma_bind_gid(d, 0);
    qpvrdma_qp_to_rts(d, &qp, PVRDMA_QPT_RC, qp.qpn);
    /* RTS -> SQD -> RTS, then to ERR and back to RESET */
    a.qp_state = PVRDMA_QPS_SQD;
    g_assert_cmpuint(qpvrdma_modify_qp(d, qp.handle, PVRDMA_QP_STATE, &a), ==,
                     0);
    a.qp_state = PVRDMA_QPS_RTS;
    g_assert_cmpuint(qpvrdma_modify_qp(d, qp.handle, PVRDMA_QP_STATE, &a), ==,
                     0);
    a.qp_state = PVRDMA_QPS_ERR;
    g_assert_cmpuint(qpvrdma_modify_qp(d, qp.handle, PVRDMA_QP_STATE, &a), ==,
                     0);
    a.qp_state = PVRDMA_QPS_RTS;
    g_assert_cmpuint(qpvrdma_modify_qp(d, qp.handle, PVRDMA_QP_STATE, &a), ==,
                     EINVAL);
    a.qp_state = PVRDMA_QPS_RESET;
    g_assert_cmpuint(qpvrdma_modify_qp(d, qp.handle, PVRDMA_QP_STATE, &a), ==,
                     0);
    qpvrdma_stop(d);
}

static void test_bind(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    struct pvrdma_cmd_create_bind c = { .hdr.cmd = PVRDMA_CMD_CREATE_BIND,
                                        .gid_type = 1 };
    struct pvrdma_cmd_destroy_bind db = { .hdr.cmd =
                                          PVRDMA_CMD_DESTROY_BIND };
    union pvrdma_cmd_resp r;

    memcpy(c.new_gid, qpvrdma_test_gid, 16);
    c.index = 15;
    qpvrdma_cmd_ok(d, &c, sizeof(c), &r);
    c.index = 16;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.index = 1;
    c.gid_type = 3;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    db.index = 15;
    /* not the GID stored there */
    qpvrdma_cmd_err(d, &db, sizeof(db), EINVAL);
    memcpy(db.dest_gid, qpvrdma_test_gid, 16);
    qpvrdma_cmd_ok(d, &db, sizeof(db), &r);
    qpvrdma_cmd_err(d, &db, sizeof(db), EINVAL);
    db.index = 1000;
    qpvrdma_cmd_err(d, &db, sizeof(db), EINVAL);
    qpvrdma_stop(d);
}

static void test_srq(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    uint32_t pd = qpvrdma_create_pd(d, 0);
    struct pvrdma_cmd_create_srq c = { .hdr.cmd = PVRDMA_CMD_CREATE_SRQ };
    struct pvrdma_cmd_modify_srq m = { .hdr.cmd = PVRDMA_CMD_MODIFY_SRQ };
    struct pvrdma_cmd_query_srq q = { .hdr.cmd = PVRDMA_CMD_QUERY_SRQ };
    struct pvrdma_cmd_destroy_srq ds = { .hdr.cmd = PVRDMA_CMD_DESTROY_SRQ };
    struct pvrdma_cmd_destroy_qp dq = { .hdr.cmd = PVRDMA_CMD_DESTROY_QP };
    union pvrdma_cmd_resp r;
    QPvrdmaRing ring;
    uint32_t srq;
    QPvrdmaCq cq;
    QPvrdmaQp qp;

    qpvrdma_ring_alloc(d, &ring, 2);
    c.pdir_dma = ring.pdir;
    c.pd_handle = pd;
    c.nchunks = 2;
    c.attrs.max_wr = 64;
    c.attrs.max_sge = 2;
    c.attrs.srq_limit = 10;
    qpvrdma_cmd_ok(d, &c, sizeof(c), &r);
    srq = r.create_srq_resp.srqn;
    c.attrs.max_wr = 100;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.attrs.max_wr = 64;
    c.attrs.max_sge = 100;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.attrs.max_sge = 2;
    c.nchunks = 100000;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.nchunks = 2;
    c.srq_type = 1;                     /* XRC */
    qpvrdma_cmd_err(d, &c, sizeof(c), EOPNOTSUPP);

    m.srq_handle = srq;
    m.attr_mask = PVRDMA_SRQ_LIMIT;
    m.attrs.srq_limit = 5;
    qpvrdma_cmd_ok(d, &m, sizeof(m), &r);
    m.attrs.srq_limit = 65;
    qpvrdma_cmd_err(d, &m, sizeof(m), EINVAL);
    m.attr_mask = PVRDMA_SRQ_MAX_WR;
    qpvrdma_cmd_err(d, &m, sizeof(m), EINVAL);
    q.srq_handle = srq;
    qpvrdma_cmd_ok(d, &q, sizeof(q), &r);
    g_assert_cmpuint(r.query_srq_resp.attrs.max_wr, ==, 64);
    g_assert_cmpuint(r.query_srq_resp.attrs.srq_limit, ==, 5);
    q.srq_handle = 44;
    qpvrdma_cmd_err(d, &q, sizeof(q), EINVAL);

    qpvrdma_create_cq(d, &cq, 64);
    qpvrdma_create_qp(d, &qp, pd, cq.handle, cq.handle, PVRDMA_QPT_RC, 8, srq);
    ds.srq_handle = srq;
    qpvrdma_cmd_err(d, &ds, sizeof(ds), EBUSY);      /* used by a QP */
    dq.qp_handle = qp.handle;
    qpvrdma_cmd_ok(d, &dq, sizeof(dq), &r);
    qpvrdma_cmd_ok(d, &ds, sizeof(ds), &r);
    qpvrdma_cmd_err(d, &ds, sizeof(ds), EINVAL);
    qpvrdma_stop(d);
}

void pvrdma_add_commands_tests(void)
{
    qtest_add_func("/pvrdma/cmd/uc-pd", test_uc_pd);
    qtest_add_func("/pvrdma/cmd/pd-exhaustion", test_pd_exhaustion);
    qtest_add_func("/pvrdma/cmd/mr", test_mr);
    qtest_add_func("/pvrdma/cmd/cq", test_cq);
    qtest_add_func("/pvrdma/cmd/qp-create", test_qp_create);
    qtest_add_func("/pvrdma/cmd/qp-modify", test_qp_modify);
    qtest_add_func("/pvrdma/cmd/bind", test_bind);
    qtest_add_func("/pvrdma/cmd/srq", test_srq);
}
