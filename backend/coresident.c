/*
 * pvrdma co-resident transport: VMs on one host exchange verbs through
 * each other's guest RAM, with no HCA and no host kernel RDMA.
 *
 * Rendezvous.  Every device joins a directory named on its command line:
 * it listens on "<node>.sock" there and connects to every socket already
 * present (under an flock of "<dir>/.lock", so each pair of peers ends up
 * with exactly one connection; sockets nobody listens on are removed).
 * The directory must belong to this process's user and be writable by
 * nobody else (it is created 0700); the socket is made 0600 before it
 * listens.
 *
 * Who may join.  A connection whose other end runs as another uid
 * (SO_PEERCRED) is closed before anything is sent on it.  With a shared
 * secret, each side must also prove it knows the secret before the other
 * sends it anything more (see pvrdma_coresident_wire.h for the HMAC).
 *
 * Handshake (vhost-user style).  Over the SOCK_SEQPACKET connection each
 * side sends HELLO (with a nonce), then, with a secret, AUTH; once a side
 * has accepted its peer it sends one REGION message per shareable guest
 * RAM block with the block's file descriptor (SCM_RIGHTS), then GIDS, its
 * GID table (again whenever the guest changes it).  Each side maps the
 * other's regions once, whole: an accepted peer can read and write all of
 * this guest's RAM.  A GID that this device or an earlier peer owns is
 * not taken from a peer's GIDS (first owner wins, ours always).
 *
 * Data path: the responder copies.  The requester turns its local buffer
 * into (region, offset, length) triples of its own RAM and sends REQ (plus
 * MORE messages for long lists); the responder's device resolves its own
 * side (receive WQE, or rkey) exactly as for loopback and copies straight
 * between the two guests' memory -- one memcpy, no intermediate buffer --
 * then answers RESP with the requester's completion status.  READ and
 * atomics write the requester's memory the same way.
 *
 * RNR.  A request that finds no receive waits at the responder, in order
 * with what follows it for the same QP, until a receive is posted or the
 * requester's RNR retry budget runs out.  When the requester's QP is
 * destroyed, reset or moved to error, it sends CANCEL: what that QP still
 * has waiting at the peer is dropped, never delivered later.
 *
 * A peer that goes away (EOF, or a malformed message: a peer is another
 * process of the same user, but it runs a guest, so it is checked like
 * one): its in-flight requests are unanswered (RC: the core completes them
 * with RETRY_EXC_ERR after the QP's retry window) and its waiting requests
 * are dropped.  A request for a QP that does not exist or is not ready is
 * answered NO_RESPONDER the same way.
 *
 * Everything runs in the caller's event loop (QEMU's main loop, BQL held).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef PVRDMA_STANDALONE
#include "qemu/osdep.h"
#else
#define _GNU_SOURCE     /* accept4, MSG_CMSG_CLOEXEC */
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#endif
#include <poll.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include "hw/rdma/rdma_backend.h"
#include "hw/rdma/pvrdma_coresident_wire.h"

#define CR_MAX_REGIONS  32
#define CR_MAX_GIDS     PVRDMA_HARD_GID_TBL_LEN
/* 2 GiB messages of 4 KiB pages, plus one extra entry per SGE */
#define CR_MAX_REQ_SG   ((1u << 19) + PVRDMA_HARD_MAX_SGE)
#define CR_MAX_INFLIGHT (1u << 20)      /* our requests at one peer */
#define CR_MAX_WAITING  (1u << 16)      /* one peer's requests waiting here */
#define CR_RX_BATCH     64              /* messages per read callback */
#define CR_SOCK_NAME    22              /* "/<16 hex digits>.sock" */
/* how long a moved peer's GIDs wait for the QEMU that took its place */
#define CR_MOVE_GRACE_MS 10000
/* how long a fence waits for the peers to answer a QP's requests */
#define CR_FENCE_MS     5000

typedef struct CrTransport CrTransport;

typedef struct CrOut {
    size_t len;
    int fd;                 /* sent with the message, then closed; -1 */
    uint8_t data[];
} CrOut;

typedef struct CrPeer {
    CrTransport *t;
    int fd;
    char *name;             /* for messages: its socket, its pid */
    int pid;                /* SO_PEERCRED */
    bool outgoing;          /* we connected (else it connected to us) */
    bool dead;
    bool hello;
    bool authed;            /* accepted: it gets our RAM, we take its */
    bool want_write;
    uint64_t node;
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
    struct CrInReq *partial;    /* REQ still collecting MORE messages */
    uint32_t inflight;      /* our requests it has not answered */
    uint32_t nreqs;         /* its requests held here (CrInReq alive) */
    bool paused;            /* it sent PAUSE: it gets no new requests */
    bool pause_sent;        /* we sent it PAUSE ... */
    bool acked;             /* ... and it answered PAUSED */
    uint8_t *tx;            /* messages collected for one datagram */
    size_t txlen;
} CrPeer;

/* A peer's request at this responder. */
typedef struct CrInReq {
    CrPeer *peer;
    PvrdmaReq req;          /* req.local points into the peer's RAM */
    uint32_t nsg_total;
    uint64_t len;
    int64_t deadline;       /* RNR: ms, 0 = wait forever, -1 = not set */
} CrInReq;

/* One of our requests at a peer. */
typedef struct CrFlight {
    uint64_t cookie;        /* key */
    CrPeer *peer;
    uint32_t qpn;
    uint32_t npsn;          /* RC: PSNs it would take on the wire */
    bool rc;
    bool cancelled;         /* CANCEL sent for its QP */
} CrFlight;

/*
 * PSNs.  Nothing here needs them, but an RC QP may have to carry on over
 * RoCEv2 if its peer moves to another host (PvrdmaTransportOps.moving):
 * both ends count what the wire would have counted, the requester when a
 * request succeeds, the responder when it executes one, in the QP's
 * attributes (what QUERY_QP reports, and what migrates).  Both use their
 * own path MTU, which a working wire connection has the same at both ends.
 */
static void cr_psn_count(PvrdmaQP *qp, bool requester, uint32_t npsn)
{
    uint32_t *psn = requester ? &qp->attr.sq_psn : &qp->attr.rq_psn;

    if (qp->type == PVRDMA_QPT_RC) {
        *psn = (*psn + npsn) & 0xffffff;
    }
}

/*
 * The request of flight f finished with status (pvrdma_complete).  The
 * completion names the guest's QP handle, which is not the QP number with
 * a host HCA as object owner; a QP that is gone completes nothing.
 */
static void cr_flight_done(PvrdmaCore *c, const CrFlight *f,
                           uint32_t status)
{
    PvrdmaQP *qp = pvrdma_qp_by_qpn(c, f->qpn);
    PvrdmaWc wc = {
        .is_send = true, .cookie = f->cookie, .status = status,
    };

    if (qp) {
        if (status == PVRDMA_WC_SUCCESS && f->rc) {
            cr_psn_count(qp, true, f->npsn);
        }
        wc.qp = qp->handle;
        pvrdma_complete(c, &wc);
    }
}

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
    const PvrdmaLoopOps *loop;
    void *loop_opaque;
    GPtrArray *peers;       /* CrPeer */
    GHashTable *waiting;    /* dest qpn -> GQueue of CrInReq (RNR) */
    GHashTable *flights;    /* cookie -> CrFlight */
    bool reap;              /* some peer is dead: free it at a safe point */
    bool accept_paused;     /* out of descriptors: listener not watched */
    bool paused;            /* our VM stopped for a save: no new requests */
    bool quiesced;          /* ... and every peer answered our PAUSE */
    bool moved;             /* our state went to another QEMU */
    uint32_t fence_qpn;     /* cr_fence(): the QP whose flights must end */
    GArray *moved_gids;     /* CrMovedGid: GIDs of peers that moved */
    uint8_t *rx;            /* receive buffer, CR_MAX_MSG */
};

/* A GID of a peer that moved, waiting for its new owner until 'until'. */
typedef struct CrMovedGid {
    uint8_t gid[16];
    int64_t until;          /* ms, ops->now_ms() */
} CrMovedGid;

static void cr_peer_read(void *opaque);
static void cr_peer_write(void *opaque);
static bool cr_reap(CrTransport *t);
static void cr_accept(void *opaque);

static CrTransport *cr(PvrdmaTransport *t)
{
    return (CrTransport *)t;
}

static void cr_watch(CrPeer *p)
{
    CrTransport *t = p->t;

    t->loop->set_fd_handler(t->loop_opaque, p->fd, cr_peer_read,
                            p->want_write ? cr_peer_write : NULL, p);
}

/* Mark a peer dead; it is freed by cr_reap() outside any iteration. */
static void cr_peer_fail(CrPeer *p, const char *why)
{
    if (!p->dead) {
        if (why) {
            pvrdma_log_host("co-resident peer %s: %s, dropped", p->name,
                            why);
        }
        trace_pvrdma_cr_peer_gone(p->node);
        p->dead = true;
        p->t->reap = true;
    }
}

/* ------------------------------------------------------------------ */
/* Sending                                                             */

static bool cr_sendmsg(CrPeer *p, const void *buf, size_t len, int fd)
{
    struct iovec iov = { (void *)buf, len };
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
    ssize_t n;

    if (fd >= 0) {
        struct cmsghdr *cm;

        memset(&u, 0, sizeof(u));
        mh.msg_control = u.buf;
        mh.msg_controllen = sizeof(u.buf);
        cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &fd, sizeof(int));
    }
    do {
        n = sendmsg(p->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        return false;
    }
    if (n < 0 && errno == EPIPE && p->paused) {
        cr_peer_fail(p, NULL);  /* it hung up after its pause: it moved */
    } else if (n != (ssize_t)len) {
        cr_peer_fail(p, n < 0 ? strerror(errno) : "short send");
    }
    return true;
}

/* Queue or send one datagram now; fd (if >= 0) is duplicated. */
static void cr_send_now(CrPeer *p, const void *buf, size_t len, int fd)
{
    CrOut *o;

    if (p->dead) {
        return;
    }
    if (g_queue_is_empty(&p->out) && cr_sendmsg(p, buf, len, fd)) {
        return;
    }
    o = g_malloc(sizeof(*o) + len);
    o->len = len;
    o->fd = fd >= 0 ? dup(fd) : -1;
    memcpy(o->data, buf, len);
    g_queue_push_tail(&p->out, o);
    if (!p->want_write) {
        p->want_write = true;
        cr_watch(p);
    }
}

/* Send what cr_send() collected for p. */
static void cr_flush_peer(CrPeer *p)
{
    if (p->txlen) {
        cr_send_now(p, p->tx, p->txlen, -1);
        p->txlen = 0;
    }
}

/*
 * Send one message.  Messages without a descriptor are collected and go
 * out together, several in one datagram, at the end of the event that
 * produced them (cr_flush): a burst of requests or answers costs one
 * system call and one wakeup of the peer, not one per message.  Each
 * message starts 8-byte aligned in the datagram.
 */
static void cr_send(CrPeer *p, const void *buf, size_t len, int fd)
{
    size_t padded = ROUND_UP(len, 8);

    if (p->dead) {
        return;
    }
    if (fd >= 0) {
        cr_flush_peer(p);           /* keep the order */
        cr_send_now(p, buf, len, fd);
        return;
    }
    if (p->txlen + padded > CR_MAX_MSG) {
        cr_flush_peer(p);
    }
    memcpy(p->tx + p->txlen, buf, len);
    memset(p->tx + p->txlen + len, 0, padded - len);
    p->txlen += padded;
}

static void cr_flush(CrTransport *t)
{
    for (guint i = 0; i < t->peers->len; i++) {
        cr_flush_peer(g_ptr_array_index(t->peers, i));
    }
}

/*
 * End of an event: send what it produced, free peers that died (a QP that
 * waits for one's answer to its path offer goes on: pvrdma_path_for()).
 */
static void cr_done(CrTransport *t)
{
    cr_flush(t);
    if (cr_reap(t)) {
        pvrdma_transport_wake_senders(t->t.core);
    }
}

static void cr_out_free(CrOut *o)
{
    if (o->fd >= 0) {
        close(o->fd);
    }
    g_free(o);
}

static void cr_peer_write(void *opaque)
{
    CrPeer *p = opaque;
    CrOut *o;

    while (!p->dead && (o = g_queue_peek_head(&p->out))) {
        if (!cr_sendmsg(p, o->data, o->len, o->fd)) {
            return;     /* still full */
        }
        cr_out_free(g_queue_pop_head(&p->out));
    }
    if (!p->dead) {
        p->want_write = false;
        cr_watch(p);
    }
    cr_done(p->t);
}

/* A message of only a header: PAUSE, PAUSED, RESUME, MOVED. */
static void cr_send_ctl(CrPeer *p, uint32_t type)
{
    CrHdr m = { type, sizeof(m) };

    cr_send(p, &m, sizeof(m), -1);
}

static void cr_send_gids(CrTransport *t, CrPeer *p)
{
    PvrdmaCore *c = t->t.core;
    size_t len = sizeof(CrGids) + c->lim.gid_tbl_len * sizeof(CrGid);
    CrGids *m = g_malloc0(len);

    for (uint32_t i = 0; i < c->lim.gid_tbl_len; i++) {
        if (c->gid[i].type) {
            memcpy(m->g[m->n].gid, c->gid[i].gid.raw, 16);
            m->g[m->n].type = c->gid[i].type;
            m->n++;
        }
    }
    len = sizeof(CrGids) + m->n * sizeof(CrGid);
    m->h = (CrHdr) { CR_GIDS, len };
    cr_send(p, m, len, -1);
    g_free(m);
}

/* ------------------------------------------------------------------ */
/* Peers                                                               */

static bool cr_random(void *buf, size_t len)
{
    uint8_t *b = buf;

    while (len) {
        ssize_t n = getrandom(b, len, 0);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        b += n;
        len -= n;
    }
    return true;
}

/*
 * The HMAC of an AUTH message on p's connection (pvrdma_coresident_wire.h):
 * ours (the proof we send p) or theirs (the proof p must send us).
 */
static void cr_auth_mac(const CrTransport *t, const CrPeer *p, bool ours,
                        uint8_t mac[CR_MAC_LEN])
{
    uint8_t role = (ours ? p->outgoing : !p->outgoing) ? 'c' : 'a';
    uint64_t pnode = ours ? t->node : p->node;
    uint64_t vnode = ours ? p->node : t->node;
    GHmac *h = g_hmac_new(G_CHECKSUM_SHA256, t->secret, t->secret_len);
    gsize len = CR_MAC_LEN;

    g_hmac_update(h, (const guchar *)CR_AUTH_LABEL, strlen(CR_AUTH_LABEL));
    g_hmac_update(h, &role, 1);
    g_hmac_update(h, ours ? p->peer_nonce : p->nonce, CR_NONCE_LEN);
    g_hmac_update(h, ours ? p->nonce : p->peer_nonce, CR_NONCE_LEN);
    g_hmac_update(h, (const guchar *)&pnode, sizeof(pnode));
    g_hmac_update(h, (const guchar *)&vnode, sizeof(vnode));
    g_hmac_get_digest(h, mac, &len);
    g_hmac_unref(h);
}

/* Compare MACs in constant time. */
static bool cr_mac_equal(const uint8_t *a, const uint8_t *b)
{
    uint8_t d = 0;

    for (unsigned i = 0; i < CR_MAC_LEN; i++) {
        d |= a[i] ^ b[i];
    }
    return !d;
}

/*
 * A connection is up (we connected to path, or accepted one on our
 * socket): unless its other end runs as another user, it becomes a peer
 * and gets our HELLO.  Our RAM and GIDs follow once it is accepted
 * (cr_peer_accepted).
 */
static CrPeer *cr_peer_new(CrTransport *t, int fd, const char *path,
                           bool outgoing)
{
    struct ucred cred;
    socklen_t cl = sizeof(cred);
    CrPeer *p;
    CrHello h = {
        .h = { CR_HELLO, sizeof(h) },
        .magic = CR_MAGIC,
        .version = CR_VERSION,
        .node = t->node,
        .nregions = t->nregions,
        .auth = t->secret ? CR_AUTH_HMAC_SHA256 : CR_AUTH_NONE,
    };

    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) ||
        cl != sizeof(cred)) {
        pvrdma_log_host("co-resident: %s: cannot tell who the peer is (%s), "
                        "refused", path, strerror(errno));
        close(fd);
        return NULL;
    }
    p = g_new0(CrPeer, 1);
    p->name = outgoing ?
              g_strdup_printf("%s (pid %d)", path, (int)cred.pid) :
              g_strdup_printf("pid %d on %s", (int)cred.pid, path);
    if (cred.uid != t->uid) {
        pvrdma_log_host("co-resident peer %s runs as uid %u, not as this "
                        "QEMU's uid %u: refused", p->name,
                        (unsigned)cred.uid, (unsigned)t->uid);
        close(fd);
        g_free(p->name);
        g_free(p);
        return NULL;
    }
    p->t = t;
    p->fd = fd;
    p->pid = cred.pid;
    p->outgoing = outgoing;
    p->tx = g_malloc(CR_MAX_MSG);
    g_queue_init(&p->out);
    g_ptr_array_add(t->peers, p);
    cr_watch(p);
    if (t->secret && !cr_random(p->nonce, CR_NONCE_LEN)) {
        cr_peer_fail(p, "no random numbers for its challenge");
        return p;
    }
    memcpy(h.nonce, p->nonce, CR_NONCE_LEN);
    cr_send(p, &h, sizeof(h), -1);
    return p;
}

/* p passed the checks: it may map our RAM and learn our GIDs. */
static void cr_peer_accepted(CrPeer *p)
{
    CrTransport *t = p->t;

    p->authed = true;
    trace_pvrdma_cr_authed(p->node, t->secret != NULL);
    for (unsigned i = 0; i < t->nregions; i++) {
        CrRegionMsg r = {
            .h = { CR_REGION, sizeof(r) },
            .index = i,
            .size = t->regions[i].size,
            .fd_offset = t->regions[i].fd_offset,
        };

        cr_send(p, &r, sizeof(r), t->regions[i].fd);
    }
    cr_send_gids(t, p);
    if (t->paused) {
        cr_send_ctl(p, CR_PAUSE);
        p->pause_sent = true;
    }
}

static bool cr_peer_ready(const CrPeer *p)
{
    return !p->dead && p->authed && p->nmapped == p->nregions;
}

static CrPeer *cr_peer_for_gid(CrTransport *t, const uint8_t gid[16])
{
    for (guint i = 0; i < t->peers->len; i++) {
        CrPeer *p = g_ptr_array_index(t->peers, i);

        if (!cr_peer_ready(p)) {
            continue;
        }
        for (uint32_t j = 0; j < p->ngids; j++) {
            if (!memcmp(p->gids[j].gid, gid, 16)) {
                return p;
            }
        }
    }
    return NULL;
}

/*
 * Where gid is in moved_gids (a moved peer owned it, and it still waits
 * for the QEMU that took its place), or -1.  Forgets those whose wait is
 * over.
 */
static int cr_moved_index(CrTransport *t, const uint8_t gid[16])
{
    PvrdmaCore *c = t->t.core;
    int64_t now = c->ops->now_ms(c->opaque);

    for (guint i = 0; i < t->moved_gids->len;) {
        CrMovedGid *m = &g_array_index(t->moved_gids, CrMovedGid, i);

        if (now >= m->until) {
            g_array_remove_index_fast(t->moved_gids, i);
        } else if (!memcmp(m->gid, gid, 16)) {
            return i;
        } else {
            i++;
        }
    }
    return -1;
}

static bool cr_gid_moved(CrTransport *t, const uint8_t gid[16])
{
    return cr_moved_index(t, gid) >= 0;
}

static void cr_inreq_free(CrInReq *r)
{
    if (r->peer) {
        r->peer->nreqs--;
    }
    g_free(r->req.local.iov);
    g_free(r);
}

static void cr_respond(CrInReq *r, int status)
{
    CrRespMsg m = {
        .h = { CR_RESP, sizeof(m) },
        .cookie = r->req.cookie,
        .status = status,
    };

    trace_pvrdma_cr_resp(r->req.dest_qpn, r->req.cookie, status);
    if (r->peer) {
        cr_send(r->peer, &m, sizeof(m), -1);
    }
}

#define CR_ANY_QP       UINT32_MAX
#define CR_NO_ANSWER    (-1)

/*
 * Drop the requests of peer p (of its QP src_qpn, or CR_ANY_QP) waiting in
 * q, answering each with status unless CR_NO_ANSWER.
 */
static void cr_queue_drop(GQueue *q, CrPeer *p, uint32_t src_qpn, int status)
{
    for (GList *l = q->head; l;) {
        GList *next = l->next;
        CrInReq *r = l->data;

        if (r->peer == p &&
            (src_qpn == CR_ANY_QP || r->req.src_qpn == src_qpn)) {
            if (status != CR_NO_ANSWER) {
                cr_respond(r, status);
            }
            cr_inreq_free(r);
            g_queue_delete_link(q, l);
        }
        l = next;
    }
}

/* The same in every waiting queue; empty queues go. */
static void cr_waiting_drop(CrTransport *t, CrPeer *p, uint32_t src_qpn,
                            int status)
{
    GHashTableIter it;
    gpointer key, val;

    g_hash_table_iter_init(&it, t->waiting);
    while (g_hash_table_iter_next(&it, &key, &val)) {
        cr_queue_drop(val, p, src_qpn, status);
        if (g_queue_is_empty(val)) {
            g_queue_free(val);
            g_hash_table_iter_remove(&it);
        }
    }
}

/* Free a dead peer: fail what it owes us, drop what it asked of us. */
static void cr_peer_free(CrTransport *t, CrPeer *p)
{
    PvrdmaCore *c = t->t.core;
    GHashTableIter it;
    gpointer key, val;
    GSList *done = NULL;

    /* requests of this peer waiting for a receive here */
    cr_waiting_drop(t, p, CR_ANY_QP, CR_NO_ANSWER);
    if (p->partial) {
        cr_inreq_free(p->partial);
    }
    /* our requests it will never answer */
    g_hash_table_iter_init(&it, t->flights);
    while (g_hash_table_iter_next(&it, &key, &val)) {
        CrFlight *f = val;

        if (f->peer == p) {
            g_hash_table_iter_steal(&it);
            done = g_slist_prepend(done, f);
        }
    }
    done = g_slist_reverse(done);
    for (GSList *l = done; l; l = l->next) {
        CrFlight *f = l->data;

        /* RC: nobody answers any more; UD: the datagram is lost */
        cr_flight_done(c, f, f->rc ? PVRDMA_TRANSPORT_NO_RESPONDER :
                                     PVRDMA_WC_SUCCESS);
        g_free(f);
    }
    g_slist_free(done);

    t->loop->set_fd_handler(t->loop_opaque, p->fd, NULL, NULL, NULL);
    close(p->fd);
    g_queue_clear_full(&p->out, (GDestroyNotify)cr_out_free);
    for (uint32_t i = 0; i < CR_MAX_REGIONS; i++) {
        if (p->region[i].host) {
            munmap(p->region[i].host, p->region[i].size);
        }
    }
    g_free(p->gids);
    g_free(p->refused);
    g_free(p->name);
    g_free(p->tx);
    g_free(p);
}

static void cr_claim_gids(CrPeer *p, const CrGid *gids, uint32_t n);

/* A peer went: others may now own the GIDs they announced and were refused. */
static void cr_reclaim(CrTransport *t)
{
    for (guint i = 0; i < t->peers->len; i++) {
        CrPeer *q = g_ptr_array_index(t->peers, i);
        g_autofree CrGid *all = NULL;
        uint32_t n = q->ngids + q->nrefused;

        if (q->dead || !q->nrefused) {
            continue;
        }
        all = g_new(CrGid, n);
        memcpy(all, q->gids, q->ngids * sizeof(CrGid));
        memcpy(all + q->ngids, q->refused, q->nrefused * sizeof(CrGid));
        cr_claim_gids(q, all, n);
    }
}

/* Free the dead peers; true if there were any. */
static bool cr_reap(CrTransport *t)
{
    bool any = t->reap;

    while (t->reap) {
        t->reap = false;
        for (guint i = 0; i < t->peers->len;) {
            CrPeer *p = g_ptr_array_index(t->peers, i);

            if (p->dead) {
                g_ptr_array_remove_index(t->peers, i);
                cr_peer_free(t, p);     /* may mark others dead: loop */
                cr_reclaim(t);
                if (t->accept_paused) {
                    t->accept_paused = false;   /* descriptors were freed */
                    t->loop->set_fd_handler(t->loop_opaque, t->lfd,
                                            cr_accept, NULL, t);
                }
            } else {
                i++;
            }
        }
    }
    return any;
}

/* ------------------------------------------------------------------ */
/* Responder                                                           */

static int64_t cr_rnr_deadline(CrTransport *t, CrInReq *r)
{
    PvrdmaCore *c = t->t.core;

    return pvrdma_rnr_deadline(c, r->req.rnr_retry,
                               pvrdma_qp_by_qpn(c, r->req.dest_qpn));
}

/*
 * Serve the requests waiting on one QP, in order; stop at the first that
 * still finds no receive.  Returns true when the queue is empty.
 */
static bool cr_serve_waiting(CrTransport *t, GQueue *q)
{
    PvrdmaCore *c = t->t.core;
    CrInReq *r;

    while ((r = g_queue_peek_head(q))) {
        int st = pvrdma_responder(c, &r->req);

        if (st == PVRDMA_TRANSPORT_RNR) {
            if (r->deadline < 0) {
                r->deadline = cr_rnr_deadline(t, r);
            }
            if (!r->deadline || c->ops->now_ms(c->opaque) < r->deadline) {
                trace_pvrdma_rnr_wait(r->req.dest_qpn);
                if (r->deadline > 0) {
                    pvrdma_core_timer_at(c, r->deadline);
                }
                return false;
            }
            st = PVRDMA_WC_RNR_RETRY_EXC_ERR;
        }
        g_queue_pop_head(q);
        if (st == PVRDMA_WC_SUCCESS && r->req.qp_type == PVRDMA_QPT_RC) {
            PvrdmaQP *qp = pvrdma_qp_by_qpn(c, r->req.dest_qpn);

            if (qp) {
                cr_psn_count(qp, false, pvrdma_qp_npsn(qp, r->req.opcode,
                                                       r->req.local.len));
            }
        }
        cr_respond(r, st);
        if (st == PVRDMA_WC_RNR_RETRY_EXC_ERR) {
            /* the requester QP is in error now: what it sent next fails */
            cr_queue_drop(q, r->peer, r->req.src_qpn,
                          PVRDMA_WC_RETRY_EXC_ERR);
        }
        cr_inreq_free(r);
    }
    return true;
}

static void cr_execute_in(CrTransport *t, CrInReq *r)
{
    gpointer key = GUINT_TO_POINTER(r->req.dest_qpn);
    GQueue *q = g_hash_table_lookup(t->waiting, key);

    trace_pvrdma_cr_req(r->req.dest_qpn, r->req.opcode, r->req.cookie,
                        r->req.local.len);
    if (t->quiesced) {
        /* our VM's state is being saved: nothing may change it now */
        cr_respond(r, PVRDMA_TRANSPORT_NOT_EXECUTED);
        cr_inreq_free(r);
        return;
    }
    if (!q) {
        q = g_queue_new();
        g_queue_push_tail(q, r);
        if (cr_serve_waiting(t, q)) {
            g_queue_free(q);
        } else {
            g_hash_table_insert(t->waiting, key, q);
        }
        return;
    }
    if (r->peer->nreqs > CR_MAX_WAITING) {
        /* a guest flooding a QP that never receives: no unbounded queue */
        cr_respond(r, PVRDMA_WC_RNR_RETRY_EXC_ERR);
        cr_inreq_free(r);
        return;
    }
    g_queue_push_tail(q, r);    /* behind a request waiting for a receive */
}

static void cr_wake(PvrdmaTransport *pt)
{
    CrTransport *t = cr(pt);
    GHashTableIter it;
    gpointer key, val;

    g_hash_table_iter_init(&it, t->waiting);
    while (g_hash_table_iter_next(&it, &key, &val)) {
        if (cr_serve_waiting(t, val)) {
            g_queue_free(val);
            g_hash_table_iter_remove(&it);
        }
    }
    cr_done(t);
}

/* A flight's (peer, QP): one CANCEL each. */
static guint cr_flight_pq_hash(gconstpointer k)
{
    const CrFlight *f = k;

    return g_direct_hash(f->peer) ^ f->qpn;
}

static gboolean cr_flight_pq_equal(gconstpointer a, gconstpointer b)
{
    const CrFlight *x = a, *y = b;

    return x->peer == y->peer && x->qpn == y->qpn;
}

/*
 * Our QP qpn (CR_ANY_QP: every QP) is gone: tell every peer that holds
 * requests of it to drop them.  The flights stay until the peer answers
 * them.
 */
static void cr_cancel_flights(CrTransport *t, uint32_t qpn)
{
    GHashTableIter it;
    gpointer key, val;
    GHashTable *told = g_hash_table_new(cr_flight_pq_hash,
                                        cr_flight_pq_equal);

    g_hash_table_iter_init(&it, t->flights);
    while (g_hash_table_iter_next(&it, &key, &val)) {
        CrFlight *f = val;

        if ((qpn != CR_ANY_QP && f->qpn != qpn) || f->cancelled) {
            continue;
        }
        f->cancelled = true;
        if (g_hash_table_add(told, f)) {
            CrCancelMsg m = {
                .h = { CR_CANCEL, sizeof(m) },
                .src_qpn = f->qpn,
            };

            cr_send(f->peer, &m, sizeof(m), -1);
        }
    }
    g_hash_table_destroy(told);
}

static void cr_qp_gone(PvrdmaTransport *pt, uint32_t qpn)
{
    CrTransport *t = cr(pt);
    GQueue *q = g_hash_table_lookup(t->waiting, GUINT_TO_POINTER(qpn));
    CrInReq *r;

    cr_cancel_flights(t, qpn);
    if (!q) {
        cr_flush(t);
        return;
    }
    g_hash_table_remove(t->waiting, GUINT_TO_POINTER(qpn));
    while ((r = g_queue_pop_head(q))) {
        cr_respond(r, PVRDMA_TRANSPORT_NO_RESPONDER);
        cr_inreq_free(r);
    }
    g_queue_free(q);
    cr_flush(t);    /* no reaping: this may run inside the core's run loop */
}

/* The core finished a run: send the requests it produced. */
static void cr_flush_hook(PvrdmaTransport *pt)
{
    cr_flush(cr(pt));
}

/* Append a peer's sg entries to r->req.local (checked against its RAM). */
static bool cr_add_sg(CrPeer *p, CrInReq *r, const CrSge *sg, uint32_t n)
{
    PvrdmaSg *l = &r->req.local;

    if (n > r->nsg_total - l->n) {
        return false;
    }
    for (uint32_t i = 0; i < n; i++) {
        const CrSge *s = &sg[i];

        if (s->region >= p->nregions || !s->len ||
            s->off > p->region[s->region].size ||
            s->len > p->region[s->region].size - s->off ||
            s->len > r->len - l->len) {
            return false;
        }
        l->iov[l->n++] = (PvrdmaIov) {
            .host = p->region[s->region].host + s->off,
            .len = s->len,
            .is_write = true,
        };
        l->len += s->len;
    }
    return true;
}

static bool cr_rx_req(CrPeer *p, const CrReqMsg *m, size_t len)
{
    CrInReq *r;

    if (len < sizeof(*m) || m->nsg > CR_REQ_SG_MAX ||
        len != sizeof(*m) + m->nsg * sizeof(CrSge) ||
        m->nsg > m->nsg_total || m->nsg_total > CR_MAX_REQ_SG ||
        m->len > (1ull << 31) || p->partial || !cr_peer_ready(p)) {
        return false;
    }
    r = g_new0(CrInReq, 1);
    r->peer = p;
    p->nreqs++;
    r->deadline = -1;
    r->nsg_total = m->nsg_total;
    r->len = m->len;
    r->req = (PvrdmaReq) {
        .cookie = m->cookie,
        .opcode = m->opcode,
        .send_flags = m->send_flags,
        .src_qpn = m->src_qpn & 0xffffff,
        .qp_type = m->qp_type,
        .rnr_retry = m->rnr_retry,
        .remote_addr = m->remote_addr,
        .rkey = m->rkey,
        .imm = m->imm,
        .compare_add = m->compare_add,
        .swap = m->swap,
        .dest_qpn = m->dest_qpn & 0xffffff,
        .qkey = m->qkey,
        .sgid_type = m->sgid_type,
    };
    memcpy(r->req.sgid, m->sgid, 16);
    memcpy(r->req.dgid, m->dgid, 16);
    memcpy(r->req.smac, m->smac, 6);
    r->req.local.iov = g_new(PvrdmaIov, MAX(1, m->nsg_total));
    r->req.local.cap = MAX(1, m->nsg_total);
    if (!cr_add_sg(p, r, m->sg, m->nsg)) {
        cr_inreq_free(r);
        return false;
    }
    if (r->req.local.n < r->nsg_total) {
        p->partial = r;
        return true;
    }
    if (r->req.local.len != r->len) {
        cr_inreq_free(r);
        return false;
    }
    cr_execute_in(p->t, r);
    return true;
}

static bool cr_rx_more(CrPeer *p, const CrMoreMsg *m, size_t len)
{
    CrInReq *r = p->partial;

    if (!r || len < sizeof(*m) || m->nsg > CR_MORE_SG_MAX ||
        len != sizeof(*m) + m->nsg * sizeof(CrSge) ||
        m->cookie != r->req.cookie || !cr_add_sg(p, r, m->sg, m->nsg)) {
        return false;
    }
    if (r->req.local.n < r->nsg_total) {
        return true;
    }
    p->partial = NULL;
    if (r->req.local.len != r->len) {
        cr_inreq_free(r);
        return false;
    }
    cr_execute_in(p->t, r);
    return true;
}

/* ------------------------------------------------------------------ */
/* Receiving                                                           */

static bool cr_rx_region(CrPeer *p, const CrRegionMsg *m, size_t len, int fd)
{
    struct stat st;
    void *host;

    if (len != sizeof(*m) || !p->hello || m->index >= p->nregions ||
        p->region[m->index].host || fd < 0 || !m->size ||
        m->size > INT64_MAX || m->fd_offset > INT64_MAX - m->size ||
        (m->fd_offset & (pvrdma_host_page_size() - 1)) || fstat(fd, &st) ||
        (S_ISREG(st.st_mode) &&
         (uint64_t)st.st_size < m->fd_offset + m->size)) {
        return false;
    }
    host = mmap(NULL, m->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                m->fd_offset);
    if (host == MAP_FAILED) {
        pvrdma_log_host("co-resident peer %016" PRIx64 ": cannot map its "
                        "RAM: %s", p->node, strerror(errno));
        return false;
    }
    p->region[m->index].host = host;
    p->region[m->index].size = m->size;
    p->nmapped++;
    return true;
}

static bool cr_gid_in(const CrGid *g, uint32_t n, const uint8_t gid[16])
{
    for (uint32_t i = 0; i < n; i++) {
        if (!memcmp(g[i].gid, gid, 16)) {
            return true;
        }
    }
    return false;
}

/*
 * Who other than peer p owns gid: "this device", a peer's name, NULL.
 * *paused: that owner is paused (a migration hands its GIDs over).
 */
static const char *cr_gid_owner(CrTransport *t, const CrPeer *p,
                                const uint8_t gid[16], bool *paused)
{
    if (pvrdma_gid_is_local(t->t.core, gid)) {
        *paused = t->paused;
        return "this device";
    }
    for (guint i = 0; i < t->peers->len; i++) {
        const CrPeer *q = g_ptr_array_index(t->peers, i);

        if (q != p && !q->dead && cr_gid_in(q->gids, q->ngids, gid)) {
            *paused = q->paused;
            return q->name;
        }
    }
    return NULL;
}

/*
 * p announces the GIDs gids[n] (its whole table): it gets those nobody
 * else owns here.  First owner wins, and a GID of this device is never
 * taken.  A refusal is logged once, not at every announcement.  A GID a
 * moved peer left behind (moved_gids) has its new owner: whoever waited
 * for it carries on.
 */
static void cr_claim_gids(CrPeer *p, const CrGid *gids, uint32_t n)
{
    CrTransport *t = p->t;
    CrGid *keep = g_new(CrGid, MAX(1, n));
    CrGid *refused = g_new(CrGid, MAX(1, n));
    uint32_t nkeep = 0, nrefused = 0;
    bool wake = false;

    for (uint32_t i = 0; i < n; i++) {
        bool paused = false;
        const char *owner = cr_gid_owner(t, p, gids[i].gid, &paused);
        char s[64];

        if (!owner) {
            int j = cr_moved_index(t, gids[i].gid);

            keep[nkeep++] = gids[i];
            if (j >= 0) {
                /* the new home of a moved peer's GID: its senders go on */
                g_array_remove_index_fast(t->moved_gids, j);
                wake = true;
            }
            continue;
        }
        refused[nrefused++] = gids[i];
        /* not worth a word while a migration hands the GID over */
        if (!paused && !p->paused &&
            !cr_gid_in(p->refused, p->nrefused, gids[i].gid)) {
            pvrdma_gid_str(gids[i].gid, s, sizeof(s));
            pvrdma_log_host("co-resident peer %s announces GID %s, which %s "
                            "owns: not routed to it", p->name, s, owner);
        }
    }
    g_free(p->gids);
    g_free(p->refused);
    p->gids = keep;
    p->ngids = nkeep;
    p->refused = refused;
    p->nrefused = nrefused;
    trace_pvrdma_cr_gids(p->node, nkeep);
    if (wake) {
        pvrdma_transport_wake_senders(t->t.core);
    }
}

static bool cr_rx_gids(CrPeer *p, const CrGids *m, size_t len)
{
    if (len < sizeof(*m) || m->n > CR_MAX_GIDS ||
        len != sizeof(*m) + m->n * sizeof(CrGid)) {
        return false;
    }
    cr_claim_gids(p, m->g, m->n);
    return true;
}

static bool cr_rx_resp(CrPeer *p, const CrRespMsg *m, size_t len)
{
    CrTransport *t = p->t;
    CrFlight *f;

    if (len != sizeof(*m)) {
        return false;
    }
    f = g_hash_table_lookup(t->flights, &m->cookie);
    if (!f || f->peer != p) {
        return false;   /* never asked this peer */
    }
    if ((m->status < 0 || m->status > PVRDMA_WC_GENERAL_ERR) &&
        m->status != PVRDMA_TRANSPORT_NO_RESPONDER &&
        (m->status != PVRDMA_TRANSPORT_NOT_EXECUTED ||
         !(p->paused || t->paused))) {
        return false;   /* given back only across a pause */
    }
    g_hash_table_steal(t->flights, &m->cookie);
    p->inflight--;
    cr_flight_done(t->t.core, f, m->status);
    g_free(f);
    return true;
}

/* The peer's QP src_qpn is gone: drop its requests waiting here. */
static bool cr_rx_cancel(CrPeer *p, const CrCancelMsg *m, size_t len)
{
    if (len != sizeof(*m)) {
        return false;
    }
    cr_waiting_drop(p->t, p, m->src_qpn & 0xffffff, PVRDMA_WC_WR_FLUSH_ERR);
    return true;
}

/*
 * OFFER: the peer's RC QP on RoCEv2 to our QP dest_qpn is idle and would
 * carry on here (pvrdma_path_offered()).  Offers that cross are each
 * answered: the first one taken moves both QPs (the other then finds ours
 * here already, and its answer is moot); a refusal ends our own offer too.
 */
static bool cr_rx_offer(CrPeer *p, const CrOfferMsg *m, size_t len)
{
    CrTransport *t = p->t;
    PvrdmaCore *c = t->t.core;
    CrAnswerMsg a = {
        .h = { CR_ANSWER, sizeof(a) },
        .src_qpn = m->src_qpn, .dest_qpn = m->dest_qpn,
    };
    PvrdmaQP *qp;
    bool crossed;

    if (len != sizeof(*m)) {
        return false;
    }
    qp = pvrdma_qp_by_qpn(c, m->dest_qpn & 0xffffff);
    crossed = qp && qp->offer_to == &t->t;
    a.ok = qp && qp->type == PVRDMA_QPT_RC &&
           qp->attr.dest_qp_num == m->src_qpn && !t->paused && !p->paused &&
           cr_peer_for_gid(t, qp->attr.ah_attr.grh.dgid.raw) == p &&
           pvrdma_path_offered(c, qp, &t->t, m->sq_psn, m->rq_psn);
    trace_pvrdma_cr_offer(m->dest_qpn, m->src_qpn, a.ok);
    cr_send(p, &a, sizeof(a), -1);
    if (crossed && !a.ok) {
        pvrdma_path_answered(c, qp, &t->t, false);
    }
    return true;
}

/* ANSWER to our OFFER for QP src_qpn */
static bool cr_rx_answer(CrPeer *p, const CrAnswerMsg *m, size_t len)
{
    CrTransport *t = p->t;
    PvrdmaQP *qp;

    if (len != sizeof(*m) || m->ok > 1) {
        return false;
    }
    qp = pvrdma_qp_by_qpn(t->t.core, m->src_qpn & 0xffffff);
    if (qp && qp->attr.dest_qp_num == m->dest_qpn &&
        cr_peer_for_gid(t, qp->attr.ah_attr.grh.dgid.raw) == p) {
        pvrdma_path_answered(t->t.core, qp, &t->t, m->ok);
    }
    return true;
}

/* p moved: its GIDs wait for the QEMU that took its place, then it goes. */
static void cr_peer_moved(CrTransport *t, CrPeer *p)
{
    PvrdmaCore *c = t->t.core;
    int64_t until = c->ops->now_ms(c->opaque) + CR_MOVE_GRACE_MS;

    for (uint32_t i = 0; i < p->ngids; i++) {
        CrMovedGid m = { .until = until };

        memcpy(m.gid, p->gids[i].gid, 16);
        g_array_append_val(t->moved_gids, m);
    }
    if (p->ngids) {
        pvrdma_core_timer_at(c, until);     /* then its senders give up */
    }
    cr_peer_fail(p, NULL);
    /* a QP whose peer was already heard elsewhere goes there now */
    pvrdma_transport_wake_senders(c);
}

/* PAUSE, PAUSED, RESUME, MOVED (pvrdma_coresident_wire.h) */
static bool cr_rx_ctl(CrPeer *p, const CrHdr *h, size_t len)
{
    CrTransport *t = p->t;

    if (len != sizeof(*h)) {
        return false;
    }
    switch (h->type) {
    case CR_PAUSE:
        if (p->paused || p->partial) {
            return false;
        }
        p->paused = true;
        trace_pvrdma_cr_pause(p->node, "paused");
        /* its requests waiting here for a receive: it runs them again */
        cr_waiting_drop(t, p, CR_ANY_QP, PVRDMA_TRANSPORT_NOT_EXECUTED);
        cr_send_ctl(p, CR_PAUSED);
        return true;
    case CR_PAUSED:
        if (!p->pause_sent || p->acked) {
            return false;
        }
        p->acked = true;
        return true;
    case CR_RESUME:
        if (!p->paused) {
            return false;
        }
        p->paused = false;
        trace_pvrdma_cr_pause(p->node, "resumed");
        pvrdma_transport_wake_senders(t->t.core);
        return true;
    case CR_MOVED:
        if (!p->paused) {
            return false;   /* a peer moves only from a pause */
        }
        trace_pvrdma_cr_pause(p->node, "moved");
        cr_peer_moved(t, p);
        return true;
    default:
        return false;
    }
}

static bool cr_rx_hello(CrPeer *p, const CrHello *m, size_t len)
{
    CrTransport *t = p->t;
    uint32_t auth = t->secret ? CR_AUTH_HMAC_SHA256 : CR_AUTH_NONE;

    if (p->hello) {
        return false;
    }
    if (len >= offsetof(CrHello, node) && m->magic == CR_MAGIC &&
        m->version != CR_VERSION) {
        char why[80];

        snprintf(why, sizeof(why), "speaks protocol version %u, this device "
                 "%u (another QEMU build)", m->version, CR_VERSION);
        cr_peer_fail(p, why);
        return false;
    }
    if (len != sizeof(*m) || m->magic != CR_MAGIC ||
        m->nregions > CR_MAX_REGIONS) {
        return false;
    }
    if (m->node == t->node) {
        cr_peer_fail(p, "claims this device's node id");
        return false;
    }
    if (!p->outgoing) {
        /* name it by the socket it says it listens on; the pid is sure */
        char *name = g_strdup_printf("%s/%016" PRIx64 ".sock (pid %d)",
                                     t->dir, m->node, p->pid);

        g_free(p->name);
        p->name = name;
    }
    if (m->auth != auth) {
        cr_peer_fail(p, m->auth == CR_AUTH_HMAC_SHA256 ?
                     "requires a rendezvous-secret, this device has none" :
                     m->auth == CR_AUTH_NONE ?
                     "has no rendezvous-secret, this device requires one" :
                     "asks for an unknown authentication");
        return false;
    }
    if (auth && !memcmp(m->nonce, p->nonce, CR_NONCE_LEN)) {
        cr_peer_fail(p, "returned this device's challenge as its own");
        return false;
    }
    p->hello = true;
    p->node = m->node;
    p->nregions = m->nregions;
    memcpy(p->peer_nonce, m->nonce, CR_NONCE_LEN);
    trace_pvrdma_cr_peer(p->node, p->nregions);
    if (auth) {
        CrAuthMsg a = { .h = { CR_AUTH, sizeof(a) } };

        cr_auth_mac(t, p, true, a.mac);
        cr_send(p, &a, sizeof(a), -1);
    } else {
        cr_peer_accepted(p);    /* same uid: all it takes without a secret */
    }
    return true;
}

/* p proves it has our secret: only then it gets our RAM and GIDs. */
static bool cr_rx_auth(CrPeer *p, const CrAuthMsg *m, size_t len)
{
    uint8_t want[CR_MAC_LEN];
    bool ok;

    if (len != sizeof(*m) || !p->t->secret || p->authed) {
        return false;
    }
    cr_auth_mac(p->t, p, false, want);
    ok = cr_mac_equal(want, m->mac);
    memset(want, 0, sizeof(want));
    if (!ok) {
        cr_peer_fail(p, "failed authentication (its rendezvous-secret is "
                     "not this device's)");
        return false;
    }
    cr_peer_accepted(p);
    return true;
}

static bool cr_rx(CrPeer *p, const uint8_t *buf, size_t len, int fd)
{
    const CrHdr *h = (const CrHdr *)buf;

    if (len < sizeof(*h) || h->len != len) {
        return false;
    }
    if (fd >= 0 && h->type != CR_REGION) {
        return false;
    }
    if (!p->hello && h->type != CR_HELLO) {
        return false;
    }
    /* nothing but the handshake before the peer is accepted */
    if (!p->authed && h->type != CR_HELLO && h->type != CR_AUTH) {
        return false;
    }
    switch (h->type) {
    case CR_HELLO:
        return cr_rx_hello(p, (const CrHello *)buf, len);
    case CR_AUTH:
        return cr_rx_auth(p, (const CrAuthMsg *)buf, len);
    case CR_REGION:
        return cr_rx_region(p, (const CrRegionMsg *)buf, len, fd);
    case CR_GIDS:
        return cr_rx_gids(p, (const CrGids *)buf, len);
    case CR_REQ:
        return cr_rx_req(p, (const CrReqMsg *)buf, len);
    case CR_MORE:
        return cr_rx_more(p, (const CrMoreMsg *)buf, len);
    case CR_RESP:
        return cr_rx_resp(p, (const CrRespMsg *)buf, len);
    case CR_CANCEL:
        return cr_rx_cancel(p, (const CrCancelMsg *)buf, len);
    case CR_OFFER:
        return cr_rx_offer(p, (const CrOfferMsg *)buf, len);
    case CR_ANSWER:
        return cr_rx_answer(p, (const CrAnswerMsg *)buf, len);
    case CR_PAUSE:
    case CR_PAUSED:
    case CR_RESUME:
    case CR_MOVED:
        return cr_rx_ctl(p, h, len);
    default:
        return false;
    }
}

/*
 * A datagram holds one message, or several each starting 8-byte aligned;
 * a descriptor comes only with a datagram of exactly one REGION message.
 */
static bool cr_rx_datagram(CrPeer *p, const uint8_t *buf, size_t n, int fd)
{
    size_t off = 0;

    while (off < n && !p->dead) {
        const CrHdr *h = (const CrHdr *)(buf + off);

        if (n - off < sizeof(*h) || h->len < sizeof(*h) || h->len > n - off ||
            (fd >= 0 && (off || h->len != n))) {
            return false;
        }
        if (!cr_rx(p, buf + off, h->len, fd)) {
            return false;
        }
        off += ROUND_UP(h->len, 8);
    }
    return true;
}

static void cr_peer_read(void *opaque)
{
    CrPeer *p = opaque;
    CrTransport *t = p->t;

    for (int i = 0; i < CR_RX_BATCH && !p->dead; i++) {
        union {
            char buf[CMSG_SPACE(sizeof(int) * 4)];
            struct cmsghdr align;
        } u;
        struct iovec iov = { t->rx, CR_MAX_MSG };
        struct msghdr mh = {
            .msg_iov = &iov, .msg_iovlen = 1,
            .msg_control = u.buf, .msg_controllen = sizeof(u.buf),
        };
        struct cmsghdr *cm;
        int fd = -1, extra = 0;
        ssize_t n;

        n = recvmsg(p->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        }
        if (n < 0 && errno == ECONNRESET && p->paused) {
            cr_peer_fail(p, NULL);  /* it hung up after its pause: moved */
            break;
        }
        if (n <= 0) {
            cr_peer_fail(p, n < 0 ? strerror(errno) : p->authed ? NULL :
                         "hung up before the handshake was over (it "
                         "refused this device: see its log)");
            break;
        }
        for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
            if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
                int nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);

                for (int k = 0; k < nfd; k++) {
                    int f;

                    memcpy(&f, CMSG_DATA(cm) + k * sizeof(int), sizeof(int));
                    if (fd < 0) {
                        fd = f;
                    } else {
                        close(f);
                        extra++;
                    }
                }
            }
        }
        if (extra || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
            !cr_rx_datagram(p, t->rx, n, fd)) {
            cr_peer_fail(p, "malformed message");
        }
        if (fd >= 0) {
            close(fd);
        }
    }
    cr_done(t);
}

/* ------------------------------------------------------------------ */
/* Requester                                                           */

static bool cr_reaches(PvrdmaTransport *pt, const uint8_t dgid[16])
{
    return cr_peer_for_gid(cr(pt), dgid) || cr_gid_moved(cr(pt), dgid);
}

/* The way back (PvrdmaTransportOps.qp_offer): OFFER to qp's peer. */
static int cr_qp_offer(PvrdmaTransport *pt, PvrdmaQP *qp, uint32_t sq_psn,
                       uint32_t rq_psn)
{
    CrTransport *t = cr(pt);
    CrPeer *p = cr_peer_for_gid(t, qp->attr.ah_attr.grh.dgid.raw);
    CrOfferMsg m = {
        .h = { CR_OFFER, sizeof(m) },
        .src_qpn = qp->qpn, .dest_qpn = qp->attr.dest_qp_num,
        .sq_psn = sq_psn, .rq_psn = rq_psn,
    };

    if (!p || p->paused || t->paused || t->moved) {
        return -EAGAIN;
    }
    cr_send(p, &m, sizeof(m), -1);
    return p->dead ? -EPIPE : 0;
}

/* MOVED: dgid's owner moved and its successor has not joined (yet) */
static int cr_moving(PvrdmaTransport *pt, const uint8_t dgid[16])
{
    CrPeer *p = cr_peer_for_gid(cr(pt), dgid);

    if (p) {
        return p->paused ? PVRDMA_PEER_PAUSED : PVRDMA_PEER_HERE;
    }
    return cr_gid_moved(cr(pt), dgid) ? PVRDMA_PEER_MOVED : PVRDMA_PEER_HERE;
}

/* Our RAM as (region, offset); false if not in a shared region. */
static bool cr_local_sge(CrTransport *t, const PvrdmaIov *v, CrSge *s)
{
    for (unsigned i = 0; i < t->nregions; i++) {
        const PvrdmaShmRegion *r = &t->regions[i];
        uintptr_t base = (uintptr_t)r->host, h = (uintptr_t)v->host;

        if (h >= base && h - base <= r->size &&
            v->len <= r->size - (h - base)) {
            *s = (CrSge) { .region = i, .off = h - base, .len = v->len };
            return true;
        }
    }
    return false;
}

static int cr_execute(PvrdmaTransport *pt, PvrdmaReq *req)
{
    CrTransport *t = cr(pt);
    CrPeer *p = cr_peer_for_gid(t, req->dgid);
    bool rc = req->qp_type == PVRDMA_QPT_RC;
    uint32_t nsg = 0, first, sent;
    CrReqMsg *m;
    CrFlight *f;
    PvrdmaQP *qp;
    CrSge *sg;

    if (t->moved) {
        return rc ? PVRDMA_TRANSPORT_NO_RESPONDER : PVRDMA_WC_SUCCESS;
    }
    if (t->paused || (p && p->paused) || (!p && cr_gid_moved(t, req->dgid))) {
        /* RC waits for the pause to end; a datagram is lost */
        return rc ? PVRDMA_TRANSPORT_PAUSED : PVRDMA_WC_SUCCESS;
    }
    if (!p) {
        return rc ? PVRDMA_TRANSPORT_NO_RESPONDER : PVRDMA_WC_SUCCESS;
    }
    if (p->inflight >= CR_MAX_INFLIGHT) {
        cr_peer_fail(p, "does not answer");     /* freed by the next event */
        return rc ? PVRDMA_TRANSPORT_NO_RESPONDER : PVRDMA_WC_SUCCESS;
    }
    sg = g_new(CrSge, MAX(1, req->local.n));
    for (uint32_t i = 0; i < req->local.n; i++) {
        if (!req->local.iov[i].len) {
            continue;
        }
        if (!cr_local_sge(t, &req->local.iov[i], &sg[nsg])) {
            PVRDMA_GUEST_ERR(t->t.core, "QP %u: buffer outside shared guest "
                             "RAM", req->src_qpn);
            g_free(sg);
            return PVRDMA_WC_LOC_PROT_ERR;
        }
        nsg++;
    }
    first = MIN(nsg, CR_REQ_SG_MAX);
    m = g_malloc0(sizeof(*m) + first * sizeof(CrSge));
    *m = (CrReqMsg) {
        .h = { CR_REQ, sizeof(*m) + first * sizeof(CrSge) },
        .cookie = req->cookie,
        .opcode = req->opcode,
        .send_flags = req->send_flags,
        .src_qpn = req->src_qpn,
        .dest_qpn = req->dest_qpn,
        .qkey = req->qkey,
        .rkey = req->rkey,
        .imm = req->imm,
        .qp_type = req->qp_type,
        .rnr_retry = req->rnr_retry,
        .sgid_type = req->sgid_type,
        .remote_addr = req->remote_addr,
        .compare_add = req->compare_add,
        .swap = req->swap,
        .len = req->local.len,
        .nsg_total = nsg,
        .nsg = first,
    };
    memcpy(m->sgid, req->sgid, 16);
    memcpy(m->dgid, req->dgid, 16);
    memcpy(m->smac, req->smac, 6);
    memcpy(m->sg, sg, first * sizeof(CrSge));
    cr_send(p, m, m->h.len, -1);
    g_free(m);
    for (sent = first; sent < nsg;) {
        uint32_t k = MIN(nsg - sent, CR_MORE_SG_MAX);
        CrMoreMsg *mm = g_malloc0(sizeof(*mm) + k * sizeof(CrSge));

        mm->h = (CrHdr) { CR_MORE, sizeof(*mm) + k * sizeof(CrSge) };
        mm->cookie = req->cookie;
        mm->nsg = k;
        memcpy(mm->sg, sg + sent, k * sizeof(CrSge));
        cr_send(p, mm, mm->h.len, -1);
        g_free(mm);
        sent += k;
    }
    g_free(sg);
    if (p->dead) {
        /*
         * The send failed.  No reaping here: the core is in the middle of
         * this QP's send queue; the peer is freed at its next event.
         */
        return rc ? PVRDMA_TRANSPORT_NO_RESPONDER : PVRDMA_WC_SUCCESS;
    }

    qp = rc ? pvrdma_qp_by_qpn(t->t.core, req->src_qpn) : NULL;
    f = g_new(CrFlight, 1);
    *f = (CrFlight) {
        .cookie = req->cookie, .peer = p, .qpn = req->src_qpn, .rc = rc,
        .npsn = qp ? pvrdma_qp_npsn(qp, req->opcode, req->local.len) : 0,
    };
    g_hash_table_insert(t->flights, &f->cookie, f);
    p->inflight++;
    trace_pvrdma_cr_send(req->src_qpn, req->opcode, req->cookie,
                         req->local.len);
    return PVRDMA_TRANSPORT_PENDING;
}

/*
 * The guest changed our GID table: tell the peers we accepted.  A GID we
 * now own that a peer had before is ours from now on (loopback carries
 * it): that peer no longer gets it.
 */
static void cr_gids_changed(PvrdmaTransport *pt)
{
    CrTransport *t = cr(pt);

    for (guint i = 0; i < t->peers->len; i++) {
        CrPeer *p = g_ptr_array_index(t->peers, i);
        g_autofree CrGid *gids = NULL;

        if (p->dead || !p->authed) {
            continue;
        }
        cr_send_gids(t, p);
        for (uint32_t j = 0; j < p->ngids; j++) {
            if (pvrdma_gid_is_local(t->t.core, p->gids[j].gid)) {
                /* claim its table again: ours are refused now */
                gids = g_memdup2(p->gids, p->ngids * sizeof(CrGid));
                cr_claim_gids(p, gids, p->ngids);
                break;
            }
        }
    }
    cr_done(t);
}

/* ------------------------------------------------------------------ */
/* Rendezvous                                                          */

static void cr_accept(void *opaque)
{
    CrTransport *t = opaque;

    for (;;) {
        int fd = accept4(t->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE) {
                /*
                 * Out of descriptors: the listener would stay readable and
                 * spin the loop.  Stop accepting until a peer is freed.
                 */
                pvrdma_log_host("co-resident: out of file descriptors, "
                                "not accepting peers for now");
                t->loop->set_fd_handler(t->loop_opaque, t->lfd, NULL, NULL,
                                        NULL);
                t->accept_paused = true;
            }
            break;
        }
        cr_peer_new(t, fd, t->sock_path, false);
    }
    cr_done(t);
}

static bool cr_sockaddr(const char *path, struct sockaddr_un *sa)
{
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(sa->sun_path)) {
        return false;
    }
    strcpy(sa->sun_path, path);
    return true;
}

/* Connect to every listening peer in the directory; remove stale sockets. */
static void cr_scan(CrTransport *t)
{
    DIR *d = opendir(t->dir);
    struct dirent *e;

    if (!d) {
        return;
    }
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        struct sockaddr_un sa;
        char *path;
        int fd;

        if (n < 6 || strcmp(e->d_name + n - 5, ".sock")) {
            continue;
        }
        path = g_build_filename(t->dir, e->d_name, NULL);
        if (!strcmp(path, t->sock_path) || !cr_sockaddr(path, &sa)) {
            g_free(path);
            continue;
        }
        /* non-blocking: a peer with a full backlog is skipped, not waited */
        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
            cr_peer_new(t, fd, path, true);
        } else {
            if (fd >= 0 && (errno == ECONNREFUSED || errno == ENOENT)) {
                unlink(path);   /* its owner is gone */
            }
            if (fd >= 0) {
                close(fd);
            }
        }
        g_free(path);
    }
    closedir(d);
}

static void cr_destroy(PvrdmaTransport *pt)
{
    CrTransport *t = cr(pt);
    GHashTableIter it;
    gpointer key, val;

    for (guint i = 0; i < t->peers->len; i++) {
        cr_peer_fail(g_ptr_array_index(t->peers, i), NULL);
    }
    cr_reap(t);
    g_hash_table_iter_init(&it, t->waiting);
    while (g_hash_table_iter_next(&it, &key, &val)) {
        g_queue_free_full(val, (GDestroyNotify)cr_inreq_free);
    }
    g_hash_table_destroy(t->waiting);
    g_hash_table_destroy(t->flights);
    g_ptr_array_free(t->peers, true);
    g_array_free(t->moved_gids, true);
    if (t->lfd >= 0) {
        t->loop->set_fd_handler(t->loop_opaque, t->lfd, NULL, NULL, NULL);
        close(t->lfd);
        unlink(t->sock_path);
    }
    if (t->secret) {
        explicit_bzero(t->secret, t->secret_len);
        g_free(t->secret);
    }
    g_free(t->regions);
    g_free(t->sock_path);
    g_free(t->dir);
    g_free(t->rx);
    g_free(t);
}

void pvrdma_coresident_leave(PvrdmaTransport *pt)
{
    unlink(cr(pt)->sock_path);
}

unsigned pvrdma_coresident_peers(PvrdmaTransport *pt)
{
    CrTransport *t = cr(pt);
    unsigned n = 0;

    for (guint i = 0; i < t->peers->len; i++) {
        n += cr_peer_ready(g_ptr_array_index(t->peers, i));
    }
    return n;
}

/*
 * The rendezvous directory: created 0700 if missing; an existing one must
 * belong to us and be writable by nobody else, or a process of another
 * user could plant or replace sockets there.  NULL if it will do, else the
 * reason (g_free it).
 */
static char *cr_check_dir(const char *dir, uid_t uid)
{
    struct stat st;

    if (mkdir(dir, 0700) && errno != EEXIST) {
        return g_strdup_printf("cannot create rendezvous directory %s: %s",
                               dir, strerror(errno));
    }
    if (stat(dir, &st)) {
        return g_strdup_printf("cannot create rendezvous directory %s: %s",
                               dir, strerror(errno));
    }
    if (!S_ISDIR(st.st_mode)) {
        return g_strdup_printf("rendezvous path %s is not a directory", dir);
    }
    if (st.st_uid != uid) {
        return g_strdup_printf("rendezvous directory %s belongs to uid %u, "
                               "not to this QEMU's uid %u: use a directory "
                               "of this user's (QEMU creates it with mode "
                               "0700 if it does not exist)", dir,
                               (unsigned)st.st_uid, (unsigned)uid);
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        return g_strdup_printf("rendezvous directory %s is writable by its "
                               "group or by others (mode %04o): other users "
                               "could replace the peers' sockets; make it "
                               "private with 'chmod 0700 %s'", dir,
                               (unsigned)(st.st_mode & 07777), dir);
    }
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Pause, for migration and snapshots                                  */

/* The peer whose socket is fd, or NULL (it was freed meanwhile). */
static CrPeer *cr_peer_by_fd(CrTransport *t, int fd)
{
    for (guint i = 0; i < t->peers->len; i++) {
        CrPeer *p = g_ptr_array_index(t->peers, i);

        if (p->fd == fd && !p->dead) {
            return p;
        }
    }
    return NULL;
}

/*
 * Serve the peers' sockets here, outside the event loop (the VM is
 * stopping: the loop does not run until we return), until done(t) or
 * the monotonic time end (us).  False on the time running out.
 */
static bool cr_serve_until(CrTransport *t, bool (*done)(CrTransport *t),
                           int64_t end)
{
    while (!done(t)) {
        g_autofree struct pollfd *pfd = g_new0(struct pollfd,
                                               MAX(1, t->peers->len));
        int64_t left = end - g_get_monotonic_time();
        unsigned n = 0;

        if (left <= 0) {
            return false;
        }
        for (guint i = 0; i < t->peers->len; i++) {
            CrPeer *p = g_ptr_array_index(t->peers, i);

            if (!p->dead) {
                pfd[n].fd = p->fd;
                pfd[n].events = POLLIN | (p->want_write ? POLLOUT : 0);
                n++;
            }
        }
        if (poll(pfd, n, MAX(1, left / 1000)) < 0 && errno != EINTR) {
            return false;
        }
        for (unsigned i = 0; i < n; i++) {
            CrPeer *p = cr_peer_by_fd(t, pfd[i].fd);

            if (p && (pfd[i].revents & POLLOUT)) {
                cr_peer_write(p);
            }
            p = cr_peer_by_fd(t, pfd[i].fd);
            if (p && (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))) {
                cr_peer_read(p);
            }
        }
    }
    return true;
}

/*
 * Fence.  A peer reads and writes the memory our requests name when it
 * executes them, which may be well after we sent them (the socket's
 * backlog, an RNR wait).  A guest that destroys or resets a QP may then
 * free that memory, and a real HCA never touches it again: so before the
 * QP goes, its requests still at a peer are cancelled (what waits there
 * for a receive is dropped) and we serve the sockets here until every one
 * of them is answered.  The peers answer in microseconds; the bound only
 * matters for a peer that hangs.
 */

/* No flight of QP t->fence_qpn (CR_ANY_QP: of any QP) is left. */
static bool cr_fenced(CrTransport *t)
{
    GHashTableIter it;
    gpointer key, val;

    if (t->fence_qpn == CR_ANY_QP) {
        return !g_hash_table_size(t->flights);
    }
    g_hash_table_iter_init(&it, t->flights);
    while (g_hash_table_iter_next(&it, &key, &val)) {
        if (((CrFlight *)val)->qpn == t->fence_qpn) {
            return false;
        }
    }
    return true;
}

static void cr_fence(PvrdmaTransport *pt, uint32_t qpn)
{
    CrTransport *t = cr(pt);
    int64_t t0 = g_get_monotonic_time();
    bool ok;

    t->fence_qpn = qpn;
    if (cr_fenced(t)) {
        return;
    }
    cr_cancel_flights(t, qpn);
    cr_flush(t);
    ok = cr_serve_until(t, cr_fenced, t0 + CR_FENCE_MS * 1000ll);
    cr_reap(t);
    trace_pvrdma_cr_fence(qpn, ok, g_get_monotonic_time() - t0);
    if (!ok) {
        pvrdma_log_host("co-resident: the peers did not answer the requests "
                        "of QP %d in %u ms; they may still access its "
                        "buffers", qpn == CR_ANY_QP ? -1 : (int)qpn,
                        CR_FENCE_MS);
    }
}

/* Every peer we paused answered (or is gone). */
static bool cr_all_acked(CrTransport *t)
{
    for (guint i = 0; i < t->peers->len; i++) {
        CrPeer *p = g_ptr_array_index(t->peers, i);

        if (!p->dead && p->pause_sent && !p->acked) {
            return false;
        }
    }
    return true;
}

/* Nothing waits to be sent to any peer. */
static bool cr_all_sent(CrTransport *t)
{
    cr_flush(t);
    for (guint i = 0; i < t->peers->len; i++) {
        CrPeer *p = g_ptr_array_index(t->peers, i);

        if (!p->dead && !g_queue_is_empty(&p->out)) {
            return false;
        }
    }
    return true;
}

/*
 * Our VM stops for its state to be saved.  Every peer gets PAUSE; what
 * they sent us until they answer PAUSED is executed, and they answer what
 * we sent them (executed, or given back NOT_EXECUTED: our core runs it
 * again).  Then their requests still waiting here for a receive are given
 * back.  Nothing is in flight either way afterwards, and until resume or
 * moved nothing new starts.  A peer that does not answer in time is
 * dropped (false).
 */
static bool cr_quiesce(PvrdmaTransport *pt, unsigned timeout_ms)
{
    CrTransport *t = cr(pt);
    int64_t t0 = g_get_monotonic_time(), end = t0 + timeout_ms * 1000ll;
    bool ok = true;

    if (t->moved || t->quiesced) {
        return true;
    }
    t->paused = true;
    for (guint i = 0; i < t->peers->len; i++) {
        CrPeer *p = g_ptr_array_index(t->peers, i);

        if (!p->dead && p->authed && !p->pause_sent) {
            cr_send_ctl(p, CR_PAUSE);
            p->pause_sent = true;
        }
    }
    trace_pvrdma_cr_quiesce("pausing", t->peers->len, 0);
    cr_flush(t);
    if (!cr_serve_until(t, cr_all_acked, end)) {
        for (guint i = 0; i < t->peers->len; i++) {
            CrPeer *p = g_ptr_array_index(t->peers, i);

            if (p->pause_sent && !p->acked) {
                cr_peer_fail(p, "did not answer the pause in time");
            }
        }
        ok = false;
    }
    t->quiesced = true;
    for (guint i = 0; i < t->peers->len; i++) {
        cr_waiting_drop(t, g_ptr_array_index(t->peers, i), CR_ANY_QP,
                        PVRDMA_TRANSPORT_NOT_EXECUTED);
    }
    if (!cr_serve_until(t, cr_all_sent, end)) {
        ok = false;
    }
    cr_reap(t);
    trace_pvrdma_cr_quiesce(ok ? "paused" : "paused, some peers dropped",
                            t->peers->len, g_get_monotonic_time() - t0);
    return ok;
}

/* Our VM runs here again: the peers we paused carry on. */
static void cr_resume(PvrdmaTransport *pt)
{
    CrTransport *t = cr(pt);

    if (!t->paused || t->moved) {
        return;
    }
    t->paused = t->quiesced = false;
    for (guint i = 0; i < t->peers->len; i++) {
        CrPeer *p = g_ptr_array_index(t->peers, i);

        if (p->pause_sent) {
            cr_send_ctl(p, CR_RESUME);
            p->pause_sent = p->acked = false;
        }
    }
    trace_pvrdma_cr_quiesce("resumed", t->peers->len, 0);
    cr_done(t);
}

/*
 * Our state went to another QEMU, which announces our GIDs: the peers
 * learn it (MOVED) and keep their connections to those GIDs waiting for
 * it.  We leave the rendezvous directory for good.
 */
static void cr_moved(PvrdmaTransport *pt)
{
    CrTransport *t = cr(pt);

    if (t->moved) {
        return;
    }
    for (guint i = 0; i < t->peers->len; i++) {
        CrPeer *p = g_ptr_array_index(t->peers, i);

        if (!p->dead && p->pause_sent) {
            cr_send_ctl(p, CR_MOVED);
        }
    }
    cr_serve_until(t, cr_all_sent, g_get_monotonic_time() + 1000 * 1000);
    trace_pvrdma_cr_quiesce("moved", t->peers->len, 0);
    t->moved = t->paused = true;
    for (guint i = 0; i < t->peers->len; i++) {
        cr_peer_fail(g_ptr_array_index(t->peers, i), NULL);
    }
    cr_reap(t);
    if (t->lfd >= 0) {
        t->loop->set_fd_handler(t->loop_opaque, t->lfd, NULL, NULL, NULL);
        close(t->lfd);
        unlink(t->sock_path);
        t->lfd = -1;
    }
}

static const PvrdmaTransportOps cr_ops = {
    .name = "coresident",
    .flags = PVRDMA_TP_DOORBELL_OK,
    .reaches = cr_reaches,
    .moving = cr_moving,
    .qp_offer = cr_qp_offer,
    .execute = cr_execute,
    .gids_changed = cr_gids_changed,
    .wake = cr_wake,
    .qp_gone = cr_qp_gone,
    .fence = cr_fence,
    .flush = cr_flush_hook,
    .quiesce = cr_quiesce,
    .resume = cr_resume,
    .moved = cr_moved,
    .destroy = cr_destroy,
};

PvrdmaTransport *pvrdma_coresident_new(PvrdmaCore *c, const char *dir,
                                       const void *secret, size_t secret_len,
                                       const PvrdmaShmRegion *regions,
                                       unsigned nregions,
                                       const PvrdmaLoopOps *loop,
                                       void *loop_opaque, char **err)
{
    CrTransport *t;
    struct sockaddr_un sa;
    struct stat st;
    char *lock;
    int lockfd;

    if (!nregions || nregions > CR_MAX_REGIONS) {
        *err = g_strdup_printf("%u shareable RAM regions (1 to %u supported)",
                               nregions, CR_MAX_REGIONS);
        return NULL;
    }
    if (secret && !secret_len) {
        *err = g_strdup("the rendezvous secret is empty");
        return NULL;
    }
    /* before anything is created: the socket path must fit in sun_path */
    if (strlen(dir) + CR_SOCK_NAME >= sizeof(sa.sun_path)) {
        *err = g_strdup_printf("rendezvous path %s is too long for a unix "
                               "socket (at most %zu characters)", dir,
                               sizeof(sa.sun_path) - 1 - CR_SOCK_NAME);
        return NULL;
    }
    *err = cr_check_dir(dir, geteuid());
    if (*err) {
        return NULL;
    }
    t = g_new0(CrTransport, 1);
    t->t = (PvrdmaTransport) { .ops = &cr_ops, .core = c };
    t->dir = g_strdup(dir);
    t->lfd = -1;
    t->uid = geteuid();
    if (secret) {
        t->secret = g_memdup2(secret, secret_len);
        t->secret_len = secret_len;
    }
    t->regions = g_memdup2(regions, nregions * sizeof(*regions));
    t->nregions = nregions;
    t->loop = loop;
    t->loop_opaque = loop_opaque;
    t->peers = g_ptr_array_new();
    t->waiting = g_hash_table_new(NULL, NULL);
    t->flights = g_hash_table_new(g_int64_hash, g_int64_equal);
    t->moved_gids = g_array_new(false, false, sizeof(CrMovedGid));
    t->rx = g_malloc(CR_MAX_MSG);
    do {
        t->node = (uint64_t)g_random_int() << 32 | g_random_int();
    } while (!t->node);
    t->sock_path = g_strdup_printf("%s/%016" PRIx64 ".sock", dir, t->node);
    cr_sockaddr(t->sock_path, &sa);     /* fits: checked above */

    lock = g_build_filename(dir, ".lock", NULL);
    lockfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (lockfd >= 0 && !fstat(lockfd, &st) && st.st_uid != t->uid) {
        *err = g_strdup_printf("lock file %s belongs to uid %u, not to this "
                               "QEMU's uid %u: remove it", lock,
                               (unsigned)st.st_uid, (unsigned)t->uid);
    } else if (lockfd < 0 || flock(lockfd, LOCK_EX)) {
        *err = g_strdup_printf("cannot lock rendezvous directory %s: %s",
                               dir, strerror(errno));
    }
    g_free(lock);
    if (*err) {
        if (lockfd >= 0) {
            close(lockfd);
        }
        cr_destroy(&t->t);
        return NULL;
    }
    /* connections are refused until listen(): 0600 before anyone gets in */
    t->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (t->lfd < 0 || bind(t->lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
        chmod(t->sock_path, 0600) || listen(t->lfd, 64)) {
        *err = g_strdup_printf("cannot listen on %s: %s", t->sock_path,
                               strerror(errno));
        if (t->lfd >= 0) {
            close(t->lfd);
            t->lfd = -1;
            unlink(t->sock_path);
        }
        close(lockfd);
        cr_destroy(&t->t);
        return NULL;
    }
    cr_scan(t);
    close(lockfd);      /* releases the lock */
    loop->set_fd_handler(loop_opaque, t->lfd, cr_accept, NULL, t);
    cr_done(t);
    return &t->t;
}
