/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_codec_golden — the on-disk formats stay byte-identical.
 *
 * tests/fixtures/fsm_golden/golden.h holds entries and a snapshot written by the code of
 * FSM_CMD_VERSION 1 (tests/unit/gen_fsm_golden.c, from the commands of fsm_golden_cmds.h). A
 * log and a snapshot written by that code must decode, re-encode, replay and restore to the
 * same bytes, replies and events with today's code; and today's structs must encode the same
 * commands to the same bytes. Any change to a field's encoding fails here. Read-write locks
 * appended LOCK_SHARED entries and a version 3 snapshot of the state after them; the version 2
 * snapshot of the state before them stays, and must still restore and re-snapshot to the same
 * bytes. Session ownership appended version-2 entries (acting user, admin bit) and an entry of
 * every op 14-20 (semaphores, elections, SESSION_REVOKE), and a version 4 snapshot of the state
 * after them (sessions with owners and request digests, a shared lock, a semaphore, an election
 * with a leader and a candidate, a lock in lock-delay after a revoke), then CLUSTER_FORMAT entries
 * (the upgrade gate) and a version 5 snapshot (version 4 with the cluster's log format).
 * Cooperative revocation appended LOCK_REVOKE, REVOKE_END and LOCK_NOTIFY entries (ops 22-24) and
 * a version 6
 * snapshot (version 5 with a lock's pending revoke); the version 5 snapshot is the state before.
 */
#include <stdlib.h>
#include <string.h>

#include "fsm/fsm.h"
#include "fsm_golden.h"
#include "fsm_golden_cmds.h"
#include "test.h"

#include "../fixtures/fsm_golden/golden.h"

#define N_GOLDEN (sizeof(golden_entries) / sizeof(golden_entries[0]))

static int same_bytes(const struct buf *b, const uint8_t *p, size_t n)
{
    return b->len == n && memcmp(b->p, p, n) == 0;
}

/* Entry i decodes, and the decoded command re-encodes to exactly its bytes. */
static int reencodes_identically(size_t i)
{
    const struct golden_entry *g = &golden_entries[i];
    struct fsm_cmd c;
    struct buf b;
    char err[96];
    if (fsm_cmd_decode(g->p, g->len, &c, err, sizeof(err))) {
        fprintf(stderr, "  entry %zu: %s\n", i, err);
        return 0;
    }
    buf_init(&b);
    int ok = fsm_cmd_encode(&c, &b) == 0 && same_bytes(&b, g->p, g->len);
    buf_free(&b);
    if (!ok)
        fprintf(stderr, "  entry %zu re-encodes differently\n", i);
    return ok;
}

/* Command i of the table, built with today's structs, encodes to entry i's bytes. */
static int table_encodes_identically(size_t i)
{
    struct buf b;
    buf_init(&b);
    int ok = fsm_cmd_encode(&golden_cmds[i], &b) == 0 &&
             same_bytes(&b, golden_entries[i].p, golden_entries[i].len);
    buf_free(&b);
    if (!ok)
        fprintf(stderr, "  command %zu encodes differently from the fixture\n", i);
    return ok;
}

/* Applying entry i gives the recorded reply, revision and events. */
static int replays_identically(struct fsm *f, struct fsm_events *ev, size_t i)
{
    const struct golden_entry *g = &golden_entries[i];
    struct fsm_reply r;
    fsm_events_reset(ev);
    fsm_apply(f, g->p, g->len, &r, ev);
    char *digest = golden_events_digest(ev);
    int ok = digest && r.kind == g->reply_kind && r.value == g->reply_value &&
             strcmp(r.kind == FSM_REPLY_ERR ? r.err : "", g->reply_err) == 0 &&
             fsm_revision(f) == g->revision && strcmp(digest, g->events) == 0;
    if (!ok)
        fprintf(stderr, "  entry %zu: reply %u %llu '%s' rev %llu events '%s'\n", i, r.kind,
                (unsigned long long)r.value, r.err, (unsigned long long)fsm_revision(f),
                digest ? digest : "(oom)");
    free(digest);
    return ok;
}

static int snapshot_is(const struct fsm *f, const uint8_t *p, size_t n)
{
    struct buf b;
    buf_init(&b);
    int ok = fsm_snapshot(f, &b) == 0 && same_bytes(&b, p, n);
    buf_free(&b);
    return ok;
}

/* Restores, passes the audit and snapshots to the same bytes. */
static int restores_byte_identically(const uint8_t *p, size_t n)
{
    struct fsm *f = fsm_new();
    char err[128];
    int restored = f && fsm_restore(f, p, n, err, sizeof(err)) == 0;
    if (!restored)
        fprintf(stderr, "  restore: %s\n", err);
    int ok = restored && snapshot_is(f, p, n) && fsm_check_invariants(f, err, sizeof(err)) == 0;
    fsm_free(f);
    return ok;
}

TEST(golden_entries_decode_and_reencode_byte_identically)
{
    for (size_t i = 0; i < N_GOLDEN; i++)
        CHECK(reencodes_identically(i));
}

TEST(golden_commands_built_from_structs_encode_to_the_fixture_bytes)
{
    CHECK_EQ_U64(GOLDEN_N_CMDS, N_GOLDEN);
    for (size_t i = 0; i < N_GOLDEN; i++)
        CHECK(table_encodes_identically(i));
}

TEST(golden_log_replays_to_the_same_replies_events_and_snapshot)
{
    struct fsm *f = fsm_new();
    struct fsm_events ev;
    fsm_events_init(&ev);
    int ok = f != NULL, snap_v2_ok = 0, snap_v3_ok = 0, snap_v4_ok = 0, snap_v5_ok = 0;
    int snap_multi_ok = 0, snap_v6_ok = 0, snap_v7_ok = 0, snap_incr_ok = 0, snap_wsem_ok = 0;
    int snap_reent_ok = 0, snap_lockmeta_ok = 0, snap_latch_ok = 0, snap_history_ok = 0;
    int snap_semlimit_ok = 0, snap_txn_ok = 0;
    for (size_t i = 0; ok && i < N_GOLDEN; i++) {
        ok = replays_identically(f, &ev, i);
        if (i + 1 == GOLDEN_N_V2_CMDS)
            snap_v2_ok = snapshot_is(f, golden_snapshot, sizeof(golden_snapshot));
        if (i + 1 == GOLDEN_N_V3_CMDS)
            snap_v3_ok = snapshot_is(f, golden_snapshot_v3, sizeof(golden_snapshot_v3));
        if (i + 1 == GOLDEN_N_V4_CMDS)
            snap_v4_ok = snapshot_is(f, golden_snapshot_v4, sizeof(golden_snapshot_v4));
        if (i + 1 == GOLDEN_N_V5_CMDS)
            snap_v5_ok = snapshot_is(f, golden_snapshot_v5, sizeof(golden_snapshot_v5));
        if (i + 1 == GOLDEN_N_MULTI_CMDS)
            snap_multi_ok = snapshot_is(f, golden_snapshot_multi, sizeof(golden_snapshot_multi));
        if (i + 1 == GOLDEN_N_V6_CMDS)
            snap_v6_ok = snapshot_is(f, golden_snapshot_v6, sizeof(golden_snapshot_v6));
        if (i + 1 == GOLDEN_N_V7_CMDS)
            snap_v7_ok = snapshot_is(f, golden_snapshot_v7, sizeof(golden_snapshot_v7));
        if (i + 1 == GOLDEN_N_INCR_CMDS)
            snap_incr_ok = snapshot_is(f, golden_snapshot_incr, sizeof(golden_snapshot_incr));
        if (i + 1 == GOLDEN_N_WSEM_CMDS)
            snap_wsem_ok = snapshot_is(f, golden_snapshot_wsem, sizeof(golden_snapshot_wsem));
        if (i + 1 == GOLDEN_N_REENT_CMDS)
            snap_reent_ok = snapshot_is(f, golden_snapshot_reent, sizeof(golden_snapshot_reent));
        if (i + 1 == GOLDEN_N_LOCKMETA_CMDS)
            snap_lockmeta_ok =
                snapshot_is(f, golden_snapshot_lockmeta, sizeof(golden_snapshot_lockmeta));
        if (i + 1 == GOLDEN_N_LATCH_CMDS)
            snap_latch_ok = snapshot_is(f, golden_snapshot_latch, sizeof(golden_snapshot_latch));
        if (i + 1 == GOLDEN_N_HISTORY_CMDS)
            snap_history_ok =
                snapshot_is(f, golden_snapshot_history, sizeof(golden_snapshot_history));
        if (i + 1 == GOLDEN_N_SEMLIM_CMDS)
            snap_semlimit_ok =
                snapshot_is(f, golden_snapshot_semlimit, sizeof(golden_snapshot_semlimit));
        if (i + 1 == GOLDEN_N_TXN_CMDS)
            snap_txn_ok = snapshot_is(f, golden_snapshot_txn, sizeof(golden_snapshot_txn));
    }
    int snap_ok = ok && snapshot_is(f, golden_snapshot_http, sizeof(golden_snapshot_http));
    char err[128];
    int inv_ok = ok && fsm_check_invariants(f, err, sizeof(err)) == 0;
    fsm_events_free(&ev);
    fsm_free(f);
    CHECK(ok);
    CHECK(snap_v2_ok);
    CHECK(snap_v3_ok);
    CHECK(snap_v4_ok);
    CHECK(snap_v5_ok);
    CHECK(snap_multi_ok);
    CHECK(snap_v6_ok);
    CHECK(snap_v7_ok);
    CHECK(snap_incr_ok);
    CHECK(snap_wsem_ok);
    CHECK(snap_reent_ok);
    CHECK(snap_lockmeta_ok);
    CHECK(snap_latch_ok);
    CHECK(snap_history_ok);
    CHECK(snap_semlimit_ok);
    CHECK(snap_txn_ok);
    CHECK(snap_ok);
    CHECK(inv_ok);
}

TEST(golden_snapshot_restores_and_resnapshots_byte_identically)
{
    CHECK(golden_snapshot[4] == 2);
    CHECK(restores_byte_identically(golden_snapshot, sizeof(golden_snapshot)));
}

TEST(golden_snapshot_v3_restores_and_resnapshots_byte_identically)
{
    CHECK(golden_snapshot_v3[4] == 3);
    CHECK(restores_byte_identically(golden_snapshot_v3, sizeof(golden_snapshot_v3)));
}

TEST(golden_snapshot_v4_restores_and_resnapshots_byte_identically)
{
    CHECK(golden_snapshot_v4[4] == 4);
    CHECK(restores_byte_identically(golden_snapshot_v4, sizeof(golden_snapshot_v4)));
}

/* What the appended entries exercise, so a later edit of the table cannot quietly drop it:
 * version-2 headers with a user and with the admin bit, and every op of this round. */
TEST(golden_snapshot_v5_restores_and_resnapshots_byte_identically)
{
    CHECK(golden_snapshot_v5[4] == 5);
    CHECK(restores_byte_identically(golden_snapshot_v5, sizeof(golden_snapshot_v5)));
}

/* A waiting multi-request (waiters sharing one enqueue revision; a free lock it blocks). */
TEST(golden_snapshot_multi_restores_and_resnapshots_byte_identically)
{
    CHECK(golden_snapshot_multi[4] == 5);
    CHECK(restores_byte_identically(golden_snapshot_multi, sizeof(golden_snapshot_multi)));
}

/* Version 6: version 5 with a lock's pending revoke (cooperative revocation). */
TEST(golden_snapshot_v6_restores_and_resnapshots_byte_identically)
{
    CHECK(golden_snapshot_v6[4] == 6);
    CHECK(restores_byte_identically(golden_snapshot_v6, sizeof(golden_snapshot_v6)));
}

/* Version 7: version 6 with the cluster's deadlock search limit. */
TEST(golden_snapshot_v7_restores_and_resnapshots_byte_identically)
{
    CHECK(golden_snapshot_v7[4] == 7);
    CHECK(restores_byte_identically(golden_snapshot_v7, sizeof(golden_snapshot_v7)));
}

/* The log format each entry needs: 1 for everything the previous release wrote (the first
 * GOLDEN_N_V3_CMDS entries), 2 for every entry after them but the leader's own (unchecked,
 * version-1 header) entries of an op the previous release had (revocation's LOCKDELAY_END). */
TEST(golden_entries_need_the_log_format_of_their_release)
{
    for (size_t i = 0; i < N_GOLDEN; i++) {
        const uint8_t *p = golden_entries[i].p;
        bool old = p[0] == FSM_CMD_VERSION && fsm_op_format(p[1]) == FSM_FORMAT_1;
        CHECK_EQ_U64(fsm_entry_format(p, golden_entries[i].len),
                     i < GOLDEN_N_V3_CMDS || (i >= GOLDEN_N_V5_CMDS && old) ? FSM_FORMAT_1
                                                                            : FSM_FORMAT_2);
    }
    CHECK_EQ_U64(fsm_snapshot_format(golden_snapshot, sizeof(golden_snapshot)), FSM_FORMAT_1);
    CHECK_EQ_U64(fsm_snapshot_format(golden_snapshot_v3, sizeof(golden_snapshot_v3)), FSM_FORMAT_1);
    CHECK_EQ_U64(fsm_snapshot_format(golden_snapshot_v4, sizeof(golden_snapshot_v4)), FSM_FORMAT_2);
    CHECK_EQ_U64(fsm_snapshot_format(golden_snapshot_v5, sizeof(golden_snapshot_v5)), FSM_FORMAT_2);
    CHECK_EQ_U64(fsm_snapshot_format(golden_snapshot_v6, sizeof(golden_snapshot_v6)), FSM_FORMAT_2);
    CHECK_EQ_U64(fsm_snapshot_format(golden_snapshot_v7, sizeof(golden_snapshot_v7)), FSM_FORMAT_2);
    CHECK_EQ_U64(fsm_snapshot_format(golden_snapshot_incr, sizeof(golden_snapshot_incr)),
                 FSM_FORMAT_2);
    CHECK_EQ_U64(fsm_snapshot_format(golden_snapshot_wsem, sizeof(golden_snapshot_wsem)),
                 FSM_FORMAT_2);
    CHECK_EQ_U64(fsm_snapshot_format(golden_snapshot_latch, sizeof(golden_snapshot_latch)),
                 FSM_FORMAT_2);
    CHECK_EQ_U64(fsm_snapshot_format(golden_snapshot_reent, sizeof(golden_snapshot_reent)),
                 FSM_FORMAT_2);
    CHECK_EQ_U64(fsm_snapshot_format(golden_snapshot_history, sizeof(golden_snapshot_history)),
                 FSM_FORMAT_2);
    CHECK_EQ_U64(fsm_snapshot_format(golden_snapshot_semlimit, sizeof(golden_snapshot_semlimit)),
                 FSM_FORMAT_2);
    CHECK_EQ_U64(fsm_snapshot_format(golden_snapshot_txn, sizeof(golden_snapshot_txn)),
                 FSM_FORMAT_2);
    CHECK_EQ_U64(fsm_snapshot_format(golden_snapshot_http, sizeof(golden_snapshot_http)),
                 FSM_FORMAT_2);
}

TEST(golden_fixture_covers_version_2_headers_and_ops_14_to_20)
{
    bool op_seen[FSM_OP__COUNT] = {false};
    int v2_user = 0, v2_admin = 0, v2_empty = 0, v2_traced = 0;
    for (size_t i = 0; i < N_GOLDEN; i++) {
        const uint8_t *p = golden_entries[i].p;
        op_seen[p[1]] = true;
        if (p[0] != FSM_CMD_VERSION_USER)
            continue;
        v2_user += golden_cmds[i].user.len > 0;
        v2_admin += golden_cmds[i].admin;
        v2_empty += golden_cmds[i].user.len == 0;
        v2_traced += golden_cmds[i].traced;
    }
    for (int op = FSM_OP_SEM_ACQUIRE; op <= FSM_OP_ELECT_RESIGN; op++)
        CHECK(op_seen[op]);
    CHECK(op_seen[FSM_OP_SESSION_REVOKE]);
    CHECK(op_seen[FSM_OP_CLUSTER_FORMAT]);
    CHECK(op_seen[FSM_OP_LOCK_REVOKE]);
    CHECK(op_seen[FSM_OP_REVOKE_END]);
    CHECK(op_seen[FSM_OP_LOCK_NOTIFY]);
    CHECK(op_seen[FSM_OP_DEADLOCK_LIMIT]);
    CHECK(op_seen[FSM_OP_LOCK_MULTI]);
    CHECK(op_seen[FSM_OP_INCR]);
    CHECK(op_seen[FSM_OP_SEM_ACQUIRE_W]);
    CHECK(op_seen[FSM_OP_SEM_SETLIMIT]);
    CHECK(op_seen[FSM_OP_SESSION_OPEN_REENTRANT]);
    CHECK(op_seen[FSM_OP_LOCK_META]);
    CHECK(op_seen[FSM_OP_MAXHOLD_END]);
    CHECK(op_seen[FSM_OP_LATCH_CREATE] && op_seen[FSM_OP_LATCH_JOIN]);
    CHECK(op_seen[FSM_OP_LATCH_COUNTDOWN] && op_seen[FSM_OP_LATCH_DELETE]);
    CHECK(op_seen[FSM_OP_BARRIER]);
    CHECK(op_seen[FSM_OP_HISTORY_LIMITS]);
    CHECK(op_seen[FSM_OP_SEM_LIMIT_SET] && op_seen[FSM_OP_SEM_LIMIT_RESET]);
    CHECK(op_seen[FSM_OP_MEMBER_HTTP]);
    CHECK(v2_traced >= 2); /* a header with a traceparent: a LOCK and an UNLOCK */
    CHECK(op_seen[FSM_OP_TXN]);
    CHECK(v2_user > 0 && v2_admin > 0 && v2_empty > 0);
}

/* Counters (keys whose values INCR wrote). */
TEST(golden_snapshot_incr_restores_and_resnapshots_byte_identically)
{
    CHECK(golden_snapshot_incr[4] == 7);
    CHECK(restores_byte_identically(golden_snapshot_incr, sizeof(golden_snapshot_incr)));
}

/* A weighted semaphore: holds of 2 permits each, 4 in use over a lowered limit of 2. */
TEST(golden_snapshot_wsem_restores_and_resnapshots_byte_identically)
{
    CHECK(golden_snapshot_wsem[4] == 7);
    CHECK(restores_byte_identically(golden_snapshot_wsem, sizeof(golden_snapshot_wsem)));
}

/* Keys TXN entries wrote, a revision per change (no section of its own). */
TEST(golden_snapshot_txn_restores_and_resnapshots_byte_identically)
{
    CHECK(golden_snapshot_txn[4] == 8);
    CHECK(restores_byte_identically(golden_snapshot_txn, sizeof(golden_snapshot_txn)));
}

/* Version 8 with sections 2 and 4: the reentrant session and the lock history of H (A's grant,
 * ended by UNLOCK with B queued; B's grant, held). */
TEST(golden_snapshot_history_restores_and_resnapshots_byte_identically)
{
    CHECK(golden_snapshot_history[4] == 8);
    CHECK(restores_byte_identically(golden_snapshot_history, sizeof(golden_snapshot_history)));
}

/* Version 8 with section 2: a reentrant session (max count 3) holding RL twice. */
/* Version 8 with lock metadata (a value and a max hold on grants, a waiter's value,
 * transitions) in tagged section 1 beside section 2. */
TEST(golden_snapshot_lockmeta_is_version_8_and_restores_byte_identically)
{
    CHECK(golden_snapshot_lockmeta[4] == 8);
    CHECK(restores_byte_identically(golden_snapshot_lockmeta, sizeof(golden_snapshot_lockmeta)));
    CHECK_EQ_U64(fsm_snapshot_format(golden_snapshot_lockmeta, sizeof(golden_snapshot_lockmeta)),
                 FSM_FORMAT_2);
}

TEST(golden_snapshot_reent_restores_and_resnapshots_byte_identically)
{
    CHECK(golden_snapshot_reent[4] == 8);
    CHECK(restores_byte_identically(golden_snapshot_reent, sizeof(golden_snapshot_reent)));
    struct fsm *f = fsm_new();
    char err[128];
    struct fsm_lock_view v;
    CHECK(f && fsm_restore(f, golden_snapshot_reent, sizeof(golden_snapshot_reent), err,
                           sizeof(err)) == 0);
    CHECK(f && fsm_lock_info(f, "RL", 2, &v) && v.reentrant && v.count == 2 &&
          v.holder_sid == GOLDEN_SID_G);
    fsm_free(f);
}

/* Version 8 with sections 2 and 3: a broken latch (bob expired before counting down), a broken
 * barrier (bob ended inside), and a latch with alice's open promise. */
TEST(golden_snapshot_latch_restores_and_resnapshots_byte_identically)
{
    CHECK(golden_snapshot_latch[4] == 8);
    CHECK(restores_byte_identically(golden_snapshot_latch, sizeof(golden_snapshot_latch)));
}

/* Version 8 with sections 1 to 5: operators' semaphore limits of W (live, 3) and W9 (alice's
 * semaphore, created under the override with another limit: 2). */
TEST(golden_snapshot_semlimit_restores_and_resnapshots_byte_identically)
{
    CHECK(golden_snapshot_semlimit[4] == 8);
    CHECK(restores_byte_identically(golden_snapshot_semlimit, sizeof(golden_snapshot_semlimit)));
    struct fsm *f = fsm_new();
    char err[128];
    struct fsm_sem_view v;
    CHECK(f && fsm_restore(f, golden_snapshot_semlimit, sizeof(golden_snapshot_semlimit), err,
                           sizeof(err)) == 0);
    CHECK(f && fsm_semlim_get(f, "W", 1) == 3 && fsm_semlim_get(f, "W9", 2) == 2);
    CHECK(f && fsm_sem_info(f, "W9", 2, &v) && v.limit == 2 && v.in_use == 2 && v.by_operator);
    fsm_free(f);
}

/* Version 8 with sections 1 to 6: a history entry carrying a lock value (section 4's value
 * flag), traced entries (section 4's traceparent format) and two members' HTTP addresses, one
 * with TLS (section 6). */
TEST(golden_snapshot_http_restores_and_resnapshots_byte_identically)
{
    CHECK(golden_snapshot_http[4] == 8);
    CHECK(restores_byte_identically(golden_snapshot_http, sizeof(golden_snapshot_http)));
}

int main(void)
{
    golden_fill();
    RUN(golden_entries_decode_and_reencode_byte_identically);
    RUN(golden_commands_built_from_structs_encode_to_the_fixture_bytes);
    RUN(golden_log_replays_to_the_same_replies_events_and_snapshot);
    RUN(golden_snapshot_restores_and_resnapshots_byte_identically);
    RUN(golden_snapshot_v3_restores_and_resnapshots_byte_identically);
    RUN(golden_snapshot_v4_restores_and_resnapshots_byte_identically);
    RUN(golden_snapshot_v5_restores_and_resnapshots_byte_identically);
    RUN(golden_snapshot_multi_restores_and_resnapshots_byte_identically);
    RUN(golden_snapshot_v6_restores_and_resnapshots_byte_identically);
    RUN(golden_snapshot_v7_restores_and_resnapshots_byte_identically);
    RUN(golden_snapshot_incr_restores_and_resnapshots_byte_identically);
    RUN(golden_snapshot_wsem_restores_and_resnapshots_byte_identically);
    RUN(golden_snapshot_reent_restores_and_resnapshots_byte_identically);
    RUN(golden_snapshot_lockmeta_is_version_8_and_restores_byte_identically);
    RUN(golden_snapshot_latch_restores_and_resnapshots_byte_identically);
    RUN(golden_snapshot_history_restores_and_resnapshots_byte_identically);
    RUN(golden_snapshot_semlimit_restores_and_resnapshots_byte_identically);
    RUN(golden_snapshot_txn_restores_and_resnapshots_byte_identically);
    RUN(golden_snapshot_http_restores_and_resnapshots_byte_identically);
    RUN(golden_entries_need_the_log_format_of_their_release);
    RUN(golden_fixture_covers_version_2_headers_and_ops_14_to_20);
    TEST_MAIN_END();
}
