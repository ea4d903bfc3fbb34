#!/usr/bin/env python3
"""Ask a running QEMU over its QMP unix socket (python3 stdlib only).

    qmp.py SOCKET pvrdma [QOM-PATH]      the pvrdma device's counters and QPs
    qmp.py SOCKET qom-get QOM-PATH PROP  one property (strings as they are)
    qmp.py SOCKET hmp COMMAND-LINE       an HMP command's text ('info pvrdma')
    qmp.py SOCKET savevm FILE TAG        an internal snapshot TAG, in the qcow2
                                         image FILE (made and attached on the
                                         first call: node pvrdma-snap); prints
                                         "savevm-ms T"
    qmp.py SOCKET loadvm TAG             back to snapshot TAG; "loadvm-ms T"
    qmp.py SOCKET migrate URI [postcopy] migrate, wait until it ends; prints
                                         status, total and downtime (ms);
                                         postcopy: with postcopy-ram (the
                                         destination must have it set), the
                                         switch to postcopy asked at once
    qmp.py SOCKET connect-peer SOCKET2   be management for two co-resident
                                         devices (coresident=on): a
                                         socketpair, one end to each QEMU
                                         (getfd, x-pvrdma-peer-add); waits
                                         for both QMP sockets to appear
    qmp.py SOCKET JSON                   any command, e.g. '{"execute":"query-status"}'

"pvrdma" (QOM-PATH default /machine/peripheral/rdma0, the device run-vm.sh
adds with id=rdma0) prints "peers N" (its co-resident transport's, from
query-pvrdma) and one "x-roce-NAME N" line per
counter, then the lines of x-query-pvrdma-qps ("qp N type ..." per QP,
"transport ..." per transport).  Exit status 1 with a message on
stderr if QEMU does not answer within --timeout seconds (default 5) or
the command fails.  "migrate" waits up to --timeout seconds for the
migration to end and exits 1 unless it completed.
"""
import json
import socket
import sys
import time


class QMPError(Exception):
    pass


def snapshot_disk(q, path):
    """The qcow2 node savevm writes the VM state to: the image FILE, made
    (blockdev-create) and attached the first time."""
    nodes = [n["node-name"] for n in q.cmd("query-named-block-nodes")]
    if "pvrdma-snap" in nodes:
        return
    open(path, "wb").close()
    q.cmd("blockdev-add", driver="file", filename=path,
          **{"node-name": "pvrdma-snap-file"})
    q.cmd("blockdev-create", **{"job-id": "pvrdma-snap-create",
                                "options": {"driver": "qcow2",
                                            "file": "pvrdma-snap-file",
                                            "size": 1 << 20}})
    while True:
        jobs = [j for j in q.cmd("query-jobs") if j["id"] == "pvrdma-snap-create"]
        if not jobs:
            raise QMPError("blockdev-create: the job is gone")
        if jobs[0]["status"] == "concluded":
            err = jobs[0].get("error")
            q.cmd("job-dismiss", id="pvrdma-snap-create")
            if err:
                raise QMPError("blockdev-create: %s" % err)
            break
        time.sleep(0.05)
    q.cmd("blockdev-add", driver="qcow2", file="pvrdma-snap-file",
          **{"node-name": "pvrdma-snap"})


def hmp(q, line):
    """An HMP command whose success prints nothing (savevm, loadvm)."""
    t = time.monotonic()
    out = q.cmd("human-monitor-command", **{"command-line": line})
    if out.strip():
        raise QMPError("%s: %s" % (line, out.strip()))
    return (time.monotonic() - t) * 1000


class QMP:
    def __init__(self, path, timeout, wait=False):
        self.deadline = time.monotonic() + timeout
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        while True:
            try:
                self.sock.connect(path)
                break
            except (FileNotFoundError, ConnectionRefusedError):
                # wait: a QEMU that is starting has no socket yet
                if not wait or time.monotonic() > self.deadline:
                    raise
                time.sleep(0.05)
        self.buf = b""
        self._read()                                   # greeting
        self.cmd("qmp_capabilities")

    def _read(self):
        while True:
            nl = self.buf.find(b"\n")
            if nl >= 0:
                line, self.buf = self.buf[:nl], self.buf[nl + 1:]
                if line.strip():
                    return json.loads(line)
                continue
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise QMPError("no answer in time")
            self.sock.settimeout(left)
            data = self.sock.recv(65536)
            if not data:
                raise QMPError("QEMU closed the QMP connection")
            self.buf += data

    def cmd(self, name, **args):
        msg = {"execute": name}
        if args:
            msg["arguments"] = args
        return self.raw(msg)

    def raw(self, msg, fd=None):
        data = json.dumps(msg).encode() + b"\n"
        if fd is None:
            self.sock.sendall(data)
        else:
            socket.send_fds(self.sock, [data], [fd])    # SCM_RIGHTS, getfd
        while True:
            r = self._read()
            if "return" in r:
                return r["return"]
            if "error" in r:
                raise QMPError("%s: %s" % (msg.get("execute"), r["error"].get("desc", r["error"])))
            # an event: skip


def main(argv):
    timeout = 5.0
    if len(argv) > 2 and argv[1] == "--timeout":
        timeout = float(argv[2])
        argv = argv[:1] + argv[3:]
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    path, what = argv[1], argv[2]
    try:
        q = QMP(path, timeout, wait=(what == "connect-peer"))
        if what == "pvrdma":
            dev = argv[3] if len(argv) > 3 else "/machine/peripheral/rdma0"
            props = [p["name"] for p in q.cmd("qom-list", path=dev)]
            out = []
            # the co-resident transport's peers, as query-pvrdma says
            for d in q.cmd("query-pvrdma"):
                if d.get("qom-path") != dev:
                    continue
                for t in d.get("transports", []):
                    if t.get("type") == "coresident":
                        out.append("peers %s" % t.get("peers", 0))
            for p in sorted(props):
                if p.startswith("x-roce-") or p.startswith("x-iothread-"):
                    out.append("%s %s" % (p, q.cmd("qom-get", path=dev, property=p)))
            qps = q.cmd("x-query-pvrdma-qps",
                        id=dev)["human-readable-text"]
            out.extend(l for l in qps.splitlines() if l.strip())
            print("\n".join(out))
        elif what == "migrate":
            postcopy = argv[4:] == ["postcopy"]
            # also off: a QEMU that came in by postcopy has it on
            q.cmd("migrate-set-capabilities", capabilities=[
                {"capability": "postcopy-ram", "state": postcopy}])
            q.cmd("migrate", uri=argv[3])
            asked = not postcopy
            while True:
                r = q.cmd("query-migrate")
                st = r.get("status", "none")
                if not asked and st == "active":
                    q.cmd("migrate-start-postcopy")
                    asked = True
                if st not in ("setup", "active", "device", "none",
                              "pre-switchover", "wait-unplug",
                              "postcopy-active"):
                    break
                time.sleep(0.05)
            print("status %s total-ms %s downtime-ms %s%s%s" % (
                st, r.get("total-time", "?"), r.get("downtime", "?"),
                # pages the destination asked for when it touched them
                " postcopy-requests %s" % r.get("ram", {}).get(
                    "postcopy-requests", "?") if postcopy else "",
                " error %s" % r["error-desc"] if "error-desc" in r else ""))
            if st != "completed":
                return 1
        elif what == "connect-peer" and len(argv) == 4:
            qs = [q, QMP(argv[3], timeout, wait=True)]
            ends = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            for k in (0, 1):
                other = argv[3] if k == 0 else path     # for its messages
                qs[k].raw({"execute": "getfd",
                           "arguments": {"fdname": "pvrdma-peer"}},
                          fd=ends[k].fileno())
                qs[k].raw({"execute": "x-pvrdma-peer-add",
                           "arguments": {"fd": "pvrdma-peer", "name": other}})
                ends[k].close()
            print("connected")
        elif what == "savevm" and len(argv) == 5:
            snapshot_disk(q, argv[3])
            print("savevm-ms %.0f" % hmp(q, "savevm " + argv[4]))
        elif what == "loadvm" and len(argv) == 4:
            print("loadvm-ms %.0f" % hmp(q, "loadvm " + argv[3]))
        elif what in ("savevm", "loadvm"):
            sys.stderr.write("savevm needs FILE TAG, loadvm TAG\n")
            return 2
        elif what == "hmp" and len(argv) == 4:
            sys.stdout.write(q.cmd("human-monitor-command",
                                   **{"command-line": argv[3]}))
        elif what == "qom-get":
            if len(argv) != 5:
                sys.stderr.write("qom-get needs QOM-PATH PROP\n")
                return 2
            r = q.cmd("qom-get", path=argv[3], property=argv[4])
            print(r if isinstance(r, str) else json.dumps(r))
        else:
            print(json.dumps(q.raw(json.loads(what)), indent=1))
    except (OSError, QMPError, ValueError) as e:
        sys.stderr.write("qmp.py: %s: %s\n" % (path, e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
