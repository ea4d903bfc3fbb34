/*
 * pvrdma: the GID table.  Whether a GID is one of this device's, and the
 * text form of a GID.
 *
 * Not here: CREATE_BIND and DESTROY_BIND, which fill the table
 * (pvrdma_cmd.c); clearing it at reset (pvrdma_init.c); telling the
 * transports that it changed (pvrdma_transport.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_transport_calls.h"
#include "pvrdma_int.h"

#include <arpa/inet.h>

void pvrdma_gid_str(const uint8_t gid[16], char *buf, size_t len)
{
    if (pvrdma_gid_is_v4(gid)) {
        inet_ntop(AF_INET, gid + 12, buf, len);
    } else {
        inet_ntop(AF_INET6, gid, buf, len);
    }
}

bool pvrdma_gid_is_local(PvrdmaCore *c, const uint8_t gid[16])
{
    for (uint32_t i = 0; i < c->lim.gid_tbl_len; i++) {
        if (c->gid[i].type && !memcmp(c->gid[i].gid.raw, gid, 16)) {
            return true;
        }
    }
    return false;
}
