/*
 * QTest for the pvrdma device against a hostile guest: what the tests of
 * both files share (pvrdma/hostile.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef PVRDMA_TEST_HOSTILE_H
#define PVRDMA_TEST_HOSTILE_H

#include "libqos/pvrdma.h"

/* Guest physical addresses that are not RAM on the pc machine (128 MiB). */
#define GPA_PAST_RAM    0x40000000ull   /* nothing there */
#define GPA_BIOS_ROM    0xfffff000ull   /* read-only */
#define GPA_IOAPIC      0xfec00000ull   /* MMIO */

typedef struct Pair {
    QPvrdma *d;
    uint32_t pd;
    QPvrdmaCq cq;
    QPvrdmaQp a, b;
} Pair;

/*
 * Guest addresses that are not RAM: the device must neither read nor write
 * them.  The first NBAD_READ are not RAM at all; the last is ROM, which the
 * device may read (a directory there is just data) but never write.
 */
#define NBAD_READ   6
#define NBAD        7

void pair_setup(Pair *p, QPvrdma *d, uint8_t type, uint32_t n);

void pair_destroy(Pair *p);

/* New QPs in place of a and b (after an error), same PD and CQ. */
void pair_new_qps(Pair *p, uint8_t type, uint32_t n);

/* A good SEND from a to b with data compared: the data path still works. */
void pair_works(Pair *p);

/* The device answers commands and its data path works. */
void device_works(QPvrdma *d);

uint64_t guest_errors(QPvrdma *d);

uint32_t query_qp_state(QPvrdma *d, uint32_t h);

/* A CREATE_CQ request over ring r (cqe entries, r->npages pages). */
struct pvrdma_cmd_create_cq cq_req(QPvrdmaRing *r, uint32_t cqe);

/* A CREATE_QP request: n x 2-SGE WQEs per ring, pages from r. */
struct pvrdma_cmd_create_qp qp_req(QPvrdmaRing *r, uint32_t pd,
                                   uint32_t cq, uint32_t n,
                                   uint32_t send_chunks);

struct pvrdma_cmd_create_srq srq_req(QPvrdmaRing *r, uint32_t pd,
                                     uint32_t max_wr, uint32_t sge);

uint64_t bar_addr(QPvrdma *d, int bar);

void bad_pages(QPvrdma *d, uint64_t out[NBAD]);

/* A repeat count from the environment (a leak check raises it). */
unsigned env_count(const char *name, unsigned def);

/* The device refuses commands and maps nothing: not active. */
void expect_inactive(QPvrdma *d);

void pvrdma_add_cve_tests(void);
void pvrdma_add_hostile_input_tests(void);
void pvrdma_add_hostile_memory_tests(void);

#endif
