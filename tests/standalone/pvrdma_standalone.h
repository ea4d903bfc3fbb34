/*
 * pvrdma: the environment of the QEMU-free core outside QEMU (the unit
 * tests, the fuzzers, the core benchmark: PVRDMA_STANDALONE), included by
 * include/hw/rdma/pvrdma_port.h, which has QEMU's side of the same names.
 * glib, and trace points as no-ops generated from hw/rdma/trace-events
 * (tests/core-srcs.mk).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef PVRDMA_STANDALONE_H
#define PVRDMA_STANDALONE_H

#include <glib.h>
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>
#include <unistd.h>
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
#define pvrdma_host_page_size()    ((uint64_t)sysconf(_SC_PAGESIZE))
#define pvrdma_atomic_load(p)      __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define pvrdma_atomic_store(p, v)  __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define pvrdma_smp_mb()            __atomic_thread_fence(__ATOMIC_SEQ_CST)

#endif
