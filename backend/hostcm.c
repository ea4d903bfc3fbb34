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
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef PVRDMA_STANDALONE
#include "qemu/osdep.h"
#endif
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/rdma_backend.h"

#include <rdma/rdma_cma.h>
#include <arpa/inet.h>
#include <fcntl.h>

#define MAD_LEN         256
#define MAD_HDR         24          /* CM fields start after the MAD header */
#define CM_CLASS        0x07
#define CM_CLASS_VER    2
#define MAD_SEND        0x03

enum {
    CM_REQ = 0x10, CM_MRA, CM_REJ, CM_REP, CM_RTU, CM_DREQ, CM_DREP,
    CM_SIDR_REQ, CM_SIDR_REP,
};

/* A CM message field: byte after the MAD header, first bit from the MSB */
typedef struct CmField {
    uint8_t byte, bit, width;
} CmField;

static const CmField REQ_LOCAL_ID = { 0, 0, 32 };
static const CmField REQ_SID_HI = { 8, 0, 32 };
static const CmField REQ_SID_LO = { 12, 0, 32 };
static const CmField REQ_CA_GUID_HI = { 16, 0, 32 };
static const CmField REQ_CA_GUID_LO = { 20, 0, 32 };
static const CmField REQ_QPN = { 32, 0, 24 };
static const CmField REQ_RESP_RES = { 35, 0, 8 };
static const CmField REQ_INIT_DEPTH = { 39, 0, 8 };
static const CmField REQ_REMOTE_CM_TO = { 43, 0, 5 };
static const CmField REQ_TRANSPORT = { 43, 5, 2 };
static const CmField REQ_FLOW_CTRL = { 43, 7, 1 };
static const CmField REQ_PSN = { 44, 0, 24 };
static const CmField REQ_LOCAL_CM_TO = { 47, 0, 5 };
static const CmField REQ_RETRY = { 47, 5, 3 };
static const CmField REQ_PKEY = { 48, 0, 16 };
static const CmField REQ_MTU = { 50, 0, 4 };
static const CmField REQ_RNR_RETRY = { 50, 5, 3 };
static const CmField REQ_MAX_CM_RETRIES = { 51, 0, 4 };
static const CmField REQ_SRQ = { 51, 4, 1 };
static const CmField REQ_LOCAL_LID = { 52, 0, 16 };
static const CmField REQ_REMOTE_LID = { 54, 0, 16 };
#define REQ_LOCAL_GID       56          /* 16 bytes */
#define REQ_REMOTE_GID      72
static const CmField REQ_FLOW_LABEL = { 88, 0, 20 };
static const CmField REQ_TCLASS = { 92, 0, 8 };
static const CmField REQ_HOP_LIMIT = { 93, 0, 8 };
static const CmField REQ_SL = { 94, 0, 4 };
static const CmField REQ_SUBNET_LOCAL = { 94, 4, 1 };
static const CmField REQ_ACK_TO = { 95, 0, 5 };
#define REQ_PRIV            140
#define REQ_PRIV_LEN        92

static const CmField REP_LOCAL_ID = { 0, 0, 32 };
static const CmField REP_REMOTE_ID = { 4, 0, 32 };
static const CmField REP_QPN = { 12, 0, 24 };
static const CmField REP_PSN = { 20, 0, 24 };
static const CmField REP_RESP_RES = { 24, 0, 8 };
static const CmField REP_INIT_DEPTH = { 25, 0, 8 };
static const CmField REP_ACK_DELAY = { 26, 0, 5 };
static const CmField REP_FLOW_CTRL = { 26, 7, 1 };
static const CmField REP_RNR_RETRY = { 27, 0, 3 };
static const CmField REP_SRQ = { 27, 3, 1 };
static const CmField REP_CA_GUID_HI = { 28, 0, 32 };
static const CmField REP_CA_GUID_LO = { 32, 0, 32 };
#define REP_PRIV            36
#define REP_PRIV_LEN        196

/* RTU, REJ, DREQ, DREP, MRA */
static const CmField MSG_LOCAL_ID = { 0, 0, 32 };
static const CmField MSG_REMOTE_ID = { 4, 0, 32 };
static const CmField REJ_MSG = { 8, 0, 2 };
static const CmField REJ_REASON = { 10, 0, 16 };
#define REJ_PRIV            84
#define REJ_PRIV_LEN        148
static const CmField DREQ_QPN = { 8, 0, 24 };

static const CmField SIDR_REQ_ID = { 0, 0, 32 };   /* also in SIDR_REP */
static const CmField SIDR_REQ_PKEY = { 4, 0, 16 };
static const CmField SIDR_REQ_SID_HI = { 8, 0, 32 };
static const CmField SIDR_REQ_SID_LO = { 12, 0, 32 };
#define SIDR_REQ_PRIV       16
#define SIDR_REQ_PRIV_LEN   216
static const CmField SIDR_REP_STATUS = { 4, 0, 8 };
static const CmField SIDR_REP_QPN = { 8, 0, 24 };
static const CmField SIDR_REP_SID_HI = { 12, 0, 32 };
static const CmField SIDR_REP_SID_LO = { 16, 0, 32 };
static const CmField SIDR_REP_QKEY = { 20, 0, 32 };
#define SIDR_REP_PRIV       96
#define SIDR_REP_PRIV_LEN   136

#define REJ_MSG_REQ         0
#define REJ_MSG_REP         1
#define REJ_NO_QP           1
#define REJ_TIMEOUT         4
/*
 * What the guest hears when the host could not reach the remote (address,
 * route, no answer): "invalid GID".  Not TIMEOUT: a CM looks a REJ with
 * reason TIMEOUT up in its time-wait list, by the ARI, and drops it.
 */
#define REJ_UNREACHABLE     12
#define REJ_UNSUPPORTED     5
#define REJ_INVALID_SID     8
#define REJ_NO_RESOURCES    3
#define SIDR_UNSUPPORTED    1
#define SIDR_REJECTED       2

#define CMA_HDR_LEN         36          /* rdma_cm's header in REQ data */
#define PS_TCP              0x0106
#define PS_UDP              0x0111

#ifndef HC_MAX_CONNS
#define HC_MAX_CONNS        1024        /* tests/fuzz builds with fewer */
#endif
#define HC_STALE_MS         60000       /* unfinished handshakes */
#define HC_TIMEOUT_MS       2000        /* address and route resolution */

typedef enum {
    HC_RESOLVING,       /* active: host resolving address, route */
    HC_CONNECTING,      /* active: host REQ sent */
    HC_REP_TO_GUEST,    /* active: REP given to the guest, RTU awaited */
    HC_REQ_TO_GUEST,    /* passive: REQ given to the guest */
    HC_ACCEPTED,        /* passive: guest's REP sent by the host */
    HC_ESTABLISHED,
    HC_DISCONNECTING,   /* the guest's DREQ sent by the host */
} HcState;

enum { HC_KIND_CONN = 1, HC_KIND_LISTEN };

typedef struct HcCm HcCm;

typedef struct HcConn {
    int kind;
    HcCm *cm;
    struct rdma_cm_id *id;
    HcState state;
    bool active;
    bool ud;                /* SIDR (UD service ID resolution) */
    bool have_psn;
    uint32_t my_id;         /* our comm ID: the guest's "remote" one */
    uint32_t guest_id;      /* the guest's comm ID */
    uint32_t guest_qpn;     /* 0 until known (passive: at RTR) */
    uint32_t remote_qpn;
    uint32_t host_psn;      /* the PSN the remote starts sending with */
    uint8_t ggid[16];       /* the guest's GID */
    uint8_t rgid[16];       /* the remote's GID */
    uint8_t gid_type;
    int64_t since;
    uint8_t mad[MAD_LEN];   /* the REQ / SIDR_REQ; active: then our REP */
} HcConn;

typedef struct HcListen {
    int kind;
    bool ud;                /* RDMA_PS_UDP (SIDR), else RDMA_PS_TCP */
    struct rdma_cm_id *id;
    uint8_t gid[16];
    uint16_t port;
} HcListen;

struct HcCm {
    PvrdmaTransport t;
    struct rdma_event_channel *ch;
    const PvrdmaLoopOps *loop;
    void *loop_opaque;
    uint16_t *ports;
    unsigned nports;
    GHashTable *conns;      /* my_id -> HcConn */
    GPtrArray *listens;     /* HcListen */
    GHashTable *warned;     /* "ip port" listeners already reported */
    uint32_t next_id;
    uint64_t next_tid;
    bool warned_full;       /* incoming requests over the budget */
    bool gone;              /* the event channel failed: not watched */
};

/* ------------------------------------------------------------------ */
/* MAD fields (big-endian bit strings)                                 */

static uint32_t fget(const uint8_t *m, CmField f)
{
    unsigned pos = (MAD_HDR + f.byte) * 8 + f.bit;
    uint32_t v = 0;

    for (unsigned i = 0; i < f.width; i++, pos++) {
        v = v << 1 | ((m[pos >> 3] >> (7 - (pos & 7))) & 1);
    }
    return v;
}

static void fset(uint8_t *m, CmField f, uint32_t v)
{
    unsigned pos = (MAD_HDR + f.byte) * 8 + f.bit + f.width;

    for (unsigned i = 0; i < f.width; i++, v >>= 1) {
        uint8_t b;

        pos--;
        b = 1u << (7 - (pos & 7));
        m[pos >> 3] = (v & 1) ? (m[pos >> 3] | b) : (m[pos >> 3] & ~b);
    }
}

static uint8_t *fmem(uint8_t *m, unsigned byte)
{
    return m + MAD_HDR + byte;
}

static void mad_init(HcCm *cm, uint8_t *m, uint16_t attr)
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

static void guid_from_gid(uint8_t *m, CmField hi, CmField lo,
                          const uint8_t gid[16])
{
    fset(m, hi, (uint32_t)gid[8] << 24 | gid[9] << 16 | gid[10] << 8 |
                gid[11]);
    fset(m, lo, (uint32_t)gid[12] << 24 | gid[13] << 16 | gid[14] << 8 |
                gid[15]);
}

/* ------------------------------------------------------------------ */
/* Addresses                                                           */

static void gid_to_sa(const uint8_t g[16], uint16_t port,
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

static void sa_to_gid(const struct sockaddr *sa, uint8_t g[16])
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

static void cma_hdr_build(uint8_t *p, const uint8_t src[16],
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

static HcCm *hc_of(PvrdmaTransport *t)
{
    return container_of(t, HcCm, t);
}

static int64_t hc_now(HcCm *cm)
{
    PvrdmaCore *c = cm->t.core;

    return c->ops->now_ms(c->opaque);
}

static void conn_free(HcConn *k)
{
    if (k->id) {
        rdma_destroy_id(k->id);
    }
    g_free(k);
}

static void conn_close(HcCm *cm, HcConn *k)
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

static HcConn *conn_new(HcCm *cm, bool active)
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

static void to_guest(HcConn *k, const uint8_t *mad)
{
    to_guest_gids(k->cm, mad, k->rgid, k->ggid, k->gid_type);
}

static void rej_to_guest(HcConn *k, unsigned msg, unsigned reason,
                         const void *priv, size_t len)
{
    uint8_t m[MAD_LEN];

    mad_init(k->cm, m, CM_REJ);
    fset(m, MSG_LOCAL_ID, k->my_id);
    fset(m, MSG_REMOTE_ID, k->guest_id);
    fset(m, REJ_MSG, msg);
    fset(m, REJ_REASON, reason);
    if (priv) {
        memcpy(fmem(m, REJ_PRIV), priv, MIN(len, REJ_PRIV_LEN));
    }
    to_guest(k, m);
}

static void simple_to_guest(HcConn *k, uint16_t attr)
{
    uint8_t m[MAD_LEN];

    mad_init(k->cm, m, attr);
    fset(m, MSG_LOCAL_ID, k->my_id);
    fset(m, MSG_REMOTE_ID, k->guest_id);
    if (attr == CM_DREQ) {
        fset(m, DREQ_QPN, k->guest_qpn);
    }
    to_guest(k, m);
}

/* ------------------------------------------------------------------ */
/* From the guest                                                      */

/* Is qpn (a host QP number) one of this guest's host QPs? */
static bool guest_owns_qp(HcCm *cm, uint32_t qpn)
{
    PvrdmaCore *c = cm->t.core;

    for (uint32_t h = 0; h < c->qp.size; h++) {
        PvrdmaQP *qp = c->qp.slot[h];

        if (qp && qp->hw && qp->qpn == qpn) {
            return true;
        }
    }
    return false;
}

/* Fail an active connection before the guest has a REP: REJ it. */
static void active_fail(HcCm *cm, HcConn *k, unsigned reason,
                        const void *priv, size_t len)
{
    rej_to_guest(k, REJ_MSG_REQ, reason, priv, len);
    conn_close(cm, k);
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
            to_guest(k, k->mad);
        }
        return;
    }
    k = conn_new(cm, true);
    if (!k) {
        HcConn tmp = { .cm = cm, .guest_id = guest_id,
                       .gid_type = r->sgid_type };

        memcpy(tmp.ggid, r->sgid, 16);
        memcpy(tmp.rgid, r->dgid, 16);
        pvrdma_log_guest_error("rdma_cm: more than %u connections being "
                               "set up; REQ refused", HC_MAX_CONNS);
        rej_to_guest(&tmp, REJ_MSG_REQ, REJ_NO_RESOURCES, NULL, 0);
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
        active_fail(cm, k, REJ_INVALID_SID, NULL, 0);
        return;
    }
    if (!guest_owns_qp(cm, k->guest_qpn)) {
        pvrdma_log_guest_error("rdma_cm: REQ for QP 0x%x, not one of the "
                               "guest's; refused", k->guest_qpn);
        active_fail(cm, k, REJ_NO_QP, NULL, 0);
        return;
    }
    if (fget(m, REQ_TRANSPORT) != 0 ||
        !cma_hdr_parse(fmem(k->mad, REQ_PRIV), sgid, dgid)) {
        active_fail(cm, k, REJ_UNSUPPORTED, NULL, 0);
        return;
    }
    if (memcmp(sgid, r->sgid, 16)) {
        /* the guest speaks only for its own address */
        pvrdma_log_guest_error("rdma_cm: REQ from an address that is not "
                               "the source GID; refused");
        active_fail(cm, k, REJ_UNSUPPORTED, NULL, 0);
        return;
    }
    gid_to_sa(sgid, 0, &src);
    gid_to_sa(dgid, sid & 0xffff, &dst);
    if (rdma_create_id(cm->ch, &k->id, k, RDMA_PS_TCP) ||
        rdma_resolve_addr(k->id, (struct sockaddr *)&src,
                          (struct sockaddr *)&dst, HC_TIMEOUT_MS)) {
        char ip[INET6_ADDRSTRLEN];

        pvrdma_gid_str(sgid, ip, sizeof(ip));
        pvrdma_log_host("rdma_cm: cannot connect from the guest's address "
                        "%s: %s", ip, strerror(errno));
        active_fail(cm, k, REJ_UNREACHABLE, NULL, 0);
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
        simple_to_guest(k, CM_RTU);     /* our RTU was lost */
        return;
    }
    if (k->state != HC_REQ_TO_GUEST) {
        return;
    }
    k->guest_id = fget(m, REP_LOCAL_ID);
    if (!guest_owns_qp(cm, fget(m, REP_QPN))) {
        pvrdma_log_guest_error("rdma_cm: REP for QP 0x%x, not one of the "
                               "guest's; refused", fget(m, REP_QPN));
        rej_to_guest(k, REJ_MSG_REP, REJ_NO_QP, NULL, 0);
        rdma_reject(k->id, NULL, 0);
        conn_close(cm, k);
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
        pvrdma_log_host("rdma_cm: accepting for the guest: %s",
                        strerror(errno));
        rej_to_guest(k, REJ_MSG_REP, REJ_NO_RESOURCES, NULL, 0);
        rdma_reject(k->id, NULL, 0);
        conn_close(cm, k);
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
        pvrdma_log_host("rdma_cm: establishing for the guest: %s",
                        strerror(errno));
        simple_to_guest(k, CM_DREQ);
        conn_close(cm, k);
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
    conn_close(cm, k);
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
        conn_close(cm, k);
    } else if (k && k->state == HC_DISCONNECTING) {
        return;         /* the host's DREP will answer */
    }
    /* nothing (left) to disconnect: answer at once */
    mad_init(cm, d, CM_DREP);
    fset(d, MSG_LOCAL_ID, fget(m, MSG_REMOTE_ID));
    fset(d, MSG_REMOTE_ID, fget(m, MSG_LOCAL_ID));
    to_guest_gids(cm, d, r->dgid, r->sgid, r->sgid_type);
}

static void sidr_rep_to_guest(HcConn *k, unsigned status, uint32_t qpn,
                              uint32_t qkey, const void *priv, size_t len)
{
    uint8_t d[MAD_LEN];

    mad_init(k->cm, d, CM_SIDR_REP);
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
    to_guest(k, d);
}

/* Fail a SIDR request of the guest: SIDR_REP with status. */
static void sidr_fail(HcCm *cm, HcConn *k, unsigned status)
{
    sidr_rep_to_guest(k, status, 0, 0, NULL, 0);
    conn_close(cm, k);
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
    k = conn_new(cm, true);
    if (!k) {
        HcConn tmp = { .cm = cm, .guest_id = guest_id,
                       .gid_type = r->sgid_type };

        memcpy(tmp.ggid, r->sgid, 16);
        memcpy(tmp.rgid, r->dgid, 16);
        memcpy(tmp.mad, m, MAD_LEN);
        sidr_rep_to_guest(&tmp, SIDR_REJECTED, 0, 0, NULL, 0);
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
        sidr_fail(cm, k, SIDR_UNSUPPORTED);
        return;
    }
    if (!cma_hdr_parse(fmem(k->mad, SIDR_REQ_PRIV), sgid, dgid) ||
        memcmp(sgid, r->sgid, 16)) {
        pvrdma_log_guest_error("rdma_cm: SIDR_REQ without an rdma_cm header "
                               "from the source GID; refused");
        sidr_fail(cm, k, SIDR_REJECTED);
        return;
    }
    gid_to_sa(sgid, 0, &src);
    gid_to_sa(dgid, sid & 0xffff, &dst);
    if (rdma_create_id(cm->ch, &k->id, k, RDMA_PS_UDP) ||
        rdma_resolve_addr(k->id, (struct sockaddr *)&src,
                          (struct sockaddr *)&dst, HC_TIMEOUT_MS)) {
        sidr_fail(cm, k, SIDR_REJECTED);
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
        pvrdma_log_guest_error("rdma_cm: SIDR_REP for QP 0x%x, not one of "
                               "the guest's; refused", fget(m, SIDR_REP_QPN));
        rdma_reject(k->id, NULL, 0);
    } else {
        /* the host answers with rdma_cm's Q_Key, as the guest's does */
        p.qp_num = fget(m, SIDR_REP_QPN);
        p.private_data = m + MAD_HDR + SIDR_REP_PRIV;
        p.private_data_len = SIDR_REP_PRIV_LEN;
        if (rdma_accept(k->id, &p)) {
            pvrdma_log_host("rdma_cm: answering a SIDR request for the "
                            "guest: %s", strerror(errno));
        }
    }
    conn_close(cm, k);
}

static int hc_execute(PvrdmaTransport *t, PvrdmaReq *req)
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
            sidr_fail(cm, k, SIDR_REJECTED);
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
        pvrdma_log_host("rdma_cm: connecting for the guest: %s",
                        strerror(errno));
        active_fail(cm, k, REJ_NO_RESOURCES, NULL, 0);
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
        active_fail(cm, k, REJ_NO_RESOURCES, NULL, 0);
        return;
    }
    k->remote_qpn = c->qp_num;
    k->host_psn = rtr.rq_psn;
    k->have_psn = true;
    mad_init(cm, m, CM_REP);
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
    guid_from_gid(m, REP_CA_GUID_HI, REP_CA_GUID_LO, k->rgid);
    if (c->private_data) {
        memcpy(fmem(m, REP_PRIV), c->private_data,
               MIN(c->private_data_len, REP_PRIV_LEN));
    }
    k->state = HC_REP_TO_GUEST;
    to_guest(k, m);
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
    HcConn *k = conn_new(cm, false);

    if (!k) {
        if (!cm->warned_full) {
            cm->warned_full = true;
            pvrdma_log_host("rdma_cm: more than %u guest connections being "
                            "set up; refusing new ones", HC_MAX_CONNS);
        }
        return NULL;
    }
    k->id = ev->id;
    k->id->context = k;
    memcpy(k->ggid, l->gid, 16);
    sa_to_gid(rdma_get_peer_addr(ev->id), k->rgid);
    k->gid_type = guest_gid_type(cm, l->gid);
    if (!qp_attr(ev->id, IBV_QPS_RTR, &rtr) ||
        !qp_attr(ev->id, IBV_QPS_RTS, &rts)) {
        k->id = NULL;       /* the caller rejects and destroys it */
        conn_close(cm, k);
        return NULL;
    }
    k->remote_qpn = c->qp_num;
    k->host_psn = rtr.rq_psn;
    k->have_psn = true;
    k->state = HC_REQ_TO_GUEST;

    mad_init(cm, m, CM_REQ);
    fset(m, REQ_LOCAL_ID, k->my_id);
    fset(m, REQ_SID_HI, 0);
    fset(m, REQ_SID_LO, PS_TCP << 16 | l->port);
    guid_from_gid(m, REQ_CA_GUID_HI, REQ_CA_GUID_LO, k->rgid);
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
    cma_hdr_build(fmem(m, REQ_PRIV), k->rgid, k->ggid,
                  ntohs(rdma_get_dst_port(ev->id)));
    if (c->private_data) {
        memcpy(fmem(m, REQ_PRIV) + CMA_HDR_LEN, c->private_data,
               MIN(c->private_data_len, REQ_PRIV_LEN - CMA_HDR_LEN));
    }
    trace_pvrdma_cm_host_req(k->my_id, l->port, c->qp_num);
    to_guest(k, m);
    return k;
}

/* A SIDR request for the guest (RDMA_PS_UDP listener): SIDR_REQ to it. */
static HcConn *host_sidr_request(HcCm *cm, HcListen *l,
                                 struct rdma_cm_event *ev)
{
    HcConn *k = conn_new(cm, false);
    uint8_t *m;

    if (!k) {
        return NULL;
    }
    k->ud = true;
    k->id = ev->id;
    k->id->context = k;
    memcpy(k->ggid, l->gid, 16);
    sa_to_gid(rdma_get_peer_addr(ev->id), k->rgid);
    k->gid_type = guest_gid_type(cm, l->gid);
    k->state = HC_REQ_TO_GUEST;
    m = k->mad;
    mad_init(cm, m, CM_SIDR_REQ);
    fset(m, SIDR_REQ_ID, k->my_id);
    fset(m, SIDR_REQ_PKEY, 0xffff);
    fset(m, SIDR_REQ_SID_HI, 0);
    fset(m, SIDR_REQ_SID_LO, PS_UDP << 16 | l->port);
    cma_hdr_build(fmem(m, SIDR_REQ_PRIV), k->rgid, k->ggid,
                  ntohs(rdma_get_dst_port(ev->id)));
    if (ev->param.ud.private_data) {
        memcpy(fmem(m, SIDR_REQ_PRIV) + CMA_HDR_LEN, ev->param.ud.private_data,
               MIN(ev->param.ud.private_data_len,
                   SIDR_REQ_PRIV_LEN - CMA_HDR_LEN));
    }
    trace_pvrdma_cm_host_req(k->my_id, l->port, 0);
    to_guest(k, m);
    return k;
}

/* The host connection failed or ended (errors, REJ, DREQ/DREP). */
static void host_gone(HcCm *cm, HcConn *k, const struct rdma_cm_event *ev)
{
    unsigned reason;

    if (k->ud) {
        if (k->active) {
            sidr_rep_to_guest(k, ev->event == RDMA_CM_EVENT_UNREACHABLE &&
                              ev->status > 0 ? ev->status : SIDR_REJECTED,
                              0, 0, NULL, 0);
        }
        conn_close(cm, k);
        return;
    }
    /* the remote's REJ reason, or "unreachable" (see REJ_UNREACHABLE) */
    reason = ev->event == RDMA_CM_EVENT_REJECTED && ev->status > 0 &&
             ev->status != REJ_TIMEOUT ? ev->status : REJ_UNREACHABLE;
    switch (k->state) {
    case HC_RESOLVING:
    case HC_CONNECTING:
        if (ev->event == RDMA_CM_EVENT_REJECTED) {
            rej_to_guest(k, REJ_MSG_REQ, reason, ev->param.conn.private_data,
                         ev->param.conn.private_data_len);
        } else {
            rej_to_guest(k, REJ_MSG_REQ, reason, NULL, 0);
        }
        break;
    case HC_REQ_TO_GUEST:
    case HC_ACCEPTED:
        rej_to_guest(k, REJ_MSG_REP, reason, NULL, 0);
        break;
    case HC_REP_TO_GUEST:
    case HC_ESTABLISHED:
        if (ev->event == RDMA_CM_EVENT_DISCONNECTED) {
            rdma_disconnect(k->id);     /* the host's DREP */
        }
        simple_to_guest(k, CM_DREQ);
        break;
    case HC_DISCONNECTING:
        simple_to_guest(k, CM_DREP);
        break;
    }
    conn_close(cm, k);
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
                sidr_fail(cm, k, SIDR_REJECTED);
            } else {
                active_fail(cm, k, REJ_UNREACHABLE, NULL, 0);
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
            sidr_rep_to_guest(k, 0, e.param.ud.qp_num, e.param.ud.qkey,
                              e.param.ud.private_data,
                              e.param.ud.private_data_len);
            conn_close(cm, k);
        } else if (!k->active && k->state == HC_ACCEPTED) {
            k->state = HC_ESTABLISHED;
            simple_to_guest(k, CM_RTU);
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
    struct rdma_cm_event *ev;

    while ((errno = 0, rdma_get_cm_event(cm->ch, &ev) == 0)) {
        hc_event(cm, ev);
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK && !cm->gone) {
        /* the host's rdma_cm failed: stop watching it, not spin on it */
        cm->gone = true;
        cm->loop->set_fd_handler(cm->loop_opaque, cm->ch->fd, NULL, NULL,
                                 NULL);
        pvrdma_log_host("rdma_cm: the host's event channel failed (%s); "
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
    gid_to_sa(g, port, &sa);
    if (rdma_create_id(cm->ch, &l->id, l, ud ? RDMA_PS_UDP : RDMA_PS_TCP) ||
        rdma_bind_addr(l->id, (struct sockaddr *)&sa) ||
        rdma_listen(l->id, 64)) {
        char ip[INET6_ADDRSTRLEN];
        g_autofree char *key = NULL;
        int err = errno;

        pvrdma_gid_str(g, ip, sizeof(ip));
        key = g_strdup_printf("%s %u %s", ip, port, ud ? "UDP" : "TCP");
        if (!g_hash_table_contains(cm->warned, key)) {
            pvrdma_log_host("rdma_cm: cannot listen for the guest on %s "
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

    if (!cm->gone) {
        cm->loop->set_fd_handler(cm->loop_opaque, cm->ch->fd, NULL, NULL,
                                 NULL);
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
static const PvrdmaTransportOps hc_ops = {
    .name = "hostcm",
    .flags = PVRDMA_TP_GSI_AGENT,
    .execute = hc_execute,
    .gids_changed = hc_gids_changed,
    .rq_psn = hc_rq_psn,
    .destroy = hc_destroy,
};

PvrdmaTransport *pvrdma_hostcm_new(PvrdmaCore *c, const uint16_t *ports,
                                   unsigned nports, const PvrdmaLoopOps *loop,
                                   void *loop_opaque, char **err)
{
    HcCm *cm = g_new0(HcCm, 1);
    int fl;

    cm->ch = rdma_create_event_channel();
    if (!cm->ch) {
        *err = g_strdup_printf("rdma_cm: cannot open the host's rdma_cm "
                               "(%s); is rdma_ucm loaded?", strerror(errno));
        g_free(cm);
        return NULL;
    }
    fl = fcntl(cm->ch->fd, F_GETFL);
    fcntl(cm->ch->fd, F_SETFL, fl | O_NONBLOCK);
    cm->t = (PvrdmaTransport) { .ops = &hc_ops, .core = c };
    cm->loop = loop;
    cm->loop_opaque = loop_opaque;
    cm->ports = g_memdup2(ports, nports * sizeof(*ports));
    cm->nports = nports;
    cm->conns = g_hash_table_new_full(NULL, NULL, NULL,
                                      (GDestroyNotify)conn_free);
    cm->listens = g_ptr_array_new_with_free_func(listen_free);
    cm->warned = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    cm->next_id = g_random_int();
    cm->next_tid = (uint64_t)g_random_int() << 32;
    loop->set_fd_handler(loop_opaque, cm->ch->fd, hc_ready, NULL, cm);
    return &cm->t;
}
