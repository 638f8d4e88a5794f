/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net — the client port: the listener, the connections, and each connection's requests (slots)
 * kept in request order (conn.c; conn_guard.c refuses HTTP on it; conn_tls.c glues TLS to it,
 * tls.h is the engine).
 *
 * Owns (struct srv_net, in struct srv as `net`): the listener, the list of open connections,
 * their input buffers' total, the idle sweep's timer and the free list of finished slots. A
 * connection owns its slots, buffers and TLS state; it is freed when its handle closes.
 *
 * Requests (struct srv_slot) keep each connection's replies in request order:
 *   slot states: PENDING (proposal, barrier read) -> DONE (reply in out)
 *                PENDING -> PARKED (LOCK ... WAIT queued) -> PENDING -> DONE (woken)
 *   changed only by srv_slot_set_state (asserts the move). srv_slot_done() moves to DONE and
 *   flushes the connection's done prefix. A slot whose connection closed is orphaned
 *   (conn == NULL) and frees itself when it completes.
 */
#ifndef FENCELOCK_NET_H
#define FENCELOCK_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/buf.h"
#include "common/resp.h"
#include "server/cmd/quota.h"
#include "server/security/limits.h"
#include "server/watch/watch.h"

struct srv;
struct srv_cmd;
struct srv_tls;
struct tls_conn;
struct acl_user;

enum srv_slot_kind { SLOT_SYNC = 0, SLOT_WRITE = 1, SLOT_READ = 2 };

/* A request's progress (the header comment has the moves). */
enum srv_slot_state { SLOT_PENDING = 0, SLOT_PARKED = 1, SLOT_DONE = 2 };

struct srv_slot {
    struct srv_slot *next;  /* connection's queue */
    struct srv_slot *lnext; /* read batch or parked list */
    struct srv_conn *conn;  /* NULL once the connection closed */
    struct srv *srv;
    uint8_t kind;
    enum srv_slot_state state; /* srv_slot_set_state only */
    int proto;
    uint8_t op;              /* fsm op of a write */
    uint64_t wait_ms;        /* LOCK ... WAIT; SESSION.KEEPALIVE: the TTL to answer */
    uint64_t sid;            /* SESSION.KEEPALIVE: the session whose clearing checkpoint is out */
    struct srv_quota res;    /* quota reserved while the proposal is in flight */
    uint64_t started_ns;     /* for commit latency */
    uint64_t noleader_until; /* parked for a leader (cluster/noleader.c): clock_ms() deadline */
    size_t held;             /* out.len counted in conn->held_bytes while done and queued */
    size_t pkeylen;          /* parked: map key name+sid */
    char *pkey;
    const struct srv_cmd *cmd; /* read: the command to run after the barrier */
    struct buf args;           /* read: copied argument bytes */
    size_t argc;
    struct buf out;
};

#define SRV_FREE_SLOTS 256
#define SRV_SLOT_KEEP_BYTES 4096 /* a slot whose buffers grew past this is freed, not kept */

struct srv_conn {
    uv_tcp_t tcp;
    uv_write_t wreq; /* the one write in flight (while `writing`) */
    struct srv *srv;
    struct srv_conn *prev, *next;
    struct buf in, out, wbuf;
    struct resp_parser ps;
    struct srv_slot *head, *tail;
    size_t nslots;
    size_t reads_pending; /* reads waiting for a barrier: a write parsed after one waits */
    size_t held_bytes;    /* reply bytes in done slots not yet moved to `out` */
    uint64_t active_ms;   /* last read or completed write (--idle-timeout) */
    size_t in_counted;    /* in.cap as counted in srv.net.input_bytes */
    int proto;
    bool writing, closing, close_after_write, reading, processing;
    bool stale_reads;           /* READONLY: reads from local state, no barrier */
    struct watch_id watch_sent; /* the highest event id an XREAD reply on it carried */
    /* --acl-file: the authenticated user (into srv.auth.acl; auth.h), NULL = none yet; while
     * an AUTH is being verified nothing after it is parsed */
    const struct acl_user *user;
    bool auth_pending;
    struct tls_conn *tls; /* NULL on a plain port; freed with the connection */
    uint64_t id;
    /* CLIENT SETNAME / SETINFO (cmd_conn.c): "" until set */
    char name[129], lib_name[65], lib_ver[33];
    uint64_t created_ms, last_cmd_ms; /* clock_ms() at accept and at the latest command */
    /* limits.h: the peer's address, what this connection counts in srv.limits */
    char addr[SRV_ADDR_BUF];
    bool unauth_counted, hs_counted;
    size_t out_counted;
    /* The session last opened on this connection (0: none): a RESP3 push of that session's
     * revoke-requested / wait-notify goes to its parked XREAD or ELECT.OBSERVE (push.c) */
    uint64_t sid;
};

struct srv_net {
    uv_tcp_t listener;
    struct srv_tls *tls; /* NULL: the client port is plain text (conn_tls.c) */
    /* --http-tls-cert: the HTTP port's own pair (owned; conn_tls.c), else NULL (the HTTP port
     * then uses `tls` under --http-tls) */
    struct srv_tls *http_tls;
    struct srv_conn *conns;
    size_t nconns;
    size_t input_bytes;    /* sum of every connection's input buffer capacity */
    uv_timer_t idle_timer; /* --idle-timeout sweep (conn.c); initialised with the listener */
    /* Finished slots kept for the next command with their buffers' memory (at most
     * SRV_FREE_SLOTS): a command then allocates nothing for its slot. */
    struct srv_slot *free_slots;
    size_t n_free_slots;
    uint64_t next_conn_id;
};

/* conn.c: the listener, reading, framing, ordered replies */
int srv_listen(struct srv *s);
void srv_conn_close(struct srv_conn *c);
/* Reply bytes the connection holds that its client has not read yet. */
size_t srv_conn_unread(const struct srv_conn *c);
/* Send what is queued, then close (a final error was queued last). */
void srv_conn_close_after_write(struct srv_conn *c);
/* Queue a whole RESP3 push message (`>`) ahead of the replies still pending and send it: a
 * push goes between replies, never inside one. 0, or -1 if the connection was closed. */
int srv_conn_push(struct srv_conn *c, const struct buf *msg);
void srv_close_all_conns(struct srv *s);
void srv_slot_done(struct srv_slot *slot);
/* The one legal way to change a slot's state (asserts the move; header comment). */
void srv_slot_set_state(struct srv_slot *slot, enum srv_slot_state to);
/* A zeroed slot (from the server's free list when it has one), or NULL. */
struct srv_slot *srv_slot_new(struct srv *s);
/* A new PENDING slot appended to c's queue (replies leave in queue order), or NULL. */
struct srv_slot *srv_slot_append(struct srv_conn *c);
/* Done with a slot: kept on the free list (bounded) or freed. */
void srv_slot_free(struct srv_slot *slot);
/* Free the free list (server teardown). */
void srv_free_slots(struct srv *s);

/* conn_guard.c: HTTP sent to the client port (a browser driven by a web page) */
bool srv_conn_is_http(bool inline_cmd, size_t argc, const struct resp_arg *argv);
void srv_conn_close_http(struct srv_conn *c);

/* conn_tls.c: the client port's TLS (tls.h is the engine) */
/* Load the TLS files when configured: 0, or -1 (logged; the server must not start). */
int srv_tls_init(struct srv *s);
void srv_tls_free(struct srv *s);
/* SIGHUP: reload the certificate, key and CA (a bad new set keeps the old one). */
void srv_tls_reload(struct srv *s);
/* Give a new connection its TLS state: 0, or -1 (out of memory). */
int srv_conn_tls_start(struct srv_conn *c);
/* n bytes arrived in s->net.tls->raw: handshake, decrypt into c->in. false if c was closed. */
bool srv_conn_tls_read(struct srv_conn *c, size_t n);
/* The connection has not finished its handshake within --tls-handshake-timeout. */
bool srv_conn_tls_overdue(struct srv_conn *c, uint64_t now);

#endif
