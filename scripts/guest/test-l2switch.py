#!/usr/bin/env python3
"""Checks of l2switch.py's impairments (run by scripts/test.sh unit).

Two ports, two fake VMs (unix datagram sockets).  VM 1 announces its MAC,
VM 0 sends numbered RoCEv2 frames (UDP to 4791) to it, and the test counts
what VM 1 gets against the switch's own counters:
  - no impairment: every frame, in order;
  - --jitter-ms: every frame, in order (a path's queueing delay varies,
    its order does not), later by up to the jitter and by different
    amounts, none later than the jitter allows (plus slack), the counter
    says how many were delayed;
  - --drop with --jitter-ms: what did not arrive is what the switch says
    it dropped, and the same seed drops the same frames with and without
    jitter (the jitter draws from its own sequence).
Prints TAP.
"""
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MAC0 = bytes.fromhex("525400000001")
MAC1 = bytes.fromhex("525400000002")
N = 300


def frame(src, dst, n):
    """Ethernet/IPv4/UDP to 4791 with a BTH whose PSN is n."""
    bth = struct.pack("!BBHII", 0x04, 0, 0xffff, 17, n) + struct.pack("!I", n)
    udp = struct.pack("!HHHH", 49152, 4791, 8 + len(bth), 0) + bth
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0,
                     bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    return dst + src + b"\x08\x00" + ip + udp


def run(extra):
    """Send N frames 0 -> 1 through a switch with options extra; return
    (the PSNs VM 1 got in arrival order, their delays in s, stats dict)."""
    d = tempfile.mkdtemp(prefix="l2sw-")
    vm = [os.path.join(d, "vm%d" % i) for i in range(2)]
    sw = [os.path.join(d, "sw%d" % i) for i in range(2)]
    socks = []
    for p in vm:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.bind(p)
        socks.append(s)
    stats, ready = os.path.join(d, "stats"), os.path.join(d, "ready")
    cmd = [sys.executable, os.path.join(HERE, "l2switch.py"), "--stats", stats,
           "--ready", ready, "--port", sw[0], vm[0], "--port", sw[1], vm[1]] + extra
    proc = subprocess.Popen(cmd, stderr=subprocess.DEVNULL)
    try:
        t = time.monotonic() + 10
        while not os.path.exists(ready):
            if time.monotonic() > t:
                raise RuntimeError("the switch did not start")
            time.sleep(0.01)
        # VM 1 makes its MAC known (a broadcast ARP-ish frame, not RoCE)
        socks[1].sendto(b"\xff" * 6 + MAC1 + b"\x08\x06" + bytes(28), sw[1])
        time.sleep(0.2)
        sent, got, arrived = {}, [], []

        def receive():
            socks[1].settimeout(1.5)
            while True:
                try:
                    f = socks[1].recv(65536)
                except socket.timeout:
                    return
                arrived.append(time.monotonic())
                got.append(struct.unpack_from("!I", f, 14 + 20 + 8 + 8)[0] & 0xffffff)
        rx = threading.Thread(target=receive)
        rx.start()
        for n in range(N):
            sent[n] = time.monotonic()
            socks[0].sendto(frame(MAC0, MAC1, n), sw[0])
            time.sleep(0.001)
        rx.join()
        delays = [a - sent[p] for p, a in zip(got, arrived)]
    finally:
        proc.terminate()
        proc.wait(10)
    st = {}
    with open(stats) as fh:
        for line in fh:
            k, v = line.split()
            st[k] = float(v)
    return got, delays, st


def main():
    results = []

    def check(ok, name, why=""):
        results.append(ok)
        print("%sok %d %s%s" % ("" if ok else "not ", len(results), name,
                                "" if ok or not why else " # " + why))

    got, _, st = run([])
    check(got == list(range(N)), "no impairment: every frame in order",
          "got %d, first out of place %s" % (len(got), next(
              (i for i, p in enumerate(got) if p != i), None)))

    got, delays, st = run(["--jitter-ms", "30"])
    check(got == list(range(N)), "jitter: every frame arrives once, in order",
          "got %d, first out of place %s" % (len(got), next(
              (i for i, p in enumerate(got) if p != i), None)))
    check(max(delays) - min(delays) > 0.010,
          "jitter: frames are delayed by different amounts",
          "delays %.3f to %.3f s" % (min(delays), max(delays)))
    check(st.get("jittered") == N, "jitter: every RoCE frame counted delayed",
          "jittered %s" % st.get("jittered"))
    check(max(delays) < 0.030 + 0.5 and st.get("jitter_max_ms", 99) <= 30,
          "jitter: no frame later than the jitter allows",
          "max delay %.3f s, jitter_max_ms %s" % (max(delays), st.get("jitter_max_ms")))

    got_d, _, st_d = run(["--drop", "10", "--seed", "7"])
    got_j, _, st_j = run(["--drop", "10", "--seed", "7", "--jitter-ms", "20"])
    check(len(got_j) == N - st_j["dropped"] and st_j["dropped"] > 0,
          "drop and jitter: what did not arrive is what was dropped",
          "got %d, dropped %d" % (len(got_j), st_j["dropped"]))
    check(sorted(got_j) == got_d, "drop and jitter: the seed drops the same frames",
          "differ: %s" % sorted(set(got_d) ^ set(got_j))[:10])

    print("1..%d" % len(results))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
