/*
 * What a narrower co-resident mapping would cost
 * (docs/devel/pvrdma-coresident.rst).  Today each peer maps the
 * other's whole guest RAM once per connection.  If instead a peer mapped
 * only registered MRs, every CREATE_MR would have to be announced to each
 * peer with the MR's runs of guest pages, each peer would map those runs
 * (into one reserved window, so the MR stays contiguous there) and answer,
 * and every DESTROY_MR would have to wait until each peer unmapped them.
 * This measures those steps for one peer on this machine:
 *
 *   map     reserve a window, mmap(MAP_FIXED) each run from the memfd
 *   touch   the peer's first access to each 4 KiB page (a minor fault;
 *           today paid once per connection, then per registration)
 *   populate  instead of map + touch: the same mmaps with MAP_POPULATE
 *   unmap   munmap the window (with a busy second thread: the TLB
 *           shootdown a multi-threaded QEMU pays)
 *   announce  the run list in 64 KiB datagrams over a SOCK_SEQPACKET
 *           socketpair to another process, which answers once: the
 *           round trip CREATE_MR or DESTROY_MR would wait for
 *
 *   mr-map [REPEAT [idle]]   (default 20; the 1 GiB cases run REPEAT/4
 *                            times; idle: no busy second thread)
 *
 * Prints one line per case: the MR, its runs, the median microseconds of
 * each step and the sum (the cheaper of map + touch and populate, unmap,
 * announce).  A case whose runs exceed what the kernel lets
 * one process map (vm.max_map_count mappings) says so instead.  The memfd (1 GiB + 2 MiB) is filled first, as
 * a guest's RAM behind an MR would be.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>

#define PAGE        4096ull
#define MEM_SIZE    ((1ull << 30) + (2ull << 20))
#define DGRAM       65536
#define RUN_ENTRY   16      /* (offset, length) per run */
#define MAX_REPEAT  100

static volatile int stop;

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void *spin(void *arg)
{
    volatile uint64_t n = 0;

    (void)arg;
    while (!stop) {
        n++;
    }
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * Run i of an MR made of runs of 'run' bytes: scattered over the memfd,
 * as the guest pages of a user buffer are (7919 is prime and divides no
 * slot count here, so distinct runs get distinct slots).
 */
static uint64_t run_offset(uint64_t i, uint64_t run)
{
    uint64_t slots = MEM_SIZE / run;

    return (i * 7919 % slots) * run;
}

/* The peer: read the list, answer once per MR. */
static void peer(int s)
{
    char *buf = malloc(DGRAM);
    uint64_t want;

    for (;;) {
        uint64_t got = 0;

        if (read(s, &want, sizeof(want)) != sizeof(want)) {
            exit(0);
        }
        while (got < want) {
            ssize_t n = read(s, buf, DGRAM);

            if (n <= 0) {
                exit(1);
            }
            got += n;
        }
        if (write(s, "k", 1) != 1) {
            exit(1);
        }
    }
}

/* Reserve a window of len, map the runs into it; NULL if refused. */
static char *map_runs(int fd, uint64_t len, uint64_t run, int flags,
                      uint64_t *failed_at)
{
    char *win = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
                     MAP_NORESERVE, -1, 0);

    if (win == MAP_FAILED) {
        perror("mr-map: reserve");
        exit(1);
    }
    for (uint64_t i = 0; i < len / run; i++) {
        if (mmap(win + i * run, run, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_FIXED | flags, fd,
                 run_offset(i, run)) == MAP_FAILED) {
            *failed_at = i;
            munmap(win, len);
            return NULL;
        }
    }
    return win;
}

static double announce(int s, uint64_t bytes, char *buf)
{
    double t0 = now_us();
    char ack;

    if (write(s, &bytes, sizeof(bytes)) != sizeof(bytes)) {
        abort();
    }
    for (uint64_t off = 0; off < bytes; off += DGRAM) {
        size_t n = bytes - off < DGRAM ? bytes - off : DGRAM;

        if (write(s, buf, n) != (ssize_t)n) {
            abort();
        }
    }
    if (read(s, &ack, 1) != 1) {
        abort();
    }
    return now_us() - t0;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        uint64_t len, run;
    } cases[] = {
        { "4 KiB", 4096, 4096 },
        { "64 KiB in 4 KiB pages", 65536, 4096 },
        { "1 MiB in 4 KiB pages", 1 << 20, 4096 },
        { "1 GiB in 2 MiB runs", 1ull << 30, 2 << 20 },
        { "1 GiB in 4 KiB pages", 1ull << 30, 4096 },
    };
    int repeat = argc > 1 ? atoi(argv[1]) : 20;
    bool busy = !(argc > 2 && !strcmp(argv[2], "idle"));
    int fd = memfd_create("mr-map", MFD_CLOEXEC), sv[2];
    char *fill, *list = calloc(1, DGRAM);
    pthread_t th;
    pid_t child;

    if (repeat < 1 || repeat > MAX_REPEAT) {
        fprintf(stderr, "mr-map: REPEAT is 1 to %d\n", MAX_REPEAT);
        return 1;
    }
    if (fd < 0 || ftruncate(fd, MEM_SIZE) || !list) {
        perror("mr-map");
        return 1;
    }
    fill = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (fill == MAP_FAILED) {
        perror("mr-map: mmap");
        return 1;
    }
    for (uint64_t o = 0; o < MEM_SIZE; o += PAGE) {
        fill[o] = 1;        /* the guest's RAM exists */
    }
    munmap(fill, MEM_SIZE);
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
        perror("mr-map: socketpair");
        return 1;
    }
    child = fork();
    if (!child) {
        close(sv[0]);
        peer(sv[1]);
    }
    close(sv[1]);
    /* the other core runs a vCPU thread of this process */
    if (busy) {
        pthread_create(&th, NULL, spin, NULL);
    }

    printf("%-24s %7s %9s %9s %9s %9s %9s %9s\n", "MR", "runs", "map",
           "touch", "populate", "unmap", "announce", "total_us");
    for (unsigned c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        uint64_t len = cases[c].len, run = cases[c].run;
        uint64_t runs = len / run;
        int reps = len >= (1ull << 30) ? (repeat + 3) / 4 : repeat;
        double tm[MAX_REPEAT], tt[MAX_REPEAT], tp[MAX_REPEAT];
        double tu[MAX_REPEAT], ta[MAX_REPEAT];
        double m, t, p, u, a;
        bool failed = false;

        for (int r = 0; r < reps && !failed; r++) {
            volatile char sink = 0;
            uint64_t at = 0;
            double t0;
            char *win;

            t0 = now_us();
            win = map_runs(fd, len, run, 0, &at);
            if (!win) {
                printf("%-24s %7llu cannot be mapped: run %llu: %s "
                       "(vm.max_map_count)\n", cases[c].name,
                       (unsigned long long)runs, (unsigned long long)at,
                       strerror(errno));
                failed = true;
                break;
            }
            tm[r] = now_us() - t0;
            t0 = now_us();
            for (uint64_t o = 0; o < len; o += PAGE) {
                sink += win[o];
            }
            tt[r] = now_us() - t0;
            t0 = now_us();
            munmap(win, len);
            tu[r] = now_us() - t0;
            t0 = now_us();
            win = map_runs(fd, len, run, MAP_POPULATE, &at);
            tp[r] = now_us() - t0;
            if (win) {
                munmap(win, len);
            }
            ta[r] = announce(sv[0], runs * RUN_ENTRY, list);
        }
        if (failed) {
            continue;
        }
        m = median(tm, reps);
        t = median(tt, reps);
        p = median(tp, reps);
        u = median(tu, reps);
        a = median(ta, reps);
        printf("%-24s %7llu %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f\n",
               cases[c].name, (unsigned long long)runs, m, t, p, u, a,
               (m + t < p ? m + t : p) + u + a);
    }
    stop = 1;
    if (busy) {
        pthread_join(th, NULL);
    }
    close(sv[0]);
    waitpid(child, NULL, 0);
    return 0;
}
