/* SPDX-License-Identifier: Apache-2.0 */
/*
 * w3floor — how many W3 pairs/s this machine allows a replicated, synced lock service built
 * the way fencelock is, with none of fencelock's code on the path. It is the measured ceiling
 * that W3's row in the report is compared with, beside the disk's Little's-law ceiling.
 *
 * usage: w3floor [--clients 16] [--seconds 10] [--dir build/bench/w3floor]
 *                [--writes-in-flight 1] [--no-sync]
 * prints one JSON line: {"driver":"w3floor","workload":"W3" (or "W3-nosync"), pairs/s, pair p50/p99
 * ms, entries and commands, cpu_busy}.
 *
 * What it does per pair is what any three-node Raft lock service on one machine must do, and
 * nothing more (docs/performance.md "W3's floor on this machine"):
 * - Three processes (a leader, two followers), each one thread with an epoll loop, talking
 *   TCP over loopback with TCP_NODELAY, as fencelockd's nodes do.
 * - Clients: one thread and one blocking connection each, a LOCK then an UNLOCK of the
 *   client's own key, each a 16-byte request answered by a 16-byte reply (fencelock: RESP).
 * - The leader packs the requests it read in one loop turn into one entry (group commit, as
 *   rn_batch.c does), appends it to its log and sends it to both followers.
 * - Logs are written as libraft writes them: O_DIRECT, RWF_DSYNC, 4 KiB per entry, through
 *   Linux AIO with an eventfd, one write in flight per node and the entries that arrive
 *   meanwhile coalesced into the next write. --writes-in-flight K lets K writes run at once
 *   (a discipline libraft does not have) and --no-sync drops RWF_DSYNC: each shows what one
 *   part of the floor costs.
 * - An entry commits when the leader's own write and one follower's write are done; then the
 *   leader applies its commands (a table of held keys and a token counter) and replies.
 * There is no session, no parsing, no fencing state, no snapshot, no heartbeat, no checksum:
 * its CPU per pair is almost all the kernel's, a share a service built this way cannot go under.
 *
 * Ownership: the parent process makes the three listening sockets, forks the three nodes (they
 * die with it: PR_SET_PDEATHSIG), runs the clients, then kills and reaps the nodes and removes
 * the log files. Every loop is bounded: the clients by --seconds, the nodes by the parent.
 */

#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BLOCK 4096        /* one entry per block, as libraft's 4 KiB direct writes */
#define LOG_BLOCKS 16384  /* 64 MiB log file, written round and round */
#define QUEUE_BLOCKS 1024 /* entries waiting for the write in flight */
#define MAX_CLIENTS 64
#define RING 4096       /* entries appended and not yet committed (power of two) */
#define MAX_LAT 4000000 /* pair latencies kept per run */

enum { OP_LOCK = 1, OP_UNLOCK = 2 };

struct msg {     /* a request and its reply: 16 bytes on the wire */
    uint32_t op; /* request: OP_*; reply: 0 ok, 1 busy, 2 not the holder */
    uint32_t key;
    uint64_t token;
};

struct ent_hdr { /* an entry on the wire and in its log block, then n requests */
    uint64_t idx;
    uint32_t n;
    uint32_t pad;
};

/* The log's write discipline, the same on the three nodes (--writes-in-flight, --no-sync). */
static unsigned g_inflight = 1;
static int g_sync = 1;

struct stats { /* written by the leader, read by the parent (shared mapping) */
    volatile uint64_t entries, commands;
};

static void die(const char *what)
{
    fprintf(stderr, "w3floor: %s: %s\n", what, strerror(errno));
    exit(2);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- the log: at most `inflight` AIO writes at once (libraft: 1), the rest queued ---- */

#define MAX_INFLIGHT 16

struct slot { /* one write in flight */
    char *buf;
    unsigned nblocks;
    uint64_t upto;
    int busy, done;
    struct iocb cb;
};

struct disk {
    int fd, efd, sync;
    aio_context_t ctx;
    unsigned inflight, first, nslots; /* slots in submission order: first .. first+nslots */
    struct slot slot[MAX_INFLIGHT];
    char *queue; /* aligned, QUEUE_BLOCKS blocks: entries waiting for a free slot */
    unsigned nqueued;
    uint64_t queued_upto, durable, pos;
};

static void disk_open(struct disk *d, const char *path, unsigned inflight, int sync)
{
    memset(d, 0, sizeof(*d));
    d->inflight = inflight;
    d->sync = sync;
    d->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0600);
    if (d->fd < 0 && errno == EINVAL) /* a file system without direct I/O (tmpfs) */
        d->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (d->fd < 0)
        die(path);
    if (posix_fallocate(d->fd, 0, (off_t)LOG_BLOCKS * BLOCK))
        die("fallocate");
    if (fsync(d->fd))
        die("fsync");
    d->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (d->efd < 0 || syscall(SYS_io_setup, MAX_INFLIGHT, &d->ctx) < 0)
        die("aio setup");
    if (posix_memalign((void **)&d->queue, BLOCK, (size_t)QUEUE_BLOCKS * BLOCK))
        die("memalign");
    for (unsigned i = 0; i < inflight; i++)
        if (posix_memalign((void **)&d->slot[i].buf, BLOCK, (size_t)QUEUE_BLOCKS * BLOCK))
            die("memalign");
}

static void disk_append(struct disk *d, const void *entry, size_t len, uint64_t idx)
{
    if (d->nqueued == QUEUE_BLOCKS || len > BLOCK) {
        fprintf(stderr, "w3floor: log queue full\n");
        exit(2);
    }
    memcpy(d->queue + (size_t)d->nqueued++ * BLOCK, entry, len);
    d->queued_upto = idx;
}

/* Start a write of everything queued if a slot is free. */
static void disk_kick(struct disk *d)
{
    if (!d->nqueued || d->nslots == d->inflight)
        return;
    struct slot *w = &d->slot[(d->first + d->nslots++) % d->inflight];
    char *t = w->buf;
    w->buf = d->queue;
    d->queue = t;
    w->nblocks = d->nqueued;
    w->upto = d->queued_upto;
    w->busy = 1;
    w->done = 0;
    d->nqueued = 0;
    if (d->pos + w->nblocks > LOG_BLOCKS)
        d->pos = 0;
    memset(&w->cb, 0, sizeof(w->cb));
    w->cb.aio_data = (uint64_t)(uintptr_t)w;
    w->cb.aio_lio_opcode = IOCB_CMD_PWRITE;
    w->cb.aio_fildes = (uint32_t)d->fd;
    w->cb.aio_buf = (uint64_t)(uintptr_t)w->buf;
    w->cb.aio_nbytes = (uint64_t)w->nblocks * BLOCK;
    w->cb.aio_offset = (int64_t)(d->pos * BLOCK);
    w->cb.aio_rw_flags = d->sync ? RWF_DSYNC : 0;
    w->cb.aio_flags = IOCB_FLAG_RESFD;
    w->cb.aio_resfd = (uint32_t)d->efd;
    struct iocb *list[1] = {&w->cb};
    if (syscall(SYS_io_submit, d->ctx, 1, list) != 1)
        die("io_submit");
    d->pos += w->nblocks;
}

/* The eventfd fired: writes are done; what is durable is the prefix of done writes. */
static void disk_reap(struct disk *d)
{
    uint64_t n;
    if (read(d->efd, &n, sizeof(n)) != sizeof(n))
        return;
    /* Take what is done without waiting: a completion can be reaped here before its eventfd
     * count arrives, so the count is not the number of events to wait for. */
    struct io_event ev[MAX_INFLIGHT];
    struct timespec zero = {0, 0};
    long got = syscall(SYS_io_getevents, d->ctx, 0L, (long)MAX_INFLIGHT, ev, &zero);
    if (got < 0)
        die("io_getevents");
    for (long i = 0; i < got; i++) {
        struct slot *w = (struct slot *)(uintptr_t)ev[i].data;
        if (ev[i].res != (int64_t)w->nblocks * BLOCK) {
            fprintf(stderr, "w3floor: log write: %lld\n", (long long)ev[i].res);
            exit(2);
        }
        w->done = 1;
    }
    while (d->nslots && d->slot[d->first].done) {
        d->durable = d->slot[d->first].upto;
        d->slot[d->first].busy = 0;
        d->first = (d->first + 1) % d->inflight;
        d->nslots--;
    }
    disk_kick(d);
}

/* ---- sockets ---- */

static int listener(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 128) ||
        getsockname(fd, (struct sockaddr *)&a, &al))
        die("listen");
    *port = ntohs(a.sin_port);
    return fd;
}

static int dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)))
        die("connect");
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static void nonblock(int fd)
{
    int one = 1;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EAGAIN) {
            usleep(10); /* the peer's window is full: never under W3's load */
            continue;
        }
        if (w <= 0)
            die("write");
        c += w;
        n -= (size_t)w;
    }
}

static void watch(int ep, int fd)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
        die("epoll_ctl");
}

/* ---- a follower: append what the leader sends, acknowledge what is durable ---- */

static void follower(int lfd, const char *path)
{
    struct disk d;
    disk_open(&d, path, g_inflight, g_sync);
    int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0)
        die("accept");
    nonblock(c);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    watch(ep, c);
    watch(ep, d.efd);
    static char rbuf[1 << 20];
    size_t have = 0;
    uint64_t acked = 0;
    for (;;) {
        struct epoll_event evs[4];
        int n = epoll_wait(ep, evs, 4, -1);
        if (n < 0 && errno == EINTR)
            continue;
        for (int i = 0; i < n; i++) {
            if (evs[i].data.fd == d.efd) {
                disk_reap(&d);
                continue;
            }
            ssize_t r = read(c, rbuf + have, sizeof(rbuf) - have);
            if (r == 0)
                exit(0);
            if (r < 0)
                continue;
            have += (size_t)r;
            size_t off = 0;
            while (have - off >= sizeof(struct ent_hdr)) {
                struct ent_hdr h;
                memcpy(&h, rbuf + off, sizeof(h));
                size_t len = sizeof(h) + (size_t)h.n * sizeof(struct msg);
                if (have - off < len)
                    break;
                disk_append(&d, rbuf + off, len, h.idx);
                off += len;
            }
            memmove(rbuf, rbuf + off, have - off);
            have -= off;
        }
        if (d.durable > acked) {
            acked = d.durable;
            write_all(c, &acked, sizeof(acked));
        }
        disk_kick(&d);
    }
}

/* ---- the leader ---- */

struct entry {
    uint64_t idx;
    unsigned n;
    struct msg req[MAX_CLIENTS];
    int conn[MAX_CLIENTS];
};

static void leader(int cfd, const int fport[2], const char *path, struct stats *st)
{
    struct disk d;
    disk_open(&d, path, g_inflight, g_sync);
    int ep = epoll_create1(EPOLL_CLOEXEC), fol[2];
    for (int i = 0; i < 2; i++) {
        fol[i] = dial(fport[i]);
        nonblock(fol[i]);
        watch(ep, fol[i]);
    }
    watch(ep, d.efd);
    watch(ep, cfd);
    static struct entry ring[RING];
    static uint64_t held[MAX_CLIENTS]; /* key -> token held, 0 free */
    static char cbuf[1024][sizeof(struct msg)];
    static size_t chave[1024];
    uint64_t next = 1, committed = 0, match[2] = {0, 0}, rev = 0;
    struct entry *open = NULL;
    for (;;) {
        struct epoll_event evs[MAX_CLIENTS + 8];
        int n = epoll_wait(ep, evs, MAX_CLIENTS + 8, -1);
        if (n < 0 && errno == EINTR)
            continue;
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            if (fd == d.efd) {
                disk_reap(&d);
            } else if (fd == cfd) {
                int c = accept4(cfd, NULL, NULL, SOCK_CLOEXEC);
                if (c >= 0 && c < 1024) {
                    nonblock(c);
                    watch(ep, c);
                }
            } else if (fd == fol[0] || fd == fol[1]) {
                uint64_t a[64];
                ssize_t r = read(fd, a, sizeof(a));
                for (ssize_t k = 0; k + 8 <= r; k += 8)
                    if (a[k / 8] > match[fd == fol[1]])
                        match[fd == fol[1]] = a[k / 8];
            } else {
                ssize_t r = read(fd, cbuf[fd] + chave[fd], sizeof(struct msg) - chave[fd]);
                if (r <= 0) {
                    if (r == 0 || errno != EAGAIN) {
                        epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
                        close(fd);
                    }
                    continue;
                }
                chave[fd] += (size_t)r;
                if (chave[fd] < sizeof(struct msg))
                    continue;
                chave[fd] = 0;
                if (!open) {
                    if (next - committed > RING) {
                        fprintf(stderr, "w3floor: too many entries in flight\n");
                        exit(2);
                    }
                    open = &ring[next % RING];
                    open->idx = next;
                    open->n = 0;
                }
                if (open->n == MAX_CLIENTS) {
                    fprintf(stderr, "w3floor: more requests than clients\n");
                    exit(2);
                }
                memcpy(&open->req[open->n], cbuf[fd], sizeof(struct msg));
                open->conn[open->n++] = fd;
            }
        }
        /* Commit what the leader's log and one follower's hold, apply it, reply. */
        uint64_t quorum = match[0] > match[1] ? match[0] : match[1];
        if (quorum > d.durable)
            quorum = d.durable;
        while (committed < quorum) {
            struct entry *e = &ring[++committed % RING];
            for (unsigned k = 0; k < e->n; k++) {
                struct msg *q = &e->req[k], rep = {.op = 0, .key = q->key, .token = 0};
                uint32_t key = q->key % MAX_CLIENTS;
                if (q->op == OP_LOCK) {
                    if (held[key])
                        rep.op = 1;
                    else
                        rep.token = held[key] = ++rev;
                } else if (held[key] && held[key] == q->token) {
                    held[key] = 0;
                } else {
                    rep.op = 2;
                }
                write_all(e->conn[k], &rep, sizeof(rep));
            }
            st->commands += e->n;
        }
        /* Group commit: this turn's requests are one entry, appended, then sent. */
        if (open) {
            char blk[BLOCK];
            struct ent_hdr h = {.idx = open->idx, .n = open->n, .pad = 0};
            size_t len = sizeof(h) + open->n * sizeof(struct msg);
            memcpy(blk, &h, sizeof(h));
            memcpy(blk + sizeof(h), open->req, open->n * sizeof(struct msg));
            disk_append(&d, blk, len, open->idx);
            disk_kick(&d);
            for (int i = 0; i < 2; i++)
                write_all(fol[i], blk, len);
            next++;
            st->entries++;
            open = NULL;
        }
    }
}

/* ---- the clients ---- */

struct client {
    int port, id;
    double until;
    double *lat;
    size_t nlat, cap;
    long errors;
};

static void *client_run(void *arg)
{
    struct client *c = arg;
    int fd = dial(c->port);
    while (now_ms() < c->until && c->nlat < c->cap) {
        double t0 = now_ms();
        struct msg q = {.op = OP_LOCK, .key = (uint32_t)c->id, .token = 0}, r;
        write_all(fd, &q, sizeof(q));
        if (recv(fd, &r, sizeof(r), MSG_WAITALL) != sizeof(r))
            die("recv");
        if (r.op) {
            c->errors++;
            continue;
        }
        q.op = OP_UNLOCK;
        q.token = r.token;
        write_all(fd, &q, sizeof(q));
        if (recv(fd, &r, sizeof(r), MSG_WAITALL) != sizeof(r))
            die("recv");
        if (r.op)
            c->errors++;
        c->lat[c->nlat++] = now_ms() - t0;
    }
    close(fd);
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* /proc/stat's first line: total and idle (idle + iowait) ticks. */
static void cpu_ticks(unsigned long long *total, unsigned long long *idle)
{
    unsigned long long v[10] = {0};
    FILE *f = fopen("/proc/stat", "r");
    if (!f || fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
                     &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]) < 5)
        die("/proc/stat");
    fclose(f);
    *total = 0;
    for (int i = 0; i < 8; i++) /* guest time is counted in user already */
        *total += v[i];
    *idle = v[3] + v[4];
}

int main(int argc, char **argv)
{
    int nclients = 16;
    double seconds = 10;
    const char *dir = "build/bench/w3floor";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--clients") && i + 1 < argc)
            nclients = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--writes-in-flight") && i + 1 < argc)
            g_inflight = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-sync"))
            g_sync = 0;
        else {
            fprintf(stderr,
                    "usage: w3floor [--clients N<=%d] [--seconds S<=600] [--dir D] "
                    "[--writes-in-flight K<=%d] [--no-sync]\n",
                    MAX_CLIENTS, MAX_INFLIGHT);
            return 2;
        }
    }
    if (nclients < 1 || nclients > MAX_CLIENTS || !(seconds > 0 && seconds <= 600) ||
        g_inflight < 1 || g_inflight > MAX_INFLIGHT) {
        fprintf(stderr, "w3floor: --clients 1..%d, --seconds (0, 600], --writes-in-flight 1..%d\n",
                MAX_CLIENTS, MAX_INFLIGHT);
        return 2;
    }
    mkdir(dir, 0700);
    char path[3][512];
    for (int i = 0; i < 3; i++)
        snprintf(path[i], sizeof(path[i]), "%s/node%d.log", dir, i + 1);

    struct stats *st =
        mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (st == MAP_FAILED)
        die("mmap");
    int fport[2], cport, flis[2], clis = listener(&cport);
    for (int i = 0; i < 2; i++)
        flis[i] = listener(&fport[i]);
    pid_t pids[3];
    for (int i = 0; i < 3; i++) {
        pids[i] = fork();
        if (pids[i] < 0)
            die("fork");
        if (pids[i] == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (i < 2)
                follower(flis[i], path[i + 1]);
            else
                leader(clis, fport, path[0], st);
            _exit(0);
        }
    }

    struct client cl[MAX_CLIENTS];
    pthread_t th[MAX_CLIENTS];
    unsigned long long t0, i0, t1, i1;
    size_t cap = MAX_LAT / (size_t)nclients;
    cpu_ticks(&t0, &i0);
    double start = now_ms();
    for (int i = 0; i < nclients; i++) {
        cl[i] = (struct client){.port = cport, .id = i, .until = start + seconds * 1e3, .cap = cap};
        cl[i].lat = malloc(cap * sizeof(double));
        if (!cl[i].lat || pthread_create(&th[i], NULL, client_run, &cl[i]))
            die("client");
    }
    size_t total = 0;
    long errors = 0;
    for (int i = 0; i < nclients; i++) {
        pthread_join(th[i], NULL);
        total += cl[i].nlat;
        errors += cl[i].errors;
    }
    double elapsed = (now_ms() - start) / 1e3;
    cpu_ticks(&t1, &i1);
    uint64_t entries = st->entries, commands = st->commands;
    for (int i = 0; i < 3; i++)
        kill(pids[i], SIGKILL);
    for (int i = 0; i < 3; i++)
        waitpid(pids[i], NULL, 0);
    for (int i = 0; i < 3; i++)
        unlink(path[i]);
    rmdir(dir);

    double *all = malloc((total ? total : 1) * sizeof(double));
    if (!all)
        die("malloc");
    size_t k = 0;
    for (int i = 0; i < nclients; i++) {
        memcpy(all + k, cl[i].lat, cl[i].nlat * sizeof(double));
        k += cl[i].nlat;
        free(cl[i].lat);
    }
    qsort(all, total, sizeof(double), cmp_double);
    double busy = t1 > t0 ? 1.0 - (double)(i1 - i0) / (double)(t1 - t0) : 0;
    printf("{\"driver\":\"w3floor\",\"workload\":\"%s\",\"clients\":%d,\"seconds\":%.3f,"
           "\"ops\":%zu,\"ops_per_s\":%.1f,\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"max_ms\":%.3f,"
           "\"entries\":%llu,\"commands\":%llu,\"commands_per_entry\":%.2f,\"errors\":%ld,"
           "\"cpu_busy\":%.2f,\"writes_in_flight\":%u,\"sync\":%s}\n",
           g_sync ? "W3" : "W3-nosync", nclients, elapsed, total, total / elapsed,
           total ? all[total / 2] : 0, total ? all[total * 99 / 100] : 0,
           total ? all[total - 1] : 0, (unsigned long long)entries, (unsigned long long)commands,
           entries ? (double)commands / (double)entries : 0, errors, busy, g_inflight,
           g_sync ? "true" : "false");
    free(all);
    return errors ? 1 : 0;
}
