/*
 * What every pvrdma fuzz target and seed writer shares: reading operation
 * arguments from an input (little endian; missing bytes read as 0) and
 * appending them to a seed.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef PVRDMA_FUZZ_INPUT_H
#define PVRDMA_FUZZ_INPUT_H

#include <glib.h>
#include <stdint.h>

typedef struct Input {
    const uint8_t *p;
    size_t n;
} Input;

/* The next 'bytes' bytes of in as a little-endian number. */
static inline uint64_t get(Input *in, unsigned bytes)
{
    uint64_t v = 0;

    for (unsigned i = 0; i < bytes; i++) {
        if (in->n) {
            v |= (uint64_t)*in->p++ << (8 * i);
            in->n--;
        }
    }
    return v;
}

/* Seeds are written into b. */
static inline void seed_u8(GByteArray *b, uint8_t v)
{
    g_byte_array_append(b, &v, 1);
}

/* v as n little-endian bytes */
static inline void seed_le(GByteArray *b, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        seed_u8(b, v >> (8 * i));
    }
}

#endif
