/*
 * pvrdma device logic, free of QEMU's device model (the igb_core split).
 *
 * PvrdmaCore owns every guest-controlled value: registers, the DSR copy,
 * the command channel, resource tables, guest rings and the data path.
 * It touches guest memory and raises interrupts only through PvrdmaHostOps,
 * so unit tests drive it against plain host memory.
 *
 * This header is the core's public side: what the QOM glue (pvrdma.c), the
 * transports (backend/) and the tests use.  What only the core's own files
 * share is in hw/rdma/core/pvrdma_int.h.
 *
 * Threading: every entry point runs with the caller's lock held (the BQL in
 * QEMU); the core has no threads of its own.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_PVRDMA_CORE_H
#define HW_RDMA_PVRDMA_CORE_H

#include "qemu/log.h"
#include "qemu/atomic.h"
#include "qemu/bswap.h"
#include "qemu/error-report.h"
#include "trace/trace-hw_rdma.h"
#include "hw/rdma/pvrdma_abi.h"

typedef struct PvrdmaCore PvrdmaCore;
typedef struct PvrdmaTransport PvrdmaTransport;
/* a receive in progress (pvrdma_transport_calls.h: pvrdma_recv_begin()) */
typedef struct PvrdmaRecvCtx PvrdmaRecvCtx;

/*
 * What a management program would want to know (PvrdmaHostOps.report: the
 * QEMU glue sends a QMP event).
 */
typedef enum PvrdmaReportKind {
    PVRDMA_REPORT_PATH,         /* a connected QP moved to another path */
    PVRDMA_REPORT_PORT,         /* the port went down or up */
    PVRDMA_REPORT_PEER_LOST,    /* a co-resident peer failed, dropped */
    PVRDMA_REPORT_GUEST_ERROR,  /* the guest did something illegal */
} PvrdmaReportKind;

typedef struct PvrdmaReport {
    PvrdmaReportKind kind;
    uint32_t qpn;               /* PATH: the QP, its old and new path */
    const char *old_path, *new_path;
    bool port_up;               /* PORT */
    const char *peer, *why;     /* PEER_LOST: which (its socket or the */
    int pid;                    /* name management gave), its pid, why */
                                /* GUEST_ERROR: why, the count so far */
    uint64_t count;
} PvrdmaReport;

/* What the core asks of its host (QEMU glue or a unit test). */
typedef struct PvrdmaHostOps {
    /* Copy to/from guest physical memory; false if not backed by memory. */
    bool (*dma_read)(void *opaque, uint64_t gpa, void *buf, size_t len);
    bool (*dma_write)(void *opaque, uint64_t gpa, const void *buf, size_t len);
    /*
     * Map guest RAM for direct access.  *len may come back shorter (end of
     * a RAM block); NULL if gpa is not RAM.  Every map is undone by exactly
     * one unmap with the returned pointer and length.
     */
    void *(*map)(void *opaque, uint64_t gpa, uint64_t *len, bool is_write);
    void (*unmap)(void *opaque, void *host, uint64_t len, bool is_write);
    /*
     * The device wrote [host, host + len) of guest RAM through a mapping
     * it keeps (a registered MR), which the host's dirty tracking does not
     * see: a migration must send those pages again.  Optional.
     */
    void (*dirty)(void *opaque, const void *host, uint64_t len);
    /* Raise interrupt vector 0..2 (response, async, CQ). */
    void (*notify)(void *opaque, unsigned vector);
    /* Ask for pvrdma_core_run() to be called soon, or after delay_ms. */
    void (*kick)(void *opaque, unsigned delay_ms);
    /* Current MAC of the paired vmxnet3 function. */
    void (*get_mac)(void *opaque, uint8_t mac[6]);
    /* Guest physical address of the UAR BAR (to validate UAR pfns). */
    uint64_t (*uar_base)(void *opaque);
    /* Monotonic milliseconds (RNR timers). */
    int64_t (*now_ms)(void *opaque);
    /* Link state of the paired vmxnet3 (optional: NULL means always up). */
    bool (*link_up)(void *opaque);
    /*
     * Watch fd in the host's event loop: call read(arg) / write(arg) when
     * it is ready; NULL read and write removes the watch.  Optional: the
     * co-resident, host HCA and rdma_cm transports need it (their
     * constructors fail without it).
     */
    void (*set_fd_handler)(void *opaque, int fd, void (*read)(void *),
                           void (*write)(void *), void *arg);
    /*
     * While the host polls (an IOThread's adaptive polling), poll(arg),
     * arg the watch's, says without a system call whether fd's read
     * handler has work (a ring in shared memory has a record); the host
     * then calls that handler.  state(arg, true) when the host starts
     * polling fd, state(arg, false) when it stops (and before it may miss
     * a start: the watch moves or goes), so the other side knows whether
     * it must wake us.  NULL poll: no more.  Optional: a host that does
     * not poll has none.  Both run as the handlers do.
     */
    void (*set_fd_poll)(void *opaque, int fd, bool (*poll)(void *arg),
                        void (*state)(void *arg, bool polling));
    /*
     * Send an Ethernet frame on the paired NIC's network.  Optional: the
     * RoCEv2 transport needs it (pvrdma_roce_new() fails without it).
     */
    void (*frame_tx)(void *opaque, const uint8_t *frame, size_t len);
    /*
     * Busy-wait until ready(arg) or max_ns nanoseconds passed, with the
     * host's locks released meanwhile (ready() reads only memory another
     * process writes); true if ready.  Called from an fd handler only.
     * Optional: without it the co-resident transport never polls.  QEMU
     * has none (its main loop would have to drop the big QEMU lock); the
     * bench's model of a polling dataplane thread and unit tests do.
     */
    bool (*poll_wait)(void *opaque, bool (*ready)(void *), void *arg,
                      uint64_t max_ns);
    /* Something a management program would want to know; optional. */
    void (*report)(void *opaque, const PvrdmaReport *r);
} PvrdmaHostOps;

/* Limits: QOM properties, copied into the capabilities. */
typedef struct PvrdmaLimits {
    uint32_t max_qp;
    uint32_t max_qp_wr;
    uint32_t max_sge;
    uint32_t max_cq;
    uint32_t max_cqe;
    uint32_t max_mr;
    uint32_t max_pd;
    uint32_t max_ah;
    uint32_t max_srq;
    uint32_t max_srq_wr;
    uint32_t max_srq_sge;
    uint32_t max_uar;
    uint32_t gid_tbl_len;
    uint32_t max_qp_rd_atom;
    uint64_t max_mr_size;
    /*
     * RoCE version of the GIDs (1 or 2).  The Linux driver accepts exactly
     * one GID type and registers only GIDs of that type.
     */
    uint8_t roce_version;
    /*
     * The device version REG_VERSION shows (17 to 20, the versions the
     * Linux driver knows); the device behaves as that version with a
     * driver of that version or later (see "Device versions" in
     * docs/devel/pvrdma-interfaces.rst).
     */
    uint8_t version;
    /*
     * The object owner (a host HCA) cannot fast-register (no type 2
     * memory windows): FRMRs are refused and not advertised.
     */
    bool no_fast_reg;
} PvrdmaLimits;

/* Defaults and hard bounds (validated at realize). */
#define PVRDMA_DEF_MAX_QP        1024
#define PVRDMA_HARD_MAX_QP       65536      /* driver masks handles 0xffff */
#define PVRDMA_DEF_MAX_QP_WR     4096
#define PVRDMA_HARD_MAX_QP_WR    32768
#define PVRDMA_DEF_MAX_SGE       16
#define PVRDMA_HARD_MAX_SGE      32         /* WQE stays within one page */
#define PVRDMA_DEF_MAX_CQ        2048
#define PVRDMA_HARD_MAX_CQ       65536
#define PVRDMA_DEF_MAX_CQE       65536
#define PVRDMA_HARD_MAX_CQE      (1u << 20)
#define PVRDMA_DEF_MAX_MR        4096
#define PVRDMA_HARD_MAX_MR       (1u << 20)
#define PVRDMA_DEF_MAX_PD        1024
#define PVRDMA_HARD_MAX_PD       65536
#define PVRDMA_DEF_MAX_AH        1024
#define PVRDMA_DEF_MAX_SRQ       512
#define PVRDMA_HARD_MAX_SRQ      65536
#define PVRDMA_DEF_MAX_SRQ_WR    4096
#define PVRDMA_DEF_MAX_SRQ_SGE   16
#define PVRDMA_DEF_MAX_UAR       512
#define PVRDMA_HARD_MAX_UAR      4096
#define PVRDMA_DEF_GID_TBL_LEN   16
#define PVRDMA_HARD_GID_TBL_LEN  256
#define PVRDMA_DEF_MAX_RD_ATOM   128        /* as Linux rxe (see the doc) */
#define PVRDMA_DEF_MAX_MR_SIZE   (1ull << 30)
#define PVRDMA_MAX_RING_PAGES    64         /* async / CQ-notify rings */
#define PVRDMA_RUN_BUDGET        64         /* WQEs per QP per run */
#define PVRDMA_RUN_BYTES         (1u << 20) /* bytes copied per QP per run */
#define PVRDMA_INLINE_BUDGET     16         /* WQEs sent from a doorbell */
#define PVRDMA_MAX_TRANSPORTS    6
#define PVRDMA_MAX_PKEYS         1
#define PVRDMA_PKEY_DEFAULT      0xffff
#define PVRDMA_GSI_QPN           1
#define PVRDMA_GSI_QKEY          0x80010000u
#define PVRDMA_FW_VER            0x0000000100000000ull /* "1.0.0" */

/* Check limits; returns NULL or a static message naming the problem. */
const char *pvrdma_limits_check(const PvrdmaLimits *l);
void pvrdma_limits_default(PvrdmaLimits *l);

/* ------------------------------------------------------------------ */
/* Handle tables                                                       */

typedef struct PvrdmaTable {
    void **slot;
    uint32_t size;      /* handles are in [first, size) */
    uint32_t first;
    uint32_t lo;        /* [lo, first): reserved, inserted by number only */
    uint32_t next;      /* next-fit cursor: delays reuse of a handle */
    uint32_t used;
} PvrdmaTable;

void pvrdma_table_init(PvrdmaTable *t, uint32_t size, uint32_t first);
void pvrdma_table_destroy(PvrdmaTable *t);
/* Returns the new handle, or UINT32_MAX when full. */
uint32_t pvrdma_table_alloc(PvrdmaTable *t, void *obj);
/* Handles [lo, first) may be inserted by number (never allocated). */
void pvrdma_table_reserve(PvrdmaTable *t, uint32_t lo);
/* Put obj at a handle the caller chose; false if out of range or taken. */
bool pvrdma_table_insert(PvrdmaTable *t, uint32_t handle, void *obj);
/* NULL for any handle that is out of range or free. */
void *pvrdma_table_get(const PvrdmaTable *t, uint32_t handle);
void pvrdma_table_remove(PvrdmaTable *t, uint32_t handle);

/* ------------------------------------------------------------------ */
/* Guest rings                                                         */

/* Index math of pvrdma_ring.h: indices in [0, 2N), N a power of two. */
static inline bool pvrdma_idx_valid(uint32_t idx, uint32_t n)
{
    return (idx & ~((n << 1) - 1)) == 0;
}

static inline uint32_t pvrdma_idx_next(uint32_t idx, uint32_t n)
{
    return (idx + 1) & ((n << 1) - 1);
}

/* Number of entries between a valid consumer and producer index. */
static inline uint32_t pvrdma_idx_used(uint32_t prod, uint32_t cons,
                                       uint32_t n)
{
    return (prod - cons) & ((n << 1) - 1);
}

static inline bool pvrdma_is_pow2(uint32_t x)
{
    return x && !(x & (x - 1));
}

/* A send WQE opcode (PVRDMA_WR_*) that is compare-and-swap or fetch-and-add */
static inline bool pvrdma_wr_is_atomic(uint32_t op)
{
    return op == PVRDMA_WR_ATOMIC_CMP_AND_SWP ||
           op == PVRDMA_WR_ATOMIC_FETCH_AND_ADD;
}

/*
 * A work request whose data may move in pieces, one per run of a loop
 * (an RC one longer than PvrdmaCore.run_bytes: PvrdmaReq.msg_len)
 */
static inline bool pvrdma_wr_in_pieces(uint32_t op)
{
    switch (op) {
    case PVRDMA_WR_SEND:
    case PVRDMA_WR_SEND_WITH_IMM:
    case PVRDMA_WR_SEND_WITH_INV:
    case PVRDMA_WR_RDMA_WRITE:
    case PVRDMA_WR_RDMA_WRITE_WITH_IMM:
    case PVRDMA_WR_RDMA_READ:
        return true;
    default:
        return false;
    }
}

/*
 * A ring in guest memory, mapped once at creation.  Page 'first_page' holds
 * element 0; 'state' points at the prod/cons pair in the ring-state page.
 * 'priv' is the device's own index (consumer or producer): the copy in guest
 * memory is written for the guest but never read back.
 */
typedef struct PvrdmaRing {
    const char *name;
    void **page;            /* host pointer per ring page */
    uint64_t *gpa;          /* guest address per ring page (migration) */
    uint32_t npages;
    uint32_t first_page;
    uint32_t nelems;        /* as the driver computes it (see below) */
    uint32_t elem_size;     /* power of two, <= page size */
    struct pvrdma_ring *state;
    uint32_t priv;
    /*
     * The driver's index macros (pvrdma_ring.h) with N = nelems: next is
     * (i + 1) & (2N - 1), slot is i & (N - 1).  For N a power of two that
     * is a ring of N slots with indices in [0, 2N).  The driver also sizes
     * the async and CQ-notification rings as (pages - 1) * 4096 / size,
     * which is not a power of two (1536, 3072): then indices cycle through
     * [0, period) and only period / 2 slots are distinct.  The device
     * follows the same arithmetic and never holds more than 'slots'.
     */
    uint32_t period;
    uint32_t slots;
} PvrdmaRing;

/*
 * Map a ring of nelems elements of elem_size bytes: pages[first_page] holds
 * element 0, the ring state is at state_off in pages[0].  Checks the
 * geometry; false (guest error) if it is bad or a page is not RAM.
 */
bool pvrdma_ring_init(PvrdmaCore *c, PvrdmaRing *r, const char *name,
                      const uint64_t *pages, uint32_t npages,
                      uint32_t first_page, uint32_t state_off,
                      uint32_t nelems, uint32_t elem_size);
void pvrdma_ring_free(PvrdmaCore *c, PvrdmaRing *r);
/* The one accessor for ring elements: idx is reduced modulo nelems. */
void *pvrdma_ring_elem(const PvrdmaRing *r, uint32_t idx);
/*
 * The one reader of a guest producer index (rings the device consumes:
 * send, receive, SRQ): false (a guest error) unless it is in range and at
 * most nelems ahead of the device's consumer index r->priv.
 */
bool pvrdma_ring_guest_prod(const PvrdmaRing *r, uint32_t *prod);
/* Read the guest's consumer index; false (guest error) if invalid. */
bool pvrdma_ring_guest_cons(const PvrdmaRing *r, uint32_t *cons);
/* Publish the device's index (release store). */
void pvrdma_ring_publish_cons(PvrdmaRing *r);
void pvrdma_ring_publish_prod(PvrdmaRing *r);
/* Producer side: slot to fill, or NULL if full / guest index invalid. */
void *pvrdma_ring_prod_slot(PvrdmaRing *r, bool *bad_index);
/* The slot is filled: publish it (push), or only count it (advance). */
void pvrdma_ring_prod_push(PvrdmaRing *r);
void pvrdma_ring_prod_advance(PvrdmaRing *r);

/* ------------------------------------------------------------------ */
/* Guest memory                                                        */

/* A run of guest memory mapped into the host. */
typedef struct PvrdmaChunk {
    uint64_t off;           /* offset of this chunk within its region */
    uint64_t len;
    uint8_t *host;
} PvrdmaChunk;

typedef struct PvrdmaMap {
    PvrdmaChunk *chunk;
    uint32_t nchunks;
    uint64_t len;
    bool writable;
    /* the guest pages mapped, to map them again after migration */
    uint64_t *gpa;
    uint32_t npages;
    uint64_t page_size;
} PvrdmaMap;

/* Read a page directory: npages guest page addresses. */
bool pvrdma_pdir_read(PvrdmaCore *c, uint64_t pdir_gpa, uint32_t npages,
                      uint64_t **pages_out);
/* Map pages of 'page_size' bytes; contiguous runs become one chunk. */
bool pvrdma_map_pages(PvrdmaCore *c, PvrdmaMap *m, const uint64_t *pages,
                      uint32_t npages, uint64_t page_size);
void pvrdma_map_release(PvrdmaCore *c, PvrdmaMap *m);
/* Host pointer for [off, off+len) if it lies in one chunk, else NULL. */
uint8_t *pvrdma_map_ptr(const PvrdmaMap *m, uint64_t off, uint64_t len);

/* Scatter/gather list of host memory for one data transfer. */
typedef struct PvrdmaIov {
    uint8_t *host;
    uint64_t len;
    bool mapped;            /* mapped on demand (DMA MR): unmap after use */
    bool is_write;
    bool written;           /* pvrdma_sg_copy() wrote it: dirty at release */
} PvrdmaIov;

typedef struct PvrdmaSg {
    PvrdmaIov *iov;
    uint32_t n, cap;
    uint64_t len;
} PvrdmaSg;

/*
 * [host, host + len) of guest RAM was written through a mapping the device
 * keeps (pvrdma_sg_release(), or a co-resident peer executed a READ or an
 * atomic of ours): a migration must send it again (PvrdmaHostOps.dirty).
 */
void pvrdma_dirty(PvrdmaCore *c, const void *host, uint64_t len);
/*
 * Done with sg: what was mapped for it is unmapped, what was written
 * through a kept mapping is reported dirty (pvrdma_dirty()).
 */
void pvrdma_sg_release(PvrdmaCore *c, PvrdmaSg *sg);
/* Append [off, off+len) of a mapping; false if out of range. */
bool pvrdma_map_to_sg(const PvrdmaMap *m, uint64_t off, uint64_t len,
                      PvrdmaSg *sg);
/* Append guest physical memory, mapped now; false if not RAM. */
bool pvrdma_gpa_to_sg(PvrdmaCore *c, uint64_t gpa, uint64_t len,
                      bool is_write, PvrdmaSg *sg);
/*
 * Copy between scatter lists; returns bytes copied (min of lengths).  The
 * entries of dst it writes are marked written.
 */
uint64_t pvrdma_sg_copy(PvrdmaSg *dst, uint64_t dst_off,
                        const PvrdmaSg *src, uint64_t src_off, uint64_t len);
/*
 * [off, off+len) of sg as a list of its own, with the same host pointers
 * (a piece of a message: nothing is mapped for it); free view->iov with
 * g_free(), never pvrdma_sg_release().
 */
void pvrdma_sg_view(const PvrdmaSg *sg, uint64_t off, uint64_t len,
                    PvrdmaSg *view);

/* ------------------------------------------------------------------ */
/* Verbs objects                                                       */

typedef struct PvrdmaUC {
    uint32_t handle;        /* == the UAR page index it owns */
    uint32_t refs;          /* PDs and CQs */
} PvrdmaUC;

typedef struct PvrdmaPD {
    uint32_t handle;
    uint32_t ctx;           /* 0: kernel */
    uint32_t refs;          /* MRs, QPs, SRQs */
    void *twin;             /* the object owner's twin */
} PvrdmaPD;

enum { PVRDMA_MR_USER, PVRDMA_MR_DMA, PVRDMA_MR_FRMR };

typedef struct PvrdmaMR {
    uint32_t handle;
    uint32_t pd;
    int kind;
    uint32_t access;
    uint32_t key;           /* lkey == rkey: handle << 8 | key byte */
    uint32_t owner_rkey;    /* with an object owner: its rkey (key: lkey) */
    bool valid;             /* FRMR: registered and not invalidated */
    uint64_t iova;          /* first byte of the region */
    uint64_t length;
    uint64_t base;          /* iova of byte 0 of the first mapped page */
    uint32_t max_pages;     /* FRMR */
    PvrdmaMap map;
    void *twin;             /* the object owner's twin */
} PvrdmaMR;

typedef struct PvrdmaCQ {
    uint32_t handle;
    uint32_t ctx;
    PvrdmaRing ring;
    uint8_t armed;          /* PVRDMA_CQ_FLAG_ARMED{,_SOL} */
    bool error;             /* overrun: CQ is unusable */
    /* in the batch (pvrdma_batch_begin()): CQEs written, not published */
    bool batched;
    bool notify_due;        /* ... and the CQ is to be notified at its end */
    bool news;              /* CQEs written since the last notification */
    uint32_t refs;          /* QPs */
    void *twin;             /* the object owner's twin */
} PvrdmaCQ;

#define PVRDMA_CQ_FLAG_ARMED_SOL    (1u << 0)
#define PVRDMA_CQ_FLAG_ARMED        (1u << 1)

typedef struct PvrdmaSRQ {
    uint32_t handle;
    uint32_t pd;
    PvrdmaRing ring;
    uint32_t max_wr;
    uint32_t max_sge;
    uint32_t limit;
    uint32_t refs;          /* QPs */
    void *twin;             /* the object owner's twin */
    bool queue_blocked;       /* owner's queue full: post on a completion */
    bool hca_pending;       /* receives left for the run loop */
} PvrdmaSRQ;

/* A send WQE between execution and completion (the requester's window). */
typedef struct PvrdmaSendSlot {
    uint64_t wr_id;
    uint64_t cookie;        /* PvrdmaReq.cookie; 0: none */
    uint32_t opcode;
    uint32_t byte_len;
    int32_t status;         /* PVRDMA_WC_* once done */
    bool signaled;
    bool done;
    bool held;              /* no responder: completes at qp->hold_until */
    bool redo;              /* given back unexecuted: runs again */
} PvrdmaSendSlot;

typedef struct PvrdmaQP {
    uint32_t handle;        /* == qpn */
    uint32_t qpn;
    uint8_t type;
    uint8_t state;          /* the QP state (attr.qp_state is not kept) */
    bool sq_sig_all;
    bool is_srq;
    uint32_t pd;
    uint32_t scq, rcq, srq;
    uint32_t max_send_wr, max_recv_wr, max_send_sge, max_recv_sge;
    struct pvrdma_qp_attr attr;     /* current attributes but the state */
    /*
     * Send queue: sq.priv is the next WQE to complete (the consumer index
     * the guest sees), sq_head the next to execute; the WQEs in between are
     * in flight in a transport, described by slot[idx & (nelems - 1)].
     */
    PvrdmaRing sq, rq;
    uint32_t sq_head;
    bool sq_failed;         /* a WQE in [priv, head) failed: run no more */
    PvrdmaSendSlot *slot;
    bool queued;            /* on the run list, ... */
    struct PvrdmaQP *run_next;  /* ... this one next on it (NULL: last) */
    bool rnr_wait;          /* head send waits for a receive */
    bool paused;            /* ... or a paused transport (no deadline) */
    bool comm_est;          /* COMM_EST reported for this connection */
    bool gone_pending;      /* entered error: transports not told yet */
    int64_t rnr_deadline;   /* ms; 0: wait forever */
    /*
     * The failed WQE (sq_failed) is one no responder answers: it completes
     * with RETRY_EXC_ERR at this time (ms), when the requester's retries
     * would have run out; INT64_MAX: never (timeout 0), the QP waits to be
     * moved to error, reset or destroyed.  0: nothing held.
     */
    int64_t hold_until;
    uint32_t events;        /* async events reported */
    /*
     * The QP's transport (pvrdma_transport.h): the one that carries it,
     * and its state for the QP.  NULL: none yet (an RC QP before RTR, a UD
     * or GSI QP, whose transport is chosen per request).
     */
    PvrdmaTransport *tp;
    void *tp_state;
    /* the peer was heard over another transport (pvrdma_transport_heard()) */
    PvrdmaTransport *heard_on;
    /*
     * The way back (pvrdma_transport_offered()): the QP offered its peer to
     * move to offer_to, with these PSNs, and holds its requests until the
     * answer; after a refusal it offers again at offer_next (ms).
     */
    PvrdmaTransport *offer_to;
    uint32_t offer_sq_psn, offer_rq_psn;
    int64_t offer_next;
    /*
     * The object owner's twin (a host HCA): qpn is then the owner's QP
     * number (handle stays ours), whatever the transport.  With the owner
     * as its transport (pvrdma_qp_on_queue_transport()) sq.priv / rq.priv
     * are the next WQEs to hand to the owner; with another transport the
     * twin only holds the number.
     */
    void *twin;
    bool queue_sq_blocked;    /* owner's queue full: post on a completion */
    bool queue_rq_blocked;
    /*
     * A message moved in pieces, one per run (PVRDMA_TP_SEGMENTED): as
     * requester, the head send WQE's opcode and length and the bytes of it
     * already moved (seg_off 0: none); as responder, the receive a SEND in
     * pieces has taken (seg_rx, from QP seg_from), completed with its last
     * piece.
     */
    uint64_t seg_off, seg_msg;
    uint32_t seg_op;
    PvrdmaRecvCtx *seg_rx;
    uint32_t seg_from;
} PvrdmaQP;

/*
 * The QPs waiting to be served, oldest first, linked through their
 * run_next: queueing one allocates nothing (pvrdma_sched.c).
 */
typedef struct PvrdmaRunList {
    PvrdmaQP *head, *tail;
    uint32_t length;
} PvrdmaRunList;

/* ------------------------------------------------------------------ */
/* Device                                                              */

typedef struct PvrdmaGid {
    union pvrdma_gid gid;
    uint8_t type;           /* PVRDMA_GID_TYPE_FLAG_ROCE_V1/V2, 0: empty */
} PvrdmaGid;

/* ------------------------------------------------------------------ */
/* Fault and event injection (pvrdma_inject.c; x-pvrdma-inject)        */

typedef enum PvrdmaInjectKind {
    PVRDMA_INJECT_PORT_DOWN,    /* the port is down until PORT_UP */
    PVRDMA_INJECT_PORT_UP,
    PVRDMA_INJECT_EVENT,        /* async event 'event' about 'handle' */
    PVRDMA_INJECT_CMD_ERROR,    /* 'count' commands 'opcode' fail: 'status' */
    PVRDMA_INJECT_CMD_DELAY,    /* ... run, answered 'delay_ms' late */
    PVRDMA_INJECT_CMD_DROP,     /* ... are lost: not run, not answered */
    PVRDMA_INJECT_WC_ERROR,     /* 'count' send completions of QP 'handle' */
                                /* carry 'status' (a PVRDMA_WC_* error) */
    PVRDMA_INJECT_CLEAR,        /* what is pending goes, the port comes up */
    PVRDMA_INJECT__MAX,
} PvrdmaInjectKind;

typedef struct PvrdmaInject {
    PvrdmaInjectKind kind;
    uint32_t event;             /* PVRDMA_EVENT_* */
    uint32_t handle;            /* a QP, CQ or SRQ handle, as the guest's */
    bool of_qp;                 /* CQ/SRQ event of QP handle's CQ/SRQ */
    uint32_t opcode;            /* PVRDMA_CMD_* */
    uint32_t count;             /* left to fire (0 given: 1) */
    uint32_t status;            /* an errno, or a PVRDMA_WC_* status */
    uint32_t delay_ms;
    uint32_t fired;             /* how many times it fired */
} PvrdmaInject;

#define PVRDMA_INJECT_MAX       16  /* pending and fired ones shown */

struct PvrdmaCore {
    const PvrdmaHostOps *ops;
    void *opaque;
    PvrdmaLimits lim;
    /*
     * Added by the core's owner, loopback first (pvrdma_core_add_transport);
     * a QP's transport is the first that reaches its destination.
     */
    PvrdmaTransport *transports[PVRDMA_MAX_TRANSPORTS];
    unsigned ntransports;
    bool doorbell_ok;       /* a transport may run from a send doorbell */
    PvrdmaTransport *owner; /* owns the guest's objects (a host HCA) */
    PvrdmaTransport *gsi_agent;     /* GSI requests nobody else reaches */
    uint64_t next_cookie;

    /* registers */
    uint64_t dsr_gpa;
    uint32_t err;
    uint32_t icr;
    uint32_t imr;
    bool dsr_set;           /* DSRHIGH written: caps published */
    bool active;
    bool port_down;         /* last link state reported (PORT_ERR sent) */
    unsigned version;       /* effective ABI version (min of both sides) */

    /* copy of the driver's half of the DSR, taken at activation */
    uint64_t cmd_gpa, resp_gpa;
    uint64_t uar_pfn;
    PvrdmaRing async_ring;
    PvrdmaRing cqn_ring;

    PvrdmaTable uc, pd, mr, cq, qp, srq;
    /*
     * With an object owner the guest knows the owner's QP numbers and
     * memory keys, not ours: owner QPN -> PvrdmaQP (and QP 1, the GSI QP),
     * owner lkey and rkey -> PvrdmaMR.
     */
    GHashTable *owner_qpns;
    GHashTable *owner_keys;
    /* ... and its FRMRs by key >> 8 (the key byte is the guest's) */
    GHashTable *owner_frmrs;
    PvrdmaGid *gid;

    /* data path */
    PvrdmaRunList run;      /* QPs waiting to be served */
    bool running;
    /*
     * What one QP's pass may copy here (PVRDMA_RUN_BYTES; the unit tests
     * make it small): a longer message on a segmented transport moves in
     * pieces of this size; seg_whole: the rest of each in one piece
     * (the save: nothing stays half-way).
     */
    uint64_t run_bytes;
    bool seg_whole;
    uint64_t seg_pieces;    /* pieces moved so far (all but a last one) */
    /*
     * Quiesced for a save (pvrdma_core_quiesce() until resume): the run
     * loop executes nothing, so that nothing changes guest RAM after the
     * device's state was saved (a postcopy destination takes the pages it
     * has not got yet from the source, changed or not).
     */
    bool paused;
    /*
     * A batch of completions (pvrdma_batch_begin(), nested: depth): the
     * CQs written to meanwhile (handles), published and notified at its
     * end.
     */
    uint32_t batch;
    GArray *batched_cqs;
    /* a delayed kick for timed waiters (RNR waits, held completions) */
    bool timer;
    int64_t timer_at;       /* ... for this time (ms): the earliest deadline */
    bool wake_transports;   /* receives posted: transports' wake() to run */
    bool timer_transports;  /* pvrdma_transport_timer(): timer() to run */
    bool hca_srqs;          /* host HCA mode: an SRQ has hca_pending set */
    uint32_t rnr_waiters;   /* QPs with rnr_wait set */
    uint32_t holders;       /* QPs with hold_until set */

    /*
     * Loading migrated state (pvrdma_mig_load.c): the commands it replays
     * take their page lists from restore_pages, not from guest page
     * directories, and no async event reaches the guest.
     */
    bool restoring;
    const uint64_t *restore_pages;
    uint32_t restore_npages;

    /*
     * Injections (pvrdma_inject.c): a command or completion kind fires
     * until its count is 0 and stays listed until its slot is needed.
     */
    PvrdmaInject inject[PVRDMA_INJECT_MAX];
    unsigned ninject;
    uint32_t inject_cmds;       /* of them, command kinds with count left */
    uint32_t inject_wcs;        /* ... completion kinds with count left */
    bool inject_port_down;
    /* a response held back by CMD_DELAY until resp_due (ms) */
    bool resp_held;
    int64_t resp_due;
    union pvrdma_cmd_resp held_resp;
    /*
     * A command waiting for its QP's fence (pvrdma_cmd_fence()): it runs
     * again from wait_req once the transports are done or at wait_due
     * (ms); meanwhile the device takes no other command (EBUSY).
     */
    bool cmd_waits;
    bool wait_over;         /* it runs again now, fenced or not */
    uint32_t wait_qpn;
    int64_t wait_due;
    union pvrdma_cmd_req wait_req;
    bool wait_injected;     /* an injection hit it: wait_inject */
    PvrdmaInject wait_inject;

    /* counters (tests and info) */
    uint64_t guest_errors;
    uint64_t commands;
    uint64_t doorbells;
};

/*
 * The guest did something the ABI does not allow: counted, logged
 * (LOG_GUEST_ERROR) and reported (a QMP event, rate-limited).
 */
void pvrdma_guest_error(PvrdmaCore *c, const char *fmt, ...)
    G_GNUC_PRINTF(2, 3);
#define PVRDMA_GUEST_ERR(c, fmt, ...) \
    pvrdma_guest_error((c), fmt, ##__VA_ARGS__)

/* A path's counters (PvrdmaTransportOps.stats): what a wire counts. */
typedef struct PvrdmaPathStats {
    uint64_t tx_pkts, tx_bytes;
    uint64_t rx_pkts, rx_bytes;
    uint64_t retransmits;       /* request packets sent again */
    uint64_t timeouts;          /* local ACK timeouts */
    uint64_t rnr_naks;          /* RNR NAKs received */
    uint64_t seq_naks;          /* PSN sequence NAKs received */
    uint64_t dups;              /* duplicate requests answered again */
    uint64_t drops;             /* frames dropped: malformed, misdirected */
} PvrdmaPathStats;

/* A range of this process's guest RAM that peers can map. */
typedef struct PvrdmaShmRegion {
    void *host;             /* where this process has it mapped */
    uint64_t size;
    int fd;                 /* shareable file (memfd, file, hugetlbfs) */
    uint64_t fd_offset;     /* offset of host[0] in fd */
} PvrdmaShmRegion;

/* fd cannot shrink under a mapping (a memfd sealed with F_SEAL_SHRINK). */
bool pvrdma_fd_sealed(int fd);

/*
 * Append a transport to the list (at most PVRDMA_MAX_TRANSPORTS, at most
 * one owner and one GSI agent); false if refused.  Loopback comes first:
 * the first transport that reaches a destination gets it.
 * pvrdma_core_fini() destroys them, last added first, after the reset
 * that destroys the owner's twins.
 */
bool pvrdma_core_add_transport(PvrdmaCore *c, PvrdmaTransport *t);
/* Free a transport the list refused (or one never added). */
void pvrdma_transport_free(PvrdmaTransport *t);

void pvrdma_core_init(PvrdmaCore *c, const PvrdmaHostOps *ops, void *opaque,
                      const PvrdmaLimits *lim);
void pvrdma_core_fini(PvrdmaCore *c);
/*
 * Inject a fault or an event (x-pvrdma-inject).  False, with errp set, if
 * refused: an object that does not exist, a status out of range, too many
 * pending.
 */
bool pvrdma_inject(PvrdmaCore *c, const PvrdmaInject *in, Error **errp);
const char *pvrdma_inject_kind_name(PvrdmaInjectKind kind);
/* Device reset (PCI reset, CTL_RESET): every resource is freed. */
void pvrdma_core_reset(PvrdmaCore *c);

/* BAR1 */
uint32_t pvrdma_core_reg_read(PvrdmaCore *c, uint32_t addr);
void pvrdma_core_reg_write(PvrdmaCore *c, uint32_t addr, uint32_t val);
/* BAR2: addr is the offset in the UAR BAR. */
void pvrdma_core_uar_write(PvrdmaCore *c, uint64_t addr, uint32_t val);
/*
 * When a send that the responder keeps refusing for want of a receive (RNR)
 * fails: after rnr_retry retries (7: never) of the responder QP's RNR timer
 * (its min_rnr_timer, 10 ms a step), which a responder announces in its RNR
 * NAK.  In ms of ops->now_ms; 0 means never.  The requester (loopback) and
 * the co-resident transport's responder both use this.
 */
int64_t pvrdma_rnr_deadline(PvrdmaCore *c, uint8_t rnr_retry,
                            const PvrdmaQP *responder);
/* The completion opcode (PVRDMA_WC_*) of a send work request's opcode. */
uint32_t pvrdma_wc_opcode(uint32_t wr_opcode);
/* Serve queued work (BH / timer). */
void pvrdma_core_run(PvrdmaCore *c);
/* Poll the link of the paired NIC: PORT_ERR / PORT_ACTIVE on a change. */
void pvrdma_core_check_link(PvrdmaCore *c);

/*
 * Migration (pvrdma_mig.c; the load: pvrdma_mig_load.c).
 * pvrdma_core_migration_blocker(): NULL if the device's state can move,
 * else why not (g_free it); saving: it is about to be saved, after
 * pvrdma_core_quiesce(): nothing may be in flight then.  pvrdma_core_save()
 * appends the versioned state to buf.  pvrdma_core_load() resets the core
 * and rebuilds it from len bytes, as untrusted as guest input: false with
 * errp set and the core reset if anything is wrong.
 */
char *pvrdma_core_migration_blocker(PvrdmaCore *c, bool saving);
/*
 * Every page of the rings the device writes (CQEs, events, ring indices):
 * fn(gpa, len).  What it writes into registered memory it reports as it
 * writes (PvrdmaHostOps.dirty).
 */
void pvrdma_core_ring_pages(PvrdmaCore *c,
                            void (*fn)(void *opaque, uint64_t gpa,
                                       uint64_t len),
                            void *opaque);
void pvrdma_core_save(PvrdmaCore *c, GByteArray *buf);
bool pvrdma_core_load(PvrdmaCore *c, const uint8_t *data, size_t len,
                      Error **errp);
/*
 * The VM stops for its state to be saved: every transport finishes or
 * gives back what it has in flight and takes nothing new (its quiesce
 * hook, within timeout_ms each); false if one could not.  Then resume
 * (the VM runs here again) or moved (the state went to another QEMU).
 * In pvrdma_transport.c, with the transports' other hooks.
 */
bool pvrdma_core_quiesce(PvrdmaCore *c, unsigned timeout_ms);
void pvrdma_core_resume(PvrdmaCore *c);
void pvrdma_core_moved(PvrdmaCore *c);

/* Lookups for transports and tests. */
PvrdmaQP *pvrdma_qp_get(PvrdmaCore *c, uint32_t handle);
PvrdmaQP *pvrdma_qp_by_qpn(PvrdmaCore *c, uint32_t qpn);
PvrdmaMR *pvrdma_mr_by_key(PvrdmaCore *c, uint32_t key);
bool pvrdma_gid_is_local(PvrdmaCore *c, const uint8_t gid[16]);
/* An IPv4-mapped GID (::ffff:a.b.c.d)? */
static inline bool pvrdma_gid_is_v4(const uint8_t gid[16])
{
    return !memcmp(gid, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12);
}
/* The GID's address as text (a.b.c.d or IPv6); len >= INET6_ADDRSTRLEN. */
void pvrdma_gid_str(const uint8_t gid[16], char *buf, size_t len);

#endif
