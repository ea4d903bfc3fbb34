/*
 * bench-core without its allocation count (bench-alloc.c wraps glibc's
 * allocators, which ThreadSanitizer intercepts itself): the build of
 * scripts/tsan-bench.sh.  allocs/op reads 0.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "bench-alloc.h"

uint64_t bench_allocs(void)
{
    return 0;
}

void alloc_env(char **argv)
{
}

void alloc_check(void)
{
}
