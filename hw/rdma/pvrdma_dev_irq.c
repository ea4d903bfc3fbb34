/*
 * pvrdma device: raising its interrupts (MSI-X, MSI or INTx), at once
 * inside the device's re-entrancy guard, else from a guarded bottom half
 * (pvrdma_notify()); what is pending when the VM stops is raised before
 * its state is saved (pvrdma_irq_flush()).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/main-loop.h"
#include "hw/pci/msi.h"
#include "hw/pci/msix.h"
#include "pvrdma_dev.h"

/* Raise vector now (see pvrdma_notify()). */
static void pvrdma_deliver(PvrdmaState *s, unsigned vector)
{
    PCIDevice *pdev = PCI_DEVICE(s);

    if (msix_enabled(pdev)) {
        msix_notify(pdev, vector);
        return;
    }
    /* One vector only: the driver's handler serves command responses. */
    if (vector != PVRDMA_INTR_VECTOR_RESPONSE) {
        return;
    }
    if (msi_enabled(pdev)) {
        msi_notify(pdev, 0);
    } else {
        s->core.icr |= PVRDMA_INTR_CAUSE_RESPONSE;
        pci_set_irq(pdev, 1);
    }
}

/* The interrupt bottom half: what was raised outside the guard. */
void pvrdma_irq_bh(void *opaque)
{
    PvrdmaState *s = opaque;
    uint32_t pending = qatomic_xchg(&s->irq_pending, 0);

    for (unsigned v = 0; pending; v++, pending >>= 1) {
        if (pending & 1) {
            pvrdma_deliver(s, v);
        }
    }
}

/*
 * The VM stops (pvrdma_vm_state_change()): what is still waiting for the
 * interrupt bottom half is raised now.  Its state is saved before the
 * main loop runs again, and a vector raised after that would be lost to
 * a migration's destination (a CQ notification the driver never sees).
 * Nothing of the device's work is under way here.
 */
void pvrdma_irq_flush(PvrdmaState *s)
{
    if (qatomic_read(&s->irq_pending)) {
        qemu_bh_cancel(s->irq_bh);
        pvrdma_irq_bh(s);
    }
}

/*
 * The host's notify.  A guest may aim an MSI-X vector at the device's own
 * registers (a write of RESET into CTL, say): raised while the device is
 * in the middle of its work, that write would reset it under its own feet.
 * The memory API refuses it while the device's re-entrancy guard is
 * engaged, as it is in the device's MMIO handlers and guarded bottom
 * halves.  Elsewhere (transports' fd handlers, the RoCEv2 frame tap, the
 * link timer) the vector is raised from the guarded interrupt bottom
 * half instead, once the code that raised it has returned; so is one the
 * IOThread raises (iothread=), which holds no BQL: the bottom half runs
 * in the main loop.
 */
void pvrdma_notify(void *opaque, unsigned vector)
{
    PvrdmaState *s = opaque;

    if (bql_locked() && DEVICE(s)->mem_reentrancy_guard.engaged_in_io) {
        pvrdma_deliver(s, vector);
        return;
    }
    qatomic_or(&s->irq_pending, 1u << vector);
    qemu_bh_schedule(s->irq_bh);
}
