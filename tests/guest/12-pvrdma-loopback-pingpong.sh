# rc/ud/srq pingpong over vmw_pvrdma0 inside one VM (client -> 127.0.0.1),
# with -c ("invalid data" fails the run; -c looks at the first byte of each
# page only) and several sizes; then the data check: the verbs checker
# (pvrdma-verbs-check, every byte of SEND, SEND with immediate, WRITE,
# WRITE with immediate, READ, CAS and FAA in both directions, every MTU
# boundary) in rc, srq and ud mode over the device's loopback path, and
# rc with messages of 1 MiB, and of 3 and 4 MiB (longer than the byte
# budget of a pass: the device moves them in pieces, one per pass).
# vms: 1
# timeout: 400
# requires: pvrdma
. /usr/lib/pvrdma/tests-common.sh

wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
gidx=$(roce_v2_gid vmw_pvrdma0)
log "vmw_pvrdma0 RoCE v2 GID index for $PVRDMA_IP: $gidx"
loopback_pingpongs vmw_pvrdma0 "$gidx"
bad=0
for m in rc srq ud; do
    vc_loopback "vc-$m" 180 200 -t "$m" -n 200 -S 65536 || bad=$((bad + 1))
done
# and messages of 1 MiB (every one: -s), 40 each way
vc_loopback vc-rc-1m 240 40 -t rc -n 40 -s 1048576,1048575,524289 || bad=$((bad + 1))
# longer than the device's byte budget per pass (1 MiB): moved in pieces
vc_loopback vc-rc-4m 300 16 -t rc -n 16 -S 4194304 -s 4194304,3145729 || bad=$((bad + 1))
[ $bad = 0 ] || fail "$bad of 5 verbs checker runs failed (first: $PAIR_ERR)"
