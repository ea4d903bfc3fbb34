/*
 * pvrdma: the core's state for migration as plain records.
 *
 * The save fills a PvrdmaMigImage from the core (pvrdma_mig.c); the QOM
 * glue describes the image with VMState (pvrdma_dev_mig.c), so the stream
 * has named fields, subsections and QEMU's versioning; the load hands the
 * image back (pvrdma_mig_load.c), which rebuilds the core by replaying the
 * guest's commands and checks every record as guest input.  While the
 * stream is read only the counts are checked, against the bounds below and
 * the tables' sizes, before what they announce is allocated.
 *
 * The stream of older builds (one opaque field, PVRDMA_MIG_VERSION 2) is
 * the same image serialized by pvrdma_core_save() and parsed by
 * pvrdma_core_load() (pvrdma_mig_blob.c): the device property
 * x-state-blob=on writes and reads it, for a migration to or from such a
 * build.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_PVRDMA_MIG_H
#define HW_RDMA_PVRDMA_MIG_H

#include "hw/rdma/pvrdma_core.h"

#define PVRDMA_MIG_IMAGE_MAGIC  0x5056494du     /* "PVIM" big-endian */
#define PVRDMA_MIG_NLIMITS      14
#define PVRDMA_MIG_NCURSORS     5              /* PD, MR, CQ, QP, SRQ */
#define PVRDMA_MIG_TP_NAME_MAX  32
/* A transport's state of one QP: far more than any writes (a few KiB) */
#define PVRDMA_MIG_TP_STATE_MAX (16u << 20)
/* Guest pages named in an image: 1 GiB of page addresses */
#define PVRDMA_MIG_PAGES_MAX    (1u << 27)

/*
 * Every object's guest pages are one pool, pvrdma/state's "pages"; an
 * object names its run (page0, npages) in it.  So the records are flat:
 * QEMU compresses the description of an array of such records, and the
 * stream names each page list once.
 */
typedef struct PvrdmaMigGid {
    uint8_t type;               /* 0: the entry is empty */
    uint8_t gid[16];
} PvrdmaMigGid;

typedef struct PvrdmaMigHandle {
    uint32_t handle;            /* a context (UAR page index) */
} PvrdmaMigHandle;

typedef struct PvrdmaMigPD {
    uint32_t handle, ctx;
} PvrdmaMigPD;

typedef struct PvrdmaMigCQ {
    uint32_t handle, ctx, cqe;
    uint32_t page0, npages, priv;   /* its ring, the device's index */
    uint8_t armed, error;
} PvrdmaMigCQ;

typedef struct PvrdmaMigMR {
    uint32_t handle, pd, kind, access, key;
    uint8_t valid;
    uint64_t iova, length;
    uint32_t max_pages;
    uint64_t page_size;
    uint32_t page0, npages;
} PvrdmaMigMR;

typedef struct PvrdmaMigSRQ {
    uint32_t handle, pd, max_wr, max_sge, limit;
    uint32_t page0, npages, priv;
} PvrdmaMigSRQ;

typedef struct PvrdmaMigQP {
    /* what CREATE_QP gave */
    uint32_t handle;
    uint8_t type, is_srq, sq_sig_all;
    uint32_t pd, scq, rcq, srq;
    uint32_t max_send_wr, max_recv_wr, max_send_sge, max_recv_sge;
    uint32_t send_chunks;
    uint32_t page0, npages;     /* every page of the QP: SQ, then RQ */
    /* where it is */
    uint8_t state;
    uint8_t attr[sizeof(struct pvrdma_qp_attr)];    /* the ABI's layout */
    uint32_t sq_priv, sq_head, rq_priv;
    uint8_t sq_failed, comm_est;
    uint32_t events;
    uint64_t hold;              /* held completion: ms left, 0 none, ~0 never */
    uint32_t nslots;            /* its send slots in the image's "slots" */
    uint8_t has_tp;             /* its record in the image's "tp" */
} PvrdmaMigQP;

/* A send WQE executed and not yet completed, of QP qp */
typedef struct PvrdmaMigSlot {
    uint32_t qp;
    uint64_t wr_id;
    uint32_t opcode, byte_len;
    int32_t status;
    uint8_t signaled, held;
} PvrdmaMigSlot;

/* A QP's connection state, as its transport handed it over (qp_save) */
typedef struct PvrdmaMigTp {
    uint32_t qp;
    uint8_t name[PVRDMA_MIG_TP_NAME_MAX + 1];
    uint32_t len;
    uint8_t *state;
} PvrdmaMigTp;

typedef struct PvrdmaMigImage {
    PvrdmaCore *core;           /* not migrated: whose image this is */
    bool loading;               /* not migrated: a stream is read into it */
    uint32_t magic;
    /* the device's configuration, each must be the destination's */
    uint32_t limits[PVRDMA_MIG_NLIMITS];
    uint64_t max_mr_size;
    uint8_t roce_version;
    /* registers */
    uint64_t dsr_gpa;
    uint32_t err, icr, imr;
    uint8_t dsr_set, active, port_down;
    uint32_t version;
    uint64_t guest_errors, commands, doorbells;
    /* the page pool */
    uint32_t npages;
    uint64_t *pages;
    /* an active device's DSR copy (a subsection) */
    uint64_t cmd_gpa, resp_gpa, uar_pfn;
    uint32_t async_page0, async_npages, async_priv;
    uint32_t cqn_page0, cqn_npages, cqn_priv;
    /* objects, in the order they are created again */
    int32_t ngid, nuc, npd, ncq, nmr, nsrq, nqp;
    PvrdmaMigGid *gid;
    PvrdmaMigHandle *uc;
    PvrdmaMigPD *pd;
    PvrdmaMigCQ *cq;
    PvrdmaMigMR *mr;
    PvrdmaMigSRQ *srq;
    PvrdmaMigQP *qp;
    /* the tables' next-fit cursors (PD, MR, CQ, QP, SRQ) */
    uint32_t cursor[PVRDMA_MIG_NCURSORS];
    /* in flight (a subsection): every QP's send slots, in QP order */
    int32_t nslots;
    PvrdmaMigSlot *slots;
    /* transports' state (a subsection): in QP order */
    int32_t ntp;
    PvrdmaMigTp *tp;
} PvrdmaMigImage;

/*
 * pvrdma_mig_image_save(): the core's state into img (cleared first; the
 * caller has checked pvrdma_core_migration_blocker()).
 * pvrdma_mig_image_load(): reset the core and rebuild it from img, as
 * untrusted as guest input; false with errp set and the core reset if
 * anything is wrong.  pvrdma_mig_image_clear(): free what the
 * image holds (img->core stays).
 */
void pvrdma_mig_image_save(PvrdmaCore *c, PvrdmaMigImage *img);
bool pvrdma_mig_image_load(PvrdmaCore *c, const PvrdmaMigImage *img,
                           Error **errp);
void pvrdma_mig_image_clear(PvrdmaMigImage *img);

/*
 * The core's own (pvrdma_mig.c, pvrdma_mig_blob.c): what a save or a
 * blob's parse collects besides an image's records, the page pool, the
 * send slots and the transport records, given to the image at the end
 * (pvrdma_mig_pools_give(), even after a failed parse).
 */
typedef struct PvrdmaMigPools {
    GArray *pages, *slots, *tp;
} PvrdmaMigPools;
void pvrdma_mig_pools_init(PvrdmaMigPools *p);
void pvrdma_mig_pools_give(PvrdmaMigPools *p, PvrdmaMigImage *m);

#endif
