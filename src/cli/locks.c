/* SPDX-License-Identifier: Apache-2.0 */
/* Inspecting locks: lock-info, locks, fence-check. */
#include <inttypes.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/out.h"

/* ---- lock-info ---- */

static const char usage_lock_info[] =
    "usage: fencelock lock-info NAME\n"
    "Show lock NAME: its mode (exclusive, shared or none), holder session, token, when it\n"
    "was granted (the leader's clock), lock-delay, the holders (every reader of a shared\n"
    "lock, with its token) and the sessions waiting in queue order. A free lock nobody\n"
    "waits for is shown as free (exit 0). --json: {name, holder, token, held_since_ms,\n"
    "lockdelay, waiters, mode, holders: [{sid, token}]} with holder 0 when nobody holds\n"
    "it exclusively, and count when a reentrant holder holds it more than once (its\n"
    "LOCKs not yet UNLOCKed); value, max_hold_ms, transitions: the grant's `lock --value`,\n"
    "its `--max-hold`, and how many exclusive grants of the lock ended since a request with\n"
    "a value or a max hold reached it (while it kept waiters or lock-delay).\n";

static void lock_info_json(const char *name, const struct fl_lock_info *li, uint64_t count,
                           const struct fl_lock_meta *lm)
{
    struct jw w;
    jw_init(&w, stdout);
    jw_obj(&w);
    jw_key(&w, "name");
    jw_str(&w, name);
    jw_key(&w, "holder");
    jw_u64(&w, li->holder);
    jw_key(&w, "token");
    jw_u64(&w, li->token);
    jw_key(&w, "held_since_ms");
    jw_u64(&w, li->held_since_ms);
    jw_key(&w, "lockdelay");
    jw_bool(&w, li->lockdelay);
    jw_key(&w, "waiters");
    jw_arr(&w);
    for (size_t i = 0; i < li->n_waiters; i++)
        jw_u64(&w, li->waiters[i]);
    jw_end(&w);
    jw_key(&w, "mode");
    jw_str(&w, li->mode[0] ? li->mode : "none");
    jw_key(&w, "holders");
    jw_arr(&w);
    for (size_t i = 0; i < li->n_holders; i++) {
        jw_obj(&w);
        jw_key(&w, "sid");
        jw_u64(&w, li->holders[i].sid);
        jw_key(&w, "token");
        jw_u64(&w, li->holders[i].token);
        jw_end(&w);
    }
    jw_end(&w);
    jw_key(&w, "value");
    jw_str(&w, lm->value ? lm->value : "");
    jw_key(&w, "max_hold_ms");
    jw_u64(&w, lm->maxhold_ms);
    jw_key(&w, "transitions");
    jw_u64(&w, lm->transitions);
    if (count > 1) {
        jw_key(&w, "count");
        jw_u64(&w, count);
    }
    jw_end(&w);
}

static void lock_info_text(const char *name, const struct fl_lock_info *li, uint64_t count,
                           const struct fl_lock_meta *lm)
{
    char when[64];
    fputs("name:       ", stdout);
    out_str(stdout, name);
    fputs("\nmode:       ", stdout);
    out_str(stdout, li->mode[0] ? li->mode : "none");
    putchar('\n');
    if (strcmp(li->mode, "shared") == 0) {
        printf("holders:    %zu", li->n_holders);
        for (size_t i = 0; i < li->n_holders; i++)
            printf("%s%" PRIu64 " (token %" PRIu64 ")", i ? ", " : " (", li->holders[i].sid,
                   li->holders[i].token);
        printf("%s\n", li->n_holders ? ")" : "");
    } else if (li->holder) {
        fmt_wallclock(when, sizeof when, li->held_since_ms);
        printf("holder:     %" PRIu64 "\n", li->holder);
        printf("token:      %" PRIu64 "\n", li->token);
        printf("held since: %s\n", when);
        if (count > 1) /* a reentrant holder's holds */
            printf("count:      %" PRIu64 "\n", count);
    } else {
        printf("holder:     none\n");
    }
    printf("lock-delay: %s\n", li->lockdelay ? "yes" : "no");
    printf("waiters:    %zu", li->n_waiters);
    for (size_t i = 0; i < li->n_waiters; i++)
        printf("%s%" PRIu64, i ? " " : " (", li->waiters[i]);
    printf("%s\n", li->n_waiters ? ")" : "");
    if (lm->value_len) {
        fputs("value:      ", stdout);
        out_str(stdout, lm->value);
        putchar('\n');
    }
    if (lm->maxhold_ms)
        printf("max hold:   %" PRIu64 " ms\n", lm->maxhold_ms);
    printf("transitions: %" PRIu64 "\n", lm->transitions);
}

int cli_cmd_lock_info(struct cli *c, int argc, char **argv)
{
    struct sub_args a;
    int rc = sub_fixed(c, &a, argc, argv, 1, usage_lock_info);
    if (rc != SUB_GO)
        return rc;
    struct fl_lock_info li;
    fl_err err = fl_lock_info(c->client, a.pos[0], &li);
    if (err == FL_ENOTFOUND) {
        memset(&li, 0, sizeof li); /* free and nobody waits: an answer, not an error */
    } else if (err != FL_OK) {
        cli_fail(c, err, "lock-info");
        return cli_exit_for(err);
    }
    /* The hold count (a reentrant holder's), read in a second call: shown only if the holder
     * is still the one fl_lock_info saw. */
    uint64_t holder = 0, count = 0;
    if (err == FL_OK && li.holder &&
        (fl_lock_count(c->client, a.pos[0], &holder, &count) != FL_OK || holder != li.holder))
        count = 0;
    struct fl_lock_meta lm = {0};
    if (err == FL_OK && fl_lock_meta(c->client, a.pos[0], &lm) != FL_OK)
        memset(&lm, 0, sizeof lm); /* freed since: shown without its metadata */
    if (c->json)
        lock_info_json(a.pos[0], &li, count, &lm);
    else
        lock_info_text(a.pos[0], &li, count, &lm);
    fl_lock_meta_free(&lm);
    if (err == FL_OK)
        fl_lock_info_free(&li);
    return EXIT_OK;
}

/* ---- locks ---- */

static const char usage_locks[] =
    "usage: fencelock locks [PREFIX] [--limit N]\n"
    "List the existing locks (held, in lock-delay, or waited for) whose names start with\n"
    "PREFIX, in name order: holder session, token, queue length. --json: an array of\n"
    "{name, holder, token, lockdelay, waiters}.\n";

static void locks_print(struct cli *c, const struct fl_lock_list *l)
{
    struct jw w;
    jw_init(&w, stdout);
    if (c->json)
        jw_arr(&w);
    else
        printf("%-24s %20s %20s %7s %s\n", "NAME", "HOLDER", "TOKEN", "WAITERS", "DELAY");
    for (size_t i = 0; i < l->n; i++) {
        const struct fl_lock_entry *e = &l->v[i];
        if (!c->json) {
            out_pad(stdout, e->name, 24);
            printf(" %20" PRIu64 " %20" PRIu64 " %7zu %s\n", e->holder, e->token, e->n_waiters,
                   e->lockdelay ? "yes" : "no");
            continue;
        }
        jw_obj(&w);
        jw_key(&w, "name");
        jw_str(&w, e->name);
        jw_key(&w, "holder");
        jw_u64(&w, e->holder);
        jw_key(&w, "token");
        jw_u64(&w, e->token);
        jw_key(&w, "lockdelay");
        jw_bool(&w, e->lockdelay);
        jw_key(&w, "waiters");
        jw_u64(&w, e->n_waiters);
        jw_end(&w);
    }
    if (c->json)
        jw_end(&w);
}

int cli_cmd_locks(struct cli *c, int argc, char **argv)
{
    const char *prefix;
    size_t limit;
    int rc = sub_prefix_limit(c, argc, argv, usage_locks, &prefix, &limit);
    if (rc != SUB_GO)
        return rc;
    struct fl_lock_list l;
    fl_err err = fl_locks(c->client, prefix, limit, &l);
    if (err != FL_OK) {
        cli_fail(c, err, "locks");
        return cli_exit_for(err);
    }
    locks_print(c, &l);
    fl_lock_list_free(&l);
    return EXIT_OK;
}

/* ---- fence-check ---- */

/* `NAME TOKEN` (fence-check, sign) and the client: SUB_GO, else the exit code. */
static int name_token_args(struct cli *c, struct sub_args *a, int argc, char **argv,
                           const char *usage, uint64_t *token)
{
    int rc = sub_fixed(c, a, argc, argv, 2, usage);
    if (rc != SUB_GO)
        return rc;
    if (cli_parse_u64(a->pos[1], token))
        return sub_err(a, "bad token '%s' (a number)", a->pos[1]);
    return SUB_GO;
}

/* A JSON answer's opening: {"name": ..., "token": ...; the caller adds its fields and ends. */
static void jw_name_token(struct jw *w, const char *name, uint64_t token)
{
    jw_init(w, stdout);
    jw_obj(w);
    jw_key(w, "name");
    jw_str(w, name);
    jw_key(w, "token");
    jw_u64(w, token);
}

static const char usage_fence_check[] =
    "usage: fencelock fence-check NAME TOKEN\n"
    "Exit 0 (printing \"current\") if TOKEN is the current holder's token of lock NAME,\n"
    "exit 1 (printing \"stale\") if it is not.\n";

int cli_cmd_fence_check(struct cli *c, int argc, char **argv)
{
    struct sub_args a;
    uint64_t token;
    int rc = name_token_args(c, &a, argc, argv, usage_fence_check, &token);
    if (rc != SUB_GO)
        return rc;
    fl_err err = fl_fence_check(c->client, a.pos[0], token);
    if (err != FL_OK && err != FL_ESTALE) {
        cli_fail(c, err, "fence-check");
        return cli_exit_for(err);
    }
    if (c->json) {
        struct jw w;
        jw_name_token(&w, a.pos[0], token);
        jw_key(&w, "current");
        jw_bool(&w, err == FL_OK);
        jw_end(&w);
    } else {
        printf("%s\n", err == FL_OK ? "current" : "stale");
    }
    return err == FL_OK ? EXIT_OK : EXIT_NO;
}

/* ---- sign ---- */

static const char usage_sign[] =
    "usage: fencelock sign NAME TOKEN\n"
    "Print the signature of TOKEN for lock NAME (FENCE.SIGN; the servers need --token-key),\n"
    "exit 1 (printing \"stale\") if TOKEN is not a current holder's token.\n";

int cli_cmd_sign(struct cli *c, int argc, char **argv)
{
    struct sub_args a;
    uint64_t token;
    char sig[65];
    int rc = name_token_args(c, &a, argc, argv, usage_sign, &token);
    if (rc != SUB_GO)
        return rc;
    fl_err err = fl_sign(c->client, a.pos[0], token, sig);
    if (err != FL_OK && err != FL_ESTALE) {
        cli_fail(c, err, "sign");
        return cli_exit_for(err);
    }
    if (c->json) {
        struct jw w;
        jw_name_token(&w, a.pos[0], token);
        jw_key(&w, "sig");
        jw_str(&w, err == FL_OK ? sig : NULL);
        jw_end(&w);
    } else {
        printf("%s\n", err == FL_OK ? sig : "stale");
    }
    return err == FL_OK ? EXIT_OK : EXIT_NO;
}
