# pvrdma for QEMU 10.0 — top-level entry points.
#   make demo    build what is missing, boot a VM, show the device with rdma-core
#   make check   build, then unit tests + fuzzers + qtests + command-line
#                + guest tests + host HCA tests in a nested VM
.PHONY: all build check unit fuzz qtest nested check-nested demo clean

all: build

build:
	scripts/build.sh

check:
	scripts/test.sh

unit:
	scripts/test.sh unit

# the libFuzzer targets, a fixed number of executions each (no QEMU build)
fuzz:
	scripts/test.sh fuzz

qtest:
	scripts/test.sh qtest cmdline

# host HCA mode in a VM with soft-RoCE: the CI subset (40, 41)
nested:
	scripts/test.sh nested

# every nested test, including two L2 guests at once (about 20 minutes)
check-nested:
	PVRDMA_NESTED_TESTS=all scripts/test.sh nested

demo:
	scripts/demo.sh

clean:
	rm -rf build/qemu build/unit build/fuzz build/guest
