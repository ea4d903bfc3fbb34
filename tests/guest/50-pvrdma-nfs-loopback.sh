# NFS over RDMA in one VM: the kernel NFS server (nfsd with svcrdma) and
# client (nfs with xprtrdma, module rpcrdma) both on vmw_pvrdma0, the
# client mounting the VM's own address: the device's loopback transport
# carries rdma_cm over the GSI QP, the RPCs' SENDs and the data as RDMA
# READs (the server pulls what the client writes) and RDMA WRITEs (it
# pushes what the client reads), with the client's fast-registration MRs.
# The server exports a tmpfs with rpc.nfsd, rpc.mountd and exportfs and
# listens with "echo 'rdma 20049' > /proc/fs/nfsd/portlist".  One step per
# NFS version (3, 4.2, 4.1): mount -t nfs -o proto=rdma,port=20049,vers=V,
# check the mount is over RDMA (proto=rdma, the rdma transport in
# /proc/self/mountstats, the rdma_cm IDs of both ends on vmw_pvrdma0),
# write 8 MiB of random data with O_DIRECT, mount again, read them back
# with O_DIRECT and compare; the file on the export must have the same md5
# and the server's counters must show the MiBs went by RDMA READ and WRITE.
# Then nfsd stops and its rdma_cm IDs must be gone.
# vms: 1
# timeout: 180
# requires: pvrdma
. /usr/lib/pvrdma/tests-common.sh

wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
NFS_DEV=vmw_pvrdma0
nfs_server_start

# loop_step VERS: client and server in this VM
loop_step() {
    _f=file-v$1
    _c0=$(nfs_srv_counters)
    nfs_io "$PVRDMA_IP" "$1" "$_f"
    # the server's end of the connection, while the client is mounted
    nfs_cm_check vmw_pvrdma0 "src-addr $PVRDMA_IP:$NFS_PORT dst-addr $PVRDMA_IP:"
    nfs_srv_check "$_c0"
    _s=$(nfs_file_md5 "$_f")
    [ "$_s" = "$(cat /tmp/nfs-md5)" ] ||
        fail "$NFS_EXPORT/$_f: md5 $_s, the data written $(cat /tmp/nfs-md5)"
    log "the export's $_f holds the $NFS_MIB MiB written (md5 $_s)"
    nfs_umount "$PVRDMA_IP"
}

step v3 loop_step 3
step v4.2 loop_step 4.2
step v4.1 loop_step 4.1
step server-stop nfs_server_stop
step kernel-clean kernel_clean
steps_done
