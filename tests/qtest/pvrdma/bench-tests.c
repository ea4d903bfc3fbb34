/*
 * Benchmarks of the pvrdma device in QEMU, not tests: each registered only
 * when its environment variable asks for it, each printing figures: the
 * device's share of a migration's downtime (PVRDMA_BENCH_MIG), the CPU
 * two idle QEMUs with connected co-resident QPs use (PVRDMA_BENCH_IDLE),
 * the downtime registered memory adds (PVRDMA_BENCH_MR_MIB).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "qemu/bswap.h"
#include "qemu/cutils.h"
#include "libqos/pvrdma.h"
#include "hw/pci/pci_regs.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "qobject/qjson.h"
#include "qapi/error.h"
#include "pvrdma/framework.h"

/*
 * Not a test: the device's share of the downtime in a real QEMU, its
 * save and load times (trace events pvrdma_state_saved / _loaded, each
 * QEMU logging to its own -D file) for PVRDMA_BENCH_MIG connected QPs
 * with as many 16 KiB MRs, migrated to a second QEMU.  Registered only
 * when PVRDMA_BENCH_MIG is set; prints
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
    /* PVRDMA_BENCH_MIG_BLOB=1: the older builds' stream (x-state-blob) */
    extra = g_strdup_printf(",max-qp=%u,max-mr=%u%s -m 512M "
                            "-trace pvrdma_state_saved "
                            "-trace pvrdma_state_loaded "
                            "-trace vmstate_downtime_save "
                            "-trace vmstate_downtime_load -D %s/log-%%d",
                            n + 16, n + 16,
                            getenv("PVRDMA_BENCH_MIG_BLOB") ?
                            ",x-state-blob=on" : "", dir);
    if (getenv("PVRDMA_BENCH_MIG_NODESC")) {
        g_autofree char *e = extra;

        extra = g_strdup_printf("%s -machine suppress-vmdesc=on", e);
    }
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
            /* the whole section: the image and QEMU's VMState work */
            if (strstr(*l, "vmstate_downtime") && strstr(*l, "/pvrdma")) {
                printf("# %s\n", strstr(*l, "vmstate_downtime"));
            }
        }
        unlink(path);
    }
    g_dir_close(gd);
    rmdir(dir);
}

/*
 * A benchmark, not a check (registered only when PVRDMA_BENCH_IDLE is
 * set): the CPU that idle QEMUs use, for
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

/*
 * Not a test: the downtime of a migration with PVRDMA_BENCH_MR_MIB MiB of
 * registered memory, filled (not zero pages) and written by the device
 * (an RDMA WRITE of 64 KiB) before the migration starts; the bandwidth
 * unlimited, a downtime limit of 20 ms (so that QEMU's own estimate ends
 * precopy with little left: what the last pass carries beyond that is the
 * device's).  Prints QEMU's downtime, total time and bytes sent
 * (query-migrate on the source).
 */
static void bench_mr_downtime(void)
{
    const char *env = getenv("PVRDMA_BENCH_MR_MIB");
    uint64_t mib = 0;
    g_autofree char *extra = NULL;
    g_autofree char *sock = g_strdup_printf("%s/pvrdma-mrdt-%d.sock",
                                            g_get_tmp_dir(), getpid());
    g_autofree char *uri = g_strdup_printf("unix:%s", sock);
    g_autofree char *st = NULL;
    uint64_t len, buf, src;
    uint32_t key, rkey;
    QOSState *to;
    QDict *rsp, *r;
    Pair p;

    if (!env || qemu_strtou64(env, NULL, 0, &mib) || !mib || mib > 1024) {
        g_test_skip("a benchmark: set PVRDMA_BENCH_MR_MIB=MIB (1..1024)");
        return;
    }
    len = mib << 20;
    extra = g_strdup_printf(" -m %" PRIu64 "M", mib + 512);
    pair_connect(&p, qpvrdma_start_active(extra), PVRDMA_QPT_RC, 16);
    buf = qpvrdma_alloc(p.d, len);
    qtest_memset(p.d->qts, buf, 0x5a, len);
    key = qpvrdma_create_mr_keys(p.d, p.pd, buf, len,
                                 PVRDMA_ACCESS_LOCAL_WRITE |
                                 PVRDMA_ACCESS_REMOTE_WRITE, &rkey);
    src = qpvrdma_alloc(p.d, 65536);
    fill(p.d, src, 65536, 7);
    qpvrdma_create_mr(p.d, p.pd, src, 65536, PVRDMA_ACCESS_LOCAL_WRITE);
    qpvrdma_send_wr(p.d, &p.a, PVRDMA_WR_RDMA_WRITE, 0xa1, src, 65536,
                    key + 256, buf + len / 2, rkey);
    qpvrdma_expect_cqe(p.d, &p.cq, 0xa1, PVRDMA_WC_RDMA_WRITE,
                       PVRDMA_WC_SUCCESS, 65536);
    rsp = qtest_qmp(p.d->qts, "{ 'execute': 'migrate-set-parameters', "
                    "'arguments': { 'max-bandwidth': 0, "
                    "'downtime-limit': 20 } }");
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    to = qtest_pc_boot("%s -incoming %s", p.d->args, uri);
    migrate(p.d->qs, to, uri);
    unlink(sock);
    st = qpvrdma_mig_wait(p.d->qts, NULL);
    g_assert_cmpstr(st, ==, "completed");
    rsp = qtest_qmp(p.d->qts, "{ 'execute': 'query-migrate' }");
    r = qdict_get_qdict(rsp, "return");
    printf("# %" PRIu64 " MiB registered: downtime %" PRId64 " ms, total "
           "%" PRId64 " ms, %" PRId64 " MiB sent\n", mib,
           qdict_get_int(r, "downtime"), qdict_get_int(r, "total-time"),
           qdict_get_int(qdict_get_qdict(r, "ram"), "transferred") >> 20);
    qobject_unref(rsp);
    qtest_shutdown(to);
    qpvrdma_stop(p.d);
}

void pvrdma_add_bench_tests(void)
{
    if (getenv("PVRDMA_BENCH_MIG")) {
        qtest_add_func("/pvrdma/bench/migration", bench_migration);
    }
    if (getenv("PVRDMA_BENCH_IDLE")) {
        qtest_add_func("/pvrdma/bench/idle", bench_idle);
    }
    if (getenv("PVRDMA_BENCH_MR_MIB")) {
        qtest_add_func("/pvrdma/bench/mr-downtime", bench_mr_downtime);
    }
}
