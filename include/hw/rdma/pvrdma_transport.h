/*
 * pvrdma transports: one contract for every way a QP's traffic can take.
 *
 * A device has a list of transports, which its owner (the QOM glue, a test
 * harness) adds after pvrdma_core_init() with pvrdma_core_add_transport().
 * Each QP has a transport (qp->tp):
 *  - RC: chosen when the QP goes to RTR, by its destination GID: the first
 *    transport whose reaches() accepts it (loopback: a GID of this device;
 *    co-resident: a GID of a peer VM).  The transport's qp_attach() then
 *    takes the QP and may keep per-QP state in qp->tp_state (PSNs,
 *    timers); qp_detach() gives it back at reset and destroy.  A QP that no
 *    transport reaches at RTR is tried again at its first request.
 *  - UD and GSI: per request, by the work request's destination GID; a
 *    GSI request that no transport reaches goes to the GSI agent (the
 *    transport flagged PVRDMA_TP_GSI_AGENT: the host rdma_cm translator).
 *  - With an object owner (a queue transport: a host HCA) every guest PD,
 *    CQ, SRQ, MR and non-GSI QP has a twin in the owner (its 'hw' pointer),
 *    the guest sees the owner's QP numbers and keys, and every non-GSI QP
 *    takes the owner as its transport when it is created.  At most one
 *    transport owns objects: the guest sees one set of numbers.
 *
 * A transport carries a QP in one of two ways:
 *  - message transports (loopback, co-resident): the core's requester turns
 *    each send WQE into a PvrdmaReq (validated, its local buffer resolved
 *    into host memory) and calls execute(); the transport gets it to the
 *    responder, which is pvrdma_responder() of the core that owns the
 *    destination QP, and reports the requester's status.
 *  - queue transports (the owner): the core copies each WQE out of the
 *    guest ring, checks what only it can check (opcode, SGE count) and
 *    hands it to post_send() / post_recv(); the transport runs requester,
 *    responder and completer itself.
 * Either way, completions come back through pvrdma_complete() and async
 * events through pvrdma_transport_event().  Transports never see guest
 * rings, registers or guest physical addresses.
 *
 * Threading: every hook runs with the device's lock held (the BQL).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_PVRDMA_TRANSPORT_H
#define HW_RDMA_PVRDMA_TRANSPORT_H

#include "hw/rdma/pvrdma_core.h"

typedef struct PvrdmaReq {
    uint64_t cookie;        /* identifies the request in pvrdma_complete */
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
    /*
     * For transports that put requests on a wire (RoCEv2): the address
     * vector's MAC, hop limit, traffic class and flow label, and the WQE's
     * local buffer as the guest gave it (pd and SGEs; valid during
     * execute() only: copy them).  What goes out during execute() is read
     * from local; what goes out later (window, retransmissions) is read
     * again with pvrdma_transport_resolve(), as rxe looks its MRs up for
     * every packet: nothing holds a mapping of guest memory between
     * packets.
     */
    uint8_t dmac[6];
    uint8_t hop_limit;
    uint8_t traffic_class;
    uint32_t flow_label;
    uint32_t pd;
    const struct pvrdma_sge *sge;
    uint32_t num_sge;
} PvrdmaReq;

/*
 * One send work request for a queue transport, guest values (keys pass
 * through).  FAST_REG_MR and LOCAL_INV name their MR in mr, which the
 * core has checked and changed already: registered (its pages mapped in
 * mr->map, its iova, length, access and new key set) or invalidated.
 */
typedef struct PvrdmaSendWr {
    uint64_t wr_id;
    uint32_t opcode;                /* PVRDMA_WR_* */
    uint32_t send_flags;            /* PVRDMA_SEND_* */
    uint32_t imm;                   /* immediate data or rkey to invalidate */
    PvrdmaMR *mr;                   /* FAST_REG_MR, LOCAL_INV */
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
} PvrdmaSendWr;

/*
 * One completion, from any transport (pvrdma_complete()).
 *  - A message transport's request that execute() answered PENDING: qp,
 *    cookie and status; the core builds the CQE from the WQE it kept, in
 *    order.
 *  - A queue transport: cookie 0 and everything the CQE needs; cq says
 *    where it goes (the QP may be gone: qp 0).
 */
typedef struct PvrdmaWc {
    uint32_t qp;                    /* guest QP handle; 0: gone */
    uint32_t cq;                    /* guest CQ handle (queue transports) */
    bool is_send;
    uint64_t cookie;                /* PvrdmaReq.cookie; 0: queue transport */
    uint64_t wr_id;
    /* PVRDMA_WC_* status; a message transport's also NO_RESPONDER */
    int32_t status;
    uint32_t opcode;                /* PVRDMA_WC_* opcode */
    uint32_t vendor_err;
    uint32_t byte_len;
    uint32_t imm;
    uint32_t src_qp;
    uint32_t wc_flags;              /* PVRDMA_WC_* flags */
    uint16_t pkey_index;
    uint8_t sl;
    uint8_t network_hdr_type;
} PvrdmaWc;

/* execute: the responder has no receive posted (RNR); retry later. */
#define PVRDMA_TRANSPORT_RNR        (-1)
/* execute: in flight; the transport calls pvrdma_complete() later. */
#define PVRDMA_TRANSPORT_PENDING    (-2)
/*
 * RC, a request's status (execute(), pvrdma_responder(), PvrdmaWc.status):
 * no responder will ever answer it (no QP there in RTR..SQE, the peer is
 * gone, no transport).  On a wire the requester learns that from its local
 * ACK timer only: the core completes the WQE with RETRY_EXC_ERR once the
 * QP's retries would have run out (pvrdma_retry_window_ms()), not at once.
 */
#define PVRDMA_TRANSPORT_NO_RESPONDER (-3)
/*
 * execute: the transport takes no requests now (a peer stops while its
 * state is saved for a migration or snapshot): the WQE stays at the head
 * and the QP waits, with no deadline of its own, until the transport wakes
 * the senders (pvrdma_transport_wake_senders()).
 */
#define PVRDMA_TRANSPORT_PAUSED     (-4)
/*
 * RC, the PvrdmaWc.status of a PENDING request: the responder gave it back
 * unexecuted (it paused first).  The core runs the WQE again from the send
 * queue, with every WQE after it, when the transport takes requests again.
 */
#define PVRDMA_TRANSPORT_NOT_EXECUTED (-5)

/* PvrdmaMoveOps.moving: the peer is here ... */
#define PVRDMA_PEER_HERE            0
/* ... stopped while its state is saved (it may move) ... */
#define PVRDMA_PEER_PAUSED          1
/* ... its state went to another QEMU, which has not come here (yet) */
#define PVRDMA_PEER_MOVED           2

/* PvrdmaMessageOps.fence: every QP of the device */
#define PVRDMA_FENCE_ALL            UINT32_MAX
/*
 * How long a fence waits for the peers (ms).  The device reset and
 * DESTROY_QP wait for it on the vCPU: the driver does not wait for their
 * responses (it reads ERR and frees the memory at once).  MODIFY_QP to
 * RESET, whose response the driver waits for, posts it when the fence is
 * done or this bound passed, and the vCPU goes on at once.
 */
#define PVRDMA_FENCE_MS             5000

/* PvrdmaTransportOps.flags */
/*
 * execute() is cheap enough for the vCPU thread (a send doorbell runs up
 * to PVRDMA_INLINE_BUDGET requests for such a transport at once): it
 * builds and sends a message, no data copy, no host device calls.  The
 * co-resident transport; not loopback (it copies) or the rdma_cm
 * translator (host rdma_cm calls).
 */
#define PVRDMA_TP_DOORBELL_OK       (1u << 0)
/* Takes the GSI requests no other transport reaches (at most one). */
#define PVRDMA_TP_GSI_AGENT         (1u << 1)
/*
 * Keeps no state of its own for a QP it carries and has nothing in flight
 * between runs (loopback): such a QP migrates with the device's state.
 */
#define PVRDMA_TP_STATELESS         (1u << 3)

typedef struct PvrdmaMigReader PvrdmaMigReader;

/*
 * The contract of a message transport: the core's requester fetches each
 * WQE, resolves its scatter list and hands the request over; the
 * transport delivers it and the core completes it in order.  Loopback,
 * co-resident, RoCEv2, the rdma_cm translator (its GSI QP).
 */
typedef struct PvrdmaMessageOps {
    /*
     * Deliver req (required); returns a PVRDMA_WC_* status for the
     * requester, RNR, or PENDING.  The core releases req->local when
     * execute returns, so a transport that keeps the request must not
     * keep host pointers into req->local that it did not take its own
     * reference on.
     */
    int (*execute)(PvrdmaTransport *t, PvrdmaReq *req);

    /* Optional. */
    void (*wake)(PvrdmaTransport *t);           /* receives posted, RNR */
    /* pvrdma_transport_timer() asked for it (now or after its delay) */
    void (*timer)(PvrdmaTransport *t);
    /* QP qpn of this device is destroyed or reset: drop what waits on it */
    void (*qp_gone)(PvrdmaTransport *t, uint32_t qpn);
    /*
     * QP qpn of this device (PVRDMA_FENCE_ALL: every QP) is about to be
     * destroyed or reset, by a command or a device reset, after which the
     * guest may free or reuse the memory its WQEs named.  Nothing the QP
     * asked of another party may read or write that memory afterwards: a
     * transport whose peers access it when they execute a request
     * (co-resident) asks them to execute or drop what they hold and
     * returns true once they all answered.  It serves their answers for
     * up to wait_ms here; with 0 it returns at once and calls
     * pvrdma_transport_fenced() when they have answered (the core asks
     * again then).  Asking again for the same QP sends nothing twice.
     * Called outside the core's run loop.
     */
    bool (*fence)(PvrdmaTransport *t, uint32_t qpn, unsigned wait_ms);
    void (*flush)(PvrdmaTransport *t);          /* end of a core run */
} PvrdmaMessageOps;

/*
 * The contract of a queue transport, the object owner (at most one; the
 * host HCA): it owns the guest's objects and runs the QPs it carries on
 * its own queues; the core hands it the guest's WQEs as they are and
 * writes the CQEs it reports.  Every hook is required.
 */
typedef struct PvrdmaQueueOps {
    /*
     * Twins of the guest's objects.  The create hooks return 0 or a
     * negative errno.
     */
    int (*pd_create)(PvrdmaTransport *t, PvrdmaPD *pd);
    void (*pd_destroy)(PvrdmaTransport *t, PvrdmaPD *pd);
    /*
     * user, DMA and fast-registration MRs; *lkey / *rkey are what the
     * guest sees.  An FRMR's key takes any key byte the guest gives it in
     * a FAST_REG_MR (the owner's key for it is its remote key then).
     */
    int (*mr_create)(PvrdmaTransport *t, PvrdmaMR *mr, uint32_t *lkey,
                     uint32_t *rkey);
    void (*mr_destroy)(PvrdmaTransport *t, PvrdmaMR *mr);
    int (*cq_create)(PvrdmaTransport *t, PvrdmaCQ *cq, uint32_t cqe);
    void (*cq_destroy)(PvrdmaTransport *t, PvrdmaCQ *cq);
    int (*srq_create)(PvrdmaTransport *t, PvrdmaSRQ *srq);
    int (*srq_modify)(PvrdmaTransport *t, PvrdmaSRQ *srq, uint32_t mask,
                      uint32_t limit);
    void (*srq_destroy)(PvrdmaTransport *t, PvrdmaSRQ *srq);
    /* sets qp->qpn to the owner's QP number */
    int (*qp_create)(PvrdmaTransport *t, PvrdmaQP *qp);
    void (*qp_destroy)(PvrdmaTransport *t, PvrdmaQP *qp);
    /* port state of the owner's port (PVRDMA_PORT_*) */
    uint32_t (*port_state)(PvrdmaTransport *t);

    /*
     * The QPs.  qp_modify: the QP's new attributes (0 or a negative errno);
     * qp_state: the transport's current state of the QP (it may have moved
     * to error); post_send: 0, -ENOMEM (queue full: the core posts again
     * after a completion) or another negative errno, FAST_REG_MR and
     * LOCAL_INV included (they complete as PVRDMA_WC_FAST_REG_MR and
     * PVRDMA_WC_LOCAL_INV, in order with the QP's other sends); a receive
     * completion with PVRDMA_WC_WITH_INVALIDATE says the owner invalidated
     * that key (imm) at the peer's request; post_recv: as post_send, srq
     * NULL for the QP's own receive queue.
     */
    int (*qp_modify)(PvrdmaTransport *t, PvrdmaQP *qp, uint32_t mask,
                     const struct pvrdma_qp_attr *a);
    int (*qp_state)(PvrdmaTransport *t, PvrdmaQP *qp);
    int (*post_send)(PvrdmaTransport *t, PvrdmaQP *qp,
                     const PvrdmaSendWr *wr);
    int (*post_recv)(PvrdmaTransport *t, PvrdmaQP *qp, PvrdmaSRQ *srq,
                     uint64_t wr_id, const struct pvrdma_sge *sge,
                     uint32_t num_sge);
} PvrdmaQueueOps;

/* A path's counters (PvrdmaTransportOps.stats): what a wire counts. */
typedef struct PvrdmaPathStats {
    uint64_t tx_pkts, tx_bytes;
    uint64_t rx_pkts, rx_bytes;
    uint64_t retransmits;       /* request packets sent again */
    uint64_t timeouts;          /* local ACK timeouts */
    uint64_t rnr_naks;          /* RNR NAKs received */
    uint64_t seq_naks;          /* PSN sequence NAKs received */
    uint64_t dups;              /* duplicate requests answered again */
    uint64_t drops;             /* frames dropped: malformed, misdirected */
} PvrdmaPathStats;

/*
 * What every transport implements (all optional but name), plus the
 * contract of its kind: exactly one of msg and queue.
 */
/*
 * The QP-moving protocol, optional (PvrdmaTransportOps.move): a transport
 * whose peers may move away, or that can hand an RC QP over to a better
 * transport or take one back.
 */
typedef struct PvrdmaMoveOps {
    /*
     * A transport whose peers may move away (a migration to another
     * host): where the peer at dgid is (PVRDMA_PEER_*).  MOVED: this
     * transport still reaches it (the peer may come back here), but an RC
     * QP on it changes transport once the peer is heard on another
     * (pvrdma_transport_heard()), or when this transport stops reaching
     * it.  Such a transport counts the PSNs the wire would have taken
     * (qp->attr.sq_psn and rq_psn, pvrdma_qp_npsn()), so that the other
     * transport carries on.
     */
    int (*moving)(PvrdmaTransport *t, const uint8_t dgid[16]);
    /*
     * The way back, from a transport that keeps connection state (RoCEv2)
     * to a better one (co-resident) that reaches the peer now.  qp_idle: qp
     * has nothing in flight here either way (no request unacknowledged, no
     * response unsent, no message half received); true with the PSNs it
     * would carry on with (its next PSN to send, the next it expects).
     * qp_offer: ask the peer's QP to move here with the peer's PSNs
     * (pvrdma_transport_offered() there); 0 if asked, and then the answer
     * comes to pvrdma_transport_answered(), or a negative errno.
     */
    bool (*qp_idle)(PvrdmaTransport *t, PvrdmaQP *qp, uint32_t *sq_psn,
                    uint32_t *rq_psn);
    int (*qp_offer)(PvrdmaTransport *t, PvrdmaQP *qp, uint32_t sq_psn,
                    uint32_t rq_psn);
    /*
     * An RC QP in RTR..SQD came to this transport from another (a
     * migration, or its peer moved): tell the peer, which may still wait on
     * the old transport, where the QP is now.  Harmless to a peer already
     * here.
     */
    void (*qp_announce)(PvrdmaTransport *t, PvrdmaQP *qp);
} PvrdmaMoveOps;

/* Migration and snapshots, optional (PvrdmaTransportOps.mig). */
typedef struct PvrdmaMigOps {
    /*
     * All optional.  quiesce: the VM stops for its state to be saved:
     * finish, or give back (NOT_EXECUTED), every request in flight either
     * way, and take no new ones (PAUSED); false if that did not work out
     * within timeout_ms.  resume: the VM runs here again (a snapshot, or
     * the migration failed).  moved: the state lives in another QEMU now,
     * which takes this one's place.
     */
    bool (*quiesce)(PvrdmaTransport *t, unsigned timeout_ms);
    void (*resume)(PvrdmaTransport *t);
    void (*moved)(PvrdmaTransport *t);
    /*
     * The connection state of an RC QP on this transport (after quiesce: no
     * request of it in flight), so that it carries on elsewhere: qp_save
     * appends it, qp_load reads it back into a QP that the load walked to
     * its saved state on this transport (false, and r->err set, if
     * refused).  A transport with qp_save may migrate its QPs.
     */
    void (*qp_save)(PvrdmaTransport *t, PvrdmaQP *qp, GByteArray *b);
    bool (*qp_load)(PvrdmaTransport *t, PvrdmaQP *qp,
                    PvrdmaMigReader *r);
} PvrdmaMigOps;

typedef struct PvrdmaTransportOps {
    const char *name;
    unsigned flags;                 /* PVRDMA_TP_* */

    /* Transport choice: can this transport carry traffic to dgid? */
    bool (*reaches)(PvrdmaTransport *t, const uint8_t dgid[16]);
    /*
     * An RC QP takes this transport (at RTR, with its attributes set); 0 or
     * a negative errno, which fails the MODIFY_QP.  qp_detach undoes it.
     */
    int (*qp_attach)(PvrdmaTransport *t, PvrdmaQP *qp);
    void (*qp_detach)(PvrdmaTransport *t, PvrdmaQP *qp);

    void (*gids_changed)(PvrdmaTransport *t);   /* GID table changed */
    /*
     * QP qpn goes to RTR towards dest_qpn at dgid.  true with *psn if its
     * receive PSN must be *psn instead of the guest's (a connection that
     * the GSI agent made on the guest's behalf).
     */
    bool (*rq_psn)(PvrdmaTransport *t, uint32_t qpn, uint32_t dest_qpn,
                   const uint8_t dgid[16], uint32_t *psn);
    /*
     * The counters of QP qp on this transport, or with qp NULL of the
     * whole transport, into *st: false if it keeps none
     * (pvrdma_info_qps(), query-pvrdma).
     */
    bool (*stats)(PvrdmaTransport *t, const PvrdmaQP *qp,
                  PvrdmaPathStats *st);
    /* NULL: pvrdma_core_fini() g_free()s the transport */
    void (*destroy)(PvrdmaTransport *t);

    const PvrdmaMessageOps *msg;    /* a message transport, or ... */
    const PvrdmaQueueOps *queue;    /* ... a queue transport */
    const PvrdmaMoveOps *move;      /* optional: QPs change transport */
    const PvrdmaMigOps *mig;        /* optional: state that migrates */
} PvrdmaTransportOps;

struct PvrdmaTransport {
    const PvrdmaTransportOps *ops;
    PvrdmaCore *core;
};

/*
 * Append a transport to the list (at most PVRDMA_MAX_TRANSPORTS, at most
 * one owner and one GSI agent); false if refused.  Loopback comes first:
 * the first transport that reaches a destination gets it.
 * pvrdma_core_fini() destroys them, last added first, after the reset
 * that destroys the owner's twins.
 */
bool pvrdma_core_add_transport(PvrdmaCore *c, PvrdmaTransport *t);
/* Free a transport the list refused (or one never added). */
void pvrdma_transport_free(PvrdmaTransport *t);

/*
 * Responder side, shared by message transports: execute req against the
 * local QP req->dest_qpn of core c.  Returns the requester's status or
 * PVRDMA_TRANSPORT_RNR.
 */
int pvrdma_responder(PvrdmaCore *c, PvrdmaReq *req);
/*
 * The migration stream, for a transport's qp_save/qp_load: little-endian
 * numbers; every read is bounded and the first failure sticks (reads after
 * it return 0).
 */
struct PvrdmaMigReader {
    const uint8_t *p;
    size_t left;
    char *err;
};

void pvrdma_mig_put8(GByteArray *b, uint8_t v);
void pvrdma_mig_put32(GByteArray *b, uint32_t v);
void pvrdma_mig_put64(GByteArray *b, uint64_t v);
uint8_t pvrdma_mig_get8(PvrdmaMigReader *r);
uint32_t pvrdma_mig_get32(PvrdmaMigReader *r);
uint64_t pvrdma_mig_get64(PvrdmaMigReader *r);
/* Sets r->err (the first failure only); returns false. */
bool G_GNUC_PRINTF(2, 3) pvrdma_mig_fail(PvrdmaMigReader *r,
                                         const char *fmt, ...);

/* Would a UD/GSI datagram to dest_qpn with qkey be received (not dropped)? */
bool pvrdma_ud_accepts(PvrdmaCore *c, uint32_t dest_qpn, uint32_t qkey);

/*
 * Responder primitives for a transport that receives a message in pieces
 * (RoCEv2: one call per packet).  qp is a QP of core c in RTR..SQE that the
 * caller matched to the packet.  Each returns PVRDMA_WC_SUCCESS, an error
 * (the receive CQE is written, an RC QP moved to error, the context freed;
 * RC: the requester's status; UD: the receiver's, which its sender must
 * never learn) or PVRDMA_TRANSPORT_RNR (RC, nothing posted).
 */
typedef struct PvrdmaRecvCtx PvrdmaRecvCtx;
/*
 * Take qp's next receive WQE (RQ or SRQ) and place the message's first len
 * bytes of data (0: none yet) with the same resolution of its SGEs; *ctx
 * NULL unless SUCCESS.
 */
int pvrdma_recv_begin(PvrdmaCore *c, PvrdmaQP *qp, PvrdmaRecvCtx **ctx,
                      const PvrdmaSg *data, uint64_t len);
/* Append len bytes of data to the message; an error frees ctx. */
int pvrdma_recv_data(PvrdmaCore *c, PvrdmaQP *qp, PvrdmaRecvCtx *ctx,
                     const PvrdmaSg *data, uint64_t len);
/*
 * The message is in: the receive CQE (req: opcode, imm or rkey to
 * invalidate, send_flags, source QP, GIDs, smac).  Frees ctx.
 */
int pvrdma_recv_end(PvrdmaCore *c, PvrdmaQP *qp, PvrdmaRecvCtx *ctx,
                    const PvrdmaReq *req, uint32_t byte_len);
/* The QP was reset or destroyed mid-message: forget it, no CQE. */
void pvrdma_recv_abort(PvrdmaRecvCtx *ctx);
/*
 * Migration of a message in progress: the receive WQE it took (a copy:
 * the guest may have reused its ring slot) and the bytes so far.  The load
 * checks the WQE against qp as a posted one; NULL and r->err if refused.
 */
void pvrdma_recv_ctx_save(const PvrdmaRecvCtx *ctx, GByteArray *b);
PvrdmaRecvCtx *pvrdma_recv_ctx_load(PvrdmaCore *c, PvrdmaQP *qp,
                                    PvrdmaMigReader *r);
/*
 * [va, va + len) of rkey for access (PVRDMA_ACCESS_REMOTE_*) into *sg
 * (release it with pvrdma_sg_release()), or REM_ACCESS_ERR (qp failed).
 */
int pvrdma_resp_remote(PvrdmaCore *c, PvrdmaQP *qp, uint32_t rkey,
                       uint64_t va, uint64_t len, uint32_t access,
                       PvrdmaSg *sg);
/* req's atomic (opcode, remote_addr, rkey, compare_add, swap) at qp. */
int pvrdma_resp_atomic(PvrdmaCore *c, PvrdmaQP *qp, const PvrdmaReq *req,
                       uint64_t *orig);
/* A request arrived for qp: COMM_EST if it is the first one in RTR. */
void pvrdma_resp_comm_est(PvrdmaCore *c, PvrdmaQP *qp);

/*
 * A transport's copy of a request's local buffer (PvrdmaReq pd, sge,
 * num_sge), resolved again now into *sg: is_write for a sink (READ and
 * atomic results).  A PVRDMA_WC_* status (LOC_PROT_ERR: an lkey is gone).
 */
int pvrdma_transport_resolve(PvrdmaCore *c, uint32_t pd,
                             const struct pvrdma_sge *sge, uint32_t num_sge,
                             bool is_write, PvrdmaSg *sg);
/*
 * Call the transports' timer() hooks from the run loop in delay_ms (0: as
 * soon as possible).  The earliest request wins, and the hooks may run
 * earlier than asked (the run loop ran for something else): a transport
 * checks its deadlines and asks again for the next one.
 */
void pvrdma_transport_timer(PvrdmaCore *c, unsigned delay_ms);
/*
 * Run the core's timed waiters (senders and responders waiting on RNR,
 * held completions) at time at (ms, ops->now_ms()); the earliest wins.
 */
void pvrdma_core_timer_at(PvrdmaCore *c, int64_t at);
/* A transport takes requests again: QPs waiting on it (PAUSED, RNR) retry. */
void pvrdma_transport_wake_senders(PvrdmaCore *c);
/* A fence asked with wait_ms 0 (PvrdmaMessageOps.fence) may be done now. */
void pvrdma_transport_fenced(PvrdmaTransport *t);

/* qp's path MTU in bytes (1024 if the attribute is not one) */
uint32_t pvrdma_qp_mtu(const PvrdmaQP *qp);
/*
 * The PSNs an RC request of len bytes takes on the wire at qp's path MTU:
 * one per packet; a READ those of its responses; an atomic one.
 */
uint32_t pvrdma_qp_npsn(const PvrdmaQP *qp, uint32_t opcode, uint64_t len);
/*
 * A transport that carries qp without a wire of its own (co-resident)
 * counts the PSNs the wire would have taken: npsn more sent (requester)
 * or received (the responder's rq_psn), RC only, so that a transport that
 * takes the QP over (RoCEv2) carries on from there.
 */
void pvrdma_qp_count_psns(PvrdmaQP *qp, bool requester, uint32_t npsn);
/*
 * An RC packet for qp came over transport t from the QP's peer while qp
 * is on another transport: true if qp is on t now (its transport had lost
 * the peer: PvrdmaMoveOps.moving), else the packet is not for t.
 */
bool pvrdma_transport_heard(PvrdmaCore *c, PvrdmaQP *qp, PvrdmaTransport *t);
/*
 * The peer of RC qp offers to carry on over t (PvrdmaTransportOps.
 * qp_offer), with its next PSN to send and the next it expects: true if qp
 * was idle on its transport with the same PSNs the other way round, and is
 * on t now (then the peer moves too).
 */
bool pvrdma_transport_offered(PvrdmaCore *c, PvrdmaQP *qp,
                              PvrdmaTransport *t, uint32_t peer_sq_psn,
                              uint32_t peer_rq_psn);
/* The answer to qp's offer to move to t: moved there (ok) or not. */
void pvrdma_transport_answered(PvrdmaCore *c, PvrdmaQP *qp,
                               PvrdmaTransport *t, bool ok);

/*
 * qp's local ACK timeout in ms: 4.096 us << attr.timeout, at least
 * PVRDMA_MIN_ACK_TIMEOUT_MS; 0 for timeout 0 (IBA 9.7.6.1.3: no timer).
 */
#define PVRDMA_MIN_ACK_TIMEOUT_MS 10
int64_t pvrdma_ack_timeout_ms(const PvrdmaQP *qp);
/*
 * How long an unanswered request of qp takes to fail: its local ACK
 * timeout, retry_cnt + 1 times; 0: forever (timeout 0).
 */
int64_t pvrdma_retry_window_ms(const PvrdmaQP *qp);

/*
 * The one completion entry of every transport (see PvrdmaWc).  Unknown QPs,
 * CQs and (qp, cookie) pairs are ignored: the QP may have been flushed,
 * reset or destroyed meanwhile.
 */
void pvrdma_complete(PvrdmaCore *c, const PvrdmaWc *wc);
/*
 * A batch of completions: from begin to end (nested pairs count once),
 * CQEs are written into the guest's CQ rings but their producer indexes
 * published, and armed CQs notified, only at the end: one index store
 * and at most one interrupt per CQ per batch, where a guest that re-arms
 * at once would take one per CQE.  For a transport's burst (the records
 * of one event); end it before the host's locks are dropped (polling).
 * The run loop and the send doorbell are batches of their own.
 */
void pvrdma_batch_begin(PvrdmaCore *c);
void pvrdma_batch_end(PvrdmaCore *c);
/*
 * The object owner replaced the host object behind FRMR mr (its key in
 * the guest's work requests): mr is invalid, and its key is key (0: it
 * has none, and the guest's work requests no longer find it).
 */
void pvrdma_owner_frmr_rekey(PvrdmaCore *c, PvrdmaMR *mr, uint32_t key);
/* Tell the host (PvrdmaHostOps.report, if it listens). */
void pvrdma_report(PvrdmaCore *c, const PvrdmaReport *r);
/*
 * An async event from a transport for a guest object (PVRDMA_EVENT_*,
 * handle); a QP error event moves the QP to the error state.
 */
void pvrdma_transport_event(PvrdmaCore *c, uint32_t type, uint32_t handle);

/* ------------------------------------------------------------------ */
/* What the device does (pvrdma_info.c): query-pvrdma, info pvrdma     */

/* One QP (pvrdma_info_qps()). */
typedef struct PvrdmaQpInfo {
    uint32_t qpn;
    uint32_t type;              /* PVRDMA_QPT_* */
    uint32_t state;             /* PVRDMA_QPS_* */
    /*
     * The transport that carries it; "per-request" for UD and GSI (each
     * request goes where its destination is), "none" for RC before RTR.
     */
    const char *path;
    bool has_peer;              /* RC in RTR or later: */
    uint8_t peer_gid[16];
    uint32_t peer_qpn;
    bool has_stats;             /* its path keeps counters for it */
    PvrdmaPathStats st;
} PvrdmaQpInfo;

/* One transport (pvrdma_info_transports()). */
typedef struct PvrdmaTransportInfo {
    const char *name;
    bool has_stats;
    PvrdmaPathStats st;
} PvrdmaTransportInfo;

/* t's counters of qp (NULL: of t), zero and false if it keeps none. */
bool pvrdma_transport_stats(PvrdmaTransport *t, const PvrdmaQP *qp,
                            PvrdmaPathStats *st);
/* The guest's driver activated the device; its port is up. */
void pvrdma_info_device(PvrdmaCore *c, bool *active, bool *port_up);
/* Every QP of the device, by handle: a GArray of PvrdmaQpInfo. */
GArray *pvrdma_info_qps(PvrdmaCore *c);
/* Every transport of the device, in the order it tries them. */
GArray *pvrdma_info_transports(PvrdmaCore *c);
/* "RC", "RTS", ...: a QP type's and state's names ("?" if none). */
const char *pvrdma_qp_type_name(uint32_t type);
const char *pvrdma_qp_state_name(uint32_t state);
/*
 * What the device's QPs do, for people (x-query-pvrdma-qps, a debugging
 * aid): a line per QP with its number, type, state, path,
 * peer and the path's counters, then a line per transport with counters.
 * g_free() it.
 */
char *pvrdma_describe_qps(PvrdmaCore *c);

/* ------------------------------------------------------------------ */
/* What several transports take from their host                        */

/*
 * The host's services (an event loop that watches fds, the network to
 * send frames on) come through the core's PvrdmaHostOps (pvrdma_core.h).
 */

/* A range of this process's guest RAM that peers can map. */
typedef struct PvrdmaShmRegion {
    void *host;             /* where this process has it mapped */
    uint64_t size;
    int fd;                 /* shareable file (memfd, file, hugetlbfs) */
    uint64_t fd_offset;     /* offset of host[0] in fd */
} PvrdmaShmRegion;

/*
 * Each transport's constructor and API: pvrdma_loopback.h,
 * pvrdma_coresident.h, pvrdma_hostverbs.h, pvrdma_hostcm.h, pvrdma_roce.h.
 */

#endif
