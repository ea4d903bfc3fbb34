/*
 * pvrdma co-resident transport, the rings: two single-producer,
 * single-consumer rings of records in memory both peers map, one per
 * direction (the wire header says the layout and the protocol).  A leaf:
 * it knows memory and indexes, not peers or messages.
 *
 * The peer writes the shared memory whenever it likes.  So our own
 * indexes are kept here in private memory and only published; what we
 * read of its indexes and records is read once, checked, and copied out
 * before anybody looks at it.  An index that cannot be (a ring fuller
 * than its size, a record longer than what was published) makes the call
 * fail, and the caller drops the peer.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include <sys/mman.h>
#include <sys/stat.h>
#include "qapi/error.h"
#include "qemu/memfd.h"
#include "coresident_int.h"

#define CR_REC_HDR      8u      /* u32 length, u32 zero */

struct CrRing {
    uint8_t *shm;           /* CR_RING_SHM_SIZE(size) bytes, shared */
    uint32_t size;          /* of each ring: a power of 2 */
    int fd;                 /* the creator's memfd until RING took it */
    CrRingIdx *tx, *rx;     /* the direction we produce into, consume */
    uint8_t *tx_data, *rx_data;
    uint64_t prod;          /* ours: what we published into tx */
    uint64_t cons;          /* ours: what we took from rx */
    uint32_t wakes;         /* WAKEs we sent for tx */
    uint32_t woken;         /* WAKEs we took for rx */
};

static CrRing *cr_ring_at(uint8_t *shm, uint32_t size, int fd,
                          unsigned role)
{
    CrRing *r = g_new0(CrRing, 1);
    CrRingShm *s = (CrRingShm *)shm;

    r->shm = shm;
    r->size = size;
    r->fd = fd;
    r->tx = &s->idx[role];
    r->rx = &s->idx[!role];
    r->tx_data = shm + CR_RING_DATA(role, size);
    r->rx_data = shm + CR_RING_DATA(!role, size);
    return r;
}

/*
 * The side that connected: new ring memory for two rings of size bytes
 * (cr_ring_size_ok()), sealed against resizing.
 */
CrRing *cr_ring_create(uint32_t size, Error **errp)
{
    ERRP_GUARD();
    int fd = qemu_memfd_create("pvrdma-coresident-ring",
                               CR_RING_SHM_SIZE(size), false, 0,
                               F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL,
                               errp);
    void *shm;

    if (fd < 0) {
        error_prepend(errp, "ring memory: ");
        return NULL;
    }
    shm = mmap(NULL, CR_RING_SHM_SIZE(size), PROT_READ | PROT_WRITE,
               MAP_SHARED, fd, 0);
    if (shm == MAP_FAILED) {
        error_setg_errno(errp, errno, "mmap of the ring memory");
        close(fd);
        return NULL;
    }
    return cr_ring_at(shm, size, fd, 0);
}

/*
 * The side that accepted: the peer's ring memory (RING).  It must be the
 * size we expect and sealed against shrinking (pvrdma_fd_sealed()).
 */
CrRing *cr_ring_map(int fd, uint32_t ring_size, Error **errp)
{
    struct stat st;
    void *shm;

    if (!cr_ring_size_ok(ring_size) || !pvrdma_fd_sealed(fd) ||
        fstat(fd, &st) || st.st_size != CR_RING_SHM_SIZE(ring_size)) {
        error_setg(errp, "its ring memory is not what RING says or not "
                   "sealed");
        return NULL;
    }
    shm = mmap(NULL, CR_RING_SHM_SIZE(ring_size), PROT_READ | PROT_WRITE,
               MAP_SHARED, fd, 0);
    if (shm == MAP_FAILED) {
        error_setg_errno(errp, errno, "mmap of its ring memory");
        return NULL;
    }
    return cr_ring_at(shm, ring_size, -1, 1);
}

/* Its size, for RING; the records it holds at most. */
uint32_t cr_ring_size(const CrRing *r)
{
    return r->size;
}

/* The memory to send in RING (the creator's, until it is sent); -1. */
int cr_ring_fd(CrRing *r)
{
    return r->fd;
}

void cr_ring_close_fd(CrRing *r)
{
    if (r->fd >= 0) {
        close(r->fd);
        r->fd = -1;
    }
}

void cr_ring_free(CrRing *r)
{
    if (r) {
        cr_ring_close_fd(r);
        munmap(r->shm, CR_RING_SHM_SIZE(r->size));
        g_free(r);
    }
}

static void cr_ring_write(CrRing *r, uint64_t pos, const void *buf,
                          uint32_t n)
{
    uint8_t *data = r->tx_data;
    uint32_t off = pos & (r->size - 1);
    uint32_t first = MIN(n, r->size - off);

    memcpy(data + off, buf, first);
    memcpy(data, (const uint8_t *)buf + first, n - first);
}

static void cr_ring_read(CrRing *r, uint64_t pos, void *buf, uint32_t n)
{
    const uint8_t *data = r->rx_data;
    uint32_t off = pos & (r->size - 1);
    uint32_t first = MIN(n, r->size - off);

    memcpy(buf, data + off, first);
    memcpy((uint8_t *)buf + first, data, n - first);
}

static uint32_t cr_rec_size(uint32_t len)
{
    return CR_REC_HDR + ROUND_UP(len, 8);
}

/* Bytes free in tx; -1 if the consumer's index cannot be. */
static int64_t cr_ring_room(CrRing *r)
{
    uint64_t cons = qatomic_load_acquire(&r->tx->cons);
    uint64_t used = r->prod - cons;

    if (used > r->size || (cons & 7)) {
        return -1;
    }
    return r->size - used;
}

/*
 * Publish one record of len bytes (1 <= len <= CR_MAX_MSG): 1 when it is
 * in, 0 when there is no room (nothing written), -1 when the consumer's
 * index cannot be.
 */
int cr_ring_put(CrRing *r, const void *buf, uint32_t len)
{
    uint32_t hdr[2] = { len, 0 };
    int64_t room = cr_ring_room(r);

    if (room < 0) {
        return -1;
    }
    if (cr_rec_size(len) > room) {
        return 0;
    }
    cr_ring_write(r, r->prod, hdr, sizeof(hdr));
    cr_ring_write(r, r->prod + CR_REC_HDR, buf, len);
    r->prod += cr_rec_size(len);
    qatomic_store_release(&r->tx->prod, r->prod);
    return 1;
}

/*
 * After a put: the consumer does not poll and no WAKE of ours waits for
 * it, so it must get one (counted here: send it).
 */
bool cr_ring_needs_wake(CrRing *r)
{
    smp_mb();    /* our prod before its flags: cr_ring_awake() */
    if (qatomic_load_acquire(&r->tx->polling) ||
        qatomic_load_acquire(&r->tx->woken) != r->wakes) {
        return false;
    }
    r->wakes++;
    return true;
}

/* A WAKE of the producer's came: the take it starts is counted. */
void cr_ring_took_wake(CrRing *r)
{
    r->woken++;
}

/*
 * No room for len bytes: ask the consumer for ROOM when it took some.
 * True if there is room after all (it took some meanwhile); -1 room
 * counts as room, for the next put to fail.
 */
bool cr_ring_wait_space(CrRing *r, uint32_t len)
{
    int64_t room;

    qatomic_store_release(&r->tx->want_space, 1);
    smp_mb();    /* the flag before its index: cr_ring_space_wanted */
    room = cr_ring_room(r);
    return room < 0 || cr_rec_size(len) <= room;
}

/*
 * Take one record into buf (cap bytes): its length, 0 if the ring is
 * empty, -1 if the producer's index or the record cannot be.
 */
int cr_ring_get(CrRing *r, void *buf, uint32_t cap)
{
    uint64_t prod = qatomic_load_acquire(&r->rx->prod);
    uint64_t avail = prod - r->cons;
    uint32_t hdr[2];

    if (!avail) {
        return 0;
    }
    if (avail > r->size || (avail & 7)) {
        return -1;
    }
    cr_ring_read(r, r->cons, hdr, sizeof(hdr));
    if (!hdr[0] || hdr[0] > cap || cr_rec_size(hdr[0]) > avail) {
        return -1;
    }
    cr_ring_read(r, r->cons + CR_REC_HDR, buf, hdr[0]);
    r->cons += cr_rec_size(hdr[0]);
    qatomic_store_release(&r->rx->cons, r->cons);
    return hdr[0];
}

/* Something to take (polling: reads the shared memory only). */
bool cr_ring_ready(const CrRing *r)
{
    return qatomic_load_acquire(&r->rx->prod) != r->cons;
}

/*
 * Going to sleep: from now on the producer WAKEs us.  False if a record
 * came in meanwhile (take it before sleeping).
 */
bool cr_ring_sleep(CrRing *r)
{
    qatomic_store_release(&r->rx->polling, 0);
    smp_mb();    /* the flag before its index: cr_ring_needs_wake */
    return !cr_ring_ready(r);
}

/*
 * Polling (or taking): the producer need not WAKE us; and the WAKEs
 * taken so far are taken now.  The flags before its index.
 */
void cr_ring_awake(CrRing *r)
{
    qatomic_store_release(&r->rx->polling, 1);
    qatomic_store_release(&r->rx->woken, r->woken);
    smp_mb();    /* the flags before its index: cr_ring_needs_wake */
}

/* We took records: true if the producer waits for room (ROOM it). */
bool cr_ring_space_wanted(CrRing *r)
{
    smp_mb();    /* our cons before its flag: cr_ring_wait_space */
    if (!qatomic_load_acquire(&r->rx->want_space)) {
        return false;
    }
    qatomic_store_release(&r->rx->want_space, 0);
    return true;
}
