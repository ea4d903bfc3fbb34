/*
 * Host single-thread memcpy bandwidth, for scripts/bench-coresident.sh.
 *   memcpy-bw SIZE_BYTES [SECONDS]
 * Copies a SIZE-byte buffer into another again and again for about SECONDS
 * (default 1) and prints "memcpy SIZE MB/s" (MB = 10^6 bytes, as perftest).
 * A 64 KiB copy stays in the caches, like perftest's 64 KiB buffers; a
 * 256 MiB copy measures DRAM.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    size_t size = argc > 1 ? strtoull(argv[1], NULL, 0) : 65536;
    double secs = argc > 2 ? atof(argv[2]) : 1.0;
    char *a = malloc(size), *b = malloc(size);
    unsigned long n = 0, batch = 1;
    double t0, t;

    if (!a || !b || size == 0) {
        fprintf(stderr, "memcpy-bw: cannot allocate 2 x %zu bytes\n", size);
        return 1;
    }
    memset(a, 0x5a, size);
    memset(b, 0xa5, size);          /* fault both in before timing */
    t0 = now();
    do {
        for (unsigned long i = 0; i < batch; i++) {
            memcpy((n + i) & 1 ? a : b, (n + i) & 1 ? b : a, size);
            __asm__ volatile("" : : "r"(a), "r"(b) : "memory");
        }
        n += batch;
        if (batch < (1ul << 20) && batch * size < (64ul << 20)) {
            batch *= 2;
        }
        t = now() - t0;
    } while (t < secs);
    printf("memcpy %zu %.0f\n", size, (double)n * size / t / 1e6);
    return 0;
}
