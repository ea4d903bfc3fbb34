/*
 * pvrdma host HCA transport: the guest's verbs objects become objects of a
 * host RDMA device (a real RoCE HCA or Linux soft-RoCE) through libibverbs.
 *
 * - Memory: a guest MR's pages are already mapped by the core as runs of
 *   contiguous host memory.  One run is registered as it is; several runs
 *   are mapped again, once each, side by side from the guest RAM's file
 *   (memfd/hugetlbfs, share=on) into one reserved range, which is then
 *   registered.  The host MR's IOVA is the guest's, so guest lkeys, rkeys
 *   and addresses go to the host device unchanged.  The DMA MR (kernel
 *   ULPs use guest physical addresses) covers guest RAM from 1 MiB to the
 *   end of the RAM block there, with IOVA = guest physical address.
 * - Fast registration (FRMRs, which kernel ULPs use for every I/O): the
 *   guest's FRMR is a host type 2 memory window, whose rkey takes the key
 *   byte the guest gives it; a FAST_REG_MR registers the guest's page
 *   list, mapped contiguously, as a host MR at the guest's IOVA and binds
 *   the window over it on the guest's QP, a LOCAL_INV invalidates the
 *   window there (hostverbs_obj.c says how).  Host devices without type 2
 *   windows give the guest no FRMRs (said at startup).
 * - GIDs: a guest GID is used through the host GID table entry with the
 *   same GID (the address must be on the host's netdev); 'gid-index'
 *   forces one host entry instead.
 * - Completions: one completion channel and the async event fd, both on
 *   the host's event loop; no polling thread.
 * - Transport choice: the device reaches a destination GID when the host's
 *   route to it leaves through the device's netdev (hv_reaches).  RC QPs
 *   with another transport (co-resident, RoCEv2 on the VM's NIC) keep their
 *   host twin for its QP number only.
 *
 * Everything runs with the caller's lock held (the BQL in QEMU).
 *
 * This file has the hooks table and the constructor, the device and its
 * port, the transport choice and the host's events; the host twins of the
 * guest's objects are in hostverbs_obj.c (hostverbs_int.h says how the
 * files share the work).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "hostverbs_int.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>

#define HV_POLL_BATCH   16
#define HV_RXE_VENDOR_ID 0xffffff   /* Linux soft-RoCE's */

/* ------------------------------------------------------------------ */
/* Transport choice                                                    */

/*
 * Transport choice: does traffic to dgid go through this device?  Yes when
 * the host's route to it leaves through the device's netdev: the source
 * address the kernel picks for dgid (connect() of a UDP socket: a route
 * lookup, no packet) is an address of that netdev.  A destination that is
 * an address of the netdev itself (another VM's GID there, the host's own)
 * counts too.  Asked once per RC QP at RTR and per GSI MAD, never per data
 * packet.
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
/* Completions                                                         */

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
    case IBV_WC_BIND_MW:
        return PVRDMA_WC_FAST_REG_MR;   /* the guest's FRMR is a window */
    case IBV_WC_LOCAL_INV:
        return PVRDMA_WC_LOCAL_INV;
    default:
        return op & IBV_WC_RECV ? PVRDMA_WC_RECV : PVRDMA_WC_SEND;
    }
}

/*
 * A receive that invalidated a key at the peer's request (SEND with
 * invalidate).  Linux rxe (6.1 and later) writes the kernel's
 * IB_WC_WITH_INVALIDATE (1 << 2) into user space's completions, which
 * libibverbs calls IBV_WC_IP_CSUM_OK; an RC receive has no checksum
 * flag to give, so from rxe that bit is the invalidation.
 */
static bool wc_with_inv(HvDev *d, const PvrdmaQP *qp, const struct ibv_wc *wc)
{
    if (wc->status != IBV_WC_SUCCESS || wc->opcode != IBV_WC_RECV) {
        return false;
    }
    return (wc->wc_flags & IBV_WC_WITH_INV) ||
           (d->rxe && qp->type == PVRDMA_QPT_RC &&
            (wc->wc_flags & IBV_WC_IP_CSUM_OK));
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
    if (wc_with_inv(d, qp, wc)) {
        w.wc_flags |= PVRDMA_WC_WITH_INVALIDATE;
        hv_frmr_remote_inv(d, wc->invalidated_rkey);
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
    PvrdmaCore *c = d->t.core;
    int err = errno;

    if (d->gone) {
        return;
    }
    d->gone = true;
    c->ops->set_fd_handler(c->opaque, d->chan->fd, NULL, NULL, NULL);
    c->ops->set_fd_handler(c->opaque, d->ctx->async_fd, NULL, NULL, NULL);
    warn_report("pvrdma: host device %s is gone (%s)", d->name,
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
        pvrdma_batch_begin(d->t.core);  /* one interrupt per CQ per poll */
        do {
            n = ibv_poll_cq(cq, HV_POLL_BATCH, wc);
            for (int i = 0; i < n; i++) {
                deliver(d, q, &wc[i]);
            }
        } while (n == HV_POLL_BATCH);
        pvrdma_batch_end(d->t.core);
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
        hv_gone(d);
    }
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
            /* a twin holding only the number of a QP on another transport */
            forward = qp->tp == &d->t;
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
            warn_report("pvrdma: host device %s failed", d->name);
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

static uint32_t hv_port_state(PvrdmaTransport *h)
{
    HvDev *d = hv(h);
    struct ibv_port_attr pa;

    if (ibv_query_port(d->ctx, d->port, &pa) || pa.state != IBV_PORT_ACTIVE) {
        return PVRDMA_PORT_DOWN;
    }
    return PVRDMA_PORT_ACTIVE;
}

static void hv_destroy(PvrdmaTransport *h)
{
    HvDev *d = hv(h);
    PvrdmaCore *c = h->core;

    if (!d->gone) {
        c->ops->set_fd_handler(c->opaque, d->chan->fd, NULL, NULL, NULL);
        c->ops->set_fd_handler(c->opaque, d->ctx->async_fd, NULL, NULL,
                               NULL);
    }
    ibv_destroy_comp_channel(d->chan);
    ibv_close_device(d->ctx);
    g_hash_table_destroy(d->qps);
    g_hash_table_destroy(d->warned);
    g_hash_table_destroy(d->gid_idx);
    g_hash_table_destroy(d->frmrs);
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

/*
 * Open the host device named dev; *port 0: its first active RoCE port
 * (port 1 if none is active yet).
 */
static struct ibv_context *open_dev(const char *dev, uint8_t *port,
                                    Error **errp)
{
    int n;
    struct ibv_device **list = ibv_get_device_list(&n);
    struct ibv_context *ctx = NULL;
    struct ibv_device_attr da;
    g_autoptr(GString) names = g_string_new(NULL);
    int i;

    if (!list || !n) {
        error_setg(errp, "no host RDMA device (ibv_get_device_list found "
                   "none; load a driver, e.g. 'rdma link add rxe0 "
                   "type rxe netdev eth0' for soft-RoCE)");
        goto out;
    }
    for (i = 0; i < n && strcmp(ibv_get_device_name(list[i]), dev); i++) {
        g_string_append_printf(names, "%s%s", names->len ? ", " : "",
                               ibv_get_device_name(list[i]));
    }
    if (i == n) {
        error_setg(errp, "no host RDMA device named '%s' (the host has: %s)",
                   dev, names->str);
        goto out;
    }
    ctx = ibv_open_device(list[i]);
    if (!ctx || ibv_query_device(ctx, &da)) {
        int e = errno;

        if (ctx) {
            ibv_close_device(ctx);
            ctx = NULL;
        }
        error_setg_errno(errp, e, "cannot open host RDMA device %s", dev);
        goto out;
    }
    for (uint8_t p = 1; !*port && p <= da.phys_port_cnt; p++) {
        struct ibv_port_attr pa;

        if (ibv_query_port(ctx, p, &pa) == 0 &&
            pa.state == IBV_PORT_ACTIVE &&
            pa.link_layer == IBV_LINK_LAYER_ETHERNET) {
            *port = p;
        }
    }
    if (!*port) {
        *port = 1;
    }
out:
    if (list) {
        ibv_free_device_list(list);
    }
    return ctx;
}

/*
 * Open the device and port cfg asks for (*port: the port), a RoCE port:
 * its attributes in *da and *pa.  NULL and errp set if there is none.
 */
static struct ibv_context *open_port(const PvrdmaHcaConfig *cfg,
                                     uint8_t *port,
                                     struct ibv_device_attr *da,
                                     struct ibv_port_attr *pa, Error **errp)
{
    struct ibv_context *ctx;

    ctx = open_dev(cfg->dev, port, errp);
    if (!ctx) {
        return NULL;
    }
    if (ibv_query_device(ctx, da) || *port > da->phys_port_cnt ||
        ibv_query_port(ctx, *port, pa)) {
        error_setg(errp, "host RDMA device %s has no port %u",
                   ibv_get_device_name(ctx->device), *port);
        ibv_close_device(ctx);
        return NULL;
    }
    if (pa->link_layer != IBV_LINK_LAYER_ETHERNET) {
        error_setg(errp, "host RDMA device %s port %u is not RoCE "
                   "(Ethernet link layer); pvrdma needs RoCE",
                   ibv_get_device_name(ctx->device), *port);
        ibv_close_device(ctx);
        return NULL;
    }
    if (cfg->gid_index >= pa->gid_tbl_len) {
        error_setg(errp, "gid-index %d: %s port %u has %d GIDs",
                   cfg->gid_index, ibv_get_device_name(ctx->device), *port,
                   pa->gid_tbl_len);
        ibv_close_device(ctx);
        return NULL;
    }
    return ctx;
}

/* what the guest is offered: no more than the host device has */
static void offer_limits(PvrdmaLimits *lim, const struct ibv_device_attr *da)
{
    lim->max_qp = MIN(lim->max_qp, (uint32_t)da->max_qp);
    lim->max_qp_wr = pow2_floor(MIN(lim->max_qp_wr, (uint32_t)da->max_qp_wr));
    lim->max_sge = MIN(lim->max_sge, (uint32_t)da->max_sge);
    lim->max_cq = MIN(lim->max_cq, (uint32_t)da->max_cq);
    lim->max_cqe = pow2_floor(MIN(lim->max_cqe, (uint32_t)da->max_cqe));
    lim->max_mr = MIN(lim->max_mr, (uint32_t)da->max_mr);
    lim->max_pd = MIN(lim->max_pd, (uint32_t)da->max_pd);
    lim->max_ah = MIN(lim->max_ah, (uint32_t)da->max_ah);
    lim->max_srq = MIN(lim->max_srq, (uint32_t)da->max_srq);
    lim->max_srq_wr = pow2_floor(MIN(lim->max_srq_wr,
                                     (uint32_t)da->max_srq_wr));
    lim->max_srq_sge = MIN(lim->max_srq_sge, (uint32_t)da->max_srq_sge);
    /*
     * RDMA reads in flight: peers size theirs from the host device's
     * (perftest sets max_rd_atomic to the peer's max_dest_rd_atomic), so
     * the default follows the host device; a value set by hand is a cap.
     */
    if (lim->max_qp_rd_atom == PVRDMA_DEF_MAX_RD_ATOM) {
        lim->max_qp_rd_atom = MIN((uint32_t)da->max_qp_rd_atom, 255);
    } else {
        lim->max_qp_rd_atom = MIN(lim->max_qp_rd_atom,
                                  (uint32_t)da->max_qp_rd_atom);
    }
    lim->max_mr_size = MIN(lim->max_mr_size, da->max_mr_size);
}

/*
 * Type 2 memory windows, which the guest's FRMRs are: advertised and
 * allocatable (a real HCA may advertise more than its firmware gives).
 */
static bool has_mw2(struct ibv_context *ctx, const struct ibv_device_attr *da)
{
    struct ibv_pd *pd;
    struct ibv_mw *mw;

    if (!(da->device_cap_flags & (IBV_DEVICE_MEM_WINDOW_TYPE_2A |
                                  IBV_DEVICE_MEM_WINDOW_TYPE_2B))) {
        return false;
    }
    pd = ibv_alloc_pd(ctx);
    mw = pd ? ibv_alloc_mw(pd, IBV_MW_TYPE_2) : NULL;
    if (mw) {
        ibv_dealloc_mw(mw);
    }
    if (pd) {
        ibv_dealloc_pd(pd);
    }
    return mw != NULL;
}

/* The host device owns the guest's objects: a queue transport. */
static const PvrdmaQueueOps hv_queue = {
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
};

static const PvrdmaTransportOps hv_ops = {
    .name = "hostverbs",
    .reaches = hv_reaches,
    .destroy = hv_destroy,
    .queue = &hv_queue,
};

PvrdmaTransport *pvrdma_hostverbs_new(PvrdmaCore *c,
                                      const PvrdmaHcaConfig *cfg,
                                      PvrdmaLimits *lim,
                                      const PvrdmaShmRegion *regions,
                                      unsigned nregions, Error **errp)
{
    struct ibv_device_attr da;
    struct ibv_port_attr pa;
    struct ibv_gid_entry ge;
    uint8_t port = cfg->port;
    struct ibv_context *ctx;
    HvDev *d;

    if (!c->ops->set_fd_handler) {
        error_setg(errp, "the host has no set_fd_handler to watch the "
                   "device's events with");
        return NULL;
    }
    ctx = open_port(cfg, &port, &da, &pa, errp);
    if (!ctx) {
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
        error_setg_errno(errp, errno, "host RDMA device %s: completion "
                         "channel", d->name);
        if (d->chan) {
            ibv_destroy_comp_channel(d->chan);
        }
        ibv_close_device(ctx);
        g_free(d);
        return NULL;
    }
    d->regions = g_memdup2(regions, sizeof(*regions) * nregions);
    d->nregions = nregions;
    d->qps = g_hash_table_new(g_direct_hash, g_direct_equal);
    d->warned = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    d->gid_idx = g_hash_table_new_full(hv_gid_key_hash, hv_gid_key_equal,
                                       g_free, NULL);

    d->frmrs = g_hash_table_new(NULL, NULL);
    d->max_qp_wr = da.max_qp_wr;
    d->rxe = da.vendor_id == HV_RXE_VENDOR_ID;

    offer_limits(lim, &da);
    d->mw2 = has_mw2(ctx, &da);
    if (!d->mw2) {
        lim->no_fast_reg = true;
        warn_report("pvrdma: host RDMA device %s has no type 2 memory windows: "
                    "the guest gets no fast-registration MRs, which "
                    "kernel ULPs need (NVMe over RDMA, NFS over RDMA, "
                    "iSER, SMB Direct, RDS)", d->name);
    }

    d->t = (PvrdmaTransport) { .ops = &hv_ops, .core = c };
    c->ops->set_fd_handler(c->opaque, d->chan->fd, hv_comp_ready, NULL, d);
    c->ops->set_fd_handler(c->opaque, ctx->async_fd, hv_async_ready, NULL, d);
    trace_pvrdma_hv_open(d->name, port, d->netdev[0] ? d->netdev : "?");
    return &d->t;
}
