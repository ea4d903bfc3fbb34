/*
 * pvrdma: guest rings.  All index arithmetic and every access to a ring
 * element goes through here.  Geometry is checked once, when the ring is
 * mapped; afterwards an index is only ever used modulo nelems.  Copying a
 * WQE out of a send or receive ring (its header and at most the queue's
 * SGE count) is here too.
 *
 * Not here: checking that a guest producer index is at most N entries
 * ahead of the device's consumer index (the callers do: pvrdma_req.c,
 * pvrdma_resp.c, pvrdma_comp.c), what a WQE means.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hw/rdma/pvrdma_core.h"
#include "pvrdma_int.h"

bool pvrdma_ring_init(PvrdmaCore *c, PvrdmaRing *r, const char *name,
                      const uint64_t *pages, uint32_t npages,
                      uint32_t first_page, uint32_t state_off,
                      uint32_t nelems, uint32_t elem_size)
{
    uint64_t need;
    uint32_t i;

    memset(r, 0, sizeof(*r));
    r->name = name;
    if (!nelems || nelems > (1u << 24) || !pvrdma_is_pow2(elem_size) ||
        elem_size > PVRDMA_PAGE_SIZE || first_page >= npages ||
        state_off + sizeof(struct pvrdma_ring) > PVRDMA_PAGE_SIZE) {
        PVRDMA_GUEST_ERR(c, "%s ring: bad geometry (%u x %u bytes, %u pages)",
                         name, nelems, elem_size, npages);
        return false;
    }
    need = (uint64_t)nelems * elem_size;
    if (need > (uint64_t)(npages - first_page) * PVRDMA_PAGE_SIZE) {
        PVRDMA_GUEST_ERR(c, "%s ring: %u x %u bytes do not fit in %u pages",
                         name, nelems, elem_size, npages - first_page);
        return false;
    }
    r->page = g_new0(void *, npages);
    r->gpa = g_memdup2(pages, sizeof(uint64_t) * npages);
    r->npages = npages;
    for (i = 0; i < npages; i++) {
        uint64_t len = PVRDMA_PAGE_SIZE;

        if (pages[i] & (PVRDMA_PAGE_SIZE - 1)) {
            PVRDMA_GUEST_ERR(c, "%s ring: page %u address 0x%" PRIx64
                             " not page aligned", name, i, pages[i]);
            goto fail;
        }
        r->page[i] = c->ops->map(c->opaque, pages[i], &len, true);
        if (r->page[i] && len < PVRDMA_PAGE_SIZE) {
            c->ops->unmap(c->opaque, r->page[i], len, true);
            r->page[i] = NULL;
        }
        if (!r->page[i]) {
            PVRDMA_GUEST_ERR(c, "%s ring: page %u at 0x%" PRIx64
                             " is not RAM", name, i, pages[i]);
            goto fail;
        }
    }
    r->first_page = first_page;
    r->nelems = nelems;
    r->elem_size = elem_size;
    /* indices cycle through the low run of ones of 2N - 1 */
    r->period = 1;
    while ((((nelems << 1) - 1) & r->period) && r->period < (1u << 25)) {
        r->period <<= 1;
    }
    r->slots = r->period / 2;
    r->state = (struct pvrdma_ring *)((uint8_t *)r->page[0] + state_off);
    r->priv = 0;
    return true;

fail:
    pvrdma_ring_free(c, r);
    return false;
}

void pvrdma_ring_free(PvrdmaCore *c, PvrdmaRing *r)
{
    uint32_t i;

    if (r->page) {
        for (i = 0; i < r->npages; i++) {
            if (r->page[i]) {
                c->ops->unmap(c->opaque, r->page[i], PVRDMA_PAGE_SIZE, true);
            }
        }
        g_free(r->page);
    }
    g_free(r->gpa);
    memset(r, 0, sizeof(*r));
}

void *pvrdma_ring_elem(const PvrdmaRing *r, uint32_t idx)
{
    uint64_t off = (uint64_t)(idx & (r->nelems - 1)) * r->elem_size;
    uint64_t pg = r->first_page + off / PVRDMA_PAGE_SIZE;

    if (!r->page || pg >= r->npages) {
        return NULL;    /* unreachable after pvrdma_ring_init's checks */
    }
    return (uint8_t *)r->page[pg] + off % PVRDMA_PAGE_SIZE;
}

bool pvrdma_ring_guest_prod(const PvrdmaRing *r, uint32_t *prod)
{
    uint32_t v = qatomic_load_acquire(&r->state->prod_tail);

    /* in range, and at most nelems ahead of what the device consumed */
    if (v >= r->period || pvrdma_idx_used(v, r->priv, r->nelems) > r->nelems) {
        return false;
    }
    *prod = v;
    return true;
}

bool pvrdma_ring_guest_cons(const PvrdmaRing *r, uint32_t *cons)
{
    uint32_t v = qatomic_load_acquire(&r->state->cons_head);

    if (v >= r->period) {
        return false;
    }
    *cons = v;
    return true;
}

void pvrdma_ring_publish_cons(PvrdmaRing *r)
{
    qatomic_store_release(&r->state->cons_head, r->priv);
}

void pvrdma_ring_publish_prod(PvrdmaRing *r)
{
    qatomic_store_release(&r->state->prod_tail, r->priv);
}

void *pvrdma_ring_prod_slot(PvrdmaRing *r, bool *bad_index)
{
    uint32_t cons;

    *bad_index = false;
    if (!r->page) {
        return NULL;
    }
    if (!pvrdma_ring_guest_cons(r, &cons)) {
        *bad_index = true;
        return NULL;
    }
    if (((r->priv - cons) & (r->period - 1)) >= r->slots) {
        return NULL;    /* full */
    }
    return pvrdma_ring_elem(r, r->priv);
}

void pvrdma_ring_prod_advance(PvrdmaRing *r)
{
    r->priv = (r->priv + 1) & (r->period - 1);
}

void pvrdma_ring_prod_push(PvrdmaRing *r)
{
    pvrdma_ring_prod_advance(r);
    pvrdma_ring_publish_prod(r);
}

/*
 * The one copy-out of a WQE: its header and at most max_sge SGEs (the
 * ring's element holds no more); sge_ok says whether the guest's num_sge
 * fits, the one check of it.
 */
void pvrdma_fetch_send_wqe(const PvrdmaRing *r, uint32_t idx,
                           uint32_t max_sge, PvrdmaSendWqe *w)
{
    memcpy(w, pvrdma_ring_elem(r, idx),
           sizeof(w->hdr) + MIN(max_sge, PVRDMA_HARD_MAX_SGE) *
                            sizeof(w->sge[0]));
    w->sge_ok = w->hdr.num_sge <= max_sge;
}

void pvrdma_fetch_recv_wqe(const PvrdmaRing *r, uint32_t idx,
                           uint32_t max_sge, PvrdmaRecvWqe *w)
{
    memcpy(w, pvrdma_ring_elem(r, idx),
           sizeof(w->hdr) + MIN(max_sge, PVRDMA_HARD_MAX_SGE) *
                            sizeof(w->sge[0]));
    w->sge_ok = w->hdr.num_sge <= max_sge;
}

/* Ring geometry: a WQE's stride, the pages of n elements */

uint32_t pvrdma_wqe_stride(size_t hdr, uint32_t nsge)
{
    uint32_t sz = hdr + nsge * sizeof(struct pvrdma_sge);
    uint32_t p = 1;

    while (p < sz) {
        p <<= 1;
    }
    return p;
}

uint32_t pvrdma_ring_pages(uint32_t n, uint32_t stride)
{
    return ((uint64_t)n * stride + PVRDMA_PAGE_SIZE - 1) / PVRDMA_PAGE_SIZE;
}
