/* SPDX-License-Identifier: Apache-2.0 */
/*
 * worker_deadlock.c: the torture workload "deadlock": sessions that take two of three locks
 * "dl/0".."dl/2" in random order, so that their waits close cycles often; the servers must
 * refuse each closing wait with -DEADLOCK (FL_EDEADLOCK) and nothing else.
 *
 * Per session (ops carry "session": sid and "key": the lock):
 *   lock    fl_lock(name, WAIT 2-3 s): ok "token"; fail "error" deadlock (the message names
 *           the cycle) or timeout; info when the outcome is unknown (the session is then closed,
 *           which ends whatever it held or waited for).
 *   unlock  after a short hold, both locks in the order taken (a refused or timed-out second
 *           one is not held: only the first is released).
 * The judge is the event stream (checkers_deadlock.py): the history says which requests were
 * refused, the stream in log order says what was held and queued at each revision.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "worker.h"

#define DL_LOCKS 3

/* One LOCK with its history lines; 1 if granted. */
static int dl_lock(struct worker *w, const char *name, const char **outcome)
{
    int proc = proc_of(w);
    uint64_t sid = fl_session_id(w->s), token = 0;
    struct ev e;
    ev_begin(&e, w, proc, "invoke", "lock", now_ns());
    ev_str(&e, "key", name);
    ev_add(&e, ",\"session\":%" PRIu64, sid);
    ev_emit(w, &e);
    w->ops++;
    fl_err err = fl_lock(w->s, name, 2000 + rnd(w, 1000), &token);
    const char *type = err == FL_OK                                ? "ok"
                       : err == FL_EDEADLOCK || err == FL_ETIMEOUT ? "fail"
                                                                   : "info";
    ev_begin(&e, w, proc, type, "lock", now_ns());
    ev_str(&e, "key", name);
    ev_add(&e, ",\"session\":%" PRIu64, sid);
    if (err == FL_OK)
        ev_add(&e, ",\"token\":%" PRIu64, token);
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
    char a[16], b[16];
    int i = (int)rnd(w, DL_LOCKS), j = (i + 1 + (int)rnd(w, DL_LOCKS - 1)) % DL_LOCKS;
    snprintf(a, sizeof(a), "dl/%d", i);
    snprintf(b, sizeof(b), "dl/%d", j);
    const char *outcome;
    if (!dl_lock(w, a, &outcome)) {
        if (!strcmp(outcome, "info"))
            dl_reset(w);
        return;
    }
    int both = dl_lock(w, b, &outcome);
    if (!strcmp(outcome, "info")) {
        dl_reset(w);
        return;
    }
    sleep_ms((int64_t)rnd(w, 30));
    if (both)
        dl_unlock(w, b);
    dl_unlock(w, a);
}
