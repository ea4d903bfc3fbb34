/*
 * libqos driver for the pvrdma device: the guest's verbs objects (PDs, CQs,
 * QPs, MRs), work requests and completions, as the Linux driver makes them.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "../libqtest.h"
#include "pvrdma.h"

/* ------------------------------------------------------------------ */
/* Verbs objects                                                       */

const uint8_t qpvrdma_test_gid[16] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1
};

uint32_t qpvrdma_wqe_stride(size_t hdr, uint32_t sge)
{
    uint32_t s = hdr + sizeof(struct pvrdma_sge) * sge, p = 1;

    while (p < s) {
        p <<= 1;
    }
    return p;
}

void qpvrdma_cmd_ok(QPvrdma *d, const void *req, size_t len,
                    union pvrdma_cmd_resp *rsp)
{
    const struct pvrdma_cmd_hdr *h = req;
    union pvrdma_cmd_resp tmp;
    uint32_t err;

    if (!rsp) {
        rsp = &tmp;
    }
    err = qpvrdma_cmd(d, req, len, rsp);
    g_assert_cmpuint(err, ==, 0);
    g_assert_cmphex(rsp->hdr.ack, ==, PVRDMA_CMD_RESP(h->cmd));
    g_assert_cmpuint(rsp->hdr.err, ==, 0);
}

uint32_t qpvrdma_cmd_fails(QPvrdma *d, const void *req, size_t len)
{
    union pvrdma_cmd_resp rsp;
    uint32_t err = qpvrdma_cmd(d, req, len, &rsp);

    g_assert_cmpuint(err, !=, 0);
    g_assert_cmpuint(rsp.hdr.err, ==, err);
    return err;
}

void qpvrdma_cmd_err(QPvrdma *d, const void *req, size_t len, uint32_t err)
{
    g_assert_cmpuint(qpvrdma_cmd_fails(d, req, len), ==, err);
}

uint32_t qpvrdma_create_pd(QPvrdma *d, uint32_t ctx)
{
    struct pvrdma_cmd_create_pd c = { .hdr.cmd = PVRDMA_CMD_CREATE_PD,
                                      .ctx_handle = ctx };
    union pvrdma_cmd_resp r;

    qpvrdma_cmd_ok(d, &c, sizeof(c), &r);
    return r.create_pd_resp.pd_handle;
}

void qpvrdma_create_cq(QPvrdma *d, QPvrdmaCq *cq, uint32_t cqe)
{
    struct pvrdma_cmd_create_cq c = { .hdr.cmd = PVRDMA_CMD_CREATE_CQ };
    union pvrdma_cmd_resp r;

    memset(cq, 0, sizeof(*cq));
    qpvrdma_ring_alloc(d, &cq->ring,
                       1 + DIV_ROUND_UP(cqe * sizeof(struct pvrdma_cqe),
                                        PVRDMA_PAGE_SIZE));
    c.pdir_dma = cq->ring.pdir;
    c.cqe = cqe;
    c.nchunks = cq->ring.npages;
    qpvrdma_cmd_ok(d, &c, sizeof(c), &r);
    g_assert_cmpuint(r.create_cq_resp.cqe, ==, cqe);
    cq->handle = r.create_cq_resp.cq_handle;
    cq->cqe = cqe;
    g_array_append_val(d->cqs, ((QPvrdmaCqSeen) { cq->handle,
                                                  cq->ring.pages[0] }));
}

void qpvrdma_create_qp(QPvrdma *d, QPvrdmaQp *qp, uint32_t pd, uint32_t scq,
                       uint32_t rcq, uint8_t type, uint32_t n, uint32_t srq)
{
    struct pvrdma_cmd_create_qp c = { .hdr.cmd = PVRDMA_CMD_CREATE_QP };
    union pvrdma_cmd_resp r;
    uint32_t rpages;

    memset(qp, 0, sizeof(*qp));
    qp->nsend = qp->nrecv = n;
    qp->sge = 2;
    qp->srq = srq != 0;
    qp->sstride = qpvrdma_wqe_stride(sizeof(struct pvrdma_sq_wqe_hdr),
                                     qp->sge);
    qp->rstride = qpvrdma_wqe_stride(sizeof(struct pvrdma_rq_wqe_hdr),
                                     qp->sge);
    qp->send_chunks = DIV_ROUND_UP(n * qp->sstride, PVRDMA_PAGE_SIZE);
    rpages = qp->srq ? 0 : DIV_ROUND_UP(n * qp->rstride, PVRDMA_PAGE_SIZE);
    qpvrdma_ring_alloc(d, &qp->ring, 1 + qp->send_chunks + rpages);
    c.pdir_dma = qp->ring.pdir;
    c.pd_handle = pd;
    c.send_cq_handle = scq;
    c.recv_cq_handle = rcq;
    c.srq_handle = srq;
    c.is_srq = qp->srq;
    c.max_send_wr = n;
    c.max_recv_wr = qp->srq ? 0 : n;
    c.max_send_sge = qp->sge;
    c.max_recv_sge = qp->srq ? 0 : qp->sge;
    c.total_chunks = qp->ring.npages;
    c.send_chunks = qp->send_chunks;
    c.qp_type = type;
    c.access_flags = PVRDMA_ACCESS_LOCAL_WRITE;
    qpvrdma_cmd_ok(d, &c, sizeof(c), &r);
    if (d->version >= PVRDMA_QPHANDLE_VERSION) {
        qp->handle = r.create_qp_resp_v2.qp_handle;
        qp->qpn = r.create_qp_resp_v2.qpn;
        g_assert_cmpuint(r.create_qp_resp_v2.max_send_wr, ==, n);
    } else {
        /* before version 20 the QP number is the handle */
        qp->handle = qp->qpn = r.create_qp_resp.qpn;
        g_assert_cmpuint(r.create_qp_resp.max_send_wr, ==, n);
    }
}

uint32_t qpvrdma_modify_qp(QPvrdma *d, uint32_t h, uint32_t mask,
                           struct pvrdma_qp_attr *a)
{
    struct pvrdma_cmd_modify_qp c = { .hdr.cmd = PVRDMA_CMD_MODIFY_QP,
                                      .qp_handle = h, .attr_mask = mask };
    union pvrdma_cmd_resp r;

    c.attrs = *a;
    return qpvrdma_cmd(d, &c, sizeof(c), &r);
}

void qpvrdma_bind_gid_raw(QPvrdma *d, uint32_t index, const uint8_t gid[16])
{
    struct pvrdma_cmd_create_bind c = { .hdr.cmd = PVRDMA_CMD_CREATE_BIND,
                                        .index = index, .mtu = 1024,
                                        .gid_type =
                                            PVRDMA_GID_TYPE_FLAG_ROCE_V2 };

    memcpy(c.new_gid, gid, 16);
    qpvrdma_cmd_ok(d, &c, sizeof(c), NULL);
}

void qpvrdma_bind_gid(QPvrdma *d, uint32_t index)
{
    qpvrdma_bind_gid_raw(d, index, qpvrdma_test_gid);
}

/* RESET -> INIT (asserted) -> RTR; the RTR attributes are left in *a. */
static uint32_t qp_to_rtr(QPvrdma *d, QPvrdmaQp *qp, uint8_t type,
                          uint32_t dest_qpn, const uint8_t dgid[16],
                          const uint8_t *dmac, struct pvrdma_qp_attr *ap)
{
    struct pvrdma_qp_attr a = { 0 };
    bool rc = type == PVRDMA_QPT_RC;
    uint32_t err;

    a.qp_state = PVRDMA_QPS_INIT;
    a.port_num = 1;
    a.qkey = 0x11111111;
    a.qp_access_flags = PVRDMA_ACCESS_LOCAL_WRITE |
                        PVRDMA_ACCESS_REMOTE_WRITE |
                        PVRDMA_ACCESS_REMOTE_READ |
                        PVRDMA_ACCESS_REMOTE_ATOMIC;
    g_assert_cmpuint(qpvrdma_modify_qp(d, qp->handle, PVRDMA_QP_STATE |
                                       PVRDMA_QP_PKEY_INDEX | PVRDMA_QP_PORT |
                                       (rc ? PVRDMA_QP_ACCESS_FLAGS :
                                        PVRDMA_QP_QKEY), &a), ==, 0);
    a.qp_state = PVRDMA_QPS_RTR;
    a.path_mtu = PVRDMA_MTU_1024;
    a.dest_qp_num = dest_qpn;
    a.rq_psn = 100;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 1;
    memcpy(a.ah_attr.grh.dgid.raw, dgid, 16);
    a.ah_attr.port_num = 1;
    if (dmac) {
        memcpy(a.ah_attr.dmac, dmac, 6);
        a.ah_attr.grh.hop_limit = 64;
    }
    err = qpvrdma_modify_qp(d, qp->handle, PVRDMA_QP_STATE |
                            (rc ? PVRDMA_QP_AV | PVRDMA_QP_PATH_MTU |
                             PVRDMA_QP_DEST_QPN | PVRDMA_QP_RQ_PSN |
                             PVRDMA_QP_MAX_DEST_RD_ATOMIC |
                             PVRDMA_QP_MIN_RNR_TIMER : 0), &a);
    *ap = a;
    return err;
}

uint32_t qpvrdma_qp_to_rtr(QPvrdma *d, QPvrdmaQp *qp, uint8_t type,
                           uint32_t dest_qpn, const uint8_t dgid[16])
{
    struct pvrdma_qp_attr a;

    return qp_to_rtr(d, qp, type, dest_qpn, dgid, NULL, &a);
}

void qpvrdma_qp_to_rts_mac(QPvrdma *d, QPvrdmaQp *qp, uint8_t type,
                           uint32_t dest_qpn, const uint8_t dgid[16],
                           const uint8_t *dmac, uint8_t rnr_retry)
{
    struct pvrdma_qp_attr a;
    bool rc = type == PVRDMA_QPT_RC;

    g_assert_cmpuint(qp_to_rtr(d, qp, type, dest_qpn, dgid, dmac, &a), ==, 0);
    a.qp_state = PVRDMA_QPS_RTS;
    a.sq_psn = 100;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = rnr_retry;
    a.max_rd_atomic = 1;
    g_assert_cmpuint(qpvrdma_modify_qp(d, qp->handle, PVRDMA_QP_STATE |
                                       PVRDMA_QP_SQ_PSN |
                                       (rc ? PVRDMA_QP_TIMEOUT |
                                        PVRDMA_QP_RETRY_CNT |
                                        PVRDMA_QP_RNR_RETRY |
                                        PVRDMA_QP_MAX_QP_RD_ATOMIC : 0), &a),
                     ==, 0);
}

void qpvrdma_qp_to_rts_gid(QPvrdma *d, QPvrdmaQp *qp, uint8_t type,
                           uint32_t dest_qpn, const uint8_t dgid[16],
                           uint8_t rnr_retry)
{
    qpvrdma_qp_to_rts_mac(d, qp, type, dest_qpn, dgid, NULL, rnr_retry);
}

void qpvrdma_qp_to_rts(QPvrdma *d, QPvrdmaQp *qp, uint8_t type,
                       uint32_t dest_qpn)
{
    qpvrdma_qp_to_rts_gid(d, qp, type, dest_qpn, qpvrdma_test_gid, 7);
}

uint32_t qpvrdma_create_mr(QPvrdma *d, uint32_t pd, uint64_t gpa,
                           uint32_t len, uint32_t access)
{
    uint32_t rkey, lkey = qpvrdma_create_mr_keys(d, pd, gpa, len, access,
                                                 &rkey);

    g_assert_cmpuint(lkey, ==, rkey);
    return lkey;
}

uint32_t qpvrdma_try_create_mr(QPvrdma *d, uint32_t pd, uint64_t gpa,
                               uint32_t len, uint32_t access,
                               union pvrdma_cmd_resp *r)
{
    struct pvrdma_cmd_create_mr c = { .hdr.cmd = PVRDMA_CMD_CREATE_MR };
    uint32_t n = DIV_ROUND_UP((gpa & (PVRDMA_PAGE_SIZE - 1)) + len,
                              PVRDMA_PAGE_SIZE);
    g_autofree uint64_t *pages = g_new(uint64_t, n);

    for (uint32_t i = 0; i < n; i++) {
        pages[i] = (gpa & ~(uint64_t)(PVRDMA_PAGE_SIZE - 1)) +
                   i * (uint64_t)PVRDMA_PAGE_SIZE;
    }
    c.start = gpa;
    c.length = len;
    c.pdir_dma = qpvrdma_pdir(d, pages, n);
    c.pd_handle = pd;
    c.access_flags = access;
    c.nchunks = n;
    return qpvrdma_cmd(d, &c, sizeof(c), r);
}

uint32_t qpvrdma_create_mr_keys(QPvrdma *d, uint32_t pd, uint64_t gpa,
                                uint32_t len, uint32_t access, uint32_t *rkey)
{
    union pvrdma_cmd_resp r;

    g_assert_cmpuint(qpvrdma_try_create_mr(d, pd, gpa, len, access, &r), ==,
                     0);
    *rkey = r.create_mr_resp.rkey;
    return r.create_mr_resp.lkey;
}

uint32_t qpvrdma_destroy(QPvrdma *d, uint32_t cmd, uint32_t handle)
{
    union pvrdma_cmd_req c = { .hdr.cmd = cmd };

    switch (cmd) {
    case PVRDMA_CMD_DESTROY_UC:
        c.destroy_uc.ctx_handle = handle;
        break;
    case PVRDMA_CMD_DESTROY_PD:
        c.destroy_pd.pd_handle = handle;
        break;
    case PVRDMA_CMD_DESTROY_MR:
        c.destroy_mr.mr_handle = handle;
        break;
    case PVRDMA_CMD_DESTROY_CQ:
        c.destroy_cq.cq_handle = handle;
        break;
    case PVRDMA_CMD_DESTROY_QP:
        c.destroy_qp.qp_handle = handle;
        break;
    case PVRDMA_CMD_DESTROY_SRQ:
        c.destroy_srq.srq_handle = handle;
        break;
    default:
        g_assert_not_reached();
    }
    return qpvrdma_cmd(d, &c, sizeof(c), NULL);
}

uint64_t qpvrdma_wqe_addr(QPvrdmaQp *qp, bool send, uint32_t idx)
{
    uint32_t n = send ? qp->nsend : qp->nrecv;
    uint32_t st = send ? qp->sstride : qp->rstride;
    uint64_t off = (uint64_t)(idx & (n - 1)) * st;
    uint32_t first = send ? 1 : 1 + qp->send_chunks;

    return qp->ring.pages[first + off / PVRDMA_PAGE_SIZE] +
           off % PVRDMA_PAGE_SIZE;
}

void qpvrdma_post_recv(QPvrdma *d, QPvrdmaQp *qp, uint64_t wr_id,
                       uint64_t addr, uint32_t len, uint32_t lkey)
{
    struct pvrdma_rq_wqe_hdr h = { .wr_id = wr_id, .num_sge = 1 };
    struct pvrdma_sge s = { .addr = addr, .length = len, .lkey = lkey };
    uint64_t w = qpvrdma_wqe_addr(qp, false, qp->rprod);

    qtest_memwrite(d->qts, w, &h, sizeof(h));
    qtest_memwrite(d->qts, w + sizeof(h), &s, sizeof(s));
    qp->rprod = (qp->rprod + 1) & (2 * qp->nrecv - 1);
    qtest_writel(d->qts, qp->ring.pages[0] + 8, qp->rprod);
    qpvrdma_uar_write(d, 0, PVRDMA_UAR_QP_OFFSET,
                      PVRDMA_UAR_QP_RECV | qp->handle);
}

void qpvrdma_post_send(QPvrdma *d, QPvrdmaQp *qp,
                       struct pvrdma_sq_wqe_hdr *h,
                       const struct pvrdma_sge *s, bool ring)
{
    uint64_t w = qpvrdma_wqe_addr(qp, true, qp->sprod);

    qtest_memwrite(d->qts, w, h, sizeof(*h));
    if (h->num_sge && s) {
        qtest_memwrite(d->qts, w + sizeof(*h), s,
                       MIN(h->num_sge, qp->sge) * sizeof(*s));
    }
    qp->sprod = (qp->sprod + 1) & (2 * qp->nsend - 1);
    qtest_writel(d->qts, qp->ring.pages[0], qp->sprod);
    if (ring) {
        qpvrdma_uar_write(d, 0, PVRDMA_UAR_QP_OFFSET,
                          PVRDMA_UAR_QP_SEND | qp->handle);
    }
}

void qpvrdma_send_wr(QPvrdma *d, QPvrdmaQp *qp, uint32_t op, uint64_t wr_id,
                     uint64_t addr, uint32_t len, uint32_t lkey,
                     uint64_t raddr, uint32_t rkey)
{
    struct pvrdma_sq_wqe_hdr h = { .wr_id = wr_id, .num_sge = len ? 1 : 0,
                                   .opcode = op,
                                   .send_flags = PVRDMA_SEND_SIGNALED };
    struct pvrdma_sge s = { .addr = addr, .length = len, .lkey = lkey };

    h.wr.rdma.remote_addr = raddr;
    h.wr.rdma.rkey = rkey;
    qpvrdma_post_send(d, qp, &h, &s, true);
}

void qpvrdma_atomic_wr(QPvrdma *d, QPvrdmaQp *qp, uint32_t op,
                       uint64_t wr_id, uint64_t addr, uint32_t lkey,
                       uint64_t raddr, uint32_t rkey, uint64_t compare_add,
                       uint64_t swap)
{
    struct pvrdma_sq_wqe_hdr h = { .wr_id = wr_id, .num_sge = 1,
                                   .opcode = op,
                                   .send_flags = PVRDMA_SEND_SIGNALED };
    struct pvrdma_sge s = { .addr = addr, .length = 8, .lkey = lkey };

    h.wr.atomic.remote_addr = raddr;
    h.wr.atomic.rkey = rkey;
    h.wr.atomic.compare_add = compare_add;
    h.wr.atomic.swap = swap;
    qpvrdma_post_send(d, qp, &h, &s, true);
}

/*
 * The CQE at cq's consumer index is of QP qp, which DESTROY_QP flushed
 * from cq if it was there then; the flushes that cq's consumer index has
 * gone past are forgotten.
 */
static bool cqe_flushed(QPvrdma *d, QPvrdmaCq *cq, uint32_t qp)
{
    bool flushed = false;

    for (guint i = d->flushes->len; i-- > 0;) {
        QPvrdmaFlush *f = &g_array_index(d->flushes, QPvrdmaFlush, i);

        if (f->cq != cq->handle) {
            continue;
        }
        if (f->upto == cq->cons) {
            g_array_remove_index_fast(d->flushes, i);
        } else if (f->qp == qp) {
            flushed = true;     /* cons is before upto (both in [0, 2N)) */
        }
    }
    return flushed;
}

/* The oldest CQE of cq polled ahead, if any (QPvrdma.stashed). */
static bool unstash(QPvrdma *d, QPvrdmaCq *cq, struct pvrdma_cqe *e,
                    bool any_wr, uint64_t wr_id)
{
    for (guint i = 0; i < d->stashed->len; i++) {
        QPvrdmaStashed *st = &g_array_index(d->stashed, QPvrdmaStashed, i);

        if (st->cq == cq->handle && (any_wr || st->e.wr_id == wr_id)) {
            *e = st->e;
            g_array_remove_index(d->stashed, i);
            return true;
        }
    }
    return false;
}

static bool poll_ring(QPvrdma *d, QPvrdmaCq *cq, struct pvrdma_cqe *e);

bool qpvrdma_poll_cq(QPvrdma *d, QPvrdmaCq *cq, struct pvrdma_cqe *e)
{
    return unstash(d, cq, e, true, 0) || poll_ring(d, cq, e);
}

static bool poll_ring(QPvrdma *d, QPvrdmaCq *cq, struct pvrdma_cqe *e)
{
    for (int i = 0; i < 1000; i++) {
        uint32_t prod = qtest_readl(d->qts, cq->ring.pages[0] + 8);

        if (prod != cq->cons) {
            uint64_t off = (uint64_t)(cq->cons & (cq->cqe - 1)) *
                           sizeof(*e);
            bool flushed;

            qtest_memread(d->qts, cq->ring.pages[1 + off / PVRDMA_PAGE_SIZE] +
                          off % PVRDMA_PAGE_SIZE, e, sizeof(*e));
            flushed = cqe_flushed(d, cq, e->qp);
            /* else the Linux driver would stop at this CQE forever */
            g_assert(flushed || g_hash_table_contains(d->live_qps,
                                                      GUINT_TO_POINTER(e->qp)));
            cq->cons = (cq->cons + 1) & (2 * cq->cqe - 1);
            qtest_writel(d->qts, cq->ring.pages[0] + 12, cq->cons);
            if (!flushed) {
                return true;
            }
            continue;
        }
        qtest_clock_step(d->qts, 10);
    }
    return false;
}

bool qpvrdma_wait_cq(QPvrdma *d, QPvrdmaCq *cq, struct pvrdma_cqe *e,
                     unsigned ms)
{
    for (unsigned waited = 0;; waited += 5) {
        if (qpvrdma_poll_cq(d, cq, e)) {
            return true;
        }
        if (waited >= ms) {
            return false;
        }
        g_usleep(5 * 1000);
    }
}

void qpvrdma_expect_cqe(QPvrdma *d, QPvrdmaCq *cq, uint64_t wr_id,
                        uint32_t opcode, uint32_t status, uint32_t len)
{
    qpvrdma_expect_cqe_wait(d, cq, wr_id, opcode, status, len,
                            qpvrdma_mode_wait_ms);
}

void qpvrdma_expect_cqe_wait(QPvrdma *d, QPvrdmaCq *cq, uint64_t wr_id,
                             uint32_t opcode, uint32_t status, uint32_t len,
                             unsigned ms)
{
    struct pvrdma_cqe e;

    if (qpvrdma_mode_wait_ms && !unstash(d, cq, &e, false, wr_id)) {
        /* beside qtest: another QP's CQE may come first; keep it */
        for (unsigned waited = 0;; waited += 5) {
            if (poll_ring(d, cq, &e)) {
                QPvrdmaStashed st = { .cq = cq->handle, .e = e };

                if (e.wr_id == wr_id) {
                    break;
                }
                g_array_append_val(d->stashed, st);
                continue;
            }
            g_assert_cmpuint(waited, <, ms);
            g_usleep(5 * 1000);
        }
    } else if (!qpvrdma_mode_wait_ms) {
        g_assert(qpvrdma_wait_cq(d, cq, &e, ms));
    }
    g_assert_cmphex(e.wr_id, ==, wr_id);
    g_assert_cmpuint(e.status, ==, status);
    if (status == PVRDMA_WC_SUCCESS) {
        g_assert_cmpuint(e.opcode, ==, opcode);
        g_assert_cmpuint(e.byte_len, ==, len);
    }
}

void qpvrdma_cq_empty(QPvrdma *d, QPvrdmaCq *cq)
{
    struct pvrdma_cqe e;

    for (guint i = 0; i < d->stashed->len; i++) {
        QPvrdmaStashed *st = &g_array_index(d->stashed, QPvrdmaStashed, i);

        if (st->cq == cq->handle) {
            g_error("CQ %u is not empty: a CQE of QP %u, wr_id 0x%" PRIx64
                    ", status %u, polled ahead", cq->handle,
                    (unsigned)st->e.qp, (uint64_t)st->e.wr_id, st->e.status);
        }
    }
    qtest_clock_step(d->qts, 100);
    /* nothing but what DESTROY_QP flushed */
    while (qtest_readl(d->qts, cq->ring.pages[0] + 8) != cq->cons) {
        uint64_t off = (uint64_t)(cq->cons & (cq->cqe - 1)) * sizeof(e);

        qtest_memread(d->qts, cq->ring.pages[1 + off / PVRDMA_PAGE_SIZE] +
                      off % PVRDMA_PAGE_SIZE, &e, sizeof(e));
        if (!cqe_flushed(d, cq, e.qp)) {
            g_error("CQ %u is not empty: a CQE of QP %u, wr_id 0x%" PRIx64
                    ", status %u", cq->handle, (unsigned)e.qp,
                    (uint64_t)e.wr_id, e.status);
        }
        cq->cons = (cq->cons + 1) & (2 * cq->cqe - 1);
        qtest_writel(d->qts, cq->ring.pages[0] + 12, cq->cons);
    }
}
