/*
 * Leak cycles of the QEMU-free core: 1000 create/destroy cycles of every
 * object type and 100 activate/reset cycles against the fake host, which
 * counts guest mappings.  Every cycle must end with the tables and the
 * mappings where they started; 'make -C tests/unit valgrind' adds the
 * host-memory side (0 bytes definitely lost).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "fake-host.h"
#include "hw/rdma/pvrdma_loopback.h"

#define CYCLES  1000
#define RESETS  100

typedef struct Dev {
    FakeHost h;
    PvrdmaCore c;
    uint64_t dsr, cmd, resp;
} Dev;

static void probe(Dev *d)
{
    struct pvrdma_device_shared_region *dsr;
    uint64_t async[2], cqn[2];

    d->dsr = fh_alloc(&d->h, 1);
    d->cmd = fh_alloc(&d->h, 1);
    d->resp = fh_alloc(&d->h, 1);
    async[0] = fh_alloc(&d->h, 1);
    async[1] = fh_alloc(&d->h, 1);
    cqn[0] = fh_alloc(&d->h, 1);
    cqn[1] = fh_alloc(&d->h, 1);
    dsr = fh_ptr(&d->h, d->dsr);
    dsr->driver_version = PVRDMA_VERSION;
    dsr->cmd_slot_dma = d->cmd;
    dsr->resp_slot_dma = d->resp;
    dsr->async_ring_pages.num_pages = 2;
    dsr->async_ring_pages.pdir_dma = fh_make_pdir(&d->h, async, 2);
    dsr->cq_ring_pages.num_pages = 2;
    dsr->cq_ring_pages.pdir_dma = fh_make_pdir(&d->h, cqn, 2);
    dsr->uar_pfn64 = FH_UAR_BASE / FH_PAGE;
    pvrdma_core_reg_write(&d->c, PVRDMA_REG_DSRLOW, (uint32_t)d->dsr);
    pvrdma_core_reg_write(&d->c, PVRDMA_REG_DSRHIGH, d->dsr >> 32);
    pvrdma_core_reg_write(&d->c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
    g_assert_cmpuint(pvrdma_core_reg_read(&d->c, PVRDMA_REG_ERR), ==, 0);
}

static uint32_t cmd(Dev *d, union pvrdma_cmd_req *req, uint32_t op,
                    union pvrdma_cmd_resp *rsp)
{
    req->hdr.cmd = op;
    memcpy(fh_ptr(&d->h, d->cmd), req, sizeof(*req));
    pvrdma_core_reg_write(&d->c, PVRDMA_REG_REQUEST, 0);
    memcpy(rsp, fh_ptr(&d->h, d->resp), sizeof(*rsp));
    return pvrdma_core_reg_read(&d->c, PVRDMA_REG_ERR);
}

/* A command that must succeed; returns the first word of the response. */
static uint32_t ok(Dev *d, union pvrdma_cmd_req *req, uint32_t op)
{
    union pvrdma_cmd_resp rsp;

    g_assert_cmpuint(cmd(d, req, op, &rsp), ==, 0);
    return rsp.create_pd_resp.pd_handle;    /* every create: handle first */
}

static void destroy(Dev *d, uint32_t op, uint32_t handle)
{
    union pvrdma_cmd_req req = { 0 };

    req.destroy_pd.pd_handle = handle;      /* same offset for every type */
    ok(d, &req, op);
}

/* n pages and their directory */
static uint64_t pages_pdir(Dev *d, uint32_t n, uint64_t *first)
{
    uint64_t p[8];

    g_assert_cmpuint(n, <=, 8);
    for (uint32_t i = 0; i < n; i++) {
        p[i] = fh_alloc(&d->h, 1);
    }
    if (first) {
        *first = p[0];
    }
    return fh_make_pdir(&d->h, p, n);
}

typedef struct Used {
    uint32_t uc, pd, mr, cq, qp, srq;
    unsigned maps;
} Used;

static void used(Dev *d, Used *u)
{
    *u = (Used) { d->c.uc.used, d->c.pd.used, d->c.mr.used, d->c.cq.used,
                  d->c.qp.used, d->c.srq.used, fh_outstanding(&d->h) };
}

static void test_leak_cycles(void)
{
    PvrdmaLimits lim;
    union pvrdma_cmd_req req;
    uint64_t cq_pdir, qp_pdir, srq_pdir, mr_pdir, mr_va;
    uint32_t pd, cq;
    Used before, after;
    Dev d;

    pvrdma_limits_default(&lim);
    fh_init(&d.h);
    pvrdma_core_init(&d.c, &fh_ops, &d.h, &lim);
    pvrdma_core_add_transport(&d.c, pvrdma_loopback_new(&d.c));
    probe(&d);
    cq_pdir = pages_pdir(&d, 2, NULL);
    qp_pdir = pages_pdir(&d, 3, NULL);
    srq_pdir = pages_pdir(&d, 2, NULL);
    fh_skip(&d.h, 1);
    mr_pdir = pages_pdir(&d, 3, &mr_va);
    memset(&req, 0, sizeof(req));
    pd = ok(&d, &req, PVRDMA_CMD_CREATE_PD);
    memset(&req, 0, sizeof(req));
    req.create_cq = (struct pvrdma_cmd_create_cq) {
        .pdir_dma = cq_pdir, .nchunks = 2, .cqe = 64 };
    cq = ok(&d, &req, PVRDMA_CMD_CREATE_CQ);
    used(&d, &before);

    for (unsigned i = 0; i < CYCLES; i++) {
        memset(&req, 0, sizeof(req));
        req.create_uc.pfn64 = FH_UAR_BASE / FH_PAGE + 1 + i % 8;
        destroy(&d, PVRDMA_CMD_DESTROY_UC,
                ok(&d, &req, PVRDMA_CMD_CREATE_UC));
        memset(&req, 0, sizeof(req));
        destroy(&d, PVRDMA_CMD_DESTROY_PD,
                ok(&d, &req, PVRDMA_CMD_CREATE_PD));
        memset(&req, 0, sizeof(req));
        req.create_cq = (struct pvrdma_cmd_create_cq) {
            .pdir_dma = cq_pdir, .nchunks = 2, .cqe = 64 };
        destroy(&d, PVRDMA_CMD_DESTROY_CQ,
                ok(&d, &req, PVRDMA_CMD_CREATE_CQ));
        for (int t = 0; t < 2; t++) {
            memset(&req, 0, sizeof(req));
            req.create_qp = (struct pvrdma_cmd_create_qp) {
                .pdir_dma = qp_pdir, .pd_handle = pd, .send_cq_handle = cq,
                .recv_cq_handle = cq, .max_send_wr = 16, .max_recv_wr = 16,
                .max_send_sge = 1, .max_recv_sge = 1, .total_chunks = 3,
                .send_chunks = 1,
                .qp_type = t ? PVRDMA_QPT_UD : PVRDMA_QPT_RC };
            destroy(&d, PVRDMA_CMD_DESTROY_QP,
                    ok(&d, &req, PVRDMA_CMD_CREATE_QP));
        }
        memset(&req, 0, sizeof(req));
        req.create_srq.pdir_dma = srq_pdir;
        req.create_srq.pd_handle = pd;
        req.create_srq.nchunks = 2;
        req.create_srq.attrs.max_wr = 16;
        req.create_srq.attrs.max_sge = 1;
        destroy(&d, PVRDMA_CMD_DESTROY_SRQ,
                ok(&d, &req, PVRDMA_CMD_CREATE_SRQ));
        static const uint32_t mr_flags[] = { 0, PVRDMA_MR_FLAG_DMA,
                                             PVRDMA_MR_FLAG_FRMR };

        for (unsigned k = 0; k < G_N_ELEMENTS(mr_flags); k++) {
            memset(&req, 0, sizeof(req));
            req.create_mr = (struct pvrdma_cmd_create_mr) {
                .start = mr_va + 100, .length = 2 * FH_PAGE,
                .pdir_dma = mr_pdir, .pd_handle = pd, .nchunks = 3,
                .flags = mr_flags[k] };
            destroy(&d, PVRDMA_CMD_DESTROY_MR,
                    ok(&d, &req, PVRDMA_CMD_CREATE_MR));
        }
        memset(&req, 0, sizeof(req));
        req.create_bind.index = i % lim.gid_tbl_len;
        req.create_bind.gid_type = PVRDMA_GID_TYPE_FLAG_ROCE_V2;
        req.create_bind.new_gid[15] = i;
        ok(&d, &req, PVRDMA_CMD_CREATE_BIND);
        memset(&req, 0, sizeof(req));
        req.destroy_bind.index = i % lim.gid_tbl_len;
        req.destroy_bind.dest_gid[15] = i;
        ok(&d, &req, PVRDMA_CMD_DESTROY_BIND);
    }
    used(&d, &after);
    g_assert(memcmp(&before, &after, sizeof(before)) == 0);
    g_assert_cmpuint(d.h.bad_unmaps, ==, 0);

    /* activate / reset with objects alive */
    for (unsigned i = 0; i < RESETS; i++) {
        pvrdma_core_reg_write(&d.c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_RESET);
        g_assert_cmpuint(fh_outstanding(&d.h), ==, 0);
        pvrdma_core_reg_write(&d.c, PVRDMA_REG_DSRLOW, (uint32_t)d.dsr);
        pvrdma_core_reg_write(&d.c, PVRDMA_REG_DSRHIGH, d.dsr >> 32);
        pvrdma_core_reg_write(&d.c, PVRDMA_REG_CTL,
                              PVRDMA_DEVICE_CTL_ACTIVATE);
        g_assert_cmpuint(pvrdma_core_reg_read(&d.c, PVRDMA_REG_ERR), ==, 0);
        memset(&req, 0, sizeof(req));
        pd = ok(&d, &req, PVRDMA_CMD_CREATE_PD);
        memset(&req, 0, sizeof(req));
        req.create_cq = (struct pvrdma_cmd_create_cq) {
            .pdir_dma = cq_pdir, .nchunks = 2, .cqe = 64 };
        cq = ok(&d, &req, PVRDMA_CMD_CREATE_CQ);
        memset(&req, 0, sizeof(req));
        req.create_qp = (struct pvrdma_cmd_create_qp) {
            .pdir_dma = qp_pdir, .pd_handle = pd, .send_cq_handle = cq,
            .recv_cq_handle = cq, .max_send_wr = 16, .max_recv_wr = 16,
            .max_send_sge = 1, .max_recv_sge = 1, .total_chunks = 3,
            .send_chunks = 1, .qp_type = PVRDMA_QPT_RC };
        ok(&d, &req, PVRDMA_CMD_CREATE_QP);
        memset(&req, 0, sizeof(req));
        req.create_mr = (struct pvrdma_cmd_create_mr) {
            .start = mr_va, .length = FH_PAGE, .pdir_dma = mr_pdir,
            .pd_handle = pd, .nchunks = 1 };
        ok(&d, &req, PVRDMA_CMD_CREATE_MR);
        memset(&req, 0, sizeof(req));
        req.create_srq.pdir_dma = srq_pdir;
        req.create_srq.pd_handle = pd;
        req.create_srq.nchunks = 2;
        req.create_srq.attrs.max_wr = 16;
        req.create_srq.attrs.max_sge = 1;
        ok(&d, &req, PVRDMA_CMD_CREATE_SRQ);
    }
    pvrdma_core_reg_write(&d.c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_RESET);
    used(&d, &after);
    g_assert_cmpuint(after.uc + after.pd + after.mr + after.cq + after.qp +
                     after.srq + after.maps, ==, 0);
    g_assert_cmpuint(d.h.bad_unmaps, ==, 0);
    pvrdma_core_fini(&d.c);
    fh_fini(&d.h);
}

int main(int argc, char **argv)
{
    fh_test_init(&argc, &argv);
    g_test_add_func("/pvrdma/leak/cycles", test_leak_cycles);
    return g_test_run();
}
