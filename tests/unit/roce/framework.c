/*
 * Tests of the RoCEv2 transport: memory regions and endpoints (rt.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "roce/rt.h"

void buf_create(Dev *d, Buf *b, uint32_t pd, uint64_t iova,
                uint64_t len, uint32_t access)
{
    memset(b, 0, sizeof(*b));
    b->iova = iova;
    b->len = len;
    b->first = iova & ~(uint64_t)(FH_PAGE - 1);
    b->npages = (iova + len - b->first + FH_PAGE - 1) / FH_PAGE;
    b->pages = g_new(uint64_t, b->npages);
    create_mr_pages(d, pd, iova, len, access, b->pages, b->npages,
                    &b->handle, &b->lkey, &b->rkey);
}

uint8_t *buf_at(Dev *d, Buf *b, uint64_t off, uint64_t *run)
{
    uint64_t o = b->iova - b->first + off;

    g_assert_cmpuint(off, <, b->len);
    *run = MIN(FH_PAGE - o % FH_PAGE, b->len - off);
    return (uint8_t *)fh_ptr(&d->h, b->pages[o / FH_PAGE]) + o % FH_PAGE;
}

void buf_write(Dev *d, Buf *b, uint64_t off, const void *src,
               uint64_t len)
{
    while (len) {
        uint64_t run;
        uint8_t *p = buf_at(d, b, off, &run);

        run = MIN(run, len);
        memcpy(p, src, run);
        src = (const uint8_t *)src + run;
        off += run;
        len -= run;
    }
}

void buf_read(Dev *d, Buf *b, uint64_t off, void *dst, uint64_t len)
{
    while (len) {
        uint64_t run;
        uint8_t *p = buf_at(d, b, off, &run);

        run = MIN(run, len);
        memcpy(dst, p, run);
        dst = (uint8_t *)dst + run;
        off += run;
        len -= run;
    }
}

void buf_fill(Dev *d, Buf *b, uint64_t off, uint64_t len, uint8_t v)
{
    while (len) {
        uint64_t run;
        uint8_t *p = buf_at(d, b, off, &run);

        run = MIN(run, len);
        memset(p, v, run);
        off += run;
        len -= run;
    }
}

void ep_init(Ep *e, Node *nd, uint8_t type, uint64_t mr_len)
{
    union pvrdma_cmd_req req;
    union pvrdma_cmd_resp rsp;
    Dev *d = &nd->d;

    memset(e, 0, sizeof(*e));
    e->nd = nd;
    e->pd = create_pd(d, 0);
    create_cq(d, &e->cq, EP_CQE);
    fill_create_qp(d, &e->qp, &req, e->pd, e->cq.handle, e->cq.handle, type,
                   EP_WR, 4, EP_WR, 4);
    g_assert_cmpuint(dev_cmd(d, &req, PVRDMA_CMD_CREATE_QP, &rsp), ==, 0);
    e->qp.handle = rsp.create_qp_resp_v2.qp_handle;
    e->qp.qpn = rsp.create_qp_resp_v2.qpn;
    g_assert_cmpuint(rsp.create_qp_resp_v2.max_send_wr, ==, EP_WR);
    buf_create(d, &e->mr, e->pd, EP_IOVA, mr_len, EP_ACCESS);
}

void ep_fini(Ep *e)
{
    g_free(e->mr.pages);
}

Dev *ep_dev(Ep *e)
{
    return &e->nd->d;
}

PvrdmaQP *ep_qp(Ep *e)
{
    return pvrdma_qp_get(&e->nd->d.c, e->qp.handle);
}

uint32_t ep_state(Ep *e)
{
    return query_qp_state(ep_dev(e), &e->qp);
}

struct pvrdma_sge ep_sge(Ep *e, uint64_t off, uint32_t len)
{
    return (struct pvrdma_sge) { EP_IOVA + off, len, e->mr.lkey };
}

uint64_t ep_va(Ep *e, uint64_t off)
{
    return EP_IOVA + off;
}

uint32_t ep_cq_avail(Ep *e)
{
    uint32_t prod = cq_state(ep_dev(e), &e->cq)->rx.prod_tail;

    return pvrdma_idx_used(prod, e->cq.cons, e->cq.cqe);
}

const RcOpts rc_default = {
    .timeout = 14, .retry_cnt = 7, .rnr_retry = 7, .min_rnr_timer = 1,
    .rd_atomic = 4, .psn_a = 0x001000, .psn_b = 0x00a000,
};

void rc_half(Ep *e, Ep *peer, const RcOpts *o, uint32_t sq_psn,
             uint32_t rq_psn)
{
    Dev *d = ep_dev(e);
    struct pvrdma_qp_attr a;

    rc_to_init(d, &e->qp);
    memset(&a, 0, sizeof(a));
    a.qp_state = PVRDMA_QPS_RTR;
    a.path_mtu = PVRDMA_MTU_1024;
    a.dest_qp_num = peer->qp.qpn;
    a.rq_psn = rq_psn;
    a.max_dest_rd_atomic = o->rd_atomic;
    a.min_rnr_timer = o->min_rnr_timer;
    memcpy(a.ah_attr.grh.dgid.raw, peer->nd->gid, 16);
    a.ah_attr.grh.sgid_index = 0;
    a.ah_attr.grh.hop_limit = 64;
    a.ah_attr.port_num = 1;
    memcpy(a.ah_attr.dmac, peer->nd->d.h.mac, 6);
    g_assert_cmpuint(modify_qp(d, &e->qp, RTR_MASK, &a), ==, 0);
    memset(&a, 0, sizeof(a));
    a.qp_state = PVRDMA_QPS_RTS;
    a.sq_psn = sq_psn;
    a.timeout = o->timeout;
    a.retry_cnt = o->retry_cnt;
    a.rnr_retry = o->rnr_retry;
    a.max_rd_atomic = o->rd_atomic;
    g_assert_cmpuint(modify_qp(d, &e->qp, RTS_MASK, &a), ==, 0);
    g_assert_cmpuint(ep_state(e), ==, PVRDMA_QPS_RTS);
    /* the peer is not on this device: the RoCEv2 transport took it */
    g_assert_true(ep_qp(e)->tp == e->nd->t);
}

void rc_connect(Net *n, Ep *a, Ep *b, const RcOpts *o)
{
    rc_half(a, b, o, o->psn_a, o->psn_b);
    rc_half(b, a, o, o->psn_b, o->psn_a);
    g_hash_table_insert(n->dir[a->nd->id].next_psn,
                        GUINT_TO_POINTER(b->qp.qpn),
                        GUINT_TO_POINTER(o->psn_a + 1));
    g_hash_table_insert(n->dir[b->nd->id].next_psn,
                        GUINT_TO_POINTER(a->qp.qpn),
                        GUINT_TO_POINTER(o->psn_b + 1));
}

void rc_setup(Rc *r, const RcOpts *o, uint64_t mr_len, uint32_t seed)
{
    net_init(&r->n, seed);
    ep_init(&r->a, &r->n.node[0], PVRDMA_QPT_RC, mr_len);
    ep_init(&r->b, &r->n.node[1], PVRDMA_QPT_RC, mr_len);
    rc_connect(&r->n, &r->a, &r->b, o ? o : &rc_default);
    net_settle(&r->n);
}

void rc_fini(Rc *r)
{
    expect_cq_empty(ep_dev(&r->a), &r->a.cq);
    expect_cq_empty(ep_dev(&r->b), &r->b.cq);
    if (g_test_failed()) {
        log_stats(&r->n);
    }
    ep_fini(&r->a);
    ep_fini(&r->b);
    net_fini(&r->n);
}

bool cq_want_done(Net *n, void *arg)
{
    CqWant *w = arg;

    return (!w->a || ep_cq_avail(w->a) >= w->na) &&
           (!w->b || ep_cq_avail(w->b) >= w->nb);
}

bool wait_cqes(Net *n, int64_t max_ms, Ep *a, uint32_t na, Ep *b,
               uint32_t nb)
{
    CqWant w = { a, b, na, nb };
    bool ok = net_run(n, max_ms, cq_want_done, &w);

    if (!ok) {
        g_test_message("waited for %u + %u completions, got %u + %u (fake "
                       "time %" PRId64 " ms)", na, nb,
                       a ? ep_cq_avail(a) : 0, b ? ep_cq_avail(b) : 0,
                       net_now(n));
        log_stats(n);
    }
    return ok;
}

void wr_send_flags(Ep *e, uint64_t wr_id, uint32_t opcode,
                   uint32_t flags, uint32_t imm,
                   const struct pvrdma_sge *sge, uint32_t nsge)
{
    struct pvrdma_sq_wqe_hdr w = { 0 };

    w.wr_id = wr_id;
    w.opcode = opcode;
    w.send_flags = PVRDMA_SEND_SIGNALED | flags;
    w.ex.imm_data = imm;
    post_send(ep_dev(e), &e->qp, &w, sge, nsge);
}

void wr_send(Ep *e, uint64_t wr_id, uint32_t opcode, uint32_t imm,
             const struct pvrdma_sge *sge, uint32_t nsge)
{
    wr_send_flags(e, wr_id, opcode, 0, imm, sge, nsge);
}

void wr_rdma(Ep *e, uint64_t wr_id, uint32_t opcode,
             const struct pvrdma_sge *sge, uint32_t nsge,
             uint64_t raddr, uint32_t rkey, uint32_t imm)
{
    struct pvrdma_sq_wqe_hdr w = { 0 };

    w.wr_id = wr_id;
    w.opcode = opcode;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.ex.imm_data = imm;
    w.wr.rdma.remote_addr = raddr;
    w.wr.rdma.rkey = rkey;
    post_send(ep_dev(e), &e->qp, &w, sge, nsge);
}

void wr_atomic(Ep *e, uint64_t wr_id, uint32_t opcode,
               const struct pvrdma_sge *sge, uint64_t raddr,
               uint32_t rkey, uint64_t compare_add, uint64_t swap)
{
    struct pvrdma_sq_wqe_hdr w = { 0 };

    w.wr_id = wr_id;
    w.opcode = opcode;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.wr.atomic.remote_addr = raddr;
    w.wr.atomic.rkey = rkey;
    w.wr.atomic.compare_add = compare_add;
    w.wr.atomic.swap = swap;
    post_send(ep_dev(e), &e->qp, &w, sge, 1);
}

void wr_recv(Ep *e, uint64_t wr_id, uint64_t off, uint32_t len)
{
    struct pvrdma_sge s = ep_sge(e, off, len);

    post_recv(ep_dev(e), &e->qp, wr_id, &s, 1);
}

void ep_expect(Ep *e, uint64_t wr_id, uint32_t status,
               uint32_t opcode, uint32_t byte_len)
{
    if (!ep_cq_avail(e)) {
        g_test_message("no completion for wr_id 0x%" PRIx64 " in QP %u's CQ",
                       wr_id, e->qp.qpn);
        g_test_fail();
        return;
    }
    expect_cqe(ep_dev(e), &e->cq, wr_id, status, opcode, byte_len,
               e->qp.handle);
}

void ep_expect_send_failed(Ep *e, uint32_t status)
{
    ep_expect(e, 0xa1, status, PVRDMA_WC_SEND, 0);
    ep_expect(e, 0xa2, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_SEND, 0);
    g_assert_cmpuint(ep_state(e), ==, PVRDMA_QPS_ERR);
}

struct pvrdma_cqe ep_expect_recv(Ep *e, uint64_t wr_id,
                                 uint32_t opcode, uint32_t byte_len,
                                 uint32_t src_qpn)
{
    struct pvrdma_cqe c;

    memset(&c, 0, sizeof(c));
    if (!poll_cq(ep_dev(e), &e->cq, &c)) {
        g_test_message("no receive completion for wr_id 0x%" PRIx64
                       " in QP %u's CQ", wr_id, e->qp.qpn);
        g_test_fail();
        return c;
    }
    g_assert_cmphex(c.wr_id, ==, wr_id);
    g_assert_cmpuint(c.status, ==, PVRDMA_WC_SUCCESS);
    g_assert_cmpuint(c.opcode, ==, opcode);
    g_assert_cmpuint(c.byte_len, ==, byte_len);
    g_assert_cmpuint(c.qp, ==, e->qp.handle);
    g_assert_cmpuint(c.src_qp, ==, src_qpn);
    g_assert_cmpuint(c.network_hdr_type, ==, PVRDMA_NETWORK_IPV4);
    return c;
}

void ep_put(Ep *e, uint64_t off, const void *data, uint64_t len)
{
    buf_write(ep_dev(e), &e->mr, off, data, len);
}

void ep_check_at(Ep *e, uint64_t off, const void *data, uint64_t len,
                 int line)
{
    uint8_t *got = g_malloc(MAX(len, 1));

    buf_read(ep_dev(e), &e->mr, off, got, len);
    if (memcmp(got, data, len)) {
        uint64_t i = 0, bad = 0;

        while (got[i] == ((const uint8_t *)data)[i]) {
            i++;
        }
        for (uint64_t k = i; k < len; k++) {
            bad += got[k] != ((const uint8_t *)data)[k];
        }
        g_test_message("line %d: %" PRIu64 " of %" PRIu64 " bytes at offset "
                       "0x%" PRIx64 " differ, the first at +%" PRIu64
                       " (0x%02x, want 0x%02x)", line, bad, len, off, i,
                       got[i], ((const uint8_t *)data)[i]);
        g_test_fail();
    }
    g_free(got);
}

uint8_t ep_byte(Ep *e, uint64_t off)
{
    uint8_t v;

    buf_read(ep_dev(e), &e->mr, off, &v, 1);
    return v;
}

uint64_t ep_u64(Ep *e, uint64_t off)
{
    uint64_t v;

    buf_read(ep_dev(e), &e->mr, off, &v, 8);
    return v;
}

void ep_set_u64(Ep *e, uint64_t off, uint64_t v)
{
    buf_write(ep_dev(e), &e->mr, off, &v, 8);
}

uint8_t *pattern(size_t len, uint32_t seed)
{
    uint8_t *p = g_malloc(MAX(len, 1));

    fill_pattern(p, len, seed);
    return p;
}

uint32_t ops(Net *n, unsigned from, uint8_t op)
{
    return n->dir[from].ops[op];
}

uint32_t psn_sent(Net *n, unsigned from, uint32_t psn)
{
    return GPOINTER_TO_UINT(g_hash_table_lookup(n->dir[from].psn_count,
                                                GUINT_TO_POINTER(psn)));
}

void destroy_qp(Ep *e)
{
    union pvrdma_cmd_req req = { 0 };

    req.destroy_qp.qp_handle = e->qp.handle;
    g_assert_cmpuint(dev_cmd(ep_dev(e), &req, PVRDMA_CMD_DESTROY_QP, NULL),
                     ==, 0);
}
