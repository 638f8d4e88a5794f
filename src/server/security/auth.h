/* SPDX-License-Identifier: Apache-2.0 */
/*
 * auth — who a client connection is: the rules of --acl-file (acl.h) as the server holds them,
 * AUTH and HELLO ... AUTH verified off the event loop, the delay before -WRONGPASS, the cache
 * of verified passwords, and the reload (server.c's SIGHUP handler calls srv_auth_reload).
 *
 * Owns (struct srv_auth, inside struct srv): the current struct acl, the verified-password
 * cache, the per-address failure table, the list of failed AUTHs waiting for their delay, and
 * nothing else. A connection points at its user (struct srv_conn.user, NULL = not
 * authenticated); a reload re-points every connection to the user of the same name in the new
 * rules, or closes it when that user is gone, so the pointer is always into the current acl.
 *
 * An AUTH runs in a slot of its own (srv_dispatch gives CMD_ASYNC commands one):
 *   cache hit -> answered at once;
 *   else, while its address or its network (/24, /64) is in back-off (a failed AUTH from
 *   there still waits for its delayed answer) or more than --auth-fail-rate AUTHs failed
 *   this second -> a failure, without a hash;
 *   else, when --auth-queue verifications already wait -> -TRYAGAIN at once, no failure;
 *   else the Argon2id check runs on the verification pool (--auth-threads threads of its
 *   own: libuv's shared pool prepares Raft log segments and writes snapshots, and a flood of
 *   AUTHs must not stall it) -> ok: cached, answered;
 *   failed -> answered -WRONGPASS when a timer of auth_delay_ms(failures of that address or
 *   network, the larger) fires. While an AUTH is unanswered its connection parses nothing
 *   after it (srv_conn.auth_pending), so a pipelined command runs as the user the AUTH names.
 *
 * The pool (struct auth_pool): `waiting` (under mu) is what the workers take from, at most
 * --auth-queue long; a worker moves a finished check to `done` and wakes the loop (async),
 * which answers it. Only the loop thread touches an auth_wait outside those two lists. An AUTH
 * identical to one queued or running (same user, stored hash and password: the cache's tag)
 * takes no place in the queue: it follows that check and gets its result (a pool of clients
 * connecting at once with a password not cached yet costs one hash).
 *
 * Peer credentials (--peer-user, --peer-password-file or FENCELOCK_PEER_PASSWORD): the pair
 * this node sends as `AUTH user password` before its own CLUSTER.ANNOUNCE / CLUSTER.ADD
 * (members.c). The password lives in srv_auth.peer_pw (wiped at free); a password file is read
 * again on SIGHUP. The SIGHUP handle also reopens --audit-log (audit.h).
 */
#ifndef FENCELOCK_AUTH_H
#define FENCELOCK_AUTH_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "common/buf.h"
#include "common/resp.h"
#include "server/security/acl.h"

/* Failures remembered per client address and per network (/24, /64) (the least recently
 * failed entry is replaced when full). */
#define AUTH_FAIL_ADDRS 256
#define AUTH_ADDR_BUF 64
#define AUTH_PW_MAX 1024 /* longer passwords are refused without hashing them */

struct auth_fail {
    char addr[AUTH_ADDR_BUF]; /* "" = free */
    unsigned count;
    uint64_t last_ms;
};

struct auth_wait; /* a failed AUTH waiting for its delay (auth.c) */

struct auth_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct auth_wait *waiting, *waiting_tail, *done; /* under mu */
    size_t queued;                                   /* length of waiting (under mu) */
    bool stop;                                       /* under mu */
    pthread_t *threads;
    unsigned n_threads;
    uv_async_t async;
    bool started;
    /* loop thread only: the checks queued or running (each with the identical AUTHs waiting
     * for its result), and numbers for /metrics */
    struct auth_wait *inflight;
    size_t queued_max; /* the longest `waiting` seen */
    uint64_t verifications, rejected, backoff, shared;
    uint64_t fail_window_ms, fails_in_window; /* --auth-fail-rate */
};

struct srv_auth {
    bool on; /* --acl-file given: every connection must authenticate */
    struct acl acl;
    struct acl_cache *cache; /* heap: 32 KiB */
    struct auth_fail fails[AUTH_FAIL_ADDRS];
    struct auth_wait *waits;
    char peer_pw[AUTH_PW_MAX + 1]; /* --peer-user's password; "" when none */
    size_t peer_pwlen;
    struct auth_pool pool; /* --auth-threads, --auth-queue */
};

/* The delay before -WRONGPASS after `failures` recent failures from one address (>= 1): it
 * doubles from AUTH_DELAY_MIN_MS up to AUTH_DELAY_MAX_MS. Pure, for the unit test. */
#define AUTH_DELAY_MIN_MS 100
#define AUTH_DELAY_MAX_MS 5000
#define AUTH_FAIL_FORGET_MS 60000 /* a quiet minute forgets an address's failures */
uint64_t auth_delay_ms(unsigned failures);

struct srv;
struct srv_req;
struct srv_conn;

/* Read --acl-file (if any). 0, or -1 with the line number logged: the server must not start. */
int srv_auth_init(struct srv *s);
/* Read the peer password (--peer-password-file, else FENCELOCK_PEER_PASSWORD) when
 * --peer-user is given. 0, or -1 with the reason logged: the server must not start. */
int srv_peer_load(struct srv *s);
/* SIGHUP (server.c): re-read the peer password file, if any. */
void srv_peer_reload(struct srv *s);
/* Checks waiting for a verification thread now (/metrics). */
size_t srv_auth_queued(struct srv *s);
/* Answer every delayed AUTH (shutdown). */
void srv_auth_stop(struct srv *s);
void srv_auth_free(struct srv *s);
/* Reload the ACL file: 0, or -1 and the old rules stay (the reason with its line logged). */
int srv_auth_reload(struct srv *s);

/* AUTH [user] password, or HELLO v AUTH user password (hello_proto 2 or 3; setname may be
 * NULL): verify and answer in r's slot (sets r->async when the answer comes later). */
void srv_auth_begin(struct srv_req *r, const struct resp_arg *user, const struct resp_arg *pw,
                    int hello_proto, const struct resp_arg *setname);
/* HTTP Basic on the HTTP port (obs/http_api.c): the same check as AUTH (cache, back-off per
 * address and network, --auth-fail-rate, the pool, the delay before a failure's answer, the
 * audit). cb(arg, user, 0) on success (user: into the current acl, valid until the next
 * reload: look it up again later), cb(arg, NULL, -1) on a wrong password (after the delay),
 * cb(arg, NULL, -2) when the queue is full or out of memory (no failure counted). cb runs once,
 * now or later, on the loop thread; also at shutdown (as a failure). */
typedef void (*srv_auth_http_cb)(void *arg, const struct acl_user *u, int rc);
void srv_auth_http(struct srv *s, const char *addr, const char *user, size_t ulen, const char *pw,
                   size_t pwlen, srv_auth_http_cb cb, void *arg);
/* The HELLO reply (after its AUTH succeeded, or without one): sets the protocol. */
void srv_hello_reply(struct srv *s, struct srv_conn *c, struct buf *out, int proto);

#endif
