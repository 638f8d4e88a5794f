/* SPDX-License-Identifier: Apache-2.0 */
/*
 * acl — the users and permissions of --acl-file: parsing, name globs, password hashes, and the
 * cache of verified passwords. Pure: no event loop, no global state; the only I/O is
 * acl_load_file reading its one file (libsodium's own initialisation is idempotent).
 *
 * File format (docs/security.md), one user a line, '#' starts a comment:
 *   user NAME HASH perm=P[,P...] [keys=GLOB[,GLOB...]] [locks=GLOB[,GLOB...]]
 *        [max_sessions=N] [max_waiters=N] [max_keys=N] [max_bytes=N] [max_parked=N]
 * P is read, lock, write, admin, peer, revoke or all (all includes peer and revoke); HASH is what
 * `fencelockd
 * --hash-password` prints (libsodium crypto_pwhash_str: Argon2id, salted, its cost inside the
 * string). A glob is '*' (any run of bytes), '?' (one byte) and '\' (the next byte as itself); no
 * keys= / locks= means every name. The max_*= fields are the user's own quotas (1..ACL_QUOTA_MAX;
 * absent: only the global ones apply), enforced by src/server/cmd/quota.c.
 *
 * Owns: struct acl owns its users and their glob strings (acl_free frees them); a lookup
 * returns a pointer into it, valid until acl_free. struct acl_cache holds keyed BLAKE2b tags of
 * (user, stored hash, password), never a password; a changed hash no longer matches its tags.
 */
#ifndef FENCELOCK_ACL_H
#define FENCELOCK_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Which command needs which: the perm column of src/server/cmd/commands.def. */
enum acl_perm {
    ACL_READ = 1,  /* reads: GET, LOCK.INFO, ... */
    ACL_LOCK = 2,  /* sessions, locks, semaphores, elections */
    ACL_WRITE = 4, /* PUT, DEL */
    ACL_ADMIN = 8, /* the cluster's administration, INFO, other users' sessions */
    /* what a member sends for itself (--peer-user): CLUSTER.ANNOUNCE and --join's CLUSTER.ADD,
     * nothing else; admin may run those too */
    ACL_PEER = 16,
    /* LOCK.REVOKE: ask the holder of a lock (one of its locks= globs) to let go, and take it at
     * a deadline; admin may too */
    ACL_REVOKE = 32,
    ACL_ALL = 63
};

#define ACL_NAME_MAX 64   /* bytes of a user name */
#define ACL_HASH_BUF 128  /* crypto_pwhash_STRBYTES: a hash string and its NUL */
#define ACL_DIGEST_HEX 16 /* hex digits of the rules' hash CLUSTER.INFO shows */

/* Per-user quotas, indexed like acl_quota_fields (the ACL file's max_*= names). */
enum {
    ACL_QUOTA_SESSIONS,
    ACL_QUOTA_WAITERS,
    ACL_QUOTA_KEYS,
    ACL_QUOTA_BYTES,
    ACL_QUOTA_PARKED,
    ACL_QUOTA_N
};
#define ACL_QUOTA_MAX (1ull << 50)
extern const char *const acl_quota_fields[ACL_QUOTA_N];

struct acl_user {
    char name[ACL_NAME_MAX + 1];
    char hash[ACL_HASH_BUF];
    unsigned perms; /* enum acl_perm bits */
    char **keys;    /* NULL: every key */
    size_t nkeys;
    char **locks; /* NULL: every lock */
    size_t nlocks;
    uint64_t quota[ACL_QUOTA_N]; /* max_*=; 0 = none (only the global quota) */
};

struct acl {
    struct acl_user *users;
    size_t n;
    char digest[ACL_DIGEST_HEX + 1]; /* SHA-256 of the rules (not the comments), hex prefix */
};

/* Parse `len` bytes of rules into *out (empty on entry). 0, or -1 with "line N: why" in err
 * and nothing left allocated. */
int acl_parse(const char *text, size_t len, struct acl *out, char *err, size_t errlen);
/* acl_parse of a whole file; the error also names the path. */
int acl_load_file(const char *path, struct acl *out, char *err, size_t errlen);
void acl_free(struct acl *a);

/* The user called name[len], or NULL. */
const struct acl_user *acl_user_find(const struct acl *a, const char *name, size_t len);
/* Whether s[n] matches the NUL-terminated glob. */
bool acl_glob_match(const char *glob, const char *s, size_t n);
/* Whether the user may name this key / lock (its keys= / locks= globs). */
bool acl_may_key(const struct acl_user *u, const char *key, size_t n);
bool acl_may_lock(const struct acl_user *u, const char *name, size_t n);
/* "read,lock" for the perms bits into out[cap]. */
void acl_perm_names(unsigned perms, char *out, size_t cap);

/* Hash a password for the file (slow on purpose). 0, or -1 (out of memory). */
int acl_hash_password(const char *pw, size_t n, char out[ACL_HASH_BUF]);
/* Whether pw[n] is the password of hash (slow: run it off the event loop). */
bool acl_verify(const char *hash, const char *pw, size_t n);

/* Verified (user, password) pairs: a reconnect storm pays the fast keyed hash, not Argon2id. */
#define ACL_CACHE_N 1024
#define ACL_TAG_BYTES 32
struct acl_cache {
    unsigned char key[32]; /* random per process: a tag says nothing outside it */
    unsigned char tags[ACL_CACHE_N][ACL_TAG_BYTES];
    size_t n, next; /* used entries; the one replaced next when full */
};
/* 0, or -1 if libsodium cannot start. */
int acl_cache_init(struct acl_cache *c);
void acl_cache_tag(const struct acl_cache *c, const struct acl_user *u, const char *pw, size_t n,
                   unsigned char tag[ACL_TAG_BYTES]);
bool acl_cache_has(const struct acl_cache *c, const unsigned char tag[ACL_TAG_BYTES]);
void acl_cache_put(struct acl_cache *c, const unsigned char tag[ACL_TAG_BYTES]);

#endif
