/*
 * pvrdma RoCEv2 transport, frames out (as Linux rxe's rxe_net.c): a
 * packet's network headers (roce_pkt_addr(); roce_rc_pkt() for an RC
 * QP's peer), the frame built and handed to the host's frame_tx
 * (roce_pkt_send()); the device's clock and timer (roce_now_ms(),
 * roce_arm()).  See roce.c for the transport as a whole, roce_int.h for
 * what its files share.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "roce_int.h"

int64_t roce_now_ms(RoceTransport *t)
{
    PvrdmaCore *c = t->t.core;

    return c->ops->now_ms(c->opaque);
}

/* Arm the core's timer for deadline (ms) unless it fires earlier. */
void roce_arm(RoceTransport *t, int64_t deadline)
{
    int64_t now;

    if (!deadline || (t->armed && t->armed <= deadline)) {
        return;
    }
    now = roce_now_ms(t);
    t->armed = deadline;
    pvrdma_transport_timer(t->t.core,
                           deadline > now ? (unsigned)(deadline - now) : 0);
}

/* Fill the network headers of a packet of QP q (or UD: req). */
void roce_pkt_addr(RoceTransport *t, RocePkt *p, const uint8_t sgid[16],
                   const uint8_t dgid[16], const uint8_t dmac[6],
                   uint8_t hop_limit, uint8_t tclass, uint32_t flow,
                   uint32_t src_qpn)
{
    PvrdmaCore *c = t->t.core;

    memset(p, 0, sizeof(*p));
    c->ops->get_mac(c->opaque, p->smac);
    memcpy(p->dmac, dmac, 6);
    p->ip_ver = pvrdma_gid_is_v4(dgid) ? 4 : 6;
    p->tclass = tclass;
    p->ttl = hop_limit ? hop_limit : 64;
    p->ip_id = t->ip_id++;
    p->df = true;
    p->flow_label = flow & 0xfffff;
    memcpy(p->sgid, sgid, 16);
    memcpy(p->dgid, dgid, 16);
    p->sport = src_port(src_qpn);
    p->pkey = ROCE_PKEY_DEFAULT;
}

void roce_pkt_send(RoceTransport *t, RoceQp *q, RocePkt *p)
{
    PvrdmaCore *c = t->t.core;
    size_t n = roce_build(p, t->frame, sizeof(t->frame));

    if (!n) {
        /* an address the codec refuses (IPv4 opcode with a v6 GID...) */
        trace_pvrdma_roce_drop("unbuildable packet");
        t->st.drops++;
        return;
    }
    if (t->paused) {
        return;     /* nothing leaves a VM whose state is being saved */
    }
    trace_pvrdma_roce_send(roce_opcode_name(p->opcode), p->dqpn, p->psn,
                           (uint32_t)p->payload_len, p->ack_req);
    t->st.tx_pkts++;
    t->st.tx_bytes += n;
    if (q) {
        q->st.tx_pkts++;
        q->st.tx_bytes += n;
    }
    c->ops->frame_tx(c->opaque, t->frame, n);
}

/* Headers of an RC packet of q to its peer. */
void roce_rc_pkt(RoceQp *q, RocePkt *p, uint8_t opcode, uint32_t psn)
{
    PvrdmaCore *c = q->t->t.core;
    const struct pvrdma_qp_attr *a = &q->qp->attr;
    uint32_t gi = a->ah_attr.grh.sgid_index;
    static const uint8_t none[16];

    roce_pkt_addr(q->t, p,
                  gi < c->lim.gid_tbl_len ? c->gid[gi].gid.raw : none,
                  a->ah_attr.grh.dgid.raw,
                  a->ah_attr.dmac, a->ah_attr.grh.hop_limit,
                  a->ah_attr.grh.traffic_class, a->ah_attr.grh.flow_label,
                  q->qpn);
    p->opcode = opcode;
    p->dqpn = a->dest_qp_num & PSN_MASK;
    p->psn = psn & PSN_MASK;
}
