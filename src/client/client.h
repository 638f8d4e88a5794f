/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libfencelock internals: the client object, its connection pool and the one call path every
 * public function goes through (cl_call).
 *
 * Owns: the endpoint list (given plus learned from -NOTLEADER and CLUSTER.MEMBERS), the known
 * leader, idle connections (struct cl_link, link.h; at most CL_POOL_MAX), the TLS context
 * (when fl_options asks for TLS) and each calling thread's last error message. All of it is guarded
 * by fl_client.mu; a connection taken from the pool belongs to the taking thread alone until it is
 * put back or dropped. Replies returned by cl_call belong to the caller (freeReplyObject).
 *
 * Retries: cl_call follows redirects and reconnects until the call's deadline. A command that
 * was (possibly) sent and whose answer was lost is sent again only with CL_RETRY: reads, and
 * writes that carry `REQ sid seq` (the server answers a repeat from its cache).
 */
#ifndef FL_CLIENT_INTERNAL_H
#define FL_CLIENT_INTERNAL_H

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "client/link.h"
#include "common/proto.h"
#include "fencelock.h"

#define CL_ENDPOINTS_MAX 16
#define CL_POOL_MAX 16
#define CL_ARGS_MAX 128 /* LOCK.MULTI: 8 + 3 per name at most (fl_lock_multi) */
#define CL_ERRMSG_MAX 256
#define CL_PPM 1000000 /* fl_options.drift_ppm is in parts per million */

struct cl_conn {
    char addr[PROTO_ADDR_BUF];
    struct cl_link *ln;
};

struct cl_errslot {
    pthread_t tid;
    char msg[CL_ERRMSG_MAX];
    /* the last refused TLS handshake of the current call: reported when its deadline passes
     * rather than the attempt the deadline cut short */
    char tls[CL_ERRMSG_MAX];
    struct cl_errslot *next;
};

struct fl_client {
    struct fl_options opt;
    pthread_mutex_t mu;
    char endpoints[CL_ENDPOINTS_MAX][PROTO_ADDR_BUF];
    int n_endpoints;
    unsigned next_endpoint;      /* round robin while no leader is known */
    char leader[PROTO_ADDR_BUF]; /* "" when unknown */
    struct cl_conn pool[CL_POOL_MAX];
    int n_pool;
    bool members_learned; /* CLUSTER.MEMBERS merged once */
    struct cl_errslot *errs;
    char *user, *password; /* copies of fl_options' (NULL: none); wiped when freed */
    /* TLS (fl_options.tls*): the context every connection is made with (NULL: plain TCP), the
     * name the server's certificate must match (NULL: the endpoint's host), and why the
     * files did not load ("" if they did: then every call fails at once with it) */
    struct ssl_ctx_st *tls;
    char *tls_name;
    char tls_err[CL_ERRMSG_MAX];
};

/* The caller's options (NULL: none) as this library's struct, read by opt->size (options.c):
 * -1 when that size is below the first layout or a field this library does not know is set.
 * Pointers are borrowed from the caller. */
int cl_options_read(struct fl_options *out, const struct fl_options *opt);
/* The numeric options of o that are in range into to (the rest keep to's values). */
void cl_options_apply(struct fl_options *to, const struct fl_options *o);

/* One command: arguments are borrowed for the duration of cl_call. */
struct cl_cmd {
    int argc;
    const char *argv[CL_ARGS_MAX];
    size_t len[CL_ARGS_MAX];
    char num[CL_ARGS_MAX][24]; /* storage for numeric arguments */
    int64_t block_ms;          /* how long the server may legitimately hold the reply back */
    int wait_idx;              /* >0: argv[wait_idx] is a WAIT ms that each send recomputes */
    int64_t wait_end;          /* ... as the time left until wait_end (at least 1 ms) */
    const atomic_int *cancel;  /* non-NULL and set: give the call up (FL_ETIMEOUT) at once */
    /* How many times cl_call began to send it. Over 1: it was sent again after an unknown
     * outcome, so an answer that cannot look back at an earlier send (-NOSESSION: a REQ
     * command's session, and with it the answer kept for a resend, is gone) says nothing
     * about whether that earlier send applied. */
    unsigned sends;
};

void cl_cmd_init(struct cl_cmd *m, const char *name);
void cl_arg(struct cl_cmd *m, const char *p, size_t len);
void cl_arg_str(struct cl_cmd *m, const char *s);
/* TRACEPARENT and the calling thread's fl_trace_set value, if any (trace.c). */
void cl_arg_trace(struct cl_cmd *m);
void cl_arg_u64(struct cl_cmd *m, uint64_t v);
/* WAIT ms ending at wait_end: the value sent is the time left when it is (re)sent. */
void cl_arg_wait(struct cl_cmd *m, int64_t wait_end);

enum cl_flags {
    CL_RETRY = 1,   /* safe to send again after an unknown outcome */
    CL_ANYNODE = 2, /* answered by any node: a reply does not mean the node leads */
};

/*
 * Send m to the leader (following redirects) and wait for its reply until `deadline`
 * (fl_now_ms). FL_OK: *out is the reply (possibly an error reply other than NOTLEADER,
 * NOLEADER and, with CL_RETRY, UNKNOWN), the caller frees it. Otherwise the thread's error
 * message is set and *out is NULL.
 */
fl_err cl_call(fl_client *c, struct cl_cmd *m, int64_t deadline, unsigned flags, redisReply **out);

/* REQ sid seq: the exactly-once tag of a session's write. */
void cl_arg_req(struct cl_cmd *m, uint64_t sid, uint64_t seq);

/* cl_call of a command answered by an integer: FL_OK with *v, else the error reply mapped. */
fl_err cl_call_int(fl_client *c, struct cl_cmd *m, int64_t deadline, unsigned flags, uint64_t *v);

/* Talk to addr ("host:port", n bytes) from now on; an invalid address forgets the leader. */
void cl_set_leader(fl_client *c, const char *addr, size_t n);

/* Map an error reply's code word to an fl_err and record the message. */
fl_err cl_reply_err(fl_client *c, const redisReply *r);
/* Set a LOCK ... WAIT argument to the wait that is left (a resent LOCK asks for no more). */
void cl_wait_refresh(struct cl_cmd *m);
/* True when r is an error reply whose first word is `code` (a PROTO_* word). */
bool cl_err_is(const redisReply *r, const char *code);
/* N of an error reply's text "ERR TXN op N: ..." (s, len bytes: a TXN refused because its
 * branch's op N cannot apply, counted from 1), or 0 for any other text, an N of 0 or one over
 * INT_MAX: the same rule as the Go, Java, Node and Python clients' parsers. */
int cl_txn_op(const char *s, size_t len);

/* Record the thread's message for the client and return err. */
fl_err cl_fail(fl_client *c, fl_err err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void cl_clear_err(fl_client *c);

/* Default deadline of a call started now. */
int64_t cl_deadline(const fl_client *c);

/* Fields of a RESP2 flat map reply ("k1", v1, "k2", v2...): NULL if absent. */
const redisReply *cl_field(const redisReply *map, const char *key);
uint64_t cl_field_u64(const redisReply *map, const char *key);
/* A malloc'ed NUL-terminated copy of a string field ("" if absent); NULL on OOM. */
char *cl_field_dup(const redisReply *map, const char *key);

void cl_sleep_ms(int64_t ms);

/* Session internals the lock and KV calls share. */
/* Take the session's next seq and hold its op lock (mutating calls are serialized so that
   seqs reach the server in order); FL_ESESSION if the session is lost. */
fl_err cl_session_begin(fl_session *s, uint64_t *seq);
void cl_session_end(fl_session *s);
/* A server said NOSESSION: the session is lost (the keepalive thread reports it). */
void cl_session_mark_lost(fl_session *s);
fl_client *cl_session_client(fl_session *s);
/* A span the servers measure (a lease, a max hold), less this client's margin for its clock
   running slow (fl_options.margin_ms, drift_ppm): the same rule as the session's safe deadline. */
int64_t cl_safe_span(const fl_session *s, uint64_t granted_ms);
/* The watcher frees p (malloc'ed) when fl_watch_join frees it: a wrapper's callback context
   (fl_revoke_watch). */
void cl_watch_adopt(fl_watcher *w, void *p);
/* FL_ESESSION marks the session lost; returns e. */
fl_err cl_session_err(fl_session *s, fl_err e);

/* What differs between holds (acquire.c): a lock, a shared lock, a permit, a leadership. */
struct cl_hold {
    const char *acquire; /* LOCK, SEM.ACQUIRE, ELECT.CAMPAIGN */
    const char *release; /* UNLOCK, SEM.RELEASE, ELECT.RESIGN (each also leaves the queue) */
    const char *what;    /* for messages: "lock", "semaphore", "leadership of" */
    const char *arg;     /* the argument after sid (SHARED, the limit, the value), or NULL */
    size_t arg_len;
    const char *opt, *opt_val; /* an option and its value after arg (PERMITS k), or NULL */
    /* LOCK ... VALUE v (value non-NULL) MAXHOLD ms (maxhold_ms > 0): fl_lock_with */
    const void *value;
    size_t value_len;
    uint64_t maxhold_ms;
};
/* ACQUIRE name sid [arg] [opt opt_val] [WAIT ms] REQ sid seq, once: FL_OK with *token, FL_EBUSY for
 * nil. */
fl_err cl_acquire_req(fl_session *s, const struct cl_hold *h, const char *name, uint64_t wait_ms,
                      uint64_t seq, uint64_t *token);
/* The whole wait: a time-out is FL_ETIMEOUT, an unknown outcome releases before returning. */
fl_err cl_acquire(fl_session *s, const struct cl_hold *h, const char *name, uint64_t wait_ms,
                  uint64_t *token);
/* RELEASE name sid REQ sid seq (with the caller's seq), and the same with a seq of its own. */
fl_err cl_release_seq(fl_session *s, const char *cmd, const char *name, uint64_t seq,
                      int64_t deadline);
fl_err cl_release(fl_session *s, const char *cmd, const char *name);

#endif
