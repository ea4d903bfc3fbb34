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
 * Loaded by replay (pvrdma_mig_load.c), which reads the limits record
 * with pvrdma_mig_load_limits(), kept here beside the table it checks.
 *
 * Only QPs whose transport keeps no state of its own (PVRDMA_TP_STATELESS:
 * loopback), whose transport pauses its peers while the VM is saved
 * (quiesce: co-resident) or that have no transport yet (RESET, INIT, UD,
 * GSI) can move: pvrdma_core_migration_blocker() says which QP holds a
 * migration back.  pvrdma_core_quiesce() runs before the save: afterwards
 * nothing is in flight, and resume or moved follows.
 *
 * The stream is little-endian, versioned (PVRDMA_MIG_VERSION); a later
 * version may append fields to a record, never reorder them.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef PVRDMA_STANDALONE
#include "qemu/osdep.h"
#endif
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_transport_calls.h"
#include "pvrdma_int.h"

/* ------------------------------------------------------------------ */
/* The stream's primitives (pvrdma_stream.c), by short names            */

typedef PvrdmaMigReader MigReader;
#define put8 pvrdma_mig_put8
#define put32 pvrdma_mig_put32
#define put64 pvrdma_mig_put64
#define get8 pvrdma_mig_get8
#define get32 pvrdma_mig_get32
#define get64 pvrdma_mig_get64
#define mig_fail pvrdma_mig_fail

static void put_pages(GByteArray *b, const uint64_t *gpa, uint32_t n)
{
    put32(b, n);
    for (uint32_t i = 0; i < n; i++) {
        put64(b, gpa[i]);
    }
}

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

void pvrdma_core_mapped_pages(PvrdmaCore *c,
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
    for (h = 0; h < c->mr.size; h++) {
        PvrdmaMR *mr = c->mr.slot[h];

        for (uint32_t i = 0; mr && i < mr->map.npages; i++) {
            fn(opaque, mr->map.gpa[i], mr->map.page_size);
        }
    }
}

/*
 * The 32-bit limits in stream order, with the property that sets each (the
 * load names the one that differs); max_mr_size and roce_version follow.
 */
static const struct {
    const char *prop;
    size_t off;
} mig_limits[] = {
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

static uint32_t mig_limit(const PvrdmaLimits *l, unsigned i)
{
    return *(const uint32_t *)((const uint8_t *)l + mig_limits[i].off);
}

static void save_limits(GByteArray *b, const PvrdmaLimits *l)
{
    for (unsigned i = 0; i < G_N_ELEMENTS(mig_limits); i++) {
        put32(b, mig_limit(l, i));
    }
    put64(b, l->max_mr_size);
    put8(b, l->roce_version);
}

/* The limits record read back: each must be this device's. */
bool pvrdma_mig_load_limits(MigReader *r, const PvrdmaLimits *l)
{
    uint64_t mr_size;
    uint8_t roce;

    for (unsigned i = 0; i < G_N_ELEMENTS(mig_limits); i++) {
        uint32_t v = get32(r);

        if (!r->err && v != mig_limit(l, i)) {
            return mig_fail(r, "property %s is %u here, %u in the stream",
                            mig_limits[i].prop, mig_limit(l, i), v);
        }
    }
    mr_size = get64(r);
    roce = get8(r);
    if (!r->err && mr_size != l->max_mr_size) {
        return mig_fail(r, "property max-mr-size differs");
    }
    if (!r->err && roce != l->roce_version) {
        return mig_fail(r, "property roce-version is %u here, %u in the "
                        "stream", l->roce_version, roce);
    }
    return !r->err;
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

static void save_qp(GByteArray *b, PvrdmaQP *qp, int64_t now)
{
    const PvrdmaRing *pages = qp->is_srq ? &qp->sq : &qp->rq;
    uint32_t n = pvrdma_idx_used(qp->sq_head, qp->sq.priv, qp->sq.nelems);
    g_autoptr(GByteArray) st = g_byte_array_new();

    put32(b, qp->handle);
    put8(b, qp->type);
    put8(b, qp->is_srq);
    put8(b, qp->sq_sig_all);
    put32(b, qp->pd);
    put32(b, qp->scq);
    put32(b, qp->rcq);
    put32(b, qp->srq);
    put32(b, qp->max_send_wr);
    put32(b, qp->max_recv_wr);
    put32(b, qp->max_send_sge);
    put32(b, qp->max_recv_sge);
    put32(b, qp->sq.npages - 1);                /* send_chunks */
    put_pages(b, pages->gpa, pages->npages);    /* every page of the QP */
    put8(b, qp->state);
    g_byte_array_append(b, (const uint8_t *)&qp->attr, sizeof(qp->attr));
    put32(b, qp->sq.priv);
    put32(b, qp->sq_head);
    put32(b, qp->rq.priv);
    put8(b, qp->sq_failed);
    put8(b, qp->comm_est);
    put32(b, qp->events);
    put64(b, hold_left(qp, now));
    put32(b, n);
    for (uint32_t i = qp->sq.priv; i != qp->sq_head;
         i = pvrdma_idx_next(i, qp->sq.nelems)) {
        const PvrdmaSendSlot *s = pvrdma_send_slot(qp, i);

        put64(b, s->wr_id);
        put32(b, s->opcode);
        put32(b, s->byte_len);
        put32(b, s->status);
        put8(b, s->signaled);
        put8(b, s->held);
    }
    /* the connection state of its transport, if that one hands it over */
    if (qp->tp && qp->type == PVRDMA_QPT_RC &&
        qp->state >= PVRDMA_QPS_RTR && qp->state <= PVRDMA_QPS_SQD &&
        pvrdma_transport_qp_save(qp->tp, qp, st)) {
        const char *name = pvrdma_transport_name(qp->tp);

        put8(b, 1);
        put32(b, strlen(name));
        g_byte_array_append(b, (const uint8_t *)name, strlen(name));
        put32(b, st->len);
        g_byte_array_append(b, st->data, st->len);
    } else {
        put8(b, 0);
    }
}

/* The registers and, on an active device, the DSR copy */
static void save_regs(GByteArray *b, PvrdmaCore *c)
{
    put64(b, c->dsr_gpa);
    put32(b, c->err);
    put32(b, c->icr);
    put32(b, c->imr);
    put8(b, c->dsr_set);
    put8(b, c->active);
    put8(b, c->port_down);
    put32(b, c->version);
    put64(b, c->guest_errors);
    put64(b, c->commands);
    put64(b, c->doorbells);
    if (c->active) {
        put64(b, c->cmd_gpa);
        put64(b, c->resp_gpa);
        put64(b, c->uar_pfn);
        put_pages(b, c->async_ring.gpa, c->async_ring.npages);
        put32(b, c->async_ring.priv);
        put_pages(b, c->cqn_ring.gpa, c->cqn_ring.npages);
        put32(b, c->cqn_ring.priv);
    }
}

static void save_gids(GByteArray *b, PvrdmaCore *c)
{
    put32(b, c->lim.gid_tbl_len);
    for (uint32_t h = 0; h < c->lim.gid_tbl_len; h++) {
        put8(b, c->gid[h].type);
        g_byte_array_append(b, c->gid[h].gid.raw, 16);
    }
}

static void save_ucs(GByteArray *b, PvrdmaCore *c)
{
    put32(b, c->uc.used);
    for (uint32_t h = 0; h < c->uc.size; h++) {
        if (c->uc.slot[h]) {
            put32(b, h);
        }
    }
}

static void save_pds(GByteArray *b, PvrdmaCore *c)
{
    put32(b, c->pd.used);
    for (uint32_t h = 0; h < c->pd.size; h++) {
        PvrdmaPD *pd = c->pd.slot[h];

        if (pd) {
            put32(b, h);
            put32(b, pd->ctx);
        }
    }
}

static void save_cqs(GByteArray *b, PvrdmaCore *c)
{
    put32(b, c->cq.used);
    for (uint32_t h = 0; h < c->cq.size; h++) {
        PvrdmaCQ *cq = c->cq.slot[h];

        if (cq) {
            put32(b, h);
            put32(b, cq->ctx);
            put32(b, cq->ring.nelems);
            put_pages(b, cq->ring.gpa, cq->ring.npages);
            put32(b, cq->ring.priv);
            put8(b, cq->armed);
            put8(b, cq->error);
        }
    }
}

static void save_mrs(GByteArray *b, PvrdmaCore *c)
{
    put32(b, c->mr.used);
    for (uint32_t h = 0; h < c->mr.size; h++) {
        PvrdmaMR *mr = c->mr.slot[h];

        if (mr) {
            put32(b, h);
            put32(b, mr->pd);
            put32(b, mr->kind);
            put32(b, mr->access);
            put32(b, mr->key);
            put8(b, mr->valid);
            put64(b, mr->iova);
            put64(b, mr->length);
            put32(b, mr->max_pages);
            put64(b, mr->map.page_size);
            put32(b, mr->map.npages);
            for (uint32_t i = 0; i < mr->map.npages; i++) {
                put64(b, mr->map.gpa[i]);
            }
        }
    }
}

static void save_srqs(GByteArray *b, PvrdmaCore *c)
{
    put32(b, c->srq.used);
    for (uint32_t h = 0; h < c->srq.size; h++) {
        PvrdmaSRQ *srq = c->srq.slot[h];

        if (srq) {
            put32(b, h);
            put32(b, srq->pd);
            put32(b, srq->max_wr);
            put32(b, srq->max_sge);
            put32(b, srq->limit);
            put_pages(b, srq->ring.gpa, srq->ring.npages);
            put32(b, srq->ring.priv);
        }
    }
}

void pvrdma_core_save(PvrdmaCore *c, GByteArray *b)
{
    int64_t t0 G_GNUC_UNUSED = g_get_monotonic_time();
    guint start G_GNUC_UNUSED = b->len;
    uint32_t h;

    put32(b, PVRDMA_MIG_MAGIC);
    put32(b, PVRDMA_MIG_VERSION);
    save_limits(b, &c->lim);
    save_regs(b, c);
    save_gids(b, c);
    save_ucs(b, c);
    save_pds(b, c);
    save_cqs(b, c);
    save_mrs(b, c);
    save_srqs(b, c);
    put32(b, c->qp.used);
    for (h = 0; h < c->qp.size; h++) {
        if (c->qp.slot[h]) {
            save_qp(b, c->qp.slot[h], c->ops->now_ms(c->opaque));
        }
    }
    /* the next-fit cursors, so handles are not reused sooner than before */
    put32(b, c->pd.next);
    put32(b, c->mr.next);
    put32(b, c->cq.next);
    put32(b, c->qp.next);
    put32(b, c->srq.next);
    put32(b, PVRDMA_MIG_END);
    trace_pvrdma_state_saved(c->qp.used, c->mr.used, b->len - start,
                             g_get_monotonic_time() - t0);
}
