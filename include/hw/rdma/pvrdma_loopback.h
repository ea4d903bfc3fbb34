/*
 * pvrdma loopback transport (backend/loopback.c): both ends of a QP on
 * this device.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_PVRDMA_LOOPBACK_H
#define HW_RDMA_PVRDMA_LOOPBACK_H

#include "hw/rdma/pvrdma_core.h"

/*
 * The loopback transport of core c (both ends on this device), for
 * pvrdma_core_add_transport(); pvrdma_core_fini() frees it.
 */
PvrdmaTransport *pvrdma_loopback_new(PvrdmaCore *c);

#endif
