/*
 * pvrdma RoCEv2 transport: what its files share.
 *
 * The transport (roce.c says what it does) is split as Linux rxe is, a
 * file per state machine:
 *   roce.c       frames in (pvrdma_roce_rx(), a destroyed QP's lingering
 *                answers), the transport's hooks, migration and
 *                snapshots, the constructor and the counters
 *   roce_req.c   the requester (rxe_req.c): requests into packets, PSNs,
 *                the window, going back; the completion of the oldest
 *                request, which both it and the completer make
 *   roce_comp.c  the completer (rxe_comp.c): ACKs, NAKs, READ responses,
 *                atomic ACKs; the local ACK timeout, the RNR wait
 *   roce_resp.c  the responder (rxe_resp.c): requests checked and
 *                executed, duplicates, NAKs, the response queue
 *   roce_net.c   frames out (rxe_net.c): a packet's network headers, the
 *                frame handed to the host; the clock, the device's timer
 * Calls between them go one way: roce.c calls the four others, the
 * completer calls the requester, and those three call roce_net.c.
 *
 * Owns the constants, the types, the small helpers (inline) and the
 * functions one of these files calls in another, grouped by the file that
 * defines them.  Only these files include it; the transport's API, for
 * the device and the tests, is in include/hw/rdma/pvrdma_roce.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_BACKEND_ROCE_INT_H
#define HW_RDMA_BACKEND_ROCE_INT_H

#include "hw/rdma/pvrdma_roce.h"
#include "hw/rdma/pvrdma_transport_calls.h"
#include "hw/rdma/roce_wire.h"

#define ROCE_WINDOW         128     /* unacknowledged PSNs (rxe: 128) */
#define ROCE_CWND_MIN       2       /* the congestion window's floor */
#define ROCE_ACKREQ_EVERY   32      /* AckReq at least every this many */
#define ROCE_RESP_BUDGET    64      /* response packets per event and QP */
#define ROCE_REQ_BUDGET     256     /* request packets per event and QP */
#define ROCE_SPORT_BASE     0xc000  /* UDP source ports as rxe's */
#define ROCE_PKEY_DEFAULT   0xffff
#define ROCE_GSI_QKEY       0x80010000u
#define ROCE_SMALL_COPY     4096    /* requests this small are copied */
#define PSN_MASK            0xffffffu
/*
 * Destroyed QPs remembered (linger_rx()) ...: a teardown destroys many at
 * once (an NVMe over RDMA disconnect: an admin and one I/O queue per CPU,
 * per controller), and each may need its last ACK again; 256 of 48 bytes.
 */
#define ROCE_LINGER_N       256
#define ROCE_LINGER_MS      10000   /* ... for this long */

typedef struct RoceTransport RoceTransport;

/* One request of the requester, from execute() to its completion. */
typedef struct RoceWqe {
    uint64_t cookie;
    uint32_t opcode;            /* PVRDMA_WR_* */
    uint32_t send_flags;
    uint64_t len;
    uint64_t remote_addr;
    uint32_t rkey;
    uint32_t imm;
    uint64_t compare_add, swap;
    uint32_t pd, num_sge;
    struct pvrdma_sge sge[PVRDMA_HARD_MAX_SGE];
    uint8_t *copy;              /* small SEND/WRITE data, read at execute */
    uint32_t first_psn;
    uint32_t npsn;              /* PSNs it takes (READ: its responses) */
    uint32_t mtu;               /* its packets' size, fixed when posted */
    uint64_t resp_off;          /* READ: bytes of response received */
    bool rd_atomic;             /* READ or atomic */
    bool sent;                  /* its request has been sent (READ/atomic) */
    bool resp_done;             /* READ/atomic: its whole response came */
    bool local_err;             /* its buffer could not be read: fails */
    bool reasked;               /* asked again for what is missing ... */
    uint32_t reask_psn;         /* ... from this PSN */
    /*
     * READ: response packets that came ahead of their turn, by index from
     * the first (NULL until one does; their data is in place already)
     */
    unsigned long *resp_ahead;
} RoceWqe;

/*
 * The requester after a local ACK timeout (rxe goes back and resends the
 * window; this one first asks with one packet, see roce_req_timers()):
 * GO, sending what the window allows; PROBE, the timer fired: the oldest
 * unanswered packet goes next, alone, with AckReq; PROBE_SENT, it went:
 * nothing more until an answer.  Traced with the names of
 * roce_probe_name().
 */
typedef enum RoceProbe {
    ROCE_PROBE_GO,
    ROCE_PROBE_DUE,
    ROCE_PROBE_SENT,
} RoceProbe;

/*
 * The responder's message in progress (rxe: the opcode sequence check of
 * check_op_seq()): none, a SEND or a WRITE whose FIRST came and whose
 * LAST has not.  The values are those of the migration stream.
 */
typedef enum RoceInMsg {
    ROCE_IN_NONE = 0,
    ROCE_IN_SEND = 1,
    ROCE_IN_WRITE = 2,
} RoceInMsg;

/* A response the responder owes, sent in order. */
typedef enum RoceRespKind {
    RESP_ACK,
    RESP_READ,
    RESP_ATOMIC,
} RoceRespKind;

typedef struct RoceResp {
    RoceRespKind kind;
    uint32_t psn;               /* ACK: PSN acknowledged; READ: next PSN */
    uint8_t syndrome;           /* ACK/NAK */
    uint32_t msn;
    uint64_t va;                /* READ: next byte */
    uint32_t rkey;
    uint64_t left;              /* READ: bytes still to send */
    bool first;                 /* READ: no response packet sent yet */
    uint64_t orig;              /* ATOMIC */
} RoceResp;

/* A READ or atomic the responder executed: for duplicates. */
typedef struct RoceRes {
    bool valid, atomic;
    uint32_t first_psn, last_psn;
    uint64_t orig;
} RoceRes;

/* Per RC QP on this transport (qp->tp_state). */
typedef struct RoceQp {
    RoceTransport *t;
    PvrdmaQP *qp;
    uint32_t qpn;
    PvrdmaPathStats st;

    /* requester */
    bool req_init;              /* sq_psn taken from the QP (at RTS) */
    GQueue wqes;                /* RoceWqe, oldest first */
    uint32_t una;               /* oldest PSN not answered */
    uint32_t ack_psn;           /* the responder has every PSN before */
    uint32_t psn;               /* next PSN to send */
    uint32_t next_psn;          /* first PSN of the next new request */
    GList *cur;                 /* sending: this WQE (in wqes) ... */
    uint32_t cur_pkt;           /* ... from this packet of it */
    uint32_t noack;             /* packets since the last AckReq */
    int retry_left, rnr_left;
    int64_t rto_deadline;       /* ms, 0: not armed */
    int64_t rnr_deadline;       /* ms, 0: not waiting on an RNR NAK */
    bool seq_retry;             /* went back for a sequence NAK ... */
    uint32_t seq_retry_psn;     /* ... to this PSN, not acknowledged yet */
    RoceProbe probe;            /* timed out: one packet until answered */
    uint32_t probe_psn;         /* its PSN (una when the timer fired) */
    unsigned rto_shift;         /* expiries in a row: the timer x2, x4 */
    unsigned rto_floor;         /* rto_shift after progress: early expiries */
    /*
     * The congestion window (packets, at most ROCE_WINDOW; 0: never cut,
     * the whole window): halved by each sequence NAK that goes back (a
     * go-back-N sends the window again: no NewReno recovery, which kept
     * it larger and overflowed the queue of /pvrdma/roce/rc-bottleneck
     * three times as often), down to one packet by a timeout (given
     * back, cwnd_undo and ssthresh_undo, if the timer turns out early),
     * grown by what is acknowledged, one packet per packet below
     * ssthresh (0: ROCE_WINDOW), then one per window (cwnd_acc).
     */
    uint32_t cwnd, ssthresh, cwnd_acc;
    uint32_t cwnd_undo, ssthresh_undo;  /* cwnd_undo 0: nothing to undo */
    uint32_t max_psn;           /* PSNs before it were sent at least once */

    /* responder */
    uint32_t epsn;              /* next PSN expected */
    uint32_t msn;
    bool nak_sent;              /* PSN sequence NAK sent for epsn */
    RoceInMsg in_msg;           /* SEND/WRITE in progress (FIRST seen) */
    PvrdmaRecvCtx *rctx;        /* SEND in progress */
    uint64_t rlen;              /* bytes of the SEND/WRITE so far */
    uint64_t wva, wleft;        /* WRITE in progress: next va, bytes left */
    uint32_t wrkey;
    GQueue resps;               /* RoceResp, in order */
    RoceRes *res;               /* max_dest_rd_atomic of them, at RTR */
    unsigned nres, res_next;
} RoceQp;

/*
 * A destroyed RC QP's responder, remembered for a while, as TCP's
 * TIME_WAIT remembers a closed connection: see linger_rx().
 */
typedef struct RoceLinger {
    uint32_t qpn;               /* 0: a free slot */
    uint8_t peer_gid[16];
    uint32_t peer_qpn;
    uint32_t epsn, ack_psn, msn; /* as the responder left them */
    int64_t until;              /* ms */
} RoceLinger;

struct RoceTransport {
    PvrdmaTransport t;
    PvrdmaPathStats st;
    GList *qps;                 /* RoceQp */
    RoceLinger linger[ROCE_LINGER_N];
    unsigned linger_next;
    uint32_t ud_psn;
    uint16_t ip_id;
    int64_t armed;              /* deadline the core's timer is set for */
    bool paused;                /* the VM's state is saved: off the wire */
    uint8_t frame[ROCE_MAX_FRAME];
    uint8_t data[4096];         /* one packet's payload */
    /*
     * During roce_execute_rc(): the request it takes and the local buffer
     * the core's requester resolved for it.  What goes out then is read
     * from there; later packets and retransmissions resolve the SGEs again.
     */
    const RoceWqe *exec_wqe;
    const PvrdmaSg *exec_local;
};

static inline RoceTransport *roce(PvrdmaTransport *t)
{
    return container_of(t, RoceTransport, t);
}

static inline RoceQp *roce_qp(RoceTransport *t, PvrdmaQP *qp)
{
    return qp && qp->tp == &t->t ? qp->tp_state : NULL;
}

/* The congestion window of q (see RoceQp.cwnd) */
static inline uint32_t roce_cwnd(const RoceQp *q)
{
    return q->cwnd ? q->cwnd : ROCE_WINDOW;
}

/* 24-bit PSN arithmetic */
static inline uint32_t psn_add(uint32_t psn, uint32_t n)
{
    return (psn + n) & PSN_MASK;
}

static inline int32_t psn_cmp(uint32_t a, uint32_t b)
{
    return (int32_t)((a - b) << 8) >> 8;
}

static inline uint32_t psn_sub(uint32_t a, uint32_t b)
{
    return (a - b) & PSN_MASK;
}

static inline uint16_t src_port(uint32_t qpn)
{
    return ROCE_SPORT_BASE | ((qpn * 0x9e3779b1u) >> 18);
}

/*
 * Immediate data is big endian in the guest's WQEs and CQEs (verbs'
 * __be32 imm_data, copied as is by the driver and the provider) and on
 * the wire: the same four bytes.  RocePkt holds numbers, so convert.  (An
 * IETH's rkey is a plain number in WQE and CQE alike.)
 */
static inline uint32_t imm_to_wire(uint32_t wqe_imm)
{
    return GUINT32_FROM_BE(wqe_imm);
}

static inline uint32_t imm_from_wire(uint32_t pkt_imm)
{
    return GUINT32_TO_BE(pkt_imm);
}

/* roce_net.c: frames out, the clock, the device's timer */

int64_t roce_now_ms(RoceTransport *t);
/* Arm the core's timer for deadline (ms) unless it fires earlier. */
void roce_arm(RoceTransport *t, int64_t deadline);
/* Fill the network headers of a packet of QP q (or UD: req). */
void roce_pkt_addr(RoceTransport *t, RocePkt *p, const uint8_t sgid[16],
                   const uint8_t dgid[16], const uint8_t dmac[6],
                   uint8_t hop_limit, uint8_t tclass, uint32_t flow,
                   uint32_t src_qpn);
/* Build p into a frame and send it; counted for q too unless NULL. */
void roce_pkt_send(RoceTransport *t, RoceQp *q, RocePkt *p);
/* Headers of an RC packet of q to its peer. */
void roce_rc_pkt(RoceQp *q, RocePkt *p, uint8_t opcode, uint32_t psn);

/* roce_req.c: the requester */

/* q->probe becomes to (traced with the states' names) */
void roce_set_probe(RoceQp *q, RoceProbe to);
const char *roce_probe_name(RoceProbe s);

/* Free q's requests and stop its timers (an error, a pause, the end). */
void roce_qp_drop_requests(RoceQp *q);
/* Free one request (taken off q->wqes). */
void roce_wqe_free(RoceWqe *w);
/* The next PSN of w the responder has not answered (READ, atomic). */
uint32_t roce_wqe_next_resp(RoceQp *q, RoceWqe *w);
/* READ w misses packets before one that came ahead (roce_req.c) */
bool roce_req_read_gap(const RoceWqe *w);
/* bits per word of RoceWqe.resp_ahead */
#define ROCE_AHEAD_BITS (8 * sizeof(unsigned long))

/* READ w's response packet k came ahead of its turn and is kept */
static inline bool roce_wqe_ahead(const RoceWqe *w, uint32_t k)
{
    return w->resp_ahead &&
           (w->resp_ahead[k / ROCE_AHEAD_BITS] >> (k % ROCE_AHEAD_BITS)) & 1;
}
/* Go back to psn: the next packet sent is the one with that PSN. */
void roce_req_rewind(RoceQp *q, uint32_t psn);
/* A probe's answer says the timer was early: go on after what was sent. */
void roce_req_skip_sent(RoceQp *q);
/* (Re)start the local ACK timer if something sent is unanswered. */
void roce_req_arm_rto(RoceQp *q);
/* Ask again for what is missing of READ or atomic w. */
void roce_req_reask(RoceQp *q, RoceWqe *w, const char *why);
/* Send what the window allows. */
void roce_req_push(RoceQp *q);
/* execute() of an RC request: PENDING, or a WC status. */
int roce_execute_rc(RoceTransport *t, RoceQp *q, PvrdmaReq *req);

/* roce_comp.c: the completer */

/* The request at the head finished: complete it (in order) and free it. */
void roce_comp_head(RoceQp *q, int status);

void roce_comp_ack(RoceQp *q, const RocePkt *p);
void roce_comp_read_resp(RoceQp *q, const RocePkt *p);
void roce_comp_atomic_ack(RoceQp *q, const RocePkt *p);
/* Timers of q: local ACK timeout, end of an RNR wait. */
void roce_req_timers(RoceQp *q, int64_t now);

/* roce_resp.c: the responder */

/* q->in_msg becomes to (traced with the states' names) */
void roce_set_in_msg(RoceQp *q, RoceInMsg to);
const char *roce_in_msg_name(RoceInMsg s);

/* Queue an ACK or NAK of psn (sent by roce_resp_push()). */
void roce_resp_ack(RoceQp *q, uint32_t psn, uint8_t syndrome);
/* Send queued responses, at most a budget of packets. */
void roce_resp_push(RoceQp *q);
/* The PSN an ACK of a duplicate SEND/WRITE packet names. */
uint32_t roce_resp_ack_psn(RoceQp *q);
/* A request packet from q's peer (q in RTR or later, not in error). */
void roce_resp_rc(RoceQp *q, const RocePkt *p);

#endif
