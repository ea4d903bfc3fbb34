/*
 * pvrdma device: query-pvrdma and the device's QMP events
 * (qapi/pvrdma.json).  Every pvrdma device in
 * the machine, its transports and the guest's QPs, from the core's
 * snapshot (pvrdma_info.c) into the schema's types.  info pvrdma prints
 * the same (pvrdma_dev_hmp.c); without the device,
 * pvrdma_dev_qmp_stub.c answers.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands-pvrdma.h"
#include "qapi/qapi-events-pvrdma.h"
#include "qom/object.h"
#include "monitor/monitor.h"
#include "trace/trace-hw_rdma.h"
#include "pvrdma_dev.h"

static PvrdmaCounters *counters(const PvrdmaPathStats *s)
{
    PvrdmaCounters *q = g_new0(PvrdmaCounters, 1);

    q->tx_packets = s->tx_pkts;
    q->tx_bytes = s->tx_bytes;
    q->rx_packets = s->rx_pkts;
    q->rx_bytes = s->rx_bytes;
    q->retransmits = s->retransmits;
    q->timeouts = s->timeouts;
    q->rnr_naks = s->rnr_naks;
    q->seq_naks = s->seq_naks;
    q->duplicates = s->dups;
    q->drops = s->drops;
    return q;
}

/* The core's names, as the schema's enums: -1 for one it does not have. */
static int from_name(const QEnumLookup *lookup, const char *name)
{
    return qapi_enum_parse(lookup, name, -1, NULL);
}

static PvrdmaQueuePairInfo *qp_info(const PvrdmaQpInfo *i)
{
    PvrdmaQueuePairInfo *q = g_new0(PvrdmaQueuePairInfo, 1);
    g_autofree char *type = g_ascii_strdown(pvrdma_qp_type_name(i->type), -1);
    g_autofree char *state = g_ascii_strdown(pvrdma_qp_state_name(i->state),
                                             -1);
    char gid[48];

    q->qpn = i->qpn;
    q->type = MAX(from_name(&PvrdmaQpType_lookup, type), 0);
    q->state = MAX(from_name(&PvrdmaQpState_lookup, state), 0);
    q->path = MAX(from_name(&PvrdmaPath_lookup, i->path), 0);
    if (i->has_peer) {
        pvrdma_gid_str(i->peer_gid, gid, sizeof(gid));
        q->peer_gid = g_strdup(gid);
        q->has_peer_qpn = true;
        q->peer_qpn = i->peer_qpn;
    }
    if (i->has_stats) {
        q->stats = counters(&i->st);
    }
    return q;
}

static PvrdmaTransportStatus *transport_info(PvrdmaState *s,
                                             const PvrdmaTransportInfo *i)
{
    PvrdmaTransportStatus *q = g_new0(PvrdmaTransportStatus, 1);

    q->type = MAX(from_name(&PvrdmaTransportType_lookup, i->name), 0);
    for (unsigned n = 0; n < s->links->len; n++) {
        PvrdmaLink *l = g_ptr_array_index(s->links, n);
        PvrdmaLinkClass *lc = PVRDMA_LINK_GET_CLASS(l);

        if (l->t && lc->query && !strcmp(lc->path, i->name)) {
            lc->query(l, q);
        }
    }
    if (i->has_stats) {
        q->stats = counters(&i->st);
    }
    return q;
}

static PvrdmaInjection *injection_info(const PvrdmaInject *in)
{
    PvrdmaInjection *q = g_new0(PvrdmaInjection, 1);

    q->kind = MAX(from_name(&PvrdmaInjectionKind_lookup,
                            pvrdma_inject_kind_name(in->kind)), 0);
    if (in->kind == PVRDMA_INJECT_WC_ERROR) {
        q->has_handle = true;
        q->handle = in->handle;
    } else {
        q->has_opcode = true;
        q->opcode = in->opcode;         /* PvrdmaCommand: the ABI's order */
    }
    q->has_status = in->kind != PVRDMA_INJECT_CMD_DELAY &&
                    in->kind != PVRDMA_INJECT_CMD_DROP;
    q->status = in->status;
    q->has_delay_ms = in->kind == PVRDMA_INJECT_CMD_DELAY;
    q->delay_ms = in->delay_ms;
    q->left = in->count;
    q->fired = in->fired;
    return q;
}

static PvrdmaDeviceInfo *device_info(PvrdmaState *s)
{
    PvrdmaDeviceInfo *d = g_new0(PvrdmaDeviceInfo, 1);
    g_autoptr(GArray) qps = pvrdma_info_qps(&s->core);
    g_autoptr(GArray) tps = pvrdma_info_transports(&s->core);

    d->id = g_strdup(DEVICE(s)->id);
    d->qom_path = object_get_canonical_path(OBJECT(s));
    pvrdma_info_device(&s->core, &d->active, &d->port_active);
    for (guint n = tps->len; n-- > 0;) {
        QAPI_LIST_PREPEND(d->transports,
                          transport_info(s, &g_array_index(tps,
                                                           PvrdmaTransportInfo,
                                                           n)));
    }
    for (guint n = qps->len; n-- > 0;) {
        QAPI_LIST_PREPEND(d->qps,
                          qp_info(&g_array_index(qps, PvrdmaQpInfo, n)));
    }
    d->guest_errors = s->core.guest_errors;
    d->pieces = s->core.seg_pieces;
    for (unsigned n = s->core.ninject; n-- > 0;) {
        QAPI_LIST_PREPEND(d->injections,
                          injection_info(&s->core.inject[n]));
    }
    return d;
}

static int add_device(Object *obj, void *opaque)
{
    PvrdmaDeviceInfoList ***tail = opaque;
    PvrdmaState *s = (PvrdmaState *)object_dynamic_cast(obj, TYPE_PVRDMA);

    if (s) {
        QAPI_LIST_APPEND(*tail, device_info(s));
    }
    return 0;
}

/*
 * PvrdmaHostOps.report: PVRDMA_PATH_CHANGED, PVRDMA_PORT_CHANGED,
 * PVRDMA_PEER_LOST, PVRDMA_GUEST_ERROR (rate-limited per device by the
 * monitor).
 */
void pvrdma_report_event(void *opaque, const PvrdmaReport *r)
{
    PvrdmaState *s = opaque;
    g_autofree char *path = object_get_canonical_path(OBJECT(s));
    const char *id = DEVICE(s)->id;

    switch (r->kind) {
    case PVRDMA_REPORT_PATH:
        if (trace_event_get_state_backends(TRACE_PVRDMA_QMP_EVENT)) {
            g_autofree char *d = g_strdup_printf("qp %u %s -> %s", r->qpn,
                                                 r->old_path, r->new_path);

            trace_pvrdma_qmp_event("PVRDMA_PATH_CHANGED", d);
        }
        qapi_event_send_pvrdma_path_changed(
            id, path, r->qpn,
            MAX(from_name(&PvrdmaPath_lookup, r->old_path), 0),
            MAX(from_name(&PvrdmaPath_lookup, r->new_path), 0));
        break;
    case PVRDMA_REPORT_PORT:
        trace_pvrdma_qmp_event("PVRDMA_PORT_CHANGED",
                               r->port_up ? "up" : "down");
        qapi_event_send_pvrdma_port_changed(id, path, r->port_up);
        break;
    case PVRDMA_REPORT_PEER_LOST:
        trace_pvrdma_qmp_event("PVRDMA_PEER_LOST", r->why);
        qapi_event_send_pvrdma_peer_lost(id, path, r->peer, r->pid, r->why);
        break;
    case PVRDMA_REPORT_GUEST_ERROR:
        trace_pvrdma_qmp_event("PVRDMA_GUEST_ERROR", r->why);
        qapi_event_send_pvrdma_guest_error(id, path, r->why, r->count);
        break;
    }
}

PvrdmaDeviceInfoList *qmp_query_pvrdma(Error **errp)
{
    PvrdmaDeviceInfoList *list = NULL, **tail = &list;

    object_child_foreach_recursive(object_get_root(), add_device, &tail);
    return list;
}

/* The device named id (its ID or QOM path), or the only one if NULL. */
typedef struct FindDevice {
    const char *id;
    PvrdmaState *found;
    unsigned n;
} FindDevice;

static int find_device(Object *obj, void *opaque)
{
    FindDevice *f = opaque;
    PvrdmaState *s = (PvrdmaState *)object_dynamic_cast(obj, TYPE_PVRDMA);
    g_autofree char *path = NULL;

    if (!s) {
        return 0;
    }
    path = object_get_canonical_path(obj);
    if (!f->id || !g_strcmp0(DEVICE(s)->id, f->id) ||
        !strcmp(path, f->id)) {
        f->found = s;
        f->n++;
    }
    return 0;
}

/* The one pvrdma device id names (or the only one); NULL with errp set. */
static PvrdmaState *pvrdma_find(const char *id, Error **errp)
{
    FindDevice f = { .id = id };

    object_child_foreach_recursive(object_get_root(), find_device, &f);
    if (f.n != 1) {
        error_setg(errp, f.n ? "there are several pvrdma devices: name one "
                   "with 'id'" : id ? "no pvrdma device '%s'" :
                   "no pvrdma device", id);
        return NULL;
    }
    return f.found;
}

HumanReadableText *qmp_x_query_pvrdma_qps(const char *id, Error **errp)
{
    PvrdmaState *s = pvrdma_find(id, errp);
    HumanReadableText *t;

    if (!s) {
        return NULL;
    }
    t = g_new0(HumanReadableText, 1);
    t->human_readable_text = pvrdma_describe_qps(&s->core);
    return t;
}

/*
 * The async events x-pvrdma-inject posts, in PvrdmaAsyncEvent's order.
 */
static const uint32_t async_events[PVRDMA_ASYNC_EVENT__MAX] = {
    [PVRDMA_ASYNC_EVENT_QP_FATAL] = PVRDMA_EVENT_QP_FATAL,
    [PVRDMA_ASYNC_EVENT_QP_REQ_ERR] = PVRDMA_EVENT_QP_REQ_ERR,
    [PVRDMA_ASYNC_EVENT_QP_ACCESS_ERR] = PVRDMA_EVENT_QP_ACCESS_ERR,
    [PVRDMA_ASYNC_EVENT_CQ_ERR] = PVRDMA_EVENT_CQ_ERR,
    [PVRDMA_ASYNC_EVENT_SRQ_ERR] = PVRDMA_EVENT_SRQ_ERR,
    [PVRDMA_ASYNC_EVENT_SRQ_LIMIT_REACHED] = PVRDMA_EVENT_SRQ_LIMIT_REACHED,
    [PVRDMA_ASYNC_EVENT_DEVICE_FATAL] = PVRDMA_EVENT_DEVICE_FATAL,
    [PVRDMA_ASYNC_EVENT_GID_CHANGE] = PVRDMA_EVENT_GID_CHANGE,
};

QEMU_BUILD_BUG_ON((int)PVRDMA_COMMAND__MAX != (int)PVRDMA_CMD_MAX);
QEMU_BUILD_BUG_ON((int)PVRDMA_INJECTION_KIND__MAX != (int)PVRDMA_INJECT__MAX);

void qmp_x_pvrdma_inject(const char *id, PvrdmaInjectionKind kind,
                         bool has_event, PvrdmaAsyncEvent event,
                         bool has_handle, uint32_t handle,
                         bool has_of_qp, bool of_qp,
                         bool has_opcode, PvrdmaCommand opcode,
                         bool has_count, uint32_t count,
                         bool has_status, uint32_t status,
                         bool has_delay_ms, uint32_t delay_ms, Error **errp)
{
    PvrdmaState *s = pvrdma_find(id, errp);
    PvrdmaInject in = {
        /* PvrdmaInjectionKind is in the order of PvrdmaInjectKind */
        .kind = (PvrdmaInjectKind)kind,
        .handle = handle, .of_qp = of_qp, .count = count, .status = status,
        .delay_ms = delay_ms,
    };

    if (!s) {
        return;
    }
    if (kind == PVRDMA_INJECTION_KIND_ASYNC_EVENT && !has_event) {
        error_setg(errp, "async-event needs 'event'");
        return;
    }
    if ((kind == PVRDMA_INJECTION_KIND_COMPLETION_ERROR ||
         (kind == PVRDMA_INJECTION_KIND_ASYNC_EVENT &&
          event != PVRDMA_ASYNC_EVENT_DEVICE_FATAL &&
          event != PVRDMA_ASYNC_EVENT_GID_CHANGE)) && !has_handle) {
        error_setg(errp, "%s needs 'handle'", PvrdmaInjectionKind_str(kind));
        return;
    }
    if ((kind == PVRDMA_INJECTION_KIND_COMMAND_ERROR ||
         kind == PVRDMA_INJECTION_KIND_COMMAND_DELAY ||
         kind == PVRDMA_INJECTION_KIND_COMMAND_DROP) && !has_opcode) {
        error_setg(errp, "%s needs 'opcode'", PvrdmaInjectionKind_str(kind));
        return;
    }
    if ((kind == PVRDMA_INJECTION_KIND_COMMAND_ERROR ||
         kind == PVRDMA_INJECTION_KIND_COMPLETION_ERROR) && !has_status) {
        error_setg(errp, "%s needs 'status'", PvrdmaInjectionKind_str(kind));
        return;
    }
    in.event = has_event ? async_events[event] : 0;
    in.opcode = opcode;         /* PvrdmaCommand: the ABI's order */
    pvrdma_inject(&s->core, &in, errp);
}

/* The device's link with that child name, NULL if none. */
static PvrdmaLink *pvrdma_link(PvrdmaState *s, const char *child)
{
    for (unsigned i = 0; i < s->links->len; i++) {
        PvrdmaLink *l = g_ptr_array_index(s->links, i);

        if (!strcmp(PVRDMA_LINK_GET_CLASS(l)->child, child)) {
            return l;
        }
    }
    return NULL;
}

void qmp_x_pvrdma_peer_add(const char *id, const char *fdname,
                           const char *name, Error **errp)
{
    PvrdmaState *s = pvrdma_find(id, errp);
    PvrdmaLink *l;
    int fd;

    if (!s) {
        return;
    }
    /* taken from the monitor whatever follows: a refused one is closed */
    fd = monitor_fd_param(monitor_cur(), fdname, errp);
    if (fd < 0) {
        return;
    }
    l = pvrdma_link(s, "coresident-link");
    if (!l) {
        error_setg(errp, "pvrdma device %s has no co-resident transport "
                   "in this build", id ? id : "");
        close(fd);
        return;
    }
    PVRDMA_LINK_GET_CLASS(l)->take_fd(l, fd, name ? name : fdname, errp);
}
