/*
 * pvrdma: queue pairs.  The QP state machine, the requester (send queue
 * walker), the responder (receive queues, rkeys) and completion writing.
 *
 * The requester keeps its own consumer index; it reads the guest's
 * producer index once per pass, copies each WQE out of the ring before
 * looking at it, and always consumes it, good or bad.  A pass handles at
 * most PVRDMA_RUN_BUDGET WQEs, then the QP goes to the back of the run list.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef PVRDMA_STANDALONE
#include "qemu/osdep.h"
#endif
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/rdma_backend.h"
#include "pvrdma_int.h"

PvrdmaQP *pvrdma_qp_get(PvrdmaCore *c, uint32_t handle)
{
    if (handle == PVRDMA_GSI_QPN) {
        return c->gsi_qp ? c->qp.slot[PVRDMA_GSI_QPN] : NULL;
    }
    return pvrdma_table_get(&c->qp, handle);
}

PvrdmaQP *pvrdma_qp_by_qpn(PvrdmaCore *c, uint32_t qpn)
{
    PvrdmaQP *qp = pvrdma_qp_get(c, qpn);   /* QPNs double as handles */

    return qp && !qp->hw ? qp : NULL;   /* not host HCA QPs */
}

PvrdmaMR *pvrdma_mr_by_key(PvrdmaCore *c, uint32_t key)
{
    PvrdmaMR *mr;

    if (c->hca) {
        /* the guest knows the host's keys (used by the GSI QP only) */
        for (uint32_t h = 0; h < c->mr.size; h++) {
            mr = c->mr.slot[h];
            if (mr && mr->key == key) {
                return mr;
            }
        }
        return NULL;
    }
    mr = pvrdma_table_get(&c->mr, key >> 8);
    return mr && mr->key == key ? mr : NULL;
}

/* The head send of qp waits (or stops waiting) for a receive (RNR). */
void pvrdma_qp_set_rnr_wait(PvrdmaCore *c, PvrdmaQP *qp, bool wait)
{
    if (qp->rnr_wait != wait) {
        qp->rnr_wait = wait;
        c->rnr_waiters += wait ? 1 : -1;
    }
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
 * A QP fails for a reason no completion reports: tell the guest with an
 * async event (QP_FATAL, QP_ACCESS_ERR, ...) and move the QP to error.
 */
static void qp_fail(PvrdmaCore *c, PvrdmaQP *qp, uint32_t event)
{
    if (qp->state != PVRDMA_QPS_ERR) {
        qp->events++;
        pvrdma_post_async(c, event, qp->handle);
    }
    pvrdma_qp_to_error(c, qp);
}

/* ------------------------------------------------------------------ */
/* Completions                                                         */

static void cq_notify(PvrdmaCore *c, PvrdmaCQ *cq)
{
    struct pvrdma_cqne *n;
    bool bad;

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

void pvrdma_cq_post(PvrdmaCore *c, uint32_t cq_handle,
                    const struct pvrdma_cqe *e, bool solicited)
{
    PvrdmaCQ *cq = pvrdma_table_get(&c->cq, cq_handle);
    struct pvrdma_cqe *slot;
    bool bad;

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
    pvrdma_ring_prod_push(&cq->ring);
    trace_pvrdma_cqe(cq_handle, e->wr_id, e->opcode, e->status, e->byte_len);
    if ((cq->armed & PVRDMA_CQ_FLAG_ARMED) ||
        ((cq->armed & PVRDMA_CQ_FLAG_ARMED_SOL) &&
         (solicited || e->status != PVRDMA_WC_SUCCESS))) {
        cq_notify(c, cq);
    }
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

static void send_cqe(PvrdmaCore *c, PvrdmaQP *qp, const PvrdmaSendWqe *w,
                     uint32_t status, uint32_t byte_len)
{
    struct pvrdma_cqe e = { 0 };

    e.wr_id = w->hdr.wr_id;
    e.qp = qp->handle;
    e.opcode = pvrdma_wc_opcode(w->hdr.opcode);
    e.status = status;
    e.byte_len = byte_len;
    e.src_qp = qp->qpn;
    e.port_num = 1;
    pvrdma_cq_post(c, qp->scq, &e, false);
}

/* ------------------------------------------------------------------ */
/* Memory keys                                                         */

/* [va, va+len) lies inside the region of a user or fast-registered MR */
static bool mr_covers(const PvrdmaMR *mr, uint64_t va, uint64_t len)
{
    return va >= mr->iova && len <= mr->length &&
           va - mr->iova <= mr->length - len;
}

/* Resolve [va, va+len) of an MR into host memory. */
static bool mr_resolve(PvrdmaCore *c, PvrdmaMR *mr, uint64_t va, uint64_t len,
                       bool is_write, PvrdmaSg *sg)
{
    if (!mr->valid) {
        return false;
    }
    if (mr->kind == PVRDMA_MR_DMA) {
        return pvrdma_gpa_to_sg(c, va, len, is_write, sg);
    }
    if (!mr_covers(mr, va, len)) {
        return false;
    }
    return pvrdma_map_to_sg(&mr->map, va - mr->base, len, sg);
}

/* The user MR of pd that covers [va, va+len), or NULL. */
static PvrdmaMR *user_mr_covering(PvrdmaCore *c, uint32_t pd, uint64_t va,
                                  uint32_t len)
{
    for (uint32_t h = 0; h < c->mr.size; h++) {
        PvrdmaMR *mr = c->mr.slot[h];

        if (mr && mr->pd == pd && mr->kind == PVRDMA_MR_USER && mr->valid &&
            mr_covers(mr, va, len)) {
            return mr;
        }
    }
    return NULL;
}

/*
 * A send posted with IBV_SEND_INLINE.  rdma-core's vmw_pvrdma provider has
 * no inline segment (the driver answers max_inline_data 0): it copies the
 * SGEs as given, and verbs ignores the lkey of an inline send, so programs
 * leave it 0 (rdma_xclient does).  The device can read user memory only
 * through a page list, so such an SGE is read through the user MR of the
 * QP's PD that covers it; an SGE that no MR covers fails as any bad SGE.
 */
void pvrdma_inline_sges(PvrdmaCore *c, const PvrdmaQP *qp, PvrdmaSendWqe *w)
{
    uint32_t n = MIN(w->hdr.num_sge, qp->max_send_sge);

    if (!(w->hdr.send_flags & PVRDMA_SEND_INLINE)) {
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        struct pvrdma_sge *s = &w->sge[i];
        PvrdmaMR *mr = pvrdma_mr_by_key(c, s->lkey);

        if (!s->length ||
            (mr && mr->pd == qp->pd && mr->kind == PVRDMA_MR_USER &&
             mr_covers(mr, s->addr, s->length))) {
            continue;
        }
        mr = user_mr_covering(c, qp->pd, s->addr, s->length);
        if (mr) {
            trace_pvrdma_inline_sge(qp->handle, i, s->lkey, mr->key);
            s->lkey = mr->key;
        }
    }
}

/* Local scatter list through lkeys; returns a PVRDMA_WC_* status. */
static int resolve_sges(PvrdmaCore *c, uint32_t pd, const struct pvrdma_sge *s,
                        uint32_t n, bool is_write, PvrdmaSg *sg)
{
    for (uint32_t i = 0; i < n; i++) {
        PvrdmaMR *mr;

        if (!s[i].length) {
            continue;
        }
        mr = pvrdma_mr_by_key(c, s[i].lkey);
        if (!mr || mr->pd != pd ||
            (is_write && !(mr->access & PVRDMA_ACCESS_LOCAL_WRITE)) ||
            !mr_resolve(c, mr, s[i].addr, s[i].length, is_write, sg)) {
            PVRDMA_GUEST_ERR(c, "sge %u: lkey 0x%x addr 0x%" PRIx64
                             " len %u refused", i, s[i].lkey, s[i].addr,
                             s[i].length);
            return PVRDMA_WC_LOC_PROT_ERR;
        }
    }
    if (sg->len > (1ull << 31)) {
        return PVRDMA_WC_LOC_LEN_ERR;
    }
    return PVRDMA_WC_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Responder                                                           */

static bool qp_access(PvrdmaQP *qp, uint32_t flag)
{
    return qp->attr.qp_access_flags & flag;
}

/* Peek at the next receive WQE (QP's RQ or its SRQ); false if none. */
static bool recv_peek(PvrdmaCore *c, PvrdmaQP *qp, PvrdmaRecvWqe *w,
                      PvrdmaRing **ringp, uint32_t *max_sge, bool *bad)
{
    PvrdmaSRQ *srq = qp->is_srq ? pvrdma_table_get(&c->srq, qp->srq) : NULL;
    PvrdmaRing *r = srq ? &srq->ring : &qp->rq;
    uint32_t prod;

    *bad = false;
    if (!r->page) {
        return false;
    }
    if (!pvrdma_ring_guest_prod(r, &prod) ||
        pvrdma_idx_used(prod, r->priv, r->nelems) > r->nelems) {
        PVRDMA_GUEST_ERR(c, "%s of QP %u: producer index invalid", r->name,
                         qp->qpn);
        *bad = true;
        return false;
    }
    if (prod == r->priv) {
        return false;
    }
    *max_sge = srq ? srq->max_sge : qp->max_recv_sge;
    pvrdma_fetch_recv_wqe(r, r->priv, *max_sge, w);
    *ringp = r;
    return true;
}

static void recv_consume(PvrdmaCore *c, PvrdmaQP *qp, PvrdmaRing *r)
{
    r->priv = pvrdma_idx_next(r->priv, r->nelems);
    pvrdma_ring_publish_cons(r);
    if (qp->is_srq) {
        PvrdmaSRQ *srq = pvrdma_table_get(&c->srq, qp->srq);
        uint32_t prod;

        if (srq && srq->limit && pvrdma_ring_guest_prod(r, &prod) &&
            pvrdma_idx_used(prod, r->priv, r->nelems) < srq->limit) {
            srq->limit = 0;     /* one-shot, re-armed by MODIFY_SRQ */
            pvrdma_post_async(c, PVRDMA_EVENT_SRQ_LIMIT_REACHED, srq->handle);
        }
    }
}

static void recv_cqe(PvrdmaCore *c, PvrdmaQP *qp, const PvrdmaRecvWqe *w,
                     uint32_t status, uint32_t opcode, uint32_t byte_len,
                     const PvrdmaReq *req, uint32_t flags, bool solicited)
{
    struct pvrdma_cqe e = { 0 };

    e.wr_id = w->hdr.wr_id;
    e.qp = qp->handle;
    e.opcode = opcode;
    e.status = status;
    e.byte_len = byte_len;
    e.port_num = 1;
    if (req) {
        e.src_qp = req->src_qpn;
        e.imm_data = req->imm;
        memcpy(e.smac, req->smac, 6);
        e.network_hdr_type =
            req->sgid_type == PVRDMA_GID_TYPE_FLAG_ROCE_V1 ?
            PVRDMA_NETWORK_ROCE_V1 :
            (pvrdma_gid_is_v4(req->sgid) ? PVRDMA_NETWORK_IPV4 :
                                           PVRDMA_NETWORK_IPV6);
    }
    e.wc_flags = flags;
    pvrdma_cq_post(c, qp->rcq, &e, solicited);
}

/* The 40-byte GRH in front of UD payloads (IPv4 header in its last 20). */
static void build_grh(const PvrdmaReq *req, uint32_t paylen, uint8_t grh[40])
{
    memset(grh, 0, 40);
    if (req->sgid_type == PVRDMA_GID_TYPE_FLAG_ROCE_V2 &&
        pvrdma_gid_is_v4(req->sgid)) {
        uint8_t *ip = grh + 20;
        uint32_t sum = 0;
        uint16_t tot = 20 + 8 + 12 + paylen + 4;   /* IP+UDP+BTH+DETH+ICRC */

        ip[0] = 0x45;
        ip[2] = tot >> 8;
        ip[3] = tot;
        ip[8] = 64;
        ip[9] = 17;
        memcpy(ip + 12, req->sgid + 12, 4);
        memcpy(ip + 16, req->dgid + 12, 4);
        for (int i = 0; i < 20; i += 2) {
            sum += ip[i] << 8 | ip[i + 1];
        }
        sum = (sum & 0xffff) + (sum >> 16);
        sum = ~((sum & 0xffff) + (sum >> 16)) & 0xffff;
        ip[10] = sum >> 8;
        ip[11] = sum;
    } else {
        grh[0] = 0x60;          /* IPv6 version */
        grh[4] = (paylen + 8) >> 8;
        grh[5] = paylen + 8;
        grh[6] = req->sgid_type == PVRDMA_GID_TYPE_FLAG_ROCE_V2 ? 17 : 0x1b;
        grh[7] = 64;
        memcpy(grh + 8, req->sgid, 16);
        memcpy(grh + 24, req->dgid, 16);
    }
}

static int responder_recv(PvrdmaCore *c, PvrdmaQP *dqp, PvrdmaReq *req,
                          bool with_data)
{
    bool ud = dqp->type != PVRDMA_QPT_RC;
    uint32_t grh = ud ? 40 : 0, max_sge, flags = 0, opcode;
    PvrdmaSg sink = { 0 };
    PvrdmaRing *r;
    PvrdmaRecvWqe w;
    bool bad;
    int st;

    if (!recv_peek(c, dqp, &w, &r, &max_sge, &bad)) {
        if (bad) {
            qp_fail(c, dqp, PVRDMA_EVENT_QP_FATAL);
            return ud ? PVRDMA_WC_SUCCESS : PVRDMA_WC_REM_OP_ERR;
        }
        return ud ? PVRDMA_WC_SUCCESS : PVRDMA_TRANSPORT_RNR;
    }
    recv_consume(c, dqp, r);
    if (w.hdr.num_sge > max_sge) {
        PVRDMA_GUEST_ERR(c, "recv WQE with %u sges (max %u)", w.hdr.num_sge,
                         max_sge);
        st = PVRDMA_WC_LOC_LEN_ERR;
    } else {
        st = resolve_sges(c, dqp->pd, w.sge, w.hdr.num_sge, true, &sink);
    }
    if (st == PVRDMA_WC_SUCCESS && with_data &&
        sink.len < grh + req->local.len) {
        st = PVRDMA_WC_LOC_LEN_ERR;
    }
    if (st != PVRDMA_WC_SUCCESS) {
        recv_cqe(c, dqp, &w, st, PVRDMA_WC_RECV, 0, req, 0, false);
        pvrdma_sg_release(c, &sink);
        if (!ud) {
            pvrdma_qp_to_error(c, dqp);
            return st == PVRDMA_WC_LOC_LEN_ERR ? PVRDMA_WC_REM_INV_REQ_ERR :
                                                 PVRDMA_WC_REM_OP_ERR;
        }
        return PVRDMA_WC_SUCCESS;
    }
    if (with_data) {
        if (ud) {
            uint8_t g[40];
            PvrdmaSg gs = { .iov = &(PvrdmaIov) { g, 40 }, .n = 1, .len = 40 };

            build_grh(req, req->local.len, g);
            pvrdma_sg_copy(&sink, 0, &gs, 0, 40);
            flags |= PVRDMA_WC_GRH;
        }
        pvrdma_sg_copy(&sink, grh, &req->local, 0, req->local.len);
    }
    pvrdma_sg_release(c, &sink);
    opcode = PVRDMA_WC_RECV;
    if (req->opcode == PVRDMA_WR_SEND_WITH_IMM) {
        flags |= PVRDMA_WC_WITH_IMM;
    } else if (req->opcode == PVRDMA_WR_RDMA_WRITE_WITH_IMM) {
        flags |= PVRDMA_WC_WITH_IMM;
        opcode = PVRDMA_WC_RECV_RDMA_WITH_IMM;
    } else if (req->opcode == PVRDMA_WR_SEND_WITH_INV) {
        PvrdmaMR *mr = pvrdma_mr_by_key(c, req->imm);

        if (!mr || mr->pd != dqp->pd || mr->kind != PVRDMA_MR_FRMR) {
            recv_cqe(c, dqp, &w, PVRDMA_WC_REM_INV_REQ_ERR, opcode, 0, req,
                     0, false);
            pvrdma_qp_to_error(c, dqp);
            return PVRDMA_WC_REM_INV_REQ_ERR;
        }
        mr->valid = false;
        flags |= PVRDMA_WC_WITH_INVALIDATE;
    }
    flags |= PVRDMA_WC_WITH_NETWORK_HDR_TYPE | PVRDMA_WC_WITH_SMAC;
    recv_cqe(c, dqp, &w, PVRDMA_WC_SUCCESS, opcode,
             with_data ? grh + req->local.len : req->local.len, req, flags,
             req->send_flags & PVRDMA_SEND_SOLICITED);
    return PVRDMA_WC_SUCCESS;
}

/* Resolve the remote range of an RDMA/atomic request at the responder. */
static PvrdmaMR *remote_mr(PvrdmaCore *c, PvrdmaQP *dqp, PvrdmaReq *req,
                           uint32_t access, uint64_t len, PvrdmaSg *sg)
{
    PvrdmaMR *mr = pvrdma_mr_by_key(c, req->rkey);

    if (!qp_access(dqp, access) || !mr || mr->pd != dqp->pd ||
        !(mr->access & access) ||
        !mr_resolve(c, mr, req->remote_addr, len,
                    access != PVRDMA_ACCESS_REMOTE_READ, sg)) {
        PVRDMA_GUEST_ERR(c, "rkey 0x%x addr 0x%" PRIx64 " len %" PRIu64
                         " refused for QP %u", req->rkey, req->remote_addr,
                         len, dqp->qpn);
        pvrdma_sg_release(c, sg);
        /* a remote access error is fatal for the responder's QP too */
        qp_fail(c, dqp, PVRDMA_EVENT_QP_ACCESS_ERR);
        return NULL;
    }
    return mr;
}

int pvrdma_responder(PvrdmaCore *c, PvrdmaReq *req)
{
    PvrdmaQP *dqp = pvrdma_qp_by_qpn(c, req->dest_qpn);
    PvrdmaSg rem = { 0 };
    uint64_t len = req->local.len;
    int st = PVRDMA_WC_SUCCESS;

    if (req->qp_type != PVRDMA_QPT_RC) {
        /* UD/GSI: anything that does not match is silently dropped */
        if (!dqp || dqp->type == PVRDMA_QPT_RC ||
            dqp->state < PVRDMA_QPS_RTR || dqp->state > PVRDMA_QPS_SQE ||
            dqp->attr.qkey != req->qkey) {
            trace_pvrdma_ud_drop(req->dest_qpn);
            return PVRDMA_WC_SUCCESS;
        }
        return responder_recv(c, dqp, req, true);
    }
    if (!dqp || dqp->type != PVRDMA_QPT_RC || dqp->state < PVRDMA_QPS_RTR ||
        dqp->state > PVRDMA_QPS_SQE) {
        return PVRDMA_WC_RETRY_EXC_ERR;     /* nobody answers */
    }
    if (dqp->state == PVRDMA_QPS_RTR && !dqp->comm_est) {
        /* first message while in RTR: the connection is established */
        dqp->comm_est = true;
        pvrdma_post_async(c, PVRDMA_EVENT_COMM_EST, dqp->handle);
    }
    switch (req->opcode) {
    case PVRDMA_WR_SEND:
    case PVRDMA_WR_SEND_WITH_IMM:
    case PVRDMA_WR_SEND_WITH_INV:
        return responder_recv(c, dqp, req, true);
    case PVRDMA_WR_RDMA_WRITE:
    case PVRDMA_WR_RDMA_WRITE_WITH_IMM: {
        PvrdmaRecvWqe w;
        PvrdmaRing *r;
        uint32_t max_sge;
        bool bad;

        if (req->opcode == PVRDMA_WR_RDMA_WRITE_WITH_IMM &&
            !recv_peek(c, dqp, &w, &r, &max_sge, &bad)) {
            if (bad) {
                qp_fail(c, dqp, PVRDMA_EVENT_QP_FATAL);
                return PVRDMA_WC_REM_OP_ERR;
            }
            return PVRDMA_TRANSPORT_RNR;
        }
        if (len && !remote_mr(c, dqp, req, PVRDMA_ACCESS_REMOTE_WRITE, len,
                              &rem)) {
            return PVRDMA_WC_REM_ACCESS_ERR;
        }
        pvrdma_sg_copy(&rem, 0, &req->local, 0, len);
        pvrdma_sg_release(c, &rem);
        if (req->opcode == PVRDMA_WR_RDMA_WRITE_WITH_IMM) {
            st = responder_recv(c, dqp, req, false);
        }
        return st;
    }
    case PVRDMA_WR_RDMA_READ:
        if (len && !remote_mr(c, dqp, req, PVRDMA_ACCESS_REMOTE_READ, len,
                              &rem)) {
            return PVRDMA_WC_REM_ACCESS_ERR;
        }
        pvrdma_sg_copy(&req->local, 0, &rem, 0, len);
        pvrdma_sg_release(c, &rem);
        return PVRDMA_WC_SUCCESS;
    case PVRDMA_WR_ATOMIC_CMP_AND_SWP:
    case PVRDMA_WR_ATOMIC_FETCH_AND_ADD: {
        uint64_t *p, old;
        PvrdmaSg os;

        if (req->remote_addr & 7) {
            PVRDMA_GUEST_ERR(c, "atomic at unaligned 0x%" PRIx64 " for QP %u",
                             req->remote_addr, dqp->qpn);
            qp_fail(c, dqp, PVRDMA_EVENT_QP_ACCESS_ERR);
            return PVRDMA_WC_REM_ACCESS_ERR;
        }
        if (!remote_mr(c, dqp, req, PVRDMA_ACCESS_REMOTE_ATOMIC, 8, &rem)) {
            return PVRDMA_WC_REM_ACCESS_ERR;
        }
        if (rem.n != 1 || rem.iov[0].len != 8) {
            pvrdma_sg_release(c, &rem);
            qp_fail(c, dqp, PVRDMA_EVENT_QP_ACCESS_ERR);
            return PVRDMA_WC_REM_ACCESS_ERR;
        }
        p = (uint64_t *)rem.iov[0].host;
        if (req->opcode == PVRDMA_WR_ATOMIC_CMP_AND_SWP) {
            old = req->compare_add;
            __atomic_compare_exchange_n(p, &old, req->swap, false,
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        } else {
            old = __atomic_fetch_add(p, req->compare_add, __ATOMIC_SEQ_CST);
        }
        pvrdma_sg_release(c, &rem);
        os = (PvrdmaSg) { .iov = &(PvrdmaIov) { (uint8_t *)&old, 8 },
                          .n = 1, .len = 8 };
        pvrdma_sg_copy(&req->local, 0, &os, 0, 8);
        return PVRDMA_WC_SUCCESS;
    }
    default:
        return PVRDMA_WC_REM_INV_REQ_ERR;
    }
}

/* ------------------------------------------------------------------ */
/* Requester                                                           */

static int fast_reg(PvrdmaCore *c, PvrdmaQP *qp, const PvrdmaSendWqe *w)
{
    const typeof(w->hdr.wr.fast_reg) *f = &w->hdr.wr.fast_reg;
    PvrdmaMR *mr = pvrdma_table_get(&c->mr, f->rkey >> 8);
    uint64_t psz, *pages = NULL;

    if (!mr || mr->kind != PVRDMA_MR_FRMR || mr->pd != qp->pd || mr->valid ||
        f->page_list_len < 1 || f->page_list_len > mr->max_pages ||
        f->page_shift < 12 || f->page_shift > 30 ||
        (f->access_flags & ~PVRDMA_ACCESS_FLAGS_ALL)) {
        PVRDMA_GUEST_ERR(c, "FAST_REG_MR: rkey 0x%x refused", f->rkey);
        return PVRDMA_WC_LOC_PROT_ERR;
    }
    psz = 1ull << f->page_shift;
    if (!f->length || (f->iova_start & (psz - 1)) + f->length >
        (uint64_t)f->page_list_len * psz) {
        PVRDMA_GUEST_ERR(c, "FAST_REG_MR: length %u exceeds %u pages",
                         f->length, f->page_list_len);
        return PVRDMA_WC_LOC_LEN_ERR;
    }
    if (!pvrdma_pdir_read(c, f->pl_pdir_dma, f->page_list_len, &pages)) {
        return PVRDMA_WC_LOC_PROT_ERR;
    }
    for (uint32_t i = 0; i < f->page_list_len; i++) {
        pages[i] &= ~(psz - 1);     /* the driver passes page addresses */
    }
    pvrdma_map_release(c, &mr->map);
    if (!pvrdma_map_pages(c, &mr->map, pages, f->page_list_len, psz)) {
        g_free(pages);
        return PVRDMA_WC_LOC_PROT_ERR;
    }
    g_free(pages);
    mr->iova = f->iova_start;
    mr->base = f->iova_start & ~(psz - 1);
    mr->length = f->length;
    mr->access = f->access_flags;
    mr->key = (mr->handle << 8) | (f->rkey & 0xff);
    mr->valid = true;
    trace_pvrdma_fast_reg(mr->handle, mr->key, mr->iova, mr->length);
    return PVRDMA_WC_SUCCESS;
}

static int local_inv(PvrdmaCore *c, PvrdmaQP *qp, uint32_t key)
{
    PvrdmaMR *mr = pvrdma_mr_by_key(c, key);

    if (!mr || mr->kind != PVRDMA_MR_FRMR || mr->pd != qp->pd) {
        PVRDMA_GUEST_ERR(c, "LOCAL_INV: key 0x%x refused", key);
        return PVRDMA_WC_LOC_PROT_ERR;
    }
    mr->valid = false;
    return PVRDMA_WC_SUCCESS;
}

static bool opcode_ok(PvrdmaQP *qp, uint32_t op)
{
    if (qp->type != PVRDMA_QPT_RC) {
        return op == PVRDMA_WR_SEND || op == PVRDMA_WR_SEND_WITH_IMM;
    }
    switch (op) {
    case PVRDMA_WR_RDMA_WRITE:
    case PVRDMA_WR_RDMA_WRITE_WITH_IMM:
    case PVRDMA_WR_SEND:
    case PVRDMA_WR_SEND_WITH_IMM:
    case PVRDMA_WR_RDMA_READ:
    case PVRDMA_WR_ATOMIC_CMP_AND_SWP:
    case PVRDMA_WR_ATOMIC_FETCH_AND_ADD:
    case PVRDMA_WR_SEND_WITH_INV:
    case PVRDMA_WR_LOCAL_INV:
    case PVRDMA_WR_FAST_REG_MR:
        return true;
    default:
        return false;
    }
}

/*
 * Execute one send WQE; returns a WC status, PVRDMA_TRANSPORT_RNR or
 * PVRDMA_TRANSPORT_PENDING (then *cookie names it for pvrdma_req_done).
 */
static int execute_wqe(PvrdmaCore *c, PvrdmaQP *qp, const PvrdmaSendWqe *w,
                       uint32_t *byte_len, uint64_t *cookie)
{
    const struct pvrdma_sq_wqe_hdr *h = &w->hdr;
    uint32_t op = h->opcode, sgid_index;
    const uint8_t *dgid;
    bool sink;
    PvrdmaReq req = { 0 };
    int st;

    *byte_len = 0;
    *cookie = 0;
    if (!opcode_ok(qp, op)) {
        PVRDMA_GUEST_ERR(c, "QP %u: opcode %u not supported", qp->qpn, op);
        return PVRDMA_WC_LOC_QP_OP_ERR;
    }
    if (h->num_sge > qp->max_send_sge) {
        PVRDMA_GUEST_ERR(c, "QP %u: WQE with %u sges (max %u)", qp->qpn,
                         h->num_sge, qp->max_send_sge);
        return PVRDMA_WC_LOC_LEN_ERR;
    }
    if (op == PVRDMA_WR_LOCAL_INV) {
        return local_inv(c, qp, h->ex.invalidate_rkey);
    }
    if (op == PVRDMA_WR_FAST_REG_MR) {
        return fast_reg(c, qp, w);
    }
    /* PVRDMA_SEND_INLINE: the SGEs carry the data (pvrdma_inline_sges) */
    sink = op == PVRDMA_WR_RDMA_READ || op == PVRDMA_WR_ATOMIC_CMP_AND_SWP ||
           op == PVRDMA_WR_ATOMIC_FETCH_AND_ADD;
    st = resolve_sges(c, qp->pd, w->sge, h->num_sge, sink, &req.local);
    if (st != PVRDMA_WC_SUCCESS) {
        pvrdma_sg_release(c, &req.local);
        return st;
    }
    if ((op == PVRDMA_WR_ATOMIC_CMP_AND_SWP ||
         op == PVRDMA_WR_ATOMIC_FETCH_AND_ADD) && req.local.len != 8) {
        pvrdma_sg_release(c, &req.local);
        return PVRDMA_WC_LOC_LEN_ERR;
    }
    req.opcode = op;
    req.send_flags = h->send_flags;
    req.src_qpn = qp->qpn;
    req.qp_type = qp->type;
    req.imm = h->ex.imm_data;
    if (qp->type == PVRDMA_QPT_RC) {
        req.remote_addr = op >= PVRDMA_WR_ATOMIC_CMP_AND_SWP &&
                          op <= PVRDMA_WR_ATOMIC_FETCH_AND_ADD ?
                          h->wr.atomic.remote_addr : h->wr.rdma.remote_addr;
        req.rkey = op >= PVRDMA_WR_ATOMIC_CMP_AND_SWP &&
                   op <= PVRDMA_WR_ATOMIC_FETCH_AND_ADD ?
                   h->wr.atomic.rkey : h->wr.rdma.rkey;
        req.compare_add = h->wr.atomic.compare_add;
        req.swap = h->wr.atomic.swap;
        req.dest_qpn = qp->attr.dest_qp_num;
        dgid = qp->attr.ah_attr.grh.dgid.raw;
        sgid_index = qp->attr.ah_attr.grh.sgid_index;
    } else {
        if (req.local.len > 4096) {
            pvrdma_sg_release(c, &req.local);
            return PVRDMA_WC_LOC_LEN_ERR;   /* larger than the MTU */
        }
        req.dest_qpn = h->wr.ud.remote_qpn & 0xffffff;
        req.qkey = (h->wr.ud.remote_qkey & 0x80000000u) ? qp->attr.qkey :
                   h->wr.ud.remote_qkey;
        dgid = h->wr.ud.av.dgid;
        sgid_index = h->wr.ud.av.gid_index;
    }
    if (sgid_index < c->lim.gid_tbl_len) {
        memcpy(req.sgid, c->gid[sgid_index].gid.raw, 16);
        req.sgid_type = c->gid[sgid_index].type;
    }
    memcpy(req.dgid, dgid, 16);
    c->ops->get_mac(c->opaque, req.smac);
    req.rnr_retry = qp->attr.rnr_retry;
    req.cookie = *cookie = ++c->next_cookie;
    *byte_len = req.local.len;
    st = -3;
    for (unsigned i = 0; i < c->ntransports; i++) {
        PvrdmaTransport *t = c->transports[i];

        if (t->reaches(t, req.dgid)) {
            st = t->execute(t, &req);
            break;
        }
    }
    if (st == -3) {
        trace_pvrdma_unreachable(qp->qpn);
        st = qp->type == PVRDMA_QPT_RC ? PVRDMA_WC_RETRY_EXC_ERR :
                                         PVRDMA_WC_SUCCESS;
    }
    pvrdma_sg_release(c, &req.local);
    return st;
}

void pvrdma_fetch_send_wqe(const PvrdmaRing *r, uint32_t idx,
                           uint32_t max_sge, PvrdmaSendWqe *w)
{
    memcpy(w, pvrdma_ring_elem(r, idx),
           MIN(sizeof(*w), sizeof(w->hdr) + max_sge * sizeof(w->sge[0])));
}

void pvrdma_fetch_recv_wqe(const PvrdmaRing *r, uint32_t idx,
                           uint32_t max_sge, PvrdmaRecvWqe *w)
{
    memcpy(w, pvrdma_ring_elem(r, idx),
           MIN(sizeof(*w), sizeof(w->hdr) + max_sge * sizeof(w->sge[0])));
}

static PvrdmaSendSlot *send_slot(PvrdmaQP *qp, uint32_t idx)
{
    return &qp->slot[idx & (qp->sq.nelems - 1)];
}

static void slot_cqe(PvrdmaCore *c, PvrdmaQP *qp, const PvrdmaSendSlot *s,
                     uint32_t status)
{
    struct pvrdma_cqe e = { 0 };

    e.wr_id = s->wr_id;
    e.qp = qp->handle;
    e.opcode = pvrdma_wc_opcode(s->opcode);
    e.status = status;
    e.byte_len = s->byte_len;
    e.src_qp = qp->qpn;
    e.port_num = 1;
    pvrdma_cq_post(c, qp->scq, &e, false);
}

/* Complete every posted WQE with WR_FLUSH_ERR (QP in error). */
static void flush_queues(PvrdmaCore *c, PvrdmaQP *qp)
{
    uint32_t prod, n = 0;

    /* in flight: their late results will find no slot */
    while (qp->sq.priv != qp->sq_head && n++ < qp->sq.nelems) {
        PvrdmaSendSlot *s = send_slot(qp, qp->sq.priv);

        slot_cqe(c, qp, s, PVRDMA_WC_WR_FLUSH_ERR);
        memset(s, 0, sizeof(*s));
        qp->sq.priv = pvrdma_idx_next(qp->sq.priv, qp->sq.nelems);
    }
    qp->sq_head = qp->sq.priv;
    if (pvrdma_ring_guest_prod(&qp->sq, &prod) &&
        pvrdma_idx_used(prod, qp->sq.priv, qp->sq.nelems) <= qp->sq.nelems) {
        n = 0;
        while (qp->sq.priv != prod && n++ < qp->sq.nelems) {
            PvrdmaSendWqe w;

            pvrdma_fetch_send_wqe(&qp->sq, qp->sq.priv, qp->max_send_sge,
                                  &w);
            qp->sq.priv = pvrdma_idx_next(qp->sq.priv, qp->sq.nelems);
            send_cqe(c, qp, &w, PVRDMA_WC_WR_FLUSH_ERR, 0);
        }
        qp->sq_head = qp->sq.priv;
    }
    pvrdma_ring_publish_cons(&qp->sq);
    if (!qp->is_srq && qp->rq.page &&
        pvrdma_ring_guest_prod(&qp->rq, &prod) &&
        pvrdma_idx_used(prod, qp->rq.priv, qp->rq.nelems) <= qp->rq.nelems) {
        n = 0;
        while (qp->rq.priv != prod && n++ < qp->rq.nelems) {
            PvrdmaRecvWqe w;

            memcpy(&w.hdr, pvrdma_ring_elem(&qp->rq, qp->rq.priv),
                   sizeof(w.hdr));
            qp->rq.priv = pvrdma_idx_next(qp->rq.priv, qp->rq.nelems);
            recv_cqe(c, qp, &w, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_RECV, 0,
                     NULL, 0, false);
        }
        pvrdma_ring_publish_cons(&qp->rq);
    }
}

/* The QP just entered the error state. */
static void qp_entered_error(PvrdmaCore *c, PvrdmaQP *qp)
{
    pvrdma_qp_set_rnr_wait(c, qp, false);
    /*
     * Transports learn it from the run loop (serve_sq_budget): this may run
     * inside a transport, serving a peer's request.
     */
    qp->gone_pending = true;
    if (qp->is_srq) {
        /* no more receives will be taken from the SRQ for this QP */
        pvrdma_post_async(c, PVRDMA_EVENT_QP_LAST_WQE_REACHED, qp->handle);
    }
}

void pvrdma_qp_to_error(PvrdmaCore *c, PvrdmaQP *qp)
{
    if (qp->hw) {
        pvrdma_hca_qp_error(c, qp);
        return;
    }
    if (qp->state != PVRDMA_QPS_ERR) {
        trace_pvrdma_qp_state(qp->qpn, qp->state, PVRDMA_QPS_ERR);
        qp->state = PVRDMA_QPS_ERR;
        qp->attr.qp_state = PVRDMA_QPS_ERR;
        qp_entered_error(c, qp);
    }
    pvrdma_qp_schedule(c, qp);  /* flush from the run loop */
}

/*
 * Complete finished WQEs in order, from the consumer index up to the
 * first one still in flight.  The first error moves the QP to error.
 */
static void drain_sq(PvrdmaCore *c, PvrdmaQP *qp)
{
    bool moved = false;

    while (qp->sq.priv != qp->sq_head) {
        PvrdmaSendSlot *s = send_slot(qp, qp->sq.priv);
        int st = s->status;

        if (!s->done) {
            break;
        }
        qp->sq.priv = pvrdma_idx_next(qp->sq.priv, qp->sq.nelems);
        moved = true;
        if (st != PVRDMA_WC_SUCCESS || s->signaled) {
            slot_cqe(c, qp, s, st);
        }
        memset(s, 0, sizeof(*s));
        if (st != PVRDMA_WC_SUCCESS) {
            pvrdma_ring_publish_cons(&qp->sq);
            pvrdma_qp_to_error(c, qp);
            return;
        }
    }
    if (moved) {
        pvrdma_ring_publish_cons(&qp->sq);
    }
}

void pvrdma_req_done(PvrdmaCore *c, uint32_t qpn, uint64_t cookie, int status)
{
    PvrdmaQP *qp = pvrdma_qp_get(c, qpn);
    uint32_t i, n = 0;

    if (!qp || !cookie || qp->state == PVRDMA_QPS_ERR) {
        return;
    }
    for (i = qp->sq.priv; i != qp->sq_head && n++ < qp->sq.nelems;
         i = pvrdma_idx_next(i, qp->sq.nelems)) {
        PvrdmaSendSlot *s = send_slot(qp, i);

        if (s->cookie == cookie && !s->done) {
            s->done = true;
            s->status = status;
            if (status != PVRDMA_WC_SUCCESS) {
                qp->sq_failed = true;   /* execute nothing after it */
            }
            trace_pvrdma_req_done(qpn, cookie, status);
            drain_sq(c, qp);
            /* a full window may have held back more WQEs */
            pvrdma_qp_schedule(c, qp);
            return;
        }
    }
}

/* Would this WQE be carried by the loopback transport (copy here)? */
static bool wqe_is_loopback(PvrdmaCore *c, PvrdmaQP *qp, const PvrdmaSendWqe *w)
{
    const uint8_t *dgid = qp->type == PVRDMA_QPT_RC ?
                          qp->attr.ah_attr.grh.dgid.raw : w->hdr.wr.ud.av.dgid;

    return pvrdma_gid_is_local(c, dgid);
}

/*
 * Serve qp's send queue.  inline_budget > 0: called from a send doorbell
 * (vCPU thread): serve at most that many WQEs and only those that cost no
 * data copy here (requests for a co-resident peer, whose responder copies),
 * leaving the rest to the run loop.
 */
static void serve_sq_budget(PvrdmaCore *c, PvrdmaQP *qp,
                            uint32_t inline_budget)
{
    uint32_t prod;
    uint32_t budget = inline_budget ? inline_budget : PVRDMA_RUN_BUDGET;

    if (qp->state == PVRDMA_QPS_ERR) {
        flush_queues(c, qp);
        if (qp->gone_pending) {
            qp->gone_pending = false;
            pvrdma_qp_gone(c, qp->qpn); /* peers' requests waiting on it */
        }
        return;
    }
    if (qp->state != PVRDMA_QPS_RTS) {
        return;     /* WQEs wait in the ring until the QP is ready */
    }
    if (qp->sq_failed) {
        /*
         * A WQE failed behind ones still in flight: nothing after it may
         * run; the QP goes to error when it completes in order.
         */
        drain_sq(c, qp);
        return;
    }
    if (!pvrdma_ring_guest_prod(&qp->sq, &prod) ||
        pvrdma_idx_used(prod, qp->sq.priv, qp->sq.nelems) > qp->sq.nelems ||
        pvrdma_idx_used(prod, qp->sq_head, qp->sq.nelems) >
        pvrdma_idx_used(prod, qp->sq.priv, qp->sq.nelems)) {
        PVRDMA_GUEST_ERR(c, "SQ of QP %u: producer index invalid", qp->qpn);
        qp_fail(c, qp, PVRDMA_EVENT_QP_FATAL);
        return;
    }
    while (qp->sq_head != prod) {
        PvrdmaSendSlot *s;
        uint64_t cookie;
        uint32_t len;
        PvrdmaSendWqe w;
        int st;

        if (!budget--) {
            pvrdma_qp_schedule(c, qp);
            break;
        }
        pvrdma_fetch_send_wqe(&qp->sq, qp->sq_head, qp->max_send_sge, &w);
        pvrdma_inline_sges(c, qp, &w);
        if (inline_budget && wqe_is_loopback(c, qp, &w)) {
            pvrdma_qp_schedule(c, qp);
            break;
        }
        st = execute_wqe(c, qp, &w, &len, &cookie);
        if (st == PVRDMA_TRANSPORT_RNR) {
            int64_t now = c->ops->now_ms(c->opaque);

            if (!qp->rnr_wait) {
                pvrdma_qp_set_rnr_wait(c, qp, true);
                /* rnr_retry 7 means retry forever */
                qp->rnr_deadline = qp->attr.rnr_retry >= 7 ? 0 :
                    now + 10 * (1 + qp->attr.rnr_retry) *
                          MAX(1, qp->attr.min_rnr_timer);
            }
            if (qp->rnr_deadline && now >= qp->rnr_deadline) {
                st = PVRDMA_WC_RNR_RETRY_EXC_ERR;
            } else {
                trace_pvrdma_rnr_wait(qp->qpn);
                if (qp->rnr_deadline) {
                    c->rnr_timer = true;
                    c->ops->kick(c->opaque, qp->rnr_deadline - now);
                }
                break;
            }
        }
        pvrdma_qp_set_rnr_wait(c, qp, false);
        s = send_slot(qp, qp->sq_head);
        s->wr_id = w.hdr.wr_id;
        s->opcode = w.hdr.opcode;
        s->byte_len = len;
        s->signaled = qp->sq_sig_all ||
                      (w.hdr.send_flags & PVRDMA_SEND_SIGNALED);
        s->cookie = cookie;
        s->done = st != PVRDMA_TRANSPORT_PENDING;
        s->status = s->done ? st : PVRDMA_WC_SUCCESS;
        qp->sq_head = pvrdma_idx_next(qp->sq_head, qp->sq.nelems);
        if (s->done && st != PVRDMA_WC_SUCCESS) {
            qp->sq_failed = true;
            break;      /* the QP goes to error when this one completes */
        }
    }
    drain_sq(c, qp);
}

static void serve_sq(PvrdmaCore *c, PvrdmaQP *qp)
{
    serve_sq_budget(c, qp, 0);
}

static void flush_transports(PvrdmaCore *c)
{
    for (unsigned i = 0; i < c->ntransports; i++) {
        if (c->transports[i]->flush) {
            c->transports[i]->flush(c->transports[i]);
        }
    }
}

/*
 * Send doorbell (vCPU thread, BQL held).  With a co-resident transport, a
 * short burst of requests for a peer is sent from here: the requester only
 * writes a message (the peer's responder copies the data), and the hop to
 * the bottom half is saved from the latency.  Everything else, loopback
 * included (its copy happens at the requester), goes to the run loop.
 */
void pvrdma_qp_send_doorbell(PvrdmaCore *c, PvrdmaQP *qp)
{
    if (c->ntransports < 2 || c->running || qp->queued ||
        qp->state != PVRDMA_QPS_RTS || qp->rnr_wait) {
        pvrdma_qp_schedule(c, qp);
        return;
    }
    c->running = true;
    serve_sq_budget(c, qp, PVRDMA_INLINE_BUDGET);
    c->running = false;
    flush_transports(c);
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
    for (unsigned i = 0; i < c->ntransports; i++) {
        if (c->transports[i]->wake) {
            c->wake_transports = true;
            c->ops->kick(c->opaque, 0);
            break;
        }
    }
}

void pvrdma_qp_gone(PvrdmaCore *c, uint32_t qpn)
{
    for (unsigned i = 0; i < c->ntransports; i++) {
        if (c->transports[i]->qp_gone) {
            c->transports[i]->qp_gone(c->transports[i], qpn);
        }
    }
}

void pvrdma_core_run(PvrdmaCore *c)
{
    uint32_t n = c->run.length;

    if (c->running) {
        return;
    }
    if (c->rnr_timer) {
        /* an RNR timer fired: waiting senders retry (and may time out) */
        c->rnr_timer = false;
        pvrdma_wake_rnr(c);
        n = c->run.length;
    }
    c->running = true;
    if (c->wake_transports) {
        c->wake_transports = false;
        for (unsigned i = 0; i < c->ntransports; i++) {
            if (c->transports[i]->wake) {
                c->transports[i]->wake(c->transports[i]);
            }
        }
        n = c->run.length;
    }
    /* serve the QPs queued now; those re-queued meanwhile wait a turn */
    while (n-- && c->run.length) {
        uint32_t h = GPOINTER_TO_UINT(g_queue_pop_head(&c->run));
        PvrdmaQP *qp = pvrdma_qp_get(c, h);

        if (!qp) {
            continue;
        }
        qp->queued = false;
        serve_sq(c, qp);
    }
    c->running = false;
    flush_transports(c);
    if (c->run.length) {
        c->ops->kick(c->opaque, 0);
    }
}

/* ------------------------------------------------------------------ */
/* State machine                                                       */

static bool transition_ok(uint8_t cur, uint8_t next)
{
    if (next == PVRDMA_QPS_RESET || next == PVRDMA_QPS_ERR) {
        return true;
    }
    switch (cur) {
    case PVRDMA_QPS_RESET:
        return next == PVRDMA_QPS_INIT;
    case PVRDMA_QPS_INIT:
        return next == PVRDMA_QPS_INIT || next == PVRDMA_QPS_RTR;
    case PVRDMA_QPS_RTR:
        return next == PVRDMA_QPS_RTS;
    case PVRDMA_QPS_RTS:
        return next == PVRDMA_QPS_RTS || next == PVRDMA_QPS_SQD;
    case PVRDMA_QPS_SQD:
        return next == PVRDMA_QPS_SQD || next == PVRDMA_QPS_RTS;
    case PVRDMA_QPS_SQE:
        return next == PVRDMA_QPS_RTS;
    default:
        return false;
    }
}

static uint32_t required_attrs(uint8_t type, uint8_t cur, uint8_t next)
{
    bool rc = type == PVRDMA_QPT_RC;

    if (cur == PVRDMA_QPS_RESET && next == PVRDMA_QPS_INIT) {
        if (type == PVRDMA_QPT_GSI) {
            return PVRDMA_QP_PKEY_INDEX | PVRDMA_QP_QKEY;
        }
        return PVRDMA_QP_PKEY_INDEX | PVRDMA_QP_PORT |
               (rc ? PVRDMA_QP_ACCESS_FLAGS : PVRDMA_QP_QKEY);
    }
    if (cur == PVRDMA_QPS_INIT && next == PVRDMA_QPS_RTR && rc) {
        return PVRDMA_QP_AV | PVRDMA_QP_PATH_MTU | PVRDMA_QP_DEST_QPN |
               PVRDMA_QP_RQ_PSN | PVRDMA_QP_MAX_DEST_RD_ATOMIC |
               PVRDMA_QP_MIN_RNR_TIMER;
    }
    if (cur == PVRDMA_QPS_RTR && next == PVRDMA_QPS_RTS) {
        return rc ? PVRDMA_QP_SQ_PSN | PVRDMA_QP_TIMEOUT | PVRDMA_QP_RETRY_CNT |
                    PVRDMA_QP_RNR_RETRY | PVRDMA_QP_MAX_QP_RD_ATOMIC :
                    PVRDMA_QP_SQ_PSN;
    }
    return 0;
}

static void reset_rings(PvrdmaCore *c, PvrdmaQP *qp)
{
    qp->sq.priv = 0;
    qp->sq_head = 0;
    qp->sq_failed = false;
    qp->rq.priv = 0;
    pvrdma_qp_set_rnr_wait(c, qp, false);
    memset(qp->slot, 0, sizeof(*qp->slot) * qp->sq.nelems);
    qp->gone_pending = false;
    pvrdma_qp_gone(c, qp->qpn);
}

/*
 * Host HCA mode: a QP whose connection the host's rdma_cm made receives
 * from the PSN the host CM announced, not the one the guest's CM did.
 */
static const struct pvrdma_qp_attr *
hca_rq_psn(PvrdmaCore *c, PvrdmaQP *qp, uint32_t mask,
           const struct pvrdma_qp_attr *a, struct pvrdma_qp_attr *fixed)
{
    uint32_t dest = (mask & PVRDMA_QP_DEST_QPN) ? a->dest_qp_num :
                    qp->attr.dest_qp_num;
    const uint8_t *dgid = (mask & PVRDMA_QP_AV) ? a->ah_attr.grh.dgid.raw :
                          qp->attr.ah_attr.grh.dgid.raw;
    uint32_t psn;

    for (unsigned i = 0; i < c->ntransports; i++) {
        PvrdmaTransport *t = c->transports[i];

        if (t->rq_psn && t->rq_psn(t, qp->qpn, dest, dgid, &psn)) {
            *fixed = *a;
            fixed->rq_psn = psn;
            return fixed;
        }
    }
    return a;
}

int pvrdma_qp_modify(PvrdmaCore *c, PvrdmaQP *qp, uint32_t mask,
                     const struct pvrdma_qp_attr *a)
{
    uint8_t cur = qp->state;
    uint8_t next = (mask & PVRDMA_QP_STATE) ? a->qp_state : cur;
    struct pvrdma_qp_attr fixed;
    uint32_t req;

    if (mask & ~PVRDMA_QP_ATTR_MASK_ALL) {
        PVRDMA_GUEST_ERR(c, "MODIFY_QP %u: unknown mask bits 0x%x", qp->qpn,
                         mask);
        return EINVAL;
    }
    if ((mask & PVRDMA_QP_STATE) && a->qp_state > PVRDMA_QPS_ERR) {
        PVRDMA_GUEST_ERR(c, "MODIFY_QP %u: bad state %u", qp->qpn,
                         a->qp_state);
        return EINVAL;
    }
    if ((mask & PVRDMA_QP_CUR_STATE) && a->cur_qp_state != cur) {
        PVRDMA_GUEST_ERR(c, "MODIFY_QP %u: current state %u, not %u",
                         qp->qpn, cur, a->cur_qp_state);
        return EINVAL;
    }
    if ((mask & PVRDMA_QP_STATE) && !transition_ok(cur, next)) {
        PVRDMA_GUEST_ERR(c, "MODIFY_QP %u: %u -> %u not allowed", qp->qpn,
                         cur, next);
        return EINVAL;
    }
    req = required_attrs(qp->type, cur, next);
    if ((mask & req) != req) {
        PVRDMA_GUEST_ERR(c, "MODIFY_QP %u: %u -> %u misses attributes 0x%x",
                         qp->qpn, cur, next, req & ~mask);
        return EINVAL;
    }
    if (((mask & PVRDMA_QP_PORT) && a->port_num != 1) ||
        ((mask & PVRDMA_QP_PKEY_INDEX) && a->pkey_index >= PVRDMA_MAX_PKEYS) ||
        ((mask & PVRDMA_QP_PATH_MTU) &&
         (a->path_mtu < PVRDMA_MTU_256 || a->path_mtu > PVRDMA_MTU_4096)) ||
        ((mask & PVRDMA_QP_AV) &&
         a->ah_attr.grh.sgid_index >= c->lim.gid_tbl_len) ||
        ((mask & PVRDMA_QP_DEST_QPN) && a->dest_qp_num > 0xffffff) ||
        ((mask & PVRDMA_QP_MAX_QP_RD_ATOMIC) &&
         a->max_rd_atomic > c->lim.max_qp_rd_atom) ||
        ((mask & PVRDMA_QP_MAX_DEST_RD_ATOMIC) &&
         a->max_dest_rd_atomic > c->lim.max_qp_rd_atom) ||
        ((mask & PVRDMA_QP_ACCESS_FLAGS) &&
         (a->qp_access_flags & ~PVRDMA_ACCESS_FLAGS_ALL)) ||
        ((mask & PVRDMA_QP_RNR_RETRY) && a->rnr_retry > 7) ||
        ((mask & PVRDMA_QP_RETRY_CNT) && a->retry_cnt > 7) ||
        ((mask & PVRDMA_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31) ||
        ((mask & PVRDMA_QP_TIMEOUT) && a->timeout > 31) ||
        ((mask & PVRDMA_QP_CAP) &&
         (a->cap.max_send_wr > qp->max_send_wr ||
          a->cap.max_recv_wr > qp->max_recv_wr ||
          a->cap.max_send_sge > qp->max_send_sge ||
          a->cap.max_recv_sge > qp->max_recv_sge ||
          a->cap.max_inline_data))) {
        PVRDMA_GUEST_ERR(c, "MODIFY_QP %u: attribute out of range (mask 0x%x)",
                         qp->qpn, mask);
        return EINVAL;
    }

    if (qp->hw && (mask & PVRDMA_QP_RQ_PSN)) {
        a = hca_rq_psn(c, qp, mask, a, &fixed);
    }
    if (qp->hw) {
        int err = c->hca->qp_modify(c->hca, qp, mask, a);

        if (err) {
            return -err;
        }
    }

#define SET(bit, field) do { if (mask & (bit)) { qp->attr.field = a->field; } \
                        } while (0)
    SET(PVRDMA_QP_EN_SQD_ASYNC_NOTIFY, en_sqd_async_notify);
    SET(PVRDMA_QP_ACCESS_FLAGS, qp_access_flags);
    SET(PVRDMA_QP_PKEY_INDEX, pkey_index);
    SET(PVRDMA_QP_PORT, port_num);
    SET(PVRDMA_QP_QKEY, qkey);
    SET(PVRDMA_QP_AV, ah_attr);
    SET(PVRDMA_QP_PATH_MTU, path_mtu);
    SET(PVRDMA_QP_TIMEOUT, timeout);
    SET(PVRDMA_QP_RETRY_CNT, retry_cnt);
    SET(PVRDMA_QP_RNR_RETRY, rnr_retry);
    SET(PVRDMA_QP_MAX_QP_RD_ATOMIC, max_rd_atomic);
    SET(PVRDMA_QP_ALT_PATH, alt_ah_attr);
    SET(PVRDMA_QP_MIN_RNR_TIMER, min_rnr_timer);
    SET(PVRDMA_QP_MAX_DEST_RD_ATOMIC, max_dest_rd_atomic);
    SET(PVRDMA_QP_PATH_MIG_STATE, path_mig_state);
    SET(PVRDMA_QP_DEST_QPN, dest_qp_num);
#undef SET
    if (mask & PVRDMA_QP_RQ_PSN) {
        qp->attr.rq_psn = a->rq_psn & 0xffffff;
    }
    if (mask & PVRDMA_QP_SQ_PSN) {
        qp->attr.sq_psn = a->sq_psn & 0xffffff;
    }
    if (qp->type == PVRDMA_QPT_GSI) {
        qp->attr.qkey = PVRDMA_GSI_QKEY;
    }

    trace_pvrdma_qp_state(qp->qpn, cur, next);
    if (qp->hw) {
        qp->state = next;
        qp->attr.qp_state = next;
        if (next == PVRDMA_QPS_RESET) {
            qp->sq.priv = qp->rq.priv = 0;
            qp->hca_sq_blocked = qp->hca_rq_blocked = false;
        }
        /* WQEs the guest posted before the host QP could take them */
        pvrdma_hca_post_rq(c, qp);
        pvrdma_hca_post_sq(c, qp);
        return 0;
    }
    if (next == PVRDMA_QPS_ERR && cur != PVRDMA_QPS_ERR) {
        qp_entered_error(c, qp);
    }
    if (next == PVRDMA_QPS_RESET || next == PVRDMA_QPS_INIT) {
        qp->comm_est = false;
    }
    qp->state = next;
    qp->attr.qp_state = next;
    if (next == PVRDMA_QPS_RESET) {
        reset_rings(c, qp);
    } else if (next == PVRDMA_QPS_ERR) {
        pvrdma_qp_to_error(c, qp);
    } else if (next == PVRDMA_QPS_RTS) {
        pvrdma_qp_schedule(c, qp);  /* WQEs posted before RTS */
    } else if (next == PVRDMA_QPS_SQD && cur == PVRDMA_QPS_RTS &&
               qp->attr.en_sqd_async_notify) {
        qp->events++;
        pvrdma_post_async(c, PVRDMA_EVENT_SQ_DRAINED, qp->handle);
    }
    return 0;
}
