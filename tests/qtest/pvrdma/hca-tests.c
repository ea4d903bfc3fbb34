/*
 * QTest for the pvrdma device: host HCA mode (ibdev=) and its rdma_cm
 * translation.
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
#include <arpa/inet.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#ifndef CAP_IPC_LOCK
#define CAP_IPC_LOCK 14
#endif

/* ------------------------------------------------------------------ */
/* Host HCA mode (ibdev=): needs a host RDMA device, e.g. soft-RoCE    */

typedef struct HostGid {
    char dev[64];
    uint8_t gid[16];
} HostGid;

/* The first host RDMA device with a RoCE v2 IPv4 GID on port 1. */
static bool host_gid(HostGid *hg)
{
    g_autoptr(GDir) dir = g_dir_open("/sys/class/infiniband", 0, NULL);
    const char *dev;

    if (!dir || access("/dev/infiniband/uverbs0", R_OK | W_OK)) {
        return false;
    }
    while ((dev = g_dir_read_name(dir))) {
        for (int i = 0; i < 16; i++) {
            g_autofree char *gp = g_strdup_printf(
                "/sys/class/infiniband/%s/ports/1/gids/%d", dev, i);
            g_autofree char *tp = g_strdup_printf(
                "/sys/class/infiniband/%s/ports/1/gid_attrs/types/%d", dev, i);
            g_autofree char *g = NULL, *t = NULL;
            unsigned w[8];

            if (!g_file_get_contents(gp, &g, NULL, NULL) ||
                !g_file_get_contents(tp, &t, NULL, NULL) ||
                !g_str_has_prefix(t, "RoCE v2") ||
                sscanf(g, "%x:%x:%x:%x:%x:%x:%x:%x", &w[0], &w[1], &w[2],
                       &w[3], &w[4], &w[5], &w[6], &w[7]) != 8 ||
                w[5] != 0xffff) {
                continue;
            }
            for (int k = 0; k < 8; k++) {
                hg->gid[2 * k] = w[k] >> 8;
                hg->gid[2 * k + 1] = w[k] & 0xff;
            }
            g_strlcpy(hg->dev, dev, sizeof(hg->dev));
            return true;
        }
    }
    return false;
}

/* Host completions arrive on QEMU's event loop: wait in wall time. */
#define HCA_WAIT_MS 5000

/*
 * The QPs' transport (the device's "qps" property lists it per QP, as
 * "path") is want, for every QP of the device.
 */
static void expect_transports(QPvrdma *d, const char *want)
{
    g_autofree char *qps = qpvrdma_qps(d);
    g_auto(GStrv) lines = g_strsplit(qps, "\n", -1);
    g_autofree char *needle = g_strdup_printf(" path %s", want);
    int n = 0;

    for (int i = 0; lines[i]; i++) {
        if (g_str_has_prefix(lines[i], "qp ") &&
            !strstr(lines[i], "type GSI")) {
            g_assert_nonnull(strstr(lines[i], needle));
            n++;
        }
    }
    g_assert_cmpint(n, >, 0);
}

/*
 * Two QPs of one device, bound to the host device's GID and connected to
 * each other at that GID, the device's own: through the device's loopback
 * transport, or with host (no loopback transport: x-loopback=off) through the
 * host device's loopback; with the host's QP numbers and keys either way.
 * UD QPs always go through the host device.
 */
static bool hca_pair_to(Pair *p, HostGid *hg, uint8_t type, const char *extra,
                        bool host)
{
    if (!host_gid(hg)) {
        g_test_skip("no host RDMA device with a RoCE v2 IPv4 GID "
                    "(e.g. rdma link add rxe0 type rxe netdev eth0)");
        return false;
    }
    p->d = qpvrdma_start_active(g_strdup_printf(",ibdev=%s%s%s", hg->dev,
                                                host ? ",x-loopback=off" : "",
                                                extra ? extra : ""));
    qpvrdma_bind_gid_raw(p->d, 0, hg->gid);
    p->pd = qpvrdma_create_pd(p->d, 0);
    qpvrdma_create_cq(p->d, &p->cq, 256);
    qpvrdma_create_qp(p->d, &p->a, p->pd, p->cq.handle, p->cq.handle, type,
                      16, 0);
    qpvrdma_create_qp(p->d, &p->b, p->pd, p->cq.handle, p->cq.handle, type,
                      16, 0);
    /* the guest sees the host's QP numbers, not its handles */
    g_assert_cmpuint(p->a.qpn, !=, p->a.handle);
    qpvrdma_qp_to_rts_gid(p->d, &p->a, type, p->b.qpn, hg->gid, 7);
    qpvrdma_qp_to_rts_gid(p->d, &p->b, type, p->a.qpn, hg->gid, 7);
    /* UD QPs are the host device's from creation */
    expect_transports(p->d, host || type == PVRDMA_QPT_UD ? "hostverbs" :
                      "loopback");
    return true;
}

/* Through the host device (its loopback), whatever the QP type. */
static bool hca_pair(Pair *p, HostGid *hg, uint8_t type, const char *extra)
{
    return hca_pair_to(p, hg, type, extra, true);
}

/*
 * RC data, compared: through the host device, or (!host) through the
 * device's loopback transport by the host device's QP numbers and keys.
 */
static void hca_rc(bool host)
{
    HostGid hg;
    Pair p;
    QPvrdma *d;
    uint64_t src, dst, val;
    uint32_t lkey, dkey, rkey, unused;
    struct pvrdma_sq_wqe_hdr h;
    struct pvrdma_sge s[2];
    struct pvrdma_cqe e;
    bool sent;

    if (!hca_pair_to(&p, &hg, PVRDMA_QPT_RC, NULL, host)) {
        return;
    }
    d = p.d;
    src = qpvrdma_alloc(d, 3 * 4096);
    dst = qpvrdma_alloc(d, 3 * 4096);
    lkey = qpvrdma_create_mr_keys(d, p.pd, src, 3 * 4096,
                                  PVRDMA_ACCESS_LOCAL_WRITE, &unused);
    dkey = qpvrdma_create_mr_keys(d, p.pd, dst, 3 * 4096,
                                  PVRDMA_ACCESS_LOCAL_WRITE |
                                  PVRDMA_ACCESS_REMOTE_WRITE |
                                  PVRDMA_ACCESS_REMOTE_READ |
                                  PVRDMA_ACCESS_REMOTE_ATOMIC, &rkey);
    /* the host's keys, not the device's handle << 8 */
    g_assert_cmpuint(lkey & 0xff, !=, 0);
    g_assert_cmpuint(rkey, !=, 0);
    fill(d, src, 3 * 4096, 5);

    /* SEND of two SGEs across pages into one receive */
    qpvrdma_post_recv(d, &p.b, 0xb1, dst, 3 * 4096, dkey);
    h = (struct pvrdma_sq_wqe_hdr) { .wr_id = 0xa1, .num_sge = 2,
                                     .opcode = PVRDMA_WR_SEND_WITH_IMM,
                                     .send_flags = PVRDMA_SEND_SIGNALED,
                                     .ex.imm_data = 0x11223344 };
    s[0] = (struct pvrdma_sge) { src + 100, 5000, lkey };
    s[1] = (struct pvrdma_sge) { src + 8000, 3000, lkey };
    qpvrdma_post_send(d, &p.a, &h, s, true);
    g_assert(qpvrdma_wait_cq(d, &p.cq, &e, HCA_WAIT_MS));
    sent = e.wr_id == 0xa1;     /* either completion may come first */
    if (sent) {
        g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
        g_assert_cmpuint(e.byte_len, ==, 8000);
        g_assert(qpvrdma_wait_cq(d, &p.cq, &e, HCA_WAIT_MS));
    }
    g_assert_cmphex(e.wr_id, ==, 0xb1);
    g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
    g_assert_cmpuint(e.opcode, ==, PVRDMA_WC_RECV);
    g_assert_cmpuint(e.byte_len, ==, 8000);
    g_assert_cmphex(e.imm_data, ==, 0x11223344);
    g_assert(e.wc_flags & PVRDMA_WC_WITH_IMM);
    g_assert_cmpuint(e.qp, ==, p.b.handle);
    g_assert_cmpuint(e.src_qp, ==, p.a.qpn);
    same(d, src + 100, dst, 5000);
    same(d, src + 8000, dst + 5000, 3000);
    if (!sent) {
        qpvrdma_expect_cqe_wait(d, &p.cq, 0xa1, PVRDMA_WC_SEND,
                                PVRDMA_WC_SUCCESS, 8000, HCA_WAIT_MS);
    }

    /* an inline SEND with lkey 0 (rdma_xclient): read through its MR */
    fill(d, src, 3 * 4096, 6);
    qpvrdma_post_recv(d, &p.b, 0xb9, dst, 4096, dkey);
    h = (struct pvrdma_sq_wqe_hdr) {
        .wr_id = 0xa9, .num_sge = 1, .opcode = PVRDMA_WR_SEND,
        .send_flags = PVRDMA_SEND_SIGNALED | PVRDMA_SEND_INLINE };
    s[0] = (struct pvrdma_sge) { src + 4090, 16, 0 };
    qpvrdma_post_send(d, &p.a, &h, s, true);
    for (int i = 0; i < 2; i++) {
        g_assert(qpvrdma_wait_cq(d, &p.cq, &e, HCA_WAIT_MS));
        g_assert(e.wr_id == 0xa9 || e.wr_id == 0xb9);
        g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
        g_assert_cmpuint(e.byte_len, ==, 16);
    }
    same(d, src + 4090, dst, 16);

    /* RDMA WRITE, READ and atomics through the rkey */
    fill(d, src, 3 * 4096, 9);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 2, src, 6000, lkey,
                    dst + 7, rkey);
    qpvrdma_expect_cqe_wait(d, &p.cq, 2, PVRDMA_WC_RDMA_WRITE,
                            PVRDMA_WC_SUCCESS, 6000, HCA_WAIT_MS);
    same(d, src, dst + 7, 6000);
    fill(d, dst, 3 * 4096, 77);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_READ, 3, src + 1, 7000, lkey,
                    dst + 3, rkey);
    qpvrdma_expect_cqe_wait(d, &p.cq, 3, PVRDMA_WC_RDMA_READ,
                            PVRDMA_WC_SUCCESS, 7000, HCA_WAIT_MS);
    same(d, src + 1, dst + 3, 7000);
    qtest_writeq(d->qts, dst + 64, 40);
    qpvrdma_atomic_wr(d, &p.a, PVRDMA_WR_ATOMIC_FETCH_AND_ADD, 4, src, lkey,
                      dst + 64, rkey, 2, 0);
    qpvrdma_expect_cqe_wait(d, &p.cq, 4, PVRDMA_WC_FETCH_ADD,
                            PVRDMA_WC_SUCCESS, 8, HCA_WAIT_MS);
    g_assert_cmpuint(qtest_readq(d->qts, src), ==, 40);
    val = qtest_readq(d->qts, dst + 64);
    g_assert_cmpuint(val, ==, 42);

    /* a bad lkey: the WQE fails, the QP goes to error */
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 5, src, 64, lkey ^ 0x100,
                    dst, rkey);
    g_assert(qpvrdma_wait_cq(d, &p.cq, &e, HCA_WAIT_MS));
    g_assert_cmphex(e.wr_id, ==, 5);
    g_assert_cmpuint(e.status, !=, PVRDMA_WC_SUCCESS);
    {
        struct pvrdma_cmd_query_qp q = { .hdr.cmd = PVRDMA_CMD_QUERY_QP,
                                         .qp_handle = p.a.handle };
        union pvrdma_cmd_resp r;

        qpvrdma_cmd_ok(d, &q, sizeof(q), &r);
        g_assert_cmpuint(r.query_qp_resp.attrs.qp_state, ==, PVRDMA_QPS_ERR);
    }
    /* an FRMR's key is the host's too (its use: /pvrdma/hca/frmr) */
    {
        struct pvrdma_cmd_create_mr c = { .hdr.cmd = PVRDMA_CMD_CREATE_MR,
                                          .pd_handle = p.pd, .nchunks = 4,
                                          .flags = PVRDMA_MR_FLAG_FRMR };
        union pvrdma_cmd_resp r;

        qpvrdma_cmd_ok(d, &c, sizeof(c), &r);
        g_assert_cmphex(r.create_mr_resp.lkey, ==, r.create_mr_resp.rkey);
        g_assert_cmphex(r.create_mr_resp.rkey >> 8, !=,
                        r.create_mr_resp.mr_handle);
    }
    g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_QP, p.a.handle),
                     ==, 0);
    g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_QP, p.b.handle),
                     ==, 0);
    qpvrdma_stop(d);
}

static void test_hca_rc(void)
{
    hca_rc(true);
}

static void test_hca_rc_loopback(void)
{
    hca_rc(false);
}

/*
 * An RC pair as hca_pair_to() with shareable guest RAM: an FRMR's scattered
 * pages are mapped again side by side from its file
 */
static bool hca_pair_shared(Pair *p, HostGid *hg, bool host)
{
    return hca_pair_to(p, hg, PVRDMA_QPT_RC,
                       " -m 256M -object memory-backend-memfd,id=mem,"
                       "size=256M,share=on -machine memory-backend=mem", host);
}

/* FRMR_PAGES scattered guest pages, out of order, behind an FRMR */
#define FRMR_PAGES 3
#define FRMR_IOVA 0x7654321100ull     /* the guest's choice: not a GPA */
#define FRMR_LEN (FRMR_PAGES * 4096 - 0x100)

/* [off, off+len) of the FRMR's region equals guest memory at gpa */
static void frmr_same(QPvrdma *d, const uint64_t *pages, uint64_t off,
                      uint64_t gpa, uint64_t len)
{
    while (len) {
        uint64_t o = (FRMR_IOVA & 4095) + off;
        uint64_t n = MIN(len, 4096 - o % 4096);

        same(d, pages[o / 4096] + o % 4096, gpa, n);
        off += n;
        gpa += n;
        len -= n;
    }
}

/* FAST_REG_MR of FRMR key on qp (signaled), key byte kb; returns the key */
static uint32_t hca_fast_reg(QPvrdma *d, QPvrdmaQp *qp, QPvrdmaCq *cq,
                             uint32_t key, uint8_t kb, const uint64_t *pages)
{
    struct pvrdma_sq_wqe_hdr h = { .wr_id = 0xf0 + kb,
                                   .opcode = PVRDMA_WR_FAST_REG_MR,
                                   .send_flags = PVRDMA_SEND_SIGNALED };

    h.wr.fast_reg.iova_start = FRMR_IOVA;
    h.wr.fast_reg.pl_pdir_dma = qpvrdma_pdir(d, pages, FRMR_PAGES);
    h.wr.fast_reg.page_shift = 12;
    h.wr.fast_reg.page_list_len = FRMR_PAGES;
    h.wr.fast_reg.length = FRMR_LEN;
    h.wr.fast_reg.access_flags = PVRDMA_ACCESS_LOCAL_WRITE |
                                 PVRDMA_ACCESS_REMOTE_WRITE |
                                 PVRDMA_ACCESS_REMOTE_READ;
    h.wr.fast_reg.rkey = (key & ~0xffu) | kb;
    qpvrdma_post_send(d, qp, &h, NULL, true);
    qpvrdma_expect_cqe_wait(d, cq, 0xf0 + kb, PVRDMA_WC_FAST_REG_MR,
                            PVRDMA_WC_SUCCESS, 0, HCA_WAIT_MS);
    return h.wr.fast_reg.rkey;
}

static void hca_local_inv(QPvrdma *d, QPvrdmaQp *qp, QPvrdmaCq *cq,
                          uint32_t key, uint64_t wr_id)
{
    struct pvrdma_sq_wqe_hdr h = { .wr_id = wr_id,
                                   .opcode = PVRDMA_WR_LOCAL_INV,
                                   .send_flags = PVRDMA_SEND_SIGNALED,
                                   .ex.invalidate_rkey = key };

    qpvrdma_post_send(d, qp, &h, NULL, true);
    qpvrdma_expect_cqe_wait(d, cq, wr_id, PVRDMA_WC_LOCAL_INV,
                            PVRDMA_WC_SUCCESS, 0, HCA_WAIT_MS);
}

/*
 * Fast registration through the host device (a type 2 memory window over
 * the page list): an FRMR over scattered guest pages at an IOVA that is
 * no guest address, registered on QP b; QP a writes and reads it through
 * the guest's key, b sends from it by the same key as its lkey; then
 * LOCAL_INV, a new key, the peer's SEND with invalidate, a new key again,
 * LOCAL_INV twice, and the last key is refused.  Every byte compared.
 */
static void hca_frmr(bool host)
{
    struct pvrdma_cmd_create_mr c = { .hdr.cmd = PVRDMA_CMD_CREATE_MR,
                                      .flags = PVRDMA_MR_FLAG_FRMR,
                                      .nchunks = 8 };
    union pvrdma_cmd_resp r;
    HostGid hg;
    Pair p;
    QPvrdma *d;
    uint64_t src, dst, frbuf, pages[FRMR_PAGES];
    uint32_t lkey, dkey, frkey, key, unused;
    struct pvrdma_sq_wqe_hdr h;
    struct pvrdma_sge s;
    struct pvrdma_cqe e;
    bool got_send = false, got_recv = false;

    if (!hca_pair_shared(&p, &hg, host)) {
        return;
    }
    d = p.d;
    src = qpvrdma_alloc(d, 3 * 4096);
    dst = qpvrdma_alloc(d, 3 * 4096);
    lkey = qpvrdma_create_mr_keys(d, p.pd, src, 3 * 4096,
                                  PVRDMA_ACCESS_LOCAL_WRITE, &unused);
    dkey = qpvrdma_create_mr_keys(d, p.pd, dst, 3 * 4096,
                                  PVRDMA_ACCESS_LOCAL_WRITE, &unused);
    c.pd_handle = p.pd;
    qpvrdma_cmd_ok(d, &c, sizeof(c), &r);
    frkey = r.create_mr_resp.rkey;
    g_assert_cmphex(r.create_mr_resp.lkey, ==, frkey);
    frbuf = qpvrdma_alloc(d, 6 * 4096);
    pages[0] = frbuf + 4 * 4096;
    pages[1] = frbuf;
    pages[2] = frbuf + 2 * 4096;
    fill(d, frbuf, 6 * 4096, 1);

    /* the peer writes and reads the pages through the guest's key */
    key = hca_fast_reg(d, &p.b, &p.cq, frkey, 0x5a, pages);
    fill(d, src, 3 * 4096, 7);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 0xa1, src, 9000, lkey,
                    FRMR_IOVA + 100, key);
    qpvrdma_expect_cqe_wait(d, &p.cq, 0xa1, PVRDMA_WC_RDMA_WRITE,
                            PVRDMA_WC_SUCCESS, 9000, HCA_WAIT_MS);
    frmr_same(d, pages, 100, src, 9000);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_READ, 0xa2, dst, 6000, dkey,
                    FRMR_IOVA + 3000, key);
    qpvrdma_expect_cqe_wait(d, &p.cq, 0xa2, PVRDMA_WC_RDMA_READ,
                            PVRDMA_WC_SUCCESS, 6000, HCA_WAIT_MS);
    frmr_same(d, pages, 3000, dst, 6000);

    /* b sends 5000 bytes of the region: the FRMR's key as its lkey */
    qpvrdma_post_recv(d, &p.a, 0xb1, dst, 3 * 4096, dkey);
    h = (struct pvrdma_sq_wqe_hdr) { .wr_id = 0xa3, .num_sge = 1,
                                     .opcode = PVRDMA_WR_SEND,
                                     .send_flags = PVRDMA_SEND_SIGNALED };
    s = (struct pvrdma_sge) { FRMR_IOVA + 4000, 5000, key };
    qpvrdma_post_send(d, &p.b, &h, &s, true);
    for (int i = 0; i < 2; i++) {
        g_assert(qpvrdma_wait_cq(d, &p.cq, &e, HCA_WAIT_MS));
        g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
        g_assert_cmpuint(e.byte_len, ==, 5000);
        got_send |= e.wr_id == 0xa3;
        got_recv |= e.wr_id == 0xb1;
    }
    g_assert(got_send && got_recv);
    frmr_same(d, pages, 4000, dst, 5000);

    /* LOCAL_INV, then a new key over the same pages */
    hca_local_inv(d, &p.b, &p.cq, key, 0xc1);
    key = hca_fast_reg(d, &p.b, &p.cq, key, 0x5b, pages);
    fill(d, src, 3 * 4096, 8);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 0xa4, src, FRMR_LEN, lkey,
                    FRMR_IOVA, key);
    qpvrdma_expect_cqe_wait(d, &p.cq, 0xa4, PVRDMA_WC_RDMA_WRITE,
                            PVRDMA_WC_SUCCESS, FRMR_LEN, HCA_WAIT_MS);
    frmr_same(d, pages, 0, src, FRMR_LEN);

    /* the peer's SEND with invalidate: b's receive says so */
    qpvrdma_post_recv(d, &p.b, 0xb2, dst, 64, dkey);
    h = (struct pvrdma_sq_wqe_hdr) { .wr_id = 0xa5, .num_sge = 1,
                                     .opcode = PVRDMA_WR_SEND_WITH_INV,
                                     .send_flags = PVRDMA_SEND_SIGNALED,
                                     .ex.invalidate_rkey = key };
    s = (struct pvrdma_sge) { src, 32, lkey };
    qpvrdma_post_send(d, &p.a, &h, &s, true);
    got_send = got_recv = false;
    for (int i = 0; i < 2; i++) {
        g_assert(qpvrdma_wait_cq(d, &p.cq, &e, HCA_WAIT_MS));
        g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
        if (e.wr_id == 0xb2) {
            g_assert(e.wc_flags & PVRDMA_WC_WITH_INVALIDATE);
            g_assert_cmphex(e.imm_data, ==, key);
            got_recv = true;
        } else {
            g_assert_cmphex(e.wr_id, ==, 0xa5);
            got_send = true;
        }
    }
    g_assert(got_send && got_recv);

    /* invalidated by the peer: registered once more, then twice LOCAL_INV */
    key = hca_fast_reg(d, &p.b, &p.cq, key, 0x5c, pages);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_READ, 0xa6, dst, 4096, dkey,
                    FRMR_IOVA + 200, key);
    qpvrdma_expect_cqe_wait(d, &p.cq, 0xa6, PVRDMA_WC_RDMA_READ,
                            PVRDMA_WC_SUCCESS, 4096, HCA_WAIT_MS);
    frmr_same(d, pages, 200, dst, 4096);
    hca_local_inv(d, &p.b, &p.cq, key, 0xc2);
    hca_local_inv(d, &p.b, &p.cq, key, 0xc3);

    /* the invalidated key is refused by the host device */
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 0xa7, src, 8, lkey,
                    FRMR_IOVA, key);
    qpvrdma_expect_cqe_wait(d, &p.cq, 0xa7, 0, PVRDMA_WC_REM_ACCESS_ERR, 0,
                            HCA_WAIT_MS);
    qpvrdma_stop(d);
}

static void test_hca_frmr(void)
{
    hca_frmr(true);
}

/*
 * A QP destroyed while an FRMR is registered (its window bound) on it:
 * the window is replaced, so the host device does not wait for it (Linux
 * 6.1's rxe would, 50 s), and the FRMR can still be destroyed.
 */
static void test_hca_frmr_qp_gone(void)
{
    struct pvrdma_cmd_create_mr c = { .hdr.cmd = PVRDMA_CMD_CREATE_MR,
                                      .flags = PVRDMA_MR_FLAG_FRMR,
                                      .nchunks = 8 };
    union pvrdma_cmd_resp r;
    HostGid hg;
    Pair p;
    QPvrdma *d;
    uint64_t src, frbuf, pages[FRMR_PAGES];
    uint32_t lkey, key, unused;
    int64_t t0;

    if (!hca_pair_shared(&p, &hg, true)) {
        return;
    }
    d = p.d;
    src = qpvrdma_alloc(d, 4096);
    lkey = qpvrdma_create_mr_keys(d, p.pd, src, 4096,
                                  PVRDMA_ACCESS_LOCAL_WRITE, &unused);
    c.pd_handle = p.pd;
    qpvrdma_cmd_ok(d, &c, sizeof(c), &r);
    frbuf = qpvrdma_alloc(d, 4 * 4096);
    for (int i = 0; i < FRMR_PAGES; i++) {
        pages[i] = frbuf + i * 4096;
    }
    key = hca_fast_reg(d, &p.b, &p.cq, r.create_mr_resp.rkey, 0x21, pages);
    fill(d, src, 4096, 3);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 0xa1, src, 4096, lkey,
                    FRMR_IOVA, key);
    qpvrdma_expect_cqe_wait(d, &p.cq, 0xa1, PVRDMA_WC_RDMA_WRITE,
                            PVRDMA_WC_SUCCESS, 4096, HCA_WAIT_MS);
    frmr_same(d, pages, 0, src, 4096);
    t0 = g_get_monotonic_time();
    g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_QP, p.b.handle),
                     ==, 0);
    g_assert_cmpint(g_get_monotonic_time() - t0, <, 10 * G_USEC_PER_SEC);
    g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_MR,
                                     r.create_mr_resp.mr_handle), ==, 0);
    qpvrdma_stop(d);
}

/* The same through the device's loopback transport, by the host's keys */
static void test_hca_frmr_loopback(void)
{
    hca_frmr(false);
}

/* UD through the host device; migration is blocked, naming ibdev. */
static void test_hca_ud(void)
{
    HostGid hg;
    Pair p;
    QPvrdma *d;
    uint64_t src, dst;
    uint32_t key, dkey, unused;
    struct pvrdma_sq_wqe_hdr h = { 0 };
    struct pvrdma_sge s;
    struct pvrdma_cqe e;
    bool got_send = false, got_recv = false;
    QDict *rsp;

    if (!hca_pair(&p, &hg, PVRDMA_QPT_UD, NULL)) {
        return;
    }
    d = p.d;
    src = qpvrdma_alloc(d, 4096);
    dst = qpvrdma_alloc(d, 4096);
    key = qpvrdma_create_mr_keys(d, p.pd, src, 4096,
                                 PVRDMA_ACCESS_LOCAL_WRITE, &unused);
    dkey = qpvrdma_create_mr_keys(d, p.pd, dst, 4096,
                                  PVRDMA_ACCESS_LOCAL_WRITE, &unused);
    fill(d, src, 4096, 3);
    /* receive: 40 bytes of GRH, then the payload */
    qpvrdma_post_recv(d, &p.b, 0xb1, dst, 40 + 512, dkey);
    h.wr_id = 0xa1;
    h.num_sge = 1;
    h.opcode = PVRDMA_WR_SEND;
    h.send_flags = PVRDMA_SEND_SIGNALED;
    h.wr.ud.remote_qpn = p.b.qpn;
    h.wr.ud.remote_qkey = 0x11111111;
    memcpy(h.wr.ud.av.dgid, hg.gid, 16);
    h.wr.ud.av.gid_index = 0;
    h.wr.ud.av.hop_limit = 64;
    s = (struct pvrdma_sge) { src, 300, key };
    qpvrdma_post_send(d, &p.a, &h, &s, true);
    for (int i = 0; i < 2; i++) {
        g_assert(qpvrdma_wait_cq(d, &p.cq, &e, HCA_WAIT_MS));
        g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
        if (e.wr_id == 0xa1) {
            got_send = true;
        } else {
            g_assert_cmphex(e.wr_id, ==, 0xb1);
            g_assert_cmpuint(e.opcode, ==, PVRDMA_WC_RECV);
            g_assert_cmpuint(e.byte_len, ==, 40 + 300);
            g_assert_cmpuint(e.src_qp, ==, p.a.qpn);
            g_assert(e.wc_flags & PVRDMA_WC_GRH);
            got_recv = true;
        }
    }
    g_assert(got_send && got_recv);
    same(d, src, dst + 40, 300);
    /* the host device's objects do not migrate: the blocker says so */
    rsp = qtest_qmp(d->qts, "{ 'execute': 'migrate', 'arguments': "
                    "{ 'uri': 'exec:cat > /dev/null' } }");
    g_assert(qdict_haskey(rsp, "error"));
    g_assert(strstr(qdict_get_str(qdict_get_qdict(rsp, "error"), "desc"),
                    "ibdev"));
    qobject_unref(rsp);
    qpvrdma_stop(d);
}

/* A guest GID the host port does not have cannot carry a connection. */
static void test_hca_gid_missing(void)
{
    static const uint8_t other[16] = {
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 77
    };
    HostGid hg;
    QPvrdma *d;
    QPvrdmaCq cq;
    QPvrdmaQp qp;
    uint32_t pd;

    if (!host_gid(&hg)) {
        g_test_skip("no host RDMA device with a RoCE v2 IPv4 GID");
        return;
    }
    d = qpvrdma_start_active(g_strdup_printf(",ibdev=%s", hg.dev));
    qpvrdma_bind_gid_raw(d, 0, other);
    pd = qpvrdma_create_pd(d, 0);
    qpvrdma_create_cq(d, &cq, 64);
    qpvrdma_create_qp(d, &qp, pd, cq.handle, cq.handle, PVRDMA_QPT_RC, 8, 0);
    g_assert_cmpuint(qpvrdma_qp_to_rtr(d, &qp, PVRDMA_QPT_RC, qp.qpn, hg.gid),
                     ==, EINVAL);
    qpvrdma_stop(d);
}

/*
 * Hostile use of host HCA mode: accesses outside the MRs fail on the host
 * device and reach the guest as error completions; a reset with work in
 * flight on the host, then the device works again after re-activation.
 */
static void test_hca_hostile(void)
{
    HostGid hg;
    Pair p;
    QPvrdma *d;
    uint64_t buf, far;
    uint32_t lkey, rkey;
    struct pvrdma_cqe e;
    int errors = 0;

    if (!hca_pair(&p, &hg, PVRDMA_QPT_RC, NULL)) {
        return;
    }
    d = p.d;
    buf = qpvrdma_alloc(d, 2 * 4096);
    far = qpvrdma_alloc(d, 4096);
    lkey = qpvrdma_create_mr_keys(d, p.pd, buf, 2 * 4096,
                                  PVRDMA_ACCESS_LOCAL_WRITE |
                                  PVRDMA_ACCESS_REMOTE_WRITE, &rkey);
    fill(d, far, 4096, 1);
    /* RDMA WRITE beyond the end of the target MR */
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 1, buf, 64, lkey,
                    buf + 2 * 4096 - 16, rkey);
    g_assert(qpvrdma_wait_cq(d, &p.cq, &e, HCA_WAIT_MS));
    g_assert_cmphex(e.wr_id, ==, 1);
    g_assert_cmpuint(e.status, !=, PVRDMA_WC_SUCCESS);
    /* the rest of both QPs' work is flushed, never silently lost */
    while (qpvrdma_poll_cq(d, &p.cq, &e)) {
        g_assert_cmpuint(e.status, !=, PVRDMA_WC_SUCCESS);
        errors++;
    }
    g_assert_cmpuint(errors, <, 64);

    /* a fresh pair, lots of work posted, and a reset under it */
    for (int i = 0; i < 8; i++) {
        qpvrdma_post_recv(d, &p.b, 0x100 + i, buf, 4096, lkey);
        /* an SGE outside every MR: the host refuses it */
        qpvrdma_send_wr(d, &p.a, PVRDMA_WR_SEND, 0x200 + i, far + 64, 64,
                        lkey, 0, 0);
    }
    qpvrdma_reg_write(d, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_RESET);
    g_usleep(100000);
    qtest_clock_step(d->qts, 1000);
    qpvrdma_setup_dsr(d, PVRDMA_VERSION);
    g_assert_cmpuint(qpvrdma_activate(d), ==, 0);
    g_assert_cmpuint(qpvrdma_counter(d, "x-used-qp"), ==, 0);
    g_assert_cmpuint(qpvrdma_counter(d, "x-used-mr"), ==, 0);
    qpvrdma_stop(d);

    /* and the same device model still carries data afterwards */
    if (!hca_pair(&p, &hg, PVRDMA_QPT_RC, NULL)) {
        return;
    }
    d = p.d;
    buf = qpvrdma_alloc(d, 4096);
    lkey = qpvrdma_create_mr_keys(d, p.pd, buf, 4096,
                                  PVRDMA_ACCESS_LOCAL_WRITE, &rkey);
    fill(d, buf, 2048, 7);
    qpvrdma_post_recv(d, &p.b, 0xb1, buf + 2048, 2048, lkey);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_SEND, 0xa1, buf, 2048, lkey, 0, 0);
    for (int i = 0; i < 2; i++) {
        g_assert(qpvrdma_wait_cq(d, &p.cq, &e, HCA_WAIT_MS));
        g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
    }
    same(d, buf, buf + 2048, 2048);
    qpvrdma_stop(d);
}

/* ------------------------------------------------------------------ */
/* rdma_cm in host HCA mode: CM MADs on the GSI QP                      */

typedef struct CmRig {
    QPvrdma *d;
    QPvrdmaQp gsi;
    QPvrdmaCq *cq;
    uint64_t out, in;           /* a MAD to send; received GRH + MAD */
    uint32_t out_key, in_key;
    uint64_t next_wr;
    const uint8_t *gid;         /* the guest's */
    struct pvrdma_cqe early;    /* an answer that beat its send's CQE */
    bool have_early;
} CmRig;

/* An address no host route reaches: only the device's CM answers. */
static const uint8_t cm_far_gid[16] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 9, 9, 9
};

static void cm_put(uint8_t *m, unsigned off, unsigned len, uint64_t v)
{
    for (unsigned i = 0; i < len; i++) {
        m[24 + off + i] = v >> (8 * (len - 1 - i));
    }
}

static uint64_t cm_get(const uint8_t *m, unsigned off, unsigned len)
{
    uint64_t v = 0;

    for (unsigned i = 0; i < len; i++) {
        v = v << 8 | m[24 + off + i];
    }
    return v;
}

static void cm_mad(uint8_t *m, uint16_t attr)
{
    memset(m, 0, 256);
    m[0] = 1;
    m[1] = 0x07;                /* CM class */
    m[2] = 2;
    m[3] = 0x03;                /* Send */
    m[15] = 0x42;               /* TID */
    m[16] = attr >> 8;
    m[17] = attr;
}

/* A REQ as the guest's rdma_cm sends it: PS_TCP, rdma_cm header (IPv4). */
static void cm_req(uint8_t *m, uint32_t local_id, uint64_t sid, uint32_t qpn,
                   const uint8_t src[16], const uint8_t dst[16])
{
    uint8_t *priv = m + 24 + 140;

    cm_mad(m, 0x10);
    cm_put(m, 0, 4, local_id);
    cm_put(m, 8, 8, sid);
    cm_put(m, 32, 3, qpn);
    cm_put(m, 44, 3, 0x123456); /* starting PSN */
    m[24 + 50] = 3 << 4;        /* MTU 1024 */
    priv[1] = 4 << 4;
    memcpy(priv + 4 + 12, src + 12, 4);
    memcpy(priv + 20 + 12, dst + 12, 4);
}

static void cm_post_recv(CmRig *r, unsigned slot)
{
    qpvrdma_post_recv(r->d, &r->gsi, 0x100 + slot, r->in + slot * 512,
                      40 + 256, r->in_key);
}

/* Send one MAD (len bytes of m) from the GSI QP to cm_far_gid, QP 1. */
static void cm_send(CmRig *r, const uint8_t *m, uint32_t len, bool signaled)
{
    struct pvrdma_sq_wqe_hdr h = { 0 };
    struct pvrdma_sge s = { r->out, len, r->out_key };
    struct pvrdma_cqe e;

    qtest_memwrite(r->d->qts, r->out, m, len);
    h.wr_id = ++r->next_wr;
    h.num_sge = 1;
    h.opcode = PVRDMA_WR_SEND;
    h.send_flags = signaled ? PVRDMA_SEND_SIGNALED : 0;
    h.wr.ud.remote_qpn = 1;
    h.wr.ud.remote_qkey = 0x80010000;
    memcpy(h.wr.ud.av.dgid, cm_far_gid, 16);
    h.wr.ud.av.gid_index = 0;
    h.wr.ud.av.hop_limit = 64;
    qpvrdma_post_send(r->d, &r->gsi, &h, &s, true);
    while (signaled) {
        g_assert(qpvrdma_wait_cq(r->d, r->cq, &e, HCA_WAIT_MS));
        if (e.wr_id >= 0x100) {
            /* the answer can complete before the send does */
            g_assert(!r->have_early);
            r->early = e;
            r->have_early = true;
            continue;
        }
        g_assert_cmphex(e.wr_id, ==, h.wr_id);
        g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
        break;
    }
}

/* The device's answer in receive slot: a CM MAD with attribute attr. */
static void cm_answer(CmRig *r, unsigned slot, uint16_t attr, uint8_t *m)
{
    struct pvrdma_cqe e;
    uint8_t grh[40];

    if (r->have_early) {
        e = r->early;
        r->have_early = false;
    } else {
        g_assert(qpvrdma_wait_cq(r->d, r->cq, &e, HCA_WAIT_MS));
    }
    g_assert_cmphex(e.wr_id, ==, 0x100 + slot);
    g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
    g_assert_cmpuint(e.byte_len, ==, 40 + 256);
    g_assert_cmpuint(e.src_qp, ==, 1);
    g_assert(e.wc_flags & PVRDMA_WC_GRH);
    qtest_memread(r->d->qts, r->in + slot * 512 + 40, m, 256);
    g_assert_cmpuint(m[1], ==, 0x07);
    g_assert_cmpuint(m[2], ==, 2);
    g_assert_cmpuint(m[3], ==, 0x03);
    g_assert_cmphex(m[16] << 8 | m[17], ==, attr);
    /* the IPv4 header in the GRH: from the address the guest spoke to */
    qtest_memread(r->d->qts, r->in + slot * 512, grh, 40);
    g_assert_cmpuint(grh[20] >> 4, ==, 4);
    g_assert(!memcmp(grh + 20 + 12, cm_far_gid + 12, 4));
    g_assert(!memcmp(grh + 20 + 16, r->gid + 12, 4));
}

/* Send REQ m; the device answers with a REJ of the REQ with reason. */
static void cm_expect_rej(CmRig *r, unsigned *slot, const uint8_t *m,
                          unsigned reason)
{
    uint8_t a[256];

    cm_send(r, m, 256, true);
    cm_answer(r, (*slot)++, 0x12, a);
    g_assert_cmphex(cm_get(a, 4, 4), ==, cm_get(m, 0, 4));  /* comm IDs */
    g_assert_cmpuint(a[24 + 8] >> 6, ==, 0);                /* REQ */
    g_assert_cmpuint(cm_get(a, 10, 2), ==, reason);
}

/* A DREQ for a connection the device does not know: DREP at once. */
static void cm_expect_drep(CmRig *r, unsigned *slot, uint32_t local,
                           uint32_t remote)
{
    uint8_t m[256], a[256];

    cm_mad(m, 0x15);
    cm_put(m, 0, 4, local);
    cm_put(m, 4, 4, remote);
    cm_send(r, m, 256, true);
    cm_answer(r, (*slot)++, 0x16, a);
    g_assert_cmphex(cm_get(a, 0, 4), ==, remote);
    g_assert_cmphex(cm_get(a, 4, 4), ==, local);
}

/*
 * Hostile CM MADs through the GSI QP in host HCA mode: each refused with
 * the answer a remote CM would give (REJ with its reason, DREP, SIDR_REP),
 * garbage ignored, and the device keeps answering.
 */
static void test_hca_cm_hostile(void)
{
    HostGid hg;
    Pair p;
    CmRig r = { 0 };
    uint8_t m[256], a[256];
    static const uint8_t other_ip[16] = {
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, 2, 3
    };
    struct pvrdma_cqe e;
    uint32_t unused;
    unsigned slot = 0;

    if (!hca_pair(&p, &hg, PVRDMA_QPT_RC, ",cm-listen=7177")) {
        return;
    }
    r.d = p.d;
    r.cq = &p.cq;
    r.gid = hg.gid;
    qpvrdma_create_qp(r.d, &r.gsi, p.pd, p.cq.handle, p.cq.handle,
                      PVRDMA_QPT_GSI, 16, 0);
    g_assert_cmpuint(r.gsi.qpn, ==, 1);
    qpvrdma_qp_to_rts_gid(r.d, &r.gsi, PVRDMA_QPT_GSI, 0, hg.gid, 7);
    r.out = qpvrdma_alloc(r.d, 4096);
    r.in = qpvrdma_alloc(r.d, 16 * 512);
    r.out_key = qpvrdma_create_mr_keys(r.d, p.pd, r.out, 4096,
                                       PVRDMA_ACCESS_LOCAL_WRITE, &unused);
    r.in_key = qpvrdma_create_mr_keys(r.d, p.pd, r.in, 16 * 512,
                                      PVRDMA_ACCESS_LOCAL_WRITE, &unused);
    for (unsigned i = 0; i < 16; i++) {
        cm_post_recv(&r, i);
    }

    /* a port space the device does not translate: invalid service ID */
    cm_req(m, 0x1001, 0x0000000000020000ull | 7174, p.a.qpn, hg.gid,
           cm_far_gid);
    cm_expect_rej(&r, &slot, m, 8);

    /* a QP that is not the guest's: no QP */
    cm_req(m, 0x1002, 0x0000000001060000ull | 7174, 0xabcdef, hg.gid,
           cm_far_gid);
    cm_expect_rej(&r, &slot, m, 1);

    /* rdma_cm header of an unknown version; then another source address */
    cm_req(m, 0x1003, 0x0000000001060000ull | 7174, p.a.qpn, hg.gid,
           cm_far_gid);
    m[24 + 140] = 7;
    cm_expect_rej(&r, &slot, m, 5);
    cm_req(m, 0x1004, 0x0000000001060000ull | 7174, p.a.qpn, other_ip,
           cm_far_gid);
    cm_expect_rej(&r, &slot, m, 5);

    /*
     * Well-formed REQs go out through the host's rdma_cm: to a port of the
     * host where nobody listens, the remote CM's "invalid service ID"
     * comes back; to an address the host cannot reach, "unreachable"
     * (invalid GID: a REJ with reason timeout would be dropped).
     */
    cm_req(m, 0x1005, 0x0000000001060000ull | 7999, p.a.qpn, hg.gid,
           hg.gid);
    cm_expect_rej(&r, &slot, m, 8);
    cm_req(m, 0x1006, 0x0000000001060000ull | 7999, p.a.qpn, hg.gid,
           cm_far_gid);
    cm_expect_rej(&r, &slot, m, 12);

    /* DREQ for a connection that does not exist: DREP at once */
    cm_expect_drep(&r, &slot, 0x2001, 0x7777);

    /* SIDR (rdma_cm over UD): a port space other than UDP is unknown */
    cm_mad(m, 0x17);
    cm_put(m, 0, 4, 0x3001);
    cm_send(&r, m, 256, true);
    cm_answer(&r, slot++, 0x18, a);
    g_assert_cmphex(cm_get(a, 0, 4), ==, 0x3001);
    g_assert_cmpuint(a[24 + 4], ==, 1);     /* SID not supported */
    /* the UDP port space without an rdma_cm header: rejected */
    cm_mad(m, 0x17);
    cm_put(m, 0, 4, 0x3002);
    cm_put(m, 8, 8, 0x0000000001110000ull | 7174);
    m[24 + 16] = 9;
    cm_send(&r, m, 256, true);
    cm_answer(&r, slot++, 0x18, a);
    g_assert_cmphex(cm_get(a, 0, 4), ==, 0x3002);
    g_assert_cmpuint(a[24 + 4], ==, 2);     /* rejected */
    g_assert_cmphex(cm_get(a, 12, 8), ==, 0x0000000001110000ull | 7174);

    /*
     * Garbage: REP, RTU, REJ, MRA, DREP, LAP with random contents, other
     * classes, short MADs.  None of them names a connection, so nothing
     * answers (a REQ would, and is left out); the device survives.
     */
    for (unsigned i = 0; i < 100; i++) {
        static const uint16_t attrs[] = { 0x11, 0x12, 0x13, 0x14, 0x16,
                                          0x19, 0x1a, 0x18, 0x99 };

        for (unsigned j = 0; j < 256; j++) {
            m[j] = g_test_rand_int();
        }
        m[0] = 1;
        m[1] = i % 10 ? 0x07 : g_test_rand_int();
        m[2] = 2;
        m[3] = 0x03;
        m[16] = 0;
        m[17] = attrs[i % G_N_ELEMENTS(attrs)];
        cm_send(&r, m, i % 7 ? 256 : g_test_rand_int_range(1, 256),
                i % 8 == 0);
    }
    /* the signaled sends completed fine; nothing else arrived */
    g_assert(!r.have_early);
    while (qpvrdma_wait_cq(r.d, r.cq, &e, 200)) {
        g_assert_cmpuint(e.wr_id, <, 0x100);
        g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
    }

    /* and it still answers */
    cm_expect_drep(&r, &slot, 0x2002, 0x8888);
    g_assert_cmpuint(qpvrdma_counter(r.d, "x-used-qp"), ==, 3);
    qpvrdma_stop(r.d);
}

/* CREATE_MR of len bytes at gpa: the status; *handle the MR's if 0. */
static uint32_t hca_mr_status(QPvrdma *d, uint32_t pd, uint64_t gpa,
                              uint64_t len, uint32_t *handle)
{
    union pvrdma_cmd_resp r;
    uint32_t err = qpvrdma_try_create_mr(d, pd, gpa, len,
                                         PVRDMA_ACCESS_LOCAL_WRITE, &r);

    *handle = err ? 0 : r.create_mr_resp.mr_handle;
    return err;
}

/*
 * Host resources run out: QEMU without CAP_IPC_LOCK and with a 4 MiB
 * memlock limit cannot pin a 16 MiB MR.  The command fails with an error
 * status, QEMU lives on, smaller MRs still work, and freeing one gives its
 * pinned pages back.
 */
static void test_hca_memlock(void)
{
    struct rlimit rl = { 4 << 20, 4 << 20 };
    uint32_t pd, h1, h2, h3;
    uint64_t buf;
    HostGid hg;
    QPvrdma *d;

    if (!host_gid(&hg)) {
        g_test_skip("no host RDMA device with a RoCE v2 IPv4 GID");
        return;
    }
    if (!getenv("PVRDMA_HCA_DISRUPT")) {
        g_test_skip("drops CAP_IPC_LOCK for good in this process; set "
                    "PVRDMA_HCA_DISRUPT=1 and run it alone");
        return;
    }
    g_assert_cmpint(prctl(PR_CAPBSET_DROP, CAP_IPC_LOCK, 0, 0, 0), ==, 0);
    g_assert_cmpint(setrlimit(RLIMIT_MEMLOCK, &rl), ==, 0);
    d = qpvrdma_start_active(g_strdup_printf(
        ",ibdev=%s -m 256M -object memory-backend-memfd,id=mem,size=256M,"
        "share=on -machine memory-backend=mem", hg.dev));
    pd = qpvrdma_create_pd(d, 0);
    buf = qpvrdma_alloc(d, 20 << 20);
    buf = (buf + 4095) & ~4095ull;
    g_assert_cmpuint(hca_mr_status(d, pd, buf, 16 << 20, &h1), !=, 0);
    g_assert_cmpuint(hca_mr_status(d, pd, buf, 3 << 20, &h1), ==, 0);
    /* 3 MiB pinned: another 3 MiB is over the limit */
    g_assert_cmpuint(hca_mr_status(d, pd, buf + (3 << 20), 3 << 20, &h2),
                     !=, 0);
    g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_MR, h1), ==, 0);
    g_assert_cmpuint(hca_mr_status(d, pd, buf + (3 << 20), 3 << 20, &h3),
                     ==, 0);
    g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_MR, h3), ==, 0);
    g_assert_cmpuint(qpvrdma_counter(d, "x-used-mr"), ==, 0);
    qpvrdma_stop(d);
}

/* Wait (wall time) for async event (type, info) from the host device. */
static bool hca_event_seen(QPvrdma *d, uint32_t type, uint32_t info)
{
    for (int i = 0; i < 100; i++) {
        if (async_seen(d, type, info)) {
            return true;
        }
        g_usleep(50000);
    }
    return false;
}

static uint32_t hca_port_state(QPvrdma *d)
{
    struct pvrdma_cmd_query_port q = { .hdr.cmd = PVRDMA_CMD_QUERY_PORT,
                                       .port_num = 1 };
    union pvrdma_cmd_resp r;

    qpvrdma_cmd_ok(d, &q, sizeof(q), &r);
    return r.query_port_resp.attrs.state;
}

/*
 * The host port goes down and comes back: the guest gets PORT_ERR and
 * PORT_ACTIVE and QUERY_PORT follows.  This takes the host's netdev down,
 * so it runs only where that is harmless (PVRDMA_HCA_DISRUPT=1: the
 * nested rig's L1 VM).
 */
static void test_hca_host_port(void)
{
    HostGid hg;
    QPvrdma *d;
    g_autofree char *ndev = NULL, *path = NULL, *cmd = NULL;

    if (!g_getenv("PVRDMA_HCA_DISRUPT")) {
        g_test_skip("takes the host's RDMA netdev down: runs with "
                    "PVRDMA_HCA_DISRUPT=1 (the nested rig sets it)");
        return;
    }
    if (!host_gid(&hg)) {
        g_test_skip("no host RDMA device with a RoCE v2 IPv4 GID");
        return;
    }
    path = g_strdup_printf("/sys/class/infiniband/%s/ports/1/gid_attrs/"
                           "ndevs/0", hg.dev);
    g_assert(g_file_get_contents(path, &ndev, NULL, NULL));
    g_strstrip(ndev);
    d = qpvrdma_start_active(g_strdup_printf(",ibdev=%s", hg.dev));
    g_assert_cmpuint(hca_port_state(d), ==, PVRDMA_PORT_ACTIVE);
    cmd = g_strdup_printf("/usr/bin/ip link set %s down", ndev);
    g_assert_cmpint(system(cmd), ==, 0);
    g_assert(hca_event_seen(d, PVRDMA_EVENT_PORT_ERR, 1));
    g_assert_cmpuint(hca_port_state(d), ==, PVRDMA_PORT_DOWN);
    g_free(cmd);
    cmd = g_strdup_printf("/usr/bin/ip link set %s up", ndev);
    g_assert_cmpint(system(cmd), ==, 0);
    g_assert(hca_event_seen(d, PVRDMA_EVENT_PORT_ACTIVE, 1));
    g_assert_cmpuint(hca_port_state(d), ==, PVRDMA_PORT_ACTIVE);
    qpvrdma_stop(d);
}

/*
 * Registering 1 GiB: one contiguous run (registered as it is) and 512
 * runs of 2 MiB in reverse order (mapped again side by side).  Prints the
 * command's wall time; the benchmark is scripts/bench-mr.sh.
 */
static void test_hca_mr_1g(void)
{
    const uint64_t len = 1ull << 30, run = 2ull << 20;
    HostGid hg;
    QPvrdma *d;
    uint64_t base, *pages;
    uint32_t n = len / 4096, pd;
    struct pvrdma_cmd_create_mr c = { .hdr.cmd = PVRDMA_CMD_CREATE_MR };
    union pvrdma_cmd_resp r;
    int64_t t;

    if (!host_gid(&hg)) {
        g_test_skip("no host RDMA device with a RoCE v2 IPv4 GID");
        return;
    }
    d = qpvrdma_start_active(g_strdup_printf(
        ",ibdev=%s -m 1536M -object memory-backend-memfd,id=mem,size=1536M,"
        "share=on -machine memory-backend=mem", hg.dev));
    pd = qpvrdma_create_pd(d, 0);
    base = qpvrdma_alloc(d, len + run);
    base = (base + run - 1) & ~(run - 1);
    pages = g_new(uint64_t, n);
    for (int order = 0; order < 2; order++) {
        for (uint32_t i = 0; i < n; i++) {
            uint32_t r2 = i / (run / 4096), in = i % (run / 4096);

            pages[i] = order == 0 ? base + (uint64_t)i * 4096 :
                       base + (uint64_t)(n / (run / 4096) - 1 - r2) * run +
                       (uint64_t)in * 4096;
        }
        c.start = 0x7f0000000000ull;
        c.length = len;
        c.pdir_dma = qpvrdma_pdir(d, pages, n);
        c.pd_handle = pd;
        c.access_flags = PVRDMA_ACCESS_LOCAL_WRITE |
                         PVRDMA_ACCESS_REMOTE_WRITE;
        c.nchunks = n;
        t = g_get_monotonic_time();
        qpvrdma_cmd_ok(d, &c, sizeof(c), &r);
        t = g_get_monotonic_time() - t;
        g_test_message("CREATE_MR 1 GiB, %s: %" PRId64 " ms",
                       order ? "512 runs of 2 MiB" : "one run", t / 1000);
        g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_MR,
                                         r.create_mr_resp.mr_handle), ==, 0);
    }
    g_free(pages);
    qpvrdma_stop(d);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return x < y ? -1 : x > y;
}

/*
 * A benchmark (skipped unless PVRDMA_BENCH_FRMR=N; nested test 40 runs it
 * with N=3 as a check, scripts/bench-mr.sh with 200): what one
 * fast registration costs the guest on the host device, from the doorbell
 * to its completion in the guest's CQ (the window's bind included, which
 * the device's pvrdma_hv_fast_reg trace ends before), N times each for an
 * FRMR of 1 page run and of 30 (scattered guest pages, as the kernel's
 * storage protocols register), every completion a success; a LOCAL_INV
 * (not timed) between two registrations, as the protocols do. The CQ is
 * polled without sleeping: one qtest round trip (tens of microseconds) is
 * the resolution.
 */
#define FRMR_COST_RUNS 30

static void test_hca_frmr_cost(void)
{
    const char *env = g_getenv("PVRDMA_BENCH_FRMR");
    int iters = env ? atoi(env) : 0;
    struct pvrdma_cmd_create_mr c = { .hdr.cmd = PVRDMA_CMD_CREATE_MR,
                                      .flags = PVRDMA_MR_FLAG_FRMR,
                                      .nchunks = FRMR_COST_RUNS };
    const int sizes[] = { 1, FRMR_COST_RUNS };
    union pvrdma_cmd_resp r;
    uint64_t buf, pages[FRMR_COST_RUNS];
    int64_t *t;
    HostGid hg;
    Pair p;
    QPvrdma *d;

    if (iters <= 0) {
        g_test_skip("a benchmark: PVRDMA_BENCH_FRMR=N runs it N times");
        return;
    }
    if (!hca_pair_shared(&p, &hg, true)) {
        return;
    }
    d = p.d;
    c.pd_handle = p.pd;
    qpvrdma_cmd_ok(d, &c, sizeof(c), &r);
    buf = qpvrdma_alloc(d, 2 * FRMR_COST_RUNS * 4096);
    t = g_new(int64_t, iters);
    for (int k = 0; k < (int)G_N_ELEMENTS(sizes); k++) {
        int n = sizes[k];

        /* every other page, last first: n runs of one page each */
        for (int i = 0; i < n; i++) {
            pages[i] = buf + (uint64_t)(2 * (n - 1 - i)) * 4096;
        }
        for (int i = 0; i < iters; i++) {
            uint8_t kb = 1 + (k * iters + i) % 254;
            struct pvrdma_sq_wqe_hdr h = {
                .wr_id = 0xf000 + i, .opcode = PVRDMA_WR_FAST_REG_MR,
                .send_flags = PVRDMA_SEND_SIGNALED };
            struct pvrdma_cqe e;
            int64_t t0, until;

            h.wr.fast_reg.iova_start = FRMR_IOVA;
            h.wr.fast_reg.pl_pdir_dma = qpvrdma_pdir(d, pages, n);
            h.wr.fast_reg.page_shift = 12;
            h.wr.fast_reg.page_list_len = n;
            h.wr.fast_reg.length = (uint64_t)n * 4096 - (FRMR_IOVA & 4095);
            h.wr.fast_reg.access_flags = PVRDMA_ACCESS_LOCAL_WRITE |
                                         PVRDMA_ACCESS_REMOTE_WRITE |
                                         PVRDMA_ACCESS_REMOTE_READ;
            h.wr.fast_reg.rkey = (r.create_mr_resp.rkey & ~0xffu) | kb;
            t0 = g_get_monotonic_time();
            until = t0 + HCA_WAIT_MS * 1000;
            qpvrdma_post_send(d, &p.b, &h, NULL, true);
            while (!qpvrdma_poll_cq(d, &p.cq, &e)) {
                g_assert_cmpint(g_get_monotonic_time(), <, until);
            }
            t[i] = g_get_monotonic_time() - t0;
            g_assert_cmphex(e.wr_id, ==, 0xf000 + i);
            g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
            g_assert_cmpuint(e.opcode, ==, PVRDMA_WC_FAST_REG_MR);
            /* an FRMR is invalidated before it is registered again */
            hca_local_inv(d, &p.b, &p.cq, h.wr.fast_reg.rkey, 0xe000 + i);
        }
        qsort(t, iters, sizeof(*t), cmp_i64);
        g_test_message("FRMR cost, %d page run%s: doorbell to completion "
                       "median %" PRId64 " us, 90th percentile %" PRId64
                       " us, min %" PRId64 " us, max %" PRId64 " us (%d "
                       "registrations)", n, n > 1 ? "s" : "", t[iters / 2],
                       t[iters * 9 / 10], t[0], t[iters - 1], iters);
    }
    g_free(t);
    g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_MR,
                                     r.create_mr_resp.mr_handle), ==, 0);
    qpvrdma_stop(d);
}

/* query-pvrdma's guest-errors of the (only) device */

void pvrdma_add_hca_tests(void)
{
    qtest_add_func("/pvrdma/hca/rc", test_hca_rc);
    qtest_add_func("/pvrdma/hca/rc-loopback", test_hca_rc_loopback);
    qtest_add_func("/pvrdma/hca/ud", test_hca_ud);
    qtest_add_func("/pvrdma/hca/frmr", test_hca_frmr);
    qtest_add_func("/pvrdma/hca/frmr-loopback", test_hca_frmr_loopback);
    qtest_add_func("/pvrdma/hca/frmr-qp-gone", test_hca_frmr_qp_gone);
    qtest_add_func("/pvrdma/hca/gid-missing", test_hca_gid_missing);
    qtest_add_func("/pvrdma/hca/hostile", test_hca_hostile);
    qtest_add_func("/pvrdma/hca/mr-1g", test_hca_mr_1g);
    qtest_add_func("/pvrdma/hca/frmr-cost", test_hca_frmr_cost);
    qtest_add_func("/pvrdma/hca/host-port", test_hca_host_port);
    qtest_add_func("/pvrdma/hca/cm-hostile", test_hca_cm_hostile);
    qtest_add_func("/pvrdma/hca/memlock", test_hca_memlock);
}
