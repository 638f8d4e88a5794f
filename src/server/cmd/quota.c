/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quota.c — state quotas (--max-sessions, --max-locks, --max-keys, --max-waiters,
 * --max-data-bytes), checked on the leader before a command is proposed.
 *
 * Owns srv.quota.pending: what proposals in flight may still add. A command that can grow the
 * state reserves its worst-case growth (srv_quota_reserve) and gives it back when its
 * proposal completes, whatever the outcome (srv_quota_release, from write_done). A command is
 * refused with -NOSPACE when applied state + reservations + its own growth passes a quota, so
 * several commands in one group-commit batch cannot pass it together. The FSM itself does not
 * check quotas: every replica applies exactly what the leader accepted, so a follower never
 * holds more than the leader let in. What a command can add follows from its op's growth kind
 * (src/fsm/ops.h, srv_quota_growth); commands that only free space (UNLOCK, DEL, SESSION.CLOSE,
 * expiries: FSM_GROW_NONE) reserve nothing and are never refused.
 * Overshoot: after a leader change, entries the old leader had in flight apply on top of what
 * the new leader accepts; at most one leader's in-flight proposals.
 *
 * Per-user quotas (the ACL file's max_sessions= max_waiters= max_keys= max_bytes=
 * max_parked=, docs/security.md "Per-user quotas"), checked after the global ones and with the
 * same reservations, per user (srv.quota.user_pending). The numbers come from replicated state
 * only, so any leader enforces the same ones: sessions, queued waits and their bytes by session
 * owner (the FSM's usage index, fsm_owner_usage), keys and key bytes in the user's namespace
 * (the keys its keys= globs match, all keys without keys=; counted by a walk of the key tree
 * from each glob's literal prefix). max_parked is per node (parked requests live on one node
 * and end at a step-down): the user's parked XREAD/ELECT.OBSERVE requests here.
 */
#include <stdlib.h>
#include <string.h>

#include "server/cmd/cmd.h"
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

static uint64_t str_len(const struct fsm_cmd *cmd, enum fsm_field_kind kind)
{
    const struct fsm_str *v = fsm_cmd_str(cmd, kind);
    return v ? v->len : 0;
}

/* FSM_GROW_LOCK and _SHARED (LOCK, LOCK_SHARED, SEM_ACQUIRE, ELECT_CAMPAIGN): a new lock, or a
 * waiter; a shared grant (a permit) adds a record of its own, a campaign its value. */
static void growth_lock(const struct fsm *f, const struct fsm_cmd *cmd, bool shared_hold,
                        uint64_t g[SRV_QUOTA_N])
{
    struct fsm_wait_ref c;
    if (!fsm_cmd_wait_of(cmd, &c))
        return;
    uint64_t shared = shared_hold ? FSM_RECORD_BYTES : 0;
    uint64_t value = str_len(cmd, FSM_F_EVALUE);
    struct fsm_lock_view lv;
    if (!fsm_lock_info(f, c.name.p, c.name.len, &lv)) {
        g[SRV_QUOTA_LOCKS] = 1;
        g[SRV_QUOTA_BYTES] = FSM_RECORD_BYTES + c.name.len + shared + value;
    } else if (lv.holder_sid != c.sid && c.wait_ms > 0) {
        g[SRV_QUOTA_WAITERS] = 1;
        g[SRV_QUOTA_BYTES] = FSM_RECORD_BYTES + value;
    } else if (lv.holder_sid != c.sid) {
        g[SRV_QUOTA_BYTES] = shared + value;
    }
}

/* FSM_GROW_MULTI (LOCK_MULTI): each name counts as a LOCK of its own would (a new lock, or a
 * waiter: the per-user waiter quota counts one per name), a shared one with its hold's record. */
static void growth_multi(const struct fsm *f, const struct fsm_cmd *cmd, uint64_t g[SRV_QUOTA_N])
{
    struct fsm_names_it it;
    struct fsm_str name;
    bool shared;
    fsm_names_begin(&it, &cmd->lock_multi.names);
    while (fsm_names_next(&it, &name, &shared)) {
        struct fsm_cmd one = {.op = FSM_OP_LOCK,
                              .lock = {name, cmd->lock_multi.sid, cmd->lock_multi.wait_ms}};
        uint64_t gi[SRV_QUOTA_N] = {0};
        growth_lock(f, &one, shared, gi);
        if (gi[SRV_QUOTA_LOCKS] && cmd->lock_multi.wait_ms) { /* a new lock it may queue on */
            gi[SRV_QUOTA_WAITERS] = 1;
            gi[SRV_QUOTA_BYTES] += FSM_RECORD_BYTES;
        }
        for (int q = 0; q < SRV_QUOTA_N; q++)
            g[q] += gi[q];
    }
}

/* FSM_GROW_KEY (PUT, INCR): a key, or the growth of its value (an INCR's: its widest). */
static void growth_key(const struct fsm *f, const struct fsm_cmd *cmd, uint64_t g[SRV_QUOTA_N])
{
    const struct fsm_str *key = fsm_cmd_str(cmd, FSM_F_NAME);
    uint64_t value = cmd->op == FSM_OP_INCR ? FSM_COUNTER_DIGITS : str_len(cmd, FSM_F_VALUE);
    struct fsm_kv_meta kv;
    if (!key)
        return;
    if (!fsm_kv_get(f, key->p, key->len, &kv)) {
        g[SRV_QUOTA_KEYS] = 1;
        g[SRV_QUOTA_BYTES] = FSM_RECORD_BYTES + key->len + value;
    } else if (value > kv.value_len) {
        g[SRV_QUOTA_BYTES] = value - kv.value_len;
    }
}

/* FSM_GROW_TXN: each PUT / INCR of a branch as that command alone would (growth_key; a TXN
 * writes a key once per branch), summed over the branch; the larger branch of the two counts,
 * per quota. A TXN that would exceed a quota is refused whole, before it is proposed. */
static void growth_txn(const struct fsm *f, const struct fsm_cmd *cmd, uint64_t g[SRV_QUOTA_N])
{
    const struct fsm_txn *t = &cmd->txn.txn;
    uint64_t br[2][SRV_QUOTA_N] = {{0}};
    struct fsm_txn_it it;
    struct fsm_txn_item x;
    fsm_txn_begin(&it, t);
    for (uint32_t i = 0; fsm_txn_next(&it, &x); i++) {
        if (i < t->ncmp || x.type == FSM_TXN_DEL)
            continue;
        struct fsm_cmd one = {.op = FSM_OP_PUT, .put = {.key = x.name, .value = x.value}};
        if (x.type == FSM_TXN_INCR)
            one = (struct fsm_cmd){.op = FSM_OP_INCR, .incr = {.key = x.name}};
        uint64_t gi[SRV_QUOTA_N] = {0};
        growth_key(f, &one, gi);
        for (int q = 0; q < SRV_QUOTA_N; q++)
            br[i < t->ncmp + t->nthen ? 0 : 1][q] += gi[q];
    }
    for (int q = 0; q < SRV_QUOTA_N; q++)
        g[q] = br[0][q] > br[1][q] ? br[0][q] : br[1][q];
}

/* The most `cmd` can add to the state as it stands now, by its op's growth kind (ops.h): a LOCK
 * that will queue adds a waiter, one on an absent lock adds the lock; a PUT adds a key or the
 * growth of its value. */
void srv_quota_growth(const struct fsm *f, const struct fsm_cmd *cmd, uint64_t g[SRV_QUOTA_N])
{
    memset(g, 0, sizeof(uint64_t) * SRV_QUOTA_N);
    const struct fsm_op_desc *d = fsm_op_desc(cmd->op);
    if (!d)
        return;
    switch ((enum fsm_grow)d->grow) {
    case FSM_GROW_NONE:
        break;
    case FSM_GROW_SESSION:
        g[SRV_QUOTA_SESSIONS] = 1;
        g[SRV_QUOTA_BYTES] = FSM_RECORD_BYTES + str_len(cmd, FSM_F_LABEL);
        break;
    case FSM_GROW_LOCK:
    case FSM_GROW_SHARED:
        growth_lock(f, cmd, d->grow == FSM_GROW_SHARED, g);
        break;
    case FSM_GROW_VALUE: /* at most: the old value is freed */
        g[SRV_QUOTA_BYTES] = str_len(cmd, FSM_F_EVALUE);
        break;
    case FSM_GROW_KEY:
        growth_key(f, cmd, g);
        break;
    case FSM_GROW_MULTI:
        growth_multi(f, cmd, g);
        break;
    case FSM_GROW_TXN:
        growth_txn(f, cmd, g);
        break;
    case FSM_GROW_LATCH: { /* a latch or barrier counts as a lock, a participant as a waiter */
        const struct fsm_str *name = fsm_cmd_str(cmd, FSM_F_NAME);
        struct fsm_latch_view lv;
        bool part = fsm_cmd_acting_sid(cmd) != 0;
        if (name && !fsm_latch_info(f, name->p, name->len, &lv)) {
            g[SRV_QUOTA_LOCKS] = 1;
            g[SRV_QUOTA_BYTES] = FSM_RECORD_BYTES + name->len;
        }
        g[SRV_QUOTA_BYTES] += part ? FSM_RECORD_BYTES : 0;
        break;
    }
    case FSM_GROW_SEMLIM: { /* an operator's semaphore limit counts as a lock */
        const struct fsm_str *name = fsm_cmd_str(cmd, FSM_F_NAME);
        if (name && !fsm_semlim_get(f, name->p, name->len)) {
            g[SRV_QUOTA_LOCKS] = 1;
            g[SRV_QUOTA_BYTES] = FSM_RECORD_BYTES + name->len;
        }
        break;
    }
    }
}

/* ---- per user ---- */

_Static_assert(ACL_QUOTA_N ==
                   sizeof(((struct srv_metrics *)0)->user_quota_rejections) / sizeof(uint64_t),
               "one rejection counter per per-user quota");

/* The bytes that make `lit` the literal start of glob g (up to the first '*', '?' or '\'). */
static size_t glob_prefix(const char *g)
{
    size_t n = 0;
    while (g[n] && g[n] != '*' && g[n] != '?' && g[n] != '\\')
        n++;
    return n;
}

struct ns_walk {
    const struct acl_user *u;
    size_t glob; /* the glob whose prefix is walked: a key an earlier glob matches is counted */
    uint64_t keys, bytes;
};

static int ns_visit(void *arg, const char *key, size_t len, const struct fsm_kv_meta *m)
{
    struct ns_walk *w = arg;
    if (!acl_glob_match(w->u->keys[w->glob], key, len))
        return 0;
    for (size_t i = 0; i < w->glob; i++)
        if (acl_glob_match(w->u->keys[i], key, len))
            return 0; /* counted under glob i already */
    w->keys++;
    w->bytes += FSM_RECORD_BYTES + len + m->value_len;
    return 0;
}

/* Keys and their bytes in u's namespace (keys= globs; every key without them). */
static void ns_usage(struct srv *s, const struct acl_user *u, uint64_t *keys, uint64_t *bytes)
{
    if (!u->keys) {
        struct fsm_stats st;
        fsm_stats(s->fsm, &st);
        *keys = st.keys;
        *bytes = st.key_bytes;
        return;
    }
    struct ns_walk w = {.u = u};
    for (w.glob = 0; w.glob < u->nkeys; w.glob++)
        fsm_kv_scan(s->fsm, u->keys[w.glob], glob_prefix(u->keys[w.glob]), 0, ns_visit, &w);
    *keys = w.keys;
    *bytes = w.bytes;
}

/* The user's parked XREAD ... BLOCK and ELECT.OBSERVE requests on this node. */
static uint64_t parked_of(struct srv *s, const struct acl_user *u);

/* What u uses now: of every quota (all, for /metrics), or of those it has (the namespace walk
 * only when it has a key quota). */
static void user_used(struct srv *s, const struct acl_user *u, bool all, uint64_t used[ACL_QUOTA_N])
{
    struct fsm_owner_usage ou;
    uint64_t keys = 0, kbytes = 0;
    fsm_owner_usage(s->fsm, u->name, strlen(u->name), &ou);
    if (all || u->quota[ACL_QUOTA_KEYS] || u->quota[ACL_QUOTA_BYTES])
        ns_usage(s, u, &keys, &kbytes);
    used[ACL_QUOTA_SESSIONS] = ou.sessions;
    used[ACL_QUOTA_WAITERS] = ou.waiters;
    used[ACL_QUOTA_KEYS] = keys;
    used[ACL_QUOTA_BYTES] = ou.bytes + kbytes;
    used[ACL_QUOTA_PARKED] = parked_of(s, u);
}

/* The part of the growth g (global measure) that counts against the acting user: its sessions,
 * its queued waits (a record each), its keys (a PUT names a key of its namespace, or it would
 * have been refused -NOPERM) and their bytes. A new lock is nobody's. */
static void user_growth(const struct fsm_cmd *cmd, const uint64_t g[SRV_QUOTA_N],
                        uint64_t gu[ACL_QUOTA_N])
{
    memset(gu, 0, sizeof(uint64_t) * ACL_QUOTA_N);
    gu[ACL_QUOTA_SESSIONS] = g[SRV_QUOTA_SESSIONS];
    gu[ACL_QUOTA_WAITERS] = g[SRV_QUOTA_WAITERS];
    gu[ACL_QUOTA_KEYS] = g[SRV_QUOTA_KEYS];
    const struct fsm_op_desc *d = fsm_op_desc(cmd->op);
    if (d && (d->grow == FSM_GROW_SESSION || d->grow == FSM_GROW_KEY || d->grow == FSM_GROW_TXN))
        gu[ACL_QUOTA_BYTES] = g[SRV_QUOTA_BYTES];
    else if (g[SRV_QUOTA_WAITERS])
        gu[ACL_QUOTA_BYTES] = g[SRV_QUOTA_WAITERS] * FSM_RECORD_BYTES; /* a record each */
}

static uint64_t *user_pending(struct srv *s, const char *name, bool make)
{
    uint64_t *p = map_get(&s->quota.user_pending, name, strlen(name));
    if (p || !make)
        return p;
    p = calloc(ACL_QUOTA_N, sizeof(*p));
    if (p && map_put(&s->quota.user_pending, name, strlen(name), p)) {
        free(p);
        p = NULL;
    }
    return p;
}

static void user_refused(struct srv *s, const struct acl_user *u, int q, uint64_t used,
                         uint64_t pending, struct buf *out)
{
    s->m.user_quota_rejections[q]++;
    resp_w_errorf(out,
                  PROTO_NOSPACE " user %s's %s quota reached: %llu in use, %llu pending, its "
                                "limit (%s= in the ACL file) is %llu; free some or raise it",
                  u->name, acl_quota_fields[q] + 4, (unsigned long long)used,
                  (unsigned long long)pending, acl_quota_fields[q],
                  (unsigned long long)u->quota[q]);
}

/* 0 with u's share reserved in res, or -1 with -NOSPACE naming u's quota (nothing reserved). */
static int user_reserve(struct srv *s, const struct fsm_cmd *cmd, const struct acl_user *u,
                        const uint64_t g[SRV_QUOTA_N], struct srv_quota *res, struct buf *out)
{
    uint64_t gu[ACL_QUOTA_N], used[ACL_QUOTA_N], zero[ACL_QUOTA_N] = {0};
    bool any = false;
    user_growth(cmd, g, gu);
    for (int q = 0; q < ACL_QUOTA_N; q++)
        any |= gu[q] && u->quota[q];
    if (!any)
        return 0;
    user_used(s, u, false, used);
    const uint64_t *pend = user_pending(s, u->name, false);
    if (!pend)
        pend = zero;
    for (int q = 0; q < ACL_QUOTA_N; q++) {
        if (gu[q] == 0 || u->quota[q] == 0 || used[q] + pend[q] + gu[q] <= u->quota[q])
            continue;
        user_refused(s, u, q, used[q], pend[q], out);
        return -1;
    }
    uint64_t *p = user_pending(s, u->name, true);
    if (!p)
        return 0; /* out of memory: the reservation is not kept (the global quota still is) */
    snprintf(res->user, sizeof res->user, "%s", u->name);
    for (int q = 0; q < ACL_QUOTA_N; q++) {
        res->u[q] = gu[q];
        p[q] += gu[q];
    }
    return 0;
}

static void user_release(struct srv *s, struct srv_quota *res)
{
    if (!res->user[0])
        return;
    uint64_t *p = user_pending(s, res->user, false);
    bool empty = true;
    for (int q = 0; p && q < ACL_QUOTA_N; q++) {
        p[q] -= res->u[q];
        empty &= p[q] == 0;
    }
    if (p && empty)
        free(map_del(&s->quota.user_pending, res->user, strlen(res->user)));
    memset(res->u, 0, sizeof res->u);
    res->user[0] = '\0';
}

void srv_quota_free(struct srv *s)
{
    map_free(&s->quota.user_pending, free);
    map_free(&s->quota.user_parked, free);
}

uint64_t *srv_parked_counter(struct srv *s, const struct acl_user *u)
{
    if (!u)
        return NULL;
    uint64_t *n = map_get(&s->quota.user_parked, u->name, strlen(u->name));
    if (n)
        return n;
    n = calloc(1, sizeof(*n));
    if (n && map_put(&s->quota.user_parked, u->name, strlen(u->name), n)) {
        free(n);
        n = NULL;
    }
    return n;
}

/* O(1): counted as requests park and unpark, by user name (a SIGHUP that re-points a
 * connection to the reloaded user of the same name keeps the count). */
static uint64_t parked_of(struct srv *s, const struct acl_user *u)
{
    const uint64_t *n = map_get(&s->quota.user_parked, u->name, strlen(u->name));
    return n ? *n : 0;
}

int srv_parked_admit(struct srv_req *r)
{
    struct srv *s = r->s;
    uint64_t all = s->xread.n_watchers + s->observe.n_observers + s->latchw.n;
    if (all >= s->cfg.max_parked) {
        s->m.parked_rejections++;
        resp_w_errorf(r->out,
                      PROTO_NOSPACE
                      " parked quota reached: %llu XREAD/ELECT.OBSERVE/latch requests "
                      "parked on this node, the limit (--max-parked) is %llu",
                      (unsigned long long)all, (unsigned long long)s->cfg.max_parked);
        return -1;
    }
    const struct acl_user *u = r->c ? r->c->user : NULL;
    if (!u || !u->quota[ACL_QUOTA_PARKED])
        return 0;
    uint64_t mine = parked_of(s, u);
    if (mine < u->quota[ACL_QUOTA_PARKED])
        return 0;
    user_refused(s, u, ACL_QUOTA_PARKED, mine, 0, r->out);
    return -1;
}

/* ---- global ---- */

int srv_quota_reserve(struct srv *s, const struct fsm_cmd *cmd, const struct acl_user *user,
                      struct srv_quota *res, struct buf *out)
{
    uint64_t g[SRV_QUOTA_N], used[SRV_QUOTA_N], lim[SRV_QUOTA_N];
    srv_quota_growth(s->fsm, cmd, g);
    quota_used(s, used);
    quota_limits(&s->cfg, lim);
    for (int q = 0; q < SRV_QUOTA_N; q++) {
        if (g[q] == 0 || used[q] + s->quota.pending.n[q] + g[q] <= lim[q])
            continue;
        s->m.quota_rejections[q]++;
        resp_w_errorf(
            out,
            PROTO_NOSPACE " %s quota reached: %llu in use, %llu pending, the limit (%s) is "
                          "%llu; free some (UNLOCK, DEL, SESSION.CLOSE) or raise the limit",
            quota_names[q], (unsigned long long)used[q], (unsigned long long)s->quota.pending.n[q],
            quota_flags[q], (unsigned long long)lim[q]);
        return -1;
    }
    if (user && s->auth.on && user_reserve(s, cmd, user, g, res, out))
        return -1;
    for (int q = 0; q < SRV_QUOTA_N; q++) {
        res->n[q] = g[q];
        s->quota.pending.n[q] += g[q];
    }
    return 0;
}

void srv_quota_release(struct srv *s, struct srv_quota *res)
{
    user_release(s, res);
    for (int q = 0; q < SRV_QUOTA_N; q++) {
        s->quota.pending.n[q] -= res->n[q];
        res->n[q] = 0;
    }
}

/* Per-user usage and limits (user names are [A-Za-z0-9_.@-]: no label escaping needed). Keys
 * and bytes walk each user's namespace: a scrape costs a pass over the keys per user with
 * keys= globs. */
static void render_users(struct srv *s, struct buf *out)
{
    const struct acl *a = &s->auth.acl;
    if (!s->auth.on)
        return;
    struct buf bytes; /* the _bytes family, rendered after the counted one */
    buf_init(&bytes);
    buf_printf(out, "# HELP fencelock_user_usage What each ACL user uses, by counted per-user "
                    "quota (sessions, waiters by session owner; keys in its keys= namespace; "
                    "parked on this node).\n# TYPE fencelock_user_usage gauge\n");
    for (size_t i = 0; i < a->n; i++) {
        const struct acl_user *u = &a->users[i];
        uint64_t used[ACL_QUOTA_N];
        user_used(s, u, true, used);
        for (int q = 0; q < ACL_QUOTA_N; q++)
            if (q != ACL_QUOTA_BYTES)
                buf_printf(out, "fencelock_user_usage{user=\"%s\",quota=\"%s\"} %llu\n", u->name,
                           acl_quota_fields[q] + 4, (unsigned long long)used[q]);
        buf_printf(&bytes, "fencelock_user_usage_bytes{user=\"%s\"} %llu\n", u->name,
                   (unsigned long long)used[ACL_QUOTA_BYTES]);
    }
    buf_printf(out, "# HELP fencelock_user_usage_bytes Bytes each ACL user uses against its "
                    "max_bytes= quota (by session owner, and in its keys= namespace).\n# TYPE "
                    "fencelock_user_usage_bytes gauge\n");
    if (bytes.err)
        out->err = bytes.err; /* short like any failed append: the caller checks out->err */
    else
        buf_append(out, bytes.p, bytes.len);
    buf_free(&bytes);
    buf_printf(out, "# HELP fencelock_user_quota_limit Per-user quotas set in the ACL file "
                    "(max_*=).\n# TYPE fencelock_user_quota_limit gauge\n");
    for (size_t i = 0; i < a->n; i++)
        for (int q = 0; q < ACL_QUOTA_N; q++)
            if (a->users[i].quota[q] && q != ACL_QUOTA_BYTES)
                buf_printf(out, "fencelock_user_quota_limit{user=\"%s\",quota=\"%s\"} %llu\n",
                           a->users[i].name, acl_quota_fields[q] + 4,
                           (unsigned long long)a->users[i].quota[q]);
    buf_printf(out, "# HELP fencelock_user_quota_limit_bytes Per-user max_bytes= set in the ACL "
                    "file.\n# TYPE fencelock_user_quota_limit_bytes gauge\n");
    for (size_t i = 0; i < a->n; i++)
        if (a->users[i].quota[ACL_QUOTA_BYTES])
            buf_printf(out, "fencelock_user_quota_limit_bytes{user=\"%s\"} %llu\n",
                       a->users[i].name, (unsigned long long)a->users[i].quota[ACL_QUOTA_BYTES]);
    buf_printf(out, "# HELP fencelock_user_quota_rejections_total Commands refused with NOSPACE "
                    "by a per-user quota.\n# TYPE fencelock_user_quota_rejections_total "
                    "counter\n");
    for (int q = 0; q < ACL_QUOTA_N; q++)
        buf_printf(out, "fencelock_user_quota_rejections_total{quota=\"%s\"} %llu\n",
                   acl_quota_fields[q] + 4, (unsigned long long)s->m.user_quota_rejections[q]);
}

void srv_quota_render(struct srv *s, struct buf *out)
{
    uint64_t used[SRV_QUOTA_N], lim[SRV_QUOTA_N];
    quota_used(s, used);
    quota_limits(&s->cfg, lim);
    buf_printf(out,
               "# HELP fencelock_parked_rejections_total XREAD ... BLOCK and ELECT.OBSERVE "
               "requests refused at --max-parked.\n# TYPE fencelock_parked_rejections_total "
               "counter\nfencelock_parked_rejections_total %llu\n",
               (unsigned long long)s->m.parked_rejections);
    buf_printf(out, "# HELP fencelock_quota_rejections_total Commands refused with NOSPACE, by "
                    "quota.\n# TYPE fencelock_quota_rejections_total counter\n");
    for (int q = 0; q < SRV_QUOTA_N; q++)
        buf_printf(out, "fencelock_quota_rejections_total{quota=\"%s\"} %llu\n", quota_names[q],
                   (unsigned long long)s->m.quota_rejections[q]);
    /* Counts and bytes in families of their own: a sum or ratio over one family never adds
     * bytes to sessions. */
    buf_printf(out, "# HELP fencelock_quota_used State in use, by counted quota.\n"
                    "# TYPE fencelock_quota_used gauge\n");
    for (int q = 0; q < SRV_QUOTA_N; q++)
        if (q != SRV_QUOTA_BYTES)
            buf_printf(out, "fencelock_quota_used{quota=\"%s\"} %llu\n", quota_names[q],
                       (unsigned long long)used[q]);
    metric_render(out, "fencelock_quota_used_bytes", "gauge",
                  "State size in the --max-data-bytes measure.", (double)used[SRV_QUOTA_BYTES]);
    buf_printf(out, "# HELP fencelock_quota_limit The configured counted quotas.\n"
                    "# TYPE fencelock_quota_limit gauge\n");
    for (int q = 0; q < SRV_QUOTA_N; q++)
        if (q != SRV_QUOTA_BYTES)
            buf_printf(out, "fencelock_quota_limit{quota=\"%s\"} %llu\n", quota_names[q],
                       (unsigned long long)lim[q]);
    metric_render(out, "fencelock_quota_limit_bytes", "gauge", "The configured --max-data-bytes.",
                  (double)lim[SRV_QUOTA_BYTES]);
    render_users(s, out);
}
