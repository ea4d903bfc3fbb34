/*
 * The transport contract's transport choice (hw/rdma/core/pvrdma_transport.c):
 * an RC QP takes its transport at RTR and keeps it until reset (qp_attach /
 * qp_detach), a refused attach fails MODIFY_QP and leaves the QP as it was,
 * a QP no transport reached at RTR is tried again at its first request, UD
 * chooses per request, and the transport list refuses a second owner, a
 * second GSI agent and one transport more than PVRDMA_MAX_TRANSPORTS.
 *
 * A probe transport plays a peer: it reaches one GID the device does not
 * have, counts its hooks and delivers to this device's own responder, so
 * the data a test sends through it can be compared like loopback's.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "fake-driver.h"
#include "fake-hca.h"
#include "hw/rdma/pvrdma_transport_calls.h"
#include "hw/rdma/pvrdma_info.h"

static const uint8_t probe_gid[16] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 9, 9, 9
};

typedef struct Probe {
    PvrdmaTransport t;      /* first member */
    bool reach;             /* reaches probe_gid now */
    int attach_err;         /* qp_attach answers this */
    int attached, detached, executed;
    int reached;            /* calls of reaches */
    uint32_t last_qpn;
} Probe;

static Probe *probe_of(PvrdmaTransport *t)
{
    return (Probe *)t;
}

static bool probe_reaches(PvrdmaTransport *t, const uint8_t dgid[16])
{
    probe_of(t)->reached++;
    return probe_of(t)->reach && !memcmp(dgid, probe_gid, 16);
}

static int probe_attach(PvrdmaTransport *t, PvrdmaQP *qp)
{
    Probe *p = probe_of(t);

    if (p->attach_err) {
        return -p->attach_err;
    }
    p->attached++;
    p->last_qpn = qp->qpn;
    qp->tp_state = p;       /* per-QP state: checked at detach */
    return 0;
}

static void probe_detach(PvrdmaTransport *t, PvrdmaQP *qp)
{
    g_assert_true(qp->tp_state == probe_of(t));
    probe_of(t)->detached++;
}

static int probe_execute(PvrdmaTransport *t, PvrdmaReq *req)
{
    probe_of(t)->executed++;
    return pvrdma_responder(t->core, req);
}

static void probe_destroy(PvrdmaTransport *t)
{
}

static const PvrdmaMessageOps probe_msg = {
    .execute = probe_execute,
};

static const PvrdmaTransportOps probe_ops = {
    .name = "probe",
    .reaches = probe_reaches,
    .qp_attach = probe_attach,
    .qp_detach = probe_detach,
    .destroy = probe_destroy,       /* static: not g_free()d */
    .msg = &probe_msg,
};

/* a transport that keeps connection state (RoCEv2): always idle here */
static bool probe_idle(PvrdmaTransport *t, PvrdmaQP *qp, uint32_t *sq_psn,
                       uint32_t *rq_psn)
{
    *sq_psn = *rq_psn = 0;
    return true;
}

typedef struct Fx {
    Dev d;
    Probe probe;
    uint32_t pd;
    TCq cq;
    TQp a, b;
    TMr mr;
} Fx;

#define FX_IOVA 0x20000ull

/* With owner (not NULL): a scripted host HCA owns the objects. */
static void fx_setup_owner(Fx *f, uint8_t type, FakeHca *owner)
{
    Dev *d = &f->d;

    dev_setup(d, NULL);
    f->probe = (Probe) { .t = { .ops = &probe_ops, .core = &d->c },
                         .reach = true };
    g_assert_true(pvrdma_core_add_transport(&d->c, &f->probe.t));
    if (owner) {
        fake_hca_init(owner, &d->c);
    }
    f->pd = create_pd(d, 0);
    bind_gid(d, 0, test_gid);
    create_cq(d, &f->cq, 64);
    create_qp(d, &f->a, f->pd, f->cq.handle, f->cq.handle, type);
    create_qp(d, &f->b, f->pd, f->cq.handle, f->cq.handle, type);
    create_mr(d, &f->mr, f->pd, FX_IOVA, 4 * FH_PAGE,
              PVRDMA_ACCESS_LOCAL_WRITE | RC_ACCESS);
}

static void fx_setup(Fx *f, uint8_t type)
{
    fx_setup_owner(f, type, NULL);
}

static PvrdmaQP *qp_of(Fx *f, TQp *q)
{
    return pvrdma_qp_get(&f->d.c, q->handle);
}

/* Send 700 bytes from 'from' into a receive of 'to'; compared. */
static void send_and_check(Fx *f, TQp *from, TQp *to, uint64_t wr_id,
                           uint32_t seed, const uint8_t *ud_dgid)
{
    Dev *d = &f->d;
    uint8_t data[700], got[700 + 40];
    uint32_t grh = ud_dgid ? 40 : 0;
    struct pvrdma_sge ss = { FX_IOVA, sizeof(data), f->mr.lkey };
    struct pvrdma_sge rs = { FX_IOVA + 2 * FH_PAGE, sizeof(got), f->mr.lkey };
    struct pvrdma_sq_wqe_hdr w = { 0 };
    struct pvrdma_cqe e;

    fill_pattern(data, sizeof(data), seed);
    mr_write(d, &f->mr, FX_IOVA, data, sizeof(data));
    post_recv(d, to, wr_id + 1, &rs, 1);
    w.wr_id = wr_id;
    w.opcode = PVRDMA_WR_SEND;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    if (ud_dgid) {
        w.wr.ud.remote_qpn = to->qpn;
        w.wr.ud.remote_qkey = 0x1111;
        memcpy(w.wr.ud.av.dgid, ud_dgid, 16);
    }
    post_send(d, from, &w, &ss, 1);
    run_all(d);
    g_assert_true(poll_cq(d, &f->cq, &e));
    g_assert_cmphex(e.wr_id, ==, wr_id + 1);
    g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
    g_assert_cmpuint(e.byte_len, ==, sizeof(data) + grh);
    g_assert_cmpuint(e.src_qp, ==, from->qpn);
    expect_cqe(d, &f->cq, wr_id, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND,
               sizeof(data), from->handle);
    mr_read(d, &f->mr, FX_IOVA + 2 * FH_PAGE, got, sizeof(data) + grh);
    g_assert_cmpmem(got + grh, sizeof(data), data, sizeof(data));
}

/* q goes to RTR and RTS towards dest at dgid */
static void to_rts(Fx *f, TQp *q, uint32_t dest, const uint8_t *dgid)
{
    rc_to_rts_gid(&f->d, q, dest, dgid, 7);
}

static void test_rc_at_rtr(void)
{
    Fx f;
    struct pvrdma_qp_attr at = { .qp_state = PVRDMA_QPS_RESET };

    fx_setup(&f, PVRDMA_QPT_RC);
    g_assert_null(qp_of(&f, &f.a)->tp);
    rc_to_init(&f.d, &f.a);
    g_assert_null(qp_of(&f, &f.a)->tp);         /* not before RTR */
    /* a reaches b through the probe, b reaches a through loopback */
    to_rts(&f, &f.a, f.b.qpn, probe_gid);
    to_rts(&f, &f.b, f.a.qpn, test_gid);
    g_assert_true(qp_of(&f, &f.a)->tp == &f.probe.t);
    g_assert_cmpstr(qp_of(&f, &f.b)->tp->ops->name, ==, "loopback");
    g_assert_cmpint(f.probe.attached, ==, 1);
    g_assert_cmpuint(f.probe.last_qpn, ==, f.a.qpn);

    send_and_check(&f, &f.a, &f.b, 0xa1, 1, NULL);
    g_assert_cmpint(f.probe.executed, ==, 1);
    send_and_check(&f, &f.b, &f.a, 0xb1, 2, NULL);
    g_assert_cmpint(f.probe.executed, ==, 1);   /* loopback's, not ours */

    /* the transport is kept: the probe no longer reaches, a still uses it */
    f.probe.reach = false;
    send_and_check(&f, &f.a, &f.b, 0xa3, 3, NULL);
    g_assert_cmpint(f.probe.executed, ==, 2);

    /* reset gives the QP back; the next RTR chooses again */
    g_assert_cmpuint(modify_qp(&f.d, &f.a, PVRDMA_QP_STATE, &at), ==, 0);
    g_assert_cmpint(f.probe.detached, ==, 1);
    g_assert_null(qp_of(&f, &f.a)->tp);
    g_assert_null(qp_of(&f, &f.a)->tp_state);
    f.probe.reach = true;
    to_rts(&f, &f.a, f.b.qpn, probe_gid);
    g_assert_cmpint(f.probe.attached, ==, 2);
    /* destroying a QP detaches it too */
    {
        union pvrdma_cmd_req req = { 0 };

        req.destroy_qp.qp_handle = f.a.handle;
        g_assert_cmpuint(dev_cmd(&f.d, &req, PVRDMA_CMD_DESTROY_QP, NULL),
                         ==, 0);
    }
    g_assert_cmpint(f.probe.detached, ==, 2);
    expect_cq_empty(&f.d, &f.cq);
    dev_fini(&f.d);
    g_assert_cmpint(f.probe.detached, ==, 2);   /* b never was ours */
}

/*
 * An idle RC QP on a transport with connection state asks whether a better
 * transport (co-resident) reaches its peer now, for the way back.  It asks
 * every transport's reaches hook, which may cost system calls (the host
 * HCA's opens a socket): at most once per PVRDMA_OFFER_RETRY_MS (100 ms),
 * not at every request.
 */
static void test_idle_asks_rarely(void)
{
    Fx f;
    PvrdmaTransportOps idle_ops = probe_ops;   /* the probe, with qp_idle */
    static const PvrdmaMoveOps idle_move = { .qp_idle = probe_idle };

    idle_ops.move = &idle_move;
    fx_setup(&f, PVRDMA_QPT_RC);
    f.probe.t.ops = &idle_ops;
    rc_to_init(&f.d, &f.a);
    to_rts(&f, &f.a, f.b.qpn, probe_gid);
    to_rts(&f, &f.b, f.a.qpn, test_gid);
    g_assert_true(qp_of(&f, &f.a)->tp == &f.probe.t);
    f.probe.reached = 0;
    for (int i = 0; i < 20; i++) {
        send_and_check(&f, &f.a, &f.b, 0xa0 + i, i, NULL);
    }
    g_assert_cmpint(f.probe.executed, ==, 20);
    g_assert_cmpint(f.probe.reached, ==, 1);    /* the first request */
    f.d.h.now += 100;
    send_and_check(&f, &f.a, &f.b, 0xc0, 40, NULL);
    send_and_check(&f, &f.a, &f.b, 0xc2, 41, NULL);
    g_assert_cmpint(f.probe.reached, ==, 2);    /* 100 ms later, once */
    dev_fini(&f.d);
}

static void test_attach_refused(void)
{
    Fx f;
    struct pvrdma_qp_attr at;
    union pvrdma_cmd_req req = { 0 };
    union pvrdma_cmd_resp rsp;

    fx_setup(&f, PVRDMA_QPT_RC);
    rc_to_init(&f.d, &f.a);
    f.probe.attach_err = EBUSY;
    rc_rtr_attrs_gid(&at, f.b.qpn, probe_gid);
    g_assert_cmpuint(modify_qp(&f.d, &f.a, RTR_MASK, &at), ==, EBUSY);
    /* the QP is as it was: INIT, no destination, no transport */
    req.query_qp.qp_handle = f.a.handle;
    req.query_qp.attr_mask = PVRDMA_QP_ATTR_MASK_ALL;
    g_assert_cmpuint(dev_cmd(&f.d, &req, PVRDMA_CMD_QUERY_QP, &rsp), ==, 0);
    g_assert_cmpuint(rsp.query_qp_resp.attrs.qp_state, ==, PVRDMA_QPS_INIT);
    g_assert_cmpuint(rsp.query_qp_resp.attrs.dest_qp_num, ==, 0);
    g_assert_cmpuint(rsp.query_qp_resp.attrs.rq_psn, ==, 0);
    g_assert_null(qp_of(&f, &f.a)->tp);
    g_assert_cmpint(f.probe.attached, ==, 0);
    /* accepted the next time */
    f.probe.attach_err = 0;
    g_assert_cmpuint(modify_qp(&f.d, &f.a, RTR_MASK, &at), ==, 0);
    g_assert_true(qp_of(&f, &f.a)->tp == &f.probe.t);
    dev_fini(&f.d);
    g_assert_cmpint(f.probe.detached, ==, 1);   /* reset at fini */
}

static void test_rc_late(void)
{
    Fx f;
    TQp c;
    struct pvrdma_sq_wqe_hdr w = { 0 };
    struct pvrdma_sge s;

    fx_setup(&f, PVRDMA_QPT_RC);
    f.probe.reach = false;
    to_rts(&f, &f.a, f.b.qpn, probe_gid);
    to_rts(&f, &f.b, f.a.qpn, test_gid);
    g_assert_null(qp_of(&f, &f.a)->tp);         /* nobody reached it */
    /* the peer shows up before the first request: chosen then */
    f.probe.reach = true;
    send_and_check(&f, &f.a, &f.b, 0xa1, 4, NULL);
    g_assert_true(qp_of(&f, &f.a)->tp == &f.probe.t);
    g_assert_cmpint(f.probe.attached, ==, 1);
    g_assert_cmpint(f.probe.executed, ==, 1);

    /*
     * A QP that nothing reaches at all: RETRY_EXC_ERR when its retries
     * have run out (timeout 14, retry_cnt 7: 8 x 67 ms), QP in error.
     */
    f.probe.reach = false;
    create_qp(&f.d, &c, f.pd, f.cq.handle, f.cq.handle, PVRDMA_QPT_RC);
    to_rts(&f, &c, f.b.qpn, probe_gid);
    s = (struct pvrdma_sge) { FX_IOVA, 64, f.mr.lkey };
    w.wr_id = 0xc1;
    w.opcode = PVRDMA_WR_SEND;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    post_send(&f.d, &c, &w, &s, 1);
    run_all(&f.d);
    expect_cq_empty(&f.d, &f.cq);
    g_assert_cmpint(f.d.h.timer_due, ==, f.d.h.now + 536);
    f.d.h.now += 535;       /* an early run (for something else) */
    pvrdma_core_run(&f.d.c);
    run_all(&f.d);
    expect_cq_empty(&f.d, &f.cq);
    f.d.h.now += 1;         /* the host's timer fires */
    pvrdma_core_run(&f.d.c);
    run_all(&f.d);
    expect_cqe(&f.d, &f.cq, 0xc1, PVRDMA_WC_RETRY_EXC_ERR, PVRDMA_WC_SEND,
               64, c.handle);
    g_assert_cmpuint(query_qp_state(&f.d, &c), ==, PVRDMA_QPS_ERR);
    g_assert_null(qp_of(&f, &c)->tp);
    g_assert_cmpint(f.probe.executed, ==, 1);
    expect_cq_empty(&f.d, &f.cq);
    dev_fini(&f.d);
}

static void ud_to_rts(Fx *f, TQp *q)
{
    struct pvrdma_qp_attr at = { 0 };

    at.qp_state = PVRDMA_QPS_INIT;
    at.port_num = 1;
    at.qkey = 0x1111;
    g_assert_cmpuint(modify_qp(&f->d, q, PVRDMA_QP_STATE |
                               PVRDMA_QP_PKEY_INDEX | PVRDMA_QP_PORT |
                               PVRDMA_QP_QKEY, &at), ==, 0);
    at.qp_state = PVRDMA_QPS_RTR;
    g_assert_cmpuint(modify_qp(&f->d, q, PVRDMA_QP_STATE, &at), ==, 0);
    at.qp_state = PVRDMA_QPS_RTS;
    g_assert_cmpuint(modify_qp(&f->d, q, PVRDMA_QP_STATE | PVRDMA_QP_SQ_PSN,
                               &at), ==, 0);
}

static void test_ud_per_request(void)
{
    Fx f;

    fx_setup(&f, PVRDMA_QPT_UD);
    ud_to_rts(&f, &f.a);
    ud_to_rts(&f, &f.b);
    send_and_check(&f, &f.a, &f.b, 0xa1, 5, probe_gid);
    g_assert_cmpint(f.probe.executed, ==, 1);
    send_and_check(&f, &f.a, &f.b, 0xa3, 6, test_gid);
    g_assert_cmpint(f.probe.executed, ==, 1);   /* loopback took it */
    send_and_check(&f, &f.a, &f.b, 0xa5, 7, probe_gid);
    g_assert_cmpint(f.probe.executed, ==, 2);
    g_assert_null(qp_of(&f, &f.a)->tp);         /* never attached */
    g_assert_cmpint(f.probe.attached, ==, 0);
    expect_cq_empty(&f.d, &f.cq);
    dev_fini(&f.d);
}

/*
 * With an object owner (a host HCA) next to other transports: every QP has
 * the owner's number and every MR its keys (lkey != rkey here), an RC QP
 * still chooses its transport at RTR (the owner for a destination no one
 * else reaches), its receives wait in the guest ring until then, and a
 * message transport reaches QPs and MRs by the owner's numbers.  UD QPs are
 * the owner's from creation.
 */
static void test_with_owner(void)
{
    static const uint8_t far_gid[16] = {
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 7, 7, 7
    };
    Fx f;
    FakeHca h;
    TQp c, u;
    TMr lm;
    struct pvrdma_qp_attr at = { .qp_state = PVRDMA_QPS_RESET };
    struct pvrdma_sq_wqe_hdr w = { 0 };
    struct pvrdma_sge sg = { FX_IOVA, 256, 0 }, rs;
    uint8_t data[256], got[256];
    g_autofree char *qps = NULL;

    fx_setup_owner(&f, PVRDMA_QPT_RC, &h);
    g_assert_cmphex(f.a.qpn, ==, 0x300 + f.a.handle);
    g_assert_cmphex(f.mr.lkey, ==, 0x1000 + f.mr.handle);
    g_assert_cmphex(f.mr.rkey, ==, 0x2000 + f.mr.handle);
    g_assert_null(qp_of(&f, &f.a)->tp);         /* RC: chosen at RTR */

    /* a -> b through the probe, b -> a loopback: the host sees no WQE */
    to_rts(&f, &f.a, f.b.qpn, probe_gid);
    g_assert_cmpuint(h.last_state, ==, PVRDMA_QPS_INIT);   /* twin: INIT */
    to_rts(&f, &f.b, f.a.qpn, test_gid);
    g_assert_cmpuint(h.last_state, ==, PVRDMA_QPS_INIT);
    g_assert_true(qp_of(&f, &f.a)->tp == &f.probe.t);
    g_assert_cmpstr(qp_of(&f, &f.b)->tp->ops->name, ==, "loopback");
    send_and_check(&f, &f.a, &f.b, 0xa1, 11, NULL);     /* by b's host QPN */
    send_and_check(&f, &f.b, &f.a, 0xb1, 12, NULL);
    g_assert_cmpint(f.probe.executed, ==, 1);
    /* an RDMA WRITE through the probe by the owner's rkey */
    fill_pattern(data, sizeof(data), 13);
    mr_write(&f.d, &f.mr, FX_IOVA, data, sizeof(data));
    sg.lkey = f.mr.lkey;
    w.wr_id = 0xa2;
    w.opcode = PVRDMA_WR_RDMA_WRITE;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.wr.rdma.remote_addr = FX_IOVA + 3 * FH_PAGE;
    w.wr.rdma.rkey = f.mr.rkey;
    post_send(&f.d, &f.a, &w, &sg, 1);
    run_all(&f.d);
    expect_cqe(&f.d, &f.cq, 0xa2, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE,
               sizeof(data), f.a.handle);
    mr_read(&f.d, &f.mr, FX_IOVA + 3 * FH_PAGE, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));
    g_assert_cmpint(f.probe.executed, ==, 2);
    g_assert_cmpuint(h.posted->len, ==, 0);

    /* c: nobody else reaches far_gid, so the owner; receives wait for RTR */
    create_qp(&f.d, &c, f.pd, f.cq.handle, f.cq.handle, PVRDMA_QPT_RC);
    rc_to_init(&f.d, &c);
    rs = (struct pvrdma_sge) { FX_IOVA + FH_PAGE, 128, f.mr.lkey };
    post_recv(&f.d, &c, 0xc0, &rs, 1);
    g_assert_cmpuint(h.posted->len, ==, 0);
    to_rts(&f, &c, 0x777, far_gid);
    g_assert_true(qp_of(&f, &c)->tp == &h.t);
    g_assert_cmpuint(h.last_state, ==, PVRDMA_QPS_RTS);
    g_assert_cmpuint(h.posted->len, ==, 1);
    g_assert_true(fake_hca_posted(&h, 0)->recv);
    g_assert_cmphex(fake_hca_posted(&h, 0)->wr_id, ==, 0xc0);
    w.wr_id = 0xc1;
    w.opcode = PVRDMA_WR_SEND;
    post_send(&f.d, &c, &w, &sg, 1);
    run_all(&f.d);
    g_assert_cmpuint(h.posted->len, ==, 2);
    g_assert_cmphex(fake_hca_posted(&h, 1)->wr_id, ==, 0xc1);
    g_assert_cmpint(f.probe.executed, ==, 2);
    qps = pvrdma_describe_qps(&f.d.c);
    g_assert_nonnull(strstr(qps, "path fake-hca"));
    g_assert_nonnull(strstr(qps, "path probe"));
    g_assert_nonnull(strstr(qps, "path loopback"));
    /* the same, typed (query-pvrdma): c on the owner, towards far_gid */
    {
        g_autoptr(GArray) qi = pvrdma_info_qps(&f.d.c);
        g_autoptr(GArray) ti = pvrdma_info_transports(&f.d.c);
        const PvrdmaQpInfo *ci = NULL;
        bool probe = false;

        for (guint i = 0; i < qi->len; i++) {
            const PvrdmaQpInfo *x = &g_array_index(qi, PvrdmaQpInfo, i);

            if (x->qpn == c.qpn) {
                ci = x;
            }
        }
        g_assert_nonnull(ci);
        g_assert_cmpstr(ci->path, ==, "fake-hca");
        g_assert_cmpstr(pvrdma_qp_type_name(ci->type), ==, "RC");
        g_assert_cmpstr(pvrdma_qp_state_name(ci->state), ==, "RTS");
        g_assert_true(ci->has_peer);
        g_assert_cmphex(ci->peer_qpn, ==, 0x777);
        g_assert_cmpmem(ci->peer_gid, 16, far_gid, 16);
        g_assert_false(ci->has_stats);
        for (guint i = 0; i < ti->len; i++) {
            probe |= !strcmp(g_array_index(ti, PvrdmaTransportInfo,
                                           i).name, "probe");
        }
        g_assert_true(probe);
    }

    /* reset gives c back (the twin resets too); then the probe takes it */
    g_assert_cmpuint(modify_qp(&f.d, &c, PVRDMA_QP_STATE, &at), ==, 0);
    g_assert_cmpuint(h.last_state, ==, PVRDMA_QPS_RESET);
    g_assert_null(qp_of(&f, &c)->tp);
    to_rts(&f, &c, f.b.qpn, probe_gid);
    g_assert_true(qp_of(&f, &c)->tp == &f.probe.t);
    g_assert_cmpuint(h.last_state, ==, PVRDMA_QPS_INIT);
    send_and_check(&f, &c, &f.b, 0xc3, 14, NULL);
    g_assert_cmpint(f.probe.executed, ==, 3);
    /* and a's reset reaches its twin, which had stayed in INIT */
    g_assert_cmpuint(modify_qp(&f.d, &f.a, PVRDMA_QP_STATE, &at), ==, 0);
    g_assert_cmpuint(h.last_state, ==, PVRDMA_QPS_RESET);
    g_assert_null(qp_of(&f, &f.a)->tp);

    /* a local MR's rkey 0 (as rxe gives it) names no MR */
    create_mr(&f.d, &lm, f.pd, FX_IOVA, FH_PAGE, PVRDMA_ACCESS_LOCAL_WRITE);
    g_assert_cmphex(lm.rkey, ==, 0);
    g_assert_null(pvrdma_mr_by_key(&f.d.c, 0));
    g_assert_true(pvrdma_mr_by_key(&f.d.c, lm.lkey) ==
                  pvrdma_table_get(&f.d.c.mr, lm.handle));

    /* UD: the owner's from creation */
    create_qp(&f.d, &u, f.pd, f.cq.handle, f.cq.handle, PVRDMA_QPT_UD);
    g_assert_true(qp_of(&f, &u)->tp == &h.t);
    g_assert_cmpuint(h.posted->len, ==, 2);
    expect_cq_empty(&f.d, &f.cq);
    dev_fini(&f.d);
    g_assert_cmpint(h.twins, ==, 0);
    fake_hca_fini(&h);
}

static void noop_destroy(PvrdmaTransport *t)
{
}

/*
 * A transport names exactly one contract, a message transport executes, a
 * queue transport is the object owner (at most one), the GSI agent (at
 * most one) is a message transport: anything else is refused when added.
 */
static void test_add_refused(void)
{
    static const PvrdmaQueueOps queue = { 0 };
    static const PvrdmaMessageOps no_exec = { 0 };
    static const PvrdmaTransportOps owner_ops = {
        .name = "owner", .destroy = noop_destroy, .queue = &queue,
    };
    static const PvrdmaTransportOps agent_ops = {
        .name = "agent", .flags = PVRDMA_TP_GSI_AGENT,
        .destroy = noop_destroy, .msg = &probe_msg,
    };
    static const PvrdmaTransportOps plain_ops = {
        .name = "plain", .destroy = noop_destroy, .msg = &probe_msg,
    };
    static const PvrdmaTransportOps bad_ops[] = {
        { .name = "none", .destroy = noop_destroy },
        { .name = "both", .destroy = noop_destroy, .msg = &probe_msg,
          .queue = &queue },
        { .name = "no-execute", .destroy = noop_destroy, .msg = &no_exec },
        { .name = "queue-agent", .flags = PVRDMA_TP_GSI_AGENT,
          .destroy = noop_destroy, .queue = &queue },
    };
    PvrdmaTransport o1 = { &owner_ops }, o2 = { &owner_ops };
    PvrdmaTransport a1 = { &agent_ops }, a2 = { &agent_ops };
    PvrdmaTransport p1 = { &plain_ops };
    Dev d;

    dev_init(&d, NULL);         /* loopback is the first transport */
    g_assert_cmpuint(d.c.ntransports, ==, 1);
    for (unsigned i = 0; i < G_N_ELEMENTS(bad_ops); i++) {
        PvrdmaTransport b = { &bad_ops[i] };

        g_assert_false(pvrdma_core_add_transport(&d.c, &b));
    }
    g_assert_cmpuint(d.c.ntransports, ==, 1);
    g_assert_true(pvrdma_core_add_transport(&d.c, &o1));
    g_assert_false(pvrdma_core_add_transport(&d.c, &o2));
    g_assert_true(d.c.owner == &o1);
    g_assert_true(pvrdma_core_add_transport(&d.c, &a1));
    g_assert_false(pvrdma_core_add_transport(&d.c, &a2));
    g_assert_true(d.c.gsi_agent == &a1);
    while (d.c.ntransports < PVRDMA_MAX_TRANSPORTS) {
        g_assert_true(pvrdma_core_add_transport(&d.c, &p1));
    }
    g_assert_false(pvrdma_core_add_transport(&d.c, &p1));
    g_assert_false(d.c.doorbell_ok);
    pvrdma_core_fini(&d.c);
    g_assert_null(d.c.gsi_agent);
    g_assert_cmpuint(d.c.ntransports, ==, 0);
    fh_fini(&d.h);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/pvrdma/path/rc-at-rtr", test_rc_at_rtr);
    g_test_add_func("/pvrdma/path/idle-asks-rarely", test_idle_asks_rarely);
    g_test_add_func("/pvrdma/path/attach-refused", test_attach_refused);
    g_test_add_func("/pvrdma/path/rc-late", test_rc_late);
    g_test_add_func("/pvrdma/path/ud-per-request", test_ud_per_request);
    g_test_add_func("/pvrdma/path/add-refused", test_add_refused);
    g_test_add_func("/pvrdma/path/with-owner", test_with_owner);
    return g_test_run();
}
