/* SPDX-License-Identifier: Apache-2.0 */
/*
 * secret — the permission check of files that hold secrets: --acl-file (password hashes),
 * --peer-password-file, --token-key, and the private keys of --tls-key and --peer-tls-key.
 *
 * Rule (as ssh refuses a private key "with permissions too open", and as PostgreSQL accepts a
 * root-owned key that its group may read): a secret file must be a regular file that others
 * can neither read nor write (no 0007 bit); its group may not write it, and may read it only
 * when the file belongs to root and this process does not run as root (the packaged layout
 * root:fencelock 0640, where root owns the secret and the daemon's group reads it). Checked
 * at start (fencelockd refuses to start) and at every SIGHUP before anything is re-read (a
 * failed check keeps every old secret). No state; stat(2) only.
 */
#ifndef FENCELOCK_SECRET_H
#define FENCELOCK_SECRET_H

#include <stddef.h>
#include <sys/types.h>

/* 0 if path (named by the flag `what` in messages) passes the rule for a process of user id
   euid, or cannot be stat'ed at all (the file's loader then reports it); else -1 with why, and
   how to fix it, in err. */
int secret_check(const char *what, const char *path, uid_t euid, char *err, size_t errlen);

struct srv;
/* Every configured secret file of s->cfg through secret_check: 0, or -1 after logging each
   failure with `prefix` ("" at start, "SIGHUP: " at a reload). */
int srv_secrets_check(struct srv *s, const char *prefix);

#endif
