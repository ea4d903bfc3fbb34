/*
 * Fault and event injection (hw/rdma/core/pvrdma_inject.c): each kind fires
 * as many times as asked, on what it names only, as the guest sees it
 * (ERR register, response slot, interrupts, async events, CQEs), and an
 * injection the device cannot fire is refused.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "fake-driver.h"

#define IOVA 0x00007f0000000000ull

typedef struct Rig {
    Dev d;
    uint32_t pd;
    TCq cq;
    TQp a, b;
    TMr mr;
} Rig;

/* Two connected RC QPs on one CQ, an MR of two pages. */
static void rig_setup(Rig *r)
{
    Dev *d = &r->d;

    dev_setup(d, NULL);
    r->pd = create_pd(d, 0);
    bind_gid(d, 0, test_gid);
    create_cq(d, &r->cq, 64);
    create_qp(d, &r->a, r->pd, r->cq.handle, r->cq.handle, PVRDMA_QPT_RC);
    create_qp(d, &r->b, r->pd, r->cq.handle, r->cq.handle, PVRDMA_QPT_RC);
    create_mr(d, &r->mr, r->pd, IOVA, 2 * FH_PAGE,
              PVRDMA_ACCESS_LOCAL_WRITE | RC_ACCESS);
    rc_to_rts(d, &r->a, r->b.qpn, 7);
    rc_to_rts(d, &r->b, r->a.qpn, 7);
    run_all(d);
}

static bool inject(Rig *r, PvrdmaInject in, const char *want_err)
{
    g_autoptr(Error) err = NULL;
    bool ok = pvrdma_inject(&r->d.c, &in, &err);

    if (want_err) {
        g_assert_false(ok);
        g_assert_nonnull(strstr(error_get_pretty(err), want_err));
    } else {
        g_assert_true(ok);
        g_assert_null(err);
    }
    return ok;
}

/* A SEND of 64 bytes from a to b's posted receive (wr_ids 0xa/0xb + n). */
static void send_one(Rig *r, uint8_t n)
{
    struct pvrdma_sge s = { IOVA, 64, r->mr.lkey };
    struct pvrdma_sge t = { IOVA + FH_PAGE, 64, r->mr.lkey };
    struct pvrdma_sq_wqe_hdr w = { .wr_id = 0xa0 + n,
                                   .opcode = PVRDMA_WR_SEND,
                                   .send_flags = PVRDMA_SEND_SIGNALED };

    post_recv(&r->d, &r->b, 0xb0 + n, &t, 1);
    post_send(&r->d, &r->a, &w, &s, 1);
    run_all(&r->d);
}

/* The i-th event of the async ring. */
static struct pvrdma_eqe *eqe(Rig *r, unsigned i)
{
    return (struct pvrdma_eqe *)fh_ptr(&r->d.h, r->d.async_pages[1]) + i;
}

static uint32_t query_port_state(Rig *r)
{
    union pvrdma_cmd_req req = { 0 };
    union pvrdma_cmd_resp rsp;

    req.query_port.port_num = 1;
    g_assert_cmpuint(dev_cmd(&r->d, &req, PVRDMA_CMD_QUERY_PORT, &rsp), ==,
                     0);
    return rsp.query_port_resp.attrs.state;
}

/* command-error: the next N of that opcode fail with the errno, unrun. */
static void test_command_error(void)
{
    Rig r;
    union pvrdma_cmd_req req = { 0 };
    uint32_t used;

    rig_setup(&r);
    used = r.d.c.pd.used;
    inject(&r, (PvrdmaInject) { .kind = PVRDMA_INJECT_CMD_ERROR,
                                .opcode = PVRDMA_CMD_CREATE_PD,
                                .count = 2, .status = 5 }, NULL);
    g_assert_cmpuint(dev_cmd(&r.d, &req, PVRDMA_CMD_CREATE_PD, NULL), ==, 5);
    g_assert_cmpuint(dev_cmd(&r.d, &req, PVRDMA_CMD_CREATE_PD, NULL), ==, 5);
    g_assert_cmpuint(r.d.c.pd.used, ==, used);          /* not run */
    /* other opcodes are untouched, and the third CREATE_PD runs */
    g_assert_cmpuint(query_port_state(&r), ==, PVRDMA_PORT_ACTIVE);
    create_pd(&r.d, 0);
    g_assert_cmpuint(r.d.c.pd.used, ==, used + 1);
    g_assert_cmpuint(r.d.c.inject[0].fired, ==, 2);
    g_assert_cmpuint(r.d.c.inject[0].count, ==, 0);
    g_assert_cmpuint(r.d.c.inject_cmds, ==, 0);
    /* refused: errno 0, an unknown opcode */
    inject(&r, (PvrdmaInject) { .kind = PVRDMA_INJECT_CMD_ERROR,
                                .opcode = PVRDMA_CMD_CREATE_PD }, "errno");
    inject(&r, (PvrdmaInject) { .kind = PVRDMA_INJECT_CMD_DROP,
                                .opcode = PVRDMA_CMD_MAX }, "no command");
    dev_fini(&r.d);
}

/*
 * command-drop: the command is lost (not run, ERR 0, no response, no
 * interrupt); command-delay: it runs, and the response and its interrupt
 * come delay_ms later, or never if the next command comes first.
 */
static void test_command_drop_delay(void)
{
    Rig r;
    union pvrdma_cmd_req req = { 0 };
    union pvrdma_cmd_resp *slot;
    uint64_t irqs;
    uint32_t used;

    rig_setup(&r);
    slot = fh_ptr(&r.d.h, r.d.resp);
    used = r.d.c.pd.used;
    irqs = fh_irq_count(&r.d.h, PVRDMA_INTR_VECTOR_RESPONSE);
    inject(&r, (PvrdmaInject) { .kind = PVRDMA_INJECT_CMD_DROP,
                                .opcode = PVRDMA_CMD_CREATE_PD }, NULL);
    req.hdr.cmd = PVRDMA_CMD_CREATE_PD;
    memcpy(fh_ptr(&r.d.h, r.d.cmd), &req, sizeof(req));
    memset(slot, 0xee, sizeof(*slot));
    pvrdma_core_reg_write(&r.d.c, PVRDMA_REG_REQUEST, 0);
    g_assert_cmpuint(pvrdma_core_reg_read(&r.d.c, PVRDMA_REG_ERR), ==, 0);
    g_assert_cmphex(slot->hdr.ack, ==, 0xeeeeeeee);
    g_assert_cmpuint(fh_irq_count(&r.d.h, PVRDMA_INTR_VECTOR_RESPONSE), ==,
                     irqs);
    g_assert_cmpuint(r.d.c.pd.used, ==, used);          /* lost: not run */

    inject(&r, (PvrdmaInject) { .kind = PVRDMA_INJECT_CMD_DELAY,
                                .opcode = PVRDMA_CMD_CREATE_PD,
                                .count = 2, .delay_ms = 50 }, NULL);
    memset(slot, 0xee, sizeof(*slot));
    pvrdma_core_reg_write(&r.d.c, PVRDMA_REG_REQUEST, 0);
    g_assert_cmpuint(pvrdma_core_reg_read(&r.d.c, PVRDMA_REG_ERR), ==, 0);
    g_assert_cmphex(slot->hdr.ack, ==, 0xeeeeeeee);
    r.d.h.now += 49;
    pvrdma_core_run(&r.d.c);
    g_assert_cmphex(slot->hdr.ack, ==, 0xeeeeeeee);
    r.d.h.now += 1;
    pvrdma_core_run(&r.d.c);
    g_assert_cmphex(slot->hdr.ack, ==,
                    PVRDMA_CMD_RESP(PVRDMA_CMD_CREATE_PD));
    g_assert_cmpuint(slot->create_pd_resp.pd_handle, !=, 0);
    g_assert_cmpuint(r.d.c.pd.used, ==, used + 1);      /* it ran */
    g_assert_cmpuint(fh_irq_count(&r.d.h, PVRDMA_INTR_VECTOR_RESPONSE), ==,
                     irqs + 1);
    /* the second one is overtaken by the next command: never answered */
    memset(slot, 0xee, sizeof(*slot));
    pvrdma_core_reg_write(&r.d.c, PVRDMA_REG_REQUEST, 0);
    g_assert_true(r.d.c.resp_held);
    g_assert_cmpuint(query_port_state(&r), ==, PVRDMA_PORT_ACTIVE);
    g_assert_false(r.d.c.resp_held);
    r.d.h.now += 100;
    pvrdma_core_run(&r.d.c);
    g_assert_cmphex(slot->hdr.ack, ==,
                    PVRDMA_CMD_RESP(PVRDMA_CMD_QUERY_PORT));
    dev_fini(&r.d);
}

/*
 * completion-error: the QP's next send completes with the status and the
 * QP fails as on any error completion (what follows is flushed); another
 * QP is untouched.
 */
static void test_completion_error(void)
{
    Rig r;
    struct pvrdma_sge s = { IOVA, 64, 0 };
    struct pvrdma_sge t = { IOVA + FH_PAGE, 64, 0 };
    struct pvrdma_sq_wqe_hdr w = { .opcode = PVRDMA_WR_SEND,
                                   .send_flags = PVRDMA_SEND_SIGNALED };

    rig_setup(&r);
    s.lkey = t.lkey = r.mr.lkey;
    send_one(&r, 1);
    expect_cqe(&r.d, &r.cq, 0xb1, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 64,
               r.b.handle);
    expect_cqe(&r.d, &r.cq, 0xa1, PVRDMA_WC_SUCCESS, PVRDMA_WC_SEND, 64,
               r.a.handle);
    inject(&r, (PvrdmaInject) { .kind = PVRDMA_INJECT_WC_ERROR,
                                .handle = r.a.handle,
                                .status = PVRDMA_WC_RETRY_EXC_ERR }, NULL);
    /* the data reaches b; a's requester sees the injected failure */
    put_recv(&r.d, &r.b, 0xb2, &t, 1);
    post_recv(&r.d, &r.b, 0xb3, &t, 1);
    w.wr_id = 0xa2;
    put_send(&r.d, &r.a, &w, &s, 1);
    w.wr_id = 0xa3;
    post_send(&r.d, &r.a, &w, &s, 1);
    run_all(&r.d);
    expect_cqe(&r.d, &r.cq, 0xb2, PVRDMA_WC_SUCCESS, PVRDMA_WC_RECV, 64,
               r.b.handle);
    expect_cqe(&r.d, &r.cq, 0xa2, PVRDMA_WC_RETRY_EXC_ERR, PVRDMA_WC_SEND, 0,
               r.a.handle);
    expect_cqe(&r.d, &r.cq, 0xa3, PVRDMA_WC_WR_FLUSH_ERR, PVRDMA_WC_SEND, 0,
               r.a.handle);
    g_assert_cmpuint(query_qp_state(&r.d, &r.a), ==, PVRDMA_QPS_ERR);
    g_assert_cmpuint(query_qp_state(&r.d, &r.b), ==, PVRDMA_QPS_RTS);
    g_assert_cmpuint(r.d.c.inject_wcs, ==, 0);
    /* refused: no such QP, success as the "error", a status past the ABI */
    inject(&r, (PvrdmaInject) { .kind = PVRDMA_INJECT_WC_ERROR,
                                .handle = 999, .status = 5 }, "no QP");
    inject(&r, (PvrdmaInject) { .kind = PVRDMA_INJECT_WC_ERROR,
                                .handle = r.b.handle,
                                .status = PVRDMA_WC_SUCCESS }, "status");
    inject(&r, (PvrdmaInject) { .kind = PVRDMA_INJECT_WC_ERROR,
                                .handle = r.b.handle,
                                .status = PVRDMA_WC_GENERAL_ERR + 1 },
           "status");
    expect_cq_empty(&r.d, &r.cq);
    dev_fini(&r.d);
}

/*
 * async-event: posted on the async ring with vector 1 for an object that
 * exists; a QP's fatal events also move the QP to the error state.
 */
static void test_async_event(void)
{
    Rig r;
    uint64_t irqs;

    rig_setup(&r);
    irqs = fh_irq_count(&r.d.h, PVRDMA_INTR_VECTOR_ASYNC);
    inject(&r, (PvrdmaInject) { .kind = PVRDMA_INJECT_EVENT,
                                .event = PVRDMA_EVENT_CQ_ERR,
                                .handle = r.cq.handle }, NULL);
    inject(&r, (PvrdmaInject) { .kind = PVRDMA_INJECT_EVENT,
                                .event = PVRDMA_EVENT_QP_ACCESS_ERR,
                                .handle = r.b.handle }, NULL);
    inject(&r, (PvrdmaInject) { .kind = PVRDMA_INJECT_EVENT,
                                .event = PVRDMA_EVENT_DEVICE_FATAL }, NULL);
    g_assert_cmpuint(eqe(&r, 0)->type, ==, PVRDMA_EVENT_CQ_ERR);
    g_assert_cmpuint(eqe(&r, 0)->info, ==, r.cq.handle);
    g_assert_cmpuint(eqe(&r, 1)->type, ==, PVRDMA_EVENT_QP_ACCESS_ERR);
    g_assert_cmpuint(eqe(&r, 1)->info, ==, r.b.handle);
    g_assert_cmpuint(eqe(&r, 2)->type, ==, PVRDMA_EVENT_DEVICE_FATAL);
    g_assert_cmpuint(fh_irq_count(&r.d.h, PVRDMA_INTR_VECTOR_ASYNC), ==,
                     irqs + 3);
    g_assert_cmpuint(query_qp_state(&r.d, &r.b), ==, PVRDMA_QPS_ERR);
    g_assert_cmpuint(query_qp_state(&r.d, &r.a), ==, PVRDMA_QPS_RTS);
    /* refused: objects that do not exist, an event that is not a fault */
    inject(&r, (PvrdmaInject) { .kind = PVRDMA_INJECT_EVENT,
                                .event = PVRDMA_EVENT_QP_FATAL,
                                .handle = 999 }, "no QP");
    inject(&r, (PvrdmaInject) { .kind = PVRDMA_INJECT_EVENT,
                                .event = PVRDMA_EVENT_SRQ_ERR,
                                .handle = 1 }, "no SRQ");
    inject(&r, (PvrdmaInject) { .kind = PVRDMA_INJECT_EVENT,
                                .event = PVRDMA_EVENT_CQ_ERR,
                                .handle = 999 }, "no CQ");
    inject(&r, (PvrdmaInject) { .kind = PVRDMA_INJECT_EVENT,
                                .event = PVRDMA_EVENT_COMM_EST,
                                .handle = r.a.handle }, "cannot be injected");
    /* of_qp: the QP's send CQ; not its SRQ (it has none); not a QP event */
    inject(&r, (PvrdmaInject) { .kind = PVRDMA_INJECT_EVENT,
                                .event = PVRDMA_EVENT_SRQ_ERR, .of_qp = true,
                                .handle = r.a.handle }, "has no SRQ");
    inject(&r, (PvrdmaInject) { .kind = PVRDMA_INJECT_EVENT,
                                .event = PVRDMA_EVENT_QP_FATAL, .of_qp = true,
                                .handle = r.a.handle }, "of-qp applies");
    inject(&r, (PvrdmaInject) { .kind = PVRDMA_INJECT_EVENT,
                                .event = PVRDMA_EVENT_CQ_ERR, .of_qp = true,
                                .handle = 999 }, "no QP");
    g_assert_cmpuint(fh_irq_count(&r.d.h, PVRDMA_INTR_VECTOR_ASYNC), ==,
                     irqs + 3);
    inject(&r, (PvrdmaInject) { .kind = PVRDMA_INJECT_EVENT,
                                .event = PVRDMA_EVENT_CQ_ERR, .of_qp = true,
                                .handle = r.a.handle }, NULL);
    g_assert_cmpuint(eqe(&r, 3)->type, ==, PVRDMA_EVENT_CQ_ERR);
    g_assert_cmpuint(eqe(&r, 3)->info, ==, r.cq.handle);
    irqs++;
    g_assert_cmpuint(fh_irq_count(&r.d.h, PVRDMA_INTR_VECTOR_ASYNC), ==,
                     irqs + 3);
    dev_fini(&r.d);
}

/* port-down / port-up: QUERY_PORT, PORT_ERR / PORT_ACTIVE; clear. */
static void test_port_and_clear(void)
{
    Rig r;

    rig_setup(&r);
    inject(&r, (PvrdmaInject) { .kind = PVRDMA_INJECT_PORT_DOWN }, NULL);
    g_assert_cmpuint(query_port_state(&r), ==, PVRDMA_PORT_DOWN);
    g_assert_cmpuint(eqe(&r, 0)->type, ==, PVRDMA_EVENT_PORT_ERR);
    g_assert_cmpuint(fh_reports(&r.d.h, "port down"), ==, 1);
    inject(&r, (PvrdmaInject) { .kind = PVRDMA_INJECT_PORT_UP }, NULL);
    g_assert_cmpuint(query_port_state(&r), ==, PVRDMA_PORT_ACTIVE);
    g_assert_cmpuint(eqe(&r, 1)->type, ==, PVRDMA_EVENT_PORT_ACTIVE);
    /* clear: the port up, nothing pending */
    inject(&r, (PvrdmaInject) { .kind = PVRDMA_INJECT_PORT_DOWN }, NULL);
    inject(&r, (PvrdmaInject) { .kind = PVRDMA_INJECT_CMD_ERROR,
                                .opcode = PVRDMA_CMD_QUERY_PORT,
                                .status = 5, .count = 3 }, NULL);
    inject(&r, (PvrdmaInject) { .kind = PVRDMA_INJECT_CLEAR }, NULL);
    g_assert_cmpuint(r.d.c.ninject, ==, 0);
    g_assert_cmpuint(query_port_state(&r), ==, PVRDMA_PORT_ACTIVE);
    /* at most PVRDMA_INJECT_MAX pending; a done one makes room */
    for (unsigned i = 0; i < PVRDMA_INJECT_MAX; i++) {
        inject(&r, (PvrdmaInject) { .kind = PVRDMA_INJECT_CMD_DROP,
                                    .opcode = PVRDMA_CMD_QUERY_SRQ }, NULL);
    }
    inject(&r, (PvrdmaInject) { .kind = PVRDMA_INJECT_CMD_DROP,
                                .opcode = PVRDMA_CMD_QUERY_SRQ }, "pending");
    r.d.c.inject[3].count = 0;      /* as if it had fired */
    r.d.c.inject_cmds--;
    inject(&r, (PvrdmaInject) { .kind = PVRDMA_INJECT_CMD_ERROR,
                                .opcode = PVRDMA_CMD_QUERY_PORT,
                                .status = 7 }, NULL);
    g_assert_cmpuint(r.d.c.inject[PVRDMA_INJECT_MAX - 1].opcode, ==,
                     PVRDMA_CMD_QUERY_PORT);
    dev_fini(&r.d);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/pvrdma/inject/command-error", test_command_error);
    g_test_add_func("/pvrdma/inject/command-drop-delay",
                    test_command_drop_delay);
    g_test_add_func("/pvrdma/inject/completion-error", test_completion_error);
    g_test_add_func("/pvrdma/inject/async-event", test_async_event);
    g_test_add_func("/pvrdma/inject/port-and-clear", test_port_and_clear);
    return g_test_run();
}
