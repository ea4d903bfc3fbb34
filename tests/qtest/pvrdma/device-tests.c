/*
 * QTest for the pvrdma device: PCI identity, activation, queries, MSI-X
 * and INTx, reset and teardown, older drivers and device versions (the
 * verbs commands are in commands-tests.c).
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
    g_assert_cmpuint(qpvrdma_modify_qp(d, b.handle, PVRDMA_QP_STATE, &at), ==,
                     0);
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
    g_assert_cmpuint(qpvrdma_modify_qp(d, b.handle,
                                       PVRDMA_QP_STATE | PVRDMA_QP_AV |
                                       PVRDMA_QP_PATH_MTU |
                                       PVRDMA_QP_DEST_QPN | PVRDMA_QP_RQ_PSN |
                                       PVRDMA_QP_MAX_DEST_RD_ATOMIC |
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
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 1, buf, 8, key, buf + 64,
                    key);
    qpvrdma_expect_cqe(d, &p.cq, 1, PVRDMA_WC_RDMA_WRITE,
                       PVRDMA_WC_REM_ACCESS_ERR, 0);
    g_assert(!qpvrdma_vector_seen(d, PVRDMA_INTR_VECTOR_CQ));
    qpvrdma_stop(d);

    pair_setup(&p, PVRDMA_QPT_RC, 8);
    d = p.d;
    buf = qpvrdma_alloc(d, 4096);
    key = qpvrdma_create_mr(d, p.pd, buf, 4096, PVRDMA_ACCESS_LOCAL_WRITE |
                    PVRDMA_ACCESS_REMOTE_WRITE);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 1, buf, 8, key, buf + 64,
                    key);
    qpvrdma_expect_cqe(d, &p.cq, 1, PVRDMA_WC_RDMA_WRITE, PVRDMA_WC_SUCCESS, 8);
    g_assert(!qpvrdma_vector_seen(d, PVRDMA_INTR_VECTOR_CQ));
    /* armed: the next completion notifies once, with the CQ handle */
    qpvrdma_uar_write(d, 0, PVRDMA_UAR_CQ_OFFSET,
                      PVRDMA_UAR_CQ_ARM | p.cq.handle);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 2, buf, 8, key, buf + 64,
                    key);
    qpvrdma_expect_cqe(d, &p.cq, 2, PVRDMA_WC_RDMA_WRITE, PVRDMA_WC_SUCCESS, 8);
    g_assert(qpvrdma_wait_vector(d, PVRDMA_INTR_VECTOR_CQ));
    g_assert_cmpuint(qtest_readl(d->qts, d->cq_pages[1]), ==, p.cq.handle);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 3, buf, 8, key, buf + 64,
                    key);
    qpvrdma_expect_cqe(d, &p.cq, 3, PVRDMA_WC_RDMA_WRITE, PVRDMA_WC_SUCCESS, 8);
    g_assert(!qpvrdma_vector_seen(d, PVRDMA_INTR_VECTOR_CQ));
    /* IMR masks the vector */
    qpvrdma_reg_write(d, PVRDMA_REG_IMR, ~0u);
    qpvrdma_uar_write(d, 0, PVRDMA_UAR_CQ_OFFSET,
                      PVRDMA_UAR_CQ_ARM | p.cq.handle);
    qpvrdma_send_wr(d, &p.a, PVRDMA_WR_RDMA_WRITE, 4, buf, 8, key, buf + 64,
                    key);
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

void pvrdma_add_device_tests(void)
{
    qtest_add_func("/pvrdma/pci-ids", test_pci_ids);
    qtest_add_func("/pvrdma/activate", test_activate);
    qtest_add_func("/pvrdma/activate-errors", test_activate_errors);
    qtest_add_func("/pvrdma/cmd/query", test_query);
    qtest_add_func("/pvrdma/cmd/port-link", test_port_link);
    qtest_add_func("/pvrdma/cmd/old-driver", test_old_driver);
    qtest_add_func("/pvrdma/cmd/device-version", test_device_version);
    qtest_add_func("/pvrdma/hostile/bad-ring-index", test_bad_ring_index);
    qtest_add_func("/pvrdma/irq/cq-notify", test_cq_notify);
    qtest_add_func("/pvrdma/irq/comm-est", test_comm_est);
    qtest_add_func("/pvrdma/irq/sq-drained", test_sq_drained);
    qtest_add_func("/pvrdma/irq/intx", test_intx);
    qtest_add_func("/pvrdma/reset-during-work", test_reset_during_work);
    qtest_add_func("/pvrdma/teardown", test_teardown);
}
