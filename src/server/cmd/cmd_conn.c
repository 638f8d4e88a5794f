/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_conn.c — the connection-management commands Redis clients send when they connect or
 * take a connection from a pool, answered as Redis answers them, so that redis-py, ioredis,
 * redis-cli and the like work with their ordinary settings (client names, db 0, probes):
 *   AUTH [user] password     auth.c (without --acl-file: Redis's default user, no password)
 *   ECHO msg                 the message
 *   SELECT db                +OK for 0; like a Redis with one database otherwise
 *   DBSIZE                   keys in this node's applied state (local, not linearizable)
 *   CLIENT SETNAME|GETNAME|ID|INFO|LIST|SETINFO|NO-EVICT|NO-TOUCH|REPLY ON|HELP
 *   COMMAND [COUNT|LIST|INFO name...|DOCS [name...]]  from the command table (commands.def)
 * and QUIT, READONLY and READWRITE. Their rows are in commands.def with the others.
 * All are CMD_LOCAL: answered at once by any node, in request order like every reply.
 * State: a connection's name and library name/version live in struct srv_conn (fixed-size,
 * freed with it). Data commands fencelock lacks stay "-ERR unknown command" (srv_dispatch).
 */
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "server/cmd/cmd.h"

void echoCommand(struct srv_req *r)
{
    resp_w_bulk(r->out, r->argv[1].p, r->argv[1].len);
}

/* One database, as a Redis started with `databases 1`. */
void selectCommand(struct srv_req *r)
{
    uint64_t db;
    if (resp_parse_u64(r->argv[1].p, r->argv[1].len, &db) != 0)
        resp_w_error(r->out, PROTO_ERR " value is not an integer or out of range");
    else if (db != 0)
        resp_w_error(r->out, PROTO_ERR " DB index is out of range");
    else
        resp_w_simple(r->out, "OK");
}

/* The number of keys (KV only, not locks or sessions) in this node's applied state: cheap and
   local, so it may lag the leader; KEYS gives a linearizable view. */
void dbsizeCommand(struct srv_req *r)
{
    struct fsm_stats st;
    fsm_stats(r->s->fsm, &st);
    resp_w_uint(r->out, st.keys);
}

/* ---- CLIENT ---- */

/* Redis refuses names with spaces, newlines or other characters outside '!'..'~'. */
static int name_ok(const struct resp_arg *a)
{
    for (size_t i = 0; i < a->len; i++)
        if (a->p[i] < '!' || a->p[i] > '~')
            return 0;
    return 1;
}

/* Copy a into dst[n] (NUL-terminated). -1 if it does not fit. */
static int put_str(char *dst, size_t n, const struct resp_arg *a)
{
    if (a->len >= n)
        return -1;
    memcpy(dst, a->p, a->len);
    dst[a->len] = '\0';
    return 0;
}

static void addr_of(uv_tcp_t *tcp, int peer, char *out, size_t n)
{
    struct sockaddr_storage ss;
    int len = sizeof ss;
    char host[64] = "?";
    int port = 0;
    int rc = peer ? uv_tcp_getpeername(tcp, (struct sockaddr *)&ss, &len)
                  : uv_tcp_getsockname(tcp, (struct sockaddr *)&ss, &len);
    if (rc == 0 && ss.ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;
        uv_ip4_name(in, host, sizeof host);
        port = ntohs(in->sin_port);
    } else if (rc == 0 && ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;
        uv_ip6_name(in6, host, sizeof host);
        port = ntohs(in6->sin6_port);
    }
    snprintf(out, n, "%s:%d", host, port);
}

/* One line of CLIENT INFO / CLIENT LIST, in Redis' "key=value ..." form, with the fields
   fencelock has (no memory or pub/sub counters). 0, or -1 out of memory. */
static int client_line(struct srv *s, struct srv_conn *c, struct buf *b)
{
    char addr[PROTO_ADDR_BUF], laddr[PROTO_ADDR_BUF];
    uv_os_fd_t fd = -1;
    addr_of(&c->tcp, 1, addr, sizeof addr);
    addr_of(&c->tcp, 0, laddr, sizeof laddr);
    uv_fileno((uv_handle_t *)&c->tcp, &fd);
    uint64_t now = clock_ms();
    /* sub/psub/ssub 0 and multi -1: no pub/sub, no MULTI. The buffer figures are the
       connection's input and output buffers (redis-py's client_info() parses all of them). */
    return buf_printf(b,
                      "id=%llu addr=%s laddr=%s fd=%d name=%s age=%llu idle=%llu flags=%s db=0 "
                      "sub=0 psub=0 ssub=0 multi=-1 qbuf=%zu qbuf-free=%zu argv-mem=0 obl=0 "
                      "oll=0 omem=%zu tot-mem=%zu user=%s resp=%d lib-name=%s "
                      "lib-ver=%s\n",
                      (unsigned long long)c->id, addr, laddr, (int)fd, c->name,
                      (unsigned long long)((now - c->created_ms) / 1000),
                      (unsigned long long)((now - c->last_cmd_ms) / 1000),
                      c->stale_reads ? "r" : "N", c->in.len, c->in.cap - c->in.len, c->out.len,
                      c->in.cap + c->out.cap + c->wbuf.cap, c->user ? c->user->name : "default",
                      c->proto, c->lib_name, c->lib_ver);
}

/* Whether CLIENT LIST shows connection c to r's user: without --acl-file every connection
   (one tenant); with it an admin sees all, any other user only the connections authenticated
   as itself (addresses, names and library strings of other tenants are theirs). */
static bool client_visible(const struct srv_req *r, const struct srv_conn *c)
{
    const struct acl_user *me = r->c ? r->c->user : NULL;
    if (!r->s->auth.on || (me && (me->perms & ACL_ADMIN)))
        return true;
    return me && c->user && strcmp(c->user->name, me->name) == 0;
}

/* CLIENT INFO (this connection) or CLIENT LIST (every open one the caller may see, see
   client_visible): one line each. */
static void client_info(struct srv_req *r, bool all)
{
    struct buf b;
    int err = 0;
    buf_init(&b);
    if (!all)
        err |= client_line(r->s, r->c, &b);
    for (struct srv_conn *c = all ? r->s->net.conns : NULL; c; c = c->next)
        if (!c->closing && client_visible(r, c))
            err |= client_line(r->s, c, &b);
    if (err)
        resp_w_error(r->out, PROTO_ERR " out of memory");
    else
        resp_w_verbatim(r->out, r->proto, b.p ? b.p : "", b.len);
    buf_free(&b);
}

static void client_setname(struct srv_req *r)
{
    if (!name_ok(&r->argv[2]))
        resp_w_error(r->out, PROTO_ERR
                     " Client names cannot contain spaces, newlines or special characters.");
    else if (put_str(r->c->name, sizeof r->c->name, &r->argv[2]) != 0)
        resp_w_errorf(r->out, PROTO_ERR " client name too long (%zu bytes at most)",
                      sizeof r->c->name - 1);
    else
        resp_w_simple(r->out, "OK");
}

/* CLIENT SETINFO LIB-NAME|LIB-VER value (redis-py and others send it on connect). */
static void client_setinfo(struct srv_req *r)
{
    struct srv_conn *c = r->c;
    const struct resp_arg *v = &r->argv[3];
    int bad = 0;
    if (resp_arg_is(&r->argv[2], "lib-name"))
        bad = !name_ok(v) || put_str(c->lib_name, sizeof c->lib_name, v) != 0;
    else if (resp_arg_is(&r->argv[2], "lib-ver"))
        bad = !name_ok(v) || put_str(c->lib_ver, sizeof c->lib_ver, v) != 0;
    else {
        resp_w_errorf(r->out, PROTO_ERR " Unrecognized option '%.*s'",
                      (int)(r->argv[2].len > 64 ? 64 : r->argv[2].len), r->argv[2].p);
        return;
    }
    if (bad)
        resp_w_error(r->out, PROTO_ERR " lib-name and lib-ver cannot contain spaces, newlines or "
                                       "special characters, and are at most 64/32 bytes");
    else
        resp_w_simple(r->out, "OK");
}

static const char *const client_help[] = {
    "CLIENT <subcommand> [<arg> ...]. fencelock answers:",
    "GETNAME",
    "    Return the name of the current connection.",
    "ID",
    "    Return the ID of the current connection.",
    "INFO",
    "    Return information about the current connection.",
    "LIST",
    "    Return information about all connections.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "SETINFO <LIB-NAME|LIB-VER> <value>",
    "    Record the client library's name or version.",
    "NO-EVICT|NO-TOUCH <ON|OFF>, REPLY ON",
    "    Accepted; they change nothing here.",
    "HELP",
    "    Print this help.",
};

/* The subcommands with their exact argc (CLIENT included). */
static int client_arity(const struct resp_arg *sub, size_t argc)
{
    static const struct {
        const char *name;
        size_t argc;
    } t[] = {{"setname", 3},  {"getname", 2},  {"id", 2},    {"info", 2}, {"setinfo", 4},
             {"no-evict", 3}, {"no-touch", 3}, {"reply", 3}, {"help", 2}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (resp_arg_is(sub, t[i].name))
            return argc == t[i].argc ? 1 : 0;
    if (resp_arg_is(sub, "list"))
        return 1; /* LIST [TYPE normal] [ID ...]: the filters are not applied */
    return -1;
}

void clientCommand(struct srv_req *r)
{
    const struct resp_arg *sub = &r->argv[1];
    int shown = (int)(sub->len > 64 ? 64 : sub->len);
    int ar = client_arity(sub, r->argc);
    if (ar < 0) {
        resp_w_errorf(r->out, PROTO_ERR " unknown subcommand '%.*s'. Try CLIENT HELP.", shown,
                      sub->p);
        return;
    }
    if (ar == 0) {
        resp_w_errorf(r->out, PROTO_ERR " wrong number of arguments for 'client|%.*s' command",
                      shown, sub->p);
        return;
    }
    if (r->c == NULL) { /* not reached: CMD_LOCAL runs with its connection */
        resp_w_error(r->out, PROTO_ERR " no connection");
        return;
    }
    if (resp_arg_is(sub, "setname")) {
        client_setname(r);
    } else if (resp_arg_is(sub, "getname")) {
        if (r->c->name[0])
            resp_w_bulk_str(r->out, r->c->name);
        else
            resp_w_nil(r->out, r->proto);
    } else if (resp_arg_is(sub, "id")) {
        resp_w_uint(r->out, r->c->id);
    } else if (resp_arg_is(sub, "info") || resp_arg_is(sub, "list")) {
        client_info(r, resp_arg_is(sub, "list"));
    } else if (resp_arg_is(sub, "setinfo")) {
        client_setinfo(r);
    } else if (resp_arg_is(sub, "reply") && !resp_arg_is(&r->argv[2], "on")) {
        resp_w_error(r->out, PROTO_ERR " CLIENT REPLY OFF|SKIP is not supported: every command is "
                                       "answered");
    } else if (resp_arg_is(sub, "help")) {
        size_t n = sizeof client_help / sizeof client_help[0];
        resp_w_array(r->out, n);
        for (size_t i = 0; i < n; i++)
            resp_w_simple(r->out, client_help[i]);
    } else {
        resp_w_simple(r->out, "OK"); /* NO-EVICT, NO-TOUCH, REPLY ON */
    }
}

/* ---- HELLO's options ---- */

/* HELLO's options after the version: AUTH user password, SETNAME name. Only checked here;
   the caller applies them (the name only once an AUTH succeeded). */
int srv_hello_options(struct srv_req *r, struct srv_hello_opts *o)
{
    memset(o, 0, sizeof(*o));
    for (size_t i = 2; i < r->argc; i++) {
        if (resp_arg_is(&r->argv[i], "auth") && i + 2 < r->argc) {
            o->user = &r->argv[i + 1];
            o->pw = &r->argv[i + 2];
            i += 2;
        } else if (resp_arg_is(&r->argv[i], "setname") && i + 1 < r->argc) {
            o->setname = &r->argv[++i];
            if (!name_ok(o->setname) || o->setname->len >= sizeof r->c->name) {
                resp_w_error(r->out, PROTO_ERR " Client names cannot contain spaces, newlines or "
                                               "special characters.");
                return -1;
            }
        } else {
            int shown = (int)(r->argv[i].len > 64 ? 64 : r->argv[i].len);
            resp_w_errorf(r->out, PROTO_ERR " Syntax error in HELLO option '%.*s'", shown,
                          r->argv[i].p);
            return -1;
        }
    }
    return 0;
}

/* AUTH password (the user "default") or AUTH user password: auth.c verifies and answers. */
void authCommand(struct srv_req *r)
{
    if (r->argc > 3) {
        resp_w_error(r->out, PROTO_ERR " syntax error");
        return;
    }
    srv_auth_begin(r, r->argc == 3 ? &r->argv[1] : NULL, &r->argv[r->argc - 1], 0, NULL);
}

/* ---- COMMAND ---- */

static void lower_name(const struct srv_cmd *cmd, char *out, size_t n)
{
    size_t i = 0;
    for (; i + 1 < n && i < cmd->len; i++) {
        char ch = cmd->name[i];
        out[i] = ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch;
    }
    out[i] = '\0';
}

/* One COMMAND INFO entry, Redis 7's ten fields: name, arity, flags, first key, last key,
   step, ACL categories, tips, key specs, subcommands. Key positions stay undescribed (0, no key
   specs) although the rows name keys and locks for the permission check: the replies do not
   change, and a client routing by key positions would take a lock name for a Redis key. */
static void command_entry(struct srv_req *r, const struct srv_cmd *cmd)
{
    char name[64];
    lower_name(cmd, name, sizeof name);
    resp_w_array(r->out, 10);
    resp_w_bulk_str(r->out, name);
    resp_w_int(r->out, cmd->arity);
    bool write = cmd->flags & CMD_WRITE;
    resp_w_array(r->out, 1);
    resp_w_simple(r->out, write ? "write" : cmd->flags & CMD_READ ? "readonly" : "fast");
    resp_w_int(r->out, 0);
    resp_w_int(r->out, 0);
    resp_w_int(r->out, 0);
    resp_w_array(r->out, 0);
    resp_w_array(r->out, 0);
    resp_w_array(r->out, 0);
    resp_w_array(r->out, 0);
}

/* Key-value pairs in each COMMAND DOCS entry. */
#define COMMAND_DOCS_FIELDS 3

static void command_docs_entry(struct srv_req *r, const struct srv_cmd *cmd)
{
    char name[64];
    lower_name(cmd, name, sizeof name);
    resp_w_bulk_str(r->out, name);
    resp_w_map(r->out, r->proto, COMMAND_DOCS_FIELDS);
    resp_w_bulk_str(r->out, "summary");
    resp_w_bulk_str(r->out, cmd->summary);
    resp_w_bulk_str(r->out, "since");
    resp_w_bulk_str(r->out, FENCELOCK_VERSION);
    resp_w_bulk_str(r->out, "group");
    resp_w_bulk_str(r->out, "fencelock");
}

static void command_docs(struct srv_req *r)
{
    size_t n = 0, total = srv_cmd_count();
    if (r->argc == 2) {
        resp_w_map(r->out, r->proto, total);
        for (size_t i = 0; i < total; i++)
            command_docs_entry(r, srv_cmd_at(i));
        return;
    }
    for (size_t i = 2; i < r->argc; i++)
        n += srv_cmd_lookup(&r->argv[i]) != NULL;
    resp_w_map(r->out, r->proto, n); /* unknown names are left out, as Redis does */
    for (size_t i = 2; i < r->argc; i++) {
        const struct srv_cmd *cmd = srv_cmd_lookup(&r->argv[i]);
        if (cmd)
            command_docs_entry(r, cmd);
    }
}

void commandCommand(struct srv_req *r)
{
    size_t total = srv_cmd_count();
    const struct resp_arg *sub = r->argc > 1 ? &r->argv[1] : NULL;
    if (sub == NULL) {
        resp_w_array(r->out, total);
        for (size_t i = 0; i < total; i++)
            command_entry(r, srv_cmd_at(i));
    } else if (resp_arg_is(sub, "count") && r->argc == 2) {
        resp_w_uint(r->out, total);
    } else if (resp_arg_is(sub, "list") && r->argc == 2) {
        char name[64];
        resp_w_array(r->out, total);
        for (size_t i = 0; i < total; i++) {
            lower_name(srv_cmd_at(i), name, sizeof name);
            resp_w_bulk_str(r->out, name);
        }
    } else if (resp_arg_is(sub, "info")) {
        resp_w_array(r->out, r->argc - 2);
        for (size_t i = 2; i < r->argc; i++) {
            const struct srv_cmd *cmd = srv_cmd_lookup(&r->argv[i]);
            if (cmd)
                command_entry(r, cmd);
            else
                resp_w_nil(r->out, r->proto);
        }
    } else if (resp_arg_is(sub, "docs")) {
        command_docs(r);
    } else {
        int shown = (int)(sub->len > 64 ? 64 : sub->len);
        resp_w_errorf(r->out,
                      PROTO_ERR " unknown subcommand or wrong number of arguments for '%.*s'. "
                                "Try COMMAND HELP.",
                      shown, sub->p);
    }
}

/*
 * READONLY / READWRITE (as in Redis Cluster): a connection that says READONLY gets reads answered
 * at once from the local node's applied state, on followers too, without a barrier: possibly
 * stale, never linearizable. Only explicitly asked for; READWRITE goes back to the default.
 */
void readonlyCommand(struct srv_req *r)
{
    if (r->c)
        r->c->stale_reads = true;
    resp_w_simple(r->out, "OK");
}

void readwriteCommand(struct srv_req *r)
{
    if (r->c)
        r->c->stale_reads = false;
    resp_w_simple(r->out, "OK");
}

/* QUIT: +OK, then the connection closes once the replies before it are written. */
void quitCommand(struct srv_req *r)
{
    resp_w_simple(r->out, "OK");
    if (r->c)
        r->c->close_after_write = true;
}
