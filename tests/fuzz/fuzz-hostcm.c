/*
 * libFuzzer target: the rdma_cm translator of host HCA mode
 * (backend/hostcm.c).  Each input gets a fresh device (QEMU-free core,
 * fake host, fake host HCA) with the hostcm transport on a fake librdmacm
 * (fake-rdmacm.c), two GIDs bound (listeners on ports 7174 and 18515), a
 * GSI QP with receives posted and two RC QPs with host twins.  The input
 * is a list of operations: CM MADs the guest sends on its GSI QP (through
 * the send ring and the software requester, as the device does), events
 * of the host's rdma_cm (connection requests from remote peers with their
 * private data, responses, rejections, disconnects...), GID changes, RTR
 * transitions (the receive PSN hook), failing rdma_cm calls, the clock, a
 * flood of requests over the connection budget, a broken event channel and
 * device resets.  MADs the translator sends the guest are received on the
 * GSI QP; the fuzzer can answer the last one (its comm ID patched in).
 *
 * Besides ASan/UBSan/LSan: librdmacm's rules (fake-rdmacm.h), and at the
 * end of each input no rdma_cm id, event channel, fd handler, guest
 * mapping or host twin may be left.
 *
 * Input: [u8 op][arguments], see the OP_* list (little endian; missing
 * bytes read as 0).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include <arpa/inet.h>
#include "qapi/error.h"
#include "fake-driver.h"
#include "fake-hca.h"
#include "fake-rdmacm.h"
#include "fuzz-input.h"
#include "hw/rdma/pvrdma_hostcm.h"
#include "hw/rdma/pvrdma_loopback.h"

#define RAM_SIZE    (1ull << 20)
#define BUF_IOVA    0x7f0000000000ull
#define BUF_PAGES   4
#define RECV_SLOTS  8               /* receives kept posted on the GSI QP */
#define SLOT        512             /* GRH (40) + MAD (256) */
#define SEND_OFF    (RECV_SLOTS * SLOT)
#define SEND_MAX    (BUF_PAGES * FH_PAGE - SEND_OFF)
#define MAX_OPS     256
#define MAD_LEN     256
#define MAD_HDR     24
#define GRH_LEN     40

enum {
    OP_MAD,         /* u8 flags, u8 dst, u16 len, bytes: a guest MAD */
    /*
     * A host rdma_cm event: u8 id, u8 type, i8 status, u32 qpn,
     * u32 qkey/psn, u8 misc, u8 priv_len, bytes
     */
    OP_EVENT,
    /*
     * A remote peer's connection request: u8 listener, u8 family,
     * u32 addr, u16 port, u32 qpn, u32 psn, u8 misc, u8 priv_len, bytes
     */
    OP_CONNREQ,
    OP_GID,         /* u8 index, u8 what: unbind, or bind one of gids[] */
    OP_RTR,         /* u8 qp, u32 dest_qpn, u8 dgid: RESET, INIT, RTR */
    OP_KNOB,        /* u16: FCM_* calls that fail from now on */
    OP_CLOCK,       /* u8: advance the clock by n seconds */
    OP_FLOOD,       /* u8 n: the last MAD n % 64 + 1 times, new comm IDs */
    OP_BREAK,       /* the event channel fails */
    OP_RESET,       /* device reset, then the driver's probe again */
    OP_COUNT
};

/* OP_MAD flags */
#define MAD_FIX_HDR     1   /* base version 1, CM class 7 v2, method SEND */
#define MAD_ANSWER      2   /* remote comm ID: the last MAD the guest heard */
#define MAD_OWN_QPN     4   /* REQ, REP, SIDR_REP: QPN of RC QP flags >> 7 */


typedef struct Cm {
    Dev d;
    FakeHca hca;
    uint32_t pd;
    TCq cq;
    TQp gsi, rc[2];
    TMr mr;
    uint8_t last[SEND_MAX];     /* the guest's last MAD (OP_FLOOD) */
    uint32_t last_len;
    uint8_t last_dst;
    uint8_t heard[MAD_LEN];     /* the last MAD the guest received */
    unsigned nheard;
    unsigned flooded;           /* MADs sent by OP_FLOOD */
} Cm;

static bool verbose;

/* The guest's GIDs (OP_GID) and the remote peers (a MAD's dst) */
static const uint8_t gids[4][16] = {
    { [10] = 0xff, [11] = 0xff, 10, 0, 0, 1 },
    { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 },
    { [10] = 0xff, [11] = 0xff, 10, 0, 0, 2 },
    { 0xfe, 0x80, [15] = 1 },           /* link-local: no listener */
};
static const uint8_t peers[4][16] = {
    { [10] = 0xff, [11] = 0xff, 10, 0, 0, 99 },
    { 0x20, 0x01, 0x0d, 0xb8, [15] = 0x99 },
    { 0 },
    { [10] = 0xff, [11] = 0xff, 10, 0, 0, 1 },  /* the guest: loopback */
};
static const uint16_t ports[] = { 7174, 18515 };

/* Up to len input bytes into buf (the rest zero); returns len. */
static uint32_t get_bytes(Input *in, uint8_t *buf, uint32_t len)
{
    uint32_t n = MIN(len, in->n);

    memcpy(buf, in->p, n);
    memset(buf + n, 0, len - n);
    in->p += n;
    in->n -= n;
    return len;
}

/* A CM field: byte after the MAD header, first bit from the MSB. */
static void fset(uint8_t *m, unsigned byte, unsigned bit, unsigned width,
                 uint32_t v)
{
    unsigned pos = (MAD_HDR + byte) * 8 + bit + width;

    for (unsigned i = 0; i < width; i++, v >>= 1) {
        uint8_t b;

        pos--;
        b = 1u << (7 - (pos & 7));
        m[pos >> 3] = (v & 1) ? (m[pos >> 3] | b) : (m[pos >> 3] & ~b);
    }
}

/* ------------------------------------------------------------------ */
/* The guest                                                           */

/* Serve queued work until the device is idle, as the bottom half would. */
static void run(Cm *m)
{
    for (unsigned i = 0; i < 64; i++) {
        uint64_t kicks = m->d.h.kicks;

        pvrdma_core_run(&m->d.c);
        if (m->d.h.kicks == kicks) {
            break;
        }
    }
}

/* Keep RECV_SLOTS receives posted on the GSI QP; WQE i uses slot i % 8. */
static void top_up(Cm *m)
{
    uint32_t cons = qp_rings(&m->d, &m->gsi)[1].cons_head;

    while (pvrdma_idx_used(m->gsi.rq_prod, cons, m->gsi.recv_wr) <
           RECV_SLOTS) {
        uint32_t slot = m->gsi.rq_prod % RECV_SLOTS;
        struct pvrdma_sge s = { BUF_IOVA + slot * SLOT, SLOT, m->mr.lkey };

        post_recv(&m->d, &m->gsi, slot, &s, 1);
    }
}

/* Take the guest's completions; remember the last MAD it received. */
static void service(Cm *m)
{
    struct pvrdma_cqe e;

    run(m);
    while (poll_cq(&m->d, &m->cq, &e)) {
        if (verbose) {
            fprintf(stderr, "CQE QP %u wr_id 0x%" PRIx64 " opcode %u status "
                    "%u len %u\n", (unsigned)e.qp, (uint64_t)e.wr_id, e.opcode,
                    e.status, e.byte_len);
        }
        if (e.qp == m->gsi.handle && e.opcode == PVRDMA_WC_RECV &&
            e.status == PVRDMA_WC_SUCCESS && e.wr_id < RECV_SLOTS) {
            mr_read(&m->d, &m->mr, BUF_IOVA + e.wr_id * SLOT + GRH_LEN,
                    m->heard, MAD_LEN);
            m->nheard++;
            if (verbose) {
                fprintf(stderr, "guest hears CM attribute 0x%x, comm ID "
                        "0x%02x%02x%02x%02x\n",
                        m->heard[16] << 8 | m->heard[17], m->heard[24],
                        m->heard[25], m->heard[26], m->heard[27]);
            }
        }
    }
    top_up(m);
}

/* A UD send on the GSI QP to QP1 of peers[dst & 3], source GID dst >> 2. */
static void guest_send(Cm *m, const uint8_t *mad, uint32_t len, uint8_t dst)
{
    struct pvrdma_sq_wqe_hdr w = { 0 };
    struct pvrdma_sge s = { BUF_IOVA + SEND_OFF, len, m->mr.lkey };

    mr_write(&m->d, &m->mr, BUF_IOVA + SEND_OFF, mad, len);
    w.wr_id = 0x5e4d;
    w.opcode = PVRDMA_WR_SEND;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    w.wr.ud.remote_qpn = PVRDMA_GSI_QPN;
    w.wr.ud.remote_qkey = PVRDMA_GSI_QKEY;
    w.wr.ud.av.port_pd = 1 << 24;
    w.wr.ud.av.gid_index = (dst >> 2) & 3;
    w.wr.ud.av.hop_limit = 64;
    memcpy(w.wr.ud.av.dgid, peers[dst & 3], 16);
    post_send(&m->d, &m->gsi, &w, &s, 1);
    service(m);
}

static void gsi_to_rts(Cm *m)
{
    struct pvrdma_qp_attr a = { 0 };

    a.qp_state = PVRDMA_QPS_INIT;
    a.port_num = 1;
    a.qkey = PVRDMA_GSI_QKEY;
    modify_qp(&m->d, &m->gsi, PVRDMA_QP_STATE | PVRDMA_QP_PKEY_INDEX |
              PVRDMA_QP_PORT | PVRDMA_QP_QKEY, &a);
    a.qp_state = PVRDMA_QPS_RTR;
    modify_qp(&m->d, &m->gsi, PVRDMA_QP_STATE, &a);
    a.qp_state = PVRDMA_QPS_RTS;
    modify_qp(&m->d, &m->gsi, PVRDMA_QP_STATE | PVRDMA_QP_SQ_PSN, &a);
}

/* What the driver does at probe: DSR, GIDs, the GSI QP, two RC QPs. */
static void probe(Cm *m)
{
    dev_write_dsr(&m->d);
    pvrdma_core_reg_write(&m->d.c, PVRDMA_REG_CTL,
                          PVRDMA_DEVICE_CTL_ACTIVATE);
    pvrdma_core_reg_write(&m->d.c, PVRDMA_REG_IMR, 0);
    bind_gid(&m->d, 0, gids[0]);
    bind_gid(&m->d, 1, gids[1]);
    m->pd = create_pd(&m->d, 0);
    create_cq(&m->d, &m->cq, 256);
    create_qp(&m->d, &m->gsi, m->pd, m->cq.handle, m->cq.handle,
              PVRDMA_QPT_GSI);
    gsi_to_rts(m);
    create_qp(&m->d, &m->rc[0], m->pd, m->cq.handle, m->cq.handle,
              PVRDMA_QPT_RC);
    create_qp(&m->d, &m->rc[1], m->pd, m->cq.handle, m->cq.handle,
              PVRDMA_QPT_RC);
    create_mr(&m->d, &m->mr, m->pd, BUF_IOVA, BUF_PAGES * FH_PAGE,
              PVRDMA_ACCESS_LOCAL_WRITE);
    service(m);
}

static void cm_init(Cm *m)
{
    PvrdmaTransport *t;
    PvrdmaLimits l;
    Error *err = NULL;

    memset(m, 0, sizeof(*m));
    fake_cm_init();
    pvrdma_limits_default(&l);
    l.max_qp = 16;
    l.max_cq = 8;
    l.max_mr = 8;
    l.max_pd = 4;
    l.max_srq = 2;
    l.gid_tbl_len = 4;
    fh_init_size(&m->d.h, RAM_SIZE);
    pvrdma_core_init(&m->d.c, &fh_ops, &m->d.h, &l);
    pvrdma_core_add_transport(&m->d.c, pvrdma_loopback_new(&m->d.c));
    fake_hca_init(&m->hca, &m->d.c);
    /* hostcm.c draws its first comm ID and transaction ID at random */
    g_random_set_seed(1);
    t = pvrdma_hostcm_new(&m->d.c, ports, G_N_ELEMENTS(ports), &err);
    if (!t) {
        fprintf(stderr, "fuzz-hostcm: %s\n", error_get_pretty(err));
        abort();
    }
    pvrdma_core_add_transport(&m->d.c, t);
    probe(m);
}

static void check_reset(Cm *m)
{
    if (fh_outstanding(&m->d.h) || m->d.h.bad_unmaps || m->hca.twins) {
        fprintf(stderr, "fuzz-hostcm: after reset %u mappings, %" PRIu64
                " bad unmaps, %d host twins\n", fh_outstanding(&m->d.h),
                m->d.h.bad_unmaps, m->hca.twins);
        abort();
    }
}

static void cm_fini(Cm *m)
{
    pvrdma_core_reg_write(&m->d.c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_RESET);
    check_reset(m);
    pvrdma_core_fini(&m->d.c);      /* destroys the transport */
    fake_hca_fini(&m->hca);
    fake_cm_fini();                 /* no id, no channel left */
    fh_fini(&m->d.h);               /* no fd handler left */
}

/* ------------------------------------------------------------------ */
/* The host's rdma_cm                                                  */

/* Call the event channel's fd handler, as the main loop would. */
static void deliver(Cm *m)
{
    for (guint i = 0; fake_cm.ch && i < m->d.h.watches->len; i++) {
        FhWatch *w = &g_array_index(m->d.h.watches, FhWatch, i);

        if (w->fd == fake_cm.ch->fd && w->read) {
            w->read(w->arg);
            break;
        }
    }
    service(m);
}

/* What the kernel's rdma_cm has from the peer, for rdma_init_qp_attr. */
static void id_attrs(FakeCmId *f, uint32_t psn, uint8_t misc)
{
    f->rq_psn = psn & 0xffffff;
    f->sq_psn = (psn >> 8) ^ (psn << 16);
    f->sq_psn &= 0xffffff;
    f->path_mtu = misc % 6;         /* 0: not set */
    f->timeout = misc >> 3;
    f->hop_limit = misc & 3;
    f->sl = misc >> 4;
    f->tclass = misc;
    f->flow_label = psn >> 12;
}

static void conn_param(struct rdma_conn_param *p, uint32_t qpn, uint8_t misc)
{
    memset(p, 0, sizeof(*p));
    p->qp_num = qpn & 0xffffff;
    p->responder_resources = misc & 15;
    p->initiator_depth = misc >> 4;
    p->flow_control = misc & 1;
    p->retry_count = (misc >> 1) & 7;
    p->rnr_retry_count = misc >> 5;
    p->srq = misc >> 7;
}

static void op_event(Cm *m, Input *in)
{
    uint8_t which = get(in, 1), type = get(in, 1);
    int8_t status = get(in, 1);
    uint32_t qpn = get(in, 4), qkey = get(in, 4);
    uint8_t misc = get(in, 1), len = get(in, 1);
    uint8_t priv[256];
    struct rdma_conn_param p;
    FakeCmId *f;

    get_bytes(in, priv, len);
    /* connection requests come on listeners only: OP_CONNREQ */
    type %= RDMA_CM_EVENT_TIMEWAIT_EXIT + 1;
    if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
        type = RDMA_CM_EVENT_TIMEWAIT_EXIT;
    }
    f = fake_cm_pick(which & 0x7f, which & 0x80);
    if (!f) {
        return;
    }
    id_attrs(f, qkey, misc);
    conn_param(&p, qpn, misc);
    fake_cm_event(f, type, status, &p, qkey, priv, len);
    deliver(m);
}

static void op_connreq(Cm *m, Input *in)
{
    uint8_t which = get(in, 1), family = get(in, 1);
    uint32_t addr = get(in, 4);
    uint16_t port = get(in, 2);
    uint32_t qpn = get(in, 4), psn = get(in, 4);
    uint8_t misc = get(in, 1), len = get(in, 1);
    uint8_t priv[256];
    struct sockaddr_storage ss = { 0 };
    struct rdma_conn_param p;
    FakeCmId *l, *f;

    get_bytes(in, priv, len);
    l = fake_cm_pick(which, true);
    if (!l) {
        return;
    }
    if (family & 1) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(port);
        memcpy(&s6->sin6_addr, peers[1], 16);
        memcpy(&s6->sin6_addr.s6_addr[12], &addr, 4);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

        s4->sin_family = AF_INET;
        s4->sin_port = htons(port);
        s4->sin_addr.s_addr = htonl(0x0a000000 | (addr & 0xffffff));
    }
    conn_param(&p, qpn, misc);
    f = fake_cm_connect_request(l, (struct sockaddr *)&ss, &p, priv, len);
    id_attrs(f, psn, misc);
    deliver(m);
}

/* ------------------------------------------------------------------ */
/* Operations                                                          */

static void op_mad(Cm *m, Input *in)
{
    uint8_t flags = get(in, 1), dst = get(in, 1);
    uint32_t len = get(in, 2);
    uint8_t *mad = m->last;

    len = MIN(len, SEND_MAX);
    get_bytes(in, mad, len);
    if ((flags & MAD_FIX_HDR) && len >= 4) {
        mad[0] = 1;
        mad[1] = 7;
        mad[2] = 2;
        mad[3] = 3;
    }
    if ((flags & MAD_ANSWER) && len >= MAD_HDR + 8 && m->nheard) {
        bool sidr_rep = len >= 18 && (mad[16] << 8 | mad[17]) == 0x18;

        /* the remote comm ID is the heard one's local comm ID */
        memcpy(mad + MAD_HDR + (sidr_rep ? 0 : 4), m->heard + MAD_HDR, 4);
    }
    if ((flags & MAD_OWN_QPN) && len >= MAD_HDR + 36) {
        uint16_t attr = mad[16] << 8 | mad[17];
        unsigned at = attr == 0x10 ? 32 : attr == 0x13 ? 12 : 8;

        fset(mad, at, 0, 24, m->rc[flags >> 7].qpn);
    }
    m->last_len = len;
    m->last_dst = dst;
    guest_send(m, mad, len, dst);
}

/*
 * The last MAD again with new local comm IDs: over the connection budget
 * (HC_MAX_CONNS, 32 in this build; see the Makefile).  At most FLOOD_MAX
 * per input, which keeps every input fast.
 */
#define FLOOD_MAX   160

static void op_flood(Cm *m, Input *in)
{
    unsigned n = get(in, 1) % 64 + 1;

    if (m->last_len < MAD_HDR + 4) {
        return;
    }
    n = MIN(n, FLOOD_MAX - m->flooded);
    m->flooded += n;
    for (unsigned i = 0; i < n; i++) {
        uint8_t *id = m->last + MAD_HDR;
        uint32_t v = ((uint32_t)id[0] << 24 | id[1] << 16 | id[2] << 8 |
                      id[3]) + 1;

        id[0] = v >> 24;
        id[1] = v >> 16;
        id[2] = v >> 8;
        id[3] = v;
        guest_send(m, m->last, m->last_len, m->last_dst);
    }
}

static void op_gid(Cm *m, Input *in)
{
    uint8_t index = get(in, 1) % 4, what = get(in, 1) % 5;
    union pvrdma_cmd_req req = { 0 };

    if (!what) {
        req.destroy_bind.index = index;
        memcpy(req.destroy_bind.dest_gid, m->d.c.gid[index].gid.raw, 16);
        dev_cmd(&m->d, &req, PVRDMA_CMD_DESTROY_BIND, NULL);
    } else {
        req.create_bind.index = index;
        req.create_bind.mtu = 1500;
        memcpy(req.create_bind.new_gid, gids[what - 1], 16);
        req.create_bind.gid_type = PVRDMA_GID_TYPE_FLAG_ROCE_V2;
        dev_cmd(&m->d, &req, PVRDMA_CMD_CREATE_BIND, NULL);
    }
    service(m);
}

/* An RC QP to RTR towards dest_qpn at a peer (the receive PSN hook). */
static void op_rtr(Cm *m, Input *in)
{
    TQp *qp = &m->rc[get(in, 1) & 1];
    uint32_t dest = get(in, 4) & 0xffffff;
    uint8_t dgid = get(in, 1);
    struct pvrdma_qp_attr a = { 0 };

    a.qp_state = PVRDMA_QPS_RESET;
    modify_qp(&m->d, qp, PVRDMA_QP_STATE, &a);
    a.qp_state = PVRDMA_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = RC_ACCESS | PVRDMA_ACCESS_LOCAL_WRITE;
    modify_qp(&m->d, qp, PVRDMA_QP_STATE | PVRDMA_QP_PKEY_INDEX |
              PVRDMA_QP_PORT | PVRDMA_QP_ACCESS_FLAGS, &a);
    rc_rtr_attrs_gid(&a, dest, peers[dgid & 3]);
    a.ah_attr.grh.sgid_index = (dgid >> 2) & 3;
    modify_qp(&m->d, qp, RTR_MASK, &a);
    service(m);
}

static void op_reset(Cm *m)
{
    pvrdma_core_reg_write(&m->d.c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_RESET);
    check_reset(m);
    m->d.h.next_free = m->d.h.base;     /* the driver starts over */
    probe(m);
}

static void step(Cm *m, Input *in)
{
    switch (get(in, 1) % OP_COUNT) {
    case OP_MAD:
        op_mad(m, in);
        break;
    case OP_EVENT:
        op_event(m, in);
        break;
    case OP_CONNREQ:
        op_connreq(m, in);
        break;
    case OP_GID:
        op_gid(m, in);
        break;
    case OP_RTR:
        op_rtr(m, in);
        break;
    case OP_KNOB:
        fake_cm.fail = get(in, 2) & ~FCM_CHANNEL;
        break;
    case OP_CLOCK:
        m->d.h.now += 1000 * get(in, 1);
        break;
    case OP_FLOOD:
        op_flood(m, in);
        break;
    case OP_BREAK:
        fake_cm.broken = true;
        deliver(m);
        break;
    case OP_RESET:
        op_reset(m);
        break;
    }
}

/* ------------------------------------------------------------------ */
/* Seeds (make -C tests/fuzz cm-corpus)                                */

typedef struct Seed {
    GByteArray *b;
} Seed;

static void u8(Seed *s, uint8_t v)
{
    seed_u8(s->b, v);
}

static void le(Seed *s, uint64_t v, unsigned n)
{
    seed_le(s->b, v, n);
}

static void mad_init(uint8_t *m, uint16_t attr, uint32_t local_id)
{
    memset(m, 0, MAD_LEN);
    m[0] = 1;
    m[1] = 7;
    m[2] = 2;
    m[3] = 3;
    m[15] = 0x42;           /* transaction ID */
    m[16] = attr >> 8;
    m[17] = attr;
    fset(m, 0, 0, 32, local_id);
}

/* rdma_cm's header (IPv4) at the start of private data */
static void cma_hdr(uint8_t *p, const uint8_t src[16], const uint8_t dst[16],
                    uint16_t port)
{
    p[1] = 4 << 4;
    p[2] = port >> 8;
    p[3] = port;
    memcpy(p + 16, src + 12, 4);
    memcpy(p + 32, dst + 12, 4);
}

static void s_mad(Seed *s, uint8_t flags, uint8_t dst, const uint8_t *mad)
{
    u8(s, OP_MAD);
    u8(s, flags);
    u8(s, dst);
    le(s, MAD_LEN, 2);
    g_byte_array_append(s->b, mad, MAD_LEN);
}

/* A guest REQ for RC QP qpn to peers[0], port 7174 */
static void s_req(Seed *s, uint32_t local_id, uint32_t qpn)
{
    uint8_t m[MAD_LEN];

    mad_init(m, 0x10, local_id);
    fset(m, 8, 0, 32, 0);
    fset(m, 12, 0, 32, 0x0106u << 16 | 7174);  /* RDMA_PS_TCP, port */
    fset(m, 32, 0, 24, qpn);
    fset(m, 35, 0, 8, 1);
    fset(m, 39, 0, 8, 1);
    fset(m, 44, 0, 24, 0x1234);
    fset(m, 47, 5, 3, 7);
    fset(m, 50, 0, 4, 3);
    fset(m, 50, 5, 3, 7);
    memcpy(m + MAD_HDR + 56, gids[0], 16);
    memcpy(m + MAD_HDR + 72, peers[0], 16);
    cma_hdr(m + MAD_HDR + 140, gids[0], peers[0], 40000);
    memcpy(m + MAD_HDR + 140 + 36, "guest private data", 18);
    s_mad(s, 0, 0, m);
}

/* REP, RTU, REJ, DREQ, DREP answering the last heard MAD */
static void s_answer(Seed *s, uint16_t attr, uint32_t local_id, uint32_t qpn)
{
    uint8_t m[MAD_LEN];

    mad_init(m, attr, local_id);
    if (attr == 0x13) {                         /* REP */
        fset(m, 12, 0, 24, qpn);
        fset(m, 20, 0, 24, 0x777);
        fset(m, 24, 0, 8, 1);
        fset(m, 25, 0, 8, 1);
        fset(m, 27, 0, 3, 7);
    } else if (attr == 0x12) {                  /* REJ */
        fset(m, 8, 0, 2, 0);
        fset(m, 10, 0, 16, 28);                 /* consumer defined */
    } else if (attr == 0x15) {                  /* DREQ */
        fset(m, 8, 0, 24, qpn);
    }
    s_mad(s, MAD_ANSWER, 0, m);
}

static void s_sidr_req(Seed *s, uint32_t id)
{
    uint8_t m[MAD_LEN];

    mad_init(m, 0x17, id);
    fset(m, 4, 0, 16, 0xffff);
    fset(m, 12, 0, 32, 0x0111u << 16 | 7174);  /* RDMA_PS_UDP, port */
    cma_hdr(m + MAD_HDR + 16, gids[0], peers[0], 40001);
    s_mad(s, 0, 0, m);
}

static void s_sidr_rep(Seed *s, uint32_t status, uint32_t qpn)
{
    uint8_t m[MAD_LEN];

    mad_init(m, 0x18, 0);
    fset(m, 4, 0, 8, status);
    fset(m, 8, 0, 24, qpn);
    fset(m, 20, 0, 32, 0x01234567);
    s_mad(s, MAD_ANSWER, 0, m);
}

static void s_event(Seed *s, uint8_t which, uint8_t type, int8_t status,
                    uint32_t qpn, uint32_t qkey, const char *priv)
{
    uint8_t len = priv ? strlen(priv) : 0;

    u8(s, OP_EVENT);
    u8(s, which);
    u8(s, type);
    u8(s, status);
    le(s, qpn, 4);
    le(s, qkey, 4);
    u8(s, 0x53);
    u8(s, len);
    g_byte_array_append(s->b, (const uint8_t *)priv, len);
}

static void s_connreq(Seed *s, uint8_t listener, uint8_t family,
                      const char *priv)
{
    uint8_t len = strlen(priv);

    u8(s, OP_CONNREQ);
    u8(s, listener);
    u8(s, family);
    le(s, 0x000063, 4);                         /* 10.0.0.99 */
    le(s, 45000, 2);
    le(s, 0x4321, 4);                           /* the peer's QPN */
    le(s, 0xabcdef, 4);                         /* PSNs */
    u8(s, 0x53);
    u8(s, len);
    g_byte_array_append(s->b, (const uint8_t *)priv, len);
}

static void s_rtr(Seed *s, uint8_t qp, uint32_t dest, uint8_t dgid)
{
    u8(s, OP_RTR);
    u8(s, qp);
    le(s, dest, 4);
    u8(s, dgid);
}

static void s_write(Seed *s, const char *dir, const char *name)
{
    g_autofree char *path = g_build_filename(dir, name, NULL);

    if (!g_file_set_contents(path, (const char *)s->b->data, s->b->len,
                             NULL)) {
        abort();
    }
    g_byte_array_free(s->b, true);
    s->b = g_byte_array_new();
}

/*
 * Listeners are created per GID (index 0, then 1), per port, TCP then UDP:
 * listener 0 is TCP on gids[0] port 7174, listener 1 UDP on it.  The
 * guest's RC QPs are host QPs 0x302 and 0x303.
 */
static void write_seeds(const char *dir)
{
    Seed s = { g_byte_array_new() };

    /* the guest connects: REQ, the host's REP, RTU, RTR, DREQ, DREP */
    s_req(&s, 0x1001, 0x302);
    s_event(&s, 0, RDMA_CM_EVENT_ADDR_RESOLVED, 0, 0, 0, NULL);
    s_event(&s, 0, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, 0, 0, NULL);
    s_req(&s, 0x1001, 0x302);                   /* a repeat */
    s_event(&s, 0, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, 0x4321, 0x1234,
            "remote private data");
    s_req(&s, 0x1001, 0x302);                   /* REP again */
    s_rtr(&s, 0, 0x4321, 0);
    s_answer(&s, 0x14, 0x1001, 0);              /* RTU */
    s_answer(&s, 0x15, 0x1001, 0x4321);         /* DREQ */
    s_event(&s, 0, RDMA_CM_EVENT_DISCONNECTED, 0, 0, 0, NULL);
    s_write(&s, dir, "active-rc");

    /* a remote connects: REQ to the guest, its REP, ESTABLISHED, RTU */
    s_connreq(&s, 0, 0, "remote private data");
    s_rtr(&s, 1, 0x4321, 0);
    s_answer(&s, 0x13, 0x2002, 0x303);          /* REP */
    s_answer(&s, 0x13, 0x2002, 0x303);          /* repeated */
    s_event(&s, 0, RDMA_CM_EVENT_ESTABLISHED, 0, 0, 0, NULL);
    s_answer(&s, 0x13, 0x2002, 0x303);          /* RTU lost: again */
    s_event(&s, 0, RDMA_CM_EVENT_DISCONNECTED, 0, 0, 0, NULL);
    s_answer(&s, 0x16, 0x2002, 0);              /* DREP */
    s_connreq(&s, 2, 1, "v6");                  /* TCP 18515 */
    s_answer(&s, 0x12, 0x2003, 0);              /* REJ */
    s_write(&s, dir, "passive-rc");

    /* SIDR: the guest resolves a remote UD service, and answers one */
    s_sidr_req(&s, 0x3003);
    s_event(&s, 0, RDMA_CM_EVENT_ADDR_RESOLVED, 0, 0, 0, NULL);
    s_event(&s, 0, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, 0, 0, NULL);
    s_event(&s, 0, RDMA_CM_EVENT_ESTABLISHED, 0, 0x5555, 0x01234567,
            "sidr reply data");
    s_sidr_req(&s, 0x3004);
    s_event(&s, 0, RDMA_CM_EVENT_ADDR_RESOLVED, 0, 0, 0, NULL);
    s_event(&s, 0, RDMA_CM_EVENT_UNREACHABLE, 2, 0, 0, NULL);
    s_connreq(&s, 1, 0, "sidr request data");
    s_sidr_rep(&s, 0, 0x303);
    s_connreq(&s, 1, 0, "sidr request data");
    s_sidr_rep(&s, 1, 0);
    s_write(&s, dir, "sidr");

    /* failures: rejections, unreachable, refused calls, a bad REQ */
    s_req(&s, 0x4001, 0x302);
    s_event(&s, 0, RDMA_CM_EVENT_ADDR_RESOLVED, 0, 0, 0, NULL);
    s_event(&s, 0, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, 0, 0, NULL);
    s_event(&s, 0, RDMA_CM_EVENT_REJECTED, 28, 0, 0, "go away");
    s_req(&s, 0x4002, 0x399);                   /* not the guest's QP */
    s_req(&s, 0x4003, 0x302);
    s_event(&s, 0, RDMA_CM_EVENT_ADDR_ERROR, -110, 0, 0, NULL);
    u8(&s, OP_KNOB);
    le(&s, FCM_RESOLVE_ADDR | FCM_ACCEPT, 2);
    s_req(&s, 0x4004, 0x302);
    s_connreq(&s, 0, 0, "x");
    s_answer(&s, 0x13, 0x2005, 0x302);
    u8(&s, OP_KNOB);
    le(&s, FCM_INIT_QP_ATTR | FCM_LISTEN | FCM_BIND, 2);
    s_connreq(&s, 0, 0, "y");
    u8(&s, OP_GID);
    u8(&s, 2);
    u8(&s, 3);                                  /* bind 10.0.0.2 */
    u8(&s, OP_GID);
    u8(&s, 0);
    u8(&s, 0);                                  /* unbind 10.0.0.1 */
    s_write(&s, dir, "errors");

    /* more connection requests than the budget, then the stale ones go */
    s_req(&s, 0x5000, 0x302);
    u8(&s, OP_FLOOD);
    u8(&s, 40);
    u8(&s, OP_CLOCK);
    u8(&s, 61);
    u8(&s, OP_FLOOD);
    u8(&s, 0);
    s_connreq(&s, 0, 0, "z");
    s_write(&s, dir, "flood");

    /* the host's rdma_cm fails; the device resets with connections */
    s_req(&s, 0x6001, 0x302);
    s_connreq(&s, 0, 0, "a");
    u8(&s, OP_RESET);
    s_req(&s, 0x6002, 0x302);                   /* gone: another QPN now */
    s.b->data[s.b->len - MAD_LEN - 4] = MAD_OWN_QPN;
    s_event(&s, 0, RDMA_CM_EVENT_ADDR_RESOLVED, 0, 0, 0, NULL);
    u8(&s, OP_BREAK);
    s_req(&s, 0x6003, 0x302);
    s_write(&s, dir, "break-reset");
    g_byte_array_free(s.b, true);
}

/* ------------------------------------------------------------------ */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *out = getenv("PVRDMA_CM_SEEDS");

    verbose = getenv("PVRDMA_FUZZ_VERBOSE") != NULL;
    fh_process_init(verbose);
    if (out) {
        write_seeds(out);
        exit(0);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static Cm m;
    Input in = { data, size };

    cm_init(&m);
    for (unsigned i = 0; i < MAX_OPS && in.n; i++) {
        step(&m, &in);
    }
    if (verbose) {
        fprintf(stderr, "done: %u MADs heard, %u rdma_cm ids (%u "
                "listeners), %" PRIu64 " rdma_cm calls, %" PRIu64
                " guest errors\n", m.nheard, fake_cm.ids->len,
                fake_cm_count(true), fake_cm.calls, m.d.c.guest_errors);
    }
    cm_fini(&m);
    return 0;
}
