/*
 * Migration of the pvrdma core (pvrdma_mig.c, pvrdma_mig_load.c): a device
 * with traffic in progress is saved, a fresh core on the same guest RAM
 * loads it, and the guest carries on with the same QP numbers, keys and
 * ring positions; the state saved again is byte for byte the same.
 * Hostile streams (every truncation, every byte flipped, handles and
 * indices out of range) fail with an error, leave the core reset and leak
 * no guest mapping.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "fake-driver.h"
#include "fake-hca.h"
#include "hw/rdma/pvrdma_loopback.h"
#include "hw/rdma/pvrdma_mig.h"

#ifndef UNIT_DATA_DIR
#define UNIT_DATA_DIR "data"
#endif

typedef struct Mig {
    Dev d;
    uint32_t pd;
    TCq cqa, cqb;
    TQp a, b, ud;
    TMr mra, mrb;
} Mig;

#define A_IOVA 0x00007f0000000100ull
#define B_IOVA 0x00007f1000000f00ull
#define MR_LEN (3 * FH_PAGE + 500)
#define ACCESS (PVRDMA_ACCESS_LOCAL_WRITE | RC_ACCESS)

static void mig_setup(Mig *m)
{
    Dev *d = &m->d;

    dev_setup(d, NULL);
    m->pd = create_pd(d, 0);
    bind_gid(d, 0, test_gid);
    create_cq(d, &m->cqa, 64);
    create_cq(d, &m->cqb, 128);
    /* a UD QP left in RESET beside the connected pair */
    create_qp(d, &m->ud, m->pd, m->cqa.handle, m->cqa.handle, PVRDMA_QPT_UD);
    create_qp(d, &m->a, m->pd, m->cqa.handle, m->cqa.handle, PVRDMA_QPT_RC);
    create_qp(d, &m->b, m->pd, m->cqb.handle, m->cqb.handle, PVRDMA_QPT_RC);
    create_mr(d, &m->mra, m->pd, A_IOVA, MR_LEN, ACCESS);
    create_mr(d, &m->mrb, m->pd, B_IOVA, MR_LEN, ACCESS);
    rc_to_rts(d, &m->a, m->b.qpn, 7);
    rc_to_rts(d, &m->b, m->a.qpn, 7);
    run_all(d);
}

/* A new core on the same guest RAM, as the destination QEMU has. */
static void fresh_core(Dev *d)
{
    PvrdmaLimits l = d->c.lim;

    pvrdma_core_fini(&d->c);
    g_assert_cmpuint(fh_outstanding(&d->h), ==, 0);
    pvrdma_core_init(&d->c, &fh_ops, &d->h, &l);
    pvrdma_core_add_transport(&d->c, pvrdma_loopback_new(&d->c));
}

static GByteArray *save(Dev *d)
{
    GByteArray *b = g_byte_array_new();
    char *why = pvrdma_core_migration_blocker(&d->c, true);

    g_assert_null(why);
    pvrdma_core_save(&d->c, b);
    return b;
}

static void send_one(Dev *d, TQp *qp, TMr *mr, uint64_t va, uint32_t len,
                     uint64_t wr_id)
{
    struct pvrdma_sge s = { va, len, mr->lkey };
    struct pvrdma_sq_wqe_hdr w = { 0 };

    w.wr_id = wr_id;
    w.opcode = PVRDMA_WR_SEND;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    post_send(d, qp, &w, &s, 1);
}

/*
 * The roundtrip's device before the move: one send done and not polled,
 * receives posted, a CQ armed.
 */
static void roundtrip_prepare(Mig *m, uint8_t *data, size_t len)
{
    Dev *d = &m->d;
    struct pvrdma_sge sb = { B_IOVA, 3000, 0 };

    mig_setup(m);
    sb.lkey = m->mrb.lkey;
    fill_pattern(data, len, 7);
    mr_write(d, &m->mra, A_IOVA, data, len);
    post_recv(d, &m->b, 0xb1, &sb, 1);
    post_recv(d, &m->b, 0xb2, &sb, 1);
    send_one(d, &m->a, &m->mra, A_IOVA, 3000, 0xa1);
    run_all(d);
    pvrdma_core_uar_write(&d->c, PVRDMA_UAR_CQ_OFFSET,
                          PVRDMA_UAR_CQ_ARM | m->cqb.handle);
}

static void test_roundtrip(void)
{
    Mig m;
    Dev *d = &m.d;
    uint8_t data[3000], got[3000];
    struct pvrdma_sq_wqe_hdr w = { 0 };
    struct pvrdma_cqe e;
    GByteArray *b1, *b2;
    Error *err = NULL;

    roundtrip_prepare(&m, data, sizeof(data));
    b1 = save(d);
    fresh_core(d);
    g_assert_true(pvrdma_core_load(&d->c, b1->data, b1->len, &err));
    g_assert_null(err);
    g_assert_true(d->c.active);
    g_assert_cmpuint(d->c.qp.used, ==, 3);     /* a, b, ud and none else */
    g_assert_nonnull(pvrdma_qp_get(&d->c, m.a.qpn));
    g_assert_cmpuint(pvrdma_qp_get(&d->c, m.b.qpn)->state, ==,
                     PVRDMA_QPS_RTS);
    g_assert_cmpuint(pvrdma_qp_get(&d->c, m.ud.qpn)->state, ==,
                     PVRDMA_QPS_RESET);
    g_assert_nonnull(pvrdma_mr_by_key(&d->c, m.mrb.lkey));
    /* the same state saves to the same bytes */
    b2 = save(d);
    g_assert_cmpuint(b2->len, ==, b1->len);
    g_assert_cmpmem(b2->data, b2->len, b1->data, b1->len);
    g_byte_array_free(b2, true);

    /* the completions from before the move are where the guest left them */
    expect_cqe(d, &m.cqa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 3000,
               m.a.handle);
    g_assert_true(poll_cq(d, &m.cqb, &e));
    g_assert_cmphex(e.wr_id, ==, 0xb1);
    mr_read(d, &m.mrb, B_IOVA, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));

    /* after: the second receive takes the next send; an RDMA WRITE */
    fill_pattern(data, sizeof(data), 8);
    mr_write(d, &m.mra, A_IOVA, data, sizeof(data));
    send_one(d, &m.a, &m.mra, A_IOVA, 2000, 0xa2);
    run_all(d);
    expect_cqe(d, &m.cqa, 0xa2, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 2000,
               m.a.handle);
    g_assert_true(poll_cq(d, &m.cqb, &e));
    g_assert_cmphex(e.wr_id, ==, 0xb2);
    g_assert_cmpuint(e.byte_len, ==, 2000);
    g_assert_cmpuint(e.src_qp, ==, m.a.qpn);
    mr_read(d, &m.mrb, B_IOVA, got, 2000);
    g_assert_cmpmem(got, 2000, data, 2000);

    {
        struct pvrdma_sge s = { A_IOVA + 100, 1500, m.mra.lkey };

        w.wr_id = 0xa3;
        w.opcode = PVRDMA_WR_RDMA_WRITE;
        w.send_flags = PVRDMA_SEND_SIGNALED;
        w.wr.rdma.remote_addr = B_IOVA + 9;
        w.wr.rdma.rkey = m.mrb.rkey;
        post_send(d, &m.a, &w, &s, 1);
        run_all(d);
        expect_cqe(d, &m.cqa, 0xa3, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE,
                   1500, m.a.handle);
        mr_read(d, &m.mrb, B_IOVA + 9, got, 1500);
        g_assert_cmpmem(got, 1500, data + 100, 1500);
    }
    /* a QP created after the move does not take a moved QP's number */
    {
        TQp n;

        create_qp(d, &n, m.pd, m.cqa.handle, m.cqa.handle, PVRDMA_QPT_RC);
        g_assert_cmpuint(n.qpn, >, m.b.qpn);
    }
    g_byte_array_free(b1, true);
    expect_cq_empty(d, &m.cqa);
    expect_cq_empty(d, &m.cqb);
    dev_fini(d);
}

/*
 * The stream an older build wrote (one field, version 2; saved by 21c4b2b
 * from roundtrip_prepare()'s device, data/mig-v2-loopback.bin): this build
 * writes the same bytes for the same device (x-state-blob=on, a migration
 * to that build) and loads them (a migration from it).
 */
static void test_older_build(void)
{
    g_autofree char *path = g_build_filename(UNIT_DATA_DIR,
                                             "mig-v2-loopback.bin", NULL);
    g_autofree gchar *old = NULL;
    g_autoptr(GByteArray) b = NULL;
    uint8_t data[3000], got[3000];
    Error *err = NULL;
    gsize len;
    Mig m;
    Dev *d = &m.d;

    g_assert_true(g_file_get_contents(path, &old, &len, NULL));
    roundtrip_prepare(&m, data, sizeof(data));
    b = save(d);
    g_assert_cmpmem(b->data, b->len, old, len);
    fresh_core(d);
    g_assert_true(pvrdma_core_load(&d->c, (uint8_t *)old, len, &err));
    g_assert_null(err);
    expect_cqe(d, &m.cqa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 3000,
               m.a.handle);
    mr_read(d, &m.mrb, B_IOVA, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));
    dev_fini(d);
}

/*
 * The image the QOM glue migrates as VMState: saved, loaded into a fresh
 * core, saved again to the same stream; the guest carries on.
 */
static void test_image(void)
{
    PvrdmaMigImage img = { 0 };
    g_autoptr(GByteArray) b1 = NULL;
    g_autoptr(GByteArray) b2 = NULL;
    uint8_t data[3000], got[3000];
    Error *err = NULL;
    Mig m;
    Dev *d = &m.d;

    roundtrip_prepare(&m, data, sizeof(data));
    b1 = save(d);
    pvrdma_mig_image_save(&d->c, &img);
    g_assert_cmpuint(img.nqp, ==, 3);
    g_assert_cmpuint(img.nmr, ==, 2);
    g_assert_cmpuint(img.ncq, ==, 2);
    fresh_core(d);
    g_assert_true(pvrdma_mig_image_load(&d->c, &img, &err));
    g_assert_null(err);
    b2 = save(d);
    g_assert_cmpmem(b2->data, b2->len, b1->data, b1->len);
    /* a value the guest could not have given is refused, core reset */
    img.qp[1].sq_head = 1u << 30;
    fresh_core(d);
    g_assert_false(pvrdma_mig_image_load(&d->c, &img, &err));
    g_assert_nonnull(strstr(error_get_pretty(err),
                            "ring indices out of range"));
    g_clear_pointer(&err, error_free);
    g_assert_cmpuint(d->c.qp.used, ==, 0);
    g_assert_false(d->c.active);
    pvrdma_mig_image_clear(&img);
    g_assert_null(img.qp);
    g_assert_cmpint(img.nqp, ==, 0);

    /* loaded again from the blob: the guest carries on */
    g_assert_true(pvrdma_core_load(&d->c, b1->data, b1->len, &err));
    expect_cqe(d, &m.cqa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 3000,
               m.a.handle);
    mr_read(d, &m.mrb, B_IOVA, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));
    dev_fini(d);
}

/* Every page of mr's [va, va + len) reported dirty? Any of it? */
static bool dirty_range(Dev *d, TMr *mr, uint64_t va, uint64_t len, bool all)
{
    uint64_t page0 = mr->iova & ~(uint64_t)(FH_PAGE - 1);

    for (uint64_t v = va & ~(uint64_t)(FH_PAGE - 1); v < va + len;
         v += FH_PAGE) {
        bool dirty = fh_dirty_page(&d->h, mr->pages[(v - page0) / FH_PAGE]);

        if (dirty != all) {
            return !all;
        }
    }
    return all;
}

/*
 * What the device writes into registered memory through the mappings it
 * keeps is reported dirty (PvrdmaHostOps.dirty), so that a migration's
 * RAM passes send it again; what it only reads is not.  Loopback: a
 * SEND's receive buffer, an RDMA WRITE's target, an RDMA READ's local
 * buffer, an atomic's target and its local result.
 */
static void test_dirty(void)
{
    Mig m;
    Dev *d = &m.d;
    struct pvrdma_sge sa = { A_IOVA, 3000, 0 }, sb = { B_IOVA, 3000, 0 };
    struct pvrdma_sq_wqe_hdr w = { 0 };

    mig_setup(&m);
    sa.lkey = m.mra.lkey;
    sb.lkey = m.mrb.lkey;
    /* SEND: the receive buffer, not the sent one */
    fh_dirty_clear(&d->h);
    post_recv(d, &m.b, 0xb1, &sb, 1);
    send_one(d, &m.a, &m.mra, A_IOVA, 3000, 0xa1);
    run_all(d);
    expect_cqe(d, &m.cqa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 3000,
               m.a.handle);
    g_assert_true(dirty_range(d, &m.mrb, B_IOVA, 3000, true));
    g_assert_false(dirty_range(d, &m.mra, A_IOVA, 3000, false));
    g_assert_cmpuint(d->h.dirty_foreign, ==, 0);

    /* RDMA WRITE: the target range, across a page boundary */
    fh_dirty_clear(&d->h);
    w.wr_id = 0xa2;
    w.opcode = PVRDMA_WR_RDMA_WRITE;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.wr.rdma.remote_addr = B_IOVA + FH_PAGE;
    w.wr.rdma.rkey = m.mrb.rkey;
    post_send(d, &m.a, &w, &sa, 1);
    run_all(d);
    expect_cqe(d, &m.cqa, 0xa2, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE,
               3000, m.a.handle);
    g_assert_true(dirty_range(d, &m.mrb, B_IOVA + FH_PAGE, 3000, true));
    g_assert_false(dirty_range(d, &m.mra, A_IOVA, 3000, false));

    /* RDMA READ: the reader's local buffer, not the read range */
    fh_dirty_clear(&d->h);
    w.wr_id = 0xa3;
    w.opcode = PVRDMA_WR_RDMA_READ;
    w.wr.rdma.remote_addr = B_IOVA;
    post_send(d, &m.a, &w, &sa, 1);
    run_all(d);
    expect_cqe(d, &m.cqa, 0xa3, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_READ,
               3000, m.a.handle);
    g_assert_true(dirty_range(d, &m.mra, A_IOVA, 3000, true));
    g_assert_false(dirty_range(d, &m.mrb, B_IOVA, 3000, false));

    /* fetch-and-add: the target word, and the local word of the result */
    fh_dirty_clear(&d->h);
    sa.length = 8;
    w.wr_id = 0xa4;
    w.opcode = PVRDMA_WR_ATOMIC_FETCH_AND_ADD;
    w.wr.atomic.remote_addr = B_IOVA + 2 * FH_PAGE;
    w.wr.atomic.compare_add = 1;
    w.wr.atomic.rkey = m.mrb.rkey;
    post_send(d, &m.a, &w, &sa, 1);
    run_all(d);
    expect_cqe(d, &m.cqa, 0xa4, PVRDMA_WC_SUCCESS,
               PVRDMA_WC_FETCH_ADD, 8, m.a.handle);
    g_assert_true(dirty_range(d, &m.mrb, B_IOVA + 2 * FH_PAGE, 8, true));
    g_assert_true(dirty_range(d, &m.mra, A_IOVA, 8, true));
    g_assert_false(dirty_range(d, &m.mrb, B_IOVA, 8, false));
    dev_fini(d);
}

/* A QP in error and one in SQD move too; an idle device (not active). */
static void test_states(void)
{
    Mig m;
    Dev *d = &m.d;
    struct pvrdma_qp_attr a = { 0 };
    GByteArray *b;
    Error *err = NULL;

    mig_setup(&m);
    a.qp_state = PVRDMA_QPS_SQD;
    g_assert_cmpuint(modify_qp(d, &m.a, PVRDMA_QP_STATE, &a), ==, 0);
    a.qp_state = PVRDMA_QPS_ERR;
    g_assert_cmpuint(modify_qp(d, &m.b, PVRDMA_QP_STATE, &a), ==, 0);
    run_all(d);
    b = save(d);
    fresh_core(d);
    g_assert_true(pvrdma_core_load(&d->c, b->data, b->len, &err));
    run_all(d);
    g_assert_cmpuint(query_qp_state(d, &m.a), ==, PVRDMA_QPS_SQD);
    g_assert_cmpuint(query_qp_state(d, &m.b), ==, PVRDMA_QPS_ERR);
    g_byte_array_free(b, true);
    dev_fini(d);

    /* a CQ that RESIZE_CQ made smaller than its pages */
    dev_setup(d, NULL);
    {
        union pvrdma_cmd_req req = { 0 };
        union pvrdma_cmd_resp rsp;
        TCq cq;

        create_cq(d, &cq, 512);
        req.resize_cq.cq_handle = cq.handle;
        req.resize_cq.cqe = 16;
        g_assert_cmpuint(dev_cmd(d, &req, PVRDMA_CMD_RESIZE_CQ, &rsp), ==, 0);
        b = save(d);
        fresh_core(d);
        g_assert_true(pvrdma_core_load(&d->c, b->data, b->len, &err));
        g_assert_cmpuint(((PvrdmaCQ *)pvrdma_table_get(&d->c.cq,
                          cq.handle))->ring.nelems, ==, 16);
        g_byte_array_free(b, true);
    }
    dev_fini(d);

    dev_init(d, NULL);
    b = save(d);
    fresh_core(d);
    g_assert_true(pvrdma_core_load(&d->c, b->data, b->len, &err));
    g_assert_false(d->c.active);
    g_byte_array_free(b, true);
    dev_fini(d);
}

/*
 * A completion held for the requester's retry time (nobody answers) moves
 * with the time it has left: 536 ms in all, 200 spent before the save.
 */
static void test_held(void)
{
    Mig m;
    Dev *d = &m.d;
    union pvrdma_cmd_req req = { 0 };
    GByteArray *b;
    Error *err = NULL;

    mig_setup(&m);
    req.destroy_qp.qp_handle = m.b.handle;
    g_assert_cmpuint(dev_cmd(d, &req, PVRDMA_CMD_DESTROY_QP, NULL), ==, 0);
    send_one(d, &m.a, &m.mra, A_IOVA, 64, 0xa1);
    send_one(d, &m.a, &m.mra, A_IOVA, 64, 0xa2);
    run_all(d);
    d->h.now += 200;
    b = save(d);
    fresh_core(d);
    g_assert_true(pvrdma_core_load(&d->c, b->data, b->len, &err));
    g_assert_cmpuint(d->c.holders, ==, 1);
    run_all(d);
    expect_retry_window(d, &m.cqa, &m.a, 336, 0xa1, 0xa2);
    g_byte_array_free(b, true);
    dev_fini(d);
}

static void expect_refused(Dev *d, const uint8_t *buf, size_t len)
{
    Error *err = NULL;

    g_assert_false(pvrdma_core_load(&d->c, buf, len, &err));
    g_assert_nonnull(err);
    error_free(err);
    g_assert_false(d->c.active);
    g_assert_cmpuint(d->c.qp.used + d->c.mr.used + d->c.cq.used, ==, 0);
    g_assert_cmpuint(fh_outstanding(&d->h), ==, 0);
}

/* Every prefix of a good stream is refused. */
static void test_truncated(void)
{
    Mig m;
    Dev *d = &m.d;
    GByteArray *b;

    mig_setup(&m);
    b = save(d);
    for (size_t n = 0; n < b->len; n++) {
        expect_refused(d, b->data, n);
    }
    g_byte_array_free(b, true);
    dev_fini(d);
}

/* Every byte flipped: loaded or refused, never a crash or a leak. */
static void test_corrupt(void)
{
    Mig m;
    Dev *d = &m.d;
    GByteArray *b;
    unsigned loaded = 0, refused = 0;

    mig_setup(&m);
    b = save(d);
    for (size_t i = 0; i < b->len; i++) {
        for (unsigned k = 0; k < 3; k++) {
            static const uint8_t flip[] = { 0xff, 0x01, 0x80 };
            g_autofree uint8_t *x = g_memdup2(b->data, b->len);
            Error *err = NULL;

            x[i] ^= flip[k];
            if (pvrdma_core_load(&d->c, x, b->len, &err)) {
                loaded++;
            } else {
                g_assert_nonnull(err);
                error_free(err);
                refused++;
                g_assert_cmpuint(fh_outstanding(&d->h), ==, 0);
            }
            pvrdma_core_reset(&d->c);
            g_assert_cmpuint(fh_outstanding(&d->h), ==, 0);
        }
    }
    g_test_message("%u loaded, %u refused", loaded, refused);
    g_assert_cmpuint(refused, >, 0);
    g_byte_array_free(b, true);
    dev_fini(d);
}

/* Named fields out of range: a clear message each. */
static void test_hostile_fields(void)
{
    Mig m;
    Dev *d = &m.d;
    GByteArray *b;
    Error *err = NULL;
    uint32_t v;
    uint8_t *x;

    mig_setup(&m);
    b = save(d);
    x = g_memdup2(b->data, b->len);

    /* another device's limits */
    v = cpu_to_le32(PVRDMA_DEF_MAX_QP * 2);
    memcpy(x + 8, &v, 4);
    g_assert_false(pvrdma_core_load(&d->c, x, b->len, &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "max-qp"));
    g_clear_pointer(&err, error_free);
    memcpy(x, b->data, b->len);

    /* a future version */
    v = cpu_to_le32(99);
    memcpy(x + 4, &v, 4);
    g_assert_false(pvrdma_core_load(&d->c, x, b->len, &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "version 99"));
    g_clear_pointer(&err, error_free);
    memcpy(x, b->data, b->len);

    /* trailing bytes */
    g_assert_false(pvrdma_core_load(&d->c, x, b->len - 1, &err));
    g_clear_pointer(&err, error_free);
    g_free(x);
    x = g_malloc0(b->len + 4);
    memcpy(x, b->data, b->len);
    g_assert_false(pvrdma_core_load(&d->c, x, b->len + 4, &err));
    g_assert_nonnull(strstr(error_get_pretty(err), "does not end"));
    g_clear_pointer(&err, error_free);
    g_free(x);
    g_byte_array_free(b, true);
    g_assert_cmpuint(fh_outstanding(&d->h), ==, 0);
    dev_fini(d);
}

/* With a host HCA owning the objects, the device says why it cannot move. */
static void test_blocker(void)
{
    Dev d;
    FakeHca hca;
    char *why;

    dev_setup(&d, NULL);
    why = pvrdma_core_migration_blocker(&d.c, false);
    g_assert_null(why);
    fake_hca_init(&hca, &d.c);
    why = pvrdma_core_migration_blocker(&d.c, false);
    g_assert_nonnull(why);
    g_assert_nonnull(strstr(why, "ibdev"));
    g_free(why);
    dev_fini(&d);
    fake_hca_fini(&hca);
}

int main(int argc, char **argv)
{
    fh_test_init(&argc, &argv);
    g_test_add_func("/pvrdma/mig/roundtrip", test_roundtrip);
    g_test_add_func("/pvrdma/mig/older-build", test_older_build);
    g_test_add_func("/pvrdma/mig/image", test_image);
    g_test_add_func("/pvrdma/mig/dirty", test_dirty);
    g_test_add_func("/pvrdma/mig/states", test_states);
    g_test_add_func("/pvrdma/mig/held", test_held);
    g_test_add_func("/pvrdma/mig/truncated", test_truncated);
    g_test_add_func("/pvrdma/mig/corrupt", test_corrupt);
    g_test_add_func("/pvrdma/mig/hostile-fields", test_hostile_fields);
    g_test_add_func("/pvrdma/mig/blocker", test_blocker);
    return g_test_run();
}
