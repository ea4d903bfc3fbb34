/*
 * glibc's own allocator entry points, which bench-core's malloc, calloc,
 * realloc, reallocarray, memalign, aligned_alloc, posix_memalign, valloc
 * and pvalloc wrap to count the heap allocations of the process (glibc
 * exports them for allocators that replace its own).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef TESTS_BENCH_LIBC_ALLOC_H
#define TESTS_BENCH_LIBC_ALLOC_H

#include <stddef.h>

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);
void *__libc_memalign(size_t align, size_t n);
void *__libc_valloc(size_t n);
void *__libc_pvalloc(size_t n);

#endif
