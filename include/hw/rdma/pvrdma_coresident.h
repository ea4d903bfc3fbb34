/*
 * pvrdma co-resident transport (backend/coresident.c): peers in other
 * QEMU processes on this host; its wire format is in
 * pvrdma_coresident_wire.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_PVRDMA_CORESIDENT_H
#define HW_RDMA_PVRDMA_CORESIDENT_H

#include "hw/rdma/pvrdma_transport.h"

/*
 * Join the rendezvous directory dir: listen on a socket in it, connect to
 * every peer already there, offer the regions to peers.  dir is created
 * 0700 if missing; an existing one must belong to this uid and not be
 * writable by group or others.  Peers must run as this uid; with a secret
 * (secret_len bytes, not empty; NULL: none) they must also prove they
 * have the same secret before they get the regions.  Its sockets are
 * watched through the host's set_fd_handler (PvrdmaHostOps).  Returns
 * NULL with a message in *err (g_free it) on failure, or if the host has
 * no set_fd_handler.
 */
PvrdmaTransport *pvrdma_coresident_new(PvrdmaCore *c, const char *dir,
                                       const void *secret, size_t secret_len,
                                       const PvrdmaShmRegion *regions,
                                       unsigned nregions, char **err);
/* Process exit: remove our socket from the rendezvous directory. */
void pvrdma_coresident_leave(PvrdmaTransport *t);
/* Number of connected peers (tests, info). */
unsigned pvrdma_coresident_peers(PvrdmaTransport *t);

#endif
