/*
 * QTest for the pvrdma device against a hostile guest.
 *
 * One test per class of bug the QEMU 7.2 hw/rdma pvrdma had (named after
 * its CVE) and per further class of hostile input.  Each test does what
 * the guest did to the old device, written from the Linux vmw_pvrdma /
 * rdma-core ABI, and asserts a clean error (ERR and the response's err, or
 * a CQE with an error status), a device that still answers, and, through
 * the device's x-used-* / x-mapped counters, that nothing leaked.  The
 * tests are in pvrdma/cve-tests.c, pvrdma/hostile-input-tests.c and
 * pvrdma/hostile-memory-tests.c, over
 * the helpers of pvrdma/hostile.c.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "pvrdma/hostile.h"

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    pvrdma_add_cve_tests();
    pvrdma_add_hostile_input_tests();
    pvrdma_add_hostile_memory_tests();
    return g_test_run();
}
