/*
 * RoCEv2 wire codec: one Ethernet frame carrying an InfiniBand transport
 * packet (BTH, extension headers, payload, pad, ICRC) in UDP (port 4791)
 * over IPv4 or IPv6, optionally 802.1Q tagged.  roce_parse() takes a frame
 * from a hostile network apart into a RocePkt, checking every length and
 * checksum; roce_build() writes a RocePkt back as a frame.  A frame that
 * roce_parse() accepts is rebuilt byte for byte (up to the end of its IP
 * packet: Ethernet padding is not kept).
 *
 * Multi-byte fields of RocePkt are host-order numbers; the wire is big
 * endian except the ICRC (see roce_icrc()).  Used by backend/roce.c.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RDMA_ROCE_WIRE_H
#define HW_RDMA_ROCE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ROCE_UDP_PORT           4791

#define ROCE_ETH_HLEN           14
#define ROCE_VLAN_HLEN          4
#define ROCE_IPV4_HLEN          20
#define ROCE_IPV6_HLEN          40
#define ROCE_UDP_HLEN           8
#define ROCE_BTH_LEN            12
#define ROCE_RETH_LEN           16
#define ROCE_AETH_LEN           4
#define ROCE_ATMETH_LEN         28
#define ROCE_ATMACK_LEN         8
#define ROCE_IMMDT_LEN          4
#define ROCE_IETH_LEN           4
#define ROCE_DETH_LEN           8
#define ROCE_ICRC_LEN           4

/* the largest frame roce_build() writes: an IP packet of 65535 bytes */
#define ROCE_MAX_FRAME          (ROCE_ETH_HLEN + ROCE_VLAN_HLEN + \
                                 ROCE_IPV6_HLEN + 65535)

/* BTH opcodes: RC (0x00-0x1f) */
enum {
    ROCE_RC_SEND_FIRST                      = 0x00,
    ROCE_RC_SEND_MIDDLE                     = 0x01,
    ROCE_RC_SEND_LAST                       = 0x02,
    ROCE_RC_SEND_LAST_WITH_IMMEDIATE        = 0x03,
    ROCE_RC_SEND_ONLY                       = 0x04,
    ROCE_RC_SEND_ONLY_WITH_IMMEDIATE        = 0x05,
    ROCE_RC_RDMA_WRITE_FIRST                = 0x06,
    ROCE_RC_RDMA_WRITE_MIDDLE               = 0x07,
    ROCE_RC_RDMA_WRITE_LAST                 = 0x08,
    ROCE_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE  = 0x09,
    ROCE_RC_RDMA_WRITE_ONLY                 = 0x0a,
    ROCE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE  = 0x0b,
    ROCE_RC_RDMA_READ_REQUEST               = 0x0c,
    ROCE_RC_RDMA_READ_RESPONSE_FIRST        = 0x0d,
    ROCE_RC_RDMA_READ_RESPONSE_MIDDLE       = 0x0e,
    ROCE_RC_RDMA_READ_RESPONSE_LAST         = 0x0f,
    ROCE_RC_RDMA_READ_RESPONSE_ONLY         = 0x10,
    ROCE_RC_ACKNOWLEDGE                     = 0x11,
    ROCE_RC_ATOMIC_ACKNOWLEDGE              = 0x12,
    ROCE_RC_COMPARE_SWAP                    = 0x13,
    ROCE_RC_FETCH_ADD                       = 0x14,
    ROCE_RC_SEND_LAST_WITH_INVALIDATE       = 0x16,
    ROCE_RC_SEND_ONLY_WITH_INVALIDATE       = 0x17,
    /* UD (0x60-0x7f) */
    ROCE_UD_SEND_ONLY                       = 0x64,
    ROCE_UD_SEND_ONLY_WITH_IMMEDIATE        = 0x65,
};

/*
 * AETH syndrome (8 bits): bit 7 reserved, bits 6-5 the type, bits 4-0
 * credits (ACK), the RNR timer code (RNR NAK) or the NAK code (NAK).
 */
#define ROCE_AETH_TYPE_MASK     0x60
#define ROCE_AETH_VALUE_MASK    0x1f
#define ROCE_AETH_ACK           0x00
#define ROCE_AETH_RNR_NAK       0x20
#define ROCE_AETH_NAK           0x60
/* credit count 0x1f: the responder gives no end-to-end credits */
#define ROCE_AETH_NO_CREDITS    0x1f

enum {
    ROCE_NAK_PSN_SEQ_ERR        = 0,
    ROCE_NAK_INVALID_REQUEST    = 1,
    ROCE_NAK_REMOTE_ACCESS      = 2,
    ROCE_NAK_REMOTE_OP          = 3,
    ROCE_NAK_INVALID_RD_REQUEST = 4,
};

static inline uint8_t roce_aeth_ack(uint8_t credits)
{
    return ROCE_AETH_ACK | (credits & ROCE_AETH_VALUE_MASK);
}

static inline uint8_t roce_aeth_rnr_nak(uint8_t timer)
{
    return ROCE_AETH_RNR_NAK | (timer & ROCE_AETH_VALUE_MASK);
}

static inline uint8_t roce_aeth_nak(uint8_t code)
{
    return ROCE_AETH_NAK | (code & ROCE_AETH_VALUE_MASK);
}

static inline uint8_t roce_aeth_type(uint8_t syndrome)
{
    return syndrome & ROCE_AETH_TYPE_MASK;
}

static inline uint8_t roce_aeth_value(uint8_t syndrome)
{
    return syndrome & ROCE_AETH_VALUE_MASK;
}

/* Extension headers that may follow the BTH */
typedef enum RoceExtHdr {
    ROCE_EH_NONE = 0,
    ROCE_EH_RETH,       /* RDMA: va, rkey, DMA length */
    ROCE_EH_AETH,       /* ACK: syndrome, MSN */
    ROCE_EH_ATMETH,     /* atomic request: va, rkey, swap/add, compare */
    ROCE_EH_ATMACK,     /* atomic response: original remote data */
    ROCE_EH_IMMDT,      /* immediate data */
    ROCE_EH_IETH,       /* the rkey to invalidate */
    ROCE_EH_DETH,       /* UD: Q_Key, source QP */
} RoceExtHdr;

/* Where a packet is in its message */
typedef enum RocePos {
    ROCE_POS_FIRST,
    ROCE_POS_MIDDLE,
    ROCE_POS_LAST,
    ROCE_POS_ONLY,
} RocePos;

#define ROCE_MAX_EXT_HDRS       2

typedef struct RoceOpInfo {
    const char *name;
    /* in wire order; unused entries ROCE_EH_NONE */
    uint8_t ext[ROCE_MAX_EXT_HDRS];
    uint8_t hdr_len;    /* BTH and extension headers */
    bool payload;       /* carries payload (possibly 0 bytes) */
    uint8_t pos;        /* RocePos */
} RoceOpInfo;

/* NULL for an opcode this codec does not know (refused) */
const RoceOpInfo *roce_opcode_info(uint8_t op);
/* Does a packet with opcode op carry extension header eh? */
bool roce_opcode_has(uint8_t op, RoceExtHdr eh);
/*
 * An RC opcode that a requester sends (SEND, RDMA WRITE, READ request,
 * atomics), not a responder's answer (READ response, ACK, atomic ACK).
 */
bool roce_opcode_is_rc_request(uint8_t op);
/* "RC_SEND_ONLY", ...; "INVALID" for an unknown opcode */
const char *roce_opcode_name(uint8_t op);

typedef struct RocePkt {
    /* Ethernet */
    uint8_t dmac[6];
    uint8_t smac[6];
    bool vlan;              /* an 802.1Q tag (TPID 0x8100) */
    uint16_t vlan_tci;

    /* IP: version 4 (no options, not fragmented) or 6 (no ext. headers) */
    uint8_t ip_ver;
    uint8_t tclass;         /* IPv4 TOS / IPv6 traffic class */
    uint8_t ttl;            /* IPv4 TTL / IPv6 hop limit */
    uint16_t ip_id;         /* IPv4 identification */
    bool df;                /* IPv4 don't fragment (rxe sets it) */
    uint32_t flow_label;    /* IPv6, 20 bits */
    /* addresses as GIDs; IPv4 as ::ffff:a.b.c.d */
    uint8_t sgid[16];
    uint8_t dgid[16];

    /* UDP */
    uint16_t sport;
    /*
     * As found (parse verifies a nonzero one).  roce_build() writes 0 for
     * 0 (what rxe sends over IPv4 and IPv6), and the computed checksum
     * for anything else.
     */
    uint16_t udp_csum;

    /* BTH */
    uint8_t opcode;
    bool se;                /* solicited event */
    bool mig;               /* migration state */
    uint8_t pad;            /* as found; roce_build() derives it */
    uint8_t tver;           /* transport version: 0 */
    uint16_t pkey;
    bool fecn;
    bool becn;
    uint8_t resv6;          /* 6 reserved bits after FECN/BECN */
    uint32_t dqpn;          /* 24 bits */
    bool ack_req;
    uint8_t resv7;          /* 7 reserved bits after AckReq */
    uint32_t psn;           /* 24 bits */

    /* extension headers: only those of the opcode are meaningful */
    struct {
        uint64_t va;
        uint32_t rkey;
        uint32_t len;
    } reth;
    struct {
        uint8_t syndrome;
        uint32_t msn;       /* 24 bits */
    } aeth;
    struct {
        uint64_t va;
        uint32_t rkey;
        uint64_t swap_add;
        uint64_t compare;
    } atmeth;
    uint64_t atmack;        /* original remote data */
    uint32_t imm;           /* ImmDt, host order of the wire's big endian */
    uint32_t ieth_rkey;
    struct {
        uint32_t qkey;
        uint8_t resv;       /* reserved byte before the source QP */
        uint32_t sqp;       /* 24 bits */
    } deth;

    /* payload, without pad and ICRC; parse points it into the frame */
    const uint8_t *payload;
    size_t payload_len;

    uint32_t icrc;          /* parse: as found; build computes it */
} RocePkt;

/* roce_parse() results: 0 or one of these */
typedef enum RoceDrop {
    ROCE_OK = 0,
    ROCE_DROP_TRUNCATED = -1,       /* shorter than its L2/L3 headers */
    ROCE_DROP_NOT_IP = -2,          /* EtherType neither IPv4 nor IPv6 */
    ROCE_DROP_IP_HEADER = -3,       /* version, options, fragment */
    ROCE_DROP_IP_LENGTH = -4,       /* IP length beyond frame / too small */
    ROCE_DROP_IP_CSUM = -5,         /* IPv4 header checksum */
    ROCE_DROP_NOT_UDP = -6,         /* protocol / next header not UDP */
    ROCE_DROP_UDP_LENGTH = -7,      /* UDP length != IP payload length */
    ROCE_DROP_UDP_PORT = -8,        /* destination port not 4791 */
    ROCE_DROP_UDP_CSUM = -9,        /* a nonzero UDP checksum is wrong */
    ROCE_DROP_SHORT = -10,          /* UDP payload < its IB headers+ICRC */
    ROCE_DROP_ICRC = -11,
    ROCE_DROP_OPCODE = -12,         /* invalid BTH opcode */
    ROCE_DROP_TVER = -13,           /* BTH transport version not 0 */
    ROCE_DROP_PAD = -14,            /* pad count vs length, pad bytes */
    ROCE_DROP_PAYLOAD = -15,        /* payload on an opcode without one */
} RoceDrop;

#define ROCE_DROP_COUNT 16

const char *roce_drop_reason_str(int reason);

/*
 * Take frame apart into *p (p->payload points into frame).  Returns 0 or
 * a RoceDrop.  Never reads outside [frame, frame + len); bytes after the
 * IP packet (Ethernet padding) are ignored.
 */
int roce_parse(const uint8_t *frame, size_t len, RocePkt *p);

/*
 * Write *p as a frame into buf: headers, lengths, IPv4 header checksum,
 * payload, zero pad to a multiple of 4, ICRC.  Returns the frame's
 * length, or 0 if it does not fit in cap or *p is not a valid packet
 * (unknown opcode, a field wider than its bits, payload on an opcode
 * without one, IPv4 with a GID that is not ::ffff:a.b.c.d, ...).
 */
size_t roce_build(const RocePkt *p, uint8_t *buf, size_t cap);

/*
 * CRC-32 (IEEE 802.3 polynomial, reflected), no inversion on either end:
 * the standard CRC-32 of data is ~roce_crc32(0xffffffff, data, len).
 */
uint32_t roce_crc32(uint32_t crc, const void *data, size_t len);

/*
 * The ICRC start value: roce_crc32(0xffffffff, ...) over the 8 bytes of
 * 0xff that stand for the masked LRH (IBA Annex A17).
 */
#define ROCE_ICRC_SEED          0xdebb20e3u

/*
 * The ICRC of an IP packet l3 of l3_len bytes (ICRC included): over the
 * IP header (IPv4: TOS, TTL and header checksum as ones; IPv6: traffic
 * class, flow label and hop limit as ones), the UDP header (checksum as
 * ones), the BTH (its FECN/BECN/resv6 byte as ones), the rest of the
 * headers, payload and pad.  On the wire it is stored little endian (as
 * rxe does on little-endian CPUs, and as an Ethernet FCS).  l3 must hold
 * at least the IP and UDP headers, a BTH and an ICRC.
 */
uint32_t roce_icrc(const uint8_t *l3, size_t l3_len, bool ipv6);

#endif
