/*
 * pvrdma: what the QEMU-free core needs from its environment.
 *
 * Inside QEMU this pulls in osdep, logging and the generated trace
 * functions.  Built standalone (PVRDMA_STANDALONE: the unit tests, the
 * fuzzers and the core benchmark, outside QEMU) the same names come from
 * pvrdma_standalone.h, which those builds keep in tests/standalone/.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_PVRDMA_PORT_H
#define HW_RDMA_PVRDMA_PORT_H

#ifdef PVRDMA_STANDALONE
/* outside QEMU: tests/standalone/pvrdma_standalone.h */
#include "pvrdma_standalone.h"
#else
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

#endif
