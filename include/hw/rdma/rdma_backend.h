/*
 * pvrdma transports ("backends").
 *
 * The device core turns a guest send WQE into a PvrdmaReq: opcode, flags,
 * the local buffer already validated and resolved into host memory, and the
 * remote side (address/rkey, or UD destination).  A transport moves it to
 * the responder and returns the requester's completion status.  Transports
 * never see guest rings, registers or guest physical addresses.
 *
 * A QP picks its transport by the remote GID: pvrdma_transport_for().
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef PVRDMA_RDMA_BACKEND_H
#define PVRDMA_RDMA_BACKEND_H

#include "hw/rdma/pvrdma_core.h"

typedef struct PvrdmaReq {
    uint32_t opcode;        /* PVRDMA_WR_* */
    uint32_t send_flags;    /* PVRDMA_SEND_* */
    uint32_t src_qpn;
    uint8_t qp_type;
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

/* Returned by execute when the responder has no receive posted (RNR). */
#define PVRDMA_TRANSPORT_RNR    (-1)

struct PvrdmaTransport {
    const char *name;
    /* Can this transport deliver to dgid? */
    bool (*reaches)(PvrdmaCore *c, const uint8_t dgid[16]);
    /* Deliver; returns a PVRDMA_WC_* status for the requester, or RNR. */
    int (*execute)(PvrdmaCore *c, PvrdmaReq *req);
};

extern const PvrdmaTransport pvrdma_loopback_transport;

/*
 * Responder side, shared by transports: execute req against the local QP
 * req->dest_qpn of core c.  Returns the requester's status.
 */
int pvrdma_responder(PvrdmaCore *c, PvrdmaReq *req);

#endif
