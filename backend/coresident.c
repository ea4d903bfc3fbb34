/*
 * pvrdma co-resident transport: VMs on one host exchange verbs through
 * each other's guest RAM, with no HCA and no host kernel RDMA.  Design in
 * docs/devel/pvrdma-coresident.rst, protocol in
 * docs/interop/pvrdma-coresident.rst; its files in the devel doc's file
 * map.  This one: the transport's hooks, the fence, the pause for
 * migration and snapshots, and the constructor (which joins the
 * rendezvous directory).
 *
 * Everything runs in the caller's event loop (QEMU's main loop, BQL held)
 * but a poll of a peer's ring, which spins without the BQL and touches
 * nothing but that ring's shared memory.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include <poll.h>
#include <sys/file.h>
#include <sys/stat.h>
#include "qapi/error.h"
#include "coresident_int.h"

/* ------------------------------------------------------------------ */
/* Hooks                                                               */

static bool cr_reaches(PvrdmaTransport *pt, const uint8_t dgid[16])
{
    return cr_peer_for_gid(cr(pt), dgid) || cr_gid_moved(cr(pt), dgid);
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

static void cr_destroy(PvrdmaTransport *pt)
{
    CrTransport *t = cr(pt);
    PvrdmaCore *c = pt->core;

    for (guint i = 0; i < t->peers->len; i++) {
        cr_peer_fail(g_ptr_array_index(t->peers, i), NULL);
    }
    cr_reap(t);     /* the peers' requests waiting here went with them */
    cr_qps_fini(t);
    cr_flights_fini(t);
    cr_data_fini(t);
    g_ptr_array_free(t->peers, true);
    g_array_free(t->moved_gids, true);
    if (t->lfd >= 0) {
        c->ops->set_fd_handler(c->opaque, t->lfd, NULL, NULL, NULL);
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
    if (cr(pt)->sock_path) {
        unlink(cr(pt)->sock_path);
    }
}

void pvrdma_coresident_set_poll(PvrdmaTransport *pt, uint64_t poll_ns)
{
    cr(pt)->poll_ns = poll_ns;
}

void pvrdma_coresident_poll_self(PvrdmaTransport *pt, bool on)
{
    cr(pt)->poll_self = on;
}

bool pvrdma_coresident_set_rings(PvrdmaTransport *pt, uint32_t ring_size)
{
    if (ring_size && !cr_ring_size_ok(ring_size)) {
        return false;
    }
    cr(pt)->ring_size = ring_size;
    return true;
}

bool pvrdma_coresident_add_peer(PvrdmaTransport *pt, int fd,
                                const char *name, Error **errp)
{
    return cr_peer_add(cr(pt), fd, name, errp);
}

uint64_t pvrdma_coresident_peer_features(PvrdmaTransport *pt, unsigned n)
{
    CrTransport *t = cr(pt);

    for (guint i = 0; i < t->peers->len; i++) {
        CrPeer *p = g_ptr_array_index(t->peers, i);

        if (cr_peer_ready(p) && !n--) {
            return p->features;
        }
    }
    return 0;
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

unsigned pvrdma_coresident_qps(PvrdmaTransport *pt)
{
    return g_hash_table_size(cr(pt)->qps);
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
        unsigned n = 0, rings = 0;

        if (left <= 0) {
            return false;
        }
        for (guint i = 0; i < t->peers->len; i++) {
            CrPeer *p = g_ptr_array_index(t->peers, i);

            if (!p->dead) {
                pfd[n].fd = p->fd;
                pfd[n].events = POLLIN | (p->want_write ? POLLOUT : 0);
                n++;
                rings += p->ring_rx;
            }
        }
        /*
         * With rings, look at them every millisecond too: a peer does not
         * WAKE a ring the main loop polls (cr_peer_event()), and that
         * poll may be waiting for the lock this runs under.
         */
        if (poll(pfd, n, rings ? 1 : MAX(1, left / 1000)) < 0 &&
            errno != EINTR) {
            return false;
        }
        for (guint i = 0; rings && i < t->peers->len; i++) {
            CrPeer *p = g_ptr_array_index(t->peers, i);

            if (!p->dead && p->ring_rx && cr_ring_ready(p->ring)) {
                cr_peer_read(p);
            }
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

static bool cr_fence(PvrdmaTransport *pt, uint32_t qpn, unsigned wait_ms)
{
    CrTransport *t = cr(pt);
    int64_t t0 = g_get_monotonic_time();
    bool ok;

    t->fence_qpn = qpn;
    if (cr_fenced(t)) {
        return true;
    }
    cr_cancel_flights(t, qpn);
    cr_flush(t);
    if (!wait_ms) {
        t->fencing = true;      /* cr_done() tells the core when it is */
        return false;
    }
    ok = cr_serve_until(t, cr_fenced, t0 + wait_ms * 1000ll);
    cr_reap(t);
    trace_pvrdma_cr_fence(qpn, ok, g_get_monotonic_time() - t0);
    if (!ok) {
        warn_report("pvrdma: co-resident: the peers did not answer the "
                    "requests "
                    "of QP %d in %u ms; they may still access its "
                    "buffers", qpn == CR_ANY_QP ? -1 : (int)qpn,
                    wait_ms);
    }
    return ok;
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
    cr_finish_pieces(t);     /* nothing given back half-way */
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
 * it.  Nothing waits here: each connection is dropped once MOVED is out
 * (cr_done(); at once unless its socket was full).  We leave the
 * rendezvous directory for good.
 */
static void cr_moved(PvrdmaTransport *pt)
{
    CrTransport *t = cr(pt);
    PvrdmaCore *c = pt->core;

    if (t->moved) {
        return;
    }
    for (guint i = 0; i < t->peers->len; i++) {
        CrPeer *p = g_ptr_array_index(t->peers, i);

        if (!p->dead && p->pause_sent) {
            cr_send_ctl(p, CR_MOVED);
        }
        p->closing = true;      /* cr_done() drops it once MOVED is out */
    }
    trace_pvrdma_cr_quiesce("moved", t->peers->len, 0);
    t->moved = t->paused = true;
    cr_done(t);
    if (t->lfd >= 0) {
        c->ops->set_fd_handler(c->opaque, t->lfd, NULL, NULL, NULL);
        close(t->lfd);
        unlink(t->sock_path);
        t->lfd = -1;
    }
}

/* PvrdmaMessageOps.timer: what a ring still holds (cr_rings_later()) */
static void cr_timer(PvrdmaTransport *pt)
{
    cr_rings_catch_up(cr(pt));
}

static const PvrdmaMessageOps cr_msg = {
    .execute = cr_execute,
    .wake = cr_wake,
    .timer = cr_timer,
    .qp_gone = cr_qp_gone,
    .fence = cr_fence,
    .flush = cr_flush_hook,
};

static const PvrdmaMoveOps cr_move = {
    .moving = cr_moving,
    .qp_offer = cr_qp_offer,
};

static const PvrdmaMigOps cr_mig = {
    .quiesce = cr_quiesce,
    .resume = cr_resume,
    .moved = cr_moved,
};

static const PvrdmaTransportOps cr_ops = {
    .name = "coresident",
    .flags = PVRDMA_TP_DOORBELL_OK,
    .reaches = cr_reaches,
    .gids_changed = cr_gids_changed,
    .destroy = cr_destroy,
    .msg = &cr_msg,
    .move = &cr_move,
    .mig = &cr_mig,
};

/* ------------------------------------------------------------------ */
/* The constructor: joining the rendezvous directory                   */

/*
 * The rendezvous directory: created 0700 if missing; an existing one must
 * belong to us and be writable by nobody else, or a process of another
 * user could plant or replace sockets there.  True if it will do, else
 * false with errp set.
 */
static bool cr_check_dir(const char *dir, uid_t uid, Error **errp)
{
    struct stat st;

    if ((mkdir(dir, 0700) && errno != EEXIST) || stat(dir, &st)) {
        error_setg_errno(errp, errno, "cannot create rendezvous directory %s",
                         dir);
        return false;
    }
    if (!S_ISDIR(st.st_mode)) {
        error_setg(errp, "rendezvous path %s is not a directory", dir);
        return false;
    }
    if (st.st_uid != uid) {
        error_setg(errp, "rendezvous directory %s belongs to uid %u, "
                   "not to this QEMU's uid %u: use a directory "
                   "of this user's (QEMU creates it with mode "
                   "0700 if it does not exist)", dir,
                   (unsigned)st.st_uid, (unsigned)uid);
        return false;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        error_setg(errp, "rendezvous directory %s is writable by its "
                   "group or by others (mode %04o): other users "
                   "could replace the peers' sockets; make it "
                   "private with 'chmod 0700 %s'", dir,
                   (unsigned)(st.st_mode & 07777), dir);
        return false;
    }
    return true;
}

/*
 * Lock the rendezvous directory (its ".lock", against a peer scanning it
 * at the same time): the lock's descriptor, or -1 with errp set.
 */
static int cr_lock_dir(CrTransport *t, Error **errp)
{
    g_autofree char *lock = g_build_filename(t->dir, ".lock", NULL);
    struct stat st;
    int lockfd;

    lockfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (lockfd >= 0 && !fstat(lockfd, &st) && st.st_uid != t->uid) {
        error_setg(errp, "lock file %s belongs to uid %u, not to this "
                   "QEMU's uid %u: remove it", lock,
                   (unsigned)st.st_uid, (unsigned)t->uid);
    } else if (lockfd < 0 || flock(lockfd, LOCK_EX)) {
        error_setg_errno(errp, errno, "cannot lock rendezvous directory %s",
                         t->dir);
    } else {
        return lockfd;
    }
    if (lockfd >= 0) {
        close(lockfd);
    }
    return -1;
}

/* Listen on our socket, sa; false with errp set (and no socket left). */
static bool cr_listen(CrTransport *t, const struct sockaddr_un *sa,
                      Error **errp)
{
    /* connections are refused until listen(): 0600 before anyone gets in */
    t->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (t->lfd < 0 ||
        bind(t->lfd, (const struct sockaddr *)sa, sizeof(*sa)) ||
        chmod(t->sock_path, 0600) || listen(t->lfd, 64)) {
        error_setg_errno(errp, errno, "cannot listen on %s", t->sock_path);
        if (t->lfd >= 0) {
            close(t->lfd);
            t->lfd = -1;
            unlink(t->sock_path);
        }
        return false;
    }
    return true;
}

bool pvrdma_coresident_fd_ok(int fd)
{
    return pvrdma_fd_sealed(fd);
}

/*
 * Join t->dir: under its lock, listen on our socket there and connect to
 * every peer already listening; then accept the ones that come.
 */
static bool cr_join_dir(CrTransport *t, Error **errp)
{
    PvrdmaCore *c = t->t.core;
    struct sockaddr_un sa;
    int lockfd;

    t->sock_path = g_strdup_printf("%s/%016" PRIx64 ".sock", t->dir, t->node);
    cr_sockaddr(t->sock_path, &sa);     /* fits: checked by the caller */
    lockfd = cr_lock_dir(t, errp);
    if (lockfd < 0) {
        return false;
    }
    if (!cr_listen(t, &sa, errp)) {
        close(lockfd);
        return false;
    }
    cr_scan(t);
    close(lockfd);      /* releases the lock */
    c->ops->set_fd_handler(c->opaque, t->lfd, cr_accept, NULL, t);
    cr_done(t);
    return true;
}

PvrdmaTransport *pvrdma_coresident_new(PvrdmaCore *c, const char *dir,
                                       const void *secret, size_t secret_len,
                                       const PvrdmaShmRegion *regions,
                                       unsigned nregions, uint64_t features,
                                       Error **errp)
{
    CrTransport *t;
    struct sockaddr_un sa;

    if (!c->ops->set_fd_handler) {
        error_setg(errp, "the host has no set_fd_handler to watch the "
                   "rendezvous sockets with");
        return NULL;
    }
    if (!nregions || nregions > CR_MAX_REGIONS) {
        error_setg(errp, "%u shareable RAM regions (1 to %u supported)",
                   nregions, CR_MAX_REGIONS);
        return NULL;
    }
    for (unsigned i = 0; i < nregions; i++) {
        if (!pvrdma_fd_sealed(regions[i].fd)) {
            error_setg(errp, "RAM region %u can shrink (not a memfd "
                       "sealed with F_SEAL_SHRINK): peers would "
                       "refuse it", i);
            return NULL;
        }
    }
    if (secret && !secret_len) {
        error_setg(errp, "the rendezvous secret is empty");
        return NULL;
    }
    /* before anything is created: the socket path must fit in sun_path */
    if (dir && strlen(dir) + CR_SOCK_NAME >= sizeof(sa.sun_path)) {
        error_setg(errp, "rendezvous path %s is too long for a unix "
                   "socket (at most %zu characters)", dir,
                   sizeof(sa.sun_path) - 1 - CR_SOCK_NAME);
        return NULL;
    }
    if (dir && !cr_check_dir(dir, geteuid(), errp)) {
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
    t->peers = g_ptr_array_new();
    cr_qps_init(t);
    t->moved_gids = g_array_new(false, false, sizeof(CrMovedGid));
    /* the data path, for what the peers' layer cannot handle itself */
    t->up = (CrUpcalls) { .rx = cr_data_rx, .peer_gone = cr_data_peer_gone };
    /* the peers' layer, for the link */
    t->link_up = (CrLinkUpcalls) { .rx = cr_peer_rx, .done = cr_done };
    t->rx = g_malloc(CR_MAX_MSG + 1);
    t->ring_size = CR_RING_SIZE;
    t->features = features & CR_F_ALL;
    t->txmsg = g_malloc(CR_MAX_MSG);
    do {
        t->node = (uint64_t)g_random_int() << 32 | g_random_int();
    } while (!t->node);
    /* without a directory its peers come from pvrdma_coresident_add_peer() */
    if (dir && !cr_join_dir(t, errp)) {
        cr_destroy(&t->t);
        return NULL;
    }
    return &t->t;
}
