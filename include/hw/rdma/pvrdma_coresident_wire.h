/*
 * Wire format of the pvrdma co-resident transport (backend/coresident.c):
 * the messages two devices exchange over their SOCK_SEQPACKET connection
 * and, once it is set up, the rings in memory both map.
 * Both ends run on one host, so fields are in host byte order.  A datagram
 * holds one message, or several each starting 8-byte aligned; a file
 * descriptor (SCM_RIGHTS) comes only with a datagram holding one REGION.
 *
 * "The side that connected" below: on a connection management made (a
 * socketpair), the side with the lower node id.
 *
 * Order on a connection: each side sends HELLO; with a shared secret each
 * then proves it knows the secret (AUTH, an HMAC over the other side's
 * nonce); only a side that has authenticated its peer sends it REGION
 * (its RAM) and GIDS.  Everything after that needs an authenticated peer.
 *
 * Versions and features (the full rules: docs/interop/pvrdma-coresident.rst):
 * CR_VERSION names the base protocol, the messages every side knows; both
 * sides must speak the same one.  What is optional is a feature (CR_F_*):
 * each HELLO lists the features its sender offers, and a connection uses
 * those both offered.  A side never sends a message of a feature the
 * connection does not use, and drops a peer that does.  Feature bits a
 * side does not know are a newer build's: ignored, as are bytes a newer
 * build appends to HELLO (never shorter than CrHello).  So two builds
 * with different features talk with what they share.
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
 * Rings (CR_F_RINGS; once both sides authenticated each other): the side
 * that connected creates the shared memory of two rings, one per direction
 * (CrRingShm), and sends it in RING.  From then on each side, when it is
 * ready, sends RING_ON on the socket and every later message through its
 * ring; it reads the peer's ring only after the peer's RING_ON, so nothing
 * overtakes what went before on the socket.  The side that got RING answers
 * RING_ON at once (or nothing: it could not map the memory, and both stay on
 * the socket); the side that sent RING sends its RING_ON when that comes.  A
 * producer that publishes into the ring of a consumer that does not poll
 * (polling 0, as in fresh memory) sends WAKE on the socket, unless a WAKE it
 * sent is not taken yet (the consumer's woken counts the WAKEs it took, each
 * before it reads prod: the take that WAKE starts sees the record).  A
 * consumer that takes from a ring whose producer said it is full
 * (want_space) sends ROOM.  WAKE and ROOM carry nothing: they only make the
 * socket readable.  A ring holds records: a u32 length, a u32 zero, and that
 * many bytes of messages exactly as one datagram would hold them, padded to
 * 8 bytes; a record may wrap around the ring's end.  All of a ring is
 * written by the peer whenever it likes: it is read once into private memory
 * and checked there, and a peer whose indexes or records do not add up is
 * dropped.
 *
 * Offer (CR_F_OFFER; an RC QP connected over RoCEv2 to a QP of the peer,
 * which is co-resident now: the way back after a migration): OFFER names
 * both QPs and the sender's PSNs, sent while its QP is idle on the wire and
 * holds its requests.  The peer answers ANSWER; ok means its QP was idle
 * too, with the same PSNs the other way round, and is on this connection
 * now.  Offers that cross are both answered: the first one taken moves both
 * QPs, and the answer to the other then finds them moved.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_PVRDMA_CORESIDENT_WIRE_H
#define HW_RDMA_PVRDMA_CORESIDENT_WIRE_H

#define CR_MAGIC        0x70767264u     /* "pvrd" */
/*
 * 5: PAUSE, PAUSED, RESUME, MOVED; 6: OFFER; 7: RING, RING_ON, WAKE, ROOM;
 * 8: features in HELLO, OFFER and the rings optional (CR_F_*)
 */
#define CR_VERSION      8
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
    CR_RING,            /* CrRingMsg, with the ring memory's descriptor */
    CR_RING_ON,         /* CrHdr only, as WAKE and ROOM */
    CR_WAKE,
    CR_ROOM,
};

/* CrHello.features: the optional parts of the protocol */
#define CR_F_RINGS      (1ull << 0)     /* RING, RING_ON, WAKE, ROOM */
#define CR_F_OFFER      (1ull << 1)     /* OFFER, ANSWER */
#define CR_F_ALL        (CR_F_RINGS | CR_F_OFFER)   /* what this build has */

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
    uint64_t features;              /* CR_F_* the sender offers */
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

/*
 * RING: the ring memory, a memfd of CR_RING_SHM_SIZE(ring_size) bytes
 * sealed against shrinking.
 */
typedef struct CrRingMsg {
    CrHdr h;
    uint32_t ring_size;     /* a power of 2, CR_RING_MIN to CR_RING_MAX */
    uint32_t pad;
} CrRingMsg;

/* bytes of records, per direction; a ring holds a largest message */
#define CR_RING_MIN     (1u << 17)
#define CR_RING_MAX     (1u << 20)
#define CR_RING_SIZE    CR_RING_MAX     /* what a device offers */

/* A size RING may name: a power of 2 from CR_RING_MIN to CR_RING_MAX. */
static inline bool cr_ring_size_ok(uint32_t size)
{
    return size >= CR_RING_MIN && size <= CR_RING_MAX && !(size & (size - 1));
}

/*
 * One direction's indexes, each written by one side only: prod and
 * want_space by the producer, cons, polling and woken by the consumer
 * (but the consumer clears want_space when it answers it with ROOM).  prod
 * and cons count bytes since the ring was made; cons <= prod <= cons +
 * the ring's size, both multiples of 8.
 */
typedef struct CrRingIdx {
    uint64_t prod;
    uint32_t want_space;    /* full: ROOM me when you took some */
    uint32_t pad0;
    uint8_t pad1[48];       /* the consumer's half in its own cache line */
    uint64_t cons;
    uint32_t polling;       /* 0: asleep, WAKE me after you published */
    uint32_t woken;         /* WAKEs taken (of those sent, mod 2^32) */
    uint8_t pad3[48];
} CrRingIdx;

/*
 * The memory: the connecting side produces into ring 0, the accepting
 * side into ring 1; the records of ring i (of size bytes) start at
 * CR_RING_DATA(i, size).
 */
typedef struct CrRingShm {
    CrRingIdx idx[2];
} CrRingShm;

#define CR_RING_DATA(i, size)   (4096u + (i) * (size))
#define CR_RING_SHM_SIZE(size)  CR_RING_DATA(2, size)

#define CR_REQ_SG_MAX   ((CR_MAX_MSG - sizeof(CrReqMsg)) / sizeof(CrSge))
#define CR_MORE_SG_MAX  ((CR_MAX_MSG - sizeof(CrMoreMsg)) / sizeof(CrSge))

#endif
