/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quota.c — state quotas (--max-sessions, --max-locks, --max-keys, --max-waiters,
 * --max-data-bytes), checked on the leader before a command is proposed.
 *
 * Owns srv.quota_pending: what proposals in flight may still add. A command that can grow the
 * state reserves its worst-case growth (srv_quota_reserve) and gives it back when its
 * proposal completes, whatever the outcome (srv_quota_release, from write_done). A command is
 * refused with -NOSPACE when applied state + reservations + its own growth passes a quota, so
 * several commands in one group-commit batch cannot pass it together. The FSM itself does not
 * check quotas: every replica applies exactly what the leader accepted, so a follower never
 * holds more than the leader let in. Commands that only free space (UNLOCK, DEL,
 * SESSION.CLOSE, expiries) reserve nothing and are never refused.
 * Overshoot: after a leader change, entries the old leader had in flight apply on top of what
 * the new leader accepts; at most one leader's in-flight proposals.
 */
#include <string.h>

#include "server/server.h"

static const char *const quota_names[SRV_QUOTA_N] = {"sessions", "locks", "keys", "waiters",
                                                     "data_bytes"};
static const char *const quota_flags[SRV_QUOTA_N] = {"--max-sessions", "--max-locks", "--max-keys",
                                                     "--max-waiters", "--max-data-bytes"};

const char *srv_quota_name(int q)
{
    return q >= 0 && q < SRV_QUOTA_N ? quota_names[q] : "?";
}

static void quota_limits(const struct srv_config *cfg, uint64_t lim[SRV_QUOTA_N])
{
    lim[SRV_QUOTA_SESSIONS] = cfg->max_sessions;
    lim[SRV_QUOTA_LOCKS] = cfg->max_locks;
    lim[SRV_QUOTA_KEYS] = cfg->max_keys;
    lim[SRV_QUOTA_WAITERS] = cfg->max_waiters;
    lim[SRV_QUOTA_BYTES] = cfg->max_data_bytes;
}

static void quota_used(struct srv *s, uint64_t used[SRV_QUOTA_N])
{
    struct fsm_stats st;
    fsm_stats(s->fsm, &st);
    used[SRV_QUOTA_SESSIONS] = st.sessions;
    used[SRV_QUOTA_LOCKS] = st.locks;
    used[SRV_QUOTA_KEYS] = st.keys;
    used[SRV_QUOTA_WAITERS] = st.waiters;
    used[SRV_QUOTA_BYTES] = st.data_bytes;
}

/* A LOCK, LOCK_SHARED, SEM_ACQUIRE or ELECT_CAMPAIGN: a new lock, or a waiter; a shared grant
 * (a permit) adds a record of its own, a campaign its value. */
static void growth_lock(struct srv *s, const struct fsm_cmd *cmd, uint64_t g[SRV_QUOTA_N])
{
    struct fsm_wait_ref c;
    if (!fsm_cmd_wait_of(cmd, &c))
        return;
    uint64_t shared =
        cmd->op == FSM_OP_LOCK_SHARED || cmd->op == FSM_OP_SEM_ACQUIRE ? FSM_RECORD_BYTES : 0;
    uint64_t value = cmd->op == FSM_OP_ELECT_CAMPAIGN ? cmd->elect_campaign.value.len : 0;
    struct fsm_lock_view lv;
    if (!fsm_lock_info(s->fsm, c.name.p, c.name.len, &lv)) {
        g[SRV_QUOTA_LOCKS] = 1;
        g[SRV_QUOTA_BYTES] = FSM_RECORD_BYTES + c.name.len + shared + value;
    } else if (lv.holder_sid != c.sid && c.wait_ms > 0) {
        g[SRV_QUOTA_WAITERS] = 1;
        g[SRV_QUOTA_BYTES] = FSM_RECORD_BYTES + value;
    } else if (lv.holder_sid != c.sid) {
        g[SRV_QUOTA_BYTES] = shared + value;
    }
}

/* The most `cmd` can add to the state as it stands now (a LOCK that will queue adds a waiter,
 * one on an absent lock adds the lock; a PUT adds a key or the growth of its value). */
static void growth(struct srv *s, const struct fsm_cmd *cmd, uint64_t g[SRV_QUOTA_N])
{
    memset(g, 0, sizeof(uint64_t) * SRV_QUOTA_N);
    struct fsm_kv_meta kv;
    switch (cmd->op) {
    case FSM_OP_SESSION_OPEN:
        g[SRV_QUOTA_SESSIONS] = 1;
        g[SRV_QUOTA_BYTES] = FSM_RECORD_BYTES + cmd->session_open.name.len;
        break;
    case FSM_OP_LOCK:
    case FSM_OP_LOCK_SHARED:
    case FSM_OP_SEM_ACQUIRE:
    case FSM_OP_ELECT_CAMPAIGN:
        growth_lock(s, cmd, g);
        break;
    case FSM_OP_ELECT_PROCLAIM: /* at most: the old value is freed */
        g[SRV_QUOTA_BYTES] = cmd->elect_proclaim.value.len;
        break;
    case FSM_OP_PUT:
        if (!fsm_kv_get(s->fsm, cmd->put.key.p, cmd->put.key.len, &kv)) {
            g[SRV_QUOTA_KEYS] = 1;
            g[SRV_QUOTA_BYTES] = FSM_RECORD_BYTES + cmd->put.key.len + cmd->put.value.len;
        } else if (cmd->put.value.len > kv.value_len) {
            g[SRV_QUOTA_BYTES] = cmd->put.value.len - kv.value_len;
        }
        break;
    default:
        break;
    }
}

int srv_quota_reserve(struct srv *s, const struct fsm_cmd *cmd, struct srv_quota *res,
                      struct buf *out)
{
    uint64_t g[SRV_QUOTA_N], used[SRV_QUOTA_N], lim[SRV_QUOTA_N];
    growth(s, cmd, g);
    quota_used(s, used);
    quota_limits(&s->cfg, lim);
    for (int q = 0; q < SRV_QUOTA_N; q++) {
        if (g[q] == 0 || used[q] + s->quota_pending.n[q] + g[q] <= lim[q])
            continue;
        s->m.quota_rejections[q]++;
        resp_w_errorf(
            out,
            PROTO_NOSPACE " %s quota reached: %llu in use, %llu pending, the limit (%s) is "
                          "%llu; free some (UNLOCK, DEL, SESSION.CLOSE) or raise the limit",
            quota_names[q], (unsigned long long)used[q], (unsigned long long)s->quota_pending.n[q],
            quota_flags[q], (unsigned long long)lim[q]);
        return -1;
    }
    for (int q = 0; q < SRV_QUOTA_N; q++) {
        res->n[q] = g[q];
        s->quota_pending.n[q] += g[q];
    }
    return 0;
}

void srv_quota_release(struct srv *s, struct srv_quota *res)
{
    for (int q = 0; q < SRV_QUOTA_N; q++) {
        s->quota_pending.n[q] -= res->n[q];
        res->n[q] = 0;
    }
}

void srv_quota_render(struct srv *s, struct buf *out)
{
    uint64_t used[SRV_QUOTA_N], lim[SRV_QUOTA_N];
    quota_used(s, used);
    quota_limits(&s->cfg, lim);
    buf_printf(out, "# HELP fencelock_quota_rejections_total Commands refused with NOSPACE, by "
                    "quota.\n# TYPE fencelock_quota_rejections_total counter\n");
    for (int q = 0; q < SRV_QUOTA_N; q++)
        buf_printf(out, "fencelock_quota_rejections_total{quota=\"%s\"} %llu\n", quota_names[q],
                   (unsigned long long)s->m.quota_rejections[q]);
    buf_printf(out, "# HELP fencelock_quota_used State in use, by quota (data_bytes: the "
                    "--max-data-bytes measure).\n# TYPE fencelock_quota_used gauge\n");
    for (int q = 0; q < SRV_QUOTA_N; q++)
        buf_printf(out, "fencelock_quota_used{quota=\"%s\"} %llu\n", quota_names[q],
                   (unsigned long long)used[q]);
    buf_printf(out, "# HELP fencelock_quota_limit The configured quota.\n"
                    "# TYPE fencelock_quota_limit gauge\n");
    for (int q = 0; q < SRV_QUOTA_N; q++)
        buf_printf(out, "fencelock_quota_limit{quota=\"%s\"} %llu\n", quota_names[q],
                   (unsigned long long)lim[q]);
}
