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
 * A device has a list of transports, which its owner (the QOM glue, a test
 * harness) adds after pvrdma_core_init(); a request goes to the first whose
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
    /*
     * execute() is cheap enough for the vCPU thread (a send doorbell runs
     * up to PVRDMA_INLINE_BUDGET requests for such a transport at once): it
     * builds and sends a message, no data copy, no host device calls.  The
     * co-resident transport; not loopback (it copies) or the rdma_cm
     * translator (host rdma_cm calls).
     */
    bool doorbell_ok;
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
    /*
     * Host HCA mode: QP qpn goes to RTR towards dest_qpn at dgid.  true
     * with *psn if its receive PSN must be *psn instead of the guest's.
     */
    bool (*rq_psn)(PvrdmaTransport *t, uint32_t qpn, uint32_t dest_qpn,
                   const uint8_t dgid[16], uint32_t *psn);
    void (*destroy)(PvrdmaTransport *t);
};

/*
 * The loopback transport of core c (both ends on this device), for
 * pvrdma_core_add_transport(); pvrdma_core_fini() frees it.
 */
PvrdmaTransport *pvrdma_loopback_new(PvrdmaCore *c);

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

/*
 * Append a transport to the list (at most PVRDMA_MAX_TRANSPORTS); false if
 * the list is full.  Loopback must come first: pvrdma_qp_send_doorbell()
 * sends from the doorbell only when there is more than one transport.
 * pvrdma_core_fini() destroys them.
 */
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
 * every peer already there, offer the regions to peers.  dir is created
 * 0700 if missing; an existing one must belong to this uid and not be
 * writable by group or others.  Peers must run as this uid; with a secret
 * (secret_len bytes, not empty; NULL: none) they must also prove they
 * have the same secret before they get the regions.  Returns NULL with a
 * message in *err (g_free it) on failure.
 */
PvrdmaTransport *pvrdma_coresident_new(PvrdmaCore *c, const char *dir,
                                       const void *secret, size_t secret_len,
                                       const PvrdmaShmRegion *regions,
                                       unsigned nregions,
                                       const PvrdmaLoopOps *loop,
                                       void *loop_opaque, char **err);
/* Process exit: remove our socket from the rendezvous directory. */
void pvrdma_coresident_leave(PvrdmaTransport *t);
/* Number of connected peers (tests, info). */
unsigned pvrdma_coresident_peers(PvrdmaTransport *t);

/* ------------------------------------------------------------------ */
/* Host HCA (backend/hostverbs.c)                                      */

/*
 * With a host HCA the guest's verbs objects become objects of a host
 * RDMA device: every PD, CQ, SRQ, MR and (non-GSI) QP of the guest has a
 * host twin (its 'hw' pointer), the guest sees the host's QP numbers and
 * memory keys, and host MRs cover guest RAM so the HCA moves data to and
 * from it directly.  The core still owns the guest rings: it copies each
 * WQE out, checks what only it can check (opcode, SGE count) and hands a
 * PvrdmaHcaSend to post_send; the host device checks keys and ranges.
 * Completions come back through pvrdma_hca_complete().
 */
typedef struct PvrdmaHca PvrdmaHca;

/* One send work request, guest values (keys and addresses pass through). */
typedef struct PvrdmaHcaSend {
    uint64_t wr_id;
    uint32_t opcode;                /* PVRDMA_WR_* */
    uint32_t send_flags;            /* PVRDMA_SEND_* */
    uint32_t imm;                   /* immediate data or rkey to invalidate */
    const struct pvrdma_sge *sge;
    uint32_t num_sge;
    uint64_t remote_addr;
    uint32_t rkey;
    uint64_t compare_add;
    uint64_t swap;
    /* UD */
    uint32_t remote_qpn;
    uint32_t remote_qkey;
    const PvrdmaGid *sgid;          /* the guest's source GID entry */
    const struct pvrdma_av *av;
} PvrdmaHcaSend;

/* One host completion, in the device's terms. */
typedef struct PvrdmaHcaWc {
    uint64_t wr_id;
    uint32_t status;                /* PVRDMA_WC_* status */
    uint32_t opcode;                /* PVRDMA_WC_* opcode */
    uint32_t vendor_err;
    uint32_t byte_len;
    uint32_t imm;
    uint32_t src_qp;
    uint32_t wc_flags;              /* PVRDMA_WC_* flags */
    uint16_t pkey_index;
    uint8_t sl;
    uint8_t network_hdr_type;
} PvrdmaHcaWc;

struct PvrdmaHca {
    PvrdmaCore *core;
    int (*pd_create)(PvrdmaHca *h, PvrdmaPD *pd);
    void (*pd_destroy)(PvrdmaHca *h, PvrdmaPD *pd);
    /* user and DMA MRs; *lkey / *rkey are what the guest sees */
    int (*mr_create)(PvrdmaHca *h, PvrdmaMR *mr, uint32_t *lkey,
                     uint32_t *rkey);
    void (*mr_destroy)(PvrdmaHca *h, PvrdmaMR *mr);
    int (*cq_create)(PvrdmaHca *h, PvrdmaCQ *cq, uint32_t cqe);
    void (*cq_destroy)(PvrdmaHca *h, PvrdmaCQ *cq);
    int (*srq_create)(PvrdmaHca *h, PvrdmaSRQ *srq);
    int (*srq_modify)(PvrdmaHca *h, PvrdmaSRQ *srq, uint32_t mask,
                      uint32_t limit);
    void (*srq_destroy)(PvrdmaHca *h, PvrdmaSRQ *srq);
    /* sets qp->qpn to the host's QP number */
    int (*qp_create)(PvrdmaHca *h, PvrdmaQP *qp);
    int (*qp_modify)(PvrdmaHca *h, PvrdmaQP *qp, uint32_t mask,
                     const struct pvrdma_qp_attr *a);
    /* the host QP's current state (it may have moved to error) */
    int (*qp_state)(PvrdmaHca *h, PvrdmaQP *qp);
    void (*qp_destroy)(PvrdmaHca *h, PvrdmaQP *qp);
    /* 0, -ENOMEM (queue full: retry after a completion) or -errno */
    int (*post_send)(PvrdmaHca *h, PvrdmaQP *qp, const PvrdmaHcaSend *wr);
    /* srq NULL: the QP's receive queue */
    int (*post_recv)(PvrdmaHca *h, PvrdmaQP *qp, PvrdmaSRQ *srq,
                     uint64_t wr_id, const struct pvrdma_sge *sge,
                     uint32_t num_sge);
    /* port state of the host port (PVRDMA_PORT_*) */
    uint32_t (*port_state)(PvrdmaHca *h);
    void (*destroy)(PvrdmaHca *h);
};

/*
 * A host completion for guest CQ cq, of QP qp (NULL if the QP is gone) on
 * its send (is_send) or receive side.
 */
void pvrdma_hca_complete(PvrdmaCore *c, PvrdmaCQ *cq, PvrdmaQP *qp,
                         bool is_send, const PvrdmaHcaWc *wc);
/* A host async event for a guest object (PVRDMA_EVENT_*, handle). */
void pvrdma_hca_event(PvrdmaCore *c, uint32_t type, uint32_t handle);

typedef struct PvrdmaHcaConfig {
    const char *dev;        /* host device name; NULL: the first one */
    uint8_t port;           /* 0: the first active port */
    int gid_index;          /* -1: find the guest's GID in the host table */
} PvrdmaHcaConfig;

/*
 * Open the host device; lowers the limits in *lim to what it supports.
 * regions: guest RAM (for MRs whose pages are not contiguous in this
 * process, which are mapped again, contiguously, from the region's fd).
 */
PvrdmaHca *pvrdma_hostverbs_new(PvrdmaCore *c, const PvrdmaHcaConfig *cfg,
                                PvrdmaLimits *lim,
                                const PvrdmaShmRegion *regions,
                                unsigned nregions, const PvrdmaLoopOps *loop,
                                void *loop_opaque, char **err);

/* ------------------------------------------------------------------ */
/* rdma_cm in host HCA mode (backend/hostcm.c)                         */

/*
 * The guest's CM MADs (its GSI QP) become host rdma_cm calls, and host
 * rdma_cm events become CM MADs for the guest; incoming connections are
 * taken on the given ports of the guest's addresses.  Returns NULL with a
 * message in *err (g_free it) on failure.
 */
PvrdmaTransport *pvrdma_hostcm_new(PvrdmaCore *c, const uint16_t *ports,
                                   unsigned nports, const PvrdmaLoopOps *loop,
                                   void *loop_opaque, char **err);

#endif
