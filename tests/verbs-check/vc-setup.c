/*
 * pvrdma-verbs-check: options, rdma_cm connection, memory and QP setup
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include <arpa/inet.h>
#include "vc.h"

struct vc_cfg cfg = {
    .port = DEFAULT_PORT,
    .smax = 1 << 20,
    .count = 1000,
    .depth = 8,
    .sges = 3,
    .seed = 1,
    .corrupt = -1,
    .timeout = 30,
};

/* ------------------------------------------------------------- options */

static void usage(FILE *f)
{
    fprintf(f,
"usage: pvrdma-verbs-check [options] server\n"
"       pvrdma-verbs-check [options] client ADDR\n"
"Both sides send and verify (every byte) at the same time; see the header\n"
"of verbs-check.c for the protocol.  Options (same -t -o -s -S -q -g --seed\n"
"on both sides; the server takes -n/-D from the client):\n"
"  -p, --port N       rdma_cm port (default %d)\n"
"  -b, --bind ADDR    server: listen on ADDR only; client: connect from\n"
"                     ADDR (an IPv4 address of this host)\n"
"  -t, --mode M       rc (default), ud (SEND with GRH, sizes <= path MTU)\n"
"                     or srq (RC whose receives come from an SRQ)\n"
"  -o, --ops LIST     comma list of send,send_imm,write,write_imm,read,\n"
"                     cas,faa (default: all the mode supports; ud: send,\n"
"                     send_imm)\n"
"  -s, --sizes LIST   comma list of message sizes (default: 0, 1, small,\n"
"                     every path-MTU boundary +-1 up to 4 MTU, 4095-4097,\n"
"                     8191-8193, 65535, 65536, powers of two up to -S)\n"
"  -S, --max-size N   largest size (default 1048576; ud: the path MTU)\n"
"  -n, --count N      messages per direction (default 1000)\n"
"  -D, --duration S   client: run S seconds instead of -n (time mode)\n"
"  -q, --depth N      messages in flight per side (default 8)\n"
"  -g, --sges N       SGEs per WR, in separate MRs (default 3, max %d)\n"
"      --seed N       layout and pattern seed (default 1)\n"
"  -T, --timeout S    fail (exit 3) after S s without a completion\n"
"                     (default 30)\n"
"      --ack-timeout N  the QP's local ACK timeout, 4.096 us * 2^N (1-31;\n"
"                     default: rdma_cm's; the pingpongs and perftest use\n"
"                     14, about 67 ms), retry_cnt and rnr_retry are 7\n"
"      --corrupt N    corrupt this side's message N (or the next one that\n"
"                     can be): flip a payload byte (send, write), overwrite\n"
"                     a byte of the peer's read source first (read), add\n"
"                     an unannounced fetch-and-add (cas, faa)\n"
"      --mutate KIND  what --corrupt does instead, for a check of the peer\n"
"                     to catch: imm (send_imm, write_imm: the immediate),\n"
"                     len (send, send_imm: one byte short), opcode (send:\n"
"                     sent as a write with immediate), guard-before,\n"
"                     guard-after (write: one byte more before or after\n"
"                     the data), guard-far (write: a stray byte at the far\n"
"                     end of the write slot); data is the default\n"
"  -v, --verbose      setup details and progress on stderr\n"
"  -h, --help\n"
"Last stdout line on success:\n"
"  verbs-check: ok mode=M dev=D mtu=N msgs=N bytes=N send=N send_imm=N\n"
"  write=N write_imm=N read=N cas=N faa=N recv=N rbytes=N errors=0\n"
"(this side's messages per op; recv/rbytes: peer messages and bytes this\n"
"side verified).  Exit: 0 ok, 1 check failed (MISMATCH line), 2 usage/\n"
"setup/connection error or peer gone, 3 no completion for -T s.\n",
            DEFAULT_PORT, MAX_SGES);
}

static uint64_t parse_num(const char *s, const char *what)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull(s, &end, 0);
    if (errno || end == s || *end || s[0] == '-') {
        die(EX_SETUP, "bad %s '%s'", what, s);
    }
    return v;
}

static void parse_ops(const char *s)
{
    char *dup = strdup(s), *tok, *save = NULL;
    int i;

    cfg.ops = 0;
    for (tok = strtok_r(dup, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        for (i = 0; i < NOPS; i++) {
            if (!strcmp(tok, op_names[i])) {
                break;
            }
        }
        if (i == NOPS) {
            die(EX_SETUP, "unknown operation '%s' (-o)", tok);
        }
        cfg.ops |= 1u << i;
    }
    free(dup);
}

static void parse_sizes(const char *s)
{
    char *dup = strdup(s), *tok, *save = NULL;

    cfg.nusizes = 0;
    for (tok = strtok_r(dup, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        uint64_t v = parse_num(tok, "size");

        if (v > (1u << 30) || cfg.nusizes >= MAX_SIZES) {
            die(EX_SETUP, "size %s too large or too many sizes", tok);
        }
        cfg.usizes[cfg.nusizes++] = v;
    }
    free(dup);
}

/* --ack-timeout: the RC QP's local ACK timeout instead of rdma_cm's */
static void set_ack_timeout(struct rdma_cm_id *id)
{
    uint8_t t = cfg.ack_timeout;

    if (cfg.ack_timeout && cfg.mode != MODE_UD &&
        rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t,
                        sizeof(t))) {
        die(EX_SETUP, "rdma_set_option(ACK_TIMEOUT %d): %s",
            cfg.ack_timeout, strerror(errno));
    }
}

/* The mutant kinds of --mutate, in enum order */
static int parse_mutant(const char *arg)
{
    static const char *const kinds[] = {
        "data", "imm", "len", "opcode", "guard-before", "guard-after",
        "guard-far",
    };

    for (int i = 0; i < (int)(sizeof(kinds) / sizeof(kinds[0])); i++) {
        if (!strcmp(arg, kinds[i])) {
            return i;
        }
    }
    die(EX_SETUP, "--mutate: unknown kind '%s'", arg);
}

/* One option c with its argument optarg; *ops takes -o's list */
static void parse_opt(int c, const char **ops)
{
    int i;

    switch (c) {
    case 'p':
        cfg.port = parse_num(optarg, "port");
        break;
    case 'b':
        if (inet_pton(AF_INET, optarg, &cfg.bind) != 1) {
            die(EX_SETUP, "-b wants an IPv4 address, not '%s'", optarg);
        }
        cfg.has_bind = 1;
        break;
    case 't':
        for (i = 0; i < 3; i++) {
            if (!strcmp(optarg, mode_names[i])) {
                break;
            }
        }
        if (i == 3) {
            die(EX_SETUP, "-t wants rc, ud or srq");
        }
        cfg.mode = i;
        break;
    case 'o':
        *ops = optarg;
        break;
    case 's':
        parse_sizes(optarg);
        break;
    case 'S':
        cfg.smax = parse_num(optarg, "max size");
        break;
    case 'n':
        cfg.count = parse_num(optarg, "count");
        break;
    case 'D':
        cfg.duration = strtod(optarg, NULL);
        if (cfg.duration <= 0) {
            die(EX_SETUP, "bad duration '%s'", optarg);
        }
        break;
    case 'q':
        cfg.depth = parse_num(optarg, "depth");
        break;
    case 'g':
        cfg.sges = parse_num(optarg, "sges");
        break;
    case 1:
        cfg.seed = parse_num(optarg, "seed");
        break;
    case 'T':
        cfg.timeout = parse_num(optarg, "timeout");
        break;
    case 2:
        cfg.corrupt = parse_num(optarg, "corrupt");
        break;
    case 4:
        cfg.mutate = parse_mutant(optarg);
        break;
    case 3:
        cfg.ack_timeout = parse_num(optarg, "ack timeout");
        if (cfg.ack_timeout < 1 || cfg.ack_timeout > 31) {
            die(EX_SETUP, "--ack-timeout wants 1 to 31");
        }
        break;
    case 'v':
        cfg.verbose++;
        break;
    case 'h':
        usage(stdout);
        exit(0);
    default:
        usage(stderr);
        exit(EX_SETUP);
    }
}

/* The operations to run: -o's list, or every one the mode has */
static void parse_op_set(const char *ops)
{
    int i;

    if (ops) {
        parse_ops(ops);
    } else if (cfg.mode == MODE_UD) {
        cfg.ops = (1u << OP_SEND) | (1u << OP_SEND_IMM);
    } else {
        cfg.ops = (1u << NOPS) - 1;
    }
    if (cfg.mode == MODE_UD && (cfg.ops & ~((1u << OP_SEND) |
                                            (1u << OP_SEND_IMM)))) {
        die(EX_SETUP, "ud mode supports only send and send_imm (-o)");
    }
    if (!cfg.ops) {
        die(EX_SETUP, "no operation (-o)");
    }
    for (i = 0; i < NOPS; i++) {
        if (cfg.ops & (1u << i)) {
            cfg.op_list[cfg.nops++] = i;
        }
    }
}

void parse_args(int argc, char **argv)
{
    static const struct option lo[] = {
        { "port", 1, NULL, 'p' },
        { "bind", 1, NULL, 'b' },
        { "mode", 1, NULL, 't' },
        { "ops", 1, NULL, 'o' },
        { "sizes", 1, NULL, 's' },
        { "max-size", 1, NULL, 'S' },
        { "count", 1, NULL, 'n' },
        { "duration", 1, NULL, 'D' },
        { "depth", 1, NULL, 'q' },
        { "sges", 1, NULL, 'g' },
        { "seed", 1, NULL, 1 },
        { "timeout", 1, NULL, 'T' },
        { "corrupt", 1, NULL, 2 },
        { "mutate", 1, NULL, 4 },
        { "ack-timeout", 1, NULL, 3 },
        { "verbose", 0, NULL, 'v' },
        { "help", 0, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *ops = NULL;
    int c;

    while ((c = getopt_long(argc, argv, "p:b:t:o:s:S:n:D:q:g:T:vh", lo,
                            NULL)) != -1) {
        parse_opt(c, &ops);
    }
    if (optind < argc && !strcmp(argv[optind], "server") &&
        optind + 1 == argc) {
        cfg.server = 1;
    } else if (optind + 2 == argc && !strcmp(argv[optind], "client")) {
        cfg.addr = argv[optind + 1];
    } else {
        usage(stderr);
        exit(EX_SETUP);
    }
    parse_op_set(ops);
    if (cfg.depth < 1 || cfg.depth > 1024) {
        die(EX_SETUP, "-q must be 1..1024");
    }
    if (cfg.sges < 1 || cfg.sges > MAX_SGES) {
        die(EX_SETUP, "-g must be 1..%d", MAX_SGES);
    }
    if (cfg.smax > (1u << 30)) {
        die(EX_SETUP, "-S at most 1 GiB");
    }
    if (cfg.timeout < 1) {
        die(EX_SETUP, "-T must be at least 1");
    }
    if (!cfg.server && !cfg.duration && !cfg.count) {
        die(EX_SETUP, "-n must be at least 1");
    }
}

static uint32_t cfg_digest(void)
{
    uint64_t h = hash4(cfg.mode, cfg.ops, cfg.smax, cfg.depth);
    int i;

    h = hash4(h, cfg.sges, cfg.seed, cfg.nusizes);
    for (i = 0; i < cfg.nusizes; i++) {
        h = hash4(h, cfg.usizes[i], i, 7);
    }
    return (uint32_t)h;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return x < y ? -1 : x > y;
}

static void add_size(uint64_t v, uint64_t max)
{
    if (v <= max && g.nsizes < MAX_SIZES) {
        g.sizes[g.nsizes++] = v;
    }
}

static void build_sizes(void)
{
    uint64_t max = cfg.smax, v;
    int i, j;

    if (cfg.mode == MODE_UD && max > g.mtu) {
        max = g.mtu;
    }
    g.nsizes = 0;
    if (cfg.nusizes) {
        for (i = 0; i < cfg.nusizes; i++) {
            if (cfg.usizes[i] > max) {
                die(EX_SETUP, "size %u over the limit %" PRIu64 "%s",
                    cfg.usizes[i], max,
                    cfg.mode == MODE_UD ? " (path MTU)" : " (-S)");
            }
            g.sizes[g.nsizes++] = cfg.usizes[i];
        }
        return;
    }
    add_size(0, max);
    add_size(1, max);
    add_size(7, max);
    add_size(8, max);
    add_size(9, max);
    add_size(64, max);
    add_size(255, max);
    for (i = 1; i <= 4; i++) {
        add_size(i * g.mtu - 1, max);
        add_size(i * g.mtu, max);
        add_size(i * g.mtu + 1, max);
    }
    add_size(4095, max);
    add_size(4096, max);
    add_size(4097, max);
    add_size(8191, max);
    add_size(8192, max);
    add_size(8193, max);
    add_size(65535, max);
    add_size(65536, max);
    for (v = 131072; v <= max; v *= 2) {
        add_size(v, max);
    }
    add_size(max, max);
    qsort(g.sizes, g.nsizes, sizeof(g.sizes[0]), cmp_u32);
    for (i = j = 0; i < g.nsizes; i++) {
        if (!j || g.sizes[j - 1] != g.sizes[i]) {
            g.sizes[j++] = g.sizes[i];
        }
    }
    g.nsizes = j;
}

/* ------------------------------------------------------------- rdma_cm */

static struct rdma_cm_event *get_event(int want, double secs)
{
    struct rdma_cm_event *ev;
    struct pollfd pfd = { .fd = g.ch->fd, .events = POLLIN };
    double end = now() + secs;

    for (;;) {
        int left = secs > 0 ? (int)((end - now()) * 1000) : -1;

        if (secs > 0 && left <= 0) {
            die(EX_SETUP, "no %s from rdma_cm within %.0f s",
                rdma_event_str(want), secs);
        }
        if (poll(&pfd, 1, left > 1000 || left < 0 ? 1000 : left) < 0 &&
            errno != EINTR) {
            die(EX_SETUP, "poll: %s", strerror(errno));
        }
        if (!(pfd.revents & POLLIN)) {
            continue;
        }
        if (rdma_get_cm_event(g.ch, &ev)) {
            if (errno == EAGAIN) {
                continue;
            }
            die(EX_SETUP, "rdma_get_cm_event: %s", strerror(errno));
        }
        if ((int)ev->event == want) {
            return ev;
        }
        if (ev->event == RDMA_CM_EVENT_REJECTED) {
            const char *why = ev->param.conn.private_data_len &&
                ev->param.conn.private_data ?
                (const char *)ev->param.conn.private_data : "";

            if (!*why && ev->status == 8) {
                die(EX_SETUP, "connection rejected: nothing listens on "
                    "%s port %d (status 8, invalid service ID)", cfg.addr,
                    cfg.port);
            }
            die(EX_SETUP, "connection rejected (status %d)%s%.60s",
                ev->status, *why ? ": " : "", why);
        }
        die(EX_SETUP, "rdma_cm: %s (status %d) while waiting for %s",
            rdma_event_str(ev->event), ev->status, rdma_event_str(want));
    }
}

static void fill_priv(struct vc_priv *p)
{
    memset(p, 0, sizeof(*p));
    p->magic = htole32(VC_MAGIC);
    p->version = htole16(VC_VERSION);
    p->mode = htole16(cfg.mode);
    p->digest = htole32(cfg_digest());
    p->nonce = htole32(g.nonce);
    p->mtu = htole32(g.mtu);
    p->count_lo = htole32((uint32_t)g.count);
    p->count_hi = htole32((uint32_t)(g.count >> 32));
    p->rkey = htole32(g.Rmr->rkey);
    p->raddr = htole64((uintptr_t)g.R);
    p->rlen = htole32(g.Rlen);
}

/* check the peer's private data; returns a reason or NULL */
static const char *read_priv(const void *data, int len, struct vc_priv *p)
{
    if (!data || len < (int)sizeof(*p)) {
        return "no verbs-check private data (another program?)";
    }
    memcpy(p, data, sizeof(*p));
    if (le32toh(p->magic) != VC_MAGIC) {
        return "bad magic (another program?)";
    }
    if (le16toh(p->version) != VC_VERSION) {
        return "other version of verbs-check";
    }
    if (le16toh(p->mode) != cfg.mode) {
        return "peer runs another -t mode";
    }
    if (le32toh(p->digest) != cfg_digest()) {
        return "options differ (-o -s -S -q -g --seed)";
    }
    return NULL;
}

static void take_peer_mr(const struct vc_priv *p)
{
    g.peer_raddr = le64toh(p->raddr);
    g.peer_rkey = le32toh(p->rkey);
    if (le32toh(p->rlen) != g.Rlen) {
        die(EX_SETUP, "peer's remote MR is %u bytes, expected %" PRIu64,
            le32toh(p->rlen), g.Rlen);
    }
}

/* -------------------------------------------------------------- layout */

/*
 * Reserve len bytes at 64-byte alignment in arena a; returns the pointer
 * (NULL while the arena has no memory yet: the first layout() pass only
 * computes the sizes).
 */
static uint8_t *take(int a, uint64_t len, uint32_t *lkey)
{
    struct arena *ar = &g.arena[a];
    uint64_t off = (ar->size + 63) & ~63ull;

    ar->size = off + len;
    if (lkey) {
        *lkey = ar->mr ? ar->mr->lkey : 0;
    }
    return ar->base ? ar->base + off : NULL;
}

static void layout(void)
{
    uint64_t regsz = PAD + g.cap + 64 + PAD;
    int i, j;

    for (i = 0; i < g.narena; i++) {
        g.arena[i].size = 0;
    }
    for (i = 0; i < cfg.depth; i++) {
        struct slot *s = &g.slots[i];

        for (j = 0; j < g.nsg; j++) {
            uint8_t *p = take(j % g.narena, regsz, &s->reg_lkey[j]);

            s->reg[j] = p ? p + PAD : NULL;
        }
        s->atom = take(0, 64, &s->atom_lkey);
    }
    for (i = 0; i < g.nrs; i++) {
        struct rslot *r = &g.rs[i];
        uint32_t cut[MAX_SGES + 1];
        int n = 0;

        if (cfg.mode == MODE_UD) {
            uint8_t *p = take(0, GRH_LEN + 2 * PAD,
                              &r->piece[n].lkey);

            r->piece[n].p = p ? p + PAD : NULL;
            r->piece[n++].len = GRH_LEN;
        }
        /* g.cap >= 128 > MAX_SGES: every piece gets at least one byte */
        split(g.cap - g.nsg, g.nsg, lkey_of(2, i, 4), cut);
        for (j = 0; j < g.nsg; j++) {
            uint32_t len = cut[j + 1] - cut[j] + 1;
            uint32_t mis = mix64(lkey_of(2, i, 5) + j) % 64;
            uint8_t *p = take(j % g.narena, len + mis + 2 * PAD,
                              &r->piece[n].lkey);

            r->piece[n].p = p ? p + PAD + mis : NULL;
            r->piece[n++].len = len;
        }
        r->npieces = n;
    }
    g.ctrlbuf = take(0, (uint64_t)g.nctrl * 128, &g.ctrl_lkey);
}

static void setup_memory(void)
{
    struct ibv_device_attr attr;
    int i, acc;

    if (ibv_query_device(g.ctx, &attr)) {
        die(EX_SETUP, "ibv_query_device failed");
    }
    if ((cfg.ops & OPS_ATOMIC) && attr.atomic_cap == IBV_ATOMIC_NONE) {
        die(EX_SETUP, "%s has no atomics (leave cas,faa out of -o)",
            ibv_get_device_name(g.ctx->device));
    }
    g.nsg = cfg.sges;
    if (g.nsg + (cfg.mode == MODE_UD) > attr.max_sge ||
        (cfg.mode == MODE_SRQ && g.nsg > attr.max_srq_sge)) {
        die(EX_SETUP, "-g %d: %s has max_sge %d (srq %d)%s", g.nsg,
            ibv_get_device_name(g.ctx->device), attr.max_sge,
            attr.max_srq_sge, cfg.mode == MODE_UD ?
            "; ud receives take one more SGE for the GRH" : "");
    }
    g.cap = 128;        /* at least a control message */
    for (i = 0; i < g.nsizes; i++) {
        if (g.sizes[i] > g.cap) {
            g.cap = g.sizes[i];
        }
    }
    g.narena = g.nsg < 4 ? g.nsg : 4;
    g.nrs = cfg.depth + 32;
    g.nctrl = 2 * cfg.depth + 16;
    g.sq_depth = 2 * cfg.depth + 32;
    if (g.sq_depth > attr.max_qp_wr || g.nrs > attr.max_qp_wr) {
        die(EX_SETUP, "-q %d: needs %d WRs, device has max_qp_wr %d",
            cfg.depth, g.sq_depth, attr.max_qp_wr);
    }
    g.slots = calloc(cfg.depth, sizeof(*g.slots));
    g.rs = calloc(g.nrs, sizeof(*g.rs));
    g.fifo = calloc(g.sq_depth + 1, sizeof(*g.fifo));
    if (!g.slots || !g.rs || !g.fifo) {
        die(EX_SETUP, "out of memory");
    }
    layout();
    for (i = 0; i < g.narena; i++) {
        struct arena *ar = &g.arena[i];

        ar->size = (ar->size + 4095) & ~4095ull;
        ar->base = aligned_alloc(4096, ar->size);
        if (!ar->base) {
            die(EX_SETUP, "out of memory (%" PRIu64 " bytes)", ar->size);
        }
        memset(ar->base, GUARD, ar->size);
        ar->mr = ibv_reg_mr(g.pd, ar->base, ar->size,
                            IBV_ACCESS_LOCAL_WRITE);
        if (!ar->mr) {
            die(EX_SETUP, "ibv_reg_mr(%" PRIu64 " bytes): %s", ar->size,
                strerror(errno));
        }
    }
    layout();

    /* our remote MR: write slots, read source, counters */
    g.wstride = (PAD + 64 + g.cap + PAD + 63) & ~63ull;
    g.rsrc_off = cfg.depth * g.wstride;
    g.rsrc_len = g.cap + RSRC_SLACK + 64;
    g.ctr_off = (g.rsrc_off + g.rsrc_len + 63) & ~63ull;
    g.Rlen = g.ctr_off + NCTR * 8 + 64;
    if (g.Rlen > UINT32_MAX) {
        die(EX_SETUP, "remote MR too large (-S, -q)");
    }
    g.R = aligned_alloc(4096, (g.Rlen + 4095) & ~4095ull);
    if (!g.R) {
        die(EX_SETUP, "out of memory");
    }
    memset(g.R, GUARD, g.Rlen);
    pat_fill(g.R + g.rsrc_off, g.rsrc_len, pkey_of(g.mydir, 0, 6), 0);
    for (i = 0; i < NCTR; i++) {
        uint64_t v = ctr_init(g.mydir, i);

        memcpy(g.R + g.ctr_off + 8 * i, &v, 8);
        g.pred[i] = ctr_init(!g.mydir, i);
    }
    acc = IBV_ACCESS_LOCAL_WRITE;
    if (cfg.mode != MODE_UD) {
        acc |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
        if (attr.atomic_cap != IBV_ATOMIC_NONE) {
            acc |= IBV_ACCESS_REMOTE_ATOMIC;
        }
    }
    g.Rmr = ibv_reg_mr(g.pd, g.R, g.Rlen, acc);
    if (!g.Rmr) {
        die(EX_SETUP, "ibv_reg_mr(remote MR): %s", strerror(errno));
    }
    vlog("%s: %d sizes up to %u, %d arenas, %d receive slots, remote MR "
         "%" PRIu64 " bytes", ibv_get_device_name(g.ctx->device), g.nsizes,
         g.cap, g.narena, g.nrs, g.Rlen);
}

void post_recv(int i)
{
    struct rslot *r = &g.rs[i];
    struct ibv_sge sge[MAX_SGES + 1];
    struct ibv_recv_wr wr, *bad;
    int j, rc;

    for (j = 0; j < r->npieces; j++) {
        sge[j].addr = (uintptr_t)r->piece[j].p;
        sge[j].length = r->piece[j].len;
        sge[j].lkey = r->piece[j].lkey;
    }
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = RECV_TAG | (g.rpost_seq++ << 16) | i;
    wr.sg_list = sge;
    wr.num_sge = r->npieces;
    if (g.srq) {
        rc = ibv_post_srq_recv(g.srq, &wr, &bad);
    } else {
        rc = ibv_post_recv(g.qp, &wr, &bad);
    }
    if (rc) {
        if (g.peer_gone) {
            return;
        }
        die(EX_SETUP, "ibv_post_recv: %s", strerror(rc));
    }
    r->posted = 1;
}

static void setup_qp(struct rdma_cm_id *id)
{
    struct ibv_qp_init_attr qa;
    int i;

    g.ctx = id->verbs;
    g.pd = ibv_alloc_pd(g.ctx);
    g.cc = ibv_create_comp_channel(g.ctx);
    if (!g.pd || !g.cc) {
        die(EX_SETUP, "ibv_alloc_pd / ibv_create_comp_channel failed");
    }
    fcntl(g.cc->fd, F_SETFL, fcntl(g.cc->fd, F_GETFL) | O_NONBLOCK);
    build_sizes();
    setup_memory();
    g.cq = ibv_create_cq(g.ctx, g.sq_depth + g.nrs + 16, NULL, g.cc, 0);
    if (!g.cq) {
        die(EX_SETUP, "ibv_create_cq: %s", strerror(errno));
    }
    if (cfg.mode == MODE_SRQ) {
        struct ibv_srq_init_attr sa;

        memset(&sa, 0, sizeof(sa));
        sa.attr.max_wr = g.nrs;
        sa.attr.max_sge = g.nsg;
        g.srq = ibv_create_srq(g.pd, &sa);
        if (!g.srq) {
            die(EX_SETUP, "ibv_create_srq: %s", strerror(errno));
        }
    }
    memset(&qa, 0, sizeof(qa));
    qa.send_cq = g.cq;
    qa.recv_cq = g.cq;
    qa.srq = g.srq;
    qa.qp_type = cfg.mode == MODE_UD ? IBV_QPT_UD : IBV_QPT_RC;
    qa.cap.max_send_wr = g.sq_depth;
    qa.cap.max_recv_wr = g.srq ? 0 : g.nrs;
    qa.cap.max_send_sge = g.nsg;
    qa.cap.max_recv_sge = g.nsg + (cfg.mode == MODE_UD);
    if (rdma_create_qp(id, g.pd, &qa)) {
        die(EX_SETUP, "rdma_create_qp: %s", strerror(errno));
    }
    g.qp = id->qp;
    for (i = 0; i < g.nrs; i++) {
        post_recv(i);
    }
    if (ibv_req_notify_cq(g.cq, 0)) {
        die(EX_SETUP, "ibv_req_notify_cq failed");
    }
    g.has_recv_ops = (cfg.ops & OPS_RECV) != 0;
    skip_peer();
    g.need_rb = (cfg.ops & OPS_ATOMIC) != 0;
}

static void conn_param(struct rdma_conn_param *cp, struct vc_priv *pd,
                       int resp, int init)
{
    struct ibv_device_attr attr;

    ibv_query_device(g.ctx, &attr);
    memset(cp, 0, sizeof(*cp));
    cp->private_data = pd;
    cp->private_data_len = sizeof(*pd);
    cp->responder_resources = resp < attr.max_qp_rd_atom ?
        resp : attr.max_qp_rd_atom;
    cp->initiator_depth = init < attr.max_qp_init_rd_atom ?
        init : attr.max_qp_init_rd_atom;
    cp->retry_count = 7;
    cp->rnr_retry_count = 7;
}

static void set_mtu_from(struct rdma_cm_id *id)
{
    if (id->route.num_paths > 0 && id->route.path_rec &&
        id->route.path_rec->mtu >= IBV_MTU_256 &&
        id->route.path_rec->mtu <= IBV_MTU_4096) {
        g.mtu = 128u << id->route.path_rec->mtu;
    } else {
        struct ibv_port_attr pa;

        if (ibv_query_port(id->verbs, id->port_num, &pa)) {
            die(EX_SETUP, "ibv_query_port failed");
        }
        g.mtu = 128u << pa.active_mtu;
    }
}

void run_server(void)
{
    struct sockaddr_in sin;
    struct rdma_cm_event *ev;
    struct rdma_conn_param cp;
    struct vc_priv mine, peer;
    const char *why;
    const void *pdata;
    int plen, resp, init;

    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons(cfg.port);
    if (cfg.has_bind) {
        sin.sin_addr = cfg.bind;
    }
    if (rdma_create_id(g.ch, &g.lid, NULL,
                       cfg.mode == MODE_UD ? RDMA_PS_UDP : RDMA_PS_TCP) ||
        rdma_bind_addr(g.lid, (struct sockaddr *)&sin) ||
        rdma_listen(g.lid, 1)) {
        die(EX_SETUP, "listen on port %d: %s", cfg.port, strerror(errno));
    }
    printf("verbs-check: server listening on port %d (%s)\n", cfg.port,
           mode_names[cfg.mode]);
    fflush(stdout);
    ev = get_event(RDMA_CM_EVENT_CONNECT_REQUEST, 0);
    g.id = ev->id;
    if (cfg.mode == MODE_UD) {
        pdata = ev->param.ud.private_data;
        plen = ev->param.ud.private_data_len;
        resp = init = 0;
    } else {
        pdata = ev->param.conn.private_data;
        plen = ev->param.conn.private_data_len;
        resp = ev->param.conn.initiator_depth;
        init = ev->param.conn.responder_resources;
    }
    why = read_priv(pdata, plen, &peer);
    if (why) {
        rdma_reject(g.id, why, strlen(why) + 1);
        rdma_ack_cm_event(ev);
        die(EX_SETUP, "client rejected: %s", why);
    }
    rdma_ack_cm_event(ev);
    g.nonce = le32toh(peer.nonce);
    g.mtu = le32toh(peer.mtu);
    g.count = le32toh(peer.count_lo) |
              (uint64_t)le32toh(peer.count_hi) << 32;
    g.pkey = hash4(cfg.seed, g.nonce, 0x5eed, 0);
    g.mydir = 1;
    setup_qp(g.id);
    take_peer_mr(&peer);
    fill_priv(&mine);
    conn_param(&cp, &mine, resp, init);
    set_ack_timeout(g.id);
    if (rdma_accept(g.id, &cp)) {
        die(EX_SETUP, "rdma_accept: %s", strerror(errno));
    }
    if (cfg.mode != MODE_UD) {
        ev = get_event(RDMA_CM_EVENT_ESTABLISHED, cfg.timeout);
        rdma_ack_cm_event(ev);
    }
}

void run_client(void)
{
    struct addrinfo hints, *ai;
    struct sockaddr_in src;
    struct rdma_cm_event *ev;
    struct rdma_conn_param cp;
    struct vc_priv mine, peer;
    const char *why;
    char port[16];
    int rc;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_INET;
    snprintf(port, sizeof(port), "%d", cfg.port);
    rc = getaddrinfo(cfg.addr, port, &hints, &ai);
    if (rc) {
        die(EX_SETUP, "%s: %s", cfg.addr, gai_strerror(rc));
    }
    if (rdma_create_id(g.ch, &g.id, NULL,
                       cfg.mode == MODE_UD ? RDMA_PS_UDP : RDMA_PS_TCP)) {
        die(EX_SETUP, "rdma_create_id: %s", strerror(errno));
    }
    memset(&src, 0, sizeof(src));
    src.sin_family = AF_INET;
    src.sin_addr = cfg.bind;
    if (rdma_resolve_addr(g.id, cfg.has_bind ? (struct sockaddr *)&src : NULL,
                          ai->ai_addr, 5000)) {
        die(EX_SETUP, "rdma_resolve_addr %s: %s", cfg.addr,
            strerror(errno));
    }
    freeaddrinfo(ai);
    rdma_ack_cm_event(get_event(RDMA_CM_EVENT_ADDR_RESOLVED, 10));
    if (rdma_resolve_route(g.id, 5000)) {
        die(EX_SETUP, "rdma_resolve_route: %s", strerror(errno));
    }
    rdma_ack_cm_event(get_event(RDMA_CM_EVENT_ROUTE_RESOLVED, 10));
    set_mtu_from(g.id);
    g.nonce = (uint32_t)mix64((uint64_t)time(NULL) << 20 ^ getpid() ^
                              (uint64_t)(now() * 1e9));
    g.count = cfg.duration ? 0 : cfg.count;
    g.pkey = hash4(cfg.seed, g.nonce, 0x5eed, 0);
    g.mydir = 0;
    setup_qp(g.id);
    fill_priv(&mine);
    conn_param(&cp, &mine, 16, 16);
    set_ack_timeout(g.id);
    if (rdma_connect(g.id, &cp)) {
        die(EX_SETUP, "rdma_connect: %s", strerror(errno));
    }
    ev = get_event(RDMA_CM_EVENT_ESTABLISHED, cfg.timeout);
    if (cfg.mode == MODE_UD) {
        why = read_priv(ev->param.ud.private_data,
                        ev->param.ud.private_data_len, &peer);
        if (!why) {
            g.ah = ibv_create_ah(g.pd, &ev->param.ud.ah_attr);
            g.rqpn = ev->param.ud.qp_num;
            g.rqkey = ev->param.ud.qkey;
            if (!g.ah) {
                die(EX_SETUP, "ibv_create_ah: %s", strerror(errno));
            }
        }
    } else {
        why = read_priv(ev->param.conn.private_data,
                        ev->param.conn.private_data_len, &peer);
    }
    if (why) {
        die(EX_SETUP, "server: %s", why);
    }
    rdma_ack_cm_event(ev);
    take_peer_mr(&peer);
}
