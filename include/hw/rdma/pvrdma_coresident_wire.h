/*
 * Wire format of the pvrdma co-resident transport (backend/coresident.c):
 * the messages two devices exchange over their SOCK_SEQPACKET connection.
 * Both ends run on one host, so fields are in host byte order.  A datagram
 * holds one message, or several each starting 8-byte aligned; a file
 * descriptor (SCM_RIGHTS) comes only with a datagram holding one REGION.
 *
 * Order on a connection: each side sends HELLO; with a shared secret each
 * then proves it knows the secret (AUTH, an HMAC over the other side's
 * nonce); only a side that has authenticated its peer sends it REGION
 * (its RAM) and GIDS.  Everything after that needs an authenticated peer.
 *
 * Pause (a side's VM stops for its state to be saved): it sends PAUSE.
 * The other side answers each of its requests still waiting for a receive
 * with status NOT_EXECUTED (PVRDMA_TRANSPORT_NOT_EXECUTED: run it again
 * later), sends it no new request, and answers PAUSED; everything it sent
 * before PAUSED was sent before.  The pausing side executes what arrives
 * until every PAUSED is in, then answers its own waiting requests
 * NOT_EXECUTED.  Later it sends RESUME (its VM runs here again) or MOVED
 * (its state went to another QEMU, which will announce the same GIDs: its
 * peers keep waiting for that one instead of failing) and hangs up.
 *
 * Offer (an RC QP connected over RoCEv2 to a QP of the peer, which is
 * co-resident now: the way back after a migration): OFFER names both QPs
 * and the sender's PSNs, sent while its QP is idle on the wire and holds
 * its requests.  The peer answers ANSWER; ok means its QP was idle too,
 * with the same PSNs the other way round, and is on this connection now.
 * Offers that cross are both answered: the first one taken moves both
 * QPs, and the answer to the other then finds them moved.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_PVRDMA_CORESIDENT_WIRE_H
#define HW_RDMA_PVRDMA_CORESIDENT_WIRE_H

#define CR_MAGIC        0x70767264u     /* "pvrd" */
#define CR_VERSION      6       /* 5: PAUSE, PAUSED, RESUME, MOVED; 6: OFFER */
#define CR_MAX_MSG      (64 * 1024)
#define CR_NONCE_LEN    32
#define CR_MAC_LEN      32      /* HMAC-SHA256 */
/* what an AUTH message's HMAC covers, after this label (see CrAuthMsg) */
#define CR_AUTH_LABEL   "pvrdma-coresident-auth-v4"

enum {
    CR_HELLO = 1,
    CR_REGION,
    CR_GIDS,
    CR_REQ,
    CR_MORE,
    CR_RESP,
    CR_CANCEL,
    CR_AUTH,
    CR_PAUSE,           /* CrHdr only, as the three that follow */
    CR_PAUSED,
    CR_RESUME,
    CR_MOVED,
    CR_OFFER,
    CR_ANSWER,
};

/* CrHello.auth: how a side authenticates its peers; both must agree */
enum {
    CR_AUTH_NONE = 0,           /* same uid (SO_PEERCRED) only */
    CR_AUTH_HMAC_SHA256 = 1,    /* and a shared secret (AUTH message) */
};

typedef struct CrHdr {
    uint32_t type;
    uint32_t len;
} CrHdr;

typedef struct CrHello {
    CrHdr h;
    uint32_t magic;
    uint32_t version;
    uint64_t node;
    uint32_t nregions;
    uint32_t auth;                  /* CR_AUTH_* */
    uint8_t nonce[CR_NONCE_LEN];    /* random; the peer's AUTH covers it */
} CrHello;

/*
 * Proof of the shared secret K, sent after the peer's HELLO:
 *   mac = HMAC-SHA256(K, CR_AUTH_LABEL || role || verifier nonce ||
 *                        prover nonce || prover node || verifier node)
 * role is 'c' when the prover connected, 'a' when it accepted; the nodes
 * are 8 bytes each (host order).  The verifier's fresh nonce stops a
 * replay, the role and node order stop a peer from reflecting one side's
 * proof back at it.
 */
typedef struct CrAuthMsg {
    CrHdr h;
    uint8_t mac[CR_MAC_LEN];
} CrAuthMsg;

typedef struct CrRegionMsg {
    CrHdr h;
    uint32_t index;
    uint32_t pad;
    uint64_t size;
    uint64_t fd_offset;
} CrRegionMsg;

typedef struct CrGid {
    uint8_t gid[16];
    uint8_t type;
    uint8_t pad[3];
} CrGid;

typedef struct CrGids {
    CrHdr h;
    uint32_t n;
    uint32_t pad;
    CrGid g[];
} CrGids;

typedef struct CrSge {
    uint32_t region;
    uint32_t pad;
    uint64_t off;
    uint64_t len;
} CrSge;

typedef struct CrReqMsg {
    CrHdr h;
    uint64_t cookie;
    uint32_t opcode;
    uint32_t send_flags;
    uint32_t src_qpn;
    uint32_t dest_qpn;
    uint32_t qkey;
    uint32_t rkey;
    uint32_t imm;
    uint8_t qp_type;
    uint8_t rnr_retry;
    uint8_t sgid_type;
    uint8_t pad;
    uint64_t remote_addr;
    uint64_t compare_add;
    uint64_t swap;
    uint8_t sgid[16];
    uint8_t dgid[16];
    uint8_t smac[6];
    uint8_t pad2[2];
    uint64_t len;           /* sum of the sg lengths */
    uint32_t nsg_total;     /* here and in the MORE messages that follow */
    uint32_t nsg;           /* in this message */
    CrSge sg[];
} CrReqMsg;

typedef struct CrMoreMsg {
    CrHdr h;
    uint64_t cookie;
    uint32_t nsg;
    uint32_t pad;
    CrSge sg[];
} CrMoreMsg;

typedef struct CrRespMsg {
    CrHdr h;
    uint64_t cookie;
    int32_t status;
    uint32_t pad;
} CrRespMsg;

/* The requester's QP src_qpn is gone: drop its requests still waiting. */
typedef struct CrCancelMsg {
    CrHdr h;
    uint32_t src_qpn;
    uint32_t pad;
} CrCancelMsg;

/* OFFER: the sender's RC QP src_qpn (to dest_qpn here) would move here */
typedef struct CrOfferMsg {
    CrHdr h;
    uint32_t src_qpn;
    uint32_t dest_qpn;
    uint32_t sq_psn;        /* the sender's next PSN to send ... */
    uint32_t rq_psn;        /* ... and the next it expects */
} CrOfferMsg;

/* ANSWER to an OFFER of QP dest_qpn (here) for src_qpn (the sender's) */
typedef struct CrAnswerMsg {
    CrHdr h;
    uint32_t src_qpn;
    uint32_t dest_qpn;
    uint32_t ok;            /* 1: src_qpn moved here */
    uint32_t pad;
} CrAnswerMsg;

#define CR_REQ_SG_MAX   ((CR_MAX_MSG - sizeof(CrReqMsg)) / sizeof(CrSge))
#define CR_MORE_SG_MAX  ((CR_MAX_MSG - sizeof(CrMoreMsg)) / sizeof(CrSge))

#endif
