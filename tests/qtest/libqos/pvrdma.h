/*
 * libqos driver for the pvrdma device: what the Linux vmw_pvrdma driver
 * does at probe (DSR, slots, async and CQ-notification rings, MSI-X,
 * activation) plus helpers for commands, rings and page directories.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef QOS_PVRDMA_H
#define QOS_PVRDMA_H

#include "libqos-pc.h"
#include "pci.h"
#include "qgraph.h"
#include "hw/rdma/pvrdma_abi.h"

#define PVRDMA_TEST_SLOT    4

/* A CQ of the guest's (QPvrdma.cqs) and a flush of DESTROY_QP's */
typedef struct QPvrdmaCqSeen {
    uint32_t handle;
    uint64_t state;             /* its ring-state page */
} QPvrdmaCqSeen;

typedef struct QPvrdmaFlush {
    uint32_t qp, cq, upto;      /* cq's producer index at the response */
} QPvrdmaFlush;

typedef struct QPvrdmaStashed {
    uint32_t cq;
    struct pvrdma_cqe e;
} QPvrdmaStashed;

typedef struct QPvrdma {
    QOSState *qs;               /* NULL for the qos graph's node */
    QTestState *qts;
    QGuestAllocator *alloc;
    QPCIDevice *dev;
    QPCIBar regs, uar;
    uint64_t dsr, cmd, resp;
    union pvrdma_cmd_req posted;    /* the last command (qpvrdma_cmd_post) */
    uint64_t async_pdir, cq_pdir;
    uint64_t async_pages[4], cq_pages[4];
    uint64_t msix_addr;         /* vector v writes its number here + 4*v */
    char *args;                 /* QEMU's command line (for a migration) */
    bool unplugged;             /* qpvrdma_unplug(): the slot is empty */
    uint32_t version;           /* min(the DSR driver version, REG_VERSION) */
    /*
     * The QP handles the driver knows (CREATE_QP answered, DESTROY_QP not
     * yet): the Linux driver cannot consume a CQE of any other, and its
     * CQ poll stops there for good, so qpvrdma_poll_cq() fails on one.
     * As the driver does after DESTROY_QP's response, the CQEs of the QP
     * then in a CQ are flushed: cqs holds each CQ's handle and ring-state
     * address, flushes which CQEs (QP, CQ, up to which producer index).
     */
    GHashTable *live_qps;
    GArray *cqs, *flushes;
    /*
     * CQEs polled ahead (QPvrdmaStashed): while the device works beside
     * qtest (iothread=, qpvrdma_mode_wait_ms), completions of different
     * QPs may come in another order than one at a time; an expected CQE
     * is looked for among them and later ones are kept here.
     */
    GArray *stashed;
} QPvrdma;

/* A ring-backed object: pages, their page directory, host-side indices. */
typedef struct QPvrdmaRing {
    uint64_t *pages;
    uint32_t npages;
    uint64_t pdir;
} QPvrdmaRing;

/*
 * What every qpvrdma_start() adds while set: device properties (",..."),
 * right after the address, and options after the device (" -object
 * ...").  For tests that run again in another mode (iothread=).
 */
extern const char *qpvrdma_mode_device;
extern const char *qpvrdma_mode_args;
/*
 * How long qpvrdma_expect_cqe() waits in real time besides stepping the
 * clock: 0 while the device works in the main loop (qtest's commands go
 * through it too), more when it works beside it (iothread=).
 */
extern unsigned qpvrdma_mode_wait_ms;
/*
 * qtest_clock_step(), in steps of 1 ms while the device works beside
 * qtest (iothread=): its timers are the IOThread's, which a single warp
 * does not run as it goes.
 */
void qpvrdma_clock_step(QPvrdma *d, uint64_t ns);
/*
 * Every device qpvrdma_start() starts from now on has its data path in
 * IOThread io0 (and CQEs are awaited beside it), or no longer.
 */
void qpvrdma_iothread_mode(bool on);
/*
 * Register test fn at path, and again at path with "/pvrdma/" made
 * "/pvrdma/iothread/", where every device it starts has its data path in
 * an IOThread (iothread=).
 */
void qpvrdma_add_func_both(const char *path, void (*fn)(void));
QPvrdma *qpvrdma_start(const char *extra_fmt, ...) G_GNUC_PRINTF(1, 2);
void qpvrdma_stop(QPvrdma *d);
/*
 * Hot-unplug the device's slot (the vmxnet3 and pvrdma) as a guest that
 * ejects it through ACPI does; returns when QEMU says a device went.
 */
void qpvrdma_unplug(QPvrdma *d);
/*
 * Migrate the VM to a new QEMU with the same command line (over a unix
 * socket, libqos's migrate()); d then drives the new one.
 */
void qpvrdma_migrate(QPvrdma *d);
/*
 * The same to a destination QEMU of another binary (NULL: this one) with
 * other arguments (NULL: the same), which later migrations keep.
 */
void qpvrdma_migrate_to(QPvrdma *d, const char *binary, const char *args);
/*
 * qpvrdma_migrate() with postcopy-ram: the destination runs before all of
 * RAM has come over.  With err NULL the migration must complete; otherwise
 * *err gets why it did not (d then still drives the source, postcopy-ram
 * off again).  false, and nothing done, if the destination cannot do
 * postcopy (no userfaultfd).
 */
bool qpvrdma_migrate_postcopy(QPvrdma *d, char **err);
/*
 * A background snapshot of the VM into file (migrate with the capability
 * background-snapshot: the VM runs on while its RAM is saved as it was at
 * the start).  false, nothing done, if this host cannot (userfaultfd
 * write-protect); else true, and *err NULL or why it failed.
 */
bool qpvrdma_bg_snapshot(QPvrdma *d, const char *file, char **err);
/* A new QEMU, same command line, loads file; d then drives it. */
void qpvrdma_restore(QPvrdma *d, const char *file);
/*
 * Poll query-migrate (at most 60 s) until the migration is no longer
 * under way: its status, and with desc its error-desc ("" if none).
 */
char *qpvrdma_mig_wait(QTestState *qts, char **desc);

/* Point MSI-X vector v at addr with data (what a guest may do). */
void qpvrdma_msix_vector(QPvrdma *d, unsigned v, uint64_t addr,
                         uint32_t data);
/* system_reset, then what firmware and the driver redo: BARs, MSI-X. */
void qpvrdma_system_reset(QPvrdma *d);

uint32_t qpvrdma_reg_read(QPvrdma *d, uint32_t reg);
void qpvrdma_reg_write(QPvrdma *d, uint32_t reg, uint32_t val);
void qpvrdma_uar_write(QPvrdma *d, uint32_t page, uint32_t off, uint32_t val);

/* Driver probe: DSR + rings, DSRLOW/HIGH, caps read back. */
void qpvrdma_setup_dsr(QPvrdma *d, uint32_t driver_version);
/* ACTIVATE; returns REG_ERR. */
uint32_t qpvrdma_activate(QPvrdma *d);
/* Probe + activate with driver version 20. */
QPvrdma *qpvrdma_start_active(const char *extra);
void qpvrdma_read_caps(QPvrdma *d, struct pvrdma_device_caps *caps);

/*
 * Post a command: returns REG_ERR.  On success also waits for the response
 * vector and copies the response to resp (if not NULL).
 */
/*
 * A command in two steps, as the driver posts it: write the request and
 * REQUEST, return ERR (no waiting); later, wait for the response vector
 * and read the response.  qpvrdma_cmd_answered(): the response slot was
 * written since the post.
 */
uint32_t qpvrdma_cmd_post(QPvrdma *d, const void *req, size_t len);
bool qpvrdma_cmd_answered(QPvrdma *d);
void qpvrdma_cmd_wait(QPvrdma *d, union pvrdma_cmd_resp *resp);
uint32_t qpvrdma_cmd(QPvrdma *d, const void *req, size_t len,
                     union pvrdma_cmd_resp *resp);
/* Wait for MSI-X vector v (consumes the event); false on timeout. */
bool qpvrdma_wait_vector(QPvrdma *d, unsigned v);
bool qpvrdma_vector_seen(QPvrdma *d, unsigned v);

/* Guest memory */
uint64_t qpvrdma_alloc(QPvrdma *d, size_t len);
/* A page directory over npages freshly allocated (zeroed) pages. */
void qpvrdma_ring_alloc(QPvrdma *d, QPvrdmaRing *r, uint32_t npages);
uint64_t qpvrdma_pdir(QPvrdma *d, const uint64_t *pages, uint32_t npages);
void qpvrdma_ring_free(QPvrdmaRing *r);

/* ------------------------------------------------------------------ */
/* Verbs objects laid out the way the Linux driver lays them out       */

typedef struct QPvrdmaCq {
    uint32_t handle, cqe;
    QPvrdmaRing ring;
    uint32_t cons;
} QPvrdmaCq;

typedef struct QPvrdmaQp {
    uint32_t handle, qpn;
    uint32_t nsend, nrecv, sge, sstride, rstride, send_chunks;
    QPvrdmaRing ring;
    uint32_t sprod, rprod;
    bool srq;
} QPvrdmaQp;

/* A RoCE v2 IPv4 GID (10.0.0.1); qpvrdma_bind_gid binds it. */
extern const uint8_t qpvrdma_test_gid[16];

/* Power-of-two WQE stride for a header and sge SGEs, as the driver. */
uint32_t qpvrdma_wqe_stride(size_t hdr, uint32_t sge);
/* A command that must succeed (ERR 0, ack, err 0). */
void qpvrdma_cmd_ok(QPvrdma *d, const void *req, size_t len,
                    union pvrdma_cmd_resp *rsp);
/* A command that must fail: returns the errno (ERR == response err). */
uint32_t qpvrdma_cmd_fails(QPvrdma *d, const void *req, size_t len);
/* A command that must fail with errno err. */
void qpvrdma_cmd_err(QPvrdma *d, const void *req, size_t len, uint32_t err);
uint32_t qpvrdma_create_pd(QPvrdma *d, uint32_t ctx);
void qpvrdma_create_cq(QPvrdma *d, QPvrdmaCq *cq, uint32_t cqe);
/* n send and n receive WQEs of 2 SGEs; srq != 0: on that SRQ. */
void qpvrdma_create_qp(QPvrdma *d, QPvrdmaQp *qp, uint32_t pd, uint32_t scq,
                       uint32_t rcq, uint8_t type, uint32_t n, uint32_t srq);
uint32_t qpvrdma_modify_qp(QPvrdma *d, uint32_t h, uint32_t mask,
                           struct pvrdma_qp_attr *a);
void qpvrdma_bind_gid(QPvrdma *d, uint32_t index);
void qpvrdma_bind_gid_raw(QPvrdma *d, uint32_t index, const uint8_t gid[16]);
/* RESET -> INIT -> RTR -> RTS, to dest_qpn (RC) or for UD. */
void qpvrdma_qp_to_rts(QPvrdma *d, QPvrdmaQp *qp, uint8_t type,
                       uint32_t dest_qpn);
/* RESET -> INIT (asserted) -> RTR towards dest_qpn at dgid; REG_ERR of RTR. */
uint32_t qpvrdma_qp_to_rtr(QPvrdma *d, QPvrdmaQp *qp, uint8_t type,
                           uint32_t dest_qpn, const uint8_t dgid[16]);
/* The same to a QP at dgid, with the given RNR retry count. */
void qpvrdma_qp_to_rts_gid(QPvrdma *d, QPvrdmaQp *qp, uint8_t type,
                           uint32_t dest_qpn, const uint8_t dgid[16],
                           uint8_t rnr_retry);
/* The same, the peer's MAC in the address vector (RoCEv2's frames). */
void qpvrdma_qp_to_rts_mac(QPvrdma *d, QPvrdmaQp *qp, uint8_t type,
                           uint32_t dest_qpn, const uint8_t dgid[16],
                           const uint8_t *dmac, uint8_t rnr_retry);
/* User MR over [gpa, gpa + len); returns the key (lkey == rkey). */
uint32_t qpvrdma_create_mr(QPvrdma *d, uint32_t pd, uint64_t gpa,
                           uint32_t len, uint32_t access);
/* CREATE_MR of [gpa, gpa + len) page by page: the command's status. */
uint32_t qpvrdma_try_create_mr(QPvrdma *d, uint32_t pd, uint64_t gpa,
                               uint32_t len, uint32_t access,
                               union pvrdma_cmd_resp *r);
/* The same, for devices whose keys differ (a host HCA): returns the lkey. */
uint32_t qpvrdma_create_mr_keys(QPvrdma *d, uint32_t pd, uint64_t gpa,
                                uint32_t len, uint32_t access, uint32_t *rkey);
/* DESTROY_<what> of a handle; returns REG_ERR. */
uint32_t qpvrdma_destroy(QPvrdma *d, uint32_t cmd, uint32_t handle);

/* Guest address of WQE idx in the send (or receive) ring. */
uint64_t qpvrdma_wqe_addr(QPvrdmaQp *qp, bool send, uint32_t idx);
void qpvrdma_post_recv(QPvrdma *d, QPvrdmaQp *qp, uint64_t wr_id,
                       uint64_t addr, uint32_t len, uint32_t lkey);
void qpvrdma_post_send(QPvrdma *d, QPvrdmaQp *qp,
                       struct pvrdma_sq_wqe_hdr *h,
                       const struct pvrdma_sge *s, bool ring);
void qpvrdma_send_wr(QPvrdma *d, QPvrdmaQp *qp, uint32_t op, uint64_t wr_id,
                     uint64_t addr, uint32_t len, uint32_t lkey,
                     uint64_t raddr, uint32_t rkey);
/*
 * A signaled FETCH_AND_ADD or CMP_AND_SWP of the 8 bytes at raddr; the old
 * value lands at addr.
 */
void qpvrdma_atomic_wr(QPvrdma *d, QPvrdmaQp *qp, uint32_t op,
                       uint64_t wr_id, uint64_t addr, uint32_t lkey,
                       uint64_t raddr, uint32_t rkey, uint64_t compare_add,
                       uint64_t swap);
/* Poll one CQE, stepping the clock so the device's bottom half runs. */
bool qpvrdma_poll_cq(QPvrdma *d, QPvrdmaCq *cq, struct pvrdma_cqe *e);
/*
 * The same, also waiting up to ms of wall time: for completions made
 * outside the clock (another QEMU process, a host RDMA device).
 */
bool qpvrdma_wait_cq(QPvrdma *d, QPvrdmaCq *cq, struct pvrdma_cqe *e,
                     unsigned ms);
void qpvrdma_expect_cqe(QPvrdma *d, QPvrdmaCq *cq, uint64_t wr_id,
                        uint32_t opcode, uint32_t status, uint32_t len);
void qpvrdma_expect_cqe_wait(QPvrdma *d, QPvrdmaCq *cq, uint64_t wr_id,
                             uint32_t opcode, uint32_t status, uint32_t len,
                             unsigned ms);
void qpvrdma_cq_empty(QPvrdma *d, QPvrdmaCq *cq);

/* ------------------------------------------------------------------ */
/* The device's read-only counters (QOM x-used-*, x-mapped, ...)       */

typedef struct QPvrdmaCounts {
    uint64_t uc, pd, mr, cq, qp, srq, mapped;
} QPvrdmaCounts;

uint64_t qpvrdma_counter(QPvrdma *d, const char *name);
/* x-query-pvrdma-qps: a line per QP, its transport (g_free it). */
char *qpvrdma_qps(QPvrdma *d);
void qpvrdma_counts(QPvrdma *d, QPvrdmaCounts *c);
/* Assert that every counter is back where it was. */
void qpvrdma_assert_counts(QPvrdma *d, const QPvrdmaCounts *before);

/*
 * The qos graph's node "pvrdma" (libqos_init in pvrdma.c): a test added
 * with qos_add_test(NAME, "pvrdma", fn, opts) gets this as its obj; its
 * d is the device as the driver finds it at probe (not yet activated).
 */
typedef struct QPvrdmaNode {
    QOSGraphObject obj;
    QPCIBus *bus;
    QGuestAllocator *alloc;
    QPvrdma *d;
} QPvrdmaNode;

#endif
