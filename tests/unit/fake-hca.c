/*
 * A scripted host RDMA device for host HCA mode (see fake-hca.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "fake-hca.h"

static FakeHca *fk(PvrdmaTransport *h)
{
    return (FakeHca *)h;
}

/* The next create fails if the test asked for it. */
static int create_result(PvrdmaTransport *h)
{
    int err = fk(h)->create_err;

    fk(h)->create_err = 0;
    if (!err) {
        fk(h)->twins++;
    }
    return err;
}

/* The host drops what a reset or destroyed queue held, without a CQE. */
static void discard(FakeHca *f, bool srq, uint32_t id)
{
    for (guint i = 0; i < f->posted->len; i++) {
        FakeHcaPosted *p = &g_array_index(f->posted, FakeHcaPosted, i);

        if (p->srq == srq && (srq ? p->srq_handle : p->qpn) == id) {
            p->done = true;
        }
    }
}

static int f_pd_create(PvrdmaTransport *h, PvrdmaPD *pd)
{
    int err = create_result(h);

    if (!err) {
        pd->twin = h;
    }
    return err;
}

static void f_pd_destroy(PvrdmaTransport *h, PvrdmaPD *pd)
{
    fk(h)->twins--;
    pd->twin = NULL;
}

static int f_mr_create(PvrdmaTransport *h, PvrdmaMR *mr, uint32_t *lkey,
                       uint32_t *rkey)
{
    int err = create_result(h);

    if (!err && mr->kind == PVRDMA_MR_FRMR) {
        mr->twin = h;
        *lkey = *rkey = (0x40 + mr->handle) << 8 | 0x07;
    } else if (!err) {
        mr->twin = h;
        *lkey = 0x1000 + mr->handle;
        /* as Linux rxe: no rkey for an MR without remote access */
        *rkey = mr->access & (PVRDMA_ACCESS_REMOTE_WRITE |
                              PVRDMA_ACCESS_REMOTE_READ |
                              PVRDMA_ACCESS_REMOTE_ATOMIC) ?
                0x2000 + mr->handle : 0;
    }
    return err;
}

static void f_mr_destroy(PvrdmaTransport *h, PvrdmaMR *mr)
{
    fk(h)->twins--;
    mr->twin = NULL;
}

static int f_cq_create(PvrdmaTransport *h, PvrdmaCQ *cq, uint32_t cqe)
{
    int err = create_result(h);

    if (!err) {
        cq->twin = h;
    }
    return err;
}

static void f_cq_destroy(PvrdmaTransport *h, PvrdmaCQ *cq)
{
    fk(h)->twins--;
    cq->twin = NULL;
}

static int f_srq_create(PvrdmaTransport *h, PvrdmaSRQ *srq)
{
    int err = create_result(h);

    if (!err) {
        srq->twin = h;
    }
    return err;
}

static int f_srq_modify(PvrdmaTransport *h, PvrdmaSRQ *srq, uint32_t mask,
                        uint32_t limit)
{
    return 0;
}

static void f_srq_destroy(PvrdmaTransport *h, PvrdmaSRQ *srq)
{
    fk(h)->twins--;
    discard(fk(h), true, srq->handle);
    srq->twin = NULL;
}

static int f_qp_create(PvrdmaTransport *h, PvrdmaQP *qp)
{
    int err = create_result(h);

    if (!err) {
        qp->twin = h;
        qp->qpn = 0x300 + qp->handle;
    }
    return err;
}

static int f_qp_modify(PvrdmaTransport *h, PvrdmaQP *qp, uint32_t mask,
                       const struct pvrdma_qp_attr *a)
{
    int err = fk(h)->modify_err;

    fk(h)->modify_err = 0;
    if (!err && (mask & PVRDMA_QP_STATE)) {
        fk(h)->last_state = a->qp_state;
        if (a->qp_state == PVRDMA_QPS_RESET) {
            discard(fk(h), false, qp->qpn);
        }
    }
    return err;
}

/* A host QP leaves the state the guest gave it only for an error state. */
static int f_qp_state(PvrdmaTransport *h, PvrdmaQP *qp)
{
    return qp->state >= PVRDMA_QPS_RTR ? fk(h)->qp_state : -1;
}

static void f_qp_destroy(PvrdmaTransport *h, PvrdmaQP *qp)
{
    fk(h)->twins--;
    discard(fk(h), false, qp->qpn);
    qp->twin = NULL;
}

static int f_post_send(PvrdmaTransport *h, PvrdmaQP *qp, const PvrdmaSendWr *wr)
{
    FakeHcaPosted p = { .qpn = qp->qpn, .wr_id = wr->wr_id,
                        .opcode = wr->opcode, .num_sge = wr->num_sge,
                        .rkey = wr->rkey, .remote_addr = wr->remote_addr,
                        .imm = wr->imm };

    if (wr->mr) {
        p.mr = wr->mr->handle;
        p.mr_key = wr->mr->key;
        p.mr_valid = wr->mr->valid;
        p.mr_iova = wr->mr->iova;
    }
    if (fk(h)->sq_room <= 0) {
        return -ENOMEM;
    }
    fk(h)->sq_room--;
    memcpy(p.sge, wr->sge, MIN(wr->num_sge, 4) * sizeof(p.sge[0]));
    g_array_append_val(fk(h)->posted, p);
    return 0;
}

static int f_post_recv(PvrdmaTransport *h, PvrdmaQP *qp, PvrdmaSRQ *srq,
                       uint64_t wr_id, const struct pvrdma_sge *sge,
                       uint32_t num_sge)
{
    FakeHcaPosted p = { .recv = true, .srq = srq != NULL,
                        .qpn = qp ? qp->qpn : 0,
                        .srq_handle = srq ? srq->handle : 0,
                        .wr_id = wr_id, .num_sge = num_sge };

    if (fk(h)->rq_room <= 0) {
        return -ENOMEM;
    }
    fk(h)->rq_room--;
    memcpy(p.sge, sge, MIN(num_sge, 4) * sizeof(p.sge[0]));
    g_array_append_val(fk(h)->posted, p);
    return 0;
}

static uint32_t f_port_state(PvrdmaTransport *h)
{
    return fk(h)->port_state;
}

static void f_destroy(PvrdmaTransport *h)
{
}

static const PvrdmaQueueOps fake_hca_queue = {
    .pd_create = f_pd_create, .pd_destroy = f_pd_destroy,
    .mr_create = f_mr_create, .mr_destroy = f_mr_destroy,
    .cq_create = f_cq_create, .cq_destroy = f_cq_destroy,
    .srq_create = f_srq_create, .srq_modify = f_srq_modify,
    .srq_destroy = f_srq_destroy, .qp_create = f_qp_create,
    .qp_modify = f_qp_modify, .qp_state = f_qp_state,
    .qp_destroy = f_qp_destroy, .post_send = f_post_send,
    .post_recv = f_post_recv, .port_state = f_port_state,
};

static const PvrdmaTransportOps fake_hca_ops = {
    .name = "fake-hca",
    .destroy = f_destroy,
    .queue = &fake_hca_queue,
};

void fake_hca_init(FakeHca *f, PvrdmaCore *c)
{
    memset(f, 0, sizeof(*f));
    f->t = (PvrdmaTransport) { .ops = &fake_hca_ops, .core = c };
    f->sq_room = 1000;
    f->rq_room = 1000;
    f->qp_state = -1;
    f->port_state = PVRDMA_PORT_ACTIVE;
    f->posted = g_array_new(false, true, sizeof(FakeHcaPosted));
    g_assert_true(pvrdma_core_add_transport(c, &f->t));
}

void fake_hca_fini(FakeHca *f)
{
    g_array_free(f->posted, true);
    f->posted = NULL;
}

FakeHcaPosted *fake_hca_posted(FakeHca *f, unsigned i)
{
    g_assert_cmpuint(i, <, f->posted->len);
    return &g_array_index(f->posted, FakeHcaPosted, i);
}
