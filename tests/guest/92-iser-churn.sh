# iSER connection churn on the loopback transport (scripts/soak-guest.sh;
# not in make check): one VM is the LIO target with an iSER portal and the
# initiator.  ISER_REFUSED times (default 6) iscsistart asks for a target
# the portal does not have for ISER_REFUSED_SECS seconds (default 8), and
# retries while it is refused: every attempt sets up an rdma_cm connection,
# exchanges login PDUs and tears it down, QPs destroyed by both ends while
# their CQs (the target's shared by every connection) are busy.  Then a
# login that works, and 2 MiB written and read back.  What it looks for: a
# guest that locks up (soft lockup) or a login that hangs while
# connections come and go.
# vms: 1
# timeout: 600
# requires: pvrdma
. /usr/lib/pvrdma/tests-common.sh
IQN=iqn.2026-11.org.qemu.pvrdma:loopback
ISER_MIB=2
wait_dev vmw_pvrdma0 15 || fail "vmw_pvrdma0 not registered/ACTIVE"
iser_target "$IQN" "$PVRDMA_IP" ram
i=1
while [ "$i" -le "${ISER_REFUSED:-6}" ]; do
    iser_login_refused "$IQN.missing$i" "$PVRDMA_IP" "${ISER_REFUSED_SECS:-8}"
    i=$((i + 1))
done
# the last refused connection's target side gives up its login after 15 s
sleep 16
iser_login "$IQN" "$PVRDMA_IP"
iser_io "$ISER_DISK"
kernel_clean
