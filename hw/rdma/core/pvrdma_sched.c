/*
 * pvrdma: the run list and the device's timer.  A QP with work is queued
 * for the run loop (pvrdma_qp_schedule()), the counts the run loop walks
 * QPs for (senders waiting on RNR, failed WQEs held for the requester's
 * retry time), the earliest deadline of a timed wait, and a transport's
 * timer request.  A leaf: it calls nothing of the core, only the host's
 * kick and clock.
 *
 * Not here: the run loop itself and the doorbells (pvrdma_dp.c), the RNR
 * wake-up of senders and transports (pvrdma_transport.c), the IBA timing math
 * (pvrdma_qp.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_transport_calls.h"
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

/* The run list links its QPs (run_next): a QP queued costs no allocation. */
void pvrdma_qp_schedule(PvrdmaCore *c, PvrdmaQP *qp)
{
    if (!qp->queued) {
        qp->queued = true;
        qp->run_next = NULL;
        if (c->run.tail) {
            c->run.tail->run_next = qp;
        } else {
            c->run.head = qp;
        }
        c->run.tail = qp;
        c->run.length++;
        c->ops->kick(c->opaque, 0);
    }
}

PvrdmaQP *pvrdma_run_pop(PvrdmaCore *c)
{
    PvrdmaQP *qp = c->run.head;

    c->run.head = qp->run_next;
    if (!c->run.head) {
        c->run.tail = NULL;
    }
    c->run.length--;
    qp->run_next = NULL;
    qp->queued = false;
    return qp;
}

void pvrdma_run_remove(PvrdmaCore *c, PvrdmaQP *qp)
{
    PvrdmaQP **link = &c->run.head, *prev = NULL;

    if (!qp->queued) {
        return;
    }
    while (*link && *link != qp) {
        prev = *link;
        link = &prev->run_next;
    }
    if (!*link) {
        return;     /* cannot be: queued says it is on the list */
    }
    *link = qp->run_next;
    if (c->run.tail == qp) {
        c->run.tail = prev;
    }
    c->run.length--;
    qp->run_next = NULL;
    qp->queued = false;
}

void pvrdma_run_clear(PvrdmaCore *c)
{
    while (c->run.head) {
        pvrdma_run_pop(c);
    }
}

void pvrdma_transport_timer(PvrdmaCore *c, unsigned delay_ms)
{
    c->timer_transports = true;
    c->ops->kick(c->opaque, delay_ms);
}
