/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm_golden_cmds.h — the command sequence behind the golden fixture of the entry format.
 *
 * tests/unit/gen_fsm_golden.c encodes these commands, applies them in order to a fresh fsm and
 * writes the encodings, replies and final snapshot to tests/fixtures/fsm_golden/golden.h;
 * test_fsm_codec_golden checks that today's code still produces those bytes. Every op appears,
 * with large and edge values (UINT64_MAX, empty strings, names of FSM_MAX_NAME bytes, addresses
 * of FSM_MAX_ADDR bytes, PUT/DEL with and without FENCE and IFREV), and the final state holds
 * sessions with cached REQ replies and checkpoints, held locks, waiters, a lock in lock-delay,
 * leased and unleased keys and members. The sids and tokens in the commands are the revisions
 * the sequence allocates (the replies in the fixture show them). The fixture was written when
 * struct fsm_cmd was one flat struct; this table now builds the same commands through the
 * per-op payloads, and test_fsm_codec_golden checks that they encode to the fixture's bytes.
 *
 * Commands appended later (read-write locks' LOCK_SHARED) come after the original ones; the fixture
 * keeps the version 2 snapshot of the state before them and adds a version 3 one after them.
 *
 * Static data for a test binary or the generator; golden_fill() must run before the first use.
 */
#ifndef FENCELOCK_FSM_GOLDEN_CMDS_H
#define FENCELOCK_FSM_GOLDEN_CMDS_H

#include <stdint.h>
#include <string.h>

#include "fsm/fsm.h"

#define GS(lit)                                                                                    \
    {                                                                                              \
        lit, sizeof(lit) - 1                                                                       \
    }
#define GOLDEN_VALUE_LEN 200 /* a value whose length takes a two-byte varint */

static char golden_long_name[FSM_MAX_NAME];
static char golden_long_addr[FSM_MAX_ADDR];
static char golden_value[GOLDEN_VALUE_LEN];

static void golden_fill(void)
{
    memset(golden_long_name, 'N', sizeof(golden_long_name));
    memset(golden_long_addr, 'a', sizeof(golden_long_addr));
    for (size_t i = 0; i < sizeof(golden_value); i++)
        golden_value[i] = (char)i; /* every byte value below 200, NUL included */
}

#define LONG_NAME                                                                                  \
    {                                                                                              \
        golden_long_name, FSM_MAX_NAME                                                             \
    }

/* The sessions the issue-18 commands open (their revisions) and E1's first leader token. */
#define GOLDEN_SID_A 57
#define GOLDEN_SID_B 58
#define GOLDEN_SID_C 59
#define GOLDEN_SID_D 72
#define GOLDEN_SID_E 79  /* cooperative revocation's holder */
#define GOLDEN_SID_F 80  /* and its waiter */
#define GOLDEN_SID_G 100 /* reentrant sessions' (carol's, max count 3) */
#define GOLDEN_R1_TOKEN 81
#define GOLDEN_E1_TOKEN 67
#define GOLDEN_V1_TOKEN 105 /* alice's grant of V1 (lock metadata) */
#define GOLDEN_SID_M 106    /* and the session (dave's) that queues behind it */

static const struct fsm_cmd golden_cmds[] = {
    /* sessions 1-4 (revisions 1-4), with empty and maximal fields; a TTL of 0 is refused */
    {.op = FSM_OP_NOOP},
    {.op = FSM_OP_SESSION_OPEN,
     .now_ms = 1000,
     .session_open = {.ttl_ms = 10000, .lockdelay_ms = 500, .name = GS("alpha")}},
    {.op = FSM_OP_SESSION_OPEN,
     .now_ms = 1001,
     .session_open = {.ttl_ms = UINT64_MAX, .lockdelay_ms = UINT64_MAX, .name = GS("")}},
    {.op = FSM_OP_SESSION_OPEN, .now_ms = 1002, .session_open = {.ttl_ms = 1, .name = LONG_NAME}},
    {.op = FSM_OP_SESSION_OPEN,
     .now_ms = 1003,
     .session_open = {.ttl_ms = 30000, .lockdelay_ms = 250, .name = GS("delta")}},
    {.op = FSM_OP_SESSION_OPEN, .session_open = {.ttl_ms = 0, .name = GS("refused")}},
    /* locks: L1 granted to 1 (token 5), 2 and 4 queue, 3 tries in vain and takes the long name */
    {.op = FSM_OP_LOCK, .now_ms = UINT64_MAX, .lock = {.name = GS("L1"), .sid = 1}},
    {.op = FSM_OP_LOCK,
     .now_ms = 2000,
     .req_sid = 2,
     .req_seq = 1,
     .lock = {.name = GS("L1"), .sid = 2, .wait_ms = UINT64_MAX}},
    {.op = FSM_OP_LOCK, .lock = {.name = GS("L1"), .sid = 3}},
    {.op = FSM_OP_LOCK, .lock = {.name = GS("L1"), .sid = 4, .wait_ms = 100}},
    {.op = FSM_OP_LOCK, .now_ms = 2001, .lock = {.name = LONG_NAME, .sid = 3}},
    /* UNLOCK hands L1 to 2 (token 9); its retry replays; a non-holder gets NOTHOLDER */
    {.op = FSM_OP_UNLOCK,
     .now_ms = 2002,
     .req_sid = 1,
     .req_seq = 1,
     .unlock = {.name = GS("L1"), .sid = 1}},
    {.op = FSM_OP_UNLOCK,
     .now_ms = 2003,
     .req_sid = 1,
     .req_seq = 1,
     .unlock = {.name = GS("L1"), .sid = 1}},
    {.op = FSM_OP_UNLOCK, .unlock = {.name = GS("L1"), .sid = 3}},
    {.op = FSM_OP_CANCEL_WAIT, .cancel_wait = {.name = GS("L1"), .sid = 4}},
    {.op = FSM_OP_CANCEL_WAIT, .cancel_wait = {.name = GS("L1"), .sid = 2}},
    {.op = FSM_OP_LOCK, .lock = {.name = GS("L1"), .sid = 4, .wait_ms = 5000}},
    {.op = FSM_OP_LOCK, .now_ms = 2004, .lock = {.name = GS("L2"), .sid = 4}},
    {.op = FSM_OP_LOCK,
     .req_sid = 2,
     .req_seq = 1,
     .lock = {.name = GS("L1"), .sid = 2, .wait_ms = UINT64_MAX}},
    /* keys: every FENCE/IFREV combination on PUT and DEL, leases, empty and binary values */
    {.op = FSM_OP_PUT, .put = {.key = GS("k1"), .value = GS("")}},
    {.op = FSM_OP_PUT,
     .put = {.key = GS("k2"),
             .value = {golden_value, GOLDEN_VALUE_LEN},
             .lease_sid = 1,
             .cond = {.has_fence = true, .fence_name = GS("L1"), .fence_token = 9}}},
    {.op = FSM_OP_PUT,
     .put = {.key = GS("k3"), .value = GS("v3"), .cond = {.has_ifrev = true, .ifrev = 0}}},
    {.op = FSM_OP_PUT,
     .put = {.key = GS("k3"),
             .value = GS("v3b"),
             .lease_sid = 4,
             .cond = {.has_fence = true,
                      .fence_name = GS("L1"),
                      .fence_token = 9,
                      .has_ifrev = true,
                      .ifrev = 15}}},
    {.op = FSM_OP_PUT,
     .req_sid = 1,
     .req_seq = 2,
     .put = {.key = GS("k1"),
             .value = GS("x"),
             .cond = {.has_fence = true, .fence_name = GS("L1"), .fence_token = 5}}},
    {.op = FSM_OP_PUT,
     .put = {.key = GS("k1"), .value = GS("x"), .cond = {.has_ifrev = true, .ifrev = UINT64_MAX}}},
    {.op = FSM_OP_PUT,
     .put = {.key = LONG_NAME,
             .value = GS("long"),
             .lease_sid = 3,
             .cond = {.has_fence = true, .fence_name = LONG_NAME, .fence_token = 8}}},
    {.op = FSM_OP_PUT, .put = {.key = GS("k5"), .value = GS("v"), .lease_sid = 99}},
    {.op = FSM_OP_DEL, .del = {.key = GS("k1")}},
    {.op = FSM_OP_DEL, .del = {.key = GS("absent")}},
    {.op = FSM_OP_DEL,
     .del = {.key = GS("k2"),
             .cond = {.has_fence = true, .fence_name = GS("L1"), .fence_token = 9}}},
    {.op = FSM_OP_DEL, .del = {.key = GS("k3"), .cond = {.has_ifrev = true, .ifrev = 1}}},
    {.op = FSM_OP_DEL,
     .del = {.key = GS("k9"),
             .cond = {.has_fence = true,
                      .fence_name = GS("L2"),
                      .fence_token = UINT64_MAX,
                      .has_ifrev = true,
                      .ifrev = 0}}},
    {.op = FSM_OP_PUT, .put = {.key = GS("k6"), .value = GS("six"), .lease_sid = 2}},
    /* members: the longest and shortest addresses, the largest id; one removed again */
    {.op = FSM_OP_MEMBER_SET,
     .member_set = {.id = 1, .client_addr = GS("10.0.0.1:7480"), .raft_addr = GS("10.0.0.1:7481")}},
    {.op = FSM_OP_MEMBER_SET,
     .member_set = {.id = UINT64_MAX,
                    .client_addr = {golden_long_addr, FSM_MAX_ADDR},
                    .raft_addr = GS("r")}},
    {.op = FSM_OP_MEMBER_SET,
     .member_set = {.id = 2, .client_addr = GS("[::1]:7490"), .raft_addr = GS("[::1]:7491")}},
    {.op = FSM_OP_MEMBER_SET,
     .member_set = {.id = 1, .client_addr = GS("10.0.0.1:7480"), .raft_addr = GS("10.0.0.9:7481")}},
    {.op = FSM_OP_MEMBER_DEL, .member_del = {.id = 2}},
    {.op = FSM_OP_MEMBER_DEL, .member_del = {.id = 77}},
    /* checkpoints: a remainder, one at or over the TTL (clears), a clearing 0, a dead session */
    {.op = FSM_OP_SESSION_CHECKPOINT,
     .now_ms = 3000,
     .session_checkpoint = {.sid = 1, .remaining_ms = 4000}},
    {.op = FSM_OP_SESSION_CHECKPOINT, .session_checkpoint = {.sid = 2, .remaining_ms = UINT64_MAX}},
    {.op = FSM_OP_SESSION_CHECKPOINT, .session_checkpoint = {.sid = 4, .remaining_ms = 29999}},
    {.op = FSM_OP_SESSION_CHECKPOINT, .session_checkpoint = {.sid = 4, .remaining_ms = 0}},
    {.op = FSM_OP_SESSION_CHECKPOINT, .session_checkpoint = {.sid = 4, .remaining_ms = 12345}},
    {.op = FSM_OP_SESSION_CHECKPOINT, .session_checkpoint = {.sid = 1234, .remaining_ms = 1}},
    /* session 3 expires (its long-named lock and leased key go; lock-delay 0: no delay);
       session 27 takes L3 with 4 queued, then expires: L3 enters lock-delay with a waiter */
    {.op = FSM_OP_SESSION_EXPIRE, .now_ms = 4000, .session_expire = {.sid = 3}},
    {.op = FSM_OP_SESSION_OPEN,
     .session_open = {.ttl_ms = 700, .lockdelay_ms = 9000, .name = GS("echo")}},
    {.op = FSM_OP_LOCK, .now_ms = 4001, .lock = {.name = GS("L3"), .sid = 27}},
    {.op = FSM_OP_LOCK,
     .req_sid = 4,
     .req_seq = 7,
     .lock = {.name = GS("L3"), .sid = 4, .wait_ms = 60000}},
    {.op = FSM_OP_SESSION_EXPIRE, .now_ms = 4002, .session_expire = {.sid = 27}},
    {.op = FSM_OP_LOCK,
     .req_sid = 4,
     .req_seq = 7,
     .lock = {.name = GS("L3"), .sid = 4, .wait_ms = 60000}},
    /* session 31 holds L4, expires, and the lock-delay of L4 is ended early */
    {.op = FSM_OP_SESSION_OPEN,
     .session_open = {.ttl_ms = 50, .lockdelay_ms = 100, .name = GS("foxtrot")}},
    {.op = FSM_OP_LOCK, .lock = {.name = GS("L4"), .sid = 31}},
    {.op = FSM_OP_SESSION_EXPIRE, .session_expire = {.sid = 31}},
    {.op = FSM_OP_LOCKDELAY_END, .now_ms = 5000, .lockdelay_end = {.name = GS("L4")}},
    {.op = FSM_OP_LOCKDELAY_END, .lockdelay_end = {.name = GS("never-locked")}},
    /* closing: a dead session, superseded and repeated seqs, a NOOP with REQ; the sessions
       left hold one cached reply of each kind (ERR 1, INT 2, QUEUED 4, OK 35) */
    {.op = FSM_OP_SESSION_OPEN, .session_open = {.ttl_ms = 5, .name = GS("golf")}},
    {.op = FSM_OP_SESSION_OPEN, .session_open = {.ttl_ms = 6, .name = GS("hotel")}},
    {.op = FSM_OP_SESSION_CLOSE, .now_ms = 6000, .session_close = {.sid = 36}},
    {.op = FSM_OP_SESSION_CLOSE, .session_close = {.sid = 3}},
    {.op = FSM_OP_SESSION_EXPIRE, .session_expire = {.sid = 3}},
    {.op = FSM_OP_NOOP, .now_ms = UINT64_MAX, .req_sid = 35, .req_seq = UINT64_MAX >> 1},
    {.op = FSM_OP_UNLOCK, .req_sid = 35, .req_seq = 1, .unlock = {.name = GS("L2"), .sid = 4}},
    {.op = FSM_OP_PUT, .req_sid = 1, .req_seq = 1, .put = {.key = GS("k7"), .value = GS("late")}},
    {.op = FSM_OP_UNLOCK, .req_sid = 1, .req_seq = 3, .unlock = {.name = GS("L2"), .sid = 1}},
    {.op = FSM_OP_UNLOCK, .req_sid = 1, .req_seq = 3, .unlock = {.name = GS("L2"), .sid = 1}},
    {.op = FSM_OP_PUT,
     .req_sid = 2,
     .req_seq = 2,
     .put = {.key = GS("k8"),
             .value = GS("eight"),
             .lease_sid = 2,
             .cond = {.has_ifrev = true, .ifrev = 0}}},
    {.op = FSM_OP_PUT, .put = {.key = GS("z"), .value = {golden_value, GOLDEN_VALUE_LEN}}},
    {.op = FSM_OP_PUT, .put = {.key = GS("e"), .value = GS("")}},
    /* read-write locks (revision 40 so far; golden_snapshot is the state here) */
    {.op = FSM_OP_SESSION_OPEN,
     .session_open = {.ttl_ms = 20000, .lockdelay_ms = 400, .name = GS("india")}},
    {.op = FSM_OP_SESSION_OPEN, .session_open = {.ttl_ms = 20000, .name = GS("juliet")}},
    /* RW1: 41 and 42 share it, 35 queues exclusive, 1 shared behind it, 41 asks to upgrade (at
       the head), 42's second upgrade is refused; 42 expires: 41's upgrade is granted */
    {.op = FSM_OP_LOCK_SHARED, .now_ms = 7000, .lock_shared = {.name = GS("RW1"), .sid = 41}},
    {.op = FSM_OP_LOCK_SHARED,
     .req_sid = 42,
     .req_seq = 1,
     .lock_shared = {.name = GS("RW1"), .sid = 42}},
    {.op = FSM_OP_LOCK, .lock = {.name = GS("RW1"), .sid = 35, .wait_ms = 7000}},
    {.op = FSM_OP_LOCK_SHARED, .lock_shared = {.name = GS("RW1"), .sid = 1, .wait_ms = 8000}},
    {.op = FSM_OP_LOCK, .lock = {.name = GS("RW1"), .sid = 41, .wait_ms = 9000}},
    {.op = FSM_OP_LOCK, .lock = {.name = GS("RW1"), .sid = 42, .wait_ms = 1}},
    {.op = FSM_OP_LOCK_SHARED, .lock_shared = {.name = GS("L1"), .sid = 41}},
    {.op = FSM_OP_LOCK_SHARED,
     .req_sid = 42,
     .req_seq = 1,
     .lock_shared = {.name = GS("RW1"), .sid = 42}},
    {.op = FSM_OP_SESSION_EXPIRE, .session_expire = {.sid = 42}},
    /* RW2: 4 and 1 share it, 2 queues exclusive, 4 waits to upgrade at the head */
    {.op = FSM_OP_LOCK_SHARED, .lock_shared = {.name = GS("RW2"), .sid = 4}},
    {.op = FSM_OP_LOCK_SHARED, .lock_shared = {.name = GS("RW2"), .sid = 1, .wait_ms = 5}},
    {.op = FSM_OP_LOCK, .lock = {.name = GS("RW2"), .sid = 2, .wait_ms = 100}},
    {.op = FSM_OP_LOCK, .lock = {.name = GS("RW2"), .sid = 4, .wait_ms = 200}},
    /* RW1 goes to 35 (1 still waits, shared); RW3: 41 expires while sharing it with 2 */
    {.op = FSM_OP_UNLOCK, .unlock = {.name = GS("RW1"), .sid = 41}},
    {.op = FSM_OP_LOCK_SHARED, .lock_shared = {.name = GS("RW3"), .sid = 41}},
    {.op = FSM_OP_LOCK_SHARED, .lock_shared = {.name = GS("RW3"), .sid = 2}},
    {.op = FSM_OP_SESSION_EXPIRE, .now_ms = 8000, .session_expire = {.sid = 41}},
    /* session ownership (version-2 headers: acting user, admin bit) and the ops 14-20 of
     * semaphores and elections
       (golden_snapshot_v3 is the state here; golden_snapshot_v4 the state after them) */
    {.op = FSM_OP_SESSION_OPEN,
     .now_ms = 9000,
     .user = GS("alice"),
     .session_open = {.ttl_ms = 40000, .lockdelay_ms = 300, .name = GS("kilo")}},
    {.op = FSM_OP_SESSION_OPEN,
     .user = GS("bob"),
     .admin = true,
     .session_open = {.ttl_ms = 40000, .name = GS("lima")}},
    {.op = FSM_OP_SESSION_OPEN,
     .checked = true,
     .session_open = {.ttl_ms = 40000, .lockdelay_ms = 600, .name = GS("mike")}},
    /* alice locks O1 with REQ (a digest is recorded), retries it, reuses the seq otherwise */
    {.op = FSM_OP_LOCK,
     .req_sid = GOLDEN_SID_A,
     .req_seq = 1,
     .user = GS("alice"),
     .lock = {.name = GS("O1"), .sid = GOLDEN_SID_A, .wait_ms = 1000}},
    {.op = FSM_OP_LOCK,
     .req_sid = GOLDEN_SID_A,
     .req_seq = 1,
     .user = GS("alice"),
     .lock = {.name = GS("O1"), .sid = GOLDEN_SID_A, .wait_ms = 900}},
    {.op = FSM_OP_LOCK,
     .req_sid = GOLDEN_SID_A,
     .req_seq = 1,
     .user = GS("alice"),
     .lock = {.name = GS("O9"), .sid = GOLDEN_SID_A}},
    /* bob may not act as alice's session, nor unlock without admin; the checked empty user
       owns the unowned session */
    {.op = FSM_OP_LOCK, .user = GS("bob"), .lock = {.name = GS("O2"), .sid = GOLDEN_SID_A}},
    {.op = FSM_OP_UNLOCK, .user = GS("bob"), .unlock = {.name = GS("O1"), .sid = GOLDEN_SID_A}},
    {.op = FSM_OP_LOCK_SHARED,
     .checked = true,
     .lock_shared = {.name = GS("RW4"), .sid = GOLDEN_SID_C}},
    {.op = FSM_OP_LOCK_SHARED,
     .user = GS("alice"),
     .lock_shared = {.name = GS("RW4"), .sid = GOLDEN_SID_A}},
    /* S1 (limit 2): alice and bob take permits, session 1 queues, bob releases: 1 gets it */
    {.op = FSM_OP_SEM_ACQUIRE,
     .now_ms = 9100,
     .user = GS("alice"),
     .sem_acquire = {.name = GS("S1"), .sid = GOLDEN_SID_A, .limit = 2}},
    {.op = FSM_OP_SEM_ACQUIRE,
     .req_sid = GOLDEN_SID_B,
     .req_seq = 5,
     .user = GS("bob"),
     .admin = true,
     .sem_acquire = {.name = GS("S1"), .sid = GOLDEN_SID_B, .limit = 2, .wait_ms = 10}},
    {.op = FSM_OP_SEM_ACQUIRE,
     .sem_acquire = {.name = GS("S1"), .sid = 1, .limit = 2, .wait_ms = 5000}},
    {.op = FSM_OP_SEM_ACQUIRE,
     .sem_acquire = {.name = GS("S1"), .sid = 2, .limit = 3, .wait_ms = 5000}},
    {.op = FSM_OP_SEM_ACQUIRE, .sem_acquire = {.name = GS("O1"), .sid = 2, .limit = 1}},
    {.op = FSM_OP_SEM_ACQUIRE, .sem_acquire = {.name = GS("S2"), .sid = 2, .limit = 0}},
    {.op = FSM_OP_SEM_RELEASE,
     .user = GS("bob"),
     .sem_release = {.name = GS("S1"), .sid = GOLDEN_SID_B}},
    {.op = FSM_OP_SEM_RELEASE, .sem_release = {.name = GS("S1"), .sid = 4}},
    /* E1: alice leads with a value, bob campaigns (a candidate with a value), alice proclaims;
       a stale token is refused; E2 is won by 2 and resigned (no leader left) */
    {.op = FSM_OP_ELECT_CAMPAIGN,
     .now_ms = 9200,
     .user = GS("alice"),
     .elect_campaign = {.name = GS("E1"), .sid = GOLDEN_SID_A, .value = GS("alice:7480")}},
    {.op = FSM_OP_ELECT_CAMPAIGN,
     .user = GS("bob"),
     .elect_campaign = {.name = GS("E1"),
                        .sid = GOLDEN_SID_B,
                        .value = {golden_value, GOLDEN_VALUE_LEN},
                        .wait_ms = 60000}},
    {.op = FSM_OP_ELECT_PROCLAIM,
     .user = GS("alice"),
     .elect_proclaim = {.name = GS("E1"),
                        .sid = GOLDEN_SID_A,
                        .token = GOLDEN_E1_TOKEN,
                        .value = GS("alice:7481")}},
    {.op = FSM_OP_ELECT_PROCLAIM,
     .user = GS("alice"),
     .elect_proclaim = {.name = GS("E1"), .sid = GOLDEN_SID_A, .token = 1, .value = GS("")}},
    {.op = FSM_OP_ELECT_CAMPAIGN, .elect_campaign = {.name = GS("E2"), .sid = 2, .value = GS("")}},
    {.op = FSM_OP_ELECT_RESIGN, .elect_resign = {.name = GS("E2"), .sid = 2}},
    {.op = FSM_OP_ELECT_RESIGN, .elect_resign = {.name = GS("E2"), .sid = 2}},
    /* a session of carol holding a lock is revoked by an admin (lock-delay applies); bob
       without admin may not revoke alice's */
    {.op = FSM_OP_SESSION_OPEN,
     .user = GS("carol"),
     .session_open = {.ttl_ms = 40000, .lockdelay_ms = 700, .name = GS("november")}},
    {.op = FSM_OP_LOCK, .user = GS("carol"), .lock = {.name = GS("O3"), .sid = GOLDEN_SID_D}},
    {.op = FSM_OP_SESSION_REVOKE,
     .now_ms = 9300,
     .user = GS("dave"),
     .admin = true,
     .session_revoke = {.sid = GOLDEN_SID_D}},
    {.op = FSM_OP_SESSION_REVOKE, .user = GS("dave"), .session_revoke = {.sid = GOLDEN_SID_A}},
    {.op = FSM_OP_SESSION_REVOKE, .session_revoke = {.sid = 12345}},
    /* the upgrade gate: the cluster's log format goes to 2 (golden_snapshot_v4 is the state
       before; golden_snapshot_v5 the state after) and is not lowered (a format above
       FSM_FORMAT_MAX is left out: its reply changes when a format 3 comes) */
    {.op = FSM_OP_CLUSTER_FORMAT, .now_ms = 9400, .cluster_format = {.format = 2}},
    {.op = FSM_OP_CLUSTER_FORMAT, .cluster_format = {.format = 2}},
    {.op = FSM_OP_CLUSTER_FORMAT, .cluster_format = {.format = 1}},
    /* LOCK_MULTI: alice takes M1 and M2 (shared) in one entry; bob's request for M1 and M3
       queues on both (M3 is free: the queued request blocks it), and the final snapshot holds
       it waiting; a name bob already waits for is refused; one of its names read-locked */
    {.op = FSM_OP_LOCK_MULTI,
     .now_ms = 9500,
     .user = GS("alice"),
     .lock_multi = {.sid = GOLDEN_SID_A, .names = {2, GS("\x00\x02M1\x01\x02M2")}, .wait_ms = 0}},
    {.op = FSM_OP_LOCK_MULTI,
     .user = GS("bob"),
     .req_sid = GOLDEN_SID_B,
     .req_seq = 9,
     .lock_multi = {.sid = GOLDEN_SID_B,
                    .names = {3, GS("\x00\x02M1\x01\x02M2\x00\x02M3")},
                    .wait_ms = 30000}},
    {.op = FSM_OP_LOCK_MULTI,
     .user = GS("bob"),
     .lock_multi = {.sid = GOLDEN_SID_B, .names = {1, GS("\x00\x02M3")}, .wait_ms = 1}},
    /* cooperative revocation: erin holds R1, frank waits; ops revokes it twice (the deadline
       stays the shorter), a stale deadline changes nothing, the deadline releases erin's grant
       with her lock-delay, frank gets R1, a free lock cannot be revoked, and frank's grant is
       left with a pending revoke without deadline (golden_snapshot_v6) */
    {.op = FSM_OP_SESSION_OPEN,
     .user = GS("erin"),
     .session_open = {.ttl_ms = 30000, .lockdelay_ms = 400, .name = GS("oscar")}},
    {.op = FSM_OP_SESSION_OPEN,
     .user = GS("frank"),
     .session_open = {.ttl_ms = 30000, .name = GS("papa")}},
    {.op = FSM_OP_LOCK, .user = GS("erin"), .lock = {.name = GS("R1"), .sid = GOLDEN_SID_E}},
    {.op = FSM_OP_LOCK,
     .user = GS("frank"),
     .lock = {.name = GS("R1"), .sid = GOLDEN_SID_F, .wait_ms = 5000}},
    {.op = FSM_OP_LOCK_REVOKE,
     .now_ms = 9500,
     .user = GS("ops"),
     .lock_revoke = {.name = GS("R1"),
                     .deadline_ms = 2000,
                     .reason = GS("maintenance"),
                     .by = GS("ops@127.0.0.1:9000")}},
    {.op = FSM_OP_LOCK_REVOKE,
     .user = GS("ops"),
     .lock_revoke = {.name = GS("R1"), .deadline_ms = 5000, .reason = GS("again"), .by = GS("")}},
    {.op = FSM_OP_REVOKE_END, .revoke_end = {.name = GS("R1"), .token = 1}},
    {.op = FSM_OP_REVOKE_END, .revoke_end = {.name = GS("R1"), .token = GOLDEN_R1_TOKEN}},
    {.op = FSM_OP_LOCKDELAY_END, .lockdelay_end = {.name = GS("R1")}},
    {.op = FSM_OP_LOCK_REVOKE, .user = GS("ops"), .lock_revoke = {.name = GS("R9")}},
    {.op = FSM_OP_LOCK_REVOKE,
     .user = GS("ops"),
     .lock_revoke = {.name = GS("R1"), .reason = GS("when you can"), .by = GS("127.0.0.1:9001")}},
    /* LOCK ... NOTIFY: erin queues behind frank and frank is told */
    {.op = FSM_OP_LOCK_NOTIFY,
     .user = GS("erin"),
     .lock_notify = {.name = GS("R1"), .sid = GOLDEN_SID_E, .wait_ms = 3000}},
    /* the cluster's deadlock search limit: set (golden_snapshot_v7 holds it), the same value
       again (no revision), one over the maximum (ERR) */
    {.op = FSM_OP_DEADLOCK_LIMIT, .now_ms = 9600, .deadlock_limit = {.limit = 5}},
    {.op = FSM_OP_DEADLOCK_LIMIT, .deadlock_limit = {.limit = 5}},
    {.op = FSM_OP_DEADLOCK_LIMIT, .deadlock_limit = {.limit = 100000001}},
    /* INCR: a counter created at 5, stepped by -7 under REQ (a negative step: a 10-byte varint),
       refused on a value that is not an integer, on overflow and with a stale FENCE token:
       nothing changes on a refusal */
    {.op = FSM_OP_INCR, .now_ms = 9600, .user = GS("alice"), .incr = {.key = GS("ctr"), .by = 5}},
    {.op = FSM_OP_INCR,
     .user = GS("bob"),
     .req_sid = GOLDEN_SID_B,
     .req_seq = 10,
     .incr = {.key = GS("ctr"), .by = (uint64_t)-7}},
    {.op = FSM_OP_PUT, .user = GS("alice"), .put = {.key = GS("text"), .value = GS("abc")}},
    {.op = FSM_OP_INCR, .user = GS("alice"), .incr = {.key = GS("text"), .by = 1}},
    {.op = FSM_OP_INCR, .user = GS("alice"), .incr = {.key = GS("ctr"), .by = (uint64_t)INT64_MIN}},
    {.op = FSM_OP_INCR,
     .user = GS("alice"),
     .incr = {.key = GS("ctr"),
              .by = 1,
              .cond = {.has_fence = true, .fence_name = GS("M1"), .fence_token = 1}}},
    /* weighted semaphores: alice takes 2 of W's 3 permits, bob queues for 2, a request for more
       than the limit is refused; the operator raises the limit to 4 (bob is granted), lowers
       it to 2 (both keep their permits: 4 in use), and finds no semaphore X; alice releases
       and asks for 1, which waits for bob, who waits (M1, M2) for alice: a deadlock */
    {.op = FSM_OP_SEM_ACQUIRE_W,
     .now_ms = 9600,
     .user = GS("alice"),
     .sem_acquire_w = {.name = GS("W"), .sid = GOLDEN_SID_A, .limit = 3, .permits = 2}},
    {.op = FSM_OP_SEM_ACQUIRE_W,
     .user = GS("bob"),
     .sem_acquire_w =
         {.name = GS("W"), .sid = GOLDEN_SID_B, .limit = 3, .permits = 2, .wait_ms = 30000}},
    {.op = FSM_OP_SEM_ACQUIRE_W,
     .user = GS("alice"),
     .sem_acquire_w = {.name = GS("W"), .sid = GOLDEN_SID_A, .limit = 3, .permits = 4}},
    {.op = FSM_OP_SEM_SETLIMIT,
     .user = GS("root"),
     .admin = true,
     .sem_setlimit = {.name = GS("W"), .limit = 4}},
    {.op = FSM_OP_SEM_SETLIMIT, .sem_setlimit = {.name = GS("W"), .limit = 2}},
    {.op = FSM_OP_SEM_SETLIMIT, .sem_setlimit = {.name = GS("X"), .limit = 2}},
    {.op = FSM_OP_SEM_RELEASE,
     .user = GS("alice"),
     .sem_release = {.name = GS("W"), .sid = GOLDEN_SID_A}},
    {.op = FSM_OP_SEM_ACQUIRE_W,
     .user = GS("alice"),
     .sem_acquire_w =
         {.name = GS("W"), .sid = GOLDEN_SID_A, .limit = 2, .permits = 1, .wait_ms = 30000}},
    /* reentrant sessions: a max count of 0 is refused; carol's session (max 3) locks RL three
       times (the same token; a retried seq does not count), a fourth is refused, one UNLOCK
       counts down: RL stays held with a count of 2 (the snapshot's section 2) */
    {.op = FSM_OP_SESSION_OPEN_REENTRANT,
     .now_ms = 9700,
     .user = GS("carol"),
     .session_open_reentrant = {.ttl_ms = 10000, .max_count = 0}},
    {.op = FSM_OP_SESSION_OPEN_REENTRANT,
     .user = GS("carol"),
     .session_open_reentrant =
         {.ttl_ms = 20000, .lockdelay_ms = 500, .name = GS("rec"), .max_count = 3}},
    {.op = FSM_OP_LOCK,
     .user = GS("carol"),
     .req_sid = GOLDEN_SID_G,
     .req_seq = 1,
     .lock = {.name = GS("RL"), .sid = GOLDEN_SID_G}},
    {.op = FSM_OP_LOCK,
     .user = GS("carol"),
     .req_sid = GOLDEN_SID_G,
     .req_seq = 2,
     .lock = {.name = GS("RL"), .sid = GOLDEN_SID_G}},
    {.op = FSM_OP_LOCK,
     .user = GS("carol"),
     .req_sid = GOLDEN_SID_G,
     .req_seq = 2,
     .lock = {.name = GS("RL"), .sid = GOLDEN_SID_G}},
    {.op = FSM_OP_LOCK,
     .user = GS("carol"),
     .req_sid = GOLDEN_SID_G,
     .req_seq = 3,
     .lock = {.name = GS("RL"), .sid = GOLDEN_SID_G}},
    {.op = FSM_OP_LOCK,
     .user = GS("carol"),
     .req_sid = GOLDEN_SID_G,
     .req_seq = 4,
     .lock = {.name = GS("RL"), .sid = GOLDEN_SID_G}},
    {.op = FSM_OP_UNLOCK,
     .user = GS("carol"),
     .req_sid = GOLDEN_SID_G,
     .req_seq = 5,
     .unlock = {.name = GS("RL"), .sid = GOLDEN_SID_G}},
    /* lock metadata: alice locks V1 with a 200-byte value and a max hold; dave (a new session)
       queues with a value and NOTIFY; a stale max-hold timer changes nothing, the one of alice's
       grant releases it as an expiry (transitions 1; dave's value waits with him, or is granted);
       alice locks V2 with a value and a max hold; a bad flag is refused */
    {.op = FSM_OP_LOCK_META,
     .now_ms = 9700,
     .user = GS("alice"),
     .lock_meta = {.name = GS("V1"),
                   .sid = GOLDEN_SID_A,
                   .value = {golden_value, GOLDEN_VALUE_LEN},
                   .maxhold_ms = 30000}},
    {.op = FSM_OP_SESSION_OPEN,
     .user = GS("dave"),
     .session_open = {.ttl_ms = 60000, .name = GS("golf")}},
    {.op = FSM_OP_LOCK_META,
     .user = GS("dave"),
     .lock_meta = {.name = GS("V1"),
                   .sid = GOLDEN_SID_M,
                   .flags = 1,
                   .value = GS("job=b"),
                   .wait_ms = 30000}},
    {.op = FSM_OP_MAXHOLD_END, .maxhold_end = {.name = GS("V1"), .token = 1}},
    {.op = FSM_OP_MAXHOLD_END, .maxhold_end = {.name = GS("V1"), .token = GOLDEN_V1_TOKEN}},
    {.op = FSM_OP_LOCK_META,
     .user = GS("alice"),
     .lock_meta = {.name = GS("V2"),
                   .sid = GOLDEN_SID_A,
                   .value = GS("host=h"),
                   .maxhold_ms = FSM_MAX_MAXHOLD_MS}},
    {.op = FSM_OP_LOCK_META,
     .user = GS("alice"),
     .lock_meta = {.name = GS("V3"), .sid = GOLDEN_SID_A, .flags = 2}},
    /* latches and barriers: latch K of 2, alice and bob join, alice counts down, another count
       is refused; barrier Q of 2 fills with alice and bob, alice leaves (bob is still inside);
       latch D is created and deleted; bob expires before counting down and while inside Q:
       both break; latch Z of 2 with alice's promise stays (snapshot section 3) */
    {.op = FSM_OP_LATCH_CREATE,
     .now_ms = 9700,
     .user = GS("alice"),
     .latch_create = {.name = GS("K"), .count = 2}},
    {.op = FSM_OP_LATCH_JOIN,
     .user = GS("alice"),
     .latch_join = {.name = GS("K"), .sid = GOLDEN_SID_A}},
    {.op = FSM_OP_LATCH_JOIN,
     .user = GS("bob"),
     .latch_join = {.name = GS("K"), .sid = GOLDEN_SID_B}},
    {.op = FSM_OP_LATCH_COUNTDOWN,
     .user = GS("alice"),
     .latch_countdown = {.name = GS("K"), .sid = GOLDEN_SID_A}},
    {.op = FSM_OP_LATCH_CREATE, .user = GS("alice"), .latch_create = {.name = GS("K"), .count = 3}},
    {.op = FSM_OP_BARRIER,
     .user = GS("alice"),
     .barrier = {.name = GS("Q"), .sid = GOLDEN_SID_A, .count = 2}},
    {.op = FSM_OP_BARRIER,
     .user = GS("bob"),
     .barrier = {.name = GS("Q"), .sid = GOLDEN_SID_B, .count = 2}},
    {.op = FSM_OP_BARRIER,
     .user = GS("alice"),
     .barrier = {.name = GS("Q"), .sid = GOLDEN_SID_A, .leave = 1}},
    {.op = FSM_OP_LATCH_CREATE, .latch_create = {.name = GS("D"), .count = 1}},
    {.op = FSM_OP_LATCH_DELETE, .latch_delete = {.name = GS("D")}},
    {.op = FSM_OP_SESSION_EXPIRE, .now_ms = 9800, .session_expire = {.sid = GOLDEN_SID_B}},
    {.op = FSM_OP_LATCH_CREATE, .user = GS("alice"), .latch_create = {.name = GS("Z"), .count = 2}},
    {.op = FSM_OP_LATCH_JOIN,
     .user = GS("alice"),
     .latch_join = {.name = GS("Z"), .sid = GOLDEN_SID_A}},
    /* the lock history (history.c): on, then a grant, a waiter and a hand-over it records */
    {.op = FSM_OP_HISTORY_LIMITS,
     .now_ms = 9900,
     .history_limits = {.per_lock = 4, .max_entries = 100}},
    {.op = FSM_OP_LOCK, .now_ms = 9901, .lock = {.name = GS("H"), .sid = GOLDEN_SID_A}},
    {.op = FSM_OP_LOCK,
     .now_ms = 9902,
     .lock = {.name = GS("H"), .sid = GOLDEN_SID_M, .wait_ms = 30000}},
    {.op = FSM_OP_UNLOCK, .now_ms = 9950, .unlock = {.name = GS("H"), .sid = GOLDEN_SID_A}},
    /* operators' semaphore limits (semlimit.c): live W gets 3 from an admin; W9 gets 2 before
       its semaphore exists, which alice's acquire with another limit (5: accepted, ignored)
       then creates; the lock H is WRONGTYPE; W8's is set and reset, W7 (none) reset; W and W9
       stay in section 5 */
    {.op = FSM_OP_SEM_LIMIT_SET,
     .now_ms = 9960,
     .user = GS("root"),
     .admin = true,
     .sem_limit_set = {.name = GS("W"), .limit = 3}},
    {.op = FSM_OP_SEM_LIMIT_SET, .sem_limit_set = {.name = GS("W9"), .limit = 2}},
    {.op = FSM_OP_SEM_ACQUIRE_W,
     .user = GS("alice"),
     .sem_acquire_w = {.name = GS("W9"), .sid = GOLDEN_SID_A, .limit = 5, .permits = 2}},
    {.op = FSM_OP_SEM_LIMIT_SET, .sem_limit_set = {.name = GS("H"), .limit = 2}},
    {.op = FSM_OP_SEM_LIMIT_SET, .sem_limit_set = {.name = GS("W8"), .limit = 4}},
    {.op = FSM_OP_SEM_LIMIT_RESET, .sem_limit_reset = {.name = GS("W8")}},
    {.op = FSM_OP_SEM_LIMIT_RESET, .sem_limit_reset = {.name = GS("W7")}},
    /* TXN (txn.c): IF HOLDS H (dave's session got it above) IF MISSING tx-a THEN PUT tx-a 1,
       INCR tx-n 5, DEL tx-gone (absent: 0) ELSE PUT tx-else x -> THEN, one revision */
    {.op = FSM_OP_TXN,
     .now_ms = 9960,
     .txn = {.txn = {2, 3, 1,
                     GS("\x06\x00\x01H\x6a\x00"
                        "\x04\x00\x04tx-a\x00\x00"
                        "\x10\x00\x04tx-a\x00\x01"
                        "1"
                        "\x12\x00\x04tx-n\x05\x00"
                        "\x11\x00\x07tx-gone\x00\x00"
                        "\x10\x00\x07tx-else\x00\x01x")}}},
    /* a stale FENCE on the whole TXN: STALE, nothing applied */
    {.op = FSM_OP_TXN,
     .now_ms = 9961,
     .txn = {.txn = {0, 1, 0, GS("\x11\x00\x04tx-a\x00\x00")},
             .cond = {.has_fence = true, .fence_name = GS("H"), .fence_token = 1}}},
    /* IF VALUE tx-a != 1 (false) -> ELSE: INCR tx-n -1 (a 10-byte varint), by alice */
    {.op = FSM_OP_TXN,
     .now_ms = 9962,
     .user = GS("alice"),
     .txn = {.txn = {1, 1, 1,
                     GS("\x02\x01\x04tx-a\x00\x01"
                        "1"
                        "\x11\x00\x04tx-a\x00\x00"
                        "\x12\x00\x04tx-n\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x00")}}},
    /* a lock value in the history (history.c's value flag), ended by UNLOCK */
    {.op = FSM_OP_LOCK_META,
     .now_ms = 9960,
     .user = GS("alice"),
     .lock_meta = {.name = GS("HV"), .sid = GOLDEN_SID_A, .value = GS("job=42")}},
    {.op = FSM_OP_UNLOCK,
     .now_ms = 9970,
     .user = GS("alice"),
     .unlock = {.name = GS("HV"), .sid = GOLDEN_SID_A}},
    /* a member's HTTP address (member_http.c): set; the same again (no revision); no entry and
       an unknown flag (ERR, nothing changes); MEMBER_SET keeps it */
    {.op = FSM_OP_MEMBER_HTTP,
     .member_http = {.id = 1, .http_addr = GS("10.0.0.1:7482"), .flags = FSM_MEMBER_HTTP_TLS}},
    {.op = FSM_OP_MEMBER_HTTP,
     .member_http = {.id = 1, .http_addr = GS("10.0.0.1:7482"), .flags = FSM_MEMBER_HTTP_TLS}},
    {.op = FSM_OP_MEMBER_HTTP, .member_http = {.id = 77, .http_addr = GS("10.0.0.7:7482")}},
    {.op = FSM_OP_MEMBER_HTTP,
     .member_http = {.id = 1, .http_addr = GS("10.0.0.1:7482"), .flags = 2}},
    {.op = FSM_OP_MEMBER_HTTP,
     .member_http = {.id = UINT64_MAX, .http_addr = {golden_long_addr, FSM_MAX_ADDR}}},
    {.op = FSM_OP_MEMBER_SET,
     .member_set = {.id = 1, .client_addr = GS("10.0.0.1:7483"), .raft_addr = GS("10.0.0.9:7481")}},
    /* trace context: a LOCK and its UNLOCK with a traceparent in the header (codec.c flag bit 1),
       kept in the history (section 4's second format) */
    {.op = FSM_OP_LOCK,
     .now_ms = 9980,
     .user = GS("alice"),
     .traced = true,
     .trace = {{0x00, 0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d,
                0x0e, 0x0e, 0x47, 0x36, 0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7, 0x01}},
     .lock = {.name = GS("HT"), .sid = GOLDEN_SID_A}},
    {.op = FSM_OP_UNLOCK,
     .now_ms = 9990,
     .user = GS("alice"),
     .traced = true,
     .trace = {{0x00, 0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21,
                0x1c, 0x80, 0x31, 0x9c, 0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31, 0x00}},
     .unlock = {.name = GS("HT"), .sid = GOLDEN_SID_A}},
};

#define GOLDEN_N_CMDS (sizeof(golden_cmds) / sizeof(golden_cmds[0]))
/* The commands before read-write locks': golden_snapshot (version 2) is the state after them, and
 * golden_snapshot_v3 the state after all of them. */
#define GOLDEN_N_V2_CMDS 69
/* The commands before session ownership's and the primitives': golden_snapshot_v3 is the state
 * after them, golden_snapshot_v4 the state after all of them. */
#define GOLDEN_N_V3_CMDS 88
/* Before the CLUSTER_FORMAT entries: golden_snapshot_v4 is the state after them,
 * golden_snapshot_v5 the state after GOLDEN_N_V5_CMDS. */
#define GOLDEN_N_V4_CMDS 118
/* Before LOCK_MULTI's: golden_snapshot_v5 is the state after them, golden_snapshot_multi (also
 * version 5) the state after GOLDEN_N_MULTI_CMDS. */
#define GOLDEN_N_V5_CMDS 121
/* Before cooperative revocation's: golden_snapshot_multi is the state after them,
 * golden_snapshot_v6 the state after GOLDEN_N_V6_CMDS. */
#define GOLDEN_N_MULTI_CMDS 124
/* Before DEADLOCK_LIMIT's: golden_snapshot_v6 is the state after them, golden_snapshot_v7 the
 * state after GOLDEN_N_V7_CMDS. */
#define GOLDEN_N_V6_CMDS 136
/* Before INCR's: golden_snapshot_v7 is the state after them, golden_snapshot_incr (also
 * version 7) the state after GOLDEN_N_INCR_CMDS. */
#define GOLDEN_N_V7_CMDS 139
/* Before the weighted semaphores': golden_snapshot_incr is the state after them,
 * golden_snapshot_wsem (version 7, a weighted semaphore over a lowered limit) after all. */
#define GOLDEN_N_INCR_CMDS 145
/* Before reentrant sessions': golden_snapshot_wsem is the state after them,
 * golden_snapshot_reent (version 8, section 2: a reentrant session and a hold count) after all. */
#define GOLDEN_N_WSEM_CMDS 153
/* Before lock metadata's: golden_snapshot_reent is the state after them, golden_snapshot_lockmeta
 * (version 8, sections 1 and 2) the state after GOLDEN_N_LOCKMETA_CMDS. */
#define GOLDEN_N_REENT_CMDS 161
/* Before the latches': golden_snapshot_lockmeta is the state after them, golden_snapshot_latch
 * (version 8, with sections 1, 2 and 3: latches and barriers) the state after all of them. */
#define GOLDEN_N_LOCKMETA_CMDS 168
/* Before the lock history's: golden_snapshot_latch is the state after them,
 * golden_snapshot_history (version 8, sections 1 to 4) the state after all of them. */
#define GOLDEN_N_LATCH_CMDS 181
/* Before the operators' semaphore limits': golden_snapshot_history is the state after them,
 * golden_snapshot_semlimit (version 8, sections 1 to 5) the state after them. */
#define GOLDEN_N_HISTORY_CMDS 185
/* Before TXN's: golden_snapshot_semlimit is the state after them, golden_snapshot_txn (version
 * 8, keys a TXN wrote) the state after GOLDEN_N_TXN_CMDS. */
#define GOLDEN_N_SEMLIM_CMDS 192
/* Before the history's lock values, the members' HTTP addresses and trace context:
 * golden_snapshot_txn is the state after them, golden_snapshot_http (version 8, sections 1 to 6:
 * a history entry with a value, two members with an HTTP address, traced entries: section 4 in
 * its traceparent format) the state after all of them. */
#define GOLDEN_N_TXN_CMDS 195

#endif
