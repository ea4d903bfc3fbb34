/*
 * pvrdma: what the device does, for the monitor (pvrdma_info.c):
 * query-pvrdma, info pvrdma, x-query-pvrdma-qps.  Plain C; the glue turns
 * it into QAPI types.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_PVRDMA_INFO_H
#define HW_RDMA_PVRDMA_INFO_H

#include "hw/rdma/pvrdma_core.h"

/* One QP (pvrdma_info_qps()). */
typedef struct PvrdmaQpInfo {
    uint32_t qpn;
    uint32_t type;              /* PVRDMA_QPT_* */
    uint32_t state;             /* PVRDMA_QPS_* */
    /*
     * The transport that carries it; "per-request" for UD and GSI (each
     * request goes where its destination is), "none" for RC before RTR.
     */
    const char *path;
    bool has_peer;              /* RC in RTR or later: */
    uint8_t peer_gid[16];
    uint32_t peer_qpn;
    bool has_stats;             /* its path keeps counters for it */
    PvrdmaPathStats st;
} PvrdmaQpInfo;

/* One transport (pvrdma_info_transports()). */
typedef struct PvrdmaTransportInfo {
    const char *name;
    bool has_stats;
    PvrdmaPathStats st;
} PvrdmaTransportInfo;

/* The guest's driver activated the device; its port is up. */
void pvrdma_info_device(PvrdmaCore *c, bool *active, bool *port_up);
/* Every QP of the device, by handle: a GArray of PvrdmaQpInfo. */
GArray *pvrdma_info_qps(PvrdmaCore *c);
/* Every transport of the device, in the order it tries them. */
GArray *pvrdma_info_transports(PvrdmaCore *c);
/* "RC", "RTS", ...: a QP type's and state's names ("?" if none). */
const char *pvrdma_qp_type_name(uint32_t type);
const char *pvrdma_qp_state_name(uint32_t state);
/*
 * What the device's QPs do, for people (x-query-pvrdma-qps, a debugging
 * aid): a line per QP with its number, type, state, path,
 * peer and the path's counters, then a line per transport with counters.
 * g_free() it.
 */
char *pvrdma_describe_qps(PvrdmaCore *c);

#endif
