/*
 * QEMU VMware paravirtual RDMA device (PVRDMA): the transports that reach
 * outside this QEMU process, set up from the device's properties.
 *
 * 'rendezvous' (and 'rendezvous-secret'): the co-resident transport, which
 * offers this VM's shared RAM to peer QEMU processes on the same host;
 * 'ibdev' (and 'ibport', 'gid-index', 'cm-listen'): the host HCA
 * transport with rdma_cm for the guest.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/main-loop.h"
#include "qemu/units.h"
#include "qemu/cutils.h"
#include "qemu/error-report.h"
#include "crypto/secret_common.h"
#include "hw/boards.h"
#include "system/system.h"
#include "hw/rdma/pvrdma_coresident.h"
#include "hw/rdma/pvrdma_coresident_wire.h"
#include "hw/rdma/pvrdma_hostcm.h"
#include "hw/rdma/pvrdma_hostverbs.h"
#include "pvrdma_dev.h"
#include PVRDMA_RAMBLOCK_H

/* ------------------------------------------------------------------ */
/* Co-resident and host HCA transports                                 */

/*
 * The host's set_fd_handler (PvrdmaHostOps); opaque is the device.  The
 * handlers run device code outside the device's re-entrancy guard; what
 * could reach the device's own BARs from there, an interrupt whose MSI-X
 * address the guest aimed at them, is raised from the guarded interrupt
 * bottom half (pvrdma_notify()), and its DMA only ever reaches RAM.
 */
void pvrdma_set_fd_handler(void *opaque, int fd, void (*read)(void *),
                           void (*write)(void *), void *arg)
{
    qemu_set_fd_handler(fd, read, write, arg);
}

static int pvrdma_add_region(RAMBlock *rb, void *opaque)
{
    GArray *regions = opaque;
    PvrdmaShmRegion r;

    /* peers map only memory that cannot shrink under them */
    if (qemu_ram_get_fd(rb) < 0 || !qemu_ram_is_shared(rb) ||
        !pvrdma_coresident_fd_ok(qemu_ram_get_fd(rb))) {
        return 0;
    }
    r = (PvrdmaShmRegion) {
        .host = qemu_ram_get_host_addr(rb),
        .size = qemu_ram_get_used_length(rb),
        .fd = qemu_ram_get_fd(rb),
        .fd_offset = rb->fd_offset,
    };
    g_array_append_val(regions, r);
    return 0;
}

/* QEMU exits without unrealizing devices: leave the directory tidy. */
static void pvrdma_exit_notify(Notifier *n, void *data)
{
    PvrdmaState *s = container_of(n, PvrdmaState, exit_notifier);

    if (s->coresident) {
        pvrdma_coresident_leave(s->coresident);
    }
}

/* Shorter rendezvous secrets are a guess away: warn. */
#define PVRDMA_SECRET_MIN   16

/*
 * Peers map our guest RAM: it must come from a shareable memory backend
 * whose memfd is sealed against shrinking.  Offer every such RAM block.
 * Peers must run as our uid and, with 'rendezvous-secret', know the bytes
 * of that secret object.
 */
bool pvrdma_join(PvrdmaState *s, Error **errp)
{
    ERRP_GUARD();
    MachineState *ms = MACHINE(qdev_get_machine());
    g_autoptr(GArray) regions = g_array_new(false, false,
                                            sizeof(PvrdmaShmRegion));
    uint8_t *secret = NULL;
    size_t secret_len = 0;
    PvrdmaTransport *t;

    if (!ms->ram || memory_region_get_fd(ms->ram) < 0 ||
        !qemu_ram_is_shared(ms->ram->ram_block)) {
        g_autofree char *sz = g_strdup_printf("%" PRIu64 "M",
                                              ms->ram_size / MiB);

        error_setg(errp, "pvrdma: co-resident peers need guest RAM that "
                   "other QEMU processes can map: add -object memory-backend-memfd,"
                   "id=mem,size=%s,share=on -machine memory-backend=mem", sz);
        return false;
    }
    if (s->poll_max_ns) {
        warn_report("pvrdma: poll-max-ns is deprecated and has no effect: "
                    "the main loop no longer spins on a peer's ring (it "
                    "had to drop the big QEMU lock to do so)");
    }
    if (!pvrdma_coresident_fd_ok(memory_region_get_fd(ms->ram))) {
        error_setg(errp, "pvrdma: co-resident peers need guest RAM that "
                   "cannot shrink under the peers that map it (a file could be "
                   "truncated and crash them): use memory-backend-memfd "
                   "with seal=on (its default), not memory-backend-file");
        return false;
    }
    if (s->rendezvous_secret) {
        if (qcrypto_secret_lookup(s->rendezvous_secret, &secret, &secret_len,
                                  errp)) {
            error_prepend(errp, "pvrdma: rendezvous-secret=%s: ",
                          s->rendezvous_secret);
            return false;
        }
        if (!secret_len) {
            g_free(secret);
            error_setg(errp, "pvrdma: rendezvous-secret=%s: the secret is "
                       "empty", s->rendezvous_secret);
            return false;
        }
        if (secret_len < PVRDMA_SECRET_MIN) {
            warn_report("pvrdma: rendezvous-secret=%s has %zu bytes: a "
                        "process that reaches the rendezvous directory can "
                        "test guesses of it offline; use %d random bytes "
                        "or more", s->rendezvous_secret, secret_len,
                        PVRDMA_SECRET_MIN);
        }
    }
    qemu_ram_foreach_block(pvrdma_add_region, regions);
    t = pvrdma_coresident_new(&s->core, s->rendezvous, secret, secret_len,
                              (PvrdmaShmRegion *)regions->data, regions->len,
                              CR_F_ALL, errp);
    if (secret) {
        explicit_bzero(secret, secret_len);     /* the transport has a copy */
        g_free(secret);
    }
    if (!t) {
        error_prepend(errp, "pvrdma: ");
        return false;
    }
    pvrdma_coresident_set_rings(t, s->cr_rings ? CR_RING_SIZE : 0);
    pvrdma_core_add_transport(&s->core, t);
    s->coresident = t;
    s->exit_notifier.notify = pvrdma_exit_notify;
    qemu_add_exit_notifier(&s->exit_notifier);
    return true;
}

#define PVRDMA_CM_MAX_PORTS 256

/*
 * 'cm-listen': PORT or FIRST-LAST, several joined with ':'.  false with
 * errp set on a bad list.
 */
static bool pvrdma_parse_ports(const char *list, GArray *ports, Error **errp)
{
    g_auto(GStrv) items = g_strsplit(list, ":", -1);

    for (char **it = items; *it; it++) {
        unsigned long first, last;
        const char *end;

        if (qemu_strtoul(*it, &end, 10, &first) < 0 ||
            (*end && *end != '-')) {
            goto bad;
        }
        last = first;
        if (*end == '-' && qemu_strtoul(end + 1, NULL, 10, &last) < 0) {
            goto bad;
        }
        if (!first || last > 65535 || last < first ||
            ports->len + (last - first + 1) > PVRDMA_CM_MAX_PORTS) {
            goto bad;
        }
        for (unsigned long p = first; p <= last; p++) {
            uint16_t v = p;

            g_array_append_val(ports, v);
        }
    }
    if (ports->len) {
        return true;
    }
bad:
    error_setg(errp, "pvrdma: cm-listen=%s: give TCP-style ports 1-65535 "
               "for the guest's rdma_cm listeners, e.g. 7174 or "
               "7174:18515-18520 (at most %d ports)", list,
               PVRDMA_CM_MAX_PORTS);
    return false;
}

/*
 * rdma_cm for the guest in host HCA mode.  Without 'cm-listen' the guest
 * can still connect out, so a host without rdma_cm is only a warning.
 */
static bool pvrdma_open_cm(PvrdmaState *s, GArray *ports, Error **errp)
{
    Error *err = NULL;
    PvrdmaTransport *t;

    t = pvrdma_hostcm_new(&s->core, (uint16_t *)ports->data, ports->len,
                          &err);
    if (!t) {
        if (s->cm_listen) {
            error_propagate_prepend(errp, err, "pvrdma: cm-listen: ");
            return false;
        }
        warn_reportf_err(err, "pvrdma: rdma_cm in the guest will not work: ");
        return true;
    }
    pvrdma_core_add_transport(&s->core, t);
    return true;
}

/*
 * Host HCA mode: the guest's verbs objects become host objects.  Guest RAM
 * from a shareable backend lets MRs of scattered pages be mapped again
 * contiguously; without one only MRs of contiguous pages work.
 */
bool pvrdma_open_hca(PvrdmaState *s, Error **errp)
{
    ERRP_GUARD();
    g_autoptr(GArray) regions = g_array_new(false, false,
                                            sizeof(PvrdmaShmRegion));
    g_autoptr(GArray) ports = g_array_new(false, false, sizeof(uint16_t));
    PvrdmaTransport *t;
    PvrdmaHcaConfig cfg = {
        .dev = s->ibdev,
        .port = s->ibport,
        .gid_index = s->gid_index,
    };

    if (!strcmp(s->ibdev, "auto")) {
        error_setg(errp, "pvrdma: ibdev=auto is not accepted: name the host "
                   "RDMA device (ibv_devices lists them), so that the VM "
                   "does not take whichever one comes first");
        return false;
    }
    if (s->gid_index < -1) {
        error_setg(errp, "pvrdma: gid-index %d: use -1 (the guest's GID) or "
                   "a host GID table index", s->gid_index);
        return false;
    }
    if (s->cm_listen && !pvrdma_parse_ports(s->cm_listen, ports, errp)) {
        return false;
    }
    qemu_ram_foreach_block(pvrdma_add_region, regions);
    t = pvrdma_hostverbs_new(&s->core, &cfg, &s->core.lim,
                             (PvrdmaShmRegion *)regions->data, regions->len,
                             errp);
    if (!t) {
        error_prepend(errp, "pvrdma: ibdev=%s: ", s->ibdev);
        return false;
    }
    pvrdma_core_add_transport(&s->core, t);     /* the object owner */
    return pvrdma_open_cm(s, ports, errp);
}
