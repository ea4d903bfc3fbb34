/*
 * Fake host for the pvrdma core unit tests: guest RAM is a malloc'd arena
 * (or a memfd, for the co-resident transport), interrupts, kicks and the
 * clock are recorded / controlled by the tests.  A tiny poll() loop serves
 * the fd handlers the co-resident transport registers and runs the core
 * when it asked to be kicked.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef PVRDMA_UNIT_FAKE_HOST_H
#define PVRDMA_UNIT_FAKE_HOST_H

#include "qemu/thread.h"
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_transport_calls.h"

#define FH_RAM_BASE     0x100000ull
#define FH_RAM_SIZE     (64ull << 20)
#define FH_UAR_BASE     0xfe000000ull
#define FH_PAGE         PVRDMA_PAGE_SIZE

typedef struct FhMapping {
    void *host;
    uint64_t len;
    bool is_write;
} FhMapping;

/* An fd handler registered through PvrdmaHostOps.set_fd_handler. */
typedef struct FhWatch {
    int fd;
    void (*read)(void *);
    void (*write)(void *);
    void *arg;
} FhWatch;

typedef struct FakeHost {
    uint8_t *ram;
    uint64_t base, size;
    int memfd;              /* RAM is a MAP_SHARED memfd; -1: malloc'd */
    bool ram_borrowed;      /* RAM is the caller's (fh_init_ram) */
    /* MMIO hole inside the RAM range: neither mappable nor DMA-able */
    uint64_t hole_start, hole_len;
    /* if non-zero, a single map never crosses a multiple of this (RAM blocks) */
    uint64_t block_size;
    /* page allocator */
    uint64_t next_free;

    GArray *maps;           /* FhMapping: outstanding mappings */
    uint64_t map_calls, unmap_calls;
    uint64_t bad_unmaps;    /* unmap without a matching map */
    uint64_t refused_maps;

    GArray *irqs;           /* unsigned vectors, in order */
    /*
     * PvrdmaHostOps.dirty: one flag per RAM page the device reported
     * written (fh_dirty_page(), fh_dirty_clear()); reports of memory
     * outside this RAM counted apart.
     */
    uint8_t *dirty;
    uint64_t dirty_calls, dirty_foreign;
    GPtrArray *reports;     /* PvrdmaHostOps.report, as lines (fh_reports) */
    uint64_t guest_error_reports;   /* ... but GUEST_ERROR, counted here */
    char *last_guest_error;
    bool link_down;         /* the paired NIC's link (PvrdmaHostOps.link_up) */
    /* optional: called on each interrupt, after it is recorded */
    void (*on_notify)(struct FakeHost *h, unsigned vector, void *arg);
    void *on_notify_arg;
    uint64_t kicks;
    unsigned last_kick_delay;
    uint8_t mac[6];
    int64_t now;
    /*
     * Where frame_tx puts the RoCEv2 transport's frames (the test's
     * network): frame_tx(frame_tx_arg, frame, len).  Set it before such a
     * transport sends.
     */
    void (*frame_tx)(void *arg, const uint8_t *frame, size_t len);
    void *frame_tx_arg;

    /* event loop (fh_pump) */
    GArray *watches;        /* FhWatch */
    PvrdmaCore *core;       /* run by fh_pump when kicked; NULL: none */
    bool run_pending;       /* kick(0) not yet served */
    int64_t timer_due;      /* kick(delay): run when now >= this; 0: none */
    uint64_t poll_waits;    /* calls of poll_wait */
    uint64_t poll_hits;     /* ... that found what they waited for */
    int in_poll;            /* in poll_wait now (atomic: other threads) */
    int poll_stop;          /* set (atomic): poll_wait gives up at once */
    /*
     * A big lock, as QEMU's BQL (the benchmark's device thread holds it):
     * poll() and poll_wait drop it while they wait.  NULL: none.
     */
    QemuMutex *bql;         /* a threaded bench: the big lock (pthread) */
    int wake_fd;            /* with bql: an eventfd a kick(0) writes; -1 */
} FakeHost;

/*
 * Its opaque is the FakeHost: set_fd_handler registers the handlers its
 * fh_pump serves, frame_tx hands frames to its frame_tx.
 */
extern const PvrdmaHostOps fh_ops;

void fh_init(FakeHost *h);
/* Same, with ram_size bytes of guest RAM in a memfd mapped MAP_SHARED. */
void fh_init_memfd(FakeHost *h, uint64_t ram_size);
/* The same with 'size' bytes of guest RAM (the fuzzer keeps it small). */
void fh_init_size(FakeHost *h, uint64_t size);
/*
 * The same over the caller's 'size' bytes of guest RAM, which fh_fini()
 * leaves alone (the fuzzers keep one allocation across inputs).
 */
void fh_init_ram(FakeHost *h, void *ram, uint64_t size);
/* Asserts that no fd handler is left registered. */
/* Was the RAM page holding gpa reported dirty since the last clear? */
bool fh_dirty_page(FakeHost *h, uint64_t gpa);
void fh_dirty_clear(FakeHost *h);
void fh_fini(FakeHost *h);
/* h's RAM as a region peers can map (fh_init_memfd only). */
void fh_shm_region(FakeHost *h, PvrdmaShmRegion *r);
/*
 * Serve hosts[0..n): run each core whose kick is due, poll every fd
 * registered on these hosts and call the handlers, until nothing is ready
 * and no run is due.  Time does not advance (h->now is the tests').  False
 * if still busy after timeout_ms of wall-clock time (a livelock).
 */
bool fh_pump(FakeHost *const *hosts, unsigned n, int timeout_ms);
/*
 * One turn of that loop: run the cores whose kick is due, poll the fds
 * once without waiting and call the ready handlers.  False if nothing ran
 * and no fd was ready.
 */
bool fh_step(FakeHost *const *hosts, unsigned n);
/*
 * The same, but if no core ran, poll() waits up to timeout_ms for an fd
 * (as QEMU's main loop sleeps): a loop that does not spin.
 */
bool fh_step_wait(FakeHost *const *hosts, unsigned n, int timeout_ms);
/* Number of fds registered on h. */
unsigned fh_watch_count(const FakeHost *h);
/* Number of open fds of this process (/proc/self/fd). */
unsigned fh_open_fds(void);
/*
 * sendmsg() of one datagram on a unix socket, with pass_fd (if >= 0)
 * attached (SCM_RIGHTS): what a peer of the co-resident transport sends.
 */
ssize_t fh_sendmsg(int sock, const void *buf, size_t len, int pass_fd,
                   int flags);
/* Allocate n contiguous zeroed guest pages; returns their gpa. */
uint64_t fh_alloc(FakeHost *h, uint32_t n);
/* Skip n pages (makes the next allocation non-contiguous). */
void fh_skip(FakeHost *h, uint32_t n);
/* Host pointer for a gpa inside RAM (asserts). */
void *fh_ptr(FakeHost *h, uint64_t gpa);
/* Number of outstanding mappings. */
unsigned fh_outstanding(const FakeHost *h);
/* Number of times vector v was raised. */
unsigned fh_irq_count(const FakeHost *h, unsigned v);
/*
 * How many reports (PvrdmaHostOps.report) were line: "path QPN OLD NEW",
 * "port up", "port down", "peer-lost WHY".
 */
unsigned fh_reports(FakeHost *h, const char *line);
/* Write a page directory for pages[0..n); returns its gpa. */
uint64_t fh_make_pdir(FakeHost *h, const uint64_t *pages, uint32_t n);

/* Common init for test binaries (TAP, verbose logging). */
void fh_test_init(int *argc, char ***argv);
/*
 * What QEMU's main sets up that the core uses (crypto), and whether guest
 * errors and host warnings go to stderr (PVRDMA_UNIT_VERBOSE) or not.
 */
void fh_process_init(bool verbose);
/* while not NULL, every host warning (warn_report()) is appended here */
extern GString *fh_host_log;

#endif
