/*
 * pvrdma: completion queues' lives.  CREATE_CQ (its ring in guest pages,
 * a PD-less object of a context), RESIZE_CQ, DESTROY_CQ (refused while
 * QPs use it), and the CQE count a ring holds.
 *
 * Not here: writing CQEs and arming (pvrdma_event.c), what a CQE says
 * (pvrdma_comp.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_transport_calls.h"
#include "pvrdma_int.h"

int pvrdma_cmd_create_cq(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                         union pvrdma_cmd_resp *rsp)
{
    const struct pvrdma_cmd_create_cq *m = &req->create_cq;
    uint64_t *pages;
    PvrdmaCQ *cq;
    uint32_t h;
    int err;

    if (!pvrdma_ctx_valid(c, m->ctx_handle)) {
        return CMD_ERR(c, EINVAL, "CREATE_CQ: bad context %u", m->ctx_handle);
    }
    if (!pvrdma_is_pow2(m->cqe) || m->cqe > c->lim.max_cqe) {
        return CMD_ERR(c, EINVAL, "CREATE_CQ: bad cqe count %u", m->cqe);
    }
    /* one ring-state page plus the entries, nothing more */
    if (m->nchunks < 2 ||
        m->nchunks > 1 + (m->cqe * sizeof(struct pvrdma_cqe) +
                          PVRDMA_PAGE_SIZE - 1) / PVRDMA_PAGE_SIZE + 1) {
        return CMD_ERR(c, EINVAL, "CREATE_CQ: %u pages for %u entries",
                       m->nchunks, m->cqe);
    }
    if (!pvrdma_pdir_read(c, m->pdir_dma, m->nchunks, &pages)) {
        return CMD_ERR(c, EFAULT, "CREATE_CQ: page directory unusable");
    }
    cq = g_new0(PvrdmaCQ, 1);
    if (!pvrdma_ring_init(c, &cq->ring, "cq", pages, m->nchunks, 1,
                          offsetof(struct pvrdma_ring_state, rx), m->cqe,
                          sizeof(struct pvrdma_cqe))) {
        g_free(pages);
        g_free(cq);
        return CMD_ERR(c, EINVAL, "CREATE_CQ: ring unusable");
    }
    g_free(pages);
    h = pvrdma_table_alloc(&c->cq, cq);
    if (h == UINT32_MAX) {
        pvrdma_ring_free(c, &cq->ring);
        g_free(cq);
        return CMD_ERR(c, ENOMEM, "CREATE_CQ: out of CQs");
    }
    cq->handle = h;
    cq->ctx = m->ctx_handle;
    err = pvrdma_owner_cq_create(c, cq, m->cqe);
    if (err) {
        pvrdma_table_remove(&c->cq, h);
        pvrdma_ring_free(c, &cq->ring);
        g_free(cq);
        return CMD_ERR(c, -err, "CREATE_CQ: host device: %s",
                       strerror(-err));
    }
    pvrdma_ctx_ref(c, cq->ctx, 1);
    rsp->create_cq_resp.cq_handle = h;
    rsp->create_cq_resp.cqe = m->cqe;
    trace_pvrdma_create_cq(h, m->cqe, m->nchunks);
    return 0;
}

bool pvrdma_cq_cqe_fits(PvrdmaCore *c, const PvrdmaCQ *cq, uint32_t cqe)
{
    return pvrdma_is_pow2(cqe) && cqe <= c->lim.max_cqe &&
           (uint64_t)cqe * sizeof(struct pvrdma_cqe) <=
           (uint64_t)(cq->ring.npages - 1) * PVRDMA_PAGE_SIZE;
}

void pvrdma_cq_set_cqe(PvrdmaCQ *cq, uint32_t cqe)
{
    /* a power of two: indices in [0, 2N), N slots (pvrdma_ring_init) */
    cq->ring.nelems = cqe;
    cq->ring.period = 2 * cqe;
    cq->ring.slots = cqe;
    cq->ring.priv = 0;
}

int pvrdma_cmd_resize_cq(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                         union pvrdma_cmd_resp *rsp)
{
    const struct pvrdma_cmd_resize_cq *m = &req->resize_cq;
    PvrdmaCQ *cq = pvrdma_table_get(&c->cq, m->cq_handle);
    uint32_t cons;

    if (!cq) {
        return CMD_ERR(c, EINVAL, "RESIZE_CQ: bad handle %u", m->cq_handle);
    }
    if (cq->twin) {
        return CMD_ERR(c, EOPNOTSUPP, "RESIZE_CQ: not with a host HCA");
    }
    if (!pvrdma_cq_cqe_fits(c, cq, m->cqe)) {
        return CMD_ERR(c, EINVAL, "RESIZE_CQ: %u entries do not fit", m->cqe);
    }
    /* The ring keeps its pages: only an empty ring can change geometry. */
    if (!pvrdma_ring_guest_cons(&cq->ring, &cons) || cons != cq->ring.priv) {
        return CMD_ERR(c, EBUSY, "RESIZE_CQ: CQ %u not empty", m->cq_handle);
    }
    pvrdma_cq_set_cqe(cq, m->cqe);
    qatomic_store_release(&cq->ring.state->cons_head, 0);
    pvrdma_ring_publish_prod(&cq->ring);
    rsp->resize_cq_resp.cqe = m->cqe;
    trace_pvrdma_resize_cq(m->cq_handle, m->cqe);
    return 0;
}

void pvrdma_cq_free(PvrdmaCore *c, PvrdmaCQ *cq)
{
    pvrdma_owner_cq_destroy(c, cq);
    pvrdma_ctx_ref(c, cq->ctx, -1);
    pvrdma_ring_free(c, &cq->ring);
    pvrdma_table_remove(&c->cq, cq->handle);
    g_free(cq);
}

int pvrdma_cmd_destroy_cq(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                          union pvrdma_cmd_resp *rsp)
{
    uint32_t h = req->destroy_cq.cq_handle;
    PvrdmaCQ *cq = pvrdma_table_get(&c->cq, h);

    if (!cq) {
        return CMD_ERR(c, EINVAL, "DESTROY_CQ: bad handle %u", h);
    }
    if (cq->refs) {
        return CMD_ERR(c, EBUSY, "DESTROY_CQ: CQ %u used by %u QPs", h,
                       cq->refs);
    }
    pvrdma_cq_free(c, cq);
    trace_pvrdma_destroy_cq(h);
    return 0;
}
