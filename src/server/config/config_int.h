/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_int.h — fencelockd's settings as one table, shared by the files of src/server/config/:
 *
 *   table.c    THE table (cfg_rows[]): one row per setting, and the defaults it implies
 *   value.c    one value from text: numbers with their units, booleans, paths, addresses,
 *              cluster lists; and one value back as text (--print-config)
 *   sources.c  where a value comes from: --config FILE < FENCELOCK_* < the command line
 *              (`--flag value` or `--flag=value`); --print-config
 *   rules.c    the rules between settings, checked once every source is applied
 *   help.c     --help, written from the table
 *
 * A row says everything about its setting: its long flag ("--max-clients"), the field of
 * struct srv_config it fills (offset and size), its type and unit, bounds, default, the
 * metavariable and help line of --help, and whether SIGHUP re-reads what it names. The config
 * file key is the flag without its dashes and the variable is FENCELOCK_ and the flag upper-cased
 * with '-' as '_': both are derived from the name, never written down, so the three sources share
 * one validation. Adding a setting is one row (plus, for a new kind of text value, its parser in
 * value.c); docs/server.md, docs/fencelockd.8 and debian/fencelockd.conf are checked against the
 * table by tests/integration/test_manpage.py.
 *
 * Messages go to stderr prefixed with `where` ("" on the command line, "FILE:LINE: " or
 * "environment FENCELOCK_X: " otherwise). Nothing here allocates except sources.c's record of
 * where each value came from, freed before srv_config_parse returns.
 */
#ifndef FENCELOCK_CONFIG_INT_H
#define FENCELOCK_CONFIG_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct srv_config;

#define CFG_NODE_ID_MAX (1ull << 32) /* node ids are 1..2^32 */

enum cfg_type {
    CFG_NUM,  /* an unsigned field of 4 or 8 bytes, in [min, max], in `unit` */
    CFG_BOOL, /* a bool: no value on the command line, true/false elsewhere */
    CFG_PATH, /* a char array: any non-empty text that fits (a file or directory name) */
    CFG_TEXT, /* parsed by the row's `parse` (an address, a list, an enum) */
};

/* What a plain number means, and which suffixes a value may carry (value.c). */
enum cfg_unit {
    CFG_COUNT, /* no suffix */
    CFG_BYTES, /* KiB, MiB, GiB, TiB */
    CFG_MS,    /* ms, s, m, h */
    CFG_SEC,   /* s, m, h, and ms when a whole number of seconds */
};

enum {
    CFG_RELOAD = 1, /* what it names is read again on SIGHUP (--help says so) */
};

struct cfg_row {
    const char *name;     /* "--max-clients" */
    enum cfg_type type;   /* how the value is parsed and stored */
    size_t off, size;     /* the field in struct srv_config */
    enum cfg_unit unit;   /* CFG_NUM */
    uint64_t min, max;    /* CFG_NUM, inclusive, in `unit`'s base */
    uint64_t def;         /* CFG_NUM: the default */
    const char *def_text; /* CFG_PATH, CFG_TEXT: the default as a source writes it; NULL unset */
    /* CFG_TEXT: 0, or -1 for a bad value (reported by the caller as "bad value for ...") */
    int (*parse)(struct srv_config *c, const char *v);
    /* CFG_TEXT, optional: the effective value when it is not the text a source gave */
    const char *(*show)(const struct srv_config *c);
    const char *arg;  /* the metavariable of --help; NULL: the unit's (N, BYTES, MS, S) */
    const char *help; /* --help's text; the default and CFG_RELOAD's note are appended */
    unsigned flags;   /* CFG_RELOAD */
};

/* table.c: the rows, in --help and --print-config order. */
extern const struct cfg_row cfg_rows[];
extern const size_t cfg_n_rows;

/* The id (index into cfg_rows) of a setting named "--name" (len bytes of it), or -1. */
int cfg_id(const char *flag, size_t len);

/* value.c: set one setting from text: 0, or -1 with the reason printed after `where`. */
int cfg_set(struct srv_config *c, const struct cfg_row *r, const char *v, const char *where);
/* "true"/"yes"/"1" or "false"/"no"/"0" (case-insensitive words): 0, or -1. */
int cfg_bool_parse(const char *v, bool *out);
/* A number with an optional unit suffix, in r's unit, within its bounds: 0, or -1. */
int cfg_num_parse(const struct cfg_row *r, const char *v, uint64_t *out);
/* The effective value as text (`given`: the text a source gave, NULL for the default). */
void cfg_show(const struct srv_config *c, const struct cfg_row *r, const char *given, char *out,
              size_t n);
/* The default as text ("" when unset), as --help and the documents show it. */
void cfg_default_text(const struct cfg_row *r, char *out, size_t n);

/* value.c: the text parsers rows name. */
int cfg_parse_listen(struct srv_config *c, const char *v);
int cfg_parse_raft_listen(struct srv_config *c, const char *v);
const char *cfg_show_raft_listen(const struct srv_config *c);
int cfg_parse_http_listen(struct srv_config *c, const char *v);
int cfg_parse_http_advertise(struct srv_config *c, const char *v);
int cfg_parse_initial_cluster(struct srv_config *c, const char *v);
int cfg_parse_recover(struct srv_config *c, const char *v);
int cfg_parse_join(struct srv_config *c, const char *v);
int cfg_parse_token_key(struct srv_config *c, const char *v);
int cfg_parse_log_level(struct srv_config *c, const char *v);
int cfg_parse_log_format(struct srv_config *c, const char *v);
int cfg_parse_tls_client_auth(struct srv_config *c, const char *v);
int cfg_parse_peer_cert_name(struct srv_config *c, const char *v);
int cfg_parse_peer_user(struct srv_config *c, const char *v);

/* rules.c: the rules between settings, once every source is applied: 0, or -1 with the reason
 * printed. */
int cfg_rules_check(struct srv_config *c);

#endif
