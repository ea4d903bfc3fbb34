/*
 * End-to-end tests of the pvrdma core through its register, command and
 * doorbell interface, with guest structures laid out in the fake host's
 * RAM the way the Linux vmw_pvrdma driver lays them out.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "fake-driver.h"

/* ------------------------------------------------------------------ */
/* Tests                                                               */

static void test_dsr_caps(void)
{
    Dev d;
    struct pvrdma_device_caps caps_copy, *caps = &caps_copy;
    static const uint8_t guid[8] = { 0x02, 0x50, 0x56, 0xff, 0xfe,
                                     0xaa, 0xbb, 0xcc };

    dev_init(&d, NULL);
    g_assert_cmpuint(pvrdma_core_reg_read(&d.c, PVRDMA_REG_VERSION), ==,
                     PVRDMA_VERSION);
    g_assert_cmphex(pvrdma_core_reg_read(&d.c, PVRDMA_REG_MACL), ==,
                    0xaa565000);
    g_assert_cmphex(pvrdma_core_reg_read(&d.c, PVRDMA_REG_MACH), ==, 0xccbb);
    /* ACTIVATE before the DSR is known */
    pvrdma_core_reg_write(&d.c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
    g_assert_cmpuint(pvrdma_core_reg_read(&d.c, PVRDMA_REG_ERR), !=, 0);
    g_assert_false(d.c.active);

    dev_write_dsr(&d);
    g_assert_cmphex(pvrdma_core_reg_read(&d.c, PVRDMA_REG_DSRLOW), ==,
                    (uint32_t)d.dsr);
    memcpy(caps, (uint8_t *)dsr_of(&d) +
           offsetof(struct pvrdma_device_shared_region, caps), sizeof(*caps));
    g_assert_cmpuint(caps->max_qp, ==, PVRDMA_DEF_MAX_QP);
    g_assert_cmpuint(caps->max_cq, ==, PVRDMA_DEF_MAX_CQ);
    g_assert_cmpuint(caps->max_sge, ==, PVRDMA_DEF_MAX_SGE);
    g_assert_cmpuint(caps->max_qp_wr, ==, PVRDMA_DEF_MAX_QP_WR);
    g_assert_cmpuint(caps->gid_tbl_len, ==, PVRDMA_DEF_GID_TBL_LEN);
    g_assert_cmpuint(caps->gid_types, ==, PVRDMA_GID_TYPE_FLAG_ROCE_V2);
    g_assert_cmpuint(caps->phys_port_cnt, ==, 1);
    g_assert_cmpuint(caps->vendor_id, ==, PVRDMA_VENDOR_ID);
    g_assert_cmpuint(caps->page_size_cap, ==, FH_PAGE);
    g_assert_cmpuint(caps->atomic_ops, ==,
                     PVRDMA_ATOMIC_OP_COMP_SWAP | PVRDMA_ATOMIC_OP_FETCH_ADD);
    g_assert_cmpmem(&caps->node_guid, 8, guid, 8);  /* EUI-64 of the MAC */
    g_assert_cmpmem(&caps->sys_image_guid, 8, guid, 8);
    /* the driver's half of the DSR is untouched */
    g_assert_cmpuint(dsr_of(&d)->cmd_slot_dma, ==, d.cmd);
    g_assert_cmpuint(dsr_of(&d)->async_ring_pages.num_pages, ==, 2);

    pvrdma_core_reg_write(&d.c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
    g_assert_cmpuint(pvrdma_core_reg_read(&d.c, PVRDMA_REG_ERR), ==, 0);
    g_assert_true(d.c.active);
    g_assert_cmpuint(d.c.version, ==, PVRDMA_VERSION);
    g_assert_cmpuint(fh_outstanding(&d.h), ==, 4);  /* 2 rings x 2 pages */
    pvrdma_core_reg_write(&d.c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_UNQUIESCE);
    g_assert_cmpuint(pvrdma_core_reg_read(&d.c, PVRDMA_REG_ERR), ==, 0);
    /* moving the DSR while active is ignored */
    {
        uint64_t errs = d.c.guest_errors;

        pvrdma_core_reg_write(&d.c, PVRDMA_REG_DSRLOW, 0x1000);
        g_assert_cmpuint(d.c.dsr_gpa, ==, d.dsr);
        g_assert_cmpuint(d.c.guest_errors, ==, errs + 1);
    }
    /* commands work; response interrupt only when unmasked */
    {
        union pvrdma_cmd_req req = { 0 };
        union pvrdma_cmd_resp rsp;

        req.query_port.port_num = 1;
        g_assert_cmpuint(dev_cmd(&d, &req, PVRDMA_CMD_QUERY_PORT, &rsp), ==, 0);
        g_assert_cmpuint(rsp.query_port_resp.attrs.state, ==,
                         PVRDMA_PORT_ACTIVE);
        g_assert_cmpuint(rsp.query_port_resp.attrs.gid_tbl_len, ==,
                         PVRDMA_DEF_GID_TBL_LEN);
        g_assert_cmpuint(fh_irq_count(&d.h, PVRDMA_INTR_VECTOR_RESPONSE), ==, 0);
        pvrdma_core_reg_write(&d.c, PVRDMA_REG_IMR, 0);
        memset(&req, 0, sizeof(req));
        req.query_pkey.port_num = 1;
        g_assert_cmpuint(dev_cmd(&d, &req, PVRDMA_CMD_QUERY_PKEY, &rsp), ==, 0);
        g_assert_cmphex(rsp.query_pkey_resp.pkey, ==, 0xffff);
        g_assert_cmpuint(fh_irq_count(&d.h, PVRDMA_INTR_VECTOR_RESPONSE), ==, 1);
    }
    /* reset, then the driver can start over */
    pvrdma_core_reg_write(&d.c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_RESET);
    g_assert_false(d.c.active);
    g_assert_cmpuint(fh_outstanding(&d.h), ==, 0);
    dev_write_dsr(&d);
    pvrdma_core_reg_write(&d.c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
    g_assert_cmpuint(pvrdma_core_reg_read(&d.c, PVRDMA_REG_ERR), ==, 0);
    dev_fini(&d);
}

static void test_activate_refused(void)
{
    Dev d;
    struct pvrdma_device_shared_region *dsr;
    uint64_t errs;

    dev_init(&d, NULL);
    /* DSR address 0 */
    errs = d.c.guest_errors;
    pvrdma_core_reg_write(&d.c, PVRDMA_REG_DSRLOW, 0);
    pvrdma_core_reg_write(&d.c, PVRDMA_REG_DSRHIGH, 0);
    g_assert_false(d.c.dsr_set);
    g_assert_cmpuint(d.c.guest_errors, >, errs);
    /* DSR outside RAM: no capabilities, ACTIVATE fails */
    pvrdma_core_reg_write(&d.c, PVRDMA_REG_DSRLOW, 0);
    pvrdma_core_reg_write(&d.c, PVRDMA_REG_DSRHIGH, 0x10);
    g_assert_false(d.c.dsr_set);
    pvrdma_core_reg_write(&d.c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
    g_assert_cmpuint(pvrdma_core_reg_read(&d.c, PVRDMA_REG_ERR), !=, 0);

    /* bad async ring geometry / unusable ring pages / old driver */
    dev_write_dsr(&d);
    dsr = dsr_of(&d);
    dsr->async_ring_pages.num_pages = 1;
    pvrdma_core_reg_write(&d.c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
    g_assert_cmpuint(pvrdma_core_reg_read(&d.c, PVRDMA_REG_ERR), !=, 0);
    dsr->async_ring_pages.num_pages = PVRDMA_MAX_RING_PAGES + 1;
    pvrdma_core_reg_write(&d.c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
    g_assert_cmpuint(pvrdma_core_reg_read(&d.c, PVRDMA_REG_ERR), !=, 0);
    dsr->async_ring_pages.num_pages = 2;
    /* CQ-notify ring page outside RAM: async ring must be released */
    ((uint64_t *)fh_ptr(&d.h, ((uint64_t *)fh_ptr(&d.h,
        dsr->cq_ring_pages.pdir_dma))[0]))[1] = FH_RAM_BASE + FH_RAM_SIZE;
    pvrdma_core_reg_write(&d.c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
    g_assert_cmpuint(pvrdma_core_reg_read(&d.c, PVRDMA_REG_ERR), !=, 0);
    g_assert_false(d.c.active);
    g_assert_cmpuint(fh_outstanding(&d.h), ==, 0);
    ((uint64_t *)fh_ptr(&d.h, ((uint64_t *)fh_ptr(&d.h,
        dsr->cq_ring_pages.pdir_dma))[0]))[1] = d.cqn_pages[1];
    dsr->driver_version = PVRDMA_ROCEV1_VERSION - 1;
    pvrdma_core_reg_write(&d.c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
    g_assert_cmpuint(pvrdma_core_reg_read(&d.c, PVRDMA_REG_ERR), !=, 0);
    dsr->driver_version = PVRDMA_VERSION;
    dsr->cmd_slot_dma = 0;
    pvrdma_core_reg_write(&d.c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
    g_assert_cmpuint(pvrdma_core_reg_read(&d.c, PVRDMA_REG_ERR), !=, 0);
    g_assert_false(d.c.active);
    g_assert_cmpuint(fh_outstanding(&d.h), ==, 0);
    /* commands and doorbells before activation */
    errs = d.c.guest_errors;
    pvrdma_core_reg_write(&d.c, PVRDMA_REG_REQUEST, 0);
    g_assert_cmpuint(pvrdma_core_reg_read(&d.c, PVRDMA_REG_ERR), !=, 0);
    pvrdma_core_uar_write(&d.c, 0, PVRDMA_UAR_QP_SEND | 2);
    g_assert_cmpuint(d.c.guest_errors, ==, errs + 2);
    /* an older driver (v19) is accepted at its version */
    dsr->cmd_slot_dma = d.cmd;
    dsr->driver_version = PVRDMA_PPN64_VERSION;
    pvrdma_core_reg_write(&d.c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
    g_assert_cmpuint(pvrdma_core_reg_read(&d.c, PVRDMA_REG_ERR), ==, 0);
    g_assert_cmpuint(d.c.version, ==, PVRDMA_PPN64_VERSION);
    dev_fini(&d);
}

static void test_send(void)
{
    Pair p;
    Dev *d = &p.d;
    uint8_t data[5000], got[5000];
    struct pvrdma_sge sa[2], sb[2];
    struct pvrdma_sq_wqe_hdr w = { 0 };
    struct pvrdma_cqe e;
    struct pvrdma_cqne *n;

    pair_setup(&p, 7);
    fill_pattern(data, sizeof(data), 1);
    mr_fill(d, &p.mrb, 0xcc);
    /* source: 2 SGEs crossing pages of MR A */
    mr_write(d, &p.mra, MRA_IOVA + 50, data, sizeof(data));
    sa[0] = (struct pvrdma_sge) { MRA_IOVA + 50, 3000, p.mra.lkey };
    sa[1] = (struct pvrdma_sge) { MRA_IOVA + 3050, 2000, p.mra.lkey };
    /* sink: 2 SGEs of MR B, 6000 bytes of room */
    sb[0] = (struct pvrdma_sge) { MRB_IOVA + 10, 1000, p.mrb.lkey };
    sb[1] = (struct pvrdma_sge) { MRB_IOVA + 8000, 5000, p.mrb.lkey };
    post_recv(d, &p.b, 0xb1, sb, 2);
    /* arm B's CQ: the receive completion is notified */
    pvrdma_core_uar_write(&d->c, PVRDMA_UAR_CQ_OFFSET,
                          PVRDMA_UAR_CQ_ARM | p.cqb.handle);
    w.wr_id = 0xa1;
    w.opcode = PVRDMA_WR_SEND;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    post_send(d, &p.a, &w, sa, 2);
    g_assert_cmpuint(d->c.run.length, ==, 1);
    g_assert_cmpuint(d->h.last_kick_delay, ==, 0);
    run_all(d);

    expect_cqe(d, &p.cqa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 5000,
               p.a.handle);
    g_assert_true(poll_cq(d, &p.cqb, &e));
    g_assert_cmphex(e.wr_id, ==, 0xb1);
    g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
    g_assert_cmpuint(e.opcode, ==, PVRDMA_WC_RECV);
    g_assert_cmpuint(e.byte_len, ==, 5000);
    g_assert_cmpuint(e.qp, ==, p.b.handle);
    g_assert_cmpuint(e.src_qp, ==, p.a.qpn);
    g_assert_cmpuint(e.network_hdr_type, ==, PVRDMA_NETWORK_IPV4);
    g_assert_cmpmem(e.smac, 6, d->h.mac, 6);
    g_assert_true(e.wc_flags & PVRDMA_WC_WITH_NETWORK_HDR_TYPE);
    /* data landed in the two sink SGEs, nothing around them moved */
    mr_read(d, &p.mrb, MRB_IOVA + 10, got, 1000);
    g_assert_cmpmem(got, 1000, data, 1000);
    mr_read(d, &p.mrb, MRB_IOVA + 8000, got, 4000);
    g_assert_cmpmem(got, 4000, data + 1000, 4000);
    g_assert_cmphex(*mr_byte(d, &p.mrb, MRB_IOVA + 9), ==, 0xcc);
    g_assert_cmphex(*mr_byte(d, &p.mrb, MRB_IOVA + 1010), ==, 0xcc);
    g_assert_cmphex(*mr_byte(d, &p.mrb, MRB_IOVA + 12000), ==, 0xcc);
    /* consumer indices published */
    g_assert_cmpuint(qp_rings(d, &p.a)[0].cons_head, ==, 1);
    g_assert_cmpuint(qp_rings(d, &p.b)[1].cons_head, ==, 1);
    /* CQ notification for B only */
    g_assert_cmpuint(fh_irq_count(&d->h, PVRDMA_INTR_VECTOR_CQ), ==, 1);
    n = fh_ptr(&d->h, d->cqn_pages[1]);
    g_assert_cmpuint(n[0].info, ==, p.cqb.handle);
    g_assert_cmpuint(((struct pvrdma_ring_state *)
                      fh_ptr(&d->h, d->cqn_pages[0]))->rx.prod_tail, ==, 1);

    /* an unsignaled send completes silently on the requester */
    post_recv(d, &p.b, 0xb2, sb, 2);
    w.wr_id = 0xa2;
    w.send_flags = 0;
    w.opcode = PVRDMA_WR_SEND_WITH_IMM;
    w.ex.imm_data = 0x11223344;
    post_send(d, &p.a, &w, sa, 1);
    run_all(d);
    expect_cq_empty(d, &p.cqa);
    g_assert_true(poll_cq(d, &p.cqb, &e));
    g_assert_cmphex(e.wr_id, ==, 0xb2);
    g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
    g_assert_cmpuint(e.byte_len, ==, 3000);
    g_assert_cmphex(e.imm_data, ==, 0x11223344);
    g_assert_true(e.wc_flags & PVRDMA_WC_WITH_IMM);
    g_assert_cmpuint(fh_irq_count(&d->h, PVRDMA_INTR_VECTOR_CQ), ==, 1);
    pair_fini(&p);
}

/* What the SQ's consumer index says when a send's CQE is announced. */
typedef struct ConsAtCqe {
    Dev *d;
    TQp *qp;
    int seen;               /* -1: no CQ interrupt yet */
} ConsAtCqe;

static void cons_at_cqe(FakeHost *h, unsigned vector, void *arg)
{
    ConsAtCqe *x = arg;

    if (vector == PVRDMA_INTR_VECTOR_CQ && x->seen < 0) {
        x->seen = qp_rings(x->d, x->qp)[0].cons_head;
    }
}

/*
 * A send's slot in the SQ is free before its completion can be seen:
 * libvmw_pvrdma refuses a post (ENOMEM) against the consumer index, and
 * a program posts again as soon as it polls a CQE (ib_send_bw does, with
 * an SQ as deep as its window).
 */
static void test_sq_cons_before_cqe(void)
{
    Pair p;
    Dev *d = &p.d;
    struct pvrdma_sge sa = { MRA_IOVA, 100, 0 }, sb = { MRB_IOVA, 100, 0 };
    struct pvrdma_sq_wqe_hdr w = { 0 };
    ConsAtCqe x = { .d = &p.d, .qp = &p.a, .seen = -1 };

    pair_setup(&p, 7);
    sa.lkey = p.mra.lkey;
    sb.lkey = p.mrb.lkey;
    post_recv(d, &p.b, 0xb1, &sb, 1);
    pvrdma_core_uar_write(&d->c, PVRDMA_UAR_CQ_OFFSET,
                          PVRDMA_UAR_CQ_ARM | p.cqa.handle);
    d->h.on_notify = cons_at_cqe;
    d->h.on_notify_arg = &x;
    w.wr_id = 0xa1;
    w.opcode = PVRDMA_WR_SEND;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    post_send(d, &p.a, &w, &sa, 1);
    run_all(d);
    d->h.on_notify = NULL;
    g_assert_cmpint(x.seen, ==, 1);
    expect_cqe(d, &p.cqa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 100,
               p.a.handle);
    expect_cqe(d, &p.cqb, 0xb1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 100,
               p.b.handle);
    pair_fini(&p);
}

/* A guest that re-arms its CQs as soon as it is notified. */
typedef struct Rearm {
    Pair *p;
    unsigned irqs;
    uint32_t prod[2][2];    /* per interrupt (first two): cqa's, cqb's */
} Rearm;

static void rearm_at_irq(FakeHost *h, unsigned vector, void *arg)
{
    Rearm *x = arg;
    Dev *d = &x->p->d;

    if (vector != PVRDMA_INTR_VECTOR_CQ) {
        return;
    }
    if (x->irqs < 2) {
        x->prod[x->irqs][0] = cq_state(d, &x->p->cqa)->rx.prod_tail;
        x->prod[x->irqs][1] = cq_state(d, &x->p->cqb)->rx.prod_tail;
    }
    x->irqs++;
    pvrdma_core_uar_write(&d->c, PVRDMA_UAR_CQ_OFFSET,
                          PVRDMA_UAR_CQ_ARM | x->p->cqa.handle);
    pvrdma_core_uar_write(&d->c, PVRDMA_UAR_CQ_OFFSET,
                          PVRDMA_UAR_CQ_ARM | x->p->cqb.handle);
}

/*
 * Completions are written in batches: a burst of 8 SENDs in one run makes
 * one interrupt per CQ, with all 8 CQEs of that CQ published before it,
 * even for a guest that re-arms at once (it would take one per CQE).
 */
static void test_cq_batch(void)
{
    Pair p;
    Dev *d = &p.d;
    struct pvrdma_sge sa = { MRA_IOVA, 100, 0 }, sb = { MRB_IOVA, 100, 0 };
    struct pvrdma_sq_wqe_hdr w = { 0 };
    Rearm x = { .p = &p };

    pair_setup(&p, 7);
    sa.lkey = p.mra.lkey;
    sb.lkey = p.mrb.lkey;
    for (int i = 0; i < 8; i++) {
        post_recv(d, &p.b, 0xb0 + i, &sb, 1);
    }
    pvrdma_core_uar_write(&d->c, PVRDMA_UAR_CQ_OFFSET,
                          PVRDMA_UAR_CQ_ARM | p.cqa.handle);
    pvrdma_core_uar_write(&d->c, PVRDMA_UAR_CQ_OFFSET,
                          PVRDMA_UAR_CQ_ARM | p.cqb.handle);
    d->h.on_notify = rearm_at_irq;
    d->h.on_notify_arg = &x;
    w.opcode = PVRDMA_WR_SEND;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    for (int i = 0; i < 8; i++) {
        w.wr_id = 0xa0 + i;
        put_send(d, &p.a, &w, &sa, 1);
    }
    ring_send(d, &p.a);
    run_all(d);
    d->h.on_notify = NULL;
    g_assert_cmpuint(x.irqs, ==, 2);
    /* the first CQ notified had its 8 published, the other none yet */
    g_assert_cmpuint(x.prod[0][0] + x.prod[0][1], ==, 8);
    g_assert_true(x.prod[0][0] == 8 || x.prod[0][1] == 8);
    g_assert_cmpuint(x.prod[1][0], ==, 8);
    g_assert_cmpuint(x.prod[1][1], ==, 8);
    for (int i = 0; i < 8; i++) {
        expect_cqe(d, &p.cqa, 0xa0 + i, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND,
                   100, p.a.handle);
        expect_cqe(d, &p.cqb, 0xb0 + i, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV,
                   100, p.b.handle);
    }
    expect_cq_empty(d, &p.cqa);
    expect_cq_empty(d, &p.cqb);
    pair_fini(&p);
}

/*
 * Quiesced for a save, the device executes nothing, even what was posted
 * before: a postcopy destination would take the pages changed after the
 * save from the source, and execute the request again.  Resumed, it runs.
 */
static void test_paused_runs_nothing(void)
{
    Pair p;
    Dev *d = &p.d;
    struct pvrdma_sge sa = { MRA_IOVA, 100, 0 }, sb = { MRB_IOVA, 100, 0 };
    struct pvrdma_sq_wqe_hdr w = { 0 };
    uint8_t data[100], got[100], zero[100] = { 0 };

    pair_setup(&p, 7);
    sa.lkey = p.mra.lkey;
    sb.lkey = p.mrb.lkey;
    fill_pattern(data, sizeof(data), 5);
    mr_write(d, &p.mra, MRA_IOVA, data, sizeof(data));
    mr_write(d, &p.mrb, MRB_IOVA, zero, sizeof(zero));
    post_recv(d, &p.b, 0xb1, &sb, 1);
    w.wr_id = 0xa1;
    w.opcode = PVRDMA_WR_SEND;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    put_send(d, &p.a, &w, &sa, 1);
    ring_send(d, &p.a);             /* queued for the run loop */
    g_assert_true(pvrdma_core_quiesce(&d->c, 1000));
    pvrdma_core_run(&d->c);
    g_assert_cmpuint(d->c.run.length, ==, 1);  /* still queued */
    expect_cq_empty(d, &p.cqa);
    expect_cq_empty(d, &p.cqb);
    mr_read(d, &p.mrb, MRB_IOVA, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), zero, sizeof(zero));
    pvrdma_core_resume(&d->c);
    run_all(d);
    expect_cqe(d, &p.cqa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 100,
               p.a.handle);
    expect_cqe(d, &p.cqb, 0xb1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 100,
               p.b.handle);
    mr_read(d, &p.mrb, MRB_IOVA, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));
    pair_fini(&p);
}

/*
 * The port follows the paired NIC's link: PORT_ERR and PORT_ACTIVE for the
 * guest, a report for the host (PVRDMA_PORT_CHANGED) on each change only.
 */
static void test_port_reports(void)
{
    Pair p;
    Dev *d = &p.d;

    pair_setup(&p, 7);
    pvrdma_core_check_link(&d->c);
    g_assert_cmpuint(d->h.reports->len, ==, 0);
    d->h.link_down = true;
    pvrdma_core_check_link(&d->c);
    pvrdma_core_check_link(&d->c);
    g_assert_cmpuint(fh_reports(&d->h, "port down"), ==, 1);
    d->h.link_down = false;
    pvrdma_core_check_link(&d->c);
    g_assert_cmpuint(fh_reports(&d->h, "port up"), ==, 1);
    g_assert_cmpuint(d->h.reports->len, ==, 2);
    pair_fini(&p);
}

static void test_send_too_long(void)
{
    Pair p;
    Dev *d = &p.d;
    struct pvrdma_sge sa = { MRA_IOVA, 2000, 0 };
    struct pvrdma_sge sb = { MRB_IOVA, 1000, 0 };
    struct pvrdma_sq_wqe_hdr w = { 0 };

    pair_setup(&p, 7);
    sa.lkey = p.mra.lkey;
    sb.lkey = p.mrb.lkey;
    post_recv(d, &p.b, 0xb1, &sb, 1);
    w.wr_id = 0xa1;
    w.opcode = PVRDMA_WR_SEND;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    post_send(d, &p.a, &w, &sa, 1);
    run_all(d);
    /* responder: local length error; requester: remote invalid request */
    expect_cqe(d, &p.cqb, 0xb1, PVRDMA_WC_LOC_LEN_ERR, PVRDMA_WC_RECV, 0,
               p.b.handle);
    expect_cqe(d, &p.cqa, 0xa1, PVRDMA_WC_REM_INV_REQ_ERR, PVRDMA_WC_SEND, 0,
               p.a.handle);
    g_assert_cmpuint(query_qp_state(d, &p.a), ==, PVRDMA_QPS_ERR);
    g_assert_cmpuint(query_qp_state(d, &p.b), ==, PVRDMA_QPS_ERR);
    pair_fini(&p);
}

static void test_rdma_write(void)
{
    Pair p;
    Dev *d = &p.d;
    uint8_t data[6000], got[6000];
    struct pvrdma_sge sa;
    struct pvrdma_sq_wqe_hdr w = { 0 };
    struct pvrdma_cqe e;

    pair_setup(&p, 7);
    fill_pattern(data, sizeof(data), 2);
    mr_fill(d, &p.mrb, 0x11);
    mr_write(d, &p.mra, MRA_IOVA + 700, data, sizeof(data));
    sa = (struct pvrdma_sge) { MRA_IOVA + 700, 6000, p.mra.lkey };
    w.wr_id = 0xa1;
    w.opcode = PVRDMA_WR_RDMA_WRITE;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.wr.rdma.remote_addr = MRB_IOVA + 300;
    w.wr.rdma.rkey = p.mrb.rkey;
    post_send(d, &p.a, &w, &sa, 1);
    run_all(d);
    expect_cqe(d, &p.cqa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE, 6000,
               p.a.handle);
    expect_cq_empty(d, &p.cqb);     /* plain WRITE: no receive consumed */
    mr_read(d, &p.mrb, MRB_IOVA + 300, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));
    g_assert_cmphex(*mr_byte(d, &p.mrb, MRB_IOVA + 299), ==, 0x11);
    g_assert_cmphex(*mr_byte(d, &p.mrb, MRB_IOVA + 6300), ==, 0x11);

    /* WRITE_WITH_IMM consumes a receive, byte_len is the write length */
    {
        struct pvrdma_sge sb = { MRB_IOVA, 16, p.mrb.lkey };

        post_recv(d, &p.b, 0xb1, &sb, 1);
    }
    sa.length = 100;
    w.wr_id = 0xa2;
    w.opcode = PVRDMA_WR_RDMA_WRITE_WITH_IMM;
    w.ex.imm_data = 0xdeadbeef;
    w.wr.rdma.remote_addr = MRB_IOVA + 10000;
    post_send(d, &p.a, &w, &sa, 1);
    run_all(d);
    expect_cqe(d, &p.cqa, 0xa2, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE, 100,
               p.a.handle);
    g_assert_true(poll_cq(d, &p.cqb, &e));
    g_assert_cmphex(e.wr_id, ==, 0xb1);
    g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
    g_assert_cmpuint(e.opcode, ==, PVRDMA_WC_RECV_RDMA_WITH_IMM);
    g_assert_cmpuint(e.byte_len, ==, 100);
    g_assert_cmphex(e.imm_data, ==, 0xdeadbeef);
    g_assert_true(e.wc_flags & PVRDMA_WC_WITH_IMM);
    mr_read(d, &p.mrb, MRB_IOVA + 10000, got, 100);
    g_assert_cmpmem(got, 100, data, 100);
    pair_fini(&p);
}

static void test_rdma_read(void)
{
    Pair p;
    Dev *d = &p.d;
    uint8_t data[9000], got[9000];
    struct pvrdma_sge sa[3];
    struct pvrdma_sq_wqe_hdr w = { 0 };

    pair_setup(&p, 7);
    fill_pattern(data, sizeof(data), 3);
    mr_write(d, &p.mrb, MRB_IOVA + 4000, data, sizeof(data));
    mr_fill(d, &p.mra, 0);
    /* sink scattered over 3 SGEs of MR A */
    sa[0] = (struct pvrdma_sge) { MRA_IOVA + 8000, 4000, p.mra.lkey };
    sa[1] = (struct pvrdma_sge) { MRA_IOVA, 1, p.mra.lkey };
    sa[2] = (struct pvrdma_sge) { MRA_IOVA + 1, 4999, p.mra.lkey };
    w.wr_id = 0xa1;
    w.opcode = PVRDMA_WR_RDMA_READ;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.wr.rdma.remote_addr = MRB_IOVA + 4000;
    w.wr.rdma.rkey = p.mrb.rkey;
    post_send(d, &p.a, &w, sa, 3);
    run_all(d);
    expect_cqe(d, &p.cqa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_READ, 9000,
               p.a.handle);
    mr_read(d, &p.mra, MRA_IOVA + 8000, got, 4000);
    mr_read(d, &p.mra, MRA_IOVA, got + 4000, 5000);
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));
    pair_fini(&p);
}

static void test_atomics(void)
{
    Pair p;
    Dev *d = &p.d;
    struct pvrdma_sge sa;
    struct pvrdma_sq_wqe_hdr w = { 0 };
    const uint64_t raddr = MRB_IOVA + 0x100;    /* 8-aligned */
    uint64_t v = 100, r;

    pair_setup(&p, 7);
    mr_write(d, &p.mrb, raddr, &v, 8);
    sa = (struct pvrdma_sge) { MRA_IOVA + 8, 8, p.mra.lkey };
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.wr.atomic.remote_addr = raddr;
    w.wr.atomic.rkey = p.mrb.rkey;

    /* fetch-add 5: remote 105, local gets 100 */
    w.wr_id = 1;
    w.opcode = PVRDMA_WR_ATOMIC_FETCH_AND_ADD;
    w.wr.atomic.compare_add = 5;
    post_send(d, &p.a, &w, &sa, 1);
    run_all(d);
    expect_cqe(d, &p.cqa, 1, PVRDMA_WC_SUCCESS, PVRDMA_WC_FETCH_ADD, 8,
               p.a.handle);
    mr_read(d, &p.mrb, raddr, &r, 8);
    g_assert_cmpuint(r, ==, 105);
    mr_read(d, &p.mra, MRA_IOVA + 8, &r, 8);
    g_assert_cmpuint(r, ==, 100);

    /* compare-swap matching: remote 7, local gets 105 */
    w.wr_id = 2;
    w.opcode = PVRDMA_WR_ATOMIC_CMP_AND_SWP;
    w.wr.atomic.compare_add = 105;
    w.wr.atomic.swap = 7;
    post_send(d, &p.a, &w, &sa, 1);
    /* compare-swap not matching: remote stays 7, local gets 7 */
    w.wr_id = 3;
    w.wr.atomic.compare_add = 1;
    w.wr.atomic.swap = 9;
    post_send(d, &p.a, &w, &sa, 1);
    run_all(d);
    expect_cqe(d, &p.cqa, 2, PVRDMA_WC_SUCCESS, PVRDMA_WC_COMP_SWAP, 8,
               p.a.handle);
    expect_cqe(d, &p.cqa, 3, PVRDMA_WC_SUCCESS, PVRDMA_WC_COMP_SWAP, 8,
               p.a.handle);
    mr_read(d, &p.mrb, raddr, &r, 8);
    g_assert_cmpuint(r, ==, 7);
    mr_read(d, &p.mra, MRA_IOVA + 8, &r, 8);
    g_assert_cmpuint(r, ==, 7);

    /* misaligned remote address: remote access error */
    w.wr_id = 4;
    w.opcode = PVRDMA_WR_ATOMIC_FETCH_AND_ADD;
    w.wr.atomic.remote_addr = raddr + 4;
    post_send(d, &p.a, &w, &sa, 1);
    run_all(d);
    expect_cqe(d, &p.cqa, 4, PVRDMA_WC_REM_ACCESS_ERR, PVRDMA_WC_FETCH_ADD, 0,
               p.a.handle);
    pair_fini(&p);
}

static void test_bad_rkey_flush(void)
{
    Pair p;
    Dev *d = &p.d;
    struct pvrdma_sge sa = { MRA_IOVA, 64, 0 }, ra = { MRA_IOVA, 64, 0 };
    struct pvrdma_sq_wqe_hdr w = { 0 };
    uint8_t before[64], after[64];
    uint64_t errs;

    pair_setup(&p, 7);
    sa.lkey = ra.lkey = p.mra.lkey;
    mr_fill(d, &p.mrb, 0x77);
    mr_read(d, &p.mrb, MRB_IOVA, before, 64);
    post_recv(d, &p.a, 0xa0, &ra, 1);      /* flushed with the SQ */
    errs = d->c.guest_errors;

    w.opcode = PVRDMA_WR_RDMA_WRITE;
    w.wr.rdma.remote_addr = MRB_IOVA;
    w.wr.rdma.rkey = p.mrb.rkey ^ 0x01;     /* wrong key byte */
    w.wr_id = 1;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    put_send(d, &p.a, &w, &sa, 1);
    w.wr_id = 2;
    w.opcode = PVRDMA_WR_SEND;
    put_send(d, &p.a, &w, &sa, 1);
    w.wr_id = 3;
    w.opcode = PVRDMA_WR_RDMA_WRITE;
    w.wr.rdma.rkey = p.mrb.rkey;            /* good, but after the error */
    w.send_flags = 0;
    put_send(d, &p.a, &w, &sa, 1);
    ring_send(d, &p.a);
    run_all(d);

    expect_cqe(d, &p.cqa, 1, PVRDMA_WC_REM_ACCESS_ERR, PVRDMA_WC_RDMA_WRITE, 0,
               p.a.handle);
    expect_cqe(d, &p.cqa, 2, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_SEND, 0,
               p.a.handle);
    expect_cqe(d, &p.cqa, 3, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_RDMA_WRITE, 0,
               p.a.handle);
    expect_cqe(d, &p.cqa, 0xa0, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_RECV, 0,
               p.a.handle);
    expect_cq_empty(d, &p.cqa);
    g_assert_cmpuint(d->c.guest_errors, >, errs);
    g_assert_cmpuint(query_qp_state(d, &p.a), ==, PVRDMA_QPS_ERR);
    /*
     * A remote access error is fatal for the responder's QP as well (IBA
     * class C, as Linux rxe does); its memory is untouched.
     */
    g_assert_cmpuint(query_qp_state(d, &p.b), ==, PVRDMA_QPS_ERR);
    mr_read(d, &p.mrb, MRB_IOVA, after, 64);
    g_assert_cmpmem(before, 64, after, 64);
    g_assert_cmpuint(qp_rings(d, &p.a)[0].cons_head, ==, 3);
    g_assert_cmpuint(qp_rings(d, &p.a)[1].cons_head, ==, 1);

    /* WQEs posted to a QP in error are flushed too */
    w.wr_id = 4;
    post_send(d, &p.a, &w, &sa, 1);
    ra.length = 8;
    post_recv(d, &p.a, 0xa5, &ra, 1);
    run_all(d);
    expect_cqe(d, &p.cqa, 4, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_RDMA_WRITE, 0,
               p.a.handle);
    expect_cqe(d, &p.cqa, 0xa5, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_RECV, 0,
               p.a.handle);

    /* B went to error with A: what it posts now is flushed */
    {
        struct pvrdma_sge sb = { MRB_IOVA, 64, p.mrb.lkey };

        w.wr_id = 5;
        w.send_flags = PVRDMA_SEND_SIGNALED;
        w.opcode = PVRDMA_WR_RDMA_READ;
        w.wr.rdma.remote_addr = MRA_IOVA;
        w.wr.rdma.rkey = p.mra.rkey;
        post_send(d, &p.b, &w, &sb, 1);
        run_all(d);
        expect_cqe(d, &p.cqb, 5, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_RDMA_READ,
                   0, p.b.handle);
    }
    pair_fini(&p);
}

static void test_remote_range(void)
{
    Pair p;
    Dev *d = &p.d;
    struct pvrdma_sge sa = { MRA_IOVA, 64, 0 };
    struct pvrdma_sq_wqe_hdr w = { 0 };

    pair_setup(&p, 7);
    sa.lkey = p.mra.lkey;
    /* one byte past the end of MR B */
    w.wr_id = 1;
    w.opcode = PVRDMA_WR_RDMA_WRITE;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.wr.rdma.remote_addr = MRB_IOVA + MRB_LEN - 63;
    w.wr.rdma.rkey = p.mrb.rkey;
    post_send(d, &p.a, &w, &sa, 1);
    run_all(d);
    expect_cqe(d, &p.cqa, 1, PVRDMA_WC_REM_ACCESS_ERR, PVRDMA_WC_RDMA_WRITE, 0,
               p.a.handle);
    pair_fini(&p);
}

static void test_local_prot(void)
{
    Pair p;
    Dev *d = &p.d;
    struct pvrdma_sge sa = { MRA_IOVA + MRA_LEN - 10, 11, 0 };
    struct pvrdma_sq_wqe_hdr w = { 0 };

    pair_setup(&p, 7);
    sa.lkey = p.mra.lkey;
    /* local SGE beyond the MR: local protection error, nothing sent */
    w.wr_id = 1;
    w.opcode = PVRDMA_WR_RDMA_WRITE;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.wr.rdma.remote_addr = MRB_IOVA;
    w.wr.rdma.rkey = p.mrb.rkey;
    post_send(d, &p.a, &w, &sa, 1);
    run_all(d);
    expect_cqe(d, &p.cqa, 1, PVRDMA_WC_LOC_PROT_ERR, PVRDMA_WC_RDMA_WRITE, 0,
               p.a.handle);
    pair_fini(&p);
}

static void test_rnr_recover(void)
{
    Pair p;
    Dev *d = &p.d;
    struct pvrdma_sge sa = { MRA_IOVA, 64, 0 }, sb = { MRB_IOVA, 64, 0 };
    struct pvrdma_sq_wqe_hdr w = { 0 };

    pair_setup(&p, 7);      /* rnr_retry 7: wait forever */
    sa.lkey = p.mra.lkey;
    sb.lkey = p.mrb.lkey;
    w.wr_id = 1;
    w.opcode = PVRDMA_WR_SEND;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    post_send(d, &p.a, &w, &sa, 1);
    run_all(d);
    expect_cq_empty(d, &p.cqa);
    g_assert_cmpuint(qp_rings(d, &p.a)[0].cons_head, ==, 0);
    d->h.now += 1000000;
    pvrdma_core_run(&d->c);
    expect_cq_empty(d, &p.cqa);
    post_recv(d, &p.b, 0xb1, &sb, 1);   /* RECV doorbell wakes the sender */
    run_all(d);
    expect_cqe(d, &p.cqa, 1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 64,
               p.a.handle);
    expect_cqe(d, &p.cqb, 0xb1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 64,
               p.b.handle);
    pair_fini(&p);
}

/*
 * RNR with a finite rnr_retry: the sender waits, asks the host for a run
 * after the deadline (kick with a delay), and when that run happens the
 * WQE must complete with RNR_RETRY_EXC_ERR.
 */
static void test_rnr_timeout(void)
{
    Pair p;
    Dev *d = &p.d;
    struct pvrdma_sge sa = { MRA_IOVA, 64, 0 };
    struct pvrdma_sq_wqe_hdr w = { 0 };
    struct pvrdma_cqe e;
    unsigned delay;

    pair_setup(&p, 1);      /* rnr_retry 1, min_rnr_timer 1 */
    sa.lkey = p.mra.lkey;
    w.wr_id = 1;
    w.opcode = PVRDMA_WR_SEND;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    post_send(d, &p.a, &w, &sa, 1);
    d->h.last_kick_delay = 0;
    run_all(d);
    expect_cq_empty(d, &p.cqa);
    delay = d->h.last_kick_delay;
    g_assert_cmpuint(delay, ==, 20);        /* 10 * (1 + 1) * 1 ms */
    /* the host's timer fires after the delay and runs the device */
    d->h.now += delay;
    pvrdma_core_run(&d->c);
    run_all(d);
    if (!poll_cq(d, &p.cqa, &e)) {
        g_test_message("BUG: no completion after the RNR deadline; "
                       "QP queued=%d rnr_wait=%d run.length=%u",
                       pvrdma_qp_get(&d->c, p.a.handle)->queued,
                       pvrdma_qp_get(&d->c, p.a.handle)->rnr_wait,
                       d->c.run.length);
        g_test_fail();
    } else {
        g_assert_cmphex(e.wr_id, ==, 1);
        g_assert_cmpuint(e.status, ==, PVRDMA_WC_RNR_RETRY_EXC_ERR);
    }
    pair_fini(&p);
}

/*
 * A request no responder answers (here the destination QP is gone) fails
 * as on a wire: RETRY_EXC_ERR when the requester's retries have run out
 * (timeout 14, retry_cnt 7: 8 x 67 ms), not before, and nothing after it
 * runs.  With timeout 0 (no timer) it never fails: the QP waits until the
 * guest moves it to error, which flushes it.
 */
static void test_no_responder(void)
{
    Pair p;
    Dev *d = &p.d;
    struct pvrdma_sge sa = { MRA_IOVA, 64, 0 };
    struct pvrdma_sq_wqe_hdr w = { 0 };
    struct pvrdma_qp_attr at = { 0 };
    union pvrdma_cmd_req req = { 0 };
    TQp c;

    pair_setup(&p, 7);
    sa.lkey = p.mra.lkey;
    req.destroy_qp.qp_handle = p.b.handle;
    g_assert_cmpuint(dev_cmd(d, &req, PVRDMA_CMD_DESTROY_QP, NULL), ==, 0);
    w.opcode = PVRDMA_WR_SEND;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.wr_id = 1;
    post_send(d, &p.a, &w, &sa, 1);
    w.wr_id = 2;
    post_send(d, &p.a, &w, &sa, 1);
    run_all(d);
    g_assert_cmpint(d->h.timer_due, ==, d->h.now + 536);
    expect_retry_window(d, &p.cqa, &p.a, 536, 1, 2);

    /* timeout 0: no local ACK timer, the request waits for ever */
    create_qp(d, &c, p.pd, p.cqa.handle, p.cqa.handle, PVRDMA_QPT_RC);
    rc_to_rts(d, &c, p.b.qpn, 7);
    at.timeout = 0;
    g_assert_cmpuint(modify_qp(d, &c, PVRDMA_QP_TIMEOUT, &at), ==, 0);
    w.wr_id = 3;
    post_send(d, &c, &w, &sa, 1);
    run_all(d);
    d->h.now += 100000000;
    pvrdma_core_run(&d->c);
    run_all(d);
    expect_cq_empty(d, &p.cqa);
    g_assert_cmpuint(d->c.holders, ==, 1);
    at.qp_state = PVRDMA_QPS_ERR;
    g_assert_cmpuint(modify_qp(d, &c, PVRDMA_QP_STATE, &at), ==, 0);
    run_all(d);
    expect_cqe(d, &p.cqa, 3, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_SEND, 0,
               c.handle);
    g_assert_cmpuint(d->c.holders, ==, 0);
    pair_fini(&p);
}

static void test_ud(void)
{
    Dev d;
    TCq cq;
    TQp a, b;
    TMr mr;
    uint32_t pd;
    struct pvrdma_qp_attr at = { 0 };
    struct pvrdma_sq_wqe_hdr w = { 0 };
    struct pvrdma_sge sa, sb;
    struct pvrdma_cqe e;
    uint8_t data[300], got[340];

    dev_setup(&d, NULL);
    pd = create_pd(&d, 0);
    bind_gid(&d, 0, test_gid);
    create_cq(&d, &cq, 32);
    create_qp(&d, &a, pd, cq.handle, cq.handle, PVRDMA_QPT_UD);
    create_qp(&d, &b, pd, cq.handle, cq.handle, PVRDMA_QPT_UD);
    create_mr(&d, &mr, pd, 0x10000, 2 * FH_PAGE, PVRDMA_ACCESS_LOCAL_WRITE);
    for (TQp *q = &a; q; q = q == &a ? &b : NULL) {
        memset(&at, 0, sizeof(at));
        at.qp_state = PVRDMA_QPS_INIT;
        at.port_num = 1;
        at.qkey = 0x1111;
        g_assert_cmpuint(modify_qp(&d, q, PVRDMA_QP_STATE |
                                   PVRDMA_QP_PKEY_INDEX | PVRDMA_QP_PORT |
                                   PVRDMA_QP_QKEY, &at), ==, 0);
        at.qp_state = PVRDMA_QPS_RTR;
        g_assert_cmpuint(modify_qp(&d, q, PVRDMA_QP_STATE, &at), ==, 0);
        at.qp_state = PVRDMA_QPS_RTS;
        g_assert_cmpuint(modify_qp(&d, q, PVRDMA_QP_STATE | PVRDMA_QP_SQ_PSN,
                                   &at), ==, 0);
    }
    fill_pattern(data, sizeof(data), 4);
    mr_write(&d, &mr, 0x10000, data, sizeof(data));
    sb = (struct pvrdma_sge) { 0x10000 + FH_PAGE - 20, 400, mr.lkey };
    post_recv(&d, &b, 0xb1, &sb, 1);
    sa = (struct pvrdma_sge) { 0x10000, 300, mr.lkey };
    w.wr_id = 0xa1;
    w.opcode = PVRDMA_WR_SEND;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.wr.ud.remote_qpn = b.qpn;
    w.wr.ud.remote_qkey = 0x1111;
    memcpy(w.wr.ud.av.dgid, test_gid, 16);
    post_send(&d, &a, &w, &sa, 1);
    /* wrong qkey: silently dropped, the sender still succeeds */
    w.wr_id = 0xa2;
    w.wr.ud.remote_qkey = 0x2222;
    post_send(&d, &a, &w, &sa, 1);
    run_all(&d);
    /* the responder's completion is written first (same CQ) */
    g_assert_true(poll_cq(&d, &cq, &e));
    g_assert_cmphex(e.wr_id, ==, 0xb1);
    g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
    g_assert_cmpuint(e.byte_len, ==, 340);      /* GRH + payload */
    g_assert_true(e.wc_flags & PVRDMA_WC_GRH);
    g_assert_cmpuint(e.src_qp, ==, a.qpn);
    g_assert_cmpuint(e.qp, ==, b.handle);
    expect_cqe(&d, &cq, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 300,
               a.handle);
    expect_cqe(&d, &cq, 0xa2, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 300,
               a.handle);
    expect_cq_empty(&d, &cq);
    mr_read(&d, &mr, 0x10000 + FH_PAGE - 20, got, 340);
    g_assert_cmpmem(got + 40, 300, data, 300);
    g_assert_cmphex(got[20], ==, 0x45);         /* IPv4 header in the GRH */
    dev_fini(&d);
}

/* Tear objects down in driver order; each step succeeds, nothing leaks. */
static void test_destroy(void)
{
    Pair p;
    Dev *d = &p.d;
    union pvrdma_cmd_req req;
    union pvrdma_cmd_resp rsp;
    unsigned base_maps;

    pair_setup(&p, 7);
    memset(&req, 0, sizeof(req));
    req.destroy_qp.qp_handle = p.a.handle;
    g_assert_cmpuint(dev_cmd(d, &req, PVRDMA_CMD_DESTROY_QP, &rsp), ==, 0);
    req.destroy_qp.qp_handle = p.b.handle;
    g_assert_cmpuint(dev_cmd(d, &req, PVRDMA_CMD_DESTROY_QP, &rsp), ==, 0);
    expect_err(d, &req, PVRDMA_CMD_DESTROY_QP, EINVAL);     /* twice */
    memset(&req, 0, sizeof(req));
    req.destroy_mr.mr_handle = p.mra.handle;
    g_assert_cmpuint(dev_cmd(d, &req, PVRDMA_CMD_DESTROY_MR, NULL), ==, 0);
    req.destroy_mr.mr_handle = p.mrb.handle;
    g_assert_cmpuint(dev_cmd(d, &req, PVRDMA_CMD_DESTROY_MR, NULL), ==, 0);
    req.destroy_cq.cq_handle = p.cqa.handle;
    g_assert_cmpuint(dev_cmd(d, &req, PVRDMA_CMD_DESTROY_CQ, NULL), ==, 0);
    req.destroy_cq.cq_handle = p.cqb.handle;
    g_assert_cmpuint(dev_cmd(d, &req, PVRDMA_CMD_DESTROY_CQ, NULL), ==, 0);
    req.destroy_pd.pd_handle = p.pd;
    g_assert_cmpuint(dev_cmd(d, &req, PVRDMA_CMD_DESTROY_PD, NULL), ==, 0);
    /* only the async and CQ-notify rings stay mapped */
    base_maps = fh_outstanding(&d->h);
    g_assert_cmpuint(base_maps, ==, 4);
    /* the freed QP handle is not given out again at once */
    {
        uint32_t pd = create_pd(d, 0);
        TCq cq;
        TQp q;

        create_cq(d, &cq, 64);
        create_qp(d, &q, pd, cq.handle, cq.handle, PVRDMA_QPT_RC);
        g_assert_cmpuint(q.handle, !=, p.a.handle);
        g_assert_cmpuint(q.handle, !=, p.b.handle);
        /* a doorbell for the destroyed QP is refused */
        {
            uint64_t errs = d->c.guest_errors;

            pvrdma_core_uar_write(&d->c, 0, PVRDMA_UAR_QP_SEND | p.a.handle);
            g_assert_cmpuint(d->c.guest_errors, ==, errs + 1);
        }
    }
    dev_fini(d);
}

/* A QP in RTS with queued work destroyed before the run: nothing runs. */
static void test_destroy_queued(void)
{
    Pair p;
    Dev *d = &p.d;
    union pvrdma_cmd_req req = { 0 };
    struct pvrdma_sge sa = { MRA_IOVA, 64, 0 };
    struct pvrdma_sq_wqe_hdr w = { 0 };

    pair_setup(&p, 7);
    sa.lkey = p.mra.lkey;
    w.opcode = PVRDMA_WR_RDMA_WRITE;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.wr.rdma.remote_addr = MRB_IOVA;
    w.wr.rdma.rkey = p.mrb.rkey;
    post_send(d, &p.a, &w, &sa, 1);
    g_assert_cmpuint(d->c.run.length, ==, 1);
    req.destroy_qp.qp_handle = p.a.handle;
    g_assert_cmpuint(dev_cmd(d, &req, PVRDMA_CMD_DESTROY_QP, NULL), ==, 0);
    g_assert_cmpuint(d->c.run.length, ==, 0);
    pvrdma_core_run(&d->c);
    pair_fini(&p);
}

/* Each guest error is reported (a QMP event in QEMU) with why and a count. */
static void test_guest_error_report(void)
{
    Dev d;
    union pvrdma_cmd_req req = { 0 };

    dev_setup(&d, NULL);
    create_pd(&d, 0);
    g_assert_cmpuint(d.h.guest_error_reports, ==, 0);
    expect_err(&d, &req, 99, EINVAL);
    g_assert_cmpuint(d.h.guest_error_reports, ==, 1);
    g_assert_cmpstr(d.h.last_guest_error, ==, "unknown command 99");
    pvrdma_core_uar_write(&d.c, 0, PVRDMA_UAR_QP_SEND | 0xffff);
    g_assert_cmpuint(d.h.guest_error_reports, ==, 2);
    g_assert_cmpuint(d.c.guest_errors, ==, 2);
    dev_fini(&d);
}

/* CQ overrun: completion lost, CQ_ERR async event on vector 1. */
static void test_cq_overrun(void)
{
    Dev d;
    TCq cq;
    TQp a;
    uint32_t pd;
    struct pvrdma_qp_attr at = { 0 };
    struct pvrdma_sq_wqe_hdr w = { 0 };
    struct pvrdma_eqe *eqe;
    struct pvrdma_sge sge = { 0 };

    dev_setup(&d, NULL);
    pd = create_pd(&d, 0);
    create_cq(&d, &cq, 2);
    create_qp(&d, &a, pd, cq.handle, cq.handle, PVRDMA_QPT_RC);
    rc_to_init(&d, &a);
    for (int i = 0; i < 3; i++) {
        w.wr_id = i;
        w.opcode = PVRDMA_WR_SEND;
        put_send(&d, &a, &w, &sge, 0);
    }
    at.qp_state = PVRDMA_QPS_ERR;
    g_assert_cmpuint(modify_qp(&d, &a, PVRDMA_QP_STATE, &at), ==, 0);
    run_all(&d);
    expect_cqe(&d, &cq, 0, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_SEND, 0,
               a.handle);
    expect_cqe(&d, &cq, 1, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_SEND, 0,
               a.handle);
    expect_cq_empty(&d, &cq);
    g_assert_cmpuint(fh_irq_count(&d.h, PVRDMA_INTR_VECTOR_ASYNC), ==, 1);
    eqe = fh_ptr(&d.h, d.async_pages[1]);
    g_assert_cmpuint(eqe[0].type, ==, PVRDMA_EVENT_CQ_ERR);
    g_assert_cmpuint(eqe[0].info, ==, cq.handle);
    dev_fini(&d);
}

/* Fast-register MR: register, RDMA WRITE through it, invalidate. */
static void test_frmr(void)
{
    Pair p;
    Dev *d = &p.d;
    union pvrdma_cmd_req req = { 0 };
    union pvrdma_cmd_resp rsp;
    struct pvrdma_sq_wqe_hdr w = { 0 };
    struct pvrdma_sge sa;
    uint64_t pl[2];
    uint32_t h, key;
    uint8_t data[4000], got[4000];
    unsigned maps;
    const uint64_t iova = 0x20000010;

    pair_setup(&p, 7);
    req.create_mr.pd_handle = p.pd;
    req.create_mr.flags = PVRDMA_MR_FLAG_FRMR;
    req.create_mr.nchunks = 4;
    g_assert_cmpuint(dev_cmd(d, &req, PVRDMA_CMD_CREATE_MR, &rsp), ==, 0);
    h = rsp.create_mr_resp.mr_handle;
    key = h << 8 | 0x42;
    pl[0] = fh_alloc(&d->h, 1);
    fh_skip(&d->h, 3);
    pl[1] = fh_alloc(&d->h, 1);
    maps = fh_outstanding(&d->h);

    /* before registration the key is refused */
    fill_pattern(data, sizeof(data), 5);
    mr_write(d, &p.mra, MRA_IOVA, data, sizeof(data));
    sa = (struct pvrdma_sge) { MRA_IOVA, sizeof(data), p.mra.lkey };

    w.wr_id = 0xf1;
    w.opcode = PVRDMA_WR_FAST_REG_MR;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.wr.fast_reg.iova_start = iova;
    w.wr.fast_reg.pl_pdir_dma = fh_make_pdir(&d->h, pl, 2);
    w.wr.fast_reg.page_shift = 12;
    w.wr.fast_reg.page_list_len = 2;
    w.wr.fast_reg.length = 5000;
    w.wr.fast_reg.access_flags = PVRDMA_ACCESS_LOCAL_WRITE |
                                 PVRDMA_ACCESS_REMOTE_WRITE;
    w.wr.fast_reg.rkey = key;
    post_send(d, &p.b, &w, NULL, 0);
    run_all(d);
    expect_cqe(d, &p.cqb, 0xf1, PVRDMA_WC_SUCCESS, PVRDMA_WC_FAST_REG_MR, 0,
               p.b.handle);
    g_assert_cmpuint(fh_outstanding(&d->h), ==, maps + 2);

    /* write 4000 bytes at iova+100: crosses from pl[0] into pl[1] */
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xa1;
    w.opcode = PVRDMA_WR_RDMA_WRITE;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.wr.rdma.remote_addr = iova + 100;
    w.wr.rdma.rkey = key;
    post_send(d, &p.a, &w, &sa, 1);
    run_all(d);
    expect_cqe(d, &p.cqa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE, 4000,
               p.a.handle);
    memcpy(got, (uint8_t *)fh_ptr(&d->h, pl[0]) + 0x10 + 100,
           FH_PAGE - 0x10 - 100);
    memcpy(got + FH_PAGE - 0x10 - 100, fh_ptr(&d->h, pl[1]),
           4000 - (FH_PAGE - 0x10 - 100));
    g_assert_cmpmem(got, 4000, data, 4000);

    /* invalidate, then the same write is a remote access error */
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xf2;
    w.opcode = PVRDMA_WR_LOCAL_INV;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.ex.invalidate_rkey = key;
    post_send(d, &p.b, &w, NULL, 0);
    run_all(d);
    expect_cqe(d, &p.cqb, 0xf2, PVRDMA_WC_SUCCESS, PVRDMA_WC_LOCAL_INV, 0,
               p.b.handle);
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xa2;
    w.opcode = PVRDMA_WR_RDMA_WRITE;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.wr.rdma.remote_addr = iova + 100;
    w.wr.rdma.rkey = key;
    post_send(d, &p.a, &w, &sa, 1);
    run_all(d);
    expect_cqe(d, &p.cqa, 0xa2, PVRDMA_WC_REM_ACCESS_ERR, PVRDMA_WC_RDMA_WRITE,
               0, p.a.handle);
    pair_fini(&p);
}

/* DMA MR: SGEs are guest physical addresses. */
static void test_dma_mr(void)
{
    Pair p;
    Dev *d = &p.d;
    union pvrdma_cmd_req req = { 0 };
    union pvrdma_cmd_resp rsp;
    struct pvrdma_sq_wqe_hdr w = { 0 };
    struct pvrdma_sge sa, sb;
    uint64_t buf;
    uint8_t data[3000], got[3000];
    unsigned maps;

    pair_setup(&p, 7);
    req.create_mr.pd_handle = p.pd;
    req.create_mr.flags = PVRDMA_MR_FLAG_DMA;
    req.create_mr.access_flags = PVRDMA_ACCESS_LOCAL_WRITE;
    g_assert_cmpuint(dev_cmd(d, &req, PVRDMA_CMD_CREATE_MR, &rsp), ==, 0);
    buf = fh_alloc(&d->h, 2);
    fill_pattern(data, sizeof(data), 6);
    memcpy((uint8_t *)fh_ptr(&d->h, buf) + 3000, data, sizeof(data));
    maps = fh_outstanding(&d->h);

    sb = (struct pvrdma_sge) { MRB_IOVA, 4000, p.mrb.lkey };
    post_recv(d, &p.b, 0xb1, &sb, 1);
    sa = (struct pvrdma_sge) { buf + 3000, 3000, rsp.create_mr_resp.lkey };
    w.wr_id = 0xa1;
    w.opcode = PVRDMA_WR_SEND;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    post_send(d, &p.a, &w, &sa, 1);
    run_all(d);
    expect_cqe(d, &p.cqa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 3000,
               p.a.handle);
    expect_cqe(d, &p.cqb, 0xb1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 3000,
               p.b.handle);
    mr_read(d, &p.mrb, MRB_IOVA, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));
    /* mapped on demand, unmapped after use */
    g_assert_cmpuint(fh_outstanding(&d->h), ==, maps);

    /* a physical range running off the end of RAM */
    sa.addr = FH_RAM_BASE + FH_RAM_SIZE - 100;
    sa.length = 200;
    w.wr_id = 0xa2;
    post_send(d, &p.a, &w, &sa, 1);
    run_all(d);
    expect_cqe(d, &p.cqa, 0xa2, PVRDMA_WC_LOC_PROT_ERR, PVRDMA_WC_SEND, 0,
               p.a.handle);
    g_assert_cmpuint(fh_outstanding(&d->h), ==, maps);
    pair_fini(&p);
}

/* WQEs posted before RTS wait in the ring and run on the move to RTS. */
static void test_post_before_rts(void)
{
    Pair p;
    Dev *d = &p.d;
    struct pvrdma_qp_attr a;
    struct pvrdma_sq_wqe_hdr w = { 0 };
    struct pvrdma_sge sa;
    uint8_t data[64], got[64];

    pair_setup(&p, 7);
    /* take A back to RESET and up to RTR */
    memset(&a, 0, sizeof(a));
    a.qp_state = PVRDMA_QPS_RESET;
    g_assert_cmpuint(modify_qp(d, &p.a, PVRDMA_QP_STATE, &a), ==, 0);
    memset(qp_rings(d, &p.a), 0, 16);
    p.a.sq_prod = p.a.rq_prod = 0;
    rc_to_init(d, &p.a);
    rc_rtr_attrs(&a, p.b.qpn);
    g_assert_cmpuint(modify_qp(d, &p.a, RTR_MASK, &a), ==, 0);
    fill_pattern(data, sizeof(data), 7);
    mr_write(d, &p.mra, MRA_IOVA, data, sizeof(data));
    sa = (struct pvrdma_sge) { MRA_IOVA, 64, p.mra.lkey };
    w.wr_id = 0xa1;
    w.opcode = PVRDMA_WR_RDMA_WRITE;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.wr.rdma.remote_addr = MRB_IOVA + 64;
    w.wr.rdma.rkey = p.mrb.rkey;
    post_send(d, &p.a, &w, &sa, 1);
    run_all(d);
    expect_cq_empty(d, &p.cqa);
    memset(&a, 0, sizeof(a));
    a.qp_state = PVRDMA_QPS_RTS;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    g_assert_cmpuint(modify_qp(d, &p.a, RTS_MASK, &a), ==, 0);
    run_all(d);
    expect_cqe(d, &p.cqa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE, 64,
               p.a.handle);
    mr_read(d, &p.mrb, MRB_IOVA + 64, got, 64);
    g_assert_cmpmem(got, 64, data, 64);
    pair_fini(&p);
}

/* More WQEs than one run's budget: served over several runs, in order. */
static void test_budget(void)
{
    Dev d;
    TCq cq;
    TQp a, b;
    TMr mr;
    uint32_t pd;
    union pvrdma_cmd_req req;
    union pvrdma_cmd_resp rsp;
    struct pvrdma_sq_wqe_hdr w = { 0 };
    struct pvrdma_sge sa;
    const uint32_t n = 200;

    dev_setup(&d, NULL);
    pd = create_pd(&d, 0);
    bind_gid(&d, 0, test_gid);
    create_cq(&d, &cq, 256);
    fill_create_qp(&d, &a, &req, pd, cq.handle, cq.handle, PVRDMA_QPT_RC,
                   256, 1, 1, 1);
    g_assert_cmpuint(dev_cmd(&d, &req, PVRDMA_CMD_CREATE_QP, &rsp), ==, 0);
    a.handle = rsp.create_qp_resp_v2.qp_handle;
    a.qpn = rsp.create_qp_resp_v2.qpn;
    create_qp(&d, &b, pd, cq.handle, cq.handle, PVRDMA_QPT_RC);
    create_mr(&d, &mr, pd, 0x40000, FH_PAGE, MR_ACCESS);
    rc_to_rts(&d, &a, b.qpn, 7);
    rc_to_rts(&d, &b, a.qpn, 7);
    run_all(&d);
    sa = (struct pvrdma_sge) { 0x40000, 8, mr.lkey };
    w.opcode = PVRDMA_WR_ATOMIC_FETCH_AND_ADD;
    w.wr.atomic.remote_addr = 0x40000 + 8;
    w.wr.atomic.rkey = mr.rkey;
    w.wr.atomic.compare_add = 1;
    for (uint32_t i = 0; i < n; i++) {
        w.wr_id = i;
        w.send_flags = PVRDMA_SEND_SIGNALED;
        put_send(&d, &a, &w, &sa, 1);
    }
    ring_send(&d, &a);
    pvrdma_core_run(&d.c);
    g_assert_cmpuint(qp_rings(&d, &a)[0].cons_head, ==, PVRDMA_RUN_BUDGET);
    g_assert_cmpuint(d.c.run.length, ==, 1);    /* re-queued */
    run_all(&d);
    for (uint32_t i = 0; i < n; i++) {
        expect_cqe(&d, &cq, i, PVRDMA_WC_SUCCESS, PVRDMA_WC_FETCH_ADD, 8,
                   a.handle);
    }
    expect_cq_empty(&d, &cq);
    g_assert_cmpuint(*(uint64_t *)mr_byte(&d, &mr, 0x40008), ==, n);
    g_assert_cmpuint(*(uint64_t *)mr_byte(&d, &mr, 0x40000), ==, n - 1);
    dev_fini(&d);
}

int main(int argc, char **argv)
{
    fh_test_init(&argc, &argv);
    g_test_add_func("/pvrdma/dev/dsr-caps", test_dsr_caps);
    g_test_add_func("/pvrdma/dev/activate-refused", test_activate_refused);
    g_test_add_func("/pvrdma/dev/send", test_send);
    g_test_add_func("/pvrdma/dev/sq-cons-before-cqe", test_sq_cons_before_cqe);
    g_test_add_func("/pvrdma/dev/cq-batch", test_cq_batch);
    g_test_add_func("/pvrdma/dev/port-reports", test_port_reports);
    g_test_add_func("/pvrdma/dev/paused-runs-nothing",
                    test_paused_runs_nothing);
    g_test_add_func("/pvrdma/dev/send-too-long", test_send_too_long);
    g_test_add_func("/pvrdma/dev/rdma-write", test_rdma_write);
    g_test_add_func("/pvrdma/dev/rdma-read", test_rdma_read);
    g_test_add_func("/pvrdma/dev/atomics", test_atomics);
    g_test_add_func("/pvrdma/dev/bad-rkey-flush", test_bad_rkey_flush);
    g_test_add_func("/pvrdma/dev/remote-range", test_remote_range);
    g_test_add_func("/pvrdma/dev/local-prot", test_local_prot);
    g_test_add_func("/pvrdma/dev/rnr-recover", test_rnr_recover);
    g_test_add_func("/pvrdma/dev/rnr-timeout", test_rnr_timeout);
    g_test_add_func("/pvrdma/dev/no-responder", test_no_responder);
    g_test_add_func("/pvrdma/dev/ud", test_ud);
    g_test_add_func("/pvrdma/dev/destroy", test_destroy);
    g_test_add_func("/pvrdma/dev/destroy-queued", test_destroy_queued);
    g_test_add_func("/pvrdma/dev/cq-overrun", test_cq_overrun);
    g_test_add_func("/pvrdma/dev/frmr", test_frmr);
    g_test_add_func("/pvrdma/dev/dma-mr", test_dma_mr);
    g_test_add_func("/pvrdma/dev/post-before-rts", test_post_before_rts);
    g_test_add_func("/pvrdma/dev/budget", test_budget);
    g_test_add_func("/pvrdma/dev/guest-error-report", test_guest_error_report);
    return g_test_run();
}
