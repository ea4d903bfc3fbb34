/*
 * pvrdma device: the data path in an IOThread (iothread=), as virtio-blk's
 * dataplane.  While the VM runs, the core's run loop (doorbell -> send
 * queue -> transport -> CQE) is a bottom half and a timer of the
 * IOThread's AioContext: a send doorbell on a vCPU only queues its QP and
 * schedules that bottom half, and the copy happens in the IOThread,
 * without the BQL, beside the vCPUs.  The IOThread's own polling
 * (poll-max-ns, poll-grow, poll-shrink: query-iothreads) sees the
 * bottom half scheduled without a system call while it polls.
 *
 * Ownership: the core is one state, guarded by core_lock while the data
 * path is in the IOThread.  The IOThread takes it for a pass of the run
 * loop; the BQL side (register and UAR accesses, the link poll, reset,
 * QMP and HMP, a migration's start) takes it around its call into the
 * core (pvrdma_core_lock()).  The lock order is BQL, then core_lock; the
 * IOThread never takes the BQL: an interrupt it raises goes through the
 * device's interrupt bottom half in the main loop (pvrdma_notify()), and
 * its DMA reaches only RAM.  When the VM stops (and at unplug) the data
 * path comes back to the main loop first, so a migration saves a core
 * nothing else touches.
 *
 * A transport's file descriptors (the co-resident peers' sockets) are
 * watched where the data path is: the IOThread's AioContext while dp_on,
 * the main loop otherwise, moved with it; their handlers run under
 * core_lock (PvrdmaFdWatch).  Transports whose events come from elsewhere
 * (RoCEv2: the vmxnet3's frames; the host device) stay in the main loop
 * and refuse iothread=.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "block/aio.h"
#include "block/aio-wait.h"
#include "system/iothread.h"
#include "trace/trace-hw_rdma.h"
#include "pvrdma_dev.h"

/*
 * A transport's fd watch (iothread=).  The AioContext calls the wrappers
 * below with the watch, which takes core_lock and calls the transport's
 * handler unless it was removed meanwhile: a handler may be waiting for
 * the lock in one thread while another removes the watch.  A removed
 * watch goes to watches_gone and is freed only where no thread can be in
 * it: in the IOThread's own pass (it was watched there), or once the data
 * path stopped.
 */
typedef struct PvrdmaFdWatch {
    /*
     * Names the fd for aio_set_event_notifier_poll(), the AioContext's
     * door to a handler's poll begin and end, which it calls with the
     * handler's opaque: the watch, whose first member this is.  Never
     * cleaned up: the transport owns the fd.
     */
    EventNotifier e;
    PvrdmaState *s;
    int fd;
    void (*read)(void *);
    void (*write)(void *);
    bool (*poll)(void *);   /* work for read without a system call */
    void (*poll_state)(void *, bool);   /* polling starts, stops */
    void *arg;
    bool registered;        /* in an AioContext now */
    bool in_dp;             /* ... the IOThread's (else the main loop's) */
} PvrdmaFdWatch;

/* w's read (or write) handler, unless the watch was removed meanwhile */
static void pvrdma_watch_call(PvrdmaFdWatch *w, bool write)
{
    void (*fn)(void *);

    pvrdma_core_lock(w->s);
    fn = write ? w->write : w->read;
    if (fn) {
        if (w->in_dp) {
            qatomic_set(&w->s->dp_events, w->s->dp_events + 1);
        }
        fn(w->arg);
    }
    pvrdma_core_unlock(w->s);
}

static void pvrdma_watch_read(void *opaque)
{
    pvrdma_watch_call(opaque, false);
}

static void pvrdma_watch_write(void *opaque)
{
    pvrdma_watch_call(opaque, true);
}

/*
 * The IOThread's adaptive polling: w's poll, if it has one, when the lock
 * is free (whoever holds it serves the transport meanwhile).  Every watch
 * there has this callback, even one that never has work without its fd:
 * an AioContext polls only if all its handlers can.
 */
static bool pvrdma_watch_poll(void *opaque)
{
    PvrdmaFdWatch *w = opaque;
    bool ready = false;

    if (!qemu_mutex_trylock(&w->s->core_lock)) {
        ready = w->poll && w->poll(w->arg);
        qemu_mutex_unlock(&w->s->core_lock);
    }
    return ready;
}

/* The IOThread's polling found work for w's read handler. */
static void pvrdma_watch_poll_ready(void *opaque)
{
    PvrdmaFdWatch *w = opaque;

    qatomic_set(&w->s->dp_polled, w->s->dp_polled + 1);
    pvrdma_watch_read(w);
}

/* The IOThread starts (polling) or stops polling w: tell its transport */
static void pvrdma_watch_polling(PvrdmaFdWatch *w, bool polling)
{
    pvrdma_core_lock(w->s);
    if (w->poll_state) {
        w->poll_state(w->arg, polling);
    }
    pvrdma_core_unlock(w->s);
}

/* EventNotifierHandlers: e is the watch's first member */
static void pvrdma_watch_poll_begin(EventNotifier *e)
{
    pvrdma_watch_polling(container_of(e, PvrdmaFdWatch, e), true);
}

static void pvrdma_watch_poll_end(EventNotifier *e)
{
    pvrdma_watch_polling(container_of(e, PvrdmaFdWatch, e), false);
}

/*
 * w's poll begin and end, set on its handler in the IOThread only
 * (aio_set_event_notifier_poll() takes no lock): a registration made in
 * another thread asks the IOThread's next pass for it.
 */
static void pvrdma_watch_poll_hooks(PvrdmaState *s, PvrdmaFdWatch *w)
{
    AioContext *ctx = iothread_get_aio_context(s->iothread);

    if (!w->poll_state) {
        return;
    }
    if (qemu_get_current_aio_context() != ctx) {
        s->watches_hooks = true;
        qemu_bh_schedule(s->dp_bh);
        return;
    }
    event_notifier_init_fd(&w->e, w->fd);
    aio_set_event_notifier_poll(ctx, &w->e, pvrdma_watch_poll_begin,
                                pvrdma_watch_poll_end);
}

/*
 * Remove w from where it is registered, then (on) register it where the
 * data path is, unless the watches are parked: while the data path moves,
 * the main loop's handlers are only touched by the main thread and the
 * IOThread's by the IOThread.
 */
static void pvrdma_watch_set(PvrdmaState *s, PvrdmaFdWatch *w, bool on)
{
    IOHandler *rd = w->read ? pvrdma_watch_read : NULL;
    IOHandler *wr = w->write ? pvrdma_watch_write : NULL;

    if (w->registered && w->in_dp) {
        if (w->poll_state) {
            /* a new handler starts unpolled, a gone one is never ended */
            w->poll_state(w->arg, false);
        }
        aio_set_fd_handler(iothread_get_aio_context(s->iothread), w->fd,
                           NULL, NULL, NULL, NULL, NULL);
    } else if (w->registered) {
        qemu_set_fd_handler(w->fd, NULL, NULL, NULL);
    }
    w->registered = false;
    if (!on || s->watches_parked || (!rd && !wr)) {
        return;
    }
    w->in_dp = s->dp_on;
    w->registered = true;
    if (w->in_dp) {
        aio_set_fd_handler(iothread_get_aio_context(s->iothread), w->fd,
                           rd, wr, rd ? pvrdma_watch_poll : NULL,
                           rd ? pvrdma_watch_poll_ready : NULL, w);
        if (rd) {
            pvrdma_watch_poll_hooks(s, w);
        }
    } else {
        qemu_set_fd_handler(w->fd, rd, wr, w);
    }
}

/*
 * Free the removed watches no thread can be in (all: the data path is
 * off).  One removed while it was in the IOThread can go in the
 * IOThread's pass: the AioContext skips the deleted handler from then on
 * and frees it at the end of the aio_poll() round that runs this pass
 * (aio_free_deleted_handlers()), before a next poll phase could call its
 * io_poll, and only the IOThread walks that list.
 */
static void pvrdma_watches_reap(PvrdmaState *s, bool all)
{
    GPtrArray *gone = s->watches_gone;

    for (guint i = 0; gone && i < gone->len;) {
        PvrdmaFdWatch *w = g_ptr_array_index(gone, i);

        if (all || w->in_dp) {
            g_ptr_array_remove_index_fast(gone, i);
            g_free(w);
        } else {
            i++;
        }
    }
}

void pvrdma_iothread_watch(PvrdmaState *s, int fd, void (*read)(void *),
                           void (*write)(void *), void *arg)
{
    PvrdmaFdWatch *w;

    if (!s->watches) {
        s->watches = g_hash_table_new(NULL, NULL);
        s->watches_gone = g_ptr_array_new();
    }
    w = g_hash_table_lookup(s->watches, GINT_TO_POINTER(fd));
    if (!read && !write) {
        if (w) {
            pvrdma_watch_set(s, w, false);
            w->read = w->write = NULL;
            w->poll = NULL;
            w->poll_state = NULL;
            g_hash_table_remove(s->watches, GINT_TO_POINTER(fd));
            g_ptr_array_add(s->watches_gone, w);
        }
        return;
    }
    if (!w) {
        w = g_new0(PvrdmaFdWatch, 1);
        w->s = s;
        w->fd = fd;
        g_hash_table_insert(s->watches, GINT_TO_POINTER(fd), w);
    }
    w->read = read;
    w->write = write;
    w->arg = arg;
    pvrdma_watch_set(s, w, true);
}

void pvrdma_iothread_watch_poll(PvrdmaState *s, int fd, bool (*poll)(void *),
                                void (*state)(void *, bool))
{
    PvrdmaFdWatch *w = s->watches ?
        g_hash_table_lookup(s->watches, GINT_TO_POINTER(fd)) : NULL;

    if (w) {
        /* read with core_lock held, as they are set */
        if (w->registered && w->in_dp && w->poll_state) {
            w->poll_state(w->arg, false);
        }
        w->poll = poll;
        w->poll_state = poll ? state : NULL;
        if (w->registered && w->in_dp && w->read) {
            pvrdma_watch_poll_hooks(s, w);
        }
    }
}

/* In the IOThread: the poll hooks other threads' registrations asked for */
static void pvrdma_watches_hooks(PvrdmaState *s)
{
    GHashTableIter it;
    gpointer v;

    s->watches_hooks = false;
    g_hash_table_iter_init(&it, s->watches);
    while (g_hash_table_iter_next(&it, NULL, &v)) {
        PvrdmaFdWatch *w = v;

        if (w->registered && w->in_dp && w->read) {
            pvrdma_watch_poll_hooks(s, w);
        }
    }
}

/*
 * Every watch leaves where it is and is parked (!on), or goes where the
 * data path now is (on); core_lock held.
 */
static void pvrdma_watches_move(PvrdmaState *s, bool on)
{
    GHashTableIter it;
    gpointer w;

    if (!s->watches) {
        return;
    }
    s->watches_parked = !on;
    g_hash_table_iter_init(&it, s->watches);
    while (g_hash_table_iter_next(&it, NULL, &w)) {
        pvrdma_watch_set(s, w, on);
    }
}

void pvrdma_iothread_watches_free(PvrdmaState *s)
{
    if (s->watches) {
        GHashTableIter it;
        gpointer w;

        /* the transports removed theirs; anything left is not watched */
        g_hash_table_iter_init(&it, s->watches);
        while (g_hash_table_iter_next(&it, NULL, &w)) {
            pvrdma_watch_set(s, w, false);
            g_ptr_array_add(s->watches_gone, w);
        }
        g_hash_table_destroy(s->watches);
        pvrdma_watches_reap(s, true);
        g_ptr_array_free(s->watches_gone, true);
        s->watches = NULL;
        s->watches_gone = NULL;
    }
}

/* The IOThread's pass of the run loop. */
static void pvrdma_dp_run(void *opaque)
{
    PvrdmaState *s = opaque;

    qemu_mutex_lock(&s->core_lock);
    if (s->dp_on) {
        qatomic_set(&s->dp_runs, s->dp_runs + 1);
        if (s->watches_hooks) {
            pvrdma_watches_hooks(s);
        }
        pvrdma_core_run(&s->core);
        pvrdma_watches_reap(s, false);
    } else {
        qemu_bh_schedule(s->bh);    /* the main loop has it now */
    }
    qemu_mutex_unlock(&s->core_lock);
}

static void pvrdma_dp_timer(void *opaque)
{
    PvrdmaState *s = opaque;

    qemu_bh_schedule(s->dp_bh);
}

/* A timer's deadline (ns) moves to another timer. */
static void pvrdma_timer_move(QEMUTimer *from, QEMUTimer *to)
{
    int64_t at = timer_expire_time_ns(from);

    if (at != -1) {
        timer_del(from);
        timer_mod_ns(to, at);
    }
}

/*
 * realize, once the transports are known: iothread= takes the data path
 * to the IOThread's AioContext; false (errp set) if a transport cannot
 * go there.
 */
bool pvrdma_iothread_init(PvrdmaState *s, Error **errp)
{
    AioContext *ctx;

    if (!s->iothread) {
        return true;
    }
    for (unsigned i = 0; i < s->links->len; i++) {
        PvrdmaLink *l = g_ptr_array_index(s->links, i);

        if (l->t && !PVRDMA_LINK_GET_CLASS(l)->iothread) {
            error_setg(errp, "pvrdma: iothread= works with the loopback "
                       "and co-resident transports only (not with %s)",
                       PVRDMA_LINK_GET_CLASS(l)->path);
            return false;
        }
    }
    ctx = iothread_get_aio_context(s->iothread);
    qemu_mutex_init(&s->core_lock);
    s->dp_bh = aio_bh_new(ctx, pvrdma_dp_run, s);
    s->dp_timer = aio_timer_new(ctx, QEMU_CLOCK_VIRTUAL, SCALE_MS,
                                pvrdma_dp_timer, s);
    if (runstate_is_running()) {
        pvrdma_iothread_start(s);   /* hotplugged into a running VM */
    }
    return true;
}

static void pvrdma_dp_start_bh(void *opaque)
{
    PvrdmaState *s = opaque;

    qemu_mutex_lock(&s->core_lock);
    s->dp_on = true;
    pvrdma_watches_move(s, true);   /* parked by pvrdma_iothread_start() */
    qemu_mutex_unlock(&s->core_lock);
    qemu_bh_schedule(s->dp_bh);     /* what the main loop still had */
}

/* The VM runs: the data path goes to the IOThread (main loop, BQL). */
void pvrdma_iothread_start(PvrdmaState *s)
{
    if (!s->dp_bh || s->dp_on) {
        return;
    }
    qemu_bh_cancel(s->bh);
    pvrdma_timer_move(s->timer, s->dp_timer);
    qemu_mutex_lock(&s->core_lock);
    pvrdma_watches_move(s, false);  /* out of the main loop, here */
    qemu_mutex_unlock(&s->core_lock);
    aio_wait_bh_oneshot(iothread_get_aio_context(s->iothread),
                        pvrdma_dp_start_bh, s);
    trace_pvrdma_iothread(true);
}

/* In the IOThread: no pass is under way, none starts after this. */
static void pvrdma_dp_stop_bh(void *opaque)
{
    PvrdmaState *s = opaque;

    qemu_mutex_lock(&s->core_lock);
    s->dp_on = false;
    pvrdma_watches_move(s, false);  /* none is left here */
    qemu_mutex_unlock(&s->core_lock);
    qemu_bh_cancel(s->dp_bh);
    pvrdma_timer_move(s->dp_timer, s->timer);
}

/*
 * The VM stops (or the device goes): the data path comes back to the main
 * loop, with what was due there.  Nothing of the device runs in the
 * IOThread afterwards (main loop, BQL).
 */
void pvrdma_iothread_stop(PvrdmaState *s)
{
    if (!s->dp_bh || !s->dp_on) {
        return;
    }
    aio_wait_bh_oneshot(iothread_get_aio_context(s->iothread),
                        pvrdma_dp_stop_bh, s);
    /*
     * What the IOThread wrote comes before what the main loop and the
     * migration thread read next: the wait above ends on a plain flag,
     * which ThreadSanitizer does not see; the lock it does.
     */
    qemu_mutex_lock(&s->core_lock);
    pvrdma_watches_move(s, true);   /* into the main loop, here */
    qemu_mutex_unlock(&s->core_lock);
    pvrdma_watches_reap(s, true);   /* the IOThread is out of them */
    qemu_bh_schedule(s->bh);    /* a kick the IOThread had not served */
    trace_pvrdma_iothread(false);
}

/*
 * The lock also orders these reads before the main loop's writes after
 * aio_wait_bh_oneshot() for ThreadSanitizer, which does not see the plain
 * flag that wait ends on.
 */
static void pvrdma_dp_free_bh(void *opaque)
{
    PvrdmaState *s = opaque;

    qemu_mutex_lock(&s->core_lock);
    qemu_bh_delete(s->dp_bh);
    timer_free(s->dp_timer);
    qemu_mutex_unlock(&s->core_lock);
}

/* unrealize: the IOThread's bottom half and timer go, in the IOThread. */
void pvrdma_iothread_fini(PvrdmaState *s)
{
    if (!s->dp_bh) {
        return;
    }
    pvrdma_iothread_stop(s);
    aio_wait_bh_oneshot(iothread_get_aio_context(s->iothread),
                        pvrdma_dp_free_bh, s);
    qemu_mutex_lock(&s->core_lock);     /* after the bottom half's unlock */
    s->dp_bh = NULL;
    s->dp_timer = NULL;
    qemu_mutex_unlock(&s->core_lock);
    qemu_mutex_destroy(&s->core_lock);
}

/* The core's kick: the run loop now (delay 0) or after delay_ms. */
void pvrdma_kick(void *opaque, unsigned delay_ms)
{
    PvrdmaState *s = opaque;
    QEMUBH *bh = s->dp_on ? s->dp_bh : s->bh;
    QEMUTimer *timer = s->dp_on ? s->dp_timer : s->timer;

    if (delay_ms) {
        /* the earliest deadline wins; later waiters re-arm when it fires */
        timer_mod_anticipate(timer,
                             qemu_clock_get_ms(QEMU_CLOCK_VIRTUAL) + delay_ms);
    } else {
        qemu_bh_schedule(bh);
    }
}

/* Around a call into the core from the BQL side (see the top). */
void pvrdma_core_lock(PvrdmaState *s)
{
    if (s->dp_bh) {
        qemu_mutex_lock(&s->core_lock);
    }
}

void pvrdma_core_unlock(PvrdmaState *s)
{
    if (s->dp_bh) {
        qemu_mutex_unlock(&s->core_lock);
    }
}
