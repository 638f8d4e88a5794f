/* SPDX-License-Identifier: Apache-2.0 */
/*
 * watch — the event history behind XREAD (cmd_watch.c): a bounded ring of the FSM's events in
 * log order, each with a stream id "<rev>-<n>" (rev: the revision the command that produced it
 * ended at, n: its place among that command's events), plus the id parser, the stream-name
 * parser (fencelock:events, fencelock:events:<prefix>) and the rendering of one entry in
 * Redis's stream-entry shape. Pure: no clock, no I/O, no server state; unit-tested alone.
 *
 * Owns (struct watch): every entry (one malloc each: the record, its name, and its value when
 * that is at most value_max bytes; a longer value keeps only its length). Entries handed out by
 * watch_at are borrowed, valid until the next watch_add / watch_forget / watch_free.
 *
 * Invariants:
 *   - ids strictly increase from the oldest entry to the newest; `last` is the newest id ever
 *     assigned (also when the entry was dropped);
 *   - `floor`: every event with id <= floor may be gone (evicted by the count or byte bound,
 *     lost to an allocation failure, or from before a snapshot this node restored); every
 *     event with id > floor is in the ring. So reading after an id >= floor is gap-free, and
 *     after an id < floor is refused (-COMPACTED), never answered with a silent gap;
 *   - n <= max_n and bytes <= max_bytes after every call.
 *
 * The name index (a prefix stream's reads must not scan other tenants' history):
 * every entry also has a sequence number `seq` (ids' order: ring position i holds seq
 * next_seq - n + i), and every entry with a name (not the session events) is a node of a treap
 * ordered by (name, seq), with its subtree's size and smallest / largest seq. The names under a
 * prefix are one contiguous range of that order, so:
 *   - XLEN / XINFO of a prefix stream (watch_span): one walk down the range's two edges,
 *     O(log n) nodes: the count is the sum of the sizes, the first / last entries the min / max
 *     seq of the subtrees inside the range;
 *   - XREAD of a prefix stream after an id (watch_iter): the first entry after the id of each
 *     name under the prefix that has one (a subtree whose largest seq is older is skipped
 *     whole), merged in id order with a heap, each name's next entry found when its previous
 *     one is taken: O((d + k) log n) for k entries returned from d names; or, when the ring's
 *     tail after the id is no longer than the prefix's own entries, a walk of that tail. Either
 *     way a read costs O(log n) plus at most the prefix's own retained entries, whatever the
 *     rest of the history holds.
 * Entries enter the index when added and leave it when evicted (O(log n) each). The index lives
 * in the entries (struct watch_entry's seq, l, r, lo, hi, size, prio: 48 bytes on 64-bit), so
 * entry_bytes and --event-history-bytes count it. Treap priorities come from a generator
 * seeded by watch_seed (the server: random bytes), so no client can choose names that make the
 * tree deep. watch_audit checks all of it (tests, fuzz).
 *
 * Event kinds are one table (watch.c `kinds`): the wire name, which fields an entry carries, and
 * which FSM event (and flag) produces it. A new primitive's events are a new FSM event type and
 * a row there, nothing else.
 */
#ifndef FENCELOCK_WATCH_H
#define FENCELOCK_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "fsm/fsm.h"

/* The stream names. A prefix stream is WATCH_STREAM ":" prefix. */
#define WATCH_STREAM "fencelock:events"

struct watch_id {
    uint64_t rev, n;
};

struct watch_entry {
    struct watch_id id;
    uint8_t kind;   /* index into watch.c's kinds table */
    uint8_t object; /* enum fsm_kind of the named object (0: a lock, or no object) */
    bool value_kept;
    uint64_t sid, token, ms;
    uint32_t name_len, value_len;
    uint16_t by_len; /* revoke-requested: who asked (its bytes follow the reason's) */
    bool traced;     /* the event's traceparent (fsm_event's): TRACE_BIN_LEN bytes at the end of
                        data, rendered as the field `traceparent` */
    /* the name index (named entries only): key (name, seq); lo / hi: the smallest / largest seq
     * in this subtree; size: its nodes; prio: the treap's heap order (parent >= children) */
    uint64_t seq;
    struct watch_entry *l, *r;
    uint64_t lo, hi;
    uint32_t size, prio;
    char data[]; /* name, then the value when value_kept (revoke-requested: the reason, always
                    kept, then by_len bytes of who asked), then the traceparent if traced */
};

struct watch {
    struct watch_entry **ring;
    size_t cap, head, n; /* ring[head] is the oldest of n entries */
    size_t bytes;        /* what the entries take, counted against max_bytes */
    size_t max_n, max_bytes, value_max;
    struct watch_id last, floor;
    uint64_t dropped;         /* entries evicted or lost (a metric) */
    uint64_t scanned;         /* history entries and index nodes examined by reads (a metric) */
    struct watch_entry *root; /* the name index */
    uint64_t next_seq;        /* the seq the next entry gets (the first is 1) */
    uint64_t rng;             /* treap priorities (xorshift64; never 0) */
};

void watch_init(struct watch *w, size_t max_n, size_t max_bytes, size_t value_max);
void watch_free(struct watch *w);
/* Seed the index's priorities (before the first watch_add; watch_init sets a fixed seed). */
void watch_seed(struct watch *w, uint64_t seed);

/* Record the events of one applied command that ended at revision `rev`. Events that do not
 * change state (a rejected fence) are skipped. If one cannot be stored (out of memory), or
 * the FSM lost one (ev->lost), the floor moves past it: readers get -COMPACTED, not a gap. */
void watch_add(struct watch *w, uint64_t rev, const struct fsm_events *ev);

/* The state was replaced by a snapshot at revision `rev`: nothing before it is known. Drops
 * the ring and moves the floor (and `last`, if behind) to the end of revision `rev`. */
void watch_forget(struct watch *w, uint64_t rev);

/* The id as Redis writes it, "<rev>-<n>", NUL-terminated; returns its length. */
#define WATCH_ID_BUF 42
int watch_id_format(struct watch_id id, char *out);
/* "<rev>-<n>" or "<rev>" (n = 0, as Redis reads an XREAD id); 0 or -1. "$" is the caller's. */
int watch_id_parse(const char *p, size_t len, struct watch_id *id);
int watch_id_cmp(struct watch_id a, struct watch_id b);

/* A stream name: 0, with `all` set for WATCH_STREAM itself and the prefix (borrowing `p`) of a
 * prefix stream; -1 if it is not one of ours. */
int watch_stream_parse(const char *p, size_t len, bool *all, const char **prefix, size_t *plen);

/* Reading after `after` is gap-free (0), or the history it needs is gone (-1). The id 0-0
 * means "from the oldest retained" and is always allowed. */
int watch_check(const struct watch *w, struct watch_id after);
/* The oldest id a reader can still get: the oldest entry's, or the first id after the floor
 * when the ring is empty. */
struct watch_id watch_oldest(const struct watch *w);

/* Position (0 = oldest) of the first entry with id > after; n if none. O(log n). */
size_t watch_after(const struct watch *w, struct watch_id after);
/* Entry at position i (0 = oldest), i < n. Borrowed. */
const struct watch_entry *watch_at(const struct watch *w, size_t i);

/* Whether an entry belongs to a stream: every entry for the whole stream, entries whose name
 * starts with the prefix for a prefix stream (session events have no name). */
bool watch_match(const struct watch_entry *e, bool all, const char *prefix, size_t plen);

/* Whether an entry has a name (is in the name index, can match a prefix stream). */
bool watch_named(const struct watch_entry *e);

/* Which names an entry's name is among, for a reader that may see only some of them (the HTTP
 * event stream of a user with keys= / locks= globs, http_events.c): a key (put, del,
 * expire-key), a lock name (every other named kind: locks, semaphores, elections, latches and
 * barriers share one name space), or no name (the session events). */
enum watch_ns { WATCH_NS_NONE, WATCH_NS_KEY, WATCH_NS_LOCK };
enum watch_ns watch_entry_ns(const struct watch_entry *e);

/* A stream's retained entries: how many, the oldest and the newest (NULL when none). The whole
 * stream from the ring (O(1)), a prefix stream from the index (O(log n)). */
struct watch_span {
    size_t n;
    const struct watch_entry *first, *last;
};
void watch_span(struct watch *w, bool all, const char *prefix, size_t plen, struct watch_span *sp);

/* A stream's entries with id > after, in id order (watch_iter_next until NULL). Borrowed, valid
 * until the next watch_add / watch_forget / watch_free. `how`: WATCH_AUTO (the cheaper of the
 * ring's tail and the index, see above), or WATCH_RING / WATCH_INDEX (tests compare them). The
 * index path allocates its merge heap; when that fails it walks the ring (same answer). */
enum watch_how { WATCH_AUTO, WATCH_RING, WATCH_INDEX };
struct watch_iter {
    struct watch *w;
    bool all, index;
    const char *prefix; /* borrowed from the caller */
    size_t plen, pos;   /* pos: the ring walk's next position */
    uint64_t from;      /* the index walk: the smallest seq wanted */
    const struct watch_entry **heap;
    size_t hn, hcap;
};
void watch_iter_start(struct watch_iter *it, struct watch *w, bool all, const char *prefix,
                      size_t plen, struct watch_id after, enum watch_how how);
const struct watch_entry *watch_iter_next(struct watch_iter *it);
void watch_iter_end(struct watch_iter *it);

/* Check the index against the ring: seqs, every named entry in the tree once and nothing else,
 * key order, heap order, sizes, lo / hi. 0, or -1 with the first violation in why. O(n). */
int watch_audit(const struct watch *w, char *why, size_t whylen);

/* Append the entry as Redis writes a stream entry: [id, [field, value, ...]]. */
void watch_render(struct buf *out, const struct watch_entry *e);
/* The same entry as one JSON object {"id", "type", fields...} (the HTTP API's events): the
 * same field names; numbers as JSON numbers. */
struct json;
void watch_render_json(struct json *j, const struct watch_entry *e);

/* The FSM event type (enum fsm_event_type) an entry was recorded from (ELECT.OBSERVE looks for
 * FSM_EV_LEADER / FSM_EV_PROCLAIM). */
uint8_t watch_entry_type(const struct watch_entry *e);

/* The kind's wire name ("put", "grant", ...), for tests and logs. */
const char *watch_kind_name(uint8_t kind);

#endif
