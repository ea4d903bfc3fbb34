/*
 * Driver-side helpers shared by the device tests: they lay guest
 * structures out in the fake host's RAM the way the Linux vmw_pvrdma
 * driver does, post commands, WQEs and doorbells, and poll CQs.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "fake-driver.h"
#include "hw/rdma/pvrdma_loopback.h"

const uint8_t test_gid[16] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1
};

struct pvrdma_device_shared_region *dsr_of(Dev *d)
{
    return fh_ptr(&d->h, d->dsr);
}

void dev_init(Dev *d, const PvrdmaLimits *lim)
{
    PvrdmaLimits l;

    if (!lim) {
        pvrdma_limits_default(&l);
        lim = &l;
    }
    memset(d, 0, sizeof(*d));
    fh_init(&d->h);
    pvrdma_core_init(&d->c, &fh_ops, &d->h, lim);
    pvrdma_core_add_transport(&d->c, pvrdma_loopback_new(&d->c));
}

/* What pvrdma_pci_probe does: DSR, slots, async/CQ-notify rings. */
void dev_write_dsr(Dev *d)
{
    struct pvrdma_device_shared_region *dsr;

    d->dsr = fh_alloc(&d->h, 1);
    d->cmd = fh_alloc(&d->h, 1);
    d->resp = fh_alloc(&d->h, 1);
    d->async_pages[0] = fh_alloc(&d->h, 1);
    fh_skip(&d->h, 1);
    d->async_pages[1] = fh_alloc(&d->h, 1);
    d->cqn_pages[0] = fh_alloc(&d->h, 1);
    d->cqn_pages[1] = fh_alloc(&d->h, 1);
    dsr = dsr_of(d);
    dsr->driver_version = PVRDMA_VERSION;
    dsr->gos_info.bits_type_ver_misc = 1 | 1 << 2;
    dsr->cmd_slot_dma = d->cmd;
    dsr->resp_slot_dma = d->resp;
    dsr->async_ring_pages.num_pages = 2;
    dsr->async_ring_pages.pdir_dma = fh_make_pdir(&d->h, d->async_pages, 2);
    dsr->cq_ring_pages.num_pages = 2;
    dsr->cq_ring_pages.pdir_dma = fh_make_pdir(&d->h, d->cqn_pages, 2);
    dsr->uar_pfn64 = FH_UAR_BASE / FH_PAGE;
    pvrdma_core_reg_write(&d->c, PVRDMA_REG_DSRLOW, (uint32_t)d->dsr);
    pvrdma_core_reg_write(&d->c, PVRDMA_REG_DSRHIGH, d->dsr >> 32);
}

void dev_setup(Dev *d, const PvrdmaLimits *lim)
{
    dev_init(d, lim);
    dev_write_dsr(d);
    pvrdma_core_reg_write(&d->c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
    g_assert_cmpuint(pvrdma_core_reg_read(&d->c, PVRDMA_REG_ERR), ==, 0);
    g_assert_true(d->c.active);
    pvrdma_core_reg_write(&d->c, PVRDMA_REG_IMR, 0);   /* unmask all */
}

/* CTL_RESET must release every guest mapping. */
void dev_fini(Dev *d)
{
    pvrdma_core_reg_write(&d->c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_RESET);
    g_assert_false(d->c.active);
    g_assert_cmpuint(fh_outstanding(&d->h), ==, 0);
    g_assert_cmpuint(d->h.bad_unmaps, ==, 0);
    dev_exit(d);
}

void dev_exit(Dev *d)
{
    pvrdma_core_fini(&d->c);
    g_assert_cmpuint(fh_outstanding(&d->h), ==, 0);
    g_assert_cmpuint(d->h.bad_unmaps, ==, 0);
    fh_fini(&d->h);
}

/* Post a command, ring REQUEST, return REG_ERR (and the response). */
void tfields_apply(void *obj, const TField *f, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        if (f[i].size) {
            g_assert_cmpuint(f[i].size, <=, sizeof(f[i].val));
            memcpy((uint8_t *)obj + f[i].off, &f[i].val, f[i].size);
        }
    }
}

bool dev_cmd_answered(Dev *d)
{
    const union pvrdma_cmd_resp *r = fh_ptr(&d->h, d->resp);

    return r->hdr.ack != 0xeeeeeeee;
}

/*
 * As the driver waits for the response vector (PVRDMA_CMD_TIMEOUT, 10 s):
 * a command that waits for its fence answers later, from this device's
 * event loop (its peers are served by their own, or by the test).
 */
void dev_cmd_wait(Dev *d)
{
    int64_t end = g_get_monotonic_time() + 10 * G_TIME_SPAN_SECOND;
    FakeHost *h = &d->h;

    while (!dev_cmd_answered(d)) {
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        fh_step_wait(&h, 1, 5);
    }
}

uint32_t dev_cmd(Dev *d, union pvrdma_cmd_req *req, uint32_t cmd,
                 union pvrdma_cmd_resp *rsp)
{
    union pvrdma_cmd_resp tmp;
    uint32_t err;

    if (!rsp) {
        rsp = &tmp;
    }
    req->hdr.cmd = cmd;
    req->hdr.response = 0x5a5a0000ull + cmd;
    memcpy(fh_ptr(&d->h, d->cmd), req, sizeof(*req));
    memset(fh_ptr(&d->h, d->resp), 0xee, sizeof(*rsp));
    pvrdma_core_reg_write(&d->c, PVRDMA_REG_REQUEST, 0);
    err = pvrdma_core_reg_read(&d->c, PVRDMA_REG_ERR);
    if (!err) {
        dev_cmd_wait(d);
    }
    memcpy(rsp, fh_ptr(&d->h, d->resp), sizeof(*rsp));
    if (cmd < PVRDMA_CMD_MAX) {
        g_assert_cmphex(rsp->hdr.ack, ==, PVRDMA_CMD_RESP(cmd));
    }
    g_assert_cmphex(rsp->hdr.response, ==, 0x5a5a0000ull + cmd);
    g_assert_cmpuint(rsp->hdr.err, ==, err);
    return err;
}

/* The command must fail with 'want' (0: any error) and count a guest error. */
void expect_err(Dev *d, union pvrdma_cmd_req *req, uint32_t cmd,
                uint32_t want)
{
    uint64_t errs = d->c.guest_errors;
    uint32_t err = dev_cmd(d, req, cmd, NULL);

    g_assert_cmpuint(err, !=, 0);
    if (want) {
        g_assert_cmpuint(err, ==, want);
    }
    g_assert_cmpuint(d->c.guest_errors, >, errs);
}

uint32_t create_pd(Dev *d, uint32_t ctx)
{
    union pvrdma_cmd_req req = { 0 };
    union pvrdma_cmd_resp rsp;

    req.create_pd.ctx_handle = ctx;
    g_assert_cmpuint(dev_cmd(d, &req, PVRDMA_CMD_CREATE_PD, &rsp), ==, 0);
    return rsp.create_pd_resp.pd_handle;
}

void bind_gid(Dev *d, uint32_t index, const uint8_t gid[16])
{
    union pvrdma_cmd_req req = { 0 };

    req.create_bind.index = index;
    req.create_bind.mtu = 1500;
    memcpy(req.create_bind.new_gid, gid, 16);
    req.create_bind.gid_type = PVRDMA_GID_TYPE_FLAG_ROCE_V2;
    g_assert_cmpuint(dev_cmd(d, &req, PVRDMA_CMD_CREATE_BIND, NULL), ==, 0);
}

/* ---- CQ ---- */


struct pvrdma_ring_state *cq_state(Dev *d, TCq *cq)
{
    return fh_ptr(&d->h, cq->pages[0]);
}

void create_cq(Dev *d, TCq *cq, uint32_t cqe)
{
    union pvrdma_cmd_req req = { 0 };
    union pvrdma_cmd_resp rsp;

    memset(cq, 0, sizeof(*cq));
    cq->cqe = cqe;
    cq->npages = 1 + (cqe * sizeof(struct pvrdma_cqe) + FH_PAGE - 1) / FH_PAGE;
    g_assert_cmpuint(cq->npages, <=, G_N_ELEMENTS(cq->pages));
    for (uint32_t i = 0; i < cq->npages; i++) {
        cq->pages[i] = fh_alloc(&d->h, 1);
        fh_skip(&d->h, 1);
    }
    req.create_cq.pdir_dma = fh_make_pdir(&d->h, cq->pages, cq->npages);
    req.create_cq.ctx_handle = 0;
    req.create_cq.cqe = cqe;
    req.create_cq.nchunks = cq->npages;
    g_assert_cmpuint(dev_cmd(d, &req, PVRDMA_CMD_CREATE_CQ, &rsp), ==, 0);
    g_assert_cmpuint(rsp.create_cq_resp.cqe, ==, cqe);
    cq->handle = rsp.create_cq_resp.cq_handle;
}

bool poll_cq(Dev *d, TCq *cq, struct pvrdma_cqe *out)
{
    struct pvrdma_ring_state *rs = cq_state(d, cq);
    /* the driver's atomic_read() and rmb(): the CQE after the index */
    uint32_t prod = __atomic_load_n(&rs->rx.prod_tail, __ATOMIC_ACQUIRE);
    uint64_t off;

    g_assert_true(pvrdma_idx_valid(prod, cq->cqe));
    if (prod == cq->cons) {
        return false;
    }
    off = (uint64_t)(cq->cons & (cq->cqe - 1)) * sizeof(*out);
    memcpy(out, (uint8_t *)fh_ptr(&d->h, cq->pages[1 + off / FH_PAGE]) +
           off % FH_PAGE, sizeof(*out));
    cq->cons = pvrdma_idx_next(cq->cons, cq->cqe);
    __atomic_store_n(&rs->rx.cons_head, cq->cons, __ATOMIC_RELEASE);
    return true;
}

void expect_retry_window(Dev *d, TCq *cq, TQp *qp, int64_t left,
                         uint64_t wr1, uint64_t wr2)
{
    expect_cq_empty(d, cq);
    d->h.now += left - 1;       /* a run for something else, before it */
    pvrdma_core_run(&d->c);
    run_all(d);
    expect_cq_empty(d, cq);
    g_assert_cmpuint(query_qp_state(d, qp), ==, PVRDMA_QPS_RTS);
    d->h.now += 1;              /* the host's timer fires */
    pvrdma_core_run(&d->c);
    run_all(d);
    expect_cqe(d, cq, wr1, PVRDMA_WC_RETRY_EXC_ERR, PVRDMA_WC_SEND, 0,
               qp->handle);
    expect_cqe(d, cq, wr2, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_SEND, 0,
               qp->handle);
    g_assert_cmpuint(query_qp_state(d, qp), ==, PVRDMA_QPS_ERR);
    g_assert_cmpuint(d->c.holders, ==, 0);
}

void expect_cqe(Dev *d, TCq *cq, uint64_t wr_id, uint32_t status,
                uint32_t opcode, uint32_t byte_len, uint32_t qp)
{
    struct pvrdma_cqe e;

    g_assert_true(poll_cq(d, cq, &e));
    g_assert_cmphex(e.wr_id, ==, wr_id);
    g_assert_cmpuint(e.status, ==, status);
    g_assert_cmpuint(e.opcode, ==, opcode);
    if (status == PVRDMA_WC_SUCCESS) {
        g_assert_cmpuint(e.byte_len, ==, byte_len);
    }
    g_assert_cmpuint(e.qp, ==, qp);
}

void expect_cq_empty(Dev *d, TCq *cq)
{
    struct pvrdma_cqe e;

    g_assert_false(poll_cq(d, cq, &e));
}

/* ---- MR ---- */

void create_mr_pages(Dev *d, uint32_t pd, uint64_t iova, uint64_t len,
                     uint32_t access, uint64_t *pages, uint32_t npages,
                     uint32_t *handle, uint32_t *lkey, uint32_t *rkey)
{
    union pvrdma_cmd_req req = { 0 };
    union pvrdma_cmd_resp rsp;

    for (uint32_t i = 0; i < npages; i++) {
        pages[i] = fh_alloc(&d->h, 1);
        if (i % 2) {
            fh_skip(&d->h, 1);      /* pairs of contiguous pages */
        }
    }
    req.create_mr.start = iova;
    req.create_mr.length = len;
    req.create_mr.pdir_dma = fh_make_pdir(&d->h, pages, npages);
    req.create_mr.pd_handle = pd;
    req.create_mr.access_flags = access;
    req.create_mr.flags = 0;
    req.create_mr.nchunks = npages;
    g_assert_cmpuint(dev_cmd(d, &req, PVRDMA_CMD_CREATE_MR, &rsp), ==, 0);
    *handle = rsp.create_mr_resp.mr_handle;
    *lkey = rsp.create_mr_resp.lkey;
    *rkey = rsp.create_mr_resp.rkey;
}

void create_mr(Dev *d, TMr *mr, uint32_t pd, uint64_t iova,
               uint64_t len, uint32_t access)
{
    memset(mr, 0, sizeof(*mr));
    mr->iova = iova;
    mr->len = len;
    mr->first = iova & ~(uint64_t)(FH_PAGE - 1);
    mr->npages = (iova + len - mr->first + FH_PAGE - 1) / FH_PAGE;
    g_assert_cmpuint(mr->npages, <=, G_N_ELEMENTS(mr->pages));
    create_mr_pages(d, pd, iova, len, access, mr->pages, mr->npages,
                    &mr->handle, &mr->lkey, &mr->rkey);
}

uint8_t *mr_byte(Dev *d, TMr *mr, uint64_t va)
{
    uint64_t o = va - mr->first;

    g_assert_cmpuint(va, >=, mr->iova);
    g_assert_cmpuint(va, <, mr->iova + mr->len);
    return (uint8_t *)fh_ptr(&d->h, mr->pages[o / FH_PAGE]) + o % FH_PAGE;
}

void mr_write(Dev *d, TMr *mr, uint64_t va, const void *buf,
              uint64_t len)
{
    for (uint64_t i = 0; i < len; i++) {
        *mr_byte(d, mr, va + i) = ((const uint8_t *)buf)[i];
    }
}

void mr_read(Dev *d, TMr *mr, uint64_t va, void *buf, uint64_t len)
{
    for (uint64_t i = 0; i < len; i++) {
        ((uint8_t *)buf)[i] = *mr_byte(d, mr, va + i);
    }
}

void mr_fill(Dev *d, TMr *mr, uint8_t v)
{
    for (uint64_t i = 0; i < mr->len; i++) {
        *mr_byte(d, mr, mr->iova + i) = v;
    }
}

/* ---- QP ---- */


uint32_t pow2_ceil(uint32_t x)
{
    uint32_t p = 1;

    while (p < x) {
        p <<= 1;
    }
    return p;
}

void fill_create_qp(Dev *d, TQp *qp, union pvrdma_cmd_req *req,
                    uint32_t pd, uint32_t scq, uint32_t rcq,
                    uint8_t type, uint32_t send_wr, uint32_t send_sge,
                    uint32_t recv_wr, uint32_t recv_sge)
{
    memset(qp, 0, sizeof(*qp));
    qp->type = type;
    qp->send_wr = send_wr;
    qp->send_sge = send_sge;
    qp->recv_wr = recv_wr;
    qp->recv_sge = recv_sge;
    qp->sq_stride = pow2_ceil(sizeof(struct pvrdma_sq_wqe_hdr) +
                              send_sge * sizeof(struct pvrdma_sge));
    qp->rq_stride = pow2_ceil(sizeof(struct pvrdma_rq_wqe_hdr) +
                              recv_sge * sizeof(struct pvrdma_sge));
    qp->send_chunks = (send_wr * qp->sq_stride + FH_PAGE - 1) / FH_PAGE;
    qp->recv_chunks = (recv_wr * qp->rq_stride + FH_PAGE - 1) / FH_PAGE;
    qp->npages = 1 + qp->send_chunks + qp->recv_chunks;
    g_assert_cmpuint(qp->npages, <=, G_N_ELEMENTS(qp->pages));
    for (uint32_t i = 0; i < qp->npages; i++) {
        qp->pages[i] = fh_alloc(&d->h, 1);
        fh_skip(&d->h, 1);
    }
    memset(req, 0, sizeof(*req));
    req->create_qp.pdir_dma = fh_make_pdir(&d->h, qp->pages, qp->npages);
    req->create_qp.pd_handle = pd;
    req->create_qp.send_cq_handle = scq;
    req->create_qp.recv_cq_handle = rcq;
    req->create_qp.max_send_wr = send_wr;
    req->create_qp.max_recv_wr = recv_wr;
    req->create_qp.max_send_sge = send_sge;
    req->create_qp.max_recv_sge = recv_sge;
    req->create_qp.total_chunks = qp->npages;
    req->create_qp.send_chunks = qp->send_chunks;
    req->create_qp.qp_type = type;
}

void create_qp(Dev *d, TQp *qp, uint32_t pd, uint32_t scq,
               uint32_t rcq, uint8_t type)
{
    union pvrdma_cmd_req req;
    union pvrdma_cmd_resp rsp;

    fill_create_qp(d, qp, &req, pd, scq, rcq, type, 16, 4, 16, 4);
    g_assert_cmpuint(dev_cmd(d, &req, PVRDMA_CMD_CREATE_QP, &rsp), ==, 0);
    qp->handle = rsp.create_qp_resp_v2.qp_handle;
    qp->qpn = rsp.create_qp_resp_v2.qpn;
    g_assert_cmpuint(rsp.create_qp_resp_v2.max_send_wr, ==, 16);
    g_assert_cmpuint(rsp.create_qp_resp_v2.max_recv_sge, ==, 4);
}

struct pvrdma_ring *qp_rings(Dev *d, TQp *qp)
{
    return fh_ptr(&d->h, qp->pages[0]);     /* [0] SQ, [1] RQ */
}

void *sq_elem(Dev *d, TQp *qp, uint32_t idx)
{
    uint64_t off = (uint64_t)(idx & (qp->send_wr - 1)) * qp->sq_stride;

    return (uint8_t *)fh_ptr(&d->h, qp->pages[1 + off / FH_PAGE]) +
           off % FH_PAGE;
}

void *rq_elem(Dev *d, TQp *qp, uint32_t idx)
{
    uint64_t off = (uint64_t)(idx & (qp->recv_wr - 1)) * qp->rq_stride;

    return (uint8_t *)fh_ptr(&d->h, qp->pages[1 + qp->send_chunks +
                                              off / FH_PAGE]) + off % FH_PAGE;
}

/* Write a send WQE (no doorbell). */
void put_send(Dev *d, TQp *qp, struct pvrdma_sq_wqe_hdr *hdr,
              const struct pvrdma_sge *sge, uint32_t nsge)
{
    uint8_t *e = sq_elem(d, qp, qp->sq_prod);

    hdr->num_sge = nsge;
    hdr->total_len = 0;
    for (uint32_t i = 0; i < nsge; i++) {
        hdr->total_len += sge[i].length;
    }
    memcpy(e, hdr, sizeof(*hdr));
    if (nsge) {
        memcpy(e + sizeof(*hdr), sge, nsge * sizeof(*sge));
    }
    qp->sq_prod = pvrdma_idx_next(qp->sq_prod, qp->send_wr);
    __atomic_store_n(&qp_rings(d, qp)[0].prod_tail, qp->sq_prod,
                     __ATOMIC_RELEASE);
}

void ring_send(Dev *d, TQp *qp)
{
    pvrdma_core_uar_write(&d->c, PVRDMA_UAR_QP_OFFSET,
                          PVRDMA_UAR_QP_SEND | qp->handle);
}

void post_send(Dev *d, TQp *qp, struct pvrdma_sq_wqe_hdr *hdr,
               const struct pvrdma_sge *sge, uint32_t nsge)
{
    put_send(d, qp, hdr, sge, nsge);
    ring_send(d, qp);
}

/* Write a receive WQE (no doorbell). */
void put_recv(Dev *d, TQp *qp, uint64_t wr_id,
              const struct pvrdma_sge *sge, uint32_t nsge)
{
    uint8_t *e = rq_elem(d, qp, qp->rq_prod);
    struct pvrdma_rq_wqe_hdr hdr = { .wr_id = wr_id, .num_sge = nsge };

    for (uint32_t i = 0; i < nsge; i++) {
        hdr.total_len += sge[i].length;
    }
    memcpy(e, &hdr, sizeof(hdr));
    memcpy(e + sizeof(hdr), sge, nsge * sizeof(*sge));
    qp->rq_prod = pvrdma_idx_next(qp->rq_prod, qp->recv_wr);
    __atomic_store_n(&qp_rings(d, qp)[1].prod_tail, qp->rq_prod,
                     __ATOMIC_RELEASE);
}

void ring_recv(Dev *d, TQp *qp)
{
    pvrdma_core_uar_write(&d->c, PVRDMA_UAR_QP_OFFSET,
                          PVRDMA_UAR_QP_RECV | qp->handle);
}

void post_recv(Dev *d, TQp *qp, uint64_t wr_id,
               const struct pvrdma_sge *sge, uint32_t nsge)
{
    put_recv(d, qp, wr_id, sge, nsge);
    ring_recv(d, qp);
}

uint32_t modify_qp(Dev *d, TQp *qp, uint32_t mask,
                   struct pvrdma_qp_attr *a)
{
    union pvrdma_cmd_req req = { 0 };

    uint32_t err;

    req.modify_qp.qp_handle = qp->handle;
    req.modify_qp.attr_mask = mask;
    req.modify_qp.attrs = *a;
    err = dev_cmd(d, &req, PVRDMA_CMD_MODIFY_QP, NULL);
    if (!err && (mask & PVRDMA_QP_STATE) && a->qp_state == PVRDMA_QPS_RESET) {
        /* as vmw_pvrdma's pvrdma_reset_qp(): both rings start over */
        struct pvrdma_ring *r = qp_rings(d, qp);

        qp->sq_prod = qp->rq_prod = 0;
        memset(r, 0, 2 * sizeof(*r));
    }
    return err;
}

uint32_t query_qp_state(Dev *d, TQp *qp)
{
    union pvrdma_cmd_req req = { 0 };
    union pvrdma_cmd_resp rsp;

    req.query_qp.qp_handle = qp->handle;
    req.query_qp.attr_mask = PVRDMA_QP_ATTR_MASK_ALL;
    g_assert_cmpuint(dev_cmd(d, &req, PVRDMA_CMD_QUERY_QP, &rsp), ==, 0);
    return rsp.query_qp_resp.attrs.qp_state;
}


void rc_to_init(Dev *d, TQp *qp)
{
    struct pvrdma_qp_attr a = { 0 };

    a.qp_state = PVRDMA_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = 1;
    a.qp_access_flags = RC_ACCESS;
    g_assert_cmpuint(modify_qp(d, qp, PVRDMA_QP_STATE | PVRDMA_QP_PKEY_INDEX |
                               PVRDMA_QP_PORT | PVRDMA_QP_ACCESS_FLAGS, &a),
                     ==, 0);
}

void rc_rtr_attrs(struct pvrdma_qp_attr *a, uint32_t dest_qpn)
{
    rc_rtr_attrs_gid(a, dest_qpn, test_gid);
}

void rc_rtr_attrs_gid(struct pvrdma_qp_attr *a, uint32_t dest_qpn,
                      const uint8_t dgid[16])
{
    memset(a, 0, sizeof(*a));
    a->qp_state = PVRDMA_QPS_RTR;
    a->path_mtu = PVRDMA_MTU_1024;
    a->dest_qp_num = dest_qpn;
    a->rq_psn = 0x1234;
    a->max_dest_rd_atomic = 1;
    a->min_rnr_timer = 1;
    memcpy(a->ah_attr.grh.dgid.raw, dgid, 16);
    a->ah_attr.grh.sgid_index = 0;
    a->ah_attr.grh.hop_limit = 64;
    a->ah_attr.port_num = 1;
}


void rc_to_rts(Dev *d, TQp *qp, uint32_t dest_qpn, uint8_t rnr_retry)
{
    rc_to_rts_gid(d, qp, dest_qpn, test_gid, rnr_retry);
}

void rc_to_rts_gid(Dev *d, TQp *qp, uint32_t dest_qpn, const uint8_t dgid[16],
                   uint8_t rnr_retry)
{
    rc_to_rts_mac(d, qp, dest_qpn, dgid, NULL, rnr_retry);
}

void rc_to_rts_mac(Dev *d, TQp *qp, uint32_t dest_qpn, const uint8_t dgid[16],
                   const uint8_t *dmac, uint8_t rnr_retry)
{
    struct pvrdma_qp_attr a;

    rc_to_init(d, qp);
    rc_rtr_attrs_gid(&a, dest_qpn, dgid);
    if (dmac) {
        memcpy(a.ah_attr.dmac, dmac, 6);
    }
    g_assert_cmpuint(modify_qp(d, qp, RTR_MASK, &a), ==, 0);
    memset(&a, 0, sizeof(a));
    a.qp_state = PVRDMA_QPS_RTS;
    a.sq_psn = 0x1234;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = rnr_retry;
    a.max_rd_atomic = 1;
    g_assert_cmpuint(modify_qp(d, qp, RTS_MASK, &a), ==, 0);
    g_assert_cmpuint(query_qp_state(d, qp), ==, PVRDMA_QPS_RTS);
}

/* Serve queued work until the device is idle (what the BH would do). */
unsigned run_all(Dev *d)
{
    unsigned n = 0;

    while (d->c.run.length && n < 1000) {
        pvrdma_core_run(&d->c);
        n++;
    }
    g_assert_cmpuint(d->c.run.length, ==, 0);
    return n;
}

void fill_pattern(uint8_t *buf, size_t len, uint32_t seed)
{
    for (size_t i = 0; i < len; i++) {
        seed = seed * 1103515245 + 12345;
        buf[i] = seed >> 16;
    }
}

void pair_setup(Pair *p, uint8_t rnr_retry)
{
    Dev *d = &p->d;

    dev_setup(d, NULL);
    p->pd = create_pd(d, 0);
    bind_gid(d, 0, test_gid);
    create_cq(d, &p->cqa, 64);
    create_cq(d, &p->cqb, 128);
    create_qp(d, &p->a, p->pd, p->cqa.handle, p->cqa.handle, PVRDMA_QPT_RC);
    create_qp(d, &p->b, p->pd, p->cqb.handle, p->cqb.handle, PVRDMA_QPT_RC);
    g_assert_cmpuint(p->a.qpn, !=, p->b.qpn);
    create_mr(d, &p->mra, p->pd, MRA_IOVA, MRA_LEN, MR_ACCESS);
    create_mr(d, &p->mrb, p->pd, MRB_IOVA, MRB_LEN, MR_ACCESS);
    rc_to_rts(d, &p->a, p->b.qpn, rnr_retry);
    rc_to_rts(d, &p->b, p->a.qpn, rnr_retry);
    run_all(d);
}

void pair_fini(Pair *p)
{
    expect_cq_empty(&p->d, &p->cqa);
    expect_cq_empty(&p->d, &p->cqb);
    dev_fini(&p->d);
}
