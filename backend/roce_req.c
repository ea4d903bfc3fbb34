/*
 * pvrdma RoCEv2 transport, the requester (as Linux rxe's rxe_req.c): an
 * RC request from execute() becomes a RoceWqe with its PSNs;
 * roce_req_push() sends what the window, max_rd_atomic and fences allow,
 * packet by packet, reading the data through the guest's SGEs each time;
 * going back to a PSN (roce_req_rewind()), asking a READ or atomic again,
 * the local ACK timer.  A request whose buffer is gone is marked
 * (RoceWqe.local_err) for the completer (roce_comp.c), which calls the
 * requester and completes every request, in order.  See roce.c for the
 * transport as a whole, roce_int.h for what its files share.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "roce_int.h"

const char *roce_probe_name(RoceProbe s)
{
    static const char *const name[] = {
        [ROCE_PROBE_GO] = "GO",
        [ROCE_PROBE_DUE] = "PROBE",
        [ROCE_PROBE_SENT] = "PROBE_SENT",
    };

    return (unsigned)s < G_N_ELEMENTS(name) ? name[s] : "?";
}

void roce_set_probe(RoceQp *q, RoceProbe to)
{
    if (q->probe != to) {
        trace_pvrdma_roce_state(q->qpn, "requester",
                                roce_probe_name(q->probe),
                                roce_probe_name(to));
        q->probe = to;
    }
}

static bool req_is_send(uint32_t op)
{
    return op == PVRDMA_WR_SEND || op == PVRDMA_WR_SEND_WITH_IMM ||
           op == PVRDMA_WR_SEND_WITH_INV;
}

static uint32_t wqe_npkts(const RoceWqe *w, uint32_t mtu)
{
    return w->len ? (uint32_t)((w->len + mtu - 1) / mtu) : 1;
}

static uint8_t send_opcode(const RoceWqe *w, uint32_t k, uint32_t n)
{
    bool first = k == 0, last = k + 1 == n;

    if (req_is_send(w->opcode)) {
        if (first && last) {
            return w->opcode == PVRDMA_WR_SEND_WITH_IMM ?
                   ROCE_RC_SEND_ONLY_WITH_IMMEDIATE :
                   w->opcode == PVRDMA_WR_SEND_WITH_INV ?
                   ROCE_RC_SEND_ONLY_WITH_INVALIDATE : ROCE_RC_SEND_ONLY;
        }
        if (last) {
            return w->opcode == PVRDMA_WR_SEND_WITH_IMM ?
                   ROCE_RC_SEND_LAST_WITH_IMMEDIATE :
                   w->opcode == PVRDMA_WR_SEND_WITH_INV ?
                   ROCE_RC_SEND_LAST_WITH_INVALIDATE : ROCE_RC_SEND_LAST;
        }
        return first ? ROCE_RC_SEND_FIRST : ROCE_RC_SEND_MIDDLE;
    }
    /* RDMA WRITE */
    if (first && last) {
        return w->opcode == PVRDMA_WR_RDMA_WRITE_WITH_IMM ?
               ROCE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE :
               ROCE_RC_RDMA_WRITE_ONLY;
    }
    if (last) {
        return w->opcode == PVRDMA_WR_RDMA_WRITE_WITH_IMM ?
               ROCE_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE :
               ROCE_RC_RDMA_WRITE_LAST;
    }
    return first ? ROCE_RC_RDMA_WRITE_FIRST : ROCE_RC_RDMA_WRITE_MIDDLE;
}

/* Read [off, off + len) of w's local buffer into buf; a WC status. */
static int wqe_read(RoceTransport *t, RoceWqe *w, uint64_t off,
                    uint8_t *buf, uint32_t len)
{
    PvrdmaCore *c = t->t.core;
    PvrdmaSg sg = { 0 };
    PvrdmaSg dst = { .iov = &(PvrdmaIov) { buf, len }, .n = 1, .len = len };
    int st;

    if (!len) {
        return PVRDMA_WC_SUCCESS;
    }
    if (w->copy) {
        memcpy(buf, w->copy + off, len);
        return PVRDMA_WC_SUCCESS;
    }
    if (w == t->exec_wqe) {
        /* sent at once: what the core's requester resolved */
        if (t->exec_local->len < off + len) {
            return PVRDMA_WC_LOC_PROT_ERR;
        }
        pvrdma_sg_copy(&dst, 0, t->exec_local, off, len);
        return PVRDMA_WC_SUCCESS;
    }
    st = pvrdma_transport_resolve(c, w->pd, w->sge, w->num_sge, false, &sg);
    if (st == PVRDMA_WC_SUCCESS && sg.len < off + len) {
        st = PVRDMA_WC_LOC_PROT_ERR;    /* an MR changed under it */
    }
    if (st == PVRDMA_WC_SUCCESS) {
        pvrdma_sg_copy(&dst, 0, &sg, off, len);
    }
    pvrdma_sg_release(c, &sg);
    return st;
}

void roce_wqe_free(RoceWqe *w)
{
    g_free(w->copy);
    g_free(w->resp_ahead);
    g_free(w);
}

void roce_qp_drop_requests(RoceQp *q)
{
    RoceWqe *w;

    while ((w = g_queue_pop_head(&q->wqes))) {
        roce_wqe_free(w);
    }
    q->cur = NULL;
    q->rto_deadline = 0;
    q->rnr_deadline = 0;
    roce_set_probe(q, ROCE_PROBE_GO);
    q->rto_shift = q->rto_floor;
}

/* READs and atomics asked for and not answered yet. */
static uint32_t req_rd_out(RoceQp *q)
{
    uint32_t n = 0;

    for (GList *l = q->wqes.head; l; l = l->next) {
        RoceWqe *w = l->data;

        n += w->rd_atomic && w->sent && !w->resp_done;
    }
    return n;
}

/* The next PSN of w the responder has not answered (READ, atomic). */
uint32_t roce_wqe_next_resp(RoceQp *q, RoceWqe *w)
{
    return w->opcode == PVRDMA_WR_RDMA_READ ?
           psn_add(w->first_psn, (uint32_t)(w->resp_off / w->mtu)) :
           w->first_psn;
}

/* Go back to psn: the next packet sent is the one with that PSN. */
void roce_req_rewind(RoceQp *q, uint32_t psn)
{
    for (GList *l = q->wqes.head; l; l = l->next) {
        RoceWqe *w = l->data;

        if (psn_cmp(psn, w->first_psn) >= 0 &&
            psn_cmp(psn, psn_add(w->first_psn, w->npsn)) < 0) {
            q->cur = l;
            q->cur_pkt = (psn - w->first_psn) & PSN_MASK;
            /* READs and atomics from here on are asked again if need be */
            for (GList *m = l; m; m = m->next) {
                ((RoceWqe *)m->data)->sent = false;
            }
            q->psn = psn;
            q->noack = 0;
            return;
        }
    }
    /* no request holds psn: nothing to send again, nowhere to go back */
}

/*
 * The answer to a probe acknowledged packets sent before the timer fired:
 * they were not lost, the timer was early (a slow path), so go on after
 * the last PSN sent instead of sending again what is on its way (as TCP's
 * F-RTO).  A packet of those that was lost after all gets a sequence NAK
 * or the timer.  Not past a READ or atomic: those are asked again.
 */
void roce_req_skip_sent(RoceQp *q)
{
    for (GList *l = q->cur; l; l = l->next) {
        RoceWqe *w = l->data;

        if (psn_cmp(q->max_psn, psn_add(w->first_psn, w->npsn)) < 0) {
            if (!w->rd_atomic && psn_cmp(q->max_psn, w->first_psn) > 0) {
                q->cur = l;
                q->cur_pkt = psn_sub(q->max_psn, w->first_psn);
                q->psn = q->max_psn;
            }
            return;
        }
        if (w->rd_atomic) {
            return;
        }
        q->cur = l->next;
        q->cur_pkt = 0;
        q->psn = psn_add(w->first_psn, w->npsn);
    }
}

void roce_req_arm_rto(RoceQp *q)
{
    int64_t rto = pvrdma_ack_timeout_ms(q->qp) << q->rto_shift;

    q->rto_deadline = rto && q->wqes.length &&
                      psn_cmp(q->max_psn, q->una) > 0 ?
                      roce_now_ms(q->t) + rto : 0;
    roce_arm(q->t, q->rto_deadline);
}

/*
 * Send packet k of w; false if its data could not be read (w failed).  A
 * READ asks from packet k for read_len bytes (0: the rest of it).
 */
static bool req_send_pkt_len(RoceQp *q, RoceWqe *w, uint32_t k,
                             uint64_t read_len)
{
    RoceTransport *t = q->t;
    uint32_t mtu = w->mtu, n = wqe_npkts(w, mtu);
    uint32_t psn = psn_add(w->first_psn, k);
    RocePkt p;
    bool retx = psn_cmp(psn, q->max_psn) < 0;

    if (w->opcode == PVRDMA_WR_RDMA_READ) {
        uint64_t off = (uint64_t)k * mtu;

        roce_rc_pkt(q, &p, ROCE_RC_RDMA_READ_REQUEST, psn);
        p.reth.va = w->remote_addr + off;
        p.reth.rkey = w->rkey;
        p.reth.len = read_len ? MIN(read_len, w->len - off) : w->len - off;
        p.ack_req = true;
    } else if (pvrdma_wr_is_atomic(w->opcode)) {
        roce_rc_pkt(q, &p, w->opcode == PVRDMA_WR_ATOMIC_CMP_AND_SWP ?
                    ROCE_RC_COMPARE_SWAP : ROCE_RC_FETCH_ADD, psn);
        p.atmeth.va = w->remote_addr;
        p.atmeth.rkey = w->rkey;
        if (w->opcode == PVRDMA_WR_ATOMIC_CMP_AND_SWP) {
            p.atmeth.swap_add = w->swap;
            p.atmeth.compare = w->compare_add;
        } else {
            p.atmeth.swap_add = w->compare_add;
        }
        p.ack_req = true;
    } else {
        uint64_t off = (uint64_t)k * mtu;
        uint32_t len = MIN(mtu, w->len - off);

        if (wqe_read(t, w, off, t->data, len) != PVRDMA_WC_SUCCESS) {
            /* fails now, in order, once everything before it is done */
            return false;
        }
        roce_rc_pkt(q, &p, send_opcode(w, k, n), psn);
        if (k == 0 && !req_is_send(w->opcode)) {
            p.reth.va = w->remote_addr;
            p.reth.rkey = w->rkey;
            p.reth.len = w->len;
        }
        p.imm = imm_to_wire(w->imm);
        p.ieth_rkey = w->imm;
        p.payload = t->data;
        p.payload_len = len;
        /* AckReq also on the packet that fills the window */
        p.ack_req = k + 1 == n || ++q->noack >= ROCE_ACKREQ_EVERY ||
                    q->probe != ROCE_PROBE_GO ||
                    psn_sub(psn_add(psn, 1), q->una) >= roce_cwnd(q);
        p.se = k + 1 == n && (w->send_flags & PVRDMA_SEND_SOLICITED) &&
               (req_is_send(w->opcode) ||
                w->opcode == PVRDMA_WR_RDMA_WRITE_WITH_IMM);
    }
    if (p.ack_req) {
        q->noack = 0;
    }
    if (retx) {
        t->st.retransmits++;
        q->st.retransmits++;
    }
    if (psn_cmp(psn_add(psn, w->rd_atomic ? w->npsn - k : 1),
                q->max_psn) > 0) {
        q->max_psn = psn_add(psn, w->rd_atomic ? w->npsn - k : 1);
    }
    roce_pkt_send(t, q, &p);
    return true;
}

/*
 * Ask again for what is missing of READ or atomic w (its response lost):
 * that request only, not everything after it; once per missing PSN until
 * the timer decides otherwise.
 */
/*
 * What a READ asked again from packet k asks for: the packets missing up
 * to the first that came ahead of its turn (kept: roce_comp_read_resp()),
 * in bytes; 0, the rest of it, when none did.  The responder replays what
 * it is asked for (IBA lets a READ be asked again for a part of it; rxe
 * takes "the same or a subset"), not the whole rest each time.
 */
static uint64_t req_read_gap(const RoceWqe *w, uint32_t k)
{
    uint32_t n = wqe_npkts(w, w->mtu), end = k + 1;

    if (w->opcode != PVRDMA_WR_RDMA_READ || !w->resp_ahead) {
        return 0;
    }
    while (end < n && !roce_wqe_ahead(w, end)) {
        end++;
    }
    return end < n ? (uint64_t)(end - k) * w->mtu : 0;
}

bool roce_req_read_gap(const RoceWqe *w)
{
    return req_read_gap(w, (uint32_t)(w->resp_off / w->mtu)) != 0;
}

void roce_req_reask(RoceQp *q, RoceWqe *w, const char *why)
{
    uint32_t psn = roce_wqe_next_resp(q, w);
    uint32_t k = psn_sub(psn, w->first_psn);

    if (w->reasked && w->reask_psn == psn) {
        return;
    }
    trace_pvrdma_roce_req(q->qpn, why, psn);
    w->reasked = true;
    w->reask_psn = psn;
    req_send_pkt_len(q, w, k, req_read_gap(w, k));
    roce_req_arm_rto(q);
}

/* A fenced request waits for the READs and atomics before it. */
static bool req_fenced(RoceQp *q, GList *l)
{
    RoceWqe *w = l->data;

    if (!(w->send_flags & PVRDMA_SEND_FENCE)) {
        return false;
    }
    for (GList *m = q->wqes.head; m && m != l; m = m->next) {
        if (((RoceWqe *)m->data)->rd_atomic) {
            return true;
        }
    }
    return false;
}

/* Send what the window allows. */
void roce_req_push(RoceQp *q)
{
    uint32_t budget = q->probe != ROCE_PROBE_GO ? 1 : ROCE_REQ_BUDGET;
    uint32_t max_rd = MAX(q->qp->attr.max_rd_atomic, 1);
    bool sent = false;

    if (q->qp->state != PVRDMA_QPS_RTS && q->qp->state != PVRDMA_QPS_SQD) {
        return;
    }
    if (q->rnr_deadline) {
        return;     /* waiting out an RNR NAK */
    }
    if (q->probe == ROCE_PROBE_SENT) {
        return;     /* the probe first (roce_req_timers) */
    }
    while (q->cur && budget) {
        RoceWqe *w = q->cur->data;
        uint32_t n = w->rd_atomic ? 1 : wqe_npkts(w, w->mtu);

        if (psn_cmp(psn_add(q->psn, w->rd_atomic ? w->npsn : 1),
                    psn_add(q->una, roce_cwnd(q))) > 0 &&
            psn_cmp(q->psn, q->una) > 0) {
            break;      /* window full (a lone big READ still goes) */
        }
        if (q->cur_pkt == 0 && req_fenced(q, q->cur)) {
            break;      /* sent when they complete */
        }
        if (w->rd_atomic) {
            if (!w->resp_done) {
                uint32_t k = MAX(q->cur_pkt,
                                 (psn_sub(roce_wqe_next_resp(q, w),
                                          w->first_psn)));

                if (req_rd_out(q) >= max_rd) {
                    break;
                }
                w->sent = true;
                req_send_pkt_len(q, w, k, req_read_gap(w, k));
                budget--;
                sent = true;
            }
            q->psn = psn_add(w->first_psn, w->npsn);
        } else {
            if (!req_send_pkt_len(q, w, q->cur_pkt, 0)) {
                /*
                 * The local buffer is gone: the completer fails it when it
                 * is the head (in order), now if it is (as rxe's requester
                 * hands a failed WQE to its completer).
                 */
                w->local_err = true;
                if (g_queue_peek_head(&q->wqes) == w) {
                    pvrdma_transport_timer(q->t->t.core, 0);
                }
                break;
            }
            budget--;
            sent = true;
            q->psn = psn_add(w->first_psn, q->cur_pkt + 1);
            if (++q->cur_pkt < n) {
                continue;
            }
        }
        q->cur_pkt = 0;
        q->cur = q->cur->next;
    }
    if (sent && q->probe == ROCE_PROBE_DUE) {
        roce_set_probe(q, ROCE_PROBE_SENT);
    }
    if (sent && !q->rto_deadline) {
        roce_req_arm_rto(q);
    }
    if (q->cur && !budget && q->probe == ROCE_PROBE_GO) {
        pvrdma_transport_timer(q->t->t.core, 0);    /* more next turn */
    }
}

int roce_execute_rc(RoceTransport *t, RoceQp *q, PvrdmaReq *req)
{
    uint32_t mtu = pvrdma_qp_mtu(q->qp);
    RoceWqe *w = g_new0(RoceWqe, 1);

    if (!q->req_init) {
        q->req_init = true;
        q->psn = q->una = q->max_psn = q->ack_psn = q->next_psn =
            q->qp->attr.sq_psn & PSN_MASK;
        q->retry_left = q->qp->attr.retry_cnt;
        q->rnr_left = q->qp->attr.rnr_retry;
    }
    w->cookie = req->cookie;
    w->opcode = req->opcode;
    w->send_flags = req->send_flags;
    w->len = req->local.len;
    w->remote_addr = req->remote_addr;
    w->rkey = req->rkey;
    w->imm = req->imm;
    w->compare_add = req->compare_add;
    w->swap = req->swap;
    w->pd = req->pd;
    w->num_sge = MIN(req->num_sge, PVRDMA_HARD_MAX_SGE);
    memcpy(w->sge, req->sge, w->num_sge * sizeof(w->sge[0]));
    w->rd_atomic = w->opcode == PVRDMA_WR_RDMA_READ ||
                   pvrdma_wr_is_atomic(w->opcode);
    if (!w->rd_atomic && w->len && w->len <= ROCE_SMALL_COPY &&
        !(w->send_flags & PVRDMA_SEND_FENCE)) {
        /*
         * Small: keep a copy (inline sends may reuse their buffer).  Not
         * when fenced: it may send what an earlier READ brings.
         */
        PvrdmaSg dst;

        w->copy = g_malloc(w->len);
        dst = (PvrdmaSg) { .iov = &(PvrdmaIov) { w->copy, w->len }, .n = 1,
                           .len = w->len };
        pvrdma_sg_copy(&dst, 0, &req->local, 0, w->len);
    }
    /* a later MTU change (RTS to RTS) does not cut posted requests again */
    w->mtu = mtu;
    w->npsn = pvrdma_qp_npsn(q->qp, w->opcode, w->len);
    if (w->npsn > ROCE_WINDOW * 16384) {
        /* half the PSN space would make PSNs ambiguous */
        roce_wqe_free(w);
        return PVRDMA_WC_LOC_LEN_ERR;
    }
    /* PSNs are given out now, in order */
    w->first_psn = q->next_psn;
    q->next_psn = psn_add(q->next_psn, w->npsn);
    g_queue_push_tail(&q->wqes, w);
    if (!q->cur) {
        /* everything before it was sent (the cursor may lag behind) */
        q->cur = q->wqes.tail;
        q->cur_pkt = 0;
        q->psn = w->first_psn;
    }
    t->exec_wqe = w;
    t->exec_local = &req->local;
    roce_req_push(q);
    t->exec_wqe = NULL;
    t->exec_local = NULL;
    return PVRDMA_TRANSPORT_PENDING;
}
