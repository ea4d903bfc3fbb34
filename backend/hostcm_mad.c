/*
 * pvrdma rdma_cm for the guest in host HCA mode, the guest's side: the CM
 * MADs the guest sends on its GSI QP (the execute hook) are parsed with
 * bounds and become host rdma_cm calls (REQ: a host connection resolved
 * and connected; REP, RTU, REJ, DREQ: rdma_accept, rdma_establish,
 * rdma_reject, rdma_disconnect; SIDR_REQ and SIDR_REP likewise over UD);
 * the MADs for the guest are built here and handed to its GSI QP; the
 * connections table, within a fixed budget, is here too.  See hostcm.c
 * for the translator as a whole, hostcm_int.h for what its files share.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hostcm_int.h"

#include <arpa/inet.h>

/* ------------------------------------------------------------------ */
/* MAD fields (big-endian bit strings)                                 */

void hc_mad_init(HcCm *cm, uint8_t *m, uint16_t attr)
{
    uint64_t tid = ++cm->next_tid;

    memset(m, 0, MAD_LEN);
    m[0] = 1;                       /* base version */
    m[1] = CM_CLASS;
    m[2] = CM_CLASS_VER;
    m[3] = MAD_SEND;
    for (int i = 0; i < 8; i++) {
        m[8 + i] = tid >> (56 - 8 * i);
    }
    m[16] = attr >> 8;
    m[17] = attr;
}

void hc_guid_from_gid(uint8_t *m, CmField hi, CmField lo,
                      const uint8_t gid[16])
{
    fset(m, hi, (uint32_t)gid[8] << 24 | gid[9] << 16 | gid[10] << 8 |
                gid[11]);
    fset(m, lo, (uint32_t)gid[12] << 24 | gid[13] << 16 | gid[14] << 8 |
                gid[15]);
}

/* ------------------------------------------------------------------ */
/* Addresses                                                           */

void hc_gid_to_sa(const uint8_t g[16], uint16_t port,
                  struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof(*ss));
    if (pvrdma_gid_is_v4(g)) {
        struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

        s4->sin_family = AF_INET;
        s4->sin_port = htons(port);
        memcpy(&s4->sin_addr, g + 12, 4);
    } else {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(port);
        memcpy(&s6->sin6_addr, g, 16);
    }
}

void hc_sa_to_gid(const struct sockaddr *sa, uint8_t g[16])
{
    memset(g, 0, 16);
    if (sa->sa_family == AF_INET) {
        g[10] = g[11] = 0xff;
        memcpy(g + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    } else if (sa->sa_family == AF_INET6) {
        memcpy(g, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
    }
}

/* rdma_cm's header: version 0, IP version, source port, source, dest. */
static bool cma_hdr_parse(const uint8_t *p, uint8_t src[16], uint8_t dst[16])
{
    int ipv = p[1] >> 4;

    if (p[0] != 0 || (ipv != 4 && ipv != 6)) {
        return false;
    }
    memcpy(src, p + 4, 16);
    memcpy(dst, p + 20, 16);
    if (ipv == 4) {
        memset(src, 0, 10);
        memset(dst, 0, 10);
        src[10] = src[11] = dst[10] = dst[11] = 0xff;
    }
    return true;
}

void hc_cma_hdr_build(uint8_t *p, const uint8_t src[16],
                      const uint8_t dst[16], uint16_t port)
{
    bool v4 = pvrdma_gid_is_v4(src);

    memset(p, 0, CMA_HDR_LEN);
    p[1] = (v4 ? 4 : 6) << 4;
    p[2] = port >> 8;
    p[3] = port;
    if (v4) {
        memcpy(p + 4 + 12, src + 12, 4);
        memcpy(p + 20 + 12, dst + 12, 4);
    } else {
        memcpy(p + 4, src, 16);
        memcpy(p + 20, dst, 16);
    }
}

/* ------------------------------------------------------------------ */
/* Connections                                                         */

static int64_t hc_now(HcCm *cm)
{
    PvrdmaCore *c = cm->t.core;

    return c->ops->now_ms(c->opaque);
}

void hc_conn_free(HcConn *k)
{
    if (k->id) {
        rdma_destroy_id(k->id);
    }
    g_free(k);
}

void hc_conn_close(HcCm *cm, HcConn *k)
{
    trace_pvrdma_cm_close(k->my_id, k->guest_id, k->state);
    g_hash_table_remove(cm->conns, GUINT_TO_POINTER(k->my_id));
}

/* Drop unfinished handshakes older than HC_STALE_MS. */
static void conns_reap(HcCm *cm)
{
    int64_t now = hc_now(cm);
    GHashTableIter it;
    HcConn *k;

    g_hash_table_iter_init(&it, cm->conns);
    while (g_hash_table_iter_next(&it, NULL, (gpointer *)&k)) {
        if (k->state != HC_ESTABLISHED && now - k->since > HC_STALE_MS) {
            trace_pvrdma_cm_close(k->my_id, k->guest_id, k->state);
            g_hash_table_iter_remove(&it);
        }
    }
}

HcConn *hc_conn_new(HcCm *cm, bool active)
{
    HcConn *k;

    if (g_hash_table_size(cm->conns) >= HC_MAX_CONNS) {
        conns_reap(cm);
        if (g_hash_table_size(cm->conns) >= HC_MAX_CONNS) {
            return NULL;
        }
    }
    k = g_new0(HcConn, 1);
    k->kind = HC_KIND_CONN;
    k->cm = cm;
    k->active = active;
    k->since = hc_now(cm);
    do {
        k->my_id = ++cm->next_id;
    } while (!k->my_id ||
             g_hash_table_contains(cm->conns, GUINT_TO_POINTER(k->my_id)));
    g_hash_table_insert(cm->conns, GUINT_TO_POINTER(k->my_id), k);
    return k;
}

static HcConn *conn_by_my_id(HcCm *cm, uint32_t id)
{
    return g_hash_table_lookup(cm->conns, GUINT_TO_POINTER(id));
}

static HcConn *conn_by_guest(HcCm *cm, bool ud, uint32_t guest_id,
                             const uint8_t rgid[16])
{
    GHashTableIter it;
    HcConn *k;

    g_hash_table_iter_init(&it, cm->conns);
    while (g_hash_table_iter_next(&it, NULL, (gpointer *)&k)) {
        if (k->active && k->ud == ud && k->guest_id == guest_id &&
            !memcmp(k->rgid, rgid, 16)) {
            return k;
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------ */
/* To the guest                                                        */

static void to_guest_gids(HcCm *cm, const uint8_t *mad, const uint8_t sgid[16],
                          const uint8_t dgid[16], uint8_t gid_type)
{
    PvrdmaIov iov = { .host = (uint8_t *)mad, .len = MAD_LEN };
    PvrdmaReq req = { 0 };

    req.opcode = PVRDMA_WR_SEND;
    req.qp_type = PVRDMA_QPT_GSI;
    req.src_qpn = PVRDMA_GSI_QPN;
    req.dest_qpn = PVRDMA_GSI_QPN;
    req.qkey = PVRDMA_GSI_QKEY;
    req.local.iov = &iov;
    req.local.n = 1;
    req.local.len = MAD_LEN;
    memcpy(req.sgid, sgid, 16);
    req.sgid_type = gid_type;
    memcpy(req.dgid, dgid, 16);
    trace_pvrdma_cm_to_guest(mad[16] << 8 | mad[17], fget(mad, MSG_LOCAL_ID),
                             fget(mad, MSG_REMOTE_ID));
    pvrdma_responder(cm->t.core, &req);
}

void hc_to_guest(HcConn *k, const uint8_t *mad)
{
    to_guest_gids(k->cm, mad, k->rgid, k->ggid, k->gid_type);
}

void hc_rej_to_guest(HcConn *k, unsigned msg, unsigned reason,
                     const void *priv, size_t len)
{
    uint8_t m[MAD_LEN];

    hc_mad_init(k->cm, m, CM_REJ);
    fset(m, MSG_LOCAL_ID, k->my_id);
    fset(m, MSG_REMOTE_ID, k->guest_id);
    fset(m, REJ_MSG, msg);
    fset(m, REJ_REASON, reason);
    if (priv) {
        memcpy(fmem(m, REJ_PRIV), priv, MIN(len, REJ_PRIV_LEN));
    }
    hc_to_guest(k, m);
}

void hc_simple_to_guest(HcConn *k, uint16_t attr)
{
    uint8_t m[MAD_LEN];

    hc_mad_init(k->cm, m, attr);
    fset(m, MSG_LOCAL_ID, k->my_id);
    fset(m, MSG_REMOTE_ID, k->guest_id);
    if (attr == CM_DREQ) {
        fset(m, DREQ_QPN, k->guest_qpn);
    }
    hc_to_guest(k, m);
}

/* ------------------------------------------------------------------ */
/* From the guest                                                      */

/* Is qpn (a host QP number) one of this guest's host QPs? */
static bool guest_owns_qp(HcCm *cm, uint32_t qpn)
{
    PvrdmaCore *c = cm->t.core;

    for (uint32_t h = 0; h < c->qp.size; h++) {
        PvrdmaQP *qp = c->qp.slot[h];

        if (qp && qp->twin && qp->qpn == qpn) {
            return true;
        }
    }
    return false;
}

/* Fail an active connection before the guest has a REP: REJ it. */
void hc_active_fail(HcCm *cm, HcConn *k, unsigned reason,
                    const void *priv, size_t len)
{
    hc_rej_to_guest(k, REJ_MSG_REQ, reason, priv, len);
    hc_conn_close(cm, k);
}

static void guest_req(HcCm *cm, const uint8_t *m, const PvrdmaReq *r)
{
    uint32_t guest_id = fget(m, REQ_LOCAL_ID);
    uint64_t sid = (uint64_t)fget(m, REQ_SID_HI) << 32 | fget(m, REQ_SID_LO);
    struct sockaddr_storage src, dst;
    uint8_t sgid[16], dgid[16];
    HcConn *k = conn_by_guest(cm, false, guest_id, r->dgid);

    if (k) {
        /* the guest's CM repeats its REQ until it hears back */
        if (k->state == HC_REP_TO_GUEST) {
            hc_to_guest(k, k->mad);
        }
        return;
    }
    k = hc_conn_new(cm, true);
    if (!k) {
        HcConn tmp = { .cm = cm, .guest_id = guest_id,
                       .gid_type = r->sgid_type };

        memcpy(tmp.ggid, r->sgid, 16);
        memcpy(tmp.rgid, r->dgid, 16);
        qemu_log_mask(LOG_GUEST_ERROR,
                      "pvrdma: rdma_cm: more than %u connections being "
                      "set up; REQ refused\n", HC_MAX_CONNS);
        hc_rej_to_guest(&tmp, REJ_MSG_REQ, REJ_NO_RESOURCES, NULL, 0);
        return;
    }
    k->guest_id = guest_id;
    k->guest_qpn = fget(m, REQ_QPN);
    memcpy(k->ggid, r->sgid, 16);
    memcpy(k->rgid, r->dgid, 16);
    k->gid_type = r->sgid_type;
    memcpy(k->mad, m, MAD_LEN);
    trace_pvrdma_cm_guest_req(k->my_id, guest_id, sid, k->guest_qpn);
    if ((sid >> 16) != PS_TCP) {
        hc_active_fail(cm, k, REJ_INVALID_SID, NULL, 0);
        return;
    }
    if (!guest_owns_qp(cm, k->guest_qpn)) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "pvrdma: rdma_cm: REQ for QP 0x%x, not one of the "
                      "guest's; refused\n", k->guest_qpn);
        hc_active_fail(cm, k, REJ_NO_QP, NULL, 0);
        return;
    }
    if (fget(m, REQ_TRANSPORT) != 0 ||
        !cma_hdr_parse(fmem(k->mad, REQ_PRIV), sgid, dgid)) {
        hc_active_fail(cm, k, REJ_UNSUPPORTED, NULL, 0);
        return;
    }
    if (memcmp(sgid, r->sgid, 16)) {
        /* the guest speaks only for its own address */
        qemu_log_mask(LOG_GUEST_ERROR,
                      "pvrdma: rdma_cm: REQ from an address that is not "
                      "the source GID; refused\n");
        hc_active_fail(cm, k, REJ_UNSUPPORTED, NULL, 0);
        return;
    }
    hc_gid_to_sa(sgid, 0, &src);
    hc_gid_to_sa(dgid, sid & 0xffff, &dst);
    if (rdma_create_id(cm->ch, &k->id, k, RDMA_PS_TCP) ||
        rdma_resolve_addr(k->id, (struct sockaddr *)&src,
                          (struct sockaddr *)&dst, HC_TIMEOUT_MS)) {
        char ip[INET6_ADDRSTRLEN];

        pvrdma_gid_str(sgid, ip, sizeof(ip));
        warn_report("pvrdma: rdma_cm: cannot connect from the guest's address "
                    "%s: %s", ip, strerror(errno));
        hc_active_fail(cm, k, REJ_UNREACHABLE, NULL, 0);
        return;
    }
    k->state = HC_RESOLVING;
}

/* The guest answered our REQ with a REP: the host accepts. */
static void guest_rep(HcCm *cm, const uint8_t *m)
{
    HcConn *k = conn_by_my_id(cm, fget(m, REP_REMOTE_ID));
    struct rdma_conn_param p = { 0 };

    if (!k || k->active || k->ud) {
        return;
    }
    if (k->state == HC_ESTABLISHED) {
        hc_simple_to_guest(k, CM_RTU);     /* our RTU was lost */
        return;
    }
    if (k->state != HC_REQ_TO_GUEST) {
        return;
    }
    k->guest_id = fget(m, REP_LOCAL_ID);
    if (!guest_owns_qp(cm, fget(m, REP_QPN))) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "pvrdma: rdma_cm: REP for QP 0x%x, not one of the "
                      "guest's; refused\n", fget(m, REP_QPN));
        hc_rej_to_guest(k, REJ_MSG_REP, REJ_NO_QP, NULL, 0);
        rdma_reject(k->id, NULL, 0);
        hc_conn_close(cm, k);
        return;
    }
    k->guest_qpn = fget(m, REP_QPN);
    p.qp_num = k->guest_qpn;
    p.responder_resources = fget(m, REP_RESP_RES);
    p.initiator_depth = fget(m, REP_INIT_DEPTH);
    p.flow_control = fget(m, REP_FLOW_CTRL);
    p.rnr_retry_count = fget(m, REP_RNR_RETRY);
    p.srq = fget(m, REP_SRQ);
    p.private_data = m + MAD_HDR + REP_PRIV;
    p.private_data_len = REP_PRIV_LEN;
    trace_pvrdma_cm_guest_rep(k->my_id, k->guest_id, k->guest_qpn);
    if (rdma_accept(k->id, &p)) {
        warn_report("pvrdma: rdma_cm: accepting for the guest: %s",
                    strerror(errno));
        hc_rej_to_guest(k, REJ_MSG_REP, REJ_NO_RESOURCES, NULL, 0);
        rdma_reject(k->id, NULL, 0);
        hc_conn_close(cm, k);
        return;
    }
    k->state = HC_ACCEPTED;
}

static void guest_rtu(HcCm *cm, const uint8_t *m)
{
    HcConn *k = conn_by_my_id(cm, fget(m, MSG_REMOTE_ID));

    if (!k || !k->active || k->ud || k->state != HC_REP_TO_GUEST) {
        return;
    }
    if (rdma_establish(k->id)) {
        warn_report("pvrdma: rdma_cm: establishing for the guest: %s",
                    strerror(errno));
        hc_simple_to_guest(k, CM_DREQ);
        hc_conn_close(cm, k);
        return;
    }
    k->state = HC_ESTABLISHED;
}

static void guest_rej(HcCm *cm, const uint8_t *m)
{
    HcConn *k = conn_by_my_id(cm, fget(m, MSG_REMOTE_ID));

    if (!k || k->ud ||
        (k->state != HC_REQ_TO_GUEST && k->state != HC_REP_TO_GUEST)) {
        return;
    }
    trace_pvrdma_cm_guest_rej(k->my_id, fget(m, REJ_REASON));
    rdma_reject(k->id, fmem((uint8_t *)m, REJ_PRIV), REJ_PRIV_LEN);
    hc_conn_close(cm, k);
}

static void guest_dreq(HcCm *cm, const uint8_t *m, const PvrdmaReq *r)
{
    HcConn *k = conn_by_my_id(cm, fget(m, MSG_REMOTE_ID));
    uint8_t d[MAD_LEN];

    if (k && k->ud) {
        k = NULL;       /* SIDR has no connection to disconnect */
    }
    if (k && (k->state == HC_ESTABLISHED || k->state == HC_ACCEPTED ||
              k->state == HC_REP_TO_GUEST)) {
        if (!rdma_disconnect(k->id)) {
            k->state = HC_DISCONNECTING;
            return;
        }
        hc_conn_close(cm, k);
    } else if (k && k->state == HC_DISCONNECTING) {
        return;         /* the host's DREP will answer */
    }
    /* nothing (left) to disconnect: answer at once */
    hc_mad_init(cm, d, CM_DREP);
    fset(d, MSG_LOCAL_ID, fget(m, MSG_REMOTE_ID));
    fset(d, MSG_REMOTE_ID, fget(m, MSG_LOCAL_ID));
    to_guest_gids(cm, d, r->dgid, r->sgid, r->sgid_type);
}

void hc_sidr_rep_to_guest(HcConn *k, unsigned status, uint32_t qpn,
                          uint32_t qkey, const void *priv, size_t len)
{
    uint8_t d[MAD_LEN];

    hc_mad_init(k->cm, d, CM_SIDR_REP);
    fset(d, SIDR_REQ_ID, k->guest_id);
    fset(d, SIDR_REP_STATUS, status);
    if (status == 0) {
        fset(d, SIDR_REP_QPN, qpn);
        fset(d, SIDR_REP_QKEY, qkey);
    }
    fset(d, SIDR_REP_SID_HI, fget(k->mad, SIDR_REQ_SID_HI));
    fset(d, SIDR_REP_SID_LO, fget(k->mad, SIDR_REQ_SID_LO));
    if (priv) {
        memcpy(fmem(d, SIDR_REP_PRIV), priv, MIN(len, SIDR_REP_PRIV_LEN));
    }
    hc_to_guest(k, d);
}

/* Fail a SIDR request of the guest: SIDR_REP with status. */
void hc_sidr_fail(HcCm *cm, HcConn *k, unsigned status)
{
    hc_sidr_rep_to_guest(k, status, 0, 0, NULL, 0);
    hc_conn_close(cm, k);
}

/* rdma_cm over UD (SIDR): the host resolves the remote's QP and Q_Key. */
static void guest_sidr_req(HcCm *cm, const uint8_t *m, const PvrdmaReq *r)
{
    uint32_t guest_id = fget(m, SIDR_REQ_ID);
    uint64_t sid = (uint64_t)fget(m, SIDR_REQ_SID_HI) << 32 |
                   fget(m, SIDR_REQ_SID_LO);
    struct sockaddr_storage src, dst;
    uint8_t sgid[16], dgid[16];
    HcConn *k = conn_by_guest(cm, true, guest_id, r->dgid);

    if (k) {
        return;     /* a repeat: the answer comes when the host has it */
    }
    k = hc_conn_new(cm, true);
    if (!k) {
        HcConn tmp = { .cm = cm, .guest_id = guest_id,
                       .gid_type = r->sgid_type };

        memcpy(tmp.ggid, r->sgid, 16);
        memcpy(tmp.rgid, r->dgid, 16);
        memcpy(tmp.mad, m, MAD_LEN);
        hc_sidr_rep_to_guest(&tmp, SIDR_REJECTED, 0, 0, NULL, 0);
        return;
    }
    k->ud = true;
    k->guest_id = guest_id;
    memcpy(k->ggid, r->sgid, 16);
    memcpy(k->rgid, r->dgid, 16);
    k->gid_type = r->sgid_type;
    memcpy(k->mad, m, MAD_LEN);
    trace_pvrdma_cm_guest_req(k->my_id, guest_id, sid, 0);
    if ((sid >> 16) != PS_UDP) {
        hc_sidr_fail(cm, k, SIDR_UNSUPPORTED);
        return;
    }
    if (!cma_hdr_parse(fmem(k->mad, SIDR_REQ_PRIV), sgid, dgid) ||
        memcmp(sgid, r->sgid, 16)) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "pvrdma: rdma_cm: SIDR_REQ without an rdma_cm header "
                      "from the source GID; refused\n");
        hc_sidr_fail(cm, k, SIDR_REJECTED);
        return;
    }
    hc_gid_to_sa(sgid, 0, &src);
    hc_gid_to_sa(dgid, sid & 0xffff, &dst);
    if (rdma_create_id(cm->ch, &k->id, k, RDMA_PS_UDP) ||
        rdma_resolve_addr(k->id, (struct sockaddr *)&src,
                          (struct sockaddr *)&dst, HC_TIMEOUT_MS)) {
        hc_sidr_fail(cm, k, SIDR_REJECTED);
        return;
    }
    k->state = HC_RESOLVING;
}

/* The guest answered our SIDR_REQ: the host sends its SIDR_REP. */
static void guest_sidr_rep(HcCm *cm, const uint8_t *m)
{
    HcConn *k = conn_by_my_id(cm, fget(m, SIDR_REQ_ID));
    struct rdma_conn_param p = { 0 };

    if (!k || !k->ud || k->active || k->state != HC_REQ_TO_GUEST) {
        return;
    }
    if (fget(m, SIDR_REP_STATUS) != 0) {
        rdma_reject(k->id, fmem((uint8_t *)m, SIDR_REP_PRIV),
                    SIDR_REP_PRIV_LEN);
    } else if (!guest_owns_qp(cm, fget(m, SIDR_REP_QPN))) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "pvrdma: rdma_cm: SIDR_REP for QP 0x%x, not one of "
                      "the guest's; refused\n", fget(m, SIDR_REP_QPN));
        rdma_reject(k->id, NULL, 0);
    } else {
        /* the host answers with rdma_cm's Q_Key, as the guest's does */
        p.qp_num = fget(m, SIDR_REP_QPN);
        p.private_data = m + MAD_HDR + SIDR_REP_PRIV;
        p.private_data_len = SIDR_REP_PRIV_LEN;
        if (rdma_accept(k->id, &p)) {
            warn_report("pvrdma: rdma_cm: answering a SIDR request for the "
                        "guest: %s", strerror(errno));
        }
    }
    hc_conn_close(cm, k);
}

int hc_execute(PvrdmaTransport *t, PvrdmaReq *req)
{
    HcCm *cm = hc_of(t);
    uint8_t m[MAD_LEN] = { 0 };
    PvrdmaSg out = { .iov = &(PvrdmaIov) { .host = m, .len = MAD_LEN },
                     .n = 1, .len = MAD_LEN };
    uint16_t attr;

    if (req->qp_type != PVRDMA_QPT_GSI || req->dest_qpn != PVRDMA_GSI_QPN ||
        req->local.len < MAD_HDR) {
        return PVRDMA_WC_SUCCESS;   /* UD: the network drops it */
    }
    pvrdma_sg_copy(&out, 0, &req->local, 0, MIN(req->local.len, MAD_LEN));
    if (m[0] != 1 || m[1] != CM_CLASS || m[2] != CM_CLASS_VER ||
        m[3] != MAD_SEND) {
        trace_pvrdma_cm_drop(m[1], m[3]);
        return PVRDMA_WC_SUCCESS;
    }
    attr = m[16] << 8 | m[17];
    trace_pvrdma_cm_from_guest(attr, fget(m, MSG_LOCAL_ID),
                               fget(m, MSG_REMOTE_ID));
    switch (attr) {
    case CM_REQ:
        guest_req(cm, m, req);
        break;
    case CM_REP:
        guest_rep(cm, m);
        break;
    case CM_RTU:
        guest_rtu(cm, m);
        break;
    case CM_REJ:
        guest_rej(cm, m);
        break;
    case CM_DREQ:
        guest_dreq(cm, m, req);
        break;
    case CM_SIDR_REQ:
        guest_sidr_req(cm, m, req);
        break;
    case CM_SIDR_REP:
        guest_sidr_rep(cm, m);
        break;
    default:
        break;      /* MRA, DREP, LAP, APR: the host CM keeps its own time */
    }
    return PVRDMA_WC_SUCCESS;
}
