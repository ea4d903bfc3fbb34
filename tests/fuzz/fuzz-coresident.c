/*
 * libFuzzer target: a hostile co-resident peer.  One device (QEMU-free
 * core, fake host with memfd RAM) joins a rendezvous directory with an RC
 * QP (RTS, receives posted, an MR for remote access) and a UD QP.  Each
 * input is a connection into that directory: a valid HELLO, REGION (a
 * memfd of the fuzzer's own) and GIDS, then datagrams taken from the input,
 * then the connection closes.  An input whose first datagram is a HELLO
 * brings its own handshake instead (HELLO, AUTH and what a peer may send
 * before it is accepted).  OFFER and ANSWER (the way back from RoCEv2)
 * find the device's QP co-resident already.  Two datagram types are the
 * harness's own, for the rings: FZ_RING_PUT writes the bytes after its
 * header into the peer's ring (raw: good records or garbage), publishes
 * and sends WAKE; FZ_RING_IDX writes its payload over the ring's index
 * block (any prod, cons, flags).  A RING datagram goes out with a sealed
 * memfd of the size it names (a valid one, or the smallest).  Whatever
 * the datagrams say,
 * the device must not crash (ASan/UBSan), and once the peer is gone
 * nothing of it may stay: no fd handler, no waiting request, the device's
 * QPs served.
 *
 * Input: a sequence of [u16 length][bytes] datagrams (little endian).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "qapi/error.h"
#include "fake-driver.h"
#include "hw/rdma/pvrdma_coresident.h"
#include "hw/rdma/pvrdma_loopback.h"
#include "hw/rdma/pvrdma_coresident_wire.h"

#define VM_RAM      (16ull << 20)
#define FZ_RING_PUT 0x7a000001u
#define FZ_RING_IDX 0x7a000002u
#define PEER_RAM    (1ull << 20)
#define IOVA        0x10000000ull

static Dev dev;
static PvrdmaTransport *tr;
static char *dir, *sock;
static int peer_memfd = -1;
static TCq cq;
static TQp rc, ud;
static TMr mr;
/* this input's ring memory (RING), mapped here too, and its prod */
static uint8_t *ring;
static uint32_t ring_size;
static uint64_t ring_prod;
static const uint8_t peer_gid[16] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 99
};

static void pump(void)
{
    FakeHost *hosts[1] = { &dev.h };

    fh_pump(hosts, 1, 1000);
}

/* Keep 4 receives posted on qp for what a peer may send. */
static void top_up(TQp *qp)
{
    struct pvrdma_sge s = { IOVA, 4096, mr.lkey };
    uint32_t cons = qp_rings(&dev, qp)[1].cons_head;

    while (pvrdma_idx_used(qp->rq_prod, cons, qp->recv_wr) < 4) {
        post_recv(&dev, qp, 0x100, &s, 1);
    }
}

static void post_receives(void)
{
    top_up(&rc);
    top_up(&ud);
}

static void setup(void)
{
    PvrdmaLimits l;
    PvrdmaShmRegion r;
    Error *err = NULL;
    uint32_t pd;
    GDir *d;
    const char *n;

    pvrdma_limits_default(&l);
    l.max_qp = 16;
    l.max_cq = 16;
    l.max_mr = 16;
    fh_init_memfd(&dev.h, VM_RAM);
    pvrdma_core_init(&dev.c, &fh_ops, &dev.h, &l);
    /* a peer's requests over 512 bytes run in pieces (cr_serve_piece()) */
    dev.c.run_bytes = 512;
    pvrdma_core_add_transport(&dev.c, pvrdma_loopback_new(&dev.c));
    dev.h.core = &dev.c;
    dir = g_dir_make_tmp("pvrdma-fuzz-XXXXXX", NULL);
    fh_shm_region(&dev.h, &r);
    tr = pvrdma_coresident_new(&dev.c, dir, NULL, 0, &r, 1, CR_F_ALL, &err);
    if (!tr) {
        fprintf(stderr, "fuzz-coresident: %s\n", error_get_pretty(err));
        abort();
    }
    pvrdma_core_add_transport(&dev.c, tr);
    dev_write_dsr(&dev);
    pvrdma_core_reg_write(&dev.c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
    pvrdma_core_reg_write(&dev.c, PVRDMA_REG_IMR, 0);
    bind_gid(&dev, 0, test_gid);
    pd = create_pd(&dev, 0);
    create_cq(&dev, &cq, 256);
    create_mr(&dev, &mr, pd, IOVA, 8 * 4096,
              PVRDMA_ACCESS_LOCAL_WRITE | RC_ACCESS);
    create_qp(&dev, &rc, pd, cq.handle, cq.handle, PVRDMA_QPT_RC);
    rc_to_rts_gid(&dev, &rc, 7, peer_gid, 1);
    create_qp(&dev, &ud, pd, cq.handle, cq.handle, PVRDMA_QPT_UD);
    {
        struct pvrdma_qp_attr a = { 0 };

        a.qp_state = PVRDMA_QPS_INIT;
        a.port_num = 1;
        a.qkey = 0x1234;
        modify_qp(&dev, &ud, PVRDMA_QP_STATE | PVRDMA_QP_PKEY_INDEX |
                  PVRDMA_QP_PORT | PVRDMA_QP_QKEY, &a);
        a.qp_state = PVRDMA_QPS_RTR;
        modify_qp(&dev, &ud, PVRDMA_QP_STATE, &a);
        a.qp_state = PVRDMA_QPS_RTS;
        modify_qp(&dev, &ud, PVRDMA_QP_STATE | PVRDMA_QP_SQ_PSN, &a);
    }
    post_receives();
    d = g_dir_open(dir, 0, NULL);
    while ((n = g_dir_read_name(d))) {
        if (g_str_has_suffix(n, ".sock")) {
            sock = g_build_filename(dir, n, NULL);
        }
    }
    g_dir_close(d);
    peer_memfd = memfd_create("fuzz-peer", MFD_CLOEXEC);
    if (!sock || peer_memfd < 0 || ftruncate(peer_memfd, PEER_RAM)) {
        abort();
    }
}

/*
 * Seeds (make -C tests/fuzz cr-corpus): well-formed datagrams against the
 * device as setup() builds it, one file per kind of request.
 */
static void seed(const char *out, const char *name, const void *msg,
                 size_t len)
{
    g_autofree char *path = g_build_filename(out, name, NULL);
    g_autofree uint8_t *buf = g_malloc(len + 2);

    buf[0] = len;
    buf[1] = len >> 8;
    memcpy(buf + 2, msg, len);
    if (!g_file_set_contents(path, (char *)buf, len + 2, NULL)) {
        abort();
    }
}

/* A seed of three datagrams. */
static void seed3(const char *out, const char *name, const void *a,
                  size_t la, const void *b, size_t lb, const void *c,
                  size_t lc)
{
    g_autofree char *path = g_build_filename(out, name, NULL);
    GByteArray *buf = g_byte_array_new();
    const void *m[3] = { a, b, c };
    size_t l[3] = { la, lb, lc };

    for (int i = 0; i < 3; i++) {
        uint8_t n[2] = { l[i], l[i] >> 8 };

        g_byte_array_append(buf, n, 2);
        g_byte_array_append(buf, m[i], l[i]);
    }
    if (!g_file_set_contents(path, (char *)buf->data, buf->len, NULL)) {
        abort();
    }
    g_byte_array_free(buf, true);
}

static void write_seeds(const char *out)
{
    uint8_t qbuf[sizeof(CrReqMsg) + 2 * sizeof(CrSge)];
    CrReqMsg *m = (CrReqMsg *)qbuf;
    static const struct {
        const char *name;
        uint32_t opcode;
        bool ud;
    } kinds[] = {
        { "send", PVRDMA_WR_SEND, false },
        { "send-imm", PVRDMA_WR_SEND_WITH_IMM, false },
        { "write", PVRDMA_WR_RDMA_WRITE, false },
        { "write-imm", PVRDMA_WR_RDMA_WRITE_WITH_IMM, false },
        { "read", PVRDMA_WR_RDMA_READ, false },
        { "cmp-swap", PVRDMA_WR_ATOMIC_CMP_AND_SWP, false },
        { "fetch-add", PVRDMA_WR_ATOMIC_FETCH_AND_ADD, false },
        { "ud-send", PVRDMA_WR_SEND, true },
    };
    CrRespMsg resp = { .h = { CR_RESP, sizeof(resp) }, .cookie = 1 };
    CrCancelMsg cancel = { .h = { CR_CANCEL, sizeof(cancel) },
                           .src_qpn = 7 };
    /* the way back from RoCEv2: the device's QP is co-resident already */
    CrOfferMsg offer = { .h = { CR_OFFER, sizeof(offer) }, .src_qpn = 7,
                         .dest_qpn = rc.qpn, .sq_psn = 0x1234,
                         .rq_psn = 0x1234 };
    CrAnswerMsg answer = { .h = { CR_ANSWER, sizeof(answer) },
                           .src_qpn = rc.qpn, .dest_qpn = 7, .ok = 1 };

    for (unsigned i = 0; i < G_N_ELEMENTS(kinds); i++) {
        bool atomic = kinds[i].opcode == PVRDMA_WR_ATOMIC_CMP_AND_SWP ||
                      kinds[i].opcode == PVRDMA_WR_ATOMIC_FETCH_AND_ADD;
        uint64_t len = atomic ? 8 : 3000;

        memset(qbuf, 0, sizeof(qbuf));
        m->h = (CrHdr) { CR_REQ, sizeof(qbuf) };
        m->cookie = 100 + i;
        m->opcode = kinds[i].opcode;
        m->send_flags = PVRDMA_SEND_SIGNALED;
        m->src_qpn = 7;
        m->dest_qpn = kinds[i].ud ? ud.qpn : rc.qpn;
        m->qkey = 0x1234;
        m->rkey = mr.rkey;
        m->imm = 0x55;
        m->qp_type = kinds[i].ud ? PVRDMA_QPT_UD : PVRDMA_QPT_RC;
        m->rnr_retry = 1;
        m->sgid_type = PVRDMA_GID_TYPE_FLAG_ROCE_V2;
        m->remote_addr = IOVA + 64;
        m->compare_add = 1;
        memcpy(m->sgid, peer_gid, 16);
        memcpy(m->dgid, test_gid, 16);
        m->len = len;
        m->nsg_total = m->nsg = atomic ? 1 : 2;
        m->sg[0] = (CrSge) { .region = 0, .off = 4096, .len = atomic ? 8 : 1000 };
        m->sg[1] = (CrSge) { .region = 0, .off = 65536, .len = 2000 };
        if (atomic) {
            m->h.len = sizeof(*m) + sizeof(CrSge);
        }
        seed(out, kinds[i].name, qbuf, m->h.len);
    }
    {
        CrHello h = {
            .h = { CR_HELLO, sizeof(h) },
            .magic = CR_MAGIC, .version = CR_VERSION, .node = 0xf023,
            .nregions = 1, .features = CR_F_ALL,
        };

        seed(out, "hello", &h, sizeof(h));  /* its own handshake */
    }
    {
        /* RING, RING_ON, then a WRITE through the ring: one record */
        CrRingMsg rm = { .h = { CR_RING, sizeof(rm) },
                         .ring_size = CR_RING_MIN };
        CrHdr on = { CR_RING_ON, sizeof(on) };
        uint8_t put[sizeof(CrHdr) + 8 + sizeof(qbuf)];
        CrHdr *ph = (CrHdr *)put;
        uint32_t rec[2];

        memset(qbuf, 0, sizeof(qbuf));
        m->h = (CrHdr) { CR_REQ, sizeof(*m) + sizeof(CrSge) };
        m->cookie = 200;
        m->opcode = PVRDMA_WR_RDMA_WRITE;
        m->src_qpn = 7;
        m->dest_qpn = rc.qpn;
        m->rkey = mr.rkey;
        m->qp_type = PVRDMA_QPT_RC;
        m->remote_addr = IOVA + 64;
        memcpy(m->sgid, peer_gid, 16);
        memcpy(m->dgid, test_gid, 16);
        m->len = 1000;
        m->nsg_total = m->nsg = 1;
        m->sg[0] = (CrSge) { .region = 0, .off = 4096, .len = 1000 };
        rec[0] = m->h.len;
        rec[1] = 0;
        *ph = (CrHdr) { FZ_RING_PUT, sizeof(CrHdr) + 8 + m->h.len };
        memcpy(put + sizeof(CrHdr), rec, 8);
        memcpy(put + sizeof(CrHdr) + 8, qbuf, m->h.len);
        seed3(out, "ring-write", &rm, sizeof(rm), &on, sizeof(on), put,
              ph->len);
    }
    seed(out, "resp", &resp, sizeof(resp));
    seed(out, "cancel", &cancel, sizeof(cancel));
    seed(out, "offer", &offer, sizeof(offer));
    seed(out, "answer", &answer, sizeof(answer));
}

static void peer_send(int fd, const void *buf, size_t len, int pass_fd)
{
    (void)fh_sendmsg(fd, buf, len, pass_fd, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* RING: with ring memory of the size it names (if valid: else the least) */
static void peer_ring(int fd, const uint8_t *buf, size_t len)
{
    uint32_t size = CR_RING_MIN;
    int mfd;

    if (len >= sizeof(CrRingMsg)) {
        CrRingMsg m;

        memcpy(&m, buf, sizeof(m));     /* the input is not aligned */
        if (cr_ring_size_ok(m.ring_size)) {
            size = m.ring_size;
        }
    }
    if (ring) {
        munmap(ring, CR_RING_SHM_SIZE(ring_size));
    }
    mfd = memfd_create("fuzz-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (mfd < 0 || ftruncate(mfd, CR_RING_SHM_SIZE(size)) ||
        fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW)) {
        abort();
    }
    ring = mmap(NULL, CR_RING_SHM_SIZE(size), PROT_READ | PROT_WRITE,
                MAP_SHARED, mfd, 0);
    if (ring == MAP_FAILED) {
        abort();
    }
    ring_size = size;
    ring_prod = 0;
    peer_send(fd, buf, len, mfd);
    close(mfd);
}

/* The harness's ring datagrams (FZ_RING_PUT, FZ_RING_IDX); false: not one */
static bool peer_ring_op(int fd, const uint8_t *buf, size_t len)
{
    CrHdr wake = { CR_WAKE, sizeof(wake) };
    uint32_t type;

    if (len < sizeof(CrHdr)) {
        return false;
    }
    memcpy(&type, buf, sizeof(type));
    if (type != FZ_RING_PUT && type != FZ_RING_IDX) {
        return false;
    }
    if (!ring) {
        return true;
    }
    buf += sizeof(CrHdr);
    len -= sizeof(CrHdr);
    if (type == FZ_RING_IDX) {
        memcpy(ring, buf, MIN(len, sizeof(CrRingShm)));
    } else {
        uint8_t *data = ring + CR_RING_DATA(0, ring_size);

        for (size_t i = 0; i < len; i++) {
            data[(ring_prod + i) & (ring_size - 1)] = buf[i];
        }
        ring_prod += ROUND_UP(len, 8);
        __atomic_store_n(&((CrRingShm *)ring)->idx[0].prod, ring_prod,
                         __ATOMIC_SEQ_CST);
    }
    peer_send(fd, &wake, sizeof(wake), -1);
    return true;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *out = getenv("PVRDMA_CR_SEEDS");

    fh_process_init(false);
    setup();
    if (out) {
        write_seeds(out);
        exit(0);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    CrHello h = {
        .h = { CR_HELLO, sizeof(h) },
        .magic = CR_MAGIC, .version = CR_VERSION, .node = 0xf022, .nregions = 1,
        /* every feature: the fuzzer's rings and offers reach their code */
        .features = CR_F_ALL,
    };
    CrRegionMsg r = {
        .h = { CR_REGION, sizeof(r) }, .index = 0, .size = PEER_RAM,
    };
    uint8_t gbuf[sizeof(CrGids) + sizeof(CrGid)] = { 0 };
    CrGids *g = (CrGids *)gbuf;
    unsigned watches;
    int fd;

    watches = fh_watch_count(&dev.h);
    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    strcpy(sa.sun_path, sock);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
        abort();
    }
    g->h = (CrHdr) { CR_GIDS, sizeof(gbuf) };
    g->n = 1;
    memcpy(g->g[0].gid, peer_gid, 16);
    g->g[0].type = PVRDMA_GID_TYPE_FLAG_ROCE_V2;
    if (size < 6 || (data[2] | data[3] << 8 | data[4] << 16 |
                     (uint32_t)data[5] << 24) != CR_HELLO) {
        peer_send(fd, &h, sizeof(h), -1);
        peer_send(fd, &r, sizeof(r), peer_memfd);
        peer_send(fd, gbuf, sizeof(gbuf), -1);
    }
    pump();
    while (size >= 2) {
        size_t len = data[0] | data[1] << 8;

        data += 2;
        size -= 2;
        len = MIN(len, size);
        if (len >= 4 && (data[0] | data[1] << 8 | data[2] << 16 |
                         (uint32_t)data[3] << 24) == CR_RING) {
            peer_ring(fd, data, len);
        } else if (!peer_ring_op(fd, data, len)) {
            peer_send(fd, data, len, -1);
        }
        data += len;
        size -= len;
        pump();
    }
    if (getenv("PVRDMA_CR_VERBOSE")) {
        fprintf(stderr, "peers before close: %u\n",
                pvrdma_coresident_peers(tr));
    }
    close(fd);
    pump();
    if (ring) {
        munmap(ring, CR_RING_SHM_SIZE(ring_size));
        ring = NULL;
    }
    /* the peer is gone: its handler too; the device still works */
    if (fh_watch_count(&dev.h) != watches ||
        pvrdma_coresident_peers(tr) != 0) {
        abort();
    }
    {
        struct pvrdma_cqe e;

        while (poll_cq(&dev, &cq, &e)) {
            if (getenv("PVRDMA_CR_VERBOSE")) {
                fprintf(stderr, "cqe wr_id 0x%" PRIx64 " opcode %u status %u "
                        "len %u\n", e.wr_id, e.opcode, e.status, e.byte_len);
            }
        }
    }
    if (query_qp_state(&dev, &rc) != PVRDMA_QPS_RTS) {
        /* a peer moved our QP to error: start again from RESET */
        struct pvrdma_qp_attr a = { .qp_state = PVRDMA_QPS_RESET };

        modify_qp(&dev, &rc, PVRDMA_QP_STATE, &a);
        rc.sq_prod = rc.rq_prod = 0;
        qp_rings(&dev, &rc)[0] = (struct pvrdma_ring) { 0 };
        qp_rings(&dev, &rc)[1] = (struct pvrdma_ring) { 0 };
        rc_to_rts_gid(&dev, &rc, 7, peer_gid, 1);
    }
    post_receives();
    return 0;
}
