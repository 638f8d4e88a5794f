/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_acl — libFuzzer target for the --acl-file parser and the name globs
 * (src/server/security/acl.c).
 *
 * Input layout: the bytes up to the first 0x00 are the rules text, the rest a name (no 0x00:
 * the whole input is the text and the name is empty). Checks (any failure traps):
 *   - acl_parse either fails with a non-empty "line N: ..." message and an empty struct acl, or
 *     succeeds with users whose names are non-empty, unique and <= ACL_NAME_MAX bytes, perms
 *     inside ACL_ALL and non-zero, and every user findable by acl_user_find;
 *   - parsing is deterministic: a second parse of the same text gives the same digest;
 *   - acl_glob_match agrees with a slow reference matcher (plain recursion, bounded input) for
 *     every keys=/locks= glob against the name, so the linear matcher's backtracking is right.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/security/acl.h"

#define NAME_MAX_REF 64 /* the reference matcher is exponential: keep its inputs short */
#define GLOB_MAX_REF 32

/* A reference matcher by a different method: the glob as tokens, then a table of which
 * (token, byte) suffix pairs match, filled backwards. O(glob * name), no backtracking. */
enum { T_STAR = 256, T_ANY = 257, T_NONE = 258 }; /* below 256: a literal byte */

static bool ref_match(const char *g, const char *s, size_t n)
{
    int tok[GLOB_MAX_REF];
    size_t nt = 0;
    for (; *g; g++)
        if (*g == '*')
            tok[nt++] = T_STAR;
        else if (*g == '?')
            tok[nt++] = T_ANY;
        else if (*g == '\\')
            tok[nt++] = g[1] ? (unsigned char)*++g : T_NONE; /* a trailing '\' matches nothing */
        else
            tok[nt++] = (unsigned char)*g;
    bool m[GLOB_MAX_REF + 1][NAME_MAX_REF + 1]; /* m[i][j]: tok[i..] matches s[j..] */
    for (size_t j = 0; j <= n; j++)
        m[nt][j] = j == n;
    for (size_t i = nt; i-- > 0;)
        for (size_t j = n + 1; j-- > 0;) {
            if (tok[i] == T_STAR)
                m[i][j] = m[i + 1][j] || (j < n && m[i][j + 1]);
            else
                m[i][j] = j < n && tok[i] != T_NONE &&
                          (tok[i] == T_ANY || tok[i] == (unsigned char)s[j]) && m[i + 1][j + 1];
        }
    return m[0][0];
}

static void check_globs(char *const *globs, size_t n, const char *name, size_t len)
{
    for (size_t i = 0; i < n; i++) {
        bool fast = acl_glob_match(globs[i], name, len);
        if (len <= NAME_MAX_REF && strlen(globs[i]) <= GLOB_MAX_REF &&
            fast != ref_match(globs[i], name, len))
            __builtin_trap();
    }
}

static void check_users(const struct acl *a, const char *name, size_t len)
{
    for (size_t i = 0; i < a->n; i++) {
        const struct acl_user *u = &a->users[i];
        size_t nl = strlen(u->name);
        if (nl == 0 || nl > ACL_NAME_MAX || u->perms == 0 || (u->perms & ~(unsigned)ACL_ALL))
            __builtin_trap();
        if (acl_user_find(a, u->name, nl) != u)
            __builtin_trap(); /* not findable, or a duplicate name found first */
        if ((u->keys == NULL) != (u->nkeys == 0) || (u->locks == NULL) != (u->nlocks == 0))
            __builtin_trap();
        check_globs(u->keys, u->nkeys, name, len);
        check_globs(u->locks, u->nlocks, name, len);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    const char *nul = memchr(data, 0, size);
    size_t tlen = nul ? (size_t)(nul - text) : size;
    const char *name = nul ? nul + 1 : "";
    size_t nlen = nul ? size - tlen - 1 : 0;

    struct acl a = {0}, b = {0};
    char err[256] = "";
    if (acl_parse(text, tlen, &a, err, sizeof err) != 0) {
        if (err[0] == '\0' || a.users != NULL || a.n != 0)
            __builtin_trap();
        return 0;
    }
    check_users(&a, name, nlen);
    if (acl_parse(text, tlen, &b, err, sizeof err) != 0 || b.n != a.n ||
        strcmp(a.digest, b.digest) != 0)
        __builtin_trap();
    acl_free(&a);
    acl_free(&b);
    return 0;
}
