/*
 * QEMU VMware paravirtual RDMA device (PVRDMA): what the device's QEMU
 * glue files share.
 *
 * The glue is pvrdma.c (PCI/QOM: BARs, host services for the core,
 * realize, reset, properties, the loopback transport) and files beside it,
 * each for one thing the device does with the rest of QEMU:
 *   pvrdma_dev_irq.c   interrupts: at once inside the re-entrancy guard,
 *                      else from a guarded bottom half
 *   pvrdma_dev_mig.c   migration: the vmstate, the VM state and migration
 *                      notifiers that pause and resume the transports
 *   pvrdma_dev_qmp.c   query-pvrdma, x-query-pvrdma-qps
 *   pvrdma_dev_event.c the QMP events (a transport's own from its link)
 *   pvrdma_dev_inject.c  x-pvrdma-inject: faults on purpose
 *   pvrdma_dev_hmp.c   info pvrdma, x_pvrdma_inject
 * and one per transport that reaches outside this QEMU process, each the
 * device side of that transport (a PvrdmaLink, below):
 *   pvrdma_dev_coresident.c  co-resident peers ('coresident',
 *                      'rendezvous'): this VM's RAM offered to them;
 *                      x-pvrdma-peer-add
 *   pvrdma_dev_hca.c   the host HCA with rdma_cm ('ibdev', 'cm-listen')
 *   pvrdma_dev_roce.c  RoCEv2 on the paired vmxnet3's netdev ('roce'): the
 *                      net filter that takes its frames, the transmit
 *                      path, the x-roce-* counters
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
#include "system/iothread.h"
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_mig.h"

/*
 * QEMU 10.1 changed two interfaces of the glue: class_init's data became
 * const, and ramblock.h moved from exec/ to system/.  The device is for
 * 10.0; these let the same files build on later QEMUs too.
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


struct PvrdmaState {
    PCIDevice parent_obj;

    MemoryRegion regs;
    MemoryRegion uar;
    QEMUBH *bh;
    QEMUBH *irq_bh;         /* raises irq_pending, guarded */
    uint32_t irq_pending;   /* vectors raised outside the guard (atomic) */
    QEMUTimer *timer;
    QEMUTimer *link_timer;
    /*
     * iothread=: the data path's bottom half and timer in its AioContext
     * while dp_on, and core_lock, which guards the core meanwhile
     * (pvrdma_dev_iothread.c); dp_bh NULL without iothread=
     */
    IOThread *iothread;
    QEMUBH *dp_bh;
    QEMUTimer *dp_timer;
    bool dp_on;
    uint64_t dp_runs;       /* passes run there (x-iothread-runs) */
    uint64_t dp_events;     /* fd events handled there (x-iothread-events) */
    uint64_t dp_polled;     /* of those, found by polling (x-iothread-polled) */
    QemuMutex core_lock;
    GHashTable *watches;    /* the transports' fds: fd -> PvrdmaFdWatch */
    GPtrArray *watches_gone;    /* removed, freed when no thread is in one */
    bool watches_hooks;     /* the IOThread's next pass sets poll hooks */
    bool watches_parked;    /* the data path moves: none is registered */
    PvrdmaLimits lim;
    bool loopback_on;       /* 'x-loopback': the loopback transport */
    GPtrArray *links;       /* PvrdmaLink: the transports' device sides */
    struct PvrdmaLink *frame_sink;  /* takes frame_tx: NULL, none */
    Notifier pair_notifier; /* pairing with function 0 at machine done */
    PvrdmaCore core;
    PvrdmaMigImage mig;     /* the core's state while it is saved/loaded */
    bool state_blob;        /* 'x-state-blob': the older builds' stream */
    uint32_t mapped;        /* guest mappings held (x-mapped, for tests) */
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

/*
 * The device side of a transport that reaches outside this process: its
 * options and how the device adds it.  pvrdma.c knows only the loopback
 * transport; every other one is a subclass of TYPE_PVRDMA_LINK in its own
 * file.  The device has one child of each subclass (named by 'child'),
 * whose properties it aliases, so they are the device's own options
 * (-device pvrdma,rendezvous=...), as a virtio proxy has its device's.
 * A link is a bus-less device that only its pvrdma device creates; the
 * device realizes it with itself (its options are fixed from then on).
 * At pairing (realize, or machine init done) the device asks its links
 * in 'order' to add their transports, each if its options ask for it
 * (the transport choice takes the first transport that reaches a GID);
 * at unrealize it has them take theirs away, before the core frees the
 * transports.
 */
#define TYPE_PVRDMA_LINK "pvrdma-link"
OBJECT_DECLARE_TYPE(PvrdmaLink, PvrdmaLinkClass, PVRDMA_LINK)

struct PvrdmaLink {
    DeviceState parent_obj;
    PvrdmaState *dev;       /* the device this link is a child of */
    PvrdmaTransport *t;     /* its transport (the core's), NULL: none */
};

struct PvrdmaTransportStatus;  /* query-pvrdma's (qapi-types-pvrdma.h) */

struct PvrdmaLinkClass {
    DeviceClass parent_class;
    int order;              /* the transport choice: lower comes first */
    const char *child;      /* its child property on the device */
    const char *path;       /* its transport's name (query-pvrdma) */
    bool iothread;          /* its transport may run in an IOThread */
    /* add the transport if the options ask for it; false, errp set */
    bool (*add)(PvrdmaLink *l, Error **errp);
    /* unrealize: take it away (the core frees it), also if not added */
    void (*del)(PvrdmaLink *l);
    /* query-pvrdma: what it adds to its transport's entry; may be NULL */
    void (*query)(PvrdmaLink *l, struct PvrdmaTransportStatus *q);
    /* a report of its transport's as a QMP event; false: not its */
    bool (*report)(PvrdmaLink *l, const PvrdmaReport *r);
    /* false, errp set: a migration with these capabilities cannot start */
    bool (*migration_check)(PvrdmaLink *l, Error **errp);
    /* the core's frame_tx, for the link that set itself as frame_sink */
    void (*frame_tx)(PvrdmaLink *l, const uint8_t *frame, size_t len);
};

/*
 * The RAM blocks a peer or the host device may map: shared, backed by a
 * file sealed against shrinking (a file could be truncated under its
 * mappings).  PvrdmaShmRegion, freed by the caller.
 */
GArray *pvrdma_shared_ram(void);
/* PvrdmaHostOps.set_fd_handler, opaque the device */
void pvrdma_set_fd_handler(void *opaque, int fd, void (*read)(void *),
                           void (*write)(void *), void *arg);

/* pvrdma_dev_irq.c */
/* PvrdmaHostOps.notify, opaque the device */
bool pvrdma_iothread_init(PvrdmaState *s, Error **errp);
void pvrdma_iothread_start(PvrdmaState *s);
void pvrdma_iothread_stop(PvrdmaState *s);
void pvrdma_iothread_fini(PvrdmaState *s);
/* PvrdmaHostOps.set_fd_handler with iothread= (pvrdma_set_fd_handler()) */
void pvrdma_iothread_watch(PvrdmaState *s, int fd, void (*read)(void *),
                           void (*write)(void *), void *arg);
/* PvrdmaHostOps.set_fd_poll with iothread= */
void pvrdma_iothread_watch_poll(PvrdmaState *s, int fd, bool (*poll)(void *),
                                void (*state)(void *, bool));
/* after the transports are gone: the watches' memory */
void pvrdma_iothread_watches_free(PvrdmaState *s);
void pvrdma_kick(void *opaque, unsigned delay_ms);
void pvrdma_core_lock(PvrdmaState *s);
void pvrdma_core_unlock(PvrdmaState *s);

void pvrdma_notify(void *opaque, unsigned vector);
/* the interrupt bottom half (irq_bh), opaque the device */
void pvrdma_irq_bh(void *opaque);
/* raise now what waits for the interrupt bottom half (the VM stops) */
void pvrdma_irq_flush(PvrdmaState *s);

/* pvrdma_dev_qmp.c: the device id names (ID or QOM path; NULL: the only one) */
PvrdmaState *pvrdma_qmp_find(const char *id, Error **errp);

/* pvrdma_dev_event.c: PvrdmaHostOps.report, as a QMP event */
void pvrdma_report_event(void *opaque, const PvrdmaReport *r);

/* pvrdma_dev_mig.c */
extern const VMStateDescription vmstate_pvrdma;
void pvrdma_mig_watch(PvrdmaState *s);
/* PvrdmaHostOps.dirty, opaque the device */
void pvrdma_dirty_host(void *opaque, const void *host, uint64_t len);
void pvrdma_mig_unwatch(PvrdmaState *s);

#endif
