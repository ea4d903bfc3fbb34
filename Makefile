# pvrdma for QEMU 10.0 — top-level entry points.
#   make demo    build what is missing, boot a VM, show the device with rdma-core
#   make check   build, then unit tests + qtests + command-line + guest tests
.PHONY: all build check unit qtest demo clean

all: build

build:
	scripts/build.sh

check:
	scripts/test.sh

unit:
	scripts/test.sh unit

qtest:
	scripts/test.sh qtest cmdline

demo:
	scripts/demo.sh

clean:
	rm -rf build/qemu build/unit build/guest
