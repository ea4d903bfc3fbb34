#!/bin/sh
# QEMU with the pvrdma device built by clang with AddressSanitizer (and
# LeakSanitizer, for QEMU) and UndefinedBehaviorSanitizer into
# build/qemu-asan, then every pvrdma qtest case run against it.  The same
# as 'scripts/test.sh asan'; CI runs it with PVRDMA_CHECK_ASAN=1.
exec "$(dirname "$0")/test.sh" asan
