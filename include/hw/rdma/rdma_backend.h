/*
 * pvrdma transports ("backends").
 *
 * The device core turns a guest send WQE into a PvrdmaReq: opcode, flags,
 * the local buffer already validated and resolved into host memory, and the
 * remote side (address/rkey, or UD destination).  A transport moves it to
 * the responder and reports the requester's completion status, either at
 * once (the return value of execute) or later (PVRDMA_TRANSPORT_PENDING,
 * then exactly one pvrdma_req_done() call with the request's cookie).
 * Transports never see guest rings, registers or guest physical addresses.
 *
 * A device has a list of transports; a request goes to the first whose
 * reaches() accepts the destination GID: loopback (a GID of this device)
 * first, then the co-resident transport (a GID of a peer VM).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef PVRDMA_RDMA_BACKEND_H
#define PVRDMA_RDMA_BACKEND_H

#include "hw/rdma/pvrdma_core.h"

typedef struct PvrdmaReq {
    uint64_t cookie;        /* identifies the request in pvrdma_req_done */
    uint32_t opcode;        /* PVRDMA_WR_* */
    uint32_t send_flags;    /* PVRDMA_SEND_* */
    uint32_t src_qpn;
    uint8_t qp_type;
    uint8_t rnr_retry;      /* requester's RNR retry count (7: forever) */
    PvrdmaSg local;         /* source (SEND/WRITE) or sink (READ/atomics) */
    uint64_t remote_addr;
    uint32_t rkey;
    uint32_t imm;           /* immediate data, or rkey to invalidate */
    uint64_t compare_add;
    uint64_t swap;
    /* destination */
    uint32_t dest_qpn;
    uint32_t qkey;          /* UD */
    uint8_t sgid[16];
    uint8_t sgid_type;
    uint8_t dgid[16];
    uint8_t smac[6];
} PvrdmaReq;

/* execute: the responder has no receive posted (RNR); retry later. */
#define PVRDMA_TRANSPORT_RNR        (-1)
/* execute: in flight; the transport calls pvrdma_req_done() later. */
#define PVRDMA_TRANSPORT_PENDING    (-2)

struct PvrdmaTransport {
    const char *name;
    PvrdmaCore *core;
    /* Can this transport deliver to dgid? */
    bool (*reaches)(PvrdmaTransport *t, const uint8_t dgid[16]);
    /*
     * Deliver; returns a PVRDMA_WC_* status for the requester, RNR, or
     * PENDING.  The core releases req->local when execute returns, so a
     * transport that keeps the request must not keep host pointers into
     * req->local that it did not take its own reference on.
     */
    int (*execute)(PvrdmaTransport *t, PvrdmaReq *req);
    /* Optional hooks. */
    void (*gids_changed)(PvrdmaTransport *t);   /* GID table changed */
    void (*wake)(PvrdmaTransport *t);           /* receives posted, timer */
    void (*qp_gone)(PvrdmaTransport *t, uint32_t qpn);  /* destroy / reset */
    void (*flush)(PvrdmaTransport *t);          /* end of a core run */
    void (*destroy)(PvrdmaTransport *t);
};

/* The loopback transport of core c (both ends on this device). */
void pvrdma_loopback_init(PvrdmaTransport *t, PvrdmaCore *c);

/*
 * Responder side, shared by transports: execute req against the local QP
 * req->dest_qpn of core c.  Returns the requester's status or
 * PVRDMA_TRANSPORT_RNR.
 */
int pvrdma_responder(PvrdmaCore *c, PvrdmaReq *req);

/*
 * Requester side: a PENDING request finished with a PVRDMA_WC_* status.
 * qpn is req->src_qpn.  Unknown (qpn, cookie) pairs are ignored: the QP
 * may have been flushed, reset or destroyed meanwhile.
 */
void pvrdma_req_done(PvrdmaCore *c, uint32_t qpn, uint64_t cookie, int status);

/* Add a transport after loopback; false if the list is full. */
bool pvrdma_core_add_transport(PvrdmaCore *c, PvrdmaTransport *t);

/* ------------------------------------------------------------------ */
/* Co-resident transport (backend/coresident.c)                        */

/* A range of this process's guest RAM that peers can map. */
typedef struct PvrdmaShmRegion {
    void *host;             /* where this process has it mapped */
    uint64_t size;
    int fd;                 /* shareable file (memfd, file, hugetlbfs) */
    uint64_t fd_offset;     /* offset of host[0] in fd */
} PvrdmaShmRegion;

/*
 * Event-loop services the co-resident transport needs from its host
 * (QEMU's main loop, or the unit tests' poll loop).
 */
typedef struct PvrdmaLoopOps {
    /* Watch fd: call read(arg) / write(arg) when ready; NULL removes. */
    void (*set_fd_handler)(void *opaque, int fd, void (*read)(void *),
                           void (*write)(void *), void *arg);
} PvrdmaLoopOps;

/*
 * Join the rendezvous directory dir: listen on a socket in it, connect to
 * every peer already there, offer the regions to peers.  Returns NULL with
 * a message in *err (g_free it) on failure.
 */
PvrdmaTransport *pvrdma_coresident_new(PvrdmaCore *c, const char *dir,
                                       const PvrdmaShmRegion *regions,
                                       unsigned nregions,
                                       const PvrdmaLoopOps *loop,
                                       void *loop_opaque, char **err);
/* Process exit: remove our socket from the rendezvous directory. */
void pvrdma_coresident_leave(PvrdmaTransport *t);
/* Number of connected peers (tests, info). */
unsigned pvrdma_coresident_peers(PvrdmaTransport *t);

#endif
