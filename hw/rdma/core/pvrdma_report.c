/*
 * pvrdma: what the core tells its owner outside the guest's view: a
 * report (PvrdmaReport: path and port changes, lost peers, guest errors)
 * through the owner's report hook, and a guest error counted, logged
 * (LOG_GUEST_ERROR) and reported.  A leaf: every other file of the core
 * may report, this one calls none of them.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_transport_calls.h"
#include "pvrdma_int.h"

void pvrdma_report(PvrdmaCore *c, const PvrdmaReport *r)
{
    if (c->ops->report) {
        c->ops->report(c->opaque, r);
    }
}

void pvrdma_guest_error(PvrdmaCore *c, const char *fmt, ...)
{
    char why[200];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    c->guest_errors++;
    qemu_log_mask(LOG_GUEST_ERROR, "pvrdma: %s\n", why);
    pvrdma_report(c, &(PvrdmaReport) {
        .kind = PVRDMA_REPORT_GUEST_ERROR, .why = why,
        .count = c->guest_errors,
    });
}
