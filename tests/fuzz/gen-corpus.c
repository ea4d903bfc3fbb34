/*
 * Writes the pvrdma fuzzer's seed corpus: driver-like sequences (probe,
 * every command, a loopback send with its completions, SRQ, fast
 * registration, reset; the same in host HCA mode with the host's
 * completions, events and full queues) in the input language of
 * fuzz-pvrdma.h.  The page allocator is mirrored here, so seeds can carry
 * real guest addresses.
 *
 *   gen-corpus DIR
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "hw/rdma/pvrdma_abi.h"
#include "fuzz-pvrdma.h"
#include "fuzz-input.h"

#define RAM_BASE    0x100000ull     /* FH_RAM_BASE */
#define PAGE        4096u

typedef struct Seed {
    GByteArray *b;
    uint32_t next_page;
    uint32_t nalloc;
    uint64_t first[FZ_MAX_ALLOCS];
} Seed;

static void u8(Seed *s, uint8_t v)
{
    seed_u8(s->b, v);
}

static void le(Seed *s, uint64_t v, unsigned n)
{
    seed_le(s->b, v, n);
}

static void seed_init(Seed *s)
{
    s->b = g_byte_array_new();
    s->next_page = FZ_FIRST_FREE;
    s->nalloc = 0;
}

static void seed_write(Seed *s, const char *dir, const char *name)
{
    g_autofree char *path = g_strdup_printf("%s/%s", dir, name);

    if (!g_file_set_contents(path, (const char *)s->b->data, s->b->len,
                             NULL)) {
        fprintf(stderr, "gen-corpus: cannot write %s\n", path);
        exit(1);
    }
    g_byte_array_free(s->b, TRUE);
}

/* Mirror of the fuzzer's bump allocator; returns the allocation number. */
static uint32_t alloc(Seed *s, uint32_t n)
{
    uint32_t k = s->nalloc++ % FZ_MAX_ALLOCS;

    u8(s, FZ_ALLOC);
    u8(s, n - 1);
    if (s->next_page + 2 + n > FZ_HOLE_FIRST) {
        s->next_page = FZ_FIRST_FREE;
    }
    s->first[k] = RAM_BASE + (uint64_t)(s->next_page + 2) * PAGE;
    s->next_page += 2 + n;
    return k;
}

static void boot(Seed *s)
{
    u8(s, FZ_BOOT);
    le(s, 0, 3);            /* version 20, 4 + 4 ring pages */
    s->next_page += 2 * (2 + 4);
    s->nalloc += 2;
}

static void reg_write(Seed *s, uint32_t reg, uint32_t val)
{
    u8(s, FZ_REG_WRITE);
    u8(s, reg / 4);
    le(s, val, 4);
}

/* A command; with k >= 0, allocation k's pdir is patched in at off. */
static void cmd(Seed *s, const void *req, size_t len, int k, size_t off)
{
    if (k >= 0) {
        u8(s, FZ_CMD_PDIR);
        u8(s, k);
        u8(s, off);
    } else {
        u8(s, FZ_CMD);
    }
    u8(s, len);
    g_byte_array_append(s->b, req, len);
}

static void page_write(Seed *s, uint32_t k, uint8_t page, uint16_t off,
                       const void *p, uint8_t len)
{
    u8(s, FZ_PAGE_WRITE);
    u8(s, k);
    u8(s, page);
    le(s, off, 2);
    u8(s, len);
    g_byte_array_append(s->b, p, len);
}

static void page_write32(Seed *s, uint32_t k, uint8_t page, uint16_t off,
                         uint32_t v)
{
    u8(s, FZ_PAGE_WRITE32);
    u8(s, k);
    u8(s, page);
    le(s, off, 2);
    le(s, v, 4);
}

static void uar(Seed *s, uint8_t page, uint32_t off, uint32_t val)
{
    u8(s, FZ_UAR);
    u8(s, page);
    u8(s, off / 4);
    le(s, val, 4);
}

static void run(Seed *s)
{
    u8(s, FZ_RUN);
}

/* Host HCA mode: complete the nth outstanding host work request. */
static void hca_wc(Seed *s, uint8_t which, uint8_t status, uint32_t len,
                   uint32_t extra)
{
    u8(s, FZ_HCA_WC);
    u8(s, which);
    u8(s, status ? 0x80 | status : 0);
    le(s, len, 4);
    le(s, extra, 4);
}

static void hca_knob(Seed *s, uint8_t which, uint8_t v)
{
    u8(s, FZ_HCA_KNOB);
    u8(s, which);
    u8(s, v);
}

/* Host event type (fuzz-pvrdma.c's list) about the nth host twin */
static void hca_event(Seed *s, uint8_t type, uint16_t nth)
{
    u8(s, FZ_HCA_EVENT);
    u8(s, type);
    le(s, nth, 2);
}

static const uint8_t gid[16] = { [10] = 0xff, [11] = 0xff, [12] = 10,
                                 [15] = 1 };

static void create_pd(Seed *s, uint32_t ctx)
{
    struct pvrdma_cmd_create_pd c = { .hdr.cmd = PVRDMA_CMD_CREATE_PD,
                                      .ctx_handle = ctx };

    cmd(s, &c, sizeof(c), -1, 0);
}

/* CQ of 64 entries: state page + 1 page; returns its allocation. */
static uint32_t create_cq(Seed *s, uint32_t ctx)
{
    struct pvrdma_cmd_create_cq c = { .hdr.cmd = PVRDMA_CMD_CREATE_CQ,
                                      .cqe = 64, .nchunks = 2,
                                      .ctx_handle = ctx };
    uint32_t k = alloc(s, 2);

    cmd(s, &c, sizeof(c), k, offsetof(struct pvrdma_cmd_create_cq,
                                      pdir_dma));
    return k;
}

/* QP with 8 x 1-SGE send and receive rings: 1 + 1 + 1 pages. */
static uint32_t create_qp(Seed *s, uint32_t pd, uint32_t cq, uint8_t type,
                          uint32_t srq)
{
    struct pvrdma_cmd_create_qp c = { .hdr.cmd = PVRDMA_CMD_CREATE_QP };
    uint32_t k = alloc(s, srq ? 2 : 3);

    c.pd_handle = pd;
    c.send_cq_handle = c.recv_cq_handle = cq;
    c.qp_type = type;
    c.max_send_wr = 8;
    c.max_send_sge = 1;
    c.max_recv_wr = srq ? 0 : 8;
    c.max_recv_sge = srq ? 0 : 1;
    c.is_srq = srq != 0;
    c.srq_handle = srq;
    c.send_chunks = 1;
    c.total_chunks = srq ? 2 : 3;
    c.access_flags = PVRDMA_ACCESS_LOCAL_WRITE;
    cmd(s, &c, sizeof(c), k, offsetof(struct pvrdma_cmd_create_qp,
                                      pdir_dma));
    return k;
}

static void modify(Seed *s, uint32_t qp, uint32_t mask,
                   const struct pvrdma_qp_attr *a)
{
    struct pvrdma_cmd_modify_qp c = { .hdr.cmd = PVRDMA_CMD_MODIFY_QP,
                                      .qp_handle = qp, .attr_mask = mask };

    c.attrs = *a;
    cmd(s, &c, sizeof(c), -1, 0);
}

static void to_rts(Seed *s, uint32_t qp, uint32_t dest, bool rc)
{
    struct pvrdma_qp_attr a = { 0 };

    a.qp_state = PVRDMA_QPS_INIT;
    a.port_num = 1;
    a.qkey = 0x1111;
    a.qp_access_flags = PVRDMA_ACCESS_LOCAL_WRITE |
                        PVRDMA_ACCESS_REMOTE_WRITE |
                        PVRDMA_ACCESS_REMOTE_READ |
                        PVRDMA_ACCESS_REMOTE_ATOMIC;
    modify(s, qp, PVRDMA_QP_STATE | PVRDMA_QP_PKEY_INDEX | PVRDMA_QP_PORT |
           (rc ? PVRDMA_QP_ACCESS_FLAGS : PVRDMA_QP_QKEY), &a);
    a.qp_state = PVRDMA_QPS_RTR;
    a.path_mtu = PVRDMA_MTU_1024;
    a.dest_qp_num = dest;
    a.min_rnr_timer = 1;
    a.max_dest_rd_atomic = 1;
    memcpy(a.ah_attr.grh.dgid.raw, gid, 16);
    modify(s, qp, PVRDMA_QP_STATE | (rc ? PVRDMA_QP_AV | PVRDMA_QP_PATH_MTU |
           PVRDMA_QP_DEST_QPN | PVRDMA_QP_RQ_PSN |
           PVRDMA_QP_MAX_DEST_RD_ATOMIC | PVRDMA_QP_MIN_RNR_TIMER : 0), &a);
    a.qp_state = PVRDMA_QPS_RTS;
    a.rnr_retry = 1;
    a.max_rd_atomic = 1;
    modify(s, qp, PVRDMA_QP_STATE | PVRDMA_QP_SQ_PSN |
           (rc ? PVRDMA_QP_TIMEOUT | PVRDMA_QP_RETRY_CNT |
            PVRDMA_QP_RNR_RETRY | PVRDMA_QP_MAX_QP_RD_ATOMIC : 0), &a);
}

static void bind(Seed *s)
{
    struct pvrdma_cmd_create_bind c = { .hdr.cmd = PVRDMA_CMD_CREATE_BIND,
                                        .mtu = 1024,
                                        .gid_type =
                                            PVRDMA_GID_TYPE_FLAG_ROCE_V2 };

    memcpy(c.new_gid, gid, 16);
    cmd(s, &c, sizeof(c), -1, 0);
}

/* User MR over a fresh allocation of n pages; returns the allocation. */
static uint32_t create_mr(Seed *s, uint32_t pd, uint32_t n, uint32_t flags)
{
    struct pvrdma_cmd_create_mr c = { .hdr.cmd = PVRDMA_CMD_CREATE_MR };
    uint32_t k = alloc(s, n);

    c.start = s->first[k];
    c.length = n * PAGE;
    c.pd_handle = pd;
    c.access_flags = PVRDMA_ACCESS_LOCAL_WRITE | PVRDMA_ACCESS_REMOTE_WRITE |
                     PVRDMA_ACCESS_REMOTE_READ | PVRDMA_ACCESS_REMOTE_ATOMIC;
    c.nchunks = n;
    c.flags = flags;
    cmd(s, &c, sizeof(c), k, offsetof(struct pvrdma_cmd_create_mr, pdir_dma));
    return k;
}

static uint32_t stride(size_t hdr)
{
    uint32_t p = 1;

    while (p < hdr + sizeof(struct pvrdma_sge)) {
        p <<= 1;
    }
    return p;
}

static void send_wqe(Seed *s, uint32_t qpk, uint32_t qp, uint32_t idx,
                     uint32_t op, uint64_t addr, uint32_t len, uint32_t key,
                     uint64_t raddr)
{
    struct {
        struct pvrdma_sq_wqe_hdr h;
        struct pvrdma_sge sge;
    } w = { 0 };

    w.h.wr_id = 0x100 + idx;
    w.h.num_sge = 1;
    w.h.opcode = op;
    w.h.send_flags = PVRDMA_SEND_SIGNALED;
    if (op == PVRDMA_WR_ATOMIC_FETCH_AND_ADD) {
        w.h.wr.atomic.remote_addr = raddr;
        w.h.wr.atomic.rkey = key;
        w.h.wr.atomic.compare_add = 1;
    } else {
        w.h.wr.rdma.remote_addr = raddr;
        w.h.wr.rdma.rkey = key;
    }
    w.sge.addr = addr;
    w.sge.length = len;
    w.sge.lkey = key;
    page_write(s, qpk, 1, (idx % 8) * stride(sizeof(w.h)), &w, sizeof(w));
    page_write32(s, qpk, 0, 0, idx + 1);
    uar(s, 0, PVRDMA_UAR_QP_OFFSET, PVRDMA_UAR_QP_SEND | qp);
}

static void recv_wqe(Seed *s, uint32_t qpk, uint32_t qp, uint32_t idx,
                     uint64_t addr, uint32_t len, uint32_t key)
{
    struct {
        struct pvrdma_rq_wqe_hdr h;
        struct pvrdma_sge sge;
    } w = { 0 };

    w.h.wr_id = 0x200 + idx;
    w.h.num_sge = 1;
    w.sge.addr = addr;
    w.sge.length = len;
    w.sge.lkey = key;
    page_write(s, qpk, 2, (idx % 8) * stride(sizeof(w.h)), &w, sizeof(w));
    page_write32(s, qpk, 0, 8, idx + 1);
    uar(s, 0, PVRDMA_UAR_QP_OFFSET, PVRDMA_UAR_QP_RECV | qp);
}

/* 1: probe and query */
static void seed_probe(const char *dir)
{
    Seed s;

    seed_init(&s);
    boot(&s);
    {
        struct pvrdma_cmd_query_port q = { .hdr.cmd = PVRDMA_CMD_QUERY_PORT,
                                           .port_num = 1 };

        cmd(&s, &q, sizeof(q), -1, 0);
    }
    create_pd(&s, 0);
    seed_write(&s, dir, "probe");
}

/* 2: RC loopback: send/recv, RDMA write/read, atomics, completions */
static void seed_rc_loopback(const char *dir)
{
    Seed s;
    uint32_t qa, qb, mrk, cqk;

    seed_init(&s);
    boot(&s);
    bind(&s);
    create_pd(&s, 0);                               /* PD 1 */
    cqk = create_cq(&s, 0);                         /* CQ 1 */
    qa = create_qp(&s, 1, 1, PVRDMA_QPT_RC, 0);     /* QP 2 */
    qb = create_qp(&s, 1, 1, PVRDMA_QPT_RC, 0);     /* QP 3 */
    to_rts(&s, 2, 3, true);
    to_rts(&s, 3, 2, true);
    mrk = create_mr(&s, 1, 2, 0);                   /* MR 1: key 0x100 */
    uar(&s, 0, PVRDMA_UAR_CQ_OFFSET, PVRDMA_UAR_CQ_ARM | 1);
    recv_wqe(&s, qb, 3, 0, s.first[mrk] + PAGE, 256, 0x100);
    send_wqe(&s, qa, 2, 0, PVRDMA_WR_SEND, s.first[mrk], 128, 0x100, 0);
    run(&s);
    send_wqe(&s, qa, 2, 1, PVRDMA_WR_RDMA_WRITE, s.first[mrk], 64, 0x100,
             s.first[mrk] + 512);
    send_wqe(&s, qa, 2, 2, PVRDMA_WR_RDMA_READ, s.first[mrk], 64, 0x100,
             s.first[mrk] + 1024);
    send_wqe(&s, qa, 2, 3, PVRDMA_WR_ATOMIC_FETCH_AND_ADD, s.first[mrk], 8,
             0x100, s.first[mrk] + 2048);
    run(&s);
    page_write32(&s, cqk, 0, 12, 4);                /* consume CQEs */
    send_wqe(&s, qa, 2, 4, PVRDMA_WR_SEND, s.first[mrk], 128, 0x100, 0);
    u8(&s, FZ_CLOCK);
    u8(&s, 100);
    run(&s);
    seed_write(&s, dir, "rc-loopback");
}

/* 3: UD pair and the GSI QP */
static void seed_ud_gsi(const char *dir)
{
    Seed s;
    uint32_t qa, mrk;

    seed_init(&s);
    boot(&s);
    bind(&s);
    create_pd(&s, 0);
    create_cq(&s, 0);
    create_qp(&s, 1, 1, PVRDMA_QPT_GSI, 0);         /* QP 1 */
    qa = create_qp(&s, 1, 1, PVRDMA_QPT_UD, 0);     /* QP 2 */
    to_rts(&s, 2, 0, false);
    mrk = create_mr(&s, 1, 1, 0);
    send_wqe(&s, qa, 2, 0, PVRDMA_WR_SEND, s.first[mrk], 64, 0x100, 0);
    run(&s);
    seed_write(&s, dir, "ud-gsi");
}

/* 4: SRQ and a QP on it, user context and its doorbell page */
static void seed_srq_uc(const char *dir)
{
    Seed s;

    seed_init(&s);
    boot(&s);
    {
        struct pvrdma_cmd_create_uc uc = { .hdr.cmd = PVRDMA_CMD_CREATE_UC,
                                           .pfn64 = 0xfe000000ull / PAGE + 1 };
        struct pvrdma_cmd_create_srq c = { .hdr.cmd = PVRDMA_CMD_CREATE_SRQ,
                                           .pd_handle = 1, .nchunks = 2 };
        uint32_t k;

        cmd(&s, &uc, sizeof(uc), -1, 0);
        create_pd(&s, 1);
        create_cq(&s, 1);
        c.attrs.max_wr = 16;
        c.attrs.max_sge = 1;
        c.attrs.srq_limit = 2;
        k = alloc(&s, 2);
        cmd(&s, &c, sizeof(c), k, offsetof(struct pvrdma_cmd_create_srq,
                                           pdir_dma));
        create_qp(&s, 1, 1, PVRDMA_QPT_RC, 1);
        page_write32(&s, k, 0, 8, 3);
        uar(&s, 1, PVRDMA_UAR_SRQ_OFFSET, PVRDMA_UAR_SRQ_RECV | 1);
        uar(&s, 1, PVRDMA_UAR_CQ_OFFSET, PVRDMA_UAR_CQ_ARM_SOL | 1);
    }
    seed_write(&s, dir, "srq-uc");
}

/* 5: fast registration and invalidation */
static void seed_frmr(const char *dir)
{
    Seed s;
    uint32_t qa;

    seed_init(&s);
    boot(&s);
    bind(&s);
    create_pd(&s, 0);
    create_cq(&s, 0);
    qa = create_qp(&s, 1, 1, PVRDMA_QPT_RC, 0);
    to_rts(&s, 2, 2, true);
    {
        struct pvrdma_cmd_create_mr c = { .hdr.cmd = PVRDMA_CMD_CREATE_MR,
                                          .pd_handle = 1, .nchunks = 4,
                                          .flags = PVRDMA_MR_FLAG_FRMR };
        struct pvrdma_sq_wqe_hdr h = { .wr_id = 1,
                                       .opcode = PVRDMA_WR_FAST_REG_MR,
                                       .send_flags = PVRDMA_SEND_SIGNALED };
        uint32_t k = alloc(&s, 2);

        cmd(&s, &c, sizeof(c), -1, 0);
        h.wr.fast_reg.iova_start = 0x10000;
        h.wr.fast_reg.pl_pdir_dma = RAM_BASE + (uint64_t)(
            (s.first[k] - RAM_BASE) / PAGE - 2) * PAGE;
        h.wr.fast_reg.page_shift = 12;
        h.wr.fast_reg.page_list_len = 2;
        h.wr.fast_reg.length = 8192;
        h.wr.fast_reg.access_flags = PVRDMA_ACCESS_LOCAL_WRITE |
                                     PVRDMA_ACCESS_REMOTE_WRITE;
        h.wr.fast_reg.rkey = 0x142;
        page_write(&s, qa, 1, 0, &h, sizeof(h));
        h = (struct pvrdma_sq_wqe_hdr) { .wr_id = 2,
                                         .opcode = PVRDMA_WR_LOCAL_INV,
                                         .ex.invalidate_rkey = 0x142 };
        page_write(&s, qa, 1, stride(sizeof(h)), &h, sizeof(h));
        page_write32(&s, qa, 0, 0, 2);
        uar(&s, 0, PVRDMA_UAR_QP_OFFSET, PVRDMA_UAR_QP_SEND | 2);
        run(&s);
    }
    seed_write(&s, dir, "frmr");
}

/* 6: every destroy, then reset and a second probe */
static void seed_destroy_reset(const char *dir)
{
    Seed s;

    seed_init(&s);
    boot(&s);
    create_pd(&s, 0);
    create_cq(&s, 0);
    create_qp(&s, 1, 1, PVRDMA_QPT_RC, 0);
    create_mr(&s, 1, 1, 0);
    create_mr(&s, 1, 1, PVRDMA_MR_FLAG_DMA);
    {
        struct pvrdma_cmd_destroy_qp dq = { .hdr.cmd = PVRDMA_CMD_DESTROY_QP,
                                            .qp_handle = 2 };
        struct pvrdma_cmd_destroy_mr dm = { .hdr.cmd = PVRDMA_CMD_DESTROY_MR,
                                            .mr_handle = 1 };
        struct pvrdma_cmd_destroy_cq dc = { .hdr.cmd = PVRDMA_CMD_DESTROY_CQ,
                                            .cq_handle = 1 };
        struct pvrdma_cmd_resize_cq rc = { .hdr.cmd = PVRDMA_CMD_RESIZE_CQ,
                                           .cq_handle = 1, .cqe = 32 };

        cmd(&s, &dq, sizeof(dq), -1, 0);
        cmd(&s, &dm, sizeof(dm), -1, 0);
        cmd(&s, &rc, sizeof(rc), -1, 0);
        cmd(&s, &dc, sizeof(dc), -1, 0);
    }
    reg_write(&s, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_RESET);
    boot(&s);
    create_pd(&s, 0);
    seed_write(&s, dir, "destroy-reset");
}

/*
 * 7: host HCA mode, RC: WQEs to the host, its completions, a full send
 * queue, an error completion, a fatal event, refused calls, reset
 */
static void seed_hca_rc(const char *dir)
{
    Seed s;
    uint32_t qa, qb, mrk;

    seed_init(&s);
    u8(&s, FZ_HCA);
    boot(&s);
    bind(&s);
    create_pd(&s, 0);                               /* PD 1 */
    create_cq(&s, 0);                               /* CQ 1 */
    qa = create_qp(&s, 1, 1, PVRDMA_QPT_RC, 0);     /* QP 2 */
    qb = create_qp(&s, 1, 1, PVRDMA_QPT_RC, 0);     /* QP 3 */
    to_rts(&s, 2, 0x303, true);
    to_rts(&s, 3, 0x302, true);
    mrk = create_mr(&s, 1, 2, 0);                   /* host keys 0x1001 */
    uar(&s, 0, PVRDMA_UAR_CQ_OFFSET, PVRDMA_UAR_CQ_ARM | 1);
    recv_wqe(&s, qb, 3, 0, s.first[mrk] + PAGE, 256, 0x1001);
    send_wqe(&s, qa, 2, 0, PVRDMA_WR_SEND, s.first[mrk], 128, 0x1001, 0);
    hca_wc(&s, 0, 0, 128, 0x30200);                 /* the receive */
    hca_wc(&s, 0, 0, 128, 0);                       /* the send */
    hca_knob(&s, 0, 1);                             /* room for one send */
    send_wqe(&s, qa, 2, 1, PVRDMA_WR_RDMA_WRITE, s.first[mrk], 64, 0x1001,
             0x7000);
    send_wqe(&s, qa, 2, 2, PVRDMA_WR_RDMA_READ, s.first[mrk], 64, 0x1001,
             0x8000);
    hca_wc(&s, 0, 0, 64, 0);                        /* unblocks the read */
    send_wqe(&s, qa, 2, 3, PVRDMA_WR_ATOMIC_FETCH_AND_ADD, s.first[mrk], 8,
             0x2001, 0x9000);
    send_wqe(&s, qa, 2, 4, PVRDMA_WR_FAST_REG_MR, s.first[mrk], 8, 0, 0);
    hca_wc(&s, 0, PVRDMA_WC_REM_ACCESS_ERR, 0, 0);
    hca_wc(&s, 0, PVRDMA_WC_WR_FLUSH_ERR, 0, 0);
    hca_event(&s, 0, 1);                            /* QP_FATAL, QP 3 */
    hca_event(&s, 11, 1);                           /* DEVICE_FATAL */
    hca_knob(&s, 2, 1);                             /* next modify fails */
    to_rts(&s, 3, 0x302, true);
    hca_knob(&s, 3, 2);                             /* next create fails */
    create_pd(&s, 0);
    hca_knob(&s, 5, 1);                             /* host QP in error */
    {
        struct pvrdma_cmd_query_qp q = { .hdr.cmd = PVRDMA_CMD_QUERY_QP,
                                         .qp_handle = 2 };

        cmd(&s, &q, sizeof(q), -1, 0);
    }
    reg_write(&s, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_RESET);
    seed_write(&s, dir, "hca-rc");
}

/* 8: host HCA mode, SRQ: receives to the host's SRQ, their completion */
static void seed_hca_srq(const char *dir)
{
    Seed s;

    seed_init(&s);
    u8(&s, FZ_HCA);
    boot(&s);
    bind(&s);
    create_pd(&s, 0);
    create_cq(&s, 0);
    {
        struct pvrdma_cmd_create_srq c = { .hdr.cmd = PVRDMA_CMD_CREATE_SRQ,
                                           .pd_handle = 1, .nchunks = 2 };
        struct {
            struct pvrdma_rq_wqe_hdr h;
            struct pvrdma_sge sge;
        } w = { { .wr_id = 0x300, .num_sge = 1 }, { RAM_BASE, 64, 0x1001 } };
        uint32_t k;

        c.attrs.max_wr = 16;
        c.attrs.max_sge = 1;
        c.attrs.srq_limit = 2;
        k = alloc(&s, 2);
        cmd(&s, &c, sizeof(c), k, offsetof(struct pvrdma_cmd_create_srq,
                                           pdir_dma));
        create_qp(&s, 1, 1, PVRDMA_QPT_RC, 1);
        to_rts(&s, 2, 0x399, true);
        hca_knob(&s, 1, 1);                         /* room for one */
        page_write(&s, k, 1, 0, &w, sizeof(w));
        page_write(&s, k, 1, 32, &w, sizeof(w));
        page_write32(&s, k, 0, 8, 2);
        uar(&s, 0, PVRDMA_UAR_SRQ_OFFSET, PVRDMA_UAR_SRQ_RECV | 1);
        hca_wc(&s, 0, 0, 64, 0x1234501);
        hca_event(&s, 8, 1);                        /* SRQ_LIMIT_REACHED */
    }
    seed_write(&s, dir, "hca-srq");
}

/* 9: host HCA mode, UD: a send with an address vector; GSI stays here */
static void seed_hca_ud(const char *dir)
{
    Seed s;
    uint32_t qa, mrk;

    seed_init(&s);
    u8(&s, FZ_HCA);
    boot(&s);
    bind(&s);
    create_pd(&s, 0);
    create_cq(&s, 0);
    create_qp(&s, 1, 1, PVRDMA_QPT_GSI, 0);         /* QP 1 */
    qa = create_qp(&s, 1, 1, PVRDMA_QPT_UD, 0);     /* QP 2 */
    to_rts(&s, 2, 0, false);
    mrk = create_mr(&s, 1, 1, 0);
    send_wqe(&s, qa, 2, 0, PVRDMA_WR_SEND, s.first[mrk], 64, 0x1001, 0);
    hca_wc(&s, 0, 0, 64, 0);
    hca_knob(&s, 4, 0);                             /* host port down */
    {
        struct pvrdma_cmd_query_port q = { .hdr.cmd = PVRDMA_CMD_QUERY_PORT,
                                           .port_num = 1 };

        cmd(&s, &q, sizeof(q), -1, 0);
    }
    seed_write(&s, dir, "hca-ud");
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";

    seed_probe(dir);
    seed_rc_loopback(dir);
    seed_ud_gsi(dir);
    seed_srq_uc(dir);
    seed_frmr(dir);
    seed_destroy_reset(dir);
    seed_hca_rc(dir);
    seed_hca_srq(dir);
    seed_hca_ud(dir);
    return 0;
}
