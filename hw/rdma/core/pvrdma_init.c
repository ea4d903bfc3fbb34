/*
 * pvrdma: the core as a whole.  Its limits (defaults, and the checks made
 * before a device is built), init, fini (which destroys the transports
 * after the reset) and reset, and the port's link changes (PORT_ERR /
 * PORT_ACTIVE when the link of the paired NIC changes).
 *
 * Not here: registers and activation (pvrdma_regs.c), freeing the guest's
 * objects (pvrdma_destroy_all() in pvrdma_cmd.c), the transport list
 * (pvrdma_transport.c), any transport: the core knows none (backend/, added
 * by the QOM glue pvrdma.c and the test harnesses).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_transport_calls.h"
#include "pvrdma_int.h"

void pvrdma_limits_default(PvrdmaLimits *l)
{
    *l = (PvrdmaLimits) {
        .max_qp = PVRDMA_DEF_MAX_QP,
        .max_qp_wr = PVRDMA_DEF_MAX_QP_WR,
        .max_sge = PVRDMA_DEF_MAX_SGE,
        .max_cq = PVRDMA_DEF_MAX_CQ,
        .max_cqe = PVRDMA_DEF_MAX_CQE,
        .max_mr = PVRDMA_DEF_MAX_MR,
        .max_pd = PVRDMA_DEF_MAX_PD,
        .max_ah = PVRDMA_DEF_MAX_AH,
        .max_srq = PVRDMA_DEF_MAX_SRQ,
        .max_srq_wr = PVRDMA_DEF_MAX_SRQ_WR,
        .max_srq_sge = PVRDMA_DEF_MAX_SRQ_SGE,
        .max_uar = PVRDMA_DEF_MAX_UAR,
        .gid_tbl_len = PVRDMA_DEF_GID_TBL_LEN,
        .max_qp_rd_atom = PVRDMA_DEF_MAX_RD_ATOM,
        .max_mr_size = PVRDMA_DEF_MAX_MR_SIZE,
        .roce_version = 2,
        .version = PVRDMA_VERSION,
    };
}

const char *pvrdma_limits_check(const PvrdmaLimits *l)
{
    if (l->max_qp < 4 || l->max_qp > PVRDMA_HARD_MAX_QP) {
        return "max-qp must be between 4 and 65536";
    }
    if (!pvrdma_is_pow2(l->max_qp_wr) || l->max_qp_wr > PVRDMA_HARD_MAX_QP_WR) {
        return "max-qp-wr must be a power of two up to 32768";
    }
    if (l->max_sge < 1 || l->max_sge > PVRDMA_HARD_MAX_SGE) {
        return "max-sge must be between 1 and 32";
    }
    if (l->max_cq < 2 || l->max_cq > PVRDMA_HARD_MAX_CQ) {
        return "max-cq must be between 2 and 65536";
    }
    if (!pvrdma_is_pow2(l->max_cqe) || l->max_cqe > PVRDMA_HARD_MAX_CQE) {
        return "max-cqe must be a power of two up to 1048576";
    }
    if (l->max_mr < 2 || l->max_mr > PVRDMA_HARD_MAX_MR) {
        return "max-mr must be between 2 and 1048576";
    }
    if (l->max_pd < 2 || l->max_pd > PVRDMA_HARD_MAX_PD) {
        return "max-pd must be between 2 and 65536";
    }
    if (l->max_srq > PVRDMA_HARD_MAX_SRQ || l->max_srq == 1) {
        return "max-srq must be 0 (no SRQs) or between 2 and 65536";
    }
    if (!pvrdma_is_pow2(l->max_srq_wr) ||
        l->max_srq_wr > PVRDMA_HARD_MAX_QP_WR) {
        return "max-srq-wr must be a power of two up to 32768";
    }
    if (l->max_srq_sge < 1 || l->max_srq_sge > PVRDMA_HARD_MAX_SGE) {
        return "max-srq-sge must be between 1 and 32";
    }
    if (!pvrdma_is_pow2(l->max_uar) || l->max_uar < 2 ||
        l->max_uar > PVRDMA_HARD_MAX_UAR) {
        return "max-uar must be a power of two between 2 and 4096";
    }
    if (l->gid_tbl_len < 1 || l->gid_tbl_len > PVRDMA_HARD_GID_TBL_LEN) {
        return "gid-table-len must be between 1 and 256";
    }
    if (l->max_mr_size < PVRDMA_PAGE_SIZE ||
        l->max_mr_size >
        (uint64_t)PVRDMA_PAGE_DIR_MAX_PAGES * PVRDMA_PAGE_SIZE) {
        return "max-mr-size must be between 4 KiB and 1 GiB";
    }
    if (l->roce_version != 1 && l->roce_version != 2) {
        return "roce-version must be 1 or 2";
    }
    if (l->version < PVRDMA_ROCEV1_VERSION || l->version > PVRDMA_VERSION) {
        return "version must be between 17 and 20";
    }
    if (l->version < PVRDMA_ROCEV2_VERSION && l->roce_version != 1) {
        return "version 17 has RoCE v1 GIDs only: add roce-version=1";
    }
    if (l->max_qp_rd_atom < 1 || l->max_qp_rd_atom > 255) {
        return "max-rd-atomic must be between 1 and 255";
    }
    return NULL;
}

void pvrdma_core_init(PvrdmaCore *c, const PvrdmaHostOps *ops, void *opaque,
                      const PvrdmaLimits *lim)
{
    memset(c, 0, sizeof(*c));
    c->ops = ops;
    c->opaque = opaque;
    c->lim = *lim;
    c->imr = ~0u;
    c->run_bytes = PVRDMA_RUN_BYTES;
    /* handle 0 is never valid: it catches uninitialised guest fields */
    pvrdma_table_init(&c->uc, lim->max_uar, 1);
    pvrdma_table_init(&c->pd, lim->max_pd, 1);
    pvrdma_table_init(&c->mr, lim->max_mr, 1);
    pvrdma_table_init(&c->cq, lim->max_cq, 1);
    pvrdma_table_init(&c->qp, lim->max_qp, PVRDMA_GSI_QPN + 1);
    pvrdma_table_reserve(&c->qp, PVRDMA_GSI_QPN);
    pvrdma_table_init(&c->srq, MAX(lim->max_srq, 1), 1);
    c->owner_qpns = g_hash_table_new(NULL, NULL);
    c->owner_keys = g_hash_table_new(NULL, NULL);
    c->owner_frmrs = g_hash_table_new(NULL, NULL);
    c->gid = g_new0(PvrdmaGid, lim->gid_tbl_len);
    c->batched_cqs = g_array_new(false, false, sizeof(uint32_t));
}

static void core_reset(PvrdmaCore *c)
{
    trace_pvrdma_reset();
    pvrdma_destroy_all(c);
    pvrdma_ring_free(c, &c->async_ring);
    pvrdma_ring_free(c, &c->cqn_ring);
    memset(c->gid, 0, sizeof(PvrdmaGid) * c->lim.gid_tbl_len);
    pvrdma_gids_changed(c);
    c->dsr_gpa = 0;
    c->err = 0;
    c->icr = 0;
    c->imr = ~0u;
    c->dsr_set = false;
    c->active = false;
    c->version = 0;
    c->cmd_gpa = c->resp_gpa = c->uar_pfn = 0;
    c->resp_held = false;   /* injections themselves stay */
    c->cmd_waits = false;   /* the guest gets no response any more */
}

/* The guest's device reset: its memory is free once this returns. */
void pvrdma_core_reset(PvrdmaCore *c)
{
    pvrdma_qp_fence(c, PVRDMA_FENCE_ALL, PVRDMA_FENCE_MS);
    core_reset(c);
}

bool pvrdma_core_quiesce(PvrdmaCore *c, unsigned timeout_ms)
{
    bool ok = pvrdma_transports_quiesce(c, timeout_ms);

    pvrdma_seg_finish(c);   /* no message stays half-way in the saved state */
    pvrdma_cmd_wait_check(c, true);     /* its response before the save */
    c->paused = true;
    return ok;
}

void pvrdma_core_fini(PvrdmaCore *c)
{
    core_reset(c);      /* no fence: nothing runs in the guest any more */
    pvrdma_transports_destroy(c);   /* after reset freed the owner's twins */
    pvrdma_table_destroy(&c->uc);
    pvrdma_table_destroy(&c->pd);
    pvrdma_table_destroy(&c->mr);
    pvrdma_table_destroy(&c->cq);
    pvrdma_table_destroy(&c->qp);
    pvrdma_table_destroy(&c->srq);
    g_hash_table_destroy(c->owner_qpns);
    g_hash_table_destroy(c->owner_keys);
    g_hash_table_destroy(c->owner_frmrs);
    g_free(c->gid);
    c->gid = NULL;
    g_array_free(c->batched_cqs, true);
    c->batched_cqs = NULL;
}
