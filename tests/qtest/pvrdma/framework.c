/*
 * QTest for the pvrdma device: the helpers every topic's tests share
 * (framework.h).
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

/* ------------------------------------------------------------------ */
/* Guest-side helpers, written the way the Linux driver lays things out */

/* How many async events (type, info) are among the first ones posted */
unsigned async_count(QPvrdma *d, uint32_t type, uint32_t info)
{
    uint32_t prod;
    unsigned n = 0;

    for (int i = 0; i < 100; i++) {
        qtest_clock_step(d->qts, 10);
    }
    prod = qtest_readl(d->qts, d->async_pages[0] + 8);
    for (uint32_t i = 0; i < prod && i < 512; i++) {
        struct pvrdma_eqe e;
        uint64_t off = i * sizeof(e);

        qtest_memread(d->qts, d->async_pages[1 + off / 4096] + off % 4096,
                      &e, sizeof(e));
        n += e.type == type && e.info == info;
    }
    return n;
}

bool async_seen(QPvrdma *d, uint32_t type, uint32_t info)
{
    return async_count(d, type, info) > 0;
}

void fill(QPvrdma *d, uint64_t gpa, size_t len, uint8_t seed)
{
    g_autofree uint8_t *b = g_malloc(len);

    for (size_t i = 0; i < len; i++) {
        b[i] = seed + i * 7;
    }
    qtest_memwrite(d->qts, gpa, b, len);
}

void same(QPvrdma *d, uint64_t a, uint64_t b, size_t len)
{
    g_autofree uint8_t *x = g_malloc(len);
    g_autofree uint8_t *y = g_malloc(len);

    qtest_memread(d->qts, a, x, len);
    qtest_memread(d->qts, b, y, len);
    g_assert(memcmp(x, y, len) == 0);
}


/* The pair on a device already active (d). */
void pair_connect(Pair *p, QPvrdma *d, uint8_t type, uint32_t n)
{
    p->d = d;
    qpvrdma_bind_gid(p->d, 0);
    p->pd = qpvrdma_create_pd(p->d, 0);
    qpvrdma_create_cq(p->d, &p->cq, 256);
    qpvrdma_create_qp(p->d, &p->a, p->pd, p->cq.handle, p->cq.handle, type, n,
                      0);
    qpvrdma_create_qp(p->d, &p->b, p->pd, p->cq.handle, p->cq.handle, type, n,
                      0);
    qpvrdma_qp_to_rts(p->d, &p->a, type, p->b.qpn);
    qpvrdma_qp_to_rts(p->d, &p->b, type, p->a.qpn);
}

void pair_setup(Pair *p, uint8_t type, uint32_t n)
{
    pair_connect(p, qpvrdma_start_active(NULL), type, n);
}

/*
 * One 4 KiB SEND of p (id n, src filled from seed) into a receive at dst
 * (lkey key, dst's MR key + 256), both completions checked: work done.
 */
void pair_exchange(Pair *p, uint64_t src, uint64_t dst, uint32_t key,
                   uint8_t n, uint8_t seed)
{
    QPvrdma *d = p->d;

    fill(d, src, 4096, seed);
    qpvrdma_post_recv(d, &p->b, 0xb0 | n, dst, 4096, key + 256);
    qpvrdma_send_wr(d, &p->a, PVRDMA_WR_SEND, 0xa0 | n, src, 4096, key, 0, 0);
    qpvrdma_expect_cqe(d, &p->cq, 0xb0 | n, PVRDMA_WC_RECV, PVRDMA_WC_SUCCESS,
                       4096);
    qpvrdma_expect_cqe(d, &p->cq, 0xa0 | n, PVRDMA_WC_SEND, PVRDMA_WC_SUCCESS,
                       4096);
}

/* ------------------------------------------------------------------ */
/* Co-resident transport: two QEMU processes, one rendezvous directory  */

const uint8_t peer_gid[4][16] = {
    { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1 },
    { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2 },
    { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 3 },
    { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 4 },
};


/* The co-resident peers pvrdma0 has connected (query-pvrdma). */
uint32_t peer_count(QPvrdma *d)
{
    QDict *r = qtest_qmp(d->qts, "{ 'execute': 'query-pvrdma' }");
    QList *devs = qdict_get_qlist(r, "return");
    uint32_t n = 0;

    for (const QListEntry *e = qlist_first(devs); e; e = qlist_next(e)) {
        QDict *dev = qobject_to(QDict, qlist_entry_obj(e));
        QList *tps = qdict_get_qlist(dev, "transports");

        if (strcmp(qdict_get_str(dev, "id"), "pvrdma0")) {
            continue;
        }
        for (const QListEntry *t = qlist_first(tps); t;
             t = qlist_next(t)) {
            QDict *tp = qobject_to(QDict, qlist_entry_obj(t));

            if (!strcmp(qdict_get_str(tp, "type"), "coresident")) {
                n = qdict_get_int(tp, "peers");
            }
        }
    }
    qobject_unref(r);
    return n;
}

/* Remove a rendezvous directory (sockets, lock file) after a test. */
void rm_dir(const char *dir)
{
    GDir *d = g_dir_open(dir, 0, NULL);
    const char *n;

    while (d && (n = g_dir_read_name(d))) {
        g_autofree char *f = g_build_filename(dir, n, NULL);

        unlink(f);
    }
    if (d) {
        g_dir_close(d);
    }
    g_assert_cmpint(rmdir(dir), ==, 0);
}

/* Wait (real time: the peers are other processes) until d sees n peers. */
void wait_peers(QPvrdma *d, uint32_t n)
{
    for (int i = 0; i < 500 && peer_count(d) != n; i++) {
        g_usleep(10 * 1000);
    }
    g_assert_cmpuint(peer_count(d), ==, n);
}

/* A peer whose device has these properties (',coresident=on', ...). */
void peer_start_props(Peer *p, unsigned i, const char *props)
{
    g_autofree char *extra = g_strdup_printf(
        "%s -m 128M -machine memory-backend=mem "
        "-object memory-backend-memfd,id=mem,size=128M,share=on", props);

    memset(p, 0, sizeof(*p));
    p->d = qpvrdma_start_active(extra);
    qpvrdma_bind_gid_raw(p->d, 0, peer_gid[i]);
    p->pd = qpvrdma_create_pd(p->d, 0);
    qpvrdma_create_cq(p->d, &p->cq, 64);
    p->buf = qpvrdma_alloc(p->d, 4 * 4096);
    p->key = qpvrdma_create_mr(p->d, p->pd, p->buf, 4 * 4096,
                       PVRDMA_ACCESS_LOCAL_WRITE | PVRDMA_ACCESS_REMOTE_WRITE |
                       PVRDMA_ACCESS_REMOTE_READ | PVRDMA_ACCESS_REMOTE_ATOMIC);
}

/* A peer with a rendezvous secret (NULL: none). */
void peer_start_secret(Peer *p, const char *dir, unsigned i,
                       const char *secret)
{
    g_autofree char *sec = secret ?
        g_strdup_printf(",rendezvous-secret=rs -object secret,id=rs,"
                        "data=%s", secret) : g_strdup("");
    g_autofree char *props = g_strdup_printf(",rendezvous=%s%s", dir, sec);

    peer_start_props(p, i, props);
}

void peer_start(Peer *p, const char *dir, unsigned i)
{
    peer_start_secret(p, dir, i, NULL);
}

/* Connect RC QPs of a and b (created here) with the given RNR retry. */
void peers_connect(Peer *a, Peer *b, uint8_t type, uint8_t rnr_retry)
{
    qpvrdma_create_qp(a->d, &a->qp, a->pd, a->cq.handle, a->cq.handle, type, 16,
                      0);
    qpvrdma_create_qp(b->d, &b->qp, b->pd, b->cq.handle, b->cq.handle, type, 16,
                      0);
    qpvrdma_qp_to_rts_gid(a->d, &a->qp, type, b->qp.qpn, peer_gid[1],
                          rnr_retry);
    qpvrdma_qp_to_rts_gid(b->d, &b->qp, type, a->qp.qpn, peer_gid[0],
                          rnr_retry);
}

/* Two peers in dir that see each other, with connected QPs. */
void peers_up(Peer *a, Peer *b, const char *dir, uint8_t type,
              uint8_t rnr_retry)
{
    peer_start(a, dir, 0);
    peer_start(b, dir, 1);
    wait_peers(a->d, 1);
    wait_peers(b->d, 1);
    peers_connect(a, b, type, rnr_retry);
}

/* Poll a CQ on a while the other process works (real time). */
void expect_peer_cqe(Peer *p, uint64_t wr_id, uint32_t opcode,
                     uint32_t status, uint32_t len)
{
    qpvrdma_expect_cqe_wait(p->d, &p->cq, wr_id, opcode, status, len, 1000);
}

void peer_fill(Peer *p, uint64_t off, size_t len, uint8_t seed)
{
    fill(p->d, p->buf + off, len, seed);
}

/* Bytes at a's buf+aoff equal b's buf+boff (two processes). */
void peers_same(Peer *a, uint64_t aoff, Peer *b, uint64_t boff,
                size_t len)
{
    g_autofree uint8_t *x = g_malloc(len);
    g_autofree uint8_t *y = g_malloc(len);

    qtest_memread(a->d->qts, a->buf + aoff, x, len);
    qtest_memread(b->d->qts, b->buf + boff, y, len);
    g_assert(memcmp(x, y, len) == 0);
}

/*
 * a's RC QP on b's memory: a WRITE into b, a READ back, fetch-add and
 * compare-swap on a word of b (old values into a), each compared.
 */
void peers_rc_ops(Peer *a, Peer *b)
{
    qpvrdma_send_wr(a->d, &a->qp, PVRDMA_WR_RDMA_WRITE, 0xa2, a->buf + 100,
                    5000, a->key, b->buf + 8000, b->key);
    expect_peer_cqe(a, 0xa2, PVRDMA_WC_RDMA_WRITE, PVRDMA_WC_SUCCESS, 5000);
    peers_same(a, 100, b, 8000, 5000);
    peer_fill(b, 0, 4096, 77);
    qpvrdma_send_wr(a->d, &a->qp, PVRDMA_WR_RDMA_READ, 0xa3, a->buf + 12000,
                    3000, a->key, b->buf + 7, b->key);
    expect_peer_cqe(a, 0xa3, PVRDMA_WC_RDMA_READ, PVRDMA_WC_SUCCESS, 3000);
    peers_same(a, 12000, b, 7, 3000);

    qtest_writeq(b->d->qts, b->buf + 64, 1000);
    qpvrdma_atomic_wr(a->d, &a->qp, PVRDMA_WR_ATOMIC_FETCH_AND_ADD, 0xa4,
                      a->buf + 8, a->key, b->buf + 64, b->key, 24, 0);
    expect_peer_cqe(a, 0xa4, PVRDMA_WC_FETCH_ADD, PVRDMA_WC_SUCCESS, 8);
    g_assert_cmpuint(qtest_readq(a->d->qts, a->buf + 8), ==, 1000);
    g_assert_cmpuint(qtest_readq(b->d->qts, b->buf + 64), ==, 1024);
    qpvrdma_atomic_wr(a->d, &a->qp, PVRDMA_WR_ATOMIC_CMP_AND_SWP, 0xa5,
                      a->buf + 8, a->key, b->buf + 64, b->key, 1024, 5);
    expect_peer_cqe(a, 0xa5, PVRDMA_WC_COMP_SWAP, PVRDMA_WC_SUCCESS, 8);
    g_assert_cmpuint(qtest_readq(a->d->qts, a->buf + 8), ==, 1024);
    g_assert_cmpuint(qtest_readq(b->d->qts, b->buf + 64), ==, 5);
}

/*
 * A WRITE from a with a bad rkey, then a SEND: the WRITE completes with
 * REM_ACCESS_ERR, the SEND and b's posted receive are flushed, both QPs
 * end in ERR.
 */
void peers_bad_rkey(Peer *a, Peer *b)
{
    qpvrdma_post_recv(b->d, &b->qp, 0xb7, b->buf, 64, b->key);
    qpvrdma_send_wr(a->d, &a->qp, PVRDMA_WR_RDMA_WRITE, 0xa7, a->buf, 16,
                    a->key, b->buf, b->key ^ 0x80);
    qpvrdma_send_wr(a->d, &a->qp, PVRDMA_WR_SEND, 0xa8, a->buf, 16, a->key,
                    0, 0);
    expect_peer_cqe(a, 0xa7, 0, PVRDMA_WC_REM_ACCESS_ERR, 0);
    expect_peer_cqe(a, 0xa8, 0, PVRDMA_WC_WR_FLUSH_ERR, 0);
    expect_peer_cqe(b, 0xb7, 0, PVRDMA_WC_WR_FLUSH_ERR, 0);
    g_assert_cmpuint(qp_state(a->d, a->qp.handle), ==, PVRDMA_QPS_ERR);
    g_assert_cmpuint(qp_state(b->d, b->qp.handle), ==, PVRDMA_QPS_ERR);
}

/*
 * One SEND from a (buf + aoff) to b (buf + boff) of len bytes, filled
 * with seed: both completions, the bytes compared.
 */
void peers_send(Peer *a, Peer *b, uint64_t id, uint64_t aoff,
                uint64_t boff, uint32_t len, uint8_t seed)
{
    peer_fill(a, aoff, len, seed);
    qpvrdma_post_recv(b->d, &b->qp, 0xb0 | id, b->buf + boff, len, b->key);
    qpvrdma_send_wr(a->d, &a->qp, PVRDMA_WR_SEND, 0xa0 | id, a->buf + aoff,
                    len, a->key, 0, 0);
    expect_peer_cqe(a, 0xa0 | id, PVRDMA_WC_SEND, PVRDMA_WC_SUCCESS, len);
    expect_peer_cqe(b, 0xb0 | id, PVRDMA_WC_RECV, PVRDMA_WC_SUCCESS, len);
    peers_same(a, aoff, b, boff, len);
}

uint8_t qp_state(QPvrdma *d, uint32_t handle)
{
    struct pvrdma_cmd_query_qp q = { .hdr.cmd = PVRDMA_CMD_QUERY_QP,
                                     .qp_handle = handle,
                                     .attr_mask = PVRDMA_QP_STATE };
    union pvrdma_cmd_resp r;

    qpvrdma_cmd_ok(d, &q, sizeof(q), &r);
    return r.query_qp_resp.attrs.qp_state;
}

/*
 * Live migration with loopback QPs connected and traffic under way: the
 * work posted just before the switch-over completes exactly once, on the
 * destination if not before; the QP numbers, keys and ring positions are
 * the guest's as before; data is intact.
 */

