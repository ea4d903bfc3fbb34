/*
 * Tests of the RoCEv2 transport (backend/roce*.c): what the files of tests
 * share, the simulated wire (wire.c) and the endpoints on it
 * (framework.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef PVRDMA_UNIT_RT_H
#define PVRDMA_UNIT_RT_H

#include "fake-driver.h"
#include "hw/rdma/pvrdma_loopback.h"
#include "hw/rdma/pvrdma_roce.h"
#include "hw/rdma/roce_wire.h"

#define MTU_BYTES       1024            /* path_mtu PVRDMA_MTU_1024 */
#define EP_WR           128             /* send / receive queue depth */
#define EP_CQE          1024
#define EP_IOVA         0x00007f0000000100ull
#define EP_ACCESS       (PVRDMA_ACCESS_LOCAL_WRITE | RC_ACCESS)
#define TRACE_KEEP      300             /* lines printed on a failure */
#define LIVELOCK_FRAMES 1000000         /* frames without the clock moving */
#define PSN_MASK        0xffffffu
#define KIB             1024u

typedef struct Net Net;

typedef struct Node {
    Dev d;
    PvrdmaTransport *t;
    uint8_t gid[16];
    Net *net;
    unsigned id;            /* 0: A, 1: B */
} Node;

typedef struct WFrame {
    uint8_t *data;
    size_t len;
    unsigned to;
    bool corrupted;
    int64_t at;                 /* fake time it arrives */
} WFrame;

/* A filter: true drops the frame (it parsed). */
typedef bool (*WireFilter)(Net *n, unsigned from, const RocePkt *p,
                           void *arg);

/* What the wire does to one direction's frames, and what it saw. */
typedef struct WireDir {
    /* per mille */
    unsigned drop_pm, dup_pm, reorder_pm, corrupt_pm;
    /*
     * Each frame arrives after delay + [0, jitter] ms, never before the
     * frame sent before it in its direction (a queue that stalls now and
     * then, as a loaded host's: late, not reordered)
     */
    unsigned delay_ms, jitter_ms;
    /*
     * The jitter is each frame's own (a path whose delay varies frame by
     * frame, as the rig switch's --jitter-ms): frames overtake each other
     */
    bool jitter_reorders;
    unsigned rate;              /* frames per ms it carries, 0: any */
    /*
     * With rate: the frames its queue holds; a frame that finds it full
     * is lost (tail drop, as a switch port or a socket buffer); 0: no end
     */
    unsigned qmax;
    uint64_t qdropped;
    GPtrArray *keep;            /* if set: a copy of each frame (GBytes) */
    int64_t last_at;
    unsigned at_count;          /* frames arriving at last_at */
    bool drop_all;
    uint64_t drop_nth[16];      /* frame numbers of this direction, 1.. */
    unsigned ndrop_nth;
    WireFilter filter;
    void *filter_arg;

    uint64_t frames;            /* given to the wire */
    uint64_t dropped, duped, reordered, corrupted;
    uint64_t ops[256];          /* frames by BTH opcode */
    uint64_t aeth_ack, aeth_rnr, aeth_nak;
    uint64_t nak_code[32];
    uint64_t bad;               /* failed a check (see check_frame) */
    uint64_t psn_jumps;         /* a request skipped PSNs */
    uint64_t resent;            /* request packets with an old PSN */
    GHashTable *next_psn;       /* dqpn -> next new request PSN + 1 */
    GHashTable *psn_count;      /* request PSN -> times sent */
    /* the last value seen on the wire, for field checks */
    uint32_t last_imm;
    RocePkt last_reth_pkt;
    RocePkt last_atomic;
    RocePkt last_deth;
    uint64_t last_atmack;
} WireDir;

struct Net {
    Node node[2];
    GQueue wire;                /* WFrame *, delivered from the head */
    WireDir dir[2];             /* [0]: A -> B, [1]: B -> A */
    uint32_t rng;
    uint64_t not_taken;         /* intact frames pvrdma_roce_rx refused */
    int last_op[2];             /* BTH opcode last delivered to A, B; -1 */
    /*
     * Frames sent since the clock last moved: a livelock if it passes
     * LIVELOCK_FRAMES (the network is then dead: no more frames go on the
     * wire and net_run() returns at once).
     */
    uint64_t frames_now;
    bool dead;
    GQueue trace;               /* char *, the last TRACE_KEEP lines */
    bool trace_all;
};

typedef bool (*NetDone)(Net *n, void *arg);

typedef struct Buf {
    uint32_t handle, lkey, rkey;
    uint64_t iova, len, first;
    uint32_t npages;
    uint64_t *pages;
} Buf;

typedef struct Ep {
    Node *nd;
    uint32_t pd;
    TCq cq;
    TQp qp;
    Buf mr;
} Ep;

typedef struct RcOpts {
    uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer, rd_atomic;
    uint32_t psn_a, psn_b;      /* first PSN of A's requests, of B's */
} RcOpts;

/* A device pair with one RC connection a (A) <-> b (B). */
typedef struct Rc {
    Net n;
    Ep a, b;
} Rc;

/* Wait for completions: at least na in a's CQ and nb in b's. */
typedef struct CqWant {
    Ep *a, *b;
    uint32_t na, nb;
} CqWant;

#define WAIT_CQES(n, ms, a, na, b, nb) \
    g_assert_true(wait_cqes(n, ms, a, na, b, nb))

#define ep_check(e, off, data, len) \
    ep_check_at(e, off, data, len, __LINE__)

/* framework.c: memory regions and endpoints */

void buf_create(Dev *d, Buf *b, uint32_t pd, uint64_t iova,
                uint64_t len, uint32_t access);

/* Host pointer of byte off of b, and how many bytes follow in its page. */
uint8_t *buf_at(Dev *d, Buf *b, uint64_t off, uint64_t *run);

void buf_write(Dev *d, Buf *b, uint64_t off, const void *src,
               uint64_t len);

void buf_read(Dev *d, Buf *b, uint64_t off, void *dst, uint64_t len);

void buf_fill(Dev *d, Buf *b, uint64_t off, uint64_t len, uint8_t v);

void ep_init(Ep *e, Node *nd, uint8_t type, uint64_t mr_len);

void ep_fini(Ep *e);

Dev *ep_dev(Ep *e);

PvrdmaQP *ep_qp(Ep *e);

uint32_t ep_state(Ep *e);

struct pvrdma_sge ep_sge(Ep *e, uint64_t off, uint32_t len);

uint64_t ep_va(Ep *e, uint64_t off);

/* Completions waiting in e's CQ (not consumed). */
uint32_t ep_cq_avail(Ep *e);

extern const RcOpts rc_default;

/* e: INIT -> RTR -> RTS towards peer. */
void rc_half(Ep *e, Ep *peer, const RcOpts *o, uint32_t sq_psn,
             uint32_t rq_psn);

/* a (on A) and b (on B) connected; the wire expects their first PSNs. */
void rc_connect(Net *n, Ep *a, Ep *b, const RcOpts *o);

void rc_setup(Rc *r, const RcOpts *o, uint64_t mr_len, uint32_t seed);

void rc_fini(Rc *r);

bool cq_want_done(Net *n, void *arg);

/* true if they arrived within max_ms of fake time */
bool wait_cqes(Net *n, int64_t max_ms, Ep *a, uint32_t na, Ep *b,
               uint32_t nb);

void wr_send_flags(Ep *e, uint64_t wr_id, uint32_t opcode,
                   uint32_t flags, uint32_t imm,
                   const struct pvrdma_sge *sge, uint32_t nsge);

void wr_send(Ep *e, uint64_t wr_id, uint32_t opcode, uint32_t imm,
             const struct pvrdma_sge *sge, uint32_t nsge);

void wr_rdma(Ep *e, uint64_t wr_id, uint32_t opcode,
             const struct pvrdma_sge *sge, uint32_t nsge,
             uint64_t raddr, uint32_t rkey, uint32_t imm);

void wr_atomic(Ep *e, uint64_t wr_id, uint32_t opcode,
               const struct pvrdma_sge *sge, uint64_t raddr,
               uint32_t rkey, uint64_t compare_add, uint64_t swap);

void wr_recv(Ep *e, uint64_t wr_id, uint64_t off, uint32_t len);

void ep_expect(Ep *e, uint64_t wr_id, uint32_t status,
               uint32_t opcode, uint32_t byte_len);

/*
 * e's SEND 0xa1 failed with status, its SEND 0xa2 behind it was flushed,
 * and e's QP is in error.
 */
void ep_expect_send_failed(Ep *e, uint32_t status);

/* A receive completion from QP src_qpn; returns it for more checks. */
struct pvrdma_cqe ep_expect_recv(Ep *e, uint64_t wr_id,
                                 uint32_t opcode, uint32_t byte_len,
                                 uint32_t src_qpn);

void ep_put(Ep *e, uint64_t off, const void *data, uint64_t len);

/* e's bytes [off, off + len) must be data (line: the caller's). */
void ep_check_at(Ep *e, uint64_t off, const void *data, uint64_t len,
                 int line);

uint8_t ep_byte(Ep *e, uint64_t off);

uint64_t ep_u64(Ep *e, uint64_t off);

void ep_set_u64(Ep *e, uint64_t off, uint64_t v);

uint8_t *pattern(size_t len, uint32_t seed);

uint32_t ops(Net *n, unsigned from, uint8_t op);

uint32_t psn_sent(Net *n, unsigned from, uint32_t psn);

/*
 * The last message's ACK is lost and its receiver destroys its QP as soon
 * as the message is there (ibv_rc_pingpong's client does: guest test 30
 * hung with an rxe server that waited forever for that ACK).  The
 * requester's retransmission still gets its answer: the transport
 * remembers the destroyed responder for a while and acknowledges a
 * duplicate SEND or WRITE packet with AckReq, as the QP would have.  Not
 * a READ (its data would have to be read again from a QP that is gone),
 * not a new request, and not after a new QP took the number.
 */
void destroy_qp(Ep *e);

/* wire.c: the network */

void make_gid(uint8_t gid[16], uint8_t a, uint8_t b, uint8_t c,
              uint8_t d);

/* xorshift32 */
uint32_t net_rnd(Net *n);

bool net_pm(Net *n, unsigned pm);

int64_t net_now(Net *n);

void net_set_now(Net *n, int64_t t);

void G_GNUC_PRINTF(2, 3) net_log(Net *n, const char *fmt, ...);

/* A frame failed a check: logged, counted, the case fails at net_fini. */
void G_GNUC_PRINTF(3, 4) net_bad(Net *n, unsigned from,
                                 const char *fmt, ...);

uint32_t psn_add(uint32_t psn, uint32_t n);

/* Checks of one parsed frame from node 'from'; counters. */
void check_frame(Net *n, unsigned from, const RocePkt *p);

void trace_frame(Net *n, unsigned from, const RocePkt *p,
                 const char *what);

void wire_put(Net *n, unsigned to, const uint8_t *frame, size_t len,
              bool corrupt, bool reorder);

/* FakeHost.frame_tx of node opaque: the frame goes on the wire. */
void node_tx(void *opaque, const uint8_t *frame, size_t len);

void node_init(Net *n, unsigned id);

void net_init(Net *n, uint32_t seed);

void wframe_free(gpointer p);

/* Both devices reset (no mapping left) and freed, and the wire. */
void net_free(Net *n);

/* Wire checks, then net_free(). */
void net_fini(Net *n);

/* Deliver the frame at the head of the wire; false if none is due. */
bool net_deliver(Net *n);

/*
 * Run the network: deliver frames, run the cores that are due and, when
 * neither has anything to do, move the clocks to the earliest delayed
 * kick, for at most max_ms of fake time.  Returns when done() says so
 * (true), or without done() when nothing is left to do (true: no frame,
 * no run, no timer), or at the time limit (false; the clocks are then at
 * the limit).
 */
bool net_run(Net *n, int64_t max_ms, NetDone done, void *arg);

/* Until nothing is left to do (at most 60 s of fake time). */
bool net_settle(Net *n);

/* For ms of fake time, whatever happens. */
void net_for(Net *n, int64_t ms);

PvrdmaPathStats stats(Node *nd);

void log_stats(Net *n);

/* Each file's tests (test-pvrdma-roce.c registers them) */
void rt_add_rc_tests(void);
void rt_add_retry_tests(void);
void rt_add_migration_tests(void);
void rt_add_hostile_tests(void);
void rt_add_ud_tests(void);
void rt_add_teardown_tests(void);

#endif
