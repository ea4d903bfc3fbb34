/*
 * QTest for the pvrdma device against a hostile guest: the helpers both
 * files of tests share (hostile.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "libqos/pvrdma.h"
#include "hw/pci/pci_regs.h"
#include "qapi/error.h"
#include "qobject/qdict.h"
#include "qobject/qjson.h"
#include "pvrdma/hostile.h"

void pair_setup(Pair *p, QPvrdma *d, uint8_t type, uint32_t n)
{
    p->d = d;
    p->pd = qpvrdma_create_pd(d, 0);
    qpvrdma_create_cq(d, &p->cq, 256);
    qpvrdma_create_qp(d, &p->a, p->pd, p->cq.handle, p->cq.handle, type, n,
                      0);
    qpvrdma_create_qp(d, &p->b, p->pd, p->cq.handle, p->cq.handle, type, n,
                      0);
    qpvrdma_qp_to_rts(d, &p->a, type, p->b.qpn);
    qpvrdma_qp_to_rts(d, &p->b, type, p->a.qpn);
}

void pair_destroy(Pair *p)
{
    g_assert_cmpuint(qpvrdma_destroy(p->d, PVRDMA_CMD_DESTROY_QP,
                                     p->a.handle), ==, 0);
    g_assert_cmpuint(qpvrdma_destroy(p->d, PVRDMA_CMD_DESTROY_QP,
                                     p->b.handle), ==, 0);
    g_assert_cmpuint(qpvrdma_destroy(p->d, PVRDMA_CMD_DESTROY_CQ,
                                     p->cq.handle), ==, 0);
    g_assert_cmpuint(qpvrdma_destroy(p->d, PVRDMA_CMD_DESTROY_PD, p->pd),
                     ==, 0);
    qpvrdma_ring_free(&p->a.ring);
    qpvrdma_ring_free(&p->b.ring);
    qpvrdma_ring_free(&p->cq.ring);
}

/* New QPs in place of a and b (after an error), same PD and CQ. */
void pair_new_qps(Pair *p, uint8_t type, uint32_t n)
{
    QPvrdma *d = p->d;

    g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_QP, p->a.handle),
                     ==, 0);
    g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_QP, p->b.handle),
                     ==, 0);
    qpvrdma_ring_free(&p->a.ring);
    qpvrdma_ring_free(&p->b.ring);
    qpvrdma_create_qp(d, &p->a, p->pd, p->cq.handle, p->cq.handle, type, n,
                      0);
    qpvrdma_create_qp(d, &p->b, p->pd, p->cq.handle, p->cq.handle, type, n,
                      0);
    qpvrdma_qp_to_rts(d, &p->a, type, p->b.qpn);
    qpvrdma_qp_to_rts(d, &p->b, type, p->a.qpn);
}

/* A good SEND from a to b with data compared: the data path still works. */
void pair_works(Pair *p)
{
    QPvrdma *d = p->d;
    uint64_t buf = qpvrdma_alloc(d, 4096);
    uint32_t key = qpvrdma_create_mr(d, p->pd, buf, 4096,
                                     PVRDMA_ACCESS_LOCAL_WRITE);
    uint8_t x[64], y[64];

    for (int i = 0; i < 64; i++) {
        x[i] = i * 3 + 1;
    }
    qtest_memwrite(d->qts, buf, x, 64);
    qpvrdma_post_recv(d, &p->b, 0xbeef, buf + 2048, 64, key);
    qpvrdma_send_wr(d, &p->a, PVRDMA_WR_SEND, 0xcafe, buf, 64, key, 0, 0);
    qpvrdma_expect_cqe(d, &p->cq, 0xbeef, PVRDMA_WC_RECV, PVRDMA_WC_SUCCESS,
                       64);
    qpvrdma_expect_cqe(d, &p->cq, 0xcafe, PVRDMA_WC_SEND, PVRDMA_WC_SUCCESS,
                       64);
    qtest_memread(d->qts, buf + 2048, y, 64);
    g_assert(memcmp(x, y, 64) == 0);
    g_assert_cmpuint(qpvrdma_destroy(d, PVRDMA_CMD_DESTROY_MR, key >> 8), ==,
                     0);
}

/* The device answers commands and its data path works. */
void device_works(QPvrdma *d)
{
    QPvrdmaCounts before;
    Pair p;

    qpvrdma_counts(d, &before);
    qpvrdma_bind_gid(d, 0);
    pair_setup(&p, d, PVRDMA_QPT_RC, 8);
    pair_works(&p);
    pair_destroy(&p);
    qpvrdma_assert_counts(d, &before);
}

uint64_t guest_errors(QPvrdma *d)
{
    return qpvrdma_counter(d, "x-guest-errors");
}

uint32_t query_qp_state(QPvrdma *d, uint32_t h)
{
    struct pvrdma_cmd_query_qp q = { .hdr.cmd = PVRDMA_CMD_QUERY_QP,
                                     .qp_handle = h };
    union pvrdma_cmd_resp r;

    qpvrdma_cmd_ok(d, &q, sizeof(q), &r);
    return r.query_qp_resp.attrs.qp_state;
}

/* A CREATE_CQ request over ring r (cqe entries, r->npages pages). */
struct pvrdma_cmd_create_cq cq_req(QPvrdmaRing *r, uint32_t cqe)
{
    return (struct pvrdma_cmd_create_cq) {
        .hdr.cmd = PVRDMA_CMD_CREATE_CQ, .pdir_dma = r->pdir,
        .nchunks = r->npages, .cqe = cqe,
    };
}

/* A CREATE_QP request: n x 2-SGE WQEs per ring, pages from r. */
struct pvrdma_cmd_create_qp qp_req(QPvrdmaRing *r, uint32_t pd,
                                   uint32_t cq, uint32_t n,
                                   uint32_t send_chunks)
{
    return (struct pvrdma_cmd_create_qp) {
        .hdr.cmd = PVRDMA_CMD_CREATE_QP, .pdir_dma = r->pdir,
        .pd_handle = pd, .send_cq_handle = cq, .recv_cq_handle = cq,
        .max_send_wr = n, .max_recv_wr = n, .max_send_sge = 2,
        .max_recv_sge = 2, .total_chunks = r->npages,
        .send_chunks = send_chunks, .qp_type = PVRDMA_QPT_RC,
    };
}

struct pvrdma_cmd_create_srq srq_req(QPvrdmaRing *r, uint32_t pd,
                                     uint32_t max_wr, uint32_t sge)
{
    struct pvrdma_cmd_create_srq c = { .hdr.cmd = PVRDMA_CMD_CREATE_SRQ,
                                       .pdir_dma = r->pdir,
                                       .pd_handle = pd,
                                       .nchunks = r->npages };

    c.attrs.max_wr = max_wr;
    c.attrs.max_sge = sge;
    return c;
}

uint64_t bar_addr(QPvrdma *d, int bar)
{
    uint64_t a = qpci_config_readl(d->dev, PCI_BASE_ADDRESS_0 + 4 * bar);

    if (a & PCI_BASE_ADDRESS_MEM_TYPE_64) {
        a |= (uint64_t)qpci_config_readl(d->dev,
                                         PCI_BASE_ADDRESS_0 + 4 * bar + 4)
             << 32;
    }
    return a & ~0xfull;
}


void bad_pages(QPvrdma *d, uint64_t out[NBAD])
{
    out[0] = bar_addr(d, PVRDMA_BAR_REGS);      /* our own registers */
    out[1] = bar_addr(d, PVRDMA_BAR_UAR);       /* our doorbells */
    out[2] = bar_addr(d, PVRDMA_BAR_MSIX);      /* our MSI-X table */
    out[3] = GPA_IOAPIC;
    out[4] = GPA_PAST_RAM;
    out[5] = 0xfffffffffffff000ull;             /* top of the space */
    out[6] = GPA_BIOS_ROM;
}

/* A repeat count from the environment (a leak check raises it). */
unsigned env_count(const char *name, unsigned def)
{
    const char *v = g_getenv(name);

    return v ? (unsigned)g_ascii_strtoull(v, NULL, 10) : def;
}

/* The device refuses commands and maps nothing: not active. */
void expect_inactive(QPvrdma *d)
{
    struct pvrdma_cmd_create_pd c = { .hdr.cmd = PVRDMA_CMD_CREATE_PD };

    g_assert_cmpuint(qpvrdma_cmd(d, &c, sizeof(c), NULL), !=, 0);
    g_assert_cmpuint(qpvrdma_counter(d, "x-mapped"), ==, 0);
}
