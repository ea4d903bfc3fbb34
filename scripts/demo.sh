#!/bin/bash
# make demo: build what is missing, boot a Debian guest with the unmodified
# vmw_pvrdma driver on our device, and show it working with rdma-core tools
# (ibv_devinfo, GIDs, ibv_rc/ud/srq_pingpong over the device's loopback).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
scripts/build.sh
scripts/guest/build-image.sh
exec tests/guest/run.sh --require-pvrdma -v 10-pvrdma-probe 12-pvrdma-loopback-pingpong
