/*
 * pvrdma: guest memory.  Page directories are read once, guest RAM is
 * mapped once per object (contiguous guest pages in one mapping), and data
 * transfers work on host scatter lists built from those mappings.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hw/rdma/pvrdma_core.h"

bool pvrdma_pdir_read(PvrdmaCore *c, uint64_t pdir_gpa, uint32_t npages,
                      uint64_t **pages_out)
{
    uint64_t *dir, *tbl, *pages;
    uint32_t ntables, t, done = 0;

    *pages_out = NULL;
    if (npages == 0 || npages > PVRDMA_PAGE_DIR_MAX_PAGES) {
        PVRDMA_GUEST_ERR(c, "page directory: bad page count %u", npages);
        return false;
    }
    if (c->restoring) {
        /* a replayed command: the pages come from the migration stream */
        if (!c->restore_pages || c->restore_npages != npages) {
            PVRDMA_GUEST_ERR(c, "migration: %u pages recorded, %u needed",
                             c->restore_pages ? c->restore_npages : 0,
                             npages);
            return false;
        }
        *pages_out = g_memdup2(c->restore_pages, sizeof(uint64_t) * npages);
        c->restore_pages = NULL;    /* one command, one page list */
        return true;
    }
    if (pdir_gpa & (PVRDMA_PAGE_SIZE - 1)) {
        PVRDMA_GUEST_ERR(c, "page directory 0x%" PRIx64 " not page aligned",
                         pdir_gpa);
        return false;
    }
    ntables = (npages + PVRDMA_PDIR_ENTRIES - 1) / PVRDMA_PDIR_ENTRIES;
    dir = g_new(uint64_t, PVRDMA_PDIR_ENTRIES);
    tbl = g_new(uint64_t, PVRDMA_PDIR_ENTRIES);
    pages = g_new(uint64_t, npages);
    if (!c->ops->dma_read(c->opaque, pdir_gpa, dir, PVRDMA_PAGE_SIZE)) {
        PVRDMA_GUEST_ERR(c, "page directory 0x%" PRIx64 " unreadable",
                         pdir_gpa);
        goto fail;
    }
    for (t = 0; t < ntables; t++) {
        uint32_t n = MIN(npages - done, PVRDMA_PDIR_ENTRIES);
        uint64_t tgpa = le64_to_cpu(dir[t]);

        if ((tgpa & (PVRDMA_PAGE_SIZE - 1)) ||
            !c->ops->dma_read(c->opaque, tgpa, tbl, n * sizeof(uint64_t))) {
            PVRDMA_GUEST_ERR(c, "page table %u at 0x%" PRIx64 " unusable",
                             t, tgpa);
            goto fail;
        }
        for (uint32_t i = 0; i < n; i++) {
            pages[done + i] = le64_to_cpu(tbl[i]);
        }
        done += n;
    }
    g_free(dir);
    g_free(tbl);
    *pages_out = pages;
    return true;

fail:
    g_free(dir);
    g_free(tbl);
    g_free(pages);
    return false;
}

static void map_add(PvrdmaMap *m, uint64_t off, uint64_t len, void *host,
                    uint32_t *cap)
{
    if (m->nchunks == *cap) {
        *cap = *cap ? *cap * 2 : 8;
        m->chunk = g_renew(PvrdmaChunk, m->chunk, *cap);
    }
    m->chunk[m->nchunks++] = (PvrdmaChunk) { off, len, host };
}

bool pvrdma_map_pages(PvrdmaCore *c, PvrdmaMap *m, const uint64_t *pages,
                      uint32_t npages, uint64_t page_size)
{
    uint32_t cap = 0, i = 0;
    uint64_t off = 0;

    memset(m, 0, sizeof(*m));
    m->writable = true;
    m->gpa = g_memdup2(pages, sizeof(uint64_t) * npages);
    m->npages = npages;
    m->page_size = page_size;
    while (i < npages) {
        uint64_t gpa = pages[i], run = page_size;
        uint32_t j = i + 1;

        if (gpa & (page_size - 1)) {
            PVRDMA_GUEST_ERR(c, "page %u at 0x%" PRIx64 " not aligned", i, gpa);
            goto fail;
        }
        /* coalesce guest-contiguous pages into one mapping */
        while (j < npages && pages[j] == gpa + run) {
            run += page_size;
            j++;
        }
        while (run) {
            uint64_t len = run;
            void *host = c->ops->map(c->opaque, gpa, &len, true);

            if (!host || !len) {
                if (host) {
                    c->ops->unmap(c->opaque, host, len, true);
                }
                PVRDMA_GUEST_ERR(c, "guest address 0x%" PRIx64 " is not RAM",
                                 gpa);
                goto fail;
            }
            map_add(m, off, len, host, &cap);
            off += len;
            gpa += len;
            run -= len;
        }
        i = j;
    }
    m->len = off;
    return true;

fail:
    pvrdma_map_release(c, m);
    return false;
}

void pvrdma_map_release(PvrdmaCore *c, PvrdmaMap *m)
{
    for (uint32_t i = 0; i < m->nchunks; i++) {
        c->ops->unmap(c->opaque, m->chunk[i].host, m->chunk[i].len, true);
    }
    g_free(m->chunk);
    g_free(m->gpa);
    memset(m, 0, sizeof(*m));
}

/* Index of the chunk holding offset 'off' (binary search). */
static int64_t map_find(const PvrdmaMap *m, uint64_t off)
{
    uint32_t lo = 0, hi = m->nchunks;

    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        const PvrdmaChunk *ch = &m->chunk[mid];

        if (off < ch->off) {
            hi = mid;
        } else if (off >= ch->off + ch->len) {
            lo = mid + 1;
        } else {
            return mid;
        }
    }
    return -1;
}

uint8_t *pvrdma_map_ptr(const PvrdmaMap *m, uint64_t off, uint64_t len)
{
    int64_t i = map_find(m, off);

    if (i < 0 || len > m->chunk[i].len - (off - m->chunk[i].off)) {
        return NULL;
    }
    return m->chunk[i].host + (off - m->chunk[i].off);
}

/*
 * Scatter lists come and go with every operation: the first array of each
 * (SG_FIRST entries, enough for most) is kept for the next one, a few per
 * thread (the vCPU threads run doorbells, the main loop the rest), so the
 * data path does not allocate.
 */
#define SG_FIRST    8
#define SG_SPARES   8

typedef struct SgSpares {
    PvrdmaIov *iov[SG_SPARES];
    unsigned n;
} SgSpares;

/* a thread's spares go with it */
static void sg_spares_free(gpointer p)
{
    SgSpares *sp = p;

    while (sp->n) {
        g_free(sp->iov[--sp->n]);
    }
    g_free(sp);
}

static GPrivate sg_spares_key = G_PRIVATE_INIT(sg_spares_free);

static SgSpares *sg_spares(void)
{
    SgSpares *sp = g_private_get(&sg_spares_key);

    if (!sp) {
        sp = g_new0(SgSpares, 1);
        g_private_set(&sg_spares_key, sp);
    }
    return sp;
}

static void sg_push(PvrdmaSg *sg, uint8_t *host, uint64_t len, bool mapped,
                    bool is_write)
{
    if (sg->n == sg->cap) {
        SgSpares *sp = sg->cap ? NULL : sg_spares();

        if (sp && sp->n) {
            sg->iov = sp->iov[--sp->n];
            sg->cap = SG_FIRST;
        } else {
            sg->cap = sg->cap ? sg->cap * 2 : SG_FIRST;
            sg->iov = g_renew(PvrdmaIov, sg->iov, sg->cap);
        }
    }
    sg->iov[sg->n++] = (PvrdmaIov) { host, len, mapped, is_write };
    sg->len += len;
}

/* Append [off, off+len) of a mapped region to sg. */
bool pvrdma_map_to_sg(const PvrdmaMap *m, uint64_t off, uint64_t len,
                      PvrdmaSg *sg)
{
    int64_t i;

    if (len == 0) {
        return true;
    }
    if (off >= m->len || len > m->len - off) {
        return false;
    }
    i = map_find(m, off);
    while (len && i >= 0 && i < m->nchunks) {
        const PvrdmaChunk *ch = &m->chunk[i];
        uint64_t in = off - ch->off;
        uint64_t n = MIN(len, ch->len - in);

        sg_push(sg, ch->host + in, n, false, false);
        off += n;
        len -= n;
        i++;
    }
    return len == 0;
}

/* Append guest physical [gpa, gpa+len) to sg, mapping it now. */
bool pvrdma_gpa_to_sg(PvrdmaCore *c, uint64_t gpa, uint64_t len,
                      bool is_write, PvrdmaSg *sg)
{
    while (len) {
        uint64_t n = len;
        void *host = c->ops->map(c->opaque, gpa, &n, is_write);

        if (!host || !n) {
            if (host) {
                c->ops->unmap(c->opaque, host, n, is_write);
            }
            return false;
        }
        sg_push(sg, host, n, true, is_write);
        gpa += n;
        len -= n;
    }
    return true;
}

void pvrdma_dirty(PvrdmaCore *c, const void *host, uint64_t len)
{
    if (c->ops->dirty && len) {
        c->ops->dirty(c->opaque, host, len);
    }
}

void pvrdma_sg_release(PvrdmaCore *c, PvrdmaSg *sg)
{
    SgSpares *sp;

    for (uint32_t i = 0; i < sg->n; i++) {
        if (sg->iov[i].mapped) {
            /* the host's unmap marks what a write mapping covered */
            c->ops->unmap(c->opaque, sg->iov[i].host, sg->iov[i].len,
                          sg->iov[i].is_write);
        } else if (sg->iov[i].written) {
            pvrdma_dirty(c, sg->iov[i].host, sg->iov[i].len);
        }
    }
    sp = sg->cap == SG_FIRST ? sg_spares() : NULL;
    if (sp && sp->n < SG_SPARES) {
        sp->iov[sp->n++] = sg->iov;
    } else {
        g_free(sg->iov);
    }
    memset(sg, 0, sizeof(*sg));
}

uint64_t pvrdma_sg_copy(PvrdmaSg *dst, uint64_t dst_off,
                        const PvrdmaSg *src, uint64_t src_off, uint64_t len)
{
    uint32_t di = 0, si = 0;
    uint64_t done = 0;

    /* skip to the starting offsets */
    while (di < dst->n && dst_off >= dst->iov[di].len) {
        dst_off -= dst->iov[di++].len;
    }
    while (si < src->n && src_off >= src->iov[si].len) {
        src_off -= src->iov[si++].len;
    }
    while (done < len && di < dst->n && si < src->n) {
        uint64_t n = MIN(len - done, MIN(dst->iov[di].len - dst_off,
                                         src->iov[si].len - src_off));

        memmove(dst->iov[di].host + dst_off, src->iov[si].host + src_off, n);
        dst->iov[di].written |= n != 0;
        done += n;
        dst_off += n;
        src_off += n;
        if (dst_off == dst->iov[di].len) {
            di++;
            dst_off = 0;
        }
        if (src_off == src->iov[si].len) {
            si++;
            src_off = 0;
        }
    }
    return done;
}

void pvrdma_sg_view(const PvrdmaSg *sg, uint64_t off, uint64_t len,
                    PvrdmaSg *view)
{
    *view = (PvrdmaSg) { .iov = g_new0(PvrdmaIov, MAX(sg->n, 1)),
                         .cap = MAX(sg->n, 1) };
    for (uint32_t i = 0; i < sg->n && len; i++) {
        const PvrdmaIov *v = &sg->iov[i];
        uint64_t take;

        if (off >= v->len) {
            off -= v->len;
            continue;
        }
        take = MIN(v->len - off, len);
        view->iov[view->n++] = (PvrdmaIov) { .host = v->host + off,
                                             .len = take,
                                             .is_write = v->is_write };
        view->len += take;
        len -= take;
        off = 0;
    }
}

/*
 * Memory another process gave us, or that we give (guest RAM, a peer's
 * ring), is mapped only when it cannot shrink: a process that truncated it
 * under a mapping would make the mapper take SIGBUS at its next access.
 * Only a memfd sealed with F_SEAL_SHRINK is: QEMU's memory-backend-memfd
 * with seal=on (its default) and the co-resident rings; a plain file
 * (memory-backend-file) never is.
 */
bool pvrdma_fd_sealed(int fd)
{
    struct stat st;
    int seals = fcntl(fd, F_GET_SEALS);

    return seals >= 0 && (seals & F_SEAL_SHRINK) && !fstat(fd, &st) &&
           S_ISREG(st.st_mode);
}
