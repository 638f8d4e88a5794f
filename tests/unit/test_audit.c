/* SPDX-License-Identifier: Apache-2.0 */
/* test_audit.c — the --audit-log line (src/server/security/audit.c): JSON escaping of whatever a
 * client sent (quotes, control bytes, non-UTF-8 bytes), the RFC 3339 time and every field. */
#include <stdlib.h>
#include <unistd.h>

#include "server/security/audit.h"
#include "test.h"

/* audit_json_str of s[n] as a NUL-terminated string in out[cap]. */
static const char *esc(const char *s, size_t n, char *out, size_t cap)
{
    struct buf b;
    buf_init(&b);
    audit_json_str(&b, s, n);
    snprintf(out, cap, "%.*s", (int)b.len, b.p);
    buf_free(&b);
    return out;
}

#define ESC_IS(s, n, want) CHECK(strcmp(esc((s), (n), got, sizeof got), (want)) == 0)

TEST(test_json_escapes_quotes_backslashes_and_control_bytes)
{
    char got[256];
    ESC_IS("plain", 5, "\"plain\"");
    ESC_IS("a\"b\\c", 5, "\"a\\\"b\\\\c\"");
    ESC_IS("l1\nl2\r\t", 7, "\"l1\\nl2\\r\\t\"");
    ESC_IS("\x01\x1f\x7f", 3, "\"\\u0001\\u001f\\u007f\"");
    ESC_IS("a\0b", 3, "\"a\\u0000b\"");
    ESC_IS("", 0, "\"\"");
}

TEST(test_json_keeps_valid_utf8_and_escapes_every_other_high_byte)
{
    char got[256];
    ESC_IS("caf\xc3\xa9", 5, "\"caf\xc3\xa9\"");                       /* é */
    ESC_IS("\xe2\x82\xac", 3, "\"\xe2\x82\xac\"");                     /* € */
    ESC_IS("\xf0\x9f\x94\x92", 4, "\"\xf0\x9f\x94\x92\"");             /* U+1F512 */
    ESC_IS("\xff", 1, "\"\\u00ff\"");                                  /* never UTF-8 */
    ESC_IS("\xc3", 1, "\"\\u00c3\"");                                  /* truncated */
    ESC_IS("\xc3(", 2, "\"\\u00c3(\"");                                /* bad continuation */
    ESC_IS("\xc0\xaf", 2, "\"\\u00c0\\u00af\"");                       /* overlong '/' */
    ESC_IS("\xe0\x80\xaf", 3, "\"\\u00e0\\u0080\\u00af\"");            /* overlong */
    ESC_IS("\xed\xa0\x80", 3, "\"\\u00ed\\u00a0\\u0080\"");            /* a surrogate */
    ESC_IS("\xf4\x90\x80\x80", 4, "\"\\u00f4\\u0090\\u0080\\u0080\""); /* past U+10FFFF */
    ESC_IS("\x80"
           "a",
           2, "\"\\u0080a\""); /* lone continuation */
}

TEST(test_line_has_every_field_in_order_and_ends_in_one_newline)
{
    struct buf b;
    buf_init(&b);
    const char detail[] = "PUT: NOPERM user app has no permission to access key 'o\"\n'";
    audit_format(&b, 1796446839123ull, 7, "app", "127.0.0.1:5000", "permission.denied", detail,
                 sizeof detail - 1);
    CHECK(!buf_failed(&b));
    const char want[] = "{\"time\":\"2026-12-05T05:00:39.123Z\",\"node\":7,\"user\":\"app\","
                        "\"addr\":\"127.0.0.1:5000\",\"event\":\"permission.denied\","
                        "\"detail\":\"PUT: NOPERM user app has no permission to access key "
                        "'o\\\"\\n'\"}\n";
    CHECK(b.len == sizeof want - 1 && memcmp(b.p, want, b.len) == 0);
    CHECK(memchr(b.p, '\n', b.len) == b.p + b.len - 1);
    buf_free(&b);
}

TEST(test_absent_user_address_and_detail_are_empty_strings)
{
    struct buf b;
    buf_init(&b);
    audit_format(&b, 0, 1, NULL, NULL, "acl.reload", NULL, 0);
    const char want[] = "{\"time\":\"1970-01-01T00:00:00.000Z\",\"node\":1,\"user\":\"\","
                        "\"addr\":\"\",\"event\":\"acl.reload\",\"detail\":\"\"}\n";
    CHECK(b.len == sizeof want - 1 && memcmp(b.p, want, b.len) == 0);
    buf_free(&b);
}

/* A write that fails is counted, never fatal; a reopen follows a rename to the new path. */
TEST(test_write_errors_are_counted_and_reopen_follows_the_path)
{
    char dir[] = "/tmp/test_audit_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[128], moved[128];
    snprintf(path, sizeof path, "%s/audit.log", dir);
    snprintf(moved, sizeof moved, "%s/audit.log.1", dir);
    struct audit a = {.fd = -1};
    CHECK(audit_open(&a, path) == 0 && a.fd >= 0);
    struct buf line;
    buf_init(&line);
    buf_append_str(&line, "{}\n");
    CHECK(audit_write(&a, &line) == 0);
    CHECK(rename(path, moved) == 0);
    CHECK(audit_reopen(&a) == 0);
    CHECK(audit_write(&a, &line) == 0);
    CHECK(access(path, F_OK) == 0);
    CHECK_EQ_U64(a.lines, 2);
    CHECK_EQ_U64(a.write_errors, 0);
    audit_close(&a);
    CHECK(audit_write(&a, &line) == -1); /* closed: counted, not fatal */
    CHECK_EQ_U64(a.write_errors, 1);
    struct audit none = {.fd = -1};
    CHECK(audit_open(&none, "/nonexistent-dir/x/audit.log") == -1);
    buf_free(&line);
    unlink(path);
    unlink(moved);
    rmdir(dir);
}

int main(void)
{
    RUN(test_json_escapes_quotes_backslashes_and_control_bytes);
    RUN(test_json_keeps_valid_utf8_and_escapes_every_other_high_byte);
    RUN(test_line_has_every_field_in_order_and_ends_in_one_newline);
    RUN(test_absent_user_address_and_detail_are_empty_strings);
    RUN(test_write_errors_are_counted_and_reopen_follows_the_path);
    TEST_MAIN_END();
}
