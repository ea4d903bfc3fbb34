/*
 * pvrdma loopback transport: both ends are QPs of the same device, so the
 * requester calls the device's own responder and data moves with a single
 * copy between the two guest buffers.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef PVRDMA_STANDALONE
#include "qemu/osdep.h"
#endif
#include "hw/rdma/rdma_backend.h"

static bool loopback_reaches(PvrdmaCore *c, const uint8_t dgid[16])
{
    return pvrdma_gid_is_local(c, dgid);
}

static int loopback_execute(PvrdmaCore *c, PvrdmaReq *req)
{
    return pvrdma_responder(c, req);
}

const PvrdmaTransport pvrdma_loopback_transport = {
    .name = "loopback",
    .reaches = loopback_reaches,
    .execute = loopback_execute,
};
