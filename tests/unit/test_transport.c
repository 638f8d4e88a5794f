/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_transport.c — the validating transport's own limits, on a real listener over libuv: an
 * inbound connection that does not complete its handshake within the deadline is closed and
 * counted (handshake_timeout); a link whose buffer would push the bytes buffered over all links
 * past the cap is closed and counted (buffer_cap), while the link already within the cap keeps
 * going; and the cap arithmetic (pure) lets two of the largest legitimate messages through.
 *
 * The test plays both ends: a blocking client socket writes what a (hostile) peer would, and
 * a stand-in for libraft takes the handed-over stream the way libraft does (uv_read_start, and
 * closing it on EOF). With peer TLS (certificates made by the openssl command in a temp dir),
 * a second transport in the same loop dials the first: the bytes its libraft stand-in writes
 * arrive unchanged, and a plain-text peer is dropped as tls.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <openssl/err.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>
#include <uv.h>

#include "raft/transport_internal.h"
#include "test.h"

#define OWN_ID 1
#define PEER_ID 2
#define MAX_ACCEPTED 8
#define STEP_MS 5
#define WAIT_MS 5000

struct dialer;

struct fix {
    uv_loop_t loop;
    struct raft_uv_transport t;
    struct rn_tp_policy policy;
    struct logger log;
    char address[32];
    uv_stream_t *accepted[MAX_ACCEPTED];
    int n_accepted;
    bool closed;
    bool (*until)(struct fix *f);
    uv_timer_t tick;
    uint64_t deadline;
    uint8_t got[256]; /* what libraft's stand-in read from handed-over streams (TLS test) */
    size_t got_len;
    struct dialer *dialer; /* the TLS test's second transport */
    void *user;            /* a test's own state */
};

static uint64_t term_zero(void *arg)
{
    (void)arg;
    return 0;
}

static struct tp *tp_of(struct fix *f)
{
    return f->t.impl;
}

static uint64_t rejected(struct fix *f, enum rn_wire_reason r)
{
    return rn_transport_rejected(&f->t, r);
}

/* ---- libraft's side of a handed-over stream ---- */

static void raft_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    static char scratch[1 << 16];
    (void)h;
    (void)suggested;
    *b = uv_buf_init(scratch, sizeof(scratch));
}

static void free_stream(uv_handle_t *h)
{
    raft_free(h);
}

static void raft_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
    struct fix *f = s->data;
    if (nread > 0 && f && f->got_len + (size_t)nread <= sizeof(f->got)) {
        memcpy(f->got + f->got_len, b->base, (size_t)nread);
        f->got_len += (size_t)nread;
    }
    if (nread < 0 && !uv_is_closing((uv_handle_t *)s))
        uv_close((uv_handle_t *)s, free_stream); /* what libraft does on EOF */
}

static void accept_cb(struct raft_uv_transport *t, raft_id id, const char *address,
                      uv_stream_t *stream)
{
    struct fix *f = t->data;
    (void)id;
    (void)address;
    if (f->n_accepted == MAX_ACCEPTED) {
        uv_close((uv_handle_t *)stream, free_stream);
        return;
    }
    f->accepted[f->n_accepted++] = stream;
    stream->data = f;
    uv_read_start(stream, raft_alloc_cb, raft_read_cb);
}

/* ---- running the loop ---- */

static void tick_cb(uv_timer_t *t)
{
    struct fix *f = t->data;
    if ((f->until && f->until(f)) || uv_now(&f->loop) >= f->deadline)
        uv_stop(&f->loop);
}

/* Run the loop until `until` holds (true) or `ms` passed (false). until NULL: just run. */
static bool run_until(struct fix *f, bool (*until)(struct fix *f), unsigned ms)
{
    f->until = until;
    uv_update_time(&f->loop);
    f->deadline = uv_now(&f->loop) + ms;
    uv_timer_start(&f->tick, tick_cb, STEP_MS, STEP_MS);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    uv_timer_stop(&f->tick);
    return until && until(f);
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t n = sizeof(sa);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
        getsockname(fd, (struct sockaddr *)&sa, &n)) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return ntohs(sa.sin_port);
}

static int fix_open(struct fix *f, unsigned handshake_ms, uint64_t buffer_cap)
{
    memset(f, 0, sizeof(*f));
    int port = free_port();
    if (port < 0 || uv_loop_init(&f->loop))
        return -1;
    uv_timer_init(&f->loop, &f->tick);
    f->tick.data = f;
    f->log = (struct logger){.level = LOG_ERROR, .id = OWN_ID};
    f->policy = (struct rn_tp_policy){.arg = f, .term = term_zero};
    snprintf(f->address, sizeof(f->address), "127.0.0.1:%d", port);
    f->t.version = 1;
    f->t.data = f;
    if (rn_transport_init(&f->t, &f->loop, &f->policy, &f->log))
        return -1;
    rn_transport_set_limits(&f->t, handshake_ms, buffer_cap);
    if (f->t.init(&f->t, OWN_ID, f->address) || f->t.listen(&f->t, accept_cb))
        return -1;
    return 0;
}

static void closed_cb(struct raft_uv_transport *t)
{
    ((struct fix *)t->data)->closed = true;
}

static bool is_closed(struct fix *f)
{
    return f->closed;
}

/* Close the transport and the streams libraft's stand-in still has; free everything. */
static void fix_close(struct fix *f)
{
    for (int i = 0; i < f->n_accepted; i++)
        if (!uv_is_closing((uv_handle_t *)f->accepted[i]))
            uv_close((uv_handle_t *)f->accepted[i], free_stream);
    f->t.close(&f->t, closed_cb);
    run_until(f, is_closed, WAIT_MS);
    rn_transport_free(&f->t);
    uv_close((uv_handle_t *)&f->tick, NULL);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    uv_loop_close(&f->loop);
}

/* ---- the peer's side ---- */

static int dial(struct fix *f)
{
    const char *colon = strrchr(f->address, ':');
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)atoi(colon + 1)),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
        close(fd);
        return -1;
    }
    return fd;
}

static size_t put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
    return 8;
}

/* libraft's handshake for PEER_ID with the address "x:1". */
static size_t handshake(uint8_t *p)
{
    size_t n = put64(p, RN_WIRE_HANDSHAKE_PROTOCOL);
    n += put64(p + n, PEER_ID);
    n += put64(p + n, 8);
    memcpy(p + n, "x:1\0\0\0\0\0", 8);
    return n + 8;
}

/* The preamble and header of an AppendEntries with one entry of `data` bytes (not included). */
static size_t append_header(uint8_t *p, uint32_t data)
{
    size_t n = put64(p, RN_WIRE_M_APPEND);
    n += put64(p + n, 48 + 16);
    for (int i = 0; i < 4; i++)
        n += put64(p + n, i == 0); /* term 1, prev index, prev term, commit */
    n += put64(p + n, 1);          /* one entry */
    n += put64(p + n, 1);          /* its term */
    p[n++] = RN_WIRE_E_COMMAND;
    p[n++] = 0;
    p[n++] = 0;
    p[n++] = 0;
    for (int i = 0; i < 4; i++)
        p[n++] = (uint8_t)(data >> (8 * i));
    return n + put64(p + n, 0);
}

static bool send_all(int fd, const void *p, size_t n)
{
    return send(fd, p, n, MSG_NOSIGNAL) == (ssize_t)n;
}

/* 1: the transport closed the connection (EOF or reset); 0: still open. */
static int peer_closed(int fd)
{
    char c;
    ssize_t r = recv(fd, &c, 1, MSG_DONTWAIT);
    return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* ---- tests ---- */

TEST(test_budget_lets_two_largest_messages_through_and_not_a_third)
{
    uint64_t one = rn_tp_charge(RN_TP_LINK_MAX);
    CHECK(rn_tp_budget_ok(0, 0, RN_TP_LINK_MAX, RN_TP_BUFFER_CAP));
    CHECK(rn_tp_budget_ok(one, 0, RN_TP_LINK_MAX, RN_TP_BUFFER_CAP));
    CHECK(!rn_tp_budget_ok(2 * one, 0, RN_TP_LINK_MAX, RN_TP_BUFFER_CAP));
    /* A buffer of a largest AppendEntries being read is within what one link can hold. */
    CHECK(RN_WIRE_MAX_FRAME + RN_TP_READ_CHUNK <= RN_TP_LINK_MAX);
}

TEST(test_budget_never_counts_small_buffers_and_always_lets_one_shrink)
{
    CHECK_EQ_U64(rn_tp_charge(RN_TP_LINK_FREE), 0);
    CHECK_EQ_U64(rn_tp_charge(RN_TP_LINK_FREE + 1), 1);
    /* Even with the cap used up, a link may read small frames and give memory back. */
    CHECK(rn_tp_budget_ok(RN_TP_BUFFER_CAP, 0, RN_TP_LINK_FREE, RN_TP_BUFFER_CAP));
    CHECK(rn_tp_budget_ok(RN_TP_BUFFER_CAP, RN_TP_LINK_MAX, RN_TP_LINK_FREE, RN_TP_BUFFER_CAP));
    CHECK(
        !rn_tp_budget_ok(RN_TP_BUFFER_CAP, RN_TP_LINK_FREE, RN_TP_LINK_FREE + 1, RN_TP_BUFFER_CAP));
}

static bool one_timeout(struct fix *f)
{
    return rejected(f, RN_WIRE_HANDSHAKE_TIMEOUT) >= 1;
}

TEST(test_handshake_not_done_in_time_is_closed_and_counted)
{
    struct fix f;
    CHECK(fix_open(&f, 100, RN_TP_BUFFER_CAP) == 0);
    uint8_t hs[64];
    size_t n = handshake(hs);
    int slow = dial(&f), quick = dial(&f);
    bool ok = slow >= 0 && quick >= 0 && send_all(slow, hs, n / 2) && send_all(quick, hs, n);
    bool timed_out = ok && run_until(&f, one_timeout, WAIT_MS);
    run_until(&f, NULL, 300); /* well past the deadline for the one that completed */
    int slow_closed = slow >= 0 && peer_closed(slow),
        quick_closed = quick >= 0 && peer_closed(quick);
    uint64_t timeouts = rejected(&f, RN_WIRE_HANDSHAKE_TIMEOUT);
    int accepted = f.n_accepted;
    if (slow >= 0)
        close(slow);
    if (quick >= 0)
        close(quick);
    fix_close(&f);
    CHECK(ok);
    CHECK(timed_out);
    CHECK(slow_closed);
    CHECK(!quick_closed);
    CHECK_EQ_U64(timeouts, 1);
    CHECK_EQ_U64(accepted, 1);
}

#define CAP_TEST (512u << 10)   /* the cap in this test */
#define FRAME_DATA (400u << 10) /* each link's AppendEntries data: one fits the cap, two do not */
#define TRICKLE 4096

static bool one_over_cap(struct fix *f)
{
    return rejected(f, RN_WIRE_BUFFER_CAP) >= 1;
}

static bool something_buffered(struct fix *f)
{
    return tp_of(f)->buffered > 0;
}

static bool nothing_buffered(struct fix *f)
{
    return tp_of(f)->links == NULL && tp_of(f)->buffered == 0;
}

/* Half a large frame on a link: the header, then (once the transport read it and knows what
 * to wait for) a trickle that makes it grow its buffer for the whole frame. */
static bool start_large_frame(struct fix *f, int fd, bool (*until)(struct fix *))
{
    static uint8_t msg[256], trickle[TRICKLE];
    size_t n = handshake(msg);
    n += append_header(msg + n, FRAME_DATA);
    if (!send_all(fd, msg, n))
        return false;
    run_until(f, NULL, 50);
    return send_all(fd, trickle, sizeof(trickle)) && run_until(f, until, WAIT_MS);
}

TEST(test_buffer_cap_closes_the_link_that_would_pass_it)
{
    struct fix f;
    CHECK(fix_open(&f, 5000, CAP_TEST) == 0);
    int a = dial(&f), b = dial(&f);
    bool a_ok = a >= 0 && start_large_frame(&f, a, something_buffered);
    uint64_t after_a = tp_of(&f)->buffered;
    bool b_ok = b >= 0 && start_large_frame(&f, b, one_over_cap);
    run_until(&f, NULL, 50);
    int a_closed = a >= 0 && peer_closed(a), b_closed = b >= 0 && peer_closed(b);
    uint64_t over = rejected(&f, RN_WIRE_BUFFER_CAP), after_b = tp_of(&f)->buffered;
    if (a >= 0)
        close(a); /* a half frame: counted as truncated, and its buffer is given back */
    bool released = run_until(&f, nothing_buffered, WAIT_MS);
    uint64_t truncated = rejected(&f, RN_WIRE_TRUNCATED);
    if (b >= 0)
        close(b);
    fix_close(&f);
    CHECK(a_ok);
    CHECK(b_ok);
    CHECK(after_a > 0 && after_a <= CAP_TEST);
    CHECK_EQ_U64(after_b, after_a);
    CHECK(!a_closed);
    CHECK(b_closed);
    CHECK_EQ_U64(over, 1);
    CHECK(released);
    CHECK_EQ_U64(truncated, 1);
}

/* ---- peer TLS ---- */

struct pki {
    char dir[64], cert[96], key[96], ca[96];
};

/* A CA and a node certificate it signed, by the openssl command (EC P-256). 0 or -1. */
static int make_pki(struct pki *p)
{
    snprintf(p->dir, sizeof(p->dir), "/tmp/fl-tp-tls-XXXXXX");
    if (!mkdtemp(p->dir))
        return -1;
    snprintf(p->cert, sizeof(p->cert), "%s/node.pem", p->dir);
    snprintf(p->key, sizeof(p->key), "%s/node.key", p->dir);
    snprintf(p->ca, sizeof(p->ca), "%s/ca.pem", p->dir);
    char cmd[1024];
    const char *ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    snprintf(cmd, sizeof(cmd),
             "cd %s && (openssl req -x509 %s -keyout ca.key -out ca.pem -days 2 -subj /CN=ca && "
             "openssl req %s -keyout node.key -out node.csr -subj /CN=node && "
             "openssl x509 -req -in node.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
             "-out node.pem -days 2) >/dev/null 2>&1",
             p->dir, ec, ec);
    int rc = system(cmd);
    return rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0 ? 0 : -1;
}

static void pki_remove(struct pki *p)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", p->dir);
    if (system(cmd) == -1)
        return;
}

struct dialer {
    struct raft_uv_transport t;
    struct raft_uv_connect req;
    uv_stream_t *stream; /* libraft's end, from connect */
    int status;
    bool done, closed;
    uv_write_t w;
};

static void dialer_connect_cb(struct raft_uv_connect *req, uv_stream_t *stream, int status)
{
    struct dialer *d = req->data;
    d->stream = stream;
    d->status = status;
    d->done = true;
}

static bool dialed(struct fix *f)
{
    return f->dialer->done;
}

/* A RequestVote (version 2, 40 bytes) from PEER_ID: what libraft writes after connect. */
static size_t vote_frame(uint8_t *p)
{
    size_t n = put64(p, RN_WIRE_M_VOTE | (2u << 16));
    n += put64(p + n, 40);
    n += put64(p + n, 1);
    n += put64(p + n, PEER_ID);
    for (int i = 0; i < 3; i++)
        n += put64(p + n, 0);
    return n;
}

static bool got_vote(struct fix *f)
{
    return f->got_len >= 56;
}

static bool one_tls_drop(struct fix *f)
{
    return rejected(f, RN_WIRE_TLS) >= 1;
}

static void dialer_closed_cb(struct raft_uv_transport *t)
{
    ((struct dialer *)t->data)->closed = true;
}

static bool dialer_is_closed(struct fix *f)
{
    return f->dialer->closed;
}

TEST(test_tls_relay_delivers_libraft_bytes_unchanged_and_drops_a_plain_peer)
{
    struct pki p;
    struct fix f;
    struct dialer d;
    memset(&d, 0, sizeof(d));
    char err[256] = "";
    CHECK(make_pki(&p) == 0);
    CHECK(fix_open(&f, 5000, RN_TP_BUFFER_CAP) == 0);
    f.dialer = &d;
    int tls_a = rn_transport_tls(&f.t, p.cert, p.key, p.ca, err, sizeof(err));
    d.t.version = 1;
    d.t.data = &d;
    d.req.data = &d;
    int tls_b = rn_transport_init(&d.t, &f.loop, &f.policy, &f.log) ||
                d.t.init(&d.t, PEER_ID, "127.0.0.1:1") ||
                rn_transport_tls(&d.t, p.cert, p.key, p.ca, err, sizeof(err)) ||
                d.t.connect(&d.t, &d.req, OWN_ID, f.address, dialer_connect_cb);
    bool connected = !tls_a && !tls_b && run_until(&f, dialed, WAIT_MS) && d.status == 0;
    uint8_t vote[64];
    size_t n = vote_frame(vote);
    uv_buf_t b = uv_buf_init((char *)vote, (unsigned)n);
    bool sent = connected && uv_write(&d.w, d.stream, &b, 1, NULL) == 0;
    bool arrived = sent && run_until(&f, got_vote, WAIT_MS);
    bool same = arrived && f.got_len == n && memcmp(f.got, vote, n) == 0;
    uint8_t hs[64];
    size_t hn = handshake(hs);
    int plain = dial(&f);
    bool dropped = plain >= 0 && send_all(plain, hs, hn) && run_until(&f, one_tls_drop, WAIT_MS);
    if (plain >= 0)
        close(plain);
    if (d.stream)
        uv_close((uv_handle_t *)d.stream, free_stream);
    if (!tls_b) {
        d.t.close(&d.t, dialer_closed_cb);
        run_until(&f, dialer_is_closed, WAIT_MS);
    }
    rn_transport_free(&d.t);
    fix_close(&f);
    pki_remove(&p);
    if (*err)
        fprintf(stderr, "  %s\n", err);
    CHECK(!tls_a && !tls_b);
    CHECK(connected);
    CHECK(arrived);
    CHECK(same);
    CHECK(dropped);
    CHECK_EQ_U64(f.n_accepted, 1);
}

TEST(test_tls_files_that_do_not_load_fail_naming_the_file)
{
    struct fix f;
    char err[256] = "";
    CHECK(fix_open(&f, 5000, RN_TP_BUFFER_CAP) == 0);
    int rc = rn_transport_tls(&f.t, "/nonexistent/cert.pem", "/nonexistent/key.pem",
                              "/nonexistent/ca.pem", err, sizeof(err));
    fix_close(&f);
    CHECK(rc == -1);
    CHECK(strstr(err, "/nonexistent/cert.pem") != NULL);
}

/* ---- a slow TLS peer: the relay's bound ---- */

#define SLOW_PAYLOAD (32u << 20) /* written at once: past the bound and the kernel buffers */

/* A blocking TLS server on its own thread: completes the handshake, reads nothing until told
 * to, then counts and checks every plaintext byte. */
struct slow_peer {
    struct pki *p;
    int lfd, port;
    atomic_bool drain, done;
    size_t got;
    bool pattern_ok, tls_ok;
};

static int slow_listen(struct slow_peer *sp)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t n = sizeof(sa);
    sp->lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (sp->lfd < 0 || bind(sp->lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(sp->lfd, 1) ||
        getsockname(sp->lfd, (struct sockaddr *)&sa, &n))
        return -1;
    sp->port = ntohs(sa.sin_port);
    return 0;
}

static void *slow_peer_main(void *arg)
{
    struct slow_peer *sp = arg;
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    SSL *ssl = NULL;
    int fd = accept(sp->lfd, NULL, NULL);
    if (ctx && fd >= 0 && SSL_CTX_use_certificate_chain_file(ctx, sp->p->cert) == 1 &&
        SSL_CTX_use_PrivateKey_file(ctx, sp->p->key, SSL_FILETYPE_PEM) == 1 &&
        SSL_CTX_load_verify_locations(ctx, sp->p->ca, NULL) == 1) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
        ssl = SSL_new(ctx);
        SSL_set_fd(ssl, fd);
        sp->tls_ok = SSL_accept(ssl) == 1;
    }
    while (sp->tls_ok && !atomic_load(&sp->drain))
        usleep(1000);
    uint8_t buf[16384];
    size_t hs = 0;
    sp->pattern_ok = true;
    for (int k; sp->tls_ok && (k = SSL_read(ssl, buf, sizeof(buf))) > 0;) {
        for (int i = 0; i < k; i++, sp->got++) {
            if (hs < 40) { /* libraft's handshake for "127.0.0.1:1": 24 + 16 bytes */
                hs++;
                continue;
            }
            if (buf[i] != (uint8_t)((sp->got - 40) * 7))
                sp->pattern_ok = false;
        }
        if (sp->got >= 40 + SLOW_PAYLOAD)
            break;
    }
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    if (fd >= 0)
        close(fd);
    atomic_store(&sp->done, true);
    return NULL;
}

static bool relay_paused(struct fix *f)
{
    struct relay *r = tp_of(f)->relays;
    return f->dialer->done && r && r->state == R_RELAY && !r->pipe_reading;
}

static bool slow_done(struct fix *f)
{
    return atomic_load(&((struct slow_peer *)f->user)->done) && f->dialer->closed;
}

static void payload_written(uv_write_t *w, int status)
{
    struct dialer *d = w->data;
    d->status = status;
    d->closed = true; /* reused: the payload left libraft's stand-in */
}

TEST(test_tls_relay_stops_reading_libraft_while_a_slow_peer_holds_its_queue)
{
    struct pki p;
    struct fix f;
    struct dialer d;
    struct slow_peer sp = {.p = &p};
    pthread_t th;
    memset(&d, 0, sizeof(d));
    char err[256] = "", address[32];
    CHECK(make_pki(&p) == 0);
    CHECK(fix_open(&f, 5000, RN_TP_BUFFER_CAP) == 0); /* its transport dials here */
    f.dialer = &d;
    f.user = &sp;
    bool up = slow_listen(&sp) == 0 && pthread_create(&th, NULL, slow_peer_main, &sp) == 0;
    snprintf(address, sizeof(address), "127.0.0.1:%d", sp.port);
    uint8_t *payload = malloc(SLOW_PAYLOAD);
    for (size_t i = 0; payload && i < SLOW_PAYLOAD; i++)
        payload[i] = (uint8_t)(i * 7);
    bool paused = false, bounded = false, delivered = false;
    if (up && payload && !rn_transport_tls(&f.t, p.cert, p.key, p.ca, err, sizeof(err))) {
        f.t.connect(&f.t, &d.req, PEER_ID, address, dialer_connect_cb);
        d.req.data = &d;
        bool connected = run_until(&f, dialed, WAIT_MS) && d.status == 0;
        uv_buf_t b = uv_buf_init((char *)payload, SLOW_PAYLOAD);
        d.w.data = &d;
        if (connected && uv_write(&d.w, d.stream, &b, 1, payload_written) == 0) {
            paused = run_until(&f, relay_paused, WAIT_MS);
            struct relay *r = tp_of(&f)->relays;
            /* at most the mark, one read's records and their framing past it */
            bounded = r && r->queued < RN_TP_RELAY_HIGH + RN_TP_TLS_READ + RN_TP_TLS_READ / 8;
        }
    }
    atomic_store(&sp.drain, true);
    if (up) {
        delivered = run_until(&f, slow_done, 4 * WAIT_MS);
        pthread_join(th, NULL);
    }
    if (d.stream)
        uv_close((uv_handle_t *)d.stream, free_stream);
    if (sp.lfd >= 0)
        close(sp.lfd);
    fix_close(&f);
    free(payload);
    pki_remove(&p);
    CHECK(up);
    CHECK(sp.tls_ok);
    CHECK(paused);
    CHECK(bounded);
    CHECK(delivered);
    CHECK_EQ_U64(sp.got, 40 + SLOW_PAYLOAD);
    CHECK(sp.pattern_ok);
}

int main(void)
{
    RUN(test_budget_lets_two_largest_messages_through_and_not_a_third);
    RUN(test_budget_never_counts_small_buffers_and_always_lets_one_shrink);
    RUN(test_handshake_not_done_in_time_is_closed_and_counted);
    RUN(test_buffer_cap_closes_the_link_that_would_pass_it);
    RUN(test_tls_relay_delivers_libraft_bytes_unchanged_and_drops_a_plain_peer);
    RUN(test_tls_files_that_do_not_load_fail_naming_the_file);
    RUN(test_tls_relay_stops_reading_libraft_while_a_slow_peer_holds_its_queue);
    TEST_MAIN_END();
}
