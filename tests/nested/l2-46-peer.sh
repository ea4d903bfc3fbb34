#!/bin/sh
# L2 side of 46-hca-l2-ulps.sh: the guest's kernel ULPs on vmw_pvrdma0,
# whose device runs them on L1's rxe0 (ibdev=rxe0).  Same steps, same
# barriers as the L1 side.
. /usr/lib/pvrdma/tests-common.sh
export ULP_IP=10.0.1.2 ULP_PEER_IP=10.0.1.1 ULP_DEV=vmw_pvrdma0 NFS_DEV=vmw_pvrdma0
# NFS v3's MOUNT protocol is TCP: to L1's 10.0.0.1 (a TCP reply to
# 10.0.1.2, an address of L1's too, would stay in L1)
export NFS_V3_OPTS=mountaddr=10.0.0.1,mountport=20048,mountproto=tcp
wait_dev vmw_pvrdma0 30 || fail "vmw_pvrdma0 not registered/ACTIVE"
ip addr add 10.0.1.2/24 dev eth0 || fail "ip addr add 10.0.1.2/24 dev eth0"
g=$(wait_gid vmw_pvrdma0 10.0.1.2 "RoCE v2" 20) || { dump_gids vmw_pvrdma0; fail "no GID for 10.0.1.2"; }
log "vmw_pvrdma0 GID index $g (10.0.1.2)"
run modprobe nvme_rdma
barrier l2-up 120

nvme_step() {
    _nq=nqn.2026-12.org.qemu:hca-target-$1 _r=0
    if [ "$1" = l2 ]; then
        ( PVRDMA_IP=$ULP_IP nvmet_export "$_nq" ) || _r=1
        barrier "$_nq-up" 90
        barrier "$_nq-io" 300
        ( ulp_cm_ids nvmet_rdma vmw_pvrdma0 "src-addr $ULP_IP:4420 dst-addr $ULP_PEER_IP:" ) || _r=1
        barrier "$_nq-checked" 60
        _sum=$(head -c $((NVME_MIB * 1048576)) /dev/ram0 | md5sum | cut -d' ' -f1)
    else
        barrier "$_nq-up" 120
        ( nvme_io "$_nq" "$ULP_PEER_IP" "$ULP_DEV" ) || _r=1
        _sum=$(md5sum < /tmp/pattern 2>/dev/null | cut -d' ' -f1)
        barrier "$_nq-io" 60
        barrier "$_nq-checked" 60
        ( nvme_disconnect ) || _r=1
    fi
    md5_agree "$_nq" "${_sum:-none}" "the written data / the target's disk"
    return $_r
}

nfs_l1() {
    _nf=hca-v$1 _r=0
    barrier "$_nf-up" 60
    ( nfs_io "$ULP_PEER_IP" "$1" "$_nf" ) || _r=1
    barrier "$_nf-io" 60
    barrier "$_nf-checked" 60
    ( nfs_umount "$ULP_PEER_IP" ) || _r=1
    md5_agree "$_nf" "$(cat /tmp/nfs-md5 2>/dev/null || echo none)" "the data written"
    return $_r
}

iser_l1() {
    _r=0
    barrier iser-up 60
    ( iser_login iqn.2026-12.org.qemu.pvrdma:hca "$ULP_PEER_IP" &&
      ulp_cm_ids ib_iser vmw_pvrdma0 "dst-addr $ULP_PEER_IP:3260" &&
      iser_io "$ISER_DISK" ) || _r=1
    barrier iser-io 60
    barrier iser-checked 60
    md5_agree iser "$(md5sum < /tmp/iser-pattern 2>/dev/null | cut -d' ' -f1)" "the data written"
    return $_r
}

step nvme-target-l1 nvme_step l1
step nvme-target-l2 nvme_step l2
step nfs-v3 nfs_l1 3
step nfs-v4.2 nfs_l1 4.2
step iser-target true
step iser-target-l1 iser_l1
step rds-up rds_up vmw_pvrdma0
step rds-l2-l1 rds_xfers 0 l2l1-
step rds-l1-l2 rds_xfers 1 l1l2-
step frmr-cost true
dmesg | tail -n 30
step kernel-clean kernel_clean
steps_done
