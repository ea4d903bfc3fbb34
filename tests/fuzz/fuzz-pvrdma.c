/*
 * libFuzzer target for the QEMU-free pvrdma core: the input (see
 * fuzz-pvrdma.h) drives register writes, the DSR, command slots, page
 * directories, ring contents and indices, and UAR doorbells against the
 * unit tests' fake host, whose RAM has an MMIO hole in it; in host HCA
 * mode also the host device's completions, events and failures (the unit
 * tests' fake host HCA).
 *
 * Besides what ASan/UBSan/LSan and libFuzzer's timeout report, every reset
 * must release every guest mapping and every host twin, and no unmap may
 * lack its map.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "fake-host.h"
#include "fake-hca.h"
#include "fuzz-pvrdma.h"
#include "fuzz-input.h"
#include "hw/rdma/pvrdma_loopback.h"


typedef struct Alloc {
    uint64_t pdir;
    uint64_t first;     /* gpa of page 0; the pages are contiguous */
    uint32_t npages;
} Alloc;

typedef struct Fz {
    FakeHost h;
    PvrdmaCore c;
    uint32_t next_page;
    Alloc alloc[FZ_MAX_ALLOCS];
    uint32_t nalloc;
    FakeHca hca;            /* host HCA mode once c.owner is set */
} Fz;

/* PVRDMA_FUZZ_VERBOSE=1: log guest errors and command results (repro) */
static bool verbose;

static void skip(Input *in, size_t bytes)
{
    bytes = MIN(bytes, in->n);
    in->p += bytes;
    in->n -= bytes;
}

static uint64_t page_gpa(uint32_t page)
{
    return FH_RAM_BASE + (uint64_t)page * FH_PAGE;
}

/* Copy len input bytes to guest RAM at gpa, clipped to the arena. */
static void put_bytes(Fz *f, uint64_t gpa, Input *in, uint32_t len)
{
    uint64_t end = f->h.base + f->h.size;
    uint8_t *dst;

    if (gpa < f->h.base || gpa >= end) {
        skip(in, len);
        return;
    }
    dst = f->h.ram + (gpa - f->h.base);
    for (uint32_t i = 0; i < len; i++) {
        uint8_t b = get(in, 1);

        if (gpa + i < end) {
            dst[i] = b;
        }
    }
}

static void check_no_mappings(Fz *f)
{
    if (fh_outstanding(&f->h) || f->h.bad_unmaps) {
        fprintf(stderr, "pvrdma fuzz: %u mappings outstanding, %" PRIu64
                " bad unmaps after reset\n", fh_outstanding(&f->h),
                f->h.bad_unmaps);
        abort();
    }
    if (f->c.owner && f->hca.twins) {
        fprintf(stderr, "pvrdma fuzz: %d host twins left after reset\n",
                f->hca.twins);
        abort();
    }
}

/*
 * Ring invariants the core relies on: the geometry fits the mapped pages,
 * the index period and slot count follow nelems (pvrdma_ring_init), and
 * the device's own index lies inside the period.
 */
static void check_ring(const PvrdmaRing *r)
{
    uint32_t period = 1;

    if (!r->page) {
        return;
    }
    while ((((r->nelems << 1) - 1) & period) && period < (1u << 25)) {
        period <<= 1;
    }
    if (!r->nelems || r->period != period || r->slots != period / 2 ||
        r->priv >= r->period ||
        (uint64_t)r->nelems * r->elem_size >
        (uint64_t)(r->npages - r->first_page) * FH_PAGE) {
        fprintf(stderr, "pvrdma fuzz: %s ring broken: nelems %u elem %u "
                "pages %u/%u period %u slots %u priv %u\n", r->name,
                r->nelems, r->elem_size, r->first_page, r->npages,
                r->period, r->slots, r->priv);
        abort();
    }
}

static void check_invariants(Fz *f)
{
    PvrdmaCore *c = &f->c;

    check_ring(&c->async_ring);
    check_ring(&c->cqn_ring);
    for (uint32_t h = 0; h < c->cq.size; h++) {
        PvrdmaCQ *cq = c->cq.slot[h];

        if (cq) {
            check_ring(&cq->ring);
        }
    }
    for (uint32_t h = 0; h < c->qp.size; h++) {
        PvrdmaQP *qp = c->qp.slot[h];

        if (qp) {
            check_ring(&qp->sq);
            check_ring(&qp->rq);
        }
    }
    for (uint32_t h = 0; h < c->srq.size; h++) {
        PvrdmaSRQ *srq = c->srq.slot[h];

        if (srq) {
            check_ring(&srq->ring);
        }
    }
}

/* n contiguous zeroed pages (wrapping: later allocations alias earlier). */
static uint64_t bump(Fz *f, uint32_t n)
{
    uint64_t gpa;

    if (f->next_page + n > FZ_HOLE_FIRST) {
        f->next_page = FZ_FIRST_FREE;
    }
    gpa = page_gpa(f->next_page);
    memset(f->h.ram + (gpa - f->h.base), 0, (uint64_t)n * FH_PAGE);
    f->next_page += n;
    return gpa;
}

/* A page directory (one table) over n pages, plus the pages themselves. */
static Alloc *do_alloc(Fz *f, uint32_t n)
{
    Alloc *a = &f->alloc[f->nalloc++ % FZ_MAX_ALLOCS];
    uint64_t dir = bump(f, 2 + n);
    uint64_t *d = fh_ptr(&f->h, dir);
    uint64_t *t = fh_ptr(&f->h, dir + FH_PAGE);

    a->pdir = dir;
    a->first = dir + 2 * FH_PAGE;
    a->npages = n;
    d[0] = dir + FH_PAGE;
    for (uint32_t i = 0; i < n; i++) {
        t[i] = a->first + (uint64_t)i * FH_PAGE;
    }
    return a;
}

static Alloc *pick_alloc(Fz *f, uint8_t k)
{
    uint32_t n = MIN(f->nalloc, FZ_MAX_ALLOCS);

    return n ? &f->alloc[k % n] : NULL;
}

static void boot(Fz *f, Input *in)
{
    uint8_t ver = get(in, 1);
    uint32_t an = get(in, 1), cn = get(in, 1);
    struct pvrdma_device_shared_region *dsr;
    uint64_t gpa = page_gpa(FZ_DSR_PAGE);
    Alloc *a;

    an = an ? an : 4;
    cn = cn ? cn : 4;
    dsr = fh_ptr(&f->h, gpa);
    memset(dsr, 0, sizeof(*dsr));
    dsr->driver_version = ver ? ver : PVRDMA_VERSION;
    dsr->cmd_slot_dma = page_gpa(FZ_CMD_PAGE);
    dsr->resp_slot_dma = page_gpa(FZ_RESP_PAGE);
    a = do_alloc(f, MIN(an, 64));
    dsr->async_ring_pages.num_pages = an;
    dsr->async_ring_pages.pdir_dma = a->pdir;
    a = do_alloc(f, MIN(cn, 64));
    dsr->cq_ring_pages.num_pages = cn;
    dsr->cq_ring_pages.pdir_dma = a->pdir;
    dsr->uar_pfn64 = FH_UAR_BASE / FH_PAGE;
    dsr->uar_pfn = FH_UAR_BASE / FH_PAGE;
    pvrdma_core_reg_write(&f->c, PVRDMA_REG_DSRLOW, (uint32_t)gpa);
    pvrdma_core_reg_write(&f->c, PVRDMA_REG_DSRHIGH, gpa >> 32);
    pvrdma_core_reg_write(&f->c, PVRDMA_REG_IMR, 0);
    pvrdma_core_reg_write(&f->c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
}

static void command(Fz *f, Input *in, const Alloc *a, uint8_t patch_off)
{
    uint8_t len = get(in, 1);
    uint8_t *slot = fh_ptr(&f->h, page_gpa(FZ_CMD_PAGE));

    memset(slot, 0, sizeof(union pvrdma_cmd_req));
    put_bytes(f, page_gpa(FZ_CMD_PAGE), in, len);
    if (a && patch_off + 8 <= sizeof(union pvrdma_cmd_req)) {
        memcpy(slot + patch_off, &a->pdir, 8);
    }
    pvrdma_core_reg_write(&f->c, PVRDMA_REG_REQUEST, 0);
    if (verbose) {
        fprintf(stderr, "command %u: err %u\n",
                ((union pvrdma_cmd_req *)slot)->hdr.cmd,
                pvrdma_core_reg_read(&f->c, PVRDMA_REG_ERR));
    }
}

/* Host HCA mode, as if the device had it from the start. */
static void hca_attach(Fz *f)
{
    PvrdmaCore *c = &f->c;

    if (c->owner || c->pd.used || c->mr.used || c->cq.used || c->qp.used ||
        c->srq.used) {
        return;
    }
    fake_hca_init(&f->hca, c);
}

/*
 * The guest QP with host QP number qpn (NULL: destroyed meanwhile), or for
 * a receive of SRQ srqh, a QP on it that can receive.
 */
static PvrdmaQP *hca_qp(PvrdmaCore *c, uint32_t qpn, bool srq, uint32_t srqh)
{
    for (uint32_t h = 0; h < c->qp.size; h++) {
        PvrdmaQP *qp = c->qp.slot[h];

        if (qp && qp->twin &&
            (srq ? qp->is_srq && qp->srq == srqh &&
                   qp->state >= PVRDMA_QPS_RTR : qp->qpn == qpn)) {
            return qp;
        }
    }
    return NULL;
}

/*
 * The host completes one outstanding work request (which: the nth of
 * them), on its QP's CQ, as backend/hostverbs.c delivers it: the status,
 * length, immediate data and source QP are the network's.
 */
static void hca_wc(Fz *f, Input *in)
{
    uint32_t which = get(in, 1), status = get(in, 1);
    uint32_t len = get(in, 4), extra = get(in, 4);
    PvrdmaCore *c = &f->c;
    FakeHcaPosted *p = NULL;
    PvrdmaWc wc = { 0 };
    PvrdmaQP *qp;
    PvrdmaCQ *cq;
    unsigned n = 0;

    if (!c->owner) {
        return;
    }
    for (guint i = 0; i < f->hca.posted->len; i++) {
        n += !fake_hca_posted(&f->hca, i)->done;
    }
    which = n ? which % n : 0;
    for (guint i = 0; i < f->hca.posted->len; i++) {
        FakeHcaPosted *q = fake_hca_posted(&f->hca, i);

        if (!q->done && !which--) {
            p = q;
            break;
        }
    }
    if (!p) {
        return;
    }
    p->done = true;
    if (p->recv) {
        f->hca.rq_room++;
    } else {
        f->hca.sq_room++;
    }
    qp = hca_qp(c, p->qpn, p->srq, p->srq_handle);
    cq = qp ? pvrdma_table_get(&c->cq, p->recv ? qp->rcq : qp->scq) : NULL;
    if (!cq || !cq->twin) {
        return;
    }
    wc.qp = qp->handle;
    wc.cq = cq->handle;
    wc.is_send = !p->recv;
    wc.wr_id = p->wr_id;
    wc.status = status & 0x80 ? status & 0x1f : PVRDMA_WC_SUCCESS;
    wc.opcode = !p->recv ? pvrdma_wc_opcode(p->opcode) :
                extra & 1 ? PVRDMA_WC_RECV_RDMA_WITH_IMM : PVRDMA_WC_RECV;
    wc.byte_len = len;
    wc.imm = extra;
    wc.src_qp = extra >> 8;
    wc.wc_flags = extra & 7;
    wc.vendor_err = status;
    pvrdma_complete(c, &wc);
}

static bool has_twin(const PvrdmaTable *t, uint32_t h, size_t hw_off)
{
    const char *o = t->slot[h];

    return o && *(void *const *)(o + hw_off);
}

/* The nth (mod their number) object of table t with a host twin; 0: none */
static uint32_t hca_pick(const PvrdmaTable *t, size_t hw_off, uint32_t n)
{
    uint32_t count = 0;

    for (uint32_t h = 0; h < t->size; h++) {
        count += has_twin(t, h, hw_off);
    }
    if (!count) {
        return 0;
    }
    n %= count;
    for (uint32_t h = 0; h < t->size; h++) {
        if (has_twin(t, h, hw_off) && !n--) {
            return h;
        }
    }
    return 0;
}

/*
 * A host async event, forwarded as backend/hostverbs.c does: about one of
 * the guest's objects with a host twin (the nth), or port and device
 * events with handle 1.
 */
static void hca_event(Fz *f, Input *in)
{
    static const uint32_t types[] = {
        PVRDMA_EVENT_QP_FATAL, PVRDMA_EVENT_QP_REQ_ERR,
        PVRDMA_EVENT_QP_ACCESS_ERR, PVRDMA_EVENT_COMM_EST,
        PVRDMA_EVENT_SQ_DRAINED, PVRDMA_EVENT_QP_LAST_WQE_REACHED,
        PVRDMA_EVENT_CQ_ERR, PVRDMA_EVENT_SRQ_ERR,
        PVRDMA_EVENT_SRQ_LIMIT_REACHED, PVRDMA_EVENT_PORT_ACTIVE,
        PVRDMA_EVENT_PORT_ERR, PVRDMA_EVENT_DEVICE_FATAL,
    };
    uint32_t i = get(in, 1) % G_N_ELEMENTS(types), type = types[i];
    uint32_t n = get(in, 2), handle = 1;
    PvrdmaCore *c = &f->c;

    if (!c->owner) {
        return;
    }
    if (i <= 5) {
        handle = hca_pick(&c->qp, offsetof(PvrdmaQP, twin), n);
    } else if (i == 6) {
        handle = hca_pick(&c->cq, offsetof(PvrdmaCQ, twin), n);
    } else if (i <= 8) {
        handle = hca_pick(&c->srq, offsetof(PvrdmaSRQ, twin), n);
    }
    if (handle) {
        pvrdma_transport_event(c, type, handle);
    }
}

static int hca_errno(uint8_t v)
{
    static const int err[] = { 0, -EINVAL, -ENOMEM, -EIO, -EBUSY };

    return err[v % G_N_ELEMENTS(err)];
}

static void hca_knob(Fz *f, Input *in)
{
    uint8_t which = get(in, 1), v = get(in, 1);

    if (!f->c.owner) {
        return;
    }
    switch (which % 6) {
    case 0:
        f->hca.sq_room = v;         /* 0: the host's send queue is full */
        break;
    case 1:
        f->hca.rq_room = v;
        break;
    case 2:
        f->hca.modify_err = hca_errno(v);
        break;
    case 3:
        f->hca.create_err = hca_errno(v);
        break;
    case 4:
        f->hca.port_state = v & 1 ? PVRDMA_PORT_ACTIVE : PVRDMA_PORT_DOWN;
        break;
    case 5:
        /* a host QP only ever leaves the guest's state for an error */
        f->hca.qp_state = v % 3 == 0 ? -1 : v % 3 == 1 ? PVRDMA_QPS_ERR :
                          PVRDMA_QPS_SQE;
        break;
    }
}

static void step(Fz *f, Input *in)
{
    uint8_t op = get(in, 1) % FZ_OP_COUNT;

    switch (op) {
    case FZ_REG_WRITE: {
        uint32_t reg = (get(in, 1) * 4) & 0xff;
        uint32_t val = get(in, 4);

        pvrdma_core_reg_write(&f->c, reg, val);
        if (reg == PVRDMA_REG_CTL && val == PVRDMA_DEVICE_CTL_RESET) {
            check_no_mappings(f);
        }
        break;
    }
    case FZ_REG_READ:
        pvrdma_core_reg_read(&f->c, (get(in, 1) * 4) & 0xff);
        break;
    case FZ_MEM_WRITE: {
        uint64_t off = get(in, 4) % f->h.size;
        uint8_t len = get(in, 1);

        put_bytes(f, f->h.base + off, in, len);
        break;
    }
    case FZ_MEM_WRITE64: {
        uint64_t off = (get(in, 4) % f->h.size) & ~7ull;
        uint64_t val = get(in, 8);

        memcpy(f->h.ram + off, &val, 8);
        break;
    }
    case FZ_UAR: {
        uint32_t page = get(in, 1) % 8;
        uint32_t off = (get(in, 1) * 4) & 0xfff;

        pvrdma_core_uar_write(&f->c, (uint64_t)page * FH_PAGE + off,
                              get(in, 4));
        break;
    }
    case FZ_RUN:
        pvrdma_core_run(&f->c);
        break;
    case FZ_CLOCK:
        f->h.now += 10 * get(in, 1);
        break;
    case FZ_BOOT:
        boot(f, in);
        break;
    case FZ_CMD:
        command(f, in, NULL, 0);
        break;
    case FZ_ALLOC:
        do_alloc(f, 1 + get(in, 1) % 64);
        break;
    case FZ_CMD_PDIR: {
        Alloc *a = pick_alloc(f, get(in, 1));
        uint8_t off = get(in, 1);

        command(f, in, a, off);
        break;
    }
    case FZ_PAGE_WRITE:
    case FZ_PAGE_WRITE32: {
        Alloc *a = pick_alloc(f, get(in, 1));
        uint8_t pg = get(in, 1);
        uint32_t off = get(in, 2) % FH_PAGE;
        uint64_t gpa;

        if (!a) {
            skip(in, op == FZ_PAGE_WRITE ? get(in, 1) : 4);
            break;
        }
        gpa = a->first + (uint64_t)(pg % a->npages) * FH_PAGE + off;
        if (op == FZ_PAGE_WRITE) {
            put_bytes(f, gpa, in, get(in, 1));
        } else {
            put_bytes(f, gpa & ~3ull, in, 4);
        }
        break;
    }
    case FZ_HCA:
        hca_attach(f);
        break;
    case FZ_HCA_WC:
        hca_wc(f, in);
        break;
    case FZ_HCA_EVENT:
        hca_event(f, in);
        break;
    case FZ_HCA_KNOB:
        hca_knob(f, in);
        break;
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    verbose = getenv("PVRDMA_FUZZ_VERBOSE") != NULL;
    fh_process_init(verbose);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static Fz f;
    PvrdmaLimits lim;
    Input in = { data, size };
    uint64_t kicks;
    bool hca;

    pvrdma_limits_default(&lim);
    /* small tables: exhaustion and handle reuse are reachable */
    lim.max_qp = 8;
    lim.max_cq = 8;
    lim.max_pd = 4;
    lim.max_mr = 8;
    lim.max_srq = 4;
    lim.max_uar = 8;
    lim.max_qp_wr = 256;
    lim.max_cqe = 1024;
    lim.max_srq_wr = 256;
    lim.max_sge = 4;
    lim.max_srq_sge = 4;
    lim.gid_tbl_len = 4;
    fh_init_size(&f.h, FZ_RAM_PAGES * FH_PAGE);
    f.h.hole_start = page_gpa(FZ_HOLE_FIRST);
    f.h.hole_len = FZ_HOLE_PAGES * FH_PAGE;
    f.next_page = FZ_FIRST_FREE;
    f.nalloc = 0;
    pvrdma_core_init(&f.c, &fh_ops, &f.h, &lim);
    /* loopback messages over 512 bytes move in pieces, one per pass */
    f.c.run_bytes = 512;
    pvrdma_core_add_transport(&f.c, pvrdma_loopback_new(&f.c));

    for (unsigned i = 0; i < FZ_MAX_OPS && in.n; i++) {
        step(&f, &in);
        check_invariants(&f);
    }
    /* let queued work finish, as the bottom half would */
    for (unsigned i = 0; i < 64; i++) {
        kicks = f.h.kicks;
        pvrdma_core_run(&f.c);
        if (f.h.kicks == kicks) {
            break;
        }
    }
    if (verbose) {
        fprintf(stderr, "done: %" PRIu64 " commands, %" PRIu64 " doorbells, "
                "%" PRIu64 " guest errors, %u irqs\n", f.c.commands,
                f.c.doorbells, f.c.guest_errors, f.h.irqs->len);
        if (f.c.owner) {
            fprintf(stderr, "host HCA: %u work requests posted, %d twins\n",
                    f.hca.posted->len, f.hca.twins);
        }
    }
    pvrdma_core_reg_write(&f.c, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_RESET);
    check_no_mappings(&f);
    hca = f.c.owner != NULL;
    pvrdma_core_fini(&f.c);
    check_no_mappings(&f);
    if (hca) {
        fake_hca_fini(&f.hca);
    }
    fh_fini(&f.h);
    return 0;
}
