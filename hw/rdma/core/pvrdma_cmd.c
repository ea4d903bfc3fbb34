/*
 * pvrdma: the command channel.  Copies a request out of guest memory once,
 * dispatches it to its opcode's handler, writes the response, sets ERR
 * and raises the response vector.  Each handler validates every field of
 * the request and answers with an error status (response err and the ERR
 * register) when anything is out of bounds, unknown, busy or not owned by
 * the caller.  The port queries and GID binding are here; each object's
 * handlers are in its own file (pvrdma_pd.c, pvrdma_cq.c, pvrdma_srq.c,
 * pvrdma_mr.c, pvrdma_qp.c).  Freeing every object (a reset).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "hw/rdma/pvrdma_core.h"
#include "hw/rdma/pvrdma_transport_calls.h"
#include "pvrdma_int.h"


/* ---------------------------------------------------------------- */

static int cmd_query_port(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                          union pvrdma_cmd_resp *rsp)
{
    struct pvrdma_port_attr *a = &rsp->query_port_resp.attrs;

    if (req->query_port.port_num != 1) {
        return CMD_ERR(c, EINVAL, "QUERY_PORT: bad port %u",
                       req->query_port.port_num);
    }
    a->state = pvrdma_port_up(c) ? PVRDMA_PORT_ACTIVE : PVRDMA_PORT_DOWN;
    if (!pvrdma_owner_port_active(c)) {
        a->state = PVRDMA_PORT_DOWN;
    }
    a->max_mtu = PVRDMA_MTU_4096;
    a->active_mtu = PVRDMA_MTU_1024;
    a->gid_tbl_len = c->lim.gid_tbl_len;
    a->port_cap_flags = PVRDMA_PORT_CM_SUP | PVRDMA_PORT_IP_BASED_GIDS;
    a->max_msg_sz = 1u << 31;
    a->pkey_tbl_len = PVRDMA_MAX_PKEYS;
    a->lid = 0;
    a->lmc = 0;
    a->max_vl_num = 1;
    a->subnet_timeout = 18;
    a->active_width = PVRDMA_WIDTH_4X;
    a->active_speed = PVRDMA_SPEED_QDR;
    a->phys_state = pvrdma_port_up(c) ? PVRDMA_PHYS_STATE_LINKUP :
                                        PVRDMA_PHYS_STATE_DISABLED;
    return 0;
}

static int cmd_query_pkey(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                          union pvrdma_cmd_resp *rsp)
{
    if (req->query_pkey.port_num != 1 ||
        req->query_pkey.index >= PVRDMA_MAX_PKEYS) {
        return CMD_ERR(c, EINVAL, "QUERY_PKEY: bad port %u / index %u",
                       req->query_pkey.port_num, req->query_pkey.index);
    }
    rsp->query_pkey_resp.pkey = PVRDMA_PKEY_DEFAULT;
    return 0;
}

static int cmd_create_bind(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                           union pvrdma_cmd_resp *rsp)
{
    const struct pvrdma_cmd_create_bind *m = &req->create_bind;
    /* before version 18 the type byte was reserved: RoCE v1 GIDs only */
    uint8_t type = c->version < PVRDMA_ROCEV2_VERSION ?
                   PVRDMA_GID_TYPE_FLAG_ROCE_V1 : m->gid_type;

    if (m->index >= c->lim.gid_tbl_len) {
        return CMD_ERR(c, EINVAL, "CREATE_BIND: index %u >= %u", m->index,
                       c->lim.gid_tbl_len);
    }
    if (type != PVRDMA_GID_TYPE_FLAG_ROCE_V1 &&
        type != PVRDMA_GID_TYPE_FLAG_ROCE_V2) {
        return CMD_ERR(c, EINVAL, "CREATE_BIND: gid type %u", type);
    }
    memcpy(c->gid[m->index].gid.raw, m->new_gid, 16);
    c->gid[m->index].type = type;
    trace_pvrdma_create_bind(m->index, type);
    pvrdma_gids_changed(c);
    return 0;
}

static int cmd_destroy_bind(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                            union pvrdma_cmd_resp *rsp)
{
    const struct pvrdma_cmd_destroy_bind *m = &req->destroy_bind;

    if (m->index >= c->lim.gid_tbl_len) {
        return CMD_ERR(c, EINVAL, "DESTROY_BIND: index %u >= %u", m->index,
                       c->lim.gid_tbl_len);
    }
    if (!c->gid[m->index].type ||
        memcmp(c->gid[m->index].gid.raw, m->dest_gid, 16)) {
        return CMD_ERR(c, EINVAL, "DESTROY_BIND: index %u holds another GID",
                       m->index);
    }
    memset(&c->gid[m->index], 0, sizeof(c->gid[m->index]));
    trace_pvrdma_destroy_bind(m->index);
    pvrdma_gids_changed(c);
    return 0;
}

static const struct {
    PvrdmaCmdHandler fn;
    const char *name;
} cmd_table[PVRDMA_CMD_MAX] = {
    [PVRDMA_CMD_QUERY_PORT] = { cmd_query_port, "QUERY_PORT" },
    [PVRDMA_CMD_QUERY_PKEY] = { cmd_query_pkey, "QUERY_PKEY" },
    [PVRDMA_CMD_CREATE_PD] = { pvrdma_cmd_create_pd, "CREATE_PD" },
    [PVRDMA_CMD_DESTROY_PD] = { pvrdma_cmd_destroy_pd, "DESTROY_PD" },
    [PVRDMA_CMD_CREATE_MR] = { pvrdma_cmd_create_mr, "CREATE_MR" },
    [PVRDMA_CMD_DESTROY_MR] = { pvrdma_cmd_destroy_mr, "DESTROY_MR" },
    [PVRDMA_CMD_CREATE_CQ] = { pvrdma_cmd_create_cq, "CREATE_CQ" },
    [PVRDMA_CMD_RESIZE_CQ] = { pvrdma_cmd_resize_cq, "RESIZE_CQ" },
    [PVRDMA_CMD_DESTROY_CQ] = { pvrdma_cmd_destroy_cq, "DESTROY_CQ" },
    [PVRDMA_CMD_CREATE_QP] = { pvrdma_cmd_create_qp, "CREATE_QP" },
    [PVRDMA_CMD_MODIFY_QP] = { pvrdma_cmd_modify_qp, "MODIFY_QP" },
    [PVRDMA_CMD_QUERY_QP] = { pvrdma_cmd_query_qp, "QUERY_QP" },
    [PVRDMA_CMD_DESTROY_QP] = { pvrdma_cmd_destroy_qp, "DESTROY_QP" },
    [PVRDMA_CMD_CREATE_UC] = { pvrdma_cmd_create_uc, "CREATE_UC" },
    [PVRDMA_CMD_DESTROY_UC] = { pvrdma_cmd_destroy_uc, "DESTROY_UC" },
    [PVRDMA_CMD_CREATE_BIND] = { cmd_create_bind, "CREATE_BIND" },
    [PVRDMA_CMD_DESTROY_BIND] = { cmd_destroy_bind, "DESTROY_BIND" },
    [PVRDMA_CMD_CREATE_SRQ] = { pvrdma_cmd_create_srq, "CREATE_SRQ" },
    [PVRDMA_CMD_MODIFY_SRQ] = { pvrdma_cmd_modify_srq, "MODIFY_SRQ" },
    [PVRDMA_CMD_QUERY_SRQ] = { pvrdma_cmd_query_srq, "QUERY_SRQ" },
    [PVRDMA_CMD_DESTROY_SRQ] = { pvrdma_cmd_destroy_srq, "DESTROY_SRQ" },
};

int pvrdma_cmd_replay(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                      union pvrdma_cmd_resp *rsp)
{
    uint32_t cmd = req->hdr.cmd;

    memset(rsp, 0, sizeof(*rsp));
    if (cmd >= PVRDMA_CMD_MAX || !cmd_table[cmd].fn) {
        return CMD_ERR(c, EINVAL, "replay: no command %u", cmd);
    }
    return cmd_table[cmd].fn(c, req, rsp);
}

/*
 * Run command req (from the guest's slot, or again after waiting for its
 * fence), write the response, set ERR and raise the response vector.  An
 * injected fault (pvrdma_inject.c) may fail the command instead of
 * running it, lose it (not run, never answered), or hold its response
 * back.
 */
static void cmd_run(PvrdmaCore *c, const union pvrdma_cmd_req *req,
                    const PvrdmaInject *in)
{
    union pvrdma_cmd_resp rsp;
    uint32_t cmd = req->hdr.cmd;
    int err;

    memset(&rsp, 0, sizeof(rsp));
    rsp.hdr.response = req->hdr.response;
    if (cmd >= PVRDMA_CMD_MAX || !cmd_table[cmd].fn) {
        PVRDMA_GUEST_ERR(c, "unknown command %u", cmd);
        err = EINVAL;
    } else if (in && in->kind != PVRDMA_INJECT_CMD_DELAY) {
        /* failed or lost on its way: not run */
        rsp.hdr.ack = PVRDMA_CMD_RESP(cmd);
        err = in->kind == PVRDMA_INJECT_CMD_ERROR ? in->status : 0;
        trace_pvrdma_cmd(cmd_table[cmd].name, err);
    } else {
        rsp.hdr.ack = PVRDMA_CMD_RESP(cmd);
        err = cmd_table[cmd].fn(c, req, &rsp);
        if (err == PVRDMA_CMD_WAIT) {
            /* its response comes when the fence is done */
            c->cmd_waits = true;
            c->wait_req = *req;
            c->wait_injected = in != NULL;
            if (in) {
                c->wait_inject = *in;
            }
            c->wait_due = c->ops->now_ms(c->opaque) + PVRDMA_FENCE_MS;
            pvrdma_core_timer_at(c, c->wait_due);
            trace_pvrdma_cmd_wait(cmd_table[cmd].name, c->wait_qpn);
            c->err = 0;
            return;
        }
        trace_pvrdma_cmd(cmd_table[cmd].name, err);
    }
    if (err) {
        /* keep the ack and identity, drop any partial payload */
        uint64_t response = rsp.hdr.response;
        uint32_t ack = rsp.hdr.ack;

        memset(&rsp, 0, sizeof(rsp));
        rsp.hdr.response = response;
        rsp.hdr.ack = ack;
        rsp.hdr.err = err;
    }
    c->err = err;
    if (in && in->kind == PVRDMA_INJECT_CMD_DROP) {
        return;                 /* no response, no interrupt */
    }
    if (in && in->kind == PVRDMA_INJECT_CMD_DELAY) {
        c->held_resp = rsp;
        c->resp_held = true;
        c->resp_due = c->ops->now_ms(c->opaque) + in->delay_ms;
        pvrdma_core_timer_at(c, c->resp_due);
        return;
    }
    if (!pvrdma_respond(c, &rsp)) {
        c->err = EFAULT;
    }
}

/*
 * REQUEST: copy the command out of guest memory once and run it.  The
 * driver posts one command at a time, so while one waits for its fence
 * another is refused (EBUSY, no response).  A response still held back
 * (command-delay) when the next command comes is dropped, as a response
 * that came too late.
 */
void pvrdma_exec_command(PvrdmaCore *c)
{
    union pvrdma_cmd_req req;
    const PvrdmaInject *in = NULL;

    c->commands++;
    if (!c->active) {
        PVRDMA_GUEST_ERR(c, "command before activation");
        c->err = EINVAL;
        return;
    }
    if (c->cmd_waits) {
        PVRDMA_GUEST_ERR(c, "command while %s waits for its response",
                         cmd_table[c->wait_req.hdr.cmd].name);
        c->err = EBUSY;
        return;
    }
    if (!c->ops->dma_read(c->opaque, c->cmd_gpa, &req, sizeof(req))) {
        PVRDMA_GUEST_ERR(c, "command slot 0x%" PRIx64 " unreadable",
                         c->cmd_gpa);
        c->err = EFAULT;
        return;
    }
    if (c->resp_held) {
        c->resp_held = false;
        trace_pvrdma_inject_fired("command-delay: response dropped",
                                  c->held_resp.hdr.ack, 0);
    }
    if (c->inject_cmds) {
        in = pvrdma_inject_cmd(c, req.hdr.cmd);
    }
    cmd_run(c, &req, in);
}

void pvrdma_cmd_wait_check(PvrdmaCore *c, bool now)
{
    int64_t t;

    if (!c->cmd_waits) {
        return;         /* every run of the core asks: nothing to read */
    }
    t = c->ops->now_ms(c->opaque);
    if (!now && t < c->wait_due && !pvrdma_qp_fence(c, c->wait_qpn, 0)) {
        pvrdma_core_timer_at(c, c->wait_due);
        return;
    }
    c->cmd_waits = false;
    c->wait_over = true;
    trace_pvrdma_cmd_waited(cmd_table[c->wait_req.hdr.cmd].name, c->wait_qpn,
                            t - (c->wait_due - PVRDMA_FENCE_MS));
    cmd_run(c, &c->wait_req, c->wait_injected ? &c->wait_inject : NULL);
    c->wait_over = false;
}

/*
 * Free every resource: driver reset, PCI reset, unrealize.  Dependants go
 * first, so each free releases its references on objects still alive.
 */
void pvrdma_destroy_all(PvrdmaCore *c)
{
    uint32_t h;

    pvrdma_run_clear(c);
    for (h = 0; h < c->qp.size; h++) {
        PvrdmaQP *qp = c->qp.slot[h];

        if (qp) {
            pvrdma_qp_free(c, qp);
        }
    }
    for (h = 0; h < c->srq.size; h++) {
        if (c->srq.slot[h]) {
            pvrdma_srq_free(c, c->srq.slot[h]);
        }
    }
    for (h = 0; h < c->mr.size; h++) {
        if (c->mr.slot[h]) {
            pvrdma_mr_free(c, c->mr.slot[h]);
        }
    }
    for (h = 0; h < c->cq.size; h++) {
        if (c->cq.slot[h]) {
            pvrdma_cq_free(c, c->cq.slot[h]);
        }
    }
    for (h = 0; h < c->pd.size; h++) {
        if (c->pd.slot[h]) {
            pvrdma_pd_free(c, c->pd.slot[h]);
        }
    }
    for (h = 0; h < c->uc.size; h++) {
        if (c->uc.slot[h]) {
            pvrdma_uc_free(c, c->uc.slot[h]);
        }
    }
}
