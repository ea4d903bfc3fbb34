/*
 * Tests of the co-resident transport: the VMs, the rendezvous directory, sides and pumpers (cr.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "coresident/cr.h"

void make_gid(uint8_t gid[16], uint8_t net, uint8_t id)
{
    memset(gid, 0, 16);
    gid[10] = gid[11] = 0xff;
    gid[12] = net;
    gid[15] = id;
}

/* the rings new devices offer (pvrdma_coresident_set_rings(); 0: none) */
uint32_t g_ring_size = CR_RING_SIZE;

/*
 * The features new devices offer (pvrdma_coresident_set_features()): fewer
 * than CR_F_ALL make a device of a build that lacks the others.
 */
uint64_t g_features = CR_F_ALL;

void vm_create(Vm *v, const char *dir, uint8_t id, const char *secret)
{
    PvrdmaLimits l;
    PvrdmaShmRegion r;
    Error *err = NULL;

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

void vm_init_secret(Vm *v, const char *dir, uint8_t id,
                    const char *secret)
{
    vm_create(v, dir, id, secret);
    dev_write_dsr(&v->d);
    pvrdma_core_reg_write(&v->d.c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
    g_assert_cmpuint(pvrdma_core_reg_read(&v->d.c, PVRDMA_REG_ERR), ==, 0);
    pvrdma_core_reg_write(&v->d.c, PVRDMA_REG_IMR, 0);
}

void vm_init(Vm *v, const char *dir, uint8_t id)
{
    vm_init_secret(v, dir, id, NULL);
}

void vm_up(Vm *v)
{
    bind_gid(&v->d, 0, v->gid);
}

void vm_fini(Vm *v)
{
    dev_exit(&v->d);
}

void vm_take_guest(Vm *to, const Vm *from)
{
    memcpy(to->d.h.ram, from->d.h.ram, VM_RAM);
    to->d.h.next_free = from->d.h.next_free;
    to->d.dsr = from->d.dsr;
    to->d.cmd = from->d.cmd;
    to->d.resp = from->d.resp;
    memcpy(to->d.async_pages, from->d.async_pages, sizeof(to->d.async_pages));
    memcpy(to->d.cqn_pages, from->d.cqn_pages, sizeof(to->d.cqn_pages));
}

unsigned peers(Vm *v)
{
    return pvrdma_coresident_peers(v->t);
}

unsigned qp_records(Vm *v)
{
    return pvrdma_coresident_qps(v->t);
}

bool reaches(Vm *v, const uint8_t gid[16])
{
    return v->t->ops->reaches(v->t, gid);
}

void pump_vms(Vm *const *v, unsigned n)
{
    FakeHost *h[8];

    g_assert_cmpuint(n, <=, G_N_ELEMENTS(h));
    for (unsigned i = 0; i < n; i++) {
        h[i] = &v[i]->d.h;
    }
    g_assert_true(fh_pump(h, n, 20000));
}

void unbind_gid(Dev *d, uint32_t index, const uint8_t gid[16])
{
    union pvrdma_cmd_req req = { 0 };

    req.destroy_bind.index = index;
    memcpy(req.destroy_bind.dest_gid, gid, 16);
    g_assert_cmpuint(dev_cmd(d, &req, PVRDMA_CMD_DESTROY_BIND, NULL), ==, 0);
}

FhWatch *peer_watch(Vm *v)
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

unsigned count_socks(const char *dir)
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

char *only_sock(const char *dir)
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

void rm_tree(const char *path)
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

void env_init(Env *e)
{
    e->fds = fh_open_fds();
    e->dir = g_dir_make_tmp("pvrdma-cr-XXXXXX", NULL);
    g_assert_nonnull(e->dir);
}

void env_fini(Env *e)
{
    g_assert_cmpuint(count_socks(e->dir), ==, 0);
    rm_tree(e->dir);
    g_free(e->dir);
    g_assert_cmpuint(fh_open_fds(), ==, e->fds);
}

void side_init(Side *s, Vm *v, uint8_t type)
{
    memset(s, 0, sizeof(*s));
    s->v = v;
    s->pd = create_pd(&v->d, 0);
    create_cq(&v->d, &s->cq, 128);
    create_qp(&v->d, &s->qp, s->pd, s->cq.handle, s->cq.handle, type);
    create_mr(&v->d, &s->mr, s->pd, S_IOVA, S_LEN, CR_MR_ACCESS);
}

void rc_connect(Side *a, Side *b, uint8_t rnr_retry)
{
    rc_to_rts_gid(&a->v->d, &a->qp, b->qp.qpn, b->v->gid, rnr_retry);
    rc_to_rts_gid(&b->v->d, &b->qp, a->qp.qpn, a->v->gid, rnr_retry);
}

void side_expect_cqe(Side *s, uint64_t wr_id, uint32_t status,
                     uint32_t opcode, uint32_t byte_len)
{
    expect_cqe(&s->v->d, &s->cq, wr_id, status, opcode, byte_len,
               s->qp.handle);
}

uint32_t qp_state(Side *s)
{
    return query_qp_state(&s->v->d, &s->qp);
}

gpointer pumper_run(gpointer opaque)
{
    Pumper *p = opaque;
    FakeHost *h = &p->v->d.h;

    g_usleep(p->delay_ms * 1000ul);
    while (!g_atomic_int_get(&p->stop)) {
        fh_step_wait(&h, 1, 5);
    }
    return NULL;
}

void pumper_start_late(Pumper *p, Vm *v, unsigned delay_ms)
{
    p->v = v;
    p->stop = 0;
    p->delay_ms = delay_ms;
    p->th = g_thread_new("peer", pumper_run, p);
}

void pumper_start(Pumper *p, Vm *v)
{
    pumper_start_late(p, v, 0);
}

void pumper_stop(Pumper *p)
{
    g_atomic_int_set(&p->stop, 1);
    g_thread_join(p->th);
}

void x_setup_features(X *x, uint8_t rnr_retry, uint64_t fa, uint64_t fb)
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

void x_setup(X *x, uint8_t rnr_retry)
{
    x_setup_features(x, rnr_retry, CR_F_ALL, CR_F_ALL);
}

void x_fini(X *x)
{
    expect_cq_empty(&x->a.d, &x->sa.cq);
    expect_cq_empty(&x->b.d, &x->sb.cq);
    vm_fini(&x->a);
    vm_fini(&x->b);
    env_fini(&x->e);
}

void arm_cq(Vm *v, TCq *cq)
{
    pvrdma_core_uar_write(&v->d.c, PVRDMA_UAR_CQ_OFFSET,
                          PVRDMA_UAR_CQ_ARM | cq->handle);
}

void rearm_send_cq(FakeHost *h, unsigned vector, void *arg)
{
    Side *s = arg;

    if (vector == PVRDMA_INTR_VECTOR_CQ) {
        arm_cq(s->v, &s->cq);
    }
}

unsigned cq_irqs(Vm *v)
{
    unsigned n = 0;

    for (guint i = 0; i < v->d.h.irqs->len; i++) {
        n += g_array_index(v->d.h.irqs, unsigned, i) ==
             PVRDMA_INTR_VECTOR_CQ;
    }
    return n;
}

void send_wqe(Side *s, uint64_t wr_id, uint32_t opcode, uint32_t flags,
              const struct pvrdma_sge *sge, uint32_t nsge)
{
    struct pvrdma_sq_wqe_hdr w = { 0 };

    w.wr_id = wr_id;
    w.opcode = opcode;
    w.send_flags = flags;
    post_send(&s->v->d, &s->qp, &w, sge, nsge);
}

void rdma_wqe(Side *s, uint64_t wr_id, uint32_t opcode,
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

struct pvrdma_sge mr_sge(Side *s, uint64_t off, uint32_t len)
{
    return (struct pvrdma_sge) { S_IOVA + off, len, s->mr.lkey };
}

void pass_retry_window(Side *s)
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

void bad_message(Vm *a, const char *path, int hs, const void *msg,
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

char *ring_peer_up(Env *e, Vm *a, Fake *f)
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
