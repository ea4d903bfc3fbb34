/*
 * pvrdma rdma_cm in host HCA mode (backend/hostcm.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_PVRDMA_HOSTCM_H
#define HW_RDMA_PVRDMA_HOSTCM_H

#include "hw/rdma/pvrdma_core.h"

/*
 * The guest's CM MADs (its GSI QP) become host rdma_cm calls, and host
 * rdma_cm events become CM MADs for the guest; incoming connections are
 * taken on the given ports of the guest's addresses.  The host rdma_cm's
 * event channel is watched through the host's set_fd_handler
 * (PvrdmaHostOps).  Returns NULL with errp set on failure, or if the host
 * has no set_fd_handler.
 */
PvrdmaTransport *pvrdma_hostcm_new(PvrdmaCore *c, const uint16_t *ports,
                                   unsigned nports, Error **errp);

#endif
