/*
 * pvrdma: memory keys.  Looks an MR up by its key (lkey == rkey), resolves
 * a range of a user, DMA or fast-registered MR into host memory, and a
 * WQE's SGEs through their lkeys (PD, access, range) into a scatter list;
 * for an inline send, finds the user MR that covers an SGE.  An MR's life:
 * CREATE_MR (user, DMA and fast-registration MRs) and DESTROY_MR; a
 * fast-registration MR's: the FAST_REG_MR and LOCAL_INV work requests
 * (checked and applied here, for the requester and for the QPs a host HCA
 * runs) and remote invalidation.
 *
 * Not here: walking the send queue (pvrdma_req.c, pvrdma_queue.c), rkey
 * checks at the responder (pvrdma_resp.c), mapping guest pages
 * (pvrdma_mem.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hw/rdma/pvrdma_core.h"
#include "pvrdma_int.h"

PvrdmaMR *pvrdma_mr_by_key(PvrdmaCore *c, uint32_t key)
{
    PvrdmaMR *mr;

    if (c->owner) {
        /* the guest knows the owner's keys (never 0) */
        return key ? g_hash_table_lookup(c->owner_keys,
                                         GUINT_TO_POINTER(key)) : NULL;
    }
    mr = pvrdma_table_get(&c->mr, key >> 8);
    return mr && mr->key == key ? mr : NULL;
}

/* [va, va+len) lies inside the region of a user or fast-registered MR */
static bool mr_covers(const PvrdmaMR *mr, uint64_t va, uint64_t len)
{
    return va >= mr->iova && len <= mr->length &&
           va - mr->iova <= mr->length - len;
}

/* Resolve [va, va+len) of an MR into host memory. */
bool pvrdma_mr_resolve(PvrdmaCore *c, PvrdmaMR *mr, uint64_t va,
                       uint64_t len, bool is_write, PvrdmaSg *sg)
{
    if (!mr->valid) {
        return false;
    }
    if (mr->kind == PVRDMA_MR_DMA) {
        return pvrdma_gpa_to_sg(c, va, len, is_write, sg);
    }
    if (!mr_covers(mr, va, len)) {
        return false;
    }
    return pvrdma_map_to_sg(&mr->map, va - mr->base, len, sg);
}

/* The user MR of pd that covers [va, va+len), or NULL. */
static PvrdmaMR *user_mr_covering(PvrdmaCore *c, uint32_t pd, uint64_t va,
                                  uint32_t len)
{
    for (uint32_t h = 0; h < c->mr.size; h++) {
        PvrdmaMR *mr = c->mr.slot[h];

        if (mr && mr->pd == pd && mr->kind == PVRDMA_MR_USER && mr->valid &&
            mr_covers(mr, va, len)) {
            return mr;
        }
    }
    return NULL;
}

/*
 * A send posted with IBV_SEND_INLINE.  rdma-core's vmw_pvrdma provider has
 * no inline segment (the driver answers max_inline_data 0): it copies the
 * SGEs as given, and verbs ignores the lkey of an inline send, so programs
 * leave it 0 (rdma_xclient does).  The device can read user memory only
 * through a page list, so such an SGE is read through the user MR of the
 * QP's PD that covers it; an SGE that no MR covers fails as any bad SGE.
 */
void pvrdma_inline_sges(PvrdmaCore *c, const PvrdmaQP *qp, PvrdmaSendWqe *w)
{
    if (!(w->hdr.send_flags & PVRDMA_SEND_INLINE) || !w->sge_ok) {
        return;     /* a bad SGE count fails the WQE anyway */
    }
    for (uint32_t i = 0; i < w->hdr.num_sge; i++) {
        struct pvrdma_sge *s = &w->sge[i];
        PvrdmaMR *mr = pvrdma_mr_by_key(c, s->lkey);

        if (!s->length ||
            (mr && mr->pd == qp->pd && mr->kind == PVRDMA_MR_USER &&
             mr_covers(mr, s->addr, s->length))) {
            continue;
        }
        mr = user_mr_covering(c, qp->pd, s->addr, s->length);
        if (mr) {
            trace_pvrdma_inline_sge(qp->handle, i, s->lkey, mr->key);
            s->lkey = mr->key;
        }
    }
}

int pvrdma_transport_resolve(PvrdmaCore *c, uint32_t pd,
                             const struct pvrdma_sge *sge, uint32_t num_sge,
                             bool is_write, PvrdmaSg *sg)
{
    return pvrdma_resolve_sges(c, pd, sge, num_sge, is_write, sg);
}

/* Local scatter list through lkeys; returns a PVRDMA_WC_* status. */
int pvrdma_resolve_sges(PvrdmaCore *c, uint32_t pd,
                        const struct pvrdma_sge *s, uint32_t n,
                        bool is_write, PvrdmaSg *sg)
{
    for (uint32_t i = 0; i < n; i++) {
        PvrdmaMR *mr;

        if (!s[i].length) {
            continue;
        }
        mr = pvrdma_mr_by_key(c, s[i].lkey);
        if (!mr || mr->pd != pd ||
            (is_write && !(mr->access & PVRDMA_ACCESS_LOCAL_WRITE)) ||
            !pvrdma_mr_resolve(c, mr, s[i].addr, s[i].length, is_write,
                               sg)) {
            PVRDMA_GUEST_ERR(c, "sge %u: lkey 0x%x addr 0x%" PRIx64
                             " len %u refused", i, s[i].lkey, s[i].addr,
                             s[i].length);
            return PVRDMA_WC_LOC_PROT_ERR;
        }
    }
    if (sg->len > (1ull << 31)) {
        return PVRDMA_WC_LOC_LEN_ERR;
    }
    return PVRDMA_WC_SUCCESS;
}

uint64_t pvrdma_sges_len(const struct pvrdma_sge *s, uint32_t n)
{
    uint64_t len = 0;

    for (uint32_t i = 0; i < n; i++) {
        len += s[i].length;
    }
    return len;
}

int pvrdma_resolve_sges_at(PvrdmaCore *c, uint32_t pd,
                           const struct pvrdma_sge *s, uint32_t n,
                           bool is_write, uint64_t off, uint64_t len,
                           PvrdmaSg *sg)
{
    for (uint32_t i = 0; i < n && len; i++) {
        uint64_t take;
        PvrdmaMR *mr;

        if (off >= s[i].length) {
            off -= s[i].length;
            continue;
        }
        take = MIN(s[i].length - off, len);
        mr = pvrdma_mr_by_key(c, s[i].lkey);
        if (!mr || mr->pd != pd ||
            (is_write && !(mr->access & PVRDMA_ACCESS_LOCAL_WRITE)) ||
            !pvrdma_mr_resolve(c, mr, s[i].addr + off, take, is_write, sg)) {
            PVRDMA_GUEST_ERR(c, "sge %u: lkey 0x%x addr 0x%" PRIx64
                             " len %u refused at offset %" PRIu64, i,
                             s[i].lkey, s[i].addr, s[i].length, off);
            return PVRDMA_WC_LOC_PROT_ERR;
        }
        off = 0;
        len -= take;
    }
    return len ? PVRDMA_WC_LOC_LEN_ERR : PVRDMA_WC_SUCCESS;
}

/*
 * The fast-registration MR that key names, whatever its key byte: without
 * an object owner its handle is key >> 8; with one, the owner's key
 * (a host memory window's) is indexed when the MR is created.
 */
PvrdmaMR *pvrdma_frmr_by_key(PvrdmaCore *c, uint32_t key)
{
    PvrdmaMR *mr;

    if (c->owner) {
        mr = g_hash_table_lookup(c->owner_frmrs, GUINT_TO_POINTER(key >> 8));
    } else {
        mr = pvrdma_table_get(&c->mr, key >> 8);
    }
    return mr && mr->kind == PVRDMA_MR_FRMR ? mr : NULL;
}

/* The key of an FRMR changes (its key byte): its owner keys follow. */
static void frmr_set_key(PvrdmaCore *c, PvrdmaMR *mr, uint32_t key)
{
    if (c->owner && key != mr->key) {
        pvrdma_owner_mr_rekey(c, mr, key);
    }
    mr->key = key;
}

/*
 * FAST_REG_MR on qp: check the work request (the MR is qp's PD's, not
 * registered, the page list within its size) and register the MR: its
 * pages mapped, its region, access and key byte the WR's.  Returns a
 * PVRDMA_WC_* status; the MR in *out and what it was in *undo, if asked
 * (pvrdma_mr_undo()).
 */
int pvrdma_mr_fast_reg(PvrdmaCore *c, PvrdmaQP *qp,
                       const struct pvrdma_fast_reg *f, PvrdmaMR **out,
                       PvrdmaMrUndo *undo)
{
    PvrdmaMR *mr = pvrdma_frmr_by_key(c, f->rkey);
    uint64_t psz, *pages = NULL;

    if (!mr || mr->pd != qp->pd || mr->valid ||
        f->page_list_len < 1 || f->page_list_len > mr->max_pages ||
        f->page_shift < 12 || f->page_shift > 30 ||
        (f->access_flags & ~PVRDMA_ACCESS_FLAGS_ALL)) {
        PVRDMA_GUEST_ERR(c, "FAST_REG_MR: rkey 0x%x refused", f->rkey);
        return PVRDMA_WC_LOC_PROT_ERR;
    }
    psz = 1ull << f->page_shift;
    if (!f->length || (f->iova_start & (psz - 1)) + f->length >
        (uint64_t)f->page_list_len * psz) {
        PVRDMA_GUEST_ERR(c, "FAST_REG_MR: length %u exceeds %u pages",
                         f->length, f->page_list_len);
        return PVRDMA_WC_LOC_LEN_ERR;
    }
    if (!pvrdma_pdir_read(c, f->pl_pdir_dma, f->page_list_len, &pages)) {
        return PVRDMA_WC_LOC_PROT_ERR;
    }
    for (uint32_t i = 0; i < f->page_list_len; i++) {
        pages[i] &= ~(psz - 1);     /* the driver passes page addresses */
    }
    pvrdma_map_release(c, &mr->map);
    if (!pvrdma_map_pages(c, &mr->map, pages, f->page_list_len, psz)) {
        g_free(pages);
        return PVRDMA_WC_LOC_PROT_ERR;
    }
    g_free(pages);
    if (undo) {
        *undo = (PvrdmaMrUndo) { .key = mr->key, .valid = mr->valid };
    }
    mr->iova = f->iova_start;
    mr->base = f->iova_start & ~(psz - 1);
    mr->length = f->length;
    mr->access = f->access_flags;
    frmr_set_key(c, mr, (mr->key & ~0xffu) | (f->rkey & 0xff));
    mr->valid = true;
    if (out) {
        *out = mr;
    }
    trace_pvrdma_fast_reg(mr->handle, mr->key, mr->iova, mr->length);
    return PVRDMA_WC_SUCCESS;
}

/* LOCAL_INV of key on qp; as pvrdma_mr_fast_reg(). */
int pvrdma_mr_local_inv(PvrdmaCore *c, PvrdmaQP *qp, uint32_t key,
                        PvrdmaMR **out, PvrdmaMrUndo *undo)
{
    PvrdmaMR *mr = pvrdma_mr_by_key(c, key);

    if (!mr || mr->kind != PVRDMA_MR_FRMR || mr->pd != qp->pd) {
        PVRDMA_GUEST_ERR(c, "LOCAL_INV: key 0x%x refused", key);
        return PVRDMA_WC_LOC_PROT_ERR;
    }
    if (undo) {
        *undo = (PvrdmaMrUndo) { .key = mr->key, .valid = mr->valid };
    }
    mr->valid = false;
    if (out) {
        *out = mr;
    }
    return PVRDMA_WC_SUCCESS;
}

/* The owner did not take the work request: the MR as it was before. */
void pvrdma_mr_undo(PvrdmaCore *c, PvrdmaMR *mr, const PvrdmaMrUndo *undo)
{
    frmr_set_key(c, mr, undo->key);
    mr->valid = undo->valid;
}

/*
 * A SEND with invalidate of key arrived on a QP of PD pd (the software
 * responder's, or one a host HCA executed): the FRMR is invalid.  false
 * if key names no FRMR of pd.
 */
bool pvrdma_mr_remote_inv(PvrdmaCore *c, uint32_t pd, uint32_t key)
{
    PvrdmaMR *mr = pvrdma_mr_by_key(c, key);

    if (!mr || mr->kind != PVRDMA_MR_FRMR || mr->pd != pd) {
        return false;
    }
    mr->valid = false;
    trace_pvrdma_remote_inv(mr->handle, key);
    return true;
}

/* An MR's life: CREATE_MR, DESTROY_MR */

/* CREATE_MR's checks of the PD, the access flags and the MR's flags */
static int create_mr_check(PvrdmaCore *c, const struct pvrdma_cmd_create_mr *m,
                           uint32_t access)
{
    if (!pvrdma_table_get(&c->pd, m->pd_handle)) {
        return CMD_ERR(c, EINVAL, "CREATE_MR: bad PD %u", m->pd_handle);
    }
    if (access & ~PVRDMA_ACCESS_FLAGS_ALL) {
        return CMD_ERR(c, EINVAL, "CREATE_MR: unknown access flags 0x%x",
                       access);
    }
    if ((access &
         (PVRDMA_ACCESS_REMOTE_WRITE | PVRDMA_ACCESS_REMOTE_ATOMIC)) &&
        !(access & PVRDMA_ACCESS_LOCAL_WRITE)) {
        return CMD_ERR(c, EINVAL,
                       "CREATE_MR: remote write without local write");
    }
    if (m->flags & ~(PVRDMA_MR_FLAG_DMA | PVRDMA_MR_FLAG_FRMR) ||
        m->flags == (PVRDMA_MR_FLAG_DMA | PVRDMA_MR_FLAG_FRMR)) {
        return CMD_ERR(c, EINVAL, "CREATE_MR: bad flags 0x%x", m->flags);
    }
    return 0;
}

/* A fast-registration MR, not registered yet; on an error mr is freed */
static int create_mr_frmr(PvrdmaCore *c, const struct pvrdma_cmd_create_mr *m,
                          PvrdmaMR *mr)
{
    if (c->lim.no_fast_reg) {
        g_free(mr);
        return CMD_ERR(c, EOPNOTSUPP, "CREATE_MR: the host device has no "
                       "fast registration (type 2 memory windows)");
    }
    if (m->nchunks < 1 || m->nchunks > PVRDMA_MAX_FAST_REG_PAGES) {
        g_free(mr);
        return CMD_ERR(c, EINVAL, "CREATE_MR: FRMR with %u pages",
                       m->nchunks);
    }
    mr->kind = PVRDMA_MR_FRMR;
    mr->max_pages = m->nchunks;
    mr->access = 0;
    mr->valid = false;
    return 0;
}

/* A user MR over the guest pages of its page list; on an error mr is freed */
static int create_mr_user(PvrdmaCore *c, const struct pvrdma_cmd_create_mr *m,
                          PvrdmaMR *mr)
{
    uint64_t first = m->start & ~(uint64_t)(PVRDMA_PAGE_SIZE - 1);
    uint64_t *pages = NULL;
    uint64_t need;

    if (m->length == 0 || m->length > c->lim.max_mr_size ||
        m->start + m->length < m->start) {
        g_free(mr);
        return CMD_ERR(c, EINVAL, "CREATE_MR: bad length 0x%" PRIx64,
                       m->length);
    }
    need = (m->start + m->length - first + PVRDMA_PAGE_SIZE - 1) /
           PVRDMA_PAGE_SIZE;
    if (m->nchunks != need) {
        g_free(mr);
        return CMD_ERR(c, EINVAL, "CREATE_MR: %u pages given, %" PRIu64
                       " needed", m->nchunks, need);
    }
    if (!pvrdma_pdir_read(c, m->pdir_dma, m->nchunks, &pages) ||
        !pvrdma_map_pages(c, &mr->map, pages, m->nchunks,
                          PVRDMA_PAGE_SIZE)) {
        g_free(pages);
        g_free(mr);
        return CMD_ERR(c, EFAULT, "CREATE_MR: page list unusable");
    }
    g_free(pages);
    mr->kind = PVRDMA_MR_USER;
    mr->iova = m->start;
    mr->length = m->length;
    mr->base = first;
    mr->valid = true;
    return 0;
}

int pvrdma_cmd_create_mr(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                         union pvrdma_cmd_resp *rsp)
{
    const struct pvrdma_cmd_create_mr *m = &req->create_mr;
    uint32_t access = m->access_flags & ~PVRDMA_ACCESS_OPTIONAL;
    PvrdmaMR *mr;
    uint32_t h;
    int err;

    err = create_mr_check(c, m, access);
    if (err) {
        return err;
    }
    mr = g_new0(PvrdmaMR, 1);
    mr->pd = m->pd_handle;
    mr->access = access;
    if (m->flags & PVRDMA_MR_FLAG_DMA) {
        mr->kind = PVRDMA_MR_DMA;
        mr->valid = true;
    } else if (m->flags & PVRDMA_MR_FLAG_FRMR) {
        err = create_mr_frmr(c, m, mr);
    } else {
        err = create_mr_user(c, m, mr);
    }
    if (err) {
        return err;     /* mr is freed */
    }
    h = pvrdma_table_alloc(&c->mr, mr);
    if (h == UINT32_MAX) {
        pvrdma_map_release(c, &mr->map);
        g_free(mr);
        return CMD_ERR(c, ENOMEM, "CREATE_MR: out of MRs");
    }
    mr->handle = h;
    mr->key = h << 8;
    rsp->create_mr_resp.lkey = mr->key;
    rsp->create_mr_resp.rkey = mr->key;
    err = pvrdma_owner_mr_create(c, mr, &rsp->create_mr_resp.lkey,
                                 &rsp->create_mr_resp.rkey);
    if (err) {
        pvrdma_table_remove(&c->mr, h);
        pvrdma_map_release(c, &mr->map);
        g_free(mr);
        return CMD_ERR(c, -err, "CREATE_MR: host device: %s",
                       strerror(-err));
    }
    mr->key = rsp->create_mr_resp.lkey;
    pvrdma_pd_ref(c, mr->pd, 1);
    rsp->create_mr_resp.mr_handle = h;
    trace_pvrdma_create_mr(h, mr->kind, mr->pd, mr->iova, mr->length);
    return 0;
}

void pvrdma_mr_free(PvrdmaCore *c, PvrdmaMR *mr)
{
    pvrdma_owner_mr_destroy(c, mr);
    pvrdma_map_release(c, &mr->map);
    pvrdma_pd_ref(c, mr->pd, -1);
    pvrdma_table_remove(&c->mr, mr->handle);
    g_free(mr);
}

int pvrdma_cmd_destroy_mr(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                          union pvrdma_cmd_resp *rsp)
{
    uint32_t h = req->destroy_mr.mr_handle;
    PvrdmaMR *mr = pvrdma_table_get(&c->mr, h);

    if (!mr) {
        return CMD_ERR(c, EINVAL, "DESTROY_MR: bad handle %u", h);
    }
    pvrdma_mr_free(c, mr);
    trace_pvrdma_destroy_mr(h);
    return 0;
}
