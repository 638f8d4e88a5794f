/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lockpair — LOCK + UNLOCK round trips against a fencelockd, for quick latency figures.
 *
 * usage: lockpair [-p port] [-n pairs per client] [-c clients] [-t max seconds]
 * Each client thread opens its own connection and session and takes/releases its own lock
 * (-c 1: uncontended latency). Prints p50/p99/max of one pair and pairs/s over all clients.
 * Bounded by both the pair count and the time limit.
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct client {
    int port, id, n;
    double limit_s;
    double *lat; /* ms per pair */
    int done;
    int err;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Send one inline command and read one reply line (all replies used here are one line). */
static int call(int fd, const char *cmd, char *reply, size_t rlen)
{
    size_t n = strlen(cmd);
    if (write(fd, cmd, n) != (ssize_t)n)
        return -1;
    size_t got = 0;
    while (got < rlen - 1) {
        ssize_t r = read(fd, reply + got, 1);
        if (r <= 0)
            return -1;
        got++;
        if (got >= 2 && reply[got - 2] == '\r' && reply[got - 1] == '\n')
            break;
    }
    reply[got] = 0;
    return reply[0] == '-' ? -1 : 0;
}

static void *run(void *arg)
{
    struct client *c = arg;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)c->port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    char cmd[128], rep[256];
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) ||
        call(fd, "SESSION.OPEN 30000\r\n", rep, sizeof(rep))) {
        c->err = 1;
        return NULL;
    }
    unsigned long long sid = strtoull(rep + 1, NULL, 10);
    double start = now_s();
    for (int i = 0; i < c->n && now_s() - start < c->limit_s; i++) {
        double t0 = now_s();
        snprintf(cmd, sizeof(cmd), "LOCK bench%d %llu\r\n", c->id, sid);
        if (call(fd, cmd, rep, sizeof(rep)) || rep[0] != ':') {
            fprintf(stderr, "LOCK: %s", rep);
            c->err = 1;
            break;
        }
        snprintf(cmd, sizeof(cmd), "UNLOCK bench%d %llu\r\n", c->id, sid);
        if (call(fd, cmd, rep, sizeof(rep))) {
            fprintf(stderr, "UNLOCK: %s", rep);
            c->err = 1;
            break;
        }
        c->lat[c->done++] = (now_s() - t0) * 1000.0;
        if (i % 1000 == 999) {
            snprintf(cmd, sizeof(cmd), "SESSION.KEEPALIVE %llu\r\n", sid);
            call(fd, cmd, rep, sizeof(rep));
        }
    }
    snprintf(cmd, sizeof(cmd), "SESSION.CLOSE %llu\r\n", sid);
    call(fd, cmd, rep, sizeof(rep));
    close(fd);
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int port = 7480, n = 2000, nc = 1, opt;
    double limit = 20;
    while ((opt = getopt(argc, argv, "p:n:c:t:")) != -1) {
        if (opt == 'p')
            port = atoi(optarg);
        else if (opt == 'n')
            n = atoi(optarg);
        else if (opt == 'c')
            nc = atoi(optarg);
        else if (opt == 't')
            limit = atof(optarg);
        else
            return 2;
    }
    struct client *cs = calloc((size_t)nc, sizeof(*cs));
    pthread_t *th = calloc((size_t)nc, sizeof(*th));
    double t0 = now_s();
    for (int i = 0; i < nc; i++) {
        cs[i] = (struct client){.port = port, .id = i, .n = n, .limit_s = limit};
        cs[i].lat = calloc((size_t)n, sizeof(double));
        pthread_create(&th[i], NULL, run, &cs[i]);
    }
    size_t total = 0;
    for (int i = 0; i < nc; i++) {
        pthread_join(th[i], NULL);
        total += (size_t)cs[i].done;
    }
    double el = now_s() - t0;
    double *all = calloc(total ? total : 1, sizeof(double));
    size_t k = 0;
    int errs = 0;
    for (int i = 0; i < nc; i++) {
        memcpy(all + k, cs[i].lat, (size_t)cs[i].done * sizeof(double));
        k += (size_t)cs[i].done;
        errs += cs[i].err;
    }
    qsort(all, total, sizeof(double), cmp);
    if (total)
        printf("clients=%d pairs=%zu p50=%.3fms p99=%.3fms max=%.3fms pairs/s=%.0f errors=%d\n", nc,
               total, all[total / 2], all[(size_t)(total * 0.99)], all[total - 1], total / el,
               errs);
    return errs || !total;
}
