/*
 * QTest for the pvrdma device: the RoCEv2 transport.  Two QEMUs whose
 * vmxnet3s are joined by a pair of dgram netdevs (unix sockets), each
 * device with roce=on: RC traffic between them as RoCEv2 frames, the
 * data compared, errors, query-pvrdma's path and counters.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "libqos/pvrdma.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "pvrdma/framework.h"

/*
 * libqos gives every vmxnet3 this MAC: the two netdevs join only these
 * two NICs, so a frame to it is a frame to the other one.
 */
static const uint8_t roce_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

/* Peer i of two in dir: roce=on on a dgram netdev to the other. */
static void roce_peer_start(Peer *p, const char *dir, unsigned i)
{
    g_autofree char *props = g_strdup_printf(
        ",roce=on -netdev dgram,id=n0,local.type=unix,local.path=%s/%u,"
        "remote.type=unix,remote.path=%s/%u -global vmxnet3.netdev=n0",
        dir, i, dir, 1 - i);

    peer_start_props(p, i, props);
}

/* p's RC QP to RTS towards dest_qpn at dgid, the frames to roce_mac. */
static void roce_qp_rts(Peer *p, uint32_t dest_qpn, const uint8_t dgid[16])
{
    struct pvrdma_qp_attr a = { 0 };

    a.qp_state = PVRDMA_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = PVRDMA_ACCESS_LOCAL_WRITE |
                        PVRDMA_ACCESS_REMOTE_WRITE |
                        PVRDMA_ACCESS_REMOTE_READ |
                        PVRDMA_ACCESS_REMOTE_ATOMIC;
    g_assert_cmpuint(qpvrdma_modify_qp(p->d, p->qp.handle, PVRDMA_QP_STATE |
                                       PVRDMA_QP_PKEY_INDEX | PVRDMA_QP_PORT |
                                       PVRDMA_QP_ACCESS_FLAGS, &a), ==, 0);
    a.qp_state = PVRDMA_QPS_RTR;
    a.path_mtu = PVRDMA_MTU_1024;
    a.dest_qp_num = dest_qpn;
    a.rq_psn = 100;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 1;
    memcpy(a.ah_attr.grh.dgid.raw, dgid, 16);
    a.ah_attr.grh.hop_limit = 64;
    a.ah_attr.port_num = 1;
    memcpy(a.ah_attr.dmac, roce_mac, 6);
    g_assert_cmpuint(qpvrdma_modify_qp(p->d, p->qp.handle, PVRDMA_QP_STATE |
                                       PVRDMA_QP_AV | PVRDMA_QP_PATH_MTU |
                                       PVRDMA_QP_DEST_QPN | PVRDMA_QP_RQ_PSN |
                                       PVRDMA_QP_MAX_DEST_RD_ATOMIC |
                                       PVRDMA_QP_MIN_RNR_TIMER, &a), ==, 0);
    a.qp_state = PVRDMA_QPS_RTS;
    a.sq_psn = 100;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    g_assert_cmpuint(qpvrdma_modify_qp(p->d, p->qp.handle, PVRDMA_QP_STATE |
                                       PVRDMA_QP_SQ_PSN | PVRDMA_QP_TIMEOUT |
                                       PVRDMA_QP_RETRY_CNT |
                                       PVRDMA_QP_RNR_RETRY |
                                       PVRDMA_QP_MAX_QP_RD_ATOMIC, &a), ==, 0);
}

/* Two peers with connected RC QPs over RoCEv2. */
static void roce_peers_up(Peer *a, Peer *b, const char *dir)
{
    roce_peer_start(a, dir, 0);
    roce_peer_start(b, dir, 1);
    /* QP numbers first: each side's RTR names the other's */
    qpvrdma_create_qp(a->d, &a->qp, a->pd, a->cq.handle, a->cq.handle,
                      PVRDMA_QPT_RC, 16, 0);
    qpvrdma_create_qp(b->d, &b->qp, b->pd, b->cq.handle, b->cq.handle,
                      PVRDMA_QPT_RC, 16, 0);
    roce_qp_rts(a, b->qp.qpn, peer_gid[1]);
    roce_qp_rts(b, a->qp.qpn, peer_gid[0]);
}

static void roce_peers_down(Peer *a, Peer *b, const char *dir)
{
    g_autofree char *s0 = g_strdup_printf("%s/0", dir);
    g_autofree char *s1 = g_strdup_printf("%s/1", dir);

    qpvrdma_stop(b->d);
    qpvrdma_stop(a->d);
    unlink(s0);
    unlink(s1);
    rm_dir(dir);
}

/* query-pvrdma's entry of d's QP qpn: its path; NULL if none. */
static char *roce_qp_path(QPvrdma *d, uint32_t qpn, uint64_t *tx_pkts)
{
    QDict *rsp = qtest_qmp(d->qts, "{ 'execute': 'query-pvrdma' }");
    QDict *dev = qobject_to(QDict, qlist_peek(qdict_get_qlist(rsp,
                                                              "return")));
    QList *tps = qdict_get_qlist(dev, "transports");
    QList *qps = qdict_get_qlist(dev, "qps");
    char *path = NULL;

    for (const QListEntry *e = qlist_first(tps); e; e = qlist_next(e)) {
        QDict *t = qobject_to(QDict, qlist_entry_obj(e));

        if (!strcmp(qdict_get_str(t, "type"), "roce")) {
            *tx_pkts = qdict_get_int(qdict_get_qdict(t, "stats"),
                                     "tx-packets");
        }
    }
    for (const QListEntry *e = qlist_first(qps); e; e = qlist_next(e)) {
        QDict *q = qobject_to(QDict, qlist_entry_obj(e));

        if (qdict_get_int(q, "qpn") == qpn) {
            path = g_strdup(qdict_get_str(q, "path"));
        }
    }
    qobject_unref(rsp);
    return path;
}

/*
 * SEND across pages, WRITE, READ, fetch-add and compare-swap between two
 * devices over RoCEv2, the bytes compared at both ends; the QP's path is
 * roce and the transport counted the frames.
 */
static void test_roce_rc(void)
{
    g_autofree char *dir = g_dir_make_tmp("pvrdma-roce-XXXXXX", NULL);
    g_autofree char *path = NULL;
    uint64_t tx = 0;
    Peer a, b;

    roce_peers_up(&a, &b, dir);

    /* 9000 bytes: 9 packets at a path MTU of 1024 */
    peers_send(&a, &b, 1, 3, 1, 9000, 5);
    peers_send(&b, &a, 2, 0, 100, 700, 9);

    qpvrdma_send_wr(a.d, &a.qp, PVRDMA_WR_RDMA_WRITE, 0xa2, a.buf + 100, 5000,
                    a.key, b.buf + 8000, b.key);
    expect_peer_cqe(&a, 0xa2, PVRDMA_WC_RDMA_WRITE, PVRDMA_WC_SUCCESS, 5000);
    peers_same(&a, 100, &b, 8000, 5000);
    peer_fill(&b, 0, 4096, 77);
    qpvrdma_send_wr(a.d, &a.qp, PVRDMA_WR_RDMA_READ, 0xa3, a.buf + 12000, 3000,
                    a.key, b.buf + 7, b.key);
    expect_peer_cqe(&a, 0xa3, PVRDMA_WC_RDMA_READ, PVRDMA_WC_SUCCESS, 3000);
    peers_same(&a, 12000, &b, 7, 3000);

    qtest_writeq(b.d->qts, b.buf + 64, 1000);
    qpvrdma_atomic_wr(a.d, &a.qp, PVRDMA_WR_ATOMIC_FETCH_AND_ADD, 0xa4,
                      a.buf + 8, a.key, b.buf + 64, b.key, 24, 0);
    expect_peer_cqe(&a, 0xa4, PVRDMA_WC_FETCH_ADD, PVRDMA_WC_SUCCESS, 8);
    g_assert_cmpuint(qtest_readq(a.d->qts, a.buf + 8), ==, 1000);
    g_assert_cmpuint(qtest_readq(b.d->qts, b.buf + 64), ==, 1024);
    qpvrdma_atomic_wr(a.d, &a.qp, PVRDMA_WR_ATOMIC_CMP_AND_SWP, 0xa5,
                      a.buf + 8, a.key, b.buf + 64, b.key, 1024, 5);
    expect_peer_cqe(&a, 0xa5, PVRDMA_WC_COMP_SWAP, PVRDMA_WC_SUCCESS, 8);
    g_assert_cmpuint(qtest_readq(a.d->qts, a.buf + 8), ==, 1024);
    g_assert_cmpuint(qtest_readq(b.d->qts, b.buf + 64), ==, 5);

    path = roce_qp_path(a.d, a.qp.qpn, &tx);
    g_assert_cmpstr(path, ==, "roce");
    g_assert_cmpuint(tx, >=, 9 + 5 + 2);

    roce_peers_down(&a, &b, dir);
}

/*
 * A WRITE with a bad rkey: the responder NAKs it, the requester completes
 * it with REM_ACCESS_ERR and flushes what follows, both QPs end in ERR.
 */
static void test_roce_access(void)
{
    g_autofree char *dir = g_dir_make_tmp("pvrdma-roce-XXXXXX", NULL);
    Peer a, b;

    roce_peers_up(&a, &b, dir);
    qpvrdma_post_recv(b.d, &b.qp, 0xb7, b.buf, 64, b.key);
    qpvrdma_send_wr(a.d, &a.qp, PVRDMA_WR_RDMA_WRITE, 0xa7, a.buf, 16, a.key,
                    b.buf, b.key ^ 0x80);
    qpvrdma_send_wr(a.d, &a.qp, PVRDMA_WR_SEND, 0xa8, a.buf, 16, a.key, 0, 0);
    expect_peer_cqe(&a, 0xa7, 0, PVRDMA_WC_REM_ACCESS_ERR, 0);
    expect_peer_cqe(&a, 0xa8, 0, PVRDMA_WC_WR_FLUSH_ERR, 0);
    expect_peer_cqe(&b, 0xb7, 0, PVRDMA_WC_WR_FLUSH_ERR, 0);
    g_assert_cmpuint(qp_state(a.d, a.qp.handle), ==, PVRDMA_QPS_ERR);
    g_assert_cmpuint(qp_state(b.d, b.qp.handle), ==, PVRDMA_QPS_ERR);
    roce_peers_down(&a, &b, dir);
}

void pvrdma_add_roce_tests(void)
{
    qtest_add_func("/pvrdma/roce/rc", test_roce_rc);
    qtest_add_func("/pvrdma/roce/access", test_roce_access);
}
