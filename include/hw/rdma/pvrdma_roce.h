/*
 * pvrdma RoCEv2 transport on the paired NIC's network (backend/roce*.c);
 * its wire codec is in roce_wire.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_PVRDMA_ROCE_H
#define HW_RDMA_PVRDMA_ROCE_H

#include "hw/rdma/pvrdma_core.h"

/*
 * Standard RoCEv2 (IBA transport in UDP 4791 over IPv4/IPv6) on the
 * Ethernet network of the paired NIC, as a RoCE NIC shares its port: the
 * device's own requester, responder and completer, for peers that are
 * neither on this device nor co-resident (Linux rxe, RoCE HCAs, another
 * pvrdma on another host).  It sends frames with the host's frame_tx
 * (PvrdmaHostOps); its host hands the transport every frame the network
 * delivers to the NIC with pvrdma_roce_rx() first.  NULL if the host has
 * no frame_tx.
 */
PvrdmaTransport *pvrdma_roce_new(PvrdmaCore *c);
/*
 * A frame from the network, before the NIC sees it.  true: a RoCEv2
 * frame for this device (taken: executed, or dropped and counted); false:
 * anything else, which the NIC receives as usual.
 */
bool pvrdma_roce_rx(PvrdmaTransport *t, const uint8_t *frame, size_t len);

/*
 * Counters (PvrdmaPathStats): the transport's, or one QP's (false: not a
 * RoCEv2 QP).
 */
void pvrdma_roce_stats(PvrdmaTransport *t, PvrdmaPathStats *s);
bool pvrdma_roce_qp_stats(PvrdmaTransport *t, const PvrdmaQP *qp,
                          PvrdmaPathStats *s);

#endif
