/*
 * Tests of the co-resident transport: the pause for migration and
 * snapshots, a peer that moves to another host and back, the offer.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "coresident/cr.h"

static PvrdmaQP *side_qp(Side *s)
{
    return pvrdma_qp_get(&s->v->d.c, s->qp.handle);
}

/* The CQEs of s, in any order (sends and receives share its CQ). */
typedef struct WantCqe {
    uint64_t wr_id;
    uint32_t opcode, byte_len;
} WantCqe;

static void side_expect_set(Side *s, const WantCqe *want, unsigned n)
{
    bool seen[8] = { false };

    g_assert_cmpuint(n, <=, G_N_ELEMENTS(seen));
    for (unsigned k = 0; k < n; k++) {
        struct pvrdma_cqe e;
        unsigned i = 0;

        g_assert_true(poll_cq(&s->v->d, &s->cq, &e));
        while (i < n && (seen[i] || want[i].wr_id != e.wr_id)) {
            i++;
        }
        g_assert_cmpuint(i, <, n);      /* expected, and only once */
        seen[i] = true;
        g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
        g_assert_cmpuint(e.opcode, ==, want[i].opcode);
        g_assert_cmpuint(e.byte_len, ==, want[i].byte_len);
    }
    expect_cq_empty(&s->v->d, &s->cq);
}

/*
 * Work in flight both ways across two VMs: a's SEND waits at b for a
 * receive with a's RDMA WRITE behind it, b's SEND waits at a.
 */
static void pause_traffic(X *x, uint8_t *data)
{
    struct pvrdma_sge g;

    fill_pattern(data, P_LEN, 3);
    mr_write(&x->a.d, &x->sa.mr, S_IOVA, data, P_LEN);
    mr_write(&x->b.d, &x->sb.mr, S_IOVA + 4096, data, P_LEN);
    g = mr_sge(&x->sa, 0, P_LEN);
    send_wqe(&x->sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    rdma_wqe(&x->sa, 0xa2, PVRDMA_WR_RDMA_WRITE, &g, 1, S_IOVA + 8192,
             x->sb.mr.rkey, 0);
    g = mr_sge(&x->sb, 4096, P_LEN);
    send_wqe(&x->sb, 0xb1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x->a, &x->b);
    expect_cq_empty(&x->a.d, &x->sa.cq);
    expect_cq_empty(&x->b.d, &x->sb.cq);
}

/* a's VM stops: b, another QEMU, answers from its own thread. */
static void pause_a(X *x)
{
    Pumper pb;

    pumper_start(&pb, &x->b);
    g_assert_true(pvrdma_core_quiesce(&x->a.d.c, 10000));
    pumper_stop(&pb);
}

/*
 * After the pause nothing is in flight and nothing ran: the requests are
 * back in their send queues; receives posted now take nothing.
 */
static void paused_state(X *x, Side *sa2)
{
    uint8_t got[P_LEN], zero[P_LEN] = { 0 };
    struct pvrdma_sge r;

    g_assert_cmpuint(side_qp(&x->sa)->sq_head, ==, side_qp(&x->sa)->sq.priv);
    g_assert_cmpuint(side_qp(&x->sb)->sq_head, ==, side_qp(&x->sb)->sq.priv);
    mr_read(&x->b.d, &x->sb.mr, S_IOVA + 8192, got, P_LEN);
    g_assert_cmpmem(got, P_LEN, zero, P_LEN);   /* the WRITE did not run */
    r = mr_sge(&x->sb, 0, P_LEN);
    post_recv(&x->b.d, &x->sb.qp, 0xb0, &r, 1);
    r = mr_sge(&x->sa, 4096, P_LEN);
    post_recv(&x->a.d, &x->sa.qp, 0xa0, &r, 1);
    PUMP(&x->a, &x->b);
    expect_cq_empty(&x->a.d, &x->sa.cq);
    expect_cq_empty(&x->b.d, &x->sb.cq);
}

/* Everything ran exactly once, a's side now being sa2 (a or its successor). */
static void resumed_state(X *x, Side *sa2, const uint8_t *data)
{
    static const WantCqe wa[] = {
        { 0xa1, PVRDMA_WC_SEND, P_LEN },
        { 0xa2, PVRDMA_WC_RDMA_WRITE, P_LEN },
        { 0xa0, PVRDMA_WC_RECV, P_LEN },
    };
    static const WantCqe wb[] = {
        { 0xb1, PVRDMA_WC_SEND, P_LEN },
        { 0xb0, PVRDMA_WC_RECV, P_LEN },
    };
    uint8_t got[P_LEN];

    side_expect_set(sa2, wa, G_N_ELEMENTS(wa));
    side_expect_set(&x->sb, wb, G_N_ELEMENTS(wb));
    mr_read(&x->b.d, &x->sb.mr, S_IOVA, got, P_LEN);
    g_assert_cmpmem(got, P_LEN, data, P_LEN);
    mr_read(&x->b.d, &x->sb.mr, S_IOVA + 8192, got, P_LEN);
    g_assert_cmpmem(got, P_LEN, data, P_LEN);
    mr_read(&sa2->v->d, &sa2->mr, S_IOVA + 4096, got, P_LEN);
    g_assert_cmpmem(got, P_LEN, data, P_LEN);
    g_assert_cmpuint(qp_state(sa2), ==, PVRDMA_QPS_RTS);
    g_assert_cmpuint(qp_state(&x->sb), ==, PVRDMA_QPS_RTS);
}

/*
 * A snapshot of a (its VM stops, then runs again): the requests in flight
 * either way are given back, not executed, while a is paused, and run
 * exactly once after it resumes.
 */
static void test_pause_resume(void)
{
    X x;
    uint8_t data[P_LEN];

    x_setup(&x, 7);
    pause_traffic(&x, data);
    pause_a(&x);
    PUMP(&x.a, &x.b);
    paused_state(&x, &x.sa);
    g_assert_true(reaches(&x.b, x.a.gid));
    pvrdma_core_resume(&x.a.d.c);
    PUMP(&x.a, &x.b);
    resumed_state(&x, &x.sa, data);
    x_fini(&x);
}

/*
 * a migrates to a2, a new QEMU on the same host: a pauses, its state is
 * saved, a2 joins the directory and loads it, a says MOVED and goes.  b
 * waits meanwhile (no error) and then works with a2 as with a: same QP
 * numbers and keys, every request exactly once.
 */
static void test_moved(void)
{
    X x;
    Vm a2;
    Side sa2;
    uint8_t data[P_LEN];
    GByteArray *st = g_byte_array_new();
    Error *err = NULL;

    x_setup(&x, 7);
    pause_traffic(&x, data);
    pause_a(&x);
    PUMP(&x.a, &x.b);
    paused_state(&x, &x.sa);
    pvrdma_core_save(&x.a.d.c, st);

    /* the destination: the guest's RAM and the driver's view come along */
    vm_create(&a2, x.e.dir, 1, NULL);
    vm_take_guest(&a2, &x.a);
    PUMP(&a2, &x.a, &x.b);
    g_assert_cmpuint(peers(&a2), ==, 2);

    pvrdma_core_moved(&x.a.d.c);
    PUMP(&a2, &x.a, &x.b);
    g_assert_cmpuint(peers(&x.b), ==, 1);      /* a2 only */
    g_assert_true(reaches(&x.b, x.a.gid));     /* waiting for a2 */
    vm_fini(&x.a);
    /* a receive doorbell on b wakes its senders: b1 still waits */
    pvrdma_transport_wake_senders(&x.b.d.c);
    PUMP(&x.b);
    g_assert_true(side_qp(&x.sb)->paused);
    g_assert_cmpint(side_qp(&x.sb)->hold_until, ==, 0);
    expect_cq_empty(&x.b.d, &x.sb.cq);
    g_assert_cmpuint(qp_state(&x.sb), ==, PVRDMA_QPS_RTS);

    g_assert_true(pvrdma_core_load(&a2.d.c, st->data, st->len, &err));
    PUMP(&a2, &x.b);
    sa2 = x.sa;
    sa2.v = &a2;
    resumed_state(&x, &sa2, data);
    expect_cq_empty(&a2.d, &sa2.cq);
    g_byte_array_free(st, true);
    vm_fini(&a2);
    vm_fini(&x.b);
    env_fini(&x.e);
}

/*
 * a moves and nobody takes its place: b's requests wait the grace time
 * (10 s), then nobody answers them: RETRY_EXC_ERR after b's retry window.
 */
static void test_moved_no_successor(void)
{
    X x;
    uint8_t data[P_LEN];

    x_setup(&x, 7);
    pause_traffic(&x, data);
    pause_a(&x);
    pvrdma_core_moved(&x.a.d.c);
    PUMP(&x.a, &x.b);
    vm_fini(&x.a);
    PUMP(&x.b);
    g_assert_cmpuint(peers(&x.b), ==, 0);
    g_assert_true(reaches(&x.b, x.a.gid));
    x.b.d.h.now += 9999;
    pvrdma_transport_wake_senders(&x.b.d.c);
    PUMP(&x.b);
    g_assert_true(side_qp(&x.sb)->paused);
    expect_cq_empty(&x.b.d, &x.sb.cq);
    g_assert_true(reaches(&x.b, x.a.gid));
    x.b.d.h.now += 1;
    PUMP(&x.b);
    g_assert_false(reaches(&x.b, x.a.gid));
    pass_retry_window(&x.sb);
    side_expect_cqe(&x.sb, 0xb1, PVRDMA_WC_RETRY_EXC_ERR, PVRDMA_WC_SEND, 0);
    g_assert_cmpuint(qp_state(&x.sb), ==, PVRDMA_QPS_ERR);
    vm_fini(&x.b);
    env_fini(&x.e);
}

/*
 * a's migration fails at its very end: a2 loaded a's state (announcing
 * a's GIDs, which b refuses while a is paused), then a is cancelled and
 * runs again (RESUME).  Two QEMUs may now run one VM: b says so in the
 * host log, naming both, and keeps a as the owner (first owner wins: a
 * request from b goes to a).  Once a is gone, a2 owns the GIDs.
 */
static void test_resumed_with_rival(void)
{
    X x;
    Vm a2;
    Side sa2;
    GByteArray *st = g_byte_array_new();
    uint8_t data[P_LEN], got[P_LEN];
    struct pvrdma_sge g, r;
    Error *err = NULL;
    const char *log;

    x_setup(&x, 7);
    pause_a(&x);
    PUMP(&x.a, &x.b);
    pvrdma_core_save(&x.a.d.c, st);
    vm_create(&a2, x.e.dir, 1, NULL);
    vm_take_guest(&a2, &x.a);
    g_assert_true(pvrdma_core_load(&a2.d.c, st->data, st->len, &err));
    PUMP(&a2, &x.a, &x.b);
    g_assert_cmpuint(peers(&x.b), ==, 2);

    g_assert_null(fh_host_log);
    fh_host_log = g_string_new(NULL);
    pvrdma_core_resume(&x.a.d.c);
    PUMP(&a2, &x.a, &x.b);
    log = fh_host_log->str;
    g_assert_nonnull(strstr(log, "two QEMUs may run one VM"));
    /* "co-resident peer <a> runs again while peer <a2> announces..." */
    g_assert_true(g_regex_match_simple("peer (\\S+\\.sock) \\(pid [0-9]+\\) "
                                       "runs again while peer (?!\\1)\\S+"
                                       "\\.sock \\(pid [0-9]+\\) announces",
                                       log, 0, 0));
    g_string_free(fh_host_log, true);
    fh_host_log = NULL;

    /* b's SEND goes to a, not to a2 */
    sa2 = x.sa;
    sa2.v = &a2;
    fill_pattern(data, P_LEN, 5);
    mr_write(&x.b.d, &x.sb.mr, S_IOVA, data, P_LEN);
    r = mr_sge(&x.sa, 0, P_LEN);
    post_recv(&x.a.d, &x.sa.qp, 0xa0, &r, 1);
    post_recv(&a2.d, &sa2.qp, 0xa0, &r, 1);
    g = mr_sge(&x.sb, 0, P_LEN);
    send_wqe(&x.sb, 0xb1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&a2, &x.a, &x.b);
    side_expect_cqe(&x.sb, 0xb1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, P_LEN);
    side_expect_cqe(&x.sa, 0xa0, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, P_LEN);
    expect_cq_empty(&a2.d, &sa2.cq);

    /* a goes: a2 owns the GIDs, and b's next SEND lands there */
    vm_fini(&x.a);
    PUMP(&a2, &x.b);
    g_assert_cmpuint(peers(&x.b), ==, 1);
    send_wqe(&x.sb, 0xb2, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&a2, &x.b);
    side_expect_cqe(&x.sb, 0xb2, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, P_LEN);
    side_expect_cqe(&sa2, 0xa0, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, P_LEN);
    mr_read(&a2.d, &sa2.mr, S_IOVA, got, P_LEN);
    g_assert_cmpmem(got, P_LEN, data, P_LEN);
    g_byte_array_free(st, true);
    vm_fini(&a2);
    vm_fini(&x.b);
    env_fini(&x.e);
}

/* An Ethernet segment for VMs that also have RoCEv2: lossless, in order. */
struct Wire {
    GQueue frames;          /* GByteArray */
    uint64_t sent;
};

static void wire_tx(void *opaque, const uint8_t *frame, size_t len)
{
    Vm *v = opaque;

    g_queue_push_tail(&v->wire->frames,
                      g_byte_array_append(g_byte_array_new(), frame, len));
    v->wire->sent++;
}

/* vm_create(), then RoCEv2 on wire, last in the list as in QEMU. */
static void vm_create_roce(Vm *v, const char *dir, uint8_t id, Wire *w)
{
    vm_create(v, dir, id, NULL);
    v->wire = w;
    v->d.h.frame_tx = wire_tx;
    v->d.h.frame_tx_arg = v;
    v->rt = pvrdma_roce_new(&v->d.c);
    g_assert_nonnull(v->rt);
    g_assert_true(pvrdma_core_add_transport(&v->d.c, v->rt));
}

/*
 * Run VMs v[n] until nothing is left to do on their sockets or the wire;
 * with step_ms, also let their clocks go on by step_ms that many times
 * (retransmissions).
 */
static void wire_run(Wire *w, Vm *const *v, unsigned n, unsigned steps,
                     int64_t step_ms)
{
    for (unsigned k = 0; k <= steps; k++) {
        for (unsigned round = 0; round < 10000; round++) {
            FakeHost *h[4];
            GByteArray *f;

            g_assert_cmpuint(n, <=, G_N_ELEMENTS(h));
            for (unsigned i = 0; i < n; i++) {
                h[i] = &v[i]->d.h;
            }
            g_assert_true(fh_pump(h, n, 20000));
            if (!w->frames.length) {
                break;
            }
            while ((f = g_queue_pop_head(&w->frames))) {
                for (unsigned i = 0; i < n; i++) {
                    pvrdma_roce_rx(v[i]->rt, f->data, f->len);
                }
                g_byte_array_free(f, true);
            }
        }
        for (unsigned i = 0; k < steps && i < n; i++) {
            v[i]->d.h.now += step_ms;
        }
    }
}

/* a and b connected as rc_connect() does, with MACs for the wire. */
static void rc_connect_wire(Side *a, Side *b)
{
    rc_to_rts_mac(&a->v->d, &a->qp, b->qp.qpn, b->v->gid, b->v->d.h.mac, 7);
    rc_to_rts_mac(&b->v->d, &b->qp, a->qp.qpn, a->v->gid, a->v->d.h.mac, 7);
}

static const char *side_transport(Side *s)
{
    PvrdmaQP *qp = side_qp(s);

    return qp->tp ? qp->tp->ops->name : "none";
}

/* The end of a test on a Wire: frames left on it go, both directories. */
static void away_fini(Wire *w, Env *e2, Env *e)
{
    g_queue_clear_full(&w->frames, (GDestroyNotify)g_byte_array_unref);
    env_fini(e2);
    env_fini(e);
}

/* Two co-resident VMs with RoCEv2 on w, RC QPs connected co-resident. */
static void away_setup(X *x, Wire *w, Env *e2)
{
    env_init(&x->e);
    env_init(e2);
    vm_create_roce(&x->a, x->e.dir, 1, w);
    vm_create_roce(&x->b, x->e.dir, 2, w);
    for (unsigned i = 0; i < 2; i++) {
        Dev *d = i ? &x->b.d : &x->a.d;

        dev_write_dsr(d);
        pvrdma_core_reg_write(&d->c, PVRDMA_REG_CTL,
                              PVRDMA_DEVICE_CTL_ACTIVATE);
        pvrdma_core_reg_write(&d->c, PVRDMA_REG_IMR, 0);
    }
    vm_up(&x->a);
    vm_up(&x->b);
    PUMP(&x->a, &x->b);
    side_init(&x->sa, &x->a, PVRDMA_QPT_RC);
    side_init(&x->sb, &x->b, PVRDMA_QPT_RC);
    rc_connect_wire(&x->sa, &x->sb);
    g_assert_cmpstr(side_transport(&x->sa), ==, "coresident");
    g_assert_cmpstr(side_transport(&x->sb), ==, "coresident");
}

/*
 * a's state st goes to a2 in e2, as on another host (no co-resident peer
 * there): a2's QP (*sa2) takes RoCEv2 at the load.
 */
static void away_dest(X *x, Vm *a2, Side *sa2, Env *e2, Wire *w,
                      GByteArray *st)
{
    Error *err = NULL;

    vm_create_roce(a2, e2->dir, 1, w);
    vm_take_guest(a2, &x->a);
    g_assert_true(pvrdma_core_load(&a2->d.c, st->data, st->len, &err));
    g_assert_null(err);
    *sa2 = x->sa;
    sa2->v = a2;
    g_assert_cmpstr(side_transport(sa2), ==, "roce");
}

/*
 * a migrates to a2 on another host (another rendezvous directory), so b
 * cannot reach a2 co-resident; all three have RoCEv2 on one wire.  The
 * co-resident transport counted the PSNs the wire would have taken; a2's QP
 * takes RoCEv2 at its load with them and says so on the wire; b's QP
 * follows once a said MOVED (not before: a's answers could still be on
 * their way).  Every request runs exactly once, before and after.
 */
static void test_moved_away(void)
{
    static const WantCqe before_a[] = {
        { 0xa10, PVRDMA_WC_SEND, 3000 },
        { 0xa11, PVRDMA_WC_RDMA_READ, 5000 },
        { 0xa12, PVRDMA_WC_RECV, 64 },
    };
    static const WantCqe before_b[] = {
        { 0xb10, PVRDMA_WC_RECV, 3000 },
        { 0xb11, PVRDMA_WC_SEND, 64 },
    };
    Wire w = { G_QUEUE_INIT };
    Env e2;
    X x;
    Vm a2;
    Side sa2;
    uint8_t data[P_LEN], big[5000], got[5000];
    GByteArray *st = g_byte_array_new();
    struct pvrdma_sge g;

    away_setup(&x, &w, &e2);

    /* done before the move: a SEND of 3 packets, a READ of 5, b's SEND */
    fill_pattern(big, sizeof(big), 9);
    mr_write(&x.a.d, &x.sa.mr, S_IOVA + 16384, big, 3000);
    mr_write(&x.b.d, &x.sb.mr, S_IOVA + 24576, big, 5000);
    g = mr_sge(&x.sb, 32768, 3000);
    post_recv(&x.b.d, &x.sb.qp, 0xb10, &g, 1);
    g = mr_sge(&x.sa, 16384, 3000);
    send_wqe(&x.sa, 0xa10, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    g = mr_sge(&x.sa, 24576, 5000);
    rdma_wqe(&x.sa, 0xa11, PVRDMA_WR_RDMA_READ, &g, 1, S_IOVA + 24576,
             x.sb.mr.rkey, 0);
    g = mr_sge(&x.sa, 40960, 64);
    post_recv(&x.a.d, &x.sa.qp, 0xa12, &g, 1);
    g = mr_sge(&x.sb, 40960, 64);
    send_wqe(&x.sb, 0xb11, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a, &x.b);
    side_expect_set(&x.sa, before_a, G_N_ELEMENTS(before_a));
    side_expect_set(&x.sb, before_b, G_N_ELEMENTS(before_b));
    mr_read(&x.a.d, &x.sa.mr, S_IOVA + 24576, got, 5000);
    g_assert_cmpmem(got, 5000, big, 5000);
    /* what the wire would have counted (MTU 1024), at both ends */
    g_assert_cmphex(side_qp(&x.sa)->attr.sq_psn, ==, 0x1234 + 3 + 5);
    g_assert_cmphex(side_qp(&x.sb)->attr.rq_psn, ==, 0x1234 + 3 + 5);
    g_assert_cmphex(side_qp(&x.sb)->attr.sq_psn, ==, 0x1234 + 1);
    g_assert_cmphex(side_qp(&x.sa)->attr.rq_psn, ==, 0x1234 + 1);

    pause_traffic(&x, data);
    pause_a(&x);
    PUMP(&x.a, &x.b);
    paused_state(&x, &x.sa);
    pvrdma_core_save(&x.a.d.c, st);

    away_dest(&x, &a2, &sa2, &e2, &w, st);
    /* its announcement: an ACK of all b sent before the move */
    g_assert_cmpuint(w.frames.length, ==, 1);
    {
        GByteArray *f = g_queue_peek_head(&w.frames);
        RocePkt p;

        g_assert_cmpint(roce_parse(f->data, f->len, &p), ==, ROCE_OK);
        g_assert_cmphex(p.opcode, ==, ROCE_RC_ACKNOWLEDGE);
        g_assert_cmpuint(p.dqpn, ==, x.sb.qp.qpn);
        g_assert_cmphex(p.psn, ==, 0x1234 + 1 - 1);
    }
    /* a2 speaks first: b hears it, but a has not said MOVED yet */
    wire_run(&w, (Vm *const[]) { &a2, &x.b }, 2, 0, 0);
    g_assert_cmpuint(w.sent, >, 0);
    g_assert_cmpstr(side_transport(&x.sb), ==, "coresident");
    g_assert_true(side_qp(&x.sb)->heard_on == x.b.rt);

    pvrdma_core_moved(&x.a.d.c);
    PUMP(&x.a, &x.b);
    vm_fini(&x.a);
    g_assert_cmpstr(side_transport(&x.sb), ==, "roce");
    {
        /* the management program hears it (PVRDMA_PATH_CHANGED) */
        g_autofree char *r = g_strdup_printf("path %u coresident roce",
                                             x.sb.qp.qpn);

        g_assert_cmpuint(fh_reports(&x.b.d.h, r), ==, 1);
    }
    /* a2's first tries went to a b still waiting: they go again */
    wire_run(&w, (Vm *const[]) { &a2, &x.b }, 2, 20, 50);
    resumed_state(&x, &sa2, data);
    expect_cq_empty(&a2.d, &sa2.cq);

    /* and they go on over RoCEv2 */
    g = mr_sge(&x.sb, 32768, 3000);
    post_recv(&x.b.d, &x.sb.qp, 0xb20, &g, 1);
    g = mr_sge(&sa2, 16384, 3000);
    send_wqe(&sa2, 0xa20, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    wire_run(&w, (Vm *const[]) { &a2, &x.b }, 2, 0, 0);
    side_expect_cqe(&sa2, 0xa20, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 3000);
    side_expect_cqe(&x.sb, 0xb20, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 3000);
    mr_read(&x.b.d, &x.sb.mr, S_IOVA + 32768, got, 3000);
    g_assert_cmpmem(got, 3000, big, 3000);

    g_byte_array_free(st, true);
    vm_fini(&a2);
    vm_fini(&x.b);
    away_fini(&w, &e2, &x.e);
}

/*
 * As moved-away, but b never hears a2 (its announcement is lost, and a2
 * has nothing to send): b's SEND, given back at the pause, waits the 10 s
 * a moved peer gets, then b's QP takes RoCEv2 by itself and the SEND runs
 * once there.
 */
static void test_moved_away_silent(void)
{
    static const WantCqe wb[] = {
        { 0xb1, PVRDMA_WC_SEND, P_LEN },
    };
    Wire w = { G_QUEUE_INIT };
    Env e2;
    X x;
    Vm a2;
    Side sa2;
    uint8_t data[P_LEN], got[P_LEN];
    GByteArray *st = g_byte_array_new();
    struct pvrdma_sge g;

    away_setup(&x, &w, &e2);
    fill_pattern(data, P_LEN, 5);
    mr_write(&x.b.d, &x.sb.mr, S_IOVA + 4096, data, P_LEN);
    g = mr_sge(&x.sb, 4096, P_LEN);
    send_wqe(&x.sb, 0xb1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a, &x.b);
    pause_a(&x);
    PUMP(&x.a, &x.b);
    g = mr_sge(&x.sa, 8192, P_LEN);
    post_recv(&x.a.d, &x.sa.qp, 0xa0, &g, 1);
    PUMP(&x.a, &x.b);
    pvrdma_core_save(&x.a.d.c, st);
    away_dest(&x, &a2, &sa2, &e2, &w, st);
    g_queue_clear_full(&w.frames, (GDestroyNotify)g_byte_array_unref);
    pvrdma_core_moved(&x.a.d.c);
    PUMP(&x.a, &x.b);
    vm_fini(&x.a);
    g_assert_true(side_qp(&x.sb)->paused);
    g_assert_null(side_qp(&x.sb)->heard_on);

    x.b.d.h.now += 9999;
    wire_run(&w, (Vm *const[]) { &a2, &x.b }, 2, 0, 0);
    g_assert_cmpstr(side_transport(&x.sb), ==, "coresident");
    expect_cq_empty(&x.b.d, &x.sb.cq);
    x.b.d.h.now += 1;
    wire_run(&w, (Vm *const[]) { &a2, &x.b }, 2, 0, 0);
    g_assert_cmpstr(side_transport(&x.sb), ==, "roce");
    side_expect_set(&x.sb, wb, G_N_ELEMENTS(wb));
    side_expect_cqe(&sa2, 0xa0, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, P_LEN);
    mr_read(&a2.d, &sa2.mr, S_IOVA + 8192, got, P_LEN);
    g_assert_cmpmem(got, P_LEN, data, P_LEN);
    g_assert_cmpuint(qp_state(&x.sb), ==, PVRDMA_QPS_RTS);

    g_byte_array_free(st, true);
    vm_fini(&a2);
    vm_fini(&x.b);
    away_fini(&w, &e2, &x.e);
}

/*
 * a, in its own rendezvous directory e2, connected to b over RoCEv2 (a
 * SEND of 3 packets done), migrates to a2 (*sa2) next to b: a2's QP stays
 * on RoCEv2 (its transport record).
 */
static void home_setup_features(X *x, Wire *w, Env *e2, Vm *a2, Side *sa2,
                                uint64_t fb, uint64_t fa2)
{
    uint8_t big[3000];
    GByteArray *st = g_byte_array_new();
    struct pvrdma_sge g;
    Error *err = NULL;

    env_init(&x->e);
    env_init(e2);
    vm_create_roce(&x->a, e2->dir, 1, w);
    g_features = fb;
    vm_create_roce(&x->b, x->e.dir, 2, w);
    g_features = CR_F_ALL;
    for (unsigned i = 0; i < 2; i++) {
        Dev *d = i ? &x->b.d : &x->a.d;

        dev_write_dsr(d);
        pvrdma_core_reg_write(&d->c, PVRDMA_REG_CTL,
                              PVRDMA_DEVICE_CTL_ACTIVATE);
        pvrdma_core_reg_write(&d->c, PVRDMA_REG_IMR, 0);
    }
    vm_up(&x->a);
    vm_up(&x->b);
    side_init(&x->sa, &x->a, PVRDMA_QPT_RC);
    side_init(&x->sb, &x->b, PVRDMA_QPT_RC);
    rc_connect_wire(&x->sa, &x->sb);
    g_assert_cmpstr(side_transport(&x->sa), ==, "roce");
    g_assert_cmpstr(side_transport(&x->sb), ==, "roce");

    /* over the wire first: a SEND of 3 packets */
    fill_pattern(big, sizeof(big), 11);
    mr_write(&x->a.d, &x->sa.mr, S_IOVA + 16384, big, 3000);
    g = mr_sge(&x->sb, 32768, 3000);
    post_recv(&x->b.d, &x->sb.qp, 0xb10, &g, 1);
    g = mr_sge(&x->sa, 16384, 3000);
    send_wqe(&x->sa, 0xa10, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    wire_run(w, (Vm *const[]) { &x->a, &x->b }, 2, 0, 0);
    side_expect_cqe(&x->sa, 0xa10, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 3000);
    side_expect_cqe(&x->sb, 0xb10, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 3000);

    /* a comes to b's host */
    g_assert_true(pvrdma_core_quiesce(&x->a.d.c, 1000));
    pvrdma_core_save(&x->a.d.c, st);
    g_features = fa2;
    vm_create_roce(a2, x->e.dir, 1, w);
    g_features = CR_F_ALL;
    vm_take_guest(a2, &x->a);
    PUMP(a2, &x->b);
    g_assert_true(pvrdma_core_load(&a2->d.c, st->data, st->len, &err));
    g_assert_null(err);
    pvrdma_core_moved(&x->a.d.c);
    vm_fini(&x->a);
    *sa2 = x->sa;
    sa2->v = a2;
    PUMP(a2, &x->b);
    g_assert_true(reaches(&x->b, x->a.gid));
    /* its transport record */
    g_assert_cmpstr(side_transport(sa2), ==, "roce");

    g_byte_array_free(st, true);
}

static void home_setup(X *x, Wire *w, Env *e2, Vm *a2, Side *sa2)
{
    home_setup_features(x, w, e2, a2, sa2, CR_F_ALL, CR_F_ALL);
}

static void test_moved_home(void)
{
    static const WantCqe wa[] = {
        { 0xa20, PVRDMA_WC_SEND, 3000 },
        { 0xa21, PVRDMA_WC_RECV, 64 },
    };
    static const WantCqe wb[] = {
        { 0xb20, PVRDMA_WC_RECV, 3000 },
        { 0xb21, PVRDMA_WC_SEND, 64 },
    };
    Wire w = { G_QUEUE_INIT };
    Env e2;
    X x;
    Vm a2;
    Side sa2;
    uint8_t big[3000], got[3000];
    struct pvrdma_sge g;
    uint32_t psn_a, psn_b;

    home_setup(&x, &w, &e2, &a2, &sa2);
    fill_pattern(big, sizeof(big), 11);     /* what a2's MR holds */

    /* both send at once: their offers cross, one answers, both move */
    g = mr_sge(&x.sb, 32768, 3000);
    post_recv(&x.b.d, &x.sb.qp, 0xb20, &g, 1);
    g = mr_sge(&sa2, 0, 64);
    post_recv(&a2.d, &sa2.qp, 0xa21, &g, 1);
    g = mr_sge(&sa2, 16384, 3000);
    send_wqe(&sa2, 0xa20, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    g = mr_sge(&x.sb, 0, 64);
    send_wqe(&x.sb, 0xb21, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    wire_run(&w, (Vm *const[]) { &a2, &x.b }, 2, 0, 0);
    g_assert_cmpstr(side_transport(&sa2), ==, "coresident");
    g_assert_cmpstr(side_transport(&x.sb), ==, "coresident");
    side_expect_set(&sa2, wa, G_N_ELEMENTS(wa));
    side_expect_set(&x.sb, wb, G_N_ELEMENTS(wb));
    mr_read(&x.b.d, &x.sb.mr, S_IOVA + 32768, got, 3000);
    g_assert_cmpmem(got, 3000, big, 3000);
    /* the PSNs went on from where the wire left them, and agree */
    psn_a = side_qp(&sa2)->attr.sq_psn;
    psn_b = side_qp(&x.sb)->attr.rq_psn;
    g_assert_cmphex(psn_a, ==, psn_b);
    g_assert_cmphex(psn_a, ==, 0x1234 + 3 + 3);
    g_assert_cmphex(side_qp(&x.sb)->attr.sq_psn, ==, 0x1234 + 1);
    g_assert_cmphex(side_qp(&sa2)->attr.rq_psn, ==, 0x1234 + 1);
    expect_cq_empty(&a2.d, &sa2.cq);
    expect_cq_empty(&x.b.d, &x.sb.cq);

    vm_fini(&a2);
    vm_fini(&x.b);
    away_fini(&w, &e2, &x.e);
}

/*
 * The way back needs OFFER on both sides (CR_F_OFFER): where b's or a2's
 * build lacks it, a's RC QP, now on b's host, stays on RoCEv2 and works
 * there; nothing waits for an answer that cannot come.
 */
static void offer_missing_run(uint64_t fb, uint64_t fa2)
{
    Wire w = { G_QUEUE_INIT };
    Env e2;
    X x;
    Vm a2;
    Side sa2;
    uint8_t big[3000], got[3000];
    struct pvrdma_sge g;
    uint64_t sent;

    home_setup_features(&x, &w, &e2, &a2, &sa2, fb, fa2);
    g_assert_cmphex(pvrdma_coresident_peer_features(a2.t, 0), ==, fb & fa2);
    g_assert_cmphex(pvrdma_coresident_peer_features(x.b.t, 0), ==, fb & fa2);
    fill_pattern(big, sizeof(big), 11);     /* what a2's MR holds */
    sent = w.sent;
    g = mr_sge(&x.sb, 32768, 3000);
    post_recv(&x.b.d, &x.sb.qp, 0xb20, &g, 1);
    g = mr_sge(&sa2, 16384, 3000);
    send_wqe(&sa2, 0xa20, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    g_assert_null(side_qp(&sa2)->offer_to);
    wire_run(&w, (Vm *const[]) { &a2, &x.b }, 2, 0, 0);
    g_assert_cmpuint(w.sent, >, sent);
    g_assert_cmpstr(side_transport(&sa2), ==, "roce");
    g_assert_cmpstr(side_transport(&x.sb), ==, "roce");
    side_expect_cqe(&sa2, 0xa20, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 3000);
    side_expect_cqe(&x.sb, 0xb20, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 3000);
    mr_read(&x.b.d, &x.sb.mr, S_IOVA + 32768, got, 3000);
    g_assert_cmpmem(got, 3000, big, 3000);

    vm_fini(&a2);
    vm_fini(&x.b);
    away_fini(&w, &e2, &x.e);
}

static void test_features_no_offer(void)
{
    offer_missing_run(CR_F_RINGS, CR_F_ALL);
    offer_missing_run(CR_F_ALL, CR_F_RINGS);
}

/*
 * a2 offers b the way back and holds its SEND for the answer, but b's
 * QEMU goes before it answers: the offer ends with the connection to b and
 * the SEND goes on over RoCEv2, where nobody answers it either
 * (RETRY_EXC_ERR after the retries), instead of waiting for ever.
 */
static void test_offer_peer_gone(void)
{
    Wire w = { G_QUEUE_INIT };
    Env e2;
    X x;
    Vm a2;
    Side sa2;
    struct pvrdma_sge g;
    FakeHost *h = &a2.d.h;

    home_setup(&x, &w, &e2, &a2, &sa2);
    g = mr_sge(&sa2, 0, 64);
    send_wqe(&sa2, 0xa30, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    g_assert_true(fh_pump(&h, 1, 20000));
    g_assert_true(side_qp(&sa2)->offer_to == a2.t);
    g_assert_true(side_qp(&sa2)->paused);
    g_assert_cmpuint(w.frames.length, ==, 0);

    vm_fini(&x.b);
    wire_run(&w, (Vm *const[]) { &a2 }, 1, 0, 0);
    g_assert_null(side_qp(&sa2)->offer_to);
    g_assert_cmpstr(side_transport(&sa2), ==, "roce");
    g_assert_cmpuint(w.frames.length, ==, 0);  /* wire_run delivered them */
    g_assert_cmpuint(w.sent, >, 0);
    /* retry_cnt 7 at 67 ms, the timer doubling up to 4x: about 1.8 s */
    wire_run(&w, (Vm *const[]) { &a2 }, 1, 50, 50);
    side_expect_cqe(&sa2, 0xa30, PVRDMA_WC_RETRY_EXC_ERR, PVRDMA_WC_SEND, 0);

    vm_fini(&a2);
    away_fini(&w, &e2, &x.e);
}

/*
 * A consumer that does not take: the device's answers fill the fake's
 * ring, the rest waits in the device (want_space); each time the fake
 * has taken what is there it sends ROOM, and in the end every answer
 * came, once, in order.
 */
static void test_ring_backlog(void)
{
    const unsigned n = 50000, batch = 5000;
    Env e;
    Vm a;
    Fake f;
    char *path;
    unsigned next = 1, rooms = 0;
    CrHdr room = { CR_ROOM, sizeof(room) };

    path = ring_peer_up(&e, &a, &f);
    /* requests for a QP a does not have: each gets an answer */
    for (unsigned i = 1; i <= n; i++) {
        CrReqMsg *m = req_msg(i, PVRDMA_WR_RDMA_WRITE, 0xabcd, NULL, 0, 0, 0);

        fake_send(&f, m, m->h.len, -1);
        g_free(m);
        if (i % batch == 0) {
            PUMP(&a);
        }
    }
    PUMP(&a);
    g_assert_cmpuint(peers(&a), ==, 1);
    /* far more than the ring holds: the device waits for room */
    g_assert_cmpuint(n * sizeof(CrRespMsg), >, CR_RING_SIZE);
    g_assert_true(__atomic_load_n(&fake_idx(&f, 1)->want_space,
                                  __ATOMIC_SEQ_CST));
    while (next <= n) {
        CrRespMsg m;
        int fd;
        ssize_t k = fake_recv(&f, &m, sizeof(m), &fd);

        if (k < 0) {
            /* all taken: ROOM if it waits for room (it must, or it is over) */
            g_assert_true(__atomic_exchange_n(&fake_idx(&f, 1)->want_space, 0,
                                              __ATOMIC_SEQ_CST));
            g_assert_cmpint(fh_sendmsg(f.fd, &room, sizeof(room), -1,
                                       MSG_NOSIGNAL), ==, sizeof(room));
            rooms++;
            PUMP(&a);
            continue;
        }
        g_assert_cmpint(k, ==, sizeof(m));
        g_assert_cmpuint(m.h.type, ==, CR_RESP);
        g_assert_cmpuint(m.cookie, ==, next);
        g_assert_cmpint(m.status, ==, PVRDMA_TRANSPORT_NO_RESPONDER);
        next++;
    }
    g_assert_cmpuint(rooms, >, 0);
    g_assert_cmpint(fake_recv(&f, &room, sizeof(room), &(int) { 0 }), ==, -1);
    g_assert_cmpuint(peers(&a), ==, 1);
    fake_close(&f);
    g_free(path);
    vm_fini(&a);
    env_fini(&e);
}

void cr_add_pause_tests(void)
{
    g_test_add_func("/pvrdma/cr/features/no-offer", test_features_no_offer);
    g_test_add_func("/pvrdma/cr/pause-resume", test_pause_resume);
    g_test_add_func("/pvrdma/cr/moved", test_moved);
    g_test_add_func("/pvrdma/cr/resumed-with-rival",
                    test_resumed_with_rival);
    g_test_add_func("/pvrdma/cr/moved-no-successor",
                    test_moved_no_successor);
    g_test_add_func("/pvrdma/cr/moved-away", test_moved_away);
    g_test_add_func("/pvrdma/cr/moved-away-silent", test_moved_away_silent);
    g_test_add_func("/pvrdma/cr/moved-home", test_moved_home);
    g_test_add_func("/pvrdma/cr/offer-peer-gone", test_offer_peer_gone);
    g_test_add_func("/pvrdma/cr/ring-backlog", test_ring_backlog);
}
