/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libfencelock — the C client of fencelock (a Raft-replicated lock service with fencing tokens).
 *
 * Objects and ownership:
 *   fl_client   one per process is typical; thread-safe. Holds the endpoint list, the known
 *               leader and a pool of connections (hiredis). Freed by fl_client_free(), after
 *               every session made from it was closed.
 *   fl_session  a lease on the servers, kept alive by a thread of its own (every TTL/3).
 *               Thread-safe. Freed by fl_session_close() (which also ends it on the servers).
 *   fl_watcher  a thread reading the event stream into a callback (fl_watch), on a client of
 *               its own. Freed by fl_watch_join().
 *   Results that own memory (fl_lock_info, fl_kv, fl_status, string lists) are filled into
 *   caller structs and released with their *_free function.
 *
 * Every call has a deadline (fl_options.timeout_ms; for fl_lock, the wait plus that). Within
 * it the library follows -NOTLEADER redirects, reconnects to other endpoints when a server
 * fails, and retries commands whose outcome is unknown. Every mutating call made through a
 * session carries `REQ sid seq`, so a retry after a fail-over applies at most once. Calls
 * with no session (session == NULL) are not retried once sent: their outcome may be unknown
 * (FL_EUNKNOWN).
 *
 * A session's mutating calls (lock, unlock, writes through it, close) are serialized: their
 * REQ seqs must reach the servers in order. Use one session per thread for concurrent waits.
 * A call that cannot learn the outcome of its LOCK before its deadline sends UNLOCK (which
 * also leaves the queue) before returning, so no grant the caller never saw outlives it.
 *
 * Errors: every call returns an fl_err; fl_strerror() names it and fl_client_errmsg() gives
 * the calling thread's last detailed message for that client.
 *
 * Times: fl_now_ms() is the CLOCK_MONOTONIC clock (milliseconds) that fl_session_safe_until()
 * is expressed in.
 *
 * ABI (docs/client.md "ABI and versions"): libfencelock.so.0 exports the functions declared
 * FL_API here and nothing else (symbol version FENCELOCK_0; debian/libfencelock0.symbols lists
 * them and the tests compare it with the built library). struct fl_options carries its size:
 * fl_options_init() records the caller's sizeof, and the library reads only the bytes that size
 * covers, so options added later never make an older program's struct too small. Structs the
 * library fills (fl_kv, fl_status, ...) may only grow in a new SONAME. FL_VERSION_* is the
 * header's version, fl_version() the running library's.
 *
 * Signals: the library never raises SIGPIPE (plain and TLS writes use send(MSG_NOSIGNAL)), so a
 * host program need not ignore it. fork(): a child must not use, close or free anything the
 * parent made (clients, sessions, watchers: their locks may be held by threads the child does
 * not have, their sockets are shared with the parent); it may exec (every socket is
 * close-on-exec) or make a client of its own. No pthread_atfork handlers are installed.
 */
#ifndef FENCELOCK_H
#define FENCELOCK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Symbols of the library's API are exported; everything else in libfencelock.so is hidden
   (built with -fvisibility=hidden and src/client/libfencelock.map). */
#if defined(__GNUC__) || defined(__clang__)
#define FL_API __attribute__((visibility("default")))
#else
#define FL_API
#endif

/* The version of this header (the release, defined once here: the Makefile and the server read
   it). fl_version() returns the version of the library actually loaded. */
#define FL_VERSION_MAJOR 0
#define FL_VERSION_MINOR 1
#define FL_VERSION_PATCH 0
#define FL_VERSION_STR_(x) #x
#define FL_VERSION_XSTR_(x) FL_VERSION_STR_(x)
#define FL_VERSION                                                                                 \
    FL_VERSION_XSTR_(FL_VERSION_MAJOR)                                                             \
    "." FL_VERSION_XSTR_(FL_VERSION_MINOR) "." FL_VERSION_XSTR_(FL_VERSION_PATCH)

typedef enum fl_err {
    FL_OK = 0,
    FL_EINVAL,       /* bad argument (NULL, empty name, ...) */
    FL_ENOMEM,       /* out of memory */
    FL_ETIMEOUT,     /* the call's deadline passed (for fl_lock: the lock was not granted) */
    FL_EUNAVAILABLE, /* no server reachable, or no leader, until the deadline */
    FL_EUNKNOWN,     /* the command may or may not have applied (only without a session) */
    FL_ESESSION,     /* the session is unknown, closed, expired, or known lost locally */
    FL_ENOTHOLDER,   /* UNLOCK of a lock this session does not hold */
    FL_EBUSY,        /* fl_trylock: the lock is held (or in lock-delay) */
    FL_ESTALE,       /* a fenced write or fence check with a token that is not current */
    FL_EIFREV,       /* an IFREV condition did not hold */
    FL_ENOTFOUND,    /* the key or lock does not exist */
    FL_ETOOLARGE,    /* a key, name or value over the server's limit */
    FL_ESERVER,      /* any other error reply from the server (see fl_client_errmsg) */
    FL_EPROTO,       /* a reply of an unexpected shape */
    FL_ENOSPACE,     /* a server quota is full (-NOSPACE): nothing applied; free space or retry */
    FL_EAUTH,      /* the servers refused the user / password (-WRONGPASS) or want one (-NOAUTH) */
    FL_EPERM,      /* the user may not run this command or name this key / lock (-NOPERM) */
    FL_ECOMPACTED, /* fl_watch: the events after the id asked for are no longer retained;
                      fl_lock_history: the grants asked for were dropped */
    FL_EWRONGTYPE, /* the name is a lock, semaphore or election of another kind (-WRONGTYPE) */
    FL_EIO,        /* a local file could not be written (fl_snapshot_save; errno in the message) */
    FL_EDEADLOCK,  /* a wait was refused: it would have closed a cycle of sessions waiting for
                      each other (-DEADLOCK; the message names the cycle); nothing was queued */
    FL_EBROKEN,    /* a latch whose joined session ended before counting down, or a barrier a
                      session ended inside (-BROKEN; the message names both) */
} fl_err;

FL_API const char *fl_strerror(fl_err err);

/* CLOCK_MONOTONIC in milliseconds. */
FL_API int64_t fl_now_ms(void);

typedef struct fl_client fl_client;
typedef struct fl_session fl_session;

/*
 * Options of fl_client_new. Allocated by the caller, so the struct carries its own size: always
 * fill it with fl_options_init() (which records sizeof as the caller compiled it), then change
 * fields. The library reads only the first `size` bytes; fields past them take their defaults.
 * A size smaller than this first layout (0: fl_options_init was not called) is FL_EINVAL, and
 * so are nonzero bytes past the end of the struct the library knows (an option the caller set
 * that an older library cannot honour). Fields are only ever added at the end, and each added
 * field's default is 0, so a caller that does not know it leaves it zero.
 */
struct fl_options {
    size_t size;            /* sizeof(struct fl_options) as the caller compiled it */
    int timeout_ms;         /* per call (connect, redirects and retries included); default 5000 */
    int connect_timeout_ms; /* per connection attempt; default 1000 */
    /* fl_session_safe_until() subtracts margin_ms + TTL * drift_ppm / 1e6 from the lease the
       servers granted, to cover rate differences between this machine's monotonic clock and the
       leader's. Defaults: 10 ms and 10000 ppm (1 %). */
    int margin_ms;
    int drift_ppm;
    /* Give a call up (FL_EUNAVAILABLE, "connection refused") once every connection attempt
       for this long was refused: nothing listens on any endpoint, so waiting the whole
       timeout_ms only delays the error. 0 (default): retry until timeout_ms, as a client of
       a cluster whose nodes may be restarting should. The CLI uses 1500. */
    int refused_ms;
    /* Credentials for servers started with --acl-file (docs/security.md): sent as AUTH on
       every new connection of the pool. NULL password (default): no AUTH; NULL user with a
       password: the user "default". Copied by fl_client_new. */
    const char *user;
    const char *password;
    /* TLS (docs/client.md "TLS"): used when tls is nonzero or tls_ca / tls_cert is set. The
       server's certificate must chain to tls_ca (NULL: the system's CA certificates) and name
       tls_server_name (NULL: the endpoint's host, an IP address or a DNS name). tls_cert and
       tls_key (PEM files, both or neither): the client certificate for servers started with
       --tls-client-auth. Files are read by fl_client_new; if they cannot be, every call fails
       with FL_EINVAL and fl_client_errmsg says why. Copied by fl_client_new. */
    int tls;
    const char *tls_ca;
    const char *tls_cert;
    const char *tls_key;
    const char *tls_server_name;
};

/* Write the defaults into the first `size` bytes of opt (and zeros past the fields this library
   knows), and size into opt->size. Called through fl_options_init. */
FL_API void fl_options_init_size(struct fl_options *opt, size_t size);

/* Fill with the defaults, then change what you need. In fl_client_new, a timeout <= 0 or a
   margin / drift < 0 means the default; 0 is a valid margin and drift. Inline, so that the
   size recorded is the caller's sizeof, not the library's. */
static inline void fl_options_init(struct fl_options *opt)
{
    fl_options_init_size(opt, sizeof *opt);
}

/* The running library's version ("0.1.0"); *major, *minor, *patch (each may be NULL) get its
   numbers. Compare with FL_VERSION_MAJOR... to learn which library a program runs with. */
FL_API const char *fl_version(int *major, int *minor, int *patch);

/*
 * endpoints: "host:port[,host:port...]", any members of the cluster (one is enough; the others
 * are learned from CLUSTER.MEMBERS). opt may be NULL (every default). Connects lazily: returns
 * NULL only on bad arguments (an opt->size the library cannot read included: see struct
 * fl_options) or out of memory (*err says which, if err is not NULL).
 */
FL_API fl_client *fl_client_new(const char *endpoints, const struct fl_options *opt, fl_err *err);
FL_API void fl_client_free(fl_client *c);

/* The calling thread's last error message for this client ("" if none). Valid until that
   thread's next call on this client. */
FL_API const char *fl_client_errmsg(fl_client *c);

/* ---- sessions ---- */

/*
 * Open a session (SESSION.OPEN ttl_ms LOCKDELAY lockdelay_ms NAME name; name may be NULL) and
 * start its keepalive thread. While keepalives are acknowledged, fl_session_safe_until() moves
 * forward; when the servers say the session is gone, or the safe deadline passes without an
 * acknowledgement, the session is lost: terminal, the on_lost callback runs once (on the
 * keepalive thread) and every later call on it returns FL_ESESSION.
 */
FL_API fl_err fl_session_open(fl_client *c, uint64_t ttl_ms, uint64_t lockdelay_ms,
                              const char *name, fl_session **out);

/*
 * fl_session_open for a reentrant session (SESSION.OPEN ... REENTRANT [MAXCOUNT max_count]):
 * its fl_lock of a lock it already holds exclusively counts up and returns the same token,
 * fl_unlock counts down and releases only the last hold (fl_lock_count reads the count). An
 * fl_lock over max_count holds fails with FL_ESERVER ("... MAXCOUNT ...") and changes
 * nothing; max_count 0: the server's --reentrant-max-count. Expiry, close, revoke and an
 * admin's UNLOCK end every hold at once (docs/client.md "Reentrant sessions").
 */
FL_API fl_err fl_session_open_reentrant(fl_client *c, uint64_t ttl_ms, uint64_t lockdelay_ms,
                                        const char *name, uint32_t max_count, fl_session **out);

/* cb(session, ctx) runs once when the session is lost; at once (on this thread) if it is lost
   already. Replaces an earlier callback. Not run by fl_session_close(). */
FL_API void fl_session_on_lost(fl_session *s, void (*cb)(fl_session *s, void *ctx), void *ctx);

FL_API uint64_t fl_session_id(const fl_session *s);
FL_API uint64_t fl_session_ttl(const fl_session *s);
FL_API int fl_session_is_lost(fl_session *s);

/*
 * The local monotonic time (fl_now_ms) before which the servers cannot have expired this
 * session: the send time of the last acknowledged keepalive (or of the open) plus the TTL,
 * less the drift margin. 0 once lost. Work guarded by a lock of this session is safe only
 * while fl_now_ms() < fl_session_safe_until().
 */
FL_API int64_t fl_session_safe_until(fl_session *s);

/* Stop the keepalive thread, end the session on the servers (its locks are released at once,
   without lock-delay) and free it. Returns how the SESSION.CLOSE went; frees in every case. */
FL_API fl_err fl_session_close(fl_session *s);

/* Stop the keepalive thread and free the session without closing it on the servers: its lease
   runs out there (and lock-delay applies). For a process that is going away abnormally. */
FL_API void fl_session_abandon(fl_session *s);

/*
 * Sessions by id, with no keepalive thread: for tools (the CLI's `session` commands) whose
 * session outlives the process. fl_session_grant opens one and returns its id;
 * fl_session_keepalive_id renews it once (*ttl_ms, may be NULL: the TTL granted again);
 * fl_session_close_id ends it. fl_session_revoke_id (a user with the admin permission) ends
 * any user's session at once as an expiry does: lock-delay applies (SESSION.REVOKE).
 */
FL_API fl_err fl_session_grant(fl_client *c, uint64_t ttl_ms, uint64_t lockdelay_ms,
                               const char *name, uint64_t *sid);
FL_API fl_err fl_session_keepalive_id(fl_client *c, uint64_t sid, uint64_t *ttl_ms);
FL_API fl_err fl_session_close_id(fl_client *c, uint64_t sid);
FL_API fl_err fl_session_revoke_id(fl_client *c, uint64_t sid);

/* A live session as the servers see it (SESSION.INFO). Strings freed by fl_session_info_free. */
struct fl_session_info {
    uint64_t sid, ttl_ms, lockdelay_ms;
    uint64_t remaining_ms;           /* of its lease on the leader when it answered */
    char *name, *owner;              /* owner: the user that opened it ("" without users) */
    size_t n_locks, n_waits, n_keys; /* locks held exclusively, queued waits, leased keys */
};
/* FL_ESESSION if sid is no live session of this user (an admin's: of anybody's). */
FL_API fl_err fl_session_info(fl_client *c, uint64_t sid, struct fl_session_info *out);
FL_API void fl_session_info_free(struct fl_session_info *s);

struct fl_session_list {
    size_t n;
    struct fl_session_info *v;
};
/* The live sessions with ids above `after` (0: from the first), in id order, at most `limit`
 * looked at (0: the server's maximum): the user's own sessions, every session for an admin
 * or on servers without users (SESSION.LIST). */
FL_API fl_err fl_sessions(fl_client *c, uint64_t after, size_t limit, struct fl_session_list *out);
FL_API void fl_session_list_free(struct fl_session_list *l);

/* ---- locks ---- */

/*
 * Acquire `name` for the session, waiting up to wait_ms (0 = try once). On FL_OK *token is the
 * grant's fencing token. Survives leader changes during the wait (it re-asks with the same
 * REQ sid seq: the grant happens once, and a session that holds the lock gets its token again).
 * FL_ETIMEOUT: not granted within wait_ms (the queued wait was cancelled on the servers).
 */
FL_API fl_err fl_lock(fl_session *s, const char *name, uint64_t wait_ms, uint64_t *token);

/*
 * The same in shared mode (a read-write lock, LOCK name sid SHARED): any number of sessions
 * hold it shared, or one holds it exclusively (fl_lock), never both. The queue is one FIFO
 * across modes, so a queued fl_lock keeps later shared requests out. Each grant has its own
 * token; fl_fence_check accepts it, a fenced write (fl_put/fl_del FENCE) does not (only the
 * exclusive holder's). Released by fl_unlock or the session's end, like an exclusive hold; the
 * holder's safety is the session's (fl_session_safe_until, on_lost), as for fl_lock.
 * A session holds a lock in one mode at a time: fl_lock_shared by the exclusive holder is
 * FL_ESERVER; fl_lock by a shared holder is an upgrade (granted once it is the only holder;
 * FL_ETIMEOUT leaves the shared hold in place, but an upgrade whose outcome could not be
 * learned sends UNLOCK like any fl_lock, which ends the shared hold too).
 */
FL_API fl_err fl_lock_shared(fl_session *s, const char *name, uint64_t wait_ms, uint64_t *token);

/*
 * Several locks at once (LOCK.MULTI): names[0..n) (1..FL_LOCK_MULTI_MAX distinct names; the
 * server's --max-multi-lock-names may allow fewer), each exclusive unless shared[i] != 0
 * (shared may be NULL: all exclusive). Every name is granted in one log entry or none is: nothing
 * is held while it waits, so two sessions asking for overlapping sets in any order cannot deadlock;
 * the request waits FIFO on every name and is granted when it is first in line on all of them. On
 * FL_OK tokens[i] is the fencing token of names[i] (each resource fences with its own lock's
 * token). FL_ETIMEOUT: not granted within wait_ms (0 = try once: FL_ETIMEOUT if any is busy), and
 * nothing is held. FL_EDEADLOCK: a session that holds locks and asks for more could close a cycle
 * of waits through any of the names (the message names it): nothing was queued or taken. Across
 * leader changes as fl_lock; an outcome that could not be learned releases every name before
 * returning. A name already held or awaited by the session is FL_ESERVER.
 * Released by fl_unlock per name, or fl_unlock_multi.
 */
#define FL_LOCK_MULTI_MAX 40
FL_API fl_err fl_lock_multi(fl_session *s, size_t n, const char *const *names,
                            const uint8_t *shared, uint64_t wait_ms, uint64_t *tokens);
/* UNLOCK of each name in turn (every one is tried); the first error, or FL_OK. */
FL_API fl_err fl_unlock_multi(fl_session *s, size_t n, const char *const *names);

/*
 * fl_lock with a value and a max hold on the grant (LOCK ... VALUE v MAXHOLD ms; docs/protocol.md
 * "Lock values, transitions and max hold"). opts may be NULL (then it is fl_lock). The value
 * (value_len bytes, at most the servers' --max-lock-value) is shown by LOCK.INFO and the grant
 * event; the max hold (0: none; else within --min-max-hold..--max-max-hold) ends the grant on
 * the servers that long after it was made, even while the session lives, as an expiry does.
 * On FL_OK with a max hold, *maxhold_deadline (may be NULL) is the local monotonic time
 * (fl_now_ms) before which the max hold cannot have lapsed: the time before the LOCK was first
 * sent, plus the max hold, less the margins of the session's safe deadline. Work guarded by the
 * lock is safe only while fl_now_ms() is below both it and fl_session_safe_until(). Without a
 * max hold *maxhold_deadline is INT64_MAX. A retry of the holder changes neither value nor
 * max hold (UNLOCK and lock again for new ones). Waits, fail-overs and errors as fl_lock.
 */
struct fl_lock_opts {
    size_t size;         /* sizeof(struct fl_lock_opts) as the caller compiled it */
    const void *value;   /* VALUE (NULL: none) */
    size_t value_len;    /* its bytes */
    uint64_t maxhold_ms; /* MAXHOLD (0: none) */
    int notify;          /* NOTIFY: tell the holder the session queued (fl_lock_notify) */
};
FL_API fl_err fl_lock_with(fl_session *s, const char *name, uint64_t wait_ms,
                           const struct fl_lock_opts *opts, uint64_t *token,
                           int64_t *maxhold_deadline);

/* A lock's metadata (LOCK.INFO's value, max_hold_ms, transitions). FL_ENOTFOUND as
 * fl_lock_info. value (value_len bytes and a NUL; "" if none) is freed by fl_lock_meta_free. */
struct fl_lock_meta {
    char *value;
    size_t value_len;
    uint64_t maxhold_ms;  /* the exclusive grant's max hold, 0 if none */
    uint64_t transitions; /* the lock record's ended exclusive grants (0 for its first holder) */
};
FL_API fl_err fl_lock_meta(fl_client *c, const char *name, struct fl_lock_meta *out);
FL_API void fl_lock_meta_free(struct fl_lock_meta *meta);

/* One attempt, no queueing: FL_EBUSY if the lock is held or in lock-delay. */
FL_API fl_err fl_trylock(fl_session *s, const char *name, uint64_t *token);

FL_API fl_err fl_unlock(fl_session *s, const char *name);

struct fl_lock_holder {
    uint64_t sid, token;
};

struct fl_lock_info {
    uint64_t holder;        /* the exclusive holder's session id, 0 if none (free, held
                               shared, or in lock-delay) */
    uint64_t token;         /* the exclusive holder's token (0 if none) */
    uint64_t held_since_ms; /* leader's wall clock when granted (informational) */
    int lockdelay;          /* 1 while the lock is in lock-delay */
    size_t n_waiters;
    uint64_t *waiters; /* session ids in queue order (both modes); freed by fl_lock_info_free */
    char mode[16];     /* "exclusive", "shared", or "none" (no holder) */
    size_t n_holders;
    struct fl_lock_holder *holders; /* the exclusive holder, or every shared holder in token
                                       order; freed by fl_lock_info_free */
};

/* FL_ENOTFOUND if the lock is free and nobody waits. */
FL_API fl_err fl_lock_info(fl_client *c, const char *name, struct fl_lock_info *out);

/* The exclusive holder of lock name (*holder, 0 if none) and its hold count (*count: the LOCKs
   a reentrant holder has not yet UNLOCKed; 1 for any other holder; 0 without an exclusive
   holder). FL_ENOTFOUND if the lock is free and nobody waits. (A call of its own: struct
   fl_lock_info's layout is part of the ABI.) */
FL_API fl_err fl_lock_count(fl_client *c, const char *name, uint64_t *holder, uint64_t *count);
FL_API void fl_lock_info_free(struct fl_lock_info *info);

/* FL_OK if token is the token of a current holder of lock name (exclusive, or any shared
   holder), FL_ESTALE otherwise. */
FL_API fl_err fl_fence_check(fl_client *c, const char *name, uint64_t token);

/*
 * Signed tokens (the servers run with --token-key; docs/fencing.md "Signed tokens"). fl_sign writes
 * to out the 64 lowercase hex digits (and a NUL) of HMAC-SHA256(key, "fencelock-token-v1:" +
 * len(name) + ":" + name + ":" + token) when token is a current holder's token of name (the
 * rule of fl_fence_check, asked of the leader): a resource holding the same key checks it
 * without asking fencelock. FL_ESTALE: not a current token; FL_ESERVER: the servers have no
 * --token-key (fl_client_errmsg says so). out is "" on any error.
 * fl_lock_signed is fl_lock, then fl_sign of the grant: on FL_OK both *token and sig are set.
 * When the lock was granted but the signature failed, *token is set, the lock is HELD, and the
 * signing error is returned (fl_unlock it, or call fl_sign again).
 * fl_verify asks any server whether sig is the signature of (name, token) under one of its
 * keys (FENCE.VERIFY): *valid 1 or 0. It says the token was issued for name, not that it is
 * still current.
 */
FL_API fl_err fl_sign(fl_client *c, const char *name, uint64_t token, char out[65]);
FL_API fl_err fl_lock_signed(fl_session *s, const char *name, uint64_t wait_ms, uint64_t *token,
                             char sig[65]);
FL_API fl_err fl_verify(fl_client *c, const char *name, uint64_t token, const char *sig,
                        int *valid);

/*
 * A bearer token for the HTTP API (AUTH.TOKEN; docs/security.md "Bearer tokens"): the user
 * this client authenticated as (fl_options.user), valid for ttl_ms (0: the server's
 * --http-token-ttl; at least 1000, at most --http-token-max-ttl). Send it as
 * `Authorization: Bearer <token>`. out (cap bytes, FL_AUTH_TOKEN_MAX is enough) gets the token
 * and a NUL; "" on any error. FL_EINVAL: a bad argument or cap too small; FL_ESERVER: the
 * servers have no users (no --acl-file) or the TTL is out of bounds (fl_client_errmsg says).
 * The token is a credential: keep it out of logs.
 */
#define FL_AUTH_TOKEN_MAX 160
FL_API fl_err fl_auth_token(fl_client *c, uint64_t ttl_ms, char *out, size_t cap);

/* Held locks (LOCKS prefix): name, holder, token and queue length of each, in name order. */
struct fl_lock_entry {
    char *name;
    uint64_t holder, token;
    int lockdelay;
    size_t n_waiters;
};
struct fl_lock_list {
    size_t n;
    struct fl_lock_entry *v;
};
FL_API fl_err fl_locks(fl_client *c, const char *prefix, size_t limit, struct fl_lock_list *out);
FL_API void fl_lock_list_free(struct fl_lock_list *l);

/* Who waits for whom (LOCK.WAITS prefix; docs/protocol.md "Deadlocks"): one entry per queued
 * request on the locks, semaphores and elections whose name starts with prefix (NULL or "":
 * all), in name then queue order: its lock and object kind ("lock", "semaphore", "election"),
 * the waiting session, and the sessions it waits for (any = 1: any one of them, a full
 * semaphore's permit holders; 0: all of them). A wait that would close a cycle is refused
 * FL_EDEADLOCK by fl_lock and the other acquiring calls, its message naming the cycle. */
struct fl_wait_entry {
    char *lock, *object;
    uint64_t sid;
    uint64_t *waits_for;
    size_t n_waits_for;
    int any;
};
struct fl_wait_list {
    size_t n;
    struct fl_wait_entry *v;
};
FL_API fl_err fl_lock_waits(fl_client *c, const char *prefix, struct fl_wait_list *out);
FL_API void fl_wait_list_free(struct fl_wait_list *l);

/* The grants of lock (semaphore, election) `name`, newest first (LOCK.HISTORY; docs/protocol.md
 * "Lock history"): at most `count` (0: the server's default, 100), only tokens below `before`
 * (0: from the newest; the next page: the last entry's token). Times are the leaders' wall
 * clocks (ms) as the entries carry them; ended_rev 0 and ended_by "" while the grant is held.
 * FL_ECOMPACTED when the range asked was dropped (the oldest grants go first). The caller owns
 * the list: fl_history_free. */
struct fl_history_waiter {
    uint64_t sid, waited_ms;
};
struct fl_history_entry {
    char *kind, *session_name, *user, *value, *ended_by;
    uint64_t sid, token, permits, granted_ms, waited_ms, ended_rev, ended_ms, held_ms;
    uint64_t waiters_total;            /* queued at the grant */
    struct fl_history_waiter *waiters; /* the first few of them, in the order they queued */
    size_t n_waiters;
};
struct fl_history {
    size_t n;
    struct fl_history_entry *v;
};
FL_API fl_err fl_lock_history(fl_client *c, const char *name, size_t count, uint64_t before,
                              struct fl_history *out);

/*
 * Trace context (docs/protocol.md "Trace context"): the calling thread's W3C traceparent
 * ("00-<32 hex>-<16 hex>-<2 hex>", lowercase, ids not all zeros), sent as TRACEPARENT with
 * this thread's LOCK requests (fl_lock, fl_lock_shared, fl_lock_with, fl_lock_notify ...),
 * UNLOCKs and fenced writes (fl_put / fl_del / fl_incr with opts->fence_name), until set again;
 * NULL or "" clears it. The servers record it in the lock history, the events and the audit
 * log. Set it from the current span before such a call (each thread has its own). FL_EINVAL
 * for any other text (the thread's value is then unchanged). fl_trace_get: the thread's value
 * ("" if none), valid until its next fl_trace_set.
 */
FL_API fl_err fl_trace_set(const char *traceparent);
FL_API const char *fl_trace_get(void);
FL_API void fl_history_free(struct fl_history *h);

/* ---- semaphores and elections (docs/protocol.md) ---- */

/*
 * A permit of semaphore `name` (at most `limit` sessions hold one at once; the first acquirer
 * sets the limit, another limit is FL_ESERVER while the semaphore exists; while an operator's
 * limit is set (fl_sem_setlimit) it is the limit, and any `limit` given is accepted). Waits,
 * fail-overs, FL_ETIMEOUT and the clean-up of an unknown outcome as fl_lock; the permit is the
 * session's (fl_session_safe_until, on_lost) and ends with it. FL_EWRONGTYPE: name is a lock or an
 * election.
 */
FL_API fl_err fl_sem_acquire(fl_session *s, const char *name, uint32_t limit, uint64_t wait_ms,
                             uint64_t *token);
/*
 * As fl_sem_acquire, for `permits` permits at once (1..limit, else FL_EINVAL): one acquisition
 * with one token, released whole by fl_sem_release. Queued requests are granted in FIFO order
 * only: a later request for fewer permits never overtakes this one.
 */
FL_API fl_err fl_sem_acquire_n(fl_session *s, const char *name, uint32_t limit, uint32_t permits,
                               uint64_t wait_ms, uint64_t *token);
/* Release the acquisition (all its permits), or leave the queue. FL_ENOTHOLDER if neither. */
FL_API fl_err fl_sem_release(fl_session *s, const char *name);
/*
 * SEM.SETLIMIT (admin under --acl-file): the operator's limit of semaphore `name`
 * (1..1048576), kept until fl_sem_limit_reset whether or not the semaphore exists, and winning
 * over the acquirers' limit. Holders above a lower limit keep their permits; FL_ESERVER (nothing
 * changes) if a queued request wants more permits than it; FL_EWRONGTYPE for a lock or an
 * election. The same limit again changes nothing (a resend is harmless).
 */
FL_API fl_err fl_sem_setlimit(fl_client *c, const char *name, uint32_t limit);
/* Remove the operator's limit of `name`; *removed (may be NULL): 1 if there was one (a resend
   after a lost reply answers 0). A live semaphore keeps its limit until it is dropped. */
FL_API fl_err fl_sem_limit_reset(fl_client *c, const char *name, int *removed);

/*
 * Campaign for election `name` with `value` (NUL-terminated): FL_OK with the leader's fencing
 * token once this session leads; FL_ETIMEOUT if not within wait_ms (no longer a candidate).
 * Waits and fail-overs as fl_lock; leadership is the session's and ends with it (on_lost,
 * fl_session_safe_until), so a leader must stop acting before fl_session_safe_until().
 */
FL_API fl_err fl_campaign(fl_session *s, const char *name, const char *value, uint64_t wait_ms,
                          uint64_t *token);
/* The leader (token) replaces its value; *rev (may be NULL): the change's revision.
   FL_ESTALE unless this session leads with token. */
FL_API fl_err fl_proclaim(fl_session *s, const char *name, uint64_t token, const char *value,
                          uint64_t *rev);
/* Step down (the next candidate leads) or withdraw. FL_ENOTHOLDER if neither. */
FL_API fl_err fl_resign(fl_session *s, const char *name);

struct fl_leader_info {
    uint64_t sid;       /* the leader's session, 0: nobody leads (fl_observe only) */
    uint64_t token;     /* its fencing token (= since_rev), 0 if nobody leads */
    uint64_t since_rev; /* the revision it took over at */
    uint64_t rev;       /* the revision of the last change (takeover, proclaim, or leaderless) */
    char *value;        /* NUL-terminated (value_len excludes it); freed by fl_leader_info_free */
    size_t value_len;
};
/* The current leader (linearizable). FL_ENOTFOUND if nobody leads. */
FL_API fl_err fl_leader(fl_client *c, const char *name, struct fl_leader_info *out);
/*
 * Block until the election changed after revision after_rev (0: answer the current state at
 * once) or wait_ms passed (FL_ETIMEOUT); the answer is the first change after after_rev (the
 * current state if the server's event history no longer reaches back to it). Pass back
 * out->rev to see every later change, one by one: never an older leader after a newer one.
 * A fail-over during the wait is retried on the new leader with the same after_rev.
 * Leaderless: out->sid == 0.
 */
FL_API fl_err fl_observe(fl_client *c, const char *name, uint64_t after_rev, uint64_t wait_ms,
                         struct fl_leader_info *out);
FL_API void fl_leader_info_free(struct fl_leader_info *info);

/* ---- latches and barriers (docs/protocol.md "Latches and barriers") ----
 * A participant is a session: a joined session that ends before it counted down (or a session
 * that ends inside a barrier) breaks it, and every waiter gets FL_EBROKEN at once. */

/* A countdown latch of `count` (1..1048576) counts; the same count again changes nothing,
   another is FL_ESERVER, a broken latch FL_EBROKEN (delete it first). */
FL_API fl_err fl_latch_create(fl_client *c, const char *name, uint32_t count);
/* This session promises one count-down (FL_ESERVER if every count left is promised). */
FL_API fl_err fl_latch_join(fl_session *s, const char *name);
/* Count down once (a joined session once; one that did not join only with a count nobody
   promised); *remaining (may be NULL): the counts left. Exactly once through the session. */
FL_API fl_err fl_latch_countdown(fl_session *s, const char *name, uint64_t *remaining);
/* FL_OK once the latch is at zero, FL_ETIMEOUT after wait_ms (0: check once), FL_EBROKEN,
   FL_ESERVER if there is no such latch. A fail-over during the wait is retried. */
FL_API fl_err fl_latch_wait(fl_client *c, const char *name, uint64_t wait_ms);
/* *deleted (may be NULL): 1 if a latch or barrier of that name was deleted. */
FL_API fl_err fl_latch_delete(fl_client *c, const char *name, int *deleted);
struct fl_latch_info {
    int barrier;         /* a barrier, else a latch */
    int state;           /* 0 counting (a barrier: filling), 1 zero (full), 2 broken */
    uint64_t count;      /* its count */
    uint64_t remaining;  /* latch: counts left; barrier: sessions to come / still inside */
    uint64_t n_joiners;  /* participants (a latch's joined sessions, a barrier's inside) */
    uint64_t broken_sid; /* the session whose end broke it, 0 if not broken */
};
/* FL_ENOTFOUND if there is no latch or barrier of that name. */
FL_API fl_err fl_latch_info(fl_client *c, const char *name, struct fl_latch_info *out);
/* Enter a double barrier of `count` sessions: FL_OK once count are inside, FL_ETIMEOUT after
   wait_ms (the session stays inside), FL_EBROKEN. */
FL_API fl_err fl_barrier_enter(fl_session *s, const char *name, uint32_t count, uint64_t wait_ms);
/* Leave: FL_OK once every session that entered has left, FL_ETIMEOUT after wait_ms (this session
   has left all the same), FL_EBROKEN. */
FL_API fl_err fl_barrier_leave(fl_session *s, const char *name, uint64_t wait_ms);

/* ---- keys ---- */

/* Conditions and attachments of a write; NULL = none. */
struct fl_write_opts {
    const char *fence_name; /* FENCE fence_name fence_token: only if the token is current */
    uint64_t fence_token;
    int use_ifrev; /* IFREV ifrev: only if the key's mod_rev is ifrev (0: does not exist) */
    uint64_t ifrev;
    int lease;          /* PUT only: delete the key when `session` ends */
    uint64_t lease_sid; /* PUT only: delete the key when session lease_sid ends (0: none) */
};

/* session may be NULL (then the write is not retried after it was sent). *rev may be NULL. */
FL_API fl_err fl_put(fl_client *c, fl_session *session, const char *key, const void *value,
                     size_t len, const struct fl_write_opts *opts, uint64_t *rev);
/*
 * A counter (INCR key BY by): adds `by` to the key's value, the decimal text of a signed 64-bit
 * integer (an absent key counts as 0); *value (may be NULL) is the new value. Linearizable;
 * fenceable and conditional as fl_put (opts->lease is ignored: the key keeps its lease). Through
 * a session it is retried exactly once (REQ), so an acknowledged increment counts once.
 * FL_ESERVER if the value is not such an integer or the sum overflows (nothing changes).
 */
FL_API fl_err fl_incr(fl_client *c, fl_session *session, const char *key, int64_t by,
                      const struct fl_write_opts *opts, int64_t *value);
/* *deleted (may be NULL) is 1 if the key existed. */
FL_API fl_err fl_del(fl_client *c, fl_session *session, const char *key,
                     const struct fl_write_opts *opts, int *deleted);

/*
 * Transactions (TXN, docs/protocol.md): compares, then all of one branch's writes in one log
 * entry, or none. Build with fl_txn_new, add compares (fl_txn_if_*) and ops (fl_txn_then_*,
 * fl_txn_else_*: in the order given), optionally fl_txn_fence; fl_txn_commit sends it (through
 * a session: REQ, retried exactly once); then the accessors read the result. Every function
 * copies what it is given. A builder may be committed again (with the same session, that is a
 * new request). FL_ETOOLARGE: more arguments than one command holds (the server's --max-txn-ops,
 * --max-txn-bytes and --max-args bind too). fl_txn_commit: FL_ESTALE (a stale fence),
 * FL_ETOOLARGE, FL_ENOSPACE, FL_EPERM, FL_ESERVER (a failing op, fl_txn_failed_op names it:
 * nothing applied), ...
 */
typedef struct fl_txn fl_txn;
enum fl_txn_rel { FL_TXN_EQ = 0, FL_TXN_NE = 1, FL_TXN_LT = 2, FL_TXN_GT = 3 };
FL_API fl_txn *fl_txn_new(void); /* NULL: out of memory */
FL_API void fl_txn_free(fl_txn *t);
/* The key's mod_rev (0 if absent) `rel` rev. */
FL_API fl_err fl_txn_if_rev(fl_txn *t, const char *key, enum fl_txn_rel rel, uint64_t rev);
/* The key's value = or != value (an absent key has none); other relations: FL_EINVAL. */
FL_API fl_err fl_txn_if_value(fl_txn *t, const char *key, enum fl_txn_rel rel, const void *value,
                              size_t len);
/* The key exists (exists != 0) or is absent. */
FL_API fl_err fl_txn_if_exists(fl_txn *t, const char *key, int exists);
/* token is (FL_TXN_EQ) or is not (FL_TXN_NE) a current token of lock (FENCE's rule). */
FL_API fl_err fl_txn_if_token(fl_txn *t, const char *lock, enum fl_txn_rel rel, uint64_t token);
/* Session sid holds lock (exclusively, shared or a semaphore permit). */
FL_API fl_err fl_txn_if_holds(fl_txn *t, const char *lock, uint64_t sid);
FL_API fl_err fl_txn_then_put(fl_txn *t, const char *key, const void *value, size_t len);
FL_API fl_err fl_txn_then_del(fl_txn *t, const char *key);
FL_API fl_err fl_txn_then_incr(fl_txn *t, const char *key, int64_t by);
FL_API fl_err fl_txn_else_put(fl_txn *t, const char *key, const void *value, size_t len);
FL_API fl_err fl_txn_else_del(fl_txn *t, const char *key);
FL_API fl_err fl_txn_else_incr(fl_txn *t, const char *key, int64_t by);
/* FENCE lock token on the whole TXN: FL_ESTALE at commit, nothing applied, if not current. */
FL_API fl_err fl_txn_fence(fl_txn *t, const char *lock, uint64_t token);
FL_API fl_err fl_txn_commit(fl_client *c, fl_session *session, fl_txn *t);
/* After an FL_OK commit: 1 if THEN ran; the store's revision after the TXN; the number of
 * results (the ops of the branch that ran) and result i (PUT: the revision, DEL: 1 or 0, INCR:
 * the new value). fl_txn_results_known is 0 (and no results) for a retry answered by a node
 * that restored the request table from a snapshot (docs/protocol.md "TXN"). */
FL_API int fl_txn_succeeded(const fl_txn *t);
FL_API uint64_t fl_txn_revision(const fl_txn *t);
FL_API size_t fl_txn_nresults(const fl_txn *t);
FL_API int fl_txn_results_known(const fl_txn *t);
FL_API int64_t fl_txn_result(const fl_txn *t, size_t i);
/* After a commit that returned FL_ESERVER because an op of the branch that ran cannot apply
 * ("-ERR TXN op N: ...": an INCR of a value that is no counter, or one that would overflow):
 * N, the op's place in that branch counted from 1 (as Go's TxnOpError.Op, Java's op(), Node's
 * and Python's op). Nothing of the TXN applied. 0 after any other outcome (a success, another
 * error, no commit yet); fl_client_errmsg has the server's text. */
FL_API int fl_txn_failed_op(const fl_txn *t);

struct fl_kv {
    void *value; /* NUL-terminated for convenience (len excludes it); freed by fl_kv_free */
    size_t len;
    uint64_t create_rev, mod_rev, version, lease;
};
/* FL_ENOTFOUND if absent. Linearizable. */
FL_API fl_err fl_get(fl_client *c, const char *key, struct fl_kv *out);
FL_API void fl_kv_free(struct fl_kv *kv);

struct fl_strlist {
    size_t n;
    char **v;
};
FL_API fl_err fl_keys(fl_client *c, const char *prefix, size_t limit, struct fl_strlist *out);
FL_API void fl_strlist_free(struct fl_strlist *l);

/* ---- watch: the event stream (XREAD on fencelock:events[:prefix], docs/protocol.md) ---- */

#define FL_WATCH_ID_MAX 48 /* "<rev>-<n>" with its NUL */

enum fl_watch_kind {
    FL_WATCH_EVENT,       /* one event: delivered once, in id order */
    FL_WATCH_COMPACTED,   /* the events after the last delivered id (or from_id) are gone: id is
                             the oldest retained. Return 0 to go on from the oldest retained (the
                             gap is the callback's to handle); else the watch ends with
                             FL_ECOMPACTED */
    FL_WATCH_RESUMED,     /* the stream was interrupted (leader change, lost connection,
                             -SLOWREADER) and goes on after id, the last delivered (message says
                             why); nothing was lost or repeated. Informational */
    FL_WATCH_INTERRUPTED, /* no server answered a read for a while (message says why): the
                             watcher retries until one does (then FL_WATCH_RESUMED) or it is
                             stopped. Once per interruption; informational */
};

struct fl_watch_field {
    const char *key;   /* NUL-terminated */
    const char *value; /* NUL-terminated for convenience; may hold NULs (value_len counts) */
    size_t value_len;
};

/* Borrowed by the callback: valid only until it returns. */
struct fl_event {
    enum fl_watch_kind kind;
    char id[FL_WATCH_ID_MAX]; /* the event's id; COMPACTED: the oldest retained; RESUMED: the
                                 last delivered ("" if none yet) */
    uint64_t rev, seq;        /* id as numbers: "<rev>-<seq>" */
    const char *type;         /* "put", "grant", ... (docs/protocol.md); "" if not an event */
    const char *name;         /* the key or lock name; "" if the event has none */
    size_t n_fields;          /* every field as the server sent it, type and name included */
    const struct fl_watch_field *fields;
    const char *message; /* COMPACTED / RESUMED: why (the server's words or the library's) */
};

/* The value of field `key` of an event (its length in *len, may be NULL), NULL if absent. */
FL_API const char *fl_event_field(const struct fl_event *ev, const char *key, size_t *len);

/* Return 0 to go on, anything else to end the watch (fl_watch_join then returns FL_OK). */
typedef int (*fl_watch_cb)(const struct fl_event *ev, void *ctx);

typedef struct fl_watcher fl_watcher;

/*
 * Watch the events of every key, lock and session (prefix NULL or "") or of the keys and locks
 * whose name starts with prefix, from a thread of the watcher's own, on connections of its
 * own (a copy of c's endpoints and options: c may be used meanwhile, and freed after
 * fl_watch_join). from_id: NULL or "$" for the events after now, "0" for every retained one,
 * or "<rev>-<n>" / "<rev>" for those after that id (an id a callback was given resumes exactly
 * after it). cb runs on the watcher's thread, one call at a time, in id order: each event
 * exactly once, also across leader changes, reconnects and -SLOWREADER (the watcher resumes
 * after the last id it delivered). Reads go to the leader (linearizable). An unavailable
 * cluster is retried until it answers or fl_watch_stop. FL_EINVAL for a bad from_id.
 */
FL_API fl_err fl_watch(fl_client *c, const char *prefix, const char *from_id, fl_watch_cb cb,
                       void *ctx, fl_watcher **out);
/* Ask the watcher to end: a read in progress is abandoned (within about 0.1 s), and a
   callback that is running or about to start may still run once. Safe from any thread, also
   from the callback. */
FL_API void fl_watch_stop(fl_watcher *w);
/* 1 once the watcher's thread has ended (stopped, the callback asked, or an error). */
FL_API int fl_watch_done(fl_watcher *w);
/* Wait for the thread to end and free the watcher. Returns why it ended: FL_OK (stopped or
   the callback asked), FL_ECOMPACTED, or the error that a retry cannot mend (FL_EAUTH, FL_EPERM,
   FL_ESERVER, FL_ENOMEM; message in errmsg[n] if errmsg is not NULL). last_id (may be NULL,
   FL_WATCH_ID_MAX bytes): the last id delivered, "" if none. */
FL_API fl_err fl_watch_join(fl_watcher *w, char *last_id, char *errmsg, size_t n);

/* ---- cooperative revocation (LOCK.REVOKE, docs/protocol.md "Revocation") ---- */

/*
 * Ask the exclusive holder of lock `name` to let go (any session's: a user with the revoke
 * permission on the name, or admin). The holder is told (fl_revoke_watch). deadline_ms > 0:
 * if the same grant still holds the lock that long after the request applied (the leader's
 * clock), the servers release it as an expiry would (lock-delay, then the next waiter with a
 * larger token); 0: only ask. reason may be NULL. *token (may be NULL): the grant's token.
 * FL_ENOTHOLDER: nobody holds the lock exclusively; FL_EPERM: not allowed. A second revoke of
 * the same grant may only bring the deadline forward.
 */
FL_API fl_err fl_lock_revoke(fl_client *c, const char *name, uint64_t deadline_ms,
                             const char *reason, uint64_t *token);

/* A revoke request to a holder; borrowed by the callback, valid until it returns. */
struct fl_revoke {
    const char *name;     /* the lock */
    uint64_t token;       /* the grant asked to let go */
    uint64_t sid;         /* its session */
    uint64_t deadline_ms; /* from when the request applied; 0: asked only, never forced */
    const char *reason;   /* reason_len bytes (NUL-terminated for convenience) */
    size_t reason_len;
    const char *by; /* who asked: "user@ip:port", or "ip:port" without --acl-file */
    size_t by_len;
};
typedef void (*fl_revoke_cb)(const struct fl_revoke *rv, void *ctx);

/*
 * The on_revoke callback of a held lock: cb runs on a watcher thread (fl_watch on the lock's
 * events, from the grant on, so no request is missed) once for each revoke request of grant
 * `token` of `name` held by session s (a second request runs it again: the earliest deadline
 * stands). The deadline counts from when the request applied on the leader, which is before
 * cb runs: stop the work well before deadline_ms has passed, or UNLOCK. Stop it with
 * fl_watch_stop and free it with fl_watch_join (before fl_session_close). Reading the event
 * stream needs the read permission without keys= / locks= globs (docs/security.md).
 */
FL_API fl_err fl_revoke_watch(fl_session *s, const char *name, uint64_t token, fl_revoke_cb cb,
                              void *ctx, fl_watcher **out);

/*
 * fl_lock with NOTIFY (LOCK ... NOTIFY): when the request queues behind an exclusive holder,
 * that holder is told someone waits (fl_waiter_watch), once per waiting session. Otherwise
 * exactly fl_lock: the same waits, fail-overs and errors.
 */
FL_API fl_err fl_lock_notify(fl_session *s, const char *name, uint64_t wait_ms, uint64_t *token);

/* A waiter queued behind a held lock with NOTIFY; borrowed by the callback until it returns. */
struct fl_waiter {
    const char *name;
    uint64_t token;   /* the holder's grant it queued behind */
    uint64_t sid;     /* the waiting session */
    uint64_t wait_ms; /* how long it said it would wait */
};
typedef void (*fl_waiter_cb)(const struct fl_waiter *w, void *ctx);

/*
 * The on_waiter callback of a held lock: cb runs on a watcher thread (fl_watch on the lock's
 * events, from the grant on) once for each session that queued behind grant `token` of `name`
 * with fl_lock_notify. The holder may let go early, or ignore it. Stop it with fl_watch_stop
 * and free it with fl_watch_join (before fl_session_close). Reading the event stream needs the
 * read permission without keys= / locks= globs (docs/security.md).
 */
FL_API fl_err fl_waiter_watch(fl_session *s, const char *name, uint64_t token, fl_waiter_cb cb,
                              void *ctx, fl_watcher **out);

/* ---- cluster ---- */

struct fl_member {
    uint64_t id;
    char *raft_address, *client_address, *role;
    int leader;
};
struct fl_status {
    uint64_t id, leader_id, term, commit_index, applied_index, revision;
    char *role, *leader; /* of the node that answered: the leader if one is known */
    size_t n_members;
    struct fl_member *members;
};
FL_API fl_err fl_status(fl_client *c, struct fl_status *out);
/* The view of the node that answers (CLUSTER.INFO), not the leader's: ask a client made for
 * one node's address (fl_client_new with that endpoint alone). No members (n_members 0).
 * Freed by fl_status_free. */
FL_API fl_err fl_node_status(fl_client *c, struct fl_status *out);
FL_API void fl_status_free(struct fl_status *st);

/* Membership changes answer once the change committed (an add: once the server caught up and
 * is a voter), so each may take up to the whole timeout_ms; the server's refusal (another
 * change in progress, a removal it will not do without force, a server that did not catch
 * up) is FL_ESERVER with the server's words in fl_client_errmsg(). */
FL_API fl_err fl_member_add(fl_client *c, uint64_t id, const char *raft_address);
FL_API fl_err fl_member_remove(fl_client *c, uint64_t id);
/* The same with FORCE: also when one voter would remain, or when the remaining voters may not
 * be able to commit it (never the last voter). */
FL_API fl_err fl_member_remove_force(fl_client *c, uint64_t id);
/* id 0: any voter. */
FL_API fl_err fl_member_transfer(fl_client *c, uint64_t id);

/*
 * An online, consistent backup of the whole state (sessions, locks, semaphores, elections,
 * keys, the revision counter), taken by the leader (SNAPSHOT.SAVE; the admin permission under
 * --acl-file) and written to `path` through `path`.tmp, fsync and rename, so `path` is
 * either the old file or the whole new one. The leader's SHA-256 of the bytes is checked
 * before anything is written (FL_EPROTO if they differ). `fencelockd --restore path` makes a
 * new cluster from the file (docs/operations.md). info (may be NULL): what was saved.
 */
struct fl_snapshot_info {
    uint64_t revision; /* the state's revision: tokens after a restore are larger */
    uint64_t size;     /* bytes of state (the file has a 56-byte header more) */
    char sha256[65];   /* lowercase hex */
};
FL_API fl_err fl_snapshot_save(fl_client *c, const char *path, struct fl_snapshot_info *info);

#ifdef __cplusplus
}
#endif

#endif
