/*
 * pvrdma host HCA backend: the guest's verbs objects become objects of a
 * host RDMA device (a real RoCE HCA or Linux soft-RoCE) through
 * libibverbs.
 *
 * - Memory: a guest MR's pages are already mapped by the core as runs of
 *   contiguous host memory.  One run is registered as it is; several runs
 *   are mapped again, once each, side by side from the guest RAM's file
 *   (memfd/hugetlbfs, share=on) into one reserved range, which is then
 *   registered.  The host MR's IOVA is the guest's, so guest lkeys, rkeys
 *   and addresses go to the host device unchanged.  The DMA MR (kernel
 *   ULPs use guest physical addresses) covers guest RAM from 1 MiB to the
 *   end of the RAM block there, with IOVA = guest physical address.
 * - GIDs: a guest GID is used through the host GID table entry with the
 *   same GID (the address must be on the host's netdev); 'gid-index'
 *   forces one host entry instead.
 * - Completions: one completion channel and the async event fd, both on
 *   the host's event loop; no polling thread.
 * - Path choice: the device reaches a destination GID when the host's
 *   route to it leaves through the device's netdev (hv_reaches).  RC QPs
 *   with another path (co-resident, RoCEv2 on the VM's NIC) keep their
 *   host twin for its QP number only.
 *
 * Everything runs with the caller's lock held (the BQL in QEMU).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef PVRDMA_STANDALONE
#include "qemu/osdep.h"
#endif
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/rdma_backend.h"

#include <infiniband/verbs.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>

#define HV_POLL_BATCH   16
#define HV_AH_CACHE     256
#define HV_DMA_MR_START 0x100000ull

typedef struct HvDev {
    PvrdmaTransport t;          /* first member */
    struct ibv_context *ctx;
    struct ibv_comp_channel *chan;
    char name[IBV_SYSFS_NAME_MAX];
    char netdev[IF_NAMESIZE];   /* of the port's GID (empty: unknown) */
    uint8_t port;
    int gid_index;              /* forced host GID index, or -1 */
    enum ibv_mtu active_mtu;
    int gid_tbl_len;            /* of the port: fixed by the device */
    PvrdmaShmRegion *regions;
    unsigned nregions;
    const PvrdmaLoopOps *loop;
    void *loop_opaque;
    GHashTable *qps;            /* host qp_num -> PvrdmaQP */
    GHashTable *warned;         /* GIDs already reported as missing */
    GHashTable *gid_idx;        /* HvGidKey -> host GID index + 1 (found) */
    bool gone;                  /* its event files failed: not watched */
} HvDev;

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
} HvPD;

typedef struct HvMR {
    struct ibv_mr *mr;
    void *remap;                /* the reserved range, if remapped */
    size_t remap_len;
    void *dma_host;             /* DMA MR: the guest RAM mapping */
    uint64_t dma_len;
} HvMR;

typedef struct HvCQ {
    struct ibv_cq *cq;
    PvrdmaCQ *gcq;
} HvCQ;

static HvDev *hv(PvrdmaTransport *h)
{
    return (HvDev *)h;      /* t is the first member */
}

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

static guint gid_key_hash(gconstpointer k)
{
    return key_hash(k, sizeof(HvGidKey));
}

static gboolean gid_key_equal(gconstpointer a, gconstpointer b)
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

/*
 * Path choice: does traffic to dgid go through this device?  Yes when the
 * host's route to it leaves through the device's netdev: the source
 * address the kernel picks for dgid (connect() of a UDP socket: a route
 * lookup, no packet) is an address of that netdev.  A destination that is
 * an address of the netdev itself (another VM's GID there, the host's own)
 * counts too.  Asked once per RC QP at RTR and per GSI MAD, never per
 * data packet.
 */
static bool hv_reaches(PvrdmaTransport *h, const uint8_t dgid[16])
{
    static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
    HvDev *d = hv(h);
    bool v4 = !memcmp(dgid, v4mapped, sizeof(v4mapped));
    struct sockaddr_in6 dst6 = { .sin6_family = AF_INET6 }, src6;
    struct sockaddr_in dst4 = { .sin_family = AF_INET }, src4;
    struct sockaddr *dst = v4 ? (void *)&dst4 : (void *)&dst6;
    struct sockaddr *src = v4 ? (void *)&src4 : (void *)&src6;
    socklen_t len = v4 ? sizeof(dst4) : sizeof(dst6);
    struct ifaddrs *ifs = NULL;
    char g[INET6_ADDRSTRLEN];
    bool hit = false;
    int fd;

    if (d->gone) {
        return false;
    }
    if (!d->netdev[0]) {
        return true;    /* its netdev unknown: it may reach anything */
    }
    dst4.sin_port = dst6.sin6_port = htons(4791);
    memcpy(&dst4.sin_addr, dgid + 12, 4);
    memcpy(&dst6.sin6_addr, dgid, 16);
    if (dgid[0] == 0xfe && (dgid[1] & 0xc0) == 0x80) {
        dst6.sin6_scope_id = if_nametoindex(d->netdev);    /* link-local */
    }
    fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, dst, len) == 0 &&
        getsockname(fd, src, &len) == 0 && getifaddrs(&ifs) == 0) {
        for (struct ifaddrs *i = ifs; i && !hit; i = i->ifa_next) {
            if (!i->ifa_addr || i->ifa_addr->sa_family != dst->sa_family ||
                strcmp(i->ifa_name, d->netdev)) {
                continue;
            }
            hit = v4 ? ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr ==
                       src4.sin_addr.s_addr :
                       !memcmp(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr,
                               &src6.sin6_addr, 16);
        }
    }
    if (ifs) {
        freeifaddrs(ifs);
    }
    if (fd >= 0) {
        close(fd);
    }
    pvrdma_gid_str(dgid, g, sizeof(g));
    trace_pvrdma_hv_reaches(g, d->netdev, hit);
    return hit;
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

static int hv_pd_create(PvrdmaTransport *h, PvrdmaPD *pd)
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

static void hv_pd_destroy(PvrdmaTransport *h, PvrdmaPD *pd)
{
    HvPD *p = pd->hw;

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

static int hv_mr_create(PvrdmaTransport *h, PvrdmaMR *mr, uint32_t *lkey,
                        uint32_t *rkey)
{
    HvDev *d = hv(h);
    HvPD *p = pd_of(h, mr->pd);
    int access = mr->access & (IBV_ACCESS_LOCAL_WRITE |
                               IBV_ACCESS_REMOTE_WRITE |
                               IBV_ACCESS_REMOTE_READ |
                               IBV_ACCESS_REMOTE_ATOMIC);
    G_GNUC_UNUSED int64_t t0 = g_get_monotonic_time(), t_map = 0;
    HvMR *r = g_new0(HvMR, 1);
    uint8_t *host;
    uint64_t iova, len;

    if (!p) {
        g_free(r);
        return -EINVAL;
    }
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

static void hv_mr_destroy(PvrdmaTransport *h, PvrdmaMR *mr)
{
    HvMR *r = mr->hw;

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
/* CQs and completions                                                 */

static int hv_cq_create(PvrdmaTransport *h, PvrdmaCQ *cq, uint32_t cqe)
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

static void hv_cq_destroy(PvrdmaTransport *h, PvrdmaCQ *cq)
{
    HvCQ *q = cq->hw;

    ibv_destroy_cq(q->cq);
    g_free(q);
    cq->hw = NULL;
}

static uint32_t wc_opcode(enum ibv_wc_opcode op)
{
    switch (op) {
    case IBV_WC_SEND:
        return PVRDMA_WC_SEND;
    case IBV_WC_RDMA_WRITE:
        return PVRDMA_WC_RDMA_WRITE;
    case IBV_WC_RDMA_READ:
        return PVRDMA_WC_RDMA_READ;
    case IBV_WC_COMP_SWAP:
        return PVRDMA_WC_COMP_SWAP;
    case IBV_WC_FETCH_ADD:
        return PVRDMA_WC_FETCH_ADD;
    case IBV_WC_RECV_RDMA_WITH_IMM:
        return PVRDMA_WC_RECV_RDMA_WITH_IMM;
    default:
        return op & IBV_WC_RECV ? PVRDMA_WC_RECV : PVRDMA_WC_SEND;
    }
}

static void deliver(HvDev *d, HvCQ *q, const struct ibv_wc *wc)
{
    PvrdmaQP *qp = g_hash_table_lookup(d->qps, GUINT_TO_POINTER(wc->qp_num));
    PvrdmaWc w = { 0 };

    trace_pvrdma_hv_wc(q->gcq->handle, wc->qp_num, wc->opcode, wc->status);
    if (!qp) {
        return;     /* the QP was destroyed meanwhile */
    }
    w.wr_id = wc->wr_id;
    w.status = wc->status;      /* ibv_wc_status follows the IB spec too */
    w.opcode = wc_opcode(wc->opcode);
    w.vendor_err = wc->vendor_err;
    w.byte_len = wc->byte_len;
    w.imm = wc->imm_data;
    w.src_qp = wc->src_qp;
    w.pkey_index = wc->pkey_index;
    w.sl = wc->sl;
    if (wc->wc_flags & IBV_WC_GRH) {
        w.wc_flags |= PVRDMA_WC_GRH;
    }
    if (wc->wc_flags & IBV_WC_WITH_IMM) {
        w.wc_flags |= PVRDMA_WC_WITH_IMM;
    }
    if (wc->wc_flags & IBV_WC_WITH_INV) {
        w.wc_flags |= PVRDMA_WC_WITH_INVALIDATE;
    }
    if (wc->status == IBV_WC_SUCCESS) {
        w.is_send = !(wc->opcode & IBV_WC_RECV);
    } else {
        /* error completions carry no opcode: tell by the CQ if we can */
        w.is_send = q->gcq->handle != qp->rcq;
    }
    w.qp = qp->handle;
    w.cq = q->gcq->handle;
    pvrdma_complete(d->t.core, &w);
}

/*
 * The host device went away (disassociated: its files only report errors
 * now).  Stop watching them, which would otherwise wake the loop forever,
 * and tell the guest once; host calls fail from here on and the guest
 * sees those errors.
 */
static void hv_gone(HvDev *d)
{
    int err = errno;

    if (d->gone) {
        return;
    }
    d->gone = true;
    d->loop->set_fd_handler(d->loop_opaque, d->chan->fd, NULL, NULL, NULL);
    d->loop->set_fd_handler(d->loop_opaque, d->ctx->async_fd, NULL, NULL,
                            NULL);
    pvrdma_log_host("host device %s is gone (%s)", d->name,
                    err ? strerror(err) : "end of file");
    pvrdma_transport_event(d->t.core, PVRDMA_EVENT_DEVICE_FATAL, 1);
}

static void hv_comp_ready(void *opaque)
{
    HvDev *d = opaque;
    struct ibv_cq *cq;
    void *ctx;

    while ((errno = 0, ibv_get_cq_event(d->chan, &cq, &ctx) == 0)) {
        HvCQ *q = ctx;
        struct ibv_wc wc[HV_POLL_BATCH];
        int n;

        ibv_ack_cq_events(cq, 1);
        ibv_req_notify_cq(cq, 0);
        do {
            n = ibv_poll_cq(cq, HV_POLL_BATCH, wc);
            for (int i = 0; i < n; i++) {
                deliver(d, q, &wc[i]);
            }
        } while (n == HV_POLL_BATCH);
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
        hv_gone(d);
    }
}

/* ------------------------------------------------------------------ */
/* SRQs                                                                */

static int hv_srq_create(PvrdmaTransport *h, PvrdmaSRQ *srq)
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

static int hv_srq_modify(PvrdmaTransport *h, PvrdmaSRQ *srq, uint32_t mask,
                         uint32_t limit)
{
    struct ibv_srq_attr a = { .srq_limit = limit };

    return -ibv_modify_srq(srq->hw, &a, IBV_SRQ_LIMIT);
}

static void hv_srq_destroy(PvrdmaTransport *h, PvrdmaSRQ *srq)
{
    ibv_destroy_srq(srq->hw);
    srq->hw = NULL;
}

/* ------------------------------------------------------------------ */
/* QPs                                                                 */

static int hv_qp_create(PvrdmaTransport *h, PvrdmaQP *qp)
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
    a.cap.max_send_wr = qp->max_send_wr;
    a.cap.max_recv_wr = qp->max_recv_wr;
    a.cap.max_send_sge = qp->max_send_sge;
    a.cap.max_recv_sge = qp->max_recv_sge;
    a.qp_type = qp->type == PVRDMA_QPT_UD ? IBV_QPT_UD : IBV_QPT_RC;
    a.sq_sig_all = qp->sq_sig_all;
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

static int hv_qp_modify(PvrdmaTransport *h, PvrdmaQP *qp, uint32_t mask,
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
        const struct pvrdma_ah_attr *ah = &a->ah_attr;

        sgid = host_gid_index(d, &h->core->gid[ah->grh.sgid_index]);
        if (sgid < 0) {
            trace_pvrdma_hv_modify_qp(qp->qpn, mask, a->qp_state, sgid,
                                      -EINVAL);
            return -EINVAL;
        }
        at.ah_attr.is_global = 1;
        memcpy(at.ah_attr.grh.dgid.raw, ah->grh.dgid.raw, 16);
        at.ah_attr.grh.flow_label = ah->grh.flow_label;
        at.ah_attr.grh.sgid_index = sgid;
        at.ah_attr.grh.hop_limit = ah->grh.hop_limit ? ah->grh.hop_limit : 64;
        at.ah_attr.grh.traffic_class = ah->grh.traffic_class;
        at.ah_attr.sl = ah->sl;
        at.ah_attr.static_rate = ah->static_rate;
        at.ah_attr.port_num = d->port;
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

static int hv_qp_state(PvrdmaTransport *h, PvrdmaQP *qp)
{
    struct ibv_qp_attr at;
    struct ibv_qp_init_attr init;

    if (ibv_query_qp(qp->hw, &at, IBV_QP_STATE, &init)) {
        return -1;
    }
    return at.qp_state;
}

static void hv_qp_destroy(PvrdmaTransport *h, PvrdmaQP *qp)
{
    struct ibv_qp *q = qp->hw;

    g_hash_table_remove(hv(h)->qps, GUINT_TO_POINTER(q->qp_num));
    ibv_destroy_qp(q);
    qp->hw = NULL;
}

static int hv_post_send(PvrdmaTransport *h, PvrdmaQP *qp, const PvrdmaSendWr *s)
{
    HvDev *d = hv(h);
    struct ibv_sge sge[PVRDMA_HARD_MAX_SGE];
    struct ibv_send_wr wr = { 0 }, *bad;

    for (uint32_t i = 0; i < s->num_sge; i++) {
        sge[i].addr = s->sge[i].addr;
        sge[i].length = s->sge[i].length;
        sge[i].lkey = s->sge[i].lkey;
    }
    wr.wr_id = s->wr_id;
    wr.sg_list = sge;
    wr.num_sge = s->num_sge;
    /* no IBV_SEND_INLINE: the addresses are the guest's, not ours */
    wr.send_flags = s->send_flags & (IBV_SEND_FENCE | IBV_SEND_SIGNALED |
                                     IBV_SEND_SOLICITED);
    switch (s->opcode) {
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

static int hv_post_recv(PvrdmaTransport *h, PvrdmaQP *qp, PvrdmaSRQ *srq,
                        uint64_t wr_id, const struct pvrdma_sge *s,
                        uint32_t num_sge)
{
    struct ibv_sge sge[PVRDMA_HARD_MAX_SGE];
    struct ibv_recv_wr wr = { 0 }, *bad;

    for (uint32_t i = 0; i < num_sge; i++) {
        sge[i].addr = s[i].addr;
        sge[i].length = s[i].length;
        sge[i].lkey = s[i].lkey;
    }
    wr.wr_id = wr_id;
    wr.sg_list = sge;
    wr.num_sge = num_sge;
    if (srq) {
        return -ibv_post_srq_recv(srq->hw, &wr, &bad);
    }
    return -ibv_post_recv(qp->hw, &wr, &bad);
}

static uint32_t hv_port_state(PvrdmaTransport *h)
{
    HvDev *d = hv(h);
    struct ibv_port_attr pa;

    if (ibv_query_port(d->ctx, d->port, &pa) || pa.state != IBV_PORT_ACTIVE) {
        return PVRDMA_PORT_DOWN;
    }
    return PVRDMA_PORT_ACTIVE;
}

/* ------------------------------------------------------------------ */
/* Async events                                                        */

static void hv_async_ready(void *opaque)
{
    HvDev *d = opaque;
    struct ibv_async_event ev;

    while ((errno = 0, ibv_get_async_event(d->ctx, &ev) == 0)) {
        uint32_t handle = 1;
        bool forward = true;

        switch (ev.event_type) {
        case IBV_EVENT_QP_FATAL:
        case IBV_EVENT_QP_REQ_ERR:
        case IBV_EVENT_QP_ACCESS_ERR:
        case IBV_EVENT_COMM_EST:
        case IBV_EVENT_SQ_DRAINED:
        case IBV_EVENT_QP_LAST_WQE_REACHED: {
            PvrdmaQP *qp = ev.element.qp->qp_context;

            handle = qp->handle;
            /* a twin that only holds the QP number of another path's QP */
            forward = qp->path == &d->t;
            break;
        }
        case IBV_EVENT_CQ_ERR:
            handle = ((HvCQ *)ev.element.cq->cq_context)->gcq->handle;
            break;
        case IBV_EVENT_SRQ_ERR:
        case IBV_EVENT_SRQ_LIMIT_REACHED:
            handle = ((PvrdmaSRQ *)ev.element.srq->srq_context)->handle;
            break;
        case IBV_EVENT_PORT_ACTIVE:
        case IBV_EVENT_PORT_ERR:
            forward = ev.element.port_num == d->port;
            break;
        case IBV_EVENT_DEVICE_FATAL:
            pvrdma_log_host("host device %s failed", d->name);
            break;
        case IBV_EVENT_GID_CHANGE:
            g_hash_table_remove_all(d->gid_idx);
            forward = false;
            break;
        default:
            forward = false;    /* LID/PKEY/SM/GID changes: not ours */
            break;
        }
        trace_pvrdma_hv_async(ev.event_type, handle);
        /* enum ibv_event_type and the device's event numbers agree */
        if (forward) {
            pvrdma_transport_event(d->t.core, ev.event_type, handle);
        }
        ibv_ack_async_event(&ev);
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
        hv_gone(d);
    }
}

/* ------------------------------------------------------------------ */
/* Device                                                              */

static void hv_destroy(PvrdmaTransport *h)
{
    HvDev *d = hv(h);

    if (!d->gone) {
        d->loop->set_fd_handler(d->loop_opaque, d->chan->fd, NULL, NULL,
                                NULL);
        d->loop->set_fd_handler(d->loop_opaque, d->ctx->async_fd, NULL,
                                NULL, NULL);
    }
    ibv_destroy_comp_channel(d->chan);
    ibv_close_device(d->ctx);
    g_hash_table_destroy(d->qps);
    g_hash_table_destroy(d->warned);
    g_hash_table_destroy(d->gid_idx);
    g_free(d->regions);
    g_free(d);
}

static uint32_t pow2_floor(uint32_t x)
{
    uint32_t p = 1;

    while (p <= x / 2) {
        p <<= 1;
    }
    return x ? p : 0;
}

static bool set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);

    return fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

/* Open dev (NULL: the first device with an active RoCE port). */
static struct ibv_context *open_dev(const char *dev, uint8_t *port,
                                    char **err)
{
    int n;
    struct ibv_device **list = ibv_get_device_list(&n);
    struct ibv_context *ctx = NULL;

    if (!list || !n) {
        *err = g_strdup("no host RDMA device (ibv_get_device_list found "
                        "none; load a driver, e.g. 'rdma link add rxe0 "
                        "type rxe netdev eth0' for soft-RoCE)");
        goto out;
    }
    for (int i = 0; i < n && !ctx; i++) {
        struct ibv_device_attr da;

        if (dev && strcmp(ibv_get_device_name(list[i]), dev)) {
            continue;
        }
        ctx = ibv_open_device(list[i]);
        if (!ctx || ibv_query_device(ctx, &da)) {
            int e = errno;

            if (ctx) {
                ibv_close_device(ctx);
                ctx = NULL;
            }
            if (dev) {
                *err = g_strdup_printf("cannot open host RDMA device %s: %s",
                                       dev, strerror(e));
                goto out;
            }
            continue;
        }
        for (uint8_t p = 1; !*port && p <= da.phys_port_cnt; p++) {
            struct ibv_port_attr pa;

            if (ibv_query_port(ctx, p, &pa) == 0 &&
                pa.state == IBV_PORT_ACTIVE &&
                pa.link_layer == IBV_LINK_LAYER_ETHERNET) {
                *port = p;
            }
        }
        if (!*port && !dev) {
            ibv_close_device(ctx);
            ctx = NULL;
        } else if (!*port) {
            *port = 1;
        }
    }
    if (!ctx && !*err) {
        *err = dev ? g_strdup_printf("no host RDMA device named '%s'", dev) :
               g_strdup("no host RDMA device with an active RoCE port");
    }
out:
    if (list) {
        ibv_free_device_list(list);
    }
    return ctx;
}

/* The host device owns the guest's objects; its QPs are queue paths. */
static const PvrdmaTransportOps hv_ops = {
    .name = "hostverbs",
    .flags = PVRDMA_TP_OWNER,
    .reaches = hv_reaches,
    .pd_create = hv_pd_create,
    .pd_destroy = hv_pd_destroy,
    .mr_create = hv_mr_create,
    .mr_destroy = hv_mr_destroy,
    .cq_create = hv_cq_create,
    .cq_destroy = hv_cq_destroy,
    .srq_create = hv_srq_create,
    .srq_modify = hv_srq_modify,
    .srq_destroy = hv_srq_destroy,
    .qp_create = hv_qp_create,
    .qp_destroy = hv_qp_destroy,
    .port_state = hv_port_state,
    .qp_modify = hv_qp_modify,
    .qp_state = hv_qp_state,
    .post_send = hv_post_send,
    .post_recv = hv_post_recv,
    .destroy = hv_destroy,
};

PvrdmaTransport *pvrdma_hostverbs_new(PvrdmaCore *c,
                                      const PvrdmaHcaConfig *cfg,
                                      PvrdmaLimits *lim,
                                      const PvrdmaShmRegion *regions,
                                      unsigned nregions,
                                      const PvrdmaLoopOps *loop,
                                      void *loop_opaque, char **err)
{
    struct ibv_device_attr da;
    struct ibv_port_attr pa;
    struct ibv_gid_entry ge;
    uint8_t port = cfg->port;
    struct ibv_context *ctx;
    HvDev *d;

    *err = NULL;
    ctx = open_dev(cfg->dev, &port, err);
    if (!ctx) {
        return NULL;
    }
    if (ibv_query_device(ctx, &da) || port > da.phys_port_cnt ||
        ibv_query_port(ctx, port, &pa)) {
        *err = g_strdup_printf("host RDMA device %s has no port %u",
                               ibv_get_device_name(ctx->device), port);
        ibv_close_device(ctx);
        return NULL;
    }
    if (pa.link_layer != IBV_LINK_LAYER_ETHERNET) {
        *err = g_strdup_printf("host RDMA device %s port %u is not RoCE "
                               "(Ethernet link layer); pvrdma needs RoCE",
                               ibv_get_device_name(ctx->device), port);
        ibv_close_device(ctx);
        return NULL;
    }
    if (cfg->gid_index >= pa.gid_tbl_len) {
        *err = g_strdup_printf("gid-index %d: %s port %u has %d GIDs",
                               cfg->gid_index,
                               ibv_get_device_name(ctx->device), port,
                               pa.gid_tbl_len);
        ibv_close_device(ctx);
        return NULL;
    }
    d = g_new0(HvDev, 1);
    d->ctx = ctx;
    d->port = port;
    d->gid_index = cfg->gid_index;
    d->active_mtu = pa.active_mtu;
    d->gid_tbl_len = pa.gid_tbl_len;
    g_strlcpy(d->name, ibv_get_device_name(ctx->device), sizeof(d->name));
    if (ibv_query_gid_ex(ctx, port, MAX(cfg->gid_index, 0), &ge, 0) != 0 ||
        !if_indextoname(ge.ndev_ifindex, d->netdev)) {
        d->netdev[0] = 0;
    }
    d->chan = ibv_create_comp_channel(ctx);
    if (!d->chan || !set_nonblock(d->chan->fd) ||
        !set_nonblock(ctx->async_fd)) {
        *err = g_strdup_printf("host RDMA device %s: completion channel: %s",
                               d->name, strerror(errno));
        if (d->chan) {
            ibv_destroy_comp_channel(d->chan);
        }
        ibv_close_device(ctx);
        g_free(d);
        return NULL;
    }
    d->regions = g_memdup2(regions, sizeof(*regions) * nregions);
    d->nregions = nregions;
    d->loop = loop;
    d->loop_opaque = loop_opaque;
    d->qps = g_hash_table_new(g_direct_hash, g_direct_equal);
    d->warned = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    d->gid_idx = g_hash_table_new_full(gid_key_hash, gid_key_equal, g_free,
                                       NULL);

    /* what the guest is offered: no more than the host device has */
    lim->max_qp = MIN(lim->max_qp, (uint32_t)da.max_qp);
    lim->max_qp_wr = pow2_floor(MIN(lim->max_qp_wr, (uint32_t)da.max_qp_wr));
    lim->max_sge = MIN(lim->max_sge, (uint32_t)da.max_sge);
    lim->max_cq = MIN(lim->max_cq, (uint32_t)da.max_cq);
    lim->max_cqe = pow2_floor(MIN(lim->max_cqe, (uint32_t)da.max_cqe));
    lim->max_mr = MIN(lim->max_mr, (uint32_t)da.max_mr);
    lim->max_pd = MIN(lim->max_pd, (uint32_t)da.max_pd);
    lim->max_ah = MIN(lim->max_ah, (uint32_t)da.max_ah);
    lim->max_srq = MIN(lim->max_srq, (uint32_t)da.max_srq);
    lim->max_srq_wr = pow2_floor(MIN(lim->max_srq_wr,
                                     (uint32_t)da.max_srq_wr));
    lim->max_srq_sge = MIN(lim->max_srq_sge, (uint32_t)da.max_srq_sge);
    /*
     * RDMA reads in flight: peers size theirs from the host device's
     * (perftest sets max_rd_atomic to the peer's max_dest_rd_atomic), so
     * the default follows the host device; a value set by hand is a cap.
     */
    if (lim->max_qp_rd_atom == PVRDMA_DEF_MAX_RD_ATOM) {
        lim->max_qp_rd_atom = MIN((uint32_t)da.max_qp_rd_atom, 255);
    } else {
        lim->max_qp_rd_atom = MIN(lim->max_qp_rd_atom,
                                  (uint32_t)da.max_qp_rd_atom);
    }
    lim->max_mr_size = MIN(lim->max_mr_size, da.max_mr_size);

    d->t = (PvrdmaTransport) { .ops = &hv_ops, .core = c };
    loop->set_fd_handler(loop_opaque, d->chan->fd, hv_comp_ready, NULL, d);
    loop->set_fd_handler(loop_opaque, ctx->async_fd, hv_async_ready, NULL, d);
    trace_pvrdma_hv_open(d->name, port, d->netdev[0] ? d->netdev : "?");
    return &d->t;
}
