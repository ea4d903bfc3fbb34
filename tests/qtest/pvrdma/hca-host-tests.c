/*
 * QTest for the pvrdma device: host HCA mode (ibdev=), the host side:
 * the rdma_cm translation under hostile CM MADs, the host's locked-memory
 * limit and port state, a 1 GiB MR and the cost of fast registration.
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
 * command's wall time.
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
 * A benchmark (skipped unless PVRDMA_BENCH_FRMR=N, the number of
 * rounds; N=3 is enough as a check): what one
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

void pvrdma_add_hca_host_tests(void)
{
    qtest_add_func("/pvrdma/hca/mr-1g", test_hca_mr_1g);
    qtest_add_func("/pvrdma/hca/frmr-cost", test_hca_frmr_cost);
    qtest_add_func("/pvrdma/hca/host-port", test_hca_host_port);
    qtest_add_func("/pvrdma/hca/cm-hostile", test_hca_cm_hostile);
    qtest_add_func("/pvrdma/hca/memlock", test_hca_memlock);
}
