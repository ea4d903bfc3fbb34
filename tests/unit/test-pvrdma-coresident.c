/*
 * Tests of the co-resident transport (backend/coresident.c).  Two or three
 * devices, each with a fake host whose guest RAM is a memfd, live in this
 * process as if they were VMs on one host: they meet in a temporary
 * rendezvous directory and exchange verbs through each other's RAM.  The
 * fake hosts' poll loop (fh_pump) plays the main loops of the VMs; leaving
 * a VM out of a pump models a VM that has not run yet.  A fake peer, a raw
 * socket speaking the wire format, checks how a device treats a peer that
 * misbehaves.  The tests are in coresident/, one file per topic, over
 * coresident/framework.c and coresident/fake.c.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "coresident/cr.h"

int main(int argc, char **argv)
{
    fh_test_init(&argc, &argv);
    (void)g_random_int();   /* glib's first use may open files: not a leak */
    cr_add_join_tests();
    cr_add_data_tests();
    cr_add_pause_tests();
    cr_add_trust_tests();
    cr_add_errors_tests();
    cr_add_fake_tests();
    cr_add_rings_tests();
    cr_add_pieces_tests();
    return g_test_run();
}
