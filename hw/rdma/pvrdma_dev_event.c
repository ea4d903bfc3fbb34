/*
 * pvrdma device: the core's reports as QMP events (qapi/pvrdma.json):
 * PVRDMA_PORT_CHANGED and PVRDMA_GUEST_ERROR here; a transport's own
 * (a path change, a lost peer) from its link (PvrdmaLinkClass.report).
 * The monitor rate-limits them per device (monitor/monitor.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/qapi-events-pvrdma.h"
#include "qom/object.h"
#include "trace/trace-hw_rdma.h"
#include "pvrdma_dev.h"

/* PvrdmaHostOps.report */
void pvrdma_report_event(void *opaque, const PvrdmaReport *r)
{
    PvrdmaState *s = opaque;
    g_autofree char *path = object_get_canonical_path(OBJECT(s));
    const char *id = DEVICE(s)->id;

    switch (r->kind) {
    case PVRDMA_REPORT_PORT:
        trace_pvrdma_qmp_event("PVRDMA_PORT_CHANGED",
                               r->port_up ? "up" : "down");
        qapi_event_send_pvrdma_port_changed(id, path, r->port_up);
        return;
    case PVRDMA_REPORT_GUEST_ERROR:
        trace_pvrdma_qmp_event("PVRDMA_GUEST_ERROR", r->why);
        qapi_event_send_pvrdma_guest_error(id, path, r->why, r->count);
        return;
    default:
        break;
    }
    for (unsigned n = 0; n < s->links->len; n++) {
        PvrdmaLink *l = g_ptr_array_index(s->links, n);
        PvrdmaLinkClass *lc = PVRDMA_LINK_GET_CLASS(l);

        if (lc->report && lc->report(l, r)) {
            return;
        }
    }
}
