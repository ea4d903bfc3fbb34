# NFS over RDMA between two VMs over the co-resident transport: VM 0 runs
# the kernel NFS server (nfsd with svcrdma: a tmpfs exported by rpc.nfsd,
# rpc.mountd and exportfs, listening with "echo 'rdma 20049' >
# /proc/fs/nfsd/portlist"), VM 1 the client (nfs with xprtrdma), both on
# vmw_pvrdma0: rdma_cm over the GSI QPs, the client's fast-registration
# MRs, the server's RDMA READs of what the client writes and RDMA WRITEs
# of what it reads, from one guest's memory into the other's.  One step per
# NFS version (3, 4.2, 4.1): VM 1 mounts with
#     mount -t nfs -o proto=rdma,port=20049,vers=V,sec=sys[,nolock] 10.0.0.1:/srv/nfs /mnt/nfs
# checks that it is over RDMA (proto=rdma, the rdma transport in
# /proc/self/mountstats, its rdma_cm IDs to 10.0.0.1:20049 on vmw_pvrdma0),
# writes 8 MiB of random data with O_DIRECT, mounts again, reads them back
# with O_DIRECT and compares; VM 0 checks its end (the IDs from 10.0.0.2
# on vmw_pvrdma0, svcrdma's RDMA READ/WRITE counters and nfsd's bytes) and
# that its file has the md5 of the data VM 1 wrote.  Then nfsd stops and
# its rdma_cm IDs must be gone.  Every mount, I/O and barrier is bounded.
# The host records VM 0's QPs while each version is mounted; 51's host
# check wants the mount's RC QPs in RTS on the co-resident path.
# vms: 2
# timeout: 240
# requires: pvrdma
. /usr/lib/pvrdma/tests-common.sh

wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
NFS_DEV=vmw_pvrdma0 NFS_HOST_QUERY=nfs
ping_peer
if [ "$PVRDMA_VM" = 0 ]; then
    nfs_server_start
else
    run modprobe rpcrdma
    run modprobe nfsv3
    run modprobe nfsv4
fi
barrier nfs-up 120

step v3 nfs_step 0 3 file-v3
step v4.2 nfs_step 0 4.2 file-v4.2
step v4.1 nfs_step 0 4.1 file-v4.1
[ "$PVRDMA_VM" != 0 ] || step server-stop nfs_server_stop
barrier stopped 60
step kernel-clean kernel_clean
steps_done
