/*
 * The RoCEv2 wire codec (backend/roce_wire.c): CRC-32 and the ICRC seed,
 * the opcode table, build -> parse -> build round trips of every opcode
 * (IPv4 and IPv6, with and without 802.1Q, payload 0..9), a frame written
 * by hand (its ICRC computed with Python's zlib), hostile frames
 * (every truncation, every single-bit flip, each drop reason), and the
 * frames of Linux rxe in data/rxe-frames.pcap.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include <glib.h>
#include <stdio.h>
#include <string.h>
#include "hw/rdma/roce_wire.h"

#ifndef UNIT_DATA_DIR
#define UNIT_DATA_DIR "data"
#endif

static const uint8_t valid_ops[] = {
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b,
    0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x16, 0x17,
    0x64, 0x65,
};

static uint8_t payload_src[64];

/* xorshift32: reproducible field values */
static uint32_t rnd_state = 2463534242u;

static uint32_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 17;
    rnd_state ^= rnd_state << 5;
    return rnd_state;
}

static uint64_t rnd64(void)
{
    return (uint64_t)rnd() << 32 | rnd();
}

static void v4_gid(uint8_t *gid, uint32_t addr)
{
    memset(gid, 0, 10);
    gid[10] = gid[11] = 0xff;
    gid[12] = addr >> 24;
    gid[13] = addr >> 16;
    gid[14] = addr >> 8;
    gid[15] = addr;
}

/* Every field random within its width; only the opcode's ext. headers. */
static void make_pkt(RocePkt *p, uint8_t op, int ipver, bool vlan,
                     size_t plen)
{
    const RoceOpInfo *info = roce_opcode_info(op);

    memset(p, 0, sizeof(*p));
    for (int i = 0; i < 6; i++) {
        p->dmac[i] = rnd();
        p->smac[i] = rnd();
    }
    p->vlan = vlan;
    p->vlan_tci = vlan ? rnd() : 0;
    p->ip_ver = ipver;
    p->tclass = rnd();
    p->ttl = rnd();
    if (ipver == 4) {
        p->ip_id = rnd();
        p->df = rnd() & 1;
        v4_gid(p->sgid, rnd());
        v4_gid(p->dgid, rnd());
    } else {
        p->flow_label = rnd() & 0xfffff;
        for (int i = 0; i < 16; i++) {
            p->sgid[i] = rnd();
            p->dgid[i] = rnd();
        }
    }
    p->sport = rnd();
    p->opcode = op;
    p->se = rnd() & 1;
    p->mig = rnd() & 1;
    p->pkey = rnd();
    p->fecn = rnd() & 1;
    p->becn = rnd() & 1;
    p->resv6 = rnd() & 0x3f;
    p->dqpn = rnd() & 0xffffff;
    p->ack_req = rnd() & 1;
    p->resv7 = rnd() & 0x7f;
    p->psn = rnd() & 0xffffff;
    for (int i = 0; i < ROCE_MAX_EXT_HDRS; i++) {
        switch (info->ext[i]) {
        case ROCE_EH_RETH:
            p->reth.va = rnd64();
            p->reth.rkey = rnd();
            p->reth.len = rnd();
            break;
        case ROCE_EH_AETH:
            p->aeth.syndrome = rnd();
            p->aeth.msn = rnd() & 0xffffff;
            break;
        case ROCE_EH_ATMETH:
            p->atmeth.va = rnd64();
            p->atmeth.rkey = rnd();
            p->atmeth.swap_add = rnd64();
            p->atmeth.compare = rnd64();
            break;
        case ROCE_EH_ATMACK:
            p->atmack = rnd64();
            break;
        case ROCE_EH_IMMDT:
            p->imm = rnd();
            break;
        case ROCE_EH_IETH:
            p->ieth_rkey = rnd();
            break;
        case ROCE_EH_DETH:
            p->deth.qkey = rnd();
            p->deth.resv = rnd();
            p->deth.sqp = rnd() & 0xffffff;
            break;
        }
    }
    p->payload = plen ? payload_src + (rnd() % 8) : NULL;
    p->payload_len = plen;
}

static void hex(GString *s, const uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        g_string_append_printf(s, "%02x", b[i]);
    }
    g_string_append_c(s, ' ');
}

/* Every field but the payload pointer and the ICRC, to compare packets */
static char *pkt_str(const RocePkt *p)
{
    GString *s = g_string_new("eth ");

    hex(s, p->dmac, 6);
    hex(s, p->smac, 6);
    g_string_append_printf(s, "vlan %d/%04x ip%u tc %02x ttl %u id %04x "
                           "df %d fl %05x gids ", p->vlan, p->vlan_tci,
                           p->ip_ver, p->tclass, p->ttl, p->ip_id, p->df,
                           p->flow_label);
    hex(s, p->sgid, 16);
    hex(s, p->dgid, 16);
    g_string_append_printf(s, "udp %u csum %04x bth %02x se %d m %d pad %u "
                           "tver %u pkey %04x f %d b %d r6 %02x qpn %06x "
                           "a %d r7 %02x psn %06x ", p->sport, p->udp_csum,
                           p->opcode, p->se, p->mig, p->pad, p->tver,
                           p->pkey, p->fecn, p->becn, p->resv6, p->dqpn,
                           p->ack_req, p->resv7, p->psn);
    g_string_append_printf(s, "reth %" G_GINT64_MODIFIER "x %08x %08x "
                           "aeth %02x %06x atm %" G_GINT64_MODIFIER "x %08x "
                           "%" G_GINT64_MODIFIER "x %" G_GINT64_MODIFIER "x "
                           "ack %" G_GINT64_MODIFIER "x imm %08x ieth %08x "
                           "deth %08x %02x %06x len %zu",
                           p->reth.va, p->reth.rkey, p->reth.len,
                           p->aeth.syndrome, p->aeth.msn, p->atmeth.va,
                           p->atmeth.rkey, p->atmeth.swap_add,
                           p->atmeth.compare, p->atmack, p->imm,
                           p->ieth_rkey, p->deth.qkey, p->deth.resv,
                           p->deth.sqp, p->payload_len);
    return g_string_free(s, FALSE);
}

/* Frame helpers, independent of the codec */

static uint16_t be16(const uint8_t *b)
{
    return (uint16_t)(b[0] << 8 | b[1]);
}

static size_t l3_off(const uint8_t *f)
{
    return be16(f + 12) == 0x8100 ? 18 : 14;
}

static bool is_v6(const uint8_t *f)
{
    return be16(f + l3_off(f) - 2) == 0x86dd;
}

/* the IP packet's length as its header says */
static size_t ip_len(const uint8_t *f)
{
    const uint8_t *l3 = f + l3_off(f);

    return is_v6(f) ? 40 + be16(l3 + 4) : be16(l3 + 2);
}

static uint32_t le32(const uint8_t *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
           (uint32_t)b[3] << 24;
}

/* IPv4: write the header checksum again */
static void fix_ipcsum(uint8_t *f)
{
    uint8_t *l3 = f + l3_off(f);
    uint32_t sum = 0;

    if (is_v6(f)) {
        return;
    }
    l3[10] = l3[11] = 0;
    for (int i = 0; i < 20; i += 2) {
        sum += be16(l3 + i);
    }
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    l3[10] = ~sum >> 8;
    l3[11] = ~sum;
}

/* write the ICRC again (the IP length must be within the frame) */
static void fix_icrc(uint8_t *f)
{
    uint8_t *l3 = f + l3_off(f);
    size_t n = ip_len(f);
    uint32_t icrc = roce_icrc(l3, n, is_v6(f));

    l3[n - 4] = icrc;
    l3[n - 3] = icrc >> 8;
    l3[n - 2] = icrc >> 16;
    l3[n - 1] = icrc >> 24;
}

static void refix(uint8_t *f)
{
    fix_ipcsum(f);
    fix_icrc(f);
}

/* offset of the BTH in f */
static size_t bth_off(const uint8_t *f)
{
    return l3_off(f) + (is_v6(f) ? 40 : 20) + 8;
}

static size_t build_one(uint8_t *buf, size_t cap, uint8_t op, int ipver,
                        bool vlan, size_t plen)
{
    RocePkt p;
    size_t n;

    make_pkt(&p, op, ipver, vlan, plen);
    n = roce_build(&p, buf, cap);
    g_assert_cmpuint(n, >, 0);
    return n;
}

/* A UD SEND_ONLY frame written by hand; ICRC by Python's zlib.crc32 */
static const uint8_t known_frame[] = {
    0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01,
    0x08, 0x00, 0x45, 0x00, 0x00, 0x3c, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11,
    0x14, 0x7b, 0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02, 0xc0, 0x00,
    0x12, 0xb7, 0x00, 0x28, 0x00, 0x00, 0x64, 0x30, 0xff, 0xff, 0x00, 0x00,
    0x00, 0x11, 0x00, 0x00, 0x00, 0x01, 0x11, 0x11, 0x11, 0x11, 0x00, 0x00,
    0x00, 0x12, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x00, 0x00, 0x00, 0x0e, 0x16,
    0xbb, 0xa3,
};

/* Tests */

static uint32_t crc32_bitwise(const uint8_t *b, size_t n)
{
    uint32_t crc = 0xffffffff;

    for (size_t i = 0; i < n; i++) {
        crc ^= b[i];
        for (int k = 0; k < 8; k++) {
            crc = (crc >> 1) ^ (crc & 1 ? 0xedb88320 : 0);
        }
    }
    return ~crc;
}

static void test_crc32(void)
{
    uint8_t ff[8], buf[300];
    uint32_t c;

    g_assert_cmphex(~roce_crc32(0xffffffff, "123456789", 9), ==, 0xcbf43926);
    g_assert_cmphex(~roce_crc32(0xffffffff, "", 0), ==, 0);
    /* the ICRC seed is the CRC state after 8 bytes of 0xff (masked LRH) */
    memset(ff, 0xff, sizeof(ff));
    g_assert_cmphex(roce_crc32(0xffffffff, ff, 8), ==, ROCE_ICRC_SEED);
    g_assert_cmphex(ROCE_ICRC_SEED, ==, 0xdebb20e3);
    /* against a bitwise CRC; split updates chain */
    for (size_t i = 0; i < sizeof(buf); i++) {
        buf[i] = rnd();
    }
    g_assert_cmphex(~roce_crc32(0xffffffff, buf, sizeof(buf)), ==,
                    crc32_bitwise(buf, sizeof(buf)));
    c = roce_crc32(0xffffffff, buf, 17);
    c = roce_crc32(c, buf + 17, sizeof(buf) - 17);
    g_assert_cmphex(~c, ==, crc32_bitwise(buf, sizeof(buf)));
}

static bool op_valid(unsigned op)
{
    return memchr(valid_ops, op, sizeof(valid_ops)) != NULL;
}

static size_t eh_len(uint8_t eh)
{
    static const size_t len[] = {
        [ROCE_EH_NONE] = 0, [ROCE_EH_RETH] = 16, [ROCE_EH_AETH] = 4,
        [ROCE_EH_ATMETH] = 28, [ROCE_EH_ATMACK] = 8, [ROCE_EH_IMMDT] = 4,
        [ROCE_EH_IETH] = 4, [ROCE_EH_DETH] = 8,
    };

    g_assert_cmpuint(eh, <, G_N_ELEMENTS(len));
    return len[eh];
}

static void test_opcodes(void)
{
    static const struct {
        uint8_t op, e0, e1, hdr_len;
        bool payload;
        uint8_t pos;
    } spot[] = {
        { 0x00, 0, 0, 12, true, ROCE_POS_FIRST },
        { 0x01, 0, 0, 12, true, ROCE_POS_MIDDLE },
        { 0x03, ROCE_EH_IMMDT, 0, 16, true, ROCE_POS_LAST },
        { 0x04, 0, 0, 12, true, ROCE_POS_ONLY },
        { 0x06, ROCE_EH_RETH, 0, 28, true, ROCE_POS_FIRST },
        { 0x07, 0, 0, 12, true, ROCE_POS_MIDDLE },
        { 0x0b, ROCE_EH_RETH, ROCE_EH_IMMDT, 32, true, ROCE_POS_ONLY },
        { 0x0c, ROCE_EH_RETH, 0, 28, false, ROCE_POS_ONLY },
        { 0x0d, ROCE_EH_AETH, 0, 16, true, ROCE_POS_FIRST },
        { 0x0e, 0, 0, 12, true, ROCE_POS_MIDDLE },
        { 0x0f, ROCE_EH_AETH, 0, 16, true, ROCE_POS_LAST },
        { 0x10, ROCE_EH_AETH, 0, 16, true, ROCE_POS_ONLY },
        { 0x11, ROCE_EH_AETH, 0, 16, false, ROCE_POS_ONLY },
        { 0x12, ROCE_EH_AETH, ROCE_EH_ATMACK, 24, false, ROCE_POS_ONLY },
        { 0x13, ROCE_EH_ATMETH, 0, 40, false, ROCE_POS_ONLY },
        { 0x14, ROCE_EH_ATMETH, 0, 40, false, ROCE_POS_ONLY },
        { 0x16, ROCE_EH_IETH, 0, 16, true, ROCE_POS_LAST },
        { 0x17, ROCE_EH_IETH, 0, 16, true, ROCE_POS_ONLY },
        { 0x64, ROCE_EH_DETH, 0, 20, true, ROCE_POS_ONLY },
        { 0x65, ROCE_EH_DETH, ROCE_EH_IMMDT, 24, true, ROCE_POS_ONLY },
    };
    unsigned nvalid = 0;

    for (unsigned op = 0; op < 256; op++) {
        const RoceOpInfo *info = roce_opcode_info(op);

        if (!op_valid(op)) {
            g_assert_null(info);
            g_assert_cmpstr(roce_opcode_name(op), ==, "INVALID");
            continue;
        }
        nvalid++;
        g_assert_nonnull(info);
        g_assert_cmpstr(roce_opcode_name(op), ==, info->name);
        g_assert_true(g_str_has_prefix(info->name, op < 0x20 ? "RC_"
                                                             : "UD_"));
        g_assert_cmpuint(info->hdr_len, ==,
                         12 + eh_len(info->ext[0]) + eh_len(info->ext[1]));
        g_assert_true(info->ext[0] != ROCE_EH_NONE ||
                      info->ext[1] == ROCE_EH_NONE);
        g_assert_cmpint(info->payload, ==,
                        op != 0x0c && op != 0x11 && op != 0x12 &&
                        op != 0x13 && op != 0x14);
    }
    g_assert_cmpuint(nvalid, ==, 25);
    for (size_t i = 0; i < G_N_ELEMENTS(spot); i++) {
        const RoceOpInfo *info = roce_opcode_info(spot[i].op);

        g_assert_cmpuint(info->ext[0], ==, spot[i].e0);
        g_assert_cmpuint(info->ext[1], ==, spot[i].e1);
        g_assert_cmpuint(info->hdr_len, ==, spot[i].hdr_len);
        g_assert_cmpint(info->payload, ==, spot[i].payload);
        g_assert_cmpuint(info->pos, ==, spot[i].pos);
    }
    g_assert_cmpstr(roce_opcode_name(0x0c), ==, "RC_RDMA_READ_REQUEST");
    g_assert_cmpstr(roce_opcode_name(0x64), ==, "UD_SEND_ONLY");
    g_assert_cmpstr(roce_opcode_name(0x15), ==, "INVALID");
}

static void test_aeth(void)
{
    g_assert_cmphex(roce_aeth_ack(ROCE_AETH_NO_CREDITS), ==, 0x1f);
    g_assert_cmphex(roce_aeth_ack(3), ==, 0x03);
    g_assert_cmphex(roce_aeth_rnr_nak(12), ==, 0x2c);
    g_assert_cmphex(roce_aeth_nak(ROCE_NAK_PSN_SEQ_ERR), ==, 0x60);
    g_assert_cmphex(roce_aeth_nak(ROCE_NAK_INVALID_REQUEST), ==, 0x61);
    g_assert_cmphex(roce_aeth_nak(ROCE_NAK_REMOTE_ACCESS), ==, 0x62);
    g_assert_cmphex(roce_aeth_nak(ROCE_NAK_REMOTE_OP), ==, 0x63);
    g_assert_cmphex(roce_aeth_nak(ROCE_NAK_INVALID_RD_REQUEST), ==, 0x64);
    g_assert_cmphex(roce_aeth_type(0x2c), ==, ROCE_AETH_RNR_NAK);
    g_assert_cmphex(roce_aeth_value(0x2c), ==, 12);
    g_assert_cmphex(roce_aeth_type(0x62), ==, ROCE_AETH_NAK);
    g_assert_cmphex(roce_aeth_value(0x62), ==, ROCE_NAK_REMOTE_ACCESS);
    g_assert_cmphex(roce_aeth_type(0x1f), ==, ROCE_AETH_ACK);
}

static void test_known_frame(void)
{
    static const uint8_t sgid[16] = {
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1
    };
    RocePkt p, h;
    uint8_t buf[128];

    g_assert_cmpint(roce_parse(known_frame, sizeof(known_frame), &p), ==,
                    ROCE_OK);
    g_assert_cmpuint(p.ip_ver, ==, 4);
    g_assert_false(p.vlan);
    g_assert_cmpuint(p.ttl, ==, 64);
    g_assert_cmphex(p.ip_id, ==, 0x1234);
    g_assert_true(p.df);
    g_assert_cmpmem(p.sgid, 16, sgid, 16);
    g_assert_cmpuint(p.dgid[15], ==, 2);
    g_assert_cmphex(p.sport, ==, 0xc000);
    g_assert_cmphex(p.udp_csum, ==, 0);
    g_assert_cmphex(p.opcode, ==, ROCE_UD_SEND_ONLY);
    g_assert_cmpuint(p.pad, ==, 3);
    g_assert_cmphex(p.pkey, ==, 0xffff);
    g_assert_cmphex(p.dqpn, ==, 0x11);
    g_assert_cmphex(p.psn, ==, 1);
    g_assert_false(p.ack_req);
    g_assert_cmphex(p.deth.qkey, ==, 0x11111111);
    g_assert_cmphex(p.deth.sqp, ==, 0x12);
    g_assert_cmpmem(p.payload, p.payload_len, "hello", 5);
    g_assert_cmphex(p.icrc, ==, 0xa3bb160e);

    g_assert_cmpuint(roce_build(&p, buf, sizeof(buf)), ==,
                     sizeof(known_frame));
    g_assert_cmpmem(buf, sizeof(known_frame), known_frame,
                    sizeof(known_frame));

    /* the same packet set field by field */
    memset(&h, 0, sizeof(h));
    memcpy(h.dmac, "\x02\0\0\0\0\x02", 6);
    memcpy(h.smac, "\x02\0\0\0\0\x01", 6);
    h.ip_ver = 4;
    h.ip_id = 0x1234;
    h.df = true;
    h.ttl = 64;
    v4_gid(h.sgid, 0x0a000001);
    v4_gid(h.dgid, 0x0a000002);
    h.sport = 0xc000;
    h.opcode = ROCE_UD_SEND_ONLY;
    h.pkey = 0xffff;
    h.dqpn = 0x11;
    h.psn = 1;
    h.deth.qkey = 0x11111111;
    h.deth.sqp = 0x12;
    h.payload = (const uint8_t *)"hello";
    h.payload_len = 5;
    memset(buf, 0xaa, sizeof(buf));
    g_assert_cmpuint(roce_build(&h, buf, sizeof(buf)), ==,
                     sizeof(known_frame));
    g_assert_cmpmem(buf, sizeof(known_frame), known_frame,
                    sizeof(known_frame));
}

static void test_roundtrip(void)
{
    static uint8_t f1[256], f2[256], padded[300];
    unsigned count = 0;

    for (size_t k = 0; k < sizeof(valid_ops); k++) {
        uint8_t op = valid_ops[k];
        const RoceOpInfo *info = roce_opcode_info(op);

        for (int ipver = 4; ipver <= 6; ipver += 2) {
            for (int vlan = 0; vlan <= 1; vlan++) {
                for (size_t plen = 0; plen <= (info->payload ? 9 : 0);
                     plen++) {
                    size_t pad = -plen & 3;
                    size_t want = 14 + 4 * vlan + (ipver == 4 ? 20 : 40) +
                                  8 + info->hdr_len + plen + pad + 4;
                    RocePkt p, q;
                    size_t n, n2;
                    char *a, *b;

                    make_pkt(&p, op, ipver, vlan, plen);
                    p.udp_csum = (plen + vlan) & 1;     /* 0 or compute */
                    n = roce_build(&p, f1, sizeof(f1));
                    g_assert_cmpuint(n, ==, want);
                    g_assert_cmpint(roce_parse(f1, n, &q), ==, ROCE_OK);

                    /* what parse reports that build derived */
                    g_assert_cmpuint(q.pad, ==, pad);
                    g_assert_cmphex(q.icrc, ==, le32(f1 + n - 4));
                    if (p.udp_csum) {
                        g_assert_cmphex(q.udp_csum, !=, 0);
                        p.udp_csum = q.udp_csum;
                    }
                    p.pad = pad;
                    a = pkt_str(&p);
                    b = pkt_str(&q);
                    g_assert_cmpstr(a, ==, b);
                    g_free(a);
                    g_free(b);
                    g_assert_cmpmem(q.payload, q.payload_len, p.payload,
                                    p.payload_len);
                    g_assert_true(!plen ||
                                  q.payload == f1 + n - 4 - pad - plen);

                    n2 = roce_build(&q, f2, sizeof(f2));
                    g_assert_cmpmem(f2, n2, f1, n);

                    /* Ethernet padding after the IP packet is ignored */
                    memcpy(padded, f1, n);
                    memset(padded + n, 0x5a, 7);
                    g_assert_cmpint(roce_parse(padded, n + 7, &q), ==,
                                    ROCE_OK);
                    b = pkt_str(&q);
                    a = pkt_str(&p);
                    g_assert_cmpstr(a, ==, b);
                    g_free(a);
                    g_free(b);

                    /* one byte short of room: nothing built */
                    g_assert_cmpuint(roce_build(&p, f2, n - 1), ==, 0);
                    count++;
                }
            }
        }
    }
    g_test_message("%u frames round-tripped", count);
    g_assert_cmpuint(count, ==, 4 * (20 * 10 + 5));
}

/* A few valid frames of different shapes, each in its own g_malloc */
typedef struct Frames {
    uint8_t *f[5];
    size_t n[5];
} Frames;

static void frames_init(Frames *fs)
{
    uint8_t buf[256];
    static const struct {
        uint8_t op;
        int ipver;
        bool vlan;
        size_t plen;
    } shape[] = {
        { ROCE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, 4, true, 7 },
        { ROCE_UD_SEND_ONLY_WITH_IMMEDIATE, 6, false, 9 },
        { ROCE_RC_ATOMIC_ACKNOWLEDGE, 6, true, 0 },
        { ROCE_RC_COMPARE_SWAP, 4, false, 0 },
    };

    fs->f[0] = g_memdup2(known_frame, sizeof(known_frame));
    fs->n[0] = sizeof(known_frame);
    for (size_t i = 0; i < G_N_ELEMENTS(shape); i++) {
        fs->n[i + 1] = build_one(buf, sizeof(buf), shape[i].op,
                                 shape[i].ipver, shape[i].vlan,
                                 shape[i].plen);
        fs->f[i + 1] = g_memdup2(buf, fs->n[i + 1]);
    }
}

static void frames_free(Frames *fs)
{
    for (int i = 0; i < 5; i++) {
        g_free(fs->f[i]);
    }
}

static void test_truncated(void)
{
    Frames fs;
    RocePkt p;

    frames_init(&fs);
    for (int i = 0; i < 5; i++) {
        g_assert_cmpint(roce_parse(fs.f[i], fs.n[i], &p), ==, ROCE_OK);
        for (size_t n = 0; n < fs.n[i]; n++) {
            /* exactly n bytes: valgrind sees any read past them */
            uint8_t *t = g_malloc(n ? n : 1);
            int r;

            memcpy(t, fs.f[i], n);
            r = roce_parse(t, n, &p);
            if (r == ROCE_OK) {
                g_test_message("frame %d cut to %zu bytes parsed", i, n);
            }
            g_assert_cmpint(r, <, 0);
            g_assert_true(n >= l3_off(fs.f[i]) + (is_v6(fs.f[i]) ? 40 : 20)
                          || r == ROCE_DROP_TRUNCATED);
            g_assert_true(n < l3_off(fs.f[i]) + (is_v6(fs.f[i]) ? 40 : 20)
                          || r == ROCE_DROP_IP_LENGTH);
            g_free(t);
        }
    }
    frames_free(&fs);
}

/* What parse must say when bit 'bit' of byte 'at' of f is flipped */
static int flip_expect(const uint8_t *f, size_t at, int bit)
{
    size_t l3 = l3_off(f), udp = l3 + (is_v6(f) ? 40 : 20), bth = udp + 8;

    if (at >= l3 - 2 && at < l3) {
        return ROCE_DROP_NOT_IP;    /* EtherType */
    }
    if (at == 12 || at == 13) {
        return ROCE_DROP_NOT_IP;    /* TPID: the EtherType now */
    }
    if (at < l3) {
        return ROCE_OK;             /* MACs, TCI: no checksum covers them */
    }
    if (!is_v6(f) && at < udp) {
        switch (at - l3) {
        case 0:
            return ROCE_DROP_IP_HEADER;
        case 2:
        case 3:
            return 1;               /* IP_LENGTH or IP_CSUM */
        default:
            return ROCE_DROP_IP_CSUM;
        }
    }
    if (at < udp) {
        switch (at - l3) {
        case 0:
            return bit >= 4 ? ROCE_DROP_IP_HEADER : ROCE_OK;
        case 1:
        case 2:
        case 3:
        case 7:
            return ROCE_OK;         /* traffic class, flow label, hops */
        case 4:
        case 5:
            return 2;               /* IP_LENGTH or UDP_LENGTH */
        case 6:
            return ROCE_DROP_NOT_UDP;
        default:
            return ROCE_DROP_ICRC;  /* addresses */
        }
    }
    if (at < bth) {
        switch (at - udp) {
        case 0:
        case 1:
            return ROCE_DROP_ICRC;
        case 2:
        case 3:
            return ROCE_DROP_UDP_PORT;
        case 4:
        case 5:
            return ROCE_DROP_UDP_LENGTH;
        default:
            return ROCE_DROP_UDP_CSUM;  /* 0 became a wrong checksum */
        }
    }
    if (at == bth + 4) {
        return ROCE_OK;             /* FECN, BECN, resv6: masked */
    }
    return ROCE_DROP_ICRC;
}

static void test_bitflip(void)
{
    Frames fs;
    unsigned ok = 0, refused = 0;

    frames_init(&fs);
    for (int i = 0; i < 5; i++) {
        const uint8_t *f = fs.f[i];
        size_t n = fs.n[i];
        uint8_t *t = g_malloc(n), *re = g_malloc(n);

        for (size_t at = 0; at < n; at++) {
            for (int bit = 0; bit < 8; bit++) {
                RocePkt p;
                int want = flip_expect(f, at, bit), r;

                memcpy(t, f, n);
                t[at] ^= 1 << bit;
                r = roce_parse(t, n, &p);
                if (want == 1) {
                    g_assert_true(r == ROCE_DROP_IP_LENGTH ||
                                  r == ROCE_DROP_IP_CSUM);
                } else if (want == 2) {
                    g_assert_true(r == ROCE_DROP_IP_LENGTH ||
                                  r == ROCE_DROP_UDP_LENGTH);
                } else {
                    if (r != want) {
                        g_test_message("frame %d byte %zu bit %d: %s", i,
                                       at, bit, roce_drop_reason_str(r));
                    }
                    g_assert_cmpint(r, ==, want);
                }
                if (r == ROCE_OK) {
                    /* a field outside the ICRC changed: rebuilt as is */
                    g_assert_cmpuint(roce_build(&p, re, n), ==, n);
                    g_assert_cmpmem(re, n, t, n);
                    ok++;
                } else {
                    refused++;
                }
            }
        }
        g_free(t);
        g_free(re);
    }
    g_test_message("bit flips: %u refused, %u accepted (unprotected)",
                   refused, ok);
    frames_free(&fs);
}

/* IPv4 TOS and TTL are masked out of the ICRC: the header checksum alone */
static void test_masked_ipv4(void)
{
    uint8_t t[sizeof(known_frame)];
    RocePkt p;

    for (int field = 1; field <= 8; field += 7) {
        for (int bit = 0; bit < 8; bit++) {
            memcpy(t, known_frame, sizeof(t));
            t[14 + field] ^= 1 << bit;
            g_assert_cmpint(roce_parse(t, sizeof(t), &p), ==,
                            ROCE_DROP_IP_CSUM);
            fix_ipcsum(t);
            g_assert_cmpint(roce_parse(t, sizeof(t), &p), ==, ROCE_OK);
            g_assert_cmpuint(field == 1 ? p.tclass : p.ttl, ==,
                             t[14 + field]);
        }
    }
    /* the source address is not masked: fixing the checksum is not enough */
    memcpy(t, known_frame, sizeof(t));
    t[14 + 12] ^= 1;
    fix_ipcsum(t);
    g_assert_cmpint(roce_parse(t, sizeof(t), &p), ==, ROCE_DROP_ICRC);
}

static int parse_copy(const uint8_t *f, size_t n)
{
    RocePkt p;
    uint8_t *t = g_memdup2(f, n);
    int r = roce_parse(t, n, &p);

    g_free(t);
    return r;
}

/* Frames roce_parse() refuses, each for its reason: the BTH */
static void test_refused_bth(void)
{
    uint8_t f[256], t[256];
    size_t n, b;

    /* every invalid opcode, with a valid ICRC */
    n = build_one(f, sizeof(f), ROCE_RC_ACKNOWLEDGE, 4, false, 0);
    b = bth_off(f);
    for (unsigned op = 0; op < 256; op++) {
        if (op_valid(op)) {
            continue;
        }
        memcpy(t, f, n);
        t[b] = op;
        refix(t);
        g_assert_cmpint(parse_copy(t, n), ==, ROCE_DROP_OPCODE);
    }

    /* transport version */
    memcpy(t, f, n);
    t[b + 1] |= 1;
    refix(t);
    g_assert_cmpint(parse_copy(t, n), ==, ROCE_DROP_TVER);

    /* pad larger than the room after the headers (an ACK has none) */
    memcpy(t, f, n);
    t[b + 1] |= 0x20;
    refix(t);
    g_assert_cmpint(parse_copy(t, n), ==, ROCE_DROP_PAD);

    /* payload on an ACK: a SEND_ONLY of 8 bytes relabelled */
    n = build_one(f, sizeof(f), ROCE_RC_SEND_ONLY, 4, false, 8);
    b = bth_off(f);
    memcpy(t, f, n);
    t[b] = ROCE_RC_ACKNOWLEDGE;
    refix(t);
    g_assert_cmpint(parse_copy(t, n), ==, ROCE_DROP_PAYLOAD);

    /* an ACK without room for its AETH: a SEND_ONLY of 0 bytes */
    n = build_one(f, sizeof(f), ROCE_RC_SEND_ONLY, 6, true, 0);
    b = bth_off(f);
    memcpy(t, f, n);
    t[b] = ROCE_RC_ACKNOWLEDGE;
    refix(t);
    g_assert_cmpint(parse_copy(t, n), ==, ROCE_DROP_SHORT);
}

/* ... lengths: pad, UDP against IP, IP against the frame, IPv6 */
static void test_refused_lengths(void)
{
    uint8_t f[256], t[256];
    size_t n, l3;

    /* payload + pad not a multiple of 4; a nonzero pad byte */
    n = build_one(f, sizeof(f), ROCE_RC_SEND_ONLY, 4, false, 5);
    l3 = l3_off(f);
    memcpy(t, f, n);
    t[l3 + 3] -= 1;             /* IP total length */
    t[l3 + 20 + 5] -= 1;        /* UDP length */
    refix(t);                   /* the last byte: Ethernet padding now */
    g_assert_cmpint(parse_copy(t, n), ==, ROCE_DROP_PAD);
    memcpy(t, f, n);
    t[n - 5] = 1;               /* the last pad byte */
    refix(t);
    g_assert_cmpint(parse_copy(t, n), ==, ROCE_DROP_PAD);

    /* UDP length disagreeing with the IP length, both ways */
    memcpy(t, f, n);
    t[l3 + 20 + 5] -= 4;
    refix(t);
    g_assert_cmpint(parse_copy(t, n), ==, ROCE_DROP_UDP_LENGTH);
    memcpy(t, f, n);
    t[l3 + 20 + 5] += 4;
    refix(t);
    g_assert_cmpint(parse_copy(t, n), ==, ROCE_DROP_UDP_LENGTH);

    /* IP total length beyond the frame (v4, v6), or below the header */
    memcpy(t, f, n);
    t[l3 + 3] += 1;
    fix_ipcsum(t);
    g_assert_cmpint(parse_copy(t, n), ==, ROCE_DROP_IP_LENGTH);
    memcpy(t, f, n);
    t[l3 + 2] = 0;
    t[l3 + 3] = 19;
    fix_ipcsum(t);
    g_assert_cmpint(parse_copy(t, n), ==, ROCE_DROP_IP_LENGTH);
    n = build_one(f, sizeof(f), ROCE_UD_SEND_ONLY, 6, false, 3);
    memcpy(t, f, n);
    t[14 + 5] += 1;
    g_assert_cmpint(parse_copy(t, n), ==, ROCE_DROP_IP_LENGTH);
    /* IPv6 payload shorter than a UDP header */
    memcpy(t, f, n);
    t[14 + 4] = 0;
    t[14 + 5] = 7;
    g_assert_cmpint(parse_copy(t, n), ==, ROCE_DROP_UDP_LENGTH);
    /* IPv6: next header not UDP (an extension header) */
    memcpy(t, f, n);
    t[14 + 6] = 0;
    g_assert_cmpint(parse_copy(t, n), ==, ROCE_DROP_NOT_UDP);
}

/* ... not IP, not UDP, another port, IPv4 options, fragments, version */
static void test_refused_headers(void)
{
    uint8_t f[256], t[256];
    size_t n, l3;

    /* not IP: ARP, ARP behind a tag, an 802.1ad outer tag */
    n = build_one(f, sizeof(f), ROCE_RC_SEND_ONLY, 4, true, 4);
    memcpy(t, f, n);
    t[16] = 0x08;
    t[17] = 0x06;
    g_assert_cmpint(parse_copy(t, n), ==, ROCE_DROP_NOT_IP);
    memcpy(t, f, n);
    t[12] = 0x88;
    t[13] = 0xa8;
    g_assert_cmpint(parse_copy(t, n), ==, ROCE_DROP_NOT_IP);

    /* IPv4: not UDP, another port, options, fragments, version */
    n = build_one(f, sizeof(f), ROCE_RC_SEND_ONLY, 4, false, 4);
    l3 = 14;
    memcpy(t, f, n);
    t[l3 + 9] = 6;
    refix(t);
    g_assert_cmpint(parse_copy(t, n), ==, ROCE_DROP_NOT_UDP);
    memcpy(t, f, n);
    t[l3 + 20 + 3] += 1;
    refix(t);
    g_assert_cmpint(parse_copy(t, n), ==, ROCE_DROP_UDP_PORT);
    memcpy(t, f, n);
    t[l3] = 0x46;
    fix_ipcsum(t);
    g_assert_cmpint(parse_copy(t, n), ==, ROCE_DROP_IP_HEADER);
    memcpy(t, f, n);
    t[l3 + 6] = 0x20;           /* more fragments */
    t[l3 + 7] = 0;
    refix(t);
    g_assert_cmpint(parse_copy(t, n), ==, ROCE_DROP_IP_HEADER);
    memcpy(t, f, n);
    t[l3 + 6] = 0x40;           /* DF and an offset */
    t[l3 + 7] = 1;
    refix(t);
    g_assert_cmpint(parse_copy(t, n), ==, ROCE_DROP_IP_HEADER);
    memcpy(t, f, n);
    t[l3] = 0x65;
    refix(t);
    g_assert_cmpint(parse_copy(t, n), ==, ROCE_DROP_IP_HEADER);

    /* UDP payload shorter than a BTH and an ICRC */
    memcpy(t, f, n);
    t[l3 + 2] = 0;
    t[l3 + 3] = 20 + 8 + 15;
    t[l3 + 20 + 4] = 0;
    t[l3 + 20 + 5] = 8 + 15;
    fix_ipcsum(t);
    g_assert_cmpint(parse_copy(t, n), ==, ROCE_DROP_SHORT);
}

/* ... the UDP checksum; and every reason has a name of its own */
static void test_refused_udp_csum(void)
{
    uint8_t f[256], t[256];
    size_t n;
    RocePkt p;

    /* a nonzero UDP checksum is checked: right, then wrong */
    make_pkt(&p, ROCE_RC_SEND_ONLY, 6, false, 6);
    p.udp_csum = 1;
    n = roce_build(&p, f, sizeof(f));
    g_assert_cmpint(parse_copy(f, n), ==, ROCE_OK);
    memcpy(t, f, n);
    t[n - 8] ^= 0x10;           /* payload: the checksum sees it first */
    g_assert_cmpint(parse_copy(t, n), ==, ROCE_DROP_UDP_CSUM);
    memcpy(t, f, n);
    t[14 + 40 + 6] ^= 1;
    g_assert_cmpint(parse_copy(t, n), ==, ROCE_DROP_UDP_CSUM);
    /* the checksum is masked in the ICRC: zeroed, the frame is valid */
    memcpy(t, f, n);
    t[14 + 40 + 6] = t[14 + 40 + 7] = 0;
    g_assert_cmpint(parse_copy(t, n), ==, ROCE_OK);

    /* reasons: distinct names */
    for (int r = 0; r > -ROCE_DROP_COUNT; r--) {
        for (int s = r - 1; s > -ROCE_DROP_COUNT; s--) {
            g_assert_cmpstr(roce_drop_reason_str(r), !=,
                            roce_drop_reason_str(s));
        }
        g_assert_cmpstr(roce_drop_reason_str(r), !=, "unknown drop reason");
    }
    g_assert_cmpstr(roce_drop_reason_str(1), ==, "unknown drop reason");
    g_assert_cmpstr(roce_drop_reason_str(-ROCE_DROP_COUNT), ==,
                    "unknown drop reason");
}

static void test_build_refused(void)
{
    uint8_t f[256], *big, *out;
    RocePkt p, q;
    size_t n;

    make_pkt(&p, ROCE_RC_RDMA_WRITE_FIRST, 4, true, 9);
    n = roce_build(&p, f, sizeof(f));
    g_assert_cmpuint(n, >, 0);
    /* every capacity short of the frame: 0, nothing written past it */
    for (size_t cap = 0; cap < n; cap++) {
        uint8_t *t = g_malloc(cap ? cap : 1);

        g_assert_cmpuint(roce_build(&p, t, cap), ==, 0);
        g_free(t);
    }

#define REFUSED(stmt) do { \
        q = p; \
        stmt; \
        g_assert_cmpuint(roce_build(&q, f, sizeof(f)), ==, 0); \
    } while (0)

    REFUSED(q.opcode = 0x15);
    REFUSED(q.opcode = 0xff);
    REFUSED(q.tver = 1);
    REFUSED(q.dqpn = 0x1000000);
    REFUSED(q.psn = 0x1000000);
    REFUSED(q.resv6 = 0x40);
    REFUSED(q.resv7 = 0x80);
    REFUSED(q.ip_ver = 5);
    REFUSED(q.sgid[0] = 1);
    REFUSED(q.dgid[11] = 0);
    REFUSED(q.payload = NULL);
    REFUSED(q.opcode = ROCE_RC_ACKNOWLEDGE);        /* with payload */
    REFUSED({ q.opcode = ROCE_RC_ACKNOWLEDGE; q.payload_len = 0;
              q.aeth.msn = 0x1000000; });
    REFUSED({ q.opcode = ROCE_UD_SEND_ONLY; q.deth.sqp = 0x1000000; });
    REFUSED({ q.ip_ver = 6; q.flow_label = 0x100000; });
#undef REFUSED

    /* IP lengths are 16 bits: 20 + 8 + 28 + payload + pad + 4 */
    big = g_malloc0(65536);
    out = g_malloc(ROCE_MAX_FRAME);
    q = p;
    q.payload = big;
    q.payload_len = 65473;                          /* pad 3: 65536 */
    g_assert_cmpuint(roce_build(&q, out, ROCE_MAX_FRAME), ==, 0);
    q.payload_len = 65472;                          /* pad 0: 65532 */
    g_assert_cmpuint(roce_build(&q, out, ROCE_MAX_FRAME), ==, 18 + 65532);
    g_assert_cmpint(roce_parse(out, 18 + 65532, &q), ==, ROCE_OK);
    g_assert_cmpuint(q.payload_len, ==, 65472);
    g_free(big);
    g_free(out);
}

/*
 * Linux rxe's frames (tests/unit/data/rxe-frames.pcap): two VMs with rxe
 * over virtio-net (rdma-core pingpongs RC/UD/SRQ, perftest send, write,
 * read and atomic latency, an IPv6 RC pingpong), captured by QEMU's
 * filter-dump on one VM's netdev, then cut down by data/trim-pcap.py to 3
 * frames per opcode and IP version, and 3 of each other kind of frame.
 */

static uint32_t rd32(const uint8_t *b, bool swap)
{
    uint32_t v = le32(b);

    return swap ? GUINT32_SWAP_LE_BE(v) : v;
}

static bool is_roce_udp(const uint8_t *f, size_t n)
{
    size_t o;

    if (n < 14) {
        return false;
    }
    o = l3_off(f);
    if (n < o + 40) {
        return false;
    }
    if (be16(f + o - 2) == 0x0800) {
        return f[o + 9] == 17 && (f[o] & 0xf) == 5 &&
               be16(f + o + 22) == 4791;
    }
    if (be16(f + o - 2) == 0x86dd) {
        return n >= o + 48 && f[o + 6] == 17 && be16(f + o + 42) == 4791;
    }
    return false;
}

static void test_rxe_capture(void)
{
    g_autofree char *path = g_build_filename(UNIT_DATA_DIR,
                                             "rxe-frames.pcap", NULL);
    g_autofree uint8_t *d = NULL;
    size_t len, off;
    bool swap;
    unsigned seen[2][256] = { { 0 } }, roce = 0, other = 0;
    static const uint8_t needed[] = {
        ROCE_RC_SEND_ONLY, ROCE_RC_RDMA_READ_REQUEST, ROCE_RC_ACKNOWLEDGE,
        ROCE_RC_ATOMIC_ACKNOWLEDGE, ROCE_UD_SEND_ONLY,
    };
    GString *s = g_string_new("opcodes seen:");
    bool any;

    g_assert_true(g_file_get_contents(path, (char **)&d, &len, NULL));
    g_assert_cmpuint(len, >=, 24);
    /* microsecond or nanosecond pcap, either byte order */
    swap = le32(d) == 0xd4c3b2a1 || le32(d) == 0x4d3cb2a1;
    g_assert_true(swap || le32(d) == 0xa1b2c3d4 || le32(d) == 0xa1b23c4d);
    g_assert_cmpuint(rd32(d + 20, swap), ==, 1);    /* LINKTYPE_ETHERNET */

    for (off = 24; off < len;) {
        uint32_t incl, orig;
        const uint8_t *f;
        uint8_t out[ROCE_MAX_FRAME];
        RocePkt p;
        size_t n, ip_end;
        int r;

        g_assert_cmpuint(len - off, >=, 16);
        incl = rd32(d + off + 8, swap);
        orig = rd32(d + off + 12, swap);
        g_assert_cmpuint(len - off - 16, >=, incl);
        f = d + off + 16;
        off += 16 + incl;
        if (!is_roce_udp(f, incl)) {
            /* ARP, TCP, MLD, neighbour discovery */
            g_assert_cmpint(roce_parse(f, incl, &p), <, 0);
            other++;
            continue;
        }
        g_assert_cmpuint(incl, ==, orig);   /* not cut by the snap length */
        roce++;
        r = roce_parse(f, incl, &p);
        if (r) {
            g_test_message("frame %u: %s", roce + other,
                           roce_drop_reason_str(r));
        }
        g_assert_cmpint(r, ==, ROCE_OK);
        seen[p.ip_ver == 6][p.opcode]++;
        ip_end = l3_off(f) + ip_len(f);
        n = roce_build(&p, out, sizeof(out));
        g_assert_cmpuint(n, ==, ip_end);
        g_assert_cmpmem(out, n, f, ip_end);
    }
    g_assert_cmpuint(roce, >, 0);

    for (int v = 0; v < 2; v++) {
        for (int op = 0; op < 256; op++) {
            if (seen[v][op]) {
                g_string_append_printf(s, " %s/IPv%d x%u",
                                       roce_opcode_name(op), v ? 6 : 4,
                                       seen[v][op]);
            }
        }
    }
    g_test_message("%u RoCEv2 frames (%u others): %s", roce, other, s->str);
    g_string_free(s, TRUE);

    for (size_t i = 0; i < sizeof(needed); i++) {
        if (!seen[0][needed[i]] && !seen[1][needed[i]]) {
            g_test_message("missing: %s", roce_opcode_name(needed[i]));
        }
        g_assert_true(seen[0][needed[i]] || seen[1][needed[i]]);
    }
    any = false;
    for (int op = ROCE_RC_RDMA_WRITE_FIRST;
         op <= ROCE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE; op++) {
        any |= seen[0][op] || seen[1][op];
    }
    g_assert_true(any);
    any = false;
    for (int op = ROCE_RC_RDMA_READ_RESPONSE_FIRST;
         op <= ROCE_RC_RDMA_READ_RESPONSE_ONLY; op++) {
        any |= seen[0][op] || seen[1][op];
    }
    g_assert_true(any);
    /* rxe over IPv6 too (its UDP checksum is 0 there as well) */
    any = false;
    for (int op = 0; op < 256; op++) {
        any |= seen[1][op] != 0;
    }
    g_assert_true(any);
    g_assert_true(seen[0][ROCE_RC_COMPARE_SWAP] ||
                  seen[1][ROCE_RC_COMPARE_SWAP] ||
                  seen[0][ROCE_RC_FETCH_ADD] || seen[1][ROCE_RC_FETCH_ADD]);
}

int main(int argc, char **argv)
{
    for (size_t i = 0; i < sizeof(payload_src); i++) {
        payload_src[i] = 0x30 + i;
    }
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/roce/wire/crc32", test_crc32);
    g_test_add_func("/roce/wire/opcodes", test_opcodes);
    g_test_add_func("/roce/wire/aeth", test_aeth);
    g_test_add_func("/roce/wire/known-frame", test_known_frame);
    g_test_add_func("/roce/wire/roundtrip", test_roundtrip);
    g_test_add_func("/roce/wire/truncated", test_truncated);
    g_test_add_func("/roce/wire/bitflip", test_bitflip);
    g_test_add_func("/roce/wire/masked-ipv4", test_masked_ipv4);
    g_test_add_func("/roce/wire/refused/bth", test_refused_bth);
    g_test_add_func("/roce/wire/refused/lengths", test_refused_lengths);
    g_test_add_func("/roce/wire/refused/headers", test_refused_headers);
    g_test_add_func("/roce/wire/refused/udp-csum", test_refused_udp_csum);
    g_test_add_func("/roce/wire/build-refused", test_build_refused);
    g_test_add_func("/roce/wire/rxe-capture", test_rxe_capture);
    return g_test_run();
}
