/*
 * pvrdma: memory keys.  Looks an MR up by its key (lkey == rkey), resolves
 * a range of a user, DMA or fast-registered MR into host memory, and a
 * WQE's SGEs through their lkeys (PD, access, range) into a scatter list;
 * for an inline send, finds the user MR that covers an SGE.
 *
 * Not here: creating and destroying MRs (pvrdma_cmd.c), the FAST_REG_MR and
 * LOCAL_INV work requests (pvrdma_req.c), rkey checks at the responder
 * (pvrdma_resp.c), mapping guest pages (pvrdma_mem.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef PVRDMA_STANDALONE
#include "qemu/osdep.h"
#endif
#include "hw/rdma/pvrdma_core.h"
#include "pvrdma_int.h"

PvrdmaMR *pvrdma_mr_by_key(PvrdmaCore *c, uint32_t key)
{
    PvrdmaMR *mr;

    if (c->owner) {
        /* the guest knows the owner's keys (never 0) */
        return key ? g_hash_table_lookup(c->owner_keys,
                                         GUINT_TO_POINTER(key)) : NULL;
    }
    mr = pvrdma_table_get(&c->mr, key >> 8);
    return mr && mr->key == key ? mr : NULL;
}

/* [va, va+len) lies inside the region of a user or fast-registered MR */
static bool mr_covers(const PvrdmaMR *mr, uint64_t va, uint64_t len)
{
    return va >= mr->iova && len <= mr->length &&
           va - mr->iova <= mr->length - len;
}

/* Resolve [va, va+len) of an MR into host memory. */
bool pvrdma_mr_resolve(PvrdmaCore *c, PvrdmaMR *mr, uint64_t va,
                       uint64_t len, bool is_write, PvrdmaSg *sg)
{
    if (!mr->valid) {
        return false;
    }
    if (mr->kind == PVRDMA_MR_DMA) {
        return pvrdma_gpa_to_sg(c, va, len, is_write, sg);
    }
    if (!mr_covers(mr, va, len)) {
        return false;
    }
    return pvrdma_map_to_sg(&mr->map, va - mr->base, len, sg);
}

/* The user MR of pd that covers [va, va+len), or NULL. */
static PvrdmaMR *user_mr_covering(PvrdmaCore *c, uint32_t pd, uint64_t va,
                                  uint32_t len)
{
    for (uint32_t h = 0; h < c->mr.size; h++) {
        PvrdmaMR *mr = c->mr.slot[h];

        if (mr && mr->pd == pd && mr->kind == PVRDMA_MR_USER && mr->valid &&
            mr_covers(mr, va, len)) {
            return mr;
        }
    }
    return NULL;
}

/*
 * A send posted with IBV_SEND_INLINE.  rdma-core's vmw_pvrdma provider has
 * no inline segment (the driver answers max_inline_data 0): it copies the
 * SGEs as given, and verbs ignores the lkey of an inline send, so programs
 * leave it 0 (rdma_xclient does).  The device can read user memory only
 * through a page list, so such an SGE is read through the user MR of the
 * QP's PD that covers it; an SGE that no MR covers fails as any bad SGE.
 */
void pvrdma_inline_sges(PvrdmaCore *c, const PvrdmaQP *qp, PvrdmaSendWqe *w)
{
    if (!(w->hdr.send_flags & PVRDMA_SEND_INLINE) || !w->sge_ok) {
        return;     /* a bad SGE count fails the WQE anyway */
    }
    for (uint32_t i = 0; i < w->hdr.num_sge; i++) {
        struct pvrdma_sge *s = &w->sge[i];
        PvrdmaMR *mr = pvrdma_mr_by_key(c, s->lkey);

        if (!s->length ||
            (mr && mr->pd == qp->pd && mr->kind == PVRDMA_MR_USER &&
             mr_covers(mr, s->addr, s->length))) {
            continue;
        }
        mr = user_mr_covering(c, qp->pd, s->addr, s->length);
        if (mr) {
            trace_pvrdma_inline_sge(qp->handle, i, s->lkey, mr->key);
            s->lkey = mr->key;
        }
    }
}

int pvrdma_transport_resolve(PvrdmaCore *c, uint32_t pd,
                             const struct pvrdma_sge *sge, uint32_t num_sge,
                             bool is_write, PvrdmaSg *sg)
{
    return pvrdma_resolve_sges(c, pd, sge, num_sge, is_write, sg);
}

/* Local scatter list through lkeys; returns a PVRDMA_WC_* status. */
int pvrdma_resolve_sges(PvrdmaCore *c, uint32_t pd,
                        const struct pvrdma_sge *s, uint32_t n,
                        bool is_write, PvrdmaSg *sg)
{
    for (uint32_t i = 0; i < n; i++) {
        PvrdmaMR *mr;

        if (!s[i].length) {
            continue;
        }
        mr = pvrdma_mr_by_key(c, s[i].lkey);
        if (!mr || mr->pd != pd ||
            (is_write && !(mr->access & PVRDMA_ACCESS_LOCAL_WRITE)) ||
            !pvrdma_mr_resolve(c, mr, s[i].addr, s[i].length, is_write,
                               sg)) {
            PVRDMA_GUEST_ERR(c, "sge %u: lkey 0x%x addr 0x%" PRIx64
                             " len %u refused", i, s[i].lkey, s[i].addr,
                             s[i].length);
            return PVRDMA_WC_LOC_PROT_ERR;
        }
    }
    if (sg->len > (1ull << 31)) {
        return PVRDMA_WC_LOC_LEN_ERR;
    }
    return PVRDMA_WC_SUCCESS;
}
