/*
 * A scripted host RDMA device for host HCA mode (an object owner), shared by
 * the unit tests (test-pvrdma-hca.c) and the fuzzers: objects get twins
 * (counted), QPs the host numbers 0x300 + handle, MRs the keys
 * 0x1000 / 0x2000 + handle (rkey 0 without remote access, as Linux rxe);
 * FRMRs the key (0x40 + handle) << 8 | 0x07 (a host memory window's);
 * posted work requests are logged, and the
 * test decides when the host queues are full, when a call fails and when
 * work completes (pvrdma_complete).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef PVRDMA_UNIT_FAKE_HCA_H
#define PVRDMA_UNIT_FAKE_HCA_H

#include "hw/rdma/pvrdma_transport_calls.h"

/* One work request handed to the host. */
typedef struct FakeHcaPosted {
    bool recv, srq;
    uint32_t qpn;           /* host QP number; 0 for an SRQ receive */
    uint32_t srq_handle;
    uint64_t wr_id;
    uint32_t opcode, num_sge, rkey;
    uint64_t remote_addr;
    /* FAST_REG_MR and LOCAL_INV: the MR's handle, key and state then */
    uint32_t mr, mr_key, imm;
    bool mr_valid;
    uint64_t mr_iova;
    struct pvrdma_sge sge[4];
    /*
     * Completed (by the test), or discarded by the host: its QP was reset
     * or destroyed, its SRQ destroyed.  A real host never completes it.
     */
    bool done;
} FakeHcaPosted;

typedef struct FakeHca {
    PvrdmaTransport t;      /* first member */
    int twins;              /* host objects alive */
    int sq_room;            /* sends the host takes before -ENOMEM */
    int rq_room;            /* receives the host takes before -ENOMEM */
    int modify_err;         /* next qp_modify fails with this */
    int create_err;         /* next *_create fails with this */
    int qp_state;           /* qp_state of QPs past RTR (-1: unknown) */
    uint32_t port_state;    /* PVRDMA_PORT_* */
    uint32_t last_state;
    GArray *posted;         /* FakeHcaPosted, in order */
} FakeHca;

/* Add f to core c as its object owner (c->owner). */
void fake_hca_init(FakeHca *f, PvrdmaCore *c);
/* After pvrdma_core_fini (which calls its no-op destroy): free the log. */
void fake_hca_fini(FakeHca *f);
FakeHcaPosted *fake_hca_posted(FakeHca *f, unsigned i);

#endif
