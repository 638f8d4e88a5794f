/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_int.h — fencelockd's settings as one list, shared by config.c (each setting's value:
 * parsing, validation, the rules between settings) and config_src.c (the list itself, where a
 * value comes from: --config FILE, FENCELOCK_* variables, the command line; --print-config).
 *
 * A setting is named by its long flag ("--max-clients") and numbered 0..cfg_count()-1; the file
 * key and the variable are derived from that name, so the three sources share one validation.
 * Messages go to stderr prefixed with `where` ("" on the command line, "FILE:LINE: " or
 * "FENCELOCK_X: " otherwise). Nothing here allocates.
 */
#ifndef FENCELOCK_CONFIG_INT_H
#define FENCELOCK_CONFIG_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct srv_config;

size_t cfg_count(void);
/* "--name" of setting id; the file key is the name without its dashes. */
const char *cfg_name(size_t id);
/* The id of "--name", or -1. */
int cfg_id(const char *flag);
/* A flag without a value on the command line; "true"/"false" ("yes"/"no", 1/0) elsewhere. */
bool cfg_is_bool(size_t id);
int cfg_bool_parse(const char *v, bool *out);
/* Set one setting from text: 0, or -1 with the reason printed after `where`. */
int cfg_set(struct srv_config *c, size_t id, const char *v, const char *where);
/* The effective value as text (`given`: the text a source gave, NULL for the default). */
void cfg_show(const struct srv_config *c, size_t id, const char *given, char *out, size_t n);
/* config.c's numeric settings (num_flags[]) by index, and its setter of text settings
 * (0, -1 bad value, 1 not a text setting). */
size_t cfg_num_count(void);
const char *cfg_num_name(size_t i);
int cfg_num_set(struct srv_config *c, size_t i, const char *v, const char *where);
uint64_t cfg_num_get(const struct srv_config *c, size_t i);
int cfg_str_set(struct srv_config *c, const char *flag, const char *v);
/* The rules between settings, once every source is applied: 0, or -1 with the reason printed. */
int cfg_check(struct srv_config *c);

#endif
