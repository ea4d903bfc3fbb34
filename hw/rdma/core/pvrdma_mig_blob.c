/*
 * pvrdma: the core's image (include/hw/rdma/pvrdma_mig.h) as the one
 * opaque field of older builds (stream version PVRDMA_MIG_VERSION 2):
 * little-endian records in a fixed order.  The device writes it only with
 * x-state-blob=on, to migrate to such a build, and reads it from one; the
 * unit tests and fuzzers use it as a compact image.  The parse bounds every
 * count by what is left of the stream; the load (pvrdma_mig_load.c)
 * checks the values.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_mig.h"
#include "hw/rdma/pvrdma_transport_calls.h"
#include "pvrdma_int.h"

typedef PvrdmaMigReader MigReader;
#define put8 pvrdma_mig_put8
#define put32 pvrdma_mig_put32
#define put64 pvrdma_mig_put64
#define get8 pvrdma_mig_get8
#define get32 pvrdma_mig_get32
#define get64 pvrdma_mig_get64
#define mig_fail pvrdma_mig_fail
#define take pvrdma_mig_take

/* ------------------------------------------------------------------ */
/* Save                                                                */

/* An object's pages, from the image's pool: their count, then each */
static void put_pages(GByteArray *b, const PvrdmaMigImage *m, uint32_t page0,
                      uint32_t n)
{
    put32(b, n);
    for (uint32_t i = 0; i < n; i++) {
        put64(b, m->pages[page0 + i]);
    }
}

/*
 * A QP record with its send slots and transport record (*slot, *tp: the
 * image's next ones)
 */
static void put_qp(GByteArray *b, const PvrdmaMigImage *img,
                   const PvrdmaMigQP *m, int32_t *slot, int32_t *tp)
{
    put32(b, m->handle);
    put8(b, m->type);
    put8(b, m->is_srq);
    put8(b, m->sq_sig_all);
    put32(b, m->pd);
    put32(b, m->scq);
    put32(b, m->rcq);
    put32(b, m->srq);
    put32(b, m->max_send_wr);
    put32(b, m->max_recv_wr);
    put32(b, m->max_send_sge);
    put32(b, m->max_recv_sge);
    put32(b, m->send_chunks);
    put_pages(b, img, m->page0, m->npages);
    put8(b, m->state);
    g_byte_array_append(b, m->attr, sizeof(m->attr));
    put32(b, m->sq_priv);
    put32(b, m->sq_head);
    put32(b, m->rq_priv);
    put8(b, m->sq_failed);
    put8(b, m->comm_est);
    put32(b, m->events);
    put64(b, m->hold);
    put32(b, m->nslots);
    for (uint32_t i = 0; i < m->nslots; i++) {
        const PvrdmaMigSlot *s = &img->slots[(*slot)++];

        put64(b, s->wr_id);
        put32(b, s->opcode);
        put32(b, s->byte_len);
        put32(b, s->status);
        put8(b, s->signaled);
        put8(b, s->held);
    }
    put8(b, m->has_tp);
    if (m->has_tp) {
        const PvrdmaMigTp *t = &img->tp[(*tp)++];
        size_t n = strnlen((const char *)t->name, sizeof(t->name));

        put32(b, n);
        g_byte_array_append(b, t->name, n);
        put32(b, t->len);
        g_byte_array_append(b, t->state, t->len);
    }
}

static void put_regs(GByteArray *b, const PvrdmaMigImage *m)
{
    put64(b, m->dsr_gpa);
    put32(b, m->err);
    put32(b, m->icr);
    put32(b, m->imr);
    put8(b, m->dsr_set);
    put8(b, m->active);
    put8(b, m->port_down);
    put32(b, m->version);
    put64(b, m->guest_errors);
    put64(b, m->commands);
    put64(b, m->doorbells);
    if (m->active) {
        put64(b, m->cmd_gpa);
        put64(b, m->resp_gpa);
        put64(b, m->uar_pfn);
        put_pages(b, m, m->async_page0, m->async_npages);
        put32(b, m->async_priv);
        put_pages(b, m, m->cqn_page0, m->cqn_npages);
        put32(b, m->cqn_priv);
    }
}

static void put_objects(GByteArray *b, const PvrdmaMigImage *m)
{
    int32_t i, slot = 0, tp = 0;

    put32(b, m->ngid);
    for (i = 0; i < m->ngid; i++) {
        put8(b, m->gid[i].type);
        g_byte_array_append(b, m->gid[i].gid, 16);
    }
    put32(b, m->nuc);
    for (i = 0; i < m->nuc; i++) {
        put32(b, m->uc[i].handle);
    }
    put32(b, m->npd);
    for (i = 0; i < m->npd; i++) {
        put32(b, m->pd[i].handle);
        put32(b, m->pd[i].ctx);
    }
    put32(b, m->ncq);
    for (i = 0; i < m->ncq; i++) {
        const PvrdmaMigCQ *r = &m->cq[i];

        put32(b, r->handle);
        put32(b, r->ctx);
        put32(b, r->cqe);
        put_pages(b, m, r->page0, r->npages);
        put32(b, r->priv);
        put8(b, r->armed);
        put8(b, r->error);
    }
    put32(b, m->nmr);
    for (i = 0; i < m->nmr; i++) {
        const PvrdmaMigMR *r = &m->mr[i];

        put32(b, r->handle);
        put32(b, r->pd);
        put32(b, r->kind);
        put32(b, r->access);
        put32(b, r->key);
        put8(b, r->valid);
        put64(b, r->iova);
        put64(b, r->length);
        put32(b, r->max_pages);
        put64(b, r->page_size);
        put_pages(b, m, r->page0, r->npages);
    }
    put32(b, m->nsrq);
    for (i = 0; i < m->nsrq; i++) {
        const PvrdmaMigSRQ *r = &m->srq[i];

        put32(b, r->handle);
        put32(b, r->pd);
        put32(b, r->max_wr);
        put32(b, r->max_sge);
        put32(b, r->limit);
        put_pages(b, m, r->page0, r->npages);
        put32(b, r->priv);
    }
    put32(b, m->nqp);
    for (i = 0; i < m->nqp; i++) {
        put_qp(b, m, &m->qp[i], &slot, &tp);
    }
}

void pvrdma_core_save(PvrdmaCore *c, GByteArray *b)
{
    PvrdmaMigImage m = { 0 };

    pvrdma_mig_image_save(c, &m);
    put32(b, PVRDMA_MIG_MAGIC);
    put32(b, PVRDMA_MIG_VERSION);
    for (unsigned i = 0; i < PVRDMA_MIG_NLIMITS; i++) {
        put32(b, m.limits[i]);
    }
    put64(b, m.max_mr_size);
    put8(b, m.roce_version);
    put_regs(b, &m);
    put_objects(b, &m);
    for (unsigned i = 0; i < PVRDMA_MIG_NCURSORS; i++) {
        put32(b, m.cursor[i]);
    }
    put32(b, PVRDMA_MIG_END);
    pvrdma_mig_image_clear(&m);
}

/* ------------------------------------------------------------------ */
/* Parse                                                               */

typedef PvrdmaMigPools BlobPools;

/*
 * A count of records of at least min bytes each, bounded by what is left
 * (so that no count allocates more than the stream could fill).
 */
static int32_t get_count(MigReader *r, size_t min, const char *what)
{
    uint32_t n = get32(r);

    if (!r->err && (n > INT32_MAX || (uint64_t)n * min > r->left)) {
        mig_fail(r, "%u %s", n, what);
    }
    return r->err ? 0 : n;
}

/* A page list into the pool: *page0 its first, *n its length */
static void get_pages(MigReader *r, BlobPools *p, uint32_t *page0,
                      uint32_t *n)
{
    *n = get_count(r, 8, "pages");
    *page0 = p->pages->len;
    for (uint32_t i = 0; i < *n; i++) {
        uint64_t gpa = get64(r);

        g_array_append_val(p->pages, gpa);
    }
}

static void get_qp_transport(MigReader *r, BlobPools *p, PvrdmaMigQP *m)
{
    PvrdmaMigTp t = { .qp = m->handle };
    uint32_t n;

    m->has_tp = get8(r);
    if (m->has_tp != 1) {
        if (m->has_tp) {
            mig_fail(r, "QP %u: bad transport record", m->handle);
        }
        return;
    }
    n = get32(r);
    if (!r->err && (!n || n > PVRDMA_MIG_TP_NAME_MAX)) {
        mig_fail(r, "QP %u: transport name of %u bytes", m->handle, n);
        return;
    }
    take(r, t.name, n);
    t.len = get_count(r, 1, "bytes of transport state");
    t.state = g_malloc(t.len);
    take(r, t.state, t.len);
    g_array_append_val(p->tp, t);
}

static void get_qp(MigReader *r, BlobPools *p, PvrdmaMigQP *m,
                   uint32_t version)
{
    m->handle = get32(r);
    m->type = get8(r);
    m->is_srq = get8(r);
    m->sq_sig_all = get8(r);
    m->pd = get32(r);
    m->scq = get32(r);
    m->rcq = get32(r);
    m->srq = get32(r);
    m->max_send_wr = get32(r);
    m->max_recv_wr = get32(r);
    m->max_send_sge = get32(r);
    m->max_recv_sge = get32(r);
    m->send_chunks = get32(r);
    get_pages(r, p, &m->page0, &m->npages);
    m->state = get8(r);
    take(r, m->attr, sizeof(m->attr));
    m->sq_priv = get32(r);
    m->sq_head = get32(r);
    m->rq_priv = get32(r);
    m->sq_failed = get8(r);
    m->comm_est = get8(r);
    m->events = get32(r);
    m->hold = get64(r);
    m->nslots = get_count(r, 22, "send slots");
    for (uint32_t i = 0; i < m->nslots; i++) {
        PvrdmaMigSlot s = { .qp = m->handle };

        s.wr_id = get64(r);
        s.opcode = get32(r);
        s.byte_len = get32(r);
        s.status = get32(r);
        s.signaled = get8(r);
        s.held = get8(r);
        g_array_append_val(p->slots, s);
    }
    if (version >= 2) {
        /* version 1 had no transport record: "none" */
        get_qp_transport(r, p, m);
    }
}

static void get_regs(MigReader *r, BlobPools *p, PvrdmaMigImage *m)
{
    m->dsr_gpa = get64(r);
    m->err = get32(r);
    m->icr = get32(r);
    m->imr = get32(r);
    m->dsr_set = get8(r);
    m->active = get8(r);
    m->port_down = get8(r);
    m->version = get32(r);
    m->guest_errors = get64(r);
    m->commands = get64(r);
    m->doorbells = get64(r);
    if (m->active) {
        m->cmd_gpa = get64(r);
        m->resp_gpa = get64(r);
        m->uar_pfn = get64(r);
        get_pages(r, p, &m->async_page0, &m->async_npages);
        m->async_priv = get32(r);
        get_pages(r, p, &m->cqn_page0, &m->cqn_npages);
        m->cqn_priv = get32(r);
    }
}

static void get_objects(MigReader *r, BlobPools *p, PvrdmaMigImage *m,
                        uint32_t version)
{
    int32_t i;

    m->ngid = get_count(r, 17, "GIDs");
    m->gid = g_new0(PvrdmaMigGid, m->ngid);
    for (i = 0; i < m->ngid; i++) {
        m->gid[i].type = get8(r);
        take(r, m->gid[i].gid, 16);
    }
    m->nuc = get_count(r, 4, "contexts");
    m->uc = g_new0(PvrdmaMigHandle, m->nuc);
    for (i = 0; i < m->nuc; i++) {
        m->uc[i].handle = get32(r);
    }
    m->npd = get_count(r, 8, "PDs");
    m->pd = g_new0(PvrdmaMigPD, m->npd);
    for (i = 0; i < m->npd; i++) {
        m->pd[i].handle = get32(r);
        m->pd[i].ctx = get32(r);
    }
    m->ncq = get_count(r, 22, "CQs");
    m->cq = g_new0(PvrdmaMigCQ, m->ncq);
    for (i = 0; i < m->ncq; i++) {
        PvrdmaMigCQ *q = &m->cq[i];

        q->handle = get32(r);
        q->ctx = get32(r);
        q->cqe = get32(r);
        get_pages(r, p, &q->page0, &q->npages);
        q->priv = get32(r);
        q->armed = get8(r);
        q->error = get8(r);
    }
    m->nmr = get_count(r, 49, "MRs");
    m->mr = g_new0(PvrdmaMigMR, m->nmr);
    for (i = 0; i < m->nmr; i++) {
        PvrdmaMigMR *q = &m->mr[i];

        q->handle = get32(r);
        q->pd = get32(r);
        q->kind = get32(r);
        q->access = get32(r);
        q->key = get32(r);
        q->valid = get8(r);
        q->iova = get64(r);
        q->length = get64(r);
        q->max_pages = get32(r);
        q->page_size = get64(r);
        get_pages(r, p, &q->page0, &q->npages);
    }
    m->nsrq = get_count(r, 28, "SRQs");
    m->srq = g_new0(PvrdmaMigSRQ, m->nsrq);
    for (i = 0; i < m->nsrq; i++) {
        PvrdmaMigSRQ *q = &m->srq[i];

        q->handle = get32(r);
        q->pd = get32(r);
        q->max_wr = get32(r);
        q->max_sge = get32(r);
        q->limit = get32(r);
        get_pages(r, p, &q->page0, &q->npages);
        q->priv = get32(r);
    }
    m->nqp = get_count(r, 64, "QPs");
    m->qp = g_new0(PvrdmaMigQP, m->nqp);
    for (i = 0; i < m->nqp && !r->err; i++) {
        get_qp(r, p, &m->qp[i], version);
    }
}

/* After the magic and version: every record */
static void get_records(MigReader *r, BlobPools *p, PvrdmaMigImage *m,
                        uint32_t version)
{
    m->magic = PVRDMA_MIG_IMAGE_MAGIC;
    for (unsigned i = 0; i < PVRDMA_MIG_NLIMITS; i++) {
        m->limits[i] = get32(r);
    }
    m->max_mr_size = get64(r);
    m->roce_version = get8(r);
    get_regs(r, p, m);
    get_objects(r, p, m, version);
    for (unsigned i = 0; i < PVRDMA_MIG_NCURSORS; i++) {
        m->cursor[i] = get32(r);
    }
    if (get32(r) != PVRDMA_MIG_END || r->left) {
        mig_fail(r, "stream does not end where the state does");
    }
}

static bool get_image(MigReader *r, PvrdmaMigImage *m)
{
    uint32_t magic = get32(r), version = get32(r);
    BlobPools p;

    pvrdma_mig_pools_init(&p);
    if (r->err || magic != PVRDMA_MIG_MAGIC) {
        mig_fail(r, "not a pvrdma state");
    } else if (version < 1 || version > PVRDMA_MIG_VERSION) {
        mig_fail(r, "state version %u (this QEMU reads 1 to %u)", version,
                 PVRDMA_MIG_VERSION);
    } else {
        get_records(r, &p, m, version);
    }
    /* the pools are the image's, freed with it, even on a failure */
    pvrdma_mig_pools_give(&p, m);
    return !r->err;
}

bool pvrdma_core_load(PvrdmaCore *c, const uint8_t *data, size_t len,
                      Error **errp)
{
    MigReader r = { .p = data, .left = len };
    PvrdmaMigImage m = { 0 };
    bool ok;

    if (!get_image(&r, &m)) {
        pvrdma_mig_image_clear(&m);
        pvrdma_core_reset(c);
        error_setg(errp, "%s", r.err ? r.err : "stream truncated");
        g_free(r.err);
        return false;
    }
    ok = pvrdma_mig_image_load(c, &m, errp);
    pvrdma_mig_image_clear(&m);
    return ok;
}
