/*
 * pvrdma host HCA transport, the host twins of the guest's objects: each
 * guest PD, MR, CQ, SRQ and QP the host device owns has a libibverbs
 * object of the host device made, changed and destroyed with it (the
 * transport's object hooks); a guest MR over several runs of guest RAM is
 * mapped again contiguously first; a fast-registration MR is a type 2
 * memory window (below); UD sends get a host address handle, cached per
 * PD; guest GIDs are found in the host's GID table.  See
 * hostverbs.c for the transport as a whole, hostverbs_int.h for what its
 * files share.
 *
 * Everything runs with the caller's lock held (the BQL in QEMU).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef PVRDMA_STANDALONE
#include "qemu/osdep.h"
#endif
#include "hostverbs_int.h"

#include <arpa/inet.h>
#include <sys/mman.h>

#define HV_AH_CACHE     256
#define HV_DMA_MR_START 0x100000ull

typedef struct HvGidKey {
    uint8_t gid[16];
    uint8_t type;               /* enum ibv_gid_type */
} HvGidKey;

typedef struct HvAhKey {
    uint8_t dgid[16];
    uint32_t flow_label;
    uint8_t sgid_index, hop_limit, tclass, sl;
} HvAhKey;

typedef struct HvPD {
    struct ibv_pd *pd;
    GHashTable *ah;             /* HvAhKey -> struct ibv_ah */
    /* a window of the PD is bound over it to be invalidated (hv_local_inv) */
    struct ibv_mr *spare;
    uint8_t spare_buf[64];
} HvPD;

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
    bool bound;                 /* on the host (not invalidated yet) */
    HvReg cur;                  /* the pages the window was bound over last */
    GArray *retired;            /* HvReg: earlier ones, not deregistered yet */
} HvMR;

/* ------------------------------------------------------------------ */
/* GIDs                                                                */

/* djb2 over a fixed-size key (GID and AH cache keys) */
static guint key_hash(const void *k, size_t len)
{
    const uint8_t *p = k;
    guint h = 5381;

    for (size_t i = 0; i < len; i++) {
        h = h * 33 + p[i];
    }
    return h;
}

guint hv_gid_key_hash(gconstpointer k)
{
    return key_hash(k, sizeof(HvGidKey));
}

gboolean hv_gid_key_equal(gconstpointer a, gconstpointer b)
{
    return !memcmp(a, b, sizeof(HvGidKey));
}

/*
 * The host GID table index for a guest GID entry, or -1 (reported).  Found
 * indices are cached: UD sends ask on every WQE, and each entry queried is
 * a call into the kernel.  The cache is dropped when the host's GID table
 * changes (IBV_EVENT_GID_CHANGE); misses are not cached, so an address
 * added on the host later is found.
 */
static int host_gid_index(HvDev *d, const PvrdmaGid *g)
{
    enum ibv_gid_type want = g->type == PVRDMA_GID_TYPE_FLAG_ROCE_V2 ?
                             IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_ROCE_V1;
    char ip[INET6_ADDRSTRLEN];
    HvGidKey k = { .type = want };
    gpointer hit;

    if (d->gid_index >= 0) {
        return d->gid_index;
    }
    if (!g->type) {
        return -1;
    }
    memcpy(k.gid, g->gid.raw, 16);
    hit = g_hash_table_lookup(d->gid_idx, &k);
    if (hit) {
        return GPOINTER_TO_INT(hit) - 1;
    }
    for (int i = 0; i < d->gid_tbl_len; i++) {
        struct ibv_gid_entry e;

        if (ibv_query_gid_ex(d->ctx, d->port, i, &e, 0) == 0 &&
            e.gid_type == want && !memcmp(e.gid.raw, g->gid.raw, 16)) {
            g_hash_table_insert(d->gid_idx, g_memdup2(&k, sizeof(k)),
                                GINT_TO_POINTER(i + 1));
            return i;
        }
    }
    pvrdma_gid_str(g->gid.raw, ip, sizeof(ip));
    if (!g_hash_table_contains(d->warned, ip)) {
        g_hash_table_add(d->warned, g_strdup(ip));
        pvrdma_log_host("the guest's GID %s (RoCE v%d) is not in the GID "
                        "table of %s port %u, so its traffic cannot use it; "
                        "give the host interface that address, e.g. "
                        "'ip addr add %s/32 dev %s'", ip,
                        want == IBV_GID_TYPE_ROCE_V2 ? 2 : 1, d->name,
                        d->port, ip, d->netdev[0] ? d->netdev : "<netdev>");
    }
    return -1;
}

/* ------------------------------------------------------------------ */
/* PDs and address handles                                             */

static guint ah_hash(gconstpointer k)
{
    return key_hash(k, sizeof(HvAhKey));
}

static gboolean ah_equal(gconstpointer a, gconstpointer b)
{
    return !memcmp(a, b, sizeof(HvAhKey));
}

static void ah_free(gpointer ah)
{
    ibv_destroy_ah(ah);
}

int hv_pd_create(PvrdmaTransport *h, PvrdmaPD *pd)
{
    HvDev *d = hv(h);
    HvPD *p = g_new0(HvPD, 1);

    p->pd = ibv_alloc_pd(d->ctx);
    if (!p->pd) {
        int err = errno ? errno : ENOMEM;

        g_free(p);
        return -err;
    }
    p->ah = g_hash_table_new_full(ah_hash, ah_equal, g_free, ah_free);
    pd->hw = p;
    return 0;
}

void hv_pd_destroy(PvrdmaTransport *h, PvrdmaPD *pd)
{
    HvPD *p = pd->hw;

    if (p->spare) {
        ibv_dereg_mr(p->spare);
    }
    g_hash_table_destroy(p->ah);
    ibv_dealloc_pd(p->pd);
    g_free(p);
    pd->hw = NULL;
}

static HvPD *pd_of(PvrdmaTransport *h, uint32_t handle)
{
    PvrdmaPD *pd = pvrdma_table_get(&h->core->pd, handle);

    return pd ? pd->hw : NULL;
}

/* A host AH for a UD destination (cached per PD). */
static struct ibv_ah *ud_ah(HvDev *d, HvPD *p, const PvrdmaSendWr *wr)
{
    const struct pvrdma_av *av = wr->av;
    struct ibv_ah_attr attr = { 0 };
    struct ibv_ah *ah;
    HvAhKey k = { 0 };
    int sgid = host_gid_index(d, wr->sgid);

    if (sgid < 0) {
        return NULL;
    }
    memcpy(k.dgid, av->dgid, 16);
    k.flow_label = av->sl_tclass_flowlabel & 0xfffff;
    k.tclass = (av->sl_tclass_flowlabel >> 20) & 0xff;
    k.sl = av->sl_tclass_flowlabel >> 28;
    k.hop_limit = av->hop_limit;
    k.sgid_index = sgid;
    ah = g_hash_table_lookup(p->ah, &k);
    if (ah) {
        return ah;
    }
    attr.is_global = 1;
    memcpy(attr.grh.dgid.raw, k.dgid, 16);
    attr.grh.flow_label = k.flow_label;
    attr.grh.traffic_class = k.tclass;
    attr.grh.hop_limit = k.hop_limit ? k.hop_limit : 64;
    attr.grh.sgid_index = sgid;
    attr.sl = k.sl;
    attr.port_num = d->port;
    ah = ibv_create_ah(p->pd, &attr);
    if (!ah) {
        return NULL;
    }
    if (g_hash_table_size(p->ah) >= HV_AH_CACHE) {
        /* host devices copy the address into each WQE: safe to drop */
        g_hash_table_remove_all(p->ah);
    }
    g_hash_table_insert(p->ah, g_memdup2(&k, sizeof(k)), ah);
    return ah;
}

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
 * guest's own SGEs becomes the registration's (sge_lkey()).
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
    mr->hw = r;
    g_hash_table_insert(d->frmrs, GUINT_TO_POINTER(mw->rkey >> 8), mr);
    return 0;
}

static void frmr_destroy(HvDev *d, PvrdmaMR *mr)
{
    HvMR *r = mr->hw;

    g_hash_table_remove(d->frmrs, GUINT_TO_POINTER(r->mw->rkey >> 8));
    ibv_dealloc_mw(r->mw);      /* unbinds it */
    if (r->cur.mr) {
        g_array_append_val(r->retired, r->cur);
    }
    if (!retired_sweep(r)) {
        pvrdma_log_host("host device %s kept %u registrations of FRMR %u",
                        d->name, r->retired->len, mr->handle);
    }
    g_array_free(r->retired, true);
    g_free(r);
    mr->hw = NULL;
}

/* The guest's FRMR lkey, valid, in an SGE for the host: its registration's */
static uint32_t sge_lkey(HvDev *d, uint32_t lkey)
{
    PvrdmaMR *mr;
    HvMR *r;

    if (!g_hash_table_size(d->frmrs)) {
        return lkey;
    }
    mr = g_hash_table_lookup(d->frmrs, GUINT_TO_POINTER(lkey >> 8));
    r = mr ? mr->hw : NULL;
    if (!r || mr->key != lkey || !mr->valid || !r->cur.mr) {
        return lkey;    /* the host device refuses what it must */
    }
    return r->cur.mr->lkey;
}

void hv_frmr_remote_inv(HvDev *d, uint32_t rkey)
{
    PvrdmaMR *mr = g_hash_table_lookup(d->frmrs, GUINT_TO_POINTER(rkey >> 8));
    HvMR *r = mr ? mr->hw : NULL;

    if (r && r->mw->rkey == rkey) {
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
static int hv_fast_reg(HvDev *d, PvrdmaQP *qp, const PvrdmaSendWr *s,
                       unsigned flags)
{
    PvrdmaMR *mr = s->mr;
    HvMR *r = mr->hw;
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
        pvrdma_log_host("host device %s: FRMR %u: registering %u page runs "
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
    err = ibv_post_send(qp->hw, first, &bad);
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
static int hv_local_inv(HvDev *d, PvrdmaQP *qp, const PvrdmaSendWr *s,
                        unsigned flags)
{
    PvrdmaMR *mr = s->mr;
    HvMR *r = mr->hw;
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
    err = ibv_post_send(qp->hw, first, &bad);
    if (err) {
        if (first == &bind && bad == &inv) {
            r->bound = true;
        }
        return -err;
    }
    r->bound = false;
    trace_pvrdma_hv_local_inv(mr->handle, s->imm, was_bound);
    return 0;
}

int hv_mr_create(PvrdmaTransport *h, PvrdmaMR *mr, uint32_t *lkey,
                 uint32_t *rkey)
{
    HvDev *d = hv(h);
    HvPD *p = pd_of(h, mr->pd);
    int access = mr->access & (IBV_ACCESS_LOCAL_WRITE |
                               IBV_ACCESS_REMOTE_WRITE |
                               IBV_ACCESS_REMOTE_READ |
                               IBV_ACCESS_REMOTE_ATOMIC);
    G_GNUC_UNUSED int64_t t0 = g_get_monotonic_time(), t_map = 0;
    HvMR *r;
    uint8_t *host;
    uint64_t iova, len;

    if (!p) {
        return -EINVAL;
    }
    if (mr->kind == PVRDMA_MR_FRMR) {
        return frmr_create(d, p, mr, lkey, rkey);
    }
    r = g_new0(HvMR, 1);
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
            pvrdma_log_host("MR of %u guest page runs: cannot map them "
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

        pvrdma_log_host("host device %s refused an MR of %" PRIu64
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
    mr->hw = r;
    trace_pvrdma_hv_mr(mr->handle, iova, len, mr->map.nchunks, r->mr->lkey,
                       t_map, g_get_monotonic_time() - t0);
    return 0;
}

void hv_mr_destroy(PvrdmaTransport *h, PvrdmaMR *mr)
{
    HvMR *r = mr->hw;

    if (r->mw) {
        frmr_destroy(hv(h), mr);
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
    mr->hw = NULL;
}

/* ------------------------------------------------------------------ */
/* CQs (their completions: hostverbs.c)                               */

int hv_cq_create(PvrdmaTransport *h, PvrdmaCQ *cq, uint32_t cqe)
{
    HvDev *d = hv(h);
    HvCQ *q = g_new0(HvCQ, 1);

    q->gcq = cq;
    q->cq = ibv_create_cq(d->ctx, cqe, q, d->chan, 0);
    if (!q->cq || ibv_req_notify_cq(q->cq, 0)) {
        int err = errno ? errno : ENOMEM;

        if (q->cq) {
            ibv_destroy_cq(q->cq);
        }
        g_free(q);
        return -err;
    }
    cq->hw = q;
    return 0;
}

void hv_cq_destroy(PvrdmaTransport *h, PvrdmaCQ *cq)
{
    HvCQ *q = cq->hw;

    ibv_destroy_cq(q->cq);
    g_free(q);
    cq->hw = NULL;
}

/* ------------------------------------------------------------------ */
/* SRQs                                                                */

int hv_srq_create(PvrdmaTransport *h, PvrdmaSRQ *srq)
{
    HvPD *p = pd_of(h, srq->pd);
    struct ibv_srq_init_attr a = { 0 };
    struct ibv_srq *s;

    if (!p) {
        return -EINVAL;
    }
    a.srq_context = srq;
    a.attr.max_wr = srq->max_wr;
    a.attr.max_sge = srq->max_sge;
    a.attr.srq_limit = srq->limit;
    s = ibv_create_srq(p->pd, &a);
    if (!s) {
        return -(errno ? errno : ENOMEM);
    }
    srq->hw = s;
    return 0;
}

int hv_srq_modify(PvrdmaTransport *h, PvrdmaSRQ *srq, uint32_t mask,
                  uint32_t limit)
{
    struct ibv_srq_attr a = { .srq_limit = limit };

    return -ibv_modify_srq(srq->hw, &a, IBV_SRQ_LIMIT);
}

void hv_srq_destroy(PvrdmaTransport *h, PvrdmaSRQ *srq)
{
    ibv_destroy_srq(srq->hw);
    srq->hw = NULL;
}

/* ------------------------------------------------------------------ */
/* QPs                                                                 */

int hv_qp_create(PvrdmaTransport *h, PvrdmaQP *qp)
{
    HvDev *d = hv(h);
    PvrdmaCore *c = h->core;
    HvPD *p = pd_of(h, qp->pd);
    PvrdmaCQ *scq = pvrdma_table_get(&c->cq, qp->scq);
    PvrdmaCQ *rcq = pvrdma_table_get(&c->cq, qp->rcq);
    PvrdmaSRQ *srq = qp->is_srq ? pvrdma_table_get(&c->srq, qp->srq) : NULL;
    struct ibv_qp_init_attr a = { 0 };
    struct ibv_qp *q;

    if (!p || !scq || !scq->hw || !rcq || !rcq->hw ||
        (qp->is_srq && (!srq || !srq->hw))) {
        return -EINVAL;
    }
    a.qp_context = qp;
    a.send_cq = ((HvCQ *)scq->hw)->cq;
    a.recv_cq = ((HvCQ *)rcq->hw)->cq;
    a.srq = srq ? srq->hw : NULL;
    /*
     * A FAST_REG_MR or LOCAL_INV may take two host WQEs (hv_fast_reg(),
     * hv_local_inv()): room for them, as far as the device goes.
     */
    a.cap.max_send_wr = d->mw2 ? MIN(2 * qp->max_send_wr, d->max_qp_wr) :
                        qp->max_send_wr;
    a.cap.max_recv_wr = qp->max_recv_wr;
    a.cap.max_send_sge = qp->max_send_sge;
    a.cap.max_recv_sge = qp->max_recv_sge;
    a.qp_type = qp->type == PVRDMA_QPT_UD ? IBV_QPT_UD : IBV_QPT_RC;
    /* the guest's sends are signaled in hv_post_send; not those added */
    a.sq_sig_all = 0;
    q = ibv_create_qp(p->pd, &a);
    if (!q) {
        return -(errno ? errno : ENOMEM);
    }
    qp->hw = q;
    qp->qpn = q->qp_num;
    g_hash_table_insert(d->qps, GUINT_TO_POINTER(q->qp_num), qp);
    trace_pvrdma_hv_qp(qp->handle, q->qp_num);
    return 0;
}

/*
 * The address vector ah of a QP into at (IBV_QP_AV): the host GID index
 * of its source GID, or -1 and at unchanged.
 */
static int qp_attr_av(PvrdmaTransport *h, const struct pvrdma_ah_attr *ah,
                      struct ibv_qp_attr *at)
{
    HvDev *d = hv(h);
    int sgid = host_gid_index(d, &h->core->gid[ah->grh.sgid_index]);

    if (sgid < 0) {
        return sgid;
    }
    at->ah_attr.is_global = 1;
    memcpy(at->ah_attr.grh.dgid.raw, ah->grh.dgid.raw, 16);
    at->ah_attr.grh.flow_label = ah->grh.flow_label;
    at->ah_attr.grh.sgid_index = sgid;
    at->ah_attr.grh.hop_limit = ah->grh.hop_limit ? ah->grh.hop_limit : 64;
    at->ah_attr.grh.traffic_class = ah->grh.traffic_class;
    at->ah_attr.sl = ah->sl;
    at->ah_attr.static_rate = ah->static_rate;
    at->ah_attr.port_num = d->port;
    return sgid;
}

int hv_qp_modify(PvrdmaTransport *h, PvrdmaQP *qp, uint32_t mask,
                 const struct pvrdma_qp_attr *a)
{
    HvDev *d = hv(h);
    struct ibv_qp_attr at = { 0 };
    int m = 0, sgid = -1, err;

    if (mask & PVRDMA_QP_STATE) {
        at.qp_state = a->qp_state;
        m |= IBV_QP_STATE;
    }
    if (mask & PVRDMA_QP_CUR_STATE) {
        at.cur_qp_state = a->cur_qp_state;
        m |= IBV_QP_CUR_STATE;
    }
    if (mask & PVRDMA_QP_EN_SQD_ASYNC_NOTIFY) {
        at.en_sqd_async_notify = a->en_sqd_async_notify;
        m |= IBV_QP_EN_SQD_ASYNC_NOTIFY;
    }
    if (mask & PVRDMA_QP_ACCESS_FLAGS) {
        at.qp_access_flags = a->qp_access_flags &
                             (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                              IBV_ACCESS_REMOTE_READ |
                              IBV_ACCESS_REMOTE_ATOMIC);
        m |= IBV_QP_ACCESS_FLAGS;
    }
    if (mask & PVRDMA_QP_PKEY_INDEX) {
        at.pkey_index = a->pkey_index;
        m |= IBV_QP_PKEY_INDEX;
    }
    if (mask & PVRDMA_QP_PORT) {
        at.port_num = d->port;
        m |= IBV_QP_PORT;
    }
    if (mask & PVRDMA_QP_QKEY) {
        at.qkey = a->qkey;
        m |= IBV_QP_QKEY;
    }
    if (mask & PVRDMA_QP_AV) {
        sgid = qp_attr_av(h, &a->ah_attr, &at);
        if (sgid < 0) {
            trace_pvrdma_hv_modify_qp(qp->qpn, mask, a->qp_state, sgid,
                                      -EINVAL);
            return -EINVAL;
        }
        m |= IBV_QP_AV;
    }
    if (mask & PVRDMA_QP_PATH_MTU) {
        at.path_mtu = MIN((enum ibv_mtu)a->path_mtu, d->active_mtu);
        m |= IBV_QP_PATH_MTU;
    }
#define COPY(pbit, ibit, field) do { \
        if (mask & (pbit)) { \
            at.field = a->field; \
            m |= (ibit); \
        } \
    } while (0)
    COPY(PVRDMA_QP_TIMEOUT, IBV_QP_TIMEOUT, timeout);
    COPY(PVRDMA_QP_RETRY_CNT, IBV_QP_RETRY_CNT, retry_cnt);
    COPY(PVRDMA_QP_RNR_RETRY, IBV_QP_RNR_RETRY, rnr_retry);
    COPY(PVRDMA_QP_RQ_PSN, IBV_QP_RQ_PSN, rq_psn);
    COPY(PVRDMA_QP_MAX_QP_RD_ATOMIC, IBV_QP_MAX_QP_RD_ATOMIC, max_rd_atomic);
    COPY(PVRDMA_QP_MIN_RNR_TIMER, IBV_QP_MIN_RNR_TIMER, min_rnr_timer);
    COPY(PVRDMA_QP_SQ_PSN, IBV_QP_SQ_PSN, sq_psn);
    COPY(PVRDMA_QP_MAX_DEST_RD_ATOMIC, IBV_QP_MAX_DEST_RD_ATOMIC,
         max_dest_rd_atomic);
    COPY(PVRDMA_QP_DEST_QPN, IBV_QP_DEST_QPN, dest_qp_num);
#undef COPY
    err = ibv_modify_qp(qp->hw, &at, m);
    trace_pvrdma_hv_modify_qp(qp->qpn, mask, a->qp_state, sgid, -err);
    return -err;
}

int hv_qp_state(PvrdmaTransport *h, PvrdmaQP *qp)
{
    struct ibv_qp_attr at;
    struct ibv_qp_init_attr init;

    if (ibv_query_qp(qp->hw, &at, IBV_QP_STATE, &init)) {
        return -1;
    }
    return at.qp_state;
}

void hv_qp_destroy(PvrdmaTransport *h, PvrdmaQP *qp)
{
    struct ibv_qp *q = qp->hw;

    g_hash_table_remove(hv(h)->qps, GUINT_TO_POINTER(q->qp_num));
    ibv_destroy_qp(q);
    qp->hw = NULL;
}

int hv_post_send(PvrdmaTransport *h, PvrdmaQP *qp, const PvrdmaSendWr *s)
{
    HvDev *d = hv(h);
    struct ibv_sge sge[PVRDMA_HARD_MAX_SGE];
    struct ibv_send_wr wr = { 0 }, *bad;

    for (uint32_t i = 0; i < s->num_sge; i++) {
        sge[i].addr = s->sge[i].addr;
        sge[i].length = s->sge[i].length;
        sge[i].lkey = sge_lkey(d, s->sge[i].lkey);
    }
    wr.wr_id = s->wr_id;
    wr.sg_list = sge;
    wr.num_sge = s->num_sge;
    /* no IBV_SEND_INLINE: the addresses are the guest's, not ours */
    wr.send_flags = s->send_flags & (IBV_SEND_FENCE | IBV_SEND_SIGNALED |
                                     IBV_SEND_SOLICITED);
    if (qp->sq_sig_all) {
        wr.send_flags |= IBV_SEND_SIGNALED;
    }
    switch (s->opcode) {
    case PVRDMA_WR_FAST_REG_MR:
        return s->mr ? hv_fast_reg(d, qp, s, wr.send_flags) : -EINVAL;
    case PVRDMA_WR_LOCAL_INV:
        return s->mr ? hv_local_inv(d, qp, s, wr.send_flags) : -EINVAL;
    case PVRDMA_WR_SEND:
        wr.opcode = IBV_WR_SEND;
        break;
    case PVRDMA_WR_SEND_WITH_IMM:
        wr.opcode = IBV_WR_SEND_WITH_IMM;
        wr.imm_data = s->imm;
        break;
    case PVRDMA_WR_SEND_WITH_INV:
        wr.opcode = IBV_WR_SEND_WITH_INV;
        wr.invalidate_rkey = s->imm;
        break;
    case PVRDMA_WR_RDMA_WRITE:
        wr.opcode = IBV_WR_RDMA_WRITE;
        break;
    case PVRDMA_WR_RDMA_WRITE_WITH_IMM:
        wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
        wr.imm_data = s->imm;
        break;
    case PVRDMA_WR_RDMA_READ:
        wr.opcode = IBV_WR_RDMA_READ;
        break;
    case PVRDMA_WR_ATOMIC_CMP_AND_SWP:
        wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
        break;
    case PVRDMA_WR_ATOMIC_FETCH_AND_ADD:
        wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
        break;
    default:
        return -EINVAL;
    }
    if (qp->type == PVRDMA_QPT_UD) {
        HvPD *p = pd_of(h, qp->pd);

        wr.wr.ud.ah = p ? ud_ah(d, p, s) : NULL;
        if (!wr.wr.ud.ah) {
            return -EINVAL;
        }
        wr.wr.ud.remote_qpn = s->remote_qpn;
        wr.wr.ud.remote_qkey = s->remote_qkey;
    } else if (wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
               wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
        wr.wr.atomic.remote_addr = s->remote_addr;
        wr.wr.atomic.rkey = s->rkey;
        wr.wr.atomic.compare_add = s->compare_add;
        wr.wr.atomic.swap = s->swap;
    } else {
        wr.wr.rdma.remote_addr = s->remote_addr;
        wr.wr.rdma.rkey = s->rkey;
    }
    return -ibv_post_send(qp->hw, &wr, &bad);
}

int hv_post_recv(PvrdmaTransport *h, PvrdmaQP *qp, PvrdmaSRQ *srq,
                 uint64_t wr_id, const struct pvrdma_sge *s,
                 uint32_t num_sge)
{
    struct ibv_sge sge[PVRDMA_HARD_MAX_SGE];
    struct ibv_recv_wr wr = { 0 }, *bad;

    for (uint32_t i = 0; i < num_sge; i++) {
        sge[i].addr = s[i].addr;
        sge[i].length = s[i].length;
        sge[i].lkey = sge_lkey(hv(h), s[i].lkey);
    }
    wr.wr_id = wr_id;
    wr.sg_list = sge;
    wr.num_sge = num_sge;
    if (srq) {
        return -ibv_post_srq_recv(srq->hw, &wr, &bad);
    }
    return -ibv_post_recv(qp->hw, &wr, &bad);
}
