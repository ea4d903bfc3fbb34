/*
 * pvrdma rdma_cm translation for host HCA mode, for builds without
 * librdmacm.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_hostcm.h"
#include "hw/rdma/pvrdma_transport_calls.h"

PvrdmaTransport *pvrdma_hostcm_new(PvrdmaCore *c, const uint16_t *ports,
                                   unsigned nports, Error **errp)
{
    error_setg(errp, "this QEMU was built without RDMA support (install "
               "libibverbs-dev and librdmacm-dev, configure with "
               "--enable-rdma and rebuild)");
    return NULL;
}
