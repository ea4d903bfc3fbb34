/*
 * pvrdma device: query-pvrdma and x-query-pvrdma-qps (qapi/pvrdma.json).
 * Every pvrdma device in the machine, its transports and the guest's
 * QPs, from the core's snapshot (pvrdma_info.c) into the schema's types.
 * info pvrdma prints the same (pvrdma_dev_hmp.c); without the device,
 * pvrdma_dev_qmp_stub.c answers.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands-pvrdma.h"
#include "qom/object.h"
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
    g_autoptr(GArray) qps = NULL;
    g_autoptr(GArray) tps = NULL;

    pvrdma_core_lock(s);    /* iothread=: the data path may be busy */
    qps = pvrdma_info_qps(&s->core);
    tps = pvrdma_info_transports(&s->core);
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
    pvrdma_core_unlock(s);
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

PvrdmaState *pvrdma_qmp_find(const char *id, Error **errp)
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
    PvrdmaState *s = pvrdma_qmp_find(id, errp);
    HumanReadableText *t;

    if (!s) {
        return NULL;
    }
    t = g_new0(HumanReadableText, 1);
    pvrdma_core_lock(s);
    t->human_readable_text = pvrdma_describe_qps(&s->core);
    pvrdma_core_unlock(s);
    return t;
}
