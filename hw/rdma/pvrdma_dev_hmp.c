/*
 * info pvrdma: query-pvrdma (pvrdma_dev_qmp.c) for people, and
 * x_pvrdma_inject: x-pvrdma-inject.  Built with or without the device
 * (the command tables name them either way).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "monitor/hmp.h"
#include "monitor/monitor.h"
#include "qapi/error.h"
#include "qapi/qapi-commands-pvrdma.h"
#include "qapi/qapi-visit-pvrdma.h"
#include "qobject/qdict.h"
#include "qapi/qobject-input-visitor.h"
#include "qemu/keyval.h"

static void print_counters(Monitor *mon, const PvrdmaCounters *c)
{
    monitor_printf(mon, "      tx %" PRIu64 " packets %" PRIu64 " bytes, "
                   "rx %" PRIu64 " packets %" PRIu64 " bytes\n"
                   "      retransmits %" PRIu64 " timeouts %" PRIu64
                   " rnr-naks %" PRIu64 " seq-naks %" PRIu64
                   " duplicates %" PRIu64 " drops %" PRIu64 "\n",
                   c->tx_packets, c->tx_bytes, c->rx_packets, c->rx_bytes,
                   c->retransmits, c->timeouts, c->rnr_naks, c->seq_naks,
                   c->duplicates, c->drops);
}

static void print_device(Monitor *mon, const PvrdmaDeviceInfo *d)
{
    monitor_printf(mon, "%s (%s): %s, port %s\n", d->id ? d->id : "pvrdma",
                   d->qom_path, d->active ? "active" : "not active",
                   d->port_active ? "up" : "down");
    for (PvrdmaTransportStatusList *l = d->transports; l; l = l->next) {
        monitor_printf(mon, "  transport %s",
                       PvrdmaTransportType_str(l->value->type));
        if (l->value->has_peers) {
            monitor_printf(mon, " peers %u", l->value->peers);
        }
        monitor_printf(mon, "\n");
        if (l->value->stats) {
            print_counters(mon, l->value->stats);
        }
    }
    if (!d->qps) {
        monitor_printf(mon, "  no QPs\n");
    }
    for (PvrdmaQueuePairInfoList *l = d->qps; l; l = l->next) {
        const PvrdmaQueuePairInfo *q = l->value;

        monitor_printf(mon, "  qp %u %s %s path %s", q->qpn,
                       PvrdmaQpType_str(q->type), PvrdmaQpState_str(q->state),
                       PvrdmaPath_str(q->path));
        if (q->peer_gid) {
            monitor_printf(mon, " peer %s qp %u", q->peer_gid, q->peer_qpn);
        }
        monitor_printf(mon, "\n");
        if (q->stats) {
            print_counters(mon, q->stats);
        }
    }
    for (PvrdmaInjectionList *l = d->injections; l; l = l->next) {
        const PvrdmaInjection *in = l->value;

        monitor_printf(mon, "  injected %s", PvrdmaInjectionKind_str(in->kind));
        if (in->has_opcode) {
            monitor_printf(mon, " %s", PvrdmaCommand_str(in->opcode));
        }
        if (in->has_handle) {
            monitor_printf(mon, " qp %u", in->handle);
        }
        if (in->has_status) {
            monitor_printf(mon, " status %u", in->status);
        }
        if (in->has_delay_ms) {
            monitor_printf(mon, " delay %u ms", in->delay_ms);
        }
        monitor_printf(mon, ": fired %u, %u left\n", in->fired, in->left);
    }
}

void hmp_info_pvrdma(Monitor *mon, const QDict *qdict)
{
    Error *err = NULL;
    g_autoptr(PvrdmaDeviceInfoList) list = qmp_query_pvrdma(&err);

    if (hmp_handle_error(mon, err)) {
        return;
    }
    if (!list) {
        monitor_printf(mon, "no pvrdma device\n");
    }
    for (PvrdmaDeviceInfoList *l = list; l; l = l->next) {
        print_device(mon, l->value);
    }
}

/* x_pvrdma_inject KIND[,KEY=VALUE...]: x-pvrdma-inject's arguments. */
void hmp_x_pvrdma_inject(Monitor *mon, const QDict *qdict)
{
    q_obj_x_pvrdma_inject_arg a = { 0 };
    Error *err = NULL;
    QDict *args = keyval_parse(qdict_get_str(qdict, "args"), "kind", NULL,
                               &err);
    Visitor *v;

    if (hmp_handle_error(mon, err)) {
        return;
    }
    v = qobject_input_visitor_new_keyval(QOBJECT(args));
    if (visit_start_struct(v, NULL, NULL, 0, &err)) {
        if (visit_type_q_obj_x_pvrdma_inject_arg_members(v, &a, &err)) {
            visit_check_struct(v, &err);
        }
        visit_end_struct(v, NULL);
    }
    visit_free(v);
    qobject_unref(args);
    if (!err) {
        qmp_x_pvrdma_inject(a.id, a.kind, a.has_event, a.event, a.has_handle,
                            a.handle, a.has_of_qp, a.of_qp, a.has_opcode,
                            a.opcode, a.has_count,
                            a.count, a.has_status, a.status, a.has_delay_ms,
                            a.delay_ms, &err);
    }
    g_free(a.id);
    hmp_handle_error(mon, err);
}
