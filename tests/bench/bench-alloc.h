/*
 * bench-core: heap allocations counted (bench-alloc.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef BENCH_ALLOC_H
#define BENCH_ALLOC_H

#include <stdint.h>

/* Heap allocations of this process so far. */
uint64_t bench_allocs(void);
/* Without G_SLICE=always-malloc, run the program again with it. */
void alloc_env(char **argv);
/* Exit unless every way the run allocates raises the count. */
void alloc_check(void);

#endif
