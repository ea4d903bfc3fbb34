# The QEMU-free pvrdma core: the sources every standalone build links (the
# unit tests, tests/unit/Makefile, the fuzzers, tests/fuzz/Makefile, and
# the benchmark, tests/bench/Makefile), glib's flags, and the trace header
# they compile against.  One place for all three, so a new core file (or
# trace event) cannot be left out of one of them.  Include it after BUILD
# is set.
#
# The core is hw/rdma/core/ (the device's QEMU glue, pvrdma.c and
# pvrdma_dev_*.c, is its parent folder hw/rdma/).
# backend/roce_wire.c (the RoCEv2 wire codec) needs only glib and zlib.
# Of the transports, loopback.c, the co-resident one (coresident.c and,
# beside it, coresident_data.c, coresident_qp.c, coresident_peer.c,
# coresident_link.c, coresident_ring.c, coresident_gid.c) and
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
                         $(PVRDMA_TOP)/backend/*.h \
                         $(PVRDMA_TOP)/tests/standalone/*.h)

# the core's environment outside QEMU (pvrdma_port.h includes it)
STANDALONE_INC := -I$(PVRDMA_TOP)/tests/standalone

PKG_CONFIG  ?= pkg-config
GLIB_CFLAGS := $(shell $(PKG_CONFIG) --cflags glib-2.0)
# and zlib (roce_wire.c's CRC-32), as QEMU links it
GLIB_LIBS   := $(shell $(PKG_CONFIG) --libs glib-2.0 zlib)

# every trace event a no-op: QEMU's build generates the real header
TRACE_H := $(BUILD)/trace/trace-hw_rdma.h
$(TRACE_H): $(PVRDMA_TOP)/hw/rdma/trace-events
	@mkdir -p $(dir $@)
	sed -n 's/^\(pvrdma_[a-z_0-9]*\)(.*/#define trace_\1(...) do { } while (0)/p' $< > $@

# the rule above is not the includer's default goal
.DEFAULT_GOAL := all
