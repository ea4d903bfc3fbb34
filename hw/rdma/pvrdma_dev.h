/*
 * QEMU VMware paravirtual RDMA device (PVRDMA): what the device's QEMU
 * glue files share.
 *
 * The glue is pvrdma.c (PCI/QOM: BARs, host services for the core,
 * realize, reset, properties) and four files beside it, each for one
 * thing the device does with the rest of QEMU:
 *   pvrdma_dev_host.c  the transports that reach outside the process:
 *                      co-resident (rendezvous directory, guest RAM for
 *                      peers) and the host HCA with rdma_cm (ibdev,
 *                      cm-listen), and their fd handlers
 *   pvrdma_dev_roce.c  RoCEv2 on the paired vmxnet3's netdev: the net
 *                      filter that takes its frames, the transmit path,
 *                      the x-roce-* counters
 *   pvrdma_dev_mig.c   migration: the vmstate, the VM state and migration
 *                      notifiers that pause and resume the transports
 *   pvrdma_dev_irq.c   interrupts: at once inside the re-entrancy guard,
 *                      else from a guarded bottom half
 * The device logic is the QEMU-free core (pvrdma_core.h,
 * hw/rdma/core/), which never includes this header.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_PVRDMA_DEV_H
#define HW_RDMA_PVRDMA_DEV_H

#include "hw/pci/pci.h"
#include "hw/pci/pci_device.h"
#include "hw/net/vmxnet3_defs.h"
#include "qemu/notify.h"
#include "system/runstate.h"
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_mig.h"

/*
 * QEMU 10.1 changed two interfaces of the glue: class_init's data became
 * const, and ramblock.h moved from exec/ to system/.  The device is for
 * 10.0; these let the same files build on later QEMUs too
 * (scripts/series-check.sh --newest; docs/devel/pvrdma.rst).
 */
#if QEMU_VERSION_MAJOR > 10 || (QEMU_VERSION_MAJOR == 10 && \
                                QEMU_VERSION_MINOR >= 1)
#define PVRDMA_CLASS_DATA const void
#define PVRDMA_RAMBLOCK_H "system/ramblock.h"
#else
#define PVRDMA_CLASS_DATA void
#define PVRDMA_RAMBLOCK_H "exec/ramblock.h"
#endif
#include "hw/rdma/pvrdma_info.h"


#define TYPE_PVRDMA "pvrdma"
OBJECT_DECLARE_SIMPLE_TYPE(PvrdmaState, PVRDMA)

/* the RoCEv2 frame tap on the vmxnet3's netdev (a net filter) */
#define TYPE_PVRDMA_ROCE_TAP "pvrdma-roce-tap"
OBJECT_DECLARE_SIMPLE_TYPE(PvrdmaRoceTap, PVRDMA_ROCE_TAP)

struct PvrdmaState {
    PCIDevice parent_obj;

    MemoryRegion regs;
    MemoryRegion uar;
    QEMUBH *bh;
    QEMUBH *irq_bh;         /* raises irq_pending, guarded */
    uint32_t irq_pending;   /* vectors raised outside the guard */
    QEMUTimer *timer;
    QEMUTimer *link_timer;
    PvrdmaLimits lim;
    bool coresident_on;     /* 'coresident': peers from x-pvrdma-peer-add */
    char *rendezvous;       /* co-resident transport directory */
    char *rendezvous_secret;    /* id of a secret object peers must share */
    uint32_t poll_max_ns;   /* deprecated, no effect (pvrdma_join()) */
    bool cr_rings;          /* 'x-coresident-rings': offer peers rings */
    char *ibdev;            /* host HCA: the device's name */
    uint8_t ibport;         /* host HCA port, 0: the first active one */
    int32_t gid_index;      /* host GID index to use, -1: the guest's GID */
    char *cm_listen;        /* host HCA: rdma_cm ports taken for the guest */
    PvrdmaTransport *coresident;
    bool roce_on;           /* 'roce': RoCEv2 on the vmxnet3's netdev */
    bool loopback_on;       /* 'x-loopback': the loopback transport */
    PvrdmaTransport *roce;  /* NULL: no RoCEv2 transport */
    bool roce_busy;         /* in pvrdma_roce_rx() or pvrdma_roce_tx() */
    PvrdmaRoceTap *roce_tap;    /* its frame tap, a child of the device */
    Notifier exit_notifier;
    Notifier pair_notifier; /* pairing with function 0 at machine done */
    PvrdmaCore core;
    PvrdmaMigImage mig;     /* the core's state while it is saved/loaded */
    bool state_blob;        /* 'x-state-blob': the older builds' stream */
    uint32_t mapped;        /* guest mappings held (x-mapped, for tests) */
    Error *migration_blocker;   /* ibdev: the host device's objects */
    VMChangeStateEntry *vmstate_change;
    NotifierWithReturn migration_notifier;
    bool quiesced;          /* transports paused for a save (see below) */
    bool moved;             /* the state went to a destination (postcopy) */
    bool bg_snapshot;       /* a background-snapshot migration is under way */
};

/* The paired vmxnet3 (function 0 of the device's slot), NULL if none. */
static inline VMXNET3State *pvrdma_nic(PvrdmaState *s)
{
    PCIDevice *f0 = pci_get_function_0(PCI_DEVICE(s));

    return f0 ? (VMXNET3State *)object_dynamic_cast(OBJECT(f0), TYPE_VMXNET3)
              : NULL;
}

/* pvrdma_dev_irq.c */
/* PvrdmaHostOps.notify, opaque the device */
void pvrdma_notify(void *opaque, unsigned vector);
/* the interrupt bottom half (irq_bh), opaque the device */
void pvrdma_irq_bh(void *opaque);
/* raise now what waits for the interrupt bottom half (the VM stops) */
void pvrdma_irq_flush(PvrdmaState *s);

/* pvrdma_dev_host.c */
bool pvrdma_join(PvrdmaState *s, Error **errp);
bool pvrdma_open_hca(PvrdmaState *s, Error **errp);
/* PvrdmaHostOps.set_fd_handler, opaque the device */
void pvrdma_set_fd_handler(void *opaque, int fd, void (*read)(void *),
                           void (*write)(void *), void *arg);

/* pvrdma_dev_qmp.c: PvrdmaHostOps.report, as a QMP event */
void pvrdma_report_event(void *opaque, const PvrdmaReport *r);

/* pvrdma_dev_roce.c */
void pvrdma_add_roce(PvrdmaState *s, VMXNET3State *nic);
void pvrdma_del_roce(PvrdmaState *s);
void pvrdma_roce_class_init(ObjectClass *klass);
/* PvrdmaHostOps.frame_tx, opaque the device */
void pvrdma_roce_tx(void *opaque, const uint8_t *frame, size_t len);

/* pvrdma_dev_mig.c */
extern const VMStateDescription vmstate_pvrdma;
void pvrdma_mig_watch(PvrdmaState *s);
/* PvrdmaHostOps.dirty, opaque the device */
void pvrdma_dirty_host(void *opaque, const void *host, uint64_t len);
void pvrdma_mig_unwatch(PvrdmaState *s);

#endif
