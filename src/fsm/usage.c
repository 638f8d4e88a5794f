/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/usage.c — usage by session owner: the sessions a user owns, the waits queued by them,
 * and their bytes (the --max-data-bytes measure: a record each, plus session names). The server's
 * per-user quotas (src/server/cmd/quota.c) read it.
 *
 * A derived index, not state of its own: it changes only where sessions are linked and
 * unlinked (fsm_sess_insert / sess_unlink) and waits linked to and removed from a session
 * (fsm_waiter_link_sess / fsm_waiter_remove), which every replica does identically, and restore
 * rebuilds it through the same calls. So every node (and a new leader) holds the same numbers
 * without a byte in the log or the snapshot. Owns the `uses` array (freed by fsm_free_state).
 * Sessions without an owner (no --acl-file) are not counted. If the array cannot grow (out of
 * memory) that owner is not counted (per-user quotas then undercount; the global ones hold).
 */
#include <stdlib.h>
#include <string.h>

#include "fsm/internal.h"

#define USES_MIN 8

static struct fsm_use *use_find(const struct fsm *f, const char *name, size_t len)
{
    for (uint32_t i = 0; i < f->n_uses; i++)
        if (f->uses[i].len == len && memcmp(f->uses[i].name, name, len) == 0)
            return &f->uses[i];
    return NULL;
}

static struct fsm_use *use_get(struct fsm *f, const char *name, size_t len)
{
    struct fsm_use *u = use_find(f, name, len);
    if (u || len > FSM_MAX_USER)
        return u;
    if (f->n_uses == f->cap_uses) {
        uint32_t cap = f->cap_uses ? f->cap_uses * 2 : USES_MIN;
        struct fsm_use *p = realloc(f->uses, cap * sizeof(*p));
        if (!p)
            return NULL;
        f->uses = p;
        f->cap_uses = cap;
    }
    u = &f->uses[f->n_uses++];
    memset(u, 0, sizeof(*u));
    u->len = (uint8_t)len;
    memcpy(u->name, name, len);
    return u;
}

/* The owner's entry: made when something is linked, only looked up when something is unlinked
 * (an owner whose entry could not be made was never counted). */
static struct fsm_use *use_of(struct fsm *f, const struct sess *s, int sign)
{
    if (!s->owner_len)
        return NULL;
    return sign > 0 ? use_get(f, sess_owner(s), s->owner_len)
                    : use_find(f, sess_owner(s), s->owner_len);
}

void fsm_usage_session(struct fsm *f, const struct sess *s, int sign)
{
    struct fsm_use *u = use_of(f, s, sign);
    if (!u)
        return;
    uint64_t bytes = FSM_RECORD_BYTES + s->name_len;
    u->sessions += sign > 0 ? 1 : -1ull;
    u->bytes += sign > 0 ? bytes : -bytes;
}

void fsm_usage_wait(struct fsm *f, const struct sess *s, const struct waiter *w, int sign)
{
    struct fsm_use *u = use_of(f, s, sign);
    if (!u)
        return;
    uint64_t bytes = FSM_RECORD_BYTES; /* a campaign's value may be set after the link */
    (void)w;
    u->waiters += sign > 0 ? 1 : -1ull;
    u->bytes += sign > 0 ? bytes : -bytes;
}

void fsm_owner_usage(const struct fsm *f, const char *owner, size_t len,
                     struct fsm_owner_usage *out)
{
    const struct fsm_use *u = use_find(f, owner, len);
    memset(out, 0, sizeof(*out));
    if (u) {
        out->sessions = u->sessions;
        out->waiters = u->waiters;
        out->bytes = u->bytes;
    }
}

void fsm_foreach_owner(const struct fsm *f,
                       void (*cb)(void *arg, const char *owner, size_t len,
                                  const struct fsm_owner_usage *u),
                       void *arg)
{
    for (uint32_t i = 0; i < f->n_uses; i++) {
        struct fsm_owner_usage v = {f->uses[i].sessions, f->uses[i].waiters, f->uses[i].bytes};
        cb(arg, f->uses[i].name, f->uses[i].len, &v);
    }
}
