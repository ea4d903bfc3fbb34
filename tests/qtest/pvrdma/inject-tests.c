/*
 * QTest for the pvrdma device: fault and event injection
 * (x-pvrdma-inject), guest-error events.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "qemu/bswap.h"
#include "libqos/pvrdma.h"
#include "hw/pci/pci_regs.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "qobject/qjson.h"
#include "qapi/error.h"
#include "pvrdma/framework.h"

static int64_t guest_errors(QPvrdma *d)
{
    QDict *r = qtest_qmp(d->qts, "{ 'execute': 'query-pvrdma' }");
    QDict *dev = qobject_to(QDict, qlist_peek(qdict_get_qlist(r, "return")));
    int64_t n = qdict_get_int(dev, "guest-errors");

    qobject_unref(r);
    return n;
}

/*
 * PVRDMA_GUEST_ERROR: none for a clean run (activation, a QP pair, data
 * both ways, teardown), one naming what was wrong for a bad command and
 * for a doorbell of no QP, and query-pvrdma's guest-errors counts them.
 */
static void test_guest_error_event(void)
{
    Pair p;
    QPvrdma *d;
    union pvrdma_cmd_req bad = { .hdr.cmd = 99 };
    uint64_t src, dst;
    uint32_t key;
    QDict *ev;

    pair_setup(&p, PVRDMA_QPT_RC, 8);
    d = p.d;
    src = qpvrdma_alloc(d, 4096);
    dst = qpvrdma_alloc(d, 4096);
    key = qpvrdma_create_mr(d, p.pd, src, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    qpvrdma_create_mr(d, p.pd, dst, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    pair_exchange(&p, src, dst, key, 1, 9);
    same(d, src, dst, 4096);
    g_assert_cmpint(guest_errors(d), ==, 0);
    g_assert_null(qtest_qmp_event_ref(d->qts, "PVRDMA_GUEST_ERROR"));

    g_assert_cmpuint(qpvrdma_cmd(d, &bad, sizeof(bad), NULL), ==, EINVAL);
    ev = qtest_qmp_eventwait_ref(d->qts, "PVRDMA_GUEST_ERROR");
    g_assert_cmpstr(qdict_get_str(qdict_get_qdict(ev, "data"), "message"),
                    ==, "unknown command 99");
    g_assert_cmpint(qdict_get_int(qdict_get_qdict(ev, "data"), "count"), ==,
                    1);
    g_assert_cmpstr(qdict_get_str(qdict_get_qdict(ev, "data"), "qom-path"),
                    ==, "/machine/peripheral/pvrdma0");
    qobject_unref(ev);
    /* a send doorbell for a QP that does not exist: within the second */
    qpvrdma_uar_write(d, 0, PVRDMA_UAR_QP_OFFSET, PVRDMA_UAR_QP_SEND | 0xfff);
    g_assert_cmpint(guest_errors(d), ==, 2);
    qtest_clock_step(d->qts, 1100ll * 1000 * 1000);     /* the rate limit */
    ev = qtest_qmp_eventwait_ref(d->qts, "PVRDMA_GUEST_ERROR");
    g_assert_cmpint(qdict_get_int(qdict_get_qdict(ev, "data"), "count"), ==,
                    2);
    qobject_unref(ev);
    qpvrdma_stop(d);
}

/* ------------------------------------------------------------------ */
/* Fault and event injection (x-pvrdma-inject)                         */

/* x-pvrdma-inject with ARGS (a JSON object's members); its error or NULL */
static char *inject(QPvrdma *d, const char *args)
{
    g_autofree char *json = g_strdup_printf("{ %s }", args);
    QObject *a = qobject_from_json(json, &error_abort);
    QDict *r = qtest_qmp(d->qts, "{ 'execute': 'x-pvrdma-inject', "
                         "'arguments': %p }", a);
    char *err = NULL;

    if (qdict_haskey(r, "error")) {
        err = g_strdup(qdict_get_str(qdict_get_qdict(r, "error"), "desc"));
    } else {
        g_assert(qdict_haskey(r, "return"));
    }
    qobject_unref(r);
    return err;
}

static void inject_ok(QPvrdma *d, const char *args)
{
    g_autofree char *err = inject(d, args);

    g_assert_null(err);
}

static void inject_refused(QPvrdma *d, const char *args, const char *want)
{
    g_autofree char *err = inject(d, args);

    g_assert_nonnull(err);
    g_assert_nonnull(strstr(err, want));
}

/* The device's injections in query-pvrdma: "kind:left:fired ..." */
static char *injections(QPvrdma *d)
{
    QDict *r = qtest_qmp(d->qts, "{ 'execute': 'query-pvrdma' }");
    QList *devs = qdict_get_qlist(r, "return");
    QDict *dev = qobject_to(QDict, qlist_peek(devs));
    GString *out = g_string_new("");
    QListEntry *e;

    QLIST_FOREACH_ENTRY(qdict_get_qlist(dev, "injections"), e) {
        QDict *i = qobject_to(QDict, qlist_entry_obj(e));

        g_string_append_printf(out, "%s%s:%" PRId64 ":%" PRId64,
                               out->len ? " " : "",
                               qdict_get_str(i, "kind"),
                               qdict_get_int(i, "left"),
                               qdict_get_int(i, "fired"));
    }
    qobject_unref(r);
    return g_string_free(out, false);
}

/* The async event NAME about handle h: posted as type, with h as info */
static void inject_event(QPvrdma *d, const char *name, uint32_t h,
                         uint32_t type)
{
    g_autofree char *args = g_strdup_printf(
        "'kind': 'async-event', 'event': '%s', 'handle': %u", name, h);

    inject_ok(d, args);
    g_assert(async_seen(d, type, h));
}

/* A pair with two MRs (src, dst) and one SEND done: p->d is the device */
static void inject_pair(Pair *p, uint64_t *src, uint64_t *dst, uint32_t *key)
{
    g_autofree char *list = NULL;

    pair_setup(p, PVRDMA_QPT_RC, 8);
    *src = qpvrdma_alloc(p->d, 4096);
    *dst = qpvrdma_alloc(p->d, 4096);
    *key = qpvrdma_create_mr(p->d, p->pd, *src, 4096,
                             PVRDMA_ACCESS_LOCAL_WRITE);
    qpvrdma_create_mr(p->d, p->pd, *dst, 4096, PVRDMA_ACCESS_LOCAL_WRITE);
    pair_exchange(p, *src, *dst, *key, 1, 3);
    list = injections(p->d);
    g_assert_cmpstr(list, ==, "");
}

/*
 * Command faults over QMP, as the guest sees them: a command failing with
 * the errno (and running again after), a response that comes late
 * (virtual time), one that never comes; what query-pvrdma lists.
 */
static void test_inject_commands(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    struct pvrdma_cmd_create_pd cp = { .hdr.cmd = PVRDMA_CMD_CREATE_PD };
    struct pvrdma_cmd_query_port qp = { .hdr.cmd = PVRDMA_CMD_QUERY_PORT,
                                        .port_num = 1 };
    union pvrdma_cmd_resp r;
    g_autofree char *list = NULL;

    inject_ok(d, "'kind': 'command-error', 'opcode': 'create-pd', "
              "'status': 12, 'count': 2");
    g_assert_cmpuint(qpvrdma_cmd(d, &cp, sizeof(cp), &r), ==, 12);
    g_assert_cmpuint(qpvrdma_cmd(d, &cp, sizeof(cp), &r), ==, 12);
    qpvrdma_cmd_ok(d, &cp, sizeof(cp), &r);

    /* command-delay: the response comes 500 ms of virtual time later */
    inject_ok(d, "'kind': 'command-delay', 'opcode': 'query-port', "
              "'delay-ms': 500");
    qtest_memwrite(d->qts, d->cmd, &qp, sizeof(qp));
    qtest_memset(d->qts, d->resp, 0xee, sizeof(r));
    qpvrdma_vector_seen(d, PVRDMA_INTR_VECTOR_RESPONSE);
    qpvrdma_reg_write(d, PVRDMA_REG_REQUEST, 0);
    g_assert_cmpuint(qpvrdma_reg_read(d, PVRDMA_REG_ERR), ==, 0);
    qtest_clock_step(d->qts, 400 * 1000 * 1000);
    g_assert(!qpvrdma_vector_seen(d, PVRDMA_INTR_VECTOR_RESPONSE));
    g_assert_cmphex(qtest_readl(d->qts, d->resp + 4), ==, 0xeeeeeeee);
    qtest_clock_step(d->qts, 200 * 1000 * 1000);
    g_assert(qpvrdma_vector_seen(d, PVRDMA_INTR_VECTOR_RESPONSE));
    qtest_memread(d->qts, d->resp, &r, sizeof(r));
    g_assert_cmphex(r.hdr.ack, ==, PVRDMA_CMD_RESP(PVRDMA_CMD_QUERY_PORT));
    g_assert_cmpuint(r.query_port_resp.attrs.state, ==, PVRDMA_PORT_ACTIVE);

    /* command-drop: no response and no interrupt, ever */
    inject_ok(d, "'kind': 'command-drop', 'opcode': 'query-port'");
    qtest_memset(d->qts, d->resp, 0xee, sizeof(r));
    qpvrdma_reg_write(d, PVRDMA_REG_REQUEST, 0);
    g_assert_cmpuint(qpvrdma_reg_read(d, PVRDMA_REG_ERR), ==, 0);
    qtest_clock_step(d->qts, 20ll * 1000 * 1000 * 1000);
    g_assert(!qpvrdma_vector_seen(d, PVRDMA_INTR_VECTOR_RESPONSE));
    g_assert_cmphex(qtest_readl(d->qts, d->resp + 4), ==, 0xeeeeeeee);

    list = injections(d);
    g_assert_cmpstr(list, ==, "command-error:0:2 command-delay:0:1 "
                    "command-drop:0:1");
    inject_refused(d, "'kind': 'command-error', 'opcode': 'create-pd'",
                   "needs 'status'");
    inject_refused(d, "'kind': 'command-drop'", "needs 'opcode'");
    qpvrdma_stop(d);
}

/* completion-error: a's next send fails, what follows is flushed */
static void test_inject_completion(void)
{
    Pair p;
    uint64_t src, dst;
    uint32_t key;
    g_autofree char *args = NULL, *list = NULL;

    inject_pair(&p, &src, &dst, &key);
    args = g_strdup_printf("'kind': 'completion-error', 'handle': %u, "
                           "'status': %u", p.a.handle,
                           PVRDMA_WC_RETRY_EXC_ERR);
    inject_ok(p.d, args);
    qpvrdma_post_recv(p.d, &p.b, 0xb2, dst, 4096, key + 256);
    qpvrdma_send_wr(p.d, &p.a, PVRDMA_WR_SEND, 0xa2, src, 64, key, 0, 0);
    qpvrdma_expect_cqe(p.d, &p.cq, 0xb2, PVRDMA_WC_RECV, PVRDMA_WC_SUCCESS,
                       64);
    qpvrdma_expect_cqe(p.d, &p.cq, 0xa2, PVRDMA_WC_SEND,
                       PVRDMA_WC_RETRY_EXC_ERR, 0);
    qpvrdma_send_wr(p.d, &p.a, PVRDMA_WR_SEND, 0xa3, src, 64, key, 0, 0);
    qpvrdma_expect_cqe(p.d, &p.cq, 0xa3, PVRDMA_WC_SEND,
                       PVRDMA_WC_WR_FLUSH_ERR, 0);
    g_assert_cmpuint(qp_state(p.d, p.a.handle), ==, PVRDMA_QPS_ERR);
    g_assert_cmpuint(qp_state(p.d, p.b.handle), ==, PVRDMA_QPS_RTS);
    list = injections(p.d);
    g_assert_cmpstr(list, ==, "completion-error:0:1");
    inject_refused(p.d, "'kind': 'completion-error', 'handle': 999, "
                   "'status': 12", "no QP");
    qpvrdma_stop(p.d);
}

/*
 * async-event: every kind; the QP events fail the QP (as the device's
 * own faults do), the others are only told.
 */
static void test_inject_events(void)
{
    static const struct { const char *name; uint32_t type; } qpev[] = {
        { "qp-fatal", PVRDMA_EVENT_QP_FATAL },
        { "qp-req-err", PVRDMA_EVENT_QP_REQ_ERR },
        { "qp-access-err", PVRDMA_EVENT_QP_ACCESS_ERR },
    };
    Pair p;
    struct pvrdma_cmd_create_srq c = { .hdr.cmd = PVRDMA_CMD_CREATE_SRQ,
                                       .nchunks = 2 };
    union pvrdma_cmd_resp r;
    QPvrdmaRing ring;
    QPvrdmaQp q;
    uint32_t srq;

    pair_setup(&p, PVRDMA_QPT_RC, 8);
    for (unsigned i = 0; i < ARRAY_SIZE(qpev); i++) {
        qpvrdma_create_qp(p.d, &q, p.pd, p.cq.handle, p.cq.handle,
                          PVRDMA_QPT_RC, 4, 0);
        qpvrdma_qp_to_rts(p.d, &q, PVRDMA_QPT_RC, p.a.qpn);
        inject_event(p.d, qpev[i].name, q.handle, qpev[i].type);
        g_assert_cmpuint(qp_state(p.d, q.handle), ==, PVRDMA_QPS_ERR);
    }
    g_assert_cmpuint(qp_state(p.d, p.a.handle), ==, PVRDMA_QPS_RTS);
    inject_event(p.d, "cq-err", p.cq.handle, PVRDMA_EVENT_CQ_ERR);
    /* by a QP's number: its send CQ (what an application knows) */
    {
        g_autofree char *args = g_strdup_printf(
            "'kind': 'async-event', 'event': 'cq-err', 'handle': %u, "
            "'of-qp': true", p.a.qpn);

        unsigned n = async_count(p.d, PVRDMA_EVENT_CQ_ERR, p.cq.handle);

        inject_ok(p.d, args);
        g_assert_cmpuint(async_count(p.d, PVRDMA_EVENT_CQ_ERR, p.cq.handle),
                         ==, n + 1);
    }
    inject_refused(p.d, "'kind': 'async-event', 'event': 'qp-fatal', "
                   "'handle': 1, 'of-qp': true", "of-qp applies");
    qpvrdma_ring_alloc(p.d, &ring, 2);
    c.pdir_dma = ring.pdir;
    c.pd_handle = p.pd;
    c.attrs.max_wr = 16;
    c.attrs.max_sge = 1;
    qpvrdma_cmd_ok(p.d, &c, sizeof(c), &r);
    srq = r.create_srq_resp.srqn;
    inject_event(p.d, "srq-err", srq, PVRDMA_EVENT_SRQ_ERR);
    inject_event(p.d, "srq-limit-reached", srq,
                 PVRDMA_EVENT_SRQ_LIMIT_REACHED);
    inject_ok(p.d, "'kind': 'async-event', 'event': 'gid-change'");
    g_assert(async_seen(p.d, PVRDMA_EVENT_GID_CHANGE, 1));
    inject_ok(p.d, "'kind': 'async-event', 'event': 'device-fatal'");
    g_assert(async_seen(p.d, PVRDMA_EVENT_DEVICE_FATAL, 1));
    inject_refused(p.d, "'kind': 'async-event', 'event': 'qp-fatal', "
                   "'handle': 999", "no QP with handle 999");
    inject_refused(p.d, "'kind': 'async-event', 'event': 'srq-err', "
                   "'handle': 999", "no SRQ with handle 999");
    inject_refused(p.d, "'kind': 'async-event', 'handle': 1",
                   "needs 'event'");
    qpvrdma_stop(p.d);
}

/* port-down / port-up: QUERY_PORT, the async and QMP events */
static void test_inject_port(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    struct pvrdma_cmd_query_port qp = { .hdr.cmd = PVRDMA_CMD_QUERY_PORT,
                                        .port_num = 1 };
    union pvrdma_cmd_resp r;
    QDict *ev;

    inject_ok(d, "'kind': 'port-down'");
    g_assert(async_seen(d, PVRDMA_EVENT_PORT_ERR, 1));
    ev = qtest_qmp_eventwait_ref(d->qts, "PVRDMA_PORT_CHANGED");
    g_assert_false(qdict_get_bool(qdict_get_qdict(ev, "data"), "active"));
    qobject_unref(ev);
    qpvrdma_cmd_ok(d, &qp, sizeof(qp), &r);
    g_assert_cmpuint(r.query_port_resp.attrs.state, ==, PVRDMA_PORT_DOWN);
    inject_ok(d, "'kind': 'port-up'");
    g_assert(async_seen(d, PVRDMA_EVENT_PORT_ACTIVE, 1));
    qpvrdma_cmd_ok(d, &qp, sizeof(qp), &r);
    g_assert_cmpuint(r.query_port_resp.attrs.state, ==, PVRDMA_PORT_ACTIVE);
    inject_refused(d, "'id': 'nosuch', 'kind': 'port-down'",
                   "no pvrdma device 'nosuch'");
    qpvrdma_stop(d);
}

/* HMP: x_pvrdma_inject, info pvrdma lists what fired; clear by id */
static void test_inject_hmp(void)
{
    QPvrdma *d = qpvrdma_start_active(NULL);
    struct pvrdma_cmd_create_pd cp = { .hdr.cmd = PVRDMA_CMD_CREATE_PD };
    union pvrdma_cmd_resp r;
    char *out;

    out = qtest_hmp(d->qts, "x_pvrdma_inject command-error,"
                    "opcode=create-pd,status=5");
    g_assert_cmpstr(out, ==, "");
    g_free(out);
    g_assert_cmpuint(qpvrdma_cmd(d, &cp, sizeof(cp), &r), ==, 5);
    out = qtest_hmp(d->qts, "info pvrdma");
    g_assert_nonnull(strstr(out, "injected command-error create-pd status 5: "
                            "fired 1, 0 left"));
    g_free(out);
    out = qtest_hmp(d->qts, "x_pvrdma_inject completion-error,handle=999,"
                    "status=12");
    g_assert_nonnull(strstr(out, "no QP with handle 999"));
    g_free(out);
    inject_ok(d, "'id': 'pvrdma0', 'kind': 'clear'");
    out = injections(d);
    g_assert_cmpstr(out, ==, "");
    g_free(out);
    qpvrdma_stop(d);
}

void pvrdma_add_inject_tests(void)
{
    qtest_add_func("/pvrdma/inject/commands", test_inject_commands);
    qtest_add_func("/pvrdma/inject/completion", test_inject_completion);
    qtest_add_func("/pvrdma/inject/events", test_inject_events);
    qtest_add_func("/pvrdma/inject/port", test_inject_port);
    qtest_add_func("/pvrdma/inject/hmp", test_inject_hmp);
    qtest_add_func("/pvrdma/guest-error-event", test_guest_error_event);
}
