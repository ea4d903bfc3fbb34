/*
 * A fake librdmacm for fuzzing backend/hostcm.c (see fake-rdmacm.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include "fake-rdmacm.h"

FakeCm fake_cm;

/*
 * An event is acked against its owner: its id, or for a connection
 * request the listener, as in librdmacm.
 */
typedef struct FakeEvent {
    struct rdma_cm_event ev;        /* first: what hostcm.c gets */
    FakeCmId *owner;
    bool taken;                     /* handed out by rdma_get_cm_event */
    uint8_t priv[256];
} FakeEvent;

static void die(const char *what)
{
    fprintf(stderr, "fake rdmacm: %s\n", what);
    abort();
}

static FakeCmId *fid(struct rdma_cm_id *id)
{
    FakeCmId *f = (FakeCmId *)id;

    fake_cm.calls++;
    if (!id || !g_ptr_array_find(fake_cm.ids, f, NULL)) {
        die("call on an id that is not alive");
    }
    return f;
}

static int fail(uint32_t what)
{
    if (fake_cm.fail & what) {
        errno = what & (FCM_CREATE_ID | FCM_CHANNEL) ? ENOMEM : EINVAL;
        return -1;
    }
    return 0;
}

/* hostcm.c's private data must be readable for the length it gives. */
static void keep_priv(FakeCmId *f, const void *priv, uint8_t len)
{
    if (len && !priv) {
        die("private data length without private data");
    }
    if (len) {
        memcpy(f->priv, priv, len);
    }
    f->priv_len = len;
}

void fake_cm_init(void)
{
    if (fake_cm.ch || (fake_cm.ids && fake_cm.ids->len) ||
        fake_cm.events.length) {
        die("left over from the previous input");
    }
    if (!fake_cm.ids) {
        fake_cm.ids = g_ptr_array_new();
    }
    g_queue_init(&fake_cm.events);
    fake_cm.fail = 0;
    fake_cm.broken = false;
    fake_cm.calls = 0;
}

void fake_cm_fini(void)
{
    if (fake_cm.ch) {
        die("event channel not destroyed");
    }
    if (fake_cm.ids->len) {
        die("ids left after the transport was destroyed");
    }
}

unsigned fake_cm_count(bool listeners)
{
    unsigned n = 0;

    for (guint i = 0; i < fake_cm.ids->len; i++) {
        FakeCmId *f = g_ptr_array_index(fake_cm.ids, i);

        n += f->listening == listeners;
    }
    return n;
}

FakeCmId *fake_cm_pick(unsigned n, bool listeners)
{
    unsigned count = fake_cm_count(listeners);

    if (!count) {
        return NULL;
    }
    n %= count;
    for (guint i = 0; i < fake_cm.ids->len; i++) {
        FakeCmId *f = g_ptr_array_index(fake_cm.ids, i);

        if (f->listening == listeners && !n--) {
            return f;
        }
    }
    return NULL;
}

unsigned fake_cm_pending(void)
{
    return fake_cm.events.length;
}

static FakeEvent *event_new(FakeCmId *owner, enum rdma_cm_event_type type,
                            int status, const void *priv, uint8_t priv_len)
{
    FakeEvent *e = g_new0(FakeEvent, 1);

    e->owner = owner;
    e->ev.event = type;
    e->ev.status = status;
    if (priv_len) {
        memcpy(e->priv, priv, priv_len);
        e->ev.param.conn.private_data = e->priv;
        e->ev.param.conn.private_data_len = priv_len;
    }
    return e;
}

void fake_cm_event(FakeCmId *id, enum rdma_cm_event_type type, int status,
                   const struct rdma_conn_param *conn, uint32_t qkey,
                   const void *priv, uint8_t priv_len)
{
    FakeEvent *e = event_new(id, type, status, priv, priv_len);

    e->ev.id = &id->id;
    if (id->id.ps == RDMA_PS_UDP) {
        e->ev.param.ud.qp_num = conn->qp_num;
        e->ev.param.ud.qkey = qkey;
    } else {
        e->ev.param.conn.responder_resources = conn->responder_resources;
        e->ev.param.conn.initiator_depth = conn->initiator_depth;
        e->ev.param.conn.flow_control = conn->flow_control;
        e->ev.param.conn.retry_count = conn->retry_count;
        e->ev.param.conn.rnr_retry_count = conn->rnr_retry_count;
        e->ev.param.conn.srq = conn->srq;
        e->ev.param.conn.qp_num = conn->qp_num;
    }
    g_queue_push_tail(&fake_cm.events, e);
}

static FakeCmId *id_new(struct rdma_event_channel *ch, void *context,
                        enum rdma_port_space ps)
{
    FakeCmId *f = g_new0(FakeCmId, 1);

    f->id.channel = ch;
    f->id.context = context;
    f->id.ps = ps;
    f->id.qp_type = ps == RDMA_PS_UDP ? IBV_QPT_UD : IBV_QPT_RC;
    f->serial = ++fake_cm.serial;
    f->path_mtu = IBV_MTU_1024;
    g_ptr_array_add(fake_cm.ids, f);
    return f;
}

FakeCmId *fake_cm_connect_request(FakeCmId *l, const struct sockaddr *peer,
                                  const struct rdma_conn_param *conn,
                                  const void *priv, uint8_t priv_len)
{
    FakeCmId *f = id_new(l->id.channel, l->id.context, l->id.ps);

    f->id.route.addr.src_storage = l->id.route.addr.src_storage;
    memcpy(&f->id.route.addr.dst_storage, peer,
           peer->sa_family == AF_INET ? sizeof(struct sockaddr_in) :
                                        sizeof(struct sockaddr_in6));
    fake_cm_event(f, RDMA_CM_EVENT_CONNECT_REQUEST, 0, conn, 0, priv,
                  priv_len);
    ((FakeEvent *)g_queue_peek_tail(&fake_cm.events))->owner = l;
    ((FakeEvent *)g_queue_peek_tail(&fake_cm.events))->ev.listen_id = &l->id;
    return f;
}

/* ------------------------------------------------------------------ */
/* librdmacm                                                           */

struct rdma_event_channel *rdma_create_event_channel(void)
{
    struct rdma_event_channel *ch;

    fake_cm.calls++;
    if (fail(FCM_CHANNEL)) {
        return NULL;
    }
    if (fake_cm.ch) {
        die("a second event channel");
    }
    ch = g_new0(struct rdma_event_channel, 1);
    ch->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (ch->fd < 0) {
        die("eventfd");
    }
    fake_cm.ch = ch;
    return ch;
}

void rdma_destroy_event_channel(struct rdma_event_channel *ch)
{
    fake_cm.calls++;
    if (ch != fake_cm.ch) {
        die("destroying an unknown event channel");
    }
    for (guint i = 0; i < fake_cm.ids->len; i++) {
        FakeCmId *f = g_ptr_array_index(fake_cm.ids, i);

        if (f->id.channel == ch) {
            die("event channel destroyed while its ids live");
        }
    }
    while (fake_cm.events.length) {
        FakeEvent *e = g_queue_pop_head(&fake_cm.events);

        if (e->taken) {
            die("event channel destroyed with an event not acked");
        }
        g_free(e);
    }
    close(ch->fd);
    g_free(ch);
    fake_cm.ch = NULL;
}

int rdma_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **id,
                   void *context, enum rdma_port_space ps)
{
    fake_cm.calls++;
    if (!ch || ch != fake_cm.ch) {
        die("rdma_create_id on an unknown channel");
    }
    if (fail(FCM_CREATE_ID)) {
        return -1;
    }
    *id = &id_new(ch, context, ps)->id;
    return 0;
}

int rdma_destroy_id(struct rdma_cm_id *id)
{
    FakeCmId *f = fid(id);
    GList *l, *next;

    if (f->unacked) {
        die("rdma_destroy_id with an event not acked: librdmacm would "
            "wait forever");
    }
    /* the kernel drops what it had queued for the id */
    for (l = fake_cm.events.head; l; l = next) {
        FakeEvent *e = l->data;

        next = l->next;
        if (e->taken) {
            continue;
        }
        if (e->owner == f || e->ev.id == id) {
            if (e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST &&
                e->ev.id != id) {
                /* a listener's pending request: its new id goes too */
                g_ptr_array_remove(fake_cm.ids, e->ev.id);
                g_free(e->ev.id);
            }
            g_queue_delete_link(&fake_cm.events, l);
            g_free(e);
        }
    }
    g_ptr_array_remove(fake_cm.ids, f);
    g_free(f);
    return 0;
}

int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
    FakeCmId *f = fid(id);

    if (fail(FCM_BIND)) {
        return -1;
    }
    memcpy(&f->id.route.addr.src_storage, addr,
           addr->sa_family == AF_INET ? sizeof(struct sockaddr_in) :
                                        sizeof(struct sockaddr_in6));
    return 0;
}

int rdma_listen(struct rdma_cm_id *id, int backlog)
{
    FakeCmId *f = fid(id);

    if (fail(FCM_LISTEN)) {
        return -1;
    }
    f->listening = true;
    return 0;
}

int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src,
                      struct sockaddr *dst, int timeout_ms)
{
    FakeCmId *f = fid(id);

    if (fail(FCM_RESOLVE_ADDR)) {
        return -1;
    }
    if (src) {
        memcpy(&f->id.route.addr.src_storage, src,
               src->sa_family == AF_INET ? sizeof(struct sockaddr_in) :
                                           sizeof(struct sockaddr_in6));
    }
    memcpy(&f->id.route.addr.dst_storage, dst,
           dst->sa_family == AF_INET ? sizeof(struct sockaddr_in) :
                                       sizeof(struct sockaddr_in6));
    f->resolved = true;
    return 0;
}

int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
    FakeCmId *f = fid(id);

    if (fail(FCM_RESOLVE_ROUTE)) {
        return -1;
    }
    f->routed = true;
    return 0;
}

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *p)
{
    FakeCmId *f = fid(id);

    if (fail(FCM_CONNECT)) {
        return -1;
    }
    keep_priv(f, p ? p->private_data : NULL, p ? p->private_data_len : 0);
    f->connected = true;
    return 0;
}

int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *p)
{
    FakeCmId *f = fid(id);

    if (fail(FCM_ACCEPT)) {
        return -1;
    }
    keep_priv(f, p ? p->private_data : NULL, p ? p->private_data_len : 0);
    f->accepted = true;
    return 0;
}

int rdma_reject(struct rdma_cm_id *id, const void *priv, uint8_t len)
{
    FakeCmId *f = fid(id);

    if (fail(FCM_REJECT)) {
        return -1;
    }
    keep_priv(f, priv, len);
    f->rejected = true;
    return 0;
}

int rdma_establish(struct rdma_cm_id *id)
{
    FakeCmId *f = fid(id);

    if (fail(FCM_ESTABLISH)) {
        return -1;
    }
    f->established = true;
    return 0;
}

int rdma_disconnect(struct rdma_cm_id *id)
{
    FakeCmId *f = fid(id);

    if (fail(FCM_DISCONNECT)) {
        return -1;
    }
    f->disconnected = true;
    return 0;
}

int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *a,
                      int *mask)
{
    FakeCmId *f = fid(id);

    if (fail(FCM_INIT_QP_ATTR)) {
        return -1;
    }
    switch (a->qp_state) {
    case IBV_QPS_RTR:
        a->rq_psn = f->rq_psn;
        a->path_mtu = f->path_mtu;
        a->ah_attr.sl = f->sl;
        a->ah_attr.is_global = 1;
        a->ah_attr.grh.hop_limit = f->hop_limit;
        a->ah_attr.grh.traffic_class = f->tclass;
        a->ah_attr.grh.flow_label = f->flow_label;
        *mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
        break;
    case IBV_QPS_RTS:
        a->sq_psn = f->sq_psn;
        a->timeout = f->timeout;
        *mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT;
        break;
    default:
        *mask = IBV_QP_STATE;
        break;
    }
    return 0;
}

__be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
    FakeCmId *f = fid(id);
    const struct sockaddr *sa = &f->id.route.addr.dst_addr;

    if (sa->sa_family == AF_INET) {
        return ((const struct sockaddr_in *)sa)->sin_port;
    }
    if (sa->sa_family == AF_INET6) {
        return ((const struct sockaddr_in6 *)sa)->sin6_port;
    }
    return 0;
}

int rdma_get_cm_event(struct rdma_event_channel *ch,
                      struct rdma_cm_event **event)
{
    FakeEvent *e = NULL;

    fake_cm.calls++;
    if (ch != fake_cm.ch) {
        die("rdma_get_cm_event on an unknown channel");
    }
    if (fake_cm.broken) {
        errno = EIO;
        return -1;
    }
    for (GList *l = fake_cm.events.head; l; l = l->next) {
        if (!((FakeEvent *)l->data)->taken) {
            e = l->data;
            break;
        }
    }
    if (!e) {
        errno = EAGAIN;
        return -1;
    }
    e->taken = true;
    e->owner->unacked++;
    *event = &e->ev;
    return 0;
}

int rdma_ack_cm_event(struct rdma_cm_event *event)
{
    FakeEvent *e = (FakeEvent *)event;

    fake_cm.calls++;
    if (!g_queue_remove(&fake_cm.events, e) || !e->taken) {
        die("acking an event that was not handed out");
    }
    if (!e->owner->unacked--) {
        die("unacked count");
    }
    g_free(e);
    return 0;
}
