/*
 * pvrdma host HCA transport, the host twins of the guest's objects: each
 * guest PD, CQ, SRQ and QP the host device owns has a libibverbs object
 * of the host device made, changed and destroyed with it (the transport's
 * object hooks; MRs are hostverbs_mr.c's); UD sends get a host address
 * handle, cached per PD; guest GIDs are found in the host's GID table.  See
 * hostverbs.c for the transport as a whole, hostverbs_int.h for what its
 * files share.
 *
 * Everything runs with the caller's lock held (the BQL in QEMU).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hostverbs_int.h"

#include <arpa/inet.h>

#define HV_AH_CACHE     256

typedef struct HvGidKey {
    uint8_t gid[16];
    uint8_t type;               /* enum ibv_gid_type */
} HvGidKey;

typedef struct HvAhKey {
    uint8_t dgid[16];
    uint32_t flow_label;
    uint8_t sgid_index, hop_limit, tclass, sl;
} HvAhKey;



/* ------------------------------------------------------------------ */
/* GIDs                                                                */

/* djb2 over a fixed-size key (GID and AH cache keys) */
static guint key_hash(const void *k, size_t len)
{
    const uint8_t *p = k;
    guint h = 5381;

    for (size_t i = 0; i < len; i++) {
        h = h * 33 + p[i];
    }
    return h;
}

guint hv_gid_key_hash(gconstpointer k)
{
    return key_hash(k, sizeof(HvGidKey));
}

gboolean hv_gid_key_equal(gconstpointer a, gconstpointer b)
{
    return !memcmp(a, b, sizeof(HvGidKey));
}

/*
 * The host GID table index for a guest GID entry, or -1 (reported).  Found
 * indices are cached: UD sends ask on every WQE, and each entry queried is
 * a call into the kernel.  The cache is dropped when the host's GID table
 * changes (IBV_EVENT_GID_CHANGE); misses are not cached, so an address
 * added on the host later is found.
 */
static int host_gid_index(HvDev *d, const PvrdmaGid *g)
{
    enum ibv_gid_type want = g->type == PVRDMA_GID_TYPE_FLAG_ROCE_V2 ?
                             IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_ROCE_V1;
    char ip[INET6_ADDRSTRLEN];
    HvGidKey k = { .type = want };
    gpointer hit;

    if (d->gid_index >= 0) {
        return d->gid_index;
    }
    if (!g->type) {
        return -1;
    }
    memcpy(k.gid, g->gid.raw, 16);
    hit = g_hash_table_lookup(d->gid_idx, &k);
    if (hit) {
        return GPOINTER_TO_INT(hit) - 1;
    }
    for (int i = 0; i < d->gid_tbl_len; i++) {
        struct ibv_gid_entry e;

        if (ibv_query_gid_ex(d->ctx, d->port, i, &e, 0) == 0 &&
            e.gid_type == want && !memcmp(e.gid.raw, g->gid.raw, 16)) {
            g_hash_table_insert(d->gid_idx, g_memdup2(&k, sizeof(k)),
                                GINT_TO_POINTER(i + 1));
            return i;
        }
    }
    pvrdma_gid_str(g->gid.raw, ip, sizeof(ip));
    if (!g_hash_table_contains(d->warned, ip)) {
        g_hash_table_add(d->warned, g_strdup(ip));
        warn_report("pvrdma: the guest's GID %s (RoCE v%d) is not in the GID "
                    "table of %s port %u, so its traffic cannot use it; "
                    "give the host interface that address, e.g. "
                    "'ip addr add %s/32 dev %s'", ip,
                    want == IBV_GID_TYPE_ROCE_V2 ? 2 : 1, d->name,
                    d->port, ip, d->netdev[0] ? d->netdev : "<netdev>");
    }
    return -1;
}

/* ------------------------------------------------------------------ */
/* PDs and address handles                                             */

static guint ah_hash(gconstpointer k)
{
    return key_hash(k, sizeof(HvAhKey));
}

static gboolean ah_equal(gconstpointer a, gconstpointer b)
{
    return !memcmp(a, b, sizeof(HvAhKey));
}

static void ah_free(gpointer ah)
{
    ibv_destroy_ah(ah);
}

int hv_pd_create(PvrdmaTransport *h, PvrdmaPD *pd)
{
    HvDev *d = hv(h);
    HvPD *p = g_new0(HvPD, 1);

    p->pd = ibv_alloc_pd(d->ctx);
    if (!p->pd) {
        int err = errno ? errno : ENOMEM;

        g_free(p);
        return -err;
    }
    p->ah = g_hash_table_new_full(ah_hash, ah_equal, g_free, ah_free);
    pd->twin = p;
    return 0;
}

void hv_pd_destroy(PvrdmaTransport *h, PvrdmaPD *pd)
{
    HvPD *p = pd->twin;

    if (p->spare) {
        ibv_dereg_mr(p->spare);
    }
    g_hash_table_destroy(p->ah);
    ibv_dealloc_pd(p->pd);
    g_free(p);
    pd->twin = NULL;
}

/* A host AH for a UD destination (cached per PD). */
static struct ibv_ah *ud_ah(HvDev *d, HvPD *p, const PvrdmaSendWr *wr)
{
    const struct pvrdma_av *av = wr->av;
    struct ibv_ah_attr attr = { 0 };
    struct ibv_ah *ah;
    HvAhKey k = { 0 };
    int sgid = host_gid_index(d, wr->sgid);

    if (sgid < 0) {
        return NULL;
    }
    memcpy(k.dgid, av->dgid, 16);
    k.flow_label = av->sl_tclass_flowlabel & 0xfffff;
    k.tclass = (av->sl_tclass_flowlabel >> 20) & 0xff;
    k.sl = av->sl_tclass_flowlabel >> 28;
    k.hop_limit = av->hop_limit;
    k.sgid_index = sgid;
    ah = g_hash_table_lookup(p->ah, &k);
    if (ah) {
        return ah;
    }
    attr.is_global = 1;
    memcpy(attr.grh.dgid.raw, k.dgid, 16);
    attr.grh.flow_label = k.flow_label;
    attr.grh.traffic_class = k.tclass;
    attr.grh.hop_limit = k.hop_limit ? k.hop_limit : 64;
    attr.grh.sgid_index = sgid;
    attr.sl = k.sl;
    attr.port_num = d->port;
    ah = ibv_create_ah(p->pd, &attr);
    if (!ah) {
        return NULL;
    }
    if (g_hash_table_size(p->ah) >= HV_AH_CACHE) {
        /* host devices copy the address into each WQE: safe to drop */
        g_hash_table_remove_all(p->ah);
    }
    g_hash_table_insert(p->ah, g_memdup2(&k, sizeof(k)), ah);
    return ah;
}

/* ------------------------------------------------------------------ */
/* CQs (their completions: hostverbs.c)                               */

int hv_cq_create(PvrdmaTransport *h, PvrdmaCQ *cq, uint32_t cqe)
{
    HvDev *d = hv(h);
    HvCQ *q = g_new0(HvCQ, 1);

    q->gcq = cq;
    q->cq = ibv_create_cq(d->ctx, cqe, q, d->chan, 0);
    if (!q->cq || ibv_req_notify_cq(q->cq, 0)) {
        int err = errno ? errno : ENOMEM;

        if (q->cq) {
            ibv_destroy_cq(q->cq);
        }
        g_free(q);
        return -err;
    }
    cq->twin = q;
    return 0;
}

void hv_cq_destroy(PvrdmaTransport *h, PvrdmaCQ *cq)
{
    HvCQ *q = cq->twin;

    ibv_destroy_cq(q->cq);
    g_free(q);
    cq->twin = NULL;
}

/* ------------------------------------------------------------------ */
/* SRQs                                                                */

int hv_srq_create(PvrdmaTransport *h, PvrdmaSRQ *srq)
{
    HvPD *p = pd_of(h, srq->pd);
    struct ibv_srq_init_attr a = { 0 };
    struct ibv_srq *s;

    if (!p) {
        return -EINVAL;
    }
    a.srq_context = srq;
    a.attr.max_wr = srq->max_wr;
    a.attr.max_sge = srq->max_sge;
    a.attr.srq_limit = srq->limit;
    s = ibv_create_srq(p->pd, &a);
    if (!s) {
        return -(errno ? errno : ENOMEM);
    }
    srq->twin = s;
    return 0;
}

int hv_srq_modify(PvrdmaTransport *h, PvrdmaSRQ *srq, uint32_t mask,
                  uint32_t limit)
{
    struct ibv_srq_attr a = { .srq_limit = limit };

    return -ibv_modify_srq(srq->twin, &a, IBV_SRQ_LIMIT);
}

void hv_srq_destroy(PvrdmaTransport *h, PvrdmaSRQ *srq)
{
    ibv_destroy_srq(srq->twin);
    srq->twin = NULL;
}

/* ------------------------------------------------------------------ */
/* QPs                                                                 */

int hv_qp_create(PvrdmaTransport *h, PvrdmaQP *qp)
{
    HvDev *d = hv(h);
    PvrdmaCore *c = h->core;
    HvPD *p = pd_of(h, qp->pd);
    PvrdmaCQ *scq = pvrdma_table_get(&c->cq, qp->scq);
    PvrdmaCQ *rcq = pvrdma_table_get(&c->cq, qp->rcq);
    PvrdmaSRQ *srq = qp->is_srq ? pvrdma_table_get(&c->srq, qp->srq) : NULL;
    struct ibv_qp_init_attr a = { 0 };
    struct ibv_qp *q;

    if (!p || !scq || !scq->twin || !rcq || !rcq->twin ||
        (qp->is_srq && (!srq || !srq->twin))) {
        return -EINVAL;
    }
    a.qp_context = qp;
    a.send_cq = ((HvCQ *)scq->twin)->cq;
    a.recv_cq = ((HvCQ *)rcq->twin)->cq;
    a.srq = srq ? srq->twin : NULL;
    /*
     * A FAST_REG_MR or LOCAL_INV may take two host WQEs (hv_fast_reg(),
     * hv_local_inv()): room for them, as far as the device goes.
     */
    a.cap.max_send_wr = d->mw2 ? MIN(2 * qp->max_send_wr, d->max_qp_wr) :
                        qp->max_send_wr;
    a.cap.max_recv_wr = qp->max_recv_wr;
    a.cap.max_send_sge = qp->max_send_sge;
    a.cap.max_recv_sge = qp->max_recv_sge;
    a.qp_type = qp->type == PVRDMA_QPT_UD ? IBV_QPT_UD : IBV_QPT_RC;
    /* the guest's sends are signaled in hv_post_send; not those added */
    a.sq_sig_all = 0;
    q = ibv_create_qp(p->pd, &a);
    if (!q) {
        return -(errno ? errno : ENOMEM);
    }
    qp->twin = q;
    qp->qpn = q->qp_num;
    g_hash_table_insert(d->qps, GUINT_TO_POINTER(q->qp_num), qp);
    trace_pvrdma_hv_qp(qp->handle, q->qp_num);
    return 0;
}

/*
 * The address vector ah of a QP into at (IBV_QP_AV): the host GID index
 * of its source GID, or -1 and at unchanged.
 */
static int qp_attr_av(PvrdmaTransport *h, const struct pvrdma_ah_attr *ah,
                      struct ibv_qp_attr *at)
{
    HvDev *d = hv(h);
    int sgid = host_gid_index(d, &h->core->gid[ah->grh.sgid_index]);

    if (sgid < 0) {
        return sgid;
    }
    at->ah_attr.is_global = 1;
    memcpy(at->ah_attr.grh.dgid.raw, ah->grh.dgid.raw, 16);
    at->ah_attr.grh.flow_label = ah->grh.flow_label;
    at->ah_attr.grh.sgid_index = sgid;
    at->ah_attr.grh.hop_limit = ah->grh.hop_limit ? ah->grh.hop_limit : 64;
    at->ah_attr.grh.traffic_class = ah->grh.traffic_class;
    at->ah_attr.sl = ah->sl;
    at->ah_attr.static_rate = ah->static_rate;
    at->ah_attr.port_num = d->port;
    return sgid;
}

int hv_qp_modify(PvrdmaTransport *h, PvrdmaQP *qp, uint32_t mask,
                 const struct pvrdma_qp_attr *a)
{
    HvDev *d = hv(h);
    struct ibv_qp_attr at = { 0 };
    int m = 0, sgid = -1, err;

    if (mask & PVRDMA_QP_STATE) {
        at.qp_state = a->qp_state;
        m |= IBV_QP_STATE;
    }
    if (mask & PVRDMA_QP_CUR_STATE) {
        at.cur_qp_state = a->cur_qp_state;
        m |= IBV_QP_CUR_STATE;
    }
    if (mask & PVRDMA_QP_EN_SQD_ASYNC_NOTIFY) {
        at.en_sqd_async_notify = a->en_sqd_async_notify;
        m |= IBV_QP_EN_SQD_ASYNC_NOTIFY;
    }
    if (mask & PVRDMA_QP_ACCESS_FLAGS) {
        at.qp_access_flags = a->qp_access_flags &
                             (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                              IBV_ACCESS_REMOTE_READ |
                              IBV_ACCESS_REMOTE_ATOMIC);
        m |= IBV_QP_ACCESS_FLAGS;
    }
    if (mask & PVRDMA_QP_PKEY_INDEX) {
        at.pkey_index = a->pkey_index;
        m |= IBV_QP_PKEY_INDEX;
    }
    if (mask & PVRDMA_QP_PORT) {
        at.port_num = d->port;
        m |= IBV_QP_PORT;
    }
    if (mask & PVRDMA_QP_QKEY) {
        at.qkey = a->qkey;
        m |= IBV_QP_QKEY;
    }
    if (mask & PVRDMA_QP_AV) {
        sgid = qp_attr_av(h, &a->ah_attr, &at);
        if (sgid < 0) {
            trace_pvrdma_hv_modify_qp(qp->qpn, mask, a->qp_state, sgid,
                                      -EINVAL);
            return -EINVAL;
        }
        m |= IBV_QP_AV;
    }
    if (mask & PVRDMA_QP_PATH_MTU) {
        at.path_mtu = MIN((enum ibv_mtu)a->path_mtu, d->active_mtu);
        m |= IBV_QP_PATH_MTU;
    }
#define COPY(pbit, ibit, field) do { \
        if (mask & (pbit)) { \
            at.field = a->field; \
            m |= (ibit); \
        } \
    } while (0)
    COPY(PVRDMA_QP_TIMEOUT, IBV_QP_TIMEOUT, timeout);
    COPY(PVRDMA_QP_RETRY_CNT, IBV_QP_RETRY_CNT, retry_cnt);
    COPY(PVRDMA_QP_RNR_RETRY, IBV_QP_RNR_RETRY, rnr_retry);
    COPY(PVRDMA_QP_RQ_PSN, IBV_QP_RQ_PSN, rq_psn);
    COPY(PVRDMA_QP_MAX_QP_RD_ATOMIC, IBV_QP_MAX_QP_RD_ATOMIC, max_rd_atomic);
    COPY(PVRDMA_QP_MIN_RNR_TIMER, IBV_QP_MIN_RNR_TIMER, min_rnr_timer);
    COPY(PVRDMA_QP_SQ_PSN, IBV_QP_SQ_PSN, sq_psn);
    COPY(PVRDMA_QP_MAX_DEST_RD_ATOMIC, IBV_QP_MAX_DEST_RD_ATOMIC,
         max_dest_rd_atomic);
    COPY(PVRDMA_QP_DEST_QPN, IBV_QP_DEST_QPN, dest_qp_num);
#undef COPY
    err = ibv_modify_qp(qp->twin, &at, m);
    trace_pvrdma_hv_modify_qp(qp->qpn, mask, a->qp_state, sgid, -err);
    return -err;
}

int hv_qp_state(PvrdmaTransport *h, PvrdmaQP *qp)
{
    struct ibv_qp_attr at;
    struct ibv_qp_init_attr init;

    if (ibv_query_qp(qp->twin, &at, IBV_QP_STATE, &init)) {
        return -1;
    }
    return at.qp_state;
}

void hv_qp_destroy(PvrdmaTransport *h, PvrdmaQP *qp)
{
    struct ibv_qp *q = qp->twin;

    hv_frmr_unbind_qp(hv(h), q);
    g_hash_table_remove(hv(h)->qps, GUINT_TO_POINTER(q->qp_num));
    ibv_destroy_qp(q);
    qp->twin = NULL;
}

int hv_post_send(PvrdmaTransport *h, PvrdmaQP *qp, const PvrdmaSendWr *s)
{
    HvDev *d = hv(h);
    struct ibv_sge sge[PVRDMA_HARD_MAX_SGE];
    struct ibv_send_wr wr = { 0 }, *bad;

    for (uint32_t i = 0; i < s->num_sge; i++) {
        sge[i].addr = s->sge[i].addr;
        sge[i].length = s->sge[i].length;
        sge[i].lkey = hv_sge_lkey(d, s->sge[i].lkey);
    }
    wr.wr_id = s->wr_id;
    wr.sg_list = sge;
    wr.num_sge = s->num_sge;
    /* no IBV_SEND_INLINE: the addresses are the guest's, not ours */
    wr.send_flags = s->send_flags & (IBV_SEND_FENCE | IBV_SEND_SIGNALED |
                                     IBV_SEND_SOLICITED);
    if (qp->sq_sig_all) {
        wr.send_flags |= IBV_SEND_SIGNALED;
    }
    switch (s->opcode) {
    case PVRDMA_WR_FAST_REG_MR:
        return s->mr ? hv_fast_reg(d, qp, s, wr.send_flags) : -EINVAL;
    case PVRDMA_WR_LOCAL_INV:
        return s->mr ? hv_local_inv(d, qp, s, wr.send_flags) : -EINVAL;
    case PVRDMA_WR_SEND:
        wr.opcode = IBV_WR_SEND;
        break;
    case PVRDMA_WR_SEND_WITH_IMM:
        wr.opcode = IBV_WR_SEND_WITH_IMM;
        wr.imm_data = s->imm;
        break;
    case PVRDMA_WR_SEND_WITH_INV:
        wr.opcode = IBV_WR_SEND_WITH_INV;
        wr.invalidate_rkey = s->imm;
        break;
    case PVRDMA_WR_RDMA_WRITE:
        wr.opcode = IBV_WR_RDMA_WRITE;
        break;
    case PVRDMA_WR_RDMA_WRITE_WITH_IMM:
        wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
        wr.imm_data = s->imm;
        break;
    case PVRDMA_WR_RDMA_READ:
        wr.opcode = IBV_WR_RDMA_READ;
        break;
    case PVRDMA_WR_ATOMIC_CMP_AND_SWP:
        wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
        break;
    case PVRDMA_WR_ATOMIC_FETCH_AND_ADD:
        wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
        break;
    default:
        return -EINVAL;
    }
    if (qp->type == PVRDMA_QPT_UD) {
        HvPD *p = pd_of(h, qp->pd);

        wr.wr.ud.ah = p ? ud_ah(d, p, s) : NULL;
        if (!wr.wr.ud.ah) {
            return -EINVAL;
        }
        wr.wr.ud.remote_qpn = s->remote_qpn;
        wr.wr.ud.remote_qkey = s->remote_qkey;
    } else if (wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
               wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
        wr.wr.atomic.remote_addr = s->remote_addr;
        wr.wr.atomic.rkey = s->rkey;
        wr.wr.atomic.compare_add = s->compare_add;
        wr.wr.atomic.swap = s->swap;
    } else {
        wr.wr.rdma.remote_addr = s->remote_addr;
        wr.wr.rdma.rkey = s->rkey;
    }
    return -ibv_post_send(qp->twin, &wr, &bad);
}

int hv_post_recv(PvrdmaTransport *h, PvrdmaQP *qp, PvrdmaSRQ *srq,
                 uint64_t wr_id, const struct pvrdma_sge *s,
                 uint32_t num_sge)
{
    struct ibv_sge sge[PVRDMA_HARD_MAX_SGE];
    struct ibv_recv_wr wr = { 0 }, *bad;

    for (uint32_t i = 0; i < num_sge; i++) {
        sge[i].addr = s[i].addr;
        sge[i].length = s[i].length;
        sge[i].lkey = hv_sge_lkey(hv(h), s[i].lkey);
    }
    wr.wr_id = wr_id;
    wr.sg_list = sge;
    wr.num_sge = num_sge;
    if (srq) {
        return -ibv_post_srq_recv(srq->twin, &wr, &bad);
    }
    return -ibv_post_recv(qp->twin, &wr, &bad);
}
