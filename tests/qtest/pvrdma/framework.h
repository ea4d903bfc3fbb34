/*
 * QTest for the pvrdma device: what the tests of every topic share, the
 * guest-side helpers (written the way the Linux driver lays things out)
 * and the two-QEMU peers of the co-resident tests.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef PVRDMA_TEST_FRAMEWORK_H
#define PVRDMA_TEST_FRAMEWORK_H

#include "libqos/pvrdma.h"

/* Two connected RC QPs on one PD and CQ, and a GID bound. */
typedef struct Pair {
    QPvrdma *d;
    uint32_t pd;
    QPvrdmaCq cq;
    QPvrdmaQp a, b;
} Pair;

/* One "VM": device, PD, CQ, an MR over a 4-page buffer. */
typedef struct Peer {
    QPvrdma *d;
    uint32_t pd;
    QPvrdmaCq cq;
    QPvrdmaQp qp;
    uint64_t buf;
    uint32_t key;
} Peer;

/* The GIDs of peers 0-3 (10.0.0.1 ... 10.0.0.4, IPv4-mapped) */
extern const uint8_t peer_gid[4][16];

/* How many async events (type, info) are among the first ones posted */
unsigned async_count(QPvrdma *d, uint32_t type, uint32_t info);

bool async_seen(QPvrdma *d, uint32_t type, uint32_t info);

void fill(QPvrdma *d, uint64_t gpa, size_t len, uint8_t seed);

void same(QPvrdma *d, uint64_t a, uint64_t b, size_t len);

/* The pair on a device already active (d). */
void pair_connect(Pair *p, QPvrdma *d, uint8_t type, uint32_t n);

void pair_setup(Pair *p, uint8_t type, uint32_t n);

/*
 * One 4 KiB SEND of p (id n, src filled from seed) into a receive at dst
 * (lkey key, dst's MR key + 256), both completions checked: work done.
 */
void pair_exchange(Pair *p, uint64_t src, uint64_t dst, uint32_t key,
                   uint8_t n, uint8_t seed);

uint32_t peer_count(QPvrdma *d);

/* Remove a rendezvous directory (sockets, lock file) after a test. */
void rm_dir(const char *dir);

/* Wait (real time: the peers are other processes) until d sees n peers. */
void wait_peers(QPvrdma *d, uint32_t n);

/* A peer whose device has these properties (',coresident=on', ...). */
void peer_start_props(Peer *p, unsigned i, const char *props);

/* A peer with a rendezvous secret (NULL: none). */
void peer_start_secret(Peer *p, const char *dir, unsigned i,
                       const char *secret);

void peer_start(Peer *p, const char *dir, unsigned i);

/* Connect RC QPs of a and b (created here) with the given RNR retry. */
void peers_connect(Peer *a, Peer *b, uint8_t type, uint8_t rnr_retry);

/* Two peers in dir that see each other, with connected QPs. */
void peers_up(Peer *a, Peer *b, const char *dir, uint8_t type,
              uint8_t rnr_retry);

/* Poll a CQ on a while the other process works (real time). */
void expect_peer_cqe(Peer *p, uint64_t wr_id, uint32_t opcode,
                     uint32_t status, uint32_t len);

void peer_fill(Peer *p, uint64_t off, size_t len, uint8_t seed);

/* Bytes at a's buf+aoff equal b's buf+boff (two processes). */
void peers_same(Peer *a, uint64_t aoff, Peer *b, uint64_t boff,
                size_t len);

/* WRITE, READ, fetch-add, compare-swap from a's QP on b's memory */
void peers_rc_ops(Peer *a, Peer *b);

/* a bad-rkey WRITE and a SEND from a: errors, flushes, both QPs in ERR */
void peers_bad_rkey(Peer *a, Peer *b);

/*
 * One SEND from a (buf + aoff) to b (buf + boff) of len bytes, filled
 * with seed: both completions, the bytes compared.
 */
void peers_send(Peer *a, Peer *b, uint64_t id, uint64_t aoff,
                uint64_t boff, uint32_t len, uint8_t seed);

uint8_t qp_state(QPvrdma *d, uint32_t handle);

/* Each topic's tests (pvrdma-test.c registers them in this order) */

void pvrdma_add_device_tests(void);
void pvrdma_add_commands_tests(void);
void pvrdma_add_data_tests(void);
void pvrdma_add_migration_tests(void);
void pvrdma_add_coresident_tests(void);
void pvrdma_add_coresident_faults_tests(void);
void pvrdma_add_roce_tests(void);
void pvrdma_add_hca_tests(void);
void pvrdma_add_hca_host_tests(void);
void pvrdma_add_bench_tests(void);
void pvrdma_add_inject_tests(void);
void pvrdma_add_iothread_tests(void);

#endif
