/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fencelock txn: compares, then all of one branch's writes in one entry (TXN,
 * docs/protocol.md), from the command line or, as etcdctl txn reads it, from stdin.
 *
 * The words after the options are the command's own, after "TXN" (IF REV k = 7 THEN PUT k v
 * ELSE ...). Without words, stdin holds one compare or op per line in etcdctl's layout:
 * compares, a blank line, THEN's ops, a blank line, ELSE's ops (the words of a line are split
 * on blanks, so a value read this way has none). Both become one word list, which one parser
 * turns into libfencelock's builder (fl_txn_*), so the two forms cannot differ.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/out.h"

static const char usage_txn[] =
    "usage: fencelock txn [--fence NAME TOKEN] [IF COMPARE]... THEN [OP]... [ELSE [OP]...]\n"
    "Compares, then every op of the branch they select in one log entry, or none.\n"
    "  COMPARE: REV KEY =|!=|<|> N | VALUE KEY =|!= V | EXISTS KEY | MISSING KEY |\n"
    "           TOKEN LOCK =|!= N | HOLDS LOCK SID\n"
    "  OP:      PUT KEY VALUE | DEL KEY | INCR KEY N\n"
    "Without words, stdin: one compare per line, a blank line, THEN's ops one per line, a\n"
    "blank line, ELSE's ops (as etcdctl txn). Prints the branch and the revision, then each\n"
    "op's result (PUT: the revision, DEL: 1 or 0, INCR: the new value) one per line; --json:\n"
    "{succeeded, revision, results}. Exit 0 whichever branch ran; 1 for a stale --fence.\n"
    "  --fence NAME TOKEN  the whole TXN only if TOKEN is the current token of lock NAME\n";

/* For the completion scripts (complete.c) and --help: the words after them are the TXN's. */
enum { O_FENCE = 1 };
const struct opt_spec cli_opts_txn[] = {
    {"fence", 0, 2, O_FENCE, "NAME TOKEN"},
    {NULL, 0, 0, 0, NULL},
};

#define TXN_WORDS_MAX 512
#define TXN_LINE_MAX 65536

struct words {
    char *v[TXN_WORDS_MAX];
    int n;
    char *buf; /* stdin's bytes, the words point into it */
};

static int push(struct words *w, char *s)
{
    if (w->n >= TXN_WORDS_MAX)
        return -1;
    w->v[w->n++] = s;
    return 0;
}

/* stdin in etcdctl's layout into words (IF before each compare, THEN and ELSE between the
 * blocks). 0, or -1 with a message on stderr. */
static int read_stdin(struct words *w)
{
    size_t cap = 4096, len = 0;
    char *b = malloc(cap);
    size_t got;
    while (b && (got = fread(b + len, 1, cap - len - 1, stdin)) > 0) {
        len += got;
        if (len + 1 == cap) {
            char *nb = cap < (64u << 20) ? realloc(b, cap * 2) : NULL;
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
            cap *= 2;
        }
    }
    if (!b) {
        fprintf(stderr, "fencelock txn: stdin: too large or out of memory\n");
        return -1;
    }
    b[len] = '\0';
    w->buf = b;
    int block = 0, prev_blank = 0, then_said = 0; /* block: 0 compares, 1 THEN, 2 ELSE */
    for (char *line = b; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        char *save = NULL, *word = strtok_r(line, " \t\r", &save);
        line = nl ? nl + 1 : NULL;
        if (!word) { /* a blank line (a run of them) starts the next block */
            if (!prev_blank && block < 2)
                block++;
            prev_blank = 1;
            continue;
        }
        prev_blank = 0;
        if (block >= 1 && !then_said) {
            if (push(w, "THEN"))
                goto full;
            then_said = 1;
        }
        if (block == 2 && then_said == 1) {
            if (push(w, "ELSE"))
                goto full;
            then_said = 2;
        }
        if (block == 0 && push(w, "IF"))
            goto full;
        for (; word; word = strtok_r(NULL, " \t\r", &save))
            if (push(w, word))
                goto full;
    }
    if (!then_said && push(w, "THEN")) /* compares only, or nothing */
        goto full;
    return 0;
full:
    fprintf(stderr, "fencelock txn: more than %d words\n", TXN_WORDS_MAX);
    return -1;
}

static int rel_of(const char *s, enum fl_txn_rel *rel)
{
    static const char *const w[] = {"=", "!=", "<", ">"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, w[i]) == 0) {
            *rel = (enum fl_txn_rel)i;
            return 0;
        }
    return -1;
}

static int is(const char *a, const char *b)
{
    return strcasecmp(a, b) == 0;
}

/* The words into the builder: EXIT_OK, or EXIT_USAGE with why on stderr. */
static int build(fl_txn *t, char **v, int n)
{
    int part = 0, i = 0; /* 0 compares, 1 THEN, 2 ELSE */
    while (i < n) {
        const char *w = v[i];
        fl_err e = FL_OK;
        uint64_t u;
        int64_t by;
        enum fl_txn_rel rel;
        char *end;
        if (part == 0 && is(w, "THEN")) {
            part = 1;
            i++;
            continue;
        }
        if (part == 1 && is(w, "ELSE")) {
            part = 2;
            i++;
            continue;
        }
        if (part == 0 && is(w, "IF") && i + 1 < n) {
            const char *k = v[i + 1];
            int need = is(k, "EXISTS") || is(k, "MISSING") ? 1 : is(k, "HOLDS") ? 2 : 3;
            if (i + 1 + need >= n)
                goto bad;
            char *const *a = &v[i + 2];
            if (is(k, "REV") && !rel_of(a[1], &rel) && !cli_parse_u64(a[2], &u))
                e = fl_txn_if_rev(t, a[0], rel, u);
            else if (is(k, "VALUE") && !rel_of(a[1], &rel))
                e = fl_txn_if_value(t, a[0], rel, a[2], strlen(a[2]));
            else if (is(k, "EXISTS") || is(k, "MISSING"))
                e = fl_txn_if_exists(t, a[0], is(k, "EXISTS"));
            else if (is(k, "TOKEN") && !rel_of(a[1], &rel) && !cli_parse_u64(a[2], &u))
                e = fl_txn_if_token(t, a[0], rel, u);
            else if (is(k, "HOLDS") && !cli_parse_u64(a[1], &u))
                e = fl_txn_if_holds(t, a[0], u);
            else
                goto bad;
            i += 2 + need;
        } else if (part > 0 && is(w, "PUT") && i + 2 < n) {
            e = part == 1 ? fl_txn_then_put(t, v[i + 1], v[i + 2], strlen(v[i + 2]))
                          : fl_txn_else_put(t, v[i + 1], v[i + 2], strlen(v[i + 2]));
            i += 3;
        } else if (part > 0 && is(w, "DEL") && i + 1 < n) {
            e = part == 1 ? fl_txn_then_del(t, v[i + 1]) : fl_txn_else_del(t, v[i + 1]);
            i += 2;
        } else if (part > 0 && is(w, "INCR") && i + 2 < n) {
            by = strtoll(v[i + 2], &end, 10);
            if (!v[i + 2][0] || *end)
                goto bad;
            e = part == 1 ? fl_txn_then_incr(t, v[i + 1], by) : fl_txn_else_incr(t, v[i + 1], by);
            i += 3;
        } else {
            goto bad;
        }
        if (e == FL_ETOOLARGE) {
            fprintf(stderr, "fencelock txn: too many compares and ops for one command\n");
            return EXIT_USAGE;
        }
        if (e != FL_OK)
            goto bad;
        continue;
    bad:
        fprintf(stderr, "fencelock txn: cannot read the TXN at '%s' (word %d); see --help\n", w,
                i + 1);
        return EXIT_USAGE;
    }
    if (part == 0) {
        fprintf(stderr, "fencelock txn: THEN is missing; see --help\n");
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

static void print_result(struct cli *c, const fl_txn *t)
{
    size_t n = fl_txn_nresults(t);
    if (!c->json) {
        printf("%s %" PRIu64 "\n", fl_txn_succeeded(t) ? "THEN" : "ELSE", fl_txn_revision(t));
        for (size_t i = 0; i < n; i++)
            printf("%" PRId64 "\n", fl_txn_result(t, i));
        return;
    }
    struct jw w;
    jw_init(&w, stdout);
    jw_obj(&w);
    jw_key(&w, "succeeded");
    jw_bool(&w, fl_txn_succeeded(t));
    jw_key(&w, "revision");
    jw_u64(&w, fl_txn_revision(t));
    jw_key(&w, "results");
    if (fl_txn_results_known(t)) {
        jw_arr(&w);
        for (size_t i = 0; i < n; i++)
            jw_i64(&w, fl_txn_result(t, i));
        jw_end(&w);
    } else {
        jw_str(&w, NULL);
    }
    jw_end(&w);
}

int cli_cmd_txn(struct cli *c, int argc, char **argv)
{
    struct words w = {.n = 0};
    const char *fence = NULL;
    uint64_t token = 0;
    int i = 1;
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        cli_usage(stdout, usage_txn);
        return EXIT_OK;
    }
    if (argc > 1 && strcmp(argv[1], "--fence") == 0) {
        if (argc < 4 || cli_parse_u64(argv[3], &token)) {
            fprintf(stderr, "fencelock txn: --fence NAME TOKEN: bad or missing token\n");
            return EXIT_USAGE;
        }
        fence = argv[2];
        i = 4;
    }
    if (i < argc && strcmp(argv[i], "--") == 0)
        i++;
    if (i < argc) {
        for (; i < argc; i++)
            if (push(&w, argv[i])) {
                fprintf(stderr, "fencelock txn: more than %d words\n", TXN_WORDS_MAX);
                return EXIT_USAGE;
            }
    } else if (read_stdin(&w)) {
        free(w.buf);
        return EXIT_USAGE;
    }
    fl_txn *t = fl_txn_new();
    int rc = t ? build(t, w.v, w.n) : EXIT_ERROR;
    if (rc == EXIT_OK && fence && fl_txn_fence(t, fence, token) != FL_OK)
        rc = EXIT_USAGE;
    if (rc == EXIT_OK && !cli_client(c))
        rc = c->client_code;
    if (rc == EXIT_OK) {
        fl_err err = fl_txn_commit(c->client, NULL, t);
        if (err != FL_OK) {
            cli_fail(c, err, "txn");
            rc = cli_exit_for(err);
        } else {
            print_result(c, t);
        }
    }
    fl_txn_free(t);
    free(w.buf);
    return rc;
}
