/*
 * pvrdma loopback transport: both ends are QPs of the same device, so the
 * requester calls the device's own responder and data moves with a single
 * copy between the two guest buffers.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hw/rdma/pvrdma_loopback.h"
#include "hw/rdma/pvrdma_transport_calls.h"

static bool loopback_reaches(PvrdmaTransport *t, const uint8_t dgid[16])
{
    return pvrdma_gid_is_local(t->core, dgid);
}

static int loopback_execute(PvrdmaTransport *t, PvrdmaReq *req)
{
    return pvrdma_responder(t->core, req);
}

static const PvrdmaMessageOps loopback_msg = {
    .execute = loopback_execute,
};

static const PvrdmaTransportOps loopback_ops = {
    .name = "loopback",
    .flags = PVRDMA_TP_STATELESS | PVRDMA_TP_SEGMENTED,
    .reaches = loopback_reaches,
    .msg = &loopback_msg,
};

PvrdmaTransport *pvrdma_loopback_new(PvrdmaCore *c)
{
    PvrdmaTransport *t = g_new(PvrdmaTransport, 1);

    *t = (PvrdmaTransport) { .ops = &loopback_ops, .core = c };
    return t;   /* no destroy hook: pvrdma_core_fini() g_free()s it */
}
