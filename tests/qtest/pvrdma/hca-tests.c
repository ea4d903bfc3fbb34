/*
 * QTest for the pvrdma device: host HCA mode (ibdev=): RC and UD data,
 * fast registration, a hostile guest (the host side, rdma_cm included,
 * is in hca-host-tests.c).
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
#include "pvrdma/hca.h"
#include <arpa/inet.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#ifndef CAP_IPC_LOCK
#define CAP_IPC_LOCK 14
#endif

/* ------------------------------------------------------------------ */
/* Host HCA mode (ibdev=): needs a host RDMA device, e.g. soft-RoCE    */

bool host_gid(HostGid *hg)
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
bool hca_pair(Pair *p, HostGid *hg, uint8_t type, const char *extra)
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
bool hca_pair_shared(Pair *p, HostGid *hg, bool host)
{
    return hca_pair_to(p, hg, PVRDMA_QPT_RC,
                       " -m 256M -object memory-backend-memfd,id=mem,"
                       "size=256M,share=on -machine memory-backend=mem", host);
}

/* FRMR_PAGES scattered guest pages, out of order, behind an FRMR */
#define FRMR_PAGES 3
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

void hca_local_inv(QPvrdma *d, QPvrdmaQp *qp, QPvrdmaCq *cq, uint32_t key,
                   uint64_t wr_id)
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
}
