/*
 * QEMU VMware paravirtual RDMA device (PVRDMA): the device side of the
 * co-resident transport (backend/coresident*.c), which offers this VM's
 * shared RAM to peer QEMU processes on the same host.
 *
 * 'coresident' (peers from management, x-pvrdma-peer-add) or 'rendezvous'
 * (a directory where peers meet), with 'rendezvous-secret'; the QMP of
 * the transport (x-pvrdma-peer-add, PVRDMA_PATH_CHANGED, PVRDMA_PEER_LOST).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/units.h"
#include "qemu/error-report.h"
#include "crypto/secret_common.h"
#include "hw/boards.h"
#include "hw/qdev-properties.h"
#include "migration/misc.h"
#include "migration/client-options.h"
#include "system/system.h"
#include "hw/rdma/pvrdma_coresident.h"
#include "hw/rdma/pvrdma_coresident_wire.h"
#include "qapi/qapi-commands-pvrdma.h"
#include "qapi/qapi-events-pvrdma.h"
#include "monitor/monitor.h"
#include "trace/trace-hw_rdma.h"
#include "pvrdma_dev.h"

#define TYPE_PVRDMA_CORESIDENT_LINK "pvrdma-coresident-link"
OBJECT_DECLARE_SIMPLE_TYPE(PvrdmaCoresidentLink, PVRDMA_CORESIDENT_LINK)

struct PvrdmaCoresidentLink {
    PvrdmaLink parent_obj;
    bool on;                /* 'coresident': peers from x-pvrdma-peer-add */
    char *rendezvous;       /* the directory where peers meet */
    char *secret;           /* id of a secret object peers must share */
    uint32_t poll_max_ns;   /* deprecated, no effect */
    bool rings;             /* 'x-coresident-rings': offer peers rings */
    Notifier exit_notifier;
};

/* QEMU exits without unrealizing devices: leave the directory tidy. */
static void cr_link_exit_notify(Notifier *n, void *data)
{
    PvrdmaCoresidentLink *cl = container_of(n, PvrdmaCoresidentLink,
                                            exit_notifier);

    PvrdmaLink *l = PVRDMA_LINK(cl);

    pvrdma_core_lock(l->dev);
    pvrdma_coresident_leave(l->t);
    pvrdma_core_unlock(l->dev);
}

/* Shorter rendezvous secrets are a guess away: warn. */
#define PVRDMA_SECRET_MIN   16

/* The bytes of 'rendezvous-secret' (NULL, 0: none); false, errp set. */
static bool cr_link_secret(PvrdmaCoresidentLink *cl, uint8_t **secret,
                           size_t *len, Error **errp)
{
    ERRP_GUARD();

    if (!cl->secret) {
        return true;
    }
    if (qcrypto_secret_lookup(cl->secret, secret, len, errp)) {
        error_prepend(errp, "pvrdma: rendezvous-secret=%s: ", cl->secret);
        return false;
    }
    if (!*len) {
        g_free(*secret);
        *secret = NULL;
        error_setg(errp, "pvrdma: rendezvous-secret=%s: the secret is "
                   "empty", cl->secret);
        return false;
    }
    if (*len < PVRDMA_SECRET_MIN) {
        warn_report("pvrdma: rendezvous-secret=%s has %zu bytes: a "
                    "process that reaches the rendezvous directory can "
                    "test guesses of it offline; use %d random bytes "
                    "or more", cl->secret, *len, PVRDMA_SECRET_MIN);
    }
    return true;
}

/* Guest RAM peers can map: a shared memfd sealed against shrinking. */
static bool cr_link_ram_ok(Error **errp)
{
    MachineState *ms = MACHINE(qdev_get_machine());

    if (!ms->ram || memory_region_get_fd(ms->ram) < 0 ||
        !qemu_ram_is_shared(ms->ram->ram_block)) {
        g_autofree char *sz = g_strdup_printf("%" PRIu64 "M",
                                              ms->ram_size / MiB);

        error_setg(errp, "pvrdma: co-resident peers need guest RAM that "
                   "other QEMU processes can map: add -object memory-backend-memfd,"
                   "id=mem,size=%s,share=on -machine memory-backend=mem", sz);
        return false;
    }
    if (!pvrdma_coresident_fd_ok(memory_region_get_fd(ms->ram))) {
        error_setg(errp, "pvrdma: co-resident peers need guest RAM that "
                   "cannot shrink under the peers that map it (a file could be "
                   "truncated and crash them): use memory-backend-memfd "
                   "with seal=on (its default), not memory-backend-file");
        return false;
    }
    return true;
}

/*
 * Join: peers map our guest RAM, which must come from a shareable memory
 * backend whose memfd is sealed against shrinking; every such RAM block
 * is offered.  Peers must run as our uid and, with 'rendezvous-secret',
 * know the bytes of that secret object.
 */
static bool cr_link_add(PvrdmaLink *l, Error **errp)
{
    ERRP_GUARD();
    PvrdmaCoresidentLink *cl = PVRDMA_CORESIDENT_LINK(l);
    PvrdmaCore *c = &l->dev->core;
    g_autoptr(GArray) regions = NULL;
    uint8_t *secret = NULL;
    size_t secret_len = 0;
    PvrdmaTransport *t;

    if (cl->secret && !cl->rendezvous && !cl->on) {
        error_setg(errp, "pvrdma: 'rendezvous-secret' applies to the "
                   "co-resident transport: it needs 'coresident=on' or "
                   "'rendezvous'");
        return false;
    }
    if (!cl->rendezvous && !cl->on) {
        return true;
    }
    if (!cr_link_ram_ok(errp)) {
        return false;
    }
    if (cl->poll_max_ns) {
        warn_report("pvrdma: poll-max-ns is deprecated and has no effect: "
                    "the main loop no longer spins on a peer's ring (it "
                    "had to drop the big QEMU lock to do so)");
    }
    if (!cr_link_secret(cl, &secret, &secret_len, errp)) {
        return false;
    }
    regions = pvrdma_shared_ram();
    t = pvrdma_coresident_new(c, cl->rendezvous, secret, secret_len,
                              (PvrdmaShmRegion *)regions->data, regions->len,
                              CR_F_ALL, errp);
    if (secret) {
        explicit_bzero(secret, secret_len);     /* the transport has a copy */
        g_free(secret);
    }
    if (!t) {
        error_prepend(errp, "pvrdma: ");
        return false;
    }
    pvrdma_coresident_set_rings(t, cl->rings ? CR_RING_SIZE : 0);
    pvrdma_core_add_transport(c, t);
    l->t = t;
    cl->exit_notifier.notify = cr_link_exit_notify;
    qemu_add_exit_notifier(&cl->exit_notifier);
    return true;
}

/* The core frees the transport. */
static void cr_link_del(PvrdmaLink *l)
{
    PvrdmaCoresidentLink *cl = PVRDMA_CORESIDENT_LINK(l);

    if (l->t) {
        qemu_remove_exit_notifier(&cl->exit_notifier);
    }
    l->t = NULL;
}

static void cr_link_query(PvrdmaLink *l, PvrdmaTransportStatus *q)
{
    q->has_peers = true;
    q->peers = pvrdma_coresident_peers(l->t);
}

/*
 * x-pvrdma-peer-add: a connection management made (socketpair) and
 * passed with getfd, to the device named id (or the only one).
 */
void qmp_x_pvrdma_peer_add(const char *id, const char *fdname,
                           const char *name, Error **errp)
{
    ERRP_GUARD();
    PvrdmaState *s = pvrdma_qmp_find(id, errp);
    Object *child;
    bool ok;
    int fd;

    if (!s) {
        return;
    }
    /* taken from the monitor whatever follows: a refused one is closed */
    fd = monitor_fd_param(monitor_cur(), fdname, errp);
    if (fd < 0) {
        return;
    }
    child = object_resolve_path_component(OBJECT(s), "coresident-link");
    if (!child || !PVRDMA_LINK(child)->t) {
        error_setg(errp, "pvrdma device %s has no co-resident transport "
                   "(add coresident=on)", DEVICE(s)->id ?: "");
        close(fd);
        return;
    }
    name = name ?: fdname;
    trace_pvrdma_peer_add(name, fd);
    pvrdma_core_lock(s);    /* iothread=: the data path may be busy */
    ok = pvrdma_coresident_add_peer(PVRDMA_LINK(child)->t, fd, name, errp);
    pvrdma_core_unlock(s);
    if (!ok) {
        error_prepend(errp, "pvrdma: ");
    }
}

/*
 * PvrdmaLinkClass.report: PVRDMA_PATH_CHANGED (a QP moved between the
 * co-resident transport and another by itself, when its peer migrated)
 * and PVRDMA_PEER_LOST.
 */
static bool cr_link_report(PvrdmaLink *l, const PvrdmaReport *r)
{
    g_autofree char *path = object_get_canonical_path(OBJECT(l->dev));
    const char *id = DEVICE(l->dev)->id;

    switch (r->kind) {
    case PVRDMA_REPORT_PATH:
        if (trace_event_get_state_backends(TRACE_PVRDMA_QMP_EVENT)) {
            g_autofree char *d = g_strdup_printf("qp %u %s -> %s", r->qpn,
                                                 r->old_path, r->new_path);

            trace_pvrdma_qmp_event("PVRDMA_PATH_CHANGED", d);
        }
        qapi_event_send_pvrdma_path_changed(
            id, path, r->qpn,
            MAX(qapi_enum_parse(&PvrdmaPath_lookup, r->old_path, -1, NULL), 0),
            MAX(qapi_enum_parse(&PvrdmaPath_lookup, r->new_path, -1, NULL), 0));
        return true;
    case PVRDMA_REPORT_PEER_LOST:
        trace_pvrdma_qmp_event("PVRDMA_PEER_LOST", r->why);
        qapi_event_send_pvrdma_peer_lost(id, path, r->peer, r->pid, r->why);
        return true;
    default:
        return false;
    }
}

/*
 * Co-resident peers read and write this VM's RAM through their own
 * mappings, which userfaultfd does not see: on a postcopy destination
 * they would touch pages that have not come over yet (a fresh page, which
 * the one from the source can then no longer replace); during a
 * background snapshot their writes would not be write-protected, and the
 * snapshot would hold RAM newer than the devices' state.
 */
static bool cr_link_migration_check(PvrdmaLink *l, Error **errp)
{
    PvrdmaCoresidentLink *cl = PVRDMA_CORESIDENT_LINK(l);
    g_autofree char *how = NULL;

    if (!l->t || (!migrate_postcopy_ram() && !migrate_background_snapshot())) {
        return true;
    }
    how = cl->rendezvous ? g_strdup_printf("rendezvous=%s", cl->rendezvous) :
                           g_strdup("coresident=on");
    error_setg(errp, "pvrdma: %s is not supported with %s: "
               "co-resident peers access this VM's RAM directly, "
               "where userfaultfd does not see them; migrate "
               "without it",
               migrate_postcopy_ram() ? "postcopy-ram" :
               "background-snapshot", how);
    return false;
}

static const Property cr_link_props[] = {
    DEFINE_PROP_BOOL("coresident", PvrdmaCoresidentLink, on, false),
    DEFINE_PROP_STRING("rendezvous", PvrdmaCoresidentLink, rendezvous),
    DEFINE_PROP_STRING("rendezvous-secret", PvrdmaCoresidentLink, secret),
    DEFINE_PROP_UINT32("poll-max-ns", PvrdmaCoresidentLink, poll_max_ns,
                       PVRDMA_DEF_POLL_NS),
    /* debugging aid: off, every co-resident message goes on the socket */
    DEFINE_PROP_BOOL("x-coresident-rings", PvrdmaCoresidentLink, rings, true),
};

static void cr_link_class_init(ObjectClass *klass, PVRDMA_CLASS_DATA *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PvrdmaLinkClass *lc = PVRDMA_LINK_CLASS(klass);

    device_class_set_props(dc, cr_link_props);
    object_class_property_set_description(klass, "coresident",
        "the co-resident transport without a rendezvous directory: "
        "management gives it its peers (x-pvrdma-peer-add)");
    lc->add = cr_link_add;
    lc->del = cr_link_del;
    lc->order = 1;
    lc->child = "coresident-link";
    lc->path = "coresident";
    lc->iothread = true;    /* its sockets: fd watches (iothread=) */
    lc->query = cr_link_query;
    lc->report = cr_link_report;
    lc->migration_check = cr_link_migration_check;
}

static const TypeInfo cr_link_info = {
    .name = TYPE_PVRDMA_CORESIDENT_LINK,
    .parent = TYPE_PVRDMA_LINK,
    .instance_size = sizeof(PvrdmaCoresidentLink),
    .class_init = cr_link_class_init,
};

static void cr_link_register_types(void)
{
    type_register_static(&cr_link_info);
}

type_init(cr_link_register_types)
