/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the RESP codec: one rule per test. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/resp.h"
#include "test.h"

static const struct resp_limits PROD = {16u << 20, 1024, 64u << 10};
static const struct resp_limits TINY = {16, 4, 32};

/* One parse call's results; the parser lives in the fixture so argv stays valid. */
struct fx {
    struct resp_parser ps;
    int r;
    size_t consumed, argc;
    struct resp_arg *argv;
    char err[128];
};

static void fx_init(struct fx *f, const struct resp_limits *lim)
{
    memset(f, 0, sizeof(*f));
    resp_parser_init(&f->ps, lim);
}

static int fx_parse(struct fx *f, const char *s, size_t n)
{
    f->r = resp_parse(&f->ps, s, n, &f->consumed, &f->argc, &f->argv, f->err, sizeof(f->err));
    return f->r;
}

#define PARSE(f, lit) fx_parse((f), (lit), sizeof(lit) - 1)

static int arg_eq(const struct resp_arg *a, const char *s, size_t n)
{
    return a->len == n && (n == 0 || memcmp(a->p, s, n) == 0);
}

#define ARG_EQ(a, lit) arg_eq((a), (lit), sizeof(lit) - 1)

static int buf_is(const struct buf *b, const char *s, size_t n)
{
    return b->len == n && memcmp(b->p, s, n) == 0;
}

#define BUF_IS(b, lit) buf_is((b), (lit), sizeof(lit) - 1)

/* Parse lit with the given limits and report whether it is a protocol error. */
static int is_error(const struct resp_limits *lim, const char *s, size_t n)
{
    struct fx f;
    fx_init(&f, lim);
    int r = fx_parse(&f, s, n);
    int ok = r == RESP_ERROR && f.consumed == 0 && strncmp(f.err, "Protocol error: ", 16) == 0;
    resp_parser_free(&f.ps);
    return ok;
}

#define IS_ERROR(lim, lit) is_error((lim), (lit), sizeof(lit) - 1)

/* ---- multibulk ---- */

TEST(multibulk_whole)
{
    static const char in[] = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n";
    struct fx f;
    fx_init(&f, &PROD);
    CHECK(PARSE(&f, in) == RESP_OK);
    CHECK_EQ_U64(f.consumed, sizeof(in) - 1);
    CHECK_EQ_U64(f.argc, 3);
    CHECK(ARG_EQ(&f.argv[0], "SET") && ARG_EQ(&f.argv[1], "k") && ARG_EQ(&f.argv[2], "value"));
    resp_parser_free(&f.ps);
}

TEST(multibulk_every_prefix_is_incomplete)
{
    static const char in[] = "*2\r\n$4\r\nLOCK\r\n$10\r\nabcdefghij\r\n";
    struct fx f;
    fx_init(&f, &PROD);
    for (size_t n = 0; n < sizeof(in) - 1; n++) {
        /* a fresh exact-size copy, so ASan catches any read past the prefix */
        char *p = malloc(n ? n : 1);
        memcpy(p, in, n);
        int r = fx_parse(&f, p, n);
        free(p);
        CHECK(r == RESP_INCOMPLETE);
        CHECK_EQ_U64(f.consumed, 0);
    }
    CHECK(PARSE(&f, in) == RESP_OK);
    CHECK_EQ_U64(f.consumed, sizeof(in) - 1);
    CHECK(ARG_EQ(&f.argv[0], "LOCK") && ARG_EQ(&f.argv[1], "abcdefghij"));
    resp_parser_free(&f.ps);
}

TEST(multibulk_fed_byte_by_byte_through_moving_buffer)
{
    static const char in[] = "*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n";
    struct fx f;
    fx_init(&f, &PROD);
    struct buf b;
    buf_init(&b);
    int r = RESP_INCOMPLETE;
    for (size_t i = 0; i < sizeof(in) - 1 && r == RESP_INCOMPLETE; i++) {
        CHECK(buf_append(&b, &in[i], 1) == 0);
        r = fx_parse(&f, b.p, b.len);
    }
    CHECK(r == RESP_OK);
    CHECK_EQ_U64(f.consumed, sizeof(in) - 1);
    CHECK(ARG_EQ(&f.argv[0], "GET") && ARG_EQ(&f.argv[1], "key"));
    buf_free(&b);
    resp_parser_free(&f.ps);
}

TEST(multibulk_binary_safe)
{
    static const char in[] = "*1\r\n$7\r\na\r\n\0b\r\n\r\n";
    struct fx f;
    fx_init(&f, &PROD);
    CHECK(PARSE(&f, in) == RESP_OK);
    CHECK_EQ_U64(f.argc, 1);
    CHECK(ARG_EQ(&f.argv[0], "a\r\n\0b\r\n"));
    CHECK_EQ_U64(f.consumed, sizeof(in) - 1);
    resp_parser_free(&f.ps);
}

TEST(multibulk_empty_bulk)
{
    struct fx f;
    fx_init(&f, &PROD);
    CHECK(PARSE(&f, "*2\r\n$0\r\n\r\n$1\r\nx\r\n") == RESP_OK);
    CHECK_EQ_U64(f.argc, 2);
    CHECK(ARG_EQ(&f.argv[0], "") && ARG_EQ(&f.argv[1], "x"));
    resp_parser_free(&f.ps);
}

TEST(multibulk_zero_count_is_empty_command)
{
    struct fx f;
    fx_init(&f, &PROD);
    CHECK(PARSE(&f, "*0\r\nPING\r\n") == RESP_OK);
    CHECK_EQ_U64(f.argc, 0);
    CHECK_EQ_U64(f.consumed, 4);
    resp_parser_free(&f.ps);
}

TEST(multibulk_negative_count_is_empty_command)
{
    struct fx f;
    fx_init(&f, &PROD);
    CHECK(PARSE(&f, "*-1\r\n") == RESP_OK);
    CHECK_EQ_U64(f.argc, 0);
    CHECK_EQ_U64(f.consumed, 5);
    resp_parser_free(&f.ps);
}

TEST(multibulk_large_bulk_in_small_reads)
{
    size_t n = 1u << 20;
    char hdr[32];
    int h = snprintf(hdr, sizeof(hdr), "*1\r\n$%zu\r\n", n);
    size_t total = (size_t)h + n + 2;
    char *in = malloc(total);
    memcpy(in, hdr, (size_t)h);
    memset(in + h, 'z', n);
    memcpy(in + h + n, "\r\n", 2);
    struct fx f;
    fx_init(&f, &PROD);
    size_t have = 0;
    int r = RESP_INCOMPLETE;
    while (r == RESP_INCOMPLETE && have < total) {
        have += have + 1000 < total ? 1000 : total - have;
        r = fx_parse(&f, in, have);
    }
    CHECK(r == RESP_OK);
    CHECK_EQ_U64(have, total);
    CHECK_EQ_U64(f.argv[0].len, n);
    CHECK(f.argv[0].p == in + h);
    free(in);
    resp_parser_free(&f.ps);
}

TEST(argv_grows_and_is_reused)
{
    struct buf b;
    buf_init(&b);
    CHECK(resp_w_array(&b, 100) == 0);
    for (int i = 0; i < 100; i++)
        CHECK(resp_w_bulk(&b, "ab", 2) == 0);
    struct fx f;
    fx_init(&f, &PROD);
    CHECK(fx_parse(&f, b.p, b.len) == RESP_OK);
    CHECK_EQ_U64(f.argc, 100);
    CHECK(ARG_EQ(&f.argv[99], "ab"));
    CHECK(PARSE(&f, "*1\r\n$1\r\nq\r\n") == RESP_OK);
    CHECK_EQ_U64(f.argc, 1);
    CHECK(ARG_EQ(&f.argv[0], "q"));
    buf_free(&b);
    resp_parser_free(&f.ps);
}

/* ---- pipelining ---- */

TEST(pipelined_commands_in_one_buffer)
{
    static const char in[] =
        "*1\r\n$4\r\nPING\r\nECHO hi\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$1";
    struct fx f;
    fx_init(&f, &PROD);
    size_t off = 0, len = sizeof(in) - 1;
    CHECK(fx_parse(&f, in + off, len - off) == RESP_OK && f.argc == 1);
    CHECK(ARG_EQ(&f.argv[0], "PING"));
    off += f.consumed;
    CHECK(fx_parse(&f, in + off, len - off) == RESP_OK && f.argc == 2);
    CHECK(ARG_EQ(&f.argv[0], "ECHO") && ARG_EQ(&f.argv[1], "hi"));
    off += f.consumed;
    CHECK(fx_parse(&f, in + off, len - off) == RESP_OK && f.argc == 2);
    CHECK(ARG_EQ(&f.argv[0], "GET") && ARG_EQ(&f.argv[1], "k"));
    off += f.consumed;
    CHECK(fx_parse(&f, in + off, len - off) == RESP_INCOMPLETE);
    CHECK_EQ_U64(len - off, 6);
    resp_parser_free(&f.ps);
}

/* ---- inline ---- */

TEST(inline_crlf)
{
    struct fx f;
    fx_init(&f, &PROD);
    CHECK(PARSE(&f, "PING\r\n") == RESP_OK);
    CHECK_EQ_U64(f.argc, 1);
    CHECK_EQ_U64(f.consumed, 6);
    CHECK(ARG_EQ(&f.argv[0], "PING"));
    resp_parser_free(&f.ps);
}

TEST(inline_lf_alone_ends_line)
{
    struct fx f;
    fx_init(&f, &PROD);
    CHECK(PARSE(&f, "PING\nPING\n") == RESP_OK);
    CHECK_EQ_U64(f.consumed, 5);
    CHECK(ARG_EQ(&f.argv[0], "PING"));
    resp_parser_free(&f.ps);
}

TEST(inline_without_newline_is_incomplete)
{
    struct fx f;
    fx_init(&f, &PROD);
    CHECK(PARSE(&f, "PING") == RESP_INCOMPLETE);
    CHECK_EQ_U64(f.consumed, 0);
    CHECK(PARSE(&f, "PING\r") == RESP_INCOMPLETE);
    resp_parser_free(&f.ps);
}

TEST(inline_splits_on_spaces_and_tabs)
{
    struct fx f;
    fx_init(&f, &PROD);
    CHECK(PARSE(&f, "  SET \t k\t\tv  \r\n") == RESP_OK);
    CHECK_EQ_U64(f.argc, 3);
    CHECK(ARG_EQ(&f.argv[0], "SET") && ARG_EQ(&f.argv[1], "k") && ARG_EQ(&f.argv[2], "v"));
    resp_parser_free(&f.ps);
}

TEST(inline_plain_words_borrow_input)
{
    static const char in[] = "GET key\r\n";
    struct fx f;
    fx_init(&f, &PROD);
    CHECK(PARSE(&f, in) == RESP_OK);
    CHECK(f.argv[0].p == in && f.argv[1].p == in + 4);
    resp_parser_free(&f.ps);
}

TEST(inline_empty_line_is_empty_command)
{
    struct fx f;
    fx_init(&f, &PROD);
    CHECK(PARSE(&f, " \t\r\n") == RESP_OK);
    CHECK_EQ_U64(f.argc, 0);
    CHECK_EQ_U64(f.consumed, 4);
    resp_parser_free(&f.ps);
}

TEST(inline_double_quotes_and_escapes)
{
    struct fx f;
    fx_init(&f, &PROD);
    CHECK(PARSE(&f, "SET \"a b\\x41\\x7a\\n\\t\\\"\\\\\" \"\"\r\n") == RESP_OK);
    CHECK_EQ_U64(f.argc, 3);
    CHECK(ARG_EQ(&f.argv[1], "a bAz\n\t\"\\"));
    CHECK(ARG_EQ(&f.argv[2], ""));
    resp_parser_free(&f.ps);
}

TEST(inline_single_quotes)
{
    struct fx f;
    fx_init(&f, &PROD);
    CHECK(PARSE(&f, "PUT 'it\\'s \"raw\" \\n' x\n") == RESP_OK);
    CHECK_EQ_U64(f.argc, 3);
    CHECK(ARG_EQ(&f.argv[1], "it's \"raw\" \\n"));
    CHECK(ARG_EQ(&f.argv[2], "x"));
    resp_parser_free(&f.ps);
}

TEST(inline_quote_inside_word_joins)
{
    struct fx f;
    fx_init(&f, &PROD);
    CHECK(PARSE(&f, "ab\"c d\" e\n") == RESP_OK);
    CHECK_EQ_U64(f.argc, 2);
    CHECK(ARG_EQ(&f.argv[0], "abc d"));
    resp_parser_free(&f.ps);
}

TEST(inline_unbalanced_quotes_error)
{
    CHECK(IS_ERROR(&PROD, "SET \"abc\r\n"));
    CHECK(IS_ERROR(&PROD, "SET 'abc\r\n"));
}

TEST(inline_closing_quote_must_end_word)
{
    CHECK(IS_ERROR(&PROD, "SET \"abc\"def\r\n"));
}

/* ---- limits ---- */

TEST(limit_max_args_multibulk)
{
    struct fx f;
    fx_init(&f, &TINY);
    CHECK(PARSE(&f, "*4\r\n") == RESP_INCOMPLETE);
    resp_parser_free(&f.ps);
    CHECK(IS_ERROR(&TINY, "*5\r\n"));
}

TEST(limit_max_args_inline)
{
    struct fx f;
    fx_init(&f, &TINY);
    CHECK(PARSE(&f, "a b c d\r\n") == RESP_OK && f.argc == 4);
    resp_parser_free(&f.ps);
    CHECK(IS_ERROR(&TINY, "a b c d e\r\n"));
}

TEST(limit_max_bulk_rejected_before_body)
{
    struct fx f;
    fx_init(&f, &TINY);
    CHECK(PARSE(&f, "*1\r\n$16\r\n") == RESP_INCOMPLETE);
    resp_parser_free(&f.ps);
    CHECK(IS_ERROR(&TINY, "*1\r\n$17\r\n"));
}

TEST(limit_max_inline_line_at_limit_ok)
{
    char line[32 + 2];
    memset(line, 'x', 32);
    memcpy(line + 32, "\r\n", 2);
    struct fx f;
    fx_init(&f, &TINY);
    CHECK(fx_parse(&f, line, sizeof(line)) == RESP_OK);
    CHECK_EQ_U64(f.argv[0].len, 32);
    resp_parser_free(&f.ps);
}

TEST(limit_max_inline_line_over_limit_error)
{
    char line[33 + 1];
    memset(line, 'x', 33);
    line[33] = '\n';
    CHECK(is_error(&TINY, line, sizeof(line)));
}

TEST(limit_max_inline_without_newline_error)
{
    char line[34];
    memset(line, 'x', sizeof(line));
    struct fx f;
    fx_init(&f, &TINY);
    CHECK(fx_parse(&f, line, 33) == RESP_INCOMPLETE);
    resp_parser_free(&f.ps);
    CHECK(is_error(&TINY, line, sizeof(line)));
}

/* ---- malformed input ---- */

TEST(error_count_not_a_number)
{
    CHECK(IS_ERROR(&PROD, "*abc\r\n"));
}

TEST(error_count_without_digits)
{
    CHECK(IS_ERROR(&PROD, "*\r\n"));
}

TEST(error_count_overflow)
{
    CHECK(IS_ERROR(&PROD, "*99999999999999999999\r\n"));
}

TEST(error_count_lf_without_cr)
{
    CHECK(IS_ERROR(&PROD, "*1\n$1\r\na\r\n"));
}

TEST(error_bulk_negative_length)
{
    CHECK(IS_ERROR(&PROD, "*1\r\n$-5\r\n"));
    CHECK(IS_ERROR(&PROD, "*1\r\n$-1\r\n"));
}

TEST(error_bulk_length_overflow)
{
    CHECK(IS_ERROR(&PROD, "*1\r\n$9223372036854775808\r\n"));
}

TEST(error_bulk_length_not_a_number)
{
    CHECK(IS_ERROR(&PROD, "*1\r\n$3x\r\nabc\r\n"));
}

TEST(error_bulk_missing_crlf)
{
    CHECK(IS_ERROR(&PROD, "*1\r\n$3\r\nabcXY"));
    CHECK(IS_ERROR(&PROD, "*1\r\n$3\r\nabc\rX"));
    CHECK(IS_ERROR(&PROD, "*1\r\n$3\r\nabcd"));
}

TEST(error_wrong_type_in_multibulk)
{
    struct fx f;
    fx_init(&f, &PROD);
    CHECK(PARSE(&f, "*1\r\n+x\r\n") == RESP_ERROR);
    CHECK(strcmp(f.err, "Protocol error: expected '$', got '+'") == 0);
    resp_parser_free(&f.ps);
}

TEST(error_message_for_bad_bulk_length)
{
    struct fx f;
    fx_init(&f, &PROD);
    CHECK(PARSE(&f, "*1\r\n$-5\r\n") == RESP_ERROR);
    CHECK(strcmp(f.err, "Protocol error: invalid bulk length") == 0);
    resp_parser_free(&f.ps);
}

TEST(error_without_err_buffer_is_safe)
{
    struct resp_parser ps;
    resp_parser_init(&ps, &PROD);
    size_t consumed, argc;
    struct resp_arg *argv;
    CHECK(resp_parse(&ps, "*x\r\n", 4, &consumed, &argc, &argv, NULL, 0) == RESP_ERROR);
    resp_parser_free(&ps);
}

/* ---- writers ---- */

TEST(w_simple)
{
    struct buf b;
    buf_init(&b);
    CHECK(resp_w_simple(&b, "OK") == 0);
    CHECK(BUF_IS(&b, "+OK\r\n"));
    buf_free(&b);
}

TEST(w_error_replaces_crlf)
{
    struct buf b;
    buf_init(&b);
    CHECK(resp_w_error(&b, "ERR bad\r\nthing\n") == 0);
    CHECK(BUF_IS(&b, "-ERR bad  thing \r\n"));
    buf_free(&b);
}

TEST(w_errorf_short_and_long)
{
    struct buf b;
    buf_init(&b);
    CHECK(resp_w_errorf(&b, "ERR %s %d", "x\ny", 7) == 0);
    CHECK(BUF_IS(&b, "-ERR x y 7\r\n"));
    buf_reset(&b);
    char big[1000];
    memset(big, 'q', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    CHECK(resp_w_errorf(&b, "ERR %s", big) == 0);
    CHECK_EQ_U64(b.len, 1 + 4 + 999 + 2);
    CHECK(memcmp(b.p + b.len - 3, "q\r\n", 3) == 0);
    buf_free(&b);
}

TEST(w_int_edges)
{
    struct buf b;
    buf_init(&b);
    CHECK(resp_w_int(&b, 0) == 0 && resp_w_int(&b, -1) == 0 && resp_w_int(&b, 42) == 0);
    CHECK(resp_w_int(&b, INT64_MAX) == 0 && resp_w_int(&b, INT64_MIN) == 0);
    CHECK(BUF_IS(&b, ":0\r\n:-1\r\n:42\r\n:9223372036854775807\r\n:-9223372036854775808\r\n"));
    buf_free(&b);
}

TEST(w_uint_edges)
{
    struct buf b;
    buf_init(&b);
    CHECK(resp_w_uint(&b, 0) == 0 && resp_w_uint(&b, UINT64_MAX) == 0);
    CHECK(BUF_IS(&b, ":0\r\n:18446744073709551615\r\n"));
    buf_free(&b);
}

TEST(w_bulk)
{
    struct buf b;
    buf_init(&b);
    CHECK(resp_w_bulk(&b, "a\r\n\0", 4) == 0 && resp_w_bulk(&b, NULL, 0) == 0);
    CHECK(resp_w_bulk_str(&b, "hello") == 0);
    CHECK(BUF_IS(&b, "$4\r\na\r\n\0\r\n$0\r\n\r\n$5\r\nhello\r\n"));
    buf_free(&b);
}

TEST(w_nil_resp2_and_resp3)
{
    struct buf b;
    buf_init(&b);
    CHECK(resp_w_nil(&b, 2) == 0 && resp_w_nil(&b, 3) == 0);
    CHECK(BUF_IS(&b, "$-1\r\n_\r\n"));
    buf_free(&b);
}

TEST(w_array)
{
    struct buf b;
    buf_init(&b);
    CHECK(resp_w_array(&b, 0) == 0 && resp_w_array(&b, 1234) == 0);
    CHECK(BUF_IS(&b, "*0\r\n*1234\r\n"));
    buf_free(&b);
}

TEST(w_map_resp2_and_resp3)
{
    struct buf b;
    buf_init(&b);
    CHECK(resp_w_map(&b, 3, 7) == 0 && resp_w_map(&b, 2, 7) == 0);
    CHECK(BUF_IS(&b, "%7\r\n*14\r\n"));
    buf_free(&b);
}

TEST(w_verbatim_resp2_and_resp3)
{
    struct buf b;
    buf_init(&b);
    CHECK(resp_w_verbatim(&b, 3, "# Server\r\n", 10) == 0);
    CHECK(resp_w_verbatim(&b, 2, "ab", 2) == 0);
    CHECK(BUF_IS(&b, "=14\r\ntxt:# Server\r\n\r\n$2\r\nab\r\n"));
    buf_free(&b);
}

TEST(writers_round_trip_through_parser)
{
    struct buf b;
    buf_init(&b);
    CHECK(resp_w_array(&b, 2) == 0 && resp_w_bulk_str(&b, "PING") == 0);
    CHECK(resp_w_bulk(&b, "x\r\ny", 4) == 0);
    struct fx f;
    fx_init(&f, &PROD);
    CHECK(fx_parse(&f, b.p, b.len) == RESP_OK);
    CHECK(f.argc == 2 && ARG_EQ(&f.argv[1], "x\r\ny"));
    buf_free(&b);
    resp_parser_free(&f.ps);
}

/* ---- argument helpers ---- */

static int u64_ok(const char *s, uint64_t want)
{
    uint64_t v = 12345;
    return resp_parse_u64(s, strlen(s), &v) == 0 && v == want;
}

static int u64_bad(const char *s)
{
    uint64_t v = 12345;
    return resp_parse_u64(s, strlen(s), &v) == -1 && v == 12345;
}

TEST(u64_accepts_plain_decimal)
{
    CHECK(u64_ok("0", 0));
    CHECK(u64_ok("42", 42));
    CHECK(u64_ok("01", 1));
    CHECK(u64_ok("9223372036854775807", INT64_MAX));
}

TEST(u64_rejects_empty)
{
    CHECK(u64_bad(""));
}

TEST(u64_rejects_signs)
{
    CHECK(u64_bad("-1"));
    CHECK(u64_bad("+1"));
    CHECK(u64_bad("-0"));
}

TEST(u64_rejects_spaces)
{
    CHECK(u64_bad(" 1"));
    CHECK(u64_bad("1 "));
    CHECK(u64_bad("1a"));
}

TEST(u64_rejects_overflow)
{
    CHECK(u64_bad("9223372036854775808"));
    CHECK(u64_bad("18446744073709551616"));
    CHECK(u64_bad("99999999999999999999999"));
}

TEST(u64_respects_length)
{
    uint64_t v;
    CHECK(resp_parse_u64("123x", 3, &v) == 0 && v == 123);
}

TEST(arg_is_case_insensitive)
{
    struct resp_arg a = {"sEsSiOn.OpEn", 12};
    CHECK(resp_arg_is(&a, "SESSION.OPEN"));
    CHECK(resp_arg_is(&a, "session.open"));
}

TEST(arg_is_needs_exact_length)
{
    struct resp_arg a = {"LOCKX", 4};
    CHECK(resp_arg_is(&a, "lock"));
    CHECK(!resp_arg_is(&a, "loc"));
    CHECK(!resp_arg_is(&a, "LOCKX"));
}

/* ---- the sticky error flag and finished replies (a buffer cap injects the allocation failure) */

TEST(buf_failure_sticks_until_reset)
{
    struct buf b;
    buf_init(&b);
    buf_set_max(&b, 8);
    int ok = buf_append_str(&b, "12345") == 0 && !buf_failed(&b);
    ok = ok && buf_append_str(&b, "6789") == -1 && buf_failed(&b) && BUF_IS(&b, "12345");
    /* later appends fail although they would fit, and change nothing */
    ok = ok && buf_append_str(&b, "a") == -1 && buf_append(&b, "", 0) == -1;
    ok = ok && buf_printf(&b, "%d", 7) == -1 && buf_put_u8(&b, 1) == -1 && BUF_IS(&b, "12345");
    buf_reset(&b);
    ok = ok && !buf_failed(&b) && buf_append_str(&b, "abc") == 0 && BUF_IS(&b, "abc");
    buf_free(&b);
    CHECK(ok);
}

TEST(buf_truncate_keeps_the_complete_prefix_and_clears_the_flag)
{
    struct buf b;
    buf_init(&b);
    buf_set_max(&b, 6);
    int ok = buf_append_str(&b, "abc") == 0 && buf_append_str(&b, "defg") == -1;
    buf_truncate(&b, 2);
    ok = ok && !buf_failed(&b) && BUF_IS(&b, "ab") && buf_append_str(&b, "cd") == 0;
    ok = ok && BUF_IS(&b, "abcd");
    buf_free(&b);
    CHECK(ok);
}

TEST(writers_share_the_flag_so_a_failed_reply_writes_nothing_more)
{
    struct buf b;
    buf_init(&b);
    buf_set_max(&b, 12);
    int ok = resp_w_map(&b, 2, 2) == 0;                    /* *4\r\n */
    ok = ok && resp_w_bulk_str(&b, "holder") == -1;        /* $6\r\nholder\r\n does not fit */
    ok = ok && buf_failed(&b) && resp_w_uint(&b, 1) == -1; /* ":1\r\n" would fit: refused */
    ok = ok && resp_w_nil(&b, 2) == -1 && resp_w_simple(&b, "OK") == -1;
    ok = ok && BUF_IS(&b, "*4\r\n");
    buf_free(&b);
    CHECK(ok);
}

TEST(a_reply_whose_buffer_failed_becomes_one_oom_error)
{
    struct buf b;
    buf_init(&b);
    resp_w_simple(&b, "OK"); /* an earlier reply, complete: it must survive */
    size_t start = b.len;
    buf_set_max(&b, 40);
    resp_w_map(&b, 3, 2);
    resp_w_bulk_str(&b, "holder");
    resp_w_uint(&b, 7);
    resp_w_bulk_str(&b, "a name long enough to pass the cap");
    resp_w_uint(&b, 8);
    int ok = buf_failed(&b) && resp_w_finish(&b, start) == 1 && !buf_failed(&b);
    ok = ok && BUF_IS(&b, "+OK\r\n-ERR out of memory\r\n");
    start = b.len; /* the next reply is written normally */
    buf_set_max(&b, 0);
    resp_w_uint(&b, 9);
    ok = ok && resp_w_finish(&b, start) == 0 && BUF_IS(&b, "+OK\r\n-ERR out of memory\r\n:9\r\n");
    buf_free(&b);
    CHECK(ok);
}

TEST(a_finished_reply_without_failure_is_left_alone)
{
    struct buf b;
    buf_init(&b);
    resp_w_array(&b, 1);
    resp_w_bulk_str(&b, "x");
    int ok = resp_w_finish(&b, 0) == 0 && BUF_IS(&b, "*1\r\n$1\r\nx\r\n");
    buf_free(&b);
    CHECK(ok);
}

TEST(when_not_even_the_oom_error_fits_the_reply_is_dropped_and_reported)
{
    struct buf b;
    buf_init(&b);
    resp_w_simple(&b, "OK");
    size_t start = b.len;
    buf_set_max(&b, 12); /* "-ERR out of memory\r\n" is 20 bytes */
    resp_w_bulk_str(&b, "a value that does not fit");
    int ok = buf_failed(&b) && resp_w_finish(&b, start) == -1;
    ok = ok && !buf_failed(&b) && BUF_IS(&b, "+OK\r\n");
    buf_free(&b);
    CHECK(ok);
}

TEST(errorf_of_an_oversized_message_fails_like_any_writer)
{
    struct buf b;
    buf_init(&b);
    buf_set_max(&b, 64);
    char big[300];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = 0;
    int ok = resp_w_errorf(&b, "ERR %s", big) == -1 && buf_failed(&b) && b.len == 0;
    ok = ok && resp_w_finish(&b, 0) == 1 && BUF_IS(&b, "-ERR out of memory\r\n");
    buf_free(&b);
    CHECK(ok);
}

int main(void)
{
    RUN(multibulk_whole);
    RUN(multibulk_every_prefix_is_incomplete);
    RUN(multibulk_fed_byte_by_byte_through_moving_buffer);
    RUN(multibulk_binary_safe);
    RUN(multibulk_empty_bulk);
    RUN(multibulk_zero_count_is_empty_command);
    RUN(multibulk_negative_count_is_empty_command);
    RUN(multibulk_large_bulk_in_small_reads);
    RUN(argv_grows_and_is_reused);
    RUN(pipelined_commands_in_one_buffer);
    RUN(inline_crlf);
    RUN(inline_lf_alone_ends_line);
    RUN(inline_without_newline_is_incomplete);
    RUN(inline_splits_on_spaces_and_tabs);
    RUN(inline_plain_words_borrow_input);
    RUN(inline_empty_line_is_empty_command);
    RUN(inline_double_quotes_and_escapes);
    RUN(inline_single_quotes);
    RUN(inline_quote_inside_word_joins);
    RUN(inline_unbalanced_quotes_error);
    RUN(inline_closing_quote_must_end_word);
    RUN(limit_max_args_multibulk);
    RUN(limit_max_args_inline);
    RUN(limit_max_bulk_rejected_before_body);
    RUN(limit_max_inline_line_at_limit_ok);
    RUN(limit_max_inline_line_over_limit_error);
    RUN(limit_max_inline_without_newline_error);
    RUN(error_count_not_a_number);
    RUN(error_count_without_digits);
    RUN(error_count_overflow);
    RUN(error_count_lf_without_cr);
    RUN(error_bulk_negative_length);
    RUN(error_bulk_length_overflow);
    RUN(error_bulk_length_not_a_number);
    RUN(error_bulk_missing_crlf);
    RUN(error_wrong_type_in_multibulk);
    RUN(error_message_for_bad_bulk_length);
    RUN(error_without_err_buffer_is_safe);
    RUN(w_simple);
    RUN(w_error_replaces_crlf);
    RUN(w_errorf_short_and_long);
    RUN(w_int_edges);
    RUN(w_uint_edges);
    RUN(w_bulk);
    RUN(w_nil_resp2_and_resp3);
    RUN(w_array);
    RUN(w_map_resp2_and_resp3);
    RUN(w_verbatim_resp2_and_resp3);
    RUN(writers_round_trip_through_parser);
    RUN(u64_accepts_plain_decimal);
    RUN(u64_rejects_empty);
    RUN(u64_rejects_signs);
    RUN(u64_rejects_spaces);
    RUN(u64_rejects_overflow);
    RUN(u64_respects_length);
    RUN(arg_is_case_insensitive);
    RUN(arg_is_needs_exact_length);
    RUN(buf_failure_sticks_until_reset);
    RUN(buf_truncate_keeps_the_complete_prefix_and_clears_the_flag);
    RUN(writers_share_the_flag_so_a_failed_reply_writes_nothing_more);
    RUN(a_reply_whose_buffer_failed_becomes_one_oom_error);
    RUN(a_finished_reply_without_failure_is_left_alone);
    RUN(when_not_even_the_oom_error_fits_the_reply_is_dropped_and_reported);
    RUN(errorf_of_an_oversized_message_fails_like_any_writer);
    TEST_MAIN_END();
}
