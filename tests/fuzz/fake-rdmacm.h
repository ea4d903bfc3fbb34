/*
 * A fake librdmacm for fuzzing backend/hostcm.c without a host RDMA
 * device: fake-rdmacm.c defines the rdma_* calls hostcm.c makes (the real
 * <rdma/rdma_cma.h> declares them; librdmacm is not linked).  Ids and
 * events are plain memory, the event channel's fd is an eventfd nobody
 * signals; the fuzzer decides which events the host's rdma_cm reports
 * (fake_cm_event, fake_cm_connect_request) and which calls fail.
 *
 * What a real librdmacm would do and a bug in hostcm.c could get wrong is
 * checked here and aborts: calls on ids of another channel, destroying an
 * id that still has an unacknowledged event (librdmacm blocks forever),
 * acknowledging an event twice, destroying the channel while ids live.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef PVRDMA_FUZZ_FAKE_RDMACM_H
#define PVRDMA_FUZZ_FAKE_RDMACM_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <rdma/rdma_cma.h>

/* fake_cm.fail: make these calls fail (errno EINVAL, or ENOMEM) */
enum {
    FCM_CREATE_ID = 1 << 0,
    FCM_RESOLVE_ADDR = 1 << 1,
    FCM_RESOLVE_ROUTE = 1 << 2,
    FCM_CONNECT = 1 << 3,
    FCM_ACCEPT = 1 << 4,
    FCM_REJECT = 1 << 5,
    FCM_ESTABLISH = 1 << 6,
    FCM_DISCONNECT = 1 << 7,
    FCM_INIT_QP_ATTR = 1 << 8,
    FCM_BIND = 1 << 9,
    FCM_LISTEN = 1 << 10,
    FCM_CHANNEL = 1 << 11,          /* rdma_create_event_channel */
};

typedef struct FakeCmId {
    struct rdma_cm_id id;           /* what hostcm.c holds */
    unsigned serial;
    bool listening;
    bool resolved, routed, connected, accepted, rejected, established;
    bool disconnected;
    unsigned unacked;               /* events handed out, not acked */
    /* what rdma_init_qp_attr reports (the kernel's, from the peer) */
    uint32_t rq_psn, sq_psn;
    uint8_t path_mtu, timeout, hop_limit, sl, tclass;
    uint32_t flow_label;
    /* the private data hostcm.c sent last (connect, accept, reject) */
    uint8_t priv[256];
    uint8_t priv_len;
} FakeCmId;

typedef struct FakeCm {
    struct rdma_event_channel *ch;
    GPtrArray *ids;                 /* FakeCmId, alive, in creation order */
    GQueue events;                  /* queued, not yet taken */
    unsigned serial;
    uint32_t fail;                  /* FCM_* */
    bool broken;                    /* rdma_get_cm_event fails (EIO) */
    uint64_t calls;                 /* rdma_* calls made by hostcm.c */
} FakeCm;

extern FakeCm fake_cm;

/* Start of an input: nothing of the previous one may be left. */
void fake_cm_init(void);
/* End of an input, after hostcm.c's transport is destroyed. */
void fake_cm_fini(void);
unsigned fake_cm_count(bool listeners);
/* The nth live id (mod the count) of that kind; NULL if there is none. */
FakeCmId *fake_cm_pick(unsigned n, bool listeners);
/* Queue an event on id (not CONNECT_REQUEST). */
void fake_cm_event(FakeCmId *id, enum rdma_cm_event_type type, int status,
                   const struct rdma_conn_param *conn, uint32_t qkey,
                   const void *priv, uint8_t priv_len);
/*
 * A connection request on listener l from peer (port in host order): a
 * new id, with the listener's context, and its CONNECT_REQUEST event.
 */
FakeCmId *fake_cm_connect_request(FakeCmId *l, const struct sockaddr *peer,
                                  const struct rdma_conn_param *conn,
                                  const void *priv, uint8_t priv_len);
/* Number of queued events. */
unsigned fake_cm_pending(void);

#endif
