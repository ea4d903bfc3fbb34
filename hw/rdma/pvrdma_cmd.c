/*
 * pvrdma: the command channel.  One handler per opcode; each validates
 * every field of the request it copied out of guest memory, and answers
 * with an error status (response err and the ERR register) when anything
 * is out of bounds, unknown, busy or not owned by the caller.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef PVRDMA_STANDALONE
#include "qemu/osdep.h"
#endif
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/rdma_backend.h"
#include "pvrdma_int.h"

typedef int (*CmdHandler)(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                          union pvrdma_cmd_resp *rsp);

#define CMD_ERR(c, err, fmt, ...) ({ \
        PVRDMA_GUEST_ERR(c, fmt, ##__VA_ARGS__); \
        (err); \
    })

uint32_t pvrdma_ctx_of_pd(PvrdmaCore *c, uint32_t pd)
{
    PvrdmaPD *p = pvrdma_table_get(&c->pd, pd);

    return p ? p->ctx : UINT32_MAX;
}

/* ctx 0 is the kernel; anything else must be a live user context. */
static bool ctx_valid(PvrdmaCore *c, uint32_t ctx)
{
    return ctx == 0 || pvrdma_table_get(&c->uc, ctx);
}

static void ctx_ref(PvrdmaCore *c, uint32_t ctx, int d)
{
    PvrdmaUC *uc = pvrdma_table_get(&c->uc, ctx);

    if (uc) {
        uc->refs += d;
    }
}

/* ---------------------------------------------------------------- */

static int cmd_query_port(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                          union pvrdma_cmd_resp *rsp)
{
    struct pvrdma_port_attr *a = &rsp->query_port_resp.attrs;

    if (req->query_port.port_num != 1) {
        return CMD_ERR(c, EINVAL, "QUERY_PORT: bad port %u",
                       req->query_port.port_num);
    }
    a->state = pvrdma_port_up(c) ? PVRDMA_PORT_ACTIVE : PVRDMA_PORT_DOWN;
    if (!pvrdma_owner_port_active(c)) {
        a->state = PVRDMA_PORT_DOWN;
    }
    a->max_mtu = PVRDMA_MTU_4096;
    a->active_mtu = PVRDMA_MTU_1024;
    a->gid_tbl_len = c->lim.gid_tbl_len;
    a->port_cap_flags = PVRDMA_PORT_CM_SUP | PVRDMA_PORT_IP_BASED_GIDS;
    a->max_msg_sz = 1u << 31;
    a->pkey_tbl_len = PVRDMA_MAX_PKEYS;
    a->lid = 0;
    a->lmc = 0;
    a->max_vl_num = 1;
    a->subnet_timeout = 18;
    a->active_width = PVRDMA_WIDTH_4X;
    a->active_speed = PVRDMA_SPEED_QDR;
    a->phys_state = pvrdma_port_up(c) ? PVRDMA_PHYS_STATE_LINKUP :
                                        PVRDMA_PHYS_STATE_DISABLED;
    return 0;
}

static int cmd_query_pkey(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                          union pvrdma_cmd_resp *rsp)
{
    if (req->query_pkey.port_num != 1 ||
        req->query_pkey.index >= PVRDMA_MAX_PKEYS) {
        return CMD_ERR(c, EINVAL, "QUERY_PKEY: bad port %u / index %u",
                       req->query_pkey.port_num, req->query_pkey.index);
    }
    rsp->query_pkey_resp.pkey = PVRDMA_PKEY_DEFAULT;
    return 0;
}

static int cmd_create_uc(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                         union pvrdma_cmd_resp *rsp)
{
    uint64_t pfn = c->version >= PVRDMA_PPN64_VERSION ?
                   req->create_uc.pfn64 : req->create_uc.pfn;
    uint64_t base = c->ops->uar_base(c->opaque) / PVRDMA_PAGE_SIZE;
    PvrdmaUC *uc;
    uint32_t h;

    if (pfn <= base || pfn - base >= c->lim.max_uar) {
        /* page 0 belongs to the driver itself */
        return CMD_ERR(c, EINVAL, "CREATE_UC: pfn 0x%" PRIx64
                       " is not a user UAR page", pfn);
    }
    /* a context's handle is its UAR page index: one context per page */
    h = pfn - base;
    uc = g_new0(PvrdmaUC, 1);
    if (!pvrdma_table_insert(&c->uc, h, uc)) {
        g_free(uc);
        return CMD_ERR(c, EBUSY, "CREATE_UC: UAR page %u already in use", h);
    }
    uc->handle = h;
    rsp->create_uc_resp.ctx_handle = h;
    trace_pvrdma_create_uc(h);
    return 0;
}

static void uc_free(PvrdmaCore *c, PvrdmaUC *uc)
{
    pvrdma_table_remove(&c->uc, uc->handle);
    g_free(uc);
}

static int cmd_destroy_uc(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                          union pvrdma_cmd_resp *rsp)
{
    uint32_t h = req->destroy_uc.ctx_handle;
    PvrdmaUC *uc = pvrdma_table_get(&c->uc, h);

    if (!uc) {
        return CMD_ERR(c, EINVAL, "DESTROY_UC: bad handle %u", h);
    }
    if (uc->refs) {
        return CMD_ERR(c, EBUSY, "DESTROY_UC: context %u still has %u objects",
                       h, uc->refs);
    }
    uc_free(c, uc);
    trace_pvrdma_destroy_uc(h);
    return 0;
}

static int cmd_create_pd(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                         union pvrdma_cmd_resp *rsp)
{
    uint32_t ctx = req->create_pd.ctx_handle;
    PvrdmaPD *pd;
    uint32_t h;
    int err;

    if (!ctx_valid(c, ctx)) {
        return CMD_ERR(c, EINVAL, "CREATE_PD: bad context %u", ctx);
    }
    pd = g_new0(PvrdmaPD, 1);
    h = pvrdma_table_alloc(&c->pd, pd);
    if (h == UINT32_MAX) {
        g_free(pd);
        return CMD_ERR(c, ENOMEM, "CREATE_PD: out of PDs");
    }
    pd->handle = h;
    pd->ctx = ctx;
    err = pvrdma_owner_pd_create(c, pd);
    if (err) {
        pvrdma_table_remove(&c->pd, h);
        g_free(pd);
        return CMD_ERR(c, -err, "CREATE_PD: host device: %s",
                       strerror(-err));
    }
    ctx_ref(c, ctx, 1);
    rsp->create_pd_resp.pd_handle = h;
    trace_pvrdma_create_pd(h, ctx);
    return 0;
}

static void pd_free(PvrdmaCore *c, PvrdmaPD *pd)
{
    pvrdma_owner_pd_destroy(c, pd);
    ctx_ref(c, pd->ctx, -1);
    pvrdma_table_remove(&c->pd, pd->handle);
    g_free(pd);
}

static int cmd_destroy_pd(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                          union pvrdma_cmd_resp *rsp)
{
    uint32_t h = req->destroy_pd.pd_handle;
    PvrdmaPD *pd = pvrdma_table_get(&c->pd, h);

    if (!pd) {
        return CMD_ERR(c, EINVAL, "DESTROY_PD: bad handle %u", h);
    }
    if (pd->refs) {
        return CMD_ERR(c, EBUSY, "DESTROY_PD: PD %u still has %u objects",
                       h, pd->refs);
    }
    pd_free(c, pd);
    trace_pvrdma_destroy_pd(h);
    return 0;
}

static void pd_ref(PvrdmaCore *c, uint32_t pd, int d)
{
    PvrdmaPD *p = pvrdma_table_get(&c->pd, pd);

    if (p) {
        p->refs += d;
    }
}

static int cmd_create_mr(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                         union pvrdma_cmd_resp *rsp)
{
    const struct pvrdma_cmd_create_mr *m = &req->create_mr;
    uint32_t access = m->access_flags & ~PVRDMA_ACCESS_OPTIONAL;
    PvrdmaMR *mr;
    uint64_t *pages = NULL;
    uint32_t h;
    int err;

    if (!pvrdma_table_get(&c->pd, m->pd_handle)) {
        return CMD_ERR(c, EINVAL, "CREATE_MR: bad PD %u", m->pd_handle);
    }
    if (access & ~PVRDMA_ACCESS_FLAGS_ALL) {
        return CMD_ERR(c, EINVAL, "CREATE_MR: unknown access flags 0x%x",
                       access);
    }
    if ((access & (PVRDMA_ACCESS_REMOTE_WRITE | PVRDMA_ACCESS_REMOTE_ATOMIC)) &&
        !(access & PVRDMA_ACCESS_LOCAL_WRITE)) {
        return CMD_ERR(c, EINVAL, "CREATE_MR: remote write without local write");
    }
    if (m->flags & ~(PVRDMA_MR_FLAG_DMA | PVRDMA_MR_FLAG_FRMR) ||
        m->flags == (PVRDMA_MR_FLAG_DMA | PVRDMA_MR_FLAG_FRMR)) {
        return CMD_ERR(c, EINVAL, "CREATE_MR: bad flags 0x%x", m->flags);
    }
    mr = g_new0(PvrdmaMR, 1);
    mr->pd = m->pd_handle;
    mr->access = access;
    if (m->flags & PVRDMA_MR_FLAG_DMA) {
        mr->kind = PVRDMA_MR_DMA;
        mr->valid = true;
    } else if (m->flags & PVRDMA_MR_FLAG_FRMR) {
        if (c->owner) {
            g_free(mr);
            return CMD_ERR(c, EOPNOTSUPP,
                           "CREATE_MR: no fast registration with a host HCA");
        }
        if (m->nchunks < 1 || m->nchunks > PVRDMA_MAX_FAST_REG_PAGES) {
            g_free(mr);
            return CMD_ERR(c, EINVAL, "CREATE_MR: FRMR with %u pages",
                           m->nchunks);
        }
        mr->kind = PVRDMA_MR_FRMR;
        mr->max_pages = m->nchunks;
        mr->access = 0;
        mr->valid = false;
    } else {
        uint64_t first = m->start & ~(uint64_t)(PVRDMA_PAGE_SIZE - 1);
        uint64_t need;

        if (m->length == 0 || m->length > c->lim.max_mr_size ||
            m->start + m->length < m->start) {
            g_free(mr);
            return CMD_ERR(c, EINVAL, "CREATE_MR: bad length 0x%" PRIx64,
                           m->length);
        }
        need = (m->start + m->length - first + PVRDMA_PAGE_SIZE - 1) /
               PVRDMA_PAGE_SIZE;
        if (m->nchunks != need) {
            g_free(mr);
            return CMD_ERR(c, EINVAL, "CREATE_MR: %u pages given, %" PRIu64
                           " needed", m->nchunks, need);
        }
        if (!pvrdma_pdir_read(c, m->pdir_dma, m->nchunks, &pages) ||
            !pvrdma_map_pages(c, &mr->map, pages, m->nchunks,
                              PVRDMA_PAGE_SIZE)) {
            g_free(pages);
            g_free(mr);
            return CMD_ERR(c, EFAULT, "CREATE_MR: page list unusable");
        }
        g_free(pages);
        mr->kind = PVRDMA_MR_USER;
        mr->iova = m->start;
        mr->length = m->length;
        mr->base = first;
        mr->valid = true;
    }
    h = pvrdma_table_alloc(&c->mr, mr);
    if (h == UINT32_MAX) {
        pvrdma_map_release(c, &mr->map);
        g_free(mr);
        return CMD_ERR(c, ENOMEM, "CREATE_MR: out of MRs");
    }
    mr->handle = h;
    mr->key = h << 8;
    rsp->create_mr_resp.lkey = mr->key;
    rsp->create_mr_resp.rkey = mr->key;
    err = pvrdma_owner_mr_create(c, mr, &rsp->create_mr_resp.lkey,
                                 &rsp->create_mr_resp.rkey);
    if (err) {
        pvrdma_table_remove(&c->mr, h);
        pvrdma_map_release(c, &mr->map);
        g_free(mr);
        return CMD_ERR(c, -err, "CREATE_MR: host device: %s",
                       strerror(-err));
    }
    mr->key = rsp->create_mr_resp.lkey;
    pd_ref(c, mr->pd, 1);
    rsp->create_mr_resp.mr_handle = h;
    trace_pvrdma_create_mr(h, mr->kind, mr->pd, mr->iova, mr->length);
    return 0;
}

void pvrdma_mr_free(PvrdmaCore *c, PvrdmaMR *mr)
{
    pvrdma_owner_mr_destroy(c, mr);
    pvrdma_map_release(c, &mr->map);
    pd_ref(c, mr->pd, -1);
    pvrdma_table_remove(&c->mr, mr->handle);
    g_free(mr);
}

static int cmd_destroy_mr(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                          union pvrdma_cmd_resp *rsp)
{
    uint32_t h = req->destroy_mr.mr_handle;
    PvrdmaMR *mr = pvrdma_table_get(&c->mr, h);

    if (!mr) {
        return CMD_ERR(c, EINVAL, "DESTROY_MR: bad handle %u", h);
    }
    pvrdma_mr_free(c, mr);
    trace_pvrdma_destroy_mr(h);
    return 0;
}

static int cmd_create_cq(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                         union pvrdma_cmd_resp *rsp)
{
    const struct pvrdma_cmd_create_cq *m = &req->create_cq;
    uint64_t *pages;
    PvrdmaCQ *cq;
    uint32_t h;
    int err;

    if (!ctx_valid(c, m->ctx_handle)) {
        return CMD_ERR(c, EINVAL, "CREATE_CQ: bad context %u", m->ctx_handle);
    }
    if (!pvrdma_is_pow2(m->cqe) || m->cqe > c->lim.max_cqe) {
        return CMD_ERR(c, EINVAL, "CREATE_CQ: bad cqe count %u", m->cqe);
    }
    /* one ring-state page plus the entries, nothing more */
    if (m->nchunks < 2 ||
        m->nchunks > 1 + (m->cqe * sizeof(struct pvrdma_cqe) +
                          PVRDMA_PAGE_SIZE - 1) / PVRDMA_PAGE_SIZE + 1) {
        return CMD_ERR(c, EINVAL, "CREATE_CQ: %u pages for %u entries",
                       m->nchunks, m->cqe);
    }
    if (!pvrdma_pdir_read(c, m->pdir_dma, m->nchunks, &pages)) {
        return CMD_ERR(c, EFAULT, "CREATE_CQ: page directory unusable");
    }
    cq = g_new0(PvrdmaCQ, 1);
    if (!pvrdma_ring_init(c, &cq->ring, "cq", pages, m->nchunks, 1,
                          offsetof(struct pvrdma_ring_state, rx), m->cqe,
                          sizeof(struct pvrdma_cqe))) {
        g_free(pages);
        g_free(cq);
        return CMD_ERR(c, EINVAL, "CREATE_CQ: ring unusable");
    }
    g_free(pages);
    h = pvrdma_table_alloc(&c->cq, cq);
    if (h == UINT32_MAX) {
        pvrdma_ring_free(c, &cq->ring);
        g_free(cq);
        return CMD_ERR(c, ENOMEM, "CREATE_CQ: out of CQs");
    }
    cq->handle = h;
    cq->ctx = m->ctx_handle;
    err = pvrdma_owner_cq_create(c, cq, m->cqe);
    if (err) {
        pvrdma_table_remove(&c->cq, h);
        pvrdma_ring_free(c, &cq->ring);
        g_free(cq);
        return CMD_ERR(c, -err, "CREATE_CQ: host device: %s",
                       strerror(-err));
    }
    ctx_ref(c, cq->ctx, 1);
    rsp->create_cq_resp.cq_handle = h;
    rsp->create_cq_resp.cqe = m->cqe;
    trace_pvrdma_create_cq(h, m->cqe, m->nchunks);
    return 0;
}

bool pvrdma_cq_cqe_fits(PvrdmaCore *c, const PvrdmaCQ *cq, uint32_t cqe)
{
    return pvrdma_is_pow2(cqe) && cqe <= c->lim.max_cqe &&
           (uint64_t)cqe * sizeof(struct pvrdma_cqe) <=
           (uint64_t)(cq->ring.npages - 1) * PVRDMA_PAGE_SIZE;
}

void pvrdma_cq_set_cqe(PvrdmaCQ *cq, uint32_t cqe)
{
    /* a power of two: indices in [0, 2N), N slots (pvrdma_ring_init) */
    cq->ring.nelems = cqe;
    cq->ring.period = 2 * cqe;
    cq->ring.slots = cqe;
    cq->ring.priv = 0;
}

static int cmd_resize_cq(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                         union pvrdma_cmd_resp *rsp)
{
    const struct pvrdma_cmd_resize_cq *m = &req->resize_cq;
    PvrdmaCQ *cq = pvrdma_table_get(&c->cq, m->cq_handle);
    uint32_t cons;

    if (!cq) {
        return CMD_ERR(c, EINVAL, "RESIZE_CQ: bad handle %u", m->cq_handle);
    }
    if (cq->hw) {
        return CMD_ERR(c, EOPNOTSUPP, "RESIZE_CQ: not with a host HCA");
    }
    if (!pvrdma_cq_cqe_fits(c, cq, m->cqe)) {
        return CMD_ERR(c, EINVAL, "RESIZE_CQ: %u entries do not fit", m->cqe);
    }
    /* The ring keeps its pages: only an empty ring can change geometry. */
    if (!pvrdma_ring_guest_cons(&cq->ring, &cons) || cons != cq->ring.priv) {
        return CMD_ERR(c, EBUSY, "RESIZE_CQ: CQ %u not empty", m->cq_handle);
    }
    pvrdma_cq_set_cqe(cq, m->cqe);
    pvrdma_atomic_store(&cq->ring.state->cons_head, 0);
    pvrdma_ring_publish_prod(&cq->ring);
    rsp->resize_cq_resp.cqe = m->cqe;
    trace_pvrdma_resize_cq(m->cq_handle, m->cqe);
    return 0;
}

static void cq_free(PvrdmaCore *c, PvrdmaCQ *cq)
{
    pvrdma_owner_cq_destroy(c, cq);
    ctx_ref(c, cq->ctx, -1);
    pvrdma_ring_free(c, &cq->ring);
    pvrdma_table_remove(&c->cq, cq->handle);
    g_free(cq);
}

static int cmd_destroy_cq(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                          union pvrdma_cmd_resp *rsp)
{
    uint32_t h = req->destroy_cq.cq_handle;
    PvrdmaCQ *cq = pvrdma_table_get(&c->cq, h);

    if (!cq) {
        return CMD_ERR(c, EINVAL, "DESTROY_CQ: bad handle %u", h);
    }
    if (cq->refs) {
        return CMD_ERR(c, EBUSY, "DESTROY_CQ: CQ %u used by %u QPs", h,
                       cq->refs);
    }
    cq_free(c, cq);
    trace_pvrdma_destroy_cq(h);
    return 0;
}

static uint32_t wqe_stride(size_t hdr, uint32_t nsge)
{
    uint32_t sz = hdr + nsge * sizeof(struct pvrdma_sge);
    uint32_t p = 1;

    while (p < sz) {
        p <<= 1;
    }
    return p;
}

static uint32_t pages_for(uint32_t n, uint32_t stride)
{
    return ((uint64_t)n * stride + PVRDMA_PAGE_SIZE - 1) / PVRDMA_PAGE_SIZE;
}

static int cmd_create_srq(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                          union pvrdma_cmd_resp *rsp)
{
    const struct pvrdma_cmd_create_srq *m = &req->create_srq;
    uint32_t max_wr = m->attrs.max_wr, max_sge = m->attrs.max_sge;
    uint64_t *pages;
    PvrdmaSRQ *srq;
    uint32_t h;
    int err;

    if (!c->lim.max_srq) {
        return CMD_ERR(c, EOPNOTSUPP, "CREATE_SRQ: SRQs disabled");
    }
    if (!pvrdma_table_get(&c->pd, m->pd_handle)) {
        return CMD_ERR(c, EINVAL, "CREATE_SRQ: bad PD %u", m->pd_handle);
    }
    if (m->srq_type != 0) {
        return CMD_ERR(c, EOPNOTSUPP, "CREATE_SRQ: type %u", m->srq_type);
    }
    if (!pvrdma_is_pow2(max_wr) || max_wr > c->lim.max_srq_wr ||
        max_sge < 1 || max_sge > c->lim.max_srq_sge ||
        m->attrs.srq_limit > max_wr) {
        return CMD_ERR(c, EINVAL, "CREATE_SRQ: bad attrs wr %u sge %u limit %u",
                       max_wr, max_sge, m->attrs.srq_limit);
    }
    /* rdma-core allocates the ring twice over; allow that, no more */
    if (m->nchunks < 2 ||
        m->nchunks > 2 + 2 * pages_for(max_wr, wqe_stride(
                         sizeof(struct pvrdma_rq_wqe_hdr), max_sge))) {
        return CMD_ERR(c, EINVAL, "CREATE_SRQ: %u pages", m->nchunks);
    }
    if (!pvrdma_pdir_read(c, m->pdir_dma, m->nchunks, &pages)) {
        return CMD_ERR(c, EFAULT, "CREATE_SRQ: page directory unusable");
    }
    srq = g_new0(PvrdmaSRQ, 1);
    if (!pvrdma_ring_init(c, &srq->ring, "srq", pages, m->nchunks, 1,
                          offsetof(struct pvrdma_ring_state, rx), max_wr,
                          wqe_stride(sizeof(struct pvrdma_rq_wqe_hdr),
                                     max_sge))) {
        g_free(pages);
        g_free(srq);
        return CMD_ERR(c, EINVAL, "CREATE_SRQ: ring unusable");
    }
    g_free(pages);
    h = pvrdma_table_alloc(&c->srq, srq);
    if (h == UINT32_MAX) {
        pvrdma_ring_free(c, &srq->ring);
        g_free(srq);
        return CMD_ERR(c, ENOMEM, "CREATE_SRQ: out of SRQs");
    }
    srq->handle = h;
    srq->pd = m->pd_handle;
    srq->max_wr = max_wr;
    srq->max_sge = max_sge;
    srq->limit = m->attrs.srq_limit;
    err = pvrdma_owner_srq_create(c, srq);
    if (err) {
        pvrdma_table_remove(&c->srq, h);
        pvrdma_ring_free(c, &srq->ring);
        g_free(srq);
        return CMD_ERR(c, -err, "CREATE_SRQ: host device: %s",
                       strerror(-err));
    }
    pd_ref(c, srq->pd, 1);
    rsp->create_srq_resp.srqn = h;
    trace_pvrdma_create_srq(h, max_wr, max_sge);
    return 0;
}

static int cmd_modify_srq(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                          union pvrdma_cmd_resp *rsp)
{
    const struct pvrdma_cmd_modify_srq *m = &req->modify_srq;
    PvrdmaSRQ *srq = pvrdma_table_get(&c->srq, m->srq_handle);

    if (!srq) {
        return CMD_ERR(c, EINVAL, "MODIFY_SRQ: bad handle %u", m->srq_handle);
    }
    if (m->attr_mask & ~PVRDMA_SRQ_LIMIT) {
        /* the ring has fixed pages: resizing is not supported */
        return CMD_ERR(c, EINVAL, "MODIFY_SRQ: unsupported mask 0x%x",
                       m->attr_mask);
    }
    if (m->attr_mask & PVRDMA_SRQ_LIMIT) {
        if (m->attrs.srq_limit > srq->max_wr) {
            return CMD_ERR(c, EINVAL, "MODIFY_SRQ: limit %u > %u",
                           m->attrs.srq_limit, srq->max_wr);
        }
        int err = pvrdma_owner_srq_modify(c, srq, m->attr_mask,
                                          m->attrs.srq_limit);

        if (err) {
            return CMD_ERR(c, -err, "MODIFY_SRQ: host device: %s",
                           strerror(-err));
        }
        srq->limit = m->attrs.srq_limit;
    }
    trace_pvrdma_modify_srq(m->srq_handle, srq->limit);
    return 0;
}

static int cmd_query_srq(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                         union pvrdma_cmd_resp *rsp)
{
    PvrdmaSRQ *srq = pvrdma_table_get(&c->srq, req->query_srq.srq_handle);

    if (!srq) {
        return CMD_ERR(c, EINVAL, "QUERY_SRQ: bad handle %u",
                       req->query_srq.srq_handle);
    }
    rsp->query_srq_resp.attrs.max_wr = srq->max_wr;
    rsp->query_srq_resp.attrs.max_sge = srq->max_sge;
    rsp->query_srq_resp.attrs.srq_limit = srq->limit;
    return 0;
}

static void srq_free(PvrdmaCore *c, PvrdmaSRQ *srq)
{
    pvrdma_owner_srq_destroy(c, srq);
    pd_ref(c, srq->pd, -1);
    pvrdma_ring_free(c, &srq->ring);
    pvrdma_table_remove(&c->srq, srq->handle);
    g_free(srq);
}

static int cmd_destroy_srq(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                           union pvrdma_cmd_resp *rsp)
{
    uint32_t h = req->destroy_srq.srq_handle;
    PvrdmaSRQ *srq = pvrdma_table_get(&c->srq, h);

    if (!srq) {
        return CMD_ERR(c, EINVAL, "DESTROY_SRQ: bad handle %u", h);
    }
    if (srq->refs) {
        return CMD_ERR(c, EBUSY, "DESTROY_SRQ: SRQ %u used by %u QPs", h,
                       srq->refs);
    }
    srq_free(c, srq);
    trace_pvrdma_destroy_srq(h);
    return 0;
}

static int cmd_create_qp(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                         union pvrdma_cmd_resp *rsp)
{
    const struct pvrdma_cmd_create_qp *m = &req->create_qp;
    PvrdmaCQ *scq = pvrdma_table_get(&c->cq, m->send_cq_handle);
    PvrdmaCQ *rcq = pvrdma_table_get(&c->cq, m->recv_cq_handle);
    PvrdmaSRQ *srq = NULL;
    uint32_t ctx = pvrdma_ctx_of_pd(c, m->pd_handle);
    uint32_t sq_stride, rq_stride = 0, rq_pages, h;
    uint64_t *pages;
    PvrdmaQP *qp;
    int err;

    if (ctx == UINT32_MAX) {
        return CMD_ERR(c, EINVAL, "CREATE_QP: bad PD %u", m->pd_handle);
    }
    if (!scq || !rcq || scq->ctx != ctx || rcq->ctx != ctx) {
        return CMD_ERR(c, EINVAL, "CREATE_QP: bad CQs %u/%u",
                       m->send_cq_handle, m->recv_cq_handle);
    }
    if (m->qp_type != PVRDMA_QPT_RC && m->qp_type != PVRDMA_QPT_UD &&
        m->qp_type != PVRDMA_QPT_GSI) {
        return CMD_ERR(c, EOPNOTSUPP, "CREATE_QP: type %u", m->qp_type);
    }
    if (m->qp_type == PVRDMA_QPT_GSI && pvrdma_qp_get(c, PVRDMA_GSI_QPN)) {
        return CMD_ERR(c, EBUSY, "CREATE_QP: GSI QP exists");
    }
    if (m->is_srq > 1) {
        return CMD_ERR(c, EINVAL, "CREATE_QP: is_srq %u", m->is_srq);
    }
    if (m->is_srq) {
        srq = pvrdma_table_get(&c->srq, m->srq_handle);
        if (!srq || srq->pd != m->pd_handle) {
            return CMD_ERR(c, EINVAL, "CREATE_QP: bad SRQ %u", m->srq_handle);
        }
    }
    if (!pvrdma_is_pow2(m->max_send_wr) || m->max_send_wr > c->lim.max_qp_wr ||
        m->max_send_sge < 1 || m->max_send_sge > c->lim.max_sge) {
        return CMD_ERR(c, EINVAL, "CREATE_QP: bad send queue %u x %u sge",
                       m->max_send_wr, m->max_send_sge);
    }
    if (!m->is_srq &&
        (!pvrdma_is_pow2(m->max_recv_wr) || m->max_recv_wr > c->lim.max_qp_wr ||
         m->max_recv_sge < 1 || m->max_recv_sge > c->lim.max_sge)) {
        return CMD_ERR(c, EINVAL, "CREATE_QP: bad receive queue %u x %u sge",
                       m->max_recv_wr, m->max_recv_sge);
    }
    if (m->max_inline_data) {
        return CMD_ERR(c, EINVAL, "CREATE_QP: inline data not supported");
    }
    /* page 0 ring state | send_chunks SQ pages | the rest RQ pages */
    if (m->send_chunks < 1 || m->total_chunks <= m->send_chunks) {
        return CMD_ERR(c, EINVAL, "CREATE_QP: bad chunks %u/%u",
                       m->send_chunks, m->total_chunks);
    }
    rq_pages = m->total_chunks - 1 - m->send_chunks;
    sq_stride = wqe_stride(sizeof(struct pvrdma_sq_wqe_hdr), m->max_send_sge);
    if (!m->is_srq) {
        rq_stride = wqe_stride(sizeof(struct pvrdma_rq_wqe_hdr),
                               m->max_recv_sge);
    }
    /* no more pages than the rings need (plus one of slack) */
    if (m->send_chunks > pages_for(m->max_send_wr, sq_stride) + 1 ||
        (!m->is_srq && rq_pages > pages_for(m->max_recv_wr, rq_stride) + 1)) {
        return CMD_ERR(c, EINVAL, "CREATE_QP: %u/%u pages exceed the rings",
                       m->send_chunks, rq_pages);
    }
    if (m->is_srq ? rq_pages != 0 : rq_pages == 0) {
        return CMD_ERR(c, EINVAL, "CREATE_QP: %u receive pages with is_srq %u",
                       rq_pages, m->is_srq);
    }
    if (!pvrdma_pdir_read(c, m->pdir_dma, m->total_chunks, &pages)) {
        return CMD_ERR(c, EFAULT, "CREATE_QP: page directory unusable");
    }
    qp = g_new0(PvrdmaQP, 1);
    if (!pvrdma_ring_init(c, &qp->sq, "sq", pages, 1 + m->send_chunks, 1, 0,
                          m->max_send_wr, sq_stride) ||
        (!m->is_srq &&
         !pvrdma_ring_init(c, &qp->rq, "rq", pages, m->total_chunks,
                           1 + m->send_chunks, 0, m->max_recv_wr, rq_stride))) {
        pvrdma_ring_free(c, &qp->sq);
        g_free(pages);
        g_free(qp);
        return CMD_ERR(c, EINVAL, "CREATE_QP: rings unusable");
    }
    if (!m->is_srq) {
        /* the RQ's ring state lives in page 0, after the SQ's */
        qp->rq.state = (struct pvrdma_ring *)qp->sq.page[0] + 1;
    }
    g_free(pages);
    if (m->qp_type == PVRDMA_QPT_GSI) {
        /* QP 1: a handle the table reserves, free (checked above) */
        h = pvrdma_table_insert(&c->qp, PVRDMA_GSI_QPN, qp) ? PVRDMA_GSI_QPN :
                                                             UINT32_MAX;
    } else {
        h = pvrdma_table_alloc(&c->qp, qp);
    }
    if (h == UINT32_MAX) {
        pvrdma_ring_free(c, &qp->sq);
        pvrdma_ring_free(c, &qp->rq);
        g_free(qp);
        return CMD_ERR(c, ENOMEM, "CREATE_QP: out of QPs");
    }
    qp->handle = qp->qpn = h;
    qp->slot = g_new0(PvrdmaSendSlot, m->max_send_wr);
    qp->type = m->qp_type;
    qp->state = PVRDMA_QPS_RESET;
    qp->sq_sig_all = m->sq_sig_all;
    qp->is_srq = m->is_srq;
    qp->pd = m->pd_handle;
    qp->scq = m->send_cq_handle;
    qp->rcq = m->recv_cq_handle;
    qp->srq = m->is_srq ? m->srq_handle : 0;
    qp->max_send_wr = m->max_send_wr;
    qp->max_send_sge = m->max_send_sge;
    qp->max_recv_wr = m->is_srq ? 0 : m->max_recv_wr;
    qp->max_recv_sge = m->is_srq ? 0 : m->max_recv_sge;
    qp->attr.path_mtu = PVRDMA_MTU_1024;
    qp->attr.port_num = 1;
    qp->attr.cap = (struct pvrdma_qp_cap) {
        qp->max_send_wr, qp->max_recv_wr, qp->max_send_sge,
        qp->max_recv_sge, 0, 0
    };
    /* the GSI QP stays with the device: the host's QP1 is the kernel's */
    err = pvrdma_owner_qp_create(c, qp);
    if (err) {
        pvrdma_table_remove(&c->qp, h);
        pvrdma_ring_free(c, &qp->sq);
        pvrdma_ring_free(c, &qp->rq);
        g_free(qp->slot);
        g_free(qp);
        return CMD_ERR(c, -err, "CREATE_QP: host device: %s",
                       strerror(-err));
    }
    scq->refs++;
    rcq->refs++;
    if (srq) {
        srq->refs++;
    }
    pd_ref(c, qp->pd, 1);

    if (c->version >= PVRDMA_QPHANDLE_VERSION) {
        struct pvrdma_cmd_create_qp_resp_v2 *r = &rsp->create_qp_resp_v2;

        r->qpn = qp->qpn;
        r->qp_handle = qp->handle;
        r->max_send_wr = qp->max_send_wr;
        r->max_recv_wr = qp->max_recv_wr;
        r->max_send_sge = qp->max_send_sge;
        r->max_recv_sge = qp->max_recv_sge;
        r->max_inline_data = 0;
    } else {
        struct pvrdma_cmd_create_qp_resp *r = &rsp->create_qp_resp;

        r->qpn = qp->qpn;
        r->max_send_wr = qp->max_send_wr;
        r->max_recv_wr = qp->max_recv_wr;
        r->max_send_sge = qp->max_send_sge;
        r->max_recv_sge = qp->max_recv_sge;
        r->max_inline_data = 0;
    }
    trace_pvrdma_create_qp(h, qp->type, qp->max_send_wr, qp->max_recv_wr,
                           qp->is_srq);
    return 0;
}

void pvrdma_qp_free(PvrdmaCore *c, PvrdmaQP *qp)
{
    PvrdmaCQ *scq = pvrdma_table_get(&c->cq, qp->scq);
    PvrdmaCQ *rcq = pvrdma_table_get(&c->cq, qp->rcq);
    PvrdmaSRQ *srq = qp->is_srq ? pvrdma_table_get(&c->srq, qp->srq) : NULL;

    if (scq) {
        scq->refs--;
    }
    if (rcq) {
        rcq->refs--;
    }
    if (srq) {
        srq->refs--;
    }
    pd_ref(c, qp->pd, -1);
    if (qp->queued) {
        g_queue_remove(&c->run, GUINT_TO_POINTER(qp->handle));
    }
    pvrdma_table_remove(&c->qp, qp->handle);
    if (!pvrdma_qp_queue_path(qp)) {
        pvrdma_qp_gone(c, qp->qpn);
    }
    pvrdma_path_detach(c, qp);
    pvrdma_owner_qp_destroy(c, qp);
    pvrdma_qp_set_rnr_wait(c, qp, false);
    pvrdma_qp_hold(c, qp, 0);
    pvrdma_ring_free(c, &qp->sq);
    pvrdma_ring_free(c, &qp->rq);
    g_free(qp->slot);
    g_free(qp);
}

static int cmd_modify_qp(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                         union pvrdma_cmd_resp *rsp)
{
    const struct pvrdma_cmd_modify_qp *m = &req->modify_qp;
    PvrdmaQP *qp = pvrdma_qp_get(c, m->qp_handle);

    if (!qp) {
        return CMD_ERR(c, EINVAL, "MODIFY_QP: bad handle %u", m->qp_handle);
    }
    return pvrdma_qp_modify(c, qp, m->attr_mask, &m->attrs);
}

static int cmd_query_qp(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                        union pvrdma_cmd_resp *rsp)
{
    PvrdmaQP *qp = pvrdma_qp_get(c, req->query_qp.qp_handle);

    if (!qp) {
        return CMD_ERR(c, EINVAL, "QUERY_QP: bad handle %u",
                       req->query_qp.qp_handle);
    }
    if (pvrdma_qp_queue_path(qp)) {
        int st = qp->path->ops->qp_state(qp->path, qp);

        if (st >= 0) {
            qp->state = st;
        }
    }
    rsp->query_qp_resp.attrs = qp->attr;
    rsp->query_qp_resp.attrs.qp_state = qp->state;
    rsp->query_qp_resp.attrs.cur_qp_state = qp->state;
    return 0;
}

static int cmd_destroy_qp(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                          union pvrdma_cmd_resp *rsp)
{
    uint32_t h = req->destroy_qp.qp_handle;
    PvrdmaQP *qp = pvrdma_qp_get(c, h);

    if (!qp) {
        return CMD_ERR(c, EINVAL, "DESTROY_QP: bad handle %u", h);
    }
    pvrdma_qp_fence(c, qp->qpn);
    rsp->destroy_qp_resp.events_reported = qp->events;
    pvrdma_qp_free(c, qp);
    trace_pvrdma_destroy_qp(h);
    return 0;
}

static int cmd_create_bind(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                           union pvrdma_cmd_resp *rsp)
{
    const struct pvrdma_cmd_create_bind *m = &req->create_bind;

    if (m->index >= c->lim.gid_tbl_len) {
        return CMD_ERR(c, EINVAL, "CREATE_BIND: index %u >= %u", m->index,
                       c->lim.gid_tbl_len);
    }
    if (m->gid_type != PVRDMA_GID_TYPE_FLAG_ROCE_V1 &&
        m->gid_type != PVRDMA_GID_TYPE_FLAG_ROCE_V2) {
        return CMD_ERR(c, EINVAL, "CREATE_BIND: gid type %u", m->gid_type);
    }
    memcpy(c->gid[m->index].gid.raw, m->new_gid, 16);
    c->gid[m->index].type = m->gid_type;
    trace_pvrdma_create_bind(m->index, m->gid_type);
    pvrdma_gids_changed(c);
    return 0;
}

static int cmd_destroy_bind(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                            union pvrdma_cmd_resp *rsp)
{
    const struct pvrdma_cmd_destroy_bind *m = &req->destroy_bind;

    if (m->index >= c->lim.gid_tbl_len) {
        return CMD_ERR(c, EINVAL, "DESTROY_BIND: index %u >= %u", m->index,
                       c->lim.gid_tbl_len);
    }
    if (!c->gid[m->index].type ||
        memcmp(c->gid[m->index].gid.raw, m->dest_gid, 16)) {
        return CMD_ERR(c, EINVAL, "DESTROY_BIND: index %u holds another GID",
                       m->index);
    }
    memset(&c->gid[m->index], 0, sizeof(c->gid[m->index]));
    trace_pvrdma_destroy_bind(m->index);
    pvrdma_gids_changed(c);
    return 0;
}

static const struct {
    CmdHandler fn;
    const char *name;
} cmd_table[PVRDMA_CMD_MAX] = {
    [PVRDMA_CMD_QUERY_PORT] = { cmd_query_port, "QUERY_PORT" },
    [PVRDMA_CMD_QUERY_PKEY] = { cmd_query_pkey, "QUERY_PKEY" },
    [PVRDMA_CMD_CREATE_PD] = { cmd_create_pd, "CREATE_PD" },
    [PVRDMA_CMD_DESTROY_PD] = { cmd_destroy_pd, "DESTROY_PD" },
    [PVRDMA_CMD_CREATE_MR] = { cmd_create_mr, "CREATE_MR" },
    [PVRDMA_CMD_DESTROY_MR] = { cmd_destroy_mr, "DESTROY_MR" },
    [PVRDMA_CMD_CREATE_CQ] = { cmd_create_cq, "CREATE_CQ" },
    [PVRDMA_CMD_RESIZE_CQ] = { cmd_resize_cq, "RESIZE_CQ" },
    [PVRDMA_CMD_DESTROY_CQ] = { cmd_destroy_cq, "DESTROY_CQ" },
    [PVRDMA_CMD_CREATE_QP] = { cmd_create_qp, "CREATE_QP" },
    [PVRDMA_CMD_MODIFY_QP] = { cmd_modify_qp, "MODIFY_QP" },
    [PVRDMA_CMD_QUERY_QP] = { cmd_query_qp, "QUERY_QP" },
    [PVRDMA_CMD_DESTROY_QP] = { cmd_destroy_qp, "DESTROY_QP" },
    [PVRDMA_CMD_CREATE_UC] = { cmd_create_uc, "CREATE_UC" },
    [PVRDMA_CMD_DESTROY_UC] = { cmd_destroy_uc, "DESTROY_UC" },
    [PVRDMA_CMD_CREATE_BIND] = { cmd_create_bind, "CREATE_BIND" },
    [PVRDMA_CMD_DESTROY_BIND] = { cmd_destroy_bind, "DESTROY_BIND" },
    [PVRDMA_CMD_CREATE_SRQ] = { cmd_create_srq, "CREATE_SRQ" },
    [PVRDMA_CMD_MODIFY_SRQ] = { cmd_modify_srq, "MODIFY_SRQ" },
    [PVRDMA_CMD_QUERY_SRQ] = { cmd_query_srq, "QUERY_SRQ" },
    [PVRDMA_CMD_DESTROY_SRQ] = { cmd_destroy_srq, "DESTROY_SRQ" },
};

int pvrdma_cmd_replay(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                      union pvrdma_cmd_resp *rsp)
{
    uint32_t cmd = req->hdr.cmd;

    memset(rsp, 0, sizeof(*rsp));
    if (cmd >= PVRDMA_CMD_MAX || !cmd_table[cmd].fn) {
        return EINVAL;
    }
    return cmd_table[cmd].fn(c, req, rsp);
}

/*
 * REQUEST: copy the command out of guest memory once, run it, write the
 * response, set ERR and raise the response vector.  Commands execute
 * synchronously, so there is never a second one in flight.
 */
void pvrdma_exec_command(PvrdmaCore *c)
{
    union pvrdma_cmd_req req;
    union pvrdma_cmd_resp rsp;
    uint32_t cmd;
    int err;

    c->commands++;
    if (!c->active) {
        PVRDMA_GUEST_ERR(c, "command before activation");
        c->err = EINVAL;
        return;
    }
    if (!c->ops->dma_read(c->opaque, c->cmd_gpa, &req, sizeof(req))) {
        PVRDMA_GUEST_ERR(c, "command slot 0x%" PRIx64 " unreadable",
                         c->cmd_gpa);
        c->err = EFAULT;
        return;
    }
    memset(&rsp, 0, sizeof(rsp));
    cmd = req.hdr.cmd;
    rsp.hdr.response = req.hdr.response;
    if (cmd >= PVRDMA_CMD_MAX || !cmd_table[cmd].fn) {
        PVRDMA_GUEST_ERR(c, "unknown command %u", cmd);
        err = EINVAL;
    } else {
        rsp.hdr.ack = PVRDMA_CMD_RESP(cmd);
        err = cmd_table[cmd].fn(c, &req, &rsp);
        trace_pvrdma_cmd(cmd_table[cmd].name, err);
    }
    if (err) {
        /* keep the ack and identity, drop any partial payload */
        uint64_t response = rsp.hdr.response;
        uint32_t ack = rsp.hdr.ack;

        memset(&rsp, 0, sizeof(rsp));
        rsp.hdr.response = response;
        rsp.hdr.ack = ack;
        rsp.hdr.err = err;
    }
    c->err = err;
    if (!c->ops->dma_write(c->opaque, c->resp_gpa, &rsp, sizeof(rsp))) {
        PVRDMA_GUEST_ERR(c, "response slot 0x%" PRIx64 " unwritable",
                         c->resp_gpa);
        c->err = EFAULT;
        return;
    }
    pvrdma_raise(c, PVRDMA_INTR_VECTOR_RESPONSE);
}

/*
 * Free every resource: driver reset, PCI reset, unrealize.  Dependants go
 * first, so each free releases its references on objects still alive.
 */
void pvrdma_destroy_all(PvrdmaCore *c)
{
    uint32_t h;

    g_queue_clear(&c->run);
    for (h = 0; h < c->qp.size; h++) {
        PvrdmaQP *qp = c->qp.slot[h];

        if (qp) {
            qp->queued = false;
            pvrdma_qp_free(c, qp);
        }
    }
    for (h = 0; h < c->srq.size; h++) {
        if (c->srq.slot[h]) {
            srq_free(c, c->srq.slot[h]);
        }
    }
    for (h = 0; h < c->mr.size; h++) {
        if (c->mr.slot[h]) {
            pvrdma_mr_free(c, c->mr.slot[h]);
        }
    }
    for (h = 0; h < c->cq.size; h++) {
        if (c->cq.slot[h]) {
            cq_free(c, c->cq.slot[h]);
        }
    }
    for (h = 0; h < c->pd.size; h++) {
        if (c->pd.slot[h]) {
            pd_free(c, c->pd.slot[h]);
        }
    }
    for (h = 0; h < c->uc.size; h++) {
        if (c->uc.slot[h]) {
            uc_free(c, c->uc.slot[h]);
        }
    }
}
