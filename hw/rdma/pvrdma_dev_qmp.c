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
#include "hw/rdma/pvrdma_coresident.h"
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
    if (q->type == PVRDMA_TRANSPORT_TYPE_CORESIDENT && s->coresident) {
        q->has_peers = true;
        q->peers = pvrdma_coresident_peers(s->coresident);
    }
    if (i->has_stats) {
        q->stats = counters(&i->st);
    }
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
 * PVRDMA_PEER_LOST (rate-limited per device by the monitor).
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
        qapi_event_send_pvrdma_peer_lost(id, path, r->peer, r->why);
        break;
    }
}

PvrdmaDeviceInfoList *qmp_query_pvrdma(Error **errp)
{
    PvrdmaDeviceInfoList *list = NULL, **tail = &list;

    object_child_foreach_recursive(object_get_root(), add_device, &tail);
    return list;
}
