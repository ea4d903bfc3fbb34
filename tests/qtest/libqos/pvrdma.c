/*
 * libqos driver for the pvrdma device.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "../libqtest.h"
#include "pvrdma.h"
#include "hw/pci/pci_regs.h"
#include "qobject/qdict.h"

#define MSIX_DATA_MAGIC 0x5a5a0000u

void qpvrdma_msix_vector(QPvrdma *d, unsigned v, uint64_t addr,
                         uint32_t data)
{
    QPCIDevice *dev = d->dev;
    uint64_t off = dev->msix_table_off + v * PCI_MSIX_ENTRY_SIZE;

    qpci_io_writel(dev, dev->msix_table_bar,
                   off + PCI_MSIX_ENTRY_LOWER_ADDR, addr & ~0u);
    qpci_io_writel(dev, dev->msix_table_bar,
                   off + PCI_MSIX_ENTRY_UPPER_ADDR, addr >> 32);
    qpci_io_writel(dev, dev->msix_table_bar, off + PCI_MSIX_ENTRY_DATA,
                   data);
    qpci_io_writel(dev, dev->msix_table_bar,
                   off + PCI_MSIX_ENTRY_VECTOR_CTRL, 0);
}

static void qpvrdma_msix_setup(QPvrdma *d)
{
    qpci_msix_enable(d->dev);
    d->msix_addr = qpvrdma_alloc(d, 4096);
    for (unsigned v = 0; v < PVRDMA_MAX_INTERRUPTS; v++) {
        qpvrdma_msix_vector(d, v, d->msix_addr + 4 * v, MSIX_DATA_MAGIC | v);
    }
}

static QPvrdma *qpvrdma_new(void)
{
    QPvrdma *d = g_new0(QPvrdma, 1);

    d->live_qps = g_hash_table_new(NULL, NULL);
    d->cqs = g_array_new(false, false, sizeof(QPvrdmaCqSeen));
    d->flushes = g_array_new(false, false, sizeof(QPvrdmaFlush));
    d->stashed = g_array_new(false, false, sizeof(QPvrdmaStashed));
    return d;
}

/* The device found, enabled, its BARs mapped and MSI-X set up. */
static void qpvrdma_attach(QPvrdma *d, QPCIBus *bus)
{
    d->dev = qpci_device_find(bus, QPCI_DEVFN(PVRDMA_TEST_SLOT, 1));
    g_assert(d->dev);
    qpci_device_enable(d->dev);
    d->regs = qpci_iomap(d->dev, PVRDMA_BAR_REGS, NULL);
    d->uar = qpci_iomap(d->dev, PVRDMA_BAR_UAR, NULL);
    qpvrdma_msix_setup(d);
}

const char *qpvrdma_mode_device = "";
const char *qpvrdma_mode_args = "";
unsigned qpvrdma_mode_wait_ms;

void qpvrdma_clock_step(QPvrdma *d, uint64_t ns)
{
    const uint64_t step = 1000 * 1000;

    if (!qpvrdma_mode_wait_ms) {
        qtest_clock_step(d->qts, ns);
        return;
    }
    for (uint64_t done = 0; done < ns; done += step) {
        qtest_clock_step(d->qts, MIN(step, ns - done));
        g_usleep(100);  /* the IOThread's turn */
    }
}

typedef struct TestFn {
    void (*fn)(void);
} TestFn;

void qpvrdma_iothread_mode(bool on)
{
    qpvrdma_mode_device = on ? ",iothread=io0" : "";
    qpvrdma_mode_args = on ? " -object iothread,id=io0" : "";
    qpvrdma_mode_wait_ms = on ? 5000 : 0;
}

static void run_in_iothread(gconstpointer data)
{
    const TestFn *t = data;

    qpvrdma_iothread_mode(true);
    t->fn();
    qpvrdma_iothread_mode(false);
}

void qpvrdma_add_func_both(const char *path, void (*fn)(void))
{
    g_autofree char *io = NULL;
    TestFn *t = g_new(TestFn, 1);   /* lives as long as the test list */

    g_assert(g_str_has_prefix(path, "/pvrdma/"));
    io = g_strdup_printf("/pvrdma/iothread/%s", path + strlen("/pvrdma/"));
    t->fn = fn;
    qtest_add_func(path, fn);
    qtest_add_data_func(io, t, run_in_iothread);
}

QPvrdma *qpvrdma_start(const char *extra_fmt, ...)
{
    QPvrdma *d = qpvrdma_new();
    g_autofree char *extra = NULL;
    va_list ap;

    va_start(ap, extra_fmt);
    extra = g_strdup_vprintf(extra_fmt, ap);
    va_end(ap);
    d->args = g_strdup_printf("-nodefaults "
                              "-device vmxnet3,addr=%d.0,multifunction=on,"
                              "romfile=,mac=52:54:00:12:34:56 "
                              "-device pvrdma,id=pvrdma0,addr=%d.1%s%s%s",
                              PVRDMA_TEST_SLOT, PVRDMA_TEST_SLOT,
                              qpvrdma_mode_device, extra, qpvrdma_mode_args);
    d->qs = qtest_pc_boot("%s", d->args);
    d->qts = d->qs->qts;
    d->alloc = &d->qs->alloc;
    qpvrdma_attach(d, d->qs->pcibus);
    return d;
}

void qpvrdma_unplug(QPvrdma *d)
{
    qpci_unplug_acpi_device_test(d->qts, "pvrdma0", PVRDMA_TEST_SLOT);
    d->unplugged = true;
}

void qpvrdma_stop(QPvrdma *d)
{
    if (!d->unplugged) {
        qpci_msix_disable(d->dev);
    }
    g_free(d->dev);
    if (d->qs) {
        qtest_shutdown(d->qs);      /* qos-test stops its own QEMU */
    }
    g_hash_table_destroy(d->live_qps);
    g_array_free(d->cqs, true);
    g_array_free(d->flushes, true);
    g_array_free(d->stashed, true);
    g_free(d->args);
    g_free(d);
}

void qpvrdma_system_reset(QPvrdma *d)
{
    qtest_system_reset(d->qts);
    g_hash_table_remove_all(d->live_qps);
    g_array_set_size(d->cqs, 0);
    g_array_set_size(d->flushes, 0);
    g_array_set_size(d->stashed, 0);
    d->dev->msix_enabled = false;
    qpci_device_enable(d->dev);
    d->regs = qpci_iomap(d->dev, PVRDMA_BAR_REGS, NULL);
    d->uar = qpci_iomap(d->dev, PVRDMA_BAR_UAR, NULL);
    qpvrdma_msix_setup(d);
}

uint32_t qpvrdma_reg_read(QPvrdma *d, uint32_t reg)
{
    return qpci_io_readl(d->dev, d->regs, reg);
}

void qpvrdma_reg_write(QPvrdma *d, uint32_t reg, uint32_t val)
{
    qpci_io_writel(d->dev, d->regs, reg, val);
}

void qpvrdma_uar_write(QPvrdma *d, uint32_t page, uint32_t off, uint32_t val)
{
    qpci_io_writel(d->dev, d->uar, page * PVRDMA_PAGE_SIZE + off, val);
}

uint64_t qpvrdma_alloc(QPvrdma *d, size_t len)
{
    uint64_t a = guest_alloc(d->alloc, ROUND_UP(len, PVRDMA_PAGE_SIZE));

    g_assert(a && !(a & (PVRDMA_PAGE_SIZE - 1)));
    qtest_memset(d->qts, a, 0, ROUND_UP(len, PVRDMA_PAGE_SIZE));
    return a;
}

uint64_t qpvrdma_pdir(QPvrdma *d, const uint64_t *pages, uint32_t npages)
{
    uint64_t dir = qpvrdma_alloc(d, PVRDMA_PAGE_SIZE);
    uint32_t ntables = (npages + 511) / 512;

    g_autofree uint64_t *tbls = g_new0(uint64_t, 512);

    g_assert(ntables <= 512);
    /* one memwrite per page: a qtest round trip per entry is slow (1 GiB) */
    for (uint32_t t = 0; t < ntables; t++) {
        uint32_t n = MIN(512, npages - t * 512);

        tbls[t] = qpvrdma_alloc(d, PVRDMA_PAGE_SIZE);
        qtest_memwrite(d->qts, tbls[t], pages + t * 512, n * 8);
    }
    qtest_memwrite(d->qts, dir, tbls, ntables * 8);
    return dir;
}

void qpvrdma_ring_alloc(QPvrdma *d, QPvrdmaRing *r, uint32_t npages)
{
    r->npages = npages;
    r->pages = g_new(uint64_t, npages);
    for (uint32_t i = 0; i < npages; i++) {
        r->pages[i] = qpvrdma_alloc(d, PVRDMA_PAGE_SIZE);
    }
    r->pdir = qpvrdma_pdir(d, r->pages, npages);
}

void qpvrdma_ring_free(QPvrdmaRing *r)
{
    g_free(r->pages);
    r->pages = NULL;
}

void qpvrdma_setup_dsr(QPvrdma *d, uint32_t driver_version)
{
    struct pvrdma_device_shared_region dsr = { 0 };
    uint64_t uar = qpci_config_readl(d->dev, PCI_BASE_ADDRESS_2) & ~0xfull;

    uar |= (uint64_t)qpci_config_readl(d->dev, PCI_BASE_ADDRESS_3) << 32;
    d->dsr = qpvrdma_alloc(d, sizeof(dsr));
    d->cmd = qpvrdma_alloc(d, PVRDMA_PAGE_SIZE);
    d->resp = qpvrdma_alloc(d, PVRDMA_PAGE_SIZE);
    /* 4 pages each, as the Linux driver (PVRDMA_NUM_RING_PAGES) */
    for (int i = 0; i < 4; i++) {
        d->async_pages[i] = qpvrdma_alloc(d, PVRDMA_PAGE_SIZE);
        d->cq_pages[i] = qpvrdma_alloc(d, PVRDMA_PAGE_SIZE);
    }
    d->async_pdir = qpvrdma_pdir(d, d->async_pages, 4);
    d->cq_pdir = qpvrdma_pdir(d, d->cq_pages, 4);

    dsr.driver_version = driver_version;
    /* as the device: the older of its version and the driver's */
    d->version = MIN(driver_version, qpvrdma_reg_read(d, PVRDMA_REG_VERSION));
    dsr.gos_info.bits_type_ver_misc = 2 | 1 << 2 | 1 << 6;
    dsr.cmd_slot_dma = d->cmd;
    dsr.resp_slot_dma = d->resp;
    dsr.async_ring_pages.num_pages = 4;
    dsr.async_ring_pages.pdir_dma = d->async_pdir;
    dsr.cq_ring_pages.num_pages = 4;
    dsr.cq_ring_pages.pdir_dma = d->cq_pdir;
    if (d->version >= PVRDMA_PPN64_VERSION) {
        dsr.uar_pfn64 = uar >> 12;
    } else {
        dsr.uar_pfn = uar >> 12;
    }
    qtest_memwrite(d->qts, d->dsr, &dsr, sizeof(dsr));
    qpvrdma_reg_write(d, PVRDMA_REG_DSRLOW, (uint32_t)d->dsr);
    qpvrdma_reg_write(d, PVRDMA_REG_DSRHIGH, d->dsr >> 32);
}

void qpvrdma_read_caps(QPvrdma *d, struct pvrdma_device_caps *caps)
{
    qtest_memread(d->qts, d->dsr +
                  offsetof(struct pvrdma_device_shared_region, caps),
                  caps, sizeof(*caps));
}

uint32_t qpvrdma_activate(QPvrdma *d)
{
    qpvrdma_reg_write(d, PVRDMA_REG_IMR, 0);
    qpvrdma_reg_write(d, PVRDMA_REG_CTL, PVRDMA_DEVICE_CTL_ACTIVATE);
    return qpvrdma_reg_read(d, PVRDMA_REG_ERR);
}

QPvrdma *qpvrdma_start_active(const char *extra)
{
    QPvrdma *d = qpvrdma_start("%s", extra ? extra : "");

    qpvrdma_setup_dsr(d, PVRDMA_VERSION);
    g_assert_cmpuint(qpvrdma_activate(d), ==, 0);
    return d;
}

bool qpvrdma_vector_seen(QPvrdma *d, unsigned v)
{
    uint32_t val = qtest_readl(d->qts, d->msix_addr + 4 * v);

    if (val == (MSIX_DATA_MAGIC | v)) {
        qtest_writel(d->qts, d->msix_addr + 4 * v, 0);
        return true;
    }
    return false;
}

bool qpvrdma_wait_vector(QPvrdma *d, unsigned v)
{
    gint64 deadline = g_get_monotonic_time() + 5 * G_TIME_SPAN_SECOND;

    while (g_get_monotonic_time() < deadline) {
        if (qpvrdma_vector_seen(d, v)) {
            return true;
        }
        qtest_clock_step(d->qts, 100);
    }
    return false;
}

/* What every CQ holds now is flushed for QP h (_pvrdma_flush_cqe()) */
static void flush_cqes(QPvrdma *d, uint32_t h)
{
    for (guint i = 0; i < d->cqs->len; i++) {
        QPvrdmaCqSeen *c = &g_array_index(d->cqs, QPvrdmaCqSeen, i);
        QPvrdmaFlush f = { h, c->handle, qtest_readl(d->qts, c->state + 8) };

        g_array_append_val(d->flushes, f);
    }
}

/*
 * The QPs the driver knows after command r answered resp (live_qps), and
 * the CQEs it drops: at DESTROY_QP, and at MODIFY_QP to RESET once
 * answered (pvrdma_reset_qp()).
 */
static void track_qps(QPvrdma *d, const union pvrdma_cmd_req *r,
                      const union pvrdma_cmd_resp *resp)
{
    uint32_t h;

    if (r->hdr.cmd == PVRDMA_CMD_DESTROY_QP) {
        h = r->destroy_qp.qp_handle;
        g_hash_table_remove(d->live_qps, GUINT_TO_POINTER(h));
        flush_cqes(d, h);
    } else if (r->hdr.cmd == PVRDMA_CMD_MODIFY_QP &&
               (r->modify_qp.attr_mask & PVRDMA_QP_STATE) &&
               r->modify_qp.attrs.qp_state == PVRDMA_QPS_RESET &&
               resp->hdr.ack == PVRDMA_CMD_RESP(PVRDMA_CMD_MODIFY_QP) &&
               !resp->hdr.err) {
        flush_cqes(d, r->modify_qp.qp_handle);
    } else if (r->hdr.cmd == PVRDMA_CMD_DESTROY_CQ) {
        for (guint i = d->cqs->len; i-- > 0;) {
            if (g_array_index(d->cqs, QPvrdmaCqSeen, i).handle ==
                r->destroy_cq.cq_handle) {
                g_array_remove_index_fast(d->cqs, i);
            }
        }
        for (guint i = d->flushes->len; i-- > 0;) {
            if (g_array_index(d->flushes, QPvrdmaFlush, i).cq ==
                r->destroy_cq.cq_handle) {
                g_array_remove_index_fast(d->flushes, i);
            }
        }
    } else if (r->hdr.cmd == PVRDMA_CMD_CREATE_QP &&
               resp->hdr.ack == PVRDMA_CMD_RESP(PVRDMA_CMD_CREATE_QP)) {
        h = d->version >= PVRDMA_QPHANDLE_VERSION ?
            resp->create_qp_resp_v2.qp_handle : resp->create_qp_resp.qpn;
        g_hash_table_add(d->live_qps, GUINT_TO_POINTER(h));
    }
}

uint32_t qpvrdma_cmd_post(QPvrdma *d, const void *req, size_t len)
{
    union pvrdma_cmd_req r = { 0 };
    uint32_t err;

    g_assert(len <= sizeof(r));
    memcpy(&r, req, len);
    qtest_memwrite(d->qts, d->cmd, &r, sizeof(r));
    qtest_memset(d->qts, d->resp, 0xee, sizeof(union pvrdma_cmd_resp));
    qpvrdma_vector_seen(d, PVRDMA_INTR_VECTOR_RESPONSE);
    qpvrdma_reg_write(d, PVRDMA_REG_REQUEST, 0);
    err = qpvrdma_reg_read(d, PVRDMA_REG_ERR);
    if (!err) {
        d->posted = r;          /* the command whose response comes */
    }
    return err;
}

bool qpvrdma_cmd_answered(QPvrdma *d)
{
    return qtest_readl(d->qts, d->resp + offsetof(struct pvrdma_cmd_resp_hdr,
                                                  ack)) != 0xeeeeeeee;
}

void qpvrdma_cmd_wait(QPvrdma *d, union pvrdma_cmd_resp *resp)
{
    g_assert(qpvrdma_wait_vector(d, PVRDMA_INTR_VECTOR_RESPONSE));
    qtest_memread(d->qts, d->resp, resp, sizeof(*resp));
    track_qps(d, &d->posted, resp);
}

uint32_t qpvrdma_cmd(QPvrdma *d, const void *req, size_t len,
                     union pvrdma_cmd_resp *resp)
{
    union pvrdma_cmd_resp own;
    uint32_t err;

    if (!resp) {
        resp = &own;
    }
    err = qpvrdma_cmd_post(d, req, len);
    if (err) {
        qtest_memread(d->qts, d->resp, resp, sizeof(*resp));
    } else {
        qpvrdma_cmd_wait(d, resp);  /* as the driver: the vector, then */
    }
    return err;
}

/* ------------------------------------------------------------------ */
/* Counters                                                            */

uint64_t qpvrdma_counter(QPvrdma *d, const char *name)
{
    QDict *rsp = qtest_qmp(d->qts, "{'execute': 'qom-get', 'arguments': "
                           "{'path': '/machine/peripheral/pvrdma0', "
                           "'property': %s}}", name);
    uint64_t v;

    g_assert(qdict_haskey(rsp, "return"));
    v = qdict_get_int(rsp, "return");
    qobject_unref(rsp);
    return v;
}

char *qpvrdma_qps(QPvrdma *d)
{
    QDict *rsp = qtest_qmp(d->qts, "{'execute': 'x-query-pvrdma-qps', "
                           "'arguments': {'id': 'pvrdma0'}}");
    char *v;

    g_assert(qdict_haskey(rsp, "return"));
    v = g_strdup(qdict_get_str(qdict_get_qdict(rsp, "return"),
                               "human-readable-text"));
    qobject_unref(rsp);
    return v;
}

void qpvrdma_counts(QPvrdma *d, QPvrdmaCounts *c)
{
    c->uc = qpvrdma_counter(d, "x-used-uc");
    c->pd = qpvrdma_counter(d, "x-used-pd");
    c->mr = qpvrdma_counter(d, "x-used-mr");
    c->cq = qpvrdma_counter(d, "x-used-cq");
    c->qp = qpvrdma_counter(d, "x-used-qp");
    c->srq = qpvrdma_counter(d, "x-used-srq");
    c->mapped = qpvrdma_counter(d, "x-mapped");
}

void qpvrdma_assert_counts(QPvrdma *d, const QPvrdmaCounts *before)
{
    QPvrdmaCounts now;

    qpvrdma_counts(d, &now);
    g_assert_cmpuint(now.uc, ==, before->uc);
    g_assert_cmpuint(now.pd, ==, before->pd);
    g_assert_cmpuint(now.mr, ==, before->mr);
    g_assert_cmpuint(now.cq, ==, before->cq);
    g_assert_cmpuint(now.qp, ==, before->qp);
    g_assert_cmpuint(now.srq, ==, before->srq);
    g_assert_cmpuint(now.mapped, ==, before->mapped);
}

/* ------------------------------------------------------------------ */
/* The qos graph's node "pvrdma" (tests written against qos-test)      */

static void *pvrdma_node_get_driver(void *obj, const char *interface)
{
    QPvrdmaNode *n = obj;

    if (!g_strcmp0(interface, "pvrdma")) {
        return n->d;
    }
    fprintf(stderr, "%s not present in pvrdma\n", interface);
    g_assert_not_reached();
}

/* Before each test: the device as the Linux driver finds it at probe. */
static void pvrdma_node_start_hw(QOSGraphObject *obj)
{
    QPvrdmaNode *n = (QPvrdmaNode *)obj;

    n->d = qpvrdma_new();
    n->d->qts = n->bus->qts;
    n->d->alloc = n->alloc;
    qpvrdma_attach(n->d, n->bus);
}

static void pvrdma_node_destructor(QOSGraphObject *obj)
{
    QPvrdmaNode *n = (QPvrdmaNode *)obj;

    if (n->d) {
        qpvrdma_stop(n->d);
    }
}

static void *pvrdma_node_create(void *pci_bus, QGuestAllocator *alloc,
                                void *addr)
{
    QPvrdmaNode *n = g_new0(QPvrdmaNode, 1);

    n->bus = pci_bus;
    n->alloc = alloc;
    n->obj.get_driver = pvrdma_node_get_driver;
    n->obj.start_hw = pvrdma_node_start_hw;
    n->obj.destructor = pvrdma_node_destructor;
    return &n->obj;
}

/*
 * "pvrdma" consumes a PCI bus, at function 1 of slot PVRDMA_TEST_SLOT
 * behind the vmxnet3 the device pairs with: a test asks for it with
 * qos_add_test(NAME, "pvrdma", fn, opts) and gets the QPvrdma, the
 * device not yet activated (qpvrdma_setup_dsr(), qpvrdma_activate()).
 */
static void pvrdma_register_nodes(void)
{
    QPCIAddress addr = {
        .devfn = QPCI_DEVFN(PVRDMA_TEST_SLOT, 1),
        .vendor_id = 0x15ad,
        .device_id = 0x0820,
    };
    QOSGraphEdgeOptions opts = {
        .before_cmd_line = "-device vmxnet3,addr=04.0,multifunction=on,"
                           "romfile=,mac=52:54:00:12:34:56",
        .extra_device_opts = "id=pvrdma0,addr=04.1",
    };

    QEMU_BUILD_BUG_ON(PVRDMA_TEST_SLOT != 4);
    add_qpci_address(&opts, &addr);
    qos_node_create_driver("pvrdma", pvrdma_node_create);
    qos_node_consumes("pvrdma", "pci-bus", &opts);
}

libqos_init(pvrdma_register_nodes);
