/*
 * pvrdma-verbs-check: utilities, data pattern, checks, message parameters
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "vc.h"

const char *const op_names[NOPS] = {
    "send", "send_imm", "write", "write_imm", "read", "cas", "faa"
};
const char *const mode_names[] = { "rc", "ud", "srq" };

struct vc_state g;

/* ---------------------------------------------------------------- util */

double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

void vlog(const char *fmt, ...)
{
    va_list ap;

    if (!cfg.verbose) {
        return;
    }
    va_start(ap, fmt);
    fprintf(stderr, "verbs-check: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

void counters(FILE *f)
{
    fprintf(f, "verbs-check: counters: posted=%" PRIu64 " completed=%"
            PRIu64 " peer_ack=%" PRIu64 " verified_peer=%" PRIu64
            " recv=%" PRIu64 " peer_fin=%d fin_sent=%d sq_out=%" PRIu64
            "\n", g.next_k, g.done_k, g.peer_ack, g.e, g.nrecv,
            g.peer_fin, g.fin_done, g.sq_head - g.sq_tail);
}

void die(int status, const char *fmt, ...)
{
    va_list ap;

    fflush(stdout);
    va_start(ap, fmt);
    fprintf(stderr, "verbs-check: %s",
            status == EX_CHECK ? "MISMATCH " : "error: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    if (g.qp) {
        counters(stderr);
    }
    exit(status);
}

uint64_t hash4(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
    return mix64(mix64(mix64(mix64(a + PHI) ^ b) ^ c) ^ d);
}

void pat_fill(uint8_t *p, uint64_t len, uint64_t key, uint64_t off)
{
    uint64_t i = 0;

    while (i < len) {
        uint64_t o = off + i;
        uint64_t w = mix64(key + (o >> 3) * PHI);

        if ((o & 7) == 0 && len - i >= 8) {
            w = htole64(w);
            memcpy(p + i, &w, 8);
            i += 8;
        } else {
            p[i++] = w >> (8 * (o & 7));
        }
    }
}

/* index of the first byte of p[0..len) that is not the pattern, or len */
static uint64_t pat_find_bad(const uint8_t *p, uint64_t len, uint64_t key,
                             uint64_t off)
{
    uint64_t i = 0;

    while (i < len) {
        uint64_t o = off + i;
        uint64_t w = mix64(key + (o >> 3) * PHI);

        if ((o & 7) == 0 && len - i >= 8) {
            uint64_t v;

            w = htole64(w);
            memcpy(&v, p + i, 8);
            if (v != w) {
                while (p[i] == pat_byte(key, off + i)) {
                    i++;
                }
                return i;
            }
            i += 8;
        } else {
            if (p[i] != (uint8_t)(w >> (8 * (o & 7)))) {
                return i;
            }
            i++;
        }
    }
    return len;
}

/*
 * The first byte of p[len] that is not the guard byte, or len.  Whole
 * buffers are checked after every message: memcmp() against a block of
 * guard bytes (glibc's is vectorized), byte by byte only where it differs.
 */
static uint64_t guard_find_bad(const uint8_t *p, uint64_t len)
{
    static uint8_t block[4096];
    uint64_t i = 0;

    if (block[0] != GUARD) {
        memset(block, GUARD, sizeof(block));
    }
    while (i < len) {
        uint64_t n = len - i < sizeof(block) ? len - i : sizeof(block);

        if (memcmp(p + i, block, n)) {
            while (p[i] == GUARD) {
                i++;
            }
            return i;
        }
        i += n;
    }
    return len;
}

/* ------------------------------------------------------------- checks */

static uint64_t sg_total(const struct sg *sg, int n)
{
    uint64_t t = 0;
    int i;

    for (i = 0; i < n; i++) {
        t += sg[i].len;
    }
    return t;
}

static int sg_byte(const struct sg *sg, int n, uint64_t o, uint8_t *b)
{
    int i;

    for (i = 0; i < n; i++) {
        if (o < sg[i].len) {
            *b = sg[i].p[o];
            return 1;
        }
        o -= sg[i].len;
    }
    return 0;
}

static uint8_t chk_expected(const struct chk *c, uint64_t o)
{
    if (o >= c->d0 && o < c->d1) {
        return pat_byte(c->key, c->pbase + (o - c->d0));
    }
    return GUARD;
}

void dir_name(int dir, char *buf)
{
    strcpy(buf, dir ? "s2c" : "c2s");
}

static void chk_report(const struct chk *c, uint64_t o)
    __attribute__((noreturn));
static void chk_report(const struct chk *c, uint64_t o)
{
    uint64_t total = sg_total(c->sg, c->nsg), lo, hi, i;
    char dn[8];
    uint8_t got = 0;
    const char *where;

    sg_byte(c->sg, c->nsg, o, &got);
    dir_name(c->dir, dn);
    if (o < c->d0) {
        where = "guard before data";
    } else if (o < c->d1) {
        where = "data";
    } else {
        where = "guard after data";
    }
    fflush(stdout);
    fprintf(stderr, "verbs-check: MISMATCH op=%s dir=%s msg=%" PRIu64
            " size=%u in=%s at=%s offset=%" PRId64
            " expected=0x%02x got=0x%02x\n", op_names[c->op], dn, c->k,
            c->size, c->what, where, (int64_t)(o - c->d0) + c->rel0,
            chk_expected(c, o), got);
    lo = o >= 8 ? o - 8 : 0;
    hi = o + 16 < total ? o + 16 : total;
    fprintf(stderr, "verbs-check:   offset %-8" PRId64 " expected:",
            (int64_t)(lo - c->d0) + c->rel0);
    for (i = lo; i < hi; i++) {
        fprintf(stderr, "%s%02x", i == o ? " [" : " ", chk_expected(c, i));
    }
    fprintf(stderr, "\nverbs-check:   offset %-8" PRId64 " got:     ",
            (int64_t)(lo - c->d0) + c->rel0);
    for (i = lo; i < hi; i++) {
        uint8_t b = 0;

        sg_byte(c->sg, c->nsg, i, &b);
        fprintf(stderr, "%s%02x", i == o ? " [" : " ", b);
    }
    fprintf(stderr, "\n");
    if (g.qp) {
        counters(stderr);
    }
    exit(EX_CHECK);
}

/* check view bytes [from, to) of c; exits on the first mismatch */
void chk_run(const struct chk *c, uint64_t from, uint64_t to)
{
    uint64_t lo = 0;
    int i;

    for (i = 0; i < c->nsg && lo < to; i++) {
        uint64_t a = from > lo ? from : lo;
        uint64_t b = to < lo + c->sg[i].len ? to : lo + c->sg[i].len;

        while (a < b) {
            uint64_t e, bad;
            const uint8_t *p = c->sg[i].p + (a - lo);

            if (a < c->d0) {
                e = b < c->d0 ? b : c->d0;
                bad = guard_find_bad(p, e - a);
            } else if (a < c->d1) {
                e = b < c->d1 ? b : c->d1;
                bad = pat_find_bad(p, e - a, c->key, c->pbase + (a - c->d0));
            } else {
                e = b;
                bad = guard_find_bad(p, e - a);
            }
            if (bad < e - a) {
                chk_report(c, a + bad);
            }
            a = e;
        }
        lo += c->sg[i].len;
    }
}

/* set view bytes [from, to) to the guard byte */
void sg_guard(const struct sg *sg, int n, uint64_t from, uint64_t to)
{
    uint64_t lo = 0;
    int i;

    for (i = 0; i < n && lo < to; i++) {
        uint64_t a = from > lo ? from : lo;
        uint64_t b = to < lo + sg[i].len ? to : lo + sg[i].len;

        if (a < b) {
            memset(sg[i].p + (a - lo), GUARD, b - a);
        }
        lo += sg[i].len;
    }
}

void sg_copy_out(const struct sg *sg, int n, void *dst, uint64_t len)
{
    uint8_t *d = dst;
    int i;

    for (i = 0; i < n && len; i++) {
        uint64_t l = sg[i].len < len ? sg[i].len : len;

        memcpy(d, sg[i].p, l);
        d += l;
        len -= l;
    }
}

/* ------------------------------------------------------ message params */

uint64_t pkey_of(int dir, uint64_t k, uint64_t salt)
{
    return hash4(g.pkey, dir, k, salt);
}

uint64_t lkey_of(int dir, uint64_t k, uint64_t salt)
{
    /* layout randomness: from --seed only, not the nonce */
    return hash4(cfg.seed, dir, k, salt + 0x1000);
}

/* split len into up to n cuts: cut[i] = start of part i, cut[n] = len */
void split(uint32_t len, int n, uint64_t h, uint32_t *cut)
{
    int i, j;

    cut[0] = 0;
    for (i = 1; i < n; i++) {
        uint64_t r = mix64(h + i);
        uint32_t v;

        if (len == 0) {
            v = 0;
        } else if (r & 1) {
            v = (r >> 8) % (len + 1);
        } else {
            /* log-uniform: small parts are common */
            v = ((r >> 8) % (len + 1)) >> ((r >> 1) % 24);
        }
        cut[i] = v;
    }
    cut[n] = len;
    for (i = 1; i < n; i++) {       /* insertion sort */
        for (j = i; j > 1 && cut[j - 1] > cut[j]; j--) {
            uint32_t t = cut[j];

            cut[j] = cut[j - 1];
            cut[j - 1] = t;
        }
    }
}

void msg_params(int dir, uint64_t k, struct msg *m)
{
    uint64_t h = lkey_of(dir, k, 1);
    uint64_t p = pkey_of(dir, k, 2);
    int i;

    memset(m, 0, sizeof(*m));
    m->op = cfg.op_list[k % cfg.nops];
    m->size = g.sizes[(k / cfg.nops) % g.nsizes];
    if (m->op == OP_READ && m->size == 0) {
        m->size = 1;
    }
    if (m->op == OP_CAS || m->op == OP_FAA) {
        m->size = 8;
    }
    m->key = pkey_of(dir, k, 0);
    m->woff = PAD + h % 64;
    m->roff = (h >> 8) % RSRC_SLACK;
    m->imm = (uint32_t)p & ~CTRL_IMM;
    m->ctr = (h >> 24) % NCTR;
    m->add = mix64(p + 1);
    m->swap = mix64(p + 2);
    m->miss = mix64(p + 3) | 1;
    m->cas_match = (mix64(p + 4) & 3) != 0;
    for (i = 0; i < g.nsg; i++) {
        m->misalign[i] = mix64(h + 100 + i) % 64;
    }
    split(m->size, g.nsg, lkey_of(dir, k, 3), m->cut);
}

uint64_t ctr_init(int owner, int c)
{
    return pkey_of(owner, c, 5);
}

static int op_gets_recv(int op)
{
    return (OPS_RECV >> op) & 1;
}

/* skip the peer's messages that do not reach our receive queue */
void skip_peer(void)
{
    if (!g.has_recv_ops) {
        if (g.peer_fin) {
            g.e = g.peer_n;
        }
        return;
    }
    while (!(g.peer_fin && g.e >= g.peer_n) &&
           !op_gets_recv(cfg.op_list[g.e % cfg.nops])) {
        g.e++;
    }
}
