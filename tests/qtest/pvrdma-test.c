/*
 * QTest for the pvrdma device: PCI identity, activation, every command's
 * success and error paths, rings, MSI-X, the loopback data path with data
 * compared byte for byte, migration and fault injection; each transport
 * adds a topic of its own.  The tests are in pvrdma/, one file per
 * topic, over the helpers of pvrdma/framework.c.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "libqtest.h"
#include "pvrdma/framework.h"

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    pvrdma_add_device_tests();
    pvrdma_add_commands_tests();
    pvrdma_add_inject_tests();
    pvrdma_add_data_tests();
    pvrdma_add_iothread_tests();
    pvrdma_add_migration_tests();
    pvrdma_add_coresident_tests();
    pvrdma_add_coresident_faults_tests();
    pvrdma_add_roce_tests();
    pvrdma_add_hca_tests();
    pvrdma_add_hca_host_tests();
    pvrdma_add_bench_tests();
    return g_test_run();
}
