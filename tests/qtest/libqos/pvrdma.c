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
                              "-device pvrdma,id=pvrdma0,addr=%d.1%s",
                              PVRDMA_TEST_SLOT, PVRDMA_TEST_SLOT, extra);
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
    g_free(d->args);
    g_free(d);
}

/* d drives to, which has the VM now; the source goes */
static void take_over(QPvrdma *d, QOSState *to)
{
    QPCIDevice *dev = g_new(QPCIDevice, 1);

    /* the guest's view (BARs, MSI-X) moved with it: same addresses */
    *dev = *d->dev;
    dev->bus = to->pcibus;
    g_free(d->dev);
    qtest_shutdown(d->qs);
    d->qs = to;
    d->qts = to->qts;
    d->alloc = &to->alloc;
    d->dev = dev;
}

void qpvrdma_migrate(QPvrdma *d)
{
    qpvrdma_migrate_to(d, NULL, NULL);
}

void qpvrdma_migrate_to(QPvrdma *d, const char *binary, const char *args)
{
    g_autofree char *sock = g_strdup_printf("%s/pvrdma-mig-%d.sock",
                                            g_get_tmp_dir(), getpid());
    g_autofree char *uri = g_strdup_printf("unix:%s", sock);
    g_autofree char *ours = g_strdup(g_getenv("QTEST_QEMU_BINARY"));
    g_autofree char *st = NULL, *desc = NULL;
    QOSState *to;

    if (args) {
        g_free(d->args);
        d->args = g_strdup(args);
    }
    if (binary) {
        g_setenv("QTEST_QEMU_BINARY", binary, true);
    }
    to = qtest_pc_boot("%s -incoming %s", d->args, uri);
    g_setenv("QTEST_QEMU_BINARY", ours, true);

    migrate(d->qs, to, uri);
    unlink(sock);
    /*
     * migrate() returns when the destination runs, which it does as soon
     * as it has read the whole stream, while the source may not have
     * called the migration completed yet.  Quitting the source then
     * cancels its migration, and QEMU starts its VM again for the moment
     * before it exits: two QEMUs run the VM, and the source's device
     * resumes its co-resident peers, which send to it what is the
     * destination's.  Management waits for the source to complete
     * before it lets it go (as QEMU's migration-test does); so do we.
     */
    st = qpvrdma_mig_wait(d->qts, &desc);
    g_assert_cmpstr(st, ==, "completed");
    take_over(d, to);
}

static QDict *qmp_mig_cap(QTestState *qts, const char *cap, bool on)
{
    return qtest_qmp(qts, "{ 'execute': 'migrate-set-capabilities', "
                     "'arguments': { 'capabilities': [ { 'capability': "
                     "%s, 'state': %i } ] } }", cap, on);
}

char *qpvrdma_mig_wait(QTestState *qts, char **desc)
{
    for (int i = 0; i < 6000; i++) {
        QDict *rsp = qtest_qmp(qts, "{ 'execute': 'query-migrate' }");
        QDict *r = qdict_get_qdict(rsp, "return");
        const char *st = qdict_haskey(r, "status") ?
                         qdict_get_str(r, "status") : "none";

        /*
         * an end, or a postcopy that lost its peer; any other status is
         * a migration under way (later QEMUs add some: postcopy-device)
         */
        if (!strcmp(st, "completed") || !strcmp(st, "failed") ||
            !strcmp(st, "cancelled") || !strcmp(st, "postcopy-paused")) {
            char *ret = g_strdup(st);

            if (desc) {
                *desc = g_strdup(qdict_haskey(r, "error-desc") ?
                                 qdict_get_str(r, "error-desc") : "");
            }
            qobject_unref(rsp);
            return ret;
        }
        qobject_unref(rsp);
        g_usleep(10 * 1000);
    }
    g_assert_not_reached();
}

/*
 * The migration that completed on qts went through postcopy: QEMU said
 * postcopy-active (a MIGRATION event) and sent RAM after the switch.  A
 * small VM may finish in precopy before migrate-start-postcopy takes.
 */
static void mig_was_postcopy(QTestState *qts)
{
    bool active = false;
    QDict *ev, *rsp, *ram;

    while ((ev = qtest_qmp_event_ref(qts, "MIGRATION"))) {
        active |= !strcmp(qdict_get_str(qdict_get_qdict(ev, "data"),
                                        "status"), "postcopy-active");
        qobject_unref(ev);
    }
    g_assert(active);
    rsp = qtest_qmp(qts, "{ 'execute': 'query-migrate' }");
    ram = qdict_get_qdict(qdict_get_qdict(rsp, "return"), "ram");
    g_assert_nonnull(ram);
    g_assert_cmpuint(qdict_get_int(ram, "postcopy-bytes"), >, 0);
    qobject_unref(rsp);
}

bool qpvrdma_migrate_postcopy(QPvrdma *d, char **err)
{
    g_autofree char *sock = g_strdup_printf("%s/pvrdma-mig-%d.sock",
                                            g_get_tmp_dir(), getpid());
    g_autofree char *uri = g_strdup_printf("unix:%s", sock);
    g_autofree char *st = NULL, *desc = NULL;
    QOSState *to = qtest_pc_boot("%s -incoming defer", d->args);
    QDict *rsp;

    rsp = qmp_mig_cap(to->qts, "postcopy-ram", true);
    if (!qdict_haskey(rsp, "return")) {
        /* only QEMU's own refusal (no userfaultfd here) is a reason */
        g_assert(strstr(qdict_get_str(qdict_get_qdict(rsp, "error"), "desc"),
                        "ostcopy"));
        qobject_unref(rsp);
        qtest_shutdown(to);
        return false;
    }
    qobject_unref(rsp);
    rsp = qtest_qmp(to->qts, "{ 'execute': 'migrate-incoming', "
                    "'arguments': { 'uri': %s, 'exit-on-error': false } }",
                    uri);
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    rsp = qmp_mig_cap(d->qts, "postcopy-ram", true);
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    rsp = qmp_mig_cap(d->qts, "events", true);
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    /*
     * Precopy ends when what is left fits in the downtime at the expected
     * bandwidth: unlimited, the qtest VM's zero RAM fits at once and the
     * migration may end before the switch below takes.  Limited, precopy
     * must first send all of it (1.4 s here without the switch), and the
     * switch comes within milliseconds; after it RAM goes at full speed.
     */
    rsp = qtest_qmp(d->qts, "{ 'execute': 'migrate-set-parameters', "
                    "'arguments': { 'max-bandwidth': 100000, "
                    "'max-postcopy-bandwidth': 0 } }");
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    rsp = qtest_qmp(d->qts, "{ 'execute': 'migrate', "
                    "'arguments': { 'uri': %s } }", uri);
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    /* at once: the device state goes over with most of RAM still here */
    rsp = qtest_qmp(d->qts, "{ 'execute': 'migrate-start-postcopy' }");
    if (!err) {
        g_assert(qdict_haskey(rsp, "return"));
    }
    qobject_unref(rsp);
    st = qpvrdma_mig_wait(d->qts, &desc);
    unlink(sock);
    qobject_unref(qmp_mig_cap(d->qts, "events", false));
    if (!err && !strcmp(st, "completed")) {
        mig_was_postcopy(d->qts);
    }
    if (err) {
        if (strcmp(st, "completed")) {
            *err = g_strdup_printf("%s: %s", st, desc);
            qtest_shutdown(to);
            qobject_unref(qmp_mig_cap(d->qts, "postcopy-ram", false));
            return true;
        }
        *err = NULL;
    } else {
        g_assert_cmpstr(st, ==, "completed");
    }
    migrate_allocator(&d->qs->alloc, &to->alloc);
    take_over(d, to);
    return true;
}

bool qpvrdma_bg_snapshot(QPvrdma *d, const char *file, char **err)
{
    g_autofree char *uri = g_strdup_printf("file:%s", file);
    g_autofree char *st = NULL, *desc = NULL;
    QDict *rsp = qmp_mig_cap(d->qts, "background-snapshot", true);

    if (!qdict_haskey(rsp, "return")) {
        qobject_unref(rsp);
        return false;
    }
    qobject_unref(rsp);
    rsp = qtest_qmp(d->qts, "{ 'execute': 'migrate', "
                    "'arguments': { 'uri': %s } }", uri);
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    st = qpvrdma_mig_wait(d->qts, &desc);
    *err = strcmp(st, "completed") ? g_strdup_printf("%s: %s", st, desc) :
                                     NULL;
    qobject_unref(qmp_mig_cap(d->qts, "background-snapshot", false));
    return true;
}

void qpvrdma_restore(QPvrdma *d, const char *file)
{
    g_autofree char *uri = g_strdup_printf("file:%s", file);
    QOSState *to = qtest_pc_boot("%s -incoming defer", d->args);
    QDict *rsp;

    rsp = qtest_qmp(to->qts, "{ 'execute': 'migrate-incoming', "
                    "'arguments': { 'uri': %s } }", uri);
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    qtest_qmp_eventwait(to->qts, "RESUME");
    migrate_allocator(&d->qs->alloc, &to->alloc);
    take_over(d, to);
}

void qpvrdma_system_reset(QPvrdma *d)
{
    qtest_system_reset(d->qts);
    g_hash_table_remove_all(d->live_qps);
    g_array_set_size(d->cqs, 0);
    g_array_set_size(d->flushes, 0);
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
/* Verbs objects                                                       */

const uint8_t qpvrdma_test_gid[16] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1
};

uint32_t qpvrdma_wqe_stride(size_t hdr, uint32_t sge)
{
    uint32_t s = hdr + sizeof(struct pvrdma_sge) * sge, p = 1;

    while (p < s) {
        p <<= 1;
    }
    return p;
}

void qpvrdma_cmd_ok(QPvrdma *d, const void *req, size_t len,
                    union pvrdma_cmd_resp *rsp)
{
    const struct pvrdma_cmd_hdr *h = req;
    union pvrdma_cmd_resp tmp;
    uint32_t err;

    if (!rsp) {
        rsp = &tmp;
    }
    err = qpvrdma_cmd(d, req, len, rsp);
    g_assert_cmpuint(err, ==, 0);
    g_assert_cmphex(rsp->hdr.ack, ==, PVRDMA_CMD_RESP(h->cmd));
    g_assert_cmpuint(rsp->hdr.err, ==, 0);
}

uint32_t qpvrdma_cmd_fails(QPvrdma *d, const void *req, size_t len)
{
    union pvrdma_cmd_resp rsp;
    uint32_t err = qpvrdma_cmd(d, req, len, &rsp);

    g_assert_cmpuint(err, !=, 0);
    g_assert_cmpuint(rsp.hdr.err, ==, err);
    return err;
}

void qpvrdma_cmd_err(QPvrdma *d, const void *req, size_t len, uint32_t err)
{
    g_assert_cmpuint(qpvrdma_cmd_fails(d, req, len), ==, err);
}

uint32_t qpvrdma_create_pd(QPvrdma *d, uint32_t ctx)
{
    struct pvrdma_cmd_create_pd c = { .hdr.cmd = PVRDMA_CMD_CREATE_PD,
                                      .ctx_handle = ctx };
    union pvrdma_cmd_resp r;

    qpvrdma_cmd_ok(d, &c, sizeof(c), &r);
    return r.create_pd_resp.pd_handle;
}

void qpvrdma_create_cq(QPvrdma *d, QPvrdmaCq *cq, uint32_t cqe)
{
    struct pvrdma_cmd_create_cq c = { .hdr.cmd = PVRDMA_CMD_CREATE_CQ };
    union pvrdma_cmd_resp r;

    memset(cq, 0, sizeof(*cq));
    qpvrdma_ring_alloc(d, &cq->ring,
                       1 + DIV_ROUND_UP(cqe * sizeof(struct pvrdma_cqe),
                                        PVRDMA_PAGE_SIZE));
    c.pdir_dma = cq->ring.pdir;
    c.cqe = cqe;
    c.nchunks = cq->ring.npages;
    qpvrdma_cmd_ok(d, &c, sizeof(c), &r);
    g_assert_cmpuint(r.create_cq_resp.cqe, ==, cqe);
    cq->handle = r.create_cq_resp.cq_handle;
    cq->cqe = cqe;
    g_array_append_val(d->cqs, ((QPvrdmaCqSeen) { cq->handle,
                                                  cq->ring.pages[0] }));
}

void qpvrdma_create_qp(QPvrdma *d, QPvrdmaQp *qp, uint32_t pd, uint32_t scq,
                       uint32_t rcq, uint8_t type, uint32_t n, uint32_t srq)
{
    struct pvrdma_cmd_create_qp c = { .hdr.cmd = PVRDMA_CMD_CREATE_QP };
    union pvrdma_cmd_resp r;
    uint32_t rpages;

    memset(qp, 0, sizeof(*qp));
    qp->nsend = qp->nrecv = n;
    qp->sge = 2;
    qp->srq = srq != 0;
    qp->sstride = qpvrdma_wqe_stride(sizeof(struct pvrdma_sq_wqe_hdr),
                                     qp->sge);
    qp->rstride = qpvrdma_wqe_stride(sizeof(struct pvrdma_rq_wqe_hdr),
                                     qp->sge);
    qp->send_chunks = DIV_ROUND_UP(n * qp->sstride, PVRDMA_PAGE_SIZE);
    rpages = qp->srq ? 0 : DIV_ROUND_UP(n * qp->rstride, PVRDMA_PAGE_SIZE);
    qpvrdma_ring_alloc(d, &qp->ring, 1 + qp->send_chunks + rpages);
    c.pdir_dma = qp->ring.pdir;
    c.pd_handle = pd;
    c.send_cq_handle = scq;
    c.recv_cq_handle = rcq;
    c.srq_handle = srq;
    c.is_srq = qp->srq;
    c.max_send_wr = n;
    c.max_recv_wr = qp->srq ? 0 : n;
    c.max_send_sge = qp->sge;
    c.max_recv_sge = qp->srq ? 0 : qp->sge;
    c.total_chunks = qp->ring.npages;
    c.send_chunks = qp->send_chunks;
    c.qp_type = type;
    c.access_flags = PVRDMA_ACCESS_LOCAL_WRITE;
    qpvrdma_cmd_ok(d, &c, sizeof(c), &r);
    if (d->version >= PVRDMA_QPHANDLE_VERSION) {
        qp->handle = r.create_qp_resp_v2.qp_handle;
        qp->qpn = r.create_qp_resp_v2.qpn;
        g_assert_cmpuint(r.create_qp_resp_v2.max_send_wr, ==, n);
    } else {
        /* before version 20 the QP number is the handle */
        qp->handle = qp->qpn = r.create_qp_resp.qpn;
        g_assert_cmpuint(r.create_qp_resp.max_send_wr, ==, n);
    }
}

uint32_t qpvrdma_modify_qp(QPvrdma *d, uint32_t h, uint32_t mask,
                           struct pvrdma_qp_attr *a)
{
    struct pvrdma_cmd_modify_qp c = { .hdr.cmd = PVRDMA_CMD_MODIFY_QP,
                                      .qp_handle = h, .attr_mask = mask };
    union pvrdma_cmd_resp r;

    c.attrs = *a;
    return qpvrdma_cmd(d, &c, sizeof(c), &r);
}

void qpvrdma_bind_gid_raw(QPvrdma *d, uint32_t index, const uint8_t gid[16])
{
    struct pvrdma_cmd_create_bind c = { .hdr.cmd = PVRDMA_CMD_CREATE_BIND,
                                        .index = index, .mtu = 1024,
                                        .gid_type =
                                            PVRDMA_GID_TYPE_FLAG_ROCE_V2 };

    memcpy(c.new_gid, gid, 16);
    qpvrdma_cmd_ok(d, &c, sizeof(c), NULL);
}

void qpvrdma_bind_gid(QPvrdma *d, uint32_t index)
{
    qpvrdma_bind_gid_raw(d, index, qpvrdma_test_gid);
}

/* RESET -> INIT (asserted) -> RTR; the RTR attributes are left in *a. */
static uint32_t qp_to_rtr(QPvrdma *d, QPvrdmaQp *qp, uint8_t type,
                          uint32_t dest_qpn, const uint8_t dgid[16],
                          struct pvrdma_qp_attr *ap)
{
    struct pvrdma_qp_attr a = { 0 };
    bool rc = type == PVRDMA_QPT_RC;
    uint32_t err;

    a.qp_state = PVRDMA_QPS_INIT;
    a.port_num = 1;
    a.qkey = 0x11111111;
    a.qp_access_flags = PVRDMA_ACCESS_LOCAL_WRITE |
                        PVRDMA_ACCESS_REMOTE_WRITE |
                        PVRDMA_ACCESS_REMOTE_READ |
                        PVRDMA_ACCESS_REMOTE_ATOMIC;
    g_assert_cmpuint(qpvrdma_modify_qp(d, qp->handle, PVRDMA_QP_STATE |
                                       PVRDMA_QP_PKEY_INDEX | PVRDMA_QP_PORT |
                                       (rc ? PVRDMA_QP_ACCESS_FLAGS :
                                        PVRDMA_QP_QKEY), &a), ==, 0);
    a.qp_state = PVRDMA_QPS_RTR;
    a.path_mtu = PVRDMA_MTU_1024;
    a.dest_qp_num = dest_qpn;
    a.rq_psn = 100;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 1;
    memcpy(a.ah_attr.grh.dgid.raw, dgid, 16);
    a.ah_attr.port_num = 1;
    err = qpvrdma_modify_qp(d, qp->handle, PVRDMA_QP_STATE |
                            (rc ? PVRDMA_QP_AV | PVRDMA_QP_PATH_MTU |
                             PVRDMA_QP_DEST_QPN | PVRDMA_QP_RQ_PSN |
                             PVRDMA_QP_MAX_DEST_RD_ATOMIC |
                             PVRDMA_QP_MIN_RNR_TIMER : 0), &a);
    *ap = a;
    return err;
}

uint32_t qpvrdma_qp_to_rtr(QPvrdma *d, QPvrdmaQp *qp, uint8_t type,
                           uint32_t dest_qpn, const uint8_t dgid[16])
{
    struct pvrdma_qp_attr a;

    return qp_to_rtr(d, qp, type, dest_qpn, dgid, &a);
}

void qpvrdma_qp_to_rts_gid(QPvrdma *d, QPvrdmaQp *qp, uint8_t type,
                           uint32_t dest_qpn, const uint8_t dgid[16],
                           uint8_t rnr_retry)
{
    struct pvrdma_qp_attr a;
    bool rc = type == PVRDMA_QPT_RC;

    g_assert_cmpuint(qp_to_rtr(d, qp, type, dest_qpn, dgid, &a), ==, 0);
    a.qp_state = PVRDMA_QPS_RTS;
    a.sq_psn = 100;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = rnr_retry;
    a.max_rd_atomic = 1;
    g_assert_cmpuint(qpvrdma_modify_qp(d, qp->handle, PVRDMA_QP_STATE |
                                       PVRDMA_QP_SQ_PSN |
                                       (rc ? PVRDMA_QP_TIMEOUT |
                                        PVRDMA_QP_RETRY_CNT |
                                        PVRDMA_QP_RNR_RETRY |
                                        PVRDMA_QP_MAX_QP_RD_ATOMIC : 0), &a),
                     ==, 0);
}

void qpvrdma_qp_to_rts(QPvrdma *d, QPvrdmaQp *qp, uint8_t type,
                       uint32_t dest_qpn)
{
    qpvrdma_qp_to_rts_gid(d, qp, type, dest_qpn, qpvrdma_test_gid, 7);
}

uint32_t qpvrdma_create_mr(QPvrdma *d, uint32_t pd, uint64_t gpa,
                           uint32_t len, uint32_t access)
{
    uint32_t rkey, lkey = qpvrdma_create_mr_keys(d, pd, gpa, len, access,
                                                 &rkey);

    g_assert_cmpuint(lkey, ==, rkey);
    return lkey;
}

uint32_t qpvrdma_try_create_mr(QPvrdma *d, uint32_t pd, uint64_t gpa,
                               uint32_t len, uint32_t access,
                               union pvrdma_cmd_resp *r)
{
    struct pvrdma_cmd_create_mr c = { .hdr.cmd = PVRDMA_CMD_CREATE_MR };
    uint32_t n = DIV_ROUND_UP((gpa & (PVRDMA_PAGE_SIZE - 1)) + len,
                              PVRDMA_PAGE_SIZE);
    g_autofree uint64_t *pages = g_new(uint64_t, n);

    for (uint32_t i = 0; i < n; i++) {
        pages[i] = (gpa & ~(uint64_t)(PVRDMA_PAGE_SIZE - 1)) +
                   i * (uint64_t)PVRDMA_PAGE_SIZE;
    }
    c.start = gpa;
    c.length = len;
    c.pdir_dma = qpvrdma_pdir(d, pages, n);
    c.pd_handle = pd;
    c.access_flags = access;
    c.nchunks = n;
    return qpvrdma_cmd(d, &c, sizeof(c), r);
}

uint32_t qpvrdma_create_mr_keys(QPvrdma *d, uint32_t pd, uint64_t gpa,
                                uint32_t len, uint32_t access, uint32_t *rkey)
{
    union pvrdma_cmd_resp r;

    g_assert_cmpuint(qpvrdma_try_create_mr(d, pd, gpa, len, access, &r), ==,
                     0);
    *rkey = r.create_mr_resp.rkey;
    return r.create_mr_resp.lkey;
}

uint32_t qpvrdma_destroy(QPvrdma *d, uint32_t cmd, uint32_t handle)
{
    union pvrdma_cmd_req c = { .hdr.cmd = cmd };

    switch (cmd) {
    case PVRDMA_CMD_DESTROY_UC:
        c.destroy_uc.ctx_handle = handle;
        break;
    case PVRDMA_CMD_DESTROY_PD:
        c.destroy_pd.pd_handle = handle;
        break;
    case PVRDMA_CMD_DESTROY_MR:
        c.destroy_mr.mr_handle = handle;
        break;
    case PVRDMA_CMD_DESTROY_CQ:
        c.destroy_cq.cq_handle = handle;
        break;
    case PVRDMA_CMD_DESTROY_QP:
        c.destroy_qp.qp_handle = handle;
        break;
    case PVRDMA_CMD_DESTROY_SRQ:
        c.destroy_srq.srq_handle = handle;
        break;
    default:
        g_assert_not_reached();
    }
    return qpvrdma_cmd(d, &c, sizeof(c), NULL);
}

uint64_t qpvrdma_wqe_addr(QPvrdmaQp *qp, bool send, uint32_t idx)
{
    uint32_t n = send ? qp->nsend : qp->nrecv;
    uint32_t st = send ? qp->sstride : qp->rstride;
    uint64_t off = (uint64_t)(idx & (n - 1)) * st;
    uint32_t first = send ? 1 : 1 + qp->send_chunks;

    return qp->ring.pages[first + off / PVRDMA_PAGE_SIZE] +
           off % PVRDMA_PAGE_SIZE;
}

void qpvrdma_post_recv(QPvrdma *d, QPvrdmaQp *qp, uint64_t wr_id,
                       uint64_t addr, uint32_t len, uint32_t lkey)
{
    struct pvrdma_rq_wqe_hdr h = { .wr_id = wr_id, .num_sge = 1 };
    struct pvrdma_sge s = { .addr = addr, .length = len, .lkey = lkey };
    uint64_t w = qpvrdma_wqe_addr(qp, false, qp->rprod);

    qtest_memwrite(d->qts, w, &h, sizeof(h));
    qtest_memwrite(d->qts, w + sizeof(h), &s, sizeof(s));
    qp->rprod = (qp->rprod + 1) & (2 * qp->nrecv - 1);
    qtest_writel(d->qts, qp->ring.pages[0] + 8, qp->rprod);
    qpvrdma_uar_write(d, 0, PVRDMA_UAR_QP_OFFSET,
                      PVRDMA_UAR_QP_RECV | qp->handle);
}

void qpvrdma_post_send(QPvrdma *d, QPvrdmaQp *qp,
                       struct pvrdma_sq_wqe_hdr *h,
                       const struct pvrdma_sge *s, bool ring)
{
    uint64_t w = qpvrdma_wqe_addr(qp, true, qp->sprod);

    qtest_memwrite(d->qts, w, h, sizeof(*h));
    if (h->num_sge && s) {
        qtest_memwrite(d->qts, w + sizeof(*h), s,
                       MIN(h->num_sge, qp->sge) * sizeof(*s));
    }
    qp->sprod = (qp->sprod + 1) & (2 * qp->nsend - 1);
    qtest_writel(d->qts, qp->ring.pages[0], qp->sprod);
    if (ring) {
        qpvrdma_uar_write(d, 0, PVRDMA_UAR_QP_OFFSET,
                          PVRDMA_UAR_QP_SEND | qp->handle);
    }
}

void qpvrdma_send_wr(QPvrdma *d, QPvrdmaQp *qp, uint32_t op, uint64_t wr_id,
                     uint64_t addr, uint32_t len, uint32_t lkey,
                     uint64_t raddr, uint32_t rkey)
{
    struct pvrdma_sq_wqe_hdr h = { .wr_id = wr_id, .num_sge = len ? 1 : 0,
                                   .opcode = op,
                                   .send_flags = PVRDMA_SEND_SIGNALED };
    struct pvrdma_sge s = { .addr = addr, .length = len, .lkey = lkey };

    h.wr.rdma.remote_addr = raddr;
    h.wr.rdma.rkey = rkey;
    qpvrdma_post_send(d, qp, &h, &s, true);
}

void qpvrdma_atomic_wr(QPvrdma *d, QPvrdmaQp *qp, uint32_t op,
                       uint64_t wr_id, uint64_t addr, uint32_t lkey,
                       uint64_t raddr, uint32_t rkey, uint64_t compare_add,
                       uint64_t swap)
{
    struct pvrdma_sq_wqe_hdr h = { .wr_id = wr_id, .num_sge = 1,
                                   .opcode = op,
                                   .send_flags = PVRDMA_SEND_SIGNALED };
    struct pvrdma_sge s = { .addr = addr, .length = 8, .lkey = lkey };

    h.wr.atomic.remote_addr = raddr;
    h.wr.atomic.rkey = rkey;
    h.wr.atomic.compare_add = compare_add;
    h.wr.atomic.swap = swap;
    qpvrdma_post_send(d, qp, &h, &s, true);
}

/*
 * The CQE at cq's consumer index is of QP qp, which DESTROY_QP flushed
 * from cq if it was there then; the flushes that cq's consumer index has
 * gone past are forgotten.
 */
static bool cqe_flushed(QPvrdma *d, QPvrdmaCq *cq, uint32_t qp)
{
    bool flushed = false;

    for (guint i = d->flushes->len; i-- > 0;) {
        QPvrdmaFlush *f = &g_array_index(d->flushes, QPvrdmaFlush, i);

        if (f->cq != cq->handle) {
            continue;
        }
        if (f->upto == cq->cons) {
            g_array_remove_index_fast(d->flushes, i);
        } else if (f->qp == qp) {
            flushed = true;     /* cons is before upto (both in [0, 2N)) */
        }
    }
    return flushed;
}

bool qpvrdma_poll_cq(QPvrdma *d, QPvrdmaCq *cq, struct pvrdma_cqe *e)
{
    for (int i = 0; i < 1000; i++) {
        uint32_t prod = qtest_readl(d->qts, cq->ring.pages[0] + 8);

        if (prod != cq->cons) {
            uint64_t off = (uint64_t)(cq->cons & (cq->cqe - 1)) *
                           sizeof(*e);
            bool flushed;

            qtest_memread(d->qts, cq->ring.pages[1 + off / PVRDMA_PAGE_SIZE] +
                          off % PVRDMA_PAGE_SIZE, e, sizeof(*e));
            flushed = cqe_flushed(d, cq, e->qp);
            /* else the Linux driver would stop at this CQE forever */
            g_assert(flushed || g_hash_table_contains(d->live_qps,
                                                      GUINT_TO_POINTER(e->qp)));
            cq->cons = (cq->cons + 1) & (2 * cq->cqe - 1);
            qtest_writel(d->qts, cq->ring.pages[0] + 12, cq->cons);
            if (!flushed) {
                return true;
            }
            continue;
        }
        qtest_clock_step(d->qts, 10);
    }
    return false;
}

bool qpvrdma_wait_cq(QPvrdma *d, QPvrdmaCq *cq, struct pvrdma_cqe *e,
                     unsigned ms)
{
    for (unsigned waited = 0;; waited += 5) {
        if (qpvrdma_poll_cq(d, cq, e)) {
            return true;
        }
        if (waited >= ms) {
            return false;
        }
        g_usleep(5 * 1000);
    }
}

void qpvrdma_expect_cqe(QPvrdma *d, QPvrdmaCq *cq, uint64_t wr_id,
                        uint32_t opcode, uint32_t status, uint32_t len)
{
    qpvrdma_expect_cqe_wait(d, cq, wr_id, opcode, status, len, 0);
}

void qpvrdma_expect_cqe_wait(QPvrdma *d, QPvrdmaCq *cq, uint64_t wr_id,
                             uint32_t opcode, uint32_t status, uint32_t len,
                             unsigned ms)
{
    struct pvrdma_cqe e;

    g_assert(qpvrdma_wait_cq(d, cq, &e, ms));
    g_assert_cmphex(e.wr_id, ==, wr_id);
    g_assert_cmpuint(e.status, ==, status);
    if (status == PVRDMA_WC_SUCCESS) {
        g_assert_cmpuint(e.opcode, ==, opcode);
        g_assert_cmpuint(e.byte_len, ==, len);
    }
}

void qpvrdma_cq_empty(QPvrdma *d, QPvrdmaCq *cq)
{
    struct pvrdma_cqe e;

    qtest_clock_step(d->qts, 100);
    /* nothing but what DESTROY_QP flushed */
    while (qtest_readl(d->qts, cq->ring.pages[0] + 8) != cq->cons) {
        uint64_t off = (uint64_t)(cq->cons & (cq->cqe - 1)) * sizeof(e);

        qtest_memread(d->qts, cq->ring.pages[1 + off / PVRDMA_PAGE_SIZE] +
                      off % PVRDMA_PAGE_SIZE, &e, sizeof(e));
        if (!cqe_flushed(d, cq, e.qp)) {
            g_error("CQ %u is not empty: a CQE of QP %u, wr_id 0x%" PRIx64
                    ", status %u", cq->handle, (unsigned)e.qp,
                    (uint64_t)e.wr_id, e.status);
        }
        cq->cons = (cq->cons + 1) & (2 * cq->cqe - 1);
        qtest_writel(d->qts, cq->ring.pages[0] + 12, cq->cons);
    }
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
