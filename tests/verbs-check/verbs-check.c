/*
 * pvrdma-verbs-check: a device-neutral RDMA verbs data checker
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * Two instances, a server and a client, connect through rdma_cm and then
 * both act as requester and responder at the same time: each side sends
 * its own stream of messages (SEND, SEND with immediate, RDMA WRITE, RDMA
 * WRITE with immediate, RDMA READ, compare-and-swap, fetch-and-add) and
 * verifies every byte of what the peer's stream delivers to it, plus what
 * its own READs and atomics return.  It runs on any verbs device
 * (vmw_pvrdma0, rxe0, ...): rdma_cm picks the device by address.
 *
 * Usage:
 *   pvrdma-verbs-check [options] server
 *   pvrdma-verbs-check [options] client ADDR
 * See usage() (--help) for the options.  Both sides must be given the same
 * -t, -o, -s, -S, -q, -g and --seed (a digest of them is compared at
 * connect time; a mismatch is a setup error); the server takes -n / -D
 * from the client.  -v, -T, -p and --corrupt are per side.
 *
 * Wire protocol.  The client's connect request and the server's accept
 * carry a struct vc_priv: magic, version, the digest of the options,
 * the session nonce (client's), the path MTU (client's route; both sides
 * build the size list from it), the message count (0: time mode), and the
 * address, rkey and length of the sender's "remote MR".  The remote MR
 * holds, for the peer's use: DEPTH write slots (each with guard bytes
 * before and after the range written), a read source filled with a known
 * pattern, and NCTR 8-byte atomic counters.
 * Message k of a side (k = 0, 1, ...) has an operation and a size that
 * both sides compute: op = OPS[k % nops], size = SIZES[(k / nops) %
 * nsizes] (reads at least 1 byte, atomics 8), and seeded offsets.
 *   send, send_imm:  one SEND (with immediate) of the payload
 *   write:           RDMA WRITE into write slot k % DEPTH of the peer,
 *                    then a control SEND "ANNOUNCE k" (RC ordering makes
 *                    the written data visible when its receive completes)
 *   write_imm:       RDMA WRITE with immediate into that slot
 *   read:            RDMA READ of a seeded range of the peer's read source
 *   cas, faa:        on counter c (seeded) of the peer; one requester per
 *                    counter, so each old value is predicted exactly
 * Control messages are SENDs with immediate whose immediate has bit 31 set
 * (data immediates never do), with a struct vc_ctrl payload: ACK n (the
 * sender verified every peer message below n; a requester keeps message
 * k unposted until k < ACK + DEPTH, which bounds the peer's receives and
 * frees its write slots), ANNOUNCE k, FIN n (the sender posted n
 * messages, all completed, with its predicted final counter values).  A
 * side stops at -n COUNT, or in time mode the client stops when -D is up
 * and the server when the client's FIN arrives; each sends FIN after its
 * own work completed and finishes once it also has the peer's FIN.
 *
 * Data pattern.  Byte o of message k from direction d (0 client->server,
 * 1 server->client) is byte (o % 8) of splitmix64(key + (o / 8) * phi),
 * key = hash(seed, nonce, d, k): a byte from another message, another
 * direction, another run, or another offset does not match.  The read
 * source is the same function keyed on (seed, nonce, owner, "read") at
 * its absolute offset.  Immediates are hash(..., d, k) & 0x7fffffff.
 * Unwritten bytes (all of a receive buffer past byte_len, all of a write
 * slot around the range written, read buffer surroundings) hold the guard
 * byte 0xa5 and are checked too, every time.
 *
 * Exit status: 0 all checks passed (last stdout line "verbs-check: ok
 * ..."), 1 a check failed (a "verbs-check: MISMATCH ..." line with a hex
 * dump, or "verbs-check: FAILED completion ..."), 2 usage, setup or
 * connection error, or the peer went away, 3 no completion for -T seconds.
 *
 * Sources: verbs-check.c (posting, completions, main), vc-setup.c
 * (options, rdma_cm, memory and QP setup), vc-util.c (pattern, checks,
 * message parameters), vc.h.
 */

#include "vc.h"

/* ------------------------------------------------------------- posting */

static uint64_t sq_push(uint64_t k, int kind, int wc_op, int last)
{
    uint64_t seq = g.sq_head++;
    struct sqe *e = &g.fifo[seq % (g.sq_depth + 1)];

    e->k = k;
    e->kind = kind;
    e->wc_op = wc_op;
    e->last = last;
    return seq;
}

static void set_ud(struct ibv_send_wr *wr)
{
    if (cfg.mode == MODE_UD) {
        wr->wr.ud.ah = g.ah;
        wr->wr.ud.remote_qpn = g.rqpn;
        wr->wr.ud.remote_qkey = g.rqkey;
    }
}

static void post_wrs(struct ibv_send_wr *wr, const char *what)
{
    struct ibv_send_wr *bad;
    int rc = ibv_post_send(g.qp, wr, &bad);

    if (rc) {
        if (g.peer_gone) {
            return;
        }
        die(EX_SETUP, "ibv_post_send (%s): %s", what, strerror(rc));
    }
}

static uint8_t *ctrl_buf(uint32_t *lkey)
{
    uint8_t *p = g.ctrlbuf + (g.ctrl_seq++ % g.nctrl) * 128;

    g.ctrl_out++;
    *lkey = g.ctrl_lkey;
    return p;
}

/*
 * Fill wr (not posted): a signaled OPCODE on LEN bytes of a control
 * buffer through sge, queued as (k, kind, wc_op, last); returns the
 * buffer.  The caller writes the buffer and the remote side.
 */
static uint8_t *ctrl_buf_wr(struct ibv_send_wr *wr, struct ibv_sge *sge,
                            uint32_t len, enum ibv_wr_opcode opcode,
                            uint64_t k, int kind, int wc_op, int last)
{
    uint8_t *p = ctrl_buf(&sge->lkey);

    sge->addr = (uintptr_t)p;
    sge->length = len;
    memset(wr, 0, sizeof(*wr));
    wr->wr_id = sq_push(k, kind, wc_op, last);
    wr->sg_list = sge;
    wr->num_sge = 1;
    wr->opcode = opcode;
    wr->send_flags = IBV_SEND_SIGNALED;
    return p;
}

/* fill wr (not posted) with a control SEND */
static void ctrl_wr(struct ibv_send_wr *wr, struct ibv_sge *sge, int type,
                    uint64_t val, uint64_t k, int kind, int last)
{
    struct vc_ctrl c;
    uint8_t *p = ctrl_buf_wr(wr, sge, sizeof(c), IBV_WR_SEND_WITH_IMM, k,
                             kind, IBV_WC_SEND, last);
    int i;

    memset(&c, 0, sizeof(c));
    c.magic = VC_MAGIC;
    c.type = type;
    c.val = val;
    for (i = 0; i < NCTR; i++) {
        c.ctr[i] = g.pred[i];
    }
    memcpy(p, &c, sizeof(c));
    wr->imm_data = htobe32(CTRL_IMM | type);
    set_ud(wr);
}

static void post_ctrl(int type, uint64_t val, int kind)
{
    struct ibv_send_wr wr;
    struct ibv_sge sge;

    ctrl_wr(&wr, &sge, type, val, 0, kind, 0);
    post_wrs(&wr, "control");
}

static int sq_room(int n)
{
    return g.sq_head - g.sq_tail + n <= (uint64_t)g.sq_depth &&
           g.ctrl_out + n <= g.nctrl;
}

static int can_post_msg(void)
{
    if (g.stopping || g.peer_gone) {
        return 0;
    }
    if (g.count && g.next_k >= g.count) {
        return 0;
    }
    if (g.next_k - g.done_k >= (uint64_t)cfg.depth) {
        return 0;
    }
    if (g.has_recv_ops && g.next_k >= g.peer_ack + cfg.depth) {
        return 0;
    }
    if (cfg.mode == MODE_UD && !g.ah) {
        return 0;
    }
    return sq_room(3);
}

static void corrupt_byte(struct slot *s, uint32_t o)
{
    int j;

    for (j = 0; j < s->nparts; j++) {
        if (o < s->part[j].len) {
            s->part[j].p[o] ^= 0xff;
            return;
        }
        o -= s->part[j].len;
    }
}

static const char *const mutant_names[] = {
    "data", "imm", "len", "opcode", "guard-before", "guard-after",
    "guard-far",
};

/* Message m can carry the --mutate kind asked for. */
static int mutable(const struct msg *m)
{
    switch (cfg.mutate) {
    case MUT_IMM:
        return m->op == OP_SEND_IMM || m->op == OP_WRITE_IMM;
    case MUT_LEN:
        return (m->op == OP_SEND || m->op == OP_SEND_IMM) && m->size > 0;
    case MUT_OPCODE:
        return m->op == OP_SEND;
    case MUT_GUARD_BEFORE:
    case MUT_GUARD_AFTER:
        return m->op == OP_WRITE && m->size > 0;
    case MUT_GUARD_FAR:
        /* far from the data: past the 4 KiB checked before */
        return m->op == OP_WRITE && m->size + 4096 < g.cap;
    default:
        return m->size > 0 || m->op == OP_READ;
    }
}

/*
 * Message k (w, its data in slot s) goes out wrong as --mutate says, as a
 * faulty device could deliver it; this side's own completion stays as
 * expected.  The bytes a write takes in addition are not the guard value.
 */
static void mutate(struct ibv_send_wr *w, const struct msg *m, uint64_t k)
{
    struct ibv_sge *first = &w->sg_list[0];
    struct ibv_sge *last = &w->sg_list[w->num_sge - 1];

    switch (cfg.mutate) {
    case MUT_IMM:
        w->imm_data = htobe32(m->imm ^ 1);
        break;
    case MUT_LEN:
        last->length--;
        break;
    case MUT_OPCODE:
        w->opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
        w->imm_data = htobe32(m->imm);
        w->wr.rdma.remote_addr = g.peer_raddr + (k % cfg.depth) * g.wstride +
                                 m->woff;
        w->wr.rdma.rkey = g.peer_rkey;
        g.fifo[w->wr_id % (g.sq_depth + 1)].wc_op = IBV_WC_RDMA_WRITE;
        break;
    case MUT_GUARD_BEFORE:
        first->addr--;
        first->length++;
        *(uint8_t *)(uintptr_t)first->addr = GUARD ^ 0xff;
        w->wr.rdma.remote_addr--;
        break;
    case MUT_GUARD_AFTER:
        *(uint8_t *)(uintptr_t)(last->addr + last->length) = GUARD ^ 0xff;
        last->length++;
        break;
    }
}

/* One message being posted: its slot, parameters and work requests */
struct post {
    uint64_t k;
    struct slot *s;
    struct msg m;
    struct ibv_send_wr wr[3], *w;   /* w: the message's own request */
    struct ibv_sge sge[MAX_SGES], xsge[2];
    int corrupt;
};

/* The slot's buffers as the message's SGEs, cut as msg_params() says */
static void post_parts(struct post *p)
{
    struct slot *s = p->s;

    s->k = p->k;
    s->op = p->m.op;
    s->size = p->m.size;
    s->nparts = 0;
    for (int j = 0; j < g.nsg; j++) {
        uint32_t len = p->m.cut[j + 1] - p->m.cut[j];

        if (!len) {
            continue;
        }
        s->part[s->nparts].p = s->reg[j] + p->m.misalign[j];
        s->part[s->nparts].len = len;
        s->part[s->nparts].lkey = s->reg_lkey[j];
        s->part_off[s->nparts] = p->m.cut[j];
        p->sge[s->nparts].addr = (uintptr_t)s->part[s->nparts].p;
        p->sge[s->nparts].length = len;
        p->sge[s->nparts].lkey = s->reg_lkey[j];
        s->nparts++;
    }
}

/* --corrupt: the first message from that number on that can be spoilt */
static int post_corrupt_now(const struct post *p)
{
    if (cfg.corrupt < 0 || g.corrupt_done || p->k < (uint64_t)cfg.corrupt ||
        !mutable(&p->m)) {
        return 0;
    }
    g.corrupt_done = 1;
    fprintf(stderr, "verbs-check: corrupting message %" PRIu64
            " (%s, %u bytes%s%s)\n", p->k, op_names[p->m.op], p->m.size,
            cfg.mutate ? ", mutant " : "",
            cfg.mutate ? mutant_names[cfg.mutate] : "");
    return 1;
}

/*
 * An extra request ahead of the message's own (a mutant's): wr[0], the
 * message's then goes in wr[1].
 */
static uint8_t *post_extra(struct post *p, uint32_t len,
                           enum ibv_wr_opcode op, enum ibv_wc_opcode wc)
{
    uint8_t *buf = ctrl_buf_wr(p->w, &p->xsge[0], len, op, p->k, K_EXTRA,
                               wc, 0);

    p->w->next = &p->wr[1];
    return buf;
}

/* The local buffers before the post: the pattern to send, the guards */
static void post_payload(struct post *p)
{
    struct slot *s = p->s;

    switch (p->m.op) {
    case OP_SEND:
    case OP_SEND_IMM:
    case OP_WRITE:
    case OP_WRITE_IMM:
        for (int j = 0; j < s->nparts; j++) {
            pat_fill(s->part[j].p, s->part[j].len, p->m.key,
                     s->part_off[j]);
        }
        if (p->corrupt && cfg.mutate == MUT_DATA) {
            corrupt_byte(s, p->m.size / 2);
        }
        if (p->corrupt && cfg.mutate == MUT_GUARD_FAR) {
            /* first, one byte at the last of the slot's data range */
            uint8_t *b = post_extra(p, 1, IBV_WR_RDMA_WRITE,
                                    IBV_WC_RDMA_WRITE);

            *b = GUARD ^ 0xff;
            p->w->wr.rdma.remote_addr = g.peer_raddr +
                                        (p->k % cfg.depth) * g.wstride +
                                        p->m.woff + g.cap - 1;
            p->w->wr.rdma.rkey = g.peer_rkey;
            p->w = &p->wr[1];
        }
        break;
    case OP_READ:
        for (int j = 0; j < s->nparts; j++) {
            memset(s->part[j].p - PAD, GUARD, s->part[j].len + 2 * PAD);
        }
        break;
    default:
        memset(s->atom, GUARD, 8);
        break;
    }
}

/* SEND, WRITE and their _WITH_IMM */
static void post_wr_data(struct post *p)
{
    struct ibv_send_wr *w = p->w;

    if (p->m.op == OP_SEND || p->m.op == OP_SEND_IMM) {
        w->opcode = p->m.op == OP_SEND ? IBV_WR_SEND : IBV_WR_SEND_WITH_IMM;
        w->imm_data = htobe32(p->m.imm);
        w->wr_id = sq_push(p->k, K_MSG, IBV_WC_SEND, 1);
        set_ud(w);
        return;
    }
    w->opcode = p->m.op == OP_WRITE ? IBV_WR_RDMA_WRITE :
                IBV_WR_RDMA_WRITE_WITH_IMM;
    w->imm_data = htobe32(p->m.imm);
    w->wr.rdma.remote_addr = g.peer_raddr + (p->k % cfg.depth) * g.wstride +
                             p->m.woff;
    w->wr.rdma.rkey = g.peer_rkey;
    w->wr_id = sq_push(p->k, K_MSG, IBV_WC_RDMA_WRITE,
                       p->m.op == OP_WRITE_IMM);
}

static void post_wr_read(struct post *p)
{
    uint64_t remote = g.peer_raddr;

    if (p->corrupt) {
        /* overwrite one byte of the peer's read source first */
        uint64_t o = p->m.roff + p->m.size / 2;
        uint8_t *b = post_extra(p, 1, IBV_WR_RDMA_WRITE, IBV_WC_RDMA_WRITE);

        *b = pat_byte(pkey_of(!g.mydir, 0, 6), o) ^ 0xff;
        p->w->wr.rdma.remote_addr = remote + g.rsrc_off + o;
        p->w->wr.rdma.rkey = g.peer_rkey;
        p->w = &p->wr[1];
    }
    p->w->opcode = IBV_WR_RDMA_READ;
    p->w->wr.rdma.remote_addr = remote + g.rsrc_off + p->m.roff;
    p->w->wr.rdma.rkey = g.peer_rkey;
    p->w->wr_id = sq_push(p->k, K_MSG, IBV_WC_RDMA_READ, 1);
    p->s->roff = p->m.roff;
}

/* Fetch-and-add and compare-and-swap on the peer's counter m.ctr */
static void post_wr_atomic(struct post *p)
{
    struct slot *s = p->s;
    const struct msg *m = &p->m;
    uint64_t remote = g.peer_raddr + g.ctr_off + 8 * m->ctr;
    struct ibv_send_wr *w;

    s->ctr = m->ctr;
    if (p->corrupt) {
        /* an unannounced fetch-and-add on the same counter first */
        post_extra(p, 8, IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WC_FETCH_ADD);
        p->w->wr.atomic.remote_addr = remote;
        p->w->wr.atomic.rkey = g.peer_rkey;
        p->w->wr.atomic.compare_add = 1;
        p->w = &p->wr[1];
    }
    w = p->w;
    p->sge[0].addr = (uintptr_t)s->atom;
    p->sge[0].length = 8;
    p->sge[0].lkey = s->atom_lkey;
    w->wr.atomic.remote_addr = remote;
    w->wr.atomic.rkey = g.peer_rkey;
    s->expect_old = g.pred[m->ctr];
    if (m->op == OP_FAA) {
        w->opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
        w->wr.atomic.compare_add = m->add;
        g.pred[m->ctr] += m->add;
        w->wr_id = sq_push(p->k, K_MSG, IBV_WC_FETCH_ADD, 1);
    } else {
        uint64_t cmp = m->cas_match ? g.pred[m->ctr] :
                       g.pred[m->ctr] ^ m->miss;

        w->opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
        w->wr.atomic.compare_add = cmp;
        w->wr.atomic.swap = m->swap;
        if (cmp == g.pred[m->ctr]) {
            g.pred[m->ctr] = m->swap;
        }
        w->wr_id = sq_push(p->k, K_MSG, IBV_WC_COMP_SWAP, 1);
    }
    s->nparts = 1;
}

static void post_msg(void)
{
    struct post p = { .k = g.next_k };

    p.s = &g.slots[p.k % cfg.depth];
    msg_params(g.mydir, p.k, &p.m);
    post_parts(&p);
    p.corrupt = post_corrupt_now(&p);
    p.w = &p.wr[0];
    post_payload(&p);
    switch (p.m.op) {
    case OP_SEND:
    case OP_SEND_IMM:
    case OP_WRITE:
    case OP_WRITE_IMM:
        post_wr_data(&p);
        break;
    case OP_READ:
        post_wr_read(&p);
        break;
    default:
        post_wr_atomic(&p);
        break;
    }
    p.w->sg_list = p.sge;
    p.w->num_sge = p.s->nparts;
    p.w->send_flags = IBV_SEND_SIGNALED;
    if (p.corrupt && cfg.mutate != MUT_DATA && cfg.mutate != MUT_GUARD_FAR) {
        mutate(p.w, &p.m, p.k);
    }
    if (p.m.op == OP_WRITE) {
        p.w->next = &p.wr[2];
        ctrl_wr(&p.wr[2], &p.xsge[1], CT_ANNOUNCE, p.k, p.k, K_ANN, 1);
    }
    post_wrs(&p.wr[0], op_names[p.m.op]);
    g.next_k++;
}

static void post_readback(void)
{
    struct slot *s = &g.slots[0];
    struct ibv_send_wr wr;
    struct ibv_sge sge;

    memset(s->reg[0], GUARD, NCTR * 8);
    sge.addr = (uintptr_t)s->reg[0];
    sge.length = NCTR * 8;
    sge.lkey = s->reg_lkey[0];
    memset(&wr, 0, sizeof(wr));
    wr.opcode = IBV_WR_RDMA_READ;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.wr.rdma.remote_addr = g.peer_raddr + g.ctr_off;
    wr.wr.rdma.rkey = g.peer_rkey;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr_id = sq_push(0, K_RB, IBV_WC_RDMA_READ, 0);
    post_wrs(&wr, "counter read-back");
    g.rb_posted = 1;
}

static void maybe_ack(int force)
{
    if (!g.has_recv_ops || g.peer_fin || g.peer_gone ||
        g.acks_out >= MAX_ACKS_OUT || !sq_room(1) ||
        (cfg.mode == MODE_UD && !g.ah)) {
        return;
    }
    if (g.e == g.ack_sent && !(force == 2)) {
        return;
    }
    if (!force && g.e - g.ack_sent < (uint64_t)(cfg.depth + 3) / 4) {
        return;
    }
    post_ctrl(CT_ACK, g.e, K_ACK);
    g.acks_out++;
    g.ack_sent = g.e;
    g.last_ack_time = now();
}

/* post what can be posted; returns the number of WRs posted */
static int post_work(void)
{
    uint64_t before = g.sq_head;

    while (can_post_msg()) {
        post_msg();
    }
    if (!g.stopping && g.count && g.next_k >= g.count) {
        g.stopping = 1;
    }
    if (!g.stopping && g.deadline && now() >= g.deadline) {
        vlog("time is up after %" PRIu64 " messages", g.next_k);
        g.stopping = 1;
    }
    if (!g.stopping && g.count == 0 && cfg.server && g.peer_fin) {
        g.stopping = 1;
    }
    if (g.stopping && g.done_k == g.next_k && !g.peer_gone) {
        if (g.need_rb && !g.rb_posted && sq_room(1)) {
            post_readback();
        } else if ((!g.need_rb || g.rb_done) && !g.fin_posted &&
                   sq_room(1) && (cfg.mode != MODE_UD || g.ah)) {
            post_ctrl(CT_FIN, g.next_k, K_FIN);
            g.fin_posted = 1;
        }
    }
    maybe_ack(0);
    return g.sq_head - before;
}

/* ---------------------------------------------------------- completion */

static const char *wc_op_name(int op)
{
    switch (op) {
    case IBV_WC_SEND: return "SEND";
    case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
    case IBV_WC_RDMA_READ: return "RDMA_READ";
    case IBV_WC_COMP_SWAP: return "COMP_SWAP";
    case IBV_WC_FETCH_ADD: return "FETCH_ADD";
    case IBV_WC_RECV: return "RECV";
    case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
    default: return "?";
    }
}

/*
 * An error CQE that the peer's going away explains (a flush, retries run
 * out): true if the peer disconnected, or does within a second.
 */
static int peer_gone_now(const struct ibv_wc *wc)
{
    struct pollfd pfd = { .fd = g.ch->fd, .events = POLLIN };
    struct rdma_cm_event *ev;
    double end = now() + 1;

    if (wc->status != IBV_WC_WR_FLUSH_ERR &&
        wc->status != IBV_WC_RETRY_EXC_ERR &&
        wc->status != IBV_WC_RNR_RETRY_EXC_ERR) {
        return 0;
    }
    while (!g.peer_gone && cfg.mode != MODE_UD && now() < end) {
        if (poll(&pfd, 1, 100) > 0 && !rdma_get_cm_event(g.ch, &ev)) {
            if (ev->event == RDMA_CM_EVENT_DISCONNECTED) {
                g.peer_gone = 1;
            }
            rdma_ack_cm_event(ev);
        }
    }
    return g.peer_gone;
}

/* an error CQE: the peer's going away explains flushes and retries */
static void bad_wc(const struct ibv_wc *wc, const char *what)
{
    if (peer_gone_now(wc)) {
        die(EX_SETUP, "peer disconnected before the end (%s completion: %s)",
            what, ibv_wc_status_str(wc->status));
    }
    fflush(stdout);
    fprintf(stderr, "verbs-check: FAILED completion: %s status=%d (%s) "
            "opcode=%s wr_id=0x%" PRIx64 " vendor_err=0x%x\n", what,
            wc->status, ibv_wc_status_str(wc->status),
            wc_op_name(wc->opcode), (uint64_t)wc->wr_id, wc->vendor_err);
    counters(stderr);
    exit(EX_CHECK);
}

static void check_read(struct slot *s)
{
    struct chk c;
    int j;

    for (j = 0; j < s->nparts; j++) {
        struct sg v = { s->part[j].p - PAD, s->part[j].len + 2 * PAD, 0 };

        c = (struct chk) {
            .what = "local read buffer", .op = OP_READ, .dir = g.mydir,
            .k = s->k, .size = s->size, .sg = &v, .nsg = 1,
            .d0 = PAD, .d1 = PAD + s->part[j].len,
            .key = pkey_of(!g.mydir, 0, 6),
            .pbase = s->roff + s->part_off[j], .rel0 = s->part_off[j],
        };
        chk_run(&c, 0, v.len);
    }
}

static void on_send_wc(const struct ibv_wc *wc)
{
    uint64_t seq = g.sq_tail;
    struct sqe *e = &g.fifo[seq % (g.sq_depth + 1)];
    struct slot *s;
    char what[64];
    uint64_t v;
    int i;

    if (g.sq_tail == g.sq_head) {
        die(EX_CHECK, "send completion wr_id=0x%" PRIx64 " with no WR "
            "outstanding", (uint64_t)wc->wr_id);
    }
    snprintf(what, sizeof(what), "send queue (msg %" PRIu64 ", kind %d)",
             e->k, e->kind);
    if (wc->status != IBV_WC_SUCCESS && e->kind == K_ACK &&
        (g.fin_done || g.peer_gone) && wc->wr_id == seq) {
        /* an ACK after our FIN: the peer may have finished and gone */
        g.sq_tail++;
        g.acks_out--;
        g.ctrl_out--;
        return;
    }
    if (wc->status != IBV_WC_SUCCESS && e->kind == K_FIN && g.peer_fin &&
        wc->wr_id == seq && peer_gone_now(wc)) {
        /*
         * The peer sent its FIN (everything of it is verified here) and
         * then disconnected: it ends only once it has our FIN, or with an
         * error it reports itself.  Its ACK of our FIN lost the race with
         * its disconnect (a switch that holds frames back): nothing of
         * this side's checks is missing.
         */
        vlog("the peer finished and left before our FIN's completion");
        g.sq_tail++;
        g.ctrl_out--;
        g.fin_done = 1;
        return;
    }
    if (wc->status != IBV_WC_SUCCESS) {
        bad_wc(wc, what);
    }
    if (wc->wr_id != seq) {
        die(EX_CHECK, "send completion wr_id %" PRIu64 ", expected %"
            PRIu64 " (out of order or duplicated)", (uint64_t)wc->wr_id,
            seq);
    }
    if ((int)wc->opcode != e->wc_op) {
        die(EX_CHECK, "%s: completion opcode %s, expected %s", what,
            wc_op_name(wc->opcode), wc_op_name(e->wc_op));
    }
    g.sq_tail++;
    if (e->kind != K_ACK) {
        g.last_progress = now();
    }
    switch (e->kind) {
    case K_ACK:
        g.acks_out--;
        g.ctrl_out--;
        return;
    case K_FIN:
        g.ctrl_out--;
        g.fin_done = 1;
        return;
    case K_EXTRA:
        g.ctrl_out--;
        return;
    case K_RB:
        for (i = 0; i < NCTR; i++) {
            memcpy(&v, g.slots[0].reg[0] + 8 * i, 8);
            if (v != g.pred[i]) {
                die(EX_CHECK, "op=atomic counter %d of the peer reads "
                    "0x%016" PRIx64 " at the end, expected 0x%016" PRIx64,
                    i, v, g.pred[i]);
            }
        }
        g.rb_done = 1;
        return;
    case K_ANN:
        g.ctrl_out--;
        break;
    default:
        break;
    }
    if (!e->last) {
        return;
    }
    s = &g.slots[e->k % cfg.depth];
    if (e->k != g.done_k || s->k != e->k) {
        die(EX_CHECK, "message %" PRIu64 " completed, expected %" PRIu64,
            e->k, g.done_k);
    }
    if (s->op == OP_READ) {
        check_read(s);
    } else if (s->op == OP_CAS || s->op == OP_FAA) {
        memcpy(&v, s->atom, 8);
        if (v != s->expect_old) {
            char dn[8];

            dir_name(g.mydir, dn);
            die(EX_CHECK, "op=%s dir=%s msg=%" PRIu64 " counter=%d "
                "returned old value 0x%016" PRIx64 ", expected 0x%016"
                PRIx64, op_names[s->op], dn, s->k, s->ctr, v,
                s->expect_old);
        }
    }
    g.n_op[s->op]++;
    g.bytes += s->size;
    g.done_k++;
}

static void check_write_slot(uint64_t k, const struct msg *m)
{
    struct sg v = { g.R + (k % cfg.depth) * g.wstride, g.wstride, 0 };
    struct chk c = {
        .what = "write target", .op = m->op, .dir = !g.mydir, .k = k,
        .size = m->size, .sg = &v, .nsg = 1, .d0 = m->woff,
        .d1 = m->woff + m->size, .key = m->key, .pbase = 0, .rel0 = 0,
    };
    /* the whole slot: the guard before, the data, all the rest after */
    chk_run(&c, 0, v.len);
    memset(v.p + c.d0, GUARD, m->size);
}

static void check_recv_guard(const struct rslot *r, int first,
                             const struct chk *c0)
{
    int j;

    /* the guard bytes around every piece of the receive buffer */
    for (j = first; j < r->npieces; j++) {
        struct sg v[2] = {
            { r->piece[j].p - PAD, PAD, 0 },
            { r->piece[j].p + r->piece[j].len, PAD, 0 },
        };
        struct chk c = *c0;

        c.what = "receive buffer surroundings";
        c.sg = v;
        c.nsg = 2;
        c.d0 = c.d1 = 2 * PAD;
        chk_run(&c, 0, 2 * PAD);
    }
}

static void peer_done_check(void)
{
    skip_peer();
    if (g.e < g.peer_n) {
        struct msg m;

        msg_params(!g.mydir, g.e, &m);
        die(EX_CHECK, "peer finished after %" PRIu64 " messages but its "
            "message %" PRIu64 " (%s, %u bytes) never arrived", g.peer_n,
            g.e, op_names[m.op], m.size);
    }
    g.e = g.peer_n;
}

static void on_ctrl(const struct ibv_wc *wc, struct rslot *r, int first,
                    uint32_t imm)
{
    struct vc_ctrl c;
    uint32_t hdr = cfg.mode == MODE_UD ? GRH_LEN : 0;
    uint64_t v;
    int i;

    if (wc->opcode != IBV_WC_RECV ||
        wc->byte_len != hdr + sizeof(c)) {
        die(EX_CHECK, "control message (imm 0x%08x): opcode %s byte_len "
            "%u, expected RECV and %zu", imm, wc_op_name(wc->opcode),
            wc->byte_len, hdr + sizeof(c));
    }
    sg_copy_out(r->piece + first, r->npieces - first, &c, sizeof(c));
    sg_guard(r->piece + first, r->npieces - first, 0, sizeof(c));
    if (c.magic != VC_MAGIC || c.type != (imm & 0xff)) {
        die(EX_CHECK, "control message: bad magic 0x%08x or type %u "
            "(imm 0x%08x)", c.magic, c.type, imm);
    }
    switch (c.type) {
    case CT_ACK:
        if (c.val < g.peer_ack) {
            die(EX_CHECK, "peer's ACK went back from %" PRIu64 " to %"
                PRIu64, g.peer_ack, c.val);
        }
        g.peer_ack = c.val;
        break;
    case CT_ANNOUNCE: {
        struct msg m;

        skip_peer();
        msg_params(!g.mydir, g.e, &m);
        if (c.val != g.e || m.op != OP_WRITE) {
            die(EX_CHECK, "peer announced write %" PRIu64 ", expected "
                "message %" PRIu64 " (%s)", c.val, g.e, op_names[m.op]);
        }
        check_write_slot(g.e, &m);
        g.nrecv++;
        g.rbytes += m.size;
        g.e++;
        skip_peer();
        break;
    }
    case CT_FIN:
        if (g.peer_fin) {
            die(EX_CHECK, "second FIN from the peer");
        }
        g.peer_fin = 1;
        g.peer_n = c.val;
        peer_done_check();
        if ((cfg.ops & OPS_ATOMIC) && cfg.mode != MODE_UD) {
            for (i = 0; i < NCTR; i++) {
                memcpy(&v, g.R + g.ctr_off + 8 * i, 8);
                if (v != c.ctr[i]) {
                    die(EX_CHECK, "op=atomic our counter %d is 0x%016"
                        PRIx64 " after the peer's %" PRIu64 " messages, "
                        "its atomics predict 0x%016" PRIx64, i, v,
                        g.peer_n, c.ctr[i]);
                }
            }
        }
        vlog("peer FIN after %" PRIu64 " messages", g.peer_n);
        break;
    default:
        die(EX_CHECK, "unknown control message type %u", c.type);
    }
}

static void on_recv_wc(struct ibv_wc *wc)
{
    int i = wc->wr_id & 0xffff;
    uint64_t seq = (wc->wr_id & ~RECV_TAG) >> 16;
    struct rslot *r;
    int first = cfg.mode == MODE_UD;
    uint32_t hdr = first ? GRH_LEN : 0, imm = 0;
    int has_imm = (wc->wc_flags & IBV_WC_WITH_IMM) != 0;
    struct msg m;
    struct chk c;
    uint64_t cap = g.cap;

    if (wc->status != IBV_WC_SUCCESS) {
        if (g.peer_gone || (g.peer_fin && g.fin_done)) {
            return;
        }
        bad_wc(wc, "receive");
    }
    if (i >= g.nrs || !g.rs[i].posted) {
        die(EX_CHECK, "receive completion for wr_id 0x%" PRIx64
            " that is not posted", (uint64_t)wc->wr_id);
    }
    if (!g.srq && seq != g.rcomp_seq) {
        die(EX_CHECK, "receive %" PRIu64 " completed, expected %" PRIu64
            " (receives must complete in order)", seq, g.rcomp_seq);
    }
    g.rcomp_seq++;
    g.last_progress = now();
    r = &g.rs[i];
    r->posted = 0;
    if (cfg.mode == MODE_UD) {
        const uint8_t *grh = r->piece[0].p;

        if (!(wc->wc_flags & IBV_WC_GRH) ||
            ((grh[0] >> 4) != 6 && grh[20] != 0x45)) {
            die(EX_CHECK, "UD receive without a GRH (wc_flags 0x%x, "
                "bytes 0/20: %02x/%02x)", wc->wc_flags, grh[0], grh[20]);
        }
        if (!g.ah) {
            g.ah = ibv_create_ah_from_wc(g.pd, wc, (void *)grh,
                                         g.id->port_num);
            if (!g.ah) {
                die(EX_SETUP, "ibv_create_ah_from_wc: %s",
                    strerror(errno));
            }
            g.rqpn = wc->src_qp;
            g.rqkey = RDMA_UDP_QKEY;
        }
        memset(r->piece[0].p, GUARD, GRH_LEN);
    }
    if (has_imm) {
        imm = be32toh(wc->imm_data);
    }
    if (has_imm && (imm & CTRL_IMM)) {
        on_ctrl(wc, r, first, imm);
        post_recv(i);
        return;
    }
    skip_peer();
    if (g.peer_fin && g.e >= g.peer_n) {
        die(EX_CHECK, "data message after the peer's FIN");
    }
    msg_params(!g.mydir, g.e, &m);
    c = (struct chk) {
        .what = "receive buffer", .op = m.op, .dir = !g.mydir, .k = g.e,
        .size = m.size, .sg = r->piece + first, .nsg = r->npieces - first,
        .d0 = 0, .d1 = m.size, .key = m.key, .pbase = 0, .rel0 = 0,
    };
    switch (m.op) {
    case OP_SEND:
    case OP_SEND_IMM:
        if (wc->opcode != IBV_WC_RECV) {
            die(EX_CHECK, "op=%s msg=%" PRIu64 ": completion opcode %s, "
                "expected RECV", op_names[m.op], g.e,
                wc_op_name(wc->opcode));
        }
        if (has_imm != (m.op == OP_SEND_IMM) ||
            (has_imm && imm != m.imm)) {
            die(EX_CHECK, "op=%s msg=%" PRIu64 ": immediate %s0x%08x, "
                "expected %s0x%08x", op_names[m.op], g.e,
                has_imm ? "" : "(none) ", imm,
                m.op == OP_SEND_IMM ? "" : "(none) ", m.imm);
        }
        if (wc->byte_len != hdr + m.size) {
            die(EX_CHECK, "op=%s msg=%" PRIu64 ": byte_len %u, expected "
                "%u", op_names[m.op], g.e, wc->byte_len, hdr + m.size);
        }
        /* the data and all of the buffer's unused rest */
        chk_run(&c, 0, cap);
        check_recv_guard(r, first, &c);
        sg_guard(c.sg, c.nsg, 0, m.size);
        break;
    case OP_WRITE_IMM:
        if (wc->opcode != IBV_WC_RECV_RDMA_WITH_IMM || !has_imm ||
            imm != m.imm) {
            die(EX_CHECK, "op=write_imm msg=%" PRIu64 ": completion %s "
                "imm %s0x%08x, expected RECV_RDMA_WITH_IMM imm 0x%08x",
                g.e, wc_op_name(wc->opcode), has_imm ? "" : "(none) ",
                imm, m.imm);
        }
        if (wc->byte_len != m.size) {
            die(EX_CHECK, "op=write_imm msg=%" PRIu64 ": byte_len %u, "
                "expected %u (the length written)", g.e, wc->byte_len,
                m.size);
        }
        /* nothing may land in the receive buffer */
        c.what = "receive buffer (must stay untouched)";
        c.d1 = 0;
        chk_run(&c, 0, cap);
        check_recv_guard(r, first, &c);
        check_write_slot(g.e, &m);
        break;
    default:
        die(EX_CHECK, "peer's message %" PRIu64 " is a %s, but a %s "
            "(byte_len %u%s) arrived", g.e, op_names[m.op],
            wc_op_name(wc->opcode), wc->byte_len,
            has_imm ? ", with immediate" : "");
    }
    g.nrecv++;
    g.rbytes += m.size;
    g.e++;
    skip_peer();
    post_recv(i);
}

static int drain_cq(void)
{
    struct ibv_wc wc[16];
    int n, i, total = 0;

    while ((n = ibv_poll_cq(g.cq, 16, wc)) > 0) {
        for (i = 0; i < n; i++) {
            /* error CQEs need not carry a valid opcode: the wr_id says */
            if (wc[i].wr_id & RECV_TAG) {
                on_recv_wc(&wc[i]);
            } else {
                on_send_wc(&wc[i]);
            }
        }
        total += n;
    }
    if (n < 0) {
        die(EX_SETUP, "ibv_poll_cq failed");
    }
    return total;
}

static int finished(void)
{
    return g.fin_done && g.peer_fin;
}

static void cm_poll(void)
{
    struct rdma_cm_event *ev;

    while (!rdma_get_cm_event(g.ch, &ev)) {
        if (ev->event == RDMA_CM_EVENT_DISCONNECTED ||
            ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL ||
            ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT) {
            vlog("rdma_cm: %s", rdma_event_str(ev->event));
            if (ev->event != RDMA_CM_EVENT_TIMEWAIT_EXIT) {
                g.peer_gone = 1;
            }
        }
        rdma_ack_cm_event(ev);
    }
}

static void run(void)
{
    struct pollfd pfd[2];
    double last_report = now();

    fcntl(g.ch->fd, F_SETFL, fcntl(g.ch->fd, F_GETFL) | O_NONBLOCK);
    g.t_start = g.last_progress = g.last_ack_time = now();
    if (!cfg.server && cfg.duration) {
        g.deadline = g.t_start + cfg.duration;
    }
    pfd[0].fd = g.cc->fd;
    pfd[0].events = POLLIN;
    pfd[1].fd = g.ch->fd;
    pfd[1].events = POLLIN;
    while (!finished()) {
        int got = drain_cq();
        int posted = post_work();
        double t;

        if (finished()) {
            break;
        }
        if (got || posted) {
            continue;
        }
        /* idle: make sure the peer is not waiting for our ACK */
        maybe_ack(1);
        t = now();
        if (cfg.mode == MODE_UD && t - g.last_ack_time > 0.2) {
            maybe_ack(2);
        }
        if (ibv_req_notify_cq(g.cq, 0)) {
            die(EX_SETUP, "ibv_req_notify_cq failed");
        }
        if (drain_cq()) {
            continue;
        }
        if (g.peer_gone && g.fin_posted && g.peer_fin) {
            /* as above: the peer had our FIN before it left */
            vlog("the peer finished and left before our FIN's completion");
            g.fin_done = 1;
            break;
        }
        if (g.peer_gone) {
            die(EX_SETUP, "peer disconnected before the end");
        }
        if (t - g.last_progress > cfg.timeout) {
            fflush(stdout);
            fprintf(stderr, "verbs-check: error: no completion for %d s\n",
                    cfg.timeout);
            counters(stderr);
            exit(EX_TIMEOUT);
        }
        if (cfg.verbose && t - last_report >= 2) {
            last_report = t;
            counters(stderr);
        }
        if (poll(pfd, 2, 100) < 0 && errno != EINTR) {
            die(EX_SETUP, "poll: %s", strerror(errno));
        }
        if (pfd[0].revents & POLLIN) {
            struct ibv_cq *cq;
            void *cqctx;

            if (!ibv_get_cq_event(g.cc, &cq, &cqctx)) {
                ibv_ack_cq_events(cq, 1);
            }
        }
        if (pfd[1].revents & POLLIN) {
            cm_poll();
        }
    }
}

int main(int argc, char **argv)
{
    double secs;
    int i;

    setvbuf(stdout, NULL, _IOLBF, 0);
    parse_args(argc, argv);
    g.ch = rdma_create_event_channel();
    if (!g.ch) {
        die(EX_SETUP, "rdma_create_event_channel: %s (no RDMA device or "
            "rdma_ucm not loaded?)", strerror(errno));
    }
    if (cfg.server) {
        run_server();
    } else {
        run_client();
    }
    vlog("connected: %s on %s port %d, path MTU %u, qpn 0x%x, %s mode, "
         "%" PRIu64 " messages%s, ops:", cfg.server ? "server" : "client",
         ibv_get_device_name(g.ctx->device), g.id->port_num, g.mtu,
         g.qp->qp_num, mode_names[cfg.mode], g.count,
         g.count ? "" : " (time mode)");
    if (cfg.verbose) {
        fprintf(stderr, "verbs-check: ops");
        for (i = 0; i < cfg.nops; i++) {
            fprintf(stderr, " %s", op_names[cfg.op_list[i]]);
        }
        fprintf(stderr, "\nverbs-check: sizes");
        for (i = 0; i < g.nsizes; i++) {
            fprintf(stderr, " %u", g.sizes[i]);
        }
        fprintf(stderr, "\n");
    }
    if (cfg.mode != MODE_UD) {
        struct ibv_qp_attr qa;
        struct ibv_qp_init_attr qi;

        if (!ibv_query_qp(g.qp, &qa, IBV_QP_PATH_MTU, &qi) &&
            (128u << qa.path_mtu) != g.mtu) {
            fprintf(stderr, "verbs-check: note: QP path MTU %u, sizes "
                    "built for %u\n", 128u << qa.path_mtu, g.mtu);
        }
    }
    run();
    secs = now() - g.t_start;
    if (cfg.mode != MODE_UD) {
        rdma_disconnect(g.id);
    }
    vlog("done in %.2f s", secs);
    printf("verbs-check: ok mode=%s dev=%s mtu=%u msgs=%" PRIu64 " bytes=%"
           PRIu64, mode_names[cfg.mode],
           ibv_get_device_name(g.ctx->device), g.mtu, g.next_k, g.bytes);
    for (i = 0; i < NOPS; i++) {
        printf(" %s=%" PRIu64, op_names[i], g.n_op[i]);
    }
    printf(" recv=%" PRIu64 " rbytes=%" PRIu64 " secs=%.1f errors=0\n",
           g.nrecv, g.rbytes, secs);
    return EX_OK;
}
