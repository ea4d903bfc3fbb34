#!/bin/sh
# L1: kernel RDMA storage and file protocols between an L2 guest whose
# pvrdma device uses rxe0 (ibdev=rxe0: the guest's QPs are rxe0's, its
# fast-registration MRs rxe0's type 2 memory windows) and L1's own
# soft-RoCE, each with a data check, the guest as initiator (client) and,
# where the protocol listens through the device's cm-listen, as target:
#   nvme-target-l1   nvmet-rdma in L1 on 10.0.1.1:4420, nvme-rdma in L2
#                    (FRMRs, remote invalidation): 8 MiB written and read
#                    back with O_DIRECT, compared, and L1's disk holds them
#   nvme-target-l2   nvmet-rdma in L2 on 10.0.1.2:4420 (cm-listen), the
#                    initiator in L1; the same checks
#   nfs-v3, nfs-v4.2 L1's nfsd with its RDMA listener on port 20049, L2
#                    mounts proto=rdma (xprtrdma: FRMRs) and writes and
#                    reads 8 MiB with O_DIRECT; L1's file holds them
#   iser-target-l1   LIO with an iSER portal in L1 on 10.0.1.1:3260, L2
#                    logs in over iser (ib_iser: FRMRs, its own lkeys in
#                    SENDs); 8 MiB O_DIRECT, compared, and L1's LUN
#   rds-l2-l1, rds-l1-l2  RDS over rds_rdma both ways, every message
#                    checked byte for byte
#   frmr-cost        the L2 QEMU traced every FAST_REG_MR it ran on rxe0
#                    (pvrdma_hv_fast_reg): their number and what one cost
#                    (pages mapped, host MR registered, window bound)
# Addresses as in 41: L2 is 10.0.0.2 (TCP for the barriers) and 10.0.1.2
# (its RoCE address, which L1's br0 has too, so rxe0 has its GID); L1
# serves on 10.0.1.1, which L2 reaches from 10.0.1.2 (a kernel ULP cannot
# be told its source address).  Every RDMA connection of L2 is an rdma_cm
# connection of L1's made by the device on the guest's behalf.
# timeout: 1800
. /usr/lib/pvrdma/tests-common.sh
export PVRDMA_VM=0 BARRIER_PORT=18600
# the ULPs' addresses (the barriers use PVRDMA_PEER_IP, L2's 10.0.0.2)
export ULP_IP=10.0.1.1 ULP_PEER_IP=10.0.1.2 ULP_DEV=rxe0
/usr/bin/ip addr add 10.0.1.2/32 dev br0 || fail "ip addr add 10.0.1.2/32 dev br0"
/usr/bin/ip addr add 10.0.1.1/32 dev br0 || fail "ip addr add 10.0.1.1/32 dev br0"
# L2's ARP request for 10.0.1.1 comes from 10.0.1.2, which L1 has too
echo 1 > /proc/sys/net/ipv4/conf/br0/accept_local ||
    fail "net.ipv4.conf.br0.accept_local=1"
wait_gid rxe0 10.0.1.1 "RoCE v2" 10 > /dev/null || fail "rxe0: no RoCE v2 GID for 10.0.1.1"
L2LOG=/tmp/l2/l2-46-peer-tap0
/usr/lib/pvrdma/l2.sh -n 0 -t 1600 -e PVRDMA_VM=1 --mem 768M \
    --device pvrdma,addr=4.1,ibdev=rxe0,cm-listen=4420:3260 \
    --qemu-args "-object memory-backend-memfd,id=mem,size=768M,share=on -machine memory-backend=mem -d guest_errors -trace pvrdma_hv_fast_reg -trace pvrdma_hv_local_inv -trace pvrdma_hv_modify_qp -trace pvrdma_hv_async -trace pvrdma_cm_*" \
    /usr/lib/pvrdma/nested/l2-46-peer.sh > /tmp/l2.out 2>&1 &
l2=$!
barrier l2-up 900 || fail "L2 guest did not come up"

# frmr_cost: the FAST_REG_MRs the L2 QEMU ran on rxe0 (its trace), at
# least one per MiB that L2's initiators moved, and what one cost
frmr_cost() {
    _tr=$L2LOG/qemu.stderr
    _n=$(grep -c 'pvrdma_hv_fast_reg .*registered and bound in' "$_tr")
    _ni=$(grep -c 'pvrdma_hv_local_inv ' "$_tr")
    log "L2's QEMU: $_n FAST_REG_MRs and $_ni LOCAL_INVs on rxe0"
    [ "$_n" -ge 8 ] || fail "only $_n FAST_REG_MRs through rxe0 (the guest's initiators moved megabytes)"
    sed -n 's/.* in \([0-9]*\) runs: remap \([0-9]*\) us, registered and bound in \([0-9]*\) us.*/\1 \2 \3/p' "$_tr" |
        sort -n -k3 > /tmp/frmr.cost
    awk '{ n++; t[n] = $3; m += $2; s += $3; r += $1 }
         END { printf "FRMR cost: %d registrations, %.1f page runs each; mapping %.0f us, whole %.0f us on average; median %d us, 90th percentile %d us, max %d us\n",
               n, r / n, m / n, s / n, t[int((n + 1) / 2)], t[int(n * 0.9) > 0 ? int(n * 0.9) : 1], t[n] }' /tmp/frmr.cost
}

# nvme_step TARGET (l1 or l2): one direction of NVMe over RDMA
nvme_step() {
    _nq=nqn.2026-12.org.qemu:hca-target-$1 _r=0
    if [ "$1" = l1 ]; then
        ( PVRDMA_IP=$ULP_IP nvmet_export "$_nq" ) || _r=1
        barrier "$_nq-up" 90
        barrier "$_nq-io" 300
        ( ulp_cm_ids nvmet_rdma rxe0 "src-addr $ULP_IP:4420 dst-addr $ULP_PEER_IP:" ) || _r=1
        barrier "$_nq-checked" 60
        _sum=$(head -c $((NVME_MIB * 1048576)) /dev/ram0 | md5sum | cut -d' ' -f1)
    else
        barrier "$_nq-up" 120
        ( nvme_io "$_nq" "$ULP_PEER_IP" "$ULP_DEV" "$ULP_IP" ) || _r=1
        _sum=$(md5sum < /tmp/pattern 2>/dev/null | cut -d' ' -f1)
        barrier "$_nq-io" 60
        barrier "$_nq-checked" 60
        ( nvme_disconnect ) || _r=1
    fi
    MD5_WAIT=150 md5_agree "$_nq" "${_sum:-none}" "the written data / the target's disk" || _r=1
    return $_r
}

# nfs_l1 VERS: L2 writes and reads through a mount of L1's export
nfs_l1() {
    _nf=hca-v$1 _r=0
    barrier "$_nf-up" 60
    barrier "$_nf-io" 400
    ( nfs_cm_check rxe0 "src-addr $ULP_IP:$NFS_PORT dst-addr $ULP_PEER_IP:" ) || _r=1
    barrier "$_nf-checked" 60
    md5_agree "$_nf" "$(nfs_file_md5 "$_nf")" "L1's $_nf / the data L2 wrote" || _r=1
    return $_r
}

iser_target_up() {
    iser_brd_ready
    iser_target iqn.2026-12.org.qemu.pvrdma:hca "$ULP_IP" brd
}

# iser_l1: L2 logs in to L1's target and does its I/O
iser_l1() {
    _r=0
    barrier iser-up 60
    barrier iser-io 300
    ( ulp_cm_ids ib_isert rxe0 "src-addr $ULP_IP:3260 dst-addr $ULP_PEER_IP:" ) || _r=1
    barrier iser-checked 60
    md5_agree iser "$(iser_backstore_md5)" "L1's LUN / the data L2 wrote" || _r=1
    ( iser_target_clean ) || _r=1
    return $_r
}

# the L2 guest's output and its QEMU's messages, whatever happens
l2_report() {
    wait $l2; rc=$?
    cat /tmp/l2.out
    if [ "$rc" != 0 ] || [ "$STEPS_BAD" != 0 ]; then
        echo "--- L2 QEMU stderr (last 40 lines but FRMR traces) ---"
        grep -v 'pvrdma_hv_fast_reg\|pvrdma_hv_local_inv' "$L2LOG/qemu.stderr" 2>/dev/null | tail -n 40
    fi
}
trap l2_report EXIT

step nvme-target-l1 nvme_step l1
step nvme-target-l2 nvme_step l2
nfs_server_start
step nfs-v3 nfs_l1 3
step nfs-v4.2 nfs_l1 4.2
nfs_server_stop
step iser-target iser_target_up
step iser-target-l1 iser_l1
step rds-up rds_up rxe0
step rds-l2-l1 rds_xfers 0 l2l1-
step rds-l1-l2 rds_xfers 1 l1l2-
step frmr-cost frmr_cost
trap - EXIT
l2_report
step kernel-clean kernel_clean
[ "$rc" = 0 ] || fail "L2 guest side failed (rc $rc): $(grep -m1 'FAIL' /tmp/l2.out)"
steps_done
