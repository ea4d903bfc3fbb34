#!/bin/sh
# L1: the host HCA mode qtests of test 40 (/pvrdma/hca/* against rxe0)
# with QEMU built with clang ASan + UBSan (scripts/build.sh with
# PVRDMA_SANITIZE=1): backend/hostverbs.c and hostverbs_obj.c,
# backend/hostcm.c and hostcm_mad.c, and hw/rdma/core/pvrdma_queue.c run only
# with a host RDMA device, so only here do they run under the sanitizers.
# The first UBSan report fails its case; LeakSanitizer is on for QEMU (a
# leak makes QEMU exit non-zero).  Runs when the sanitizer build exists
# and PVRDMA_CHECK_ASAN=1 (CI), after it.
# l1-files: build/qemu/tests/qtest/pvrdma-test:/pvrdma-test build/qemu-asan/qemu-system-x86_64:/usr/bin/qemu-asan scripts/lsan.supp:/usr/lib/pvrdma/lsan.supp
# timeout: 1800
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export LSAN_OPTIONS=suppressions=/usr/lib/pvrdma/lsan.supp
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export PVRDMA_QTEST_QEMU=/usr/bin/qemu-asan
/usr/bin/qemu-asan -version > /dev/null || { echo "FAIL: the sanitizer QEMU does not start in L1"; exit 1; }
. /usr/lib/pvrdma/nested/40-hca-qtests.sh
