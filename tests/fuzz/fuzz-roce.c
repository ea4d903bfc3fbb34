/*
 * libFuzzer target: the RoCEv2 wire codec (backend/roce_wire.c) against
 * a hostile network.  Each input is one Ethernet frame.  roce_parse() must
 * not read outside it (ASan: libFuzzer's input buffer is exactly its
 * size); a frame it accepts must come back from roce_build() byte for byte
 * up to the end of its IP packet, and parse again to the same packet.
 * Anything else is a bug: abort().
 *
 * Few mutations keep a frame's checksums right, so each input is also
 * tried a second time with its IPv4 header checksum and its ICRC written
 * again (where its lengths allow): that reaches what parse checks after
 * the ICRC (opcode, transport version, lengths, pad).
 *
 *   PVRDMA_ROCE_SEEDS=DIR fuzz-roce    writes the seed frames into DIR
 *                                      (make -C tests/fuzz roce-corpus)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include <glib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hw/rdma/roce_wire.h"

static uint8_t out[ROCE_MAX_FRAME];

/* where the IP packet of an accepted frame ends, from its own bytes */
static size_t ip_end(const uint8_t *f)
{
    size_t l3 = (f[12] == 0x81 && f[13] == 0x00) ? 18 : 14;

    if (f[l3 - 2] == 0x86) {
        return l3 + 40 + (f[l3 + 4] << 8 | f[l3 + 5]);
    }
    return l3 + (f[l3 + 2] << 8 | f[l3 + 3]);
}

static uint16_t be16(const uint8_t *b)
{
    return b[0] << 8 | b[1];
}

/*
 * In copy (size bytes): the IPv4 header checksum and the ICRC written
 * again, if the frame is long enough for what they cover.
 */
static void fix_checksums(uint8_t *f, size_t size)
{
    size_t l3, iph, len;
    uint16_t type;
    uint32_t icrc, sum = 0;

    if (size < 18) {
        return;
    }
    l3 = be16(f + 12) == 0x8100 ? 18 : 14;
    type = be16(f + l3 - 2);
    if (type != 0x0800 && type != 0x86dd) {
        return;
    }
    iph = type == 0x0800 ? 20 : 40;
    if (size - l3 < iph) {
        return;
    }
    if (type == 0x0800) {
        len = be16(f + l3 + 2);
        f[l3 + 10] = f[l3 + 11] = 0;
        for (size_t i = 0; i < iph; i += 2) {
            sum += be16(f + l3 + i);
        }
        sum = (sum & 0xffff) + (sum >> 16);
        sum = (sum & 0xffff) + (sum >> 16);
        f[l3 + 10] = ~sum >> 8;
        f[l3 + 11] = ~sum;
    } else {
        len = iph + be16(f + l3 + 4);
    }
    if (len > size - l3 ||
        len < iph + 8 + ROCE_BTH_LEN + ROCE_ICRC_LEN) {
        return;
    }
    icrc = roce_icrc(f + l3, len, type == 0x86dd);
    for (int i = 0; i < 4; i++) {
        f[l3 + len - 4 + i] = icrc >> (8 * i);
    }
}

static void write_seeds(const char *dir)
{
    static const uint8_t ops[] = {
        0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a,
        0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x16,
        0x17, 0x64, 0x65,
    };
    static const uint8_t payload[16] = "0123456789abcdef";
    uint8_t buf[256];

    for (size_t i = 0; i < sizeof(ops); i++) {
        const RoceOpInfo *info = roce_opcode_info(ops[i]);
        RocePkt p = {
            .dmac = { 0x02, 0, 0, 0, 0, 0x02 },
            .smac = { 0x02, 0, 0, 0, 0, 0x01 },
            .vlan = i % 3 == 0,
            .vlan_tci = 0x0064,
            .ip_ver = i % 2 ? 6 : 4,
            .ttl = 64,
            .df = true,
            .sport = 0xc000 + i,
            .udp_csum = i % 5 == 0,
            .opcode = ops[i],
            .pkey = 0xffff,
            .dqpn = 0x11,
            .ack_req = true,
            .psn = 0x100 + i,
            .reth = { 0x10000, 0x1234, 64 },
            .aeth = { roce_aeth_ack(ROCE_AETH_NO_CREDITS), 7 },
            .atmeth = { 0x10040, 0x1234, 1, 0 },
            .atmack = 42,
            .imm = 0x55,
            .ieth_rkey = 0x1234,
            .deth = { 0x80010000, 0, 1 },
            .payload = payload,
            .payload_len = info->payload ? i % 11 : 0,
        };
        g_autofree char *path = NULL;
        size_t n;

        if (p.ip_ver == 4) {
            memcpy(p.sgid, "\0\0\0\0\0\0\0\0\0\0\xff\xff\x0a\0\0\x01", 16);
            memcpy(p.dgid, "\0\0\0\0\0\0\0\0\0\0\xff\xff\x0a\0\0\x02", 16);
        } else {
            memcpy(p.sgid, "\xfe\x80\0\0\0\0\0\0\0\0\0\0\0\0\0\x01", 16);
            memcpy(p.dgid, "\xfe\x80\0\0\0\0\0\0\0\0\0\0\0\0\0\x02", 16);
        }
        n = roce_build(&p, buf, sizeof(buf));
        path = g_strdup_printf("%s/%s-ipv%u%s", dir, info->name, p.ip_ver,
                               p.vlan ? "-vlan" : "");
        if (!n || !g_file_set_contents(path, (const char *)buf, n, NULL)) {
            fprintf(stderr, "fuzz-roce: cannot write %s\n", path);
            exit(1);
        }
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *dir = getenv("PVRDMA_ROCE_SEEDS");

    if (dir) {
        write_seeds(dir);
        exit(0);
    }
    return 0;
}

static void one_frame(const uint8_t *data, size_t size)
{
    RocePkt p, q;
    size_t n, end;
    int r;

    r = roce_parse(data, size, &p);
    if (r != ROCE_OK) {
        if (r > 0 || r <= -ROCE_DROP_COUNT || !roce_drop_reason_str(r)) {
            abort();
        }
        return;
    }
    end = ip_end(data);
    n = roce_build(&p, out, sizeof(out));
    if (n != end || n > size || memcmp(out, data, n) != 0) {
        abort();
    }
    /* one byte less room: refused, not cut */
    if (roce_build(&p, out, n - 1) != 0) {
        abort();
    }
    /* the rebuilt frame parses to the same packet (payload in 'out') */
    n = roce_build(&p, out, sizeof(out));
    if (roce_parse(out, n, &q) != ROCE_OK || q.payload_len != p.payload_len ||
        q.opcode != p.opcode || q.psn != p.psn || q.icrc != p.icrc ||
        (p.payload_len && memcmp(q.payload, p.payload, p.payload_len))) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = g_memdup2(data, size);

    one_frame(data, size);
    if (copy) {
        fix_checksums(copy, size);
        one_frame(copy, size);
    }
    g_free(copy);
    return 0;
}
