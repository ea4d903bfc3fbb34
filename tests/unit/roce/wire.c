/*
 * Tests of the RoCEv2 transport: the simulated wire between two devices (rt.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "roce/rt.h"

void make_gid(uint8_t gid[16], uint8_t a, uint8_t b, uint8_t c,
              uint8_t d)
{
    memset(gid, 0, 16);
    gid[10] = gid[11] = 0xff;
    gid[12] = a;
    gid[13] = b;
    gid[14] = c;
    gid[15] = d;
}

uint32_t net_rnd(Net *n)
{
    n->rng ^= n->rng << 13;
    n->rng ^= n->rng >> 17;
    n->rng ^= n->rng << 5;
    return n->rng;
}

bool net_pm(Net *n, unsigned pm)
{
    return pm && net_rnd(n) % 1000 < pm;
}

int64_t net_now(Net *n)
{
    return n->node[0].d.h.now;
}

void net_set_now(Net *n, int64_t t)
{
    if (t != n->node[0].d.h.now) {
        n->frames_now = 0;
    }
    n->node[0].d.h.now = t;
    n->node[1].d.h.now = t;
}

void G_GNUC_PRINTF(2, 3) net_log(Net *n, const char *fmt, ...)
{
    va_list ap;
    char *s;

    va_start(ap, fmt);
    s = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    if (n->trace_all) {
        g_printerr("# %s\n", s);
    }
    g_queue_push_tail(&n->trace, s);
    while (n->trace.length > TRACE_KEEP) {
        g_free(g_queue_pop_head(&n->trace));
    }
}

void G_GNUC_PRINTF(3, 4) net_bad(Net *n, unsigned from,
                                 const char *fmt, ...)
{
    va_list ap;
    char *s;

    va_start(ap, fmt);
    s = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    n->dir[from].bad++;
    if (n->dir[from].bad <= 10) {
        g_test_message("wire %c>%c frame %" PRIu64 ": %s", "AB"[from],
                       "BA"[from], n->dir[from].frames, s);
    }
    net_log(n, "   !! %s", s);
    g_free(s);
}

uint32_t psn_add(uint32_t psn, uint32_t n)
{
    return (psn + n) & PSN_MASK;
}

void check_frame(Net *n, unsigned from, const RocePkt *p)
{
    WireDir *w = &n->dir[from];
    Node *src = &n->node[from], *dst = &n->node[!from];
    const RoceOpInfo *info = roce_opcode_info(p->opcode);

    if (memcmp(p->smac, src->d.h.mac, 6)) {
        net_bad(n, from, "source MAC is not the sender's");
    }
    if (memcmp(p->dmac, dst->d.h.mac, 6)) {
        net_bad(n, from, "destination MAC %02x:%02x:%02x:%02x:%02x:%02x is "
                "not the receiver's", p->dmac[0], p->dmac[1], p->dmac[2],
                p->dmac[3], p->dmac[4], p->dmac[5]);
    }
    if (p->ip_ver != 4) {
        net_bad(n, from, "IPv%u for an IPv4-mapped GID", p->ip_ver);
    }
    if (memcmp(p->sgid, src->gid, 16) || memcmp(p->dgid, dst->gid, 16)) {
        net_bad(n, from, "IP addresses are not sender -> receiver");
    }
    if (p->ttl != 64) {
        net_bad(n, from, "TTL %u, the AV's hop limit is 64", p->ttl);
    }
    if (p->pkey != 0xffff) {
        net_bad(n, from, "P_Key 0x%04x", p->pkey);
    }
    if (p->opcode < ROCE_UD_SEND_ONLY && info->payload) {
        /* RC segments: FIRST and MIDDLE fill the path MTU, the rest fit */
        if ((info->pos == ROCE_POS_FIRST || info->pos == ROCE_POS_MIDDLE) &&
            p->payload_len != MTU_BYTES) {
            net_bad(n, from, "%s with %zu bytes of payload (MTU %u)",
                    info->name, p->payload_len, MTU_BYTES);
        }
        if (p->payload_len > MTU_BYTES) {
            net_bad(n, from, "%s with %zu bytes of payload (MTU %u)",
                    info->name, p->payload_len, MTU_BYTES);
        }
    }

    w->ops[p->opcode]++;
    if (roce_opcode_has(p->opcode, ROCE_EH_AETH)) {
        uint8_t t = roce_aeth_type(p->aeth.syndrome);

        if (t == ROCE_AETH_ACK) {
            w->aeth_ack++;
        } else if (t == ROCE_AETH_RNR_NAK) {
            w->aeth_rnr++;
        } else if (t == ROCE_AETH_NAK) {
            w->aeth_nak++;
            w->nak_code[roce_aeth_value(p->aeth.syndrome)]++;
        } else {
            net_bad(n, from, "reserved AETH type 0x%02x", p->aeth.syndrome);
        }
    }
    if (roce_opcode_has(p->opcode, ROCE_EH_IMMDT)) {
        w->last_imm = p->imm;
    }
    if (roce_opcode_has(p->opcode, ROCE_EH_RETH)) {
        w->last_reth_pkt = *p;
        w->last_reth_pkt.payload = NULL;
    }
    if (roce_opcode_has(p->opcode, ROCE_EH_ATMETH)) {
        w->last_atomic = *p;
        w->last_atomic.payload = NULL;
    }
    if (roce_opcode_has(p->opcode, ROCE_EH_DETH)) {
        w->last_deth = *p;
        w->last_deth.payload = NULL;
    }
    if (roce_opcode_has(p->opcode, ROCE_EH_ATMACK)) {
        w->last_atmack = p->atmack;
    }

    /* a requester's new packets take consecutive PSNs, per connection */
    if (roce_opcode_is_rc_request(p->opcode)) {
        gpointer key = GUINT_TO_POINTER(p->dqpn);
        uint32_t next = GPOINTER_TO_UINT(g_hash_table_lookup(w->next_psn,
                                                             key));
        uint32_t used = 1;
        gpointer pk = GUINT_TO_POINTER(p->psn);

        g_hash_table_insert(w->psn_count, pk, GUINT_TO_POINTER(
            GPOINTER_TO_UINT(g_hash_table_lookup(w->psn_count, pk)) + 1));
        if (p->opcode == ROCE_RC_RDMA_READ_REQUEST) {
            used = MAX(1, (p->reth.len + MTU_BYTES - 1) / MTU_BYTES);
        }
        if (!next || p->psn == next - 1) {
            g_hash_table_insert(w->next_psn, key,
                                GUINT_TO_POINTER(psn_add(p->psn, used) + 1));
        } else if (((p->psn - (next - 1)) & PSN_MASK) >= 0x800000) {
            w->resent++;        /* behind: a retransmission */
        } else {
            w->psn_jumps++;
            net_bad(n, from, "request PSN 0x%06x, the next new one is 0x%06x",
                    p->psn, next - 1);
        }
    }
}

void trace_frame(Net *n, unsigned from, const RocePkt *p,
                 const char *what)
{
    GString *s = g_string_new(NULL);

    g_string_printf(s, "%6" PRId64 "ms #%-5" PRIu64 " %c>%c %-34s psn %06x "
                    "qpn %06x", net_now(n), n->dir[from].frames, "AB"[from],
                    "BA"[from], roce_opcode_name(p->opcode), p->psn, p->dqpn);
    if (roce_opcode_info(p->opcode) && roce_opcode_info(p->opcode)->payload) {
        g_string_append_printf(s, " len %4zu", p->payload_len);
    }
    if (p->ack_req) {
        g_string_append(s, " A");
    }
    if (roce_opcode_has(p->opcode, ROCE_EH_AETH)) {
        static const char *const type[] = { "ACK", "RNR", "res", "NAK" };

        g_string_append_printf(s, " %s/%u msn %u",
                               type[roce_aeth_type(p->aeth.syndrome) >> 5],
                               roce_aeth_value(p->aeth.syndrome), p->aeth.msn);
    }
    if (roce_opcode_has(p->opcode, ROCE_EH_RETH)) {
        g_string_append_printf(s, " reth len %u", p->reth.len);
    }
    if (roce_opcode_has(p->opcode, ROCE_EH_DETH)) {
        g_string_append_printf(s, " qkey 0x%x sqp 0x%x", p->deth.qkey,
                               p->deth.sqp);
    }
    g_string_append(s, what);
    net_log(n, "%s", s->str);
    g_string_free(s, TRUE);
}

void wire_put(Net *n, unsigned to, const uint8_t *frame, size_t len,
              bool corrupt, bool reorder)
{
    WireDir *d = &n->dir[!to];
    WFrame *f, *tail = g_queue_peek_tail(&n->wire);

    if (d->rate && d->qmax && d->last_at > net_now(n) &&
        (d->last_at - net_now(n) - 1) * d->rate + d->at_count >= d->qmax) {
        d->qdropped++;          /* the queue is full */
        return;
    }
    f = g_new0(WFrame, 1);

    f->data = g_memdup2(frame, len);
    f->len = len;
    f->to = to;
    f->at = net_now(n) + n->dir[!to].delay_ms +
            (n->dir[!to].jitter_ms ? net_rnd(n) % (n->dir[!to].jitter_ms + 1)
                                   : 0);
    if (!n->dir[!to].jitter_reorders) {
        f->at = MAX(f->at, n->dir[!to].last_at);
    }
    if (f->at == n->dir[!to].last_at && n->dir[!to].rate &&
        n->dir[!to].at_count >= n->dir[!to].rate) {
        f->at++;                /* a slow link: the frame waits its turn */
    }
    n->dir[!to].at_count = f->at == n->dir[!to].last_at ?
                           n->dir[!to].at_count + 1 : 1;
    n->dir[!to].last_at = f->at;
    if (corrupt) {
        /*
         * One byte of the IB transport headers, payload or ICRC, never
         * the BTH byte the ICRC masks (FECN, BECN, resv6): every such
         * change must fail the ICRC.
         */
        size_t ib = ROCE_ETH_HLEN + ROCE_IPV4_HLEN + ROCE_UDP_HLEN;
        size_t pos = ib + net_rnd(n) % (len - ib);

        if (pos == ib + 4) {
            pos++;
        }
        f->data[pos] ^= 1 + net_rnd(n) % 255;
        f->corrupted = true;
    }
    if (reorder && tail && tail->to == to && tail->at <= f->at) {
        /* swap with the frame before it in the same direction */
        f->at = tail->at;
        g_queue_insert_before(&n->wire, g_queue_peek_tail_link(&n->wire), f);
    } else {
        /* in order of arrival; the same time keeps the order sent */
        GList *l = n->wire.tail;

        while (l && ((WFrame *)l->data)->at > f->at) {
            l = l->prev;
        }
        if (l) {
            g_queue_insert_after(&n->wire, l, f);
        } else {
            g_queue_push_head(&n->wire, f);
        }
    }
}

void node_tx(void *opaque, const uint8_t *frame, size_t len)
{
    Node *nd = opaque;
    Net *n = nd->net;
    unsigned from = nd->id;
    WireDir *w = &n->dir[from];
    RocePkt p;
    int r;
    bool drop = false, corrupt, dup, reorder;
    GString *what;

    w->frames++;
    if (n->dead) {
        return;
    }
    if (w->keep) {
        g_ptr_array_add(w->keep, g_bytes_new(frame, len));
    }
    if (++n->frames_now > LIVELOCK_FRAMES) {
        g_test_message("livelock: %u frames on the wire at fake time %" PRId64
                       " ms without the clock moving", LIVELOCK_FRAMES,
                       net_now(n));
        g_test_fail();
        n->dead = true;
        g_queue_clear_full(&n->wire, wframe_free);
        return;
    }
    what = g_string_new(NULL);
    r = roce_parse(frame, len, &p);
    if (r != ROCE_OK) {
        net_bad(n, from, "roce_parse: %s (%zu bytes)",
                roce_drop_reason_str(r), len);
        memset(&p, 0, sizeof(p));
    } else {
        check_frame(n, from, &p);
    }
    if (w->drop_all) {
        drop = true;
    }
    for (unsigned i = 0; i < w->ndrop_nth; i++) {
        drop |= w->drop_nth[i] == w->frames;
    }
    if (!drop && r == ROCE_OK && w->filter) {
        drop = w->filter(n, from, &p, w->filter_arg);
    }
    /* draw every time: the sequence does not depend on what was dropped */
    drop |= net_pm(n, w->drop_pm);
    corrupt = net_pm(n, w->corrupt_pm) && !drop;
    dup = net_pm(n, w->dup_pm) && !drop;
    reorder = net_pm(n, w->reorder_pm) && !drop;
    if (drop) {
        w->dropped++;
        g_string_append(what, " [dropped]");
    } else {
        w->corrupted += corrupt;
        w->duped += dup;
        w->reordered += reorder;
        g_string_append(what, corrupt ? " [corrupted]" : "");
        g_string_append(what, dup ? " [duplicated]" : "");
        g_string_append(what, reorder ? " [swapped]" : "");
        wire_put(n, !from, frame, len, corrupt, reorder);
        if (dup) {
            wire_put(n, !from, frame, len, false, false);
        }
    }
    trace_frame(n, from, &p, what->str);
    g_string_free(what, TRUE);
}

void node_init(Net *n, unsigned id)
{
    Node *nd = &n->node[id];
    Dev *d = &nd->d;

    nd->net = n;
    nd->id = id;
    dev_init(d, NULL);
    d->h.mac[4] = 0xa0 + id;
    d->h.mac[5] = 0x01 + id;
    d->h.core = &d->c;
    d->h.frame_tx = node_tx;
    d->h.frame_tx_arg = nd;
    nd->t = pvrdma_roce_new(&d->c);
    g_assert_nonnull(nd->t);
    g_assert_true(pvrdma_core_add_transport(&d->c, nd->t));
    dev_write_dsr(d);
    pvrdma_core_reg_write(&d->c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
    g_assert_cmpuint(pvrdma_core_reg_read(&d->c, PVRDMA_REG_ERR), ==, 0);
    pvrdma_core_reg_write(&d->c, PVRDMA_REG_IMR, 0);
    make_gid(nd->gid, 10, 0, 0, 1 + id);
    bind_gid(d, 0, nd->gid);
}

void net_init(Net *n, uint32_t seed)
{
    memset(n, 0, sizeof(*n));
    n->last_op[0] = n->last_op[1] = -1;
    g_queue_init(&n->wire);
    g_queue_init(&n->trace);
    /* PVRDMA_ROCE_SEED=N: another run of every random choice */
    if (g_getenv("PVRDMA_ROCE_SEED")) {
        seed = seed * 0x9e3779b9u +
               (uint32_t)g_ascii_strtoull(g_getenv("PVRDMA_ROCE_SEED"), NULL,
                                          0);
    }
    n->rng = seed ? seed : 0x9e3779b9u;
    n->trace_all = g_getenv("PVRDMA_ROCE_TRACE") != NULL;
    for (unsigned i = 0; i < 2; i++) {
        n->dir[i].next_psn = g_hash_table_new(NULL, NULL);
        n->dir[i].psn_count = g_hash_table_new(NULL, NULL);
    }
    node_init(n, 0);
    node_init(n, 1);
}

void wframe_free(gpointer p)
{
    WFrame *f = p;

    g_free(f->data);
    g_free(f);
}

void net_free(Net *n)
{
    dev_fini(&n->node[0].d);
    dev_fini(&n->node[1].d);
    g_queue_clear_full(&n->wire, wframe_free);
    g_queue_clear_full(&n->trace, g_free);
    for (unsigned i = 0; i < 2; i++) {
        g_hash_table_destroy(n->dir[i].next_psn);
        g_hash_table_destroy(n->dir[i].psn_count);
    }
}

void net_fini(Net *n)
{
    for (unsigned i = 0; i < 2; i++) {
        g_assert_cmpuint(n->dir[i].bad, ==, 0);
        g_assert_cmpuint(n->dir[i].psn_jumps, ==, 0);
    }
    g_assert_cmpuint(n->not_taken, ==, 0);
    if (g_test_failed() && !n->trace_all) {
        g_test_message("last %u frames on the wire (now %" PRId64 " ms):",
                       n->trace.length, net_now(n));
        for (GList *l = n->trace.head; l; l = l->next) {
            g_test_message("%s", (char *)l->data);
        }
    }
    net_free(n);
}

bool net_deliver(Net *n)
{
    WFrame *f = g_queue_peek_head(&n->wire);
    bool taken;

    if (!f || f->at > net_now(n)) {
        return false;
    }
    g_queue_pop_head(&n->wire);
    taken = pvrdma_roce_rx(n->node[f->to].t, f->data, f->len);
    {
        RocePkt p;

        n->last_op[f->to] = roce_parse(f->data, f->len, &p) == ROCE_OK ?
                            p.opcode : -1;
    }
    if (!taken && !f->corrupted) {
        n->not_taken++;
        net_log(n, "   !! pvrdma_roce_rx() refused an intact frame to %c",
                "AB"[f->to]);
    }
    wframe_free(f);
    return true;
}

bool net_run(Net *n, int64_t max_ms, NetDone done, void *arg)
{
    FakeHost *h[2] = { &n->node[0].d.h, &n->node[1].d.h };
    int64_t end = net_now(n) + max_ms;
    int64_t wall = g_get_monotonic_time() + 300 * G_USEC_PER_SEC;

    for (;;) {
        int64_t due = 0;

        if (n->dead) {
            return false;
        }
        if (done && done(n, arg)) {
            return true;
        }
        if (net_deliver(n) || fh_step(h, 2)) {
            if (g_get_monotonic_time() > wall) {
                g_test_message("network still busy after 300 s of wall time "
                               "(fake time %" PRId64 " ms)", net_now(n));
                g_test_fail();
                return false;
            }
            continue;
        }
        for (unsigned i = 0; i < 2; i++) {
            if (h[i]->timer_due && (!due || h[i]->timer_due < due)) {
                due = h[i]->timer_due;
            }
        }
        if (n->wire.head) {
            /* a frame still on its way */
            int64_t at = ((WFrame *)n->wire.head->data)->at;

            due = due ? MIN(due, at) : at;
        }
        if (!due) {
            return !done;
        }
        if (due > end) {
            net_set_now(n, MAX(net_now(n), end));
            return false;
        }
        net_set_now(n, MAX(net_now(n), due));
    }
}

bool net_settle(Net *n)
{
    return net_run(n, 60000, NULL, NULL);
}

void net_for(Net *n, int64_t ms)
{
    int64_t end = net_now(n) + ms;

    net_run(n, ms, NULL, NULL);
    net_set_now(n, MAX(net_now(n), end));
}

PvrdmaPathStats stats(Node *nd)
{
    PvrdmaPathStats s;

    memset(&s, 0xa5, sizeof(s));
    pvrdma_roce_stats(nd->t, &s);
    return s;
}

void log_stats(Net *n)
{
    for (unsigned i = 0; i < 2; i++) {
        PvrdmaPathStats s = stats(&n->node[i]);
        WireDir *w = &n->dir[i];

        g_test_message("%c: tx %" PRIu64 " rx %" PRIu64 " retransmits %"
                       PRIu64 " timeouts %" PRIu64 " rnr_naks %" PRIu64
                       " seq_naks %" PRIu64 " dups %" PRIu64 " drops %"
                       PRIu64 "; wire %c>%c: %" PRIu64 " frames, %" PRIu64
                       " dropped, %" PRIu64 " duplicated, %" PRIu64
                       " swapped, %" PRIu64 " corrupted, %" PRIu64
                       " resent; fake time %" PRId64 " ms", "AB"[i],
                       s.tx_pkts, s.rx_pkts, s.retransmits, s.timeouts,
                       s.rnr_naks, s.seq_naks, s.dups, s.drops, "AB"[i],
                       "BA"[i], w->frames, w->dropped, w->duped,
                       w->reordered, w->corrupted, w->resent, net_now(n));
    }
}
