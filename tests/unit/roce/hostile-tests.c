/*
 * Tests of the RoCEv2 transport: hostile frames.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "roce/rt.h"

/* A frame from A's addresses to B's, as the test fills it in. */
static void pkt_from_a(Net *n, RocePkt *p, uint8_t op, uint32_t dqpn,
                       uint32_t psn)
{
    memset(p, 0, sizeof(*p));
    memcpy(p->dmac, n->node[1].d.h.mac, 6);
    memcpy(p->smac, n->node[0].d.h.mac, 6);
    p->ip_ver = 4;
    p->ttl = 64;
    p->df = true;
    memcpy(p->sgid, n->node[0].gid, 16);
    memcpy(p->dgid, n->node[1].gid, 16);
    p->sport = 0xc123;
    p->opcode = op;
    p->pkey = 0xffff;
    p->dqpn = dqpn;
    p->psn = psn;
    p->ack_req = true;
}

/*
 * Give B the frame of p (flip, if >= 0, selects a byte to corrupt after
 * building it); returns what pvrdma_roce_rx answered.  The network runs
 * until nothing is left to do.
 */
static bool inject(Net *n, unsigned to, const RocePkt *p, int flip)
{
    static uint8_t buf[ROCE_MAX_FRAME];
    size_t len = roce_build(p, buf, sizeof(buf));
    bool taken;

    g_assert_cmpuint(len, >, 0);
    if (flip >= 0) {
        buf[len - 1 - flip] ^= 0x40;
    }
    net_log(n, "   >> inject %s psn %06x qpn %06x to %c%s",
            roce_opcode_name(p->opcode), p->psn, p->dqpn, "AB"[to],
            flip >= 0 ? " (corrupted)" : "");
    taken = pvrdma_roce_rx(n->node[to].t, buf, len);
    net_settle(n);
    return taken;
}

/*
 * A responder that answers every request with a sequence NAK of the same
 * PSN, for ever (it never takes the packet it asks for): the requester
 * retries retry_cnt times and ends the request with RETRY_EXC_ERR, as
 * after as many ACK timeouts (rxe counts such NAKs against retry_cnt
 * too).  The filter drops A's packets and has "B" NAK each one.
 */
typedef struct NakForever {
    uint32_t qpn;           /* A's QP */
    uint32_t psn;           /* the PSN every NAK names */
    unsigned requests;      /* A's packets the filter saw */
} NakForever;

static bool nak_forever_filter(Net *n, unsigned from, const RocePkt *p,
                               void *arg)
{
    NakForever *nf = arg;
    static uint8_t buf[ROCE_MAX_FRAME];
    RocePkt q;
    size_t len;

    nf->requests++;
    pkt_from_a(n, &q, ROCE_RC_ACKNOWLEDGE, 0, nf->psn);
    memcpy(q.dmac, n->node[0].d.h.mac, 6);
    memcpy(q.smac, n->node[1].d.h.mac, 6);
    memcpy(q.sgid, n->node[1].gid, 16);
    memcpy(q.dgid, n->node[0].gid, 16);
    q.dqpn = nf->qpn;
    q.ack_req = false;
    q.aeth.syndrome = roce_aeth_nak(ROCE_NAK_PSN_SEQ_ERR);
    q.aeth.msn = 0;
    len = roce_build(&q, buf, sizeof(buf));
    g_assert_cmpuint(len, >, 0);
    wire_put(n, 0, buf, len, false, false);
    return true;
}

static void test_rc_seq_nak_forever(void)
{
    for (uint8_t retry_cnt = 0; retry_cnt <= 7; retry_cnt += 7) {
        RcOpts o = rc_default;
        Rc r;
        Net *n = &r.n;
        struct pvrdma_sge s;
        NakForever nf = { .psn = rc_default.psn_a };

        o.retry_cnt = retry_cnt;
        rc_setup(&r, &o, 64 * KIB, 50 + retry_cnt);
        nf.qpn = r.a.qp.qpn;
        n->dir[0].filter = nak_forever_filter;
        n->dir[0].filter_arg = &nf;
        s = ep_sge(&r.a, 0, 100);
        wr_send(&r.a, 0xa1, PVRDMA_WR_SEND, 0, &s, 1);
        wr_send(&r.a, 0xa2, PVRDMA_WR_SEND, 0, &s, 1);
        WAIT_CQES(n, 60000, &r.a, 2, NULL, 0);
        ep_expect_send_failed(&r.a, PVRDMA_WC_RETRY_EXC_ERR);
        g_test_message("retry_cnt %u: RETRY_EXC_ERR after %u packets, %"
                       PRIu64 " sequence NAKs, %" PRIu64 " timeouts",
                       retry_cnt, nf.requests, stats(&n->node[0]).seq_naks,
                       stats(&n->node[0]).timeouts);
        /* the first NAK is the first retry: retry_cnt + 1 NAKs end it */
        g_assert_cmpuint(stats(&n->node[0]).seq_naks, ==, retry_cnt + 1);
        g_assert_cmpuint(stats(&n->node[0]).timeouts, ==, 0);
        n->dir[0].filter = NULL;
        g_assert_true(net_settle(n));
        rc_fini(&r);
    }
}

static uint64_t drops_of(Net *n, unsigned i)
{
    return stats(&n->node[i]).drops;
}

/*
 * Hostile frames to B's RC QP, connected to A's: a fixture with a B QP
 * that stays in RESET, a receive posted at B (a SEND it wrongly took
 * would complete it) and a good SEND frame p from A, at the PSN B
 * expects.
 */
typedef struct Hostile {
    Rc r;
    Net *n;
    Ep reset;
    RocePkt p;
    uint8_t pay[64];
    uint32_t epsn;
} Hostile;

static void hostile_setup(Hostile *h)
{
    rc_setup(&h->r, NULL, 64 * KIB, 18);
    h->n = &h->r.n;
    h->epsn = rc_default.psn_a;
    memset(h->pay, 0x5a, sizeof(h->pay));
    ep_init(&h->reset, &h->n->node[1], PVRDMA_QPT_RC, 4 * KIB);
    wr_recv(&h->r.b, 0xb1, 0, 2000);
    pkt_from_a(h->n, &h->p, ROCE_RC_SEND_ONLY, h->r.b.qp.qpn, h->epsn);
    h->p.payload = h->pay;
    h->p.payload_len = sizeof(h->pay);
}

/*
 * After all that, the connection works from the PSN B expects (works),
 * or at least every completion is well formed; then everything goes.
 */
static void hostile_fini(Hostile *h, bool works)
{
    Rc *r = &h->r;
    g_autofree uint8_t *d = pattern(1000, 61);
    struct pvrdma_sge s;
    struct pvrdma_cqe c;

    if (works) {
        g_assert_cmpuint(ep_cq_avail(&r->a), ==, 0);
        g_assert_cmpuint(ep_cq_avail(&r->b), ==, 0);
        ep_put(&r->a, 0, d, 1000);
        s = ep_sge(&r->a, 0, 1000);
        wr_send(&r->a, 0xa1, PVRDMA_WR_SEND, 0, &s, 1);
        WAIT_CQES(h->n, 10000, &r->a, 1, &r->b, 1);
        ep_expect(&r->a, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 1000);
        ep_expect_recv(&r->b, 0xb1, PVRDMA_WC_RECV, 1000, r->a.qp.qpn);
        ep_check(&r->b, 0, d, 1000);
        g_assert_true(net_settle(h->n));
    }
    while (poll_cq(ep_dev(&r->a), &r->a.cq, &c)) {
        g_assert_cmpuint(c.qp, ==, r->a.qp.handle);
    }
    while (poll_cq(ep_dev(&r->b), &r->b.cq, &c)) {
        g_assert_cmpuint(c.qp, ==, r->b.qp.handle);
    }
    ep_fini(&h->reset);
    rc_fini(r);
}

/* Frames B drops and counts: each one drop more, nothing completes. */
static void test_hostile_dropped(void)
{
    Hostile h;
    Net *n;
    RocePkt u;
    PvrdmaPathStats qs;
    uint64_t drops;

    hostile_setup(&h);
    n = h.n;
    drops = drops_of(n, 1);
    g_assert_true(inject(n, 1, &h.p, 0));       /* the ICRC */
    g_assert_cmpuint(drops_of(n, 1), ==, drops + 1);
    g_assert_true(inject(n, 1, &h.p, 10));      /* a payload byte */
    g_assert_cmpuint(drops_of(n, 1), ==, drops + 2);
    u = h.p;                                    /* unknown destination QP */
    u.dqpn = 0xabcdef;
    g_assert_true(inject(n, 1, &u, -1));
    g_assert_cmpuint(drops_of(n, 1), ==, drops + 3);
    u.dqpn = h.reset.qp.qpn;                    /* a QP in RESET */
    g_assert_true(inject(n, 1, &u, -1));
    g_assert_cmpuint(drops_of(n, 1), ==, drops + 4);
    g_assert_cmpuint(ep_state(&h.reset), ==, PVRDMA_QPS_RESET);
    g_assert_false(pvrdma_roce_qp_stats(n->node[1].t, ep_qp(&h.reset), &qs));
    u = h.p;                                    /* not the QP's peer */
    make_gid(u.sgid, 10, 0, 0, 99);
    g_assert_true(inject(n, 1, &u, -1));
    g_assert_cmpuint(drops_of(n, 1), ==, drops + 5);
    u = h.p;                                    /* UD for the RC QP */
    u.opcode = ROCE_UD_SEND_ONLY;
    u.deth.qkey = 0;
    u.deth.sqp = h.r.a.qp.qpn;
    g_assert_true(inject(n, 1, &u, -1));
    g_assert_cmpuint(drops_of(n, 1), ==, drops + 6);
    hostile_fini(&h, true);
}

/*
 * A PSN far ahead of the window: dropped, or answered with a PSN sequence
 * error NAK (then A, which sent nothing, ignores the NAK).  A PSN just
 * behind: a duplicate, acknowledged again, not executed.
 */
static void test_hostile_psn(void)
{
    Hostile h;
    Net *n;
    RocePkt u;
    uint64_t drops, naks;

    hostile_setup(&h);
    n = h.n;
    drops = drops_of(n, 1);
    naks = n->dir[1].nak_code[ROCE_NAK_PSN_SEQ_ERR];
    u = h.p;
    u.psn = psn_add(h.epsn, 0x400000);
    g_assert_true(inject(n, 1, &u, -1));
    g_test_message("PSN far out of window: drops %+" PRId64 ", seq NAKs %+"
                   PRId64, (int64_t)(drops_of(n, 1) - drops),
                   (int64_t)(n->dir[1].nak_code[ROCE_NAK_PSN_SEQ_ERR] - naks));
    g_assert_true(drops_of(n, 1) == drops + 1 ||
                  n->dir[1].nak_code[ROCE_NAK_PSN_SEQ_ERR] == naks + 1);
    u.psn = psn_add(h.epsn, PSN_MASK - 2);
    g_assert_true(inject(n, 1, &u, -1));
    g_assert_cmpuint(ep_state(&h.r.b), ==, PVRDMA_QPS_RTS);
    g_assert_cmpuint(ep_state(&h.r.a), ==, PVRDMA_QPS_RTS);
    hostile_fini(&h, true);
}

/* Responses A never asked for: an ACK, a READ response, an atomic ACK. */
static void test_hostile_unsolicited(void)
{
    Hostile h;
    Net *n;
    RocePkt q;
    uint64_t drops;

    hostile_setup(&h);
    n = h.n;
    drops = drops_of(n, 0);
    pkt_from_a(n, &q, ROCE_RC_ACKNOWLEDGE, h.r.a.qp.qpn, rc_default.psn_b);
    memcpy(q.dmac, n->node[0].d.h.mac, 6);
    memcpy(q.smac, n->node[1].d.h.mac, 6);
    memcpy(q.sgid, n->node[1].gid, 16);
    memcpy(q.dgid, n->node[0].gid, 16);
    q.aeth.syndrome = roce_aeth_ack(ROCE_AETH_NO_CREDITS);
    q.aeth.msn = 1;
    g_assert_true(inject(n, 0, &q, -1));
    q.opcode = ROCE_RC_RDMA_READ_RESPONSE_ONLY;
    q.payload = h.pay;
    q.payload_len = 16;
    g_assert_true(inject(n, 0, &q, -1));
    q.opcode = ROCE_RC_ATOMIC_ACKNOWLEDGE;
    q.payload = NULL;
    q.payload_len = 0;
    q.atmack = 42;
    g_assert_true(inject(n, 0, &q, -1));
    g_test_message("unsolicited responses: A's drops %+" PRId64,
                   (int64_t)(drops_of(n, 0) - drops));
    g_assert_cmpuint(ep_state(&h.r.a), ==, PVRDMA_QPS_RTS);
    hostile_fini(&h, true);
}

/*
 * Not RoCEv2 for this device (ARP, UDP to another port, another host's
 * address, another MAC): left to the NIC, not counted.  Every truncation
 * of a valid frame: nothing completes.
 */
static void test_hostile_not_ours(void)
{
    Hostile h;
    Net *n;
    RocePkt q;
    uint8_t frame[ROCE_MAX_FRAME];
    uint64_t drops;
    size_t flen;

    hostile_setup(&h);
    n = h.n;
    drops = drops_of(n, 1);
    memset(frame, 0, 60);
    memcpy(frame, n->node[1].d.h.mac, 6);
    memcpy(frame + 6, n->node[0].d.h.mac, 6);
    frame[12] = 0x08;
    frame[13] = 0x06;           /* ARP */
    g_assert_false(pvrdma_roce_rx(n->node[1].t, frame, 60));
    q = h.p;
    flen = roce_build(&q, frame, sizeof(frame));
    /* UDP to port 53 (the checksum is 0: not checked) */
    frame[ROCE_ETH_HLEN + ROCE_IPV4_HLEN + 2] = 0;
    frame[ROCE_ETH_HLEN + ROCE_IPV4_HLEN + 3] = 53;
    g_assert_false(pvrdma_roce_rx(n->node[1].t, frame, flen));
    make_gid(q.dgid, 10, 0, 0, 77);     /* another host's address */
    flen = roce_build(&q, frame, sizeof(frame));
    g_assert_false(pvrdma_roce_rx(n->node[1].t, frame, flen));
    q = h.p;                            /* B's address, another MAC */
    q.dmac[5] ^= 0x80;
    flen = roce_build(&q, frame, sizeof(frame));
    g_assert_false(pvrdma_roce_rx(n->node[1].t, frame, flen));
    g_assert_cmpuint(drops_of(n, 1), ==, drops);

    flen = roce_build(&h.p, frame, sizeof(frame));
    for (size_t l = 0; l < flen; l++) {
        g_autofree uint8_t *t = g_memdup2(frame, MAX(l, 1));

        pvrdma_roce_rx(n->node[1].t, t, l);
    }
    net_settle(n);
    hostile_fini(&h, true);
}

/*
 * Random bit flips of valid frames, then well-formed frames (valid ICRC)
 * with random opcodes, PSNs, keys and lengths, both ways: nothing may
 * crash, leak or touch memory outside the MRs, and what completes is well
 * formed.
 */
static void test_hostile_random(void)
{
    static const uint8_t valid_ops[] = {
        0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09,
        0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13,
        0x14, 0x16, 0x17, 0x64, 0x65,
    };
    Hostile h;
    Net *n;
    Ep *qp[2];
    RocePkt p;
    uint8_t frame[ROCE_MAX_FRAME];

    hostile_setup(&h);
    n = h.n;
    qp[0] = &h.r.a;
    qp[1] = &h.r.b;
    for (unsigned i = 0; i < 2000; i++) {
        unsigned flips = 1 + net_rnd(n) % 3;
        size_t l;

        pkt_from_a(n, &p, ROCE_RC_SEND_ONLY, h.r.b.qp.qpn, h.epsn + 1);
        p.payload = h.pay;
        p.payload_len = net_rnd(n) % sizeof(h.pay);
        l = roce_build(&p, frame, sizeof(frame));
        for (unsigned k = 0; k < flips; k++) {
            frame[net_rnd(n) % l] ^= 1u << (net_rnd(n) % 8);
        }
        pvrdma_roce_rx(n->node[net_rnd(n) & 1].t, frame, l);
    }
    net_settle(n);
    for (unsigned i = 0; i < 5000; i++) {
        unsigned to = net_rnd(n) & 1;
        uint8_t op = valid_ops[net_rnd(n) % sizeof(valid_ops)];
        const RoceOpInfo *info = roce_opcode_info(op);
        uint32_t r32 = net_rnd(n);
        size_t l;

        pkt_from_a(n, &p, op, r32 % 4 ? qp[to]->qp.qpn : r32 >> 8,
                   psn_add(to ? h.epsn + 1 : rc_default.psn_b,
                           net_rnd(n) % 8 - 4));
        if (to == 0) {
            memcpy(p.dmac, n->node[0].d.h.mac, 6);
            memcpy(p.smac, n->node[1].d.h.mac, 6);
            memcpy(p.sgid, n->node[1].gid, 16);
            memcpy(p.dgid, n->node[0].gid, 16);
        }
        p.reth.va = ep_va(qp[to], net_rnd(n) % (80 * KIB)) - net_rnd(n) % 2;
        p.reth.rkey = net_rnd(n) % 3 ? qp[to]->mr.rkey : net_rnd(n);
        p.reth.len = net_rnd(n) % 3 ? net_rnd(n) % 5000 : net_rnd(n);
        p.atmeth.va = p.reth.va & ~7ull;
        p.atmeth.rkey = p.reth.rkey;
        p.atmeth.swap_add = 1;
        p.aeth.syndrome = net_rnd(n);
        p.aeth.syndrome &= 0x7f;
        p.aeth.msn = net_rnd(n) & 0xffffff;
        p.deth.qkey = net_rnd(n);
        p.deth.sqp = net_rnd(n) & 0xffffff;
        p.ieth_rkey = net_rnd(n);
        p.imm = net_rnd(n);
        if (info->payload) {
            p.payload = h.pay;
            p.payload_len = net_rnd(n) % sizeof(h.pay);
        }
        l = roce_build(&p, frame, sizeof(frame));
        g_assert_cmpuint(l, >, 0);
        pvrdma_roce_rx(n->node[to].t, frame, l);
        if (i % 16 == 0) {
            net_run(n, 1000, NULL, NULL);
        }
    }
    /* the queued-up receive may have been taken: keep CQs drained */
    net_settle(n);
    g_test_message("after the random frames: A %s, B %s",
                   ep_state(&h.r.a) == PVRDMA_QPS_RTS ? "RTS" : "not RTS",
                   ep_state(&h.r.b) == PVRDMA_QPS_RTS ? "RTS" : "not RTS");
    hostile_fini(&h, false);
}

void rt_add_hostile_tests(void)
{
    g_test_add_func("/pvrdma/roce/rc-seq-nak-forever",
                    test_rc_seq_nak_forever);
    g_test_add_func("/pvrdma/roce/hostile/dropped", test_hostile_dropped);
    g_test_add_func("/pvrdma/roce/hostile/psn", test_hostile_psn);
    g_test_add_func("/pvrdma/roce/hostile/unsolicited",
                    test_hostile_unsolicited);
    g_test_add_func("/pvrdma/roce/hostile/not-ours", test_hostile_not_ours);
    g_test_add_func("/pvrdma/roce/hostile/random", test_hostile_random);
}
