# The pvrdma core outside the device: the sources every test build links
# (the unit tests, tests/unit/Makefile, the fuzzers, tests/fuzz/Makefile,
# and the benchmark, tests/bench/Makefile), the flags and libraries they
# compile and link with (QEMU's headers and libqemuutil, glib), and the
# trace header.  One place for all of them, so a new core file (or trace
# event) cannot be left out of one of them.  Include it after BUILD is set.
#
# The core is hw/rdma/core/ (the device's QEMU glue, pvrdma.c and
# pvrdma_dev_*.c, is its parent folder hw/rdma/).
# backend/roce_wire.c (the RoCEv2 wire codec) needs only glib and zlib.
# Of the transports, loopback.c, the co-resident one (coresident.c and,
# beside it, coresident_data.c, coresident_resp.c, coresident_qp.c,
# coresident_peer.c, coresident_link.c, coresident_ring.c,
# coresident_gid.c) and
# the RoCEv2 one (roce.c and, beside it, roce_req.c, roce_comp.c,
# roce_resp.c, roce_net.c) need only glib;
# hostverbs.c (with hostverbs_obj.c) and hostcm.c (with hostcm_mad.c)
# need libibverbs / librdmacm and are linked only by the targets that ask
# for them.
#
# SPDX-License-Identifier: GPL-2.0-or-later

PVRDMA_TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/..)
CORE_SRCS  := $(sort $(wildcard $(PVRDMA_TOP)/hw/rdma/core/*.c)) \
              $(PVRDMA_TOP)/backend/loopback.c \
              $(PVRDMA_TOP)/backend/coresident.c \
              $(PVRDMA_TOP)/backend/coresident_data.c \
              $(PVRDMA_TOP)/backend/coresident_resp.c \
              $(PVRDMA_TOP)/backend/coresident_qp.c \
              $(PVRDMA_TOP)/backend/coresident_gid.c \
              $(PVRDMA_TOP)/backend/coresident_link.c \
              $(PVRDMA_TOP)/backend/coresident_peer.c \
              $(PVRDMA_TOP)/backend/coresident_ring.c \
              $(PVRDMA_TOP)/backend/roce_wire.c \
              $(PVRDMA_TOP)/backend/roce.c \
              $(PVRDMA_TOP)/backend/roce_comp.c \
              $(PVRDMA_TOP)/backend/roce_net.c \
              $(PVRDMA_TOP)/backend/roce_req.c \
              $(PVRDMA_TOP)/backend/roce_resp.c
# their private headers, which their objects depend on too (pvrdma_int.h,
# roce_int.h, coresident_int.h)
CORE_HDRS  := $(wildcard $(PVRDMA_TOP)/hw/rdma/core/*_int.h \
                         $(PVRDMA_TOP)/backend/*.h)

# The core's environment: QEMU's own headers and utility library, as
# QEMU's tests/unit build against them.  scripts/build.sh makes both
# (build/src/qemu-*: Debian's QEMU source with this repository overlaid;
# build/qemu: the build, whose libqemuutil.a also holds the trace
# functions generated from hw/rdma/trace-events).  Our own headers come
# first: the overlay's copies are as old as the last build.
QEMU_BUILD ?= $(PVRDMA_TOP)/build/qemu
QEMU_SRC   ?= $(firstword $(wildcard $(PVRDMA_TOP)/build/src/qemu-*/include/qemu/osdep.h))
override QEMU_SRC := $(patsubst %/include/qemu/osdep.h,%,$(QEMU_SRC))
QEMU_CFLAGS := -iquote $(PVRDMA_TOP)/include -I$(PVRDMA_TOP)/include \
               -I$(QEMU_BUILD) -I$(QEMU_BUILD)/qapi -I$(QEMU_BUILD)/trace \
               -isystem $(QEMU_SRC)/linux-headers \
               -isystem $(QEMU_BUILD)/linux-headers \
               -iquote $(QEMU_BUILD) -iquote $(QEMU_SRC) \
               -iquote $(QEMU_SRC)/include \
               -iquote $(QEMU_SRC)/host/include/x86_64 \
               -iquote $(QEMU_SRC)/host/include/generic \
               -mcx16 -msse2 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 \
               -D_LARGEFILE_SOURCE -fno-strict-aliasing -fno-common -fwrapv
QEMU_UTIL  := $(QEMU_BUILD)/libqemuutil.a
# what QEMU links its tests/unit binaries with: libqemuutil, QOM's
# objects (util/thread-context.c, which libqemuutil's memory helpers
# pull in, is a QOM type) and of QEMU's crypto the HMAC (the co-resident
# handshake: its generic part and whichever backend the build chose), of
# its I/O channels the socket channel (the co-resident links) and of its
# network layer the Internet checksum (the RoCEv2 codec)
QEMU_IO    := channel channel-file channel-socket channel-util channel-watch task
QEMU_LIBS  := $(wildcard $(QEMU_BUILD)/libqom.a.p/*.o) \
              $(wildcard $(QEMU_BUILD)/libcrypto.a.p/crypto_hmac*.c.o) \
              $(patsubst %,$(QEMU_BUILD)/libio.a.p/io_%.c.o,$(QEMU_IO)) \
              $(QEMU_BUILD)/libcommon.a.p/net_checksum.c.o \
              $(QEMU_BUILD)/libevent-loop-base.a.p/event-loop-base.c.o \
              -Wl,--start-group $(QEMU_UTIL) -lrt -lm -pthread \
              -Wl,--end-group

PKG_CONFIG  ?= pkg-config
# what compiles and links the core: QEMU's, glib and zlib (roce_wire.c's
# CRC-32, as QEMU links it)
CORE_CFLAGS := $(QEMU_CFLAGS) $(shell $(PKG_CONFIG) --cflags glib-2.0)
CORE_LIBS   := $(QEMU_LIBS) $(shell $(PKG_CONFIG) --libs glib-2.0 zlib)

# QEMU's generated trace header for hw/rdma.  It must define every event of
# hw/rdma/trace-events (else: scripts/build.sh, which regenerates it):
# checked by content before anything compiles (trace-check), not by time
# (the build copies into its tree only files whose content changed).
TRACE_H := $(QEMU_BUILD)/trace/trace-hw_rdma.h
$(TRACE_H):
	@echo "no $@: build QEMU first (scripts/build.sh)" >&2; exit 1

.PHONY: trace-check
trace-check: $(TRACE_H)
	@hd=" $$(sed -n 's/^static inline void trace_\(pvrdma_[a-z_0-9]*\)(.*/\1/p' \
	         $(TRACE_H) | tr '\n' ' ') "; \
	missing=$$(for e in $$(sed -n 's/^\(pvrdma_[a-z_0-9]*\)(.*/\1/p' \
	                        $(PVRDMA_TOP)/hw/rdma/trace-events); do \
	               case "$$hd" in *" $$e "*) ;; *) echo $$e ;; esac; \
	           done); \
	if [ -n "$$missing" ]; then \
	    echo "$(TRACE_H) lacks" $$missing ": rebuild QEMU (scripts/build.sh)" >&2; \
	    exit 1; \
	fi

# the rule above is not the includer's default goal
.DEFAULT_GOAL := all
