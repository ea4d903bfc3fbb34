/*
 * pvrdma: the QP state machine.  Looking a QP up by handle or QP number,
 * the allowed transitions and the attributes each one needs, MODIFY_QP
 * (checks, then a queue transport's own QP, then the new attributes, the
 * transport at RTR and what entering a state does), and the move to the
 * error state after a failed WQE, a remote error or a fatal guest error
 * (with an async event), also when a transport reports one.  The IBA timing
 * and segmentation of a QP: local ACK timeout, retry window, RNR deadline,
 * path MTU, PSNs of a request.
 *
 * A QP's life: CREATE_QP (its rings in guest pages, or an SRQ), MODIFY_QP,
 * QUERY_QP, DESTROY_QP.
 *
 * Not here: flushing the queues of a QP in error (pvrdma_comp.c, from the
 * run loop); the send and receive engines (pvrdma_req.c, pvrdma_resp.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_transport_calls.h"
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
    /* not on queue transports: the owner itself receives for those */
    return qp && !pvrdma_qp_on_queue_transport(qp) ? qp : NULL;
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
void pvrdma_seg_drop_sent(PvrdmaCore *c, PvrdmaQP *qp)
{
    PvrdmaQP *dqp;

    if (!qp->seg_off) {
        return;
    }
    qp->seg_off = 0;
    dqp = pvrdma_qp_by_qpn(c, qp->attr.dest_qp_num);
    if (dqp) {
        pvrdma_transport_seg_drop(c, dqp->qpn, qp->qpn);
    }
}

void pvrdma_transport_seg_drop(PvrdmaCore *c, uint32_t dest_qpn,
                               uint32_t src_qpn)
{
    PvrdmaQP *dqp = pvrdma_qp_by_qpn(c, dest_qpn);

    if (dqp && dqp->seg_rx && dqp->seg_from == src_qpn) {
        pvrdma_recv_free(dqp->seg_rx);
        dqp->seg_rx = NULL;
    }
}

void pvrdma_seg_drop(PvrdmaCore *c, PvrdmaQP *qp)
{
    pvrdma_seg_drop_sent(c, qp);
    pvrdma_recv_free(qp->seg_rx);
    qp->seg_rx = NULL;
}

static void qp_entered_error(PvrdmaCore *c, PvrdmaQP *qp)
{
    pvrdma_seg_drop(c, qp);     /* the flush completes its head WQE */
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
    if (pvrdma_qp_on_queue_transport(qp)) {
        pvrdma_queue_qp_error(c, qp);
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
    pvrdma_transport_detach(c, qp);
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

/* An attribute MODIFY_QP sets is out of range */
static bool attr_out_of_range(PvrdmaCore *c, const PvrdmaQP *qp,
                              uint32_t mask, const struct pvrdma_qp_attr *a)
{
    return ((mask & PVRDMA_QP_PORT) && a->port_num != 1) ||
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
          a->cap.max_inline_data));
}

/* MODIFY_QP's checks: the mask, the transition, the attributes it needs */
static int modify_check(PvrdmaCore *c, PvrdmaQP *qp, uint32_t mask,
                        const struct pvrdma_qp_attr *a, uint8_t cur,
                        uint8_t next)
{
    uint32_t req;

    if (mask & ~PVRDMA_QP_ATTR_MASK_ALL) {
        return CMD_ERR(c, EINVAL, "MODIFY_QP %u: unknown mask bits 0x%x",
                       qp->qpn, mask);
    }
    if ((mask & PVRDMA_QP_STATE) && a->qp_state > PVRDMA_QPS_ERR) {
        return CMD_ERR(c, EINVAL, "MODIFY_QP %u: bad state %u", qp->qpn,
                       a->qp_state);
    }
    if ((mask & PVRDMA_QP_CUR_STATE) && a->cur_qp_state != cur) {
        return CMD_ERR(c, EINVAL, "MODIFY_QP %u: current state %u, not %u",
                       qp->qpn, cur, a->cur_qp_state);
    }
    if ((mask & PVRDMA_QP_STATE) && !transition_ok(cur, next)) {
        return CMD_ERR(c, EINVAL, "MODIFY_QP %u: %u -> %u not allowed",
                       qp->qpn, cur, next);
    }
    req = required_attrs(qp->type, cur, next);
    if ((mask & req) != req) {
        return CMD_ERR(c, EINVAL,
                       "MODIFY_QP %u: %u -> %u misses attributes 0x%x",
                       qp->qpn, cur, next, req & ~mask);
    }
    if (attr_out_of_range(c, qp, mask, a)) {
        return CMD_ERR(c, EINVAL,
                       "MODIFY_QP %u: attribute out of range (mask 0x%x)",
                       qp->qpn, mask);
    }
    return 0;
}

/*
 * The host device first: at RTR it may take the QP (then it is on a queue
 * transport); a queue transport's QP, or the twin of one the core serves,
 * changes there before the core's copy.  *a may become fixed
 * (fixed_rq_psn).  Returns 0 or the error the owner gave, as a positive
 * errno.
 */
static int modify_on_owner(PvrdmaCore *c, PvrdmaQP *qp, uint32_t mask,
                           const struct pvrdma_qp_attr **a,
                           struct pvrdma_qp_attr *fixed, uint8_t next,
                           bool rtr)
{
    bool owner_rtr = false;

    if (rtr && qp->twin && !qp->tp &&
        pvrdma_transport_choose(c, qp, (*a)->ah_attr.grh.dgid.raw) ==
        c->owner) {
        pvrdma_owner_qp_take(c, qp);    /* the host device carries it */
        owner_rtr = true;
    }
    /*
     * The twin follows the QP while it has no transport (RESET, INIT) and
     * back to RESET; past that only if the owner is its transport.
     */
    if (pvrdma_qp_on_queue_transport(qp) ||
        (qp->twin && ((!qp->tp && !rtr) || next == PVRDMA_QPS_RESET))) {
        int err;

        if (pvrdma_qp_on_queue_transport(qp) && (mask & PVRDMA_QP_RQ_PSN)) {
            *a = fixed_rq_psn(c, qp, mask, *a, fixed);
        }
        err = pvrdma_owner_qp_modify(c, qp, mask, *a);
        if (err) {
            if (owner_rtr) {
                pvrdma_owner_qp_reset(c, qp);
            }
            return -err;
        }
    }
    return 0;
}

/* The attributes in mask take their new values */
static void modify_set_attrs(PvrdmaQP *qp, uint32_t mask,
                             const struct pvrdma_qp_attr *a)
{
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
}

/* A queue transport's QP entered next on the host device */
static void queue_transport_entered(PvrdmaCore *c, PvrdmaQP *qp, uint8_t next)
{
    qp->state = next;
    if (next == PVRDMA_QPS_RESET) {
        qp->sq.priv = qp->rq.priv = 0;
        qp->queue_sq_blocked = qp->queue_rq_blocked = false;
        pvrdma_owner_qp_reset(c, qp);
    }
    /* WQEs the guest posted before the host QP could take them */
    pvrdma_queue_post_rq(c, qp);
    pvrdma_queue_post_sq(c, qp);
}

/* What entering next from cur does to a QP the core serves */
static void qp_entered(PvrdmaCore *c, PvrdmaQP *qp, uint8_t cur, uint8_t next)
{
    if (next == PVRDMA_QPS_RESET && cur != PVRDMA_QPS_RESET) {
        /* the command waited for it (pvrdma_cmd_modify_qp()) */
        pvrdma_qp_fence(c, qp->qpn, 0);
        pvrdma_seg_drop(c, qp);
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
}

int pvrdma_qp_modify(PvrdmaCore *c, PvrdmaQP *qp, uint32_t mask,
                     const struct pvrdma_qp_attr *a)
{
    uint8_t cur = qp->state;
    uint8_t next = (mask & PVRDMA_QP_STATE) ? a->qp_state : cur;
    struct pvrdma_qp_attr fixed, old;
    bool rtr;
    int err;

    err = modify_check(c, qp, mask, a, cur, next);
    if (err) {
        return err;
    }
    rtr = cur == PVRDMA_QPS_INIT && next == PVRDMA_QPS_RTR;
    err = modify_on_owner(c, qp, mask, &a, &fixed, next, rtr);
    if (err) {
        return err;
    }
    old = qp->attr;
    modify_set_attrs(qp, mask, a);

    if (rtr) {
        err = pvrdma_transport_attach(c, qp);
        if (err) {
            qp->attr = old;     /* the transport refused the QP */
            return err;
        }
    }
    trace_pvrdma_qp_state(qp->qpn, cur, next);
    if (pvrdma_qp_on_queue_transport(qp)) {
        queue_transport_entered(c, qp, next);
        return 0;
    }
    qp_entered(c, qp, cur, next);
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

    if (pvrdma_wr_is_atomic(opcode) || !len) {
        return 1;
    }
    return (uint32_t)MIN((len + mtu - 1) / mtu, UINT32_MAX);
}

void pvrdma_qp_count_psns(PvrdmaQP *qp, bool requester, uint32_t npsn)
{
    uint32_t *psn = requester ? &qp->attr.sq_psn : &qp->attr.rq_psn;

    if (qp->type == PVRDMA_QPT_RC) {
        *psn = (*psn + npsn) & 0xffffff;
    }
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
        if (!pvrdma_qp_on_queue_transport(qp)) {
            pvrdma_qp_fail(c, qp, type);    /* the core flushes its queues */
            return;
        }
        qp->state = PVRDMA_QPS_ERR;         /* the owner flushes its own */
        qp->events++;
    }
    pvrdma_post_async(c, type, handle);
}

/* A QP's life: CREATE_QP, MODIFY_QP, QUERY_QP, DESTROY_QP */

/* CREATE_QP's checks of the objects it names and of its queues' sizes */
static int create_qp_check(PvrdmaCore *c, const struct pvrdma_cmd_create_qp *m,
                           const PvrdmaCQ *scq, const PvrdmaCQ *rcq,
                           uint32_t ctx, PvrdmaSRQ **srq)
{
    if (ctx == UINT32_MAX) {
        return CMD_ERR(c, EINVAL, "CREATE_QP: bad PD %u", m->pd_handle);
    }
    if (!scq || !rcq || scq->ctx != ctx || rcq->ctx != ctx) {
        return CMD_ERR(c, EINVAL, "CREATE_QP: bad CQs %u/%u",
                       m->send_cq_handle, m->recv_cq_handle);
    }
    if (m->qp_type != PVRDMA_QPT_RC && m->qp_type != PVRDMA_QPT_UD &&
        m->qp_type != PVRDMA_QPT_GSI) {
        return CMD_ERR(c, EOPNOTSUPP, "CREATE_QP: type %u", m->qp_type);
    }
    if (m->qp_type == PVRDMA_QPT_GSI && pvrdma_qp_get(c, PVRDMA_GSI_QPN)) {
        return CMD_ERR(c, EBUSY, "CREATE_QP: GSI QP exists");
    }
    if (m->is_srq > 1) {
        return CMD_ERR(c, EINVAL, "CREATE_QP: is_srq %u", m->is_srq);
    }
    if (m->is_srq) {
        *srq = pvrdma_table_get(&c->srq, m->srq_handle);
        if (!*srq || (*srq)->pd != m->pd_handle) {
            return CMD_ERR(c, EINVAL, "CREATE_QP: bad SRQ %u", m->srq_handle);
        }
    }
    if (!pvrdma_is_pow2(m->max_send_wr) || m->max_send_wr > c->lim.max_qp_wr ||
        m->max_send_sge < 1 || m->max_send_sge > c->lim.max_sge) {
        return CMD_ERR(c, EINVAL, "CREATE_QP: bad send queue %u x %u sge",
                       m->max_send_wr, m->max_send_sge);
    }
    if (!m->is_srq &&
        (!pvrdma_is_pow2(m->max_recv_wr) || m->max_recv_wr > c->lim.max_qp_wr ||
         m->max_recv_sge < 1 || m->max_recv_sge > c->lim.max_sge)) {
        return CMD_ERR(c, EINVAL, "CREATE_QP: bad receive queue %u x %u sge",
                       m->max_recv_wr, m->max_recv_sge);
    }
    if (m->max_inline_data) {
        return CMD_ERR(c, EINVAL, "CREATE_QP: inline data not supported");
    }
    return 0;
}

/* CREATE_QP's checks of its pages; the WQE strides of its rings */
static int create_qp_check_pages(PvrdmaCore *c,
                                 const struct pvrdma_cmd_create_qp *m,
                                 uint32_t *sq_stride, uint32_t *rq_stride)
{
    uint32_t rq_pages;

    /* page 0 ring state | send_chunks SQ pages | the rest RQ pages */
    if (m->send_chunks < 1 || m->total_chunks <= m->send_chunks) {
        return CMD_ERR(c, EINVAL, "CREATE_QP: bad chunks %u/%u",
                       m->send_chunks, m->total_chunks);
    }
    rq_pages = m->total_chunks - 1 - m->send_chunks;
    *sq_stride = pvrdma_wqe_stride(sizeof(struct pvrdma_sq_wqe_hdr),
                                   m->max_send_sge);
    if (!m->is_srq) {
        *rq_stride = pvrdma_wqe_stride(sizeof(struct pvrdma_rq_wqe_hdr),
                                       m->max_recv_sge);
    }
    /* no more pages than the rings need (plus one of slack) */
    if (m->send_chunks > pvrdma_ring_pages(m->max_send_wr, *sq_stride) + 1 ||
        (!m->is_srq &&
         rq_pages > pvrdma_ring_pages(m->max_recv_wr, *rq_stride) + 1)) {
        return CMD_ERR(c, EINVAL, "CREATE_QP: %u/%u pages exceed the rings",
                       m->send_chunks, rq_pages);
    }
    if (m->is_srq ? rq_pages != 0 : rq_pages == 0) {
        return CMD_ERR(c, EINVAL, "CREATE_QP: %u receive pages with is_srq %u",
                       rq_pages, m->is_srq);
    }
    return 0;
}

/* A new QP with its rings in the guest pages of the page directory */
static int create_qp_rings(PvrdmaCore *c, const struct pvrdma_cmd_create_qp *m,
                           uint32_t sq_stride, uint32_t rq_stride,
                           PvrdmaQP **qpp)
{
    uint64_t *pages;
    PvrdmaQP *qp;

    if (!pvrdma_pdir_read(c, m->pdir_dma, m->total_chunks, &pages)) {
        return CMD_ERR(c, EFAULT, "CREATE_QP: page directory unusable");
    }
    qp = g_new0(PvrdmaQP, 1);
    if (!pvrdma_ring_init(c, &qp->sq, "sq", pages, 1 + m->send_chunks, 1, 0,
                          m->max_send_wr, sq_stride) ||
        (!m->is_srq &&
         !pvrdma_ring_init(c, &qp->rq, "rq", pages, m->total_chunks,
                           1 + m->send_chunks, 0, m->max_recv_wr, rq_stride))) {
        pvrdma_ring_free(c, &qp->sq);
        g_free(pages);
        g_free(qp);
        return CMD_ERR(c, EINVAL, "CREATE_QP: rings unusable");
    }
    if (!m->is_srq) {
        /* the RQ's ring state lives in page 0, after the SQ's */
        qp->rq.state = (struct pvrdma_ring *)qp->sq.page[0] + 1;
    }
    g_free(pages);
    *qpp = qp;
    return 0;
}

/* The new QP's handle (QP number too); UINT32_MAX if none is free */
static uint32_t create_qp_handle(PvrdmaCore *c,
                                 const struct pvrdma_cmd_create_qp *m,
                                 PvrdmaQP *qp)
{
    if (m->qp_type == PVRDMA_QPT_GSI) {
        /* QP 1: a handle the table reserves, free (checked above) */
        return pvrdma_table_insert(&c->qp, PVRDMA_GSI_QPN, qp) ?
               PVRDMA_GSI_QPN : UINT32_MAX;
    }
    return pvrdma_table_alloc(&c->qp, qp);
}

/* The new QP as CREATE_QP asked for it, in RESET */
static void create_qp_init(PvrdmaQP *qp, const struct pvrdma_cmd_create_qp *m,
                           uint32_t h)
{
    qp->handle = qp->qpn = h;
    qp->slot = g_new0(PvrdmaSendSlot, m->max_send_wr);
    qp->type = m->qp_type;
    qp->state = PVRDMA_QPS_RESET;
    qp->sq_sig_all = m->sq_sig_all;
    qp->is_srq = m->is_srq;
    qp->pd = m->pd_handle;
    qp->scq = m->send_cq_handle;
    qp->rcq = m->recv_cq_handle;
    qp->srq = m->is_srq ? m->srq_handle : 0;
    qp->max_send_wr = m->max_send_wr;
    qp->max_send_sge = m->max_send_sge;
    qp->max_recv_wr = m->is_srq ? 0 : m->max_recv_wr;
    qp->max_recv_sge = m->is_srq ? 0 : m->max_recv_sge;
    qp->attr.path_mtu = PVRDMA_MTU_1024;
    qp->attr.port_num = 1;
    qp->attr.cap = (struct pvrdma_qp_cap) {
        qp->max_send_wr, qp->max_recv_wr, qp->max_send_sge,
        qp->max_recv_sge, 0, 0
    };
}

/* CREATE_QP's response, in the layout of the guest's device version */
static void create_qp_resp(PvrdmaCore *c, const PvrdmaQP *qp,
                           union pvrdma_cmd_resp *rsp)
{
    if (c->version >= PVRDMA_QPHANDLE_VERSION) {
        struct pvrdma_cmd_create_qp_resp_v2 *r = &rsp->create_qp_resp_v2;

        r->qpn = qp->qpn;
        r->qp_handle = qp->handle;
        r->max_send_wr = qp->max_send_wr;
        r->max_recv_wr = qp->max_recv_wr;
        r->max_send_sge = qp->max_send_sge;
        r->max_recv_sge = qp->max_recv_sge;
        r->max_inline_data = 0;
    } else {
        struct pvrdma_cmd_create_qp_resp *r = &rsp->create_qp_resp;

        r->qpn = qp->qpn;
        r->max_send_wr = qp->max_send_wr;
        r->max_recv_wr = qp->max_recv_wr;
        r->max_send_sge = qp->max_send_sge;
        r->max_recv_sge = qp->max_recv_sge;
        r->max_inline_data = 0;
    }
}

int pvrdma_cmd_create_qp(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                         union pvrdma_cmd_resp *rsp)
{
    const struct pvrdma_cmd_create_qp *m = &req->create_qp;
    PvrdmaCQ *scq = pvrdma_table_get(&c->cq, m->send_cq_handle);
    PvrdmaCQ *rcq = pvrdma_table_get(&c->cq, m->recv_cq_handle);
    PvrdmaSRQ *srq = NULL;
    uint32_t ctx = pvrdma_ctx_of_pd(c, m->pd_handle);
    uint32_t sq_stride = 0, rq_stride = 0, h;
    PvrdmaQP *qp = NULL;
    int err;

    err = create_qp_check(c, m, scq, rcq, ctx, &srq);
    if (err) {
        return err;
    }
    err = create_qp_check_pages(c, m, &sq_stride, &rq_stride);
    if (err) {
        return err;
    }
    err = create_qp_rings(c, m, sq_stride, rq_stride, &qp);
    if (err) {
        return err;
    }
    h = create_qp_handle(c, m, qp);
    if (h == UINT32_MAX) {
        pvrdma_ring_free(c, &qp->sq);
        pvrdma_ring_free(c, &qp->rq);
        g_free(qp);
        return CMD_ERR(c, ENOMEM, "CREATE_QP: out of QPs");
    }
    create_qp_init(qp, m, h);
    /* the GSI QP stays with the device: the host's QP1 is the kernel's */
    err = pvrdma_owner_qp_create(c, qp);
    if (err) {
        pvrdma_table_remove(&c->qp, h);
        pvrdma_ring_free(c, &qp->sq);
        pvrdma_ring_free(c, &qp->rq);
        g_free(qp->slot);
        g_free(qp);
        return CMD_ERR(c, -err, "CREATE_QP: host device: %s",
                       strerror(-err));
    }
    scq->refs++;
    rcq->refs++;
    if (srq) {
        srq->refs++;
    }
    pvrdma_pd_ref(c, qp->pd, 1);

    create_qp_resp(c, qp, rsp);
    trace_pvrdma_create_qp(h, qp->type, qp->max_send_wr, qp->max_recv_wr,
                           qp->is_srq);
    return 0;
}

void pvrdma_qp_free(PvrdmaCore *c, PvrdmaQP *qp)
{
    PvrdmaCQ *scq = pvrdma_table_get(&c->cq, qp->scq);
    PvrdmaCQ *rcq = pvrdma_table_get(&c->cq, qp->rcq);
    PvrdmaSRQ *srq = qp->is_srq ? pvrdma_table_get(&c->srq, qp->srq) : NULL;

    if (scq) {
        scq->refs--;
    }
    if (rcq) {
        rcq->refs--;
    }
    if (srq) {
        srq->refs--;
    }
    pvrdma_pd_ref(c, qp->pd, -1);
    pvrdma_run_remove(c, qp);
    pvrdma_seg_drop(c, qp);
    pvrdma_table_remove(&c->qp, qp->handle);
    if (!pvrdma_qp_on_queue_transport(qp)) {
        pvrdma_qp_gone(c, qp->qpn);
    }
    pvrdma_transport_detach(c, qp);
    pvrdma_owner_qp_destroy(c, qp);
    pvrdma_qp_set_rnr_wait(c, qp, false);
    pvrdma_qp_hold(c, qp, 0);
    pvrdma_ring_free(c, &qp->sq);
    pvrdma_ring_free(c, &qp->rq);
    g_free(qp->slot);
    g_free(qp);
}

int pvrdma_cmd_modify_qp(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                         union pvrdma_cmd_resp *rsp)
{
    const struct pvrdma_cmd_modify_qp *m = &req->modify_qp;
    PvrdmaQP *qp = pvrdma_qp_get(c, m->qp_handle);

    if (!qp) {
        return CMD_ERR(c, EINVAL, "MODIFY_QP: bad handle %u", m->qp_handle);
    }
    /*
     * To RESET: the guest may reuse the WQEs' memory once it has the
     * response, which waits for the fence (the vCPU does not).
     */
    if ((m->attr_mask & PVRDMA_QP_STATE) &&
        m->attrs.qp_state == PVRDMA_QPS_RESET &&
        qp->state != PVRDMA_QPS_RESET && !pvrdma_qp_on_queue_transport(qp)) {
        int err = modify_check(c, qp, m->attr_mask, &m->attrs, qp->state,
                               PVRDMA_QPS_RESET);

        if (err) {
            return err;
        }
        if (!pvrdma_cmd_fence(c, qp->qpn)) {
            return PVRDMA_CMD_WAIT;
        }
    }
    return pvrdma_qp_modify(c, qp, m->attr_mask, &m->attrs);
}

int pvrdma_cmd_query_qp(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                        union pvrdma_cmd_resp *rsp)
{
    PvrdmaQP *qp = pvrdma_qp_get(c, req->query_qp.qp_handle);

    if (!qp) {
        return CMD_ERR(c, EINVAL, "QUERY_QP: bad handle %u",
                       req->query_qp.qp_handle);
    }
    if (pvrdma_qp_on_queue_transport(qp)) {
        int st = pvrdma_owner_qp_state(c, qp);

        if (st >= 0) {
            qp->state = st;
        }
    }
    rsp->query_qp_resp.attrs = qp->attr;
    rsp->query_qp_resp.attrs.qp_state = qp->state;
    rsp->query_qp_resp.attrs.cur_qp_state = qp->state;
    return 0;
}

int pvrdma_cmd_destroy_qp(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                          union pvrdma_cmd_resp *rsp)
{
    uint32_t h = req->destroy_qp.qp_handle;
    PvrdmaQP *qp = pvrdma_qp_get(c, h);

    if (!qp) {
        return CMD_ERR(c, EINVAL, "DESTROY_QP: bad handle %u", h);
    }
    /* the driver frees the memory once ERR is read: no later response */
    pvrdma_qp_fence(c, qp->qpn, PVRDMA_FENCE_MS);
    rsp->destroy_qp_resp.events_reported = qp->events;
    pvrdma_qp_free(c, qp);
    trace_pvrdma_destroy_qp(h);
    return 0;
}
