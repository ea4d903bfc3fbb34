/*
 * fuzz-roce-rx: the seed inputs (make -C tests/fuzz roce-rx-corpus), one
 * per kind of traffic, in the format of fuzz-roce-rx.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include <stdio.h>
#include <stdlib.h>
#include "fuzz-input.h"
#include "hw/rdma/pvrdma_abi.h"
#include "fuzz-roce-rx.h"

static void seed_write(const char *dir, const char *name, GByteArray *b)
{
    g_autofree char *path = g_build_filename(dir, name, NULL);

    if (!g_file_set_contents(path, (const char *)b->data, b->len, NULL)) {
        fprintf(stderr, "fuzz-roce-rx: cannot write %s\n", path);
        exit(1);
    }
    g_byte_array_free(b, TRUE);
}

/* config: PSNs, timeout 14, retry 3, rnr_retry 2, rd 4/4, 4 receives */
static GByteArray *seed_new(uint8_t psns)
{
    GByteArray *b = g_byte_array_new();

    seed_u8(b, psns);
    seed_u8(b, 14);
    seed_u8(b, 3 | 2 << 3);
    seed_u8(b, 3 | 4 << 4);
    seed_u8(b, 1 | 1 << 5);         /* rnr timer 1, RC1 MTU 512 */
    seed_u8(b, 4);
    return b;
}

static unsigned opcode_index(uint8_t op)
{
    for (unsigned i = 0; i < NOPCODES; i++) {
        if (opcodes[i] == op) {
            return i;
        }
    }
    abort();
}

/* A field-built packet to RC0 at the responder's PSN (+delta) */
/* OP_BURST or 0: for the packets seed_pkt() writes */
static uint8_t seed_burst;

static void seed_pkt(GByteArray *b, uint8_t op, uint8_t fl, uint8_t psnmode,
                     int8_t delta)
{
    seed_u8(b, OP_PKT0 | seed_burst);
    seed_u8(b, opcode_index(op));
    seed_u8(b, fl);
    seed_u8(b, 0);                  /* RC0 */
    seed_u8(b, psnmode);
    seed_u8(b, (uint8_t)delta);
}

static void seed_reth(GByteArray *b, uint16_t off, uint8_t lenmode)
{
    seed_u8(b, 0);                  /* MR va, MR rkey */
    seed_le(b, off, 2);
    seed_u8(b, lenmode);
}

static void seed_payload(GByteArray *b, uint8_t len, uint8_t seed)
{
    seed_u8(b, len);
    seed_u8(b, seed);
}

static void seed_send(GByteArray *b, uint8_t qsel, uint8_t opi, uint8_t lb,
                      uint8_t mode, uint8_t flags, uint8_t dst, uint16_t off)
{
    seed_u8(b, OP_SEND);
    seed_u8(b, qsel);
    seed_u8(b, opi);
    seed_u8(b, lb);
    seed_u8(b, mode);
    seed_u8(b, flags);
    seed_u8(b, dst);
    seed_le(b, off, 2);
}

static void seed_peer(GByteArray *b, uint8_t sel, uint8_t act, uint8_t arg)
{
    seed_u8(b, OP_PEER);
    seed_u8(b, sel);
    seed_u8(b, act);
    seed_u8(b, arg);
}

static void seed_clock(GByteArray *b, uint8_t m)
{
    seed_u8(b, OP_CLOCK);
    seed_u8(b, m);
}

static void seed_recv(GByteArray *b, uint8_t qsel, uint8_t lb)
{
    seed_u8(b, OP_RECV);
    seed_u8(b, qsel);
    seed_u8(b, 1 << 6);             /* one SGE into the MR */
    seed_u8(b, lb);
    seed_le(b, 0x1000, 2);
}

/* Seeds: the peer's requests to our responder: SEND, WRITE, READ, atomics */
static void seeds_responder(const char *dir)
{
    GByteArray *b;

    /* SEND FIRST / MIDDLE / LAST, field by field, then SEND ONLY */
    b = seed_new(0);
    seed_pkt(b, ROCE_RC_SEND_FIRST, PF_FIT, 0, 0);
    seed_payload(b, 0, 1);
    seed_pkt(b, ROCE_RC_SEND_MIDDLE, PF_FIT, 0, 0);
    seed_payload(b, 0, 2);
    seed_pkt(b, ROCE_RC_SEND_LAST, PF_FIT | PF_ACKREQ, 0, 0);
    seed_payload(b, 100, 3);
    seed_pkt(b, ROCE_RC_SEND_ONLY_WITH_IMMEDIATE, PF_FIT | PF_ACKREQ, 0, 0);
    seed_u8(b, 0x42);               /* ImmDt */
    seed_payload(b, 50, 4);
    seed_write(dir, "send-first-middle-last", b);

    /* whole messages: SEND of 4 packets, WRITE of 3, WRITE_ONLY_IMM */
    b = seed_new(1);
    seed_u8(b, OP_MSG);
    seed_u8(b, 0);                  /* SEND */
    seed_u8(b, 3);                  /* 4 packets */
    seed_u8(b, 77);
    seed_u8(b, 0);                  /* RC0 */
    seed_u8(b, 0);
    seed_u8(b, 0);
    seed_le(b, 0, 2);
    seed_u8(b, OP_MSG);
    seed_u8(b, 1);                  /* WRITE */
    seed_u8(b, 2);
    seed_u8(b, 10);
    seed_u8(b, 0);
    seed_u8(b, 0);
    seed_u8(b, 0);
    seed_le(b, 0x800, 2);
    seed_u8(b, OP_MSG);
    seed_u8(b, 3);                  /* WRITE with immediate */
    seed_u8(b, 0);
    seed_u8(b, 64);
    seed_u8(b, 1);                  /* RC1 (IPv6) */
    seed_u8(b, 0);
    seed_u8(b, 0);
    seed_le(b, 0x2000, 2);
    seed_write(dir, "msg-send-write", b);

    /* WRITE FIRST / LAST by fields */
    b = seed_new(2);
    seed_pkt(b, ROCE_RC_RDMA_WRITE_FIRST, PF_FIT, 0, 0);
    seed_reth(b, 0x100, 0x04);      /* 2 * MTU + 1 */
    seed_payload(b, 0, 5);
    seed_pkt(b, ROCE_RC_RDMA_WRITE_MIDDLE, PF_FIT, 0, 0);
    seed_payload(b, 0, 6);
    seed_pkt(b, ROCE_RC_RDMA_WRITE_LAST, PF_FIT | PF_ACKREQ, 0, 0);
    seed_payload(b, 1, 7);
    seed_write(dir, "write", b);

    /* READ request (3 responses), the same again (duplicate) */
    b = seed_new(3);
    seed_pkt(b, ROCE_RC_RDMA_READ_REQUEST, PF_ACKREQ, 0, 0);
    seed_reth(b, 0x40, 40);         /* 640 bytes */
    seed_pkt(b, ROCE_RC_RDMA_READ_REQUEST, PF_ACKREQ, 0, -3);
    seed_reth(b, 0x40, 40);
    seed_write(dir, "read-request-dup", b);

    /* atomics: compare-swap, fetch-add, and the fetch-add again */
    b = seed_new(4);
    seed_pkt(b, ROCE_RC_COMPARE_SWAP, PF_ACKREQ, 0, 0);
    seed_u8(b, 0);
    seed_le(b, 0x80, 2);
    seed_u8(b, 9);                  /* swap */
    seed_u8(b, 0);                  /* compare */
    seed_pkt(b, ROCE_RC_FETCH_ADD, PF_ACKREQ, 0, 0);
    seed_u8(b, 0);
    seed_le(b, 0x80, 2);
    seed_u8(b, 5);
    seed_u8(b, 0);
    seed_pkt(b, ROCE_RC_FETCH_ADD, PF_ACKREQ, 0, -1);
    seed_u8(b, 0);
    seed_le(b, 0x80, 2);
    seed_u8(b, 5);
    seed_u8(b, 0);
    seed_write(dir, "atomic", b);
}

/*
 * Seeds: our requester against the peer's answers: ACKs, READ responses,
 * atomic ACKs, NAKs, timeouts
 */
static void seeds_requester(const char *dir)
{
    GByteArray *b;

    /* guest SEND of 3 packets and WRITE: ACKed by the peer */
    b = seed_new(5);
    seed_send(b, 0, 0, 80, 0, 0, 0, 0);         /* SEND 640 bytes */
    seed_peer(b, 0, PA_ACK, 0x1f);
    seed_send(b, 0, 3, 20, 0, 0, 1, 0x100);     /* WRITE 160 */
    seed_peer(b, 0, PA_ACK, 0x1f);
    seed_send(b, 1, 1, 0x82, 0, 0, 2, 0x200);   /* SEND_IMM 128 on RC1 */
    seed_peer(b, 1, PA_ACK_MAX, 0);
    seed_write(dir, "guest-send-ack", b);

    /* guest READ of 600 bytes: the peer's READ responses */
    b = seed_new(6);
    seed_send(b, 0, 5, 75, 0, 0, 3, 0x300);
    seed_peer(b, 0, PA_READ_RESP, 0);
    seed_send(b, 0, 5, 30, 0, 0, 3, 0x300);
    seed_peer(b, 0, PA_READ_PART, 0x08);
    seed_peer(b, 0, PA_READ_PART, 0x09);
    seed_write(dir, "guest-read-response", b);

    /* guest atomics: the peer's atomic ACK */
    b = seed_new(7);
    seed_send(b, 0, 6, 0, 0, 0, 4, 0x40);
    seed_peer(b, 0, PA_ATOMIC_ACK, 3);
    seed_send(b, 0, 7, 0, 0, 0, 4, 0x48);
    seed_peer(b, 0, PA_ATOMIC_ACK, 4);
    seed_write(dir, "guest-atomic-ack", b);

    /* RNR NAK, the timer, the retry ACKed; a sequence NAK; a timeout */
    b = seed_new(8);
    seed_send(b, 0, 0, 40, 0, 0, 0, 0);
    seed_peer(b, 0, PA_RNR, 1);
    seed_clock(b, 0);
    seed_peer(b, 0, PA_ACK, 0x1f);
    seed_send(b, 0, 0, 70, 0, 0, 0, 0);
    seed_peer(b, 2, PA_SEQ_NAK, 0);
    seed_peer(b, 0, PA_ACK, 0x1f);
    seed_send(b, 0, 3, 10, 0, 0, 0, 0);
    seed_clock(b, 2);               /* timeouts until retries run out */
    seed_clock(b, 7);
    seed_write(dir, "guest-rnr-nak-timeout", b);

    /* NAKs: remote access error on a WRITE; an RNR NAK for a SEND */
    b = seed_new(9);
    seed_send(b, 0, 3, 10, 0, 0, 0, 0);
    seed_peer(b, 0, PA_NAK, ROCE_NAK_REMOTE_ACCESS);
    seed_u8(b, OP_MODIFY);
    seed_u8(b, 0);
    seed_u8(b, 2);                  /* reconnect */
    seed_u8(b, 0x09);
    seed_send(b, 0, 0, 4, 0, 0, 0, 0);
    seed_peer(b, 0, PA_NAK, ROCE_NAK_INVALID_REQUEST);
    seed_write(dir, "guest-nak", b);
}

/*
 * Seeds: UD and GSI, QP state changes in flight, corrupt and raw frames,
 * answers by fields
 */
static void seeds_other(const char *dir)
{
    GByteArray *b;

    /* UD and GSI: packets in, a send out */
    b = seed_new(10);
    seed_u8(b, OP_PKT0);
    seed_u8(b, opcode_index(ROCE_UD_SEND_ONLY));
    seed_u8(b, 0);
    seed_u8(b, 2);                  /* UD */
    seed_u8(b, 3);                  /* raw PSN */
    seed_u8(b, 0);
    seed_le(b, 0x10, 3);
    seed_u8(b, 0);                  /* DETH: UD Q_Key */
    seed_payload(b, 200, 8);
    seed_u8(b, OP_PKT0);
    seed_u8(b, opcode_index(ROCE_UD_SEND_ONLY_WITH_IMMEDIATE));
    seed_u8(b, PF_V6);
    seed_u8(b, 3);                  /* GSI */
    seed_u8(b, 3);
    seed_u8(b, 0);
    seed_le(b, 0x11, 3);
    seed_u8(b, 0x55);               /* ImmDt */
    seed_u8(b, 1 | 4);              /* DETH: GSI Q_Key, sqp 1 */
    seed_payload(b, 100, 9);
    seed_send(b, 3, 0, 30, 0, 0, 0, 0);
    seed_send(b, 4, 1, 30, 0, 0, 3, 0);
    seed_write(dir, "ud-gsi", b);

    /* ERR, RESET, reconnect while a READ and a SEND are in flight */
    b = seed_new(11);
    seed_send(b, 0, 5, 100, 0, 0, 0, 0);
    seed_send(b, 0, 0, 100, 0, 0, 0, 0);
    seed_pkt(b, ROCE_RC_SEND_FIRST, PF_FIT, 0, 0);
    seed_payload(b, 0, 1);
    seed_u8(b, OP_MODIFY);
    seed_u8(b, 0);
    seed_u8(b, 0);                  /* ERR */
    seed_u8(b, 0);
    seed_clock(b, 0x83);
    seed_u8(b, OP_MODIFY);
    seed_u8(b, 0);
    seed_u8(b, 1);                  /* RESET */
    seed_u8(b, 0);
    seed_u8(b, OP_MODIFY);
    seed_u8(b, 0);
    seed_u8(b, 2);                  /* reconnect */
    seed_u8(b, 0x12);
    seed_recv(b, 0, 0x80);
    seed_u8(b, OP_MSG);
    seed_u8(b, 0);
    seed_u8(b, 1);
    seed_u8(b, 9);
    seed_u8(b, 0);
    seed_u8(b, 0);
    seed_u8(b, 0);
    seed_le(b, 0, 2);
    seed_write(dir, "modify-err-reset", b);

    /* a corrupted frame, a raw one, a frame for RC2 (loopback transport) */
    b = seed_new(12);
    seed_pkt(b, ROCE_RC_SEND_ONLY, PF_FIT | PF_MANGLE, 0, 0);
    /* (the mangle byte comes after the PSN mode: see pkt_op) */
    b->data[b->len - 1] = PM_FLIP | PM_REFIX;
    seed_u8(b, 0);                  /* delta */
    seed_payload(b, 16, 1);
    seed_le(b, 50, 2);              /* flip position */
    seed_u8(b, 0x10);
    seed_u8(b, OP_RAW);
    seed_u8(b, 3);
    seed_le(b, 64, 2);
    for (unsigned i = 0; i < 64; i++) {
        seed_u8(b, i == 12 ? 0x08 : i);
    }
    seed_u8(b, OP_PKT0);
    seed_u8(b, opcode_index(ROCE_RC_SEND_ONLY));
    seed_u8(b, PF_FIT);
    seed_u8(b, 4);                  /* RC2 */
    seed_u8(b, 0);
    seed_u8(b, 0);
    seed_payload(b, 8, 1);
    seed_write(dir, "corrupt-raw-loopback", b);

    /* ACK / NAK / RNR NAK frames by fields for what the requester sent */
    b = seed_new(13);
    seed_send(b, 0, 0, 40, 0, 0, 0, 0);
    seed_pkt(b, ROCE_RC_ACKNOWLEDGE, 0, 1, 0);
    seed_u8(b, roce_aeth_rnr_nak(3));
    seed_u8(b, 0);
    seed_clock(b, 0);
    seed_pkt(b, ROCE_RC_ACKNOWLEDGE, 0, 1, 0);
    seed_u8(b, roce_aeth_nak(ROCE_NAK_PSN_SEQ_ERR));
    seed_u8(b, 0);
    seed_pkt(b, ROCE_RC_ACKNOWLEDGE, 0, 2, 0);
    seed_u8(b, roce_aeth_ack(ROCE_AETH_NO_CREDITS));
    seed_u8(b, 1);
    seed_send(b, 0, 5, 50, 0, 0, 0, 0x100);
    seed_pkt(b, ROCE_RC_RDMA_READ_RESPONSE_FIRST, PF_FIT, 1, 0);
    seed_u8(b, 0);
    seed_u8(b, 0);
    seed_payload(b, 0, 1);
    seed_write(dir, "ack-nak-rnr-fields", b);
}

/*
 * Seeds: memory keys and QPs that change under traffic: FRMR
 * invalidation, MR deregistration, a big READ, QPs created again
 */
static void seeds_memory(const char *dir)
{
    GByteArray *b;

    /* remote invalidation of the FRMR, then a WRITE to it */
    b = seed_new(14);
    seed_u8(b, OP_MSG);
    seed_u8(b, 4);                  /* SEND with invalidate */
    seed_u8(b, 0);
    seed_u8(b, 10);
    seed_u8(b, 0);
    seed_u8(b, 0x40);               /* IETH: the FRMR's rkey */
    seed_u8(b, 0);
    seed_le(b, 0, 2);
    seed_pkt(b, ROCE_RC_RDMA_WRITE_ONLY, PF_FIT | PF_ACKREQ, 0, 0);
    seed_u8(b, 2 | 1 << 2);         /* FRMR va, FRMR rkey */
    seed_le(b, 0x10, 2);
    seed_u8(b, 0);
    seed_payload(b, 32, 1);
    seed_write(dir, "frmr-invalidate", b);

    /*
     * The MR deregistered under a guest READ and a peer's READ; the FRMR
     * invalidated and registered again, then written from the network.
     */
    b = seed_new(15);
    seed_send(b, 0, 5, 50, 0, 0, 0, 0x100);     /* guest READ 400 bytes */
    seed_pkt(b, ROCE_RC_RDMA_READ_REQUEST, PF_ACKREQ, 0, 0);
    seed_reth(b, 0x40, 0x30);                   /* 768 bytes */
    seed_u8(b, OP_MR);
    seed_u8(b, 0);                              /* deregister the MR */
    seed_peer(b, 0, PA_READ_RESP, 0);
    seed_clock(b, 0);
    seed_u8(b, OP_MR);
    seed_u8(b, 6);                              /* FRMR invalidated */
    seed_le(b, 0, 2);
    seed_u8(b, OP_MR);
    seed_u8(b, 2);                              /* FRMR registered again */
    seed_le(b, 1000, 2);
    seed_u8(b, OP_MODIFY);
    seed_u8(b, 0);
    seed_u8(b, 2);                              /* reconnect RC0 */
    seed_u8(b, 0);
    seed_pkt(b, ROCE_RC_RDMA_WRITE_ONLY, PF_FIT | PF_ACKREQ, 0, 0);
    seed_u8(b, 2 | 1 << 2);                     /* FRMR va, FRMR rkey */
    seed_le(b, 0x10, 2);
    seed_u8(b, 0);
    seed_payload(b, 32, 1);
    seed_write(dir, "mr-dereg-frmr-rereg", b);

    /* a READ of 80 responses (more than a turn's budget), SENDs behind */
    b = seed_new(16);
    seed_burst = OP_BURST;          /* all before the bottom half runs */
    seed_pkt(b, ROCE_RC_RDMA_READ_REQUEST, PF_ACKREQ, 0, 0);
    seed_reth(b, 0x100, 0x40 + 40);             /* 20 KiB */
    seed_pkt(b, ROCE_RC_SEND_ONLY, PF_FIT | PF_ACKREQ, 0, 0);
    seed_payload(b, 10, 1);
    seed_pkt(b, ROCE_RC_SEND_ONLY, PF_FIT | PF_ACKREQ, 0, 0);
    seed_payload(b, 10, 2);
    seed_burst = 0;
    seed_pkt(b, ROCE_RC_RDMA_READ_REQUEST, PF_ACKREQ, 0, -20);
    seed_reth(b, 0x100, 0x40 + 40);             /* a duplicate, mid-READ */
    seed_clock(b, 0x80);
    seed_write(dir, "big-read", b);

    /* QPs destroyed and created again while requests are in flight */
    b = seed_new(17);
    seed_send(b, 0, 0, 100, 0, 0, 0, 0);
    seed_send(b, 1, 5, 100, 0, 0, 0, 0);
    seed_pkt(b, ROCE_RC_SEND_FIRST, PF_FIT, 0, 0);
    seed_payload(b, 0, 1);
    seed_u8(b, OP_MODIFY);
    seed_u8(b, 0);
    seed_u8(b, 7);                              /* RC0 again, connected */
    seed_u8(b, 0x23);
    seed_u8(b, OP_MODIFY);
    seed_u8(b, 1);
    seed_u8(b, 7);                              /* RC1 again, not connected */
    seed_u8(b, 0x22);
    seed_peer(b, 0, PA_ACK, 0x1f);
    seed_pkt(b, ROCE_RC_SEND_LAST, PF_FIT, 0, 1);
    seed_payload(b, 1, 1);
    seed_clock(b, 5);
    seed_write(dir, "recreate-qp", b);
}

void roce_rx_write_seeds(const char *dir)
{
    seeds_responder(dir);
    seeds_requester(dir);
    seeds_other(dir);
    seeds_memory(dir);
}
