/*
 * pvrdma device: x-pvrdma-inject (qapi/pvrdma.json), faults and events
 * on purpose for people testing guest drivers: the QMP arguments checked
 * and handed to the core (pvrdma_inject.c), which fires them.  HMP's
 * x_pvrdma_inject (pvrdma_dev_hmp.c) calls it; without the device,
 * pvrdma_dev_qmp_stub.c answers.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands-pvrdma.h"
#include "pvrdma_dev.h"

/*
 * The async events x-pvrdma-inject posts, in PvrdmaAsyncEvent's order.
 */
static const uint32_t async_events[PVRDMA_ASYNC_EVENT__MAX] = {
    [PVRDMA_ASYNC_EVENT_QP_FATAL] = PVRDMA_EVENT_QP_FATAL,
    [PVRDMA_ASYNC_EVENT_QP_REQ_ERR] = PVRDMA_EVENT_QP_REQ_ERR,
    [PVRDMA_ASYNC_EVENT_QP_ACCESS_ERR] = PVRDMA_EVENT_QP_ACCESS_ERR,
    [PVRDMA_ASYNC_EVENT_CQ_ERR] = PVRDMA_EVENT_CQ_ERR,
    [PVRDMA_ASYNC_EVENT_SRQ_ERR] = PVRDMA_EVENT_SRQ_ERR,
    [PVRDMA_ASYNC_EVENT_SRQ_LIMIT_REACHED] = PVRDMA_EVENT_SRQ_LIMIT_REACHED,
    [PVRDMA_ASYNC_EVENT_DEVICE_FATAL] = PVRDMA_EVENT_DEVICE_FATAL,
    [PVRDMA_ASYNC_EVENT_GID_CHANGE] = PVRDMA_EVENT_GID_CHANGE,
};

QEMU_BUILD_BUG_ON((int)PVRDMA_COMMAND__MAX != (int)PVRDMA_CMD_MAX);
QEMU_BUILD_BUG_ON((int)PVRDMA_INJECTION_KIND__MAX != (int)PVRDMA_INJECT__MAX);

void qmp_x_pvrdma_inject(const char *id, PvrdmaInjectionKind kind,
                         bool has_event, PvrdmaAsyncEvent event,
                         bool has_handle, uint32_t handle,
                         bool has_of_qp, bool of_qp,
                         bool has_opcode, PvrdmaCommand opcode,
                         bool has_count, uint32_t count,
                         bool has_status, uint32_t status,
                         bool has_delay_ms, uint32_t delay_ms, Error **errp)
{
    PvrdmaState *s = pvrdma_qmp_find(id, errp);
    PvrdmaInject in = {
        /* PvrdmaInjectionKind is in the order of PvrdmaInjectKind */
        .kind = (PvrdmaInjectKind)kind,
        .handle = handle, .of_qp = of_qp, .count = count, .status = status,
        .delay_ms = delay_ms,
    };

    if (!s) {
        return;
    }
    if (kind == PVRDMA_INJECTION_KIND_ASYNC_EVENT && !has_event) {
        error_setg(errp, "async-event needs 'event'");
        return;
    }
    if ((kind == PVRDMA_INJECTION_KIND_COMPLETION_ERROR ||
         (kind == PVRDMA_INJECTION_KIND_ASYNC_EVENT &&
          event != PVRDMA_ASYNC_EVENT_DEVICE_FATAL &&
          event != PVRDMA_ASYNC_EVENT_GID_CHANGE)) && !has_handle) {
        error_setg(errp, "%s needs 'handle'", PvrdmaInjectionKind_str(kind));
        return;
    }
    if ((kind == PVRDMA_INJECTION_KIND_COMMAND_ERROR ||
         kind == PVRDMA_INJECTION_KIND_COMMAND_DELAY ||
         kind == PVRDMA_INJECTION_KIND_COMMAND_DROP) && !has_opcode) {
        error_setg(errp, "%s needs 'opcode'", PvrdmaInjectionKind_str(kind));
        return;
    }
    if ((kind == PVRDMA_INJECTION_KIND_COMMAND_ERROR ||
         kind == PVRDMA_INJECTION_KIND_COMPLETION_ERROR) && !has_status) {
        error_setg(errp, "%s needs 'status'", PvrdmaInjectionKind_str(kind));
        return;
    }
    in.event = has_event ? async_events[event] : 0;
    in.opcode = opcode;         /* PvrdmaCommand: the ABI's order */
    pvrdma_core_lock(s);
    pvrdma_inject(&s->core, &in, errp);
    pvrdma_core_unlock(s);
}

