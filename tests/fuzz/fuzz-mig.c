/*
 * libFuzzer target: a hostile migration stream (hw/rdma/core/pvrdma_mig_load.c).
 * Each input is the device state a destination QEMU would load, into a core
 * on the fake host whose guest RAM holds what a real guest left there (a
 * device with RC pairs, a UD QP, CQs, MRs, an FRMR and an SRQ, set up once;
 * an RC QP on the RoCEv2 transport, whose connection state the stream
 * carries too, with a SEND on the wire).
 *
 * Checks (abort() on failure, besides ASan/UBSan/LeakSanitizer):
 *  - a refused state comes with a reason and leaves the core reset,
 *    holding no guest mapping;
 *  - an accepted state saves again to a state that loads, and that one
 *    saves to the same bytes (what a device holds is what it migrates);
 *  - a reset after any input releases every guest mapping.
 *
 *   PVRDMA_MIG_SEEDS=DIR fuzz-mig    writes the seed states into DIR
 *                                    (make -C tests/fuzz mig-corpus)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "fake-driver.h"
#include "hw/rdma/pvrdma_roce.h"

#define A_IOVA 0x00007f0000000100ull
#define B_IOVA 0x00007f1000000f00ull
#define MR_LEN (3 * FH_PAGE + 500)

static Dev dev;

/* the RoCEv2 transport's network: frames go nowhere */
static void roce_sink(void *opaque, const uint8_t *frame, size_t len)
{
}

static void check(bool ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz-mig: %s\n", what);
        abort();
    }
}

static GByteArray *save(void)
{
    GByteArray *b = g_byte_array_new();

    pvrdma_core_save(&dev.c, b);
    return b;
}

static void write_seed(const char *dir, const char *name, GByteArray *b)
{
    g_autofree char *path = g_build_filename(dir, name, NULL);

    check(g_file_set_contents(path, (const char *)b->data, b->len, NULL),
          "cannot write a seed");
}

/* The guest's objects, as a driver and its users leave them. */
static void populate(void)
{
    Dev *d = &dev;
    uint32_t pd;
    TCq cqa, cqb;
    TQp a, b, ud, r;
    uint8_t remote[16];
    TMr mra, mrb;
    struct pvrdma_sge s;
    struct pvrdma_sq_wqe_hdr w = { 0 };
    union pvrdma_cmd_req req = { 0 };
    union pvrdma_cmd_resp rsp;

    dev_setup(d, NULL);
    d->h.frame_tx = roce_sink;
    check(pvrdma_core_add_transport(&d->c, pvrdma_roce_new(&d->c)),
          "RoCEv2 transport");
    pd = create_pd(d, 0);
    bind_gid(d, 0, test_gid);
    create_cq(d, &cqa, 64);
    create_cq(d, &cqb, 128);
    create_qp(d, &ud, pd, cqa.handle, cqa.handle, PVRDMA_QPT_UD);
    create_qp(d, &a, pd, cqa.handle, cqa.handle, PVRDMA_QPT_RC);
    create_qp(d, &b, pd, cqb.handle, cqb.handle, PVRDMA_QPT_RC);
    create_qp(d, &r, pd, cqb.handle, cqb.handle, PVRDMA_QPT_RC);
    create_mr(d, &mra, pd, A_IOVA, MR_LEN,
              PVRDMA_ACCESS_LOCAL_WRITE | RC_ACCESS);
    create_mr(d, &mrb, pd, B_IOVA, MR_LEN,
              PVRDMA_ACCESS_LOCAL_WRITE | RC_ACCESS);
    req.create_mr.pd_handle = pd;
    req.create_mr.flags = PVRDMA_MR_FLAG_FRMR;
    req.create_mr.nchunks = 8;
    check(dev_cmd(d, &req, PVRDMA_CMD_CREATE_MR, &rsp) == 0, "FRMR");
    rc_to_rts(d, &a, b.qpn, 7);
    rc_to_rts(d, &b, a.qpn, 7);
    memcpy(remote, test_gid, 16);
    remote[15] ^= 0x5a;             /* not ours: the RoCEv2 transport */
    rc_to_rts_gid(d, &r, 0x1234, remote, 7);
    s = (struct pvrdma_sge) { B_IOVA, 2000, mrb.lkey };
    post_recv(d, &b, 0xb1, &s, 1);
    post_recv(d, &b, 0xb2, &s, 1);
    s = (struct pvrdma_sge) { A_IOVA, 1000, mra.lkey };
    w.wr_id = 0xa1;
    w.opcode = PVRDMA_WR_SEND;
    w.send_flags = PVRDMA_SEND_SIGNALED;
    post_send(d, &a, &w, &s, 1);
    w.wr_id = 0xc1;
    post_send(d, &r, &w, &s, 1);
    run_all(d);
    pvrdma_core_uar_write(&d->c, PVRDMA_UAR_CQ_OFFSET,
                          PVRDMA_UAR_CQ_ARM | cqb.handle);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *seeds = getenv("PVRDMA_MIG_SEEDS");
    GByteArray *b;

    fh_process_init(false);
    populate();
    b = save();
    if (seeds) {
        GByteArray *idle = g_byte_array_new();
        Dev d2;

        write_seed(seeds, "device", b);
        dev_init(&d2, NULL);
        pvrdma_core_save(&d2.c, idle);
        write_seed(seeds, "idle", idle);
        g_byte_array_free(idle, true);
        dev_fini(&d2);
        exit(0);
    }
    g_byte_array_free(b, true);
    pvrdma_core_reset(&dev.c);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Error *err = NULL;

    if (!pvrdma_core_load(&dev.c, data, size, &err)) {
        check(err != NULL, "refused without a reason");
        error_free(err);
        check(!dev.c.active && !dev.c.qp.used && !dev.c.mr.used &&
              !dev.c.cq.used && fh_outstanding(&dev.h) == 0,
              "a refused state left objects or mappings");
        return 0;
    }
    check(err == NULL, "a reason for an accepted state");
    {
        GByteArray *b1 = save(), *b2;

        check(pvrdma_core_load(&dev.c, b1->data, b1->len, &err),
              "the device's own state is refused");
        b2 = save();
        check(b1->len == b2->len && !memcmp(b1->data, b2->data, b1->len),
              "a state does not save to the same bytes");
        g_byte_array_free(b1, true);
        g_byte_array_free(b2, true);
    }
    run_all(&dev);      /* what the destination's bottom half does */
    pvrdma_core_reset(&dev.c);
    check(fh_outstanding(&dev.h) == 0, "a reset left guest mappings");
    return 0;
}
