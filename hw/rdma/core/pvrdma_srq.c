/*
 * pvrdma: shared receive queues' lives.  CREATE_SRQ (its ring in guest
 * pages), MODIFY_SRQ (the limit event), QUERY_SRQ, DESTROY_SRQ (refused
 * while QPs use it).
 *
 * Not here: taking receives from an SRQ (pvrdma_resp.c), its doorbell
 * (pvrdma_dp.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_transport_calls.h"
#include "pvrdma_int.h"

int pvrdma_cmd_create_srq(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                          union pvrdma_cmd_resp *rsp)
{
    const struct pvrdma_cmd_create_srq *m = &req->create_srq;
    uint32_t max_wr = m->attrs.max_wr, max_sge = m->attrs.max_sge, stride;
    uint64_t *pages;
    PvrdmaSRQ *srq;
    uint32_t h;
    int err;

    if (!c->lim.max_srq) {
        return CMD_ERR(c, EOPNOTSUPP, "CREATE_SRQ: SRQs disabled");
    }
    if (!pvrdma_table_get(&c->pd, m->pd_handle)) {
        return CMD_ERR(c, EINVAL, "CREATE_SRQ: bad PD %u", m->pd_handle);
    }
    if (m->srq_type != 0) {
        return CMD_ERR(c, EOPNOTSUPP, "CREATE_SRQ: type %u", m->srq_type);
    }
    if (!pvrdma_is_pow2(max_wr) || max_wr > c->lim.max_srq_wr ||
        max_sge < 1 || max_sge > c->lim.max_srq_sge ||
        m->attrs.srq_limit > max_wr) {
        return CMD_ERR(c, EINVAL, "CREATE_SRQ: bad attrs wr %u sge %u limit %u",
                       max_wr, max_sge, m->attrs.srq_limit);
    }
    /* rdma-core allocates the ring twice over; allow that, no more */
    stride = pvrdma_wqe_stride(sizeof(struct pvrdma_rq_wqe_hdr), max_sge);
    if (m->nchunks < 2 ||
        m->nchunks > 2 + 2 * pvrdma_ring_pages(max_wr, stride)) {
        return CMD_ERR(c, EINVAL, "CREATE_SRQ: %u pages", m->nchunks);
    }
    if (!pvrdma_pdir_read(c, m->pdir_dma, m->nchunks, &pages)) {
        return CMD_ERR(c, EFAULT, "CREATE_SRQ: page directory unusable");
    }
    srq = g_new0(PvrdmaSRQ, 1);
    if (!pvrdma_ring_init(c, &srq->ring, "srq", pages, m->nchunks, 1,
                          offsetof(struct pvrdma_ring_state, rx), max_wr,
                          stride)) {
        g_free(pages);
        g_free(srq);
        return CMD_ERR(c, EINVAL, "CREATE_SRQ: ring unusable");
    }
    g_free(pages);
    h = pvrdma_table_alloc(&c->srq, srq);
    if (h == UINT32_MAX) {
        pvrdma_ring_free(c, &srq->ring);
        g_free(srq);
        return CMD_ERR(c, ENOMEM, "CREATE_SRQ: out of SRQs");
    }
    srq->handle = h;
    srq->pd = m->pd_handle;
    srq->max_wr = max_wr;
    srq->max_sge = max_sge;
    srq->limit = m->attrs.srq_limit;
    err = pvrdma_owner_srq_create(c, srq);
    if (err) {
        pvrdma_table_remove(&c->srq, h);
        pvrdma_ring_free(c, &srq->ring);
        g_free(srq);
        return CMD_ERR(c, -err, "CREATE_SRQ: host device: %s",
                       strerror(-err));
    }
    pvrdma_pd_ref(c, srq->pd, 1);
    rsp->create_srq_resp.srqn = h;
    trace_pvrdma_create_srq(h, max_wr, max_sge);
    return 0;
}

int pvrdma_cmd_modify_srq(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                          union pvrdma_cmd_resp *rsp)
{
    const struct pvrdma_cmd_modify_srq *m = &req->modify_srq;
    PvrdmaSRQ *srq = pvrdma_table_get(&c->srq, m->srq_handle);

    if (!srq) {
        return CMD_ERR(c, EINVAL, "MODIFY_SRQ: bad handle %u", m->srq_handle);
    }
    if (m->attr_mask & ~PVRDMA_SRQ_LIMIT) {
        /* the ring has fixed pages: resizing is not supported */
        return CMD_ERR(c, EINVAL, "MODIFY_SRQ: unsupported mask 0x%x",
                       m->attr_mask);
    }
    if (m->attr_mask & PVRDMA_SRQ_LIMIT) {
        if (m->attrs.srq_limit > srq->max_wr) {
            return CMD_ERR(c, EINVAL, "MODIFY_SRQ: limit %u > %u",
                           m->attrs.srq_limit, srq->max_wr);
        }
        int err = pvrdma_owner_srq_modify(c, srq, m->attr_mask,
                                          m->attrs.srq_limit);

        if (err) {
            return CMD_ERR(c, -err, "MODIFY_SRQ: host device: %s",
                           strerror(-err));
        }
        srq->limit = m->attrs.srq_limit;
    }
    trace_pvrdma_modify_srq(m->srq_handle, srq->limit);
    return 0;
}

int pvrdma_cmd_query_srq(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                         union pvrdma_cmd_resp *rsp)
{
    PvrdmaSRQ *srq = pvrdma_table_get(&c->srq, req->query_srq.srq_handle);

    if (!srq) {
        return CMD_ERR(c, EINVAL, "QUERY_SRQ: bad handle %u",
                       req->query_srq.srq_handle);
    }
    rsp->query_srq_resp.attrs.max_wr = srq->max_wr;
    rsp->query_srq_resp.attrs.max_sge = srq->max_sge;
    rsp->query_srq_resp.attrs.srq_limit = srq->limit;
    return 0;
}

void pvrdma_srq_free(PvrdmaCore *c, PvrdmaSRQ *srq)
{
    pvrdma_owner_srq_destroy(c, srq);
    pvrdma_pd_ref(c, srq->pd, -1);
    pvrdma_ring_free(c, &srq->ring);
    pvrdma_table_remove(&c->srq, srq->handle);
    g_free(srq);
}

int pvrdma_cmd_destroy_srq(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                           union pvrdma_cmd_resp *rsp)
{
    uint32_t h = req->destroy_srq.srq_handle;
    PvrdmaSRQ *srq = pvrdma_table_get(&c->srq, h);

    if (!srq) {
        return CMD_ERR(c, EINVAL, "DESTROY_SRQ: bad handle %u", h);
    }
    if (srq->refs) {
        return CMD_ERR(c, EBUSY, "DESTROY_SRQ: SRQ %u used by %u QPs", h,
                       srq->refs);
    }
    pvrdma_srq_free(c, srq);
    trace_pvrdma_destroy_srq(h);
    return 0;
}
