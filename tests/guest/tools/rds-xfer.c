/*
 * rds-xfer: messages over RDS (Reliable Datagram Sockets) on its RDMA
 * transport (rds_rdma), for the guest tests; the guest image has no RDS
 * tools.  Built statically into the guest image by build-image.sh.
 *
 *   rds-xfer recv ADDR PORT COUNT SIZE      receive COUNT messages of
 *                                           SIZE bytes on ADDR:PORT,
 *                                           check each one
 *   rds-xfer send ADDR PEER PORT COUNT SIZE send COUNT messages of SIZE
 *                                           bytes from ADDR:PORT+1
 *
 * Message i starts with i (4 bytes) and continues with a pattern of i and
 * the offset; the receiver checks the order (RDS delivers a connection's
 * messages in order, exactly once), the length and every byte.  Exit 0 only if all
 * COUNT messages arrived intact; a receive that waits 30 s fails.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#ifndef AF_RDS
#define AF_RDS 21
#endif
#ifndef SOL_RDS
#define SOL_RDS 276
#endif
#define RDS_SO_TRANSPORT    8       /* SO_RDS_TRANSPORT (linux/rds.h) */
#define RDS_TRANS_IB        0
#define MAX_MSG             (1 << 20)

static unsigned char buf[MAX_MSG], want[MAX_MSG];

static void fill(unsigned char *b, size_t n, uint32_t seq)
{
    for (size_t i = 0; i < n; i++) {
        b[i] = (unsigned char)(seq * 131 + i * 7 + (i >> 8));
    }
    if (n >= 4) {
        memcpy(b, &seq, 4);
    }
}

static int rds_socket(const char *addr, int port)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
    int s = socket(AF_RDS, SOCK_SEQPACKET, 0), t = RDS_TRANS_IB;

    if (s < 0) {
        perror("rds-xfer: socket(AF_RDS)");
        exit(1);
    }
    /* the RDMA transport, not TCP: fail rather than fall back */
    if (setsockopt(s, SOL_RDS, RDS_SO_TRANSPORT, &t, sizeof(t))) {
        perror("rds-xfer: SO_RDS_TRANSPORT IB");
        exit(1);
    }
    if (inet_pton(AF_INET, addr, &a.sin_addr) != 1 ||
        bind(s, (struct sockaddr *)&a, sizeof(a))) {
        fprintf(stderr, "rds-xfer: bind %s:%d: %s\n", addr, port,
                strerror(errno));
        exit(1);
    }
    return s;
}

static int do_recv(const char *addr, int port, uint32_t count, size_t size)
{
    struct timeval tv = { .tv_sec = 30 };
    int s = rds_socket(addr, port);
    uint64_t bytes = 0;

    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    printf("rds-xfer: receiving %u messages on %s:%d\n", count, addr, port);
    fflush(stdout);
    for (uint32_t i = 0; i < count; i++) {
        ssize_t r = recv(s, buf, sizeof(buf), 0);
        uint32_t seq;

        if (r < 4) {
            fprintf(stderr, "rds-xfer: message %u: %s\n", i,
                    r < 0 ? strerror(errno) : "shorter than 4 bytes");
            return 1;
        }
        memcpy(&seq, buf, 4);
        if ((size_t)r != size) {
            fprintf(stderr, "rds-xfer: message %u (number %u): %zd bytes, "
                    "sent %zu\n", i, seq, r, size);
            return 1;
        }
        if (seq != i) {
            fprintf(stderr, "rds-xfer: message %u arrived as number %u\n",
                    i, seq);
            return 1;
        }
        fill(want, r, seq);
        if (memcmp(buf, want, r)) {
            fprintf(stderr, "rds-xfer: message %u (%zd bytes): data "
                    "mismatch\n", i, r);
            return 1;
        }
        bytes += r;
    }
    printf("rds-xfer: received %u messages, %llu bytes, data ok\n", count,
           (unsigned long long)bytes);
    return 0;
}

static int do_send(const char *addr, const char *peer, int port,
                   uint32_t count, size_t size)
{
    struct sockaddr_in p = { .sin_family = AF_INET, .sin_port = htons(port) };
    int s = rds_socket(addr, port + 1);

    if (size < 4 || size > MAX_MSG || inet_pton(AF_INET, peer,
                                                &p.sin_addr) != 1) {
        fprintf(stderr, "rds-xfer: bad size or peer address\n");
        return 2;
    }
    for (uint32_t i = 0; i < count; i++) {
        fill(buf, size, i);
        /* a full send buffer (ENOBUFS) or congestion: try again */
        for (int tries = 0;; tries++) {
            if (sendto(s, buf, size, 0, (struct sockaddr *)&p,
                       sizeof(p)) == (ssize_t)size) {
                break;
            }
            if ((errno != ENOBUFS && errno != EAGAIN) || tries > 30000) {
                fprintf(stderr, "rds-xfer: message %u: %s\n", i,
                        strerror(errno));
                return 1;
            }
            usleep(1000);
        }
    }
    printf("rds-xfer: sent %u messages of %zu bytes\n", count, size);
    sleep(1);   /* closing at once could drop what is still queued */
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 6 && !strcmp(argv[1], "recv")) {
        return do_recv(argv[2], atoi(argv[3]), strtoul(argv[4], NULL, 0),
                       strtoul(argv[5], NULL, 0));
    }
    if (argc == 7 && !strcmp(argv[1], "send")) {
        return do_send(argv[2], argv[3], atoi(argv[4]),
                       strtoul(argv[5], NULL, 0), strtoul(argv[6], NULL, 0));
    }
    fprintf(stderr, "usage: rds-xfer recv ADDR PORT COUNT SIZE\n"
            "       rds-xfer send ADDR PEER PORT COUNT SIZE\n");
    return 2;
}
