/*
 * QTest for the pvrdma device: the loopback data path, every verb, data
 * compared byte for byte.
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

static void test_send_recv(void)
{
    Pair p;
    QPvrdma *d;
    uint64_t src, dst;
    uint32_t key;
    struct pvrdma_sq_wqe_hdr h = { 0 };
    struct pvrdma_sge s;
    struct pvrdma_cqe e;

    pair_setup(&p, PVRDMA_QPT_RC, 16);
    d = p.d;
    src = qpvrdma_alloc(d, 3 * 4096);
    dst = qpvrdma_alloc(d, 3 * 4096);
    key = qpvrdma_create_mr(d, p.pd, src, 3 * 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    qpvrdma_create_mr(d, p.pd, dst, 3 * 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    fill(d, src, 3 * 4096, 1);

    /* SEND across pages, received in two SGEs */
    qpvrdma_post_recv(d, &p.b, 0xb1, dst, 3 * 4096, key + 256);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_SEND, 0xa1, src + 10, 9000, key, 0, 0);
    qpvrdma_expect_cqe(d, &p.cq, 0xb1, PVRDMA_WC_RECV, PVRDMA_WC_SUCCESS, 9000);
    qpvrdma_expect_cqe(d, &p.cq, 0xa1, PVRDMA_WC_SEND, PVRDMA_WC_SUCCESS, 9000);
    same(d, src + 10, dst, 9000);

    /* SEND_WITH_IMM: immediate data and flag */
    qpvrdma_post_recv(d, &p.b, 0xb2, dst, 100, key + 256);
    h = (struct pvrdma_sq_wqe_hdr) { .wr_id = 0xa2, .num_sge = 1,
                                     .opcode = PVRDMA_WR_SEND_WITH_IMM,
                                     .send_flags = PVRDMA_SEND_SIGNALED,
                                     .ex.imm_data = 0x01020304 };
    s = (struct pvrdma_sge) { src, 50, key };
    qpvrdma_post_send(d, &p.a, &h, &s, true);
    g_assert(qpvrdma_poll_cq(d, &p.cq, &e));
    g_assert_cmphex(e.wr_id, ==, 0xb2);
    g_assert_cmphex(e.imm_data, ==, 0x01020304);
    g_assert(e.wc_flags & PVRDMA_WC_WITH_IMM);
    g_assert_cmpuint(e.src_qp, ==, p.a.qpn);
    g_assert_cmpuint(e.qp, ==, p.b.handle);
    qpvrdma_expect_cqe(d, &p.cq, 0xa2, PVRDMA_WC_SEND, PVRDMA_WC_SUCCESS, 50);

    /* unsignaled send: no requester CQE, only the receive */
    qpvrdma_post_recv(d, &p.b, 0xb3, dst, 100, key + 256);
    h = (struct pvrdma_sq_wqe_hdr) { .wr_id = 0xa3, .num_sge = 1,
                                     .opcode = PVRDMA_WR_SEND };
    qpvrdma_post_send(d, &p.a, &h, &s, true);
    qpvrdma_expect_cqe(d, &p.cq, 0xb3, PVRDMA_WC_RECV, PVRDMA_WC_SUCCESS, 50);
    qpvrdma_cq_empty(d, &p.cq);

    /* receive buffer too small: both sides see the error, QPs in error */
    qpvrdma_post_recv(d, &p.b, 0xb4, dst, 10, key + 256);
    qpvrdma_post_recv(d, &p.b, 0xb5, dst, 10, key + 256);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_SEND, 0xa4, src, 100, key, 0, 0);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_SEND, 0xa5, src, 100, key, 0, 0);
    qpvrdma_expect_cqe(d, &p.cq, 0xb4, 0, PVRDMA_WC_LOC_LEN_ERR, 0);
    qpvrdma_expect_cqe(d, &p.cq, 0xa4, 0, PVRDMA_WC_REM_INV_REQ_ERR, 0);
    for (int i = 0; i < 2; i++) {
        g_assert(qpvrdma_poll_cq(d, &p.cq, &e));
        g_assert_cmpuint(e.status, ==, PVRDMA_WC_WR_FLUSH_ERR);
        g_assert(e.wr_id == 0xa5 || e.wr_id == 0xb5);
    }
    qpvrdma_cq_empty(d, &p.cq);
    qpvrdma_stop(d);
}

/*
 * IBV_SEND_INLINE as rdma-core's vmw_pvrdma provider posts it: the SGE as
 * the program gave it, lkey 0 (verbs ignores the lkey of an inline send;
 * rdma_xclient leaves it 0).  The device reads it through the user MR of the
 * QP's PD that covers it; without the flag, or with no such MR, the SGE is
 * refused as any bad SGE.
 */
static void test_send_inline(void)
{
    Pair p;
    QPvrdma *d;
    uint64_t src, dst, bare;
    uint32_t dkey;
    struct pvrdma_sq_wqe_hdr h;
    struct pvrdma_sge s;

    for (int pass = 0; pass < 2; pass++) {
        pair_setup(&p, PVRDMA_QPT_RC, 16);
        d = p.d;
        src = qpvrdma_alloc(d, 2 * 4096);
        dst = qpvrdma_alloc(d, 4096);
        bare = qpvrdma_alloc(d, 4096);      /* no MR covers it */
        qpvrdma_create_mr(d, p.pd, src, 2 * 4096, 0);
        dkey = qpvrdma_create_mr(d, p.pd, dst, 4096,
                                 PVRDMA_ACCESS_LOCAL_WRITE);
        fill(d, src, 2 * 4096, 3);
        fill(d, bare, 4096, 4);
        if (pass == 0) {
            /* 100 bytes across a page boundary of the MR, lkey 0 */
            qpvrdma_post_recv(d, &p.b, 0xb1, dst, 4096, dkey);
            h = (struct pvrdma_sq_wqe_hdr) {
                .wr_id = 0xa1, .num_sge = 1, .opcode = PVRDMA_WR_SEND,
                .send_flags = PVRDMA_SEND_SIGNALED | PVRDMA_SEND_INLINE };
            s = (struct pvrdma_sge) { src + 4050, 100, 0 };
            qpvrdma_post_send(d, &p.a, &h, &s, true);
            qpvrdma_expect_cqe(d, &p.cq, 0xb1, PVRDMA_WC_RECV,
                               PVRDMA_WC_SUCCESS, 100);
            qpvrdma_expect_cqe(d, &p.cq, 0xa1, PVRDMA_WC_SEND,
                               PVRDMA_WC_SUCCESS, 100);
            same(d, src + 4050, dst, 100);
            /* the same SGE without the flag: lkey 0 names no MR */
            qpvrdma_post_recv(d, &p.b, 0xb2, dst, 4096, dkey);
            h.wr_id = 0xa2;
            h.send_flags = PVRDMA_SEND_SIGNALED;
        } else {
            /* inline, but no MR of the PD covers the buffer */
            qpvrdma_post_recv(d, &p.b, 0xb2, dst, 4096, dkey);
            h = (struct pvrdma_sq_wqe_hdr) {
                .wr_id = 0xa2, .num_sge = 1, .opcode = PVRDMA_WR_SEND,
                .send_flags = PVRDMA_SEND_SIGNALED | PVRDMA_SEND_INLINE };
            s = (struct pvrdma_sge) { bare, 16, 0 };
        }
        qpvrdma_post_send(d, &p.a, &h, &s, true);
        qpvrdma_expect_cqe(d, &p.cq, 0xa2, 0, PVRDMA_WC_LOC_PROT_ERR, 0);
        qpvrdma_stop(d);
    }
}

static void test_rdma_ops(void)
{
    Pair p;
    QPvrdma *d;
    uint64_t loc, rem, val;
    uint32_t lkey, rkey;
    struct pvrdma_sq_wqe_hdr h;
    struct pvrdma_sge s;

    pair_setup(&p, PVRDMA_QPT_RC, 32);
    d = p.d;
    loc = qpvrdma_alloc(d, 2 * 4096);
    rem = qpvrdma_alloc(d, 2 * 4096);
    lkey = qpvrdma_create_mr(d, p.pd, loc, 2 * 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    rkey = qpvrdma_create_mr(d, p.pd, rem, 2 * 4096, PVRDMA_ACCESS_LOCAL_WRITE |
                     PVRDMA_ACCESS_REMOTE_WRITE | PVRDMA_ACCESS_REMOTE_READ |
                     PVRDMA_ACCESS_REMOTE_ATOMIC);
    fill(d, loc, 8192, 3);

    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 1, loc, 5000, lkey, rem + 7,
                    rkey);
    qpvrdma_expect_cqe(d, &p.cq, 1, PVRDMA_WC_RDMA_WRITE, PVRDMA_WC_SUCCESS,
                       5000);
    same(d, loc, rem + 7, 5000);

    fill(d, rem, 8192, 9);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_READ, 2, loc + 1, 6000, lkey,
                    rem + 3, rkey);
    qpvrdma_expect_cqe(d, &p.cq, 2, PVRDMA_WC_RDMA_READ, PVRDMA_WC_SUCCESS,
                       6000);
    same(d, loc + 1, rem + 3, 6000);

    /* WRITE_WITH_IMM consumes a receive at the target */
    qpvrdma_post_recv(d, &p.b, 0xb0, loc, 16, lkey);
    h = (struct pvrdma_sq_wqe_hdr) { .wr_id = 3, .num_sge = 1,
                                     .opcode = PVRDMA_WR_RDMA_WRITE_WITH_IMM,
                                     .send_flags = PVRDMA_SEND_SIGNALED,
                                     .ex.imm_data = 0xabcd };
    h.wr.rdma.remote_addr = rem;
    h.wr.rdma.rkey = rkey;
    s = (struct pvrdma_sge) { loc + 100, 64, lkey };
    qpvrdma_post_send(d, &p.a, &h, &s, true);
    qpvrdma_expect_cqe(d, &p.cq, 0xb0, PVRDMA_WC_RECV_RDMA_WITH_IMM,
               PVRDMA_WC_SUCCESS, 64);
    qpvrdma_expect_cqe(d, &p.cq, 3, PVRDMA_WC_RDMA_WRITE, PVRDMA_WC_SUCCESS,
                       64);
    same(d, loc + 100, rem, 64);

    /* atomics on an 8-byte aligned remote word */
    qtest_writeq(d->qts, rem + 64, 40);
    qpvrdma_atomic_wr(d, &p.a, PVRDMA_WR_ATOMIC_FETCH_AND_ADD, 4, loc, lkey,
                      rem + 64, rkey, 2, 0);
    qpvrdma_expect_cqe(d, &p.cq, 4, PVRDMA_WC_FETCH_ADD, PVRDMA_WC_SUCCESS, 8);
    g_assert_cmpuint(qtest_readq(d->qts, loc), ==, 40);
    g_assert_cmpuint(qtest_readq(d->qts, rem + 64), ==, 42);
    qpvrdma_atomic_wr(d, &p.a, PVRDMA_WR_ATOMIC_CMP_AND_SWP, 5, loc, lkey,
                      rem + 64, rkey, 42, 7);
    qpvrdma_expect_cqe(d, &p.cq, 5, PVRDMA_WC_COMP_SWAP, PVRDMA_WC_SUCCESS, 8);
    val = qtest_readq(d->qts, rem + 64);
    g_assert_cmpuint(val, ==, 7);
    g_assert_cmpuint(qtest_readq(d->qts, loc), ==, 42);

    /* bad rkey: remote access error, then the QP flushes what follows */
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 6, loc, 16, lkey, rem,
                    rkey ^ 1);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 7, loc, 16, lkey, rem, rkey);
    qpvrdma_expect_cqe(d, &p.cq, 6, 0, PVRDMA_WC_REM_ACCESS_ERR, 0);
    qpvrdma_expect_cqe(d, &p.cq, 7, 0, PVRDMA_WC_WR_FLUSH_ERR, 0);
    qpvrdma_stop(d);
}

static void test_access_errors(void)
{
    Pair p;
    QPvrdma *d;
    uint64_t loc, rem;
    uint32_t lkey, rkey_ro;

    pair_setup(&p, PVRDMA_QPT_RC, 16);
    d = p.d;
    loc = qpvrdma_alloc(d, 4096);
    rem = qpvrdma_alloc(d, 4096);
    lkey = qpvrdma_create_mr(d, p.pd, loc, 4096, 0);        /* no local write */
    rkey_ro = qpvrdma_create_mr(d, p.pd, rem, 4096, PVRDMA_ACCESS_REMOTE_READ);
    /* READ into an MR without LOCAL_WRITE: local protection error */
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_READ, 1, loc, 16, lkey, rem,
                    rkey_ro);
    qpvrdma_expect_cqe(d, &p.cq, 1, 0, PVRDMA_WC_LOC_PROT_ERR, 0);
    qpvrdma_stop(d);

    pair_setup(&p, PVRDMA_QPT_RC, 16);
    d = p.d;
    loc = qpvrdma_alloc(d, 4096);
    rem = qpvrdma_alloc(d, 4096);
    lkey = qpvrdma_create_mr(d, p.pd, loc, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    rkey_ro = qpvrdma_create_mr(d, p.pd, rem, 4096, PVRDMA_ACCESS_REMOTE_READ);
    /* WRITE to a read-only MR, out of range READ */
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 2, loc, 16, lkey, rem,
                    rkey_ro);
    qpvrdma_expect_cqe(d, &p.cq, 2, 0, PVRDMA_WC_REM_ACCESS_ERR, 0);
    qpvrdma_stop(d);

    pair_setup(&p, PVRDMA_QPT_RC, 16);
    d = p.d;
    loc = qpvrdma_alloc(d, 4096);
    rem = qpvrdma_alloc(d, 4096);
    lkey = qpvrdma_create_mr(d, p.pd, loc, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    rkey_ro = qpvrdma_create_mr(d, p.pd, rem, 4096, PVRDMA_ACCESS_REMOTE_READ);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_READ, 3, loc, 64, lkey, rem + 4090,
            rkey_ro);
    qpvrdma_expect_cqe(d, &p.cq, 3, 0, PVRDMA_WC_REM_ACCESS_ERR, 0);
    qpvrdma_stop(d);

    /* bad opcode and too many SGEs are consumed with an error */
    pair_setup(&p, PVRDMA_QPT_RC, 16);
    d = p.d;
    loc = qpvrdma_alloc(d, 4096);
    lkey = qpvrdma_create_mr(d, p.pd, loc, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    {
        struct pvrdma_sq_wqe_hdr h = { .wr_id = 4, .num_sge = 0xffffffff,
                                       .opcode = PVRDMA_WR_SEND };

        qpvrdma_post_send(d, &p.a, &h, NULL, true);
        qpvrdma_expect_cqe(d, &p.cq, 4, 0, PVRDMA_WC_LOC_LEN_ERR, 0);
    }
    qpvrdma_stop(d);
    pair_setup(&p, PVRDMA_QPT_RC, 16);
    d = p.d;
    {
        struct pvrdma_sq_wqe_hdr h = { .wr_id = 5, .opcode = 0x77 };

        qpvrdma_post_send(d, &p.a, &h, NULL, true);
        qpvrdma_expect_cqe(d, &p.cq, 5, 0, PVRDMA_WC_LOC_QP_OP_ERR, 0);
    }
    qpvrdma_stop(d);
}

static void test_fast_reg(void)
{
    Pair p;
    QPvrdma *d;
    struct pvrdma_cmd_create_mr c = { .hdr.cmd = PVRDMA_CMD_CREATE_MR,
                                      .flags = PVRDMA_MR_FLAG_FRMR,
                                      .nchunks = 4 };
    union pvrdma_cmd_resp r;
    struct pvrdma_sq_wqe_hdr h;
    uint64_t loc, frbuf, pages[2];
    uint32_t lkey, frkey, newkey;

    pair_setup(&p, PVRDMA_QPT_RC, 16);
    d = p.d;
    loc = qpvrdma_alloc(d, 4096);
    lkey = qpvrdma_create_mr(d, p.pd, loc, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    fill(d, loc, 4096, 5);
    c.pd_handle = p.pd;
    qpvrdma_cmd_ok(d, &c, sizeof(c), &r);
    frkey = r.create_mr_resp.rkey;
    frbuf = qpvrdma_alloc(d, 2 * 4096);
    pages[0] = frbuf + 4096;            /* deliberately out of order */
    pages[1] = frbuf;

    /* before registration the key is not usable */
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 1, loc, 8, lkey, 0x10000,
                    frkey);
    qpvrdma_expect_cqe(d, &p.cq, 1, 0, PVRDMA_WC_REM_ACCESS_ERR, 0);
    qpvrdma_stop(d);

    pair_setup(&p, PVRDMA_QPT_RC, 16);
    d = p.d;
    loc = qpvrdma_alloc(d, 4096);
    lkey = qpvrdma_create_mr(d, p.pd, loc, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    fill(d, loc, 4096, 5);
    c.pd_handle = p.pd;
    qpvrdma_cmd_ok(d, &c, sizeof(c), &r);
    frkey = r.create_mr_resp.rkey;
    frbuf = qpvrdma_alloc(d, 2 * 4096);
    pages[0] = frbuf + 4096;
    pages[1] = frbuf;
    newkey = (frkey & ~0xffu) | 0x42;
    h = (struct pvrdma_sq_wqe_hdr) { .wr_id = 2,
                                     .opcode = PVRDMA_WR_FAST_REG_MR,
                                     .send_flags = PVRDMA_SEND_SIGNALED };
    h.wr.fast_reg.iova_start = 0x10000;
    h.wr.fast_reg.pl_pdir_dma = qpvrdma_pdir(d, pages, 2);
    h.wr.fast_reg.page_shift = 12;
    h.wr.fast_reg.page_list_len = 2;
    h.wr.fast_reg.length = 8192;
    h.wr.fast_reg.access_flags = PVRDMA_ACCESS_LOCAL_WRITE |
                                 PVRDMA_ACCESS_REMOTE_WRITE;
    h.wr.fast_reg.rkey = newkey;
    qpvrdma_post_send(d, &p.a, &h, NULL, true);
    qpvrdma_expect_cqe(d, &p.cq, 2, PVRDMA_WC_FAST_REG_MR, PVRDMA_WC_SUCCESS,
                       0);
    /* a write through the new key lands in the out-of-order pages */
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 3, loc, 4096, lkey, 0x10000,
            newkey);
    qpvrdma_expect_cqe(d, &p.cq, 3, PVRDMA_WC_RDMA_WRITE, PVRDMA_WC_SUCCESS,
                       4096);
    same(d, loc, frbuf + 4096, 4096);
    /* LOCAL_INV, then the key is refused */
    h = (struct pvrdma_sq_wqe_hdr) { .wr_id = 4,
                                     .opcode = PVRDMA_WR_LOCAL_INV,
                                     .send_flags = PVRDMA_SEND_SIGNALED,
                                     .ex.invalidate_rkey = newkey };
    qpvrdma_post_send(d, &p.a, &h, NULL, true);
    qpvrdma_expect_cqe(d, &p.cq, 4, PVRDMA_WC_LOCAL_INV, PVRDMA_WC_SUCCESS, 0);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 5, loc, 8, lkey, 0x10000,
                    newkey);
    qpvrdma_expect_cqe(d, &p.cq, 5, 0, PVRDMA_WC_REM_ACCESS_ERR, 0);
    qpvrdma_stop(d);
}

static void test_send_with_inv(void)
{
    Pair p;
    QPvrdma *d;
    struct pvrdma_cmd_create_mr c = { .hdr.cmd = PVRDMA_CMD_CREATE_MR,
                                      .flags = PVRDMA_MR_FLAG_FRMR,
                                      .nchunks = 1 };
    union pvrdma_cmd_resp r;
    struct pvrdma_sq_wqe_hdr h;
    struct pvrdma_sge s;
    struct pvrdma_cqe e;
    uint64_t loc, frbuf;
    uint32_t lkey, key;

    pair_setup(&p, PVRDMA_QPT_RC, 16);
    d = p.d;
    loc = qpvrdma_alloc(d, 4096);
    lkey = qpvrdma_create_mr(d, p.pd, loc, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    c.pd_handle = p.pd;
    qpvrdma_cmd_ok(d, &c, sizeof(c), &r);
    key = r.create_mr_resp.rkey;
    frbuf = qpvrdma_alloc(d, 4096);
    h = (struct pvrdma_sq_wqe_hdr) { .wr_id = 1,
                                     .opcode = PVRDMA_WR_FAST_REG_MR };
    h.wr.fast_reg.iova_start = frbuf;
    h.wr.fast_reg.pl_pdir_dma = qpvrdma_pdir(d, &frbuf, 1);
    h.wr.fast_reg.page_shift = 12;
    h.wr.fast_reg.page_list_len = 1;
    h.wr.fast_reg.length = 4096;
    h.wr.fast_reg.access_flags = PVRDMA_ACCESS_LOCAL_WRITE |
                                 PVRDMA_ACCESS_REMOTE_READ;
    h.wr.fast_reg.rkey = key;
    qpvrdma_post_send(d, &p.b, &h, NULL, true);
    qpvrdma_post_recv(d, &p.b, 0xb1, loc + 2048, 64, lkey);
    h = (struct pvrdma_sq_wqe_hdr) { .wr_id = 2, .num_sge = 1,
                                     .opcode = PVRDMA_WR_SEND_WITH_INV,
                                     .send_flags = PVRDMA_SEND_SIGNALED,
                                     .ex.invalidate_rkey = key };
    s = (struct pvrdma_sge) { loc, 32, lkey };
    fill(d, loc, 32, 11);
    qpvrdma_post_send(d, &p.a, &h, &s, true);
    g_assert(qpvrdma_poll_cq(d, &p.cq, &e));
    g_assert_cmphex(e.wr_id, ==, 0xb1);
    g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
    g_assert_cmpuint(e.opcode, ==, PVRDMA_WC_RECV);
    g_assert_cmpuint(e.byte_len, ==, 32);
    g_assert(e.wc_flags & PVRDMA_WC_WITH_INVALIDATE);
    same(d, loc, loc + 2048, 32);
    qpvrdma_expect_cqe(d, &p.cq, 2, PVRDMA_WC_SEND, PVRDMA_WC_SUCCESS, 32);
    /* the invalidated key no longer reads */
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_READ, 3, loc, 8, lkey, frbuf, key);
    qpvrdma_expect_cqe(d, &p.cq, 3, 0, PVRDMA_WC_REM_ACCESS_ERR, 0);
    qpvrdma_stop(d);
}

static void test_ud(void)
{
    Pair p;
    QPvrdma *d;
    uint64_t src, dst;
    uint32_t key;
    struct pvrdma_sq_wqe_hdr h = { 0 };
    struct pvrdma_sge s;
    struct pvrdma_cqe e;
    uint8_t grh[40];

    pair_setup(&p, PVRDMA_QPT_UD, 8);
    d = p.d;
    src = qpvrdma_alloc(d, 4096);
    dst = qpvrdma_alloc(d, 4096);
    key = qpvrdma_create_mr(d, p.pd, src, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    qpvrdma_create_mr(d, p.pd, dst, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    fill(d, src, 4096, 11);
    qpvrdma_post_recv(d, &p.b, 0xb1, dst, 40 + 1024, key + 256);
    h.wr_id = 0xa1;
    h.num_sge = 1;
    h.opcode = PVRDMA_WR_SEND;
    h.send_flags = PVRDMA_SEND_SIGNALED;
    h.wr.ud.remote_qpn = p.b.qpn;
    h.wr.ud.remote_qkey = 0x11111111;
    memcpy(h.wr.ud.av.dgid, qpvrdma_test_gid, 16);
    s = (struct pvrdma_sge) { src, 1024, key };
    qpvrdma_post_send(d, &p.a, &h, &s, true);
    g_assert(qpvrdma_poll_cq(d, &p.cq, &e));
    g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
    g_assert_cmpuint(e.byte_len, ==, 40 + 1024);
    g_assert(e.wc_flags & PVRDMA_WC_GRH);
    g_assert_cmpuint(e.network_hdr_type, ==, PVRDMA_NETWORK_IPV4);
    g_assert_cmpuint(e.src_qp, ==, p.a.qpn);
    qpvrdma_expect_cqe(d, &p.cq, 0xa1, PVRDMA_WC_SEND, PVRDMA_WC_SUCCESS, 1024);
    same(d, src, dst + 40, 1024);
    /* RoCE v2 over IPv4: the IPv4 header sits in the GRH's last 20 bytes */
    qtest_memread(d->qts, dst, grh, 40);
    g_assert_cmphex(grh[20], ==, 0x45);
    g_assert(memcmp(grh + 32, qpvrdma_test_gid + 12, 4) == 0);

    /* wrong qkey: silently dropped, the sender still completes */
    h.wr_id = 0xa2;
    h.wr.ud.remote_qkey = 0x22;
    qpvrdma_post_send(d, &p.a, &h, &s, true);
    qpvrdma_expect_cqe(d, &p.cq, 0xa2, PVRDMA_WC_SEND, PVRDMA_WC_SUCCESS, 1024);
    qpvrdma_cq_empty(d, &p.cq);
    qpvrdma_stop(d);
}

static void test_srq_recv(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    struct pvrdma_cmd_create_srq c = { .hdr.cmd = PVRDMA_CMD_CREATE_SRQ };
    union pvrdma_cmd_resp r;
    QPvrdmaRing ring;
    uint32_t pd, srq, key, prod = 0;
    uint64_t buf;
    QPvrdmaCq cq;
    QPvrdmaQp a, b;
    struct pvrdma_eqe eqe;

    qpvrdma_bind_gid(d, 0);
    pd = qpvrdma_create_pd(d, 0);
    qpvrdma_create_cq(d, &cq, 64);
    qpvrdma_ring_alloc(d, &ring, 2);
    c.pdir_dma = ring.pdir;
    c.pd_handle = pd;
    c.nchunks = 2;
    c.attrs.max_wr = 16;
    c.attrs.max_sge = 1;
    c.attrs.srq_limit = 2;
    qpvrdma_cmd_ok(d, &c, sizeof(c), &r);
    srq = r.create_srq_resp.srqn;
    qpvrdma_create_qp(d, &a, pd, cq.handle, cq.handle, PVRDMA_QPT_RC, 8, 0);
    qpvrdma_create_qp(d, &b, pd, cq.handle, cq.handle, PVRDMA_QPT_RC, 8, srq);
    qpvrdma_qp_to_rts(d, &a, PVRDMA_QPT_RC, b.qpn);
    qpvrdma_qp_to_rts(d, &b, PVRDMA_QPT_RC, a.qpn);
    buf = qpvrdma_alloc(d, 4096);
    key = qpvrdma_create_mr(d, pd, buf, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    fill(d, buf, 256, 1);
    for (int i = 0; i < 3; i++) {
        /* SRQ WQE: stride 32 (16-byte header + one SGE), ring at page 1 */
        struct pvrdma_rq_wqe_hdr wh = { .wr_id = 0x50 + i, .num_sge = 1 };
        struct pvrdma_sge s = { buf + 1024 + 64 * i, 64, key };

        qtest_memwrite(d->qts, ring.pages[1] + 32 * i, &wh, sizeof(wh));
        qtest_memwrite(d->qts, ring.pages[1] + 32 * i + 16, &s, sizeof(s));
    }
    prod = 3;
    qtest_writel(d->qts, ring.pages[0] + 8, prod);
    qpvrdma_uar_write(d, 0, PVRDMA_UAR_SRQ_OFFSET, PVRDMA_UAR_SRQ_RECV | srq);
    qpvrdma_send_wr(d, &a, PVRDMA_WR_SEND, 1, buf, 64, key, 0, 0);
    qpvrdma_expect_cqe(d, &cq, 0x50, PVRDMA_WC_RECV, PVRDMA_WC_SUCCESS, 64);
    qpvrdma_expect_cqe(d, &cq, 1, PVRDMA_WC_SEND, PVRDMA_WC_SUCCESS, 64);
    same(d, buf, buf + 1024, 64);
    /* 3 - 1 = 2 left: not below the limit yet; one more crosses it */
    qpvrdma_send_wr(d, &a, PVRDMA_WR_SEND, 2, buf, 64, key, 0, 0);
    qpvrdma_expect_cqe(d, &cq, 0x51, PVRDMA_WC_RECV, PVRDMA_WC_SUCCESS, 64);
    qpvrdma_expect_cqe(d, &cq, 2, PVRDMA_WC_SEND, PVRDMA_WC_SUCCESS, 64);
    g_assert(qpvrdma_wait_vector(d, PVRDMA_INTR_VECTOR_ASYNC));
    qtest_memread(d->qts, d->async_pages[1], &eqe, sizeof(eqe));
    g_assert_cmpuint(eqe.type, ==, PVRDMA_EVENT_SRQ_LIMIT_REACHED);
    g_assert_cmpuint(eqe.info, ==, srq);
    /* a QP on an SRQ that enters the error state: LAST_WQE_REACHED */
    {
        struct pvrdma_qp_attr at = { .qp_state = PVRDMA_QPS_ERR };

        g_assert(!async_seen(d, PVRDMA_EVENT_QP_LAST_WQE_REACHED, b.handle));
        g_assert_cmpuint(qpvrdma_modify_qp(d, b.handle, PVRDMA_QP_STATE, &at),
                         ==, 0);
        g_assert(async_seen(d, PVRDMA_EVENT_QP_LAST_WQE_REACHED, b.handle));
        g_assert(!async_seen(d, PVRDMA_EVENT_QP_LAST_WQE_REACHED, a.handle));
    }
    qpvrdma_stop(d);
}

static void test_rnr_wait(void)
{
    Pair p;
    QPvrdma *d;
    uint64_t buf;
    uint32_t key;

    pair_setup(&p, PVRDMA_QPT_RC, 8);
    d = p.d;
    buf = qpvrdma_alloc(d, 4096);
    key = qpvrdma_create_mr(d, p.pd, buf, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    /* no receive posted: with rnr_retry 7 the send waits */
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_SEND, 1, buf, 32, key, 0, 0);
    qpvrdma_cq_empty(d, &p.cq);
    qpvrdma_post_recv(d, &p.b, 2, buf + 2048, 64, key);
    qpvrdma_expect_cqe(d, &p.cq, 2, PVRDMA_WC_RECV, PVRDMA_WC_SUCCESS, 32);
    qpvrdma_expect_cqe(d, &p.cq, 1, PVRDMA_WC_SEND, PVRDMA_WC_SUCCESS, 32);
    qpvrdma_stop(d);
}

/*
 * QPs destroyed with work of theirs and for them in flight.
 * After DESTROY_QP's response the Linux driver flushes the QP's CQEs and
 * forgets its handle: a CQE of it written later stops the driver's CQ poll
 * for good, so none may come (qpvrdma_poll_cq() fails on one).  b takes
 * two of a's six SENDs, a waits on RNR (rnr_retry 7) for the rest; b is
 * destroyed: a's waiting SEND finds no responder, fails with RETRY_EXC_ERR
 * once its retries ran out (as when a peer HCA's QP is gone) and the rest
 * are flushed, nothing for b.  Then a is destroyed with WRITEs queued
 * behind a SEND waiting on c: nothing more for a, and the CQ still works.
 */
static void test_destroy_under_traffic(void)
{
    Pair p;
    QPvrdma *d;
    QPvrdmaQp c;
    uint64_t buf;
    uint32_t key;

    pair_setup(&p, PVRDMA_QPT_RC, 16);
    d = p.d;
    buf = qpvrdma_alloc(d, 65536);
    key = qpvrdma_create_mr(d, p.pd, buf, 65536, PVRDMA_ACCESS_LOCAL_WRITE |
                            PVRDMA_ACCESS_REMOTE_WRITE);
    qpvrdma_post_recv(d, &p.b, 0xb0, buf + 32768, 1024, key);
    qpvrdma_post_recv(d, &p.b, 0xb1, buf + 33792, 1024, key);
    for (int i = 0; i < 6; i++) {
        qpvrdma_send_wr(d, &p.a, PVRDMA_WR_SEND, 0xa0 + i, buf + i * 1024,
                        1024, key, 0, 0);
    }
    for (int i = 0; i < 2; i++) {
        qpvrdma_expect_cqe(d, &p.cq, 0xb0 + i, PVRDMA_WC_RECV,
                           PVRDMA_WC_SUCCESS, 1024);
        qpvrdma_expect_cqe(d, &p.cq, 0xa0 + i, PVRDMA_WC_SEND,
                           PVRDMA_WC_SUCCESS, 1024);
    }
    qpvrdma_cq_empty(d, &p.cq);
    g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_QP, p.b.handle),
                     ==, 0);
    /* timeout 14, retry_cnt 7: the retries run out within a second */
    qpvrdma_cq_empty(d, &p.cq);
    qpvrdma_clock_step(d, 2000ull * 1000 * 1000);
    qpvrdma_expect_cqe(d, &p.cq, 0xa2, PVRDMA_WC_SEND,
                       PVRDMA_WC_RETRY_EXC_ERR, 0);
    for (int i = 3; i < 6; i++) {
        qpvrdma_expect_cqe(d, &p.cq, 0xa0 + i, PVRDMA_WC_SEND,
                           PVRDMA_WC_WR_FLUSH_ERR, 0);
    }
    qpvrdma_cq_empty(d, &p.cq);
    g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_QP, p.a.handle),
                     ==, 0);

    /* a SEND waiting on c (no receive), WRITEs behind it; a destroyed */
    qpvrdma_create_qp(d, &p.a, p.pd, p.cq.handle, p.cq.handle,
                      PVRDMA_QPT_RC, 16, 0);
    qpvrdma_create_qp(d, &c, p.pd, p.cq.handle, p.cq.handle,
                      PVRDMA_QPT_RC, 16, 0);
    qpvrdma_qp_to_rts(d, &p.a, PVRDMA_QPT_RC, c.qpn);
    qpvrdma_qp_to_rts(d, &c, PVRDMA_QPT_RC, p.a.qpn);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_SEND, 0xc0, buf, 64, key, 0, 0);
    for (int i = 1; i < 9; i++) {
        qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 0xc0 + i, buf,
                        4096, key, buf + 40960, key);
    }
    qpvrdma_cq_empty(d, &p.cq);
    g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_QP, p.a.handle),
                     ==, 0);
    qpvrdma_clock_step(d, 3000ull * 1000 * 1000);
    qpvrdma_cq_empty(d, &p.cq);

    /* the CQ goes on: c and a new QP exchange a message */
    qpvrdma_create_qp(d, &p.b, p.pd, p.cq.handle, p.cq.handle,
                      PVRDMA_QPT_RC, 16, 0);
    qpvrdma_qp_to_rts(d, &p.b, PVRDMA_QPT_RC, c.qpn);
    g_assert_cmpuint(qpvrdma_modify_qp(d, c.handle, PVRDMA_QP_STATE,
                     &(struct pvrdma_qp_attr) { .qp_state = PVRDMA_QPS_RESET }),
                     ==, 0);
    qpvrdma_qp_to_rts(d, &c, PVRDMA_QPT_RC, p.b.qpn);
    qpvrdma_post_recv(d, &c, 0xd0, buf + 32768, 64, key);
    qpvrdma_send_wr(d, &p.b, PVRDMA_WR_SEND, 0xd1, buf, 64, key, 0, 0);
    qpvrdma_expect_cqe(d, &p.cq, 0xd0, PVRDMA_WC_RECV, PVRDMA_WC_SUCCESS, 64);
    qpvrdma_expect_cqe(d, &p.cq, 0xd1, PVRDMA_WC_SEND, PVRDMA_WC_SUCCESS, 64);
    qpvrdma_stop(d);
}

/* Many messages through small rings: indices wrap several times. */
static void test_ring_wrap(void)
{
    Pair p;
    QPvrdma *d;
    uint64_t src, dst;
    uint32_t key;

    pair_setup(&p, PVRDMA_QPT_RC, 4);
    d = p.d;
    src = qpvrdma_alloc(d, 4096);
    dst = qpvrdma_alloc(d, 4096);
    key = qpvrdma_create_mr(d, p.pd, src, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    qpvrdma_create_mr(d, p.pd, dst, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    for (int i = 0; i < 40; i++) {
        fill(d, src, 128, i);
        qpvrdma_post_recv(d, &p.b, 1000 + i, dst, 128, key + 256);
        qpvrdma_send_wr(d, &p.a, PVRDMA_WR_SEND, i, src, 128, key, 0, 0);
        qpvrdma_expect_cqe(d, &p.cq, 1000 + i, PVRDMA_WC_RECV,
                           PVRDMA_WC_SUCCESS, 128);
        qpvrdma_expect_cqe(d, &p.cq, i, PVRDMA_WC_SEND, PVRDMA_WC_SUCCESS, 128);
        same(d, src, dst, 128);
    }
    qpvrdma_stop(d);
}

/* query-pvrdma's pieces counter of d's one device */
static uint64_t query_pieces(QPvrdma *d)
{
    QDict *rsp = qtest_qmp(d->qts, "{ 'execute': 'query-pvrdma' }");
    QList *devs = qdict_get_qlist(rsp, "return");
    QDict *dev = qobject_to(QDict, qlist_peek(devs));
    uint64_t n = qdict_get_int(dev, "pieces");

    qobject_unref(rsp);
    return n;
}

/*
 * A 2.5 MiB RDMA WRITE and READ on loopback move in pieces of 1 MiB, each
 * in a run of the main loop of its own (two before the last, counted by
 * query-pvrdma), the data whole.
 */
static void test_pieces(void)
{
    const uint32_t len = 5 * 512 * 1024;
    Pair p;
    QPvrdma *d;
    uint64_t src, dst, back, pieces;
    uint32_t lkey, rkey, bkey;

    pair_setup(&p, PVRDMA_QPT_RC, 16);
    d = p.d;
    src = qpvrdma_alloc(d, len);
    dst = qpvrdma_alloc(d, len);
    back = qpvrdma_alloc(d, len);
    lkey = qpvrdma_create_mr(d, p.pd, src, len, PVRDMA_ACCESS_LOCAL_WRITE);
    rkey = qpvrdma_create_mr(d, p.pd, dst, len, PVRDMA_ACCESS_LOCAL_WRITE |
                             PVRDMA_ACCESS_REMOTE_WRITE |
                             PVRDMA_ACCESS_REMOTE_READ);
    bkey = qpvrdma_create_mr(d, p.pd, back, len, PVRDMA_ACCESS_LOCAL_WRITE);
    fill(d, src, len, 3);
    pieces = query_pieces(d);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 1, src, len, lkey, dst,
                    rkey);
    qpvrdma_expect_cqe(d, &p.cq, 1, PVRDMA_WC_RDMA_WRITE, PVRDMA_WC_SUCCESS,
                       len);
    g_assert_cmpuint(query_pieces(d), ==, pieces + 2);
    same(d, src, dst, len);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_READ, 2, back, len, bkey, dst,
                    rkey);
    qpvrdma_expect_cqe(d, &p.cq, 2, PVRDMA_WC_RDMA_READ, PVRDMA_WC_SUCCESS,
                       len);
    g_assert_cmpuint(query_pieces(d), ==, pieces + 4);
    same(d, src, back, len);
    qpvrdma_stop(d);
}

void pvrdma_add_data_tests(void)
{
    qpvrdma_add_func_both("/pvrdma/data/send-recv", test_send_recv);
    qpvrdma_add_func_both("/pvrdma/data/pieces", test_pieces);
    qpvrdma_add_func_both("/pvrdma/data/send-inline", test_send_inline);
    qpvrdma_add_func_both("/pvrdma/data/rdma-ops", test_rdma_ops);
    qpvrdma_add_func_both("/pvrdma/data/access-errors", test_access_errors);
    qpvrdma_add_func_both("/pvrdma/data/fast-reg", test_fast_reg);
    qpvrdma_add_func_both("/pvrdma/data/send-with-inv", test_send_with_inv);
    qpvrdma_add_func_both("/pvrdma/data/ud", test_ud);
    qpvrdma_add_func_both("/pvrdma/data/srq", test_srq_recv);
    qpvrdma_add_func_both("/pvrdma/data/rnr-wait", test_rnr_wait);
    qpvrdma_add_func_both("/pvrdma/data/destroy-under-traffic",
                          test_destroy_under_traffic);
    qpvrdma_add_func_both("/pvrdma/data/ring-wrap", test_ring_wrap);
}
