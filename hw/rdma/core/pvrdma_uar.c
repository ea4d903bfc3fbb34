/*
 * pvrdma: BAR 2, the UAR doorbells.  Checks a doorbell write (the device
 * is active; the page has an owner: page 0 the kernel, any other page the
 * user context created with it; the handle names a QP, CQ or SRQ of that
 * owner; the offset is known) and hands it on, without reading any WQE.
 *
 * Not here: what a doorbell does (pvrdma_dp.c for send and SRQ doorbells,
 * pvrdma_transport.c for the RNR wake-up of a receive doorbell, pvrdma_event.c
 * for arming a CQ, pvrdma_queue.c in host HCA mode).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hw/rdma/pvrdma_core.h"
#include "pvrdma_int.h"

/*
 * Context that owns a UAR page: page 0 is the kernel's (context 0), any
 * other page belongs to the user context whose handle is that page index.
 */
static uint32_t uar_owner(PvrdmaCore *c, uint32_t page)
{
    return page == 0 || pvrdma_table_get(&c->uc, page) ? page : UINT32_MAX;
}

/* A QP doorbell: receives posted, sends posted, or both */
static void uar_qp_doorbell(PvrdmaCore *c, uint32_t owner, uint32_t handle,
                            uint32_t val)
{
    PvrdmaQP *qp = pvrdma_qp_get(c, handle);

    if (!qp || pvrdma_ctx_of_pd(c, qp->pd) != owner) {
        PVRDMA_GUEST_ERR(c, "QP doorbell for unknown QP handle %u", handle);
        return;
    }
    if (pvrdma_qp_on_queue_transport(qp)) {
        /*
         * Receives go to the owner at once (at most a run budget's
         * worth), as on an HCA a posted receive is there for the next
         * send; sends are handed over from the run loop.
         */
        if (val & PVRDMA_UAR_QP_RECV) {
            trace_pvrdma_db_qp_recv(handle);
            pvrdma_queue_post_rq(c, qp);
        }
        if (val & PVRDMA_UAR_QP_SEND) {
            trace_pvrdma_db_qp_send(handle);
            pvrdma_qp_schedule(c, qp);
        }
        return;
    }
    if (val & PVRDMA_UAR_QP_RECV) {
        trace_pvrdma_db_qp_recv(handle);
        pvrdma_wake_rnr(c);
        if (qp->state == PVRDMA_QPS_ERR) {
            pvrdma_qp_schedule(c, qp);   /* flush new receives */
        }
    }
    if (val & PVRDMA_UAR_QP_SEND) {
        trace_pvrdma_db_qp_send(handle);
        pvrdma_qp_send_doorbell(c, qp);
    }
}

/* An SRQ doorbell: receives posted */
static void uar_srq_doorbell(PvrdmaCore *c, uint32_t owner, uint32_t handle)
{
    PvrdmaSRQ *srq = pvrdma_table_get(&c->srq, handle);

    if (!srq || pvrdma_ctx_of_pd(c, srq->pd) != owner) {
        PVRDMA_GUEST_ERR(c, "SRQ doorbell for unknown SRQ handle %u",
                         handle);
        return;
    }
    trace_pvrdma_db_srq(handle);
    if (srq->twin) {
        pvrdma_queue_post_srq(c, srq);
    } else {
        pvrdma_srq_doorbell(c, srq);
    }
}

void pvrdma_core_uar_write(PvrdmaCore *c, uint64_t addr, uint32_t val)
{
    uint32_t page = addr / PVRDMA_PAGE_SIZE;
    uint32_t off = addr % PVRDMA_PAGE_SIZE;
    uint32_t handle = val & PVRDMA_UAR_HANDLE_MASK;
    uint32_t owner;

    c->doorbells++;
    trace_pvrdma_uar_write(page, off, val);
    if (!c->active) {
        PVRDMA_GUEST_ERR(c, "doorbell 0x%x before activation", val);
        return;
    }
    owner = uar_owner(c, page);
    if (owner == UINT32_MAX) {
        PVRDMA_GUEST_ERR(c, "doorbell on unassigned UAR page %u", page);
        return;
    }
    switch (off) {
    case PVRDMA_UAR_QP_OFFSET:
        uar_qp_doorbell(c, owner, handle, val);
        break;
    case PVRDMA_UAR_CQ_OFFSET: {
        PvrdmaCQ *cq = pvrdma_table_get(&c->cq, handle);

        if (!cq || cq->ctx != owner) {
            PVRDMA_GUEST_ERR(c, "CQ doorbell for unknown CQ handle %u", handle);
            return;
        }
        pvrdma_cq_doorbell(c, cq, val);
        break;
    }
    case PVRDMA_UAR_SRQ_OFFSET:
        uar_srq_doorbell(c, owner, handle);
        break;
    default:
        PVRDMA_GUEST_ERR(c, "doorbell at unknown UAR offset 0x%x", off);
        break;
    }
}
