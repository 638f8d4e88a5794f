/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_cmdtable.c — the command table (src/server/cmd/commands.def) is well formed, and
 * docs/protocol.md "Command table" is the table: a command missing from the doc, an extra one,
 * or a different arity, path, permission, names or summary fails here.
 *
 * `test_cmdtable --print-doc` prints the section as it must read (from its heading to the end
 * marker), for pasting into docs/protocol.md after changing a row. Run from the repository's
 * top directory (as make unit and scripts/run-tests.sh do).
 */
#include <ctype.h>
#include <stdlib.h>

#include "server/cmd/cmd.h"
#include "test.h"

#define DOC_PATH "docs/protocol.md"
#define DOC_BEGIN "## Command table\n"
#define DOC_END "<!-- end of the command table -->\n"

static const char *path_of(const struct srv_cmd *cmd, char *out, size_t n)
{
    snprintf(out, n, "%s%s%s",
             cmd->flags & CMD_WRITE  ? "write"
             : cmd->flags & CMD_READ ? "read"
                                     : "local",
             cmd->flags & CMD_FRESH ? ", fresh" : "", cmd->flags & CMD_ASYNC ? ", async" : "");
    return out;
}

static const char *perm_of(const struct srv_cmd *cmd, char *out, size_t n)
{
    char need[64], alt[64];
    if (cmd->perm == CMD_PERM_OPEN)
        return "none (before AUTH too)";
    if (cmd->perm == CMD_PERM_ANY)
        return "any user";
    acl_perm_names(cmd->perm, need, sizeof need);
    acl_perm_names(cmd->alt, alt, sizeof alt);
    snprintf(out, n, "%s%s%s", need, cmd->alt ? " or " : "", alt);
    return out;
}

static const char *names_of(const struct srv_cmd *cmd, char *out, size_t n)
{
    switch (cmd->names.target) {
    case CMD_T_KEY:
        snprintf(out, n, "key: arg %u%s", cmd->names.arg,
                 cmd->names.opts_from ? " (FENCE: lock)" : "");
        return out;
    case CMD_T_LOCK:
        snprintf(out, n, "lock: arg %u", cmd->names.arg);
        return out;
    case CMD_T_LOCKS:
        snprintf(out, n, "locks: arg %u counts the names after it", cmd->names.arg);
        return out;
    case CMD_T_ALLKEYS:
        return "every key";
    case CMD_T_ALLNAMES:
        return "every key and lock";
    case CMD_T_TXN:
        return "every key and lock compared or written (FENCE: lock)";
    case CMD_T_NONE:
        return "";
    }
    return "?";
}

/* The section of docs/protocol.md the table makes, into b. 0, or -1 out of memory. */
static int render_doc(struct buf *b)
{
    int err = buf_printf(
        b,
        "%s\n"
        "Every command, in the order of `COMMAND` (generated from "
        "`src/server/cmd/commands.def`:\n"
        "`build/asan/tests/test_cmdtable --print-doc`; `tests/unit/test_cmdtable.c` fails "
        "when this table\n"
        "differs from it). *arity*: the exact number of words with the command's name, or "
        "-N: at\n"
        "least N. *path*: `local` answered at once by any node, `write` through the log, "
        "`read` a\n"
        "linearizable read on the leader (`fresh`: even after `READONLY`; `async`: may "
        "answer later).\n"
        "*permission*: what the user needs under `--acl-file` (docs/security.md). *names*: "
        "the\n"
        "argument that is a key or a lock name, checked against the user's `keys=` / "
        "`locks=`.\n\n"
        "| command | arity | path | permission | names | summary |\n"
        "| --- | --- | --- | --- | --- | --- |\n",
        DOC_BEGIN);
    for (size_t i = 0; i < srv_cmd_count(); i++) {
        const struct srv_cmd *c = srv_cmd_at(i);
        char path[32], perm[160], names[64];
        const char *nm = names_of(c, names, sizeof names);
        err |= buf_printf(b, "| `%s` | %d | %s | %s | %s | %s |\n", c->name, c->arity,
                          path_of(c, path, sizeof path), perm_of(c, perm, sizeof perm),
                          nm[0] ? nm : "-", c->summary);
    }
    err |= buf_printf(b, "\n%s", DOC_END);
    return err ? -1 : 0;
}

/* docs/protocol.md into a malloc'd NUL-terminated string (NULL if unreadable). */
static char *read_doc(void)
{
    FILE *f = fopen(DOC_PATH, "rb");
    if (!f)
        return NULL;
    struct buf b;
    buf_init(&b);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (buf_append(&b, chunk, n)) {
            fclose(f);
            buf_free(&b);
            return NULL;
        }
    fclose(f);
    if (buf_append(&b, "", 1)) {
        buf_free(&b);
        return NULL;
    }
    return b.p;
}

/* The first line where a and b differ, for the failure message. */
static void show_first_difference(const char *want, const char *got)
{
    size_t line = 1, i = 0;
    while (want[i] && want[i] == got[i])
        line += want[i++] == '\n';
    size_t ws = i, gs = i;
    while (ws > 0 && want[ws - 1] != '\n')
        ws--;
    while (gs > 0 && got[gs - 1] != '\n')
        gs--;
    fprintf(stderr, "  line %zu of the section differs:\n    table: %.*s\n    doc:   %.*s\n", line,
            (int)strcspn(want + ws, "\n"), want + ws, (int)strcspn(got + gs, "\n"), got + gs);
    fprintf(stderr, "  build/asan/tests/test_cmdtable --print-doc prints the section\n");
}

TEST(test_protocol_md_lists_the_command_table)
{
    struct buf want;
    buf_init(&want);
    CHECK(render_doc(&want) == 0 && buf_append(&want, "", 1) == 0);
    char *doc = read_doc();
    if (!doc)
        fprintf(stderr, "  cannot read %s (run from the repository's top directory)\n", DOC_PATH);
    CHECK(doc);
    const char *from = strstr(doc, DOC_BEGIN);
    const char *end = from ? strstr(from, DOC_END) : NULL;
    if (!from || !end)
        fprintf(stderr, "  %s has no section from \"%.*s\" to \"%.*s\"\n", DOC_PATH,
                (int)strlen(DOC_BEGIN) - 1, DOC_BEGIN, (int)strlen(DOC_END) - 1, DOC_END);
    bool same = from && end && (size_t)(end + strlen(DOC_END) - from) == strlen(want.p) &&
                memcmp(from, want.p, strlen(want.p)) == 0;
    if (from && end && !same) {
        char *got = strndup(from, (size_t)(end + strlen(DOC_END) - from));
        if (got)
            show_first_difference(want.p, got);
        free(got);
    }
    free(doc);
    buf_free(&want);
    CHECK(same);
}

/* The rows themselves: what dispatch, COMMAND and the permission check rely on. */
TEST(test_every_row_is_well_formed)
{
    CHECK(srv_cmd_count() == SRV_CMD_N && SRV_CMD_N > 20);
    for (size_t i = 0; i < srv_cmd_count(); i++) {
        const struct srv_cmd *c = srv_cmd_at(i);
        CHECK(c && c->name && c->fn && c->summary);
        CHECK_EQ_U64(c->len, strlen(c->name));
        CHECK(c->len > 0 && c->len < 64); /* COMMAND's lower-case copy is 64 bytes */
        for (size_t k = 0; k < c->len; k++)
            CHECK(isupper((unsigned char)c->name[k]) || c->name[k] == '.' || c->name[k] == '-' ||
                  c->name[k] == '_');
        /* one path: local, write or read */
        int path = c->flags & (CMD_LOCAL | CMD_WRITE | CMD_READ);
        CHECK(path == CMD_LOCAL || path == CMD_WRITE || path == CMD_READ);
        CHECK(!(c->flags & CMD_FRESH) || path == CMD_READ);
        CHECK(!(c->flags & CMD_ASYNC) || path == CMD_LOCAL);
        CHECK(c->arity != 0);
        /* one line, a table cell of its own */
        CHECK(c->summary[0] && !strchr(c->summary, '|') && !strchr(c->summary, '\n'));
        /* the permission: open, anybody, or acl_perm bits (alt only beside needed bits) */
        CHECK(c->perm == CMD_PERM_OPEN || (c->perm & ~(unsigned)ACL_ALL) == 0);
        CHECK((c->alt & ~(unsigned)ACL_ALL) == 0);
        CHECK(!c->alt || (c->perm != CMD_PERM_OPEN && c->perm != CMD_PERM_ANY));
        /* a named key or lock is an argument every call has (the check reads argv[arg]) */
        unsigned need = (unsigned)(c->arity < 0 ? -c->arity : c->arity);
        if (c->names.target == CMD_T_KEY || c->names.target == CMD_T_LOCK ||
            c->names.target == CMD_T_LOCKS)
            CHECK(c->names.arg >= 1 && c->names.arg < need);
        else
            CHECK(c->names.arg == 0);
        CHECK(c->names.opts_from == 0 ||
              (c->names.target == CMD_T_KEY && c->names.opts_from > c->names.arg));
        /* names are unique (case-insensitively, as matched) and the lookup finds this row */
        struct resp_arg a = {.p = c->name, .len = c->len};
        CHECK(srv_cmd_lookup(&a) == c);
        CHECK_EQ_U64(srv_cmd_index(c), i);
    }
    CHECK(srv_cmd_at(SRV_CMD_N) == NULL);
    CHECK_EQ_U64(srv_cmd_index(NULL), SRV_CMD_N);
}

/* A command's id names its row: code that needs one command (the PING before AUTH, a parked
 * wait's permission) says SRV_CMD_X, never its string. */
TEST(test_ids_name_their_rows)
{
    CHECK(strcmp(srv_cmd_at(SRV_CMD_PING)->name, "PING") == 0);
    CHECK(strcmp(srv_cmd_at(SRV_CMD_LOCK)->name, "LOCK") == 0);
    CHECK(strcmp(srv_cmd_at(SRV_CMD_XREAD)->name, "XREAD") == 0);
    CHECK(strcmp(srv_cmd_at(SRV_CMD_ELECT_OBSERVE)->name, "ELECT.OBSERVE") == 0);
    CHECK(strcmp(srv_cmd_at(SRV_CMD_COMMAND)->name, "COMMAND") == 0);
    struct resp_arg lower = {.p = "sem.acquire", .len = 11};
    CHECK(srv_cmd_lookup(&lower) == srv_cmd_at(SRV_CMD_SEM_ACQUIRE));
    struct resp_arg none = {.p = "SET", .len = 3};
    CHECK(srv_cmd_lookup(&none) == NULL);
}

/* The permission check reads the row: a user with exactly a row's perm may run it, the lock
 * glob applies to its names argument. */
TEST(test_permission_comes_from_the_row)
{
    struct acl_user u;
    memset(&u, 0, sizeof u);
    snprintf(u.name, sizeof u.name, "%s", "app");
    u.perms = ACL_LOCK;
    CHECK(cmd_perm_allows(&u, srv_cmd_at(SRV_CMD_LOCK), "a", 1));
    CHECK(!cmd_perm_allows(&u, srv_cmd_at(SRV_CMD_XREAD), NULL, 0));
    CHECK(!cmd_perm_allows(&u, srv_cmd_at(SRV_CMD_CLUSTER_ADD), NULL, 0));
    CHECK(!cmd_perm_allows(&u, NULL, NULL, 0));
    u.perms = ACL_PEER; /* alt: peer or admin */
    CHECK(cmd_perm_allows(&u, srv_cmd_at(SRV_CMD_CLUSTER_ADD), NULL, 0));
    u.perms = ACL_ADMIN;
    CHECK(cmd_perm_allows(&u, srv_cmd_at(SRV_CMD_CLUSTER_ADD), NULL, 0));
    CHECK(!cmd_perm_allows(&u, srv_cmd_at(SRV_CMD_LOCK), "a", 1));
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--print-doc") == 0) {
        struct buf b;
        buf_init(&b);
        int rc = render_doc(&b) == 0 && fwrite(b.p, 1, b.len, stdout) == b.len ? 0 : 1;
        buf_free(&b);
        return rc;
    }
    RUN(test_protocol_md_lists_the_command_table);
    RUN(test_every_row_is_well_formed);
    RUN(test_ids_name_their_rows);
    RUN(test_permission_comes_from_the_row);
    TEST_MAIN_END();
}
