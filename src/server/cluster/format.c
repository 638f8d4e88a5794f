/* SPDX-License-Identifier: Apache-2.0 */
/*
 * server/cluster/format.c — the upgrade gate: the leader writes only what every voter reads.
 *
 * The cluster's log format is replicated state (src/fsm/format.c). While it is 1 the leader
 * writes version-1 entries only: no acting user (session ownership is not recorded or
 * checked), and the commands that need format 2 (SEM.*, ELECT.*, SESSION.REVOKE) are refused
 * with -ERR naming the node that holds the upgrade back. Every follower tells the leader the
 * highest format it reads (CLUSTER.ANNOUNCE's 5th argument, members.c) once per term while the
 * cluster's format is below its own; the leader (which counts its own --max-log-format) keeps
 * what it heard in this term only. Once every voter in the configuration reported at least
 * format 2, the leader commits a CLUSTER_FORMAT entry (a version-1 entry every node reads);
 * the format never goes back, so a node of the previous release must not rejoin after that (it
 * stops at the first entry it cannot read: src/raft/rn_fsm.c).
 *
 * Owns srv.fmt (the reports, the told term, the in-flight flag); all on the loop thread.
 */
#include <string.h>

#include "server/server.h"

unsigned srv_format_max(const struct srv *s)
{
    return s->cfg.max_log_format ? s->cfg.max_log_format : FSM_FORMAT_MAX;
}

void srv_format_report(struct srv *s, uint64_t id, unsigned format)
{
    uint64_t term = rn_term(s->rn);
    struct srv_format_seen *e = NULL;
    for (size_t i = 0; i < RN_MAX_PEERS && !e; i++)
        if (s->cluster.fmt.seen[i].id == id)
            e = &s->cluster.fmt.seen[i];
    for (size_t i = 0; i < RN_MAX_PEERS && !e; i++) /* a free slot, or one of an older term */
        if (!s->cluster.fmt.seen[i].id || s->cluster.fmt.seen[i].term != term)
            e = &s->cluster.fmt.seen[i];
    if (e)
        *e = (struct srv_format_seen){.id = id, .term = term, .format = format};
}

struct min_arg {
    const struct srv *s;
    uint64_t term;
    unsigned min;
    uint64_t blocker;
};

/* What voter `id` reads, as far as this leader heard in this term (1 if it did not hear). */
static unsigned heard(const struct srv *s, uint64_t id, uint64_t term)
{
    if (id == s->cfg.id)
        return srv_format_max(s);
    for (size_t i = 0; i < RN_MAX_PEERS; i++)
        if (s->cluster.fmt.seen[i].id == id && s->cluster.fmt.seen[i].term == term)
            return s->cluster.fmt.seen[i].format;
    return FSM_FORMAT_1;
}

static void min_voter(void *arg, uint64_t id, const char *raft_address, int role)
{
    struct min_arg *m = arg;
    (void)raft_address;
    if (role != RN_VOTER)
        return;
    unsigned f = heard(m->s, id, m->term);
    if (f < m->min) {
        m->min = f;
        m->blocker = id;
    }
}

unsigned srv_format_readable(struct srv *s, uint64_t *blocker)
{
    struct min_arg m = {.s = s, .term = rn_term(s->rn), .min = FSM_FORMAT_MAX, .blocker = 0};
    rn_foreach_server(s->rn, min_voter, &m);
    *blocker = m.blocker;
    return m.min;
}

static void format_cb(void *ctx, int status, const struct fsm_reply *reply)
{
    struct srv *s = ctx;
    s->cluster.fmt.inflight = 0;
    if (status == RN_OK && reply->kind == FSM_REPLY_OK)
        LOGI(&s->log, "cluster log format is now %u: every voter reads it", fsm_format(s->fsm));
    else
        LOGW(&s->log, "cluster log format not raised (status %d): tried again", status);
}

static void propose_format(struct srv *s, unsigned want)
{
    struct fsm_cmd cmd = {.op = FSM_OP_CLUSTER_FORMAT, .cluster_format = {.format = want}};
    if (srv_propose(s, &cmd, format_cb, s) == RN_OK)
        s->cluster.fmt.inflight = want;
}

void srv_format_tick(struct srv *s)
{
    uint64_t blocker;
    if (s->cluster.fmt.inflight || !srv_ready(s) || fsm_format(s->fsm) >= srv_format_max(s))
        return;
    unsigned want = srv_format_readable(s, &blocker);
    if (want <= fsm_format(s->fsm))
        return;
    propose_format(s, want);
}

static void count_member(void *arg, const struct fsm_member_view *v)
{
    (void)v;
    (*(size_t *)arg)++;
}

/* A new cluster (nothing applied yet: no revision, no member entry) starts at the newest
 * format its first leader reads: it has no history an older node would need to read. The
 * entry goes before anything a client sends (the caller is the ready callback), and the gate
 * counts it as applied from here on: what follows it in the log applies after it. */
void srv_format_on_ready(struct srv *s)
{
    size_t members = 0;
    fsm_foreach_member(s->fsm, count_member, &members);
    if (fsm_revision(s->fsm) || members || s->cluster.fmt.inflight ||
        fsm_format(s->fsm) >= srv_format_max(s))
        return;
    LOGI(&s->log, "new cluster: log format %u from the start", srv_format_max(s));
    propose_format(s, srv_format_max(s));
}

bool srv_format_tell_needed(struct srv *s)
{
    return fsm_format(s->fsm) < srv_format_max(s) && s->cluster.fmt.told_term != rn_term(s->rn);
}

/* The format entries written now are read at: the cluster's, or a raise in flight (it is
 * ahead of them in the log). */
static unsigned writable(const struct srv *s)
{
    unsigned f = fsm_format(s->fsm);
    return s->cluster.fmt.inflight > f ? s->cluster.fmt.inflight : f;
}

bool srv_format_refuses(const struct srv *s, uint8_t op)
{
    return fsm_op_format(op) > writable(s); /* the op's row in src/fsm/ops.h */
}

int srv_format_gate(struct srv *s, struct fsm_cmd *cmd, struct buf *out)
{
    if (srv_format_refuses(s, cmd->op)) {
        uint64_t blocker;
        unsigned reads = srv_format_readable(s, &blocker);
        resp_w_errorf(out,
                      PROTO_ERR " cluster format %u; node %llu reads only %u: finish the upgrade",
                      fsm_format(s->fsm), (unsigned long long)blocker, reads);
        return -1;
    }
    if (writable(s) >= FSM_FORMAT_2)
        return 0;
    if (cmd->traced) { /* only a version-2 header carries it */
        resp_w_errorf(out,
                      PROTO_ERR " TRACEPARENT needs the cluster's log format 2 (now %u): "
                                "finish the upgrade",
                      fsm_format(s->fsm));
        return -1;
    }
    cmd->checked = false; /* a version-1 entry: no acting user, no ownership */
    cmd->user = (struct fsm_str){NULL, 0};
    cmd->admin = false;
    return 1;
}
