# Device version 18 (-device pvrdma,version=18): the unmodified driver and
# libvmw_pvrdma work with the device as the ABI defines that version, the
# 32-bit UAR pfn, the CREATE_QP response without a QP handle:
# device_version_test in common.sh (the driver's "device version 18", the
# GID type, the verbs checker co-resident RC and UD and on loopback);
# version 20 is the default that every other test runs.
# vms: 2
# timeout: 600
# requires: pvrdma
# vm-args: --device-args version=18
. /usr/lib/pvrdma/tests-common.sh

device_version_test 18
