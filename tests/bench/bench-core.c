/*
 * Benchmark of the QEMU-free pvrdma core, without a guest: the unit tests'
 * fake driver (tests/unit/fake-driver.c) lays out rings, WQEs and CQs in
 * the fake host's RAM and rings doorbells, the fake host's poll loop
 * (fh_step) plays QEMU's main loop.  64-byte operations on RC QPs:
 *
 *   transports  loopback: one device, requester and responder QPs on it;
 *               co-resident, one process: two devices joined through a
 *               rendezvous directory (backend/coresident.c), one loop;
 *               co-resident, two processes: the same devices, one per
 *               process (fork), each turning its own loop: spinning (busy
 *               polling), or sleeping in poll() when idle as QEMU's main
 *               loop does (the responder then pays a wakeup per burst).
 *   operations  SEND (a receive consumed at the peer) and RDMA WRITE.
 *   QPs         1 QP (256 WQEs deep) or 64 QPs (16 deep each).
 *
 * Figures:
 *   ops/s       signaled 64-byte WQEs posted in batches (one doorbell per
 *               batch per QP), requester completions polled; completions
 *               counted over a measured window after a warm-up.  The
 *               responder keeps its receive queues full (one receive
 *               doorbell per QP per poll round).
 *   latency     one operation at a time: time from the send doorbell (the
 *               UAR write) to the receive CQE at the peer.  "CQE" is when
 *               the peer device wrote it: its CQ is armed, and the
 *               interrupt it raises right after writing the CQE is time-
 *               stamped (a wrapper of the fake host's notify).  "polled"
 *               is when the peer's poll loop saw it (after the handler
 *               that wrote it returned, e.g. after it sent its answer).
 *               WRITE latency uses RDMA WRITE WITH IMM (plain WRITE makes
 *               no CQE at the peer).  "own" is the requester's send CQE.
 *               The doorbell time travels in the payload, so the two-
 *               process figures compare CLOCK_MONOTONIC across processes.
 *   memcpy      the host's single-thread memcpy rate for 64 B and 64 KiB
 *               copies, at the start and the end of the run.
 *   allocs/op   heap allocations (malloc, calloc, realloc, reallocarray,
 *               memalign, aligned_alloc, posix_memalign, valloc, pvalloc:
 *               this program wraps them; GSlice goes through malloc, as
 *               the program runs with G_SLICE=always-malloc, and a self-
 *               check at start fails the run if any of them goes
 *               uncounted) of both devices, both fake drivers and the
 *               loops per completed operation over the throughput
 *               figure's measured window, after its warm-up; in the two-
 *               process runs the responder publishes its count.
 *
 * Except in the two-process "sleep" run, every loop busy-polls: those
 * figures are the cost of the device, the transport and the fake driver,
 * not of waking a sleeping main loop.  The fake driver runs in the loop's
 * thread, and a core that asked to be kicked runs on the loop's next turn:
 * QEMU's bottom-half hop (the vCPU thread waking the main loop) is not in
 * the loopback figures; a co-resident request leaves from the doorbell, as
 * in QEMU.
 *
 *   bench-core [-t SECS] [-n LAT_ITERS] [-w LAT_WARMUP] [-L SECS] [-m MODES]
 *              [-c SECS] [-P POLL_NS]
 *     -t  measured seconds per throughput figure (default 1; warm-up 0.2)
 *     -n  latency samples per figure (default 20000), after -w warm-up
 *         operations (default 2000); -L: a figure that took more than
 *         that many seconds (default 2) stops early, with at least 200
 *         samples (the table shows how many)
 *     -m  transports to run: l (loopback), c (co-resident, one process),
 *         p (co-resident, two processes spinning), s (two processes
 *         sleeping when idle), q (two QEMU-like processes), i (two
 *         IOThread-like processes); default lcpsqi
 *     -c  seconds per memcpy figure (default 0.5; 0: none, for profiles)
 *     -P  the QEMU-like pair's poll-max-ns, and the IOThread-like pair's
 *         AioContext poll-max-ns (default 32768, an IOThread's)
 *     -g  in the QEMU-like and IOThread-like pairs the guest side sleeps
 *         on its CQ interrupt (a completion channel) instead of spinning
 *         on its CQs: on two cores, the two device threads then have a
 *         core each
 *
 * Without G_SLICE=always-malloc in the environment the program runs
 * itself again with it (glib reads it before main()).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "qapi/error.h"
#include "block/aio.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "fake-driver.h"
#include "bench-alloc.h"
#include "hw/rdma/pvrdma_coresident.h"
#include "hw/rdma/pvrdma_loopback.h"
#include "hw/rdma/pvrdma_coresident_wire.h"

#define MAXQ        64
#define PAY         64                  /* bytes per operation */
#define CQ_DEPTH    2048                /* >= the WQEs of all QPs of an end */
#define MR_LEN      (128 * 1024)        /* receive buffers, then WRITE targets */
#define WR_AREA     (MR_LEN / 2)
#define IOVA        0x00007f0000000000ull
#define RAM         (64ull << 20)
#define LAT_MAX     (1u << 18)
#define PROBE_MAGIC 0x70726f6265ull     /* "probe" */
#define STALL_NS    (10 * 1000000000ll) /* a loop without progress: fail */
#define MR_ACCESS   (PVRDMA_ACCESS_LOCAL_WRITE | RC_ACCESS)

/* the two QP configurations: [0] one deep QP, [1] 64 shallower ones */
static const unsigned cfg_nqp[2] = { 1, MAXQ };
static const unsigned cfg_depth[2] = { 256, 16 };
static const unsigned cfg_batch[2] = { 32, 8 };

/* the first 24 bytes of a latency probe's payload */
typedef struct Probe {
    uint64_t magic;
    int64_t t0;             /* CLOCK_MONOTONIC ns of the doorbell */
    uint64_t seq;
} Probe;

/* QPs of one side of a configuration: one PD, one CQ, one MR. */
typedef struct End {
    Dev *d;
    uint32_t pd;
    TCq cq;
    TMr mr;
    TQp qp[MAXQ];
    unsigned nqp, depth, batch;
    unsigned credits[MAXQ];         /* requester: free send slots */
    unsigned repost[MAXQ];          /* responder: receives to post again */
    uint16_t idx[4096];             /* QP handle -> index in qp[] */
} End;

/* What the other side needs: QP numbers and the MR's rkey. */
typedef struct Remote {
    uint32_t qpn[MAXQ];
    uint32_t rkey;
} Remote;

/* Shared between the two processes (MAP_SHARED), or just memory. */
typedef struct Ctl {
    int a_state, b_state;           /* 1: ends published, 2: in RTS, 3: done */
    int done;                       /* requester: responder may leave */
    int failed;                     /* responder died: see err */
    char err[256];
    Remote ra[2], rb[2];
    int lat_mode;                   /* 1 + configuration under test; 0 */
    int lat_gen;                    /* latency run, counted from 1 */
    int lat_armed;                  /* the responder armed that CQ for it */
    uint32_t nlat;                  /* probes the responder saw */
    uint32_t lat_cqe[LAT_MAX];      /* doorbell -> peer CQE written, ns */
    uint32_t lat_poll[LAT_MAX];     /* doorbell -> peer CQE polled, ns */
    uint64_t rsp_allocs;            /* the responder process's allocations */
    int idle;                       /* QEMU-like: both sides idle now */
    int64_t rsp_dev_cpu;            /* ... the responder's device thread's */
} Ctl;

typedef struct Node {
    Dev d;
    PvrdmaTransport *t;             /* co-resident; NULL: loopback only */
    uint8_t gid[16];
} Node;

/* One transport's run, as seen by this process. */
typedef struct Bench {
    FakeHost *hosts[2];             /* the loops this process turns */
    unsigned nhosts;
    End *req[2];                    /* NULL in the responder process */
    End *rsp[2];                    /* NULL in the requester process */
    Ctl *ctl;
    bool block;                     /* an idle loop sleeps in poll() */
    int armed_gen;                  /* responder: CQ armed for that run */
    /*
     * QEMU-like (mode q): the device runs in a thread of its own, its
     * loop sleeping in poll() as QEMU's main loop does, under a big lock
     * (fake-host's bql) the guest side takes for doorbells; the guest
     * side (this thread) spins on its CQs as verbs applications do.
     */
    bool threaded;
    QemuMutex bql;
    pthread_t dev;
    int stop;
    /*
     * IOThread-like (mode i, threaded too): the device thread is QEMU's
     * own AioContext (libqemuutil's, as an IOThread has) turning
     * aio_poll() with its adaptive polling; the transport's fds are its
     * handlers, each with io_poll (set_fd_poll: a peer's ring), the kick
     * its bottom half, each under the lock the guest side takes for
     * doorbells, as pvrdma_dev_iothread.c's core_lock.
     */
    bool iothread;
    AioContext *ctx;
    QEMUBH *bh;
    GHashTable *iow;                /* fd -> IoWatch */
    GPtrArray *iow_gone;
} Bench;

typedef struct IoWatch {
    EventNotifier e;        /* names fd for the poll hooks: w is &w->e */
    int fd;
    void (*read)(void *);
    void (*write)(void *);
    bool (*poll)(void *);
    void (*poll_state)(void *, bool);
    void *arg;
} IoWatch;

typedef struct IoPoll {
    bool (*poll)(void *);
    void (*state)(void *, bool);
} IoPoll;

/* transports: loopback, co-resident in one process, in two (spin, sleep) */
#define NT      6
#define MODES   "lcpsqi"

typedef struct Result {
    double mops;
    double allocs;                  /* heap allocations per operation */
    double cqe50, cqe99, poll50, own50;
    unsigned nlat;                  /* latency samples taken */
} Result;

static Ctl *g_ctl;
static bool g_child;
static int64_t g_irq_ns;            /* last CQ interrupt of this process */
static int g_irq_efd = -1;          /* -g: the CQ interrupt wakes the guest */
static bool g_guest_sleeps;         /* -g */
static QemuMutex *g_bql;       /* the big lock of a threaded run */
static PvrdmaHostOps bench_ops;
static uint64_t g_poll_ns = PVRDMA_DEF_POLL_NS;  /* -P */
static uint64_t g_node_poll;        /* what node_init_cr() sets: this mode's */
static uint64_t g_io_poll_ns = 32768;   /* -P in mode i: an IOThread's */
static Bench *g_io;                 /* the IOThread-like run, while it runs */
static GHashTable *g_io_polls;      /* fd -> IoPoll, the transport's (mode i) */
static bool g_io_hooks;             /* mode i: the thread sets poll hooks */

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void G_GNUC_PRINTF(1, 2) G_GNUC_NORETURN die(const char *fmt, ...)
{
    char buf[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    fprintf(stderr, "bench-core%s: %s\n", g_child ? " (responder)" : "",
            buf);
    if (g_child && g_ctl) {
        snprintf(g_ctl->err, sizeof(g_ctl->err), "%s", buf);
        __atomic_store_n(&g_ctl->failed, 1, __ATOMIC_RELEASE);
        _exit(1);
    }
    exit(1);
}

static void stall_check(int64_t since, const char *what)
{
    if (g_ctl && !g_child && __atomic_load_n(&g_ctl->failed, __ATOMIC_ACQUIRE)) {
        die("the responder process failed: %s", g_ctl->err);
    }
    if (now_ns() - since > STALL_NS) {
        die("no progress for %lld s: %s", STALL_NS / 1000000000ll, what);
    }
}

/* The fake host's notify, with the time of each CQ interrupt. */
static void bench_notify(void *opaque, unsigned vector)
{
    if (vector == PVRDMA_INTR_VECTOR_CQ) {
        __atomic_store_n(&g_irq_ns, now_ns(), __ATOMIC_RELEASE);
        if (g_irq_efd >= 0) {
            uint64_t one = 1;

            if (write(g_irq_efd, &one, sizeof(one)) != sizeof(one)) {
                die("interrupt eventfd: %s", strerror(errno));
            }
        }
    }
    fh_ops.notify(opaque, vector);
}

/* A doorbell (a write to the device) from the guest side: the big lock. */
static void dev_lock(void)
{
    if (g_bql) {
        qemu_mutex_lock(g_bql);
    }
}

static void dev_unlock(void)
{
    if (g_bql) {
        qemu_mutex_unlock(g_bql);
    }
}

/* ------------------------------------------------------------------ */
/* Devices                                                             */

static void make_gid(uint8_t gid[16], uint8_t id)
{
    memset(gid, 0, 16);
    gid[10] = gid[11] = 0xff;
    gid[12] = 10;
    gid[15] = id;
}

static void activate(Node *n, uint8_t id)
{
    dev_write_dsr(&n->d);
    pvrdma_core_reg_write(&n->d.c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
    if (pvrdma_core_reg_read(&n->d.c, PVRDMA_REG_ERR)) {
        die("device %u does not activate", id);
    }
    pvrdma_core_reg_write(&n->d.c, PVRDMA_REG_IMR, 0);
    make_gid(n->gid, id);
    bind_gid(&n->d, 0, n->gid);
}

/* One device, loopback only, RAM from malloc. */
static void node_init_loop(Node *n, uint8_t id)
{
    PvrdmaLimits l;

    pvrdma_limits_default(&l);
    memset(n, 0, sizeof(*n));
    fh_init(&n->d.h);
    pvrdma_core_init(&n->d.c, &bench_ops, &n->d.h, &l);
    pvrdma_core_add_transport(&n->d.c, pvrdma_loopback_new(&n->d.c));
    n->d.h.core = &n->d.c;
    activate(n, id);
}

/* A device with memfd RAM in rendezvous directory dir. */
static void node_init_cr(Node *n, const char *dir, uint8_t id)
{
    PvrdmaLimits l;
    PvrdmaShmRegion r;
    Error *err = NULL;

    pvrdma_limits_default(&l);
    memset(n, 0, sizeof(*n));
    fh_init_memfd(&n->d.h, RAM);
    n->d.h.mac[5] = id;
    pvrdma_core_init(&n->d.c, &bench_ops, &n->d.h, &l);
    pvrdma_core_add_transport(&n->d.c, pvrdma_loopback_new(&n->d.c));
    n->d.h.core = &n->d.c;
    fh_shm_region(&n->d.h, &r);
    n->t = pvrdma_coresident_new(&n->d.c, dir, NULL, 0, &r, 1, CR_F_ALL,
                                 &err);
    if (!n->t) {
        die("co-resident transport: %s", error_get_pretty(err));
    }
    pvrdma_coresident_set_poll(n->t, g_node_poll);
    if (!pvrdma_core_add_transport(&n->d.c, n->t)) {
        die("no room for the co-resident transport");
    }
    activate(n, id);
}

/* Turn this process's loops until n reaches the peer's GID. */
static void node_wait_peer(Node *n, FakeHost *const *hosts, unsigned nh,
                           const uint8_t gid[16])
{
    int64_t t0 = now_ns();

    while (pvrdma_coresident_peers(n->t) < 1 ||
           !n->t->ops->reaches(n->t, gid)) {
        fh_step(hosts, nh);
        stall_check(t0, "rendezvous");
    }
}

static void node_fini(Node *n)
{
    dev_fini(&n->d);
}

/* ------------------------------------------------------------------ */
/* Ends                                                                */

static void end_init(End *e, Dev *d, unsigned k)
{
    memset(e, 0, sizeof(*e));
    e->d = d;
    e->nqp = cfg_nqp[k];
    e->depth = cfg_depth[k];
    e->batch = cfg_batch[k];
    e->pd = create_pd(d, 0);
    create_cq(d, &e->cq, CQ_DEPTH);
    create_mr(d, &e->mr, e->pd, IOVA, MR_LEN, MR_ACCESS);
    for (unsigned i = 0; i < e->nqp; i++) {
        union pvrdma_cmd_req req;
        union pvrdma_cmd_resp rsp;
        TQp *q = &e->qp[i];

        fill_create_qp(d, q, &req, e->pd, e->cq.handle, e->cq.handle,
                       PVRDMA_QPT_RC, e->depth, 1, e->depth, 1);
        if (dev_cmd(d, &req, PVRDMA_CMD_CREATE_QP, &rsp)) {
            die("CREATE_QP failed");
        }
        q->handle = rsp.create_qp_resp_v2.qp_handle;
        q->qpn = rsp.create_qp_resp_v2.qpn;
        if (q->handle >= G_N_ELEMENTS(e->idx)) {
            die("QP handle %u out of the benchmark's range", q->handle);
        }
        e->idx[q->handle] = i;
    }
}

static void end_publish(const End *e, Remote *r)
{
    for (unsigned i = 0; i < e->nqp; i++) {
        r->qpn[i] = e->qp[i].qpn;
    }
    r->rkey = e->mr.rkey;
}

static void end_connect(End *e, const Remote *peer, const uint8_t dgid[16])
{
    for (unsigned i = 0; i < e->nqp; i++) {
        rc_to_rts_gid(e->d, &e->qp[i], peer->qpn[i], dgid, 7);
    }
}

/* Offset in the MR of QP i's buffer for ring slot s. */
static uint64_t buf_off(const End *e, unsigned i, unsigned s)
{
    return ((uint64_t)i * e->depth + s) * PAY;
}

static void *end_buf(End *e, uint64_t off)
{
    return mr_byte(e->d, &e->mr, IOVA + off);
}

/* Responder: fill every receive queue (QPs in RTS). */
static void end_fill_rq(End *e)
{
    for (unsigned i = 0; i < e->nqp; i++) {
        e->repost[i] = e->depth;
    }
}

/* ------------------------------------------------------------------ */
/* Responder                                                           */

static void rsp_repost(End *e)
{
    for (unsigned i = 0; i < e->nqp; i++) {
        TQp *q = &e->qp[i];

        if (!e->repost[i]) {
            continue;
        }
        for (; e->repost[i]; e->repost[i]--) {
            uint64_t off = buf_off(e, i, q->rq_prod & (e->depth - 1));
            struct pvrdma_sge g = { IOVA + off, PAY, e->mr.lkey };

            put_recv(e->d, q, off, &g, 1);
        }
        dev_lock();
        ring_recv(e->d, q);
        dev_unlock();
    }
}

static void arm_cq(End *e)
{
    dev_lock();
    pvrdma_core_uar_write(&e->d->c, PVRDMA_UAR_CQ_OFFSET,
                          PVRDMA_UAR_CQ_ARM | e->cq.handle);
    dev_unlock();
}

/* Poll e's CQ; latency probes are timed; receives are posted again. */
static void rsp_poll(Bench *b, End *e, bool probes)
{
    Ctl *ctl = b->ctl;
    struct pvrdma_cqe c;

    for (unsigned n = 0; n < 512 && poll_cq(e->d, &e->cq, &c); n++) {
        int64_t t1 = probes ? now_ns() : 0;
        uint64_t off;
        Probe *p;

        if (c.status != PVRDMA_WC_SUCCESS || c.byte_len != PAY ||
            (c.opcode != PVRDMA_WC_RECV &&
             c.opcode != PVRDMA_WC_RECV_RDMA_WITH_IMM)) {
            die("responder: CQE status %u opcode %u length %u", c.status,
                c.opcode, c.byte_len);
        }
        /* a SEND landed in the receive's buffer, a WRITE where imm says */
        off = c.opcode == PVRDMA_WC_RECV ? c.wr_id : c.imm_data;
        if (off > MR_LEN - PAY) {
            die("responder: buffer offset 0x%" PRIx64, off);
        }
        e->repost[e->idx[c.qp & 4095]]++;
        p = end_buf(e, off);
        if (probes && p->magic == PROBE_MAGIC) {
            uint32_t k = ctl->nlat;
            struct pvrdma_ring_state *cqn = fh_ptr(&e->d->h,
                                                   e->d->cqn_pages[0]);

            if (k >= LAT_MAX || p->seq != k) {
                die("responder: probe %" PRIu64 ", expected %u", p->seq, k);
            }
            /* threaded: the interrupt follows the CQE from the other thread */
            for (int64_t w = now_ns();
                 !__atomic_load_n(&g_irq_ns, __ATOMIC_ACQUIRE);) {
                if (!g_bql || now_ns() - w > 1000000000ll) {
                    die("responder: a probe's CQE raised no interrupt");
                }
            }
            ctl->lat_cqe[k] = __atomic_load_n(&g_irq_ns, __ATOMIC_ACQUIRE) -
                              p->t0;
            ctl->lat_poll[k] = t1 - p->t0;
            p->magic = 0;
            /* what the driver's interrupt handler does: consume, re-arm */
            __atomic_store_n(&cqn->rx.cons_head,
                             __atomic_load_n(&cqn->rx.prod_tail,
                                             __ATOMIC_ACQUIRE),
                             __ATOMIC_RELEASE);
            __atomic_store_n(&g_irq_ns, 0, __ATOMIC_RELEASE);
            arm_cq(e);
            __atomic_store_n(&ctl->nlat, k + 1, __ATOMIC_RELEASE);
        }
    }
    rsp_repost(e);
}

/* The responder's share of one loop turn. */
static void rsp_service(Bench *b)
{
    int mode = __atomic_load_n(&b->ctl->lat_mode, __ATOMIC_ACQUIRE);

    /* a latency run starts: arm its CQ (it may stay armed after: harmless) */
    if (mode && b->armed_gen != b->ctl->lat_gen) {
        __atomic_store_n(&g_irq_ns, 0, __ATOMIC_RELEASE);
        arm_cq(b->rsp[mode - 1]);
        b->armed_gen = b->ctl->lat_gen;
        __atomic_store_n(&b->ctl->lat_armed, 1, __ATOMIC_RELEASE);
    }
    for (unsigned k = 0; k < 2; k++) {
        rsp_poll(b, b->rsp[k], mode == (int)k + 1);
    }
}

/* e's CQ has a CQE the guest has not polled */
static bool cq_pending(End *e)
{
    struct pvrdma_ring_state *rs = cq_state(e->d, &e->cq);

    return __atomic_load_n(&rs->rx.prod_tail, __ATOMIC_ACQUIRE) != e->cq.cons;
}

/*
 * -g: what a verbs application with a completion channel does between
 * polls.  Take the CQ notifications, arm this side's CQs, look once more
 * (a CQE written before the arm raises nothing), and sleep until a CQ
 * interrupt, at most 1 ms.
 */
static void guest_sleep(Bench *b)
{
    struct pollfd p = { .fd = g_irq_efd, .events = POLLIN };
    bool pending = false;
    uint64_t v;

    for (unsigned k = 0; k < 2; k++) {
        End *e = b->req[0] ? b->req[k] : b->rsp[k];
        struct pvrdma_ring_state *cqn = fh_ptr(&e->d->h, e->d->cqn_pages[0]);

        if (k == 0) {   /* the driver's atomic_set() */
            __atomic_store_n(&cqn->rx.cons_head,
                             __atomic_load_n(&cqn->rx.prod_tail,
                                             __ATOMIC_ACQUIRE),
                             __ATOMIC_RELEASE);
        }
        arm_cq(e);
        pending |= cq_pending(e);
    }
    if (!pending && poll(&p, 1, 1) > 0 &&
        read(g_irq_efd, &v, sizeof(v)) < 0 && errno != EAGAIN) {
        die("interrupt eventfd: %s", strerror(errno));
    }
}

/*
 * One turn of this process's loop.  may_block: if nothing is due and no fd
 * is ready, a blocking run's loop sleeps in poll() (up to 1 ms) until one
 * is, as QEMU's main loop does; otherwise it spins.
 */
static void progress(Bench *b, bool may_block)
{
    if (b->threaded && g_guest_sleeps) {
        guest_sleep(b);     /* the device thread turns the loop */
    } else if (b->threaded) {
        /*
         * the device thread turns the loop: the guest side only polls,
         * and lets a device thread that waits for a core have it
         */
        sched_yield();
    } else if (b->block && may_block) {
        fh_step_wait(b->hosts, b->nhosts, 1);
    } else {
        fh_step(b->hosts, b->nhosts);
    }
    if (b->rsp[0]) {
        rsp_service(b);
    }
}

/* ------------------------------------------------------------------ */
/* Requester                                                           */

/* Write the WQE for QP i's next slot (no doorbell); returns its payload. */
static Probe *req_put(End *e, const Remote *peer, unsigned i, uint32_t opcode)
{
    TQp *q = &e->qp[i];
    unsigned s = q->sq_prod & (e->depth - 1);
    uint64_t off = buf_off(e, i, s);
    struct pvrdma_sq_wqe_hdr h = { 0 };
    struct pvrdma_sge g = { IOVA + off, PAY, e->mr.lkey };

    h.wr_id = off;
    h.opcode = opcode;
    h.send_flags = PVRDMA_SEND_SIGNALED;
    if (opcode != PVRDMA_WR_SEND) {
        h.wr.rdma.remote_addr = IOVA + WR_AREA + off;
        h.wr.rdma.rkey = peer->rkey;
        h.ex.imm_data = WR_AREA + off;
    }
    put_send(e->d, q, &h, &g, 1);
    return end_buf(e, off);
}

/* Poll the requester's CQ; returns the completions. */
static unsigned req_poll(End *e, uint32_t wc_opcode, int64_t *t_last)
{
    struct pvrdma_cqe c;
    unsigned n = 0;

    while (poll_cq(e->d, &e->cq, &c)) {
        if (t_last) {
            *t_last = now_ns();
        }
        if (c.status != PVRDMA_WC_SUCCESS || c.opcode != wc_opcode ||
            c.byte_len != PAY) {
            die("requester: CQE status %u opcode %u length %u", c.status,
                c.opcode, c.byte_len);
        }
        e->credits[e->idx[c.qp & 4095]]++;
        n++;
    }
    return n;
}

static uint32_t wc_of(uint32_t wr)
{
    return wr == PVRDMA_WR_SEND ? PVRDMA_WC_SEND : PVRDMA_WC_RDMA_WRITE;
}

static void req_drain(Bench *b, End *e, uint32_t opcode)
{
    int64_t t0 = now_ns();

    for (unsigned i = 0; i < e->nqp; i++) {
        while (e->credits[i] < e->depth) {
            progress(b, true);
            if (req_poll(e, wc_of(opcode), NULL)) {
                t0 = now_ns();
            }
            stall_check(t0, "draining the send queues");
        }
    }
}

/* 64-byte operations per second, configuration k. */
/* Heap allocations so far: this process's and the responder process's. */
static uint64_t allocs_now(Bench *b)
{
    return bench_allocs() +
           __atomic_load_n(&b->ctl->rsp_allocs, __ATOMIC_RELAXED);
}

/* Ops/s; *allocs: heap allocations per operation over the same window. */
static double run_tput(Bench *b, unsigned k, uint32_t opcode, double secs,
                       double *allocs)
{
    End *e = b->req[k];
    const Remote *peer = &b->ctl->rb[k];
    uint64_t done = 0, done0 = 0, last = 0, a0 = 0, a1 = 0;
    int64_t start = now_ns(), t_meas = start + 200000000ll;
    int64_t t_end = t_meas + (int64_t)(secs * 1e9), t0 = 0, t1, seen = start;
    uint32_t wc = wc_of(opcode);

    for (unsigned i = 0; i < e->nqp; i++) {
        e->credits[i] = e->depth;
    }
    for (unsigned it = 1;; it++) {
        for (unsigned i = 0; i < e->nqp; i++) {
            unsigned n = MIN(e->credits[i], e->batch);

            if (n < e->batch) {
                continue;
            }
            for (unsigned j = 0; j < n; j++) {
                req_put(e, peer, i, opcode);
            }
            dev_lock();
            ring_send(e->d, &e->qp[i]);
            dev_unlock();
            e->credits[i] -= n;
        }
        progress(b, true);
        done += req_poll(e, wc, NULL);
        if (it % 32 == 0) {
            int64_t t = now_ns();

            if (!t0 && t >= t_meas) {
                t0 = t;
                done0 = done;
                a0 = allocs_now(b);
            } else if (t0 && t >= t_end) {
                t1 = t;
                a1 = allocs_now(b);
                break;
            }
            if (done != last) {
                last = done;
                seen = t;
            }
            stall_check(seen, "throughput loop");
        }
    }
    req_drain(b, e, opcode);
    *allocs = done > done0 ? (double)(a1 - a0) / (done - done0) : 0;
    return (done - done0) / ((t1 - t0) / 1e9);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return x < y ? -1 : x > y;
}

static double pct(uint32_t *v, unsigned n, unsigned p)
{
    qsort(v, n, sizeof(*v), cmp_u32);
    return v[(uint64_t)n * p / 100 < n ? (uint64_t)n * p / 100 : n - 1];
}

/* One operation at a time, configuration k: latencies in ns. */
/*
 * One operation at a time, configuration k: latencies in ns.  Stops early,
 * with at least LAT_MIN samples, when the figure took more than cap
 * seconds (a loaded machine that preempts the spinning loops).
 */
#define LAT_MIN 200

static void run_lat(Bench *b, unsigned k, uint32_t opcode, unsigned warm,
                    unsigned iters, double cap, Result *r)
{
    End *e = b->req[k];
    Ctl *ctl = b->ctl;
    const Remote *peer = &ctl->rb[k];
    unsigned total = warm + iters;
    uint32_t *own = g_new(uint32_t, total);
    uint32_t wc = wc_of(opcode);
    int64_t t0 = now_ns(), deadline = t0 + (int64_t)(cap * 1e9);

    if (total > LAT_MAX) {
        die("at most %u latency probes", LAT_MAX);
    }
    for (unsigned i = 0; i < e->nqp; i++) {
        e->credits[i] = e->depth;
    }
    ctl->nlat = 0;
    ctl->lat_gen++;
    __atomic_store_n(&ctl->lat_armed, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&ctl->lat_mode, k + 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&ctl->lat_armed, __ATOMIC_ACQUIRE)) {
        progress(b, false);
        stall_check(t0, "responder arming its CQ");
    }
    for (unsigned p = 0; p < total; p++) {
        unsigned i = p % e->nqp;
        int64_t t_own = 0;
        Probe *pr;

        if (p >= warm + LAT_MIN && p % 64 == 0 && now_ns() > deadline) {
            iters = p - warm;
            break;
        }
        pr = req_put(e, peer, i, opcode);
        pr->magic = PROBE_MAGIC;
        pr->seq = p;
        t0 = now_ns();
        pr->t0 = t0;
        dev_lock();
        ring_send(e->d, &e->qp[i]);
        dev_unlock();
        e->credits[i]--;
        /* sleep (blocking runs) only while the answer is awaited */
        while (!t_own || __atomic_load_n(&ctl->nlat, __ATOMIC_ACQUIRE) <= p) {
            progress(b, !t_own);
            if (!t_own) {
                req_poll(e, wc, &t_own);
            }
            stall_check(t0, "latency probe");
        }
        own[p] = t_own - t0;
        pr->magic = 0;
    }
    __atomic_store_n(&ctl->lat_mode, 0, __ATOMIC_RELEASE);
    r->cqe50 = pct(ctl->lat_cqe + warm, iters, 50);
    r->cqe99 = pct(ctl->lat_cqe + warm, iters, 99);
    r->poll50 = pct(ctl->lat_poll + warm, iters, 50);
    r->own50 = pct(own + warm, iters, 50);
    r->nlat = iters;
    g_free(own);
}

/* ------------------------------------------------------------------ */
/* memcpy                                                              */

/* Copies of 'size' bytes per second, single thread, about secs long. */
static double memcpy_rate(size_t size, double secs)
{
    static volatile size_t vsize;
    char *a = g_malloc(size), *b = g_malloc(size);
    uint64_t n = 0, batch = 1;
    int64_t t0, t;
    size_t sz;

    vsize = size;
    sz = vsize;             /* not a constant: a real memcpy call */
    memset(a, 0x5a, size);
    memset(b, 0xa5, size);
    t0 = now_ns();
    do {
        for (uint64_t i = 0; i < batch; i++) {
            memcpy((n + i) & 1 ? a : b, (n + i) & 1 ? b : a, sz);
            __asm__ volatile("" : : "r"(a), "r"(b) : "memory");
        }
        n += batch;
        if (batch < (1ull << 20) && batch * size < (64ull << 20)) {
            batch *= 2;
        }
        t = now_ns();
    } while (t - t0 < secs * 1e9);
    g_free(a);
    g_free(b);
    return n / ((t - t0) / 1e9);
}

/*
 * The host's floor under one co-resident hop: a REQ-sized datagram through
 * a SOCK_SEQPACKET socket pair, sendmsg -> poll -> recvmsg, as the
 * transport moves a request, one at a time.  HOP_THREAD: both ends in this
 * thread.  HOP_SPIN / HOP_SLEEP: the receiver is another process, polling
 * without waiting / sleeping in poll(); it answers with the one-way time
 * (the sender's CLOCK_MONOTONIC time travels in the datagram).  Median ns;
 * stops early, as latency figures do, after cap seconds.
 */
enum { HOP_THREAD, HOP_SPIN, HOP_SLEEP };

static void hop_poll(int fd, int timeout_ms)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    int r;

    do {
        r = poll(&p, 1, timeout_ms);
    } while (r == 0 || (r < 0 && errno == EINTR));
    if (r < 0) {
        die("poll: %s", strerror(errno));
    }
}

static double socket_hop_ns(int mode, unsigned warm, unsigned iters,
                            double cap)
{
    uint8_t out[sizeof(CrReqMsg) + sizeof(CrSge)] = { 0 }, in[1024];
    uint32_t *v = g_new(uint32_t, iters);
    int64_t deadline = now_ns() + (int64_t)(cap * 1e9);
    int wait = mode == HOP_SLEEP ? -1 : 0;
    pid_t pid = -1;
    unsigned n = 0;
    double med;
    int sv[2];

    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
                   sv)) {
        die("socketpair: %s", strerror(errno));
    }
    if (mode != HOP_THREAD) {
        fflush(NULL);
        pid = fork();
        if (pid < 0) {
            die("fork: %s", strerror(errno));
        }
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            for (;;) {
                int64_t t0, d;
                ssize_t r;

                hop_poll(sv[1], wait);
                r = recv(sv[1], in, sizeof(in), MSG_DONTWAIT);
                d = now_ns();
                if (r != sizeof(out)) {
                    _exit(r == 1 ? 0 : 1);
                }
                memcpy(&t0, in, sizeof(t0));
                d -= t0;
                if (send(sv[1], &d, sizeof(d), MSG_DONTWAIT | MSG_NOSIGNAL) !=
                    sizeof(d)) {
                    _exit(1);
                }
            }
        }
    }
    for (unsigned i = 0; i < warm + iters; i++) {
        struct iovec oi = { out, sizeof(out) }, ii = { in, sizeof(in) };
        struct msghdr om = { .msg_iov = &oi, .msg_iovlen = 1 };
        struct msghdr im = { .msg_iov = &ii, .msg_iovlen = 1 };
        int64_t t0 = now_ns(), d;

        if (i >= warm + LAT_MIN && now_ns() > deadline) {
            break;
        }
        memcpy(out, &t0, sizeof(t0));
        if (sendmsg(sv[0], &om, MSG_DONTWAIT | MSG_NOSIGNAL) != sizeof(out)) {
            die("sendmsg: %s", strerror(errno));
        }
        if (mode == HOP_THREAD) {
            hop_poll(sv[1], 0);
            if (recvmsg(sv[1], &im, MSG_DONTWAIT) != sizeof(out)) {
                die("recvmsg: %s", strerror(errno));
            }
            d = now_ns() - t0;
        } else {
            hop_poll(sv[0], wait);
            if (recv(sv[0], &d, sizeof(d), MSG_DONTWAIT) != sizeof(d)) {
                die("the socket hop's other process failed");
            }
        }
        if (i >= warm) {
            v[n++] = d;
        }
    }
    if (pid > 0) {
        int st;

        send(sv[0], "", 1, MSG_NOSIGNAL);
        waitpid(pid, &st, 0);
    }
    close(sv[0]);
    close(sv[1]);
    med = pct(v, n, 50);
    g_free(v);
    return med;
}

/* ------------------------------------------------------------------ */
/* Runs                                                                */

typedef struct Opts {
    double secs;
    unsigned warm, iters;
    double lat_cap;
    double memcpy_secs;
} Opts;

static const uint32_t ops[2] = { PVRDMA_WR_SEND, PVRDMA_WR_RDMA_WRITE };

/* The requester's figures for every op x configuration: res[op][k]. */
static void run_all_figures(Bench *b, const Opts *o, Result res[2][2])
{
    for (unsigned op = 0; op < 2; op++) {
        for (unsigned k = 0; k < 2; k++) {
            Result *r = &res[op][k];

            r->mops = run_tput(b, k, ops[op], o->secs, &r->allocs) / 1e6;
            run_lat(b, k, op ? PVRDMA_WR_RDMA_WRITE_WITH_IMM : PVRDMA_WR_SEND,
                    o->warm, o->iters, o->lat_cap, r);
        }
    }
}

static void set_up_pair(End req[2], End rsp[2], Dev *da, Dev *db,
                        Ctl *ctl)
{
    for (unsigned k = 0; k < 2; k++) {
        end_init(&req[k], da, k);
        end_init(&rsp[k], db, k);
        end_publish(&req[k], &ctl->ra[k]);
        end_publish(&rsp[k], &ctl->rb[k]);
    }
}

static void run_loopback(const Opts *o, Ctl *ctl, Result res[2][2])
{
    static Node n;
    static End req[2], rsp[2];
    Bench b = { .hosts = { &n.d.h }, .nhosts = 1, .req = { &req[0], &req[1] },
                .rsp = { &rsp[0], &rsp[1] }, .ctl = ctl };

    node_init_loop(&n, 1);
    set_up_pair(req, rsp, &n.d, &n.d, ctl);
    for (unsigned k = 0; k < 2; k++) {
        end_connect(&req[k], &ctl->rb[k], n.gid);
        end_connect(&rsp[k], &ctl->ra[k], n.gid);
        end_fill_rq(&rsp[k]);
        rsp_repost(&rsp[k]);
    }
    run_all_figures(&b, o, res);
    node_fini(&n);
}

static void run_cr_one(const Opts *o, Ctl *ctl, const char *dir,
                       Result res[2][2])
{
    static Node na, nb;
    static End req[2], rsp[2];
    Bench b = { .hosts = { &na.d.h, &nb.d.h }, .nhosts = 2,
                .req = { &req[0], &req[1] }, .rsp = { &rsp[0], &rsp[1] },
                .ctl = ctl };

    node_init_cr(&na, dir, 1);
    node_init_cr(&nb, dir, 2);
    node_wait_peer(&na, b.hosts, 2, nb.gid);
    node_wait_peer(&nb, b.hosts, 2, na.gid);
    set_up_pair(req, rsp, &na.d, &nb.d, ctl);
    for (unsigned k = 0; k < 2; k++) {
        end_connect(&req[k], &ctl->rb[k], nb.gid);
        end_connect(&rsp[k], &ctl->ra[k], na.gid);
        end_fill_rq(&rsp[k]);
        rsp_repost(&rsp[k]);
    }
    fh_pump(b.hosts, 2, 10000);
    run_all_figures(&b, o, res);
    node_fini(&na);
    node_fini(&nb);
}

/* The device thread of a QEMU-like run: QEMU's main loop, as it were. */
static void *dev_thread(void *opaque)
{
    Bench *b = opaque;

    while (!__atomic_load_n(&b->stop, __ATOMIC_ACQUIRE)) {
        qemu_mutex_lock(&b->bql);
        fh_step_wait(b->hosts, b->nhosts, 100);
        qemu_mutex_unlock(&b->bql);
    }
    return NULL;
}

/* ------------------------------------------------------------------ */
/* IOThread-like (mode i): QEMU's AioContext as the device thread      */

/* w's read (or write) handler, unless it was removed meanwhile */
static void io_call(IoWatch *w, bool write)
{
    void (*fn)(void *);

    dev_lock();
    fn = write ? w->write : w->read;
    if (fn) {
        fn(w->arg);
    }
    dev_unlock();
}

static void io_read(void *opaque)
{
    io_call(opaque, false);
}

static void io_write(void *opaque)
{
    io_call(opaque, true);
}

/* AioContext polling: the transport's poll, if the lock is free */
static bool io_poll(void *opaque)
{
    IoWatch *w = opaque;
    bool ready = false;

    if (!qemu_mutex_trylock(g_bql)) {
        ready = w->poll && w->poll(w->arg);
        qemu_mutex_unlock(g_bql);
    }
    return ready;
}

/* The AioContext starts (polling) or stops polling w: tell the transport */
static void io_polling(IoWatch *w, bool polling)
{
    dev_lock();
    if (w->poll_state) {
        w->poll_state(w->arg, polling);
    }
    dev_unlock();
}

static void io_poll_begin(EventNotifier *e)
{
    io_polling(container_of(e, IoWatch, e), true);
}

static void io_poll_end(EventNotifier *e)
{
    io_polling(container_of(e, IoWatch, e), false);
}

/* as pvrdma_dev_iothread.c: the hooks are set in the AioContext's thread */
static void io_hooks(Bench *b, IoWatch *w)
{
    if (!w->poll_state || !w->read) {
        return;
    }
    if (qemu_get_current_aio_context() != b->ctx) {
        g_io_hooks = true;
        qemu_bh_schedule(b->bh);
        return;
    }
    event_notifier_init_fd(&w->e, w->fd);
    aio_set_event_notifier_poll(b->ctx, &w->e, io_poll_begin, io_poll_end);
}

static void io_register(Bench *b, IoWatch *w, bool on)
{
    bool rd = on && w->read;

    if (w->poll_state) {
        w->poll_state(w->arg, false);
    }
    aio_set_fd_handler(b->ctx, w->fd, rd ? io_read : NULL,
                       on && w->write ? io_write : NULL,
                       rd ? io_poll : NULL, rd ? io_read : NULL, w);
    if (rd) {
        io_hooks(b, w);
    }
}

static void bench_set_fd_handler(void *opaque, int fd, void (*read)(void *),
                                 void (*write)(void *), void *arg)
{
    Bench *b = g_io;
    IoWatch *w;

    if (!b) {
        fh_ops.set_fd_handler(opaque, fd, read, write, arg);
        return;
    }
    w = g_hash_table_lookup(b->iow, GINT_TO_POINTER(fd));
    if (!read && !write) {
        if (w) {
            io_register(b, w, false);
            w->read = NULL;
            w->write = NULL;
            w->poll = NULL;
            w->poll_state = NULL;
            g_hash_table_remove(b->iow, GINT_TO_POINTER(fd));
            g_ptr_array_add(b->iow_gone, w);    /* freed at the stop */
        }
        g_hash_table_remove(g_io_polls, GINT_TO_POINTER(fd));
        return;
    }
    if (!w) {
        IoPoll *ip = g_hash_table_lookup(g_io_polls, GINT_TO_POINTER(fd));

        w = g_new0(IoWatch, 1);
        w->fd = fd;
        w->poll = ip ? ip->poll : NULL;
        w->poll_state = ip ? ip->state : NULL;
        g_hash_table_insert(b->iow, GINT_TO_POINTER(fd), w);
    }
    w->read = read;
    w->write = write;
    w->arg = arg;
    io_register(b, w, true);
}

static void bench_set_fd_poll(void *opaque, int fd, bool (*poll)(void *),
                              void (*state)(void *, bool))
{
    IoWatch *w = g_io ? g_hash_table_lookup(g_io->iow, GINT_TO_POINTER(fd))
                      : NULL;
    IoPoll *ip;

    if (!g_io_polls) {
        return;     /* not an IOThread-like run: nobody polls */
    }
    ip = g_new0(IoPoll, 1);
    ip->poll = poll;
    ip->state = state;
    g_hash_table_insert(g_io_polls, GINT_TO_POINTER(fd), ip);
    if (w) {
        if (w->poll_state) {
            w->poll_state(w->arg, false);
        }
        w->poll = poll;
        w->poll_state = state;
        io_hooks(g_io, w);
    }
}

static void bench_kick(void *opaque, unsigned delay_ms)
{
    if (g_io && !delay_ms) {
        qemu_bh_schedule(g_io->bh);
        return;
    }
    fh_ops.kick(opaque, delay_ms);  /* the bench's clock stands still */
}

/* The kick's bottom half: a pass of the run loop. */
static void io_run(void *opaque)
{
    Bench *b = opaque;

    dev_lock();
    if (g_io_hooks) {
        GHashTableIter it;
        gpointer v;

        g_io_hooks = false;
        g_hash_table_iter_init(&it, b->iow);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
            io_hooks(b, v);
        }
    }
    for (unsigned i = 0; i < b->nhosts; i++) {
        b->hosts[i]->run_pending = false;
        pvrdma_core_run(b->hosts[i]->core);
    }
    dev_unlock();
}

static void *io_thread(void *opaque)
{
    Bench *b = opaque;

    qemu_set_current_aio_context(b->ctx);
    while (!__atomic_load_n(&b->stop, __ATOMIC_ACQUIRE)) {
        aio_poll(b->ctx, true);
    }
    return NULL;
}

/* The fake host's watches become the AioContext's (and back: !on). */
static void io_move(Bench *b, bool on)
{
    FakeHost *h = b->hosts[0];

    if (on) {
        GArray *ws = h->watches;

        g_io = b;
        for (guint i = 0; i < ws->len; i++) {
            FhWatch *f = &g_array_index(ws, FhWatch, i);

            bench_set_fd_handler(h, f->fd, f->read, f->write, f->arg);
        }
        g_array_set_size(ws, 0);
        if (h->run_pending) {
            qemu_bh_schedule(b->bh);
        }
        return;
    }
    {
        GHashTableIter it;
        gpointer v;

        g_hash_table_iter_init(&it, b->iow);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
            IoWatch *w = v;

            io_register(b, w, false);
            fh_ops.set_fd_handler(h, w->fd, w->read, w->write, w->arg);
            g_ptr_array_add(b->iow_gone, w);
        }
        g_hash_table_remove_all(b->iow);
        g_io = NULL;
    }
}

static void io_start(Bench *b)
{
    Error *err = NULL;

    b->ctx = aio_context_new(&err);
    if (!b->ctx) {
        die("aio_context_new: %s", error_get_pretty(err));
    }
    aio_context_set_poll_params(b->ctx, g_io_poll_ns, 0, 0, &err);
    if (err) {
        die("aio_context_set_poll_params: %s", error_get_pretty(err));
    }
    b->bh = aio_bh_new(b->ctx, io_run, b);
    b->iow = g_hash_table_new(NULL, NULL);
    b->iow_gone = g_ptr_array_new_with_free_func(g_free);
    io_move(b, true);
    if (pthread_create(&b->dev, NULL, io_thread, b)) {
        die("cannot start the IOThread-like thread");
    }
}

static void io_stop(Bench *b)
{
    __atomic_store_n(&b->stop, 1, __ATOMIC_RELEASE);
    aio_notify(b->ctx);
    pthread_join(b->dev, NULL);
    io_move(b, false);
    qemu_bh_delete(b->bh);
    g_hash_table_destroy(b->iow);
    g_ptr_array_free(b->iow_gone, true);
    aio_context_unref(b->ctx);
    b->ctx = NULL;
}

static void threads_start(Bench *b)
{
    if (!b->threaded) {
        return;
    }
    if (g_guest_sleeps) {   /* this process's (after the fork) */
        g_irq_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (g_irq_efd < 0) {
            die("eventfd: %s", strerror(errno));
        }
    }
    qemu_mutex_init(&b->bql);
    if (b->iothread) {
        g_bql = &b->bql;
        io_start(b);
        return;
    }
    b->hosts[0]->bql = &b->bql;
    b->hosts[0]->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (b->hosts[0]->wake_fd < 0) {
        die("eventfd: %s", strerror(errno));
    }
    g_bql = &b->bql;
    if (pthread_create(&b->dev, NULL, dev_thread, b)) {
        die("cannot start the device thread");
    }
}

static void threads_stop(Bench *b)
{
    if (!b->threaded) {
        return;
    }
    if (g_irq_efd >= 0) {
        close(g_irq_efd);
        g_irq_efd = -1;
    }
    if (b->iothread) {
        io_stop(b);
        g_bql = NULL;
        qemu_mutex_destroy(&b->bql);
        return;
    }
    __atomic_store_n(&b->stop, 1, __ATOMIC_RELEASE);
    pthread_join(b->dev, NULL);
    b->hosts[0]->bql = NULL;
    close(b->hosts[0]->wake_fd);
    b->hosts[0]->wake_fd = -1;
    g_bql = NULL;
    qemu_mutex_destroy(&b->bql);
}

/* CPU time of the device thread so far, ns. */
static int64_t dev_cpu_ns(Bench *b)
{
    struct timespec ts;
    clockid_t cid;

    if (pthread_getcpuclockid(b->dev, &cid) || clock_gettime(cid, &ts)) {
        die("no CPU clock for the device thread");
    }
    return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void wait_state(Bench *b, int *state, int want, const char *what)
{
    int64_t t0 = now_ns();

    while (__atomic_load_n(state, __ATOMIC_ACQUIRE) < want) {
        progress(b, false);
        stall_check(t0, what);
    }
}

/* The responder process of the two-process run. */
static void G_GNUC_NORETURN cr_two_responder(const char *dir, Ctl *ctl,
                                             bool block, bool threaded,
                                             bool iothread)
{
    static Node nb;
    static End rsp[2];
    static Bench b;

    b = (Bench) { .hosts = { &nb.d.h }, .nhosts = 1,
                  .rsp = { &rsp[0], &rsp[1] }, .ctl = ctl, .block = block,
                  .threaded = threaded || iothread, .iothread = iothread };
    uint8_t gid_a[16];

    g_child = true;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* the transport's node id is g_random_int(): not the parent's sequence */
    g_random_set_seed(getpid() ^ (uint32_t)now_ns());
    make_gid(gid_a, 1);
    node_init_cr(&nb, dir, 2);
    node_wait_peer(&nb, b.hosts, 1, gid_a);
    for (unsigned k = 0; k < 2; k++) {
        end_init(&rsp[k], &nb.d, k);
        end_publish(&rsp[k], &ctl->rb[k]);
    }
    __atomic_store_n(&ctl->b_state, 1, __ATOMIC_RELEASE);
    wait_state(&b, &ctl->a_state, 1, "requester's QPs");
    for (unsigned k = 0; k < 2; k++) {
        end_connect(&rsp[k], &ctl->ra[k], gid_a);
        end_fill_rq(&rsp[k]);
        rsp_repost(&rsp[k]);
    }
    __atomic_store_n(&ctl->b_state, 2, __ATOMIC_RELEASE);
    threads_start(&b);
    for (unsigned it = 0; !__atomic_load_n(&ctl->done, __ATOMIC_ACQUIRE);
         it++) {
        if (b.threaded && __atomic_load_n(&ctl->idle, __ATOMIC_ACQUIRE)) {
            __atomic_store_n(&ctl->rsp_dev_cpu, dev_cpu_ns(&b),
                             __ATOMIC_RELEASE);
            g_usleep(1000);     /* the guest sleeps too */
            continue;
        }
        progress(&b, true);
        __atomic_store_n(&ctl->rsp_allocs, bench_allocs(), __ATOMIC_RELAXED);
        if (it % 4096 == 0 && getppid() == 1) {
            die("the requester process is gone");
        }
    }
    threads_stop(&b);
    node_fini(&nb);
    __atomic_store_n(&ctl->b_state, 3, __ATOMIC_RELEASE);
    _exit(0);
}

#define IDLE_SECS   10

/*
 * The two-process runs; threaded: QEMU-like, and *idle_pct is then the
 * CPU both device threads used while both sides were idle, in % of a core.
 */
static bool run_cr_two(const Opts *o, Ctl *ctl, const char *dir, bool block,
                       bool threaded, bool iothread, Result res[2][2],
                       double *idle_pct)
{
    static Node na;
    static End req[2];
    static Bench b;

    b = (Bench) { .hosts = { &na.d.h }, .nhosts = 1,
                  .req = { &req[0], &req[1] }, .ctl = ctl, .block = block,
                  .threaded = threaded || iothread, .iothread = iothread };
    uint8_t gid_b[16];
    int st;
    pid_t pid;

    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        fprintf(stderr, "bench-core: fork: %s; no two-process run\n",
                strerror(errno));
        return false;
    }
    if (pid == 0) {
        cr_two_responder(dir, ctl, block, threaded, iothread);
    }
    make_gid(gid_b, 2);
    node_init_cr(&na, dir, 1);
    node_wait_peer(&na, b.hosts, 1, gid_b);
    for (unsigned k = 0; k < 2; k++) {
        end_init(&req[k], &na.d, k);
        end_publish(&req[k], &ctl->ra[k]);
    }
    __atomic_store_n(&ctl->a_state, 1, __ATOMIC_RELEASE);
    wait_state(&b, &ctl->b_state, 1, "responder's QPs");
    for (unsigned k = 0; k < 2; k++) {
        end_connect(&req[k], &ctl->rb[k], gid_b);
    }
    wait_state(&b, &ctl->b_state, 2, "responder's QPs in RTS");
    threads_start(&b);
    run_all_figures(&b, o, res);
    if (b.threaded) {
        int64_t c0, c1;

        __atomic_store_n(&ctl->idle, 1, __ATOMIC_RELEASE);
        g_usleep(200000);
        c0 = dev_cpu_ns(&b) + __atomic_load_n(&ctl->rsp_dev_cpu,
                                              __ATOMIC_ACQUIRE);
        g_usleep(IDLE_SECS * 1000000);
        c1 = dev_cpu_ns(&b) + __atomic_load_n(&ctl->rsp_dev_cpu,
                                              __ATOMIC_ACQUIRE);
        *idle_pct = (c1 - c0) / (IDLE_SECS * 1e9) * 100;
        __atomic_store_n(&ctl->idle, 0, __ATOMIC_RELEASE);
    }
    threads_stop(&b);
    __atomic_store_n(&ctl->done, 1, __ATOMIC_RELEASE);
    wait_state(&b, &ctl->b_state, 3, "responder leaving");
    node_fini(&na);
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
        die("the responder process failed");
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* Report                                                              */

/* 64-byte ops/s: loopback, co-resident with 1 QP and with 64 (issue 24) */
#define OPS_TARGET_LOOP 10e6
#define OPS_TARGET_1QP  5e6
#define OPS_TARGET_64QP 8e6
#define LAT_TARGET  1000.0      /* ns, doorbell to peer CQE */

/*
 * A row whose figures are missing (no operation completed, no latency
 * sample) says "no figure" and makes the run fail: a zero never meets a
 * target.
 */
static bool print_row(const char *transport, bool loop, unsigned op,
                      unsigned k, const Result *r)
{
    double target = loop ? OPS_TARGET_LOOP : k ? OPS_TARGET_64QP :
                    OPS_TARGET_1QP;
    double ro = r->mops * 1e6 / target, rl = r->cqe50 / LAT_TARGET;

    if (!(r->mops > 0) || !r->nlat || !(r->cqe50 > 0)) {
        printf("%-22s %-5s %3u  no figure (%.3f Mops/s, %u latency "
               "samples)\n", transport, op ? "WRITE" : "SEND", cfg_nqp[k],
               r->mops, r->nlat);
        return false;
    }
    printf("%-22s %-5s %3u  %7.3f %5.2f %-4s  %8.2f %8.2f %5.2f %-4s  %8.2f "
           "%8.2f %7u %9.2f\n",
           transport, op ? "WRITE" : "SEND", cfg_nqp[k], r->mops, ro,
           ro >= 1 ? "met" : "MISS", r->cqe50 / 1000, r->cqe99 / 1000, rl,
           rl <= 1 ? "met" : "MISS", r->poll50 / 1000, r->own50 / 1000,
           r->nlat, r->allocs);
    return true;
}

/* false if a row had no figure */
static bool print_table(const char *names[NT], Result res[NT][2][2],
                        const bool ran[NT])
{
    bool all = true;

    printf("\n%-22s %-5s %3s  %7s %5s %-4s  %8s %8s %5s %-4s  %8s %8s %7s "
           "%9s\n",
           "transport", "op", "QPs", "Mops/s", "/tgt", "", "CQE p50",
           "CQE p99", "/1us", "", "poll p50", "own p50", "samples",
           "allocs/op");
    printf("%-22s %-5s %3s  %7s %5s %-4s  %8s %8s %5s %-4s  %8s %8s %7s "
           "%9s\n",
           "", "", "", "", "", "", "us", "us", "", "", "us", "us", "", "");
    for (unsigned t = 0; t < NT; t++) {
        if (!ran[t]) {
            continue;
        }
        for (unsigned op = 0; op < 2; op++) {
            for (unsigned k = 0; k < 2; k++) {
                all &= print_row(names[t], t == 0, op, k, &res[t][op][k]);
            }
        }
    }
    return all;
}

static void usage(void)
{
    fprintf(stderr, "usage: bench-core [-t SECS] [-n LAT_ITERS] "
            "[-w LAT_WARMUP] [-L LAT_SECS] [-m " MODES "] [-c MEMCPY_SECS] "
            "[-P POLL_NS] [-g]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    static const char *names[NT] = {
        "loopback (1 device)", "co-resident, 1 proc", "co-res., 2 procs spin",
        "co-res., 2 procs sleep", "co-res., 2 QEMU-like",
        "co-res., 2 IOThreads",
    };
    Opts o = {
        .secs = 1.0, .warm = 2000, .iters = 20000, .lat_cap = 2.0,
        .memcpy_secs = 0.5,
    };
    const char *modes = MODES;
    static Result res[NT][2][2];
    bool ran[NT] = { false };
    double m64[2] = { 0 }, m64k[2] = { 0 }, hop[3];
    double idle_pct[NT] = { -1, -1, -1, -1, -1, -1 };
    Ctl *ctl;
    bool figures;
    int c;

    alloc_env(argv);
    alloc_check();
    fh_process_init(false);
    while ((c = getopt(argc, argv, "t:n:w:m:c:L:P:g")) != -1) {
        switch (c) {
        case 'g':
            g_guest_sleeps = true;
            break;
        case 'P':
            g_poll_ns = g_io_poll_ns = g_ascii_strtoull(optarg, NULL, 0);
            break;
        case 'L': o.lat_cap = atof(optarg); break;
        case 'c': o.memcpy_secs = atof(optarg); break;
        case 't': o.secs = atof(optarg); break;
        case 'n': o.iters = atoi(optarg); break;
        case 'w': o.warm = atoi(optarg); break;
        case 'm': modes = optarg; break;
        default: usage();
        }
    }
    if (o.secs <= 0 || o.iters < LAT_MIN || o.warm + o.iters > LAT_MAX ||
        o.memcpy_secs < 0 || o.lat_cap <= 0) {
        usage();
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (g_guest_sleeps) {
        printf("# -g: the QEMU-like and IOThread-like guests sleep on their "
               "CQ interrupts\n");
    }
    bench_ops = fh_ops;
    bench_ops.notify = bench_notify;
    /* mode i's: the fake host's own until an IOThread-like run starts */
    bench_ops.set_fd_handler = bench_set_fd_handler;
    bench_ops.set_fd_poll = bench_set_fd_poll;
    bench_ops.kick = bench_kick;
    ctl = mmap(NULL, sizeof(Ctl), PROT_READ | PROT_WRITE,
               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (ctl == MAP_FAILED) {
        die("mmap: %s", strerror(errno));
    }
    g_ctl = ctl;

    if (o.memcpy_secs) {
        m64[0] = memcpy_rate(64, o.memcpy_secs);
        m64k[0] = memcpy_rate(64 * 1024, o.memcpy_secs);
    }
    printf("# throughput: %.1f s measured per figure after 0.2 s warm-up; "
           "latency: %u samples after %u warm-up\n", o.secs, o.iters, o.warm);
    for (unsigned t = 0; t < NT; t++) {
        char *dir = NULL;

        if (!strchr(modes, MODES[t])) {
            continue;
        }
        printf("# running %s ...\n", names[t]);
        memset(ctl, 0, sizeof(*ctl));
        if (t) {
            dir = g_dir_make_tmp("pvrdma-bench-XXXXXX", NULL);
            if (!dir) {
                die("cannot create a rendezvous directory");
            }
        }
        if (t == 0) {
            run_loopback(&o, ctl, res[t]);
            ran[t] = true;
        } else if (t == 1) {
            run_cr_one(&o, ctl, dir, res[t]);
            ran[t] = true;
        } else {
            /*
             * one thread for device and guest: polling would stall both;
             * the IOThread-like pair polls in its AioContext instead
             */
            g_node_poll = t == 4 ? g_poll_ns : 0;
            if (t == 5) {
                g_io_polls = g_hash_table_new_full(NULL, NULL, NULL, g_free);
            }
            ran[t] = run_cr_two(&o, ctl, dir, t == 3, t == 4, t == 5, res[t],
                                &idle_pct[t]);
            if (g_io_polls) {
                g_hash_table_destroy(g_io_polls);
                g_io_polls = NULL;
            }
        }
        if (dir) {
            char *lock = g_build_filename(dir, ".lock", NULL);

            unlink(lock);
            if (rmdir(dir)) {
                fprintf(stderr, "bench-core: %s left behind: %s\n", dir,
                        strerror(errno));
            }
            g_free(lock);
            g_free(dir);
        }
    }
    if (o.memcpy_secs) {
        m64[1] = memcpy_rate(64, o.memcpy_secs);
        m64k[1] = memcpy_rate(64 * 1024, o.memcpy_secs);
    }
    for (int i = HOP_THREAD; i <= HOP_SLEEP; i++) {
        hop[i] = socket_hop_ns(i, o.warm, o.iters, o.lat_cap);
    }

    figures = print_table(names, res, ran);
    if (o.memcpy_secs) {
        printf("\nhost memcpy, one thread (start / end of this run):\n");
        printf("  64 B:   %7.1f / %7.1f M copies/s  (%6.0f / %6.0f MB/s)\n",
               m64[0] / 1e6, m64[1] / 1e6, m64[0] * 64 / 1e6,
               m64[1] * 64 / 1e6);
        printf("  64 KiB: %7.0f / %7.0f MB/s\n", m64k[0] * 65536 / 1e6,
               m64k[1] * 65536 / 1e6);
    }
    if (idle_pct[4] >= 0) {
        printf("idle QEMU-like pair (poll-max-ns %" PRIu64 "): its two "
               "device threads used %.3f %% of a core over %d s (this "
               "program's emulation; two real QEMUs: scripts/bench-idle.sh)"
               "\n", g_poll_ns, idle_pct[4], IDLE_SECS);
    }
    if (idle_pct[5] >= 0) {
        printf("idle IOThread-like pair (AioContext poll-max-ns %" PRIu64
               ", adaptive): its two device threads used %.3f %% of a core "
               "over %d s\n", g_io_poll_ns, idle_pct[5], IDLE_SECS);
    }
    printf("host floor of one co-resident hop (sendmsg -> poll -> recvmsg "
           "of a %zu-byte datagram), p50:\n"
           "  in one thread %.2f us; to a spinning process %.2f us; to a "
           "sleeping process %.2f us\n",
           sizeof(CrReqMsg) + sizeof(CrSge), hop[HOP_THREAD] / 1000,
           hop[HOP_SPIN] / 1000, hop[HOP_SLEEP] / 1000);
    printf("\nMops/s: 64-byte signaled RC operations per second, completions "
           "polled (/tgt: ratio to the target: 10 M ops/s loopback, 5 M "
           "with 1 QP, 8 M with 64).\n"
           "CQE: send doorbell -> receive CQE written at the peer (its CQ "
           "interrupt, time-stamped); /1us: p50 against the 1 us target.\n"
           "poll: the same CQE seen by the peer's poll loop; own: the "
           "requester's send CQE polled.\n"
           "WRITE latency uses RDMA WRITE WITH IMM (a plain WRITE makes no "
           "CQE at the peer). 1 QP: 256 deep, batches of 32; 64 QPs: 16 "
           "deep, batches of 8.\n");
    munmap(ctl, sizeof(Ctl));
    if (!figures) {
        fprintf(stderr, "bench-core: no figure for some rows (see above)\n");
        return 1;
    }
    return 0;
}
