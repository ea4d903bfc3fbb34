/*
 * Tests of the co-resident transport: joining: the rendezvous directory,
 * stale sockets, join errors, three devices.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "coresident/cr.h"

/* Two devices find each other; GIDs are learned and forgotten. */
static void test_join(void)
{
    Env e;
    Vm a, b;
    uint8_t gid2[16];

    env_init(&e);
    vm_init(&a, e.dir, 1);
    g_assert_cmpuint(count_socks(e.dir), ==, 1);
    g_assert_cmpuint(peers(&a), ==, 0);
    vm_init(&b, e.dir, 2);
    g_assert_cmpuint(count_socks(e.dir), ==, 2);
    PUMP(&a, &b);
    g_assert_cmpuint(peers(&a), ==, 1);
    g_assert_cmpuint(peers(&b), ==, 1);
    /* one connection per pair: each has its listener and one peer socket */
    g_assert_cmpuint(fh_watch_count(&a.d.h), ==, 2);
    g_assert_cmpuint(fh_watch_count(&b.d.h), ==, 2);

    /* no GID bound yet: nothing to reach */
    g_assert_false(reaches(&a, b.gid));
    g_assert_false(reaches(&b, a.gid));
    vm_up(&b);
    PUMP(&a, &b);
    g_assert_true(reaches(&a, b.gid));
    g_assert_false(reaches(&b, a.gid));
    /* a device's own GIDs go through loopback, not to its peers */
    g_assert_false(reaches(&b, b.gid));
    vm_up(&a);
    make_gid(gid2, 11, 2);
    bind_gid(&b.d, 3, gid2);
    PUMP(&a, &b);
    g_assert_true(reaches(&b, a.gid));
    g_assert_true(reaches(&a, b.gid));
    g_assert_true(reaches(&a, gid2));

    /* DESTROY_BIND: the peer forgets that GID only */
    unbind_gid(&b.d, 0, b.gid);
    PUMP(&a, &b);
    g_assert_false(reaches(&a, b.gid));
    g_assert_true(reaches(&a, gid2));
    g_assert_cmpuint(peers(&a), ==, 1);

    /* b leaves: its socket goes, a forgets it */
    vm_fini(&b);
    g_assert_cmpuint(count_socks(e.dir), ==, 1);
    PUMP(&a);
    g_assert_cmpuint(peers(&a), ==, 0);
    g_assert_false(reaches(&a, gid2));
    g_assert_cmpuint(fh_watch_count(&a.d.h), ==, 1);
    vm_fini(&a);
    env_fini(&e);
}

/* A socket file nobody listens on is removed when a device joins. */
static void test_stale_socket(void)
{
    Env e;
    Vm a;
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    char *stale, *other;
    int fd;

    env_init(&e);
    stale = g_build_filename(e.dir, "00000000deadbeef.sock", NULL);
    other = g_build_filename(e.dir, "notes.txt", NULL);
    g_assert_cmpuint(strlen(stale), <, sizeof(sa.sun_path));
    strcpy(sa.sun_path, stale);
    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    close(fd);      /* the file stays, nobody listens */
    g_assert_true(g_file_set_contents(other, "x", 1, NULL));
    g_assert_true(g_file_test(stale, G_FILE_TEST_EXISTS));

    vm_init(&a, e.dir, 1);
    g_assert_false(g_file_test(stale, G_FILE_TEST_EXISTS));
    g_assert_true(g_file_test(other, G_FILE_TEST_EXISTS));
    g_assert_cmpuint(count_socks(e.dir), ==, 1);
    PUMP(&a);
    g_assert_cmpuint(peers(&a), ==, 0);
    g_assert_cmpuint(fh_watch_count(&a.d.h), ==, 1);
    vm_fini(&a);
    g_free(stale);
    g_free(other);
    env_fini(&e);
}

/* Joining fails cleanly: a message, no fd, no socket, nothing created. */
static void test_join_errors(void)
{
    Env e;
    Vm a;
    PvrdmaLimits l;
    PvrdmaShmRegion r;
    PvrdmaHostOps no_fd = fh_ops;
    struct sockaddr_un sa;
    const size_t max = sizeof(sa.sun_path) - 1 -
                       strlen("/0123456789abcdef.sock");
    char *dir, *want;
    Error *err = NULL;
    GString *s;

    env_init(&e);
    memset(&a, 0, sizeof(a));
    pvrdma_limits_default(&l);
    fh_init_memfd(&a.d.h, VM_RAM);
    pvrdma_core_init(&a.d.c, &fh_ops, &a.d.h, &l);
    pvrdma_core_add_transport(&a.d.c, pvrdma_loopback_new(&a.d.c));
    fh_shm_region(&a.d.h, &r);

    /* no region to offer */
    g_assert_null(pvrdma_coresident_new(&a.d.c, e.dir, NULL, 0, &r, 0,
                                        CR_F_ALL, &err));
    g_assert_nonnull(err);
    g_assert_nonnull(strstr(error_get_pretty(err), "shareable RAM regions"));
    g_clear_pointer(&err, error_free);

    /* RAM that can shrink: peers would refuse it (and not crash on it) */
    {
        PvrdmaShmRegion loose = r;

        loose.fd = memfd_create("loose-ram", MFD_CLOEXEC);
        g_assert_cmpint(ftruncate(loose.fd, VM_RAM), ==, 0);
        g_assert_false(pvrdma_coresident_fd_ok(loose.fd));
        g_assert_true(pvrdma_coresident_fd_ok(r.fd));
        g_assert_null(pvrdma_coresident_new(&a.d.c, e.dir, NULL, 0, &loose, 1,
                                            CR_F_ALL, &err));
        g_assert_nonnull(err);
        g_assert_nonnull(strstr(error_get_pretty(err), "can shrink"));
        g_clear_pointer(&err, error_free);
        close(loose.fd);
        g_assert_cmpuint(count_socks(e.dir), ==, 0);
    }

    /* a host that cannot watch fds */
    no_fd.set_fd_handler = NULL;
    a.d.c.ops = &no_fd;
    g_assert_null(pvrdma_coresident_new(&a.d.c, e.dir, NULL, 0, &r, 1,
                                        CR_F_ALL, &err));
    a.d.c.ops = &fh_ops;
    g_assert_nonnull(err);
    g_assert_nonnull(strstr(error_get_pretty(err), "set_fd_handler"));
    g_clear_pointer(&err, error_free);
    g_assert_cmpuint(count_socks(e.dir), ==, 0);

    /* the parent of the directory does not exist */
    dir = g_build_filename(e.dir, "no", "such", NULL);
    g_assert_null(pvrdma_coresident_new(&a.d.c, dir, NULL, 0, &r, 1,
                                        CR_F_ALL, &err));
    g_assert_nonnull(err);
    g_assert_nonnull(strstr(error_get_pretty(err),
                            "cannot create rendezvous directory"));
    g_clear_pointer(&err, error_free);
    g_free(dir);

    /* the longest directory a socket path fits in works ... */
    s = g_string_new(e.dir);
    g_string_append(s, "/");
    g_assert_cmpuint(s->len, <, max);
    while (s->len < max) {
        g_string_append_c(s, 'd');
    }
    g_assert_cmpuint(s->len, ==, max);
    a.t = pvrdma_coresident_new(&a.d.c, s->str, NULL, 0, &r, 1, CR_F_ALL,
                                &err);
    g_assert_null(err);
    g_assert_nonnull(a.t);
    g_assert_true(pvrdma_core_add_transport(&a.d.c, a.t));
    g_assert_cmpuint(count_socks(s->str), ==, 1);

    /* ... one more character is refused with a message that says so */
    g_string_append_c(s, 'd');
    g_assert_null(pvrdma_coresident_new(&a.d.c, s->str, NULL, 0, &r, 1,
                                        CR_F_ALL, &err));
    g_assert_nonnull(err);
    want = g_strdup_printf("at most %zu characters", max);
    if (!strstr(error_get_pretty(err), "too long") ||
        !strstr(error_get_pretty(err), want)) {
        g_test_message("error message '%s' does not say '%s'",
                       error_get_pretty(err), want);
        g_test_fail();
    }
    g_free(want);
    g_clear_pointer(&err, error_free);
    /* and leaves nothing behind */
    g_assert_false(g_file_test(s->str, G_FILE_TEST_EXISTS));
    g_string_free(s, TRUE);

    pvrdma_core_fini(&a.d.c);
    fh_fini(&a.d.h);
    env_fini(&e);
}

/* A third device joins: everyone sees two peers, traffic between all. */
static void test_three(void)
{
    Env e;
    Vm a, b, c;
    Side ac, ca, bc, cb;
    struct pvrdma_sge sg, sr;
    uint8_t d1[3000], d2[2000], got[3000];

    env_init(&e);
    vm_init(&a, e.dir, 1);
    vm_init(&b, e.dir, 2);
    vm_up(&a);
    vm_up(&b);
    PUMP(&a, &b);
    g_assert_cmpuint(peers(&a), ==, 1);
    vm_init(&c, e.dir, 3);
    vm_up(&c);
    PUMP(&a, &b, &c);
    g_assert_cmpuint(count_socks(e.dir), ==, 3);
    g_assert_cmpuint(peers(&a), ==, 2);
    g_assert_cmpuint(peers(&b), ==, 2);
    g_assert_cmpuint(peers(&c), ==, 2);
    for (Vm *v = &a; v; v = v == &a ? &b : v == &b ? &c : NULL) {
        g_assert_cmpuint(fh_watch_count(&v->d.h), ==, 3);
        g_assert_true(reaches(v, a.gid) || v == &a);
        g_assert_true(reaches(v, b.gid) || v == &b);
        g_assert_true(reaches(v, c.gid) || v == &c);
    }

    side_init(&ac, &a, PVRDMA_QPT_RC);
    side_init(&ca, &c, PVRDMA_QPT_RC);
    side_init(&bc, &b, PVRDMA_QPT_RC);
    side_init(&cb, &c, PVRDMA_QPT_RC);
    rc_connect(&ac, &ca, 7);
    rc_connect(&bc, &cb, 7);

    /* a writes into c, b sends to c, c reads from a */
    fill_pattern(d1, sizeof(d1), 31);
    fill_pattern(d2, sizeof(d2), 32);
    mr_write(&a.d, &ac.mr, S_IOVA, d1, sizeof(d1));
    mr_write(&b.d, &bc.mr, S_IOVA + 100, d2, sizeof(d2));
    sg = mr_sge(&ac, 0, sizeof(d1));
    rdma_wqe(&ac, 0xa1, PVRDMA_WR_RDMA_WRITE, &sg, 1, S_IOVA + 5000,
             ca.mr.rkey, 0);
    sr = mr_sge(&cb, 0, 4096);
    post_recv(&c.d, &cb.qp, 0xc1, &sr, 1);
    sg = mr_sge(&bc, 100, sizeof(d2));
    send_wqe(&bc, 0xb1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &sg, 1);
    PUMP(&a, &b, &c);
    side_expect_cqe(&ac, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE,
                    sizeof(d1));
    side_expect_cqe(&bc, 0xb1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, sizeof(d2));
    side_expect_cqe(&cb, 0xc1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, sizeof(d2));
    mr_read(&c.d, &ca.mr, S_IOVA + 5000, got, sizeof(d1));
    g_assert_cmpmem(got, sizeof(d1), d1, sizeof(d1));
    mr_read(&c.d, &cb.mr, S_IOVA, got, sizeof(d2));
    g_assert_cmpmem(got, sizeof(d2), d2, sizeof(d2));

    sg = mr_sge(&ca, 8000, sizeof(d1));
    rdma_wqe(&ca, 0xc2, PVRDMA_WR_RDMA_READ, &sg, 1, S_IOVA, ac.mr.rkey, 0);
    PUMP(&a, &b, &c);
    side_expect_cqe(&ca, 0xc2, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_READ,
                    sizeof(d1));
    mr_read(&c.d, &ca.mr, S_IOVA + 8000, got, sizeof(d1));
    g_assert_cmpmem(got, sizeof(d1), d1, sizeof(d1));

    /* the middle one leaves; the other two keep each other */
    vm_fini(&b);
    PUMP(&a, &c);
    g_assert_cmpuint(peers(&a), ==, 1);
    g_assert_cmpuint(peers(&c), ==, 1);
    g_assert_false(reaches(&a, b.gid));
    sg = mr_sge(&ac, 0, 100);
    rdma_wqe(&ac, 0xa3, PVRDMA_WR_RDMA_WRITE, &sg, 1, S_IOVA + 20000,
             ca.mr.rkey, 0);
    PUMP(&a, &c);
    side_expect_cqe(&ac, 0xa3, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE, 100);
    mr_read(&c.d, &ca.mr, S_IOVA + 20000, got, 100);
    g_assert_cmpmem(got, 100, d1, 100);
    expect_cq_empty(&a.d, &ac.cq);
    expect_cq_empty(&c.d, &ca.cq);
    expect_cq_empty(&c.d, &cb.cq);
    vm_fini(&a);
    vm_fini(&c);
    env_fini(&e);
}

void cr_add_join_tests(void)
{
    g_test_add_func("/pvrdma/cr/join", test_join);
    g_test_add_func("/pvrdma/cr/stale-socket", test_stale_socket);
    g_test_add_func("/pvrdma/cr/join-errors", test_join_errors);
    g_test_add_func("/pvrdma/cr/three", test_three);
}
