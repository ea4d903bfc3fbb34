/*
 * pvrdma host HCA transport (backend/hostverbs.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_PVRDMA_HOSTVERBS_H
#define HW_RDMA_PVRDMA_HOSTVERBS_H

#include "hw/rdma/pvrdma_core.h"

/*
 * With a host HCA the host device owns the guest's objects
 * (PvrdmaQueueOps): every PD, CQ, SRQ, MR and non-GSI QP of the guest
 * has a host twin, the guest sees the host's QP numbers and memory keys,
 * and host MRs cover guest RAM so the HCA moves data to and from it
 * directly.  It is a queue transport: the host runs its QPs.
 */
typedef struct PvrdmaHcaConfig {
    const char *dev;        /* the host device's name */
    uint8_t port;           /* 0: the first active port */
    int gid_index;          /* -1: find the guest's GID in the host table */
} PvrdmaHcaConfig;

/*
 * Open the host device; lowers the limits in *lim to what it supports.
 * regions: guest RAM (for MRs whose pages are not contiguous in this
 * process, which are mapped again, contiguously, from the region's fd).
 * Its completion channel and async events are watched through the host's
 * set_fd_handler (PvrdmaHostOps).  Returns NULL with errp set on failure,
 * or if the host has no set_fd_handler.
 */
PvrdmaTransport *pvrdma_hostverbs_new(PvrdmaCore *c,
                                      const PvrdmaHcaConfig *cfg,
                                      PvrdmaLimits *lim,
                                      const PvrdmaShmRegion *regions,
                                      unsigned nregions, Error **errp);

#endif
