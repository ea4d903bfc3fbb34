# The QEMU-free pvrdma core: the sources every standalone build links (the
# unit tests, tests/unit/Makefile, and the fuzzers, tests/fuzz/Makefile).
# One list for both, so a new core file cannot be left out of one of them.
#
# Every hw/rdma/pvrdma_*.c is core; hw/rdma/pvrdma.c (PCI/QOM glue) is
# QEMU's.  Of the transports, loopback.c and coresident.c need only glib;
# hostverbs.c and hostcm.c need libibverbs / librdmacm and are linked only
# by the targets that ask for them.
#
# SPDX-License-Identifier: GPL-2.0-or-later

PVRDMA_TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/..)
CORE_SRCS  := $(sort $(wildcard $(PVRDMA_TOP)/hw/rdma/pvrdma_*.c)) \
              $(PVRDMA_TOP)/backend/loopback.c \
              $(PVRDMA_TOP)/backend/coresident.c
