/* SPDX-License-Identifier: Apache-2.0 */
/* test_acl.c — --acl-file parsing, globs, password hashes and the verified-password cache
 * (src/server/security/acl.c). What each command needs is its row in
 * src/server/cmd/commands.def (tests/unit/test_cmdtable.c). */
#include <stdlib.h>

#include "server/security/acl.h"
#include "server/cmd/cmd.h"
#include "test.h"

/* A syntactically valid hash (the parser does not verify it). */
#define H                                                                                          \
    "$argon2id$v=19$m=65536,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$"                                       \
    "aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g"

static int parse(const char *text, struct acl *a, char *err)
{
    memset(a, 0, sizeof(*a));
    return acl_parse(text, strlen(text), a, err, 256);
}

TEST(test_acl_file_with_users_comments_and_globs_parses)
{
    struct acl a;
    char err[256] = "";
    const char *text = "# users of app\n"
                       "\n"
                       "user alice " H " perm=read,lock keys=app/*,cfg/? locks=job-*  # ops\n"
                       "   user admin " H " perm=all\r\n"
                       "user w " H " perm=write";
    CHECK(parse(text, &a, err) == 0);
    CHECK_EQ_U64(a.n, 3);
    const struct acl_user *u = acl_user_find(&a, "alice", 5);
    CHECK(u && u->perms == (ACL_READ | ACL_LOCK));
    CHECK_EQ_U64(u->nkeys, 2);
    CHECK(strcmp(u->keys[1], "cfg/?") == 0);
    CHECK(acl_may_key(u, "app/x/y", 7) && acl_may_key(u, "cfg/a", 5));
    CHECK(!acl_may_key(u, "cfg/ab", 6) && !acl_may_key(u, "other", 5));
    CHECK(acl_may_lock(u, "job-1", 5) && !acl_may_lock(u, "jo", 2));
    const struct acl_user *ad = acl_user_find(&a, "admin", 5);
    CHECK(ad && ad->perms == ACL_ALL && ad->keys == NULL && acl_may_key(ad, "anything", 8));
    CHECK(acl_user_find(&a, "alic", 4) == NULL);
    CHECK(strlen(a.digest) == ACL_DIGEST_HEX);
    acl_free(&a);
}

TEST(test_malformed_acl_lines_are_refused_with_their_line_number)
{
    static const struct {
        const char *text;
        const char *err;
    } bad[] = {
        {"user a " H " perm=read\nuser b " H "\n", "line 2: perm= is missing"},
        {"\n\nuser a " H " perm=fly\n", "line 3: perm= wants"},
        {"user a notahash perm=read\n", "line 1: HASH is not"},
        {"usr a " H " perm=read\n", "line 1: expected"},
        {"user a " H " perm=read\nuser a " H " perm=all\n", "line 2: user a is defined twice"},
        {"user a b c " H " perm=read\n", "line 1: HASH"},
        {"user a " H " perm=read keys=\n", "line 1: keys= wants"},
        {"user a " H " perm=read locks=x,,y\n", "line 1: locks= wants"},
        {"user a " H " perm=read perm=all\n", "line 1: unknown or repeated field 'perm=all'"},
        {"user a\xff " H " perm=read\n", "line 1: bad user name"},
        {"user a " H " perm=read keys=a locks=b max_sessions=1 max_waiters=1 max_keys=1 "
         "max_bytes=1 max_parked=1 extra=1\n",
         "line 1: too many fields"},
        {"user a " H " perm=read keys=a locks=b extra=1\n", "line 1: unknown or repeated field"},
        {"user a " H " perm=read max_sessions=0\n", "line 1: max_sessions= wants a whole number"},
        {"user a " H " perm=read max_keys=-1\n", "line 1: max_keys= wants"},
        {"user a " H " perm=read max_bytes=\n", "line 1: max_bytes= wants"},
        {"user a " H " perm=read max_waiters=1x\n", "line 1: max_waiters= wants"},
        {"user a " H " perm=read max_parked=99999999999999999999\n", "line 1: max_parked= wants"},
        {"user a " H " perm=read max_sessions=1 max_sessions=2\n",
         "line 1: unknown or repeated field 'max_sessions=2'"},
        {"user a " H " perm=read max_session=1\n", "line 1: unknown or repeated field"},
        {"user a " H " perm=read,\n", "line 1: perm= wants"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct acl a;
        char err[256] = "";
        if (parse(bad[i].text, &a, err) != -1 || strncmp(err, bad[i].err, strlen(bad[i].err))) {
            fprintf(stderr, "  case %zu: got '%s', want '%s'\n", i, err, bad[i].err);
            CHECK(0);
        }
        CHECK(a.users == NULL && a.n == 0);
    }
}

TEST(test_per_user_quotas_parse_and_default_to_none)
{
    struct acl a;
    char err[256] = "";
    const char *text = "user t1 " H " perm=read,lock max_sessions=3 max_waiters=4 max_keys=5 "
                       "max_bytes=1048576 max_parked=7 keys=t1/*\n"
                       "user t2 " H " max_parked=1 perm=read\n"
                       "user t3 " H " perm=all\n";
    CHECK(parse(text, &a, err) == 0);
    const struct acl_user *t1 = acl_user_find(&a, "t1", 2), *t2 = acl_user_find(&a, "t2", 2),
                          *t3 = acl_user_find(&a, "t3", 2);
    CHECK(t1 && t2 && t3);
    CHECK_EQ_U64(t1->quota[ACL_QUOTA_SESSIONS], 3);
    CHECK_EQ_U64(t1->quota[ACL_QUOTA_WAITERS], 4);
    CHECK_EQ_U64(t1->quota[ACL_QUOTA_KEYS], 5);
    CHECK_EQ_U64(t1->quota[ACL_QUOTA_BYTES], 1048576);
    CHECK_EQ_U64(t1->quota[ACL_QUOTA_PARKED], 7);
    CHECK(t1->nkeys == 1 && t1->perms == (ACL_READ | ACL_LOCK));
    CHECK_EQ_U64(t2->quota[ACL_QUOTA_PARKED], 1);
    CHECK_EQ_U64(t2->quota[ACL_QUOTA_SESSIONS], 0);
    for (int q = 0; q < ACL_QUOTA_N; q++)
        CHECK_EQ_U64(t3->quota[q], 0);
    CHECK(strcmp(acl_quota_fields[ACL_QUOTA_BYTES], "max_bytes") == 0);
    /* the quotas are part of the rules: the digest changes with them */
    struct acl b;
    char d1[ACL_DIGEST_HEX + 1];
    memcpy(d1, a.digest, sizeof d1);
    CHECK(parse("user t3 " H " perm=all max_sessions=9\n", &b, err) == 0);
    CHECK(strcmp(d1, b.digest) != 0);
    acl_free(&b);
    acl_free(&a);
}

TEST(test_acl_digest_ignores_comments_and_spacing_but_not_rules)
{
    struct acl a, b, c;
    char err[256];
    CHECK(parse("user a " H " perm=read\n", &a, err) == 0);
    CHECK(parse("# x\nuser   a\t" H " perm=read   # y\n\n", &b, err) == 0);
    CHECK(parse("user a " H " perm=lock\n", &c, err) == 0);
    int same = strcmp(a.digest, b.digest) == 0, differs = strcmp(a.digest, c.digest) != 0;
    acl_free(&a);
    acl_free(&b);
    acl_free(&c);
    CHECK(same && differs);
}

TEST(test_globs_match_star_question_and_escapes)
{
    CHECK(acl_glob_match("*", "", 0) && acl_glob_match("*", "abc", 3));
    CHECK(acl_glob_match("a*c", "abbbc", 5) && !acl_glob_match("a*c", "abcd", 4));
    CHECK(acl_glob_match("a*b*c", "aXbYbZc", 7) && !acl_glob_match("a*b*c", "acb", 3));
    CHECK(acl_glob_match("??", "xy", 2) && !acl_glob_match("??", "x", 1));
    CHECK(acl_glob_match("a\\*", "a*", 2) && !acl_glob_match("a\\*", "ab", 2));
    CHECK(!acl_glob_match("abc", "ab", 2) && !acl_glob_match("ab", "abc", 3));
    CHECK(acl_glob_match("a*", "a\0b", 3)); /* binary names: the length counts, not a NUL */
    CHECK(!acl_glob_match("a\\", "a\0", 2));
}

TEST(test_password_hash_verifies_only_its_password)
{
    char hash[ACL_HASH_BUF];
    CHECK(acl_hash_password("s3cret", 6, hash) == 0);
    CHECK_STR_PREFIX(hash, "$argon2id$");
    CHECK(acl_verify(hash, "s3cret", 6));
    CHECK(!acl_verify(hash, "s3creT", 6) && !acl_verify(hash, "s3cret", 5));
    CHECK(!acl_verify("garbage", "s3cret", 6));
    struct acl a;
    char text[512], err[256];
    snprintf(text, sizeof text, "user u %s perm=read\n", hash);
    CHECK(parse(text, &a, err) == 0);
    bool ok = acl_verify(a.users[0].hash, "s3cret", 6);
    acl_free(&a);
    CHECK(ok);
}

TEST(test_cache_holds_tags_of_user_hash_and_password_not_the_password)
{
    static struct acl_cache c; /* large: off the stack */
    struct acl_user u = {.name = "u", .hash = "$argon2id$one"};
    unsigned char t1[ACL_TAG_BYTES], t2[ACL_TAG_BYTES], t3[ACL_TAG_BYTES];
    CHECK(acl_cache_init(&c) == 0);
    acl_cache_tag(&c, &u, "pw", 2, t1);
    CHECK(!acl_cache_has(&c, t1));
    acl_cache_put(&c, t1);
    CHECK(acl_cache_has(&c, t1));
    acl_cache_tag(&c, &u, "px", 2, t2);
    CHECK(!acl_cache_has(&c, t2)); /* another password */
    strcpy(u.hash, "$argon2id$two");
    acl_cache_tag(&c, &u, "pw", 2, t3);
    CHECK(!acl_cache_has(&c, t3)); /* the same password under a changed hash */
    for (unsigned i = 0; i < ACL_CACHE_N; i++) {
        char pw[16];
        int n = snprintf(pw, sizeof pw, "p%u", i);
        acl_cache_tag(&c, &u, pw, (size_t)n, t2);
        acl_cache_put(&c, t2);
    }
    CHECK_EQ_U64(c.n, ACL_CACHE_N);
    CHECK(!acl_cache_has(&c, t1)); /* the oldest went first */
}

TEST(test_perm_names_render_the_bits)
{
    char out[64];
    acl_perm_names(ACL_READ | ACL_WRITE, out, sizeof out);
    CHECK(strcmp(out, "read,write") == 0);
    acl_perm_names(ACL_ALL, out, sizeof out);
    CHECK(strcmp(out, "read,lock,write,admin,peer,revoke") == 0);
}

/* peer is what a member's --peer-user needs (CLUSTER.ANNOUNCE, --join's CLUSTER.ADD): a word of
 * its own that grants nothing else, and part of all. */
TEST(test_peer_permission_parses_alone_and_is_part_of_all)
{
    struct acl a;
    char err[256] = "";
    CHECK(parse("user node " H " perm=peer\nuser ops " H " perm=admin\nuser root " H " perm=all\n",
                &a, err) == 0);
    const struct acl_user *p = acl_user_find(&a, "node", 4);
    CHECK(p && p->perms == ACL_PEER);
    CHECK(!(p->perms & (ACL_READ | ACL_LOCK | ACL_WRITE | ACL_ADMIN)));
    const struct acl_user *o = acl_user_find(&a, "ops", 3);
    CHECK(o && !(o->perms & ACL_PEER));
    const struct acl_user *r = acl_user_find(&a, "root", 4);
    CHECK(r && (r->perms & ACL_PEER) && (r->perms & ACL_ADMIN));
    acl_free(&a);
}

TEST(test_wrongpass_delay_doubles_per_failure_up_to_its_cap)
{
    CHECK_EQ_U64(auth_delay_ms(1), AUTH_DELAY_MIN_MS);
    CHECK_EQ_U64(auth_delay_ms(2), 2 * AUTH_DELAY_MIN_MS);
    CHECK_EQ_U64(auth_delay_ms(3), 4 * AUTH_DELAY_MIN_MS);
    CHECK_EQ_U64(auth_delay_ms(40), AUTH_DELAY_MAX_MS);
    CHECK_EQ_U64(auth_delay_ms(4000000000u), AUTH_DELAY_MAX_MS);
}

int main(void)
{
    RUN(test_acl_file_with_users_comments_and_globs_parses);
    RUN(test_malformed_acl_lines_are_refused_with_their_line_number);
    RUN(test_per_user_quotas_parse_and_default_to_none);
    RUN(test_acl_digest_ignores_comments_and_spacing_but_not_rules);
    RUN(test_globs_match_star_question_and_escapes);
    RUN(test_password_hash_verifies_only_its_password);
    RUN(test_cache_holds_tags_of_user_hash_and_password_not_the_password);
    RUN(test_perm_names_render_the_bits);
    RUN(test_peer_permission_parses_alone_and_is_part_of_all);
    RUN(test_wrongpass_delay_doubles_per_failure_up_to_its_cap);
    TEST_MAIN_END();
}
