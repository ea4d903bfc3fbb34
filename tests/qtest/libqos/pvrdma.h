/*
 * libqos driver for the pvrdma device: what the Linux vmw_pvrdma driver
 * does at probe (DSR, slots, async and CQ-notification rings, MSI-X,
 * activation) plus helpers for commands, rings and page directories.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QOS_PVRDMA_H
#define QOS_PVRDMA_H

#include "libqos/libqos-pc.h"
#include "libqos/pci.h"
#include "hw/rdma/pvrdma_abi.h"

#define PVRDMA_TEST_SLOT    4

typedef struct QPvrdma {
    QOSState *qs;
    QTestState *qts;
    QPCIDevice *dev;
    QPCIBar regs, uar;
    uint64_t dsr, cmd, resp;
    uint64_t async_pdir, cq_pdir;
    uint64_t async_pages[4], cq_pages[4];
    uint64_t msix_addr;         /* vector v writes its number here + 4*v */
} QPvrdma;

/* A ring-backed object: pages, their page directory, host-side indices. */
typedef struct QPvrdmaRing {
    uint64_t *pages;
    uint32_t npages;
    uint64_t pdir;
} QPvrdmaRing;

QPvrdma *qpvrdma_start(const char *extra_fmt, ...) G_GNUC_PRINTF(1, 2);
void qpvrdma_stop(QPvrdma *d);

uint32_t qpvrdma_reg_read(QPvrdma *d, uint32_t reg);
void qpvrdma_reg_write(QPvrdma *d, uint32_t reg, uint32_t val);
void qpvrdma_uar_write(QPvrdma *d, uint32_t page, uint32_t off, uint32_t val);

/* Driver probe: DSR + rings, DSRLOW/HIGH, caps read back. */
void qpvrdma_setup_dsr(QPvrdma *d, uint32_t driver_version);
/* ACTIVATE; returns REG_ERR. */
uint32_t qpvrdma_activate(QPvrdma *d);
/* Probe + activate with driver version 20. */
QPvrdma *qpvrdma_start_active(const char *extra);
void qpvrdma_read_caps(QPvrdma *d, struct pvrdma_device_caps *caps);

/*
 * Post a command: returns REG_ERR.  On success also waits for the response
 * vector and copies the response to resp (if not NULL).
 */
uint32_t qpvrdma_cmd(QPvrdma *d, const void *req, size_t len,
                     union pvrdma_cmd_resp *resp);
/* Wait for MSI-X vector v (consumes the event); false on timeout. */
bool qpvrdma_wait_vector(QPvrdma *d, unsigned v);
bool qpvrdma_vector_seen(QPvrdma *d, unsigned v);

/* Guest memory */
uint64_t qpvrdma_alloc(QPvrdma *d, size_t len);
/* A page directory over npages freshly allocated (zeroed) pages. */
void qpvrdma_ring_alloc(QPvrdma *d, QPvrdmaRing *r, uint32_t npages);
uint64_t qpvrdma_pdir(QPvrdma *d, const uint64_t *pages, uint32_t npages);
void qpvrdma_ring_free(QPvrdmaRing *r);

#endif
