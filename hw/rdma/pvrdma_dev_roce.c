/*
 * QEMU VMware paravirtual RDMA device (PVRDMA): RoCEv2 on the paired
 * vmxnet3's network.
 *
 * The device side of the RoCEv2 transport (backend/roce*.c): its link
 * ('roce'), the net filter that takes the RoCEv2 frames for this device
 * from the vmxnet3's netdev, the transmit path through that netdev, and
 * the transport's x-roce-* counters.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "qemu/main-loop.h"
#include "qemu/iov.h"
#include "qemu/error-report.h"
#include "qom/object_interfaces.h"
#include "hw/qdev-properties.h"
#include "net/net.h"
#include "net/eth.h"
#include "net/checksum.h"
#include "net/filter.h"
#include "net/vhost_net.h"
#include "standard-headers/linux/virtio_net.h"
#include "hw/rdma/pvrdma_roce.h"
#include "hw/rdma/roce_wire.h"
#include "trace/trace-hw_rdma.h"
#include "pvrdma_dev.h"

/* ------------------------------------------------------------------ */
/* RoCEv2 on the vmxnet3's network                                     */

/*
 * A RoCE NIC shares its Ethernet port between its RDMA engine and its
 * network interface; here the port is the netdev of the paired vmxnet3.
 * The RoCEv2 transport sends its frames out through that netdev as if the
 * vmxnet3 had sent them, and sees the frames the netdev delivers to the
 * vmxnet3 before the vmxnet3 does, through a net filter that the device
 * adds to the netdev itself (not the user).  Why a filter rather than a
 * hook in vmxnet3:
 *  - no patch to vmxnet3 or to QEMU's net core: filters are QEMU's
 *    interface for looking at (and taking) a netdev's frames;
 *  - the frame is taken before the NIC's receive path: the guest's
 *    vmxnet3 driver never sees RoCEv2 frames for the device (UDP 4791, as
 *    on a RoCE NIC), and its receive filters, rings and offloads play no
 *    part;
 *  - it works with every netdev whose frames pass through QEMU: tap
 *    (with or without vnet_hdr) and bridge, socket, stream, dgram,
 *    hubport; user too, though its NAT rewrites the IP addresses that
 *    the packets' ICRC covers, so RoCEv2 through slirp reaches nobody.
 * Limits, both of QEMU's net layer: QEMU refuses filters on a netdev with
 * vhost (vhost=on; vhost-net carries a virtio NIC's frames past QEMU, and
 * vmxnet3 never starts it), so with vhost there is no RoCEv2; and a netdev
 * stops reading once the NIC could not take a frame it passed on (the
 * guest's vmxnet3 driver not up, its receive ring full, the VM stopped)
 * until the NIC takes frames again: RoCEv2 frames behind it wait too.
 *
 * Everything here runs under the BQL: the filter in the main loop (the
 * netdev's fd handler), tx from the core's hooks.
 */
typedef struct PvrdmaHeldFrame {
    unsigned flags;         /* QEMU_NET_PACKET_FLAG_* */
    size_t size;
    uint8_t data[];         /* as the netdev sent it (virtio-net header) */
} PvrdmaHeldFrame;

/* frames held while the transport is busy; more pass on to the NIC */
#define PVRDMA_ROCE_HELD_MAX    256

#define TYPE_PVRDMA_ROCE_LINK "pvrdma-roce-link"
OBJECT_DECLARE_SIMPLE_TYPE(PvrdmaRoceLink, PVRDMA_ROCE_LINK)

/* the RoCEv2 frame tap on the vmxnet3's netdev (a net filter) */
#define TYPE_PVRDMA_ROCE_TAP "pvrdma-roce-tap"
OBJECT_DECLARE_SIMPLE_TYPE(PvrdmaRoceTap, PVRDMA_ROCE_TAP)

struct PvrdmaRoceLink {
    PvrdmaLink parent_obj;
    bool on;                /* 'roce' */
    bool busy;              /* in pvrdma_roce_rx() or frame_tx */
    PvrdmaRoceTap *tap;     /* its frame tap, a child of this link */
};

struct PvrdmaRoceTap {
    NetFilterState parent_obj;
    PvrdmaRoceLink *link;   /* NULL: not created by a pvrdma device */
    uint8_t *buf;           /* ROCE_MAX_FRAME bytes: one flattened frame */
    GQueue held;            /* PvrdmaHeldFrame: arrived while busy */
    QEMUBH *bh;             /* hands the held frames to the transport */
};

/*
 * Bytes of a frame that pvrdma_roce_peek() looks at: Ethernet, 802.1Q,
 * an IPv4 header with the most options (or IPv6), UDP.
 */
#define PVRDMA_ROCE_PEEK_LEN    (ROCE_ETH_HLEN + ROCE_VLAN_HLEN + 60 + \
                                 ROCE_UDP_HLEN)

/*
 * Is this frame (its first len bytes) RoCEv2 by its headers: Ethernet, an
 * optional 802.1Q tag, IPv4 (not a fragment) with protocol UDP or IPv6
 * with next header UDP, UDP destination port 4791?  A cheap look at every
 * frame the netdev delivers; pvrdma_roce_rx() checks the rest.  (A
 * candidate for roce_wire.h.)
 */
static bool pvrdma_roce_peek(const uint8_t *p, size_t len)
{
    size_t off = ROCE_ETH_HLEN;
    uint16_t type;

    if (len < ROCE_ETH_HLEN) {
        return false;
    }
    type = lduw_be_p(p + 12);
    if (type == ETH_P_VLAN) {
        if (len < ROCE_ETH_HLEN + ROCE_VLAN_HLEN) {
            return false;
        }
        type = lduw_be_p(p + 16);
        off += ROCE_VLAN_HLEN;
    }
    if (type == ETH_P_IP) {
        size_t ihl;

        if (len < off + ROCE_IPV4_HLEN) {
            return false;
        }
        ihl = (p[off] & 0xf) * 4;
        /* version, protocol; MF or a fragment offset: not (all of) UDP */
        if (p[off] >> 4 != 4 || ihl < ROCE_IPV4_HLEN ||
            p[off + 9] != IP_PROTO_UDP ||
            (lduw_be_p(p + off + 6) & (IP_MF | IP_OFFMASK))) {
            return false;
        }
        off += ihl;
    } else if (type == ETH_P_IPV6) {
        if (len < off + ROCE_IPV6_HLEN || p[off] >> 4 != 6 ||
            p[off + 6] != IP_PROTO_UDP) {
            return false;
        }
        off += ROCE_IPV6_HLEN;
    } else {
        return false;
    }
    return len >= off + 4 && lduw_be_p(p + off + 2) == ROCE_UDP_PORT;
}

/*
 * Hand one frame the peek accepted to the transport; true if it took it.
 * flags: the net layer's (a "raw" frame has no virtio-net header).
 */
static bool pvrdma_roce_tap_take(PvrdmaRoceTap *tap, unsigned flags,
                                 const struct iovec *iov, int iovcnt)
{
    PvrdmaRoceLink *rl = tap->link;
    PvrdmaTransport *t = PVRDMA_LINK(rl)->t;
    NetFilterState *nf = NETFILTER(tap);
    size_t hdr = flags & QEMU_NET_PACKET_FLAG_RAW ? 0 :
                 qemu_get_vnet_hdr_len(nf->netdev);
    size_t len = iov_size(iov, iovcnt) - hdr;
    struct virtio_net_hdr vh = { 0 };
    bool busy, taken;

    if (!t || len > ROCE_MAX_FRAME) {
        return false;
    }
    if (hdr >= sizeof(vh)) {
        iov_to_buf(iov, iovcnt, 0, &vh, sizeof(vh));
        if (vh.gso_type != VIRTIO_NET_HDR_GSO_NONE) {
            return false;       /* a coalesced super-frame: not RoCEv2 */
        }
    }
    iov_to_buf(iov, iovcnt, hdr, tap->buf, len);
    if (vh.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) {
        /* the host left the UDP checksum partial: complete it */
        size_t start = vh.csum_start, at = start + vh.csum_offset;

        if (start < len && at + 2 <= len) {
            stw_be_p(tap->buf + at,
                     net_raw_checksum(tap->buf + start, len - start));
        }
    }
    /*
     * The transport runs device code (the responder writes CQs and raises
     * interrupts): those it raises here come from the device's guarded
     * interrupt bottom half (pvrdma_notify()).
     */
    busy = rl->busy;
    rl->busy = true;
    taken = pvrdma_roce_rx(t, tap->buf, len);
    rl->busy = busy;
    return taken;
}

/*
 * Frames that arrived while the transport was busy (see
 * pvrdma_roce_tap_receive_iov), handed to it from a bottom half in their
 * order; those it does not take go on to the next filter and the NIC.
 * Only the frames held when it starts: a ping-pong between two devices
 * takes one round per main loop iteration.
 */
static void pvrdma_roce_tap_flush(void *opaque)
{
    PvrdmaRoceTap *tap = opaque;
    NetFilterState *nf = NETFILTER(tap);

    for (unsigned n = g_queue_get_length(&tap->held); n; n--) {
        PvrdmaHeldFrame *f = g_queue_pop_head(&tap->held);
        struct iovec iov = { .iov_base = f->data, .iov_len = f->size };

        if (!pvrdma_roce_tap_take(tap, f->flags, &iov, 1)) {
            qemu_netfilter_pass_to_next(nf->netdev, f->flags, &iov, 1, nf);
        }
        g_free(f);
    }
    if (!g_queue_is_empty(&tap->held)) {
        qemu_bh_schedule(tap->bh);
    }
}

/*
 * A frame the netdev delivers to the vmxnet3 (queue "tx": frames the
 * netdev sends).  RoCEv2 frames go to the transport, which takes those
 * for this device (return the size: nobody else sees them); everything
 * else passes on to the next filter and the NIC (return 0).
 *
 * The transport is never entered twice: a frame can arrive while it is
 * sending, when the netdev hands the frame it sends straight to another
 * NIC that answers at once (two pvrdma devices on one hub).  Such a frame
 * is held, and handed to the transport from a bottom half.
 */
static ssize_t pvrdma_roce_tap_receive_iov(NetFilterState *nf,
                                           NetClientState *sender,
                                           unsigned flags,
                                           const struct iovec *iov,
                                           int iovcnt,
                                           NetPacketSent *sent_cb)
{
    PvrdmaRoceTap *tap = PVRDMA_ROCE_TAP(nf);
    PvrdmaRoceLink *rl = tap->link;
    /* a tap with vnet_hdr puts a virtio-net header in front (as dump.c) */
    size_t hdr = flags & QEMU_NET_PACKET_FLAG_RAW ? 0 :
                 qemu_get_vnet_hdr_len(nf->netdev);
    size_t size = iov_size(iov, iovcnt), n;
    uint8_t head[PVRDMA_ROCE_PEEK_LEN];
    PvrdmaHeldFrame *f;

    if (!rl || !PVRDMA_LINK(rl)->t || size <= hdr) {
        return 0;
    }
    n = iov_to_buf(iov, iovcnt, hdr, head, sizeof(head));
    if (!pvrdma_roce_peek(head, n)) {
        return 0;
    }
    if (!rl->busy) {
        return pvrdma_roce_tap_take(tap, flags, iov, iovcnt) ? size : 0;
    }
    if (size - hdr > ROCE_MAX_FRAME ||
        g_queue_get_length(&tap->held) >= PVRDMA_ROCE_HELD_MAX) {
        return 0;               /* too big, or too many held: pass on */
    }
    f = g_malloc(sizeof(*f) + size);
    f->flags = flags;
    f->size = iov_to_buf(iov, iovcnt, 0, f->data, size);
    g_queue_push_tail(&tap->held, f);
    qemu_bh_schedule(tap->bh);
    return size;
}

static void pvrdma_roce_tap_setup(NetFilterState *nf, Error **errp)
{
    PvrdmaRoceTap *tap = PVRDMA_ROCE_TAP(nf);

    if (!tap->link) {
        error_setg(errp, "%s is added by the pvrdma device itself",
                   TYPE_PVRDMA_ROCE_TAP);
        return;
    }
    tap->buf = g_malloc(ROCE_MAX_FRAME);
    g_queue_init(&tap->held);
    tap->bh = qemu_bh_new_guarded(pvrdma_roce_tap_flush, tap,
                &DEVICE(PVRDMA_LINK(tap->link)->dev)->mem_reentrancy_guard);
}

/* At unrealize, or when the netdev is deleted (netdev_del) before us. */
static void pvrdma_roce_tap_cleanup(NetFilterState *nf)
{
    PvrdmaRoceTap *tap = PVRDMA_ROCE_TAP(nf);

    if (tap->link && tap->link->tap == tap) {
        trace_pvrdma_roce_tap_removed(nf->netdev_id);
        tap->link->tap = NULL;
    }
    if (tap->bh) {
        qemu_bh_delete(tap->bh);
        tap->bh = NULL;
    }
    g_queue_clear_full(&tap->held, g_free);
    g_free(tap->buf);
    tap->buf = NULL;
}

static void pvrdma_roce_tap_class_init(ObjectClass *oc,
                                       PVRDMA_CLASS_DATA *data)
{
    NetFilterClass *nfc = NETFILTER_CLASS(oc);

    nfc->setup = pvrdma_roce_tap_setup;
    nfc->cleanup = pvrdma_roce_tap_cleanup;
    nfc->receive_iov = pvrdma_roce_tap_receive_iov;
}

static const TypeInfo pvrdma_roce_tap_info = {
    .name = TYPE_PVRDMA_ROCE_TAP,
    .parent = TYPE_NETFILTER,
    .instance_size = sizeof(PvrdmaRoceTap),
    .class_init = pvrdma_roce_tap_class_init,
};

/*
 * The core's frame_tx (PvrdmaHostOps, through the device's frame_sink):
 * the transport's frames leave through the vmxnet3's netdev as the NIC's
 * own.  "raw" (as for announce frames): the net layer puts the empty
 * virtio-net header in front that a tap with vnet_hdr expects.  A frame
 * for a netdev that cannot take it now is queued by the net layer, or
 * dropped when its queue is full (a lost packet: the transport retries).
 */
static void roce_link_frame_tx(PvrdmaLink *l, const uint8_t *frame,
                               size_t len)
{
    PvrdmaRoceLink *rl = PVRDMA_ROCE_LINK(l);
    VMXNET3State *nic = pvrdma_nic(l->dev);
    bool busy = rl->busy;

    if (nic && len <= NET_BUFSIZE) {
        rl->busy = true;
        qemu_send_packet_raw(qemu_get_queue(nic->nic), frame, len);
        rl->busy = busy;
    }
}

static void pvrdma_no_roce(const char *why)
{
    trace_pvrdma_roce_not_added(why);
}

/*
 * Add the RoCEv2 transport (last: transport choice takes the first
 * transport that reaches a GID, so loopback and co-resident peers keep
 * their shorter paths) and its tap on the vmxnet3's netdev.  Nothing here
 * fails the device: without a usable netdev it works as before, without
 * RoCEv2.
 */
static bool roce_link_add(PvrdmaLink *l, Error **errp)
{
    PvrdmaRoceLink *rl = PVRDMA_ROCE_LINK(l);
    VMXNET3State *nic = pvrdma_nic(l->dev);
    NetClientState *peer = nic ? qemu_get_queue(nic->nic)->peer : NULL;
    Error *err = NULL;
    PvrdmaTransport *t;
    Object *obj;

    if (!rl->on) {
        pvrdma_no_roce("roce=off");
        return true;
    }
    if (!peer) {
        pvrdma_no_roce("the vmxnet3 has no netdev");
        return true;
    }
    if (get_vhost_net(peer)) {
        warn_report("pvrdma: netdev '%s' has vhost: QEMU's net filters "
                    "cannot see its frames, so RoCEv2 is off; vmxnet3 does "
                    "not use vhost, give the netdev vhost=off", peer->name);
        pvrdma_no_roce("the netdev has vhost");
        return true;
    }

    obj = object_new(TYPE_PVRDMA_ROCE_TAP);
    PVRDMA_ROCE_TAP(obj)->link = rl;
    object_property_set_str(obj, "netdev", peer->name, &error_abort);
    /* "tx": what the netdev sends, i.e. delivers to the NIC */
    object_property_set_str(obj, "queue", "tx", &error_abort);
    object_property_add_child(OBJECT(rl), "roce-tap", obj);
    object_unref(obj);          /* the link's child property holds it */
    if (!user_creatable_complete(USER_CREATABLE(obj), &err)) {
        warn_reportf_err(err, "pvrdma: no RoCEv2 on netdev '%s': ",
                         peer->name);
        object_unparent(obj);
        pvrdma_no_roce("the netdev refused the filter");
        return true;
    }
    t = pvrdma_roce_new(&l->dev->core);
    if (!t || !pvrdma_core_add_transport(&l->dev->core, t)) {
        pvrdma_transport_free(t);
        object_unparent(obj);
        pvrdma_no_roce("no room in the transport list");
        return true;
    }
    l->t = t;
    l->dev->frame_sink = l;
    rl->tap = PVRDMA_ROCE_TAP(obj);
    trace_pvrdma_roce_added(peer->name);
    return true;
}

/* Remove the tap first: it hands frames to the transport (core-freed). */
static void roce_link_del(PvrdmaLink *l)
{
    PvrdmaRoceLink *rl = PVRDMA_ROCE_LINK(l);

    if (rl->tap) {
        object_unparent(OBJECT(rl->tap));  /* cleanup clears tap */
    }
    rl->tap = NULL;
    l->t = NULL;
}

/* "x-roce-*": the RoCEv2 transport's counters (qom-get; tests) */
static const struct {
    const char *name;
    size_t off;
} pvrdma_roce_counters[] = {
    { "x-roce-tx-pkts", offsetof(PvrdmaPathStats, tx_pkts) },
    { "x-roce-tx-bytes", offsetof(PvrdmaPathStats, tx_bytes) },
    { "x-roce-rx-pkts", offsetof(PvrdmaPathStats, rx_pkts) },
    { "x-roce-rx-bytes", offsetof(PvrdmaPathStats, rx_bytes) },
    { "x-roce-retransmits", offsetof(PvrdmaPathStats, retransmits) },
    { "x-roce-timeouts", offsetof(PvrdmaPathStats, timeouts) },
    { "x-roce-rnr-naks", offsetof(PvrdmaPathStats, rnr_naks) },
    { "x-roce-seq-naks", offsetof(PvrdmaPathStats, seq_naks) },
    { "x-roce-dups", offsetof(PvrdmaPathStats, dups) },
    { "x-roce-drops", offsetof(PvrdmaPathStats, drops) },
};

static void pvrdma_get_roce_counter(Object *obj, Visitor *v,
                                    const char *name, void *opaque,
                                    Error **errp)
{
    PvrdmaLink *l = PVRDMA_LINK(obj);
    PvrdmaPathStats st = { 0 };
    uint64_t val;

    if (l->t) {
        pvrdma_roce_stats(l->t, &st);
    }
    val = *(uint64_t *)((char *)&st + *(size_t *)opaque);
    visit_type_uint64(v, name, &val, errp);
}

static const Property roce_link_props[] = {
    /*
     * Off by default: with it the device parses the frames the vmxnet3's
     * netdev delivers, a network-facing parser a VM only gets when asked.
     */
    DEFINE_PROP_BOOL("roce", PvrdmaRoceLink, on, false),
};

static void roce_link_class_init(ObjectClass *klass, PVRDMA_CLASS_DATA *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PvrdmaLinkClass *lc = PVRDMA_LINK_CLASS(klass);

    device_class_set_props(dc, roce_link_props);
    object_class_property_set_description(klass, "roce",
        "RoCEv2 on the paired vmxnet3's netdev (for destinations that "
        "are not on this device, co-resident or routed by the ibdev's "
        "netdev)");
    for (unsigned i = 0; i < ARRAY_SIZE(pvrdma_roce_counters); i++) {
        object_class_property_add(klass, pvrdma_roce_counters[i].name,
                                  "uint64", pvrdma_get_roce_counter, NULL,
                                  NULL,
                                  (void *)&pvrdma_roce_counters[i].off);
    }
    lc->add = roce_link_add;
    lc->del = roce_link_del;
    lc->order = 3;
    lc->child = "roce-link";
    lc->path = "roce";
    lc->frame_tx = roce_link_frame_tx;
}

static const TypeInfo roce_link_info = {
    .name = TYPE_PVRDMA_ROCE_LINK,
    .parent = TYPE_PVRDMA_LINK,
    .instance_size = sizeof(PvrdmaRoceLink),
    .class_init = roce_link_class_init,
};

static void pvrdma_roce_register_types(void)
{
    type_register_static(&pvrdma_roce_tap_info);
    type_register_static(&roce_link_info);
}

type_init(pvrdma_roce_register_types)
