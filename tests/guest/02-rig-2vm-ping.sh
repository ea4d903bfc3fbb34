# Rig self-test: two VMs whose vmxnet3s share a dgram netdev reach each other.
# vms: 2
# timeout: 120
. /usr/lib/pvrdma/tests-common.sh

[ -n "${PVRDMA_PEER_IP:-}" ] || fail "no PVRDMA_PEER_IP (two-VM mode?)"
i=0
until ping -c 1 -W 1 "$PVRDMA_PEER_IP" >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -lt 30 ] || fail "peer $PVRDMA_PEER_IP does not answer ping"
done
run ping -c 3 -i 0.2 "$PVRDMA_PEER_IP"
barrier pinged 60
ip neigh show dev "$PVRDMA_NETIF" | sed 's/^/  /'
