/*
 * QEMU VMware paravirtual RDMA device (PVRDMA): the device side of the
 * host HCA transport (backend/hostverbs*.c) and its rdma_cm translation
 * for the guest (backend/hostcm*.c).
 *
 * 'ibdev' (and 'ibport', 'gid-index', 'cm-listen'): the guest's verbs
 * objects become objects of that host RDMA device.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/cutils.h"
#include "qemu/error-report.h"
#include "hw/qdev-properties.h"
#include "migration/blocker.h"
#include "hw/rdma/pvrdma_hostcm.h"
#include "hw/rdma/pvrdma_hostverbs.h"
#include "pvrdma_dev.h"

#define TYPE_PVRDMA_HCA_LINK "pvrdma-hca-link"
OBJECT_DECLARE_SIMPLE_TYPE(PvrdmaHcaLink, PVRDMA_HCA_LINK)

struct PvrdmaHcaLink {
    PvrdmaLink parent_obj;
    char *ibdev;            /* the host RDMA device's name */
    uint8_t ibport;         /* its port, 0: the first active one */
    int32_t gid_index;      /* host GID index to use, -1: the guest's GID */
    char *cm_listen;        /* rdma_cm ports taken for the guest */
    Error *migration_blocker;   /* the host device's objects */
};

#define PVRDMA_CM_MAX_PORTS 256

/*
 * 'cm-listen': PORT or FIRST-LAST, several joined with ':'.  false with
 * errp set on a bad list.
 */
static bool hca_link_parse_ports(const char *list, GArray *ports,
                                 Error **errp)
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
static bool hca_link_open_cm(PvrdmaHcaLink *hl, GArray *ports, Error **errp)
{
    PvrdmaCore *c = &PVRDMA_LINK(hl)->dev->core;
    Error *err = NULL;
    PvrdmaTransport *t;

    t = pvrdma_hostcm_new(c, (uint16_t *)ports->data, ports->len, &err);
    if (!t) {
        if (hl->cm_listen) {
            error_propagate_prepend(errp, err, "pvrdma: cm-listen: ");
            return false;
        }
        warn_reportf_err(err, "pvrdma: rdma_cm in the guest will not work: ");
        return true;
    }
    pvrdma_core_add_transport(c, t);
    return true;
}

/* The options of the host HCA mode; false, errp set, on a bad one. */
static bool hca_link_check(PvrdmaHcaLink *hl, GArray *ports, Error **errp)
{
    if (!hl->ibdev) {
        if (hl->ibport || hl->gid_index != -1 || hl->cm_listen) {
            error_setg(errp, "pvrdma: 'ibport', 'gid-index' and 'cm-listen' "
                       "apply to a host RDMA device: they need 'ibdev'");
            return false;
        }
        return true;
    }
    if (!strcmp(hl->ibdev, "auto")) {
        error_setg(errp, "pvrdma: ibdev=auto is not accepted: name the host "
                   "RDMA device (ibv_devices lists them), so that the VM "
                   "does not take whichever one comes first");
        return false;
    }
    if (hl->gid_index < -1) {
        error_setg(errp, "pvrdma: gid-index %d: use -1 (the guest's GID) or "
                   "a host GID table index", hl->gid_index);
        return false;
    }
    return !hl->cm_listen || hca_link_parse_ports(hl->cm_listen, ports, errp);
}

/*
 * Host HCA mode: the guest's verbs objects become host objects.  Guest RAM
 * from a shareable backend lets MRs of scattered pages be mapped again
 * contiguously; without one only MRs of contiguous pages work.  Such a
 * device does not migrate: its objects live on the host device.
 */
static bool hca_link_add(PvrdmaLink *l, Error **errp)
{
    ERRP_GUARD();
    PvrdmaHcaLink *hl = PVRDMA_HCA_LINK(l);
    PvrdmaCore *c = &l->dev->core;
    g_autoptr(GArray) ports = g_array_new(false, false, sizeof(uint16_t));
    g_autoptr(GArray) regions = NULL;
    PvrdmaHcaConfig cfg = {
        .dev = hl->ibdev,
        .port = hl->ibport,
        .gid_index = hl->gid_index,
    };

    if (!hca_link_check(hl, ports, errp)) {
        return false;
    }
    if (!hl->ibdev) {
        return true;
    }
    regions = pvrdma_shared_ram();
    l->t = pvrdma_hostverbs_new(c, &cfg, &c->lim,
                                (PvrdmaShmRegion *)regions->data,
                                regions->len, errp);
    if (!l->t) {
        error_prepend(errp, "pvrdma: ibdev=%s: ", hl->ibdev);
        return false;
    }
    pvrdma_core_add_transport(c, l->t);     /* the object owner */
    if (!hca_link_open_cm(hl, ports, errp)) {
        return false;
    }
    error_setg(&hl->migration_blocker, "pvrdma: ibdev=%s: the guest's "
               "objects live on the host RDMA device, whose QP numbers "
               "and keys no other device can give back", hl->ibdev);
    return migrate_add_blocker(&hl->migration_blocker, errp) >= 0;
}

/* The core frees the transports. */
static void hca_link_del(PvrdmaLink *l)
{
    migrate_del_blocker(&PVRDMA_HCA_LINK(l)->migration_blocker);
    l->t = NULL;
}

static const Property hca_link_props[] = {
    DEFINE_PROP_STRING("ibdev", PvrdmaHcaLink, ibdev),
    DEFINE_PROP_UINT8("ibport", PvrdmaHcaLink, ibport, 0),
    DEFINE_PROP_INT32("gid-index", PvrdmaHcaLink, gid_index, -1),
    DEFINE_PROP_STRING("cm-listen", PvrdmaHcaLink, cm_listen),
};

static void hca_link_class_init(ObjectClass *klass, PVRDMA_CLASS_DATA *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PvrdmaLinkClass *lc = PVRDMA_LINK_CLASS(klass);

    device_class_set_props(dc, hca_link_props);
    lc->add = hca_link_add;
    lc->del = hca_link_del;
    lc->order = 2;
    lc->child = "hca-link";
    lc->path = "hostverbs";
}

static const TypeInfo hca_link_info = {
    .name = TYPE_PVRDMA_HCA_LINK,
    .parent = TYPE_PVRDMA_LINK,
    .instance_size = sizeof(PvrdmaHcaLink),
    .class_init = hca_link_class_init,
};

static void hca_link_register_types(void)
{
    type_register_static(&hca_link_info);
}

type_init(hca_link_register_types)
