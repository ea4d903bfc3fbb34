/*
 * pvrdma-async-objects: an application with a CQ, an SRQ and an RC QP on
 * them (moved to INIT), which prints its QP number and then every async
 * event its context gets, naming which of its objects each is about.  For
 * guest tests that inject the CQ and SRQ events (x-pvrdma-inject
 * async-event with of-qp: the QP's send CQ, its SRQ) and check that the
 * driver delivers them to the application that owns the object, as
 * ibv_asyncwatch (which owns none) cannot show.
 *
 *   pvrdma-async-objects DEVICE SECS
 *
 * Prints "qpn N", then one line per event: "event NAME on cq|srq|qp|port"
 * ("other" for an element that is not one of its own), until SECS have
 * passed.  Exit 0, or 1 if the objects cannot be made.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int fail(const char *what)
{
    fprintf(stderr, "pvrdma-async-objects: %s failed\n", what);
    return 1;
}

static const char *about(const struct ibv_async_event *e, struct ibv_cq *cq,
                         struct ibv_srq *srq, struct ibv_qp *qp)
{
    switch (e->event_type) {
    case IBV_EVENT_CQ_ERR:
        return e->element.cq == cq ? "cq" : "other";
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED:
        return e->element.srq == srq ? "srq" : "other";
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
        return e->element.qp == qp ? "qp" : "other";
    default:
        return "port";
    }
}

int main(int argc, char **argv)
{
    struct ibv_device **list;
    struct ibv_context *ctx = NULL;
    struct ibv_pd *pd;
    struct ibv_cq *cq;
    struct ibv_srq *srq;
    struct ibv_qp *qp;
    struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
    struct ibv_qp_init_attr qa = {
        .qp_type = IBV_QPT_RC,
        .cap = { .max_send_wr = 4, .max_send_sge = 1 },
    };
    struct ibv_qp_attr init = {
        .qp_state = IBV_QPS_INIT, .port_num = 1,
        .qp_access_flags = IBV_ACCESS_LOCAL_WRITE,
    };
    time_t end;

    if (argc != 3) {
        fprintf(stderr, "usage: pvrdma-async-objects DEVICE SECS\n");
        return 2;
    }
    end = time(NULL) + atoi(argv[2]);
    list = ibv_get_device_list(NULL);
    for (int i = 0; list && list[i]; i++) {
        if (!strcmp(ibv_get_device_name(list[i]), argv[1])) {
            ctx = ibv_open_device(list[i]);
        }
    }
    if (!ctx) {
        return fail("opening the device");
    }
    pd = ibv_alloc_pd(ctx);
    cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
    srq = cq ? ibv_create_srq(pd, &sa) : NULL;
    if (!srq) {
        return fail("PD, CQ or SRQ");
    }
    qa.send_cq = qa.recv_cq = cq;
    qa.srq = srq;
    qp = ibv_create_qp(pd, &qa);
    if (!qp || ibv_modify_qp(qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                             IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
        return fail("the QP");
    }
    printf("qpn %u\n", qp->qp_num);
    fflush(stdout);
    while (time(NULL) < end) {
        struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };
        struct ibv_async_event e;

        if (poll(&p, 1, 200) <= 0) {
            continue;
        }
        if (ibv_get_async_event(ctx, &e)) {
            continue;
        }
        printf("event %s on %s\n", ibv_event_type_str(e.event_type),
               about(&e, cq, srq, qp));
        fflush(stdout);
        ibv_ack_async_event(&e);
    }
    ibv_destroy_qp(qp);
    ibv_destroy_srq(srq);
    ibv_destroy_cq(cq);
    ibv_dealloc_pd(pd);
    ibv_close_device(ctx);
    ibv_free_device_list(list);
    return 0;
}
