/*
 * Tests of the co-resident transport: rings under pressure and malformed
 * input: backlog, a peer that does not read, malformed rings and messages.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#define _GNU_SOURCE     /* memfd_create */
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
    g_assert_null(pvrdma_standalone_host_log);
    pvrdma_standalone_host_log = g_string_new(NULL);
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
    g_assert_nonnull(strstr(pvrdma_standalone_host_log->str,
                            "does not take its messages"));
    g_string_free(pvrdma_standalone_host_log, true);
    pvrdma_standalone_host_log = NULL;
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

/* Malformed messages: the device drops that peer and stays healthy. */
static void test_malformed(void)
{
    X x;
    char *path;
    CrHello h;
    CrRegionMsg r;
    CrRespMsg resp = { { CR_RESP, sizeof(resp) }, 0x999 };
    CrReqMsg *m;
    CrSge sg[2] = {
        { .region = 0, .off = 0, .len = 100 },
        { .region = 0, .off = 4096, .len = 100 },
    };
    uint32_t qpn;
    int memfd, pipefd[2];
    uint8_t *big;

    /* a and b are peers; the fake peers connect to b's socket */
    x_setup(&x, 7);
    {
        struct sockaddr_un sa;
        socklen_t sl = sizeof(sa);
        int lfd = -1;

        /* b's listening socket is the watch that accepts connections */
        for (guint i = 0; i < x.b.d.h.watches->len; i++) {
            int fd = g_array_index(x.b.d.h.watches, FhWatch, i).fd;
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
        path = g_strdup(sa.sun_path);
        g_assert_true(g_str_has_prefix(path, x.e.dir));
    }
    qpn = x.sb.qp.qpn;

    /* HELLO */
    h = hello_msg();
    h.magic ^= 1;
    bad_message(&x.b, path, HS_NONE, &h, sizeof(h), -1, "HELLO bad magic");
    h = hello_msg();
    h.version = CR_VERSION + 1;
    bad_message(&x.b, path, HS_NONE, &h, sizeof(h), -1, "HELLO version");
    h = hello_msg();
    h.nregions = 33;
    bad_message(&x.b, path, HS_NONE, &h, sizeof(h), -1, "HELLO 33 regions");
    h = hello_msg();
    h.h.len = sizeof(h) - 8;
    bad_message(&x.b, path, HS_NONE, &h, sizeof(h) - 8, -1, "HELLO short");
    h = hello_msg();
    bad_message(&x.b, path, HS_READY, &h, sizeof(h), -1, "second HELLO");

    /* framing */
    bad_message(&x.b, path, HS_NONE, &h, 4, -1, "4-byte message");
    h = hello_msg();
    h.h.len = sizeof(h) + 8;
    bad_message(&x.b, path, HS_NONE, &h, sizeof(h), -1, "header length");
    h = hello_msg();
    h.h.type = 99;
    bad_message(&x.b, path, HS_READY, &h, sizeof(h), -1, "unknown type");
    h.h.type = 0;
    bad_message(&x.b, path, HS_READY, &h, sizeof(h), -1, "type 0");
    big = g_malloc0(CR_MAX_MSG + 4096);
    ((CrHdr *)big)->type = CR_GIDS;
    ((CrHdr *)big)->len = CR_MAX_MSG + 4096;
    bad_message(&x.b, path, HS_READY, big, CR_MAX_MSG + 4096, -1,
                "message larger than 64 KiB");
    g_free(big);

    /* REGION */
    memfd = memfd_create("bad-region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    g_assert_cmpint(ftruncate(memfd, FAKE_RAM), ==, 0);
    /* a memfd that cannot shrink: each case below fails for its reason */
    g_assert_cmpint(fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW),
                    ==, 0);
    r = region_msg(0, FAKE_RAM, 0);
    {
        /* RAM that can shrink: truncated later, it would crash us */
        int loose = memfd_create("loose-region", MFD_CLOEXEC);

        g_assert_cmpint(ftruncate(loose, FAKE_RAM), ==, 0);
        bad_message(&x.b, path, HS_HELLO, &r, sizeof(r), loose,
                    "REGION not sealed against shrinking");
        close(loose);
    }
    bad_message(&x.b, path, HS_NONE, &r, sizeof(r), memfd, "REGION first");
    bad_message(&x.b, path, HS_HELLO, &r, sizeof(r), -1, "REGION no fd");
    r = region_msg(1, FAKE_RAM, 0);
    bad_message(&x.b, path, HS_HELLO, &r, sizeof(r), memfd, "REGION index");
    r = region_msg(0, FAKE_RAM + 4096, 0);
    bad_message(&x.b, path, HS_HELLO, &r, sizeof(r), memfd,
                "REGION larger than its file");
    r = region_msg(0, 4096, FAKE_RAM);
    bad_message(&x.b, path, HS_HELLO, &r, sizeof(r), memfd,
                "REGION past the end of its file");
    r = region_msg(0, 4096, 100);
    bad_message(&x.b, path, HS_HELLO, &r, sizeof(r), memfd,
                "REGION unaligned offset");
    r = region_msg(0, 0, 0);
    bad_message(&x.b, path, HS_HELLO, &r, sizeof(r), memfd, "REGION empty");
    r = region_msg(0, 4096, UINT64_MAX - 4095);
    bad_message(&x.b, path, HS_HELLO, &r, sizeof(r), memfd,
                "REGION offset + size wraps");
    r = region_msg(0, FAKE_RAM, 0);
    bad_message(&x.b, path, HS_READY, &r, sizeof(r), memfd, "REGION twice");
    g_assert_cmpint(pipe2(pipefd, O_CLOEXEC), ==, 0);
    bad_message(&x.b, path, HS_HELLO, &r, sizeof(r), pipefd[0],
                "REGION of a pipe");
    close(pipefd[0]);
    close(pipefd[1]);
    /* two fds on one message */
    {
        Fake f;
        union {
            char buf[CMSG_SPACE(2 * sizeof(int))];
            struct cmsghdr align;
        } u = { { 0 } };
        struct iovec iov = { &r, sizeof(r) };
        struct msghdr mh = {
            .msg_iov = &iov, .msg_iovlen = 1,
            .msg_control = u.buf, .msg_controllen = sizeof(u.buf),
        };
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        int two[2] = { memfd, memfd };
        unsigned fds;

        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(two));
        memcpy(CMSG_DATA(cm), two, sizeof(two));
        fake_connect(&f, &x.b, path);
        fake_hello(&f, 1);
        PUMP(&x.b);
        fds = fh_open_fds();
        g_assert_cmpint(sendmsg(f.fd, &mh, 0), ==, sizeof(r));
        PUMP(&x.b);
        g_assert_true(fake_dropped(&f));
        g_assert_cmpuint(fh_open_fds(), ==, fds - 1);   /* b's end closed */
        fake_close(&f);
    }

    /* an fd on anything but REGION */
    h = hello_msg();
    bad_message(&x.b, path, HS_NONE, &h, sizeof(h), memfd, "HELLO with fd");
    resp.h.type = CR_RESP;
    bad_message(&x.b, path, HS_READY, &resp, sizeof(resp), memfd,
                "RESP with fd");
    m = req_msg(1, PVRDMA_WR_SEND, qpn, sg, 1, 1, 100);
    bad_message(&x.b, path, HS_READY, m, m->h.len, memfd, "REQ with fd");
    g_free(m);

    /* GIDS */
    {
        struct {
            CrGids m;
            CrGid g[4];
        } gm = { { { CR_GIDS, sizeof(gm) }, 3 } };

        bad_message(&x.b, path, HS_READY, &gm, sizeof(gm), -1,
                    "GIDS count and length disagree");
        gm.m.n = 0x10000001;
        gm.m.h.len = sizeof(CrGids) + 4 * sizeof(CrGid);
        bad_message(&x.b, path, HS_READY, &gm, sizeof(CrGids) +
                    4 * sizeof(CrGid), -1, "GIDS count too large");
        gm.m.n = 1;
        gm.m.h.len = sizeof(CrGids) + sizeof(CrGid);
        bad_message(&x.b, path, HS_NONE, &gm, gm.m.h.len, -1,
                    "GIDS before HELLO");
    }

    /* REQ */
    m = req_msg(1, PVRDMA_WR_SEND, qpn, sg, 1, 1, 100);
    bad_message(&x.b, path, HS_HELLO, m, m->h.len, -1,
                "REQ before the peer's RAM is known");
    m->sg[0].region = 1;
    bad_message(&x.b, path, HS_READY, m, m->h.len, -1, "REQ region 1 of 1");
    m->sg[0].region = 0x80000000;
    bad_message(&x.b, path, HS_READY, m, m->h.len, -1, "REQ region 2^31");
    m->sg[0].region = 0;
    m->sg[0].off = FAKE_RAM - 50;
    bad_message(&x.b, path, HS_READY, m, m->h.len, -1, "REQ past the end");
    m->sg[0].off = UINT64_MAX - 49;
    bad_message(&x.b, path, HS_READY, m, m->h.len, -1, "REQ offset+len wraps");
    m->sg[0].off = FAKE_RAM + 1;
    m->sg[0].len = 0;
    m->len = 0;
    bad_message(&x.b, path, HS_READY, m, m->h.len, -1, "REQ empty sge");
    g_free(m);
    m = req_msg(1, PVRDMA_WR_SEND, qpn, sg, 2, 2, 200);
    m->h.len -= sizeof(CrSge);
    bad_message(&x.b, path, HS_READY, m, m->h.len, -1,
                "REQ nsg says 2, carries 1");
    m->h.len += sizeof(CrSge);
    m->nsg_total = 1;
    bad_message(&x.b, path, HS_READY, m, m->h.len, -1, "REQ nsg > nsg_total");
    m->nsg_total = 2;
    m->len = 150;
    bad_message(&x.b, path, HS_READY, m, m->h.len, -1,
                "REQ lengths exceed len");
    m->len = 300;
    bad_message(&x.b, path, HS_READY, m, m->h.len, -1,
                "REQ lengths short of len");
    m->len = 1ull << 32;
    bad_message(&x.b, path, HS_READY, m, m->h.len, -1, "REQ len 4 GiB");
    m->len = 200;
    m->nsg_total = 0xffffffff;
    bad_message(&x.b, path, HS_READY, m, m->h.len, -1, "REQ nsg_total 2^32-1");
    m->nsg_total = 2;
    m->nsg = 0xffffffff;
    bad_message(&x.b, path, HS_READY, m, m->h.len, -1, "REQ nsg 2^32-1");
    g_free(m);
    m = req_msg(1, PVRDMA_WR_SEND, qpn, sg, 0, 0, 0);
    m->h.len = sizeof(*m) - 8;
    bad_message(&x.b, path, HS_READY, m, m->h.len, -1, "REQ too short");
    g_free(m);

    /* MORE */
    {
        struct {
            CrMoreMsg m;
            CrSge s[2];
        } mm = { { { CR_MORE, sizeof(CrMoreMsg) + sizeof(CrSge) }, 5, 1 },
                 { sg[1], sg[1] } };
        Fake f;
        uint8_t gid[16];

        bad_message(&x.b, path, HS_READY, &mm, mm.m.h.len, -1,
                    "MORE without REQ");
        /*
         * REQ announcing 2 entries (300 bytes), carrying 1; then a bad
         * MORE.  The lengths add up even when the MORE brings one entry
         * too many: only the count catches it.
         */
        m = req_msg(5, PVRDMA_WR_SEND, qpn, sg, 1, 2, 300);
        make_gid(gid, 10, 0xfb);
        for (int i = 0; i < 4; i++) {
            fake_connect(&f, &x.b, path);
            fake_ready(&f, gid);
            fake_send(&f, m, m->h.len, -1);
            PUMP(&x.b);
            g_assert_false(fake_dropped(&f));
            g_assert_cmpuint(peers(&x.b), ==, 2);
            mm.m.cookie = 5;
            mm.m.nsg = 1;
            mm.m.h.len = sizeof(CrMoreMsg) + sizeof(CrSge);
            if (i == 0) {
                mm.m.cookie = 6;                /* another request's */
            } else if (i == 1) {
                mm.m.nsg = 2;                   /* one more than announced */
                mm.m.h.len += sizeof(CrSge);
            } else if (i == 2) {
                fake_send(&f, m, m->h.len, -1); /* a REQ before the MORE */
                mm.m.h.type = 0;
            } else {
                mm.m.nsg = 0;                   /* count and length differ */
            }
            if (mm.m.h.type) {
                fake_send(&f, &mm, mm.m.h.len, -1);
            }
            mm.m.h.type = CR_MORE;
            PUMP(&x.b);
            g_assert_true(fake_dropped(&f));
            g_assert_cmpuint(peers(&x.b), ==, 1);
            fake_close(&f);
        }
        g_free(m);
    }

    /* a RESP for another peer's request: dropped, the request unharmed */
    {
        CrRespMsg spoof = { { CR_RESP, sizeof(spoof) } };
        struct pvrdma_sge g = mr_sge(&x.sb, 0, 64), rr = mr_sge(&x.sa, 0, 64);
        uint8_t gid[16];
        Fake f;

        send_wqe(&x.sb, 0xb7, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
        PUMP(&x.a, &x.b);       /* waits at a for a receive */
        expect_cq_empty(&x.b.d, &x.sb.cq);
        make_gid(gid, 10, 0xfc);
        fake_connect(&f, &x.b, path);
        fake_ready(&f, gid);
        PUMP(&x.b);
        g_assert_cmpuint(peers(&x.b), ==, 2);
        spoof.cookie = x.b.d.c.next_cookie;    /* b's request at a */
        spoof.status = PVRDMA_WC_SUCCESS;
        fake_send(&f, &spoof, sizeof(spoof), -1);
        PUMP(&x.b);
        g_assert_true(fake_dropped(&f));
        g_assert_cmpuint(peers(&x.b), ==, 1);
        expect_cq_empty(&x.b.d, &x.sb.cq);
        fake_close(&f);
        post_recv(&x.a.d, &x.sa.qp, 0xa7, &rr, 1);
        PUMP(&x.a, &x.b);
        side_expect_cqe(&x.sb, 0xb7, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 64);
        side_expect_cqe(&x.sa, 0xa7, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 64);
    }

    /* CANCEL */
    {
        CrCancelMsg c = { { CR_CANCEL, sizeof(c) - 4 }, 1 };

        bad_message(&x.b, path, HS_READY, &c, sizeof(c) - 4, -1,
                    "CANCEL short");
        c.h.len = sizeof(c);
        bad_message(&x.b, path, HS_NONE, &c, sizeof(c), -1,
                    "CANCEL before HELLO");
    }

    /* RESP */
    resp.h.type = CR_RESP;
    bad_message(&x.b, path, HS_READY, &resp, sizeof(resp), -1,
                "RESP for a cookie never sent");
    resp.h.len = sizeof(resp) - 4;
    bad_message(&x.b, path, HS_READY, &resp, sizeof(resp) - 4, -1,
                "RESP short");
    close(memfd);

    /* after all that, a and b still talk */
    {
        struct pvrdma_sge g = mr_sge(&x.sa, 0, 64), rr = mr_sge(&x.sb, 0, 64);
        uint8_t data[64], got[64];

        g_assert_cmpuint(peers(&x.a), ==, 1);
        g_assert_cmpuint(peers(&x.b), ==, 1);
        fill_pattern(data, sizeof(data), 10);
        mr_write(&x.a.d, &x.sa.mr, S_IOVA, data, sizeof(data));
        post_recv(&x.b.d, &x.sb.qp, 0xb1, &rr, 1);
        send_wqe(&x.sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
        PUMP(&x.a, &x.b);
        side_expect_cqe(&x.sa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 64);
        side_expect_cqe(&x.sb, 0xb1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 64);
        mr_read(&x.b.d, &x.sb.mr, S_IOVA, got, sizeof(got));
        g_assert_cmpmem(got, sizeof(got), data, sizeof(data));
        g_assert_cmpuint(qp_state(&x.sb), ==, PVRDMA_QPS_RTS);
    }
    g_free(path);
    x_fini(&x);
}

void cr_add_rings_tests(void)
{
    g_test_add_func("/pvrdma/cr/ring-malformed", test_ring_malformed);
    g_test_add_func("/pvrdma/cr/peer-not-reading", test_peer_not_reading);
    g_test_add_func("/pvrdma/cr/malformed", test_malformed);
}
