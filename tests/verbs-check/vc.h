/*
 * pvrdma-verbs-check: shared definitions (see verbs-check.c)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef VC_H
#define VC_H

#define _GNU_SOURCE
#include <netinet/in.h>
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define VC_MAGIC        0x4b484356u   /* "VCHK" */
#define VC_VERSION      1
#define DEFAULT_PORT    18520
#define GUARD           0xa5
#define PAD             64            /* guard around every buffer */
#define NCTR            8
#define MAX_SGES        16
#define MAX_SIZES       128
#define RSRC_SLACK      4096          /* read offsets 0..4095 */
#define CTRL_IMM        0x80000000u
#define GRH_LEN         40
#define MAX_ACKS_OUT    4
#define PHI             0x9e3779b97f4a7c15ull
#define RECV_TAG        (1ull << 63)

enum { MODE_RC, MODE_UD, MODE_SRQ };
/*
 * --mutate: what this side does wrong at --corrupt's message, as a faulty
 * device could, for the peer's check of that kind to catch it.
 */
enum {
    MUT_DATA,           /* a payload byte (the default) */
    MUT_IMM,            /* the immediate of a send_imm or write_imm */
    MUT_LEN,            /* a send one byte short */
    MUT_OPCODE,         /* a send that arrives as a write with immediate */
    MUT_GUARD_BEFORE,   /* a write that starts one byte early */
    MUT_GUARD_AFTER,    /* a write that ends one byte late */
    MUT_GUARD_FAR,      /* a stray byte at the far end of a write slot */
};

enum { OP_SEND, OP_SEND_IMM, OP_WRITE, OP_WRITE_IMM, OP_READ, OP_CAS,
       OP_FAA, NOPS };
enum { CT_ACK = 1, CT_ANNOUNCE, CT_FIN };
enum { K_MSG, K_ANN, K_ACK, K_FIN, K_RB, K_EXTRA };
enum { EX_OK, EX_CHECK, EX_SETUP, EX_TIMEOUT };

#define OPS_RECV ((1u << OP_SEND) | (1u << OP_SEND_IMM) | \
                  (1u << OP_WRITE) | (1u << OP_WRITE_IMM))
#define OPS_ATOMIC ((1u << OP_CAS) | (1u << OP_FAA))

/* connect private data (both directions), little endian */
struct vc_priv {
    uint32_t magic;
    uint16_t version;
    uint16_t mode;
    uint32_t digest;
    uint32_t nonce;
    uint32_t mtu;
    uint32_t count_lo, count_hi;  /* client: messages per side, 0: time */
    uint32_t rkey;
    uint64_t raddr;
    uint32_t rlen;
} __attribute__((packed));

/* control message payload, host order (both ends run the same build) */
struct vc_ctrl {
    uint32_t magic;
    uint32_t type;
    uint64_t val;
    uint64_t ctr[NCTR];
};

struct sg {
    uint8_t *p;
    uint32_t len;
    uint32_t lkey;
};

/*
 * What a check compares: bytes [d0, d1) of the view hold the pattern
 * (key, pbase + (o - d0)), the others the guard byte.
 */
struct chk {
    const char *what;
    int op;
    int dir;
    uint64_t k;
    uint32_t size;
    const struct sg *sg;
    int nsg;
    uint64_t d0, d1;
    uint64_t key;
    uint64_t pbase;
    int64_t rel0;       /* message offset of view byte d0 */
};

/* a send/write source, read destination or atomic result slot */
struct slot {
    uint8_t *reg[MAX_SGES];      /* region data start (PAD guard before) */
    uint32_t reg_lkey[MAX_SGES];
    uint8_t *atom;
    uint32_t atom_lkey;
    /* the message in flight */
    uint64_t k;
    int op;
    uint32_t size;
    int nparts;
    struct sg part[MAX_SGES];
    uint32_t part_off[MAX_SGES];
    uint64_t expect_old;
    uint64_t roff;
    int ctr;
};

struct rslot {
    struct sg piece[MAX_SGES + 1];   /* UD: piece 0 is the GRH */
    int npieces;
    int posted;
};

struct sqe {
    uint64_t k;
    uint8_t kind;
    uint8_t wc_op;
    uint8_t last;
};

struct arena {
    uint64_t size;
    uint8_t *base;
    struct ibv_mr *mr;
};

struct msg {
    int op;
    uint32_t size;
    uint32_t woff;
    uint32_t roff;
    uint32_t imm;
    uint64_t key;
    int ctr;
    uint64_t add;
    uint64_t swap;
    uint64_t miss;
    int cas_match;
    uint32_t misalign[MAX_SGES];
    uint32_t cut[MAX_SGES + 1];
};

struct vc_cfg {
    int server;
    const char *addr;
    int port;
    struct in_addr bind;        /* -b */
    int ack_timeout;            /* --ack-timeout, 0: rdma_cm's */
    int has_bind;
    int mode;
    unsigned ops;
    int op_list[NOPS];
    int nops;
    uint32_t usizes[MAX_SIZES];
    int nusizes;
    uint64_t smax;
    uint64_t count;
    double duration;
    int depth;
    int sges;
    uint64_t seed;
    int verbose;
    int64_t corrupt;
    int mutate;         /* MUT_*: how --corrupt misbehaves */
    int timeout;
};

struct vc_state {
    struct rdma_event_channel *ch;
    struct rdma_cm_id *lid, *id;
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_comp_channel *cc;
    struct ibv_cq *cq;
    struct ibv_srq *srq;
    struct ibv_qp *qp;
    struct ibv_ah *ah;
    uint32_t rqpn, rqkey;
    int mydir;
    uint64_t pkey;
    uint32_t nonce;
    uint32_t mtu;
    uint64_t count;
    uint32_t sizes[MAX_SIZES];
    int nsizes;
    uint32_t cap;
    int nsg;                 /* SGEs per WR (cfg.sges) */
    int narena;
    struct arena arena[4];
    /* remote MR (ours, for the peer) and the peer's */
    uint8_t *R;
    struct ibv_mr *Rmr;
    uint64_t Rlen, wstride, rsrc_off, rsrc_len, ctr_off;
    uint64_t peer_raddr;
    uint32_t peer_rkey;
    /* slots */
    struct slot *slots;
    struct rslot *rs;
    int nrs;
    uint8_t *ctrlbuf;
    uint32_t ctrl_lkey;
    int nctrl;
    uint64_t ctrl_seq;
    int ctrl_out;
    struct sqe *fifo;
    int sq_depth;
    uint64_t sq_head, sq_tail;
    uint64_t rpost_seq, rcomp_seq;
    /* requester state */
    uint64_t next_k, done_k;
    uint64_t peer_ack;
    uint64_t pred[NCTR];
    int stopping;
    int corrupt_done;
    int rb_posted, rb_done, need_rb;
    int fin_posted, fin_done;
    int acks_out;
    /* responder state */
    uint64_t e;
    uint64_t ack_sent;
    int peer_fin;
    uint64_t peer_n;
    int has_recv_ops;
    int peer_gone;
    /* counters */
    uint64_t n_op[NOPS];
    uint64_t bytes, rbytes, nrecv;
    double t_start, last_progress, deadline, last_ack_time;
};

extern const char *const op_names[NOPS];
extern const char *const mode_names[];
extern struct vc_cfg cfg;
extern struct vc_state g;

static inline uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

static inline uint8_t pat_byte(uint64_t key, uint64_t o)
{
    return mix64(key + (o >> 3) * PHI) >> (8 * (o & 7));
}

/* vc-util.c */
double now(void);
void vlog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void counters(FILE *f);
void die(int status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
uint64_t hash4(uint64_t a, uint64_t b, uint64_t c, uint64_t d);
void pat_fill(uint8_t *p, uint64_t len, uint64_t key, uint64_t off);
void dir_name(int dir, char *buf);
void chk_run(const struct chk *c, uint64_t from, uint64_t to);
void sg_guard(const struct sg *sg, int n, uint64_t from, uint64_t to);
void sg_copy_out(const struct sg *sg, int n, void *dst, uint64_t len);
uint64_t pkey_of(int dir, uint64_t k, uint64_t salt);
uint64_t lkey_of(int dir, uint64_t k, uint64_t salt);
void split(uint32_t len, int n, uint64_t h, uint32_t *cut);
void msg_params(int dir, uint64_t k, struct msg *m);
uint64_t ctr_init(int owner, int c);
void skip_peer(void);

/* vc-setup.c */
void parse_args(int argc, char **argv);
void post_recv(int i);
void run_server(void);
void run_client(void);

#endif
