/*
 * QTest testcases for the pvrdma device through the qos graph: what a
 * test written elsewhere gets when it asks for a "pvrdma" node
 * (tests/qtest/libqos/pvrdma.c registers it).  The device's own suites
 * are pvrdma-test.c and pvrdma-hostile-test.c, which start the machine
 * themselves (migrations, several QEMUs).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "libqos/qgraph.h"
#include "libqos/pvrdma.h"

/*
 * The Linux driver's probe (DSR, rings, ACTIVATE), then a SEND between
 * two RC QPs of the device, compared byte for byte.
 */
static void test_probe_send(void *obj, void *data, QGuestAllocator *alloc)
{
    QPvrdma *d = ((QPvrdmaNode *)obj)->d;
    struct pvrdma_device_caps caps;
    QPvrdmaCq cq;
    QPvrdmaQp a, b;
    uint64_t src, dst;
    uint32_t pd, key;
    uint8_t out[256], in[256];

    g_assert_cmpuint(qpvrdma_reg_read(d, PVRDMA_REG_VERSION), ==,
                     PVRDMA_VERSION);
    qpvrdma_setup_dsr(d, PVRDMA_VERSION);
    g_assert_cmpuint(qpvrdma_activate(d), ==, 0);
    qpvrdma_read_caps(d, &caps);
    g_assert_cmpuint(caps.max_qp, >=, 2);

    qpvrdma_bind_gid(d, 0);
    pd = qpvrdma_create_pd(d, 0);
    qpvrdma_create_cq(d, &cq, 16);
    qpvrdma_create_qp(d, &a, pd, cq.handle, cq.handle, PVRDMA_QPT_RC, 4, 0);
    qpvrdma_create_qp(d, &b, pd, cq.handle, cq.handle, PVRDMA_QPT_RC, 4, 0);
    qpvrdma_qp_to_rts(d, &a, PVRDMA_QPT_RC, b.qpn);
    qpvrdma_qp_to_rts(d, &b, PVRDMA_QPT_RC, a.qpn);
    src = qpvrdma_alloc(d, 4096);
    dst = qpvrdma_alloc(d, 4096);
    key = qpvrdma_create_mr(d, pd, src, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    qpvrdma_create_mr(d, pd, dst, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    for (unsigned i = 0; i < sizeof(out); i++) {
        out[i] = i * 7 + 3;
    }
    qtest_memwrite(d->qts, src, out, sizeof(out));
    qpvrdma_post_recv(d, &b, 0xb1, dst, sizeof(out), key + 256);
    qpvrdma_send_wr(d, &a, PVRDMA_WR_SEND, 0xa1, src, sizeof(out), key, 0, 0);
    qpvrdma_expect_cqe(d, &cq, 0xb1, PVRDMA_WC_RECV, PVRDMA_WC_SUCCESS,
                       sizeof(out));
    qpvrdma_expect_cqe(d, &cq, 0xa1, PVRDMA_WC_SEND, PVRDMA_WC_SUCCESS,
                       sizeof(out));
    qtest_memread(d->qts, dst, in, sizeof(in));
    g_assert_cmpmem(in, sizeof(in), out, sizeof(out));
}

static void register_pvrdma_test(void)
{
    qos_add_test("probe-send", "pvrdma", test_probe_send, NULL);
}

libqos_init(register_pvrdma_test);
