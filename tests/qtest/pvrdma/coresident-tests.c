/*
 * QTest for the pvrdma device: the co-resident transport (two QEMUs, their
 * peers, QMP, the migration of one of them).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "qemu/bswap.h"
#include "libqos/pvrdma.h"
#include "hw/pci/pci_regs.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "qobject/qjson.h"
#include "qapi/error.h"
#include "pvrdma/framework.h"
#include <arpa/inet.h>

static void test_cr_rc(void)
{
    g_autofree char *dir = g_dir_make_tmp("pvrdma-cr-XXXXXX", NULL);
    Peer a, b;

    peers_up(&a, &b, dir, PVRDMA_QPT_RC, 7);

    /* SEND across pages into two receive SGEs worth of buffer */
    peers_send(&a, &b, 1, 3, 1, 9000, 5);

    /* WRITE into b, READ back from b, atomics on b's memory */
    peers_rc_ops(&a, &b);

    /* RNR: the send waits at b until b posts its receive */
    qpvrdma_send_wr(a.d, &a.qp, PVRDMA_WR_SEND, 0xa6, a.buf, 64, a.key, 0, 0);
    g_usleep(50 * 1000);
    qpvrdma_cq_empty(a.d, &a.cq);
    qpvrdma_post_recv(b.d, &b.qp, 0xb6, b.buf + 4096, 64, b.key);
    expect_peer_cqe(&b, 0xb6, PVRDMA_WC_RECV, PVRDMA_WC_SUCCESS, 64);
    expect_peer_cqe(&a, 0xa6, PVRDMA_WC_SEND, PVRDMA_WC_SUCCESS, 64);
    peers_same(&a, 0, &b, 4096, 64);

    /* bad rkey: error on both sides, both QPs in error, receives flushed */
    peers_bad_rkey(&a, &b);
    g_assert(async_seen(b.d, PVRDMA_EVENT_QP_ACCESS_ERR, b.qp.handle));
    g_assert(!async_seen(a.d, PVRDMA_EVENT_QP_ACCESS_ERR, a.qp.handle));

    qpvrdma_stop(b.d);
    qpvrdma_stop(a.d);
    rm_dir(dir);
}

/*
 * Management gives d's device the connection fd (x-pvrdma-peer-add after
 * getfd, as libvirt passes descriptors): the QMP reply, which the caller
 * unrefs.
 */
static QDict *give_peer(QPvrdma *d, int fd, const char *name)
{
    QDict *r = qtest_qmp_fds(d->qts, &fd, 1, "{ 'execute': 'getfd', "
                             "'arguments': { 'fdname': %s } }", name);

    g_assert(qdict_haskey(r, "return"));
    qobject_unref(r);
    return qtest_qmp(d->qts, "{ 'execute': 'x-pvrdma-peer-add', "
                     "'arguments': { 'fd': %s } }", name);
}

/*
 * As management connects two devices: a socketpair, one end to each QEMU
 * (named after the other VM), until each sees its peer.
 */
static void mgmt_connect(Peer *a, Peer *b)
{
    int sv[2];

    g_assert_cmpint(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv),
                    ==, 0);
    qobject_unref(give_peer(a->d, sv[0], "vm1"));
    qobject_unref(give_peer(b->d, sv[1], "vm0"));
    close(sv[0]);
    close(sv[1]);
    wait_peers(a->d, 1);
    wait_peers(b->d, 1);
}

/* The error class and text of QMP reply r contain want. */
static void qmp_error_has(QDict *r, const char *want)
{
    QDict *e = qdict_get_qdict(r, "error");

    g_assert(e);
    if (!strstr(qdict_get_str(e, "desc"), want)) {
        g_test_message("'%s' not in '%s'", want, qdict_get_str(e, "desc"));
        g_test_fail();
    }
    qobject_unref(r);
}

/*
 * Peers from management: two QEMUs with coresident=on and no rendezvous
 * directory meet only when the test, as management, makes a socketpair
 * and gives each QEMU one end; then RC data moves both ways, through
 * the connection and nothing else (no directory, nothing to scan).  The
 * command refuses a device without the transport, a descriptor that is
 * not a SOCK_SEQPACKET socket and a name getfd never gave.  Postcopy is
 * refused as with a rendezvous directory (the peer writes our RAM where
 * userfaultfd cannot see).  When b's QEMU goes, PVRDMA_PEER_LOST names it
 * by the name management gave, with its pid.
 */
static void test_cr_peer_add(void)
{
    Peer a, b;
    QPvrdma *n;
    char *err = NULL;
    int sv[2];

    peer_start_props(&a, 0, ",coresident=on");
    peer_start_props(&b, 1, ",coresident=on");
    g_usleep(100 * 1000);
    g_assert_cmpuint(peer_count(a.d), ==, 0);
    mgmt_connect(&a, &b);
    peers_connect(&a, &b, PVRDMA_QPT_RC, 7);
    peers_send(&a, &b, 1, 3, 1, 9000, 5);
    qpvrdma_send_wr(b.d, &b.qp, PVRDMA_WR_RDMA_WRITE, 0xb2, b.buf + 100,
                    5000, b.key, a.buf + 8000, a.key);
    expect_peer_cqe(&b, 0xb2, PVRDMA_WC_RDMA_WRITE, PVRDMA_WC_SUCCESS, 5000);
    peers_same(&b, 100, &a, 8000, 5000);

    /* no postcopy: the peer writes our RAM where userfaultfd cannot see */
    if (qpvrdma_migrate_postcopy(a.d, &err)) {
        g_assert_nonnull(err);
        g_assert(strstr(err, "postcopy-ram is not supported with "
                        "coresident=on"));
    }
    g_clear_pointer(&err, g_free);

    /* a stream socket, an unknown name */
    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv),
                    ==, 0);
    qmp_error_has(give_peer(a.d, sv[0], "stream"),
                  "not a unix SOCK_SEQPACKET socket");
    close(sv[0]);
    close(sv[1]);
    qmp_error_has(qtest_qmp(a.d->qts, "{ 'execute': 'x-pvrdma-peer-add', "
                            "'arguments': { 'fd': 'nosuch' } }"), "nosuch");
    g_assert_cmpuint(peer_count(a.d), ==, 1);

    /* a device without the co-resident transport */
    n = qpvrdma_start_active("");
    g_assert_cmpint(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv),
                    ==, 0);
    qmp_error_has(give_peer(n, sv[0], "p"), "has no co-resident transport");
    close(sv[0]);
    close(sv[1]);
    qpvrdma_stop(n);

    /* b's QEMU goes: a names it as management did, with its pid */
    qpvrdma_stop(b.d);
    wait_peers(a.d, 0);
    {
        QDict *ev = qtest_qmp_eventwait_ref(a.d->qts, "PVRDMA_PEER_LOST");
        QDict *data = qdict_get_qdict(ev, "data");

        g_assert_cmpstr(qdict_get_str(data, "peer"), ==, "vm1");
        g_assert_cmpint(qdict_get_int(data, "pid"), >, 0);
        qobject_unref(ev);
    }
    qpvrdma_stop(a.d);
}

/*
 * Two builds on one host talk: this QEMU and an older build's
 * (PVRDMA_QEMU_OTHER; else a skip), connected by
 * management, prove a shared secret to each other (the HMAC of either
 * build: GLib's or QEMU's qcrypto), negotiate their
 * common features and move RC data both ways (a SEND each way, an RDMA
 * WRITE and a READ from each side).
 */
static void test_cr_other_build(void)
{
    const char *other = g_getenv("PVRDMA_QEMU_OTHER");
    g_autofree char *ours = g_strdup(g_getenv("QTEST_QEMU_BINARY"));
    const char *props = ",coresident=on,rendezvous-secret=rs "
                        "-object secret,id=rs,data=cross-build-secret";
    Peer a, b;

    if (!other) {
        g_test_skip("PVRDMA_QEMU_OTHER names no older build's QEMU");
        return;
    }
    peer_start_props(&a, 0, props);
    g_setenv("QTEST_QEMU_BINARY", other, true);
    peer_start_props(&b, 1, props);
    g_setenv("QTEST_QEMU_BINARY", ours, true);
    mgmt_connect(&a, &b);
    peers_connect(&a, &b, PVRDMA_QPT_RC, 7);
    peers_send(&a, &b, 1, 3, 1, 9000, 5);
    peers_send(&b, &a, 2, 4, 2, 7000, 6);
    qpvrdma_send_wr(a.d, &a.qp, PVRDMA_WR_RDMA_WRITE, 0xa3, a.buf + 100,
                    5000, a.key, b.buf + 8000, b.key);
    expect_peer_cqe(&a, 0xa3, PVRDMA_WC_RDMA_WRITE, PVRDMA_WC_SUCCESS, 5000);
    peers_same(&a, 100, &b, 8000, 5000);
    qpvrdma_send_wr(b.d, &b.qp, PVRDMA_WR_RDMA_READ, 0xb3, b.buf + 200,
                    3000, b.key, a.buf + 9000, a.key);
    expect_peer_cqe(&b, 0xb3, PVRDMA_WC_RDMA_READ, PVRDMA_WC_SUCCESS, 3000);
    peers_same(&a, 9000, &b, 200, 3000);
    qpvrdma_stop(b.d);
    qpvrdma_stop(a.d);
}

/* query-pvrdma's entry for QP qpn of d's one device, or NULL. */
static QDict *query_qp(QDict *dev, uint32_t qpn)
{
    QList *qps = qdict_get_qlist(dev, "qps");

    for (const QListEntry *e = qlist_first(qps); e; e = qlist_next(e)) {
        QDict *q = qobject_to(QDict, qlist_entry_obj(e));

        if (qdict_get_int(q, "qpn") == qpn) {
            return q;
        }
    }
    return NULL;
}

/*
 * query-pvrdma and info pvrdma on a co-resident pair: a's device, its
 * transports (the co-resident one with its peer), its RC QP on the
 * co-resident path towards b's GID and QP number, typed.
 */
static void test_cr_query(void)
{
    g_autofree char *dir = g_dir_make_tmp("pvrdma-cr-XXXXXX", NULL);
    char gid[INET6_ADDRSTRLEN];
    bool loopback = false, coresident = false;
    QDict *rsp, *dev, *q;
    QList *list, *tps;
    Peer a, b;
    char *txt;

    peers_up(&a, &b, dir, PVRDMA_QPT_RC, 7);
    peers_send(&a, &b, 1, 0, 0, 100, 3);
    rsp = qtest_qmp(a.d->qts, "{ 'execute': 'query-pvrdma' }");
    list = qdict_get_qlist(rsp, "return");
    g_assert_cmpuint(qlist_size(list), ==, 1);
    dev = qobject_to(QDict, qlist_peek(list));
    g_assert_cmpstr(qdict_get_str(dev, "id"), ==, "pvrdma0");
    g_assert_cmpstr(qdict_get_str(dev, "qom-path"), ==,
                    "/machine/peripheral/pvrdma0");
    g_assert_true(qdict_get_bool(dev, "active"));
    g_assert_true(qdict_get_bool(dev, "port-active"));
    tps = qdict_get_qlist(dev, "transports");
    for (const QListEntry *e = qlist_first(tps); e; e = qlist_next(e)) {
        QDict *t = qobject_to(QDict, qlist_entry_obj(e));
        const char *type = qdict_get_str(t, "type");

        if (!strcmp(type, "coresident")) {
            coresident = true;
            g_assert_cmpint(qdict_get_int(t, "peers"), ==, 1);
        } else if (!strcmp(type, "loopback")) {
            loopback = true;
            g_assert_false(qdict_haskey(t, "peers"));
        }
        g_assert_false(qdict_haskey(t, "stats"));   /* neither counts */
    }
    g_assert_true(loopback && coresident);
    q = query_qp(dev, a.qp.qpn);
    g_assert_nonnull(q);
    g_assert_cmpstr(qdict_get_str(q, "type"), ==, "rc");
    g_assert_cmpstr(qdict_get_str(q, "state"), ==, "rts");
    g_assert_cmpstr(qdict_get_str(q, "path"), ==, "coresident");
    g_assert_cmpint(qdict_get_int(q, "peer-qpn"), ==, b.qp.qpn);
    /* an IPv4-mapped GID (RoCEv2's), as its IPv4 address */
    inet_ntop(AF_INET, peer_gid[1] + 12, gid, sizeof(gid));
    g_assert_cmpstr(qdict_get_str(q, "peer-gid"), ==, gid);
    g_assert_false(qdict_haskey(q, "stats"));
    qobject_unref(rsp);

    /* the same for people */
    txt = qtest_hmp(a.d->qts, "info pvrdma");
    g_assert_nonnull(strstr(txt, "pvrdma0 (/machine/peripheral/pvrdma0): "
                            "active, port up"));
    g_assert_nonnull(strstr(txt, "transport coresident peers 1"));
    {
        g_autofree char *line = g_strdup_printf("qp %u rc rts path coresident "
                                                "peer %s qp %u", a.qp.qpn, gid,
                                                b.qp.qpn);

        g_assert_nonnull(strstr(txt, line));
    }
    g_free(txt);

    qpvrdma_stop(b.d);
    qpvrdma_stop(a.d);
    rm_dir(dir);
}

/* A machine without the device: an empty list, and HMP says so. */
static void test_query_none(void)
{
    QTestState *qts = qtest_init("-nodefaults");
    QDict *rsp = qtest_qmp(qts, "{ 'execute': 'query-pvrdma' }");
    char *txt;

    g_assert_cmpuint(qlist_size(qdict_get_qlist(rsp, "return")), ==, 0);
    qobject_unref(rsp);
    txt = qtest_hmp(qts, "info pvrdma");
    g_assert_cmpstr(txt, ==, "no pvrdma device\r\n");
    g_free(txt);
    rsp = qtest_qmp(qts, "{ 'execute': 'x-query-pvrdma-qps' }");
    qmp_error_has(rsp, "no pvrdma device");
    qtest_quit(qts);
}

static void test_cr_access(void)
{
    g_autofree char *dir = g_dir_make_tmp("pvrdma-cr-XXXXXX", NULL);
    Peer a, b;
    uint32_t ro;

    peers_up(&a, &b, dir, PVRDMA_QPT_RC, 7);
    /* a WRITE to a read-only MR of b: access error, b untouched */
    ro = qpvrdma_create_mr(b.d, b.pd, b.buf, 4096, PVRDMA_ACCESS_REMOTE_READ);
    peer_fill(&b, 0, 64, 1);
    peer_fill(&a, 0, 64, 2);
    qpvrdma_send_wr(a.d, &a.qp, PVRDMA_WR_RDMA_WRITE, 1, a.buf, 64, a.key,
                    b.buf, ro);
    expect_peer_cqe(&a, 1, 0, PVRDMA_WC_REM_ACCESS_ERR, 0);
    g_assert_cmpuint(qtest_readb(b.d->qts, b.buf), ==, 1);
    qpvrdma_stop(a.d);
    qpvrdma_stop(b.d);

    /* a READ past the end of b's MR */
    peers_up(&a, &b, dir, PVRDMA_QPT_RC, 7);
    qpvrdma_send_wr(a.d, &a.qp, PVRDMA_WR_RDMA_READ, 2, a.buf, 64, a.key,
            b.buf + 4 * 4096 - 32, b.key);
    expect_peer_cqe(&a, 2, 0, PVRDMA_WC_REM_ACCESS_ERR, 0);
    qpvrdma_stop(a.d);
    qpvrdma_stop(b.d);
    rm_dir(dir);
}

static void test_cr_ud(void)
{
    g_autofree char *dir = g_dir_make_tmp("pvrdma-cr-XXXXXX", NULL);
    struct pvrdma_sq_wqe_hdr h = { 0 };
    struct pvrdma_sge s;
    struct pvrdma_cqe e;
    uint8_t grh[40];
    Peer a, b;

    peers_up(&a, &b, dir, PVRDMA_QPT_UD, 7);
    peer_fill(&a, 0, 4096, 9);
    qpvrdma_post_recv(b.d, &b.qp, 0xb1, b.buf, 40 + 1024, b.key);
    h.wr_id = 0xa1;
    h.num_sge = 1;
    h.opcode = PVRDMA_WR_SEND_WITH_IMM;
    h.send_flags = PVRDMA_SEND_SIGNALED;
    h.ex.imm_data = 0x5555;
    h.wr.ud.remote_qpn = b.qp.qpn;
    h.wr.ud.remote_qkey = 0x11111111;
    memcpy(h.wr.ud.av.dgid, peer_gid[1], 16);
    s = (struct pvrdma_sge) { a.buf, 1024, a.key };
    qpvrdma_post_send(a.d, &a.qp, &h, &s, true);
    expect_peer_cqe(&a, 0xa1, PVRDMA_WC_SEND, PVRDMA_WC_SUCCESS, 1024);
    for (int i = 0; i < 200 && !qpvrdma_poll_cq(b.d, &b.cq, &e); i++) {
        g_usleep(5 * 1000);
        e.wr_id = 0;
    }
    g_assert_cmphex(e.wr_id, ==, 0xb1);
    g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
    g_assert_cmpuint(e.byte_len, ==, 40 + 1024);
    g_assert_cmpuint(e.src_qp, ==, a.qp.qpn);
    g_assert_cmphex(e.imm_data, ==, 0x5555);
    g_assert(e.wc_flags & PVRDMA_WC_GRH);
    peers_same(&a, 0, &b, 40, 1024);
    qtest_memread(b.d->qts, b.buf, grh, 40);
    g_assert_cmphex(grh[20], ==, 0x45);
    g_assert(memcmp(grh + 32, peer_gid[0] + 12, 4) == 0);   /* source IP */

    /* to a GID nobody has: the datagram is lost, the send completes */
    h.wr_id = 0xa2;
    h.wr.ud.av.dgid[15] = 99;
    qpvrdma_post_send(a.d, &a.qp, &h, &s, true);
    expect_peer_cqe(&a, 0xa2, PVRDMA_WC_SEND, PVRDMA_WC_SUCCESS, 1024);
    qpvrdma_stop(a.d);
    qpvrdma_stop(b.d);
    rm_dir(dir);
}

static void test_cr_peer_gone(void)
{
    g_autofree char *dir = g_dir_make_tmp("pvrdma-cr-XXXXXX", NULL);
    Peer a, b;

    peers_up(&a, &b, dir, PVRDMA_QPT_RC, 7);
    /* a SEND waits at b for a receive (RNR, retry forever); b goes away */
    qpvrdma_send_wr(a.d, &a.qp, PVRDMA_WR_SEND, 0xa1, a.buf, 64, a.key, 0, 0);
    qpvrdma_send_wr(a.d, &a.qp, PVRDMA_WR_RDMA_WRITE, 0xa2, a.buf, 64, a.key, 0,
                    0);
    g_usleep(50 * 1000);
    qpvrdma_cq_empty(a.d, &a.cq);
    qpvrdma_stop(b.d);
    wait_peers(a.d, 0);
    /* the management program hears it */
    {
        QDict *ev = qtest_qmp_eventwait_ref(a.d->qts, "PVRDMA_PEER_LOST");
        QDict *data = qdict_get_qdict(ev, "data");

        g_assert_cmpstr(qdict_get_str(data, "qom-path"), ==,
                        "/machine/peripheral/pvrdma0");
        g_assert_cmpstr(qdict_get_str(data, "id"), ==, "pvrdma0");
        g_assert_nonnull(strstr(qdict_get_str(data, "peer"), dir));
        g_assert_true(g_str_has_suffix(qdict_get_str(data, "peer"), ".sock"));
        g_assert_cmpint(qdict_get_int(data, "pid"), >, 0);
        g_assert_cmpstr(qdict_get_str(data, "reason"), !=, "");
        qobject_unref(ev);
    }
    /*
     * Nobody answers any more: as on a wire, RETRY_EXC_ERR once a's
     * retries have run out (timeout 14, retry_cnt 7: 8 x 67 ms of the
     * virtual clock), not before.
     */
    qpvrdma_cq_empty(a.d, &a.cq);
    qtest_clock_step(a.d->qts, 535 * 1000 * 1000);
    qpvrdma_cq_empty(a.d, &a.cq);
    g_assert_cmpuint(qp_state(a.d, a.qp.handle), ==, PVRDMA_QPS_RTS);
    qtest_clock_step(a.d->qts, 1000 * 1000);
    expect_peer_cqe(&a, 0xa1, 0, PVRDMA_WC_RETRY_EXC_ERR, 0);
    expect_peer_cqe(&a, 0xa2, 0, PVRDMA_WC_WR_FLUSH_ERR, 0);
    g_assert_cmpuint(qp_state(a.d, a.qp.handle), ==, PVRDMA_QPS_ERR);
    wait_peers(a.d, 0);

    /* a new peer joins the same directory: traffic works again */
    peer_start(&b, dir, 1);
    wait_peers(a.d, 1);
    peers_connect(&a, &b, PVRDMA_QPT_RC, 7);
    peers_send(&a, &b, 3, 0, 1024, 256, 3);
    qpvrdma_stop(a.d);
    qpvrdma_stop(b.d);
    rm_dir(dir);
}

/*
 * A peer's request is served from an fd handler, not the bottom half: with
 * b's MSI-X vectors aimed at b's own CTL register (data RESET), the
 * completion it raises must not reset b under the responder.
 */
/*
 * rendezvous-secret: devices with the same secret object meet and work;
 * one with another secret, or none, is refused by both and sees no peer.
 */
static void test_cr_secret(void)
{
    g_autofree char *dir = g_dir_make_tmp("pvrdma-cr-XXXXXX", NULL);
    Peer a, b, c, n;

    peer_start_secret(&a, dir, 0, "open-sesame");
    peer_start_secret(&b, dir, 1, "open-sesame");
    wait_peers(a.d, 1);
    wait_peers(b.d, 1);
    peers_connect(&a, &b, PVRDMA_QPT_RC, 7);
    peers_send(&a, &b, 1, 0, 0, 4096, 9);

    peer_start_secret(&c, dir, 2, "open-sesame!");
    peer_start_secret(&n, dir, 3, NULL);
    for (int i = 0; i < 30; i++) {      /* give the handshakes time */
        g_assert_cmpuint(peer_count(c.d), ==, 0);
        g_assert_cmpuint(peer_count(n.d), ==, 0);
        g_usleep(10 * 1000);
    }
    g_assert_cmpuint(peer_count(a.d), ==, 1);
    g_assert_cmpuint(peer_count(b.d), ==, 1);
    qpvrdma_stop(n.d);
    qpvrdma_stop(c.d);
    qpvrdma_stop(b.d);
    qpvrdma_stop(a.d);
    rm_dir(dir);
}

/*
 * p's CQ holds, in either order, its SEND sid of slen bytes and its
 * receive rid of rlen bytes from QP src_qpn, once each.
 */
static void expect_send_recv(Peer *p, uint64_t sid, uint32_t slen,
                             uint64_t rid, uint32_t rlen, uint32_t src_qpn)
{
    bool seen_s = false, seen_r = false;

    for (int i = 0; i < 2; i++) {
        struct pvrdma_cqe e;

        g_assert(qpvrdma_wait_cq(p->d, &p->cq, &e, 2000));
        g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
        if (e.wr_id == sid) {
            g_assert(!seen_s);
            seen_s = true;
            g_assert_cmpuint(e.byte_len, ==, slen);
        } else {
            g_assert_cmphex(e.wr_id, ==, rid);
            g_assert(!seen_r);
            seen_r = true;
            g_assert_cmpuint(e.byte_len, ==, rlen);
            g_assert_cmpuint(e.src_qp, ==, src_qpn);
        }
    }
}

/*
 * Live migration of one of two co-resident VMs, with requests under way
 * both ways: a's SEND waits at b for a receive, b's SEND waits at a.  a
 * moves to a new QEMU in the same rendezvous directory.  b sees a pause,
 * not an error: its QP stays in RTS, and once receives are posted each
 * request runs exactly once, a's from the destination, with the same QP
 * numbers and keys; the data is intact.  Then traffic goes on both ways.
 * Migrations with postcopy-ram or background-snapshot are refused first,
 * naming why.
 */
static void test_migration_coresident(void)
{
    g_autofree char *dir = g_dir_make_tmp("pvrdma-cr-XXXXXX", NULL);
    g_autofree char *qps = NULL, *err = NULL;
    g_autofree char *bg = g_build_filename(dir, "bg-state", NULL);
    Peer a, b;

    peers_up(&a, &b, dir, PVRDMA_QPT_RC, 7);
    peer_fill(&a, 0, 1000, 5);
    peer_fill(&b, 4096, 1500, 6);
    qpvrdma_send_wr(a.d, &a.qp, PVRDMA_WR_SEND, 0xa1, a.buf, 1000, a.key,
                    0, 0);
    qpvrdma_send_wr(b.d, &b.qp, PVRDMA_WR_SEND, 0xb1, b.buf + 4096, 1500,
                    b.key, 0, 0);
    g_usleep(50 * 1000);
    qpvrdma_cq_empty(a.d, &a.cq);
    qpvrdma_cq_empty(b.d, &b.cq);

    /*
     * Not with postcopy or a background snapshot: the peer touches our RAM
     * where userfaultfd does not see it.
     */
    if (qpvrdma_migrate_postcopy(a.d, &err)) {
        g_assert_nonnull(err);
        g_assert(strstr(err, "postcopy-ram is not supported with rendezvous"));
    }
    g_free(err);
    err = NULL;
    if (qpvrdma_bg_snapshot(a.d, bg, &err)) {
        g_assert_nonnull(err);
        g_assert(strstr(err, "background-snapshot is not supported with "
                        "rendezvous"));
    }
    unlink(bg);
    qpvrdma_migrate(a.d);

    /* b waited: no error, and it sees the destination */
    wait_peers(b.d, 1);
    qpvrdma_cq_empty(b.d, &b.cq);
    g_assert_cmpuint(qp_state(b.d, b.qp.handle), ==, PVRDMA_QPS_RTS);
    g_assert_cmpuint(qp_state(a.d, a.qp.handle), ==, PVRDMA_QPS_RTS);
    qpvrdma_post_recv(b.d, &b.qp, 0xb0, b.buf + 8192, 4096, b.key);
    qpvrdma_post_recv(a.d, &a.qp, 0xa0, a.buf + 8192, 4096, a.key);
    expect_send_recv(&a, 0xa1, 1000, 0xa0, 1500, b.qp.qpn);
    expect_send_recv(&b, 0xb1, 1500, 0xb0, 1000, a.qp.qpn);
    qpvrdma_cq_empty(a.d, &a.cq);
    qpvrdma_cq_empty(b.d, &b.cq);
    peers_same(&a, 0, &b, 8192, 1000);
    peers_same(&b, 4096, &a, 8192, 1500);
    qps = qpvrdma_qps(a.d);
    g_assert(strstr(qps, "coresident"));
    /* the same QPs and keys carry on, both ways */
    peers_send(&a, &b, 2, 0, 0, 3000, 7);
    peers_send(&b, &a, 3, 0, 0, 2000, 8);
    qpvrdma_stop(b.d);
    qpvrdma_stop(a.d);
    rm_dir(dir);
}

/* QMP command cmd (stop, cont) on d's QEMU succeeds */
static void qmp_run(QPvrdma *d, const char *cmd)
{
    QDict *r = qtest_qmp(d->qts, "{ 'execute': %s }", cmd);

    g_assert(qdict_haskey(r, "return"));
    qobject_unref(r);
}

/*
 * Co-resident: the peers' socket events are handled in the IOThread while
 * the VM runs (x-iothread-events), in the main loop while it is stopped
 * (the count stands still, the data still moves), and in the IOThread
 * again after cont.
 */
static void test_cr_iothread_events(void)
{
    g_autofree char *dir = g_dir_make_tmp("pvrdma-cr-XXXXXX", NULL);
    uint64_t ev;
    Peer a, b;

    qpvrdma_iothread_mode(true);
    peers_up(&a, &b, dir, PVRDMA_QPT_RC, 7);
    peers_send(&a, &b, 1, 3, 1, 9000, 5);
    g_assert_cmpuint(qpvrdma_counter(a.d, "x-iothread-events"), >, 0);
    ev = qpvrdma_counter(b.d, "x-iothread-events");
    g_assert_cmpuint(ev, >, 0);

    qmp_run(b.d, "stop");
    ev = qpvrdma_counter(b.d, "x-iothread-events");
    peers_send(&a, &b, 2, 4, 2, 7000, 6);
    peers_send(&b, &a, 3, 5, 3, 5000, 7);
    g_assert_cmpuint(qpvrdma_counter(b.d, "x-iothread-events"), ==, ev);

    qmp_run(b.d, "cont");
    peers_send(&a, &b, 4, 6, 4, 3000, 8);
    g_assert_cmpuint(qpvrdma_counter(b.d, "x-iothread-events"), >, ev);
    qpvrdma_iothread_mode(false);
    qpvrdma_stop(b.d);
    qpvrdma_stop(a.d);
    rm_dir(dir);
}

void pvrdma_add_coresident_tests(void)
{
    qpvrdma_add_func_both("/pvrdma/coresident/rc", test_cr_rc);
    qpvrdma_add_func_both("/pvrdma/coresident/query", test_cr_query);
    qtest_add_func("/pvrdma/query-none", test_query_none);
    qpvrdma_add_func_both("/pvrdma/coresident/access", test_cr_access);
    qpvrdma_add_func_both("/pvrdma/coresident/ud", test_cr_ud);
    qpvrdma_add_func_both("/pvrdma/coresident/peer-gone", test_cr_peer_gone);
    qpvrdma_add_func_both("/pvrdma/coresident/secret", test_cr_secret);
    qpvrdma_add_func_both("/pvrdma/coresident/peer-add", test_cr_peer_add);
    qtest_add_func("/pvrdma/coresident/other-build", test_cr_other_build);
    qpvrdma_add_func_both("/pvrdma/migration/coresident",
                          test_migration_coresident);
    qtest_add_func("/pvrdma/iothread/coresident/events",
                   test_cr_iothread_events);
}
