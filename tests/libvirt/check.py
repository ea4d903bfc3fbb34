#!/usr/bin/env python3
"""Host checks of tests/libvirt/run.sh (python3 stdlib only).

    check.py run RUNDIR MODE MOVER    the logs of one run (MODE coresident
                                      or roce; VM MOVER was migrated; MODE
                                      mgmt with MOVER -1: no migration)
    check.py doc DOC TEMPLATE...      DOC shows each TEMPLATE verbatim

run: prints what it found, one line each, and exits 1 with the failures
joined on the last line if any check failed.  RUNDIR/vmN/ holds
console.log, migrate-TAG.txt and qmp-TAG.{json,host} (run.sh writes them;
tests/libvirt/guest.sh asks for tags pre, mig, post and end).
"""
import json
import os
import re
import sys

errs = []


def err(msg):
    errs.append(msg)
    print("FAILED: " + msg)


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return None


def kv(path):
    """migrate-TAG.txt: 'key value...' lines -> dict"""
    d = {}
    for line in (read(path) or "").splitlines():
        k, _, v = line.partition(" ")
        d[k] = v
    return d


def query(rd, vm, tag):
    """(host, device rdma0's query-pvrdma entry) or (host, None) with an
    error recorded"""
    base = os.path.join(rd, "vm%d" % vm, "qmp-" + tag)
    host = (read(base + ".host") or "?").strip()
    text = read(base + ".json")
    if not text:
        err("vm%d: no query-pvrdma answer for '%s' (%s)"
            % (vm, tag, (read(base + ".err") or "not asked").strip()))
        return host, None
    try:
        ans = json.loads(text)
    except ValueError as e:
        err("vm%d: query-pvrdma '%s' is not JSON: %s" % (vm, tag, e))
        return host, None
    devs = ans.get("return") if isinstance(ans, dict) else None
    if not isinstance(devs, list):
        err("vm%d: query-pvrdma '%s' returned no list: %s" % (vm, tag, text.strip()[:200]))
        return host, None
    for d in devs:
        if d.get("id") == "rdma0":
            return host, d
    err("vm%d: query-pvrdma '%s': no device rdma0 in %s" % (vm, tag, text.strip()[:200]))
    return host, None


def rc_qps(dev, path):
    return [q for q in dev.get("qps", []) if q.get("type") == "rc" and q.get("path") == path]


def describe(dev):
    return "transports %s; qps %s" % (
        ",".join("%s%s" % (t.get("type"), "(peers %s)" % t["peers"] if "peers" in t else "")
                 for t in dev.get("transports", [])),
        ",".join("%s:%s:%s:%s->%s" % (q.get("qpn"), q.get("type"), q.get("state"), q.get("path"),
                                      q.get("peer-qpn", "-"))
                 for q in dev.get("qps", [])) or "none")


def check_run(rd, mode, mover):
    stay = 1 - mover
    cons = {}
    for vm in (0, 1):
        cons[vm] = read(os.path.join(rd, "vm%d" % vm, "console.log")) or ""
        # both checker runs ended ok on both sides (_vc_judge's log line)
        for run in ("verbs-count", "verbs-mig"):
            m = re.search(r"\] %s: (verbs-check: ok [^\r\n]*)" % run, cons[vm])
            if m:
                print("vm%d %s: %s" % (vm, run, m.group(1)))
            else:
                err("vm%d: no '%s: verbs-check: ok' line on the console" % (vm, run))

    # the migration: virsh said yes, the domain runs on B and is gone from A
    mig = kv(os.path.join(rd, "vm%d" % mover, "migrate-mig.txt"))
    if not mig:
        err("vm%d: no migrate-mig.txt: the host did not migrate it" % mover)
    else:
        print("vm%d migration: %s, virsh exit %s, %s s, %s; on B %s, on A %s"
              % (mover, mig.get("status"), mig.get("virsh-rc"), mig.get("secs"),
                 mig.get("from"), mig.get("state-on-B"), mig.get("state-on-A")))
        if mig.get("status") != "completed" or mig.get("virsh-rc") != "0":
            err("virsh migrate: %s" % mig.get("status"))
        if mig.get("from") != "A to B":
            err("the migration went %s, not A to B" % mig.get("from"))
        if mig.get("state-on-B") != "running":
            err("after the migration the domain is '%s' on host B, not running" % mig.get("state-on-B"))
        if mig.get("state-on-A") != "absent":
            err("after the migration host A still has the domain ('%s')" % mig.get("state-on-A"))
        # the wire turned to the destination (udp-relay.py): its NIC, bound
        # at a port of its own on host B, took over the VM's traffic
        relay = read(os.path.join(rd, "relay.log")) or ""
        follow = "port%d follows 127.0.0.1:%s " % (mover, mig.get("local-port"))
        m = re.search(r"\[([0-9.]+)\] " + re.escape(follow), relay)
        if m:
            print("relay: port%d turned to the destination's 127.0.0.1:%s at %s s"
                  % (mover, mig.get("local-port"), m.group(1)))
        else:
            err("relay.log: no '%s': the destination's NIC never sent a frame" % follow.strip())
        # the checker ran on past the migration's end: its "rc" line comes
        # after the console's size at that moment
        at = int(mig.get("console-bytes", "-1") or -1)
        pos = cons[mover].find("verbs-mig: rc 0")
        if pos < 0:
            err("vm%d: no 'verbs-mig: rc 0' on the console" % mover)
        elif at < 0:
            err("migrate-mig.txt has no console-bytes")
        elif pos < at:
            err("vm%d: the checker had finished before the migration ended" % mover)
        else:
            print("vm%d: 'verbs-mig: rc 0' came after the migration's end (console byte %d, the "
                  "console had %d bytes then)" % (mover, pos, at))
    if os.path.exists(os.path.join(rd, "vm%d" % stay, "migrate-mig.txt")):
        err("vm%d was migrated too" % stay)

    # before the migration: both on host A, one RC QP each on the path of
    # the mode, connected to each other
    pre = {}
    for vm in (0, 1):
        host, dev = query(rd, vm, "pre")
        if dev is None:
            continue
        print("vm%d pre (host %s): active %s port-active %s; %s"
              % (vm, host, dev.get("active"), dev.get("port-active"), describe(dev)))
        if host != "A":
            err("vm%d: the 'pre' query went to host %s, not A" % (vm, host))
        if dev.get("active") is not True or dev.get("port-active") is not True:
            err("vm%d: device not active (active %s, port-active %s)"
                % (vm, dev.get("active"), dev.get("port-active")))
        qps = rc_qps(dev, mode)
        if not qps:
            err("vm%d: no RC QP on path %s while the checker runs (%s)" % (vm, mode, describe(dev)))
        pre[vm] = qps
    pair = None
    if 0 in pre and 1 in pre:
        for a in pre[0]:
            for b in pre[1]:
                if a.get("peer-qpn") == b.get("qpn") and b.get("peer-qpn") == a.get("qpn"):
                    pair = (a, b)
        if pair is None:
            err("no RC QP of vm0 and RC QP of vm1 on path %s name each other as peer" % mode)
        else:
            print("connected on %s: vm0 QP %d <-> vm1 QP %d" % (mode, pair[0]["qpn"], pair[1]["qpn"]))

    # after the migration, in the QEMU on host B: the same QP, same path
    host, dev = query(rd, mover, "post")
    if dev is not None:
        print("vm%d post (host %s): %s" % (mover, host, describe(dev)))
        if host != "B":
            err("vm%d: the 'post' query went to host %s, not B" % (mover, host))
        if pair is not None:
            want = pair[mover]["qpn"]
            if not [q for q in rc_qps(dev, mode) if q.get("qpn") == want]:
                err("vm%d on host B: QP %d is not an RC QP on path %s (%s)"
                    % (mover, want, mode, describe(dev)))
    host, dev = query(rd, stay, "post")
    if dev is not None:
        print("vm%d post (host %s): %s" % (stay, host, describe(dev)))
        if pair is not None:
            want = pair[stay]["qpn"]
            if not [q for q in rc_qps(dev, mode) if q.get("qpn") == want]:
                err("vm%d: after the migration QP %d is not an RC QP on path %s (%s)"
                    % (stay, want, mode, describe(dev)))

    # at the end: host B's device is still on that transport (co-resident:
    # it joined the rendezvous directory and has its peer)
    for vm in (0, 1):
        host, dev = query(rd, vm, "end")
        if dev is None:
            continue
        print("vm%d end (host %s): %s" % (vm, host, describe(dev)))
        want_host = "B" if vm == mover else "A"
        if host != want_host:
            err("vm%d: the 'end' query went to host %s, not %s" % (vm, host, want_host))
        ts = [t for t in dev.get("transports", []) if t.get("type") == mode]
        if not ts:
            err("vm%d at the end: no %s transport (%s)" % (vm, mode, describe(dev)))
        elif mode == "coresident" and not ts[0].get("peers"):
            err("vm%d at the end: the co-resident transport has no peer (%s)" % (vm, describe(dev)))


def check_mgmt(rd):
    """The mgmt run: the checker ran over the connection management gave
    (RoCEv2 off, no rendezvous), each device had its peer at the end, the
    QEMUs ran as two users and neither could open the other's memory."""
    for vm in (0, 1):
        cons = read(os.path.join(rd, "vm%d" % vm, "console.log")) or ""
        m = re.search(r"\] verbs-count: (verbs-check: ok [^\r\n]*)", cons)
        if m:
            print("vm%d verbs-count: %s" % (vm, m.group(1)))
        else:
            err("vm%d: no 'verbs-count: verbs-check: ok' line on the console" % vm)
    conn = read(os.path.join(rd, "connect.log")) or ""
    if not conn.rstrip().endswith("connected"):
        err("connect.log does not end with 'connected': %s" % conn.strip()[-200:])
    else:
        print("management connected the two QEMUs (getfd with --pass-fds, "
              "x-pvrdma-peer-add on each)")
    for vm in (0, 1):
        host, dev = query(rd, vm, "end")
        if dev is None:
            continue
        print("vm%d end (host %s): %s" % (vm, host, describe(dev)))
        want = "A" if vm == 0 else "C"
        if host != want:
            err("vm%d: the 'end' query went to host %s, not %s" % (vm, host, want))
        types = [t.get("type") for t in dev.get("transports", [])]
        cr = [t for t in dev.get("transports", []) if t.get("type") == "coresident"]
        if not cr or cr[0].get("peers") != 1:
            err("vm%d at the end: the co-resident transport does not have "
                "its one peer (%s)" % (vm, describe(dev)))
        if "roce" in types:
            err("vm%d: a RoCEv2 transport (roce=off was asked): %s" % (vm, types))
    c = kv(os.path.join(rd, "confine.txt"))
    if not c:
        err("no confine.txt")
        return
    uids = {}
    for line in (read(os.path.join(rd, "confine.txt")) or "").splitlines():
        f = line.split()
        if len(f) == 3 and f[0] == "uid":
            uids[f[1]] = f[2]
    if uids.get("vm0") in (None, "none") or uids.get("vm1") in (None, "none"):
        err("the QEMUs' uids are unknown (%s)" % uids)
        return
    for vm in ("vm0", "vm1"):
        if c.get(vm + "-own") != "opened":
            err("%s's user cannot open its own QEMU's /proc/PID/mem (%s): "
                "the check cannot tell" % (vm, c.get(vm + "-own")))
    if uids["vm0"] == uids["vm1"]:
        print("both QEMUs run as uid %s (not root: one user for both hosts); "
              "the other-QEMU checks do not apply" % uids["vm0"])
        return
    print("the QEMUs run as uids %s and %s" % (uids["vm0"], uids["vm1"]))
    for vm in ("vm0", "vm1"):
        if not c.get(vm + "-other", "").startswith("refused"):
            err("%s's user opened the other QEMU's /proc/PID/mem (%s)"
                % (vm, c.get(vm + "-other")))


def check_doc(doc, templates):
    text = read(doc)
    if text is None:
        err("no %s" % doc)
        return
    lines = text.splitlines()
    for t in templates:
        tl = [("  " + l) if l else "" for l in (read(t) or "").splitlines()]
        if not tl:
            err("empty template %s" % t)
            continue
        best = (-1, 0)
        for i in range(len(lines)):
            n = 0
            while n < len(tl) and i + n < len(lines) and lines[i + n] == tl[n]:
                n += 1
            if n > best[1]:
                best = (i, n)
        if best[1] == len(tl):
            print("%s: in %s at line %d" % (os.path.basename(t), os.path.basename(doc), best[0] + 1))
        elif best[0] < 0:
            err("%s does not show %s (indented by two spaces in a code block)"
                % (os.path.basename(doc), os.path.basename(t)))
        else:
            err("%s line %d differs from %s line %d: %r"
                % (os.path.basename(doc), best[0] + best[1] + 1, os.path.basename(t),
                   best[1] + 1, tl[best[1]].strip()))


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "run" and sys.argv[3] == "mgmt":
        check_mgmt(sys.argv[2])
    elif len(sys.argv) == 5 and sys.argv[1] == "run":
        check_run(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif len(sys.argv) >= 4 and sys.argv[1] == "doc":
        check_doc(sys.argv[2], sys.argv[3:])
    else:
        sys.stderr.write(__doc__)
        return 2
    if errs:
        print("; ".join(errs))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
