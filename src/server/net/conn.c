/* SPDX-License-Identifier: Apache-2.0 */
/*
 * conn.c — client connections: reading, RESP framing, request slots, ordered replies.
 *
 * A connection writes replies in request order. Commands answered at once while nothing is
 * queued write straight into `out`; everything else takes a slot in the connection's queue and
 * the done prefix of the queue is moved into `out` (srv_slot_done). One uv_write is in flight at
 * a time (`wbuf`, `wreq`: libuv calls it back, cancelled if need be, before the handle's close
 * callback frees the connection); replies produced meanwhile gather in `out`.
 * Reading pauses while `max_pending` slots are queued and resumes as they drain, so one client
 * cannot queue unbounded work. A write parsed behind a read still waiting for its barrier waits
 * (unparsed) until that read is answered, so a pipelined read never sees a write the same
 * connection sent after it; reads and local commands behind it go on, so a run of pipelined
 * reads shares one barrier.
 *
 * Memory bounds (docs/server.md "Limits"), all per connection unless said otherwise:
 *   output  = out + wbuf + held_bytes (replies done but queued behind an unfinished one).
 *           Parsing and reading pause while output >= max_output_soft and resume when a write
 *           drains it; output > max_output (immediate or deferred reply) closes the
 *           connection at once (conn_output_check): it holds at most max_output + one reply.
 *   input   = in: reading pauses at max_query_buffer bytes; an unfinished command that big is
 *           a protocol error. srv.net.input_bytes (sum of every in.cap) over max_input_total
 *           closes the connection holding the largest input buffer (input_total_check).
 * Buffers grown past CONN_KEEP_BYTES are freed once empty, so a burst does not stay resident.
 * Idle: a connection without a read or a completed write for --idle-timeout ms is closed by a
 * sweep (idle_cb), unless it has an unfinished request (a parked LOCK ... WAIT is legitimately
 * silent for as long as its WAIT).
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

#include "common/addr.h"
#include "common/clock.h"
#include "common/list.h"
#include "common/proto.h"
#include "server/cmd/cmd.h"
#include "server/net/fdlimit.h"
#include "server/server.h"

#define CONN_READ_CHUNK (64 * 1024)
#define CONN_KEEP_BYTES (256 * 1024)
/* Longest inline (telnet-style) command line, as in Redis (PROTO_INLINE_MAX_SIZE). */
#define CONN_INLINE_MAX (64 * 1024)
/* listen(2) backlog: Redis's default tcp-backlog (the kernel caps it at somaxconn). */
#define CONN_LISTEN_BACKLOG 511

static void conn_write(struct srv_conn *c);
static void protocol_error(struct srv_conn *c, const char *msg);

/* Reply bytes this connection holds that the client has not read yet. */
static size_t conn_out_bytes(const struct srv_conn *c)
{
    return c->out.len + c->wbuf.len + c->held_bytes;
}

size_t srv_conn_unread(const struct srv_conn *c)
{
    return conn_out_bytes(c);
}

/* Keep srv.net.input_bytes equal to the sum of the connections' input buffer capacities. */
static void input_account(struct srv_conn *c)
{
    c->srv->net.input_bytes -= c->in_counted;
    c->in_counted = c->closing ? 0 : c->in.cap;
    c->srv->net.input_bytes += c->in_counted;
}

/* An empty buffer that grew past CONN_KEEP_BYTES gives its memory back. */
static void buf_trim(struct buf *b)
{
    if (b->len == 0 && b->cap > CONN_KEEP_BYTES)
        buf_free(b);
}

/* Over --max-output (--max-output-preauth before AUTH): the client does not read what it asked
 * for. Close without a reply (it would queue behind the output that is too large already).
 * true if closed. Its bytes count in --max-output-total (limits.c). */
static bool conn_output_check(struct srv_conn *c)
{
    size_t n = conn_out_bytes(c), max = srv_limits_output_max(c);
    /* counted in the total first: past --max-output-total this may close c (the largest) */
    if (!c->closing)
        srv_limits_output(c, n);
    if (!c->closing && buf_failed(&c->out)) { /* a finished reply was lost on its way in */
        LOGW(&c->srv->log, "client %llu closed: out of memory queueing a reply",
             (unsigned long long)c->id);
        srv_conn_close(c);
        return true;
    }
    if (c->closing)
        return true;
    if (n <= max)
        return false;
    c->srv->m.output_limit_closes++;
    LOGW(&c->srv->log, "client %llu closed: %zu reply bytes unread, over --max-output%s %zu",
         (unsigned long long)c->id, n, max < c->srv->cfg.max_output ? "-preauth" : "", max);
    srv_conn_close(c);
    return true;
}

static void conn_list_remove(struct srv *s, struct srv_conn *c)
{
    DLIST_UNLINK(s->net.conns, c);
    s->net.nconns--;
}

/* Slots on the free list are poisoned under ASan, so a use after "free" is still caught. */
#if defined(__SANITIZE_ADDRESS__)
static void slot_poison(struct srv_slot *slot, bool on)
{
    void (*f)(void const volatile *, size_t) =
        on ? __asan_poison_memory_region : __asan_unpoison_memory_region;
    if (!on) /* the slot is readable while its buffers' pointers are read */
        f(slot, sizeof(*slot));
    if (slot->out.p)
        f(slot->out.p, slot->out.cap);
    if (slot->args.p)
        f(slot->args.p, slot->args.cap);
    if (on)
        f(slot, sizeof(*slot));
}
#else
static void slot_poison(struct srv_slot *slot, bool on)
{
    (void)slot;
    (void)on;
}
#endif

void srv_slot_free(struct srv_slot *slot)
{
    struct srv *s = slot->srv;
    free(slot->pkey);
    slot->pkey = NULL;
    if (s && s->net.n_free_slots < SRV_FREE_SLOTS &&
        slot->out.cap + slot->args.cap <= SRV_SLOT_KEEP_BYTES) {
        slot->next = s->net.free_slots;
        s->net.free_slots = slot;
        s->net.n_free_slots++;
        slot_poison(slot, true);
        return;
    }
    buf_free(&slot->out);
    buf_free(&slot->args);
    free(slot);
}

struct srv_slot *srv_slot_new(struct srv *s)
{
    struct srv_slot *slot = s->net.free_slots;
    if (!slot)
        return calloc(1, sizeof(*slot));
    slot_poison(slot, false);
    s->net.free_slots = slot->next;
    s->net.n_free_slots--;
    struct buf out = slot->out, args = slot->args;
    memset(slot, 0, sizeof(*slot));
    slot->out = out;
    slot->args = args;
    buf_reset(&slot->out); /* also clears a failure the slot's last use left */
    buf_reset(&slot->args);
    return slot;
}

/* Append a fresh slot to c's queue: the one place a queue grows (commands, protocol errors). */
struct srv_slot *srv_slot_append(struct srv_conn *c)
{
    struct srv_slot *slot = srv_slot_new(c->srv);
    if (!slot)
        return NULL;
    slot->conn = c;
    slot->srv = c->srv;
    slot->proto = c->proto;
    if (c->tail)
        c->tail->next = slot;
    else
        c->head = slot;
    c->tail = slot;
    c->nslots++;
    return slot;
}

static bool slot_move_legal(enum srv_slot_state from, enum srv_slot_state to)
{
    switch (from) {
    case SLOT_PENDING:
        return to == SLOT_PARKED || to == SLOT_DONE;
    case SLOT_PARKED:
        return to == SLOT_PENDING;
    case SLOT_DONE:
        return false;
    }
    return false;
}

void srv_slot_set_state(struct srv_slot *slot, enum srv_slot_state to)
{
    assert(slot_move_legal(slot->state, to));
    if (to == SLOT_PARKED || slot->state == SLOT_PARKED)
        srv_push_slot_parked(slot, to == SLOT_PARKED); /* the push index (watch/push.c) */
    slot->state = to;
}

void srv_free_slots(struct srv *s)
{
    while (s->net.free_slots) {
        struct srv_slot *slot = s->net.free_slots;
        slot_poison(slot, false);
        s->net.free_slots = slot->next;
        slot->srv = NULL; /* freed for good */
        srv_slot_free(slot);
    }
    s->net.n_free_slots = 0;
}

static void conn_free_cb(uv_handle_t *h)
{
    struct srv_conn *c = h->data;
    buf_free(&c->in);
    buf_free(&c->out);
    buf_free(&c->wbuf);
    resp_parser_free(&c->ps);
    tls_conn_free(c->tls);
    free(c);
}

/* Detach the connection from its unfinished slots: they complete later and free themselves. */
void srv_conn_close(struct srv_conn *c)
{
    if (c->closing)
        return;
    c->closing = true;
    srv_push_conn_closed(c); /* while its slots still name it */
    struct srv_slot *slot = c->head;
    while (slot) {
        struct srv_slot *next = slot->next;
        slot->next = NULL;
        if (slot->state == SLOT_DONE)
            srv_slot_free(slot);
        else
            slot->conn = NULL;
        slot = next;
    }
    c->head = c->tail = NULL;
    c->nslots = 0;
    c->held_bytes = 0;
    input_account(c); /* closing: its input no longer counts */
    srv_limits_conn_gone(c);
    conn_list_remove(c->srv, c);
    uv_close((uv_handle_t *)&c->tcp, conn_free_cb);
}

void srv_close_all_conns(struct srv *s)
{
    while (s->net.conns)
        srv_conn_close(s->net.conns);
    if (s->listening && !uv_is_closing((uv_handle_t *)&s->net.idle_timer))
        uv_close((uv_handle_t *)&s->net.idle_timer, NULL);
    srv_limits_stop(s);
}

/* A connection waits for the server while any request of it is unfinished. */
static bool conn_waits_for_server(const struct srv_conn *c)
{
    for (const struct srv_slot *slot = c->head; slot; slot = slot->next)
        if (slot->state != SLOT_DONE)
            return true;
    return false;
}

static void idle_cb(uv_timer_t *t)
{
    struct srv *s = t->data;
    uint64_t now = clock_ms();
    struct srv_conn *c = s->net.conns;
    while (c) {
        struct srv_conn *next = c->next;
        if (!c->closing && c->tls && srv_conn_tls_overdue(c, now)) {
            srv_conn_close(c);
        } else if (!c->closing && s->cfg.idle_timeout &&
                   now - c->active_ms >= s->cfg.idle_timeout && !conn_waits_for_server(c)) {
            s->m.idle_closes++;
            LOGD(&s->log, "client %llu: idle for %llu ms, closed", (unsigned long long)c->id,
                 (unsigned long long)(now - c->active_ms));
            srv_conn_close(c);
        }
        c = next;
    }
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    struct srv_conn *c = h->data;
    (void)suggested;
    if (c->tls) { /* ciphertext: into the shared raw buffer, decrypted into `in` at once */
        *b = uv_buf_init(c->srv->net.tls->raw, sizeof c->srv->net.tls->raw);
        return;
    }
    if (buf_reserve(&c->in, CONN_READ_CHUNK)) {
        b->base = NULL;
        b->len = 0;
        return;
    }
    input_account(c);
    b->base = c->in.p + c->in.len;
    b->len = c->in.cap - c->in.len;
}

static void process_input(struct srv_conn *c);

/* Over --max-input-total: the connection holding the largest input buffer gets a protocol
 * error and loses its input at once (others keep working). */
static void input_total_check(struct srv *s)
{
    while (s->net.input_bytes > s->cfg.max_input_total) {
        struct srv_conn *big = NULL;
        for (struct srv_conn *x = s->net.conns; x; x = x->next)
            if (!x->close_after_write && (!big || x->in_counted > big->in_counted))
                big = x;
        if (!big || big->in_counted == 0)
            return;
        char msg[160];
        snprintf(msg, sizeof(msg),
                 "Protocol error: input buffers of all clients are over --max-input-total "
                 "(%zu bytes); this client holds %zu",
                 s->cfg.max_input_total, big->in_counted);
        s->m.input_total_closes++;
        LOGW(&s->log, "client %llu: %s", (unsigned long long)big->id, msg);
        protocol_error(big, msg);
    }
}

static void read_cb(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
    struct srv_conn *c = st->data;
    (void)b;
    if (n < 0) {
        srv_conn_close(c);
        return;
    }
    struct srv *s = c->srv;
    if (!c->tls)
        c->in.len += (size_t)n;
    else if (!srv_conn_tls_read(c, (size_t)n))
        return;
    c->active_ms = clock_ms();
    process_input(c);
    input_total_check(s);
}

static void update_reading(struct srv_conn *c)
{
    const struct srv_config *cfg = &c->srv->cfg;
    bool out_full = conn_out_bytes(c) >= srv_limits_output_soft(c);
    bool want = !c->closing && !c->close_after_write && c->nslots < cfg->max_pending && !out_full &&
                c->in.len < cfg->max_query_buffer;
    if (want && !c->reading) {
        if (uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb) == 0)
            c->reading = true;
    } else if (!want && c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = false;
        if (out_full)
            c->srv->m.output_pauses++;
    }
}

static void write_cb(uv_write_t *req, int status)
{
    struct srv_conn *c = req->data;
    c->writing = false;
    c->wbuf.len = 0;
    if (c->closing)
        return;
    srv_limits_output(c, conn_out_bytes(c));
    buf_trim(&c->wbuf);
    buf_trim(&c->out);
    if (status < 0) {
        srv_conn_close(c);
        return;
    }
    c->active_ms = clock_ms();
    conn_write(c);
    if (!c->closing) {
        update_reading(c);
        if (c->in.len && c->reading)
            process_input(c); /* input parked while paused */
    }
}

static void conn_write(struct srv_conn *c)
{
    if (c->closing || c->writing)
        return;
    if (c->tls) { /* TLS: `out` is encrypted into wbuf (with any handshake bytes) */
        if (tls_conn_seal(c->tls, &c->out, &c->wbuf)) {
            srv_conn_close(c);
            return;
        }
    } else if (c->out.len) {
        struct buf t = c->wbuf;
        c->wbuf = c->out;
        c->out = t;
        c->out.len = 0;
    }
    if (c->wbuf.len == 0) {
        /* close only once every reply queued before the error has been sent */
        if (c->close_after_write && !c->head && !c->out.len)
            srv_conn_close(c);
        return;
    }
    c->wreq.data = c;
    uv_buf_t ub = uv_buf_init(c->wbuf.p, (unsigned)c->wbuf.len);
    if (uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &ub, 1, write_cb)) {
        srv_conn_close(c);
        return;
    }
    c->writing = true;
}

/* Move the done prefix of the queue into the output and send it. */
static void flush_slots(struct srv_conn *c)
{
    while (c->head && c->head->state == SLOT_DONE) {
        struct srv_slot *slot = c->head;
        c->head = slot->next;
        if (!c->head)
            c->tail = NULL;
        c->nslots--;
        c->held_bytes -= slot->held;
        buf_append(&c->out, slot->out.p, slot->out.len);
        srv_slot_free(slot);
    }
    if (conn_output_check(c))
        return;
    conn_write(c);
    if (!c->closing)
        update_reading(c);
}

void srv_slot_done(struct srv_slot *slot)
{
    /* A writer that failed on the way leaves one -ERR out of memory instead of a partial reply;
     * if even that does not fit, the connection cannot keep its reply order and goes. */
    if (resp_w_finish(&slot->out, 0) < 0 && slot->conn)
        srv_conn_close(slot->conn);
    srv_cmd_count_reply(slot->srv, slot->cmd, &slot->out, 0);
    srv_slot_set_state(slot, SLOT_DONE); /* a parked slot is unparked first */
    if (!slot->conn) {
        srv_slot_free(slot); /* orphaned: nobody reads the reply */
        return;
    }
    struct srv_conn *c = slot->conn;
    bool resume = false;
    slot->held = slot->out.len;
    c->held_bytes += slot->held;
    if (slot->kind == SLOT_READ && c->reads_pending) {
        c->reads_pending--;
        resume = c->reads_pending == 0;
    }
    if (c->head == slot || resume) {
        flush_slots(c);
        /* input left unparsed while the queue was full; never re-entered from inside a parse */
        if (!c->closing && !c->processing && c->in.len && c->reading)
            process_input(c);
    } else {
        conn_output_check(c); /* a reply held behind an unfinished request counts too */
    }
}

int srv_conn_push(struct srv_conn *c, const struct buf *msg)
{
    if (c->closing)
        return -1;
    /* `out` holds only whole replies (flush_slots moves finished slots), so the push lands
     * between two of them; it counts in --max-output as a reply does */
    buf_append(&c->out, msg->p, msg->len);
    if (conn_output_check(c))
        return -1;
    conn_write(c);
    return c->closing ? -1 : 0;
}

void srv_conn_close_after_write(struct srv_conn *c)
{
    c->close_after_write = true;
    update_reading(c);
}

static void protocol_error(struct srv_conn *c, const char *msg)
{
    c->srv->m.protocol_errors++;
    LOGD(&c->srv->log, "client %llu: %s", (unsigned long long)c->id, msg);
    if (!c->tail || c->tail->state == SLOT_DONE) {
        resp_w_errorf(c->tail ? &c->tail->out : &c->out, PROTO_ERR " %s", msg);
    } else {
        /* the error must follow the replies still pending: give it a slot of its own */
        struct srv_slot *e = srv_slot_append(c);
        if (e) {
            srv_slot_set_state(e, SLOT_DONE);
            resp_w_errorf(&e->out, PROTO_ERR " %s", msg);
        }
    }
    c->close_after_write = true;
    c->in.len = 0;
    buf_free(&c->in); /* nothing more is parsed: give a large buffer back at once */
    input_account(c);
    update_reading(c);
    flush_slots(c);
}

/* Parse and run every complete command in the input buffer. */
static void process_input(struct srv_conn *c)
{
    struct srv *s = c->srv;
    size_t off = 0;
    char err[128];
    bool incomplete = false;
    c->processing = true;
    /* A write parsed after a read still waiting for its barrier would be ordered before that
     * barrier and show through, so it waits (unparsed) until the read is answered; reads and
     * local commands go on. Parsing also waits while the client has not read max_output_soft
     * bytes of replies. */
    while (!c->closing && !c->close_after_write && !c->auth_pending && off < c->in.len &&
           c->nslots < s->cfg.max_pending && conn_out_bytes(c) < srv_limits_output_soft(c)) {
        size_t used = 0, argc = 0;
        struct resp_arg *argv = NULL;
        int rc = resp_parse(&c->ps, c->in.p + off, c->in.len - off, &used, &argc, &argv, err,
                            sizeof(err));
        if (rc == RESP_INCOMPLETE) {
            incomplete = true;
            break;
        }
        if (rc == RESP_ERROR) {
            c->processing = false;
            protocol_error(c, err);
            return;
        }
        /* A read in flight is answered at the state after the barrier it waits for; a write
         * proposed now would be ordered before that barrier and show through. So a write
         * behind a read stays in the input (parsed again later) until the read is answered:
         * each connection sees its own order. */
        if (argc > 0 && srv_conn_is_http(c->in.p[off] != '*', argc, argv)) {
            srv_conn_close_http(c);
            break;
        }
        if (argc > 0 && c->reads_pending && srv_cmd_is_write(&argv[0]))
            break;
        off += used;
        size_t start = c->out.len; /* an immediate reply is written straight into out */
        if (argc > 0)
            srv_dispatch(s, c, argc, argv);
        if (!c->closing && resp_w_finish(&c->out, start) < 0)
            srv_conn_close(c);
        conn_output_check(c); /* an immediate reply counts as soon as it is written */
    }
    c->processing = false;
    if (c->closing)
        return;
    if (off)
        buf_consume(&c->in, off);
    if (incomplete && c->in.len >= s->cfg.max_query_buffer) {
        snprintf(err, sizeof(err),
                 "Protocol error: unfinished command of %zu bytes, over --max-query-buffer %zu",
                 c->in.len, s->cfg.max_query_buffer);
        s->m.query_limit_closes++;
        protocol_error(c, err);
        return;
    }
    buf_trim(&c->in);
    input_account(c);
    conn_write(c);
    if (!c->closing)
        update_reading(c);
}

/* At most one fd-limit log line a second: a client storm must not become a log storm. */
static bool fd_log_due(struct srv *s)
{
    uint64_t now = clock_ms();
    if (s->m.fd_logged_ms && now - s->m.fd_logged_ms < 1000)
        return false;
    s->m.fd_logged_ms = now;
    return true;
}

/* Fewer than FDLIMIT_LOW_WATER fds left (the limit was lowered at run time, or something else
 * holds them): answer like --max-clients, but write and close at once so the fd is free before
 * libuv's next accept(); one that reached EMFILE would close the waiting clients unanswered. */
static void refuse_fd_low(struct srv *s, struct srv_conn *c)
{
    static const char msg[] = "-" PROTO_ERR " max number of clients reached\r\n";
    uv_buf_t b = uv_buf_init((char *)msg, sizeof(msg) - 1);
    if (!s->net.tls) /* a TLS client could not read it before its handshake */
        (void)uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    uv_close((uv_handle_t *)&c->tcp, conn_free_cb);
    s->m.fd_limit_refusals++;
    if (fd_log_due(s))
        LOGW(&s->log,
             "open-file limit nearly reached: client refused (%llu so far); raise ulimit -n "
             "or lower --max-clients",
             (unsigned long long)s->m.fd_limit_refusals);
}

static void on_connection(uv_stream_t *server, int status)
{
    struct srv *s = server->data;
    /* accept() failed and libuv's spare-fd trick did not absorb it (EMFILE with no spare fd,
     * ENOBUFS...): the waiting client is lost; count it and say so, once a second at most. */
    if (status < 0) {
        s->m.accept_errors++;
        if (fd_log_due(s))
            LOGW(&s->log, "client accept failed: %s (%llu so far); see --max-clients and ulimit -n",
                 uv_strerror(status), (unsigned long long)s->m.accept_errors);
        return;
    }
    struct srv_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return;
    uv_tcp_init(s->loop, &c->tcp);
    c->tcp.data = c;
    c->srv = s;
    if (uv_accept(server, (uv_stream_t *)&c->tcp)) {
        uv_close((uv_handle_t *)&c->tcp, conn_free_cb);
        return;
    }
    uv_os_fd_t fd;
    if (!uv_fileno((uv_handle_t *)&c->tcp, &fd) && fdlimit_low(fd)) {
        refuse_fd_low(s, c);
        return;
    }
    struct resp_limits lim = {
        .max_bulk = s->cfg.max_bulk, .max_args = s->cfg.max_args, .max_inline = CONN_INLINE_MAX};
    resp_parser_init(&c->ps, &lim);
    c->proto = 2;
    c->id = ++s->net.next_conn_id;
    c->created_ms = c->last_cmd_ms = c->active_ms = clock_ms();
    DLIST_PUSH(s->net.conns, c);
    s->net.nconns++;
    s->m.connections_total++;
    uv_tcp_nodelay(&c->tcp, 1);
    if (s->net.tls && (s->net.nconns > s->cfg.max_clients || s->stopping || srv_conn_tls_start(c) ||
                       srv_limits_accept(c))) {
        s->m.connections_rejected++; /* no handshake yet to carry an error reply */
        srv_conn_close(c);
        return;
    }
    bool over = s->net.nconns > s->cfg.max_clients || s->stopping;
    if (over || (!s->net.tls && srv_limits_accept(c))) {
        s->m.connections_rejected++;
        resp_w_error(&c->out, over ? PROTO_ERR " max number of clients reached"
                                   : PROTO_ERR " max number of unauthenticated clients reached");
        c->close_after_write = true;
        conn_write(c);
        return;
    }
    update_reading(c);
}

int srv_listen(struct srv *s)
{
    struct sockaddr_storage addr;
    int rc;
    if (addr_ip_sockaddr(s->cfg.listen_host, s->cfg.listen_port, &addr)) {
        LOGE(&s->log, "bad listen address %s: not an IP address", s->cfg.listen_host);
        return -1;
    }
    uv_tcp_init(s->loop, &s->net.listener);
    s->net.listener.data = s;
    uv_timer_init(s->loop, &s->net.idle_timer);
    s->net.idle_timer.data = s;
    s->listening = true; /* initialised: srv_stop must close them */
    srv_limits_start(s);
    uint64_t sweep = s->cfg.idle_timeout; /* also the TLS handshake deadline's sweep */
    if (s->net.tls && (!sweep || s->net.tls->cfg.handshake_ms < sweep))
        sweep = s->net.tls->cfg.handshake_ms;
    if (sweep) {
        uint64_t every = sweep / 4;
        every = every < 10 ? 10 : every > 1000 ? 1000 : every;
        uv_timer_start(&s->net.idle_timer, idle_cb, every, every);
        uv_unref((uv_handle_t *)&s->net.idle_timer);
    }
    rc = uv_tcp_bind(&s->net.listener, (struct sockaddr *)&addr, 0);
    if (!rc)
        rc = uv_listen((uv_stream_t *)&s->net.listener, CONN_LISTEN_BACKLOG, on_connection);
    if (rc) {
        LOGE(&s->log, "listen on %s:%d: %s", s->cfg.listen_host, s->cfg.listen_port,
             uv_strerror(rc));
        return -1;
    }
    return 0;
}
