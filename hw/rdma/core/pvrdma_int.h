/*
 * pvrdma core: what only the core's own files share.
 *
 * Owns the declarations the core's files (hw/rdma/core/, not the QOM glue
 * in hw/rdma/) use between each other, grouped by the file that defines
 * them.  Does not own the core's public API (include/hw/rdma/pvrdma_core.h:
 * what the QOM glue, the transports and the tests use) nor the transport
 * interface (include/hw/rdma/pvrdma_transport.h: the transport contract,
 * pvrdma_responder(), pvrdma_complete()).  Nothing outside
 * hw/rdma/core/ includes this header.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_PVRDMA_INT_H
#define HW_RDMA_PVRDMA_INT_H

#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_transport_calls.h"

/* pvrdma_ring.c: WQE copy-out */

/* A WQE's stride in a ring: header and nsge SGEs, a power of two. */
uint32_t pvrdma_wqe_stride(size_t hdr, uint32_t nsge);
/* The pages that n ring elements of stride bytes take. */
uint32_t pvrdma_ring_pages(uint32_t n, uint32_t stride);

/* A WQE copied out of a guest ring (at most the QP's SGE count is read). */
typedef struct PvrdmaSendWqe {
    struct pvrdma_sq_wqe_hdr hdr;
    struct pvrdma_sge sge[PVRDMA_HARD_MAX_SGE];
    bool sge_ok;            /* hdr.num_sge within the ring's SGE limit */
} PvrdmaSendWqe;

typedef struct PvrdmaRecvWqe {
    struct pvrdma_rq_wqe_hdr hdr;
    struct pvrdma_sge sge[PVRDMA_HARD_MAX_SGE];
    bool sge_ok;            /* hdr.num_sge within the ring's SGE limit */
} PvrdmaRecvWqe;

/* Copy WQE idx of ring r out: its header and at most max_sge SGEs. */
void pvrdma_fetch_send_wqe(const PvrdmaRing *r, uint32_t idx,
                           uint32_t max_sge, PvrdmaSendWqe *w);
void pvrdma_fetch_recv_wqe(const PvrdmaRing *r, uint32_t idx,
                           uint32_t max_sge, PvrdmaRecvWqe *w);

/* the core as a whole */

/* Is the port up (the paired NIC's link; up when the host cannot tell)? */
static inline bool pvrdma_port_up(PvrdmaCore *c)
{
    return !c->inject_port_down &&
           (!c->ops->link_up || c->ops->link_up(c->opaque));
}

/* pvrdma_inject.c: the injections' hooks */

/* The injection that fires for command cmd now (counted), or NULL. */
const PvrdmaInject *pvrdma_inject_cmd(PvrdmaCore *c, uint32_t cmd);
/* The status injected into qp's next send completion, or 0. */
uint32_t pvrdma_inject_wc(PvrdmaCore *c, PvrdmaQP *qp);
/* The run loop: a held response that is due goes to the guest. */
void pvrdma_inject_resp_due(PvrdmaCore *c);

/* pvrdma_transport.c: transport list, QPs' transports, owner, hooks */
/* t's counters of qp (NULL: of t), zero and false if it keeps none. */
bool pvrdma_transport_stats(PvrdmaTransport *t, const PvrdmaQP *qp,
                            PvrdmaPathStats *st);

/* Senders waiting on RNR retry, here and in the transports. */
void pvrdma_wake_rnr(PvrdmaCore *c);

void pvrdma_transports_destroy(PvrdmaCore *c);
/*
 * The transport an RC QP that chooses at RTR takes to dgid: the first
 * transport that reaches it, else the owner (if qp has a twin), else NULL.
 * A QP that has its transport, or whose transport is not chosen at RTR:
 * qp->tp.
 */
PvrdmaTransport *pvrdma_transport_choose(PvrdmaCore *c, const PvrdmaQP *qp,
                                         const uint8_t dgid[16]);
/*
 * An RC QP goes to RTR: the transport pvrdma_transport_choose() gives
 * takes it.  0, or the errno (positive) that fails the MODIFY_QP.
 */
int pvrdma_transport_attach(PvrdmaCore *c, PvrdmaQP *qp);
/*
 * Migration: qp carries on over t, its transport before the move (false:
 * no).
 */
bool pvrdma_transport_attach_to(PvrdmaCore *c, PvrdmaQP *qp,
                                PvrdmaTransport *t);
/*
 * Reset / destroy: a transport chosen at RTR (not the owner) lets the QP
 * go.
 */
void pvrdma_transport_detach(PvrdmaCore *c, PvrdmaQP *qp);
/* The transport for a request of qp to dgid; NULL: unreachable. */
PvrdmaTransport *pvrdma_transport_for(PvrdmaCore *c, PvrdmaQP *qp,
                                      const uint8_t dgid[16]);
/* Is t the queue transport (the object owner)? */
bool pvrdma_transport_is_queue(const PvrdmaTransport *t);
/* Is qp on a queue transport (the object owner carries and runs it)? */
bool pvrdma_qp_on_queue_transport(const PvrdmaQP *qp);
/* The owner's twins: 0 / nothing without an owner (negative errno). */
int pvrdma_owner_pd_create(PvrdmaCore *c, PvrdmaPD *pd);
void pvrdma_owner_pd_destroy(PvrdmaCore *c, PvrdmaPD *pd);
int pvrdma_owner_mr_create(PvrdmaCore *c, PvrdmaMR *mr, uint32_t *lkey,
                           uint32_t *rkey);
void pvrdma_owner_mr_destroy(PvrdmaCore *c, PvrdmaMR *mr);
/* An FRMR's key changes (its key byte): index the new one instead. */
void pvrdma_owner_mr_rekey(PvrdmaCore *c, PvrdmaMR *mr, uint32_t key);
int pvrdma_owner_cq_create(PvrdmaCore *c, PvrdmaCQ *cq, uint32_t cqe);
void pvrdma_owner_cq_destroy(PvrdmaCore *c, PvrdmaCQ *cq);
int pvrdma_owner_srq_create(PvrdmaCore *c, PvrdmaSRQ *srq);
int pvrdma_owner_srq_modify(PvrdmaCore *c, PvrdmaSRQ *srq, uint32_t mask,
                            uint32_t limit);
void pvrdma_owner_srq_destroy(PvrdmaCore *c, PvrdmaSRQ *srq);
/*
 * Non-GSI QPs get a twin (and the owner's QP number); UD QPs and QPs on an
 * SRQ also get the owner as their (queue) transport, the others choose at
 * RTR.
 */
int pvrdma_owner_qp_create(PvrdmaCore *c, PvrdmaQP *qp);
void pvrdma_owner_qp_destroy(PvrdmaCore *c, PvrdmaQP *qp);
/* qp chose the owner at RTR (take), or goes to RESET (reset: chooses anew) */
void pvrdma_owner_qp_take(PvrdmaCore *c, PvrdmaQP *qp);
void pvrdma_owner_qp_reset(PvrdmaCore *c, PvrdmaQP *qp);
/* The owner's port is active (true without an owner). */
bool pvrdma_owner_port_active(PvrdmaCore *c);
/* The GID table changed: tell the transports. */
void pvrdma_gids_changed(PvrdmaCore *c);
/* Does any transport have a wake hook? */
bool pvrdma_transports_can_wake(PvrdmaCore *c);
/*
 * The message transports' hooks the run loop calls (pvrdma_dp.c): flush
 * (the end of a run or a doorbell's burst), wake (receives posted),
 * timer (pvrdma_transport_timer() came due).
 */
void pvrdma_transports_flush(PvrdmaCore *c);
void pvrdma_transports_wake(PvrdmaCore *c);
void pvrdma_transports_timer(PvrdmaCore *c);
/*
 * One transport, for the core's other files: every call into a transport
 * goes through pvrdma_transport.c.
 */
const char *pvrdma_transport_name(const PvrdmaTransport *t);
/* may execute() run on the vCPU thread (PVRDMA_TP_DOORBELL_OK)? */
bool pvrdma_transport_doorbell_ok(const PvrdmaTransport *t);
/* does execute() copy, in pieces if told (PVRDMA_TP_SEGMENTED)? */
bool pvrdma_transport_segmented(const PvrdmaTransport *t);
/* a message transport's execute() */
int pvrdma_transport_execute(PvrdmaTransport *t, PvrdmaReq *req);
PvrdmaTransport *pvrdma_transport_by_name(PvrdmaCore *c, const char *name);
/*
 * Migration (pvrdma_mig.c, pvrdma_mig_load.c): may a QP on t migrate (t
 * keeps no state, pauses its peers or hands the state over)?  qp_save:
 * false if t hands nothing over; can_load: t takes a handed-over state;
 * qp_announce: a QP that came without state tells its peer (if t can).
 */
bool pvrdma_transport_migrates(const PvrdmaTransport *t);
bool pvrdma_transport_qp_save(PvrdmaTransport *t, PvrdmaQP *qp,
                              GByteArray *b);
bool pvrdma_transport_can_load(const PvrdmaTransport *t);
bool pvrdma_transport_qp_load(PvrdmaTransport *t, PvrdmaQP *qp,
                              PvrdmaMigReader *r);
void pvrdma_transport_qp_announce(PvrdmaTransport *t, PvrdmaQP *qp);
/* The owner's queues for a QP it carries: as PvrdmaQueueOps */
int pvrdma_owner_qp_modify(PvrdmaCore *c, PvrdmaQP *qp, uint32_t mask,
                           const struct pvrdma_qp_attr *a);
int pvrdma_owner_qp_state(PvrdmaCore *c, PvrdmaQP *qp);
int pvrdma_owner_post_send(PvrdmaCore *c, PvrdmaQP *qp,
                           const PvrdmaSendWr *wr);
int pvrdma_owner_post_recv(PvrdmaCore *c, PvrdmaQP *qp, PvrdmaSRQ *srq,
                           uint64_t wr_id, const struct pvrdma_sge *sge,
                           uint32_t num_sge);
/* A QP is destroyed or reset: transports drop requests waiting on it. */
void pvrdma_qp_gone(PvrdmaCore *c, uint32_t qpn);
/*
 * QP qpn (PVRDMA_FENCE_ALL: every QP) is about to be destroyed or reset:
 * true once no peer touches the memory its requests named any more,
 * serving the peers for up to wait_ms (PvrdmaMessageOps.fence).
 */
bool pvrdma_qp_fence(PvrdmaCore *c, uint32_t qpn, unsigned wait_ms);
/*
 * In a command's handler: true when QP qpn is fenced, or when the command
 * waited for it PVRDMA_FENCE_MS already (then the host log says so); else
 * the handler returns PVRDMA_CMD_WAIT and runs again, with the same
 * request, when the fence is done (pvrdma_cmd_wait_check()).  Nothing of
 * the command may have changed before.
 */
bool pvrdma_cmd_fence(PvrdmaCore *c, uint32_t qpn);
/* A handler's result: the response comes later (pvrdma_cmd_fence()) */
#define PVRDMA_CMD_WAIT (-1)
/*
 * The command that waits for a fence runs again if its QP is fenced, its
 * bound passed, or now (migration: the transports are quiesced, nothing
 * is in flight).  From the run loop and pvrdma_core_quiesce().
 */
void pvrdma_cmd_wait_check(PvrdmaCore *c, bool now);
/* The transports' quiesce hooks (pvrdma_core_quiesce()): false if one failed */
bool pvrdma_transports_quiesce(PvrdmaCore *c, unsigned timeout_ms);
/* A doorbell of qp is not served while a command waits for its fence. */
bool pvrdma_qp_fencing(PvrdmaCore *c, const PvrdmaQP *qp);
/* A receive PSN a transport imposes on qpn (the GSI agent's connections). */
bool pvrdma_transports_rq_psn(PvrdmaCore *c, uint32_t qpn, uint32_t dest_qpn,
                              const uint8_t dgid[16], uint32_t *psn);

/* pvrdma_cmd.c: the command channel (decode, dispatch, response) */

/* A command's handler: 0 or the errno the guest sees (rsp filled on 0). */
typedef int (*PvrdmaCmdHandler)(PvrdmaCore *c,
                                const union pvrdma_cmd_req *req,
                                union pvrdma_cmd_resp *rsp);
/* A guest error in a command: logged (LOG_GUEST_ERROR), err returned. */
#define CMD_ERR(c, err, fmt, ...) ({ \
        PVRDMA_GUEST_ERR(c, fmt, ##__VA_ARGS__); \
        (err); \
    })

void pvrdma_exec_command(PvrdmaCore *c);
void pvrdma_destroy_all(PvrdmaCore *c);
/*
 * Run one command from a request built by the device itself (a migrated
 * state replayed, pvrdma_mig_load.c): the same checks as the guest's commands,
 * no response slot, no interrupt.  Returns 0 or the errno the guest would
 * have seen.
 */
int pvrdma_cmd_replay(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                      union pvrdma_cmd_resp *rsp);

/* The objects' lives: a command handler each (PvrdmaCmdHandler), a free */

/* pvrdma_pd.c: user contexts and PDs */
int pvrdma_cmd_create_uc(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                         union pvrdma_cmd_resp *rsp);
int pvrdma_cmd_destroy_uc(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                          union pvrdma_cmd_resp *rsp);
int pvrdma_cmd_create_pd(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                         union pvrdma_cmd_resp *rsp);
int pvrdma_cmd_destroy_pd(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                          union pvrdma_cmd_resp *rsp);
void pvrdma_uc_free(PvrdmaCore *c, PvrdmaUC *uc);
void pvrdma_pd_free(PvrdmaCore *c, PvrdmaPD *pd);
/* Effective UAR page owner check for doorbells. */
uint32_t pvrdma_ctx_of_pd(PvrdmaCore *c, uint32_t pd);
/* ctx 0 is the kernel; anything else must be a live user context. */
bool pvrdma_ctx_valid(PvrdmaCore *c, uint32_t ctx);
/* References an object created in a context or PD holds on it. */
void pvrdma_ctx_ref(PvrdmaCore *c, uint32_t ctx, int d);
void pvrdma_pd_ref(PvrdmaCore *c, uint32_t pd, int d);

/* pvrdma_cq.c */
int pvrdma_cmd_create_cq(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                         union pvrdma_cmd_resp *rsp);
int pvrdma_cmd_resize_cq(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                         union pvrdma_cmd_resp *rsp);
int pvrdma_cmd_destroy_cq(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                          union pvrdma_cmd_resp *rsp);
void pvrdma_cq_free(PvrdmaCore *c, PvrdmaCQ *cq);
/* May the CQ's pages hold cqe entries?  Give the (empty) ring that size. */
bool pvrdma_cq_cqe_fits(PvrdmaCore *c, const PvrdmaCQ *cq, uint32_t cqe);
void pvrdma_cq_set_cqe(PvrdmaCQ *cq, uint32_t cqe);

/* pvrdma_srq.c */
int pvrdma_cmd_create_srq(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                          union pvrdma_cmd_resp *rsp);
int pvrdma_cmd_modify_srq(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                          union pvrdma_cmd_resp *rsp);
int pvrdma_cmd_query_srq(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                         union pvrdma_cmd_resp *rsp);
int pvrdma_cmd_destroy_srq(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                           union pvrdma_cmd_resp *rsp);
void pvrdma_srq_free(PvrdmaCore *c, PvrdmaSRQ *srq);

/* pvrdma_mr.c (also memory keys, below) */
int pvrdma_cmd_create_mr(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                         union pvrdma_cmd_resp *rsp);
int pvrdma_cmd_destroy_mr(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                          union pvrdma_cmd_resp *rsp);
void pvrdma_mr_free(PvrdmaCore *c, PvrdmaMR *mr);
/* A fast-registration MR's key and state before a work request changed it */
typedef struct PvrdmaMrUndo {
    uint32_t key;
    bool valid;
} PvrdmaMrUndo;
/* The FRMR that key names, whatever its key byte, or NULL. */
PvrdmaMR *pvrdma_frmr_by_key(PvrdmaCore *c, uint32_t key);
/*
 * FAST_REG_MR and LOCAL_INV on qp, checked and applied; a PVRDMA_WC_*
 * status, the MR in *out and its state before in *undo (both optional).
 */
int pvrdma_mr_fast_reg(PvrdmaCore *c, PvrdmaQP *qp,
                       const struct pvrdma_fast_reg *f, PvrdmaMR **out,
                       PvrdmaMrUndo *undo);
int pvrdma_mr_local_inv(PvrdmaCore *c, PvrdmaQP *qp, uint32_t key,
                        PvrdmaMR **out, PvrdmaMrUndo *undo);
/* The object owner refused the work request: mr as it was before. */
void pvrdma_mr_undo(PvrdmaCore *c, PvrdmaMR *mr, const PvrdmaMrUndo *undo);
/* A SEND with invalidate of key on a QP of PD pd: false if no FRMR of pd */
bool pvrdma_mr_remote_inv(PvrdmaCore *c, uint32_t pd, uint32_t key);

/* pvrdma_qp.c (also the state machine, below) */
int pvrdma_cmd_create_qp(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                         union pvrdma_cmd_resp *rsp);
int pvrdma_cmd_modify_qp(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                         union pvrdma_cmd_resp *rsp);
int pvrdma_cmd_query_qp(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                        union pvrdma_cmd_resp *rsp);
int pvrdma_cmd_destroy_qp(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                          union pvrdma_cmd_resp *rsp);
void pvrdma_qp_free(PvrdmaCore *c, PvrdmaQP *qp);

/* pvrdma_regs.c: the DSR */

/* Map the async or CQ notification ring on np guest pages. */
bool pvrdma_dsr_ring_map(PvrdmaCore *c, PvrdmaRing *r, const char *name,
                         const uint64_t *pages, uint32_t np,
                         uint32_t elem_size);

/* pvrdma_event.c: interrupts, async events, CQEs, CQ arming, notification */

/* Raise interrupt vector unless IMR masks it. */
void pvrdma_raise(PvrdmaCore *c, unsigned vector);
/* Post an async event (PVRDMA_EVENT_*, object handle) and raise its vector. */
/*
 * A command's response into the driver's response slot, then its
 * interrupt; false (a guest error) if the slot is not writable RAM.
 */
bool pvrdma_respond(PvrdmaCore *c, const union pvrdma_cmd_resp *rsp);
void pvrdma_post_async(PvrdmaCore *c, uint32_t type, uint32_t info);
/*
 * Write CQE e of qp into CQ cq_handle (qp's send or receive CQ) and notify
 * the CQ if it is armed.  qp must be in the QP table: after the response
 * to DESTROY_QP the guest no longer knows the handle, and the Linux
 * driver neither consumes nor drops a CQE it cannot attribute (its CQ
 * poll stops at it for good).  e->qp is set here.
 */
void pvrdma_cq_post(PvrdmaCore *c, PvrdmaQP *qp, uint32_t cq_handle,
                    struct pvrdma_cqe *e, bool solicited);
void pvrdma_cq_doorbell(PvrdmaCore *c, PvrdmaCQ *cq, uint32_t val);

/* pvrdma_mr.c: memory keys */

/* Resolve [va, va+len) of an MR into host memory. */
bool pvrdma_mr_resolve(PvrdmaCore *c, PvrdmaMR *mr, uint64_t va,
                       uint64_t len, bool is_write, PvrdmaSg *sg);
/* Local scatter list through lkeys; returns a PVRDMA_WC_* status. */
int pvrdma_resolve_sges(PvrdmaCore *c, uint32_t pd,
                        const struct pvrdma_sge *s, uint32_t n,
                        bool is_write, PvrdmaSg *sg);
/* The length of the message SGEs s[0..n) describe. */
uint64_t pvrdma_sges_len(const struct pvrdma_sge *s, uint32_t n);
/*
 * Bytes [off, off+len) of that message, resolved with the checks of
 * pvrdma_resolve_sges() for the SGEs they touch (a message in pieces maps
 * one piece at a time); PVRDMA_WC_LOC_LEN_ERR if the SGEs end before.
 */
int pvrdma_resolve_sges_at(PvrdmaCore *c, uint32_t pd,
                           const struct pvrdma_sge *s, uint32_t n,
                           bool is_write, uint64_t off, uint64_t len,
                           PvrdmaSg *sg);
/* IBV_SEND_INLINE: SGEs with a key that does not cover them read their MR */
void pvrdma_inline_sges(PvrdmaCore *c, const PvrdmaQP *qp, PvrdmaSendWqe *w);

/* pvrdma_qp.c: the QP state machine */

/*
 * A message in pieces (PVRDMA_TP_SEGMENTED) stops half-way: qp's as
 * requester (its head WQE starts again from its first byte, or fails) and
 * as responder (the receive it took is dropped without a completion, as
 * RoCEv2's responder drops one whose message stops).  QP reset, error and
 * free; _sent: qp's as requester only (its WQE failed).
 */
void pvrdma_seg_drop(PvrdmaCore *c, PvrdmaQP *qp);
void pvrdma_seg_drop_sent(PvrdmaCore *c, PvrdmaQP *qp);
/* A receive in progress is one allocation: pvrdma_recv_abort() */
static inline void pvrdma_recv_free(PvrdmaRecvCtx *ctx)
{
    g_free(ctx);
}

int pvrdma_qp_modify(PvrdmaCore *c, PvrdmaQP *qp, uint32_t mask,
                     const struct pvrdma_qp_attr *a);
void pvrdma_qp_to_error(PvrdmaCore *c, PvrdmaQP *qp);
/* QP error no completion reports: async event, then the error state. */
void pvrdma_qp_fail(PvrdmaCore *c, PvrdmaQP *qp, uint32_t event);

/* pvrdma_stream.c: the migration stream (the rest in pvrdma_transport.h) */

/* n bytes from the stream into dst (zeros and false past its end) */
bool pvrdma_mig_take(PvrdmaMigReader *r, void *dst, size_t n);

/* pvrdma_mig.c: the core's state saved (loaded in pvrdma_mig_load.c) */

/* The 32-bit limits of an image, with the property that sets each */
typedef struct PvrdmaMigLimit {
    const char *prop;
    size_t off;
} PvrdmaMigLimit;
extern const PvrdmaMigLimit pvrdma_mig_limits[];
uint32_t pvrdma_mig_limit(const PvrdmaLimits *l, unsigned i);

/* pvrdma_mig_blob.c: the image as older builds' one field */
#define PVRDMA_MIG_MAGIC    0x474d5250u     /* "PRMG" */
#define PVRDMA_MIG_END      0x444e4550u     /* "PEND" */
/* 2: a transport record after each QP (PvrdmaMigOps.qp_save) */
#define PVRDMA_MIG_VERSION  2

/* pvrdma_sched.c: the run list, RNR waiters and held WQEs, the timer */

void pvrdma_qp_schedule(PvrdmaCore *c, PvrdmaQP *qp);
/* the run list's oldest QP, taken off it (the list is not empty) */
PvrdmaQP *pvrdma_run_pop(PvrdmaCore *c);
/* qp off the run list, if it is on it */
void pvrdma_run_remove(PvrdmaCore *c, PvrdmaQP *qp);
/* the run list emptied, its QPs no longer queued */
void pvrdma_run_clear(PvrdmaCore *c);
void pvrdma_qp_set_rnr_wait(PvrdmaCore *c, PvrdmaQP *qp, bool wait);
/* qp's held failed WQE completes at until (ms; 0: none; see PvrdmaQP) */
void pvrdma_qp_hold(PvrdmaCore *c, PvrdmaQP *qp, int64_t until);

/* pvrdma_dp.c: the run loop, send and SRQ doorbells */

void pvrdma_qp_send_doorbell(PvrdmaCore *c, PvrdmaQP *qp);
void pvrdma_srq_doorbell(PvrdmaCore *c, PvrdmaSRQ *srq);

/* pvrdma_req.c: the requester */

/*
 * Serve qp's send queue; inline_budget > 0 from a send doorbell (at most
 * that many WQEs, none that would copy data here), 0 from the run loop.
 */
void pvrdma_serve_sq(PvrdmaCore *c, PvrdmaQP *qp, uint32_t inline_budget);
/* The save: every message in pieces moves its rest now (VM stopped). */
void pvrdma_seg_finish(PvrdmaCore *c);

/* pvrdma_comp.c: the completer */

/* The send slot of send queue index idx. */
static inline PvrdmaSendSlot *pvrdma_send_slot(PvrdmaQP *qp, uint32_t idx)
{
    return &qp->slot[idx & (qp->sq.nelems - 1)];
}

void pvrdma_recv_cqe(PvrdmaCore *c, PvrdmaQP *qp, const PvrdmaRecvWqe *w,
                     uint32_t status, uint32_t opcode, uint32_t byte_len,
                     const PvrdmaReq *req, uint32_t flags, bool solicited);
/* Complete every posted WQE with WR_FLUSH_ERR (QP in error). */
void pvrdma_flush_queues(PvrdmaCore *c, PvrdmaQP *qp);
/* Complete finished send WQEs in order; the first error moves to error. */
void pvrdma_drain_sq(PvrdmaCore *c, PvrdmaQP *qp);
/*
 * Send slot s of qp finished with st, a PVRDMA_WC_* status or
 * PVRDMA_TRANSPORT_NO_RESPONDER (held: RETRY_EXC_ERR after the QP's retry
 * window).  An error stops the send queue (sq_failed).
 */
void pvrdma_slot_done(PvrdmaCore *c, PvrdmaQP *qp, PvrdmaSendSlot *s, int st);

/* pvrdma_queue.c: queue transports (the owner's QPs): WQEs to its queues */

void pvrdma_queue_post_sq(PvrdmaCore *c, PvrdmaQP *qp);
void pvrdma_queue_post_rq(PvrdmaCore *c, PvrdmaQP *qp);
void pvrdma_queue_post_srq(PvrdmaCore *c, PvrdmaSRQ *srq);
void pvrdma_queue_serve_qp(PvrdmaCore *c, PvrdmaQP *qp);
void pvrdma_queue_serve_srqs(PvrdmaCore *c);
/*
 * After a queue transport's completion: an error moved the QP to error; a
 * queue that was full takes more WQEs.
 */
void pvrdma_queue_completed(PvrdmaCore *c, PvrdmaQP *qp, bool is_send,
                          uint32_t status);
/* A queue transport's QP goes to error (the owner's QP too). */
void pvrdma_queue_qp_error(PvrdmaCore *c, PvrdmaQP *qp);

#endif
