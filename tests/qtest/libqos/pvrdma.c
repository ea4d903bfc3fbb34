/*
 * libqos driver for the pvrdma device.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "libqos/pvrdma.h"
#include "hw/pci/pci_regs.h"

#define MSIX_DATA_MAGIC 0x5a5a0000u

static void qpvrdma_msix_setup(QPvrdma *d)
{
    QPCIDevice *dev = d->dev;

    qpci_msix_enable(dev);
    d->msix_addr = qpvrdma_alloc(d, 4096);
    for (unsigned v = 0; v < PVRDMA_MAX_INTERRUPTS; v++) {
        uint64_t off = dev->msix_table_off + v * PCI_MSIX_ENTRY_SIZE;
        uint64_t addr = d->msix_addr + 4 * v;

        qpci_io_writel(dev, dev->msix_table_bar,
                       off + PCI_MSIX_ENTRY_LOWER_ADDR, addr & ~0u);
        qpci_io_writel(dev, dev->msix_table_bar,
                       off + PCI_MSIX_ENTRY_UPPER_ADDR, addr >> 32);
        qpci_io_writel(dev, dev->msix_table_bar,
                       off + PCI_MSIX_ENTRY_DATA, MSIX_DATA_MAGIC | v);
        qpci_io_writel(dev, dev->msix_table_bar,
                       off + PCI_MSIX_ENTRY_VECTOR_CTRL, 0);
    }
}

QPvrdma *qpvrdma_start(const char *extra_fmt, ...)
{
    QPvrdma *d = g_new0(QPvrdma, 1);
    g_autofree char *extra = NULL;
    va_list ap;

    va_start(ap, extra_fmt);
    extra = g_strdup_vprintf(extra_fmt, ap);
    va_end(ap);
    d->qs = qtest_pc_boot("-nodefaults "
                          "-device vmxnet3,addr=%d.0,multifunction=on,"
                          "romfile=,mac=52:54:00:12:34:56 "
                          "-device pvrdma,addr=%d.1%s", PVRDMA_TEST_SLOT,
                          PVRDMA_TEST_SLOT, extra);
    d->qts = d->qs->qts;
    d->dev = qpci_device_find(d->qs->pcibus,
                              QPCI_DEVFN(PVRDMA_TEST_SLOT, 1));
    g_assert(d->dev);
    qpci_device_enable(d->dev);
    d->regs = qpci_iomap(d->dev, PVRDMA_BAR_REGS, NULL);
    d->uar = qpci_iomap(d->dev, PVRDMA_BAR_UAR, NULL);
    qpvrdma_msix_setup(d);
    return d;
}

void qpvrdma_stop(QPvrdma *d)
{
    qpci_msix_disable(d->dev);
    g_free(d->dev);
    qtest_shutdown(d->qs);
    g_free(d);
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
    uint64_t a = guest_alloc(&d->qs->alloc, ROUND_UP(len, PVRDMA_PAGE_SIZE));

    g_assert(a && !(a & (PVRDMA_PAGE_SIZE - 1)));
    qtest_memset(d->qts, a, 0, ROUND_UP(len, PVRDMA_PAGE_SIZE));
    return a;
}

uint64_t qpvrdma_pdir(QPvrdma *d, const uint64_t *pages, uint32_t npages)
{
    uint64_t dir = qpvrdma_alloc(d, PVRDMA_PAGE_SIZE);
    uint32_t ntables = (npages + 511) / 512;

    for (uint32_t t = 0; t < ntables; t++) {
        uint64_t tbl = qpvrdma_alloc(d, PVRDMA_PAGE_SIZE);

        qtest_writeq(d->qts, dir + 8 * t, tbl);
        for (uint32_t i = 0; i < 512 && t * 512 + i < npages; i++) {
            qtest_writeq(d->qts, tbl + 8 * i, pages[t * 512 + i]);
        }
    }
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
    dsr.gos_info.bits_type_ver_misc = 2 | 1 << 2 | 1 << 6;
    dsr.cmd_slot_dma = d->cmd;
    dsr.resp_slot_dma = d->resp;
    dsr.async_ring_pages.num_pages = 4;
    dsr.async_ring_pages.pdir_dma = d->async_pdir;
    dsr.cq_ring_pages.num_pages = 4;
    dsr.cq_ring_pages.pdir_dma = d->cq_pdir;
    if (driver_version >= PVRDMA_PPN64_VERSION) {
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

uint32_t qpvrdma_cmd(QPvrdma *d, const void *req, size_t len,
                     union pvrdma_cmd_resp *resp)
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
    if (resp) {
        qtest_memread(d->qts, d->resp, resp, sizeof(*resp));
    }
    if (!err) {
        g_assert(qpvrdma_wait_vector(d, PVRDMA_INTR_VECTOR_RESPONSE));
    }
    return err;
}
