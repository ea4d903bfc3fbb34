/*
 * Fake host for the pvrdma core unit tests.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "fake-host.h"

/* The one definition the standalone core needs (pvrdma_port.h). */
unsigned pvrdma_standalone_log_guest_errors;

void fh_test_init(int *argc, char ***argv)
{
    pvrdma_standalone_log_guest_errors = g_getenv("PVRDMA_UNIT_VERBOSE") != NULL;
    g_test_init(argc, argv, NULL);
    /* a failing check fails its test case; the other cases still run */
    g_test_set_nonfatal_assertions();
}

/* Is [gpa, gpa+len) RAM?  Returns the length of RAM from gpa (0: none). */
static uint64_t fh_ram_run(FakeHost *h, uint64_t gpa)
{
    uint64_t end = h->base + h->size;

    if (gpa < h->base || gpa >= end) {
        return 0;
    }
    if (h->hole_len) {
        if (gpa >= h->hole_start && gpa < h->hole_start + h->hole_len) {
            return 0;
        }
        if (gpa < h->hole_start) {
            end = h->hole_start;
        }
    }
    return end - gpa;
}

static bool fh_range_ok(FakeHost *h, uint64_t gpa, uint64_t len)
{
    return len == 0 || fh_ram_run(h, gpa) >= len;
}

static bool fh_dma_read(void *opaque, uint64_t gpa, void *buf, size_t len)
{
    FakeHost *h = opaque;

    if (!fh_range_ok(h, gpa, len)) {
        return false;
    }
    memcpy(buf, h->ram + (gpa - h->base), len);
    return true;
}

static bool fh_dma_write(void *opaque, uint64_t gpa, const void *buf,
                         size_t len)
{
    FakeHost *h = opaque;

    if (!fh_range_ok(h, gpa, len)) {
        return false;
    }
    memcpy(h->ram + (gpa - h->base), buf, len);
    return true;
}

static void *fh_map(void *opaque, uint64_t gpa, uint64_t *len, bool is_write)
{
    FakeHost *h = opaque;
    uint64_t run = fh_ram_run(h, gpa);
    FhMapping m;

    h->map_calls++;
    if (!run || !*len) {
        h->refused_maps++;
        return NULL;
    }
    if (h->block_size) {
        uint64_t off = (gpa - h->base) % h->block_size;

        run = MIN(run, h->block_size - off);
    }
    *len = MIN(*len, run);
    m.host = h->ram + (gpa - h->base);
    m.len = *len;
    m.is_write = is_write;
    g_array_append_val(h->maps, m);
    return m.host;
}

static void fh_unmap(void *opaque, void *host, uint64_t len, bool is_write)
{
    FakeHost *h = opaque;

    h->unmap_calls++;
    for (guint i = 0; i < h->maps->len; i++) {
        FhMapping *m = &g_array_index(h->maps, FhMapping, i);

        if (m->host == host && m->len == len) {
            g_array_remove_index_fast(h->maps, i);
            return;
        }
    }
    h->bad_unmaps++;
}

static void fh_notify(void *opaque, unsigned vector)
{
    FakeHost *h = opaque;

    g_array_append_val(h->irqs, vector);
}

static void fh_kick(void *opaque, unsigned delay_ms)
{
    FakeHost *h = opaque;

    h->kicks++;
    h->last_kick_delay = delay_ms;
}

static void fh_get_mac(void *opaque, uint8_t mac[6])
{
    FakeHost *h = opaque;

    memcpy(mac, h->mac, 6);
}

static uint64_t fh_uar_base(void *opaque)
{
    return FH_UAR_BASE;
}

static int64_t fh_now_ms(void *opaque)
{
    FakeHost *h = opaque;

    return h->now;
}

const PvrdmaHostOps fh_ops = {
    .dma_read = fh_dma_read,
    .dma_write = fh_dma_write,
    .map = fh_map,
    .unmap = fh_unmap,
    .notify = fh_notify,
    .kick = fh_kick,
    .get_mac = fh_get_mac,
    .uar_base = fh_uar_base,
    .now_ms = fh_now_ms,
};

void fh_init(FakeHost *h)
{
    fh_init_size(h, FH_RAM_SIZE);
}

void fh_init_size(FakeHost *h, uint64_t size)
{
    static const uint8_t mac[6] = { 0x00, 0x50, 0x56, 0xaa, 0xbb, 0xcc };

    memset(h, 0, sizeof(*h));
    h->base = FH_RAM_BASE;
    h->size = size;
    h->ram = g_malloc0(h->size);
    h->next_free = h->base;
    h->maps = g_array_new(FALSE, FALSE, sizeof(FhMapping));
    h->irqs = g_array_new(FALSE, FALSE, sizeof(unsigned));
    memcpy(h->mac, mac, 6);
    h->now = 1000;
}

void fh_fini(FakeHost *h)
{
    g_free(h->ram);
    g_array_free(h->maps, TRUE);
    g_array_free(h->irqs, TRUE);
    memset(h, 0, sizeof(*h));
}

uint64_t fh_alloc(FakeHost *h, uint32_t n)
{
    uint64_t gpa = h->next_free;

    g_assert_cmpuint(gpa + (uint64_t)n * FH_PAGE, <=, h->base + h->size);
    h->next_free += (uint64_t)n * FH_PAGE;
    memset(h->ram + (gpa - h->base), 0, (uint64_t)n * FH_PAGE);
    return gpa;
}

void fh_skip(FakeHost *h, uint32_t n)
{
    h->next_free += (uint64_t)n * FH_PAGE;
}

void *fh_ptr(FakeHost *h, uint64_t gpa)
{
    g_assert_cmpuint(gpa, >=, h->base);
    g_assert_cmpuint(gpa, <, h->base + h->size);
    return h->ram + (gpa - h->base);
}

unsigned fh_outstanding(const FakeHost *h)
{
    return h->maps->len;
}

unsigned fh_irq_count(const FakeHost *h, unsigned v)
{
    unsigned n = 0;

    for (guint i = 0; i < h->irqs->len; i++) {
        n += g_array_index(h->irqs, unsigned, i) == v;
    }
    return n;
}

uint64_t fh_make_pdir(FakeHost *h, const uint64_t *pages, uint32_t n)
{
    uint32_t ntables = (n + PVRDMA_PDIR_ENTRIES - 1) / PVRDMA_PDIR_ENTRIES;
    uint64_t dir = fh_alloc(h, 1);
    uint64_t *d = fh_ptr(h, dir);

    for (uint32_t t = 0; t < ntables; t++) {
        uint64_t tbl = fh_alloc(h, 1);
        uint64_t *p = fh_ptr(h, tbl);

        d[t] = tbl;
        for (uint32_t i = 0; i < PVRDMA_PDIR_ENTRIES &&
             t * PVRDMA_PDIR_ENTRIES + i < n; i++) {
            p[i] = pages[t * PVRDMA_PDIR_ENTRIES + i];
        }
    }
    return dir;
}
