/*
 * The device's share of a migration's downtime: how long the core takes
 * to save its state (on the source, VM stopped) and to load it (on the
 * destination: every object re-created, every ring and MR mapped again),
 * for 1 connected QP and for N QPs (connected loopback pairs) with N MRs.
 * Runs on the unit tests' fake host (its map() is a pointer offset, where
 * QEMU's walks the memory map), so the figures are the core's own work.
 * Prints figures and the ratio to the target (10 ms at 1000 QPs); not a
 * test.
 *
 *   bench-mig [-q QPS] [-r RUNS]
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "fake-driver.h"
#include "hw/rdma/pvrdma_loopback.h"
#include <getopt.h>

#define MR_PAGES 4

static double now_us(void)
{
    return g_get_monotonic_time();
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* A device with nqp QPs (pairs connected to each other) and nqp MRs. */
static void populate(Dev *d, unsigned nqp)
{
    PvrdmaLimits l;
    uint32_t pd;
    TCq cq;
    TQp *qp = g_new0(TQp, nqp);

    pvrdma_limits_default(&l);
    l.max_qp = MAX(l.max_qp, nqp + 8);
    l.max_mr = MAX(l.max_mr, nqp + 8);
    dev_setup(d, &l);
    pd = create_pd(d, 0);
    bind_gid(d, 0, test_gid);
    create_cq(d, &cq, 2048);
    for (unsigned i = 0; i < nqp; i++) {
        TMr mr;

        create_qp(d, &qp[i], pd, cq.handle, cq.handle, PVRDMA_QPT_RC);
        create_mr(d, &mr, pd, 0x10000000ull + (uint64_t)i * MR_PAGES * FH_PAGE,
                  MR_PAGES * FH_PAGE, PVRDMA_ACCESS_LOCAL_WRITE | RC_ACCESS);
    }
    for (unsigned i = 0; i < nqp; i++) {
        unsigned peer = i ^ 1;

        rc_to_rts(d, &qp[i], qp[peer < nqp ? peer : i].qpn, 7);
    }
    run_all(d);
    g_free(qp);
}

static void measure(unsigned nqp, unsigned runs)
{
    Dev d;
    double *save = g_new(double, runs), *load = g_new(double, runs);
    size_t bytes = 0;
    PvrdmaLimits l;

    populate(&d, nqp);
    l = d.c.lim;
    for (unsigned r = 0; r < runs; r++) {
        GByteArray *b = g_byte_array_new();
        Error *err = NULL;
        double t0, t1, t2;

        t0 = now_us();
        pvrdma_core_save(&d.c, b);
        t1 = now_us();
        /* the destination: a fresh core on the same guest RAM */
        pvrdma_core_fini(&d.c);
        pvrdma_core_init(&d.c, &fh_ops, &d.h, &l);
        pvrdma_core_add_transport(&d.c, pvrdma_loopback_new(&d.c));
        t2 = now_us();
        if (!pvrdma_core_load(&d.c, b->data, b->len, &err)) {
            fprintf(stderr, "load failed: %s\n", error_get_pretty(err));
            exit(1);
        }
        load[r] = now_us() - t2;
        save[r] = t1 - t0;
        bytes = b->len;
        g_byte_array_free(b, true);
        if (d.c.qp.used != nqp || d.c.mr.used != nqp) {
            fprintf(stderr, "loaded %u QPs, %u MRs\n", d.c.qp.used,
                    d.c.mr.used);
            exit(1);
        }
    }
    qsort(save, runs, sizeof(double), cmp_double);
    qsort(load, runs, sizeof(double), cmp_double);
    printf("%5u QPs %5u MRs  state %8zu bytes  save %8.3f ms  load %8.3f ms"
           "  save+load %8.3f ms (median of %u; best %.3f + %.3f)\n",
           nqp, nqp, bytes, save[runs / 2] / 1000, load[runs / 2] / 1000,
           (save[runs / 2] + load[runs / 2]) / 1000, runs, save[0] / 1000,
           load[0] / 1000);
    if (!(save[0] > 0) || !(load[0] > 0)) {
        printf("no figure: a save or load took no measurable time\n");
        exit(1);
    }
    if (nqp >= 1000) {
        printf("target: save+load <= 10 ms at 1000 QPs: %.2fx of the "
               "target (%s)\n", (save[runs / 2] + load[runs / 2]) / 10000,
               save[runs / 2] + load[runs / 2] <= 10000 ? "met" : "missed");
    }
    pvrdma_core_reg_write(&d.c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_RESET);
    pvrdma_core_fini(&d.c);
    fh_fini(&d.h);
    g_free(save);
    g_free(load);
}

int main(int argc, char **argv)
{
    unsigned nqp = 1000, runs = 11;
    int c;

    fh_process_init(false);
    while ((c = getopt(argc, argv, "q:r:")) != -1) {
        switch (c) {
        case 'q':
            nqp = atoi(optarg);
            break;
        case 'r':
            runs = MAX(atoi(optarg), 1);
            break;
        default:
            fprintf(stderr, "usage: bench-mig [-q QPS] [-r RUNS]\n");
            return 2;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    measure(1, runs);
    measure(nqp, runs);
    return 0;
}
