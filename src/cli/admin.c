/* SPDX-License-Identifier: Apache-2.0 */
/* Cluster and session administration: status, members, session. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/out.h"

/* ---- status ---- */

static const char usage_status[] =
    "usage: fencelock status\n"
    "Show the node that answered (its id and role), the leader, term, commit and applied\n"
    "index, revision, and every member: id, role, client and raft address, leader mark.\n"
    "--json: {id, role, leader_id, leader, term, commit_index, applied_index, revision,\n"
    "members: [{id, role, client_address, raft_address, leader}]}.\n";

static void status_json(const struct fl_status *st)
{
    struct jw w;
    jw_init(&w, stdout);
    jw_obj(&w);
    jw_key(&w, "id");
    jw_u64(&w, st->id);
    jw_key(&w, "role");
    jw_str(&w, st->role);
    jw_key(&w, "leader_id");
    jw_u64(&w, st->leader_id);
    jw_key(&w, "leader");
    jw_str(&w, st->leader);
    jw_key(&w, "term");
    jw_u64(&w, st->term);
    jw_key(&w, "commit_index");
    jw_u64(&w, st->commit_index);
    jw_key(&w, "applied_index");
    jw_u64(&w, st->applied_index);
    jw_key(&w, "revision");
    jw_u64(&w, st->revision);
    jw_key(&w, "members");
    jw_arr(&w);
    for (size_t i = 0; i < st->n_members; i++) {
        const struct fl_member *m = &st->members[i];
        jw_obj(&w);
        jw_key(&w, "id");
        jw_u64(&w, m->id);
        jw_key(&w, "role");
        jw_str(&w, m->role);
        jw_key(&w, "client_address");
        jw_str(&w, m->client_address);
        jw_key(&w, "raft_address");
        jw_str(&w, m->raft_address);
        jw_key(&w, "leader");
        jw_bool(&w, m->leader);
        jw_end(&w);
    }
    jw_end(&w);
    jw_end(&w);
}

static const char *or_dash(const char *s)
{
    return s && *s ? s : "-";
}

static void status_text(const struct fl_status *st)
{
    printf("node:     %" PRIu64 " (", st->id);
    out_str(stdout, or_dash(st->role));
    printf(")\nleader:   %" PRIu64 " (", st->leader_id);
    out_str(stdout, or_dash(st->leader));
    fputs(")\n", stdout);
    printf("term:     %" PRIu64 "\n", st->term);
    printf("commit:   %" PRIu64 "  applied: %" PRIu64 "\n", st->commit_index, st->applied_index);
    printf("revision: %" PRIu64 "\n\n", st->revision);
    printf("%-6s %-9s %-22s %-22s %s\n", "ID", "ROLE", "CLIENT", "RAFT", "LEADER");
    for (size_t i = 0; i < st->n_members; i++) {
        const struct fl_member *m = &st->members[i];
        printf("%-6" PRIu64 " ", m->id);
        out_pad(stdout, or_dash(m->role), 9);
        putchar(' ');
        out_pad(stdout, or_dash(m->client_address), 22);
        putchar(' ');
        out_pad(stdout, or_dash(m->raft_address), 22);
        printf(" %s\n", m->leader ? "*" : "");
    }
}

int cli_cmd_status(struct cli *c, int argc, char **argv)
{
    struct sub_args a;
    int rc = sub_fixed(c, &a, argc, argv, 0, usage_status);
    if (rc != SUB_GO)
        return rc;
    struct fl_status st;
    fl_err err = fl_status(c->client, &st); /* the leader's view (a follower's may lag) */
    if (err != FL_OK) {
        cli_fail(c, err, "status");
        return cli_exit_for(err);
    }
    if (c->json)
        status_json(&st);
    else
        status_text(&st);
    fl_status_free(&st);
    return EXIT_OK;
}

/* ---- members ---- */

static const char usage_members[] =
    "usage: fencelock members list | add ID RAFT_ADDR | remove ID [--force] | transfer [ID]\n"
    "  list              every member (from the leader) and its health, asking each member\n"
    "                    itself: HEALTH is healthy (it answered and knows a leader),\n"
    "                    unhealthy (it answered, no leader known) or unreachable (with why);\n"
    "                    STATE its Raft role, APPLIED its applied index, LAG how far that is\n"
    "                    behind the leader's commit index, TOOK its answer's round trip.\n"
    "                    Exit 0 if every member is healthy, 1 if not. --json: an array of\n"
    "                    {id, role, client_address, raft_address, health, reachable, state,\n"
    "                    leader, term, applied_index, commit_index, lag, took_ms, error}\n"
    "  add ID RAFT_ADDR  add server ID and promote it to voter once it caught up (waits up to\n"
    "                    --timeout; a server that cannot be caught up is taken out again)\n"
    "  remove ID         remove server ID from the configuration; --force also when one voter\n"
    "                    would remain or the rest may not commit it (never the last voter)\n"
    "  transfer [ID]     move leadership to ID (to any other voter if omitted)\n";

enum { O_FORCE = 1 };

const struct opt_spec cli_opts_members[] = {
    {"force", 0, 0, O_FORCE, NULL},
    {NULL, 0, 0, 0, NULL},
};

/* Parse positional i as a member id (1 or more). */
static int member_id(struct sub_args *a, int i, uint64_t *id)
{
    if (cli_parse_u64(a->pos[i], id) || *id == 0)
        return sub_err(a, "bad server id '%s' (a number, 1 or more)", a->pos[i]);
    return EXIT_OK;
}

/* The number of positionals (the operation included) each operation takes: min..max. */
static int members_arity(const char *op, int *min, int *max)
{
    if (strcmp(op, "list") == 0)
        *min = *max = 1;
    else if (strcmp(op, "add") == 0)
        *min = *max = 3;
    else if (strcmp(op, "remove") == 0)
        *min = *max = 2;
    else if (strcmp(op, "transfer") == 0)
        *min = 1, *max = 2;
    else
        return -1;
    return 0;
}

/* ---- members list ---- */

/* One member's own answer to CLUSTER.INFO (fl_node_status), or why there was none. */
struct health {
    const struct fl_member *m;
    int reachable, healthy;
    struct fl_status st; /* valid when reachable */
    int64_t took_ms;
    char error[256];
};

static void ask_member(struct cli *c, struct health *h)
{
    if (!h->m->client_address[0]) {
        snprintf(h->error, sizeof h->error, "no client address announced yet");
        return;
    }
    fl_client *one = cli_client_new(c, h->m->client_address);
    if (one == NULL) {
        snprintf(h->error, sizeof h->error, "bad client address");
        return;
    }
    int64_t t0 = fl_now_ms();
    fl_err err = fl_node_status(one, &h->st);
    h->took_ms = fl_now_ms() - t0;
    if (err == FL_OK) {
        h->reachable = 1;
        h->healthy = h->st.leader_id != 0;
    } else {
        const char *why = fl_client_errmsg(one);
        snprintf(h->error, sizeof h->error, "%s%s%s", fl_strerror(err), why && *why ? ": " : "",
                 why ? why : "");
    }
    fl_client_free(one);
}

/* The leader's commit index among the answers (the member that says it leads), else the
   status's. */
static uint64_t leader_commit(const struct fl_status *st, const struct health *h, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (h[i].reachable && strcmp(h[i].st.role, "leader") == 0)
            return h[i].st.commit_index;
    return st->commit_index;
}

static const char *health_word(const struct health *h)
{
    return h->healthy ? "healthy" : h->reachable ? "unhealthy" : "unreachable";
}

static void members_json(const struct health *h, size_t n, uint64_t commit)
{
    struct jw w;
    jw_init(&w, stdout);
    jw_arr(&w);
    for (size_t i = 0; i < n; i++) {
        const struct fl_member *m = h[i].m;
        jw_obj(&w);
        jw_key(&w, "id");
        jw_u64(&w, m->id);
        jw_key(&w, "role");
        jw_str(&w, m->role);
        jw_key(&w, "client_address");
        jw_str(&w, m->client_address);
        jw_key(&w, "raft_address");
        jw_str(&w, m->raft_address);
        jw_key(&w, "health");
        jw_str(&w, health_word(&h[i]));
        jw_key(&w, "reachable");
        jw_bool(&w, h[i].reachable);
        jw_key(&w, "state");
        jw_str(&w, h[i].reachable ? h[i].st.role : NULL);
        jw_key(&w, "leader");
        jw_bool(&w, m->leader);
        jw_key(&w, "term");
        jw_u64(&w, h[i].reachable ? h[i].st.term : 0);
        jw_key(&w, "applied_index");
        jw_u64(&w, h[i].reachable ? h[i].st.applied_index : 0);
        jw_key(&w, "commit_index");
        jw_u64(&w, h[i].reachable ? h[i].st.commit_index : 0);
        jw_key(&w, "lag");
        if (h[i].reachable)
            jw_u64(&w, commit > h[i].st.applied_index ? commit - h[i].st.applied_index : 0);
        else
            jw_str(&w, NULL);
        jw_key(&w, "took_ms");
        jw_u64(&w, (uint64_t)h[i].took_ms);
        jw_key(&w, "error");
        jw_str(&w, h[i].reachable ? NULL : h[i].error);
        jw_end(&w);
    }
    jw_end(&w);
}

static void members_text(const struct health *h, size_t n, uint64_t commit)
{
    printf("%-6s %-9s %-22s %-12s %-10s %10s %8s %8s\n", "ID", "ROLE", "CLIENT", "HEALTH", "STATE",
           "APPLIED", "LAG", "TOOK");
    for (size_t i = 0; i < n; i++) {
        const struct fl_member *m = h[i].m;
        printf("%-6" PRIu64 " ", m->id);
        out_pad(stdout, or_dash(m->role), 9);
        putchar(' ');
        out_pad(stdout, or_dash(m->client_address), 22);
        printf(" %-12s ", health_word(&h[i]));
        if (!h[i].reachable) {
            printf("%-10s %10s %8s %8s  ", "-", "-", "-", "-");
            out_str(stdout, h[i].error);
            putchar('\n');
            continue;
        }
        out_pad(stdout, or_dash(h[i].st.role), 10);
        uint64_t ap = h[i].st.applied_index;
        printf(" %10" PRIu64 " %8" PRIu64 " %6" PRId64 "ms\n", ap, commit > ap ? commit - ap : 0,
               h[i].took_ms);
    }
}

static int members_list(struct cli *c)
{
    struct fl_status st;
    fl_err err = fl_status(c->client, &st);
    if (err != FL_OK) {
        cli_fail(c, err, "members list");
        return cli_exit_for(err);
    }
    struct health *h = calloc(st.n_members ? st.n_members : 1, sizeof *h);
    if (h == NULL) {
        fl_status_free(&st);
        cli_say("members list: out of memory");
        return EXIT_ERROR;
    }
    int all = 1;
    for (size_t i = 0; i < st.n_members; i++) {
        h[i].m = &st.members[i];
        ask_member(c, &h[i]);
        all &= h[i].healthy;
    }
    uint64_t commit = leader_commit(&st, h, st.n_members);
    if (c->json)
        members_json(h, st.n_members, commit);
    else
        members_text(h, st.n_members, commit);
    for (size_t i = 0; i < st.n_members; i++)
        if (h[i].reachable)
            fl_status_free(&h[i].st);
    free(h);
    fl_status_free(&st);
    return all ? EXIT_OK : EXIT_NO;
}

static int members_run(struct cli *c, struct sub_args *a, bool force)
{
    const char *op = a->pos[0];
    uint64_t id = 0;
    int min, max;
    if (members_arity(op, &min, &max))
        return sub_err(a, "unknown operation '%s' (list, add, remove or transfer)", op);
    if (a->n_pos < min || a->n_pos > max)
        return sub_usage(a);
    if (a->n_pos >= 2 && member_id(a, 1, &id) != EXIT_OK)
        return EXIT_USAGE;
    if (!cli_client(c))
        return c->client_code;
    if (strcmp(op, "list") == 0)
        return members_list(c);
    fl_err err;
    if (strcmp(op, "add") == 0)
        err = fl_member_add(c->client, id, a->pos[2]);
    else if (strcmp(op, "remove") == 0)
        err = force ? fl_member_remove_force(c->client, id) : fl_member_remove(c->client, id);
    else
        err = fl_member_transfer(c->client, id);
    char what[64];
    snprintf(what, sizeof what, "members %s", op);
    if (err != FL_OK) {
        cli_fail(c, err, what);
        return cli_exit_for(err);
    }
    if (c->json) {
        struct jw w;
        jw_init(&w, stdout);
        jw_obj(&w);
        jw_key(&w, "ok");
        jw_bool(&w, 1);
        jw_end(&w);
    } else {
        printf("OK\n");
    }
    return EXIT_OK;
}

int cli_cmd_members(struct cli *c, int argc, char **argv)
{
    struct sub_args a;
    int id, r;
    bool force = false;
    sub_start(&a, argc, argv, 3, usage_members);
    while ((r = sub_next(c, &a, cli_opts_members, &id)) == SUB_OPT)
        force |= id == O_FORCE;
    if (r == SUB_STOP)
        return a.code;
    if (a.n_pos < 1 || (force && strcmp(a.pos[0], "remove") != 0))
        return sub_usage(&a);
    return members_run(c, &a, force);
}

/* ---- session ---- */

static const char usage_session[] =
    "usage: fencelock session list [--limit N] | fencelock session info SID\n"
    "       fencelock session open [--ttl DUR] [--lock-delay DUR] [--name LABEL]\n"
    "       fencelock session keepalive SID | fencelock session close SID\n"
    "       fencelock session revoke SID\n"
    "`list` shows the live sessions in id order (yours; every user's to an admin): id, TTL,\n"
    "lease left, locks held, waits, leased keys, owner and name; --limit N looks at N at most\n"
    "(default: the server's maximum). `info` shows one (exit 1 if it is unknown or ended).\n"
    "--json: {sid, ttl_ms, lockdelay_ms, remaining_ms, locks, waits, keys, owner, name}, an\n"
    "array of them for `list`.\n"
    "Sessions for scripts: `open` prints the id of a new session (default --ttl 60s), kept\n"
    "alive by nothing but `keepalive` (prints the renewed TTL in ms); `close` ends it and\n"
    "releases its locks at once; `revoke` (admin) ends any user's session as an expiry does\n"
    "(lock-delay applies). keepalive/close/revoke of an unknown or expired session exit 1.\n";

enum { O_TTL = 1, O_LOCKDELAY, O_NAME, O_LIMIT };

const struct opt_spec cli_opts_session[] = {
    {"ttl", 0, 1, O_TTL, "DUR"},     {"lock-delay", 0, 1, O_LOCKDELAY, "DUR"},
    {"name", 0, 1, O_NAME, "LABEL"}, {"limit", 0, 1, O_LIMIT, "N"},
    {NULL, 0, 0, 0, NULL},
};

struct session_args {
    uint64_t ttl_ms, lockdelay_ms;
    const char *name;
    size_t limit; /* list --limit; 0: none given */
};

static int session_opt(int id, struct opt_iter *it, struct session_args *s)
{
    if (id == O_LIMIT)
        return parse_limit(it, it->v[0], &s->limit);
    if (id == O_NAME) {
        s->name = it->v[0];
        return EXIT_OK;
    }
    if (id == O_TTL)
        return parse_ttl(it, "ttl", it->v[0], &s->ttl_ms);
    if (parse_duration(it->v[0], &s->lockdelay_ms))
        return opt_err(it,
                       "--lock-delay: bad duration '%s' (e.g. 5s, 500ms; a bare number is "
                       "seconds)",
                       it->v[0]);
    return EXIT_OK;
}

/* One number, human or {key: n}. */
static void print_number(struct cli *c, const char *key, uint64_t v)
{
    if (!c->json) {
        printf("%" PRIu64 "\n", v);
        return;
    }
    struct jw w;
    jw_init(&w, stdout);
    jw_obj(&w);
    jw_key(&w, key);
    jw_u64(&w, v);
    jw_end(&w);
}

static void session_json(struct jw *w, const struct fl_session_info *s)
{
    jw_obj(w);
    jw_key(w, "sid");
    jw_u64(w, s->sid);
    jw_key(w, "ttl_ms");
    jw_u64(w, s->ttl_ms);
    jw_key(w, "lockdelay_ms");
    jw_u64(w, s->lockdelay_ms);
    jw_key(w, "remaining_ms");
    jw_u64(w, s->remaining_ms);
    jw_key(w, "locks");
    jw_u64(w, s->n_locks);
    jw_key(w, "waits");
    jw_u64(w, s->n_waits);
    jw_key(w, "keys");
    jw_u64(w, s->n_keys);
    jw_key(w, "owner");
    jw_str(w, s->owner);
    jw_key(w, "name");
    jw_str(w, s->name);
    jw_end(w);
}

static int session_list(struct cli *c, size_t limit)
{
    struct fl_session_list l;
    fl_err err = fl_sessions(c->client, 0, limit, &l);
    if (err != FL_OK) {
        cli_fail(c, err, "session list");
        return cli_exit_for(err);
    }
    struct jw w;
    jw_init(&w, stdout);
    if (c->json)
        jw_arr(&w);
    else
        printf("%-20s %10s %10s %6s %6s %6s %-12s %s\n", "SID", "TTL", "LEFT", "LOCKS", "WAITS",
               "KEYS", "OWNER", "NAME");
    for (size_t i = 0; i < l.n; i++) {
        const struct fl_session_info *s = &l.v[i];
        if (c->json) {
            session_json(&w, s);
            continue;
        }
        printf("%-20" PRIu64 " %8" PRIu64 "ms %8" PRIu64 "ms %6zu %6zu %6zu ", s->sid, s->ttl_ms,
               s->remaining_ms, s->n_locks, s->n_waits, s->n_keys);
        out_pad(stdout, or_dash(s->owner), 12);
        putchar(' ');
        out_str(stdout, or_dash(s->name));
        putchar('\n');
    }
    if (c->json)
        jw_end(&w);
    fl_session_list_free(&l);
    return EXIT_OK;
}

static int session_info(struct cli *c, uint64_t sid)
{
    struct fl_session_info s;
    fl_err err = fl_session_info(c->client, sid, &s);
    if (err != FL_OK) {
        cli_fail(c, err, "session info");
        return cli_exit_for(err);
    }
    if (c->json) {
        struct jw w;
        jw_init(&w, stdout);
        session_json(&w, &s);
    } else {
        printf("sid:        %" PRIu64 "\nttl:        %" PRIu64 "ms\nlock-delay: %" PRIu64
               "ms\nleft:       %" PRIu64 "ms\nlocks:      %zu\nwaits:      %zu\nkeys:       "
               "%zu\nowner:      ",
               s.sid, s.ttl_ms, s.lockdelay_ms, s.remaining_ms, s.n_locks, s.n_waits, s.n_keys);
        out_str(stdout, or_dash(s.owner));
        fputs("\nname:       ", stdout);
        out_str(stdout, or_dash(s.name));
        putchar('\n');
    }
    fl_session_info_free(&s);
    return EXIT_OK;
}

static int session_run(struct cli *c, struct sub_args *a, const struct session_args *s)
{
    const char *op = a->pos[0];
    int is_open = strcmp(op, "open") == 0, is_list = strcmp(op, "list") == 0;
    uint64_t sid = 0, ttl = 0;
    if (!is_open && !is_list && strcmp(op, "keepalive") != 0 && strcmp(op, "close") != 0 &&
        strcmp(op, "revoke") != 0 && strcmp(op, "info") != 0)
        return sub_err(a, "unknown operation '%s' (list, info, open, keepalive, close or revoke)",
                       op);
    if (s->limit && !is_list)
        return sub_err(a, "--limit is for session list");
    if (is_open || is_list ? a->n_pos != 1 : a->n_pos != 2)
        return sub_usage(a);
    if (is_list)
        return cli_client(c) ? session_list(c, s->limit) : c->client_code;
    if (!is_open && (cli_parse_u64(a->pos[1], &sid) || sid == 0))
        return sub_err(a, "%s: bad session id '%s' (a number from 'session open')", op, a->pos[1]);
    if (!cli_client(c))
        return c->client_code;
    if (strcmp(op, "info") == 0)
        return session_info(c, sid);
    fl_err err;
    if (is_open)
        err = fl_session_grant(c->client, s->ttl_ms, s->lockdelay_ms, s->name, &sid);
    else if (strcmp(op, "keepalive") == 0)
        err = fl_session_keepalive_id(c->client, sid, &ttl);
    else if (strcmp(op, "revoke") == 0)
        err = fl_session_revoke_id(c->client, sid);
    else
        err = fl_session_close_id(c->client, sid);
    char what[64];
    snprintf(what, sizeof what, "session %s", op);
    if (err != FL_OK) {
        cli_fail(c, err, what);
        return cli_exit_for(err);
    }
    if (is_open)
        print_number(c, "session", sid);
    else if (strcmp(op, "keepalive") == 0)
        print_number(c, "ttl_ms", ttl);
    else if (c->json)
        print_number(c, strcmp(op, "revoke") == 0 ? "revoked" : "closed", sid);
    else
        printf("OK\n");
    return EXIT_OK;
}

#define SESSION_DEFAULT_TTL_MS 60000 /* `session open` without --ttl */

int cli_cmd_session(struct cli *c, int argc, char **argv)
{
    struct sub_args a;
    struct session_args s = {SESSION_DEFAULT_TTL_MS, 0, NULL, 0};
    int id, r;
    sub_start(&a, argc, argv, 2, usage_session);
    while ((r = sub_next(c, &a, cli_opts_session, &id)) == SUB_OPT)
        if (session_opt(id, &a.it, &s) != EXIT_OK)
            return sub_usage(&a);
    if (r == SUB_STOP)
        return a.code;
    if (a.n_pos < 1)
        return sub_usage(&a);
    return session_run(c, &a, &s);
}

/* ---- snapshot ---- */

static const char usage_snapshot[] =
    "usage: fencelock snapshot save FILE\n"
    "An online, consistent backup of the whole state (sessions, locks, semaphores, elections,\n"
    "keys, the revision counter) from the leader (admin permission), written to FILE with the\n"
    "leader's SHA-256 checked. `fencelockd --restore FILE --data-dir DIR` makes a new cluster\n"
    "from it; its tokens keep rising above every token handed out before the save.\n";

static const struct opt_spec snapshot_opts[] = {
    {NULL, 0, 0, 0, NULL},
};

int cli_cmd_snapshot(struct cli *c, int argc, char **argv)
{
    struct sub_args a;
    int id, r;
    sub_start(&a, argc, argv, 2, usage_snapshot);
    while ((r = sub_next(c, &a, snapshot_opts, &id)) == SUB_OPT)
        ;
    if (r == SUB_STOP)
        return a.code;
    if (a.n_pos != 2 || strcmp(a.pos[0], "save") != 0)
        return sub_usage(&a);
    if (!cli_client(c))
        return c->client_code;
    struct fl_snapshot_info info;
    fl_err err = fl_snapshot_save(c->client, a.pos[1], &info);
    if (err != FL_OK) {
        cli_fail(c, err, "snapshot save");
        return cli_exit_for(err);
    }
    if (c->json) {
        struct jw w;
        jw_init(&w, stdout);
        jw_obj(&w);
        jw_key(&w, "file");
        jw_str(&w, a.pos[1]);
        jw_key(&w, "revision");
        jw_u64(&w, info.revision);
        jw_key(&w, "size");
        jw_u64(&w, info.size);
        jw_key(&w, "sha256");
        jw_str(&w, info.sha256);
        jw_end(&w);
    } else {
        printf("saved %s: revision %" PRIu64 ", %" PRIu64 " bytes, sha256 %s\n", a.pos[1],
               info.revision, info.size, info.sha256);
    }
    return EXIT_OK;
}
