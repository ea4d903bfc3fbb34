/*
 * QTest for the pvrdma device: PCI identity, activation, every command's
 * success and error paths, rings, MSI-X, and the loopback data path with
 * data compared byte for byte.
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
#include <arpa/inet.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#ifndef CAP_IPC_LOCK
#define CAP_IPC_LOCK 14
#endif

/* ------------------------------------------------------------------ */
/* Guest-side helpers, written the way the Linux driver lays things out */

/* How many async events (type, info) are among the first ones posted */
static unsigned async_count(QPvrdma *d, uint32_t type, uint32_t info)
{
    uint32_t prod;
    unsigned n = 0;

    for (int i = 0; i < 100; i++) {
        qtest_clock_step(d->qts, 10);
    }
    prod = qtest_readl(d->qts, d->async_pages[0] + 8);
    for (uint32_t i = 0; i < prod && i < 512; i++) {
        struct pvrdma_eqe e;
        uint64_t off = i * sizeof(e);

        qtest_memread(d->qts, d->async_pages[1 + off / 4096] + off % 4096,
                      &e, sizeof(e));
        n += e.type == type && e.info == info;
    }
    return n;
}

static bool async_seen(QPvrdma *d, uint32_t type, uint32_t info)
{
    return async_count(d, type, info) > 0;
}

static void fill(QPvrdma *d, uint64_t gpa, size_t len, uint8_t seed)
{
    g_autofree uint8_t *b = g_malloc(len);

    for (size_t i = 0; i < len; i++) {
        b[i] = seed + i * 7;
    }
    qtest_memwrite(d->qts, gpa, b, len);
}

static void same(QPvrdma *d, uint64_t a, uint64_t b, size_t len)
{
    g_autofree uint8_t *x = g_malloc(len);
    g_autofree uint8_t *y = g_malloc(len);

    qtest_memread(d->qts, a, x, len);
    qtest_memread(d->qts, b, y, len);
    g_assert(memcmp(x, y, len) == 0);
}

/* Two connected RC QPs on one PD and CQ, and a GID bound. */
typedef struct Pair {
    QPvrdma *d;
    uint32_t pd;
    QPvrdmaCq cq;
    QPvrdmaQp a, b;
} Pair;

/* The pair on a device already active (d). */
static void pair_connect(Pair *p, QPvrdma *d, uint8_t type, uint32_t n)
{
    p->d = d;
    qpvrdma_bind_gid(p->d, 0);
    p->pd = qpvrdma_create_pd(p->d, 0);
    qpvrdma_create_cq(p->d, &p->cq, 256);
    qpvrdma_create_qp(p->d, &p->a, p->pd, p->cq.handle, p->cq.handle, type, n, 0);
    qpvrdma_create_qp(p->d, &p->b, p->pd, p->cq.handle, p->cq.handle, type, n, 0);
    qpvrdma_qp_to_rts(p->d, &p->a, type, p->b.qpn);
    qpvrdma_qp_to_rts(p->d, &p->b, type, p->a.qpn);
}

static void pair_setup(Pair *p, uint8_t type, uint32_t n)
{
    pair_connect(p, qpvrdma_start_active(NULL), type, n);
}

/*
 * One 4 KiB SEND of p (id n, src filled from seed) into a receive at dst
 * (lkey key, dst's MR key + 256), both completions checked: work done.
 */
static void pair_exchange(Pair *p, uint64_t src, uint64_t dst, uint32_t key,
                          uint8_t n, uint8_t seed)
{
    QPvrdma *d = p->d;

    fill(d, src, 4096, seed);
    qpvrdma_post_recv(d, &p->b, 0xb0 | n, dst, 4096, key + 256);
    qpvrdma_send_wr(d, &p->a, PVRDMA_WR_SEND, 0xa0 | n, src, 4096, key, 0, 0);
    qpvrdma_expect_cqe(d, &p->cq, 0xb0 | n, PVRDMA_WC_RECV, PVRDMA_WC_SUCCESS,
                       4096);
    qpvrdma_expect_cqe(d, &p->cq, 0xa0 | n, PVRDMA_WC_SEND, PVRDMA_WC_SUCCESS,
                       4096);
}

/* ------------------------------------------------------------------ */
/* Tests                                                               */

static void test_pci_ids(void)
{
    QPvrdma *d = qpvrdma_start("%s", "");

    g_assert_cmphex(qpci_config_readw(d->dev, PCI_VENDOR_ID), ==, 0x15ad);
    g_assert_cmphex(qpci_config_readw(d->dev, PCI_DEVICE_ID), ==, 0x0820);
    g_assert_cmphex(qpci_config_readl(d->dev, PCI_BASE_ADDRESS_2) &
                    PCI_BASE_ADDRESS_MEM_TYPE_MASK, ==,
                    PCI_BASE_ADDRESS_MEM_TYPE_64);
    g_assert_cmpuint(qpci_config_readb(d->dev, PCI_INTERRUPT_PIN), ==, 1);
    g_assert_cmpuint(qpvrdma_reg_read(d, PVRDMA_REG_VERSION), ==, 20);
    /* MAC registers follow the vmxnet3 at function 0 */
    g_assert_cmphex(qpvrdma_reg_read(d, PVRDMA_REG_MACL), ==, 0x12005452);
    g_assert_cmphex(qpvrdma_reg_read(d, PVRDMA_REG_MACH), ==, 0x5634);
    qpvrdma_stop(d);
}

static void test_activate(void)
{
    QPvrdma *d = qpvrdma_start("%s", ",max-qp=128,gid-table-len=32");
    struct pvrdma_device_caps caps;
    const uint8_t guid[8] = { 0x50, 0x54, 0x00, 0xff, 0xfe, 0x12, 0x34, 0x56 };

    qpvrdma_setup_dsr(d, PVRDMA_VERSION);
    qpvrdma_read_caps(d, &caps);
    g_assert_cmpuint(caps.max_qp, ==, 128);
    g_assert_cmpuint(caps.gid_tbl_len, ==, 32);
    g_assert_cmpuint(caps.mode, ==, PVRDMA_DEVICE_MODE_ROCE);
    g_assert_cmpuint(caps.gid_types, ==, PVRDMA_GID_TYPE_FLAG_ROCE_V2);
    g_assert_cmpuint(caps.phys_port_cnt, ==, 1);
    g_assert_cmpuint(caps.max_fast_reg_page_list_len, ==, 128);
    g_assert(memcmp(&caps.node_guid, guid, 8) == 0);
    g_assert_cmpuint(qpvrdma_activate(d), ==, 0);
    qpvrdma_stop(d);
    d = qpvrdma_start("%s", ",roce-version=1");
    qpvrdma_setup_dsr(d, PVRDMA_VERSION);
    qpvrdma_read_caps(d, &caps);
    g_assert_cmpuint(caps.gid_types, ==, PVRDMA_GID_TYPE_FLAG_ROCE_V1);
    g_assert_cmpuint(qpvrdma_activate(d), ==, 0);
    /* a second activation is harmless */
    g_assert_cmpuint(qpvrdma_activate(d), ==, 0);
    /* the DSR cannot move while active */
    qpvrdma_reg_write(d, PVRDMA_REG_DSRLOW, 0);
    qpvrdma_reg_write(d, PVRDMA_REG_DSRHIGH, 0);
    g_assert_cmphex(qpvrdma_reg_read(d, PVRDMA_REG_DSRLOW), ==,
                    (uint32_t)d->dsr);
    qpvrdma_stop(d);
}

static void test_activate_errors(void)
{
    QPvrdma *d = qpvrdma_start("%s", "");
    struct pvrdma_cmd_create_pd c = { .hdr.cmd = PVRDMA_CMD_CREATE_PD };
    struct pvrdma_device_shared_region dsr;

    /* ACTIVATE and commands before any DSR (CVE-2022-1050 class) */
    g_assert_cmpuint(qpvrdma_activate(d), !=, 0);
    qpvrdma_reg_write(d, PVRDMA_REG_REQUEST, 0);
    g_assert_cmpuint(qpvrdma_reg_read(d, PVRDMA_REG_ERR), !=, 0);
    /* doorbells before activation are ignored */
    qpvrdma_uar_write(d, 0, PVRDMA_UAR_QP_OFFSET, PVRDMA_UAR_QP_SEND | 5);
    qpvrdma_uar_write(d, 0, PVRDMA_UAR_CQ_OFFSET, PVRDMA_UAR_CQ_ARM | 1);

    /* a DSR with a bogus async ring page count */
    qpvrdma_setup_dsr(d, PVRDMA_VERSION);
    qtest_memread(d->qts, d->dsr, &dsr, sizeof(dsr));
    dsr.async_ring_pages.num_pages = 100000;
    qtest_memwrite(d->qts, d->dsr, &dsr, sizeof(dsr));
    g_assert_cmpuint(qpvrdma_activate(d), !=, 0);
    /* a ring page directory pointing outside RAM */
    dsr.async_ring_pages.num_pages = 4;
    dsr.async_ring_pages.pdir_dma = 0xfffffffffffff000ull;
    qtest_memwrite(d->qts, d->dsr, &dsr, sizeof(dsr));
    g_assert_cmpuint(qpvrdma_activate(d), !=, 0);
    /* a driver version the ABI does not know */
    dsr.async_ring_pages.pdir_dma = d->async_pdir;
    dsr.driver_version = 3;
    qtest_memwrite(d->qts, d->dsr, &dsr, sizeof(dsr));
    g_assert_cmpuint(qpvrdma_activate(d), !=, 0);
    g_assert_cmpuint(qpvrdma_cmd(d, &c, sizeof(c), NULL), !=, 0);
    /* fixed, it activates */
    dsr.driver_version = PVRDMA_VERSION;
    qtest_memwrite(d->qts, d->dsr, &dsr, sizeof(dsr));
    g_assert_cmpuint(qpvrdma_activate(d), ==, 0);
    qpvrdma_stop(d);
}

static void test_query(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    struct pvrdma_cmd_query_port qp = { .hdr.cmd = PVRDMA_CMD_QUERY_PORT,
                                        .hdr.response = 0x1234,
                                        .port_num = 1 };
    struct pvrdma_cmd_query_pkey qk = { .hdr.cmd = PVRDMA_CMD_QUERY_PKEY,
                                        .port_num = 1 };
    union pvrdma_cmd_resp r;

    qpvrdma_cmd_ok(d, &qp, sizeof(qp), &r);
    g_assert_cmphex(r.hdr.response, ==, 0x1234);
    g_assert_cmpuint(r.query_port_resp.attrs.state, ==, PVRDMA_PORT_ACTIVE);
    g_assert_cmpuint(r.query_port_resp.attrs.gid_tbl_len, ==, 16);
    g_assert_cmpuint(r.query_port_resp.attrs.pkey_tbl_len, ==, 1);
    qpvrdma_cmd_ok(d, &qk, sizeof(qk), &r);
    g_assert_cmphex(r.query_pkey_resp.pkey, ==, 0xffff);

    qp.port_num = 2;
    qpvrdma_cmd_err(d, &qp, sizeof(qp), EINVAL);
    qk.index = 1;
    qpvrdma_cmd_err(d, &qk, sizeof(qk), EINVAL);
    /* an unknown command */
    qp.hdr.cmd = PVRDMA_CMD_MAX;
    qpvrdma_cmd_err(d, &qp, sizeof(qp), EINVAL);
    qp.hdr.cmd = 0xdeadbeef;
    qpvrdma_cmd_err(d, &qp, sizeof(qp), EINVAL);
    qpvrdma_stop(d);
}

/* The vmxnet3's link (set_link) is the port's state: PORT_ERR/ACTIVE. */
static void test_port_link(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    struct pvrdma_cmd_query_port qp = { .hdr.cmd = PVRDMA_CMD_QUERY_PORT,
                                        .port_num = 1 };
    union pvrdma_cmd_resp r;
    QDict *rsp;

    g_assert(!async_seen(d, PVRDMA_EVENT_PORT_ERR, 1));
    rsp = qtest_qmp(d->qts, "{ 'execute': 'set_link', 'arguments': "
                    "{ 'name': 'vmxnet3.0', 'up': false } }");
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    qtest_clock_step(d->qts, 1000 * 1000 * 1000);  /* the link poll */
    g_assert(async_seen(d, PVRDMA_EVENT_PORT_ERR, 1));
    rsp = qtest_qmp_eventwait_ref(d->qts, "PVRDMA_PORT_CHANGED");
    g_assert_false(qdict_get_bool(qdict_get_qdict(rsp, "data"), "active"));
    g_assert_cmpstr(qdict_get_str(qdict_get_qdict(rsp, "data"), "qom-path"),
                    ==, "/machine/peripheral/pvrdma0");
    qobject_unref(rsp);
    g_assert(!async_seen(d, PVRDMA_EVENT_PORT_ACTIVE, 1));
    qpvrdma_cmd_ok(d, &qp, sizeof(qp), &r);
    g_assert_cmpuint(r.query_port_resp.attrs.state, ==, PVRDMA_PORT_DOWN);
    g_assert_cmpuint(r.query_port_resp.attrs.phys_state, ==,
                     PVRDMA_PHYS_STATE_DISABLED);
    rsp = qtest_qmp(d->qts, "{ 'execute': 'set_link', 'arguments': "
                    "{ 'name': 'vmxnet3.0', 'up': true } }");
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    qtest_clock_step(d->qts, 1000 * 1000 * 1000);
    g_assert(async_seen(d, PVRDMA_EVENT_PORT_ACTIVE, 1));
    /*
     * Within the rate limit's second (the virtual clock under qtest) it
     * may be held until that second is over.
     */
    qtest_clock_step(d->qts, 1000 * 1000 * 1000);
    rsp = qtest_qmp_eventwait_ref(d->qts, "PVRDMA_PORT_CHANGED");
    g_assert_true(qdict_get_bool(qdict_get_qdict(rsp, "data"), "active"));
    qobject_unref(rsp);
    qpvrdma_cmd_ok(d, &qp, sizeof(qp), &r);
    g_assert_cmpuint(r.query_port_resp.attrs.state, ==, PVRDMA_PORT_ACTIVE);
    qpvrdma_stop(d);
}

static void test_uc_pd(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    uint64_t uar = qpci_config_readl(d->dev, PCI_BASE_ADDRESS_2) & ~0xfull;
    struct pvrdma_cmd_create_uc uc = { .hdr.cmd = PVRDMA_CMD_CREATE_UC };
    struct pvrdma_cmd_destroy_uc du = { .hdr.cmd = PVRDMA_CMD_DESTROY_UC };
    struct pvrdma_cmd_destroy_pd dp = { .hdr.cmd = PVRDMA_CMD_DESTROY_PD };
    struct pvrdma_cmd_create_pd cp = { .hdr.cmd = PVRDMA_CMD_CREATE_PD };
    union pvrdma_cmd_resp r;
    uint32_t ctx, pd;

    uar |= (uint64_t)qpci_config_readl(d->dev, PCI_BASE_ADDRESS_3) << 32;
    /* UAR page 0 is the driver's own */
    uc.pfn64 = uar >> 12;
    qpvrdma_cmd_err(d, &uc, sizeof(uc), EINVAL);
    uc.pfn64 = (uar >> 12) + 512;       /* beyond the BAR */
    qpvrdma_cmd_err(d, &uc, sizeof(uc), EINVAL);
    uc.pfn64 = (uar >> 12) + 3;
    qpvrdma_cmd_ok(d, &uc, sizeof(uc), &r);
    ctx = r.create_uc_resp.ctx_handle;
    qpvrdma_cmd_err(d, &uc, sizeof(uc), EBUSY);      /* page already taken */

    pd = qpvrdma_create_pd(d, ctx);
    cp.ctx_handle = 4242;               /* no such context */
    qpvrdma_cmd_err(d, &cp, sizeof(cp), EINVAL);
    du.ctx_handle = ctx;
    qpvrdma_cmd_err(d, &du, sizeof(du), EBUSY);    /* context has a PD */
    dp.pd_handle = pd;
    qpvrdma_cmd_ok(d, &dp, sizeof(dp), &r);
    qpvrdma_cmd_err(d, &dp, sizeof(dp), EINVAL);      /* double destroy */
    qpvrdma_cmd_ok(d, &du, sizeof(du), &r);
    qpvrdma_cmd_err(d, &du, sizeof(du), EINVAL);
    dp.pd_handle = 0;
    qpvrdma_cmd_err(d, &dp, sizeof(dp), EINVAL);
    qpvrdma_stop(d);
}

static void test_pd_exhaustion(void)
{
    QPvrdma *d = qpvrdma_start_active(",max-pd=8");
    struct pvrdma_cmd_create_pd cp = { .hdr.cmd = PVRDMA_CMD_CREATE_PD };
    struct pvrdma_cmd_destroy_pd dp = { .hdr.cmd = PVRDMA_CMD_DESTROY_PD };
    union pvrdma_cmd_resp r;
    uint32_t h[8], n = 0;

    while (qpvrdma_cmd(d, &cp, sizeof(cp), &r) == 0) {
        g_assert_cmpuint(n, <, 8);
        h[n++] = r.create_pd_resp.pd_handle;
        g_assert_cmpuint(h[n - 1], <, 8);
    }
    g_assert_cmpuint(r.hdr.err, ==, ENOMEM);
    g_assert_cmpuint(n, ==, 7);
    for (uint32_t i = 0; i < n; i++) {
        dp.pd_handle = h[i];
        qpvrdma_cmd_ok(d, &dp, sizeof(dp), &r);
    }
    qpvrdma_create_pd(d, 0);
    qpvrdma_stop(d);
}

static void test_mr(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    uint32_t pd = qpvrdma_create_pd(d, 0);
    uint64_t buf = qpvrdma_alloc(d, 3 * 4096);
    uint64_t pages[3] = { buf, buf + 4096, buf + 8192 };
    struct pvrdma_cmd_create_mr c = { .hdr.cmd = PVRDMA_CMD_CREATE_MR };
    struct pvrdma_cmd_destroy_mr dm = { .hdr.cmd = PVRDMA_CMD_DESTROY_MR };
    struct pvrdma_cmd_destroy_pd dp = { .hdr.cmd = PVRDMA_CMD_DESTROY_PD,
                                        .pd_handle = pd };
    union pvrdma_cmd_resp r;
    uint32_t key;

    key = qpvrdma_create_mr(d, pd, buf + 100, 8000, PVRDMA_ACCESS_LOCAL_WRITE);
    g_assert_cmpuint(key, !=, 0);
    /* optional bits (relaxed ordering, as perftest asks) are ignored */
    g_assert_cmpuint(qpvrdma_create_mr(d, pd, buf, 4096, PVRDMA_ACCESS_LOCAL_WRITE |
                               (1u << 20)), !=, 0);

    c.pd_handle = pd;
    c.start = buf;
    c.length = 3 * 4096;
    c.nchunks = 3;
    c.pdir_dma = qpvrdma_pdir(d, pages, 3);
    c.access_flags = PVRDMA_ACCESS_REMOTE_WRITE;   /* needs LOCAL_WRITE */
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.access_flags = 0x4000;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.access_flags = 0;
    c.nchunks = 2;                                  /* too few pages */
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.nchunks = 3;
    c.length = 0;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.length = 1ull << 40;                          /* beyond max-mr-size */
    c.nchunks = 1u << 28;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.length = 3 * 4096;
    c.nchunks = 3;
    c.pd_handle = 77;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.pd_handle = pd;
    pages[1] = 0xfffffffff0000000ull;               /* not RAM */
    c.pdir_dma = qpvrdma_pdir(d, pages, 3);
    qpvrdma_cmd_err(d, &c, sizeof(c), EFAULT);
    pages[1] = buf + 4097;                          /* not page aligned */
    c.pdir_dma = qpvrdma_pdir(d, pages, 3);
    qpvrdma_cmd_err(d, &c, sizeof(c), EFAULT);
    c.pdir_dma = 0x123;                             /* bad directory */
    qpvrdma_cmd_err(d, &c, sizeof(c), EFAULT);

    /* DMA MR and fast-reg MR */
    c.flags = PVRDMA_MR_FLAG_DMA;
    c.access_flags = PVRDMA_ACCESS_LOCAL_WRITE;
    qpvrdma_cmd_ok(d, &c, sizeof(c), &r);
    c.flags = PVRDMA_MR_FLAG_FRMR;
    c.nchunks = 129;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.nchunks = 16;
    qpvrdma_cmd_ok(d, &c, sizeof(c), &r);
    c.flags = 0x80;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);

    qpvrdma_cmd_err(d, &dp, sizeof(dp), EBUSY);    /* PD has MRs */
    dm.mr_handle = r.create_mr_resp.mr_handle;
    qpvrdma_cmd_ok(d, &dm, sizeof(dm), &r);
    qpvrdma_cmd_err(d, &dm, sizeof(dm), EINVAL);
    dm.mr_handle = 0;
    qpvrdma_cmd_err(d, &dm, sizeof(dm), EINVAL);
    qpvrdma_stop(d);
}

static void test_cq(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    struct pvrdma_cmd_create_cq c = { .hdr.cmd = PVRDMA_CMD_CREATE_CQ };
    struct pvrdma_cmd_resize_cq rc = { .hdr.cmd = PVRDMA_CMD_RESIZE_CQ };
    struct pvrdma_cmd_destroy_cq dc = { .hdr.cmd = PVRDMA_CMD_DESTROY_CQ };
    union pvrdma_cmd_resp r;
    QPvrdmaRing ring;
    QPvrdmaCq cq;

    qpvrdma_create_cq(d, &cq, 128);
    qpvrdma_ring_alloc(d, &ring, 3);
    c.pdir_dma = ring.pdir;
    c.nchunks = 3;
    c.cqe = 100;                        /* not a power of two */
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.cqe = 1u << 30;                   /* beyond max-cqe */
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.cqe = 128;                        /* needs 3 pages: fine */
    c.nchunks = 0xffffffff;             /* CVE-2018-20125 class */
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.nchunks = 1;                      /* no room for entries */
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.nchunks = 3;
    c.cqe = 256;                        /* 256 entries need 5 pages */
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.cqe = 64;
    c.ctx_handle = 9;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);

    rc.cq_handle = cq.handle;
    rc.cqe = 64;
    qpvrdma_cmd_ok(d, &rc, sizeof(rc), &r);
    g_assert_cmpuint(r.resize_cq_resp.cqe, ==, 64);
    rc.cqe = 1024;                      /* does not fit the pages */
    qpvrdma_cmd_err(d, &rc, sizeof(rc), EINVAL);
    rc.cq_handle = 999;
    qpvrdma_cmd_err(d, &rc, sizeof(rc), EINVAL);

    dc.cq_handle = cq.handle;
    qpvrdma_cmd_ok(d, &dc, sizeof(dc), &r);
    qpvrdma_cmd_err(d, &dc, sizeof(dc), EINVAL);
    qpvrdma_ring_free(&ring);
    qpvrdma_ring_free(&cq.ring);
    qpvrdma_stop(d);
}

static void test_qp_create(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    uint32_t pd = qpvrdma_create_pd(d, 0);
    struct pvrdma_cmd_create_qp c = { .hdr.cmd = PVRDMA_CMD_CREATE_QP };
    struct pvrdma_cmd_destroy_qp dq = { .hdr.cmd = PVRDMA_CMD_DESTROY_QP };
    struct pvrdma_cmd_destroy_cq dc = { .hdr.cmd = PVRDMA_CMD_DESTROY_CQ };
    struct pvrdma_cmd_query_qp qq = { .hdr.cmd = PVRDMA_CMD_QUERY_QP };
    union pvrdma_cmd_resp r;
    QPvrdmaRing ring;
    QPvrdmaCq cq;
    QPvrdmaQp qp, gsi, gsi2;

    qpvrdma_create_cq(d, &cq, 64);
    qpvrdma_create_qp(d, &qp, pd, cq.handle, cq.handle, PVRDMA_QPT_RC, 16, 0);
    g_assert_cmpuint(qp.qpn, >=, 2);
    qpvrdma_create_qp(d, &gsi, pd, cq.handle, cq.handle, PVRDMA_QPT_GSI, 16, 0);
    g_assert_cmpuint(gsi.qpn, ==, 1);

    qpvrdma_ring_alloc(d, &ring, 4);
    c.pdir_dma = ring.pdir;
    c.pd_handle = pd;
    c.send_cq_handle = c.recv_cq_handle = cq.handle;
    c.max_send_wr = c.max_recv_wr = 16;
    c.max_send_sge = c.max_recv_sge = 2;
    c.total_chunks = 4;
    c.send_chunks = 2;
    c.qp_type = PVRDMA_QPT_GSI;         /* only one GSI QP */
    qpvrdma_cmd_err(d, &c, sizeof(c), EBUSY);
    c.qp_type = PVRDMA_QPT_UC;          /* the driver never creates UC */
    qpvrdma_cmd_err(d, &c, sizeof(c), EOPNOTSUPP);
    c.qp_type = PVRDMA_QPT_RC;
    c.send_cq_handle = 55;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.send_cq_handle = cq.handle;
    c.max_send_wr = 15;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.max_send_wr = 1u << 20;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.max_send_wr = 16;
    c.max_send_sge = 1000;              /* CVE-2018-20124 class */
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.max_send_sge = 2;
    c.max_inline_data = 64;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.max_inline_data = 0;
    c.send_chunks = 4;                  /* no receive pages left */
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.send_chunks = 1;                  /* 16 x 128 B needs 1 page: ok */
    c.total_chunks = 0xffff;            /* far more pages than needed */
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.total_chunks = 4;
    c.is_srq = 1;
    c.srq_handle = 3;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.is_srq = 0;
    c.pd_handle = 99;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);

    qq.qp_handle = qp.handle;
    qpvrdma_cmd_ok(d, &qq, sizeof(qq), &r);
    g_assert_cmpuint(r.query_qp_resp.attrs.qp_state, ==, PVRDMA_QPS_RESET);
    g_assert_cmpuint(r.query_qp_resp.attrs.cap.max_send_wr, ==, 16);
    qq.qp_handle = 0;
    qpvrdma_cmd_err(d, &qq, sizeof(qq), EINVAL);

    dc.cq_handle = cq.handle;
    qpvrdma_cmd_err(d, &dc, sizeof(dc), EBUSY);      /* CQ in use */
    dq.qp_handle = qp.handle;
    qpvrdma_cmd_ok(d, &dq, sizeof(dq), &r);
    qpvrdma_cmd_err(d, &dq, sizeof(dq), EINVAL);
    dq.qp_handle = gsi.handle;
    qpvrdma_cmd_ok(d, &dq, sizeof(dq), &r);
    /* the GSI QP can be created again */
    qpvrdma_create_qp(d, &gsi2, pd, cq.handle, cq.handle, PVRDMA_QPT_GSI, 16, 0);
    g_assert_cmpuint(gsi2.qpn, ==, 1);
    dq.qp_handle = gsi2.handle;
    qpvrdma_cmd_ok(d, &dq, sizeof(dq), &r);
    qpvrdma_cmd_ok(d, &dc, sizeof(dc), &r);
    qpvrdma_stop(d);
}

static void test_qp_modify(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    uint32_t pd = qpvrdma_create_pd(d, 0);
    struct pvrdma_qp_attr a = { 0 };
    QPvrdmaCq cq;
    QPvrdmaQp qp;

    qpvrdma_create_cq(d, &cq, 64);
    qpvrdma_create_qp(d, &qp, pd, cq.handle, cq.handle, PVRDMA_QPT_RC, 8, 0);
    /* RESET -> RTR is not a legal transition */
    a.qp_state = PVRDMA_QPS_RTR;
    g_assert_cmpuint(qpvrdma_modify_qp(d, qp.handle, PVRDMA_QP_STATE, &a), ==,
                     EINVAL);
    /* RESET -> INIT without the required attributes */
    a.qp_state = PVRDMA_QPS_INIT;
    g_assert_cmpuint(qpvrdma_modify_qp(d, qp.handle, PVRDMA_QP_STATE, &a), ==,
                     EINVAL);
    /* bad port, bad mask bits, bad handle */
    a.port_num = 3;
    g_assert_cmpuint(qpvrdma_modify_qp(d, qp.handle, PVRDMA_QP_STATE |
                               PVRDMA_QP_PKEY_INDEX | PVRDMA_QP_PORT |
                               PVRDMA_QP_ACCESS_FLAGS, &a), ==, EINVAL);
    g_assert_cmpuint(qpvrdma_modify_qp(d, qp.handle, 1u << 25, &a), !=, 0);
    g_assert_cmpuint(qpvrdma_modify_qp(d, 777, PVRDMA_QP_STATE, &a), !=, 0);
    /* wrong current state */
    a.cur_qp_state = PVRDMA_QPS_RTS;
    g_assert_cmpuint(qpvrdma_modify_qp(d, qp.handle, PVRDMA_QP_CUR_STATE, &a), !=, 0);
    a.qp_state = 9;
    g_assert_cmpuint(qpvrdma_modify_qp(d, qp.handle, PVRDMA_QP_STATE, &a), !=, 0);

    qpvrdma_bind_gid(d, 0);
    qpvrdma_qp_to_rts(d, &qp, PVRDMA_QPT_RC, qp.qpn);
    /* RTS -> SQD -> RTS, then to ERR and back to RESET */
    a.qp_state = PVRDMA_QPS_SQD;
    g_assert_cmpuint(qpvrdma_modify_qp(d, qp.handle, PVRDMA_QP_STATE, &a), ==, 0);
    a.qp_state = PVRDMA_QPS_RTS;
    g_assert_cmpuint(qpvrdma_modify_qp(d, qp.handle, PVRDMA_QP_STATE, &a), ==, 0);
    a.qp_state = PVRDMA_QPS_ERR;
    g_assert_cmpuint(qpvrdma_modify_qp(d, qp.handle, PVRDMA_QP_STATE, &a), ==, 0);
    a.qp_state = PVRDMA_QPS_RTS;
    g_assert_cmpuint(qpvrdma_modify_qp(d, qp.handle, PVRDMA_QP_STATE, &a), ==,
                     EINVAL);
    a.qp_state = PVRDMA_QPS_RESET;
    g_assert_cmpuint(qpvrdma_modify_qp(d, qp.handle, PVRDMA_QP_STATE, &a), ==, 0);
    qpvrdma_stop(d);
}

static void test_bind(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    struct pvrdma_cmd_create_bind c = { .hdr.cmd = PVRDMA_CMD_CREATE_BIND,
                                        .gid_type = 1 };
    struct pvrdma_cmd_destroy_bind db = { .hdr.cmd =
                                          PVRDMA_CMD_DESTROY_BIND };
    union pvrdma_cmd_resp r;

    memcpy(c.new_gid, qpvrdma_test_gid, 16);
    c.index = 15;
    qpvrdma_cmd_ok(d, &c, sizeof(c), &r);
    c.index = 16;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.index = 1;
    c.gid_type = 3;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    db.index = 15;
    /* not the GID stored there */
    qpvrdma_cmd_err(d, &db, sizeof(db), EINVAL);
    memcpy(db.dest_gid, qpvrdma_test_gid, 16);
    qpvrdma_cmd_ok(d, &db, sizeof(db), &r);
    qpvrdma_cmd_err(d, &db, sizeof(db), EINVAL);
    db.index = 1000;
    qpvrdma_cmd_err(d, &db, sizeof(db), EINVAL);
    qpvrdma_stop(d);
}

static void test_srq(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    uint32_t pd = qpvrdma_create_pd(d, 0);
    struct pvrdma_cmd_create_srq c = { .hdr.cmd = PVRDMA_CMD_CREATE_SRQ };
    struct pvrdma_cmd_modify_srq m = { .hdr.cmd = PVRDMA_CMD_MODIFY_SRQ };
    struct pvrdma_cmd_query_srq q = { .hdr.cmd = PVRDMA_CMD_QUERY_SRQ };
    struct pvrdma_cmd_destroy_srq ds = { .hdr.cmd = PVRDMA_CMD_DESTROY_SRQ };
    struct pvrdma_cmd_destroy_qp dq = { .hdr.cmd = PVRDMA_CMD_DESTROY_QP };
    union pvrdma_cmd_resp r;
    QPvrdmaRing ring;
    uint32_t srq;
    QPvrdmaCq cq;
    QPvrdmaQp qp;

    qpvrdma_ring_alloc(d, &ring, 2);
    c.pdir_dma = ring.pdir;
    c.pd_handle = pd;
    c.nchunks = 2;
    c.attrs.max_wr = 64;
    c.attrs.max_sge = 2;
    c.attrs.srq_limit = 10;
    qpvrdma_cmd_ok(d, &c, sizeof(c), &r);
    srq = r.create_srq_resp.srqn;
    c.attrs.max_wr = 100;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.attrs.max_wr = 64;
    c.attrs.max_sge = 100;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.attrs.max_sge = 2;
    c.nchunks = 100000;
    qpvrdma_cmd_err(d, &c, sizeof(c), EINVAL);
    c.nchunks = 2;
    c.srq_type = 1;                     /* XRC */
    qpvrdma_cmd_err(d, &c, sizeof(c), EOPNOTSUPP);

    m.srq_handle = srq;
    m.attr_mask = PVRDMA_SRQ_LIMIT;
    m.attrs.srq_limit = 5;
    qpvrdma_cmd_ok(d, &m, sizeof(m), &r);
    m.attrs.srq_limit = 65;
    qpvrdma_cmd_err(d, &m, sizeof(m), EINVAL);
    m.attr_mask = PVRDMA_SRQ_MAX_WR;
    qpvrdma_cmd_err(d, &m, sizeof(m), EINVAL);
    q.srq_handle = srq;
    qpvrdma_cmd_ok(d, &q, sizeof(q), &r);
    g_assert_cmpuint(r.query_srq_resp.attrs.max_wr, ==, 64);
    g_assert_cmpuint(r.query_srq_resp.attrs.srq_limit, ==, 5);
    q.srq_handle = 44;
    qpvrdma_cmd_err(d, &q, sizeof(q), EINVAL);

    qpvrdma_create_cq(d, &cq, 64);
    qpvrdma_create_qp(d, &qp, pd, cq.handle, cq.handle, PVRDMA_QPT_RC, 8, srq);
    ds.srq_handle = srq;
    qpvrdma_cmd_err(d, &ds, sizeof(ds), EBUSY);      /* used by a QP */
    dq.qp_handle = qp.handle;
    qpvrdma_cmd_ok(d, &dq, sizeof(dq), &r);
    qpvrdma_cmd_ok(d, &ds, sizeof(ds), &r);
    qpvrdma_cmd_err(d, &ds, sizeof(ds), EINVAL);
    qpvrdma_stop(d);
}

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

    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 1, loc, 5000, lkey, rem + 7, rkey);
    qpvrdma_expect_cqe(d, &p.cq, 1, PVRDMA_WC_RDMA_WRITE, PVRDMA_WC_SUCCESS, 5000);
    same(d, loc, rem + 7, 5000);

    fill(d, rem, 8192, 9);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_READ, 2, loc + 1, 6000, lkey, rem + 3,
            rkey);
    qpvrdma_expect_cqe(d, &p.cq, 2, PVRDMA_WC_RDMA_READ, PVRDMA_WC_SUCCESS, 6000);
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
    qpvrdma_expect_cqe(d, &p.cq, 3, PVRDMA_WC_RDMA_WRITE, PVRDMA_WC_SUCCESS, 64);
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
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 6, loc, 16, lkey, rem, rkey ^ 1);
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
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_READ, 1, loc, 16, lkey, rem, rkey_ro);
    qpvrdma_expect_cqe(d, &p.cq, 1, 0, PVRDMA_WC_LOC_PROT_ERR, 0);
    qpvrdma_stop(d);

    pair_setup(&p, PVRDMA_QPT_RC, 16);
    d = p.d;
    loc = qpvrdma_alloc(d, 4096);
    rem = qpvrdma_alloc(d, 4096);
    lkey = qpvrdma_create_mr(d, p.pd, loc, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    rkey_ro = qpvrdma_create_mr(d, p.pd, rem, 4096, PVRDMA_ACCESS_REMOTE_READ);
    /* WRITE to a read-only MR, out of range READ */
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 2, loc, 16, lkey, rem, rkey_ro);
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
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 1, loc, 8, lkey, 0x10000, frkey);
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
    qpvrdma_expect_cqe(d, &p.cq, 2, PVRDMA_WC_FAST_REG_MR, PVRDMA_WC_SUCCESS, 0);
    /* a write through the new key lands in the out-of-order pages */
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 3, loc, 4096, lkey, 0x10000,
            newkey);
    qpvrdma_expect_cqe(d, &p.cq, 3, PVRDMA_WC_RDMA_WRITE, PVRDMA_WC_SUCCESS, 4096);
    same(d, loc, frbuf + 4096, 4096);
    /* LOCAL_INV, then the key is refused */
    h = (struct pvrdma_sq_wqe_hdr) { .wr_id = 4,
                                     .opcode = PVRDMA_WR_LOCAL_INV,
                                     .send_flags = PVRDMA_SEND_SIGNALED,
                                     .ex.invalidate_rkey = newkey };
    qpvrdma_post_send(d, &p.a, &h, NULL, true);
    qpvrdma_expect_cqe(d, &p.cq, 4, PVRDMA_WC_LOCAL_INV, PVRDMA_WC_SUCCESS, 0);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 5, loc, 8, lkey, 0x10000, newkey);
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
        g_assert_cmpuint(qpvrdma_modify_qp(d, b.handle, PVRDMA_QP_STATE, &at), ==, 0);
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
    qtest_clock_step(d->qts, 2000ull * 1000 * 1000);
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
    qtest_clock_step(d->qts, 3000ull * 1000 * 1000);
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
        qpvrdma_expect_cqe(d, &p.cq, 1000 + i, PVRDMA_WC_RECV, PVRDMA_WC_SUCCESS,
                   128);
        qpvrdma_expect_cqe(d, &p.cq, i, PVRDMA_WC_SEND, PVRDMA_WC_SUCCESS, 128);
        same(d, src, dst, 128);
    }
    qpvrdma_stop(d);
}

static void test_bad_ring_index(void)
{
    Pair p;
    QPvrdma *d;
    struct pvrdma_cqe e;

    pair_setup(&p, PVRDMA_QPT_RC, 4);
    d = p.d;
    /* producer index out of [0, 2N): the QP goes to error, no hang */
    qtest_writel(d->qts, p.a.ring.pages[0], 0xffffff00);
    qpvrdma_uar_write(d, 0, PVRDMA_UAR_QP_OFFSET,
                      PVRDMA_UAR_QP_SEND | p.a.handle);
    qpvrdma_cq_empty(d, &p.cq);
    /* no completion can say it: a QP_FATAL async event does */
    g_assert(async_seen(d, PVRDMA_EVENT_QP_FATAL, p.a.handle));
    /* doorbells for unknown or other-context objects are dropped */
    qpvrdma_uar_write(d, 0, PVRDMA_UAR_QP_OFFSET, PVRDMA_UAR_QP_SEND | 999);
    qpvrdma_uar_write(d, 0, PVRDMA_UAR_CQ_OFFSET, PVRDMA_UAR_CQ_ARM | 999);
    qpvrdma_uar_write(d, 0, PVRDMA_UAR_SRQ_OFFSET, PVRDMA_UAR_SRQ_RECV | 9);
    qpvrdma_uar_write(d, 7, PVRDMA_UAR_QP_OFFSET,
                      PVRDMA_UAR_QP_SEND | p.b.handle);
    qpvrdma_uar_write(d, 0, 0x40, 1);
    /* the device still answers */
    g_assert_cmpuint(qpvrdma_create_pd(d, 0), !=, 0);
    g_assert(!qpvrdma_poll_cq(d, &p.cq, &e) || e.status != PVRDMA_WC_SUCCESS);
    qpvrdma_stop(d);
}

/* The first message to an RC QP still in RTR reports COMM_EST, once. */
static void test_comm_est(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    struct pvrdma_qp_attr at = { 0 };
    uint32_t pd, key;
    uint64_t buf;
    QPvrdmaCq cq;
    QPvrdmaQp a, b;

    qpvrdma_bind_gid(d, 0);
    pd = qpvrdma_create_pd(d, 0);
    qpvrdma_create_cq(d, &cq, 64);
    qpvrdma_create_qp(d, &a, pd, cq.handle, cq.handle, PVRDMA_QPT_RC, 8, 0);
    qpvrdma_create_qp(d, &b, pd, cq.handle, cq.handle, PVRDMA_QPT_RC, 8, 0);
    qpvrdma_qp_to_rts(d, &a, PVRDMA_QPT_RC, b.qpn);
    qpvrdma_qp_to_rts(d, &b, PVRDMA_QPT_RC, a.qpn);
    /* back to RTR is not a legal transition: rebuild b up to RTR only */
    at.qp_state = PVRDMA_QPS_RESET;
    g_assert_cmpuint(qpvrdma_modify_qp(d, b.handle, PVRDMA_QP_STATE, &at), ==, 0);
    at.qp_state = PVRDMA_QPS_INIT;
    at.port_num = 1;
    at.qp_access_flags = PVRDMA_ACCESS_LOCAL_WRITE;
    g_assert_cmpuint(qpvrdma_modify_qp(d, b.handle, PVRDMA_QP_STATE |
                               PVRDMA_QP_PKEY_INDEX | PVRDMA_QP_PORT |
                               PVRDMA_QP_ACCESS_FLAGS, &at), ==, 0);
    at.qp_state = PVRDMA_QPS_RTR;
    at.path_mtu = PVRDMA_MTU_1024;
    at.dest_qp_num = a.qpn;
    at.max_dest_rd_atomic = 1;
    memcpy(at.ah_attr.grh.dgid.raw, qpvrdma_test_gid, 16);
    g_assert_cmpuint(qpvrdma_modify_qp(d, b.handle, PVRDMA_QP_STATE | PVRDMA_QP_AV |
                               PVRDMA_QP_PATH_MTU | PVRDMA_QP_DEST_QPN |
                               PVRDMA_QP_RQ_PSN | PVRDMA_QP_MAX_DEST_RD_ATOMIC |
                               PVRDMA_QP_MIN_RNR_TIMER, &at), ==, 0);
    buf = qpvrdma_alloc(d, 4096);
    key = qpvrdma_create_mr(d, pd, buf, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    g_assert(!async_seen(d, PVRDMA_EVENT_COMM_EST, b.handle));
    qpvrdma_post_recv(d, &b, 0xb1, buf + 2048, 64, key);
    qpvrdma_send_wr(d, &a, PVRDMA_WR_SEND, 0xa1, buf, 64, key, 0, 0);
    qpvrdma_expect_cqe(d, &cq, 0xb1, PVRDMA_WC_RECV, PVRDMA_WC_SUCCESS, 64);
    qpvrdma_expect_cqe(d, &cq, 0xa1, PVRDMA_WC_SEND, PVRDMA_WC_SUCCESS, 64);
    g_assert(async_seen(d, PVRDMA_EVENT_COMM_EST, b.handle));
    g_assert(!async_seen(d, PVRDMA_EVENT_COMM_EST, a.handle));
    qpvrdma_stop(d);
}

static void test_cq_notify(void)
{
    Pair p;
    QPvrdma *d;
    uint64_t buf;
    uint32_t key;

    pair_setup(&p, PVRDMA_QPT_RC, 8);
    d = p.d;
    buf = qpvrdma_alloc(d, 4096);
    key = qpvrdma_create_mr(d, p.pd, buf, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    /* not armed: an error completion raises no CQ interrupt either */
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 1, buf, 8, key, buf + 64, key);
    qpvrdma_expect_cqe(d, &p.cq, 1, PVRDMA_WC_RDMA_WRITE, PVRDMA_WC_REM_ACCESS_ERR,
               0);
    g_assert(!qpvrdma_vector_seen(d, PVRDMA_INTR_VECTOR_CQ));
    qpvrdma_stop(d);

    pair_setup(&p, PVRDMA_QPT_RC, 8);
    d = p.d;
    buf = qpvrdma_alloc(d, 4096);
    key = qpvrdma_create_mr(d, p.pd, buf, 4096, PVRDMA_ACCESS_LOCAL_WRITE |
                    PVRDMA_ACCESS_REMOTE_WRITE);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 1, buf, 8, key, buf + 64, key);
    qpvrdma_expect_cqe(d, &p.cq, 1, PVRDMA_WC_RDMA_WRITE, PVRDMA_WC_SUCCESS, 8);
    g_assert(!qpvrdma_vector_seen(d, PVRDMA_INTR_VECTOR_CQ));
    /* armed: the next completion notifies once, with the CQ handle */
    qpvrdma_uar_write(d, 0, PVRDMA_UAR_CQ_OFFSET,
                      PVRDMA_UAR_CQ_ARM | p.cq.handle);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 2, buf, 8, key, buf + 64, key);
    qpvrdma_expect_cqe(d, &p.cq, 2, PVRDMA_WC_RDMA_WRITE, PVRDMA_WC_SUCCESS, 8);
    g_assert(qpvrdma_wait_vector(d, PVRDMA_INTR_VECTOR_CQ));
    g_assert_cmpuint(qtest_readl(d->qts, d->cq_pages[1]), ==, p.cq.handle);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 3, buf, 8, key, buf + 64, key);
    qpvrdma_expect_cqe(d, &p.cq, 3, PVRDMA_WC_RDMA_WRITE, PVRDMA_WC_SUCCESS, 8);
    g_assert(!qpvrdma_vector_seen(d, PVRDMA_INTR_VECTOR_CQ));
    /* IMR masks the vector */
    qpvrdma_reg_write(d, PVRDMA_REG_IMR, ~0u);
    qpvrdma_uar_write(d, 0, PVRDMA_UAR_CQ_OFFSET,
                      PVRDMA_UAR_CQ_ARM | p.cq.handle);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 4, buf, 8, key, buf + 64, key);
    qpvrdma_expect_cqe(d, &p.cq, 4, PVRDMA_WC_RDMA_WRITE, PVRDMA_WC_SUCCESS, 8);
    g_assert(!qpvrdma_vector_seen(d, PVRDMA_INTR_VECTOR_CQ));
    qpvrdma_stop(d);
}

static void test_reset_during_work(void)
{
    Pair p;
    QPvrdma *d;
    uint64_t buf;
    uint32_t key;
    struct pvrdma_cmd_create_pd c = { .hdr.cmd = PVRDMA_CMD_CREATE_PD };

    pair_setup(&p, PVRDMA_QPT_RC, 8);
    d = p.d;
    buf = qpvrdma_alloc(d, 4096);
    key = qpvrdma_create_mr(d, p.pd, buf, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    /* a send waiting on RNR, then the device is reset under it */
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_SEND, 1, buf, 32, key, 0, 0);
    qpvrdma_reg_write(d, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_RESET);
    qtest_clock_step(d->qts, 1000);
    /* everything is gone: commands refused until re-activation */
    g_assert_cmpuint(qpvrdma_cmd(d, &c, sizeof(c), NULL), !=, 0);
    qpvrdma_uar_write(d, 0, PVRDMA_UAR_QP_OFFSET,
                      PVRDMA_UAR_QP_SEND | p.a.handle);
    /* the driver probes again and works */
    qpvrdma_setup_dsr(d, PVRDMA_VERSION);
    g_assert_cmpuint(qpvrdma_activate(d), ==, 0);
    qpvrdma_create_pd(d, 0);
    /* and a system reset in the middle of things */
    qtest_system_reset(d->qts);
    qpci_device_enable(d->dev);
    d->regs = qpci_iomap(d->dev, PVRDMA_BAR_REGS, NULL);
    g_assert_cmpuint(qpvrdma_reg_read(d, PVRDMA_REG_ERR), ==, 0);
    g_assert_cmphex(qpvrdma_reg_read(d, PVRDMA_REG_IMR), ==, ~0u);
    g_assert_cmpuint(qpvrdma_reg_read(d, PVRDMA_REG_VERSION), ==, 20);
    qpvrdma_stop(d);
}

/* Driver-style teardown: QPs, MRs, CQs, PD, binds, then reset. */
static void test_teardown(void)
{
    Pair p;
    QPvrdma *d;
    union pvrdma_cmd_resp r;
    struct pvrdma_cmd_destroy_qp dq = { .hdr.cmd = PVRDMA_CMD_DESTROY_QP };
    struct pvrdma_cmd_destroy_mr dm = { .hdr.cmd = PVRDMA_CMD_DESTROY_MR };
    struct pvrdma_cmd_destroy_cq dc = { .hdr.cmd = PVRDMA_CMD_DESTROY_CQ };
    struct pvrdma_cmd_destroy_pd dp = { .hdr.cmd = PVRDMA_CMD_DESTROY_PD };
    struct pvrdma_cmd_destroy_bind db = { .hdr.cmd =
                                          PVRDMA_CMD_DESTROY_BIND };
    uint64_t buf;
    uint32_t key;

    for (int round = 0; round < 2; round++) {
        pair_setup(&p, PVRDMA_QPT_RC, 8);
        d = p.d;
        buf = qpvrdma_alloc(d, 4096);
        key = qpvrdma_create_mr(d, p.pd, buf, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
        qpvrdma_post_recv(d, &p.b, 9, buf, 64, key);
        dq.qp_handle = p.a.handle;
        qpvrdma_cmd_ok(d, &dq, sizeof(dq), &r);
        dq.qp_handle = p.b.handle;
        qpvrdma_cmd_ok(d, &dq, sizeof(dq), &r);
        dm.mr_handle = key >> 8;
        qpvrdma_cmd_ok(d, &dm, sizeof(dm), &r);
        dc.cq_handle = p.cq.handle;
        qpvrdma_cmd_ok(d, &dc, sizeof(dc), &r);
        dp.pd_handle = p.pd;
        qpvrdma_cmd_ok(d, &dp, sizeof(dp), &r);
        db.index = 0;
        memcpy(db.dest_gid, qpvrdma_test_gid, 16);
        qpvrdma_cmd_ok(d, &db, sizeof(db), &r);
        qpvrdma_reg_write(d, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_RESET);
        g_assert_cmpuint(qpvrdma_reg_read(d, PVRDMA_REG_ERR), ==, 0);
        qpvrdma_stop(d);
    }
}

/*
 * Older drivers: 17 (RoCE v1 era) and 18 give a 32-bit UAR pfn, 19 a 64-bit
 * one; before 20 the CREATE_QP response has no QP handle.  A version below
 * 17 is refused at ACTIVATE.
 */
static void test_old_driver(void)
{
    QPvrdma *d = qpvrdma_start("%s", "");

    qpvrdma_setup_dsr(d, PVRDMA_ROCEV1_VERSION - 1);
    g_assert_cmpuint(qpvrdma_activate(d), ==, EINVAL);
    qpvrdma_stop(d);

    for (uint32_t v = PVRDMA_ROCEV1_VERSION; v < PVRDMA_QPHANDLE_VERSION; v++) {
        union pvrdma_cmd_resp r;
        struct pvrdma_cmd_create_qp c = { .hdr.cmd = PVRDMA_CMD_CREATE_QP };
        struct pvrdma_cmd_create_uc u = { .hdr.cmd = PVRDMA_CMD_CREATE_UC };
        uint32_t pd;
        QPvrdmaCq cq;
        QPvrdmaRing ring;

        uint64_t uar;

        d = qpvrdma_start("%s", "");
        qpvrdma_setup_dsr(d, v);
        g_assert_cmpuint(qpvrdma_activate(d), ==, 0);
        /* CREATE_UC reads the pfn field of this version, not the other */
        uar = qpci_config_readl(d->dev, PCI_BASE_ADDRESS_2) & ~0xfull;
        uar |= (uint64_t)qpci_config_readl(d->dev, PCI_BASE_ADDRESS_3) << 32;
        if (v >= PVRDMA_PPN64_VERSION) {
            u.pfn64 = (uar >> 12) + 3;
        } else {
            u.pfn = (uar >> 12) + 3;
        }
        qpvrdma_cmd_ok(d, &u, sizeof(u), &r);
        g_assert_cmpuint(r.create_uc_resp.ctx_handle, !=, 0);
        pd = qpvrdma_create_pd(d, 0);
        qpvrdma_create_cq(d, &cq, 16);
        qpvrdma_ring_alloc(d, &ring, 3);
        c.pdir_dma = ring.pdir;
        c.pd_handle = pd;
        c.send_cq_handle = c.recv_cq_handle = cq.handle;
        c.max_send_wr = c.max_recv_wr = 8;
        c.max_send_sge = c.max_recv_sge = 1;
        c.total_chunks = 3;
        c.send_chunks = 1;
        c.qp_type = PVRDMA_QPT_RC;
        qpvrdma_cmd_ok(d, &c, sizeof(c), &r);
        /* v1 layout: qpn then max_send_wr directly */
        g_assert_cmpuint(r.create_qp_resp.qpn, >=, 2);
        g_assert_cmpuint(r.create_qp_resp.max_send_wr, ==, 8);
        g_assert_cmpuint(r.create_qp_resp.max_recv_wr, ==, 8);
        qpvrdma_stop(d);
    }
}

/*
 * The device's own version (version=, 17 to 20) with today's driver (20):
 * REG_VERSION shows it, and the device behaves as that version: before 19
 * the 32-bit UAR pfn, before 20 the CREATE_QP response without a QP
 * handle, before 18 a GID bind's type byte is reserved (RoCE v1 GIDs; the
 * version needs roce-version=1, whose caps the driver requires of a 17).
 */
static void test_device_version(void)
{
    for (uint32_t v = PVRDMA_ROCEV1_VERSION; v <= PVRDMA_VERSION; v++) {
        union pvrdma_cmd_resp r;
        struct pvrdma_cmd_create_uc u = { .hdr.cmd = PVRDMA_CMD_CREATE_UC };
        struct pvrdma_cmd_create_bind b = { .hdr.cmd = PVRDMA_CMD_CREATE_BIND,
                                            .index = 1 };
        struct pvrdma_device_caps caps;
        QPvrdma *d;
        Pair p;
        uint64_t uar, src, dst;
        uint32_t key;

        d = qpvrdma_start(",version=%u%s", v,
                          v < PVRDMA_ROCEV2_VERSION ? ",roce-version=1" : "");
        g_assert_cmpuint(qpvrdma_reg_read(d, PVRDMA_REG_VERSION), ==, v);
        qpvrdma_setup_dsr(d, PVRDMA_VERSION);
        g_assert_cmpuint(d->version, ==, v);
        g_assert_cmpuint(qpvrdma_activate(d), ==, 0);
        qpvrdma_read_caps(d, &caps);
        g_assert_cmpuint(caps.gid_types, ==, v < PVRDMA_ROCEV2_VERSION ?
                         PVRDMA_GID_TYPE_FLAG_ROCE_V1 :
                         PVRDMA_GID_TYPE_FLAG_ROCE_V2);
        /*
         * CREATE_UC's pfn is a union of the 32-bit pfn and the 64-bit
         * pfn64: bits above 31 count from version 19 on only
         */
        uar = qpci_config_readl(d->dev, PCI_BASE_ADDRESS_2) & ~0xfull;
        uar |= (uint64_t)qpci_config_readl(d->dev, PCI_BASE_ADDRESS_3) << 32;
        g_assert_cmpuint(uar >> 12, <, 1ull << 32);
        u.pfn64 = (1ull << 32) | ((uar >> 12) + 3);
        if (v >= PVRDMA_PPN64_VERSION) {
            qpvrdma_cmd_err(d, &u, sizeof(u), EINVAL);
            u.pfn64 = (uar >> 12) + 3;
        }
        qpvrdma_cmd_ok(d, &u, sizeof(u), &r);
        g_assert_cmpuint(r.create_uc_resp.ctx_handle, ==, 3);
        /* a bind with the type byte 0, as a version 17 driver leaves it */
        memcpy(b.new_gid, qpvrdma_test_gid, 16);
        if (v < PVRDMA_ROCEV2_VERSION) {
            qpvrdma_cmd_ok(d, &b, sizeof(b), &r);
        } else {
            qpvrdma_cmd_err(d, &b, sizeof(b), EINVAL);
        }
        /* data moves at every version (libqos reads the right layout) */
        pair_connect(&p, d, PVRDMA_QPT_RC, 4);
        src = qpvrdma_alloc(d, 4096);
        dst = qpvrdma_alloc(d, 4096);
        key = qpvrdma_create_mr(d, p.pd, src, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
        qpvrdma_create_mr(d, p.pd, dst, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
        pair_exchange(&p, src, dst, key, 1, (uint8_t)v);
        same(d, src, dst, 4096);
        qpvrdma_stop(d);
    }
}

/*
 * RTS -> SQD: SQ_DRAINED only with en_sqd_async_notify; a send posted in
 * SQD waits until the QP is back in RTS.
 */
static void test_sq_drained(void)
{
    Pair p;
    QPvrdma *d;
    struct pvrdma_qp_attr at = { .qp_state = PVRDMA_QPS_SQD };
    uint64_t buf;
    uint32_t key;

    pair_setup(&p, PVRDMA_QPT_RC, 8);
    d = p.d;
    buf = qpvrdma_alloc(d, 4096);
    key = qpvrdma_create_mr(d, p.pd, buf, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    g_assert_cmpuint(qpvrdma_modify_qp(d, p.b.handle, PVRDMA_QP_STATE, &at),
                     ==, 0);
    g_assert(!async_seen(d, PVRDMA_EVENT_SQ_DRAINED, p.b.handle));
    at.en_sqd_async_notify = 1;
    g_assert_cmpuint(qpvrdma_modify_qp(d, p.a.handle, PVRDMA_QP_STATE |
                                       PVRDMA_QP_EN_SQD_ASYNC_NOTIFY, &at),
                     ==, 0);
    g_assert(async_seen(d, PVRDMA_EVENT_SQ_DRAINED, p.a.handle));
    g_assert(!async_seen(d, PVRDMA_EVENT_SQ_DRAINED, p.b.handle));
    qpvrdma_post_recv(d, &p.b, 0xb1, buf + 2048, 64, key);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_SEND, 0xa1, buf, 64, key, 0, 0);
    qpvrdma_cq_empty(d, &p.cq);
    at.qp_state = PVRDMA_QPS_RTS;
    g_assert_cmpuint(qpvrdma_modify_qp(d, p.a.handle, PVRDMA_QP_STATE, &at),
                     ==, 0);
    qpvrdma_expect_cqe(d, &p.cq, 0xb1, PVRDMA_WC_RECV, PVRDMA_WC_SUCCESS, 64);
    qpvrdma_expect_cqe(d, &p.cq, 0xa1, PVRDMA_WC_SEND, PVRDMA_WC_SUCCESS, 64);
    qpvrdma_stop(d);
}

/* Migration (and so savevm) is refused while the device exists, by name. */
static void test_intx(void)
{
    QPvrdma *d = qpvrdma_start("%s", "");
    struct pvrdma_cmd_create_pd c = { .hdr.cmd = PVRDMA_CMD_CREATE_PD };

    qpci_msix_disable(d->dev);
    qpvrdma_setup_dsr(d, PVRDMA_VERSION);
    g_assert_cmpuint(qpvrdma_activate(d), ==, 0);
    qtest_memwrite(d->qts, d->cmd, &c, sizeof(c));
    qpvrdma_reg_write(d, PVRDMA_REG_REQUEST, 0);
    g_assert_cmpuint(qpvrdma_reg_read(d, PVRDMA_REG_ERR), ==, 0);
    /* the response cause is latched in ICR, which clears on read */
    g_assert_cmphex(qpvrdma_reg_read(d, PVRDMA_REG_ICR), ==,
                    PVRDMA_INTR_CAUSE_RESPONSE);
    g_assert_cmphex(qpvrdma_reg_read(d, PVRDMA_REG_ICR), ==, 0);
    d->dev->msix_enabled = false;
    g_free(d->dev);
    qtest_shutdown(d->qs);
    g_free(d);
}

/* ------------------------------------------------------------------ */
/* Co-resident transport: two QEMU processes, one rendezvous directory  */

static const uint8_t peer_gid[4][16] = {
    { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1 },
    { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2 },
    { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 3 },
    { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 4 },
};

/* One "VM": device, PD, CQ, an MR over a 4-page buffer. */
typedef struct Peer {
    QPvrdma *d;
    uint32_t pd;
    QPvrdmaCq cq;
    QPvrdmaQp qp;
    uint64_t buf;
    uint32_t key;
} Peer;

static uint32_t peer_count(QPvrdma *d)
{
    QDict *r = qtest_qmp(d->qts, "{ 'execute': 'qom-get', 'arguments': "
                         "{ 'path': '/machine/peripheral/pvrdma0', "
                         "'property': 'peers' } }");
    uint32_t n;

    g_assert(qdict_haskey(r, "return"));
    n = qdict_get_int(r, "return");
    qobject_unref(r);
    return n;
}

/* Remove a rendezvous directory (sockets, lock file) after a test. */
static void rm_dir(const char *dir)
{
    GDir *d = g_dir_open(dir, 0, NULL);
    const char *n;

    while (d && (n = g_dir_read_name(d))) {
        g_autofree char *f = g_build_filename(dir, n, NULL);

        unlink(f);
    }
    if (d) {
        g_dir_close(d);
    }
    g_assert_cmpint(rmdir(dir), ==, 0);
}

/* Wait (real time: the peers are other processes) until d sees n peers. */
static void wait_peers(QPvrdma *d, uint32_t n)
{
    for (int i = 0; i < 500 && peer_count(d) != n; i++) {
        g_usleep(10 * 1000);
    }
    g_assert_cmpuint(peer_count(d), ==, n);
}

/* A peer whose device has these properties (',coresident=on', ...). */
static void peer_start_props(Peer *p, unsigned i, const char *props)
{
    g_autofree char *extra = g_strdup_printf(
        "%s -m 128M -machine memory-backend=mem "
        "-object memory-backend-memfd,id=mem,size=128M,share=on", props);

    memset(p, 0, sizeof(*p));
    p->d = qpvrdma_start_active(extra);
    qpvrdma_bind_gid_raw(p->d, 0, peer_gid[i]);
    p->pd = qpvrdma_create_pd(p->d, 0);
    qpvrdma_create_cq(p->d, &p->cq, 64);
    p->buf = qpvrdma_alloc(p->d, 4 * 4096);
    p->key = qpvrdma_create_mr(p->d, p->pd, p->buf, 4 * 4096,
                       PVRDMA_ACCESS_LOCAL_WRITE | PVRDMA_ACCESS_REMOTE_WRITE |
                       PVRDMA_ACCESS_REMOTE_READ | PVRDMA_ACCESS_REMOTE_ATOMIC);
}

/* A peer with a rendezvous secret (NULL: none). */
static void peer_start_secret(Peer *p, const char *dir, unsigned i,
                              const char *secret)
{
    g_autofree char *sec = secret ?
        g_strdup_printf(",rendezvous-secret=rs -object secret,id=rs,"
                        "data=%s", secret) : g_strdup("");
    g_autofree char *props = g_strdup_printf(",rendezvous=%s%s", dir, sec);

    peer_start_props(p, i, props);
}

static void peer_start(Peer *p, const char *dir, unsigned i)
{
    peer_start_secret(p, dir, i, NULL);
}

/* Connect RC QPs of a and b (created here) with the given RNR retry. */
static void peers_connect(Peer *a, Peer *b, uint8_t type, uint8_t rnr_retry)
{
    qpvrdma_create_qp(a->d, &a->qp, a->pd, a->cq.handle, a->cq.handle, type, 16, 0);
    qpvrdma_create_qp(b->d, &b->qp, b->pd, b->cq.handle, b->cq.handle, type, 16, 0);
    qpvrdma_qp_to_rts_gid(a->d, &a->qp, type, b->qp.qpn, peer_gid[1], rnr_retry);
    qpvrdma_qp_to_rts_gid(b->d, &b->qp, type, a->qp.qpn, peer_gid[0], rnr_retry);
}

/* Two peers in dir that see each other, with connected QPs. */
static void peers_up(Peer *a, Peer *b, const char *dir, uint8_t type,
                     uint8_t rnr_retry)
{
    peer_start(a, dir, 0);
    peer_start(b, dir, 1);
    wait_peers(a->d, 1);
    wait_peers(b->d, 1);
    peers_connect(a, b, type, rnr_retry);
}

/* Poll a CQ on a while the other process works (real time). */
static void expect_peer_cqe(Peer *p, uint64_t wr_id, uint32_t opcode,
                            uint32_t status, uint32_t len)
{
    qpvrdma_expect_cqe_wait(p->d, &p->cq, wr_id, opcode, status, len, 1000);
}

static void peer_fill(Peer *p, uint64_t off, size_t len, uint8_t seed)
{
    fill(p->d, p->buf + off, len, seed);
}

/* Bytes at a's buf+aoff equal b's buf+boff (two processes). */
static void peers_same(Peer *a, uint64_t aoff, Peer *b, uint64_t boff,
                       size_t len)
{
    g_autofree uint8_t *x = g_malloc(len);
    g_autofree uint8_t *y = g_malloc(len);

    qtest_memread(a->d->qts, a->buf + aoff, x, len);
    qtest_memread(b->d->qts, b->buf + boff, y, len);
    g_assert(memcmp(x, y, len) == 0);
}

/*
 * One SEND from a (buf + aoff) to b (buf + boff) of len bytes, filled
 * with seed: both completions, the bytes compared.
 */
static void peers_send(Peer *a, Peer *b, uint64_t id, uint64_t aoff,
                       uint64_t boff, uint32_t len, uint8_t seed)
{
    peer_fill(a, aoff, len, seed);
    qpvrdma_post_recv(b->d, &b->qp, 0xb0 | id, b->buf + boff, len, b->key);
    qpvrdma_send_wr(a->d, &a->qp, PVRDMA_WR_SEND, 0xa0 | id, a->buf + aoff,
                    len, a->key, 0, 0);
    expect_peer_cqe(a, 0xa0 | id, PVRDMA_WC_SEND, PVRDMA_WC_SUCCESS, len);
    expect_peer_cqe(b, 0xb0 | id, PVRDMA_WC_RECV, PVRDMA_WC_SUCCESS, len);
    peers_same(a, aoff, b, boff, len);
}

static uint8_t qp_state(QPvrdma *d, uint32_t handle)
{
    struct pvrdma_cmd_query_qp q = { .hdr.cmd = PVRDMA_CMD_QUERY_QP,
                                     .qp_handle = handle,
                                     .attr_mask = PVRDMA_QP_STATE };
    union pvrdma_cmd_resp r;

    qpvrdma_cmd_ok(d, &q, sizeof(q), &r);
    return r.query_qp_resp.attrs.qp_state;
}

/*
 * Live migration with loopback QPs connected and traffic under way: the
 * work posted just before the switch-over completes exactly once, on the
 * destination if not before; the QP numbers, keys and ring positions are
 * the guest's as before; data is intact.
 */
static void test_migration_rc(void)
{
    Pair p;
    QPvrdma *d;
    uint64_t src, dst;
    uint32_t key;
    struct pvrdma_cqe e;
    g_autofree char *qps = NULL;
    bool seen_a = false, seen_b = false;

    pair_setup(&p, PVRDMA_QPT_RC, 16);
    d = p.d;
    src = qpvrdma_alloc(d, 2 * 4096);
    dst = qpvrdma_alloc(d, 2 * 4096);
    key = qpvrdma_create_mr(d, p.pd, src, 2 * 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    qpvrdma_create_mr(d, p.pd, dst, 2 * 4096, PVRDMA_ACCESS_LOCAL_WRITE |
                      PVRDMA_ACCESS_REMOTE_WRITE);
    fill(d, src, 2 * 4096, 3);
    /* one exchange before the move */
    qpvrdma_post_recv(d, &p.b, 0xb1, dst, 4096, key + 256);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_SEND, 0xa1, src, 3000, key, 0, 0);
    qpvrdma_expect_cqe(d, &p.cq, 0xb1, PVRDMA_WC_RECV, PVRDMA_WC_SUCCESS,
                       3000);
    qpvrdma_expect_cqe(d, &p.cq, 0xa1, PVRDMA_WC_SEND, PVRDMA_WC_SUCCESS,
                       3000);
    same(d, src, dst, 3000);
    /* posted right before the switch-over, not polled */
    qpvrdma_post_recv(d, &p.b, 0xb2, dst, 4096, key + 256);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_SEND, 0xa2, src + 100, 2500, key, 0, 0);

    qpvrdma_migrate(d);

    /* each completes exactly once, wherever it ran */
    for (int i = 0; i < 2; i++) {
        g_assert(qpvrdma_wait_cq(d, &p.cq, &e, 2000));
        g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
        g_assert_cmpuint(e.byte_len, ==, 2500);
        if (e.wr_id == 0xb2) {
            g_assert(!seen_b);
            seen_b = true;
            g_assert_cmpuint(e.src_qp, ==, p.a.qpn);
            g_assert_cmpuint(e.qp, ==, p.b.handle);
        } else {
            g_assert_cmphex(e.wr_id, ==, 0xa2);
            g_assert(!seen_a);
            seen_a = true;
        }
    }
    qpvrdma_cq_empty(d, &p.cq);
    same(d, src + 100, dst, 2500);
    /* the same QPs, keys and rings go on: a WRITE with the old rkey */
    fill(d, src, 4096, 9);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 0xa3, src, 4000, key,
                    dst + 10, key + 256);
    qpvrdma_expect_cqe(d, &p.cq, 0xa3, PVRDMA_WC_RDMA_WRITE,
                       PVRDMA_WC_SUCCESS, 4000);
    same(d, src, dst + 10, 4000);
    qps = qpvrdma_qps(d);
    g_assert(strstr(qps, "RTS"));
    g_assert(strstr(qps, "loopback"));
    /* the command channel answers on the destination */
    g_assert_cmpuint(qpvrdma_create_pd(d, 0), >, p.pd);
    qpvrdma_stop(d);
}

/*
 * Postcopy: the destination runs, and the device executes work posted
 * right before the switch-over, while most of RAM is still on the source
 * (its pages come when touched).  Each request completes once, data
 * intact, and the same QPs and keys go on.
 */
static void test_migration_postcopy(void)
{
    Pair p;
    QPvrdma *d;
    uint64_t src, dst;
    uint32_t key;
    struct pvrdma_cqe e;
    bool seen_a = false, seen_b = false;

    pair_setup(&p, PVRDMA_QPT_RC, 16);
    d = p.d;
    src = qpvrdma_alloc(d, 4 * 4096);
    dst = qpvrdma_alloc(d, 4 * 4096);
    key = qpvrdma_create_mr(d, p.pd, src, 4 * 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    qpvrdma_create_mr(d, p.pd, dst, 4 * 4096, PVRDMA_ACCESS_LOCAL_WRITE |
                      PVRDMA_ACCESS_REMOTE_WRITE);
    fill(d, src, 4 * 4096, 4);
    qpvrdma_post_recv(d, &p.b, 0xb2, dst, 4 * 4096, key + 256);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_SEND, 0xa2, src, 3 * 4096 + 7, key,
                    0, 0);

    if (!qpvrdma_migrate_postcopy(d, NULL)) {
        g_test_skip("the destination cannot do postcopy (userfaultfd)");
        qpvrdma_stop(d);
        return;
    }
    for (int i = 0; i < 2; i++) {
        g_assert(qpvrdma_wait_cq(d, &p.cq, &e, 2000));
        g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
        g_assert_cmpuint(e.byte_len, ==, 3 * 4096 + 7);
        if (e.wr_id == 0xb2) {
            g_assert(!seen_b);
            seen_b = true;
        } else {
            g_assert_cmphex(e.wr_id, ==, 0xa2);
            g_assert(!seen_a);
            seen_a = true;
        }
    }
    qpvrdma_cq_empty(d, &p.cq);
    same(d, src, dst, 3 * 4096 + 7);
    fill(d, src, 4096, 8);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 0xa3, src, 4096, key,
                    dst + 3 * 4096, key + 256);
    qpvrdma_expect_cqe(d, &p.cq, 0xa3, PVRDMA_WC_RDMA_WRITE,
                       PVRDMA_WC_SUCCESS, 4096);
    same(d, src, dst + 3 * 4096, 4096);
    qpvrdma_stop(d);
}

/*
 * A background snapshot (migrate to a file with background-snapshot: the
 * VM runs on) taken with QPs connected; work done after it; a new QEMU
 * loaded from the file has the device, data and completions as they were
 * when the snapshot began, and traffic goes on.
 */
static void test_migration_bg_snapshot(void)
{
    g_autofree char *dir = g_dir_make_tmp("pvrdma-bg-XXXXXX", NULL);
    g_autofree char *file = g_build_filename(dir, "state", NULL);
    g_autofree char *err = NULL;
    g_autofree uint8_t *at_snap = g_malloc(4096), *now = g_malloc(4096);
    Pair p, p0;
    QPvrdma *d;
    uint64_t src, dst;
    uint32_t key;

    pair_setup(&p, PVRDMA_QPT_RC, 16);
    d = p.d;
    src = qpvrdma_alloc(d, 4096);
    dst = qpvrdma_alloc(d, 4096);
    key = qpvrdma_create_mr(d, p.pd, src, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    qpvrdma_create_mr(d, p.pd, dst, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    pair_exchange(&p, src, dst, key, 1, 1);
    qtest_memread(d->qts, dst, at_snap, 4096);

    if (!qpvrdma_bg_snapshot(d, file, &err)) {
        g_test_skip("this host cannot take a background snapshot "
                    "(userfaultfd write-protect)");
        qpvrdma_stop(d);
        rmdir(dir);
        return;
    }
    g_assert_null(err);
    p0 = p;     /* the driver's own state, as the guest's at the snapshot */
    /* the VM ran on: work after the snapshot */
    pair_exchange(&p, src, dst, key, 2, 2);

    qpvrdma_restore(d, file);
    p = p0;
    /* as the snapshot began: that work undone, data and completions */
    qtest_memread(d->qts, dst, now, 4096);
    g_assert(!memcmp(now, at_snap, 4096));
    qpvrdma_cq_empty(d, &p.cq);
    pair_exchange(&p, src, dst, key, 3, 3);
    same(d, src, dst, 4096);
    qpvrdma_stop(d);
    unlink(file);
    rmdir(dir);
}

/*
 * p's CQ holds, in either order, its SEND sid of slen bytes and its
 * receive rid of rlen bytes from QP src_qpn, once each.
 */
static void expect_send_recv(Peer *p, uint64_t sid, uint32_t slen,
                             uint64_t rid, uint32_t rlen, uint32_t src_qpn)
{
    bool seen_s = false, seen_r = false;

    for (int i = 0; i < 2; i++) {
        struct pvrdma_cqe e;

        g_assert(qpvrdma_wait_cq(p->d, &p->cq, &e, 2000));
        g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
        if (e.wr_id == sid) {
            g_assert(!seen_s);
            seen_s = true;
            g_assert_cmpuint(e.byte_len, ==, slen);
        } else {
            g_assert_cmphex(e.wr_id, ==, rid);
            g_assert(!seen_r);
            seen_r = true;
            g_assert_cmpuint(e.byte_len, ==, rlen);
            g_assert_cmpuint(e.src_qp, ==, src_qpn);
        }
    }
}

/*
 * Live migration of one of two co-resident VMs, with requests under way
 * both ways: a's SEND waits at b for a receive, b's SEND waits at a.  a
 * moves to a new QEMU in the same rendezvous directory.  b sees a pause,
 * not an error: its QP stays in RTS, and once receives are posted each
 * request runs exactly once, a's from the destination, with the same QP
 * numbers and keys; the data is intact.  Then traffic goes on both ways.
 * Migrations with postcopy-ram or background-snapshot are refused first,
 * naming why.
 */
static void test_migration_coresident(void)
{
    g_autofree char *dir = g_dir_make_tmp("pvrdma-cr-XXXXXX", NULL);
    g_autofree char *qps = NULL, *err = NULL;
    g_autofree char *bg = g_build_filename(dir, "bg-state", NULL);
    Peer a, b;

    peers_up(&a, &b, dir, PVRDMA_QPT_RC, 7);
    peer_fill(&a, 0, 1000, 5);
    peer_fill(&b, 4096, 1500, 6);
    qpvrdma_send_wr(a.d, &a.qp, PVRDMA_WR_SEND, 0xa1, a.buf, 1000, a.key,
                    0, 0);
    qpvrdma_send_wr(b.d, &b.qp, PVRDMA_WR_SEND, 0xb1, b.buf + 4096, 1500,
                    b.key, 0, 0);
    g_usleep(50 * 1000);
    qpvrdma_cq_empty(a.d, &a.cq);
    qpvrdma_cq_empty(b.d, &b.cq);

    /*
     * Not with postcopy or a background snapshot: the peer touches our RAM
     * where userfaultfd does not see it.
     */
    if (qpvrdma_migrate_postcopy(a.d, &err)) {
        g_assert_nonnull(err);
        g_assert(strstr(err, "postcopy-ram is not supported with rendezvous"));
    }
    g_free(err);
    err = NULL;
    if (qpvrdma_bg_snapshot(a.d, bg, &err)) {
        g_assert_nonnull(err);
        g_assert(strstr(err, "background-snapshot is not supported with "
                        "rendezvous"));
    }
    unlink(bg);
    qpvrdma_migrate(a.d);

    /* b waited: no error, and it sees the destination */
    wait_peers(b.d, 1);
    qpvrdma_cq_empty(b.d, &b.cq);
    g_assert_cmpuint(qp_state(b.d, b.qp.handle), ==, PVRDMA_QPS_RTS);
    g_assert_cmpuint(qp_state(a.d, a.qp.handle), ==, PVRDMA_QPS_RTS);
    qpvrdma_post_recv(b.d, &b.qp, 0xb0, b.buf + 8192, 4096, b.key);
    qpvrdma_post_recv(a.d, &a.qp, 0xa0, a.buf + 8192, 4096, a.key);
    expect_send_recv(&a, 0xa1, 1000, 0xa0, 1500, b.qp.qpn);
    expect_send_recv(&b, 0xb1, 1500, 0xb0, 1000, a.qp.qpn);
    qpvrdma_cq_empty(a.d, &a.cq);
    qpvrdma_cq_empty(b.d, &b.cq);
    peers_same(&a, 0, &b, 8192, 1000);
    peers_same(&b, 4096, &a, 8192, 1500);
    qps = qpvrdma_qps(a.d);
    g_assert(strstr(qps, "coresident"));
    /* the same QPs and keys carry on, both ways */
    peers_send(&a, &b, 2, 0, 0, 3000, 7);
    peers_send(&b, &a, 3, 0, 0, 2000, 8);
    qpvrdma_stop(b.d);
    qpvrdma_stop(a.d);
    rm_dir(dir);
}

/* Load a migration file into a new QEMU; the final status. */
static char *mig_load_file(const char *args, const char *file, char **desc)
{
    QTestState *qts = qtest_initf("%s -incoming defer", args);
    char *st;
    QDict *rsp;

    g_autofree char *uri = g_strdup_printf("file:%s", file);

    rsp = qtest_qmp(qts, "{ 'execute': 'migrate-incoming', 'arguments': "
                    "{ 'uri': %s, 'exit-on-error': false } }", uri);
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    st = qpvrdma_mig_wait(qts, desc);
    /* whatever the stream held, this QEMU still answers */
    rsp = qtest_qmp(qts, "{ 'execute': 'query-status' }");
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    qtest_quit(qts);
    return st;
}

/*
 * savevm / loadvm with connected QPs (an internal snapshot in a qcow2 node
 * that blockdev-create makes): loadvm puts the device back as it was at
 * savevm, with the guest's memory; the work done in between is undone, the
 * CQ is where the guest's copy of it says, and traffic goes on.
 */
static void test_migration_savevm(void)
{
    g_autofree char *dir = g_dir_make_tmp("pvrdma-snap-XXXXXX", NULL);
    g_autofree char *img = g_build_filename(dir, "disk.qcow2", NULL);
    g_autofree char *extra = NULL, *out = NULL;
    g_autofree uint8_t *at_save = g_malloc(4096), *now = g_malloc(4096);
    Pair p, p0;
    uint64_t src, dst;
    uint32_t key;
    QPvrdma *d;
    QDict *rsp;

    g_assert(g_file_set_contents(img, "", 0, NULL));
    extra = g_strdup_printf(" -blockdev driver=file,filename=%s,node-name=f0",
                            img);
    d = qpvrdma_start_active(extra);
    rsp = qtest_qmp(d->qts, "{ 'execute': 'blockdev-create', 'arguments': "
                    "{ 'job-id': 'c0', 'options': { 'driver': 'qcow2', "
                    "'file': 'f0', 'size': 1048576 } } }");
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    for (;;) {
        QDict *r = qtest_qmp(d->qts, "{ 'execute': 'query-jobs' }");
        QList *jobs = qdict_get_qlist(r, "return");
        QDict *j = qobject_to(QDict, qlist_peek(jobs));
        bool done = j && !strcmp(qdict_get_str(j, "status"), "concluded");

        g_assert(j);
        qobject_unref(r);
        if (done) {
            break;
        }
        g_usleep(10 * 1000);
    }
    qobject_unref(qtest_qmp(d->qts, "{ 'execute': 'job-dismiss', "
                            "'arguments': { 'id': 'c0' } }"));
    rsp = qtest_qmp(d->qts, "{ 'execute': 'blockdev-add', 'arguments': "
                    "{ 'driver': 'qcow2', 'node-name': 'q0', "
                    "'file': 'f0' } }");
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);

    pair_connect(&p, d, PVRDMA_QPT_RC, 16);
    src = qpvrdma_alloc(d, 4096);
    dst = qpvrdma_alloc(d, 4096);
    key = qpvrdma_create_mr(d, p.pd, src, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    qpvrdma_create_mr(d, p.pd, dst, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    pair_exchange(&p, src, dst, key, 1, 1);

    out = qtest_hmp(d->qts, "savevm s1");
    g_assert_cmpstr(out, ==, "");
    g_free(out);
    p0 = p;
    qtest_memread(d->qts, dst, at_save, 4096);

    /* work after the snapshot */
    pair_exchange(&p, src, dst, key, 2, 2);
    qtest_memread(d->qts, dst, now, 4096);
    g_assert(memcmp(now, at_save, 4096));

    out = qtest_hmp(d->qts, "loadvm s1");
    g_assert_cmpstr(out, ==, "");
    p = p0;
    /* undone: the data, the completions */
    qtest_memread(d->qts, dst, now, 4096);
    g_assert(!memcmp(now, at_save, 4096));
    qpvrdma_cq_empty(d, &p.cq);
    /* and on from there: the same rings, keys and QP numbers */
    pair_exchange(&p, src, dst, key, 3, 3);
    same(d, src, dst, 4096);
    qpvrdma_cq_empty(d, &p.cq);
    qpvrdma_stop(d);
    unlink(img);
    rmdir(dir);
}

/*
 * Hostile migration streams: the device's state truncated, another
 * device's limits, a ring page outside guest RAM, a ring of 2^32 pages.
 * Each fails the load (its reason, naming pvrdma, on stderr); none
 * crashes QEMU.  The untouched file loads.
 */
static void test_migration_hostile(void)
{
    Pair p;
    g_autofree char *dir = g_dir_make_tmp("pvrdma-mig-XXXXXX", NULL);
    g_autofree char *file = g_build_filename(dir, "state", NULL);
    g_autofree char *bad = g_build_filename(dir, "bad", NULL);
    g_autofree char *st = NULL;
    g_autofree gchar *img = NULL;
    gsize len;
    QDict *rsp;
    size_t at;
    static const struct {
        const char *what;
        size_t off;         /* from the state's magic */
        uint64_t val;
        int size;           /* 0: cut the stream there */
    } cases[] = {
        { "truncated", 40, 0, 0 },
        { "max-qp", 8, 7, 4 },
        { "async ring page", 8 + 65 + 51 + 24 + 4, 0xfffffffff000ull, 8 },
        { "async ring pages", 8 + 65 + 51 + 24, 0xffffffffu, 4 },
    };

    g_autofree char *uri = g_strdup_printf("file:%s", file);

    pair_setup(&p, PVRDMA_QPT_RC, 16);
    rsp = qtest_qmp(p.d->qts, "{ 'execute': 'migrate', 'arguments': "
                    "{ 'uri': %s } }", uri);
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    st = qpvrdma_mig_wait(p.d->qts, NULL);
    g_assert_cmpstr(st, ==, "completed");
    g_clear_pointer(&st, g_free);
    g_assert(g_file_get_contents(file, &img, &len, NULL));
    /* the device's state: "PRMG" */
    at = 0;
    while (at + 4 <= len && memcmp(img + at, "PRMG", 4)) {
        at++;
    }
    g_assert_cmpuint(at + 200, <, len);

    st = mig_load_file(p.d->args, file, NULL);
    g_assert_cmpstr(st, ==, "completed");
    g_clear_pointer(&st, g_free);
    for (unsigned i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree gchar *x = g_memdup2(img, len);
        g_autofree char *desc = NULL;
        size_t n = len;

        if (cases[i].size) {
            uint64_t v = cpu_to_le64(cases[i].val);

            memcpy(x + at + cases[i].off, &v, cases[i].size);
        } else {
            n = at + cases[i].off;
        }
        g_assert(g_file_set_contents(bad, x, n, NULL));
        st = mig_load_file(p.d->args, bad, &desc);
        g_test_message("%s: %s (%s)", cases[i].what, st, desc);
        /* the reason goes to stderr (VMStateInfo.get has no Error) */
        g_assert_cmpstr(st, ==, "failed");
        g_clear_pointer(&st, g_free);
    }
    qpvrdma_stop(p.d);
    unlink(file);
    unlink(bad);
    rmdir(dir);
}

/*
 * Not a test: the device's share of the downtime in a real QEMU, its
 * save and load times (trace events pvrdma_state_saved / _loaded, each
 * QEMU logging to its own -D file) for PVRDMA_BENCH_MIG connected QPs
 * with as many 16 KiB MRs, migrated to a second QEMU.  Registered only
 * when PVRDMA_BENCH_MIG is set (scripts/bench-mig.sh sets it); prints
 * figures.
 */
static void bench_migration(void)
{
    const char *env = getenv("PVRDMA_BENCH_MIG");
    g_autofree char *dir = NULL, *extra = NULL;
    g_autofree QPvrdmaQp *qp = NULL;
    unsigned n = env ? atoi(env) : 0;
    const char *name;
    QPvrdma *d;
    QPvrdmaCq cq;
    uint32_t pd;
    GDir *gd;

    if (n < 2 || n > 4000) {
        g_test_skip("a benchmark: set PVRDMA_BENCH_MIG=QPS (2..4000)");
        return;
    }
    dir = g_dir_make_tmp("pvrdma-bench-XXXXXX", NULL);
    extra = g_strdup_printf(",max-qp=%u,max-mr=%u -m 512M "
                            "-trace pvrdma_state_saved "
                            "-trace pvrdma_state_loaded -D %s/log-%%d",
                            n + 16, n + 16, dir);
    d = qpvrdma_start_active(extra);
    qpvrdma_bind_gid(d, 0);
    pd = qpvrdma_create_pd(d, 0);
    qpvrdma_create_cq(d, &cq, 4096);
    qp = g_new0(QPvrdmaQp, n);
    for (unsigned i = 0; i < n; i++) {
        uint64_t buf = qpvrdma_alloc(d, 4 * 4096);

        qpvrdma_create_qp(d, &qp[i], pd, cq.handle, cq.handle, PVRDMA_QPT_RC,
                          16, 0);
        qpvrdma_create_mr(d, pd, buf, 4 * 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    }
    for (unsigned i = 0; i < n; i++) {
        qpvrdma_qp_to_rts(d, &qp[i], PVRDMA_QPT_RC, qp[i ^ 1].qpn);
    }
    qpvrdma_migrate(d);
    g_assert_cmpuint(qpvrdma_create_pd(d, 0), >, pd);
    qpvrdma_stop(d);

    gd = g_dir_open(dir, 0, NULL);
    while ((name = g_dir_read_name(gd))) {
        g_autofree char *path = g_build_filename(dir, name, NULL);
        g_autofree char *text = NULL;
        g_auto(GStrv) lines = NULL;

        g_assert(g_file_get_contents(path, &text, NULL, NULL));
        lines = g_strsplit(text, "\n", -1);
        for (char **l = lines; *l; l++) {
            const char *m = strstr(*l, "migration: ");

            if (m) {
                printf("# %s\n", m);
            }
        }
        unlink(path);
    }
    g_dir_close(gd);
    rmdir(dir);
}

/*
 * A benchmark, not a check (registered only when PVRDMA_BENCH_IDLE is
 * set; scripts/bench-idle.sh runs it): the CPU that idle QEMUs use, for
 * the co-resident transport's idle cost.  Five setups, one after the
 * other: one QEMU with the NIC and no pvrdma (QEMU's own floor); one with
 * the device active and no transport but loopback (no rendezvous); two
 * QEMUs that met in a rendezvous directory, no QP;
 * the same with 1 connected RC QP each side and with 64, one SEND over
 * each QP (both ways with 1) before they go idle.  After a settling
 * second, each QEMU's utime + stime (/proc/PID/stat, all its threads, in
 * clock ticks) is read at the start and the end of PVRDMA_BENCH_IDLE_SECS
 * seconds (default 10) of nothing: in % of one core, for each process and
 * for the pair.  The same from the threads' run time in ns
 * (/proc/PID/task/TID/schedstat: finer than a tick) and their context
 * switches per second (the wakeups).  The qtest accelerator runs no vCPU
 * and its virtual clock stands still unless the test steps it, so the
 * figures are the device's and the main loop's work that real time
 * drives (fds, bottom halves, realtime timers); the device's own timers
 * (virtual clock: the link poll, 4 per second) do not fire here.
 */
typedef struct IdleCpu {
    int64_t ticks;          /* utime + stime, clock ticks */
    int64_t run_ns;         /* the threads' run time (schedstat) */
    int64_t switches;       /* the threads' context switches */
    int64_t us;             /* g_get_monotonic_time() */
} IdleCpu;

/* The sum over pid's threads of what each file's fields say. */
static void idle_threads(pid_t pid, IdleCpu *c)
{
    g_autofree char *dir = g_strdup_printf("/proc/%d/task", (int)pid);
    GDir *gd = g_dir_open(dir, 0, NULL);
    const char *tid;

    g_assert(gd);
    while ((tid = g_dir_read_name(gd))) {
        g_autofree char *sf = g_build_filename(dir, tid, "schedstat", NULL);
        g_autofree char *tf = g_build_filename(dir, tid, "status", NULL);
        g_autofree char *st = NULL, *text = NULL;
        static const char *const keys[] = {
            "\nvoluntary_ctxt_switches:", "\nnonvoluntary_ctxt_switches:",
        };

        /* a thread that left meanwhile is simply not counted */
        if (g_file_get_contents(sf, &st, NULL, NULL)) {
            c->run_ns += g_ascii_strtoll(st, NULL, 10);
        }
        if (!g_file_get_contents(tf, &text, NULL, NULL)) {
            continue;
        }
        for (unsigned i = 0; i < G_N_ELEMENTS(keys); i++) {
            const char *v = strstr(text, keys[i]);

            if (v) {
                c->switches += g_ascii_strtoll(v + strlen(keys[i]), NULL,
                                               10);
            }
        }
    }
    g_dir_close(gd);
}

static void idle_sample(QTestState *qts, IdleCpu *c)
{
    pid_t pid = qtest_pid(qts);
    g_autofree char *path = g_strdup_printf("/proc/%d/stat", (int)pid);
    g_autofree char *text = NULL;
    unsigned long long ut, st;
    const char *p;

    memset(c, 0, sizeof(*c));
    c->us = g_get_monotonic_time();
    g_assert(g_file_get_contents(path, &text, NULL, NULL));
    /* after the command's ")": state (field 3) ... utime (14), stime (15) */
    p = strrchr(text, ')');
    g_assert(p);
    g_assert_cmpint(sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u "
                           "%*u %llu %llu", &ut, &st), ==, 2);
    c->ticks = ut + st;
    idle_threads(pid, c);
}

/* What n QEMUs (1 or 2) use while idle: one row each, one for the pair. */
static void idle_report(const char *setup, QTestState **qts, unsigned n)
{
    static const char *const names[] = { "QEMU a", "QEMU b" };
    IdleCpu a[2], b[2];
    double secs = 10, tick = sysconf(_SC_CLK_TCK);
    const char *env = getenv("PVRDMA_BENCH_IDLE_SECS");
    int64_t sum_t = 0, sum_ns = 0, sum_sw = 0;

    if (env && atof(env) > 0) {
        secs = atof(env);
    }
    g_usleep(G_USEC_PER_SEC);   /* what the setup left going settles */
    for (unsigned i = 0; i < n; i++) {
        idle_sample(qts[i], &a[i]);
    }
    g_usleep(secs * G_USEC_PER_SEC);
    for (unsigned i = 0; i < n; i++) {
        idle_sample(qts[i], &b[i]);
    }
    for (unsigned i = 0; i <= n; i++) {
        bool all = i == n;
        int64_t t = all ? sum_t : b[i].ticks - a[i].ticks;
        int64_t ns = all ? sum_ns : b[i].run_ns - a[i].run_ns;
        int64_t sw = all ? sum_sw : b[i].switches - a[i].switches;
        double wall = (b[all ? 0 : i].us - a[all ? 0 : i].us) / 1e6;

        if (all && n == 1) {
            break;
        }
        printf("# idle: %-22s %-6s %7.3f %% %5" PRId64 " %8.4f %% %10.1f\n",
               i ? "" : setup, all ? "pair" : names[i],
               t / tick / wall * 100, t, ns / 1e9 / wall * 100, sw / wall);
        sum_t += t;
        sum_ns += ns;
        sum_sw += sw;
    }
    fflush(stdout);
}

/* n RC QPs a side, a's i-th to b's i-th, one 64-byte SEND over each. */
static void idle_connect(Peer *a, Peer *b, unsigned n, QPvrdmaQp *qa,
                         QPvrdmaQp *qb)
{
    for (unsigned i = 0; i < n; i++) {
        qpvrdma_create_qp(a->d, &qa[i], a->pd, a->cq.handle, a->cq.handle,
                          PVRDMA_QPT_RC, 16, 0);
        qpvrdma_create_qp(b->d, &qb[i], b->pd, b->cq.handle, b->cq.handle,
                          PVRDMA_QPT_RC, 16, 0);
    }
    for (unsigned i = 0; i < n; i++) {
        qpvrdma_qp_to_rts_gid(a->d, &qa[i], PVRDMA_QPT_RC, qb[i].qpn,
                              peer_gid[1], 7);
        qpvrdma_qp_to_rts_gid(b->d, &qb[i], PVRDMA_QPT_RC, qa[i].qpn,
                              peer_gid[0], 7);
    }
    for (unsigned i = 0; i < n; i++) {
        qpvrdma_post_recv(b->d, &qb[i], 0xb000 + i, b->buf, 64, b->key);
        qpvrdma_send_wr(a->d, &qa[i], PVRDMA_WR_SEND, 0xa000 + i, a->buf, 64,
                        a->key, 0, 0);
        expect_peer_cqe(a, 0xa000 + i, PVRDMA_WC_SEND, PVRDMA_WC_SUCCESS, 64);
        expect_peer_cqe(b, 0xb000 + i, PVRDMA_WC_RECV, PVRDMA_WC_SUCCESS, 64);
    }
}

static void bench_idle(void)
{
    static const unsigned nqps[] = { 0, 1, 64 };
    QTestState *qts[2];
    QOSState *qs;
    QPvrdma *d;

    printf("# idle: CPU of idle QEMUs (qtest accelerator: no vCPU) over %s "
           "s each, after 1 s settling\n"
           "# idle: %-22s %-6s %9s %5s %10s %10s\n"
           "# idle: %-22s %-6s %9s %5s %10s %10s\n",
           getenv("PVRDMA_BENCH_IDLE_SECS") ?: "10",
           "setup", "", "CPU", "ticks", "run", "switches",
           "", "", "(stat)", "", "(schedst.)", "per s");
    /* QEMU's own floor: the same machine and NIC, no pvrdma */
    qs = qtest_pc_boot("-nodefaults -device vmxnet3,addr=%d.0,romfile=,"
                       "mac=52:54:00:12:34:56", PVRDMA_TEST_SLOT);
    idle_report("1 QEMU, no pvrdma", &qs->qts, 1);
    qtest_shutdown(qs);
    d = qpvrdma_start_active(NULL);
    qpvrdma_bind_gid(d, 0);
    idle_report("1 QEMU, no transport", &d->qts, 1);
    qpvrdma_stop(d);

    for (unsigned k = 0; k < G_N_ELEMENTS(nqps); k++) {
        g_autofree char *dir = g_dir_make_tmp("pvrdma-idle-XXXXXX", NULL);
        g_autofree char *setup = NULL;
        g_autofree QPvrdmaQp *qa = g_new0(QPvrdmaQp, MAX(nqps[k], 1));
        g_autofree QPvrdmaQp *qb = g_new0(QPvrdmaQp, MAX(nqps[k], 1));
        Peer a, b;

        peer_start(&a, dir, 0);
        peer_start(&b, dir, 1);
        wait_peers(a.d, 1);
        wait_peers(b.d, 1);
        idle_connect(&a, &b, nqps[k], qa, qb);
        if (nqps[k] == 1) {
            /* and back: each side has been requester and responder */
            qpvrdma_post_recv(a.d, &qa[0], 0xa1, a.buf, 64, a.key);
            qpvrdma_send_wr(b.d, &qb[0], PVRDMA_WR_SEND, 0xb1, b.buf, 64,
                            b.key, 0, 0);
            expect_peer_cqe(&b, 0xb1, PVRDMA_WC_SEND, PVRDMA_WC_SUCCESS, 64);
            expect_peer_cqe(&a, 0xa1, PVRDMA_WC_RECV, PVRDMA_WC_SUCCESS, 64);
        }
        setup = nqps[k] ? g_strdup_printf("pair, %u RC QP%s", nqps[k],
                                          nqps[k] > 1 ? "s" : "") :
                g_strdup("pair, no QP");
        qts[0] = a.d->qts;
        qts[1] = b.d->qts;
        idle_report(setup, qts, 2);
        qpvrdma_stop(b.d);
        qpvrdma_stop(a.d);
        rm_dir(dir);
    }
}

static void test_cr_rc(void)
{
    g_autofree char *dir = g_dir_make_tmp("pvrdma-cr-XXXXXX", NULL);
    Peer a, b;

    peers_up(&a, &b, dir, PVRDMA_QPT_RC, 7);

    /* SEND across pages into two receive SGEs worth of buffer */
    peers_send(&a, &b, 1, 3, 1, 9000, 5);

    /* WRITE into b, READ back from b */
    qpvrdma_send_wr(a.d, &a.qp, PVRDMA_WR_RDMA_WRITE, 0xa2, a.buf + 100, 5000, a.key,
            b.buf + 8000, b.key);
    expect_peer_cqe(&a, 0xa2, PVRDMA_WC_RDMA_WRITE, PVRDMA_WC_SUCCESS, 5000);
    peers_same(&a, 100, &b, 8000, 5000);
    peer_fill(&b, 0, 4096, 77);
    qpvrdma_send_wr(a.d, &a.qp, PVRDMA_WR_RDMA_READ, 0xa3, a.buf + 12000, 3000,
            a.key, b.buf + 7, b.key);
    expect_peer_cqe(&a, 0xa3, PVRDMA_WC_RDMA_READ, PVRDMA_WC_SUCCESS, 3000);
    peers_same(&a, 12000, &b, 7, 3000);

    /* fetch-add and compare-swap on b's memory, old value lands in a */
    qtest_writeq(b.d->qts, b.buf + 64, 1000);
    qpvrdma_atomic_wr(a.d, &a.qp, PVRDMA_WR_ATOMIC_FETCH_AND_ADD, 0xa4,
                      a.buf + 8, a.key, b.buf + 64, b.key, 24, 0);
    expect_peer_cqe(&a, 0xa4, PVRDMA_WC_FETCH_ADD, PVRDMA_WC_SUCCESS, 8);
    g_assert_cmpuint(qtest_readq(a.d->qts, a.buf + 8), ==, 1000);
    g_assert_cmpuint(qtest_readq(b.d->qts, b.buf + 64), ==, 1024);
    qpvrdma_atomic_wr(a.d, &a.qp, PVRDMA_WR_ATOMIC_CMP_AND_SWP, 0xa5,
                      a.buf + 8, a.key, b.buf + 64, b.key, 1024, 5);
    expect_peer_cqe(&a, 0xa5, PVRDMA_WC_COMP_SWAP, PVRDMA_WC_SUCCESS, 8);
    g_assert_cmpuint(qtest_readq(a.d->qts, a.buf + 8), ==, 1024);
    g_assert_cmpuint(qtest_readq(b.d->qts, b.buf + 64), ==, 5);

    /* RNR: the send waits at b until b posts its receive */
    qpvrdma_send_wr(a.d, &a.qp, PVRDMA_WR_SEND, 0xa6, a.buf, 64, a.key, 0, 0);
    g_usleep(50 * 1000);
    qpvrdma_cq_empty(a.d, &a.cq);
    qpvrdma_post_recv(b.d, &b.qp, 0xb6, b.buf + 4096, 64, b.key);
    expect_peer_cqe(&b, 0xb6, PVRDMA_WC_RECV, PVRDMA_WC_SUCCESS, 64);
    expect_peer_cqe(&a, 0xa6, PVRDMA_WC_SEND, PVRDMA_WC_SUCCESS, 64);
    peers_same(&a, 0, &b, 4096, 64);

    /* bad rkey: error on both sides, both QPs in error, receives flushed */
    qpvrdma_post_recv(b.d, &b.qp, 0xb7, b.buf, 64, b.key);
    qpvrdma_send_wr(a.d, &a.qp, PVRDMA_WR_RDMA_WRITE, 0xa7, a.buf, 16, a.key, b.buf,
            b.key ^ 0x80);
    qpvrdma_send_wr(a.d, &a.qp, PVRDMA_WR_SEND, 0xa8, a.buf, 16, a.key, 0, 0);
    expect_peer_cqe(&a, 0xa7, 0, PVRDMA_WC_REM_ACCESS_ERR, 0);
    expect_peer_cqe(&a, 0xa8, 0, PVRDMA_WC_WR_FLUSH_ERR, 0);
    expect_peer_cqe(&b, 0xb7, 0, PVRDMA_WC_WR_FLUSH_ERR, 0);
    g_assert_cmpuint(qp_state(a.d, a.qp.handle), ==, PVRDMA_QPS_ERR);
    g_assert_cmpuint(qp_state(b.d, b.qp.handle), ==, PVRDMA_QPS_ERR);
    g_assert(async_seen(b.d, PVRDMA_EVENT_QP_ACCESS_ERR, b.qp.handle));
    g_assert(!async_seen(a.d, PVRDMA_EVENT_QP_ACCESS_ERR, a.qp.handle));

    qpvrdma_stop(b.d);
    qpvrdma_stop(a.d);
    rm_dir(dir);
}

/*
 * Management gives d's device the connection fd (x-pvrdma-peer-add after
 * getfd, as libvirt passes descriptors): the QMP reply, which the caller
 * unrefs.
 */
static QDict *give_peer(QPvrdma *d, int fd, const char *name)
{
    QDict *r = qtest_qmp_fds(d->qts, &fd, 1, "{ 'execute': 'getfd', "
                             "'arguments': { 'fdname': %s } }", name);

    g_assert(qdict_haskey(r, "return"));
    qobject_unref(r);
    return qtest_qmp(d->qts, "{ 'execute': 'x-pvrdma-peer-add', "
                     "'arguments': { 'fd': %s } }", name);
}

/* The error class and text of QMP reply r contain want. */
static void qmp_error_has(QDict *r, const char *want)
{
    QDict *e = qdict_get_qdict(r, "error");

    g_assert(e);
    if (!strstr(qdict_get_str(e, "desc"), want)) {
        g_test_message("'%s' not in '%s'", want, qdict_get_str(e, "desc"));
        g_test_fail();
    }
    qobject_unref(r);
}

/*
 * Peers from management: two QEMUs with coresident=on and no rendezvous
 * directory meet only when the test, as management, makes a socketpair
 * and gives each QEMU one end; then RC data moves both ways, through
 * the connection and nothing else (no directory, nothing to scan).  The
 * command refuses a device without the transport, a descriptor that is
 * not a SOCK_SEQPACKET socket and a name getfd never gave.  Postcopy is
 * refused as with a rendezvous directory (the peer writes our RAM where
 * userfaultfd cannot see).  When b's QEMU goes, PVRDMA_PEER_LOST names it
 * by the name management gave, with its pid.
 */
static void test_cr_peer_add(void)
{
    Peer a, b;
    QPvrdma *n;
    char *err = NULL;
    int sv[2];

    peer_start_props(&a, 0, ",coresident=on");
    peer_start_props(&b, 1, ",coresident=on");
    g_usleep(100 * 1000);
    g_assert_cmpuint(peer_count(a.d), ==, 0);
    g_assert_cmpint(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv),
                    ==, 0);
    qobject_unref(give_peer(a.d, sv[0], "vm1"));
    qobject_unref(give_peer(b.d, sv[1], "vm0"));
    close(sv[0]);
    close(sv[1]);
    wait_peers(a.d, 1);
    wait_peers(b.d, 1);
    peers_connect(&a, &b, PVRDMA_QPT_RC, 7);
    peers_send(&a, &b, 1, 3, 1, 9000, 5);
    qpvrdma_send_wr(b.d, &b.qp, PVRDMA_WR_RDMA_WRITE, 0xb2, b.buf + 100,
                    5000, b.key, a.buf + 8000, a.key);
    expect_peer_cqe(&b, 0xb2, PVRDMA_WC_RDMA_WRITE, PVRDMA_WC_SUCCESS, 5000);
    peers_same(&b, 100, &a, 8000, 5000);

    /* no postcopy: the peer writes our RAM where userfaultfd cannot see */
    if (qpvrdma_migrate_postcopy(a.d, &err)) {
        g_assert_nonnull(err);
        g_assert(strstr(err, "postcopy-ram is not supported with "
                        "coresident=on"));
    }
    g_clear_pointer(&err, g_free);

    /* a stream socket, an unknown name */
    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv),
                    ==, 0);
    qmp_error_has(give_peer(a.d, sv[0], "stream"),
                  "not a unix SOCK_SEQPACKET socket");
    close(sv[0]);
    close(sv[1]);
    qmp_error_has(qtest_qmp(a.d->qts, "{ 'execute': 'x-pvrdma-peer-add', "
                            "'arguments': { 'fd': 'nosuch' } }"), "nosuch");
    g_assert_cmpuint(peer_count(a.d), ==, 1);

    /* a device without the co-resident transport */
    n = qpvrdma_start_active("");
    g_assert_cmpint(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv),
                    ==, 0);
    qmp_error_has(give_peer(n, sv[0], "p"), "has no co-resident transport");
    close(sv[0]);
    close(sv[1]);
    qpvrdma_stop(n);

    /* b's QEMU goes: a names it as management did, with its pid */
    qpvrdma_stop(b.d);
    wait_peers(a.d, 0);
    {
        QDict *ev = qtest_qmp_eventwait_ref(a.d->qts, "PVRDMA_PEER_LOST");
        QDict *data = qdict_get_qdict(ev, "data");

        g_assert_cmpstr(qdict_get_str(data, "peer"), ==, "vm1");
        g_assert_cmpint(qdict_get_int(data, "pid"), >, 0);
        qobject_unref(ev);
    }
    qpvrdma_stop(a.d);
}

/* query-pvrdma's entry for QP qpn of d's one device, or NULL. */
static QDict *query_qp(QDict *dev, uint32_t qpn)
{
    QList *qps = qdict_get_qlist(dev, "qps");

    for (const QListEntry *e = qlist_first(qps); e; e = qlist_next(e)) {
        QDict *q = qobject_to(QDict, qlist_entry_obj(e));

        if (qdict_get_int(q, "qpn") == qpn) {
            return q;
        }
    }
    return NULL;
}

/*
 * query-pvrdma and info pvrdma on a co-resident pair: a's device, its
 * transports (the co-resident one with its peer), its RC QP on the
 * co-resident path towards b's GID and QP number, typed.
 */
static void test_cr_query(void)
{
    g_autofree char *dir = g_dir_make_tmp("pvrdma-cr-XXXXXX", NULL);
    char gid[INET6_ADDRSTRLEN];
    bool loopback = false, coresident = false;
    QDict *rsp, *dev, *q;
    QList *list, *tps;
    Peer a, b;
    char *txt;

    peers_up(&a, &b, dir, PVRDMA_QPT_RC, 7);
    peers_send(&a, &b, 1, 0, 0, 100, 3);
    rsp = qtest_qmp(a.d->qts, "{ 'execute': 'query-pvrdma' }");
    list = qdict_get_qlist(rsp, "return");
    g_assert_cmpuint(qlist_size(list), ==, 1);
    dev = qobject_to(QDict, qlist_peek(list));
    g_assert_cmpstr(qdict_get_str(dev, "id"), ==, "pvrdma0");
    g_assert_cmpstr(qdict_get_str(dev, "qom-path"), ==,
                    "/machine/peripheral/pvrdma0");
    g_assert_true(qdict_get_bool(dev, "active"));
    g_assert_true(qdict_get_bool(dev, "port-active"));
    tps = qdict_get_qlist(dev, "transports");
    for (const QListEntry *e = qlist_first(tps); e; e = qlist_next(e)) {
        QDict *t = qobject_to(QDict, qlist_entry_obj(e));
        const char *type = qdict_get_str(t, "type");

        if (!strcmp(type, "coresident")) {
            coresident = true;
            g_assert_cmpint(qdict_get_int(t, "peers"), ==, 1);
        } else if (!strcmp(type, "loopback")) {
            loopback = true;
            g_assert_false(qdict_haskey(t, "peers"));
        }
        g_assert_false(qdict_haskey(t, "stats"));   /* neither counts */
    }
    g_assert_true(loopback && coresident);
    q = query_qp(dev, a.qp.qpn);
    g_assert_nonnull(q);
    g_assert_cmpstr(qdict_get_str(q, "type"), ==, "rc");
    g_assert_cmpstr(qdict_get_str(q, "state"), ==, "rts");
    g_assert_cmpstr(qdict_get_str(q, "path"), ==, "coresident");
    g_assert_cmpint(qdict_get_int(q, "peer-qpn"), ==, b.qp.qpn);
    /* an IPv4-mapped GID (RoCEv2's), as its IPv4 address */
    inet_ntop(AF_INET, peer_gid[1] + 12, gid, sizeof(gid));
    g_assert_cmpstr(qdict_get_str(q, "peer-gid"), ==, gid);
    g_assert_false(qdict_haskey(q, "stats"));
    qobject_unref(rsp);

    /* the same for people */
    txt = qtest_hmp(a.d->qts, "info pvrdma");
    g_assert_nonnull(strstr(txt, "pvrdma0 (/machine/peripheral/pvrdma0): "
                            "active, port up"));
    g_assert_nonnull(strstr(txt, "transport coresident peers 1"));
    {
        g_autofree char *line = g_strdup_printf("qp %u rc rts path coresident "
                                                "peer %s qp %u", a.qp.qpn, gid,
                                                b.qp.qpn);

        g_assert_nonnull(strstr(txt, line));
    }
    g_free(txt);

    qpvrdma_stop(b.d);
    qpvrdma_stop(a.d);
    rm_dir(dir);
}

/* A machine without the device: an empty list, and HMP says so. */
static void test_query_none(void)
{
    QTestState *qts = qtest_init("-nodefaults");
    QDict *rsp = qtest_qmp(qts, "{ 'execute': 'query-pvrdma' }");
    char *txt;

    g_assert_cmpuint(qlist_size(qdict_get_qlist(rsp, "return")), ==, 0);
    qobject_unref(rsp);
    txt = qtest_hmp(qts, "info pvrdma");
    g_assert_cmpstr(txt, ==, "no pvrdma device\r\n");
    g_free(txt);
    qtest_quit(qts);
}

static void test_cr_access(void)
{
    g_autofree char *dir = g_dir_make_tmp("pvrdma-cr-XXXXXX", NULL);
    Peer a, b;
    uint32_t ro;

    peers_up(&a, &b, dir, PVRDMA_QPT_RC, 7);
    /* a WRITE to a read-only MR of b: access error, b untouched */
    ro = qpvrdma_create_mr(b.d, b.pd, b.buf, 4096, PVRDMA_ACCESS_REMOTE_READ);
    peer_fill(&b, 0, 64, 1);
    peer_fill(&a, 0, 64, 2);
    qpvrdma_send_wr(a.d, &a.qp, PVRDMA_WR_RDMA_WRITE, 1, a.buf, 64, a.key, b.buf, ro);
    expect_peer_cqe(&a, 1, 0, PVRDMA_WC_REM_ACCESS_ERR, 0);
    g_assert_cmpuint(qtest_readb(b.d->qts, b.buf), ==, 1);
    qpvrdma_stop(a.d);
    qpvrdma_stop(b.d);

    /* a READ past the end of b's MR */
    peers_up(&a, &b, dir, PVRDMA_QPT_RC, 7);
    qpvrdma_send_wr(a.d, &a.qp, PVRDMA_WR_RDMA_READ, 2, a.buf, 64, a.key,
            b.buf + 4 * 4096 - 32, b.key);
    expect_peer_cqe(&a, 2, 0, PVRDMA_WC_REM_ACCESS_ERR, 0);
    qpvrdma_stop(a.d);
    qpvrdma_stop(b.d);
    rm_dir(dir);
}

static void test_cr_ud(void)
{
    g_autofree char *dir = g_dir_make_tmp("pvrdma-cr-XXXXXX", NULL);
    struct pvrdma_sq_wqe_hdr h = { 0 };
    struct pvrdma_sge s;
    struct pvrdma_cqe e;
    uint8_t grh[40];
    Peer a, b;

    peers_up(&a, &b, dir, PVRDMA_QPT_UD, 7);
    peer_fill(&a, 0, 4096, 9);
    qpvrdma_post_recv(b.d, &b.qp, 0xb1, b.buf, 40 + 1024, b.key);
    h.wr_id = 0xa1;
    h.num_sge = 1;
    h.opcode = PVRDMA_WR_SEND_WITH_IMM;
    h.send_flags = PVRDMA_SEND_SIGNALED;
    h.ex.imm_data = 0x5555;
    h.wr.ud.remote_qpn = b.qp.qpn;
    h.wr.ud.remote_qkey = 0x11111111;
    memcpy(h.wr.ud.av.dgid, peer_gid[1], 16);
    s = (struct pvrdma_sge) { a.buf, 1024, a.key };
    qpvrdma_post_send(a.d, &a.qp, &h, &s, true);
    expect_peer_cqe(&a, 0xa1, PVRDMA_WC_SEND, PVRDMA_WC_SUCCESS, 1024);
    for (int i = 0; i < 200 && !qpvrdma_poll_cq(b.d, &b.cq, &e); i++) {
        g_usleep(5 * 1000);
        e.wr_id = 0;
    }
    g_assert_cmphex(e.wr_id, ==, 0xb1);
    g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
    g_assert_cmpuint(e.byte_len, ==, 40 + 1024);
    g_assert_cmpuint(e.src_qp, ==, a.qp.qpn);
    g_assert_cmphex(e.imm_data, ==, 0x5555);
    g_assert(e.wc_flags & PVRDMA_WC_GRH);
    peers_same(&a, 0, &b, 40, 1024);
    qtest_memread(b.d->qts, b.buf, grh, 40);
    g_assert_cmphex(grh[20], ==, 0x45);
    g_assert(memcmp(grh + 32, peer_gid[0] + 12, 4) == 0);   /* source IP */

    /* to a GID nobody has: the datagram is lost, the send completes */
    h.wr_id = 0xa2;
    h.wr.ud.av.dgid[15] = 99;
    qpvrdma_post_send(a.d, &a.qp, &h, &s, true);
    expect_peer_cqe(&a, 0xa2, PVRDMA_WC_SEND, PVRDMA_WC_SUCCESS, 1024);
    qpvrdma_stop(a.d);
    qpvrdma_stop(b.d);
    rm_dir(dir);
}

static void test_cr_peer_gone(void)
{
    g_autofree char *dir = g_dir_make_tmp("pvrdma-cr-XXXXXX", NULL);
    Peer a, b;

    peers_up(&a, &b, dir, PVRDMA_QPT_RC, 7);
    /* a SEND waits at b for a receive (RNR, retry forever); b goes away */
    qpvrdma_send_wr(a.d, &a.qp, PVRDMA_WR_SEND, 0xa1, a.buf, 64, a.key, 0, 0);
    qpvrdma_send_wr(a.d, &a.qp, PVRDMA_WR_RDMA_WRITE, 0xa2, a.buf, 64, a.key, 0, 0);
    g_usleep(50 * 1000);
    qpvrdma_cq_empty(a.d, &a.cq);
    qpvrdma_stop(b.d);
    wait_peers(a.d, 0);
    /* the management program hears it */
    {
        QDict *ev = qtest_qmp_eventwait_ref(a.d->qts, "PVRDMA_PEER_LOST");
        QDict *data = qdict_get_qdict(ev, "data");

        g_assert_cmpstr(qdict_get_str(data, "qom-path"), ==,
                        "/machine/peripheral/pvrdma0");
        g_assert_cmpstr(qdict_get_str(data, "id"), ==, "pvrdma0");
        g_assert_nonnull(strstr(qdict_get_str(data, "peer"), dir));
        g_assert_true(g_str_has_suffix(qdict_get_str(data, "peer"), ".sock"));
        g_assert_cmpint(qdict_get_int(data, "pid"), >, 0);
        g_assert_cmpstr(qdict_get_str(data, "reason"), !=, "");
        qobject_unref(ev);
    }
    /*
     * Nobody answers any more: as on a wire, RETRY_EXC_ERR once a's
     * retries have run out (timeout 14, retry_cnt 7: 8 x 67 ms of the
     * virtual clock), not before.
     */
    qpvrdma_cq_empty(a.d, &a.cq);
    qtest_clock_step(a.d->qts, 535 * 1000 * 1000);
    qpvrdma_cq_empty(a.d, &a.cq);
    g_assert_cmpuint(qp_state(a.d, a.qp.handle), ==, PVRDMA_QPS_RTS);
    qtest_clock_step(a.d->qts, 1000 * 1000);
    expect_peer_cqe(&a, 0xa1, 0, PVRDMA_WC_RETRY_EXC_ERR, 0);
    expect_peer_cqe(&a, 0xa2, 0, PVRDMA_WC_WR_FLUSH_ERR, 0);
    g_assert_cmpuint(qp_state(a.d, a.qp.handle), ==, PVRDMA_QPS_ERR);
    wait_peers(a.d, 0);

    /* a new peer joins the same directory: traffic works again */
    peer_start(&b, dir, 1);
    wait_peers(a.d, 1);
    peers_connect(&a, &b, PVRDMA_QPT_RC, 7);
    peers_send(&a, &b, 3, 0, 1024, 256, 3);
    qpvrdma_stop(a.d);
    qpvrdma_stop(b.d);
    rm_dir(dir);
}

static void test_cr_rnr_timeout(void)
{
    g_autofree char *dir = g_dir_make_tmp("pvrdma-cr-XXXXXX", NULL);
    Peer a, b;

    peers_up(&a, &b, dir, PVRDMA_QPT_RC, 1);
    /* no receive at b, rnr_retry 1: the sender gives up */
    qpvrdma_send_wr(a.d, &a.qp, PVRDMA_WR_SEND, 0xa1, a.buf, 64, a.key, 0, 0);
    for (int i = 0; i < 500; i++) {
        struct pvrdma_cqe e;

        /* b's RNR timer runs on b's virtual clock */
        qtest_clock_step(b.d->qts, 10 * 1000 * 1000);  /* 10 ms */
        if (qpvrdma_poll_cq(a.d, &a.cq, &e)) {
            g_assert_cmphex(e.wr_id, ==, 0xa1);
            g_assert_cmpuint(e.status, ==, PVRDMA_WC_RNR_RETRY_EXC_ERR);
            break;
        }
        g_assert_cmpint(i, <, 499);
        g_usleep(2 * 1000);
    }
    /* a receive posted later is not consumed by the failed send */
    qpvrdma_post_recv(b.d, &b.qp, 0xb1, b.buf, 64, b.key);
    qpvrdma_cq_empty(b.d, &b.cq);
    qpvrdma_stop(a.d);
    qpvrdma_stop(b.d);
    rm_dir(dir);
}

/* a's next CQE, stepping a's clock (its retry timer) and b's, 10 ms a turn */
static void peers_expect_cqe(Peer *a, Peer *b, uint64_t wr_id,
                             uint32_t status)
{
    struct pvrdma_cqe e;

    for (int i = 0;; i++) {
        g_assert_cmpint(i, <, 500);
        qtest_clock_step(a->d->qts, 10 * 1000 * 1000);
        qtest_clock_step(b->d->qts, 10 * 1000 * 1000);
        if (qpvrdma_poll_cq(a->d, &a->cq, &e)) {
            break;
        }
        g_usleep(2 * 1000);
    }
    g_assert_cmphex(e.wr_id, ==, wr_id);
    g_assert_cmpuint(e.status, ==, status);
}

/*
 * /pvrdma/data/destroy-under-traffic across two QEMUs: b is destroyed
 * while a's SENDs wait on it (RNR, rnr_retry 7): a's waiting SEND finds no
 * responder and fails with RETRY_EXC_ERR, the rest are flushed, and b's
 * device writes nothing for b after DESTROY_QP's response (the libqos
 * driver fails on a CQE of a QP it destroyed).  Then a is destroyed with
 * SENDs waiting on a new QP of b's device: nothing more for a, nothing for
 * either on b's side.
 */
static void test_cr_destroy_under_traffic(void)
{
    g_autofree char *dir = g_dir_make_tmp("pvrdma-cr-XXXXXX", NULL);
    Peer a, b;

    peers_up(&a, &b, dir, PVRDMA_QPT_RC, 7);
    qpvrdma_post_recv(b.d, &b.qp, 0xb0, b.buf, 64, b.key);
    for (int i = 0; i < 4; i++) {
        qpvrdma_send_wr(a.d, &a.qp, PVRDMA_WR_SEND, 0xa0 + i, a.buf + i * 64,
                        64, a.key, 0, 0);
    }
    expect_peer_cqe(&b, 0xb0, PVRDMA_WC_RECV, PVRDMA_WC_SUCCESS, 64);
    expect_peer_cqe(&a, 0xa0, PVRDMA_WC_SEND, PVRDMA_WC_SUCCESS, 64);
    g_assert_cmpuint(qpvrdma_destroy(b.d, PVRDMA_CMD_DESTROY_QP,
                                     b.qp.handle), ==, 0);
    peers_expect_cqe(&a, &b, 0xa1, PVRDMA_WC_RETRY_EXC_ERR);
    peers_expect_cqe(&a, &b, 0xa2, PVRDMA_WC_WR_FLUSH_ERR);
    peers_expect_cqe(&a, &b, 0xa3, PVRDMA_WC_WR_FLUSH_ERR);
    qpvrdma_cq_empty(b.d, &b.cq);

    /* a new pair; a destroyed while its SENDs wait on b's new QP */
    g_assert_cmpuint(qpvrdma_destroy(a.d, PVRDMA_CMD_DESTROY_QP,
                                     a.qp.handle), ==, 0);
    peers_connect(&a, &b, PVRDMA_QPT_RC, 7);
    for (int i = 0; i < 4; i++) {
        qpvrdma_send_wr(a.d, &a.qp, PVRDMA_WR_SEND, 0xc0 + i, a.buf, 64,
                        a.key, 0, 0);
    }
    g_usleep(50 * 1000);
    qpvrdma_cq_empty(a.d, &a.cq);
    g_assert_cmpuint(qpvrdma_destroy(a.d, PVRDMA_CMD_DESTROY_QP,
                                     a.qp.handle), ==, 0);
    /* b's receive now: nothing of a's arrives, nothing completes for a */
    qpvrdma_post_recv(b.d, &b.qp, 0xb1, b.buf, 64, b.key);
    for (int i = 0; i < 50; i++) {
        qtest_clock_step(a.d->qts, 10 * 1000 * 1000);
        qtest_clock_step(b.d->qts, 10 * 1000 * 1000);
        g_usleep(2 * 1000);
    }
    qpvrdma_cq_empty(a.d, &a.cq);
    qpvrdma_cq_empty(b.d, &b.cq);
    qpvrdma_stop(a.d);
    qpvrdma_stop(b.d);
    rm_dir(dir);
}

/* Post MODIFY_QP of a's QP to RESET: ERR, without waiting for the answer */
static uint32_t post_modify_reset(Peer *a)
{
    struct pvrdma_cmd_modify_qp m = {
        .hdr.cmd = PVRDMA_CMD_MODIFY_QP,
        .qp_handle = a->qp.handle,
        .attr_mask = PVRDMA_QP_STATE,
        .attrs.qp_state = PVRDMA_QPS_RESET,
    };

    return qpvrdma_cmd_post(a->d, &m, sizeof(m));
}

static void expect_modify_answer(Peer *a)
{
    union pvrdma_cmd_resp r;

    qpvrdma_cmd_wait(a->d, &r);
    g_assert_cmphex(r.hdr.ack, ==, PVRDMA_CMD_RESP(PVRDMA_CMD_MODIFY_QP));
    g_assert_cmpuint(r.hdr.err, ==, 0);
    g_assert_cmpuint(qp_state(a->d, a->qp.handle), ==, PVRDMA_QPS_RESET);
}

/*
 * MODIFY_QP to RESET while a's SEND waits at b and b's QEMU does not run
 * (SIGSTOP): the command returns at once (ERR 0), its response waits for
 * b's answer to the fence (the guest may reuse the WQEs' memory after it)
 * and any other command meanwhile is refused (EBUSY).  b runs again: the
 * response comes.  Again with b stopped for good: the response comes at
 * the fence's bound (5 s of a's virtual clock), not before.
 */
static void test_cr_modify_reset_waits(void)
{
    g_autofree char *dir = g_dir_make_tmp("pvrdma-cr-XXXXXX", NULL);
    struct pvrdma_cmd_query_qp q = { .hdr.cmd = PVRDMA_CMD_QUERY_QP };
    Peer a, b;
    pid_t pb;

    peers_up(&a, &b, dir, PVRDMA_QPT_RC, 7);
    pb = qtest_pid(b.d->qts);
    for (int round = 0; round < 2; round++) {
        qpvrdma_send_wr(a.d, &a.qp, PVRDMA_WR_SEND, 0xa1, a.buf, 64, a.key,
                        0, 0);
        g_usleep(50 * 1000);            /* at b, waiting for a receive */
        qpvrdma_cq_empty(a.d, &a.cq);
        g_assert_cmpint(kill(pb, SIGSTOP), ==, 0);
        g_assert_cmpuint(post_modify_reset(&a), ==, 0);
        g_usleep(100 * 1000);
        g_assert_false(qpvrdma_cmd_answered(a.d));
        q.qp_handle = a.qp.handle;
        g_assert_cmpuint(qpvrdma_cmd_post(a.d, &q, sizeof(q)), ==, EBUSY);
        g_assert_false(qpvrdma_cmd_answered(a.d));
        if (round == 0) {
            g_assert_cmpint(kill(pb, SIGCONT), ==, 0);
        } else {
            qtest_clock_step(a.d->qts, 4990ll * 1000 * 1000);
            g_usleep(100 * 1000);
            g_assert_false(qpvrdma_cmd_answered(a.d));
            qtest_clock_step(a.d->qts, 10ll * 1000 * 1000);
        }
        expect_modify_answer(&a);
        qpvrdma_cq_empty(a.d, &a.cq);   /* RESET: no completion */
        if (round == 1) {
            g_assert_cmpint(kill(pb, SIGCONT), ==, 0);
        }
        g_assert_cmpuint(qpvrdma_destroy(a.d, PVRDMA_CMD_DESTROY_QP,
                                         a.qp.handle), ==, 0);
        g_assert_cmpuint(qpvrdma_destroy(b.d, PVRDMA_CMD_DESTROY_QP,
                                         b.qp.handle), ==, 0);
        peers_connect(&a, &b, PVRDMA_QPT_RC, 7);
    }
    /* traffic works on the new pair */
    peers_send(&a, &b, 1, 0, 0, 1024, 5);
    qpvrdma_stop(a.d);
    qpvrdma_stop(b.d);
    rm_dir(dir);
}

/*
 * A peer's request is served from an fd handler, not the bottom half: with
 * b's MSI-X vectors aimed at b's own CTL register (data RESET), the
 * completion it raises must not reset b under the responder.
 */
/*
 * rendezvous-secret: devices with the same secret object meet and work;
 * one with another secret, or none, is refused by both and sees no peer.
 */
static void test_cr_secret(void)
{
    g_autofree char *dir = g_dir_make_tmp("pvrdma-cr-XXXXXX", NULL);
    Peer a, b, c, n;

    peer_start_secret(&a, dir, 0, "open-sesame");
    peer_start_secret(&b, dir, 1, "open-sesame");
    wait_peers(a.d, 1);
    wait_peers(b.d, 1);
    peers_connect(&a, &b, PVRDMA_QPT_RC, 7);
    peers_send(&a, &b, 1, 0, 0, 4096, 9);

    peer_start_secret(&c, dir, 2, "open-sesame!");
    peer_start_secret(&n, dir, 3, NULL);
    for (int i = 0; i < 30; i++) {      /* give the handshakes time */
        g_assert_cmpuint(peer_count(c.d), ==, 0);
        g_assert_cmpuint(peer_count(n.d), ==, 0);
        g_usleep(10 * 1000);
    }
    g_assert_cmpuint(peer_count(a.d), ==, 1);
    g_assert_cmpuint(peer_count(b.d), ==, 1);
    qpvrdma_stop(n.d);
    qpvrdma_stop(c.d);
    qpvrdma_stop(b.d);
    qpvrdma_stop(a.d);
    rm_dir(dir);
}

static void test_cr_msix_at_own_registers(void)
{
    g_autofree char *dir = g_dir_make_tmp("pvrdma-cr-XXXXXX", NULL);
    uint64_t regs;
    Peer a, b;

    peers_up(&a, &b, dir, PVRDMA_QPT_RC, 7);
    regs = qpci_config_readl(b.d->dev, PCI_BASE_ADDRESS_0 +
                             4 * PVRDMA_BAR_REGS) & ~0xfull;
    qpvrdma_uar_write(b.d, 0, PVRDMA_UAR_CQ_OFFSET,
                      PVRDMA_UAR_CQ_ARM | b.cq.handle);
    for (unsigned v = 0; v < PVRDMA_MAX_INTERRUPTS; v++) {
        qpvrdma_msix_vector(b.d, v, regs + PVRDMA_REG_CTL,
                            PVRDMA_DEVICE_CTL_RESET);
    }
    peer_fill(&a, 0, 64, 4);
    qpvrdma_post_recv(b.d, &b.qp, 0xb1, b.buf, 64, b.key);
    qpvrdma_send_wr(a.d, &a.qp, PVRDMA_WR_SEND, 0xa1, a.buf, 64, a.key, 0, 0);
    expect_peer_cqe(&a, 0xa1, PVRDMA_WC_SEND, PVRDMA_WC_SUCCESS, 64);
    /* b did not reset itself: its objects are there */
    g_assert_cmpuint(qpvrdma_counter(b.d, "x-used-qp"), ==, 1);
    g_assert_cmpuint(qpvrdma_counter(b.d, "x-used-cq"), ==, 1);
    for (unsigned v = 0; v < PVRDMA_MAX_INTERRUPTS; v++) {
        qpvrdma_msix_vector(b.d, v, b.d->msix_addr + 4 * v, 0x5a5a0000u | v);
    }
    g_assert_cmpuint(qp_state(b.d, b.qp.handle), ==, PVRDMA_QPS_RTS);
    expect_peer_cqe(&b, 0xb1, PVRDMA_WC_RECV, PVRDMA_WC_SUCCESS, 64);
    peers_same(&a, 0, &b, 0, 64);
    qpvrdma_stop(a.d);
    qpvrdma_stop(b.d);
    rm_dir(dir);
}

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
static int64_t guest_errors(QPvrdma *d)
{
    QDict *r = qtest_qmp(d->qts, "{ 'execute': 'query-pvrdma' }");
    QDict *dev = qobject_to(QDict, qlist_peek(qdict_get_qlist(r, "return")));
    int64_t n = qdict_get_int(dev, "guest-errors");

    qobject_unref(r);
    return n;
}

/*
 * PVRDMA_GUEST_ERROR: none for a clean run (activation, a QP pair, data
 * both ways, teardown), one naming what was wrong for a bad command and
 * for a doorbell of no QP, and query-pvrdma's guest-errors counts them.
 */
static void test_guest_error_event(void)
{
    Pair p;
    QPvrdma *d;
    union pvrdma_cmd_req bad = { .hdr.cmd = 99 };
    uint64_t src, dst;
    uint32_t key;
    QDict *ev;

    pair_setup(&p, PVRDMA_QPT_RC, 8);
    d = p.d;
    src = qpvrdma_alloc(d, 4096);
    dst = qpvrdma_alloc(d, 4096);
    key = qpvrdma_create_mr(d, p.pd, src, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    qpvrdma_create_mr(d, p.pd, dst, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    pair_exchange(&p, src, dst, key, 1, 9);
    same(d, src, dst, 4096);
    g_assert_cmpint(guest_errors(d), ==, 0);
    g_assert_null(qtest_qmp_event_ref(d->qts, "PVRDMA_GUEST_ERROR"));

    g_assert_cmpuint(qpvrdma_cmd(d, &bad, sizeof(bad), NULL), ==, EINVAL);
    ev = qtest_qmp_eventwait_ref(d->qts, "PVRDMA_GUEST_ERROR");
    g_assert_cmpstr(qdict_get_str(qdict_get_qdict(ev, "data"), "message"),
                    ==, "unknown command 99");
    g_assert_cmpint(qdict_get_int(qdict_get_qdict(ev, "data"), "count"), ==,
                    1);
    g_assert_cmpstr(qdict_get_str(qdict_get_qdict(ev, "data"), "qom-path"),
                    ==, "/machine/peripheral/pvrdma0");
    qobject_unref(ev);
    /* a send doorbell for a QP that does not exist: within the second */
    qpvrdma_uar_write(d, 0, PVRDMA_UAR_QP_OFFSET, PVRDMA_UAR_QP_SEND | 0xfff);
    g_assert_cmpint(guest_errors(d), ==, 2);
    qtest_clock_step(d->qts, 1100ll * 1000 * 1000);     /* the rate limit */
    ev = qtest_qmp_eventwait_ref(d->qts, "PVRDMA_GUEST_ERROR");
    g_assert_cmpint(qdict_get_int(qdict_get_qdict(ev, "data"), "count"), ==,
                    2);
    qobject_unref(ev);
    qpvrdma_stop(d);
}

/* ------------------------------------------------------------------ */
/* Fault and event injection (x-pvrdma-inject)                         */

/* x-pvrdma-inject with ARGS (a JSON object's members); its error or NULL */
static char *inject(QPvrdma *d, const char *args)
{
    g_autofree char *json = g_strdup_printf("{ %s }", args);
    QObject *a = qobject_from_json(json, &error_abort);
    QDict *r = qtest_qmp(d->qts, "{ 'execute': 'x-pvrdma-inject', "
                         "'arguments': %p }", a);
    char *err = NULL;

    if (qdict_haskey(r, "error")) {
        err = g_strdup(qdict_get_str(qdict_get_qdict(r, "error"), "desc"));
    } else {
        g_assert(qdict_haskey(r, "return"));
    }
    qobject_unref(r);
    return err;
}

static void inject_ok(QPvrdma *d, const char *args)
{
    g_autofree char *err = inject(d, args);

    g_assert_null(err);
}

static void inject_refused(QPvrdma *d, const char *args, const char *want)
{
    g_autofree char *err = inject(d, args);

    g_assert_nonnull(err);
    g_assert_nonnull(strstr(err, want));
}

/* The device's injections in query-pvrdma: "kind:left:fired ..." */
static char *injections(QPvrdma *d)
{
    QDict *r = qtest_qmp(d->qts, "{ 'execute': 'query-pvrdma' }");
    QList *devs = qdict_get_qlist(r, "return");
    QDict *dev = qobject_to(QDict, qlist_peek(devs));
    GString *out = g_string_new("");
    QListEntry *e;

    QLIST_FOREACH_ENTRY(qdict_get_qlist(dev, "injections"), e) {
        QDict *i = qobject_to(QDict, qlist_entry_obj(e));

        g_string_append_printf(out, "%s%s:%" PRId64 ":%" PRId64,
                               out->len ? " " : "",
                               qdict_get_str(i, "kind"),
                               qdict_get_int(i, "left"),
                               qdict_get_int(i, "fired"));
    }
    qobject_unref(r);
    return g_string_free(out, false);
}

/* The async event NAME about handle h: posted as type, with h as info */
static void inject_event(QPvrdma *d, const char *name, uint32_t h,
                         uint32_t type)
{
    g_autofree char *args = g_strdup_printf(
        "'kind': 'async-event', 'event': '%s', 'handle': %u", name, h);

    inject_ok(d, args);
    g_assert(async_seen(d, type, h));
}

/* A pair with two MRs (src, dst) and one SEND done: p->d is the device */
static void inject_pair(Pair *p, uint64_t *src, uint64_t *dst, uint32_t *key)
{
    g_autofree char *list = NULL;

    pair_setup(p, PVRDMA_QPT_RC, 8);
    *src = qpvrdma_alloc(p->d, 4096);
    *dst = qpvrdma_alloc(p->d, 4096);
    *key = qpvrdma_create_mr(p->d, p->pd, *src, 4096,
                             PVRDMA_ACCESS_LOCAL_WRITE);
    qpvrdma_create_mr(p->d, p->pd, *dst, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    pair_exchange(p, *src, *dst, *key, 1, 3);
    list = injections(p->d);
    g_assert_cmpstr(list, ==, "");
}

/*
 * Command faults over QMP, as the guest sees them: a command failing with
 * the errno (and running again after), a response that comes late
 * (virtual time), one that never comes; what query-pvrdma lists.
 */
static void test_inject_commands(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    struct pvrdma_cmd_create_pd cp = { .hdr.cmd = PVRDMA_CMD_CREATE_PD };
    struct pvrdma_cmd_query_port qp = { .hdr.cmd = PVRDMA_CMD_QUERY_PORT,
                                        .port_num = 1 };
    union pvrdma_cmd_resp r;
    g_autofree char *list = NULL;

    inject_ok(d, "'kind': 'command-error', 'opcode': 'create-pd', "
              "'status': 12, 'count': 2");
    g_assert_cmpuint(qpvrdma_cmd(d, &cp, sizeof(cp), &r), ==, 12);
    g_assert_cmpuint(qpvrdma_cmd(d, &cp, sizeof(cp), &r), ==, 12);
    qpvrdma_cmd_ok(d, &cp, sizeof(cp), &r);

    /* command-delay: the response comes 500 ms of virtual time later */
    inject_ok(d, "'kind': 'command-delay', 'opcode': 'query-port', "
              "'delay-ms': 500");
    qtest_memwrite(d->qts, d->cmd, &qp, sizeof(qp));
    qtest_memset(d->qts, d->resp, 0xee, sizeof(r));
    qpvrdma_vector_seen(d, PVRDMA_INTR_VECTOR_RESPONSE);
    qpvrdma_reg_write(d, PVRDMA_REG_REQUEST, 0);
    g_assert_cmpuint(qpvrdma_reg_read(d, PVRDMA_REG_ERR), ==, 0);
    qtest_clock_step(d->qts, 400 * 1000 * 1000);
    g_assert(!qpvrdma_vector_seen(d, PVRDMA_INTR_VECTOR_RESPONSE));
    g_assert_cmphex(qtest_readl(d->qts, d->resp + 4), ==, 0xeeeeeeee);
    qtest_clock_step(d->qts, 200 * 1000 * 1000);
    g_assert(qpvrdma_vector_seen(d, PVRDMA_INTR_VECTOR_RESPONSE));
    qtest_memread(d->qts, d->resp, &r, sizeof(r));
    g_assert_cmphex(r.hdr.ack, ==, PVRDMA_CMD_RESP(PVRDMA_CMD_QUERY_PORT));
    g_assert_cmpuint(r.query_port_resp.attrs.state, ==, PVRDMA_PORT_ACTIVE);

    /* command-drop: no response and no interrupt, ever */
    inject_ok(d, "'kind': 'command-drop', 'opcode': 'query-port'");
    qtest_memset(d->qts, d->resp, 0xee, sizeof(r));
    qpvrdma_reg_write(d, PVRDMA_REG_REQUEST, 0);
    g_assert_cmpuint(qpvrdma_reg_read(d, PVRDMA_REG_ERR), ==, 0);
    qtest_clock_step(d->qts, 20ll * 1000 * 1000 * 1000);
    g_assert(!qpvrdma_vector_seen(d, PVRDMA_INTR_VECTOR_RESPONSE));
    g_assert_cmphex(qtest_readl(d->qts, d->resp + 4), ==, 0xeeeeeeee);

    list = injections(d);
    g_assert_cmpstr(list, ==, "command-error:0:2 command-delay:0:1 "
                    "command-drop:0:1");
    inject_refused(d, "'kind': 'command-error', 'opcode': 'create-pd'",
                   "needs 'status'");
    inject_refused(d, "'kind': 'command-drop'", "needs 'opcode'");
    qpvrdma_stop(d);
}

/* completion-error: a's next send fails, what follows is flushed */
static void test_inject_completion(void)
{
    Pair p;
    uint64_t src, dst;
    uint32_t key;
    g_autofree char *args = NULL, *list = NULL;

    inject_pair(&p, &src, &dst, &key);
    args = g_strdup_printf("'kind': 'completion-error', 'handle': %u, "
                           "'status': %u", p.a.handle,
                           PVRDMA_WC_RETRY_EXC_ERR);
    inject_ok(p.d, args);
    qpvrdma_post_recv(p.d, &p.b, 0xb2, dst, 4096, key + 256);
    qpvrdma_send_wr(p.d, &p.a, PVRDMA_WR_SEND, 0xa2, src, 64, key, 0, 0);
    qpvrdma_expect_cqe(p.d, &p.cq, 0xb2, PVRDMA_WC_RECV, PVRDMA_WC_SUCCESS,
                       64);
    qpvrdma_expect_cqe(p.d, &p.cq, 0xa2, PVRDMA_WC_SEND,
                       PVRDMA_WC_RETRY_EXC_ERR, 0);
    qpvrdma_send_wr(p.d, &p.a, PVRDMA_WR_SEND, 0xa3, src, 64, key, 0, 0);
    qpvrdma_expect_cqe(p.d, &p.cq, 0xa3, PVRDMA_WC_SEND,
                       PVRDMA_WC_WR_FLUSH_ERR, 0);
    g_assert_cmpuint(qp_state(p.d, p.a.handle), ==, PVRDMA_QPS_ERR);
    g_assert_cmpuint(qp_state(p.d, p.b.handle), ==, PVRDMA_QPS_RTS);
    list = injections(p.d);
    g_assert_cmpstr(list, ==, "completion-error:0:1");
    inject_refused(p.d, "'kind': 'completion-error', 'handle': 999, "
                   "'status': 12", "no QP");
    qpvrdma_stop(p.d);
}

/*
 * async-event: every kind; the QP events fail the QP (as the device's
 * own faults do), the others are only told.
 */
static void test_inject_events(void)
{
    static const struct { const char *name; uint32_t type; } qpev[] = {
        { "qp-fatal", PVRDMA_EVENT_QP_FATAL },
        { "qp-req-err", PVRDMA_EVENT_QP_REQ_ERR },
        { "qp-access-err", PVRDMA_EVENT_QP_ACCESS_ERR },
    };
    Pair p;
    struct pvrdma_cmd_create_srq c = { .hdr.cmd = PVRDMA_CMD_CREATE_SRQ,
                                       .nchunks = 2 };
    union pvrdma_cmd_resp r;
    QPvrdmaRing ring;
    QPvrdmaQp q;
    uint32_t srq;

    pair_setup(&p, PVRDMA_QPT_RC, 8);
    for (unsigned i = 0; i < ARRAY_SIZE(qpev); i++) {
        qpvrdma_create_qp(p.d, &q, p.pd, p.cq.handle, p.cq.handle,
                          PVRDMA_QPT_RC, 4, 0);
        qpvrdma_qp_to_rts(p.d, &q, PVRDMA_QPT_RC, p.a.qpn);
        inject_event(p.d, qpev[i].name, q.handle, qpev[i].type);
        g_assert_cmpuint(qp_state(p.d, q.handle), ==, PVRDMA_QPS_ERR);
    }
    g_assert_cmpuint(qp_state(p.d, p.a.handle), ==, PVRDMA_QPS_RTS);
    inject_event(p.d, "cq-err", p.cq.handle, PVRDMA_EVENT_CQ_ERR);
    /* by a QP's number: its send CQ (what an application knows) */
    {
        g_autofree char *args = g_strdup_printf(
            "'kind': 'async-event', 'event': 'cq-err', 'handle': %u, "
            "'of-qp': true", p.a.qpn);

        unsigned n = async_count(p.d, PVRDMA_EVENT_CQ_ERR, p.cq.handle);

        inject_ok(p.d, args);
        g_assert_cmpuint(async_count(p.d, PVRDMA_EVENT_CQ_ERR, p.cq.handle),
                         ==, n + 1);
    }
    inject_refused(p.d, "'kind': 'async-event', 'event': 'qp-fatal', "
                   "'handle': 1, 'of-qp': true", "of-qp applies");
    qpvrdma_ring_alloc(p.d, &ring, 2);
    c.pdir_dma = ring.pdir;
    c.pd_handle = p.pd;
    c.attrs.max_wr = 16;
    c.attrs.max_sge = 1;
    qpvrdma_cmd_ok(p.d, &c, sizeof(c), &r);
    srq = r.create_srq_resp.srqn;
    inject_event(p.d, "srq-err", srq, PVRDMA_EVENT_SRQ_ERR);
    inject_event(p.d, "srq-limit-reached", srq,
                 PVRDMA_EVENT_SRQ_LIMIT_REACHED);
    inject_ok(p.d, "'kind': 'async-event', 'event': 'gid-change'");
    g_assert(async_seen(p.d, PVRDMA_EVENT_GID_CHANGE, 1));
    inject_ok(p.d, "'kind': 'async-event', 'event': 'device-fatal'");
    g_assert(async_seen(p.d, PVRDMA_EVENT_DEVICE_FATAL, 1));
    inject_refused(p.d, "'kind': 'async-event', 'event': 'qp-fatal', "
                   "'handle': 999", "no QP with handle 999");
    inject_refused(p.d, "'kind': 'async-event', 'event': 'srq-err', "
                   "'handle': 999", "no SRQ with handle 999");
    inject_refused(p.d, "'kind': 'async-event', 'handle': 1",
                   "needs 'event'");
    qpvrdma_stop(p.d);
}

/* port-down / port-up: QUERY_PORT, the async and QMP events */
static void test_inject_port(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    struct pvrdma_cmd_query_port qp = { .hdr.cmd = PVRDMA_CMD_QUERY_PORT,
                                        .port_num = 1 };
    union pvrdma_cmd_resp r;
    QDict *ev;

    inject_ok(d, "'kind': 'port-down'");
    g_assert(async_seen(d, PVRDMA_EVENT_PORT_ERR, 1));
    ev = qtest_qmp_eventwait_ref(d->qts, "PVRDMA_PORT_CHANGED");
    g_assert_false(qdict_get_bool(qdict_get_qdict(ev, "data"), "active"));
    qobject_unref(ev);
    qpvrdma_cmd_ok(d, &qp, sizeof(qp), &r);
    g_assert_cmpuint(r.query_port_resp.attrs.state, ==, PVRDMA_PORT_DOWN);
    inject_ok(d, "'kind': 'port-up'");
    g_assert(async_seen(d, PVRDMA_EVENT_PORT_ACTIVE, 1));
    qpvrdma_cmd_ok(d, &qp, sizeof(qp), &r);
    g_assert_cmpuint(r.query_port_resp.attrs.state, ==, PVRDMA_PORT_ACTIVE);
    inject_refused(d, "'id': 'nosuch', 'kind': 'port-down'",
                   "no pvrdma device 'nosuch'");
    qpvrdma_stop(d);
}

/* HMP: x_pvrdma_inject, info pvrdma lists what fired; clear by id */
static void test_inject_hmp(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    struct pvrdma_cmd_create_pd cp = { .hdr.cmd = PVRDMA_CMD_CREATE_PD };
    union pvrdma_cmd_resp r;
    char *out;

    out = qtest_hmp(d->qts, "x_pvrdma_inject command-error,"
                    "opcode=create-pd,status=5");
    g_assert_cmpstr(out, ==, "");
    g_free(out);
    g_assert_cmpuint(qpvrdma_cmd(d, &cp, sizeof(cp), &r), ==, 5);
    out = qtest_hmp(d->qts, "info pvrdma");
    g_assert_nonnull(strstr(out, "injected command-error create-pd status 5: "
                            "fired 1, 0 left"));
    g_free(out);
    out = qtest_hmp(d->qts, "x_pvrdma_inject completion-error,handle=999,"
                    "status=12");
    g_assert_nonnull(strstr(out, "no QP with handle 999"));
    g_free(out);
    inject_ok(d, "'id': 'pvrdma0', 'kind': 'clear'");
    out = injections(d);
    g_assert_cmpstr(out, ==, "");
    g_free(out);
    qpvrdma_stop(d);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/pvrdma/pci-ids", test_pci_ids);
    qtest_add_func("/pvrdma/activate", test_activate);
    qtest_add_func("/pvrdma/activate-errors", test_activate_errors);
    qtest_add_func("/pvrdma/cmd/query", test_query);
    qtest_add_func("/pvrdma/cmd/port-link", test_port_link);
    qtest_add_func("/pvrdma/cmd/uc-pd", test_uc_pd);
    qtest_add_func("/pvrdma/cmd/pd-exhaustion", test_pd_exhaustion);
    qtest_add_func("/pvrdma/cmd/mr", test_mr);
    qtest_add_func("/pvrdma/cmd/cq", test_cq);
    qtest_add_func("/pvrdma/cmd/qp-create", test_qp_create);
    qtest_add_func("/pvrdma/cmd/qp-modify", test_qp_modify);
    qtest_add_func("/pvrdma/cmd/bind", test_bind);
    qtest_add_func("/pvrdma/cmd/srq", test_srq);
    qtest_add_func("/pvrdma/cmd/old-driver", test_old_driver);
    qtest_add_func("/pvrdma/cmd/device-version", test_device_version);
    qtest_add_func("/pvrdma/inject/commands", test_inject_commands);
    qtest_add_func("/pvrdma/inject/completion", test_inject_completion);
    qtest_add_func("/pvrdma/inject/events", test_inject_events);
    qtest_add_func("/pvrdma/inject/port", test_inject_port);
    qtest_add_func("/pvrdma/inject/hmp", test_inject_hmp);
    qtest_add_func("/pvrdma/guest-error-event", test_guest_error_event);
    qtest_add_func("/pvrdma/data/send-recv", test_send_recv);
    qtest_add_func("/pvrdma/data/send-inline", test_send_inline);
    qtest_add_func("/pvrdma/data/rdma-ops", test_rdma_ops);
    qtest_add_func("/pvrdma/data/access-errors", test_access_errors);
    qtest_add_func("/pvrdma/data/fast-reg", test_fast_reg);
    qtest_add_func("/pvrdma/data/send-with-inv", test_send_with_inv);
    qtest_add_func("/pvrdma/data/ud", test_ud);
    qtest_add_func("/pvrdma/data/srq", test_srq_recv);
    qtest_add_func("/pvrdma/data/rnr-wait", test_rnr_wait);
    qtest_add_func("/pvrdma/data/destroy-under-traffic",
                   test_destroy_under_traffic);
    qtest_add_func("/pvrdma/data/ring-wrap", test_ring_wrap);
    qtest_add_func("/pvrdma/hostile/bad-ring-index", test_bad_ring_index);
    qtest_add_func("/pvrdma/irq/cq-notify", test_cq_notify);
    qtest_add_func("/pvrdma/irq/comm-est", test_comm_est);
    qtest_add_func("/pvrdma/irq/sq-drained", test_sq_drained);
    qtest_add_func("/pvrdma/irq/intx", test_intx);
    qtest_add_func("/pvrdma/reset-during-work", test_reset_during_work);
    qtest_add_func("/pvrdma/teardown", test_teardown);
    qtest_add_func("/pvrdma/migration/rc", test_migration_rc);
    qtest_add_func("/pvrdma/migration/coresident", test_migration_coresident);
    qtest_add_func("/pvrdma/migration/postcopy", test_migration_postcopy);
    qtest_add_func("/pvrdma/migration/savevm", test_migration_savevm);
    qtest_add_func("/pvrdma/migration/bg-snapshot",
                   test_migration_bg_snapshot);
    qtest_add_func("/pvrdma/migration/hostile", test_migration_hostile);
    if (getenv("PVRDMA_BENCH_MIG")) {
        qtest_add_func("/pvrdma/bench/migration", bench_migration);
    }
    if (getenv("PVRDMA_BENCH_IDLE")) {
        qtest_add_func("/pvrdma/bench/idle", bench_idle);
    }
    qtest_add_func("/pvrdma/coresident/rc", test_cr_rc);
    qtest_add_func("/pvrdma/coresident/query", test_cr_query);
    qtest_add_func("/pvrdma/query-none", test_query_none);
    qtest_add_func("/pvrdma/coresident/access", test_cr_access);
    qtest_add_func("/pvrdma/coresident/ud", test_cr_ud);
    qtest_add_func("/pvrdma/coresident/peer-gone", test_cr_peer_gone);
    qtest_add_func("/pvrdma/coresident/rnr-timeout", test_cr_rnr_timeout);
    qtest_add_func("/pvrdma/coresident/destroy-under-traffic",
                   test_cr_destroy_under_traffic);
    qtest_add_func("/pvrdma/coresident/modify-reset-waits",
                   test_cr_modify_reset_waits);
    qtest_add_func("/pvrdma/coresident/secret", test_cr_secret);
    qtest_add_func("/pvrdma/coresident/peer-add", test_cr_peer_add);
    qtest_add_func("/pvrdma/coresident/msix-at-own-registers",
                   test_cr_msix_at_own_registers);
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
    return g_test_run();
}
