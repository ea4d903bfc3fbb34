/*
 * fuzz-roce-rx: the guest side of the target: work requests posted on
 * the QPs' rings, the QPs' states (created, connected, modified, destroyed
 * and created again) and the MRs (deregistered, the FRMR invalidated and
 * registered again), as the input asks.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "fuzz-roce-rx.h"

/* ------------------------------------------------------------------ */
/* Guest side                                                          */

Wr *new_wr(uint8_t qi, bool recv, uint32_t opcode, uint32_t len,
                  uint64_t *wr_id)
{
    Wr *w;

    if (f.nwr >= MAX_WR) {
        return NULL;
    }
    w = &f.wr[f.nwr];
    *w = (Wr) { .qi = qi, .handle = f.q[qi].qp.handle, .recv = recv,
                .opcode = opcode, .len = len };
    *wr_id = WR_BASE + f.nwr++;
    return w;
}

bool ring_room(Fq *q, bool recv)
{
    struct pvrdma_ring *r = &qp_rings(&f.d, &q->qp)[recv];
    uint32_t n = recv ? q->qp.recv_wr : q->qp.send_wr;
    uint32_t prod = recv ? q->qp.rq_prod : q->qp.sq_prod;

    return pvrdma_idx_used(prod, r->cons_head, n) < n;
}

/* An SGE into the MR (or a bad one) for len bytes; mode picks which. */
static struct pvrdma_sge make_sge(uint8_t mode, uint16_t off, uint32_t len)
{
    uint64_t room = MR_LEN > len ? MR_LEN - len : 0;
    struct pvrdma_sge s = { MR_IOVA + (room ? off % (room + 1) : 0), len,
                            f.mr.lkey };

    switch (mode & 7) {
    case 5:
        s.lkey ^= 0x10;                 /* another handle */
        break;
    case 6:
        s.addr = MR_IOVA + MR_LEN - len / 2;    /* runs past the end */
        break;
    case 7:
        if (f.fr_key) {
            s.lkey = f.fr_key;
            s.addr = FR_IOVA + off % (FR_LEN > len ? FR_LEN - len + 1 : 1);
        }
        break;
    }
    return s;
}

void post_recv_op(Input *in)
{
    uint8_t sel = get(in, 1), mode = get(in, 1), lb = get(in, 1);
    uint16_t off = get(in, 2);
    Fq *q = &f.q[sel % NQP];
    uint32_t len = lb < 0xc0 ? lb * 16 : (lb - 0xc0) * 256;
    struct pvrdma_sge s[2];
    uint32_t nsge = mode >> 6;
    uint64_t wr_id;
    uint32_t total = 0;

    if (!q->exists || !ring_room(q, true)) {
        return;
    }
    if (q->type != PVRDMA_QPT_RC) {
        len += 40;                      /* the GRH */
    }
    nsge = MIN(nsge, 2);
    s[0] = make_sge(mode, off, nsge == 2 ? len / 2 : len);
    s[1] = make_sge(mode >> 3, off + len, len - len / 2);
    for (uint32_t i = 0; i < nsge; i++) {
        total += s[i].length;
    }
    if (!new_wr(sel % NQP, true, 0, total, &wr_id)) {
        return;
    }
    LOG("recv on %u: %u sges, %u bytes\n", sel % NQP, nsge, total);
    post_recv(&f.d, &q->qp, wr_id, s, nsge);
    service();
}

static const uint32_t send_ops[] = {
    PVRDMA_WR_SEND, PVRDMA_WR_SEND_WITH_IMM, PVRDMA_WR_SEND_WITH_INV,
    PVRDMA_WR_RDMA_WRITE, PVRDMA_WR_RDMA_WRITE_WITH_IMM, PVRDMA_WR_RDMA_READ,
    PVRDMA_WR_ATOMIC_CMP_AND_SWP, PVRDMA_WR_ATOMIC_FETCH_AND_ADD,
    PVRDMA_WR_SEND, PVRDMA_WR_RDMA_READ, PVRDMA_WR_LOCAL_INV, 99,
};

void post_send_op(Input *in)
{
    uint8_t sel = get(in, 1), opi = get(in, 1), lb = get(in, 1);
    uint8_t mode = get(in, 1), flags = get(in, 1), dst = get(in, 1);
    uint16_t off = get(in, 2);
    Fq *q = &f.q[sel % NQP];
    uint32_t op = send_ops[opi % G_N_ELEMENTS(send_ops)];
    uint32_t len = lb < 0x80 ? lb * 8 : (lb - 0x80) * 64;
    bool atomic = op == PVRDMA_WR_ATOMIC_CMP_AND_SWP ||
                  op == PVRDMA_WR_ATOMIC_FETCH_AND_ADD;
    struct pvrdma_sq_wqe_hdr w = { 0 };
    struct pvrdma_sge s[2];
    uint32_t nsge = 1;
    uint64_t wr_id;

    if (!q->exists || !ring_room(q, false)) {
        return;
    }
    if (atomic && !(mode & 0x40)) {
        len = 8;
        off &= ~7;
    }
    if (q->type != PVRDMA_QPT_RC && !(mode & 0x40)) {
        len = MIN(len, 2048u);
    }
    if ((mode & 0x80) && len >= 2) {
        nsge = 2;
        s[0] = make_sge(mode, off, len / 2);
        s[1] = make_sge(mode >> 3, off + 4096, len - len / 2);
    } else {
        s[0] = make_sge(mode, off, len);
    }
    if (!len && (mode & 0x40)) {
        nsge = 0;
    }
    w.opcode = op;
    w.send_flags = (flags & 1 ? 0 : PVRDMA_SEND_SIGNALED) |
                   (flags & 2 ? PVRDMA_SEND_SOLICITED : 0) |
                   (flags & 4 ? PVRDMA_SEND_FENCE : 0);
    w.ex.imm_data = op == PVRDMA_WR_SEND_WITH_INV ||
                    op == PVRDMA_WR_LOCAL_INV ?
                    (flags & 8 ? f.fr_key : f.mr.rkey) : 0x01020304u * dst;
    if (q->type == PVRDMA_QPT_RC) {
        if (atomic) {
            w.wr.atomic.remote_addr = 0x10000 + dst * 8;
            w.wr.atomic.rkey = 0x4242;
            w.wr.atomic.compare_add = flags >> 4;
            w.wr.atomic.swap = dst;
        } else {
            w.wr.rdma.remote_addr = 0x20000 + dst;
            w.wr.rdma.rkey = 0x4343;
        }
    } else {
        unsigned c = dst & 1;

        w.wr.ud.remote_qpn = dst & 2 ? 1 : peer_qpn[c];
        w.wr.ud.remote_qkey = dst & 4 ? 0x80000000u : UD_QKEY;
        w.wr.ud.av.port_pd = 1 << 24;
        /* our GID of that family, the other one, or an empty entry */
        w.wr.ud.av.gid_index = (dst & 8) && (flags & 0x10) ? 2 :
                               dst & 8 ? !c : c;
        w.wr.ud.av.hop_limit = 64;
        /* to ourselves (loopback) now and then */
        memcpy(w.wr.ud.av.dgid, dst & 16 ? our_gid[c] : peer_gid[c], 16);
        memcpy(w.wr.ud.av.dmac, peer_mac, 6);
        if (dst & 16) {
            w.wr.ud.remote_qpn = dst & 2 ? 1 : f.q[UDQ].qp.qpn;
        }
    }
    if (!new_wr(sel % NQP, false, op, 0, &wr_id)) {
        return;
    }
    w.wr_id = wr_id;
    LOG("send on %u: opcode %u, %u sges, %u bytes\n", sel % NQP, op, nsge,
        nsge ? len : 0);
    put_send(&f.d, &q->qp, &w, s, nsge);
    f.wr[wr_id - WR_BASE].len = w.total_len;
    ring_send(&f.d, &q->qp);
    service();
}

/* ------------------------------------------------------------------ */
/* QP states                                                           */

static void qp_reset_rings(Fq *q)
{
    struct pvrdma_ring *r = qp_rings(&f.d, &q->qp);

    memset(r, 0, 2 * sizeof(*r));
    q->qp.sq_prod = q->qp.rq_prod = 0;
}

static uint32_t to_state(Fq *q, uint32_t state)
{
    struct pvrdma_qp_attr a = { 0 };
    uint32_t err;

    a.qp_state = state;
    err = modify_qp(&f.d, &q->qp, PVRDMA_QP_STATE, &a);
    if (!err && state == PVRDMA_QPS_RESET) {
        qp_reset_rings(q);
        q->connected = false;
    }
    return err;
}

/*
 * RESET -> INIT -> RTR -> RTS.  RC0/RC1 towards their peer, RC2 towards
 * itself through loopback, UD and GSI with their Q_Keys.
 */
void qp_connect(unsigned qi, uint32_t rq_psn, uint32_t sq_psn,
                       uint8_t mtu)
{
    Fq *q = &f.q[qi];
    struct pvrdma_qp_attr a = { 0 };
    uint32_t err;

    if (to_state(q, PVRDMA_QPS_RESET)) {
        return;
    }
    a.qp_state = PVRDMA_QPS_INIT;
    a.port_num = 1;
    if (q->type == PVRDMA_QPT_RC) {
        a.qp_access_flags = RC_ACCESS | PVRDMA_ACCESS_LOCAL_WRITE;
        err = modify_qp(&f.d, &q->qp, PVRDMA_QP_STATE | PVRDMA_QP_PKEY_INDEX |
                        PVRDMA_QP_PORT | PVRDMA_QP_ACCESS_FLAGS, &a);
    } else {
        a.qkey = q->type == PVRDMA_QPT_GSI ? PVRDMA_GSI_QKEY : UD_QKEY;
        err = modify_qp(&f.d, &q->qp, PVRDMA_QP_STATE | PVRDMA_QP_PKEY_INDEX |
                        PVRDMA_QP_PORT | PVRDMA_QP_QKEY, &a);
    }
    if (err) {
        fail("QP %u: RESET -> INIT refused (%u)", qi, err);
    }
    memset(&a, 0, sizeof(a));
    a.qp_state = PVRDMA_QPS_RTR;
    if (q->type != PVRDMA_QPT_RC) {
        if (modify_qp(&f.d, &q->qp, PVRDMA_QP_STATE, &a)) {
            fail("QP %u: INIT -> RTR refused", qi);
        }
        a.qp_state = PVRDMA_QPS_RTS;
        a.sq_psn = sq_psn;
        if (modify_qp(&f.d, &q->qp, PVRDMA_QP_STATE | PVRDMA_QP_SQ_PSN, &a)) {
            fail("QP %u: RTR -> RTS refused", qi);
        }
        return;
    }
    a.path_mtu = mtu;
    a.rq_psn = rq_psn;
    a.max_dest_rd_atomic = f.cfg_dest_rd;
    a.min_rnr_timer = f.cfg_rnr_timer;
    a.ah_attr.grh.hop_limit = 64;
    a.ah_attr.port_num = 1;
    if (qi == RC2) {
        a.dest_qp_num = q->qp.qpn;
        memcpy(a.ah_attr.grh.dgid.raw, our_gid[0], 16);
        memcpy(a.ah_attr.dmac, our_mac(), 6);
    } else {
        a.dest_qp_num = peer_qpn[q->conn];
        a.ah_attr.grh.sgid_index = q->conn;
        memcpy(a.ah_attr.grh.dgid.raw, peer_gid[q->conn], 16);
        memcpy(a.ah_attr.dmac, peer_mac, 6);
        /* the peer's model of this connection starts again */
        set_mtu(q, mtu, true);
        q->peer_psn = rq_psn & PSN_MASK;
        q->nsent = 0;
        q->have_sent = false;
        memset(q->sent, 0, sizeof(q->sent));
    }
    if (modify_qp(&f.d, &q->qp, RTR_MASK, &a)) {
        fail("QP %u: INIT -> RTR refused", qi);
    }
    q->connected = qi != RC2;
    memset(&a, 0, sizeof(a));
    a.qp_state = PVRDMA_QPS_RTS;
    a.sq_psn = sq_psn;
    a.timeout = f.cfg_timeout;
    a.retry_cnt = f.cfg_retry;
    a.rnr_retry = f.cfg_rnr_retry;
    a.max_rd_atomic = f.cfg_rd;
    if (modify_qp(&f.d, &q->qp, RTS_MASK, &a)) {
        fail("QP %u: RTR -> RTS refused", qi);
    }
    if (qi != RC2 && pvrdma_qp_get(&f.d.c, q->qp.handle)->tp != f.t) {
        fail("QP %u: not on the RoCEv2 transport", qi);
    }
}

void qp_create(unsigned qi)
{
    static const uint8_t types[NQP] = {
        PVRDMA_QPT_RC, PVRDMA_QPT_RC, PVRDMA_QPT_RC, PVRDMA_QPT_UD,
        PVRDMA_QPT_GSI,
    };
    Fq *q = &f.q[qi];

    memset(q, 0, sizeof(*q));
    q->type = types[qi];
    q->conn = qi <= RC1 ? (int)qi : -1;
    set_mtu(q, PVRDMA_MTU_256, true);
    create_qp(&f.d, &q->qp, f.pd, f.scq.handle, f.rcq.handle, q->type);
    q->exists = true;
    if (f.nhandles < G_N_ELEMENTS(f.handles)) {
        f.handles[f.nhandles++] = q->qp.handle;
    }
}

static void destroy_qp(Fq *q)
{
    union pvrdma_cmd_req req = { 0 };

    drain_cqs();
    req.destroy_qp.qp_handle = q->qp.handle;
    if (dev_cmd(&f.d, &req, PVRDMA_CMD_DESTROY_QP, NULL)) {
        fail("DESTROY_QP refused");
    }
    q->exists = false;
    q->connected = false;
}

void modify_op(Input *in)
{
    uint8_t sel = get(in, 1), act = get(in, 1), arg = get(in, 1);
    unsigned qi = sel % NQP;
    Fq *q = &f.q[qi];
    struct pvrdma_qp_attr a = { 0 };

    if (!q->exists) {
        return;
    }
    switch (act % 8) {
    case 0:
        LOG("QP %u -> ERR\n", qi);
        to_state(q, PVRDMA_QPS_ERR);
        break;
    case 1:
        LOG("QP %u -> RESET\n", qi);
        drain_cqs();
        to_state(q, PVRDMA_QPS_RESET);
        break;
    case 2:
    case 3:
        LOG("QP %u reconnected\n", qi);
        drain_cqs();
        qp_connect(qi, psn_table[arg & 7], psn_table[(arg >> 3) & 7] ^ arg,
                   qi == RC0 ? PVRDMA_MTU_256 :
                   PVRDMA_MTU_256 + (arg >> 6) % 5);
        break;
    case 4:
        LOG("QP %u -> SQD\n", qi);
        to_state(q, PVRDMA_QPS_SQD);
        break;
    case 5:
        LOG("QP %u -> RTS\n", qi);
        to_state(q, PVRDMA_QPS_RTS);
        break;
    case 6: {
        /* new timers in RTS, and now and then what RTS may not change */
        uint8_t more = get(in, 1);
        uint32_t mask = PVRDMA_QP_STATE | PVRDMA_QP_TIMEOUT |
                        PVRDMA_QP_RETRY_CNT | PVRDMA_QP_RNR_RETRY |
                        PVRDMA_QP_MIN_RNR_TIMER;

        a.qp_state = PVRDMA_QPS_RTS;
        a.timeout = arg & 31;
        a.retry_cnt = arg >> 5;
        a.rnr_retry = arg & 7;
        a.min_rnr_timer = arg >> 3;
        if (more & 0x80) {
            mask |= PVRDMA_QP_MAX_QP_RD_ATOMIC | PVRDMA_QP_MAX_DEST_RD_ATOMIC;
            a.max_rd_atomic = more & 15;
            a.max_dest_rd_atomic = (more >> 4) & 7;
        }
        if (more & 0x40) {
            mask |= PVRDMA_QP_PATH_MTU;
            a.path_mtu = PVRDMA_MTU_256 + more % 5;
        }
        if (!modify_qp(&f.d, &q->qp, mask, &a) && (mask & PVRDMA_QP_PATH_MTU)) {
            LOG("QP %u: path MTU %u in RTS\n", qi, cfg_mtu(a.path_mtu));
            set_mtu(q, a.path_mtu, false);
        }
        break;
    }
    case 7:
        /* destroyed with whatever is in flight, created again */
        if (qi > RC1 || f.recreated >= 4 ||
            f.d.h.next_free + 16 * FH_PAGE > f.d.h.base + f.d.h.size) {
            break;
        }
        LOG("QP %u destroyed and created again\n", qi);
        destroy_qp(q);
        qp_create(qi);
        guard_release_new();
        f.recreated++;
        if (arg & 1) {
            qp_connect(qi, psn_table[arg >> 1 & 7], psn_table[arg >> 4 & 7],
                       PVRDMA_MTU_256);
        }
        break;
    }
    service();
}


void mr_op(Input *in)
{
    uint8_t act = get(in, 1);
    union pvrdma_cmd_req req = { 0 };

    if (act % 4 == 0 && f.mr_alive) {
        LOG("MR deregistered\n");
        drain_cqs();
        req.destroy_mr.mr_handle = f.mr.handle;
        if (dev_cmd(&f.d, &req, PVRDMA_CMD_DESTROY_MR, NULL)) {
            fail("DESTROY_MR refused");
        }
        f.mr_alive = false;
        f.mr_snap = g_malloc((uint64_t)f.mr.npages * FH_PAGE);
        for (uint32_t i = 0; i < f.mr.npages; i++) {
            memcpy(f.mr_snap + (uint64_t)i * FH_PAGE,
                   fh_ptr(&f.d.h, f.mr.pages[i]), FH_PAGE);
        }
    } else if (act % 4 == 2 && f.fr_key) {
        /* the FRMR invalidated, or registered again (shorter, new key) */
        uint16_t len = get(in, 2);

        if (act & 4) {
            LOG("FRMR invalidated\n");
            frmr_post(true, f.fr_key, 0);
        } else {
            LOG("FRMR registered again, %u bytes\n", len % FR_LEN + 1);
            if (act & 8) {
                /* a new key byte (else the same key, a shorter region) */
                f.fr_key = (f.fr_key & ~0xffu) | ((f.fr_key + 1) & 0xff);
            }
            frmr_post(false, f.fr_key, len % FR_LEN + 1);
        }
    } else if (act % 4 == 1) {
        /* the guest changes MR bytes (atomics compare against them) */
        uint64_t off = get(in, 2) % (MR_LEN - 8);
        uint64_t v = get(in, 1);

        if (f.mr_alive) {
            mr_write(&f.d, &f.mr, MR_IOVA + (off & ~7ull), &v, 8);
        }
    }
    service();
}
