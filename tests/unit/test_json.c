/* SPDX-License-Identifier: Apache-2.0 */
/* test_json.c — the JSON writer (common/json.c): exact output of a nested document, commas and
 * nesting kept by the writer, every misuse refused (json_end -1), and random bytes as strings
 * always giving one line of valid JSON that a checker written from RFC 8259 accepts. */
#include <stdlib.h>

#include "common/json.h"
#include "test.h"

/* RFC 8259 string checker: s[*i] is '"'; moves past the closing quote. 0 or -1. */
static int check_string(const char *s, size_t n, size_t *i)
{
    if (*i >= n || s[*i] != '"')
        return -1;
    for ((*i)++; *i < n; (*i)++) {
        unsigned char c = (unsigned char)s[*i];
        if (c == '"') {
            (*i)++;
            return 0;
        }
        if (c < 0x20 || c == '\n')
            return -1;
        if (c == '\\') {
            (*i)++;
            if (*i >= n)
                return -1;
            char e = s[*i];
            if (e == 'u') {
                for (int k = 1; k <= 4; k++)
                    if (*i + (size_t)k >= n || !strchr("0123456789abcdefABCDEF", s[*i + (size_t)k]))
                        return -1;
                *i += 4;
            } else if (!strchr("\"\\/bfnrt", e)) {
                return -1;
            }
        }
    }
    return -1;
}

TEST(test_nested_document_is_written_exactly)
{
    struct buf b;
    struct json j;
    buf_init(&b);
    json_init(&j, &b);
    json_obj(&j);
    json_kv_cstr(&j, "name", "a\"b\\c\n");
    json_kv_u64(&j, "token", 18446744073709551615ULL);
    json_key(&j, "waiters");
    json_arr(&j);
    json_u64(&j, 1);
    json_u64(&j, 2);
    json_obj(&j);
    json_close(&j);
    json_close(&j);
    json_kv_bool(&j, "lockdelay", false);
    json_key(&j, "none");
    json_null(&j);
    json_close(&j);
    CHECK(json_end(&j) == 0);
    const char *want = "{\"name\":\"a\\\"b\\\\c\\n\",\"token\":18446744073709551615,"
                       "\"waiters\":[1,2,{}],\"lockdelay\":false,\"none\":null}";
    CHECK_EQ_U64(b.len, strlen(want));
    CHECK(memcmp(b.p, want, b.len) == 0);
    buf_free(&b);
}

TEST(test_misuse_is_refused)
{
    struct buf b;
    struct json j;
    buf_init(&b);
    /* a value where a key is due */
    json_init(&j, &b);
    json_obj(&j);
    json_u64(&j, 1);
    json_close(&j);
    CHECK(json_end(&j) == -1);
    /* a key in an array */
    buf_reset(&b);
    json_init(&j, &b);
    json_arr(&j);
    json_key(&j, "k");
    json_close(&j);
    CHECK(json_end(&j) == -1);
    /* a key without its value, then close */
    buf_reset(&b);
    json_init(&j, &b);
    json_obj(&j);
    json_key(&j, "k");
    json_close(&j);
    CHECK(json_end(&j) == -1);
    /* unclosed */
    buf_reset(&b);
    json_init(&j, &b);
    json_arr(&j);
    CHECK(json_end(&j) == -1);
    /* close too many, two top-level values, nothing at all */
    buf_reset(&b);
    json_init(&j, &b);
    json_arr(&j);
    json_close(&j);
    json_close(&j);
    CHECK(json_end(&j) == -1);
    buf_reset(&b);
    json_init(&j, &b);
    json_u64(&j, 1);
    json_u64(&j, 2);
    CHECK(json_end(&j) == -1);
    /* an empty container, then another top-level value (found by fuzz_http_head: the first
     * level's flag was the top-level one, reset when that level opened); and an empty
     * container alone is a whole document */
    buf_reset(&b);
    json_init(&j, &b);
    json_obj(&j);
    json_close(&j);
    CHECK(json_end(&j) == 0);
    json_arr(&j);
    json_close(&j);
    json_u64(&j, 1);
    CHECK(json_end(&j) == -1);
    json_init(&j, &b);
    CHECK(json_end(&j) == -1);
    /* too deep */
    buf_reset(&b);
    json_init(&j, &b);
    for (int i = 0; i < JSON_MAX_DEPTH + 2; i++)
        json_arr(&j);
    for (int i = 0; i < JSON_MAX_DEPTH + 2; i++)
        json_close(&j);
    CHECK(json_end(&j) == -1);
    buf_free(&b);
}

TEST(test_random_bytes_always_give_valid_json)
{
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    struct buf b;
    buf_init(&b);
    for (int round = 0; round < 20000; round++) {
        unsigned char in[24];
        size_t n = test_rnd(&x) % sizeof(in);
        for (size_t i = 0; i < n; i++)
            in[i] = (unsigned char)test_rnd(&x);
        struct json j;
        buf_reset(&b);
        json_init(&j, &b);
        json_obj(&j);
        json_kv_str(&j, "k", (const char *)in, n);
        json_close(&j);
        CHECK(json_end(&j) == 0);
        /* {"k":STRING} with STRING valid and nothing raw below 0x20 */
        CHECK(b.len >= 8 && memcmp(b.p, "{\"k\":", 5) == 0 && b.p[b.len - 1] == '}');
        size_t i = 5;
        CHECK(check_string(b.p, b.len, &i) == 0);
        CHECK_EQ_U64(i, b.len - 1);
    }
    buf_free(&b);
}

int main(void)
{
    RUN(test_nested_document_is_written_exactly);
    RUN(test_misuse_is_refused);
    RUN(test_random_bytes_always_give_valid_json);
    TEST_MAIN_END();
}
