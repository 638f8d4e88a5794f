/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the HTTP endpoint: a real uv loop serves on 127.0.0.1 (ephemeral port) while a
 * helper thread plays the client with plain blocking sockets. When the client is done it wakes
 * the loop through a uv_async, the loop thread calls srv_http_stop, and the loop must then run
 * dry (uv_loop_close == 0): every handle closed, every block freed (LSan checks the rest). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "server/obs/http.h"
#include "test.h"

#define METRICS_BODY "fencelock_up 1\nfencelock_revision 42\n"

struct handler_state {
    int calls;
    char method[16];
    char path[256];
};

static void handler(void *arg, const char *method, const char *path, struct buf *body, int *status,
                    const char **ctype)
{
    struct handler_state *st = arg;
    st->calls++;
    snprintf(st->method, sizeof(st->method), "%s", method);
    snprintf(st->path, sizeof(st->path), "%s", path);
    if (strcmp(path, "/metrics") == 0) {
        buf_append_str(body, METRICS_BODY);
        *ctype = "text/plain; version=0.0.4";
    } else if (strcmp(path, "/oom") == 0) {
        /* the body's allocation fails half-way (a cap stands in for malloc): never sent as 200 */
        buf_set_max(body, 32);
        buf_append_str(body, "fencelock_up 1\n");
        buf_append_str(body, "fencelock_revision 1234567890123\n");
        buf_append_str(body, "x\n");
    } else if (strcmp(path, "/health") == 0) {
        buf_append_str(body, "{\"status\":\"unavailable\"}\n");
        *status = 503;
        *ctype = "application/json";
    } else {
        buf_append_str(body, "not found\n");
        *status = 404;
    }
}

/* ---- client side (helper thread) ---- */

struct reply {
    char data[16384];
    size_t len;
    int ok; /* the connection ended with EOF (not a reset or timeout) */
};

static int connect_to(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct timeval tv = {5, 0}; /* a hung server fails the test instead of hanging it */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
        close(fd);
        return -1;
    }
    return fd;
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void read_reply(int fd, struct reply *r)
{
    r->len = 0;
    r->ok = 0;
    for (;;) {
        ssize_t n = recv(fd, r->data + r->len, sizeof(r->data) - 1 - r->len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            r->ok = n == 0;
            break;
        }
        r->len += (size_t)n;
        if (r->len == sizeof(r->data) - 1)
            break;
    }
    r->data[r->len] = '\0';
}

static void request(int port, const char *raw, size_t n, struct reply *r)
{
    memset(r, 0, sizeof(*r));
    int fd = connect_to(port);
    if (fd < 0)
        return;
    if (send_all(fd, raw, n) == 0)
        read_reply(fd, r);
    close(fd);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- harness ---- */

struct harness;
typedef void (*client_fn)(struct harness *);

struct harness {
    uv_loop_t loop;
    uv_async_t done;
    struct srv_http *srv;
    struct handler_state st;
    int port;
    client_fn client;
    struct reply r[4];
    uint64_t elapsed_ms;
    int flag;
    int stop_sent; /* the client already woke the loop: the async may be closed by now */
    /* the async handler (srv_http_set_async): "/later" is answered from a timer, "/never"
     * only when the loop stops (its connection is gone by then) */
    uv_timer_t later;
    struct srv_http_pending *pending;
    char query[64], header[64];
    int header_twice;
};

static void on_async_closed(uv_handle_t *h)
{
    (void)h;
}

static void on_later(uv_timer_t *t)
{
    struct harness *hs = t->data;
    char body[96];
    int n = snprintf(body, sizeof(body), "later:%s", hs->header);
    srv_http_complete(hs->pending, 202, "text/x-later", body, (size_t)n);
    hs->pending = NULL;
}

static int async_handler(void *arg, const struct srv_http_request *req, struct srv_http_pending *p)
{
    struct harness *hs = arg;
    int later = strcmp(req->path, "/later") == 0;
    if (!later && strcmp(req->path, "/never") != 0)
        return 0;
    if (!hs->query[0]) /* the first request's */
        snprintf(hs->query, sizeof(hs->query), "%s", req->query);
    size_t len = 0;
    const char *v = srv_http_header(req, "x-name", &len);
    hs->header_twice = v && len == SIZE_MAX;
    if (v && len != SIZE_MAX)
        snprintf(hs->header, sizeof(hs->header), "%.*s", (int)len, v);
    hs->pending = p;
    if (later)
        uv_timer_start(&hs->later, on_later, 20, 0);
    return 1;
}

static void on_done(uv_async_t *a)
{
    struct harness *hs = a->data;
    srv_http_stop(hs->srv);
    if (hs->pending) /* its connection closed: the answer is dropped, the handle freed */
        srv_http_complete(hs->pending, 200, NULL, "", 0);
    hs->pending = NULL;
    uv_close((uv_handle_t *)&hs->later, on_async_closed);
    uv_close((uv_handle_t *)a, on_async_closed);
}

static void *client_thread(void *arg)
{
    struct harness *hs = arg;
    hs->client(hs);
    if (!hs->stop_sent)
        uv_async_send(&hs->done);
    return NULL;
}

/* Serve until the client function returns, then stop; 0 if everything was torn down. */
static int run_with_client(struct harness *hs, client_fn fn, unsigned max_conns, uint64_t idle)
{
    memset(hs, 0, sizeof(*hs));
    char err[128];
    if (uv_loop_init(&hs->loop))
        return -1;
    if (srv_http_start(&hs->loop, "127.0.0.1", 0, handler, &hs->st, &hs->srv, err, sizeof(err)))
        return -1;
    srv_http_set_limits(hs->srv, max_conns, idle);
    srv_http_set_async(hs->srv, async_handler, hs);
    uv_timer_init(&hs->loop, &hs->later);
    hs->later.data = hs;
    hs->port = srv_http_port(hs->srv);
    hs->client = fn;
    uv_async_init(&hs->loop, &hs->done, on_done);
    hs->done.data = hs;
    pthread_t th;
    if (pthread_create(&th, NULL, client_thread, hs))
        return -1;
    uv_run(&hs->loop, UV_RUN_DEFAULT);
    pthread_join(th, NULL);
    return uv_loop_close(&hs->loop) == 0 ? 0 : -1;
}

#define REQ(hs, i, lit) request((hs)->port, (lit), sizeof(lit) - 1, &(hs)->r[i])

static int starts_with(const struct reply *r, const char *prefix)
{
    return r->len >= strlen(prefix) && memcmp(r->data, prefix, strlen(prefix)) == 0;
}

static const char *body_of(const struct reply *r)
{
    const char *b = strstr(r->data, "\r\n\r\n");
    return b ? b + 4 : NULL;
}

static int has_header(const struct reply *r, const char *line)
{
    const char *end = strstr(r->data, "\r\n\r\n");
    const char *h = strstr(r->data, line);
    return h && end && h < end;
}

/* ---- client scripts ---- */

static void get_metrics(struct harness *hs)
{
    REQ(hs, 0, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
}
static void get_missing(struct harness *hs)
{
    REQ(hs, 0, "GET /nope HTTP/1.1\r\n\r\n");
}
static void get_oom(struct harness *hs)
{
    REQ(hs, 0, "GET /oom HTTP/1.1\r\n\r\n");
}
static void get_health(struct harness *hs)
{
    REQ(hs, 0, "GET /health HTTP/1.0\r\n\r\n");
}
static void head_metrics(struct harness *hs)
{
    REQ(hs, 0, "HEAD /metrics HTTP/1.1\r\n\r\n");
}
static void get_query(struct harness *hs)
{
    REQ(hs, 0, "GET /metrics?x=1&y HTTP/1.1\r\n\r\n");
}
static void get_bare_lf(struct harness *hs)
{
    REQ(hs, 0, "GET /metrics HTTP/1.1\nHost: x\n\n");
}
static void post(struct harness *hs)
{
    REQ(hs, 0, "POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
}
static void garbage(struct harness *hs)
{
    REQ(hs, 0, "\x01\x02\xff garbage\r\n\r\n");
}
static void bad_version(struct harness *hs)
{
    REQ(hs, 0, "GET /metrics HTTP/2.0\r\n\r\n");
}
static void bad_target(struct harness *hs)
{
    REQ(hs, 0, "GET metrics HTTP/1.1\r\n\r\n");
}
static void bad_header(struct harness *hs)
{
    REQ(hs, 0, "GET / HTTP/1.1\r\nno colon here\r\n\r\n");
}
static void folded_header(struct harness *hs)
{
    REQ(hs, 0, "GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n");
}

static void oversized(struct harness *hs)
{
    size_t n = SRV_HTTP_MAX_HEAD + 4000;
    char *p = malloc(n);
    memcpy(p, "GET /metrics HTTP/1.1\r\nX-Pad: ", 30);
    memset(p + 30, 'a', n - 30);
    request(hs->port, p, n, &hs->r[0]);
    free(p);
}

static void trickle(struct harness *hs)
{
    static const char req[] = "GET /metrics HTTP/1.1\r\n\r\n";
    memset(&hs->r[0], 0, sizeof(hs->r[0]));
    int fd = connect_to(hs->port);
    if (fd < 0)
        return;
    for (size_t i = 0; i < sizeof(req) - 1; i += 5) {
        size_t n = sizeof(req) - 1 - i < 5 ? sizeof(req) - 1 - i : 5;
        send_all(fd, req + i, n);
        sleep_ms(5);
    }
    read_reply(fd, &hs->r[0]);
    close(fd);
}

static void many_sequential(struct harness *hs)
{
    for (int i = 0; i < 100; i++) {
        REQ(hs, 0, "GET /metrics HTTP/1.1\r\n\r\n");
        if (!starts_with(&hs->r[0], "HTTP/1.1 200 "))
            return;
        hs->flag++;
    }
}

/* With max_conns 1: a connection still waiting for its request is closed unanswered when a
 * second one arrives, and the second is served (a /health probe is never starved by idle
 * connections). */
static void over_cap(struct harness *hs)
{
    int a = connect_to(hs->port);
    if (a < 0)
        return;
    send_all(a, "GET /metrics", 12);
    sleep_ms(100); /* let the server accept a before b */
    REQ(hs, 0, "GET /metrics HTTP/1.1\r\n\r\n");
    read_reply(a, &hs->r[1]);
    close(a);
    REQ(hs, 2, "GET /metrics HTTP/1.1\r\n\r\n");
    hs->flag = (int)srv_http_evictions(hs->srv);
}

static void idle(struct harness *hs)
{
    int fd = connect_to(hs->port);
    if (fd < 0)
        return;
    uint64_t t0 = now_ms();
    send_all(fd, "GET /met", 8);
    read_reply(fd, &hs->r[0]);
    hs->elapsed_ms = now_ms() - t0;
    close(fd);
}

/* Stop while a connection is open mid-request: the server must close it and free it. */
static void open_at_stop(struct harness *hs)
{
    int fd = connect_to(hs->port);
    if (fd < 0)
        return;
    send_all(fd, "GET /metrics HTTP/1.1\r\n", 23);
    sleep_ms(50);
    hs->stop_sent = 1;
    uint64_t t0 = now_ms();
    uv_async_send(&hs->done);
    read_reply(fd, &hs->r[0]);
    hs->elapsed_ms = now_ms() - t0;
    hs->flag = hs->r[0].len == 0 && hs->r[0].ok;
    close(fd);
}

/* ---- tests ---- */

TEST(metrics_200_with_body)
{
    struct harness hs;
    CHECK(run_with_client(&hs, get_metrics, 0, 0) == 0);
    CHECK(starts_with(&hs.r[0], "HTTP/1.1 200 OK\r\n"));
    CHECK(hs.r[0].ok);
    CHECK(body_of(&hs.r[0]) && strcmp(body_of(&hs.r[0]), METRICS_BODY) == 0);
    CHECK(hs.st.calls == 1 && strcmp(hs.st.method, "GET") == 0);
}

TEST(response_has_length_type_and_close)
{
    struct harness hs;
    CHECK(run_with_client(&hs, get_metrics, 0, 0) == 0);
    char cl[64];
    snprintf(cl, sizeof(cl), "\r\nContent-Length: %zu\r\n", strlen(METRICS_BODY));
    CHECK(has_header(&hs.r[0], cl));
    CHECK(has_header(&hs.r[0], "\r\nContent-Type: text/plain; version=0.0.4\r\n"));
    CHECK(has_header(&hs.r[0], "\r\nConnection: close\r\n"));
}

TEST(handler_404_passes_through)
{
    struct harness hs;
    CHECK(run_with_client(&hs, get_missing, 0, 0) == 0);
    CHECK(starts_with(&hs.r[0], "HTTP/1.1 404 Not Found\r\n"));
    CHECK(strcmp(body_of(&hs.r[0]), "not found\n") == 0);
    CHECK(strcmp(hs.st.path, "/nope") == 0);
}

TEST(body_that_ran_out_of_memory_is_a_500_not_a_short_200)
{
    struct harness hs;
    CHECK(run_with_client(&hs, get_oom, 0, 0) == 0);
    CHECK(starts_with(&hs.r[0], "HTTP/1.1 500 Internal Server Error\r\n"));
    CHECK(body_of(&hs.r[0]) && strcmp(body_of(&hs.r[0]), "Internal Server Error\n") == 0);
    CHECK(hs.r[0].ok);
}

TEST(handler_503_and_ctype_pass_through)
{
    struct harness hs;
    CHECK(run_with_client(&hs, get_health, 0, 0) == 0);
    CHECK(starts_with(&hs.r[0], "HTTP/1.1 503 Service Unavailable\r\n"));
    CHECK(has_header(&hs.r[0], "\r\nContent-Type: application/json\r\n"));
}

TEST(head_sends_length_without_body)
{
    struct harness hs;
    CHECK(run_with_client(&hs, head_metrics, 0, 0) == 0);
    CHECK(starts_with(&hs.r[0], "HTTP/1.1 200 OK\r\n"));
    char cl[64];
    snprintf(cl, sizeof(cl), "\r\nContent-Length: %zu\r\n", strlen(METRICS_BODY));
    CHECK(has_header(&hs.r[0], cl));
    CHECK(body_of(&hs.r[0]) && body_of(&hs.r[0])[0] == '\0');
    CHECK(strcmp(hs.st.method, "HEAD") == 0);
}

TEST(query_string_is_cut_from_path)
{
    struct harness hs;
    CHECK(run_with_client(&hs, get_query, 0, 0) == 0);
    CHECK(starts_with(&hs.r[0], "HTTP/1.1 200 OK\r\n"));
    CHECK(strcmp(hs.st.path, "/metrics") == 0);
}

TEST(bare_lf_line_endings_accepted)
{
    struct harness hs;
    CHECK(run_with_client(&hs, get_bare_lf, 0, 0) == 0);
    CHECK(starts_with(&hs.r[0], "HTTP/1.1 200 OK\r\n"));
}

static void get_after_blank_lines(struct harness *hs)
{
    REQ(hs, 0, "\r\n\r\nGET /metrics HTTP/1.1\r\n\r\n");
    REQ(hs, 1, "\n\n\r\nGET /metrics HTTP/1.1\n\n");
}

TEST(empty_lines_before_the_request_line_are_skipped)
{
    struct harness hs;
    CHECK(run_with_client(&hs, get_after_blank_lines, 0, 0) == 0);
    CHECK(starts_with(&hs.r[0], "HTTP/1.1 200 OK\r\n"));
    CHECK(starts_with(&hs.r[1], "HTTP/1.1 200 OK\r\n"));
    CHECK(hs.st.calls == 2);
}

TEST(request_in_pieces)
{
    struct harness hs;
    CHECK(run_with_client(&hs, trickle, 0, 0) == 0);
    CHECK(starts_with(&hs.r[0], "HTTP/1.1 200 OK\r\n"));
    CHECK(hs.st.calls == 1);
}

TEST(post_is_405_without_handler)
{
    struct harness hs;
    CHECK(run_with_client(&hs, post, 0, 0) == 0);
    CHECK(starts_with(&hs.r[0], "HTTP/1.1 405 Method Not Allowed\r\n"));
    CHECK(has_header(&hs.r[0], "\r\nAllow: GET, HEAD\r\n"));
    CHECK(hs.r[0].ok);
    CHECK(hs.st.calls == 0);
}

TEST(garbage_is_400)
{
    struct harness hs;
    CHECK(run_with_client(&hs, garbage, 0, 0) == 0);
    CHECK(starts_with(&hs.r[0], "HTTP/1.1 400 Bad Request\r\n"));
    CHECK(hs.st.calls == 0);
}

TEST(unknown_version_is_400)
{
    struct harness hs;
    CHECK(run_with_client(&hs, bad_version, 0, 0) == 0);
    CHECK(starts_with(&hs.r[0], "HTTP/1.1 400 "));
}

TEST(target_without_slash_is_400)
{
    struct harness hs;
    CHECK(run_with_client(&hs, bad_target, 0, 0) == 0);
    CHECK(starts_with(&hs.r[0], "HTTP/1.1 400 "));
}

TEST(malformed_header_is_400)
{
    struct harness hs;
    CHECK(run_with_client(&hs, bad_header, 0, 0) == 0);
    CHECK(starts_with(&hs.r[0], "HTTP/1.1 400 "));
}

TEST(folded_header_is_400)
{
    struct harness hs;
    CHECK(run_with_client(&hs, folded_header, 0, 0) == 0);
    CHECK(starts_with(&hs.r[0], "HTTP/1.1 400 "));
}

TEST(oversized_head_is_431_and_reply_survives)
{
    struct harness hs;
    CHECK(run_with_client(&hs, oversized, 0, 0) == 0);
    CHECK(starts_with(&hs.r[0], "HTTP/1.1 431 "));
    CHECK(hs.r[0].ok); /* drained before closing: EOF, not a reset */
    CHECK(hs.st.calls == 0);
}

TEST(many_sequential_requests)
{
    struct harness hs;
    CHECK(run_with_client(&hs, many_sequential, 0, 0) == 0);
    CHECK(hs.flag == 100 && hs.st.calls == 100);
}

TEST(at_the_cap_the_oldest_idle_connection_makes_room)
{
    struct harness hs;
    CHECK(run_with_client(&hs, over_cap, 1, 0) == 0);
    CHECK(hs.r[1].len == 0 && hs.flag == 1);
    CHECK(starts_with(&hs.r[0], "HTTP/1.1 200 OK\r\n"));
    CHECK(starts_with(&hs.r[2], "HTTP/1.1 200 OK\r\n"));
}

TEST(idle_connection_is_closed)
{
    struct harness hs;
    CHECK(run_with_client(&hs, idle, 0, 200) == 0);
    CHECK(hs.r[0].len == 0 && hs.r[0].ok);
    CHECK(hs.elapsed_ms >= 150 && hs.elapsed_ms < 3000);
}

TEST(stop_closes_open_connections_and_frees)
{
    struct harness hs;
    CHECK(run_with_client(&hs, open_at_stop, 0, 0) == 0);
    CHECK(hs.flag == 1);
    CHECK(hs.elapsed_ms < 2000); /* closed by stop, not by the idle timer */
    CHECK(hs.st.calls == 0);
}

TEST(start_rejects_bad_host)
{
    uv_loop_t loop;
    CHECK(uv_loop_init(&loop) == 0);
    struct srv_http *h = (struct srv_http *)1;
    char err[128] = "";
    struct handler_state st = {0};
    CHECK(srv_http_start(&loop, "not-an-ip", 0, handler, &st, &h, err, sizeof(err)) == -1);
    CHECK(h == NULL && err[0] != '\0');
    CHECK(uv_loop_close(&loop) == 0);
}

TEST(start_reports_port_in_use_and_frees)
{
    uv_loop_t loop;
    CHECK(uv_loop_init(&loop) == 0);
    struct handler_state st = {0};
    struct srv_http *a = NULL, *b = NULL;
    char err[128] = "";
    CHECK(srv_http_start(&loop, "127.0.0.1", 0, handler, &st, &a, err, sizeof(err)) == 0);
    int port = srv_http_port(a);
    CHECK(port > 0);
    CHECK(srv_http_start(&loop, "127.0.0.1", port, handler, &st, &b, err, sizeof(err)) == -1);
    CHECK(b == NULL && strstr(err, "address already in use") != NULL);
    srv_http_stop(a);
    srv_http_stop(NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK(uv_loop_close(&loop) == 0);
}

TEST(start_accepts_ipv6_literal)
{
    uv_loop_t loop;
    CHECK(uv_loop_init(&loop) == 0);
    struct handler_state st = {0};
    struct srv_http *h = NULL;
    char err[128] = "";
    CHECK(srv_http_start(&loop, "::1", 0, handler, &st, &h, err, sizeof(err)) == 0);
    CHECK(srv_http_port(h) > 0);
    srv_http_stop(h);
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK(uv_loop_close(&loop) == 0);
}

static void get_later(struct harness *hs)
{
    REQ(hs, 0, "GET /later?lock=a%20b&token=7 HTTP/1.1\r\nHost: x\r\nX-Name:  v 1 \t\r\n\r\n");
    REQ(hs, 1, "HEAD /later HTTP/1.1\r\nx-NAME:w\r\n\r\n");
    REQ(hs, 2, "GET /metrics HTTP/1.1\r\n\r\n");
    REQ(hs, 3, "GET /later HTTP/1.1\r\nX-Name: a\r\nX-Name: b\r\n\r\n");
}

TEST(async_handler_answers_later_with_query_and_headers)
{
    struct harness hs;
    CHECK(run_with_client(&hs, get_later, 0, 0) == 0);
    CHECK(starts_with(&hs.r[0], "HTTP/1.1 202 "));
    CHECK(has_header(&hs.r[0], "\r\nContent-Type: text/x-later\r\n"));
    CHECK(body_of(&hs.r[0]) && strcmp(body_of(&hs.r[0]), "later:v 1") == 0);
    CHECK(hs.r[0].ok);
    CHECK(starts_with(&hs.r[1], "HTTP/1.1 202 "));
    CHECK(has_header(&hs.r[1], "\r\nContent-Length: 7\r\n")); /* HEAD: measured, not sent */
    CHECK(body_of(&hs.r[1]) && strcmp(body_of(&hs.r[1]), "") == 0);
    CHECK(starts_with(&hs.r[2], "HTTP/1.1 200 OK\r\n")); /* not taken: the plain handler */
    CHECK(hs.st.calls == 1);
    CHECK(strcmp(hs.query, "lock=a%20b&token=7") == 0); /* as sent, not decoded */
    CHECK(hs.header_twice);                             /* the same header twice: ambiguous */
}

static void get_never(struct harness *hs)
{
    REQ(hs, 0, "GET /never?x=1 HTTP/1.1\r\n\r\n");
}

TEST(async_request_unanswered_is_closed_after_idle_and_its_answer_dropped)
{
    struct harness hs;
    CHECK(run_with_client(&hs, get_never, 0, 100) == 0);
    CHECK(hs.r[0].len == 0 && hs.r[0].ok); /* closed by the server (EOF), without a reply */
    CHECK(strcmp(hs.query, "x=1") == 0);
}

int main(void)
{
    RUN(metrics_200_with_body);
    RUN(response_has_length_type_and_close);
    RUN(handler_404_passes_through);
    RUN(body_that_ran_out_of_memory_is_a_500_not_a_short_200);
    RUN(handler_503_and_ctype_pass_through);
    RUN(head_sends_length_without_body);
    RUN(query_string_is_cut_from_path);
    RUN(bare_lf_line_endings_accepted);
    RUN(empty_lines_before_the_request_line_are_skipped);
    RUN(request_in_pieces);
    RUN(post_is_405_without_handler);
    RUN(garbage_is_400);
    RUN(unknown_version_is_400);
    RUN(target_without_slash_is_400);
    RUN(malformed_header_is_400);
    RUN(folded_header_is_400);
    RUN(oversized_head_is_431_and_reply_survives);
    RUN(many_sequential_requests);
    RUN(at_the_cap_the_oldest_idle_connection_makes_room);
    RUN(idle_connection_is_closed);
    RUN(stop_closes_open_connections_and_frees);
    RUN(start_rejects_bad_host);
    RUN(start_reports_port_in_use_and_frees);
    RUN(start_accepts_ipv6_literal);
    RUN(async_handler_answers_later_with_query_and_headers);
    RUN(async_request_unanswered_is_closed_after_idle_and_its_answer_dropped);
    TEST_MAIN_END();
}
