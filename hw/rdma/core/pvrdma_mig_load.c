/*
 * pvrdma: loading the device's state (migration, snapshots).  The stream,
 * the save and what may move: pvrdma_mig.c.
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
#ifndef PVRDMA_STANDALONE
#include "qemu/osdep.h"
#endif
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_transport_calls.h"
#include "pvrdma_int.h"

#define PVRDMA_MIG_TP_NAME_MAX 32

/* ------------------------------------------------------------------ */
/* The stream's primitives (pvrdma_stream.c), by short names            */

typedef PvrdmaMigReader MigReader;
#define get8 pvrdma_mig_get8
#define get32 pvrdma_mig_get32
#define get64 pvrdma_mig_get64
#define mig_fail pvrdma_mig_fail
#define take pvrdma_mig_take

/* A page list of at most max pages; NULL (and the error set) otherwise. */
static uint64_t *get_pages(MigReader *r, uint32_t max, uint32_t *n)
{
    uint64_t *pages;

    *n = get32(r);
    if (r->err) {
        return NULL;
    }
    if (*n == 0 || *n > max || (uint64_t)*n * 8 > r->left) {
        mig_fail(r, "page list of %u pages", *n);
        return NULL;
    }
    pages = g_new(uint64_t, *n);
    for (uint32_t i = 0; i < *n; i++) {
        pages[i] = get64(r);
    }
    return pages;
}

/* ------------------------------------------------------------------ */
/* Load                                                                */

/* A device index of a ring: in [0, period). */
static bool ring_index(MigReader *r, const PvrdmaRing *ring, uint32_t v,
                       const char *what, uint32_t h)
{
    if (v >= ring->period) {
        return mig_fail(r, "%s %u: ring index %u out of range", what, h, v);
    }
    return true;
}

/*
 * Replay one create command with the page list from the stream; then move
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
static void *move_handle(MigReader *r, PvrdmaTable *t, uint32_t from,
                         uint32_t to, const char *what)
{
    void *obj = pvrdma_table_get(t, from);

    if (from == to) {
        return obj;
    }
    pvrdma_table_remove(t, from);
    if (!pvrdma_table_insert(t, to, obj)) {
        pvrdma_table_insert(t, from, obj);
        mig_fail(r, "%s %u: handle taken or out of range", what, to);
        return NULL;
    }
    return obj;
}

static bool load_gids(MigReader *r, PvrdmaCore *c)
{
    uint32_t n = get32(r);

    if (!r->err && n != c->lim.gid_tbl_len) {
        return mig_fail(r, "%u GIDs, %u here", n, c->lim.gid_tbl_len);
    }
    for (uint32_t i = 0; i < n && !r->err; i++) {
        union pvrdma_cmd_req req = { 0 };
        union pvrdma_cmd_resp rsp;
        uint8_t type = get8(r);

        req.create_bind.hdr.cmd = PVRDMA_CMD_CREATE_BIND;
        take(r, req.create_bind.new_gid, 16);
        if (r->err || !type) {
            continue;
        }
        req.create_bind.gid_type = type;
        req.create_bind.index = i;
        if (replay(c, &req, &rsp, NULL, 0)) {
            return mig_fail(r, "GID %u refused", i);
        }
    }
    return !r->err;
}

static bool load_ucs(MigReader *r, PvrdmaCore *c)
{
    uint32_t n = get32(r);
    uint64_t base = c->ops->uar_base(c->opaque) / PVRDMA_PAGE_SIZE;

    for (uint32_t i = 0; i < n && !r->err; i++) {
        union pvrdma_cmd_req req = { 0 };
        union pvrdma_cmd_resp rsp;
        uint32_t h = get32(r);

        req.create_uc.hdr.cmd = PVRDMA_CMD_CREATE_UC;
        req.create_uc.pfn = req.create_uc.pfn64 = base + h;
        if (!r->err && replay(c, &req, &rsp, NULL, 0)) {
            return mig_fail(r, "context %u refused", h);
        }
    }
    return !r->err;
}

static bool load_pds(MigReader *r, PvrdmaCore *c)
{
    uint32_t n = get32(r);

    for (uint32_t i = 0; i < n && !r->err; i++) {
        union pvrdma_cmd_req req = { 0 };
        union pvrdma_cmd_resp rsp;
        uint32_t h = get32(r);
        PvrdmaPD *pd;

        req.create_pd.hdr.cmd = PVRDMA_CMD_CREATE_PD;
        req.create_pd.ctx_handle = get32(r);
        if (r->err) {
            break;
        }
        if (replay(c, &req, &rsp, NULL, 0)) {
            return mig_fail(r, "PD %u refused", h);
        }
        pd = move_handle(r, &c->pd, rsp.create_pd_resp.pd_handle, h, "PD");
        if (!pd) {
            return false;
        }
        pd->handle = h;
    }
    return !r->err;
}

static bool load_cqs(MigReader *r, PvrdmaCore *c)
{
    uint32_t n = get32(r);

    for (uint32_t i = 0; i < n && !r->err; i++) {
        union pvrdma_cmd_req req = { 0 };
        union pvrdma_cmd_resp rsp;
        uint32_t h = get32(r), ctx = get32(r), cqe = get32(r), np, priv;
        g_autofree uint64_t *pages = get_pages(r, PVRDMA_PAGE_DIR_MAX_PAGES,
                                               &np);
        uint8_t armed, error;
        PvrdmaCQ *cq;
        int err;

        priv = get32(r);
        armed = get8(r);
        error = get8(r);
        if (r->err) {
            break;
        }
        /*
         * Created with its size; if RESIZE_CQ made it smaller than its
         * pages were for, with as many entries as they hold, then given
         * its size (the check of RESIZE_CQ).
         */
        req.create_cq.hdr.cmd = PVRDMA_CMD_CREATE_CQ;
        req.create_cq.ctx_handle = ctx;
        req.create_cq.nchunks = np;
        req.create_cq.cqe = cqe;
        err = replay(c, &req, &rsp, pages, np);
        if (err && np >= 2) {
            uint64_t fit = (uint64_t)(np - 1) * PVRDMA_PAGE_SIZE /
                           sizeof(struct pvrdma_cqe);

            fit = MIN(fit, c->lim.max_cqe);
            while (fit & (fit - 1)) {
                fit &= fit - 1;     /* the largest power of two below */
            }
            if (fit != cqe) {
                req.create_cq.cqe = fit;
                err = replay(c, &req, &rsp, pages, np);
            }
        }
        if (err) {
            return mig_fail(r, "CQ %u refused", h);
        }
        cq = move_handle(r, &c->cq, rsp.create_cq_resp.cq_handle, h, "CQ");
        if (!cq) {
            return false;
        }
        cq->handle = h;
        if (!pvrdma_cq_cqe_fits(c, cq, cqe)) {
            return mig_fail(r, "CQ %u: %u entries do not fit", h, cqe);
        }
        pvrdma_cq_set_cqe(cq, cqe);
        if (!ring_index(r, &cq->ring, priv, "CQ", h)) {
            return false;
        }
        cq->ring.priv = priv;
        cq->armed = armed & (PVRDMA_CQ_FLAG_ARMED | PVRDMA_CQ_FLAG_ARMED_SOL);
        cq->error = error != 0;
    }
    return !r->err;
}

static bool load_mrs(MigReader *r, PvrdmaCore *c)
{
    uint32_t n = get32(r);

    for (uint32_t i = 0; i < n && !r->err; i++) {
        union pvrdma_cmd_req req = { 0 };
        union pvrdma_cmd_resp rsp;
        uint32_t h = get32(r), pd = get32(r), kind = get32(r);
        uint32_t access = get32(r), key = get32(r), max_pages, np = 0;
        bool valid = get8(r);
        uint64_t iova = get64(r), length = get64(r), psz;
        g_autofree uint64_t *pages = NULL;
        PvrdmaMR *mr;

        max_pages = get32(r);
        psz = get64(r);
        if (kind == PVRDMA_MR_DMA) {
            if (get32(r) != 0) {
                return mig_fail(r, "MR %u: DMA MR with pages", h);
            }
        } else if (kind == PVRDMA_MR_FRMR && !valid) {
            if (get32(r) != 0 && !r->err) {
                return mig_fail(r, "MR %u: unregistered FRMR with pages", h);
            }
        } else {
            pages = get_pages(r, kind == PVRDMA_MR_FRMR ?
                              PVRDMA_MAX_FAST_REG_PAGES :
                              PVRDMA_PAGE_DIR_MAX_PAGES, &np);
        }
        if (r->err) {
            break;
        }
        req.create_mr.hdr.cmd = PVRDMA_CMD_CREATE_MR;
        req.create_mr.pd_handle = pd;
        req.create_mr.access_flags = access;
        if (kind == PVRDMA_MR_DMA) {
            req.create_mr.flags = PVRDMA_MR_FLAG_DMA;
        } else if (kind == PVRDMA_MR_FRMR) {
            req.create_mr.flags = PVRDMA_MR_FLAG_FRMR;
            req.create_mr.nchunks = max_pages;
        } else if (kind == PVRDMA_MR_USER && psz == PVRDMA_PAGE_SIZE) {
            req.create_mr.start = iova;
            req.create_mr.length = length;
            req.create_mr.nchunks = np;
        } else {
            return mig_fail(r, "MR %u: kind %u, page size %" PRIu64, h, kind,
                            psz);
        }
        if (replay(c, &req, &rsp, pages, np)) {
            return mig_fail(r, "MR %u refused", h);
        }
        mr = move_handle(r, &c->mr, rsp.create_mr_resp.mr_handle, h, "MR");
        if (!mr) {
            return false;
        }
        mr->handle = h;
        /* FRMR keys carry the byte the last FAST_REG_MR gave */
        mr->key = kind == PVRDMA_MR_FRMR ? (h << 8) | (key & 0xff) : h << 8;
        if (kind != PVRDMA_MR_FRMR || !valid) {
            continue;
        }
        /* a registered FRMR: what FAST_REG_MR checks, then its pages */
        if ((psz & (psz - 1)) || psz < PVRDMA_PAGE_SIZE || psz > (1u << 30) ||
            np > mr->max_pages || !length ||
            (iova & (psz - 1)) + length > (uint64_t)np * psz ||
            (access & ~PVRDMA_ACCESS_FLAGS_ALL)) {
            return mig_fail(r, "MR %u: fast registration out of range", h);
        }
        if (!pvrdma_map_pages(c, &mr->map, pages, np, psz)) {
            return mig_fail(r, "MR %u: pages are not RAM", h);
        }
        mr->iova = iova;
        mr->base = iova & ~(psz - 1);
        mr->length = length;
        mr->access = access;
        mr->valid = true;
    }
    return !r->err;
}

static bool load_srqs(MigReader *r, PvrdmaCore *c)
{
    uint32_t n = get32(r);

    for (uint32_t i = 0; i < n && !r->err; i++) {
        union pvrdma_cmd_req req = { 0 };
        union pvrdma_cmd_resp rsp;
        uint32_t h = get32(r), np, priv;
        PvrdmaSRQ *srq;
        g_autofree uint64_t *pages = NULL;

        req.create_srq.hdr.cmd = PVRDMA_CMD_CREATE_SRQ;
        req.create_srq.pd_handle = get32(r);
        req.create_srq.attrs.max_wr = get32(r);
        req.create_srq.attrs.max_sge = get32(r);
        req.create_srq.attrs.srq_limit = get32(r);
        pages = get_pages(r, PVRDMA_PAGE_DIR_MAX_PAGES, &np);
        priv = get32(r);
        if (r->err) {
            break;
        }
        req.create_srq.nchunks = np;
        if (replay(c, &req, &rsp, pages, np)) {
            return mig_fail(r, "SRQ %u refused", h);
        }
        srq = move_handle(r, &c->srq, rsp.create_srq_resp.srqn, h, "SRQ");
        if (!srq) {
            return false;
        }
        srq->handle = h;
        if (!ring_index(r, &srq->ring, priv, "SRQ", h)) {
            return false;
        }
        srq->ring.priv = priv;
    }
    return !r->err;
}

/* Walk a new QP from RESET to its saved state, as its owner once did. */
static bool qp_walk(MigReader *r, PvrdmaCore *c, PvrdmaQP *qp, uint8_t state,
                    const struct pvrdma_qp_attr *saved)
{
    static const uint8_t path[] = {
        PVRDMA_QPS_INIT, PVRDMA_QPS_RTR, PVRDMA_QPS_RTS, PVRDMA_QPS_SQD,
    };
    struct pvrdma_qp_attr a = *saved;
    uint32_t mask = PVRDMA_QP_ATTR_MASK_ALL & ~PVRDMA_QP_CUR_STATE;
    uint8_t goal = state == PVRDMA_QPS_ERR ? PVRDMA_QPS_INIT : state;

    if (state == PVRDMA_QPS_RESET) {
        return true;
    }
    if (state > PVRDMA_QPS_ERR || state == PVRDMA_QPS_SQE) {
        return mig_fail(r, "QP %u: state %u", qp->qpn, state);
    }
    for (unsigned i = 0; i < G_N_ELEMENTS(path); i++) {
        a.qp_state = path[i];
        if (pvrdma_qp_modify(c, qp, mask, &a)) {
            return mig_fail(r, "QP %u: attributes refused on the way to "
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

/*
 * A QP's transport record: the transport it was on carries on with the
 * state its qp_save wrote, even where another transport would be chosen
 * now (the peer's QP stays on the transport it shares with this one).
 */
static bool load_transport(MigReader *r, PvrdmaCore *c, PvrdmaQP *qp)
{
    char name[PVRDMA_MIG_TP_NAME_MAX + 1] = "";
    PvrdmaTransport *t = NULL;
    MigReader sub = { 0 };
    uint32_t n, len;
    bool ok;

    switch (get8(r)) {
    case 0:
        /*
         * Its transport kept no state (co-resident): it took the transport
         * that reaches its peer from here.  If that is another kind
         * (RoCEv2: the peer did not come along), the peer may still wait on
         * the old one: tell it (pvrdma_transport_heard()).
         */
        if (!r->err && qp->tp &&
            qp->state >= PVRDMA_QPS_RTR && qp->state <= PVRDMA_QPS_SQD) {
            pvrdma_transport_qp_announce(qp->tp, qp);
        }
        return !r->err;
    case 1:
        break;
    default:
        return mig_fail(r, "QP %u: bad transport record", qp->qpn);
    }
    n = get32(r);
    if (!r->err && (!n || n > PVRDMA_MIG_TP_NAME_MAX)) {
        return mig_fail(r, "QP %u: transport name of %u bytes", qp->qpn, n);
    }
    take(r, name, n);
    len = get32(r);
    if (r->err) {
        return false;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (!g_ascii_isalnum(name[i])) {
            return mig_fail(r, "QP %u: transport name not a name", qp->qpn);
        }
    }
    if (len > r->left) {
        return mig_fail(r, "QP %u: transport state truncated", qp->qpn);
    }
    t = pvrdma_transport_by_name(c, name);
    if (!t || !pvrdma_transport_can_load(t)) {
        return mig_fail(r, "QP %u was connected over the %s transport, which "
                        "this device does not have", qp->qpn, name);
    }
    if (qp->type != PVRDMA_QPT_RC || qp->state < PVRDMA_QPS_RTR ||
        qp->state > PVRDMA_QPS_SQD) {
        return mig_fail(r, "QP %u: transport state in QP state %u", qp->qpn,
                        qp->state);
    }
    if (qp->tp != t && !pvrdma_transport_attach_to(c, qp, t)) {
        return mig_fail(r, "QP %u: the %s transport refused it", qp->qpn, name);
    }
    sub.p = r->p;
    sub.left = len;
    r->p += len;
    r->left -= len;
    ok = pvrdma_transport_qp_load(t, qp, &sub) && !sub.err;
    if (ok && sub.left) {
        mig_fail(&sub, "%zu bytes too many", sub.left);
        ok = false;
    }
    if (!ok) {
        mig_fail(r, "QP %u: %s state: %s", qp->qpn, name,
                 sub.err ? sub.err : "refused");
    }
    g_free(sub.err);
    return ok;
}

/* A QP record's runtime state, read before the QP is created again */
typedef struct {
    struct pvrdma_qp_attr attr;
    uint32_t sq_priv, sq_head, rq_priv, events, nslots;
    uint8_t state, sq_failed, comm_est;
    uint64_t hold;
} MigQpState;

/*
 * A QP record up to its send slots: the CREATE_QP that makes the QP again
 * into m, with the page list (returned, *np pages), the rest into s.
 */
static uint64_t *load_qp_record(MigReader *r, struct pvrdma_cmd_create_qp *m,
                                uint32_t *np, MigQpState *s)
{
    uint64_t *pages;

    m->hdr.cmd = PVRDMA_CMD_CREATE_QP;
    m->qp_type = get8(r);
    m->is_srq = get8(r);
    m->sq_sig_all = get8(r);
    m->pd_handle = get32(r);
    m->send_cq_handle = get32(r);
    m->recv_cq_handle = get32(r);
    m->srq_handle = get32(r);
    m->max_send_wr = get32(r);
    m->max_recv_wr = get32(r);
    m->max_send_sge = get32(r);
    m->max_recv_sge = get32(r);
    m->send_chunks = get32(r);
    pages = get_pages(r, PVRDMA_PAGE_DIR_MAX_PAGES, np);
    m->total_chunks = *np;
    s->state = get8(r);
    take(r, &s->attr, sizeof(s->attr));
    s->sq_priv = get32(r);
    s->sq_head = get32(r);
    s->rq_priv = get32(r);
    s->sq_failed = get8(r);
    s->comm_est = get8(r);
    s->events = get32(r);
    s->hold = get64(r);
    s->nslots = get32(r);
    return pages;
}

/*
 * The new QP h's ring indices and the send slots between them, read and
 * checked; *nheld counts the held completions.
 */
static bool load_qp_slots(MigReader *r, PvrdmaQP *qp, uint32_t h,
                          const MigQpState *st, uint32_t *nheld)
{
    /* ring indices first: entering a state may run the queues */
    if (!pvrdma_idx_valid(st->sq_priv, qp->sq.nelems) ||
        !pvrdma_idx_valid(st->sq_head, qp->sq.nelems) ||
        (!qp->is_srq && !pvrdma_idx_valid(st->rq_priv, qp->rq.nelems)) ||
        st->nslots != pvrdma_idx_used(st->sq_head, st->sq_priv,
                                      qp->sq.nelems)) {
        return mig_fail(r, "QP %u: ring indices out of range", h);
    }
    qp->sq.priv = st->sq_priv;
    qp->sq_head = st->sq_head;
    if (!qp->is_srq) {
        qp->rq.priv = st->rq_priv;
    }
    for (uint32_t i = st->sq_priv; i != st->sq_head && !r->err;
         i = pvrdma_idx_next(i, qp->sq.nelems)) {
        PvrdmaSendSlot *s = pvrdma_send_slot(qp, i);

        s->wr_id = get64(r);
        s->opcode = get32(r);
        s->byte_len = get32(r);
        s->status = get32(r);
        s->signaled = get8(r) != 0;
        s->held = get8(r) != 0;
        s->cookie = 0;
        s->done = true;     /* nothing in flight may move */
        if (s->status < 0 || s->status > PVRDMA_WC_GENERAL_ERR ||
            (s->held && (s->status != PVRDMA_WC_RETRY_EXC_ERR ||
                         qp->type != PVRDMA_QPT_RC))) {
            return mig_fail(r, "QP %u: send slot status %d", h, s->status);
        }
        *nheld += s->held;
    }
    return true;
}

static bool load_qp(MigReader *r, PvrdmaCore *c, uint32_t version)
{
    union pvrdma_cmd_req req = { 0 };
    union pvrdma_cmd_resp rsp;
    struct pvrdma_cmd_create_qp *m = &req.create_qp;
    uint32_t h = get32(r), np;
    uint32_t nheld = 0;
    MigQpState st = { 0 };
    g_autofree uint64_t *pages = NULL;
    PvrdmaQP *qp;

    pages = load_qp_record(r, m, &np, &st);
    if (r->err) {
        return false;
    }
    if ((m->qp_type == PVRDMA_QPT_GSI) != (h == PVRDMA_GSI_QPN)) {
        return mig_fail(r, "QP %u: type %u", h, m->qp_type);
    }
    if (replay(c, &req, &rsp, pages, np)) {
        return mig_fail(r, "QP %u refused", h);
    }
    qp = move_handle(r, &c->qp, c->version >= PVRDMA_QPHANDLE_VERSION ?
                     rsp.create_qp_resp_v2.qp_handle : rsp.create_qp_resp.qpn,
                     h, "QP");
    if (!qp) {
        return false;
    }
    qp->handle = qp->qpn = h;
    if (!load_qp_slots(r, qp, h, &st, &nheld)) {
        return false;
    }
    /*
     * A held completion: the time its retries have left (at most 8 local
     * ACK timeouts of 4.096 us << 31), only while the QP sends.
     */
    if (!nheld != !st.hold ||
        (st.hold && st.state != PVRDMA_QPS_RTS &&
         st.state != PVRDMA_QPS_SQD) ||
        (st.hold != UINT64_MAX && st.hold > 8 * (4096ull << 31) / 1000000)) {
        return mig_fail(r, "QP %u: held completion", h);
    }
    if (r->err || !qp_walk(r, c, qp, st.state, &st.attr)) {
        return false;
    }
    if (st.hold) {
        pvrdma_qp_hold(c, qp, st.hold == UINT64_MAX ? INT64_MAX :
                       c->ops->now_ms(c->opaque) + (int64_t)st.hold);
    }
    qp->sq_failed = st.sq_failed != 0;
    qp->comm_est = st.comm_est != 0;
    qp->events = st.events;
    if (version >= 2 && !load_transport(r, c, qp)) {
        return false;
    }
    pvrdma_qp_schedule(c, qp);
    return true;
}

static bool load_cursor(MigReader *r, PvrdmaTable *t, const char *what)
{
    uint32_t v = get32(r);

    if (!r->err && (v < t->first || v >= t->size)) {
        return mig_fail(r, "%s cursor %u out of range", what, v);
    }
    if (!r->err) {
        t->next = v;
    }
    return !r->err;
}

/* An active device's command slots, UAR page and DSR rings */
static bool load_dsr(MigReader *r, PvrdmaCore *c, uint8_t port_down)
{
    g_autofree uint64_t *ap = NULL, *cp = NULL;
    uint32_t anp, cnp, apriv, cpriv;

    c->cmd_gpa = get64(r);
    c->resp_gpa = get64(r);
    c->uar_pfn = get64(r);
    ap = get_pages(r, PVRDMA_MAX_RING_PAGES, &anp);
    apriv = get32(r);
    cp = get_pages(r, PVRDMA_MAX_RING_PAGES, &cnp);
    cpriv = get32(r);
    if (r->err) {
        return false;
    }
    if (!c->cmd_gpa || !c->resp_gpa) {
        return mig_fail(r, "active device without command slots");
    }
    if (!pvrdma_dsr_ring_map(c, &c->async_ring, "async", ap, anp,
                             sizeof(struct pvrdma_eqe)) ||
        !pvrdma_dsr_ring_map(c, &c->cqn_ring, "cq-notify", cp, cnp,
                             sizeof(struct pvrdma_cqne))) {
        return mig_fail(r, "DSR rings unusable");
    }
    if (!ring_index(r, &c->async_ring, apriv, "async ring", 0) ||
        !ring_index(r, &c->cqn_ring, cpriv, "CQ notification ring", 0)) {
        return false;
    }
    c->async_ring.priv = apriv;
    c->cqn_ring.priv = cpriv;
    c->active = true;
    c->port_down = port_down != 0;
    return true;
}

/* The registers and, on an active device, the DSR copy */
static bool load_regs(MigReader *r, PvrdmaCore *c)
{
    uint64_t dsr_gpa;
    uint32_t err, icr, imr, dev_version;
    uint8_t dsr_set, active, port_down;

    dsr_gpa = get64(r);
    err = get32(r);
    icr = get32(r);
    imr = get32(r);
    dsr_set = get8(r);
    active = get8(r);
    port_down = get8(r);
    dev_version = get32(r);
    c->guest_errors = get64(r);
    c->commands = get64(r);
    c->doorbells = get64(r);
    if (r->err) {
        return false;
    }
    if (active && (!dsr_set || dev_version < PVRDMA_ROCEV1_VERSION ||
                   dev_version > c->lim.version)) {
        return mig_fail(r, "active device with DSR %u, version %u", dsr_set,
                        dev_version);
    }
    c->dsr_gpa = dsr_gpa;
    c->err = err;
    c->icr = icr;
    c->imr = imr;
    c->dsr_set = dsr_set != 0;
    c->version = active ? dev_version : 0;
    if (active) {
        return load_dsr(r, c, port_down);
    }
    return true;
}

static bool load_all(MigReader *r, PvrdmaCore *c)
{
    uint32_t magic = get32(r), version = get32(r), n;

    if (r->err || magic != PVRDMA_MIG_MAGIC) {
        return mig_fail(r, "not a pvrdma state");
    }
    if (version < 1 || version > PVRDMA_MIG_VERSION) {
        return mig_fail(r, "state version %u (this QEMU reads 1 to %u)",
                        version, PVRDMA_MIG_VERSION);
    }
    if (!pvrdma_mig_load_limits(r, &c->lim)) {
        return false;
    }
    if (!load_regs(r, c)) {
        return false;
    }
    if (!load_gids(r, c) || !load_ucs(r, c) || !load_pds(r, c) ||
        !load_cqs(r, c) || !load_mrs(r, c) || !load_srqs(r, c)) {
        return false;
    }
    n = get32(r);
    if (!r->err && n && !c->active) {
        return mig_fail(r, "QPs on a device that is not active");
    }
    for (uint32_t i = 0; i < n && !r->err; i++) {
        if (!load_qp(r, c, version)) {
            return false;
        }
    }
    if (!load_cursor(r, &c->pd, "PD") || !load_cursor(r, &c->mr, "MR") ||
        !load_cursor(r, &c->cq, "CQ") || !load_cursor(r, &c->qp, "QP") ||
        !load_cursor(r, &c->srq, "SRQ")) {
        return false;
    }
    if (get32(r) != PVRDMA_MIG_END || r->left) {
        return mig_fail(r, "stream does not end where the state does");
    }
    return !r->err;
}

bool pvrdma_core_load(PvrdmaCore *c, const uint8_t *data, size_t len,
                      char **err)
{
    MigReader r = { .p = data, .left = len };
    int64_t t0 G_GNUC_UNUSED = g_get_monotonic_time();
    bool ok;

    pvrdma_core_reset(c);
    c->restoring = true;
    ok = load_all(&r, c);
    c->restoring = false;
    c->restore_pages = NULL;
    if (!ok) {
        if (!r.err) {
            r.err = g_strdup("stream truncated");
        }
        pvrdma_core_reset(c);
        *err = r.err;
        return false;
    }
    trace_pvrdma_state_loaded(c->qp.used, c->mr.used, (uint64_t)len,
                              g_get_monotonic_time() - t0);
    return true;
}
