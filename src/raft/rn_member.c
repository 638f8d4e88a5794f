/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rn_member.c — the Raft configuration: what it holds (rn_foreach_server, rn_server_*), and
 * changing it: rn_add (spare, catch-up, promotion, undone if the catch-up fails), rn_remove
 * (with rn_remove_check's quorum rule), rn_transfer, and what is in progress
 * (rn_change_info). One change at a time; see rn_internal.h for the change life cycle.
 */
#include "raft/rn_internal.h"

#include <stdlib.h>
#include <string.h>

void rn_foreach_server(struct rn *rn,
                       void (*cb)(void *arg, uint64_t id, const char *raft_address, int role),
                       void *arg)
{
    const struct raft_configuration *c = &rn->raft->configuration;
    for (unsigned i = 0; i < c->n; i++)
        cb(arg, c->servers[i].id, c->servers[i].address, c->servers[i].role);
}

const char *rn_server_address(struct rn *rn, uint64_t id)
{
    const struct raft_configuration *c = &rn->raft->configuration;
    for (unsigned i = 0; i < c->n; i++)
        if (c->servers[i].id == id)
            return c->servers[i].address;
    return NULL;
}

int rn_server_role(struct rn *rn, uint64_t id)
{
    const struct raft_configuration *c = &rn->raft->configuration;
    for (unsigned i = 0; i < c->n; i++)
        if (c->servers[i].id == id)
            return c->servers[i].role;
    return -1;
}

int rn_server_role_committed(struct rn *rn, uint64_t id)
{
    /* With no change pending the current configuration is the committed one. */
    const struct raft_configuration *c = rn->raft->configuration_uncommitted_index
                                             ? &rn->raft->configuration_committed
                                             : &rn->raft->configuration;
    for (unsigned i = 0; i < c->n; i++)
        if (c->servers[i].id == id)
            return c->servers[i].role;
    return -1;
}

/* ---- changes ---- */

const char *rn_errmsg(struct rn *rn)
{
    return rn->errmsg;
}

static int map_status(int rv)
{
    switch (rv) {
    case 0:
        return RN_OK;
    case RAFT_NOTLEADER:
        return RN_NOTLEADER;
    case RAFT_LEADERSHIPLOST:
        return RN_UNKNOWN;
    default:
        return RN_ERR;
    }
}

static const char *const chg_names[] = {[CHG_ADD] = "add",
                                        [CHG_ASSIGN] = "promote",
                                        [CHG_REMOVE] = "remove",
                                        [CHG_TRANSFER] = "transfer",
                                        [CHG_UNDO] = "undo-add"};

int rn_change_info(struct rn *rn, struct rn_change_view *out)
{
    uint64_t now = uv_now(rn->loop);
    memset(out, 0, sizeof(*out));
    struct chg *c = rn->changes;
    while (c && c->next) /* the oldest: the one the others would wait for */
        c = c->next;
    if (c) {
        out->kind = chg_names[c->kind];
        out->id = c->id;
        out->age_ms = now - c->since_ms;
        return 1;
    }
    if (!rn->lib_since_ms)
        return 0;
    out->kind = rn->lib_promotee ? "promote" : "uncommitted";
    out->id = rn->lib_promotee;
    out->index = rn->lib_index;
    out->age_ms = now - rn->lib_since_ms;
    return 1;
}

/* "remove of server 2, for 1234 ms" or "the configuration entry at index 57, uncommitted for
 * 120 ms": what a refused change waits for. */
static void describe_change(struct rn *rn, char *buf, size_t len)
{
    struct rn_change_view v;
    if (!rn_change_info(rn, &v))
        snprintf(buf, len, "none that this node knows of");
    else if (v.id)
        snprintf(buf, len, "%s of server %llu, for %llu ms", v.kind, (unsigned long long)v.id,
                 (unsigned long long)v.age_ms);
    else if (v.index)
        snprintf(buf, len, "the configuration entry at index %llu, uncommitted for %llu ms",
                 (unsigned long long)v.index, (unsigned long long)v.age_ms);
    else
        snprintf(buf, len, "%s to any voter, for %llu ms", v.kind, (unsigned long long)v.age_ms);
}

/* Sync failure of a libraft call: keep its message for rn_errmsg; the status to return. A
 * refusal because of another change names that change. */
static int fail_call(struct rn *rn, int rv, const char *what)
{
    const char *m = raft_errmsg(rn->raft);
    char blocker[RN_REASON_BUF] = "";
    if (rv == RAFT_CANTCHANGE) {
        size_t k = (size_t)snprintf(blocker, sizeof(blocker), ": ");
        describe_change(rn, blocker + k, sizeof(blocker) - k);
    }
    snprintf(rn->errmsg, sizeof(rn->errmsg), "%s: %s%s", what, m && *m ? m : raft_strerror(rv),
             blocker);
    return rv == RAFT_NOTLEADER ? RN_NOTLEADER : RN_ERR;
}

static void chg_unlink(struct rn *rn, struct chg *c)
{
    for (struct chg **pp = &rn->changes; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            return;
        }
}

static void chg_finish(struct chg *c, int status, const char *msg)
{
    chg_unlink(c->rn, c);
    c->cb(c->ctx, status, status == RN_OK ? NULL : msg);
    free(c);
}

static void change_cb(struct raft_change *req, int status);

/* The promotion of a spare this change added failed (libraft gave up catching it up, or the
 * leader changed): take the spare out again, so nothing is left that blocks the next change;
 * the caller hears why the add failed once the removal is through. */
static void undo_add(struct chg *c, int status)
{
    struct rn *rn = c->rn;
    if (status == RAFT_LEADERSHIPLOST || rn_closing(rn) || raft_state(rn->raft) != RAFT_LEADER) {
        /* The promotion may still commit under the next leader, or leave a spare that a
         * repeated CLUSTER.ADD resumes: not this node's to undo any more. */
        chg_finish(c, map_status(status), raft_strerror(status));
        return;
    }
    snprintf(c->why, sizeof(c->why), "server %llu did not catch up (%s)", (unsigned long long)c->id,
             raft_strerror(status));
    LOGW(rn->log, "raft: %s: removing it from the configuration again", c->why);
    c->kind = CHG_UNDO;
    int rv = raft_remove(rn->raft, &c->req.change, c->id, change_cb);
    if (rv) {
        size_t k = strlen(c->why);
        snprintf(c->why + k, sizeof(c->why) - k, "; it stays a spare: %s", raft_strerror(rv));
        chg_finish(c, RN_ERR, c->why);
    }
}

static void change_cb(struct raft_change *req, int status)
{
    struct chg *c = (struct chg *)req;
    struct rn *rn = c->rn;
    if (c->kind == CHG_UNDO) {
        size_t k = strlen(c->why);
        snprintf(c->why + k, sizeof(c->why) - k, "%s",
                 status ? "; removing the spare again failed" : "; removed again");
        chg_finish(c, RN_ERR, c->why);
        return;
    }
    if (status && c->kind == CHG_ASSIGN && c->added) {
        undo_add(c, status);
        return;
    }
    if (status || c->kind != CHG_ADD) {
        if (status == 0)
            LOGI(rn->log, "raft: configuration change for server %llu committed",
                 (unsigned long long)c->id);
        chg_finish(c, map_status(status), raft_strerror(status));
        return;
    }
    /* Added as a spare: now promote. libraft first catches the node up (rounds of
     * AppendEntries, or InstallSnapshot), then appends and commits the new configuration. */
    if (rn_closing(rn)) {
        chg_finish(c, RN_ERR, "shutting down");
        return;
    }
    c->kind = CHG_ASSIGN;
    c->added = true;
    int rv = raft_assign(rn->raft, &c->req.change, c->id, RAFT_VOTER, change_cb);
    if (rv)
        undo_add(c, rv);
}

/* A transfer callback carries no status: success is the target being the known leader. */
static void transfer_cb(struct raft_transfer *req)
{
    struct chg *c = (struct chg *)req;
    struct rn *rn = c->rn;
    raft_id lid = 0;
    const char *addr = NULL;
    raft_leader(rn->raft, &lid, &addr);
    uint64_t want = req->id ? req->id : c->id;
    if (lid && lid != rn->cfg.id && (want == 0 || lid == want)) {
        LOGI(rn->log, "raft: leadership transferred to %llu", (unsigned long long)lid);
        chg_finish(c, RN_OK, NULL);
        return;
    }
    snprintf(rn->errmsg, sizeof(rn->errmsg),
             "leadership transfer to %llu did not complete "
             "(leader now %llu)",
             (unsigned long long)want, (unsigned long long)lid);
    chg_finish(c, RN_ERR, rn->errmsg);
}

static struct chg *chg_new(struct rn *rn, enum chg_kind kind, uint64_t id, rn_change_cb cb,
                           void *ctx)
{
    struct chg *c = calloc(1, sizeof(*c));
    if (!c) {
        snprintf(rn->errmsg, sizeof(rn->errmsg), "out of memory");
        return NULL;
    }
    c->rn = rn;
    c->kind = kind;
    c->id = id;
    c->cb = cb;
    c->ctx = ctx;
    c->since_ms = uv_now(rn->loop);
    c->next = rn->changes;
    rn->changes = c;
    return c;
}

static int chg_check(struct rn *rn, const char *what)
{
    if (!rn_running(rn)) {
        snprintf(rn->errmsg, sizeof(rn->errmsg), "shutting down");
        return RN_ERR;
    }
    if (raft_state(rn->raft) != RAFT_LEADER) {
        snprintf(rn->errmsg, sizeof(rn->errmsg), "not the leader");
        return RN_NOTLEADER;
    }
    if (rn->changes) {
        char blocker[RN_REASON_BUF];
        describe_change(rn, blocker, sizeof(blocker));
        snprintf(rn->errmsg, sizeof(rn->errmsg),
                 "%s: a configuration change is already in progress: %s", what, blocker);
        return RN_ERR;
    }
    rn_batch_submit_open(rn); /* the change goes after everything proposed before it */
    return RN_OK;
}

/* Register the request, run the libraft call; on its failure undo and report. */
static int chg_submit(struct rn *rn, struct chg *c, int rv, const char *what)
{
    if (rv == 0)
        return RN_OK;
    chg_unlink(rn, c);
    free(c);
    return fail_call(rn, rv, what);
}

int rn_add(struct rn *rn, uint64_t id, const char *raft_address, rn_change_cb cb, void *ctx)
{
    int role = rn_server_role(rn, id);
    const char *known = rn_server_address(rn, id);
    int rc = chg_check(rn, known ? "promoting to voter" : "adding server");
    if (rc != RN_OK)
        return rc;
    if (role == RAFT_VOTER || (known && strcmp(known, raft_address))) {
        snprintf(rn->errmsg, sizeof(rn->errmsg), "server %llu is already %s",
                 (unsigned long long)id,
                 role == RAFT_VOTER ? "a voter" : "known at another address");
        return RN_ERR;
    }
    struct chg *c = chg_new(rn, known ? CHG_ASSIGN : CHG_ADD, id, cb, ctx);
    if (!c)
        return RN_ERR;
    if (known)
        return chg_submit(rn, c, raft_assign(rn->raft, &c->req.change, id, RAFT_VOTER, change_cb),
                          "promoting to voter");
    return chg_submit(rn, c, raft_add(rn->raft, &c->req.change, id, raft_address, change_cb),
                      "adding server");
}

int rn_remove(struct rn *rn, uint64_t id, rn_change_cb cb, void *ctx)
{
    int rc = chg_check(rn, "removing server");
    if (rc != RN_OK)
        return rc;
    struct chg *c = chg_new(rn, CHG_REMOVE, id, cb, ctx);
    if (!c)
        return RN_ERR;
    return chg_submit(rn, c, raft_remove(rn->raft, &c->req.change, id, change_cb),
                      "removing server");
}

/* A voter other than the leader counts as with the leader when it has acknowledged the commit
 * index of one to two election timeouts ago: a live follower always has (or the leader would
 * count it unreachable), one that is down or cut off falls behind as soon as anything new
 * commits. A heuristic: an idle cluster cannot tell a peer that just died. */
static bool voter_caught_up(struct rn *rn, uint64_t id)
{
    raft_index match = 0;
    if (id == rn->cfg.id)
        return true;
    return raft_match_index(rn->raft, id, &match) == 0 && match >= rn->commit_prev;
}

void rn_foreach_peer_lag(struct rn *rn, void (*cb)(void *arg, uint64_t id, uint64_t lag), void *arg)
{
    if (raft_state(rn->raft) != RAFT_LEADER)
        return;
    raft_index last = raft_last_index(rn->raft);
    const struct raft_configuration *c = &rn->raft->configuration;
    for (unsigned i = 0; i < c->n; i++) {
        raft_index match = 0;
        if (c->servers[i].id == rn->cfg.id ||
            raft_match_index(rn->raft, c->servers[i].id, &match) != 0)
            continue;
        cb(arg, c->servers[i].id, last > match ? last - match : 0);
    }
}

int rn_remove_check(struct rn *rn, uint64_t id, char *why, size_t whylen)
{
    const struct raft_configuration *c = &rn->raft->configuration;
    unsigned left = 0, with_us = 0;
    bool voter = false;
    for (unsigned i = 0; i < c->n; i++) {
        if (c->servers[i].role != RAFT_VOTER)
            continue;
        if (c->servers[i].id == id) {
            voter = true;
            continue;
        }
        left++;
        with_us += voter_caught_up(rn, c->servers[i].id);
    }
    if (!voter)
        return 0; /* a spare or standby: the voters stay as they are */
    if (left == 0) {
        snprintf(why, whylen,
                 "server %llu is the last voter: removing it would leave the cluster "
                 "without any voter",
                 (unsigned long long)id);
        return RN_REMOVE_LAST;
    }
    if (left == 1) {
        snprintf(why, whylen,
                 "removing server %llu would leave one voter, the cluster's whole quorum (no "
                 "fault tolerance; add a server first, or say FORCE)",
                 (unsigned long long)id);
        return RN_REMOVE_ONE_LEFT;
    }
    if (with_us <= left / 2) {
        snprintf(why, whylen,
                 "removing server %llu needs %u of the %u remaining voters to commit, and only "
                 "%u are known to be caught up (bring the others back, or say FORCE)",
                 (unsigned long long)id, left / 2 + 1, left, with_us);
        return RN_REMOVE_NO_QUORUM;
    }
    return 0;
}

int rn_transfer(struct rn *rn, uint64_t id, rn_change_cb cb, void *ctx)
{
    int rc = chg_check(rn, "transferring leadership");
    if (rc != RN_OK)
        return rc;
    return rn_member_transfer(rn, id, cb, ctx);
}

int rn_member_transfer(struct rn *rn, uint64_t id, rn_change_cb cb, void *ctx)
{
    struct chg *c = chg_new(rn, CHG_TRANSFER, id, cb, ctx);
    if (!c)
        return RN_ERR;
    /* Before libraft can send TimeoutNow: its target campaigns past the voters' guard, which
     * the read lease rests on (rn_lease.c). Kept off for the term even if the transfer fails:
     * a TimeoutNow still on its way would act the same. */
    rn_lease_drop(rn);
    return chg_submit(rn, c, raft_transfer(rn->raft, &c->req.transfer, id, transfer_cb),
                      "transferring leadership");
}

void rn_member_fail_all(struct rn *rn, const char *msg)
{
    while (rn->changes)
        chg_finish(rn->changes, RN_ERR, msg);
}