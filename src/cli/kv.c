/* SPDX-License-Identifier: Apache-2.0 */
/* The key-value subcommands: get, put, del, keys. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/out.h"

enum { O_FENCE = 1, O_IFREV, O_LEASE, O_BY };

/* Parse --fence NAME TOKEN / --ifrev REV / --lease SID into w. EXIT_OK or EXIT_USAGE. */
static int write_opt(int id, struct opt_iter *it, struct fl_write_opts *w)
{
    switch (id) {
    case O_FENCE:
        if (cli_parse_u64(it->v[1], &w->fence_token))
            return opt_err(it, "--fence NAME TOKEN: bad token '%s'", it->v[1]);
        w->fence_name = it->v[0];
        return EXIT_OK;
    case O_IFREV:
        if (cli_parse_u64(it->v[0], &w->ifrev))
            return opt_err(it, "--ifrev: bad revision '%s'", it->v[0]);
        w->use_ifrev = 1;
        return EXIT_OK;
    case O_LEASE:
        if (cli_parse_u64(it->v[0], &w->lease_sid) || w->lease_sid == 0)
            return opt_err(it, "--lease: bad session id '%s'", it->v[0]);
        return EXIT_OK;
    }
    return EXIT_USAGE;
}

/* ---- get ---- */

static const char usage_get[] =
    "usage: fencelock get KEY\n"
    "       fencelock get --prefix [PREFIX] [--limit N]\n"
    "Print the value of KEY (exit 1 if it does not exist). With --json: {key, value (or\n"
    "value_base64 if not UTF-8), create_rev, mod_rev, version, lease}.\n"
    "--prefix: every key that starts with PREFIX (all if none), in byte order, each as two\n"
    "lines, the key and then its value (as etcdctl get --prefix does; --json: an array of the\n"
    "objects above). --limit N: at most N keys (default: the server's maximum). Each value is\n"
    "read on its own (a linearizable read each, not one snapshot): a key deleted meanwhile is\n"
    "left out; compare mod_rev (--json) to tell values written in between.\n";

enum { O_PREFIX = 1, O_LIMIT };

const struct opt_spec cli_opts_get[] = {
    {"prefix", 0, 0, O_PREFIX, NULL},
    {"limit", 0, 1, O_LIMIT, "N"},
    {NULL, 0, 0, 0, NULL},
};

/* A value on stdout: exact bytes into a pipe or file (a value may be binary), escaped for a
   terminal. */
static void print_value(const struct fl_kv *kv)
{
    if (isatty(STDOUT_FILENO))
        out_esc(stdout, kv->value, kv->len, 0);
    else
        fwrite(kv->value, 1, kv->len, stdout);
    fputc('\n', stdout);
}

static void kv_json(struct jw *w, const char *key, const struct fl_kv *kv)
{
    jw_obj(w);
    jw_key(w, "key");
    jw_str(w, key);
    jw_bytes(w, "value", kv->value, kv->len);
    jw_key(w, "create_rev");
    jw_u64(w, kv->create_rev);
    jw_key(w, "mod_rev");
    jw_u64(w, kv->mod_rev);
    jw_key(w, "version");
    jw_u64(w, kv->version);
    jw_key(w, "lease");
    jw_u64(w, kv->lease);
    jw_end(w);
}

/* get --prefix: the names (KEYS), then each value (KV.GET). */
static int get_prefix(struct cli *c, const char *prefix, size_t limit)
{
    struct fl_strlist l;
    fl_err err = fl_keys(c->client, prefix, limit, &l);
    if (err != FL_OK) {
        cli_fail(c, err, "get --prefix");
        return cli_exit_for(err);
    }
    struct jw w;
    jw_init(&w, stdout);
    if (c->json)
        jw_arr(&w);
    int rc = EXIT_OK;
    for (size_t i = 0; i < l.n && rc == EXIT_OK; i++) {
        struct fl_kv kv;
        err = fl_get(c->client, l.v[i], &kv);
        if (err == FL_ENOTFOUND) /* deleted since KEYS listed it */
            continue;
        if (err != FL_OK) {
            cli_fail(c, err, "get --prefix");
            rc = cli_exit_for(err);
            break;
        }
        if (c->json) {
            kv_json(&w, l.v[i], &kv);
        } else {
            out_str(stdout, l.v[i]);
            fputc('\n', stdout);
            print_value(&kv);
        }
        fl_kv_free(&kv);
    }
    if (c->json && rc == EXIT_OK)
        jw_end(&w);
    fl_strlist_free(&l);
    return rc;
}

int cli_cmd_get(struct cli *c, int argc, char **argv)
{
    struct sub_args a;
    int id, r, prefix = 0;
    size_t limit = 0;
    sub_start(&a, argc, argv, 1, usage_get);
    while ((r = sub_next(c, &a, cli_opts_get, &id)) == SUB_OPT) {
        if (id == O_PREFIX)
            prefix = 1;
        else if (parse_limit(&a.it, a.it.v[0], &limit) != EXIT_OK)
            return sub_usage(&a);
    }
    if (r == SUB_STOP)
        return a.code;
    if (!prefix && (a.n_pos != 1 || limit))
        return a.n_pos == 1 ? sub_err(&a, "--limit is for get --prefix") : sub_usage(&a);
    if (!cli_client(c))
        return c->client_code;
    if (prefix)
        return get_prefix(c, a.n_pos ? a.pos[0] : "", limit);
    struct fl_kv kv;
    fl_err err = fl_get(c->client, a.pos[0], &kv);
    if (err != FL_OK) {
        if (err == FL_ENOTFOUND)
            cli_say("get %s: not found", a.pos[0]);
        else
            cli_fail(c, err, "get");
        return cli_exit_for(err);
    }
    if (c->json) {
        struct jw w;
        jw_init(&w, stdout);
        kv_json(&w, a.pos[0], &kv);
    } else {
        print_value(&kv);
    }
    fl_kv_free(&kv);
    return EXIT_OK;
}

/* ---- put ---- */

static const char usage_put[] =
    "usage: fencelock put KEY [VALUE] [--fence NAME TOKEN] [--ifrev REV] [--lease SID]\n"
    "Write KEY; VALUE omitted or '-' reads it from stdin. Prints the new revision.\n"
    "  --fence NAME TOKEN  only if TOKEN is the current token of lock NAME (else exit 1)\n"
    "  --ifrev REV         only if the key's mod_rev is REV, 0: only if absent (else exit 1)\n"
    "  --lease SID         delete the key when session SID ends\n";

const struct opt_spec cli_opts_put[] = {
    {"fence", 0, 2, O_FENCE, "NAME TOKEN"},
    {"ifrev", 0, 1, O_IFREV, "REV"},
    {"lease", 0, 1, O_LEASE, "SID"},
    {NULL, 0, 0, 0, NULL},
};

#define STDIN_CHUNK 4096 /* the first read buffer; it doubles as needed */

/* All of stdin into a malloc'ed buffer (caller frees); NULL on a read error. */
static char *read_stdin(size_t *len)
{
    size_t cap = STDIN_CHUNK, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, stdin);
        n += got;
        if (got == 0)
            break;
        if (n == cap) {
            char *nb = realloc(buf, cap * 2);
            if (nb == NULL)
                free(buf);
            buf = nb;
            cap *= 2;
        }
    }
    if (buf && ferror(stdin)) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

/* What a conditional write's refusal means, for the message. */
static void fail_write(struct cli *c, fl_err err, const char *op, const char *key)
{
    char what[128];
    snprintf(what, sizeof what, "%s %s", op, key);
    cli_fail(c, err, what);
}

static void print_rev(struct cli *c, const char *key, uint64_t rev)
{
    if (!c->json) {
        printf("%" PRIu64 "\n", rev);
        return;
    }
    struct jw w;
    jw_init(&w, stdout);
    jw_obj(&w);
    jw_key(&w, "key");
    jw_str(&w, key);
    jw_key(&w, "revision");
    jw_u64(&w, rev);
    jw_end(&w);
}

int cli_cmd_put(struct cli *c, int argc, char **argv)
{
    struct sub_args a;
    struct fl_write_opts wo = {0};
    int id, r;
    sub_start(&a, argc, argv, 2, usage_put);
    while ((r = sub_next(c, &a, cli_opts_put, &id)) == SUB_OPT)
        if (write_opt(id, &a.it, &wo) != EXIT_OK)
            return sub_usage(&a);
    if (r == SUB_STOP)
        return a.code;
    if (a.n_pos < 1)
        return sub_usage(&a);
    wo.lease = wo.lease_sid != 0;

    char *in = NULL;
    const char *val = a.n_pos == 2 ? a.pos[1] : "-";
    size_t len = strlen(val);
    if (strcmp(val, "-") == 0) {
        in = read_stdin(&len);
        if (in == NULL) {
            cli_say("put: reading the value from stdin failed");
            return EXIT_ERROR;
        }
        val = in;
    }
    uint64_t rev = 0;
    fl_err err = FL_EUNAVAILABLE;
    if (cli_client(c))
        err = fl_put(c->client, NULL, a.pos[0], val, len, &wo, &rev);
    free(in);
    if (c->client == NULL)
        return c->client_code;
    if (err != FL_OK) {
        fail_write(c, err, "put", a.pos[0]);
        return cli_exit_for(err);
    }
    print_rev(c, a.pos[0], rev);
    return EXIT_OK;
}

/* ---- del ---- */

static const char usage_del[] =
    "usage: fencelock del KEY [--fence NAME TOKEN] [--ifrev REV]\n"
    "Delete KEY; prints 1 if it existed, 0 if not (exit 0 either way).\n"
    "  --fence NAME TOKEN  only if TOKEN is the current token of lock NAME (else exit 1)\n"
    "  --ifrev REV         only if the key's mod_rev is REV (else exit 1)\n";

const struct opt_spec cli_opts_del[] = {
    {"fence", 0, 2, O_FENCE, "NAME TOKEN"},
    {"ifrev", 0, 1, O_IFREV, "REV"},
    {NULL, 0, 0, 0, NULL},
};

int cli_cmd_del(struct cli *c, int argc, char **argv)
{
    struct sub_args a;
    struct fl_write_opts wo = {0};
    int id, r;
    sub_start(&a, argc, argv, 1, usage_del);
    while ((r = sub_next(c, &a, cli_opts_del, &id)) == SUB_OPT)
        if (write_opt(id, &a.it, &wo) != EXIT_OK)
            return sub_usage(&a);
    if (r == SUB_STOP)
        return a.code;
    if (a.n_pos != 1)
        return sub_usage(&a);
    if (!cli_client(c))
        return c->client_code;
    int deleted = 0;
    fl_err err = fl_del(c->client, NULL, a.pos[0], &wo, &deleted);
    if (err != FL_OK) {
        fail_write(c, err, "del", a.pos[0]);
        return cli_exit_for(err);
    }
    if (c->json) {
        struct jw w;
        jw_init(&w, stdout);
        jw_obj(&w);
        jw_key(&w, "key");
        jw_str(&w, a.pos[0]);
        jw_key(&w, "deleted");
        jw_bool(&w, deleted);
        jw_end(&w);
    } else {
        printf("%d\n", deleted ? 1 : 0);
    }
    return EXIT_OK;
}

/* ---- incr ---- */

static const char usage_incr[] =
    "usage: fencelock incr KEY [--by N] [--fence NAME TOKEN] [--ifrev REV]\n"
    "Add 1 (or N, a signed 64-bit integer) to KEY's value, the decimal text of a signed 64-bit\n"
    "integer (an absent key counts as 0), and print the new value (--json: {key, value}).\n"
    "A value that is not such an integer, or a sum that overflows, changes nothing (exit 4).\n"
    "  --by N              the step (default 1)\n"
    "  --fence NAME TOKEN  only if TOKEN is the current token of lock NAME (else exit 1)\n"
    "  --ifrev REV         only if the key's mod_rev is REV (else exit 1)\n";

const struct opt_spec cli_opts_incr[] = {
    {"by", 0, 1, O_BY, "N"},
    {"fence", 0, 2, O_FENCE, "NAME TOKEN"},
    {"ifrev", 0, 1, O_IFREV, "REV"},
    {NULL, 0, 0, 0, NULL},
};

/* A signed 64-bit decimal, the whole string. 0 or -1. */
static int parse_i64(const char *s, int64_t *v)
{
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (!*s || *end || errno)
        return -1;
    *v = (int64_t)x;
    return 0;
}

int cli_cmd_incr(struct cli *c, int argc, char **argv)
{
    struct sub_args a;
    struct fl_write_opts wo = {0};
    int64_t by = 1, value = 0;
    int id, r;
    sub_start(&a, argc, argv, 1, usage_incr);
    while ((r = sub_next(c, &a, cli_opts_incr, &id)) == SUB_OPT) {
        if (id == O_BY) {
            if (parse_i64(a.it.v[0], &by)) {
                opt_err(&a.it, "--by: bad step '%s'", a.it.v[0]);
                return sub_usage(&a);
            }
        } else if (write_opt(id, &a.it, &wo) != EXIT_OK) {
            return sub_usage(&a);
        }
    }
    if (r == SUB_STOP)
        return a.code;
    if (a.n_pos != 1)
        return sub_usage(&a);
    if (!cli_client(c))
        return c->client_code;
    fl_err err = fl_incr(c->client, NULL, a.pos[0], by, &wo, &value);
    if (err != FL_OK) {
        fail_write(c, err, "incr", a.pos[0]);
        return cli_exit_for(err);
    }
    if (c->json) {
        struct jw w;
        jw_init(&w, stdout);
        jw_obj(&w);
        jw_key(&w, "key");
        jw_str(&w, a.pos[0]);
        jw_key(&w, "value");
        jw_i64(&w, value);
        jw_end(&w);
    } else {
        printf("%" PRId64 "\n", value);
    }
    return EXIT_OK;
}

/* ---- keys ---- */

static const char usage_keys[] =
    "usage: fencelock keys [PREFIX] [--limit N]\n"
    "List the keys starting with PREFIX (all by default), in byte order, one per line\n"
    "(--json: an array). --limit N: at most N (default: the server's maximum).\n";

int cli_cmd_keys(struct cli *c, int argc, char **argv)
{
    const char *prefix;
    size_t limit;
    int rc = sub_prefix_limit(c, argc, argv, usage_keys, &prefix, &limit);
    if (rc != SUB_GO)
        return rc;
    struct fl_strlist l;
    fl_err err = fl_keys(c->client, prefix, limit, &l);
    if (err != FL_OK) {
        cli_fail(c, err, "keys");
        return cli_exit_for(err);
    }
    struct jw w;
    jw_init(&w, stdout);
    if (c->json)
        jw_arr(&w);
    for (size_t i = 0; i < l.n; i++) {
        if (c->json)
            jw_str(&w, l.v[i]);
        else {
            out_str(stdout, l.v[i]);
            putchar('\n');
        }
    }
    if (c->json)
        jw_end(&w);
    fl_strlist_free(&l);
    return EXIT_OK;
}
