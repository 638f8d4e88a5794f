/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/counter.c — INCR: a key used as a signed 64-bit counter.
 *
 * Owns no state of its own: a counter is an ordinary key (kv.c) whose value is the canonical
 * decimal text of an int64_t ("-?[1-9][0-9]*" or "0", at most FSM_COUNTER_DIGITS bytes), so GET,
 * KV.GET, watches and snapshots read it as any value. An absent key counts as 0 and is created
 * (unleased); an existing key keeps its lease, as an overwrite by PUT without LEASE would not.
 * Refused, changing nothing: a value that is not that text (a counter is never reinterpreted:
 * "007" or " 7" could be someone else's data), a result outside int64_t, a failed FENCE or
 * IFREV. Check order as PUT's: FENCE, IFREV, then the value.
 */
#include <stdlib.h>

#include "fsm/internal.h"

char *fsm_counter_text(int64_t v, uint32_t *len)
{
    char rev[FSM_COUNTER_DIGITS], *p = malloc(FSM_COUNTER_DIGITS);
    size_t n = 0, o = 0;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v; /* INT64_MIN's magnitude fits u64 */
    if (!p)
        return NULL;
    do {
        rev[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        p[o++] = '-';
    while (n)
        p[o++] = rev[--n];
    *len = (uint32_t)o;
    return p;
}

int fsm_counter_parse(const char *p, size_t n, int64_t *out)
{
    size_t i = 0;
    bool neg = n > 0 && p[0] == '-';
    i = neg ? 1 : 0;
    if (n == i || n > FSM_COUNTER_DIGITS || (p[i] == '0' && (n > i + 1 || neg)))
        return -1; /* empty, too long, a leading zero, "-0" */
    uint64_t u = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        unsigned d = (unsigned)(p[i] - '0');
        if (u > (lim - d) / 10)
            return -1;
        u = u * 10 + d;
    }
    *out = neg ? (int64_t)(0 - u) : (int64_t)u; /* 0 - 2^63 wraps to INT64_MIN (modular) */
    return 0;
}

void fsm_op_incr(struct actx *a, const struct fsm_cmd_incr *c, struct fsm_reply *r)
{
    struct kv *k = fsm_kv_find(a->f, c->key.p, c->key.len);
    if (fsm_kv_fence_fails(a, &c->cond, r) || fsm_kv_ifrev_fails(&c->cond, k, r))
        return;
    int64_t old = 0, by = (int64_t)c->by, now;
    char nm[FSM_NAME_SHOWN];
    if (k && fsm_counter_parse(k->value ? k->value : "", k->value_len, &old)) {
        fsm_reply_err(r, PROTO_ERR " value of key %s is not a signed 64-bit decimal integer",
                      fsm_printable(c->key.p, c->key.len, nm, sizeof(nm)));
        return;
    }
    if (__builtin_add_overflow(old, by, &now)) {
        fsm_reply_err(r, PROTO_ERR " increment would overflow: key %s is %lld, BY %lld",
                      fsm_printable(c->key.p, c->key.len, nm, sizeof(nm)), (long long)old,
                      (long long)by);
        return;
    }
    uint32_t len;
    char *val = fsm_counter_text(now, &len);
    if (!val) {
        fsm_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    if (!fsm_kv_set_value(a, k, c->key, val, len, false, NULL)) { /* keeps its lease */
        fsm_reply_err(r, PROTO_ERR " out of memory");
        return;
    }
    r->kind = FSM_REPLY_INT;
    r->value = (uint64_t)now;
}
