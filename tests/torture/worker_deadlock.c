/* SPDX-License-Identifier: Apache-2.0 */
/*
 * worker_deadlock.c: the torture workload "deadlock": sessions that take two or three of three
 * locks "dl/0".."dl/2" in random order, so that their waits close cycles often; the servers
 * must refuse each closing wait with -DEADLOCK (FL_EDEADLOCK) and nothing else. One op takes,
 * in equal shares: a then b (fl_lock each); a, then b and c in one LOCK.MULTI (a multi-request
 * that holds and waits: its wait for both closes cycles through either name); a and b in one
 * LOCK.MULTI, then c (a queued multi-request is part of the cycles others close).
 *
 * Per session (ops carry "session": sid and "key": the lock, or the names "n1,n2"):
 *   lock        fl_lock(name, WAIT 2-3 s): ok "token"; fail "error" deadlock (the message names
 *               the cycle) or timeout; info when the outcome is unknown (the session is then
 *               closed, which ends whatever it held or waited for).
 *   lock-multi  fl_lock_multi(names, exclusive, WAIT 2-3 s): as lock ("tokens" on ok).
 *   unlock      after a short hold, every lock held, in the reverse order taken (a refused or
 *               timed-out request holds nothing: only what came before it is released).
 * The judge is the event stream (checkers_deadlock.py): the history says which requests were
 * refused, the stream in log order says what was held and queued at each revision.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "worker.h"

#define DL_LOCKS 3

/* One LOCK (n == 1) or LOCK.MULTI of names[0..n) with its history lines; 1 if granted. */
static int dl_lock(struct worker *w, const char *const *names, size_t n, const char **outcome)
{
    int proc = proc_of(w);
    uint64_t sid = fl_session_id(w->s), tokens[DL_LOCKS] = {0};
    const char *f = n == 1 ? "lock" : "lock-multi";
    char key[64];
    snprintf(key, sizeof(key), "%s%s%s", names[0], n > 1 ? "," : "", n > 1 ? names[1] : "");
    struct ev e;
    ev_begin(&e, w, proc, "invoke", f, now_ns());
    ev_str(&e, "key", key);
    ev_add(&e, ",\"session\":%" PRIu64, sid);
    ev_emit(w, &e);
    w->ops++;
    uint64_t wait_ms = 2000 + rnd(w, 1000);
    fl_err err = n == 1 ? fl_lock(w->s, names[0], wait_ms, &tokens[0])
                        : fl_lock_multi(w->s, n, names, NULL, wait_ms, tokens);
    const char *type = err == FL_OK                                ? "ok"
                       : err == FL_EDEADLOCK || err == FL_ETIMEOUT ? "fail"
                                                                   : "info";
    ev_begin(&e, w, proc, type, f, now_ns());
    ev_str(&e, "key", key);
    ev_add(&e, ",\"session\":%" PRIu64, sid);
    if (err == FL_OK && n == 1)
        ev_add(&e, ",\"token\":%" PRIu64, tokens[0]);
    else if (err == FL_OK)
        ev_add(&e, ",\"tokens\":[%" PRIu64 ",%" PRIu64 "]", tokens[0], tokens[1]);
    else
        ev_error(&e, w, err);
    ev_complete(w, &e, type);
    *outcome = type;
    return err == FL_OK;
}

static void dl_unlock(struct worker *w, const char *name)
{
    int proc = proc_of(w);
    uint64_t sid = fl_session_id(w->s);
    struct ev e;
    ev_begin(&e, w, proc, "invoke", "unlock", now_ns());
    ev_str(&e, "key", name);
    ev_add(&e, ",\"session\":%" PRIu64, sid);
    ev_emit(w, &e);
    w->ops++;
    fl_err err = fl_unlock(w->s, name);
    const char *type = write_outcome(err, FL_ENOTHOLDER);
    ev_begin(&e, w, proc, type, "unlock", now_ns());
    ev_str(&e, "key", name);
    ev_add(&e, ",\"session\":%" PRIu64, sid);
    if (err != FL_OK)
        ev_error(&e, w, err);
    ev_complete(w, &e, type);
}

/* An unknown outcome: close the session (its holds and waits end with it) and start anew. */
static void dl_reset(struct worker *w)
{
    fl_session_close(w->s);
    w->s = NULL;
}

void op_deadlock(struct worker *w)
{
    if (!ensure_session(w))
        return;
    char nm[DL_LOCKS][16];
    const char *p[DL_LOCKS]; /* the locks in the order taken */
    int i = (int)rnd(w, DL_LOCKS), j = (i + 1 + (int)rnd(w, DL_LOCKS - 1)) % DL_LOCKS;
    int order[DL_LOCKS] = {i, j, DL_LOCKS - i - j}; /* 0 + 1 + 2 */
    for (int k = 0; k < DL_LOCKS; k++) {
        snprintf(nm[k], sizeof(nm[k]), "dl/%d", order[k]);
        p[k] = nm[k];
    }
    /* the requests: {a} {b}; {a} {b c}; {a b} {c} */
    int shape = (int)rnd(w, 3);
    size_t first = shape == 2 ? 2 : 1, second = shape == 0 ? 1 : 3 - first;
    const char *outcome;
    if (!dl_lock(w, p, first, &outcome)) {
        if (!strcmp(outcome, "info"))
            dl_reset(w);
        return;
    }
    size_t held = first;
    if (dl_lock(w, p + first, second, &outcome))
        held += second;
    if (!strcmp(outcome, "info")) {
        dl_reset(w);
        return;
    }
    sleep_ms((int64_t)rnd(w, 30));
    while (held > 0)
        dl_unlock(w, p[--held]);
}
