/*
 * QEMU VMware paravirtual RDMA device (PVRDMA): PCI/QOM glue.
 *
 * The device logic lives in PvrdmaCore (pvrdma_core.h); this file maps the
 * BARs onto it, provides guest memory access and interrupts, and checks the
 * configuration.  The Linux vmw_pvrdma driver requires the device to be
 * function 1 of a slot whose function 0 is a vmxnet3 NIC; the port MAC and
 * node GUID follow that NIC.  The transports that reach outside QEMU come
 * through their links (TYPE_PVRDMA_LINK, one file each); interrupts,
 * migration and QMP have files of their own beside this one
 * (pvrdma_dev.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "qemu/module.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "hw/pci/msix.h"
#include "hw/pci/msi.h"
#include "hw/qdev-properties.h"
#include "system/system.h"
#include "system/dma.h"
#include "system/iothread.h"
#include "net/net.h"
#include "hw/rdma/pvrdma_loopback.h"
#include "trace/trace-hw_rdma.h"
#include "pvrdma_dev.h"
#include PVRDMA_RAMBLOCK_H

/*
 * The device keeps the driver's little-endian structures (rings, WQEs,
 * CQEs, the DSR) in host order, and so do the co-resident and RoCEv2 wire
 * formats' users: a big-endian host would need every access swapped.
 */
QEMU_BUILD_BUG_MSG(HOST_BIG_ENDIAN, "pvrdma: little-endian hosts only");

#define PVRDMA_REGS_BAR_SIZE    0x1000

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

/*
 * The handlers run device code outside the device's re-entrancy guard;
 * what could reach the device's own BARs from there, an interrupt whose
 * MSI-X address the guest aimed at them, is raised from the guarded
 * interrupt bottom half (pvrdma_notify()), and its DMA only ever reaches
 * RAM.  With iothread= they run where the data path is, under core_lock.
 */
void pvrdma_set_fd_handler(void *opaque, int fd, void (*read)(void *),
                           void (*write)(void *), void *arg)
{
    PvrdmaState *s = opaque;

    if (s->iothread) {
        pvrdma_iothread_watch(s, fd, read, write, arg);
        return;
    }
    qemu_set_fd_handler(fd, read, write, arg);
}

/* Only an IOThread polls (pvrdma_dev_iothread.c); the main loop does not */
static void pvrdma_set_fd_poll(void *opaque, int fd, bool (*poll)(void *),
                               void (*state)(void *, bool))
{
    PvrdmaState *s = opaque;

    if (s->iothread) {
        pvrdma_iothread_watch_poll(s, fd, poll, state);
    }
}

/* The transport's frames go out through the link that carries them. */
static void pvrdma_frame_tx(void *opaque, const uint8_t *frame, size_t len)
{
    PvrdmaLink *l = PVRDMA(opaque)->frame_sink;

    if (l) {
        PVRDMA_LINK_GET_CLASS(l)->frame_tx(l, frame, len);
    }
}

static const PvrdmaHostOps pvrdma_host_ops = {
    .dma_read = pvrdma_dma_read,
    .dma_write = pvrdma_dma_write,
    .map = pvrdma_map,
    .unmap = pvrdma_unmap,
    .dirty = pvrdma_dirty_host,                  /* pvrdma_dev_mig.c */
    .notify = pvrdma_notify,
    .kick = pvrdma_kick,
    .get_mac = pvrdma_get_mac,
    .uar_base = pvrdma_uar_base,
    .now_ms = pvrdma_now_ms,
    .link_up = pvrdma_link_up,
    .set_fd_handler = pvrdma_set_fd_handler,
    .set_fd_poll = pvrdma_set_fd_poll,
    .frame_tx = pvrdma_frame_tx,
    .report = pvrdma_report_event,               /* pvrdma_dev_event.c */
};

/*
 * vmxnet3 has no link-change hook for us: poll its link (set_link) a few
 * times a second and report PORT_ERR / PORT_ACTIVE on a change.
 */
#define PVRDMA_LINK_POLL_MS 250

static void pvrdma_link_poll(void *opaque)
{
    PvrdmaState *s = opaque;

    pvrdma_core_lock(s);
    pvrdma_core_check_link(&s->core);
    pvrdma_core_unlock(s);
    timer_mod(s->link_timer,
              qemu_clock_get_ms(QEMU_CLOCK_VIRTUAL) + PVRDMA_LINK_POLL_MS);
}

static void pvrdma_run(void *opaque)
{
    PvrdmaState *s = opaque;

    pvrdma_core_lock(s);
    if (s->dp_on) {
        qemu_bh_schedule(s->dp_bh);     /* the IOThread has it now */
    } else {
        pvrdma_core_run(&s->core);
    }
    pvrdma_core_unlock(s);
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
    uint32_t val;

    pvrdma_core_lock(s);
    val = pvrdma_core_reg_read(&s->core, addr);
    pvrdma_core_unlock(s);

    if (addr == PVRDMA_REG_ICR && !msix_enabled(pdev) && !msi_enabled(pdev)) {
        pci_set_irq(pdev, 0);
    }
    return val;
}

static void pvrdma_regs_write(void *opaque, hwaddr addr, uint64_t val,
                              unsigned size)
{
    PvrdmaState *s = opaque;

    pvrdma_core_lock(s);
    pvrdma_core_reg_write(&s->core, addr, val);
    pvrdma_core_unlock(s);
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

    pvrdma_core_lock(s);
    pvrdma_core_uar_write(&s->core, addr, val);
    pvrdma_core_unlock(s);
}

static const MemoryRegionOps pvrdma_uar_ops = {
    .read = pvrdma_uar_read,
    .write = pvrdma_uar_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .impl = { .min_access_size = 4, .max_access_size = 4 },
    .valid = { .min_access_size = 4, .max_access_size = 4 },
};

/* ------------------------------------------------------------------ */
/* QOM                                                                 */

static void pvrdma_exit(PCIDevice *pdev);

/* The BARs and interrupts; false (errp set, nothing left) if they fail. */
static bool pvrdma_init_pci(PvrdmaState *s, Error **errp)
{
    PCIDevice *pdev = PCI_DEVICE(s);

    pdev->config[PCI_INTERRUPT_PIN] = 1;
    memory_region_init_io(&s->regs, OBJECT(s), &pvrdma_regs_ops, s,
                          "pvrdma-regs", PVRDMA_REGS_BAR_SIZE);
    memory_region_init_io(&s->uar, OBJECT(s), &pvrdma_uar_ops, s,
                          "pvrdma-uar",
                          (uint64_t)s->lim.max_uar * PVRDMA_PAGE_SIZE);

    if (msix_init_exclusive_bar(pdev, PVRDMA_MAX_INTERRUPTS,
                                PVRDMA_BAR_MSIX, errp)) {
        return false;
    }
    for (unsigned v = 0; v < PVRDMA_MAX_INTERRUPTS; v++) {
        msix_vector_use(pdev, v);
    }
    pci_register_bar(pdev, PVRDMA_BAR_REGS, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     &s->regs);
    pci_register_bar(pdev, PVRDMA_BAR_UAR, PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &s->uar);
    if (msi_init(pdev, 0, 1, true, false, errp)) {
        msix_unuse_all_vectors(pdev);
        msix_uninit_exclusive_bar(pdev);
        return false;
    }
    return true;
}

/* A RAM block peers can map (pvrdma_shared_ram()). */
static int pvrdma_add_region(RAMBlock *rb, void *opaque)
{
    GArray *regions = opaque;
    int fd = qemu_ram_get_fd(rb);
    PvrdmaShmRegion r;

    if (fd < 0 || !qemu_ram_is_shared(rb) || !pvrdma_fd_sealed(fd)) {
        return 0;
    }
    r = (PvrdmaShmRegion) {
        .host = qemu_ram_get_host_addr(rb),
        .size = qemu_ram_get_used_length(rb),
        .fd = fd,
        .fd_offset = rb->fd_offset,
    };
    g_array_append_val(regions, r);
    return 0;
}

GArray *pvrdma_shared_ram(void)
{
    GArray *regions = g_array_new(false, false, sizeof(PvrdmaShmRegion));

    qemu_ram_foreach_block(pvrdma_add_region, regions);
    return regions;
}

/* links by order (g_slist_sort_with_data: QEMU 10.2 poisons g_slist_sort) */
static gint pvrdma_link_cmp(gconstpointer a, gconstpointer b, gpointer unused)
{
    return PVRDMA_LINK_CLASS(a)->order - PVRDMA_LINK_CLASS(b)->order;
}

/* One link of each kind, a child whose options are the device's. */
static void pvrdma_add_links(PvrdmaState *s)
{
    GSList *kinds = object_class_get_list(TYPE_PVRDMA_LINK, false);

    s->links = g_ptr_array_new();
    kinds = g_slist_sort_with_data(kinds, pvrdma_link_cmp, NULL);
    for (GSList *k = kinds; k; k = k->next) {
        Object *child = object_new(object_class_get_name(k->data));

        object_property_add_child(OBJECT(s), PVRDMA_LINK_CLASS(k->data)->child,
                                  child);
        object_unref(child);    /* the child property holds it */
        PVRDMA_LINK(child)->dev = s;
        qdev_alias_all_properties(DEVICE(child), OBJECT(s));
        g_ptr_array_add(s->links, child);
    }
    g_slist_free(kinds);
}

/*
 * The transports, in the order of the transport choice: loopback, then
 * the links' (co-resident, the host HCA, RoCEv2 on the vmxnet3's
 * network).  false (errp set) on a bad combination of options or a
 * transport that cannot start; the caller undoes what was done.
 */
static bool pvrdma_add_transports(PvrdmaState *s, Error **errp)
{
    if (s->loopback_on) {
        pvrdma_core_add_transport(&s->core, pvrdma_loopback_new(&s->core));
    }
    for (unsigned i = 0; i < s->links->len; i++) {
        PvrdmaLink *l = g_ptr_array_index(s->links, i);

        if (!PVRDMA_LINK_GET_CLASS(l)->add(l, errp)) {
            return false;
        }
    }
    return true;
}

/* At unrealize, the last added first; before the core frees them. */
static void pvrdma_del_transports(PvrdmaState *s)
{
    for (unsigned i = s->links->len; i-- > 0;) {
        PvrdmaLink *l = g_ptr_array_index(s->links, i);

        if (DEVICE(l)->realized) {
            PVRDMA_LINK_GET_CLASS(l)->del(l);
            qdev_unrealize(DEVICE(l));
        }
    }
    s->frame_sink = NULL;
}

static void pvrdma_not_function1(Error **errp)
{
    error_setg(errp, "pvrdma: must be function 1 of a slot whose "
               "function 0 is a vmxnet3 NIC");
    error_append_hint(errp, "Use e.g. -device vmxnet3,addr=4.0,"
                      "multifunction=on,netdev=... "
                      "-device pvrdma,addr=4.1\n");
}

/*
 * Pair with the vmxnet3 at function 0 and add the transports that need it.
 * Realize does this when function 0 is already there; otherwise at machine
 * init done (pvrdma_pair_late), because -device options do not come in
 * command-line order: QEMU creates every key=value -device before every
 * JSON one, and libvirt writes its own NICs as JSON.
 */
static bool pvrdma_pair(PvrdmaState *s, Error **errp)
{
    PCIDevice *f0 = pci_get_function_0(PCI_DEVICE(s));
    g_autofree char *mac = NULL;
    VMXNET3State *nic = pvrdma_nic(s);

    if (!f0) {
        pvrdma_not_function1(errp);
        return false;
    }
    if (!nic) {
        error_setg(errp, "pvrdma: function 0 of this slot is '%s', "
                   "not vmxnet3", object_get_typename(OBJECT(f0)));
        error_append_hint(errp, "The Linux vmw_pvrdma driver pairs with a "
                          "vmxnet3 NIC at function 0 of the same slot.\n");
        return false;
    }
    if (!pvrdma_add_transports(s, errp) || !pvrdma_iothread_init(s, errp)) {
        return false;
    }
    pvrdma_mig_watch(s);
    mac = qemu_mac_strdup_printf(nic->conf.macaddr.a);
    trace_pvrdma_realize(mac);
    return true;
}

/* A configuration error found after realize ends QEMU as realize would. */
static void pvrdma_pair_late(Notifier *n, void *data)
{
    PvrdmaState *s = container_of(n, PvrdmaState, pair_notifier);
    Error *err = NULL;

    /*
     * off the list (a notifier may remove itself): no dangling entry once
     * the device is unplugged
     */
    qemu_remove_machine_init_done_notifier(n);
    s->pair_notifier.notify = NULL;
    if (!pvrdma_pair(s, &err)) {
        error_report_err(err);
        exit(1);
    }
}

static void pvrdma_realize(PCIDevice *pdev, Error **errp)
{
    PvrdmaState *s = PVRDMA(pdev);
    const char *bad = pvrdma_limits_check(&s->lim);

    if (bad) {
        error_setg(errp, "pvrdma: %s", bad);
        return;
    }
    if (PCI_FUNC(pdev->devfn) == 0) {
        pvrdma_not_function1(errp);
        return;
    }
    if (!pvrdma_init_pci(s, errp)) {
        return;
    }
    for (unsigned i = 0; i < s->links->len; i++) {
        /* a bus-less device without realize of its own: cannot fail */
        qdev_realize(DEVICE(g_ptr_array_index(s->links, i)), NULL,
                     &error_abort);
    }
    s->bh = qemu_bh_new_guarded(pvrdma_run, s,
                                &DEVICE(pdev)->mem_reentrancy_guard);
    s->irq_bh = qemu_bh_new_guarded(pvrdma_irq_bh, s,
                                    &DEVICE(pdev)->mem_reentrancy_guard);
    s->timer = timer_new_ms(QEMU_CLOCK_VIRTUAL, pvrdma_timer, s);
    s->link_timer = timer_new_ms(QEMU_CLOCK_VIRTUAL, pvrdma_link_poll, s);
    timer_mod(s->link_timer,
              qemu_clock_get_ms(QEMU_CLOCK_VIRTUAL) + PVRDMA_LINK_POLL_MS);
    pvrdma_core_init(&s->core, &pvrdma_host_ops, s, &s->lim);
    s->mig.core = &s->core;
    if (!pci_get_function_0(pdev) && !phase_check(PHASE_MACHINE_READY)) {
        /* the vmxnet3 may come later on the command line */
        s->pair_notifier.notify = pvrdma_pair_late;
        qemu_add_machine_init_done_notifier(&s->pair_notifier);
        return;
    }
    if (!pvrdma_pair(s, errp)) {
        pvrdma_exit(pdev);
    }
}

static void pvrdma_exit(PCIDevice *pdev)
{
    PvrdmaState *s = PVRDMA(pdev);

    if (s->pair_notifier.notify) {
        qemu_remove_machine_init_done_notifier(&s->pair_notifier);
        s->pair_notifier.notify = NULL;
    }
    pvrdma_iothread_fini(s);   /* the data path is the main loop's again */
    pvrdma_mig_unwatch(s);
    pvrdma_del_transports(s);
    pvrdma_mig_image_clear(&s->mig);
    pvrdma_core_fini(&s->core);
    pvrdma_iothread_watches_free(s);
    qemu_bh_delete(s->bh);
    qemu_bh_delete(s->irq_bh);
    timer_free(s->timer);
    timer_free(s->link_timer);
    msi_uninit(pdev);
    msix_unuse_all_vectors(pdev);
    msix_uninit_exclusive_bar(pdev);
}

static void pvrdma_reset_hold(Object *obj, ResetType type)
{
    PvrdmaState *s = PVRDMA(obj);

    pvrdma_core_lock(s);
    pvrdma_core_reset(&s->core);
    pvrdma_core_unlock(s);
    qatomic_set(&s->irq_pending, 0);    /* raised before: gone with it */
    pci_set_irq(PCI_DEVICE(s), 0);
}

/*
 * x-iothread-runs, x-iothread-events, x-iothread-polled: the IOThread
 * counts while the monitor reads
 */
static void pvrdma_get_dp_count(Object *obj, Visitor *v, const char *name,
                                void *opaque, Error **errp)
{
    uint64_t n = qatomic_read((uint64_t *)opaque);

    visit_type_uint64(v, name, &n, errp);
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
    object_property_add(obj, "x-iothread-runs", "uint64",
                        pvrdma_get_dp_count, NULL, NULL, &s->dp_runs);
    object_property_add(obj, "x-iothread-events", "uint64",
                        pvrdma_get_dp_count, NULL, NULL, &s->dp_events);
    object_property_add(obj, "x-iothread-polled", "uint64",
                        pvrdma_get_dp_count, NULL, NULL, &s->dp_polled);
    pvrdma_add_links(s);
}

static void pvrdma_instance_finalize(Object *obj)
{
    PvrdmaState *s = PVRDMA(obj);

    g_ptr_array_free(s->links, true);   /* the children go with the device */
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
    DEFINE_PROP_UINT8("version", PvrdmaState, lim.version, PVRDMA_VERSION),
    /*
     * Off: no loopback transport, so QPs to the device's own GIDs take the
     * next transport that reaches them (with ibdev the host device's
     * loopback).  For tests of those transports.
     */
    DEFINE_PROP_BOOL("x-loopback", PvrdmaState, loopback_on, true),
    /* for a migration to or from a build before the VMState stream */
    DEFINE_PROP_BOOL("x-state-blob", PvrdmaState, state_blob, false),
    /* the data path in this IOThread (pvrdma_dev_iothread.c) */
    DEFINE_PROP_LINK("iothread", PvrdmaState, iothread, TYPE_IOTHREAD,
                     IOThread *),
};

static void pvrdma_class_init(ObjectClass *klass, PVRDMA_CLASS_DATA *data)
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
}

static void pvrdma_link_class_init(ObjectClass *klass, PVRDMA_CLASS_DATA *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);

    dc->user_creatable = false;     /* created by its device */
}

static const TypeInfo pvrdma_info = {
    .name = TYPE_PVRDMA,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(PvrdmaState),
    .instance_init = pvrdma_instance_init,
    .instance_finalize = pvrdma_instance_finalize,
    .class_init = pvrdma_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_CONVENTIONAL_PCI_DEVICE },
        { }
    },
};

static const TypeInfo pvrdma_link_info = {
    .name = TYPE_PVRDMA_LINK,
    .parent = TYPE_DEVICE,
    .instance_size = sizeof(PvrdmaLink),
    .class_size = sizeof(PvrdmaLinkClass),
    .class_init = pvrdma_link_class_init,
    .abstract = true,
};

static void pvrdma_register_types(void)
{
    type_register_static(&pvrdma_info);
    type_register_static(&pvrdma_link_info);
}

type_init(pvrdma_register_types)
