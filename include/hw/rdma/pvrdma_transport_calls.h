/*
 * pvrdma transports: what a transport may call in the core (the contract
 * it implements is pvrdma_transport.h): the responder and its pieces, the
 * completer, the migration stream, timers and the QP's IBA timing, the
 * QP-moving protocol's answers, reports and async events.
 *
 * Threading: with the device's lock held (the BQL), as every hook runs.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_PVRDMA_TRANSPORT_CALLS_H
#define HW_RDMA_PVRDMA_TRANSPORT_CALLS_H

#include "hw/rdma/pvrdma_transport.h"

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
/*
 * A SEND in pieces from src_qpn to dest_qpn stops half-way (its requester
 * is gone): the receive it took goes without a completion.
 */
void pvrdma_transport_seg_drop(PvrdmaCore *c, uint32_t dest_qpn,
                               uint32_t src_qpn);
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

#endif
