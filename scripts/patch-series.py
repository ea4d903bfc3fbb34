#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Turn this repository into a patch series for QEMU.

    scripts/patch-series.py [--base DIR] [--out DIR] [--work DIR]

--base: a git repository of the QEMU source we build (Debian's 10.0.x,
i.e. upstream v10.0.x without the firmware blobs), its HEAD the commit
the series applies to; scripts/series-check.sh makes one from Debian's
orig tarball (build/series/base).  --work (default build/series/work) is
cloned from it and gets one commit per patch, in the order of STEPS
below.

The patches come as four series (SERIES below), B, C and D each applying
on top of A alone: A, the device with the loopback transport (the ABI, the
docs, the core, the loopback transport, the PCI/QOM glue with QAPI and
HMP, the qtests that need nothing else, MAINTAINERS); B (RFC), the
co-resident transport; C, the RoCEv2 transport; D, the host HCA
transport with its rdma_cm translation.  Each of B, C and D ends with
its transport's device side (hw/rdma/pvrdma_dev_<transport>.c, a
TYPE_PVRDMA_LINK class) and its qtest topic, if it has one.  --out
(default build/series/patches) gets `git format-patch --cover-letter`
of each series in a directory of its own (A/, B/, C/, D/: what is sent,
each with its cover letter, patches/series-cover*.txt; C and D are made
again on A's last commit, so their cut files have only A's and their own
parts), and of all of them one after the other in one, numbered through
(*.patch: the whole device, whose last commit is this repository).

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
a patch of its own, and the MAINTAINERS entry to the files present (a
file of a later series joins it with that file).  The design doc's
tables of contents (docs/devel/pvrdma.rst, pvrdma-transports.rst) are cut
down to the transports' documents present, and the user doc
(docs/system/devices/pvrdma.rst) to the transports present: the section
of a transport of a later series (USERDOC_WITH) comes with its device
side, and a bullet item that links to a section not there yet is left
out, so series A's user doc is true of the device with the loopback
transport alone.  The QAPI schema (qapi/pvrdma.json) is cut the same
way (QAPI_WITH: a definition, an enum value or a struct member comes
with the file that implements it), and with it the QMP stubs and the
monitor's rate limits of the events.  At the last step every cut file
must be whole.  A file
of those directories that no step names is an error: the series must be
the whole device.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from layers import first_column_files  # noqa: E402  (the table's reader)

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
             'tests/qtest/pvrdma/hostile.h', 'docs/devel/pvrdma.rst',
             'docs/devel/pvrdma-transports.rst', 'qapi/pvrdma.json',
             'hw/rdma/pvrdma_dev_qmp_stub.c',
             'docs/system/devices/pvrdma.rst'}
# the user doc's sections of the transports of later series: a section's
# title -> the file (the transport's device side) whose presence brings it
USERDOC = 'docs/system/devices/pvrdma.rst'
USERDOC_WITH = {'Two VMs on one host': 'hw/rdma/pvrdma_dev_coresident.c',
                'RoCEv2': 'hw/rdma/pvrdma_dev_roce.c',
                'A host RDMA device': 'hw/rdma/pvrdma_dev_hca.c'}
# files of QEMU's that a hook changes and that are cut down to each step
# from the step that applies the hook on (cut_qtest_meson and
# cut_maintainers below)
HOOK_CUTS = {'tests/qtest/meson.build', 'MAINTAINERS',
             'tests/qtest/libqos/meson.build', 'monitor/monitor.c'}
# the QAPI schema grows with the device: a definition, or an enum value
# or struct member (Type.member), comes with the file that implements it
QAPI_WITH = {
    'PVRDMA_PORT_CHANGED': 'hw/rdma/pvrdma_dev_event.c',
    'PVRDMA_GUEST_ERROR': 'hw/rdma/pvrdma_dev_event.c',
    'PvrdmaAsyncEvent': 'hw/rdma/pvrdma_dev_inject.c',
    'x-pvrdma-inject': 'hw/rdma/pvrdma_dev_inject.c',
    'PVRDMA_PATH_CHANGED': 'hw/rdma/pvrdma_dev_coresident.c',
    'PVRDMA_PEER_LOST': 'hw/rdma/pvrdma_dev_coresident.c',
    'x-pvrdma-peer-add': 'hw/rdma/pvrdma_dev_coresident.c',
    'PvrdmaTransportType.coresident': 'hw/rdma/pvrdma_dev_coresident.c',
    'PvrdmaPath.coresident': 'hw/rdma/pvrdma_dev_coresident.c',
    'PvrdmaTransportType.roce': 'hw/rdma/pvrdma_dev_roce.c',
    'PvrdmaPath.roce': 'hw/rdma/pvrdma_dev_roce.c',
    'PvrdmaTransportType.hostverbs': 'hw/rdma/pvrdma_dev_hca.c',
    'PvrdmaTransportType.hostcm': 'hw/rdma/pvrdma_dev_hca.c',
    'PvrdmaPath.hostverbs': 'hw/rdma/pvrdma_dev_hca.c',
    'PvrdmaPath.hostcm': 'hw/rdma/pvrdma_dev_hca.c',
}

CORE_WHY = """\
The device model is split as hw/net/igb is: a core that knows the
guest ABI and nothing of QOM (hw/rdma/core/), the transports that
carry the guest's verbs (hw/rdma/backend/), and thin PCI/QOM glue
(hw/rdma/pvrdma.c and pvrdma_dev_*.c), added after the core and the
loopback transport; every other transport comes later, in a series of
its own, with its device side (pvrdma_dev_<transport>.c).  The core reaches
QEMU only through the PvrdmaHostOps its owner hands it (guest memory,
interrupts, timers, tracing), so it also builds and is unit-tested
outside QEMU.
"""

# series A: the device with the loopback transport, its monitor
# commands, migration and the qtests that need nothing else
A_STEPS = [
    # --- the guest ABI ----------------------------------------------------
    dict(subject='include/hw/rdma: Add the PVRDMA device ABI',
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
    # --- the documentation, ahead of the code -----------------------------
    dict(subject='docs/system: Add the pvrdma user documentation',
         files=['docs/system/devices/pvrdma.rst'],
         hooks=['docs/system/device-emulation.rst'],
         body="""\
docs/system/devices/pvrdma.rst, ahead of the code so that the series
can be read against it: what the device is (VMware's paravirtual RDMA
HCA, for the unmodified Linux vmw_pvrdma driver and rdma-core) with its
loopback transport (both ends of a queue pair in one VM), the command
line, requests nobody answers, migration, libvirt, the properties and
monitor commands, and its limits.  The transports of later series
(co-resident, RoCEv2, a host RDMA device) add their sections.

The device, its properties and its monitor commands come with the
patches that follow."""),
    dict(subject='docs/devel: Add the pvrdma design document',
         files=['docs/devel/pvrdma.rst'],
         hooks=['docs/devel/index-internals.rst'],
         body="""\
docs/devel/pvrdma.rst, the overview of the design the following patches
implement: its words, the layers (a core that knows the guest ABI and
nothing of QOM, the transports behind one interface, thin PCI/QOM glue)
with a map of their files, threading, and the differences from the
pvrdma device QEMU removed in 9.1.  The design in detail comes in the
next patches, a document each, and each transport's with the
transport.

It comes before the code so that each later patch can be reviewed
against it."""),
    dict(subject='docs/devel/pvrdma: Describe the data paths and the threat model',
         files=['docs/devel/pvrdma-paths.rst',
                'docs/devel/pvrdma-security.rst'],
         body="""\
Two documents of the pvrdma design: pvrdma-paths.rst follows work
through the device (a doorbell from the vCPU to the run loop, one RC
SEND from its doorbell to both CQEs on the loopback transport, a
command from the REQUEST write to its response), file by file;
pvrdma-security.rst is the threat model (who may do what to the device)
and how guest input is checked: once, where it enters the device, the
guest's rings included."""),
    dict(subject='docs/devel/pvrdma: Describe the transport contract and interfaces',
         files=['docs/devel/pvrdma-transports.rst',
                'docs/devel/pvrdma-interfaces.rst'],
         body="""\
Two documents of the pvrdma design: pvrdma-transports.rst is the
contract between the core and the transports that carry the guest's
verbs (message and queue transports, the transport choice, the links
through which the transports that reach outside the process come; each
of those has its own document, which comes with it);
pvrdma-interfaces.rst the device's other interfaces: the monitor
commands, the device versions, resources and teardown, the device's own
ABI header, and how to write a qtest for the device."""),
    dict(subject='docs/devel/pvrdma: Describe migration',
         files=['docs/devel/pvrdma-migration.rst'],
         body="""\
The last document of the pvrdma design: how the device migrates.  Its
state is VMState (the core's objects as records, loaded by replaying
the guest's commands through the same checks), the transports pause
and resume around a save, what the device writes into guest memory is
marked dirty, and what is not done."""),
    # --- the core: the guest ABI, nothing of QOM --------------------------
    dict(subject='hw/rdma: Add the PVRDMA core interface',
         files=['include/hw/rdma/pvrdma_core.h', 'hw/rdma/Kconfig',
                'hw/rdma/meson.build', 'hw/rdma/trace-events'],
         hooks=['hw/Kconfig', 'hw/meson.build', 'meson.build', 'Kconfig.host'],
         body=CORE_WHY + """
This patch adds the core's public side, include/hw/rdma/pvrdma_core.h
(PvrdmaCore, the PvrdmaHostOps its owner provides, the device's limits
and the entry points the glue, the transports and the tests call), and
the build: CONFIG_PVRDMA (default on where PCI devices are) builds the
core's files as the next patches add them, so that each step of the
series compiles; the device that uses them comes later in the series.
It depends on LINUX (the seal check of guest RAM that a transport of a
later series maps, F_GET_SEALS; the co-resident transport's
SO_PEERCRED and accept4) and on HOST_LITTLE_ENDIAN, a new proxy symbol
in Kconfig.host set by meson.build: the guest's structures (and the
co-resident peers' messages) are read in host byte order.  hw/rdma/trace-events starts empty: each
file brings its trace events."""),
    dict(subject='hw/rdma: Add the PVRDMA transport interface',
         files=['include/hw/rdma/pvrdma_transport.h',
                'include/hw/rdma/pvrdma_transport_calls.h'],
         body="""\
The one interface behind which transports carry a QP's work
(include/hw/rdma/pvrdma_transport.h), and what a transport may call in
the core (pvrdma_transport_calls.h: the responder and its pieces, the
completer, the migration stream, timers and the QP's IBA timing,
reports and async events).  Each QP is attached to one transport,
chosen when it connects (RC, by its destination GID) or per request (UD
and GSI), and may move to another one.  Message transports (loopback,
co-resident, RoCEv2) get each send work request as a validated
PvrdmaReq and bring it to the responder of the device that owns the
destination QP; a queue transport (a host RDMA device) owns twins of
the guest's objects and takes the work requests as they are.

Only declarations: the core's side of the contract comes with the core
in the next patches, each transport with patches of its own."""),
    dict(subject='hw/rdma/core: Add guest rings, handle tables and reports',
         files=['hw/rdma/core/pvrdma_int.h', 'hw/rdma/core/pvrdma_report.c',
                'hw/rdma/core/pvrdma_ring.c', 'hw/rdma/core/pvrdma_table.c'],
         body="""\
The first of the core's files, and the header only they share
(hw/rdma/core/pvrdma_int.h: declarations grouped by the file that
defines them):
- pvrdma_ring.c: the driver's rings (producer/consumer indexes with a
  wrap bit), every index the guest writes checked once, in one place;
  a work request is copied out of its ring before it is looked at;
- pvrdma_table.c: handle tables for PDs, MRs, CQs, SRQs and QPs, every
  handle the guest names checked on use, handed out next-fit so that a
  freed handle is not reused at once;
- pvrdma_report.c: what the core tells its owner outside the guest's
  view (path and port changes, lost peers) and guest errors, counted,
  logged (LOG_GUEST_ERROR) and reported.  A leaf: every other file of
  the core may report."""),
    dict(subject='hw/rdma/core: Add guest memory, GIDs and the byte stream',
         files=['hw/rdma/core/pvrdma_mem.c', 'hw/rdma/core/pvrdma_gid.c',
                'hw/rdma/core/pvrdma_stream.c'],
         body="""\
What the rest of the core stands on:
- pvrdma_mem.c: guest page directories and scatter/gather through the
  owner's DMA hooks, every address, length and page count checked;
  guest RAM is mapped once per object;
- pvrdma_gid.c: the port's GID table;
- pvrdma_stream.c: the bounded byte stream the migration state and the
  transports' per-QP state are written to and read from."""),
    dict(subject='hw/rdma/core: Add the run list and event queues',
         files=['hw/rdma/core/pvrdma_sched.c',
                'hw/rdma/core/pvrdma_event.c'],
         body="""\
The core's run list and its event queues:
- pvrdma_sched.c: the core's run list and timer (the data path runs in
  the main loop in bounded passes; a doorbell queues work, or does a
  bounded amount of it);
- pvrdma_event.c: completion and async event queues, interrupts,
  completions written in batches with one notification per batch, CQ
  arming."""),
    dict(subject='hw/rdma/core: Add the core side of the transports',
         files=['hw/rdma/core/pvrdma_transport.c'],
         body="""\
pvrdma_transport.c, the core's side of the transport interface: a
device's transport list; the transport of a QP (chosen at RTR for RC,
per request for UD and GSI, the object owner's from creation) with its
attach and detach; the object owner's hooks (no-ops without an owner);
the device-wide hooks (GID table changed, wake, QP gone, flush, the
pause around a save: quiesce, resume, moved); an idle QP moving from
one transport to another; and the wake-up of senders waiting for a
receive (RNR).  Every call from the core into a transport goes through
this file."""),
    dict(subject='hw/rdma/core: Add protection domains and memory regions',
         files=['hw/rdma/core/pvrdma_pd.c', 'hw/rdma/core/pvrdma_mr.c'],
         body="""\
The first objects the guest creates through the command channel (added
a few patches later, which calls their handlers):
- pvrdma_pd.c: user contexts (a UAR page each) and protection domains,
  with the references the objects created in them hold;
- pvrdma_mr.c: memory regions (DMA MRs, user MRs with a page directory,
  fast registration MRs) and memory keys: an lkey or rkey resolved into
  host memory with its PD, access and range checked, a work request's
  SGEs into a scatter list; the FAST_REG_MR and LOCAL_INV work requests
  and remote invalidation."""),
    dict(subject='hw/rdma/core: Add CQs, SRQs and queue transports',
         files=['hw/rdma/core/pvrdma_cq.c', 'hw/rdma/core/pvrdma_srq.c',
                'hw/rdma/core/pvrdma_queue.c'],
         body="""\
- pvrdma_cq.c: completion queues: CREATE_CQ (the ring in guest pages),
  RESIZE_CQ, DESTROY_CQ (refused while QPs use the CQ);
- pvrdma_srq.c: shared receive queues: CREATE_SRQ, MODIFY_SRQ (the
  limit event), QUERY_SRQ, DESTROY_SRQ;
- pvrdma_queue.c: the QPs a queue transport (a host RDMA device) runs
  itself: their work requests are copied out of the guest rings,
  checked for what only the device can check (opcode, SGE count against
  the QP's limits) and handed to the transport's queues, the rest held
  in the guest ring while those are full; their completions come back
  through it."""),
    dict(subject='hw/rdma/core: Add queue pairs',
         files=['hw/rdma/core/pvrdma_qp.c'],
         body="""\
pvrdma_qp.c: queue pairs with the RC/UC/UD/GSI state machine of the
InfiniBand specification: CREATE_QP (the rings in guest pages, or an
SRQ), MODIFY_QP with the transitions and attribute masks the driver may
ask for (anything else gets an error status), QUERY_QP, DESTROY_QP;
the move to the error state after a failed work request, a remote
error or a fatal guest error, with its async event; and the IBA timing
of a QP that the transports use (local ACK timeout, retry window, RNR
deadline, path MTU, the PSNs of a request)."""),
    dict(subject='hw/rdma/core: Add fault injection and the monitor snapshot',
         files=['hw/rdma/core/pvrdma_inject.c', 'hw/rdma/core/pvrdma_info.c',
                'include/hw/rdma/pvrdma_info.h'],
         body="""\
What the monitor commands of a later patch take from the core:
- pvrdma_inject.c: faults and events injected on purpose, for people
  testing guest drivers: the port goes down and up, an async event
  about a chosen QP, CQ or SRQ, the next commands of an opcode fail or
  are answered late or never, the next completions of a QP carry an
  error status.  Injections come from the monitor, never from the
  guest; every injection and every firing is traced;
- pvrdma_info.c (include/hw/rdma/pvrdma_info.h): a snapshot of the QPs
  (type, state, the path that carries each, its peer and the path's
  counters) and of the transports, in plain C; the glue turns it into
  QAPI types."""),
    dict(subject='hw/rdma/core: Add the completer',
         files=['hw/rdma/core/pvrdma_comp.c'],
         body="""\
The data path is shaped as Linux's soft-RoCE
(drivers/infiniband/sw/rxe): a completer, a requester and a responder,
one patch each.  The completer, pvrdma_comp.c: a send work request
between execution and completion lives in the QP's send slot; finished
slots are completed in order, and the consumer index is published only
then (the guest reuses a ring slot after that); pvrdma_complete() is
where every transport reports its completions; everything posted to a
QP in error is completed with WR_FLUSH_ERR.  It builds the send and
receive completions, with error statuses for what the guest got
wrong."""),
    dict(subject='hw/rdma/core: Add the requester',
         files=['hw/rdma/core/pvrdma_req.c'],
         body="""\
pvrdma_req.c walks a QP's send queue up to the guest's producer index,
read once per pass; copies each work request out of the ring before
looking at it and validates the copy (opcode, SGE count, lkeys);
executes LOCAL_INV and FAST_REG_MR itself and hands every other request
(SEND, SEND with immediate or invalidate, RDMA WRITE with or without
immediate, RDMA READ, atomics) to the QP's transport.  A work request
stays at the head only while the responder has no receive posted
(RNR), until a receive doorbell or the RNR deadline.  A pass is bounded
in work requests and in bytes copied, so that a long message moves in
pieces and a busy QP does not hold the main loop."""),
    dict(subject='hw/rdma/core: Add the responder',
         files=['hw/rdma/core/pvrdma_resp.c'],
         body="""\
pvrdma_resp.c, the responder every transport shares: executes a request
against a QP of this device (its type and state checked, and the qkey
for UD), takes a receive work request from the QP's receive queue or
SRQ when the opcode needs one (copied out and validated like a send),
checks the rkey for RDMA and atomics, moves the data (with a GRH in
front of UD payloads) and writes the receive completion, or answers
RNR."""),
    dict(subject='hw/rdma/core: Add the command channel, init and reset',
         files=['hw/rdma/core/pvrdma_cmd.c', 'hw/rdma/core/pvrdma_init.c'],
         body="""\
The driver writes a request into the command slot page of the device
shared region (DSR), rings the REQUEST register and waits for the
response and its interrupt.  pvrdma_cmd.c decodes every request of ABI
versions 17 to 20 (the port and GID queries, GID binding, and the PD,
MR, CQ, SRQ and QP commands of the earlier patches), each field
checked, and answers unknown or malformed ones with an error in the
response and the ERR register; it holds commands back while a fence
answers, and frees every object at a reset.  pvrdma_init.c: the core as
a whole: its limits (defaults, and the checks made before a device is
built), init and fini, reset, and the port's link changes."""),
    dict(subject='hw/rdma/core: Add registers, doorbells and the run loop',
         files=['hw/rdma/core/pvrdma_regs.c', 'hw/rdma/core/pvrdma_dp.c',
                'hw/rdma/core/pvrdma_uar.c'],
         body="""\
- pvrdma_regs.c: BAR 1, the registers: the DSR (capabilities published
  when DSRHIGH is written, the driver's half copied once at ACTIVATE and
  its async and CQ notification rings mapped then), activation, CTL and
  REQUEST, which runs a command;
- pvrdma_uar.c: BAR 2, the UAR doorbells (QP send and receive, CQ arm
  and poll, SRQ), each checked (the device is active, the page's owner,
  the handle, the offset) and handed on without reading any work
  request;
- pvrdma_dp.c: the run loop (timed waiters, the transports' wake-up and
  timer hooks, then one bounded pass per queued QP) and the send and SRQ
  doorbells, which queue work for it (a send doorbell may start up to 16
  co-resident sends itself: a message, no copy).

With this the core serves a guest driver from activation to
completions; the transports that carry a QP's work come after the
migration state."""),
    dict(subject='hw/rdma/core: Add the migration state and its save',
         files=['include/hw/rdma/pvrdma_mig.h', 'hw/rdma/core/pvrdma_mig.c'],
         body="""\
The core's state as plain records (PvrdmaMigImage,
include/hw/rdma/pvrdma_mig.h), which the device migrates as VMState:
the registers, the DSR copy, the GID table and every object with what
the guest gave to create it, ring pages as guest addresses (never host
pointers), the device's ring indices and the send slots still to
complete.  pvrdma_mig.c saves it after the core is quiesced (nothing in
flight), and says which QP holds a migration back: only QPs whose
transport keeps no state of its own, pauses its peers during the save,
or has none yet can move.  Each transport adds what it needs (its QPs'
sequence numbers) as a record of its own."""),
    dict(subject='hw/rdma/core: Load the migration state by replay',
         files=['hw/rdma/core/pvrdma_mig_load.c'],
         body="""\
pvrdma_mig_load.c loads the image by replaying the guest's commands:
the core is reset, each object is created again through the command
handlers the guest uses, with its page list taken from the stream
instead of a guest page directory, and moved to its saved handle; a QP
walks RESET, INIT, RTR, RTS through the same modify.  So every value
is checked again as if the guest had sent it: a migration stream is as
hostile as a guest.  What the replay leaves to check (ring indices,
handles, send slots) is checked here; any failure resets the core and
names the record."""),
    dict(subject='hw/rdma/core: Add the migration state as one field',
         files=['hw/rdma/core/pvrdma_mig_blob.c'],
         body="""\
pvrdma_mig_blob.c writes and reads the image as little-endian records
in a fixed order, as one opaque field: the stream of the device's
builds before it used VMState (PVRDMA_MIG_VERSION 2), written only with
x-state-blob=on, to migrate to such a build, and read from one.  The
parse bounds every count by what is left of the stream; the load of
the previous patch checks the values."""),
    # --- the loopback transport -------------------------------------------
    dict(subject='hw/rdma/backend: Add the PVRDMA loopback transport',
         files=['include/hw/rdma/pvrdma_loopback.h',
                'hw/rdma/backend/loopback.c'],
         body="""\
The simplest transport: both QPs of a connection in the same device
(processes or kernel users of one VM).  A SEND or WRITE is one copy
from the requester's guest memory to the responder's."""),
    # --- the device: PCI/QOM glue, QAPI -----------------------------------
    dict(subject='hw/rdma: Add the pvrdma device state and interrupts',
         files=['hw/rdma/pvrdma_dev.h', 'hw/rdma/pvrdma_dev_irq.c'],
         body="""\
The PCI/QOM glue is the device (pvrdma.c, a few patches later) and a
few files beside it, each for one thing the device does with the rest
of QEMU.  hw/rdma/pvrdma_dev.h is the device's state and what those
files share, and declares the device side of a transport that reaches
outside this QEMU: a link (TYPE_PVRDMA_LINK), a bus-less child of the
device whose options the device aliases, so that pvrdma.c knows only
the loopback transport and each other transport brings its link in a
file of its own (pvrdma_dev_coresident.c, pvrdma_dev_roce.c,
pvrdma_dev_hca.c, in the series that add those transports).

pvrdma_dev_irq.c raises the device's interrupts (MSI-X, MSI or INTx),
at once inside the device's re-entrancy guard, else from a guarded
bottom half; what is pending when the VM stops is raised before its
state is saved (pvrdma_dev_mig.c calls that)."""),
    dict(subject='hw/rdma: Add the IOThread data path of pvrdma',
         files=['hw/rdma/pvrdma_dev_iothread.c'],
         body="""\
With iothread=, as virtio-blk's dataplane, the core's run loop (send
queues, the transport's copy, CQEs) is a bottom half and a timer of
the IOThread's AioContext while the VM runs: a send doorbell on a vCPU
only queues its QP, and the copy runs beside the vCPUs, without the
BQL; the IOThread's adaptive polling (poll-max-ns, poll-grow,
poll-shrink) sees the bottom half scheduled while it polls.  The core
is one state: while the data path is in the IOThread, core_lock guards
it, taken by the IOThread for a pass and by the BQL side (registers,
doorbells, reset, QMP) around its calls (BQL first, then core_lock; the
IOThread never takes the BQL: its interrupts go through the device's
interrupt bottom half).  When the VM stops, and at unplug, the data path
comes back to the main loop first, so a migration saves a core nothing
else touches.  A transport's file descriptors (the host service
set_fd_handler) are watched where the data path is, their handlers under
core_lock, so a transport whose events are its own sockets runs there
too; a link whose events come from elsewhere refuses iothread= and says
so.  The device (pvrdma.c, a few patches later) has the property and
takes the lock."""),
    dict(subject='qapi: Add query-pvrdma',
         files=['qapi/pvrdma.json',
                'hw/rdma/pvrdma_dev_qmp.c', 'hw/rdma/pvrdma_dev_qmp_stub.c'],
         hooks=['qapi/meson.build', 'qapi/qapi-schema.json'],
         body="""\
query-pvrdma returns, for each pvrdma device, its QOM path, its
transports with their counters, every queue pair with its type, state,
the path that carries it, its peer's GID and QP number and that path's
counters (packets, bytes, retransmissions, timeouts, RNR and sequence
NAKs, duplicates, drops), the command and completion faults injected
into the core (pending and fired) and how many guest errors the device
refused.  x-query-pvrdma-qps, a debugging aid, lists the QPs as text.

The schema grows with the device: the events and x-pvrdma-inject come
in the next two patches, and each transport of a later series adds its
path and transport names and its own commands and events
(qapi/pvrdma.json is cut to what is present at each patch).  The
commands find devices by QOM type; the device itself is added a few
patches later.  Without CONFIG_PVRDMA query-pvrdma answers an empty
list and the others an error."""),
    dict(subject='qapi: Add PVRDMA_PORT_CHANGED and PVRDMA_GUEST_ERROR',
         files=['hw/rdma/pvrdma_dev_event.c'],
         hooks=['monitor/monitor.c'],
         body="""\
Two events tell a management application what it may have to act on:
PVRDMA_PORT_CHANGED (the port went down or up, following the vmxnet3's
link) and PVRDMA_GUEST_ERROR (the guest did something the device
refused; a harness testing a guest driver can expect none).  They are
rate limited to one a second per device, keyed by qom-path as
BLOCK_IO_ERROR is.

pvrdma_dev_event.c turns the core's reports into these events; a report
that belongs to a transport (a QP that changed its path, a lost peer)
goes to that transport's device side, which a later series adds with
its own events."""),
    dict(subject='qapi: Add x-pvrdma-inject',
         files=['hw/rdma/pvrdma_dev_inject.c'],
         body="""\
An unstable command that makes a device fail on purpose, for people
testing guest drivers: the port goes down or up, an async event about a
chosen QP, CQ or SRQ, the next commands of an opcode fail or are
answered late or never, the next completions of a QP carry an error.
query-pvrdma lists what is pending and what fired.  The core fires them
(its fault injection patch); this checks the arguments of each kind."""),
    dict(subject='hw/rdma: Add pvrdma migration',
         files=['hw/rdma/pvrdma_dev_mig.c'],
         body="""\
pvrdma_dev_mig.c: the device's VMState: the PCI and MSI-X state, then
the core's image (its records as named fields and subsections, which
analyze-migration.py reads), or with x-state-blob=on the one field of
the device's older builds; and the notifiers that pause the transports
for a save and end the pause, or tell them that the state moved.
Live migration, postcopy, savevm/loadvm and background snapshots keep
QPs on the loopback transport; what the device writes into registered
memory is marked dirty as it is written.

A transport's link may refuse a migration's capabilities: the
co-resident transport (a later series) refuses postcopy and background
snapshots, because its peers write this VM's RAM where userfaultfd does
not see them; the host HCA's (also later) holds migration back with a
blocker while the host device has the guest's objects."""),
    dict(subject='hmp: Add info pvrdma and x_pvrdma_inject',
         files=['hw/rdma/pvrdma_dev_hmp.c'],
         hooks=['hmp-commands-info.hx', 'hmp-commands.hx',
                'include/monitor/hmp.h'],
         body="""\
'info pvrdma' prints what query-pvrdma returns: each pvrdma device's
transports and the guest's queue pairs, with their state, the path that
carries each, its peer and the path's counters.  x_pvrdma_inject takes
the arguments of x-pvrdma-inject as key=value pairs.  Both are built
with or without the device (the command tables name them either
way)."""),
    dict(subject='hw/rdma: Add the pvrdma PCI device',
         files=['hw/rdma/pvrdma.c'],
         body="""\
-device pvrdma: the PCI function (15ad:0820) that the unmodified Linux
vmw_pvrdma driver binds to, at function 1 of a slot whose function 0 is
a vmxnet3 (the driver pairs them).  BAR 0 holds MSI-X, BAR 1 the
registers, BAR 2 the UAR doorbell pages.  It owns a core and gives it
guest memory, interrupts, timers and tracing, and adds the loopback
transport; realize checks every property and fails with a clear error
instead of starting a device that cannot work.

Properties: the device's limits (max-qp, max-cq, ...), 'roce-version'
and 'version' (what the driver is told), 'x-loopback' and
'x-state-blob'.  The port follows the vmxnet3's link.

The transports that reach outside this QEMU come later, each in a
series of its own with its link (TYPE_PVRDMA_LINK, declared in
pvrdma_dev.h): a QOM class that the device finds at instance_init,
creates as a child and whose properties it aliases, so that they are
the device's own options ('rendezvous', 'roce', 'ibdev', ...).  With
none registered, as here, the device has the loopback transport only:
RDMA between the processes and kernel users of one VM."""),
    # --- the qtests of the device and loopback ----------------------------
    dict(subject='tests/qtest/libqos: Add a pvrdma driver',
         files=['tests/qtest/libqos/pvrdma.c', 'tests/qtest/libqos/pvrdma.h'],
         hooks=['tests/qtest/libqos/meson.build', 'tests/qtest/meson.build'],
         body="""\
libqos/pvrdma.c drives the device as the Linux vmw_pvrdma driver does at
probe (the DSR, the command and response slots, the async and CQ
notification rings, MSI-X, activation), with helpers for the tests of
the next patches: commands, page directories, rings, doorbells, and the
device's x-used-* counters (the verbs objects and migrations come in
files of their own, later), and registers a test a second time under
/pvrdma/iothread/ with every device it starts given an IOThread
(qpvrdma_add_func_both()).  It registers a "pvrdma" node in the qos
graph: the device at function 1 of a slot with a vmxnet3 at function
0."""),
    dict(subject='tests/qtest: Add pvrdma-qos-test for the libqos node',
         files=['tests/qtest/pvrdma-qos-test.c'],
         body="""\
pvrdma-qos-test.c checks the "pvrdma" node of the qos graph: what a
test written elsewhere gets when it asks for the node (a device the
driver has activated, its port up)."""),
    dict(subject='tests/qtest/libqos: Add verbs objects to the pvrdma driver',
         files=['tests/qtest/libqos/pvrdma-verbs.c'],
         body="""\
The libqos pvrdma driver's verbs, as the Linux driver makes them: PDs,
CQs, QPs and MRs through the command channel, QP state changes, GIDs,
work requests written into the QP's rings and rung at the UAR, and
completions polled, checked and drained; a CQE of a QP the test did not
create or already destroyed fails the test (the Linux driver cannot get
past one), and those a QP's destruction or reset flushes are dropped as
the driver drops them."""),
    dict(subject='tests/qtest: Add pvrdma-test and pvrdma-hostile-test',
         files=['tests/qtest/pvrdma-test.c',
                'tests/qtest/pvrdma/framework.c',
                'tests/qtest/pvrdma/framework.h',
                'tests/qtest/pvrdma-hostile-test.c',
                'tests/qtest/pvrdma/hostile.c',
                'tests/qtest/pvrdma/hostile.h'],
         body="""\
The device's two qtest programs and the helpers their tests share; the
tests come one topic per patch:
- pvrdma-test (pvrdma/framework.c): QP pairs connected on one device,
  data filled and compared byte for byte, async events seen, and the
  two-QEMU peers that the co-resident tests of a later series use (a
  rendezvous directory, peers started and connected, completions
  polled while the other process works);
- pvrdma-hostile-test (pvrdma/hostile.c): a guest that lies, each test
  asserting a clean error (ERR and the response's err, or a completion
  with an error status), a device that still answers and, through the
  device's x-used-* and x-mapped counters, that nothing leaked.

Each program registers the topics whose file is there; until the next
patch neither has a test to run.  Both are built for x86_64 with
CONFIG_PVRDMA."""),
    dict(subject='tests/qtest/pvrdma: Test the device',
         files=['tests/qtest/pvrdma/device-tests.c'],
         body="""\
pvrdma/device-tests.c: the PCI identity and capabilities, activation
and its errors, the queries and the port's link, the older drivers' ABI
versions and the device version, a bad ring index, the interrupts (CQ
notification, communication established, send queue drained, INTx), a
reset during work and the teardown."""),
    dict(subject='tests/qtest/pvrdma: Test the verbs commands',
         files=['tests/qtest/pvrdma/commands-tests.c'],
         body="""\
pvrdma/commands-tests.c: every verbs command on its success and error
paths: user contexts and PDs up to exhaustion, MRs, CQs, QPs created and
modified through their states, GID binds, SRQs."""),
    dict(subject="tests/qtest/pvrdma: Test the old device's CVEs",
         files=['tests/qtest/pvrdma/cve-tests.c'],
         body="""\
pvrdma/cve-tests.c: one test per CVE of the pvrdma device QEMU removed
in 9.1 (CVE-2018-20123 to CVE-2023-1544), each doing what the guest did
to the old device, written from the driver's ABI: realize errors, SGE
counts, huge page counts, a ring that fails to set up, UAR writes
before setup, malformed work requests, MR sizes, the DSR's ring pages,
a ring's init error path, commands before the DSR, a ring past its page
directory.  Each must get an error status or an error completion, never
a crash or a hang, and leak nothing."""),
    dict(subject='tests/qtest/pvrdma: Test further hostile input',
         files=['tests/qtest/pvrdma/hostile-input-tests.c'],
         body="""\
pvrdma/hostile-input-tests.c: further classes of hostile input: ring
sizes, doorbells after a destroy, handles used again, a command
changed while in flight, the DSR moved, a reset during traffic."""),
    dict(subject="tests/qtest/pvrdma: Test the guest's memory and DMA",
         files=['tests/qtest/pvrdma/hostile-memory-tests.c'],
         body="""\
pvrdma/hostile-memory-tests.c: a hostile guest's memory and DMA:
garbage ring indices, page directories in MMIO, a CQ resized to a bad
geometry, MSI-X aimed at the device's own registers, and create/destroy
cycles that must not leak."""),
    dict(subject='tests/qtest/pvrdma: Test fault injection',
         files=['tests/qtest/pvrdma/inject-tests.c'],
         body="""\
pvrdma/inject-tests.c: x-pvrdma-inject and its HMP command: commands
that fail, are answered late or never, completions with an error
status, async events, the port going down and up, what query-pvrdma
lists as pending and fired; and the PVRDMA_GUEST_ERROR event."""),
    dict(subject='tests/qtest/pvrdma: Test the loopback data path',
         files=['tests/qtest/pvrdma/data-tests.c'],
         body="""\
pvrdma/data-tests.c: every verb on the loopback transport, the data
compared byte for byte: SEND and RECV (also inline), RDMA WRITE and
READ and atomics, remote access errors, fast registration and SEND with
invalidate, UD, SRQs, the RNR wait, a QP destroyed under traffic and
rings that wrap."""),
    dict(subject='tests/qtest/pvrdma: Test the IOThread data path',
         files=['tests/qtest/pvrdma/iothread-tests.c'],
         body="""\
pvrdma/iothread-tests.c: with iothread=, the run loop's passes are the
IOThread's while the VM runs and the main loop's while it is stopped,
and a reset or an unplug in the middle of traffic leaves nothing
behind; the data topic runs again with iothread= (the migration topic
too, once it is added), where completions of different QPs may come
in another order than one by one."""),
    dict(subject='tests/qtest/libqos: Add migration helpers to the pvrdma driver',
         files=['tests/qtest/libqos/pvrdma-migration.c'],
         body="""\
The libqos pvrdma driver follows its VM through a migration: to a new
QEMU started with the same device (or another build of it), live or
postcopy (asserted to have been postcopy: postcopy-active seen and
pages sent after the switch), through savevm/loadvm and a background
snapshot; the driver's view (BARs, MSI-X, the guest memory allocator)
moves with the VM."""),
    dict(subject='tests/qtest/pvrdma: Test migration',
         files=['tests/qtest/pvrdma/migration-tests.c'],
         body="""\
pvrdma/migration-tests.c: a connected RC pair with traffic moved by a
live migration, postcopy, savevm/loadvm and a background snapshot; hostile
streams refused with the destination unharmed, in VMState and as one
field; the one-field stream (x-state-blob=on) both ways and a mismatch;
a migration with another build of the device when one is given (else a
skip); what the device writes marked dirty.  The migration of a
co-resident device is a test of that transport's topic."""),
    # --- the maintainers --------------------------------------------------
    dict(subject='MAINTAINERS: Add pvrdma',
         files=[], hooks=['MAINTAINERS'],
         body="""\
hw/rdma/ with its transports, the QAPI schema, the qtests and the docs.
The entry comes with the device rather than after every transport: the
series that add the other transports put their files under the same
directories, and the one file they add elsewhere
(docs/interop/pvrdma-coresident.rst) is added to the entry with it."""),
]

# series B (RFC): the co-resident transport, VMs on one host
B_STEPS = [
    dict(subject='docs/devel: Add the pvrdma co-resident transport design',
         files=['docs/devel/pvrdma-coresident.rst'],
         body="""\
The design of the co-resident transport, which the patches of this
series implement: VMs on one host exchange the guest's verbs through
shared memory, one copy from one guest's memory into the other's, with
no RDMA device on the host.  docs/devel/pvrdma-coresident.rst: how
peers are connected (by management, or a rendezvous directory), the
threat model between peers and the designs weighed against it (whole
RAM mapped today; a broker chosen for later), the data path, the
shared-memory rings, the pause for a migration, and one RC SEND from
its doorbell to both CQEs."""),
    dict(subject='docs/interop: Add the pvrdma co-resident protocol',
         files=['docs/interop/pvrdma-coresident.rst',
                'include/hw/rdma/pvrdma_coresident_wire.h'],
         hooks=['docs/interop/index.rst'],
         body="""\
The co-resident transport gives RDMA between VMs on one host with no
RDMA device on the host: the QEMUs meet in a rendezvous directory (the
device's 'rendezvous' property) or are connected by management,
exchange the file descriptors of their guest RAM (memory-backend-memfd
with share=on) over a unix socket, and carry each SEND, WRITE, READ or
atomic as one copy from one guest's memory into the other's, with
requests and answers on shared-memory rings.

This patch is the protocol, ahead of the transport that speaks it (the
next patches): docs/interop/pvrdma-coresident.rst specifies what two
devices in two QEMU processes exchange (messages, states, versions and
features, who maps which memory, the pause for a migration), and
include/hw/rdma/pvrdma_coresident_wire.h is its wire format: the
messages on the SOCK_SEQPACKET connection and the layout of the rings
both sides map.  Both ends run on one host, so fields are in host byte
order."""),
    dict(subject='hw/rdma/backend: Add co-resident per-QP state',
         files=['include/hw/rdma/pvrdma_coresident.h',
                'hw/rdma/backend/coresident_int.h',
                'hw/rdma/backend/coresident_qp.c'],
         body="""\
The co-resident transport is split by layer: coresident.c (the
transport's hooks and its constructor) over coresident_data.c (the data
path) over coresident_resp.c (the responder) over coresident_peer.c
(the peers and their handshake) over
coresident_link.c (a peer's socket and rings) over coresident_ring.c
(the rings), with coresident_qp.c and coresident_gid.c under the data
path; a lower layer reaches a higher one only through upcalls.  The
files come bottom up, the constructor last.

This patch: the transport's API for the device
(include/hw/rdma/pvrdma_coresident.h), what its files share
(coresident_int.h), and coresident_qp.c, a leaf: what the transport
keeps of one QP number (its requests in flight at peers, and the peers'
requests that wait for a receive, in order) and the flight table that
finds a request by the cookie on the wire, a slot index and a sequence
number, so that a late or forged answer finds nothing."""),
    dict(subject='hw/rdma/backend: Add co-resident shared rings',
         files=['hw/rdma/backend/coresident_ring.c'],
         body="""\
coresident_ring.c: two single-producer, single-consumer rings of
records in memory both peers map, one per direction.  The peer writes
that memory whenever it likes, so our own indexes are kept in private
memory and only published, and what is read of the peer's indexes and
records is read once, checked, and copied out before anything looks at
it.  An index that cannot be (a ring fuller than its size, a record
longer than what was published) fails the call, and the caller drops
the peer.  A leaf: it knows memory and indexes, not peers or
messages."""),
    dict(subject='hw/rdma/backend: Add co-resident links',
         files=['hw/rdma/backend/coresident_link.c'],
         body="""\
coresident_link.c: the link to each peer, its socket and, once both
sides set them up, its rings.  Messages sent are collected per event
and go out as one datagram on the socket or one record in the ring
(queued while either is full, with a WAKE when the peer sleeps);
received ones are framed and handed up, one by one, to the peers'
layer.  After taking from a peer's ring, the fd handler may poll it a
while before it sleeps.  A peer whose socket or ring fails is marked
dead here, without harm to the other peers."""),
    dict(subject='hw/rdma/backend: Add co-resident peers',
         files=['hw/rdma/backend/coresident_gid.c',
                'hw/rdma/backend/coresident_peer.c'],
         body="""\
coresident_peer.c: the connections to the sockets of the rendezvous
directory, those accepted on ours and those management gives; each
received message checked and dispatched; the handshake (HELLO, and AUTH,
an HMAC over the other side's nonce, when there is a shared secret);
the peers' RAM (REGION, with its memfd) and GID tables (GIDS); the
rings offered; dead peers freed.  A peer is checked like a guest: on a
bad message the peer is dropped, never the device.

coresident_gid.c: who owns which GID: each peer announces its GID table
and gets the GIDs nobody else owns here (the first owner wins, and a
GID of this device is never taken); the GIDs of a peer that migrated
wait a while for the QEMU that took its place."""),
    dict(subject='hw/rdma/backend: Add the co-resident responder',
         files=['hw/rdma/backend/coresident_resp.c'],
         body="""\
coresident_resp.c: a peer's requests are executed here, straight
between the two guests' memory (every address a peer names is checked
against this device's own memory regions), in order per QP: one that
finds no receive waits (RNR) with what follows it for that QP, one
longer than the core's byte budget of a run moves in pieces, one per
run of the main loop; each is answered RESP."""),
    dict(subject='hw/rdma/backend: Add the co-resident data path',
         files=['hw/rdma/backend/coresident_data.c'],
         body="""\
coresident_data.c: our requests go to the peer that owns their
destination GID as REQ messages naming our RAM, and are in flight until
it answers RESP.  A peer's requests are taken in here (REQ, MORE) and
handed to the responder; CANCEL drops what a destroyed QP still has
waiting.  OFFER and ANSWER move an idle QP from RoCEv2 to this
transport; a peer's PAUSE, PAUSED, RESUME and MOVED (its migration) are
handled here too."""),
    dict(subject='hw/rdma/backend: Add the co-resident transport',
         files=['hw/rdma/backend/coresident.c'],
         body="""\
coresident.c: the transport's hooks for the core, the fence DESTROY_QP
waits for (a peer may still be writing this VM's memory), the pause of
the peers for migrations and snapshots, and the constructor, which
joins the rendezvous directory.  A peer that fails or stops reading is
dropped without harm to the other; a peer that migrates is paused and
reconnected.

Everything runs in QEMU's main loop with the BQL held, except the poll
of a peer's ring, which spins without the BQL and touches nothing but
that ring's shared memory."""),
    dict(subject='hw/rdma: Add co-resident peers to pvrdma',
         files=['hw/rdma/pvrdma_dev_coresident.c'],
         body="""\
pvrdma_dev_coresident.c, the co-resident transport's link (a
TYPE_PVRDMA_LINK class, whose options the device takes as its own):
'rendezvous' (a directory where peers meet) or 'coresident=on' (peers
only from management, x-pvrdma-peer-add), with 'rendezvous-secret' (a
secret object whose bytes peers must know).  It checks that guest RAM
is a shared memfd sealed against shrinking, which the peers map, and
offers every such RAM block; it refuses migrations with postcopy-ram or
background-snapshot (the peers write this VM's RAM where userfaultfd
does not see them), lists the peers in query-pvrdma, and leaves the
rendezvous directory tidy when QEMU exits.

Its QMP (qapi/pvrdma.json gains it here): the 'coresident' transport
and path names (query-pvrdma's 'peers' of a transport it fills in);
x-pvrdma-peer-add, the unstable command that gives the device a
connection management made (socketpair, passed with getfd); the events
PVRDMA_PEER_LOST (a peer failed and was dropped) and
PVRDMA_PATH_CHANGED (a QP moved between the co-resident transport and
another by itself, when its peer migrated), rate limited per device as
the device's other events.

Its peers' sockets are its transport's only events, so it runs in an
IOThread with iothread= (the link says so: PvrdmaLinkClass.iothread).

With this patch -device pvrdma,rendezvous=DIR gives RDMA between VMs
on one host, without an RDMA device on the host.  The user doc
(docs/system/devices/pvrdma.rst) gets its section "Two VMs on one
host"."""),
    dict(subject='tests/qtest/pvrdma: Test the co-resident transport',
         files=['tests/qtest/pvrdma/coresident-tests.c'],
         body="""\
pvrdma/coresident-tests.c: two QEMU processes with a device each on the
co-resident transport: RC and UD traffic with the data compared, one
of the two migrated while requests wait at each side (and postcopy and
a background snapshot refused first),
query-pvrdma of both (and of a machine without the device), remote
access errors, a peer that goes away, a shared secret, peers connected
by management (x-pvrdma-peer-add), another build of the device when one is
given (else a skip).  Every case but the other build runs again with
iothread= on both devices, and one more shows that the peers' socket
events are then the IOThread's while the VM runs (x-iothread-events),
the main loop's while it is stopped."""),
    dict(subject='tests/qtest/pvrdma: Test the co-resident transport\'s faults',
         files=['tests/qtest/pvrdma/coresident-faults-tests.c'],
         body="""\
pvrdma/coresident-faults-tests.c: the co-resident transport when things
go wrong: a send that waits on RNR to the end, a QP destroyed or reset
while a peer holds its requests (the fence; a peer that never answers
does not hold the vCPU), hot-unplug during a fence and during traffic,
and MSI-X aimed at the device's own registers from a peer's
completion; all but the two fence cases again with iothread=."""),
    dict(subject='tests/qtest/pvrdma: Add benchmarks',
         files=['tests/qtest/pvrdma/bench-tests.c'],
         body="""\
pvrdma/bench-tests.c: benchmarks, not tests, each registered only when
its environment variable asks for it and printing figures: the
device's share of a migration's downtime, the CPU two idle QEMUs with
connected co-resident QPs use (so it comes with that transport), and
the downtime registered memory adds."""),
]

# series C: the RoCEv2 transport on the vmxnet3's network
C_STEPS = [
    dict(subject='docs/devel: Add the pvrdma RoCEv2 transport design',
         files=['docs/devel/pvrdma-roce.rst'],
         body="""\
The design of the RoCEv2 transport, which the patches of this series
implement: the guest's RC and UD traffic as standard RoCEv2 frames on
the network of the paired vmxnet3, interoperable with Linux soft-RoCE
and RoCE NICs.  docs/devel/pvrdma-roce.rst: the wire codec and what it
checks, the transport (shaped as Linux rxe: requester, responder,
completer), its retry rules compared with the InfiniBand specification
and rxe, UD and the GSI QP, and one RC SEND from its doorbell to its
ACK."""),
    dict(subject='hw/rdma/backend: Add RoCEv2 declarations',
         files=['include/hw/rdma/roce_wire.h', 'include/hw/rdma/pvrdma_roce.h',
                'hw/rdma/backend/roce_int.h'],
         body="""\
Standard RoCEv2 (InfiniBand transport over UDP port 4791) on the
network of the vmxnet3 at function 0 of the device's slot, so that a
pvrdma guest talks to Linux soft-RoCE (rdma_rxe) and RoCE NICs on other
hosts.  The transport is shaped as rxe, a file per state machine:
requester, responder, completer, frames out, and the transport with
frames in, in the next patches.

This patch has its declarations, to be read against the InfiniBand
specification: include/hw/rdma/roce_wire.h, the wire format (Ethernet,
802.1Q, IPv4 or IPv6, UDP, BTH and the extension headers, payload,
pad, ICRC) as a RocePkt that the codec of the next patch parses and
builds; include/hw/rdma/pvrdma_roce.h, the transport's API for the
device; backend/roce_int.h, what its files share (constants, the
per-QP state of requester, responder and completer, and the functions
one file calls in another)."""),
    dict(subject='hw/rdma/backend: Add the RoCEv2 wire codec',
         files=['hw/rdma/backend/roce_wire.c'],
         body="""\
roce_wire.c: roce_parse() takes a frame from a hostile network apart
into a RocePkt, checking every header, every length and the ICRC;
roce_build() writes a RocePkt back as a frame.  A frame that
roce_parse() accepts is rebuilt byte for byte.  Written from the
InfiniBand specification (chapter 9, Annex A17) and checked against
frames of Linux's rxe.  The ICRC is a CRC-32, zlib's: the device now
links with zlib."""),
    dict(subject='hw/rdma/backend: Add the RoCEv2 requester',
         files=['hw/rdma/backend/roce_net.c', 'hw/rdma/backend/roce_req.c'],
         body="""\
- roce_net.c (as rxe_net.c): frames out: a packet's network headers,
  the frame built and handed to the device's transmit hook; the
  device's clock and timer;
- roce_req.c (as rxe_req.c): an RC request becomes a work entry with
  its PSNs and is sent packet by packet as the window, max_rd_atomic
  and fences allow, its data read through the guest's SGEs each time;
  ACKs are asked for every 32 packets and on a message's last; going
  back to a PSN, asking a READ or an atomic again, the local ACK
  timer."""),
    dict(subject='hw/rdma/backend: Add the RoCEv2 responder',
         files=['hw/rdma/backend/roce_resp.c'],
         body="""\
roce_resp.c (as rxe_resp.c): a request packet for an RC QP is checked
(PSN, opcode sequence, lengths) and executed with the core's responder
primitives; a duplicate request is answered from the responder's
resources (a replay cache for READs and atomics), a gap gets one
sequence NAK, a missing receive an RNR NAK; ACKs, NAKs, READ responses
and atomic ACKs go out in order from a response queue."""),
    dict(subject='hw/rdma/backend: Add the RoCEv2 completer',
         files=['hw/rdma/backend/roce_comp.c'],
         body="""\
roce_comp.c (as rxe_comp.c): the ACKs, NAKs, READ responses and atomic
ACKs to our requests, the data written into their buffers, the requests
completed in order; retransmission on timeout (with a probe) and on a
sequence NAK, the RNR NAK timer, the requester's local failures.  It
drives the requester: go back, send on."""),
    dict(subject='hw/rdma/backend: Add the RoCEv2 transport',
         files=['hw/rdma/backend/roce.c'],
         body="""\
roce.c: frames in (UD to the core's responder, responses to the
completer, requests to the responder, the duplicates of a QP destroyed
a moment ago answered), the transport's hooks, the pause for a
migration with each QP's sequence numbers migrated, the constructor
and the counters.  A frame from the network is as untrusted as the
guest: after roce_parse() every field is checked against the QP it
names, and anything else is dropped and counted.  Frames enter and
leave through the NIC's net client (the device's side, the next
patch), so QEMU's network backends, filters and dumps see them."""),
    dict(subject="hw/rdma: Add RoCEv2 on the vmxnet3's network to pvrdma",
         files=['hw/rdma/pvrdma_dev_roce.c'],
         body="""\
pvrdma_dev_roce.c, the RoCEv2 transport's link (a TYPE_PVRDMA_LINK
class, whose options the device takes as its own): with 'roce=on' (off
by default) the device takes the RoCEv2 frames addressed to it from the
paired vmxnet3's netdev with a net filter, sends the transport's frames
through that netdev, and shows the transport's counters as x-roce-*
properties.  So QEMU's network backends, filters and dumps see the
frames, and the guest's RoCEv2 shares the NIC's network as on a RoCE
NIC: a pvrdma guest talks to Linux soft-RoCE and RoCE NICs on other
hosts.  QPs over RoCEv2 migrate (each QP's sequence numbers go with the
transport's record).  query-pvrdma gains the 'roce' transport and path
names; the user doc (docs/system/devices/pvrdma.rst) its section
"RoCEv2"."""),
    dict(subject='tests/qtest/pvrdma: Test the RoCEv2 transport',
         files=['tests/qtest/pvrdma/roce-tests.c'],
         body="""\
pvrdma/roce-tests.c: two QEMUs whose vmxnet3s are joined by a pair of
dgram netdevs (unix sockets), each device with roce=on, RC QPs
connected between them: SEND across packets both ways, WRITE, READ,
fetch-add and compare-swap, the bytes compared at both ends, the QP's
path in query-pvrdma and the transport's frame counter; a WRITE with a
bad rkey NAKed, completed with REM_ACCESS_ERR and the rest flushed."""),
]

# series D: the host HCA transport and its rdma_cm translation
D_STEPS = [
    dict(subject='docs/devel: Add the pvrdma host HCA transport design',
         files=['docs/devel/pvrdma-hca.rst'],
         body="""\
The design of the host HCA transport, which the patches of this series
implement: the guest's verbs objects become objects of an RDMA device
of the host (a RoCE HCA or soft-RoCE) through libibverbs, guest memory
registered in place, with rdma_cm for the guest through librdmacm.
docs/devel/pvrdma-hca.rst: the host twins of the guest's objects, MRs
and fast registration, completions translated back, the GSI QP and the
rdma_cm translator, testing it in a nested VM, and one RC SEND from
its doorbell to both CQEs."""),
    dict(subject='hw/rdma/backend: Add host HCA memory regions',
         files=['include/hw/rdma/pvrdma_hostverbs.h',
                'hw/rdma/backend/hostverbs_int.h',
                'hw/rdma/backend/hostverbs_mr.c'],
         body="""\
With the device's 'ibdev' property the guest's verbs run on an RDMA
device of the host (a RoCE HCA or soft-RoCE) through libibverbs: each
guest PD, MR, CQ, SRQ and QP has a host twin, guest memory regions are
registered in place (zero copy), and host completions are translated
back.  It is built with QEMU's 'rdma' feature (libibverbs and
librdmacm), in three files, memory first.

This patch: the transport's API (include/hw/rdma/pvrdma_hostverbs.h),
what its files share (hostverbs_int.h), and hostverbs_mr.c, the host
twins of the guest's MRs: a user MR over several runs of guest RAM is
mapped again contiguously first; the DMA MR covers guest RAM by guest
physical address; a fast registration MR is a type 2 memory window,
bound over a host MR of its page list at each FAST_REG_MR."""),
    dict(subject='hw/rdma/backend: Add host HCA verbs objects',
         files=['hw/rdma/backend/hostverbs_obj.c'],
         body="""\
hostverbs_obj.c: each guest PD, CQ, SRQ and QP has a libibverbs object
of the host device, made, changed and destroyed with it (the
transport's object hooks); UD sends get a host address handle, cached
per PD; guest GIDs are found in the host's GID table.  The guest sees
the host's QP numbers and keys."""),
    dict(subject='hw/rdma/backend: Add the host HCA transport',
         files=['hw/rdma/backend/hostverbs.c',
                'hw/rdma/backend/hostverbs-stub.c'],
         body="""\
hostverbs.c: the transport's hooks and its constructor, the host device
and its port, which destinations it reaches, and the host's events:
completions from one completion channel and async events, both on
QEMU's event loop (no polling thread), and the device going away.
Without libibverbs, hostverbs-stub.c says so when 'ibdev' is set."""),
    dict(subject='hw/rdma/backend: Add rdma_cm translation declarations',
         files=['include/hw/rdma/pvrdma_hostcm.h',
                'hw/rdma/backend/hostcm_int.h'],
         body="""\
In host HCA mode QP1 of the host's port belongs to the host kernel's
connection manager, so the CM MADs the guest sends on its GSI QP cannot
go out as they are: they are translated onto the host's librdmacm
instead.  The translator comes in two files, the guest's side first,
after its declarations.

This patch, to be read against chapter 12 of the InfiniBand
specification: the translator's API for the device
(include/hw/rdma/pvrdma_hostcm.h) and what its files share
(backend/hostcm_int.h: the CM MAD layouts as fields, a connection's
states, and the functions one file calls in the other)."""),
    dict(subject="hw/rdma/backend: Add the rdma_cm translation's guest side",
         files=['hw/rdma/backend/hostcm_mad.c'],
         body="""\
hostcm_mad.c: the CM MADs the guest sends are parsed with bounds and
become host rdma_cm calls (REQ: a host connection resolved and
connected; REP, RTU, REJ, DREQ: rdma_accept, rdma_establish,
rdma_reject, rdma_disconnect; SIDR_REQ and SIDR_REP likewise over UD);
the MADs for the guest are built here and handed to its GSI QP; the
connections live in a table of fixed size."""),
    dict(subject='hw/rdma/backend: Add the rdma_cm translation',
         files=['hw/rdma/backend/hostcm.c', 'hw/rdma/backend/hostcm-stub.c'],
         body="""\
hostcm.c, the host's side of the translator: the transport's hooks (it
is the GSI agent: a GSI request that no other transport reaches comes
here) and its constructor; the host's rdma_cm events, answered to the
guest as the CM MADs a remote CM would have sent; listeners on the
guest's own addresses for the ports the guest was told to listen on
('cm-listen'); and the receive PSN the host's CM chose, which the guest
cannot know.  The RDMA_PS_TCP and RDMA_PS_UDP port spaces are
translated; the guest never sees host pointers.  Without librdmacm,
hostcm-stub.c says so when 'ibdev' is set."""),
    dict(subject='hw/rdma: Add host HCA mode to pvrdma',
         files=['hw/rdma/pvrdma_dev_hca.c'],
         body="""\
pvrdma_dev_hca.c, the host HCA transport's link (a TYPE_PVRDMA_LINK
class, whose options the device takes as its own): 'ibdev' (the host
RDMA device, named: 'auto' is refused), 'ibport', 'gid-index' and
'cm-listen' (the TCP-style ports whose rdma_cm listeners the guest
gets), each checked at realize.  It opens the host device, handing it
guest RAM's shared blocks (an MR of scattered guest pages is mapped
again contiguously from them), then the rdma_cm translator beside it
(without rdma_cm on the host and without 'cm-listen', a warning: the
guest can still connect out), and adds a migration blocker that names
why: the guest's objects live on the host device, whose QP numbers and
keys no other device can give back.  query-pvrdma gains the
'hostverbs' and 'hostcm' transport and path names; the user doc
(docs/system/devices/pvrdma.rst) its section "A host RDMA device"."""),
    dict(subject='tests/qtest/pvrdma: Test host HCA mode',
         files=['tests/qtest/pvrdma/hca-tests.c', 'tests/qtest/pvrdma/hca.h'],
         body="""\
pvrdma/hca-tests.c: host HCA mode on an RDMA device of the host with a
RoCEv2 IPv4 GID (Linux soft-RoCE will do), skipped without one: RC
(also to itself) and UD traffic, fast registration and a QP destroyed
with its FRMR bound, a GID the host lacks, and a hostile guest."""),
    dict(subject="tests/qtest/pvrdma: Test host HCA mode's host side",
         files=['tests/qtest/pvrdma/hca-host-tests.c'],
         body="""\
pvrdma/hca-host-tests.c: what host HCA mode meets on the host side, on
the same host device as the previous patch's tests: hostile CM MADs
for the rdma_cm translator, a 1 GiB MR, the cost of fast registration,
the host port's state reaching the guest, and the locked-memory
limit."""),
]

SERIES = [
    dict(name='A', prefix='PATCH', steps=A_STEPS,
         cover='patches/series-cover.txt'),
    dict(name='B', prefix='RFC PATCH', steps=B_STEPS,
         cover='patches/series-cover-B.txt'),
    dict(name='C', prefix='PATCH', steps=C_STEPS,
         cover='patches/series-cover-C.txt'),
    dict(name='D', prefix='PATCH', steps=D_STEPS,
         cover='patches/series-cover-D.txt'),
]
STEPS = [s for ser in SERIES for s in ser['steps']]


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


def cut_toctree(text, present):
    """The design doc's toctree of the transports' documents, cut down to
    those present (each comes with its transport); a toctree left empty
    goes, its directive too."""
    out, i, lines = [], 0, text.split('\n')
    while i < len(lines):
        if lines[i].startswith('.. toctree::'):
            j = i + 1
            while j < len(lines) and (lines[j].startswith('   ') or
                                      not lines[j].strip()):
                j += 1
            block = lines[i:j]
            entries = [b for b in block[1:] if b.strip() and
                       not b.strip().startswith(':')]
            kept = [e for e in entries
                    if 'docs/devel/%s.rst' % e.strip() in present]
            if entries and not kept:
                while out and not out[-1].strip():
                    out.pop()
                out.append('')
                i = j
                continue
            out += [b for b in block if b not in entries or b in kept]
            i = j
            continue
        out.append(lines[i])
        i += 1
    return '\n'.join(out)


def cut_filetable(text, present):
    """The design doc's file table (the list-table of its Layering
    section) cut down to the rows that name a present file in their first
    column: a row whose ``...`` files are all absent goes (read as
    scripts/layers.py reads the table, first_column_files(); the names are
    the repository's, backend/x.c is hw/rdma/backend/x.c in the series'
    tree)."""
    m = re.search(r'^Layering\n-+\n', text, re.M)
    if not m:
        return text
    lines = text[m.end():].split('\n')
    start = next((i for i, ln in enumerate(lines)
                  if ln.startswith('.. list-table::')), None)
    if start is None:
        return text
    end = start + 1
    while end < len(lines) and (lines[end].startswith('   ') or
                                not lines[end].strip()):
        end += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    rows, head = [], lines[start:end]
    for i, ln in enumerate(head):
        if ln.startswith('   * - '):
            rows.append(i)
    out, last = head[:rows[1]] if len(rows) > 1 else head, ''
    for k, r in enumerate(rows[1:], 1):
        row = head[r:rows[k + 1] if k + 1 < len(rows) else len(head)]
        names, last = first_column_files(row, last)
        if not names or any(tree_path(n) in present for n in names):
            out += row
    lines[start:end] = out
    return text[:m.end()] + '\n'.join(lines)


def cut_userdoc(text, present):
    """The user doc cut down to the transports present: a top-level (===)
    section of USERDOC_WITH whose file is not present goes, its title and
    body up to the next top-level title; then every bullet item (a line
    starting with '* ' and its indented continuation lines) that links to
    a section gone (`Title`_) goes too."""
    lines = text.split('\n')

    def top(i):
        return (i + 1 < len(lines) and lines[i].strip() and
                re.fullmatch(r'=+', lines[i + 1]) is not None and
                len(lines[i + 1]) >= len(lines[i].rstrip()))

    gone = {t for t, f in USERDOC_WITH.items() if f not in present}
    out, i, dropping = [], 0, False
    while i < len(lines):
        if top(i):
            dropping = lines[i].strip() in gone
        if not dropping:
            out.append(lines[i])
        i += 1
    lines, out, i = out, [], 0
    while i < len(lines):
        if lines[i].startswith('* '):
            j = i + 1
            while j < len(lines) and lines[j].startswith('  '):
                j += 1
            item = ' '.join(l.strip() for l in lines[i:j])
            if any('`%s`_' % t in item for t in gone):
                i = j
                continue
            out += lines[i:j]
            i = j
            continue
        out.append(lines[i])
        i += 1
    text = re.sub(r'\n{3,}', '\n\n', '\n'.join(out))
    flat = ' '.join(text.split())
    left = sorted(t for t in gone if '`%s`_' % t in flat)
    if left:
        raise SystemExit('patch-series: %s links to %s outside a bullet item'
                         % (USERDOC, left))
    return text


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


def cut_maintainers(text, present, named):
    """MAINTAINERS (our hook applied) without the F: lines that name a
    file of the series (in named) that is not present yet: the entry
    comes with the device, a file another series adds joins it then."""
    return ''.join(line for line in text.splitlines(keepends=True)
                   if not (line.startswith('F: ') and
                           line[3:].strip() in named and
                           line[3:].strip() not in present))


def cut_libqos_meson(text, present):
    """libqos's meson.build (our hook applied) naming only the pvrdma
    driver's files present: the driver comes in several patches."""
    return ''.join(
        line for line in text.splitlines(keepends=True)
        if not (re.match(r"\s+'pvrdma[\w-]*\.c',$", line) and
                'tests/qtest/libqos/' + line.strip()[1:-2] not in present))


def cut_qapi(text, present):
    """qapi/pvrdma.json with what QAPI_WITH gives a file not present yet
    left out: a definition with its doc block, an enum value or struct
    member with its doc lines."""
    chunks = re.split(r'\n\n(?=##\n)', text)
    out = []
    for ch in chunks:
        m = re.match(r"##\n# @([\w-]+):", ch)
        name = m.group(1) if m else None
        if name and QAPI_WITH.get(name, '') and \
                QAPI_WITH[name] not in present:
            continue
        for key, f in QAPI_WITH.items():
            typ, _, member = key.partition('.')
            if not member or typ != name or f in present:
                continue
            # its doc paragraph: "# @member: ..." and indented lines, and
            # the "#" line before it
            ch = re.sub(r"#\n# @%s:.*\n(#     .*\n)*" % re.escape(member),
                        '', ch, count=1)
            q = r"'\*?%s'(: '\w+')?" % re.escape(member)
            for pat in (r"%s,\s*" % q, r",\s*%s" % q):
                ch, k = re.subn(pat, '', ch, count=1)
                if k:
                    break
        out.append(ch)
    return '\n\n'.join(out).rstrip('\n') + '\n'


def qapi_names(schema):
    """The commands and events a (cut) schema defines."""
    return set(re.findall(r"^\{ '(?:command|event)': '([\w-]+)'", schema,
                          re.M))


def cut_qmp_stub(text, names):
    """The QMP stubs (no device built in) of the commands in names only:
    a stub of a command the step's schema lacks would not compile."""
    parts = re.split(r'\n\n(?=\w)', text)
    keep = [p for p in parts
            if not re.match(r'[^(]*\bqmp_(\w+)\(', p) or
            re.match(r'[^(]*\bqmp_(\w+)\(', p).group(1).replace('_', '-')
            in names]
    return '\n\n'.join(keep).rstrip('\n') + '\n'


def cut_monitor(text, names):
    """monitor/monitor.c (our hook applied) without the lines that name
    an event the step's schema lacks (its rate limit)."""
    return ''.join(line for line in text.splitlines(keepends=True)
                   if not (re.search(r'QAPI_EVENT_(PVRDMA_\w+)', line) and
                           re.search(r'QAPI_EVENT_(PVRDMA_\w+)',
                                     line).group(1) not in names))


def cut_hook(path, text, present, named, names):
    """A hooked file of QEMU's (HOOK_CUTS) cut down to this step (names:
    the commands and events of its schema)."""
    if path == 'monitor/monitor.c':
        return cut_monitor(text, names)
    if path == 'MAINTAINERS':
        return cut_maintainers(text, present, named)
    if path == 'tests/qtest/libqos/meson.build':
        return cut_libqos_meson(text, present)
    return cut_qtest_meson(text, present)


def fill_cover(cover, title, blurb):
    """git format-patch's cover letter with its subject and blurb."""
    with open(cover) as f:
        text = f.read()
    text = text.replace('*** SUBJECT HERE ***', title.strip())
    text = text.replace('*** BLURB HERE ***', blurb.strip() + '\n')
    with open(cover, 'w') as f:
        f.write(text)


def read_cover(path):
    """A cover text of patches/: its first line the title, the rest the
    blurb."""
    with open(os.path.join(TOP, path)) as f:
        title, _, rest = f.read().rstrip().partition('\n')
    return title.strip(), rest.strip()


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

    # a step's series' files (its subject -> the files of all its steps)
    series_files = {st['subject']: {f for t in ser['steps']
                                    for f in t['files']}
                    for ser in SERIES for st in ser['steps']}

    def make_step(step, present, hooked_full):
        """One commit in args.work: the step's files, the generated files
        cut to present (updated), the hooks' files; its hash."""
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
        with open(os.path.join(TOP, 'qapi/pvrdma.json')) as f:
            names = qapi_names(cut_qapi(f.read(), present))
        for g in sorted(GENERATED & present):
            with open(os.path.join(TOP, repo_path(g))) as f:
                text = f.read()
            if g.endswith('meson.build'):
                text = cut_meson(text, rdma)
            elif g.endswith('trace-events'):
                text = cut_trace(text, rdma, used)
                check_trace(text, present, step['subject'])
            elif g == USERDOC:
                text = cut_userdoc(text, present)
            elif g.endswith('.rst'):
                text = cut_toctree(text, present)
                if g == 'docs/devel/pvrdma.rst':
                    # the table of files whole for the series the step is
                    # in, from its first patch: the overview comes first
                    text = cut_filetable(text, present |
                                         series_files[step['subject']])
            elif g == 'qapi/pvrdma.json':
                text = cut_qapi(text, present)
            elif g.endswith('_stub.c'):
                text = cut_qmp_stub(text, names)
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
                f.write(cut_hook(h, text, present, set(named), names))
        run(['git', 'add', '-A'], cwd=args.work)
        msg = step['subject'] + '\n\n' + step['body'].rstrip() + \
            '\n\nSigned-off-by: %s\n' % who
        run(['git', 'commit', '-q', '-F', '-'], cwd=args.work, env=env,
            input=msg, text=True)
        return git_out(['rev-parse', 'HEAD'])

    def git_out(cmd):
        return subprocess.run(['git'] + cmd, cwd=args.work, check=True,
                              capture_output=True, text=True).stdout.strip()

    # the whole device, one series after the other (the all-in-one)
    present, hooked_full, commits = set(), {}, []
    n_a = len(SERIES[0]['steps'])
    for i, step in enumerate(STEPS):
        commits.append(make_step(step, present, hooked_full))
        if i == n_a - 1:
            after_a = (set(present), dict(hooked_full))
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

    def format_patch(out, prefix, rev_range):
        run(['git', 'format-patch', '-q', '--cover-letter'] + ver +
            ['--subject-prefix=' + prefix, '-o', out, rev_range],
            cwd=args.work, env=env)
        return [os.path.join(out, p) for p in sorted(os.listdir(out))
                if '0000-cover-letter' in p][0]

    # each series in a directory of its own, as it is sent: A, and each
    # later series on top of A alone (made again from A's last commit: its
    # cut files then have only A's and its own parts), not on the series
    # before it
    whole = git_out(['rev-parse', 'HEAD'])
    a_end = commits[n_a - 1]
    first, ranges = 0, []
    for ser in SERIES:
        last = first + len(ser['steps'])
        if first == 0:
            rng = base + '..' + a_end
        elif first == n_a:
            rng = a_end + '..' + commits[last - 1]   # already on A
        else:
            run(['git', 'checkout', '-q', '-B', 'on-a-' + ser['name'],
                 a_end], cwd=args.work)
            pres, hooked = set(after_a[0]), dict(after_a[1])
            for step in ser['steps']:
                tip = make_step(step, pres, hooked)
            rng = a_end + '..' + tip
        cover = format_patch(os.path.join(args.out, ser['name']),
                             ser['prefix'], rng)
        fill_cover(cover, *read_cover(ser['cover']))
        ranges.append('%s %d-%d' % (ser['name'], first + 1, last))
        first = last
    run(['git', 'checkout', '-q', whole], cwd=args.work)
    # and all of them in one, numbered through, for scripts/series-check.sh
    cover = format_patch(args.out, 'PATCH', base + '..HEAD')
    fill_cover(cover, 'hw/rdma: a new pvrdma device: series %s to %s in one'
               % (SERIES[0]['name'], SERIES[-1]['name']), """\
Series %s, one after the other, in one directory to be applied and
built at once (scripts/series-check.sh): the whole device.  They are
sent as %s, each with its own cover letter, and each of the later ones
on top of the first alone:
%s""" % (', '.join(ser['name'] for ser in SERIES),
         ', '.join(ser['name'] + '/' for ser in SERIES),
         ''.join('- %s (patches %s): %s\n' % (ser['name'],
                                               r.split(' ')[1],
                                               read_cover(ser['cover'])[0])
                 for ser, r in zip(SERIES, ranges))))
    print('patch-series: %d patches and a cover letter in %s (on %s); '
          'series %s, each with a cover letter in a directory of its own'
          % (len(STEPS), args.out, base[:12], ', '.join(ranges)))

if __name__ == '__main__':
    sys.exit(main())
