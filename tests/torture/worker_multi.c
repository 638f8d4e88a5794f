/* SPDX-License-Identifier: Apache-2.0 */
/*
 * worker_multi.c: the torture workload "multilock": LOCK.MULTI over a pool of four names, each
 * request a random set of two to four of them (some shared), by sessions that are sometimes
 * frozen past their TTL; workers ask for overlapping sets in random orders.
 *
 * Per session (ops carry "session"):
 *   acquire  invoke "names" (as asked) and "modes" (exclusive|shared each); ok "tokens" (one
 *            per name, in that order). fl_lock_multi: an unknown outcome is followed by UNLOCK
 *            of every name, and ends the session.
 *   write    per exclusive name: PUT ml-reg/<name> "m:<token>:<n>" FENCE <name> token with no
 *            session (a naive client that does not check its lease); "key" the key written
 *            (ml-reg/<name>: as in every workload's writes, which the watch checker reads as
 *            PUTs of that key), "name" the lock, "token", "mode"; ok "rev", or fail (-STALE).
 *            Now and then a shared name's token tries the same: it must be refused.
 *   release  fl_unlock_multi (every name); expire: the session's end (end_lock_session),
 *            complete when linearizable LOCK.INFOs show the session on none of the names.
 * The checker (checkers_holds.check_multilock) judges each name alone: no exclusive hold of a
 * name shares an instant with another hold of it, tokens rise per name, and the fenced writes
 * of a name only ever accept its current exclusive holder's token.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "worker.h"

#define ML_N 4
static const char *const ML_NAMES[ML_N] = {"ml/a", "ml/b", "ml/c", "ml/d"};

/* Is sid on none of the pool's names (no hold, no wait), by linearizable reads? */
static int ml_gone(struct worker *w, const char *unused, uint64_t sid)
{
    (void)unused;
    for (int i = 0; i < ML_N; i++) {
        struct fl_lock_info li;
        fl_err e = fl_lock_info(w->c, ML_NAMES[i], &li);
        if (e == FL_ENOTFOUND)
            continue;
        if (e != FL_OK)
            return 0;
        int on = 0;
        for (size_t k = 0; k < li.n_holders; k++)
            on |= li.holders[k].sid == sid;
        for (size_t k = 0; k < li.n_waiters; k++)
            on |= li.waiters[k] == sid;
        fl_lock_info_free(&li);
        if (on)
            return 0;
    }
    return 1;
}

/* ,"names":[...],"modes":[...] */
static void ev_names(struct ev *e, const char *const *names, const uint8_t *shared, size_t n)
{
    ev_add(e, ",\"names\":[");
    for (size_t i = 0; i < n; i++)
        ev_add(e, "%s\"%s\"", i ? "," : "", names[i]);
    ev_add(e, "],\"modes\":[");
    for (size_t i = 0; i < n; i++)
        ev_add(e, "%s\"%s\"", i ? "," : "", shared[i] ? "shared" : "exclusive");
    ev_add(e, "]");
}

static int ml_acquire(struct worker *w, const char *const *names, const uint8_t *shared, size_t n,
                      uint64_t *tokens, const char **outcome)
{
    int proc = proc_of(w);
    uint64_t sid = fl_session_id(w->s);
    struct ev e;
    note_safe(w);
    ev_begin(&e, w, proc, "invoke", "acquire", now_ns());
    ev_add(&e, ",\"session\":%" PRIu64, sid);
    ev_names(&e, names, shared, n);
    ev_emit(w, &e);
    w->ops++;
    fl_err err = fl_lock_multi(w->s, n, names, shared, 300 + rnd(w, 2000), tokens);
    const char *type = err == FL_OK ? "ok" : err == FL_ETIMEOUT ? "fail" : "info";
    ev_begin(&e, w, proc, type, "acquire", now_ns());
    ev_add(&e, ",\"session\":%" PRIu64, sid);
    ev_names(&e, names, shared, n);
    if (err == FL_OK) {
        ev_add(&e, ",\"tokens\":[");
        for (size_t i = 0; i < n; i++)
            ev_add(&e, "%s%" PRIu64, i ? "," : "", tokens[i]);
        ev_add(&e, "]");
    } else {
        ev_error(&e, w, err);
    }
    ev_complete(w, &e, type);
    *outcome = type;
    return err == FL_OK;
}

/* A fenced PUT of ml-reg/<name> with the name's token and no session. */
static void ml_write(struct worker *w, const char *name, int shared, uint64_t token)
{
    int proc = proc_of(w);
    uint64_t sid = fl_session_id(w->s);
    char key[32], val[64];
    snprintf(key, sizeof(key), "ml-reg/%s", name);
    snprintf(val, sizeof(val), "m:%" PRIu64 ":%ld", token, ++w->uniq);
    struct fl_write_opts fence = {.fence_name = name, .fence_token = token};
    const char *mode = shared ? "shared" : "exclusive";
    struct ev e;
    ev_begin(&e, w, proc, "invoke", "write", now_ns());
    ev_add(&e,
           ",\"key\":\"%s\",\"name\":\"%s\",\"session\":%" PRIu64
           ",\"mode\":\"%s\",\"token\":%" PRIu64,
           key, name, sid, mode, token);
    ev_str(&e, "value", val);
    ev_emit(w, &e);
    w->ops++;
    uint64_t rev = 0;
    fl_err err = fl_put(w->c, NULL, key, val, strlen(val), &fence, &rev);
    const char *type = write_outcome(err, FL_ESTALE);
    ev_begin(&e, w, proc, type, "write", now_ns());
    ev_add(&e,
           ",\"key\":\"%s\",\"name\":\"%s\",\"session\":%" PRIu64
           ",\"mode\":\"%s\",\"token\":%" PRIu64,
           key, name, sid, mode, token);
    ev_str(&e, "value", val);
    if (err == FL_OK)
        ev_add(&e, ",\"rev\":%" PRIu64, rev);
    else
        ev_error(&e, w, err);
    ev_complete(w, &e, type);
}

static const char *ml_release(struct worker *w, const char *const *names, size_t n)
{
    int proc = proc_of(w);
    uint64_t sid = fl_session_id(w->s);
    struct ev e;
    ev_begin(&e, w, proc, "invoke", "release", now_ns());
    ev_add(&e, ",\"session\":%" PRIu64, sid);
    ev_emit(w, &e);
    w->ops++;
    fl_err err = fl_unlock_multi(w->s, n, names);
    const char *type = err == FL_OK ? "ok" : "info";
    ev_begin(&e, w, proc, type, "release", now_ns());
    ev_add(&e, ",\"session\":%" PRIu64, sid);
    if (err != FL_OK)
        ev_error(&e, w, err);
    ev_complete(w, &e, type);
    return type;
}

void op_multi(struct worker *w)
{
    if (!ensure_session(w))
        return;
    const char *names[ML_N];
    uint8_t shared[ML_N];
    int order[ML_N] = {0, 1, 2, 3};
    for (int i = ML_N - 1; i > 0; i--) { /* a random order: no client-side sorting */
        int j = (int)rnd(w, (uint64_t)i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    size_t n = 2 + (size_t)rnd(w, ML_N - 1);
    for (size_t i = 0; i < n; i++) {
        names[i] = ML_NAMES[order[i]];
        shared[i] = rnd(w, 10) < 3;
    }
    uint64_t tokens[ML_N];
    const char *outcome;
    if (!ml_acquire(w, names, shared, n, tokens, &outcome)) {
        if (!strcmp(outcome, "info") || fl_session_is_lost(w->s))
            end_lock_session(w, "ml", ml_gone);
        return;
    }
    hold_pause(w);
    for (size_t i = 0; i < n; i++)
        if (!shared[i] || rnd(w, 4) == 0)
            ml_write(w, names[i], shared[i], tokens[i]);
    gc_pause((int64_t)rnd(w, 20));
    note_safe(w);
    if (fl_session_is_lost(w->s)) {
        end_lock_session(w, "ml", ml_gone);
        return;
    }
    if (!strcmp(ml_release(w, names, n), "info"))
        end_lock_session(w, "ml", ml_gone);
}
