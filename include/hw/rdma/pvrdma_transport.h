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
 *    CQ, SRQ, MR and non-GSI QP has a twin in the owner (its 'twin' pointer),
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
 * Three headers, by audience: this one, what a transport implements;
 * pvrdma_transport_calls.h, what a transport may call in the core; and
 * for the device's owner, pvrdma_core.h (pvrdma_core_add_transport()),
 * each transport's constructor header and pvrdma_info.h.
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
    /*
     * A message in pieces (PVRDMA_TP_SEGMENTED transports): msg_len is its
     * length, local holds its bytes [seg_off, seg_off + local.len); the
     * first piece has seg_off 0, the last ends at msg_len.  msg_len 0: local
     * is the whole message.
     */
    uint64_t seg_off, msg_len;
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
 * between runs but the core's own (loopback: a message in pieces, which
 * the save finishes): such a QP migrates with the device's state.
 */
#define PVRDMA_TP_STATELESS         (1u << 3)
/*
 * Copies the data in execute() (loopback): an RC SEND, RDMA WRITE or READ
 * longer than the core's byte budget per pass (PvrdmaCore.run_bytes) is
 * executed in pieces, one per pass (PvrdmaReq.seg_off, seg_len), so one
 * large request cannot hold the event loop for the whole copy.
 */
#define PVRDMA_TP_SEGMENTED         (1u << 4)

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

#endif
