/*
 * pvrdma: handle tables.  Handles are small integers in [first, size) that
 * the guest uses as array indices, so they must stay below the advertised
 * maximum.  Allocation is next-fit, which delays reuse of a freed handle.
 * Handles in [lo, first) are reserved: never allocated, only inserted by
 * number (the GSI QP is QP 1).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hw/rdma/pvrdma_core.h"

void pvrdma_table_init(PvrdmaTable *t, uint32_t size, uint32_t first)
{
    t->slot = g_new0(void *, size);
    t->size = size;
    t->first = first < size ? first : size;
    t->lo = t->first;
    t->next = t->first;
    t->used = 0;
}

void pvrdma_table_destroy(PvrdmaTable *t)
{
    g_free(t->slot);
    t->slot = NULL;
    t->size = t->used = 0;
}

uint32_t pvrdma_table_alloc(PvrdmaTable *t, void *obj)
{
    uint32_t span = t->size - t->first;
    uint32_t i;

    for (i = 0; i < span; i++) {
        uint32_t h = t->first + (t->next - t->first + i) % span;

        if (!t->slot[h]) {
            t->slot[h] = obj;
            t->used++;
            t->next = h + 1 < t->size ? h + 1 : t->first;
            return h;
        }
    }
    return UINT32_MAX;
}

void pvrdma_table_reserve(PvrdmaTable *t, uint32_t lo)
{
    t->lo = MIN(lo, t->first);
}

bool pvrdma_table_insert(PvrdmaTable *t, uint32_t handle, void *obj)
{
    if (handle < t->lo || handle >= t->size || t->slot[handle]) {
        return false;
    }
    t->slot[handle] = obj;
    t->used++;
    return true;
}

void *pvrdma_table_get(const PvrdmaTable *t, uint32_t handle)
{
    if (handle < t->lo || handle >= t->size) {
        return NULL;
    }
    return t->slot[handle];
}

void pvrdma_table_remove(PvrdmaTable *t, uint32_t handle)
{
    if (handle >= t->lo && handle < t->size && t->slot[handle]) {
        t->slot[handle] = NULL;
        t->used--;
    }
}
