/*
 * pvrdma rdma_cm for the guest in host HCA mode: what its files share.
 *
 * The translator (hostcm.c says what it does) is split by the side it
 * faces:
 *   hostcm.c      the host's side: the transport's hooks table and its
 *                 constructor, the host rdma_cm event loop (each event
 *                 answered to the guest as the CM MAD a remote CM would
 *                 have sent), the host listeners on the guest's
 *                 addresses, the receive PSN hook (rq_psn)
 *   hostcm_mad.c  the guest's side: the CM MADs' fields, building MADs
 *                 for the guest, the MADs from the guest parsed and made
 *                 host rdma_cm calls (the execute hook), the connections
 *                 table both sides look connections up in
 * Calls between them go one way: hostcm.c calls hostcm_mad.c, never the
 * other way round.
 *
 * Owns the constants, the CM MAD layouts, the types both use, the small
 * helpers (inline) and the functions hostcm.c takes from hostcm_mad.c.  Only
 * these files include it; the transport's API, for the device and the
 * tests, is in include/hw/rdma/pvrdma_hostcm.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_BACKEND_HOSTCM_INT_H
#define HW_RDMA_BACKEND_HOSTCM_INT_H

#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_hostcm.h"
#include "hw/rdma/pvrdma_transport_calls.h"

#include <rdma/rdma_cma.h>

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
#define HC_MAX_CONNS        1024        /* a harness may build with fewer */
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

struct HcCm {
    PvrdmaTransport t;
    struct rdma_event_channel *ch;
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

static inline HcCm *hc_of(PvrdmaTransport *t)
{
    return container_of(t, HcCm, t);
}

/* MAD fields (big-endian bit strings) */

static inline uint32_t fget(const uint8_t *m, CmField f)
{
    unsigned pos = (MAD_HDR + f.byte) * 8 + f.bit;
    uint32_t v = 0;

    for (unsigned i = 0; i < f.width; i++, pos++) {
        v = v << 1 | ((m[pos >> 3] >> (7 - (pos & 7))) & 1);
    }
    return v;
}

static inline void fset(uint8_t *m, CmField f, uint32_t v)
{
    unsigned pos = (MAD_HDR + f.byte) * 8 + f.bit + f.width;

    for (unsigned i = 0; i < f.width; i++, v >>= 1) {
        uint8_t b;

        pos--;
        b = 1u << (7 - (pos & 7));
        m[pos >> 3] = (v & 1) ? (m[pos >> 3] | b) : (m[pos >> 3] & ~b);
    }
}

static inline uint8_t *fmem(uint8_t *m, unsigned byte)
{
    return m + MAD_HDR + byte;
}

/* hostcm_mad.c: the guest's side */

/* MAD fields */
void hc_mad_init(HcCm *cm, uint8_t *m, uint16_t attr);
void hc_guid_from_gid(uint8_t *m, CmField hi, CmField lo,
                      const uint8_t gid[16]);

/* Addresses */
void hc_gid_to_sa(const uint8_t g[16], uint16_t port,
                  struct sockaddr_storage *ss);
void hc_sa_to_gid(const struct sockaddr *sa, uint8_t g[16]);
void hc_cma_hdr_build(uint8_t *p, const uint8_t src[16],
                      const uint8_t dst[16], uint16_t port);

/* Connections */
void hc_conn_free(HcConn *k);
void hc_conn_close(HcCm *cm, HcConn *k);
HcConn *hc_conn_new(HcCm *cm, bool active);

/* To the guest */
void hc_to_guest(HcConn *k, const uint8_t *mad);
void hc_rej_to_guest(HcConn *k, unsigned msg, unsigned reason,
                     const void *priv, size_t len);
void hc_simple_to_guest(HcConn *k, uint16_t attr);
void hc_sidr_rep_to_guest(HcConn *k, unsigned status, uint32_t qpn,
                          uint32_t qkey, const void *priv, size_t len);

/* From the guest */
void hc_active_fail(HcCm *cm, HcConn *k, unsigned reason,
                    const void *priv, size_t len);
void hc_sidr_fail(HcCm *cm, HcConn *k, unsigned status);
/* The execute hook: the guest's MADs on its GSI QP. */
int hc_execute(PvrdmaTransport *t, PvrdmaReq *req);

#endif
