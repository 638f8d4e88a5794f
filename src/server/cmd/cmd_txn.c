/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_txn.c — TXN: compares, then the writes of the branch they select, in one log entry
 * (fsm/txn.c applies it):
 *
 *   TXN [IF <compare>]... THEN [<op>]... [ELSE [<op>]...] [FENCE lock token] [REQ sid seq]
 *   compare:  REV key =|!=|<|> n    VALUE key =|!= value    EXISTS key    MISSING key
 *             TOKEN lock =|!= n     HOLDS lock sid
 *   op:       PUT key value         DEL key                 INCR key n
 *
 * One table (txn_words) says what each word takes; the handler and the permission check
 * (cmd_txn_names, for cmd_perm.c) both walk the arguments with it, so they cannot disagree on
 * which argument is a key and which a lock. Checked here, before anything is proposed (each
 * refusal changes nothing): every name (--max-key) and value (--max-value), the count of
 * compares and ops (--max-txn-ops), their bytes together (--max-txn-bytes), a key written
 * twice in one branch (refused, as etcd does: the order of two writes to one key in one entry
 * would be an accident of the list). The reply (cmd_txn_reply): [THEN|ELSE, revision,
 * [result per op of the branch that ran]].
 * Nothing here outlives the handler: the entry is encoded before cmd_propose returns.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/cmd/cmd.h"

#define TXN_SYNTAX                                                                                 \
    "TXN [IF compare]... THEN [op]... [ELSE [op]...] [FENCE lock token] [REQ sid seq]; compare: "  \
    "REV key =|!=|<|> n, VALUE key =|!= v, EXISTS key, MISSING key, TOKEN lock =|!= n, HOLDS "     \
    "lock sid; op: PUT key value, DEL key, INCR key n"

/* What a word takes: its type, whether it compares (after IF) or writes, and its arguments
 * after the name: a relation, then a number (NUM: unsigned, SNUM: signed) or a value. */
enum { ARG_NONE, ARG_NUM, ARG_SNUM, ARG_VALUE };
static const struct txn_word {
    const char *word;
    uint8_t type;
    bool cmp, lock, rel;
    uint8_t arg;
} txn_words[] = {
    {"REV", FSM_TXN_REV, true, false, true, ARG_NUM},
    {"VALUE", FSM_TXN_VALUE, true, false, true, ARG_VALUE},
    {"EXISTS", FSM_TXN_EXISTS, true, false, false, ARG_NONE},
    {"MISSING", FSM_TXN_MISSING, true, false, false, ARG_NONE},
    {"TOKEN", FSM_TXN_TOKEN, true, true, true, ARG_NUM},
    {"HOLDS", FSM_TXN_HOLDS, true, true, false, ARG_NUM},
    {"PUT", FSM_TXN_PUT, false, false, false, ARG_VALUE},
    {"DEL", FSM_TXN_DEL, false, false, false, ARG_NONE},
    {"INCR", FSM_TXN_INCR, false, false, false, ARG_SNUM},
};
#define N_WORDS (sizeof(txn_words) / sizeof(txn_words[0]))

static const char *const rel_words[] = {"=", "!=", "<", ">"}; /* enum fsm_txn_rel */

enum part { PART_CMP, PART_THEN, PART_ELSE };

/* One entry as the walk found it, with where its name is (for the permission check's reply). */
struct txn_seen {
    struct fsm_txn_item x;
    const struct txn_word *w;
    enum part part;
    size_t name_at; /* argv index of its name */
};

typedef int (*txn_visit_fn)(void *arg, const struct txn_seen *e);

static const struct txn_word *find_word(const struct resp_arg *a, bool cmp)
{
    for (size_t k = 0; k < N_WORDS; k++)
        if (txn_words[k].cmp == cmp && resp_arg_is(a, txn_words[k].word))
            return &txn_words[k];
    return NULL;
}

/* The entry at argv[*i] (its word), into e; *i moves past it. NULL, or what is wrong (err). */
static const char *parse_entry(const struct resp_arg *argv, size_t argc, size_t *i,
                               const struct txn_word *w, struct txn_seen *e, char *err, size_t en)
{
    size_t need = 1 + (w->rel ? 1 : 0) + (w->arg != ARG_NONE ? 1 : 0);
    if (*i + need >= argc) {
        snprintf(err, en, PROTO_ERR " syntax error: %s takes %zu argument(s): " TXN_SYNTAX, w->word,
                 need);
        return err;
    }
    size_t at = *i + 1;
    memset(&e->x, 0, sizeof(e->x));
    e->w = w;
    e->x.type = w->type;
    e->name_at = at;
    e->x.name = (struct fsm_str){argv[at].p, (uint32_t)argv[at].len};
    at++;
    if (w->rel) {
        size_t k = 0;
        while (k < 4 && !resp_arg_is(&argv[at], rel_words[k]))
            k++;
        if (k == 4) {
            snprintf(err, en, PROTO_ERR " syntax error: %s takes a relation (=, !=, < or >)",
                     w->word);
            return err;
        }
        e->x.rel = (uint8_t)k;
        at++;
    }
    if (w->arg == ARG_NUM && resp_parse_u64(argv[at].p, argv[at].len, &e->x.n)) {
        snprintf(err, en, PROTO_ERR " %s takes an unsigned integer", w->word);
        return err;
    }
    if (w->arg == ARG_SNUM) {
        int64_t v;
        if (fsm_counter_parse(argv[at].p, argv[at].len, &v)) {
            snprintf(err, en, PROTO_ERR " %s takes a signed 64-bit decimal integer", w->word);
            return err;
        }
        e->x.n = (uint64_t)v; /* two's complement on the wire (ops.h) */
    }
    if (w->arg == ARG_VALUE)
        e->x.value = (struct fsm_str){argv[at].p, (uint32_t)argv[at].len};
    *i = at + (w->arg != ARG_NONE ? 1 : 0);
    return NULL;
}

/* Walk argv[1..] by the grammar, calling visit per entry (a non-zero return stops the walk and
 * is returned in *stop). NULL with *opts = where FENCE / REQ start, or what is wrong (err). */
static const char *txn_walk(const struct resp_arg *argv, size_t argc, txn_visit_fn visit, void *arg,
                            size_t *opts, int *stop, char *err, size_t en)
{
    enum part part = PART_CMP;
    size_t i = 1;
    *stop = 0;
    while (i < argc) {
        const struct resp_arg *a = &argv[i];
        const struct txn_word *w = NULL;
        struct txn_seen e;
        if (part == PART_CMP && resp_arg_is(a, "IF")) {
            if (i + 1 >= argc || !(w = find_word(&argv[i + 1], true))) {
                snprintf(err, en, PROTO_ERR " syntax error: IF takes a compare: " TXN_SYNTAX);
                return err;
            }
            i++;
        } else if (part == PART_CMP && resp_arg_is(a, "THEN")) {
            part = PART_THEN;
            i++;
            continue;
        } else if (part == PART_THEN && resp_arg_is(a, "ELSE")) {
            part = PART_ELSE;
            i++;
            continue;
        } else if (part != PART_CMP && (resp_arg_is(a, "FENCE") || resp_arg_is(a, "REQ"))) {
            break;
        } else if (part == PART_CMP || !(w = find_word(a, false))) {
            char shown[CMD_ARG_TEXT];
            snprintf(err, en, PROTO_ERR " syntax error at '%s': " TXN_SYNTAX,
                     cmd_arg_text(a, shown));
            return err;
        }
        if (parse_entry(argv, argc, &i, w, &e, err, en))
            return err;
        e.part = part;
        if (visit && (*stop = visit(arg, &e)) != 0)
            return NULL;
    }
    if (part == PART_CMP) {
        snprintf(err, en, PROTO_ERR " syntax error: TXN needs THEN: " TXN_SYNTAX);
        return err;
    }
    *opts = i;
    return NULL;
}

/* ---- the permission check (cmd_perm.c) ---- */

struct names_check {
    const struct acl_user *u;
    const char *why;
    size_t at;
};

static int check_name(void *arg, const struct txn_seen *e)
{
    struct names_check *nc = arg;
    bool ok = e->w->lock ? acl_may_lock(nc->u, e->x.name.p, e->x.name.len)
                         : acl_may_key(nc->u, e->x.name.p, e->x.name.len);
    if (ok && e->part == PART_CMP && !(nc->u->perms & ACL_READ)) {
        nc->why = "to read (a TXN compare needs read)";
        nc->at = 0;
        return 1;
    }
    if (ok)
        return 0;
    nc->why = e->w->lock ? "to access lock" : "to access key";
    nc->at = e->name_at;
    return 1;
}

const char *cmd_txn_names(const struct acl_user *u, const struct resp_arg *argv, size_t argc,
                          size_t *at)
{
    struct names_check nc = {.u = u};
    char err[512];
    size_t opts;
    int stop;
    *at = 0;
    if (txn_walk(argv, argc, check_name, &nc, &opts, &stop, err, sizeof err))
        return NULL; /* the handler refuses the syntax */
    if (stop) {
        *at = nc.at;
        return nc.why;
    }
    for (size_t i = opts; i + 1 < argc; i++) /* FENCE lock token names a lock */
        if (resp_arg_is(&argv[i], "FENCE") && !acl_may_lock(u, argv[i + 1].p, argv[i + 1].len)) {
            *at = i + 1;
            return "to access lock";
        }
    return NULL;
}

/* ---- the handler ---- */

struct build {
    struct srv_req *r;
    struct buf raw;
    uint32_t n[3];
    uint64_t bytes;
    struct fsm_str *keys[2]; /* each branch's keys so far (written twice: refused) */
    char msg[256];
};

static int add_entry(void *arg, const struct txn_seen *e)
{
    struct build *b = arg;
    const struct srv_config *cfg = &b->r->s->cfg;
    char shown[CMD_ARG_TEXT];
    uint32_t total = b->n[0] + b->n[1] + b->n[2];
    if (e->x.name.len == 0) {
        snprintf(b->msg, sizeof b->msg, PROTO_ERR " %s: a name must not be empty", e->w->word);
        return 1;
    }
    if (e->x.name.len > cfg->max_key) {
        snprintf(b->msg, sizeof b->msg, PROTO_TOOLARGE " %s name is %u bytes, the limit is %zu",
                 e->w->word, e->x.name.len, cfg->max_key);
        return 1;
    }
    if (e->x.value.len > cfg->max_value) {
        snprintf(b->msg, sizeof b->msg, PROTO_TOOLARGE " %s value is %u bytes, the limit is %zu",
                 e->w->word, e->x.value.len, cfg->max_value);
        return 1;
    }
    if (total + 1 > cfg->max_txn_ops) {
        snprintf(b->msg, sizeof b->msg,
                 PROTO_TOOLARGE " TXN of more than %llu compares and ops (--max-txn-ops)",
                 (unsigned long long)cfg->max_txn_ops);
        return 1;
    }
    b->bytes += e->x.name.len + e->x.value.len;
    if (b->bytes > cfg->max_txn_bytes) {
        snprintf(b->msg, sizeof b->msg,
                 PROTO_TOOLARGE " TXN of more than %llu bytes of names and values "
                                "(--max-txn-bytes)",
                 (unsigned long long)cfg->max_txn_bytes);
        return 1;
    }
    const char *bad = fsm_txn_item_bad(&e->x, e->part == PART_CMP);
    if (bad) {
        snprintf(b->msg, sizeof b->msg, PROTO_ERR " %s: %s", e->w->word, bad);
        return 1;
    }
    if (e->part != PART_CMP) {
        struct fsm_str *ks = b->keys[e->part - PART_THEN];
        uint32_t nk = b->n[e->part];
        for (uint32_t j = 0; j < nk; j++)
            if (ks[j].len == e->x.name.len && memcmp(ks[j].p, e->x.name.p, ks[j].len) == 0) {
                snprintf(b->msg, sizeof b->msg,
                         PROTO_ERR " key '%s' is written twice in one branch of the TXN",
                         cmd_arg_text(&b->r->argv[e->name_at], shown));
                return 1;
            }
        ks[nk] = e->x.name;
    }
    b->n[e->part]++;
    if (fsm_txn_add(&b->raw, &e->x)) {
        snprintf(b->msg, sizeof b->msg, PROTO_ERR " out of memory");
        return 1;
    }
    return 0;
}

void txnCommand(struct srv_req *r)
{
    struct fsm_cmd cmd = {.op = FSM_OP_TXN, .txn = {.cond = {.has_fence = false}}};
    struct build b = {.r = r};
    char err[512];
    size_t opts;
    int stop;
    if (cmd_need_leader(r))
        return;
    buf_init(&b.raw);
    b.keys[0] = calloc(r->argc, sizeof(struct fsm_str)); /* no more ops than arguments */
    b.keys[1] = calloc(r->argc, sizeof(struct fsm_str));
    if (!b.keys[0] || !b.keys[1]) {
        cmd_reply_err(r, PROTO_ERR " out of memory");
    } else if (txn_walk(r->argv, r->argc, add_entry, &b, &opts, &stop, err, sizeof err)) {
        cmd_reply_err(r, err);
    } else if (stop) {
        cmd_reply_err(r, b.msg);
    } else if (b.n[0] + b.n[1] + b.n[2] == 0) {
        cmd_reply_err(r, PROTO_ERR " TXN has no compare and no op: " TXN_SYNTAX);
    } else if (cmd_parse_opts(r, opts, CMD_OPT_FENCE | CMD_OPT_REQ, &cmd) == 0) {
        cmd.txn.txn = (struct fsm_txn){b.n[0], b.n[1], b.n[2], {b.raw.p, (uint32_t)b.raw.len}};
        cmd_propose(r, &cmd); /* encodes the entry before it returns: raw may go */
    }
    free(b.keys[0]);
    free(b.keys[1]);
    buf_free(&b.raw);
}

void cmd_txn_reply(struct srv_slot *slot, const struct fsm_reply *reply)
{
    resp_w_array(&slot->out, 3);
    resp_w_simple(&slot->out, (reply->value & 1) ? "THEN" : "ELSE");
    resp_w_uint(&slot->out, reply->value >> 1);
    if (!reply->txn_known) { /* a retry after a restore: the results are not kept (txn.c) */
        resp_w_nil(&slot->out, slot->proto);
        return;
    }
    resp_w_array(&slot->out, reply->txn_n);
    for (uint32_t i = 0; i < reply->txn_n; i++)
        resp_w_int(&slot->out, (int64_t)reply->txn[i]); /* revisions < 2^62, counts, values */
}
