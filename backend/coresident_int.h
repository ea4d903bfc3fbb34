/*
 * pvrdma co-resident transport: what its files share (their constants,
 * types, inline helpers, and the functions one calls in another, grouped
 * by the file that defines them).  Calls go one way: coresident.c >
 * coresident_data.c > coresident_resp.c > coresident_peer.c >
 * coresident_link.c > coresident_ring.c, with coresident_qp.c and
 * coresident_gid.c below the data path; a lower layer reaches a higher
 * one through the upcalls the constructor sets (t->up, t->link_up).  Only
 * these files include it.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_BACKEND_CORESIDENT_INT_H
#define HW_RDMA_BACKEND_CORESIDENT_INT_H

#include <sys/socket.h>
#include <sys/un.h>
#include "io/channel-socket.h"
#include "hw/rdma/pvrdma_coresident.h"
#include "hw/rdma/pvrdma_transport_calls.h"
#include "hw/rdma/pvrdma_coresident_wire.h"

#define CR_MAX_REGIONS  32
#define CR_MAX_GIDS     PVRDMA_HARD_GID_TBL_LEN
/* 2 GiB messages of 4 KiB pages, plus one extra entry per SGE */
#define CR_MAX_REQ_SG   ((1u << 19) + PVRDMA_HARD_MAX_SGE)
#define CR_MAX_INFLIGHT (1u << 20)      /* our requests at one peer */
#define CR_MAX_WAITING  (1u << 16)      /* one peer's requests waiting here */
/*
 * Bytes of messages for one peer that neither its socket nor its ring
 * takes: past this, it does not read (a hostile or hung peer) and goes.
 * The unit tests build with a smaller bound.
 */
#ifndef CR_MAX_QUEUED
#define CR_MAX_QUEUED   (64u << 20)
#endif
#define CR_RX_BATCH     64              /* messages per read callback */
#define CR_SOCK_NAME    22              /* "/<16 hex digits>.sock" */
/* how long a moved peer's GIDs wait for the QEMU that took its place */
#define CR_MOVE_GRACE_MS 10000
/* how long a fence waits for the peers to answer a QP's requests */
/* every QP (cr_waiting_drop(), cr_cancel_flights(), cr_fence()) */
#define CR_ANY_QP       UINT32_MAX
/* cr_waiting_drop(): drop without an answer */
#define CR_NO_ANSWER    (-1)

typedef struct CrTransport CrTransport;
typedef struct CrRing CrRing;
/* polling rounds of one event before the loop gets its turn again */
#define CR_POLL_ROUNDS  64

typedef struct CrOut {
    size_t len;
    int fd;                 /* sent with the message, then closed; -1 */
    uint8_t data[];
} CrOut;

typedef struct CrPeer {
    CrTransport *t;
    QIOChannelSocket *sioc; /* its connection (non-blocking) */
    int fd;                 /* sioc's descriptor, for the fd handlers */
    char *name;             /* for messages: its socket, its pid */
    char *label;            /* its socket, or management's name for it */
    int pid;                /* SO_PEERCRED */
    bool outgoing;          /* we connected (else it connected to us) */
    /* management gave the connection: outgoing is the lower node id's */
    bool given;
    bool dead;
    bool hello;
    bool authed;            /* accepted: it gets our RAM, we take its */
    bool want_write;
    uint64_t node;
    uint64_t features;      /* CR_F_* this connection uses: both offered */
    uint8_t nonce[CR_NONCE_LEN];        /* ours, for its AUTH */
    uint8_t peer_nonce[CR_NONCE_LEN];   /* its, for our AUTH */
    uint32_t nregions;      /* announced in HELLO */
    uint32_t nmapped;
    struct {
        uint8_t *host;
        uint64_t size;
    } region[CR_MAX_REGIONS];
    CrGid *gids;            /* the GIDs it owns here */
    uint32_t ngids;
    CrGid *refused;         /* announced but owned by someone else */
    uint32_t nrefused;
    GQueue out;             /* CrOut waiting for the socket */
    size_t queued;          /* bytes in out and ring_out: CR_MAX_QUEUED */
    struct CrInReq *partial;    /* REQ still collecting MORE messages */
    uint32_t inflight;      /* our requests it has not answered */
    uint32_t nreqs;         /* its requests held here (CrInReq alive) */
    bool paused;            /* it sent PAUSE: it gets no new requests */
    bool closing;           /* dropped once its queue is sent (cr_moved) */
    bool pause_sent;        /* we sent it PAUSE ... */
    bool acked;             /* ... and it answered PAUSED */
    uint8_t *tx;            /* messages collected for one datagram */
    size_t txlen;
    /*
     * The rings (CR_RING, coresident_ring.c): once ring_tx, what we send
     * goes through the ring (what does not fit waits in ring_out, CrOut);
     * once ring_rx (the peer's RING_ON), we read the peer's ring.
     */
    CrRing *ring;
    bool ring_tx;
    bool ring_rx;
    bool host_polls;        /* the host polls our ring (set_fd_poll) */
    GQueue ring_out;
} CrPeer;

/*
 * Records kept for the next request: a list through their first member,
 * at most CR_POOL_MAX of them.
 */
typedef struct CrPool {
    void *head;
    unsigned n;
} CrPool;

/* A peer's request at this responder. */
typedef struct CrInReq {
    struct CrInReq *next_free;  /* first: in CrTransport.inreq_pool */
    struct CrInReq *wnext;      /* the next waiting for its QP (CrWaitList) */
    CrPeer *peer;
    PvrdmaReq req;          /* req.local points into the peer's RAM */
    uint32_t nsg_total;
    uint64_t len;
    int64_t deadline;       /* RNR: ms, 0 = wait forever, -1 = not set */
    uint64_t seg_off;       /* moved in pieces: bytes moved so far */
} CrInReq;

/*
 * Peers' requests waiting for a QP's receives (RNR), oldest first, linked
 * through their wnext: queueing one allocates nothing.
 */
typedef struct CrWaitList {
    CrInReq *head, *tail;
    unsigned length;
} CrWaitList;

static inline void cr_wait_push(CrWaitList *l, CrInReq *r)
{
    r->wnext = NULL;
    if (l->tail) {
        l->tail->wnext = r;
    } else {
        l->head = r;
    }
    l->tail = r;
    l->length++;
}

/* The oldest, taken off the list; NULL if it is empty. */
static inline CrInReq *cr_wait_pop(CrWaitList *l)
{
    CrInReq *r = l->head;

    if (r) {
        l->head = r->wnext;
        if (!l->head) {
            l->tail = NULL;
        }
        l->length--;
        r->wnext = NULL;
    }
    return r;
}

typedef struct CrQp CrQp;

/* One of our requests at a peer (coresident_qp.c). */
typedef struct CrFlight {
    uint64_t wire;          /* the cookie on the wire: sequence, slot */
    CrQp *q;                /* its QP's record (in its list), NULL: free */
    struct CrFlight *qprev, *qnext;
    uint64_t cookie;        /* the core's (PvrdmaReq.cookie) */
    CrPeer *peer;
    uint32_t qpn;
    uint32_t npsn;          /* RC: PSNs it would take on the wire */
    bool rc;
    bool cancelled;         /* CANCEL sent for its QP */
    /*
     * A READ or an atomic: our buffers the peer writes, reported dirty when
     * it answers or goes (cr_flight_written()).  The array stays with the
     * record for the next request (capacity written_cap).
     */
    PvrdmaIov *written;
    uint32_t nwritten, written_cap;
} CrFlight;

/*
 * What the transport keeps of one QP number of ours, as requester and as
 * responder (coresident_qp.c says for how long): in t->qps.
 */
struct CrQp {
    uint32_t qpn;
    bool gone;              /* the QP went: freed once nothing is left */
    CrFlight *first, *last; /* our requests in flight at peers, in order */
    uint32_t nflights;
    CrWaitList waiting;     /* peers' requests for it: RNR */
};

static inline bool cr_qp_idle(const CrQp *q)
{
    return !q->nflights && !q->waiting.length;
}

/* An iteration over t->qps (cr_qp_next()). */
typedef struct CrQpIter {
    GHashTableIter it;
    CrQp *last;
} CrQpIter;


/*
 * What the peers' layer (coresident_peer.c) hands up to the data path
 * (coresident_data.c), which is above it: set by the constructor.
 */
typedef struct CrUpcalls {
    /*
     * A message of accepted peer p past the handshake (REQ, MORE, RESP,
     * CANCEL, OFFER, ANSWER, PAUSE, PAUSED, RESUME, MOVED; cr_rx()):
     * false if it is malformed.
     */
    bool (*rx)(CrPeer *p, const uint8_t *buf, size_t len);
    /*
     * Dead peer p is being freed (cr_reap()): drop what it asked of us,
     * fail what it owes us.
     */
    void (*peer_gone)(CrPeer *p);
} CrUpcalls;

/*
 * What the link (coresident_link.c) hands up to the peers' layer
 * (coresident_peer.c), which is above it: set by the constructor.
 */
typedef struct CrLinkUpcalls {
    /* One message of p (fd: a descriptor came with it): false if bad. */
    bool (*rx)(CrPeer *p, const uint8_t *buf, size_t len, int fd);
    /* End of an event: send what it produced, free dead peers. */
    void (*done)(CrTransport *t);
} CrLinkUpcalls;

struct CrTransport {
    PvrdmaTransport t;
    char *dir;
    char *sock_path;
    int lfd;
    uint64_t node;
    uid_t uid;              /* peers must run as this uid */
    uint8_t *secret;        /* shared secret (HMAC key); NULL: none */
    size_t secret_len;
    PvrdmaShmRegion *regions;
    unsigned nregions;
    GPtrArray *peers;       /* CrPeer */
    GHashTable *qps;        /* our QP number -> CrQp (coresident_qp.c) */
    /* our requests at peers (coresident_qp.c): slots, free slots */
    CrFlight **flights;
    uint32_t *flight_free;
    uint32_t flight_cap, nflight_free, nflights;
    uint32_t flight_seq;    /* the wire cookies' high half */
    bool reap;              /* some peer is dead: free it at a safe point */
    bool accept_paused;     /* out of descriptors: listener not watched */
    bool paused;            /* our VM stopped for a save: no new requests */
    bool quiesced;          /* ... and every peer answered our PAUSE */
    bool moved;             /* our state went to another QEMU */
    uint32_t fence_qpn;     /* cr_fence(): the QP whose flights must end */
    bool fencing;           /* ... and the core waits to hear it (cr_done) */
    GArray *moved_gids;     /* CrMovedGid: GIDs of peers that moved */
    CrUpcalls up;           /* the data path, for the peers' layer */
    CrLinkUpcalls link_up;  /* the peers' layer, for the link */
    uint8_t *rx;            /* receive buffer, CR_MAX_MSG + 1 */
    /*
     * The data path allocates nothing per request: records that ended wait
     * here for the next (at most CR_POOL_MAX of each), a REQ or MORE is
     * built in txmsg (CR_MAX_MSG) and a request's buffer in sgs.
     */
    CrPool inreq_pool;      /* CrInReq */
    uint8_t *txmsg;
    CrSge *sgs;
    uint32_t sgs_cap;
    /*
     * Polling (pvrdma_coresident_set_poll()): after taking records from a
     * peer's ring, wait up to poll_ns for more before sleeping.  While
     * polling (the host's locks are dropped) no peer is freed.
     */
    uint64_t poll_ns;
    bool poll_self;         /* peers in this process too (tests) */
    bool polling;
    bool ring_backlog;      /* a ring was left with records: timer hook */
    uint32_t ring_size;     /* rings we offer (0: none), CR_RING_SIZE */
    uint64_t features;      /* CR_F_* our HELLO offers: CR_F_ALL */
};

#define CR_POOL_MAX     1024

/* A GID of a peer that moved, waiting for its new owner until 'until'. */
typedef struct CrMovedGid {
    uint8_t gid[16];
    int64_t until;          /* ms, ops->now_ms() */
} CrMovedGid;

static inline CrTransport *cr(PvrdmaTransport *t)
{
    return (CrTransport *)t;
}

/* A peer accepted, whose RAM we have mapped: requests go both ways. */
static inline bool cr_peer_ready(const CrPeer *p)
{
    return !p->dead && p->authed && p->nmapped == p->nregions;
}

/* coresident_gid.c: who owns which GID */

/* The ready peer that owns gid, or NULL. */
CrPeer *cr_peer_for_gid(CrTransport *t, const uint8_t gid[16]);
/* A moved peer owned gid, and it still waits for its new owner. */
bool cr_gid_moved(CrTransport *t, const uint8_t gid[16]);
/* p announces its GID table gids[n]: it gets those nobody else owns. */
void cr_claim_gids(CrPeer *p, const CrGid *gids, uint32_t n);
/* A peer went: the others claim again the GIDs they were refused. */
void cr_reclaim(CrTransport *t);
/* A live peer other than p that announced a GID p owns, or NULL. */
CrPeer *cr_gid_rival(CrTransport *t, const CrPeer *p);

/* coresident_peer.c: the peers' connections, handshake, RAM */

/* CrLinkUpcalls.rx: one message of p, checked and dispatched */
bool cr_peer_rx(CrPeer *p, const uint8_t *buf, size_t len, int fd);
/* End of an event: cr_flush(), then free the dead peers. */
void cr_done(CrTransport *t);
/* A message of only a header: PAUSE, PAUSED, RESUME, MOVED. */
void cr_send_ctl(CrPeer *p, uint32_t type);
/* Our GID table, to p. */
void cr_send_gids(CrTransport *t, CrPeer *p);
/* Free the dead peers (not while polling); true if there were any. */
bool cr_reap(CrTransport *t);
/* The listening socket is readable: accept peers. */
void cr_accept(void *opaque);
/* A connected socket as a peer's channel; fd is ours, closed on failure */
QIOChannelSocket *cr_channel(int fd, Error **errp);
/* A unix socket address for path; false if it does not fit. */
bool cr_sockaddr(const char *path, struct sockaddr_un *sa);
/* Connect to every listening peer in the directory. */
void cr_scan(CrTransport *t);
bool cr_peer_add(CrTransport *t, int fd, const char *name, Error **errp);

/* coresident_link.c: the link to one peer, its socket and rings */

/* Mark a peer dead; it is freed by cr_reap() outside any iteration. */
void cr_peer_fail(CrPeer *p, const char *why);
/* Watch p's socket (readable; writable while sends wait). */
void cr_link_watch(CrPeer *p);
/* p is being freed: no watch, no socket, nothing queued, no rings. */
void cr_link_close(CrPeer *p);
/* Send one message to p (collected until cr_flush(), unless fd >= 0). */
void cr_send(CrPeer *p, const void *buf, size_t len, int fd);
/* Send what cr_send() collected, to every peer. */
void cr_flush(CrTransport *t);
/* The same, as the transport's flush hook (one datagram per peer). */
void cr_flush_hook(PvrdmaTransport *pt);
/* The connecting side offers p the rings (RING). */
void cr_link_ring_offer(CrPeer *p);
/* RING and RING_ON of p: false if malformed. */
bool cr_link_rx_ring(CrPeer *p, const CrRingMsg *m, size_t len, int fd);
/* fd is a file sealed against shrinking: mapping it is safe (ring.c) */
bool cr_link_rx_ring_on(CrPeer *p, size_t len);
/* WAKE (records in p's ring) and ROOM (p took from ours) */
bool cr_link_rx_wake(CrPeer *p, size_t len);
bool cr_link_rx_room(CrPeer *p, size_t len);
/* p's socket is writable / readable (cr_serve_until(), no polling). */
void cr_peer_write(void *opaque);
void cr_peer_read(void *opaque);
/* p's socket as an fd handler: cr_peer_read(), then poll p's ring. */
void cr_peer_event(void *opaque);
/* Take what the peers left in their rings (the timer hook). */
void cr_rings_catch_up(CrTransport *t);

/* coresident_ring.c: the rings (their memory: CrRingShm in the wire header) */

CrRing *cr_ring_create(uint32_t size, Error **errp);
uint32_t cr_ring_size(const CrRing *r);
CrRing *cr_ring_map(int fd, uint32_t ring_size, Error **errp);
int cr_ring_fd(CrRing *r);
void cr_ring_close_fd(CrRing *r);
void cr_ring_free(CrRing *r);
int cr_ring_put(CrRing *r, const void *buf, uint32_t len);
bool cr_ring_needs_wake(CrRing *r);
void cr_ring_took_wake(CrRing *r);
bool cr_ring_wait_space(CrRing *r, uint32_t len);
int cr_ring_get(CrRing *r, void *buf, uint32_t cap);
bool cr_ring_ready(const CrRing *r);
bool cr_ring_sleep(CrRing *r);
void cr_ring_awake(CrRing *r);
bool cr_ring_space_wanted(CrRing *r);

/* coresident_qp.c: per QP of ours; our requests at peers, by wire cookie */

void cr_qps_init(CrTransport *t);
CrQp *cr_qp_find(CrTransport *t, uint32_t qpn);
CrQp *cr_qp_get(CrTransport *t, uint32_t qpn);
void cr_qp_put(CrTransport *t, CrQp *q);
void cr_qp_iter_init(CrTransport *t, CrQpIter *it);
CrQp *cr_qp_next(CrQpIter *it);
void cr_qps_fini(CrTransport *t);
CrFlight *cr_flight_add(CrTransport *t, CrQp *q);
CrFlight *cr_flight_find(CrTransport *t, uint64_t wire);
void cr_flight_remove(CrTransport *t, CrFlight *f);
/* No flight of QP t->fence_qpn (CR_ANY_QP: of any QP) is left. */
bool cr_fenced(CrTransport *t);
CrFlight *cr_flight_next(CrTransport *t, uint32_t *i);
void cr_flight_written(CrTransport *t, CrFlight *f);
void cr_flights_fini(CrTransport *t);

/* coresident_data.c: the data path */

/* Free the pools and buffers of the data path (cr_destroy()). */
void cr_data_fini(CrTransport *t);
/* Our QP qpn (CR_ANY_QP: every QP) is gone: CANCEL to its peers. */
void cr_cancel_flights(CrTransport *t, uint32_t qpn);
/* CrUpcalls.rx and CrUpcalls.peer_gone */
bool cr_data_rx(CrPeer *p, const uint8_t *buf, size_t len);
void cr_data_peer_gone(CrPeer *p);
/* hooks (PvrdmaTransportOps) */
int cr_execute(PvrdmaTransport *pt, PvrdmaReq *req);
int cr_qp_offer(PvrdmaTransport *pt, PvrdmaQP *qp, uint32_t sq_psn,
                uint32_t rq_psn);
void cr_qp_gone(PvrdmaTransport *pt, uint32_t qpn);

/* coresident_resp.c: the responder */

/* A peer's request from the transport's pool, its iov array kept. */
CrInReq *cr_inreq_new(CrTransport *t);
/* Free a peer's request (done with, or dropped): back to the pool. */
void cr_inreq_free(CrInReq *r);
/* The pool's requests freed (cr_data_fini()). */
void cr_inreq_pool_fini(CrTransport *t);
/* Answer peer r's request with status (RESP). */
void cr_respond(CrInReq *r, int status);
/* ... and execute it, or queue it behind what waits for its QP */
void cr_execute_in(CrTransport *t, CrInReq *r);
/*
 * Drop peer p's requests (of its QP src_qpn, or CR_ANY_QP) waiting here,
 * answering each with status unless CR_NO_ANSWER.
 */
void cr_waiting_drop(CrTransport *t, CrPeer *p, uint32_t src_qpn,
                     int status);
/*
 * The pause: peers' requests moving in pieces (one per run of the loop,
 * PvrdmaCore.run_bytes) move the rest of their data now.
 */
void cr_finish_pieces(CrTransport *t);
/* hook (PvrdmaMessageOps.wake): serve what waits for a receive */
void cr_wake(PvrdmaTransport *pt);

#endif
