/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench driver for ZooKeeper 3.8 (libzookeeper_mt): `bench_zookeeper`.
 *
 * Owns one ZooKeeper session per bench client (a zhandle_t), the mutex + condition variable its
 * watcher thread uses to wake the client's thread, and the client's small table of locks it
 * holds (name -> its sequential node).
 *
 * Recipe (the ZooKeeper lock recipe, as Curator's InterProcessMutex implements it):
 * - session: zookeeper_init with session timeout cfg->ttl_ms (the server raises it to its
 *   minimum, 2 * tickTime = 4 s with the defaults); client_new waits until connected.
 * - acquire(name): create the persistent parents /locks and /locks/<name> once per client
 *   (ZNODEEXISTS is fine), then an EPHEMERAL_SEQUENTIAL node /locks/<name>/_c_<session>-lock-
 *   with zoo_create2, so that its Stat comes back. Loop: list the children; if ours has the lowest
 *   sequence number we hold the lock; otherwise set a watch with zoo_wexists on the node just
 *   before ours (only that one: no herd effect) and wait for its deletion event, bounded by
 *   wait_ms, then list again. On timeout (or wait_ms == 0 and not lowest) delete our node so
 *   nothing is left queued, and return BENCH_TIMEOUT.
 * - fencing token: our node's czxid (the zxid of the create transaction, from zoo_create2's
 *   Stat). zxids are (epoch << 32 | counter) and grow with every transaction of the ensemble, and
 *   waiters are served in the order of their sequence numbers, i.e. of their creates, so tokens of
 *   successive holders of one lock strictly increase.
 * - release(name): delete our node (version -1).
 * A session that expired is replaced by a new one on the next acquire; its ephemeral nodes (and
 * so its locks) are gone with it. Connection loss (the session lives on): nodes are named
 * "_c_<session id>-lock-<seq>" as in Curator's protected mode, so a create whose answer was lost
 * is found again after reconnecting instead of being created twice; reads and deletes are
 * retried once reconnected (up to 3 times), and a delete that still fails is remembered and
 * retried on the next call, so no orphan node stays queued.
 */
#include "driver.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define THREADED /* the synchronous API of libzookeeper_mt */
#include <zookeeper/zookeeper.h>

#define ZK_MAX_HELD 8
#define ZK_MAX_NAME 200 /* lock names */
#define ZK_MAX_PATH 512

struct zk_held {
    char name[ZK_MAX_NAME + 1];
    char node[ZK_MAX_PATH]; /* full path of our sequential node */
};

struct zk_client {
    char *hosts;
    int timeout_ms;
    zhandle_t *zh;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state;          /* last session state seen by the watcher (under mu) */
    unsigned long wake; /* bumped by every watch event (under mu) */
    struct zk_held held[ZK_MAX_HELD];
    int nheld;
    char **parents; /* lock names whose parent node exists */
    int nparents, capparents;
    char orphans[ZK_MAX_HELD][ZK_MAX_PATH]; /* our nodes a failed delete left behind */
    int norphans;
};

static void zk_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    struct zk_client *c = ctx;
    (void)zh;
    (void)path;
    pthread_mutex_lock(&c->mu);
    if (type == ZOO_SESSION_EVENT)
        c->state = state;
    c->wake++;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static void deadline_in(struct timespec *ts, int ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static int past(const struct timespec *ts)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec > ts->tv_sec || (now.tv_sec == ts->tv_sec && now.tv_nsec >= ts->tv_nsec);
}

/* Open a session and wait (up to 10 s) until it is connected. */
static int zk_connect(struct zk_client *c, char *err, size_t errlen)
{
    struct timespec dl;
    pthread_mutex_lock(&c->mu);
    c->state = 0;
    pthread_mutex_unlock(&c->mu);
    c->zh = zookeeper_init(c->hosts, zk_watcher, c->timeout_ms, NULL, c, 0);
    if (!c->zh) {
        snprintf(err, errlen, "zookeeper_init(%s): %s", c->hosts, strerror(errno));
        return -1;
    }
    deadline_in(&dl, 10000);
    pthread_mutex_lock(&c->mu);
    while (c->state != ZOO_CONNECTED_STATE && c->state != ZOO_EXPIRED_SESSION_STATE &&
           c->state != ZOO_AUTH_FAILED_STATE) {
        if (pthread_cond_timedwait(&c->cv, &c->mu, &dl) == ETIMEDOUT)
            break;
    }
    int st = c->state;
    pthread_mutex_unlock(&c->mu);
    if (st != ZOO_CONNECTED_STATE) {
        snprintf(err, errlen, "zookeeper %s: no session within 10 s (state %d)", c->hosts, st);
        zookeeper_close(c->zh);
        c->zh = NULL;
        return -1;
    }
    return 0;
}

static void zk_client_free(void *cl)
{
    struct zk_client *c = cl;
    if (!c)
        return;
    if (c->zh)
        zookeeper_close(c->zh); /* ends the session: its ephemeral nodes go at once */
    for (int i = 0; i < c->nparents; i++)
        free(c->parents[i]);
    free(c->parents);
    free(c->hosts);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static void *zk_client_new(const struct bench_cfg *cfg, int client_id, char *err, size_t errlen)
{
    (void)client_id;
    struct zk_client *c = calloc(1, sizeof(*c));
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cv, &ca);
    pthread_condattr_destroy(&ca);
    c->hosts = strdup(cfg->endpoints ? cfg->endpoints : "");
    c->timeout_ms = cfg->ttl_ms > 0 ? cfg->ttl_ms : 10000;
    if (!c->hosts) {
        snprintf(err, errlen, "out of memory");
        zk_client_free(c);
        return NULL;
    }
    /* The library logs connection chatter to stderr at WARN; keep only errors. */
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    if (zk_connect(c, err, errlen) != 0) {
        zk_client_free(c);
        return NULL;
    }
    return c;
}

/* Replace an expired session by a new one. */
static int zk_ensure_session(struct zk_client *c, char *err, size_t errlen)
{
    if (c->zh && zoo_state(c->zh) != ZOO_EXPIRED_SESSION_STATE &&
        zoo_state(c->zh) != ZOO_AUTH_FAILED_STATE)
        return 0;
    if (c->zh)
        zookeeper_close(c->zh);
    c->zh = NULL;
    c->nheld = 0; /* the session's ephemeral nodes are gone */
    return zk_connect(c, err, errlen);
}

static int zk_create_parents(struct zk_client *c, const char *name, char *err, size_t errlen)
{
    for (int i = 0; i < c->nparents; i++)
        if (strcmp(c->parents[i], name) == 0)
            return 0;
    char path[ZK_MAX_NAME + 16];
    snprintf(path, sizeof(path), "/locks");
    int rc = zoo_create(c->zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    if (rc == ZOK || rc == ZNODEEXISTS) {
        snprintf(path, sizeof(path), "/locks/%s", name);
        rc = zoo_create(c->zh, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    }
    if (rc != ZOK && rc != ZNODEEXISTS) {
        snprintf(err, errlen, "zookeeper create %s: %s", path, zerror(rc));
        return -1;
    }
    if (c->nparents == c->capparents) {
        int cap = c->capparents ? 2 * c->capparents : 8;
        char **p = realloc(c->parents, (size_t)cap * sizeof(*p));
        if (!p)
            return 0; /* not remembered: created again next time, harmlessly */
        c->parents = p;
        c->capparents = cap;
    }
    char *dup = strdup(name);
    if (dup)
        c->parents[c->nparents++] = dup;
    return 0;
}

static int zk_held_index(struct zk_client *c, const char *name)
{
    for (int i = 0; i < c->nheld; i++)
        if (strcmp(c->held[i].name, name) == 0)
            return i;
    return -1;
}

/* The sequence number a sequential node's name ends with (10 digits). */
static long long zk_seq(const char *child)
{
    size_t n = strlen(child);
    return n >= 10 ? atoll(child + n - 10) : -1;
}

static int zk_transient(int rc)
{
    return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT;
}

static int zk_is_orphan(struct zk_client *c, const char *node)
{
    for (int i = 0; i < c->norphans; i++)
        if (strcmp(c->orphans[i], node) == 0)
            return 1;
    return 0;
}

static void zk_orphan(struct zk_client *c, const char *node)
{
    if (!zk_is_orphan(c, node) && c->norphans < ZK_MAX_HELD)
        snprintf(c->orphans[c->norphans++], ZK_MAX_PATH, "%s", node);
}

/* Retry the deletes that failed (connection loss): an orphan node would be granted to nobody. */
static void zk_reap_orphans(struct zk_client *c)
{
    for (int i = 0; i < c->norphans;) {
        int rc = zoo_delete(c->zh, c->orphans[i], -1);
        if (rc == ZOK || rc == ZNONODE || rc == ZSESSIONEXPIRED)
            memmove(c->orphans[i], c->orphans[--c->norphans], ZK_MAX_PATH);
        else
            i++;
    }
}

/*
 * Wait up to ms for the session to be connected again after a connection loss. The I/O
 * thread's state (zoo_state) is polled: the session event may reach the watcher later than the
 * failed call returns.
 */
static int zk_wait_connected(struct zk_client *c, int ms)
{
    struct timespec dl, slice;
    deadline_in(&dl, ms);
    for (;;) {
        int st = zoo_state(c->zh);
        if (st == ZOO_CONNECTED_STATE)
            return 1;
        if (st == ZOO_EXPIRED_SESSION_STATE || st == ZOO_AUTH_FAILED_STATE || past(&dl))
            return 0;
        deadline_in(&slice, 20);
        pthread_mutex_lock(&c->mu);
        pthread_cond_timedwait(&c->cv, &c->mu, &slice);
        pthread_mutex_unlock(&c->mu);
    }
}

/*
 * Create our EPHEMERAL_SEQUENTIAL node in dir, named "_c_<session id>-lock-<seq>" as Curator's
 * protected mode does: a create whose answer was lost (connection loss) may still have happened,
 * so after reconnecting look for a child carrying our session id before creating again.
 */
static int zk_create_protected(struct zk_client *c, const char *dir, char *node, size_t nodelen,
                               struct Stat *st)
{
    char prefix[ZK_MAX_PATH], tag[64];
    snprintf(tag, sizeof(tag), "_c_%llx-", (unsigned long long)zoo_client_id(c->zh)->client_id);
    snprintf(prefix, sizeof(prefix), "%s/%slock-", dir, tag);
    int rc = ZCONNECTIONLOSS;
    for (int attempt = 0; attempt < 3; attempt++) {
        if (attempt > 0) {
            if (!zk_wait_connected(c, c->timeout_ms))
                return rc;
            struct String_vector kids = {0, NULL};
            int lrc = zoo_get_children(c->zh, dir, 0, &kids);
            if (lrc != ZOK)
                continue;
            /* Ours is the newest child with our tag; older ones are leftovers (a create
             * retried, a delete whose answer was lost): remove them. */
            int found = 0;
            long long best = -1;
            for (int i = 0; i < kids.count; i++) {
                char path[ZK_MAX_PATH];
                snprintf(path, sizeof(path), "%s/%s", dir, kids.data[i]);
                if (strncmp(kids.data[i], tag, strlen(tag)) == 0 && !zk_is_orphan(c, path) &&
                    zk_seq(kids.data[i]) > best)
                    best = zk_seq(kids.data[i]);
            }
            for (int i = 0; i < kids.count; i++) {
                if (strncmp(kids.data[i], tag, strlen(tag)) != 0)
                    continue;
                if (zk_seq(kids.data[i]) == best) {
                    snprintf(node, nodelen, "%s/%s", dir, kids.data[i]);
                    found = 1;
                } else {
                    char old[ZK_MAX_PATH];
                    snprintf(old, sizeof(old), "%s/%s", dir, kids.data[i]);
                    zk_orphan(c, old);
                }
            }
            deallocate_String_vector(&kids);
            if (found) {
                zk_reap_orphans(c);
                rc = zoo_exists(c->zh, node, 0, st); /* its czxid */
                if (rc == ZOK)
                    return ZOK;
                continue;
            }
        }
        memset(st, 0, sizeof(*st));
        rc = zoo_create2(c->zh, prefix, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
                         ZOO_EPHEMERAL | ZOO_SEQUENCE, node, (int)nodelen, st);
        if (!zk_transient(rc))
            return rc;
    }
    return rc;
}

static int zk_acquire(void *cl, const char *name, int wait_ms, uint64_t *token, char *err,
                      size_t errlen)
{
    struct zk_client *c = cl;
    char dir[ZK_MAX_NAME + 16], node[ZK_MAX_PATH], pred[ZK_MAX_PATH];
    struct Stat st;
    struct timespec dl;
    int rc;

    deadline_in(&dl, wait_ms > 0 ? wait_ms : 0);
    if (strlen(name) > ZK_MAX_NAME || !*name || strchr(name, '/')) {
        snprintf(err, errlen, "zookeeper: bad lock name");
        return -1;
    }
    if (c->nheld == ZK_MAX_HELD || zk_held_index(c, name) >= 0) {
        snprintf(err, errlen, "zookeeper: %s already held or too many locks held", name);
        return -1;
    }
    if (zk_ensure_session(c, err, errlen) != 0 || zk_create_parents(c, name, err, errlen) != 0)
        return -1;
    zk_reap_orphans(c);
    snprintf(dir, sizeof(dir), "/locks/%s", name);
    rc = zk_create_protected(c, dir, node, sizeof(node), &st);
    if (rc != ZOK) {
        snprintf(err, errlen, "zookeeper create in %s: %s", dir, zerror(rc));
        return -1;
    }
    uint64_t czxid = (uint64_t)st.czxid;
    const char *mine = node + strlen(dir) + 1;
    long long myseq = zk_seq(mine);
    int result = -1, retries = 0;
    for (;;) {
        struct String_vector kids = {0, NULL};
        rc = zoo_get_children(c->zh, dir, 0, &kids);
        if (zk_transient(rc) && (retries++ < 3 && zk_wait_connected(c, c->timeout_ms)))
            continue; /* as Curator's retry policy: the session lives on */
        if (rc != ZOK) {
            snprintf(err, errlen, "zookeeper get_children %s: %s", dir, zerror(rc));
            break;
        }
        /* The node just before ours: the one with the largest sequence number below ours. */
        long long best = -1;
        int found = 0;
        for (int i = 0; i < kids.count; i++) {
            long long s = zk_seq(kids.data[i]);
            if (strcmp(kids.data[i], mine) == 0)
                found = 1;
            else if (s >= 0 && s < myseq && s > best) {
                best = s;
                snprintf(pred, sizeof(pred), "%s/%s", dir, kids.data[i]);
            }
        }
        deallocate_String_vector(&kids);
        if (!found) {
            snprintf(err, errlen, "zookeeper: our node %s vanished (session expired?)", node);
            break;
        }
        if (best < 0) {
            result = 0;
            break;
        }
        if (wait_ms <= 0 || past(&dl)) {
            result = BENCH_TIMEOUT;
            break;
        }
        pthread_mutex_lock(&c->mu);
        unsigned long seen = c->wake;
        pthread_mutex_unlock(&c->mu);
        rc = zoo_wexists(c->zh, pred, zk_watcher, c, &st);
        if (rc == ZNONODE)
            continue; /* gone already: look again */
        if (zk_transient(rc) && (retries++ < 3 && zk_wait_connected(c, c->timeout_ms)))
            continue;
        if (rc != ZOK) {
            snprintf(err, errlen, "zookeeper exists %s: %s", pred, zerror(rc));
            break;
        }
        pthread_mutex_lock(&c->mu);
        while (c->wake == seen)
            if (pthread_cond_timedwait(&c->cv, &c->mu, &dl) == ETIMEDOUT)
                break;
        pthread_mutex_unlock(&c->mu);
        /* Look again after an event (or once more at the deadline). */
    }
    if (result != 0) {
        /* Leave nothing queued: remove our node (a dead session removes it by itself). */
        int drc = zoo_delete(c->zh, node, -1);
        if (zk_transient(drc) && zk_wait_connected(c, c->timeout_ms))
            drc = zoo_delete(c->zh, node, -1);
        if (drc != ZOK && drc != ZNONODE) {
            zk_orphan(c, node); /* deleted on the next call, so it is not granted to nobody */
            if (result == BENCH_TIMEOUT) {
                snprintf(err, errlen, "zookeeper delete %s after timeout: %s", node, zerror(drc));
                result = -1;
            }
        }
        return result;
    }
    struct zk_held *h = &c->held[c->nheld++];
    snprintf(h->name, sizeof(h->name), "%s", name);
    snprintf(h->node, sizeof(h->node), "%s", node);
    *token = czxid;
    return 0;
}

static int zk_release(void *cl, const char *name, char *err, size_t errlen)
{
    struct zk_client *c = cl;
    int i = zk_held_index(c, name);
    if (i < 0) {
        snprintf(err, errlen, "zookeeper: %s not held by this client", name);
        return -1;
    }
    char node[ZK_MAX_PATH];
    snprintf(node, sizeof(node), "%s", c->held[i].node);
    c->held[i] = c->held[--c->nheld];
    zk_reap_orphans(c);
    int rc = c->zh ? zoo_delete(c->zh, node, -1) : ZINVALIDSTATE;
    if (zk_transient(rc) && zk_wait_connected(c, c->timeout_ms)) {
        rc = zoo_delete(c->zh, node, -1);
        if (rc == ZNONODE)
            rc = ZOK; /* the first delete went through; its answer was lost */
    }
    if (zk_transient(rc))
        zk_orphan(c, node);
    if (rc != ZOK) {
        snprintf(err, errlen, "zookeeper delete %s: %s", node, zerror(rc));
        return -1;
    }
    return 0;
}

const struct bench_driver bench_zookeeper = {
    .name = "zookeeper",
    .client_new = zk_client_new,
    .client_free = zk_client_free,
    .acquire = zk_acquire,
    .release = zk_release,
};
