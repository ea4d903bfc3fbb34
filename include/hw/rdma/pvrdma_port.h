/*
 * pvrdma: what the QEMU-free core needs from its environment.
 *
 * Inside QEMU this pulls in osdep, logging and the generated trace
 * functions.  Built standalone (PVRDMA_STANDALONE, for unit tests) it uses
 * glib and turns trace points into no-ops generated from trace-events.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_PVRDMA_PORT_H
#define HW_RDMA_PVRDMA_PORT_H

#ifdef PVRDMA_STANDALONE
#include <glib.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>
#include "trace/trace-hw_rdma.h"
#ifndef ROUND_UP
#define ROUND_UP(n, d) (((n) + (d) - 1) / (d) * (d))
#endif
#ifndef container_of
#define container_of(ptr, type, member) \
    ((type *)((char *)(ptr) - offsetof(type, member)))
#endif
#define le64_to_cpu(x) (x)
#define cpu_to_le64(x) (x)
#define le32_to_cpu(x) (x)
#define cpu_to_le32(x) (x)
extern unsigned pvrdma_standalone_log_guest_errors;
#define pvrdma_log_guest_error(fmt, ...) do { \
        if (pvrdma_standalone_log_guest_errors) { \
            fprintf(stderr, "pvrdma: " fmt "\n", ##__VA_ARGS__); \
        } \
    } while (0)
/*
 * host-side trouble (a peer process, the rendezvous): not guest errors;
 * also collected in pvrdma_standalone_host_log when a test sets it up
 */
extern GString *pvrdma_standalone_host_log;
#define pvrdma_log_host(fmt, ...) do { \
        if (pvrdma_standalone_log_guest_errors) { \
            fprintf(stderr, "pvrdma: " fmt "\n", ##__VA_ARGS__); \
        } \
        if (pvrdma_standalone_host_log) { \
            g_string_append_printf(pvrdma_standalone_host_log, \
                                   "pvrdma: " fmt "\n", ##__VA_ARGS__); \
        } \
    } while (0)
#define pvrdma_host_page_size()    ((uint64_t)getpagesize())
#define pvrdma_atomic_load(p)      __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define pvrdma_atomic_store(p, v)  __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define pvrdma_smp_mb()            __atomic_thread_fence(__ATOMIC_SEQ_CST)
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
