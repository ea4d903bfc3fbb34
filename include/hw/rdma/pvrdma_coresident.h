/*
 * pvrdma co-resident transport (backend/coresident.c): peers in other
 * QEMU processes on this host; its wire format is in
 * pvrdma_coresident_wire.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_PVRDMA_CORESIDENT_H
#define HW_RDMA_PVRDMA_CORESIDENT_H

#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_coresident_wire.h"     /* CR_F_* */

/*
 * Join the rendezvous directory dir: listen on a socket in it, connect to
 * every peer already there, offer the regions to peers (dir NULL: no
 * directory; peers come from pvrdma_coresident_add_peer()).  dir is created
 * 0700 if missing; an existing one must belong to this uid and not be
 * writable by group or others.  Peers must run as this uid; with a secret
 * (secret_len bytes, not empty; NULL: none) they must also prove they
 * have the same secret before they get the regions.  features: the
 * optional parts of the protocol offered to peers (CR_F_* in
 * pvrdma_coresident_wire.h; CR_F_ALL, what this build has; tests offer
 * fewer to be a build that lacks some; unknown bits are dropped).  Its
 * sockets are watched through the host's set_fd_handler (PvrdmaHostOps).
 * Every region's fd must pass pvrdma_coresident_fd_ok().  Returns NULL
 * with errp set on failure, or if the host has no set_fd_handler.
 */
PvrdmaTransport *pvrdma_coresident_new(PvrdmaCore *c, const char *dir,
                                       const void *secret, size_t secret_len,
                                       const PvrdmaShmRegion *regions,
                                       unsigned nregions, uint64_t features,
                                       Error **errp);
/*
 * A connection to a peer that management made and gave us: fd is a
 * connected AF_UNIX SOCK_SEQPACKET socket (one end of a socketpair()
 * whose other end went to the peer's QEMU), ours from now on (closed on
 * failure).  Nothing checks the other end's uid: management decided who
 * talks; a secret, if set, must still match.  name is for messages.
 * Works with or without a rendezvous directory (dir NULL in
 * pvrdma_coresident_new(): no directory, peers only from here).  False
 * with errp set if fd is not such a socket.
 */
bool pvrdma_coresident_add_peer(PvrdmaTransport *t, int fd, const char *name,
                                Error **errp);
/*
 * fd can be offered to peers: a file sealed against shrinking (a memfd
 * with F_SEAL_SHRINK, as memory-backend-memfd's with seal=on).  Peers map
 * nothing else (a peer that shrank it would crash them).
 */
bool pvrdma_coresident_fd_ok(int fd);
/* Process exit: remove our socket from the rendezvous directory. */
void pvrdma_coresident_leave(PvrdmaTransport *t);
/*
 * Poll a peer's ring for up to poll_ns after taking from it, before
 * sleeping until the peer wakes us (0: never poll; needs the host's
 * poll_wait).  Peers in this same process are never polled.
 */
void pvrdma_coresident_set_poll(PvrdmaTransport *t, uint64_t poll_ns);
/*
 * Tests: poll peers in this process too (another thread of the test
 * writes their ring while we wait).
 */
void pvrdma_coresident_poll_self(PvrdmaTransport *t, bool on);
/*
 * The rings this transport offers the peers it connects to: ring_size
 * bytes each way (a power of 2, 128 KiB to 1 MiB: 1 MiB unless set), or
 * none (0: every message on the socket, as before the rings).  False for
 * another size.  For peers that connect after it.
 */
bool pvrdma_coresident_set_rings(PvrdmaTransport *t, uint32_t ring_size);
/*
 * The device's poll-max-ns by default: none.  The property is deprecated
 * and has no effect (QEMU's host has no poll_wait): polling in QEMU's main
 * loop had to drop the big QEMU lock, competed for the cores with the
 * vCPUs (on a 2-core host with two TCG VMs it tripled ib_send_lat,
 * docs/devel/pvrdma-coresident.rst, "Rings"), and belongs in an IOThread.
 */
#define PVRDMA_DEF_POLL_NS      0
/*
 * The features the connection to the n-th connected peer uses (those both
 * sides offered); 0 if there are fewer peers (tests).
 */
uint64_t pvrdma_coresident_peer_features(PvrdmaTransport *t, unsigned n);
/* Number of connected peers (tests, info). */
unsigned pvrdma_coresident_peers(PvrdmaTransport *t);
/*
 * Number of QPs of ours the transport keeps a record of: those with
 * requests at peers or peers' requests waiting, and live QPs that had
 * either (tests).
 */
unsigned pvrdma_coresident_qps(PvrdmaTransport *t);

#endif
