/*
 * The pvrdma QMP commands (qapi/pvrdma.json) without the pvrdma device
 * built in: no devices.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands-pvrdma.h"

PvrdmaDeviceInfoList *qmp_query_pvrdma(Error **errp)
{
    return NULL;
}

void qmp_x_pvrdma_inject(const char *id, PvrdmaInjectionKind kind,
                         bool has_event, PvrdmaAsyncEvent event,
                         bool has_handle, uint32_t handle,
                         bool has_of_qp, bool of_qp,
                         bool has_opcode, PvrdmaCommand opcode,
                         bool has_count, uint32_t count,
                         bool has_status, uint32_t status,
                         bool has_delay_ms, uint32_t delay_ms, Error **errp)
{
    error_setg(errp, "no pvrdma device");
}

HumanReadableText *qmp_x_query_pvrdma_qps(const char *id, Error **errp)
{
    error_setg(errp, "no pvrdma device");
    return NULL;
}

void qmp_x_pvrdma_peer_add(const char *id, const char *fdname,
                           const char *name, Error **errp)
{
    error_setg(errp, "no pvrdma device");
}
