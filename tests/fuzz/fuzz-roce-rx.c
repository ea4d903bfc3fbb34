/*
 * libFuzzer target: the RoCEv2 transport (backend/roce*.c) as a hostile
 * network sees it.  Each input sets up one device (fake host, RoCEv2 GIDs
 * ::ffff:10.0.0.1 and 2001:db8::1, loopback and the RoCEv2 transport) with
 * a PD, a send and a receive CQ, an MR and a fast-registered FRMR with
 * remote read/write/atomic access, and QPs:
 *   RC0  RC to ::ffff:10.0.0.2 (IPv4), path MTU 256: small inputs make
 *        multi-packet messages
 *   RC1  RC to 2001:db8::2 (IPv6), path MTU from the input
 *   RC2  RC to itself through loopback (not a RoCEv2 QP: frames for it
 *        must be dropped)
 *   UD   and the GSI QP (QP1)
 * then reads the rest of the input as operations: frames built from
 * fields with roce_build() (valid ICRC) and given to pvrdma_roce_rx(),
 * whole multi-packet messages, raw frames, answers of a peer that
 * follows what the device sent (ACK, NAK, RNR NAK, READ responses, atomic
 * ACKs), the clock moving (retransmission and RNR timers), the guest
 * posting receives and sends, QPs moved to ERR / RESET / SQD and
 * reconnected, their timers, path MTU and READ/atomic depths changed in
 * RTS, QPs destroyed and created again, the MR deregistered, the FRMR
 * invalidated and registered again.  Frames may come in bursts, before
 * the device's bottom half runs.  After each input everything is torn
 * down (LeakSanitizer finds what is left).
 *
 * Checks (abort() on failure, besides ASan/UBSan):
 *  - every frame the transport transmits passes roce_parse(), comes from
 *    our MAC and a GID of ours, and an RC frame goes to the peer of a
 *    connected RoCEv2 QP (its MAC, GID, QP number) with FIRST/MIDDLE
 *    segments of exactly its path MTU (or one it had: a request keeps the
 *    MTU it was posted with) and none larger, no reserved AETH
 *    type, P_Key 0xffff, and a new request never skips a PSN;
 *  - pvrdma_roce_rx() takes a well-formed frame iff it is for our MAC and
 *    one of our GIDs;
 *  - guest memory outside the MR and FRMR ranges and outside what the
 *    device owns (rings, CQs, page directories) is never written: every
 *    page not handed out is a guard pattern, and so are the bytes of the
 *    MR's and FRMR's first and last pages outside their range; after the
 *    MR is deregistered, its bytes do not change;
 *  - every CQE names a work request that was posted on that QP and that
 *    queue and completes it once, in order; a successful receive (not
 *    RDMA WRITE with immediate) has at most the bytes posted, a
 *    successful send its length and opcode;
 *  - the transport's counters of frames sent and taken are what this
 *    harness saw, and it has per-QP counters exactly for the QPs it
 *    carries;
 *  - the device stays serviceable (a bounded number of core runs settles
 *    it at a given time); a reset releases every guest mapping, and the
 *    reset device takes no frame.
 *
 * Input: 6 bytes of connection parameters (first PSNs, timeout,
 * retry_cnt, rnr_retry, max_rd_atomic / max_dest_rd_atomic, min_rnr_timer,
 * RC1's MTU, receives posted at setup), then operations, each a byte (its
 * low 4 bits: OP_*, OP_BURST: no bottom half after its frames) and its
 * arguments (little endian; a short input reads zeros).  The seeds
 * (roce_rx_write_seeds()) show the format.
 *
 *   PVRDMA_ROCE_RX_SEEDS=DIR fuzz-roce-rx   writes the seeds into DIR
 *                                           (make -C tests/fuzz roce-rx-corpus)
 *   PVRDMA_FUZZ_VERBOSE=1                   logs operations and frames
 *   PVRDMA_ROCE_RX_STRICT=1                 a known problem of the core is
 *                                           not worked around (service())
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "fake-driver.h"
#include "fuzz-input.h"
#include "hw/rdma/pvrdma_loopback.h"
#include "hw/rdma/pvrdma_roce.h"
#include "hw/rdma/pvrdma_info.h"
#include "hw/rdma/roce_wire.h"
#include "fuzz-roce-rx.h"

Fz f;
bool verbose;
static bool strict, burst;
static uint8_t frame[ROCE_MAX_FRAME];
static uint8_t payload[8192];
static uint8_t last_frame[2048];    /* the last frame for us, well-formed */
static size_t last_len;
static const uint8_t guard_page[FH_PAGE] = { [0 ... FH_PAGE - 1] = GUARD };

void G_GNUC_PRINTF(1, 2) fail(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fprintf(stderr, "fuzz-roce-rx: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    abort();
}

static uint32_t psn_add(uint32_t psn, uint32_t n)
{
    return (psn + n) & PSN_MASK;
}

static int32_t psn_cmp(uint32_t a, uint32_t b)
{
    return (int32_t)((a - b) << 8) >> 8;
}

uint32_t cfg_mtu(uint8_t m)
{
    return 128u << m;
}

/* q's path MTU is now m (PVRDMA_MTU_*) */
void set_mtu(Fq *q, uint8_t m, bool new_conn)
{
    q->mtu = cfg_mtu(m);
    q->mtus = (new_conn ? 0 : q->mtus) | 1u << m;
}

/* the smallest and the largest path MTU the connection has had */
static uint32_t mtu_min(const Fq *q)
{
    return cfg_mtu(__builtin_ctz(q->mtus));
}

static uint32_t mtu_max(const Fq *q)
{
    return cfg_mtu(31 - __builtin_clz(q->mtus));
}

/* len is one of the connection's path MTUs */
static bool mtu_was(const Fq *q, size_t len)
{
    for (uint8_t m = PVRDMA_MTU_256; m <= PVRDMA_MTU_4096; m++) {
        if ((q->mtus & (1u << m)) && cfg_mtu(m) == len) {
            return true;
        }
    }
    return false;
}

const uint8_t *our_mac(void)
{
    return f.d.h.mac;
}

/* ------------------------------------------------------------------ */
/* Guest memory guard                                                  */

static void fill_guard(uint64_t gpa, uint64_t len)
{
    memset(fh_ptr(&f.d.h, gpa), GUARD, len);
}

static bool is_guard(const uint8_t *p, uint64_t len)
{
    while (len) {
        uint64_t n = MIN(len, sizeof(guard_page));

        if (memcmp(p, guard_page, n)) {
            return false;
        }
        p += n;
        len -= n;
    }
    return true;
}

/*
 * Pages handed out since the last call are no longer guard; pages before
 * that are guard if they still are entirely (never handed out: the gaps
 * fh_skip leaves).
 */
static void guard_update(void)
{
    FakeHost *h = &f.d.h;

    for (unsigned i = 0; i < RAM_PAGES; i++) {
        uint64_t gpa = h->base + (uint64_t)i * FH_PAGE;

        if (gpa < f.guarded_to) {
            continue;       /* decided before */
        }
        if (gpa < h->next_free) {
            f.guard_bits[i] = is_guard(fh_ptr(h, gpa), FH_PAGE);
        } else {
            f.guard_bits[i] = 1;
        }
    }
    f.guarded_to = h->next_free;
}

/* A page handed out after guard_update: it is not guard any more. */
void guard_release_new(void)
{
    FakeHost *h = &f.d.h;

    for (uint64_t gpa = f.guarded_to; gpa < h->next_free; gpa += FH_PAGE) {
        f.guard_bits[(gpa - h->base) / FH_PAGE] = 0;
    }
    f.guarded_to = h->next_free;
}

/* The bytes of page 'page' of a region outside [lo, hi) of that page */
static void check_slack(uint64_t page, uint64_t lo, uint64_t hi,
                        const char *what)
{
    uint8_t *p = fh_ptr(&f.d.h, page);

    if (!is_guard(p, lo) || !is_guard(p + hi, FH_PAGE - hi)) {
        fail("%s: a byte outside its range was written", what);
    }
}

static void check_guard(bool full)
{
    uint64_t o0 = MR_IOVA & (FH_PAGE - 1);
    uint64_t oe = (MR_IOVA + MR_LEN) & (FH_PAGE - 1);

    check_slack(f.mr.pages[0], o0, FH_PAGE, "MR first page");
    check_slack(f.mr.pages[f.mr.npages - 1], 0, oe ? oe : FH_PAGE,
                "MR last page");
    if (f.fr_key) {
        check_slack(f.fr_pages[0], FR_IOVA & (FH_PAGE - 1), FH_PAGE,
                    "FRMR first page");
        check_slack(f.fr_pages[FR_PAGES - 1], 0,
                    (FR_IOVA + FR_LEN) & (FH_PAGE - 1), "FRMR last page");
    }
    if (!full) {
        return;
    }
    for (unsigned i = 0; i < RAM_PAGES; i++) {
        if (f.guard_bits[i] &&
            !is_guard(f.d.h.ram + (uint64_t)i * FH_PAGE, FH_PAGE)) {
            fail("guest page 0x%" PRIx64 " (never handed out) was written",
                 f.d.h.base + (uint64_t)i * FH_PAGE);
        }
    }
    if (f.mr_snap) {
        for (uint32_t i = 0; i < f.mr.npages; i++) {
            if (memcmp(fh_ptr(&f.d.h, f.mr.pages[i]),
                       f.mr_snap + (uint64_t)i * FH_PAGE, FH_PAGE)) {
                fail("page %u of the deregistered MR was written", i);
            }
        }
    }
}

/* ------------------------------------------------------------------ */
/* Frames the device transmits                                         */

/* The RoCEv2 QP (RC0 / RC1) whose peer is dqpn, or NULL. */
static Fq *conn_of_dqpn(uint32_t dqpn)
{
    for (unsigned i = RC0; i <= RC1; i++) {
        if (f.q[i].exists && f.q[i].conn >= 0 &&
            peer_qpn[f.q[i].conn] == dqpn) {
            return &f.q[i];
        }
    }
    return NULL;
}

/* What the peer learns from a frame of ours. */
static void peer_learn(Fq *q, const RocePkt *p)
{
    if (roce_opcode_is_rc_request(p->opcode)) {
        SentReq *s = &q->sent[q->nsent++ % NSENT];
        uint32_t n = 1;

        if (p->opcode == ROCE_RC_RDMA_READ_REQUEST) {
            /* (at most: it may have been posted with a smaller MTU) */
            n = p->reth.len ? (p->reth.len + mtu_min(q) - 1) / mtu_min(q) :
                1;
        }
        /* a new request takes the next PSN: none is ever skipped */
        if (q->have_sent && psn_cmp(p->psn, q->max_psn) > 0) {
            fail("request %s PSN 0x%06x, the next new one is 0x%06x",
                 roce_opcode_name(p->opcode), p->psn, q->max_psn);
        }
        *s = (SentReq) { .opcode = p->opcode, .psn = p->psn, .npsn = n,
                         .len = p->reth.len };
        if (!q->have_sent || psn_cmp(psn_add(p->psn, n), q->max_psn) > 0) {
            q->max_psn = psn_add(p->psn, n);
        }
        q->have_sent = true;
        return;
    }
    /* our responder's answers tell what it expects */
    if (p->opcode == ROCE_RC_ACKNOWLEDGE) {
        uint8_t t = roce_aeth_type(p->aeth.syndrome);

        if (t == ROCE_AETH_ACK) {
            q->peer_psn = psn_add(p->psn, 1);
        } else if (t == ROCE_AETH_RNR_NAK ||
                   (t == ROCE_AETH_NAK && roce_aeth_value(p->aeth.syndrome) ==
                    ROCE_NAK_PSN_SEQ_ERR)) {
            q->peer_psn = p->psn;
        }
    } else if (p->opcode == ROCE_RC_ATOMIC_ACKNOWLEDGE) {
        q->peer_psn = psn_add(p->psn, 1);
    }
}

static void dev_tx(void *opaque, const uint8_t *fr, size_t len)
{
    RocePkt p;
    const RoceOpInfo *info;
    int r = roce_parse(fr, len, &p);
    Fq *q;

    f.frames_tx++;
    if (r != ROCE_OK) {
        fail("transmitted a frame roce_parse() refuses: %s (%zu bytes)",
             roce_drop_reason_str(r), len);
    }
    info = roce_opcode_info(p.opcode);
    LOG("  tx %-34s dqpn %06x psn %06x len %zu%s\n", info->name, p.dqpn,
        p.psn, p.payload_len, p.ack_req ? " A" : "");
    if (memcmp(p.smac, our_mac(), 6)) {
        fail("transmitted from a MAC that is not ours");
    }
    if (p.pkey != 0xffff) {
        fail("transmitted P_Key 0x%04x", p.pkey);
    }
    if (memcmp(p.sgid, our_gid[0], 16) && memcmp(p.sgid, our_gid[1], 16)) {
        fail("transmitted from an address that is not ours");
    }
    if (roce_opcode_has(p.opcode, ROCE_EH_AETH) &&
        roce_aeth_type(p.aeth.syndrome) == 0x40) {
        fail("transmitted a reserved AETH type (0x%02x)", p.aeth.syndrome);
    }
    if (p.opcode >= ROCE_UD_SEND_ONLY) {
        return;     /* UD: wherever the guest's address vector says */
    }
    q = conn_of_dqpn(p.dqpn);
    if (!q || !q->connected) {
        fail("RC frame %s for QP 0x%06x, which no connected QP has as its "
             "peer", info->name, p.dqpn);
    }
    if (memcmp(p.dmac, peer_mac, 6) ||
        memcmp(p.dgid, peer_gid[q->conn], 16) ||
        memcmp(p.sgid, our_gid[q->conn], 16) ||
        p.ip_ver != (q->conn ? 6 : 4)) {
        fail("RC frame %s not between the connection's addresses",
             info->name);
    }
    if (info->payload &&
        (p.payload_len > mtu_max(q) ||
         ((info->pos == ROCE_POS_FIRST || info->pos == ROCE_POS_MIDDLE) &&
          !mtu_was(q, p.payload_len)))) {
        fail("%s with %zu bytes of payload, path MTU %u (MTUs 0x%x)",
             info->name, p.payload_len, q->mtu, q->mtus);
    }
    peer_learn(q, &p);
}

/* ------------------------------------------------------------------ */
/* Completions                                                         */

static bool qp_handle_known(uint32_t h)
{
    for (unsigned i = 0; i < f.nhandles; i++) {
        if (f.handles[i] == h) {
            return true;
        }
    }
    return false;
}

static void check_cqe(const struct pvrdma_cqe *e, bool recv_cq)
{
    uint64_t n = e->wr_id - WR_BASE;
    Wr *w;
    Fq *q;

    if (e->wr_id < WR_BASE || n >= f.nwr) {
        fail("CQE with wr_id 0x%" PRIx64 " that was never posted", e->wr_id);
    }
    w = &f.wr[n];
    q = &f.q[w->qi];
    if (w->recv != recv_cq) {
        fail("CQE of a %s work request in the %s CQ", w->recv ? "receive" :
             "send", recv_cq ? "receive" : "send");
    }
    if (w->done) {
        fail("work request %" PRIu64 " completed twice", n);
    }
    w->done = true;
    w->status = e->status;
    if (!qp_handle_known(e->qp) || e->qp != w->handle) {
        fail("CQE for QP %" PRIu64 ", the work request was posted on %u",
             e->qp, w->handle);
    }
    if (e->status > PVRDMA_WC_GENERAL_ERR) {
        fail("CQE status %u", e->status);
    }
    if (recv_cq) {
        if (q->last_recv && n <= q->last_recv - 1) {
            fail("receive %" PRIu64 " completed after a later one", n);
        }
        q->last_recv = n + 1;
        /* (RDMA WRITE with immediate: the WRITE's length, not the WQE's) */
        if (e->status == PVRDMA_WC_SUCCESS &&
            ((e->opcode == PVRDMA_WC_RECV && e->byte_len > w->len) ||
             (e->opcode != PVRDMA_WC_RECV &&
              e->opcode != PVRDMA_WC_RECV_RDMA_WITH_IMM))) {
            fail("receive completed with %u bytes (posted %u), opcode 0x%x",
                 e->byte_len, w->len, e->opcode);
        }
    } else {
        if (q->last_send && n <= q->last_send - 1) {
            fail("send %" PRIu64 " completed after a later one", n);
        }
        q->last_send = n + 1;
        if (e->status == PVRDMA_WC_SUCCESS &&
            (e->opcode != pvrdma_wc_opcode(w->opcode) ||
             (e->byte_len != w->len &&
              w->opcode != PVRDMA_WR_LOCAL_INV &&
              w->opcode != PVRDMA_WR_FAST_REG_MR))) {
            fail("send (opcode %u, %u bytes) completed with opcode %u, %u "
                 "bytes", w->opcode, w->len, e->opcode, e->byte_len);
        }
    }
    LOG("  cqe %s wr %" PRIu64 " qp %u status %u opcode 0x%x len %u\n",
        recv_cq ? "recv" : "send", n, (unsigned)e->qp, e->status, e->opcode,
        e->byte_len);
}

void drain_cqs(void)
{
    struct pvrdma_cqe e;

    while (poll_cq(&f.d, &f.scq, &e)) {
        check_cqe(&e, false);
    }
    while (poll_cq(&f.d, &f.rcq, &e)) {
        check_cqe(&e, true);
    }
}

/*
 * The transport counts what it sent and took as this harness saw it, and
 * has per-QP counters exactly for the QPs on it.
 */
static void check_stats(void)
{
    PvrdmaPathStats st, qs;

    pvrdma_roce_stats(f.t, &st);
    if (st.tx_pkts != f.frames_tx || st.rx_pkts != f.taken) {
        fail("transport counted %" PRIu64 " frames sent, %" PRIu64 " taken; "
             "%" PRIu64 " were sent, %" PRIu64 " taken", st.tx_pkts,
             st.rx_pkts, f.frames_tx, f.taken);
    }
    for (unsigned i = 0; i < NQP; i++) {
        Fq *q = &f.q[i];
        PvrdmaQP *qp = q->exists ? pvrdma_qp_get(&f.d.c, q->qp.handle) : NULL;

        if (qp && pvrdma_roce_qp_stats(f.t, qp, &qs) != q->connected) {
            fail("QP %u: %son the RoCEv2 transport, expected %s", i,
                 q->connected ? "not " : "", q->connected ? "on" : "off");
        }
    }
}

/* What QEMU's bottom half and timer do: run the core while it asks. */
void service(void)
{
    FakeHost *h = &f.d.h;

    for (unsigned i = 0; i < SERVICE_MAX; i++) {
        bool timer = h->timer_due && h->now >= h->timer_due;

        if (!h->run_pending && !timer) {
            drain_cqs();
            check_guard(false);
            check_stats();
            return;
        }
        if (i >= RNR_SPIN && f.d.c.timer && h->run_pending &&
            h->timer_due > h->now) {
            /*
             * A known problem of the core, not of the transport: a send
             * waiting on RNR (loopback) is woken by every run, not by its
             * timer, and the run re-arms the wake-up: the bottom half
             * spins until the RNR deadline.  In QEMU the clock moves
             * meanwhile; here it is moved to the deadline (strict: fail).
             */
            if (strict) {
                fail("the core spins on an RNR wait (%u runs at time %"
                     PRId64 ", RNR timer due at %" PRId64 ")", i, h->now,
                     h->timer_due);
            }
            f.rnr_spins++;
            h->now = h->timer_due;
        }
        h->run_pending = false;
        if (timer) {
            h->timer_due = 0;
        }
        pvrdma_core_run(&f.d.c);
        drain_cqs();
    }
    {
        PvrdmaCore *c = &f.d.c;
        GString *s = g_string_new(NULL);

        for (PvrdmaQP *qp = c->run.head; qp; qp = qp->run_next) {
            g_string_append_printf(s, " %u(state %u)", qp->handle,
                                   qp->state);
        }
        fail("the core still asks to run after %u runs at time %" PRId64
             " (run list:%s; kick pending %d, timer due %" PRId64
             ", transport timer %d, wake %d, core timer %d)", SERVICE_MAX,
             h->now, s->str, h->run_pending, h->timer_due,
             c->timer_transports, c->wake_transports, c->timer);
    }
}

/* ------------------------------------------------------------------ */
/* Frames from the network                                             */

/* The IPv4 header checksum and the ICRC of a frame, written again. */
static void refix(uint8_t *fr, size_t len)
{
    size_t l3, iph, ipl;
    uint16_t type;
    uint32_t icrc, sum = 0;

    if (len < 18) {
        return;
    }
    l3 = (fr[12] << 8 | fr[13]) == 0x8100 ? 18 : 14;
    type = fr[l3 - 2] << 8 | fr[l3 - 1];
    if (type != 0x0800 && type != 0x86dd) {
        return;
    }
    iph = type == 0x0800 ? 20 : 40;
    if (len - l3 < iph) {
        return;
    }
    if (type == 0x0800) {
        ipl = fr[l3 + 2] << 8 | fr[l3 + 3];
        fr[l3 + 10] = fr[l3 + 11] = 0;
        for (size_t i = 0; i < iph; i += 2) {
            sum += fr[l3 + i] << 8 | fr[l3 + i + 1];
        }
        sum = (sum & 0xffff) + (sum >> 16);
        sum = (sum & 0xffff) + (sum >> 16);
        fr[l3 + 10] = ~sum >> 8;
        fr[l3 + 11] = ~sum;
    } else {
        ipl = iph + (fr[l3 + 4] << 8 | fr[l3 + 5]);
    }
    if (ipl > len - l3 || ipl < iph + 8 + ROCE_BTH_LEN + ROCE_ICRC_LEN) {
        return;
    }
    icrc = roce_icrc(fr + l3, ipl, type == 0x86dd);
    for (int i = 0; i < 4; i++) {
        fr[l3 + ipl - 4 + i] = icrc >> (8 * i);
    }
}

static void deliver(const uint8_t *fr, size_t len, int expect)
{
    bool taken;

    if (expect == 1 && len <= sizeof(last_frame)) {
        memcpy(last_frame, fr, len);
        last_len = len;
    }

    f.frames_rx++;
    taken = pvrdma_roce_rx(f.t, fr, len);
    f.taken += taken;
    if (expect >= 0 && taken != expect) {
        fail("pvrdma_roce_rx() %s a well-formed frame %s", taken ?
             "took" : "refused", expect ? "for us" : "not for us");
    }
    if (!burst) {
        service();
    }
}

/* Ethernet/IP/UDP of a frame from peer conn (0: v4, 1: v6) to us. */
static void pkt_addr(RocePkt *p, unsigned conn, bool stranger)
{
    memset(p, 0, sizeof(*p));
    memcpy(p->dmac, our_mac(), 6);
    memcpy(p->smac, peer_mac, 6);
    p->ip_ver = conn ? 6 : 4;
    p->ttl = 64;
    p->df = true;
    memcpy(p->sgid, stranger ? stranger_gid[conn] : peer_gid[conn], 16);
    memcpy(p->dgid, our_gid[conn], 16);
    p->sport = 0xc000 | conn;
    p->pkey = 0xffff;
}

/* An RC packet of peer conn to our QP q (built and delivered). */
static void send_rc(Fq *q, RocePkt *p)
{
    size_t n = roce_build(p, frame, sizeof(frame));

    if (!n) {
        fail("roce_build refused a packet of the peer model (%s)",
             roce_opcode_name(p->opcode));
    }
    LOG("  rx %-34s dqpn %06x psn %06x len %zu\n",
        roce_opcode_name(p->opcode), p->dqpn, p->psn, p->payload_len);
    deliver(frame, n, 1);
}

static void rc_pkt(Fq *q, RocePkt *p, uint8_t opcode, uint32_t psn)
{
    pkt_addr(p, q->conn, false);
    p->opcode = opcode;
    p->dqpn = q->qp.qpn;
    p->psn = psn & PSN_MASK;
}

static uint64_t pick_va(uint8_t mode, uint16_t off, Input *in, bool align)
{
    uint64_t va;

    switch (mode & 3) {
    case 0:
        va = MR_IOVA + off % MR_LEN;
        break;
    case 1:
        va = MR_IOVA + MR_LEN - (off & 0x1ff);
        break;
    case 2:
        va = f.fr_key ? FR_IOVA + off % FR_LEN : MR_IOVA;
        break;
    default:
        va = get(in, 8);
        break;
    }
    return align ? va & ~7ull : va;
}

static uint32_t pick_rkey(uint8_t mode, Input *in)
{
    switch (mode & 3) {
    case 0:
        return f.mr.rkey;
    case 1:
        return f.fr_key ? f.fr_key : f.mr.rkey;
    case 2:
        return f.mr.rkey ^ (1 + (mode >> 2));
    default:
        return get(in, 4);
    }
}

static uint32_t qp_sel(uint8_t sel, Input *in, Fq **qout)
{
    static const uint8_t map[8] = { RC0, RC1, UDQ, GSI, RC2, RC0, 0xff, RC0 };
    uint8_t qi = map[sel & 7];

    *qout = NULL;
    if (qi == 0xff) {
        return get(in, 3);
    }
    if (f.q[qi].exists) {
        *qout = &f.q[qi];
        return f.q[qi].qp.qpn;
    }
    return qi;
}

/* A packet whose every field the input picks. */
/* The extension headers of op's packet p, from the input. */
static void pkt_ext_headers(RocePkt *p, const RoceOpInfo *info, uint8_t op,
                            uint32_t mtu, Input *in)
{
    for (unsigned i = 0; i < ROCE_MAX_EXT_HDRS; i++) {
        uint8_t m;
        uint16_t off;

        switch (info->ext[i]) {
        case ROCE_EH_RETH:
            m = get(in, 1);
            off = get(in, 2);
            p->reth.va = pick_va(m, off, in, false);
            p->reth.rkey = pick_rkey(m >> 2, in);
            m = get(in, 1);
            if (m < 0x80) {
                p->reth.len = op == ROCE_RC_RDMA_READ_REQUEST ?
                              (m < 0x40 ? m * 16 : (m - 0x40) * 512) :
                              info->pos == ROCE_POS_ONLY ? 0 :
                              mtu * (1 + (m & 3)) + (m >> 2);
            } else if (m < 0xc0) {
                p->reth.len = get(in, 2);
            } else {
                p->reth.len = get(in, 4);
            }
            break;
        case ROCE_EH_AETH:
            p->aeth.syndrome = get(in, 1);
            p->aeth.msn = get(in, 1);
            break;
        case ROCE_EH_ATMETH:
            m = get(in, 1);
            off = get(in, 2);
            p->atmeth.va = pick_va(m, off, in, !(m & 0x80));
            p->atmeth.rkey = pick_rkey(m >> 2, in);
            p->atmeth.swap_add = get(in, 1);
            p->atmeth.compare = get(in, 1);
            break;
        case ROCE_EH_ATMACK:
            p->atmack = get(in, 1);
            break;
        case ROCE_EH_IMMDT:
            p->imm = 0x01010101u * get(in, 1);
            break;
        case ROCE_EH_IETH:
            p->ieth_rkey = pick_rkey(get(in, 1), in);
            break;
        case ROCE_EH_DETH:
            m = get(in, 1);
            p->deth.qkey = m & 1 ? PVRDMA_GSI_QKEY : m & 2 ? get(in, 4) :
                           UD_QKEY;
            p->deth.sqp = m >> 2;
            break;
        default:
            break;
        }
    }
}

static void pkt_op(Input *in)
{
    uint8_t opi = get(in, 1), fl = get(in, 1), sel = get(in, 1);
    uint8_t pm = get(in, 1), mg = fl & PF_MANGLE ? get(in, 1) : 0;
    int8_t delta = get(in, 1);
    uint8_t op = opcodes[opi % NOPCODES];
    const RoceOpInfo *info = roce_opcode_info(op);
    RocePkt p;
    Fq *q;
    uint32_t dqpn = qp_sel(sel, in, &q);
    unsigned conn = q && q->conn >= 0 ? q->conn : !!(fl & PF_V6);
    uint32_t mtu = q ? q->mtu : 256;
    uint32_t base;
    size_t n;

    pkt_addr(&p, conn, fl & PF_STRANGER);
    p.opcode = op;
    p.dqpn = dqpn & PSN_MASK;
    p.ack_req = fl & PF_ACKREQ;
    p.se = fl & PF_SE;
    p.vlan = fl & PF_VLAN;
    p.vlan_tci = sel;
    if (fl & PF_PKEY) {
        p.pkey = 0x7ffe ^ (pm << 8);
    }
    /* PSN: near what our responder expects, or what our requester sent */
    switch (pm & 3) {
    case 0:
        base = q ? q->peer_psn : 0;
        break;
    case 1:
        base = q && q->have_sent ?
               q->sent[(q->nsent - 1 - ((pm >> 2) & 7)) % NSENT].psn : 0;
        break;
    case 2:
        base = q ? psn_add(q->max_psn, PSN_MASK) : 0;
        break;
    default:
        base = get(in, 3);
        break;
    }
    p.psn = psn_add(base, (uint32_t)(int32_t)delta);
    pkt_ext_headers(&p, info, op, mtu, in);
    if (info->payload) {
        uint8_t lb = get(in, 1);
        size_t len;

        if (fl & PF_FIT) {
            len = info->pos == ROCE_POS_FIRST ||
                  info->pos == ROCE_POS_MIDDLE ? mtu : lb % (mtu + 1);
        } else {
            len = lb < 0xe0 ? lb : mtu + lb - 0xf0;
        }
        fill_pattern(payload, len, get(in, 1));
        p.payload = payload;
        p.payload_len = len;
        if (info->pos == ROCE_POS_ONLY && (fl & PF_FIT) &&
            roce_opcode_has(op, ROCE_EH_RETH)) {
            p.reth.len = len;
        }
    }
    if (mg & PM_DMAC) {
        memcpy(p.dmac, other_mac, 6);
    }
    if (mg & PM_DGID) {
        memcpy(p.dgid, peer_gid[conn], 16);
    }
    p.udp_csum = mg & PM_UDPCSUM;
    if (mg & PM_BITS) {
        p.mig = true;
        p.fecn = p.becn = true;
        p.resv6 = 0x3f;
        p.resv7 = 0x7f;
        p.deth.resv = 0xff;
    }
    if (mg & PM_BADPAD) {
        p.tver = 1;
    }
    n = roce_build(&p, frame, sizeof(frame));
    LOG("pkt %s dqpn %06x psn %06x len %zu flags %02x/%02x%s\n",
        info->name, p.dqpn, p.psn, p.payload_len, fl, mg,
        n ? "" : " (not buildable)");
    if (!n) {
        return;
    }
    if (mg & PM_FLIP) {
        uint16_t pos = get(in, 2);
        uint8_t x = get(in, 1);

        frame[pos % n] ^= x ? x : 1;
        if (mg & PM_REFIX) {
            refix(frame, n);
        }
        deliver(frame, n, -1);
        return;
    }
    {
        uint32_t old = q ? q->peer_psn : 0;

        deliver(frame, n, (mg & PM_BADPAD) ? -1 :
                !(mg & (PM_DMAC | PM_DGID)));
        /* a request at the expected PSN moves it on (unless answered) */
        if (q && q->conn >= 0 && q->exists && q->peer_psn == old &&
            p.psn == old && roce_opcode_is_rc_request(op)) {
            q->peer_psn = psn_add(old, op != ROCE_RC_RDMA_READ_REQUEST ||
                                  !p.reth.len ? 1 :
                                  (p.reth.len + mtu - 1) / mtu);
        }
    }
}

/* Bytes as they are; with flags, our MAC and fresh checksums. */
static void raw_op(Input *in)
{
    uint8_t fl = get(in, 1);
    size_t len = get(in, 2) % 1100, i;

    for (i = 0; i < len && in->n; i++) {
        frame[i] = get(in, 1);
    }
    len = i;
    if ((fl & 1) && len >= 6) {
        memcpy(frame, our_mac(), 6);
    }
    if (fl & 2) {
        refix(frame, len);
    }
    LOG("raw frame, %zu bytes\n", len);
    /* libFuzzer-like: exactly len bytes, so ASan sees an overread */
    {
        uint8_t *copy = g_memdup2(frame, len ? len : 1);

        deliver(copy, len, -1);
        g_free(copy);
    }
}

/* A whole SEND or WRITE message of several packets, PSNs in order. */
static void msg_op(Input *in)
{
    uint8_t kind = get(in, 1), npk = get(in, 1), lb = get(in, 1);
    uint8_t sel = get(in, 1), m = get(in, 1);
    int8_t delta = get(in, 1);
    Fq *q = &f.q[sel & 1 ? RC1 : RC0];
    bool write = kind & 1, imm = kind & 2, inv = (kind & 6) == 4;
    uint32_t n = 1 + npk % 8, last = lb % (q->mtu + 1);
    uint32_t psn, total;
    uint16_t off = get(in, 2);

    if (!q->exists || !q->connected) {
        return;
    }
    total = (n - 1) * q->mtu + last;
    psn = psn_add(q->peer_psn, (uint32_t)(int32_t)delta);
    LOG("msg %s of %u packets (%u bytes) at psn %06x\n",
        write ? "WRITE" : "SEND", n, total, psn);
    for (uint32_t k = 0; k < n; k++) {
        RocePkt p;
        bool first = k == 0, lst = k + 1 == n;
        uint8_t op;

        /* skip one packet, or send one twice */
        if ((m & 0x80) && k == (m & 7)) {
            continue;
        }
        if (write) {
            op = first && lst ? (imm ? ROCE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE :
                                 ROCE_RC_RDMA_WRITE_ONLY) :
                 first ? ROCE_RC_RDMA_WRITE_FIRST :
                 lst ? (imm ? ROCE_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE :
                        ROCE_RC_RDMA_WRITE_LAST) : ROCE_RC_RDMA_WRITE_MIDDLE;
        } else {
            op = first && lst ? (inv ? ROCE_RC_SEND_ONLY_WITH_INVALIDATE :
                                 imm ? ROCE_RC_SEND_ONLY_WITH_IMMEDIATE :
                                 ROCE_RC_SEND_ONLY) :
                 first ? ROCE_RC_SEND_FIRST :
                 lst ? (inv ? ROCE_RC_SEND_LAST_WITH_INVALIDATE :
                        imm ? ROCE_RC_SEND_LAST_WITH_IMMEDIATE :
                        ROCE_RC_SEND_LAST) : ROCE_RC_SEND_MIDDLE;
        }
        rc_pkt(q, &p, op, psn_add(psn, k));
        if (first && write) {
            p.reth.va = pick_va(m >> 3, off, in, false);
            p.reth.rkey = pick_rkey(m >> 5, in);
            p.reth.len = total;
        }
        p.imm = 0xabcd0000u | k;
        p.ieth_rkey = m & 0x40 ? f.fr_key : f.mr.rkey;
        p.ack_req = lst || (m & 0x20);
        p.se = lst && (kind & 8);
        fill_pattern(payload, q->mtu, psn + k);
        p.payload = payload;
        p.payload_len = lst ? last : q->mtu;
        send_rc(q, &p);
        if (!(m & 0x80) && (m & 0x40) && k == (m & 7)) {
            send_rc(q, &p);     /* a duplicate */
        }
        if (psn_add(psn, k) == q->peer_psn) {
            q->peer_psn = psn_add(q->peer_psn, 1);
        }
    }
}

/* The peer answers a request our requester sent. */
static void peer_op(Input *in)
{
    uint8_t sel = get(in, 1), act = get(in, 1), arg = get(in, 1);
    Fq *q = &f.q[sel & 1 ? RC1 : RC0];
    SentReq *s;
    RocePkt p;

    if (!q->exists || !q->connected || !q->have_sent) {
        return;
    }
    s = &q->sent[(q->nsent - 1 - ((sel >> 1) % MIN(q->nsent, NSENT))) %
                 NSENT];
    LOG("peer answers %s psn %06x: %u\n", roce_opcode_name(s->opcode),
        s->psn, act % PA_N);
    switch (act % PA_N) {
    case PA_ACK:
        rc_pkt(q, &p, ROCE_RC_ACKNOWLEDGE, s->psn);
        p.aeth.syndrome = roce_aeth_ack(arg);
        send_rc(q, &p);
        break;
    case PA_ACK_MAX:
        rc_pkt(q, &p, ROCE_RC_ACKNOWLEDGE,
               psn_add(q->max_psn, PSN_MASK - (arg & 3)));
        p.aeth.syndrome = roce_aeth_ack(ROCE_AETH_NO_CREDITS);
        send_rc(q, &p);
        break;
    case PA_RNR:
        rc_pkt(q, &p, ROCE_RC_ACKNOWLEDGE, s->psn);
        p.aeth.syndrome = roce_aeth_rnr_nak(arg);
        send_rc(q, &p);
        break;
    case PA_SEQ_NAK:
        rc_pkt(q, &p, ROCE_RC_ACKNOWLEDGE, psn_add(s->psn, arg & 3));
        p.aeth.syndrome = roce_aeth_nak(ROCE_NAK_PSN_SEQ_ERR);
        send_rc(q, &p);
        break;
    case PA_NAK:
        rc_pkt(q, &p, ROCE_RC_ACKNOWLEDGE, s->psn);
        p.aeth.syndrome = arg & 0x80 ? arg : roce_aeth_nak(arg % 6);
        send_rc(q, &p);
        break;
    case PA_ATOMIC_ACK:
        rc_pkt(q, &p, ROCE_RC_ATOMIC_ACKNOWLEDGE, s->psn);
        p.aeth.syndrome = roce_aeth_ack(ROCE_AETH_NO_CREDITS);
        p.atmack = 0x1111111111111111ull * (arg & 0xf);
        send_rc(q, &p);
        break;
    case PA_READ_RESP:
    case PA_READ_PART: {
        /* the responses of a READ: all, or from / up to one, one twice */
        uint32_t n = s->npsn, len = s->len;
        uint32_t from = act % PA_N == PA_READ_PART ? (arg & 7) % n : 0;
        uint32_t to = act % PA_N == PA_READ_PART ? MIN(n, from + 1 +
                                                        (arg >> 3 & 7)) : n;

        for (uint32_t k = from; k < to; k++) {
            bool first = k == 0, last = k + 1 == n;
            uint64_t off = (uint64_t)k * q->mtu;
            uint32_t plen = !last ? q->mtu : len > off ? len - off : 0;

            rc_pkt(q, &p, first && last ? ROCE_RC_RDMA_READ_RESPONSE_ONLY :
                   first ? ROCE_RC_RDMA_READ_RESPONSE_FIRST :
                   last ? ROCE_RC_RDMA_READ_RESPONSE_LAST :
                   ROCE_RC_RDMA_READ_RESPONSE_MIDDLE, psn_add(s->psn, k));
            p.aeth.syndrome = roce_aeth_ack(ROCE_AETH_NO_CREDITS);
            plen = MIN(plen, q->mtu);   /* (the MTU changed meanwhile) */
            if (arg & 0x40 && last) {
                plen = (plen + 1) % (q->mtu + 1);     /* off by one */
            }
            fill_pattern(payload, plen, k);
            p.payload = payload;
            p.payload_len = plen;
            send_rc(q, &p);
            if ((arg & 0x80) && k == from) {
                send_rc(q, &p);
            }
        }
        break;
    }
    }
}

/* Time passes: to the next timer, or by a step. */
static void clock_op(Input *in)
{
    static const int64_t steps[8] = { 1, 5, 20, 100, 700, 5000, 60000,
                                      1000000 };
    uint8_t m = get(in, 1);
    FakeHost *h = &f.d.h;

    if (m < 0x80 && h->timer_due) {
        /* to the next timer, a few times */
        for (unsigned i = 0; i <= (m & 7) && h->timer_due; i++) {
            h->now = MAX(h->now, h->timer_due);
            service();
        }
        return;
    }
    h->now += steps[m & 7];
    LOG("clock +%" PRId64 " ms\n", steps[m & 7]);
    service();
}

static void step(Input *in)
{
    uint8_t op = get(in, 1);

    /*
     * OP_BURST: the frames of this operation arrive before the bottom half
     * runs (the device is served by the next operation that is not a
     * burst), as frames queue up in the NIC between two runs of QEMU's
     * main loop.
     */
    burst = op & OP_BURST;
    switch (op & 15) {
    case OP_RAW:
        raw_op(in);
        break;
    case OP_CLOCK:
        clock_op(in);
        break;
    case OP_RECV:
        post_recv_op(in);
        break;
    case OP_SEND:
        post_send_op(in);
        break;
    case OP_MODIFY:
        modify_op(in);
        break;
    case OP_PEER:
    case OP_PEER2:
        peer_op(in);
        break;
    case OP_MSG:
    case OP_MSG2:
        msg_op(in);
        break;
    case OP_MR:
        mr_op(in);
        break;
    default:
        pkt_op(in);
        break;
    }
}

/* ------------------------------------------------------------------ */
/* Setup and teardown                                                  */

/*
 * The FRMR, through RC2 (loopback): fast-registered over its two pages
 * for [FR_IOVA, FR_IOVA + len) (never more), or invalidated (LOCAL_INV).
 * Returns the work request.
 */
Wr *frmr_post(bool inv, uint32_t key, uint32_t len)
{
    struct pvrdma_sq_wqe_hdr w = { 0 };
    Fq *q = &f.q[RC2];
    uint64_t wr_id;

    if (!q->exists || !ring_room(q, false) ||
        !new_wr(RC2, false, inv ? PVRDMA_WR_LOCAL_INV :
                PVRDMA_WR_FAST_REG_MR, 0, &wr_id)) {
        return NULL;
    }
    w.wr_id = wr_id;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    if (inv) {
        w.opcode = PVRDMA_WR_LOCAL_INV;
        w.ex.invalidate_rkey = key;
    } else {
        w.opcode = PVRDMA_WR_FAST_REG_MR;
        w.wr.fast_reg.iova_start = FR_IOVA;
        /* the page list: a page directory of the pages (as the driver's) */
        w.wr.fast_reg.pl_pdir_dma = f.fr_pdir;
        w.wr.fast_reg.page_shift = 12;
        w.wr.fast_reg.page_list_len = FR_PAGES;
        w.wr.fast_reg.length = MIN(len, FR_LEN);
        w.wr.fast_reg.access_flags = RC_ACCESS | PVRDMA_ACCESS_LOCAL_WRITE;
        w.wr.fast_reg.rkey = key;
    }
    post_send(&f.d, &q->qp, &w, NULL, 0);
    service();
    return &f.wr[wr_id - WR_BASE];
}

/* An FRMR over two pages, fast-registered through RC2 (loopback). */
static void frmr_setup(void)
{
    union pvrdma_cmd_req req = { 0 };
    union pvrdma_cmd_resp rsp;
    Wr *w;

    for (unsigned i = 0; i < FR_PAGES; i++) {
        f.fr_pages[i] = fh_alloc(&f.d.h, 1);
        fill_guard(f.fr_pages[i], FH_PAGE);
    }
    req.create_mr.pd_handle = f.pd;
    req.create_mr.flags = PVRDMA_MR_FLAG_FRMR;
    req.create_mr.nchunks = FR_PAGES;
    if (dev_cmd(&f.d, &req, PVRDMA_CMD_CREATE_MR, &rsp)) {
        fail("CREATE_MR (FRMR) refused");
    }
    f.fr_pdir = fh_make_pdir(&f.d.h, f.fr_pages, FR_PAGES);
    w = frmr_post(false, rsp.create_mr_resp.rkey, FR_LEN);
    if (!w || !w->done || w->status != PVRDMA_WC_SUCCESS) {
        fail("FAST_REG_MR failed");
    }
    /* the slack around [FR_IOVA, FR_IOVA + FR_LEN) stays guard */
    f.fr_key = rsp.create_mr_resp.rkey;
    {
        uint64_t o0 = FR_IOVA & (FH_PAGE - 1);
        uint64_t oe = (FR_IOVA + FR_LEN) & (FH_PAGE - 1);

        memset(fh_ptr(&f.d.h, f.fr_pages[0]) + o0, 0, FH_PAGE - o0);
        memset(fh_ptr(&f.d.h, f.fr_pages[FR_PAGES - 1]), 0, oe);
    }
}

/*
 * Guest RAM that stays allocated across inputs (fh_init_ram): a fresh
 * allocation of it per input costs more page faults than the rest of the
 * input.  Every byte starts as GUARD.
 */
static void ram_init(FakeHost *h)
{
    static uint8_t *ram;

    if (!ram) {
        ram = g_malloc(RAM_PAGES * FH_PAGE);
    }
    fh_init_ram(h, ram, RAM_PAGES * FH_PAGE);
    memset(h->ram, GUARD, h->size);
}

static void ram_fini(FakeHost *h)
{
    if (h->watches->len) {
        fail("%u fd handlers left", h->watches->len);
    }
    fh_fini(h);
}

static void setup(Input *in)
{
    PvrdmaLimits l;
    uint8_t c0 = get(in, 1), c1 = get(in, 1), c2 = get(in, 1);
    uint8_t c3 = get(in, 1), c4 = get(in, 1), c5 = get(in, 1);

    memset(&f, 0, sizeof(f));
    last_len = 0;
    pvrdma_limits_default(&l);
    l.max_qp = 16;
    l.max_cq = 4;
    l.max_mr = 8;
    l.max_pd = 2;
    l.max_srq = 1;
    l.max_uar = 4;
    l.max_qp_wr = 64;
    l.max_sge = 4;
    l.gid_tbl_len = 4;
    l.max_qp_rd_atom = 16;
    ram_init(&f.d.h);
    f.d.h.core = &f.d.c;
    pvrdma_core_init(&f.d.c, &fh_ops, &f.d.h, &l);
    pvrdma_core_add_transport(&f.d.c, pvrdma_loopback_new(&f.d.c));
    f.d.h.frame_tx = dev_tx;
    f.t = pvrdma_roce_new(&f.d.c);
    if (!f.t || !pvrdma_core_add_transport(&f.d.c, f.t)) {
        fail("cannot add the RoCEv2 transport");
    }
    dev_write_dsr(&f.d);
    pvrdma_core_reg_write(&f.d.c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
    pvrdma_core_reg_write(&f.d.c, PVRDMA_REG_IMR, 0);
    bind_gid(&f.d, 0, our_gid[0]);
    bind_gid(&f.d, 1, our_gid[1]);
    f.pd = create_pd(&f.d, 0);
    create_cq(&f.d, &f.scq, 256);
    create_cq(&f.d, &f.rcq, 256);
    create_mr(&f.d, &f.mr, f.pd, MR_IOVA, MR_LEN,
              PVRDMA_ACCESS_LOCAL_WRITE | RC_ACCESS);
    f.mr_alive = true;
    {
        uint64_t o0 = MR_IOVA & (FH_PAGE - 1);
        uint64_t oe = (MR_IOVA + MR_LEN) & (FH_PAGE - 1);

        fill_guard(f.mr.pages[0], o0);
        fill_guard(f.mr.pages[f.mr.npages - 1] + oe, FH_PAGE - oe);
    }

    /* connection parameters */
    f.cfg_rq_psn = psn_table[c0 & 7];
    f.cfg_sq_psn = psn_table[(c0 >> 3) & 7] ^ (c0 >> 6);
    f.cfg_timeout = c1 & 31;
    f.cfg_retry = c2 & 7;
    f.cfg_rnr_retry = (c2 >> 3) & 7;
    f.cfg_rd = 1 + (c3 & 15);
    f.cfg_dest_rd = c3 >> 4;
    f.cfg_rnr_timer = c4 & 31;
    f.cfg_mtu1 = PVRDMA_MTU_256 + (c4 >> 5) % 5;

    for (unsigned i = 0; i < NQP; i++) {
        qp_create(i);
    }
    qp_connect(RC0, f.cfg_rq_psn, f.cfg_sq_psn, PVRDMA_MTU_256);
    qp_connect(RC1, f.cfg_rq_psn ^ 0x10, f.cfg_sq_psn ^ 0x20, f.cfg_mtu1);
    qp_connect(RC2, 0x42, 0x42, PVRDMA_MTU_1024);
    qp_connect(UDQ, 0, 0x77, 0);
    qp_connect(GSI, 0, 0x88, 0);
    frmr_setup();
    guard_update();

    /* receives posted on every QP (c5: how many) */
    for (unsigned i = 0; i < NQP; i++) {
        Fq *q = &f.q[i];

        for (unsigned k = 0; k < (c5 & 7); k++) {
            struct pvrdma_sge s = { MR_IOVA + 2048 * ((i * 4 + k) % 15),
                                    2048, f.mr.lkey };
            uint64_t wr_id;

            if (q->type != PVRDMA_QPT_RC) {
                /* large enough for any UD message */
                s.addr = MR_IOVA + (4096 * k) % (MR_LEN - UD_RECV_MIN);
                s.length = UD_RECV_MIN;
            }
            new_wr(i, true, 0, s.length, &wr_id);
            put_recv(&f.d, &q->qp, wr_id, &s, 1);
        }
        if (c5 & 7) {
            ring_recv(&f.d, &q->qp);
        }
    }
    service();
    LOG("setup: rq_psn %06x sq_psn %06x timeout %u retry %u rnr_retry %u "
        "rd %u/%u rnr_timer %u, %" PRIu64 " pages used\n", f.cfg_rq_psn,
        f.cfg_sq_psn, f.cfg_timeout, f.cfg_retry, f.cfg_rnr_retry, f.cfg_rd,
        f.cfg_dest_rd, f.cfg_rnr_timer,
        (f.d.h.next_free - f.d.h.base) / FH_PAGE);
}

static void teardown(void)
{
    char *qps;

    drain_cqs();
    check_guard(true);
    qps = pvrdma_describe_qps(&f.d.c);
    LOG("%s", qps);
    g_free(qps);
    pvrdma_core_reg_write(&f.d.c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_RESET);
    if (fh_outstanding(&f.d.h) || f.d.h.bad_unmaps) {
        fail("after reset: %u mappings, %" PRIu64 " bad unmaps",
             fh_outstanding(&f.d.h), f.d.h.bad_unmaps);
    }
    /* the reset device has no GID: nothing is for it any more */
    if (last_len && pvrdma_roce_rx(f.t, last_frame, last_len)) {
        fail("a reset device took a frame");
    }
    f.d.h.now += 100000;
    pvrdma_core_run(&f.d.c);
    if (fh_outstanding(&f.d.h)) {
        fail("after reset and a run: %u mappings", fh_outstanding(&f.d.h));
    }
    pvrdma_core_fini(&f.d.c);       /* destroys the transports */
    if (fh_outstanding(&f.d.h)) {
        fail("after fini: %u mappings", fh_outstanding(&f.d.h));
    }
    ram_fini(&f.d.h);
    g_free(f.mr_snap);
    f.mr_snap = NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *dir = getenv("PVRDMA_ROCE_RX_SEEDS");

    verbose = getenv("PVRDMA_FUZZ_VERBOSE") != NULL;
    strict = getenv("PVRDMA_ROCE_RX_STRICT") != NULL;
    fh_process_init(verbose);
    if (dir) {
        roce_rx_write_seeds(dir);
        exit(0);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Input in = { data, size };

    setup(&in);
    for (unsigned i = 0; i < MAX_OPS && in.n; i++) {
        step(&in);
    }
    burst = false;
    service();
    LOG("done: %" PRIu64 " frames in (%" PRIu64 " taken), %" PRIu64
        " out, %u work requests, %" PRIu64 " guest errors, %" PRIu64
        " RNR spins\n", f.frames_rx, f.taken, f.frames_tx, f.nwr,
        f.d.c.guest_errors, f.rnr_spins);
    teardown();
    return 0;
}
