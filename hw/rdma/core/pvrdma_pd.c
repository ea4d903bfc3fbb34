/*
 * pvrdma: user contexts and protection domains.  CREATE_UC, DESTROY_UC,
 * CREATE_PD, DESTROY_PD, their reference counts (the objects created in
 * a PD or context hold one), and the context of a PD.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_transport_calls.h"
#include "pvrdma_int.h"

uint32_t pvrdma_ctx_of_pd(PvrdmaCore *c, uint32_t pd)
{
    PvrdmaPD *p = pvrdma_table_get(&c->pd, pd);

    return p ? p->ctx : UINT32_MAX;
}

/* ctx 0 is the kernel; anything else must be a live user context. */
bool pvrdma_ctx_valid(PvrdmaCore *c, uint32_t ctx)
{
    return ctx == 0 || pvrdma_table_get(&c->uc, ctx);
}

void pvrdma_ctx_ref(PvrdmaCore *c, uint32_t ctx, int d)
{
    PvrdmaUC *uc = pvrdma_table_get(&c->uc, ctx);

    if (uc) {
        uc->refs += d;
    }
}

int pvrdma_cmd_create_uc(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                         union pvrdma_cmd_resp *rsp)
{
    uint64_t pfn = c->version >= PVRDMA_PPN64_VERSION ?
                   req->create_uc.pfn64 : req->create_uc.pfn;
    uint64_t base = c->ops->uar_base(c->opaque) / PVRDMA_PAGE_SIZE;
    PvrdmaUC *uc;
    uint32_t h;

    if (pfn <= base || pfn - base >= c->lim.max_uar) {
        /* page 0 belongs to the driver itself */
        return CMD_ERR(c, EINVAL, "CREATE_UC: pfn 0x%" PRIx64
                       " is not a user UAR page", pfn);
    }
    /* a context's handle is its UAR page index: one context per page */
    h = pfn - base;
    uc = g_new0(PvrdmaUC, 1);
    if (!pvrdma_table_insert(&c->uc, h, uc)) {
        g_free(uc);
        return CMD_ERR(c, EBUSY, "CREATE_UC: UAR page %u already in use", h);
    }
    uc->handle = h;
    rsp->create_uc_resp.ctx_handle = h;
    trace_pvrdma_create_uc(h);
    return 0;
}

void pvrdma_uc_free(PvrdmaCore *c, PvrdmaUC *uc)
{
    pvrdma_table_remove(&c->uc, uc->handle);
    g_free(uc);
}

int pvrdma_cmd_destroy_uc(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                          union pvrdma_cmd_resp *rsp)
{
    uint32_t h = req->destroy_uc.ctx_handle;
    PvrdmaUC *uc = pvrdma_table_get(&c->uc, h);

    if (!uc) {
        return CMD_ERR(c, EINVAL, "DESTROY_UC: bad handle %u", h);
    }
    if (uc->refs) {
        return CMD_ERR(c, EBUSY, "DESTROY_UC: context %u still has %u objects",
                       h, uc->refs);
    }
    pvrdma_uc_free(c, uc);
    trace_pvrdma_destroy_uc(h);
    return 0;
}

int pvrdma_cmd_create_pd(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                         union pvrdma_cmd_resp *rsp)
{
    uint32_t ctx = req->create_pd.ctx_handle;
    PvrdmaPD *pd;
    uint32_t h;
    int err;

    if (!pvrdma_ctx_valid(c, ctx)) {
        return CMD_ERR(c, EINVAL, "CREATE_PD: bad context %u", ctx);
    }
    pd = g_new0(PvrdmaPD, 1);
    h = pvrdma_table_alloc(&c->pd, pd);
    if (h == UINT32_MAX) {
        g_free(pd);
        return CMD_ERR(c, ENOMEM, "CREATE_PD: out of PDs");
    }
    pd->handle = h;
    pd->ctx = ctx;
    err = pvrdma_owner_pd_create(c, pd);
    if (err) {
        pvrdma_table_remove(&c->pd, h);
        g_free(pd);
        return CMD_ERR(c, -err, "CREATE_PD: host device: %s",
                       strerror(-err));
    }
    pvrdma_ctx_ref(c, ctx, 1);
    rsp->create_pd_resp.pd_handle = h;
    trace_pvrdma_create_pd(h, ctx);
    return 0;
}

void pvrdma_pd_free(PvrdmaCore *c, PvrdmaPD *pd)
{
    pvrdma_owner_pd_destroy(c, pd);
    pvrdma_ctx_ref(c, pd->ctx, -1);
    pvrdma_table_remove(&c->pd, pd->handle);
    g_free(pd);
}

int pvrdma_cmd_destroy_pd(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                          union pvrdma_cmd_resp *rsp)
{
    uint32_t h = req->destroy_pd.pd_handle;
    PvrdmaPD *pd = pvrdma_table_get(&c->pd, h);

    if (!pd) {
        return CMD_ERR(c, EINVAL, "DESTROY_PD: bad handle %u", h);
    }
    if (pd->refs) {
        return CMD_ERR(c, EBUSY, "DESTROY_PD: PD %u still has %u objects",
                       h, pd->refs);
    }
    pvrdma_pd_free(c, pd);
    trace_pvrdma_destroy_pd(h);
    return 0;
}

void pvrdma_pd_ref(PvrdmaCore *c, uint32_t pd, int d)
{
    PvrdmaPD *p = pvrdma_table_get(&c->pd, pd);

    if (p) {
        p->refs += d;
    }
}
