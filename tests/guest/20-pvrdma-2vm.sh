# rc/ud/srq pingpong between two VMs over vmw_pvrdma0 and the co-resident
# transport (VM 0 serves), with -c ("invalid data" fails; -c looks at one
# byte per page) and several sizes: rc
# and srq from 1 byte to 64 KiB (16 pages, so several SGE pages per message),
# ud up to the active MTU (1024).
#
# Then 20 more srq runs back to back.  ibv_srq_pingpong's client exits with
# sends still in flight and frees their buffers at once; before the fence
# (DESTROY_QP waits until the peer executed or dropped them) about one run in
# 20 delivered freed memory and the server printed "invalid data".
# Last, the data check: the verbs checker (pvrdma-verbs-check: every byte
# of every operation in both directions) in rc (up to 1 MiB, 4 SGEs, 16 in
# flight; then 3 and 4 MiB, which the responder executes in pieces), srq
# (VM 1 serves) and ud mode, and three mutants the server must
# catch (a corrupted WRITE, guard bytes after a WRITE's data, a byte_len).
# vms: 2
# timeout: 400
# requires: pvrdma
. /usr/lib/pvrdma/tests-common.sh

wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
barrier pvrdma-up 60
two_vm_pingpongs vmw_pvrdma0 "rc:1 rc:4096 rc:65536 ud:1 ud:512 ud:1024 srq:1 srq:4096 srq:65536"
# the data check: every byte, every op, both directions, up to 4 MiB
vc_2vm_all
bad=0
# the checker's checks fire on this path too: VM 1's client delivers its
# message 20 wrong (a corrupted WRITE, a WRITE's guard bytes overwritten
# after its data, a SEND's byte_len), VM 0's server must catch each
C="-T 10 -S 8192 -n 100"
vc_2vm_catch cr-corrupt 60 "at=data" "$C -o write" "--corrupt 20" || bad=$((bad + 1))
vc_2vm_catch cr-guard-after 60 "at=guard after data" "$C -o write" "--corrupt 20 --mutate guard-after" || bad=$((bad + 1))
vc_2vm_catch cr-len 60 "byte_len" "$C -o send" "--corrupt 20 --mutate len" || bad=$((bad + 1))
[ $bad = 0 ] || fail "$bad of 3 co-resident mutants went wrong (first: $PAIR_ERR)"
i=0
while [ $i -lt 10 ]; do
    i=$((i + 1))
    two_vm_pingpongs vmw_pvrdma0 "srq:4096 srq:65536"
done
