/*
 * pvrdma: BAR 1, the registers.  Register reads and writes; the DSR
 * (capabilities published when DSRHIGH is written, the driver's half
 * copied once at ACTIVATE and its async and CQ notification rings mapped
 * then); activation; CTL and REQUEST (which runs the command).
 *
 * Not here: the commands (pvrdma_cmd.c), the UAR doorbells of BAR 2
 * (pvrdma_uar.c), interrupts (pvrdma_event.c), reset (pvrdma_init.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hw/rdma/pvrdma_core.h"
#include "pvrdma_int.h"

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
                            PVRDMA_DEV_CAP_PORT_ACTIVE_EVENT;
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
    /* the Linux driver registers GIDs of exactly this one type */
    caps.gid_types = l->roce_version == 1 ? PVRDMA_GID_TYPE_FLAG_ROCE_V1 :
                                            PVRDMA_GID_TYPE_FLAG_ROCE_V2;
    if (!l->no_fast_reg) {
        /* kernel ULPs (nvme-rdma, xprtrdma, iSER) look for these */
        caps.device_cap_flags |= PVRDMA_DEV_CAP_MEM_MGT_EXT;
        caps.bmme_flags = PVRDMA_BMME_FLAG_LOCAL_INV |
                          PVRDMA_BMME_FLAG_REMOTE_INV |
                          PVRDMA_BMME_FLAG_FAST_REG_WR;
        caps.max_fast_reg_page_list_len = PVRDMA_MAX_FAST_REG_PAGES;
    }

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

/* The async or CQ notification ring of the DSR, on the pages given. */
bool pvrdma_dsr_ring_map(PvrdmaCore *c, PvrdmaRing *r, const char *name,
                         const uint64_t *pages, uint32_t np,
                         uint32_t elem_size)
{
    if (np < 2 || np > PVRDMA_MAX_RING_PAGES) {
        PVRDMA_GUEST_ERR(c, "%s ring: bad page count %u", name, np);
        return false;
    }
    /* ring state is page 0; the device produces on rx */
    return pvrdma_ring_init(c, r, name, pages, np, 1,
                            offsetof(struct pvrdma_ring_state, rx),
                            (np - 1) * PVRDMA_PAGE_SIZE / elem_size,
                            elem_size);
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
    ok = pvrdma_dsr_ring_map(c, r, name, pages, np, elem_size);
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
    c->version = MIN(drv, c->lim.version);
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
        val = c->lim.version;
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
