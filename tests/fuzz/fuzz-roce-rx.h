/*
 * fuzz-roce-rx: the input's format, shared by the target (fuzz-roce-rx.c)
 * and its seeds (fuzz-roce-rx-seeds.c).  6 bytes of connection parameters
 * (first PSNs, timeout, retry_cnt, rnr_retry, max_rd_atomic /
 * max_dest_rd_atomic, min_rnr_timer, RC1's MTU, receives posted at setup),
 * then operations, each a byte (its low 4 bits: OP_*; OP_BURST: no bottom
 * half after its frames) and its arguments (little endian; a short input
 * reads zeros).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef FUZZ_ROCE_RX_H
#define FUZZ_ROCE_RX_H

#include <glib.h>
#include "hw/rdma/roce_wire.h"

/* RC opcodes and UD ones, as the field-built packets pick them */
static const uint8_t opcodes[] = {
    ROCE_RC_SEND_FIRST, ROCE_RC_SEND_MIDDLE, ROCE_RC_SEND_LAST,
    ROCE_RC_SEND_LAST_WITH_IMMEDIATE, ROCE_RC_SEND_ONLY,
    ROCE_RC_SEND_ONLY_WITH_IMMEDIATE, ROCE_RC_RDMA_WRITE_FIRST,
    ROCE_RC_RDMA_WRITE_MIDDLE, ROCE_RC_RDMA_WRITE_LAST,
    ROCE_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE, ROCE_RC_RDMA_WRITE_ONLY,
    ROCE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, ROCE_RC_RDMA_READ_REQUEST,
    ROCE_RC_RDMA_READ_RESPONSE_FIRST, ROCE_RC_RDMA_READ_RESPONSE_MIDDLE,
    ROCE_RC_RDMA_READ_RESPONSE_LAST, ROCE_RC_RDMA_READ_RESPONSE_ONLY,
    ROCE_RC_ACKNOWLEDGE, ROCE_RC_ATOMIC_ACKNOWLEDGE, ROCE_RC_COMPARE_SWAP,
    ROCE_RC_FETCH_ADD, ROCE_RC_SEND_LAST_WITH_INVALIDATE,
    ROCE_RC_SEND_ONLY_WITH_INVALIDATE, ROCE_UD_SEND_ONLY,
    ROCE_UD_SEND_ONLY_WITH_IMMEDIATE,
};
#define NOPCODES ((unsigned)G_N_ELEMENTS(opcodes))

/* Operations: the low 4 bits of an operation byte */
enum {
    OP_PKT0, OP_PKT1, OP_PKT2, OP_PKT3, OP_PKT4, OP_PKT5,
    OP_RAW = 6,
    OP_CLOCK = 7,
    OP_RECV = 8,
    OP_SEND = 9,
    OP_MODIFY = 10,
    OP_PEER = 11,
    OP_MSG = 12,
    OP_PEER2 = 13,
    OP_MSG2 = 14,
    OP_MR = 15,
};
#define OP_BURST        0x10    /* frames: no service() until the next op */

/* Packet flags (first flag byte) */
#define PF_ACKREQ       0x01
#define PF_SE           0x02
#define PF_FIT          0x04    /* lengths as the opcode wants them */
#define PF_STRANGER     0x08    /* from an address that is no peer */
#define PF_PKEY         0x10    /* a P_Key that is not ours */
#define PF_VLAN         0x20
#define PF_MANGLE       0x40    /* a second flag byte follows */
#define PF_V6           0x80    /* UD/GSI: IPv6 addresses */
/* Second flag byte */
#define PM_UDPCSUM      0x01
#define PM_DMAC         0x02    /* not our MAC: must not be taken */
#define PM_DGID         0x04    /* not our GID: must not be taken */
#define PM_FLIP         0x08    /* corrupt a byte of the built frame */
#define PM_REFIX        0x10    /* ... and write IPv4 csum / ICRC again */
#define PM_BITS         0x20    /* MigReq, FECN, BECN, reserved bits */
#define PM_BADPAD       0x40    /* TVer 1 */

/* Peer answers (OP_PEER) */
enum {
    PA_ACK, PA_RNR, PA_SEQ_NAK, PA_NAK, PA_READ_RESP, PA_ATOMIC_ACK,
    PA_ACK_MAX, PA_READ_PART, PA_N
};

/* Write the seed inputs into dir (PVRDMA_ROCE_RX_SEEDS). */
void roce_rx_write_seeds(const char *dir);

#endif
