# pvrdma for QEMU 10.0 — top-level entry points.
#   make demo    build what is missing, boot a VM, show the device with rdma-core
#   make check   build, then unit tests + fuzzers + qtests + command-line
#                + the patch series + guest tests + libvirt + host HCA
#                tests in a nested VM
#   make check-libvirt  two VMs under libvirt (virsh, migration)
.PHONY: all build check unit fuzz qtest nested check-nested check-kernels check-series \
	series check-libvirt check-compat check-tsan check-tsan-qemu check-iothread check-no-rdma demo clean

all: build

build:
	scripts/build.sh

check:
	scripts/test.sh

unit:
	scripts/test.sh unit

# the libFuzzer targets, a fixed number of executions each
fuzz:
	scripts/test.sh fuzz

qtest:
	scripts/test.sh qtest cmdline

# host HCA mode in a VM with soft-RoCE: the CI subset (40, 41)
nested:
	scripts/test.sh nested

# every nested test: also two L2 guests at once (42), RoCEv2 to bare-metal
# soft-RoCE (44), every path at once (45), the kernel storage and file
# protocols on the host HCA (46); about 50 minutes on 2 cores
check-nested:
	PVRDMA_NESTED_TESTS=all scripts/test.sh nested

# the guest suite's core tests on each guest kernel (Debian 12's 6.1, 13's
# 6.12, unstable's newest), each with its release's rdma-core and the
# vmw_pvrdma of its own kernel source (scripts/guest/kernel-matrix.sh)
check-kernels:
	scripts/guest/kernel-matrix.sh

# two VMs under Debian's libvirt (two private libvirtd "hosts"), verbs
# check, query-pvrdma through virsh, virsh migrate while traffic runs
# (tests/libvirt, about 2.5 minutes)
check-libvirt:
	scripts/test.sh libvirt

# the patch series for QEMU (scripts/patch-series.py, build/series/patches):
# git am on a pristine QEMU 10.0 tree, checkpatch, the last commit built and
# its qtests run (series; make check only applies and checkpatches), or
# every commit built (check-series, bisectable: 78 builds, the qtests from
# the 36th; about 30 minutes warm on 2 cores; scripts/series-check.sh
# --newest does the same on the newest QEMU Debian has too).  It is four series, A (the
# device with loopback), B (co-resident, RFC), C (RoCEv2), D (host HCA),
# each also in build/series/patches/A..D with its cover letter
series:
	PVRDMA_SERIES_BUILD=1 scripts/test.sh series

check-series:
	PVRDMA_SERIES_BISECT=1 scripts/test.sh series

# the core and the co-resident transport with threads under ThreadSanitizer
# (bench-core's QEMU-like mode; a few minutes)
check-tsan:
	scripts/tsan-bench.sh

# QEMU under ThreadSanitizer (build/qemu-tsan, about 9 minutes cold) with
# the iothread= qtests: no race on the device's memory
check-tsan-qemu:
	scripts/test.sh tsan

# the guest tests of one VM, two co-resident VMs, driver developers and
# kernel protocols again with iothread= on every device (~15 minutes)
check-iothread:
	scripts/test.sh guest-iothread

# QEMU configured --disable-rdma: the device builds and runs without
# libibverbs, the summary says so, ibdev is refused (a cold build, ~8 min)
check-no-rdma:
	scripts/check-no-rdma.sh

# with a build from before VMState (21c4b2b, built in a worktree under
# build/compat: a few minutes with ccache): migration both ways, and
# co-resident peers of the two builds
check-compat:
	scripts/check-compat.sh

demo:
	scripts/demo.sh

clean:
	rm -rf build/qemu build/unit build/fuzz build/guest
