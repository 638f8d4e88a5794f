/* SPDX-License-Identifier: Apache-2.0 */
/*
 * value.c — one setting's value from text, and back: the one parser every source (the config
 * file, a FENCELOCK_ variable, the command line) and every default goes through.
 *
 * A number may carry a unit, once, here: sizes take KiB, MiB, GiB, TiB (plain: bytes);
 * durations take ms, s, m, h (plain: the setting's documented unit, milliseconds except
 * --tcp-keepalive's seconds; a duration that is not a whole number of that unit is refused).
 * Bounds are checked after the conversion, in the plain unit, and a product that would not fit
 * in 64 bits is refused, never wrapped. Text values (addresses, lists, enums) have a parser each
 * below; a row names it. Nothing here allocates; a refused value leaves its field as it was,
 * except the lists (--initial-cluster, --join, --token-key), which a refusal leaves partly
 * filled and srv_config_parse then stops.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/log.h"
#include "common/num.h"
#include "raft/transport.h"
#include "server/config/config_int.h"
#include "server/server.h"

#define NODE_ID_DIGITS 20 /* what num_parse_u64 reads: a u64 */
/* One --initial-cluster / --recover item: "ID=HOST:PORT" and its NUL. */
#define CLUSTER_ITEM_BUF (NODE_ID_DIGITS + 1 + PROTO_ADDR_BUF)

/* Every address buffer a setting fills holds any valid address. */
_Static_assert(sizeof(((struct srv_config *)0)->raft_address) == PROTO_ADDR_BUF &&
                   sizeof(((struct srv_config *)0)->join[0]) == PROTO_ADDR_BUF &&
                   sizeof(((struct srv_config *)0)->listen_host) == PROTO_ADDR_BUF &&
                   sizeof(((struct srv_config *)0)->http_host) == PROTO_ADDR_BUF &&
                   sizeof(((struct rn_peer *)0)->raft_address) == PROTO_ADDR_BUF,
               "config address buffers hold PROTO_ADDR_MAX bytes");

/* A suffix multiplies the number, then divides it (exactly) into the setting's unit. */
struct suffix {
    const char *s;
    uint64_t mul, div;
};

static const struct suffix bytes_sfx[] = {{"KiB", 1ull << 10, 1},
                                          {"MiB", 1ull << 20, 1},
                                          {"GiB", 1ull << 30, 1},
                                          {"TiB", 1ull << 40, 1},
                                          {NULL, 0, 0}};
static const struct suffix ms_sfx[] = {
    {"ms", 1, 1}, {"s", 1000, 1}, {"m", 60000, 1}, {"h", 3600000, 1}, {NULL, 0, 0}};
static const struct suffix sec_sfx[] = {
    {"ms", 1, 1000}, {"s", 1, 1}, {"m", 60, 1}, {"h", 3600, 1}, {NULL, 0, 0}};
static const struct suffix count_sfx[] = {{NULL, 0, 0}};

static const struct suffix *suffixes(enum cfg_unit u)
{
    return u == CFG_BYTES ? bytes_sfx : u == CFG_MS ? ms_sfx : u == CFG_SEC ? sec_sfx : count_sfx;
}

/* What a refused number is told after its bounds: the plain unit and the suffixes. */
static const char *unit_hint(enum cfg_unit u)
{
    switch (u) {
    case CFG_BYTES:
        return " bytes (or with a unit: 512KiB, 64MiB, 1GiB, 1TiB)";
    case CFG_MS:
        return " ms (or with a unit: 500ms, 10s, 2m, 1h)";
    case CFG_SEC:
        return " seconds (or with a unit: 10s, 5m, 1h)";
    case CFG_COUNT:
        break;
    }
    return "";
}

int cfg_num_parse(const struct cfg_row *r, const char *v, uint64_t *out)
{
    size_t n = strspn(v, "0123456789");
    uint64_t x, mul = 1, div = 1;
    if (num_parse_u64(v, n, &x))
        return -1;
    if (v[n]) {
        const struct suffix *s = suffixes(r->unit);
        while (s->s && strcmp(s->s, v + n))
            s++;
        if (!s->s)
            return -1;
        mul = s->mul;
        div = s->div;
    }
    if (x > UINT64_MAX / mul || (x * mul) % div)
        return -1;
    x = x * mul / div;
    if (x < r->min || x > r->max)
        return -1;
    *out = x;
    return 0;
}

int cfg_bool_parse(const char *v, bool *out)
{
    if (!strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcmp(v, "1"))
        *out = true;
    else if (!strcasecmp(v, "false") || !strcasecmp(v, "no") || !strcmp(v, "0"))
        *out = false;
    else
        return -1;
    return 0;
}

static void *field(struct srv_config *c, const struct cfg_row *r)
{
    return (char *)c + r->off;
}

static const void *cfield(const struct srv_config *c, const struct cfg_row *r)
{
    return (const char *)c + r->off;
}

/* A number into its 4- or 8-byte field (the table's bounds keep a 4-byte one in range). */
static void num_store(struct srv_config *c, const struct cfg_row *r, uint64_t x)
{
    if (r->size == sizeof(uint32_t)) {
        uint32_t y = (uint32_t)x;
        memcpy(field(c, r), &y, sizeof y);
    } else {
        memcpy(field(c, r), &x, sizeof x);
    }
}

static uint64_t num_load(const struct srv_config *c, const struct cfg_row *r)
{
    if (r->size == sizeof(uint32_t)) {
        uint32_t y;
        memcpy(&y, cfield(c, r), sizeof y);
        return y;
    }
    uint64_t x;
    memcpy(&x, cfield(c, r), sizeof x);
    return x;
}

/* A non-empty text that must fit its field. */
static int set_path(struct srv_config *c, const struct cfg_row *r, const char *v)
{
    if (!*v || strlen(v) >= r->size)
        return -1;
    memcpy(field(c, r), v, strlen(v) + 1);
    return 0;
}

int cfg_set(struct srv_config *c, const struct cfg_row *r, const char *v, const char *where)
{
    uint64_t x;
    switch (r->type) {
    case CFG_NUM:
        if (cfg_num_parse(r, v, &x) == 0) {
            num_store(c, r, x);
            return 0;
        }
        fprintf(stderr, "fencelockd: %s%s wants a number in %llu..%llu%s, got '%s'\n", where,
                r->name, (unsigned long long)r->min, (unsigned long long)r->max, unit_hint(r->unit),
                v);
        return -1;
    case CFG_BOOL:
        if (cfg_bool_parse(v, (bool *)field(c, r)) == 0)
            return 0;
        fprintf(stderr, "fencelockd: %s%s wants true or false (yes or no), got '%s'\n", where,
                r->name, v);
        return -1;
    case CFG_PATH:
    case CFG_TEXT:
        if ((r->type == CFG_PATH ? set_path(c, r, v) : r->parse(c, v)) == 0)
            return 0;
        fprintf(stderr, "fencelockd: %sbad value for %s: '%s'\n", where, r->name, v);
        return -1;
    }
    return -1;
}

void cfg_default_text(const struct cfg_row *r, char *out, size_t n)
{
    if (r->type == CFG_NUM)
        snprintf(out, n, "%llu", (unsigned long long)r->def);
    else
        snprintf(out, n, "%s", r->def_text ? r->def_text : "");
}

/* A number as --print-config shows it: with the largest unit of its kind that divides it
 * exactly (67108864 bytes as 64MiB, 120000 ms as 2m, 3600 s as 1h), else in the plain unit;
 * so what is shown reads back as the same value (cfg_num_parse takes the same suffixes). */
static void num_show(enum cfg_unit u, uint64_t v, char *out, size_t n)
{
    const struct suffix *s = suffixes(u), *best = NULL;
    for (; v && s->s; s++)
        if (s->div == 1 && s->mul > 1 && v % s->mul == 0 && (!best || s->mul > best->mul))
            best = s;
    if (best)
        snprintf(out, n, "%llu%s", (unsigned long long)(v / best->mul), best->s);
    else
        snprintf(out, n, "%llu", (unsigned long long)v);
}

void cfg_show(const struct srv_config *c, const struct cfg_row *r, const char *given, char *out,
              size_t n)
{
    switch (r->type) {
    case CFG_NUM:
        num_show(r->unit, num_load(c, r), out, n);
        return;
    case CFG_BOOL:
        snprintf(out, n, "%s", *(const bool *)cfield(c, r) ? "true" : "false");
        return;
    case CFG_PATH:
        snprintf(out, n, "%s", (const char *)cfield(c, r));
        return;
    case CFG_TEXT:
        if (r->show)
            given = r->show(c);
        snprintf(out, n, "%s", given ? given : r->def_text ? r->def_text : "");
        return;
    }
}

/* A listen address: "host:port" (proto.h's grammar and limit) -> host (brackets of an IPv6
 * literal removed: it is handed to uv_ip6_addr), port. */
static int parse_hostport(const char *s, char host[PROTO_ADDR_BUF], int *port)
{
    size_t n = strlen(s);
    return proto_addr_valid(s, n) ? proto_addr_parse(s, n, host, PROTO_ADDR_BUF, port) : -1;
}

/* An address kept as given (raft address, --join member): it must fit a PROTO_ADDR_BUF. */
static bool valid_hostport(const char *v)
{
    return proto_addr_valid(v, strlen(v));
}

/* The next item of a comma-separated list into item (NUL-terminated), *v moved past it and its
 * comma. -1 for an empty or too long item. */
static int next_item(const char **v, char *item, size_t cap)
{
    size_t n = strcspn(*v, ",");
    if (n == 0 || n >= cap)
        return -1;
    memcpy(item, *v, n);
    item[n] = 0;
    *v += n + ((*v)[n] == ',');
    return 0;
}

int cfg_parse_listen(struct srv_config *c, const char *v)
{
    return parse_hostport(v, c->listen_host, &c->listen_port);
}

int cfg_parse_raft_listen(struct srv_config *c, const char *v)
{
    if (!valid_hostport(v))
        return -1;
    snprintf(c->raft_address, sizeof(c->raft_address), "%s", v);
    c->raft_listen_set = true;
    return 0;
}

/* --initial-cluster's entry for this node is its Raft address (rules.c). */
const char *cfg_show_raft_listen(const struct srv_config *c)
{
    return c->raft_address;
}

int cfg_parse_http_listen(struct srv_config *c, const char *v)
{
    if (!strcmp(v, "off")) {
        c->http_port = 0;
        return 0;
    }
    return parse_hostport(v, c->http_host, &c->http_port);
}

/* --http-advertise: one host:port, kept as given (it is what the member table holds). */
int cfg_parse_http_advertise(struct srv_config *c, const char *v)
{
    if (!valid_hostport(v))
        return -1;
    snprintf(c->http_advertise, sizeof(c->http_advertise), "%s", v);
    return 0;
}

/* "h:p[,h:p...]": 1 to RN_MAX_PEERS client addresses, none empty. */
int cfg_parse_join(struct srv_config *c, const char *v)
{
    c->n_join = 0;
    do {
        if (c->n_join == RN_MAX_PEERS || next_item(&v, c->join[c->n_join], sizeof(c->join[0])) ||
            !valid_hostport(c->join[c->n_join]))
            return -1;
        c->n_join++;
    } while (*v);
    return v[-1] == ',' ? -1 : 0; /* a trailing comma is an empty last item */
}

/* "1=127.0.0.1:7481,2=127.0.0.1:7491,3=127.0.0.1:7501": id = raft address, ids unique. */
static int parse_cluster(struct srv_config *c, const char *v)
{
    char item[CLUSTER_ITEM_BUF];
    c->n_peers = 0;
    while (*v) {
        if (c->n_peers == RN_MAX_PEERS || next_item(&v, item, sizeof(item)))
            return -1;
        char *eq = strchr(item, '=');
        uint64_t id;
        if (!eq)
            return -1;
        *eq = 0;
        struct rn_peer *p = &c->peers[c->n_peers];
        if (num_parse_u64_str(item, 1, CFG_NODE_ID_MAX, &id) || !valid_hostport(eq + 1))
            return -1;
        for (size_t i = 0; i < c->n_peers; i++)
            if (c->peers[i].id == id)
                return -1;
        p->id = id;
        snprintf(p->raft_address, sizeof(p->raft_address), "%s", eq + 1);
        c->n_peers++;
    }
    return c->n_peers ? 0 : -1;
}

/* --initial-cluster and --recover fill the same list, so the second of them given is refused
 * as a bad value (rather than one silently replacing the other). */
int cfg_parse_initial_cluster(struct srv_config *c, const char *v)
{
    return c->recover ? -1 : parse_cluster(c, v);
}

int cfg_parse_recover(struct srv_config *c, const char *v)
{
    if (c->n_peers)
        return -1;
    c->recover = true;
    return parse_cluster(c, v);
}

/* --token-key FILE[,FILE2]: one or two paths, none empty (a path cannot hold a comma). */
int cfg_parse_token_key(struct srv_config *c, const char *v)
{
    size_t n = 0;
    for (const char *p = v;; n++) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (n == TSIG_MAX_KEYS || !len || len >= TSIG_PATH_MAX)
            return -1;
        memcpy(c->token_key[n], p, len);
        c->token_key[n][len] = 0;
        if (!comma)
            break;
        p = comma + 1;
    }
    c->n_token_keys = n + 1;
    return 0;
}

int cfg_parse_log_level(struct srv_config *c, const char *v)
{
    return log_level_parse(v, &c->log_level);
}

int cfg_parse_log_format(struct srv_config *c, const char *v)
{
    return log_format_parse(v, &c->log_format);
}

int cfg_parse_tls_client_auth(struct srv_config *c, const char *v)
{
    return tls_client_auth_parse(v, &c->tls.client_auth);
}

int cfg_parse_peer_cert_name(struct srv_config *c, const char *v)
{
    if (!rn_tp_name_pattern_ok(v) || strlen(v) >= sizeof(c->peer_cert_name))
        return -1;
    snprintf(c->peer_cert_name, sizeof(c->peer_cert_name), "%s", v);
    return 0;
}

/* As acl.c's user names: no spaces or control bytes. */
int cfg_parse_peer_user(struct srv_config *c, const char *v)
{
    for (const char *p = v; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            return -1;
    if (!*v || strlen(v) >= sizeof(c->peer_user))
        return -1;
    snprintf(c->peer_user, sizeof(c->peer_user), "%s", v);
    return 0;
}
