/* SPDX-License-Identifier: Apache-2.0 */
/*
 * server/cluster/settings.c — the cluster settings a leader writes into the replicated state.
 *
 * The deadlock search limit decides replies (a search that gives up queues a wait another
 * search would refuse -DEADLOCK), so every replica must use one value: the replicated one, set
 * by DEADLOCK_LIMIT entries (src/fsm/waitgraph.h). --deadlock-search-limit is the value a
 * leader makes the cluster's: a ready leader whose flag differs from the replicated value
 * proposes its own, once the cluster's log format lets it write the op (every voter reads it).
 * A new cluster gets it right after its log-format raise, before anything a client sends
 * (srv_settings_tick is called from the ready callback after srv_format_on_ready); after a
 * leader change the cluster's value follows the new leader's flag; a failed proposal is tried
 * again from the tick.
 *
 * The lock history's limits (--history-per-lock, --history-max-entries) are made the cluster's
 * the same way, by HISTORY_LIMITS entries (src/fsm/history.c): what a replica keeps, and so
 * what LOCK.HISTORY answers on it, must not depend on its own flags.
 *
 * Owns srv.cluster.dlimit_inflight and hlimit_inflight; all on the loop thread.
 */
#include "fsm/waitgraph.h"
#include "server/server.h"

static void limit_cb(void *ctx, int status, const struct fsm_reply *reply)
{
    struct srv *s = ctx;
    s->cluster.dlimit_inflight = false;
    if (status == RN_OK && reply->kind == FSM_REPLY_OK)
        LOGI(&s->log, "deadlock search limit is now %llu (this leader's --deadlock-search-limit)",
             (unsigned long long)fsm_deadlock_limit(s->fsm));
    else
        LOGW(&s->log, "deadlock search limit not set (status %d): tried again", status);
}

static void history_cb(void *ctx, int status, const struct fsm_reply *reply)
{
    struct srv *s = ctx;
    s->cluster.hlimit_inflight = false;
    uint64_t per, max;
    fsm_history_limits(s->fsm, &per, &max);
    if (status == RN_OK && reply->kind == FSM_REPLY_OK)
        LOGI(&s->log,
             "lock history limits are now %llu per lock, %llu in all (this leader's flags)",
             (unsigned long long)per, (unsigned long long)max);
    else
        LOGW(&s->log, "lock history limits not set (status %d): tried again", status);
}

/* Either flag 0 turns the history off: the FSM stores that as both 0. */
static void history_tick(struct srv *s)
{
    if (s->cluster.hlimit_inflight || !srv_ready(s) || srv_format_refuses(s, FSM_OP_HISTORY_LIMITS))
        return;
    uint64_t per = s->cfg.history_per_lock, max = s->cfg.history_max_entries, cur_per, cur_max;
    if (!per || !max)
        per = max = 0;
    fsm_history_limits(s->fsm, &cur_per, &cur_max);
    if (per == cur_per && max == cur_max)
        return;
    struct fsm_cmd cmd = {.op = FSM_OP_HISTORY_LIMITS,
                          .history_limits = {.per_lock = per, .max_entries = max}};
    if (srv_propose(s, &cmd, history_cb, s) == RN_OK)
        s->cluster.hlimit_inflight = true;
}

void srv_settings_tick(struct srv *s)
{
    history_tick(s);
    if (s->cluster.dlimit_inflight || !srv_ready(s) || srv_format_refuses(s, FSM_OP_DEADLOCK_LIMIT))
        return;
    uint64_t want = fsm_deadlock_flag(s->fsm);
    if (want == fsm_deadlock_limit(s->fsm))
        return;
    struct fsm_cmd cmd = {.op = FSM_OP_DEADLOCK_LIMIT, .deadlock_limit = {.limit = want}};
    if (srv_propose(s, &cmd, limit_cb, s) == RN_OK)
        s->cluster.dlimit_inflight = true;
}
