/*
 * pvrdma RoCEv2 transport, the completer (as Linux rxe's rxe_comp.c):
 * ACKs, NAKs, READ responses and atomic ACKs to the requester's requests,
 * the data written into their buffers, the requests completed in order;
 * the local ACK timeout with its probe and the end of an RNR wait
 * (roce_req_timers()); the requester's failures (RoceWqe.local_err).  It
 * drives the requester (roce_req.c: go back, send on).  See roce.c for the
 * transport as a whole, roce_int.h for what its files share.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "roce_int.h"

/* IBA 9.7.5.2.8: RNR NAK timer codes in microseconds */
static const uint32_t rnr_us[32] = {
    655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
    1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960,
    61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

/* Write a READ response or atomic result into w's local buffer. */
static int wqe_write(RoceTransport *t, RoceWqe *w, uint64_t off,
                     const uint8_t *buf, uint32_t len)
{
    PvrdmaCore *c = t->t.core;
    PvrdmaSg sg = { 0 };
    PvrdmaSg src = { .iov = &(PvrdmaIov) { (uint8_t *)buf, len }, .n = 1,
                     .len = len };
    int st;

    if (!len) {
        return PVRDMA_WC_SUCCESS;
    }
    st = pvrdma_transport_resolve(c, w->pd, w->sge, w->num_sge, true, &sg);
    if (st == PVRDMA_WC_SUCCESS && sg.len < off + len) {
        st = PVRDMA_WC_LOC_PROT_ERR;
    }
    if (st == PVRDMA_WC_SUCCESS) {
        pvrdma_sg_copy(&sg, off, &src, 0, len);
    }
    pvrdma_sg_release(c, &sg);
    return st;
}

/* The request at the head finished: complete it (in order) and free it. */
void roce_comp_head(RoceQp *q, int status)
{
    RoceWqe *w = g_queue_peek_head(&q->wqes);
    PvrdmaWc wc = { .qp = q->qp->handle, .is_send = true,
                    .cookie = w->cookie, .status = status };

    trace_pvrdma_roce_comp(q->qpn, status == PVRDMA_WC_SUCCESS ?
                           "complete" : "complete with error",
                           w->first_psn);
    if (q->cur && q->cur->data == w) {
        q->cur = q->cur->next;
        q->cur_pkt = 0;
    }
    g_queue_pop_head(&q->wqes);
    if (psn_cmp(psn_add(w->first_psn, w->npsn), q->ack_psn) > 0) {
        q->ack_psn = psn_add(w->first_psn, w->npsn);
    }
    roce_wqe_free(w);
    if (status != PVRDMA_WC_SUCCESS) {
        /* the core moves the QP to error and flushes what follows */
        roce_qp_drop_requests(q);
    }
    pvrdma_complete(q->t->t.core, &wc);
}

/*
 * Complete what is done, in order: SENDs and WRITEs the responder has
 * acknowledged (every PSN before ack_psn), READs and atomics whose whole
 * response came.  Then una: the oldest PSN not known to be answered.
 */
static void comp_drain(RoceQp *q)
{
    RoceWqe *w;

    while ((w = g_queue_peek_head(&q->wqes))) {
        if (w->local_err) {
            roce_comp_head(q, PVRDMA_WC_LOC_PROT_ERR);  /* drops the rest */
            break;
        }
        if (w->rd_atomic ? !w->resp_done :
            psn_cmp(psn_add(w->first_psn, w->npsn), q->ack_psn) > 0 ||
            psn_cmp(w->first_psn, q->max_psn) >= 0) {
            break;
        }
        roce_comp_head(q, PVRDMA_WC_SUCCESS);
    }
    w = g_queue_peek_head(&q->wqes);
    if (w && w->rd_atomic &&
        psn_cmp(q->ack_psn, roce_wqe_next_resp(q, w)) > 0) {
        q->una = roce_wqe_next_resp(q, w);
    } else if (w && psn_cmp(q->ack_psn, w->first_psn) < 0) {
        q->una = w->first_psn;
    } else {
        q->una = q->ack_psn;
    }
    if (psn_cmp(q->una, q->psn) > 0) {
        roce_req_rewind(q, q->una);      /* answered past a go-back-N */
    }
}

/*
 * The congestion window (RoceQp.cwnd), as TCP's (RFC 5681) in packets: a
 * loss that a sequence NAK reports halves it, a timeout takes it down to
 * the probe's one packet; acknowledged packets open it again, fast below
 * ssthresh, then by one packet per window.  Go-back-N sends again all it
 * had in flight after a loss, so on a path whose queue overflows (a
 * loaded host, a slow switch) a full window of 128 packets per loss only
 * adds to the queue: the answers to the probes then come after the timer
 * fired again, up to the retry limit (the 5 % soak with 1 MiB messages:
 * RETRY_EXC_ERR between two pvrdma devices; the switch lost 15 % of the
 * frames on its full queues on top of the 5 % it was asked to).
 */
static void comp_cwnd_open(RoceQp *q, uint32_t acked)
{
    uint32_t ss = q->ssthresh ? q->ssthresh : ROCE_WINDOW;
    uint32_t cwnd = roce_cwnd(q);

    if (cwnd >= ROCE_WINDOW) {
        return;
    }
    if (cwnd < ss) {
        cwnd = MIN(cwnd + acked, ss);
    } else {
        q->cwnd_acc += acked;
        while (q->cwnd_acc >= cwnd && cwnd < ROCE_WINDOW) {
            q->cwnd_acc -= cwnd;
            cwnd++;
        }
    }
    q->cwnd = MIN(cwnd, ROCE_WINDOW);
}

static void comp_cwnd_cut(RoceQp *q, bool timeout, const char *why)
{
    if (timeout && q->probe == ROCE_PROBE_GO) {
        /* the first expiry: what to give back if it was early */
        q->cwnd_undo = roce_cwnd(q);
        q->ssthresh_undo = q->ssthresh;
    }
    q->ssthresh = MAX(roce_cwnd(q) / 2, ROCE_CWND_MIN);
    q->cwnd = timeout ? 1 : q->ssthresh;
    q->cwnd_acc = 0;
    trace_pvrdma_roce_cwnd(q->qpn, why, q->cwnd, q->ssthresh);
}

/*
 * The answer to the probe acknowledged packets sent before the timer
 * fired: they were on their way, nothing was lost (a stalled path, a
 * loaded host), so the window the timeout took is given back (as TCP's
 * F-RTO, RFC 5682, undoes a spurious timeout's cut).  Without it a path
 * that stalls for longer than the QP's timeout kept the window at one or
 * two packets, each waiting out a stall: 100 exchanges of 1 MiB on the
 * unit soak's stalling wire took 12141 s of fake time instead of 270 s.
 */
static void comp_cwnd_undo(RoceQp *q)
{
    /*
     * And the timer is too short for this path: from now on it starts at
     * twice, then four times the QP's timeout (IBA lets it be up to 4x),
     * until a probe's answer shows an expiry that was right (a loss).
     */
    q->rto_floor = MIN(q->rto_floor + 1, 2);
    if (q->cwnd_undo) {
        q->cwnd = MAX(q->cwnd_undo, roce_cwnd(q));
        q->ssthresh = q->ssthresh_undo;
        q->cwnd_undo = 0;
        trace_pvrdma_roce_cwnd(q->qpn, "early timeout, given back",
                               q->cwnd, q->ssthresh);
    }
}

/* The responder has everything before psn (an ACK, a response). */
static void comp_acked(RoceQp *q, uint32_t psn)
{
    if (psn_cmp(psn, q->ack_psn) > 0 && psn_cmp(psn, q->max_psn) <= 0) {
        comp_cwnd_open(q, psn_sub(psn, q->ack_psn));
        q->ack_psn = psn;
    }
    comp_drain(q);
}

/*
 * An answer from the responder: a probe is answered (what follows may
 * go), and the timer restarts at the QP's timeout.
 */
static void comp_answered(RoceQp *q)
{
    roce_set_probe(q, ROCE_PROBE_GO);
    q->rto_shift = q->rto_floor;
    q->rto_deadline = 0;
    roce_req_arm_rto(q);
}

/* Progress: an answer, and the retry counters start again. */
static void comp_progress(RoceQp *q)
{
    q->retry_left = q->qp->attr.retry_cnt;
    q->rnr_left = q->qp->attr.rnr_retry;
    comp_answered(q);
}

static void comp_retry(RoceQp *q, uint32_t psn, const char *why)
{
    trace_pvrdma_roce_req(q->qpn, why, psn);
    roce_req_rewind(q, psn);
}

/* The sent READ or atomic whose PSNs hold psn; NULL if none. */
static RoceWqe *comp_find_rd(RoceQp *q, uint32_t psn)
{
    for (GList *l = q->wqes.head; l; l = l->next) {
        RoceWqe *w = l->data;

        if (psn_cmp(psn, w->first_psn) < 0) {
            break;
        }
        if (w->rd_atomic && w->sent &&
            psn_cmp(psn, psn_add(w->first_psn, w->npsn)) < 0) {
            return w;
        }
    }
    return NULL;
}

/* An ACK of every PSN up to psn. */
static void comp_pos_ack(RoceQp *q, uint32_t psn)
{
    bool progress = psn_cmp(psn_add(psn, 1), q->ack_psn) > 0;
    bool probed = q->probe == ROCE_PROBE_SENT;
    bool spurious = probed && psn_cmp(psn, q->probe_psn) > 0;
    RoceWqe *w;

    comp_acked(q, psn_add(psn, 1));
    if (q->seq_retry && psn_cmp(psn, q->seq_retry_psn) >= 0) {
        q->seq_retry = false;   /* the retransmission got through */
    }
    w = g_queue_peek_head(&q->wqes);
    if (w && w->rd_atomic && w->sent &&
        psn_cmp(psn, roce_wqe_next_resp(q, w)) >= 0) {
        /* acknowledged past a READ/atomic: its response was lost */
        roce_req_reask(q, w, "implied NAK");
    }
    if (progress) {
        comp_progress(q);
    }
    if (spurious) {
        comp_cwnd_undo(q);
    } else if (progress) {
        q->cwnd_undo = 0;       /* the timer was right: nothing to undo */
        if (probed) {
            q->rto_floor = 0;   /* ... and not too short */
        }
    }
    if (spurious && q->cur) {
        trace_pvrdma_roce_req(q->qpn, "early timeout, goes on from",
                              q->max_psn);
        roce_req_skip_sent(q);
    }
}

/* RNR NAK of psn (syndrome syn): wait its timer, or fail the request. */
static void comp_rnr_nak(RoceQp *q, uint32_t psn, uint8_t syn)
{
    comp_acked(q, psn);
    q->st.rnr_naks++;
    q->t->st.rnr_naks++;
    if (q->qp->attr.rnr_retry != 7 && q->rnr_left-- <= 0) {
        if (g_queue_peek_head(&q->wqes)) {
            roce_comp_head(q, PVRDMA_WC_RNR_RETRY_EXC_ERR);
        }
        return;
    }
    trace_pvrdma_roce_req(q->qpn, "RNR wait", psn);
    roce_set_probe(q, ROCE_PROBE_GO);
    roce_req_rewind(q, psn);
    q->rto_deadline = 0;
    q->rnr_deadline = roce_now_ms(q->t) +
        MAX(rnr_us[roce_aeth_value(syn)] / 1000, 1);
    roce_arm(q->t, q->rnr_deadline);
}

/*
 * NAK of psn (syndrome syn): a sequence NAK goes back (true: send on)
 * unless the retransmission on its way covers it; the others fail the
 * request (false).
 */
static bool comp_nak(RoceQp *q, uint32_t psn, uint8_t syn)
{
    bool progress = psn_cmp(psn, q->ack_psn) > 0;

    comp_acked(q, psn);
    switch (roce_aeth_value(syn)) {
    case ROCE_NAK_PSN_SEQ_ERR:
        q->st.seq_naks++;
        q->t->st.seq_naks++;
        if (q->seq_retry && psn_cmp(psn, q->seq_retry_psn) >= 0 &&
            psn_cmp(psn, q->psn) >= 0) {
            /*
             * Going back already, from this PSN or an older one, and not
             * yet past this one: the retransmission on its way covers it.
             */
            trace_pvrdma_roce_comp(q->qpn, "sequence NAK (retrying)",
                                   psn);
            return false;
        }
        /*
         * A NAK that acknowledges nothing new is a retry like an ACK
         * timeout (IBA's retry count covers both; rxe counts it too): a
         * responder that NAKs the same PSN for ever ends the request
         * with RETRY_EXC_ERR, not a retransmission loop.
         */
        if (!progress && q->retry_left-- <= 0) {
            trace_pvrdma_roce_req(q->qpn, "retries exhausted", psn);
            roce_comp_head(q, PVRDMA_WC_RETRY_EXC_ERR);
            return false;
        }
        q->seq_retry = true;
        q->seq_retry_psn = psn;
        comp_cwnd_cut(q, false, "sequence NAK");
        comp_retry(q, psn, "sequence NAK");
        if (progress) {
            comp_progress(q);
        } else {
            comp_answered(q);
        }
        return true;
    case ROCE_NAK_INVALID_REQUEST:
    case ROCE_NAK_INVALID_RD_REQUEST:
        if (g_queue_peek_head(&q->wqes)) {
            roce_comp_head(q, PVRDMA_WC_REM_INV_REQ_ERR);
        }
        return false;
    case ROCE_NAK_REMOTE_ACCESS:
        if (g_queue_peek_head(&q->wqes)) {
            roce_comp_head(q, PVRDMA_WC_REM_ACCESS_ERR);
        }
        return false;
    default:
        if (g_queue_peek_head(&q->wqes)) {
            roce_comp_head(q, PVRDMA_WC_REM_OP_ERR);
        }
        return false;
    }
}

void roce_comp_ack(RoceQp *q, const RocePkt *p)
{
    uint32_t psn = p->psn;
    uint8_t syn = p->aeth.syndrome;

    /* a PSN outside [ack_psn - 1, max_psn - 1] is stale or bogus */
    if (psn_cmp(psn, psn_add(q->ack_psn, PSN_MASK)) < 0 ||
        psn_cmp(psn, q->max_psn) >= 0) {
        trace_pvrdma_roce_comp(q->qpn, "stale ACK", psn);
        return;
    }
    if (roce_aeth_type(syn) != ROCE_AETH_ACK &&
        psn_cmp(psn, q->ack_psn) < 0) {
        /* a NAK names a PSN not acknowledged yet */
        trace_pvrdma_roce_comp(q->qpn, "stale NAK", psn);
        return;
    }
    switch (roce_aeth_type(syn)) {
    case ROCE_AETH_ACK:
        comp_pos_ack(q, psn);
        break;
    case ROCE_AETH_RNR_NAK:
        comp_rnr_nak(q, psn, syn);
        return;
    case ROCE_AETH_NAK:
        if (!comp_nak(q, psn, syn)) {
            return;
        }
        break;
    default:
        q->t->st.drops++;
        return;
    }
    roce_req_push(q);
}

/*
 * READ responses that come ahead of their turn are kept (written in place
 * and marked) for READs of up to this many packets; longer READs take
 * their responses in order only.
 */
#define ROCE_READ_AHEAD_MAX 16384

/* The failed READ w, after the requests before it (acknowledged). */
static void comp_read_fail(RoceQp *q, RoceWqe *w, int st)
{
    while (g_queue_peek_head(&q->wqes) != w) {
        roce_comp_head(q, PVRDMA_WC_SUCCESS);
    }
    roce_comp_head(q, st);
}

/*
 * A READ response, packet k = psn - first PSN of its READ.  Packet k
 * carries bytes [k * MTU, ...): a whole MTU but the READ's last packet,
 * which carries the rest and is a LAST or ONLY; a part asked again ends
 * in a LAST too, of a whole MTU.  In order, it goes on from resp_off, over
 * the packets that came ahead of it; ahead of its turn (a path that
 * reorders, or one before it lost), it is written in place and marked,
 * and the missing packets up to it are asked again (once per PSN).  Asked
 * from every gap for the whole rest, and taken in order only, four READs
 * of 1 MiB over a path that reorders every frame took 1.5 M response
 * packets for 4096 (/pvrdma/roce/rc-read-reordered).
 */
void roce_comp_read_resp(RoceQp *q, const RocePkt *p)
{
    RoceWqe *w = comp_find_rd(q, p->psn);
    uint32_t mtu, n, k, next;
    uint64_t off, want;
    bool last = p->opcode == ROCE_RC_RDMA_READ_RESPONSE_LAST ||
                p->opcode == ROCE_RC_RDMA_READ_RESPONSE_ONLY;
    int st;

    if (!w || w->opcode != PVRDMA_WR_RDMA_READ || w->resp_done) {
        trace_pvrdma_roce_comp(q->qpn, "unexpected READ response", p->psn);
        return;
    }
    mtu = w->mtu;
    n = w->len ? (uint32_t)((w->len + mtu - 1) / mtu) : 1;
    k = psn_sub(p->psn, w->first_psn);
    next = (uint32_t)(w->resp_off / mtu);
    if (k >= n) {
        trace_pvrdma_roce_comp(q->qpn, "unexpected READ response", p->psn);
        return;
    }
    /* a response means every request before its READ arrived */
    comp_acked(q, w->first_psn);
    if (k < next || roce_wqe_ahead(w, k)) {
        return;                 /* had it */
    }
    off = (uint64_t)k * mtu;
    want = MIN((uint64_t)mtu, w->len - off);
    if ((k + 1 == n && !last) || p->payload_len != want) {
        trace_pvrdma_roce_comp(q->qpn, "READ response length", p->psn);
        comp_read_fail(q, w, PVRDMA_WC_BAD_RESP_ERR);
        return;
    }
    if (k > next && (n > ROCE_READ_AHEAD_MAX || w->local_err)) {
        roce_req_reask(q, w, "READ response missing");
        return;
    }
    st = wqe_write(q->t, w, off, p->payload, p->payload_len);
    if (st != PVRDMA_WC_SUCCESS) {
        comp_read_fail(q, w, st);
        return;
    }
    if (k > next) {
        if (!w->resp_ahead) {
            w->resp_ahead = g_new0(unsigned long,
                                   (n + ROCE_AHEAD_BITS - 1) / ROCE_AHEAD_BITS);
        }
        w->resp_ahead[k / ROCE_AHEAD_BITS] |= 1ul << (k % ROCE_AHEAD_BITS);
        roce_req_reask(q, w, "READ response missing");
        comp_answered(q);
        return;
    }
    /* in order: on over what came ahead */
    do {
        w->resp_off += MIN((uint64_t)mtu, w->len - w->resp_off);
        next++;
    } while (next < n && roce_wqe_ahead(w, next));
    w->resp_done = next == n;
    if (!w->resp_done && roce_req_read_gap(w)) {
        /* the next gap, known by what came after it */
        roce_req_reask(q, w, "READ response missing");
    }
    comp_progress(q);
    comp_drain(q);
    roce_req_push(q);
}

void roce_comp_atomic_ack(RoceQp *q, const RocePkt *p)
{
    RoceWqe *w = comp_find_rd(q, p->psn);
    uint64_t orig = p->atmack;
    int st;

    if (!w || !pvrdma_wr_is_atomic(w->opcode) || w->resp_done) {
        trace_pvrdma_roce_comp(q->qpn, "unexpected atomic ACK", p->psn);
        return;
    }
    comp_acked(q, w->first_psn);
    st = wqe_write(q->t, w, 0, (const uint8_t *)&orig, 8);
    if (st != PVRDMA_WC_SUCCESS) {
        while (g_queue_peek_head(&q->wqes) != w) {
            roce_comp_head(q, PVRDMA_WC_SUCCESS);
        }
        roce_comp_head(q, st);
        return;
    }
    w->resp_done = true;
    comp_progress(q);
    comp_drain(q);
    roce_req_push(q);
}

/* Timers of q: local ACK timeout, end of an RNR wait. */
void roce_req_timers(RoceQp *q, int64_t now)
{
    RoceWqe *head = g_queue_peek_head(&q->wqes);

    if (q->qp->state == PVRDMA_QPS_ERR) {
        roce_qp_drop_requests(q);
        return;
    }
    if (head && head->local_err) {
        roce_comp_head(q, PVRDMA_WC_LOC_PROT_ERR);  /* roce_req_push() */
        return;
    }
    if (q->rnr_deadline && now >= q->rnr_deadline) {
        q->rnr_deadline = 0;
        trace_pvrdma_roce_req(q->qpn, "RNR retry", q->psn);
        roce_req_push(q);
        roce_req_arm_rto(q);
    }
    if (q->rto_deadline && now >= q->rto_deadline) {
        q->rto_deadline = 0;
        if (!q->wqes.length || psn_cmp(q->max_psn, q->una) <= 0) {
            return;
        }
        q->st.timeouts++;
        q->t->st.timeouts++;
        if (q->retry_left-- <= 0) {
            trace_pvrdma_roce_req(q->qpn, "retries exhausted", q->una);
            roce_comp_head(q, PVRDMA_WC_RETRY_EXC_ERR);
            return;
        }
        for (GList *l = q->wqes.head; l; l = l->next) {
            ((RoceWqe *)l->data)->reasked = false;
        }
        q->seq_retry = false;
        comp_cwnd_cut(q, true, "ACK timeout");
        comp_retry(q, q->una, "ACK timeout");
        /*
         * Ask before resending everything: the oldest packet alone, with
         * AckReq.  Its answer (an ACK of what the responder has, or a
         * NAK) says where to go on from; until then nothing else goes.
         * A timer that fired because the path is slow (a loaded host)
         * then costs one packet, not a window of them queued behind
         * those still on their way, whose answers would come after the
         * next expiry again, until the retries run out.  The timer
         * doubles, up to 4x (IBA allows the local ACK timeout to be up to
         * 4x the QP's value), until progress.
         */
        roce_set_probe(q, ROCE_PROBE_DUE);
        q->probe_psn = q->una;
        q->rto_shift = MIN(q->rto_shift + 1, 2);
        roce_req_push(q);
        roce_req_arm_rto(q);
    }
}
