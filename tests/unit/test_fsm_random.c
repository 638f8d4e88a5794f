/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fsm_random — long seeded random command sequences against a reference model.
 *
 * Each step builds a random command (a few sessions, locks and keys; some REQ retries; some
 * garbage bytes), predicts its reply from a small model of the rules, applies it, and then
 * checks: fsm_check_invariants; the predicted reply; the revision delta; every event against
 * the model (grants only to the FIFO head or on a free lock, never during lock-delay, never to
 * a dead session; tokens strictly increasing per lock and globally); and the model's locks and
 * keys against the FSM's queries, and the model's member table (sorted by id) against
 * fsm_member_get / fsm_foreach_member. Member ids come from a range wider than
 * FSM_MAX_MEMBERS, and alternate phases favour MEMBER_SET or MEMBER_DEL, so the table fills
 * up (and refuses new ids) and drains again. Every WINDOW steps the state is snapshotted into a
 * restored copy; for the next steps both are fed the same commands and must agree byte for byte.
 * A third FSM with another hash key (fsm_set_hash_key; the restored copies get a third) is fed
 * the whole log beside: its replies and events must equal the original's at every step and its
 * snapshot at every WINDOW (nothing replicated may depend on the bucket order of lock names).
 * Cooperative revocation is in the mix: LOCK_NOTIFY (a LOCK whose WAIT_NOTIFY must go to the
 * holder it queued behind), LOCK_REVOKE (deadline in wait_ms) and REVOKE_END (the
 * grant in token), the model holding each lock's pending revoke (its grant and deadline).
 * Lock metadata too: LOCK_META (a LOCK, or with flags bit 0 a LOCK_NOTIFY, whose grant carries
 * a value from a small pool and a max hold, kept by its waiter until granted; bad flags or an
 * over-long max hold: ERR) and MAXHOLD_END (releases only a grant with a max hold, as an
 * expiry); the model holds each grant's and waiter's value and max hold and each record's
 * transitions (ended grants; 0 again once the record is dropped), checks every GRANTED event's
 * value and compares all of it with fsm_lock_info.
 *
 * Reentrant sessions (SESSION_OPEN_REENTRANT, small max counts) are in the mix too: the model
 * keeps each lock's hold count, predicts a counted LOCK (the same token, one revision, no event)
 * or its refusal at the max count, and lets only the last hold's UNLOCK release.
 *
 * Odd seeds run at log format 2, where deadlock detection is on (src/fsm/waitgraph.h): the
 * model computes the wait-for graph on its own (a waiter waits for the holder and for every
 * session queued before it, over all the locks it is queued on: a waiting LOCK_MULTI for the
 * union over its names) and predicts -DEADLOCK exactly when the new wait's session is
 * reachable from those it would wait for (a LOCK_MULTI: on any of its names); the cycle the
 * DEADLOCK event names must be a path of real edges of that graph from the session back to it,
 * its first edge the new request on the event's lock.
 * DEADLOCK_LIMIT entries (0, the default, or over the maximum: ERR) turn detection off and on
 * again for every replica alike (a revision only when it changes; 0 is kept in snapshot v7).
 *
 * The lock history (src/fsm/history.c) is on, with small limits (3 per lock, 6 in all) so that
 * it evicts all the time: every GRANTED event must be the newest kept grant of its lock with
 * that session (or already dropped: its token at most the compacted one), every RELEASED event
 * must have ended its grant's entry at this entry's revision, and the history takes part in the
 * snapshot and twin comparisons above (byte for byte, every replica the same).
 *
 * TXN is in the mix (compares on the pool's keys and locks, a few ops per branch, a FENCE now
 * and then): the model evaluates the compares, predicts ERR for a key written twice or a bad
 * INCR, and otherwise applies the branch under one revision, checking each op's result.
 *
 * Usage: test_fsm_random [seed [steps]]; or FSM_SEED=seed. Default: 20 seeds x 5000 steps.
 */
#include <stdlib.h>
#include <string.h>

#include "fsm/fsm.h"
#include "fsm/waitgraph.h"
#include "test.h"

#define NLOCKS 4
#define NKEYS 5
#define MAXS 4096 /* sessions ever opened in one run */
#define MAXQ 32
#define MAX_ALIVE 10
#define WINDOW 250
#define TWIN 150 /* steps a restored copy runs beside the original */
#define TX_MAX 5 /* a TXN's compares and ops in the mix: 2 + 2 + 1 at most */

/* ---- PRNG (xorshift64*): the test's own, so a seed means the same run everywhere ---- */

static uint64_t rng_state;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}
static uint64_t below(uint64_t n)
{
    return n ? rnd() % n : 0;
}
static int chance(int pct)
{
    return (int)below(100) < pct;
}

/* ---- the model's view of a command ---- */

/*
 * The model predicts every op from one flat record (sid is the member id for the member ops,
 * name/key the addresses of MEMBER_SET, wait_ms the remainder of SESSION_CHECKPOINT), as the
 * FSM's command struct was before it had a payload per op. Fields an op does not carry are 0.
 * It meets struct fsm_cmd only at the codec: mcmd_to_cmd before encoding, mcmd_from_cmd after
 * decoding.
 */
struct mcmd {
    uint8_t op;
    uint64_t now_ms, req_sid, req_seq;
    uint64_t sid, ttl_ms, lockdelay_ms, wait_ms;
    struct fsm_str name, key, value;
    uint64_t lease_sid;
    bool has_fence;
    struct fsm_str fence_name;
    uint64_t fence_token;
    bool has_ifrev;
    uint64_t ifrev;
    uint64_t token;           /* REVOKE_END: the grant */
    struct fsm_str reason;    /* LOCK_REVOKE */
    uint8_t mset;             /* LOCK_MULTI: its names, a bit per LOCKN index (exclusive only) */
    uint64_t by;              /* INCR: its step, an int64_t in two's complement */
    bool mbad;                /* LOCK_MULTI decoded with a name outside the pool, or a shared one */
    uint64_t maxhold, mflags; /* LOCK_META (value in `value`) */
    uint64_t max_count;       /* SESSION_OPEN_REENTRANT */
    /* TXN: tx_nc compares, then tx_nt THEN ops, then tx_ne ELSE ops; names by pool index
       (KEYN, or LOCKN for TOKEN / HOLDS), a PUT's value by TXV index */
    uint8_t tx_nc, tx_nt, tx_ne;
    struct mtx {
        uint8_t type, rel;
        int idx, vi;
        uint64_t n;
    } tx[TX_MAX];
    bool txbad; /* decoded with a name, value or compare outside what the model knows */
};

static struct fsm_kv_cond cond_of(const struct mcmd *m)
{
    return (struct fsm_kv_cond){m->has_fence, m->fence_name, m->fence_token, m->has_ifrev,
                                m->ifrev};
}

static void cond_to_model(const struct fsm_kv_cond *c, struct mcmd *m)
{
    m->has_fence = c->has_fence;
    m->fence_name = c->fence_name;
    m->fence_token = c->fence_token;
    m->has_ifrev = c->has_ifrev;
    m->ifrev = c->ifrev;
}

static struct fsm_names multi_names(uint8_t mset);
static int lock_idx(struct fsm_str n);
static int latch_idx(struct fsm_str n);
static void gen_latch_op(struct mcmd *c);

#define NTXV 4
static const struct fsm_str TXV[NTXV] = {{"", 0}, {"value", 5}, {"-7", 2}, {"12", 2}};
static struct buf g_txraw; /* a TXN's entries: encoded before the next mcmd_to_cmd */

static struct fsm_txn txn_of(const struct mcmd *m);
static int key_idx(struct fsm_str n);

static void mcmd_to_cmd(const struct mcmd *m, struct fsm_cmd *c)
{
    memset(c, 0, sizeof(*c));
    c->op = m->op;
    c->now_ms = m->now_ms;
    c->req_sid = m->req_sid;
    c->req_seq = m->req_seq;
    switch (m->op) {
    case FSM_OP_SESSION_OPEN:
        c->session_open = (struct fsm_cmd_session_open){m->ttl_ms, m->lockdelay_ms, m->name};
        break;
    case FSM_OP_SESSION_OPEN_REENTRANT:
        c->session_open_reentrant =
            (struct fsm_cmd_session_open_r){m->ttl_ms, m->lockdelay_ms, m->name, m->max_count};
        break;
    case FSM_OP_SESSION_CLOSE:
        c->session_close.sid = m->sid;
        break;
    case FSM_OP_SESSION_EXPIRE:
        c->session_expire.sid = m->sid;
        break;
    case FSM_OP_SESSION_REVOKE:
        c->session_revoke.sid = m->sid;
        break;
    case FSM_OP_SESSION_CHECKPOINT:
        c->session_checkpoint = (struct fsm_cmd_session_checkpoint){m->sid, m->wait_ms};
        break;
    case FSM_OP_LOCK:
        c->lock = (struct fsm_cmd_lock){m->name, m->sid, m->wait_ms};
        break;
    case FSM_OP_LOCK_NOTIFY:
        c->lock_notify = (struct fsm_cmd_lock){m->name, m->sid, m->wait_ms};
        break;
    case FSM_OP_UNLOCK:
        c->unlock = (struct fsm_cmd_lock_ref){m->name, m->sid};
        break;
    case FSM_OP_CANCEL_WAIT:
        c->cancel_wait = (struct fsm_cmd_lock_ref){m->name, m->sid};
        break;
    case FSM_OP_LOCKDELAY_END:
        c->lockdelay_end.name = m->name;
        break;
    case FSM_OP_PUT:
        c->put = (struct fsm_cmd_put){m->key, m->value, m->lease_sid, cond_of(m)};
        break;
    case FSM_OP_DEL:
        c->del = (struct fsm_cmd_del){m->key, cond_of(m)};
        break;
    case FSM_OP_INCR:
        c->incr = (struct fsm_cmd_incr){m->key, m->by, cond_of(m)};
        break;
    case FSM_OP_MEMBER_SET:
        c->member_set = (struct fsm_cmd_member_set){m->sid, m->name, m->key};
        break;
    case FSM_OP_MEMBER_DEL:
        c->member_del.id = m->sid;
        break;
    case FSM_OP_LOCK_REVOKE:
        c->lock_revoke = (struct fsm_cmd_lock_revoke){m->name, m->wait_ms, m->reason, m->key};
        break;
    case FSM_OP_REVOKE_END:
        c->revoke_end = (struct fsm_cmd_revoke_end){m->name, m->token};
        break;
    case FSM_OP_DEADLOCK_LIMIT:
        c->deadlock_limit.limit = m->token;
        break;
    case FSM_OP_LOCK_MULTI:
        c->lock_multi = (struct fsm_cmd_lock_multi){m->sid, multi_names(m->mset), m->wait_ms};
        break;
    case FSM_OP_LOCK_META:
        c->lock_meta = (struct fsm_cmd_lock_meta){m->name,  m->sid,     m->mflags,
                                                  m->value, m->maxhold, m->wait_ms};
        break;
    case FSM_OP_MAXHOLD_END:
        c->maxhold_end = (struct fsm_cmd_maxhold_end){m->name, m->token};
        break;
    case FSM_OP_LATCH_CREATE: /* count in token; a barrier's leave flag in by */
        c->latch_create = (struct fsm_cmd_latch_create){m->name, m->token};
        break;
    case FSM_OP_LATCH_JOIN:
    case FSM_OP_LATCH_COUNTDOWN: /* the same payload */
        c->latch_join = (struct fsm_cmd_latch_ref){m->name, m->sid};
        break;
    case FSM_OP_LATCH_DELETE:
        c->latch_delete = (struct fsm_cmd_latch_delete){m->name};
        break;
    case FSM_OP_BARRIER:
        c->barrier = (struct fsm_cmd_barrier){m->name, m->sid, m->token, m->by};
        break;
    case FSM_OP_TXN:
        c->txn = (struct fsm_cmd_txn){txn_of(m), cond_of(m)};
        break;
    }
}

static void mcmd_from_lock_ref(const struct fsm_cmd_lock_ref *p, struct mcmd *m)
{
    m->name = p->name;
    m->sid = p->sid;
}

static void mcmd_from_cmd(const struct fsm_cmd *c, struct mcmd *m)
{
    memset(m, 0, sizeof(*m));
    m->op = c->op;
    m->now_ms = c->now_ms;
    m->req_sid = c->req_sid;
    m->req_seq = c->req_seq;
    switch (c->op) {
    case FSM_OP_SESSION_OPEN:
        m->ttl_ms = c->session_open.ttl_ms;
        m->lockdelay_ms = c->session_open.lockdelay_ms;
        m->name = c->session_open.name;
        break;
    case FSM_OP_SESSION_OPEN_REENTRANT:
        m->ttl_ms = c->session_open_reentrant.ttl_ms;
        m->lockdelay_ms = c->session_open_reentrant.lockdelay_ms;
        m->name = c->session_open_reentrant.name;
        m->max_count = c->session_open_reentrant.max_count;
        break;
    case FSM_OP_SESSION_CLOSE:
        m->sid = c->session_close.sid;
        break;
    case FSM_OP_SESSION_EXPIRE:
        m->sid = c->session_expire.sid;
        break;
    case FSM_OP_SESSION_REVOKE:
        m->sid = c->session_revoke.sid;
        break;
    case FSM_OP_SESSION_CHECKPOINT:
        m->sid = c->session_checkpoint.sid;
        m->wait_ms = c->session_checkpoint.remaining_ms;
        break;
    case FSM_OP_LOCK:
    case FSM_OP_LOCK_NOTIFY: /* the same payload */
        m->name = fsm_cmd_lock_of(c)->name;
        m->sid = fsm_cmd_lock_of(c)->sid;
        m->wait_ms = fsm_cmd_lock_of(c)->wait_ms;
        break;
    case FSM_OP_UNLOCK:
        mcmd_from_lock_ref(&c->unlock, m);
        break;
    case FSM_OP_CANCEL_WAIT:
        mcmd_from_lock_ref(&c->cancel_wait, m);
        break;
    case FSM_OP_LOCKDELAY_END:
        m->name = c->lockdelay_end.name;
        break;
    case FSM_OP_PUT:
        m->key = c->put.key;
        m->value = c->put.value;
        m->lease_sid = c->put.lease_sid;
        cond_to_model(&c->put.cond, m);
        break;
    case FSM_OP_DEL:
        m->key = c->del.key;
        cond_to_model(&c->del.cond, m);
        break;
    case FSM_OP_INCR:
        m->key = c->incr.key;
        m->by = c->incr.by;
        cond_to_model(&c->incr.cond, m);
        break;
    case FSM_OP_MEMBER_SET:
        m->sid = c->member_set.id;
        m->name = c->member_set.client_addr;
        m->key = c->member_set.raft_addr;
        break;
    case FSM_OP_MEMBER_DEL:
        m->sid = c->member_del.id;
        break;
    case FSM_OP_LOCK_REVOKE:
        m->name = c->lock_revoke.name;
        m->wait_ms = c->lock_revoke.deadline_ms;
        m->reason = c->lock_revoke.reason;
        m->key = c->lock_revoke.by;
        break;
    case FSM_OP_REVOKE_END:
        m->name = c->revoke_end.name;
        m->token = c->revoke_end.token;
        break;
    case FSM_OP_DEADLOCK_LIMIT:
        m->token = c->deadlock_limit.limit;
        break;
    case FSM_OP_LOCK_META:
        m->name = c->lock_meta.name;
        m->sid = c->lock_meta.sid;
        m->mflags = c->lock_meta.flags;
        m->value = c->lock_meta.value;
        m->maxhold = c->lock_meta.maxhold_ms;
        m->wait_ms = c->lock_meta.wait_ms;
        break;
    case FSM_OP_MAXHOLD_END:
        m->name = c->maxhold_end.name;
        m->token = c->maxhold_end.token;
        break;
    case FSM_OP_LOCK_MULTI: {
        struct fsm_names_it it;
        struct fsm_str nm;
        bool shared;
        m->sid = c->lock_multi.sid;
        m->wait_ms = c->lock_multi.wait_ms;
        fsm_names_begin(&it, &c->lock_multi.names);
        while (fsm_names_next(&it, &nm, &shared)) {
            int i = lock_idx(nm);
            m->mbad |= i < 0 || shared;
            if (i >= 0)
                m->mset |= (uint8_t)(1u << i);
        }
        break;
    }
    case FSM_OP_LATCH_CREATE:
        m->name = c->latch_create.name;
        m->token = c->latch_create.count;
        break;
    case FSM_OP_LATCH_JOIN:
    case FSM_OP_LATCH_COUNTDOWN:
        m->name = c->latch_join.name;
        m->sid = c->latch_join.sid;
        break;
    case FSM_OP_LATCH_DELETE:
        m->name = c->latch_delete.name;
        break;
    case FSM_OP_BARRIER:
        m->name = c->barrier.name;
        m->sid = c->barrier.sid;
        m->token = c->barrier.count;
        m->by = c->barrier.leave;
        break;
    case FSM_OP_TXN: {
        struct fsm_txn_it it;
        struct fsm_txn_item x;
        uint32_t n = c->txn.txn.ncmp + c->txn.txn.nthen + c->txn.txn.nelse;
        cond_to_model(&c->txn.cond, m);
        m->tx_nc = (uint8_t)c->txn.txn.ncmp;
        m->tx_nt = (uint8_t)c->txn.txn.nthen;
        m->tx_ne = (uint8_t)c->txn.txn.nelse;
        m->txbad = n > TX_MAX;
        fsm_txn_begin(&it, &c->txn.txn);
        for (uint32_t i = 0; i < n && !m->txbad && fsm_txn_next(&it, &x); i++) {
            struct mtx *t = &m->tx[i];
            bool lock = x.type == FSM_TXN_TOKEN || x.type == FSM_TXN_HOLDS;
            *t = (struct mtx){x.type, x.rel, lock ? lock_idx(x.name) : key_idx(x.name), 0, x.n};
            for (t->vi = 0; t->vi < NTXV && x.type == FSM_TXN_PUT; t->vi++)
                if (TXV[t->vi].len == x.value.len && !memcmp(TXV[t->vi].p, x.value.p, x.value.len))
                    break;
            m->txbad |= t->idx < 0 || t->vi == NTXV || x.type == FSM_TXN_VALUE;
        }
        break;
    }
    }
}

/* Decode an entry into the model's view; 0 or -1 as fsm_cmd_decode. */
static int mcmd_decode(const struct buf *b, struct mcmd *m, char *err, size_t errlen)
{
    struct fsm_cmd c;
    if (fsm_cmd_decode((const uint8_t *)b->p, b->len, &c, err, errlen))
        return -1;
    mcmd_from_cmd(&c, m);
    return 0;
}

/* ---- the model ---- */

struct mlock {
    uint64_t holder, token, last_token, delay_ms;
    uint64_t rv_token, rv_ms; /* a pending revoke of grant rv_token (0: none), its deadline */
    bool delay;
    uint64_t q[MAXQ];
    uint64_t qrev[MAXQ]; /* each waiter's enqueue revision: a LOCK_MULTI's waiters share one */
    uint8_t qset[MAXQ];  /* the locks its request waits for (a LOCK: this one) */
    int qn;
    /* lock metadata: the grant's value (an LVAL index, 0 = none) and max hold, each waiter's,
     * and the record's transitions */
    int hv;
    uint64_t mh, trans;
    bool lm_on; /* a LOCK_META reached the record: it counts transitions */
    int qhv[MAXQ];
    uint64_t qmh[MAXQ];
    uint64_t count; /* the holder's holds (a reentrant holder's LOCKs count up); 0 if none */
};

struct mkey {
    bool exists;
    uint64_t create_rev, mod_rev, version, lease;
    bool is_int; /* its value is a counter's decimal text, of value val */
    int64_t val;
};

struct msess {
    uint64_t sid, lockdelay, hi_seq;
    uint64_t max_count; /* a reentrant session's (SESSION_OPEN_REENTRANT); 0: not reentrant */
    bool alive;
    struct fsm_reply cached;
};

struct mmember {
    uint64_t id;
    uint32_t clen, rlen;
    char client[FSM_MAX_ADDR], raft[FSM_MAX_ADDR];
};

struct model {
    struct mlock locks[NLOCKS];
    struct mkey keys[NKEYS];
    struct msess s[MAXS];
    int ns;
    uint64_t last_token, last_sid;
    struct mmember members[FSM_MAX_MEMBERS]; /* sorted by id */
    int nm;
    bool dl_off; /* a DEADLOCK_LIMIT of 0 applied last: no deadlock detection */
};

static const struct fsm_str LOCKN[NLOCKS] = {{"a", 1}, {"b", 1}, {"lock/c", 6}, {"\0\xff", 2}};
#define NLVAL 4
static const struct fsm_str LVAL[NLVAL] = {{"", 0}, {"h1", 2}, {"job=7 host=x", 12}, {"\0v", 2}};
static int lval_idx(struct fsm_str v)
{
    for (int i = 0; i < NLVAL; i++)
        if (v.len == LVAL[i].len && (!v.len || !memcmp(v.p, LVAL[i].p, v.len)))
            return i;
    return -1;
}
static const struct fsm_str KEYN[NKEYS] = {{"k", 1}, {"k1", 2}, {"k2", 2}, {"x", 1}, {"\0", 1}};

/* A TXN's payload from the model's view of it (the entries in g_txraw). */
static struct fsm_txn txn_of(const struct mcmd *m)
{
    buf_reset(&g_txraw);
    int n = m->tx_nc + m->tx_nt + m->tx_ne;
    for (int i = 0; i < n; i++) {
        const struct mtx *x = &m->tx[i];
        bool lock = x->type == FSM_TXN_TOKEN || x->type == FSM_TXN_HOLDS;
        struct fsm_txn_item it = {.type = x->type,
                                  .rel = x->rel,
                                  .name = lock ? LOCKN[x->idx] : KEYN[x->idx],
                                  .n = x->n,
                                  .value = x->type == FSM_TXN_PUT ? TXV[x->vi]
                                                                  : (struct fsm_str){"", 0}};
        if (fsm_txn_add(&g_txraw, &it))
            abort();
    }
    return (struct fsm_txn){m->tx_nc, m->tx_nt, m->tx_ne, {g_txraw.p, (uint32_t)g_txraw.len}};
}

/* The pool's lock names in byte order (what a LOCK_MULTI entry must carry). */
static const int SORTED[] = {3, 0, 1, 2};
#define NSORTED ((int)(sizeof(SORTED) / sizeof(SORTED[0])))

/* A LOCK_MULTI's raw names for the set `mset`: exclusive, in byte order. Valid until the next
 * call (the entry is encoded at once). */
static struct fsm_names multi_names(uint8_t mset)
{
    static char raw[64];
    uint32_t n = 0, len = 0;
    for (int i = 0; i < NSORTED; i++) {
        if (!(mset & (1u << SORTED[i])))
            continue;
        const struct fsm_str *nm = &LOCKN[SORTED[i]];
        raw[len++] = 0; /* exclusive */
        raw[len++] = (char)nm->len;
        memcpy(raw + len, nm->p, nm->len);
        len += nm->len;
        n++;
    }
    return (struct fsm_names){n, {raw, len}};
}

static struct model M;
static uint64_t n_ev[32], n_replay, n_bad, n_err;         /* coverage of one run */
static uint64_t n_mset, n_msame, n_mfull, n_mdel, n_mmax; /* member-table coverage */
static bool g_detect;                      /* this seed runs at format 2: deadlock detection on */
static uint64_t n_dl, n_dl_multi;          /* waits refused -DEADLOCK (of them by LOCK_MULTI) */
static uint64_t n_reup, n_redown, n_retot; /* hold counts up and down (and over all seeds) */
static uint64_t n_txn[3], n_txn_tot;       /* TXNs applied: THEN, ELSE, refused (ERR) */

#define MEMBER_IDS 100 /* ids 1..MEMBER_IDS: more than FSM_MAX_MEMBERS fit */
#define MPHASE 2000    /* steps of a member fill-up phase, then of a drain phase */
static char LONG_ADDR[FSM_MAX_ADDR];
static const struct fsm_str ADDRN[] = {
    {"a:1", 3}, {"b:2", 3}, {"10.0.0.1:6379", 13}, {"\0\xff:1", 4}, {LONG_ADDR, FSM_MAX_ADDR}};
#define NADDR ((uint64_t)(sizeof(ADDRN) / sizeof(ADDRN[0])))
static uint64_t g_seed;
static int g_step;

#define MCHECK(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "  FAIL seed %llu step %d: %s (line %d)\n",                            \
                    (unsigned long long)g_seed, g_step, #cond, __LINE__);                          \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

static int lock_idx(struct fsm_str n)
{
    for (int i = 0; i < NLOCKS; i++)
        if (n.len == LOCKN[i].len && !memcmp(n.p, LOCKN[i].p, n.len))
            return i;
    return -1;
}

static int key_idx(struct fsm_str n)
{
    for (int i = 0; i < NKEYS; i++)
        if (n.len == KEYN[i].len && !memcmp(n.p, KEYN[i].p, n.len))
            return i;
    return -1;
}

static struct msess *msess(uint64_t sid)
{
    for (int i = M.ns - 1; i >= 0; i--)
        if (M.s[i].sid == sid)
            return &M.s[i];
    return NULL;
}

static bool alive(uint64_t sid)
{
    struct msess *s = msess(sid);
    return s && s->alive;
}

static int qpos(const struct mlock *l, uint64_t sid)
{
    for (int i = 0; i < l->qn; i++)
        if (l->q[i] == sid)
            return i;
    return -1;
}

static void qdel(struct mlock *l, int i)
{
    memmove(&l->q[i], &l->q[i + 1], (size_t)(l->qn - i - 1) * sizeof(l->q[0]));
    memmove(&l->qrev[i], &l->qrev[i + 1], (size_t)(l->qn - i - 1) * sizeof(l->qrev[0]));
    memmove(&l->qset[i], &l->qset[i + 1], (size_t)(l->qn - i - 1) * sizeof(l->qset[0]));
    memmove(&l->qhv[i], &l->qhv[i + 1], (size_t)(l->qn - i - 1) * sizeof(l->qhv[0]));
    memmove(&l->qmh[i], &l->qmh[i + 1], (size_t)(l->qn - i - 1) * sizeof(l->qmh[0]));
    l->qn--;
}

/* The queue position of the waiter with enqueue revision `rev`, -1 if none. */
static int qpos_rev(const struct mlock *l, uint64_t rev)
{
    for (int i = 0; i < l->qn; i++)
        if (l->qrev[i] == rev)
            return i;
    return -1;
}

/* Index of member `id` in the model, or -1 - insertion index. */
static int mpos(uint64_t id)
{
    int i = 0;
    while (i < M.nm && M.members[i].id < id)
        i++;
    return i < M.nm && M.members[i].id == id ? i : -1 - i;
}

static int n_alive(void)
{
    int n = 0;
    for (int i = 0; i < M.ns; i++)
        n += M.s[i].alive;
    return n;
}

/* ---- command generation ---- */

/* Mostly a live session; sometimes a recent dead one or an id that never existed. */
static uint64_t pick_sid(void)
{
    if (M.ns == 0 || chance(3))
        return below(3) ? rnd() % 100000 : 0;
    int lo = M.ns > 12 ? M.ns - 12 : 0;
    uint64_t any = M.s[lo + (int)below((uint64_t)(M.ns - lo))].sid;
    if (chance(15))
        return any;
    uint64_t live[MAX_ALIVE + 8];
    int n = 0;
    for (int i = 0; i < M.ns && n < MAX_ALIVE + 8; i++)
        if (M.s[i].alive)
            live[n++] = M.s[i].sid;
    return n ? live[below((uint64_t)n)] : any;
}

static void gen_req(struct mcmd *c)
{
    if (!chance(30) || M.ns == 0)
        return;
    c->req_sid = pick_sid();
    struct msess *s = msess(c->req_sid);
    uint64_t hi = s ? s->hi_seq : 0;
    int r = (int)below(10);
    c->req_seq = r < 6 ? hi + 1 + below(3) : r < 9 ? hi : (hi > 1 ? hi - 1 : 1);
    if (c->req_sid == 0 || c->req_seq == 0)
        c->req_sid = c->req_seq = 0;
}

static void gen_cond(struct mcmd *c, int k)
{
    if (chance(30)) {
        int l = (int)below(NLOCKS);
        c->has_fence = true;
        c->fence_name = LOCKN[l];
        c->fence_token =
            M.locks[l].holder && chance(60) ? M.locks[l].token : below(M.last_token + 2);
    }
    if (chance(30)) {
        c->has_ifrev = true;
        c->ifrev = chance(40) ? 0 : M.keys[k].mod_rev + (chance(70) ? 0 : 1);
    }
}

/* TXN: 0-2 compares (REV, EXISTS, MISSING on the pool's keys; TOKEN, HOLDS on its locks), 0-2
 * THEN ops and 0-1 ELSE ops (PUT, DEL, INCR; now and then one key twice: ERR), a FENCE now and
 * then. */
static void gen_txn(struct mcmd *c)
{
    static const uint8_t cmps[] = {FSM_TXN_REV, FSM_TXN_EXISTS, FSM_TXN_MISSING, FSM_TXN_TOKEN,
                                   FSM_TXN_HOLDS};
    static const int64_t steps[] = {1, -1, 5, INT64_MAX, INT64_MIN};
    c->op = FSM_OP_TXN;
    c->tx_nc = (uint8_t)below(3);
    c->tx_nt = (uint8_t)below(3);
    c->tx_ne = (uint8_t)below(2);
    if (c->tx_nc + c->tx_nt + c->tx_ne == 0)
        c->tx_nt = 1;
    int n = 0;
    for (int i = 0; i < c->tx_nc; i++, n++) {
        struct mtx *x = &c->tx[n];
        x->type = cmps[below(sizeof(cmps))];
        if (x->type == FSM_TXN_TOKEN || x->type == FSM_TXN_HOLDS) {
            x->idx = (int)below(NLOCKS);
            const struct mlock *l = &M.locks[x->idx];
            x->rel = x->type == FSM_TXN_TOKEN ? (uint8_t)below(2) : 0;
            x->n = x->type == FSM_TXN_HOLDS  ? (l->holder && chance(60) ? l->holder : pick_sid())
                   : l->holder && chance(60) ? l->token
                                             : below(M.last_token + 2);
        } else {
            x->idx = (int)below(NKEYS);
            if (x->type == FSM_TXN_REV) {
                x->rel = (uint8_t)below(4);
                x->n = M.keys[x->idx].mod_rev + (chance(60) ? 0 : below(3)) - (chance(20) ? 1 : 0);
            }
        }
    }
    for (int b = 0; b < 2; b++) {
        unsigned used = 0;
        for (int i = 0; i < (b ? c->tx_ne : c->tx_nt); i++, n++) {
            struct mtx *x = &c->tx[n];
            int o = (int)below(3);
            do
                x->idx = (int)below(NKEYS);
            while ((used & (1u << x->idx)) && !chance(5));
            used |= 1u << x->idx;
            x->type = o == 0 ? FSM_TXN_PUT : o == 1 ? FSM_TXN_DEL : FSM_TXN_INCR;
            x->vi = x->type == FSM_TXN_PUT ? (int)below(NTXV) : 0;
            x->n = x->type == FSM_TXN_INCR ? (uint64_t)steps[below(5)] : 0;
        }
    }
    if (chance(20)) {
        int l = (int)below(NLOCKS);
        c->has_fence = true;
        c->fence_name = LOCKN[l];
        c->fence_token =
            M.locks[l].holder && chance(60) ? M.locks[l].token : below(M.last_token + 2);
    }
}

static void gen_lock_op(struct mcmd *c, int r)
{
    int l = (int)below(NLOCKS);
    c->name = LOCKN[l];
    c->sid = pick_sid();
    if (r < 45) {
        c->op = chance(20) ? FSM_OP_LOCK_NOTIFY : FSM_OP_LOCK;
        c->wait_ms = chance(70) ? 1 + below(5000) : 0;
        if (chance(30)) { /* with a value and a max hold, now and then a bad one */
            c->op = FSM_OP_LOCK_META;
            c->value = LVAL[below(NLVAL)];
            c->maxhold = chance(50) ? 1 + below(5000) : 0;
            c->mflags = chance(20) ? 1 : 0;
            if (chance(3))
                c->mflags = 2 + below(3);
            if (chance(3))
                c->maxhold = FSM_MAX_MAXHOLD_MS + 1 + below(2);
        }
    } else if (r < 76 && r >= 73) {
        c->op = FSM_OP_MAXHOLD_END;
        c->sid = 0;
        c->token = M.locks[l].mh && chance(70) ? M.locks[l].token : below(M.last_token + 2);
        if (M.locks[l].holder && chance(30)) /* its holder again: a reentrant one counts */
            c->sid = M.locks[l].holder;
    } else if (r < 60) {
        c->op = FSM_OP_UNLOCK;
        if (M.locks[l].holder && chance(70))
            c->sid = M.locks[l].holder;
    } else if (r < 68) {
        c->op = FSM_OP_CANCEL_WAIT;
        if (M.locks[l].qn && chance(70))
            c->sid = M.locks[l].q[below((uint64_t)M.locks[l].qn)];
    } else if (r < 71) {
        c->op = FSM_OP_LOCK_REVOKE;
        c->sid = 0;
        c->wait_ms = chance(30) ? 0 : 1 + below(5000);
        c->reason = chance(50) ? (struct fsm_str){"deploy", 6} : (struct fsm_str){"", 0};
        c->key = (struct fsm_str){"ops@10.0.0.9:4000", 17};
    } else if (r < 73) {
        c->op = FSM_OP_REVOKE_END;
        c->sid = 0;
        c->token =
            M.locks[l].rv_token && chance(70) ? M.locks[l].rv_token : below(M.last_token + 2);
    } else if (r >= 80) {
        c->op = FSM_OP_LOCK_MULTI;
        c->name = (struct fsm_str){NULL, 0};
        while (!c->mset)
            c->mset = (uint8_t)below(1u << NLOCKS);
        c->wait_ms = chance(70) ? 1 + below(5000) : 0;
    } else {
        c->op = FSM_OP_LOCKDELAY_END;
        c->sid = 0;
        for (int i = 0; i < NLOCKS && chance(70); i++)
            if (M.locks[i].delay)
                c->name = LOCKN[i];
    }
}

/* Mostly a known id; sometimes an entry identical to the stored one (a re-announce). */
static void gen_member_op(struct mcmd *c)
{
    bool fill = (g_step / MPHASE) % 2 == 0;         /* alternate: fill up, then drain */
    c->sid = chance(2) ? 0 : 1 + below(MEMBER_IDS); /* id 0 is a bad entry */
    if (M.nm && chance(fill ? 30 : 60)) {
        c->sid = M.members[below((uint64_t)M.nm)].id;
    } else if (fill && chance(50)) {
        c->sid = 1; /* the smallest absent id: a new member */
        for (int i = 0; i < M.nm && M.members[i].id == c->sid; i++)
            c->sid++;
    }
    if (chance(fill ? 85 : 35)) {
        c->op = FSM_OP_MEMBER_SET;
        int i = mpos(c->sid);
        if (i >= 0 && chance(40)) {
            c->name = (struct fsm_str){M.members[i].client, M.members[i].clen};
            c->key = (struct fsm_str){M.members[i].raft, M.members[i].rlen};
        } else {
            c->name = ADDRN[below(NADDR)];
            c->key = ADDRN[below(NADDR)];
        }
    } else {
        c->op = FSM_OP_MEMBER_DEL;
    }
}

/* How a session ends: close, expiry, or an admin's revoke (an expiry by another name). */
static uint8_t end_op(void)
{
    int k = (int)below(5);
    return k < 2 ? FSM_OP_SESSION_CLOSE : k < 4 ? FSM_OP_SESSION_EXPIRE : FSM_OP_SESSION_REVOKE;
}

static void gen_cmd(struct mcmd *c)
{
    memset(c, 0, sizeof(*c));
    c->now_ms = 1000000 + (uint64_t)g_step;
    int r = (int)below(100);
    int w = g_step % WINDOW;
    if (w >= TWIN - 2 * MAX_ALIVE && w < TWIN && chance(60) && n_alive()) {
        /* end sessions while a restored replica runs beside: their locks are handed on in
           the holder's grant order, which restore must rebuild */
        c->op = end_op();
        do
            c->sid = pick_sid();
        while (!alive(c->sid));
        return;
    }
    if (r < 10 && n_alive() < MAX_ALIVE) {
        c->op = FSM_OP_SESSION_OPEN;
        if (chance(40)) { /* reentrant: small max counts (0 is refused) that LOCKs reach */
            static const uint64_t maxes[] = {0, 1, 2, 3, 6, FSM_MAX_HOLD_COUNT + 1ull};
            c->op = FSM_OP_SESSION_OPEN_REENTRANT;
            c->max_count = maxes[below(chance(95) ? 5 : 6)];
        }
        c->ttl_ms = chance(3) ? 0 : 1 + below(10000);
        c->lockdelay_ms = chance(50) ? 0 : 1 + below(500);
        c->name = chance(50) ? (struct fsm_str){"worker", 6} : (struct fsm_str){"", 0};
    } else if (r < 14) {
        c->op = end_op();
        c->sid = pick_sid();
    } else if (r < 80) {
        gen_lock_op(c, (int)below(90));
    } else if (r < 84) {
        gen_latch_op(c);
    } else if (r < 88 && chance(60)) {
        gen_txn(c);
    } else if (r < 88) {
        int k = (int)below(NKEYS);
        c->key = KEYN[k];
        int o = (int)below(100);
        c->op = o < 45 ? FSM_OP_PUT : o < 65 ? FSM_OP_DEL : FSM_OP_INCR;
        if (c->op == FSM_OP_PUT) {
            int v = (int)below(10);
            c->value = v < 2   ? (struct fsm_str){"", 0}
                       : v < 6 ? (struct fsm_str){"value", 5}
                       : v < 8 ? (struct fsm_str){"-7", 2}
                               : (struct fsm_str){"9223372036854775800", 19};
            c->lease_sid = chance(50) ? pick_sid() : 0;
        }
        if (c->op == FSM_OP_INCR) { /* small steps, and the ones that reach the bounds */
            static const int64_t steps[] = {1, -1, 3, 0, 100, INT64_MAX, INT64_MIN, -5};
            c->by = (uint64_t)steps[below(sizeof(steps) / sizeof(steps[0]))];
        }
        gen_cond(c, k);
    } else if (r < 90) {
        /* a lease checkpoint; at or above the ttl it clears (sessions' ttl is below 10001) */
        c->op = FSM_OP_SESSION_CHECKPOINT;
        c->sid = pick_sid();
        c->wait_ms = below(12000);
    } else if (r < 98) {
        gen_member_op(c);
    } else if (r < 99) {
        /* the cluster's deadlock search limit: off, the default, or over the maximum (ERR); a
           limit the pool's small graphs could reach is not modelled */
        c->op = FSM_OP_DEADLOCK_LIMIT;
        c->token = chance(45)   ? 0
                   : chance(90) ? FSM_DEADLOCK_LIMIT_DEFAULT
                                : FSM_DEADLOCK_LIMIT_MAX + 1;
    } else {
        c->op = FSM_OP_NOOP;
    }
    gen_req(c);
}

/* The model knows only the pool's names: a mutated entry must not decode to another one. */
static bool usable(const struct buf *b)
{
    struct mcmd c;
    char err[64];
    if (mcmd_decode(b, &c, err, sizeof(err)))
        return true;
    switch (c.op) {
    case FSM_OP_LOCK:
    case FSM_OP_LOCK_NOTIFY:
    case FSM_OP_UNLOCK:
    case FSM_OP_CANCEL_WAIT:
    case FSM_OP_LOCKDELAY_END:
    case FSM_OP_LOCK_REVOKE:
    case FSM_OP_REVOKE_END:
    case FSM_OP_MAXHOLD_END:
        return lock_idx(c.name) >= 0;
    case FSM_OP_LOCK_META:
        return lock_idx(c.name) >= 0 && lval_idx(c.value) >= 0;
    case FSM_OP_LOCK_MULTI:
        return !c.mbad;
    case FSM_OP_TXN:
        return !c.txbad;
    case FSM_OP_DEADLOCK_LIMIT: /* a mutated limit the search could reach is not modelled */
        return c.token == 0 || c.token == FSM_DEADLOCK_LIMIT_DEFAULT ||
               c.token > FSM_DEADLOCK_LIMIT_MAX;
    case FSM_OP_PUT:
    case FSM_OP_DEL:
    case FSM_OP_INCR:
        return key_idx(c.key) >= 0;
    case FSM_OP_LATCH_CREATE:
    case FSM_OP_LATCH_JOIN:
    case FSM_OP_LATCH_COUNTDOWN:
    case FSM_OP_LATCH_DELETE:
    case FSM_OP_BARRIER:
        return latch_idx(c.name) >= 0;
    case FSM_OP_NOOP:
    case FSM_OP_SESSION_OPEN:
    case FSM_OP_SESSION_CLOSE:
    case FSM_OP_SESSION_EXPIRE:
    case FSM_OP_SESSION_REVOKE:
    case FSM_OP_SESSION_CHECKPOINT:
    case FSM_OP_SESSION_OPEN_REENTRANT:
    case FSM_OP_MEMBER_SET:
    case FSM_OP_MEMBER_DEL:
        return true;
    default: /* an op the model does not know (a garbage entry that decodes to CLUSTER_FORMAT,
                a semaphore's, an election's ...): its prediction would be a lock's */
        return false;
    }
}

static void mutate(struct buf *b)
{
    int r = (int)below(4);
    if (r == 0) {
        b->len = below(b->len);
    } else if (r == 1) {
        b->p[below(b->len)] ^= (char)(1u << below(8));
    } else if (r == 2) {
        buf_put_u8(b, (uint8_t)rnd());
    } else {
        buf_reset(b);
        for (uint64_t i = below(16); i > 0; i--)
            buf_put_u8(b, (uint8_t)rnd());
    }
}

/* Some entries are garbage: random bytes, or a real entry truncated, flipped or extended. */
static void gen_entry(struct buf *b)
{
    struct mcmd m;
    struct fsm_cmd c;
    bool garbage = chance(4);
    do {
        gen_cmd(&m);
        mcmd_to_cmd(&m, &c);
        buf_reset(b);
        if (fsm_cmd_encode(&c, b))
            abort();
        if (garbage)
            mutate(b);
    } while (!usable(b));
}

/* ---- prediction: the reply the rules demand, with `fresh` meaning "a new revision" ---- */

struct expect {
    uint8_t kind;
    uint64_t value;  /* for INT, unless fresh */
    bool fresh;      /* INT value must be the first revision this command allocates */
    bool txn;        /* a TXN's INT: (its last revision << 1) | value (1: THEN ran) */
    uint64_t nrev;   /* a TXN's: revisions it takes (one per op that changes a key) */
    bool changes;    /* the state must change (revision moves) */
    const char *err; /* ERR prefix */
};

static struct expect ex_err(const char *p)
{
    return (struct expect){.kind = FSM_REPLY_ERR, .err = p};
}
static struct expect ex(uint8_t kind, bool changes)
{
    return (struct expect){.kind = kind, .changes = changes};
}
static struct expect ex_int(uint64_t v)
{
    return (struct expect){.kind = FSM_REPLY_INT, .value = v};
}
static struct expect ex_fresh(void)
{
    return (struct expect){.kind = FSM_REPLY_INT, .fresh = true, .changes = true};
}

/* ---- the model's wait-for graph (exclusive locks only), computed on its own ---- */

/* Whether `to` blocks `from`'s queued request on lock li: its holder, or queued before it. */
static bool m_blocks(int li, uint64_t from, uint64_t to)
{
    const struct mlock *l = &M.locks[li];
    int p = qpos(l, from);
    if (p < 0 || to == from)
        return false;
    if (l->holder == to)
        return true;
    for (int i = 0; i < p; i++)
        if (l->q[i] == to)
            return true;
    return false;
}

/* Whether `target` is reachable from `u` along wait-for edges (seen: sids visited). */
static bool m_reaches(uint64_t u, uint64_t target, uint64_t *seen, int *nseen)
{
    if (u == target)
        return true;
    for (int i = 0; i < *nseen; i++)
        if (seen[i] == u)
            return false;
    seen[(*nseen)++] = u;
    for (int li = 0; li < NLOCKS; li++) {
        const struct mlock *l = &M.locks[li];
        int p = qpos(l, u);
        if (p < 0)
            continue;
        if (l->holder && l->holder != u && m_reaches(l->holder, target, seen, nseen))
            return true;
        for (int i = 0; i < p; i++)
            if (m_reaches(l->q[i], target, seen, nseen))
                return true;
    }
    return false;
}

/* Whether sid's new wait (at the tail) for lock li closes a cycle back to sid. */
static bool closes_cycle(uint64_t sid, int li)
{
    const struct mlock *l = &M.locks[li];
    uint64_t seen[MAXS];
    int nseen = 0;
    if (l->holder && m_reaches(l->holder, sid, seen, &nseen))
        return true;
    for (int i = 0; i < l->qn; i++)
        if (m_reaches(l->q[i], sid, seen, &nseen))
            return true;
    return false;
}

/* The lock whose printable name (fsm_printable's: bytes outside ' '..'~' as '?') is n bytes
 * at p, or -1. */
static int lock_by_shown(const char *p, size_t n)
{
    for (int li = 0; li < NLOCKS; li++) {
        if (LOCKN[li].len != n)
            continue;
        size_t k = 0;
        for (; k < n; k++) {
            unsigned char ch = (unsigned char)LOCKN[li].p[k];
            if ((ch >= ' ' && ch <= '~' ? (char)ch : '?') != p[k])
                break;
        }
        if (k == n)
            return li;
    }
    return -1;
}

/* The DEADLOCK event's cycle "s1 -n1-> s2 -n2-> ... s1" is a path of real edges of the model's
 * graph from c's session (its first edge: the new request on the event's lock evli, c's lock
 * or one of c's LOCK_MULTI names) back to it. */
static int check_cycle(const struct fsm_str *v, const struct mcmd *c, int evli)
{
    char text[512];
    MCHECK(v->len < sizeof(text));
    memcpy(text, v->p, v->len);
    text[v->len] = '\0';
    char *p = text, *end;
    uint64_t u = strtoull(p, &end, 10);
    MCHECK(end != p && u == c->sid);
    int hops = 0;
    for (p = end; *p; hops++) {
        MCHECK(strncmp(p, " -", 2) == 0);
        p += 2;
        char *arrow = strstr(p, "-> ");
        MCHECK(arrow);
        int li = lock_by_shown(p, (size_t)(arrow - p));
        MCHECK(li >= 0);
        p = arrow + 3;
        uint64_t v2 = strtoull(p, &end, 10);
        MCHECK(end != p);
        p = end;
        if (hops == 0) { /* the new request, not queued: waits for the holder and the queue */
            MCHECK(li == evli);
            MCHECK(c->op == FSM_OP_LOCK_MULTI ? (c->mset >> li) & 1 : li == lock_idx(c->name));
            MCHECK(M.locks[li].holder == v2 || qpos(&M.locks[li], v2) >= 0);
        } else {
            MCHECK(m_blocks(li, u, v2));
        }
        u = v2;
    }
    MCHECK(hops >= 1 && u == c->sid);
    return 0;
}

static struct expect predict_lock(const struct mcmd *c)
{
    struct mlock *l = &M.locks[lock_idx(c->name)];
    if (c->op == FSM_OP_LOCKDELAY_END)
        return ex(FSM_REPLY_OK, l->delay);
    if (c->op == FSM_OP_LOCK_REVOKE) { /* the exclusive holder's grant, or NOTHOLDER */
        struct expect e = ex_int(l->token);
        e.changes = true;
        return l->holder ? e : ex_err("NOTHOLDER");
    }
    if (c->op == FSM_OP_REVOKE_END) /* only the revoked grant, only with a deadline */
        return ex(FSM_REPLY_OK,
                  l->holder && l->token == c->token && l->rv_token == c->token && l->rv_ms);
    if (c->op == FSM_OP_MAXHOLD_END) /* only that grant, only with a max hold */
        return ex(FSM_REPLY_OK, l->holder && l->token == c->token && l->mh);
    if (c->op == FSM_OP_LOCK_META && c->mflags > 1)
        return ex_err("ERR unknown lock flags");
    if (c->op == FSM_OP_LOCK_META && c->maxhold > FSM_MAX_MAXHOLD_MS)
        return ex_err("ERR max hold");
    if (!alive(c->sid))
        return ex_err("NOSESSION");
    bool held = l->holder == c->sid, queued = qpos(l, c->sid) >= 0;
    bool is_free = !l->holder && !l->delay && !l->qn; /* a queue: a multi-request blocks it */
    switch (c->op) {
    case FSM_OP_LOCK:
    case FSM_OP_LOCK_NOTIFY:
    case FSM_OP_LOCK_META:
        if (held && msess(c->sid)->max_count) { /* a reentrant holder: counted, to its limit */
            struct expect e = ex_int(l->token);
            e.changes = true;
            return l->count < msess(c->sid)->max_count ? e : ex_err("ERR session ");
        }
        if (held)
            return ex_int(l->token);
        if (queued)
            return ex(c->wait_ms ? FSM_REPLY_QUEUED : FSM_REPLY_NIL, false);
        if (is_free)
            return ex_fresh();
        if (c->wait_ms && g_detect && !M.dl_off && closes_cycle(c->sid, lock_idx(c->name)))
            return (struct expect){.kind = FSM_REPLY_ERR,
                                   .err = "DEADLOCK cycle of ",
                                   .changes = true}; /* one revision: the event's */
        return c->wait_ms ? ex(FSM_REPLY_QUEUED, true) : ex(FSM_REPLY_NIL, false);
    case FSM_OP_UNLOCK:
        return held || queued ? ex(FSM_REPLY_OK, true) : ex_err("NOTHOLDER");
    default: /* CANCEL_WAIT */
        if (held)
            return ex_int(l->token);
        return ex(FSM_REPLY_NIL, queued);
    }
}

static bool fence_ok(const struct mcmd *c)
{
    if (!c->has_fence)
        return true;
    int i = lock_idx(c->fence_name);
    return i >= 0 && M.locks[i].holder && M.locks[i].token == c->fence_token;
}

static bool ifrev_ok(const struct mcmd *c, const struct mkey *k)
{
    if (!c->has_ifrev)
        return true;
    if (c->ifrev == 0)
        return !k->exists;
    return k->exists && k->mod_rev == c->ifrev;
}

static struct expect predict_kv(const struct mcmd *c)
{
    struct mkey *k = &M.keys[key_idx(c->key)];
    if (c->op == FSM_OP_PUT && c->lease_sid && !alive(c->lease_sid))
        return ex_err("NOSESSION");
    if (!fence_ok(c))
        return ex_err("STALE");
    if (!ifrev_ok(c, k))
        return ex_err("IFREV");
    if (c->op == FSM_OP_PUT)
        return ex_fresh();
    if (c->op == FSM_OP_INCR) { /* an absent key is 0; a value not a counter's is refused */
        int64_t now;
        if (k->exists && !k->is_int)
            return ex_err("ERR value of key");
        if (__builtin_add_overflow(k->exists ? k->val : 0, (int64_t)c->by, &now))
            return ex_err("ERR increment would overflow");
        struct expect e = ex_int((uint64_t)now);
        e.changes = true;
        return e;
    }
    struct expect e = ex_int(k->exists ? 1 : 0);
    e.changes = k->exists;
    return e;
}

static bool txn_compare(const struct mtx *x)
{
    const struct mkey *k = &M.keys[x->idx];
    const struct mlock *l = &M.locks[x->idx];
    uint64_t have = k->exists ? k->mod_rev : 0;
    bool cur = l->holder && l->token == x->n;
    switch (x->type) {
    case FSM_TXN_REV:
        return x->rel == FSM_TXN_EQ   ? have == x->n
               : x->rel == FSM_TXN_NE ? have != x->n
               : x->rel == FSM_TXN_LT ? have < x->n
                                      : have > x->n;
    case FSM_TXN_EXISTS:
        return k->exists;
    case FSM_TXN_MISSING:
        return !k->exists;
    case FSM_TXN_TOKEN:
        return x->rel == FSM_TXN_EQ ? cur : !cur;
    default: /* HOLDS: holders are alive */
        return l->holder && l->holder == x->n;
    }
}

/* The ops of the branch that runs: from *from, *n of them. */
static bool txn_branch(const struct mcmd *c, int *from, int *n)
{
    bool then = true;
    for (int i = 0; i < c->tx_nc; i++)
        then = txn_compare(&c->tx[i]) && then;
    *from = c->tx_nc + (then ? 0 : c->tx_nt);
    *n = then ? c->tx_nt : c->tx_ne;
    return then;
}

/* TXN: no IFREV; FENCE as PUT's; then every op of one branch (a key twice, an INCR of a value
 * that is not a counter or that overflows: ERR, nothing), a revision per op that changes a key. */
static struct expect predict_txn(const struct mcmd *c)
{
    int from, n;
    if (c->has_ifrev)
        return ex_err("ERR TXN takes no IFREV");
    if (!fence_ok(c))
        return ex_err("STALE");
    bool then = txn_branch(c, &from, &n);
    uint64_t nrev = 0;
    for (int i = 0; i < n; i++) {
        const struct mtx *x = &c->tx[from + i];
        const struct mkey *k = &M.keys[x->idx];
        int64_t now;
        for (int j = 0; j < i; j++)
            if (c->tx[from + j].idx == x->idx)
                return ex_err("ERR TXN op");
        if (x->type == FSM_TXN_INCR &&
            ((k->exists && !k->is_int) ||
             __builtin_add_overflow(k->exists ? k->val : 0, (int64_t)x->n, &now)))
            return ex_err("ERR TXN op");
        nrev += x->type != FSM_TXN_DEL || k->exists;
    }
    struct expect e = ex_int(then ? 1 : 0);
    e.txn = true;
    e.nrev = nrev;
    e.changes = nrev > 0;
    return e;
}

static struct expect predict_member(const struct mcmd *c)
{
    int i = mpos(c->sid);
    if (c->op == FSM_OP_MEMBER_DEL) {
        struct expect e = ex_int(i >= 0);
        e.changes = i >= 0;
        return e;
    }
    if (i < 0)
        return M.nm < FSM_MAX_MEMBERS ? ex(FSM_REPLY_OK, true) : ex_err("ERR member table full");
    const struct mmember *m = &M.members[i];
    bool same = m->clen == c->name.len && m->rlen == c->key.len &&
                !memcmp(m->client, c->name.p, m->clen) && !memcmp(m->raft, c->key.p, m->rlen);
    return ex(FSM_REPLY_OK, !same);
}

/* LOCK_MULTI: all names at once if each is free with nobody queued, else queued or NIL; a name
 * the session holds or waits for refuses it. */
static struct expect predict_multi(const struct mcmd *c)
{
    if (!alive(c->sid))
        return ex_err("NOSESSION");
    bool all_free = true;
    for (int i = 0; i < NLOCKS; i++) {
        const struct mlock *l = &M.locks[i];
        if (!(c->mset & (1u << i)))
            continue;
        if (l->holder == c->sid || qpos(l, c->sid) >= 0)
            return ex_err("ERR session");
        all_free = all_free && !l->holder && !l->delay && !l->qn;
    }
    if (all_free)
        return ex_fresh();
    for (int i = 0; i < NLOCKS && c->wait_ms && g_detect && !M.dl_off; i++)
        if (((c->mset >> i) & 1) && closes_cycle(c->sid, i))
            return (struct expect){.kind = FSM_REPLY_ERR,
                                   .err = "DEADLOCK cycle of ",
                                   .changes = true}; /* one revision: the event's */
    return c->wait_ms ? ex(FSM_REPLY_QUEUED, true) : ex(FSM_REPLY_NIL, false);
}

/* A LOCK_MULTI's first name (byte order): the one its retry is answered by. */
static int multi_first(uint8_t mset)
{
    for (int i = 0; i < NSORTED; i++)
        if (mset & (1u << SORTED[i]))
            return SORTED[i];
    return 0;
}

/* ---- latches and barriers: a model of docs/protocol.md "Latches and barriers" ----
 * Two names; each either absent, a latch or a barrier. The participants in sid order. The
 * model applies a step from the rules and lists the latch events it must produce; a session
 * end removes its participations and breaks (in name order) what it still owed. */

#define NLATCH 2
#define LPARTS 64 /* participants of one record at most (alive sessions: MAX_ALIVE) */
static const struct fsm_str LATCHN[NLATCH] = {{"LA", 2}, {"LB", 2}};

struct mlatch {
    bool exists, barrier;
    int state; /* enum fsm_latch_state */
    uint64_t count, remaining, broken;
    int np;
    uint64_t sid[LPARTS];
    bool done[LPARTS];
};
static struct mlatch ML[NLATCH];

struct lev { /* an expected latch event */
    uint8_t type;
    uint64_t sid, ms;
    int li;
};

static int latch_idx(struct fsm_str n)
{
    for (int i = 0; i < NLATCH; i++)
        if (n.len == LATCHN[i].len && !memcmp(n.p, LATCHN[i].p, n.len))
            return i;
    return -1;
}

static void gen_latch_op(struct mcmd *c)
{
    c->name = LATCHN[below(NLATCH)];
    c->sid = pick_sid();
    int o = (int)below(100);
    if (o < 15) {
        c->op = FSM_OP_LATCH_CREATE;
        c->token = chance(5) ? 0 : 1 + below(3);
    } else if (o < 35) {
        c->op = FSM_OP_LATCH_JOIN;
    } else if (o < 60) {
        c->op = FSM_OP_LATCH_COUNTDOWN;
    } else if (o < 65) {
        c->op = FSM_OP_LATCH_DELETE;
    } else {
        c->op = FSM_OP_BARRIER;
        c->by = chance(40);
        c->token = c->by ? 0 : chance(3) ? 0 : 1 + below(3);
    }
}

static int lpart(const struct mlatch *l, uint64_t sid)
{
    for (int i = 0; i < l->np; i++)
        if (l->sid[i] == sid)
            return i;
    return -1;
}

static int lopen(const struct mlatch *l)
{
    int n = 0;
    for (int i = 0; i < l->np; i++)
        n += !l->done[i];
    return n;
}

static void lpart_add(struct mlatch *l, uint64_t sid)
{
    int i = l->np++;
    while (i > 0 && l->sid[i - 1] > sid) {
        l->sid[i] = l->sid[i - 1];
        l->done[i] = l->done[i - 1];
        i--;
    }
    l->sid[i] = sid;
    l->done[i] = false;
}

static void lpart_del(struct mlatch *l, int i)
{
    for (; i + 1 < l->np; i++) {
        l->sid[i] = l->sid[i + 1];
        l->done[i] = l->done[i + 1];
    }
    l->np--;
}

/* One latch op on model record *l (changed in place): the reply, the events in *evs. */
static struct expect latch_rule(const struct mcmd *c, struct mlatch *l, struct lev *evs, int *nev)
{
    uint64_t count = c->token;
    bool count_ok = count >= 1 && count <= FSM_MAX_LATCH_COUNT;
    int li = latch_idx(c->name), p;
    struct expect e;
    *nev = 0;
    switch (c->op) {
    case FSM_OP_LATCH_CREATE:
        if (!count_ok)
            return ex_err("ERR");
        if (l->exists)
            return l->barrier                     ? ex_err("WRONGTYPE")
                   : l->state == FSM_LATCH_BROKEN ? ex_err("BROKEN")
                   : l->count != count            ? ex_err("ERR")
                                                  : ex(FSM_REPLY_OK, false);
        *l = (struct mlatch){.exists = true, .count = count, .remaining = count};
        return ex(FSM_REPLY_OK, true);
    case FSM_OP_LATCH_JOIN:
    case FSM_OP_LATCH_COUNTDOWN:
        if (!alive(c->sid))
            return ex_err("NOSESSION");
        if (!l->exists)
            return ex_err("ERR");
        if (l->barrier)
            return ex_err("WRONGTYPE");
        if (l->state == FSM_LATCH_BROKEN)
            return ex_err("BROKEN");
        p = lpart(l, c->sid);
        if (c->op == FSM_OP_LATCH_JOIN) {
            if (p >= 0)
                return ex(FSM_REPLY_OK, false);
            if ((uint64_t)lopen(l) >= l->remaining || l->np >= LPARTS)
                return ex_err("ERR");
            lpart_add(l, c->sid);
            return ex(FSM_REPLY_OK, true);
        }
        if (l->remaining == 0 || (p >= 0 && l->done[p]))
            return ex_int(l->remaining);
        if (p < 0 && l->remaining <= (uint64_t)lopen(l))
            return ex_err("ERR");
        if (p >= 0)
            l->done[p] = true;
        if (--l->remaining == 0) {
            l->state = FSM_LATCH_ZERO;
            evs[(*nev)++] = (struct lev){FSM_EV_LATCH_ZERO, c->sid, l->count, li};
        }
        e = ex_int(l->remaining);
        e.changes = true;
        return e;
    case FSM_OP_LATCH_DELETE:
        if (!l->exists)
            return ex_int(0);
        evs[(*nev)++] = (struct lev){FSM_EV_LATCH_DELETED, 0, l->barrier, li};
        *l = (struct mlatch){.exists = false};
        e = ex_int(1);
        e.changes = true;
        return e;
    default: /* BARRIER */
        break;
    }
    if (c->by > 1 || (c->by && count))
        return ex_err("ERR");
    if (!alive(c->sid))
        return ex_err("NOSESSION");
    if (!c->by) { /* enter */
        if (!count_ok)
            return ex_err("ERR");
        if (l->exists && !l->barrier)
            return ex_err("WRONGTYPE");
        if (l->exists && l->state == FSM_LATCH_BROKEN)
            return ex_err("BROKEN");
        if (l->exists && l->count != count)
            return ex_err("ERR");
        p = l->exists ? lpart(l, c->sid) : -1;
        if (l->exists && l->state == FSM_LATCH_ZERO)
            return p >= 0 ? ex(FSM_REPLY_OK, false) : ex_err("ERR");
        if (p >= 0)
            return ex_int(l->count - (uint64_t)l->np);
        if (!l->exists)
            *l = (struct mlatch){.exists = true, .barrier = true, .count = count};
        if (l->np >= LPARTS)
            return ex_err("ERR"); /* not reached: sessions are fewer */
        lpart_add(l, c->sid);
        if ((uint64_t)l->np < l->count) {
            e = ex_int(l->count - (uint64_t)l->np);
            e.changes = true;
            return e;
        }
        l->state = FSM_LATCH_ZERO;
        evs[(*nev)++] = (struct lev){FSM_EV_BARRIER_FULL, c->sid, l->count, li};
        return ex(FSM_REPLY_OK, true);
    }
    if (!l->exists) /* leave */
        return ex(FSM_REPLY_OK, false);
    if (!l->barrier)
        return ex_err("WRONGTYPE");
    if (l->state == FSM_LATCH_BROKEN)
        return ex_err("BROKEN");
    p = lpart(l, c->sid);
    if (p < 0)
        return l->state == FSM_LATCH_ZERO ? ex_int((uint64_t)l->np) : ex(FSM_REPLY_OK, false);
    lpart_del(l, p);
    if (l->np) {
        e = l->state == FSM_LATCH_ZERO ? ex_int((uint64_t)l->np) : ex(FSM_REPLY_OK, true);
        e.changes = true;
        return e;
    }
    if (l->state == FSM_LATCH_ZERO)
        evs[(*nev)++] = (struct lev){FSM_EV_BARRIER_DONE, c->sid, 0, li};
    evs[(*nev)++] = (struct lev){FSM_EV_LATCH_DELETED, 0, 1, li};
    *l = (struct mlatch){.exists = false};
    return ex(FSM_REPLY_OK, true);
}

static struct expect predict_latch(const struct mcmd *c)
{
    struct mlatch copy = ML[latch_idx(c->name)];
    struct lev evs[4];
    int nev;
    return latch_rule(c, &copy, evs, &nev);
}

/* After an applied entry: the model's step (a latch op, or a session's end) and its events
 * against the FSM's latch events, in order. */
static int model_latch(const struct mcmd *c, const struct fsm_reply *r, const struct fsm_events *ev)
{
    struct lev want[2 * NLATCH + 2];
    int nw = 0;
    bool ends = c->op == FSM_OP_SESSION_CLOSE || c->op == FSM_OP_SESSION_EXPIRE ||
                c->op == FSM_OP_SESSION_REVOKE;
    if (ends && r->kind == FSM_REPLY_OK) {
        for (int i = 0; i < NLATCH; i++) { /* LA < LB: name order */
            struct mlatch *l = &ML[i];
            int p = l->exists ? lpart(l, c->sid) : -1;
            if (p < 0)
                continue;
            bool breaks = l->state != FSM_LATCH_BROKEN && (l->barrier || !l->done[p]);
            lpart_del(l, p);
            if (breaks) {
                l->state = FSM_LATCH_BROKEN;
                l->broken = c->sid;
                want[nw++] = (struct lev){l->barrier ? FSM_EV_BARRIER_BROKEN : FSM_EV_LATCH_BROKEN,
                                          c->sid, 0, i};
            }
        }
    } else if (latch_idx(c->name) >= 0 &&
               (c->op == FSM_OP_LATCH_CREATE || c->op == FSM_OP_LATCH_JOIN ||
                c->op == FSM_OP_LATCH_COUNTDOWN || c->op == FSM_OP_LATCH_DELETE ||
                c->op == FSM_OP_BARRIER)) {
        latch_rule(c, &ML[latch_idx(c->name)], want, &nw);
    }
    int k = 0;
    for (size_t i = 0; i < ev->n; i++) {
        const struct fsm_event *e = &ev->ev[i];
        if (e->type < FSM_EV_LATCH_ZERO)
            continue;
        MCHECK(k < nw && e->type == want[k].type && e->sid == want[k].sid && e->ms == want[k].ms &&
               latch_idx(e->name) == want[k].li);
        k++;
    }
    MCHECK(k == nw);
    return 0;
}

struct lparts {
    int n;
    uint64_t sid[LPARTS];
    bool done[LPARTS];
};

static void lparts_cb(void *arg, uint64_t sid, bool done)
{
    struct lparts *p = arg;
    if (p->n < LPARTS) {
        p->sid[p->n] = sid;
        p->done[p->n] = done;
    }
    p->n++;
}

static int compare_latches(const struct fsm *f)
{
    for (int i = 0; i < NLATCH; i++) {
        const struct mlatch *l = &ML[i];
        struct fsm_latch_view v;
        int exists = fsm_latch_info(f, LATCHN[i].p, LATCHN[i].len, &v);
        MCHECK(exists == l->exists);
        if (!exists)
            continue;
        uint64_t rem = !l->barrier                  ? l->remaining
                       : l->state == FSM_LATCH_ZERO ? (uint64_t)l->np
                                                    : l->count - (uint64_t)l->np;
        MCHECK(v.barrier == l->barrier && v.state == l->state && v.count == l->count);
        MCHECK(v.remaining == rem && v.n_parts == (size_t)l->np && v.broken_sid == l->broken);
        struct lparts p = {0};
        fsm_latch_parts(f, LATCHN[i].p, LATCHN[i].len, lparts_cb, &p);
        MCHECK(p.n == l->np);
        for (int k = 0; k < l->np; k++)
            MCHECK(p.sid[k] == l->sid[k] && p.done[k] == (!l->barrier && l->done[k]));
    }
    return 0;
}

static struct expect predict_op(const struct mcmd *c)
{
    switch (c->op) {
    case FSM_OP_LOCK_MULTI:
        return predict_multi(c);
    case FSM_OP_MEMBER_SET:
    case FSM_OP_MEMBER_DEL:
        return predict_member(c);
    case FSM_OP_NOOP:
        return ex(FSM_REPLY_OK, false);
    case FSM_OP_DEADLOCK_LIMIT: /* a revision only when it turns detection on or off */
        return c->token > FSM_DEADLOCK_LIMIT_MAX ? ex_err("ERR deadlock search limit")
                                                 : ex(FSM_REPLY_OK, (c->token == 0) != M.dl_off);
    case FSM_OP_SESSION_OPEN:
        return c->ttl_ms ? ex_fresh() : ex_err("ERR");
    case FSM_OP_SESSION_OPEN_REENTRANT:
        return c->ttl_ms && c->max_count >= 1 && c->max_count <= FSM_MAX_HOLD_COUNT ? ex_fresh()
                                                                                    : ex_err("ERR");
    case FSM_OP_SESSION_CLOSE:
    case FSM_OP_SESSION_EXPIRE:
    case FSM_OP_SESSION_REVOKE:
        return alive(c->sid) ? ex(FSM_REPLY_OK, true) : ex_err("NOSESSION");
    case FSM_OP_SESSION_CHECKPOINT: /* lease bookkeeping: no revision, no event */
        return alive(c->sid) ? ex(FSM_REPLY_OK, false) : ex_err("NOSESSION");
    case FSM_OP_PUT:
    case FSM_OP_DEL:
    case FSM_OP_INCR:
        return predict_kv(c);
    case FSM_OP_TXN:
        return predict_txn(c);
    case FSM_OP_LATCH_CREATE:
    case FSM_OP_LATCH_JOIN:
    case FSM_OP_LATCH_COUNTDOWN:
    case FSM_OP_LATCH_DELETE:
    case FSM_OP_BARRIER:
        return predict_latch(c);
    default:
        return predict_lock(c);
    }
}

/* The truth for a LOCK_MULTI retried after QUEUED, over every name (multi.c): queued if the
 * session's wait on the first name is this request (the same set of names); the first token if
 * it holds every name with the tokens of one grant (consecutive in name order); else ERR. */
static struct expect multi_truth(const struct mcmd *c)
{
    const struct mlock *l = &M.locks[multi_first(c->mset)];
    int pos = alive(c->sid) ? qpos(l, c->sid) : -1;
    if (pos >= 0)
        return l->qset[pos] == c->mset ? ex(FSM_REPLY_QUEUED, false)
                                       : ex_err("ERR the outcome of this LOCK.MULTI is gone");
    uint64_t first = alive(c->sid) && l->holder == c->sid ? l->token : 0, k = 0;
    for (int i = 0; i < NSORTED && first; i++) {
        const struct mlock *x = &M.locks[SORTED[i]];
        if (!(c->mset & (1u << SORTED[i])))
            continue;
        if (x->holder != c->sid || x->token != first + k++)
            first = 0;
    }
    return first ? ex_int(first) : ex_err("ERR the outcome of this LOCK.MULTI is gone");
}

/* A retry of the session's highest seq: the cached reply, or the truth for a queued LOCK. */
static struct expect predict_replay(const struct mcmd *c, const struct msess *rs)
{
    if (rs->cached.kind == FSM_REPLY_QUEUED && c->op == FSM_OP_LOCK_MULTI)
        return multi_truth(c);
    if (rs->cached.kind == FSM_REPLY_QUEUED &&
        (c->op == FSM_OP_LOCK || c->op == FSM_OP_LOCK_NOTIFY || c->op == FSM_OP_LOCK_META)) {
        struct mlock *l = &M.locks[lock_idx(c->name)];
        if (alive(c->sid) && l->holder == c->sid)
            return ex_int(l->token);
        if (alive(c->sid) && qpos(l, c->sid) >= 0)
            return ex(FSM_REPLY_QUEUED, false);
        return ex(FSM_REPLY_NIL, false);
    }
    struct expect e = ex(rs->cached.kind, false);
    e.value = rs->cached.value;
    e.err = rs->cached.kind == FSM_REPLY_ERR ? rs->cached.err : NULL;
    return e;
}

static struct expect predict(const struct mcmd *c, bool *run)
{
    *run = false;
    if (c->req_sid) {
        struct msess *rs = msess(c->req_sid);
        if (!rs || !rs->alive)
            return ex_err("NOSESSION");
        if (c->req_seq < rs->hi_seq)
            return ex_err("ERR request seq already superseded");
        if (c->req_seq == rs->hi_seq)
            return predict_replay(c, rs);
    }
    *run = true;
    return predict_op(c);
}

/* ---- checking the outcome ---- */

static int check_reply(const struct expect *e, const struct fsm_reply *r, uint64_t rev0,
                       uint64_t rev1)
{
    MCHECK(r->kind == e->kind);
    if (e->kind == FSM_REPLY_ERR) {
        MCHECK(strncmp(r->err, e->err, strlen(e->err)) == 0);
        MCHECK(rev1 == rev0 + (e->changes ? 1 : 0)); /* DEADLOCK: its event's revision */
    }
    if (e->kind == FSM_REPLY_INT && e->txn)
        MCHECK(r->value == (((rev0 + e->nrev) << 1) | e->value));
    else if (e->kind == FSM_REPLY_INT)
        MCHECK(e->fresh ? r->value == rev0 + 1 : r->value == e->value);
    MCHECK(e->changes ? rev1 > rev0 : rev1 == rev0);
    return 0;
}

/* Events drive the model; each must be legal at the moment it happens. */
static uint64_t g_rev0; /* the revision before the entry being checked */

/* A queued request is granted only at the head of every queue it waits in: the other waiters of
 * its request are at their heads, or already granted by this entry. */
static int check_group_head(int li, const struct mlock *l)
{
    for (int k = 0; k < NLOCKS; k++) {
        if (k == li || !(l->qset[0] & (1u << k)))
            continue;
        int at = qpos_rev(&M.locks[k], l->qrev[0]);
        MCHECK(at <= 0);
        MCHECK(at < 0 || (!M.locks[k].holder && !M.locks[k].delay));
    }
    return 0;
}

static int model_event(const struct fsm_event *ev, const struct mcmd *c, uint64_t rev1,
                       uint64_t *released_by)
{
    bool named_lock = ev->type != FSM_EV_SESSION_OPENED && ev->type != FSM_EV_SESSION_ENDED &&
                      ev->type != FSM_EV_FENCE_REJECTED && /* a fence may name any lock */
                      ev->type != FSM_EV_KEY_PUT && ev->type != FSM_EV_KEY_DELETED;
    int li = named_lock ? lock_idx(ev->name) : 0;
    MCHECK(li >= 0);
    struct mlock *l = &M.locks[li];
    switch (ev->type) {
    case FSM_EV_SESSION_OPENED:
        MCHECK(ev->sid > M.last_sid && M.ns < MAXS && ev->ms == c->ttl_ms);
        M.last_sid = ev->sid;
        M.s[M.ns++] =
            (struct msess){.sid = ev->sid,
                           .lockdelay = c->lockdelay_ms,
                           .max_count = c->op == FSM_OP_SESSION_OPEN_REENTRANT ? c->max_count : 0,
                           .alive = true};
        break;
    case FSM_EV_GRANTED:
        MCHECK(!l->delay && !l->holder && alive(ev->sid));
        MCHECK(l->qn ? l->q[0] == ev->sid : true); /* only the FIFO head, or a free lock */
        MCHECK(ev->token > l->last_token && ev->token > M.last_token && ev->token <= rev1);
        if (l->qn && check_group_head(li, l))
            return -1;
        /* the value and max hold: the head waiter's, or the LOCK_META's own on a free lock */
        {
            bool own =
                !l->qn && c->op == FSM_OP_LOCK_META && ev->sid == c->sid && lock_idx(c->name) == li;
            l->hv = l->qn ? l->qhv[0] : own ? lval_idx(c->value) : 0;
            l->mh = l->qn ? l->qmh[0] : own ? c->maxhold : 0;
            l->lm_on |= own;
        }
        MCHECK(ev->value.len == LVAL[l->hv].len &&
               (!ev->value.len || !memcmp(ev->value.p, LVAL[l->hv].p, ev->value.len)));
        if (l->qn)
            qdel(l, 0);
        l->holder = ev->sid;
        l->token = l->last_token = M.last_token = ev->token;
        l->count = 1;
        break;
    case FSM_EV_RELEASED:
        MCHECK(l->holder == ev->sid && l->token == ev->token);
        MCHECK(c->op != FSM_OP_REVOKE_END || ev->expired);
        MCHECK(ev->maxhold == (c->op == FSM_OP_MAXHOLD_END));
        MCHECK(!ev->maxhold || (ev->expired && ev->ms == l->mh));
        *released_by = ev->sid;
        l->trans += l->lm_on; /* an ended grant; the count of a record LOCK_META reached */
        l->hv = 0;
        l->mh = 0;
        l->holder = l->token = 0;
        MCHECK(c->op != FSM_OP_UNLOCK || l->count == 1); /* UNLOCK releases the last hold */
        *released_by = ev->sid;
        l->holder = l->token = l->count = 0;
        l->rv_token = l->rv_ms = 0; /* the grant's revoke ends with it */
        break;
    case FSM_EV_WAIT_NOTIFY: /* right after the waiter's WAIT_STARTED, to the holder */
        MCHECK((c->op == FSM_OP_LOCK_NOTIFY || (c->op == FSM_OP_LOCK_META && c->mflags == 1)) &&
               ev->sid == c->sid && ev->ms == c->wait_ms);
        MCHECK(l->holder && l->token == ev->token && l->qn && l->q[l->qn - 1] == ev->sid);
        break;
    case FSM_EV_REVOKE_REQUESTED: {
        MCHECK(c->op == FSM_OP_LOCK_REVOKE && l->holder == ev->sid && l->token == ev->token);
        MCHECK(ev->value.len == c->reason.len && ev->by.len == c->key.len);
        bool again = l->rv_token == ev->token;
        uint64_t old = again ? l->rv_ms : 0;
        l->rv_ms = !old || !c->wait_ms ? (old ? old : c->wait_ms)
                   : old < c->wait_ms  ? old
                                       : c->wait_ms;
        l->rv_token = ev->token;
        MCHECK(ev->ms == l->rv_ms); /* the holder is told the deadline that stands */
        break;
    }
    case FSM_EV_WAIT_STARTED:
        MCHECK(alive(ev->sid) && qpos(l, ev->sid) < 0 && l->holder != ev->sid);
        MCHECK((l->holder || l->delay || l->qn || c->op == FSM_OP_LOCK_MULTI) && l->qn < MAXQ &&
               ev->ms == c->wait_ms);
        l->q[l->qn] = ev->sid;
        l->lm_on |= c->op == FSM_OP_LOCK_META;
        l->qhv[l->qn] = c->op == FSM_OP_LOCK_META ? lval_idx(c->value) : 0;
        l->qmh[l->qn] = c->op == FSM_OP_LOCK_META ? c->maxhold : 0;
        l->qrev[l->qn] = g_rev0 + 1; /* the enqueue takes the command's first revision */
        l->qset[l->qn++] = c->op == FSM_OP_LOCK_MULTI ? c->mset : (uint8_t)(1u << li);
        break;
    case FSM_EV_WAIT_ENDED:
        MCHECK(qpos(l, ev->sid) >= 0);
        qdel(l, qpos(l, ev->sid));
        break;
    case FSM_EV_LOCKDELAY_STARTED:
        MCHECK(!l->holder && !l->delay && msess(*released_by));
        MCHECK(ev->ms == msess(*released_by)->lockdelay && ev->ms > 0);
        l->delay = true;
        l->delay_ms = ev->ms;
        break;
    case FSM_EV_LOCKDELAY_ENDED:
        MCHECK(l->delay);
        l->delay = false;
        break;
    case FSM_EV_SESSION_ENDED: {
        struct msess *s = msess(ev->sid);
        MCHECK(s && s->alive);
        MCHECK(ev->expired == (c->op != FSM_OP_SESSION_CLOSE));
        MCHECK(ev->revoked == (c->op == FSM_OP_SESSION_REVOKE));
        for (int i = 0; i < NLOCKS; i++)
            MCHECK(M.locks[i].holder != ev->sid && qpos(&M.locks[i], ev->sid) < 0);
        s->alive = false;
        for (int i = 0; i < NKEYS; i++)
            if (M.keys[i].exists && M.keys[i].lease == ev->sid)
                M.keys[i].exists = false;
        break;
    }
    case FSM_EV_FENCE_REJECTED:
        MCHECK(c->has_fence && ev->token == c->fence_token);
        break;
    case FSM_EV_DEADLOCK: /* the request closed a cycle: nothing changes in the model */
        MCHECK(g_detect && !M.dl_off && ev->sid == c->sid);
        MCHECK(c->op == FSM_OP_LOCK || c->op == FSM_OP_LOCK_NOTIFY || c->op == FSM_OP_LOCK_META
                   ? li == lock_idx(c->name)
                   : c->op == FSM_OP_LOCK_MULTI && ((c->mset >> li) & 1));
        MCHECK(ev->ms >= 1 && check_cycle(&ev->value, c, li) == 0);
        n_dl++;
        n_dl_multi += c->op == FSM_OP_LOCK_MULTI;
        break;
    case FSM_EV_KEY_PUT: /* the model applies KV writes from the reply (model_kv) */
        MCHECK((c->op == FSM_OP_PUT || c->op == FSM_OP_INCR || c->op == FSM_OP_TXN) &&
               key_idx(ev->name) >= 0);
        /* a counter keeps its lease: the event names it */
        MCHECK(c->op != FSM_OP_INCR ||
               ev->sid == (M.keys[key_idx(ev->name)].exists ? M.keys[key_idx(ev->name)].lease : 0));
        break;
    case FSM_EV_KEY_DELETED: /* DEL (sid 0), or the end of the key's lease session */
        MCHECK(key_idx(ev->name) >= 0);
        MCHECK(ev->sid ? M.keys[key_idx(ev->name)].lease == ev->sid
                       : c->op == FSM_OP_DEL || c->op == FSM_OP_TXN);
        break;
    default:
        MCHECK(0);
    }
    return 0;
}

static int model_events(const struct fsm_events *ev, const struct mcmd *c, uint64_t rev1)
{
    uint64_t released_by = 0;
    for (size_t i = 0; i < ev->n; i++)
        if (ev->ev[i].type < FSM_EV_LATCH_ZERO && model_event(&ev->ev[i], c, rev1, &released_by))
            return -1;               /* latch events: model_latch */
    for (int i = 0; i < NLOCKS; i++) /* a record nobody uses is dropped: its count with it */
        if (!M.locks[i].holder && !M.locks[i].delay && !M.locks[i].qn) {
            M.locks[i].trans = 0;
            M.locks[i].lm_on = false;
        }
    return 0;
}

/* A hold count changes without an event: a LOCK of a lock its reentrant session held before
 * counts up (INT), an UNLOCK that left it held counts down (OK, no RELEASED). */
static void model_count(const struct mcmd *c, const struct fsm_reply *r, bool holder_before)
{
    if (!holder_before)
        return;
    struct mlock *l = &M.locks[lock_idx(c->name)];
    if ((c->op == FSM_OP_LOCK || c->op == FSM_OP_LOCK_NOTIFY || c->op == FSM_OP_LOCK_META) &&
        r->kind == FSM_REPLY_INT && msess(c->sid)->max_count) {
        l->count++;
        n_reup++;
    }
    if (c->op == FSM_OP_UNLOCK && r->kind == FSM_REPLY_OK && l->holder == c->sid) {
        l->count--;
        n_redown++;
    }
}

/* KV writes have no events: the model applies them from the reply. */
static void model_kv(const struct mcmd *c, const struct fsm_reply *r, uint64_t rev1)
{
    if ((c->op != FSM_OP_PUT && c->op != FSM_OP_DEL && c->op != FSM_OP_INCR) ||
        r->kind != FSM_REPLY_INT)
        return;
    struct mkey *k = &M.keys[key_idx(c->key)];
    if (c->op == FSM_OP_DEL) {
        k->exists = false;
        return;
    }
    if (c->op == FSM_OP_INCR) { /* the reply is the value; the key keeps its lease */
        if (!k->exists)
            *k = (struct mkey){.exists = true, .create_rev = rev1};
        k->mod_rev = rev1;
        k->version++;
        k->is_int = true;
        k->val = (int64_t)r->value;
        return;
    }
    if (!k->exists)
        *k = (struct mkey){.exists = true, .create_rev = r->value};
    k->mod_rev = r->value;
    k->version++;
    k->lease = c->lease_sid;
    k->is_int = fsm_counter_parse(c->value.p, c->value.len, &k->val) == 0;
}

/* A TXN's writes, from the branch its reply names: each change under the next revision, in op
 * order, and every op's result (PUT: its revision; DEL: 1 if it existed; INCR: the new value)
 * checked. */
static int model_txn(const struct mcmd *c, const struct fsm_reply *r, uint64_t rev1)
{
    int from, n;
    uint64_t rev = g_rev0;
    if (c->op != FSM_OP_TXN || r->kind != FSM_REPLY_INT)
        return 0;
    bool then = txn_branch(c, &from, &n);
    MCHECK(then == (r->value & 1) && r->txn_known && r->txn_n == (uint32_t)n);
    for (int i = 0; i < n; i++) {
        const struct mtx *x = &c->tx[from + i];
        struct mkey *k = &M.keys[x->idx];
        if (x->type == FSM_TXN_DEL) {
            MCHECK(r->txn[i] == (k->exists ? 1u : 0u));
            rev += k->exists;
            k->exists = false;
            continue;
        }
        int64_t old = k->exists ? k->val : 0;
        rev++;
        if (!k->exists)
            *k = (struct mkey){.exists = true, .create_rev = rev};
        k->mod_rev = rev;
        k->version++;
        if (x->type == FSM_TXN_PUT) {
            MCHECK(r->txn[i] == rev);
            k->lease = 0;
            k->is_int = fsm_counter_parse(TXV[x->vi].p, TXV[x->vi].len, &k->val) == 0;
        } else { /* INCR: the key keeps its lease */
            k->is_int = true;
            k->val = (int64_t)((uint64_t)old + x->n);
            MCHECK(r->txn[i] == (uint64_t)k->val);
        }
    }
    MCHECK(rev == rev1);
    return 0;
}

/* Member writes have no events: the model applies them from the reply. */
static void model_member(const struct mcmd *c, const struct fsm_reply *r)
{
    if (c->op != FSM_OP_MEMBER_SET && c->op != FSM_OP_MEMBER_DEL)
        return;
    int i = mpos(c->sid);
    if (r->kind == FSM_REPLY_ERR) {
        n_mfull++;
        return;
    }
    if (c->op == FSM_OP_MEMBER_DEL) {
        if (i >= 0) {
            memmove(&M.members[i], &M.members[i + 1],
                    (size_t)(M.nm - i - 1) * sizeof(M.members[0]));
            M.nm--;
            n_mdel++;
        }
        return;
    }
    n_mset++;
    if (i < 0) {
        i = -1 - i;
        memmove(&M.members[i + 1], &M.members[i], (size_t)(M.nm - i) * sizeof(M.members[0]));
        M.nm++;
    } else if (M.members[i].clen == c->name.len && M.members[i].rlen == c->key.len &&
               !memcmp(M.members[i].client, c->name.p, c->name.len) &&
               !memcmp(M.members[i].raft, c->key.p, c->key.len)) {
        n_msame++;
    }
    struct mmember *m = &M.members[i];
    m->id = c->sid;
    m->clen = c->name.len;
    m->rlen = c->key.len;
    memmove(m->client, c->name.p, c->name.len); /* may alias the stored entry */
    memmove(m->raft, c->key.p, c->key.len);
    if ((uint64_t)M.nm > n_mmax)
        n_mmax = (uint64_t)M.nm;
}

struct mlist {
    struct fsm_member_view v[FSM_MAX_MEMBERS + 1];
    int n;
};

static void mlist_cb(void *arg, const struct fsm_member_view *v)
{
    struct mlist *l = arg;
    if (l->n <= FSM_MAX_MEMBERS)
        l->v[l->n] = *v;
    l->n++;
}

static bool member_matches(const struct mmember *m, const struct fsm_member_view *v)
{
    return v->id == m->id && v->client_addr.len == m->clen && v->raft_addr.len == m->rlen &&
           !memcmp(v->client_addr.p, m->client, m->clen) &&
           !memcmp(v->raft_addr.p, m->raft, m->rlen);
}

static int compare_members(const struct fsm *f)
{
    struct mlist l = {.n = 0};
    fsm_foreach_member(f, mlist_cb, &l);
    MCHECK(l.n == M.nm);
    for (int i = 0; i < M.nm; i++) {
        struct fsm_member_view v;
        MCHECK(member_matches(&M.members[i], &l.v[i]));
        MCHECK(fsm_member_get(f, M.members[i].id, &v) == 1 && member_matches(&M.members[i], &v));
    }
    for (uint64_t id = 0; id <= MEMBER_IDS + 1; id += 7) {
        struct fsm_member_view v;
        MCHECK(fsm_member_get(f, id, &v) == (mpos(id) >= 0));
    }
    return 0;
}

struct wq {
    uint64_t sids[MAXQ + 1];
    int n;
};

static void wq_cb(void *arg, uint64_t sid, uint64_t wait_ms)
{
    struct wq *w = arg;
    (void)wait_ms;
    if (w->n <= MAXQ)
        w->sids[w->n] = sid;
    w->n++;
}

/* All or nothing: every waiter of a request is queued exactly while the others are (a grant,
 * a cancel, an UNLOCK or a session end takes the request off every queue in one entry). */
static int check_groups(void)
{
    for (int i = 0; i < NLOCKS; i++)
        for (int j = 0; j < M.locks[i].qn; j++)
            for (int k = 0; k < NLOCKS; k++) {
                if (!(M.locks[i].qset[j] & (1u << k)))
                    continue;
                int at = qpos_rev(&M.locks[k], M.locks[i].qrev[j]);
                MCHECK(at >= 0 && M.locks[k].q[at] == M.locks[i].q[j]);
            }
    return 0;
}

static int compare_state(const struct fsm *f)
{
    if (check_groups() || compare_latches(f))
        return -1;
    for (int i = 0; i < NLOCKS; i++) {
        const struct mlock *l = &M.locks[i];
        struct fsm_lock_view v;
        int exists = fsm_lock_info(f, LOCKN[i].p, LOCKN[i].len, &v);
        MCHECK(exists == (l->holder || l->delay || l->qn));
        if (!exists)
            continue;
        MCHECK(v.holder_sid == l->holder && v.in_lockdelay == l->delay);
        MCHECK(v.token == l->token && v.n_waiters == (size_t)l->qn);
        MCHECK(v.count == l->count && v.reentrant == (l->holder && msess(l->holder)->max_count));
        MCHECK(!l->delay || v.lockdelay_ms == l->delay_ms);
        struct fsm_revoke_view rv;
        int pending = fsm_lock_revoke_info(f, LOCKN[i].p, LOCKN[i].len, &rv);
        MCHECK(pending == (l->rv_token != 0));
        MCHECK(!pending || (rv.token == l->rv_token && rv.deadline_ms == l->rv_ms));
        MCHECK(v.maxhold_ms == l->mh && v.transitions == l->trans);
        MCHECK(v.value.len == LVAL[l->hv].len &&
               (!v.value.len || !memcmp(v.value.p, LVAL[l->hv].p, v.value.len)));
        struct wq w = {.n = 0};
        fsm_lock_waiters(f, LOCKN[i].p, LOCKN[i].len, wq_cb, &w);
        MCHECK(w.n == l->qn && !memcmp(w.sids, l->q, (size_t)l->qn * sizeof(uint64_t)));
    }
    for (int i = 0; i < NKEYS; i++) {
        const struct mkey *k = &M.keys[i];
        struct fsm_kv_meta m;
        int exists = fsm_kv_get(f, KEYN[i].p, KEYN[i].len, &m);
        MCHECK(exists == k->exists);
        if (exists)
            MCHECK(m.create_rev == k->create_rev && m.mod_rev == k->mod_rev &&
                   m.version == k->version && m.lease_sid == k->lease);
        if (exists && k->is_int) { /* a counter's value is its canonical decimal text */
            char text[32];
            int n = snprintf(text, sizeof(text), "%lld", (long long)k->val);
            MCHECK(m.value_len == (size_t)n && !memcmp(m.value, text, (size_t)n));
        }
    }
    return compare_members(f);
}

/* ---- the replica check ---- */

static int same_events(const struct fsm_events *a, const struct fsm_events *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++) {
        const struct fsm_event *x = &a->ev[i], *y = &b->ev[i];
        if (x->type != y->type || x->expired != y->expired || x->revoked != y->revoked ||
            x->sid != y->sid || x->token != y->token || x->ms != y->ms ||
            x->name.len != y->name.len || memcmp(x->name.p, y->name.p, x->name.len))
            return 0;
    }
    return 1;
}

static int same_snapshots(const struct fsm *f, const struct fsm *g)
{
    struct buf a, b;
    buf_init(&a);
    buf_init(&b);
    int eq =
        !fsm_snapshot(f, &a) && !fsm_snapshot(g, &b) && a.len == b.len && !memcmp(a.p, b.p, a.len);
    buf_free(&a);
    buf_free(&b);
    return eq;
}

static struct fsm *restored_copy(const struct fsm *f)
{
    struct buf b;
    char err[160];
    buf_init(&b);
    struct fsm *g = fsm_new();
    uint8_t key[FSM_HASH_KEY_BYTES];
    for (int i = 0; i < FSM_HASH_KEY_BYTES; i++)
        key[i] = (uint8_t)(0x3c + i * 17);
    if (!g || fsm_set_hash_key(g, key) || fsm_snapshot(f, &b) ||
        fsm_restore(g, (const uint8_t *)b.p, b.len, err, sizeof(err))) {
        fprintf(stderr, "  restore failed: %s\n", err);
        fsm_free(g);
        g = NULL;
    }
    buf_free(&b);
    return g;
}

/* ---- one step ---- */

/* Revisions: a changing command allocates one per grant, or exactly one without a grant; a
 * CANCEL_WAIT takes its one first, then one per grant its departure lets through (a waiting
 * multi-request that leaves can unblock a queue). */
static int check_revisions(const struct expect *e, const struct fsm_events *ev, uint64_t rev0,
                           uint64_t rev1, uint8_t op)
{
    uint64_t grants = 0;
    if (e->txn) /* a revision per change (check_reply) */
        return 0;
    for (size_t i = 0; i < ev->n; i++)
        grants += ev->ev[i].type == FSM_EV_GRANTED;
    if (op == FSM_OP_CANCEL_WAIT && e->changes && grants)
        grants++;
    MCHECK(rev1 - rev0 == (e->changes ? (grants ? grants : 1) : 0));
    return 0;
}

/* The locks a session holds before it ends: lock-delay on them iff expired with a delay. */
static int ending_locks(const struct mcmd *c, bool run, int *held)
{
    int n = 0;
    if (run &&
        (c->op == FSM_OP_SESSION_CLOSE || c->op == FSM_OP_SESSION_EXPIRE ||
         c->op == FSM_OP_SESSION_REVOKE) &&
        alive(c->sid))
        for (int i = 0; i < NLOCKS; i++)
            if (M.locks[i].holder == c->sid)
                held[n++] = i;
    return n;
}

static int check_lockdelays(const struct mcmd *c, const int *held, int n, uint64_t delay)
{
    bool want = (c->op == FSM_OP_SESSION_EXPIRE || c->op == FSM_OP_SESSION_REVOKE) && delay > 0;
    for (int i = 0; i < n; i++)
        MCHECK(M.locks[held[i]].delay == want && (!want || M.locks[held[i]].delay_ms == delay));
    return 0;
}

/* The twin with another hash key: the same reply and events as f for the same entry. */
static int step_twin(struct fsm *h, const struct buf *entry, const struct fsm_reply *r,
                     const struct fsm_events *ev, struct fsm_events *hev)
{
    struct fsm_reply hr;
    fsm_events_reset(hev);
    fsm_apply(h, (const uint8_t *)entry->p, entry->len, &hr, hev);
    MCHECK(hr.kind == r->kind && hr.value == r->value && !strcmp(hr.err, r->err));
    MCHECK(same_events(ev, hev));
    return 0;
}

static struct fsm *g_twin;          /* the FSM with another hash key (run_seed) */
static struct fsm_events g_twin_ev; /* its events */

/* ---- the lock history against the events of the entry ---- */

#define HIST_PER_LOCK 3
#define HIST_MAX 6

struct hfind {
    uint64_t token, sid, ended_rev;
    bool found;
};

static void hfind_cb(void *arg, const struct fsm_hist_entry *e)
{
    struct hfind *h = arg;
    if (e->token == h->token) {
        h->found = true;
        h->sid = e->sid;
        h->ended_rev = e->ended_rev;
    }
}

static int check_history(const struct fsm *f, const struct fsm_events *ev)
{
    for (size_t i = 0; i < ev->n; i++) {
        const struct fsm_event *e = &ev->ev[i];
        if (e->type != FSM_EV_GRANTED && e->type != FSM_EV_RELEASED)
            continue;
        struct hfind h = {.token = e->token};
        uint64_t compacted = 0;
        int rc =
            fsm_lock_history(f, e->name.p, e->name.len, 0, HIST_PER_LOCK, hfind_cb, &h, &compacted);
        MCHECK(rc >= 0 || rc == FSM_HIST_COMPACTED);
        if (!h.found) { /* dropped since: by the bounds, oldest first */
            MCHECK(compacted >= e->token);
            continue;
        }
        MCHECK(h.sid == e->sid);
        if (e->type == FSM_EV_RELEASED)
            MCHECK(h.ended_rev == fsm_revision(f));
    }
    return 0;
}

static int step(struct fsm *f, struct fsm *g, struct buf *entry, struct fsm_events *ev,
                struct fsm_events *gev)
{
    int held[NLOCKS];
    struct mcmd c;
    char err[128];
    gen_entry(entry);
    bool decoded = !mcmd_decode(entry, &c, err, sizeof(err));
    bool run = false;
    struct expect e = decoded ? predict(&c, &run) : ex_err("ERR bad entry: ");
    uint64_t rev0 = g_rev0 = fsm_revision(f);
    int n_held = decoded ? ending_locks(&c, run, held) : 0;
    uint64_t delay = n_held ? msess(c.sid)->lockdelay : 0;
    int li = decoded && c.name.len ? lock_idx(c.name) : -1;
    bool holder_before = li >= 0 && c.sid && M.locks[li].holder == c.sid;
    struct fsm_reply r, gr;
    fsm_events_reset(ev);
    fsm_apply(f, (const uint8_t *)entry->p, entry->len, &r, ev);
    MCHECK(fsm_check_invariants(f, err, sizeof(err)) == 0 || (fprintf(stderr, "%s\n", err), 0));
    if (check_reply(&e, &r, rev0, fsm_revision(f)))
        return -1;
    n_bad += !decoded;
    n_replay += decoded && !run && r.kind != FSM_REPLY_ERR;
    n_err += r.kind == FSM_REPLY_ERR;
    for (size_t i = 0; i < ev->n; i++)
        n_ev[ev->ev[i].type & 31]++;
    if (!run)
        MCHECK(ev->n == 0);
    else if (model_events(ev, &c, fsm_revision(f)) || check_history(f, ev))
        return -1;
    if (check_revisions(&e, ev, rev0, fsm_revision(f), decoded ? c.op : 0) ||
        check_lockdelays(&c, held, n_held, delay))
        return -1;
    if (run && decoded)
        model_count(&c, &r, holder_before);
    if (run && model_latch(&c, &r, ev))
        return -1;
    if (run && decoded && c.op == FSM_OP_TXN)
        n_txn[r.kind != FSM_REPLY_INT ? 2 : (r.value & 1) ? 0 : 1]++;
    if (run && model_txn(&c, &r, fsm_revision(f)))
        return -1;
    if (run) {
        model_kv(&c, &r, fsm_revision(f));
        model_member(&c, &r);
        if (c.op == FSM_OP_DEADLOCK_LIMIT && r.kind == FSM_REPLY_OK)
            M.dl_off = c.token == 0;
    }
    struct msess *rs = run && c.req_sid ? msess(c.req_sid) : NULL;
    if (rs && rs->alive) {
        rs->hi_seq = c.req_seq;
        rs->cached = r;
    }
    if (compare_state(f))
        return -1;
    if (g_twin && step_twin(g_twin, entry, &r, ev, &g_twin_ev))
        return -1;
    if (!g)
        return 0;
    fsm_events_reset(gev);
    fsm_apply(g, (const uint8_t *)entry->p, entry->len, &gr, gev);
    MCHECK(gr.kind == r.kind && gr.value == r.value && !strcmp(gr.err, r.err));
    MCHECK(same_events(ev, gev));
    return 0;
}

static int run_seed(uint64_t seed, int steps)
{
    struct fsm *f = fsm_new(), *g = NULL;
    struct fsm_events ev, gev;
    uint8_t key[FSM_HASH_KEY_BYTES];
    for (int i = 0; i < FSM_HASH_KEY_BYTES; i++)
        key[i] = (uint8_t)(0xa5 ^ (i * 13) ^ seed);
    g_twin = fsm_new();
    if (!g_twin || fsm_set_hash_key(g_twin, key))
        return -1;
    fsm_events_init(&g_twin_ev);
    struct buf entry;
    int rc = 0;
    fsm_events_init(&ev);
    fsm_events_init(&gev);
    buf_init(&entry);
    memset(&M, 0, sizeof(M));
    memset(ML, 0, sizeof(ML));
    memset(n_ev, 0, sizeof(n_ev));
    n_dl = n_dl_multi = n_reup = n_redown = 0;
    memset(n_txn, 0, sizeof(n_txn));
    g_detect = seed & 1;
    if (g_detect) { /* log format 2: deadlock detection on, in f and in its twin alike */
        struct fsm_cmd fc = {.op = FSM_OP_CLUSTER_FORMAT, .cluster_format = {.format = 2}};
        struct fsm_reply fr;
        if (fsm_cmd_encode(&fc, &entry))
            return -1;
        fsm_apply(f, (const uint8_t *)entry.p, entry.len, &fr, &ev);
        fsm_apply(g_twin, (const uint8_t *)entry.p, entry.len, &fr, &g_twin_ev);
        buf_reset(&entry);
        M.last_token = fsm_revision(f);
    }
    { /* the lock history on, in f and in its twin alike */
        struct fsm_cmd hc = {
            .op = FSM_OP_HISTORY_LIMITS,
            .history_limits = {.per_lock = HIST_PER_LOCK, .max_entries = HIST_MAX}};
        struct fsm_reply hr;
        if (fsm_cmd_encode(&hc, &entry))
            return -1;
        fsm_apply(f, (const uint8_t *)entry.p, entry.len, &hr, &ev);
        fsm_apply(g_twin, (const uint8_t *)entry.p, entry.len, &hr, &g_twin_ev);
        buf_reset(&entry);
        M.last_token = fsm_revision(f);
    }
    n_replay = n_bad = n_err = 0;
    n_mset = n_msame = n_mfull = n_mdel = n_mmax = 0;
    memset(LONG_ADDR, 'L', sizeof(LONG_ADDR));
    g_seed = seed;
    rng_state = seed * 0x9e3779b97f4a7c15ull + 1;
    for (g_step = 0; g_step < steps && rc == 0; g_step++) {
        if (g_step % WINDOW == 0) {
            fsm_free(g);
            g = restored_copy(f);
            rc = g && same_snapshots(f, g) && same_snapshots(f, g_twin) ? 0 : -1;
        } else if (g && g_step % WINDOW == TWIN) {
            rc = same_snapshots(f, g) ? 0 : -1;
            fsm_free(g);
            g = NULL;
        }
        if (rc == 0)
            rc = step(f, g, &entry, &ev, &gev);
    }
    if (rc)
        fprintf(stderr, "  seed %llu failed at step %d\n", (unsigned long long)seed, g_step);
    printf("  grants %llu waits %llu/%llu delays %llu/%llu expiries %llu replays %llu bad %llu "
           "errors %llu\n",
           (unsigned long long)n_ev[FSM_EV_GRANTED], (unsigned long long)n_ev[FSM_EV_WAIT_STARTED],
           (unsigned long long)n_ev[FSM_EV_WAIT_ENDED],
           (unsigned long long)n_ev[FSM_EV_LOCKDELAY_STARTED],
           (unsigned long long)n_ev[FSM_EV_LOCKDELAY_ENDED],
           (unsigned long long)n_ev[FSM_EV_SESSION_ENDED], (unsigned long long)n_replay,
           (unsigned long long)n_bad, (unsigned long long)n_err);
    printf("  format %d: deadlocks refused %llu (LOCK_MULTI %llu)\n", g_detect ? 2 : 1,
           (unsigned long long)n_dl, (unsigned long long)n_dl_multi);
    printf("  hold counts: up %llu, down without a release %llu\n", (unsigned long long)n_reup,
           (unsigned long long)n_redown);
    n_retot += n_reup + n_redown;
    printf("  txn: then %llu else %llu refused %llu\n", (unsigned long long)n_txn[0],
           (unsigned long long)n_txn[1], (unsigned long long)n_txn[2]);
    n_txn_tot += n_txn[0] + n_txn[1];
    printf("  members: set %llu (identical %llu) del %llu full %llu max %llu\n",
           (unsigned long long)n_mset, (unsigned long long)n_msame, (unsigned long long)n_mdel,
           (unsigned long long)n_mfull, (unsigned long long)n_mmax);
    if (rc == 0 && !same_snapshots(f, g_twin)) {
        fprintf(stderr, "  seed %llu: the twin with another hash key differs at the end\n",
                (unsigned long long)seed);
        rc = -1;
    }
    fsm_free(f);
    fsm_free(g);
    fsm_free(g_twin);
    g_twin = NULL;
    fsm_events_free(&g_twin_ev);
    fsm_events_free(&ev);
    fsm_events_free(&gev);
    buf_free(&entry);
    buf_free(&g_txraw);
    return rc;
}

static uint64_t seeds[64];
static int n_seeds, n_steps = 5000;

TEST(random_sequences_follow_the_model_and_survive_restore)
{
    for (int i = 0; i < n_seeds; i++) {
        printf("fsm_random: seed %llu, %d steps\n", (unsigned long long)seeds[i], n_steps);
        CHECK(run_seed(seeds[i], n_steps) == 0);
    }
    CHECK(n_steps < 500 || n_retot > 0);   /* the reentrant paths were exercised */
    CHECK(n_steps < 500 || n_txn_tot > 0); /* and TXN's both branches */
}

int main(int argc, char **argv)
{
    const char *env = getenv("FSM_SEED");
    if (argc > 1 || (env && *env)) {
        seeds[n_seeds++] = strtoull(argc > 1 ? argv[1] : env, NULL, 0);
        if (argc > 2)
            n_steps = atoi(argv[2]);
    } else {
        for (int i = 0; i < 20; i++)
            seeds[n_seeds++] = 1000 + (uint64_t)i * 7919;
    }
    RUN(random_sequences_follow_the_model_and_survive_restore);
    TEST_MAIN_END();
}
