/*
 * pvrdma: BAR1 registers, the device shared region, interrupts, async
 * events and UAR doorbells.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef PVRDMA_STANDALONE
#include "qemu/osdep.h"
#endif
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/rdma_backend.h"
#include "pvrdma_int.h"

#include <arpa/inet.h>

void pvrdma_limits_default(PvrdmaLimits *l)
{
    *l = (PvrdmaLimits) {
        .max_qp = PVRDMA_DEF_MAX_QP,
        .max_qp_wr = PVRDMA_DEF_MAX_QP_WR,
        .max_sge = PVRDMA_DEF_MAX_SGE,
        .max_cq = PVRDMA_DEF_MAX_CQ,
        .max_cqe = PVRDMA_DEF_MAX_CQE,
        .max_mr = PVRDMA_DEF_MAX_MR,
        .max_pd = PVRDMA_DEF_MAX_PD,
        .max_ah = PVRDMA_DEF_MAX_AH,
        .max_srq = PVRDMA_DEF_MAX_SRQ,
        .max_srq_wr = PVRDMA_DEF_MAX_SRQ_WR,
        .max_srq_sge = PVRDMA_DEF_MAX_SRQ_SGE,
        .max_uar = PVRDMA_DEF_MAX_UAR,
        .gid_tbl_len = PVRDMA_DEF_GID_TBL_LEN,
        .max_qp_rd_atom = PVRDMA_DEF_MAX_RD_ATOM,
        .max_mr_size = PVRDMA_DEF_MAX_MR_SIZE,
        .roce_version = 2,
    };
}

const char *pvrdma_limits_check(const PvrdmaLimits *l)
{
    if (l->max_qp < 4 || l->max_qp > PVRDMA_HARD_MAX_QP) {
        return "max-qp must be between 4 and 65536";
    }
    if (!pvrdma_is_pow2(l->max_qp_wr) || l->max_qp_wr > PVRDMA_HARD_MAX_QP_WR) {
        return "max-qp-wr must be a power of two up to 32768";
    }
    if (l->max_sge < 1 || l->max_sge > PVRDMA_HARD_MAX_SGE) {
        return "max-sge must be between 1 and 32";
    }
    if (l->max_cq < 2 || l->max_cq > PVRDMA_HARD_MAX_CQ) {
        return "max-cq must be between 2 and 65536";
    }
    if (!pvrdma_is_pow2(l->max_cqe) || l->max_cqe > PVRDMA_HARD_MAX_CQE) {
        return "max-cqe must be a power of two up to 1048576";
    }
    if (l->max_mr < 2 || l->max_mr > PVRDMA_HARD_MAX_MR) {
        return "max-mr must be between 2 and 1048576";
    }
    if (l->max_pd < 2 || l->max_pd > PVRDMA_HARD_MAX_PD) {
        return "max-pd must be between 2 and 65536";
    }
    if (l->max_srq > PVRDMA_HARD_MAX_SRQ || l->max_srq == 1) {
        return "max-srq must be 0 (no SRQs) or between 2 and 65536";
    }
    if (!pvrdma_is_pow2(l->max_srq_wr) || l->max_srq_wr > PVRDMA_HARD_MAX_QP_WR) {
        return "max-srq-wr must be a power of two up to 32768";
    }
    if (l->max_srq_sge < 1 || l->max_srq_sge > PVRDMA_HARD_MAX_SGE) {
        return "max-srq-sge must be between 1 and 32";
    }
    if (!pvrdma_is_pow2(l->max_uar) || l->max_uar < 2 ||
        l->max_uar > PVRDMA_HARD_MAX_UAR) {
        return "max-uar must be a power of two between 2 and 4096";
    }
    if (l->gid_tbl_len < 1 || l->gid_tbl_len > PVRDMA_HARD_GID_TBL_LEN) {
        return "gid-table-len must be between 1 and 256";
    }
    if (l->max_mr_size < PVRDMA_PAGE_SIZE ||
        l->max_mr_size > (uint64_t)PVRDMA_PAGE_DIR_MAX_PAGES * PVRDMA_PAGE_SIZE) {
        return "max-mr-size must be between 4 KiB and 1 GiB";
    }
    if (l->roce_version != 1 && l->roce_version != 2) {
        return "roce-version must be 1 or 2";
    }
    if (l->max_qp_rd_atom < 1 || l->max_qp_rd_atom > 255) {
        return "max-rd-atomic must be between 1 and 255";
    }
    return NULL;
}

void pvrdma_core_init(PvrdmaCore *c, const PvrdmaHostOps *ops, void *opaque,
                      const PvrdmaLimits *lim)
{
    memset(c, 0, sizeof(*c));
    c->ops = ops;
    c->opaque = opaque;
    c->lim = *lim;
    c->transports[0] = g_new(PvrdmaTransport, 1);
    pvrdma_loopback_init(c->transports[0], c);
    c->ntransports = 1;
    c->imr = ~0u;
    /* handle 0 is never valid: it catches uninitialised guest fields */
    pvrdma_table_init(&c->uc, lim->max_uar, 1);
    pvrdma_table_init(&c->pd, lim->max_pd, 1);
    pvrdma_table_init(&c->mr, lim->max_mr, 1);
    pvrdma_table_init(&c->cq, lim->max_cq, 1);
    pvrdma_table_init(&c->qp, lim->max_qp, PVRDMA_GSI_QPN + 1);
    pvrdma_table_init(&c->srq, MAX(lim->max_srq, 1), 1);
    c->gid = g_new0(PvrdmaGid, lim->gid_tbl_len);
    g_queue_init(&c->run);
}

void pvrdma_core_fini(PvrdmaCore *c)
{
    pvrdma_core_reset(c);
    for (unsigned i = c->ntransports; i-- > 0;) {
        PvrdmaTransport *t = c->transports[i];

        if (t->destroy) {
            t->destroy(t);
        } else {
            g_free(t);
        }
    }
    c->ntransports = 0;
    if (c->hca) {
        c->hca->destroy(c->hca);    /* after reset freed its objects */
        c->hca = NULL;
    }
    pvrdma_table_destroy(&c->uc);
    pvrdma_table_destroy(&c->pd);
    pvrdma_table_destroy(&c->mr);
    pvrdma_table_destroy(&c->cq);
    pvrdma_table_destroy(&c->qp);
    pvrdma_table_destroy(&c->srq);
    g_free(c->gid);
    c->gid = NULL;
}

void pvrdma_core_reset(PvrdmaCore *c)
{
    trace_pvrdma_reset();
    pvrdma_destroy_all(c);
    pvrdma_ring_free(c, &c->async_ring);
    pvrdma_ring_free(c, &c->cqn_ring);
    memset(c->gid, 0, sizeof(PvrdmaGid) * c->lim.gid_tbl_len);
    pvrdma_gids_changed(c);
    c->dsr_gpa = 0;
    c->err = 0;
    c->icr = 0;
    c->imr = ~0u;
    c->dsr_set = false;
    c->active = false;
    c->version = 0;
    c->cmd_gpa = c->resp_gpa = c->uar_pfn = 0;
}

void pvrdma_raise(PvrdmaCore *c, unsigned vector)
{
    if (c->imr & (1u << vector)) {
        trace_pvrdma_irq_masked(vector);
        return;
    }
    trace_pvrdma_irq(vector);
    c->ops->notify(c->opaque, vector);
}

void pvrdma_post_async(PvrdmaCore *c, uint32_t type, uint32_t info)
{
    struct pvrdma_eqe *e;
    bool bad;

    if (!c->active) {
        return;
    }
    e = pvrdma_ring_prod_slot(&c->async_ring, &bad);
    if (!e) {
        PVRDMA_GUEST_ERR(c, "async event ring %s, event %u dropped",
                         bad ? "index invalid" : "full", type);
        return;
    }
    e->type = cpu_to_le32(type);
    e->info = cpu_to_le32(info);
    pvrdma_ring_prod_push(&c->async_ring);
    trace_pvrdma_async_event(type, info);
    pvrdma_raise(c, PVRDMA_INTR_VECTOR_ASYNC);
}

static uint64_t mac_to_guid(const uint8_t mac[6])
{
    uint8_t g[8] = { mac[0] ^ 2, mac[1], mac[2], 0xff, 0xfe,
                     mac[3], mac[4], mac[5] };
    uint64_t v;

    memcpy(&v, g, 8);   /* big-endian in memory, as the ABI wants */
    return v;
}

/* DSRHIGH: publish capabilities into the guest's DSR. */
static void dsr_publish_caps(PvrdmaCore *c)
{
    struct pvrdma_device_caps caps = { 0 };
    const PvrdmaLimits *l = &c->lim;
    uint8_t mac[6];

    c->ops->get_mac(c->opaque, mac);
    caps.fw_ver = PVRDMA_FW_VER;
    caps.node_guid = mac_to_guid(mac);
    caps.sys_image_guid = caps.node_guid;
    caps.max_mr_size = l->max_mr_size;
    caps.page_size_cap = PVRDMA_PAGE_SIZE;
    caps.atomic_arg_sizes = 8;
    caps.vendor_id = PVRDMA_VENDOR_ID;
    caps.vendor_part_id = PVRDMA_DEVICE_ID;
    caps.hw_ver = 1;
    caps.max_qp = l->max_qp;
    caps.max_qp_wr = l->max_qp_wr;
    caps.device_cap_flags = PVRDMA_DEV_CAP_RC_RNR_NAK_GEN |
                            PVRDMA_DEV_CAP_PORT_ACTIVE_EVENT |
                            PVRDMA_DEV_CAP_MEM_MGT_EXT;
    caps.max_sge = l->max_sge;
    caps.max_sge_rd = l->max_sge;
    caps.max_cq = l->max_cq;
    caps.max_cqe = l->max_cqe;
    caps.max_mr = l->max_mr;
    caps.max_pd = l->max_pd;
    caps.max_qp_rd_atom = l->max_qp_rd_atom;
    caps.max_res_rd_atom = l->max_qp_rd_atom * l->max_qp;
    caps.max_qp_init_rd_atom = l->max_qp_rd_atom;
    caps.max_ah = l->max_ah;
    caps.max_srq = l->max_srq;
    caps.max_srq_wr = l->max_srq_wr;
    caps.max_srq_sge = l->max_srq_sge;
    caps.max_uar = l->max_uar;
    caps.gid_tbl_len = l->gid_tbl_len;
    caps.max_pkeys = PVRDMA_MAX_PKEYS;
    caps.local_ca_ack_delay = 15;
    caps.phys_port_cnt = 1;
    caps.mode = PVRDMA_DEVICE_MODE_ROCE;
    caps.atomic_ops = PVRDMA_ATOMIC_OP_COMP_SWAP | PVRDMA_ATOMIC_OP_FETCH_ADD;
    caps.bmme_flags = PVRDMA_BMME_FLAG_LOCAL_INV |
                      PVRDMA_BMME_FLAG_REMOTE_INV |
                      PVRDMA_BMME_FLAG_FAST_REG_WR;
    /* the Linux driver registers GIDs of exactly this one type */
    caps.gid_types = l->roce_version == 1 ? PVRDMA_GID_TYPE_FLAG_ROCE_V1 :
                                            PVRDMA_GID_TYPE_FLAG_ROCE_V2;
    caps.max_fast_reg_page_list_len = PVRDMA_MAX_FAST_REG_PAGES;

    if (!c->ops->dma_write(c->opaque, c->dsr_gpa +
                           offsetof(struct pvrdma_device_shared_region, caps),
                           &caps, sizeof(caps))) {
        PVRDMA_GUEST_ERR(c, "DSR at 0x%" PRIx64 " is not writable memory",
                         c->dsr_gpa);
        return;
    }
    c->dsr_set = true;
    trace_pvrdma_dsr_caps(c->dsr_gpa);
}

static bool map_dsr_ring(PvrdmaCore *c, PvrdmaRing *r, const char *name,
                         const struct pvrdma_ring_page_info *pi,
                         uint32_t elem_size)
{
    uint32_t np = le32_to_cpu(pi->num_pages);
    uint64_t *pages;
    bool ok;

    if (np < 2 || np > PVRDMA_MAX_RING_PAGES) {
        PVRDMA_GUEST_ERR(c, "%s ring: bad page count %u", name, np);
        return false;
    }
    if (!pvrdma_pdir_read(c, le64_to_cpu(pi->pdir_dma), np, &pages)) {
        return false;
    }
    /* ring state is page 0; the device produces on rx */
    ok = pvrdma_ring_init(c, r, name, pages, np, 1,
                          offsetof(struct pvrdma_ring_state, rx),
                          (np - 1) * PVRDMA_PAGE_SIZE / elem_size, elem_size);
    g_free(pages);
    return ok;
}

static void activate(PvrdmaCore *c)
{
    struct pvrdma_device_shared_region dsr;
    struct pvrdma_ring_page_info async_pi, cq_pi;
    unsigned drv;

    if (c->active) {
        PVRDMA_GUEST_ERR(c, "ACTIVATE while already active");
        c->err = 0;
        return;
    }
    c->err = EINVAL;
    if (!c->dsr_set) {
        PVRDMA_GUEST_ERR(c, "ACTIVATE before the DSR address was written");
        return;
    }
    if (!c->ops->dma_read(c->opaque, c->dsr_gpa, &dsr, sizeof(dsr))) {
        PVRDMA_GUEST_ERR(c, "DSR at 0x%" PRIx64 " unreadable", c->dsr_gpa);
        return;
    }
    drv = le32_to_cpu(dsr.driver_version);
    if (drv < PVRDMA_ROCEV1_VERSION) {
        PVRDMA_GUEST_ERR(c, "driver version %u too old", drv);
        return;
    }
    c->version = MIN(drv, PVRDMA_VERSION);
    c->cmd_gpa = le64_to_cpu(dsr.cmd_slot_dma);
    c->resp_gpa = le64_to_cpu(dsr.resp_slot_dma);
    c->uar_pfn = c->version >= PVRDMA_PPN64_VERSION ?
                 le64_to_cpu(dsr.uar_pfn64) : le32_to_cpu(dsr.uar_pfn);
    if (!c->cmd_gpa || !c->resp_gpa) {
        PVRDMA_GUEST_ERR(c, "DSR without command/response slots");
        return;
    }
    memcpy(&async_pi, &dsr.async_ring_pages, sizeof(async_pi));
    memcpy(&cq_pi, &dsr.cq_ring_pages, sizeof(cq_pi));
    if (!map_dsr_ring(c, &c->async_ring, "async", &async_pi,
                      sizeof(struct pvrdma_eqe))) {
        return;
    }
    if (!map_dsr_ring(c, &c->cqn_ring, "cq-notify", &cq_pi,
                      sizeof(struct pvrdma_cqne))) {
        pvrdma_ring_free(c, &c->async_ring);
        return;
    }
    c->active = true;
    c->port_down = !pvrdma_port_up(c);   /* events report changes from here */
    c->err = 0;
    trace_pvrdma_activate(c->version, drv);
}

uint32_t pvrdma_core_reg_read(PvrdmaCore *c, uint32_t addr)
{
    uint8_t mac[6];
    uint32_t val = 0;

    switch (addr) {
    case PVRDMA_REG_VERSION:
        val = PVRDMA_VERSION;
        break;
    case PVRDMA_REG_DSRLOW:
        val = (uint32_t)c->dsr_gpa;
        break;
    case PVRDMA_REG_DSRHIGH:
        val = c->dsr_gpa >> 32;
        break;
    case PVRDMA_REG_ERR:
        val = c->err;
        break;
    case PVRDMA_REG_ICR:
        val = c->icr;
        c->icr = 0;     /* read to clear */
        break;
    case PVRDMA_REG_IMR:
        val = c->imr;
        break;
    case PVRDMA_REG_MACL:
        c->ops->get_mac(c->opaque, mac);
        val = mac[0] | mac[1] << 8 | mac[2] << 16 | (uint32_t)mac[3] << 24;
        break;
    case PVRDMA_REG_MACH:
        c->ops->get_mac(c->opaque, mac);
        val = mac[4] | mac[5] << 8;
        break;
    case PVRDMA_REG_CTL:
    case PVRDMA_REG_REQUEST:
        break;      /* write-only */
    default:
        PVRDMA_GUEST_ERR(c, "read of unknown register 0x%x", addr);
        break;
    }
    trace_pvrdma_reg_read(addr, val);
    return val;
}

void pvrdma_core_reg_write(PvrdmaCore *c, uint32_t addr, uint32_t val)
{
    trace_pvrdma_reg_write(addr, val);
    switch (addr) {
    case PVRDMA_REG_DSRLOW:
    case PVRDMA_REG_DSRHIGH:
        if (c->active) {
            PVRDMA_GUEST_ERR(c, "DSR moved while active: ignored");
            return;
        }
        if (addr == PVRDMA_REG_DSRLOW) {
            c->dsr_gpa = (c->dsr_gpa & ~0xffffffffull) | val;
            c->dsr_set = false;
        } else {
            c->dsr_gpa = (c->dsr_gpa & 0xffffffffull) | (uint64_t)val << 32;
            c->dsr_set = false;
            if (!c->dsr_gpa) {
                PVRDMA_GUEST_ERR(c, "DSR address is 0");
                return;
            }
            dsr_publish_caps(c);
        }
        break;
    case PVRDMA_REG_CTL:
        switch (val) {
        case PVRDMA_DEVICE_CTL_ACTIVATE:
            activate(c);
            break;
        case PVRDMA_DEVICE_CTL_UNQUIESCE:
            c->err = c->active ? 0 : EINVAL;
            break;
        case PVRDMA_DEVICE_CTL_RESET:
            pvrdma_core_reset(c);
            break;
        default:
            PVRDMA_GUEST_ERR(c, "unknown CTL value %u", val);
            c->err = EINVAL;
            break;
        }
        break;
    case PVRDMA_REG_REQUEST:
        if (val != 0) {
            PVRDMA_GUEST_ERR(c, "REQUEST value %u (expected 0)", val);
        }
        pvrdma_exec_command(c);
        break;
    case PVRDMA_REG_IMR:
        c->imr = val;
        break;
    case PVRDMA_REG_MACL:
    case PVRDMA_REG_MACH:
        /* the MAC follows the paired vmxnet3 function */
        trace_pvrdma_mac_write_ignored(addr, val);
        break;
    default:
        PVRDMA_GUEST_ERR(c, "write 0x%x to read-only/unknown register 0x%x",
                         val, addr);
        break;
    }
}

/*
 * Context that owns a UAR page: page 0 is the kernel's (context 0), any
 * other page belongs to the user context whose handle is that page index.
 */
static uint32_t uar_owner(PvrdmaCore *c, uint32_t page)
{
    return page == 0 || pvrdma_table_get(&c->uc, page) ? page : UINT32_MAX;
}

void pvrdma_core_uar_write(PvrdmaCore *c, uint64_t addr, uint32_t val)
{
    uint32_t page = addr / PVRDMA_PAGE_SIZE;
    uint32_t off = addr % PVRDMA_PAGE_SIZE;
    uint32_t handle = val & PVRDMA_UAR_HANDLE_MASK;
    uint32_t owner;

    c->doorbells++;
    trace_pvrdma_uar_write(page, off, val);
    if (!c->active) {
        PVRDMA_GUEST_ERR(c, "doorbell 0x%x before activation", val);
        return;
    }
    owner = uar_owner(c, page);
    if (owner == UINT32_MAX) {
        PVRDMA_GUEST_ERR(c, "doorbell on unassigned UAR page %u", page);
        return;
    }
    switch (off) {
    case PVRDMA_UAR_QP_OFFSET: {
        PvrdmaQP *qp = pvrdma_qp_get(c, handle);

        if (!qp || pvrdma_ctx_of_pd(c, qp->pd) != owner) {
            PVRDMA_GUEST_ERR(c, "QP doorbell for unknown QP handle %u", handle);
            return;
        }
        if (qp->hw) {
            if (val & PVRDMA_UAR_QP_RECV) {
                trace_pvrdma_db_qp_recv(handle);
                pvrdma_hca_post_rq(c, qp);
            }
            if (val & PVRDMA_UAR_QP_SEND) {
                trace_pvrdma_db_qp_send(handle);
                pvrdma_hca_post_sq(c, qp);
            }
            break;
        }
        if (val & PVRDMA_UAR_QP_RECV) {
            trace_pvrdma_db_qp_recv(handle);
            pvrdma_wake_rnr(c);
            if (qp->state == PVRDMA_QPS_ERR) {
                pvrdma_qp_schedule(c, qp);   /* flush new receives */
            }
        }
        if (val & PVRDMA_UAR_QP_SEND) {
            trace_pvrdma_db_qp_send(handle);
            pvrdma_qp_send_doorbell(c, qp);
        }
        break;
    }
    case PVRDMA_UAR_CQ_OFFSET: {
        PvrdmaCQ *cq = pvrdma_table_get(&c->cq, handle);

        if (!cq || cq->ctx != owner) {
            PVRDMA_GUEST_ERR(c, "CQ doorbell for unknown CQ handle %u", handle);
            return;
        }
        pvrdma_cq_doorbell(c, cq, val);
        break;
    }
    case PVRDMA_UAR_SRQ_OFFSET: {
        PvrdmaSRQ *srq = pvrdma_table_get(&c->srq, handle);

        if (!srq || pvrdma_ctx_of_pd(c, srq->pd) != owner) {
            PVRDMA_GUEST_ERR(c, "SRQ doorbell for unknown SRQ handle %u",
                             handle);
            return;
        }
        trace_pvrdma_db_srq(handle);
        if (srq->hw) {
            pvrdma_hca_post_srq(c, srq);
        } else {
            pvrdma_srq_doorbell(c, srq);
        }
        break;
    }
    default:
        PVRDMA_GUEST_ERR(c, "doorbell at unknown UAR offset 0x%x", off);
        break;
    }
}

bool pvrdma_port_up(PvrdmaCore *c)
{
    return !c->ops->link_up || c->ops->link_up(c->opaque);
}

void pvrdma_core_check_link(PvrdmaCore *c)
{
    bool down = !pvrdma_port_up(c);

    if (!c->active || down == c->port_down) {
        return;
    }
    c->port_down = down;
    trace_pvrdma_port_state(down ? "down" : "active");
    pvrdma_post_async(c, down ? PVRDMA_EVENT_PORT_ERR :
                      PVRDMA_EVENT_PORT_ACTIVE, 1);
}

bool pvrdma_core_add_transport(PvrdmaCore *c, PvrdmaTransport *t)
{
    if (c->ntransports >= PVRDMA_MAX_TRANSPORTS) {
        return false;
    }
    c->transports[c->ntransports++] = t;
    return true;
}

/* Tell the transports (peers learn our GIDs from them). */
void pvrdma_gids_changed(PvrdmaCore *c)
{
    for (unsigned i = 0; i < c->ntransports; i++) {
        if (c->transports[i]->gids_changed) {
            c->transports[i]->gids_changed(c->transports[i]);
        }
    }
}

void pvrdma_gid_str(const uint8_t gid[16], char *buf, size_t len)
{
    if (pvrdma_gid_is_v4(gid)) {
        inet_ntop(AF_INET, gid + 12, buf, len);
    } else {
        inet_ntop(AF_INET6, gid, buf, len);
    }
}

bool pvrdma_gid_is_local(PvrdmaCore *c, const uint8_t gid[16])
{
    for (uint32_t i = 0; i < c->lim.gid_tbl_len; i++) {
        if (c->gid[i].type && !memcmp(c->gid[i].gid.raw, gid, 16)) {
            return true;
        }
    }
    return false;
}
