#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Turn this repository into a patch series for QEMU.

    scripts/patch-series.py [--base DIR] [--out DIR] [--work DIR]

--base: a git repository of the QEMU source we build (Debian's 10.0.x,
i.e. upstream v10.0.x without the firmware blobs), its HEAD the commit
the series applies to; scripts/series-check.sh makes one from Debian's
orig tarball (build/series/base).  --work (default build/series/work) is
cloned from it and gets one commit per patch, in the order of STEPS
below; --out (default build/series/patches) gets `git format-patch
--cover-letter` of them.

Each step names the files it adds, with their paths in this repository
(hw/rdma, backend -> hw/rdma/backend, include, qapi, tests/qtest, docs),
and the files of QEMU's own it changes, as the hunks of
patches/qemu-hooks.patch (the build's hook patch) and
patches/series-extra.patch (what only the series needs: the docs'
tables of contents, MAINTAINERS) for those files.  hw/rdma/meson.build
and hw/rdma/trace-events are cut down to the files present at each step
(a missing file's name is taken out of its meson statement, and a
statement left naming none is left out; a trace-events section is kept
when a file its heading names is present, else only the events a present
file calls), so every commit builds (scripts/series-check.sh checks
that).  The qtest programs (pvrdma-test.c, pvrdma-hostile-test.c, the
headers that declare their topics, and our part of tests/qtest/meson.build)
are cut down to the test topics present, so that each topic can come in
a patch of its own.  At the last step every cut file must be whole.  A
file of those directories that no step names is an error: the series
must be the whole device.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

TOP = os.path.normpath(os.path.join(os.path.dirname(__file__), '..'))

# repository directory -> directory in QEMU's tree
TREE = [('backend/', 'hw/rdma/backend/'), ('hw/rdma/', 'hw/rdma/'),
        ('include/', 'include/'), ('qapi/', 'qapi/'),
        ('tests/qtest/', 'tests/qtest/'), ('docs/', 'docs/')]
# files cut down to each step instead of copied: the build's lists of
# files and trace events, and the qtest programs' lists of topics
GENERATED = {'hw/rdma/meson.build', 'hw/rdma/trace-events',
             'tests/qtest/pvrdma-test.c', 'tests/qtest/pvrdma/framework.h',
             'tests/qtest/pvrdma-hostile-test.c',
             'tests/qtest/pvrdma/hostile.h'}
# files of QEMU's that a hook changes and that are cut down to each step
# from the step that applies the hook on (cut_qtest_meson below)
HOOK_CUTS = {'tests/qtest/meson.build'}

CORE_WHY = """\
The device model is split as hw/net/igb is: a core that knows the
guest ABI and nothing of QOM (hw/rdma/core/), the transports that
carry the guest's verbs (hw/rdma/backend/), and thin PCI/QOM glue
(hw/rdma/pvrdma.c and pvrdma_dev_*.c), added last.  The core reaches
QEMU only through the PvrdmaHostOps its owner hands it (guest memory,
interrupts, timers, tracing), so it also builds and is unit-tested
outside QEMU.
"""

STEPS = [
    dict(subject='include/hw/rdma: add the PVRDMA device ABI',
         files=['include/hw/rdma/pvrdma_abi.h',
                'include/hw/rdma/pvrdma_abi_cmd.h'],
         body="""\
VMware's paravirtual RDMA HCA (PCI 15ad:0820) is driven by Linux's
vmw_pvrdma driver and rdma-core's libvmw_pvrdma provider.  These headers
describe the device side of their ABI, written from the driver and the
provider: the BAR 1 registers, the device shared region (DSR), the
command channel's requests and responses, the ring state pages, work
requests and completions, and the UAR doorbells.  Only ABI facts, no
code.  ABI version 20, the current Linux driver's; 17 to 19 are
accepted by the device added later in this series.

QEMU's previous pvrdma (removed in 9.1) used the driver's headers,
imported into include/standard-headers; these are new headers of the
device's own, the sizes of the shared structures checked at build time
(_Static_assert)."""),
    dict(subject='hw/rdma: add the PVRDMA core: rings, tables, guest memory',
         files=['include/hw/rdma/pvrdma_core.h',
                'include/hw/rdma/pvrdma_transport.h',
                'include/hw/rdma/pvrdma_transport_calls.h',
                'hw/rdma/core/pvrdma_int.h', 'hw/rdma/Kconfig',
                'hw/rdma/meson.build', 'hw/rdma/trace-events',
                'hw/rdma/core/pvrdma_ring.c', 'hw/rdma/core/pvrdma_table.c',
                'hw/rdma/core/pvrdma_mem.c', 'hw/rdma/core/pvrdma_gid.c',
                'hw/rdma/core/pvrdma_sched.c', 'hw/rdma/core/pvrdma_stream.c',
                'hw/rdma/core/pvrdma_event.c',
                'hw/rdma/core/pvrdma_report.c'],
         hooks=['hw/Kconfig', 'hw/meson.build', 'meson.build', 'Kconfig.host'],
         body=CORE_WHY + """
This first part is what everything else stands on:
- pvrdma_ring.c: the driver's rings (producer/consumer indexes with a
  wrap bit), every index the guest writes checked once, in one place;
- pvrdma_table.c: handle tables for PDs, MRs, CQs, SRQs and QPs, every
  handle the guest names checked on use, handed out next-fit so that a
  freed handle is not reused at once;
- pvrdma_mem.c: guest page directories and scatter/gather through the
  owner's DMA hooks, every address, length and page count checked;
- pvrdma_gid.c: the port's GID table;
- pvrdma_sched.c: the core's run list and timer (the data path runs in
  the main loop in bounded passes; a doorbell queues work, or does a
  bounded amount of it);
- pvrdma_stream.c: the byte stream the migration state is written to;
- pvrdma_event.c: completion and async event queues, interrupts,
  completions written in batches with one notification per batch.

CONFIG_PVRDMA (default on where PCI devices are) builds the core from
here on, so that each step of the series compiles; the device that uses
it comes later in the series.  It depends on LINUX (memfd seals,
SO_PEERCRED, accept4, getrandom) and on HOST_LITTLE_ENDIAN, a new proxy
symbol in Kconfig.host set by meson.build: the guest's structures and
the co-resident peers' messages are read in host byte order."""),
    dict(subject='hw/rdma: PVRDMA verbs objects: PD, MR, CQ, SRQ, QP',
         files=['hw/rdma/core/pvrdma_pd.c', 'hw/rdma/core/pvrdma_mr.c',
                'hw/rdma/core/pvrdma_cq.c', 'hw/rdma/core/pvrdma_srq.c',
                'hw/rdma/core/pvrdma_qp.c', 'hw/rdma/core/pvrdma_queue.c',
                'hw/rdma/core/pvrdma_transport.c',
                'hw/rdma/core/pvrdma_info.c',
                'include/hw/rdma/pvrdma_info.h'],
         body="""\
The objects the guest creates through the command channel: protection
domains, memory regions (DMA MRs, user MRs with a page directory, fast
registration MRs), completion queues, shared receive queues and queue
pairs with the RC/UC/UD/GSI state machine of the InfiniBand
specification (the transitions and attribute masks the driver may ask
for; anything else gets an error status).  pvrdma_queue.c holds the
device's limits and counters.

pvrdma_transport.c is the one interface behind which transports carry a
QP's work (include/hw/rdma/pvrdma_transport.h): each QP is attached to
one transport, chosen when it connects, and may move to another one.
pvrdma_info.c takes a typed snapshot of the QPs and transports for the
monitor commands added later in the series."""),
    dict(subject='hw/rdma: PVRDMA data path: requester, responder, completer',
         files=['hw/rdma/core/pvrdma_comp.c', 'hw/rdma/core/pvrdma_req.c',
                'hw/rdma/core/pvrdma_resp.c', 'hw/rdma/core/pvrdma_inject.c'],
         body="""\
The data path, shaped as Linux's soft-RoCE (drivers/infiniband/sw/rxe):
- pvrdma_req.c, the requester: takes the send queue's work requests
  (SEND, SEND with immediate or invalidate, RDMA WRITE with or without
  immediate, RDMA READ, atomics, fast registration, local invalidation)
  and hands them to the QP's transport;
- pvrdma_resp.c, the responder: places what a transport brings into
  receive buffers or checked memory regions and answers READs and
  atomics;
- pvrdma_comp.c, the completer: writes work completions, with error
  statuses for what the guest got wrong;
- pvrdma_inject.c: faults and events injected on purpose (the port,
  async events, command errors, late or missing responses, error
  completions), for testing guest drivers; the monitor command that
  asks for them comes with the other monitor commands."""),
    dict(subject='hw/rdma: PVRDMA command channel and device registers',
         files=['hw/rdma/core/pvrdma_cmd.c', 'hw/rdma/core/pvrdma_init.c',
                'hw/rdma/core/pvrdma_regs.c', 'hw/rdma/core/pvrdma_dp.c',
                'hw/rdma/core/pvrdma_uar.c'],
         body="""\
The device shared region (DSR) and its command channel: the driver
writes a request into the command slot page, rings the REQUEST
register and waits for the response and its interrupt.  pvrdma_cmd.c
decodes every request of ABI versions 17 to 20 (query port, GIDs, PD,
MR, CQ, SRQ and QP commands, ...), each field checked, and answers
unknown or malformed ones with an error in the response and the ERR
register.  pvrdma_init.c activates the DSR (rings, async and CQ
notification rings) and resets the device; pvrdma_regs.c is BAR 1.
pvrdma_dp.c and pvrdma_uar.c: the UAR doorbells (QP send/receive, CQ
arm and poll, SRQ), which queue work for the run loop (a send doorbell
may start up to 16 co-resident sends itself: a message, no copy); the
run loop holds commands back while a fence answers (pvrdma_cmd.c)."""),
    dict(subject='hw/rdma: PVRDMA migration state',
         files=['include/hw/rdma/pvrdma_mig.h',
                'hw/rdma/core/pvrdma_mig.c', 'hw/rdma/core/pvrdma_mig_load.c',
                'hw/rdma/core/pvrdma_mig_blob.c'],
         body="""\
The core's state as plain records (PvrdmaMigImage), which the device
migrates as VMState: saved after the core is quiesced, and loaded by
replaying the guest's commands with every value checked again as if the
guest had sent it: a migration stream is as hostile as a guest.  Each
transport adds what it needs (its QPs' sequence numbers) as a record
of its own (pvrdma_stream.c).  pvrdma_mig_blob.c writes and reads the
same records as one field, the stream of builds before VMState
(x-state-blob=on)."""),
    dict(subject='hw/rdma/backend: PVRDMA loopback transport',
         files=['include/hw/rdma/pvrdma_loopback.h',
                'hw/rdma/backend/loopback.c'],
         body="""\
The simplest transport: both QPs of a connection in the same device
(processes or kernel users of one VM).  A SEND or WRITE is one copy
from the requester's guest memory to the responder's."""),
    dict(subject='hw/rdma/backend: PVRDMA co-resident transport',
         files=['include/hw/rdma/pvrdma_coresident.h',
                'include/hw/rdma/pvrdma_coresident_wire.h',
                'hw/rdma/backend/coresident_int.h',
                'hw/rdma/backend/coresident.c',
                'hw/rdma/backend/coresident_data.c',
                'hw/rdma/backend/coresident_resp.c',
                'hw/rdma/backend/coresident_qp.c',
                'hw/rdma/backend/coresident_gid.c',
                'hw/rdma/backend/coresident_link.c',
                'hw/rdma/backend/coresident_peer.c',
                'hw/rdma/backend/coresident_ring.c'],
         body="""\
RDMA between VMs on one host with no RDMA device on the host: the QEMUs
meet in a rendezvous directory (the device's 'rendezvous' property),
exchange the file descriptors of their guest RAM (memory-backend-memfd
with share=on) over a unix socket, and carry each SEND, WRITE, READ or
atomic as one copy from one guest's memory into the other's, with
requests and answers on shared-memory rings.  Every address a peer
names is checked against the target's own memory regions.  A peer that
fails or stops reading is dropped without harm to the other; a peer
that migrates is paused and reconnected."""),
    dict(subject='hw/rdma/backend: PVRDMA RoCEv2 transport',
         files=['include/hw/rdma/pvrdma_roce.h',
                'include/hw/rdma/roce_wire.h',
                'hw/rdma/backend/roce_int.h',
                'hw/rdma/backend/roce_wire.c',
                'hw/rdma/backend/roce_net.c',
                'hw/rdma/backend/roce_req.c',
                'hw/rdma/backend/roce_resp.c',
                'hw/rdma/backend/roce_comp.c',
                'hw/rdma/backend/roce.c'],
         body="""\
Standard RoCEv2 (InfiniBand transport over UDP port 4791) on the
network of the vmxnet3 at function 0 of the device's slot, so that a
pvrdma guest talks to Linux soft-RoCE (rdma_rxe) and RoCE NICs on other
hosts.  Shaped as rxe: requester, responder and completer, PSN
sequencing, ACKs asked for every 32 packets and on a message's last,
retransmission on timeout and on sequence NAK, RNR NAK with its timer,
duplicate requests answered from the responder's resources, ICRC on
every packet.  Frames enter and leave
through the NIC's net client, so QEMU's network backends, filters and
dumps see them."""),
    dict(subject='hw/rdma/backend: PVRDMA host HCA transport',
         files=['include/hw/rdma/pvrdma_hostverbs.h',
                'include/hw/rdma/pvrdma_hostcm.h',
                'hw/rdma/backend/hostverbs_int.h',
                'hw/rdma/backend/hostverbs.c',
                'hw/rdma/backend/hostverbs_obj.c',
                'hw/rdma/backend/hostverbs_mr.c',
                'hw/rdma/backend/hostverbs-stub.c',
                'hw/rdma/backend/hostcm_int.h',
                'hw/rdma/backend/hostcm.c',
                'hw/rdma/backend/hostcm_mad.c',
                'hw/rdma/backend/hostcm-stub.c'],
         body="""\
With the device's 'ibdev' property the guest's verbs run on an RDMA
device of the host (a RoCE HCA or soft-RoCE) through libibverbs: each
guest PD, MR, CQ and QP has a host twin, guest memory regions are
registered in place (zero copy), and host completions are translated
back.  The guest's RDMA CM (connection management MADs on QP1) is
translated onto the host's librdmacm.  Without libibverbs or librdmacm
the stubs say so when 'ibdev' is set."""),
    dict(subject='qapi: add query-pvrdma, x-pvrdma-inject and PVRDMA events',
         files=['qapi/pvrdma.json', 'hw/rdma/pvrdma_dev.h',
                'hw/rdma/pvrdma_dev_qmp.c', 'hw/rdma/pvrdma_dev_qmp_stub.c',
                'hw/rdma/pvrdma_dev_hmp.c'],
         hooks=['qapi/meson.build', 'qapi/qapi-schema.json',
                'hmp-commands-info.hx', 'hmp-commands.hx',
                'include/monitor/hmp.h', 'monitor/monitor.c'],
         body="""\
query-pvrdma returns, for each pvrdma device, its QOM path, its
transports with their counters, and every queue pair with its type,
state, the path that carries it, its peer's GID and QP number and that
path's counters (packets, bytes, retransmissions, timeouts, RNR and
sequence NAKs, duplicates, drops).  'info pvrdma' prints the same.

Three events tell a management application what it may have to act on:
PVRDMA_PATH_CHANGED (a connected QP moved to another transport by
itself), PVRDMA_PORT_CHANGED (the port went down or up, following the
vmxnet3's link) and PVRDMA_PEER_LOST (a co-resident peer failed).  They
are rate limited to one a second per device, keyed by qom-path as
BLOCK_IO_ERROR is.

x-pvrdma-inject (unstable, with 'x_pvrdma_inject' in HMP) makes a
device fail on purpose for people testing guest drivers: the port goes
down, an async event about a chosen QP, CQ or SRQ, the next commands of
an opcode fail or are answered late or never, the next completions of a
QP carry an error; query-pvrdma lists what is pending and what fired.

The commands find devices by QOM type; the device itself is added by
the next patch.  Without CONFIG_PVRDMA query-pvrdma answers an empty
list and x-pvrdma-inject an error."""),
    dict(subject='hw/rdma: add the pvrdma PCI device',
         files=['hw/rdma/pvrdma.c', 'hw/rdma/pvrdma_dev_host.c',
                'hw/rdma/pvrdma_dev_irq.c',
                'hw/rdma/pvrdma_dev_mig.c', 'hw/rdma/pvrdma_dev_roce.c'],
         body="""\
-device pvrdma: the PCI function (15ad:0820) that the unmodified Linux
vmw_pvrdma driver binds to, at function 1 of a slot whose function 0 is
a vmxnet3 (the driver pairs them).  BAR 0 holds MSI-X, BAR 1 the
registers, BAR 2 the UAR doorbell pages.  It owns a core and gives it
guest memory, interrupts, timers and tracing; realize checks every
property and fails with a clear error instead of starting a device that
cannot work.

Properties: 'rendezvous' (the co-resident transport), 'ibdev', 'ibport',
'gid-index' and 'cm-listen' (the host HCA transport), 'roce' (the RoCEv2
transport on the vmxnet3's network, off by default), the device's limits
(max-qp, max-cq, ...).  x-query-pvrdma-qps, a debugging aid, lists the
QPs as text.  The port follows the vmxnet3's link.

Live migration, savevm/loadvm and postcopy keep QPs on the loopback and
co-resident transports and over RoCEv2; a QP on the host HCA holds
migration back (a migration blocker with the reason)."""),
    dict(subject='tests/qtest: add pvrdma tests',
         files=['tests/qtest/libqos/pvrdma.c', 'tests/qtest/libqos/pvrdma.h',
                'tests/qtest/pvrdma-test.c',
                'tests/qtest/pvrdma/framework.c',
                'tests/qtest/pvrdma/framework.h',
                'tests/qtest/pvrdma/device-tests.c',
                'tests/qtest/pvrdma/data-tests.c',
                'tests/qtest/pvrdma/migration-tests.c',
                'tests/qtest/pvrdma/coresident-tests.c',
                'tests/qtest/pvrdma/hca-tests.c',
                'tests/qtest/pvrdma/inject-tests.c',
                'tests/qtest/pvrdma-hostile-test.c',
                'tests/qtest/pvrdma/hostile.c',
                'tests/qtest/pvrdma/hostile.h',
                'tests/qtest/pvrdma/cve-tests.c',
                'tests/qtest/pvrdma/hostile-input-tests.c',
                'tests/qtest/pvrdma-qos-test.c'],
         hooks=['tests/qtest/meson.build', 'tests/qtest/libqos/meson.build'],
         body="""\
pvrdma-test drives the device as the driver does, from libqos/pvrdma.c:
DSR activation, every command, rings, doorbells and completions with
data compared byte for byte on the loopback transport, two QEMUs on the
co-resident transport, RoCEv2 between two devices over a socket
netdev, migration (live, of one of two co-resident devices, savevm,
postcopy, a background snapshot) and query-pvrdma/info pvrdma and the
events.  pvrdma-hostile-test is a guest that lies: out-of-range
indexes, handles, sizes, addresses, ring pointers, malformed commands
and migration streams; each must get an error status or an error
completion, never a crash or a hang."""),
    dict(subject='docs: add pvrdma user and design documentation',
         files=['docs/system/devices/pvrdma.rst',
                'docs/devel/pvrdma.rst',
                'docs/interop/pvrdma-coresident.rst'],
         hooks=['docs/system/device-emulation.rst',
                'docs/devel/index-internals.rst',
                'docs/interop/index.rst'],
         body="""\
docs/system/devices/pvrdma.rst: what the device is, its transports,
command lines for one VM, two VMs on one host (and who may trust whom),
RoCEv2 to soft-RoCE or a RoCE NIC and a host HCA, migration, libvirt,
the properties and monitor commands, and its limits.  docs/devel/pvrdma.rst: the
design (layers, the life of a send on each transport, threading, how
guest input is checked, migration).  docs/interop/pvrdma-coresident.rst:
the protocol two devices in two QEMU processes on one host speak
(messages, states, versions and features, who maps which memory)."""),
    dict(subject='MAINTAINERS: add pvrdma',
         files=[], hooks=['MAINTAINERS'],
         body="""\
hw/rdma/ with its transports, the QAPI schema, the qtests and the docs."""),
]


def run(cmd, cwd=None, **kw):
    return subprocess.run(cmd, cwd=cwd, check=True, **kw)


def hunks_by_file(patch_path):
    """{path in QEMU's tree: the patch's text for that file}."""
    out, cur, lines = {}, None, []
    with open(patch_path) as f:
        text = f.read().splitlines(keepends=True)
    i = 0
    while i < len(text):
        line = text[i]
        if line.startswith('--- ') and i + 1 < len(text) and \
                text[i + 1].startswith('+++ '):
            if cur:
                out[cur] = ''.join(lines)
            cur = text[i + 1][4:].strip().split('\t')[0]
            cur = cur[2:] if cur.startswith('b/') else cur
            lines = [line, text[i + 1]]
            i += 2
            continue
        if cur:
            lines.append(line)
        i += 1
    if cur:
        out[cur] = ''.join(lines)
    return out


def tree_path(repo_path):
    for src, dst in TREE:
        if repo_path.startswith(src):
            return dst + repo_path[len(src):]
    raise SystemExit('patch-series: %s is not in a directory of the series'
                     % repo_path)


def repo_path(tree):
    for src, dst in sorted(TREE, key=lambda t: -len(t[1])):
        if tree.startswith(dst):
            return src + tree[len(dst):]
    raise SystemExit('patch-series: no repository path for %s' % tree)


def all_files():
    """Every file of the series' directories in this repository."""
    out = set()
    for src, _ in TREE:
        for root, _, names in os.walk(os.path.join(TOP, src)):
            for n in names:
                if n.endswith(('.o', '~')):
                    continue
                out.add(os.path.relpath(os.path.join(root, n), TOP))
    return out


def meson_statements(text):
    """The file's top-level statements, each with the comment lines above
    it, as lists of lines."""
    stmts, cur, depth = [], [], 0
    for line in text.splitlines(keepends=True):
        cur.append(line)
        code = line.split('#', 1)[0]
        depth += code.count('(') + code.count('[') - code.count(')') \
            - code.count(']')
        if depth == 0 and code.strip():
            stmts.append(cur)
            cur = []
    if cur:
        stmts.append(cur)
    return stmts


FILE_RE = re.compile(r"'([\w./-]+\.c)'")
# a .c file a comment names ("# zlib: roce_wire.c's CRC-32")
COMMENT_FILE_RE = re.compile(r"([\w./-]+\.c)\b")


def drop_names(stmt, names):
    """stmt (a meson statement's text) without the quoted file names in
    names: a name on a line of its own loses the line, a name in a list
    with others loses its comma, a sole name leaves files()."""
    for n in names:
        q = re.escape("'%s'" % n)
        for pat in (r"\n[ \t]*%s,?[ \t]*(?=\n)" % q,   # its own line
                    r"%s,\s*" % q,                   # first of several
                    r",\s*%s" % q,                   # last of several
                    q):                              # the only one
            stmt, k = re.subn(pat, '', stmt, count=1)
            if k:
                break
    return stmt


def cut_meson(text, present):
    """hw/rdma/meson.build with only the files in present (tree paths
    relative to hw/rdma/): a missing file's name is taken out of its
    statement (its line, in a one-file-per-line list); a statement left
    naming no file goes, and so does an if_false: that names none; a
    statement that names no file but whose comment names .c files goes
    until one of them is present; a dependency() that no statement left
    uses goes too."""
    base = {os.path.basename(p) for p in present}
    out = []
    for st in meson_statements(text):
        body = ''.join(st)
        code = ''.join(line.split('#', 1)[0] for line in st)
        names = FILE_RE.findall(code)
        if not names:
            said = [m for line in st if line.lstrip().startswith('#')
                    for m in COMMENT_FILE_RE.findall(line)]
            if said and not any(os.path.basename(m) in base for m in said):
                continue
            out.append(body)
            continue
        missing = [n for n in names if n not in present]
        if len(missing) == len(names):
            continue
        if missing:
            body = drop_names(body, missing)
            body = re.sub(r",\s*if_false:\s*files\(\s*\)", '', body)
        out.append(body)
    # a dependency no kept statement uses waits for the step that does
    unused = []
    for i, body in enumerate(out):
        m = re.search(r'^(\w+)\s*=\s*dependency\(', body, re.M)
        if m and not any(re.search(r'\b%s\b' % m.group(1), o)
                         for j, o in enumerate(out) if j != i):
            unused.append(i)
    return ''.join(o for i, o in enumerate(out) if i not in unused)


def trace_users(present):
    """The trace events the present .c files of hw/rdma call."""
    used = set()
    for f in present:
        if f.startswith('hw/rdma/') and f.endswith('.c'):
            with open(os.path.join(TOP, repo_path(f))) as fh:
                used |= set(re.findall(r'\btrace_(pvrdma_\w+)\(', fh.read()))
    return used


def cut_trace(text, present, used=frozenset()):
    """hw/rdma/trace-events with the sections whose heading names a
    present file; of any other section, its heading and the events in
    used (those a present file calls: an event comes with its first
    user, when that is not the file its section is named after)."""
    out = []

    def flush(section, keep):
        if keep:
            out.extend(section)
            return
        head = []
        for line in section:
            if not line.startswith('#'):
                break
            head.append(line)
        events = [line for line in section[len(head):]
                  if re.match(r'^(\w+)\(', line) and
                  re.match(r'^(\w+)\(', line).group(1) in used]
        if events:
            out.extend(head + events + ['\n'])

    section, keep = [], True
    for line in text.splitlines(keepends=True):
        if line.startswith('# ') and '.c' in line and \
                not (section and section[-1].startswith('#')):
            flush(section, keep)
            section = []
            names = re.findall(r'([\w/*]+)\.c', line)
            keep = any(os.path.basename(n) + '.c' in present or
                       n + '.c' in present or
                       (n.endswith('*') and any(
                           p.startswith(n[:-1]) for p in present))
                       for n in names)
        section.append(line)
    flush(section, keep)
    # no blank lines piling up where sections went, none at the end
    return re.sub(r'\n{3,}', '\n\n', ''.join(out)).rstrip('\n') + '\n'


def cut_test_main(text, present):
    """A qtest program's main (pvrdma-test.c, pvrdma-hostile-test.c) and
    the header that declares its topics (framework.h, hostile.h) with the
    topics whose file, tests/qtest/pvrdma/TOPIC-tests.c, is present: a
    topic's tests are registered from the patch that adds them."""
    def topic_present(m):
        f = 'tests/qtest/pvrdma/%s-tests.c' % m.group(1).replace('_', '-')
        return f in present
    return ''.join(line for line in text.splitlines(keepends=True)
                   if not (re.match(r'^\s*(void\s+)?pvrdma_add_(\w+)_tests'
                                    r'\((void)?\);', line) and
                           not topic_present(re.match(
                               r'^\s*(?:void\s+)?pvrdma_add_(\w+)_tests',
                               line))))


def wrap_files(prefix, names, width=79):
    """prefix + "'a', 'b', ...)," wrapped under the first name."""
    items = ["'%s'," % n for n in names]
    items[-1] = items[-1][:-1] + '),'
    lines, cur, first = [], prefix, True
    for it in items:
        if first:
            cur, first = cur + it, False
        elif len(cur) + 1 + len(it) <= width:
            cur += ' ' + it
        else:
            lines.append(cur)
            cur = ' ' * len(prefix) + it
    lines.append(cur)
    return '\n'.join(lines) + '\n'


def cut_qtest_meson(text, present):
    """tests/qtest/meson.build (our hook applied) with the pvrdma qtest
    programs whose main file is present, each built from its present
    files, and the qos test once it is present."""
    def have(name):
        return 'tests/qtest/' + name in present

    def x86(m):
        progs = [p for p in re.findall(r"'([\w-]+)'", m.group(2))
                 if have(p + '.c')]
        if not progs:
            return m.group(1)
        return m.group(0).replace(m.group(2), ', '.join(
            "'%s'" % p for p in progs))
    text = re.sub(r"(qtests_x86_64 = qtests_i386) \+ \\\n\s*\(config_all_"
                  r"devices\.has_key\('CONFIG_PVRDMA'\) \?\n\s*\[([^\]]*)\] "
                  r": \[\]\)", x86, text)
    if not have('pvrdma-qos-test.c'):
        text = text.replace("if config_all_devices.has_key('CONFIG_PVRDMA')\n"
                            "  qos_test_ss.add(files('pvrdma-qos-test.c'))\n"
                            "endif\n", '')

    def prog(m):
        if not have(m.group(2) + '.c'):
            return ''
        names = re.findall(r"'([\w./-]+)'", m.group(3))
        kept = [n for n in names if have(n)]
        if kept == names:
            return m.group(0)
        return wrap_files("%s'%s': files(" % (m.group(1), m.group(2)), kept)
    return re.sub(r"^([ \t]*)'(pvrdma[\w-]*)': files\(([^)]*)\),\n", prog,
                  text, flags=re.M)


def check_trace(events, present, subject):
    """Every trace_X() a present .c file of hw/rdma calls is in this step's
    trace-events: else the step does not build (a section's heading names
    the files it is kept for).  Exits with the event, file and step."""
    defined = set(re.findall(r'^(\w+)\(', events, re.M))
    for f in sorted(present):
        if not f.startswith('hw/rdma/') or not f.endswith('.c'):
            continue
        with open(os.path.join(TOP, repo_path(f))) as fh:
            used = set(re.findall(r'\btrace_(pvrdma_\w+)\(', fh.read()))
        missing = sorted(used - defined)
        if missing:
            sys.exit('patch-series: step "%s": %s calls %s, whose '
                     'trace-events section names no file of this step '
                     '(move it under a heading that names %s)'
                     % (subject, f, ', '.join('trace_' + m for m in missing),
                        os.path.basename(f)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--base', default=os.path.join(TOP, 'build/series/base'))
    ap.add_argument('--work', default=os.path.join(TOP, 'build/series/work'))
    ap.add_argument('--out', default=os.path.join(TOP,
                                                  'build/series/patches'))
    ap.add_argument('--version', default='1', help='the series version')
    args = ap.parse_args()
    args.base, args.work, args.out = (os.path.abspath(d) for d in
                                      (args.base, args.work, args.out))

    named = [f for s in STEPS for f in s['files']]
    dup = {f for f in named if named.count(f) > 1}
    if dup:
        raise SystemExit('patch-series: in two steps: %s' % sorted(dup))
    have = {tree_path(f) for f in all_files()}
    missing = sorted(set(named) - have)
    if missing:
        raise SystemExit('patch-series: not in the repository: %s' % missing)
    left = sorted(have - set(named))
    if left:
        raise SystemExit('patch-series: no step adds %s' % left)
    hooks = hunks_by_file(os.path.join(TOP, 'patches/qemu-hooks.patch'))
    hooks.update(hunks_by_file(os.path.join(TOP,
                                            'patches/series-extra.patch')))
    hooked = [h for s in STEPS for h in s.get('hooks', [])]
    unused = sorted(set(hooks) - set(hooked))
    if unused:
        raise SystemExit('patch-series: no step applies the hunks of %s'
                         % unused)

    if os.path.exists(args.work):
        shutil.rmtree(args.work)
    run(['git', 'clone', '-q', '--shared', args.base, args.work])
    base = subprocess.run(['git', 'rev-parse', 'HEAD'], cwd=args.work,
                          check=True, capture_output=True,
                          text=True).stdout.strip()
    # the series' author: the author of this tree's last commit (a CI clone
    # has no git identity of its own)
    who = subprocess.run(['git', 'log', '-1', '--format=%an <%ae>'],
                         cwd=TOP, check=True, capture_output=True,
                         text=True).stdout.strip()
    name, email = who.split(' <')
    env = dict(os.environ, GIT_AUTHOR_NAME=name, GIT_COMMITTER_NAME=name,
               GIT_AUTHOR_EMAIL=email[:-1], GIT_COMMITTER_EMAIL=email[:-1])

    present, hooked_full = set(), {}
    for step in STEPS:
        for f in step['files']:
            present.add(f)
            if f in GENERATED:
                continue
            dst = os.path.join(args.work, f)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copyfile(os.path.join(TOP, repo_path(f)), dst)
        rdma = {p[len('hw/rdma/'):] for p in present
                if p.startswith('hw/rdma/')}
        used = trace_users(present)
        for g in sorted(GENERATED & present):
            with open(os.path.join(TOP, repo_path(g))) as f:
                text = f.read()
            if g.endswith('meson.build'):
                text = cut_meson(text, rdma)
            elif g.endswith('trace-events'):
                text = cut_trace(text, rdma, used)
                check_trace(text, present, step['subject'])
            else:
                text = cut_test_main(text, present)
            with open(os.path.join(args.work, g), 'w') as f:
                f.write(text)
        for h in step.get('hooks', []):
            run(['patch', '-s', '-p1', '--no-backup-if-mismatch'],
                cwd=args.work, input=hooks[h], text=True)
            if h in HOOK_CUTS:
                with open(os.path.join(args.work, h)) as f:
                    hooked_full[h] = f.read()
        for h, text in hooked_full.items():
            with open(os.path.join(args.work, h), 'w') as f:
                f.write(cut_qtest_meson(text, present))
        run(['git', 'add', '-A'], cwd=args.work)
        msg = step['subject'] + '\n\n' + step['body'].rstrip() + \
            '\n\nSigned-off-by: %s\n' % who
        run(['git', 'commit', '-q', '-F', '-'], cwd=args.work, env=env,
            input=msg, text=True)

    # the last step has every file whole: what was cut is the file itself
    for g in sorted(GENERATED):
        with open(os.path.join(TOP, repo_path(g))) as f, \
                open(os.path.join(args.work, g)) as w:
            if f.read() != w.read():
                raise SystemExit('patch-series: %s at the last step is not '
                                 'the repository\'s' % g)
    for h, text in hooked_full.items():
        with open(os.path.join(args.work, h)) as w:
            if w.read() != text:
                raise SystemExit('patch-series: %s at the last step is not '
                                 'the hook\'s' % h)

    if os.path.exists(args.out):
        shutil.rmtree(args.out)
    # "[PATCH 00/15]" for a first version, "[PATCH v2 00/15]" after
    ver = ['-v', args.version] if args.version != '1' else []
    run(['git', 'format-patch', '-q', '--cover-letter'] + ver +
        ['--subject-prefix=PATCH', '-o', args.out, base + '..HEAD'],
        cwd=args.work, env=env)
    cover = [os.path.join(args.out, p) for p in sorted(os.listdir(args.out))
             if '0000-cover-letter' in p][0]
    with open(cover) as f:
        text = f.read()
    with open(os.path.join(TOP, 'patches/series-cover.txt')) as f:
        blurb = f.read().rstrip() + '\n'
    title, _, rest = blurb.partition('\n')
    text = text.replace('*** SUBJECT HERE ***', title.strip())
    text = text.replace('*** BLURB HERE ***', rest.strip() + '\n')
    with open(cover, 'w') as f:
        f.write(text)
    print('patch-series: %d patches and a cover letter in %s (on %s)'
          % (len(STEPS), args.out, base[:12]))


if __name__ == '__main__':
    sys.exit(main())
