/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http_fence.c — GET /v1/fence?lock=NAME&token=T (or the headers Fencing-Lock and Fencing-Token,
 * what nginx's auth_request forwards): 200 when T is a current holder's token of NAME (the rule
 * of FENCE.CHECK: exclusive or shared holder, semaphore permit, election leader), 409 when it is
 * not, 400 on bad input, 503 when this node cannot answer linearizably (not the ready leader, no
 * quorum). The header comment of http_fence.h has the batching and who frees what.
 *
 * Why a barrier: a deposed leader's state may still show the old holder; the barrier (or the
 * read lease, which proves the same: docs/design.md "The read lease") shows this node was the
 * leader when the check ran, so "200" means "current at some instant between
 * the request and the answer", as FENCE.CHECK's OK does.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/obs/http_args.h"
#include "server/server.h"

struct hf_check {
    struct hf_check *next;
    struct srv_http_pending *p;
    uint64_t token;
    size_t len;
    char name[]; /* len bytes, any bytes */
};

#define HF_TEXT "text/plain; charset=utf-8"

/* 200 or 409 for (name, token); the name is shown cut to 64 bytes: enough to tell which, not
 * an echo of any input. */
static void answer(struct srv_http_pending *p, bool current, const char *name, size_t len,
                   uint64_t token)
{
    char msg[256];
    int shown = (int)(len > 64 ? 64 : len);
    int n = current ? snprintf(msg, sizeof(msg), "ok: token %llu is current for lock %.*s\n",
                               (unsigned long long)token, shown, name)
                    : snprintf(msg, sizeof(msg),
                               "stale: token %llu is not the current token of lock %.*s\n",
                               (unsigned long long)token, shown, name);
    srv_http_complete(p, current ? 200 : 409, HF_TEXT, msg, n < 0 ? 0 : (size_t)n);
}

static void fail(struct srv_http_pending *p, int status, const char *msg)
{
    srv_http_complete(p, status, HF_TEXT, msg, strlen(msg));
}

static void fence_barrier_cb(void *ctx, int status);

/* Under users, the gate passed the user: a name outside its locks= globs is refused, as
 * FENCE.CHECK refuses it with -NOPERM. */
static bool hf_gated_refuses(const struct srv *s, const char *name, size_t n)
{
    return s->hfence.gated && s->auth.on &&
           (!s->hfence.user || !acl_may_lock(s->hfence.user, name, n));
}

/* Answer every check of list l: the FSM's answer when the barrier succeeded and this node is
 * still the ready leader, else 503. Frees them. */
static void answer_list(struct srv *s, struct hf_check *l, int ok)
{
    while (l) {
        struct hf_check *next = l->next;
        if (!ok)
            fail(l->p, 503, "not the ready leader, or no quorum: ask another node\n");
        else
            answer(l->p, fsm_fence_check(s->fsm, l->name, l->len, l->token) == 0, l->name, l->len,
                   l->token);
        free(l);
        l = next;
    }
}

/* Move the waiting checks under a new barrier; failing that, answer them 503. */
static void issue(struct srv *s)
{
    struct srv_hfence *hf = &s->hfence;
    if (hf->busy || !hf->waiting)
        return;
    hf->inflight = hf->waiting;
    hf->waiting = hf->waiting_tail = NULL;
    if (s->stopping || !srv_ready(s) || rn_barrier(s->rn, fence_barrier_cb, s) != RN_OK) {
        struct hf_check *l = hf->inflight;
        hf->inflight = NULL;
        answer_list(s, l, 0);
        return;
    }
    hf->busy = true;
}

static void fence_barrier_cb(void *ctx, int status)
{
    struct srv *s = ctx;
    struct srv_hfence *hf = &s->hfence;
    struct hf_check *l = hf->inflight;
    hf->inflight = NULL;
    hf->busy = false;
    answer_list(s, l, status == RN_OK && srv_ready(s));
    issue(s); /* the checks that arrived meanwhile; when stopping, they are answered 503 */
}

int srv_http_fence_route(void *arg, const struct srv_http_request *req, struct srv_http_pending *p)
{
    struct srv *s = arg;
    if (strcmp(req->path, "/v1/fence") != 0)
        return 0;
    size_t cap = s->cfg.max_key;
    struct hf_check *c = malloc(sizeof(*c) + cap + 1);
    if (!c) {
        fail(p, 503, "out of memory\n");
        return 1;
    }
    /* the arguments (http_args.h): the port's one query parser, skipping what is not ours (nginx
     * may forward parameters of its own), and the headers */
    struct hapi_fence fa = {.query = req->query, .name = c->name, .cap = cap};
    char err[192], msg[200];
    fa.hlock = srv_http_header(req, "Fencing-Lock", &fa.hlock_len);
    fa.htoken = srv_http_header(req, "Fencing-Token", &fa.htoken_len);
    if (hapi_fence_args(&fa, err, sizeof(err))) {
        free(c);
        snprintf(msg, sizeof(msg), "%s\n", err);
        fail(p, 400, msg);
        return 1;
    }
    c->token = fa.token;
    size_t n = fa.name_len;
    if (hf_gated_refuses(s, c->name, n)) {
        free(c);
        fail(p, 403, "the user's locks= globs do not allow this lock\n");
        return 1;
    }
    c->len = n;
    c->p = p;
    c->next = NULL;
    if (srv_read_lease(s)) { /* the leader's read lease proves what a barrier would */
        s->m.lease_reads++;
        answer_list(s, c, 1);
        return 1;
    }
    struct srv_hfence *hf = &s->hfence;
    if (hf->waiting_tail)
        hf->waiting_tail->next = c;
    else
        hf->waiting = c;
    hf->waiting_tail = c;
    issue(s);
    return 1;
}
