/*
 * pvrdma: loading the device's state (migration, snapshots) from its image
 * (include/hw/rdma/pvrdma_mig.h).  The save and what may move:
 * pvrdma_mig.c; the image as a stream: the QOM glue's VMState, or
 * pvrdma_mig_blob.c.
 *
 * Loaded by replay: the core is reset, then each object is created again
 * through the command handlers the guest uses (pvrdma_cmd_replay), with
 * its page list taken from the stream instead of a guest page directory,
 * and moved to its saved handle; a QP walks RESET -> INIT -> RTR -> RTS
 * (-> SQD) through pvrdma_qp_modify.  So a stream can do no more than a
 * guest could: every size, index and handle passes the same checks, every
 * page is mapped through the same accessor.  Whatever the replay leaves to
 * check (ring indices, handles, slots) is checked here.  Any failure
 * resets the core and names the record.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_mig.h"
#include "hw/rdma/pvrdma_transport_calls.h"
#include "pvrdma_int.h"

/*
 * The load's context: the core, the image, the first failure, and how far
 * the QPs have taken the image's send slots and transport records.
 */
typedef struct MigLoad {
    PvrdmaCore *c;
    const PvrdmaMigImage *m;
    char *err;
    int32_t slot_at, tp_at;
} MigLoad;

static bool G_GNUC_PRINTF(2, 3) fail(MigLoad *l, const char *fmt, ...)
{
    va_list ap;

    if (!l->err) {
        va_start(ap, fmt);
        l->err = g_strdup_vprintf(fmt, ap);
        va_end(ap);
    }
    return false;
}

/*
 * An object's run of n pages from page0 in the image's pool: NULL (and the
 * error set) unless it is inside the pool and 1 to max pages long.
 */
static const uint64_t *pages_of(MigLoad *l, uint32_t page0, uint32_t n,
                                uint32_t max, const char *what, uint32_t h)
{
    if (n == 0 || n > max) {
        fail(l, "%s %u: page list of %u pages", what, h, n);
        return NULL;
    }
    if (page0 > l->m->npages || n > l->m->npages - page0) {
        fail(l, "%s %u: pages %u+%u outside the %u saved", what, h, page0, n,
             l->m->npages);
        return NULL;
    }
    return l->m->pages + page0;
}

/* A device index of a ring: in [0, period). */
static bool ring_index(MigLoad *l, const PvrdmaRing *ring, uint32_t v,
                       const char *what, uint32_t h)
{
    if (v >= ring->period) {
        return fail(l, "%s %u: ring index %u out of range", what, h, v);
    }
    return true;
}

/*
 * Replay one create command with the page list from the image; then move
 * the new object from the handle the table gave to the saved one.
 */
static int replay(PvrdmaCore *c, union pvrdma_cmd_req *req,
                  union pvrdma_cmd_resp *rsp, const uint64_t *pages,
                  uint32_t npages)
{
    int err;

    if (!c->active) {
        /* the guest's commands need an active device */
        return CMD_ERR(c, EINVAL, "migration: objects for an inactive device");
    }
    c->restore_pages = pages;
    c->restore_npages = npages;
    err = pvrdma_cmd_replay(c, req, rsp);
    c->restore_pages = NULL;
    c->restore_npages = 0;
    return err;
}

/*
 * The object the replayed command created (handle 'from') moved to its
 * saved handle; NULL (and the error set) if that handle is taken or out of
 * range.
 */
static void *move_handle(MigLoad *l, PvrdmaTable *t, uint32_t from,
                         uint32_t to, const char *what)
{
    void *obj = pvrdma_table_get(t, from);

    if (from == to) {
        return obj;
    }
    pvrdma_table_remove(t, from);
    if (!pvrdma_table_insert(t, to, obj)) {
        pvrdma_table_insert(t, from, obj);
        fail(l, "%s %u: handle taken or out of range", what, to);
        return NULL;
    }
    return obj;
}

/* The configuration: each limit must be this device's. */
static bool load_limits(MigLoad *l, const PvrdmaMigImage *m)
{
    const PvrdmaLimits *lim = &l->c->lim;

    for (unsigned i = 0; i < PVRDMA_MIG_NLIMITS; i++) {
        if (m->limits[i] != pvrdma_mig_limit(lim, i)) {
            return fail(l, "property %s is %u here, %u in the stream",
                        pvrdma_mig_limits[i].prop, pvrdma_mig_limit(lim, i),
                        m->limits[i]);
        }
    }
    if (m->max_mr_size != lim->max_mr_size) {
        return fail(l, "property max-mr-size differs");
    }
    if (m->roce_version != lim->roce_version) {
        return fail(l, "property roce-version is %u here, %u in the stream",
                    lim->roce_version, m->roce_version);
    }
    return true;
}

static bool load_gids(MigLoad *l, const PvrdmaMigImage *m)
{
    PvrdmaCore *c = l->c;

    if ((uint32_t)m->ngid != c->lim.gid_tbl_len) {
        return fail(l, "%d GIDs, %u here", m->ngid, c->lim.gid_tbl_len);
    }
    for (int32_t i = 0; i < m->ngid; i++) {
        union pvrdma_cmd_req req = { 0 };
        union pvrdma_cmd_resp rsp;

        if (!m->gid[i].type) {
            continue;
        }
        req.create_bind.hdr.cmd = PVRDMA_CMD_CREATE_BIND;
        memcpy(req.create_bind.new_gid, m->gid[i].gid, 16);
        req.create_bind.gid_type = m->gid[i].type;
        req.create_bind.index = i;
        if (replay(c, &req, &rsp, NULL, 0)) {
            return fail(l, "GID %d refused", i);
        }
    }
    return true;
}

static bool load_ucs(MigLoad *l, const PvrdmaMigImage *m)
{
    PvrdmaCore *c = l->c;
    uint64_t base = c->ops->uar_base(c->opaque) / PVRDMA_PAGE_SIZE;

    for (int32_t i = 0; i < m->nuc; i++) {
        union pvrdma_cmd_req req = { 0 };
        union pvrdma_cmd_resp rsp;
        uint32_t h = m->uc[i].handle;

        req.create_uc.hdr.cmd = PVRDMA_CMD_CREATE_UC;
        req.create_uc.pfn = req.create_uc.pfn64 = base + h;
        if (replay(c, &req, &rsp, NULL, 0)) {
            return fail(l, "context %u refused", h);
        }
    }
    return true;
}

static bool load_pds(MigLoad *l, const PvrdmaMigImage *m)
{
    PvrdmaCore *c = l->c;

    for (int32_t i = 0; i < m->npd; i++) {
        union pvrdma_cmd_req req = { 0 };
        union pvrdma_cmd_resp rsp;
        uint32_t h = m->pd[i].handle;
        PvrdmaPD *pd;

        req.create_pd.hdr.cmd = PVRDMA_CMD_CREATE_PD;
        req.create_pd.ctx_handle = m->pd[i].ctx;
        if (replay(c, &req, &rsp, NULL, 0)) {
            return fail(l, "PD %u refused", h);
        }
        pd = move_handle(l, &c->pd, rsp.create_pd_resp.pd_handle, h, "PD");
        if (!pd) {
            return false;
        }
        pd->handle = h;
    }
    return true;
}

/*
 * Created with its size; if RESIZE_CQ made it smaller than its pages were
 * for, with as many entries as they hold, then given its size (the check
 * of RESIZE_CQ).
 */
static int replay_cq(PvrdmaCore *c, const PvrdmaMigCQ *r,
                     const uint64_t *pages, union pvrdma_cmd_resp *rsp)
{
    union pvrdma_cmd_req req = { 0 };
    uint32_t np = r->npages;
    int err;

    req.create_cq.hdr.cmd = PVRDMA_CMD_CREATE_CQ;
    req.create_cq.ctx_handle = r->ctx;
    req.create_cq.nchunks = np;
    req.create_cq.cqe = r->cqe;
    err = replay(c, &req, rsp, pages, np);
    if (err && np >= 2) {
        uint64_t fit = (uint64_t)(np - 1) * PVRDMA_PAGE_SIZE /
                       sizeof(struct pvrdma_cqe);

        fit = MIN(fit, c->lim.max_cqe);
        while (fit & (fit - 1)) {
            fit &= fit - 1;     /* the largest power of two below */
        }
        if (fit != r->cqe) {
            req.create_cq.cqe = fit;
            err = replay(c, &req, rsp, pages, np);
        }
    }
    return err;
}

static bool load_cqs(MigLoad *l, const PvrdmaMigImage *m)
{
    PvrdmaCore *c = l->c;

    for (int32_t i = 0; i < m->ncq; i++) {
        const PvrdmaMigCQ *r = &m->cq[i];
        union pvrdma_cmd_resp rsp;
        uint32_t h = r->handle;
        const uint64_t *pages = pages_of(l, r->page0, r->npages,
                                         PVRDMA_PAGE_DIR_MAX_PAGES, "CQ", h);
        PvrdmaCQ *cq;

        if (!pages) {
            return false;
        }
        if (replay_cq(c, r, pages, &rsp)) {
            return fail(l, "CQ %u refused", h);
        }
        cq = move_handle(l, &c->cq, rsp.create_cq_resp.cq_handle, h, "CQ");
        if (!cq) {
            return false;
        }
        cq->handle = h;
        if (!pvrdma_cq_cqe_fits(c, cq, r->cqe)) {
            return fail(l, "CQ %u: %u entries do not fit", h, r->cqe);
        }
        pvrdma_cq_set_cqe(cq, r->cqe);
        if (!ring_index(l, &cq->ring, r->priv, "CQ", h)) {
            return false;
        }
        cq->ring.priv = r->priv;
        cq->armed = r->armed &
                    (PVRDMA_CQ_FLAG_ARMED | PVRDMA_CQ_FLAG_ARMED_SOL);
        cq->error = r->error != 0;
    }
    return true;
}

/*
 * The CREATE_MR that makes an MR record's MR again, and its pages (*pages:
 * none for a DMA MR or an FRMR not registered), or false.
 */
static bool mr_request(MigLoad *l, const PvrdmaMigMR *r,
                       struct pvrdma_cmd_create_mr *req,
                       const uint64_t **pages)
{
    uint32_t h = r->handle;

    *pages = NULL;
    if (r->kind == PVRDMA_MR_DMA ||
        (r->kind == PVRDMA_MR_FRMR && !r->valid)) {
        if (r->npages) {
            return fail(l, "MR %u: %s with pages", h,
                        r->kind == PVRDMA_MR_DMA ? "DMA MR" :
                        "unregistered FRMR");
        }
    } else {
        *pages = pages_of(l, r->page0, r->npages, r->kind == PVRDMA_MR_FRMR ?
                          PVRDMA_MAX_FAST_REG_PAGES :
                          PVRDMA_PAGE_DIR_MAX_PAGES, "MR", h);
        if (!*pages) {
            return false;
        }
    }
    req->hdr.cmd = PVRDMA_CMD_CREATE_MR;
    req->pd_handle = r->pd;
    req->access_flags = r->access;
    if (r->kind == PVRDMA_MR_DMA) {
        req->flags = PVRDMA_MR_FLAG_DMA;
    } else if (r->kind == PVRDMA_MR_FRMR) {
        req->flags = PVRDMA_MR_FLAG_FRMR;
        req->nchunks = r->max_pages;
    } else if (r->kind == PVRDMA_MR_USER &&
               r->page_size == PVRDMA_PAGE_SIZE) {
        req->start = r->iova;
        req->length = r->length;
        req->nchunks = r->npages;
    } else {
        return fail(l, "MR %u: kind %u, page size %" PRIu64, h, r->kind,
                    r->page_size);
    }
    return true;
}

/* A registered FRMR: what FAST_REG_MR checks, then its pages */
static bool load_frmr(MigLoad *l, PvrdmaMR *mr, const PvrdmaMigMR *r,
                      const uint64_t *pages)
{
    uint64_t psz = r->page_size;

    if ((psz & (psz - 1)) || psz < PVRDMA_PAGE_SIZE || psz > (1u << 30) ||
        r->npages > mr->max_pages || !r->length ||
        (r->iova & (psz - 1)) + r->length > (uint64_t)r->npages * psz ||
        (r->access & ~PVRDMA_ACCESS_FLAGS_ALL)) {
        return fail(l, "MR %u: fast registration out of range", r->handle);
    }
    if (!pvrdma_map_pages(l->c, &mr->map, pages, r->npages, psz)) {
        return fail(l, "MR %u: pages are not RAM", r->handle);
    }
    mr->iova = r->iova;
    mr->base = r->iova & ~(psz - 1);
    mr->length = r->length;
    mr->access = r->access;
    mr->valid = true;
    return true;
}

static bool load_mrs(MigLoad *l, const PvrdmaMigImage *m)
{
    PvrdmaCore *c = l->c;

    for (int32_t i = 0; i < m->nmr; i++) {
        const PvrdmaMigMR *r = &m->mr[i];
        union pvrdma_cmd_req req = { 0 };
        union pvrdma_cmd_resp rsp;
        bool frmr = r->kind == PVRDMA_MR_FRMR;
        uint32_t h = r->handle;
        const uint64_t *pages;
        PvrdmaMR *mr;

        if (!mr_request(l, r, &req.create_mr, &pages)) {
            return false;
        }
        if (replay(c, &req, &rsp, frmr ? NULL : pages,
                   frmr ? 0 : r->npages)) {
            return fail(l, "MR %u refused", h);
        }
        mr = move_handle(l, &c->mr, rsp.create_mr_resp.mr_handle, h, "MR");
        if (!mr) {
            return false;
        }
        mr->handle = h;
        /* FRMR keys carry the byte the last FAST_REG_MR gave */
        mr->key = frmr ? (h << 8) | (r->key & 0xff) : h << 8;
        if (frmr && r->valid && !load_frmr(l, mr, r, pages)) {
            return false;
        }
    }
    return true;
}

static bool load_srqs(MigLoad *l, const PvrdmaMigImage *m)
{
    PvrdmaCore *c = l->c;

    for (int32_t i = 0; i < m->nsrq; i++) {
        const PvrdmaMigSRQ *r = &m->srq[i];
        union pvrdma_cmd_req req = { 0 };
        union pvrdma_cmd_resp rsp;
        uint32_t h = r->handle;
        const uint64_t *pages = pages_of(l, r->page0, r->npages,
                                         PVRDMA_PAGE_DIR_MAX_PAGES, "SRQ", h);
        PvrdmaSRQ *srq;

        if (!pages) {
            return false;
        }
        req.create_srq.hdr.cmd = PVRDMA_CMD_CREATE_SRQ;
        req.create_srq.pd_handle = r->pd;
        req.create_srq.attrs.max_wr = r->max_wr;
        req.create_srq.attrs.max_sge = r->max_sge;
        req.create_srq.attrs.srq_limit = r->limit;
        req.create_srq.nchunks = r->npages;
        if (replay(c, &req, &rsp, pages, r->npages)) {
            return fail(l, "SRQ %u refused", h);
        }
        srq = move_handle(l, &c->srq, rsp.create_srq_resp.srqn, h, "SRQ");
        if (!srq) {
            return false;
        }
        srq->handle = h;
        if (!ring_index(l, &srq->ring, r->priv, "SRQ", h)) {
            return false;
        }
        srq->ring.priv = r->priv;
    }
    return true;
}

/* Walk a new QP from RESET to its saved state, as its owner once did. */
static bool qp_walk(MigLoad *l, PvrdmaQP *qp, const PvrdmaMigQP *r)
{
    static const uint8_t path[] = {
        PVRDMA_QPS_INIT, PVRDMA_QPS_RTR, PVRDMA_QPS_RTS, PVRDMA_QPS_SQD,
    };
    struct pvrdma_qp_attr a;
    uint32_t mask = PVRDMA_QP_ATTR_MASK_ALL & ~PVRDMA_QP_CUR_STATE;
    uint8_t state = r->state;
    uint8_t goal = state == PVRDMA_QPS_ERR ? PVRDMA_QPS_INIT : state;

    memcpy(&a, r->attr, sizeof(a));
    if (state == PVRDMA_QPS_RESET) {
        return true;
    }
    if (state > PVRDMA_QPS_ERR || state == PVRDMA_QPS_SQE) {
        return fail(l, "QP %u: state %u", qp->qpn, state);
    }
    for (unsigned i = 0; i < G_N_ELEMENTS(path); i++) {
        a.qp_state = path[i];
        if (pvrdma_qp_modify(l->c, qp, mask, &a)) {
            return fail(l, "QP %u: attributes refused on the way to "
                        "state %u", qp->qpn, path[i]);
        }
        if (path[i] == goal) {
            break;
        }
    }
    if (state == PVRDMA_QPS_ERR) {
        /* its queues flush from the run loop, as before the move */
        qp->state = PVRDMA_QPS_ERR;
        qp->gone_pending = true;
    }
    return true;
}

/* The transport state of a QP, checked, to the transport it names */
static PvrdmaTransport *qp_transport(MigLoad *l, PvrdmaQP *qp,
                                     const PvrdmaMigTp *r)
{
    const char *name = (const char *)r->name;
    size_t n = strnlen(name, sizeof(r->name));
    PvrdmaTransport *t;

    if (r->qp != qp->handle) {
        fail(l, "QP %u: the next transport record is QP %u's", qp->qpn,
             r->qp);
        return NULL;
    }
    if (!n || n > PVRDMA_MIG_TP_NAME_MAX) {
        fail(l, "QP %u: transport name of %zu bytes", qp->qpn, n);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (!g_ascii_isalnum(name[i])) {
            fail(l, "QP %u: transport name not a name", qp->qpn);
            return NULL;
        }
    }
    if (r->len > PVRDMA_MIG_TP_STATE_MAX) {
        fail(l, "QP %u: transport state of %u bytes", qp->qpn, r->len);
        return NULL;
    }
    t = pvrdma_transport_by_name(l->c, name);
    if (!t || !pvrdma_transport_can_load(t)) {
        fail(l, "QP %u was connected over the %s transport, which this "
             "device does not have", qp->qpn, name);
        return NULL;
    }
    if (qp->type != PVRDMA_QPT_RC || qp->state < PVRDMA_QPS_RTR ||
        qp->state > PVRDMA_QPS_SQD) {
        fail(l, "QP %u: transport state in QP state %u", qp->qpn, qp->state);
        return NULL;
    }
    return t;
}

/*
 * A QP's transport record: the transport it was on carries on with the
 * state its qp_save wrote, even where another transport would be chosen
 * now (the peer's QP stays on the transport it shares with this one).
 */
static bool load_transport(MigLoad *l, PvrdmaQP *qp, const PvrdmaMigQP *q)
{
    const PvrdmaMigTp *r;
    PvrdmaMigReader sub = { 0 };
    PvrdmaTransport *t;
    bool ok;

    if (!q->has_tp) {
        /*
         * Its transport kept no state (co-resident): it took the transport
         * that reaches its peer from here.  If that is another kind
         * (RoCEv2: the peer did not come along), the peer may still wait on
         * the old one: tell it (pvrdma_transport_heard()).
         */
        if (qp->tp &&
            qp->state >= PVRDMA_QPS_RTR && qp->state <= PVRDMA_QPS_SQD) {
            pvrdma_transport_qp_announce(qp->tp, qp);
        }
        return true;
    }
    if (l->tp_at >= l->m->ntp) {
        return fail(l, "QP %u: no transport record left", qp->qpn);
    }
    r = &l->m->tp[l->tp_at++];
    t = qp_transport(l, qp, r);
    if (!t) {
        return false;
    }
    if (qp->tp != t && !pvrdma_transport_attach_to(l->c, qp, t)) {
        return fail(l, "QP %u: the %s transport refused it", qp->qpn,
                    (const char *)r->name);
    }
    sub.p = r->state;
    sub.left = r->len;
    ok = pvrdma_transport_qp_load(t, qp, &sub) && !sub.err;
    if (ok && sub.left) {
        pvrdma_mig_fail(&sub, "%zu bytes too many", sub.left);
        ok = false;
    }
    if (!ok) {
        fail(l, "QP %u: %s state: %s", qp->qpn, (const char *)r->name,
             sub.err ? sub.err : "refused");
    }
    g_free(sub.err);
    return ok;
}

/* The CREATE_QP that makes a QP record's QP again */
static void qp_request(const PvrdmaMigQP *r, struct pvrdma_cmd_create_qp *m)
{
    m->hdr.cmd = PVRDMA_CMD_CREATE_QP;
    m->qp_type = r->type;
    m->is_srq = r->is_srq;
    m->sq_sig_all = r->sq_sig_all;
    m->pd_handle = r->pd;
    m->send_cq_handle = r->scq;
    m->recv_cq_handle = r->rcq;
    m->srq_handle = r->srq;
    m->max_send_wr = r->max_send_wr;
    m->max_recv_wr = r->max_recv_wr;
    m->max_send_sge = r->max_send_sge;
    m->max_recv_sge = r->max_recv_sge;
    m->send_chunks = r->send_chunks;
    m->total_chunks = r->npages;
}

/*
 * The new QP's ring indices and the send slots between them, checked;
 * *nheld counts the held completions.
 */
static bool load_qp_slots(MigLoad *l, PvrdmaQP *qp, const PvrdmaMigQP *r,
                          uint32_t *nheld)
{
    uint32_t h = r->handle;
    const PvrdmaMigSlot *m;

    /* ring indices first: entering a state may run the queues */
    if (!pvrdma_idx_valid(r->sq_priv, qp->sq.nelems) ||
        !pvrdma_idx_valid(r->sq_head, qp->sq.nelems) ||
        (!qp->is_srq && !pvrdma_idx_valid(r->rq_priv, qp->rq.nelems)) ||
        r->nslots != pvrdma_idx_used(r->sq_head, r->sq_priv,
                                     qp->sq.nelems)) {
        return fail(l, "QP %u: ring indices out of range", h);
    }
    /* its slots: the next nslots of the image's, each naming it */
    if (r->nslots > (uint32_t)(l->m->nslots - l->slot_at)) {
        return fail(l, "QP %u: %u send slots, %d left", h, r->nslots,
                    l->m->nslots - l->slot_at);
    }
    m = r->nslots ? l->m->slots + l->slot_at : NULL;
    l->slot_at += r->nslots;
    qp->sq.priv = r->sq_priv;
    qp->sq_head = r->sq_head;
    if (!qp->is_srq) {
        qp->rq.priv = r->rq_priv;
    }
    for (uint32_t i = r->sq_priv; i != r->sq_head;
         i = pvrdma_idx_next(i, qp->sq.nelems), m++) {
        PvrdmaSendSlot *s = pvrdma_send_slot(qp, i);

        if (m->qp != h) {
            return fail(l, "QP %u: a send slot of QP %u", h, m->qp);
        }
        s->wr_id = m->wr_id;
        s->opcode = m->opcode;
        s->byte_len = m->byte_len;
        s->status = m->status;
        s->signaled = m->signaled != 0;
        s->held = m->held != 0;
        s->cookie = 0;
        s->done = true;     /* nothing in flight may move */
        if (s->status < 0 || s->status > PVRDMA_WC_GENERAL_ERR ||
            (s->held && (s->status != PVRDMA_WC_RETRY_EXC_ERR ||
                         qp->type != PVRDMA_QPT_RC))) {
            return fail(l, "QP %u: send slot status %d", h, s->status);
        }
        *nheld += s->held;
    }
    return true;
}

/*
 * A held completion: the time its retries have left (at most 8 local ACK
 * timeouts of 4.096 us << 31), only while the QP sends.
 */
static bool hold_ok(const PvrdmaMigQP *r, uint32_t nheld)
{
    return !nheld == !r->hold &&
           (!r->hold || r->state == PVRDMA_QPS_RTS ||
            r->state == PVRDMA_QPS_SQD) &&
           (r->hold == UINT64_MAX ||
            r->hold <= 8 * (4096ull << 31) / 1000000);
}

static bool load_qp(MigLoad *l, const PvrdmaMigQP *r)
{
    PvrdmaCore *c = l->c;
    union pvrdma_cmd_req req = { 0 };
    union pvrdma_cmd_resp rsp;
    uint32_t h = r->handle, nheld = 0;
    const uint64_t *pages = pages_of(l, r->page0, r->npages,
                                     PVRDMA_PAGE_DIR_MAX_PAGES, "QP", h);
    PvrdmaQP *qp;

    if (!pages) {
        return false;
    }
    if ((r->type == PVRDMA_QPT_GSI) != (h == PVRDMA_GSI_QPN)) {
        return fail(l, "QP %u: type %u", h, r->type);
    }
    qp_request(r, &req.create_qp);
    if (replay(c, &req, &rsp, pages, r->npages)) {
        return fail(l, "QP %u refused", h);
    }
    qp = move_handle(l, &c->qp, c->version >= PVRDMA_QPHANDLE_VERSION ?
                     rsp.create_qp_resp_v2.qp_handle : rsp.create_qp_resp.qpn,
                     h, "QP");
    if (!qp) {
        return false;
    }
    qp->handle = qp->qpn = h;
    if (!load_qp_slots(l, qp, r, &nheld)) {
        return false;
    }
    if (!hold_ok(r, nheld)) {
        return fail(l, "QP %u: held completion", h);
    }
    if (!qp_walk(l, qp, r)) {
        return false;
    }
    if (r->hold) {
        pvrdma_qp_hold(c, qp, r->hold == UINT64_MAX ? INT64_MAX :
                       c->ops->now_ms(c->opaque) + (int64_t)r->hold);
    }
    qp->sq_failed = r->sq_failed != 0;
    qp->comm_est = r->comm_est != 0;
    qp->events = r->events;
    if (!load_transport(l, qp, r)) {
        return false;
    }
    pvrdma_qp_schedule(c, qp);
    return true;
}

static bool load_cursors(MigLoad *l, const PvrdmaMigImage *m)
{
    PvrdmaCore *c = l->c;
    PvrdmaTable *t[PVRDMA_MIG_NCURSORS] = {
        &c->pd, &c->mr, &c->cq, &c->qp, &c->srq
    };
    static const char *const what[PVRDMA_MIG_NCURSORS] = {
        "PD", "MR", "CQ", "QP", "SRQ"
    };

    for (unsigned i = 0; i < PVRDMA_MIG_NCURSORS; i++) {
        if (m->cursor[i] < t[i]->first || m->cursor[i] >= t[i]->size) {
            return fail(l, "%s cursor %u out of range", what[i],
                        m->cursor[i]);
        }
        t[i]->next = m->cursor[i];
    }
    return true;
}

/* An active device's command slots, UAR page and DSR rings */
static bool load_dsr(MigLoad *l, const PvrdmaMigImage *m)
{
    PvrdmaCore *c = l->c;
    const uint64_t *ap, *cp;

    c->cmd_gpa = m->cmd_gpa;
    c->resp_gpa = m->resp_gpa;
    c->uar_pfn = m->uar_pfn;
    ap = pages_of(l, m->async_page0, m->async_npages, PVRDMA_MAX_RING_PAGES,
                  "async ring", 0);
    cp = pages_of(l, m->cqn_page0, m->cqn_npages, PVRDMA_MAX_RING_PAGES,
                  "CQ notification ring", 0);
    if (!ap || !cp) {
        return false;
    }
    if (!c->cmd_gpa || !c->resp_gpa) {
        return fail(l, "active device without command slots");
    }
    if (!pvrdma_dsr_ring_map(c, &c->async_ring, "async", ap,
                             m->async_npages, sizeof(struct pvrdma_eqe)) ||
        !pvrdma_dsr_ring_map(c, &c->cqn_ring, "cq-notify", cp,
                             m->cqn_npages, sizeof(struct pvrdma_cqne))) {
        return fail(l, "DSR rings unusable");
    }
    if (!ring_index(l, &c->async_ring, m->async_priv, "async ring", 0) ||
        !ring_index(l, &c->cqn_ring, m->cqn_priv, "CQ notification ring",
                    0)) {
        return false;
    }
    c->async_ring.priv = m->async_priv;
    c->cqn_ring.priv = m->cqn_priv;
    c->active = true;
    c->port_down = m->port_down != 0;
    return true;
}

/* The registers and, on an active device, the DSR copy */
static bool load_regs(MigLoad *l, const PvrdmaMigImage *m)
{
    PvrdmaCore *c = l->c;

    c->guest_errors = m->guest_errors;
    c->commands = m->commands;
    c->doorbells = m->doorbells;
    if (m->active && (!m->dsr_set || m->version < PVRDMA_ROCEV1_VERSION ||
                      m->version > c->lim.version)) {
        return fail(l, "active device with DSR %u, version %u", m->dsr_set,
                    m->version);
    }
    c->dsr_gpa = m->dsr_gpa;
    c->err = m->err;
    c->icr = m->icr;
    c->imr = m->imr;
    c->dsr_set = m->dsr_set != 0;
    c->version = m->active ? m->version : 0;
    if (m->active) {
        return load_dsr(l, m);
    }
    return true;
}

static bool load_all(MigLoad *l, const PvrdmaMigImage *m)
{
    if (m->magic != PVRDMA_MIG_IMAGE_MAGIC) {
        return fail(l, "not a pvrdma state");
    }
    if (m->ngid < 0 || m->nuc < 0 || m->npd < 0 || m->ncq < 0 ||
        m->nmr < 0 || m->nsrq < 0 || m->nqp < 0 || m->nslots < 0 ||
        m->ntp < 0) {
        return fail(l, "negative object count");
    }
    if (!load_limits(l, m) || !load_regs(l, m)) {
        return false;
    }
    if (!load_gids(l, m) || !load_ucs(l, m) || !load_pds(l, m) ||
        !load_cqs(l, m) || !load_mrs(l, m) || !load_srqs(l, m)) {
        return false;
    }
    if (m->nqp && !l->c->active) {
        return fail(l, "QPs on a device that is not active");
    }
    for (int32_t i = 0; i < m->nqp; i++) {
        if (!load_qp(l, &m->qp[i])) {
            return false;
        }
    }
    if (l->slot_at != m->nslots || l->tp_at != m->ntp) {
        return fail(l, "%d send slots and %d transport records of no QP",
                    m->nslots - l->slot_at, m->ntp - l->tp_at);
    }
    return load_cursors(l, m);
}

bool pvrdma_mig_image_load(PvrdmaCore *c, const PvrdmaMigImage *m,
                           Error **errp)
{
    MigLoad l = { .c = c, .m = m };
    int64_t t0 G_GNUC_UNUSED = g_get_monotonic_time();

    pvrdma_core_reset(c);
    c->restoring = true;
    if (!load_all(&l, m) && !l.err) {
        l.err = g_strdup("refused");
    }
    c->restoring = false;
    c->restore_pages = NULL;
    if (l.err) {
        pvrdma_core_reset(c);
        error_setg(errp, "%s", l.err);
        g_free(l.err);
        return false;
    }
    trace_pvrdma_state_loaded(c->qp.used, c->mr.used,
                              g_get_monotonic_time() - t0);
    return true;
}
