#!/usr/bin/env python3
"""A small learning Ethernet switch for the guest rig (python3 stdlib only).

    l2switch.py [options] --port LOCAL REMOTE [--port LOCAL REMOTE ...]

Each port is a unix datagram socket bound at LOCAL that exchanges frames
with the socket at REMOTE: a QEMU started with
    -netdev dgram,id=n0,local.type=unix,local.path=REMOTE,\
remote.type=unix,remote.path=LOCAL
(one frame per datagram, no header).  The switch learns source MACs, sends
unicast to the port that MAC was last seen on, and floods broadcast,
multicast and unknown unicast to every other port.  A port sends to the
socket its last frame came from: a VM that migrated to a new QEMU (bound
at another path, same port) gets its frames from its first frame on.

Impairment (on the frames that --match selects, before forwarding):
  --drop PCT      drop this share of them (a float, percent)
  --reorder PCT   hold this share of them back and send each after the
                  next frame that goes to the same port (or after
                  --hold-ms without one: then it was only delayed)
  --jitter-ms MS  delay each of them that is not dropped by a time drawn
                  uniformly from [0, MS] ms (its own random sequence, so
                  the drop decisions of a seed do not change), but never
                  past a frame sent before it to the same port: a path
                  whose queueing delay varies, in order (reordering is
                  --reorder's).  Frames that overtook each other at random
                  (each frame its own delay) made go-back-N resend most
                  windows, 8 times the frames, until the ports' queues
                  overflowed
  --match roce    only UDP to port 4791 (RoCEv2; default), or "all"
  --keep-acks     never drop RoCEv2 ACKs (RC ACKNOWLEDGE, which carries
                  ACKs and NAKs, and ATOMIC ACKNOWLEDGE); reordered they
                  may be.  An RC QP cannot recover a lost last ACK once
                  its peer destroyed its QP (RC has no closing handshake):
                  ibv_rc_pingpong's server exits as soon as it has
                  everything, and its client then never completes its
                  last SEND.
  --keep-acks-from PORT
                  the same for the ACKs that come in on port PORT only
                  (repeatable): the ACKs of a peer that forgets a
                  destroyed QP at once, as rxe and RoCE HCAs do, while
                  those of a device that answers for a destroyed QP a
                  while (pvrdma) may be lost
  --keep-cm       never drop the CM's MADs (UD SEND to QP 1): an rping
                  client sends one DREQ and destroys its cm_id at once
                  (the kernel's CM stops retrying it), so a lost DREQ
                  leaves the server waiting for DISCONNECTED forever.
  --seed N        the random sequence (default 1): the same seed and the
                  same frames give the same decisions
A frame is dropped when r < DROP, reordered when DROP <= r < DROP+REORDER
(r uniform in [0,100) drawn once per selected frame).

Counters ("name value" lines) go to --stats FILE at exit (SIGTERM/SIGINT)
and on SIGUSR1, and a one-line summary to stderr at exit.  --ready FILE
is created once every port is bound.  -v logs each impaired frame.
"""
import argparse
import collections
import errno
import heapq
import os
import random
import select
import signal
import socket
import struct
import sys
import time

ROCE_PORT = 4791
MAX_QUEUE = 2048        # frames waiting for a slow receiver, per port


def roce_bth(f):
    """Offset of the BTH if f is Ethernet [802.1Q] IPv4|IPv6 UDP to port
    4791 (not an IPv4 fragment), else None."""
    if len(f) < 14:
        return None
    off, et = 14, struct.unpack_from("!H", f, 12)[0]
    if et == 0x8100 and len(f) >= 18:
        off, et = 18, struct.unpack_from("!H", f, 16)[0]
    if et == 0x0800:
        if len(f) < off + 20 or f[off] >> 4 != 4 or f[off + 9] != 17:
            return None
        if struct.unpack_from("!H", f, off + 6)[0] & 0x3fff:
            return None
        off += (f[off] & 0xf) * 4
    elif et == 0x86dd:
        if len(f) < off + 40 or f[off + 6] != 17:
            return None
        off += 40
    else:
        return None
    if len(f) < off + 8 or struct.unpack_from("!H", f, off + 2)[0] != ROCE_PORT:
        return None
    return off + 8


def is_roce(f):
    return roce_bth(f) is not None


# RC ACKNOWLEDGE (ACKs and NAKs) and RC ATOMIC ACKNOWLEDGE
ACK_OPCODES = (0x11, 0x12)
# UD SEND ONLY (with immediate): a MAD when it goes to QP 1
UD_SEND_OPCODES = (0x64, 0x65)


def is_cm_mad(f, bth):
    """A UD datagram to QP 1 (the GSI QP, which carries the CM)."""
    if len(f) < bth + 8 or f[bth] not in UD_SEND_OPCODES:
        return False
    return struct.unpack_from("!I", f, bth + 4)[0] & 0xffffff == 1


def describe(f):
    """A short description of a frame for -v: RoCE opcode/QP/PSN, or type."""
    bth = roce_bth(f)
    if bth is not None:
        if len(f) >= bth + 12:
            qpn = struct.unpack_from("!I", f, bth + 4)[0] & 0xffffff
            psn = struct.unpack_from("!I", f, bth + 8)[0] & 0xffffff
            return "roce op 0x%02x qp %d psn %d len %d" % (f[bth], qpn, psn, len(f))
        return "roce (short) len %d" % len(f)
    et = struct.unpack_from("!H", f, 12)[0] if len(f) >= 14 else 0
    return "ethertype 0x%04x len %d" % (et, len(f))


def mac(b):
    return ":".join("%02x" % x for x in b)


class Port:
    def __init__(self, idx, local, remote):
        self.idx, self.local, self.remote = idx, local, remote
        try:
            os.unlink(local)
        except FileNotFoundError:
            pass
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(local)
        self.sock.setblocking(False)
        self.connected = False
        self.next_try = 0.0
        self.queue = collections.deque()   # frames waiting for room
        self.held = None                   # (frame, deadline): reordered
        self.rx = self.tx = self.tx_lost = 0

    def try_connect(self, now):
        """Is REMOTE there (it appears when its QEMU starts)?  Frames go
        with sendto(), not over a connected socket: a connected datagram
        socket would refuse the frames of a QEMU at another path."""
        if self.connected or now < self.next_try:
            return self.connected
        if os.path.exists(self.remote):
            self.connected = True
        else:
            self.next_try = now + 0.05
        return self.connected

    def follow(self, addr, log):
        """A frame came from addr: that is where this port's VM is now."""
        if addr and addr != self.remote:
            log("port %d: its VM is at %s now (was %s)" % (
                self.idx, addr, self.remote))
            self.remote = addr
            self.connected = False
            return True
        return False


class Switch:
    def __init__(self, args):
        self.args = args
        self.ports = [Port(i, l, r) for i, (l, r) in enumerate(args.port)]
        self.by_fd = {p.sock.fileno(): p for p in self.ports}
        self.macs = {}
        self.rng = random.Random(args.seed)
        self.jrng = random.Random(args.seed + 1000003)
        self.delayed = []                  # heap of (due, n, port, frame, hold)
        self.last_due = {}                 # port: due time of its last
        self.delayed_n = 0
        self.c = collections.OrderedDict((k, 0) for k in (
            "frames_in", "frames_out", "flooded", "unicast", "roce_in",
            "selected", "dropped", "acks_dropped", "acks_kept", "cm_kept", "reordered", "reorder_timeouts",
            "jittered", "jitter_max_ms", "queued", "lost_no_peer", "lost_queue_full", "learned", "followed"))
        self.stop = False
        self.t0 = time.time()

    def log(self, msg):
        print("l2switch: %.3f %s" % (time.time() - self.t0, msg),
              file=sys.stderr, flush=True)

    # -- output ------------------------------------------------------------
    def _send_now(self, p, f):
        """Send or queue one frame; False if it was lost."""
        if not p.try_connect(time.monotonic()):
            self.c["lost_no_peer"] += 1
            p.tx_lost += 1
            return False
        if p.queue:
            return self._enqueue(p, f)
        try:
            p.sock.sendto(f, p.remote)
        except BlockingIOError:
            return self._enqueue(p, f)
        except OSError as e:
            if e.errno in (errno.ECONNREFUSED, errno.ENOENT, errno.ENOTCONN):
                # the QEMU went away (or was restarted): reconnect later
                p.connected = False
                self.c["lost_no_peer"] += 1
                p.tx_lost += 1
                return False
            if e.errno == errno.ENOBUFS:
                return self._enqueue(p, f)
            raise
        p.tx += 1
        self.c["frames_out"] += 1
        return True

    def _enqueue(self, p, f):
        if len(p.queue) >= MAX_QUEUE:
            self.c["lost_queue_full"] += 1
            p.tx_lost += 1
            return False
        p.queue.append(f)
        self.c["queued"] += 1
        return True

    def _flush_queue(self, p):
        while p.queue:
            try:
                p.sock.sendto(p.queue[0], p.remote)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                p.connected = False
                self.c["lost_no_peer"] += len(p.queue)
                p.tx_lost += len(p.queue)
                p.queue.clear()
                return
            p.queue.popleft()
            p.tx += 1
            self.c["frames_out"] += 1

    def send(self, p, f, hold=False):
        """Send f to port p; a frame held there goes right after it."""
        if hold and p.held is None:
            p.held = (f, time.monotonic() + self.args.hold_ms / 1000.0)
            return
        self._send_now(p, f)
        if p.held is not None:
            held, p.held = p.held[0], None
            self._send_now(p, held)

    # -- input -------------------------------------------------------------
    def frame_in(self, src, f):
        self.c["frames_in"] += 1
        src.rx += 1
        if len(f) < 14:
            return
        dst_mac, src_mac = f[0:6], f[6:12]
        if not src_mac[0] & 1 and self.macs.get(src_mac) is not src:
            if src_mac not in self.macs:
                self.c["learned"] += 1
                if self.args.verbose:
                    self.log("learned %s on port %d" % (mac(src_mac), src.idx))
            self.macs[src_mac] = src
        bth = roce_bth(f)
        roce = bth is not None
        if roce:
            self.c["roce_in"] += 1
        hold = False
        delay = 0.0
        if self.args.match == "all" or roce:
            if self.args.jitter_ms > 0:
                delay = self.jrng.random() * self.args.jitter_ms / 1000.0
            if self.args.drop > 0 or self.args.reorder > 0:
                self.c["selected"] += 1
                r = self.rng.random() * 100.0
                ack = roce and len(f) > bth and f[bth] in ACK_OPCODES
                if (r < self.args.drop and ack and
                        (self.args.keep_acks or src.idx in self.args.keep_acks_from)):
                    self.c["acks_kept"] += 1
                elif (r < self.args.drop and self.args.keep_cm and roce and
                        is_cm_mad(f, bth)):
                    self.c["cm_kept"] += 1
                    self.log("kept a CM MAD it would have dropped: %s" % describe(f))
                elif r < self.args.drop:
                    self.c["dropped"] += 1
                    if ack:
                        self.c["acks_dropped"] += 1
                    if roce and is_cm_mad(f, bth):
                        self.log("dropped a CM MAD: %s" % describe(f))
                    if self.args.verbose:
                        self.log("drop #%d port %d: %s" % (self.c["dropped"], src.idx, describe(f)))
                    return
                if r < self.args.drop + self.args.reorder:
                    hold = True
        out = None if dst_mac[0] & 1 else self.macs.get(dst_mac)
        if out is None:
            self.c["flooded"] += 1
            for p in self.ports:
                if p is not src:
                    self.send(p, f)
            return
        if out is src:
            return
        self.c["unicast"] += 1
        if delay > 0:
            self.delay(out, f, delay, hold)
            return
        if hold:
            if out.held is None:
                self.c["reordered"] += 1
                if self.args.verbose:
                    self.log("hold #%d port %d->%d: %s" % (self.c["reordered"], src.idx, out.idx, describe(f)))
            # else: one is held already: this one goes first, it second
        self.send(out, f, hold)

    def delay(self, p, f, secs, hold):
        """Send f to p secs from now, not before p's frames delayed before
        it (jitter in order); held then if hold."""
        self.c["jittered"] += 1
        ms = int(secs * 1000)
        if ms > self.c["jitter_max_ms"]:
            self.c["jitter_max_ms"] = ms
        self.delayed_n += 1
        due = time.monotonic() + secs
        if not self.args.jitter_reorders:
            due = max(due, self.last_due.get(p.idx, 0.0))
        self.last_due[p.idx] = due
        heapq.heappush(self.delayed, (due, self.delayed_n, p.idx, f, hold))

    def send_due(self, now, everything=False):
        while self.delayed and (everything or self.delayed[0][0] <= now):
            _, _, idx, f, hold = heapq.heappop(self.delayed)
            p = self.ports[idx]
            if hold and p.held is None:
                self.c["reordered"] += 1
            self.send(p, f, hold and not everything)

    def expire_held(self, now):
        for p in self.ports:
            if p.held is not None and now >= p.held[1]:
                f, p.held = p.held[0], None
                self.c["reorder_timeouts"] += 1
                self._send_now(p, f)

    # -- counters ----------------------------------------------------------
    def stats_text(self):
        lines = ["%s %d" % kv for kv in self.c.items()]
        for p in self.ports:
            lines.append("port%d_rx %d" % (p.idx, p.rx))
            lines.append("port%d_tx %d" % (p.idx, p.tx))
            lines.append("port%d_tx_lost %d" % (p.idx, p.tx_lost))
        lines.append("seconds %.1f" % (time.time() - self.t0))
        return "\n".join(lines) + "\n"

    def write_stats(self):
        if not self.args.stats:
            return
        tmp = self.args.stats + ".tmp"
        with open(tmp, "w") as fh:
            fh.write(self.stats_text())
        os.replace(tmp, self.args.stats)

    def run(self):
        want_stats = [False]
        signal.signal(signal.SIGUSR1, lambda *_: want_stats.__setitem__(0, True))

        def stop(*_):
            self.stop = True
        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        if self.args.ready:
            open(self.args.ready, "w").close()
        self.log("%d ports, drop %g%% reorder %g%% jitter 0-%g ms of %s frames%s, seed %d" % (
            len(self.ports), self.args.drop, self.args.reorder, self.args.jitter_ms,
            "RoCEv2 (UDP 4791)" if self.args.match == "roce" else "all",
            (" (ACKs never dropped)" if self.args.keep_acks else "") +
            (" (CM MADs never dropped)" if self.args.keep_cm else ""),
            self.args.seed))
        while not self.stop:
            now = time.monotonic()
            timeout = 0.2
            for p in self.ports:
                if p.held is not None:
                    timeout = min(timeout, max(0.0, p.held[1] - now))
            if self.delayed:
                timeout = min(timeout, max(0.0, self.delayed[0][0] - now))
            wr = [p.sock for p in self.ports if p.queue]
            try:
                r, w, _ = select.select(list(self.by_fd), wr, [], timeout)
            except InterruptedError:
                r, w = [], []
            for s in w:
                self._flush_queue(self.by_fd[s.fileno()])
            for fd in r:
                p = self.by_fd[fd]
                for _ in range(64):         # drain, but let others in
                    try:
                        f, addr = p.sock.recvfrom(65536)
                    except (BlockingIOError, InterruptedError):
                        break
                    except OSError:
                        break
                    if p.follow(addr, self.log):
                        self.c["followed"] += 1
                    self.frame_in(p, f)
            self.send_due(time.monotonic())
            self.expire_held(time.monotonic())
            if want_stats[0]:
                want_stats[0] = False
                self.write_stats()
        # send what is held or delayed: a frame kept past the end would be
        # a loss the counters do not show
        self.send_due(0, everything=True)
        for p in self.ports:
            if p.held is not None:
                f, p.held = p.held[0], None
                self._send_now(p, f)
        self.write_stats()
        self.log("exit: " + " ".join(
            "%s=%d" % kv for kv in self.c.items() if kv[0] in (
                "frames_in", "frames_out", "roce_in", "selected", "dropped", "acks_kept", "cm_kept",
                "reordered", "reorder_timeouts", "jittered", "lost_no_peer", "lost_queue_full")))
        for p in self.ports:
            try:
                os.unlink(p.local)
            except OSError:
                pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", nargs=2, action="append", metavar=("LOCAL", "REMOTE"),
                    required=True, help="a port: bind LOCAL, exchange frames with REMOTE")
    ap.add_argument("--drop", type=float, default=0.0, metavar="PCT")
    ap.add_argument("--reorder", type=float, default=0.0, metavar="PCT")
    ap.add_argument("--jitter-ms", type=float, default=0.0, metavar="MS",
                    help="delay each selected frame by a uniform random 0..MS ms")
    ap.add_argument("--jitter-reorders", action="store_true",
                    help="each frame its own jitter: frames overtake each other")
    ap.add_argument("--match", choices=("roce", "all"), default="roce")
    ap.add_argument("--keep-acks", action="store_true",
                    help="never drop RoCEv2 RC ACK/NAK and atomic ACK frames (they may still be reordered)")
    ap.add_argument("--keep-acks-from", type=int, action="append", default=[],
                    metavar="PORT",
                    help="never drop the ACK frames that come in on port PORT (repeatable)")
    ap.add_argument("--keep-cm", action="store_true",
                    help="never drop the CM's MADs (UD SEND to QP 1)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--hold-ms", type=float, default=50.0,
                    help="longest a reordered frame waits for a next one (default 50)")
    ap.add_argument("--stats", metavar="FILE")
    ap.add_argument("--ready", metavar="FILE")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    if not (0 <= args.drop <= 100 and 0 <= args.reorder <= 100 and args.drop + args.reorder <= 100):
        ap.error("--drop and --reorder are percentages (their sum at most 100)")
    if not 0 <= args.jitter_ms <= 10000:
        ap.error("--jitter-ms is 0 to 10000 ms")
    if len(args.port) < 2:
        ap.error("at least two ports")
    Switch(args).run()


if __name__ == "__main__":
    main()
