/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_watch — libFuzzer target for the event history behind XREAD (src/server/watch/watch.c) and
 * its id and stream-name parsers, the parts of XREAD that read bytes from the network.
 *
 * Input: a program of one-byte opcodes with operands, run against a tiny ring (bounds chosen
 * by the first bytes, so eviction by count and by bytes both happen):
 *   add N events of random types/names at the next revision (or a revision that does not
 *   move forward: watch_add must then keep ids increasing), forget up to a revision, parse an
 *   id, parse a stream name. Checks (any failure traps), after every step:
 *   - ids strictly increase from oldest to newest, n <= max_n, bytes <= max_bytes;
 *   - every entry's id is > floor, and floor <= last;
 *   - watch_after(after) is the first position whose id is > after (checked by a linear scan),
 *     and watch_check refuses exactly the ids below the floor (0-0 always allowed);
 *   - watch_render of every entry writes something, and watch_match of the whole stream holds;
 *   - the name index passes watch_audit, and a prefix read (watch_iter by the ring, by the
 *     index and by the automatic choice, after an id, at most a count) and watch_span (XLEN,
 *     XINFO's first and last) give what a linear scan of the ring gives;
 *   - an id that parses formats back to a string that parses to the same id; a stream name
 *     that parses as a prefix stream has its prefix inside the input.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/watch/watch.h"

struct in {
    const uint8_t *p;
    size_t n;
};

static uint8_t take(struct in *in)
{
    if (!in->n)
        return 0;
    in->n--;
    return *in->p++;
}

static void check_ring(const struct watch *w)
{
    if (w->n > w->max_n || w->bytes > w->max_bytes || watch_id_cmp(w->floor, w->last) > 0)
        __builtin_trap();
    struct buf b;
    buf_init(&b);
    for (size_t i = 0; i < w->n; i++) {
        const struct watch_entry *e = watch_at(w, i);
        if (watch_id_cmp(e->id, w->floor) <= 0 || watch_id_cmp(e->id, w->last) > 0)
            __builtin_trap();
        if (i && watch_id_cmp(watch_at(w, i - 1)->id, e->id) >= 0)
            __builtin_trap();
        if (!watch_match(e, true, NULL, 0))
            __builtin_trap();
        size_t before = b.len;
        watch_render(&b, e);
        if (b.len == before && !b.err)
            __builtin_trap();
    }
    buf_free(&b);
}

static void check_after(const struct watch *w, struct watch_id after)
{
    size_t want = 0;
    while (want < w->n && watch_id_cmp(watch_at(w, want)->id, after) <= 0)
        want++;
    if (watch_after(w, after) != want)
        __builtin_trap();
    bool zero = after.rev == 0 && after.n == 0;
    if ((watch_check(w, after) == 0) != (zero || watch_id_cmp(after, w->floor) >= 0))
        __builtin_trap();
}

/* The index against the linear reference, for a prefix of the fuzzer's names. */
static void check_index(struct watch *w, struct in *in, struct watch_id after)
{
    static const char names[] = "abcabdzz";
    char why[128];
    if (watch_audit(w, why, sizeof(why)))
        __builtin_trap();
    uint8_t q = take(in);
    bool all = (q & 7) == 7;
    const char *p = names + (q >> 3) % 4;
    size_t plen = all ? 0 : (size_t)(q >> 5) % 4, max = 1 + take(in) % 8;
    const struct watch_entry *want[8];
    size_t k = 0, n = 0;
    const struct watch_entry *first = NULL, *last = NULL;
    for (size_t i = 0; i < w->n; i++) {
        const struct watch_entry *e = watch_at(w, i);
        if (!watch_match(e, all, p, plen))
            continue;
        first = first ? first : e;
        last = e;
        n++;
        if (k < max && watch_id_cmp(e->id, after) > 0)
            want[k++] = e;
    }
    struct watch_span sp;
    watch_span(w, all, p, plen, &sp);
    if (sp.n != n || sp.first != first || sp.last != last)
        __builtin_trap();
    for (int how = WATCH_AUTO; how <= WATCH_INDEX; how++) {
        struct watch_iter it;
        watch_iter_start(&it, w, all, p, plen, after, (enum watch_how)how);
        size_t got = 0;
        const struct watch_entry *e;
        while (got < max && (e = watch_iter_next(&it)) != NULL)
            if (got >= k || e != want[got++])
                __builtin_trap();
        if (got != k)
            __builtin_trap();
        watch_iter_end(&it);
    }
}

static void add(struct watch *w, struct in *in, uint64_t *rev)
{
    static const char names[] = "abcabdzz";
    uint8_t k = take(in);
    struct fsm_events ev;
    fsm_events_init(&ev);
    size_t n = k & 7u;
    ev.ev = calloc(8, sizeof(*ev.ev));
    if (!ev.ev)
        return;
    ev.cap = 8;
    for (size_t i = 0; i < n; i++) {
        uint8_t t = take(in), m = take(in);
        struct fsm_event e = {.type = (uint8_t)(1 + t % 11),
                              .expired = t & 0x80,
                              .sid = m & 3u,
                              .token = *rev,
                              .ms = m};
        size_t nl = (size_t)(m >> 5);
        e.name.p = names;
        e.name.len = (uint32_t)(nl > sizeof names - 1 ? sizeof names - 1 : nl);
        if (e.type == FSM_EV_KEY_PUT) {
            e.value.p = names;
            e.value.len = (uint32_t)(m & 7u);
        }
        ev.ev[ev.n++] = e;
    }
    ev.lost = (k & 0x40) != 0;
    *rev += (k & 0x80) ? 0 : 1; /* a revision that does not move: ids must still increase */
    watch_add(w, *rev, &ev);
    fsm_events_free(&ev);
}

static struct watch_id any_id(struct in *in, uint64_t rev)
{
    uint8_t a = take(in), b = take(in);
    struct watch_id id = {(a & 0x80) ? rev - (a & 0x7f) % (rev + 1) : a, b};
    if (b == 0xff)
        id.n = UINT64_MAX;
    return id;
}

static void parse_id(struct in *in)
{
    size_t len = take(in) % 48;
    len = len > in->n ? in->n : len;
    struct watch_id id, again;
    if (watch_id_parse((const char *)in->p, len, &id) == 0) {
        char out[WATCH_ID_BUF];
        int n = watch_id_format(id, out);
        if (n <= 0 || n >= WATCH_ID_BUF || (size_t)n != strlen(out) ||
            watch_id_parse(out, (size_t)n, &again) != 0 || watch_id_cmp(id, again) != 0)
            __builtin_trap();
    }
    in->p += len;
    in->n -= len;
}

static void parse_stream(struct in *in)
{
    size_t len = take(in) % 64;
    len = len > in->n ? in->n : len;
    const char *p = (const char *)in->p, *prefix = NULL;
    size_t plen = 0;
    bool all = false;
    if (watch_stream_parse(p, len, &all, &prefix, &plen) == 0 && !all &&
        (prefix < p || prefix + plen > p + len))
        __builtin_trap();
    in->p += len;
    in->n -= len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct in in = {data, size};
    size_t max_n = 1 + take(&in) % 16, max_bytes = 64 + (size_t)take(&in) * 8;
    struct watch w;
    watch_init(&w, max_n, max_bytes, take(&in) % 8);
    uint64_t rev = 1;
    for (int steps = 0; in.n && steps < 256; steps++) {
        switch (take(&in) % 5) {
        case 0:
        case 1:
            add(&w, &in, &rev);
            break;
        case 2:
            watch_forget(&w, any_id(&in, rev).rev);
            break;
        case 3:
            parse_id(&in);
            break;
        default:
            parse_stream(&in);
            break;
        }
        check_ring(&w);
        check_after(&w, any_id(&in, rev));
        check_index(&w, &in, any_id(&in, rev));
    }
    watch_free(&w);
    return 0;
}
