/*
 * QTest for the pvrdma device: what the host HCA mode's two topics share
 * (hca-tests.c defines it, hca-host-tests.c uses it too).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef PVRDMA_QTEST_HCA_H
#define PVRDMA_QTEST_HCA_H

#include "pvrdma/framework.h"

/* Host completions arrive on QEMU's event loop: wait in wall time. */
#define HCA_WAIT_MS 5000
/* an FRMR's I/O address: the guest's choice, not a GPA */
#define FRMR_IOVA 0x7654321100ull

typedef struct HostGid {
    char dev[64];
    uint8_t gid[16];
} HostGid;

/* The first host RDMA device with a RoCE v2 IPv4 GID on port 1. */
bool host_gid(HostGid *hg);
/*
 * A pair of QPs of type on one device with ibdev= that host device,
 * connected through it (its loopback); extra: more device options.
 * false (the test skipped) without such a host device.
 */
bool hca_pair(Pair *p, HostGid *hg, uint8_t type, const char *extra);
/* An RC pair in shared guest RAM, through the host device or (!host) not */
bool hca_pair_shared(Pair *p, HostGid *hg, bool host);
/* A LOCAL_INV of key on qp, its completion wr_id awaited on cq */
void hca_local_inv(QPvrdma *d, QPvrdmaQp *qp, QPvrdmaCq *cq, uint32_t key,
                   uint64_t wr_id);

#endif
