/*
 * QEMU VMware paravirtual RDMA device (PVRDMA): migration.
 *
 * The device's vmstate: the PCI and MSI-X state, then the core's state as
 * the records of a PvrdmaMigImage (include/hw/rdma/pvrdma_mig.h: saved by
 * pvrdma_mig.c, loaded by replay in pvrdma_mig_load.c), or with
 * x-state-blob=on as the one opaque field older builds wrote and read.
 * And the notifiers that pause the transports for a save and end the
 * pause, or tell the peers the state moved.
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
 * x-state-blob=on: the core's state as the one length-prefixed field of
 * older builds (pvrdma_mig_blob.c).  It is read only after the PCI state,
 * so the BARs (the UAR page base) are where the guest put them.
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
    Error *err = NULL;

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
        error_reportf_err(err, "pvrdma: migrated state refused: ");
        return -EINVAL;
    }
    return 0;
}

static const VMStateInfo pvrdma_core_info = {
    .name = "pvrdma-core",
    .get = pvrdma_core_get,
    .put = pvrdma_core_put,
};

/* ------------------------------------------------------------------ */
/* The core's state as VMState                                         */

/*
 * The records are flat (their pages are runs of one pool, their send slots
 * and transport records in arrays of their own), so QEMU describes each
 * array once in the stream's JSON description, not record by record.
 */
static const VMStateDescription vmstate_pvrdma_gid = {
    .name = "pvrdma/gid",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(type, PvrdmaMigGid),
        VMSTATE_BUFFER(gid, PvrdmaMigGid),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_pvrdma_uc = {
    .name = "pvrdma/uc",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(handle, PvrdmaMigHandle),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_pvrdma_pd = {
    .name = "pvrdma/pd",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(handle, PvrdmaMigPD),
        VMSTATE_UINT32(ctx, PvrdmaMigPD),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_pvrdma_cq = {
    .name = "pvrdma/cq",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(handle, PvrdmaMigCQ),
        VMSTATE_UINT32(ctx, PvrdmaMigCQ),
        VMSTATE_UINT32(cqe, PvrdmaMigCQ),
        VMSTATE_UINT32(page0, PvrdmaMigCQ),
        VMSTATE_UINT32(npages, PvrdmaMigCQ),
        VMSTATE_UINT32(priv, PvrdmaMigCQ),
        VMSTATE_UINT8(armed, PvrdmaMigCQ),
        VMSTATE_UINT8(error, PvrdmaMigCQ),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_pvrdma_mr = {
    .name = "pvrdma/mr",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(handle, PvrdmaMigMR),
        VMSTATE_UINT32(pd, PvrdmaMigMR),
        VMSTATE_UINT32(kind, PvrdmaMigMR),
        VMSTATE_UINT32(access, PvrdmaMigMR),
        VMSTATE_UINT32(key, PvrdmaMigMR),
        VMSTATE_UINT8(valid, PvrdmaMigMR),
        VMSTATE_UINT64(iova, PvrdmaMigMR),
        VMSTATE_UINT64(length, PvrdmaMigMR),
        VMSTATE_UINT32(max_pages, PvrdmaMigMR),
        VMSTATE_UINT64(page_size, PvrdmaMigMR),
        VMSTATE_UINT32(page0, PvrdmaMigMR),
        VMSTATE_UINT32(npages, PvrdmaMigMR),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_pvrdma_srq = {
    .name = "pvrdma/srq",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(handle, PvrdmaMigSRQ),
        VMSTATE_UINT32(pd, PvrdmaMigSRQ),
        VMSTATE_UINT32(max_wr, PvrdmaMigSRQ),
        VMSTATE_UINT32(max_sge, PvrdmaMigSRQ),
        VMSTATE_UINT32(limit, PvrdmaMigSRQ),
        VMSTATE_UINT32(page0, PvrdmaMigSRQ),
        VMSTATE_UINT32(npages, PvrdmaMigSRQ),
        VMSTATE_UINT32(priv, PvrdmaMigSRQ),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_pvrdma_qp = {
    .name = "pvrdma/qp",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(handle, PvrdmaMigQP),
        VMSTATE_UINT8(type, PvrdmaMigQP),
        VMSTATE_UINT8(is_srq, PvrdmaMigQP),
        VMSTATE_UINT8(sq_sig_all, PvrdmaMigQP),
        VMSTATE_UINT32(pd, PvrdmaMigQP),
        VMSTATE_UINT32(scq, PvrdmaMigQP),
        VMSTATE_UINT32(rcq, PvrdmaMigQP),
        VMSTATE_UINT32(srq, PvrdmaMigQP),
        VMSTATE_UINT32(max_send_wr, PvrdmaMigQP),
        VMSTATE_UINT32(max_recv_wr, PvrdmaMigQP),
        VMSTATE_UINT32(max_send_sge, PvrdmaMigQP),
        VMSTATE_UINT32(max_recv_sge, PvrdmaMigQP),
        VMSTATE_UINT32(send_chunks, PvrdmaMigQP),
        VMSTATE_UINT32(page0, PvrdmaMigQP),
        VMSTATE_UINT32(npages, PvrdmaMigQP),
        VMSTATE_UINT8(state, PvrdmaMigQP),
        VMSTATE_BUFFER(attr, PvrdmaMigQP),
        VMSTATE_UINT32(sq_priv, PvrdmaMigQP),
        VMSTATE_UINT32(sq_head, PvrdmaMigQP),
        VMSTATE_UINT32(rq_priv, PvrdmaMigQP),
        VMSTATE_UINT8(sq_failed, PvrdmaMigQP),
        VMSTATE_UINT8(comm_est, PvrdmaMigQP),
        VMSTATE_UINT32(events, PvrdmaMigQP),
        VMSTATE_UINT64(hold, PvrdmaMigQP),
        VMSTATE_UINT32(nslots, PvrdmaMigQP),
        VMSTATE_UINT8(has_tp, PvrdmaMigQP),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_pvrdma_slot = {
    .name = "pvrdma/slot",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(qp, PvrdmaMigSlot),
        VMSTATE_UINT64(wr_id, PvrdmaMigSlot),
        VMSTATE_UINT32(opcode, PvrdmaMigSlot),
        VMSTATE_UINT32(byte_len, PvrdmaMigSlot),
        VMSTATE_INT32(status, PvrdmaMigSlot),
        VMSTATE_UINT8(signaled, PvrdmaMigSlot),
        VMSTATE_UINT8(held, PvrdmaMigSlot),
        VMSTATE_END_OF_LIST()
    },
};

static bool mig_tp_len_ok(void *opaque, int version_id)
{
    return ((PvrdmaMigTp *)opaque)->len <= PVRDMA_MIG_TP_STATE_MAX;
}

static const VMStateDescription vmstate_pvrdma_tp = {
    .name = "pvrdma/tp",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(qp, PvrdmaMigTp),
        VMSTATE_BUFFER(name, PvrdmaMigTp),
        VMSTATE_UINT32(len, PvrdmaMigTp),
        VMSTATE_VALIDATE("transport state", mig_tp_len_ok),
        VMSTATE_VBUFFER_ALLOC_UINT32(state, PvrdmaMigTp, 0, NULL, len),
        VMSTATE_END_OF_LIST()
    },
};

/*
 * While the stream is read, each count is checked before what it announces
 * is allocated: at most what the device's table holds (objects), what a
 * queue can have (send slots), 1 GiB of page addresses (pages).  On a load
 * the check also allocates the records, zeroed: so a record the stream
 * never reached (the load failed before it) has no pointer for
 * pvrdma_mig_image_clear() to free.  The values are checked by the load.
 */
#define PVRDMA_MIG_COUNT_OK(name, n, arr, bound)                         \
    static bool name(void *opaque, int version_id)                       \
    {                                                                    \
        PvrdmaMigImage *m = opaque;                                      \
        PvrdmaCore *c = m->core;                                         \
                                                                         \
        if (m->n < 0 || (uint64_t)m->n > (bound)) {                      \
            return false;                                                \
        }                                                                \
        if (m->loading && !m->arr) {                                     \
            m->arr = g_malloc0_n(m->n, sizeof(*m->arr));                 \
        }                                                                \
        return true;                                                     \
    }
PVRDMA_MIG_COUNT_OK(mig_ngid_ok, ngid, gid, c->lim.gid_tbl_len)
PVRDMA_MIG_COUNT_OK(mig_nuc_ok, nuc, uc, c->uc.size)
PVRDMA_MIG_COUNT_OK(mig_npd_ok, npd, pd, c->pd.size)
PVRDMA_MIG_COUNT_OK(mig_ncq_ok, ncq, cq, c->cq.size)
PVRDMA_MIG_COUNT_OK(mig_nmr_ok, nmr, mr, c->mr.size)
PVRDMA_MIG_COUNT_OK(mig_nsrq_ok, nsrq, srq, c->srq.size)
PVRDMA_MIG_COUNT_OK(mig_nqp_ok, nqp, qp, c->qp.size)
PVRDMA_MIG_COUNT_OK(mig_nslots_ok, nslots, slots,
                    (uint64_t)c->qp.size * c->lim.max_qp_wr)
PVRDMA_MIG_COUNT_OK(mig_ntp_ok, ntp, tp, c->qp.size)

static bool mig_npages_ok(void *opaque, int version_id)
{
    PvrdmaMigImage *m = opaque;

    if (m->npages > PVRDMA_MIG_PAGES_MAX) {
        return false;
    }
    if (m->loading && !m->pages && m->npages) {
        m->pages = g_try_new(uint64_t, m->npages);
    }
    return !m->loading || m->pages || !m->npages;
}

/* An active device's DSR copy */
static bool mig_active(void *opaque)
{
    return ((PvrdmaMigImage *)opaque)->active;
}

static const VMStateDescription vmstate_pvrdma_state_dsr = {
    .name = "pvrdma/state/dsr",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = mig_active,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(cmd_gpa, PvrdmaMigImage),
        VMSTATE_UINT64(resp_gpa, PvrdmaMigImage),
        VMSTATE_UINT64(uar_pfn, PvrdmaMigImage),
        VMSTATE_UINT32(async_page0, PvrdmaMigImage),
        VMSTATE_UINT32(async_npages, PvrdmaMigImage),
        VMSTATE_UINT32(async_priv, PvrdmaMigImage),
        VMSTATE_UINT32(cqn_page0, PvrdmaMigImage),
        VMSTATE_UINT32(cqn_npages, PvrdmaMigImage),
        VMSTATE_UINT32(cqn_priv, PvrdmaMigImage),
        VMSTATE_END_OF_LIST()
    },
};

/* Send WQEs executed and not completed yet */
static bool mig_in_flight(void *opaque)
{
    return ((PvrdmaMigImage *)opaque)->nslots;
}

static const VMStateDescription vmstate_pvrdma_state_in_flight = {
    .name = "pvrdma/state/in-flight",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = mig_in_flight,
    .fields = (const VMStateField[]) {
        VMSTATE_INT32(nslots, PvrdmaMigImage),
        VMSTATE_VALIDATE("nslots", mig_nslots_ok),
        VMSTATE_STRUCT_VARRAY_POINTER_INT32(slots, PvrdmaMigImage, nslots,
                                            vmstate_pvrdma_slot,
                                            PvrdmaMigSlot),
        VMSTATE_END_OF_LIST()
    },
};

/* The connection state transports handed over (RoCEv2) */
static bool mig_transports(void *opaque)
{
    return ((PvrdmaMigImage *)opaque)->ntp;
}

static const VMStateDescription vmstate_pvrdma_state_transport = {
    .name = "pvrdma/state/transport",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = mig_transports,
    .fields = (const VMStateField[]) {
        VMSTATE_INT32(ntp, PvrdmaMigImage),
        VMSTATE_VALIDATE("ntp", mig_ntp_ok),
        VMSTATE_STRUCT_VARRAY_POINTER_INT32(tp, PvrdmaMigImage, ntp,
                                            vmstate_pvrdma_tp, PvrdmaMigTp),
        VMSTATE_END_OF_LIST()
    },
};

static bool mig_magic_ok(void *opaque, int version_id)
{
    return ((PvrdmaMigImage *)opaque)->magic == PVRDMA_MIG_IMAGE_MAGIC;
}

static int mig_image_pre_load(void *opaque)
{
    PvrdmaMigImage *m = opaque;

    pvrdma_mig_image_clear(m);
    m->loading = true;
    return 0;
}

static const VMStateDescription vmstate_pvrdma_state = {
    .name = "pvrdma/state",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_load = mig_image_pre_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(magic, PvrdmaMigImage),
        VMSTATE_VALIDATE("pvrdma state", mig_magic_ok),
        VMSTATE_UINT32_ARRAY(limits, PvrdmaMigImage, PVRDMA_MIG_NLIMITS),
        VMSTATE_UINT64(max_mr_size, PvrdmaMigImage),
        VMSTATE_UINT8(roce_version, PvrdmaMigImage),
        VMSTATE_UINT64(dsr_gpa, PvrdmaMigImage),
        VMSTATE_UINT32(err, PvrdmaMigImage),
        VMSTATE_UINT32(icr, PvrdmaMigImage),
        VMSTATE_UINT32(imr, PvrdmaMigImage),
        VMSTATE_UINT8(dsr_set, PvrdmaMigImage),
        VMSTATE_UINT8(active, PvrdmaMigImage),
        VMSTATE_UINT8(port_down, PvrdmaMigImage),
        VMSTATE_UINT32(version, PvrdmaMigImage),
        VMSTATE_UINT64(guest_errors, PvrdmaMigImage),
        VMSTATE_UINT64(commands, PvrdmaMigImage),
        VMSTATE_UINT64(doorbells, PvrdmaMigImage),
        VMSTATE_UINT32(npages, PvrdmaMigImage),
        VMSTATE_VALIDATE("npages", mig_npages_ok),
        VMSTATE_VARRAY_UINT32(pages, PvrdmaMigImage, npages, 0,
                              vmstate_info_uint64, uint64_t),
        VMSTATE_INT32(ngid, PvrdmaMigImage),
        VMSTATE_VALIDATE("ngid", mig_ngid_ok),
        VMSTATE_STRUCT_VARRAY_POINTER_INT32(gid, PvrdmaMigImage, ngid,
                                            vmstate_pvrdma_gid, PvrdmaMigGid),
        VMSTATE_INT32(nuc, PvrdmaMigImage),
        VMSTATE_VALIDATE("nuc", mig_nuc_ok),
        VMSTATE_STRUCT_VARRAY_POINTER_INT32(uc, PvrdmaMigImage, nuc,
                                            vmstate_pvrdma_uc,
                                            PvrdmaMigHandle),
        VMSTATE_INT32(npd, PvrdmaMigImage),
        VMSTATE_VALIDATE("npd", mig_npd_ok),
        VMSTATE_STRUCT_VARRAY_POINTER_INT32(pd, PvrdmaMigImage, npd,
                                            vmstate_pvrdma_pd, PvrdmaMigPD),
        VMSTATE_INT32(ncq, PvrdmaMigImage),
        VMSTATE_VALIDATE("ncq", mig_ncq_ok),
        VMSTATE_STRUCT_VARRAY_POINTER_INT32(cq, PvrdmaMigImage, ncq,
                                            vmstate_pvrdma_cq, PvrdmaMigCQ),
        VMSTATE_INT32(nmr, PvrdmaMigImage),
        VMSTATE_VALIDATE("nmr", mig_nmr_ok),
        VMSTATE_STRUCT_VARRAY_POINTER_INT32(mr, PvrdmaMigImage, nmr,
                                            vmstate_pvrdma_mr, PvrdmaMigMR),
        VMSTATE_INT32(nsrq, PvrdmaMigImage),
        VMSTATE_VALIDATE("nsrq", mig_nsrq_ok),
        VMSTATE_STRUCT_VARRAY_POINTER_INT32(srq, PvrdmaMigImage, nsrq,
                                            vmstate_pvrdma_srq, PvrdmaMigSRQ),
        VMSTATE_INT32(nqp, PvrdmaMigImage),
        VMSTATE_VALIDATE("nqp", mig_nqp_ok),
        VMSTATE_STRUCT_VARRAY_POINTER_INT32(qp, PvrdmaMigImage, nqp,
                                            vmstate_pvrdma_qp, PvrdmaMigQP),
        VMSTATE_UINT32_ARRAY(cursor, PvrdmaMigImage, PVRDMA_MIG_NCURSORS),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_pvrdma_state_dsr,
        &vmstate_pvrdma_state_in_flight,
        &vmstate_pvrdma_state_transport,
        NULL
    },
};

static bool pvrdma_mig_named(void *opaque, int version_id)
{
    return !((PvrdmaState *)opaque)->state_blob;
}

static bool pvrdma_mig_blob(void *opaque, int version_id)
{
    return ((PvrdmaState *)opaque)->state_blob;
}

static int pvrdma_pre_save(void *opaque)
{
    PvrdmaState *s = opaque;
    g_autofree char *why = NULL;

    if (s->state_blob) {
        return 0;       /* pvrdma_core_put() */
    }
    why = pvrdma_core_migration_blocker(&s->core, true);
    if (why) {
        error_report("pvrdma: the device cannot migrate now: %s", why);
        return -EBUSY;
    }
    pvrdma_mig_image_save(&s->core, &s->mig);
    return 0;
}

static int pvrdma_post_save(void *opaque)
{
    pvrdma_mig_image_clear(&((PvrdmaState *)opaque)->mig);
    return 0;
}

static int pvrdma_post_load(void *opaque, int version_id)
{
    PvrdmaState *s = opaque;
    Error *err = NULL;
    bool ok;

    if (s->state_blob) {
        return 0;       /* pvrdma_core_get() */
    }
    ok = pvrdma_mig_image_load(&s->core, &s->mig, &err);
    pvrdma_mig_image_clear(&s->mig);
    if (!ok) {
        error_reportf_err(err, "pvrdma: migrated state refused: ");
        return -EINVAL;
    }
    return 0;
}

/*
 * PvrdmaHostOps.dirty: the device wrote guest RAM at host through a mapping
 * it keeps (a registered MR), which dirty logging does not see.  Only a
 * migration's RAM passes need to know: they send the pages again.
 */
void pvrdma_dirty_host(void *opaque, const void *host, uint64_t len)
{
    MemoryRegion *mr;
    ram_addr_t off;

    if (!(global_dirty_tracking & GLOBAL_DIRTY_MIGRATION)) {
        return;
    }
    RCU_READ_LOCK_GUARD();
    mr = memory_region_from_host((void *)host, &off);
    if (mr) {
        memory_region_set_dirty(mr, off, len);
    }
}

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
 * The device writes guest RAM through mappings it holds for a long time,
 * which dirty logging does not see.  What it writes into registered memory
 * it reports as it goes (pvrdma_dirty_host()); its rings (CQEs, events,
 * ring indices: a few pages per object) are marked dirty when the VM stops
 * (the last pass of a migration follows, a snapshot or a plain stop), so
 * the last RAM pass carries them.  A stop for a migration's switch-over or
 * a snapshot pauses the transports first; the VM running again ends that
 * pause.
 */
static void pvrdma_vm_state_change(void *opaque, bool running,
                                   RunState state)
{
    PvrdmaState *s = opaque;

    if (running) {
        pvrdma_resume(s);
        pvrdma_iothread_start(s);   /* iothread=: the data path goes there */
        return;
    }
    pvrdma_iothread_stop(s);    /* the data path is the main loop's again */
    /* a background snapshot stops the VM (PAUSED) to save the devices */
    if (state == RUN_STATE_FINISH_MIGRATE || state == RUN_STATE_SAVE_VM ||
        (state == RUN_STATE_PAUSED && s->bg_snapshot)) {
        pvrdma_quiesce(s);
    }
    /* before the state is saved: the interrupts of what was done */
    pvrdma_irq_flush(s);
    pvrdma_core_ring_pages(&s->core, pvrdma_set_dirty, s);
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
        /* a transport whose peers reach this VM's RAM past userfaultfd */
        for (unsigned i = 0; i < s->links->len; i++) {
            PvrdmaLink *l = g_ptr_array_index(s->links, i);
            PvrdmaLinkClass *lc = PVRDMA_LINK_GET_CLASS(l);

            if (lc->migration_check && !lc->migration_check(l, errp)) {
                return -ENOTSUP;
            }
        }
        pvrdma_core_lock(s);    /* the VM runs: iothread= may be busy */
        why = pvrdma_core_migration_blocker(&s->core, false);
        pvrdma_core_unlock(s);
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
    .pre_save = pvrdma_pre_save,
    .post_save = pvrdma_post_save,
    .post_load = pvrdma_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_PCI_DEVICE(parent_obj, PvrdmaState),
        VMSTATE_MSIX(parent_obj, PvrdmaState),
        VMSTATE_STRUCT_TEST(mig, PvrdmaState, pvrdma_mig_named, 1,
                            vmstate_pvrdma_state, PvrdmaMigImage),
        {
            .name = "core",
            .version_id = 1,
            .field_exists = pvrdma_mig_blob,
            /*
             * Unused by pvrdma_core_info (the blob says its own length,
             * a be64, then that many bytes); not sizeof(PvrdmaCore), so
             * the description does not change with the core's struct.
             */
            .size = sizeof(uint64_t),
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
