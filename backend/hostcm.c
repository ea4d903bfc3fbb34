/*
 * pvrdma host HCA mode: rdma_cm for the guest.
 *
 * The guest's connection manager talks in CM MADs through its GSI QP
 * (QP1), which the device keeps in software.  On the host, QP1 of the
 * HCA port belongs to the host kernel's CM, so the MADs cannot go out as
 * they are.  This transport translates instead: a guest REQ becomes a
 * QP-less host rdma_cm connection (rdma_connect with the guest's QP
 * number, which is a host QP number in this mode), the host's events come
 * back to the guest as the CM MADs a remote CM would have sent, and the
 * guest's REP / RTU / REJ / DREQ become rdma_accept / rdma_establish /
 * rdma_reject / rdma_disconnect.  Incoming connections reach the guest on
 * the ports it was told to listen on ('cm-listen'), through host listeners
 * bound to the guest's own addresses.
 *
 * The RDMA_PS_TCP (RC: REQ/REP/RTU) and RDMA_PS_UDP (UD: SIDR) port
 * spaces are translated; other port spaces are refused.  The host CM
 * picks its own starting PSNs, which the guest cannot know: when the guest
 * moves a translated QP to RTR, its receive PSN is replaced by the host's
 * (rq_psn hook).  Everything the guest sends is parsed with bounds and a
 * fixed connection budget; the guest never sees host pointers.
 *
 * This file has the host's side: the hooks table and the constructor, the
 * host's rdma_cm events, the listeners; the guest's side, its MADs parsed
 * and built, is in hostcm_mad.c (hostcm_int.h says how the files share
 * the work).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "hostcm_int.h"

#include <arpa/inet.h>
#include <fcntl.h>

typedef struct HcListen {
    int kind;
    bool ud;                /* RDMA_PS_UDP (SIDR), else RDMA_PS_TCP */
    struct rdma_cm_id *id;
    uint8_t gid[16];
    uint16_t port;
} HcListen;

/* ------------------------------------------------------------------ */
/* Host events                                                         */

static bool qp_attr(struct rdma_cm_id *id, enum ibv_qp_state s,
                    struct ibv_qp_attr *a)
{
    int mask;

    memset(a, 0, sizeof(*a));
    a->qp_state = s;
    return rdma_init_qp_attr(id, a, &mask) == 0;
}

static void host_route_resolved(HcCm *cm, HcConn *k)
{
    const uint8_t *m = k->mad;
    struct rdma_conn_param p = { 0 };

    if (k->ud) {
        p.private_data = m + MAD_HDR + SIDR_REQ_PRIV + CMA_HDR_LEN;
        p.private_data_len = SIDR_REQ_PRIV_LEN - CMA_HDR_LEN;
        if (rdma_connect(k->id, &p)) {
            hc_sidr_fail(cm, k, SIDR_REJECTED);
            return;
        }
        k->state = HC_CONNECTING;
        return;
    }

    p.qp_num = k->guest_qpn;
    p.responder_resources = fget(m, REQ_RESP_RES);
    p.initiator_depth = fget(m, REQ_INIT_DEPTH);
    p.flow_control = fget(m, REQ_FLOW_CTRL);
    p.retry_count = fget(m, REQ_RETRY);
    p.rnr_retry_count = fget(m, REQ_RNR_RETRY);
    p.srq = fget(m, REQ_SRQ);
    p.private_data = m + MAD_HDR + REQ_PRIV + CMA_HDR_LEN;
    p.private_data_len = REQ_PRIV_LEN - CMA_HDR_LEN;
    if (rdma_connect(k->id, &p)) {
        warn_report("pvrdma: rdma_cm: connecting for the guest: %s",
                    strerror(errno));
        hc_active_fail(cm, k, REJ_NO_RESOURCES, NULL, 0);
        return;
    }
    k->state = HC_CONNECTING;
}

static void host_connect_response(HcCm *cm, HcConn *k,
                                  const struct rdma_cm_event *ev)
{
    const struct rdma_conn_param *c = &ev->param.conn;
    struct ibv_qp_attr rtr, rts;
    uint8_t *m = k->mad;

    if (!qp_attr(k->id, IBV_QPS_RTR, &rtr) ||
        !qp_attr(k->id, IBV_QPS_RTS, &rts)) {
        rdma_reject(k->id, NULL, 0);
        hc_active_fail(cm, k, REJ_NO_RESOURCES, NULL, 0);
        return;
    }
    k->remote_qpn = c->qp_num;
    k->host_psn = rtr.rq_psn;
    k->have_psn = true;
    hc_mad_init(cm, m, CM_REP);
    fset(m, REP_LOCAL_ID, k->my_id);
    fset(m, REP_REMOTE_ID, k->guest_id);
    fset(m, REP_QPN, c->qp_num);
    fset(m, REP_PSN, rts.sq_psn);
    /* the event has them from the receiver's side; the REP from ours */
    fset(m, REP_RESP_RES, c->initiator_depth);
    fset(m, REP_INIT_DEPTH, c->responder_resources);
    fset(m, REP_ACK_DELAY, 0);
    fset(m, REP_FLOW_CTRL, c->flow_control);
    fset(m, REP_RNR_RETRY, c->rnr_retry_count);
    fset(m, REP_SRQ, c->srq);
    hc_guid_from_gid(m, REP_CA_GUID_HI, REP_CA_GUID_LO, k->rgid);
    if (c->private_data) {
        memcpy(fmem(m, REP_PRIV), c->private_data,
               MIN(c->private_data_len, REP_PRIV_LEN));
    }
    k->state = HC_REP_TO_GUEST;
    hc_to_guest(k, m);
}

/* The guest's GID entry type for gid: RoCE v2 if it has one. */
static uint8_t guest_gid_type(HcCm *cm, const uint8_t gid[16])
{
    PvrdmaCore *c = cm->t.core;
    uint8_t type = PVRDMA_GID_TYPE_FLAG_ROCE_V1;

    for (uint32_t i = 0; i < c->lim.gid_tbl_len; i++) {
        if (c->gid[i].type && !memcmp(c->gid[i].gid.raw, gid, 16)) {
            type = c->gid[i].type;
            if (type == PVRDMA_GID_TYPE_FLAG_ROCE_V2) {
                break;
            }
        }
    }
    return type;
}

static HcConn *host_connect_request(HcCm *cm, HcListen *l,
                                    struct rdma_cm_event *ev)
{
    const struct rdma_conn_param *c = &ev->param.conn;
    struct ibv_qp_attr rtr, rts;
    uint8_t m[MAD_LEN];
    HcConn *k = hc_conn_new(cm, false);

    if (!k) {
        if (!cm->warned_full) {
            cm->warned_full = true;
            warn_report("pvrdma: rdma_cm: more than %u guest connections being "
                        "set up; refusing new ones", HC_MAX_CONNS);
        }
        return NULL;
    }
    k->id = ev->id;
    k->id->context = k;
    memcpy(k->ggid, l->gid, 16);
    hc_sa_to_gid(rdma_get_peer_addr(ev->id), k->rgid);
    k->gid_type = guest_gid_type(cm, l->gid);
    if (!qp_attr(ev->id, IBV_QPS_RTR, &rtr) ||
        !qp_attr(ev->id, IBV_QPS_RTS, &rts)) {
        k->id = NULL;       /* the caller rejects and destroys it */
        hc_conn_close(cm, k);
        return NULL;
    }
    k->remote_qpn = c->qp_num;
    k->host_psn = rtr.rq_psn;
    k->have_psn = true;
    k->state = HC_REQ_TO_GUEST;

    hc_mad_init(cm, m, CM_REQ);
    fset(m, REQ_LOCAL_ID, k->my_id);
    fset(m, REQ_SID_HI, 0);
    fset(m, REQ_SID_LO, PS_TCP << 16 | l->port);
    hc_guid_from_gid(m, REQ_CA_GUID_HI, REQ_CA_GUID_LO, k->rgid);
    fset(m, REQ_QPN, c->qp_num);
    fset(m, REQ_RESP_RES, c->initiator_depth);
    fset(m, REQ_INIT_DEPTH, c->responder_resources);
    fset(m, REQ_REMOTE_CM_TO, 20);
    fset(m, REQ_TRANSPORT, 0);
    fset(m, REQ_FLOW_CTRL, c->flow_control);
    fset(m, REQ_PSN, rts.sq_psn);
    fset(m, REQ_LOCAL_CM_TO, 20);
    fset(m, REQ_RETRY, c->retry_count);
    fset(m, REQ_PKEY, 0xffff);
    fset(m, REQ_MTU, rtr.path_mtu ? rtr.path_mtu : IBV_MTU_1024);
    fset(m, REQ_RNR_RETRY, c->rnr_retry_count);
    fset(m, REQ_MAX_CM_RETRIES, 15);
    fset(m, REQ_SRQ, c->srq);
    fset(m, REQ_LOCAL_LID, 0xffff);
    fset(m, REQ_REMOTE_LID, 0xffff);
    memcpy(fmem(m, REQ_LOCAL_GID), k->rgid, 16);
    memcpy(fmem(m, REQ_REMOTE_GID), k->ggid, 16);
    fset(m, REQ_FLOW_LABEL, rtr.ah_attr.grh.flow_label);
    fset(m, REQ_TCLASS, rtr.ah_attr.grh.traffic_class);
    fset(m, REQ_HOP_LIMIT, rtr.ah_attr.grh.hop_limit);
    fset(m, REQ_SL, rtr.ah_attr.sl);
    fset(m, REQ_SUBNET_LOCAL, rtr.ah_attr.grh.hop_limit <= 1);
    fset(m, REQ_ACK_TO, rts.timeout);
    hc_cma_hdr_build(fmem(m, REQ_PRIV), k->rgid, k->ggid,
                     ntohs(rdma_get_dst_port(ev->id)));
    if (c->private_data) {
        memcpy(fmem(m, REQ_PRIV) + CMA_HDR_LEN, c->private_data,
               MIN(c->private_data_len, REQ_PRIV_LEN - CMA_HDR_LEN));
    }
    trace_pvrdma_cm_host_req(k->my_id, l->port, c->qp_num);
    hc_to_guest(k, m);
    return k;
}

/* A SIDR request for the guest (RDMA_PS_UDP listener): SIDR_REQ to it. */
static HcConn *host_sidr_request(HcCm *cm, HcListen *l,
                                 struct rdma_cm_event *ev)
{
    HcConn *k = hc_conn_new(cm, false);
    uint8_t *m;

    if (!k) {
        return NULL;
    }
    k->ud = true;
    k->id = ev->id;
    k->id->context = k;
    memcpy(k->ggid, l->gid, 16);
    hc_sa_to_gid(rdma_get_peer_addr(ev->id), k->rgid);
    k->gid_type = guest_gid_type(cm, l->gid);
    k->state = HC_REQ_TO_GUEST;
    m = k->mad;
    hc_mad_init(cm, m, CM_SIDR_REQ);
    fset(m, SIDR_REQ_ID, k->my_id);
    fset(m, SIDR_REQ_PKEY, 0xffff);
    fset(m, SIDR_REQ_SID_HI, 0);
    fset(m, SIDR_REQ_SID_LO, PS_UDP << 16 | l->port);
    hc_cma_hdr_build(fmem(m, SIDR_REQ_PRIV), k->rgid, k->ggid,
                     ntohs(rdma_get_dst_port(ev->id)));
    if (ev->param.ud.private_data) {
        memcpy(fmem(m, SIDR_REQ_PRIV) + CMA_HDR_LEN, ev->param.ud.private_data,
               MIN(ev->param.ud.private_data_len,
                   SIDR_REQ_PRIV_LEN - CMA_HDR_LEN));
    }
    trace_pvrdma_cm_host_req(k->my_id, l->port, 0);
    hc_to_guest(k, m);
    return k;
}

/* The host connection failed or ended (errors, REJ, DREQ/DREP). */
static void host_gone(HcCm *cm, HcConn *k, const struct rdma_cm_event *ev)
{
    unsigned reason;

    if (k->ud) {
        if (k->active) {
            hc_sidr_rep_to_guest(k, ev->event == RDMA_CM_EVENT_UNREACHABLE &&
                                 ev->status > 0 ? ev->status : SIDR_REJECTED,
                                 0, 0, NULL, 0);
        }
        hc_conn_close(cm, k);
        return;
    }
    /* the remote's REJ reason, or "unreachable" (see REJ_UNREACHABLE) */
    reason = ev->event == RDMA_CM_EVENT_REJECTED && ev->status > 0 &&
             ev->status != REJ_TIMEOUT ? ev->status : REJ_UNREACHABLE;
    switch (k->state) {
    case HC_RESOLVING:
    case HC_CONNECTING:
        if (ev->event == RDMA_CM_EVENT_REJECTED) {
            hc_rej_to_guest(k, REJ_MSG_REQ, reason,
                            ev->param.conn.private_data,
                            ev->param.conn.private_data_len);
        } else {
            hc_rej_to_guest(k, REJ_MSG_REQ, reason, NULL, 0);
        }
        break;
    case HC_REQ_TO_GUEST:
    case HC_ACCEPTED:
        hc_rej_to_guest(k, REJ_MSG_REP, reason, NULL, 0);
        break;
    case HC_REP_TO_GUEST:
    case HC_ESTABLISHED:
        if (ev->event == RDMA_CM_EVENT_DISCONNECTED) {
            rdma_disconnect(k->id);     /* the host's DREP */
        }
        hc_simple_to_guest(k, CM_DREQ);
        break;
    case HC_DISCONNECTING:
        hc_simple_to_guest(k, CM_DREP);
        break;
    }
    hc_conn_close(cm, k);
}

/*
 * Events are copied and acknowledged first: an id cannot be destroyed
 * while one of its events is unacknowledged.
 */
static void hc_event(HcCm *cm, struct rdma_cm_event *ev)
{
    struct rdma_cm_event e = *ev;
    uint8_t priv[REP_PRIV_LEN];
    HcConn *k;
    int *kind;

    if (ev->param.conn.private_data) {
        e.param.conn.private_data_len = MIN(ev->param.conn.private_data_len,
                                            sizeof(priv));
        memcpy(priv, ev->param.conn.private_data,
               e.param.conn.private_data_len);
        e.param.conn.private_data = priv;
    }
    rdma_ack_cm_event(ev);
    trace_pvrdma_cm_host_event(e.event, e.status);
    if (e.event == RDMA_CM_EVENT_CONNECT_REQUEST) {
        HcListen *l = e.listen_id->context;

        if (!(l->ud ? host_sidr_request(cm, l, &e) :
              host_connect_request(cm, l, &e))) {
            rdma_reject(e.id, NULL, 0);
            rdma_destroy_id(e.id);
        }
        return;
    }
    kind = e.id->context;
    if (!kind || *kind != HC_KIND_CONN) {
        return;     /* listeners: nothing else to do */
    }
    k = (HcConn *)kind;
    switch (e.event) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
        if (k->state == HC_RESOLVING &&
            rdma_resolve_route(k->id, HC_TIMEOUT_MS)) {
            if (k->ud) {
                hc_sidr_fail(cm, k, SIDR_REJECTED);
            } else {
                hc_active_fail(cm, k, REJ_UNREACHABLE, NULL, 0);
            }
        }
        break;
    case RDMA_CM_EVENT_ROUTE_RESOLVED:
        if (k->state == HC_RESOLVING) {
            host_route_resolved(cm, k);
        }
        break;
    case RDMA_CM_EVENT_CONNECT_RESPONSE:
        if (!k->ud && k->state == HC_CONNECTING) {
            host_connect_response(cm, k, &e);
        }
        break;
    case RDMA_CM_EVENT_ESTABLISHED:
        if (k->ud && k->active && k->state == HC_CONNECTING) {
            hc_sidr_rep_to_guest(k, 0, e.param.ud.qp_num, e.param.ud.qkey,
                                 e.param.ud.private_data,
                                 e.param.ud.private_data_len);
            hc_conn_close(cm, k);
        } else if (!k->active && k->state == HC_ACCEPTED) {
            k->state = HC_ESTABLISHED;
            hc_simple_to_guest(k, CM_RTU);
        }
        break;
    case RDMA_CM_EVENT_ADDR_ERROR:
    case RDMA_CM_EVENT_ROUTE_ERROR:
    case RDMA_CM_EVENT_CONNECT_ERROR:
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_REJECTED:
    case RDMA_CM_EVENT_DISCONNECTED:
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
        host_gone(cm, k, &e);
        break;
    default:
        break;
    }
}

static void hc_ready(void *opaque)
{
    HcCm *cm = opaque;
    PvrdmaCore *c = cm->t.core;
    struct rdma_cm_event *ev;

    while ((errno = 0, rdma_get_cm_event(cm->ch, &ev) == 0)) {
        hc_event(cm, ev);
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK && !cm->gone) {
        /* the host's rdma_cm failed: stop watching it, not spin on it */
        cm->gone = true;
        c->ops->set_fd_handler(c->opaque, cm->ch->fd, NULL, NULL, NULL);
        warn_report("pvrdma: rdma_cm: the host's event channel failed (%s); "
                    "no more RDMA CM for the guest", strerror(errno));
    }
}

/* ------------------------------------------------------------------ */
/* Listeners on the guest's addresses                                  */

static void listen_free(gpointer p)
{
    HcListen *l = p;

    if (l->id) {
        rdma_destroy_id(l->id);
    }
    g_free(l);
}

static void listen_add(HcCm *cm, const uint8_t g[16], uint16_t port, bool ud)
{
    struct sockaddr_storage sa;
    HcListen *l;

    for (unsigned i = 0; i < cm->listens->len; i++) {
        l = g_ptr_array_index(cm->listens, i);
        if (l->port == port && l->ud == ud && !memcmp(l->gid, g, 16)) {
            return;
        }
    }
    l = g_new0(HcListen, 1);
    l->kind = HC_KIND_LISTEN;
    l->ud = ud;
    memcpy(l->gid, g, 16);
    l->port = port;
    hc_gid_to_sa(g, port, &sa);
    if (rdma_create_id(cm->ch, &l->id, l, ud ? RDMA_PS_UDP : RDMA_PS_TCP) ||
        rdma_bind_addr(l->id, (struct sockaddr *)&sa) ||
        rdma_listen(l->id, 64)) {
        char ip[INET6_ADDRSTRLEN];
        g_autofree char *key = NULL;
        int err = errno;

        pvrdma_gid_str(g, ip, sizeof(ip));
        key = g_strdup_printf("%s %u %s", ip, port, ud ? "UDP" : "TCP");
        if (!g_hash_table_contains(cm->warned, key)) {
            warn_report("pvrdma: rdma_cm: cannot listen for the guest on %s "
                        "port %u (%s port space: %s); the host needs "
                        "that address on its RDMA interface and the "
                        "port free", ip, port, ud ? "UDP" : "TCP",
                        strerror(err));
            g_hash_table_add(cm->warned, g_steal_pointer(&key));
        }
        listen_free(l);
        return;
    }
    trace_pvrdma_cm_listen(port, ud);
    g_ptr_array_add(cm->listens, l);
}

/* Which guest GIDs can carry rdma_cm: IPv4 ones and global IPv6 ones. */
static bool gid_listenable(const uint8_t g[16])
{
    static const uint8_t zero[16];

    return memcmp(g, zero, 16) && !(g[0] == 0xfe && (g[1] & 0xc0) == 0x80);
}

static void hc_gids_changed(PvrdmaTransport *t)
{
    HcCm *cm = hc_of(t);
    PvrdmaCore *c = t->core;
    GHashTableIter it;
    HcConn *k;

    for (unsigned i = cm->listens->len; i-- > 0;) {
        HcListen *l = g_ptr_array_index(cm->listens, i);

        if (!pvrdma_gid_is_local(c, l->gid)) {
            g_ptr_array_remove_index(cm->listens, i);
        }
    }
    g_hash_table_iter_init(&it, cm->conns);
    while (g_hash_table_iter_next(&it, NULL, (gpointer *)&k)) {
        if (!pvrdma_gid_is_local(c, k->ggid)) {
            trace_pvrdma_cm_close(k->my_id, k->guest_id, k->state);
            g_hash_table_iter_remove(&it);  /* reset, GID removed */
        }
    }
    for (uint32_t i = 0; i < c->lim.gid_tbl_len; i++) {
        if (c->gid[i].type && gid_listenable(c->gid[i].gid.raw)) {
            for (unsigned p = 0; p < cm->nports; p++) {
                listen_add(cm, c->gid[i].gid.raw, cm->ports[p], false);
                listen_add(cm, c->gid[i].gid.raw, cm->ports[p], true);
            }
        }
    }
}

/*
 * The guest moves QP qpn to RTR towards dest_qpn at dgid: if it belongs
 * to a translated connection, its receive PSN must be the one the host CM
 * told the remote.
 */
static bool hc_rq_psn(PvrdmaTransport *t, uint32_t qpn, uint32_t dest_qpn,
                      const uint8_t dgid[16], uint32_t *psn)
{
    HcCm *cm = hc_of(t);
    GHashTableIter it;
    HcConn *k;

    g_hash_table_iter_init(&it, cm->conns);
    while (g_hash_table_iter_next(&it, NULL, (gpointer *)&k)) {
        if (!k->have_psn || k->remote_qpn != dest_qpn ||
            memcmp(k->rgid, dgid, 16)) {
            continue;
        }
        if (k->active ? k->guest_qpn == qpn :
            (k->state == HC_REQ_TO_GUEST &&
             (!k->guest_qpn || k->guest_qpn == qpn))) {
            k->guest_qpn = qpn;
            *psn = k->host_psn;
            trace_pvrdma_cm_psn(qpn, k->host_psn);
            return true;
        }
    }
    return false;
}

static void hc_destroy(PvrdmaTransport *t)
{
    HcCm *cm = hc_of(t);
    PvrdmaCore *c = t->core;

    if (!cm->gone) {
        c->ops->set_fd_handler(c->opaque, cm->ch->fd, NULL, NULL, NULL);
    }
    g_hash_table_destroy(cm->conns);
    g_ptr_array_free(cm->listens, true);
    g_hash_table_destroy(cm->warned);
    rdma_destroy_event_channel(cm->ch);
    g_free(cm->ports);
    g_free(cm);
}

/*
 * The GSI agent: the GSI QP's MADs for a GID no other transport reaches
 * (all but those to this device's own GIDs) come here; reaches nothing by
 * itself.
 */
static const PvrdmaMessageOps hc_msg = {
    .execute = hc_execute,
};

static const PvrdmaTransportOps hc_ops = {
    .name = "hostcm",
    .flags = PVRDMA_TP_GSI_AGENT,
    .gids_changed = hc_gids_changed,
    .rq_psn = hc_rq_psn,
    .destroy = hc_destroy,
    .msg = &hc_msg,
};

PvrdmaTransport *pvrdma_hostcm_new(PvrdmaCore *c, const uint16_t *ports,
                                   unsigned nports, Error **errp)
{
    HcCm *cm;
    int fl;

    if (!c->ops->set_fd_handler) {
        error_setg(errp, "rdma_cm: the host has no set_fd_handler to watch "
                   "the event channel with");
        return NULL;
    }
    cm = g_new0(HcCm, 1);
    cm->ch = rdma_create_event_channel();
    if (!cm->ch) {
        error_setg(errp, "rdma_cm: cannot open the host's rdma_cm (%s); "
                   "is rdma_ucm loaded?", strerror(errno));
        g_free(cm);
        return NULL;
    }
    fl = fcntl(cm->ch->fd, F_GETFL);
    fcntl(cm->ch->fd, F_SETFL, fl | O_NONBLOCK);
    cm->t = (PvrdmaTransport) { .ops = &hc_ops, .core = c };
    cm->ports = g_memdup2(ports, nports * sizeof(*ports));
    cm->nports = nports;
    cm->conns = g_hash_table_new_full(NULL, NULL, NULL,
                                      (GDestroyNotify)hc_conn_free);
    cm->listens = g_ptr_array_new_with_free_func(listen_free);
    cm->warned = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    cm->next_id = g_random_int();
    cm->next_tid = (uint64_t)g_random_int() << 32;
    c->ops->set_fd_handler(c->opaque, cm->ch->fd, hc_ready, NULL, cm);
    return &cm->t;
}
