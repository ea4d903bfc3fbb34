/*
 * pvrdma: the migration stream's primitives.  Little-endian integers
 * appended to a GByteArray, and read back through a PvrdmaMigReader whose
 * every read is bounded by what is left (reading past the end fails the
 * reader; the first failure sticks and later reads give zeros).  Used by
 * the core's save and load (pvrdma_mig.c, pvrdma_mig_load.c) and the
 * transports' qp_save and qp_load.  A leaf: it calls nothing of the core.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_transport_calls.h"
#include "pvrdma_int.h"

void pvrdma_mig_put8(GByteArray *b, uint8_t v)
{
    g_byte_array_append(b, &v, 1);
}

void pvrdma_mig_put32(GByteArray *b, uint32_t v)
{
    v = cpu_to_le32(v);
    g_byte_array_append(b, (const uint8_t *)&v, 4);
}

void pvrdma_mig_put64(GByteArray *b, uint64_t v)
{
    v = cpu_to_le64(v);
    g_byte_array_append(b, (const uint8_t *)&v, 8);
}

bool pvrdma_mig_fail(PvrdmaMigReader *r, const char *fmt, ...)
{
    va_list ap;

    if (!r->err) {
        va_start(ap, fmt);
        r->err = g_strdup_vprintf(fmt, ap);
        va_end(ap);
    }
    r->left = 0;
    return false;
}

bool pvrdma_mig_take(PvrdmaMigReader *r, void *dst, size_t n)
{
    if (!n) {
        return !r->err;
    }
    if (r->err) {
        memset(dst, 0, n);
        return false;
    }
    if (r->left < n) {
        memset(dst, 0, n);
        return pvrdma_mig_fail(r, "stream truncated");
    }
    memcpy(dst, r->p, n);
    r->p += n;
    r->left -= n;
    return true;
}

uint8_t pvrdma_mig_get8(PvrdmaMigReader *r)
{
    uint8_t v;

    pvrdma_mig_take(r, &v, 1);
    return v;
}

uint32_t pvrdma_mig_get32(PvrdmaMigReader *r)
{
    uint32_t v;

    pvrdma_mig_take(r, &v, 4);
    return le32_to_cpu(v);
}

uint64_t pvrdma_mig_get64(PvrdmaMigReader *r)
{
    uint64_t v;

    pvrdma_mig_take(r, &v, 8);
    return le64_to_cpu(v);
}
