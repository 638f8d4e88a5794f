/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dispatch — the command layer as the rest of the server sees it: running a parsed command
 * (cmd.c; cmd.h is the command families' own header), the --token-key keys of FENCE.SIGN /
 * FENCE.VERIFY (cmd_sign.c), and what the HTTP endpoint serves (obs/http_routes.c).
 * Owns nothing: the state these act on is in struct srv (server.h).
 */
#ifndef FENCELOCK_DISPATCH_H
#define FENCELOCK_DISPATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"
#include "common/resp.h"

struct srv;
struct srv_conn;
struct srv_slot;

/* cmd.c (the command table and dispatch; cmd.h is the command families' header) */
/* Whether the named command is proposed to the log (CMD_WRITE). */
bool srv_cmd_is_write(const struct resp_arg *name);
/* Run a parsed command for connection c (flags decide sync / write / read paths). */
void srv_dispatch(struct srv *s, struct srv_conn *c, size_t argc, struct resp_arg *argv);
/* Answer one read after its barrier; true if the reply will come later (srv_slot_done then). */
bool srv_run_read(struct srv *s, struct srv_slot *slot);
/* Render an error for a failed proposal / barrier status. */
void srv_reply_status(struct srv *s, struct buf *out, int status);

/* cmd_sign.c: the --token-key keys of FENCE.SIGN / FENCE.VERIFY */
/* Read the key files when configured: 0, or -1 (logged; the server must not start). */
int srv_tsig_init(struct srv *s);
/* SIGHUP: read them again (a missing or short file keeps the old keys). */
void srv_tsig_reload(struct srv *s);

/* cmd_token.c: AUTH.TOKEN's key (--http-token-key, or a random one) */
/* Read the key file, or make a random key: 0, or -1 (logged; the server must not start). */
int srv_htok_init(struct srv *s);
/* SIGHUP: read the file again (a missing or short file keeps the old key). */
void srv_htok_reload(struct srv *s);

/* http_routes.c: what the HTTP endpoint serves (/metrics, /health) */
void srv_http_route(void *arg, const char *method, const char *path, struct buf *body, int *status,
                    const char **ctype);

#endif
