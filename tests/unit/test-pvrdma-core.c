/*
 * Unit tests of the pvrdma core's building blocks: ring index math, guest
 * rings, handle tables, page directories, guest memory maps and scatter
 * lists.  No QEMU: the core runs against the fake host.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "fake-host.h"
#include "hw/rdma/pvrdma_loopback.h"

typedef struct Fx {
    FakeHost h;
    PvrdmaCore c;
} Fx;

static void fx_init(Fx *f)
{
    PvrdmaLimits l;

    fh_init(&f->h);
    pvrdma_limits_default(&l);
    pvrdma_core_init(&f->c, &fh_ops, &f->h, &l);
    pvrdma_core_add_transport(&f->c, pvrdma_loopback_new(&f->c));
}

static void fx_fini(Fx *f)
{
    pvrdma_core_fini(&f->c);
    g_assert_cmpuint(fh_outstanding(&f->h), ==, 0);
    g_assert_cmpuint(f->h.bad_unmaps, ==, 0);
    fh_fini(&f->h);
}

/* ------------------------------------------------------------------ */
/* Ring index math                                                     */

static void test_idx_math(void)
{
    for (uint32_t n = 1; n <= (1u << 15); n <<= 1) {
        uint32_t two_n = 2 * n;
        uint32_t idx, k;

        g_assert_true(pvrdma_is_pow2(n));
        /* valid iff < 2N */
        g_assert_true(pvrdma_idx_valid(0, n));
        g_assert_true(pvrdma_idx_valid(n - 1, n));
        g_assert_true(pvrdma_idx_valid(n, n));
        g_assert_true(pvrdma_idx_valid(two_n - 1, n));
        g_assert_false(pvrdma_idx_valid(two_n, n));
        g_assert_false(pvrdma_idx_valid(two_n + 1, n));
        g_assert_false(pvrdma_idx_valid(two_n | n, n));
        g_assert_false(pvrdma_idx_valid(UINT32_MAX, n));
        g_assert_false(pvrdma_idx_valid(0x80000000u, n));
        for (int i = 0; i < 64; i++) {
            idx = g_test_rand_int();
            g_assert_cmpint(pvrdma_idx_valid(idx, n), ==, idx < two_n);
        }

        /* next: +1 modulo 2N; N-1 -> N sets the generation bit */
        g_assert_cmpuint(pvrdma_idx_next(n - 1, n), ==, n);
        g_assert_cmpuint(pvrdma_idx_next(two_n - 1, n), ==, 0);
        g_assert_cmpuint(pvrdma_idx_next(0, n), ==, 1 % two_n);

        /* walking 2N steps returns to the start; used counts steps */
        idx = n > 1 ? n / 2 + 1 : 0;
        {
            uint32_t cons = idx, prod = idx;

            for (k = 0; k <= n; k++) {
                g_assert_true(pvrdma_idx_valid(prod, n));
                g_assert_cmpuint(pvrdma_idx_used(prod, cons, n), ==, k);
                /* same slot, different generation iff full */
                g_assert_cmpuint(prod & (n - 1), ==,
                                 (cons + k) & (n - 1));
                if (k == n) {
                    g_assert_cmpuint(prod, ==, cons ^ n);
                }
                prod = pvrdma_idx_next(prod, n);
            }
            for (; k < 2 * n; k++) {
                prod = pvrdma_idx_next(prod, n);
            }
            g_assert_cmpuint(prod, ==, cons);
        }
        /* exhaustive for small rings */
        if (n <= 64) {
            for (uint32_t p = 0; p < two_n; p++) {
                for (uint32_t c = 0; c < two_n; c++) {
                    g_assert_cmpuint(pvrdma_idx_used(p, c, n), ==,
                                     (p + two_n - c) % two_n);
                }
            }
        }
    }
}

/* ------------------------------------------------------------------ */
/* Guest rings                                                         */

static void ring_refused(Fx *f, const uint64_t *pages, uint32_t npages,
                         uint32_t first_page, uint32_t state_off,
                         uint32_t nelems, uint32_t elem_size)
{
    PvrdmaRing r;
    uint64_t errs = f->c.guest_errors;

    memset(&r, 0xa5, sizeof(r));
    g_assert_false(pvrdma_ring_init(&f->c, &r, "t", pages, npages, first_page,
                                    state_off, nelems, elem_size));
    g_assert_null(r.page);
    g_assert_cmpuint(f->c.guest_errors, ==, errs + 1);
    g_assert_cmpuint(fh_outstanding(&f->h), ==, 0);
    g_assert_cmpuint(f->h.bad_unmaps, ==, 0);
    pvrdma_ring_free(&f->c, &r);     /* harmless on a failed ring */
}

static void test_ring_init_refused(void)
{
    Fx f;
    uint64_t pages[8], p;

    fx_init(&f);
    p = fh_alloc(&f.h, 8);
    for (int i = 0; i < 8; i++) {
        pages[i] = p + i * FH_PAGE;
    }
    /* zero counts, sizes that are not powers of two */
    ring_refused(&f, pages, 2, 1, 0, 0, 64);
    ring_refused(&f, pages, 2, 1, 0, 64, 48);
    ring_refused(&f, pages, 2, 1, 0, 64, 0);
    /*
     * The Linux driver sizes its async ring as (4 - 1) * 4096 / 8 = 1536
     * entries; its macros then cycle indices through [0, 1024) over 512
     * distinct slots.  The device must accept and follow that.
     */
    {
        PvrdmaRing r;

        g_assert_true(pvrdma_ring_init(&f.c, &r, "async", pages, 4, 1, 8,
                                       1536, 8));
        g_assert_cmpuint(r.period, ==, 1024);
        g_assert_cmpuint(r.slots, ==, 512);
        for (uint32_t i = 0; i < 1024; i++) {
            uint8_t *e = pvrdma_ring_elem(&r, i);
            bool inside = false;

            for (int pg = 1; pg < 4; pg++) {
                inside |= e >= (uint8_t *)r.page[pg] &&
                          e < (uint8_t *)r.page[pg] + 4096;
            }
            g_assert_true(inside);
            g_assert_true(e == pvrdma_ring_elem(&r, i & 511));
        }
        pvrdma_ring_free(&f.c, &r);
        g_assert_true(pvrdma_ring_init(&f.c, &r, "cqn", pages, 4, 1, 8,
                                       3072, 4));
        g_assert_cmpuint(r.period, ==, 2048);
        g_assert_cmpuint(r.slots, ==, 1024);
        pvrdma_ring_free(&f.c, &r);
        g_assert_cmpuint(fh_outstanding(&f.h), ==, 0);
    }
    /* element larger than a page */
    ring_refused(&f, pages, 4, 1, 0, 1, 8192);
    /* first page beyond the pages */
    ring_refused(&f, pages, 2, 2, 0, 1, 64);
    ring_refused(&f, pages, 0, 0, 0, 1, 64);
    /* ring state not inside page 0 */
    ring_refused(&f, pages, 2, 1, FH_PAGE - 4, 1, 64);
    ring_refused(&f, pages, 2, 1, UINT32_MAX - 4, 1, 64);
    /* elements do not fit the pages */
    ring_refused(&f, pages, 2, 1, 0, 128, 64);          /* 8 KiB in 1 page */
    ring_refused(&f, pages, 8, 1, 0, 1u << 31, 4096);
    ring_refused(&f, pages, 8, 7, 0, 2, 4096);

    /* page not aligned: the pages before it were mapped, must be undone */
    {
        uint64_t bad[4] = { pages[0], pages[1], pages[2] + 8, pages[3] };

        ring_refused(&f, bad, 4, 1, 0, 64, 64);
    }
    /* page outside RAM (below and above) */
    {
        uint64_t bad[4] = { pages[0], pages[1], 0, pages[3] };

        ring_refused(&f, bad, 4, 1, 0, 64, 64);
        bad[2] = FH_RAM_BASE + FH_RAM_SIZE;
        ring_refused(&f, bad, 4, 1, 0, 64, 64);
        bad[3] = 0xfffffffffffff000ull;
        bad[2] = pages[2];
        ring_refused(&f, bad, 4, 1, 0, 64, 64);
    }
    /* page in an MMIO hole, and a page the hole cuts short */
    {
        uint64_t bad[4] = { pages[0], pages[1], pages[2], pages[3] };

        f.h.hole_start = pages[3];
        f.h.hole_len = FH_PAGE;
        ring_refused(&f, bad, 4, 1, 0, 64, 64);
        f.h.hole_start = pages[2] + 2048;   /* map of page 2 comes back short */
        ring_refused(&f, bad, 4, 1, 0, 64, 64);
        f.h.hole_len = 0;
    }

    /* and a good ring for contrast, freed without leaks */
    {
        PvrdmaRing r;

        g_assert_true(pvrdma_ring_init(&f.c, &r, "t", pages, 4, 1, 8, 64, 64));
        g_assert_cmpuint(fh_outstanding(&f.h), ==, 4);
        g_assert_true((uint8_t *)r.state == (uint8_t *)fh_ptr(&f.h, pages[0]) + 8);
        pvrdma_ring_free(&f.c, &r);
        g_assert_cmpuint(fh_outstanding(&f.h), ==, 0);
    }
    fx_fini(&f);
}

static void check_elem(Fx *f, PvrdmaRing *r, const uint64_t *pages,
                       uint32_t idx)
{
    uint64_t off = (uint64_t)(idx & (r->nelems - 1)) * r->elem_size;
    uint32_t pg = r->first_page + off / FH_PAGE;
    uint8_t *e = pvrdma_ring_elem(r, idx);
    uint8_t *page;

    g_assert_nonnull(e);
    if (!e) {
        return;
    }
    g_assert_cmpuint(pg, <, r->npages);
    page = fh_ptr(&f->h, pages[pg]);
    g_assert_true(e >= page && e + r->elem_size <= page + FH_PAGE);
    g_assert_true(e == page + off % FH_PAGE);
}

static void test_ring_elem_bounds(void)
{
    static const struct { uint32_t npages, first, nelems, esize; } geo[] = {
        { 2, 1, 64, 64 },       /* CQ-like: one page of 64-byte CQEs */
        { 2, 1, 1, 64 },
        { 3, 1, 2, 4096 },
        { 17, 1, 4096, 16 },
        { 5, 2, 32, 256 },      /* ring that starts at page 2 (an RQ) */
        { 2, 1, 4096, 1 },
        { 9, 1, 8, 4096 },
        { 2, 0, 1, 1 },
    };
    static const uint32_t special[] = {
        0, 1, 2, 63, 64, 65, 127, 128, 4095, 4096, 8191, 8192, 65535, 65536,
        0x7fffffff, 0x80000000, 0x80000001, 0xfffffffe, 0xffffffff,
    };
    Fx f;

    fx_init(&f);
    for (unsigned gi = 0; gi < G_N_ELEMENTS(geo); gi++) {
        uint64_t pages[32];
        PvrdmaRing r;
        uint32_t n = geo[gi].nelems;

        for (uint32_t i = 0; i < geo[gi].npages; i++) {
            pages[i] = fh_alloc(&f.h, 1);
            fh_skip(&f.h, 1);       /* scattered pages */
        }
        g_assert_true(pvrdma_ring_init(&f.c, &r, "t", pages, geo[gi].npages,
                                       geo[gi].first, 0, n, geo[gi].esize));
        for (unsigned i = 0; i < G_N_ELEMENTS(special); i++) {
            check_elem(&f, &r, pages, special[i]);
        }
        for (uint32_t d = 0; d < 4; d++) {
            check_elem(&f, &r, pages, n - 1 + d);
            check_elem(&f, &r, pages, 2 * n - 1 + d);
            check_elem(&f, &r, pages, 0u - 1 - d);
        }
        for (int i = 0; i < 20000; i++) {
            check_elem(&f, &r, pages, g_test_rand_int());
        }
        pvrdma_ring_free(&f.c, &r);
        g_assert_cmpuint(fh_outstanding(&f.h), ==, 0);
    }
    fx_fini(&f);
}

static void test_ring_producer(void)
{
    Fx f;
    uint64_t pages[2];
    PvrdmaRing r;
    struct pvrdma_ring *st;
    uint32_t prod;
    bool bad;

    fx_init(&f);
    pages[0] = fh_alloc(&f.h, 1);
    pages[1] = fh_alloc(&f.h, 1);
    g_assert_true(pvrdma_ring_init(&f.c, &r, "t", pages, 2, 1, 8, 4, 64));
    st = fh_ptr(&f.h, pages[0] + 8);
    /* device produces 4 entries into an empty ring, then it is full */
    for (int i = 0; i < 4; i++) {
        void *s = pvrdma_ring_prod_slot(&r, &bad);

        g_assert_nonnull(s);
        g_assert_false(bad);
        g_assert_true(s == pvrdma_ring_elem(&r, i));
        pvrdma_ring_prod_push(&r);
        g_assert_cmpuint(st->prod_tail, ==, i + 1);
    }
    g_assert_null(pvrdma_ring_prod_slot(&r, &bad));
    g_assert_false(bad);
    /* guest consumes 3, device wraps into the second generation */
    st->cons_head = 3;
    for (int i = 0; i < 3; i++) {
        g_assert_nonnull(pvrdma_ring_prod_slot(&r, &bad));
        pvrdma_ring_prod_push(&r);
    }
    g_assert_cmpuint(st->prod_tail, ==, 7);
    g_assert_null(pvrdma_ring_prod_slot(&r, &bad));
    st->cons_head = 7;
    g_assert_nonnull(pvrdma_ring_prod_slot(&r, &bad));
    pvrdma_ring_prod_push(&r);
    g_assert_cmpuint(st->prod_tail, ==, 0);     /* 8 mod 2N */
    /* invalid guest consumer index */
    st->cons_head = 8;
    g_assert_null(pvrdma_ring_prod_slot(&r, &bad));
    g_assert_true(bad);
    /* guest producer index checks: the device consumes, priv is its index */
    r.priv = 4;
    st->prod_tail = 7;
    g_assert_true(pvrdma_ring_guest_prod(&r, &prod));
    g_assert_cmpuint(prod, ==, 7);
    r.priv = 2;                 /* 7 is 5 ahead of 2: more than N (4) */
    g_assert_false(pvrdma_ring_guest_prod(&r, &prod));
    r.priv = 3;                 /* 4 ahead: a full ring */
    g_assert_true(pvrdma_ring_guest_prod(&r, &prod));
    st->prod_tail = 8;
    g_assert_false(pvrdma_ring_guest_prod(&r, &prod));
    st->prod_tail = 0xffffffff;
    g_assert_false(pvrdma_ring_guest_prod(&r, &prod));
    pvrdma_ring_free(&f.c, &r);
    fx_fini(&f);
}

/* ------------------------------------------------------------------ */
/* Handle tables                                                       */

static void test_table(void)
{
    PvrdmaTable t;
    int objs[16];
    uint32_t h;

    pvrdma_table_init(&t, 8, 2);
    /* handles in [first, size), in order at first */
    for (uint32_t i = 0; i < 6; i++) {
        h = pvrdma_table_alloc(&t, &objs[i]);
        g_assert_cmpuint(h, ==, 2 + i);
        g_assert_true(pvrdma_table_get(&t, h) == &objs[i]);
    }
    g_assert_cmpuint(t.used, ==, 6);
    /* full */
    g_assert_cmpuint(pvrdma_table_alloc(&t, &objs[6]), ==, UINT32_MAX);
    g_assert_cmpuint(t.used, ==, 6);
    /* out of range and free handles */
    g_assert_null(pvrdma_table_get(&t, 0));
    g_assert_null(pvrdma_table_get(&t, 1));
    g_assert_null(pvrdma_table_get(&t, 8));
    g_assert_null(pvrdma_table_get(&t, 9));
    g_assert_null(pvrdma_table_get(&t, UINT32_MAX));
    g_assert_null(pvrdma_table_get(&t, 0x80000002u));
    pvrdma_table_remove(&t, 4);
    g_assert_null(pvrdma_table_get(&t, 4));
    g_assert_cmpuint(t.used, ==, 5);
    /* removing out-of-range or free handles changes nothing */
    pvrdma_table_remove(&t, 4);
    pvrdma_table_remove(&t, 0);
    pvrdma_table_remove(&t, 100);
    g_assert_cmpuint(t.used, ==, 5);
    /* only one free slot: reused */
    g_assert_cmpuint(pvrdma_table_alloc(&t, &objs[7]), ==, 4);

    /* next-fit: a freed handle is not reused while others are free */
    pvrdma_table_remove(&t, 3);
    pvrdma_table_remove(&t, 6);
    h = pvrdma_table_alloc(&t, &objs[8]);
    g_assert_cmpuint(h, ==, 6);             /* cursor was at 5 */
    pvrdma_table_remove(&t, 6);
    h = pvrdma_table_alloc(&t, &objs[9]);
    g_assert_cmpuint(h, ==, 3);             /* 6 just freed: 3 comes first */
    h = pvrdma_table_alloc(&t, &objs[10]);
    g_assert_cmpuint(h, ==, 6);
    g_assert_cmpuint(pvrdma_table_alloc(&t, &objs[11]), ==, UINT32_MAX);

    /* a reserved handle (the GSI QP's): inserted by number, never given */
    g_assert_false(pvrdma_table_insert(&t, 1, &objs[12]));
    pvrdma_table_reserve(&t, 1);
    g_assert_null(pvrdma_table_get(&t, 1));
    g_assert_true(pvrdma_table_insert(&t, 1, &objs[12]));
    g_assert_false(pvrdma_table_insert(&t, 1, &objs[13]));
    g_assert_false(pvrdma_table_insert(&t, 0, &objs[13]));
    g_assert_true(pvrdma_table_get(&t, 1) == &objs[12]);
    pvrdma_table_remove(&t, 6);
    g_assert_cmpuint(pvrdma_table_alloc(&t, &objs[13]), ==, 6);
    pvrdma_table_remove(&t, 1);
    g_assert_null(pvrdma_table_get(&t, 1));
    pvrdma_table_destroy(&t);

    /* longer run: a handle freed right after allocation is skipped */
    pvrdma_table_init(&t, 64, 1);
    for (uint32_t i = 0; i < 200; i++) {
        uint32_t a = pvrdma_table_alloc(&t, &objs[0]);
        uint32_t b;

        g_assert_cmpuint(a, >=, 1);
        g_assert_cmpuint(a, <, 64);
        pvrdma_table_remove(&t, a);
        b = pvrdma_table_alloc(&t, &objs[1]);
        g_assert_cmpuint(b, !=, a);
        g_assert_cmpuint(b, >=, 1);
        g_assert_cmpuint(b, <, 64);
        pvrdma_table_remove(&t, b);
    }
    g_assert_cmpuint(t.used, ==, 0);
    pvrdma_table_destroy(&t);

    /* degenerate tables never hand out a handle */
    pvrdma_table_init(&t, 1, 1);
    g_assert_cmpuint(pvrdma_table_alloc(&t, &objs[0]), ==, UINT32_MAX);
    g_assert_null(pvrdma_table_get(&t, 0));
    pvrdma_table_destroy(&t);
    pvrdma_table_init(&t, 4, 9);
    g_assert_cmpuint(pvrdma_table_alloc(&t, &objs[0]), ==, UINT32_MAX);
    pvrdma_table_destroy(&t);
}

/* ------------------------------------------------------------------ */
/* Page directories                                                    */

static void pdir_good(Fx *f, uint32_t n)
{
    uint64_t *want = g_new(uint64_t, n), *got = NULL, dir;

    for (uint32_t i = 0; i < n; i++) {
        want[i] = 0x123456789000ull + (uint64_t)i * 0x3000 + (i % 7);
    }
    dir = fh_make_pdir(&f->h, want, n);
    g_assert_true(pvrdma_pdir_read(&f->c, dir, n, &got));
    g_assert_nonnull(got);
    if (got) {
        g_assert_cmpmem(got, n * 8, want, n * 8);
    }
    g_free(got);
    g_free(want);
}

static void pdir_bad(Fx *f, uint64_t dir, uint32_t n)
{
    uint64_t *got = (uint64_t *)(uintptr_t)1;
    uint64_t errs = f->c.guest_errors;

    g_assert_false(pvrdma_pdir_read(&f->c, dir, n, &got));
    g_assert_null(got);
    g_assert_cmpuint(f->c.guest_errors, ==, errs + 1);
}

static void test_pdir(void)
{
    Fx f;
    uint64_t pages[1024], dir, *d;

    fx_init(&f);
    pdir_good(&f, 1);
    pdir_good(&f, 511);
    pdir_good(&f, 512);
    pdir_good(&f, 513);
    pdir_good(&f, 1024);
    pdir_good(&f, 1025);
    pdir_good(&f, PVRDMA_PAGE_DIR_MAX_PAGES);

    for (int i = 0; i < 1024; i++) {
        pages[i] = FH_RAM_BASE + i * FH_PAGE;
    }
    dir = fh_make_pdir(&f.h, pages, 1024);
    /* page counts */
    pdir_bad(&f, dir, 0);
    pdir_bad(&f, dir, PVRDMA_PAGE_DIR_MAX_PAGES + 1);
    pdir_bad(&f, dir, UINT32_MAX);
    /* unaligned directory */
    pdir_bad(&f, dir + 8, 1);
    pdir_bad(&f, dir + 1, 1);
    /* directory outside RAM / in the hole */
    pdir_bad(&f, 0, 1);
    pdir_bad(&f, FH_RAM_BASE + FH_RAM_SIZE, 1);
    pdir_bad(&f, 0xfffffffffffff000ull, 1);
    f.h.hole_start = dir;
    f.h.hole_len = FH_PAGE;
    pdir_bad(&f, dir, 1);
    f.h.hole_len = 0;
    /* table unaligned, outside RAM; second table bad only matters at 513 */
    d = fh_ptr(&f.h, dir);
    d[1] += 8;
    pdir_bad(&f, dir, 1024);
    {
        uint64_t *got = NULL;

        g_assert_true(pvrdma_pdir_read(&f.c, dir, 512, &got));
        g_free(got);
    }
    d[1] -= 8;
    d[0] = FH_RAM_BASE + FH_RAM_SIZE;
    pdir_bad(&f, dir, 1);
    d[0] = 0;
    pdir_bad(&f, dir, 1);
    d[0] = FH_RAM_BASE + FH_RAM_SIZE - FH_PAGE;  /* last page: still RAM */
    {
        uint64_t *got = NULL;

        g_assert_true(pvrdma_pdir_read(&f.c, dir, 512, &got));
        g_free(got);
    }
    /* table in the MMIO hole */
    f.h.hole_start = d[1];
    f.h.hole_len = FH_PAGE;
    pdir_bad(&f, dir, 600);
    f.h.hole_len = 0;
    fx_fini(&f);
}

/* ------------------------------------------------------------------ */
/* Guest memory maps and scatter lists                                 */

static void test_map_pages(void)
{
    Fx f;
    PvrdmaMap m;
    uint64_t pages[16], base;
    uint8_t *p;

    fx_init(&f);
    /* contiguous pages: one chunk */
    base = fh_alloc(&f.h, 8);
    for (int i = 0; i < 8; i++) {
        pages[i] = base + i * FH_PAGE;
    }
    g_assert_true(pvrdma_map_pages(&f.c, &m, pages, 8, FH_PAGE));
    g_assert_cmpuint(m.nchunks, ==, 1);
    g_assert_cmpuint(m.len, ==, 8 * FH_PAGE);
    g_assert_true(m.chunk[0].host == fh_ptr(&f.h, base));
    g_assert_cmpuint(fh_outstanding(&f.h), ==, 1);
    /* map_ptr inside, at the end, past the end */
    g_assert_true(pvrdma_map_ptr(&m, 0, 8 * FH_PAGE) == fh_ptr(&f.h, base));
    g_assert_true(pvrdma_map_ptr(&m, 5000, 100) ==
                  (uint8_t *)fh_ptr(&f.h, base) + 5000);
    g_assert_null(pvrdma_map_ptr(&m, 8 * FH_PAGE - 4, 8));
    g_assert_null(pvrdma_map_ptr(&m, 8 * FH_PAGE, 1));
    pvrdma_map_release(&f.c, &m);
    g_assert_cmpuint(fh_outstanding(&f.h), ==, 0);

    /* scattered: p0 p1 | p3 | p6 p7 p8 | p2 (backwards) -> 4 chunks */
    base = fh_alloc(&f.h, 10);
    {
        static const int order[] = { 0, 1, 3, 6, 7, 8, 2 };
        static const uint64_t coff[] = { 0, 2, 3, 6 };
        static const uint64_t clen[] = { 2, 1, 3, 1 };
        static const int cfirst[] = { 0, 3, 6, 2 };
        PvrdmaSg sg = { 0 };

        for (int i = 0; i < 7; i++) {
            pages[i] = base + order[i] * FH_PAGE;
        }
        g_assert_true(pvrdma_map_pages(&f.c, &m, pages, 7, FH_PAGE));
        g_assert_cmpuint(m.nchunks, ==, 4);
        g_assert_cmpuint(m.len, ==, 7 * FH_PAGE);
        for (int i = 0; i < 4 && i < (int)m.nchunks; i++) {
            g_assert_cmpuint(m.chunk[i].off, ==, coff[i] * FH_PAGE);
            g_assert_cmpuint(m.chunk[i].len, ==, clen[i] * FH_PAGE);
            g_assert_true(m.chunk[i].host ==
                          fh_ptr(&f.h, base + cfirst[i] * FH_PAGE));
        }
        g_assert_cmpuint(fh_outstanding(&f.h), ==, 4);
        /* offsets: page k of the region is guest page order[k] */
        for (uint64_t off = 0; off < 7 * FH_PAGE; off += 1000) {
            p = pvrdma_map_ptr(&m, off, 1);
            g_assert_true(p == (uint8_t *)fh_ptr(&f.h, base +
                          order[off / FH_PAGE] * FH_PAGE) + off % FH_PAGE);
        }
        /* a range across two chunks has no single pointer */
        g_assert_null(pvrdma_map_ptr(&m, 2 * FH_PAGE - 1, 2));
        g_assert_nonnull(pvrdma_map_ptr(&m, 2 * FH_PAGE - 1, 1));
        g_assert_nonnull(pvrdma_map_ptr(&m, 3 * FH_PAGE, 3 * FH_PAGE));

        /* map_to_sg splits at chunk boundaries */
        g_assert_true(pvrdma_map_to_sg(&m, FH_PAGE + 100, 5 * FH_PAGE, &sg));
        g_assert_cmpuint(sg.n, ==, 4);
        g_assert_cmpuint(sg.len, ==, 5 * FH_PAGE);
        if (sg.n == 4) {
            g_assert_true(sg.iov[0].host ==
                          (uint8_t *)fh_ptr(&f.h, base + FH_PAGE) + 100);
            g_assert_cmpuint(sg.iov[0].len, ==, FH_PAGE - 100);
            g_assert_true(sg.iov[1].host == fh_ptr(&f.h, base + 3 * FH_PAGE));
            g_assert_cmpuint(sg.iov[1].len, ==, FH_PAGE);
            g_assert_true(sg.iov[2].host == fh_ptr(&f.h, base + 6 * FH_PAGE));
            g_assert_cmpuint(sg.iov[2].len, ==, 3 * FH_PAGE);
            g_assert_true(sg.iov[3].host == fh_ptr(&f.h, base + 2 * FH_PAGE));
            g_assert_cmpuint(sg.iov[3].len, ==, 100);
            g_assert_false(sg.iov[0].mapped);
        }
        /* zero length, whole region, out of range */
        g_assert_true(pvrdma_map_to_sg(&m, 0, 0, &sg));
        g_assert_cmpuint(sg.n, ==, 4);
        g_assert_false(pvrdma_map_to_sg(&m, 7 * FH_PAGE, 1, &sg));
        g_assert_false(pvrdma_map_to_sg(&m, 1, 7 * FH_PAGE, &sg));
        g_assert_false(pvrdma_map_to_sg(&m, 100, UINT64_MAX, &sg));
        g_assert_false(pvrdma_map_to_sg(&m, UINT64_MAX, 2, &sg));
        pvrdma_sg_release(&f.c, &sg);
        g_assert_cmpuint(fh_outstanding(&f.h), ==, 4);
        pvrdma_map_release(&f.c, &m);
        g_assert_cmpuint(fh_outstanding(&f.h), ==, 0);
    }

    /* RAM blocks: a contiguous run is split where the host's map stops */
    f.h.block_size = 64 * 1024;
    base = fh_alloc(&f.h, 40);
    base = (base + 0xffff) & ~0xffffull;    /* block aligned */
    base -= 2 * FH_PAGE;                    /* ... and 2 pages before one */
    for (int i = 0; i < 16; i++) {
        pages[i] = base + i * FH_PAGE;
    }
    g_assert_true(pvrdma_map_pages(&f.c, &m, pages, 16, FH_PAGE));
    g_assert_cmpuint(m.nchunks, ==, 2);
    g_assert_cmpuint(m.len, ==, 16 * FH_PAGE);
    g_assert_cmpuint(m.chunk[0].len, ==, 2 * FH_PAGE);
    g_assert_cmpuint(m.chunk[1].off, ==, 2 * FH_PAGE);
    pvrdma_map_release(&f.c, &m);
    f.h.block_size = 0;

    /* failures release what was mapped */
    base = fh_alloc(&f.h, 8);
    for (int i = 0; i < 8; i++) {
        pages[i] = base + i * FH_PAGE;
    }
    pages[5] = FH_RAM_BASE + FH_RAM_SIZE;
    g_assert_false(pvrdma_map_pages(&f.c, &m, pages, 8, FH_PAGE));
    g_assert_cmpuint(fh_outstanding(&f.h), ==, 0);
    g_assert_cmpuint(m.nchunks, ==, 0);
    pages[5] = base + 5 * FH_PAGE + 16;     /* unaligned */
    g_assert_false(pvrdma_map_pages(&f.c, &m, pages, 8, FH_PAGE));
    g_assert_cmpuint(fh_outstanding(&f.h), ==, 0);
    pages[5] = base + 5 * FH_PAGE;
    f.h.hole_start = base + 6 * FH_PAGE;    /* run cut by an MMIO hole */
    f.h.hole_len = FH_PAGE;
    g_assert_false(pvrdma_map_pages(&f.c, &m, pages, 8, FH_PAGE));
    g_assert_cmpuint(fh_outstanding(&f.h), ==, 0);
    f.h.hole_len = 0;
    g_assert_cmpuint(f.h.bad_unmaps, ==, 0);

    /* huge pages (FRMR page_shift 21) */
    {
        uint64_t hp = (f.h.next_free + (2u << 20) - 1) & ~((2ull << 20) - 1);
        uint64_t hpages[2] = { hp, hp + (2u << 20) };

        g_assert_true(pvrdma_map_pages(&f.c, &m, hpages, 2, 2u << 20));
        g_assert_cmpuint(m.nchunks, ==, 1);
        g_assert_cmpuint(m.len, ==, 4u << 20);
        pvrdma_map_release(&f.c, &m);
        hpages[1] = hp + 4096;      /* not aligned to 2 MiB */
        g_assert_false(pvrdma_map_pages(&f.c, &m, hpages, 2, 2u << 20));
        g_assert_cmpuint(fh_outstanding(&f.h), ==, 0);
    }
    fx_fini(&f);
}

/*
 * pvrdma_map_ptr checks "off + len > chunk end" in 64-bit arithmetic that
 * can wrap: a huge len yields a pointer instead of NULL.
 */
static void test_map_ptr_overflow(void)
{
    Fx f;
    PvrdmaMap m;
    uint64_t pages[2];

    fx_init(&f);
    pages[0] = fh_alloc(&f.h, 2);
    pages[1] = pages[0] + FH_PAGE;
    g_assert_true(pvrdma_map_pages(&f.c, &m, pages, 2, FH_PAGE));
    g_assert_null(pvrdma_map_ptr(&m, 0, UINT64_MAX));
    /* 16 + (2^64 - 8) wraps to 8 < 8192 */
    g_assert_null(pvrdma_map_ptr(&m, 16, UINT64_MAX - 7));
    pvrdma_map_release(&f.c, &m);
    fx_fini(&f);
}

/* Build a scatter list over 'npieces' random slices of a guest buffer. */
static void random_sg_map(Fx *f, PvrdmaMap *m, uint32_t npages)
{
    uint64_t *pages = g_new(uint64_t, npages);

    for (uint32_t i = 0; i < npages; i++) {
        if (g_test_rand_int_range(0, 3) == 0) {
            fh_skip(&f->h, 1);
        }
        pages[i] = fh_alloc(&f->h, 1);
    }
    g_assert_true(pvrdma_map_pages(&f->c, m, pages, npages, FH_PAGE));
    g_free(pages);
}

static void map_linear(const PvrdmaMap *m, uint8_t *out)
{
    for (uint32_t i = 0; i < m->nchunks; i++) {
        memcpy(out + m->chunk[i].off, m->chunk[i].host, m->chunk[i].len);
    }
}

static void test_sg_copy(void)
{
    Fx f;
    PvrdmaMap ms, md;
    const uint32_t np = 12;
    const uint64_t size = np * FH_PAGE;
    uint8_t *ref_src = g_malloc(size), *ref_dst = g_malloc(size);
    uint8_t *got = g_malloc(size);
    uint32_t x = g_test_rand_int() | 1;

    fx_init(&f);
    random_sg_map(&f, &ms, np);
    random_sg_map(&f, &md, np);
    for (int round = 0; round < 200; round++) {
        PvrdmaSg src = { 0 }, dst = { 0 };
        uint64_t soff = g_test_rand_int_range(0, size - 1);
        uint64_t slen = g_test_rand_int_range(1, size - soff + 1);
        uint64_t doff = g_test_rand_int_range(0, size - 1);
        uint64_t dlen = g_test_rand_int_range(1, size - doff + 1);
        /* offsets inside the scatter lists too */
        uint64_t sin = g_test_rand_int_range(0, slen);
        uint64_t din = g_test_rand_int_range(0, dlen);
        uint64_t len = g_test_rand_int_range(0, 3 * FH_PAGE);
        uint64_t want, done;

        for (uint32_t i = 0; i < ms.nchunks; i++) {
            for (uint64_t j = 0; j < ms.chunk[i].len; j++) {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                ms.chunk[i].host[j] = x;
            }
        }
        for (uint32_t i = 0; i < md.nchunks; i++) {
            memset(md.chunk[i].host, 0x5a, md.chunk[i].len);
        }
        map_linear(&ms, ref_src);
        map_linear(&md, ref_dst);
        g_assert_true(pvrdma_map_to_sg(&ms, soff, slen, &src));
        g_assert_true(pvrdma_map_to_sg(&md, doff, dlen, &dst));
        want = MIN(len, MIN(slen - sin, dlen - din));
        done = pvrdma_sg_copy(&dst, din, &src, sin, len);
        g_assert_cmpuint(done, ==, want);
        memmove(ref_dst + doff + din, ref_src + soff + sin, want);
        map_linear(&md, got);
        g_assert_cmpmem(got, size, ref_dst, size);
        pvrdma_sg_release(&f.c, &src);
        pvrdma_sg_release(&f.c, &dst);
    }
    /* offsets beyond the lists copy nothing */
    {
        PvrdmaSg src = { 0 }, dst = { 0 };

        g_assert_true(pvrdma_map_to_sg(&ms, 0, 100, &src));
        g_assert_true(pvrdma_map_to_sg(&md, 0, 100, &dst));
        g_assert_cmpuint(pvrdma_sg_copy(&dst, 100, &src, 0, 10), ==, 0);
        g_assert_cmpuint(pvrdma_sg_copy(&dst, 0, &src, 200, 10), ==, 0);
        g_assert_cmpuint(pvrdma_sg_copy(&dst, 0, &src, 0, 0), ==, 0);
        pvrdma_sg_release(&f.c, &src);
        pvrdma_sg_release(&f.c, &dst);
    }
    pvrdma_map_release(&f.c, &ms);
    pvrdma_map_release(&f.c, &md);
    g_free(ref_src);
    g_free(ref_dst);
    g_free(got);
    fx_fini(&f);
}

static void test_gpa_to_sg(void)
{
    Fx f;
    PvrdmaSg sg = { 0 };
    uint64_t base;

    fx_init(&f);
    f.h.block_size = 64 * 1024;
    base = fh_alloc(&f.h, 64);
    base = (base + 0x10000) & ~0xffffull;
    g_assert_true(pvrdma_gpa_to_sg(&f.c, base - 10, 20, true, &sg));
    g_assert_cmpuint(sg.n, ==, 2);              /* split at the block */
    g_assert_cmpuint(sg.len, ==, 20);
    if (sg.n == 2) {
        g_assert_true(sg.iov[0].mapped && sg.iov[0].is_write);
        g_assert_cmpuint(sg.iov[0].len, ==, 10);
    }
    g_assert_cmpuint(fh_outstanding(&f.h), ==, 2);
    /* beyond RAM: refused, but what was mapped stays on the list */
    g_assert_false(pvrdma_gpa_to_sg(&f.c, FH_RAM_BASE + FH_RAM_SIZE - 8, 16,
                                    false, &sg));
    pvrdma_sg_release(&f.c, &sg);
    g_assert_cmpuint(fh_outstanding(&f.h), ==, 0);
    g_assert_cmpuint(f.h.bad_unmaps, ==, 0);
    f.h.block_size = 0;
    fx_fini(&f);
}

static void test_limits(void)
{
    PvrdmaLimits l;

    pvrdma_limits_default(&l);
    g_assert_null(pvrdma_limits_check(&l));
    l.max_qp_wr = 1000;
    g_assert_nonnull(pvrdma_limits_check(&l));
    pvrdma_limits_default(&l);
    l.max_sge = PVRDMA_HARD_MAX_SGE + 1;
    g_assert_nonnull(pvrdma_limits_check(&l));
    pvrdma_limits_default(&l);
    l.max_uar = 3;
    g_assert_nonnull(pvrdma_limits_check(&l));
    pvrdma_limits_default(&l);
    l.max_srq = 1;
    g_assert_nonnull(pvrdma_limits_check(&l));
    l.max_srq = 0;
    g_assert_null(pvrdma_limits_check(&l));
}

int main(int argc, char **argv)
{
    fh_test_init(&argc, &argv);
    g_test_add_func("/pvrdma/ring/idx-math", test_idx_math);
    g_test_add_func("/pvrdma/ring/init-refused", test_ring_init_refused);
    g_test_add_func("/pvrdma/ring/elem-bounds", test_ring_elem_bounds);
    g_test_add_func("/pvrdma/ring/producer", test_ring_producer);
    g_test_add_func("/pvrdma/table", test_table);
    g_test_add_func("/pvrdma/pdir", test_pdir);
    g_test_add_func("/pvrdma/mem/map-pages", test_map_pages);
    g_test_add_func("/pvrdma/mem/map-ptr-overflow", test_map_ptr_overflow);
    g_test_add_func("/pvrdma/mem/sg-copy", test_sg_copy);
    g_test_add_func("/pvrdma/mem/gpa-to-sg", test_gpa_to_sg);
    g_test_add_func("/pvrdma/limits", test_limits);
    return g_test_run();
}
