/*
 * pvrdma: the run loop (pvrdma_core_run(): due timed waiters first, then
 * the transports' wake-up and timer hooks, then one budgeted pass per
 * queued QP, then another kick if work is left), and the send and SRQ
 * doorbells.  The top of the data path: it calls the requester, the queue
 * transport and the transports' hooks, and nothing below calls it.
 *
 * Not here: the run list, waiter counts and the timer (pvrdma_sched.c),
 * decoding UAR writes (pvrdma_uar.c), walking a send queue
 * (pvrdma_req.c), CQ doorbells (pvrdma_event.c), waking senders on RNR
 * and the transports' hooks (pvrdma_transport.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_transport_calls.h"
#include "pvrdma_int.h"

/*
 * Send doorbell (vCPU thread, BQL held).  With a co-resident transport, a
 * short burst of requests for a peer is sent from here: the requester only
 * writes a message (the peer's responder copies the data), and the hop to
 * the bottom half is saved from the latency.  Everything else, loopback
 * included (its copy happens at the requester), goes to the run loop.
 */
void pvrdma_qp_send_doorbell(PvrdmaCore *c, PvrdmaQP *qp)
{
    /* without a transport that may run here, nothing is sent from here */
    if (!c->doorbell_ok || c->running || c->paused || qp->queued ||
        qp->state != PVRDMA_QPS_RTS || qp->rnr_wait) {
        pvrdma_qp_schedule(c, qp);
        return;
    }
    c->running = true;
    pvrdma_batch_begin(c);
    pvrdma_serve_sq(c, qp, PVRDMA_INLINE_BUDGET);
    pvrdma_batch_end(c);
    c->running = false;
    pvrdma_transports_flush(c); /* what the transports batched goes */
}

void pvrdma_srq_doorbell(PvrdmaCore *c, PvrdmaSRQ *srq)
{
    pvrdma_wake_rnr(c);
}

void pvrdma_core_run(PvrdmaCore *c)
{
    uint32_t n = c->run.length;

    if (c->running || c->paused) {
        return;     /* paused: pvrdma_core_resume() kicks again */
    }
    pvrdma_cmd_wait_check(c, false);    /* kicked: its fence may be done */
    pvrdma_batch_begin(c);  /* the pass's completions: published at its end */
    if (c->timer && c->ops->now_ms(c->opaque) >= c->timer_at) {
        /*
         * A deadline passed: waiting senders retry (and time out), held
         * completions that are due complete.  Not on a run for anything
         * else: a waiter not due yet would arm the timer again at once
         * and the run loop would spin.
         */
        c->timer = false;
        if (c->cmd_waits) {
            pvrdma_core_timer_at(c, c->wait_due);   /* not due yet */
        }
        pvrdma_inject_resp_due(c);
        pvrdma_wake_rnr(c);
        for (uint32_t h = 0; c->holders && h < c->qp.size; h++) {
            PvrdmaQP *qp = c->qp.slot[h];

            if (qp && qp->hold_until) {
                pvrdma_qp_schedule(c, qp);
            }
        }
        n = c->run.length;
    }
    c->running = true;
    if (c->wake_transports) {
        c->wake_transports = false;
        pvrdma_transports_wake(c);
        n = c->run.length;
    }
    if (c->timer_transports) {
        c->timer_transports = false;
        pvrdma_transports_timer(c);
        n = c->run.length;
    }
    if (c->hca_srqs) {
        pvrdma_queue_serve_srqs(c);
    }
    /* serve the QPs queued now; those re-queued meanwhile wait a turn */
    while (n-- && c->run.length) {
        PvrdmaQP *qp = pvrdma_run_pop(c);

        if (pvrdma_qp_on_queue_transport(qp)) {
            pvrdma_queue_serve_qp(c, qp);
        } else {
            pvrdma_serve_sq(c, qp, 0);
        }
    }
    c->running = false;
    pvrdma_batch_end(c);
    pvrdma_transports_flush(c);
    if (c->run.length) {
        c->ops->kick(c->opaque, 0);
    }
}
