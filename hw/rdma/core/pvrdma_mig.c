/*
 * pvrdma: the device's state for migration and snapshots.
 *
 * Saved: registers, the DSR copy (command/response slots, UAR page, the
 * async and CQ notification rings by their guest pages), the GID table,
 * and every object with what the guest gave to create it: contexts, PDs,
 * CQs, MRs, SRQs, QPs (attributes, state), ring pages as guest addresses
 * (never host pointers), the device's ring indices, armed CQs, and the
 * send slots of WQEs executed but not yet completed (a completion held
 * for the requester's retry time, with the time it has left).
 *
 * Saved into a PvrdmaMigImage (include/hw/rdma/pvrdma_mig.h), which the
 * QOM glue migrates as VMState, or pvrdma_mig_blob.c as the older builds'
 * one field; loaded by replay from the image (pvrdma_mig_load.c).
 *
 * Only QPs whose transport keeps no state of its own (PVRDMA_TP_STATELESS:
 * loopback), whose transport pauses its peers while the VM is saved
 * (quiesce: co-resident) or that have no transport yet (RESET, INIT, UD,
 * GSI) can move: pvrdma_core_migration_blocker() says which QP holds a
 * migration back.  pvrdma_core_quiesce() runs before the save: afterwards
 * nothing is in flight, and resume or moved follows.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_mig.h"
#include "hw/rdma/pvrdma_transport_calls.h"
#include "pvrdma_int.h"

/* ------------------------------------------------------------------ */
/* What may move                                                       */

char *pvrdma_core_migration_blocker(PvrdmaCore *c, bool saving)
{
    uint32_t h;

    if (c->owner) {
        return g_strdup_printf("its objects live on the host RDMA device "
                               "(ibdev=): the guest holds that device's QP "
                               "numbers and keys, which no other device "
                               "can give back");
    }
    for (h = 0; h < c->qp.size; h++) {
        PvrdmaQP *qp = c->qp.slot[h];

        if (!qp) {
            continue;
        }
        if (qp->tp && !pvrdma_transport_migrates(qp->tp)) {
            return g_strdup_printf("QP %u is connected over the %s transport, "
                                   "whose connection state does not "
                                   "migrate yet", qp->qpn,
                                   pvrdma_transport_name(qp->tp));
        }
        for (uint32_t i = qp->sq.priv; saving && i != qp->sq_head;
             i = pvrdma_idx_next(i, qp->sq.nelems)) {
            const PvrdmaSendSlot *s = pvrdma_send_slot(qp, i);

            if (!s->done || s->redo) {
                return g_strdup_printf("QP %u has a request in flight in a "
                                       "transport", qp->qpn);
            }
        }
    }
    return NULL;
}

static void ring_pages(const PvrdmaRing *r,
                       void (*fn)(void *, uint64_t, uint64_t), void *opaque)
{
    for (uint32_t i = 0; r->gpa && i < r->npages; i++) {
        fn(opaque, r->gpa[i], PVRDMA_PAGE_SIZE);
    }
}

void pvrdma_core_ring_pages(PvrdmaCore *c,
                            void (*fn)(void *opaque, uint64_t gpa,
                                       uint64_t len),
                            void *opaque)
{
    uint32_t h;

    ring_pages(&c->async_ring, fn, opaque);
    ring_pages(&c->cqn_ring, fn, opaque);
    for (h = 0; h < c->cq.size; h++) {
        if (c->cq.slot[h]) {
            ring_pages(&((PvrdmaCQ *)c->cq.slot[h])->ring, fn, opaque);
        }
    }
    for (h = 0; h < c->srq.size; h++) {
        if (c->srq.slot[h]) {
            ring_pages(&((PvrdmaSRQ *)c->srq.slot[h])->ring, fn, opaque);
        }
    }
    for (h = 0; h < c->qp.size; h++) {
        PvrdmaQP *qp = c->qp.slot[h];

        if (qp) {
            ring_pages(qp->is_srq ? &qp->sq : &qp->rq, fn, opaque);
        }
    }
}

/* The 32-bit limits in stream order (the load names the one that differs) */
const PvrdmaMigLimit pvrdma_mig_limits[PVRDMA_MIG_NLIMITS] = {
    { "max-qp", offsetof(PvrdmaLimits, max_qp) },
    { "max-qp-wr", offsetof(PvrdmaLimits, max_qp_wr) },
    { "max-sge", offsetof(PvrdmaLimits, max_sge) },
    { "max-cq", offsetof(PvrdmaLimits, max_cq) },
    { "max-cqe", offsetof(PvrdmaLimits, max_cqe) },
    { "max-mr", offsetof(PvrdmaLimits, max_mr) },
    { "max-pd", offsetof(PvrdmaLimits, max_pd) },
    { "max-ah", offsetof(PvrdmaLimits, max_ah) },
    { "max-srq", offsetof(PvrdmaLimits, max_srq) },
    { "max-srq-wr", offsetof(PvrdmaLimits, max_srq_wr) },
    { "max-srq-sge", offsetof(PvrdmaLimits, max_srq_sge) },
    { "max-uar", offsetof(PvrdmaLimits, max_uar) },
    { "gid-table-len", offsetof(PvrdmaLimits, gid_tbl_len) },
    { "max-rd-atomic", offsetof(PvrdmaLimits, max_qp_rd_atom) },
};

uint32_t pvrdma_mig_limit(const PvrdmaLimits *l, unsigned i)
{
    return *(const uint32_t *)((const uint8_t *)l + pvrdma_mig_limits[i].off);
}

/*
 * A held completion (PvrdmaQP.hold_until) as the time left: 0 none,
 * UINT64_MAX never, else at least 1 ms.
 */
static uint64_t hold_left(const PvrdmaQP *qp, int64_t now)
{
    if (!qp->hold_until || qp->hold_until == INT64_MAX) {
        return qp->hold_until ? UINT64_MAX : 0;
    }
    return MAX(qp->hold_until - now, 1);
}

typedef PvrdmaMigPools MigPools;

void pvrdma_mig_pools_init(MigPools *p)
{
    p->pages = g_array_new(false, false, sizeof(uint64_t));
    p->slots = g_array_new(false, false, sizeof(PvrdmaMigSlot));
    p->tp = g_array_new(false, false, sizeof(PvrdmaMigTp));
}

void pvrdma_mig_pools_give(MigPools *p, PvrdmaMigImage *m)
{
    m->npages = p->pages->len;
    m->pages = (uint64_t *)g_array_free(p->pages, !m->npages);
    m->nslots = p->slots->len;
    m->slots = (PvrdmaMigSlot *)g_array_free(p->slots, !m->nslots);
    m->ntp = p->tp->len;
    m->tp = (PvrdmaMigTp *)g_array_free(p->tp, !m->ntp);
    *p = (MigPools) { 0 };
}

/* n pages appended to the pool: their first index */
static uint32_t save_pages(MigPools *p, const uint64_t *gpa, uint32_t n)
{
    uint32_t first = p->pages->len;

    if (gpa && n) {
        g_array_append_vals(p->pages, gpa, n);
    }
    return first;
}

/* the connection state of its transport, if that one hands it over */
static bool save_qp_transport(MigPools *p, PvrdmaQP *qp)
{
    g_autoptr(GByteArray) st = NULL;
    PvrdmaMigTp tp = { .qp = qp->handle };

    if (!qp->tp || qp->type != PVRDMA_QPT_RC ||
        qp->state < PVRDMA_QPS_RTR || qp->state > PVRDMA_QPS_SQD) {
        return false;
    }
    st = g_byte_array_new();
    if (!pvrdma_transport_qp_save(qp->tp, qp, st)) {
        return false;
    }
    g_strlcpy((char *)tp.name, pvrdma_transport_name(qp->tp),
              sizeof(tp.name));
    tp.len = st->len;
    tp.state = g_memdup2(st->data, st->len);
    g_array_append_val(p->tp, tp);
    return true;
}

static void save_qp(MigPools *p, PvrdmaMigQP *m, PvrdmaQP *qp, int64_t now)
{
    const PvrdmaRing *pages = qp->is_srq ? &qp->sq : &qp->rq;

    m->handle = qp->handle;
    m->type = qp->type;
    m->is_srq = qp->is_srq;
    m->sq_sig_all = qp->sq_sig_all;
    m->pd = qp->pd;
    m->scq = qp->scq;
    m->rcq = qp->rcq;
    m->srq = qp->srq;
    m->max_send_wr = qp->max_send_wr;
    m->max_recv_wr = qp->max_recv_wr;
    m->max_send_sge = qp->max_send_sge;
    m->max_recv_sge = qp->max_recv_sge;
    m->send_chunks = qp->sq.npages - 1;
    m->npages = pages->npages;                  /* every page of the QP */
    m->page0 = save_pages(p, pages->gpa, pages->npages);
    m->state = qp->state;
    memcpy(m->attr, &qp->attr, sizeof(m->attr));
    m->sq_priv = qp->sq.priv;
    m->sq_head = qp->sq_head;
    m->rq_priv = qp->rq.priv;
    m->sq_failed = qp->sq_failed;
    m->comm_est = qp->comm_est;
    m->events = qp->events;
    m->hold = hold_left(qp, now);
    m->nslots = pvrdma_idx_used(qp->sq_head, qp->sq.priv, qp->sq.nelems);
    for (uint32_t i = qp->sq.priv; i != qp->sq_head;
         i = pvrdma_idx_next(i, qp->sq.nelems)) {
        const PvrdmaSendSlot *s = pvrdma_send_slot(qp, i);
        PvrdmaMigSlot slot = {
            qp->handle, s->wr_id, s->opcode, s->byte_len, s->status,
            s->signaled, s->held
        };

        g_array_append_val(p->slots, slot);
    }
    m->has_tp = save_qp_transport(p, qp);
}

/* The registers and, on an active device, the DSR copy */
static void save_regs(MigPools *p, PvrdmaMigImage *m, PvrdmaCore *c)
{
    m->dsr_gpa = c->dsr_gpa;
    m->err = c->err;
    m->icr = c->icr;
    m->imr = c->imr;
    m->dsr_set = c->dsr_set;
    m->active = c->active;
    m->port_down = c->port_down;
    m->version = c->version;
    m->guest_errors = c->guest_errors;
    m->commands = c->commands;
    m->doorbells = c->doorbells;
    if (c->active) {
        m->cmd_gpa = c->cmd_gpa;
        m->resp_gpa = c->resp_gpa;
        m->uar_pfn = c->uar_pfn;
        m->async_npages = c->async_ring.npages;
        m->async_page0 = save_pages(p, c->async_ring.gpa, m->async_npages);
        m->async_priv = c->async_ring.priv;
        m->cqn_npages = c->cqn_ring.npages;
        m->cqn_page0 = save_pages(p, c->cqn_ring.gpa, m->cqn_npages);
        m->cqn_priv = c->cqn_ring.priv;
    }
}

static void save_queues(MigPools *p, PvrdmaMigImage *m, PvrdmaCore *c)
{
    uint32_t h;

    m->cq = g_new0(PvrdmaMigCQ, c->cq.used);
    for (h = 0; h < c->cq.size; h++) {
        PvrdmaCQ *cq = c->cq.slot[h];

        if (cq) {
            m->cq[m->ncq++] = (PvrdmaMigCQ) {
                .handle = h, .ctx = cq->ctx, .cqe = cq->ring.nelems,
                .npages = cq->ring.npages,
                .page0 = save_pages(p, cq->ring.gpa, cq->ring.npages),
                .priv = cq->ring.priv, .armed = cq->armed,
                .error = cq->error,
            };
        }
    }
    m->srq = g_new0(PvrdmaMigSRQ, c->srq.used);
    for (h = 0; h < c->srq.size; h++) {
        PvrdmaSRQ *srq = c->srq.slot[h];

        if (srq) {
            m->srq[m->nsrq++] = (PvrdmaMigSRQ) {
                .handle = h, .pd = srq->pd, .max_wr = srq->max_wr,
                .max_sge = srq->max_sge, .limit = srq->limit,
                .npages = srq->ring.npages,
                .page0 = save_pages(p, srq->ring.gpa, srq->ring.npages),
                .priv = srq->ring.priv,
            };
        }
    }
}

static void save_objects(MigPools *p, PvrdmaMigImage *m, PvrdmaCore *c)
{
    int64_t now = c->ops->now_ms(c->opaque);
    uint32_t h;

    m->ngid = c->lim.gid_tbl_len;
    m->gid = g_new0(PvrdmaMigGid, m->ngid);
    for (h = 0; h < c->lim.gid_tbl_len; h++) {
        m->gid[h].type = c->gid[h].type;
        memcpy(m->gid[h].gid, c->gid[h].gid.raw, 16);
    }
    m->uc = g_new0(PvrdmaMigHandle, c->uc.used);
    for (h = 0; h < c->uc.size; h++) {
        if (c->uc.slot[h]) {
            m->uc[m->nuc++].handle = h;
        }
    }
    m->pd = g_new0(PvrdmaMigPD, c->pd.used);
    for (h = 0; h < c->pd.size; h++) {
        PvrdmaPD *pd = c->pd.slot[h];

        if (pd) {
            m->pd[m->npd++] = (PvrdmaMigPD) { h, pd->ctx };
        }
    }
    m->mr = g_new0(PvrdmaMigMR, c->mr.used);
    for (h = 0; h < c->mr.size; h++) {
        PvrdmaMR *mr = c->mr.slot[h];

        if (mr) {
            m->mr[m->nmr++] = (PvrdmaMigMR) {
                .handle = h, .pd = mr->pd, .kind = mr->kind,
                .access = mr->access, .key = mr->key, .valid = mr->valid,
                .iova = mr->iova, .length = mr->length,
                .max_pages = mr->max_pages, .page_size = mr->map.page_size,
                .npages = mr->map.npages,
                .page0 = save_pages(p, mr->map.gpa, mr->map.npages),
            };
        }
    }
    save_queues(p, m, c);
    m->qp = g_new0(PvrdmaMigQP, c->qp.used);
    for (h = 0; h < c->qp.size; h++) {
        if (c->qp.slot[h]) {
            save_qp(p, &m->qp[m->nqp++], c->qp.slot[h], now);
        }
    }
}

void pvrdma_mig_image_save(PvrdmaCore *c, PvrdmaMigImage *m)
{
    int64_t t0 G_GNUC_UNUSED = g_get_monotonic_time();
    MigPools p;

    pvrdma_seg_finish(c);   /* as pvrdma_core_quiesce() (a no-op after it) */
    pvrdma_mig_pools_init(&p);
    pvrdma_mig_image_clear(m);
    m->magic = PVRDMA_MIG_IMAGE_MAGIC;
    for (unsigned i = 0; i < PVRDMA_MIG_NLIMITS; i++) {
        m->limits[i] = pvrdma_mig_limit(&c->lim, i);
    }
    m->max_mr_size = c->lim.max_mr_size;
    m->roce_version = c->lim.roce_version;
    save_regs(&p, m, c);
    save_objects(&p, m, c);
    /* the next-fit cursors, so handles are not reused sooner than before */
    m->cursor[0] = c->pd.next;
    m->cursor[1] = c->mr.next;
    m->cursor[2] = c->cq.next;
    m->cursor[3] = c->qp.next;
    m->cursor[4] = c->srq.next;
    pvrdma_mig_pools_give(&p, m);
    trace_pvrdma_state_saved(c->qp.used, c->mr.used,
                             g_get_monotonic_time() - t0);
}

void pvrdma_mig_image_clear(PvrdmaMigImage *m)
{
    PvrdmaCore *core = m->core;

    for (int32_t i = 0; m->tp && i < m->ntp; i++) {
        g_free(m->tp[i].state);
    }
    g_free(m->pages);
    g_free(m->gid);
    g_free(m->uc);
    g_free(m->pd);
    g_free(m->cq);
    g_free(m->mr);
    g_free(m->srq);
    g_free(m->qp);
    g_free(m->slots);
    g_free(m->tp);
    *m = (PvrdmaMigImage) { .core = core };
}
