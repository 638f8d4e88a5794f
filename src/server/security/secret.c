/* SPDX-License-Identifier: Apache-2.0 */
/* secret.c — the permission rule of secret files (secret.h). */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/security/secret.h"
#include "server/server.h"

int secret_check(const char *what, const char *path, uid_t euid, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return 0; /* missing or unreadable: its loader says so, in its own words */
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s %s is not a regular file", what, path);
        return -1;
    }
    mode_t m = st.st_mode & 0777;
    int root_for_group = st.st_uid == 0 && euid != 0;
    if ((m & 0007) || (m & 0020) || ((m & 0040) && !root_for_group)) {
        snprintf(err, errlen,
                 "%s %s has permissions %04o, too open for a secret: make it readable by its "
                 "owner only (chmod 600), or root-owned and readable by the daemon's group "
                 "(chmod 640)",
                 what, path, (unsigned)m);
        return -1;
    }
    return 0;
}

/* One configured file (path "" = not configured): logs a failure, returns 1 for it. */
static int check_one(struct srv *s, const char *prefix, const char *what, const char *path)
{
    char err[1200];
    if (!path[0] || secret_check(what, path, geteuid(), err, sizeof err) == 0)
        return 0;
    LOGE(&s->log, "%s%s", prefix, err);
    return 1;
}

int srv_secrets_check(struct srv *s, const char *prefix)
{
    const struct srv_config *c = &s->cfg;
    int bad = check_one(s, prefix, "--acl-file", c->acl_file);
    bad += check_one(s, prefix, "--peer-password-file", c->peer_password_file);
    bad += check_one(s, prefix, "--tls-key", c->tls.key);
    bad += check_one(s, prefix, "--peer-tls-key", c->peer_tls_key);
    bad += check_one(s, prefix, "--http-token-key", c->http_token_key);
    for (size_t i = 0; i < c->n_token_keys; i++)
        bad += check_one(s, prefix, "--token-key", c->token_key[i]);
    return bad ? -1 : 0;
}
