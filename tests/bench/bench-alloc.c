/*
 * bench-core: the count of this process's heap allocations (every glibc
 * allocator wrapped), run again with G_SLICE=always-malloc so that glib's
 * slices count too, and a self-check that every way the run allocates
 * raises the count.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <glib.h>
#include "libc-alloc.h"
#include "bench-alloc.h"

/*
 * Heap allocations of this process: the program's malloc, calloc, realloc,
 * reallocarray and the aligned allocators (memalign, aligned_alloc,
 * posix_memalign, valloc, pvalloc) wrap glibc's, so the figure counts the
 * core's, the transports' and glib's.  GSlice (glib < 2.76) keeps chunks
 * of its own and calls none of them, unless G_SLICE=always-malloc is set
 * before glib starts: main() runs the program again with it set
 * (alloc_env()) and checks that the count sees a slice (alloc_check()).
 */
static uint64_t g_allocs;

uint64_t bench_allocs(void)
{
    return __atomic_load_n(&g_allocs, __ATOMIC_RELAXED);
}

static inline void count_alloc(void)
{
    __atomic_fetch_add(&g_allocs, 1, __ATOMIC_RELAXED);
}

void *malloc(size_t n)
{
    count_alloc();
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    count_alloc();
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    count_alloc();
    return __libc_realloc(p, n);
}

/* glibc's calls __libc_realloc, not realloc */
void *reallocarray(void *p, size_t n, size_t size)
{
    size_t bytes;

    if (__builtin_mul_overflow(n, size, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    count_alloc();
    return __libc_realloc(p, bytes);
}

/* glibc 2.36's aligned_alloc is its memalign */
void *memalign(size_t align, size_t n)
{
    count_alloc();
    return __libc_memalign(align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
    count_alloc();
    return __libc_memalign(align, n);
}

int posix_memalign(void **p, size_t align, size_t n)
{
    int saved = errno;
    void *m;

    if (align % sizeof(void *) || (align & (align - 1)) || !align) {
        return EINVAL;
    }
    count_alloc();
    m = __libc_memalign(align, n);
    if (!m) {
        errno = saved;
        return ENOMEM;
    }
    *p = m;
    return 0;
}

void *valloc(size_t n)
{
    count_alloc();
    return __libc_valloc(n);
}

void *pvalloc(size_t n)
{
    count_alloc();
    return __libc_pvalloc(n);
}

/* G_SLICE makes GSlice use malloc: "always-malloc" or "all" among its keys */
static bool slice_mallocs(void)
{
    const char *v = getenv("G_SLICE");
    g_auto(GStrv) keys = v ? g_strsplit_set(v, ",:; ", -1) : NULL;

    for (unsigned i = 0; keys && keys[i]; i++) {
        if (!strcmp(keys[i], "always-malloc") || !strcmp(keys[i], "all")) {
            return true;
        }
    }
    return false;
}

/*
 * Without G_SLICE=always-malloc, run this program again with it: glib's
 * slice allocator reads it once, when glib starts, before main().
 */
void alloc_env(char **argv)
{
    const char *v = getenv("G_SLICE");
    g_autofree char *set = NULL;

    if (slice_mallocs()) {
        return;
    }
    set = v && *v ? g_strconcat(v, ",always-malloc", NULL) :
          g_strdup("always-malloc");
    if (setenv("G_SLICE", set, 1)) {
        fprintf(stderr, "bench-core: setenv: %s\n", strerror(errno));
        exit(1);
    }
    fflush(NULL);
    execv("/proc/self/exe", argv);
    fprintf(stderr, "bench-core: cannot run again with G_SLICE=%s: %s\n",
            set, strerror(errno));
    exit(1);
}

/* where the self-check's blocks go: the allocations cannot be left out */
static void *volatile g_sink;

static void G_GNUC_PRINTF(1, 2) alloc_expect(const char *fmt, ...)
{
    static uint64_t last;
    uint64_t now = __atomic_load_n(&g_allocs, __ATOMIC_RELAXED);

    if (fmt && now == last) {
        char buf[128];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        fprintf(stderr, "bench-core: the allocation count does not see %s "
                "(G_SLICE=%s): no allocs/op figure would be right\n", buf,
                getenv("G_SLICE") ?: "");
        exit(1);
    }
    last = now;
}

static void *nonnull(void *p)
{
    if (!p) {
        fprintf(stderr, "bench-core: an allocation failed\n");
        exit(1);
    }
    return p;
}

/* Each way the run allocates must raise the count, or no figure. */
void alloc_check(void)
{
    GQueue q = G_QUEUE_INIT;
    void *p = NULL;

    /* a slice allocator's first chunk takes a page: the second must count */
    g_sink = g_slice_alloc(24);
    g_slice_free1(24, g_sink);
    alloc_expect(NULL);
    g_sink = g_slice_alloc(24);
    alloc_expect("g_slice_alloc()");
    g_slice_free1(24, g_sink);
    g_queue_push_tail(&q, &q);
    alloc_expect("g_queue_push_tail()");
    g_queue_clear(&q);
    g_sink = g_malloc(24);
    alloc_expect("g_malloc()");
    g_free(g_sink);
    /* glib 2.72: newer than the glib QEMU builds for (glib-compat.h) */
    G_GNUC_BEGIN_IGNORE_DEPRECATIONS
    g_sink = g_aligned_alloc(1, 24, 64);
    alloc_expect("g_aligned_alloc()");
    g_aligned_free(g_sink);
    G_GNUC_END_IGNORE_DEPRECATIONS
    g_sink = nonnull(posix_memalign(&p, 64, 24) ? NULL : p);
    alloc_expect("posix_memalign()");
    free(g_sink);
    g_sink = nonnull(aligned_alloc(64, 64));
    alloc_expect("aligned_alloc()");
    free(g_sink);
    g_sink = nonnull(memalign(64, 24));
    alloc_expect("memalign()");
    free(g_sink);
    g_sink = nonnull(valloc(24));
    alloc_expect("valloc()");
    free(g_sink);
    g_sink = g_strdup_printf("%d", 42);
    alloc_expect("g_strdup_printf()");
    g_free(g_sink);
}
