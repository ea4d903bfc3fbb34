/*
 * QEMU VMware paravirtual RDMA device (PVRDMA): migration.
 *
 * The device's vmstate (the PCI and MSI-X state, then the core's state
 * from pvrdma_mig.c and pvrdma_mig_load.c as one field), and the
 * notifiers that pause the transports for a save and end the pause, or
 * tell the peers the state moved.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/units.h"
#include "qemu/error-report.h"
#include "hw/pci/msix.h"
#include "migration/vmstate.h"
#include "migration/misc.h"
#include "migration/client-options.h"
#include "migration/qemu-file-types.h"
#include "system/runstate.h"
#include "pvrdma_dev.h"

/* ------------------------------------------------------------------ */
/* Migration                                                           */

/*
 * The core's state (pvrdma_mig*.c) as one length-prefixed field.  It is
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
    /* before the state is saved: the interrupts of what was done */
    pvrdma_irq_flush(s);
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
        if (s->coresident &&
            (migrate_postcopy_ram() || migrate_background_snapshot())) {
            g_autofree char *how = s->rendezvous ?
                g_strdup_printf("rendezvous=%s", s->rendezvous) :
                g_strdup("coresident=on");

            error_setg(errp, "pvrdma: %s is not supported with %s: "
                       "co-resident peers access this VM's RAM directly, "
                       "where userfaultfd does not see them; migrate "
                       "without it",
                       migrate_postcopy_ram() ? "postcopy-ram" :
                       "background-snapshot", how);
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

const VMStateDescription vmstate_pvrdma = {
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

/* realize: follow the VM's run state and migrations */
void pvrdma_mig_watch(PvrdmaState *s)
{
    s->vmstate_change = qemu_add_vm_change_state_handler(
        pvrdma_vm_state_change, s);
    migration_add_notifier(&s->migration_notifier, pvrdma_migration_event);
}

void pvrdma_mig_unwatch(PvrdmaState *s)
{
    if (s->vmstate_change) {
        qemu_del_vm_change_state_handler(s->vmstate_change);
        s->vmstate_change = NULL;
        migration_remove_notifier(&s->migration_notifier);
    }
}
