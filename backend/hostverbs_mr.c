/*
 * pvrdma host HCA transport, memory: the host twins of the guest's MRs.
 * A user MR over several runs of guest RAM is mapped again contiguously
 * first; the DMA MR covers guest RAM by guest physical address; a
 * fast-registration MR is a type 2 memory window, bound over a host MR of
 * its page list at each FAST_REG_MR (below).  See hostverbs.c for the
 * transport as a whole, hostverbs_int.h for what its files share.
 *
 * Everything runs with the caller's lock held (the BQL in QEMU).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hostverbs_int.h"

#include <sys/mman.h>

#define HV_DMA_MR_START 0x100000ull

/* Host memory registered: an MR, over its own mapping if remapped */
typedef struct HvReg {
    struct ibv_mr *mr;
    void *remap;                /* the reserved range, if remapped */
    size_t remap_len;
} HvReg;

typedef struct HvMR {
    struct ibv_mr *mr;
    void *remap;                /* the reserved range, if remapped */
    size_t remap_len;
    void *dma_host;             /* DMA MR: the guest RAM mapping */
    uint64_t dma_len;
    /* FRMR: a type 2 window, bound over the registration of its pages */
    struct ibv_mw *mw;          /* mw->rkey: the key it was bound with last */
    bool bound;                 /* on the host (not invalidated yet) ... */
    struct ibv_qp *bound_qp;    /* ... on this QP */
    HvReg cur;                  /* the pages the window was bound over last */
    GArray *retired;            /* HvReg: earlier ones, not deregistered yet */
} HvMR;

/* ------------------------------------------------------------------ */
/* Memory regions                                                      */

static const PvrdmaShmRegion *region_of(HvDev *d, const uint8_t *host,
                                        uint64_t len)
{
    for (unsigned i = 0; i < d->nregions; i++) {
        const PvrdmaShmRegion *r = &d->regions[i];
        const uint8_t *b = r->host;

        if (host >= b && len <= r->size &&
            (uint64_t)(host - b) <= r->size - len) {
            return r;
        }
    }
    return NULL;
}

/*
 * Map the runs of m side by side into one new range (one mmap per run,
 * from the guest RAM's file).  Returns the range or NULL.
 */
static void *remap_runs(HvDev *d, const PvrdmaMap *m, size_t *len_out)
{
    size_t len = 0;
    uint8_t *base;

    for (uint32_t i = 0; i < m->nchunks; i++) {
        len += m->chunk[i].len;
    }
    base = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
                MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) {
        return NULL;
    }
    for (uint32_t i = 0; i < m->nchunks; i++) {
        const PvrdmaChunk *ch = &m->chunk[i];
        const PvrdmaShmRegion *r = region_of(d, ch->host, ch->len);
        off_t off;

        if (!r || r->fd < 0) {
            munmap(base, len);
            return NULL;
        }
        off = r->fd_offset + (ch->host - (uint8_t *)r->host);
        /* populated now: the host device pins every page next anyway */
        if (mmap(base + ch->off, ch->len, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_FIXED | MAP_POPULATE, r->fd,
                 off) == MAP_FAILED) {
            munmap(base, len);
            return NULL;
        }
    }
    *len_out = len;
    return base;
}

/* ------------------------------------------------------------------ */
/* Fast-registration MRs                                               */

/*
 * A guest FRMR is a host type 2 memory window of the PD: its rkey is the
 * guest's lkey and rkey, and a bind gives it the key byte the guest asks
 * for.  FAST_REG_MR: the guest's page list (mapped by the core, mr->map)
 * is mapped contiguously like a user MR's runs, registered as a host MR
 * at the guest's IOVA, and the window bound over all of it on the guest's
 * QP, in order with its other work; the guest's peer then reads and
 * writes those pages through the window's rkey and the guest's
 * addresses, the host device checking both.  LOCAL_INV invalidates the
 * window on the QP; a SEND with invalidate from the peer does the same
 * on the host device (hv_frmr_remote_inv()).  An FRMR's lkey in the
 * guest's own SGEs becomes the registration's (hv_hv_sge_lkey()).
 *
 * The host MR of a registration outlives the window's next bind: the
 * device may still be executing the work before it.  It is deregistered
 * at the next FAST_REG_MR of the FRMR, or when the FRMR goes, once the
 * host lets go of it (Linux rxe refuses while a window is bound).
 * A type 2B window is bound to the QP it was bound on: the guest's peer
 * must use the key over that connection, as kernel ULPs do.
 */

static void reg_release(HvReg *g)
{
    if (g->remap) {
        munmap(g->remap, g->remap_len);
    }
    *g = (HvReg) { 0 };
}

/* Deregister what the host no longer uses; true if all went. */
static bool retired_sweep(HvMR *r)
{
    for (guint i = 0; i < r->retired->len;) {
        HvReg *g = &g_array_index(r->retired, HvReg, i);

        if (ibv_dereg_mr(g->mr)) {
            i++;
            continue;
        }
        reg_release(g);
        g_array_remove_index_fast(r->retired, i);
    }
    return r->retired->len == 0;
}

static int frmr_create(HvDev *d, HvPD *p, PvrdmaMR *mr, uint32_t *lkey,
                       uint32_t *rkey)
{
    HvMR *r;
    struct ibv_mw *mw;

    if (!d->mw2) {
        return -EOPNOTSUPP;
    }
    mw = ibv_alloc_mw(p->pd, IBV_MW_TYPE_2);
    if (!mw) {
        return -(errno ? errno : ENOMEM);
    }
    r = g_new0(HvMR, 1);
    r->mw = mw;
    r->retired = g_array_new(false, false, sizeof(HvReg));
    *lkey = *rkey = mw->rkey;
    mr->twin = r;
    g_hash_table_insert(d->frmrs, GUINT_TO_POINTER(mw->rkey >> 8), mr);
    return 0;
}

static void frmr_destroy(HvDev *d, PvrdmaMR *mr)
{
    HvMR *r = mr->twin;

    if (r->mw) {
        g_hash_table_remove(d->frmrs, GUINT_TO_POINTER(r->mw->rkey >> 8));
        ibv_dealloc_mw(r->mw);  /* unbinds it */
    }
    if (r->cur.mr) {
        g_array_append_val(r->retired, r->cur);
    }
    if (!retired_sweep(r)) {
        warn_report("pvrdma: host device %s kept %u registrations of FRMR %u",
                    d->name, r->retired->len, mr->handle);
    }
    g_array_free(r->retired, true);
    g_free(r);
    mr->twin = NULL;
}

/* The guest's FRMR lkey, valid, in an SGE for the host: its registration's */
uint32_t hv_sge_lkey(HvDev *d, uint32_t lkey)
{
    PvrdmaMR *mr;
    HvMR *r;

    if (!g_hash_table_size(d->frmrs)) {
        return lkey;
    }
    mr = g_hash_table_lookup(d->frmrs, GUINT_TO_POINTER(lkey >> 8));
    r = mr ? mr->twin : NULL;
    if (!r || mr->key != lkey || !mr->valid || !r->cur.mr) {
        return lkey;    /* the host device refuses what it must */
    }
    return r->cur.mr->lkey;
}

void hv_frmr_remote_inv(HvDev *d, uint32_t rkey)
{
    PvrdmaMR *mr = g_hash_table_lookup(d->frmrs, GUINT_TO_POINTER(rkey >> 8));
    HvMR *r = mr ? mr->twin : NULL;

    if (r && r->mw && r->mw->rkey == rkey) {
        r->bound = false;
    }
}

/* Register the FRMR's pages at its IOVA, for a window to be bound over */
static bool frmr_register(HvDev *d, HvPD *p, PvrdmaMR *mr, HvReg *g)
{
    uint8_t *host;

    if (mr->map.nchunks == 1) {
        host = mr->map.chunk[0].host + (mr->iova - mr->base);
    } else {
        g->remap = remap_runs(d, &mr->map, &g->remap_len);
        if (!g->remap) {
            return false;
        }
        host = (uint8_t *)g->remap + (mr->iova - mr->base);
    }
    g->mr = ibv_reg_mr_iova(p->pd, host, mr->length, mr->iova,
                            IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
    if (!g->mr) {
        reg_release(g);
        return false;
    }
    return true;
}

static const unsigned hv_remote_access = IBV_ACCESS_REMOTE_WRITE |
                                         IBV_ACCESS_REMOTE_READ |
                                         IBV_ACCESS_REMOTE_ATOMIC;

/*
 * FAST_REG_MR: bind the window over a new registration of the pages, with
 * the guest's key; invalidate it first if a LOCAL_INV that another
 * transport ran left it bound here.
 */
int hv_fast_reg(HvDev *d, PvrdmaQP *qp, const PvrdmaSendWr *s,
                unsigned flags)
{
    PvrdmaMR *mr = s->mr;
    HvMR *r = mr->twin;
    HvPD *p = pd_of(&d->t, mr->pd);
    struct ibv_send_wr inv = { 0 }, bind = { 0 }, *first = &bind, *bad;
    int64_t t0 = g_get_monotonic_time(), t_map;
    HvReg g = { 0 };
    int err;

    if (!p || !r || !r->mw) {
        return -EINVAL;
    }
    if (!frmr_register(d, p, mr, &g)) {
        err = errno ? errno : EFAULT;
        warn_report("pvrdma: host device %s: FRMR %u: registering %u page runs "
                    "failed: %s", d->name, mr->handle, mr->map.nchunks,
                    strerror(err));
        return -err;
    }
    t_map = g_get_monotonic_time() - t0;
    bind.wr_id = s->wr_id;
    bind.opcode = IBV_WR_BIND_MW;
    bind.send_flags = flags;
    bind.bind_mw.mw = r->mw;
    bind.bind_mw.rkey = mr->key;
    bind.bind_mw.bind_info.mr = g.mr;
    bind.bind_mw.bind_info.addr = mr->iova;
    bind.bind_mw.bind_info.length = mr->length;
    bind.bind_mw.bind_info.mw_access_flags = mr->access & hv_remote_access;
    if (r->bound) {
        inv.wr_id = s->wr_id;
        inv.opcode = IBV_WR_LOCAL_INV;
        inv.invalidate_rkey = r->mw->rkey;
        inv.next = &bind;
        first = &inv;
    }
    err = ibv_post_send(qp->twin, first, &bad);
    if (err) {
        if (first == &inv && bad == &bind) {
            r->bound = false;
        }
        ibv_dereg_mr(g.mr);
        reg_release(&g);
        return -err;
    }
    r->mw->rkey = mr->key;      /* the window's key from this bind on */
    r->bound = true;
    r->bound_qp = qp->twin;
    if (r->cur.mr) {
        g_array_append_val(r->retired, r->cur);
    }
    r->cur = g;
    retired_sweep(r);
    trace_pvrdma_hv_fast_reg(mr->handle, mr->key, mr->iova, mr->length,
                             mr->map.nchunks, t_map,
                             g_get_monotonic_time() - t0);
    return 0;
}

/* The PD's spare MR (one small buffer) that a window can be bound over */
static struct ibv_mr *pd_spare(HvPD *p)
{
    if (!p->spare) {
        p->spare = ibv_reg_mr(p->pd, p->spare_buf, sizeof(p->spare_buf),
                              IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
    }
    return p->spare;
}

/*
 * LOCAL_INV: invalidate the window on the QP.  A window that is not bound
 * here (invalidated already, or registered through another transport) is
 * bound over the PD's spare MR first: a host device completes the
 * guest's LOCAL_INV in order then, and never sees an invalidation of a
 * free window (which Linux 6.1's rxe does not survive).
 */
int hv_local_inv(HvDev *d, PvrdmaQP *qp, const PvrdmaSendWr *s,
                 unsigned flags)
{
    PvrdmaMR *mr = s->mr;
    HvMR *r = mr->twin;
    HvPD *p = pd_of(&d->t, mr->pd);
    struct ibv_send_wr bind = { 0 }, inv = { 0 }, *first = &inv, *bad;
    bool was_bound;
    int err;

    if (!p || !r || !r->mw) {
        return -EINVAL;
    }
    was_bound = r->bound;
    if (!r->bound) {
        struct ibv_mr *spare = pd_spare(p);

        if (!spare) {
            return -(errno ? errno : ENOMEM);
        }
        bind.wr_id = s->wr_id;
        bind.opcode = IBV_WR_BIND_MW;
        bind.bind_mw.mw = r->mw;
        bind.bind_mw.rkey = r->mw->rkey;
        bind.bind_mw.bind_info.mr = spare;
        bind.bind_mw.bind_info.addr = (uintptr_t)p->spare_buf;
        bind.bind_mw.bind_info.length = sizeof(p->spare_buf);
        bind.next = &inv;
        first = &bind;
    }
    inv.wr_id = s->wr_id;
    inv.opcode = IBV_WR_LOCAL_INV;
    inv.send_flags = flags;
    inv.invalidate_rkey = r->mw->rkey;
    err = ibv_post_send(qp->twin, first, &bad);
    if (err) {
        if (first == &bind && bad == &inv) {
            r->bound = true;
            r->bound_qp = qp->twin;
        }
        return -err;
    }
    r->bound = false;
    trace_pvrdma_hv_local_inv(mr->handle, s->imm, was_bound);
    return 0;
}

/* A user or DMA MR: guest RAM registered with the host device */
static int reg_create(PvrdmaTransport *h, HvPD *p, PvrdmaMR *mr,
                      uint32_t *lkey, uint32_t *rkey)
{
    HvDev *d = hv(h);
    int access = mr->access & (IBV_ACCESS_LOCAL_WRITE |
                               IBV_ACCESS_REMOTE_WRITE |
                               IBV_ACCESS_REMOTE_READ |
                               IBV_ACCESS_REMOTE_ATOMIC);
    G_GNUC_UNUSED int64_t t0 = g_get_monotonic_time(), t_map = 0;
    HvMR *r = g_new0(HvMR, 1);
    uint8_t *host;
    uint64_t iova, len;

    if (mr->kind == PVRDMA_MR_DMA) {
        const PvrdmaHostOps *ops = h->core->ops;

        r->dma_len = 1ull << 40;
        r->dma_host = ops->map(h->core->opaque, HV_DMA_MR_START,
                               &r->dma_len, true);
        if (!r->dma_host) {
            g_free(r);
            return -EFAULT;
        }
        host = r->dma_host;
        iova = HV_DMA_MR_START;
        len = r->dma_len;
        access |= IBV_ACCESS_LOCAL_WRITE;
    } else if (mr->map.nchunks == 1) {
        host = mr->map.chunk[0].host + (mr->iova - mr->base);
        iova = mr->iova;
        len = mr->length;
    } else {
        r->remap = remap_runs(d, &mr->map, &r->remap_len);
        if (!r->remap) {
            warn_report("pvrdma: MR of %u guest page runs: cannot map them "
                        "contiguously; guest RAM needs a shareable "
                        "backend of small pages (memory-backend-memfd,"
                        "share=on or memory-backend-file,share=on; "
                        "hugetlbfs pages cannot be mapped piecewise)",
                        mr->map.nchunks);
            g_free(r);
            return -EOPNOTSUPP;
        }
        host = (uint8_t *)r->remap + (mr->iova - mr->base);
        t_map = g_get_monotonic_time() - t0;
        iova = mr->iova;
        len = mr->length;
    }
    r->mr = ibv_reg_mr_iova(p->pd, host, len, iova, access);
    if (!r->mr) {
        int err = errno ? errno : ENOMEM;

        warn_report("pvrdma: host device %s refused an MR of %" PRIu64
                    " bytes: %s%s", d->name, len, strerror(err),
                    err == ENOMEM ? " (is QEMU's locked-memory limit, "
                    "ulimit -l, as large as the guest's registrations?)"
                    : "");
        if (r->remap) {
            munmap(r->remap, r->remap_len);
        }
        if (r->dma_host) {
            h->core->ops->unmap(h->core->opaque, r->dma_host, r->dma_len,
                                true);
        }
        g_free(r);
        return -err;
    }
    *lkey = r->mr->lkey;
    *rkey = r->mr->rkey;
    mr->twin = r;
    trace_pvrdma_hv_mr(mr->handle, iova, len, mr->map.nchunks, r->mr->lkey,
                       t_map, g_get_monotonic_time() - t0);
    return 0;
}

int hv_mr_create(PvrdmaTransport *h, PvrdmaMR *mr, uint32_t *lkey,
                 uint32_t *rkey)
{
    HvPD *p = pd_of(h, mr->pd);

    if (!p) {
        return -EINVAL;
    }
    if (mr->kind == PVRDMA_MR_FRMR) {
        return frmr_create(hv(h), p, mr, lkey, rkey);
    }
    return reg_create(h, p, mr, lkey, rkey);
}

void hv_mr_destroy(PvrdmaTransport *h, PvrdmaMR *mr)
{
    HvMR *r = mr->twin;

    if (mr->kind == PVRDMA_MR_FRMR) {
        frmr_destroy(hv(h), mr);   /* its window may be gone (no r->mw) */
        return;
    }
    ibv_dereg_mr(r->mr);
    if (r->remap) {
        munmap(r->remap, r->remap_len);
    }
    if (r->dma_host) {
        h->core->ops->unmap(h->core->opaque, r->dma_host, r->dma_len, true);
    }
    g_free(r);
    mr->twin = NULL;
}

/*
 * QP q goes while a type 2 window is still bound on it (the guest did not
 * invalidate or release its FRMR first, as kernel ULPs do): the window
 * holds the QP, and Linux 6.1's rxe then waits 50 s in ibv_destroy_qp()
 * and warns.  Such a window is replaced by a new one, unbound: the FRMR
 * is invalid from here on and has the new window's key
 * (pvrdma_owner_frmr_rekey()), which the guest does not know, so it is
 * lost to the guest, which may only destroy it.
 */
void hv_frmr_unbind_qp(HvDev *d, struct ibv_qp *q)
{
    GHashTableIter it;
    gpointer v;
    GSList *gone = NULL;

    g_hash_table_iter_init(&it, d->frmrs);
    while (g_hash_table_iter_next(&it, NULL, &v)) {
        HvMR *r = ((PvrdmaMR *)v)->twin;

        if (r->bound && r->bound_qp == q) {
            gone = g_slist_prepend(gone, v);
        }
    }
    for (GSList *l = gone; l; l = l->next) {
        PvrdmaMR *mr = l->data;
        HvMR *r = mr->twin;
        HvPD *p = pd_of(&d->t, mr->pd);
        struct ibv_mw *mw = p ? ibv_alloc_mw(p->pd, IBV_MW_TYPE_2) : NULL;

        g_hash_table_remove(d->frmrs, GUINT_TO_POINTER(r->mw->rkey >> 8));
        ibv_dealloc_mw(r->mw);
        r->mw = mw;
        r->bound = false;
        r->bound_qp = NULL;
        if (mw) {
            g_hash_table_insert(d->frmrs, GUINT_TO_POINTER(mw->rkey >> 8), mr);
        }
        trace_pvrdma_hv_frmr_lost(mr->handle, mr->key, mw ? mw->rkey : 0);
        pvrdma_owner_frmr_rekey(d->t.core, mr, mw ? mw->rkey : 0);
    }
    g_slist_free(gone);
}
