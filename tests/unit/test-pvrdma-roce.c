/*
 * Tests of the RoCEv2 transport (backend/roce*.c).  Two devices, A
 * (::ffff:10.0.0.1) and B (::ffff:10.0.0.2), each with loopback and a
 * RoCEv2 transport, whose host's frame_tx puts the frames (copied) on a
 * simulated wire toward the other device.  The pump (net_run) delivers the
 * frames in order with pvrdma_roce_rx(), runs the cores that were kicked
 * and, when nothing else is left to do, moves both fake clocks to the
 * earliest delayed kick, so the transports' retransmission and RNR timers
 * fire without the test waiting for them.
 *
 * The wire checks every frame it is given: roce_parse() must accept it
 * (ICRC, lengths), the Ethernet and IP addresses must be the sender's and
 * the receiver's, segments must fill the path MTU, and a requester must
 * never skip a PSN.  It can drop frame N of a direction, drop, duplicate,
 * reorder (swap with the frame before) or corrupt (one byte of the IB
 * headers or payload) a per-mille share of the frames (a seeded PRNG: every
 * run is the same), drop everything, or drop what a filter picks.  It can
 * also delay each frame of a direction by a latency plus a random jitter:
 * frames then overtake each other, and an ACK can come after the
 * requester's timer fired (a spurious retransmission), as on a loaded
 * host.  It keeps
 * a trace of the last frames (opcode, PSN, AETH, what it did to them),
 * printed when a case fails (all of it, as it happens, with
 * PVRDMA_ROCE_TRACE=1).  PVRDMA_ROCE_SEED=N changes every random choice.
 *
 * The tests are in roce/, one file per topic, over roce/wire.c and
 * roce/framework.c.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "roce/rt.h"

int main(int argc, char **argv)
{
    fh_test_init(&argc, &argv);
    rt_add_rc_tests();
    rt_add_retry_tests();
    rt_add_migration_tests();
    rt_add_hostile_tests();
    rt_add_ud_tests();
    rt_add_teardown_tests();
    return g_test_run();
}
