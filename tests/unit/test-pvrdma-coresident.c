/*
 * Tests of the co-resident transport (backend/coresident.c).  Two or three
 * devices, each with a fake host whose guest RAM is a memfd, live in this
 * process as if they were VMs on one host: they meet in a temporary
 * rendezvous directory and exchange verbs through each other's RAM.  The
 * fake hosts' poll loop (fh_pump) plays the main loops of the VMs; leaving
 * a VM out of a pump models a VM that has not run yet.  A fake peer, a raw
 * socket speaking the wire format, checks how a device treats a peer that
 * misbehaves.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#define _GNU_SOURCE     /* memfd_create */
#include <dirent.h>
#include <poll.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include "fake-driver.h"
#include "fake-hca.h"

/* ------------------------------------------------------------------ */
/* Wire format of backend/coresident.c (for the fake peer)             */

#include "hw/rdma/pvrdma_coresident.h"
#include "hw/rdma/pvrdma_loopback.h"
#include "hw/rdma/pvrdma_roce.h"
#include "hw/rdma/pvrdma_coresident_wire.h"
#include "hw/rdma/roce_wire.h"

/* ------------------------------------------------------------------ */
/* VMs                                                                 */

#define VM_RAM      (64ull << 20)
#define CR_MR_ACCESS (PVRDMA_ACCESS_LOCAL_WRITE | RC_ACCESS)

typedef struct Wire Wire;

typedef struct Vm {
    Dev d;
    PvrdmaTransport *t;
    PvrdmaTransport *rt;    /* RoCEv2 on a Wire, or NULL */
    Wire *wire;
    uint8_t gid[16];        /* ::ffff:10.0.0.<id>, bound by vm_up */
    uint8_t id;
} Vm;

static void make_gid(uint8_t gid[16], uint8_t net, uint8_t id)
{
    memset(gid, 0, 16);
    gid[10] = gid[11] = 0xff;
    gid[12] = net;
    gid[15] = id;
}

/*
 * A device with memfd RAM that joined dir with a shared secret (NULL:
 * none), not activated: what a QEMU started with -incoming has.
 */
/* the rings new devices offer (pvrdma_coresident_set_rings(); 0: none) */
static uint32_t g_ring_size = CR_RING_SIZE;
/*
 * The features new devices offer (pvrdma_coresident_set_features()): fewer
 * than CR_F_ALL make a device of a build that lacks the others.
 */
static uint64_t g_features = CR_F_ALL;

static void vm_create(Vm *v, const char *dir, uint8_t id, const char *secret)
{
    PvrdmaLimits l;
    PvrdmaShmRegion r;
    char *err = NULL;

    memset(v, 0, sizeof(*v));
    pvrdma_limits_default(&l);
    fh_init_memfd(&v->d.h, VM_RAM);
    v->d.h.mac[5] = id;
    pvrdma_core_init(&v->d.c, &fh_ops, &v->d.h, &l);
    pvrdma_core_add_transport(&v->d.c, pvrdma_loopback_new(&v->d.c));
    v->d.h.core = &v->d.c;
    fh_shm_region(&v->d.h, &r);
    v->t = pvrdma_coresident_new(&v->d.c, dir, secret,
                                 secret ? strlen(secret) : 0, &r, 1,
                                 g_features, &err);
    g_assert_null(err);
    g_assert_nonnull(v->t);
    g_assert_true(pvrdma_coresident_set_rings(v->t, g_ring_size));
    g_assert_true(pvrdma_core_add_transport(&v->d.c, v->t));
    v->id = id;
    make_gid(v->gid, 10, id);
}

/* The same, activated by its driver; no GID yet. */
static void vm_init_secret(Vm *v, const char *dir, uint8_t id,
                           const char *secret)
{
    vm_create(v, dir, id, secret);
    dev_write_dsr(&v->d);
    pvrdma_core_reg_write(&v->d.c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
    g_assert_cmpuint(pvrdma_core_reg_read(&v->d.c, PVRDMA_REG_ERR), ==, 0);
    pvrdma_core_reg_write(&v->d.c, PVRDMA_REG_IMR, 0);
}

static void vm_init(Vm *v, const char *dir, uint8_t id)
{
    vm_init_secret(v, dir, id, NULL);
}

/* The guest driver registers the VM's GID. */
static void vm_up(Vm *v)
{
    bind_gid(&v->d, 0, v->gid);
}

/*
 * The VM's QEMU exits (no guest reset, which would wait for the peers to
 * answer its requests: pvrdma_qp_fence): every mapping released, every
 * fd handler gone.
 */
static void vm_fini(Vm *v)
{
    dev_exit(&v->d);
}

/*
 * The guest's RAM and the driver's view of the device (DSR, command and
 * response slots, async and CQ notification rings) come along to "to", a
 * migration's destination, from "from".
 */
static void vm_take_guest(Vm *to, const Vm *from)
{
    memcpy(to->d.h.ram, from->d.h.ram, VM_RAM);
    to->d.h.next_free = from->d.h.next_free;
    to->d.dsr = from->d.dsr;
    to->d.cmd = from->d.cmd;
    to->d.resp = from->d.resp;
    memcpy(to->d.async_pages, from->d.async_pages, sizeof(to->d.async_pages));
    memcpy(to->d.cqn_pages, from->d.cqn_pages, sizeof(to->d.cqn_pages));
}

static unsigned peers(Vm *v)
{
    return pvrdma_coresident_peers(v->t);
}

/* QPs of v the transport keeps a record of */
static unsigned qp_records(Vm *v)
{
    return pvrdma_coresident_qps(v->t);
}

static bool reaches(Vm *v, const uint8_t gid[16])
{
    return v->t->ops->reaches(v->t, gid);
}

static void pump_vms(Vm *const *v, unsigned n)
{
    FakeHost *h[8];

    g_assert_cmpuint(n, <=, G_N_ELEMENTS(h));
    for (unsigned i = 0; i < n; i++) {
        h[i] = &v[i]->d.h;
    }
    g_assert_true(fh_pump(h, n, 20000));
}

/* Let these VMs run until none has anything left to do. */
#define PUMP(...) \
    pump_vms((Vm *const[]) { __VA_ARGS__ }, \
             sizeof((Vm *const[]) { __VA_ARGS__ }) / sizeof(Vm *))

static void unbind_gid(Dev *d, uint32_t index, const uint8_t gid[16])
{
    union pvrdma_cmd_req req = { 0 };

    req.destroy_bind.index = index;
    memcpy(req.destroy_bind.dest_gid, gid, 16);
    g_assert_cmpuint(dev_cmd(d, &req, PVRDMA_CMD_DESTROY_BIND, NULL), ==, 0);
}

/* The fd handler of v's connection to its (only or first) peer. */
static FhWatch *peer_watch(Vm *v)
{
    for (guint i = 0; i < v->d.h.watches->len; i++) {
        FhWatch *w = &g_array_index(v->d.h.watches, FhWatch, i);
        int listening = 0;
        socklen_t sl = sizeof(listening);

        g_assert_cmpint(getsockopt(w->fd, SOL_SOCKET, SO_ACCEPTCONN,
                                   &listening, &sl), ==, 0);
        if (!listening) {
            return w;
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Rendezvous directory and fd accounting                              */

typedef struct Env {
    char *dir;
    unsigned fds;
} Env;

static unsigned count_socks(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    unsigned n = 0;

    g_assert_nonnull(d);
    while ((e = readdir(d))) {
        n += g_str_has_suffix(e->d_name, ".sock");
    }
    closedir(d);
    return n;
}

/* The path of the only socket in dir (g_free it). */
static char *only_sock(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char *path = NULL;

    g_assert_nonnull(d);
    while ((e = readdir(d))) {
        if (g_str_has_suffix(e->d_name, ".sock")) {
            g_assert_null(path);
            path = g_build_filename(dir, e->d_name, NULL);
        }
    }
    closedir(d);
    g_assert_nonnull(path);
    return path;
}

static void rm_tree(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;

    if (!d) {
        unlink(path);
        return;
    }
    while ((e = readdir(d))) {
        char *p;

        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) {
            continue;
        }
        p = g_build_filename(path, e->d_name, NULL);
        rm_tree(p);
        g_free(p);
    }
    closedir(d);
    g_assert_cmpint(rmdir(path), ==, 0);
}

static void env_init(Env *e)
{
    e->fds = fh_open_fds();
    e->dir = g_dir_make_tmp("pvrdma-cr-XXXXXX", NULL);
    g_assert_nonnull(e->dir);
}

/* Every device left: no socket in the directory, no fd leaked. */
static void env_fini(Env *e)
{
    g_assert_cmpuint(count_socks(e->dir), ==, 0);
    rm_tree(e->dir);
    g_free(e->dir);
    g_assert_cmpuint(fh_open_fds(), ==, e->fds);
}

/* ------------------------------------------------------------------ */
/* One side of a connection: PD, CQ, QP and an MR on a VM              */

typedef struct Side {
    Vm *v;
    uint32_t pd;
    TCq cq;
    TQp qp;
    TMr mr;
} Side;

#define S_IOVA  0x00007f0000000100ull
#define S_LEN   (12 * FH_PAGE)

static void side_init(Side *s, Vm *v, uint8_t type)
{
    memset(s, 0, sizeof(*s));
    s->v = v;
    s->pd = create_pd(&v->d, 0);
    create_cq(&v->d, &s->cq, 128);
    create_qp(&v->d, &s->qp, s->pd, s->cq.handle, s->cq.handle, type);
    create_mr(&v->d, &s->mr, s->pd, S_IOVA, S_LEN, CR_MR_ACCESS);
}

static void rc_connect(Side *a, Side *b, uint8_t rnr_retry)
{
    rc_to_rts_gid(&a->v->d, &a->qp, b->qp.qpn, b->v->gid, rnr_retry);
    rc_to_rts_gid(&b->v->d, &b->qp, a->qp.qpn, a->v->gid, rnr_retry);
}

static void side_expect_cqe(Side *s, uint64_t wr_id, uint32_t status,
                            uint32_t opcode, uint32_t byte_len)
{
    expect_cqe(&s->v->d, &s->cq, wr_id, status, opcode, byte_len,
               s->qp.handle);
}

static uint32_t qp_state(Side *s)
{
    return query_qp_state(&s->v->d, &s->qp);
}

#define P_LEN 256

/* Serves a VM from another thread: a peer QEMU while a test blocks. */
typedef struct Pumper {
    Vm *v;
    int stop;
    unsigned delay_ms;      /* before it serves anything */
    GThread *th;
} Pumper;

static gpointer pumper_run(gpointer opaque)
{
    Pumper *p = opaque;
    FakeHost *h = &p->v->d.h;

    g_usleep(p->delay_ms * 1000ul);
    while (!g_atomic_int_get(&p->stop)) {
        fh_step_wait(&h, 1, 5);
    }
    return NULL;
}

static void pumper_start_late(Pumper *p, Vm *v, unsigned delay_ms)
{
    p->v = v;
    p->stop = 0;
    p->delay_ms = delay_ms;
    p->th = g_thread_new("peer", pumper_run, p);
}

static void pumper_start(Pumper *p, Vm *v)
{
    pumper_start_late(p, v, 0);
}

static void pumper_stop(Pumper *p)
{
    g_atomic_int_set(&p->stop, 1);
    g_thread_join(p->th);
}

/* Two VMs in one rendezvous directory, RC QPs connected across them. */
typedef struct X {
    Env e;
    Vm a, b;
    Side sa, sb;
} X;

/* The same with devices of builds that offer features fa and fb. */
static void x_setup_features(X *x, uint8_t rnr_retry, uint64_t fa, uint64_t fb)
{
    env_init(&x->e);
    g_features = fa;
    vm_init(&x->a, x->e.dir, 1);
    g_features = fb;
    vm_init(&x->b, x->e.dir, 2);
    g_features = CR_F_ALL;
    vm_up(&x->a);
    vm_up(&x->b);
    PUMP(&x->a, &x->b);
    g_assert_cmpuint(peers(&x->a), ==, 1);
    g_assert_cmpuint(peers(&x->b), ==, 1);
    g_assert_true(reaches(&x->a, x->b.gid));
    g_assert_true(reaches(&x->b, x->a.gid));
    side_init(&x->sa, &x->a, PVRDMA_QPT_RC);
    side_init(&x->sb, &x->b, PVRDMA_QPT_RC);
    rc_connect(&x->sa, &x->sb, rnr_retry);
    PUMP(&x->a, &x->b);
}

static void x_setup(X *x, uint8_t rnr_retry)
{
    x_setup_features(x, rnr_retry, CR_F_ALL, CR_F_ALL);
}

static void x_fini(X *x)
{
    expect_cq_empty(&x->a.d, &x->sa.cq);
    expect_cq_empty(&x->b.d, &x->sb.cq);
    vm_fini(&x->a);
    vm_fini(&x->b);
    env_fini(&x->e);
}

/* Arm s's CQ for the next completion. */
static void arm_cq(Vm *v, TCq *cq)
{
    pvrdma_core_uar_write(&v->d.c, PVRDMA_UAR_CQ_OFFSET,
                          PVRDMA_UAR_CQ_ARM | cq->handle);
}

/* FakeHost.on_notify: a guest that arms side arg's CQ again at once. */
static void rearm_send_cq(FakeHost *h, unsigned vector, void *arg)
{
    Side *s = arg;

    if (vector == PVRDMA_INTR_VECTOR_CQ) {
        arm_cq(s->v, &s->cq);
    }
}

/* CQ interrupts v raised so far */
static unsigned cq_irqs(Vm *v)
{
    unsigned n = 0;

    for (guint i = 0; i < v->d.h.irqs->len; i++) {
        n += g_array_index(v->d.h.irqs, unsigned, i) ==
             PVRDMA_INTR_VECTOR_CQ;
    }
    return n;
}

static void send_wqe(Side *s, uint64_t wr_id, uint32_t opcode, uint32_t flags,
                     const struct pvrdma_sge *sge, uint32_t nsge)
{
    struct pvrdma_sq_wqe_hdr w = { 0 };

    w.wr_id = wr_id;
    w.opcode = opcode;
    w.send_flags = flags;
    post_send(&s->v->d, &s->qp, &w, sge, nsge);
}

static void rdma_wqe(Side *s, uint64_t wr_id, uint32_t opcode,
                     const struct pvrdma_sge *sge, uint32_t nsge,
                     uint64_t raddr, uint32_t rkey, uint32_t imm)
{
    struct pvrdma_sq_wqe_hdr w = { 0 };

    w.wr_id = wr_id;
    w.opcode = opcode;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.ex.imm_data = imm;
    w.wr.rdma.remote_addr = raddr;
    w.wr.rdma.rkey = rkey;
    post_send(&s->v->d, &s->qp, &w, sge, nsge);
}

static struct pvrdma_sge mr_sge(Side *s, uint64_t off, uint32_t len)
{
    return (struct pvrdma_sge) { S_IOVA + off, len, s->mr.lkey };
}

/* ------------------------------------------------------------------ */
/* Rendezvous                                                          */

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
    char *dir, *err = NULL, *want;
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
    g_assert_nonnull(strstr(err, "shareable RAM regions"));
    g_clear_pointer(&err, g_free);

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
        g_assert_nonnull(strstr(err, "can shrink"));
        g_clear_pointer(&err, g_free);
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
    g_assert_nonnull(strstr(err, "set_fd_handler"));
    g_clear_pointer(&err, g_free);
    g_assert_cmpuint(count_socks(e.dir), ==, 0);

    /* the parent of the directory does not exist */
    dir = g_build_filename(e.dir, "no", "such", NULL);
    g_assert_null(pvrdma_coresident_new(&a.d.c, dir, NULL, 0, &r, 1,
                                        CR_F_ALL, &err));
    g_assert_nonnull(err);
    g_assert_nonnull(strstr(err, "cannot create rendezvous directory"));
    g_clear_pointer(&err, g_free);
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
    if (!err || !strstr(err, "too long") || !strstr(err, want)) {
        g_test_message("error message '%s' does not say '%s'", err, want);
        g_test_fail();
    }
    g_free(want);
    g_clear_pointer(&err, g_free);
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

/* ------------------------------------------------------------------ */
/* Data path                                                           */

static void test_send(void)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    uint8_t data[5000], got[5000];
    struct pvrdma_sge ga[2], gb[2];
    struct pvrdma_cqe e;

    x_setup(&x, 7);
    fill_pattern(data, sizeof(data), 1);
    mr_fill(&x.b.d, &sb->mr, 0xcc);
    mr_write(&x.a.d, &sa->mr, S_IOVA + 50, data, sizeof(data));
    ga[0] = mr_sge(sa, 50, 3000);
    ga[1] = mr_sge(sa, 3050, 2000);
    gb[0] = mr_sge(sb, 10, 1000);
    gb[1] = mr_sge(sb, 8000, 5000);
    post_recv(&x.b.d, &sb->qp, 0xb1, gb, 2);
    send_wqe(sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, ga, 2);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 5000);
    g_assert_true(poll_cq(&x.b.d, &sb->cq, &e));
    g_assert_cmphex(e.wr_id, ==, 0xb1);
    g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
    g_assert_cmpuint(e.opcode, ==, PVRDMA_WC_RECV);
    g_assert_cmpuint(e.byte_len, ==, 5000);
    g_assert_cmpuint(e.qp, ==, sb->qp.handle);
    g_assert_cmpuint(e.src_qp, ==, sa->qp.qpn);
    g_assert_cmpmem(e.smac, 6, x.a.d.h.mac, 6);     /* the sender's MAC */
    g_assert_cmpuint(e.network_hdr_type, ==, PVRDMA_NETWORK_IPV4);
    g_assert_true(e.wc_flags & PVRDMA_WC_WITH_NETWORK_HDR_TYPE);
    g_assert_false(e.wc_flags & PVRDMA_WC_WITH_IMM);
    mr_read(&x.b.d, &sb->mr, S_IOVA + 10, got, 1000);
    g_assert_cmpmem(got, 1000, data, 1000);
    mr_read(&x.b.d, &sb->mr, S_IOVA + 8000, got, 4000);
    g_assert_cmpmem(got, 4000, data + 1000, 4000);
    g_assert_cmphex(*mr_byte(&x.b.d, &sb->mr, S_IOVA + 9), ==, 0xcc);
    g_assert_cmphex(*mr_byte(&x.b.d, &sb->mr, S_IOVA + 1010), ==, 0xcc);
    g_assert_cmphex(*mr_byte(&x.b.d, &sb->mr, S_IOVA + 12000), ==, 0xcc);
    g_assert_cmpuint(qp_rings(&x.a.d, &sa->qp)[0].cons_head, ==, 1);
    g_assert_cmpuint(qp_rings(&x.b.d, &sb->qp)[1].cons_head, ==, 1);

    /* SEND_WITH_IMM, unsignaled: silent at the requester */
    gb[0] = mr_sge(sb, 20000, 4000);
    post_recv(&x.b.d, &sb->qp, 0xb2, gb, 1);
    {
        struct pvrdma_sq_wqe_hdr w = { 0 };

        w.wr_id = 0xa2;
        w.opcode = PVRDMA_WR_SEND_WITH_IMM;
        w.ex.imm_data = 0x11223344;
        post_send(&x.a.d, &sa->qp, &w, ga, 1);
    }
    PUMP(&x.a, &x.b);
    expect_cq_empty(&x.a.d, &sa->cq);
    g_assert_cmpuint(qp_rings(&x.a.d, &sa->qp)[0].cons_head, ==, 2);
    g_assert_true(poll_cq(&x.b.d, &sb->cq, &e));
    g_assert_cmphex(e.wr_id, ==, 0xb2);
    g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
    g_assert_cmpuint(e.opcode, ==, PVRDMA_WC_RECV);
    g_assert_cmpuint(e.byte_len, ==, 3000);
    g_assert_cmphex(e.imm_data, ==, 0x11223344);
    g_assert_true(e.wc_flags & PVRDMA_WC_WITH_IMM);
    mr_read(&x.b.d, &sb->mr, S_IOVA + 20000, got, 3000);
    g_assert_cmpmem(got, 3000, data, 3000);

    /* SEND_WITH_INV: invalidates a fast-registered MR of the responder */
    {
        union pvrdma_cmd_req req = { 0 };
        union pvrdma_cmd_resp rsp;
        struct pvrdma_sq_wqe_hdr w = { 0 };
        uint64_t pl[2];
        uint32_t key;

        req.create_mr.pd_handle = sb->pd;
        req.create_mr.flags = PVRDMA_MR_FLAG_FRMR;
        req.create_mr.nchunks = 2;
        g_assert_cmpuint(dev_cmd(&x.b.d, &req, PVRDMA_CMD_CREATE_MR, &rsp),
                         ==, 0);
        key = rsp.create_mr_resp.mr_handle << 8 | 0x5e;
        pl[0] = fh_alloc(&x.b.d.h, 1);
        pl[1] = fh_alloc(&x.b.d.h, 1);
        w.wr_id = 0xbf;
        w.opcode = PVRDMA_WR_FAST_REG_MR;
        w.send_flags = PVRDMA_SEND_SIGNALED;
        w.wr.fast_reg.iova_start = 0x30000000;
        w.wr.fast_reg.pl_pdir_dma = fh_make_pdir(&x.b.d.h, pl, 2);
        w.wr.fast_reg.page_shift = 12;
        w.wr.fast_reg.page_list_len = 2;
        w.wr.fast_reg.length = 2 * FH_PAGE;
        w.wr.fast_reg.access_flags = PVRDMA_ACCESS_LOCAL_WRITE |
                                     PVRDMA_ACCESS_REMOTE_WRITE;
        w.wr.fast_reg.rkey = key;
        post_send(&x.b.d, &sb->qp, &w, NULL, 0);
        PUMP(&x.a, &x.b);
        side_expect_cqe(sb, 0xbf, PVRDMA_WC_SUCCESS, PVRDMA_WC_FAST_REG_MR, 0);
        g_assert_true(pvrdma_mr_by_key(&x.b.d.c, key)->valid);

        gb[0] = mr_sge(sb, 0, 100);
        post_recv(&x.b.d, &sb->qp, 0xb3, gb, 1);
        memset(&w, 0, sizeof(w));
        w.wr_id = 0xa3;
        w.opcode = PVRDMA_WR_SEND_WITH_INV;
        w.send_flags = PVRDMA_SEND_SIGNALED;
        w.ex.invalidate_rkey = key;
        ga[0].length = 64;
        post_send(&x.a.d, &sa->qp, &w, ga, 1);
        PUMP(&x.a, &x.b);
        side_expect_cqe(sa, 0xa3, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 64);
        g_assert_true(poll_cq(&x.b.d, &sb->cq, &e));
        g_assert_cmphex(e.wr_id, ==, 0xb3);
        g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
        g_assert_cmpuint(e.byte_len, ==, 64);
        g_assert_true(e.wc_flags & PVRDMA_WC_WITH_INVALIDATE);
        g_assert_false(pvrdma_mr_by_key(&x.b.d.c, key)->valid);
        mr_read(&x.b.d, &sb->mr, S_IOVA, got, 64);
        g_assert_cmpmem(got, 64, data, 64);

        /* invalidating an rkey that is no FRMR: both QPs to error */
        post_recv(&x.b.d, &sb->qp, 0xb4, gb, 1);
        w.wr_id = 0xa4;
        w.ex.invalidate_rkey = sb->mr.rkey;
        post_send(&x.a.d, &sa->qp, &w, ga, 1);
        PUMP(&x.a, &x.b);
        side_expect_cqe(sa, 0xa4, PVRDMA_WC_REM_INV_REQ_ERR, PVRDMA_WC_SEND,
                        0);
        side_expect_cqe(sb, 0xb4, PVRDMA_WC_REM_INV_REQ_ERR, PVRDMA_WC_RECV,
                        0);
        g_assert_cmpuint(qp_state(sa), ==, PVRDMA_QPS_ERR);
        g_assert_cmpuint(qp_state(sb), ==, PVRDMA_QPS_ERR);
    }
    x_fini(&x);
}

static void test_write(void)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    uint8_t data[6000], got[6000];
    struct pvrdma_sge g, r;
    struct pvrdma_cqe e;

    x_setup(&x, 7);
    fill_pattern(data, sizeof(data), 2);
    mr_fill(&x.b.d, &sb->mr, 0x11);
    mr_write(&x.a.d, &sa->mr, S_IOVA + 700, data, sizeof(data));
    g = mr_sge(sa, 700, 6000);
    rdma_wqe(sa, 0xa1, PVRDMA_WR_RDMA_WRITE, &g, 1, S_IOVA + 300,
             sb->mr.rkey, 0);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE, 6000);
    expect_cq_empty(&x.b.d, &sb->cq);   /* no receive consumed */
    mr_read(&x.b.d, &sb->mr, S_IOVA + 300, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));
    g_assert_cmphex(*mr_byte(&x.b.d, &sb->mr, S_IOVA + 299), ==, 0x11);
    g_assert_cmphex(*mr_byte(&x.b.d, &sb->mr, S_IOVA + 6300), ==, 0x11);

    /* WRITE_WITH_IMM consumes a receive; byte_len is the write's */
    r = mr_sge(sb, 0, 16);
    post_recv(&x.b.d, &sb->qp, 0xb1, &r, 1);
    g.length = 100;
    rdma_wqe(sa, 0xa2, PVRDMA_WR_RDMA_WRITE_WITH_IMM, &g, 1, S_IOVA + 10000,
             sb->mr.rkey, 0xdeadbeef);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa2, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE, 100);
    g_assert_true(poll_cq(&x.b.d, &sb->cq, &e));
    g_assert_cmphex(e.wr_id, ==, 0xb1);
    g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
    g_assert_cmpuint(e.opcode, ==, PVRDMA_WC_RECV_RDMA_WITH_IMM);
    g_assert_cmpuint(e.byte_len, ==, 100);
    g_assert_cmphex(e.imm_data, ==, 0xdeadbeef);
    g_assert_cmpuint(e.src_qp, ==, sa->qp.qpn);
    mr_read(&x.b.d, &sb->mr, S_IOVA + 10000, got, 100);
    g_assert_cmpmem(got, 100, data, 100);

    x_fini(&x);
}

/*
 * A burst through a nearly full socket (no rings): the requester queues
 * what does not fit and sends it when the peer has read; all complete, in
 * order, every write landed.  (A full ring: test_ring_backlog().)
 */
static void burst_run_features(uint32_t ring_size, unsigned n, uint64_t fa,
                               uint64_t fb)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    uint8_t data[15 * 300], got[300];
    FhWatch *w;
    int sz = 1;

    g_assert_cmpuint(n * 300, <=, sizeof(data));
    g_ring_size = ring_size;
    x_setup_features(&x, 7, fa, fb);
    g_ring_size = CR_RING_SIZE;
    g_assert_cmphex(pvrdma_coresident_peer_features(x.a.t, 0), ==, fa & fb);
    g_assert_cmphex(pvrdma_coresident_peer_features(x.b.t, 0), ==, fa & fb);
    /* without the feature on either side, no rings: as ring_size 0 */
    if (!(fa & fb & CR_F_RINGS)) {
        ring_size = 0;
    }
    fill_pattern(data, sizeof(data), 3);
    mr_write(&x.a.d, &sa->mr, S_IOVA + 700, data, sizeof(data));
    w = peer_watch(&x.a);
    g_assert_nonnull(w);
    if (!ring_size) {
        g_assert_cmpint(setsockopt(w->fd, SOL_SOCKET, SO_SNDBUF, &sz,
                                   sizeof(sz)), ==, 0);
    }
    for (unsigned i = 0; i < n; i++) {
        struct pvrdma_sq_wqe_hdr h = { 0 };
        struct pvrdma_sge s = mr_sge(sa, 700 + i * 300, 300);

        h.wr_id = 0x100 + i;
        h.opcode = PVRDMA_WR_RDMA_WRITE;
        h.send_flags = PVRDMA_SEND_SIGNALED;
        h.wr.rdma.remote_addr = S_IOVA + 40000 - i * 300;
        h.wr.rdma.rkey = sb->mr.rkey;
        put_send(&x.a.d, &sa->qp, &h, &s, 1);
        /* one run's requests share a datagram or record: one run each */
        ring_send(&x.a.d, &sa->qp);
        PUMP(&x.a);
    }
    if (!ring_size) {
        w = peer_watch(&x.a);
        g_assert_nonnull(w);
        g_assert_nonnull(w->write);     /* waiting for room in the socket */
    }
    expect_cq_empty(&x.a.d, &sa->cq);
    PUMP(&x.a, &x.b);
    g_assert_null(peer_watch(&x.a)->write);
    for (unsigned i = 0; i < n; i++) {
        side_expect_cqe(sa, 0x100 + i, PVRDMA_WC_SUCCESS,
                        PVRDMA_WC_RDMA_WRITE, 300);
        mr_read(&x.b.d, &sb->mr, S_IOVA + 40000 - i * 300, got, 300);
        g_assert_cmpmem(got, 300, data + i * 300, 300);
    }
    x_fini(&x);
}

static void burst_run(uint32_t ring_size, unsigned n)
{
    burst_run_features(ring_size, n, CR_F_ALL, CR_F_ALL);
}

static void test_burst_socket(void)
{
    burst_run(0, 15);
}

/* The same through the rings: nothing queues, the same order and data. */
static void test_burst_ring(void)
{
    burst_run(CR_RING_SIZE, 15);
}

/*
 * Two builds, one without the rings (CR_F_RINGS): the connection stays on
 * the socket whichever side lacks them (b connected: it would make the
 * rings), with both offering ring memory; the same order and data.  The
 * other feature is used as both offer it.
 */
static void test_features_no_rings(void)
{
    burst_run_features(CR_RING_SIZE, 15, CR_F_OFFER, CR_F_ALL);
    burst_run_features(CR_RING_SIZE, 15, CR_F_ALL, CR_F_OFFER);
    burst_run_features(CR_RING_SIZE, 15, 0, 0);
    /* what both have: the rings */
    burst_run_features(CR_RING_SIZE, 15, CR_F_RINGS, CR_F_ALL);
}

static void test_read(void)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    uint8_t data[9000], got[9000];
    struct pvrdma_sge g[3];

    x_setup(&x, 7);
    fill_pattern(data, sizeof(data), 3);
    mr_write(&x.b.d, &sb->mr, S_IOVA + 4000, data, sizeof(data));
    mr_fill(&x.a.d, &sa->mr, 0);
    g[0] = mr_sge(sa, 8000, 4000);
    g[1] = mr_sge(sa, 0, 1);
    g[2] = mr_sge(sa, 1, 4999);
    rdma_wqe(sa, 0xa1, PVRDMA_WR_RDMA_READ, g, 3, S_IOVA + 4000,
             sb->mr.rkey, 0);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_READ, 9000);
    mr_read(&x.a.d, &sa->mr, S_IOVA + 8000, got, 4000);
    mr_read(&x.a.d, &sa->mr, S_IOVA, got + 4000, 5000);
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));
    g_assert_cmpuint(*mr_byte(&x.a.d, &sa->mr, S_IOVA + 12000), ==, 0);
    x_fini(&x);
}

static void test_atomics(void)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    const uint64_t raddr = S_IOVA + 0x100;
    struct pvrdma_sge g;
    struct pvrdma_sq_wqe_hdr w = { 0 };
    uint64_t v = 100, r;

    x_setup(&x, 7);
    mr_write(&x.b.d, &sb->mr, raddr, &v, 8);
    g = mr_sge(sa, 8, 8);
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.wr.atomic.remote_addr = raddr;
    w.wr.atomic.rkey = sb->mr.rkey;

    /* fetch-add 5: remote 105, local gets 100 */
    w.wr_id = 1;
    w.opcode = PVRDMA_WR_ATOMIC_FETCH_AND_ADD;
    w.wr.atomic.compare_add = 5;
    post_send(&x.a.d, &sa->qp, &w, &g, 1);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 1, PVRDMA_WC_SUCCESS, PVRDMA_WC_FETCH_ADD, 8);
    mr_read(&x.b.d, &sb->mr, raddr, &r, 8);
    g_assert_cmpuint(r, ==, 105);
    mr_read(&x.a.d, &sa->mr, S_IOVA + 8, &r, 8);
    g_assert_cmpuint(r, ==, 100);

    /* compare-swap that matches, then one that does not */
    w.wr_id = 2;
    w.opcode = PVRDMA_WR_ATOMIC_CMP_AND_SWP;
    w.wr.atomic.compare_add = 105;
    w.wr.atomic.swap = 7;
    post_send(&x.a.d, &sa->qp, &w, &g, 1);
    g.addr = S_IOVA + 16;
    w.wr_id = 3;
    w.wr.atomic.compare_add = 1;
    w.wr.atomic.swap = 9;
    post_send(&x.a.d, &sa->qp, &w, &g, 1);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 2, PVRDMA_WC_SUCCESS, PVRDMA_WC_COMP_SWAP, 8);
    side_expect_cqe(sa, 3, PVRDMA_WC_SUCCESS, PVRDMA_WC_COMP_SWAP, 8);
    mr_read(&x.b.d, &sb->mr, raddr, &r, 8);
    g_assert_cmpuint(r, ==, 7);
    mr_read(&x.a.d, &sa->mr, S_IOVA + 8, &r, 8);
    g_assert_cmpuint(r, ==, 105);
    mr_read(&x.a.d, &sa->mr, S_IOVA + 16, &r, 8);
    g_assert_cmpuint(r, ==, 7);

    /* the other way round: b adds to a's memory */
    v = 1000;
    mr_write(&x.a.d, &sa->mr, S_IOVA + 64, &v, 8);
    memset(&w, 0, sizeof(w));
    w.wr_id = 0xb1;
    w.opcode = PVRDMA_WR_ATOMIC_FETCH_AND_ADD;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.wr.atomic.remote_addr = S_IOVA + 64;
    w.wr.atomic.rkey = sa->mr.rkey;
    w.wr.atomic.compare_add = (uint64_t)-1;
    g = mr_sge(sb, 0, 8);
    post_send(&x.b.d, &sb->qp, &w, &g, 1);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sb, 0xb1, PVRDMA_WC_SUCCESS, PVRDMA_WC_FETCH_ADD, 8);
    mr_read(&x.a.d, &sa->mr, S_IOVA + 64, &r, 8);
    g_assert_cmpuint(r, ==, 999);
    mr_read(&x.b.d, &sb->mr, S_IOVA, &r, 8);
    g_assert_cmpuint(r, ==, 1000);

    /* misaligned remote address: remote access error, both QPs in error */
    memset(&w, 0, sizeof(w));
    w.wr_id = 4;
    w.opcode = PVRDMA_WR_ATOMIC_FETCH_AND_ADD;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.wr.atomic.remote_addr = raddr + 4;
    w.wr.atomic.rkey = sb->mr.rkey;
    g = mr_sge(sa, 8, 8);
    post_send(&x.a.d, &sa->qp, &w, &g, 1);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 4, PVRDMA_WC_REM_ACCESS_ERR, PVRDMA_WC_FETCH_ADD, 0);
    g_assert_cmpuint(qp_state(sa), ==, PVRDMA_QPS_ERR);
    g_assert_cmpuint(qp_state(sb), ==, PVRDMA_QPS_ERR);
    mr_read(&x.b.d, &sb->mr, raddr, &r, 8);
    g_assert_cmpuint(r, ==, 7);
    x_fini(&x);
}

/*
 * A DMA MR on the requester: its SGEs are guest physical addresses, mapped
 * for the request and unmapped when the core hands it over; the peer still
 * finds the bytes (SEND) and its READ lands there.
 */
static void test_dma_mr(void)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    union pvrdma_cmd_req req = { 0 };
    union pvrdma_cmd_resp rsp;
    struct pvrdma_sge g, r;
    uint8_t data[6000], got[6000];
    uint64_t buf;
    unsigned maps;

    x_setup(&x, 7);
    req.create_mr.pd_handle = sa->pd;
    req.create_mr.flags = PVRDMA_MR_FLAG_DMA;
    req.create_mr.access_flags = PVRDMA_ACCESS_LOCAL_WRITE;
    g_assert_cmpuint(dev_cmd(&x.a.d, &req, PVRDMA_CMD_CREATE_MR, &rsp), ==, 0);
    buf = fh_alloc(&x.a.d.h, 4);
    fill_pattern(data, sizeof(data), 11);
    memcpy((uint8_t *)fh_ptr(&x.a.d.h, buf) + 1000, data, sizeof(data));
    maps = fh_outstanding(&x.a.d.h);

    r = mr_sge(sb, 0, 8000);
    post_recv(&x.b.d, &sb->qp, 0xb1, &r, 1);
    g = (struct pvrdma_sge) { buf + 1000, sizeof(data),
                              rsp.create_mr_resp.lkey };
    send_wqe(sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    g_assert_cmpuint(fh_outstanding(&x.a.d.h), ==, maps);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 6000);
    side_expect_cqe(sb, 0xb1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 6000);
    mr_read(&x.b.d, &sb->mr, S_IOVA, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));

    fill_pattern(data, sizeof(data), 12);
    mr_write(&x.b.d, &sb->mr, S_IOVA + 10, data, sizeof(data));
    g.addr = buf + 7000;
    rdma_wqe(sa, 0xa2, PVRDMA_WR_RDMA_READ, &g, 1, S_IOVA + 10, sb->mr.rkey,
             0);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa2, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_READ, 6000);
    g_assert_cmpmem((uint8_t *)fh_ptr(&x.a.d.h, buf) + 7000, sizeof(data),
                    data, sizeof(data));
    g_assert_cmpuint(fh_outstanding(&x.a.d.h), ==, maps);
    g_assert_cmpuint(x.a.d.h.bad_unmaps, ==, 0);
    x_fini(&x);
}

/* An MR of npages guest pages laid out by 'stride' (runs of 'run' pages). */
typedef struct BigMr {
    uint32_t handle, lkey, rkey;
    uint64_t iova;
    uint32_t npages;
    uint64_t *pages;
} BigMr;

static void big_mr(Dev *d, BigMr *mr, uint32_t pd, uint64_t iova,
                   uint32_t npages, uint32_t run)
{
    union pvrdma_cmd_req req = { 0 };
    union pvrdma_cmd_resp rsp;

    mr->iova = iova;
    mr->npages = npages;
    mr->pages = g_new(uint64_t, npages);
    for (uint32_t i = 0; i < npages; i++) {
        mr->pages[i] = fh_alloc(&d->h, 1);
        if (i % run == run - 1) {
            fh_skip(&d->h, 1);
        }
    }
    req.create_mr.start = iova;
    req.create_mr.length = (uint64_t)npages * FH_PAGE;
    req.create_mr.pdir_dma = fh_make_pdir(&d->h, mr->pages, npages);
    req.create_mr.pd_handle = pd;
    req.create_mr.access_flags = CR_MR_ACCESS;
    req.create_mr.nchunks = npages;
    g_assert_cmpuint(dev_cmd(d, &req, PVRDMA_CMD_CREATE_MR, &rsp), ==, 0);
    mr->handle = rsp.create_mr_resp.mr_handle;
    mr->lkey = rsp.create_mr_resp.lkey;
    mr->rkey = rsp.create_mr_resp.rkey;
}

static void big_fill(Dev *d, BigMr *mr, uint32_t seed)
{
    for (uint32_t i = 0; i < mr->npages; i++) {
        fill_pattern(fh_ptr(&d->h, mr->pages[i]), FH_PAGE, seed + i);
    }
}

/* Does every page of mr on d hold what every page of src on s holds? */
static bool big_equal(Dev *d, BigMr *mr, Dev *s, BigMr *src)
{
    g_assert_cmpuint(mr->npages, ==, src->npages);
    for (uint32_t i = 0; i < mr->npages; i++) {
        if (memcmp(fh_ptr(&d->h, mr->pages[i]), fh_ptr(&s->h, src->pages[i]),
                   FH_PAGE)) {
            g_test_message("page %u differs", i);
            return false;
        }
    }
    return true;
}

/*
 * One message over thousands of discontiguous pages: the request carries
 * one (region, offset, length) entry per page, more than a REQ holds, so
 * it continues in MORE messages (two of them here).
 */
static void test_many_sg(void)
{
    const uint32_t npages = 6000;
    const uint64_t len = (uint64_t)npages * FH_PAGE;
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    BigMr ma, mb;
    struct pvrdma_sge g;

    g_assert_cmpuint(npages, >, CR_REQ_SG_MAX + CR_MORE_SG_MAX);
    x_setup(&x, 7);
    big_mr(&x.a.d, &ma, sa->pd, 0x10000000, npages, 1);    /* all apart */
    big_mr(&x.b.d, &mb, sb->pd, 0x20000000, npages, 3);    /* runs of 3 */
    big_fill(&x.a.d, &ma, 1000);

    /* SEND: a's list goes to b, b copies into its receive buffer */
    g = (struct pvrdma_sge) { mb.iova, len, mb.lkey };
    post_recv(&x.b.d, &sb->qp, 0xb1, &g, 1);
    g = (struct pvrdma_sge) { ma.iova, len, ma.lkey };
    send_wqe(sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, len);
    side_expect_cqe(sb, 0xb1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, len);
    g_assert_true(big_equal(&x.b.d, &mb, &x.a.d, &ma));

    /* READ: b copies its MR into a's discontiguous pages */
    big_fill(&x.b.d, &mb, 50000);
    rdma_wqe(sa, 0xa2, PVRDMA_WR_RDMA_READ, &g, 1, mb.iova, mb.rkey, 0);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa2, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_READ, len);
    g_assert_true(big_equal(&x.a.d, &ma, &x.b.d, &mb));

    /* WRITE of all but the first and last 100 bytes, at an offset */
    big_fill(&x.a.d, &ma, 90000);
    g = (struct pvrdma_sge) { ma.iova + 100, len - 200, ma.lkey };
    rdma_wqe(sa, 0xa3, PVRDMA_WR_RDMA_WRITE, &g, 1, mb.iova + 100, mb.rkey, 0);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa3, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE,
                    len - 200);
    g_assert_cmpmem((uint8_t *)fh_ptr(&x.b.d.h, mb.pages[0]) + 100,
                    FH_PAGE - 100,
                    (uint8_t *)fh_ptr(&x.a.d.h, ma.pages[0]) + 100,
                    FH_PAGE - 100);
    g_assert_cmpmem(fh_ptr(&x.b.d.h, mb.pages[npages / 2]), FH_PAGE,
                    fh_ptr(&x.a.d.h, ma.pages[npages / 2]), FH_PAGE);
    g_assert_cmpmem(fh_ptr(&x.b.d.h, mb.pages[npages - 1]), FH_PAGE - 100,
                    fh_ptr(&x.a.d.h, ma.pages[npages - 1]), FH_PAGE - 100);
    /* the 100 bytes at each end kept the READ's data */
    {
        uint8_t want[100];

        fill_pattern(want, 100, 50000);
        g_assert_cmpmem(fh_ptr(&x.b.d.h, mb.pages[0]), 100, want, 100);
    }
    g_free(ma.pages);
    g_free(mb.pages);
    x_fini(&x);
}

static void ud_to_rts(Dev *d, TQp *q, uint32_t qkey)
{
    struct pvrdma_qp_attr at = { 0 };

    at.qp_state = PVRDMA_QPS_INIT;
    at.port_num = 1;
    at.qkey = qkey;
    g_assert_cmpuint(modify_qp(d, q, PVRDMA_QP_STATE | PVRDMA_QP_PKEY_INDEX |
                               PVRDMA_QP_PORT | PVRDMA_QP_QKEY, &at), ==, 0);
    at.qp_state = PVRDMA_QPS_RTR;
    g_assert_cmpuint(modify_qp(d, q, PVRDMA_QP_STATE, &at), ==, 0);
    at.qp_state = PVRDMA_QPS_RTS;
    g_assert_cmpuint(modify_qp(d, q, PVRDMA_QP_STATE | PVRDMA_QP_SQ_PSN, &at),
                     ==, 0);
}

static void ud_send(Side *s, uint64_t wr_id, const struct pvrdma_sge *g,
                    uint32_t qpn, uint32_t qkey, const uint8_t dgid[16])
{
    struct pvrdma_sq_wqe_hdr w = { 0 };

    w.wr_id = wr_id;
    w.opcode = PVRDMA_WR_SEND;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.wr.ud.remote_qpn = qpn;
    w.wr.ud.remote_qkey = qkey;
    memcpy(w.wr.ud.av.dgid, dgid, 16);
    post_send(&s->v->d, &s->qp, &w, g, 1);
}

/* UD across: the receiver gets a GRH naming both ends, then the payload. */
static void test_ud(void)
{
    Env e;
    Vm a, b;
    Side sa, sb;
    struct pvrdma_sge g, r;
    struct pvrdma_cqe c;
    uint8_t data[300], got[340], nobody[16];

    env_init(&e);
    vm_init(&a, e.dir, 1);
    vm_init(&b, e.dir, 2);
    vm_up(&a);
    vm_up(&b);
    side_init(&sa, &a, PVRDMA_QPT_UD);
    side_init(&sb, &b, PVRDMA_QPT_UD);
    ud_to_rts(&a.d, &sa.qp, 0x1111);
    ud_to_rts(&b.d, &sb.qp, 0x1111);
    PUMP(&a, &b);

    fill_pattern(data, sizeof(data), 4);
    mr_write(&a.d, &sa.mr, S_IOVA, data, sizeof(data));
    mr_fill(&b.d, &sb.mr, 0xee);
    r = mr_sge(&sb, FH_PAGE - 20, 400);
    post_recv(&b.d, &sb.qp, 0xb1, &r, 1);
    g = mr_sge(&sa, 0, sizeof(data));
    ud_send(&sa, 0xa1, &g, sb.qp.qpn, 0x1111, b.gid);
    /* wrong qkey, unknown QP, unknown GID: lost, the sender succeeds */
    ud_send(&sa, 0xa2, &g, sb.qp.qpn, 0x2222, b.gid);
    ud_send(&sa, 0xa3, &g, sb.qp.qpn + 100, 0x1111, b.gid);
    make_gid(nobody, 10, 99);
    ud_send(&sa, 0xa4, &g, sb.qp.qpn, 0x1111, nobody);
    PUMP(&a, &b);
    side_expect_cqe(&sa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 300);
    side_expect_cqe(&sa, 0xa2, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 300);
    side_expect_cqe(&sa, 0xa3, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 300);
    side_expect_cqe(&sa, 0xa4, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 300);
    g_assert_true(poll_cq(&b.d, &sb.cq, &c));
    g_assert_cmphex(c.wr_id, ==, 0xb1);
    g_assert_cmpuint(c.status, ==, PVRDMA_WC_SUCCESS);
    g_assert_cmpuint(c.opcode, ==, PVRDMA_WC_RECV);
    g_assert_cmpuint(c.byte_len, ==, 340);     /* GRH + payload */
    g_assert_true(c.wc_flags & PVRDMA_WC_GRH);
    g_assert_cmpuint(c.src_qp, ==, sa.qp.qpn);
    g_assert_cmpuint(c.qp, ==, sb.qp.handle);
    g_assert_cmpmem(c.smac, 6, a.d.h.mac, 6);
    expect_cq_empty(&b.d, &sb.cq);
    mr_read(&b.d, &sb.mr, S_IOVA + FH_PAGE - 20, got, sizeof(got));
    g_assert_cmpmem(got + 40, 300, data, 300);
    /* RoCEv2 over IPv4: an IPv4 header in the GRH's last 20 bytes */
    g_assert_cmphex(got[20], ==, 0x45);
    g_assert_cmpuint(got[29], ==, 17);                  /* UDP */
    g_assert_cmpmem(got + 32, 4, a.gid + 12, 4);        /* source */
    g_assert_cmpmem(got + 36, 4, b.gid + 12, 4);        /* destination */
    g_assert_cmphex(*mr_byte(&b.d, &sb.mr, S_IOVA + FH_PAGE - 21), ==, 0xee);
    g_assert_cmphex(*mr_byte(&b.d, &sb.mr, S_IOVA + FH_PAGE + 320), ==, 0xee);

    /* no receive posted: a UD datagram is dropped, not held (no RNR) */
    ud_send(&sa, 0xa5, &g, sb.qp.qpn, 0x1111, b.gid);
    PUMP(&a, &b);
    side_expect_cqe(&sa, 0xa5, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 300);
    post_recv(&b.d, &sb.qp, 0xb2, &r, 1);
    PUMP(&a, &b);
    expect_cq_empty(&b.d, &sb.cq);

    /* and back, b to a */
    r = mr_sge(&sa, 8192, 400);
    post_recv(&a.d, &sa.qp, 0xa9, &r, 1);
    g = mr_sge(&sb, FH_PAGE + 20, 300);
    ud_send(&sb, 0xb9, &g, sa.qp.qpn, 0x1111, a.gid);
    PUMP(&a, &b);
    side_expect_cqe(&sb, 0xb9, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 300);
    side_expect_cqe(&sa, 0xa9, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 340);
    mr_read(&a.d, &sa.mr, S_IOVA + 8192, got, sizeof(got));
    g_assert_cmpmem(got + 32, 4, b.gid + 12, 4);
    g_assert_cmpmem(got + 40, 300, data, 300);

    expect_cq_empty(&a.d, &sa.cq);
    expect_cq_empty(&b.d, &sb.cq);
    vm_fini(&a);
    vm_fini(&b);
    env_fini(&e);
}

/* ------------------------------------------------------------------ */
/* RNR and errors                                                      */

/* Sends wait at the responder until receives are posted, in order. */
static void test_rnr_recover(void)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    struct pvrdma_sge g[2], r[2];
    uint8_t d0[64], d1[64], got[64];

    x_setup(&x, 7);     /* rnr_retry 7: wait forever */
    fill_pattern(d0, 64, 5);
    fill_pattern(d1, 64, 6);
    mr_write(&x.a.d, &sa->mr, S_IOVA, d0, 64);
    mr_write(&x.a.d, &sa->mr, S_IOVA + 64, d1, 64);
    g[0] = mr_sge(sa, 0, 64);
    g[1] = mr_sge(sa, 64, 64);
    r[0] = mr_sge(sb, 1000, 64);
    r[1] = mr_sge(sb, 2000, 64);
    send_wqe(sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g[0], 1);
    send_wqe(sa, 0xa2, PVRDMA_WR_SEND_WITH_IMM, PVRDMA_SEND_SIGNALED, &g[1],
             1);
    PUMP(&x.a, &x.b);
    expect_cq_empty(&x.a.d, &sa->cq);
    expect_cq_empty(&x.b.d, &sb->cq);
    g_assert_cmpuint(qp_rings(&x.a.d, &sa->qp)[0].cons_head, ==, 0);
    x.a.d.h.now += 1000000;
    x.b.d.h.now += 1000000;
    PUMP(&x.a, &x.b);
    expect_cq_empty(&x.a.d, &sa->cq);

    post_recv(&x.b.d, &sb->qp, 0xb1, &r[0], 1);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 64);
    side_expect_cqe(sb, 0xb1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 64);
    expect_cq_empty(&x.a.d, &sa->cq);
    post_recv(&x.b.d, &sb->qp, 0xb2, &r[1], 1);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa2, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 64);
    side_expect_cqe(sb, 0xb2, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 64);
    mr_read(&x.b.d, &sb->mr, S_IOVA + 1000, got, 64);
    g_assert_cmpmem(got, 64, d0, 64);
    mr_read(&x.b.d, &sb->mr, S_IOVA + 2000, got, 64);
    g_assert_cmpmem(got, 64, d1, 64);
    g_assert_cmpuint(qp_state(sa), ==, PVRDMA_QPS_RTS);
    x_fini(&x);
}

/*
 * A WQE that fails locally behind one still in flight: nothing posted after
 * it runs (the peer's memory stays untouched); once the first completes,
 * the failed one reports its error and the rest are flushed.
 */
static void test_fail_behind_inflight(void)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    struct pvrdma_sge g, bad, r;
    uint8_t before[64], after[64];

    x_setup(&x, 7);
    g = mr_sge(sa, 0, 64);
    bad = g;
    r = mr_sge(sb, 0, 64);
    mr_read(&x.b.d, &sb->mr, S_IOVA + 4096, before, 64);
    send_wqe(sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a, &x.b);                   /* waits at b: no receive */
    bad.lkey ^= 0x80;                   /* fails at a, at once */
    send_wqe(sa, 0xa2, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &bad, 1);
    PUMP(&x.a, &x.b);
    mr_write(&x.a.d, &sa->mr, S_IOVA + 128, "must not land", 13);
    g = mr_sge(sa, 128, 13);
    rdma_wqe(sa, 0xa3, PVRDMA_WR_RDMA_WRITE, &g, 1, S_IOVA + 4096,
             sb->mr.rkey, 0);
    PUMP(&x.a, &x.b);
    expect_cq_empty(&x.a.d, &sa->cq);
    mr_read(&x.b.d, &sb->mr, S_IOVA + 4096, after, 64);
    g_assert_cmpmem(after, 64, before, 64);

    post_recv(&x.b.d, &sb->qp, 0xb1, &r, 1);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sb, 0xb1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 64);
    side_expect_cqe(sa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 64);
    side_expect_cqe(sa, 0xa2, PVRDMA_WC_LOC_PROT_ERR, PVRDMA_WC_SEND, 64);
    side_expect_cqe(sa, 0xa3, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_RDMA_WRITE,
                    0);
    g_assert_cmpuint(qp_state(sa), ==, PVRDMA_QPS_ERR);
    mr_read(&x.b.d, &sb->mr, S_IOVA + 4096, after, 64);
    g_assert_cmpmem(after, 64, before, 64);
    x_fini(&x);
}

/* A finite rnr_retry runs out: RNR_RETRY_EXC_ERR at the requester. */
static void test_rnr_timeout(void)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    struct pvrdma_sge g, r;

    x_setup(&x, 1);     /* rnr_retry 1, min_rnr_timer 1: 20 ms */
    r = mr_sge(sa, 4096, 64);
    post_recv(&x.a.d, &sa->qp, 0xa0, &r, 1);   /* flushed with the error */
    g = mr_sge(sa, 0, 64);
    send_wqe(sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    send_wqe(sa, 0xa2, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a, &x.b);
    expect_cq_empty(&x.a.d, &sa->cq);
    /* the responder asked for a run at the deadline */
    g_assert_cmpint(x.b.d.h.timer_due, ==, x.b.d.h.now + 20);
    x.a.d.h.now += 19;
    x.b.d.h.now += 19;
    PUMP(&x.a, &x.b);
    expect_cq_empty(&x.a.d, &sa->cq);
    x.a.d.h.now += 1;
    x.b.d.h.now += 1;
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa1, PVRDMA_WC_RNR_RETRY_EXC_ERR, PVRDMA_WC_SEND, 0);
    side_expect_cqe(sa, 0xa2, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_SEND, 0);
    side_expect_cqe(sa, 0xa0, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_RECV, 0);
    g_assert_cmpuint(qp_state(sa), ==, PVRDMA_QPS_ERR);
    g_assert_cmpuint(qp_state(sb), ==, PVRDMA_QPS_RTS);
    /* the dropped sends do not come back when a receive shows up */
    r = mr_sge(sb, 0, 64);
    post_recv(&x.b.d, &sb->qp, 0xb1, &r, 1);
    PUMP(&x.a, &x.b);
    expect_cq_empty(&x.b.d, &sb->cq);
    g_assert_cmpuint(peers(&x.a), ==, 1);
    x_fini(&x);
}

/* A bad rkey: REM_ACCESS_ERR at the requester, responder QP in error. */
static void test_bad_rkey(void)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    struct pvrdma_sge g, ra, rb;
    uint8_t before[256], after[256];

    x_setup(&x, 7);
    mr_fill(&x.b.d, &sb->mr, 0x77);
    mr_read(&x.b.d, &sb->mr, S_IOVA, before, sizeof(before));
    ra = mr_sge(sa, 8192, 64);
    rb = mr_sge(sb, 8192, 64);
    post_recv(&x.a.d, &sa->qp, 0xa0, &ra, 1);
    post_recv(&x.b.d, &sb->qp, 0xb0, &rb, 1);
    rb.addr += 64;
    post_recv(&x.b.d, &sb->qp, 0xb1, &rb, 1);
    g = mr_sge(sa, 0, 256);
    rdma_wqe(sa, 0xa1, PVRDMA_WR_RDMA_WRITE, &g, 1, S_IOVA, sb->mr.rkey ^ 1,
             0);
    send_wqe(sa, 0xa2, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa1, PVRDMA_WC_REM_ACCESS_ERR, PVRDMA_WC_RDMA_WRITE,
                    0);
    side_expect_cqe(sa, 0xa2, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_SEND, 0);
    side_expect_cqe(sa, 0xa0, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_RECV, 0);
    g_assert_cmpuint(qp_state(sa), ==, PVRDMA_QPS_ERR);
    /* the responder's QP is in error, its receives flushed, memory intact */
    g_assert_cmpuint(qp_state(sb), ==, PVRDMA_QPS_ERR);
    side_expect_cqe(sb, 0xb0, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_RECV, 0);
    side_expect_cqe(sb, 0xb1, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_RECV, 0);
    mr_read(&x.b.d, &sb->mr, S_IOVA, after, sizeof(after));
    g_assert_cmpmem(before, sizeof(before), after, sizeof(after));
    g_assert_cmpuint(peers(&x.a), ==, 1);
    g_assert_cmpuint(peers(&x.b), ==, 1);
    x_fini(&x);
}

/* The responder's QP goes to error or away while a request waits on it. */
/*
 * Nobody answers s's request: as on a wire, its RETRY_EXC_ERR comes when
 * the QP's retries have run out (timeout 14, retry_cnt 7: 8 x 67 ms), not a
 * millisecond earlier.
 */
#define RETRY_WINDOW_MS 536

static void pass_retry_window(Side *s)
{
    PUMP(s->v);
    expect_cq_empty(&s->v->d, &s->cq);
    g_assert_cmpuint(qp_state(s), ==, PVRDMA_QPS_RTS);
    s->v->d.h.now += RETRY_WINDOW_MS - 1;
    PUMP(s->v);
    expect_cq_empty(&s->v->d, &s->cq);
    s->v->d.h.now += 1;
    PUMP(s->v);
}

static void test_responder_qp_gone(void)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    Side a2, b2;
    struct pvrdma_sge g;
    struct pvrdma_qp_attr at = { 0 };
    union pvrdma_cmd_req req = { 0 };

    x_setup(&x, 7);
    g = mr_sge(sa, 0, 64);
    send_wqe(sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a, &x.b);
    expect_cq_empty(&x.a.d, &sa->cq);
    at.qp_state = PVRDMA_QPS_ERR;
    g_assert_cmpuint(modify_qp(&x.b.d, &sb->qp, PVRDMA_QP_STATE, &at), ==, 0);
    PUMP(&x.a, &x.b);
    pass_retry_window(sa);
    side_expect_cqe(sa, 0xa1, PVRDMA_WC_RETRY_EXC_ERR, PVRDMA_WC_SEND, 0);
    g_assert_cmpuint(qp_state(sa), ==, PVRDMA_QPS_ERR);

    side_init(&a2, &x.a, PVRDMA_QPT_RC);
    side_init(&b2, &x.b, PVRDMA_QPT_RC);
    rc_connect(&a2, &b2, 7);
    g = mr_sge(&a2, 0, 64);
    send_wqe(&a2, 0xa2, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a, &x.b);
    expect_cq_empty(&x.a.d, &a2.cq);
    req.destroy_qp.qp_handle = b2.qp.handle;
    g_assert_cmpuint(dev_cmd(&x.b.d, &req, PVRDMA_CMD_DESTROY_QP, NULL), ==,
                     0);
    PUMP(&x.a, &x.b);
    pass_retry_window(&a2);
    side_expect_cqe(&a2, 0xa2, PVRDMA_WC_RETRY_EXC_ERR, PVRDMA_WC_SEND, 0);
    g_assert_cmpuint(peers(&x.a), ==, 1);
    g_assert_cmpuint(peers(&x.b), ==, 1);
    expect_cq_empty(&x.a.d, &a2.cq);
    expect_cq_empty(&x.b.d, &b2.cq);
    x_fini(&x);
}

/*
 * The requester's QP is destroyed, reset or moved to error while its sends
 * wait at the responder for a receive: they must not be delivered when a
 * receive shows up later (the QP that sent them is gone, and so may be the
 * memory they would be read from).
 */
static void test_requester_qp_gone(void)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    Side a2, b2, a3, b3;
    struct pvrdma_sge g, r;
    struct pvrdma_qp_attr at = { 0 };
    union pvrdma_cmd_req req = { 0 };
    Pumper pb;

    x_setup(&x, 7);
    side_init(&a2, &x.a, PVRDMA_QPT_RC);
    side_init(&b2, &x.b, PVRDMA_QPT_RC);
    rc_connect(&a2, &b2, 7);
    side_init(&a3, &x.a, PVRDMA_QPT_RC);
    side_init(&b3, &x.b, PVRDMA_QPT_RC);
    rc_connect(&a3, &b3, 7);
    g = mr_sge(sa, 0, 64);
    send_wqe(sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    g = mr_sge(&a2, 0, 64);
    send_wqe(&a2, 0xa2, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    g = mr_sge(&a3, 0, 64);
    send_wqe(&a3, 0xa3, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a, &x.b);
    expect_cq_empty(&x.a.d, &sa->cq);

    /*
     * sa destroyed, a2 reset (each waits for b, served meanwhile by its
     * own QEMU, to drop the request waiting there: the fence), a3 to error
     */
    pumper_start(&pb, &x.b);
    req.destroy_qp.qp_handle = sa->qp.handle;
    g_assert_cmpuint(dev_cmd(&x.a.d, &req, PVRDMA_CMD_DESTROY_QP, NULL), ==,
                     0);
    at.qp_state = PVRDMA_QPS_RESET;
    g_assert_cmpuint(modify_qp(&x.a.d, &a2.qp, PVRDMA_QP_STATE, &at), ==, 0);
    pumper_stop(&pb);
    side_expect_cqe(&a2, 0xa2, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_SEND, 0);
    at.qp_state = PVRDMA_QPS_ERR;
    g_assert_cmpuint(modify_qp(&x.a.d, &a3.qp, PVRDMA_QP_STATE, &at), ==, 0);
    PUMP(&x.a, &x.b);
    side_expect_cqe(&a3, 0xa3, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_SEND, 0);

    r = mr_sge(sb, 0, 64);
    post_recv(&x.b.d, &sb->qp, 0xb1, &r, 1);
    r = mr_sge(&b2, 0, 64);
    post_recv(&x.b.d, &b2.qp, 0xb2, &r, 1);
    r = mr_sge(&b3, 0, 64);
    post_recv(&x.b.d, &b3.qp, 0xb3, &r, 1);
    PUMP(&x.a, &x.b);
    expect_cq_empty(&x.b.d, &sb->cq);
    expect_cq_empty(&x.b.d, &b2.cq);
    expect_cq_empty(&x.b.d, &b3.cq);
    g_assert_cmpuint(peers(&x.a), ==, 1);
    g_assert_cmpuint(peers(&x.b), ==, 1);
    expect_cq_empty(&x.a.d, &a2.cq);
    expect_cq_empty(&x.a.d, &a3.cq);
    expect_cq_empty(&x.b.d, &sb->cq);
    vm_fini(&x.a);
    vm_fini(&x.b);
    env_fini(&x.e);
}

/*
 * The fence.  The responder copies from and to the requester's memory when
 * it executes a request, which may be long after it was sent (a busy
 * peer's socket backlog, an RNR wait).  a destroys its QP (or resets it,
 * or the guest resets the device) with a SEND, a READ and a SEND waiting
 * for a receive still at b, which runs late, and then reuses the memory
 * at once, as a guest does once the command returned: b must have
 * received the data as it was, and nothing may land in the memory later.
 */
enum { FENCE_DESTROY, FENCE_RESET_QP, FENCE_RESET_DEVICE };

static void fence_case(int how)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    uint8_t p1[P_LEN], p2[2 * 4096], p3[P_LEN], got[P_LEN];
    struct pvrdma_sge g, r;
    Pumper pb;

    x_setup(&x, 7);
    fill_pattern(p1, sizeof(p1), 41);
    fill_pattern(p2, sizeof(p2), 42);
    fill_pattern(p3, sizeof(p3), 43);
    mr_write(&x.a.d, &sa->mr, S_IOVA, p1, sizeof(p1));
    mr_write(&x.b.d, &sb->mr, S_IOVA + 8192, p3, sizeof(p3));
    r = mr_sge(sb, 0, P_LEN);
    post_recv(&x.b.d, &sb->qp, 0xb1, &r, 1);
    PUMP(&x.b);
    g = mr_sge(sa, 0, P_LEN);
    send_wqe(sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    g = mr_sge(sa, 4096, P_LEN);
    rdma_wqe(sa, 0xa2, PVRDMA_WR_RDMA_READ, &g, 1, S_IOVA + 8192,
             sb->mr.rkey, 0);
    g = mr_sge(sa, 0, P_LEN);
    send_wqe(sa, 0xa3, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a);                 /* sent; b has not run */
    expect_cq_empty(&x.a.d, &sa->cq);

    pumper_start_late(&pb, &x.b, 100);
    if (how == FENCE_DESTROY) {
        union pvrdma_cmd_req req = { 0 };

        req.destroy_qp.qp_handle = sa->qp.handle;
        g_assert_cmpuint(dev_cmd(&x.a.d, &req, PVRDMA_CMD_DESTROY_QP, NULL),
                         ==, 0);
    } else if (how == FENCE_RESET_QP) {
        struct pvrdma_qp_attr at = { .qp_state = PVRDMA_QPS_RESET };

        g_assert_cmpuint(modify_qp(&x.a.d, &sa->qp, PVRDMA_QP_STATE, &at),
                         ==, 0);
    } else {
        pvrdma_core_reg_write(&x.a.d.c, PVRDMA_REG_CTL,
                              PVRDMA_DEVICE_CTL_RESET);
    }
    mr_write(&x.a.d, &sa->mr, S_IOVA, p2, sizeof(p2));  /* reused at once */
    pumper_stop(&pb);
    PUMP(&x.a, &x.b);

    side_expect_cqe(sb, 0xb1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, P_LEN);
    mr_read(&x.b.d, &sb->mr, S_IOVA, got, P_LEN);
    g_assert_cmpmem(got, P_LEN, p1, P_LEN);
    mr_read(&x.a.d, &sa->mr, S_IOVA + 4096, got, P_LEN);
    g_assert_cmpmem(got, P_LEN, p2 + 4096, P_LEN);  /* no late READ */
    /* the last SEND was dropped at b, not kept for a later receive */
    r = mr_sge(sb, 4096, P_LEN);
    post_recv(&x.b.d, &sb->qp, 0xb2, &r, 1);
    PUMP(&x.a, &x.b);
    expect_cq_empty(&x.b.d, &sb->cq);
    g_assert_cmpuint(peers(&x.a), ==, 1);
    if (how == FENCE_RESET_DEVICE) {
        vm_fini(&x.a);          /* its CQ went with the reset */
        vm_fini(&x.b);
        env_fini(&x.e);
        return;
    }
    /* what a's QP saw before it went: the drop is a flush */
    side_expect_cqe(sa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, P_LEN);
    side_expect_cqe(sa, 0xa2, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_READ, P_LEN);
    side_expect_cqe(sa, 0xa3, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_SEND, 0);
    x_fini(&x);
}

static void test_fence_destroy(void)
{
    fence_case(FENCE_DESTROY);
}

static void test_fence_reset_qp(void)
{
    fence_case(FENCE_RESET_QP);
}

static void test_fence_reset_device(void)
{
    fence_case(FENCE_RESET_DEVICE);
}

/* A requester QP towards gid on v, connected to dest's QP (fresh objects). */
static void side_reconnect(Side *s, Vm *v, Side *dest, uint8_t rnr)
{
    side_init(s, v, PVRDMA_QPT_RC);
    side_init(dest, dest->v, PVRDMA_QPT_RC);
    rc_connect(s, dest, rnr);
}

/*
 * MODIFY_QP to RESET with a peer that does not answer (its QEMU hangs):
 * the command returns at once with ERR 0 and its response waits for the
 * fence; another command meanwhile is refused (EBUSY, no response) and a
 * doorbell of the QP sends nothing.  The response comes at the fence's
 * bound, the QP in RESET; b, running again, drops what it held.  Then the
 * same wait ended by the peer's answer, and by a device reset (no
 * response at all).
 */
static void post_modify_reset(Vm *v, TQp *qp)
{
    union pvrdma_cmd_req req = { 0 };

    req.modify_qp.hdr.cmd = PVRDMA_CMD_MODIFY_QP;
    req.modify_qp.hdr.response = 0x5a5a0000ull + PVRDMA_CMD_MODIFY_QP;
    req.modify_qp.qp_handle = qp->handle;
    req.modify_qp.attr_mask = PVRDMA_QP_STATE;
    req.modify_qp.attrs.qp_state = PVRDMA_QPS_RESET;
    memcpy(fh_ptr(&v->d.h, v->d.cmd), &req, sizeof(req));
    memset(fh_ptr(&v->d.h, v->d.resp), 0xee, sizeof(union pvrdma_cmd_resp));
    pvrdma_core_reg_write(&v->d.c, PVRDMA_REG_REQUEST, 0);
    g_assert_cmpuint(pvrdma_core_reg_read(&v->d.c, PVRDMA_REG_ERR), ==, 0);
}

static void expect_modify_answered(Vm *v)
{
    const union pvrdma_cmd_resp *r = fh_ptr(&v->d.h, v->d.resp);

    g_assert_true(dev_cmd_answered(&v->d));
    g_assert_cmphex(r->hdr.ack, ==, PVRDMA_CMD_RESP(PVRDMA_CMD_MODIFY_QP));
    g_assert_cmphex(r->hdr.response, ==,
                    0x5a5a0000ull + PVRDMA_CMD_MODIFY_QP);
    g_assert_cmpuint(r->hdr.err, ==, 0);
}

static void test_fence_silent_peer(void)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    FakeHost *ha = &x.a.d.h;
    union pvrdma_cmd_req q = { 0 };
    uint64_t errs;
    struct pvrdma_sge g, r;
    Pumper pb;

    x_setup(&x, 7);
    g = mr_sge(sa, 0, 64);
    send_wqe(sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a);                 /* at b, which does not run */

    post_modify_reset(&x.a, &sa->qp);
    g_assert_true(x.a.d.c.cmd_waits);
    g_assert_false(dev_cmd_answered(&x.a.d));
    errs = x.a.d.c.guest_errors;
    q.query_qp.hdr.cmd = PVRDMA_CMD_QUERY_QP;
    q.query_qp.qp_handle = sa->qp.handle;
    memcpy(fh_ptr(ha, x.a.d.cmd), &q, sizeof(q));
    pvrdma_core_reg_write(&x.a.d.c, PVRDMA_REG_REQUEST, 0);
    g_assert_cmpuint(pvrdma_core_reg_read(&x.a.d.c, PVRDMA_REG_ERR), ==,
                     EBUSY);
    g_assert_cmpuint(x.a.d.c.guest_errors, ==, errs + 1);
    g_assert_false(dev_cmd_answered(&x.a.d));
    send_wqe(sa, 0xa2, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    g_assert_true(fh_pump(&ha, 1, 20000));
    g_assert_false(dev_cmd_answered(&x.a.d));
    g_assert_cmpint(ha->timer_due, ==, ha->now + PVRDMA_FENCE_MS);

    ha->now += PVRDMA_FENCE_MS - 1;
    g_assert_true(fh_pump(&ha, 1, 20000));
    g_assert_false(dev_cmd_answered(&x.a.d));
    ha->now += 1;
    g_assert_true(fh_pump(&ha, 1, 20000));
    expect_modify_answered(&x.a);
    g_assert_false(x.a.d.c.cmd_waits);
    g_assert_cmpuint(qp_state(sa), ==, PVRDMA_QPS_RESET);

    /* b runs again: it drops the SEND (0xa2 never went) */
    PUMP(&x.a, &x.b);
    r = mr_sge(sb, 0, 64);
    post_recv(&x.b.d, &sb->qp, 0xb1, &r, 1);
    PUMP(&x.a, &x.b);
    expect_cq_empty(&x.b.d, &sb->cq);
    expect_cq_empty(&x.a.d, &sa->cq);

    /* the same wait, ended by b's answer */
    side_reconnect(sa, &x.a, sb, 7);
    g = mr_sge(sa, 0, 64);
    send_wqe(sa, 0xa3, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a);
    post_modify_reset(&x.a, &sa->qp);
    g_assert_false(dev_cmd_answered(&x.a.d));
    /* sent meanwhile, it would hold the fence until its bound */
    send_wqe(sa, 0xa5, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    pumper_start(&pb, &x.b);
    dev_cmd_wait(&x.a.d);
    pumper_stop(&pb);
    expect_modify_answered(&x.a);
    g_assert_cmpuint(qp_state(sa), ==, PVRDMA_QPS_RESET);

    /* and by a device reset: no response, nothing left waiting */
    side_reconnect(sa, &x.a, sb, 7);
    g = mr_sge(sa, 0, 64);
    send_wqe(sa, 0xa4, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a);
    post_modify_reset(&x.a, &sa->qp);
    pumper_start_late(&pb, &x.b, 50);
    pvrdma_core_reg_write(&x.a.d.c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_RESET);
    pumper_stop(&pb);
    g_assert_false(x.a.d.c.cmd_waits);
    ha->now += PVRDMA_FENCE_MS;
    PUMP(&x.a, &x.b);
    g_assert_false(dev_cmd_answered(&x.a.d));
    vm_fini(&x.a);
    vm_fini(&x.b);
    env_fini(&x.e);
}

/*
 * The VM stops for a save while MODIFY_QP to RESET waits for a silent
 * peer: the pause drops the peer (it does not answer PAUSE either) and
 * the command is answered then, before the state would be saved.
 */
static void test_fence_wait_quiesce(void)
{
    X x;
    Side *sa = &x.sa;
    struct pvrdma_sge g;

    x_setup(&x, 7);
    g = mr_sge(sa, 0, 64);
    send_wqe(sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a);
    post_modify_reset(&x.a, &sa->qp);
    g_assert_false(dev_cmd_answered(&x.a.d));
    g_assert_false(pvrdma_core_quiesce(&x.a.d.c, 50));
    expect_modify_answered(&x.a);
    g_assert_false(x.a.d.c.cmd_waits);
    g_assert_cmpuint(peers(&x.a), ==, 0);
    pvrdma_core_resume(&x.a.d.c);
    g_assert_cmpuint(qp_state(sa), ==, PVRDMA_QPS_RESET);
    vm_fini(&x.a);
    vm_fini(&x.b);
    env_fini(&x.e);
}

/*
 * A peer goes away with requests in flight (not read yet) and waiting
 * (RNR): they fail with RETRY_EXC_ERR, the QP goes to error and flushes.
 * Its own requests waiting here are dropped.  A new peer joins and
 * traffic works again.
 */
static void test_peer_gone(void)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    Side a2, b2, ab, bb, a3;
    Vm b2vm;
    struct pvrdma_sge g, r;
    uint8_t data[128], got[128];

    x_setup(&x, 7);
    /* b's send waits at a, which has no receive for it */
    side_init(&ab, &x.a, PVRDMA_QPT_RC);
    side_init(&bb, &x.b, PVRDMA_QPT_RC);
    rc_connect(&bb, &ab, 7);
    g = mr_sge(&bb, 0, 64);
    send_wqe(&bb, 0xb9, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a, &x.b);
    expect_cq_empty(&x.b.d, &bb.cq);
    /* a's send waits at b for a receive */
    r = mr_sge(sa, 8192, 64);
    post_recv(&x.a.d, &sa->qp, 0xa0, &r, 1);
    g = mr_sge(sa, 0, 64);
    send_wqe(sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a, &x.b);
    expect_cq_empty(&x.a.d, &sa->cq);
    /* in flight: b has not run since */
    rdma_wqe(sa, 0xa2, PVRDMA_WR_RDMA_WRITE, &g, 1, S_IOVA, sb->mr.rkey, 0);
    PUMP(&x.a);
    expect_cq_empty(&x.a.d, &sa->cq);

    vm_fini(&x.b);
    pass_retry_window(sa);
    side_expect_cqe(sa, 0xa1, PVRDMA_WC_RETRY_EXC_ERR, PVRDMA_WC_SEND, 0);
    side_expect_cqe(sa, 0xa2, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_RDMA_WRITE, 0);
    side_expect_cqe(sa, 0xa0, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_RECV, 0);
    expect_cq_empty(&x.a.d, &sa->cq);
    g_assert_cmpuint(qp_state(sa), ==, PVRDMA_QPS_ERR);
    g_assert_cmpuint(peers(&x.a), ==, 0);
    g_assert_false(reaches(&x.a, x.b.gid));
    g_assert_cmpuint(fh_watch_count(&x.a.d.h), ==, 1);
    g_assert_cmpuint(count_socks(x.e.dir), ==, 1);
    /* b's send is gone: nothing arrives once a receive is posted */
    r = mr_sge(&ab, 0, 64);
    post_recv(&x.a.d, &ab.qp, 0xab, &r, 1);
    PUMP(&x.a);
    expect_cq_empty(&x.a.d, &ab.cq);
    g_assert_cmpuint(qp_state(&ab), ==, PVRDMA_QPS_RTS);

    /* a new VM (same GID) joins: traffic works again */
    vm_init(&b2vm, x.e.dir, 2);
    vm_up(&b2vm);
    PUMP(&x.a, &b2vm);
    g_assert_cmpuint(peers(&x.a), ==, 1);
    g_assert_cmpuint(peers(&b2vm), ==, 1);
    b2.v = &b2vm;
    side_reconnect(&a2, &x.a, &b2, 7);
    fill_pattern(data, sizeof(data), 8);
    mr_write(&x.a.d, &a2.mr, S_IOVA, data, sizeof(data));
    g = mr_sge(&a2, 0, sizeof(data));
    r = mr_sge(&b2, 100, sizeof(data));
    post_recv(&b2vm.d, &b2.qp, 0xb1, &r, 1);
    send_wqe(&a2, 0xa3, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    rdma_wqe(&a2, 0xa4, PVRDMA_WR_RDMA_WRITE, &g, 1, S_IOVA + 5000,
             b2.mr.rkey, 0);
    PUMP(&x.a, &b2vm);
    side_expect_cqe(&a2, 0xa3, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 128);
    side_expect_cqe(&a2, 0xa4, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE, 128);
    side_expect_cqe(&b2, 0xb1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 128);
    mr_read(&b2vm.d, &b2.mr, S_IOVA + 100, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));
    mr_read(&b2vm.d, &b2.mr, S_IOVA + 5000, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));

    /* this one goes too, with a request it never read */
    rdma_wqe(&a2, 0xa5, PVRDMA_WR_RDMA_READ, &g, 1, S_IOVA, b2.mr.rkey, 0);
    PUMP(&x.a);
    vm_fini(&b2vm);
    pass_retry_window(&a2);
    side_expect_cqe(&a2, 0xa5, PVRDMA_WC_RETRY_EXC_ERR, PVRDMA_WC_RDMA_READ,
                    0);
    g_assert_cmpuint(qp_state(&a2), ==, PVRDMA_QPS_ERR);
    g_assert_cmpuint(peers(&x.a), ==, 0);
    /* with nobody there, an RC send fails after its retries too */
    side_init(&a3, &x.a, PVRDMA_QPT_RC);
    rc_to_rts_gid(&x.a.d, &a3.qp, 5, x.b.gid, 7);
    g = mr_sge(&a3, 0, 64);
    send_wqe(&a3, 0xa6, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    pass_retry_window(&a3);
    side_expect_cqe(&a3, 0xa6, PVRDMA_WC_RETRY_EXC_ERR, PVRDMA_WC_SEND, 0);
    expect_cq_empty(&x.a.d, &a2.cq);
    vm_fini(&x.a);
    env_fini(&x.e);
}

/*
 * The peer goes while requests are still queued in the requester (its
 * socket was full): every one of them completes, the first with
 * RETRY_EXC_ERR, the rest flushed; nothing leaks.
 */
static void peer_gone_backlog_run(uint32_t ring_size, unsigned n)
{
    X x;
    Side *sa = &x.sa, *sb = &x.sb;
    FhWatch *w;
    int sz = 1;

    g_ring_size = ring_size;
    x_setup(&x, 7);
    g_ring_size = CR_RING_SIZE;
    w = peer_watch(&x.a);
    g_assert_nonnull(w);
    if (!ring_size) {
        g_assert_cmpint(setsockopt(w->fd, SOL_SOCKET, SO_SNDBUF, &sz,
                                   sizeof(sz)), ==, 0);
    }
    for (unsigned i = 0; i < n; i++) {
        struct pvrdma_sge g = mr_sge(sa, i * 100, 100);

        rdma_wqe(sa, 0x100 + i, PVRDMA_WR_RDMA_WRITE, &g, 1, S_IOVA,
                 sb->mr.rkey, 0);
        PUMP(&x.a);     /* one run's requests share a datagram: one each */
    }
    PUMP(&x.a);
    if (!ring_size) {
        g_assert_nonnull(peer_watch(&x.a)->write);
    }
    vm_fini(&x.b);
    pass_retry_window(sa);
    side_expect_cqe(sa, 0x100, PVRDMA_WC_RETRY_EXC_ERR, PVRDMA_WC_RDMA_WRITE,
                    0);
    for (unsigned i = 1; i < n; i++) {
        side_expect_cqe(sa, 0x100 + i, PVRDMA_WC_WR_FLUSH_ERR,
                        PVRDMA_WC_RDMA_WRITE, 0);
    }
    expect_cq_empty(&x.a.d, &sa->cq);
    g_assert_cmpuint(peers(&x.a), ==, 0);
    g_assert_cmpuint(fh_watch_count(&x.a.d.h), ==, 1);
    vm_fini(&x.a);
    env_fini(&x.e);
}

static void test_peer_gone_backlog(void)
{
    peer_gone_backlog_run(0, 15);
}

/* The same with the requests in the ring: the same completions. */
static void test_peer_gone_backlog_ring(void)
{
    peer_gone_backlog_run(CR_RING_SIZE, 15);
}

/* ------------------------------------------------------------------ */
/* A fake peer                                                         */

#define FAKE_RAM    (1u << 20)
#define FAKE_NODE   0xfa4e000000000001ull

typedef struct Fake {
    int fd;
    int memfd;
    Vm *v;                  /* the device it talks to */
    uint8_t *ram;           /* FAKE_RAM bytes the fake offers */
    uint8_t *vm_ram;        /* the device's RAM, mapped from its REGION */
    uint64_t vm_ram_size;
    uint64_t vm_node;       /* from the device's HELLO */
    uint32_t vm_auth;
    uint64_t vm_features;   /* what the device's HELLO offers */
    uint64_t features;      /* what the fake's offers: CR_F_ALL unless set */
    uint64_t node;          /* its node id: FAKE_NODE unless set */
    uint8_t vm_nonce[CR_NONCE_LEN];
    uint8_t nonce[CR_NONCE_LEN];        /* the fake's, in its HELLO */
    const char *secret;     /* what the fake believes the secret is */
    /* the device sends several messages per datagram: the rest of one */
    uint8_t pend[CR_MAX_MSG];
    size_t pend_len, pend_off;
    /*
     * The rings (fake_ring_on()): the fake connected, so it made them and
     * produces into ring 0; ring_tx: its messages go there, ring_rx: the
     * device's come from ring 1 (its socket then carries only WAKE).
     */
    uint8_t *ring;
    uint64_t rprod, rcons;
    uint32_t woken;         /* the device's WAKEs taken */
    uint32_t wakes;         /* the fake's WAKEs sent */
    bool ring_tx, ring_rx;
} Fake;

static CrRingIdx *fake_idx(Fake *f, unsigned i)
{
    return &((CrRingShm *)f->ring)[0].idx[i];
}

/* Copy n bytes at ring position pos of ring i (in or out: to_ring). */
static void fake_ring_copy(Fake *f, unsigned i, uint64_t pos, void *buf,
                           uint32_t n, bool to_ring)
{
    uint8_t *data = f->ring + CR_RING_DATA(i, CR_RING_SIZE);

    for (uint32_t k = 0; k < n; k++) {
        uint8_t *at = data + (pos + k) % CR_RING_SIZE;

        if (to_ring) {
            *at = ((uint8_t *)buf)[k];
        } else {
            ((uint8_t *)buf)[k] = *at;
        }
    }
}

/* A record into ring 0 as it is (the fake may publish garbage). */
static void fake_ring_put(Fake *f, const void *buf, uint32_t len,
                          uint32_t hdr_len)
{
    uint32_t hdr[2] = { hdr_len, 0 };
    CrHdr w = { CR_WAKE, sizeof(w) };

    /* the fake's own sends must fit (a hostile fake writes garbage) */
    g_assert_cmpuint(f->rprod + 8 + ROUND_UP(len, 8) -
                     __atomic_load_n(&fake_idx(f, 0)->cons, __ATOMIC_SEQ_CST),
                     <=, CR_RING_SIZE);
    fake_ring_copy(f, 0, f->rprod, hdr, 8, true);
    fake_ring_copy(f, 0, f->rprod + 8, (void *)buf, len, true);
    f->rprod += 8 + ROUND_UP(len, 8);
    __atomic_store_n(&fake_idx(f, 0)->prod, f->rprod, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&fake_idx(f, 0)->polling, __ATOMIC_SEQ_CST) &&
        __atomic_load_n(&fake_idx(f, 0)->woken, __ATOMIC_SEQ_CST) ==
        f->wakes) {
        f->wakes++;
        g_assert_cmpint(fh_sendmsg(f->fd, &w, sizeof(w), -1, MSG_NOSIGNAL),
                        ==, sizeof(w));
    }
}

static void fake_send(Fake *f, const void *buf, size_t len, int fd)
{
    if (f->ring_tx && fd < 0) {
        fake_ring_put(f, buf, len, len);
        return;
    }
    g_assert_cmpint(fh_sendmsg(f->fd, buf, len, fd, MSG_NOSIGNAL), ==, len);
}

/* The device's next record from ring 1: its length, or 0 if none. */
static size_t fake_ring_get(Fake *f, void *buf, size_t cap)
{
    uint64_t prod = __atomic_load_n(&fake_idx(f, 1)->prod, __ATOMIC_SEQ_CST);
    uint32_t hdr[2];

    if (prod == f->rcons) {
        return 0;
    }
    g_assert_cmpuint(prod - f->rcons, <=, CR_RING_SIZE);
    fake_ring_copy(f, 1, f->rcons, hdr, 8, false);
    g_assert_cmpuint(hdr[0], >, 0);
    g_assert_cmpuint(hdr[0], <=, cap);
    g_assert_cmpuint(8 + ROUND_UP(hdr[0], 8), <=, prod - f->rcons);
    fake_ring_copy(f, 1, f->rcons + 8, buf, hdr[0], false);
    f->rcons += 8 + ROUND_UP(hdr[0], 8);
    __atomic_store_n(&fake_idx(f, 1)->cons, f->rcons, __ATOMIC_SEQ_CST);
    return hdr[0];
}

/* One message: its length, 0 at EOF, -1 if none; *fd gets an attached fd. */
static ssize_t fake_recv_datagram(Fake *f, void *buf, size_t cap, int *fd);

/*
 * The next message from the device: datagrams carry one message, or
 * several each starting 8-byte aligned; a descriptor comes alone.
 */
static ssize_t fake_recv(Fake *f, void *buf, size_t cap, int *fd)
{
    const CrHdr *h;
    ssize_t n;

    *fd = -1;
    if (f->pend_off >= f->pend_len) {
        n = fake_recv_datagram(f, f->pend, sizeof(f->pend), fd);
        if (n <= 0) {
            return n;
        }
        f->pend_len = n;
        f->pend_off = 0;
    }
    h = (const CrHdr *)(f->pend + f->pend_off);
    g_assert_cmpuint(f->pend_len - f->pend_off, >=, sizeof(*h));
    g_assert_cmpuint(h->len, >=, sizeof(*h));
    g_assert_cmpuint(h->len, <=, f->pend_len - f->pend_off);
    g_assert_cmpuint(f->pend_off % 8, ==, 0);
    if (*fd >= 0) {
        g_assert_cmpuint(h->len, ==, f->pend_len);  /* an fd comes alone */
    }
    n = h->len;
    g_assert_cmpuint(n, <=, cap);
    memcpy(buf, h, n);
    f->pend_off += ROUND_UP(n, 8);
    return n;
}

static ssize_t fake_recv_socket(Fake *f, void *buf, size_t cap, int *fd);

/* On the rings: the ring first, the socket's WAKEs are skipped. */
static ssize_t fake_recv_datagram(Fake *f, void *buf, size_t cap, int *fd)
{
    for (;;) {
        size_t n = f->ring_rx ? fake_ring_get(f, buf, cap) : 0;
        ssize_t k;

        *fd = -1;
        if (n) {
            return n;
        }
        k = fake_recv_socket(f, buf, cap, fd);
        if (k == 0 && f->ring_rx) {
            return fake_ring_get(f, buf, cap);  /* what it left, then EOF */
        }
        if (!f->ring_rx || k < 0) {
            return k;
        }
        g_assert_cmpuint(k, ==, sizeof(CrHdr));
        g_assert_cmpuint(((CrHdr *)buf)->type, ==, CR_WAKE);
        /* taken: the device WAKEs again for the next record */
        __atomic_store_n(&fake_idx(f, 1)->woken, ++f->woken,
                         __ATOMIC_SEQ_CST);
    }
}

static ssize_t fake_recv_socket(Fake *f, void *buf, size_t cap, int *fd)
{
    union {
        char buf[CMSG_SPACE(sizeof(int) * 4)];
        struct cmsghdr align;
    } u;
    struct iovec iov = { buf, cap };
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1,
        .msg_control = u.buf, .msg_controllen = sizeof(u.buf),
    };
    ssize_t n = recvmsg(f->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

    *fd = -1;
    if (n < 0) {
        g_assert_true(errno == EAGAIN || errno == ECONNRESET);
        return errno == EAGAIN ? -1 : 0;
    }
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm;
         cm = CMSG_NXTHDR(&mh, cm)) {
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
            g_assert_cmpuint(cm->cmsg_len, ==, CMSG_LEN(sizeof(int)));
            g_assert_cmpint(*fd, ==, -1);
            memcpy(fd, CMSG_DATA(cm), sizeof(int));
        }
    }
    g_assert_false(mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC));
    return n;
}

/* The next message, which must be there and have type 'type'. */
static ssize_t fake_expect(Fake *f, void *buf, size_t cap, uint32_t type)
{
    int fd;
    ssize_t n = fake_recv(f, buf, cap, &fd);

    g_assert_cmpint(n, >=, (ssize_t)sizeof(CrHdr));
    g_assert_cmpuint(((CrHdr *)buf)->type, ==, type);
    g_assert_cmpuint(((CrHdr *)buf)->len, ==, n);
    g_assert_cmpint(fd, ==, -1);
    return n;
}

/* Did v hang up on the fake?  (Messages still queued are skipped.) */
static bool fake_dropped(Fake *f)
{
    g_autofree uint8_t *buf = g_malloc(CR_MAX_MSG);

    for (;;) {
        int fd;
        ssize_t n = fake_recv(f, buf, CR_MAX_MSG, &fd);

        if (fd >= 0) {
            close(fd);
        }
        if (n <= 0) {
            return n == 0;
        }
    }
}

/* Connect to v's socket at path; v greets with HELLO, nothing more. */
static void fake_connect(Fake *f, Vm *v, const char *path)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    g_autofree uint8_t *buf = g_malloc(CR_MAX_MSG);
    CrHello *h = (CrHello *)buf;
    void *p;
    int fd;

    memset(f, 0, sizeof(*f));
    f->v = v;
    f->features = CR_F_ALL;
    f->node = FAKE_NODE;
    f->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    g_assert_cmpint(f->fd, >=, 0);
    strcpy(sa.sun_path, path);
    g_assert_cmpint(connect(f->fd, (struct sockaddr *)&sa, sizeof(sa)), ==,
                    0);
    f->memfd = memfd_create("fake-peer", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    g_assert_cmpint(f->memfd, >=, 0);
    g_assert_cmpint(ftruncate(f->memfd, FAKE_RAM), ==, 0);
    g_assert_cmpint(fcntl(f->memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW),
                    ==, 0);
    p = mmap(NULL, FAKE_RAM, PROT_READ | PROT_WRITE, MAP_SHARED, f->memfd, 0);
    g_assert_true(p != MAP_FAILED);
    f->ram = p;
    for (unsigned i = 0; i < CR_NONCE_LEN; i++) {
        f->nonce[i] = g_random_int();
    }

    PUMP(v);
    g_assert_cmpint(fake_recv(f, buf, CR_MAX_MSG, &fd), ==, sizeof(*h));
    g_assert_cmpint(fd, ==, -1);
    g_assert_cmpuint(h->h.type, ==, CR_HELLO);
    g_assert_cmphex(h->magic, ==, CR_MAGIC);
    g_assert_cmpuint(h->version, ==, CR_VERSION);
    g_assert_cmpuint(h->nregions, ==, 1);
    g_assert_cmphex(h->node, !=, 0);
    f->vm_node = h->node;
    f->vm_auth = h->auth;
    f->vm_features = h->features;
    memcpy(f->vm_nonce, h->nonce, CR_NONCE_LEN);
    /* nothing else until the device accepted the fake */
    g_assert_cmpint(fake_recv(f, buf, CR_MAX_MSG, &fd), ==, -1);
}

/* The device accepted the fake: its REGION and GIDS come next. */
static void fake_take_ram(Fake *f)
{
    g_autofree uint8_t *buf = g_malloc(CR_MAX_MSG);
    CrRegionMsg *r = (CrRegionMsg *)buf;
    Vm *v = f->v;
    void *p;
    int fd;

    g_assert_cmpint(fake_recv(f, buf, CR_MAX_MSG, &fd), ==, sizeof(*r));
    g_assert_cmpuint(r->h.type, ==, CR_REGION);
    g_assert_cmpuint(r->index, ==, 0);
    g_assert_cmpuint(r->size, ==, VM_RAM);
    g_assert_cmpuint(r->fd_offset, ==, 0);
    g_assert_cmpint(fd, >=, 0);
    p = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    g_assert_true(p != MAP_FAILED);
    f->vm_ram = p;
    f->vm_ram_size = r->size;
    close(fd);
    /* the device's RAM, seen through the fd: the same bytes */
    g_assert_true(f->vm_ram[4096] == v->d.h.ram[4096]);
    v->d.h.ram[4096] ^= 0xff;
    g_assert_true(f->vm_ram[4096] == v->d.h.ram[4096]);
    v->d.h.ram[4096] ^= 0xff;
    fake_expect(f, buf, CR_MAX_MSG, CR_GIDS);
    g_assert_cmpint(fake_recv(f, buf, CR_MAX_MSG, &fd), ==, -1);
}

/*
 * The HMAC of an AUTH on a fake's connection (the fake connected, so it
 * is the 'c' side): by_fake, the fake's proof, else the device's.
 */
static void fake_mac(const char *secret, bool by_fake, const uint8_t *vnonce,
                     const uint8_t *pnonce, uint64_t pnode, uint64_t vnode,
                     uint8_t mac[CR_MAC_LEN])
{
    GHmac *h = g_hmac_new(G_CHECKSUM_SHA256, (const guchar *)secret,
                          strlen(secret));
    uint8_t role = by_fake ? 'c' : 'a';
    gsize len = CR_MAC_LEN;

    g_hmac_update(h, (const guchar *)CR_AUTH_LABEL, strlen(CR_AUTH_LABEL));
    g_hmac_update(h, &role, 1);
    g_hmac_update(h, vnonce, CR_NONCE_LEN);
    g_hmac_update(h, pnonce, CR_NONCE_LEN);
    g_hmac_update(h, (const guchar *)&pnode, 8);
    g_hmac_update(h, (const guchar *)&vnode, 8);
    g_hmac_get_digest(h, mac, &len);
    g_hmac_unref(h);
}

/* The fake's HELLO as it would send it. */
static CrHello fake_hello_msg(Fake *f, uint32_t nregions)
{
    CrHello h = {
        .h = { CR_HELLO, sizeof(h) },
        .magic = CR_MAGIC,
        .version = CR_VERSION,
        .node = f->node,
        .nregions = nregions,
        .auth = f->secret ? CR_AUTH_HMAC_SHA256 : CR_AUTH_NONE,
        .features = f->features,
    };

    memcpy(h.nonce, f->nonce, CR_NONCE_LEN);
    return h;
}

/*
 * The device's AUTH, which must prove it has f->secret; then the fake's,
 * which proves the fake has it (or not, if the secrets differ).
 */
static void fake_auth(Fake *f)
{
    CrAuthMsg a;
    uint8_t want[CR_MAC_LEN];

    g_assert_cmpint(fake_expect(f, &a, sizeof(a), CR_AUTH), ==, sizeof(a));
    fake_mac(f->secret, false, f->nonce, f->vm_nonce, f->vm_node,
             f->node, want);
    g_assert_cmpmem(a.mac, CR_MAC_LEN, want, CR_MAC_LEN);
    g_assert_cmpint(fake_recv(f, &a, sizeof(a), &(int) { 0 }), ==, -1);
    fake_mac(f->secret, true, f->vm_nonce, f->nonce, f->node, f->vm_node,
             a.mac);
    a.h = (CrHdr) { CR_AUTH, sizeof(a) };
    fake_send(f, &a, sizeof(a), -1);
    PUMP(f->v);
}

/*
 * The fake's HELLO (with f->secret: asking for HMAC authentication, then
 * AUTH both ways).  A device that agrees then accepts the fake: its RAM
 * and GIDs are taken here.
 */
static void fake_hello(Fake *f, uint32_t nregions)
{
    CrHello h = fake_hello_msg(f, nregions);

    fake_send(f, &h, sizeof(h), -1);
    PUMP(f->v);
    if (f->secret && f->vm_auth == CR_AUTH_HMAC_SHA256) {
        fake_auth(f);
    }
    if (!!f->secret == (f->vm_auth == CR_AUTH_HMAC_SHA256)) {
        fake_take_ram(f);
    }
}

static void fake_region(Fake *f, uint32_t index, uint64_t size, uint64_t off,
                        int fd)
{
    CrRegionMsg r = {
        .h = { CR_REGION, sizeof(r) },
        .index = index,
        .size = size,
        .fd_offset = off,
    };

    fake_send(f, &r, sizeof(r), fd);
}

static void fake_gids(Fake *f, const uint8_t gid[16])
{
    struct {
        CrGids m;
        CrGid g;
    } m = { { { CR_GIDS, sizeof(m) }, 1 } };

    memcpy(m.g.gid, gid, 16);
    m.g.type = PVRDMA_GID_TYPE_FLAG_ROCE_V2;
    fake_send(f, &m, sizeof(m), -1);
}

/* HELLO with one region, the region, GIDS: a complete peer. */
static void fake_ready(Fake *f, const uint8_t gid[16])
{
    fake_hello(f, 1);
    fake_region(f, 0, FAKE_RAM, 0, f->memfd);
    fake_gids(f, gid);
}

/*
 * The fake makes the rings (RING, its memory sealed or not), the device
 * answers RING_ON; the fake's RING_ON then moves both onto the rings.
 * With a memory the device refuses, both stay on the socket.
 */
static bool fake_ring_on(Fake *f, bool seal)
{
    CrRingMsg m = { .h = { CR_RING, sizeof(m) }, .ring_size = CR_RING_SIZE };
    CrHdr on = { CR_RING_ON, sizeof(on) }, h;
    int fd = memfd_create("fake-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    int rfd;

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(ftruncate(fd, CR_RING_SHM_SIZE(CR_RING_SIZE)), ==, 0);
    if (seal) {
        g_assert_cmpint(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW),
                        ==, 0);
    }
    f->ring = mmap(NULL, CR_RING_SHM_SIZE(CR_RING_SIZE), PROT_READ | PROT_WRITE,
                   MAP_SHARED, fd, 0);
    g_assert_true(f->ring != MAP_FAILED);
    fake_send(f, &m, sizeof(m), fd);
    close(fd);
    PUMP(f->v);
    if (fake_recv(f, &h, sizeof(h), &rfd) < 0) {
        return false;   /* no RING_ON: it stays on the socket */
    }
    g_assert_cmpint(rfd, ==, -1);
    g_assert_cmpuint(h.type, ==, CR_RING_ON);
    g_assert_cmpuint(h.len, ==, sizeof(h));
    f->ring_rx = true;
    fake_send(f, &on, sizeof(on), -1);
    f->ring_tx = true;
    return true;
}

static void fake_close(Fake *f)
{
    close(f->fd);
    close(f->memfd);
    munmap(f->ram, FAKE_RAM);
    if (f->ring) {
        munmap(f->ring, CR_RING_SHM_SIZE(CR_RING_SIZE));
    }
    if (f->vm_ram) {
        munmap(f->vm_ram, f->vm_ram_size);
    }
}

/* A REQ with nsg entries of sg in the message, nsg_total announced. */
static CrReqMsg *req_msg(uint64_t cookie, uint32_t opcode, uint32_t dest_qpn,
                         const CrSge *sg, uint32_t nsg, uint32_t nsg_total,
                         uint64_t len)
{
    CrReqMsg *m = g_malloc0(sizeof(*m) + nsg * sizeof(CrSge));

    m->h = (CrHdr) { CR_REQ, sizeof(*m) + nsg * sizeof(CrSge) };
    m->cookie = cookie;
    m->opcode = opcode;
    m->src_qpn = 77;
    m->dest_qpn = dest_qpn;
    m->qp_type = PVRDMA_QPT_RC;
    m->rnr_retry = 7;
    m->len = len;
    m->nsg_total = nsg_total;
    m->nsg = nsg;
    if (nsg) {
        memcpy(m->sg, sg, nsg * sizeof(CrSge));
    }
    return m;
}

/* The fake answers a CANCEL of QP qpn with FLUSH for its two requests. */
typedef struct FakeCanceller {
    Fake *f;
    uint32_t qpn;
    uint64_t cookie[2];
} FakeCanceller;

static gpointer fake_cancel_run(gpointer opaque)
{
    FakeCanceller *fc = opaque;
    struct pollfd pfd = { .fd = fc->f->fd, .events = POLLIN };
    CrRespMsg resp = {
        .h = { CR_RESP, sizeof(resp) }, .status = PVRDMA_WC_WR_FLUSH_ERR,
    };
    CrCancelMsg c;
    int fd;

    /*
     * On the rings, the socket may hold a WAKE for a record taken already:
     * wait until the CANCEL is there.
     */
    do {
        g_assert_cmpint(poll(&pfd, 1, 10000), ==, 1);
    } while (fake_recv(fc->f, &c, sizeof(c), &fd) < 0);
    g_assert_cmpuint(c.h.type, ==, CR_CANCEL);
    g_assert_cmpuint(c.h.len, ==, sizeof(c));
    g_assert_cmpint(fd, ==, -1);
    g_assert_cmpuint(c.src_qpn, ==, fc->qpn);
    for (int i = 0; i < 2; i++) {
        resp.cookie = fc->cookie[i];
        fake_send(fc->f, &resp, sizeof(resp), -1);
    }
    return NULL;
}

/* The fake's RESP to a request: returns its status. */
static int32_t fake_resp(Fake *f, uint64_t cookie)
{
    CrRespMsg m;

    g_assert_cmpint(fake_expect(f, &m, sizeof(m), CR_RESP), ==, sizeof(m));
    g_assert_cmphex(m.cookie, ==, cookie);
    return m.status;
}

/*
 * VM a with an RC QP (side sa) in RTS towards QP 77 at the fake's GID
 * (fgid, 10.x.0xfa), and the fake connected to it, not yet introduced;
 * the rendezvous socket's path (g_free it).
 */
/*
 * The fake writes len bytes of its RAM (the nsg pieces of sg) into sa's MR
 * at S_IOVA + off with an RDMA WRITE: answered success, the bytes there.
 */
static void fake_write_checked(Fake *f, Side *sa, uint64_t cookie,
                               const CrSge *sg, uint32_t nsg, uint64_t off,
                               const uint8_t *data, uint32_t len)
{
    g_autofree uint8_t *got = g_malloc(len);
    CrReqMsg *m = req_msg(cookie, PVRDMA_WR_RDMA_WRITE, sa->qp.qpn, sg, nsg,
                          nsg, len);

    m->remote_addr = S_IOVA + off;
    m->rkey = sa->mr.rkey;
    fake_send(f, m, m->h.len, -1);
    g_free(m);
    PUMP(f->v);
    g_assert_cmpint(fake_resp(f, cookie), ==, PVRDMA_WC_SUCCESS);
    mr_read(&f->v->d, &sa->mr, S_IOVA + off, got, len);
    g_assert_cmpmem(got, len, data, len);
}

static char *fake_side_up(Env *e, Vm *a, Side *sa, Fake *f, uint8_t fgid[16])
{
    char *path;

    env_init(e);
    vm_init(a, e->dir, 1);
    vm_up(a);
    side_init(sa, a, PVRDMA_QPT_RC);
    make_gid(fgid, 10, 0xfa);
    rc_to_rts_gid(&a->d, &sa->qp, 77, fgid, 7);
    path = only_sock(e->dir);
    fake_connect(f, a, path);
    return path;
}

/*
 * A well-behaved fake peer: its requests are served from and into its own
 * memory, the device's requests reach it with lists of the device's RAM.
 */
static void fake_peer_run(bool ring)
{
    Env e;
    Vm a;
    Side sa;
    Fake f;
    char *path;
    uint8_t fgid[16], data[5000], got[5000];
    CrReqMsg *m;
    CrSge sg[2];

    path = fake_side_up(&e, &a, &sa, &f, fgid);
    g_assert_cmpuint(peers(&a), ==, 0);
    fake_hello(&f, 1);
    PUMP(&a);
    g_assert_cmpuint(peers(&a), ==, 0);     /* its RAM is not known yet */
    fake_region(&f, 0, FAKE_RAM, 0, f.memfd);
    fake_gids(&f, fgid);
    PUMP(&a);
    g_assert_cmpuint(peers(&a), ==, 1);
    g_assert_true(reaches(&a, fgid));
    if (ring) {
        g_assert_true(fake_ring_on(&f, true));
    }

    /* the fake writes 5000 bytes of its RAM (two pieces) into a's MR */
    fill_pattern(data, sizeof(data), 9);
    memcpy(f.ram + 10000, data, 3000);
    memcpy(f.ram + 50000, data + 3000, 2000);
    sg[0] = (CrSge) { .region = 0, .off = 10000, .len = 3000 };
    sg[1] = (CrSge) { .region = 0, .off = 50000, .len = 2000 };
    fake_write_checked(&f, &sa, 0x1001, sg, 2, 123, data, sizeof(data));

    /* ... reads it back into another place, the list split over a MORE */
    m = req_msg(0x1002, PVRDMA_WR_RDMA_READ, sa.qp.qpn, sg, 1, 2, 5000);
    sg[0].off = 200000;
    sg[1].off = 300000;
    memcpy(m->sg, sg, sizeof(CrSge));
    m->remote_addr = S_IOVA + 123;
    m->rkey = sa.mr.rkey;
    fake_send(&f, m, m->h.len, -1);
    g_free(m);
    PUMP(&a);
    g_assert_cmpint(fake_recv(&f, got, sizeof(got), &(int) { 0 }), ==, -1);
    {
        struct {
            CrMoreMsg m;
            CrSge s;
        } mm = { { { CR_MORE, sizeof(mm) }, 0x1002, 1 }, sg[1] };

        fake_send(&f, &mm, sizeof(mm), -1);
    }
    PUMP(&a);
    g_assert_cmpint(fake_resp(&f, 0x1002), ==, PVRDMA_WC_SUCCESS);
    g_assert_cmpmem(f.ram + 200000, 3000, data, 3000);
    g_assert_cmpmem(f.ram + 300000, 2000, data + 3000, 2000);

    /* requests a cannot serve are answered, the peer stays */
    m = req_msg(0x1003, PVRDMA_WR_RDMA_WRITE, 0xabcd, sg, 1, 1, 3000);
    fake_send(&f, m, m->h.len, -1);
    g_free(m);
    PUMP(&a);
    g_assert_cmpint(fake_resp(&f, 0x1003), ==, PVRDMA_TRANSPORT_NO_RESPONDER);
    g_assert_cmpuint(peers(&a), ==, 1);
    g_assert_cmpuint(qp_state(&sa), ==, PVRDMA_QPS_RTS);

    /*
     * Four answers in one event are one batch of completions: one
     * interrupt for a's send CQ, even with a guest that re-arms at once.
     */
    {
        CrRespMsg r4 = { { CR_RESP, sizeof(r4) } };
        struct pvrdma_sge g4 = mr_sge(&sa, 0, 8);
        uint64_t c4[4];
        unsigned irqs;

        for (int i = 0; i < 4; i++) {
            send_wqe(&sa, 0xe0 + i, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED,
                     &g4, 1);
        }
        PUMP(&a);
        for (int i = 0; i < 4; i++) {
            fake_expect(&f, got, sizeof(got), CR_REQ);
            c4[i] = ((CrReqMsg *)got)->cookie;
        }
        for (int i = 0; i < 4; i++) {
            r4.cookie = c4[i];
            fake_send(&f, &r4, sizeof(r4), -1);
        }
        arm_cq(&a, &sa.cq);
        a.d.h.on_notify = rearm_send_cq;
        a.d.h.on_notify_arg = &sa;
        irqs = cq_irqs(&a);
        PUMP(&a);
        a.d.h.on_notify = NULL;
        g_assert_cmpuint(cq_irqs(&a) - irqs, ==, 1);
        for (int i = 0; i < 4; i++) {
            side_expect_cqe(&sa, 0xe0 + i, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND,
                            8);
        }
        expect_cq_empty(&a.d, &sa.cq);
    }

    /*
     * The fake's sends wait for a receive; it cancels them (its QP is
     * gone): they are answered and never delivered.  A CANCEL for a QP
     * with nothing waiting is fine.
     */
    {
        CrCancelMsg c = { { CR_CANCEL, sizeof(c) }, 77 };
        struct pvrdma_sge r;
        Side sc;

        side_init(&sc, &a, PVRDMA_QPT_RC);
        rc_to_rts_gid(&a.d, &sc.qp, 77, fgid, 7);
        m = req_msg(0x1005, PVRDMA_WR_SEND, sc.qp.qpn, sg, 1, 1, 3000);
        fake_send(&f, m, m->h.len, -1);
        m->cookie = 0x1006;
        m->opcode = PVRDMA_WR_RDMA_WRITE;
        m->rkey = sc.mr.rkey;
        m->remote_addr = S_IOVA;
        fake_send(&f, m, m->h.len, -1);
        g_free(m);
        PUMP(&a);
        g_assert_cmpint(fake_recv(&f, got, sizeof(got), &(int) { 0 }), ==,
                        -1);
        c.src_qpn = 78;
        fake_send(&f, &c, sizeof(c), -1);
        PUMP(&a);
        g_assert_cmpint(fake_recv(&f, got, sizeof(got), &(int) { 0 }), ==,
                        -1);
        c.src_qpn = 77;
        fake_send(&f, &c, sizeof(c), -1);
        PUMP(&a);
        g_assert_cmpint(fake_resp(&f, 0x1005), ==, PVRDMA_WC_WR_FLUSH_ERR);
        g_assert_cmpint(fake_resp(&f, 0x1006), ==, PVRDMA_WC_WR_FLUSH_ERR);
        r = mr_sge(&sc, 0, 4000);
        post_recv(&a.d, &sc.qp, 0xc1, &r, 1);
        PUMP(&a);
        expect_cq_empty(&a.d, &sc.cq);
        g_assert_cmpuint(peers(&a), ==, 1);
        /* sc's record (its requests waited) goes with sc */
        {
            union pvrdma_cmd_req req = { 0 };
            unsigned n = qp_records(&a);

            g_assert_cmpuint(n, >=, 1);
            req.destroy_qp.qp_handle = sc.qp.handle;
            g_assert_cmpuint(dev_cmd(&a.d, &req, PVRDMA_CMD_DESTROY_QP,
                                     NULL), ==, 0);
            g_assert_cmpuint(qp_records(&a), ==, n - 1);
        }
    }

    /* a's WRITE reaches the fake as a list of a's RAM */
    {
        g_autofree uint8_t *buf = g_malloc(CR_MAX_MSG);
        struct pvrdma_sge g = mr_sge(&sa, 5000, 5000);  /* crosses a gap */
        uint8_t copy[5000];
        uint64_t at = 0;
        CrRespMsg resp = { { CR_RESP, sizeof(resp) } };

        mr_write(&a.d, &sa.mr, S_IOVA + 5000, data, sizeof(data));
        rdma_wqe(&sa, 0xa1, PVRDMA_WR_RDMA_WRITE_WITH_IMM, &g, 1, 0x5000,
                 0x4242, 0x01020304);
        PUMP(&a);
        fake_expect(&f, buf, CR_MAX_MSG, CR_REQ);
        m = (CrReqMsg *)buf;
        g_assert_cmpuint(m->opcode, ==, PVRDMA_WR_RDMA_WRITE_WITH_IMM);
        g_assert_cmpuint(m->src_qpn, ==, sa.qp.qpn);
        g_assert_cmpuint(m->dest_qpn, ==, 77);
        g_assert_cmphex(m->rkey, ==, 0x4242);
        g_assert_cmphex(m->remote_addr, ==, 0x5000);
        g_assert_cmphex(m->imm, ==, 0x01020304);
        g_assert_cmpuint(m->qp_type, ==, PVRDMA_QPT_RC);
        g_assert_cmpmem(m->dgid, 16, fgid, 16);
        g_assert_cmpmem(m->sgid, 16, a.gid, 16);
        g_assert_cmpmem(m->smac, 6, a.d.h.mac, 6);
        g_assert_cmpuint(m->len, ==, 5000);
        g_assert_cmpuint(m->nsg, ==, m->nsg_total);
        g_assert_cmpuint(m->nsg, ==, 2);
        for (uint32_t i = 0; i < m->nsg; i++) {
            g_assert_cmpuint(m->sg[i].region, ==, 0);
            g_assert_cmpuint(m->sg[i].off + m->sg[i].len, <=, VM_RAM);
            memcpy(copy + at, f.vm_ram + m->sg[i].off, m->sg[i].len);
            at += m->sg[i].len;
        }
        g_assert_cmpuint(at, ==, 5000);
        g_assert_cmpmem(copy, sizeof(copy), data, sizeof(data));
        expect_cq_empty(&a.d, &sa.cq);
        resp.cookie = m->cookie;
        resp.status = PVRDMA_WC_SUCCESS;
        fake_send(&f, &resp, sizeof(resp), -1);
        PUMP(&a);
        side_expect_cqe(&sa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE,
                        5000);

        /*
         * a destroys a QP with two requests at the fake: one CANCEL naming
         * it, and DESTROY_QP returns only once the fake answered both (its
         * fence): the fake answers from another thread, a peer QEMU.
         */
        {
            union pvrdma_cmd_req req = { 0 };
            FakeCanceller fc = { .f = &f };
            unsigned n;
            GThread *th;
            uint64_t *cookie = fc.cookie;
            Side sd;

            side_init(&sd, &a, PVRDMA_QPT_RC);
            rc_to_rts_gid(&a.d, &sd.qp, 77, fgid, 7);
            g = mr_sge(&sd, 0, 10);
            send_wqe(&sd, 0xd1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
            send_wqe(&sd, 0xd2, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
            PUMP(&a);
            for (int i = 0; i < 2; i++) {
                fake_expect(&f, buf, CR_MAX_MSG, CR_REQ);
                g_assert_cmpuint(m->src_qpn, ==, sd.qp.qpn);
                cookie[i] = m->cookie;
            }
            fc.qpn = sd.qp.qpn;
            th = g_thread_new("fake", fake_cancel_run, &fc);
            req.destroy_qp.qp_handle = sd.qp.handle;
            n = qp_records(&a);
            g_assert_cmpuint(dev_cmd(&a.d, &req, PVRDMA_CMD_DESTROY_QP, NULL),
                             ==, 0);
            g_thread_join(th);
            PUMP(&a);
            /* sd's record went once the fake answered its requests */
            g_assert_cmpuint(qp_records(&a), ==, n - 1);
            g_assert_cmpint(fake_recv(&f, buf, CR_MAX_MSG, &(int) { 0 }), ==,
                            -1);
            g_assert_cmpuint(peers(&a), ==, 1);
            /*
             * the first answer completed before the QP went (the driver
             * drops such CQEs); its error left the rest for a run that
             * came too late
             */
            side_expect_cqe(&sd, 0xd1, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_SEND,
                            0);
            expect_cq_empty(&a.d, &sd.cq);
            g = mr_sge(&sa, 5000, 5000);
        }

        /* an answer with a status that does not exist: the peer goes */
        rdma_wqe(&sa, 0xa2, PVRDMA_WR_RDMA_READ, &g, 1, 0x5000, 0x4242, 0);
        PUMP(&a);
        fake_expect(&f, buf, CR_MAX_MSG, CR_REQ);
        resp.cookie = m->cookie;
        resp.status = 1000;
        fake_send(&f, &resp, sizeof(resp), -1);
        PUMP(&a);
        g_assert_true(fake_dropped(&f));
        g_assert_cmpuint(peers(&a), ==, 0);
        g_assert_cmpuint(fh_reports(&a.d.h, "peer-lost malformed message"),
                         ==, 1);
        pass_retry_window(&sa);
        side_expect_cqe(&sa, 0xa2, PVRDMA_WC_RETRY_EXC_ERR,
                        PVRDMA_WC_RDMA_READ, 0);
    }
    if (ring) {     /* it all went through the rings */
        g_assert_cmpuint(f.rprod, >, 0);
        g_assert_cmpuint(f.rcons, >, 0);
    }
    fake_close(&f);
    g_free(path);
    expect_cq_empty(&a.d, &sa.cq);
    vm_fini(&a);
    env_fini(&e);
}

static void test_fake_peer(void)
{
    fake_peer_run(false);
}

/* The fake answers while the device polls its ring: no WAKE. */
typedef struct FakePoller {
    Fake *f;
    FakeHost *h;
    uint64_t cookie;
    uint32_t wakes;         /* the fake's WAKEs for its answer */
    uint32_t polling;       /* the ring's flag as the fake wrote */
    bool timed_out;         /* the device never polled */
} FakePoller;

static gpointer fake_poller_run(gpointer opaque)
{
    FakePoller *fp = opaque;
    CrRespMsg r = { { CR_RESP, sizeof(r) }, fp->cookie };
    int64_t end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    uint32_t wakes;

    while (!__atomic_load_n(&fp->h->in_poll, __ATOMIC_SEQ_CST)) {
        if (g_get_monotonic_time() > end) {
            fp->timed_out = true;
            return NULL;
        }
    }
    wakes = fp->f->wakes;   /* after the main thread's first answer */
    fp->polling = __atomic_load_n(&fake_idx(fp->f, 0)->polling,
                                  __ATOMIC_SEQ_CST);
    fake_send(fp->f, &r, sizeof(r), -1);
    fp->wakes = fp->f->wakes - wakes;
    /* taken: the device's next poll need not wait its time out */
    while (__atomic_load_n(&fake_idx(fp->f, 0)->cons, __ATOMIC_SEQ_CST) !=
           fp->f->rprod && g_get_monotonic_time() < end) {
        continue;
    }
    __atomic_store_n(&fp->h->poll_stop, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/*
 * Polling (poll-max-ns): after taking the fake's first answer the device
 * polls its ring, the fake sees it (polling set) and writes its second
 * answer without a WAKE; the poll finds it (the host's poll_wait says so)
 * and completes it in the same event.
 */
static void test_fake_peer_poll(void)
{
    Env e;
    Vm a;
    Side sa;
    Fake f;
    FakePoller fp = { .f = &f, .h = &a.d.h };
    CrRespMsg r = { { CR_RESP, sizeof(r) } };
    uint8_t fgid[16], buf[CR_MAX_MSG];
    struct pvrdma_sge g;
    uint64_t hits;
    char *path;
    GThread *th;

    path = fake_side_up(&e, &a, &sa, &f, fgid);
    fake_hello(&f, 1);
    fake_region(&f, 0, FAKE_RAM, 0, f.memfd);
    fake_gids(&f, fgid);
    PUMP(&a);
    g_assert_cmpuint(peers(&a), ==, 1);
    g_assert_true(fake_ring_on(&f, true));

    g = mr_sge(&sa, 0, 8);
    send_wqe(&sa, 0xf0, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    send_wqe(&sa, 0xf1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&a);
    fake_expect(&f, buf, sizeof(buf), CR_REQ);
    r.cookie = ((CrReqMsg *)buf)->cookie;
    fake_expect(&f, buf, sizeof(buf), CR_REQ);
    fp.cookie = ((CrReqMsg *)buf)->cookie;

    /*
     * A poll long enough for a loaded machine (the fake's thread may
     * wait for a core), this event's only; the thread ends it.
     */
    pvrdma_coresident_set_poll(a.t, 30ull * 1000 * 1000 * 1000);
    pvrdma_coresident_poll_self(a.t, true);
    th = g_thread_new("fake-poller", fake_poller_run, &fp);
    fake_send(&f, &r, sizeof(r), -1);   /* the first, with a WAKE */
    hits = a.d.h.poll_hits;
    PUMP(&a);
    g_thread_join(th);
    g_assert_false(fp.timed_out);
    g_assert_cmpuint(fp.polling, ==, 1);
    g_assert_cmpuint(fp.wakes, ==, 0);
    g_assert_cmpuint(a.d.h.poll_hits, >, hits);
    pvrdma_coresident_set_poll(a.t, 0);
    a.d.h.poll_stop = 0;
    side_expect_cqe(&sa, 0xf0, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 8);
    side_expect_cqe(&sa, 0xf1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 8);
    expect_cq_empty(&a.d, &sa.cq);
    g_assert_cmpuint(peers(&a), ==, 1);

    /* the fake's QEMU quits: the host hears it */
    fake_close(&f);
    PUMP(&a);
    g_assert_cmpuint(peers(&a), ==, 0);
    /* "hung up", or "Connection reset by peer" if it left data unread */
    g_assert_cmpuint(a.d.h.reports->len, ==, 1);
    g_assert_true(g_str_has_prefix(g_ptr_array_index(a.d.h.reports, 0),
                                   "peer-lost "));
    g_free(path);
    vm_fini(&a);
    env_fini(&e);
}

/* The same with the rings: every message after RING_ON goes through them. */
static void test_fake_peer_ring(void)
{
    fake_peer_run(true);
}

/* ------------------------------------------------------------------ */
/* Pause, for migration and snapshots                                  */

static PvrdmaQP *side_qp(Side *s)
{
    return pvrdma_qp_get(&s->v->d.c, s->qp.handle);
}

/* The CQEs of s, in any order (sends and receives share its CQ). */
typedef struct WantCqe {
    uint64_t wr_id;
    uint32_t opcode, byte_len;
} WantCqe;

static void side_expect_set(Side *s, const WantCqe *want, unsigned n)
{
    bool seen[8] = { false };

    g_assert_cmpuint(n, <=, G_N_ELEMENTS(seen));
    for (unsigned k = 0; k < n; k++) {
        struct pvrdma_cqe e;
        unsigned i = 0;

        g_assert_true(poll_cq(&s->v->d, &s->cq, &e));
        while (i < n && (seen[i] || want[i].wr_id != e.wr_id)) {
            i++;
        }
        g_assert_cmpuint(i, <, n);      /* expected, and only once */
        seen[i] = true;
        g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
        g_assert_cmpuint(e.opcode, ==, want[i].opcode);
        g_assert_cmpuint(e.byte_len, ==, want[i].byte_len);
    }
    expect_cq_empty(&s->v->d, &s->cq);
}

/*
 * Work in flight both ways across two VMs: a's SEND waits at b for a
 * receive with a's RDMA WRITE behind it, b's SEND waits at a.
 */
static void pause_traffic(X *x, uint8_t *data)
{
    struct pvrdma_sge g;

    fill_pattern(data, P_LEN, 3);
    mr_write(&x->a.d, &x->sa.mr, S_IOVA, data, P_LEN);
    mr_write(&x->b.d, &x->sb.mr, S_IOVA + 4096, data, P_LEN);
    g = mr_sge(&x->sa, 0, P_LEN);
    send_wqe(&x->sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    rdma_wqe(&x->sa, 0xa2, PVRDMA_WR_RDMA_WRITE, &g, 1, S_IOVA + 8192,
             x->sb.mr.rkey, 0);
    g = mr_sge(&x->sb, 4096, P_LEN);
    send_wqe(&x->sb, 0xb1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x->a, &x->b);
    expect_cq_empty(&x->a.d, &x->sa.cq);
    expect_cq_empty(&x->b.d, &x->sb.cq);
}

/* a's VM stops: b, another QEMU, answers from its own thread. */
static void pause_a(X *x)
{
    Pumper pb;

    pumper_start(&pb, &x->b);
    g_assert_true(pvrdma_core_quiesce(&x->a.d.c, 10000));
    pumper_stop(&pb);
}

/*
 * After the pause nothing is in flight and nothing ran: the requests are
 * back in their send queues; receives posted now take nothing.
 */
static void paused_state(X *x, Side *sa2)
{
    uint8_t got[P_LEN], zero[P_LEN] = { 0 };
    struct pvrdma_sge r;

    g_assert_cmpuint(side_qp(&x->sa)->sq_head, ==, side_qp(&x->sa)->sq.priv);
    g_assert_cmpuint(side_qp(&x->sb)->sq_head, ==, side_qp(&x->sb)->sq.priv);
    mr_read(&x->b.d, &x->sb.mr, S_IOVA + 8192, got, P_LEN);
    g_assert_cmpmem(got, P_LEN, zero, P_LEN);   /* the WRITE did not run */
    r = mr_sge(&x->sb, 0, P_LEN);
    post_recv(&x->b.d, &x->sb.qp, 0xb0, &r, 1);
    r = mr_sge(&x->sa, 4096, P_LEN);
    post_recv(&x->a.d, &x->sa.qp, 0xa0, &r, 1);
    PUMP(&x->a, &x->b);
    expect_cq_empty(&x->a.d, &x->sa.cq);
    expect_cq_empty(&x->b.d, &x->sb.cq);
}

/* Everything ran exactly once, a's side now being sa2 (a or its successor). */
static void resumed_state(X *x, Side *sa2, const uint8_t *data)
{
    static const WantCqe wa[] = {
        { 0xa1, PVRDMA_WC_SEND, P_LEN },
        { 0xa2, PVRDMA_WC_RDMA_WRITE, P_LEN },
        { 0xa0, PVRDMA_WC_RECV, P_LEN },
    };
    static const WantCqe wb[] = {
        { 0xb1, PVRDMA_WC_SEND, P_LEN },
        { 0xb0, PVRDMA_WC_RECV, P_LEN },
    };
    uint8_t got[P_LEN];

    side_expect_set(sa2, wa, G_N_ELEMENTS(wa));
    side_expect_set(&x->sb, wb, G_N_ELEMENTS(wb));
    mr_read(&x->b.d, &x->sb.mr, S_IOVA, got, P_LEN);
    g_assert_cmpmem(got, P_LEN, data, P_LEN);
    mr_read(&x->b.d, &x->sb.mr, S_IOVA + 8192, got, P_LEN);
    g_assert_cmpmem(got, P_LEN, data, P_LEN);
    mr_read(&sa2->v->d, &sa2->mr, S_IOVA + 4096, got, P_LEN);
    g_assert_cmpmem(got, P_LEN, data, P_LEN);
    g_assert_cmpuint(qp_state(sa2), ==, PVRDMA_QPS_RTS);
    g_assert_cmpuint(qp_state(&x->sb), ==, PVRDMA_QPS_RTS);
}

/*
 * A snapshot of a (its VM stops, then runs again): the requests in flight
 * either way are given back, not executed, while a is paused, and run
 * exactly once after it resumes.
 */
static void test_pause_resume(void)
{
    X x;
    uint8_t data[P_LEN];

    x_setup(&x, 7);
    pause_traffic(&x, data);
    pause_a(&x);
    PUMP(&x.a, &x.b);
    paused_state(&x, &x.sa);
    g_assert_true(reaches(&x.b, x.a.gid));
    pvrdma_core_resume(&x.a.d.c);
    PUMP(&x.a, &x.b);
    resumed_state(&x, &x.sa, data);
    x_fini(&x);
}

/*
 * a migrates to a2, a new QEMU on the same host: a pauses, its state is
 * saved, a2 joins the directory and loads it, a says MOVED and goes.  b
 * waits meanwhile (no error) and then works with a2 as with a: same QP
 * numbers and keys, every request exactly once.
 */
static void test_moved(void)
{
    X x;
    Vm a2;
    Side sa2;
    uint8_t data[P_LEN];
    GByteArray *st = g_byte_array_new();
    char *err = NULL;

    x_setup(&x, 7);
    pause_traffic(&x, data);
    pause_a(&x);
    PUMP(&x.a, &x.b);
    paused_state(&x, &x.sa);
    pvrdma_core_save(&x.a.d.c, st);

    /* the destination: the guest's RAM and the driver's view come along */
    vm_create(&a2, x.e.dir, 1, NULL);
    vm_take_guest(&a2, &x.a);
    PUMP(&a2, &x.a, &x.b);
    g_assert_cmpuint(peers(&a2), ==, 2);

    pvrdma_core_moved(&x.a.d.c);
    PUMP(&a2, &x.a, &x.b);
    g_assert_cmpuint(peers(&x.b), ==, 1);      /* a2 only */
    g_assert_true(reaches(&x.b, x.a.gid));     /* waiting for a2 */
    vm_fini(&x.a);
    /* a receive doorbell on b wakes its senders: b1 still waits */
    pvrdma_transport_wake_senders(&x.b.d.c);
    PUMP(&x.b);
    g_assert_true(side_qp(&x.sb)->paused);
    g_assert_cmpint(side_qp(&x.sb)->hold_until, ==, 0);
    expect_cq_empty(&x.b.d, &x.sb.cq);
    g_assert_cmpuint(qp_state(&x.sb), ==, PVRDMA_QPS_RTS);

    g_assert_true(pvrdma_core_load(&a2.d.c, st->data, st->len, &err));
    PUMP(&a2, &x.b);
    sa2 = x.sa;
    sa2.v = &a2;
    resumed_state(&x, &sa2, data);
    expect_cq_empty(&a2.d, &sa2.cq);
    g_byte_array_free(st, true);
    vm_fini(&a2);
    vm_fini(&x.b);
    env_fini(&x.e);
}

/*
 * a moves and nobody takes its place: b's requests wait the grace time
 * (10 s), then nobody answers them: RETRY_EXC_ERR after b's retry window.
 */
static void test_moved_no_successor(void)
{
    X x;
    uint8_t data[P_LEN];

    x_setup(&x, 7);
    pause_traffic(&x, data);
    pause_a(&x);
    pvrdma_core_moved(&x.a.d.c);
    PUMP(&x.a, &x.b);
    vm_fini(&x.a);
    PUMP(&x.b);
    g_assert_cmpuint(peers(&x.b), ==, 0);
    g_assert_true(reaches(&x.b, x.a.gid));
    x.b.d.h.now += 9999;
    pvrdma_transport_wake_senders(&x.b.d.c);
    PUMP(&x.b);
    g_assert_true(side_qp(&x.sb)->paused);
    expect_cq_empty(&x.b.d, &x.sb.cq);
    g_assert_true(reaches(&x.b, x.a.gid));
    x.b.d.h.now += 1;
    PUMP(&x.b);
    g_assert_false(reaches(&x.b, x.a.gid));
    pass_retry_window(&x.sb);
    side_expect_cqe(&x.sb, 0xb1, PVRDMA_WC_RETRY_EXC_ERR, PVRDMA_WC_SEND, 0);
    g_assert_cmpuint(qp_state(&x.sb), ==, PVRDMA_QPS_ERR);
    vm_fini(&x.b);
    env_fini(&x.e);
}

/*
 * a's migration fails at its very end: a2 loaded a's state (announcing
 * a's GIDs, which b refuses while a is paused), then a is cancelled and
 * runs again (RESUME).  Two QEMUs may now run one VM: b says so in the
 * host log, naming both, and keeps a as the owner (first owner wins: a
 * request from b goes to a).  Once a is gone, a2 owns the GIDs.
 */
static void test_resumed_with_rival(void)
{
    X x;
    Vm a2;
    Side sa2;
    GByteArray *st = g_byte_array_new();
    uint8_t data[P_LEN], got[P_LEN];
    struct pvrdma_sge g, r;
    char *err = NULL;
    const char *log;

    x_setup(&x, 7);
    pause_a(&x);
    PUMP(&x.a, &x.b);
    pvrdma_core_save(&x.a.d.c, st);
    vm_create(&a2, x.e.dir, 1, NULL);
    vm_take_guest(&a2, &x.a);
    g_assert_true(pvrdma_core_load(&a2.d.c, st->data, st->len, &err));
    PUMP(&a2, &x.a, &x.b);
    g_assert_cmpuint(peers(&x.b), ==, 2);

    g_assert_null(pvrdma_standalone_host_log);
    pvrdma_standalone_host_log = g_string_new(NULL);
    pvrdma_core_resume(&x.a.d.c);
    PUMP(&a2, &x.a, &x.b);
    log = pvrdma_standalone_host_log->str;
    g_assert_nonnull(strstr(log, "two QEMUs may run one VM"));
    /* "co-resident peer <a> runs again while peer <a2> announces..." */
    g_assert_true(g_regex_match_simple("peer (\\S+\\.sock) \\(pid [0-9]+\\) "
                                       "runs again while peer (?!\\1)\\S+"
                                       "\\.sock \\(pid [0-9]+\\) announces",
                                       log, 0, 0));
    g_string_free(pvrdma_standalone_host_log, true);
    pvrdma_standalone_host_log = NULL;

    /* b's SEND goes to a, not to a2 */
    sa2 = x.sa;
    sa2.v = &a2;
    fill_pattern(data, P_LEN, 5);
    mr_write(&x.b.d, &x.sb.mr, S_IOVA, data, P_LEN);
    r = mr_sge(&x.sa, 0, P_LEN);
    post_recv(&x.a.d, &x.sa.qp, 0xa0, &r, 1);
    post_recv(&a2.d, &sa2.qp, 0xa0, &r, 1);
    g = mr_sge(&x.sb, 0, P_LEN);
    send_wqe(&x.sb, 0xb1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&a2, &x.a, &x.b);
    side_expect_cqe(&x.sb, 0xb1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, P_LEN);
    side_expect_cqe(&x.sa, 0xa0, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, P_LEN);
    expect_cq_empty(&a2.d, &sa2.cq);

    /* a goes: a2 owns the GIDs, and b's next SEND lands there */
    vm_fini(&x.a);
    PUMP(&a2, &x.b);
    g_assert_cmpuint(peers(&x.b), ==, 1);
    send_wqe(&x.sb, 0xb2, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&a2, &x.b);
    side_expect_cqe(&x.sb, 0xb2, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, P_LEN);
    side_expect_cqe(&sa2, 0xa0, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, P_LEN);
    mr_read(&a2.d, &sa2.mr, S_IOVA, got, P_LEN);
    g_assert_cmpmem(got, P_LEN, data, P_LEN);
    g_byte_array_free(st, true);
    vm_fini(&a2);
    vm_fini(&x.b);
    env_fini(&x.e);
}

/* ------------------------------------------------------------------ */
/* A peer that moves to another host: RoCEv2 takes over                */

/* An Ethernet segment for VMs that also have RoCEv2: lossless, in order. */
struct Wire {
    GQueue frames;          /* GByteArray */
    uint64_t sent;
};

static void wire_tx(void *opaque, const uint8_t *frame, size_t len)
{
    Vm *v = opaque;

    g_queue_push_tail(&v->wire->frames,
                      g_byte_array_append(g_byte_array_new(), frame, len));
    v->wire->sent++;
}

/* vm_create(), then RoCEv2 on wire, last in the list as in QEMU. */
static void vm_create_roce(Vm *v, const char *dir, uint8_t id, Wire *w)
{
    vm_create(v, dir, id, NULL);
    v->wire = w;
    v->d.h.frame_tx = wire_tx;
    v->d.h.frame_tx_arg = v;
    v->rt = pvrdma_roce_new(&v->d.c);
    g_assert_nonnull(v->rt);
    g_assert_true(pvrdma_core_add_transport(&v->d.c, v->rt));
}

/*
 * Run VMs v[n] until nothing is left to do on their sockets or the wire;
 * with step_ms, also let their clocks go on by step_ms that many times
 * (retransmissions).
 */
static void wire_run(Wire *w, Vm *const *v, unsigned n, unsigned steps,
                     int64_t step_ms)
{
    for (unsigned k = 0; k <= steps; k++) {
        for (unsigned round = 0; round < 10000; round++) {
            FakeHost *h[4];
            GByteArray *f;

            g_assert_cmpuint(n, <=, G_N_ELEMENTS(h));
            for (unsigned i = 0; i < n; i++) {
                h[i] = &v[i]->d.h;
            }
            g_assert_true(fh_pump(h, n, 20000));
            if (!w->frames.length) {
                break;
            }
            while ((f = g_queue_pop_head(&w->frames))) {
                for (unsigned i = 0; i < n; i++) {
                    pvrdma_roce_rx(v[i]->rt, f->data, f->len);
                }
                g_byte_array_free(f, true);
            }
        }
        for (unsigned i = 0; k < steps && i < n; i++) {
            v[i]->d.h.now += step_ms;
        }
    }
}

/* a and b connected as rc_connect() does, with MACs for the wire. */
static void rc_connect_wire(Side *a, Side *b)
{
    rc_to_rts_mac(&a->v->d, &a->qp, b->qp.qpn, b->v->gid, b->v->d.h.mac, 7);
    rc_to_rts_mac(&b->v->d, &b->qp, a->qp.qpn, a->v->gid, a->v->d.h.mac, 7);
}

static const char *side_transport(Side *s)
{
    PvrdmaQP *qp = side_qp(s);

    return qp->tp ? qp->tp->ops->name : "none";
}

/* The end of a test on a Wire: frames left on it go, both directories. */
static void away_fini(Wire *w, Env *e2, Env *e)
{
    g_queue_clear_full(&w->frames, (GDestroyNotify)g_byte_array_unref);
    env_fini(e2);
    env_fini(e);
}

/* Two co-resident VMs with RoCEv2 on w, RC QPs connected co-resident. */
static void away_setup(X *x, Wire *w, Env *e2)
{
    env_init(&x->e);
    env_init(e2);
    vm_create_roce(&x->a, x->e.dir, 1, w);
    vm_create_roce(&x->b, x->e.dir, 2, w);
    for (unsigned i = 0; i < 2; i++) {
        Dev *d = i ? &x->b.d : &x->a.d;

        dev_write_dsr(d);
        pvrdma_core_reg_write(&d->c, PVRDMA_REG_CTL,
                              PVRDMA_DEVICE_CTL_ACTIVATE);
        pvrdma_core_reg_write(&d->c, PVRDMA_REG_IMR, 0);
    }
    vm_up(&x->a);
    vm_up(&x->b);
    PUMP(&x->a, &x->b);
    side_init(&x->sa, &x->a, PVRDMA_QPT_RC);
    side_init(&x->sb, &x->b, PVRDMA_QPT_RC);
    rc_connect_wire(&x->sa, &x->sb);
    g_assert_cmpstr(side_transport(&x->sa), ==, "coresident");
    g_assert_cmpstr(side_transport(&x->sb), ==, "coresident");
}

/*
 * a's state st goes to a2 in e2, as on another host (no co-resident peer
 * there): a2's QP (*sa2) takes RoCEv2 at the load.
 */
static void away_dest(X *x, Vm *a2, Side *sa2, Env *e2, Wire *w,
                      GByteArray *st)
{
    char *err = NULL;

    vm_create_roce(a2, e2->dir, 1, w);
    vm_take_guest(a2, &x->a);
    g_assert_true(pvrdma_core_load(&a2->d.c, st->data, st->len, &err));
    g_assert_null(err);
    *sa2 = x->sa;
    sa2->v = a2;
    g_assert_cmpstr(side_transport(sa2), ==, "roce");
}

/*
 * a migrates to a2 on another host (another rendezvous directory), so b
 * cannot reach a2 co-resident; all three have RoCEv2 on one wire.  The
 * co-resident transport counted the PSNs the wire would have taken; a2's QP
 * takes RoCEv2 at its load with them and says so on the wire; b's QP
 * follows once a said MOVED (not before: a's answers could still be on
 * their way).  Every request runs exactly once, before and after.
 */
static void test_moved_away(void)
{
    static const WantCqe before_a[] = {
        { 0xa10, PVRDMA_WC_SEND, 3000 },
        { 0xa11, PVRDMA_WC_RDMA_READ, 5000 },
        { 0xa12, PVRDMA_WC_RECV, 64 },
    };
    static const WantCqe before_b[] = {
        { 0xb10, PVRDMA_WC_RECV, 3000 },
        { 0xb11, PVRDMA_WC_SEND, 64 },
    };
    Wire w = { G_QUEUE_INIT };
    Env e2;
    X x;
    Vm a2;
    Side sa2;
    uint8_t data[P_LEN], big[5000], got[5000];
    GByteArray *st = g_byte_array_new();
    struct pvrdma_sge g;

    away_setup(&x, &w, &e2);

    /* done before the move: a SEND of 3 packets, a READ of 5, b's SEND */
    fill_pattern(big, sizeof(big), 9);
    mr_write(&x.a.d, &x.sa.mr, S_IOVA + 16384, big, 3000);
    mr_write(&x.b.d, &x.sb.mr, S_IOVA + 24576, big, 5000);
    g = mr_sge(&x.sb, 32768, 3000);
    post_recv(&x.b.d, &x.sb.qp, 0xb10, &g, 1);
    g = mr_sge(&x.sa, 16384, 3000);
    send_wqe(&x.sa, 0xa10, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    g = mr_sge(&x.sa, 24576, 5000);
    rdma_wqe(&x.sa, 0xa11, PVRDMA_WR_RDMA_READ, &g, 1, S_IOVA + 24576,
             x.sb.mr.rkey, 0);
    g = mr_sge(&x.sa, 40960, 64);
    post_recv(&x.a.d, &x.sa.qp, 0xa12, &g, 1);
    g = mr_sge(&x.sb, 40960, 64);
    send_wqe(&x.sb, 0xb11, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a, &x.b);
    side_expect_set(&x.sa, before_a, G_N_ELEMENTS(before_a));
    side_expect_set(&x.sb, before_b, G_N_ELEMENTS(before_b));
    mr_read(&x.a.d, &x.sa.mr, S_IOVA + 24576, got, 5000);
    g_assert_cmpmem(got, 5000, big, 5000);
    /* what the wire would have counted (MTU 1024), at both ends */
    g_assert_cmphex(side_qp(&x.sa)->attr.sq_psn, ==, 0x1234 + 3 + 5);
    g_assert_cmphex(side_qp(&x.sb)->attr.rq_psn, ==, 0x1234 + 3 + 5);
    g_assert_cmphex(side_qp(&x.sb)->attr.sq_psn, ==, 0x1234 + 1);
    g_assert_cmphex(side_qp(&x.sa)->attr.rq_psn, ==, 0x1234 + 1);

    pause_traffic(&x, data);
    pause_a(&x);
    PUMP(&x.a, &x.b);
    paused_state(&x, &x.sa);
    pvrdma_core_save(&x.a.d.c, st);

    away_dest(&x, &a2, &sa2, &e2, &w, st);
    /* its announcement: an ACK of all b sent before the move */
    g_assert_cmpuint(w.frames.length, ==, 1);
    {
        GByteArray *f = g_queue_peek_head(&w.frames);
        RocePkt p;

        g_assert_cmpint(roce_parse(f->data, f->len, &p), ==, ROCE_OK);
        g_assert_cmphex(p.opcode, ==, ROCE_RC_ACKNOWLEDGE);
        g_assert_cmpuint(p.dqpn, ==, x.sb.qp.qpn);
        g_assert_cmphex(p.psn, ==, 0x1234 + 1 - 1);
    }
    /* a2 speaks first: b hears it, but a has not said MOVED yet */
    wire_run(&w, (Vm *const[]) { &a2, &x.b }, 2, 0, 0);
    g_assert_cmpuint(w.sent, >, 0);
    g_assert_cmpstr(side_transport(&x.sb), ==, "coresident");
    g_assert_true(side_qp(&x.sb)->heard_on == x.b.rt);

    pvrdma_core_moved(&x.a.d.c);
    PUMP(&x.a, &x.b);
    vm_fini(&x.a);
    g_assert_cmpstr(side_transport(&x.sb), ==, "roce");
    {
        /* the management program hears it (PVRDMA_PATH_CHANGED) */
        g_autofree char *r = g_strdup_printf("path %u coresident roce",
                                             x.sb.qp.qpn);

        g_assert_cmpuint(fh_reports(&x.b.d.h, r), ==, 1);
    }
    /* a2's first tries went to a b still waiting: they go again */
    wire_run(&w, (Vm *const[]) { &a2, &x.b }, 2, 20, 50);
    resumed_state(&x, &sa2, data);
    expect_cq_empty(&a2.d, &sa2.cq);

    /* and they go on over RoCEv2 */
    g = mr_sge(&x.sb, 32768, 3000);
    post_recv(&x.b.d, &x.sb.qp, 0xb20, &g, 1);
    g = mr_sge(&sa2, 16384, 3000);
    send_wqe(&sa2, 0xa20, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    wire_run(&w, (Vm *const[]) { &a2, &x.b }, 2, 0, 0);
    side_expect_cqe(&sa2, 0xa20, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 3000);
    side_expect_cqe(&x.sb, 0xb20, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 3000);
    mr_read(&x.b.d, &x.sb.mr, S_IOVA + 32768, got, 3000);
    g_assert_cmpmem(got, 3000, big, 3000);

    g_byte_array_free(st, true);
    vm_fini(&a2);
    vm_fini(&x.b);
    away_fini(&w, &e2, &x.e);
}

/*
 * As moved-away, but b never hears a2 (its announcement is lost, and a2
 * has nothing to send): b's SEND, given back at the pause, waits the 10 s
 * a moved peer gets, then b's QP takes RoCEv2 by itself and the SEND runs
 * once there.
 */
static void test_moved_away_silent(void)
{
    static const WantCqe wb[] = {
        { 0xb1, PVRDMA_WC_SEND, P_LEN },
    };
    Wire w = { G_QUEUE_INIT };
    Env e2;
    X x;
    Vm a2;
    Side sa2;
    uint8_t data[P_LEN], got[P_LEN];
    GByteArray *st = g_byte_array_new();
    struct pvrdma_sge g;

    away_setup(&x, &w, &e2);
    fill_pattern(data, P_LEN, 5);
    mr_write(&x.b.d, &x.sb.mr, S_IOVA + 4096, data, P_LEN);
    g = mr_sge(&x.sb, 4096, P_LEN);
    send_wqe(&x.sb, 0xb1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a, &x.b);
    pause_a(&x);
    PUMP(&x.a, &x.b);
    g = mr_sge(&x.sa, 8192, P_LEN);
    post_recv(&x.a.d, &x.sa.qp, 0xa0, &g, 1);
    PUMP(&x.a, &x.b);
    pvrdma_core_save(&x.a.d.c, st);
    away_dest(&x, &a2, &sa2, &e2, &w, st);
    g_queue_clear_full(&w.frames, (GDestroyNotify)g_byte_array_unref);
    pvrdma_core_moved(&x.a.d.c);
    PUMP(&x.a, &x.b);
    vm_fini(&x.a);
    g_assert_true(side_qp(&x.sb)->paused);
    g_assert_null(side_qp(&x.sb)->heard_on);

    x.b.d.h.now += 9999;
    wire_run(&w, (Vm *const[]) { &a2, &x.b }, 2, 0, 0);
    g_assert_cmpstr(side_transport(&x.sb), ==, "coresident");
    expect_cq_empty(&x.b.d, &x.sb.cq);
    x.b.d.h.now += 1;
    wire_run(&w, (Vm *const[]) { &a2, &x.b }, 2, 0, 0);
    g_assert_cmpstr(side_transport(&x.sb), ==, "roce");
    side_expect_set(&x.sb, wb, G_N_ELEMENTS(wb));
    side_expect_cqe(&sa2, 0xa0, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, P_LEN);
    mr_read(&a2.d, &sa2.mr, S_IOVA + 8192, got, P_LEN);
    g_assert_cmpmem(got, P_LEN, data, P_LEN);
    g_assert_cmpuint(qp_state(&x.sb), ==, PVRDMA_QPS_RTS);

    g_byte_array_free(st, true);
    vm_fini(&a2);
    vm_fini(&x.b);
    away_fini(&w, &e2, &x.e);
}

/*
 * a, in its own rendezvous directory e2, connected to b over RoCEv2 (a
 * SEND of 3 packets done), migrates to a2 (*sa2) next to b: a2's QP stays
 * on RoCEv2 (its transport record).
 */
static void home_setup_features(X *x, Wire *w, Env *e2, Vm *a2, Side *sa2,
                                uint64_t fb, uint64_t fa2)
{
    uint8_t big[3000];
    GByteArray *st = g_byte_array_new();
    struct pvrdma_sge g;
    char *err = NULL;

    env_init(&x->e);
    env_init(e2);
    vm_create_roce(&x->a, e2->dir, 1, w);
    g_features = fb;
    vm_create_roce(&x->b, x->e.dir, 2, w);
    g_features = CR_F_ALL;
    for (unsigned i = 0; i < 2; i++) {
        Dev *d = i ? &x->b.d : &x->a.d;

        dev_write_dsr(d);
        pvrdma_core_reg_write(&d->c, PVRDMA_REG_CTL,
                              PVRDMA_DEVICE_CTL_ACTIVATE);
        pvrdma_core_reg_write(&d->c, PVRDMA_REG_IMR, 0);
    }
    vm_up(&x->a);
    vm_up(&x->b);
    side_init(&x->sa, &x->a, PVRDMA_QPT_RC);
    side_init(&x->sb, &x->b, PVRDMA_QPT_RC);
    rc_connect_wire(&x->sa, &x->sb);
    g_assert_cmpstr(side_transport(&x->sa), ==, "roce");
    g_assert_cmpstr(side_transport(&x->sb), ==, "roce");

    /* over the wire first: a SEND of 3 packets */
    fill_pattern(big, sizeof(big), 11);
    mr_write(&x->a.d, &x->sa.mr, S_IOVA + 16384, big, 3000);
    g = mr_sge(&x->sb, 32768, 3000);
    post_recv(&x->b.d, &x->sb.qp, 0xb10, &g, 1);
    g = mr_sge(&x->sa, 16384, 3000);
    send_wqe(&x->sa, 0xa10, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    wire_run(w, (Vm *const[]) { &x->a, &x->b }, 2, 0, 0);
    side_expect_cqe(&x->sa, 0xa10, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 3000);
    side_expect_cqe(&x->sb, 0xb10, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 3000);

    /* a comes to b's host */
    g_assert_true(pvrdma_core_quiesce(&x->a.d.c, 1000));
    pvrdma_core_save(&x->a.d.c, st);
    g_features = fa2;
    vm_create_roce(a2, x->e.dir, 1, w);
    g_features = CR_F_ALL;
    vm_take_guest(a2, &x->a);
    PUMP(a2, &x->b);
    g_assert_true(pvrdma_core_load(&a2->d.c, st->data, st->len, &err));
    g_assert_null(err);
    pvrdma_core_moved(&x->a.d.c);
    vm_fini(&x->a);
    *sa2 = x->sa;
    sa2->v = a2;
    PUMP(a2, &x->b);
    g_assert_true(reaches(&x->b, x->a.gid));
    /* its transport record */
    g_assert_cmpstr(side_transport(sa2), ==, "roce");

    g_byte_array_free(st, true);
}

static void home_setup(X *x, Wire *w, Env *e2, Vm *a2, Side *sa2)
{
    home_setup_features(x, w, e2, a2, sa2, CR_F_ALL, CR_F_ALL);
}

static void test_moved_home(void)
{
    static const WantCqe wa[] = {
        { 0xa20, PVRDMA_WC_SEND, 3000 },
        { 0xa21, PVRDMA_WC_RECV, 64 },
    };
    static const WantCqe wb[] = {
        { 0xb20, PVRDMA_WC_RECV, 3000 },
        { 0xb21, PVRDMA_WC_SEND, 64 },
    };
    Wire w = { G_QUEUE_INIT };
    Env e2;
    X x;
    Vm a2;
    Side sa2;
    uint8_t big[3000], got[3000];
    struct pvrdma_sge g;
    uint32_t psn_a, psn_b;

    home_setup(&x, &w, &e2, &a2, &sa2);
    fill_pattern(big, sizeof(big), 11);     /* what a2's MR holds */

    /* both send at once: their offers cross, one answers, both move */
    g = mr_sge(&x.sb, 32768, 3000);
    post_recv(&x.b.d, &x.sb.qp, 0xb20, &g, 1);
    g = mr_sge(&sa2, 0, 64);
    post_recv(&a2.d, &sa2.qp, 0xa21, &g, 1);
    g = mr_sge(&sa2, 16384, 3000);
    send_wqe(&sa2, 0xa20, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    g = mr_sge(&x.sb, 0, 64);
    send_wqe(&x.sb, 0xb21, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    wire_run(&w, (Vm *const[]) { &a2, &x.b }, 2, 0, 0);
    g_assert_cmpstr(side_transport(&sa2), ==, "coresident");
    g_assert_cmpstr(side_transport(&x.sb), ==, "coresident");
    side_expect_set(&sa2, wa, G_N_ELEMENTS(wa));
    side_expect_set(&x.sb, wb, G_N_ELEMENTS(wb));
    mr_read(&x.b.d, &x.sb.mr, S_IOVA + 32768, got, 3000);
    g_assert_cmpmem(got, 3000, big, 3000);
    /* the PSNs went on from where the wire left them, and agree */
    psn_a = side_qp(&sa2)->attr.sq_psn;
    psn_b = side_qp(&x.sb)->attr.rq_psn;
    g_assert_cmphex(psn_a, ==, psn_b);
    g_assert_cmphex(psn_a, ==, 0x1234 + 3 + 3);
    g_assert_cmphex(side_qp(&x.sb)->attr.sq_psn, ==, 0x1234 + 1);
    g_assert_cmphex(side_qp(&sa2)->attr.rq_psn, ==, 0x1234 + 1);
    expect_cq_empty(&a2.d, &sa2.cq);
    expect_cq_empty(&x.b.d, &x.sb.cq);

    vm_fini(&a2);
    vm_fini(&x.b);
    away_fini(&w, &e2, &x.e);
}

/*
 * The way back needs OFFER on both sides (CR_F_OFFER): where b's or a2's
 * build lacks it, a's RC QP, now on b's host, stays on RoCEv2 and works
 * there; nothing waits for an answer that cannot come.
 */
static void offer_missing_run(uint64_t fb, uint64_t fa2)
{
    Wire w = { G_QUEUE_INIT };
    Env e2;
    X x;
    Vm a2;
    Side sa2;
    uint8_t big[3000], got[3000];
    struct pvrdma_sge g;
    uint64_t sent;

    home_setup_features(&x, &w, &e2, &a2, &sa2, fb, fa2);
    g_assert_cmphex(pvrdma_coresident_peer_features(a2.t, 0), ==, fb & fa2);
    g_assert_cmphex(pvrdma_coresident_peer_features(x.b.t, 0), ==, fb & fa2);
    fill_pattern(big, sizeof(big), 11);     /* what a2's MR holds */
    sent = w.sent;
    g = mr_sge(&x.sb, 32768, 3000);
    post_recv(&x.b.d, &x.sb.qp, 0xb20, &g, 1);
    g = mr_sge(&sa2, 16384, 3000);
    send_wqe(&sa2, 0xa20, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    g_assert_null(side_qp(&sa2)->offer_to);
    wire_run(&w, (Vm *const[]) { &a2, &x.b }, 2, 0, 0);
    g_assert_cmpuint(w.sent, >, sent);
    g_assert_cmpstr(side_transport(&sa2), ==, "roce");
    g_assert_cmpstr(side_transport(&x.sb), ==, "roce");
    side_expect_cqe(&sa2, 0xa20, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 3000);
    side_expect_cqe(&x.sb, 0xb20, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 3000);
    mr_read(&x.b.d, &x.sb.mr, S_IOVA + 32768, got, 3000);
    g_assert_cmpmem(got, 3000, big, 3000);

    vm_fini(&a2);
    vm_fini(&x.b);
    away_fini(&w, &e2, &x.e);
}

static void test_features_no_offer(void)
{
    offer_missing_run(CR_F_RINGS, CR_F_ALL);
    offer_missing_run(CR_F_ALL, CR_F_RINGS);
}

/*
 * a2 offers b the way back and holds its SEND for the answer, but b's
 * QEMU goes before it answers: the offer ends with the connection to b and
 * the SEND goes on over RoCEv2, where nobody answers it either
 * (RETRY_EXC_ERR after the retries), instead of waiting for ever.
 */
static void test_offer_peer_gone(void)
{
    Wire w = { G_QUEUE_INIT };
    Env e2;
    X x;
    Vm a2;
    Side sa2;
    struct pvrdma_sge g;
    FakeHost *h = &a2.d.h;

    home_setup(&x, &w, &e2, &a2, &sa2);
    g = mr_sge(&sa2, 0, 64);
    send_wqe(&sa2, 0xa30, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    g_assert_true(fh_pump(&h, 1, 20000));
    g_assert_true(side_qp(&sa2)->offer_to == a2.t);
    g_assert_true(side_qp(&sa2)->paused);
    g_assert_cmpuint(w.frames.length, ==, 0);

    vm_fini(&x.b);
    wire_run(&w, (Vm *const[]) { &a2 }, 1, 0, 0);
    g_assert_null(side_qp(&sa2)->offer_to);
    g_assert_cmpstr(side_transport(&sa2), ==, "roce");
    g_assert_cmpuint(w.frames.length, ==, 0);  /* wire_run delivered them */
    g_assert_cmpuint(w.sent, >, 0);
    /* retry_cnt 7 at 67 ms, the timer doubling up to 4x: about 1.8 s */
    wire_run(&w, (Vm *const[]) { &a2 }, 1, 50, 50);
    side_expect_cqe(&sa2, 0xa30, PVRDMA_WC_RETRY_EXC_ERR, PVRDMA_WC_SEND, 0);

    vm_fini(&a2);
    away_fini(&w, &e2, &x.e);
}

enum { HS_NONE, HS_HELLO, HS_READY };

/*
 * Connect a fake peer, take it as far as 'hs' into the handshake, send
 * one bad message: the device must hang up on it, and only on it.
 */
static void bad_message(Vm *a, const char *path, int hs, const void *msg,
                        size_t len, int fd, const char *what)
{
    unsigned watches = fh_watch_count(&a->d.h), base = peers(a);
    uint8_t gid[16];
    Fake f;

    make_gid(gid, 10, 0xfa);
    fake_connect(&f, a, path);
    g_assert_cmpuint(fh_watch_count(&a->d.h), ==, watches + 1);
    if (hs == HS_HELLO) {
        fake_hello(&f, 1);
    } else if (hs == HS_READY) {
        fake_ready(&f, gid);
    }
    PUMP(a);
    g_assert_cmpuint(peers(a), ==, base + (hs == HS_READY));
    g_assert_false(fake_dropped(&f));
    fake_send(&f, msg, len, fd);
    PUMP(a);
    if (!fake_dropped(&f)) {
        g_test_message("%s: the peer was not dropped", what);
        g_test_fail();
    }
    g_assert_cmpuint(peers(a), ==, base);
    g_assert_cmpuint(fh_watch_count(&a->d.h), ==, watches);
    g_assert_false(reaches(a, gid));
    fake_close(&f);
}

/*
 * A VM a with the fake as its one peer on the rings (GID 10.x.0xfa); the
 * rendezvous socket's path (g_free it).
 */
static char *ring_peer_up(Env *e, Vm *a, Fake *f)
{
    uint8_t fgid[16];
    char *path;

    env_init(e);
    vm_init(a, e->dir, 1);
    vm_up(a);
    make_gid(fgid, 10, 0xfa);
    path = only_sock(e->dir);
    fake_connect(f, a, path);
    fake_ready(f, fgid);
    PUMP(a);
    g_assert_cmpuint(peers(a), ==, 1);
    g_assert_true(fake_ring_on(f, true));
    return path;
}

/*
 * A consumer that does not take: the device's answers fill the fake's
 * ring, the rest waits in the device (want_space); each time the fake
 * has taken what is there it sends ROOM, and in the end every answer
 * came, once, in order.
 */
static void test_ring_backlog(void)
{
    const unsigned n = 50000, batch = 5000;
    Env e;
    Vm a;
    Fake f;
    char *path;
    unsigned next = 1, rooms = 0;
    CrHdr room = { CR_ROOM, sizeof(room) };

    path = ring_peer_up(&e, &a, &f);
    /* requests for a QP a does not have: each gets an answer */
    for (unsigned i = 1; i <= n; i++) {
        CrReqMsg *m = req_msg(i, PVRDMA_WR_RDMA_WRITE, 0xabcd, NULL, 0, 0, 0);

        fake_send(&f, m, m->h.len, -1);
        g_free(m);
        if (i % batch == 0) {
            PUMP(&a);
        }
    }
    PUMP(&a);
    g_assert_cmpuint(peers(&a), ==, 1);
    /* far more than the ring holds: the device waits for room */
    g_assert_cmpuint(n * sizeof(CrRespMsg), >, CR_RING_SIZE);
    g_assert_true(__atomic_load_n(&fake_idx(&f, 1)->want_space,
                                  __ATOMIC_SEQ_CST));
    while (next <= n) {
        CrRespMsg m;
        int fd;
        ssize_t k = fake_recv(&f, &m, sizeof(m), &fd);

        if (k < 0) {
            /* all taken: ROOM if it waits for room (it must, or it is over) */
            g_assert_true(__atomic_exchange_n(&fake_idx(&f, 1)->want_space, 0,
                                              __ATOMIC_SEQ_CST));
            g_assert_cmpint(fh_sendmsg(f.fd, &room, sizeof(room), -1,
                                       MSG_NOSIGNAL), ==, sizeof(room));
            rooms++;
            PUMP(&a);
            continue;
        }
        g_assert_cmpint(k, ==, sizeof(m));
        g_assert_cmpuint(m.h.type, ==, CR_RESP);
        g_assert_cmpuint(m.cookie, ==, next);
        g_assert_cmpint(m.status, ==, PVRDMA_TRANSPORT_NO_RESPONDER);
        next++;
    }
    g_assert_cmpuint(rooms, >, 0);
    g_assert_cmpint(fake_recv(&f, &room, sizeof(room), &(int) { 0 }), ==, -1);
    g_assert_cmpuint(peers(&a), ==, 1);
    fake_close(&f);
    g_free(path);
    vm_fini(&a);
    env_fini(&e);
}

/*
 * A peer that sends requests and never takes the answers (its ring full,
 * its socket full) is dropped once CR_MAX_QUEUED bytes wait for it (4 MiB
 * in this build), not queued for without end.
 */
static void test_peer_not_reading(void)
{
    const unsigned batch = 5000, max = 1000000;
    Env e;
    Vm a;
    Fake f;
    char *path;
    unsigned i;

    path = ring_peer_up(&e, &a, &f);
    g_assert_null(pvrdma_standalone_host_log);
    pvrdma_standalone_host_log = g_string_new(NULL);
    for (i = 1; i <= max && peers(&a); i++) {
        CrReqMsg *m = req_msg(i, PVRDMA_WR_RDMA_WRITE, 0xabcd, NULL, 0, 0, 0);

        /* its own ring full: the fake waits until a took some */
        while (f.rprod + 8 + ROUND_UP(m->h.len, 8) -
               __atomic_load_n(&fake_idx(&f, 0)->cons, __ATOMIC_SEQ_CST) >
               CR_RING_SIZE) {
            PUMP(&a);
            if (!peers(&a)) {
                break;
            }
        }
        if (peers(&a)) {
            fake_send(&f, m, m->h.len, -1);
        }
        g_free(m);
        if (i % batch == 0) {
            PUMP(&a);
        }
    }
    /* dropped, after more answers than the ring and the bound hold */
    g_assert_cmpuint(peers(&a), ==, 0);
    g_assert_true(fake_dropped(&f));
    g_assert_cmpuint((uint64_t)i * sizeof(CrRespMsg), >,
                     CR_RING_SIZE + CR_MAX_QUEUED);
    g_assert_nonnull(strstr(pvrdma_standalone_host_log->str,
                            "does not take its messages"));
    g_string_free(pvrdma_standalone_host_log, true);
    pvrdma_standalone_host_log = NULL;
    fake_close(&f);
    g_free(path);
    vm_fini(&a);
    env_fini(&e);
}

/* What a hostile peer does with the rings (test_ring_malformed()). */
enum {
    RB_ON_FIRST,        /* RING_ON with no RING before it */
    RB_RING_TWICE,      /* a second RING */
    RB_ON_IN_RING,      /* RING_ON again, through the ring */
    RB_PROD_PAST,       /* prod more than a ring ahead of cons */
    RB_PROD_ODD,        /* prod not a multiple of 8 */
    RB_REC_ZERO,        /* a record of length 0 */
    RB_REC_LONG,        /* a record longer than what was published */
    RB_REC_HUGE,        /* a record longer than a message may be */
    RB_MSG_BAD,         /* a record whose message is malformed */
    RB_CONS_PAST,       /* the device's ring: cons past its prod */
    RB_N
};

static void ring_bad(Vm *a, const char *path, int kind)
{
    static const char *const what[RB_N] = {
        "RING_ON first", "RING twice", "RING_ON in the ring", "prod past",
        "prod odd", "record of 0", "record too long", "record too big",
        "bad message", "cons past",
    };
    unsigned watches = fh_watch_count(&a->d.h);
    CrHdr on = { CR_RING_ON, sizeof(on) }, w = { CR_WAKE, sizeof(w) };
    CrRingMsg rm = { .h = { CR_RING, sizeof(rm) }, .ring_size = CR_RING_SIZE };
    CrRespMsg resp = { { CR_RESP, sizeof(resp) }, 0x999 };
    uint8_t gid[16], junk[64] = { 0 };
    CrReqMsg *m;
    Fake f;

    make_gid(gid, 10, 0xfb);
    fake_connect(&f, a, path);
    fake_ready(&f, gid);
    PUMP(a);
    g_assert_cmpuint(peers(a), ==, 1);
    if (kind == RB_ON_FIRST) {
        fake_send(&f, &on, sizeof(on), -1);
    } else {
        g_assert_true(fake_ring_on(&f, true));
        PUMP(a);
        g_assert_false(fake_dropped(&f));
    }
    switch (kind) {
    case RB_RING_TWICE:
        fake_send(&f, &rm, sizeof(rm), f.memfd);    /* on the socket */
        break;
    case RB_ON_IN_RING:
        fake_send(&f, &on, sizeof(on), -1);
        break;
    case RB_PROD_PAST:
    case RB_PROD_ODD:
        fake_idx(&f, 0)->prod = kind == RB_PROD_ODD ? 12 :
                                CR_RING_SIZE + 8;
        g_assert_cmpint(fh_sendmsg(f.fd, &w, sizeof(w), -1, MSG_NOSIGNAL),
                        ==, sizeof(w));
        break;
    case RB_REC_ZERO:
        fake_ring_put(&f, junk, 8, 0);
        break;
    case RB_REC_LONG:
        fake_ring_put(&f, junk, 8, 1000);
        break;
    case RB_REC_HUGE:
        fake_ring_put(&f, junk, 8, CR_MAX_MSG + 8);
        break;
    case RB_MSG_BAD:
        resp.h.len = 9;     /* a RESP of 9 bytes */
        fake_send(&f, &resp, sizeof(resp), -1);
        break;
    case RB_CONS_PAST:
        /* the device answers a request: its put finds the index wrong */
        fake_idx(&f, 1)->cons = 64;
        m = req_msg(0x1, PVRDMA_WR_RDMA_WRITE, 0xabcd, NULL, 0, 0, 0);
        fake_send(&f, m, m->h.len, -1);
        g_free(m);
        break;
    }
    PUMP(a);
    if (!fake_dropped(&f)) {
        g_test_message("%s: the peer was not dropped", what[kind]);
        g_test_fail();
    }
    g_assert_cmpuint(peers(a), ==, 0);
    g_assert_cmpuint(fh_watch_count(&a->d.h), ==, watches);
    g_assert_false(reaches(a, gid));
    fake_close(&f);
}

/*
 * A peer whose rings do not add up is dropped, as one whose messages do
 * not; one whose ring memory is not sealed stays on the socket.
 */
static void test_ring_malformed(void)
{
    Env e;
    Vm a;
    Fake f;
    char *path;
    uint8_t gid[16];
    CrReqMsg *m;

    env_init(&e);
    vm_init(&a, e.dir, 1);
    vm_up(&a);
    path = only_sock(e.dir);
    for (int kind = 0; kind < RB_N; kind++) {
        ring_bad(&a, path, kind);
    }

    /* unsealed: a peer could shrink it under us; RING refused, no harm */
    make_gid(gid, 10, 0xfb);
    fake_connect(&f, &a, path);
    fake_ready(&f, gid);
    PUMP(&a);
    g_assert_false(fake_ring_on(&f, false));
    m = req_msg(0x2, PVRDMA_WR_RDMA_WRITE, 0xabcd, NULL, 0, 0, 0);
    fake_send(&f, m, m->h.len, -1);
    g_free(m);
    PUMP(&a);
    g_assert_cmpint(fake_resp(&f, 0x2), ==, PVRDMA_TRANSPORT_NO_RESPONDER);
    g_assert_cmpuint(peers(&a), ==, 1);
    fake_close(&f);
    PUMP(&a);
    g_assert_cmpuint(peers(&a), ==, 0);

    g_free(path);
    vm_fini(&a);
    env_fini(&e);
}

static CrHello hello_msg(void)
{
    return (CrHello) {
        .h = { CR_HELLO, sizeof(CrHello) },
        .magic = CR_MAGIC,
        .version = CR_VERSION,
        .node = FAKE_NODE,
        .nregions = 1,
        .features = CR_F_ALL,
    };
}

static CrRegionMsg region_msg(uint32_t index, uint64_t size, uint64_t off)
{
    return (CrRegionMsg) {
        .h = { CR_REGION, sizeof(CrRegionMsg) },
        .index = index,
        .size = size,
        .fd_offset = off,
    };
}

/* Malformed messages: the device drops that peer and stays healthy. */
static void test_malformed(void)
{
    X x;
    char *path;
    CrHello h;
    CrRegionMsg r;
    CrRespMsg resp = { { CR_RESP, sizeof(resp) }, 0x999 };
    CrReqMsg *m;
    CrSge sg[2] = {
        { .region = 0, .off = 0, .len = 100 },
        { .region = 0, .off = 4096, .len = 100 },
    };
    uint32_t qpn;
    int memfd, pipefd[2];
    uint8_t *big;

    /* a and b are peers; the fake peers connect to b's socket */
    x_setup(&x, 7);
    {
        struct sockaddr_un sa;
        socklen_t sl = sizeof(sa);
        int lfd = -1;

        /* b's listening socket is the watch that accepts connections */
        for (guint i = 0; i < x.b.d.h.watches->len; i++) {
            int fd = g_array_index(x.b.d.h.watches, FhWatch, i).fd;
            int listening = 0;
            socklen_t ol = sizeof(listening);

            g_assert_cmpint(getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN,
                                       &listening, &ol), ==, 0);
            if (listening) {
                lfd = fd;
            }
        }
        g_assert_cmpint(lfd, >=, 0);
        g_assert_cmpint(getsockname(lfd, (struct sockaddr *)&sa, &sl), ==, 0);
        path = g_strdup(sa.sun_path);
        g_assert_true(g_str_has_prefix(path, x.e.dir));
    }
    qpn = x.sb.qp.qpn;

    /* HELLO */
    h = hello_msg();
    h.magic ^= 1;
    bad_message(&x.b, path, HS_NONE, &h, sizeof(h), -1, "HELLO bad magic");
    h = hello_msg();
    h.version = CR_VERSION + 1;
    bad_message(&x.b, path, HS_NONE, &h, sizeof(h), -1, "HELLO version");
    h = hello_msg();
    h.nregions = 33;
    bad_message(&x.b, path, HS_NONE, &h, sizeof(h), -1, "HELLO 33 regions");
    h = hello_msg();
    h.h.len = sizeof(h) - 8;
    bad_message(&x.b, path, HS_NONE, &h, sizeof(h) - 8, -1, "HELLO short");
    h = hello_msg();
    bad_message(&x.b, path, HS_READY, &h, sizeof(h), -1, "second HELLO");

    /* framing */
    bad_message(&x.b, path, HS_NONE, &h, 4, -1, "4-byte message");
    h = hello_msg();
    h.h.len = sizeof(h) + 8;
    bad_message(&x.b, path, HS_NONE, &h, sizeof(h), -1, "header length");
    h = hello_msg();
    h.h.type = 99;
    bad_message(&x.b, path, HS_READY, &h, sizeof(h), -1, "unknown type");
    h.h.type = 0;
    bad_message(&x.b, path, HS_READY, &h, sizeof(h), -1, "type 0");
    big = g_malloc0(CR_MAX_MSG + 4096);
    ((CrHdr *)big)->type = CR_GIDS;
    ((CrHdr *)big)->len = CR_MAX_MSG + 4096;
    bad_message(&x.b, path, HS_READY, big, CR_MAX_MSG + 4096, -1,
                "message larger than 64 KiB");
    g_free(big);

    /* REGION */
    memfd = memfd_create("bad-region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    g_assert_cmpint(ftruncate(memfd, FAKE_RAM), ==, 0);
    /* a memfd that cannot shrink: each case below fails for its reason */
    g_assert_cmpint(fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW),
                    ==, 0);
    r = region_msg(0, FAKE_RAM, 0);
    {
        /* RAM that can shrink: truncated later, it would crash us */
        int loose = memfd_create("loose-region", MFD_CLOEXEC);

        g_assert_cmpint(ftruncate(loose, FAKE_RAM), ==, 0);
        bad_message(&x.b, path, HS_HELLO, &r, sizeof(r), loose,
                    "REGION not sealed against shrinking");
        close(loose);
    }
    bad_message(&x.b, path, HS_NONE, &r, sizeof(r), memfd, "REGION first");
    bad_message(&x.b, path, HS_HELLO, &r, sizeof(r), -1, "REGION no fd");
    r = region_msg(1, FAKE_RAM, 0);
    bad_message(&x.b, path, HS_HELLO, &r, sizeof(r), memfd, "REGION index");
    r = region_msg(0, FAKE_RAM + 4096, 0);
    bad_message(&x.b, path, HS_HELLO, &r, sizeof(r), memfd,
                "REGION larger than its file");
    r = region_msg(0, 4096, FAKE_RAM);
    bad_message(&x.b, path, HS_HELLO, &r, sizeof(r), memfd,
                "REGION past the end of its file");
    r = region_msg(0, 4096, 100);
    bad_message(&x.b, path, HS_HELLO, &r, sizeof(r), memfd,
                "REGION unaligned offset");
    r = region_msg(0, 0, 0);
    bad_message(&x.b, path, HS_HELLO, &r, sizeof(r), memfd, "REGION empty");
    r = region_msg(0, 4096, UINT64_MAX - 4095);
    bad_message(&x.b, path, HS_HELLO, &r, sizeof(r), memfd,
                "REGION offset + size wraps");
    r = region_msg(0, FAKE_RAM, 0);
    bad_message(&x.b, path, HS_READY, &r, sizeof(r), memfd, "REGION twice");
    g_assert_cmpint(pipe2(pipefd, O_CLOEXEC), ==, 0);
    bad_message(&x.b, path, HS_HELLO, &r, sizeof(r), pipefd[0],
                "REGION of a pipe");
    close(pipefd[0]);
    close(pipefd[1]);
    /* two fds on one message */
    {
        Fake f;
        union {
            char buf[CMSG_SPACE(2 * sizeof(int))];
            struct cmsghdr align;
        } u = { { 0 } };
        struct iovec iov = { &r, sizeof(r) };
        struct msghdr mh = {
            .msg_iov = &iov, .msg_iovlen = 1,
            .msg_control = u.buf, .msg_controllen = sizeof(u.buf),
        };
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        int two[2] = { memfd, memfd };
        unsigned fds;

        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(two));
        memcpy(CMSG_DATA(cm), two, sizeof(two));
        fake_connect(&f, &x.b, path);
        fake_hello(&f, 1);
        PUMP(&x.b);
        fds = fh_open_fds();
        g_assert_cmpint(sendmsg(f.fd, &mh, 0), ==, sizeof(r));
        PUMP(&x.b);
        g_assert_true(fake_dropped(&f));
        g_assert_cmpuint(fh_open_fds(), ==, fds - 1);   /* b's end closed */
        fake_close(&f);
    }

    /* an fd on anything but REGION */
    h = hello_msg();
    bad_message(&x.b, path, HS_NONE, &h, sizeof(h), memfd, "HELLO with fd");
    resp.h.type = CR_RESP;
    bad_message(&x.b, path, HS_READY, &resp, sizeof(resp), memfd,
                "RESP with fd");
    m = req_msg(1, PVRDMA_WR_SEND, qpn, sg, 1, 1, 100);
    bad_message(&x.b, path, HS_READY, m, m->h.len, memfd, "REQ with fd");
    g_free(m);

    /* GIDS */
    {
        struct {
            CrGids m;
            CrGid g[4];
        } gm = { { { CR_GIDS, sizeof(gm) }, 3 } };

        bad_message(&x.b, path, HS_READY, &gm, sizeof(gm), -1,
                    "GIDS count and length disagree");
        gm.m.n = 0x10000001;
        gm.m.h.len = sizeof(CrGids) + 4 * sizeof(CrGid);
        bad_message(&x.b, path, HS_READY, &gm, sizeof(CrGids) +
                    4 * sizeof(CrGid), -1, "GIDS count too large");
        gm.m.n = 1;
        gm.m.h.len = sizeof(CrGids) + sizeof(CrGid);
        bad_message(&x.b, path, HS_NONE, &gm, gm.m.h.len, -1,
                    "GIDS before HELLO");
    }

    /* REQ */
    m = req_msg(1, PVRDMA_WR_SEND, qpn, sg, 1, 1, 100);
    bad_message(&x.b, path, HS_HELLO, m, m->h.len, -1,
                "REQ before the peer's RAM is known");
    m->sg[0].region = 1;
    bad_message(&x.b, path, HS_READY, m, m->h.len, -1, "REQ region 1 of 1");
    m->sg[0].region = 0x80000000;
    bad_message(&x.b, path, HS_READY, m, m->h.len, -1, "REQ region 2^31");
    m->sg[0].region = 0;
    m->sg[0].off = FAKE_RAM - 50;
    bad_message(&x.b, path, HS_READY, m, m->h.len, -1, "REQ past the end");
    m->sg[0].off = UINT64_MAX - 49;
    bad_message(&x.b, path, HS_READY, m, m->h.len, -1, "REQ offset+len wraps");
    m->sg[0].off = FAKE_RAM + 1;
    m->sg[0].len = 0;
    m->len = 0;
    bad_message(&x.b, path, HS_READY, m, m->h.len, -1, "REQ empty sge");
    g_free(m);
    m = req_msg(1, PVRDMA_WR_SEND, qpn, sg, 2, 2, 200);
    m->h.len -= sizeof(CrSge);
    bad_message(&x.b, path, HS_READY, m, m->h.len, -1,
                "REQ nsg says 2, carries 1");
    m->h.len += sizeof(CrSge);
    m->nsg_total = 1;
    bad_message(&x.b, path, HS_READY, m, m->h.len, -1, "REQ nsg > nsg_total");
    m->nsg_total = 2;
    m->len = 150;
    bad_message(&x.b, path, HS_READY, m, m->h.len, -1,
                "REQ lengths exceed len");
    m->len = 300;
    bad_message(&x.b, path, HS_READY, m, m->h.len, -1,
                "REQ lengths short of len");
    m->len = 1ull << 32;
    bad_message(&x.b, path, HS_READY, m, m->h.len, -1, "REQ len 4 GiB");
    m->len = 200;
    m->nsg_total = 0xffffffff;
    bad_message(&x.b, path, HS_READY, m, m->h.len, -1, "REQ nsg_total 2^32-1");
    m->nsg_total = 2;
    m->nsg = 0xffffffff;
    bad_message(&x.b, path, HS_READY, m, m->h.len, -1, "REQ nsg 2^32-1");
    g_free(m);
    m = req_msg(1, PVRDMA_WR_SEND, qpn, sg, 0, 0, 0);
    m->h.len = sizeof(*m) - 8;
    bad_message(&x.b, path, HS_READY, m, m->h.len, -1, "REQ too short");
    g_free(m);

    /* MORE */
    {
        struct {
            CrMoreMsg m;
            CrSge s[2];
        } mm = { { { CR_MORE, sizeof(CrMoreMsg) + sizeof(CrSge) }, 5, 1 },
                 { sg[1], sg[1] } };
        Fake f;
        uint8_t gid[16];

        bad_message(&x.b, path, HS_READY, &mm, mm.m.h.len, -1,
                    "MORE without REQ");
        /*
         * REQ announcing 2 entries (300 bytes), carrying 1; then a bad
         * MORE.  The lengths add up even when the MORE brings one entry
         * too many: only the count catches it.
         */
        m = req_msg(5, PVRDMA_WR_SEND, qpn, sg, 1, 2, 300);
        make_gid(gid, 10, 0xfb);
        for (int i = 0; i < 4; i++) {
            fake_connect(&f, &x.b, path);
            fake_ready(&f, gid);
            fake_send(&f, m, m->h.len, -1);
            PUMP(&x.b);
            g_assert_false(fake_dropped(&f));
            g_assert_cmpuint(peers(&x.b), ==, 2);
            mm.m.cookie = 5;
            mm.m.nsg = 1;
            mm.m.h.len = sizeof(CrMoreMsg) + sizeof(CrSge);
            if (i == 0) {
                mm.m.cookie = 6;                /* another request's */
            } else if (i == 1) {
                mm.m.nsg = 2;                   /* one more than announced */
                mm.m.h.len += sizeof(CrSge);
            } else if (i == 2) {
                fake_send(&f, m, m->h.len, -1); /* a REQ before the MORE */
                mm.m.h.type = 0;
            } else {
                mm.m.nsg = 0;                   /* count and length differ */
            }
            if (mm.m.h.type) {
                fake_send(&f, &mm, mm.m.h.len, -1);
            }
            mm.m.h.type = CR_MORE;
            PUMP(&x.b);
            g_assert_true(fake_dropped(&f));
            g_assert_cmpuint(peers(&x.b), ==, 1);
            fake_close(&f);
        }
        g_free(m);
    }

    /* a RESP for another peer's request: dropped, the request unharmed */
    {
        CrRespMsg spoof = { { CR_RESP, sizeof(spoof) } };
        struct pvrdma_sge g = mr_sge(&x.sb, 0, 64), rr = mr_sge(&x.sa, 0, 64);
        uint8_t gid[16];
        Fake f;

        send_wqe(&x.sb, 0xb7, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
        PUMP(&x.a, &x.b);       /* waits at a for a receive */
        expect_cq_empty(&x.b.d, &x.sb.cq);
        make_gid(gid, 10, 0xfc);
        fake_connect(&f, &x.b, path);
        fake_ready(&f, gid);
        PUMP(&x.b);
        g_assert_cmpuint(peers(&x.b), ==, 2);
        spoof.cookie = x.b.d.c.next_cookie;    /* b's request at a */
        spoof.status = PVRDMA_WC_SUCCESS;
        fake_send(&f, &spoof, sizeof(spoof), -1);
        PUMP(&x.b);
        g_assert_true(fake_dropped(&f));
        g_assert_cmpuint(peers(&x.b), ==, 1);
        expect_cq_empty(&x.b.d, &x.sb.cq);
        fake_close(&f);
        post_recv(&x.a.d, &x.sa.qp, 0xa7, &rr, 1);
        PUMP(&x.a, &x.b);
        side_expect_cqe(&x.sb, 0xb7, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 64);
        side_expect_cqe(&x.sa, 0xa7, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 64);
    }

    /* CANCEL */
    {
        CrCancelMsg c = { { CR_CANCEL, sizeof(c) - 4 }, 1 };

        bad_message(&x.b, path, HS_READY, &c, sizeof(c) - 4, -1,
                    "CANCEL short");
        c.h.len = sizeof(c);
        bad_message(&x.b, path, HS_NONE, &c, sizeof(c), -1,
                    "CANCEL before HELLO");
    }

    /* RESP */
    resp.h.type = CR_RESP;
    bad_message(&x.b, path, HS_READY, &resp, sizeof(resp), -1,
                "RESP for a cookie never sent");
    resp.h.len = sizeof(resp) - 4;
    bad_message(&x.b, path, HS_READY, &resp, sizeof(resp) - 4, -1,
                "RESP short");
    close(memfd);

    /* after all that, a and b still talk */
    {
        struct pvrdma_sge g = mr_sge(&x.sa, 0, 64), rr = mr_sge(&x.sb, 0, 64);
        uint8_t data[64], got[64];

        g_assert_cmpuint(peers(&x.a), ==, 1);
        g_assert_cmpuint(peers(&x.b), ==, 1);
        fill_pattern(data, sizeof(data), 10);
        mr_write(&x.a.d, &x.sa.mr, S_IOVA, data, sizeof(data));
        post_recv(&x.b.d, &x.sb.qp, 0xb1, &rr, 1);
        send_wqe(&x.sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
        PUMP(&x.a, &x.b);
        side_expect_cqe(&x.sa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 64);
        side_expect_cqe(&x.sb, 0xb1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 64);
        mr_read(&x.b.d, &x.sb.mr, S_IOVA, got, sizeof(got));
        g_assert_cmpmem(got, sizeof(got), data, sizeof(data));
        g_assert_cmpuint(qp_state(&x.sb), ==, PVRDMA_QPS_RTS);
    }
    g_free(path);
    x_fini(&x);
}

/* ------------------------------------------------------------------ */
/* Who may join: uid, shared secret, GID claims, permissions           */

/* Start collecting the transport's host warnings (pvrdma_log_host). */
static void log_start(void)
{
    g_assert_null(pvrdma_standalone_host_log);
    pvrdma_standalone_host_log = g_string_new(NULL);
}

/* How often the warnings since log_start() contain all of a and b. */
static unsigned log_count(const char *a, const char *b)
{
    g_auto(GStrv) lines = g_strsplit(pvrdma_standalone_host_log->str, "\n",
                                     -1);
    unsigned n = 0;

    for (char **l = lines; *l; l++) {
        n += strstr(*l, a) && (!b || strstr(*l, b));
    }
    return n;
}

static void log_expect(const char *a, const char *b)
{
    if (!log_count(a, b)) {
        g_test_message("no warning with '%s' and '%s' in:\n%s", a,
                       b ? b : "", pvrdma_standalone_host_log->str);
        g_test_fail();
    }
}

static void log_stop(void)
{
    if (g_test_verbose()) {
        g_test_message("%s", pvrdma_standalone_host_log->str);
    }
    g_string_free(pvrdma_standalone_host_log, TRUE);
    pvrdma_standalone_host_log = NULL;
}

/* How many mappings of the fake hosts' guest RAM this process has. */
static unsigned ram_maps(void)
{
    g_autofree char *maps = NULL;
    unsigned n = 0;

    g_assert_true(g_file_get_contents("/proc/self/maps", &maps, NULL, NULL));
    for (char *p = maps; (p = strstr(p, "memfd:fake-guest-ram")); p++) {
        n++;
    }
    return n;
}

/* The path of v's listening socket (g_free it). */
static char *vm_sock(Vm *v)
{
    for (guint i = 0; i < v->d.h.watches->len; i++) {
        int fd = g_array_index(v->d.h.watches, FhWatch, i).fd;
        int listening = 0;
        socklen_t ol = sizeof(listening);
        struct sockaddr_un sa;
        socklen_t sl = sizeof(sa);

        g_assert_cmpint(getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN,
                                   &listening, &ol), ==, 0);
        if (listening) {
            g_assert_cmpint(getsockname(fd, (struct sockaddr *)&sa, &sl), ==,
                            0);
            return g_strdup(sa.sun_path);
        }
    }
    g_assert_not_reached();
    return NULL;
}

/* a sends 64 bytes to b over connected RC QPs: delivered. */
static void send_across(Side *sa, Side *sb, uint8_t seed)
{
    struct pvrdma_sge g = mr_sge(sa, 0, 64), r = mr_sge(sb, 0, 64);
    uint8_t data[64], got[64];

    fill_pattern(data, sizeof(data), seed);
    mr_write(&sa->v->d, &sa->mr, S_IOVA, data, sizeof(data));
    post_recv(&sb->v->d, &sb->qp, 0xb0 + seed, &r, 1);
    send_wqe(sa, 0xa0 + seed, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(sa->v, sb->v);
    side_expect_cqe(sa, 0xa0 + seed, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 64);
    side_expect_cqe(sb, 0xb0 + seed, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 64);
    mr_read(&sb->v->d, &sb->mr, S_IOVA, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));
}

/* Devices that share a secret meet; their traffic flows as without one. */
static void test_auth_same_secret(void)
{
    Env e;
    Vm a, b, c;
    Side sa, sb;
    unsigned maps;

    env_init(&e);
    maps = ram_maps();
    vm_init_secret(&a, e.dir, 1, "correct horse battery staple");
    vm_init_secret(&b, e.dir, 2, "correct horse battery staple");
    vm_up(&a);
    vm_up(&b);
    PUMP(&a, &b);
    g_assert_cmpuint(peers(&a), ==, 1);
    g_assert_cmpuint(peers(&b), ==, 1);
    g_assert_true(reaches(&a, b.gid));
    g_assert_true(reaches(&b, a.gid));
    g_assert_cmpuint(ram_maps(), ==, maps + 4);     /* own + the other's */
    side_init(&sa, &a, PVRDMA_QPT_RC);
    side_init(&sb, &b, PVRDMA_QPT_RC);
    rc_connect(&sa, &sb, 7);
    send_across(&sa, &sb, 1);
    send_across(&sb, &sa, 2);

    /* a third with the secret joins both */
    vm_init_secret(&c, e.dir, 3, "correct horse battery staple");
    vm_up(&c);
    PUMP(&a, &b, &c);
    g_assert_cmpuint(peers(&a), ==, 2);
    g_assert_cmpuint(peers(&b), ==, 2);
    g_assert_cmpuint(peers(&c), ==, 2);
    g_assert_true(reaches(&c, a.gid));
    expect_cq_empty(&a.d, &sa.cq);
    expect_cq_empty(&b.d, &sb.cq);
    vm_fini(&c);
    vm_fini(&b);
    vm_fini(&a);
    env_fini(&e);
}

/*
 * Two devices that cannot accept each other (different secrets, or a
 * secret on one side only): neither maps the other's RAM nor learns its
 * GIDs, both warn naming the socket, and both hang up.
 */
static void refused_pair(const char *sa, const char *sb, const char *why_a,
                         const char *why_b)
{
    Env e;
    Vm a, b;
    unsigned maps;
    g_autofree char *pa = NULL, *pb = NULL;

    env_init(&e);
    log_start();
    maps = ram_maps();
    vm_init_secret(&a, e.dir, 1, sa);
    vm_up(&a);
    pa = vm_sock(&a);
    vm_init_secret(&b, e.dir, 2, sb);       /* b connects to a */
    vm_up(&b);
    pb = vm_sock(&b);
    PUMP(&a, &b);
    g_assert_cmpuint(peers(&a), ==, 0);
    g_assert_cmpuint(peers(&b), ==, 0);
    g_assert_false(reaches(&a, b.gid));
    g_assert_false(reaches(&b, a.gid));
    g_assert_cmpuint(fh_watch_count(&a.d.h), ==, 1);    /* listener only */
    g_assert_cmpuint(fh_watch_count(&b.d.h), ==, 1);
    g_assert_cmpuint(ram_maps(), ==, maps + 2);     /* each its own only */
    /*
     * Each names the other's socket; the side that finds out first says
     * why, the other may only see it hang up.
     */
    if (!(log_count(why_a, pb) || log_count(why_b, pa)) ||
        !(log_count(why_a, pb) || log_count("hung up", pb)) ||
        !(log_count(why_b, pa) || log_count("hung up", pa))) {
        g_test_message("expected '%s' naming %s and '%s' naming %s in:\n%s",
                       why_a, pb, why_b, pa,
                       pvrdma_standalone_host_log->str);
        g_test_fail();
    }
    g_assert_cmpuint(count_socks(e.dir), ==, 2);    /* both still listen */
    log_stop();
    vm_fini(&b);
    vm_fini(&a);
    env_fini(&e);
}

static void test_auth_wrong_secret(void)
{
    refused_pair("alpha", "beta", "failed authentication",
                 "failed authentication");
}

static void test_auth_one_sided(void)
{
    refused_pair("alpha", NULL, "has no rendezvous-secret, this device "
                 "requires one", "requires a rendezvous-secret, this device "
                 "has none");
    refused_pair(NULL, "beta", "requires a rendezvous-secret, this device "
                 "has none", "has no rendezvous-secret, this device "
                 "requires one");
}

/*
 * The fake connection was dropped before the device sent it its RAM or
 * GIDs (only HELLO and AUTH may have come).
 */
static void fake_dropped_empty(Fake *f, const char *what)
{
    g_autofree uint8_t *buf = g_malloc(CR_MAX_MSG);

    for (;;) {
        int fd;
        ssize_t n = fake_recv(f, buf, CR_MAX_MSG, &fd);

        if (fd >= 0) {
            g_test_message("%s: the device sent a descriptor", what);
            g_test_fail();
            close(fd);
        }
        if (n < 0) {
            g_test_message("%s: the peer was not dropped", what);
            g_test_fail();
            return;
        }
        if (n == 0) {
            return;
        }
        if (((CrHdr *)buf)->type != CR_AUTH) {
            g_test_message("%s: the device sent message type %u", what,
                           ((CrHdr *)buf)->type);
            g_test_fail();
        }
    }
}

/*
 * A complete fake peer offering 'features' sends one message of a feature
 * the connection does not use: the device drops it, and only it.
 */
static void feature_msg_dropped(Vm *a, const char *path, uint64_t features,
                                const void *msg, size_t len, int fd,
                                const char *what)
{
    unsigned base = peers(a);
    Fake f;
    uint8_t fgid[16];

    make_gid(fgid, 10, 0xfb);
    fake_connect(&f, a, path);
    f.features = features;
    f.node = FAKE_NODE + 1;     /* another peer than the one connected */
    fake_ready(&f, fgid);
    PUMP(a);
    g_assert_cmpuint(peers(a), ==, base + 1);
    fake_send(&f, msg, len, fd);
    PUMP(a);
    if (!fake_dropped(&f)) {
        g_test_message("%s: the peer was not dropped", what);
        g_test_fail();
    }
    PUMP(a);
    g_assert_cmpuint(peers(a), ==, base);
    fake_close(&f);
}

/*
 * A device of a build with only 'features': its HELLO says so, and a
 * fake peer offering everything that sends msg (of a feature it lacks)
 * is dropped.
 */
static void device_lacking(uint64_t features, const void *msg, size_t len,
                           int fd, const char *what)
{
    Env e;
    Vm n;
    Fake g;
    g_autofree char *path = NULL;

    env_init(&e);
    g_features = features;
    vm_init(&n, e.dir, 3);
    g_features = CR_F_ALL;
    vm_up(&n);
    path = only_sock(e.dir);
    fake_connect(&g, &n, path);
    g_assert_cmphex(g.vm_features, ==, features & CR_F_ALL);
    fake_close(&g);
    PUMP(&n);
    feature_msg_dropped(&n, path, CR_F_ALL, msg, len, fd, what);
    vm_fini(&n);
    env_fini(&e);
}

/*
 * Features against fake peers: the device's HELLO offers what it has
 * (less when set); a newer build's HELLO (longer, with feature bits this
 * build does not know) is taken with what both have, and the rings work;
 * a message of a feature the connection does not use drops the peer,
 * whichever side lacks it; a build before features (protocol 7) is
 * refused by name.
 */
static void test_features_fake(void)
{
    Env e;
    Vm a;
    Side sa;
    Fake f, g;
    uint8_t fgid[16], data[3000];
    char *path;
    struct {
        CrHello h;
        uint8_t later[24];      /* a newer build's fields */
    } nh;
    CrOfferMsg o = { .h = { CR_OFFER, sizeof(o) }, .src_qpn = 77 };
    CrHdr wake = { CR_WAKE, sizeof(wake) };
    CrRingMsg rm = { .h = { CR_RING, sizeof(rm) }, .ring_size = CR_RING_SIZE };
    CrSge sg = { .region = 0, .off = 8192, .len = sizeof(data) };
    CrHello h;
    int rfd;

    log_start();
    path = fake_side_up(&e, &a, &sa, &f, fgid);
    g_assert_cmphex(f.vm_features, ==, CR_F_ALL);

    /* a newer build */
    nh.h = fake_hello_msg(&f, 1);
    nh.h.h.len = sizeof(nh);
    nh.h.features = CR_F_ALL | (1ull << 5) | (1ull << 63);
    memset(nh.later, 0xa5, sizeof(nh.later));
    fake_send(&f, &nh, sizeof(nh), -1);
    PUMP(&a);
    fake_take_ram(&f);
    fake_region(&f, 0, FAKE_RAM, 0, f.memfd);
    fake_gids(&f, fgid);
    PUMP(&a);
    g_assert_cmpuint(peers(&a), ==, 1);
    g_assert_cmphex(pvrdma_coresident_peer_features(a.t, 0), ==, CR_F_ALL);
    g_assert_true(fake_ring_on(&f, true));
    fill_pattern(data, sizeof(data), 12);
    memcpy(f.ram + 8192, data, sizeof(data));
    fake_write_checked(&f, &sa, 0x2001, &sg, 1, 64, data, sizeof(data));

    /* a build without the rings, one without OFFER */
    feature_msg_dropped(&a, path, CR_F_OFFER, &wake, sizeof(wake), -1,
                        "WAKE without CR_F_RINGS");
    rfd = memfd_create("fake-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    g_assert_cmpint(ftruncate(rfd, CR_RING_SHM_SIZE(CR_RING_SIZE)), ==, 0);
    g_assert_cmpint(fcntl(rfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), ==,
                    0);
    feature_msg_dropped(&a, path, CR_F_OFFER, &rm, sizeof(rm), rfd,
                        "RING without CR_F_RINGS");
    feature_msg_dropped(&a, path, CR_F_RINGS, &o, sizeof(o), -1,
                        "OFFER without CR_F_OFFER");
    /* devices of builds without OFFER, without the rings */
    device_lacking(CR_F_RINGS | (1ull << 40), &o, sizeof(o), -1,
                   "OFFER to a device without CR_F_OFFER");
    device_lacking(CR_F_OFFER, &rm, sizeof(rm), rfd,
                   "RING to a device without CR_F_RINGS");
    close(rfd);
    g_assert_cmpuint(peers(&a), ==, 1);

    /* a build before features: protocol 7 */
    fake_connect(&g, &a, path);
    h = fake_hello_msg(&g, 1);
    h.version = 7;
    h.h.len = offsetof(CrHello, features);      /* its HELLO: 64 bytes */
    fake_send(&g, &h, h.h.len, -1);
    PUMP(&a);
    fake_dropped_empty(&g, "HELLO version 7");
    log_expect("speaks protocol version 7, this device 8", path);
    fake_close(&g);

    /* the newer build's peer is still served */
    g_assert_cmpuint(peers(&a), ==, 1);
    fake_close(&f);
    PUMP(&a);
    g_assert_cmpuint(peers(&a), ==, 0);
    log_stop();
    vm_fini(&a);
    env_fini(&e);
    g_free(path);
}

/* Mappings of co-resident rings in this process (both sides map each). */
static unsigned ring_maps(void)
{
    g_autofree char *maps = NULL;
    unsigned n = 0;

    g_assert_true(g_file_get_contents("/proc/self/maps", &maps, NULL, NULL));
    for (char *p = maps; (p = strstr(p, "memfd:pvrdma-coresident-ring"));
         p++) {
        n++;
    }
    return n;
}

/*
 * Two devices without a rendezvous directory, with secrets sa and sb,
 * get the two ends of a socketpair from "management"; true if they
 * became peers.  Either way nothing lands in any directory.
 */
static bool given_pair(Vm *a, Vm *b, const char *sa, const char *sb)
{
    int sv[2];
    char *err = NULL;

    vm_init_secret(a, NULL, 1, sa);
    vm_init_secret(b, NULL, 2, sb);
    vm_up(a);
    vm_up(b);
    g_assert_cmpuint(fh_watch_count(&a->d.h), ==, 0);   /* no listener */
    g_assert_cmpint(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
                               sv), ==, 0);
    g_assert_true(pvrdma_coresident_add_peer(a->t, sv[0], "to-b", &err));
    g_assert_null(err);
    g_assert_true(pvrdma_coresident_add_peer(b->t, sv[1], "to-a", &err));
    g_assert_null(err);
    PUMP(a, b);
    g_assert_cmpuint(peers(a), ==, peers(b));
    return peers(a) == 1 && reaches(a, b->gid) && reaches(b, a->gid);
}

/*
 * Peers from management (pvrdma_coresident_add_peer()): nobody scans or
 * listens; the roles a connection has (who makes the rings, the AUTH
 * role) follow the node ids, so the rings come up and the secrets are
 * checked; data moves both ways.  What is not a connected SOCK_SEQPACKET
 * unix socket is refused and closed.
 */
static void test_given_peers(void)
{
    Env e;
    Vm a, b;
    Side sa, sb;
    uint8_t data[3000], got[3000];
    struct pvrdma_sge g;
    char *err = NULL;
    int sv[2], pfd[2], fd;

    env_init(&e);
    g_assert_true(given_pair(&a, &b, NULL, NULL));
    g_assert_cmphex(pvrdma_coresident_peer_features(a.t, 0), ==, CR_F_ALL);
    g_assert_cmpuint(ring_maps(), ==, 2);   /* one side made them */
    /* a second connection between the same two: refused, the first stays */
    g_assert_cmpint(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
                               sv), ==, 0);
    log_start();
    g_assert_true(pvrdma_coresident_add_peer(a.t, sv[0], "b again", &err));
    g_assert_true(pvrdma_coresident_add_peer(b.t, sv[1], "a again", &err));
    PUMP(&a, &b);
    log_expect("is already connected to this device", NULL);
    log_stop();
    g_assert_cmpuint(peers(&a), ==, 1);
    g_assert_cmpuint(peers(&b), ==, 1);
    g_assert_cmpuint(ring_maps(), ==, 2);
    side_init(&sa, &a, PVRDMA_QPT_RC);
    side_init(&sb, &b, PVRDMA_QPT_RC);
    rc_connect(&sa, &sb, 7);
    fill_pattern(data, sizeof(data), 13);
    mr_write(&a.d, &sa.mr, S_IOVA + 100, data, sizeof(data));
    g = mr_sge(&sb, 5000, sizeof(data));
    post_recv(&b.d, &sb.qp, 0xb1, &g, 1);
    g = mr_sge(&sa, 100, sizeof(data));
    send_wqe(&sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&a, &b);
    side_expect_cqe(&sa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 3000);
    side_expect_cqe(&sb, 0xb1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 3000);
    mr_read(&b.d, &sb.mr, S_IOVA + 5000, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));
    /* and back, an RDMA WRITE into a's MR */
    g = mr_sge(&sb, 5000, sizeof(data));
    rdma_wqe(&sb, 0xb2, PVRDMA_WR_RDMA_WRITE, &g, 1, S_IOVA + 20000,
             sa.mr.rkey, 0);
    PUMP(&a, &b);
    side_expect_cqe(&sb, 0xb2, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE, 3000);
    mr_read(&a.d, &sa.mr, S_IOVA + 20000, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));
    expect_cq_empty(&a.d, &sa.cq);
    expect_cq_empty(&b.d, &sb.cq);
    vm_fini(&a);
    vm_fini(&b);
    g_assert_cmpuint(ring_maps(), ==, 0);

    /* the same secret: both AUTHs check out; different ones: refused */
    g_assert_true(given_pair(&a, &b, "s3cret-s3cret-s3cret",
                             "s3cret-s3cret-s3cret"));
    vm_fini(&a);
    vm_fini(&b);
    log_start();
    g_assert_false(given_pair(&a, &b, "s3cret-s3cret-s3cret",
                              "other-other-other-other"));
    log_expect("failed authentication", NULL);
    log_stop();

    /* what management must not give */
    g_assert_cmpint(pipe(pfd), ==, 0);
    g_assert_false(pvrdma_coresident_add_peer(a.t, pfd[0], "a pipe", &err));
    g_assert_nonnull(strstr(err, "not a unix SOCK_SEQPACKET socket"));
    g_clear_pointer(&err, g_free);
    close(pfd[1]);
    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv),
                    ==, 0);
    g_assert_false(pvrdma_coresident_add_peer(a.t, sv[0], "a stream",
                                              &err));
    g_assert_nonnull(strstr(err, "not a unix SOCK_SEQPACKET socket"));
    g_clear_pointer(&err, g_free);
    close(sv[1]);
    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    g_assert_cmpint(fd, >=, 0);
    g_assert_false(pvrdma_coresident_add_peer(a.t, fd, "unconnected", &err));
    g_assert_nonnull(strstr(err, "not connected"));
    g_clear_pointer(&err, g_free);
    g_assert_cmpuint(peers(&a), ==, 0);
    vm_fini(&a);
    vm_fini(&b);
    env_fini(&e);      /* every descriptor closed */
}

/* A fake peer against a device with a secret: each way of cheating. */
static void test_auth_fake(void)
{
    const char *key = "s3cret";
    Env e;
    Vm a, n;
    Fake f;
    g_autofree char *path = NULL, *npath = NULL;
    uint8_t fgid[16];
    CrAuthMsg good, got;
    CrHello h;
    CrRegionMsg r = { { CR_REGION, sizeof(r) }, 0, 0, FAKE_RAM, 0 };

    env_init(&e);
    log_start();
    vm_init_secret(&a, e.dir, 1, key);
    vm_up(&a);
    path = vm_sock(&a);
    make_gid(fgid, 10, 0xfa);

    /* the secret: accepted, RAM both ways; its AUTH kept for a replay */
    fake_connect(&f, &a, path);
    g_assert_cmpuint(f.vm_auth, ==, CR_AUTH_HMAC_SHA256);
    f.secret = key;
    h = fake_hello_msg(&f, 1);
    fake_send(&f, &h, sizeof(h), -1);
    PUMP(&a);
    g_assert_cmpint(fake_expect(&f, &got, sizeof(got), CR_AUTH), ==,
                    sizeof(got));
    fake_mac(key, true, f.vm_nonce, f.nonce, FAKE_NODE, f.vm_node, good.mac);
    good.h = (CrHdr) { CR_AUTH, sizeof(good) };
    fake_send(&f, &good, sizeof(good), -1);
    PUMP(&a);
    fake_take_ram(&f);
    fake_region(&f, 0, FAKE_RAM, 0, f.memfd);
    fake_gids(&f, fgid);
    PUMP(&a);
    g_assert_cmpuint(peers(&a), ==, 1);
    g_assert_true(reaches(&a, fgid));
    /* a second AUTH once accepted */
    fake_send(&f, &good, sizeof(good), -1);
    PUMP(&a);
    g_assert_true(fake_dropped(&f));
    g_assert_cmpuint(peers(&a), ==, 0);
    g_assert_false(reaches(&a, fgid));
    fake_close(&f);

    /* the same AUTH replayed on a new connection (same fake nonce) */
    {
        uint8_t nonce[CR_NONCE_LEN];

        memcpy(nonce, f.nonce, CR_NONCE_LEN);
        fake_connect(&f, &a, path);
        f.secret = key;
        memcpy(f.nonce, nonce, CR_NONCE_LEN);
        h = fake_hello_msg(&f, 1);
        fake_send(&f, &h, sizeof(h), -1);
        fake_send(&f, &good, sizeof(good), -1);
        PUMP(&a);
        fake_dropped_empty(&f, "replayed AUTH");
        fake_close(&f);
    }

    /* the wrong secret */
    fake_connect(&f, &a, path);
    f.secret = "s3cret ";
    h = fake_hello_msg(&f, 1);
    fake_send(&f, &h, sizeof(h), -1);
    PUMP(&a);
    fake_mac(f.secret, true, f.vm_nonce, f.nonce, FAKE_NODE, f.vm_node,
             got.mac);
    got.h = (CrHdr) { CR_AUTH, sizeof(got) };
    fake_send(&f, &got, sizeof(got), -1);
    PUMP(&a);
    fake_dropped_empty(&f, "wrong secret");
    log_expect("failed authentication", "fa4e000000000001.sock (pid");
    fake_close(&f);

    /* the device's own AUTH sent back to it */
    fake_connect(&f, &a, path);
    f.secret = key;
    h = fake_hello_msg(&f, 1);
    fake_send(&f, &h, sizeof(h), -1);
    PUMP(&a);
    g_assert_cmpint(fake_expect(&f, &got, sizeof(got), CR_AUTH), ==,
                    sizeof(got));
    fake_send(&f, &got, sizeof(got), -1);
    PUMP(&a);
    fake_dropped_empty(&f, "reflected AUTH");
    fake_close(&f);

    /* HELLO returning the device's nonce, or claiming its node id */
    fake_connect(&f, &a, path);
    f.secret = key;
    memcpy(f.nonce, f.vm_nonce, CR_NONCE_LEN);
    h = fake_hello_msg(&f, 1);
    fake_send(&f, &h, sizeof(h), -1);
    PUMP(&a);
    fake_dropped_empty(&f, "HELLO with the device's nonce");
    log_expect("returned this device's challenge", NULL);
    fake_close(&f);
    fake_connect(&f, &a, path);
    f.secret = key;
    h = fake_hello_msg(&f, 1);
    h.node = f.vm_node;
    fake_send(&f, &h, sizeof(h), -1);
    PUMP(&a);
    fake_dropped_empty(&f, "HELLO with the device's node");
    log_expect("claims this device's node id", NULL);
    fake_close(&f);

    /* no secret; an unknown authentication; an old protocol */
    fake_connect(&f, &a, path);
    h = fake_hello_msg(&f, 1);
    fake_send(&f, &h, sizeof(h), -1);
    PUMP(&a);
    fake_dropped_empty(&f, "HELLO without a secret");
    fake_close(&f);
    fake_connect(&f, &a, path);
    h = fake_hello_msg(&f, 1);
    h.auth = 2;
    fake_send(&f, &h, sizeof(h), -1);
    PUMP(&a);
    fake_dropped_empty(&f, "HELLO auth 2");
    log_expect("unknown authentication", NULL);
    fake_close(&f);
    fake_connect(&f, &a, path);
    h = fake_hello_msg(&f, 1);
    h.version = 3;
    h.h.len = 32;           /* a version 3 HELLO */
    fake_send(&f, &h, 32, -1);
    PUMP(&a);
    fake_dropped_empty(&f, "HELLO version 3");
    {
        g_autofree char *want = g_strdup_printf(
            "speaks protocol version 3, this device %u", CR_VERSION);

        log_expect(want, path);
    }
    fake_close(&f);

    /* AUTH before HELLO */
    fake_connect(&f, &a, path);
    fake_send(&f, &good, sizeof(good), -1);
    PUMP(&a);
    fake_dropped_empty(&f, "AUTH before HELLO");
    fake_close(&f);

    /* HELLO, then anything but AUTH: REGION (its fd is not mapped), ... */
    for (int i = 0; i < 4; i++) {
        unsigned maps = ram_maps();
        CrCancelMsg c = { { CR_CANCEL, sizeof(c) }, 77 };
        CrAuthMsg shortauth = good;

        fake_connect(&f, &a, path);
        f.secret = key;
        h = fake_hello_msg(&f, 1);
        fake_send(&f, &h, sizeof(h), -1);
        if (i == 0) {
            fake_send(&f, &r, sizeof(r), f.memfd);
        } else if (i == 1) {
            fake_gids(&f, fgid);
        } else if (i == 2) {
            fake_send(&f, &c, sizeof(c), -1);
        } else {
            shortauth.h.len -= 8;
            fake_send(&f, &shortauth, sizeof(shortauth) - 8, -1);
        }
        PUMP(&a);
        fake_dropped_empty(&f, "unauthenticated message");
        g_assert_cmpuint(ram_maps(), ==, maps);
        g_assert_false(reaches(&a, fgid));
        fake_close(&f);
    }
    g_assert_cmpuint(peers(&a), ==, 0);
    g_assert_cmpuint(fh_watch_count(&a.d.h), ==, 1);

    /* AUTH to a device without a secret */
    vm_init(&n, e.dir, 2);
    PUMP(&a, &n);
    g_assert_cmpuint(peers(&n), ==, 0);     /* and a refused it */
    npath = vm_sock(&n);
    fake_connect(&f, &n, npath);
    g_assert_cmpuint(f.vm_auth, ==, CR_AUTH_NONE);
    fake_hello(&f, 1);
    fake_send(&f, &good, sizeof(good), -1);
    PUMP(&n);
    g_assert_true(fake_dropped(&f));
    fake_close(&f);
    log_stop();
    vm_fini(&n);
    vm_fini(&a);
    env_fini(&e);
}

/*
 * GID claims: first owner wins, and a device's own GIDs are never a
 * peer's.  c announces b's GID and a's: a and b ignore those, traffic
 * for them still goes where it went, and nobody is dropped.
 */
static void test_gid_claims(void)
{
    Env e;
    Vm a, b, c;
    Side sa, sb;
    uint8_t other[16], late[16];
    g_autofree char *pb = NULL, *pc = NULL, *owner = NULL;

    env_init(&e);
    log_start();
    vm_init(&a, e.dir, 1);
    vm_init(&b, e.dir, 2);
    vm_up(&a);
    vm_up(&b);
    PUMP(&a, &b);
    pb = vm_sock(&b);
    vm_init(&c, e.dir, 3);
    pc = vm_sock(&c);
    bind_gid(&c.d, 0, b.gid);           /* b's */
    bind_gid(&c.d, 1, a.gid);           /* a's */
    make_gid(other, 10, 33);
    bind_gid(&c.d, 2, other);           /* nobody's: c's own */
    PUMP(&a, &b, &c);
    g_assert_cmpuint(peers(&a), ==, 2);
    g_assert_cmpuint(peers(&b), ==, 2);
    g_assert_cmpuint(peers(&c), ==, 2);
    g_assert_true(reaches(&a, other));
    g_assert_true(reaches(&b, other));
    g_assert_false(reaches(&b, b.gid));     /* b's own: loopback */
    log_expect("announces GID 10.0.0.2, which this device owns", pc);
    log_expect("announces GID 10.0.0.1, which this device owns", pc);
    /* a knew b first: b keeps 10.0.0.2 at a */
    owner = g_strdup_printf("10.0.0.2, which %s", pb);
    log_expect(owner, pc);
    /* and c, which has b's GID too, does not take b's */
    log_expect("announces GID 10.0.0.2, which this device owns", pb);

    /* a's traffic for b's GID still reaches b, not c */
    side_init(&sa, &a, PVRDMA_QPT_RC);
    side_init(&sb, &b, PVRDMA_QPT_RC);
    rc_connect(&sa, &sb, 7);
    send_across(&sa, &sb, 3);
    send_across(&sb, &sa, 4);

    /* c announces again (a new GID): the refusals are not logged again */
    g_assert_cmpuint(log_count("announces GID 10.0.0.2", NULL), ==, 3);
    make_gid(late, 10, 34);
    bind_gid(&c.d, 3, late);
    PUMP(&a, &b, &c);
    g_assert_true(reaches(&a, late));
    g_assert_cmpuint(log_count("announces GID 10.0.0.2", NULL), ==, 3);

    /* a takes a GID c had: from now on it is a's (loopback), not c's */
    bind_gid(&a.d, 1, other);
    PUMP(&a, &b, &c);
    g_assert_false(reaches(&a, other));
    g_assert_true(reaches(&a, late));
    log_expect("announces GID 10.0.0.33, which this device owns", pc);
    /* b keeps c as the owner of 10.0.0.33: c had it first */
    g_assert_true(reaches(&b, other));
    g_assert_cmpuint(peers(&a), ==, 2);
    g_assert_cmpuint(peers(&b), ==, 2);
    expect_cq_empty(&a.d, &sa.cq);
    expect_cq_empty(&b.d, &sb.cq);
    log_stop();
    vm_fini(&c);
    vm_fini(&b);
    vm_fini(&a);
    env_fini(&e);
}

/* Join dir; NULL and the error message (g_free it) if refused. */
static char *try_join(Vm *v, const char *dir)
{
    PvrdmaLimits l;
    PvrdmaShmRegion r;
    char *err = NULL;

    memset(v, 0, sizeof(*v));
    pvrdma_limits_default(&l);
    fh_init_memfd(&v->d.h, VM_RAM);
    pvrdma_core_init(&v->d.c, &fh_ops, &v->d.h, &l);
    pvrdma_core_add_transport(&v->d.c, pvrdma_loopback_new(&v->d.c));
    v->d.h.core = &v->d.c;
    fh_shm_region(&v->d.h, &r);
    v->t = pvrdma_coresident_new(&v->d.c, dir, NULL, 0, &r, 1, CR_F_ALL,
                                 &err);
    g_assert_true(!v->t == !!err);
    if (v->t) {
        g_assert_true(pvrdma_core_add_transport(&v->d.c, v->t));
    }
    pvrdma_core_fini(&v->d.c);      /* destroys the transport */
    fh_fini(&v->d.h);
    return err;
}

static void expect_refused(const char *dir, const char *want,
                           const char *want2)
{
    Vm v;
    g_autofree char *err = try_join(&v, dir);

    if (!err || !strstr(err, want) || (want2 && !strstr(err, want2))) {
        g_test_message("joining %s: '%s', expected '%s' and '%s'", dir,
                       err ? err : "(no error)", want, want2 ? want2 : "");
        g_test_fail();
    }
    if (g_file_test(dir, G_FILE_TEST_IS_DIR)) {
        g_assert_cmpuint(count_socks(dir), ==, 0);
    }
}

/*
 * The directory is created 0700 and the socket 0600, whatever the umask;
 * a directory others can write to, or another user's, is refused with
 * what to do about it.
 */
static void test_permissions(void)
{
    Env e;
    Vm a;
    struct stat st;
    g_autofree char *dir = NULL, *sock = NULL, *lock = NULL, *file = NULL;
    static const mode_t bad[] = { 0777, 0770, 0730, 0702, 01777 };
    mode_t old;

    env_init(&e);
    dir = g_build_filename(e.dir, "rdv", NULL);
    old = umask(0);
    vm_init(&a, dir, 1);
    umask(old);
    g_assert_cmpint(stat(dir, &st), ==, 0);
    g_assert_cmpint(st.st_mode & 07777, ==, 0700);
    sock = only_sock(dir);
    g_assert_cmpint(stat(sock, &st), ==, 0);
    g_assert_true(S_ISSOCK(st.st_mode));
    g_assert_cmpint(st.st_mode & 07777, ==, 0600);
    lock = g_build_filename(dir, ".lock", NULL);
    g_assert_cmpint(stat(lock, &st), ==, 0);
    g_assert_cmpint(st.st_mode & 07777, ==, 0600);
    vm_fini(&a);

    /* group- or world-writable: refused, saying so and what to run */
    for (unsigned i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *mode = g_strdup_printf("(mode %04o)", bad[i]);
        g_autofree char *fix = g_strdup_printf("chmod 0700 %s", dir);

        g_assert_cmpint(chmod(dir, bad[i]), ==, 0);
        expect_refused(dir, "is writable by its group or by others", mode);
        expect_refused(dir, fix, NULL);
    }
    /* readable and searchable by others is fine: the socket is 0600 */
    g_assert_cmpint(chmod(dir, 0755), ==, 0);
    {
        Vm v;

        g_assert_null(try_join(&v, dir));
    }
    g_assert_cmpint(chmod(dir, 0700), ==, 0);

    /* not a directory */
    file = g_build_filename(e.dir, "plain", NULL);
    g_assert_true(g_file_set_contents(file, "x", 1, NULL));
    expect_refused(file, "is not a directory", NULL);
    unlink(file);

    /* a lock file that is a symlink is not followed */
    g_assert_cmpint(unlink(lock), ==, 0);
    g_assert_cmpint(symlink(file, lock), ==, 0);
    expect_refused(dir, "cannot lock rendezvous directory", NULL);
    g_assert_false(g_file_test(file, G_FILE_TEST_EXISTS));
    unlink(lock);
    env_fini(&e);
}

/*
 * Another user's directory, or lock file, is refused (root is needed to
 * set that up: a counted skip elsewhere; CI runs as root).
 */
static void test_other_users_dir(void)
{
    Env e;
    Vm a;
    g_autofree char *dir = NULL, *lock = NULL;

    if (geteuid() != 0) {
        g_test_skip("needs root to make another user's directory");
        return;
    }
    env_init(&e);
    dir = g_build_filename(e.dir, "rdv", NULL);
    vm_init(&a, dir, 1);
    vm_fini(&a);
    lock = g_build_filename(dir, ".lock", NULL);
    g_assert_cmpint(chown(dir, 65534, 65534), ==, 0);
    expect_refused(dir, "belongs to uid 65534, not to this QEMU's uid 0",
                   "use a directory of this user's");
    g_assert_cmpint(chown(dir, 0, 0), ==, 0);
    g_assert_cmpint(chown(lock, 65534, 65534), ==, 0);
    expect_refused(dir, "lock file", "belongs to uid 65534");
    g_assert_cmpint(chown(lock, 0, 0), ==, 0);
    env_fini(&e);
}

/*
 * A process of another user reaches a socket (the directory was opened up
 * by hand): it is refused, in both directions, before anything is sent.
 */
static void test_foreign_uid(void)
{
    Env e;
    Vm a, b;
    g_autofree char *pa = NULL, *dir2 = NULL, *fsock = NULL;
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    uint8_t buf[256];
    int fd, lfd, cfd;

    if (geteuid() != 0) {
        g_test_skip("needs root to act as another user");
        return;
    }
    env_init(&e);
    log_start();
    vm_init(&a, e.dir, 1);
    vm_up(&a);
    pa = vm_sock(&a);

    /* uid 65534 connects to a (directory and socket opened up by hand) */
    g_assert_cmpint(chmod(e.dir, 0711), ==, 0);
    g_assert_cmpint(chmod(pa, 0666), ==, 0);
    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    strcpy(sa.sun_path, pa);
    g_assert_cmpint(setresuid(-1, 65534, -1), ==, 0);
    g_assert_cmpint(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    g_assert_cmpint(setresuid(-1, 0, -1), ==, 0);
    PUMP(&a);
    g_assert_cmpint(recv(fd, buf, sizeof(buf), MSG_DONTWAIT), ==, 0);
    close(fd);
    g_assert_cmpuint(fh_watch_count(&a.d.h), ==, 1);
    log_expect("runs as uid 65534, not as this QEMU's uid 0: refused", pa);
    g_assert_cmpint(chmod(e.dir, 0700), ==, 0);

    /* b joins a directory where uid 65534 listens: b hangs up on it */
    dir2 = g_build_filename(e.dir, "two", NULL);
    g_assert_cmpint(mkdir(dir2, 0777), ==, 0);
    g_assert_cmpint(chmod(dir2, 0777), ==, 0);
    g_assert_cmpint(chmod(e.dir, 0711), ==, 0);
    fsock = g_build_filename(dir2, "00000000000000aa.sock", NULL);
    strcpy(sa.sun_path, fsock);
    lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    g_assert_cmpint(setresuid(-1, 65534, -1), ==, 0);
    g_assert_cmpint(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    g_assert_cmpint(listen(lfd, 4), ==, 0);
    g_assert_cmpint(setresuid(-1, 0, -1), ==, 0);
    g_assert_cmpint(chmod(dir2, 0700), ==, 0);
    g_assert_cmpint(chmod(e.dir, 0700), ==, 0);
    vm_init(&b, dir2, 2);
    vm_up(&b);
    PUMP(&b);
    cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    g_assert_cmpint(cfd, >=, 0);
    g_assert_cmpint(recv(cfd, buf, sizeof(buf), MSG_DONTWAIT), ==, 0);
    close(cfd);
    close(lfd);
    g_assert_cmpuint(peers(&b), ==, 0);
    g_assert_cmpuint(fh_watch_count(&b.d.h), ==, 1);
    log_expect("runs as uid 65534, not as this QEMU's uid 0: refused",
               fsock);
    g_assert_cmpint(unlink(fsock), ==, 0);
    log_stop();
    vm_fini(&b);
    vm_fini(&a);
    env_fini(&e);
}

/*
 * Both devices with a host HCA as object owner too (ibdev + rendezvous):
 * the guests see the host's QP numbers (not the handles) and keys (lkey !=
 * rkey), the QPs still take the co-resident transport, and SEND, WRITE by
 * the host rkey and READ complete on both sides with the data compared; the
 * host devices get no work request.
 */
static void test_with_owner(void)
{
    X x;
    FakeHca ha, hb;
    Side *sa = &x.sa, *sb = &x.sb;
    uint8_t data[3000], got[3000];
    struct pvrdma_sge g, r;
    struct pvrdma_cqe e;

    env_init(&x.e);
    vm_init(&x.a, x.e.dir, 1);
    vm_init(&x.b, x.e.dir, 2);
    fake_hca_init(&ha, &x.a.d.c);
    fake_hca_init(&hb, &x.b.d.c);
    vm_up(&x.a);
    vm_up(&x.b);
    PUMP(&x.a, &x.b);
    side_init(sa, &x.a, PVRDMA_QPT_RC);
    side_init(sb, &x.b, PVRDMA_QPT_RC);
    g_assert_cmphex(sa->qp.qpn, ==, 0x300 + sa->qp.handle);
    g_assert_cmphex(sb->mr.rkey, ==, 0x2000 + sb->mr.handle);
    rc_connect(sa, sb, 7);
    PUMP(&x.a, &x.b);
    g_assert_cmpstr(pvrdma_qp_get(&x.a.d.c, sa->qp.handle)->tp->ops->name,
                    ==, "coresident");

    fill_pattern(data, sizeof(data), 21);
    mr_write(&x.a.d, &sa->mr, S_IOVA, data, sizeof(data));
    g = mr_sge(sa, 0, sizeof(data));
    r = mr_sge(sb, 4 * FH_PAGE, sizeof(got));
    post_recv(&x.b.d, &sb->qp, 0xb1, &r, 1);
    send_wqe(sa, 0xa1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, sizeof(data));
    g_assert_true(poll_cq(&x.b.d, &sb->cq, &e));
    g_assert_cmphex(e.wr_id, ==, 0xb1);
    g_assert_cmpuint(e.status, ==, PVRDMA_WC_SUCCESS);
    g_assert_cmpuint(e.qp, ==, sb->qp.handle);
    g_assert_cmphex(e.src_qp, ==, sa->qp.qpn);
    mr_read(&x.b.d, &sb->mr, S_IOVA + 4 * FH_PAGE, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));

    /* WRITE by the host rkey, then READ it back into another place */
    rdma_wqe(sa, 0xa2, PVRDMA_WR_RDMA_WRITE, &g, 1, S_IOVA + 8 * FH_PAGE,
             sb->mr.rkey, 0);
    g = mr_sge(sa, 4 * FH_PAGE, sizeof(data));
    rdma_wqe(sa, 0xa3, PVRDMA_WR_RDMA_READ, &g, 1, S_IOVA + 8 * FH_PAGE,
             sb->mr.rkey, 0);
    PUMP(&x.a, &x.b);
    side_expect_cqe(sa, 0xa2, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE,
                    sizeof(data));
    side_expect_cqe(sa, 0xa3, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_READ,
                    sizeof(data));
    mr_read(&x.a.d, &sa->mr, S_IOVA + 4 * FH_PAGE, got, sizeof(got));
    g_assert_cmpmem(got, sizeof(got), data, sizeof(data));
    g_assert_cmpuint(ha.posted->len, ==, 0);
    g_assert_cmpuint(hb.posted->len, ==, 0);
    x_fini(&x);
    g_assert_cmpint(ha.twins, ==, 0);
    g_assert_cmpint(hb.twins, ==, 0);
    fake_hca_fini(&ha);
    fake_hca_fini(&hb);
}

int main(int argc, char **argv)
{
    fh_test_init(&argc, &argv);
    (void)g_random_int();   /* glib's first use may open files: not a leak */
    g_test_add_func("/pvrdma/cr/join", test_join);
    g_test_add_func("/pvrdma/cr/stale-socket", test_stale_socket);
    g_test_add_func("/pvrdma/cr/join-errors", test_join_errors);
    g_test_add_func("/pvrdma/cr/three", test_three);
    g_test_add_func("/pvrdma/cr/send", test_send);
    g_test_add_func("/pvrdma/cr/write", test_write);
    g_test_add_func("/pvrdma/cr/burst-socket", test_burst_socket);
    g_test_add_func("/pvrdma/cr/burst-ring", test_burst_ring);
    g_test_add_func("/pvrdma/cr/features/no-rings", test_features_no_rings);
    g_test_add_func("/pvrdma/cr/features/no-offer", test_features_no_offer);
    g_test_add_func("/pvrdma/cr/features/fake", test_features_fake);
    g_test_add_func("/pvrdma/cr/given-peers", test_given_peers);
    g_test_add_func("/pvrdma/cr/with-owner", test_with_owner);
    g_test_add_func("/pvrdma/cr/read", test_read);
    g_test_add_func("/pvrdma/cr/atomics", test_atomics);
    g_test_add_func("/pvrdma/cr/dma-mr", test_dma_mr);
    g_test_add_func("/pvrdma/cr/many-sg", test_many_sg);
    g_test_add_func("/pvrdma/cr/ud", test_ud);
    g_test_add_func("/pvrdma/cr/rnr-recover", test_rnr_recover);
    g_test_add_func("/pvrdma/cr/fail-behind-inflight", test_fail_behind_inflight);
    g_test_add_func("/pvrdma/cr/rnr-timeout", test_rnr_timeout);
    g_test_add_func("/pvrdma/cr/bad-rkey", test_bad_rkey);
    g_test_add_func("/pvrdma/cr/responder-qp-gone", test_responder_qp_gone);
    g_test_add_func("/pvrdma/cr/requester-qp-gone", test_requester_qp_gone);
    g_test_add_func("/pvrdma/cr/fence/destroy", test_fence_destroy);
    g_test_add_func("/pvrdma/cr/fence/reset-qp", test_fence_reset_qp);
    g_test_add_func("/pvrdma/cr/fence/reset-device", test_fence_reset_device);
    g_test_add_func("/pvrdma/cr/fence/silent-peer", test_fence_silent_peer);
    g_test_add_func("/pvrdma/cr/fence/wait-quiesce", test_fence_wait_quiesce);
    g_test_add_func("/pvrdma/cr/peer-gone", test_peer_gone);
    g_test_add_func("/pvrdma/cr/pause-resume", test_pause_resume);
    g_test_add_func("/pvrdma/cr/moved", test_moved);
    g_test_add_func("/pvrdma/cr/resumed-with-rival",
                    test_resumed_with_rival);
    g_test_add_func("/pvrdma/cr/moved-no-successor",
                    test_moved_no_successor);
    g_test_add_func("/pvrdma/cr/moved-away", test_moved_away);
    g_test_add_func("/pvrdma/cr/moved-away-silent", test_moved_away_silent);
    g_test_add_func("/pvrdma/cr/moved-home", test_moved_home);
    g_test_add_func("/pvrdma/cr/offer-peer-gone", test_offer_peer_gone);
    g_test_add_func("/pvrdma/cr/peer-gone-backlog", test_peer_gone_backlog);
    g_test_add_func("/pvrdma/cr/peer-gone-backlog-ring",
                    test_peer_gone_backlog_ring);
    g_test_add_func("/pvrdma/cr/fake-peer", test_fake_peer);
    g_test_add_func("/pvrdma/cr/fake-peer-ring", test_fake_peer_ring);
    g_test_add_func("/pvrdma/cr/fake-peer-poll", test_fake_peer_poll);
    g_test_add_func("/pvrdma/cr/ring-malformed", test_ring_malformed);
    g_test_add_func("/pvrdma/cr/ring-backlog", test_ring_backlog);
    g_test_add_func("/pvrdma/cr/peer-not-reading", test_peer_not_reading);
    g_test_add_func("/pvrdma/cr/malformed", test_malformed);
    g_test_add_func("/pvrdma/cr/auth/same-secret", test_auth_same_secret);
    g_test_add_func("/pvrdma/cr/auth/wrong-secret", test_auth_wrong_secret);
    g_test_add_func("/pvrdma/cr/auth/one-sided", test_auth_one_sided);
    g_test_add_func("/pvrdma/cr/auth/fake-peer", test_auth_fake);
    g_test_add_func("/pvrdma/cr/gid-claims", test_gid_claims);
    g_test_add_func("/pvrdma/cr/permissions", test_permissions);
    g_test_add_func("/pvrdma/cr/other-users-dir", test_other_users_dir);
    g_test_add_func("/pvrdma/cr/foreign-uid", test_foreign_uid);
    return g_test_run();
}
