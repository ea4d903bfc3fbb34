/*
 * pvrdma: the core's side of the transport contract (pvrdma_transport.h).
 * The transport list, the transport of a QP (chosen at RTR for RC, per
 * request for UD and GSI, the object owner's from creation) and its attach
 * and detach, the object owner's hooks (no-ops without an owner), and the
 * device-wide hooks every transport may have (GID table changed, wake, QP
 * gone, flush, receive PSN, the pause around a save: quiesce, resume,
 * moved), and the wake-up of senders waiting on RNR, here and in the
 * transports, and the wrappers the core's other files call a transport
 * through.  Every call from the core into a transport goes through this
 * file.
 *
 * Not here: building and executing requests (pvrdma_req.c), the queue
 * transport's WQE hand-over (pvrdma_queue.c), completions (pvrdma_comp.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_transport_calls.h"
#include "pvrdma_int.h"

/*
 * Call hook 'h' of the table TBL(t) of every transport t that has it, with
 * these arguments: the base contract (every transport's ops) or the
 * message contract (ops->msg, NULL for the queue transport).
 */
#define TBL_BASE(t)     ((t)->ops)
#define TBL_MSG(t)      ((t)->ops->msg)
#define TBL_MIG(t)      ((t)->ops->mig)
#define EACH_HOOK_IN(c, TBL, h, ...) do { \
        for (unsigned i_ = 0; i_ < (c)->ntransports; i_++) { \
            PvrdmaTransport *t_ = (c)->transports[i_]; \
            if (TBL(t_) && TBL(t_)->h) { \
                TBL(t_)->h(t_, ##__VA_ARGS__); \
            } \
        } \
    } while (0)
#define EACH_HOOK(c, h, ...)     EACH_HOOK_IN(c, TBL_BASE, h, ##__VA_ARGS__)
#define EACH_MSG_HOOK(c, h, ...) EACH_HOOK_IN(c, TBL_MSG, h, ##__VA_ARGS__)
/* Hook h of t's optional tables (PvrdmaMoveOps, PvrdmaMigOps), or NULL */
#define MOVE_HOOK(t, h) ((t)->ops->move ? (t)->ops->move->h : NULL)
#define MIG_HOOK(t, h)  ((t)->ops->mig ? (t)->ops->mig->h : NULL)

bool pvrdma_core_add_transport(PvrdmaCore *c, PvrdmaTransport *t)
{
    const PvrdmaTransportOps *o = t->ops;
    unsigned fl = o->flags;

    if (c->ntransports >= PVRDMA_MAX_TRANSPORTS ||
        !o->msg == !o->queue || (o->msg && !o->msg->execute) ||
        (o->queue && c->owner) ||
        ((fl & PVRDMA_TP_GSI_AGENT) && (c->gsi_agent || !o->msg))) {
        return false;
    }
    c->transports[c->ntransports++] = t;
    c->doorbell_ok |= !!(fl & PVRDMA_TP_DOORBELL_OK);
    if (o->queue) {
        c->owner = t;
    }
    if (fl & PVRDMA_TP_GSI_AGENT) {
        c->gsi_agent = t;
    }
    return true;
}

void pvrdma_transport_free(PvrdmaTransport *t)
{
    if (t && t->ops->destroy) {
        t->ops->destroy(t);
    } else {
        g_free(t);
    }
}

void pvrdma_transports_destroy(PvrdmaCore *c)
{
    for (unsigned i = c->ntransports; i-- > 0;) {
        pvrdma_transport_free(c->transports[i]);
    }
    c->ntransports = 0;
    c->owner = c->gsi_agent = NULL;
    c->doorbell_ok = false;
}

/* ------------------------------------------------------------------ */
/* The transport of a QP                                               */

/*
 * The first transport that reaches dgid, or NULL.  The object owner is a
 * queue transport: the GSI requests it would carry (rdma_cm MADs for its
 * connections) go to the GSI agent, which makes them on the host device.
 */
static PvrdmaTransport *reaching(PvrdmaCore *c, const uint8_t dgid[16],
                                 bool gsi)
{
    for (unsigned i = 0; i < c->ntransports; i++) {
        PvrdmaTransport *t = c->transports[i];

        if (!t->ops->reaches || !t->ops->reaches(t, dgid)) {
            continue;
        }
        if (gsi && t == c->owner) {
            if (c->gsi_agent) {
                return c->gsi_agent;
            }
            continue;
        }
        return t;
    }
    return NULL;
}

static void set_transport(PvrdmaQP *qp, PvrdmaTransport *t)
{
    qp->tp = t;
    trace_pvrdma_qp_path(qp->qpn, t ? t->ops->name : "none");
}

/*
 * Does qp choose its transport at RTR?  Without an owner every RC QP does.
 * With one, a UD QP (one receive queue for datagrams from anywhere) and a
 * QP on an SRQ (whose receives the owner already holds) are the owner's
 * from creation; the other RC QPs choose, and their twin only gives them
 * the owner's QP number unless the owner is chosen.
 */
static bool chooses_at_rtr(const PvrdmaQP *qp)
{
    return qp->type == PVRDMA_QPT_RC && !(qp->twin && qp->is_srq);
}

PvrdmaTransport *pvrdma_transport_choose(PvrdmaCore *c, const PvrdmaQP *qp,
                                         const uint8_t dgid[16])
{
    PvrdmaTransport *t;

    if (!chooses_at_rtr(qp) || qp->tp) {
        return qp->tp;
    }
    t = reaching(c, dgid, false);
    /* a destination nothing else reaches: the host device may route it */
    return t ? t : qp->twin ? c->owner : NULL;
}

int pvrdma_transport_attach(PvrdmaCore *c, PvrdmaQP *qp)
{
    PvrdmaTransport *t;
    int err;

    if (!chooses_at_rtr(qp) || qp->tp) {
        return 0;       /* per request, or already the owner's */
    }
    t = pvrdma_transport_choose(c, qp, qp->attr.ah_attr.grh.dgid.raw);
    if (!t || t == c->owner) {
        /*
         * Tried again at the first request.  The owner is taken in
         * pvrdma_qp_modify() only, with its twin's RTR: never later.
         */
        return 0;
    }
    err = t->ops->qp_attach ? t->ops->qp_attach(t, qp) : 0;
    if (!err) {
        set_transport(qp, t);
    }
    return -err;
}

bool pvrdma_transport_attach_to(PvrdmaCore *c, PvrdmaQP *qp,
                                PvrdmaTransport *t)
{
    if (!chooses_at_rtr(qp) || t == c->owner) {
        return false;
    }
    pvrdma_transport_detach(c, qp);
    if (t->ops->qp_attach && t->ops->qp_attach(t, qp)) {
        return false;
    }
    set_transport(qp, t);
    return true;
}

void pvrdma_transport_detach(PvrdmaCore *c, PvrdmaQP *qp)
{
    PvrdmaTransport *t = qp->tp;

    if (!t || !chooses_at_rtr(qp)) {
        return;     /* the owner's QPs keep their transport until destroy */
    }
    if (t->ops->qp_detach) {
        t->ops->qp_detach(t, qp);
    }
    qp->tp_state = NULL;
    qp->heard_on = qp->offer_to = NULL;
    set_transport(qp, NULL);
}

/* qp carries on over n with these PSNs (both ends agreed); true if so */
static bool transport_move(PvrdmaCore *c, PvrdmaQP *qp, PvrdmaTransport *n,
                           uint32_t sq_psn, uint32_t rq_psn)
{
    PvrdmaReport r = {
        .kind = PVRDMA_REPORT_PATH, .qpn = qp->qpn,
        .old_path = qp->tp ? qp->tp->ops->name : "none",
        .new_path = n->ops->name,
    };

    qp->attr.sq_psn = sq_psn & 0xffffff;
    qp->attr.rq_psn = rq_psn & 0xffffff;
    trace_pvrdma_qp_repath(qp->qpn, r.old_path, r.new_path, qp->attr.sq_psn,
                           qp->attr.rq_psn);
    if (!pvrdma_transport_attach_to(c, qp, n)) {
        warn_report("pvrdma: QP %u: the %s transport refused it", qp->qpn,
                    n->ops->name);
        return false;
    }
    pvrdma_report(c, &r);
    pvrdma_transport_wake_senders(c);
    return true;
}

/*
 * An RC QP whose peer left its transport (PvrdmaMoveOps.moving: a
 * co-resident peer migrated) carries on over another transport that
 * reaches the peer, with the PSNs the old transport counted, once the peer
 * cannot come back to the old one: it was heard on the other transport, or
 * the old transport no longer reaches it (it waited in vain).  Both ends
 * then take the same transport: the one that moved chose it at its load.
 * True if qp moved.
 */
static bool transport_recheck(PvrdmaCore *c, PvrdmaQP *qp)
{
    PvrdmaTransport *t = qp->tp, *n;
    const uint8_t *dgid = qp->attr.ah_attr.grh.dgid.raw;
    int where;

    if (!t || !MOVE_HOOK(t, moving) || !chooses_at_rtr(qp) ||
        qp->state < PVRDMA_QPS_RTR || qp->state == PVRDMA_QPS_ERR) {
        return false;
    }
    where = MOVE_HOOK(t, moving)(t, dgid);
    if (where == PVRDMA_PEER_HERE) {
        qp->heard_on = NULL;    /* a stray packet, or the peer came back */
    }
    if (t->ops->reaches(t, dgid) &&
        (!qp->heard_on || where != PVRDMA_PEER_MOVED)) {
        return false;   /* the peer is here, or may still come back */
    }
    n = qp->heard_on;
    if (!n || !n->ops->reaches || !n->ops->reaches(n, dgid)) {
        n = NULL;
        for (unsigned i = 0; i < c->ntransports && !n; i++) {
            PvrdmaTransport *o = c->transports[i];

            if (o != t && o != c->owner && o->ops->reaches &&
                o->ops->reaches(o, dgid)) {
                n = o;
            }
        }
    }
    if (!n) {
        return false;   /* nowhere else: its requests fail as before */
    }
    if (!transport_move(c, qp, n, qp->attr.sq_psn, qp->attr.rq_psn)) {
        return false;
    }
    if (qp->state <= PVRDMA_QPS_SQD) {
        pvrdma_transport_qp_announce(n, qp);
    }
    return true;
}

bool pvrdma_transport_heard(PvrdmaCore *c, PvrdmaQP *qp, PvrdmaTransport *t)
{
    if (qp->tp == t) {
        return true;
    }
    if (!qp->tp || !MOVE_HOOK(qp->tp, moving)) {
        return false;
    }
    /*
     * Until the peer's old QEMU said it moved (PAUSED: its answers to our
     * requests may still be on their way), the QP only remembers it.
     */
    qp->heard_on = t;
    return transport_recheck(c, qp) && qp->tp == t;
}

/*
 * The way back: an RC QP on a transport that keeps connection state
 * (RoCEv2) whose peer the first transport in the list reaches now
 * (co-resident: the peer came to this host, or this VM to the peer's)
 * offers its peer to move there when it is idle on its transport (nothing
 * in flight either way, so the PSNs are all the state there is), and holds
 * its requests until the answer (pvrdma_transport_answered()).  The
 * question is asked at most every PVRDMA_OFFER_RETRY_MS, at a request; so
 * is an offer the peer refused (it was busy).  The peer's answer comes
 * through the new transport, so its requests there follow it.
 */
#define PVRDMA_OFFER_RETRY_MS 100

static void transport_offer(PvrdmaCore *c, PvrdmaQP *qp)
{
    PvrdmaTransport *t = qp->tp, *n;
    const uint8_t *dgid = qp->attr.ah_attr.grh.dgid.raw;
    int64_t now = c->ops->now_ms(c->opaque);
    uint32_t sq, rq;

    if (qp->offer_to) {
        if (!qp->offer_to->ops->reaches(qp->offer_to, dgid)) {
            qp->offer_to = NULL;    /* the peer went: no answer comes */
            qp->offer_next = now + PVRDMA_OFFER_RETRY_MS;
        }
        return;
    }
    if (!t || !MOVE_HOOK(t, qp_idle) || !chooses_at_rtr(qp) ||
        qp->state != PVRDMA_QPS_RTS || now < qp->offer_next) {
        return;
    }
    /*
     * Asked again PVRDMA_OFFER_RETRY_MS later whatever the answers: the
     * transports' reaches hooks may cost system calls (the host HCA's), and
     * a QP would otherwise ask them (idle) or its transport (busy) at every
     * request.
     */
    qp->offer_next = now + PVRDMA_OFFER_RETRY_MS;
    if (!MOVE_HOOK(t, qp_idle)(t, qp, &sq, &rq)) {
        return;
    }
    n = reaching(c, dgid, false);
    if (!n || n == t || n == c->owner || !MOVE_HOOK(n, qp_offer) ||
        MOVE_HOOK(n, qp_offer)(n, qp, sq, rq)) {
        return;
    }
    trace_pvrdma_qp_offer(qp->qpn, n->ops->name, sq, rq);
    qp->offer_to = n;
    qp->offer_sq_psn = sq;
    qp->offer_rq_psn = rq;
}

bool pvrdma_transport_offered(PvrdmaCore *c, PvrdmaQP *qp,
                              PvrdmaTransport *t, uint32_t peer_sq_psn,
                              uint32_t peer_rq_psn)
{
    PvrdmaTransport *p = qp->tp;
    uint32_t sq, rq;

    if (!p || p == t || !MOVE_HOOK(p, qp_idle) || !chooses_at_rtr(qp) ||
        qp->state < PVRDMA_QPS_RTR || qp->state > PVRDMA_QPS_SQD ||
        !MOVE_HOOK(p, qp_idle)(p, qp, &sq, &rq) || rq != peer_sq_psn) {
        return false;
    }
    /* a QP in RTR has sent nothing: its first PSN comes with RTS */
    if (qp->state == PVRDMA_QPS_RTR) {
        sq = qp->attr.sq_psn;
    } else if (sq != peer_rq_psn) {
        return false;
    }
    qp->offer_to = NULL;    /* an offer of ours crossing this one is moot */
    return transport_move(c, qp, t, sq, rq);
}

void pvrdma_transport_answered(PvrdmaCore *c, PvrdmaQP *qp,
                               PvrdmaTransport *t, bool ok)
{
    if (qp->offer_to != t) {
        return;     /* reset, or the peer's offer crossed ours */
    }
    qp->offer_to = NULL;
    if (!ok || qp->state < PVRDMA_QPS_RTR || qp->state > PVRDMA_QPS_SQD ||
        !transport_move(c, qp, t, qp->offer_sq_psn, qp->offer_rq_psn)) {
        qp->offer_next = c->ops->now_ms(c->opaque) + PVRDMA_OFFER_RETRY_MS;
    }
    pvrdma_transport_wake_senders(c);   /* its held requests go on */
}

PvrdmaTransport *pvrdma_transport_for(PvrdmaCore *c, PvrdmaQP *qp,
                                      const uint8_t dgid[16])
{
    PvrdmaTransport *t;

    if (qp->type == PVRDMA_QPT_RC) {
        if (!qp->tp && pvrdma_transport_attach(c, qp)) {
            return NULL;
        }
        if (qp->paused || qp->heard_on) {
            /* it waits on a transport the peer left? */
            transport_recheck(c, qp);
        }
        transport_offer(c, qp);
        return qp->tp;
    }
    t = reaching(c, dgid, qp->type == PVRDMA_QPT_GSI);
    if (!t && qp->type == PVRDMA_QPT_GSI) {
        t = c->gsi_agent;
    }
    return t;
}

/* ------------------------------------------------------------------ */
/* The object owner: twins of guest objects, none without an owner     */

/* The owner's queue contract (c->owner set). */
static const PvrdmaQueueOps *owner_ops(PvrdmaCore *c)
{
    return c->owner->ops->queue;
}

int pvrdma_owner_pd_create(PvrdmaCore *c, PvrdmaPD *pd)
{
    return c->owner ? owner_ops(c)->pd_create(c->owner, pd) : 0;
}

void pvrdma_owner_pd_destroy(PvrdmaCore *c, PvrdmaPD *pd)
{
    if (pd->twin) {
        owner_ops(c)->pd_destroy(c->owner, pd);
    }
}

/*
 * Index (add) or unindex an owner key of mr.  Key 0 is none: a host
 * device may give an MR without remote access rkey 0 (Linux rxe does).
 */
static void owner_key_index(PvrdmaCore *c, uint32_t key, PvrdmaMR *mr,
                            bool add)
{
    gpointer k = GUINT_TO_POINTER(key);

    if (!key) {
        return;
    }
    if (add) {
        g_hash_table_insert(c->owner_keys, k, mr);
    } else if (g_hash_table_lookup(c->owner_keys, k) == mr) {
        g_hash_table_remove(c->owner_keys, k);
    }
}

/* Index (add) or unindex an FRMR by its key >> 8 (any key byte) */
static void owner_frmr_index(PvrdmaCore *c, PvrdmaMR *mr, bool add)
{
    gpointer k = GUINT_TO_POINTER(mr->key >> 8);

    if (mr->kind != PVRDMA_MR_FRMR) {
        return;
    }
    if (add) {
        g_hash_table_insert(c->owner_frmrs, k, mr);
    } else if (g_hash_table_lookup(c->owner_frmrs, k) == mr) {
        g_hash_table_remove(c->owner_frmrs, k);
    }
}

int pvrdma_owner_mr_create(PvrdmaCore *c, PvrdmaMR *mr, uint32_t *lkey,
                           uint32_t *rkey)
{
    int err;

    if (!c->owner) {
        return 0;
    }
    err = owner_ops(c)->mr_create(c->owner, mr, lkey, rkey);
    if (!err) {
        mr->owner_rkey = *rkey;
        owner_key_index(c, *lkey, mr, true);
        owner_key_index(c, *rkey, mr, true);
        mr->key = *lkey;
        owner_frmr_index(c, mr, true);
    }
    return err;
}

void pvrdma_owner_mr_rekey(PvrdmaCore *c, PvrdmaMR *mr, uint32_t key)
{
    /* an FRMR's lkey is its rkey (a host memory window's) */
    owner_key_index(c, mr->key, mr, false);
    owner_frmr_index(c, mr, false);
    mr->key = mr->owner_rkey = key;
    if (key) {
        owner_key_index(c, key, mr, true);
        owner_frmr_index(c, mr, true);
    }
}

void pvrdma_owner_frmr_rekey(PvrdmaCore *c, PvrdmaMR *mr, uint32_t key)
{
    mr->valid = false;
    pvrdma_owner_mr_rekey(c, mr, key);
}

void pvrdma_owner_mr_destroy(PvrdmaCore *c, PvrdmaMR *mr)
{
    if (mr->twin) {
        owner_key_index(c, mr->key, mr, false);
        owner_key_index(c, mr->owner_rkey, mr, false);
        owner_frmr_index(c, mr, false);
        owner_ops(c)->mr_destroy(c->owner, mr);
    }
}

int pvrdma_owner_cq_create(PvrdmaCore *c, PvrdmaCQ *cq, uint32_t cqe)
{
    return c->owner ? owner_ops(c)->cq_create(c->owner, cq, cqe) : 0;
}

void pvrdma_owner_cq_destroy(PvrdmaCore *c, PvrdmaCQ *cq)
{
    if (cq->twin) {
        owner_ops(c)->cq_destroy(c->owner, cq);
    }
}

int pvrdma_owner_srq_create(PvrdmaCore *c, PvrdmaSRQ *srq)
{
    return c->owner ? owner_ops(c)->srq_create(c->owner, srq) : 0;
}

int pvrdma_owner_srq_modify(PvrdmaCore *c, PvrdmaSRQ *srq, uint32_t mask,
                            uint32_t limit)
{
    return srq->twin ? owner_ops(c)->srq_modify(c->owner, srq, mask, limit) :
                     0;
}

void pvrdma_owner_srq_destroy(PvrdmaCore *c, PvrdmaSRQ *srq)
{
    if (srq->twin) {
        owner_ops(c)->srq_destroy(c->owner, srq);
    }
}

/*
 * The GSI QP stays the core's: its MADs go per request.  Every other QP
 * gets a twin and the owner's QP number; see chooses_at_rtr() for its
 * transport.
 */
int pvrdma_owner_qp_create(PvrdmaCore *c, PvrdmaQP *qp)
{
    int err;

    if (!c->owner || qp->type == PVRDMA_QPT_GSI) {
        return 0;
    }
    err = owner_ops(c)->qp_create(c->owner, qp);
    if (err) {
        return err;
    }
    g_hash_table_insert(c->owner_qpns, GUINT_TO_POINTER(qp->qpn), qp);
    if (!chooses_at_rtr(qp)) {
        set_transport(qp, c->owner);    /* a queue transport from now on */
    }
    return 0;
}

void pvrdma_owner_qp_destroy(PvrdmaCore *c, PvrdmaQP *qp)
{
    if (qp->twin) {
        g_hash_table_remove(c->owner_qpns, GUINT_TO_POINTER(qp->qpn));
        owner_ops(c)->qp_destroy(c->owner, qp);
        qp->tp = NULL;
    }
}

/* An RC QP that chose the owner at RTR lets it go at reset. */
void pvrdma_owner_qp_reset(PvrdmaCore *c, PvrdmaQP *qp)
{
    if (chooses_at_rtr(qp) && qp->tp == c->owner) {
        set_transport(qp, NULL);
    }
}

/*
 * At RTR, qp takes the owner as its transport (a queue transport from now
 * on).
 */
void pvrdma_owner_qp_take(PvrdmaCore *c, PvrdmaQP *qp)
{
    set_transport(qp, c->owner);
}

/* The owner's queues, for a QP it carries (pvrdma_queue.c, pvrdma_qp.c) */
int pvrdma_owner_qp_modify(PvrdmaCore *c, PvrdmaQP *qp, uint32_t mask,
                           const struct pvrdma_qp_attr *a)
{
    return owner_ops(c)->qp_modify(c->owner, qp, mask, a);
}

int pvrdma_owner_qp_state(PvrdmaCore *c, PvrdmaQP *qp)
{
    return owner_ops(c)->qp_state(c->owner, qp);
}

int pvrdma_owner_post_send(PvrdmaCore *c, PvrdmaQP *qp,
                           const PvrdmaSendWr *wr)
{
    return owner_ops(c)->post_send(c->owner, qp, wr);
}

int pvrdma_owner_post_recv(PvrdmaCore *c, PvrdmaQP *qp, PvrdmaSRQ *srq,
                           uint64_t wr_id, const struct pvrdma_sge *sge,
                           uint32_t num_sge)
{
    return owner_ops(c)->post_recv(c->owner, qp, srq, wr_id, sge, num_sge);
}

bool pvrdma_owner_port_active(PvrdmaCore *c)
{
    return !c->owner ||
           owner_ops(c)->port_state(c->owner) == PVRDMA_PORT_ACTIVE;
}

/* ------------------------------------------------------------------ */
/* One transport                                                       */

const char *pvrdma_transport_name(const PvrdmaTransport *t)
{
    return t->ops->name;
}

bool pvrdma_transport_is_queue(const PvrdmaTransport *t)
{
    return t->ops->queue;
}

bool pvrdma_qp_on_queue_transport(const PvrdmaQP *qp)
{
    return qp->tp && pvrdma_transport_is_queue(qp->tp);
}

bool pvrdma_transport_doorbell_ok(const PvrdmaTransport *t)
{
    return t->ops->flags & PVRDMA_TP_DOORBELL_OK;
}

bool pvrdma_transport_segmented(const PvrdmaTransport *t)
{
    return t->ops->flags & PVRDMA_TP_SEGMENTED;
}

int pvrdma_transport_execute(PvrdmaTransport *t, PvrdmaReq *req)
{
    return t->ops->msg->execute(t, req);
}

PvrdmaTransport *pvrdma_transport_by_name(PvrdmaCore *c, const char *name)
{
    for (unsigned i = 0; i < c->ntransports; i++) {
        if (!strcmp(c->transports[i]->ops->name, name)) {
            return c->transports[i];
        }
    }
    return NULL;
}

/* Migration: what a QP's transport keeps, saves, loads and announces */

bool pvrdma_transport_migrates(const PvrdmaTransport *t)
{
    const PvrdmaTransportOps *o = t->ops;

    /* no state of its own, its peers paused, or its state handed over */
    return (o->flags & PVRDMA_TP_STATELESS) ||
           (o->mig && (o->mig->quiesce || o->mig->qp_save));
}

bool pvrdma_transport_qp_save(PvrdmaTransport *t, PvrdmaQP *qp,
                              GByteArray *b)
{
    if (!MIG_HOOK(t, qp_save)) {
        return false;
    }
    MIG_HOOK(t, qp_save)(t, qp, b);
    return true;
}

bool pvrdma_transport_can_load(const PvrdmaTransport *t)
{
    return MIG_HOOK(t, qp_load);
}

bool pvrdma_transport_qp_load(PvrdmaTransport *t, PvrdmaQP *qp,
                              PvrdmaMigReader *r)
{
    return MIG_HOOK(t, qp_load)(t, qp, r);
}

void pvrdma_transport_qp_announce(PvrdmaTransport *t, PvrdmaQP *qp)
{
    if (MOVE_HOOK(t, qp_announce)) {
        MOVE_HOOK(t, qp_announce)(t, qp);
    }
}

/* ------------------------------------------------------------------ */
/* Device-wide hooks                                                   */

void pvrdma_transports_flush(PvrdmaCore *c)
{
    EACH_MSG_HOOK(c, flush);
}

void pvrdma_transports_wake(PvrdmaCore *c)
{
    EACH_MSG_HOOK(c, wake);
}

void pvrdma_transports_timer(PvrdmaCore *c)
{
    EACH_MSG_HOOK(c, timer);
}

/* Tell the transports (peers learn our GIDs from them). */
void pvrdma_gids_changed(PvrdmaCore *c)
{
    EACH_HOOK(c, gids_changed);
}

bool pvrdma_transports_can_wake(PvrdmaCore *c)
{
    for (unsigned i = 0; i < c->ntransports; i++) {
        const PvrdmaMessageOps *m = c->transports[i]->ops->msg;

        if (m && m->wake) {
            return true;
        }
    }
    return false;
}

void pvrdma_qp_gone(PvrdmaCore *c, uint32_t qpn)
{
    EACH_MSG_HOOK(c, qp_gone, qpn);
    /*
     * Our own senders waiting on RNR may wait on it (loopback): they try
     * again and find no responder, as a requester whose peer QP went away
     * does (RETRY_EXC_ERR once its retries ran out), instead of waiting
     * for a receive that will never be posted.
     */
    if (c->rnr_waiters) {
        pvrdma_wake_rnr(c);
    }
}

bool pvrdma_qp_fence(PvrdmaCore *c, uint32_t qpn, unsigned wait_ms)
{
    bool done = true;

    for (unsigned i = 0; i < c->ntransports; i++) {
        PvrdmaTransport *t = c->transports[i];
        const PvrdmaMessageOps *m = t->ops->msg;

        if (m && m->fence && !m->fence(t, qpn, wait_ms)) {
            done = false;
        }
    }
    return done;
}

bool pvrdma_cmd_fence(PvrdmaCore *c, uint32_t qpn)
{
    if (c->restoring || pvrdma_qp_fence(c, qpn, 0)) {
        return true;
    }
    if (c->wait_over) {
        warn_report("pvrdma: co-resident: the peers did not answer the "
                    "requests "
                    "of QP %u in %u ms; they may still access its "
                    "buffers", qpn, PVRDMA_FENCE_MS);
        return true;
    }
    c->wait_qpn = qpn;
    return false;
}

bool pvrdma_qp_fencing(PvrdmaCore *c, const PvrdmaQP *qp)
{
    return c->cmd_waits && c->wait_qpn == qp->qpn;
}

void pvrdma_transport_fenced(PvrdmaTransport *t)
{
    PvrdmaCore *c = t->core;

    if (c->cmd_waits) {
        c->ops->kick(c->opaque, 0);     /* pvrdma_cmd_wait_check() */
    }
}

bool pvrdma_transports_quiesce(PvrdmaCore *c, unsigned timeout_ms)
{
    bool ok = true;

    for (unsigned i = 0; i < c->ntransports; i++) {
        PvrdmaTransport *t = c->transports[i];

        if (MIG_HOOK(t, quiesce) && !MIG_HOOK(t, quiesce)(t, timeout_ms)) {
            ok = false;
        }
    }
    return ok;
}

void pvrdma_core_resume(PvrdmaCore *c)
{
    c->paused = false;
    EACH_HOOK_IN(c, TBL_MIG, resume);
    pvrdma_wake_rnr(c);     /* QPs that waited on a paused transport */
    if (c->run.length) {
        c->ops->kick(c->opaque, 0);     /* what was posted meanwhile */
    }
}

void pvrdma_core_moved(PvrdmaCore *c)
{
    EACH_HOOK_IN(c, TBL_MIG, moved);
}

bool pvrdma_transport_stats(PvrdmaTransport *t, const PvrdmaQP *qp,
                            PvrdmaPathStats *st)
{
    memset(st, 0, sizeof(*st));
    return t->ops->stats && t->ops->stats(t, qp, st);
}

bool pvrdma_transports_rq_psn(PvrdmaCore *c, uint32_t qpn, uint32_t dest_qpn,
                              const uint8_t dgid[16], uint32_t *psn)
{
    for (unsigned i = 0; i < c->ntransports; i++) {
        PvrdmaTransport *t = c->transports[i];

        if (t->ops->rq_psn && t->ops->rq_psn(t, qpn, dest_qpn, dgid, psn)) {
            return true;
        }
    }
    return false;
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
    if (pvrdma_transports_can_wake(c)) {
        c->wake_transports = true;
        c->ops->kick(c->opaque, 0);
    }
}

void pvrdma_transport_wake_senders(PvrdmaCore *c)
{
    pvrdma_wake_rnr(c);
}
