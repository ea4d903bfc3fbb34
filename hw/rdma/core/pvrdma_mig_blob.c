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
#ifndef PVRDMA_STANDALONE
#include "qemu/osdep.h"
#endif
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

static void put_pages(GByteArray *b, const uint64_t *gpa, uint32_t n)
{
    put32(b, n);
    for (uint32_t i = 0; i < n; i++) {
        put64(b, gpa[i]);
    }
}

static void put_ring(GByteArray *b, const PvrdmaMigRing *r)
{
    put_pages(b, r->pages, r->npages);
    put32(b, r->priv);
}

static void put_qp(GByteArray *b, const PvrdmaMigQP *m)
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
    put_pages(b, m->pages, m->npages);
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
    for (int32_t i = 0; i < m->nslots; i++) {
        const PvrdmaMigSlot *s = &m->slots[i];

        put64(b, s->wr_id);
        put32(b, s->opcode);
        put32(b, s->byte_len);
        put32(b, s->status);
        put8(b, s->signaled);
        put8(b, s->held);
    }
    put8(b, m->has_tp);
    if (m->has_tp) {
        size_t n = strnlen((const char *)m->tp_name, sizeof(m->tp_name));

        put32(b, n);
        g_byte_array_append(b, m->tp_name, n);
        put32(b, m->tp_len);
        g_byte_array_append(b, m->tp_state, m->tp_len);
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
        put_ring(b, &m->async);
        put_ring(b, &m->cqn);
    }
}

static void put_objects(GByteArray *b, const PvrdmaMigImage *m)
{
    int32_t i;

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
        put_ring(b, &r->ring);
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
        put_pages(b, r->pages, r->npages);
    }
    put32(b, m->nsrq);
    for (i = 0; i < m->nsrq; i++) {
        const PvrdmaMigSRQ *r = &m->srq[i];

        put32(b, r->handle);
        put32(b, r->pd);
        put32(b, r->max_wr);
        put32(b, r->max_sge);
        put32(b, r->limit);
        put_ring(b, &r->ring);
    }
    put32(b, m->nqp);
    for (i = 0; i < m->nqp; i++) {
        put_qp(b, &m->qp[i]);
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

static uint64_t *get_pages(MigReader *r, uint32_t *n)
{
    uint64_t *pages;

    *n = get_count(r, 8, "pages");
    pages = *n ? g_new(uint64_t, *n) : NULL;
    for (uint32_t i = 0; i < *n; i++) {
        pages[i] = get64(r);
    }
    return pages;
}

static void get_ring(MigReader *r, PvrdmaMigRing *ring)
{
    ring->pages = get_pages(r, &ring->npages);
    ring->priv = get32(r);
}

static void get_qp_transport(MigReader *r, PvrdmaMigQP *m)
{
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
    take(r, m->tp_name, n);
    m->tp_len = get_count(r, 1, "bytes of transport state");
    m->tp_state = g_malloc(m->tp_len);
    take(r, m->tp_state, m->tp_len);
}

static void get_qp(MigReader *r, PvrdmaMigQP *m, uint32_t version)
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
    m->pages = get_pages(r, &m->npages);
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
    m->slots = g_new0(PvrdmaMigSlot, m->nslots);
    for (int32_t i = 0; i < m->nslots; i++) {
        PvrdmaMigSlot *s = &m->slots[i];

        s->wr_id = get64(r);
        s->opcode = get32(r);
        s->byte_len = get32(r);
        s->status = get32(r);
        s->signaled = get8(r);
        s->held = get8(r);
    }
    if (version >= 2) {
        /* version 1 had no transport record: "none" */
        get_qp_transport(r, m);
    }
}

static void get_regs(MigReader *r, PvrdmaMigImage *m)
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
        get_ring(r, &m->async);
        get_ring(r, &m->cqn);
    }
}

static void get_objects(MigReader *r, PvrdmaMigImage *m, uint32_t version)
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
        get_ring(r, &q->ring);
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
        q->pages = get_pages(r, &q->npages);
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
        get_ring(r, &q->ring);
    }
    m->nqp = get_count(r, 64, "QPs");
    m->qp = g_new0(PvrdmaMigQP, m->nqp);
    for (i = 0; i < m->nqp && !r->err; i++) {
        get_qp(r, &m->qp[i], version);
    }
}

static bool get_image(MigReader *r, PvrdmaMigImage *m)
{
    uint32_t magic = get32(r), version = get32(r);

    if (r->err || magic != PVRDMA_MIG_MAGIC) {
        return mig_fail(r, "not a pvrdma state");
    }
    if (version < 1 || version > PVRDMA_MIG_VERSION) {
        return mig_fail(r, "state version %u (this QEMU reads 1 to %u)",
                        version, PVRDMA_MIG_VERSION);
    }
    m->magic = PVRDMA_MIG_IMAGE_MAGIC;
    for (unsigned i = 0; i < PVRDMA_MIG_NLIMITS; i++) {
        m->limits[i] = get32(r);
    }
    m->max_mr_size = get64(r);
    m->roce_version = get8(r);
    get_regs(r, m);
    get_objects(r, m, version);
    for (unsigned i = 0; i < PVRDMA_MIG_NCURSORS; i++) {
        m->cursor[i] = get32(r);
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
    PvrdmaMigImage m = { 0 };
    bool ok;

    if (!get_image(&r, &m)) {
        pvrdma_mig_image_clear(&m);
        pvrdma_core_reset(c);
        *err = r.err ? r.err : g_strdup("stream truncated");
        return false;
    }
    ok = pvrdma_mig_image_load(c, &m, err);
    pvrdma_mig_image_clear(&m);
    return ok;
}
