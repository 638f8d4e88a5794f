/* SPDX-License-Identifier: Apache-2.0 */
/* test_text.c — the text policies of src/common/text.c: the UTF-8 validator against a decoder
 * written from RFC 3629 over every 1-, 2- and 3-byte input, the JSON escaper and the
 * printable-name function for every byte and every class of sequence (and its TEXT_HEX form,
 * the server's error replies, byte for byte as before), and the length bound that never cuts
 * an escape. */
#include <stdio.h>

#include "common/text.h"
#include "test.h"

/* RFC 3629 by the book: decode the code point, then refuse overlongs, surrogates and anything
 * past U+10FFFF. The length of the valid sequence at s[0..n), or 0. */
static size_t ref_utf8_len(const unsigned char *s, size_t n)
{
    if (n == 0)
        return 0;
    unsigned c = s[0], cp, min;
    size_t len;
    if (c < 0x80)
        return 1;
    if ((c & 0xe0) == 0xc0)
        len = 2, cp = c & 0x1f, min = 0x80;
    else if ((c & 0xf0) == 0xe0)
        len = 3, cp = c & 0x0f, min = 0x800;
    else if ((c & 0xf8) == 0xf0)
        len = 4, cp = c & 0x07, min = 0x10000;
    else
        return 0;
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

TEST(test_utf8_len_agrees_with_rfc3629_on_every_short_input)
{
    unsigned char s[4];
    size_t bad = 0;
    for (unsigned a = 0; a < 256; a++) {
        s[0] = (unsigned char)a;
        bad += text_utf8_len(s, 1) != ref_utf8_len(s, 1);
        for (unsigned b = 0; b < 256; b++) {
            s[1] = (unsigned char)b;
            bad += text_utf8_len(s, 2) != ref_utf8_len(s, 2);
            for (unsigned c = 0; c < 256; c++) {
                s[2] = (unsigned char)c;
                bad += text_utf8_len(s, 3) != ref_utf8_len(s, 3);
                if (a >= 0xf0 && a <= 0xf7) /* 4-byte leads: the last byte in each class */
                    for (unsigned d = 0; d < 3; d++) {
                        s[3] = (unsigned char)(d == 0 ? 0x41 : d == 1 ? 0x80 : 0xbf);
                        bad += text_utf8_len(s, 4) != ref_utf8_len(s, 4);
                    }
            }
        }
    }
    CHECK_EQ_U64(bad, 0);
}

#define LEN_IS(lit, want) CHECK_EQ_U64(text_utf8_len(lit, sizeof lit - 1), want)

TEST(test_utf8_len_names_each_class)
{
    LEN_IS("A", 1);
    LEN_IS("\x7f", 1);
    LEN_IS("\xc2\x80", 2);                             /* U+0080, the first 2-byte one */
    LEN_IS("\xdf\xbf", 2);                             /* U+07FF */
    LEN_IS("\xe0\xa0\x80", 3);                         /* U+0800 */
    LEN_IS("\xed\x9f\xbf", 3);                         /* U+D7FF, just below the surrogates */
    LEN_IS("\xef\xbf\xbf", 3);                         /* U+FFFF */
    LEN_IS("\xf0\x90\x80\x80", 4);                     /* U+10000 */
    LEN_IS("\xf4\x8f\xbf\xbf", 4);                     /* U+10FFFF, the last one */
    LEN_IS("\x80", 0);                                 /* a lone continuation */
    LEN_IS("\xbf", 0);                                 /* a lone continuation */
    LEN_IS("\xc0\xaf", 0);                             /* overlong '/' */
    LEN_IS("\xc1\xbf", 0);                             /* overlong */
    LEN_IS("\xe0\x9f\xbf", 0);                         /* overlong U+07FF */
    LEN_IS("\xf0\x8f\xbf\xbf", 0);                     /* overlong U+FFFF */
    LEN_IS("\xed\xa0\x80", 0);                         /* U+D800 */
    LEN_IS("\xed\xbf\xbf", 0);                         /* U+DFFF */
    LEN_IS("\xf4\x90\x80\x80", 0);                     /* U+110000 */
    LEN_IS("\xf5\x80\x80\x80", 0);                     /* never in UTF-8 */
    LEN_IS("\xff", 0);                                 /* never in UTF-8 */
    LEN_IS("\xc3(", 0);                                /* a lead byte without its continuation */
    LEN_IS("\xe2\x28\xa1", 0);                         /* a bad second byte */
    LEN_IS("\xe2\x82\x28", 0);                         /* a bad third byte */
    CHECK_EQ_U64(text_utf8_len("\xe2\x82\xac", 2), 0); /* cut short by the end */
    CHECK_EQ_U64(text_utf8_len("A", 0), 0);
    CHECK(text_utf8_valid("caf\xc3\xa9 \xf0\x9f\x94\x92", 10));
    CHECK(text_utf8_valid("", 0));
    CHECK(!text_utf8_valid("caf\xc3", 4));
    CHECK(!text_utf8_valid("a\x80", 2));
}

/* text_json_escape or text_name of in[n] into a static buffer (all of it must fit). */
static const char *json(const char *in, size_t n)
{
    static char out[512];
    return text_json_escape(in, n, out, sizeof out) == n ? out : "(input left over)";
}

static const char *name(const char *in, size_t n, int flags)
{
    static char out[512];
    return text_name(in, n, flags, out, sizeof out) == n ? out : "(input left over)";
}

#define JSON_IS(lit, want) CHECK(!strcmp(json(lit, sizeof lit - 1), want))
#define NAME_IS(lit, flags, want) CHECK(!strcmp(name(lit, sizeof lit - 1, flags), want))

/* Every byte alone, by the policy in text.h. A byte >= 0x80 alone is never valid UTF-8. */
TEST(test_json_escapes_every_single_byte_by_the_policy)
{
    for (unsigned c = 0; c < 256; c++) {
        char in = (char)c, want[8];
        if (c == '"' || c == '\\')
            snprintf(want, sizeof want, "\\%c", c);
        else if (c == '\n' || c == '\r' || c == '\t')
            snprintf(want, sizeof want, "\\%c", c == '\n' ? 'n' : c == '\r' ? 'r' : 't');
        else if (c < 0x20 || c >= 0x7f)
            snprintf(want, sizeof want, "\\u%04x", c);
        else
            snprintf(want, sizeof want, "%c", c);
        if (strcmp(json(&in, 1), want)) {
            fprintf(stderr, "  byte 0x%02x: got %s want %s\n", c, json(&in, 1), want);
            CHECK(0);
        }
    }
}

TEST(test_json_keeps_valid_utf8_and_escapes_each_invalid_byte)
{
    JSON_IS("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x92",
            "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x92");
    JSON_IS("\xc2\x9b", "\xc2\x9b"); /* a C1 control is valid UTF-8: JSON keeps it */
    JSON_IS("\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf"); /* U+10FFFF */
    JSON_IS("a\x80"
            "b",
            "a\\u0080b");                                        /* a lone continuation */
    JSON_IS("\xc0\xaf", "\\u00c0\\u00af");                       /* overlong */
    JSON_IS("\xed\xa0\x80", "\\u00ed\\u00a0\\u0080");            /* a surrogate */
    JSON_IS("\xf4\x90\x80\x80", "\\u00f4\\u0090\\u0080\\u0080"); /* past U+10FFFF */
    JSON_IS("x\xe2\x82", "x\\u00e2\\u0082");                     /* cut short by the end */
    JSON_IS("\xc3"
            "A",
            "\\u00c3A"); /* a lead byte without continuation: the next byte is kept */
    JSON_IS("l1\nl2\r\t\x01\x1f\x7f", "l1\\nl2\\r\\t\\u0001\\u001f\\u007f");
    JSON_IS("a\"b\\c/", "a\\\"b\\\\c/");
    CHECK(!strcmp(json("x\0y", 3), "x\\u0000y"));
    CHECK(!strcmp(json("", 0), ""));
}

/* A mix of every kind of step: for every bound, the output is whole steps (escaping just the
 * consumed input gives the same bytes), a prefix of the unbounded output, and fits. */
static void check_bound(int json_policy, int flags)
{
    const char in[] = "a\"\\\n\x01\x7f\xc3\xa9\xc2\x9b\xf0\x9f\x94\x92\x80\xe2\x82z";
    size_t n = sizeof in - 1;
    char full[256], out[256], again[256];
    size_t all = json_policy ? text_json_escape(in, n, full, sizeof full)
                             : text_name(in, n, flags, full, sizeof full);
    CHECK_EQ_U64(all, n);
    for (size_t cap = 0; cap <= strlen(full) + 1; cap++) {
        memset(out, 'X', sizeof out);
        size_t used =
            json_policy ? text_json_escape(in, n, out, cap) : text_name(in, n, flags, out, cap);
        if (cap == 0) {
            CHECK(out[0] == 'X' && used == 0); /* nothing written, not even a NUL */
            continue;
        }
        size_t len = strlen(out);
        CHECK(len < cap);
        CHECK(!strncmp(out, full, len));
        if (json_policy)
            text_json_escape(in, used, again, sizeof again);
        else
            text_name(in, used, flags, again, sizeof again);
        CHECK(!strcmp(again, out)); /* the consumed input, escaped whole, is what was written */
        if (used < n) {             /* it stopped only because the next step did not fit */
            char step[TEXT_STEP_MAX];
            size_t u, w = json_policy ? text_json_step(in + used, n - used, step, &u)
                                      : text_name_step(in + used, n - used, flags, step, &u);
            CHECK(len + w >= cap);
        }
    }
}

TEST(test_a_length_bound_never_cuts_an_escape_or_a_sequence)
{
    check_bound(1, 0);
    check_bound(0, 0);
    check_bound(0, TEXT_QUOTE | TEXT_ASCII);
    char out[8];
    CHECK_EQ_U64(text_json_escape("ab\x01", 3, out, sizeof out), 2); /* "ab" + 6: no room */
    CHECK(!strcmp(out, "ab"));
    CHECK_EQ_U64(text_json_escape("ab\xf0\x9f\x94\x92", 6, out, 6), 2); /* 4 bytes: no room */
    CHECK(!strcmp(out, "ab"));
    CHECK_EQ_U64(text_name("ab\x1b", 3, 0, out, 6), 2); /* "ab" + \x1b: no room */
    CHECK(!strcmp(out, "ab"));
}

TEST(test_name_escapes_every_single_byte_by_the_policy)
{
    for (unsigned c = 0; c < 256; c++) {
        char in = (char)c, want[8];
        if (c == '\\')
            snprintf(want, sizeof want, "\\\\");
        else if (c == '\n' || c == '\r' || c == '\t')
            snprintf(want, sizeof want, "\\%c", c == '\n' ? 'n' : c == '\r' ? 'r' : 't');
        else if (c < 0x20 || c >= 0x7f)
            snprintf(want, sizeof want, "\\x%02x", c);
        else
            snprintf(want, sizeof want, "%c", c);
        if (strcmp(name(&in, 1, 0), want)) {
            fprintf(stderr, "  byte 0x%02x: got %s want %s\n", c, name(&in, 1, 0), want);
            CHECK(0);
        }
    }
}

TEST(test_name_shows_controls_and_invalid_bytes_as_hex)
{
    NAME_IS("a\"b", 0, "a\"b"); /* '"' only inside quotes */
    NAME_IS("a\"b", TEXT_QUOTE, "a\\\"b");
    NAME_IS("\x1b[2J\x07", 0, "\\x1b[2J\\x07"); /* a terminal escape stays visible text */
    NAME_IS("caf\xc3\xa9", 0, "caf\xc3\xa9");
    NAME_IS("caf\xc3\xa9", TEXT_ASCII, "caf\\xc3\\xa9");
    NAME_IS("\xc2\x9b"
            "2J",
            0, "\\xc2\\x9b2J");         /* C1 CSI: each byte as hex */
    NAME_IS("\xc2\xa0", 0, "\xc2\xa0"); /* U+00A0, past C1: kept */
    NAME_IS("\xf0\x9f\x94\x92", 0, "\xf0\x9f\x94\x92");
    NAME_IS("\xed\xa0\x80", 0, "\\xed\\xa0\\x80"); /* a surrogate */
    NAME_IS("\xc0\xaf", 0, "\\xc0\\xaf");          /* overlong */
    NAME_IS("x\xe2\x82", 0, "x\\xe2\\x82");        /* cut short */
    NAME_IS("l1\nl2\r\t\\", 0, "l1\\nl2\\r\\t\\\\");
    CHECK(!strcmp(name("a\0b", 3, 0), "a\\x00b"));
}

/* The server's error-reply style, as cmd_arg_text wrote it before text.c: printable ASCII but
 * '\\' kept, every other byte \xHH. Clients and tests match these reply bytes. */
static void old_arg_text(const unsigned char *s, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++)
        o += (size_t)(s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\\'
                          ? sprintf(out + o, "%c", s[i])
                          : sprintf(out + o, "\\x%02x", s[i]));
    out[o] = 0;
}

TEST(test_name_hex_ascii_is_the_server_reply_style_byte_for_byte)
{
    unsigned char in[256];
    char want[1100], got[1100];
    for (unsigned c = 0; c < 256; c++)
        in[c] = (unsigned char)c;
    old_arg_text(in, sizeof in, want);
    CHECK_EQ_U64(text_name(in, sizeof in, TEXT_HEX | TEXT_ASCII, got, sizeof got), sizeof in);
    CHECK(!strcmp(got, want));
    const char *seqs[] = {"caf\xc3\xa9", "nightly\njob",     "FOO\r\nBAR",  "a\\b\"c",
                          "\xc2\x9b",    "\xf0\x9f\x94\x92", "\xed\xa0\x80"};
    for (size_t i = 0; i < sizeof seqs / sizeof seqs[0]; i++) {
        old_arg_text((const unsigned char *)seqs[i], strlen(seqs[i]), want);
        text_name(seqs[i], strlen(seqs[i]), TEXT_HEX | TEXT_ASCII, got, sizeof got);
        CHECK(!strcmp(got, want));
    }
    NAME_IS("nightly\njob", TEXT_HEX | TEXT_ASCII, "nightly\\x0ajob");
    NAME_IS("a\\b", TEXT_HEX, "a\\x5cb");
    NAME_IS("caf\xc3\xa9\t", TEXT_HEX, "caf\xc3\xa9\\x09"); /* without TEXT_ASCII: UTF-8 kept */
}

int main(void)
{
    RUN(test_utf8_len_agrees_with_rfc3629_on_every_short_input);
    RUN(test_utf8_len_names_each_class);
    RUN(test_json_escapes_every_single_byte_by_the_policy);
    RUN(test_json_keeps_valid_utf8_and_escapes_each_invalid_byte);
    RUN(test_a_length_bound_never_cuts_an_escape_or_a_sequence);
    RUN(test_name_escapes_every_single_byte_by_the_policy);
    RUN(test_name_shows_controls_and_invalid_bytes_as_hex);
    RUN(test_name_hex_ascii_is_the_server_reply_style_byte_for_byte);
    TEST_MAIN_END();
}
