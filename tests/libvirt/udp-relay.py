#!/usr/bin/env python3
"""The wire between the two VMs of tests/libvirt/run.sh (python3 stdlib).

    udp-relay.py --ready FILE --log FILE PORT0:VMPORT0 PORT1:VMPORT1

Two UDP sockets on 127.0.0.1: PORT0 for VM 0's QEMU, PORT1 for VM 1's.
Each VM's vmxnet3 has a UDP socket netdev (libvirt <interface type='udp'>,
one Ethernet frame per datagram) bound at 127.0.0.1:VMPORTn that sends to
PORTn.  A frame that comes in on one port goes out of the other, to the
address the last frame on that port came from (at first 127.0.0.1:VMPORTn).

Why not the two netdevs straight at each other: a VM migrated on this
host binds its netdev again in the destination QEMU, which starts long
before the switch-over, and Linux gives a UDP datagram to the socket
bound last (QEMU sets SO_REUSEADDR): from that moment the source, still
running, would receive nothing, for the whole migration.  Here the
destination binds a port of its own (run.sh migrates with virsh migrate
--xml, the interface's <local port> changed, as another host has its own
address) and the relay turns to it at its first frame (QEMU announces
the NIC's MAC once the destination runs): the source keeps its network
until it stops, as on an Ethernet switch.

Each time a port turns to a new address it logs "portN follows
127.0.0.1:P (was ...)"; at exit (SIGTERM) it logs the frame counts.
--ready FILE is created once both ports are bound.
"""
import argparse
import select
import signal
import socket
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ready")
    ap.add_argument("--log")
    ap.add_argument("ports", nargs=2, metavar="PORT:VMPORT")
    a = ap.parse_args()
    logf = open(a.log, "a", buffering=1) if a.log else sys.stderr
    t0 = time.monotonic()

    def log(msg):
        logf.write("[%.3f] %s\n" % (time.monotonic() - t0, msg))

    socks, peers, frames = [], [], [0, 0]
    for spec in a.ports:
        port, vmport = (int(x) for x in spec.split(":"))
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", port))
        socks.append(s)
        peers.append(("127.0.0.1", vmport))
    if a.ready:
        open(a.ready, "w").close()
    log("relay 127.0.0.1:%d <-> 127.0.0.1:%d, at first to %s and %s"
        % (socks[0].getsockname()[1], socks[1].getsockname()[1], peers[0], peers[1]))

    def stop(*_):
        log("frames: port0 in %d, port1 in %d" % (frames[0], frames[1]))
        sys.exit(0)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    while True:
        r, _, _ = select.select(socks, [], [])
        for i, s in enumerate(socks):
            if s not in r:
                continue
            try:
                f, src = s.recvfrom(65536)
            except OSError:
                continue
            frames[i] += 1
            if src != peers[i]:
                log("port%d follows %s:%d (was %s:%d)" % (i, src[0], src[1], peers[i][0], peers[i][1]))
                peers[i] = src
            try:
                socks[1 - i].sendto(f, peers[1 - i])
            except OSError:
                pass    # the other QEMU is not there (yet, or any more): lost


if __name__ == "__main__":
    main()
