/*
 * Tests of the co-resident transport: the fake peer, a raw socket speaking the wire format (cr.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "coresident/cr.h"

CrRingIdx *fake_idx(Fake *f, unsigned i)
{
    return &((CrRingShm *)f->ring)[0].idx[i];
}

void fake_ring_copy(Fake *f, unsigned i, uint64_t pos, void *buf,
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

void fake_ring_put(Fake *f, const void *buf, uint32_t len,
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

void fake_send(Fake *f, const void *buf, size_t len, int fd)
{
    if (f->ring_tx && fd < 0) {
        fake_ring_put(f, buf, len, len);
        return;
    }
    g_assert_cmpint(fh_sendmsg(f->fd, buf, len, fd, MSG_NOSIGNAL), ==, len);
}

size_t fake_ring_get(Fake *f, void *buf, size_t cap)
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

ssize_t fake_recv(Fake *f, void *buf, size_t cap, int *fd)
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

ssize_t fake_recv_datagram(Fake *f, void *buf, size_t cap, int *fd)
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

ssize_t fake_recv_socket(Fake *f, void *buf, size_t cap, int *fd)
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

ssize_t fake_expect(Fake *f, void *buf, size_t cap, uint32_t type)
{
    int fd;
    ssize_t n = fake_recv(f, buf, cap, &fd);

    g_assert_cmpint(n, >=, (ssize_t)sizeof(CrHdr));
    g_assert_cmpuint(((CrHdr *)buf)->type, ==, type);
    g_assert_cmpuint(((CrHdr *)buf)->len, ==, n);
    g_assert_cmpint(fd, ==, -1);
    return n;
}

bool fake_dropped(Fake *f)
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

void fake_connect(Fake *f, Vm *v, const char *path)
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

void fake_take_ram(Fake *f)
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

void fake_mac(const char *secret, bool by_fake, const uint8_t *vnonce,
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

CrHello fake_hello_msg(Fake *f, uint32_t nregions)
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

void fake_auth(Fake *f)
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

void fake_hello(Fake *f, uint32_t nregions)
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

void fake_region(Fake *f, uint32_t index, uint64_t size, uint64_t off,
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

void fake_gids(Fake *f, const uint8_t gid[16])
{
    struct {
        CrGids m;
        CrGid g;
    } m = { { { CR_GIDS, sizeof(m) }, 1 } };

    memcpy(m.g.gid, gid, 16);
    m.g.type = PVRDMA_GID_TYPE_FLAG_ROCE_V2;
    fake_send(f, &m, sizeof(m), -1);
}

void fake_ready(Fake *f, const uint8_t gid[16])
{
    fake_hello(f, 1);
    fake_region(f, 0, FAKE_RAM, 0, f->memfd);
    fake_gids(f, gid);
}

bool fake_ring_on(Fake *f, bool seal)
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

void fake_close(Fake *f)
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

CrReqMsg *req_msg(uint64_t cookie, uint32_t opcode, uint32_t dest_qpn,
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

gpointer fake_cancel_run(gpointer opaque)
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

int32_t fake_resp(Fake *f, uint64_t cookie)
{
    CrRespMsg m;

    g_assert_cmpint(fake_expect(f, &m, sizeof(m), CR_RESP), ==, sizeof(m));
    g_assert_cmphex(m.cookie, ==, cookie);
    return m.status;
}

void fake_write_checked(Fake *f, Side *sa, uint64_t cookie,
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

char *fake_side_up(Env *e, Vm *a, Side *sa, Fake *f, uint8_t fgid[16])
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

/* The state of fake_peer_run(): a device, its side, the fake peer */
typedef struct FpRun {
    Env e;
    Vm a;
    Side sa;
    Fake f;
    char *path;
    uint8_t fgid[16];
    uint8_t data[5000];
    CrSge sg[2];
} FpRun;

/*
 * The fake writes into a's MR and reads it back (the list split over a
 * MORE); a request a cannot serve is answered, the peer stays.
 */
static void fp_write_read(FpRun *fp)
{
    uint8_t got[5000];
    CrReqMsg *m;

    /* the fake writes 5000 bytes of its RAM (two pieces) into a's MR */
    fill_pattern(fp->data, sizeof(fp->data), 9);
    memcpy(fp->f.ram + 10000, fp->data, 3000);
    memcpy(fp->f.ram + 50000, fp->data + 3000, 2000);
    fp->sg[0] = (CrSge) { .region = 0, .off = 10000, .len = 3000 };
    fp->sg[1] = (CrSge) { .region = 0, .off = 50000, .len = 2000 };
    fake_write_checked(&fp->f, &fp->sa, 0x1001, fp->sg, 2, 123, fp->data, sizeof(fp->data));

    /* ... reads it back into another place, the list split over a MORE */
    m = req_msg(0x1002, PVRDMA_WR_RDMA_READ, fp->sa.qp.qpn, fp->sg, 1, 2, 5000);
    fp->sg[0].off = 200000;
    fp->sg[1].off = 300000;
    memcpy(m->sg, fp->sg, sizeof(CrSge));
    m->remote_addr = S_IOVA + 123;
    m->rkey = fp->sa.mr.rkey;
    fake_send(&fp->f, m, m->h.len, -1);
    g_free(m);
    PUMP(&fp->a);
    g_assert_cmpint(fake_recv(&fp->f, got, sizeof(got), &(int) { 0 }), ==, -1);
    {
        struct {
            CrMoreMsg m;
            CrSge s;
        } mm = { { { CR_MORE, sizeof(mm) }, 0x1002, 1 }, fp->sg[1] };

        fake_send(&fp->f, &mm, sizeof(mm), -1);
    }
    PUMP(&fp->a);
    g_assert_cmpint(fake_resp(&fp->f, 0x1002), ==, PVRDMA_WC_SUCCESS);
    g_assert_cmpmem(fp->f.ram + 200000, 3000, fp->data, 3000);
    g_assert_cmpmem(fp->f.ram + 300000, 2000, fp->data + 3000, 2000);

    /* requests a cannot serve are answered, the peer stays */
    m = req_msg(0x1003, PVRDMA_WR_RDMA_WRITE, 0xabcd, fp->sg, 1, 1, 3000);
    fake_send(&fp->f, m, m->h.len, -1);
    g_free(m);
    PUMP(&fp->a);
    g_assert_cmpint(fake_resp(&fp->f, 0x1003), ==, PVRDMA_TRANSPORT_NO_RESPONDER);
    g_assert_cmpuint(peers(&fp->a), ==, 1);
    g_assert_cmpuint(qp_state(&fp->sa), ==, PVRDMA_QPS_RTS);
}

static void fp_batch(FpRun *fp)
{
    uint8_t got[5000];

    /*
     * Four answers in one event are one batch of completions: one
     * interrupt for a's send CQ, even with a guest that re-arms at once.
     */
    {
        CrRespMsg r4 = { { CR_RESP, sizeof(r4) } };
        struct pvrdma_sge g4 = mr_sge(&fp->sa, 0, 8);
        uint64_t c4[4];
        unsigned irqs;

        for (int i = 0; i < 4; i++) {
            send_wqe(&fp->sa, 0xe0 + i, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED,
                     &g4, 1);
        }
        PUMP(&fp->a);
        for (int i = 0; i < 4; i++) {
            fake_expect(&fp->f, got, sizeof(got), CR_REQ);
            c4[i] = ((CrReqMsg *)got)->cookie;
        }
        for (int i = 0; i < 4; i++) {
            r4.cookie = c4[i];
            fake_send(&fp->f, &r4, sizeof(r4), -1);
        }
        arm_cq(&fp->a, &fp->sa.cq);
        fp->a.d.h.on_notify = rearm_send_cq;
        fp->a.d.h.on_notify_arg = &fp->sa;
        irqs = cq_irqs(&fp->a);
        PUMP(&fp->a);
        fp->a.d.h.on_notify = NULL;
        g_assert_cmpuint(cq_irqs(&fp->a) - irqs, ==, 1);
        for (int i = 0; i < 4; i++) {
            side_expect_cqe(&fp->sa, 0xe0 + i, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND,
                            8);
        }
        expect_cq_empty(&fp->a.d, &fp->sa.cq);
    }
}

static void fp_cancel(FpRun *fp)
{
    uint8_t got[5000];
    CrReqMsg *m;

    /*
     * The fake's sends wait for a receive; it cancels them (its QP is
     * gone): they are answered and never delivered.  A CANCEL for a QP
     * with nothing waiting is fine.
     */
    {
        CrCancelMsg c = { { CR_CANCEL, sizeof(c) }, 77 };
        struct pvrdma_sge r;
        Side sc;

        side_init(&sc, &fp->a, PVRDMA_QPT_RC);
        rc_to_rts_gid(&fp->a.d, &sc.qp, 77, fp->fgid, 7);
        m = req_msg(0x1005, PVRDMA_WR_SEND, sc.qp.qpn, fp->sg, 1, 1, 3000);
        fake_send(&fp->f, m, m->h.len, -1);
        m->cookie = 0x1006;
        m->opcode = PVRDMA_WR_RDMA_WRITE;
        m->rkey = sc.mr.rkey;
        m->remote_addr = S_IOVA;
        fake_send(&fp->f, m, m->h.len, -1);
        g_free(m);
        PUMP(&fp->a);
        g_assert_cmpint(fake_recv(&fp->f, got, sizeof(got), &(int) { 0 }), ==,
                        -1);
        c.src_qpn = 78;
        fake_send(&fp->f, &c, sizeof(c), -1);
        PUMP(&fp->a);
        g_assert_cmpint(fake_recv(&fp->f, got, sizeof(got), &(int) { 0 }), ==,
                        -1);
        c.src_qpn = 77;
        fake_send(&fp->f, &c, sizeof(c), -1);
        PUMP(&fp->a);
        g_assert_cmpint(fake_resp(&fp->f, 0x1005), ==, PVRDMA_WC_WR_FLUSH_ERR);
        g_assert_cmpint(fake_resp(&fp->f, 0x1006), ==, PVRDMA_WC_WR_FLUSH_ERR);
        r = mr_sge(&sc, 0, 4000);
        post_recv(&fp->a.d, &sc.qp, 0xc1, &r, 1);
        PUMP(&fp->a);
        expect_cq_empty(&fp->a.d, &sc.cq);
        g_assert_cmpuint(peers(&fp->a), ==, 1);
        /* sc's record (its requests waited) goes with sc */
        {
            union pvrdma_cmd_req req = { 0 };
            unsigned n = qp_records(&fp->a);

            g_assert_cmpuint(n, >=, 1);
            req.destroy_qp.qp_handle = sc.qp.handle;
            g_assert_cmpuint(dev_cmd(&fp->a.d, &req, PVRDMA_CMD_DESTROY_QP,
                                     NULL), ==, 0);
            g_assert_cmpuint(qp_records(&fp->a), ==, n - 1);
        }
    }
}

/*
 * a's WRITE reaches the fake as a list of a's RAM; a QP destroyed with
 * requests at the fake (its fence); an answer with a status that does not
 * exist.
 */
static void fp_requests_out(FpRun *fp)
{
    CrReqMsg *m;

    /* a's WRITE reaches the fake as a list of a's RAM */
    {
        g_autofree uint8_t *buf = g_malloc(CR_MAX_MSG);
        struct pvrdma_sge g = mr_sge(&fp->sa, 5000, 5000);  /* crosses a gap */
        uint8_t copy[5000];
        uint64_t at = 0;
        CrRespMsg resp = { { CR_RESP, sizeof(resp) } };

        mr_write(&fp->a.d, &fp->sa.mr, S_IOVA + 5000, fp->data, sizeof(fp->data));
        rdma_wqe(&fp->sa, 0xa1, PVRDMA_WR_RDMA_WRITE_WITH_IMM, &g, 1, 0x5000,
                 0x4242, 0x01020304);
        PUMP(&fp->a);
        fake_expect(&fp->f, buf, CR_MAX_MSG, CR_REQ);
        m = (CrReqMsg *)buf;
        g_assert_cmpuint(m->opcode, ==, PVRDMA_WR_RDMA_WRITE_WITH_IMM);
        g_assert_cmpuint(m->src_qpn, ==, fp->sa.qp.qpn);
        g_assert_cmpuint(m->dest_qpn, ==, 77);
        g_assert_cmphex(m->rkey, ==, 0x4242);
        g_assert_cmphex(m->remote_addr, ==, 0x5000);
        g_assert_cmphex(m->imm, ==, 0x01020304);
        g_assert_cmpuint(m->qp_type, ==, PVRDMA_QPT_RC);
        g_assert_cmpmem(m->dgid, 16, fp->fgid, 16);
        g_assert_cmpmem(m->sgid, 16, fp->a.gid, 16);
        g_assert_cmpmem(m->smac, 6, fp->a.d.h.mac, 6);
        g_assert_cmpuint(m->len, ==, 5000);
        g_assert_cmpuint(m->nsg, ==, m->nsg_total);
        g_assert_cmpuint(m->nsg, ==, 2);
        for (uint32_t i = 0; i < m->nsg; i++) {
            g_assert_cmpuint(m->sg[i].region, ==, 0);
            g_assert_cmpuint(m->sg[i].off + m->sg[i].len, <=, VM_RAM);
            memcpy(copy + at, fp->f.vm_ram + m->sg[i].off, m->sg[i].len);
            at += m->sg[i].len;
        }
        g_assert_cmpuint(at, ==, 5000);
        g_assert_cmpmem(copy, sizeof(copy), fp->data, sizeof(fp->data));
        expect_cq_empty(&fp->a.d, &fp->sa.cq);
        resp.cookie = m->cookie;
        resp.status = PVRDMA_WC_SUCCESS;
        fake_send(&fp->f, &resp, sizeof(resp), -1);
        PUMP(&fp->a);
        side_expect_cqe(&fp->sa, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RDMA_WRITE,
                        5000);

        /*
         * a destroys a QP with two requests at the fake: one CANCEL naming
         * it, and DESTROY_QP returns only once the fake answered both (its
         * fence): the fake answers from another thread, a peer QEMU.
         */
        {
            union pvrdma_cmd_req req = { 0 };
            FakeCanceller fc = { .f = &fp->f };
            unsigned n;
            GThread *th;
            uint64_t *cookie = fc.cookie;
            Side sd;

            side_init(&sd, &fp->a, PVRDMA_QPT_RC);
            rc_to_rts_gid(&fp->a.d, &sd.qp, 77, fp->fgid, 7);
            g = mr_sge(&sd, 0, 10);
            send_wqe(&sd, 0xd1, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
            send_wqe(&sd, 0xd2, PVRDMA_WR_SEND, PVRDMA_SEND_SIGNALED, &g, 1);
            PUMP(&fp->a);
            for (int i = 0; i < 2; i++) {
                fake_expect(&fp->f, buf, CR_MAX_MSG, CR_REQ);
                g_assert_cmpuint(m->src_qpn, ==, sd.qp.qpn);
                cookie[i] = m->cookie;
            }
            fc.qpn = sd.qp.qpn;
            th = g_thread_new("fake", fake_cancel_run, &fc);
            req.destroy_qp.qp_handle = sd.qp.handle;
            n = qp_records(&fp->a);
            g_assert_cmpuint(dev_cmd(&fp->a.d, &req, PVRDMA_CMD_DESTROY_QP, NULL),
                             ==, 0);
            g_thread_join(th);
            PUMP(&fp->a);
            /* sd's record went once the fake answered its requests */
            g_assert_cmpuint(qp_records(&fp->a), ==, n - 1);
            g_assert_cmpint(fake_recv(&fp->f, buf, CR_MAX_MSG, &(int) { 0 }), ==,
                            -1);
            g_assert_cmpuint(peers(&fp->a), ==, 1);
            /*
             * the first answer completed before the QP went (the driver
             * drops such CQEs); its error left the rest for a run that
             * came too late
             */
            side_expect_cqe(&sd, 0xd1, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_SEND,
                            0);
            expect_cq_empty(&fp->a.d, &sd.cq);
            g = mr_sge(&fp->sa, 5000, 5000);
        }

        /* an answer with a status that does not exist: the peer goes */
        rdma_wqe(&fp->sa, 0xa2, PVRDMA_WR_RDMA_READ, &g, 1, 0x5000, 0x4242, 0);
        PUMP(&fp->a);
        fake_expect(&fp->f, buf, CR_MAX_MSG, CR_REQ);
        resp.cookie = m->cookie;
        resp.status = 1000;
        fake_send(&fp->f, &resp, sizeof(resp), -1);
        PUMP(&fp->a);
        g_assert_true(fake_dropped(&fp->f));
        g_assert_cmpuint(peers(&fp->a), ==, 0);
        g_assert_cmpuint(fh_reports(&fp->a.d.h, "peer-lost malformed message"),
                         ==, 1);
        pass_retry_window(&fp->sa);
        side_expect_cqe(&fp->sa, 0xa2, PVRDMA_WC_RETRY_EXC_ERR,
                        PVRDMA_WC_RDMA_READ, 0);
    }
}

void fake_peer_run(bool ring)
{
    FpRun run, *fp = &run;

    fp->path = fake_side_up(&fp->e, &fp->a, &fp->sa, &fp->f, fp->fgid);
    g_assert_cmpuint(peers(&fp->a), ==, 0);
    fake_hello(&fp->f, 1);
    PUMP(&fp->a);
    g_assert_cmpuint(peers(&fp->a), ==, 0);     /* its RAM is not known yet */
    fake_region(&fp->f, 0, FAKE_RAM, 0, fp->f.memfd);
    fake_gids(&fp->f, fp->fgid);
    PUMP(&fp->a);
    g_assert_cmpuint(peers(&fp->a), ==, 1);
    g_assert_true(reaches(&fp->a, fp->fgid));
    if (ring) {
        g_assert_true(fake_ring_on(&fp->f, true));
    }
    fp_write_read(fp);
    fp_batch(fp);
    fp_cancel(fp);
    fp_requests_out(fp);
    if (ring) {     /* it all went through the rings */
        g_assert_cmpuint(fp->f.rprod, >, 0);
        g_assert_cmpuint(fp->f.rcons, >, 0);
    }
    fake_close(&fp->f);
    g_free(fp->path);
    expect_cq_empty(&fp->a.d, &fp->sa.cq);
    vm_fini(&fp->a);
    env_fini(&fp->e);
}

gpointer fake_poller_run(gpointer opaque)
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
