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
#ifndef PVRDMA_STANDALONE
#include "qemu/osdep.h"
#endif
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/rdma_backend.h"
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
            pvrdma_qp_fail(c, dqp, PVRDMA_EVENT_QP_FATAL);
            return ud ? PVRDMA_WC_SUCCESS : PVRDMA_WC_REM_OP_ERR;
        }
        return ud ? PVRDMA_WC_SUCCESS : PVRDMA_TRANSPORT_RNR;
    }
    recv_consume(c, dqp, r);
    if (!w.sge_ok) {
        PVRDMA_GUEST_ERR(c, "recv WQE with %u sges (max %u)", w.hdr.num_sge,
                         max_sge);
        st = PVRDMA_WC_LOC_LEN_ERR;
    } else {
        st = pvrdma_resolve_sges(c, dqp->pd, w.sge, w.hdr.num_sge, true,
                                 &sink);
    }
    if (st == PVRDMA_WC_SUCCESS && with_data &&
        sink.len < grh + req->local.len) {
        st = PVRDMA_WC_LOC_LEN_ERR;
    }
    if (st != PVRDMA_WC_SUCCESS) {
        pvrdma_recv_cqe(c, dqp, &w, st, PVRDMA_WC_RECV, 0, req, 0, false);
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
            pvrdma_recv_cqe(c, dqp, &w, PVRDMA_WC_REM_INV_REQ_ERR, opcode, 0,
                            req, 0, false);
            pvrdma_qp_to_error(c, dqp);
            return PVRDMA_WC_REM_INV_REQ_ERR;
        }
        mr->valid = false;
        flags |= PVRDMA_WC_WITH_INVALIDATE;
    }
    flags |= PVRDMA_WC_WITH_NETWORK_HDR_TYPE | PVRDMA_WC_WITH_SMAC;
    pvrdma_recv_cqe(c, dqp, &w, PVRDMA_WC_SUCCESS, opcode,
                    with_data ? grh + req->local.len : req->local.len, req,
                    flags, req->send_flags & PVRDMA_SEND_SOLICITED);
    return PVRDMA_WC_SUCCESS;
}

/* Resolve the remote range of an RDMA/atomic request at the responder. */
static PvrdmaMR *remote_mr(PvrdmaCore *c, PvrdmaQP *dqp, PvrdmaReq *req,
                           uint32_t access, uint64_t len, PvrdmaSg *sg)
{
    PvrdmaMR *mr = pvrdma_mr_by_key(c, req->rkey);

    if (!qp_access(dqp, access) || !mr || mr->pd != dqp->pd ||
        !(mr->access & access) ||
        !pvrdma_mr_resolve(c, mr, req->remote_addr, len,
                           access != PVRDMA_ACCESS_REMOTE_READ, sg)) {
        PVRDMA_GUEST_ERR(c, "rkey 0x%x addr 0x%" PRIx64 " len %" PRIu64
                         " refused for QP %u", req->rkey, req->remote_addr,
                         len, dqp->qpn);
        pvrdma_sg_release(c, sg);
        /* a remote access error is fatal for the responder's QP too */
        pvrdma_qp_fail(c, dqp, PVRDMA_EVENT_QP_ACCESS_ERR);
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
                pvrdma_qp_fail(c, dqp, PVRDMA_EVENT_QP_FATAL);
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
            pvrdma_qp_fail(c, dqp, PVRDMA_EVENT_QP_ACCESS_ERR);
            return PVRDMA_WC_REM_ACCESS_ERR;
        }
        if (!remote_mr(c, dqp, req, PVRDMA_ACCESS_REMOTE_ATOMIC, 8, &rem)) {
            return PVRDMA_WC_REM_ACCESS_ERR;
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
