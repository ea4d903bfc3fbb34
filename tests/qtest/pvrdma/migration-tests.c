/*
 * QTest for the pvrdma device: migration (live, postcopy, savevm, a
 * background snapshot, a hostile stream).  A transport's own migration
 * tests are in its topic's file.
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

/* A migration of p's device to a file; its bytes in *img */
static void mig_to_file(Pair *p, const char *file, gchar **img, gsize *len)
{
    g_autofree char *uri = g_strdup_printf("file:%s", file);
    g_autofree char *st = NULL;
    QDict *rsp;

    rsp = qtest_qmp(p->d->qts, "{ 'execute': 'migrate', 'arguments': "
                    "{ 'uri': %s } }", uri);
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    st = qpvrdma_mig_wait(p->d->qts, NULL);
    g_assert_cmpstr(st, ==, "completed");
    g_assert(g_file_get_contents(file, img, len, NULL));
}

/* Where s (n bytes) first is in img at or after from; asserts it is */
static size_t mig_find(const gchar *img, gsize len, size_t from,
                       const char *s)
{
    size_t n = strlen(s);

    while (from + n <= len && memcmp(img + from, s, n)) {
        from++;
    }
    g_assert_cmpuint(from + n, <=, len);
    return from;
}

typedef struct MigCase {
    const char *what;
    const char *anchor;     /* offsets from its first byte after the magic */
    bool after_pages;       /* ... or from the end of the VMState page pool */
    size_t off;
    uint64_t val;
    int size;               /* 0: cut the stream there */
} MigCase;

/*
 * Hostile migration streams of a device (extra: its properties): each
 * case changes the saved file (big-endian fields in VMState, little-endian
 * in the older builds' blob); each fails the load (its reason, naming
 * pvrdma, on stderr), none crashes QEMU.  The untouched file loads.
 */
static void mig_hostile(const char *extra, const char *magic, bool le,
                        const MigCase *cases, unsigned ncases)
{
    Pair p;
    g_autofree char *dir = g_dir_make_tmp("pvrdma-mig-XXXXXX", NULL);
    g_autofree char *file = g_build_filename(dir, "state", NULL);
    g_autofree char *bad = g_build_filename(dir, "bad", NULL);
    g_autofree char *st = NULL;
    g_autofree gchar *img = NULL;
    gsize len;
    size_t at;

    pair_connect(&p, qpvrdma_start_active(extra), PVRDMA_QPT_RC, 16);
    mig_to_file(&p, file, &img, &len);
    at = mig_find(img, len, 0, magic);
    g_assert_cmpuint(at + 200, <, len);

    st = mig_load_file(p.d->args, file, NULL);
    g_assert_cmpstr(st, ==, "completed");
    g_clear_pointer(&st, g_free);
    for (unsigned i = 0; i < ncases; i++) {
        g_autofree gchar *x = g_memdup2(img, len);
        g_autofree char *desc = NULL;
        const MigCase *c = &cases[i];
        size_t base = c->anchor ?
            mig_find(img, len, at, c->anchor) + strlen(c->anchor) : at;
        size_t n = len;

        if (c->after_pages) {
            /* pvrdma/state: the pool's count at 120, its pages from 124 */
            base = at + 124 + 8 * (size_t)ldl_be_p(img + at + 120);
        }
        if (c->size) {
            uint64_t v = le ? cpu_to_le64(c->val) :
                              cpu_to_be64(c->val << (64 - 8 * c->size));

            memcpy(x + base + c->off, &v, c->size);
        } else {
            n = base + c->off;
        }
        g_assert(g_file_set_contents(bad, x, n, NULL));
        st = mig_load_file(p.d->args, bad, &desc);
        g_test_message("%s: %s (%s)", c->what, st, desc);
        /* the reason goes to stderr (a VMState load has no Error) */
        g_assert_cmpstr(st, ==, "failed");
        g_clear_pointer(&st, g_free);
    }
    qpvrdma_stop(p.d);
    unlink(file);
    unlink(bad);
    rmdir(dir);
}

/*
 * The VMState stream: truncated, another device's limits, a page pool or
 * more GIDs than the table can hold (and a negative count), each refused
 * before anything is allocated; a ring page outside guest RAM (the pool's
 * first page is the async ring's), a ring of 2^32 - 1 pages past the pool
 * (in the DSR subsection: version, three addresses, the async ring's first
 * page and its count).
 */
static void test_migration_hostile(void)
{
    static const MigCase cases[] = {
        { "truncated", NULL, false, 40, 0, 0 },
        { "max-qp", NULL, false, 4, 7, 4 },
        { "pages", NULL, false, 120, 0x7fffffff, 4 },
        { "GIDs", NULL, true, 0, 0x7fffffff, 4 },
        { "negative GIDs", NULL, true, 0, 0xffffffff, 4 },
        { "async ring page", NULL, false, 124, 0xfffffffff000ull, 8 },
        { "async ring pages", "pvrdma/state/dsr", false, 4 + 24 + 4,
          0xffffffffu, 4 },
    };

    mig_hostile(NULL, "PVIM", false, cases, G_N_ELEMENTS(cases));
}

/* The same of the older builds' blob (x-state-blob=on) */
static void test_migration_hostile_blob(void)
{
    static const MigCase cases[] = {
        { "truncated", NULL, false, 40, 0, 0 },
        { "max-qp", NULL, false, 8, 7, 4 },
        { "async ring page", NULL, false, 8 + 65 + 51 + 24 + 4,
          0xfffffffff000ull, 8 },
        { "async ring pages", NULL, false, 8 + 65 + 51 + 24, 0xffffffffu, 4 },
    };

    mig_hostile(",x-state-blob=on", "PRMG", true, cases,
                G_N_ELEMENTS(cases));
}

/*
 * x-state-blob=on writes the stream of the builds before VMState, whose
 * device section is one field ("core", the blob of "PRMG"), for a
 * migration to or from such a build: migrated with it on at both ends, the
 * QPs go on; a destination that expects the other format fails the load,
 * and keeps answering.
 */
static void test_migration_blob(void)
{
    Pair p;
    g_autofree char *dir = g_dir_make_tmp("pvrdma-mig-XXXXXX", NULL);
    g_autofree char *file = g_build_filename(dir, "state", NULL);
    g_autofree char *st = NULL;
    g_autofree gchar *img = NULL;
    g_autofree char *plain = NULL;
    const char *cut;
    uint64_t src, dst;
    uint32_t key;
    gsize len;

    pair_connect(&p, qpvrdma_start_active(",x-state-blob=on"),
                 PVRDMA_QPT_RC, 16);
    src = qpvrdma_alloc(p.d, 4096);
    dst = qpvrdma_alloc(p.d, 4096);
    key = qpvrdma_create_mr(p.d, p.pd, src, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    qpvrdma_create_mr(p.d, p.pd, dst, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    pair_exchange(&p, src, dst, key, 1, 1);
    /* a live migration to a destination with the same property */
    qpvrdma_migrate(p.d);
    pair_exchange(&p, src, dst, key, 2, 2);
    same(p.d, src, dst, 4096);
    /* its stream holds the blob; another format's destination refuses it */
    mig_to_file(&p, file, &img, &len);
    mig_find(img, len, 0, "PRMG");
    cut = strstr(p.d->args, ",x-state-blob=on");
    g_assert(cut);
    plain = g_strdup_printf("%.*s%s", (int)(cut - p.d->args), p.d->args,
                            cut + strlen(",x-state-blob=on"));
    g_assert(!strstr(plain, "x-state-blob"));
    st = mig_load_file(plain, file, NULL);
    g_assert_cmpstr(st, ==, "failed");
    qpvrdma_cq_empty(p.d, &p.cq);
    qpvrdma_stop(p.d);
    unlink(file);
    rmdir(dir);
}

/*
 * A migration with a build from before VMState, both ways: its QEMU binary
 * in PVRDMA_QEMU_OTHER, else a skip.  This build with x-state-blob=on
 * migrates a connected pair with traffic to the older one, which carries
 * on with the same QPs and keys, and back.
 */
static void test_migration_other_build(void)
{
    const char *other = g_getenv("PVRDMA_QEMU_OTHER");
    g_autofree char *ours = g_strdup(g_getenv("QTEST_QEMU_BINARY"));
    g_autofree char *blob_args = NULL;
    g_autofree char *old_args = NULL;
    const char *cut;
    uint64_t src, dst;
    uint32_t key;
    Pair p;

    if (!other) {
        g_test_skip("PVRDMA_QEMU_OTHER names no older build's QEMU");
        return;
    }
    pair_connect(&p, qpvrdma_start_active(",x-state-blob=on"),
                 PVRDMA_QPT_RC, 16);
    blob_args = g_strdup(p.d->args);
    cut = strstr(blob_args, ",x-state-blob=on");
    old_args = g_strdup_printf("%.*s%s", (int)(cut - blob_args), blob_args,
                               cut + strlen(",x-state-blob=on"));
    src = qpvrdma_alloc(p.d, 4096);
    dst = qpvrdma_alloc(p.d, 4096);
    key = qpvrdma_create_mr(p.d, p.pd, src, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    qpvrdma_create_mr(p.d, p.pd, dst, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    pair_exchange(&p, src, dst, key, 1, 1);
    /* to the older build, which knows no x-state-blob */
    qpvrdma_migrate_to(p.d, other, old_args);
    pair_exchange(&p, src, dst, key, 2, 2);
    same(p.d, src, dst, 4096);
    /* and back to this one */
    qpvrdma_migrate_to(p.d, ours, blob_args);
    pair_exchange(&p, src, dst, key, 3, 3);
    same(p.d, src, dst, 4096);
    qpvrdma_cq_empty(p.d, &p.cq);
    g_assert_cmpuint(qpvrdma_create_pd(p.d, 0), >, p.pd);
    qpvrdma_stop(p.d);
}

/*
 * What the device writes into registered memory while precopy runs reaches
 * the destination: 8 RDMA WRITEs (each a new pattern) into the first half
 * of a 16 MiB MR (filled: normal pages) during a migration slowed to
 * 4 MiB/s, each after the RAM pass has sent the pages it lands on, while
 * the pass still has the second half to go (so precopy cannot end first);
 * then the migration goes at full speed.  Every region holds on the
 * destination what the WRITE put there on the source.  The device reports
 * those pages dirty as it writes them (PvrdmaHostOps.dirty); nothing marks
 * a registered MR's pages at the stop.
 */
#define DIRTY_MR (16u << 20)
#define DIRTY_N 8
#define DIRTY_STEP (1u << 20)
#define DIRTY_LEN 65536

static void test_migration_dirty(void)
{
    g_autofree char *sock = g_strdup_printf("%s/pvrdma-dirty-%d.sock",
                                            g_get_tmp_dir(), getpid());
    g_autofree char *uri = g_strdup_printf("unix:%s", sock);
    g_autofree char *st = NULL;
    g_autofree uint8_t *want = g_malloc(DIRTY_N * DIRTY_LEN);
    g_autofree uint8_t *got = g_malloc(DIRTY_LEN);
    uint64_t mr, src;
    uint32_t key, rkey;
    QOSState *to;
    QDict *rsp;
    Pair p;

    pair_setup(&p, PVRDMA_QPT_RC, 16);
    mr = qpvrdma_alloc(p.d, DIRTY_MR);
    qtest_memset(p.d->qts, mr, 0x5a, DIRTY_MR);
    key = qpvrdma_create_mr_keys(p.d, p.pd, mr, DIRTY_MR,
                                 PVRDMA_ACCESS_LOCAL_WRITE |
                                 PVRDMA_ACCESS_REMOTE_WRITE, &rkey);
    src = qpvrdma_alloc(p.d, DIRTY_LEN);
    qpvrdma_create_mr(p.d, p.pd, src, DIRTY_LEN, PVRDMA_ACCESS_LOCAL_WRITE);
    rsp = qtest_qmp(p.d->qts, "{ 'execute': 'migrate-set-parameters', "
                    "'arguments': { 'max-bandwidth': %u, "
                    "'downtime-limit': 20 } }", 4u << 20);
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    to = qtest_pc_boot("%s -incoming %s", p.d->args, uri);
    rsp = qtest_qmp(p.d->qts, "{ 'execute': 'migrate', 'arguments': "
                    "{ 'uri': %s } }", uri);
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    for (unsigned i = 0; i < DIRTY_N; i++) {
        uint64_t at = mr + (uint64_t)i * DIRTY_STEP;
        QDict *r;
        uint64_t sent;
        int waited = 0;

        /*
         * wait until the RAM pass is past this region: it goes in address
         * order, and what it sent before the MR is a few pages
         */
        do {
            g_usleep(10 * 1000);
            g_assert_cmpint(++waited, <, 6000);
            rsp = qtest_qmp(p.d->qts, "{ 'execute': 'query-migrate' }");
            r = qdict_get_qdict(qdict_get_qdict(rsp, "return"), "ram");
            sent = r ? qdict_get_int(r, "normal") * 4096 : 0;
            qobject_unref(rsp);
        } while (sent < (uint64_t)(i + 1) * DIRTY_STEP + DIRTY_LEN);
        fill(p.d, src, DIRTY_LEN, 0x10 + i);
        qpvrdma_send_wr(p.d, &p.a, PVRDMA_WR_RDMA_WRITE, 0xa0 + i, src,
                        DIRTY_LEN, key + 256, at, rkey);
        qpvrdma_expect_cqe(p.d, &p.cq, 0xa0 + i, PVRDMA_WC_RDMA_WRITE,
                           PVRDMA_WC_SUCCESS, DIRTY_LEN);
        qtest_memread(p.d->qts, at, want + i * DIRTY_LEN, DIRTY_LEN);
    }
    /* still in precopy: the writes above came after their pages went */
    rsp = qtest_qmp(p.d->qts, "{ 'execute': 'query-migrate' }");
    g_assert_cmpstr(qdict_get_str(qdict_get_qdict(rsp, "return"), "status"),
                    ==, "active");
    qobject_unref(rsp);
    rsp = qtest_qmp(p.d->qts, "{ 'execute': 'migrate-set-parameters', "
                    "'arguments': { 'max-bandwidth': 0 } }");
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    st = qpvrdma_mig_wait(p.d->qts, NULL);
    g_assert_cmpstr(st, ==, "completed");
    qtest_qmp_eventwait(to->qts, "RESUME");
    unlink(sock);
    for (unsigned i = 0; i < DIRTY_N; i++) {
        qtest_memread(to->qts, mr + (uint64_t)i * DIRTY_STEP, got,
                      DIRTY_LEN);
        g_assert_cmpmem(got, DIRTY_LEN, want + i * DIRTY_LEN, DIRTY_LEN);
    }
    qtest_shutdown(to);
    qpvrdma_stop(p.d);
}

/* A VMState stream into a destination that expects the blob: refused */
static void test_migration_blob_mismatch(void)
{
    Pair p;
    g_autofree char *dir = g_dir_make_tmp("pvrdma-mig-XXXXXX", NULL);
    g_autofree char *file = g_build_filename(dir, "state", NULL);
    g_autofree char *args = NULL;
    g_autofree char *st = NULL;
    g_autofree gchar *img = NULL;
    gsize len;

    pair_setup(&p, PVRDMA_QPT_RC, 16);
    mig_to_file(&p, file, &img, &len);
    if (getenv("PVRDMA_MIG_KEEP")) {
        /* the stream, for scripts/analyze-migration.py */
        g_assert(g_file_set_contents(getenv("PVRDMA_MIG_KEEP"), img, len,
                                     NULL));
    }
    g_assert(!memmem(img, len, "PRMG", 4));
    mig_find(img, len, 0, "PVIM");
    args = g_strdup_printf("%s,x-state-blob=on", p.d->args);
    st = mig_load_file(args, file, NULL);
    g_assert_cmpstr(st, ==, "failed");
    qpvrdma_stop(p.d);
    unlink(file);
    rmdir(dir);
}

void pvrdma_add_migration_tests(void)
{
    qpvrdma_add_func_both("/pvrdma/migration/rc", test_migration_rc);
    qpvrdma_add_func_both("/pvrdma/migration/postcopy",
                          test_migration_postcopy);
    qpvrdma_add_func_both("/pvrdma/migration/savevm", test_migration_savevm);
    qpvrdma_add_func_both("/pvrdma/migration/bg-snapshot",
                          test_migration_bg_snapshot);
    qtest_add_func("/pvrdma/migration/hostile", test_migration_hostile);
    qtest_add_func("/pvrdma/migration/hostile-blob",
                   test_migration_hostile_blob);
    qtest_add_func("/pvrdma/migration/blob", test_migration_blob);
    qtest_add_func("/pvrdma/migration/blob-mismatch",
                   test_migration_blob_mismatch);
    qtest_add_func("/pvrdma/migration/other-build",
                   test_migration_other_build);
    qpvrdma_add_func_both("/pvrdma/migration/dirty", test_migration_dirty);
}
