/* SPDX-License-Identifier: Apache-2.0 */
/*
 * acl.c — parsing --acl-file, matching names against a user's globs, password hashes and the
 * verified-password cache (acl.h has the format and the ownership rules).
 */
#include <errno.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/security/acl.h"

/* The longest file accepted: far more users than anyone writes by hand. */
#define ACL_FILE_MAX (4u << 20)
/* user NAME HASH perm= keys= locks= and the ACL_QUOTA_N max_*= quotas */
#define ACL_LINE_FIELDS (6 + ACL_QUOTA_N)

static const struct {
    const char *name;
    unsigned bits;
} acl_perm_words[] = {{"read", ACL_READ},   {"lock", ACL_LOCK}, {"write", ACL_WRITE},
                      {"admin", ACL_ADMIN}, {"peer", ACL_PEER}, {"revoke", ACL_REVOKE},
                      {"all", ACL_ALL}};

static void acl_err(char *err, size_t errlen, size_t line, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(err, errlen, "line %zu: ", line);
    if (n < 0 || (size_t)n >= errlen)
        return;
    va_start(ap, fmt);
    vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
}

static void user_free(struct acl_user *u)
{
    for (size_t i = 0; i < u->nkeys; i++)
        free(u->keys[i]);
    for (size_t i = 0; i < u->nlocks; i++)
        free(u->locks[i]);
    free(u->keys);
    free(u->locks);
    memset(u, 0, sizeof(*u));
}

void acl_free(struct acl *a)
{
    for (size_t i = 0; i < a->n; i++)
        user_free(&a->users[i]);
    free(a->users);
    memset(a, 0, sizeof(*a));
}

/* Letters, digits and _ . - @ : what a user name may hold (no spaces, no control bytes). */
static bool name_ok(const char *s, size_t n)
{
    if (n == 0 || n > ACL_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-' || ch == '@';
        if (!ok)
            return false;
    }
    return true;
}

/* "read,lock" -> bits; 0 for an unknown or empty word. */
static unsigned parse_perms(const char *v, size_t n)
{
    unsigned bits = 0;
    size_t i = 0;
    while (i <= n) {
        size_t j = i;
        while (j < n && v[j] != ',')
            j++;
        size_t k = 0, nw = sizeof acl_perm_words / sizeof acl_perm_words[0];
        while (k < nw && (strlen(acl_perm_words[k].name) != j - i ||
                          memcmp(acl_perm_words[k].name, v + i, j - i) != 0))
            k++;
        if (k == nw)
            return 0;
        bits |= acl_perm_words[k].bits;
        i = j + 1;
    }
    return bits;
}

/* "a/x*,b" -> a NULL-free array of NUL-terminated globs. 0, or -1 (empty item, no memory). */
static int parse_globs(const char *v, size_t n, char ***out, size_t *nout)
{
    size_t count = 1;
    for (size_t i = 0; i < n; i++)
        count += v[i] == ',';
    char **g = calloc(count, sizeof(*g));
    if (!g)
        return -1;
    size_t i = 0, k = 0;
    while (k < count) {
        size_t j = i;
        while (j < n && v[j] != ',')
            j++;
        if (j == i || !(g[k] = strndup(v + i, j - i)))
            break;
        k++;
        i = j + 1;
    }
    if (k < count) {
        for (size_t x = 0; x < k; x++)
            free(g[x]);
        free(g);
        return -1;
    }
    *out = g;
    *nout = count;
    return 0;
}

struct acl_field {
    const char *p;
    size_t n;
};

/* Split a line (no newline) into whitespace-separated fields; -1 if there are too many. */
static int split_fields(const char *p, size_t n, struct acl_field *f, size_t *nf)
{
    size_t i = 0;
    *nf = 0;
    while (i < n) {
        while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r'))
            i++;
        if (i == n || p[i] == '#')
            break;
        size_t j = i;
        while (j < n && p[j] != ' ' && p[j] != '\t' && p[j] != '\r')
            j++;
        if (*nf == ACL_LINE_FIELDS)
            return -1;
        f[(*nf)++] = (struct acl_field){p + i, j - i};
        i = j;
    }
    return 0;
}

static bool field_is(const struct acl_field *f, const char *prefix)
{
    size_t n = strlen(prefix);
    return f->n >= n && memcmp(f->p, prefix, n) == 0;
}

/* The perm=, keys= and locks= fields of one user; -1 with the reason written. */
const char *const acl_quota_fields[ACL_QUOTA_N] = {"max_sessions", "max_waiters", "max_keys",
                                                   "max_bytes", "max_parked"};

/* A max_*= field: which quota (ACL_QUOTA_*), -1 if x is none. */
static int quota_field(const struct acl_field *x)
{
    for (int q = 0; q < ACL_QUOTA_N; q++) {
        size_t n = strlen(acl_quota_fields[q]);
        if (x->n > n && memcmp(x->p, acl_quota_fields[q], n) == 0 && x->p[n] == '=')
            return q;
    }
    return -1;
}

/* A quota's value: a decimal 1..ACL_QUOTA_MAX (0 would refuse everything: leave it out). */
static int parse_quota(const char *p, size_t n, uint64_t *v)
{
    uint64_t x = 0;
    if (n == 0 || n > 20)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9' || x > (ACL_QUOTA_MAX - (uint64_t)(p[i] - '0')) / 10)
            return -1;
        x = x * 10 + (uint64_t)(p[i] - '0');
    }
    if (x == 0)
        return -1;
    *v = x;
    return 0;
}

static int parse_options(const struct acl_field *f, size_t nf, struct acl_user *u, char *err,
                         size_t errlen, size_t line)
{
    for (size_t i = 3; i < nf; i++) {
        const struct acl_field *x = &f[i];
        int q = quota_field(x);
        if (q >= 0 && !u->quota[q]) {
            size_t n = strlen(acl_quota_fields[q]) + 1;
            if (parse_quota(x->p + n, x->n - n, &u->quota[q])) {
                acl_err(err, errlen, line, "%s= wants a whole number from 1 to %llu",
                        acl_quota_fields[q], (unsigned long long)ACL_QUOTA_MAX);
                return -1;
            }
        } else if (field_is(x, "perm=") && !u->perms) {
            if (!(u->perms = parse_perms(x->p + 5, x->n - 5))) {
                acl_err(err, errlen, line,
                        "perm= wants read, lock, write, admin, peer, revoke or all");
                return -1;
            }
        } else if (field_is(x, "keys=") && !u->keys) {
            if (parse_globs(x->p + 5, x->n - 5, &u->keys, &u->nkeys)) {
                acl_err(err, errlen, line, "keys= wants comma-separated non-empty globs");
                return -1;
            }
        } else if (field_is(x, "locks=") && !u->locks) {
            if (parse_globs(x->p + 6, x->n - 6, &u->locks, &u->nlocks)) {
                acl_err(err, errlen, line, "locks= wants comma-separated non-empty globs");
                return -1;
            }
        } else {
            acl_err(err, errlen, line, "unknown or repeated field '%.*s'",
                    (int)(x->n > 32 ? 32 : x->n), x->p);
            return -1;
        }
    }
    if (!u->perms) {
        acl_err(err, errlen, line, "perm= is missing");
        return -1;
    }
    return 0;
}

/* A HASH field as --hash-password prints it; libsodium rejects anything else when verifying. */
static bool hash_ok(const struct acl_field *h)
{
    return h->n < ACL_HASH_BUF && (field_is(h, "$argon2id$") || field_is(h, "$argon2i$"));
}

/* One non-empty line into a->users[a->n]; -1 with the reason written. */
static int parse_user(const struct acl_field *f, size_t nf, struct acl *a, char *err, size_t errlen,
                      size_t line)
{
    if (!(f[0].n == 4 && memcmp(f[0].p, "user", 4) == 0) || nf < 3) {
        acl_err(err, errlen, line,
                "expected: user NAME HASH perm=P[,P...] [keys=...] [locks=...] [max_*=N ...]");
        return -1;
    }
    if (!name_ok(f[1].p, f[1].n)) {
        acl_err(err, errlen, line, "bad user name (1..%d of A-Z a-z 0-9 _ . - @)", ACL_NAME_MAX);
        return -1;
    }
    if (acl_user_find(a, f[1].p, f[1].n)) {
        acl_err(err, errlen, line, "user %.*s is defined twice", (int)f[1].n, f[1].p);
        return -1;
    }
    if (!hash_ok(&f[2])) {
        acl_err(err, errlen, line, "HASH is not an Argon2 hash from fencelockd --hash-password");
        return -1;
    }
    struct acl_user u = {.perms = 0};
    memcpy(u.name, f[1].p, f[1].n);
    memcpy(u.hash, f[2].p, f[2].n);
    if (parse_options(f, nf, &u, err, errlen, line)) {
        user_free(&u);
        return -1;
    }
    struct acl_user *grown = realloc(a->users, (a->n + 1) * sizeof(*grown));
    if (!grown) {
        user_free(&u);
        acl_err(err, errlen, line, "out of memory");
        return -1;
    }
    a->users = grown;
    a->users[a->n++] = u;
    return 0;
}

/* The digest covers the fields of every rule (comments and spacing do not count). */
static void digest_line(crypto_hash_sha256_state *st, const struct acl_field *f, size_t nf)
{
    for (size_t i = 0; i < nf; i++) {
        crypto_hash_sha256_update(st, (const unsigned char *)f[i].p, f[i].n);
        crypto_hash_sha256_update(st, (const unsigned char *)(i + 1 < nf ? " " : "\n"), 1);
    }
}

int acl_parse(const char *text, size_t len, struct acl *out, char *err, size_t errlen)
{
    crypto_hash_sha256_state st;
    unsigned char sum[crypto_hash_sha256_BYTES];
    struct acl a = {.n = 0};
    size_t line = 0, i = 0;
    if (sodium_init() < 0) {
        snprintf(err, errlen, "libsodium failed to initialise");
        return -1;
    }
    crypto_hash_sha256_init(&st);
    while (i < len) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (text + i)) : len - i;
        struct acl_field f[ACL_LINE_FIELDS];
        size_t nf;
        line++;
        if (memchr(text + i, '\0', n) || split_fields(text + i, n, f, &nf)) {
            acl_err(err, errlen, line, "too many fields or a NUL byte");
            acl_free(&a);
            return -1;
        }
        if (nf && parse_user(f, nf, &a, err, errlen, line)) {
            acl_free(&a);
            return -1;
        }
        digest_line(&st, f, nf);
        i += n + 1;
    }
    crypto_hash_sha256_final(&st, sum);
    sodium_bin2hex(a.digest, sizeof a.digest, sum, ACL_DIGEST_HEX / 2);
    *out = a;
    return 0;
}

int acl_load_file(const char *path, struct acl *out, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char *text = malloc(ACL_FILE_MAX + 1);
    size_t n = text ? fread(text, 1, ACL_FILE_MAX + 1, f) : 0;
    int bad = !text || ferror(f) || n > ACL_FILE_MAX;
    fclose(f);
    if (bad) {
        snprintf(err, errlen, "%s: %s", path,
                 !text              ? "out of memory"
                 : n > ACL_FILE_MAX ? "over 4 MiB"
                                    : "read error");
        free(text);
        return -1;
    }
    char why[256];
    int rc = acl_parse(text, n, out, why, sizeof why);
    if (rc)
        snprintf(err, errlen, "%s: %s", path, why);
    free(text);
    return rc;
}

const struct acl_user *acl_user_find(const struct acl *a, const char *name, size_t len)
{
    for (size_t i = 0; i < a->n; i++)
        if (strlen(a->users[i].name) == len && memcmp(a->users[i].name, name, len) == 0)
            return &a->users[i];
    return NULL;
}

/* Iterative glob with one backtrack point per '*': linear in practice, never recursive, so a
 * hostile pattern cannot blow the stack (patterns come from the operator anyway). */
bool acl_glob_match(const char *g, const char *s, size_t n)
{
    size_t si = 0, star_s = 0;
    const char *star_g = NULL;
    while (si < n) {
        if (*g == '*') {
            star_g = ++g;
            star_s = si;
        } else if (*g == '?' || (*g == '\\' && g[1] && g[1] == s[si]) ||
                   (*g != '\\' && *g && *g == s[si])) {
            g += *g == '\\' ? 2 : 1;
            si++;
        } else if (star_g) {
            g = star_g;
            si = ++star_s;
        } else {
            return false;
        }
    }
    while (*g == '*')
        g++;
    return *g == '\0';
}

static bool any_glob(char *const *globs, size_t n, const char *s, size_t len)
{
    if (!globs)
        return true;
    for (size_t i = 0; i < n; i++)
        if (acl_glob_match(globs[i], s, len))
            return true;
    return false;
}

bool acl_may_key(const struct acl_user *u, const char *key, size_t n)
{
    return any_glob(u->keys, u->nkeys, key, n);
}

bool acl_may_lock(const struct acl_user *u, const char *name, size_t n)
{
    return any_glob(u->locks, u->nlocks, name, n);
}

void acl_perm_names(unsigned perms, char *out, size_t cap)
{
    size_t o = 0;
    out[0] = '\0';
    for (size_t k = 0; k + 1 < sizeof acl_perm_words / sizeof acl_perm_words[0]; k++)
        if (perms & acl_perm_words[k].bits)
            o += (size_t)snprintf(out + o, o < cap ? cap - o : 0, "%s%s", o ? "," : "",
                                  acl_perm_words[k].name);
}

int acl_hash_password(const char *pw, size_t n, char out[ACL_HASH_BUF])
{
    if (sodium_init() < 0)
        return -1;
    return crypto_pwhash_str(out, pw, n, crypto_pwhash_OPSLIMIT_INTERACTIVE,
                             crypto_pwhash_MEMLIMIT_INTERACTIVE);
}

bool acl_verify(const char *hash, const char *pw, size_t n)
{
    return crypto_pwhash_str_verify(hash, pw, n) == 0;
}

int acl_cache_init(struct acl_cache *c)
{
    memset(c, 0, sizeof(*c));
    if (sodium_init() < 0)
        return -1;
    randombytes_buf(c->key, sizeof c->key);
    return 0;
}

/* The stored hash is part of the tag: a password changed in the file stops matching. */
void acl_cache_tag(const struct acl_cache *c, const struct acl_user *u, const char *pw, size_t n,
                   unsigned char tag[ACL_TAG_BYTES])
{
    crypto_generichash_state st;
    crypto_generichash_init(&st, c->key, sizeof c->key, ACL_TAG_BYTES);
    crypto_generichash_update(&st, (const unsigned char *)u->name, strlen(u->name) + 1);
    crypto_generichash_update(&st, (const unsigned char *)u->hash, strlen(u->hash) + 1);
    crypto_generichash_update(&st, (const unsigned char *)pw, n);
    crypto_generichash_final(&st, tag, ACL_TAG_BYTES);
}

bool acl_cache_has(const struct acl_cache *c, const unsigned char tag[ACL_TAG_BYTES])
{
    for (size_t i = 0; i < c->n; i++)
        if (sodium_memcmp(c->tags[i], tag, ACL_TAG_BYTES) == 0)
            return true;
    return false;
}

void acl_cache_put(struct acl_cache *c, const unsigned char tag[ACL_TAG_BYTES])
{
    if (acl_cache_has(c, tag))
        return;
    memcpy(c->tags[c->next], tag, ACL_TAG_BYTES);
    c->next = (c->next + 1) % ACL_CACHE_N;
    if (c->n < ACL_CACHE_N)
        c->n++;
}
