/*
 * Tests of the co-resident transport: who may join: uid, shared secret, GID
 * claims, permissions, features, peers from management.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "coresident/cr.h"

/* Start collecting the transport's host warnings (warn_report()). */
static void log_start(void)
{
    g_assert_null(fh_host_log);
    fh_host_log = g_string_new(NULL);
}

/* How often the warnings since log_start() contain all of a and b. */
static unsigned log_count(const char *a, const char *b)
{
    g_auto(GStrv) lines = g_strsplit(fh_host_log->str, "\n",
                                     -1);
    unsigned n = 0;

    for (char **l = lines; *l; l++) {
        n += strstr(*l, a) && (!b || strstr(*l, b));
    }
    return n;
}

static void log_expect(const char *a, const char *b)
{
    if (!log_count(a, b)) {
        g_test_message("no warning with '%s' and '%s' in:\n%s", a,
                       b ? b : "", fh_host_log->str);
        g_test_fail();
    }
}

static void log_stop(void)
{
    if (g_test_verbose()) {
        g_test_message("%s", fh_host_log->str);
    }
    g_string_free(fh_host_log, TRUE);
    fh_host_log = NULL;
}

/* How many mappings of the fake hosts' guest RAM this process has. */
static unsigned ram_maps(void)
{
    g_autofree char *maps = NULL;
    unsigned n = 0;

    g_assert_true(g_file_get_contents("/proc/self/maps", &maps, NULL, NULL));
    for (char *p = maps; (p = strstr(p, "memfd:fake-guest-ram")); p++) {
        n++;
    }
    return n;
}

/* The path of v's listening socket (g_free it). */
static char *vm_sock(Vm *v)
{
    for (guint i = 0; i < v->d.h.watches->len; i++) {
        int fd = g_array_index(v->d.h.watches, FhWatch, i).fd;
        int listening = 0;
        socklen_t ol = sizeof(listening);
        struct sockaddr_un sa;
        socklen_t sl = sizeof(sa);

        g_assert_cmpint(getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN,
                                   &listening, &ol), ==, 0);
        if (listening) {
            g_assert_cmpint(getsockname(fd, (struct sockaddr *)&sa, &sl), ==,
                            0);
            return g_strdup(sa.sun_path);
        }
    }
    g_assert_not_reached();
    return NULL;
}

/* a sends 64 bytes to b over connected RC QPs: delivered. */
static void send_across(Side *sa, Side *sb, uint8_t seed)
{
    struct pvrdma_sge g = mr_sge(sa, 0, 64), r = mr_sge(sb, 0, 64);
    uint8_t data[64], got[64];

    fill_pattern(data, sizeof(data), seed);
    mr_write(&sa->v->d, &sa->mr, S_IOVA, data, sizeof(data));
    post_recv(&sb->v->d, &sb->qp, 0xb0 + seed, &r, 1);
    send_wqe(sa, 0xa0 + seed, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(sa->v, sb->v);
    side_expect_cqe(sa, 0xa0 + seed, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 64);
    side_expect_cqe(sb, 0xb0 + seed, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 64);
    mr_read(&sb->v->d, &sb->mr, S_IOVA, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));
}

/* Devices that share a secret meet; their traffic flows as without one. */
static void test_auth_same_secret(void)
{
    Env e;
    Vm a, b, c;
    Side sa, sb;
    unsigned maps;

    env_init(&e);
    maps = ram_maps();
    vm_init_secret(&a, e.dir, 1, "correct horse battery staple");
    vm_init_secret(&b, e.dir, 2, "correct horse battery staple");
    vm_up(&a);
    vm_up(&b);
    PUMP(&a, &b);
    g_assert_cmpuint(peers(&a), ==, 1);
    g_assert_cmpuint(peers(&b), ==, 1);
    g_assert_true(reaches(&a, b.gid));
    g_assert_true(reaches(&b, a.gid));
    g_assert_cmpuint(ram_maps(), ==, maps + 4);     /* own + the other's */
    side_init(&sa, &a, PVRDMA_QPT_RC);
    side_init(&sb, &b, PVRDMA_QPT_RC);
    rc_connect(&sa, &sb, 7);
    send_across(&sa, &sb, 1);
    send_across(&sb, &sa, 2);

    /* a third with the secret joins both */
    vm_init_secret(&c, e.dir, 3, "correct horse battery staple");
    vm_up(&c);
    PUMP(&a, &b, &c);
    g_assert_cmpuint(peers(&a), ==, 2);
    g_assert_cmpuint(peers(&b), ==, 2);
    g_assert_cmpuint(peers(&c), ==, 2);
    g_assert_true(reaches(&c, a.gid));
    expect_cq_empty(&a.d, &sa.cq);
    expect_cq_empty(&b.d, &sb.cq);
    vm_fini(&c);
    vm_fini(&b);
    vm_fini(&a);
    env_fini(&e);
}

/*
 * Two devices that cannot accept each other (different secrets, or a
 * secret on one side only): neither maps the other's RAM nor learns its
 * GIDs, both warn naming the socket, and both hang up.
 */
static void refused_pair(const char *sa, const char *sb, const char *why_a,
                         const char *why_b)
{
    Env e;
    Vm a, b;
    unsigned maps;
    g_autofree char *pa = NULL, *pb = NULL;

    env_init(&e);
    log_start();
    maps = ram_maps();
    vm_init_secret(&a, e.dir, 1, sa);
    vm_up(&a);
    pa = vm_sock(&a);
    vm_init_secret(&b, e.dir, 2, sb);       /* b connects to a */
    vm_up(&b);
    pb = vm_sock(&b);
    PUMP(&a, &b);
    g_assert_cmpuint(peers(&a), ==, 0);
    g_assert_cmpuint(peers(&b), ==, 0);
    g_assert_false(reaches(&a, b.gid));
    g_assert_false(reaches(&b, a.gid));
    g_assert_cmpuint(fh_watch_count(&a.d.h), ==, 1);    /* listener only */
    g_assert_cmpuint(fh_watch_count(&b.d.h), ==, 1);
    g_assert_cmpuint(ram_maps(), ==, maps + 2);     /* each its own only */
    /*
     * Each names the other's socket; the side that finds out first says
     * why, the other may only see it hang up.
     */
    if (!(log_count(why_a, pb) || log_count(why_b, pa)) ||
        !(log_count(why_a, pb) || log_count("hung up", pb)) ||
        !(log_count(why_b, pa) || log_count("hung up", pa))) {
        g_test_message("expected '%s' naming %s and '%s' naming %s in:\n%s",
                       why_a, pb, why_b, pa,
                       fh_host_log->str);
        g_test_fail();
    }
    g_assert_cmpuint(count_socks(e.dir), ==, 2);    /* both still listen */
    log_stop();
    vm_fini(&b);
    vm_fini(&a);
    env_fini(&e);
}

static void test_auth_wrong_secret(void)
{
    refused_pair("alpha", "beta", "failed authentication",
                 "failed authentication");
}

static void test_auth_one_sided(void)
{
    refused_pair("alpha", NULL, "has no rendezvous-secret, this device "
                 "requires one", "requires a rendezvous-secret, this device "
                 "has none");
    refused_pair(NULL, "beta", "requires a rendezvous-secret, this device "
                 "has none", "has no rendezvous-secret, this device "
                 "requires one");
}

/*
 * The fake connection was dropped before the device sent it its RAM or
 * GIDs (only HELLO and AUTH may have come).
 */
static void fake_dropped_empty(Fake *f, const char *what)
{
    g_autofree uint8_t *buf = g_malloc(CR_MAX_MSG);

    for (;;) {
        int fd;
        ssize_t n = fake_recv(f, buf, CR_MAX_MSG, &fd);

        if (fd >= 0) {
            g_test_message("%s: the device sent a descriptor", what);
            g_test_fail();
            close(fd);
        }
        if (n < 0) {
            g_test_message("%s: the peer was not dropped", what);
            g_test_fail();
            return;
        }
        if (n == 0) {
            return;
        }
        if (((CrHdr *)buf)->type != CR_AUTH) {
            g_test_message("%s: the device sent message type %u", what,
                           ((CrHdr *)buf)->type);
            g_test_fail();
        }
    }
}

/*
 * A complete fake peer offering 'features' sends one message of a feature
 * the connection does not use: the device drops it, and only it.
 */
static void feature_msg_dropped(Vm *a, const char *path, uint64_t features,
                                const void *msg, size_t len, int fd,
                                const char *what)
{
    unsigned base = peers(a);
    Fake f;
    uint8_t fgid[16];

    make_gid(fgid, 10, 0xfb);
    fake_connect(&f, a, path);
    f.features = features;
    f.node = FAKE_NODE + 1;     /* another peer than the one connected */
    fake_ready(&f, fgid);
    PUMP(a);
    g_assert_cmpuint(peers(a), ==, base + 1);
    fake_send(&f, msg, len, fd);
    PUMP(a);
    if (!fake_dropped(&f)) {
        g_test_message("%s: the peer was not dropped", what);
        g_test_fail();
    }
    PUMP(a);
    g_assert_cmpuint(peers(a), ==, base);
    fake_close(&f);
}

/*
 * A device of a build with only 'features': its HELLO says so, and a
 * fake peer offering everything that sends msg (of a feature it lacks)
 * is dropped.
 */
static void device_lacking(uint64_t features, const void *msg, size_t len,
                           int fd, const char *what)
{
    Env e;
    Vm n;
    Fake g;
    g_autofree char *path = NULL;

    env_init(&e);
    g_features = features;
    vm_init(&n, e.dir, 3);
    g_features = CR_F_ALL;
    vm_up(&n);
    path = only_sock(e.dir);
    fake_connect(&g, &n, path);
    g_assert_cmphex(g.vm_features, ==, features & CR_F_ALL);
    fake_close(&g);
    PUMP(&n);
    feature_msg_dropped(&n, path, CR_F_ALL, msg, len, fd, what);
    vm_fini(&n);
    env_fini(&e);
}

/*
 * Features against fake peers: the device's HELLO offers what it has
 * (less when set); a newer build's HELLO (longer, with feature bits this
 * build does not know) is taken with what both have, and the rings work;
 * a message of a feature the connection does not use drops the peer,
 * whichever side lacks it; a build before features (protocol 7) is
 * refused by name.
 */
static void test_features_fake(void)
{
    Env e;
    Vm a;
    Side sa;
    Fake f, g;
    uint8_t fgid[16], data[3000];
    char *path;
    struct {
        CrHello h;
        uint8_t later[24];      /* a newer build's fields */
    } nh;
    CrOfferMsg o = { .h = { CR_OFFER, sizeof(o) }, .src_qpn = 77 };
    CrHdr wake = { CR_WAKE, sizeof(wake) };
    CrRingMsg rm = { .h = { CR_RING, sizeof(rm) }, .ring_size = CR_RING_SIZE };
    CrSge sg = { .region = 0, .off = 8192, .len = sizeof(data) };
    CrHello h;
    int rfd;

    log_start();
    path = fake_side_up(&e, &a, &sa, &f, fgid);
    g_assert_cmphex(f.vm_features, ==, CR_F_ALL);

    /* a newer build */
    nh.h = fake_hello_msg(&f, 1);
    nh.h.h.len = sizeof(nh);
    nh.h.features = CR_F_ALL | (1ull << 5) | (1ull << 63);
    memset(nh.later, 0xa5, sizeof(nh.later));
    fake_send(&f, &nh, sizeof(nh), -1);
    PUMP(&a);
    fake_take_ram(&f);
    fake_region(&f, 0, FAKE_RAM, 0, f.memfd);
    fake_gids(&f, fgid);
    PUMP(&a);
    g_assert_cmpuint(peers(&a), ==, 1);
    g_assert_cmphex(pvrdma_coresident_peer_features(a.t, 0), ==, CR_F_ALL);
    g_assert_true(fake_ring_on(&f, true));
    fill_pattern(data, sizeof(data), 12);
    memcpy(f.ram + 8192, data, sizeof(data));
    fake_write_checked(&f, &sa, 0x2001, &sg, 1, 64, data, sizeof(data));

    /* a build without the rings, one without OFFER */
    feature_msg_dropped(&a, path, CR_F_OFFER, &wake, sizeof(wake), -1,
                        "WAKE without CR_F_RINGS");
    rfd = memfd_create("fake-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    g_assert_cmpint(ftruncate(rfd, CR_RING_SHM_SIZE(CR_RING_SIZE)), ==, 0);
    g_assert_cmpint(fcntl(rfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), ==,
                    0);
    feature_msg_dropped(&a, path, CR_F_OFFER, &rm, sizeof(rm), rfd,
                        "RING without CR_F_RINGS");
    feature_msg_dropped(&a, path, CR_F_RINGS, &o, sizeof(o), -1,
                        "OFFER without CR_F_OFFER");
    /* devices of builds without OFFER, without the rings */
    device_lacking(CR_F_RINGS | (1ull << 40), &o, sizeof(o), -1,
                   "OFFER to a device without CR_F_OFFER");
    device_lacking(CR_F_OFFER, &rm, sizeof(rm), rfd,
                   "RING to a device without CR_F_RINGS");
    close(rfd);
    g_assert_cmpuint(peers(&a), ==, 1);

    /* a build before features: protocol 7 */
    fake_connect(&g, &a, path);
    h = fake_hello_msg(&g, 1);
    h.version = 7;
    h.h.len = offsetof(CrHello, features);      /* its HELLO: 64 bytes */
    fake_send(&g, &h, h.h.len, -1);
    PUMP(&a);
    fake_dropped_empty(&g, "HELLO version 7");
    log_expect("speaks protocol version 7, this device 8", path);
    fake_close(&g);

    /* the newer build's peer is still served */
    g_assert_cmpuint(peers(&a), ==, 1);
    fake_close(&f);
    PUMP(&a);
    g_assert_cmpuint(peers(&a), ==, 0);
    log_stop();
    vm_fini(&a);
    env_fini(&e);
    g_free(path);
}

/* Mappings of co-resident rings in this process (both sides map each). */
static unsigned ring_maps(void)
{
    g_autofree char *maps = NULL;
    unsigned n = 0;

    g_assert_true(g_file_get_contents("/proc/self/maps", &maps, NULL, NULL));
    for (char *p = maps; (p = strstr(p, "memfd:pvrdma-coresident-ring"));
         p++) {
        n++;
    }
    return n;
}

/*
 * Two devices without a rendezvous directory, with secrets sa and sb,
 * get the two ends of a socketpair from "management"; true if they
 * became peers.  Either way nothing lands in any directory.
 */
static bool given_pair(Vm *a, Vm *b, const char *sa, const char *sb)
{
    int sv[2];
    Error *err = NULL;

    vm_init_secret(a, NULL, 1, sa);
    vm_init_secret(b, NULL, 2, sb);
    vm_up(a);
    vm_up(b);
    g_assert_cmpuint(fh_watch_count(&a->d.h), ==, 0);   /* no listener */
    g_assert_cmpint(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
                               sv), ==, 0);
    g_assert_true(pvrdma_coresident_add_peer(a->t, sv[0], "to-b", &err));
    g_assert_null(err);
    g_assert_true(pvrdma_coresident_add_peer(b->t, sv[1], "to-a", &err));
    g_assert_null(err);
    PUMP(a, b);
    g_assert_cmpuint(peers(a), ==, peers(b));
    return peers(a) == 1 && reaches(a, b->gid) && reaches(b, a->gid);
}

/*
 * Peers from management (pvrdma_coresident_add_peer()): nobody scans or
 * listens; the roles a connection has (who makes the rings, the AUTH
 * role) follow the node ids, so the rings come up and the secrets are
 * checked; data moves both ways.  What is not a connected SOCK_SEQPACKET
 * unix socket is refused and closed.
 */
static void test_given_peers(void)
{
    Env e;
    Vm a, b;
    Side sa, sb;
    uint8_t data[3000], got[3000];
    struct pvrdma_sge g;
    Error *err = NULL;
    int sv[2], pfd[2], fd;

    env_init(&e);
    g_assert_true(given_pair(&a, &b, NULL, NULL));
    g_assert_cmphex(pvrdma_coresident_peer_features(a.t, 0), ==, CR_F_ALL);
    g_assert_cmpuint(ring_maps(), ==, 2);   /* one side made them */
    /* a second connection between the same two: refused, the first stays */
    g_assert_cmpint(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
                               sv), ==, 0);
    log_start();
    g_assert_true(pvrdma_coresident_add_peer(a.t, sv[0], "b again", &err));
    g_assert_true(pvrdma_coresident_add_peer(b.t, sv[1], "a again", &err));
    PUMP(&a, &b);
    log_expect("is already connected to this device", NULL);
    log_stop();
    g_assert_cmpuint(peers(&a), ==, 1);
    g_assert_cmpuint(peers(&b), ==, 1);
    g_assert_cmpuint(ring_maps(), ==, 2);
    side_init(&sa, &a, PVRDMA_QPT_RC);
    side_init(&sb, &b, PVRDMA_QPT_RC);
    rc_connect(&sa, &sb, 7);
    fill_pattern(data, sizeof(data), 13);
    mr_write(&a.d, &sa.mr, S_IOVA + 100, data, sizeof(data));
    g = mr_sge(&sb, 5000, sizeof(data));
    post_recv(&b.d, &sb.qp, 0xb1, &g, 1);
    g = mr_sge(&sa, 100, sizeof(data));
    send_wqe(&sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&a, &b);
    side_expect_cqe(&sa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 3000);
    side_expect_cqe(&sb, 0xb1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 3000);
    mr_read(&b.d, &sb.mr, S_IOVA + 5000, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));
    /* and back, an RDMA WRITE into a's MR */
    g = mr_sge(&sb, 5000, sizeof(data));
    rdma_wqe(&sb, 0xb2, PVRDMA_WR_RDMA_WRITE, &g, 1, S_IOVA + 20000,
             sa.mr.rkey, 0);
    PUMP(&a, &b);
    side_expect_cqe(&sb, 0xb2, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE, 3000);
    mr_read(&a.d, &sa.mr, S_IOVA + 20000, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));
    expect_cq_empty(&a.d, &sa.cq);
    expect_cq_empty(&b.d, &sb.cq);
    vm_fini(&a);
    vm_fini(&b);
    g_assert_cmpuint(ring_maps(), ==, 0);

    /* the same secret: both AUTHs check out; different ones: refused */
    g_assert_true(given_pair(&a, &b, "s3cret-s3cret-s3cret",
                             "s3cret-s3cret-s3cret"));
    vm_fini(&a);
    vm_fini(&b);
    log_start();
    g_assert_false(given_pair(&a, &b, "s3cret-s3cret-s3cret",
                              "other-other-other-other"));
    log_expect("failed authentication", NULL);
    log_stop();

    /* what management must not give */
    g_assert_cmpint(pipe(pfd), ==, 0);
    g_assert_false(pvrdma_coresident_add_peer(a.t, pfd[0], "a pipe", &err));
    g_assert_nonnull(strstr(error_get_pretty(err),
                            "not a unix SOCK_SEQPACKET socket"));
    g_clear_pointer(&err, error_free);
    close(pfd[1]);
    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv),
                    ==, 0);
    g_assert_false(pvrdma_coresident_add_peer(a.t, sv[0], "a stream",
                                              &err));
    g_assert_nonnull(strstr(error_get_pretty(err),
                            "not a unix SOCK_SEQPACKET socket"));
    g_clear_pointer(&err, error_free);
    close(sv[1]);
    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    g_assert_cmpint(fd, >=, 0);
    g_assert_false(pvrdma_coresident_add_peer(a.t, fd, "unconnected", &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "not connected"));
    g_clear_pointer(&err, error_free);
    g_assert_cmpuint(peers(&a), ==, 0);
    vm_fini(&a);
    vm_fini(&b);
    env_fini(&e);      /* every descriptor closed */
}

/*
 * A fake peer against a device with a secret: each way of cheating.  The
 * fixture: the device (its socket at path, a log kept) and the fake's GID.
 */
typedef struct AuthFx {
    const char *key;
    Env e;
    Vm a;
    char *path;
    uint8_t fgid[16];
} AuthFx;

static void auth_setup(AuthFx *x)
{
    x->key = "s3cret";
    env_init(&x->e);
    log_start();
    vm_init_secret(&x->a, x->e.dir, 1, x->key);
    vm_up(&x->a);
    x->path = vm_sock(&x->a);
    make_gid(x->fgid, 10, 0xfa);
}

static void auth_fini(AuthFx *x)
{
    g_assert_cmpuint(peers(&x->a), ==, 0);
    log_stop();
    g_free(x->path);
    vm_fini(&x->a);
    env_fini(&x->e);
}

/* Connect f and send its HELLO (with the secret secret, NULL: none) */
static void auth_hello(AuthFx *x, Fake *f, const char *secret)
{
    CrHello h;

    fake_connect(f, &x->a, x->path);
    f->secret = secret;
    h = fake_hello_msg(f, 1);
    fake_send(f, &h, sizeof(h), -1);
    PUMP(&x->a);
}

/* The secret: accepted, RAM both ways; a second AUTH; the AUTH replayed */
static void test_auth_fake_accepted(void)
{
    AuthFx x;
    Fake f;
    CrAuthMsg good, got;
    uint8_t nonce[CR_NONCE_LEN];
    CrHello h;

    auth_setup(&x);
    fake_connect(&f, &x.a, x.path);
    g_assert_cmpuint(f.vm_auth, ==, CR_AUTH_HMAC_SHA256);
    f.secret = x.key;
    h = fake_hello_msg(&f, 1);
    fake_send(&f, &h, sizeof(h), -1);
    PUMP(&x.a);
    g_assert_cmpint(fake_expect(&f, &got, sizeof(got), CR_AUTH), ==,
                    sizeof(got));
    fake_mac(x.key, true, f.vm_nonce, f.nonce, FAKE_NODE, f.vm_node,
             good.mac);
    good.h = (CrHdr) { CR_AUTH, sizeof(good) };
    fake_send(&f, &good, sizeof(good), -1);
    PUMP(&x.a);
    fake_take_ram(&f);
    fake_region(&f, 0, FAKE_RAM, 0, f.memfd);
    fake_gids(&f, x.fgid);
    PUMP(&x.a);
    g_assert_cmpuint(peers(&x.a), ==, 1);
    g_assert_true(reaches(&x.a, x.fgid));
    /* a second AUTH once accepted */
    fake_send(&f, &good, sizeof(good), -1);
    PUMP(&x.a);
    g_assert_true(fake_dropped(&f));
    g_assert_cmpuint(peers(&x.a), ==, 0);
    g_assert_false(reaches(&x.a, x.fgid));
    memcpy(nonce, f.nonce, CR_NONCE_LEN);
    fake_close(&f);

    /* the same AUTH replayed on a new connection (same fake nonce) */
    fake_connect(&f, &x.a, x.path);
    f.secret = x.key;
    memcpy(f.nonce, nonce, CR_NONCE_LEN);
    h = fake_hello_msg(&f, 1);
    fake_send(&f, &h, sizeof(h), -1);
    fake_send(&f, &good, sizeof(good), -1);
    PUMP(&x.a);
    fake_dropped_empty(&f, "replayed AUTH");
    fake_close(&f);
    auth_fini(&x);
}

/*
 * The wrong secret, the device's own AUTH sent back to it, a HELLO that
 * returns the device's nonce or claims its node id.
 */
static void test_auth_fake_refused(void)
{
    AuthFx x;
    Fake f;
    CrAuthMsg got;
    CrHello h;

    auth_setup(&x);
    auth_hello(&x, &f, "s3cret ");
    fake_mac(f.secret, true, f.vm_nonce, f.nonce, FAKE_NODE, f.vm_node,
             got.mac);
    got.h = (CrHdr) { CR_AUTH, sizeof(got) };
    fake_send(&f, &got, sizeof(got), -1);
    PUMP(&x.a);
    fake_dropped_empty(&f, "wrong secret");
    log_expect("failed authentication", "fa4e000000000001.sock (pid");
    fake_close(&f);

    auth_hello(&x, &f, x.key);
    g_assert_cmpint(fake_expect(&f, &got, sizeof(got), CR_AUTH), ==,
                    sizeof(got));
    fake_send(&f, &got, sizeof(got), -1);
    PUMP(&x.a);
    fake_dropped_empty(&f, "reflected AUTH");
    fake_close(&f);

    fake_connect(&f, &x.a, x.path);
    f.secret = x.key;
    memcpy(f.nonce, f.vm_nonce, CR_NONCE_LEN);
    h = fake_hello_msg(&f, 1);
    fake_send(&f, &h, sizeof(h), -1);
    PUMP(&x.a);
    fake_dropped_empty(&f, "HELLO with the device's nonce");
    log_expect("returned this device's challenge", NULL);
    fake_close(&f);

    fake_connect(&f, &x.a, x.path);
    f.secret = x.key;
    h = fake_hello_msg(&f, 1);
    h.node = f.vm_node;
    fake_send(&f, &h, sizeof(h), -1);
    PUMP(&x.a);
    fake_dropped_empty(&f, "HELLO with the device's node");
    log_expect("claims this device's node id", NULL);
    fake_close(&f);
    auth_fini(&x);
}

/* No secret, an unknown authentication, an old protocol, AUTH first */
static void test_auth_fake_hello(void)
{
    const CrAuthMsg any = { { CR_AUTH, sizeof(CrAuthMsg) } };
    g_autofree char *want = g_strdup_printf(
        "speaks protocol version 3, this device %u", CR_VERSION);
    AuthFx x;
    Fake f;
    CrHello h;

    auth_setup(&x);
    auth_hello(&x, &f, NULL);
    fake_dropped_empty(&f, "HELLO without a secret");
    fake_close(&f);

    fake_connect(&f, &x.a, x.path);
    h = fake_hello_msg(&f, 1);
    h.auth = 2;
    fake_send(&f, &h, sizeof(h), -1);
    PUMP(&x.a);
    fake_dropped_empty(&f, "HELLO auth 2");
    log_expect("unknown authentication", NULL);
    fake_close(&f);

    fake_connect(&f, &x.a, x.path);
    h = fake_hello_msg(&f, 1);
    h.version = 3;
    h.h.len = 32;           /* a version 3 HELLO */
    fake_send(&f, &h, 32, -1);
    PUMP(&x.a);
    fake_dropped_empty(&f, "HELLO version 3");
    log_expect(want, x.path);
    fake_close(&f);

    fake_connect(&f, &x.a, x.path);
    fake_send(&f, &any, sizeof(any), -1);
    PUMP(&x.a);
    fake_dropped_empty(&f, "AUTH before HELLO");
    fake_close(&f);
    auth_fini(&x);
}

/*
 * HELLO, then anything but AUTH: REGION (its fd is not mapped), GIDS,
 * CANCEL, a short AUTH.  And an AUTH to a device without a secret.
 */
static void test_auth_fake_unauthenticated(void)
{
    CrRegionMsg r = { { CR_REGION, sizeof(r) }, 0, 0, FAKE_RAM, 0 };
    CrAuthMsg shortauth = { { CR_AUTH, sizeof(CrAuthMsg) - 8 } };
    const CrAuthMsg any = { { CR_AUTH, sizeof(CrAuthMsg) } };
    g_autofree char *npath = NULL;
    AuthFx x;
    Vm n;
    Fake f;

    auth_setup(&x);
    for (int i = 0; i < 4; i++) {
        unsigned maps = ram_maps();
        CrCancelMsg c = { { CR_CANCEL, sizeof(c) }, 77 };

        auth_hello(&x, &f, x.key);
        if (i == 0) {
            fake_send(&f, &r, sizeof(r), f.memfd);
        } else if (i == 1) {
            fake_gids(&f, x.fgid);
        } else if (i == 2) {
            fake_send(&f, &c, sizeof(c), -1);
        } else {
            fake_send(&f, &shortauth, sizeof(shortauth) - 8, -1);
        }
        PUMP(&x.a);
        fake_dropped_empty(&f, "unauthenticated message");
        g_assert_cmpuint(ram_maps(), ==, maps);
        g_assert_false(reaches(&x.a, x.fgid));
        fake_close(&f);
    }
    g_assert_cmpuint(peers(&x.a), ==, 0);
    g_assert_cmpuint(fh_watch_count(&x.a.d.h), ==, 1);

    vm_init(&n, x.e.dir, 2);
    PUMP(&x.a, &n);
    g_assert_cmpuint(peers(&n), ==, 0);     /* and a refused it */
    npath = vm_sock(&n);
    fake_connect(&f, &n, npath);
    g_assert_cmpuint(f.vm_auth, ==, CR_AUTH_NONE);
    fake_hello(&f, 1);
    fake_send(&f, &any, sizeof(any), -1);
    PUMP(&n);
    g_assert_true(fake_dropped(&f));
    fake_close(&f);
    vm_fini(&n);
    auth_fini(&x);
}

/*
 * GID claims: first owner wins, and a device's own GIDs are never a
 * peer's.  c announces b's GID and a's: a and b ignore those, traffic
 * for them still goes where it went, and nobody is dropped.
 */
static void test_gid_claims(void)
{
    Env e;
    Vm a, b, c;
    Side sa, sb;
    uint8_t other[16], late[16];
    g_autofree char *pb = NULL, *pc = NULL, *owner = NULL;

    env_init(&e);
    log_start();
    vm_init(&a, e.dir, 1);
    vm_init(&b, e.dir, 2);
    vm_up(&a);
    vm_up(&b);
    PUMP(&a, &b);
    pb = vm_sock(&b);
    vm_init(&c, e.dir, 3);
    pc = vm_sock(&c);
    bind_gid(&c.d, 0, b.gid);           /* b's */
    bind_gid(&c.d, 1, a.gid);           /* a's */
    make_gid(other, 10, 33);
    bind_gid(&c.d, 2, other);           /* nobody's: c's own */
    PUMP(&a, &b, &c);
    g_assert_cmpuint(peers(&a), ==, 2);
    g_assert_cmpuint(peers(&b), ==, 2);
    g_assert_cmpuint(peers(&c), ==, 2);
    g_assert_true(reaches(&a, other));
    g_assert_true(reaches(&b, other));
    g_assert_false(reaches(&b, b.gid));     /* b's own: loopback */
    log_expect("announces GID 10.0.0.2, which this device owns", pc);
    log_expect("announces GID 10.0.0.1, which this device owns", pc);
    /* a knew b first: b keeps 10.0.0.2 at a */
    owner = g_strdup_printf("10.0.0.2, which %s", pb);
    log_expect(owner, pc);
    /* and c, which has b's GID too, does not take b's */
    log_expect("announces GID 10.0.0.2, which this device owns", pb);

    /* a's traffic for b's GID still reaches b, not c */
    side_init(&sa, &a, PVRDMA_QPT_RC);
    side_init(&sb, &b, PVRDMA_QPT_RC);
    rc_connect(&sa, &sb, 7);
    send_across(&sa, &sb, 3);
    send_across(&sb, &sa, 4);

    /* c announces again (a new GID): the refusals are not logged again */
    g_assert_cmpuint(log_count("announces GID 10.0.0.2", NULL), ==, 3);
    make_gid(late, 10, 34);
    bind_gid(&c.d, 3, late);
    PUMP(&a, &b, &c);
    g_assert_true(reaches(&a, late));
    g_assert_cmpuint(log_count("announces GID 10.0.0.2", NULL), ==, 3);

    /* a takes a GID c had: from now on it is a's (loopback), not c's */
    bind_gid(&a.d, 1, other);
    PUMP(&a, &b, &c);
    g_assert_false(reaches(&a, other));
    g_assert_true(reaches(&a, late));
    log_expect("announces GID 10.0.0.33, which this device owns", pc);
    /* b keeps c as the owner of 10.0.0.33: c had it first */
    g_assert_true(reaches(&b, other));
    g_assert_cmpuint(peers(&a), ==, 2);
    g_assert_cmpuint(peers(&b), ==, 2);
    expect_cq_empty(&a.d, &sa.cq);
    expect_cq_empty(&b.d, &sb.cq);
    log_stop();
    vm_fini(&c);
    vm_fini(&b);
    vm_fini(&a);
    env_fini(&e);
}

/* Join dir; NULL, or the error (error_free it) if refused. */
static Error *try_join(Vm *v, const char *dir)
{
    PvrdmaLimits l;
    PvrdmaShmRegion r;
    Error *err = NULL;

    memset(v, 0, sizeof(*v));
    pvrdma_limits_default(&l);
    fh_init_memfd(&v->d.h, VM_RAM);
    pvrdma_core_init(&v->d.c, &fh_ops, &v->d.h, &l);
    pvrdma_core_add_transport(&v->d.c, pvrdma_loopback_new(&v->d.c));
    v->d.h.core = &v->d.c;
    fh_shm_region(&v->d.h, &r);
    v->t = pvrdma_coresident_new(&v->d.c, dir, NULL, 0, &r, 1, CR_F_ALL,
                                 &err);
    g_assert_true(!v->t == !!err);
    if (v->t) {
        g_assert_true(pvrdma_core_add_transport(&v->d.c, v->t));
    }
    pvrdma_core_fini(&v->d.c);      /* destroys the transport */
    fh_fini(&v->d.h);
    return err;
}

static void expect_refused(const char *dir, const char *want,
                           const char *want2)
{
    Vm v;
    g_autoptr(Error) err = try_join(&v, dir);
    const char *msg = err ? error_get_pretty(err) : NULL;

    if (!msg || !strstr(msg, want) || (want2 && !strstr(msg, want2))) {
        g_test_message("joining %s: '%s', expected '%s' and '%s'", dir,
                       msg ? msg : "(no error)", want, want2 ? want2 : "");
        g_test_fail();
    }
    if (g_file_test(dir, G_FILE_TEST_IS_DIR)) {
        g_assert_cmpuint(count_socks(dir), ==, 0);
    }
}

/*
 * The directory is created 0700 and the socket 0600, whatever the umask;
 * a directory others can write to, or another user's, is refused with
 * what to do about it.
 */
static void test_permissions(void)
{
    Env e;
    Vm a;
    struct stat st;
    g_autofree char *dir = NULL, *sock = NULL, *lock = NULL, *file = NULL;
    static const mode_t bad[] = { 0777, 0770, 0730, 0702, 01777 };
    mode_t old;

    env_init(&e);
    dir = g_build_filename(e.dir, "rdv", NULL);
    old = umask(0);
    vm_init(&a, dir, 1);
    umask(old);
    g_assert_cmpint(stat(dir, &st), ==, 0);
    g_assert_cmpint(st.st_mode & 07777, ==, 0700);
    sock = only_sock(dir);
    g_assert_cmpint(stat(sock, &st), ==, 0);
    g_assert_true(S_ISSOCK(st.st_mode));
    g_assert_cmpint(st.st_mode & 07777, ==, 0600);
    lock = g_build_filename(dir, ".lock", NULL);
    g_assert_cmpint(stat(lock, &st), ==, 0);
    g_assert_cmpint(st.st_mode & 07777, ==, 0600);
    vm_fini(&a);

    /* group- or world-writable: refused, saying so and what to run */
    for (unsigned i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *mode = g_strdup_printf("(mode %04o)", bad[i]);
        g_autofree char *fix = g_strdup_printf("chmod 0700 %s", dir);

        g_assert_cmpint(chmod(dir, bad[i]), ==, 0);
        expect_refused(dir, "is writable by its group or by others", mode);
        expect_refused(dir, fix, NULL);
    }
    /* readable and searchable by others is fine: the socket is 0600 */
    g_assert_cmpint(chmod(dir, 0755), ==, 0);
    {
        Vm v;

        g_assert_null(try_join(&v, dir));
    }
    g_assert_cmpint(chmod(dir, 0700), ==, 0);

    /* not a directory */
    file = g_build_filename(e.dir, "plain", NULL);
    g_assert_true(g_file_set_contents(file, "x", 1, NULL));
    expect_refused(file, "is not a directory", NULL);
    unlink(file);

    /* a lock file that is a symlink is not followed */
    g_assert_cmpint(unlink(lock), ==, 0);
    g_assert_cmpint(symlink(file, lock), ==, 0);
    expect_refused(dir, "cannot lock rendezvous directory", NULL);
    g_assert_false(g_file_test(file, G_FILE_TEST_EXISTS));
    unlink(lock);
    env_fini(&e);
}

/*
 * Another user's directory, or lock file, is refused (root is needed to
 * set that up: a counted skip elsewhere; CI runs as root).
 */
static void test_other_users_dir(void)
{
    Env e;
    Vm a;
    g_autofree char *dir = NULL, *lock = NULL;

    if (geteuid() != 0) {
        g_test_skip("needs root to make another user's directory");
        return;
    }
    env_init(&e);
    dir = g_build_filename(e.dir, "rdv", NULL);
    vm_init(&a, dir, 1);
    vm_fini(&a);
    lock = g_build_filename(dir, ".lock", NULL);
    g_assert_cmpint(chown(dir, 65534, 65534), ==, 0);
    expect_refused(dir, "belongs to uid 65534, not to this QEMU's uid 0",
                   "use a directory of this user's");
    g_assert_cmpint(chown(dir, 0, 0), ==, 0);
    g_assert_cmpint(chown(lock, 65534, 65534), ==, 0);
    expect_refused(dir, "lock file", "belongs to uid 65534");
    g_assert_cmpint(chown(lock, 0, 0), ==, 0);
    env_fini(&e);
}

/*
 * A process of another user reaches a socket (the directory was opened up
 * by hand): it is refused, in both directions, before anything is sent.
 */
static void test_foreign_uid(void)
{
    Env e;
    Vm a, b;
    g_autofree char *pa = NULL, *dir2 = NULL, *fsock = NULL;
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    uint8_t buf[256];
    int fd, lfd, cfd;

    if (geteuid() != 0) {
        g_test_skip("needs root to act as another user");
        return;
    }
    env_init(&e);
    log_start();
    vm_init(&a, e.dir, 1);
    vm_up(&a);
    pa = vm_sock(&a);

    /* uid 65534 connects to a (directory and socket opened up by hand) */
    g_assert_cmpint(chmod(e.dir, 0711), ==, 0);
    g_assert_cmpint(chmod(pa, 0666), ==, 0);
    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    strcpy(sa.sun_path, pa);
    g_assert_cmpint(setresuid(-1, 65534, -1), ==, 0);
    g_assert_cmpint(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    g_assert_cmpint(setresuid(-1, 0, -1), ==, 0);
    PUMP(&a);
    g_assert_cmpint(recv(fd, buf, sizeof(buf), MSG_DONTWAIT), ==, 0);
    close(fd);
    g_assert_cmpuint(fh_watch_count(&a.d.h), ==, 1);
    log_expect("runs as uid 65534, not as this QEMU's uid 0: refused", pa);
    g_assert_cmpint(chmod(e.dir, 0700), ==, 0);

    /* b joins a directory where uid 65534 listens: b hangs up on it */
    dir2 = g_build_filename(e.dir, "two", NULL);
    g_assert_cmpint(mkdir(dir2, 0777), ==, 0);
    g_assert_cmpint(chmod(dir2, 0777), ==, 0);
    g_assert_cmpint(chmod(e.dir, 0711), ==, 0);
    fsock = g_build_filename(dir2, "00000000000000aa.sock", NULL);
    strcpy(sa.sun_path, fsock);
    lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    g_assert_cmpint(setresuid(-1, 65534, -1), ==, 0);
    g_assert_cmpint(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    g_assert_cmpint(listen(lfd, 4), ==, 0);
    g_assert_cmpint(setresuid(-1, 0, -1), ==, 0);
    g_assert_cmpint(chmod(dir2, 0700), ==, 0);
    g_assert_cmpint(chmod(e.dir, 0700), ==, 0);
    vm_init(&b, dir2, 2);
    vm_up(&b);
    PUMP(&b);
    cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    g_assert_cmpint(cfd, >=, 0);
    g_assert_cmpint(recv(cfd, buf, sizeof(buf), MSG_DONTWAIT), ==, 0);
    close(cfd);
    close(lfd);
    g_assert_cmpuint(peers(&b), ==, 0);
    g_assert_cmpuint(fh_watch_count(&b.d.h), ==, 1);
    log_expect("runs as uid 65534, not as this QEMU's uid 0: refused",
               fsock);
    g_assert_cmpint(unlink(fsock), ==, 0);
    log_stop();
    vm_fini(&b);
    vm_fini(&a);
    env_fini(&e);
}

/*
 * Both devices with a host HCA as object owner too (ibdev + rendezvous):
 * the guests see the host's QP numbers (not the handles) and keys (lkey !=
 * rkey), the QPs still take the co-resident transport, and SEND, WRITE by
 * the host rkey and READ complete on both sides with the data compared; the
 * host devices get no work request.
 */
static void test_with_owner(void)
{
    X x;
    FakeHca ha, hb;
    Side *sa = &x.sa, *sb = &x.sb;
    uint8_t data[3000], got[3000];
    struct pvrdma_sge g, r;
    struct pvrdma_cqe e;

    env_init(&x.e);
    vm_init(&x.a, x.e.dir, 1);
    vm_init(&x.b, x.e.dir, 2);
    fake_hca_init(&ha, &x.a.d.c);
    fake_hca_init(&hb, &x.b.d.c);
    vm_up(&x.a);
    vm_up(&x.b);
    PUMP(&x.a, &x.b);
    side_init(sa, &x.a, PVRDMA_QPT_RC);
    side_init(sb, &x.b, PVRDMA_QPT_RC);
    g_assert_cmphex(sa->qp.qpn, ==, 0x300 + sa->qp.handle);
    g_assert_cmphex(sb->mr.rkey, ==, 0x2000 + sb->mr.handle);
    rc_connect(sa, sb, 7);
    PUMP(&x.a, &x.b);
    g_assert_cmpstr(pvrdma_qp_get(&x.a.d.c, sa->qp.handle)->tp->ops->name,
                    ==, "coresident");

    fill_pattern(data, sizeof(data), 21);
    mr_write(&x.a.d, &sa->mr, S_IOVA, data, sizeof(data));
    g = mr_sge(sa, 0, sizeof(data));
    r = mr_sge(sb, 4 * FH_PAGE, sizeof(got));
    post_recv(&x.b.d, &sb->qp, 0xb1, &r, 1);
    send_wqe(sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, sizeof(data));
    g_assert_true(poll_cq(&x.b.d, &sb->cq, &e));
    g_assert_cmphex(e.wr_id, ==, 0xb1);
    g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
    g_assert_cmpuint(e.qp, ==, sb->qp.handle);
    g_assert_cmphex(e.src_qp, ==, sa->qp.qpn);
    mr_read(&x.b.d, &sb->mr, S_IOVA + 4 * FH_PAGE, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));

    /* WRITE by the host rkey, then READ it back into another place */
    rdma_wqe(sa, 0xa2, PVRDMA_WR_RDMA_WRITE, &g, 1, S_IOVA + 8 * FH_PAGE,
             sb->mr.rkey, 0);
    g = mr_sge(sa, 4 * FH_PAGE, sizeof(data));
    rdma_wqe(sa, 0xa3, PVRDMA_WR_RDMA_READ, &g, 1, S_IOVA + 8 * FH_PAGE,
             sb->mr.rkey, 0);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa2, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE,
                    sizeof(data));
    side_expect_cqe(sa, 0xa3, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_READ,
                    sizeof(data));
    mr_read(&x.a.d, &sa->mr, S_IOVA + 4 * FH_PAGE, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));
    g_assert_cmpuint(ha.posted->len, ==, 0);
    g_assert_cmpuint(hb.posted->len, ==, 0);
    x_fini(&x);
    g_assert_cmpint(ha.twins, ==, 0);
    g_assert_cmpint(hb.twins, ==, 0);
    fake_hca_fini(&ha);
    fake_hca_fini(&hb);
}

void cr_add_trust_tests(void)
{
    g_test_add_func("/pvrdma/cr/features/fake", test_features_fake);
    g_test_add_func("/pvrdma/cr/given-peers", test_given_peers);
    g_test_add_func("/pvrdma/cr/with-owner", test_with_owner);
    g_test_add_func("/pvrdma/cr/auth/same-secret", test_auth_same_secret);
    g_test_add_func("/pvrdma/cr/auth/wrong-secret", test_auth_wrong_secret);
    g_test_add_func("/pvrdma/cr/auth/one-sided", test_auth_one_sided);
    g_test_add_func("/pvrdma/cr/auth/fake-peer/accepted",
                    test_auth_fake_accepted);
    g_test_add_func("/pvrdma/cr/auth/fake-peer/refused",
                    test_auth_fake_refused);
    g_test_add_func("/pvrdma/cr/auth/fake-peer/hello", test_auth_fake_hello);
    g_test_add_func("/pvrdma/cr/auth/fake-peer/unauthenticated",
                    test_auth_fake_unauthenticated);
    g_test_add_func("/pvrdma/cr/gid-claims", test_gid_claims);
    g_test_add_func("/pvrdma/cr/permissions", test_permissions);
    g_test_add_func("/pvrdma/cr/other-users-dir", test_other_users_dir);
    g_test_add_func("/pvrdma/cr/foreign-uid", test_foreign_uid);
}
