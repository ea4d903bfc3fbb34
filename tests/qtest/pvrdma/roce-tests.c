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
    qpvrdma_qp_to_rts_mac(a->d, &a->qp, PVRDMA_QPT_RC, b->qp.qpn,
                          peer_gid[1], roce_mac, 7);
    qpvrdma_qp_to_rts_mac(b->d, &b->qp, PVRDMA_QPT_RC, a->qp.qpn,
                          peer_gid[0], roce_mac, 7);
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

    peers_rc_ops(&a, &b);

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
    peers_bad_rkey(&a, &b);
    roce_peers_down(&a, &b, dir);
}

void pvrdma_add_roce_tests(void)
{
    qtest_add_func("/pvrdma/roce/rc", test_roce_rc);
    qtest_add_func("/pvrdma/roce/access", test_roce_access);
}
