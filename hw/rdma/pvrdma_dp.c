/*
 * pvrdma: data path scheduling.  The run list of QPs with work
 * (pvrdma_qp_schedule()), the run loop (pvrdma_core_run(): one budgeted
 * pass per queued QP, then another kick if work is left), send and SRQ
 * doorbells, senders waiting on RNR (the count of waiters and their
 * wake-up), the timer of timed waiters (RNR waits, completions held for
 * the requester's retry time).
 *
 * Not here: decoding UAR writes (pvrdma_uar.c), walking a send queue and
 * the RNR deadline (pvrdma_req.c), CQ doorbells (pvrdma_event.c), the
 * transports' hooks (pvrdma_path.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef PVRDMA_STANDALONE
#include "qemu/osdep.h"
#endif
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/rdma_backend.h"
#include "pvrdma_int.h"

/* The head send of qp waits (or stops waiting) for a receive (RNR). */
void pvrdma_qp_set_rnr_wait(PvrdmaCore *c, PvrdmaQP *qp, bool wait)
{
    if (qp->rnr_wait != wait) {
        qp->rnr_wait = wait;
        c->rnr_waiters += wait ? 1 : -1;
    }
    if (!wait) {
        qp->paused = false;
    }
}

void pvrdma_transport_wake_senders(PvrdmaCore *c)
{
    pvrdma_wake_rnr(c);
}

/* qp's failed WQE completes at until (ms; 0: nothing held, see PvrdmaQP) */
void pvrdma_qp_hold(PvrdmaCore *c, PvrdmaQP *qp, int64_t until)
{
    if (!qp->hold_until != !until) {
        c->holders += until ? 1 : -1;
    }
    qp->hold_until = until;
}

void pvrdma_core_timer_at(PvrdmaCore *c, int64_t at)
{
    int64_t now = c->ops->now_ms(c->opaque);

    if (!c->timer || at < c->timer_at) {
        c->timer_at = at;
    }
    c->timer = true;
    c->ops->kick(c->opaque, at > now ? MIN(at - now, INT32_MAX) : 1);
}

int64_t pvrdma_ack_timeout_ms(const PvrdmaQP *qp)
{
    uint32_t t = MIN(qp->attr.timeout, 31);

    if (!t) {
        return 0;
    }
    return MAX((4096ll << t) / 1000000, PVRDMA_MIN_ACK_TIMEOUT_MS);
}

int64_t pvrdma_retry_window_ms(const PvrdmaQP *qp)
{
    return pvrdma_ack_timeout_ms(qp) * ((qp->attr.retry_cnt & 7) + 1);
}

uint32_t pvrdma_qp_mtu(const PvrdmaQP *qp)
{
    uint32_t m = qp->attr.path_mtu;

    return m >= PVRDMA_MTU_256 && m <= PVRDMA_MTU_4096 ? 128u << m : 1024;
}

uint32_t pvrdma_qp_npsn(const PvrdmaQP *qp, uint32_t opcode, uint64_t len)
{
    uint32_t mtu = pvrdma_qp_mtu(qp);

    if (opcode == PVRDMA_WR_ATOMIC_CMP_AND_SWP ||
        opcode == PVRDMA_WR_ATOMIC_FETCH_AND_ADD || !len) {
        return 1;
    }
    return (uint32_t)MIN((len + mtu - 1) / mtu, UINT32_MAX);
}

void pvrdma_qp_schedule(PvrdmaCore *c, PvrdmaQP *qp)
{
    if (!qp->queued) {
        qp->queued = true;
        g_queue_push_tail(&c->run, GUINT_TO_POINTER(qp->handle));
        c->ops->kick(c->opaque, 0);
    }
}

/*
 * Send doorbell (vCPU thread, BQL held).  With a co-resident transport, a
 * short burst of requests for a peer is sent from here: the requester only
 * writes a message (the peer's responder copies the data), and the hop to
 * the bottom half is saved from the latency.  Everything else, loopback
 * included (its copy happens at the requester), goes to the run loop.
 */
int64_t pvrdma_rnr_deadline(PvrdmaCore *c, uint8_t rnr_retry,
                            const PvrdmaQP *responder)
{
    unsigned timer = responder ? responder->attr.min_rnr_timer : 0;

    if (rnr_retry >= 7) {
        return 0;           /* rnr_retry 7: retry forever */
    }
    return c->ops->now_ms(c->opaque) + 10 * (1 + rnr_retry) * MAX(1, timer);
}

void pvrdma_qp_send_doorbell(PvrdmaCore *c, PvrdmaQP *qp)
{
    /* without a transport that may run here, nothing is sent from here */
    if (!c->doorbell_ok || c->running || qp->queued ||
        qp->state != PVRDMA_QPS_RTS || qp->rnr_wait) {
        pvrdma_qp_schedule(c, qp);
        return;
    }
    c->running = true;
    pvrdma_serve_sq(c, qp, PVRDMA_INLINE_BUDGET);
    c->running = false;
    pvrdma_transports_flush(c);
}

void pvrdma_srq_doorbell(PvrdmaCore *c, PvrdmaSRQ *srq)
{
    pvrdma_wake_rnr(c);
}

/*
 * A receive was posted (or an RNR timer fired): senders waiting on RNR try
 * again, here and in the transports (requests of peers waiting here).
 */
void pvrdma_wake_rnr(PvrdmaCore *c)
{
    /* a receive doorbell must not cost a walk of every QP for nothing */
    for (uint32_t h = 0; c->rnr_waiters && h < c->qp.size; h++) {
        PvrdmaQP *qp = c->qp.slot[h];

        if (qp && qp->rnr_wait) {
            pvrdma_qp_schedule(c, qp);
        }
    }
    /*
     * Transports serve waiting requests from the run loop, not here: this
     * may be a receive doorbell on a vCPU thread, and serving copies data.
     */
    if (pvrdma_transports_can_wake(c)) {
        c->wake_transports = true;
        c->ops->kick(c->opaque, 0);
    }
}

void pvrdma_transport_timer(PvrdmaCore *c, unsigned delay_ms)
{
    c->timer_transports = true;
    c->ops->kick(c->opaque, delay_ms);
}

void pvrdma_core_run(PvrdmaCore *c)
{
    uint32_t n = c->run.length;

    if (c->running) {
        return;
    }
    if (c->timer && c->ops->now_ms(c->opaque) >= c->timer_at) {
        /*
         * A deadline passed: waiting senders retry (and time out), held
         * completions that are due complete.  Not on a run for anything
         * else: a waiter not due yet would arm the timer again at once
         * and the run loop would spin.
         */
        c->timer = false;
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
        pvrdma_hca_serve_srqs(c);
    }
    /* serve the QPs queued now; those re-queued meanwhile wait a turn */
    while (n-- && c->run.length) {
        uint32_t h = GPOINTER_TO_UINT(g_queue_pop_head(&c->run));
        PvrdmaQP *qp = pvrdma_qp_get(c, h);

        if (!qp) {
            continue;
        }
        qp->queued = false;
        if (pvrdma_qp_queue_path(qp)) {
            pvrdma_hca_serve_qp(c, qp);
        } else {
            pvrdma_serve_sq(c, qp, 0);
        }
    }
    c->running = false;
    pvrdma_transports_flush(c);
    if (c->run.length) {
        c->ops->kick(c->opaque, 0);
    }
}
