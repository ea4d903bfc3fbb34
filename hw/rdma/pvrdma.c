/*
 * QEMU VMware paravirtual RDMA device (PVRDMA): PCI/QOM glue.
 *
 * The device logic lives in PvrdmaCore (pvrdma_core.h); this file maps the
 * BARs onto it, provides guest memory access and interrupts, and checks the
 * configuration.  The Linux vmw_pvrdma driver requires the device to be
 * function 1 of a slot whose function 0 is a vmxnet3 NIC; the port MAC and
 * node GUID follow that NIC.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "qemu/module.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "hw/pci/pci_device.h"
#include "hw/pci/msix.h"
#include "hw/pci/msi.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "migration/blocker.h"
#include "migration/misc.h"
#include "migration/client-options.h"
#include "migration/qemu-file-types.h"
#include "system/runstate.h"
#include "system/dma.h"
#include "system/system.h"
#include "hw/net/vmxnet3_defs.h"
#include "hw/boards.h"
#include "exec/ramblock.h"
#include "qemu/units.h"
#include "qemu/cutils.h"
#include "qemu/error-report.h"
#include "crypto/secret_common.h"
#include "qemu/iov.h"
#include "qom/object_interfaces.h"
#include "net/net.h"
#include "net/eth.h"
#include "net/checksum.h"
#include "net/filter.h"
#include "net/vhost_net.h"
#include "standard-headers/linux/virtio_net.h"
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/rdma_backend.h"
#include "hw/rdma/roce_wire.h"
#include "trace/trace-hw_rdma.h"

#define TYPE_PVRDMA "pvrdma"
OBJECT_DECLARE_SIMPLE_TYPE(PvrdmaState, PVRDMA)

/* the RoCEv2 frame tap on the vmxnet3's netdev (a net filter) */
#define TYPE_PVRDMA_ROCE_TAP "pvrdma-roce-tap"
OBJECT_DECLARE_SIMPLE_TYPE(PvrdmaRoceTap, PVRDMA_ROCE_TAP)

#define PVRDMA_REGS_BAR_SIZE    0x1000

struct PvrdmaState {
    PCIDevice parent_obj;

    MemoryRegion regs;
    MemoryRegion uar;
    QEMUBH *bh;
    QEMUTimer *timer;
    QEMUTimer *link_timer;
    PvrdmaLimits lim;
    char *rendezvous;       /* co-resident transport directory */
    char *rendezvous_secret;    /* id of a secret object peers must share */
    char *ibdev;            /* host HCA: device name or "auto" */
    uint8_t ibport;         /* host HCA port, 0: the first active one */
    int32_t gid_index;      /* host GID index to use, -1: the guest's GID */
    char *cm_listen;        /* host HCA: rdma_cm ports taken for the guest */
    PvrdmaTransport *coresident;
    bool roce_on;           /* 'roce': RoCEv2 on the vmxnet3's netdev */
    bool loopback_on;       /* 'x-loopback': the loopback transport */
    PvrdmaTransport *roce;  /* NULL: no RoCEv2 transport */
    bool roce_busy;         /* in pvrdma_roce_rx() or the transport's tx */
    PvrdmaRoceTap *roce_tap;    /* its frame tap, a child of the device */
    GHashTable *fd_watches;     /* fd -> PvrdmaFdWatch */
    Notifier exit_notifier;
    PvrdmaCore core;
    uint32_t mapped;        /* guest mappings held (x-mapped, for tests) */
    Error *migration_blocker;   /* ibdev: the host device's objects */
    VMChangeStateEntry *vmstate_change;
    NotifierWithReturn migration_notifier;
    bool quiesced;          /* transports paused for a save (see below) */
    bool moved;             /* the state went to a destination (postcopy) */
    bool bg_snapshot;       /* a background-snapshot migration is under way */
};

/* ------------------------------------------------------------------ */
/* Host services for the core                                          */

/*
 * How many bytes from gpa are guest RAM the device may access (0: none).
 * MMIO (the device's own BARs among it), RAM devices, unassigned space and,
 * for writes, ROM are refused: the core's DMA only ever reaches RAM.
 */
static hwaddr pvrdma_ram_run(void *opaque, uint64_t gpa, hwaddr len,
                             bool is_write)
{
    AddressSpace *as = pci_get_address_space(PCI_DEVICE(opaque));
    hwaddr xlat, tl = len;
    MemoryRegion *mr;

    RCU_READ_LOCK_GUARD();
    mr = address_space_translate(as, gpa, &xlat, &tl, is_write,
                                 MEMTXATTRS_UNSPECIFIED);
    if (!memory_region_is_ram(mr) || memory_region_is_ram_device(mr) ||
        (is_write && mr->readonly)) {
        return 0;
    }
    return MIN(tl, len);
}

static bool pvrdma_dma_read(void *opaque, uint64_t gpa, void *buf, size_t len)
{
    return pvrdma_ram_run(opaque, gpa, len, false) == len &&
           pci_dma_read(PCI_DEVICE(opaque), gpa, buf, len) == MEMTX_OK;
}

static bool pvrdma_dma_write(void *opaque, uint64_t gpa, const void *buf,
                             size_t len)
{
    return pvrdma_ram_run(opaque, gpa, len, true) == len &&
           pci_dma_write(PCI_DEVICE(opaque), gpa, buf, len) == MEMTX_OK;
}

/* Map guest RAM only: MMIO or unassigned addresses are refused. */
static void *pvrdma_map(void *opaque, uint64_t gpa, uint64_t *len,
                        bool is_write)
{
    AddressSpace *as = pci_get_address_space(PCI_DEVICE(opaque));
    DMADirection dir = is_write ? DMA_DIRECTION_FROM_DEVICE :
                                  DMA_DIRECTION_TO_DEVICE;
    dma_addr_t l = pvrdma_ram_run(opaque, gpa, *len, is_write);
    void *p;

    if (!l) {
        *len = 0;
        return NULL;
    }
    p = dma_memory_map(as, gpa, &l, dir, MEMTXATTRS_UNSPECIFIED);
    *len = p ? l : 0;
    if (p) {
        PVRDMA(opaque)->mapped++;
    }
    return p;
}

static void pvrdma_unmap(void *opaque, void *host, uint64_t len, bool is_write)
{
    AddressSpace *as = pci_get_address_space(PCI_DEVICE(opaque));

    PVRDMA(opaque)->mapped--;
    dma_memory_unmap(as, host, len,
                     is_write ? DMA_DIRECTION_FROM_DEVICE :
                                DMA_DIRECTION_TO_DEVICE,
                     is_write ? len : 0);
}

static void pvrdma_notify(void *opaque, unsigned vector)
{
    PvrdmaState *s = opaque;
    PCIDevice *pdev = PCI_DEVICE(s);

    if (msix_enabled(pdev)) {
        msix_notify(pdev, vector);
        return;
    }
    /* One vector only: the driver's handler serves command responses. */
    if (vector != PVRDMA_INTR_VECTOR_RESPONSE) {
        return;
    }
    if (msi_enabled(pdev)) {
        msi_notify(pdev, 0);
    } else {
        s->core.icr |= PVRDMA_INTR_CAUSE_RESPONSE;
        pci_set_irq(pdev, 1);
    }
}

static void pvrdma_kick(void *opaque, unsigned delay_ms)
{
    PvrdmaState *s = opaque;

    if (delay_ms) {
        /* the earliest deadline wins; later waiters re-arm when it fires */
        timer_mod_anticipate(s->timer,
                             qemu_clock_get_ms(QEMU_CLOCK_VIRTUAL) + delay_ms);
    } else {
        qemu_bh_schedule(s->bh);
    }
}

static VMXNET3State *pvrdma_nic(PvrdmaState *s)
{
    PCIDevice *f0 = pci_get_function_0(PCI_DEVICE(s));

    return f0 ? (VMXNET3State *)object_dynamic_cast(OBJECT(f0), TYPE_VMXNET3)
              : NULL;
}

static void pvrdma_get_mac(void *opaque, uint8_t mac[6])
{
    VMXNET3State *nic = pvrdma_nic(opaque);

    if (nic) {
        memcpy(mac, nic->conf.macaddr.a, 6);
    } else {
        memset(mac, 0, 6);
    }
}

static bool pvrdma_link_up(void *opaque)
{
    VMXNET3State *nic = pvrdma_nic(opaque);

    return nic && !qemu_get_queue(nic->nic)->link_down;
}

static uint64_t pvrdma_uar_base(void *opaque)
{
    return pci_get_bar_addr(PCI_DEVICE(opaque), PVRDMA_BAR_UAR);
}

static int64_t pvrdma_now_ms(void *opaque)
{
    return qemu_clock_get_ms(QEMU_CLOCK_VIRTUAL);
}

static const PvrdmaHostOps pvrdma_host_ops = {
    .dma_read = pvrdma_dma_read,
    .dma_write = pvrdma_dma_write,
    .map = pvrdma_map,
    .unmap = pvrdma_unmap,
    .notify = pvrdma_notify,
    .kick = pvrdma_kick,
    .get_mac = pvrdma_get_mac,
    .uar_base = pvrdma_uar_base,
    .now_ms = pvrdma_now_ms,
    .link_up = pvrdma_link_up,
};

/*
 * vmxnet3 has no link-change hook for us: poll its link (set_link) a few
 * times a second and report PORT_ERR / PORT_ACTIVE on a change.
 */
#define PVRDMA_LINK_POLL_MS 250

static void pvrdma_link_poll(void *opaque)
{
    PvrdmaState *s = opaque;

    pvrdma_core_check_link(&s->core);
    timer_mod(s->link_timer,
              qemu_clock_get_ms(QEMU_CLOCK_VIRTUAL) + PVRDMA_LINK_POLL_MS);
}

static void pvrdma_run(void *opaque)
{
    PvrdmaState *s = opaque;

    pvrdma_core_run(&s->core);
}

/*
 * The delayed kick only schedules the bottom half: the core must run with
 * the device's re-entrancy guard engaged (qemu_bh_new_guarded), or an
 * interrupt it raises could reach the device's own BARs (a guest can aim
 * MSI-X there) and reset it under the run loop.
 */
static void pvrdma_timer(void *opaque)
{
    PvrdmaState *s = opaque;

    qemu_bh_schedule(s->bh);
}

/* ------------------------------------------------------------------ */
/* BARs                                                                */

static uint64_t pvrdma_regs_read(void *opaque, hwaddr addr, unsigned size)
{
    PvrdmaState *s = opaque;
    PCIDevice *pdev = PCI_DEVICE(s);
    uint32_t val = pvrdma_core_reg_read(&s->core, addr);

    if (addr == PVRDMA_REG_ICR && !msix_enabled(pdev) && !msi_enabled(pdev)) {
        pci_set_irq(pdev, 0);
    }
    return val;
}

static void pvrdma_regs_write(void *opaque, hwaddr addr, uint64_t val,
                              unsigned size)
{
    PvrdmaState *s = opaque;

    pvrdma_core_reg_write(&s->core, addr, val);
}

static const MemoryRegionOps pvrdma_regs_ops = {
    .read = pvrdma_regs_read,
    .write = pvrdma_regs_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .impl = { .min_access_size = 4, .max_access_size = 4 },
    .valid = { .min_access_size = 4, .max_access_size = 4 },
};

static uint64_t pvrdma_uar_read(void *opaque, hwaddr addr, unsigned size)
{
    trace_pvrdma_uar_read(addr);
    return 0;
}

static void pvrdma_uar_write(void *opaque, hwaddr addr, uint64_t val,
                             unsigned size)
{
    PvrdmaState *s = opaque;

    pvrdma_core_uar_write(&s->core, addr, val);
}

static const MemoryRegionOps pvrdma_uar_ops = {
    .read = pvrdma_uar_read,
    .write = pvrdma_uar_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .impl = { .min_access_size = 4, .max_access_size = 4 },
    .valid = { .min_access_size = 4, .max_access_size = 4 },
};

/* ------------------------------------------------------------------ */
/* Co-resident transport                                               */

/*
 * Transport fd handlers run device code (a peer's request writes our CQs
 * and raises MSI-X) outside the guarded bottom half: engage the device's
 * re-entrancy guard around them too, so an MSI-X vector the guest aimed
 * at our own registers cannot reset the device under the responder.
 */
typedef struct PvrdmaFdWatch {
    PvrdmaState *s;
    void (*read)(void *);
    void (*write)(void *);
    void *arg;
} PvrdmaFdWatch;

static void pvrdma_fd_call(PvrdmaFdWatch *w, void (*cb)(void *))
{
    MemReentrancyGuard *g = &DEVICE(w->s)->mem_reentrancy_guard;
    bool engaged = g->engaged_in_io;

    g->engaged_in_io = true;
    cb(w->arg);
    g->engaged_in_io = engaged;
}

static void pvrdma_fd_read(void *opaque)
{
    PvrdmaFdWatch *w = opaque;

    pvrdma_fd_call(w, w->read);
}

static void pvrdma_fd_write(void *opaque)
{
    PvrdmaFdWatch *w = opaque;

    pvrdma_fd_call(w, w->write);
}

static void pvrdma_set_fd_handler(void *opaque, int fd, void (*read)(void *),
                                  void (*write)(void *), void *arg)
{
    PvrdmaState *s = opaque;
    PvrdmaFdWatch *w;

    if (!read && !write) {
        qemu_set_fd_handler(fd, NULL, NULL, NULL);
        g_hash_table_remove(s->fd_watches, GINT_TO_POINTER(fd));
        return;
    }
    w = g_hash_table_lookup(s->fd_watches, GINT_TO_POINTER(fd));
    if (!w) {
        w = g_new0(PvrdmaFdWatch, 1);
        g_hash_table_insert(s->fd_watches, GINT_TO_POINTER(fd), w);
    }
    *w = (PvrdmaFdWatch) { s, read, write, arg };
    qemu_set_fd_handler(fd, read ? pvrdma_fd_read : NULL,
                        write ? pvrdma_fd_write : NULL, w);
}

static const PvrdmaLoopOps pvrdma_loop_ops = {
    .set_fd_handler = pvrdma_set_fd_handler,
};

static int pvrdma_add_region(RAMBlock *rb, void *opaque)
{
    GArray *regions = opaque;
    PvrdmaShmRegion r;

    if (qemu_ram_get_fd(rb) < 0 || !qemu_ram_is_shared(rb)) {
        return 0;
    }
    r = (PvrdmaShmRegion) {
        .host = qemu_ram_get_host_addr(rb),
        .size = qemu_ram_get_used_length(rb),
        .fd = qemu_ram_get_fd(rb),
        .fd_offset = rb->fd_offset,
    };
    g_array_append_val(regions, r);
    return 0;
}

/* QEMU exits without unrealizing devices: leave the directory tidy. */
static void pvrdma_exit_notify(Notifier *n, void *data)
{
    PvrdmaState *s = container_of(n, PvrdmaState, exit_notifier);

    if (s->coresident) {
        pvrdma_coresident_leave(s->coresident);
    }
}

/* Shorter rendezvous secrets are a guess away: warn. */
#define PVRDMA_SECRET_MIN   16

/*
 * Peers map our guest RAM: it must come from a shareable memory backend.
 * Offer every shared, fd-backed RAM block.  Peers must run as our uid and,
 * with 'rendezvous-secret', know the bytes of that secret object.
 */
static bool pvrdma_join(PvrdmaState *s, Error **errp)
{
    MachineState *ms = MACHINE(qdev_get_machine());
    g_autoptr(GArray) regions = g_array_new(false, false,
                                            sizeof(PvrdmaShmRegion));
    g_autofree char *err = NULL;
    uint8_t *secret = NULL;
    size_t secret_len = 0;
    PvrdmaTransport *t;

    if (!ms->ram || memory_region_get_fd(ms->ram) < 0 ||
        !qemu_ram_is_shared(ms->ram->ram_block)) {
        g_autofree char *sz = g_strdup_printf("%" PRIu64 "M",
                                              ms->ram_size / MiB);

        error_setg(errp, "pvrdma: rendezvous needs guest RAM that other "
                   "QEMU processes can map: add -object memory-backend-memfd,"
                   "id=mem,size=%s,share=on -machine memory-backend=mem", sz);
        return false;
    }
    if (s->rendezvous_secret) {
        if (qcrypto_secret_lookup(s->rendezvous_secret, &secret, &secret_len,
                                  errp)) {
            error_prepend(errp, "pvrdma: rendezvous-secret=%s: ",
                          s->rendezvous_secret);
            return false;
        }
        if (!secret_len) {
            g_free(secret);
            error_setg(errp, "pvrdma: rendezvous-secret=%s: the secret is "
                       "empty", s->rendezvous_secret);
            return false;
        }
        if (secret_len < PVRDMA_SECRET_MIN) {
            warn_report("pvrdma: rendezvous-secret=%s has %zu bytes: a "
                        "process that reaches the rendezvous directory can "
                        "test guesses of it offline; use %d random bytes "
                        "or more", s->rendezvous_secret, secret_len,
                        PVRDMA_SECRET_MIN);
        }
    }
    qemu_ram_foreach_block(pvrdma_add_region, regions);
    s->fd_watches = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    t = pvrdma_coresident_new(&s->core, s->rendezvous, secret, secret_len,
                              (PvrdmaShmRegion *)regions->data, regions->len,
                              &pvrdma_loop_ops, s, &err);
    if (secret) {
        explicit_bzero(secret, secret_len);     /* the transport has a copy */
        g_free(secret);
    }
    if (!t) {
        error_setg(errp, "pvrdma: %s", err);
        return false;
    }
    pvrdma_core_add_transport(&s->core, t);
    s->coresident = t;
    s->exit_notifier.notify = pvrdma_exit_notify;
    qemu_add_exit_notifier(&s->exit_notifier);
    return true;
}

#define PVRDMA_CM_MAX_PORTS 256

/*
 * 'cm-listen': PORT or FIRST-LAST, several joined with ':'.  false with
 * errp set on a bad list.
 */
static bool pvrdma_parse_ports(const char *list, GArray *ports, Error **errp)
{
    g_auto(GStrv) items = g_strsplit(list, ":", -1);

    for (char **it = items; *it; it++) {
        unsigned long first, last;
        const char *end;

        if (qemu_strtoul(*it, &end, 10, &first) < 0 ||
            (*end && *end != '-')) {
            goto bad;
        }
        last = first;
        if (*end == '-' && qemu_strtoul(end + 1, NULL, 10, &last) < 0) {
            goto bad;
        }
        if (!first || last > 65535 || last < first ||
            ports->len + (last - first + 1) > PVRDMA_CM_MAX_PORTS) {
            goto bad;
        }
        for (unsigned long p = first; p <= last; p++) {
            uint16_t v = p;

            g_array_append_val(ports, v);
        }
    }
    if (ports->len) {
        return true;
    }
bad:
    error_setg(errp, "pvrdma: cm-listen=%s: give TCP-style ports 1-65535 "
               "for the guest's rdma_cm listeners, e.g. 7174 or "
               "7174:18515-18520 (at most %d ports)", list,
               PVRDMA_CM_MAX_PORTS);
    return false;
}

/*
 * rdma_cm for the guest in host HCA mode.  Without 'cm-listen' the guest
 * can still connect out, so a host without rdma_cm is only a warning.
 */
static bool pvrdma_open_cm(PvrdmaState *s, GArray *ports, Error **errp)
{
    g_autofree char *err = NULL;
    PvrdmaTransport *t;

    t = pvrdma_hostcm_new(&s->core, (uint16_t *)ports->data, ports->len,
                          &pvrdma_loop_ops, s, &err);
    if (!t) {
        if (s->cm_listen) {
            error_setg(errp, "pvrdma: cm-listen: %s", err);
            return false;
        }
        warn_report("pvrdma: rdma_cm in the guest will not work: %s", err);
        return true;
    }
    pvrdma_core_add_transport(&s->core, t);
    return true;
}

/*
 * Host HCA mode: the guest's verbs objects become host objects.  Guest RAM
 * from a shareable backend lets MRs of scattered pages be mapped again
 * contiguously; without one only MRs of contiguous pages work.
 */
static bool pvrdma_open_hca(PvrdmaState *s, Error **errp)
{
    g_autoptr(GArray) regions = g_array_new(false, false,
                                            sizeof(PvrdmaShmRegion));
    g_autoptr(GArray) ports = g_array_new(false, false, sizeof(uint16_t));
    g_autofree char *err = NULL;
    PvrdmaTransport *t;
    PvrdmaHcaConfig cfg = {
        .dev = strcmp(s->ibdev, "auto") ? s->ibdev : NULL,
        .port = s->ibport,
        .gid_index = s->gid_index,
    };

    if (s->gid_index < -1) {
        error_setg(errp, "pvrdma: gid-index %d: use -1 (the guest's GID) or "
                   "a host GID table index", s->gid_index);
        return false;
    }
    if (s->cm_listen && !pvrdma_parse_ports(s->cm_listen, ports, errp)) {
        return false;
    }
    qemu_ram_foreach_block(pvrdma_add_region, regions);
    if (!s->fd_watches) {       /* the co-resident transport's, if any */
        s->fd_watches = g_hash_table_new_full(NULL, NULL, NULL, g_free);
    }
    t = pvrdma_hostverbs_new(&s->core, &cfg, &s->core.lim,
                             (PvrdmaShmRegion *)regions->data, regions->len,
                             &pvrdma_loop_ops, s, &err);
    if (!t) {
        error_setg(errp, "pvrdma: ibdev=%s: %s", s->ibdev, err);
        return false;
    }
    pvrdma_core_add_transport(&s->core, t);     /* the object owner */
    return pvrdma_open_cm(s, ports, errp);
}

/* "peers": co-resident peers connected now (qom-get; tests, management) */
static void pvrdma_get_peers(Object *obj, Visitor *v, const char *name,
                             void *opaque, Error **errp)
{
    PvrdmaState *s = PVRDMA(obj);
    uint32_t n = s->coresident ? pvrdma_coresident_peers(s->coresident) : 0;

    visit_type_uint32(v, name, &n, errp);
}

/*
 * "qps": what the QPs do, a line each (number, type, state, path, peer,
 * the path's counters), then a line per transport: qom-get, or
 * 'qom-get /machine/peripheral/ID qps' in HMP.
 */
static char *pvrdma_get_qps(Object *obj, Error **errp)
{
    return pvrdma_describe_qps(&PVRDMA(obj)->core);
}

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

struct PvrdmaRoceTap {
    NetFilterState parent_obj;
    PvrdmaState *dev;       /* NULL: not created by a pvrdma device */
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
    PvrdmaState *s = tap->dev;
    NetFilterState *nf = NETFILTER(tap);
    size_t hdr = flags & QEMU_NET_PACKET_FLAG_RAW ? 0 :
                 qemu_get_vnet_hdr_len(nf->netdev);
    size_t len = iov_size(iov, iovcnt) - hdr;
    struct virtio_net_hdr vh = { 0 };
    MemReentrancyGuard *g;
    bool engaged, busy, taken;

    if (!s->roce || len > ROCE_MAX_FRAME) {
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
     * The transport runs device code (the responder writes CQs, raises
     * MSI-X): engage the device's re-entrancy guard as for its fd
     * handlers, so an MSI-X vector aimed at our BARs cannot reset it.
     */
    g = &DEVICE(s)->mem_reentrancy_guard;
    engaged = g->engaged_in_io;
    g->engaged_in_io = true;
    busy = s->roce_busy;
    s->roce_busy = true;
    taken = pvrdma_roce_rx(s->roce, tap->buf, len);
    s->roce_busy = busy;
    g->engaged_in_io = engaged;
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
    PvrdmaState *s = tap->dev;
    /* a tap with vnet_hdr puts a virtio-net header in front (as dump.c) */
    size_t hdr = flags & QEMU_NET_PACKET_FLAG_RAW ? 0 :
                 qemu_get_vnet_hdr_len(nf->netdev);
    size_t size = iov_size(iov, iovcnt), n;
    uint8_t head[PVRDMA_ROCE_PEEK_LEN];
    PvrdmaHeldFrame *f;

    if (!s || !s->roce || size <= hdr) {
        return 0;
    }
    n = iov_to_buf(iov, iovcnt, hdr, head, sizeof(head));
    if (!pvrdma_roce_peek(head, n)) {
        return 0;
    }
    if (!s->roce_busy) {
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

    if (!tap->dev) {
        error_setg(errp, "%s is added by the pvrdma device itself",
                   TYPE_PVRDMA_ROCE_TAP);
        return;
    }
    tap->buf = g_malloc(ROCE_MAX_FRAME);
    g_queue_init(&tap->held);
    tap->bh = qemu_bh_new_guarded(pvrdma_roce_tap_flush, tap,
                                  &DEVICE(tap->dev)->mem_reentrancy_guard);
}

/* At unrealize, or when the netdev is deleted (netdev_del) before us. */
static void pvrdma_roce_tap_cleanup(NetFilterState *nf)
{
    PvrdmaRoceTap *tap = PVRDMA_ROCE_TAP(nf);

    if (tap->dev && tap->dev->roce_tap == tap) {
        trace_pvrdma_roce_tap_removed(nf->netdev_id);
        tap->dev->roce_tap = NULL;
    }
    if (tap->bh) {
        qemu_bh_delete(tap->bh);
        tap->bh = NULL;
    }
    g_queue_clear_full(&tap->held, g_free);
    g_free(tap->buf);
    tap->buf = NULL;
}

static void pvrdma_roce_tap_class_init(ObjectClass *oc, void *data)
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
 * The transport's frames leave through the vmxnet3's netdev as the NIC's
 * own.  "raw" (as for announce frames): the net layer puts the empty
 * virtio-net header in front that a tap with vnet_hdr expects.  A frame
 * for a netdev that cannot take it now is queued by the net layer, or
 * dropped when its queue is full (a lost packet: the transport retries).
 */
static void pvrdma_roce_tx(void *opaque, const uint8_t *frame, size_t len)
{
    PvrdmaState *s = opaque;
    VMXNET3State *nic = pvrdma_nic(s);
    bool busy = s->roce_busy;

    if (nic && len <= NET_BUFSIZE) {
        s->roce_busy = true;
        qemu_send_packet_raw(qemu_get_queue(nic->nic), frame, len);
        s->roce_busy = busy;
    }
}

static void pvrdma_no_roce(const char *why)
{
    trace_pvrdma_roce_not_added(why);
}

/*
 * Add the RoCEv2 transport (last: path choice takes the first transport
 * that reaches a GID, so loopback and co-resident peers keep their
 * shorter paths) and its tap on the vmxnet3's netdev.  Nothing here fails
 * the device: without a usable netdev it works as before, without RoCEv2.
 */
static void pvrdma_add_roce(PvrdmaState *s, VMXNET3State *nic)
{
    NetClientState *peer = qemu_get_queue(nic->nic)->peer;
    Error *err = NULL;
    PvrdmaTransport *t;
    Object *obj;

    if (!s->roce_on) {
        pvrdma_no_roce("roce=off");
        return;
    }
    if (!peer) {
        pvrdma_no_roce("the vmxnet3 has no netdev");
        return;
    }
    if (get_vhost_net(peer)) {
        warn_report("pvrdma: netdev '%s' has vhost: QEMU's net filters "
                    "cannot see its frames, so RoCEv2 is off; vmxnet3 does "
                    "not use vhost, give the netdev vhost=off", peer->name);
        pvrdma_no_roce("the netdev has vhost");
        return;
    }

    obj = object_new(TYPE_PVRDMA_ROCE_TAP);
    PVRDMA_ROCE_TAP(obj)->dev = s;
    object_property_set_str(obj, "netdev", peer->name, &error_abort);
    /* "tx": what the netdev sends, i.e. delivers to the NIC */
    object_property_set_str(obj, "queue", "tx", &error_abort);
    object_property_add_child(OBJECT(s), "roce-tap", obj);
    object_unref(obj);          /* the device's child property holds it */
    if (!user_creatable_complete(USER_CREATABLE(obj), &err)) {
        warn_reportf_err(err, "pvrdma: no RoCEv2 on netdev '%s': ",
                         peer->name);
        object_unparent(obj);
        pvrdma_no_roce("the netdev refused the filter");
        return;
    }
    t = pvrdma_roce_new(&s->core, pvrdma_roce_tx, s);
    if (!t || !pvrdma_core_add_transport(&s->core, t)) {
        if (t && t->ops->destroy) {
            t->ops->destroy(t);
        } else {
            g_free(t);
        }
        object_unparent(obj);
        pvrdma_no_roce("no room in the transport list");
        return;
    }
    s->roce = t;
    s->roce_tap = PVRDMA_ROCE_TAP(obj);
    trace_pvrdma_roce_added(peer->name);
}

/* Remove the tap first: it hands frames to the transport. */
static void pvrdma_del_roce(PvrdmaState *s)
{
    if (s->roce_tap) {
        object_unparent(OBJECT(s->roce_tap));  /* cleanup clears roce_tap */
    }
    s->roce_tap = NULL;
}

/* "x-roce-*": the RoCEv2 transport's counters (qom-get; tests) */
static const struct {
    const char *name;
    size_t off;
} pvrdma_roce_counters[] = {
    { "x-roce-tx-pkts", offsetof(PvrdmaRoceStats, tx_pkts) },
    { "x-roce-tx-bytes", offsetof(PvrdmaRoceStats, tx_bytes) },
    { "x-roce-rx-pkts", offsetof(PvrdmaRoceStats, rx_pkts) },
    { "x-roce-rx-bytes", offsetof(PvrdmaRoceStats, rx_bytes) },
    { "x-roce-retransmits", offsetof(PvrdmaRoceStats, retransmits) },
    { "x-roce-timeouts", offsetof(PvrdmaRoceStats, timeouts) },
    { "x-roce-rnr-naks", offsetof(PvrdmaRoceStats, rnr_naks) },
    { "x-roce-seq-naks", offsetof(PvrdmaRoceStats, seq_naks) },
    { "x-roce-dups", offsetof(PvrdmaRoceStats, dups) },
    { "x-roce-drops", offsetof(PvrdmaRoceStats, drops) },
};

static void pvrdma_get_roce_counter(Object *obj, Visitor *v,
                                    const char *name, void *opaque,
                                    Error **errp)
{
    PvrdmaState *s = PVRDMA(obj);
    PvrdmaRoceStats st = { 0 };
    uint64_t val;

    if (s->roce) {
        pvrdma_roce_stats(s->roce, &st);
    }
    val = *(uint64_t *)((char *)&st + *(size_t *)opaque);
    visit_type_uint64(v, name, &val, errp);
}

/* ------------------------------------------------------------------ */
/* QOM                                                                 */

static void pvrdma_exit(PCIDevice *pdev);
static void pvrdma_vm_state_change(void *opaque, bool running,
                                   RunState state);
static int pvrdma_migration_event(NotifierWithReturn *n, MigrationEvent *e,
                                  Error **errp);

static void pvrdma_realize(PCIDevice *pdev, Error **errp)
{
    PvrdmaState *s = PVRDMA(pdev);
    PCIDevice *f0 = pci_get_function_0(pdev);
    const char *bad = pvrdma_limits_check(&s->lim);
    g_autofree char *mac = NULL;
    VMXNET3State *nic;
    int ret;

    if (bad) {
        error_setg(errp, "pvrdma: %s", bad);
        return;
    }
    if (PCI_FUNC(pdev->devfn) == 0 || !f0) {
        error_setg(errp, "pvrdma: must be function 1 of a slot whose "
                   "function 0 is a vmxnet3 NIC");
        error_append_hint(errp, "Use e.g. -device vmxnet3,addr=4.0,"
                          "multifunction=on,netdev=... "
                          "-device pvrdma,addr=4.1\n");
        return;
    }
    nic = pvrdma_nic(s);
    if (!nic) {
        error_setg(errp, "pvrdma: function 0 of this slot is '%s', "
                   "not vmxnet3", object_get_typename(OBJECT(f0)));
        error_append_hint(errp, "The Linux vmw_pvrdma driver pairs with a "
                          "vmxnet3 NIC at function 0 of the same slot.\n");
        return;
    }

    pdev->config[PCI_INTERRUPT_PIN] = 1;
    memory_region_init_io(&s->regs, OBJECT(s), &pvrdma_regs_ops, s,
                          "pvrdma-regs", PVRDMA_REGS_BAR_SIZE);
    memory_region_init_io(&s->uar, OBJECT(s), &pvrdma_uar_ops, s,
                          "pvrdma-uar",
                          (uint64_t)s->lim.max_uar * PVRDMA_PAGE_SIZE);

    ret = msix_init_exclusive_bar(pdev, PVRDMA_MAX_INTERRUPTS,
                                  PVRDMA_BAR_MSIX, errp);
    if (ret) {
        return;
    }
    for (unsigned v = 0; v < PVRDMA_MAX_INTERRUPTS; v++) {
        msix_vector_use(pdev, v);
    }
    pci_register_bar(pdev, PVRDMA_BAR_REGS, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     &s->regs);
    pci_register_bar(pdev, PVRDMA_BAR_UAR, PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &s->uar);
    ret = msi_init(pdev, 0, 1, true, false, errp);
    if (ret) {
        msix_unuse_all_vectors(pdev);
        msix_uninit_exclusive_bar(pdev);
        return;
    }

    s->bh = qemu_bh_new_guarded(pvrdma_run, s,
                                &DEVICE(pdev)->mem_reentrancy_guard);
    s->timer = timer_new_ms(QEMU_CLOCK_VIRTUAL, pvrdma_timer, s);
    s->link_timer = timer_new_ms(QEMU_CLOCK_VIRTUAL, pvrdma_link_poll, s);
    timer_mod(s->link_timer,
              qemu_clock_get_ms(QEMU_CLOCK_VIRTUAL) + PVRDMA_LINK_POLL_MS);
    pvrdma_core_init(&s->core, &pvrdma_host_ops, s, &s->lim);
    /* loopback first: a QP's path is the first transport that reaches */
    if (s->loopback_on) {
        pvrdma_core_add_transport(&s->core, pvrdma_loopback_new(&s->core));
    }
    if (!s->ibdev && (s->ibport || s->gid_index != -1 || s->cm_listen)) {
        error_setg(errp, "pvrdma: 'ibport', 'gid-index' and 'cm-listen' "
                   "apply to a host RDMA device: they need 'ibdev'");
        pvrdma_exit(pdev);
        return;
    }
    if (s->rendezvous_secret && !s->rendezvous) {
        error_setg(errp, "pvrdma: 'rendezvous-secret' applies to the "
                   "co-resident transport: it needs 'rendezvous'");
        pvrdma_exit(pdev);
        return;
    }
    /*
     * The order is the path choice's: loopback, co-resident, the host HCA
     * (for the destinations its netdev routes), RoCEv2 on the vmxnet3's
     * network (any other), the host HCA as last resort.
     */
    if (s->rendezvous && !pvrdma_join(s, errp)) {
        pvrdma_exit(pdev);
        return;
    }
    if (s->ibdev && !pvrdma_open_hca(s, errp)) {
        pvrdma_exit(pdev);
        return;
    }
    pvrdma_add_roce(s, nic);    /* last transport; never fails realize */
    if (s->ibdev) {
        error_setg(&s->migration_blocker, "pvrdma: ibdev=%s: the guest's "
                   "objects live on the host RDMA device, whose QP numbers "
                   "and keys no other device can give back", s->ibdev);
        if (migrate_add_blocker(&s->migration_blocker, errp) < 0) {
            pvrdma_exit(pdev);
            return;
        }
    }
    s->vmstate_change = qemu_add_vm_change_state_handler(
        pvrdma_vm_state_change, s);
    migration_add_notifier(&s->migration_notifier, pvrdma_migration_event);
    mac = qemu_mac_strdup_printf(nic->conf.macaddr.a);
    trace_pvrdma_realize(mac);
}

static void pvrdma_exit(PCIDevice *pdev)
{
    PvrdmaState *s = PVRDMA(pdev);

    if (s->vmstate_change) {
        qemu_del_vm_change_state_handler(s->vmstate_change);
        s->vmstate_change = NULL;
        migration_remove_notifier(&s->migration_notifier);
    }
    migrate_del_blocker(&s->migration_blocker);
    pvrdma_del_roce(s);         /* no more frames for the transport */
    if (s->coresident) {
        qemu_remove_exit_notifier(&s->exit_notifier);
    }
    pvrdma_core_fini(&s->core);
    s->coresident = NULL;     /* freed with the core */
    s->roce = NULL;
    if (s->fd_watches) {
        g_hash_table_destroy(s->fd_watches);   /* every fd was unwatched */
        s->fd_watches = NULL;
    }
    qemu_bh_delete(s->bh);
    timer_free(s->timer);
    timer_free(s->link_timer);
    msi_uninit(pdev);
    msix_unuse_all_vectors(pdev);
    msix_uninit_exclusive_bar(pdev);
}

static void pvrdma_reset_hold(Object *obj, ResetType type)
{
    PvrdmaState *s = PVRDMA(obj);

    pvrdma_core_reset(&s->core);
    pci_set_irq(PCI_DEVICE(s), 0);
}

/*
 * Read-only counters for tests (qom-get): objects per type, guest mappings
 * held, guest errors seen.  A test that ends where it started has leaked
 * nothing the device tracks.
 */
static void pvrdma_instance_init(Object *obj)
{
    PvrdmaState *s = PVRDMA(obj);
    PvrdmaCore *c = &s->core;

    object_property_add_uint32_ptr(obj, "x-used-uc", &c->uc.used,
                                   OBJ_PROP_FLAG_READ);
    object_property_add_uint32_ptr(obj, "x-used-pd", &c->pd.used,
                                   OBJ_PROP_FLAG_READ);
    object_property_add_uint32_ptr(obj, "x-used-mr", &c->mr.used,
                                   OBJ_PROP_FLAG_READ);
    object_property_add_uint32_ptr(obj, "x-used-cq", &c->cq.used,
                                   OBJ_PROP_FLAG_READ);
    object_property_add_uint32_ptr(obj, "x-used-qp", &c->qp.used,
                                   OBJ_PROP_FLAG_READ);
    object_property_add_uint32_ptr(obj, "x-used-srq", &c->srq.used,
                                   OBJ_PROP_FLAG_READ);
    object_property_add_uint32_ptr(obj, "x-mapped", &s->mapped,
                                   OBJ_PROP_FLAG_READ);
    object_property_add_uint64_ptr(obj, "x-guest-errors", &c->guest_errors,
                                   OBJ_PROP_FLAG_READ);
}

static const Property pvrdma_props[] = {
    DEFINE_PROP_UINT32("max-qp", PvrdmaState, lim.max_qp, PVRDMA_DEF_MAX_QP),
    DEFINE_PROP_UINT32("max-qp-wr", PvrdmaState, lim.max_qp_wr,
                       PVRDMA_DEF_MAX_QP_WR),
    DEFINE_PROP_UINT32("max-sge", PvrdmaState, lim.max_sge,
                       PVRDMA_DEF_MAX_SGE),
    DEFINE_PROP_UINT32("max-cq", PvrdmaState, lim.max_cq, PVRDMA_DEF_MAX_CQ),
    DEFINE_PROP_UINT32("max-cqe", PvrdmaState, lim.max_cqe,
                       PVRDMA_DEF_MAX_CQE),
    DEFINE_PROP_UINT32("max-mr", PvrdmaState, lim.max_mr, PVRDMA_DEF_MAX_MR),
    DEFINE_PROP_UINT64("max-mr-size", PvrdmaState, lim.max_mr_size,
                       PVRDMA_DEF_MAX_MR_SIZE),
    DEFINE_PROP_UINT32("max-pd", PvrdmaState, lim.max_pd, PVRDMA_DEF_MAX_PD),
    DEFINE_PROP_UINT32("max-ah", PvrdmaState, lim.max_ah, PVRDMA_DEF_MAX_AH),
    DEFINE_PROP_UINT32("max-srq", PvrdmaState, lim.max_srq,
                       PVRDMA_DEF_MAX_SRQ),
    DEFINE_PROP_UINT32("max-srq-wr", PvrdmaState, lim.max_srq_wr,
                       PVRDMA_DEF_MAX_SRQ_WR),
    DEFINE_PROP_UINT32("max-srq-sge", PvrdmaState, lim.max_srq_sge,
                       PVRDMA_DEF_MAX_SRQ_SGE),
    DEFINE_PROP_UINT32("max-uar", PvrdmaState, lim.max_uar,
                       PVRDMA_DEF_MAX_UAR),
    DEFINE_PROP_UINT32("gid-table-len", PvrdmaState, lim.gid_tbl_len,
                       PVRDMA_DEF_GID_TBL_LEN),
    DEFINE_PROP_UINT32("max-rd-atomic", PvrdmaState, lim.max_qp_rd_atom,
                       PVRDMA_DEF_MAX_RD_ATOM),
    DEFINE_PROP_UINT8("roce-version", PvrdmaState, lim.roce_version, 2),
    DEFINE_PROP_STRING("rendezvous", PvrdmaState, rendezvous),
    DEFINE_PROP_STRING("rendezvous-secret", PvrdmaState, rendezvous_secret),
    DEFINE_PROP_STRING("ibdev", PvrdmaState, ibdev),
    DEFINE_PROP_UINT8("ibport", PvrdmaState, ibport, 0),
    DEFINE_PROP_INT32("gid-index", PvrdmaState, gid_index, -1),
    DEFINE_PROP_STRING("cm-listen", PvrdmaState, cm_listen),
    DEFINE_PROP_BOOL("roce", PvrdmaState, roce_on, true),
    /*
     * Off: no loopback transport, so QPs to the device's own GIDs take the
     * next path that reaches them (with ibdev the host device's loopback).
     * For tests of those paths.
     */
    DEFINE_PROP_BOOL("x-loopback", PvrdmaState, loopback_on, true),
};

/* ------------------------------------------------------------------ */
/* Migration                                                           */

/*
 * The core's state (pvrdma_mig.c) as one length-prefixed field.  It is
 * read only after the PCI state, so the BARs (the UAR page base) are
 * where the guest put them.
 */
#define PVRDMA_MIG_MAX_BYTES    (1 * GiB)

static int pvrdma_core_put(QEMUFile *f, void *pv, size_t size,
                           const VMStateField *field, JSONWriter *vmdesc)
{
    PvrdmaCore *c = pv;
    g_autofree char *why = pvrdma_core_migration_blocker(c, true);
    GByteArray *b;

    if (why) {
        error_report("pvrdma: the device cannot migrate now: %s", why);
        return -EBUSY;
    }
    b = g_byte_array_new();
    pvrdma_core_save(c, b);
    qemu_put_be64(f, b->len);
    qemu_put_buffer(f, b->data, b->len);
    g_byte_array_free(b, true);
    return 0;
}

static int pvrdma_core_get(QEMUFile *f, void *pv, size_t size,
                           const VMStateField *field)
{
    PvrdmaCore *c = pv;
    uint64_t len = qemu_get_be64(f);
    g_autofree uint8_t *buf = NULL;
    g_autofree char *err = NULL;

    if (len > PVRDMA_MIG_MAX_BYTES) {
        error_report("pvrdma: migrated state of %" PRIu64 " bytes refused",
                     len);
        return -EINVAL;
    }
    buf = g_try_malloc(MAX(len, 1));
    if (!buf) {
        error_report("pvrdma: no memory for a state of %" PRIu64 " bytes",
                     len);
        return -ENOMEM;
    }
    if (qemu_get_buffer(f, buf, len) != len) {
        error_report("pvrdma: migrated state truncated");
        return -EINVAL;
    }
    if (!pvrdma_core_load(c, buf, len, &err)) {
        error_report("pvrdma: migrated state refused: %s", err);
        return -EINVAL;
    }
    return 0;
}

static const VMStateInfo pvrdma_core_info = {
    .name = "pvrdma-core",
    .get = pvrdma_core_get,
    .put = pvrdma_core_put,
};

static void pvrdma_set_dirty(void *opaque, uint64_t gpa, uint64_t len)
{
    AddressSpace *as = pci_get_address_space(PCI_DEVICE(opaque));

    while (len) {
        hwaddr xlat, l = len;
        MemoryRegion *mr;

        RCU_READ_LOCK_GUARD();
        mr = address_space_translate(as, gpa, &xlat, &l, true,
                                     MEMTXATTRS_UNSPECIFIED);
        if (!l) {
            return;
        }
        if (memory_region_is_ram(mr)) {
            memory_region_set_dirty(mr, xlat, l);
        }
        gpa += l;
        len -= l;
    }
}

/* How long a pause may wait for the co-resident peers' answers. */
#define PVRDMA_QUIESCE_MS 2000

/*
 * The VM's state is about to be saved: the transports finish or give back
 * what they have in flight and pause their peers, so that neither the
 * guest's memory nor the device changes behind the save.
 */
static void pvrdma_quiesce(PvrdmaState *s)
{
    if (!s->quiesced) {
        s->quiesced = true;
        if (!pvrdma_core_quiesce(&s->core, PVRDMA_QUIESCE_MS)) {
            warn_report("pvrdma: a co-resident peer did not answer the "
                        "pause within %u ms and was dropped",
                        PVRDMA_QUIESCE_MS);
        }
    }
}

static void pvrdma_resume(PvrdmaState *s)
{
    if (s->quiesced) {
        s->quiesced = false;
        pvrdma_core_resume(&s->core);
    }
}

/*
 * The device writes guest RAM through mappings it holds for a long time
 * (rings, MRs), which dirty logging does not see.  When the VM stops (the
 * last pass of a migration follows, a snapshot or a plain stop), every
 * page it holds mapped is marked dirty, so the last RAM pass carries what
 * it wrote.  A stop for a migration's switch-over or a snapshot pauses the
 * transports first; the VM running again ends that pause.
 */
static void pvrdma_vm_state_change(void *opaque, bool running,
                                   RunState state)
{
    PvrdmaState *s = opaque;

    if (running) {
        pvrdma_resume(s);
        return;
    }
    /* a background snapshot stops the VM (PAUSED) to save the devices */
    if (state == RUN_STATE_FINISH_MIGRATE || state == RUN_STATE_SAVE_VM ||
        (state == RUN_STATE_PAUSED && s->bg_snapshot)) {
        pvrdma_quiesce(s);
    }
    pvrdma_core_mapped_pages(&s->core, pvrdma_set_dirty, s);
}

/*
 * A migration starts: refuse it now, with the reason, if the device's
 * state cannot move (pvrdma_core_put checks again when it is saved, and
 * for snapshots, which do not come here).  A VM that is already stopped
 * pauses its transports now, for the whole migration.  When it is over,
 * the peers learn that the state moved (they wait for the destination),
 * or, if it failed, the pause ends.
 */
static int pvrdma_migration_event(NotifierWithReturn *n, MigrationEvent *e,
                                  Error **errp)
{
    PvrdmaState *s = container_of(n, PvrdmaState, migration_notifier);
    g_autofree char *why = NULL;

    switch (e->type) {
    case MIG_EVENT_PRECOPY_SETUP:
        /*
         * Co-resident peers read and write this VM's RAM through their own
         * mappings, which userfaultfd does not see: on a postcopy
         * destination they would touch pages that have not come over yet
         * (a fresh page, which the one from the source can then no longer
         * replace); during a background snapshot their writes would not
         * be write-protected, and the snapshot would hold RAM newer than
         * the devices' state.
         */
        if (s->rendezvous &&
            (migrate_postcopy_ram() || migrate_background_snapshot())) {
            error_setg(errp, "pvrdma: %s is not supported with "
                       "rendezvous=%s: co-resident peers access this VM's "
                       "RAM directly, where userfaultfd does not see them; "
                       "migrate without it",
                       migrate_postcopy_ram() ? "postcopy-ram" :
                       "background-snapshot", s->rendezvous);
            return -ENOTSUP;
        }
        why = pvrdma_core_migration_blocker(&s->core, false);
        if (why) {
            error_setg(errp, "pvrdma: the device cannot migrate now: %s",
                       why);
            return -EBUSY;
        }
        s->moved = false;
        s->bg_snapshot = migrate_background_snapshot();
        if (!runstate_is_running()) {
            pvrdma_quiesce(s);
        }
        break;
    case MIG_EVENT_PRECOPY_DONE:
        /*
         * At the end, and in postcopy also when the destination takes
         * over.  A background snapshot's VM goes on here: nothing moved.
         */
        if (s->quiesced && !s->bg_snapshot) {
            pvrdma_core_moved(&s->core);
            s->moved = true;
        }
        s->bg_snapshot = false;
        break;
    case MIG_EVENT_PRECOPY_FAILED:
        s->bg_snapshot = false;
        /* a postcopy that fails after the switch: the state is not ours */
        if (!s->moved) {
            pvrdma_resume(s);
        }
        break;
    default:
        break;
    }
    return 0;
}

static const VMStateDescription vmstate_pvrdma = {
    .name = "pvrdma",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_PCI_DEVICE(parent_obj, PvrdmaState),
        VMSTATE_MSIX(parent_obj, PvrdmaState),
        {
            .name = "core",
            .version_id = 1,
            .size = sizeof(PvrdmaCore),
            .info = &pvrdma_core_info,
            .flags = VMS_SINGLE,
            .offset = offsetof(PvrdmaState, core),
        },
        VMSTATE_END_OF_LIST()
    },
};

static void pvrdma_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);
    ResettableClass *rc = RESETTABLE_CLASS(klass);

    k->realize = pvrdma_realize;
    k->exit = pvrdma_exit;
    k->vendor_id = PVRDMA_VENDOR_ID;
    k->device_id = PVRDMA_DEVICE_ID;
    k->revision = 0x00;
    k->class_id = PCI_CLASS_NETWORK_OTHER;
    dc->desc = "VMware paravirtual RDMA (PVRDMA) HCA";
    dc->vmsd = &vmstate_pvrdma;
    rc->phases.hold = pvrdma_reset_hold;
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
    device_class_set_props(dc, pvrdma_props);
    object_class_property_add(klass, "peers", "uint32", pvrdma_get_peers,
                              NULL, NULL, NULL);
    object_class_property_set_description(klass, "peers",
        "co-resident peers connected through the rendezvous directory");
    object_class_property_add_str(klass, "qps", pvrdma_get_qps, NULL);
    object_class_property_set_description(klass, "qps",
        "each QP's type, state, path (loopback, coresident, roce, "
        "hostverbs, per-request) and the path's counters, then each "
        "transport's");
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
}

static const TypeInfo pvrdma_info = {
    .name = TYPE_PVRDMA,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(PvrdmaState),
    .instance_init = pvrdma_instance_init,
    .class_init = pvrdma_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_CONVENTIONAL_PCI_DEVICE },
        { }
    },
};

static void pvrdma_register_types(void)
{
    type_register_static(&pvrdma_info);
    type_register_static(&pvrdma_roce_tap_info);
}

type_init(pvrdma_register_types)
