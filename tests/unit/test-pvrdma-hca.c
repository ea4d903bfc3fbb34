/*
 * The device side of host HCA mode (hw/rdma/core/pvrdma_queue.c and the command
 * hooks) against a scripted host device: objects get twins and lose them,
 * guest WQEs reach the host unchanged or fail with an error CQE, a full
 * host queue holds the rest in the guest ring until a completion, host
 * completions and events become guest CQEs and async events.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "fake-driver.h"
#include "fake-hca.h"

/* A destination only the host device reaches (not a GID of the device) */
static const uint8_t host_peer_gid[16] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 7, 7, 7
};

static void hca_setup(Dev *d, FakeHca *f)
{
    dev_init(d, NULL);
    fake_hca_init(f, &d->c);
    dev_write_dsr(d);
    pvrdma_core_reg_write(&d->c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
    g_assert_cmpuint(pvrdma_core_reg_read(&d->c, PVRDMA_REG_ERR), ==, 0);
    pvrdma_core_reg_write(&d->c, PVRDMA_REG_IMR, 0);
    bind_gid(d, 0, test_gid);
}

static void hca_fini(Dev *d, FakeHca *f)
{
    dev_fini(d);
    g_assert_cmpint(f->twins, ==, 0);   /* reset destroyed every twin */
    fake_hca_fini(f);
}

static FakeHcaPosted *posted(FakeHca *f, unsigned i)
{
    return fake_hca_posted(f, i);
}

static void host_wc(Dev *d, TCq *cq, TQp *qp, bool is_send, uint64_t wr_id,
                    uint32_t opcode, uint32_t status, uint32_t len)
{
    PvrdmaWc wc = { .qp = qp->handle, .cq = cq->handle, .is_send = is_send,
                    .wr_id = wr_id, .opcode = opcode, .status = status,
                    .byte_len = len };

    pvrdma_complete(&d->c, &wc);
}

typedef struct Setup {
    uint32_t pd;
    TCq cq;
    TQp qp;
    TMr mr;
} Setup;

static void setup_qp(Dev *d, Setup *s)
{
    s->pd = create_pd(d, 0);
    create_cq(d, &s->cq, 64);
    create_qp(d, &s->qp, s->pd, s->cq.handle, s->cq.handle, PVRDMA_QPT_RC);
    create_mr(d, &s->mr, s->pd, 0x7f0000000000ull, 3 * FH_PAGE,
              PVRDMA_ACCESS_LOCAL_WRITE | RC_ACCESS);
}

/* Twins, host numbers and keys; every twin gone after destroy and reset. */
static void test_objects(void)
{
    Dev d;
    FakeHca f;
    Setup s;
    union pvrdma_cmd_req req = { 0 };

    hca_setup(&d, &f);
    setup_qp(&d, &s);
    g_assert_cmpint(f.twins, ==, 4);
    g_assert_cmpuint(s.qp.qpn, ==, 0x300 + s.qp.handle);
    g_assert_cmpuint(s.mr.lkey, ==, 0x1000 + s.mr.handle);
    g_assert_cmpuint(s.mr.rkey, ==, 0x2000 + s.mr.handle);
    /* no fast registration where the host device has no windows for it */
    d.c.lim.no_fast_reg = true;
    req.create_mr.pd_handle = s.pd;
    req.create_mr.flags = PVRDMA_MR_FLAG_FRMR;
    req.create_mr.nchunks = 4;
    expect_err(&d, &req, PVRDMA_CMD_CREATE_MR, EOPNOTSUPP);
    d.c.lim.no_fast_reg = false;
    /* no CQ resize through a host device */
    memset(&req, 0, sizeof(req));
    req.resize_cq.cq_handle = s.cq.handle;
    req.resize_cq.cqe = 32;
    expect_err(&d, &req, PVRDMA_CMD_RESIZE_CQ, EOPNOTSUPP);
    /* destroying the QP drops its twin */
    memset(&req, 0, sizeof(req));
    req.destroy_qp.qp_handle = s.qp.handle;
    g_assert_cmpuint(dev_cmd(&d, &req, PVRDMA_CMD_DESTROY_QP, NULL), ==, 0);
    g_assert_cmpint(f.twins, ==, 3);
    hca_fini(&d, &f);
}

/* WQEs reach the host unchanged, after RTS; completions come back. */
static void test_send_passthrough(void)
{
    Dev d;
    FakeHca f;
    Setup s;
    struct pvrdma_sq_wqe_hdr w = { 0 };
    struct pvrdma_sge sg[2] = {
        { 0x7f0000000010ull, 100, 0 }, { 0x7f0000001000ull, 200, 0 },
    };
    struct pvrdma_cqe e;

    hca_setup(&d, &f);
    setup_qp(&d, &s);
    sg[0].lkey = sg[1].lkey = s.mr.lkey;
    w.wr_id = 0xa1;
    w.opcode = PVRDMA_WR_RDMA_WRITE;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.wr.rdma.remote_addr = 0x1234000;
    w.wr.rdma.rkey = 0x55;
    /* posted in RESET: stays in the ring until the QP can send */
    post_send(&d, &s.qp, &w, sg, 2);
    g_assert_cmpuint(f.posted->len, ==, 0);
    rc_to_rts_gid(&d, &s.qp, 0x999, host_peer_gid, 7);
    g_assert_cmpuint(f.last_state, ==, PVRDMA_QPS_RTS);
    g_assert_cmpuint(f.posted->len, ==, 1);
    g_assert_cmphex(posted(&f, 0)->wr_id, ==, 0xa1);
    g_assert_cmpuint(posted(&f, 0)->opcode, ==, PVRDMA_WR_RDMA_WRITE);
    g_assert_cmpuint(posted(&f, 0)->num_sge, ==, 2);
    g_assert_cmpmem(posted(&f, 0)->sge, sizeof(sg), sg, sizeof(sg));
    g_assert_cmphex(posted(&f, 0)->remote_addr, ==, 0x1234000);
    g_assert_cmphex(posted(&f, 0)->rkey, ==, 0x55);
    g_assert_cmpuint(qp_rings(&d, &s.qp)[0].cons_head, ==, 1);
    expect_cq_empty(&d, &s.cq);
    host_wc(&d, &s.cq, &s.qp, true, 0xa1, PVRDMA_WC_RDMA_WRITE,
            PVRDMA_WC_SUCCESS, 300);
    expect_cqe(&d, &s.cq, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE, 300,
               s.qp.handle);
    /* a receive: posted at once, its completion names the peer QP */
    post_recv(&d, &s.qp, 0xb1, sg, 1);
    g_assert_cmpuint(f.posted->len, ==, 2);
    g_assert_true(posted(&f, 1)->recv);
    g_assert_cmphex(posted(&f, 1)->wr_id, ==, 0xb1);
    host_wc(&d, &s.cq, &s.qp, false, 0xb1, PVRDMA_WC_RECV,
            PVRDMA_WC_SUCCESS, 17);
    g_assert_true(poll_cq(&d, &s.cq, &e));
    g_assert_cmphex(e.wr_id, ==, 0xb1);
    g_assert_cmpuint(e.src_qp, ==, 0x999);
    g_assert_cmpuint(e.qp, ==, s.qp.handle);
    hca_fini(&d, &f);
}

/*
 * The host completes work of a QP the guest has destroyed (its host CQ
 * still held them), or names a CQ that is not the QP's: nothing reaches
 * the guest's CQ.  The Linux driver cannot consume a CQE of a QP it no
 * longer knows, and its CQ poll stops there for good.
 */
static void test_wc_after_destroy(void)
{
    Dev d;
    FakeHca f;
    Setup s;
    TCq other;
    TQp qp2;
    union pvrdma_cmd_req req = { 0 };

    hca_setup(&d, &f);
    setup_qp(&d, &s);
    create_cq(&d, &other, 64);
    create_qp(&d, &qp2, s.pd, s.cq.handle, s.cq.handle, PVRDMA_QPT_RC);
    rc_to_rts_gid(&d, &s.qp, 0x999, host_peer_gid, 7);
    rc_to_rts_gid(&d, &qp2, 0x998, host_peer_gid, 7);
    /* a live QP's completion on a CQ it does not use */
    host_wc(&d, &other, &qp2, true, 0xc1, PVRDMA_WC_SEND,
            PVRDMA_WC_SUCCESS, 1);
    expect_cq_empty(&d, &other);
    req.destroy_qp.qp_handle = s.qp.handle;
    g_assert_cmpuint(dev_cmd(&d, &req, PVRDMA_CMD_DESTROY_QP, NULL), ==, 0);
    host_wc(&d, &s.cq, &s.qp, true, 0xc2, PVRDMA_WC_SEND,
            PVRDMA_WC_WR_FLUSH_ERR, 0);
    host_wc(&d, &s.cq, &s.qp, false, 0xc3, PVRDMA_WC_RECV,
            PVRDMA_WC_WR_FLUSH_ERR, 0);
    expect_cq_empty(&d, &s.cq);
    /* the live QP's completions still arrive */
    host_wc(&d, &s.cq, &qp2, true, 0xc4, PVRDMA_WC_SEND,
            PVRDMA_WC_SUCCESS, 2);
    expect_cqe(&d, &s.cq, 0xc4, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 2,
               qp2.handle);
    hca_fini(&d, &f);
}

/* A FAST_REG_MR of an FRMR over two scattered pages, key byte kb */
static void frmr_wqe(Dev *d, struct pvrdma_sq_wqe_hdr *w, uint64_t wr_id,
                     uint32_t key, uint8_t kb)
{
    uint64_t pl[2];

    pl[0] = fh_alloc(&d->h, 1);
    fh_skip(&d->h, 1);
    pl[1] = fh_alloc(&d->h, 1);
    memset(w, 0, sizeof(*w));
    w->wr_id = wr_id;
    w->opcode = PVRDMA_WR_FAST_REG_MR;
    w->send_flags = PVRDMA_SEND_SIGNALED;
    w->wr.fast_reg.iova_start = 0x5000000100ull;
    w->wr.fast_reg.pl_pdir_dma = fh_make_pdir(&d->h, pl, 2);
    w->wr.fast_reg.page_shift = 12;
    w->wr.fast_reg.page_list_len = 2;
    w->wr.fast_reg.length = 6000;
    w->wr.fast_reg.access_flags = PVRDMA_ACCESS_LOCAL_WRITE |
                                  PVRDMA_ACCESS_REMOTE_WRITE;
    w->wr.fast_reg.rkey = (key & ~0xffu) | kb;
}

/*
 * Fast registration through the host device: the FRMR's key is the
 * host's, FAST_REG_MR and LOCAL_INV reach the host in order after the
 * device applied them (key byte, region, valid), a full host queue undoes
 * them until they are posted again, a SEND with invalidate that the host
 * received invalidates the FRMR here too.
 */
static void test_fast_reg(void)
{
    Dev d;
    FakeHca f;
    Setup s;
    union pvrdma_cmd_req req = { 0 };
    union pvrdma_cmd_resp rsp;
    struct pvrdma_sq_wqe_hdr w;
    PvrdmaWc wc = { 0 };
    uint32_t h, key;
    PvrdmaMR *mr;

    hca_setup(&d, &f);
    setup_qp(&d, &s);
    rc_to_rts_gid(&d, &s.qp, 0x999, host_peer_gid, 7);
    req.create_mr.pd_handle = s.pd;
    req.create_mr.flags = PVRDMA_MR_FLAG_FRMR;
    req.create_mr.nchunks = 4;
    g_assert_cmpuint(dev_cmd(&d, &req, PVRDMA_CMD_CREATE_MR, &rsp), ==, 0);
    h = rsp.create_mr_resp.mr_handle;
    key = rsp.create_mr_resp.rkey;
    g_assert_cmphex(key, ==, (0x40 + h) << 8 | 0x07);
    g_assert_cmphex(rsp.create_mr_resp.lkey, ==, key);

    /* the host's queue is full: nothing changes until it has room */
    f.sq_room = 0;
    frmr_wqe(&d, &w, 0xf1, key, 0x42);
    post_send(&d, &s.qp, &w, NULL, 0);
    run_all(&d);
    mr = pvrdma_table_get(&d.c.mr, h);
    g_assert_false(mr->valid);
    g_assert_cmphex(mr->key, ==, key);
    g_assert_true(pvrdma_mr_by_key(&d.c, key) == mr);
    f.sq_room = 8;
    host_wc(&d, &s.cq, &s.qp, true, 0x1, PVRDMA_WC_SEND, PVRDMA_WC_SUCCESS, 0);
    expect_cqe(&d, &s.cq, 0x1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 0,
               s.qp.handle);
    g_assert_cmpuint(f.posted->len, ==, 1);
    g_assert_cmpuint(posted(&f, 0)->opcode, ==, PVRDMA_WR_FAST_REG_MR);
    g_assert_cmpuint(posted(&f, 0)->mr, ==, h);
    g_assert_cmphex(posted(&f, 0)->mr_key, ==, (key & ~0xffu) | 0x42);
    g_assert_true(posted(&f, 0)->mr_valid);
    g_assert_cmphex(posted(&f, 0)->mr_iova, ==, 0x5000000100ull);
    /* the new key names it, the old one no more */
    g_assert_true(pvrdma_mr_by_key(&d.c, (key & ~0xffu) | 0x42) == mr);
    g_assert_null(pvrdma_mr_by_key(&d.c, key));
    host_wc(&d, &s.cq, &s.qp, true, 0xf1, PVRDMA_WC_FAST_REG_MR,
            PVRDMA_WC_SUCCESS, 0);
    expect_cqe(&d, &s.cq, 0xf1, PVRDMA_WC_SUCCESS, PVRDMA_WC_FAST_REG_MR, 0,
               s.qp.handle);
    /* registered: a second FAST_REG_MR fails the QP, nothing posted */
    key = (key & ~0xffu) | 0x42;
    frmr_wqe(&d, &w, 0xf2, key, 0x43);
    post_send(&d, &s.qp, &w, NULL, 0);
    run_all(&d);
    expect_cqe(&d, &s.cq, 0xf2, PVRDMA_WC_LOC_PROT_ERR, PVRDMA_WC_FAST_REG_MR,
               0, s.qp.handle);
    g_assert_cmpuint(f.posted->len, ==, 1);
    hca_fini(&d, &f);

    /* LOCAL_INV goes to the host; a remote invalidation counts too */
    hca_setup(&d, &f);
    setup_qp(&d, &s);
    rc_to_rts_gid(&d, &s.qp, 0x999, host_peer_gid, 7);
    g_assert_cmpuint(dev_cmd(&d, &req, PVRDMA_CMD_CREATE_MR, &rsp), ==, 0);
    h = rsp.create_mr_resp.mr_handle;
    key = rsp.create_mr_resp.rkey;
    mr = pvrdma_table_get(&d.c.mr, h);
    frmr_wqe(&d, &w, 0xf1, key, 0x50);
    post_send(&d, &s.qp, &w, NULL, 0);
    key = (key & ~0xffu) | 0x50;
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xf2;
    w.opcode = PVRDMA_WR_LOCAL_INV;
    w.ex.invalidate_rkey = key;
    post_send(&d, &s.qp, &w, NULL, 0);
    run_all(&d);
    g_assert_cmpuint(f.posted->len, ==, 2);
    g_assert_cmpuint(posted(&f, 1)->opcode, ==, PVRDMA_WR_LOCAL_INV);
    g_assert_cmphex(posted(&f, 1)->imm, ==, key);
    g_assert_false(posted(&f, 1)->mr_valid);
    g_assert_false(mr->valid);
    /* registered again, then the peer's SEND with invalidate */
    frmr_wqe(&d, &w, 0xf3, key, 0x51);
    post_send(&d, &s.qp, &w, NULL, 0);
    run_all(&d);
    g_assert_true(mr->valid);
    key = (key & ~0xffu) | 0x51;
    wc = (PvrdmaWc) { .qp = s.qp.handle, .cq = s.cq.handle, .wr_id = 0xb1,
                      .opcode = PVRDMA_WC_RECV, .status = PVRDMA_WC_SUCCESS,
                      .byte_len = 32, .imm = key,
                      .wc_flags = PVRDMA_WC_WITH_INVALIDATE };
    pvrdma_complete(&d.c, &wc);
    g_assert_false(mr->valid);
    /* so the guest may register it once more */
    frmr_wqe(&d, &w, 0xf4, key, 0x52);
    post_send(&d, &s.qp, &w, NULL, 0);
    run_all(&d);
    g_assert_cmpuint(f.posted->len, ==, 4);
    g_assert_cmphex(posted(&f, 3)->mr_key, ==, (key & ~0xffu) | 0x52);
    hca_fini(&d, &f);
}

/* What the device refuses: an error CQE, and the QP (twin too) in error. */
static void test_bad_wqe(void)
{
    Dev d;
    FakeHca f;
    Setup s;
    struct pvrdma_sq_wqe_hdr w = { 0 };
    struct pvrdma_sge sg = { 0x7f0000000010ull, 8, 0 };
    struct pvrdma_cqe e;

    hca_setup(&d, &f);
    setup_qp(&d, &s);
    rc_to_rts_gid(&d, &s.qp, 0x999, host_peer_gid, 7);
    w.wr_id = 0xa1;
    w.opcode = PVRDMA_WR_BIND_MW;      /* no memory windows for the guest */
    w.send_flags = PVRDMA_SEND_SIGNALED;
    post_send(&d, &s.qp, &w, &sg, 1);
    run_all(&d);
    g_assert_cmpuint(f.posted->len, ==, 0);
    g_assert_true(poll_cq(&d, &s.cq, &e));
    g_assert_cmphex(e.wr_id, ==, 0xa1);
    g_assert_cmpuint(e.status, ==, PVRDMA_WC_LOC_QP_OP_ERR);
    g_assert_cmpuint(f.last_state, ==, PVRDMA_QPS_ERR);
    g_assert_cmpuint(query_qp_state(&d, &s.qp), ==, PVRDMA_QPS_ERR);
    /* more SGEs than the QP has: the WQE is consumed, error CQE */
    w.wr_id = 0xa2;
    w.opcode = PVRDMA_WR_SEND;
    put_send(&d, &s.qp, &w, &sg, 1);
    ((struct pvrdma_sq_wqe_hdr *)sq_elem(&d, &s.qp, s.qp.sq_prod - 1))->
        num_sge = 1000;
    ring_send(&d, &s.qp);
    run_all(&d);
    expect_cqe(&d, &s.cq, 0xa2, PVRDMA_WC_LOC_LEN_ERR, PVRDMA_WC_SEND, 0,
               s.qp.handle);
    g_assert_cmpuint(f.posted->len, ==, 0);
    g_assert_cmpuint(qp_rings(&d, &s.qp)[0].cons_head, ==, 2);
    g_assert_cmpuint(d.c.guest_errors, >=, 2);
    /*
     * a receive posted in the error state: flushed by the device (a user
     * QP of Linux rxe would never flush it: ib_drain_rq() hangs)
     */
    post_recv(&d, &s.qp, 0xb9, &sg, 1);
    run_all(&d);
    g_assert_cmpuint(f.posted->len, ==, 0);
    expect_cqe(&d, &s.cq, 0xb9, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_RECV, 0,
               s.qp.handle);
    hca_fini(&d, &f);
}

/* A full host queue keeps the rest in the guest ring until a completion. */
static void test_queue_full(void)
{
    Dev d;
    FakeHca f;
    Setup s;
    struct pvrdma_sq_wqe_hdr w = { 0 };
    struct pvrdma_sge sg = { 0x7f0000000010ull, 8, 0 };

    hca_setup(&d, &f);
    setup_qp(&d, &s);
    sg.lkey = s.mr.lkey;
    rc_to_rts_gid(&d, &s.qp, 0x999, host_peer_gid, 7);
    f.sq_room = 2;
    w.opcode = PVRDMA_WR_SEND;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    for (int i = 0; i < 4; i++) {
        w.wr_id = 0x10 + i;
        put_send(&d, &s.qp, &w, &sg, 1);
    }
    ring_send(&d, &s.qp);
    /* the doorbell (vCPU thread) only queues the QP; the run loop posts */
    g_assert_cmpuint(f.posted->len, ==, 0);
    run_all(&d);
    g_assert_cmpuint(f.posted->len, ==, 2);
    g_assert_cmpuint(qp_rings(&d, &s.qp)[0].cons_head, ==, 2);
    /* another doorbell while blocked changes nothing */
    ring_send(&d, &s.qp);
    run_all(&d);
    g_assert_cmpuint(f.posted->len, ==, 2);
    f.sq_room = 1;
    host_wc(&d, &s.cq, &s.qp, true, 0x10, PVRDMA_WC_SEND,
            PVRDMA_WC_SUCCESS, 8);
    g_assert_cmpuint(f.posted->len, ==, 3);
    g_assert_cmphex(posted(&f, 2)->wr_id, ==, 0x12);
    f.sq_room = 5;
    host_wc(&d, &s.cq, &s.qp, true, 0x11, PVRDMA_WC_SEND,
            PVRDMA_WC_SUCCESS, 8);
    g_assert_cmpuint(f.posted->len, ==, 4);
    g_assert_cmpuint(qp_rings(&d, &s.qp)[0].cons_head, ==, 4);
    expect_cqe(&d, &s.cq, 0x10, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 8,
               s.qp.handle);
    expect_cqe(&d, &s.cq, 0x11, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 8,
               s.qp.handle);
    hca_fini(&d, &f);
}

/* The host refuses a modify: the command fails, the state stays. */
static void test_modify_refused(void)
{
    Dev d;
    FakeHca f;
    Setup s;
    struct pvrdma_qp_attr a = { 0 };

    hca_setup(&d, &f);
    setup_qp(&d, &s);
    rc_to_init(&d, &s.qp);
    rc_rtr_attrs_gid(&a, 0x999, host_peer_gid);
    f.modify_err = -EINVAL;
    g_assert_cmpuint(modify_qp(&d, &s.qp, RTR_MASK, &a), ==, EINVAL);
    g_assert_cmpuint(query_qp_state(&d, &s.qp), ==, PVRDMA_QPS_INIT);
    g_assert_cmpuint(modify_qp(&d, &s.qp, RTR_MASK, &a), ==, 0);
    g_assert_cmpuint(query_qp_state(&d, &s.qp), ==, PVRDMA_QPS_RTR);
    hca_fini(&d, &f);
}

/* Host async events reach the guest; a fatal one puts the QP in error. */
static void test_events(void)
{
    Dev d;
    FakeHca f;
    Setup s;
    struct pvrdma_eqe *eq;

    hca_setup(&d, &f);
    setup_qp(&d, &s);
    rc_to_rts_gid(&d, &s.qp, 0x999, host_peer_gid, 7);
    pvrdma_transport_event(&d.c, PVRDMA_EVENT_QP_FATAL, s.qp.handle);
    g_assert_cmpuint(query_qp_state(&d, &s.qp), ==, PVRDMA_QPS_ERR);
    eq = fh_ptr(&d.h, d.async_pages[1]);
    g_assert_cmpuint(eq[0].type, ==, PVRDMA_EVENT_QP_FATAL);
    g_assert_cmpuint(eq[0].info, ==, s.qp.handle);
    g_assert_cmpuint(fh_irq_count(&d.h, PVRDMA_INTR_VECTOR_ASYNC), >=, 1);
    /* an event for a handle that is gone is still only an event */
    pvrdma_transport_event(&d.c, PVRDMA_EVENT_QP_FATAL, 4000);
    hca_fini(&d, &f);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/pvrdma/hca/objects", test_objects);
    g_test_add_func("/pvrdma/hca/send-passthrough", test_send_passthrough);
    g_test_add_func("/pvrdma/hca/bad-wqe", test_bad_wqe);
    g_test_add_func("/pvrdma/hca/fast-reg", test_fast_reg);
    g_test_add_func("/pvrdma/hca/queue-full", test_queue_full);
    g_test_add_func("/pvrdma/hca/modify-refused", test_modify_refused);
    g_test_add_func("/pvrdma/hca/events", test_events);
    g_test_add_func("/pvrdma/hca/wc-after-destroy", test_wc_after_destroy);
    return g_test_run();
}
