/*
 * Unit tests of the pvrdma core: the commands the device refuses (bad
 * handles, sizes, states, keys and doorbells), as tables of a request the
 * device would take and the one or two fields that each row changes.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "fake-driver.h"

/*
 * Commands the device refuses, as tables: a request the device would take
 * (good), and rows that each change one or two of its fields and name the
 * errno the guest must get.  Every refusal also counts a guest error
 * (expect_err()).
 */
typedef struct BadReq {
    const char *what;
    TField f[2];
    uint32_t err;
} BadReq;

#define REQ_FIELD(member, v) TFIELD(union pvrdma_cmd_req, member, v)

static void expect_bad_reqs(Dev *d, const union pvrdma_cmd_req *good,
                            uint32_t cmd, const BadReq *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        union pvrdma_cmd_req r = *good;

        tfields_apply(&r, rows[i].f, G_N_ELEMENTS(rows[i].f));
        g_test_message("%s", rows[i].what);
        expect_err(d, &r, cmd, rows[i].err);
    }
}

/* Unknown commands, ports and keys, handles nothing has, objects in use. */
static void test_cmd_errors_handles(void)
{
    static const uint32_t bad[] = { 0, 999, 0xffffff, 0xffffffff };
    static const struct {
        uint32_t cmd;
        size_t off;
    } handle_of[] = {
        { PVRDMA_CMD_DESTROY_PD, offsetof(union pvrdma_cmd_req,
                                          destroy_pd.pd_handle) },
        { PVRDMA_CMD_DESTROY_CQ, offsetof(union pvrdma_cmd_req,
                                          destroy_cq.cq_handle) },
        { PVRDMA_CMD_DESTROY_MR, offsetof(union pvrdma_cmd_req,
                                          destroy_mr.mr_handle) },
        { PVRDMA_CMD_DESTROY_QP, offsetof(union pvrdma_cmd_req,
                                          destroy_qp.qp_handle) },
        { PVRDMA_CMD_DESTROY_UC, offsetof(union pvrdma_cmd_req,
                                          destroy_uc.ctx_handle) },
        { PVRDMA_CMD_DESTROY_SRQ, offsetof(union pvrdma_cmd_req,
                                           destroy_srq.srq_handle) },
        { PVRDMA_CMD_QUERY_QP, offsetof(union pvrdma_cmd_req,
                                        query_qp.qp_handle) },
    };
    union pvrdma_cmd_req zero = { 0 }, good;
    Pair p;
    Dev *d = &p.d;

    pair_setup(&p, 7);
    expect_err(d, &zero, PVRDMA_CMD_MAX, EINVAL);
    expect_err(d, &zero, 0xffffffff, EINVAL);
    {
        const BadReq port[] = {
            { "QUERY_PORT of port 2", { REQ_FIELD(query_port.port_num, 2) },
              EINVAL },
        };
        const BadReq pkey[] = {
            { "QUERY_PKEY index 1", { REQ_FIELD(query_pkey.port_num, 1),
                                      REQ_FIELD(query_pkey.index, 1) },
              EINVAL },
        };

        expect_bad_reqs(d, &zero, PVRDMA_CMD_QUERY_PORT, port, 1);
        expect_bad_reqs(d, &zero, PVRDMA_CMD_QUERY_PKEY, pkey, 1);
    }
    for (unsigned h = 0; h < G_N_ELEMENTS(bad); h++) {
        for (unsigned i = 0; i < G_N_ELEMENTS(handle_of); i++) {
            union pvrdma_cmd_req r = { 0 };

            memcpy((uint8_t *)&r + handle_of[i].off, &bad[h], 4);
            expect_err(d, &r, handle_of[i].cmd, EINVAL);
        }
        {
            const BadReq rows[] = {
                { "MODIFY_QP of no QP",
                  { REQ_FIELD(modify_qp.qp_handle, bad[h]),
                    REQ_FIELD(modify_qp.attr_mask, PVRDMA_QP_STATE) },
                  EINVAL },
            };
            const BadReq pd[] = {
                { "CREATE_PD in no context",
                  { REQ_FIELD(create_pd.ctx_handle, bad[h] ? bad[h] : 5) },
                  EINVAL },
            };
            const BadReq cq[] = {
                { "RESIZE_CQ of no CQ",
                  { REQ_FIELD(resize_cq.cq_handle, bad[h]),
                    REQ_FIELD(resize_cq.cqe, 64) }, EINVAL },
            };

            expect_bad_reqs(d, &zero, PVRDMA_CMD_MODIFY_QP, rows, 1);
            expect_bad_reqs(d, &zero, PVRDMA_CMD_CREATE_PD, pd, 1);
            expect_bad_reqs(d, &zero, PVRDMA_CMD_RESIZE_CQ, cq, 1);
        }
    }
    /* objects in use */
    good = zero;
    good.destroy_pd.pd_handle = p.pd;
    expect_err(d, &good, PVRDMA_CMD_DESTROY_PD, EBUSY);
    good = zero;
    good.destroy_cq.cq_handle = p.cqa.handle;
    expect_err(d, &good, PVRDMA_CMD_DESTROY_CQ, EBUSY);
    pair_fini(&p);
}

/* CQ geometry, RESIZE_CQ beyond the CQ's pages. */
static void test_cmd_errors_cq(void)
{
    union pvrdma_cmd_req good = { 0 }, r = { 0 };
    Pair p;
    Dev *d = &p.d;

    pair_setup(&p, 7);
    good.create_cq.pdir_dma = fh_make_pdir(&d->h, p.cqa.pages, 2);
    good.create_cq.cqe = 64;
    good.create_cq.nchunks = 2;
    {
        const BadReq rows[] = {
            { "48 CQEs", { REQ_FIELD(create_cq.cqe, 48) }, EINVAL },
            { "twice max-cqe",
              { REQ_FIELD(create_cq.cqe, PVRDMA_DEF_MAX_CQE * 2) }, EINVAL },
            { "no page for the CQEs", { REQ_FIELD(create_cq.nchunks, 1) },
              EINVAL },
            { "two pages too many", { REQ_FIELD(create_cq.nchunks, 4) },
              EINVAL },
            { "8 KiB of CQEs in one page", { REQ_FIELD(create_cq.cqe, 128) },
              EINVAL },
            { "directory not page aligned",
              { REQ_FIELD(create_cq.pdir_dma, good.create_cq.pdir_dma + 8) },
              EFAULT },
            { "no such context", { REQ_FIELD(create_cq.ctx_handle, 3) },
              EINVAL },
        };

        expect_bad_reqs(d, &good, PVRDMA_CMD_CREATE_CQ, rows,
                        G_N_ELEMENTS(rows));
    }
    /* the rows fail for what they change: the request itself is good */
    g_assert_cmpuint(dev_cmd(d, &good, PVRDMA_CMD_CREATE_CQ, NULL), ==, 0);
    r.resize_cq.cq_handle = p.cqa.handle;
    r.resize_cq.cqe = 128;
    expect_err(d, &r, PVRDMA_CMD_RESIZE_CQ, EINVAL);
    pair_fini(&p);
}

/* QP creation; a ring page outside RAM leaks no mapping. */
static void test_cmd_errors_qp(void)
{
    union pvrdma_cmd_req good;
    Pair p;
    Dev *d = &p.d;
    TQp q;
    unsigned maps;
    uint64_t *tbl;

    pair_setup(&p, 7);
    fill_create_qp(d, &q, &good, p.pd, p.cqa.handle, p.cqa.handle,
                   PVRDMA_QPT_RC, 16, 4, 16, 4);
    {
        const BadReq rows[] = {
            { "no such PD", { REQ_FIELD(create_qp.pd_handle, 77) }, EINVAL },
            { "no such receive CQ",
              { REQ_FIELD(create_qp.recv_cq_handle, 77) }, EINVAL },
            { "UC", { REQ_FIELD(create_qp.qp_type, PVRDMA_QPT_UC) },
              EOPNOTSUPP },
            { "12 send WRs, 16 in the ring",
              { REQ_FIELD(create_qp.max_send_wr, 12) }, EINVAL },
            { "no send SGE", { REQ_FIELD(create_qp.max_send_sge, 0) },
              EINVAL },
            { "max-sge + 1 send SGEs",
              { REQ_FIELD(create_qp.max_send_sge, PVRDMA_DEF_MAX_SGE + 1) },
              EINVAL },
            { "twice max-qp-wr receives",
              { REQ_FIELD(create_qp.max_recv_wr, PVRDMA_DEF_MAX_QP_WR * 2) },
              EINVAL },
            { "inline data", { REQ_FIELD(create_qp.max_inline_data, 64) },
              EINVAL },
            { "every page for the SQ",
              { REQ_FIELD(create_qp.send_chunks,
                          good.create_qp.total_chunks) }, EINVAL },
            { "no RQ pages",
              { REQ_FIELD(create_qp.total_chunks, 1 + q.send_chunks) },
              EINVAL },
            { "is_srq 2", { REQ_FIELD(create_qp.is_srq, 2) }, EINVAL },
        };

        expect_bad_reqs(d, &good, PVRDMA_CMD_CREATE_QP, rows,
                        G_N_ELEMENTS(rows));
    }
    maps = fh_outstanding(&d->h);
    tbl = fh_ptr(&d->h, *(uint64_t *)fh_ptr(&d->h, good.create_qp.pdir_dma));
    tbl[q.npages - 1] = FH_RAM_BASE + FH_RAM_SIZE + FH_PAGE;
    expect_err(d, &good, PVRDMA_CMD_CREATE_QP, EINVAL);
    g_assert_cmpuint(fh_outstanding(&d->h), ==, maps);
    tbl[q.npages - 1] = q.pages[q.npages - 1];
    tbl[1] = FH_RAM_BASE + FH_RAM_SIZE + FH_PAGE;       /* SQ page */
    expect_err(d, &good, PVRDMA_CMD_CREATE_QP, EINVAL);
    g_assert_cmpuint(fh_outstanding(&d->h), ==, maps);
    tbl[1] = q.pages[1];
    /* the same request is fine once repaired */
    g_assert_cmpuint(dev_cmd(d, &good, PVRDMA_CMD_CREATE_QP, NULL), ==, 0);
    pair_fini(&p);
}

/* MR creation; pages outside RAM or not aligned leak no mapping. */
static void test_cmd_errors_mr(void)
{
    union pvrdma_cmd_req good = { 0 };
    Pair p;
    Dev *d = &p.d;
    unsigned maps;
    uint64_t *tbl;

    pair_setup(&p, 7);
    good.create_mr.start = 0x1000;
    good.create_mr.length = 2 * FH_PAGE;
    good.create_mr.pd_handle = p.pd;
    good.create_mr.nchunks = 2;
    good.create_mr.pdir_dma = fh_make_pdir(&d->h, p.mra.pages, 2);
    good.create_mr.access_flags = PVRDMA_ACCESS_LOCAL_WRITE;
    {
        const BadReq rows[] = {
            { "unknown access bit",
              { REQ_FIELD(create_mr.access_flags, 1u << 7) }, EINVAL },
            { "remote write without local write",
              { REQ_FIELD(create_mr.access_flags,
                          PVRDMA_ACCESS_REMOTE_WRITE) }, EINVAL },
            { "DMA and FRMR",
              { REQ_FIELD(create_mr.flags,
                          PVRDMA_MR_FLAG_DMA | PVRDMA_MR_FLAG_FRMR) },
              EINVAL },
            { "3 pages for 2", { REQ_FIELD(create_mr.nchunks, 3) }, EINVAL },
            { "length 0", { REQ_FIELD(create_mr.length, 0) }, EINVAL },
            { "longer than max-mr-size",
              { REQ_FIELD(create_mr.length, PVRDMA_DEF_MAX_MR_SIZE + 1) },
              EINVAL },
            { "past the top of the address space",
              { REQ_FIELD(create_mr.start, 0xfffffffffffff000ull),
                REQ_FIELD(create_mr.length, 0x2000) }, EINVAL },
            { "no PD", { REQ_FIELD(create_mr.pd_handle, 0) }, EINVAL },
            { "FRMR of too many pages",
              { REQ_FIELD(create_mr.flags, PVRDMA_MR_FLAG_FRMR),
                REQ_FIELD(create_mr.nchunks,
                          PVRDMA_MAX_FAST_REG_PAGES + 1) }, EINVAL },
        };

        expect_bad_reqs(d, &good, PVRDMA_CMD_CREATE_MR, rows,
                        G_N_ELEMENTS(rows));
    }
    maps = fh_outstanding(&d->h);
    tbl = fh_ptr(&d->h, *(uint64_t *)fh_ptr(&d->h, good.create_mr.pdir_dma));
    tbl[1] = FH_RAM_BASE + FH_RAM_SIZE;
    expect_err(d, &good, PVRDMA_CMD_CREATE_MR, EFAULT);
    g_assert_cmpuint(fh_outstanding(&d->h), ==, maps);
    tbl[1] = p.mra.pages[1] + 1;
    expect_err(d, &good, PVRDMA_CMD_CREATE_MR, EFAULT);
    g_assert_cmpuint(fh_outstanding(&d->h), ==, maps);
    tbl[1] = p.mra.pages[1];
    g_assert_cmpuint(dev_cmd(d, &good, PVRDMA_CMD_CREATE_MR, NULL), ==, 0);
    pair_fini(&p);
}

/* MODIFY_QP: transitions, attributes, what each state needs. */
static void test_cmd_errors_modify_qp(void)
{
    struct pvrdma_qp_attr a = { 0 };
    Pair p;
    Dev *d = &p.d;
    TQp *qa = &p.a;
    uint64_t errs;

    pair_setup(&p, 7);
    a.qp_state = PVRDMA_QPS_RTR;        /* RTS -> RTR not allowed */
    errs = d->c.guest_errors;
    g_assert_cmpuint(modify_qp(d, qa, PVRDMA_QP_STATE, &a), ==, EINVAL);
    a.qp_state = 7;
    g_assert_cmpuint(modify_qp(d, qa, PVRDMA_QP_STATE, &a), ==, EINVAL);
    g_assert_cmpuint(modify_qp(d, qa, 1u << 21, &a), ==, EINVAL);
    a.cur_qp_state = PVRDMA_QPS_INIT;
    g_assert_cmpuint(modify_qp(d, qa, PVRDMA_QP_CUR_STATE, &a), ==, EINVAL);
    a.port_num = 2;
    g_assert_cmpuint(modify_qp(d, qa, PVRDMA_QP_PORT, &a), ==, EINVAL);
    a.timeout = 32;
    g_assert_cmpuint(modify_qp(d, qa, PVRDMA_QP_TIMEOUT, &a), ==, EINVAL);
    a.max_rd_atomic = 200;
    g_assert_cmpuint(modify_qp(d, qa, PVRDMA_QP_MAX_QP_RD_ATOMIC, &a), ==,
                     EINVAL);
    a.ah_attr.grh.sgid_index = PVRDMA_DEF_GID_TBL_LEN;
    g_assert_cmpuint(modify_qp(d, qa, PVRDMA_QP_AV, &a), ==, EINVAL);
    g_assert_cmpuint(d->c.guest_errors, ==, errs + 8);
    g_assert_cmpuint(query_qp_state(d, qa), ==, PVRDMA_QPS_RTS);
    /* RESET -> INIT missing attributes, INIT -> RTR missing the AV */
    a = (struct pvrdma_qp_attr) { .qp_state = PVRDMA_QPS_RESET };
    g_assert_cmpuint(modify_qp(d, qa, PVRDMA_QP_STATE, &a), ==, 0);
    a.qp_state = PVRDMA_QPS_INIT;
    g_assert_cmpuint(modify_qp(d, qa, PVRDMA_QP_STATE, &a), ==, EINVAL);
    rc_to_init(d, qa);
    rc_rtr_attrs(&a, p.b.qpn);
    g_assert_cmpuint(modify_qp(d, qa, RTR_MASK & ~PVRDMA_QP_AV, &a), ==,
                     EINVAL);
    a.dest_qp_num = 0x1000000;
    g_assert_cmpuint(modify_qp(d, qa, RTR_MASK, &a), ==, EINVAL);
    g_assert_cmpuint(query_qp_state(d, qa), ==, PVRDMA_QPS_INIT);
    pair_fini(&p);
}

/* The GID table, user contexts' UAR pages, SRQs. */
static void test_cmd_errors_bind_uc_srq(void)
{
    union pvrdma_cmd_req zero = { 0 }, r;
    union pvrdma_cmd_req srq = { 0 };
    Pair p;
    Dev *d = &p.d;
    const uint64_t uar = FH_UAR_BASE / FH_PAGE;
    const BadReq bind[] = {
        { "index past the table",
          { REQ_FIELD(create_bind.index, PVRDMA_DEF_GID_TBL_LEN),
            REQ_FIELD(create_bind.gid_type, PVRDMA_GID_TYPE_FLAG_ROCE_V2) },
          EINVAL },
        { "GID type 3", { REQ_FIELD(create_bind.index, 1),
                          REQ_FIELD(create_bind.gid_type, 3) }, EINVAL },
    };
    const BadReq unbind[] = {
        { "index 0 holds another GID", { REQ_FIELD(destroy_bind.index, 0) },
          EINVAL },
        { "index 5 is empty", { REQ_FIELD(destroy_bind.index, 5) }, EINVAL },
    };
    const BadReq uc[] = {
        { "the driver's UAR page", { REQ_FIELD(create_uc.pfn64, uar) },
          EINVAL },
        { "past the UAR pages",
          { REQ_FIELD(create_uc.pfn64, uar + PVRDMA_DEF_MAX_UAR) }, EINVAL },
        { "not a UAR page", { REQ_FIELD(create_uc.pfn64, 5) }, EINVAL },
    };
    const BadReq srqs[] = {
        { "3 WRs", { REQ_FIELD(create_srq.attrs.max_wr, 3) }, EINVAL },
        { "XRC", { REQ_FIELD(create_srq.srq_type, 1) }, EOPNOTSUPP },
    };

    pair_setup(&p, 7);
    expect_bad_reqs(d, &zero, PVRDMA_CMD_CREATE_BIND, bind, 2);
    expect_bad_reqs(d, &zero, PVRDMA_CMD_DESTROY_BIND, unbind, 2);
    r = zero;
    memcpy(r.destroy_bind.dest_gid, test_gid, 16);
    g_assert_cmpuint(dev_cmd(d, &r, PVRDMA_CMD_DESTROY_BIND, NULL), ==, 0);
    g_assert_false(pvrdma_gid_is_local(&d->c, test_gid));

    expect_bad_reqs(d, &zero, PVRDMA_CMD_CREATE_UC, uc, 3);
    r = zero;
    r.create_uc.pfn64 = uar + 3;
    g_assert_cmpuint(dev_cmd(d, &r, PVRDMA_CMD_CREATE_UC, NULL), ==, 0);
    r = zero;
    r.create_uc.pfn64 = uar + 3;
    expect_err(d, &r, PVRDMA_CMD_CREATE_UC, EBUSY);

    srq.create_srq.pd_handle = p.pd;
    srq.create_srq.attrs.max_wr = 4;
    srq.create_srq.attrs.max_sge = 1;
    srq.create_srq.nchunks = 2;
    srq.create_srq.pdir_dma = fh_make_pdir(&d->h, p.mrb.pages, 2);
    expect_bad_reqs(d, &srq, PVRDMA_CMD_CREATE_SRQ, srqs, 2);
    g_assert_cmpuint(dev_cmd(d, &srq, PVRDMA_CMD_CREATE_SRQ, NULL), ==, 0);
    pair_fini(&p);
}

/* Doorbells of unknown objects, pages and offsets; bad register access. */
static void test_cmd_errors_doorbells(void)
{
    Pair p;
    Dev *d = &p.d;
    uint64_t errs;

    pair_setup(&p, 7);
    errs = d->c.guest_errors;
    pvrdma_core_uar_write(&d->c, 0, PVRDMA_UAR_QP_SEND | 999);
    pvrdma_core_uar_write(&d->c, PVRDMA_UAR_CQ_OFFSET, PVRDMA_UAR_CQ_ARM | 999);
    pvrdma_core_uar_write(&d->c, PVRDMA_UAR_SRQ_OFFSET, PVRDMA_UAR_SRQ_RECV | 3);
    pvrdma_core_uar_write(&d->c, 5 * FH_PAGE, PVRDMA_UAR_QP_SEND | p.a.handle);
    pvrdma_core_uar_write(&d->c, 3 * FH_PAGE, PVRDMA_UAR_QP_SEND | p.a.handle);
    pvrdma_core_uar_write(&d->c, 12, 0);
    g_assert_cmpuint(d->c.guest_errors, ==, errs + 6);
    g_assert_cmpuint(d->c.run.length, ==, 0);
    errs = d->c.guest_errors;
    pvrdma_core_reg_read(&d->c, 0x100);
    pvrdma_core_reg_write(&d->c, PVRDMA_REG_VERSION, 1);
    pvrdma_core_reg_write(&d->c, PVRDMA_REG_CTL, 9);
    g_assert_cmpuint(pvrdma_core_reg_read(&d->c, PVRDMA_REG_ERR), !=, 0);
    g_assert_cmpuint(d->c.guest_errors, ==, errs + 3);
    pair_fini(&p);
}

int main(int argc, char **argv)
{
    fh_test_init(&argc, &argv);
    g_test_add_func("/pvrdma/dev/cmd-errors/handles", test_cmd_errors_handles);
    g_test_add_func("/pvrdma/dev/cmd-errors/cq", test_cmd_errors_cq);
    g_test_add_func("/pvrdma/dev/cmd-errors/qp", test_cmd_errors_qp);
    g_test_add_func("/pvrdma/dev/cmd-errors/mr", test_cmd_errors_mr);
    g_test_add_func("/pvrdma/dev/cmd-errors/modify-qp",
                    test_cmd_errors_modify_qp);
    g_test_add_func("/pvrdma/dev/cmd-errors/bind-uc-srq",
                    test_cmd_errors_bind_uc_srq);
    g_test_add_func("/pvrdma/dev/cmd-errors/doorbells",
                    test_cmd_errors_doorbells);
    return g_test_run();
}
