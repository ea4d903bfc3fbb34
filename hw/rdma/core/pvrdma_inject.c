/*
 * pvrdma: fault and event injection, for people testing a guest driver's
 * error paths (x-pvrdma-inject, docs/system/devices/pvrdma.rst).  The
 * port goes down and up; an async event is posted about a chosen QP, CQ
 * or SRQ (a QP's fatal events move it to the error state, as the device's
 * own do); the next commands of an opcode fail, are lost (not run, not
 * answered) or run and answered late; the next send completions of a QP
 * carry an error status (the QP then flushes, as on any error
 * completion).
 *
 * Injections come from the monitor, never from the guest.  Pending ones
 * and what fired stay in a small table that query-pvrdma shows; every
 * injection and every firing is traced.  They are not migrated.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_transport_calls.h"
#include "pvrdma_int.h"

static const char *const kind_names[PVRDMA_INJECT__MAX] = {
    [PVRDMA_INJECT_PORT_DOWN] = "port-down",
    [PVRDMA_INJECT_PORT_UP] = "port-up",
    [PVRDMA_INJECT_EVENT] = "async-event",
    [PVRDMA_INJECT_CMD_ERROR] = "command-error",
    [PVRDMA_INJECT_CMD_DELAY] = "command-delay",
    [PVRDMA_INJECT_CMD_DROP] = "command-drop",
    [PVRDMA_INJECT_WC_ERROR] = "completion-error",
    [PVRDMA_INJECT_CLEAR] = "clear",
};

const char *pvrdma_inject_kind_name(PvrdmaInjectKind kind)
{
    return kind < PVRDMA_INJECT__MAX ? kind_names[kind] : "?";
}

static bool is_cmd_kind(PvrdmaInjectKind k)
{
    return k == PVRDMA_INJECT_CMD_ERROR || k == PVRDMA_INJECT_CMD_DELAY ||
           k == PVRDMA_INJECT_CMD_DROP;
}

/*
 * in->of_qp: the handle of the CQ or SRQ event's object is that of QP
 * in->handle's send CQ or SRQ (an application knows its QP number, not
 * the device's handle of its CQ or SRQ).  False with errp set if there is
 * none.
 */
static bool inject_of_qp(PvrdmaCore *c, const PvrdmaInject *in, uint32_t *h,
                         Error **errp)
{
    PvrdmaQP *qp;

    if (!in->of_qp) {
        return true;
    }
    qp = pvrdma_qp_get(c, in->handle);
    if (in->event != PVRDMA_EVENT_CQ_ERR &&
        in->event != PVRDMA_EVENT_SRQ_ERR &&
        in->event != PVRDMA_EVENT_SRQ_LIMIT_REACHED) {
        error_setg(errp, "of-qp applies to the CQ and SRQ events");
    } else if (!qp) {
        error_setg(errp, "no QP with handle %u", in->handle);
    } else if (in->event != PVRDMA_EVENT_CQ_ERR && !qp->is_srq) {
        error_setg(errp, "QP %u has no SRQ", in->handle);
    } else {
        *h = in->event == PVRDMA_EVENT_CQ_ERR ? qp->scq : qp->srq;
        return true;
    }
    return false;
}

/* An async event about an object that exists, as the device posts it. */
static bool inject_event(PvrdmaCore *c, const PvrdmaInject *in, Error **errp)
{
    uint32_t h = in->handle;

    if (!inject_of_qp(c, in, &h, errp)) {
        return false;
    }
    switch (in->event) {
    case PVRDMA_EVENT_QP_FATAL:
    case PVRDMA_EVENT_QP_REQ_ERR:
    case PVRDMA_EVENT_QP_ACCESS_ERR:
        if (!pvrdma_qp_get(c, h)) {
            error_setg(errp, "no QP with handle %u", h);
            return false;
        }
        pvrdma_transport_event(c, in->event, h);    /* the QP fails */
        return true;
    case PVRDMA_EVENT_CQ_ERR:
        if (!pvrdma_table_get(&c->cq, h)) {
            error_setg(errp, "no CQ with handle %u", h);
            return false;
        }
        break;
    case PVRDMA_EVENT_SRQ_ERR:
    case PVRDMA_EVENT_SRQ_LIMIT_REACHED:
        if (!pvrdma_table_get(&c->srq, h)) {
            error_setg(errp, "no SRQ with handle %u", h);
            return false;
        }
        break;
    case PVRDMA_EVENT_DEVICE_FATAL:
    case PVRDMA_EVENT_GID_CHANGE:
        h = 1;                  /* the port */
        break;
    default:
        error_setg(errp, "event %u cannot be injected", in->event);
        return false;
    }
    pvrdma_post_async(c, in->event, h);
    return true;
}

/* A slot for a counted injection: a free one, or one that is done. */
static PvrdmaInject *inject_slot(PvrdmaCore *c)
{
    if (c->ninject < PVRDMA_INJECT_MAX) {
        return &c->inject[c->ninject++];
    }
    for (unsigned i = 0; i < c->ninject; i++) {
        if (!c->inject[i].count) {
            /* the oldest done one goes; the others keep their order */
            memmove(&c->inject[i], &c->inject[i + 1],
                    (c->ninject - i - 1) * sizeof(c->inject[0]));
            return &c->inject[c->ninject - 1];
        }
    }
    return NULL;
}

static void inject_clear(PvrdmaCore *c)
{
    c->ninject = 0;
    c->inject_cmds = c->inject_wcs = 0;
    c->resp_held = false;
    if (c->inject_port_down) {
        c->inject_port_down = false;
        pvrdma_core_check_link(c);
    }
}

/* A counted kind (command, completion) that can fire as given. */
static bool counted_ok(PvrdmaCore *c, const PvrdmaInject *in, Error **errp)
{
    PvrdmaQP *qp;

    if (is_cmd_kind(in->kind)) {
        if (in->opcode >= PVRDMA_CMD_MAX) {
            error_setg(errp, "no command %u", in->opcode);
            return false;
        }
        if (in->kind == PVRDMA_INJECT_CMD_ERROR &&
            (!in->status || in->status > 4095)) {
            error_setg(errp, "status %u: an errno (1 to 4095)", in->status);
            return false;
        }
        return true;
    }
    qp = pvrdma_qp_get(c, in->handle);
    if (!qp) {
        error_setg(errp, "no QP with handle %u", in->handle);
        return false;
    }
    if (pvrdma_qp_on_queue_transport(qp)) {
        error_setg(errp, "QP %u is on the host HCA, whose device "
                   "completes its work requests", in->handle);
        return false;
    }
    if (in->status <= PVRDMA_WC_SUCCESS || in->status > PVRDMA_WC_GENERAL_ERR) {
        error_setg(errp, "status %u: a work completion error (%u to %u)",
                   in->status, PVRDMA_WC_SUCCESS + 1, PVRDMA_WC_GENERAL_ERR);
        return false;
    }
    return true;
}

bool pvrdma_inject(PvrdmaCore *c, const PvrdmaInject *in, Error **errp)
{
    PvrdmaInject *s;

    switch (in->kind) {
    case PVRDMA_INJECT_PORT_DOWN:
    case PVRDMA_INJECT_PORT_UP:
        c->inject_port_down = in->kind == PVRDMA_INJECT_PORT_DOWN;
        trace_pvrdma_inject(kind_names[in->kind], 0, 0);
        pvrdma_core_check_link(c);  /* PORT_ERR / PORT_ACTIVE if active */
        return true;
    case PVRDMA_INJECT_CLEAR:
        trace_pvrdma_inject(kind_names[in->kind], 0, 0);
        inject_clear(c);
        return true;
    case PVRDMA_INJECT_EVENT:
        if (!c->active) {
            error_setg(errp, "the guest's driver has not activated the "
                       "device");
            return false;
        }
        if (!inject_event(c, in, errp)) {
            return false;
        }
        trace_pvrdma_inject(kind_names[in->kind], in->event, in->handle);
        return true;
    case PVRDMA_INJECT_CMD_ERROR:
    case PVRDMA_INJECT_CMD_DELAY:
    case PVRDMA_INJECT_CMD_DROP:
    case PVRDMA_INJECT_WC_ERROR:
        if (!counted_ok(c, in, errp)) {
            return false;
        }
        break;
    default:
        error_setg(errp, "no injection kind %u", in->kind);
        return false;
    }
    s = inject_slot(c);
    if (!s) {
        error_setg(errp, "%u injections are pending already",
                   PVRDMA_INJECT_MAX);
        return false;
    }
    *s = *in;
    s->count = MAX(in->count, 1);
    s->fired = 0;
    if (is_cmd_kind(s->kind)) {
        c->inject_cmds++;
    } else {
        c->inject_wcs++;
    }
    trace_pvrdma_inject(kind_names[s->kind],
                        is_cmd_kind(s->kind) ? s->opcode : s->handle,
                        s->count);
    return true;
}

/* s fired once: count it down, and out of the pending ones at 0. */
static void fired(PvrdmaCore *c, PvrdmaInject *s, uint32_t what)
{
    s->fired++;
    s->count--;
    if (!s->count) {
        if (is_cmd_kind(s->kind)) {
            c->inject_cmds--;
        } else {
            c->inject_wcs--;
        }
    }
    trace_pvrdma_inject_fired(kind_names[s->kind], what, s->count);
}

const PvrdmaInject *pvrdma_inject_cmd(PvrdmaCore *c, uint32_t cmd)
{
    for (unsigned i = 0; c->inject_cmds && i < c->ninject; i++) {
        PvrdmaInject *s = &c->inject[i];

        if (s->count && is_cmd_kind(s->kind) && s->opcode == cmd) {
            fired(c, s, cmd);
            return s;
        }
    }
    return NULL;
}

uint32_t pvrdma_inject_wc(PvrdmaCore *c, PvrdmaQP *qp)
{
    for (unsigned i = 0; c->inject_wcs && i < c->ninject; i++) {
        PvrdmaInject *s = &c->inject[i];

        if (s->count && s->kind == PVRDMA_INJECT_WC_ERROR &&
            s->handle == qp->handle) {
            fired(c, s, qp->handle);
            return s->status;
        }
    }
    return 0;
}

void pvrdma_inject_resp_due(PvrdmaCore *c)
{
    if (!c->resp_held) {
        return;
    }
    if (c->ops->now_ms(c->opaque) < c->resp_due) {
        pvrdma_core_timer_at(c, c->resp_due);
        return;
    }
    c->resp_held = false;
    trace_pvrdma_inject_fired("command-delay: response", c->held_resp.hdr.ack,
                              0);
    pvrdma_respond(c, &c->held_resp);
}
