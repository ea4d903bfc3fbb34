/*
 * pvrdma: what the core takes from QEMU: osdep, logging, atomics and the
 * generated trace functions.  The unit tests, the fuzzers and the core
 * benchmark build the core against the same headers and link QEMU's
 * libqemuutil (tests/core-srcs.mk), as QEMU's own tests/unit do.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_PVRDMA_PORT_H
#define HW_RDMA_PVRDMA_PORT_H

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/atomic.h"
#include "qemu/bswap.h"
#include "qemu/error-report.h"
#include "trace/trace-hw_rdma.h"
#define pvrdma_log_guest_error(fmt, ...) \
    qemu_log_mask(LOG_GUEST_ERROR, "pvrdma: " fmt "\n", ##__VA_ARGS__)
#define pvrdma_log_host(fmt, ...) warn_report("pvrdma: " fmt, ##__VA_ARGS__)
#define pvrdma_host_page_size()    ((uint64_t)qemu_real_host_page_size())
#define pvrdma_atomic_load(p)      qatomic_load_acquire(p)
#define pvrdma_atomic_store(p, v)  qatomic_store_release((p), (v))
/* a full barrier: each caller says which store it orders before which load */
#define pvrdma_smp_mb()            smp_mb()

#endif
