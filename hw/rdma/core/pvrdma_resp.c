/*
 * pvrdma: the responder, shared by every transport (pvrdma_responder()).
 * Executes a request against a QP of this device: checks the QP's type and
 * state and, for UD, the qkey; takes a receive WQE from the QP's receive
 * queue or SRQ when the opcode needs one (copied out and validated like a
 * send WQE); checks the rkey for RDMA and atomics; moves the data, with a
 * GRH in front of UD payloads; and writes the receive completion.  Returns
 * the requester's status, or PVRDMA_TRANSPORT_RNR.
 *
 * Not here: the layout of a receive CQE (pvrdma_comp.c), memory key lookup
 * (pvrdma_mr.c), flushing the receives of a QP in error (pvrdma_comp.c),
 * QP states (pvrdma_qp.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_transport_calls.h"
#include "pvrdma_int.h"

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
    if (!pvrdma_ring_guest_prod(r, &prod)) {
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

/*
 * A receive in progress: the WQE it consumed and how much of the message
 * is in.  A message that comes in pieces (RoCEv2: pvrdma_recv_begin() with
 * the first, pvrdma_recv_data() for each next) resolves the SGEs once per
 * piece, so nothing holds host pointers between the packets of a message
 * (nor across a migration's last pass); a whole message
 * (responder_recv_msg()) resolves them once.
 */
struct PvrdmaRecvCtx {
    PvrdmaRecvWqe w;
    uint64_t off;
    uint32_t flags;     /* PVRDMA_WC_* flags so far (GRH) */
};

/*
 * A receive failed: error CQE; RC QPs go to error.  Returns the
 * requester's status (UD: the receiver's, the caller's to hide).  The
 * helpers below never free ctx: the whole-message path keeps it on its
 * stack, the piecewise API (pvrdma_recv_*) allocates and frees it.
 */
static int recv_fail(PvrdmaCore *c, PvrdmaQP *qp, PvrdmaRecvCtx *ctx,
                     uint32_t st, uint32_t opcode, const PvrdmaReq *req)
{
    pvrdma_recv_cqe(c, qp, &ctx->w, st, opcode, 0, req, 0, false);
    if (qp->type != PVRDMA_QPT_RC) {
        return st;
    }
    pvrdma_qp_to_error(c, qp);
    return st == PVRDMA_WC_LOC_LEN_ERR ? PVRDMA_WC_REM_INV_REQ_ERR :
                                         PVRDMA_WC_REM_OP_ERR;
}

/*
 * Take qp's next receive WQE into ctx and resolve its SGEs into *sink
 * (released by the caller).  *taken: a WQE was taken (ctx holds it), even
 * if it failed (its error CQE is written).
 */
static int recv_take(PvrdmaCore *c, PvrdmaQP *qp, PvrdmaRecvCtx *ctx,
                     PvrdmaSg *sink, bool *taken)
{
    bool ud = qp->type != PVRDMA_QPT_RC;
    uint32_t max_sge;
    PvrdmaRing *r;
    bool bad;
    int st;

    memset(ctx, 0, sizeof(*ctx));
    *taken = false;
    if (!recv_peek(c, qp, &ctx->w, &r, &max_sge, &bad)) {
        if (bad) {
            pvrdma_qp_fail(c, qp, PVRDMA_EVENT_QP_FATAL);
            return ud ? PVRDMA_WC_SUCCESS : PVRDMA_WC_REM_OP_ERR;
        }
        return ud ? PVRDMA_WC_SUCCESS : PVRDMA_TRANSPORT_RNR;
    }
    recv_consume(c, qp, r);
    *taken = true;
    if (!ctx->w.sge_ok) {
        PVRDMA_GUEST_ERR(c, "recv WQE with %u sges (max %u)",
                         ctx->w.hdr.num_sge, max_sge);
        return recv_fail(c, qp, ctx, PVRDMA_WC_LOC_LEN_ERR, PVRDMA_WC_RECV,
                         NULL);
    }
    st = pvrdma_resolve_sges(c, qp->pd, ctx->w.sge, ctx->w.hdr.num_sge, true,
                             sink);
    if (st != PVRDMA_WC_SUCCESS) {
        return recv_fail(c, qp, ctx, st, PVRDMA_WC_RECV, NULL);
    }
    return PVRDMA_WC_SUCCESS;
}

/*
 * Append len bytes of data to the message in ctx, whose receive buffer is
 * resolved in sink.
 */
static int recv_place(PvrdmaCore *c, PvrdmaQP *qp, PvrdmaRecvCtx *ctx,
                      PvrdmaSg *sink, const PvrdmaSg *data,
                      uint64_t len)
{
    if (ctx->off + len < ctx->off || sink->len < ctx->off + len) {
        return recv_fail(c, qp, ctx, PVRDMA_WC_LOC_LEN_ERR, PVRDMA_WC_RECV,
                         NULL);
    }
    pvrdma_sg_copy(sink, ctx->off, data, 0, len);
    ctx->off += len;
    return PVRDMA_WC_SUCCESS;
}

/* The message is in: the receive CQE (see pvrdma_recv_end()). */
static int recv_end(PvrdmaCore *c, PvrdmaQP *qp, PvrdmaRecvCtx *ctx,
                    const PvrdmaReq *req, uint32_t byte_len)
{
    uint32_t flags = ctx->flags, opcode = PVRDMA_WC_RECV;

    if (req->opcode == PVRDMA_WR_SEND_WITH_IMM) {
        flags |= PVRDMA_WC_WITH_IMM;
    } else if (req->opcode == PVRDMA_WR_RDMA_WRITE_WITH_IMM) {
        flags |= PVRDMA_WC_WITH_IMM;
        opcode = PVRDMA_WC_RECV_RDMA_WITH_IMM;
    } else if (req->opcode == PVRDMA_WR_SEND_WITH_INV) {
        if (!pvrdma_mr_remote_inv(c, qp->pd, req->imm)) {
            recv_fail(c, qp, ctx, PVRDMA_WC_REM_INV_REQ_ERR, opcode, req);
            return PVRDMA_WC_REM_INV_REQ_ERR;
        }
        flags |= PVRDMA_WC_WITH_INVALIDATE;
    }
    flags |= PVRDMA_WC_WITH_NETWORK_HDR_TYPE | PVRDMA_WC_WITH_SMAC;
    pvrdma_recv_cqe(c, qp, &ctx->w, PVRDMA_WC_SUCCESS, opcode, byte_len, req,
                    flags, req->send_flags & PVRDMA_SEND_SOLICITED);
    return PVRDMA_WC_SUCCESS;
}

int pvrdma_recv_begin(PvrdmaCore *c, PvrdmaQP *qp, PvrdmaRecvCtx **ctxp,
                      const PvrdmaSg *data, uint64_t len)
{
    PvrdmaRecvCtx ctx;
    PvrdmaSg sink = { 0 };
    bool taken;
    int st = recv_take(c, qp, &ctx, &sink, &taken);

    if (st == PVRDMA_WC_SUCCESS && taken && len) {
        st = recv_place(c, qp, &ctx, &sink, data, len);
    }
    pvrdma_sg_release(c, &sink);
    *ctxp = st == PVRDMA_WC_SUCCESS && taken ? g_memdup2(&ctx, sizeof(ctx)) :
                                               NULL;
    return st;
}

/*
 * Only the part of the receive buffer this piece fills is resolved: a
 * message in pieces costs one mapping of its length, not one of the whole
 * buffer per piece.
 */
int pvrdma_recv_data(PvrdmaCore *c, PvrdmaQP *qp, PvrdmaRecvCtx *ctx,
                     const PvrdmaSg *data, uint64_t len)
{
    PvrdmaSg sink = { 0 };
    int st;

    if (!len) {
        return PVRDMA_WC_SUCCESS;
    }
    if (ctx->off + len < ctx->off ||
        pvrdma_sges_len(ctx->w.sge, ctx->w.hdr.num_sge) < ctx->off + len) {
        st = PVRDMA_WC_LOC_LEN_ERR;
    } else {
        st = pvrdma_resolve_sges_at(c, qp->pd, ctx->w.sge,
                                    ctx->w.hdr.num_sge, true, ctx->off, len,
                                    &sink);
    }
    if (st != PVRDMA_WC_SUCCESS) {
        st = recv_fail(c, qp, ctx, st, PVRDMA_WC_RECV, NULL);
    } else {
        pvrdma_sg_copy(&sink, 0, data, 0, len);
        ctx->off += len;
    }
    pvrdma_sg_release(c, &sink);
    if (st != PVRDMA_WC_SUCCESS) {
        g_free(ctx);
    }
    return st;
}

int pvrdma_recv_end(PvrdmaCore *c, PvrdmaQP *qp, PvrdmaRecvCtx *ctx,
                    const PvrdmaReq *req, uint32_t byte_len)
{
    int st = recv_end(c, qp, ctx, req, byte_len);

    g_free(ctx);
    return st;
}

void pvrdma_recv_abort(PvrdmaRecvCtx *ctx)
{
    pvrdma_recv_free(ctx);
}

void pvrdma_recv_ctx_save(const PvrdmaRecvCtx *ctx, GByteArray *b)
{
    pvrdma_mig_put64(b, ctx->w.hdr.wr_id);
    pvrdma_mig_put32(b, ctx->w.hdr.num_sge);
    pvrdma_mig_put32(b, ctx->w.hdr.total_len);
    for (uint32_t i = 0; i < ctx->w.hdr.num_sge; i++) {
        pvrdma_mig_put64(b, ctx->w.sge[i].addr);
        pvrdma_mig_put32(b, ctx->w.sge[i].length);
        pvrdma_mig_put32(b, ctx->w.sge[i].lkey);
    }
    pvrdma_mig_put64(b, ctx->off);
    pvrdma_mig_put32(b, ctx->flags);
}

PvrdmaRecvCtx *pvrdma_recv_ctx_load(PvrdmaCore *c, PvrdmaQP *qp,
                                    PvrdmaMigReader *r)
{
    PvrdmaSRQ *srq = qp->is_srq ? pvrdma_table_get(&c->srq, qp->srq) : NULL;
    uint32_t max_sge = MIN(srq ? srq->max_sge : qp->max_recv_sge,
                           PVRDMA_HARD_MAX_SGE);
    g_autofree PvrdmaRecvCtx *ctx = g_new0(PvrdmaRecvCtx, 1);

    ctx->w.hdr.wr_id = pvrdma_mig_get64(r);
    ctx->w.hdr.num_sge = pvrdma_mig_get32(r);
    ctx->w.hdr.total_len = pvrdma_mig_get32(r);
    if (!r->err && ctx->w.hdr.num_sge > max_sge) {
        pvrdma_mig_fail(r, "receive WQE with %u SGEs (max %u)",
                        ctx->w.hdr.num_sge, max_sge);
        return NULL;
    }
    for (uint32_t i = 0; i < ctx->w.hdr.num_sge && !r->err; i++) {
        ctx->w.sge[i].addr = pvrdma_mig_get64(r);
        ctx->w.sge[i].length = pvrdma_mig_get32(r);
        ctx->w.sge[i].lkey = pvrdma_mig_get32(r);
    }
    ctx->w.sge_ok = true;
    ctx->off = pvrdma_mig_get64(r);
    ctx->flags = pvrdma_mig_get32(r);
    if (!r->err && (ctx->off > (1ull << 31) || (ctx->flags & ~PVRDMA_WC_GRH))) {
        pvrdma_mig_fail(r, "receive in progress at %" PRIu64 ", flags 0x%x",
                        ctx->off, ctx->flags);
    }
    /* the SGEs are resolved again, as for every packet, when data comes */
    return r->err ? NULL : g_steal_pointer(&ctx);
}

/*
 * A whole message in one call (loopback, co-resident): the receive WQE's
 * SGEs are resolved once, for the GRH and the data; the context lives on
 * the stack.
 */
static int responder_recv_msg(PvrdmaCore *c, PvrdmaQP *dqp, PvrdmaReq *req,
                              bool with_data)
{
    PvrdmaSg sink = { 0 };
    PvrdmaRecvCtx ctx;
    uint32_t grh = 0;
    bool taken;
    int st = recv_take(c, dqp, &ctx, &sink, &taken);

    if (st == PVRDMA_WC_SUCCESS && taken && with_data &&
        dqp->type != PVRDMA_QPT_RC) {
        uint8_t g[40];
        PvrdmaSg gs = { .iov = &(PvrdmaIov) { g, 40 }, .n = 1, .len = 40 };

        build_grh(req, req->local.len, g);
        st = recv_place(c, dqp, &ctx, &sink, &gs, 40);
        grh = 40;
        ctx.flags |= PVRDMA_WC_GRH;
    }
    if (st == PVRDMA_WC_SUCCESS && taken && with_data) {
        st = recv_place(c, dqp, &ctx, &sink, &req->local, req->local.len);
    }
    pvrdma_sg_release(c, &sink);
    if (st != PVRDMA_WC_SUCCESS || !taken) {
        return st;
    }
    /* a WRITE with immediate in pieces: the whole write's length */
    return recv_end(c, dqp, &ctx, req,
                    grh + (req->msg_len ? req->msg_len : req->local.len));
}

/*
 * A whole message: begin, GRH (UD), data, end.  A UD sender never learns
 * what the receiver made of its datagram.
 */
static int responder_recv(PvrdmaCore *c, PvrdmaQP *dqp, PvrdmaReq *req,
                          bool with_data)
{
    int st = responder_recv_msg(c, dqp, req, with_data);

    return dqp->type != PVRDMA_QPT_RC ? PVRDMA_WC_SUCCESS : st;
}

/* Resolve the remote range of an RDMA/atomic request at the responder. */
int pvrdma_resp_remote(PvrdmaCore *c, PvrdmaQP *dqp, uint32_t rkey,
                       uint64_t va, uint64_t len, uint32_t access,
                       PvrdmaSg *sg)
{
    PvrdmaMR *mr = pvrdma_mr_by_key(c, rkey);

    if (!qp_access(dqp, access) || !mr || mr->pd != dqp->pd ||
        !(mr->access & access) ||
        !pvrdma_mr_resolve(c, mr, va, len,
                           access != PVRDMA_ACCESS_REMOTE_READ, sg)) {
        PVRDMA_GUEST_ERR(c, "rkey 0x%x addr 0x%" PRIx64 " len %" PRIu64
                         " refused for QP %u", rkey, va, len, dqp->qpn);
        pvrdma_sg_release(c, sg);
        /* a remote access error is fatal for the responder's QP too */
        pvrdma_qp_fail(c, dqp, PVRDMA_EVENT_QP_ACCESS_ERR);
        return PVRDMA_WC_REM_ACCESS_ERR;
    }
    return PVRDMA_WC_SUCCESS;
}

int pvrdma_resp_atomic(PvrdmaCore *c, PvrdmaQP *dqp, const PvrdmaReq *req,
                       uint64_t *orig)
{
    PvrdmaSg rem = { 0 };
    uint64_t *p, old;
    int st;

    if (req->remote_addr & 7) {
        PVRDMA_GUEST_ERR(c, "atomic at unaligned 0x%" PRIx64 " for QP %u",
                         req->remote_addr, dqp->qpn);
        pvrdma_qp_fail(c, dqp, PVRDMA_EVENT_QP_ACCESS_ERR);
        return PVRDMA_WC_REM_ACCESS_ERR;
    }
    st = pvrdma_resp_remote(c, dqp, req->rkey, req->remote_addr, 8,
                            PVRDMA_ACCESS_REMOTE_ATOMIC, &rem);
    if (st != PVRDMA_WC_SUCCESS) {
        return st;
    }
    if (rem.n != 1 || rem.iov[0].len != 8) {
        pvrdma_sg_release(c, &rem);
        pvrdma_qp_fail(c, dqp, PVRDMA_EVENT_QP_ACCESS_ERR);
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
    rem.iov[0].written = true;
    pvrdma_sg_release(c, &rem);
    *orig = old;
    return PVRDMA_WC_SUCCESS;
}

void pvrdma_resp_comm_est(PvrdmaCore *c, PvrdmaQP *dqp)
{
    if (dqp->state == PVRDMA_QPS_RTR && !dqp->comm_est) {
        /* first message while in RTR: the connection is established */
        dqp->comm_est = true;
        pvrdma_post_async(c, PVRDMA_EVENT_COMM_EST, dqp->handle);
    }
}

bool pvrdma_ud_accepts(PvrdmaCore *c, uint32_t dest_qpn, uint32_t qkey)
{
    PvrdmaQP *dqp = pvrdma_qp_by_qpn(c, dest_qpn);

    return dqp && dqp->type != PVRDMA_QPT_RC &&
           dqp->state >= PVRDMA_QPS_RTR && dqp->state <= PVRDMA_QPS_SQE &&
           dqp->attr.qkey == qkey;
}

/* The first piece of a message in pieces (PvrdmaReq.msg_len) */
static bool seg_first(const PvrdmaReq *req)
{
    return !req->seg_off;
}

/* The last piece, or a message in one piece */
static bool seg_last(const PvrdmaReq *req)
{
    return !req->msg_len || req->seg_off + req->local.len == req->msg_len;
}

/*
 * A SEND in pieces: the first takes the receive (dqp->seg_rx keeps it
 * from run to run), each places its bytes, the last completes it.
 */
static int responder_recv_seg(PvrdmaCore *c, PvrdmaQP *dqp, PvrdmaReq *req)
{
    int st;

    if (seg_first(req)) {
        if (dqp->seg_rx && dqp->seg_from != req->src_qpn) {
            return PVRDMA_TRANSPORT_RNR;  /* another QP's message half-way */
        }
        if (dqp->seg_rx) {
            pvrdma_recv_abort(dqp->seg_rx);     /* ours, started again */
            dqp->seg_rx = NULL;
        }
        st = pvrdma_recv_begin(c, dqp, &dqp->seg_rx, &req->local,
                               req->local.len);
        dqp->seg_from = req->src_qpn;
    } else if (!dqp->seg_rx || dqp->seg_from != req->src_qpn) {
        /* the receive went with a reset of dqp */
        return PVRDMA_WC_REM_OP_ERR;
    } else {
        st = pvrdma_recv_data(c, dqp, dqp->seg_rx, &req->local,
                              req->local.len);
        if (st != PVRDMA_WC_SUCCESS) {
            dqp->seg_rx = NULL;         /* freed with its error CQE */
        }
    }
    if (st == PVRDMA_WC_SUCCESS && seg_last(req)) {
        st = pvrdma_recv_end(c, dqp, dqp->seg_rx, req, req->msg_len);
        dqp->seg_rx = NULL;
    }
    return st;
}

/*
 * The whole remote range of a WRITE or READ in pieces, checked with its
 * first piece (as rxe checks the range with a message's first packet).
 */
static int remote_range_ok(PvrdmaCore *c, PvrdmaQP *dqp, PvrdmaReq *req,
                           uint32_t access)
{
    PvrdmaSg rem = { 0 };
    int st;

    if (!req->msg_len || !seg_first(req)) {
        return PVRDMA_WC_SUCCESS;
    }
    st = pvrdma_resp_remote(c, dqp, req->rkey, req->remote_addr,
                            req->msg_len, access, &rem);
    pvrdma_sg_release(c, &rem);
    return st;
}

/*
 * RDMA WRITE (with immediate: it takes a receive WQE too, checked before
 * the first piece and taken with the last).  In pieces, each writes its
 * part of the remote range.
 */
static int responder_write(PvrdmaCore *c, PvrdmaQP *dqp, PvrdmaReq *req)
{
    PvrdmaSg rem = { 0 };
    uint64_t len = req->local.len;
    bool imm = req->opcode == PVRDMA_WR_RDMA_WRITE_WITH_IMM;
    int st = PVRDMA_WC_SUCCESS;
    PvrdmaRecvWqe w;
    PvrdmaRing *r;
    uint32_t max_sge;
    bool bad;

    if (imm && (seg_first(req) || seg_last(req)) &&
        !recv_peek(c, dqp, &w, &r, &max_sge, &bad)) {
        if (bad) {
            pvrdma_qp_fail(c, dqp, PVRDMA_EVENT_QP_FATAL);
            return PVRDMA_WC_REM_OP_ERR;
        }
        return PVRDMA_TRANSPORT_RNR;
    }
    st = remote_range_ok(c, dqp, req, PVRDMA_ACCESS_REMOTE_WRITE);
    if (st == PVRDMA_WC_SUCCESS && len) {
        st = pvrdma_resp_remote(c, dqp, req->rkey,
                                req->remote_addr + req->seg_off, len,
                                PVRDMA_ACCESS_REMOTE_WRITE, &rem);
    }
    if (st != PVRDMA_WC_SUCCESS) {
        return st;
    }
    pvrdma_sg_copy(&rem, 0, &req->local, 0, len);
    pvrdma_sg_release(c, &rem);
    if (imm && seg_last(req)) {
        st = responder_recv(c, dqp, req, false);
    }
    return st;
}

/* RDMA READ: the remote range into the requester's scatter list */
static int responder_read(PvrdmaCore *c, PvrdmaQP *dqp, PvrdmaReq *req)
{
    PvrdmaSg rem = { 0 };
    uint64_t len = req->local.len;
    int st = remote_range_ok(c, dqp, req, PVRDMA_ACCESS_REMOTE_READ);

    if (st == PVRDMA_WC_SUCCESS && len) {
        st = pvrdma_resp_remote(c, dqp, req->rkey,
                                req->remote_addr + req->seg_off, len,
                                PVRDMA_ACCESS_REMOTE_READ, &rem);
    }
    if (st != PVRDMA_WC_SUCCESS) {
        return st;
    }
    pvrdma_sg_copy(&req->local, 0, &rem, 0, len);
    pvrdma_sg_release(c, &rem);
    return PVRDMA_WC_SUCCESS;
}

/* Compare-and-swap or fetch-and-add: the original value goes back */
static int responder_atomic(PvrdmaCore *c, PvrdmaQP *dqp, PvrdmaReq *req)
{
    uint64_t old;
    PvrdmaSg os = { .iov = &(PvrdmaIov) { (uint8_t *)&old, 8 },
                    .n = 1, .len = 8 };
    int st;

    st = pvrdma_resp_atomic(c, dqp, req, &old);
    if (st == PVRDMA_WC_SUCCESS) {
        pvrdma_sg_copy(&req->local, 0, &os, 0, 8);
    }
    return st;
}

int pvrdma_responder(PvrdmaCore *c, PvrdmaReq *req)
{
    PvrdmaQP *dqp = pvrdma_qp_by_qpn(c, req->dest_qpn);

    if (req->qp_type != PVRDMA_QPT_RC) {
        /* UD/GSI: anything that does not match is silently dropped */
        if (!pvrdma_ud_accepts(c, req->dest_qpn, req->qkey)) {
            trace_pvrdma_ud_drop(req->dest_qpn);
            return PVRDMA_WC_SUCCESS;
        }
        return responder_recv(c, dqp, req, true);
    }
    if (!dqp || dqp->type != PVRDMA_QPT_RC || dqp->state < PVRDMA_QPS_RTR ||
        dqp->state > PVRDMA_QPS_SQE) {
        return PVRDMA_TRANSPORT_NO_RESPONDER;
    }
    pvrdma_resp_comm_est(c, dqp);
    switch (req->opcode) {
    case PVRDMA_WR_SEND:
    case PVRDMA_WR_SEND_WITH_IMM:
    case PVRDMA_WR_SEND_WITH_INV:
        if (req->msg_len) {
            return responder_recv_seg(c, dqp, req);
        }
        return responder_recv(c, dqp, req, true);
    case PVRDMA_WR_RDMA_WRITE:
    case PVRDMA_WR_RDMA_WRITE_WITH_IMM:
        return responder_write(c, dqp, req);
    case PVRDMA_WR_RDMA_READ:
        return responder_read(c, dqp, req);
    case PVRDMA_WR_ATOMIC_CMP_AND_SWP:
    case PVRDMA_WR_ATOMIC_FETCH_AND_ADD:
        return responder_atomic(c, dqp, req);
    default:
        return PVRDMA_WC_REM_INV_REQ_ERR;
    }
}
