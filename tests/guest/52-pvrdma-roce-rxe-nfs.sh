# NFS over RDMA over RoCEv2 between the device and Linux soft-RoCE: VM 0
# has vmxnet3 + the pvrdma device, VM 1 virtio-net + rdma_rxe (rxe0), on
# one QEMU netdev, no co-resident transport.  Each VM runs the kernel NFS
# server (nfsd with svcrdma: a tmpfs exported by rpc.nfsd, rpc.mountd and
# exportfs, "echo 'rdma 20049' > /proc/fs/nfsd/portlist"); the client is
# the kernel's (nfs with xprtrdma), every byte over the wire.  Steps (the
# name says where the server is), NFS v3, v4.2 and v4.1 each way:
#   rxe-server-V     VM 0 mounts 10.0.0.2:/srv/nfs over vmw_pvrdma0
#   pvrdma-server-V  VM 1 mounts 10.0.0.1:/srv/nfs over rxe0
# with mount -t nfs -o proto=rdma,port=20049,vers=V,sec=sys[,nolock].  In
# each the client checks that it is over RDMA (proto=rdma, the rdma
# transport in /proc/self/mountstats, its rdma_cm IDs to :20049 on its own
# device), writes 8 MiB of random data with O_DIRECT, mounts again, reads
# them back with O_DIRECT and compares; the server checks its rdma_cm IDs
# from the client are on its device, that svcrdma moved the data with RDMA
# READs and WRITEs and nfsd read and wrote the 8 MiB, and that its file
# has the md5 of the data written.  rxe0's packet counters must grow by at
# least the 8 MiB in 1 KiB packets (path MTU 1024) both ways in every step.
# Then both servers stop (their rdma_cm IDs gone).  Every mount, I/O and
# barrier is bounded.
# vms: 2
# timeout: 300
# requires: pvrdma
# vm-args: --nic vmxnet3,virtio
. /usr/lib/pvrdma/tests-common.sh

roce_rxe_vms
NFS_DEV=$ROCE_DEV
nfs_server_start
barrier nfs-up 120

# roce_nfs_step SERVER_VM VERS FILE: nfs_step, and in the rxe VM the
# RoCEv2 packets rxe0 sent and received meanwhile: the client's writes
# travel as RDMA READ responses and its reads as RDMA WRITEs, each at
# least the packets NFS_MIB MiB need (rxe_grew)
roce_nfs_step() {
    _r=0 _pk=$(rxe_pkts) _b=$((NFS_MIB * 1048576))
    nfs_step "$@" || _r=1
    [ "$PVRDMA_DEVICE" = 1 ] || ( rxe_grew "$_pk" "$_b" "$_b" ) || _r=1
    return $_r
}

step rxe-server-v3 roce_nfs_step 1 3 rxe-v3
step rxe-server-v4.2 roce_nfs_step 1 4.2 rxe-v4.2
step rxe-server-v4.1 roce_nfs_step 1 4.1 rxe-v4.1
step pvrdma-server-v3 roce_nfs_step 0 3 pvrdma-v3
step pvrdma-server-v4.2 roce_nfs_step 0 4.2 pvrdma-v4.2
step pvrdma-server-v4.1 roce_nfs_step 0 4.1 pvrdma-v4.1
step server-stop nfs_server_stop
barrier stopped 60
step kernel-clean kernel_clean
roce_diag
steps_done
