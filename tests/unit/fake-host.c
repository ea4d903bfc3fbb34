/*
 * Fake host for the pvrdma core unit tests.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include "crypto/init.h"
#include "qemu/module.h"
#include "qapi/error.h"
#include "fake-host.h"

GString *fh_host_log;
static bool fh_verbose;

/*
 * QEMU's error output (error_report(), warn_report(): the transports'
 * host warnings) instead of libqemuutil's stub, which
 * prints everything: collected in fh_host_log while a test sets it,
 * printed only when verbose.
 */
int error_vprintf(const char *fmt, va_list ap)
{
    if (fh_host_log) {
        va_list aq;

        va_copy(aq, ap);
        g_string_append_vprintf(fh_host_log, fmt, aq);
        va_end(aq);
    }
    return fh_verbose ? vfprintf(stderr, fmt, ap) : 0;
}

int error_vprintf_unless_qmp(const char *fmt, va_list ap)
{
    return error_vprintf(fmt, ap);
}

void fh_process_init(bool verbose)
{
    fh_verbose = verbose;
    /* the guest errors (qemu_log_mask(LOG_GUEST_ERROR, ...)) */
    qemu_set_log(verbose ? LOG_GUEST_ERROR : 0, NULL);
    /* as QEMU's main does: its random numbers and HMAC (co-resident) */
    qcrypto_init(&error_abort);
    /* and a peer's closed socket is a write error, not a signal */
    signal(SIGPIPE, SIG_IGN);
    /* the QOM types: the co-resident links are QEMU's socket channels */
    module_call_init(MODULE_INIT_QOM);
}

void fh_test_init(int *argc, char ***argv)
{
    fh_process_init(g_getenv("PVRDMA_UNIT_VERBOSE") != NULL);
    g_test_init(argc, argv, NULL);
    /* a failing check fails its test case; the other cases still run */
    g_test_set_nonfatal_assertions();
}

/* Is [gpa, gpa+len) RAM?  Returns the length of RAM from gpa (0: none). */
static uint64_t fh_ram_run(FakeHost *h, uint64_t gpa)
{
    uint64_t end = h->base + h->size;

    if (gpa < h->base || gpa >= end) {
        return 0;
    }
    if (h->hole_len) {
        if (gpa >= h->hole_start && gpa < h->hole_start + h->hole_len) {
            return 0;
        }
        if (gpa < h->hole_start) {
            end = h->hole_start;
        }
    }
    return end - gpa;
}

static bool fh_range_ok(FakeHost *h, uint64_t gpa, uint64_t len)
{
    return len == 0 || fh_ram_run(h, gpa) >= len;
}

static bool fh_dma_read(void *opaque, uint64_t gpa, void *buf, size_t len)
{
    FakeHost *h = opaque;

    if (!fh_range_ok(h, gpa, len)) {
        return false;
    }
    memcpy(buf, h->ram + (gpa - h->base), len);
    return true;
}

static bool fh_dma_write(void *opaque, uint64_t gpa, const void *buf,
                         size_t len)
{
    FakeHost *h = opaque;

    if (!fh_range_ok(h, gpa, len)) {
        return false;
    }
    memcpy(h->ram + (gpa - h->base), buf, len);
    return true;
}

static void *fh_map(void *opaque, uint64_t gpa, uint64_t *len, bool is_write)
{
    FakeHost *h = opaque;
    uint64_t run = fh_ram_run(h, gpa);
    FhMapping m;

    h->map_calls++;
    if (!run || !*len) {
        h->refused_maps++;
        return NULL;
    }
    if (h->block_size) {
        uint64_t off = (gpa - h->base) % h->block_size;

        run = MIN(run, h->block_size - off);
    }
    *len = MIN(*len, run);
    m.host = h->ram + (gpa - h->base);
    m.len = *len;
    m.is_write = is_write;
    g_array_append_val(h->maps, m);
    return m.host;
}

static void fh_unmap(void *opaque, void *host, uint64_t len, bool is_write)
{
    FakeHost *h = opaque;

    h->unmap_calls++;
    for (guint i = 0; i < h->maps->len; i++) {
        FhMapping *m = &g_array_index(h->maps, FhMapping, i);

        if (m->host == host && m->len == len) {
            g_array_remove_index_fast(h->maps, i);
            return;
        }
    }
    h->bad_unmaps++;
}

static void fh_notify(void *opaque, unsigned vector)
{
    FakeHost *h = opaque;

    g_array_append_val(h->irqs, vector);
    if (h->on_notify) {
        h->on_notify(h, vector, h->on_notify_arg);
    }
}

static void fh_kick(void *opaque, unsigned delay_ms)
{
    FakeHost *h = opaque;

    h->kicks++;
    h->last_kick_delay = delay_ms;
    if (!delay_ms) {
        h->run_pending = true;
        if (h->wake_fd >= 0) {  /* the loop may sleep in another thread */
            uint64_t one = 1;

            g_assert_cmpint(write(h->wake_fd, &one, sizeof(one)), ==,
                            sizeof(one));
        }
    } else if (!h->timer_due || h->now + delay_ms < h->timer_due) {
        h->timer_due = h->now + delay_ms;
    }
}

static void fh_get_mac(void *opaque, uint8_t mac[6])
{
    FakeHost *h = opaque;

    memcpy(mac, h->mac, 6);
}

static uint64_t fh_uar_base(void *opaque)
{
    return FH_UAR_BASE;
}

static int64_t fh_now_ms(void *opaque)
{
    FakeHost *h = opaque;

    return h->now;
}

/* A frame of the RoCEv2 transport: to the test's network. */
static void fh_frame_tx(void *opaque, const uint8_t *frame, size_t len)
{
    FakeHost *h = opaque;

    g_assert_nonnull(h->frame_tx);
    h->frame_tx(h->frame_tx_arg, frame, len);
}

static void fh_set_fd_handler(void *opaque, int fd, void (*read)(void *),
                              void (*write)(void *), void *arg);

/* Spin on ready() (a peer process writes what it reads). */
static bool fh_poll_wait(void *opaque, bool (*ready)(void *), void *arg,
                         uint64_t max_ns)
{
    FakeHost *h = opaque;
    struct timespec ts;
    uint64_t end;

    bool ok;

    h->poll_waits++;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    end = ts.tv_sec * 1000000000ull + ts.tv_nsec + max_ns;
    if (h->bql) {
        qemu_mutex_unlock(h->bql);
    }
    __atomic_store_n(&h->in_poll, 1, __ATOMIC_SEQ_CST);
    for (;;) {
        ok = ready(arg);
        if (ok || __atomic_load_n(&h->poll_stop, __ATOMIC_SEQ_CST)) {
            break;
        }
        clock_gettime(CLOCK_MONOTONIC, &ts);
        if (ts.tv_sec * 1000000000ull + ts.tv_nsec >= end) {
            break;
        }
    }
    __atomic_store_n(&h->in_poll, 0, __ATOMIC_SEQ_CST);
    if (h->bql) {
        qemu_mutex_lock(h->bql);
    }
    h->poll_hits += ok;
    return ok;
}

static bool fh_link_up(void *opaque)
{
    return !((FakeHost *)opaque)->link_down;
}

/* A report as a line: "path QPN OLD NEW", "port up|down", "peer-lost WHY" */
static void fh_report(void *opaque, const PvrdmaReport *r)
{
    FakeHost *h = opaque;
    char *line;

    switch (r->kind) {
    case PVRDMA_REPORT_PATH:
        line = g_strdup_printf("path %u %s %s", r->qpn, r->old_path,
                               r->new_path);
        break;
    case PVRDMA_REPORT_PORT:
        line = g_strdup_printf("port %s", r->port_up ? "up" : "down");
        break;
    case PVRDMA_REPORT_GUEST_ERROR:
        /* counted apart: tests count the other reports */
        h->guest_error_reports++;
        g_free(h->last_guest_error);
        h->last_guest_error = g_strdup(r->why);
        return;
    default:
        line = g_strdup_printf("peer-lost %s", r->why);
        break;
    }
    g_ptr_array_add(h->reports, line);
}

/* How many reports line is (fh_report()'s form). */
unsigned fh_reports(FakeHost *h, const char *line)
{
    unsigned n = 0;

    for (guint i = 0; i < h->reports->len; i++) {
        n += !strcmp(g_ptr_array_index(h->reports, i), line);
    }
    return n;
}

static void fh_dirty(void *opaque, const void *host, uint64_t len)
{
    FakeHost *h = opaque;
    const uint8_t *p = host;

    h->dirty_calls++;
    if (p < h->ram || p + len > h->ram + h->size || !len) {
        h->dirty_foreign++;
        return;
    }
    for (uint64_t pg = (p - h->ram) / 4096;
         pg <= (uint64_t)(p + len - 1 - h->ram) / 4096; pg++) {
        h->dirty[pg] = 1;
    }
}

bool fh_dirty_page(FakeHost *h, uint64_t gpa)
{
    g_assert(gpa >= h->base && gpa < h->base + h->size);
    return h->dirty[(gpa - h->base) / 4096];
}

void fh_dirty_clear(FakeHost *h)
{
    memset(h->dirty, 0, h->size / 4096 + 1);
    h->dirty_calls = h->dirty_foreign = 0;
}

const PvrdmaHostOps fh_ops = {
    .dma_read = fh_dma_read,
    .dma_write = fh_dma_write,
    .map = fh_map,
    .unmap = fh_unmap,
    .dirty = fh_dirty,
    .notify = fh_notify,
    .kick = fh_kick,
    .get_mac = fh_get_mac,
    .uar_base = fh_uar_base,
    .now_ms = fh_now_ms,
    .set_fd_handler = fh_set_fd_handler,
    .frame_tx = fh_frame_tx,
    .poll_wait = fh_poll_wait,
    .link_up = fh_link_up,
    .report = fh_report,
};

/* Everything but the guest RAM, which the caller has set up. */
static void fh_init_common(FakeHost *h)
{
    static const uint8_t mac[6] = { 0x00, 0x50, 0x56, 0xaa, 0xbb, 0xcc };

    h->base = FH_RAM_BASE;
    h->next_free = h->base;
    h->maps = g_array_new(FALSE, FALSE, sizeof(FhMapping));
    h->irqs = g_array_new(FALSE, FALSE, sizeof(unsigned));
    h->dirty = g_malloc0(h->size / 4096 + 1);
    h->reports = g_ptr_array_new_with_free_func(g_free);
    h->watches = g_array_new(FALSE, FALSE, sizeof(FhWatch));
    memcpy(h->mac, mac, 6);
    h->now = 1000;
    h->wake_fd = -1;
}

void fh_init_size(FakeHost *h, uint64_t size)
{
    memset(h, 0, sizeof(*h));
    h->size = size;
    h->ram = g_malloc0(h->size);
    h->memfd = -1;
    fh_init_common(h);
}

void fh_init_ram(FakeHost *h, void *ram, uint64_t size)
{
    memset(h, 0, sizeof(*h));
    h->size = size;
    h->ram = ram;
    h->memfd = -1;
    h->ram_borrowed = true;
    fh_init_common(h);
}

void fh_init(FakeHost *h)
{
    fh_init_size(h, FH_RAM_SIZE);
}

void fh_init_memfd(FakeHost *h, uint64_t ram_size)
{
    void *ram;

    memset(h, 0, sizeof(*h));
    h->size = ram_size;
    h->memfd = memfd_create("fake-guest-ram",
                            MFD_CLOEXEC | MFD_ALLOW_SEALING);
    g_assert_cmpint(h->memfd, >=, 0);
    g_assert_cmpint(ftruncate(h->memfd, ram_size), ==, 0);
    /* as memory-backend-memfd's: peers map only RAM that cannot shrink */
    g_assert_cmpint(fcntl(h->memfd, F_ADD_SEALS,
                          F_SEAL_SHRINK | F_SEAL_GROW), ==, 0);
    ram = mmap(NULL, ram_size, PROT_READ | PROT_WRITE, MAP_SHARED, h->memfd,
               0);
    g_assert_true(ram != MAP_FAILED);
    h->ram = ram;
    fh_init_common(h);
}

void fh_fini(FakeHost *h)
{
    g_assert_cmpuint(h->watches->len, ==, 0);
    if (h->memfd >= 0) {
        munmap(h->ram, h->size);
        close(h->memfd);
    } else if (!h->ram_borrowed) {
        g_free(h->ram);
    }
    g_array_free(h->maps, TRUE);
    g_array_free(h->irqs, TRUE);
    g_free(h->dirty);
    g_ptr_array_free(h->reports, TRUE);
    g_clear_pointer(&h->last_guest_error, g_free);
    g_array_free(h->watches, TRUE);
    memset(h, 0, sizeof(*h));
}

void fh_shm_region(FakeHost *h, PvrdmaShmRegion *r)
{
    g_assert_cmpint(h->memfd, >=, 0);
    *r = (PvrdmaShmRegion) {
        .host = h->ram, .size = h->size, .fd = h->memfd, .fd_offset = 0,
    };
}

uint64_t fh_alloc(FakeHost *h, uint32_t n)
{
    uint64_t gpa = h->next_free;

    g_assert_cmpuint(gpa + (uint64_t)n * FH_PAGE, <=, h->base + h->size);
    h->next_free += (uint64_t)n * FH_PAGE;
    memset(h->ram + (gpa - h->base), 0, (uint64_t)n * FH_PAGE);
    return gpa;
}

void fh_skip(FakeHost *h, uint32_t n)
{
    h->next_free += (uint64_t)n * FH_PAGE;
}

void *fh_ptr(FakeHost *h, uint64_t gpa)
{
    g_assert_cmpuint(gpa, >=, h->base);
    g_assert_cmpuint(gpa, <, h->base + h->size);
    return h->ram + (gpa - h->base);
}

unsigned fh_outstanding(const FakeHost *h)
{
    return h->maps->len;
}

unsigned fh_irq_count(const FakeHost *h, unsigned v)
{
    unsigned n = 0;

    for (guint i = 0; i < h->irqs->len; i++) {
        n += g_array_index(h->irqs, unsigned, i) == v;
    }
    return n;
}

uint64_t fh_make_pdir(FakeHost *h, const uint64_t *pages, uint32_t n)
{
    uint32_t ntables = (n + PVRDMA_PDIR_ENTRIES - 1) / PVRDMA_PDIR_ENTRIES;
    uint64_t dir = fh_alloc(h, 1);
    uint64_t *d = fh_ptr(h, dir);

    for (uint32_t t = 0; t < ntables; t++) {
        uint64_t tbl = fh_alloc(h, 1);
        uint64_t *p = fh_ptr(h, tbl);

        d[t] = tbl;
        for (uint32_t i = 0; i < PVRDMA_PDIR_ENTRIES &&
             t * PVRDMA_PDIR_ENTRIES + i < n; i++) {
            p[i] = pages[t * PVRDMA_PDIR_ENTRIES + i];
        }
    }
    return dir;
}

/* ------------------------------------------------------------------ */
/* Event loop                                                          */

static FhWatch *fh_watch_find(FakeHost *h, int fd)
{
    for (guint i = 0; i < h->watches->len; i++) {
        FhWatch *w = &g_array_index(h->watches, FhWatch, i);

        if (w->fd == fd) {
            return w;
        }
    }
    return NULL;
}

static void fh_set_fd_handler(void *opaque, int fd, void (*read)(void *),
                              void (*write)(void *), void *arg)
{
    FakeHost *h = opaque;
    FhWatch *w = fh_watch_find(h, fd);

    g_assert_cmpint(fd, >=, 0);
    if (!read && !write) {
        if (w) {
            g_array_remove_index(h->watches, w - (FhWatch *)h->watches->data);
        }
        return;
    }
    if (!w) {
        FhWatch n = { .fd = fd };

        g_array_append_val(h->watches, n);
        w = &g_array_index(h->watches, FhWatch, h->watches->len - 1);
    }
    w->read = read;
    w->write = write;
    w->arg = arg;
}

unsigned fh_watch_count(const FakeHost *h)
{
    return h->watches->len;
}

/* Run the cores whose kick is due; true if any ran. */
static bool fh_run_due(FakeHost *const *hosts, unsigned n)
{
    bool ran = false;

    for (unsigned i = 0; i < n; i++) {
        FakeHost *h = hosts[i];
        bool timer = h->timer_due && h->now >= h->timer_due;

        if (!h->core || (!h->run_pending && !timer)) {
            continue;
        }
        h->run_pending = false;
        if (timer) {
            h->timer_due = 0;
        }
        pvrdma_core_run(h->core);
        ran = true;
    }
    return ran;
}

/*
 * Poll once, waiting up to timeout_ms (0: not at all), and dispatch; true
 * if any fd was ready.
 */
static bool fh_poll_once(FakeHost *const *hosts, unsigned n, int timeout_ms)
{
    /* on the stack as a rule: QEMU's main loop allocates nothing per turn */
    struct pollfd pfd_buf[64];
    unsigned owner_buf[64];
    g_autofree struct pollfd *pfd_heap = NULL;
    g_autofree unsigned *owner_heap = NULL;
    struct pollfd *pfd = pfd_buf;
    unsigned *owner = owner_buf;
    unsigned k = 0, total = 0;
    int r;

    for (unsigned i = 0; i < n; i++) {
        total += hosts[i]->watches->len;
    }
    if (!total) {
        return false;
    }
    total += hosts[0]->wake_fd >= 0;
    if (total > G_N_ELEMENTS(pfd_buf)) {
        pfd = pfd_heap = g_new0(struct pollfd, total);
        owner = owner_heap = g_new0(unsigned, total);
    }
    memset(pfd, 0, total * sizeof(*pfd));
    for (unsigned i = 0; i < n; i++) {
        for (guint j = 0; j < hosts[i]->watches->len; j++) {
            FhWatch *w = &g_array_index(hosts[i]->watches, FhWatch, j);

            pfd[k].fd = w->fd;
            pfd[k].events = (w->read ? POLLIN : 0) | (w->write ? POLLOUT : 0);
            owner[k++] = i;
        }
    }
    if (hosts[0]->wake_fd >= 0) {
        pfd[k].fd = hosts[0]->wake_fd;
        pfd[k].events = POLLIN;
        owner[k++] = UINT_MAX;
    }
    if (hosts[0]->bql && timeout_ms) {
        qemu_mutex_unlock(hosts[0]->bql);
    }
    do {
        r = poll(pfd, k, timeout_ms);
    } while (r < 0 && errno == EINTR);
    if (hosts[0]->bql && timeout_ms) {
        qemu_mutex_lock(hosts[0]->bql);
    }
    g_assert_cmpint(r, >=, 0);
    if (!r) {
        return false;
    }
    /*
     * Handlers may remove or add watches (and close fds): look each one
     * up again.  A stale readiness at worst calls a non-blocking handler
     * that finds nothing to do.
     */
    for (unsigned i = 0; i < k; i++) {
        FakeHost *h = owner[i] == UINT_MAX ? NULL : hosts[owner[i]];
        FhWatch *w;

        if (!pfd[i].revents) {
            continue;
        }
        if (owner[i] == UINT_MAX) {
            uint64_t v;

            g_assert_cmpint(read(pfd[i].fd, &v, sizeof(v)), ==, sizeof(v));
            continue;   /* a kick: fh_run_due() runs the core next */
        }
        w = fh_watch_find(h, pfd[i].fd);
        if (w && w->read &&
            (pfd[i].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL))) {
            w->read(w->arg);
        }
        w = fh_watch_find(h, pfd[i].fd);
        if (w && w->write &&
            (pfd[i].revents & (POLLOUT | POLLHUP | POLLERR | POLLNVAL))) {
            w->write(w->arg);
        }
    }
    return true;
}

bool fh_step_wait(FakeHost *const *hosts, unsigned n, int timeout_ms)
{
    bool ran = fh_run_due(hosts, n);

    return fh_poll_once(hosts, n, ran ? 0 : timeout_ms) || ran;
}

bool fh_step(FakeHost *const *hosts, unsigned n)
{
    return fh_step_wait(hosts, n, 0);
}

bool fh_pump(FakeHost *const *hosts, unsigned n, int timeout_ms)
{
    int64_t deadline = g_get_monotonic_time() + (int64_t)timeout_ms * 1000;

    for (;;) {
        if (!fh_step(hosts, n)) {
            return true;
        }
        if (g_get_monotonic_time() > deadline) {
            return false;
        }
    }
}

unsigned fh_open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    unsigned n = 0;

    g_assert_nonnull(d);
    while ((e = readdir(d))) {
        n += e->d_name[0] != '.';
    }
    closedir(d);
    return n - 1;   /* the directory's own fd */
}

ssize_t fh_sendmsg(int sock, const void *buf, size_t len, int pass_fd,
                   int flags)
{
    struct iovec iov = { (void *)buf, len };
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

    if (pass_fd >= 0) {
        struct cmsghdr *cm;

        memset(&u, 0, sizeof(u));
        mh.msg_control = u.buf;
        mh.msg_controllen = sizeof(u.buf);
        cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
    }
    return sendmsg(sock, &mh, flags);
}
