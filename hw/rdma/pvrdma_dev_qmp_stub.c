/*
 * query-pvrdma without the pvrdma device built in: no devices.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/qapi-commands-pvrdma.h"

PvrdmaDeviceInfoList *qmp_query_pvrdma(Error **errp)
{
    return NULL;
}
