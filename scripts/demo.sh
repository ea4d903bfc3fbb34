#!/bin/bash
# make demo: build what is missing, boot two Debian guests side by side, each
# with the unmodified vmw_pvrdma driver on our device, and have them talk
# RDMA through the co-resident transport (guest RAM shared as memfd; the
# rig, as management would, gives the two QEMUs their connection over QMP:
# coresident=on, x-pvrdma-peer-add): rping with data validation, then
# ib_write_bw.
# About 30 s after the build (TCG).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
scripts/build.sh
scripts/guest/build-image.sh
echo "# two VMs (TCG), vmxnet3 + pvrdma each, co-resident transport; guest output:"
set -o pipefail
scripts/guest/run-vm.sh --no-build -n 2 -t 120 --pvrdma on -v --peers-from-management \
    -f tests/guest/common.sh:/usr/lib/pvrdma/tests-common.sh scripts/guest/demo-2vm.sh 2>&1 |
    grep --line-buffered -E '^\[vm[01]\] (\[[01] |    )|^run-vm: (vm[01]:|exit)|FAIL' |
    grep --line-buffered -v 'barrier .* passed'
