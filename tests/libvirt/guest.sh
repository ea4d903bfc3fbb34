# The guest side of tests/libvirt/run.sh (busybox ash, both VMs; VM 0
# serves).  Two VMs started by libvirt, on the co-resident transport
# (LV_MODE=coresident: shared memfd RAM, one rendezvous directory;
# LV_MODE=mgmt: the same RAM, the connection from the runner as
# management, RoCEv2 off) or on RoCEv2 over the vmxnet3 network
# (LV_MODE=roce).  The runner asks libvirt
# what the guest asks for on its console, as scripts/guest/run-vm.sh does:
#   PVRDMA-QMP TAG       query-pvrdma of both VMs (virsh
#                        qemu-monitor-command) into vmN/qmp-TAG.json
#   PVRDMA-MIGRATE TAG   virsh migrate --live of this VM to the other host
# Steps:
#  1. the verbs data checker (pvrdma-verbs-check: every byte of SEND, WRITE,
#     READ and atomics in both directions) for a fixed count, VM 0 serving;
#  2. (not in the mgmt run) the checker in time mode (LV_VC_SECS seconds,
#     default 60: longer
#     than a migration under load); once both sides run,
#     VM LV_MOVER has the host record query-pvrdma ("pre"), asks to be
#     live-migrated ("mig"), and has query-pvrdma recorded again in the
#     migrated QEMU ("post") while the checker still runs.  "verbs-mig: rc
#     N" on the console after the migration's end tells the host that the
#     run outlasted the migration;
#  3. both sides meet, VM 0 has query-pvrdma recorded once more ("end").
# Each checker run must end with "verbs-check: ok" on both sides (the
# runner looks for these lines as well).
. /usr/lib/pvrdma/tests-common.sh

[ "$PVRDMA_DEVICE" = 1 ] || fail "VM $PVRDMA_VM has no pvrdma device"
case ${LV_MODE:-} in
    coresident|mgmt) [ "$PVRDMA_RENDEZVOUS" = 1 ] || fail "$LV_MODE run without the co-resident transport" ;;
    roce) [ "$PVRDMA_RENDEZVOUS" = 0 ] || fail "roce run with rendezvous" ;;
    *) fail "LV_MODE must be coresident, roce or mgmt, not '${LV_MODE:-}'" ;;
esac
mover=${LV_MOVER:-1}
secs=${LV_VC_SECS:-60}
# more checker options (e.g. --ack-timeout N for the RoCEv2 run)
xo=${LV_VC_ARGS:-}

roce_setup
ping_peer
barrier up 120

# 1. a fixed count in both directions
# shellcheck disable=SC2086
vc_2vm verbs-count 300 "${LV_VC_COUNT:-200}" fwd -n "${LV_VC_COUNT:-200}" -S 65536 -T 60 $xo ||
    fail "$PAIR_ERR"

# 2. time mode across a live migration of VM $mover by virsh (not in the
# mgmt run: its VMs run as two users under two libvirtds)
if [ "$LV_MODE" != mgmt ]; then
vc="pvrdma-verbs-check -p $VC_PORT -D $secs -S 65536 -T 60 $xo"
n=verbs-mig
if [ "$PVRDMA_VM" = 0 ]; then
    # shellcheck disable=SC2086
    timeout $((secs + 120)) $vc server > /tmp/$n.out 2>&1 &
    p=$!
    _wait_listening $n "cm:$VC_PORT" $p || { cat /tmp/$n.out; fail "$n: the server does not listen"; }
    barrier $n-listening 60
else
    barrier $n-listening 60
    # shellcheck disable=SC2086
    timeout $((secs + 120)) $vc client "$PVRDMA_PEER_IP" > /tmp/$n.out 2>&1 &
    p=$!
fi
sleep 4
kill -0 $p 2>/dev/null || { cat /tmp/$n.out; fail "$n: ended before the migration was asked"; }
if [ "$PVRDMA_VM" = "$mover" ]; then
    host_query pre 3
    kill -0 $p 2>/dev/null || { cat /tmp/$n.out; fail "$n: ended before the migration was asked"; }
    log "$n: running; migration asked"
    echo "PVRDMA-MIGRATE mig"
    # the host migrates before it answers a query that came with or
    # after the request: this one reaches the migrated QEMU
    host_query post 3
    kill -0 $p 2>/dev/null || log "$n: ended before the query after the migration (the host check will say)"
fi
wait $p; rc=$?
echo "$n: rc $rc"
barrier $n-done $((secs + 180))
if [ $rc != 0 ]; then
    tail -n 20 /tmp/$n.out
    fail "$n across a migration of VM $mover: rc $rc ($(tail -n 1 /tmp/$n.out))"
fi
_vc_judge $n 100 || fail "$PAIR_ERR"
fi

# 3. the devices after the run (both VMs still up: VM 1 waits for VM 0)
if [ "$PVRDMA_VM" = 0 ]; then
    host_query end 3
fi
barrier end 60
log "all steps passed"
