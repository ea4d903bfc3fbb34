/*
 * Tests of the co-resident transport (backend/coresident.c): what the
 * files of tests share.  Two or three devices, each with a fake host whose
 * guest RAM is a memfd, live in this process as if they were VMs on one
 * host (framework.c); a fake peer, a raw socket speaking the wire format,
 * checks how a device treats a peer that misbehaves (fake.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef PVRDMA_UNIT_CR_H
#define PVRDMA_UNIT_CR_H

#include <dirent.h>
#include <poll.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include "fake-driver.h"
#include "fake-hca.h"
#include "hw/rdma/pvrdma_coresident.h"
#include "hw/rdma/pvrdma_loopback.h"
#include "hw/rdma/pvrdma_roce.h"
#include "hw/rdma/pvrdma_coresident_wire.h"
#include "hw/rdma/roce_wire.h"

#define VM_RAM      (64ull << 20)
#define CR_MR_ACCESS (PVRDMA_ACCESS_LOCAL_WRITE | RC_ACCESS)

typedef struct Wire Wire;

typedef struct Vm {
    Dev d;
    PvrdmaTransport *t;
    PvrdmaTransport *rt;    /* RoCEv2 on a Wire, or NULL */
    Wire *wire;
    uint8_t gid[16];        /* ::ffff:10.0.0.<id>, bound by vm_up */
    uint8_t id;
} Vm;

/* Let these VMs run until none has anything left to do. */
#define PUMP(...) \
    pump_vms((Vm *const[]) { __VA_ARGS__ }, \
             sizeof((Vm *const[]) { __VA_ARGS__ }) / sizeof(Vm *))

typedef struct Env {
    char *dir;
    unsigned fds;
} Env;

typedef struct Side {
    Vm *v;
    uint32_t pd;
    TCq cq;
    TQp qp;
    TMr mr;
} Side;

#define S_IOVA  0x00007f0000000100ull
#define S_LEN   (12 * FH_PAGE)
#define P_LEN 256

/* Serves a VM from another thread: a peer QEMU while a test blocks. */
typedef struct Pumper {
    Vm *v;
    int stop;
    unsigned delay_ms;      /* before it serves anything */
    GThread *th;
} Pumper;

/* Two VMs in one rendezvous directory, RC QPs connected across them. */
typedef struct X {
    Env e;
    Vm a, b;
    Side sa, sb;
} X;

/*
 * Nobody answers s's request: as on a wire, its RETRY_EXC_ERR comes when
 * the QP's retries have run out (timeout 14, retry_cnt 7: 8 x 67 ms), not a
 * millisecond earlier.
 */
#define RETRY_WINDOW_MS 536
#define FAKE_RAM    (1u << 20)
#define FAKE_NODE   0xfa4e000000000001ull

typedef struct Fake {
    int fd;
    int memfd;
    Vm *v;                  /* the device it talks to */
    uint8_t *ram;           /* FAKE_RAM bytes the fake offers */
    uint8_t *vm_ram;        /* the device's RAM, mapped from its REGION */
    uint64_t vm_ram_size;
    uint64_t vm_node;       /* from the device's HELLO */
    uint32_t vm_auth;
    uint64_t vm_features;   /* what the device's HELLO offers */
    uint64_t features;      /* what the fake's offers: CR_F_ALL unless set */
    uint64_t node;          /* its node id: FAKE_NODE unless set */
    uint8_t vm_nonce[CR_NONCE_LEN];
    uint8_t nonce[CR_NONCE_LEN];        /* the fake's, in its HELLO */
    const char *secret;     /* what the fake believes the secret is */
    /* the device sends several messages per datagram: the rest of one */
    uint8_t pend[CR_MAX_MSG];
    size_t pend_len, pend_off;
    /*
     * The rings (fake_ring_on()): the fake connected, so it made them and
     * produces into ring 0; ring_tx: its messages go there, ring_rx: the
     * device's come from ring 1 (its socket then carries only WAKE).
     */
    uint8_t *ring;
    uint64_t rprod, rcons;
    uint32_t woken;         /* the device's WAKEs taken */
    uint32_t wakes;         /* the fake's WAKEs sent */
    bool ring_tx, ring_rx;
} Fake;

/* The fake answers a CANCEL of QP qpn with FLUSH for its two requests. */
typedef struct FakeCanceller {
    Fake *f;
    uint32_t qpn;
    uint64_t cookie[2];
} FakeCanceller;

/* The fake answers while the device polls its ring: no WAKE. */
typedef struct FakePoller {
    Fake *f;
    FakeHost *h;
    uint64_t cookie;
    uint32_t wakes;         /* the fake's WAKEs for its answer */
    uint32_t polling;       /* the ring's flag as the fake wrote */
    bool timed_out;         /* the device never polled */
} FakePoller;

enum { HS_NONE, HS_HELLO, HS_READY };

/* What a hostile peer does with the rings (test_ring_malformed()). */
enum {
    RB_ON_FIRST,        /* RING_ON with no RING before it */
    RB_RING_TWICE,      /* a second RING */
    RB_ON_IN_RING,      /* RING_ON again, through the ring */
    RB_PROD_PAST,       /* prod more than a ring ahead of cons */
    RB_PROD_ODD,        /* prod not a multiple of 8 */
    RB_REC_ZERO,        /* a record of length 0 */
    RB_REC_LONG,        /* a record longer than what was published */
    RB_REC_HUGE,        /* a record longer than a message may be */
    RB_MSG_BAD,         /* a record whose message is malformed */
    RB_CONS_PAST,       /* the device's ring: cons past its prod */
    RB_N
};

/* framework.c: VMs, the rendezvous directory, sides, pumpers */

void make_gid(uint8_t gid[16], uint8_t net, uint8_t id);

/* the rings new devices offer (pvrdma_coresident_set_rings(); 0: none) */
extern uint32_t g_ring_size;

/*
 * The features new devices offer (pvrdma_coresident_set_features()): fewer
 * than CR_F_ALL make a device of a build that lacks the others.
 */
extern uint64_t g_features;

void vm_create(Vm *v, const char *dir, uint8_t id, const char *secret);

/* The same, activated by its driver; no GID yet. */
void vm_init_secret(Vm *v, const char *dir, uint8_t id,
                    const char *secret);

void vm_init(Vm *v, const char *dir, uint8_t id);

/* The guest driver registers the VM's GID. */
void vm_up(Vm *v);

/*
 * The VM's QEMU exits (no guest reset, which would wait for the peers to
 * answer its requests: pvrdma_qp_fence): every mapping released, every
 * fd handler gone.
 */
void vm_fini(Vm *v);

/*
 * The guest's RAM and the driver's view of the device (DSR, command and
 * response slots, async and CQ notification rings) come along to "to", a
 * migration's destination, from "from".
 */
void vm_take_guest(Vm *to, const Vm *from);

unsigned peers(Vm *v);

/* QPs of v the transport keeps a record of */
unsigned qp_records(Vm *v);

bool reaches(Vm *v, const uint8_t gid[16]);

void pump_vms(Vm *const *v, unsigned n);

void unbind_gid(Dev *d, uint32_t index, const uint8_t gid[16]);

/* The fd handler of v's connection to its (only or first) peer. */
FhWatch *peer_watch(Vm *v);

unsigned count_socks(const char *dir);

/* The path of the only socket in dir (g_free it). */
char *only_sock(const char *dir);

void rm_tree(const char *path);

void env_init(Env *e);

/* Every device left: no socket in the directory, no fd leaked. */
void env_fini(Env *e);

void side_init(Side *s, Vm *v, uint8_t type);

void rc_connect(Side *a, Side *b, uint8_t rnr_retry);

void side_expect_cqe(Side *s, uint64_t wr_id, uint32_t status,
                     uint32_t opcode, uint32_t byte_len);

uint32_t qp_state(Side *s);

gpointer pumper_run(gpointer opaque);

void pumper_start_late(Pumper *p, Vm *v, unsigned delay_ms);

void pumper_start(Pumper *p, Vm *v);

void pumper_stop(Pumper *p);

/* The same with devices of builds that offer features fa and fb. */
void x_setup_features(X *x, uint8_t rnr_retry, uint64_t fa, uint64_t fb);

void x_setup(X *x, uint8_t rnr_retry);

void x_fini(X *x);

/* Arm s's CQ for the next completion. */
void arm_cq(Vm *v, TCq *cq);

/* FakeHost.on_notify: a guest that arms side arg's CQ again at once. */
void rearm_send_cq(FakeHost *h, unsigned vector, void *arg);

/* CQ interrupts v raised so far */
unsigned cq_irqs(Vm *v);

void send_wqe(Side *s, uint64_t wr_id, uint32_t opcode, uint32_t flags,
              const struct pvrdma_sge *sge, uint32_t nsge);

void rdma_wqe(Side *s, uint64_t wr_id, uint32_t opcode,
              const struct pvrdma_sge *sge, uint32_t nsge,
              uint64_t raddr, uint32_t rkey, uint32_t imm);

struct pvrdma_sge mr_sge(Side *s, uint64_t off, uint32_t len);

void pass_retry_window(Side *s);

/*
 * Connect a fake peer, take it as far as 'hs' into the handshake, send
 * one bad message: the device must hang up on it, and only on it.
 */
void bad_message(Vm *a, const char *path, int hs, const void *msg,
                 size_t len, int fd, const char *what);

/*
 * A VM a with the fake as its one peer on the rings (GID 10.x.0xfa); the
 * rendezvous socket's path (g_free it).
 */
char *ring_peer_up(Env *e, Vm *a, Fake *f);

/* fake.c: the fake peer */

CrRingIdx *fake_idx(Fake *f, unsigned i);

/* Copy n bytes at ring position pos of ring i (in or out: to_ring). */
void fake_ring_copy(Fake *f, unsigned i, uint64_t pos, void *buf,
                    uint32_t n, bool to_ring);

/* A record into ring 0 as it is (the fake may publish garbage). */
void fake_ring_put(Fake *f, const void *buf, uint32_t len,
                   uint32_t hdr_len);

void fake_send(Fake *f, const void *buf, size_t len, int fd);

/* The device's next record from ring 1: its length, or 0 if none. */
size_t fake_ring_get(Fake *f, void *buf, size_t cap);

/*
 * The next message from the device: datagrams carry one message, or
 * several each starting 8-byte aligned; a descriptor comes alone.
 */
ssize_t fake_recv(Fake *f, void *buf, size_t cap, int *fd);

/* On the rings: the ring first, the socket's WAKEs are skipped. */
ssize_t fake_recv_datagram(Fake *f, void *buf, size_t cap, int *fd);

ssize_t fake_recv_socket(Fake *f, void *buf, size_t cap, int *fd);

/* The next message, which must be there and have type 'type'. */
ssize_t fake_expect(Fake *f, void *buf, size_t cap, uint32_t type);

/* Did v hang up on the fake?  (Messages still queued are skipped.) */
bool fake_dropped(Fake *f);

/* Connect to v's socket at path; v greets with HELLO, nothing more. */
void fake_connect(Fake *f, Vm *v, const char *path);

/* The device accepted the fake: its REGION and GIDS come next. */
void fake_take_ram(Fake *f);

/*
 * The HMAC of an AUTH on a fake's connection (the fake connected, so it
 * is the 'c' side): by_fake, the fake's proof, else the device's.
 */
void fake_mac(const char *secret, bool by_fake, const uint8_t *vnonce,
              const uint8_t *pnonce, uint64_t pnode, uint64_t vnode,
              uint8_t mac[CR_MAC_LEN]);

/* The fake's HELLO as it would send it. */
CrHello fake_hello_msg(Fake *f, uint32_t nregions);

/*
 * The device's AUTH, which must prove it has f->secret; then the fake's,
 * which proves the fake has it (or not, if the secrets differ).
 */
void fake_auth(Fake *f);

/*
 * The fake's HELLO (with f->secret: asking for HMAC authentication, then
 * AUTH both ways).  A device that agrees then accepts the fake: its RAM
 * and GIDs are taken here.
 */
void fake_hello(Fake *f, uint32_t nregions);

void fake_region(Fake *f, uint32_t index, uint64_t size, uint64_t off,
                 int fd);

void fake_gids(Fake *f, const uint8_t gid[16]);

/* HELLO with one region, the region, GIDS: a complete peer. */
void fake_ready(Fake *f, const uint8_t gid[16]);

/*
 * The fake makes the rings (RING, its memory sealed or not), the device
 * answers RING_ON; the fake's RING_ON then moves both onto the rings.
 * With a memory the device refuses, both stay on the socket.
 */
bool fake_ring_on(Fake *f, bool seal);

void fake_close(Fake *f);

/* A REQ with nsg entries of sg in the message, nsg_total announced. */
CrReqMsg *req_msg(uint64_t cookie, uint32_t opcode, uint32_t dest_qpn,
                  const CrSge *sg, uint32_t nsg, uint32_t nsg_total,
                  uint64_t len);

gpointer fake_cancel_run(gpointer opaque);

/* The fake's RESP to a request: returns its status. */
int32_t fake_resp(Fake *f, uint64_t cookie);

/*
 * The fake writes len bytes of its RAM (the nsg pieces of sg) into sa's MR
 * at S_IOVA + off with an RDMA WRITE: answered success, the bytes there.
 */
void fake_write_checked(Fake *f, Side *sa, uint64_t cookie,
                        const CrSge *sg, uint32_t nsg, uint64_t off,
                        const uint8_t *data, uint32_t len);

char *fake_side_up(Env *e, Vm *a, Side *sa, Fake *f, uint8_t fgid[16]);

/*
 * A well-behaved fake peer: its requests are served from and into its own
 * memory, the device's requests reach it with lists of the device's RAM.
 */
void fake_peer_run(bool ring);

gpointer fake_poller_run(gpointer opaque);

/* Each file's tests (test-pvrdma-coresident.c registers them) */
void cr_add_join_tests(void);
void cr_add_data_tests(void);
void cr_add_pause_tests(void);
void cr_add_trust_tests(void);
void cr_add_errors_tests(void);
void cr_add_fake_tests(void);
void cr_add_rings_tests(void);
void cr_add_pieces_tests(void);

#endif
