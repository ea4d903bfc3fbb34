/*
 * The pvrdma fuzzer's input language, shared by the libFuzzer target
 * (fuzz-pvrdma.c) and the seed corpus generator (gen-corpus.c).
 *
 * An input is a sequence of operations: one opcode byte, then its
 * arguments (little endian; missing bytes read as 0).  Guest RAM is a
 * small arena at FZ_RAM_BASE with an MMIO hole in it; FZ_ALLOC hands out
 * pages from a bump allocator, so every address is deterministic and a
 * seed can name pages by allocation number instead of by address.
 * FZ_CMD_PDIR patches the allocation's page directory address into the
 * command at the given byte offset.
 *
 * FZ_HCA puts the device in host HCA mode (tests/unit/fake-hca.c) if the
 * guest has no verbs objects yet, as if the device had been started with
 * a host RDMA device; the guest's objects then get host twins and its WQEs
 * go to the fake's queues.  FZ_HCA_WC completes one of them as the host
 * would, FZ_HCA_EVENT raises a host async event, FZ_HCA_KNOB makes the
 * host's queues full or its calls fail.  Without FZ_HCA they do nothing.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef PVRDMA_FUZZ_H
#define PVRDMA_FUZZ_H

#define FZ_RAM_PAGES    256             /* 1 MiB */
#define FZ_HOLE_FIRST   200             /* pages 200..215 are not RAM */
#define FZ_HOLE_PAGES   16
#define FZ_DSR_PAGE     0
#define FZ_CMD_PAGE     1
#define FZ_RESP_PAGE    2
#define FZ_FIRST_FREE   3               /* bump allocator: 3..199, wraps */
#define FZ_MAX_ALLOCS   32
#define FZ_MAX_OPS      512

enum {
    FZ_REG_WRITE,   /* u8 reg (x4 & 0xff), u32 val */
    FZ_REG_READ,    /* u8 reg */
    FZ_MEM_WRITE,   /* u32 ram offset, u8 len, bytes */
    FZ_MEM_WRITE64, /* u32 ram offset, u64 val (any value: a raw gpa) */
    FZ_UAR,         /* u8 page (mod 8), u8 offset (x4), u32 val */
    FZ_RUN,         /* pvrdma_core_run() */
    FZ_CLOCK,       /* u8: advance the clock by 10 * n ms */
    FZ_BOOT,        /* u8 version, u8 async pages, u8 cq pages: probe */
    FZ_CMD,         /* u8 len, bytes: command slot, then REQUEST */
    FZ_ALLOC,       /* u8 npages (1..64): pages + page directory */
    FZ_CMD_PDIR,    /* u8 alloc, u8 offset, u8 len, bytes: FZ_CMD, pdir */
    FZ_PAGE_WRITE,  /* u8 alloc, u8 page, u16 offset, u8 len, bytes */
    FZ_PAGE_WRITE32,/* u8 alloc, u8 page, u16 offset, u32 val */
    FZ_HCA,         /* host HCA mode, if no PD, MR, CQ, QP or SRQ exists */
    FZ_HCA_WC,      /* u8 which, u8 status, u32 byte_len, u32 extra */
    FZ_HCA_EVENT,   /* u8 type, u16 which object */
    FZ_HCA_KNOB,    /* u8 which, u8 value */
    FZ_OP_COUNT
};

#endif
