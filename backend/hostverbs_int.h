/*
 * pvrdma host HCA transport: what its files share.
 *
 * The transport (hostverbs.c says what it does) is split in two:
 *   hostverbs.c      the transport's hooks table and its constructor, the
 *                    host device and its port, the transport choice
 *                    (reaches), the host's events: completions from the
 *                    completion channel, async events, the device going
 *                    away
 *   hostverbs_obj.c  the host twins of the guest's objects: PDs and their
 *                    address handles, CQs, SRQs, QPs (create, modify,
 *                    destroy, post); the host GID index of a guest GID
 *   hostverbs_mr.c   the host twins of the guest's MRs: over guest RAM
 *                    (remapped when in several runs), DMA, and
 *                    fast-registration MRs (type 2 memory windows, bound
 *                    at FAST_REG_MR on the guest's QP)
 * Calls between them go one way: hostverbs.c calls hostverbs_obj.c (the
 * object hooks in its table, the GID cache's hash functions) and
 * hostverbs_mr.c (the MR hooks, remote invalidation); hostverbs_obj.c
 * calls hostverbs_mr.c (an FRMR's work requests, lkeys, a QP going), never
 * the other way round.
 *
 * Owns the types both use and the functions hostverbs.c takes from
 * hostverbs_obj.c.  Only these files include it; the transport's API, for
 * the device, is in include/hw/rdma/pvrdma_hostverbs.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_BACKEND_HOSTVERBS_INT_H
#define HW_RDMA_BACKEND_HOSTVERBS_INT_H

#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_hostverbs.h"
#include "hw/rdma/pvrdma_transport_calls.h"

#include <infiniband/verbs.h>
#include <net/if.h>

typedef struct HvDev {
    PvrdmaTransport t;          /* first member */
    struct ibv_context *ctx;
    struct ibv_comp_channel *chan;
    char name[IBV_SYSFS_NAME_MAX];
    char netdev[IF_NAMESIZE];   /* of the port's GID (empty: unknown) */
    uint8_t port;
    int gid_index;              /* forced host GID index, or -1 */
    enum ibv_mtu active_mtu;
    int gid_tbl_len;            /* of the port: fixed by the device */
    PvrdmaShmRegion *regions;
    unsigned nregions;
    GHashTable *qps;            /* host qp_num -> PvrdmaQP */
    GHashTable *warned;         /* GIDs already reported as missing */
    GHashTable *gid_idx;        /* HvGidKey -> host GID index + 1 (found) */
    /* FRMRs (PvrdmaMR) by their memory window's rkey >> 8 */
    GHashTable *frmrs;
    bool mw2;                   /* type 2 memory windows: FRMRs */
    uint32_t max_qp_wr;         /* of the device */
    bool rxe;                   /* it is Linux soft-RoCE (wc_with_inv()) */
    bool gone;                  /* its event files failed: not watched */
} HvDev;

typedef struct HvPD {
    struct ibv_pd *pd;
    GHashTable *ah;             /* HvAhKey -> struct ibv_ah */
    /* a window of the PD is bound over it to be invalidated (hv_local_inv) */
    struct ibv_mr *spare;
    uint8_t spare_buf[64];
} HvPD;

typedef struct HvCQ {
    struct ibv_cq *cq;
    PvrdmaCQ *gcq;
} HvCQ;

static inline HvDev *hv(PvrdmaTransport *h)
{
    return (HvDev *)h;      /* t is the first member */
}

/* The host twin of guest PD handle, or NULL */
static inline HvPD *pd_of(PvrdmaTransport *h, uint32_t handle)
{
    PvrdmaPD *pd = pvrdma_table_get(&h->core->pd, handle);

    return pd ? pd->twin : NULL;
}

/* The peer invalidated rkey with a SEND (a receive completion said so). */
void hv_frmr_remote_inv(HvDev *d, uint32_t rkey);

/* hostverbs_obj.c: the host twins of the guest's objects */

/* The GID cache's (d->gid_idx) hash and equality of its keys. */
guint hv_gid_key_hash(gconstpointer k);
gboolean hv_gid_key_equal(gconstpointer a, gconstpointer b);

/* The transport's object hooks (PvrdmaTransportOps) */
int hv_pd_create(PvrdmaTransport *h, PvrdmaPD *pd);
void hv_pd_destroy(PvrdmaTransport *h, PvrdmaPD *pd);

/* hostverbs_mr.c: MRs (hooks), and FRMRs for hostverbs_obj.c's QPs */
int hv_mr_create(PvrdmaTransport *h, PvrdmaMR *mr, uint32_t *lkey,
                 uint32_t *rkey);
void hv_mr_destroy(PvrdmaTransport *h, PvrdmaMR *mr);
/* FAST_REG_MR and LOCAL_INV of s->mr on qp (send flags: the host's) */
int hv_fast_reg(HvDev *d, PvrdmaQP *qp, const PvrdmaSendWr *s,
                unsigned flags);
int hv_local_inv(HvDev *d, PvrdmaQP *qp, const PvrdmaSendWr *s,
                 unsigned flags);
/* An SGE's lkey for the host: an FRMR's becomes its registration's */
uint32_t hv_sge_lkey(HvDev *d, uint32_t lkey);
/* Host QP q is about to be destroyed: no window may stay bound on it */
void hv_frmr_unbind_qp(HvDev *d, struct ibv_qp *q);
int hv_cq_create(PvrdmaTransport *h, PvrdmaCQ *cq, uint32_t cqe);
void hv_cq_destroy(PvrdmaTransport *h, PvrdmaCQ *cq);
int hv_srq_create(PvrdmaTransport *h, PvrdmaSRQ *srq);
int hv_srq_modify(PvrdmaTransport *h, PvrdmaSRQ *srq, uint32_t mask,
                  uint32_t limit);
void hv_srq_destroy(PvrdmaTransport *h, PvrdmaSRQ *srq);
int hv_qp_create(PvrdmaTransport *h, PvrdmaQP *qp);
int hv_qp_modify(PvrdmaTransport *h, PvrdmaQP *qp, uint32_t mask,
                 const struct pvrdma_qp_attr *a);
int hv_qp_state(PvrdmaTransport *h, PvrdmaQP *qp);
void hv_qp_destroy(PvrdmaTransport *h, PvrdmaQP *qp);
int hv_post_send(PvrdmaTransport *h, PvrdmaQP *qp, const PvrdmaSendWr *s);
int hv_post_recv(PvrdmaTransport *h, PvrdmaQP *qp, PvrdmaSRQ *srq,
                 uint64_t wr_id, const struct pvrdma_sge *s,
                 uint32_t num_sge);

#endif
