/*
 * pvrdma: the QP state machine.  Looking a QP up by handle or QP number,
 * the allowed transitions and the attributes each one needs, MODIFY_QP
 * (checks, then a queue path's own QP, then the new attributes, the path
 * at RTR and what entering a state does), and the move to the error state
 * after a failed WQE, a remote error or a fatal guest error (with an async
 * event), also when a transport reports one.  The IBA timing and
 * segmentation of a QP: local ACK timeout, retry window, RNR deadline,
 * path MTU, PSNs of a request.
 *
 * Not here: creating and destroying QPs (pvrdma_cmd.c); flushing the queues
 * of a QP in error (pvrdma_comp.c, from the run loop); the send and
 * receive engines (pvrdma_req.c, pvrdma_resp.c).
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
    return pvrdma_table_get(&c->qp, handle);    /* the GSI QP included */
}

PvrdmaQP *pvrdma_qp_by_qpn(PvrdmaCore *c, uint32_t qpn)
{
    PvrdmaQP *qp;

    if (c->owner && qpn != PVRDMA_GSI_QPN) {
        /* the guest knows the owner's QP numbers */
        qp = g_hash_table_lookup(c->owner_qpns, GUINT_TO_POINTER(qpn));
    } else {
        qp = pvrdma_qp_get(c, qpn);     /* QPNs double as handles */
    }
    /* not queue paths: the owner itself receives for those */
    return qp && !pvrdma_qp_queue_path(qp) ? qp : NULL;
}

/*
 * A QP fails for a reason no completion reports: tell the guest with an
 * async event (QP_FATAL, QP_ACCESS_ERR, ...) and move the QP to error.
 */
void pvrdma_qp_fail(PvrdmaCore *c, PvrdmaQP *qp, uint32_t event)
{
    if (qp->state != PVRDMA_QPS_ERR) {
        qp->events++;
        pvrdma_post_async(c, event, qp->handle);
    }
    pvrdma_qp_to_error(c, qp);
}

/* The QP just entered the error state. */
static void qp_entered_error(PvrdmaCore *c, PvrdmaQP *qp)
{
    pvrdma_qp_set_rnr_wait(c, qp, false);
    pvrdma_qp_hold(c, qp, 0);   /* the flush completes a held WQE */
    /*
     * Transports learn it from the run loop (pvrdma_serve_sq): this may run
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
    if (pvrdma_qp_queue_path(qp)) {
        pvrdma_hca_qp_error(c, qp);
        return;
    }
    if (qp->state != PVRDMA_QPS_ERR) {
        trace_pvrdma_qp_state(qp->qpn, qp->state, PVRDMA_QPS_ERR);
        qp->state = PVRDMA_QPS_ERR;
        qp_entered_error(c, qp);
    }
    pvrdma_qp_schedule(c, qp);  /* flush from the run loop */
}

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
    pvrdma_qp_hold(c, qp, 0);
    memset(qp->slot, 0, sizeof(*qp->slot) * qp->sq.nelems);
    qp->gone_pending = false;
    pvrdma_qp_gone(c, qp->qpn);
    pvrdma_path_detach(c, qp);
}

/*
 * A QP whose connection a transport made for the guest (the host rdma_cm
 * translator) receives from the PSN that transport announced, not the one
 * the guest's CM did.
 */
static const struct pvrdma_qp_attr *
fixed_rq_psn(PvrdmaCore *c, PvrdmaQP *qp, uint32_t mask,
             const struct pvrdma_qp_attr *a, struct pvrdma_qp_attr *fixed)
{
    uint32_t dest = (mask & PVRDMA_QP_DEST_QPN) ? a->dest_qp_num :
                    qp->attr.dest_qp_num;
    const uint8_t *dgid = (mask & PVRDMA_QP_AV) ? a->ah_attr.grh.dgid.raw :
                          qp->attr.ah_attr.grh.dgid.raw;
    uint32_t psn;

    if (!pvrdma_transports_rq_psn(c, qp->qpn, dest, dgid, &psn)) {
        return a;
    }
    *fixed = *a;
    fixed->rq_psn = psn;
    return fixed;
}

int pvrdma_qp_modify(PvrdmaCore *c, PvrdmaQP *qp, uint32_t mask,
                     const struct pvrdma_qp_attr *a)
{
    uint8_t cur = qp->state;
    uint8_t next = (mask & PVRDMA_QP_STATE) ? a->qp_state : cur;
    struct pvrdma_qp_attr fixed, old;
    bool rtr, owner_rtr = false;
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

    rtr = cur == PVRDMA_QPS_INIT && next == PVRDMA_QPS_RTR;
    if (rtr && qp->hw && !qp->path &&
        pvrdma_path_choose(c, qp, a->ah_attr.grh.dgid.raw) == c->owner) {
        pvrdma_owner_qp_take(c, qp);    /* the host device carries it */
        owner_rtr = true;
    }
    /*
     * The twin follows the QP while it has no path (RESET, INIT) and back
     * to RESET; past that only if the owner is its path.
     */
    if (pvrdma_qp_queue_path(qp) ||
        (qp->hw && ((!qp->path && !rtr) || next == PVRDMA_QPS_RESET))) {
        int err;

        if (pvrdma_qp_queue_path(qp) && (mask & PVRDMA_QP_RQ_PSN)) {
            a = fixed_rq_psn(c, qp, mask, a, &fixed);
        }
        err = c->owner->ops->qp_modify(c->owner, qp, mask, a);
        if (err) {
            if (owner_rtr) {
                pvrdma_owner_qp_reset(c, qp);
            }
            return -err;
        }
    }
    old = qp->attr;

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

    if (rtr) {
        int err = pvrdma_path_attach(c, qp);

        if (err) {
            qp->attr = old;     /* the path refused the QP */
            return err;
        }
    }
    trace_pvrdma_qp_state(qp->qpn, cur, next);
    if (pvrdma_qp_queue_path(qp)) {
        qp->state = next;
        if (next == PVRDMA_QPS_RESET) {
            qp->sq.priv = qp->rq.priv = 0;
            qp->hca_sq_blocked = qp->hca_rq_blocked = false;
            pvrdma_owner_qp_reset(c, qp);
        }
        /* WQEs the guest posted before the host QP could take them */
        pvrdma_hca_post_rq(c, qp);
        pvrdma_hca_post_sq(c, qp);
        return 0;
    }
    if (next == PVRDMA_QPS_RESET && cur != PVRDMA_QPS_RESET) {
        pvrdma_qp_fence(c, qp->qpn);    /* the guest may reuse its buffers */
    }
    if (next == PVRDMA_QPS_ERR && cur != PVRDMA_QPS_ERR) {
        qp_entered_error(c, qp);
    }
    if (next == PVRDMA_QPS_RESET || next == PVRDMA_QPS_INIT) {
        qp->comm_est = false;
    }
    qp->state = next;
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

/* IBA timing and segmentation of a QP */

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

/*
 * When a send that met RNR gives up (ms; 0: never): rnr_retry 7 retries
 * forever, else (1 + rnr_retry) waits of the responder's min_rnr_timer.
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

/* An async event from a transport (the object owner's host device). */
void pvrdma_transport_event(PvrdmaCore *c, uint32_t type, uint32_t handle)
{
    if (type == PVRDMA_EVENT_QP_FATAL || type == PVRDMA_EVENT_QP_REQ_ERR ||
        type == PVRDMA_EVENT_QP_ACCESS_ERR) {
        PvrdmaQP *qp = pvrdma_qp_get(c, handle);

        if (!qp) {
            return;
        }
        if (!pvrdma_qp_queue_path(qp)) {
            pvrdma_qp_fail(c, qp, type);    /* the core flushes its queues */
            return;
        }
        qp->state = PVRDMA_QPS_ERR;         /* the owner flushes its own */
        qp->events++;
    }
    pvrdma_post_async(c, type, handle);
}
