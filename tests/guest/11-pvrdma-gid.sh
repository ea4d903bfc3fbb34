# GID table: the IPv4-mapped GID of the configured address exists as a
# "RoCE v2" GID (the device default, roce-version=2; the unmodified Linux
# driver registers GIDs of exactly one type, so v1 needs roce-version=1),
# no v1 GID appears, and the table follows address changes.
# vms: 1
# timeout: 120
# requires: pvrdma
. /usr/lib/pvrdma/tests-common.sh

D=vmw_pvrdma0
wait_dev $D 15 || fail "$D not registered/ACTIVE"
v2=$(wait_gid $D "$PVRDMA_IP" "RoCE v2" 10) || { dump_gids $D; fail "no RoCE v2 GID for $PVRDMA_IP"; }
! gid_index $D "$PVRDMA_IP" "IB/RoCE v1" >/dev/null || fail "unexpected RoCE v1 GID with roce-version=2"
log "$PVRDMA_IP: RoCE v2 index $v2"
dump_gids $D
[ "$(cat /sys/class/infiniband/$D/ports/1/gid_attrs/ndevs/$v2)" = "$PVRDMA_NETIF" ] ||
    fail "GID $v2 is not bound to $PVRDMA_NETIF"

NEW=10.0.0.101
run ip addr add $NEW/24 dev "$PVRDMA_NETIF"
n2=$(wait_gid $D $NEW "RoCE v2" 10) || { dump_gids $D; fail "no RoCE v2 GID after adding $NEW"; }
log "$NEW: RoCE v2 index $n2"
gid_index $D "$PVRDMA_IP" "RoCE v2" >/dev/null || fail "GID of $PVRDMA_IP vanished after adding $NEW"

run ip addr del $NEW/24 dev "$PVRDMA_NETIF"
i=0
while gid_index $D $NEW "RoCE v2" >/dev/null || gid_index $D $NEW "IB/RoCE v1" >/dev/null; do
    i=$((i + 1)); [ $i -lt 100 ] || { dump_gids $D; fail "GIDs of $NEW still present after deleting it"; }
    sleep 0.1
done
gid_index $D "$PVRDMA_IP" "RoCE v2" >/dev/null || fail "GID of $PVRDMA_IP vanished after deleting $NEW"
dump_gids $D
