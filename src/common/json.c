/* SPDX-License-Identifier: Apache-2.0 */
/* json.c — see json.h: the writer's state machine; escaping is text.c's. */
#include "common/json.h"

#include <stdio.h>
#include <string.h>

#include "common/text.h"

void json_init(struct json *j, struct buf *out)
{
    memset(j, 0, sizeof(*j));
    j->out = out;
}

void json_write_str(struct buf *out, const char *s, size_t n)
{
    buf_append(out, "\"", 1);
    for (size_t i = 0; i < n;) {
        char step[TEXT_STEP_MAX];
        size_t used, w = text_json_step(s + i, n - i, step, &used);
        buf_append(out, step, w);
        i += used;
    }
    buf_append(out, "\"", 1);
}

/* Before a value: the comma, or the check that a key was written in an object. 0 or -1. */
static int before_value(struct json *j)
{
    if (j->bad)
        return -1;
    if (j->depth == 0) {
        if (j->top) { /* one top-level value only */
            j->bad = true;
            return -1;
        }
        j->top = true;
        return 0;
    }
    unsigned d = j->depth;
    if (j->kind[d - 1] == 'o') {
        if (!j->want_value[d - 1]) {
            j->bad = true;
            return -1;
        }
        j->want_value[d - 1] = false;
        return 0;
    }
    if (j->any[d - 1])
        buf_append(j->out, ",", 1);
    j->any[d - 1] = true;
    return 0;
}

static void open_level(struct json *j, char kind)
{
    if (before_value(j))
        return;
    if (j->depth + 1 >= JSON_MAX_DEPTH) {
        j->bad = true;
        return;
    }
    buf_append(j->out, kind == 'o' ? "{" : "[", 1);
    j->kind[j->depth] = kind;
    j->any[j->depth] = false;
    j->want_value[j->depth] = false;
    j->depth++;
}

void json_obj(struct json *j)
{
    open_level(j, 'o');
}

void json_arr(struct json *j)
{
    open_level(j, 'a');
}

void json_close(struct json *j)
{
    if (j->bad)
        return;
    if (j->depth == 0 || j->want_value[j->depth - 1]) {
        j->bad = true;
        return;
    }
    j->depth--;
    buf_append(j->out, j->kind[j->depth] == 'o' ? "}" : "]", 1);
}

void json_key(struct json *j, const char *key)
{
    if (j->bad)
        return;
    unsigned d = j->depth;
    if (d == 0 || j->kind[d - 1] != 'o' || j->want_value[d - 1]) {
        j->bad = true;
        return;
    }
    if (j->any[d - 1])
        buf_append(j->out, ",", 1);
    j->any[d - 1] = true;
    json_write_str(j->out, key, strlen(key));
    buf_append(j->out, ":", 1);
    j->want_value[d - 1] = true;
}

void json_str(struct json *j, const char *s, size_t n)
{
    if (before_value(j) == 0)
        json_write_str(j->out, s ? s : "", s ? n : 0);
}

void json_cstr(struct json *j, const char *s)
{
    json_str(j, s, s ? strlen(s) : 0);
}

void json_u64(struct json *j, uint64_t v)
{
    if (before_value(j) == 0)
        buf_printf(j->out, "%llu", (unsigned long long)v);
}

void json_bool(struct json *j, bool v)
{
    if (before_value(j) == 0)
        buf_append_str(j->out, v ? "true" : "false");
}

void json_null(struct json *j)
{
    if (before_value(j) == 0)
        buf_append_str(j->out, "null");
}

void json_kv_u64(struct json *j, const char *key, uint64_t v)
{
    json_key(j, key);
    json_u64(j, v);
}

void json_kv_str(struct json *j, const char *key, const char *s, size_t n)
{
    json_key(j, key);
    json_str(j, s, n);
}

void json_kv_cstr(struct json *j, const char *key, const char *s)
{
    json_key(j, key);
    json_cstr(j, s);
}

void json_kv_bool(struct json *j, const char *key, bool v)
{
    json_key(j, key);
    json_bool(j, v);
}

int json_end(const struct json *j)
{
    return j->bad || j->depth != 0 || !j->top || buf_failed(j->out) ? -1 : 0;
}
