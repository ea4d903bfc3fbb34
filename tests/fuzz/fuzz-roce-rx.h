/*
 * fuzz-roce-rx: what its files share: the input's format (the target,
 * fuzz-roce-rx.c and fuzz-roce-rx-guest.c, and its seeds,
 * fuzz-roce-rx-seeds.c), and the target's model of the device and the
 * network.  6 bytes of connection parameters
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
#include "fake-driver.h"
#include "fuzz-input.h"
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

/* ------------------------------------------------------------------ */
/* The target's model (fuzz-roce-rx.c, fuzz-roce-rx-guest.c)           */

#define RAM_PAGES       192
#define GUARD           0xa5
#define MAX_OPS         160
#define MAX_WR          2048            /* work requests per input */
#define SERVICE_MAX     4096            /* core runs to settle, per op */
#define RNR_SPIN        64              /* runs before time moves (below) */
#define PSN_MASK        0xffffffu

#define MR_IOVA         0x00007f0000000100ull
#define MR_LEN          (8 * 4096 - 0x300)      /* 8 pages, slack both ends */
#define FR_IOVA         0x0000600000000080ull
#define FR_LEN          (2 * 4096 - 0x100)
#define FR_PAGES        2

#define UD_QKEY         0x11110000u
#define UD_RECV_MIN     (40 + 4096)     /* GRH and the largest UD message */

enum { RC0, RC1, RC2, UDQ, GSI, NQP };

/* Connections to peers on the network */
static const uint8_t our_gid[2][16] = {
    { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1 },
    { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 },
};
static const uint8_t peer_gid[2][16] = {
    { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2 },
    { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2 },
};
static const uint8_t stranger_gid[2][16] = {
    { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 99 },
    { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x99 },
};
static const uint8_t peer_mac[6] = { 0x02, 0, 0, 0, 0, 0x02 };
static const uint8_t other_mac[6] = { 0x02, 0, 0, 0, 0, 0x77 };
static const uint32_t peer_qpn[2] = { 0x000d11, 0x000e22 };

/* Posted work requests, by wr_id - WR_BASE */
#define WR_BASE         0x5752000000000000ull
typedef struct Wr {
    uint8_t qi;                 /* QP index */
    uint32_t handle;            /* of the QP it was posted on */
    bool recv;
    bool done;
    uint32_t status;            /* of its completion */
    uint32_t opcode;            /* sends: PVRDMA_WR_* */
    uint32_t len;               /* total length posted */
} Wr;

/* A request packet the device sent, for the peer's answers */
typedef struct SentReq {
    uint8_t opcode;
    uint32_t psn;
    uint32_t npsn;              /* READ: its responses */
    uint32_t len;               /* READ: DMA length */
} SentReq;

#define NSENT 16

typedef struct Fq {
    TQp qp;
    bool exists;
    uint8_t type;
    int conn;                   /* peer 0 (v4) / 1 (v6); -1: none */
    bool connected;             /* RTR or later, on the RoCEv2 transport */
    uint32_t mtu;               /* path MTU, bytes */
    /*
     * Path MTUs (bit: PVRDMA_MTU_*) of this connection: a request keeps
     * the one it was posted with, so after an MTU change in RTS, older
     * requests still go out cut at an older one.
     */
    uint8_t mtus;
    uint32_t last_send, last_recv;  /* sequence of the last completion */
    /* the peer's model of our responder: the PSN it expects next */
    uint32_t peer_psn;
    /* what our requester sent (ring of the last NSENT request packets) */
    SentReq sent[NSENT];
    unsigned nsent;
    uint32_t max_psn;           /* newest request PSN sent, + 1 */
    bool have_sent;
} Fq;

typedef struct Fz {
    Dev d;
    PvrdmaTransport *t;
    uint32_t pd;
    TCq scq, rcq;
    TMr mr;
    bool mr_alive;
    uint8_t *mr_snap;           /* its bytes when it was deregistered */
    uint32_t fr_key;            /* FRMR (fast-registered), 0: none */
    uint64_t fr_pages[FR_PAGES];
    uint64_t fr_pdir;           /* their page directory */
    Fq q[NQP];
    uint32_t handles[32];       /* every QP handle of this input */
    unsigned nhandles;
    Wr wr[MAX_WR];
    unsigned nwr;
    uint8_t guard_bits[RAM_PAGES];  /* 1: page must stay guard */
    uint64_t guarded_to;        /* next_free when guard_bits was set */
    uint32_t cfg_rq_psn, cfg_sq_psn;
    uint8_t cfg_timeout, cfg_retry, cfg_rnr_retry, cfg_rd, cfg_dest_rd;
    uint8_t cfg_rnr_timer, cfg_mtu1;
    uint64_t frames_tx, frames_rx, taken;
    uint64_t rnr_spins;
    unsigned recreated;
} Fz;

/* first PSNs the input picks from (setup, modify_op) */
static const uint32_t psn_table[8] = {
    0x000100, 0xfffff0, 0x7ffff8, 0x000000, 0xffffff, 0x123456, 0x800000,
    0xffff80,
};

extern Fz f;
extern bool verbose;

#define LOG(...) do { if (verbose) { fprintf(stderr, __VA_ARGS__); } } \
                 while (0)

/* fuzz-roce-rx.c */
void G_GNUC_PRINTF(1, 2) fail(const char *fmt, ...);
uint32_t cfg_mtu(uint8_t m);
void set_mtu(Fq *q, uint8_t m, bool new_conn);
const uint8_t *our_mac(void);
void drain_cqs(void);
void service(void);
void guard_release_new(void);
Wr *frmr_post(bool inv, uint32_t key, uint32_t len);

/* fuzz-roce-rx-guest.c: the guest's work requests and QPs */
Wr *new_wr(uint8_t qi, bool recv, uint32_t opcode, uint32_t len, uint64_t *wr_id);
bool ring_room(Fq *q, bool recv);
void post_recv_op(Input *in);
void post_send_op(Input *in);
void qp_connect(unsigned qi, uint32_t rq_psn, uint32_t sq_psn, uint8_t mtu);
void qp_create(unsigned qi);
void modify_op(Input *in);
void mr_op(Input *in);

/* Write the seed inputs into dir (PVRDMA_ROCE_RX_SEEDS). */
void roce_rx_write_seeds(const char *dir);

#endif
