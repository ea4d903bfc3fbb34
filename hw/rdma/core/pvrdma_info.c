/*
 * pvrdma: what the device does, for management programs and people: its
 * QPs (number, type, state, the path that carries each, the peer, the
 * path's counters) and its transports with their counters.  The QOM glue
 * turns it into query-pvrdma's answer and info pvrdma's text
 * (pvrdma_dev_qmp.c, pvrdma_dev_hmp.c); pvrdma_describe_qps() turns it
 * into the lines of x-query-pvrdma-qps.
 *
 * Not here: the counting (the transports, PvrdmaTransportOps.stats).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_transport_calls.h"
#include "hw/rdma/pvrdma_info.h"
#include "pvrdma_int.h"

const char *pvrdma_qp_type_name(uint32_t type)
{
    static const char *const types[] = {
        [PVRDMA_QPT_SMI] = "SMI", [PVRDMA_QPT_GSI] = "GSI",
        [PVRDMA_QPT_RC] = "RC", [PVRDMA_QPT_UC] = "UC", [PVRDMA_QPT_UD] = "UD",
    };

    return type < G_N_ELEMENTS(types) && types[type] ? types[type] : "?";
}

const char *pvrdma_qp_state_name(uint32_t state)
{
    static const char *const states[] = {
        [PVRDMA_QPS_RESET] = "RESET", [PVRDMA_QPS_INIT] = "INIT",
        [PVRDMA_QPS_RTR] = "RTR", [PVRDMA_QPS_RTS] = "RTS",
        [PVRDMA_QPS_SQD] = "SQD", [PVRDMA_QPS_SQE] = "SQE",
        [PVRDMA_QPS_ERR] = "ERR",
    };

    return state < G_N_ELEMENTS(states) ? states[state] : "?";
}

void pvrdma_info_device(PvrdmaCore *c, bool *active, bool *port_up)
{
    *active = c->active;
    *port_up = pvrdma_port_up(c);
}

static void qp_info(PvrdmaQP *qp, PvrdmaQpInfo *i)
{
    PvrdmaTransport *t = qp->tp;

    *i = (PvrdmaQpInfo) {
        .qpn = qp->qpn,
        .type = qp->type,
        .state = qp->state,
        .path = t ? pvrdma_transport_name(t) :
                qp->type == PVRDMA_QPT_RC ? "none" : "per-request",
    };
    if (qp->type == PVRDMA_QPT_RC && qp->state >= PVRDMA_QPS_RTR) {
        i->has_peer = true;
        memcpy(i->peer_gid, qp->attr.ah_attr.grh.dgid.raw, 16);
        i->peer_qpn = qp->attr.dest_qp_num;
    }
    if (t) {
        i->has_stats = pvrdma_transport_stats(t, qp, &i->st);
    }
}

GArray *pvrdma_info_qps(PvrdmaCore *c)
{
    GArray *a = g_array_new(false, false, sizeof(PvrdmaQpInfo));

    for (uint32_t h = 0; h < c->qp.size; h++) {
        PvrdmaQP *qp = c->qp.slot[h];
        PvrdmaQpInfo i;

        if (qp) {
            qp_info(qp, &i);
            g_array_append_val(a, i);
        }
    }
    return a;
}

GArray *pvrdma_info_transports(PvrdmaCore *c)
{
    GArray *a = g_array_new(false, false, sizeof(PvrdmaTransportInfo));

    for (unsigned n = 0; n < c->ntransports; n++) {
        PvrdmaTransport *t = c->transports[n];
        PvrdmaTransportInfo i = { .name = pvrdma_transport_name(t) };

        i.has_stats = pvrdma_transport_stats(t, NULL, &i.st);
        g_array_append_val(a, i);
    }
    return a;
}

static void stats_str(const PvrdmaPathStats *s, GString *out)
{
    g_string_append_printf(out, " tx_pkts %" PRIu64 " tx_bytes %" PRIu64
                           " rx_pkts %" PRIu64 " rx_bytes %" PRIu64
                           " retransmits %" PRIu64 " timeouts %" PRIu64
                           " rnr_naks %" PRIu64 " seq_naks %" PRIu64
                           " dups %" PRIu64 " drops %" PRIu64,
                           s->tx_pkts, s->tx_bytes, s->rx_pkts, s->rx_bytes,
                           s->retransmits, s->timeouts, s->rnr_naks,
                           s->seq_naks, s->dups, s->drops);
}

char *pvrdma_describe_qps(PvrdmaCore *c)
{
    g_autoptr(GArray) qps = pvrdma_info_qps(c);
    g_autoptr(GArray) tps = pvrdma_info_transports(c);
    GString *out = g_string_new(NULL);

    for (guint n = 0; n < qps->len; n++) {
        const PvrdmaQpInfo *i = &g_array_index(qps, PvrdmaQpInfo, n);

        g_string_append_printf(out, "qp %u type %s state %s path %s", i->qpn,
                               pvrdma_qp_type_name(i->type),
                               pvrdma_qp_state_name(i->state), i->path);
        if (i->has_peer) {
            char g[48];

            pvrdma_gid_str(i->peer_gid, g, sizeof(g));
            g_string_append_printf(out, " peer %s qp %u", g, i->peer_qpn);
        }
        if (i->has_stats) {
            stats_str(&i->st, out);
        }
        g_string_append_c(out, '\n');
    }
    for (guint n = 0; n < tps->len; n++) {
        const PvrdmaTransportInfo *i = &g_array_index(tps, PvrdmaTransportInfo,
                                                      n);

        g_string_append_printf(out, "transport %s", i->name);
        if (i->has_stats) {
            stats_str(&i->st, out);
        }
        g_string_append_c(out, '\n');
    }
    return g_string_free(out, false);
}
