/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Event ids, XREAD replies and entries (see event.h). Every shape is checked before it is
 * used: a server (or anything listening on its port) may send what it likes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/event.h"

#define WID_DIGITS_MAX 20 /* 2^64 has 20 digits */

/* A decimal number of [s, s+n) below 2^64; -1 if empty, not digits or too large. */
static int parse_dec(const char *s, size_t n, uint64_t *v)
{
    uint64_t x = 0;
    if (n == 0 || n > WID_DIGITS_MAX)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (x > (UINT64_MAX - d) / 10)
            return -1;
        x = x * 10 + d;
    }
    *v = x;
    return 0;
}

int cl_wid_parse(const char *s, size_t n, struct cl_wid *id)
{
    const char *dash = memchr(s, '-', n);
    struct cl_wid x = {0, 0};
    if (!dash)
        return parse_dec(s, n, &x.rev) ? -1 : (*id = x, 0);
    size_t a = (size_t)(dash - s);
    if (parse_dec(s, a, &x.rev) || parse_dec(dash + 1, n - a - 1, &x.seq))
        return -1;
    *id = x;
    return 0;
}

int cl_wid_cmp(struct cl_wid a, struct cl_wid b)
{
    if (a.rev != b.rev)
        return a.rev < b.rev ? -1 : 1;
    if (a.seq != b.seq)
        return a.seq < b.seq ? -1 : 1;
    return 0;
}

struct cl_wid cl_wid_past_gap(struct cl_wid after, struct cl_wid oldest)
{
    struct cl_wid before = oldest;
    if (before.seq) {
        before.seq--;
    } else if (before.rev) {
        before.rev--;
        before.seq = UINT64_MAX;
    }
    return cl_wid_cmp(before, after) > 0 ? before : after;
}

void cl_wid_format(struct cl_wid id, char out[FL_WATCH_ID_MAX])
{
    snprintf(out, FL_WATCH_ID_MAX, "%llu-%llu", (unsigned long long)id.rev,
             (unsigned long long)id.seq);
}

void cl_evbuf_free(struct cl_evbuf *b)
{
    free(b->v);
    b->v = NULL;
    b->cap = 0;
}

static bool is_str(const redisReply *r)
{
    return r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS);
}

static enum cl_parse evbuf_reserve(struct cl_evbuf *b, size_t n)
{
    if (n <= b->cap)
        return CL_PARSE_OK;
    struct fl_watch_field *v = realloc(b->v, n * sizeof(*v));
    if (!v)
        return CL_PARSE_NOMEM;
    b->v = v;
    b->cap = n;
    return CL_PARSE_OK;
}

/* The field/value list [k1, v1, k2, v2, ...] into b; type and name are picked out. */
static enum cl_parse parse_fields(const redisReply *kv, struct cl_evbuf *b, struct fl_event *ev)
{
    if (kv->type != REDIS_REPLY_ARRAY || kv->elements % 2)
        return CL_PARSE_BAD;
    size_t n = kv->elements / 2;
    if (evbuf_reserve(b, n ? n : 1))
        return CL_PARSE_NOMEM;
    for (size_t i = 0; i < n; i++) {
        const redisReply *k = kv->element[2 * i], *v = kv->element[2 * i + 1];
        if (!is_str(k) || !is_str(v) || strlen(k->str) != k->len)
            return CL_PARSE_BAD;
        b->v[i] = (struct fl_watch_field){k->str, v->str, v->len};
        if (!ev->type[0] && strcmp(k->str, "type") == 0)
            ev->type = v->str;
        else if (!ev->name[0] && strcmp(k->str, "name") == 0)
            ev->name = v->str;
    }
    ev->n_fields = n;
    ev->fields = b->v;
    return ev->type[0] ? CL_PARSE_OK : CL_PARSE_BAD; /* every event has a type */
}

enum cl_parse cl_event_parse(const redisReply *entry, struct cl_evbuf *b, struct fl_event *ev)
{
    memset(ev, 0, sizeof(*ev));
    ev->kind = FL_WATCH_EVENT;
    ev->type = ev->name = ev->message = "";
    if (entry->type != REDIS_REPLY_ARRAY || entry->elements != 2 || !is_str(entry->element[0]))
        return CL_PARSE_BAD;
    const redisReply *id = entry->element[0];
    struct cl_wid w;
    if (cl_wid_parse(id->str, id->len, &w) || id->len >= FL_WATCH_ID_MAX)
        return CL_PARSE_BAD;
    ev->rev = w.rev;
    ev->seq = w.seq;
    cl_wid_format(w, ev->id);
    return parse_fields(entry->element[1], b, ev);
}

enum cl_parse cl_xread_entries(const redisReply *r, const char *stream, const redisReply **out)
{
    *out = NULL;
    if (r->type == REDIS_REPLY_NIL)
        return CL_PARSE_OK;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 1)
        return CL_PARSE_BAD;
    const redisReply *s = r->element[0];
    if (s->type != REDIS_REPLY_ARRAY || s->elements != 2 || !is_str(s->element[0]) ||
        s->element[1]->type != REDIS_REPLY_ARRAY || strcmp(s->element[0]->str, stream) != 0)
        return CL_PARSE_BAD;
    *out = s->element[1];
    return CL_PARSE_OK;
}

int cl_compacted_oldest(const redisReply *r, struct cl_wid *oldest)
{
    static const char key[] = "oldest=";
    if (r->type != REDIS_REPLY_ERROR)
        return -1;
    const char *p = strstr(r->str, key);
    if (!p)
        return -1;
    p += sizeof(key) - 1;
    size_t n = 0;
    while (p[n] && ((p[n] >= '0' && p[n] <= '9') || p[n] == '-'))
        n++;
    return cl_wid_parse(p, n, oldest);
}
