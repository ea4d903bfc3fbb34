/*
 * pvrdma co-resident transport, the peers: the connections to the
 * sockets of the rendezvous directory and those accepted on ours, each
 * received message (from coresident_link.c, which carries them) checked
 * and dispatched, the handshake (HELLO, AUTH), the peers' RAM (REGION)
 * and GID tables (GIDS), the rings offered, dead peers freed.  What is
 * not its own it hands up to the data path through t->up (CrUpcalls).
 * See coresident.c for the transport as a whole, coresident_int.h for
 * what its files share.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include <sys/mman.h>
#include <sys/stat.h>
#include "crypto/hmac.h"
#include "crypto/random.h"
#include "qapi/error.h"
#include "coresident_int.h"

/*
 * End of an event: send what it produced, free peers that died (a QP that
 * waits for one's answer to its transport offer goes on:
 * pvrdma_transport_for()).
 */
void cr_done(CrTransport *t)
{
    cr_flush(t);
    /* our state moved (cr_moved()): a peer goes once MOVED is out */
    for (guint i = 0; t->moved && i < t->peers->len; i++) {
        CrPeer *p = g_ptr_array_index(t->peers, i);

        if (p->closing && g_queue_is_empty(&p->out)) {
            cr_peer_fail(p, NULL);
        }
    }
    if (cr_reap(t)) {
        pvrdma_transport_wake_senders(t->t.core);
    }
    if (t->fencing && cr_fenced(t)) {
        t->fencing = false;
        pvrdma_transport_fenced(&t->t);
    }
}

/* A message of only a header: PAUSE, PAUSED, RESUME, MOVED. */
void cr_send_ctl(CrPeer *p, uint32_t type)
{
    CrHdr m = { type, sizeof(m) };

    cr_send(p, &m, sizeof(m), -1);
}

void cr_send_gids(CrTransport *t, CrPeer *p)
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

/*
 * The HMAC of an AUTH message on p's connection (pvrdma_coresident_wire.h):
 * ours (the proof we send p) or theirs (the proof p must send us).  False
 * if QEMU's crypto could not compute it.
 */
static bool cr_auth_mac(const CrTransport *t, const CrPeer *p, bool ours,
                        uint8_t mac[CR_MAC_LEN])
{
    uint8_t role = (ours ? p->outgoing : !p->outgoing) ? 'c' : 'a';
    uint64_t pnode = ours ? t->node : p->node;
    uint64_t vnode = ours ? p->node : t->node;
    struct iovec iov[] = {
        { (void *)CR_AUTH_LABEL, strlen(CR_AUTH_LABEL) },
        { &role, 1 },
        { (void *)(ours ? p->peer_nonce : p->nonce), CR_NONCE_LEN },
        { (void *)(ours ? p->nonce : p->peer_nonce), CR_NONCE_LEN },
        { &pnode, sizeof(pnode) },
        { &vnode, sizeof(vnode) },
    };
    g_autoptr(QCryptoHmac) h = qcrypto_hmac_new(QCRYPTO_HASH_ALGO_SHA256,
                                                t->secret, t->secret_len,
                                                NULL);
    size_t len = CR_MAC_LEN;

    return h && !qcrypto_hmac_bytesv(h, iov, ARRAY_SIZE(iov), &mac, &len,
                                     NULL) && len == CR_MAC_LEN;
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

/* How a connection came */
typedef enum CrHow {
    CR_CONNECTED,   /* we connected to a socket in the directory */
    CR_ACCEPTED,    /* we accepted one on ours */
    CR_GIVEN,       /* management gave it (pvrdma_coresident_add_peer()) */
} CrHow;

/*
 * A connection is up (we connected to path, or accepted one on our
 * socket, or management gave it, named path): unless its other end runs
 * as another user (management vouches for what it gives), it becomes a
 * peer and gets our HELLO.  Our RAM and GIDs follow once it is accepted
 * (cr_peer_accepted).
 */
static CrPeer *cr_peer_new(CrTransport *t, QIOChannelSocket *sioc,
                           const char *path, CrHow how)
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
        .features = t->features,
    };

    /* the channel has no call for the peer's credentials */
    if (getsockopt(sioc->fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) ||
        cl != sizeof(cred)) {
        warn_report("pvrdma: co-resident: %s: cannot tell who the peer is "
                    "(%s), "
                    "refused", path, strerror(errno));
        object_unref(OBJECT(sioc));
        return NULL;
    }
    p = g_new0(CrPeer, 1);
    p->name = how == CR_ACCEPTED ?
              g_strdup_printf("pid %d on %s", (int)cred.pid, path) :
              g_strdup_printf("%s (pid %d)", path, (int)cred.pid);
    p->label = g_strdup(path);
    if (how != CR_GIVEN && cred.uid != t->uid) {
        warn_report("pvrdma: co-resident peer %s runs as uid %u, not as this "
                    "QEMU's uid %u: refused", p->name,
                    (unsigned)cred.uid, (unsigned)t->uid);
        object_unref(OBJECT(sioc));
        g_free(p->name);
        g_free(p->label);
        g_free(p);
        return NULL;
    }
    p->t = t;
    p->sioc = sioc;
    p->fd = sioc->fd;
    p->pid = cred.pid;
    p->outgoing = how == CR_CONNECTED;
    p->given = how == CR_GIVEN;
    p->tx = g_malloc(CR_MAX_MSG);
    g_queue_init(&p->out);
    g_queue_init(&p->ring_out);
    g_ptr_array_add(t->peers, p);
    cr_link_watch(p);
    if (t->secret && qcrypto_random_bytes(p->nonce, CR_NONCE_LEN, NULL)) {
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
    if (p->outgoing && (p->features & CR_F_RINGS)) {
        cr_link_ring_offer(p);
    }
}

/* Free a dead peer: fail what it owes us, drop what it asked of us. */
static void cr_peer_free(CrTransport *t, CrPeer *p)
{
    /* what the data path holds of it: cr_data_peer_gone() */
    t->up.peer_gone(p);

    cr_link_close(p);
    for (uint32_t i = 0; i < CR_MAX_REGIONS; i++) {
        if (p->region[i].host) {
            munmap(p->region[i].host, p->region[i].size);
        }
    }
    g_free(p->gids);
    g_free(p->refused);
    g_free(p->name);
    g_free(p->label);
    g_free(p);
}

/* Free the dead peers; true if there were any. */
bool cr_reap(CrTransport *t)
{
    PvrdmaCore *c = t->t.core;
    bool any = t->reap;

    if (t->polling) {
        return false;   /* a poll may read a peer's ring: after it ends */
    }
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
                    c->ops->set_fd_handler(c->opaque, t->lfd, cr_accept,
                                           NULL, t);
                }
            } else {
                i++;
            }
        }
    }
    return any;
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
        (m->fd_offset & (qemu_real_host_page_size() - 1)) || fstat(fd, &st) ||
        !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_size < m->fd_offset + m->size) {
        return false;
    }
    if (!pvrdma_fd_sealed(fd)) {
        warn_report("pvrdma: co-resident peer %016" PRIx64 ": its RAM can "
                    "shrink (not a memfd sealed with F_SEAL_SHRINK: "
                    "memory-backend-memfd with seal=on, the default): "
                    "not mapped, the peer is dropped", p->node);
        return false;
    }
    host = mmap(NULL, m->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                m->fd_offset);
    if (host == MAP_FAILED) {
        warn_report("pvrdma: co-resident peer %016" PRIx64 ": cannot map its "
                    "RAM: %s", p->node, strerror(errno));
        return false;
    }
    p->region[m->index].host = host;
    p->region[m->index].size = m->size;
    p->nmapped++;
    return true;
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
    /* a newer build's HELLO may be longer: what follows is not ours */
    if (len < sizeof(*m) || m->magic != CR_MAGIC ||
        m->nregions > CR_MAX_REGIONS) {
        return false;
    }
    if (m->node == t->node) {
        cr_peer_fail(p, "claims this device's node id");
        return false;
    }
    /* one connection per pair: a second one (management gave two) goes */
    for (guint i = 0; i < t->peers->len; i++) {
        CrPeer *o = g_ptr_array_index(t->peers, i);

        if (o != p && o->hello && !o->dead && o->node == m->node) {
            cr_peer_fail(p, "is already connected to this device");
            return false;
        }
    }
    if (p->given) {
        /* nobody connected: the lower node id plays the connecting side */
        p->outgoing = t->node < m->node;
    } else if (!p->outgoing) {
        /* name it by the socket it says it listens on; the pid is sure */
        char *label = g_strdup_printf("%s/%016" PRIx64 ".sock", t->dir,
                                      m->node);

        g_free(p->name);
        p->name = g_strdup_printf("%s (pid %d)", label, p->pid);
        g_free(p->label);
        p->label = label;
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
    /* what both offer; the bits we do not know are a newer build's */
    p->features = m->features & t->features;
    memcpy(p->peer_nonce, m->nonce, CR_NONCE_LEN);
    trace_pvrdma_cr_peer(p->node, p->nregions, p->features, m->features);
    if (auth) {
        CrAuthMsg a = { .h = { CR_AUTH, sizeof(a) } };

        if (!cr_auth_mac(t, p, true, a.mac)) {
            cr_peer_fail(p, "no HMAC-SHA256 for its proof (QEMU's crypto)");
            return false;
        }
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
    ok = cr_auth_mac(p->t, p, false, want) && cr_mac_equal(want, m->mac);
    memset(want, 0, sizeof(want));
    if (!ok) {
        cr_peer_fail(p, "failed authentication (its rendezvous-secret is "
                     "not this device's)");
        return false;
    }
    cr_peer_accepted(p);
    return true;
}

/* The feature a message type belongs to (0: the base protocol). */
static uint64_t cr_msg_feature(uint32_t type)
{
    switch (type) {
    case CR_RING:
    case CR_RING_ON:
    case CR_WAKE:
    case CR_ROOM:
        return CR_F_RINGS;
    case CR_OFFER:
    case CR_ANSWER:
        return CR_F_OFFER;
    default:
        return 0;
    }
}

bool cr_peer_rx(CrPeer *p, const uint8_t *buf, size_t len, int fd)
{
    const CrHdr *h = (const CrHdr *)buf;

    if (len < sizeof(*h) || h->len != len) {
        return false;
    }
    if (fd >= 0 && h->type != CR_REGION && h->type != CR_RING) {
        return false;
    }
    if (!p->hello && h->type != CR_HELLO) {
        return false;
    }
    /* nothing but the handshake before the peer is accepted */
    if (!p->authed && h->type != CR_HELLO && h->type != CR_AUTH) {
        return false;
    }
    /* nothing of a feature this connection does not use */
    if (cr_msg_feature(h->type) & ~p->features) {
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
    case CR_RING:
        return cr_link_rx_ring(p, (const CrRingMsg *)buf, len, fd);
    case CR_RING_ON:
        return cr_link_rx_ring_on(p, len);
    case CR_WAKE:
        return cr_link_rx_wake(p, len);
    case CR_ROOM:
        return cr_link_rx_room(p, len);
    default:
        /* the data path's messages: cr_data_rx() */
        return p->t->up.rx(p, buf, len);
    }
}

/*
 * A connected socket fd as a non-blocking channel, ours from now on (fd
 * is closed on failure).
 */
QIOChannelSocket *cr_channel(int fd, Error **errp)
{
    QIOChannelSocket *sioc = qio_channel_socket_new_fd(fd, errp);

    if (!sioc) {
        close(fd);
        return NULL;
    }
    if (qio_channel_set_blocking(QIO_CHANNEL(sioc), false, errp) < 0) {
        object_unref(OBJECT(sioc));
        return NULL;
    }
    qio_channel_set_name(QIO_CHANNEL(sioc), "pvrdma-coresident-peer");
    return sioc;
}

/* ------------------------------------------------------------------ */
/* Rendezvous                                                          */

void cr_accept(void *opaque)
{
    CrTransport *t = opaque;
    PvrdmaCore *c = t->t.core;

    for (;;) {
        /* accept4(): the channel's accept would lose EAGAIN and EMFILE */
        int fd = accept4(t->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        QIOChannelSocket *sioc;

        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE) {
                /*
                 * Out of descriptors: the listener would stay readable and
                 * spin the loop.  Stop accepting until a peer is freed.
                 */
                warn_report("pvrdma: co-resident: out of file descriptors, "
                            "not accepting peers for now");
                c->ops->set_fd_handler(c->opaque, t->lfd, NULL, NULL, NULL);
                t->accept_paused = true;
            }
            break;
        }
        sioc = cr_channel(fd, NULL);
        if (sioc) {
            cr_peer_new(t, sioc, t->sock_path, CR_ACCEPTED);
        }
    }
    cr_done(t);
}

bool cr_sockaddr(const char *path, struct sockaddr_un *sa)
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
void cr_scan(CrTransport *t)
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
            QIOChannelSocket *sioc = cr_channel(fd, NULL);

            if (sioc) {
                cr_peer_new(t, sioc, path, CR_CONNECTED);
            }
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

/*
 * A connection management made (pvrdma_coresident_add_peer()): a
 * connected AF_UNIX SOCK_SEQPACKET socket, ours from now on.
 */
bool cr_peer_add(CrTransport *t, int fd, const char *name, Error **errp)
{
    QIOChannelSocket *sioc;
    int type = 0, domain = 0;
    socklen_t l1 = sizeof(type), l2 = sizeof(domain);
    struct sockaddr_un sa;
    socklen_t sl = sizeof(sa);

    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l1) ||
        getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &l2) ||
        domain != AF_UNIX || type != SOCK_SEQPACKET) {
        error_setg(errp, "peer %s: not a unix SOCK_SEQPACKET socket "
                   "(give one end of socketpair(AF_UNIX, SOCK_SEQPACKET))",
                   name);
        close(fd);
        return false;
    }
    if (getpeername(fd, (struct sockaddr *)&sa, &sl)) {
        error_setg(errp, "peer %s: the socket is not connected", name);
        close(fd);
        return false;
    }
    qemu_set_cloexec(fd);
    sioc = cr_channel(fd, errp);
    if (!sioc) {
        error_prepend(errp, "peer %s: ", name);
        return false;
    }
    if (!cr_peer_new(t, sioc, name, CR_GIVEN)) {
        error_setg(errp, "peer %s: refused (see the log)", name);
        return false;
    }
    cr_done(t);
    return true;
}
