/*
 * Tests of the co-resident transport: rings under pressure and malformed
 * input: backlog, a peer that does not read, malformed rings and messages.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "coresident/cr.h"

/*
 * A peer that sends requests and never takes the answers (its ring full,
 * its socket full) is dropped once CR_MAX_QUEUED bytes wait for it (4 MiB
 * in this build), not queued for without end.
 */
static void test_peer_not_reading(void)
{
    const unsigned batch = 5000, max = 1000000;
    Env e;
    Vm a;
    Fake f;
    char *path;
    unsigned i;

    path = ring_peer_up(&e, &a, &f);
    g_assert_null(fh_host_log);
    fh_host_log = g_string_new(NULL);
    for (i = 1; i <= max && peers(&a); i++) {
        CrReqMsg *m = req_msg(i, PVRDMA_WR_RDMA_WRITE, 0xabcd, NULL, 0, 0, 0);

        /* its own ring full: the fake waits until a took some */
        while (f.rprod + 8 + ROUND_UP(m->h.len, 8) -
               __atomic_load_n(&fake_idx(&f, 0)->cons, __ATOMIC_SEQ_CST) >
               CR_RING_SIZE) {
            PUMP(&a);
            if (!peers(&a)) {
                break;
            }
        }
        if (peers(&a)) {
            fake_send(&f, m, m->h.len, -1);
        }
        g_free(m);
        if (i % batch == 0) {
            PUMP(&a);
        }
    }
    /* dropped, after more answers than the ring and the bound hold */
    g_assert_cmpuint(peers(&a), ==, 0);
    g_assert_true(fake_dropped(&f));
    g_assert_cmpuint((uint64_t)i * sizeof(CrRespMsg), >,
                     CR_RING_SIZE + CR_MAX_QUEUED);
    g_assert_nonnull(strstr(fh_host_log->str,
                            "does not take its messages"));
    g_string_free(fh_host_log, true);
    fh_host_log = NULL;
    fake_close(&f);
    g_free(path);
    vm_fini(&a);
    env_fini(&e);
}

static void ring_bad(Vm *a, const char *path, int kind)
{
    static const char *const what[RB_N] = {
        "RING_ON first", "RING twice", "RING_ON in the ring", "prod past",
        "prod odd", "record of 0", "record too long", "record too big",
        "bad message", "cons past",
    };
    unsigned watches = fh_watch_count(&a->d.h);
    CrHdr on = { CR_RING_ON, sizeof(on) }, w = { CR_WAKE, sizeof(w) };
    CrRingMsg rm = { .h = { CR_RING, sizeof(rm) }, .ring_size = CR_RING_SIZE };
    CrRespMsg resp = { { CR_RESP, sizeof(resp) }, 0x999 };
    uint8_t gid[16], junk[64] = { 0 };
    CrReqMsg *m;
    Fake f;

    make_gid(gid, 10, 0xfb);
    fake_connect(&f, a, path);
    fake_ready(&f, gid);
    PUMP(a);
    g_assert_cmpuint(peers(a), ==, 1);
    if (kind == RB_ON_FIRST) {
        fake_send(&f, &on, sizeof(on), -1);
    } else {
        g_assert_true(fake_ring_on(&f, true));
        PUMP(a);
        g_assert_false(fake_dropped(&f));
    }
    switch (kind) {
    case RB_RING_TWICE:
        fake_send(&f, &rm, sizeof(rm), f.memfd);    /* on the socket */
        break;
    case RB_ON_IN_RING:
        fake_send(&f, &on, sizeof(on), -1);
        break;
    case RB_PROD_PAST:
    case RB_PROD_ODD:
        fake_idx(&f, 0)->prod = kind == RB_PROD_ODD ? 12 :
                                CR_RING_SIZE + 8;
        g_assert_cmpint(fh_sendmsg(f.fd, &w, sizeof(w), -1, MSG_NOSIGNAL),
                        ==, sizeof(w));
        break;
    case RB_REC_ZERO:
        fake_ring_put(&f, junk, 8, 0);
        break;
    case RB_REC_LONG:
        fake_ring_put(&f, junk, 8, 1000);
        break;
    case RB_REC_HUGE:
        fake_ring_put(&f, junk, 8, CR_MAX_MSG + 8);
        break;
    case RB_MSG_BAD:
        resp.h.len = 9;     /* a RESP of 9 bytes */
        fake_send(&f, &resp, sizeof(resp), -1);
        break;
    case RB_CONS_PAST:
        /* the device answers a request: its put finds the index wrong */
        fake_idx(&f, 1)->cons = 64;
        m = req_msg(0x1, PVRDMA_WR_RDMA_WRITE, 0xabcd, NULL, 0, 0, 0);
        fake_send(&f, m, m->h.len, -1);
        g_free(m);
        break;
    }
    PUMP(a);
    if (!fake_dropped(&f)) {
        g_test_message("%s: the peer was not dropped", what[kind]);
        g_test_fail();
    }
    g_assert_cmpuint(peers(a), ==, 0);
    g_assert_cmpuint(fh_watch_count(&a->d.h), ==, watches);
    g_assert_false(reaches(a, gid));
    fake_close(&f);
}

/*
 * A peer whose rings do not add up is dropped, as one whose messages do
 * not; one whose ring memory is not sealed stays on the socket.
 */
static void test_ring_malformed(void)
{
    Env e;
    Vm a;
    Fake f;
    char *path;
    uint8_t gid[16];
    CrReqMsg *m;

    env_init(&e);
    vm_init(&a, e.dir, 1);
    vm_up(&a);
    path = only_sock(e.dir);
    for (int kind = 0; kind < RB_N; kind++) {
        ring_bad(&a, path, kind);
    }

    /* unsealed: a peer could shrink it under us; RING refused, no harm */
    make_gid(gid, 10, 0xfb);
    fake_connect(&f, &a, path);
    fake_ready(&f, gid);
    PUMP(&a);
    g_assert_false(fake_ring_on(&f, false));
    m = req_msg(0x2, PVRDMA_WR_RDMA_WRITE, 0xabcd, NULL, 0, 0, 0);
    fake_send(&f, m, m->h.len, -1);
    g_free(m);
    PUMP(&a);
    g_assert_cmpint(fake_resp(&f, 0x2), ==, PVRDMA_TRANSPORT_NO_RESPONDER);
    g_assert_cmpuint(peers(&a), ==, 1);
    fake_close(&f);
    PUMP(&a);
    g_assert_cmpuint(peers(&a), ==, 0);

    g_free(path);
    vm_fini(&a);
    env_fini(&e);
}

static CrHello hello_msg(void)
{
    return (CrHello) {
        .h = { CR_HELLO, sizeof(CrHello) },
        .magic = CR_MAGIC,
        .version = CR_VERSION,
        .node = FAKE_NODE,
        .nregions = 1,
        .features = CR_F_ALL,
    };
}

static CrRegionMsg region_msg(uint32_t index, uint64_t size, uint64_t off)
{
    return (CrRegionMsg) {
        .h = { CR_REGION, sizeof(CrRegionMsg) },
        .index = index,
        .size = size,
        .fd_offset = off,
    };
}

/*
 * Malformed messages to b from fake peers on b's socket (a and b are
 * peers): b drops each such peer, only it, and stays healthy.  The cases
 * are tables: a good message and rows that change one or two of its
 * fields, the stage of the handshake the fake reaches first, the bytes
 * sent and whether a file descriptor comes along.
 */
typedef struct Mal {
    X x;
    char *path;                 /* b's socket */
    int memfd;                  /* sealed: REGION cases fail for their own reason */
    uint32_t qpn;               /* b's QP */
} Mal;

typedef struct BadMsg {
    const char *what;
    int hs;                     /* HS_NONE, HS_HELLO, HS_READY */
    TField f[2];
    size_t len;                 /* bytes sent (0: the good message's) */
    bool fd;                    /* the fixture's memfd comes along */
} BadMsg;

#define MSG_FIELD(type, member, v) TFIELD(type, member, v)

static void mal_setup(Mal *m)
{
    struct sockaddr_un sa;
    socklen_t sl = sizeof(sa);
    int lfd = -1;

    x_setup(&m->x, 7);
    /* b's listening socket is the watch that accepts connections */
    for (guint i = 0; i < m->x.b.d.h.watches->len; i++) {
        int fd = g_array_index(m->x.b.d.h.watches, FhWatch, i).fd;
        int listening = 0;
        socklen_t ol = sizeof(listening);

        g_assert_cmpint(getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN,
                                   &listening, &ol), ==, 0);
        if (listening) {
            lfd = fd;
        }
    }
    g_assert_cmpint(lfd, >=, 0);
    g_assert_cmpint(getsockname(lfd, (struct sockaddr *)&sa, &sl), ==, 0);
    m->path = g_strdup(sa.sun_path);
    g_assert_true(g_str_has_prefix(m->path, m->x.e.dir));
    m->qpn = m->x.sb.qp.qpn;
    m->memfd = memfd_create("bad-region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    g_assert_cmpint(ftruncate(m->memfd, FAKE_RAM), ==, 0);
    g_assert_cmpint(fcntl(m->memfd, F_ADD_SEALS,
                          F_SEAL_SHRINK | F_SEAL_GROW), ==, 0);
}

/* After all that, a and b still talk; then everything goes. */
static void mal_fini(Mal *m)
{
    X *x = &m->x;
    struct pvrdma_sge g = mr_sge(&x->sa, 0, 64), rr = mr_sge(&x->sb, 0, 64);
    uint8_t data[64], got[64];

    g_assert_cmpuint(peers(&x->a), ==, 1);
    g_assert_cmpuint(peers(&x->b), ==, 1);
    fill_pattern(data, sizeof(data), 10);
    mr_write(&x->a.d, &x->sa.mr, S_IOVA, data, sizeof(data));
    post_recv(&x->b.d, &x->sb.qp, 0xb1, &rr, 1);
    send_wqe(&x->sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x->a, &x->b);
    side_expect_cqe(&x->sa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 64);
    side_expect_cqe(&x->sb, 0xb1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 64);
    mr_read(&x->b.d, &x->sb.mr, S_IOVA, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));
    g_assert_cmpuint(qp_state(&x->sb), ==, PVRDMA_QPS_RTS);
    close(m->memfd);
    g_free(m->path);
    x_fini(x);
}

static void bad_messages(Mal *m, const void *good, size_t size,
                         const BadMsg *rows, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        g_autofree uint8_t *msg = g_memdup2(good, size);

        tfields_apply(msg, rows[i].f, G_N_ELEMENTS(rows[i].f));
        bad_message(&m->x.b, m->path, rows[i].hs, msg,
                    rows[i].len ? rows[i].len : size,
                    rows[i].fd ? m->memfd : -1, rows[i].what);
    }
}

/* HELLO, and framing: lengths, types, sizes */
static void test_malformed_hello(void)
{
    const CrHello h = hello_msg();
    const BadMsg rows[] = {
        { "HELLO bad magic", HS_NONE,
          { MSG_FIELD(CrHello, magic, CR_MAGIC ^ 1) } },
        { "HELLO version", HS_NONE,
          { MSG_FIELD(CrHello, version, CR_VERSION + 1) } },
        { "HELLO 33 regions", HS_NONE, { MSG_FIELD(CrHello, nregions, 33) } },
        { "HELLO short", HS_NONE,
          { MSG_FIELD(CrHello, h.len, sizeof(CrHello) - 8) },
          sizeof(CrHello) - 8 },
        { "second HELLO", HS_READY },
        { "HELLO with fd", HS_NONE, .fd = true },
        { "4-byte message", HS_NONE, .len = 4 },
        { "header length", HS_NONE,
          { MSG_FIELD(CrHello, h.len, sizeof(CrHello) + 8) } },
        { "unknown type", HS_READY, { MSG_FIELD(CrHello, h.type, 99) } },
        { "type 0", HS_READY, { MSG_FIELD(CrHello, h.type, 0) } },
    };
    g_autofree uint8_t *big = g_malloc0(CR_MAX_MSG + 4096);
    Mal m;

    mal_setup(&m);
    bad_messages(&m, &h, sizeof(h), rows, G_N_ELEMENTS(rows));
    ((CrHdr *)big)->type = CR_GIDS;
    ((CrHdr *)big)->len = CR_MAX_MSG + 4096;
    bad_message(&m.x.b, m.path, HS_READY, big, CR_MAX_MSG + 4096, -1,
                "message larger than 64 KiB");
    mal_fini(&m);
}

/* REGION: what its file must be, and one descriptor exactly */
static void test_malformed_region(void)
{
    const CrRegionMsg r = region_msg(0, FAKE_RAM, 0);
    const BadMsg rows[] = {
        { "REGION first", HS_NONE, .fd = true },
        { "REGION no fd", HS_HELLO },
        { "REGION index", HS_HELLO, { MSG_FIELD(CrRegionMsg, index, 1) },
          .fd = true },
        { "REGION larger than its file", HS_HELLO,
          { MSG_FIELD(CrRegionMsg, size, FAKE_RAM + 4096) }, .fd = true },
        { "REGION past the end of its file", HS_HELLO,
          { MSG_FIELD(CrRegionMsg, size, 4096),
            MSG_FIELD(CrRegionMsg, fd_offset, FAKE_RAM) }, .fd = true },
        { "REGION unaligned offset", HS_HELLO,
          { MSG_FIELD(CrRegionMsg, size, 4096),
            MSG_FIELD(CrRegionMsg, fd_offset, 100) }, .fd = true },
        { "REGION empty", HS_HELLO, { MSG_FIELD(CrRegionMsg, size, 0) },
          .fd = true },
        { "REGION offset + size wraps", HS_HELLO,
          { MSG_FIELD(CrRegionMsg, size, 4096),
            MSG_FIELD(CrRegionMsg, fd_offset, UINT64_MAX - 4095) },
          .fd = true },
        { "REGION twice", HS_READY, .fd = true },
    };
    int loose, pipefd[2];
    Mal m;

    mal_setup(&m);
    bad_messages(&m, &r, sizeof(r), rows, G_N_ELEMENTS(rows));
    /* RAM that can shrink: truncated later, it would crash us */
    loose = memfd_create("loose-region", MFD_CLOEXEC);
    g_assert_cmpint(ftruncate(loose, FAKE_RAM), ==, 0);
    bad_message(&m.x.b, m.path, HS_HELLO, &r, sizeof(r), loose,
                "REGION not sealed against shrinking");
    close(loose);
    g_assert_cmpint(pipe2(pipefd, O_CLOEXEC), ==, 0);
    bad_message(&m.x.b, m.path, HS_HELLO, &r, sizeof(r), pipefd[0],
                "REGION of a pipe");
    close(pipefd[0]);
    close(pipefd[1]);
    /* two fds on one message: dropped, and b's copy of neither kept */
    {
        Fake f;
        union {
            char buf[CMSG_SPACE(2 * sizeof(int))];
            struct cmsghdr align;
        } u = { { 0 } };
        struct iovec iov = { (void *)&r, sizeof(r) };
        struct msghdr mh = {
            .msg_iov = &iov, .msg_iovlen = 1,
            .msg_control = u.buf, .msg_controllen = sizeof(u.buf),
        };
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        int two[2] = { m.memfd, m.memfd };
        unsigned fds;

        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(two));
        memcpy(CMSG_DATA(cm), two, sizeof(two));
        fake_connect(&f, &m.x.b, m.path);
        fake_hello(&f, 1);
        PUMP(&m.x.b);
        fds = fh_open_fds();
        g_assert_cmpint(sendmsg(f.fd, &mh, 0), ==, sizeof(r));
        PUMP(&m.x.b);
        g_assert_true(fake_dropped(&f));
        g_assert_cmpuint(fh_open_fds(), ==, fds - 1);   /* b's end closed */
        fake_close(&f);
    }
    mal_fini(&m);
}

/* GIDS: count and length */
static void test_malformed_gids(void)
{
    struct {
        CrGids m;
        CrGid g[4];
    } gm = { { { CR_GIDS, sizeof(gm) }, 3 } };
    const size_t four = sizeof(CrGids) + 4 * sizeof(CrGid);
    const size_t one = sizeof(CrGids) + sizeof(CrGid);
    const BadMsg rows[] = {
        { "GIDS count and length disagree", HS_READY },
        { "GIDS count too large", HS_READY,
          { MSG_FIELD(CrGids, n, 0x10000001), MSG_FIELD(CrGids, h.len, four) },
          four },
        { "GIDS before HELLO", HS_NONE,
          { MSG_FIELD(CrGids, n, 1), MSG_FIELD(CrGids, h.len, one) }, one },
    };
    Mal m;

    mal_setup(&m);
    bad_messages(&m, &gm, sizeof(gm), rows, G_N_ELEMENTS(rows));
    mal_fini(&m);
}

/* REQ: its scatter list against the sender's RAM, its counts and lengths */
static void test_malformed_req(void)
{
    const CrSge sg[2] = {
        { .region = 0, .off = 0, .len = 100 },
        { .region = 0, .off = 4096, .len = 100 },
    };
    Mal m;
    g_autofree CrReqMsg *one = NULL, *two = NULL, *none = NULL;

    mal_setup(&m);
    one = req_msg(1, PVRDMA_WR_SEND, m.qpn, sg, 1, 1, 100);
    two = req_msg(1, PVRDMA_WR_SEND, m.qpn, sg, 2, 2, 200);
    none = req_msg(1, PVRDMA_WR_SEND, m.qpn, sg, 0, 0, 0);
    {
        const BadMsg rows[] = {
            { "REQ before the peer's RAM is known", HS_HELLO },
            { "REQ with fd", HS_READY, .fd = true },
            { "REQ region 1 of 1", HS_READY,
              { MSG_FIELD(CrReqMsg, sg[0].region, 1) } },
            { "REQ region 2^31", HS_READY,
              { MSG_FIELD(CrReqMsg, sg[0].region, 0x80000000) } },
            { "REQ past the end", HS_READY,
              { MSG_FIELD(CrReqMsg, sg[0].off, FAKE_RAM - 50) } },
            { "REQ offset+len wraps", HS_READY,
              { MSG_FIELD(CrReqMsg, sg[0].off, UINT64_MAX - 49) } },
            { "REQ empty sge", HS_READY,
              { MSG_FIELD(CrReqMsg, sg[0].len, 0),
                MSG_FIELD(CrReqMsg, len, 0) } },
        };

        bad_messages(&m, one, one->h.len, rows, G_N_ELEMENTS(rows));
    }
    {
        const size_t short1 = two->h.len - sizeof(CrSge);
        const BadMsg rows[] = {
            { "REQ nsg says 2, carries 1", HS_READY,
              { MSG_FIELD(CrReqMsg, h.len, short1) }, short1 },
            { "REQ nsg > nsg_total", HS_READY,
              { MSG_FIELD(CrReqMsg, nsg_total, 1) } },
            { "REQ lengths exceed len", HS_READY,
              { MSG_FIELD(CrReqMsg, len, 150) } },
            { "REQ lengths short of len", HS_READY,
              { MSG_FIELD(CrReqMsg, len, 300) } },
            { "REQ len 4 GiB", HS_READY,
              { MSG_FIELD(CrReqMsg, len, 1ull << 32) } },
            { "REQ nsg_total 2^32-1", HS_READY,
              { MSG_FIELD(CrReqMsg, nsg_total, 0xffffffff) } },
            { "REQ nsg 2^32-1", HS_READY,
              { MSG_FIELD(CrReqMsg, nsg, 0xffffffff) } },
        };

        bad_messages(&m, two, two->h.len, rows, G_N_ELEMENTS(rows));
    }
    {
        const BadMsg rows[] = {
            { "REQ too short", HS_READY,
              { MSG_FIELD(CrReqMsg, h.len, sizeof(CrReqMsg) - 8) },
              sizeof(CrReqMsg) - 8 },
        };

        bad_messages(&m, none, none->h.len, rows, 1);
    }
    mal_fini(&m);
}

/*
 * MORE: without its REQ; after a REQ announcing 2 entries and carrying 1,
 * a MORE of another request, one entry too many (the lengths still add
 * up: only the count catches it), a REQ before it, a count that is not
 * its length.
 */
static void test_malformed_more(void)
{
    const CrSge sg[2] = {
        { .region = 0, .off = 0, .len = 100 },
        { .region = 0, .off = 4096, .len = 100 },
    };
    struct {
        CrMoreMsg m;
        CrSge s[2];
    } mm = { { { CR_MORE, sizeof(CrMoreMsg) + sizeof(CrSge) }, 5, 1 },
             { sg[1], sg[1] } };
    g_autofree CrReqMsg *req = NULL;
    uint8_t gid[16];
    Mal m;

    mal_setup(&m);
    bad_message(&m.x.b, m.path, HS_READY, &mm, mm.m.h.len, -1,
                "MORE without REQ");
    req = req_msg(5, PVRDMA_WR_SEND, m.qpn, sg, 1, 2, 300);
    make_gid(gid, 10, 0xfb);
    for (int i = 0; i < 4; i++) {
        Fake f;

        fake_connect(&f, &m.x.b, m.path);
        fake_ready(&f, gid);
        fake_send(&f, req, req->h.len, -1);
        PUMP(&m.x.b);
        g_assert_false(fake_dropped(&f));
        g_assert_cmpuint(peers(&m.x.b), ==, 2);
        mm.m.cookie = 5;
        mm.m.nsg = 1;
        mm.m.h.len = sizeof(CrMoreMsg) + sizeof(CrSge);
        if (i == 0) {
            mm.m.cookie = 6;                    /* another request's */
        } else if (i == 1) {
            mm.m.nsg = 2;                       /* one more than announced */
            mm.m.h.len += sizeof(CrSge);
        } else if (i == 2) {
            fake_send(&f, req, req->h.len, -1); /* a REQ before the MORE */
            mm.m.h.type = 0;
        } else {
            mm.m.nsg = 0;                       /* count and length differ */
        }
        if (mm.m.h.type) {
            fake_send(&f, &mm, mm.m.h.len, -1);
        }
        mm.m.h.type = CR_MORE;
        PUMP(&m.x.b);
        g_assert_true(fake_dropped(&f));
        g_assert_cmpuint(peers(&m.x.b), ==, 1);
        fake_close(&f);
    }
    mal_fini(&m);
}

/*
 * RESP: for a cookie never sent, short, with a descriptor, and for
 * another peer's request (dropped, the request unharmed); CANCEL short or
 * before HELLO.
 */
static void test_malformed_resp(void)
{
    const CrRespMsg resp = { { CR_RESP, sizeof(resp) }, 0x999 };
    const CrCancelMsg c = { { CR_CANCEL, sizeof(c) }, 1 };
    const BadMsg resps[] = {
        { "RESP for a cookie never sent", HS_READY },
        { "RESP short", HS_READY,
          { MSG_FIELD(CrRespMsg, h.len, sizeof(CrRespMsg) - 4) },
          sizeof(CrRespMsg) - 4 },
        { "RESP with fd", HS_READY, .fd = true },
    };
    const BadMsg cancels[] = {
        { "CANCEL short", HS_READY,
          { MSG_FIELD(CrCancelMsg, h.len, sizeof(CrCancelMsg) - 4) },
          sizeof(CrCancelMsg) - 4 },
        { "CANCEL before HELLO", HS_NONE },
    };
    CrRespMsg spoof = { { CR_RESP, sizeof(spoof) } };
    Mal m;
    X *x = &m.x;
    struct pvrdma_sge g, rr;
    uint8_t gid[16];
    Fake f;

    mal_setup(&m);
    bad_messages(&m, &resp, sizeof(resp), resps, G_N_ELEMENTS(resps));
    bad_messages(&m, &c, sizeof(c), cancels, G_N_ELEMENTS(cancels));

    g = mr_sge(&x->sb, 0, 64);
    rr = mr_sge(&x->sa, 0, 64);
    send_wqe(&x->sb, 0xb7, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x->a, &x->b);         /* waits at a for a receive */
    expect_cq_empty(&x->b.d, &x->sb.cq);
    make_gid(gid, 10, 0xfc);
    fake_connect(&f, &x->b, m.path);
    fake_ready(&f, gid);
    PUMP(&x->b);
    g_assert_cmpuint(peers(&x->b), ==, 2);
    spoof.cookie = x->b.d.c.next_cookie;    /* b's request at a */
    spoof.status = PVRDMA_WC_SUCCESS;
    fake_send(&f, &spoof, sizeof(spoof), -1);
    PUMP(&x->b);
    g_assert_true(fake_dropped(&f));
    g_assert_cmpuint(peers(&x->b), ==, 1);
    expect_cq_empty(&x->b.d, &x->sb.cq);
    fake_close(&f);
    post_recv(&x->a.d, &x->sa.qp, 0xa7, &rr, 1);
    PUMP(&x->a, &x->b);
    side_expect_cqe(&x->sb, 0xb7, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 64);
    side_expect_cqe(&x->sa, 0xa7, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 64);
    mal_fini(&m);
}

void cr_add_rings_tests(void)
{
    g_test_add_func("/pvrdma/cr/ring-malformed", test_ring_malformed);
    g_test_add_func("/pvrdma/cr/peer-not-reading", test_peer_not_reading);
    g_test_add_func("/pvrdma/cr/malformed/hello", test_malformed_hello);
    g_test_add_func("/pvrdma/cr/malformed/region", test_malformed_region);
    g_test_add_func("/pvrdma/cr/malformed/gids", test_malformed_gids);
    g_test_add_func("/pvrdma/cr/malformed/req", test_malformed_req);
    g_test_add_func("/pvrdma/cr/malformed/more", test_malformed_more);
    g_test_add_func("/pvrdma/cr/malformed/resp", test_malformed_resp);
}
