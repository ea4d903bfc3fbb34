/*
 * pvrdma: what the device signals to the guest.  Interrupts (the IMR mask,
 * then the host's notify), async events into the async event ring, CQEs
 * into guest CQ rings (a full CQ or a bad index puts the CQ in error), CQ
 * arming (the CQ doorbell) and notifying an armed CQ through the CQ
 * notification ring; the CQE opcode of a send.
 *
 * Not here: what goes into a CQE (pvrdma_comp.c), an async event a
 * transport reports (pvrdma_qp.c), reports to the owner and guest
 * errors (pvrdma_report.c), which
 * async event to post and when (the callers), ring index checks
 * (pvrdma_ring.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hw/rdma/pvrdma_core.h"
#include "pvrdma_int.h"

void pvrdma_raise(PvrdmaCore *c, unsigned vector)
{
    if (c->imr & (1u << vector)) {
        trace_pvrdma_irq_masked(vector);
        return;
    }
    trace_pvrdma_irq(vector);
    c->ops->notify(c->opaque, vector);
}

bool pvrdma_respond(PvrdmaCore *c, const union pvrdma_cmd_resp *rsp)
{
    if (!c->ops->dma_write(c->opaque, c->resp_gpa, rsp, sizeof(*rsp))) {
        PVRDMA_GUEST_ERR(c, "response slot 0x%" PRIx64 " unwritable",
                         c->resp_gpa);
        return false;
    }
    pvrdma_raise(c, PVRDMA_INTR_VECTOR_RESPONSE);
    return true;
}

void pvrdma_core_check_link(PvrdmaCore *c)
{
    bool down = !pvrdma_port_up(c);

    if (!c->active || down == c->port_down) {
        return;
    }
    c->port_down = down;
    trace_pvrdma_port_state(down ? "down" : "active");
    pvrdma_post_async(c, down ? PVRDMA_EVENT_PORT_ERR :
                      PVRDMA_EVENT_PORT_ACTIVE, 1);
    pvrdma_report(c, &(PvrdmaReport) {
        .kind = PVRDMA_REPORT_PORT, .port_up = !down,
    });
}

void pvrdma_post_async(PvrdmaCore *c, uint32_t type, uint32_t info)
{
    struct pvrdma_eqe *e;
    bool bad;

    if (!c->active || c->restoring) {
        return;     /* a migrated state replayed: the guest saw it already */
    }
    e = pvrdma_ring_prod_slot(&c->async_ring, &bad);
    if (!e) {
        PVRDMA_GUEST_ERR(c, "async event ring %s, event %u dropped",
                         bad ? "index invalid" : "full", type);
        return;
    }
    e->type = cpu_to_le32(type);
    e->info = cpu_to_le32(info);
    pvrdma_ring_prod_push(&c->async_ring);
    trace_pvrdma_async_event(type, info);
    pvrdma_raise(c, PVRDMA_INTR_VECTOR_ASYNC);
}

static void cq_notify(PvrdmaCore *c, PvrdmaCQ *cq)
{
    struct pvrdma_cqne *n;
    bool bad;

    /* a device bug, not guest input: a notification says "CQEs are new" */
    assert(cq->news);
    cq->news = false;
    cq->armed = 0;
    n = pvrdma_ring_prod_slot(&c->cqn_ring, &bad);
    if (!n) {
        PVRDMA_GUEST_ERR(c, "CQ notification ring %s: CQ %u not notified",
                         bad ? "index invalid" : "full", cq->handle);
        return;
    }
    n->info = cpu_to_le32(cq->handle);
    pvrdma_ring_prod_push(&c->cqn_ring);
    trace_pvrdma_cq_notify(cq->handle);
    pvrdma_raise(c, PVRDMA_INTR_VECTOR_CQ);
}

void pvrdma_cq_post(PvrdmaCore *c, PvrdmaQP *qp, uint32_t cq_handle,
                    struct pvrdma_cqe *e, bool solicited)
{
    PvrdmaCQ *cq = pvrdma_table_get(&c->cq, cq_handle);
    struct pvrdma_cqe *slot;
    bool bad, notify;

    /* a device bug, not guest input: every caller holds a live QP */
    assert(pvrdma_table_get(&c->qp, qp->handle) == qp &&
           (cq_handle == qp->scq || cq_handle == qp->rcq));
    e->qp = qp->handle;
    if (!cq || cq->error) {
        return;
    }
    slot = pvrdma_ring_prod_slot(&cq->ring, &bad);
    if (!slot) {
        PVRDMA_GUEST_ERR(c, "CQ %u %s: completion lost, CQ in error",
                         cq_handle, bad ? "index invalid" : "overrun");
        cq->error = true;
        pvrdma_post_async(c, PVRDMA_EVENT_CQ_ERR, cq_handle);
        return;
    }
    memcpy(slot, e, sizeof(*e));
    cq->news = true;
    trace_pvrdma_cqe(cq_handle, e->qp, e->wr_id, e->opcode, e->status,
                     e->byte_len);
    notify = (cq->armed & PVRDMA_CQ_FLAG_ARMED) ||
             ((cq->armed & PVRDMA_CQ_FLAG_ARMED_SOL) &&
              (solicited || e->status != PVRDMA_WC_SUCCESS));
    if (c->batch) {
        pvrdma_ring_prod_advance(&cq->ring);    /* published at the end */
        if (!cq->batched) {
            cq->batched = true;
            g_array_append_val(c->batched_cqs, cq_handle);
        }
        cq->notify_due |= notify;
        return;
    }
    pvrdma_ring_prod_push(&cq->ring);
    if (notify) {
        cq_notify(c, cq);
    }
}

void pvrdma_batch_begin(PvrdmaCore *c)
{
    c->batch++;
}

void pvrdma_batch_end(PvrdmaCore *c)
{
    GArray *a = c->batched_cqs;

    if (!c->batch || --c->batch) {
        return;
    }
    for (guint i = 0; i < a->len; i++) {
        /* a CQ destroyed meanwhile, its handle used again: not batched */
        PvrdmaCQ *cq = pvrdma_table_get(&c->cq, g_array_index(a, uint32_t,
                                                              i));

        if (!cq || !cq->batched) {
            continue;
        }
        cq->batched = false;
        pvrdma_ring_publish_prod(&cq->ring);
        if (cq->notify_due) {
            cq->notify_due = false;
            cq_notify(c, cq);
        }
    }
    g_array_set_size(a, 0);
}

void pvrdma_cq_doorbell(PvrdmaCore *c, PvrdmaCQ *cq, uint32_t val)
{
    trace_pvrdma_db_cq(cq->handle, val);
    if (val & PVRDMA_UAR_CQ_ARM_SOL) {
        cq->armed |= PVRDMA_CQ_FLAG_ARMED_SOL;
    }
    if (val & PVRDMA_UAR_CQ_ARM) {
        cq->armed |= PVRDMA_CQ_FLAG_ARMED;
    }
    /* POLL: completions are written as they happen; serve pending work */
    if (val & PVRDMA_UAR_CQ_POLL && c->run.length) {
        c->ops->kick(c->opaque, 0);
    }
}

/* The CQE opcode of a send WQE's completion. */
uint32_t pvrdma_wc_opcode(uint32_t wr_opcode)
{
    switch (wr_opcode) {
    case PVRDMA_WR_RDMA_WRITE:
    case PVRDMA_WR_RDMA_WRITE_WITH_IMM:
        return PVRDMA_WC_RDMA_WRITE;
    case PVRDMA_WR_RDMA_READ:
        return PVRDMA_WC_RDMA_READ;
    case PVRDMA_WR_ATOMIC_CMP_AND_SWP:
        return PVRDMA_WC_COMP_SWAP;
    case PVRDMA_WR_ATOMIC_FETCH_AND_ADD:
        return PVRDMA_WC_FETCH_ADD;
    case PVRDMA_WR_LOCAL_INV:
        return PVRDMA_WC_LOCAL_INV;
    case PVRDMA_WR_FAST_REG_MR:
        return PVRDMA_WC_FAST_REG_MR;
    default:
        return PVRDMA_WC_SEND;
    }
}
