/*
 * pvrdma host HCA transport, for builds without libibverbs.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_hostverbs.h"
#include "hw/rdma/pvrdma_transport_calls.h"

PvrdmaTransport *pvrdma_hostverbs_new(PvrdmaCore *c,
                                      const PvrdmaHcaConfig *cfg,
                                      PvrdmaLimits *lim,
                                      const PvrdmaShmRegion *regions,
                                      unsigned nregions, Error **errp)
{
    error_setg(errp, "this QEMU was built without RDMA support (install "
               "libibverbs-dev and librdmacm-dev, configure with "
               "--enable-rdma and rebuild for host HCA support)");
    return NULL;
}
