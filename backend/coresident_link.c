/*
 * pvrdma co-resident transport, the link to each peer: its socket (a
 * QIOChannelSocket, descriptors passed with the messages) and, once both
 * sides set them up, its rings (coresident_ring.c).  Messages
 * sent are collected per event and go out as one datagram on the socket
 * or one record in the ring (queued while either is full, a WAKE when the
 * peer sleeps); received ones are framed and handed up, one by one, to
 * the peers' layer (t->link_up: the handshake and the data path are
 * there).  After taking from a peer's ring, the fd handler may poll it a
 * while before it sleeps (pvrdma_coresident_set_poll()).  A peer whose
 * socket or ring fails is marked dead here; the peers' layer frees it.
 * See coresident.c for the transport as a whole, coresident_int.h for
 * what its files share.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "coresident_int.h"

/* Watch p's socket: readable always, writable while sends wait. */
void cr_link_watch(CrPeer *p)
{
    PvrdmaCore *c = p->t->t.core;

    c->ops->set_fd_handler(c->opaque, p->fd, cr_peer_event,
                           p->want_write ? cr_peer_write : NULL, p);
}

/* An accepted peer p is lost (PVRDMA_PEER_LOST), for why. */
static void cr_peer_lost(CrPeer *p, const char *why)
{
    if (p->authed && !p->dead) {
        pvrdma_report(p->t->t.core, &(PvrdmaReport) {
            .kind = PVRDMA_REPORT_PEER_LOST, .peer = p->label, .pid = p->pid,
            .why = why,
        });
    }
}

/* Mark a peer dead; it is freed by cr_reap() outside any iteration. */
void cr_peer_fail(CrPeer *p, const char *why)
{
    if (!p->dead) {
        if (why) {
            warn_report("pvrdma: co-resident peer %s: %s, dropped", p->name,
                        why);
            cr_peer_lost(p, why);
        }
        trace_pvrdma_cr_peer_gone(p->node);
        p->dead = true;
        p->t->reap = true;
    }
}

/* ------------------------------------------------------------------ */
/* Sending                                                             */

/*
 * One datagram (with fd, if >= 0) on p's channel: false if the socket is
 * full.  A send that fails marks p dead.
 */
static bool cr_sendmsg(CrPeer *p, const void *buf, size_t len, int fd)
{
    struct iovec iov = { (void *)buf, len };
    Error *err = NULL;
    ssize_t n;
    int e;

    n = qio_channel_writev_full(QIO_CHANNEL(p->sioc), &iov, 1,
                                fd >= 0 ? &fd : NULL, fd >= 0, 0, &err);
    e = errno;
    if (n == QIO_CHANNEL_ERR_BLOCK) {
        return false;
    }
    if (n < 0 && e == EPIPE && p->paused) {
        cr_peer_fail(p, NULL);  /* it hung up after its pause: it moved */
    } else if (n < 0) {
        cr_peer_fail(p, error_get_pretty(err));
    } else if (n != (ssize_t)len) {
        cr_peer_fail(p, "short send");
    }
    error_free(err);
    return true;
}

/*
 * A copy of len bytes of buf (and a duplicate of fd) at the end of q, one
 * of p's queues; false if p has too much queued already: it fails.
 */
static CrOut *cr_out_queue(CrPeer *p, GQueue *q, const void *buf, size_t len,
                           int fd)
{
    CrOut *o;

    if (p->queued + len > CR_MAX_QUEUED) {
        cr_peer_fail(p, "does not take its messages");
        return NULL;
    }
    o = g_malloc(sizeof(*o) + len);
    o->len = len;
    o->fd = fd >= 0 ? dup(fd) : -1;
    memcpy(o->data, buf, len);
    g_queue_push_tail(q, o);
    p->queued += len;
    return o;
}

/* The head of q, one of p's queues, went. */
static void cr_out_done(CrPeer *p, GQueue *q)
{
    CrOut *o = g_queue_pop_head(q);

    p->queued -= o->len;
    if (o->fd >= 0) {
        close(o->fd);
    }
    g_free(o);
}

/* Queue or send one datagram now; fd (if >= 0) is duplicated. */
static void cr_send_now(CrPeer *p, const void *buf, size_t len, int fd)
{
    if (p->dead) {
        return;
    }
    if (g_queue_is_empty(&p->out) && cr_sendmsg(p, buf, len, fd)) {
        return;
    }
    if (!cr_out_queue(p, &p->out, buf, len, fd)) {
        return;
    }
    if (!p->want_write) {
        p->want_write = true;
        cr_link_watch(p);
    }
}

/* WAKE: records for p in our ring; ROOM: we took from p's. */
static void cr_send_hdr(CrPeer *p, uint32_t type)
{
    CrHdr w = { type, sizeof(w) };

    cr_send_now(p, &w, sizeof(w), -1);
}

/*
 * One record into p's ring: false if there is no room (nothing written).
 * An index of the peer's that cannot be fails p (true: nothing to wait for).
 */
static bool cr_ring_put_peer(CrPeer *p, const void *buf, size_t len)
{
    int rc = cr_ring_put(p->ring, buf, len);

    if (rc < 0) {
        cr_peer_fail(p, "its ring's indexes do not add up");
    }
    return rc != 0;
}

/* Records went into p's ring: WAKE it if it sleeps and has none coming. */
static void cr_ring_wake_peer(CrPeer *p)
{
    if (!p->dead && cr_ring_needs_wake(p->ring)) {
        cr_send_hdr(p, CR_WAKE);
    }
}

/* Move what waits for room in p's ring into it, as far as it fits. */
static void cr_ring_push(CrPeer *p)
{
    bool pushed = false;
    CrOut *o;

    while (!p->dead && (o = g_queue_peek_head(&p->ring_out))) {
        if (!cr_ring_put_peer(p, o->data, o->len)) {
            if (cr_ring_wait_space(p->ring, o->len)) {
                continue;       /* it took some meanwhile */
            }
            break;              /* it sends ROOM when it took some */
        }
        cr_out_done(p, &p->ring_out);
        pushed = true;
    }
    if (pushed) {
        cr_ring_wake_peer(p);
    }
}

/* One datagram's worth of messages through p's ring. */
static void cr_ring_send(CrPeer *p, const void *buf, size_t len)
{
    if (g_queue_is_empty(&p->ring_out) && cr_ring_put_peer(p, buf, len)) {
        cr_ring_wake_peer(p);
        return;
    }
    /* the ring is full: rare */
    if (!p->dead && cr_out_queue(p, &p->ring_out, buf, len, -1)) {
        cr_ring_push(p);
    }
}

/* Send what cr_send() collected for p. */
static void cr_flush_peer(CrPeer *p)
{
    if (p->txlen) {
        if (p->ring_tx) {
            cr_ring_send(p, p->tx, p->txlen);
        } else {
            cr_send_now(p, p->tx, p->txlen, -1);
        }
        p->txlen = 0;
    }
}

/*
 * Send one message.  Messages without a descriptor are collected and go
 * out together, several in one datagram or ring record, at the end of the
 * event that produced them (cr_flush): a burst of requests or answers
 * costs one system call or record, and at most one wakeup of the peer,
 * not one per message.  Each message starts 8-byte aligned.
 */
void cr_send(CrPeer *p, const void *buf, size_t len, int fd)
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

void cr_flush(CrTransport *t)
{
    for (guint i = 0; i < t->peers->len; i++) {
        cr_flush_peer(g_ptr_array_index(t->peers, i));
    }
}

/* PvrdmaMessageOps.flush: the core finished a run; send what it produced */
void cr_flush_hook(PvrdmaTransport *pt)
{
    cr_flush(cr(pt));
}

/* p is being freed: no watch, no socket, nothing queued, no rings. */
void cr_link_close(CrPeer *p)
{
    PvrdmaCore *c = p->t->t.core;

    c->ops->set_fd_handler(c->opaque, p->fd, NULL, NULL, NULL);
    object_unref(OBJECT(p->sioc));      /* closes the socket */
    while (!g_queue_is_empty(&p->out)) {
        cr_out_done(p, &p->out);
    }
    while (!g_queue_is_empty(&p->ring_out)) {
        cr_out_done(p, &p->ring_out);
    }
    cr_ring_free(p->ring);
    g_free(p->tx);
}

void cr_peer_write(void *opaque)
{
    CrPeer *p = opaque;
    CrOut *o;

    while (!p->dead && (o = g_queue_peek_head(&p->out))) {
        if (!cr_sendmsg(p, o->data, o->len, o->fd)) {
            return;     /* still full */
        }
        cr_out_done(p, &p->out);
    }
    if (!p->dead) {
        p->want_write = false;
        cr_link_watch(p);
    }
    p->t->link_up.done(p->t);
}

/*
 * The side that connected makes the rings (CR_RING); without them (no
 * memory) both sides stay on the socket.
 */
void cr_link_ring_offer(CrPeer *p)
{
    CrRingMsg m = { .h = { CR_RING, sizeof(m) },
                    .ring_size = p->t->ring_size };
    g_autoptr(Error) err = NULL;

    if (!m.ring_size) {
        return;         /* pvrdma_coresident_set_rings(): none */
    }
    p->ring = cr_ring_create(m.ring_size, &err);
    if (!p->ring) {
        warn_report("pvrdma: co-resident peer %s: no rings (%s): messages go "
                    "through the socket", p->name,
                    error_get_pretty(err));
        return;
    }
    cr_send(p, &m, sizeof(m), cr_ring_fd(p->ring));
    cr_ring_close_fd(p->ring);
}

/* From now on what we send to p goes through the ring: say so first. */
static void cr_ring_start_tx(CrPeer *p)
{
    CrHdr on = { CR_RING_ON, sizeof(on) };

    cr_send(p, &on, sizeof(on), -1);
    cr_flush_peer(p);
    p->ring_tx = true;
}

/* RING: the connecting side's rings; RING_ON answers them. */
bool cr_link_rx_ring(CrPeer *p, const CrRingMsg *m, size_t len, int fd)
{
    g_autoptr(Error) err = NULL;

    if (len != sizeof(*m) || fd < 0 || p->outgoing || p->ring) {
        return false;
    }
    p->ring = cr_ring_map(fd, m->ring_size, &err);
    if (!p->ring) {
        warn_report("pvrdma: co-resident peer %s: %s: messages go through the "
                    "socket", p->name, error_get_pretty(err));
        return true;
    }
    cr_ring_start_tx(p);
    return true;
}

/* WAKE: p's take of its ring (after this datagram) is one it asked for. */
bool cr_link_rx_wake(CrPeer *p, size_t len)
{
    if (len != sizeof(CrHdr) || !p->ring_rx) {
        return false;
    }
    cr_ring_took_wake(p->ring);
    return true;
}

/* ROOM: p took from our ring (cr_peer_read_in() pushes what waits). */
bool cr_link_rx_room(CrPeer *p, size_t len)
{
    return len == sizeof(CrHdr) && p->ring_tx;
}

/* The host's poll: a record in p's ring is work for its read handler. */
static bool cr_ring_poll(void *opaque)
{
    CrPeer *p = opaque;

    return !p->dead && p->ring_rx && cr_ring_ready(p->ring);
}

static void cr_rings_later(CrTransport *t);

/*
 * The host starts (polling) or stops polling p's ring.  While it polls,
 * the producer need not WAKE us, and what we take leaves the ring awake;
 * when it stops, the producer must again (a record that came in just
 * before is what the host's last look finds).
 */
static void cr_ring_poll_state(void *opaque, bool polling)
{
    CrPeer *p = opaque;

    if (p->dead || !p->ring_rx) {
        return;
    }
    p->host_polls = polling;
    if (polling) {
        cr_ring_awake(p->ring);
    } else if (!cr_ring_sleep(p->ring)) {
        cr_rings_later(p->t);   /* its producer will not WAKE us for it */
    }
}

/* A host that polls (an IOThread) looks at p's ring while it does. */
static void cr_link_watch_ring(CrPeer *p)
{
    PvrdmaCore *c = p->t->t.core;

    if (c->ops->set_fd_poll) {
        c->ops->set_fd_poll(c->opaque, p->fd, cr_ring_poll,
                            cr_ring_poll_state);
    }
}

/* RING_ON: what the peer sends after this is in its ring. */
bool cr_link_rx_ring_on(CrPeer *p, size_t len)
{
    if (len != sizeof(CrHdr) || !p->ring || p->ring_rx ||
        p->outgoing == p->ring_tx) {
        return false;   /* the accepting side answers RING before it */
    }
    p->ring_rx = true;
    cr_link_watch_ring(p);
    trace_pvrdma_cr_ring(p->node, cr_ring_size(p->ring));
    if (!p->ring_tx) {
        cr_ring_start_tx(p);
    }
    return true;
}

/*
 * A datagram holds one message, or several each starting 8-byte aligned;
 * a descriptor comes only with a datagram of exactly one REGION or RING
 * message.
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
        if (!p->t->link_up.rx(p, buf + off, h->len, fd)) {
            return false;
        }
        off += ROUND_UP(h->len, 8);
    }
    return true;
}

/* A ring holds more than we took: the timer hook takes it. */
static void cr_rings_later(CrTransport *t)
{
    t->ring_backlog = true;
    pvrdma_transport_timer(t->t.core, 0);
}

/*
 * Take what p's ring holds (at most budget records: then the timer hook
 * takes the rest), send ROOM to a producer that waits for room.  Unless
 * stay_awake (we poll next), the producer WAKEs us for the next record.
 */
static void cr_ring_take_in(CrPeer *p, unsigned budget, bool stay_awake)
{
    CrTransport *t = p->t;
    unsigned took = 0;

    if (!p->ring_rx) {
        return;
    }
    cr_ring_awake(p->ring);
    while (!p->dead) {
        int n;

        if (took == budget) {
            if (!cr_ring_sleep(p->ring)) {
                cr_rings_later(t);
            }
            break;
        }
        n = cr_ring_get(p->ring, t->rx, CR_MAX_MSG);
        if (n < 0) {
            cr_peer_fail(p, "its ring's records do not add up");
            return;
        }
        if (!n) {
            if (stay_awake || cr_ring_sleep(p->ring)) {
                break;
            }
            cr_ring_awake(p->ring); /* one came in as we went to sleep */
            continue;
        }
        took++;
        if (!cr_rx_datagram(p, t->rx, n, -1)) {
            cr_peer_fail(p, "malformed message");
            return;
        }
    }
    if (took && !p->dead && cr_ring_space_wanted(p->ring)) {
        cr_send_hdr(p, CR_ROOM);
    }
}

/*
 * The same as one batch of completions (pvrdma_batch_begin()): the CQEs
 * of the records taken are published, and each armed CQ notified, once.
 */
static void cr_ring_take(CrPeer *p, unsigned budget, bool stay_awake)
{
    PvrdmaCore *c = p->t->t.core;

    pvrdma_batch_begin(c);
    cr_ring_take_in(p, budget, stay_awake);
    pvrdma_batch_end(c);
}

/* Take what the peers left in their rings (the timer hook). */
void cr_rings_catch_up(CrTransport *t)
{
    if (t->ring_backlog) {
        t->ring_backlog = false;
        for (guint i = 0; i < t->peers->len; i++) {
            CrPeer *p = g_ptr_array_index(t->peers, i);

            cr_ring_take(p, CR_RX_BATCH, p->host_polls);
        }
        t->link_up.done(t);
    }
}

/*
 * Receive one datagram from p's socket and hand its messages on: 1 if
 * there was one, 0 if there was none, -1 if p hung up (*err its errno,
 * 0 for an orderly shutdown).
 */
static int cr_recv_one(CrPeer *p, int *err)
{
    CrTransport *t = p->t;
    /* one byte more than a message may have: a longer one shows */
    struct iovec iov = { t->rx, CR_MAX_MSG + 1 };
    g_autofree int *fds = NULL;
    size_t nfds = 0;
    Error *local_err = NULL;
    int fd = -1;
    ssize_t n;

    n = qio_channel_readv_full(QIO_CHANNEL(p->sioc), &iov, 1, &fds, &nfds,
                               0, &local_err);
    if (n == QIO_CHANNEL_ERR_BLOCK) {
        return 0;
    }
    if (n <= 0) {
        *err = n < 0 ? errno : 0;
        error_free(local_err);
        return -1;
    }
    if (nfds) {
        fd = fds[0];
    }
    for (size_t k = 1; k < nfds; k++) {
        close(fds[k]);
    }
    if (nfds > 1 || n > CR_MAX_MSG || !cr_rx_datagram(p, t->rx, n, fd)) {
        cr_peer_fail(p, "malformed message");
    }
    if (fd >= 0) {
        close(fd);
    }
    return 1;
}

/* Read p's socket and ring; what that sends or frees: the caller. */
static void cr_peer_read_in(CrPeer *p, bool stay_awake)
{
    PvrdmaCore *c = p->t->t.core;
    int rc = 0, err = 0;

    pvrdma_batch_begin(c);  /* one batch with what the ring holds */
    for (int i = 0; i < CR_RX_BATCH && !p->dead; i++) {
        rc = cr_recv_one(p, &err);
        if (rc <= 0) {
            break;
        }
    }
    /* what it put in its ring before it hung up comes first */
    cr_ring_take(p, rc < 0 && p->ring ? cr_ring_size(p->ring) / 16 :
                 CR_RX_BATCH,
                 stay_awake && rc >= 0);
    pvrdma_batch_end(c);
    if (rc < 0 && err == ECONNRESET && p->paused) {
        cr_peer_fail(p, NULL);  /* it hung up after its pause: moved */
    } else if (rc < 0) {
        if (!err && !p->paused) {
            /* its QEMU quit or crashed: no warning, but the host hears */
            cr_peer_lost(p, "hung up");
        }
        cr_peer_fail(p, err ? strerror(err) : p->authed ? NULL :
                     "hung up before the handshake was over (it refused "
                     "this device: see its log)");
    }
    if (!p->dead && p->ring_tx && !g_queue_is_empty(&p->ring_out)) {
        cr_ring_push(p);    /* a ROOM: the peer took some */
    }
}

void cr_peer_read(void *opaque)
{
    CrPeer *p = opaque;

    cr_peer_read_in(p, false);
    p->t->link_up.done(p->t);
}

/* Worth polling p's ring when we took from it (see cr_peer_poll()). */
static bool cr_peer_polls(CrPeer *p)
{
    CrTransport *t = p->t;

    return t->poll_ns && t->t.core->ops->poll_wait && !t->polling &&
           p->ring_rx && (p->pid != getpid() || t->poll_self);
}

/* poll_wait's ready(): it reads only the ring's shared memory */
static bool cr_ring_ready_cb(void *ring)
{
    return cr_ring_ready(ring);
}

/*
 * Poll p's ring for a while before sleeping (the host drops its locks
 * meanwhile: nothing else of ours is touched, and cr_reap() waits).  Not
 * for a peer in this process: it cannot write while we wait.
 */
static bool cr_peer_poll(CrPeer *p)
{
    CrTransport *t = p->t;
    PvrdmaCore *c = t->t.core;
    bool ready;

    if (p->dead) {
        return false;
    }
    cr_flush(t);        /* what we answered goes before we wait */
    t->polling = true;
    ready = c->ops->poll_wait(c->opaque, cr_ring_ready_cb, p->ring,
                              t->poll_ns);
    t->polling = false;
    return ready && !p->dead;
}

/*
 * p's socket is readable: read it and p's ring, then poll the ring for
 * CR_POLL_ROUNDS more takes at most, each within t->poll_ns of the last;
 * then sleep (the producer WAKEs us).  Dead peers are freed at the end.
 */
void cr_peer_event(void *opaque)
{
    CrPeer *p = opaque;
    CrTransport *t = p->t;
    bool polls = cr_peer_polls(p);

    cr_peer_read_in(p, polls || p->host_polls);
    for (int i = 0; polls && i < CR_POLL_ROUNDS && cr_peer_poll(p); i++) {
        cr_ring_take(p, CR_RX_BATCH, true);
    }
    if (polls && !p->dead && !cr_ring_sleep(p->ring)) {
        cr_rings_later(t);  /* one came in as we went to sleep */
    }
    t->link_up.done(t);
}
