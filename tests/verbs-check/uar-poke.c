/*
 * pvrdma-uar-poke: ring a doorbell the device must refuse, from a user
 * process's own UAR page, for the guest tests that make the guest do
 * something illegal on purpose and check that the device reports it
 * (PVRDMA_GUEST_ERROR, query-pvrdma's guest-errors).  It opens the device
 * as any verbs program does, maps its context's UAR page the way
 * libvmw_pvrdma does (mmap of the command fd at offset 0) and writes one
 * value at one offset: by default a send doorbell for QP handle 0xfff,
 * which this process does not own.
 *
 *   pvrdma-uar-poke DEVICE [OFFSET VALUE]
 *
 * Exit 0 once written, 1 if the device cannot be opened or mapped.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    unsigned long off = 0, val = (1u << 30) | 0xfff;    /* QP send, 0xfff */
    struct ibv_device **list;
    struct ibv_context *ctx = NULL;
    volatile uint32_t *p;       /* a doorbell register: one real store */
    void *m;

    if (argc != 2 && argc != 4) {
        fprintf(stderr, "usage: pvrdma-uar-poke DEVICE [OFFSET VALUE]\n");
        return 2;
    }
    if (argc == 4) {
        off = strtoul(argv[2], NULL, 0);
        val = strtoul(argv[3], NULL, 0);
        if (off % 4 || off >= 4096) {
            fprintf(stderr, "pvrdma-uar-poke: offset 0x%lx outside the "
                    "page\n", off);
            return 2;
        }
    }
    list = ibv_get_device_list(NULL);
    for (int i = 0; list && list[i]; i++) {
        if (!strcmp(ibv_get_device_name(list[i]), argv[1])) {
            ctx = ibv_open_device(list[i]);
        }
    }
    if (!ctx) {
        fprintf(stderr, "pvrdma-uar-poke: cannot open %s\n", argv[1]);
        return 1;
    }
    m = mmap(NULL, 4096, PROT_WRITE, MAP_SHARED, ctx->cmd_fd, 0);
    if (m == MAP_FAILED) {
        perror("pvrdma-uar-poke: mmap of the UAR page");
        return 1;
    }
    p = (volatile uint32_t *)((char *)m + off);
    *p = (uint32_t)val;
    printf("pvrdma-uar-poke: wrote 0x%lx at 0x%lx of %s's UAR page\n", val,
           off, argv[1]);
    munmap(m, 4096);
    ibv_close_device(ctx);
    ibv_free_device_list(list);
    return 0;
}
