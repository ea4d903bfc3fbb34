/*
 * libqos driver for the pvrdma device: migration, postcopy, snapshots
 * (the driver follows the VM to its destination).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "../libqtest.h"
#include "pvrdma.h"
#include "qobject/qdict.h"

/* d drives to, which has the VM now; the source goes */
static void take_over(QPvrdma *d, QOSState *to)
{
    QPCIDevice *dev = g_new(QPCIDevice, 1);

    /* the guest's view (BARs, MSI-X) moved with it: same addresses */
    *dev = *d->dev;
    dev->bus = to->pcibus;
    g_free(d->dev);
    qtest_shutdown(d->qs);
    d->qs = to;
    d->qts = to->qts;
    d->alloc = &to->alloc;
    d->dev = dev;
}

void qpvrdma_migrate(QPvrdma *d)
{
    qpvrdma_migrate_to(d, NULL, NULL);
}

void qpvrdma_migrate_to(QPvrdma *d, const char *binary, const char *args)
{
    g_autofree char *sock = g_strdup_printf("%s/pvrdma-mig-%d.sock",
                                            g_get_tmp_dir(), getpid());
    g_autofree char *uri = g_strdup_printf("unix:%s", sock);
    g_autofree char *ours = g_strdup(g_getenv("QTEST_QEMU_BINARY"));
    g_autofree char *st = NULL, *desc = NULL;
    QOSState *to;

    if (args) {
        g_free(d->args);
        d->args = g_strdup(args);
    }
    if (binary) {
        g_setenv("QTEST_QEMU_BINARY", binary, true);
    }
    to = qtest_pc_boot("%s -incoming %s", d->args, uri);
    g_setenv("QTEST_QEMU_BINARY", ours, true);

    migrate(d->qs, to, uri);
    unlink(sock);
    /*
     * migrate() returns when the destination runs, which it does as soon
     * as it has read the whole stream, while the source may not have
     * called the migration completed yet.  Quitting the source then
     * cancels its migration, and QEMU starts its VM again for the moment
     * before it exits: two QEMUs run the VM, and the source's device
     * resumes its co-resident peers, which send to it what is the
     * destination's.  Management waits for the source to complete
     * before it lets it go (as QEMU's migration-test does); so do we.
     */
    st = qpvrdma_mig_wait(d->qts, &desc);
    g_assert_cmpstr(st, ==, "completed");
    take_over(d, to);
}

static QDict *qmp_mig_cap(QTestState *qts, const char *cap, bool on)
{
    return qtest_qmp(qts, "{ 'execute': 'migrate-set-capabilities', "
                     "'arguments': { 'capabilities': [ { 'capability': "
                     "%s, 'state': %i } ] } }", cap, on);
}

char *qpvrdma_mig_wait(QTestState *qts, char **desc)
{
    for (int i = 0; i < 6000; i++) {
        QDict *rsp = qtest_qmp(qts, "{ 'execute': 'query-migrate' }");
        QDict *r = qdict_get_qdict(rsp, "return");
        const char *st = qdict_haskey(r, "status") ?
                         qdict_get_str(r, "status") : "none";

        /*
         * an end, or a postcopy that lost its peer; any other status is
         * a migration under way (later QEMUs add some: postcopy-device)
         */
        if (!strcmp(st, "completed") || !strcmp(st, "failed") ||
            !strcmp(st, "cancelled") || !strcmp(st, "postcopy-paused")) {
            char *ret = g_strdup(st);

            if (desc) {
                *desc = g_strdup(qdict_haskey(r, "error-desc") ?
                                 qdict_get_str(r, "error-desc") : "");
            }
            qobject_unref(rsp);
            return ret;
        }
        qobject_unref(rsp);
        g_usleep(10 * 1000);
    }
    g_assert_not_reached();
}

/*
 * The migration that completed on qts went through postcopy: QEMU said
 * postcopy-active (a MIGRATION event) and sent RAM after the switch.  A
 * small VM may finish in precopy before migrate-start-postcopy takes.
 */
static void mig_was_postcopy(QTestState *qts)
{
    bool active = false;
    QDict *ev, *rsp, *ram;

    while ((ev = qtest_qmp_event_ref(qts, "MIGRATION"))) {
        active |= !strcmp(qdict_get_str(qdict_get_qdict(ev, "data"),
                                        "status"), "postcopy-active");
        qobject_unref(ev);
    }
    g_assert(active);
    rsp = qtest_qmp(qts, "{ 'execute': 'query-migrate' }");
    ram = qdict_get_qdict(qdict_get_qdict(rsp, "return"), "ram");
    g_assert_nonnull(ram);
    g_assert_cmpuint(qdict_get_int(ram, "postcopy-bytes"), >, 0);
    qobject_unref(rsp);
}

bool qpvrdma_migrate_postcopy(QPvrdma *d, char **err)
{
    g_autofree char *sock = g_strdup_printf("%s/pvrdma-mig-%d.sock",
                                            g_get_tmp_dir(), getpid());
    g_autofree char *uri = g_strdup_printf("unix:%s", sock);
    g_autofree char *st = NULL, *desc = NULL;
    QOSState *to = qtest_pc_boot("%s -incoming defer", d->args);
    QDict *rsp;

    rsp = qmp_mig_cap(to->qts, "postcopy-ram", true);
    if (!qdict_haskey(rsp, "return")) {
        /* only QEMU's own refusal (no userfaultfd here) is a reason */
        g_assert(strstr(qdict_get_str(qdict_get_qdict(rsp, "error"), "desc"),
                        "ostcopy"));
        qobject_unref(rsp);
        qtest_shutdown(to);
        return false;
    }
    qobject_unref(rsp);
    rsp = qtest_qmp(to->qts, "{ 'execute': 'migrate-incoming', "
                    "'arguments': { 'uri': %s, 'exit-on-error': false } }",
                    uri);
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    rsp = qmp_mig_cap(d->qts, "postcopy-ram", true);
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    rsp = qmp_mig_cap(d->qts, "events", true);
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    /*
     * Precopy ends when what is left fits in the downtime at the expected
     * bandwidth: unlimited, the qtest VM's zero RAM fits at once and the
     * migration may end before the switch below takes.  Limited, precopy
     * must first send all of it (1.4 s here without the switch), and the
     * switch comes within milliseconds; after it RAM goes at full speed.
     */
    rsp = qtest_qmp(d->qts, "{ 'execute': 'migrate-set-parameters', "
                    "'arguments': { 'max-bandwidth': 100000, "
                    "'max-postcopy-bandwidth': 0 } }");
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    rsp = qtest_qmp(d->qts, "{ 'execute': 'migrate', "
                    "'arguments': { 'uri': %s } }", uri);
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    /* at once: the device state goes over with most of RAM still here */
    rsp = qtest_qmp(d->qts, "{ 'execute': 'migrate-start-postcopy' }");
    if (!err) {
        g_assert(qdict_haskey(rsp, "return"));
    }
    qobject_unref(rsp);
    st = qpvrdma_mig_wait(d->qts, &desc);
    unlink(sock);
    qobject_unref(qmp_mig_cap(d->qts, "events", false));
    if (!err && !strcmp(st, "completed")) {
        mig_was_postcopy(d->qts);
    }
    if (err) {
        if (strcmp(st, "completed")) {
            *err = g_strdup_printf("%s: %s", st, desc);
            qtest_shutdown(to);
            qobject_unref(qmp_mig_cap(d->qts, "postcopy-ram", false));
            return true;
        }
        *err = NULL;
    } else {
        g_assert_cmpstr(st, ==, "completed");
    }
    migrate_allocator(&d->qs->alloc, &to->alloc);
    take_over(d, to);
    return true;
}

bool qpvrdma_bg_snapshot(QPvrdma *d, const char *file, char **err)
{
    g_autofree char *uri = g_strdup_printf("file:%s", file);
    g_autofree char *st = NULL, *desc = NULL;
    QDict *rsp = qmp_mig_cap(d->qts, "background-snapshot", true);

    if (!qdict_haskey(rsp, "return")) {
        qobject_unref(rsp);
        return false;
    }
    qobject_unref(rsp);
    rsp = qtest_qmp(d->qts, "{ 'execute': 'migrate', "
                    "'arguments': { 'uri': %s } }", uri);
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    st = qpvrdma_mig_wait(d->qts, &desc);
    *err = strcmp(st, "completed") ? g_strdup_printf("%s: %s", st, desc) :
                                     NULL;
    qobject_unref(qmp_mig_cap(d->qts, "background-snapshot", false));
    return true;
}

void qpvrdma_restore(QPvrdma *d, const char *file)
{
    g_autofree char *uri = g_strdup_printf("file:%s", file);
    QOSState *to = qtest_pc_boot("%s -incoming defer", d->args);
    QDict *rsp;

    rsp = qtest_qmp(to->qts, "{ 'execute': 'migrate-incoming', "
                    "'arguments': { 'uri': %s } }", uri);
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    qtest_qmp_eventwait(to->qts, "RESUME");
    migrate_allocator(&d->qs->alloc, &to->alloc);
    take_over(d, to);
}
