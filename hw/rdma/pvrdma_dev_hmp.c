/*
 * info pvrdma: query-pvrdma (pvrdma_dev_qmp.c) for people.  Built with or
 * without the device (the command table names it either way).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "monitor/hmp.h"
#include "monitor/monitor.h"
#include "qapi/error.h"
#include "qapi/qapi-commands-pvrdma.h"

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
