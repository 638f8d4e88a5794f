/* SPDX-License-Identifier: Apache-2.0 */
/* test_client_event.c — libfencelock's reading of the event stream (src/client/event.c): ids,
 * XREAD replies and entries, the -COMPACTED error, fed as raw RESP through hiredis' reader. */
#include <hiredis/hiredis.h>
#include <stdlib.h>

#include "client/event.h"
#include "test.h"

/* The reply the bytes parse to (NULL if hiredis refuses them); the caller frees it. */
static redisReply *resp(const char *bytes)
{
    redisReader *rd = redisReaderCreate();
    void *r = NULL;
    redisReaderFeed(rd, bytes, strlen(bytes));
    if (redisReaderGetReply(rd, &r) != REDIS_OK)
        r = NULL;
    redisReaderFree(rd);
    return r;
}

static int wid(const char *s, struct cl_wid *id)
{
    return cl_wid_parse(s, strlen(s), id);
}

TEST(test_ids_parse_with_and_without_seq)
{
    struct cl_wid id;
    CHECK(wid("12-3", &id) == 0 && id.rev == 12 && id.seq == 3);
    CHECK(wid("12", &id) == 0 && id.rev == 12 && id.seq == 0);
    CHECK(wid("0", &id) == 0 && id.rev == 0 && id.seq == 0);
    CHECK(wid("18446744073709551615-18446744073709551615", &id) == 0);
    CHECK(id.rev == UINT64_MAX && id.seq == UINT64_MAX);
    char out[FL_WATCH_ID_MAX];
    cl_wid_format(id, out);
    CHECK(strcmp(out, "18446744073709551615-18446744073709551615") == 0);
}

TEST(test_malformed_ids_are_refused)
{
    static const char *bad[] = {"",
                                "-",
                                "1-",
                                "-1",
                                "1-2-3",
                                "a",
                                "1a",
                                "1-x",
                                "$",
                                " 1",
                                "1 ",
                                "+1",
                                "1--2",
                                "18446744073709551616",
                                "1-18446744073709551616",
                                "000000000000000000001"};
    struct cl_wid id = {7, 7};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (wid(bad[i], &id) != -1)
            fprintf(stderr, "  accepted \"%s\"\n", bad[i]);
        CHECK(wid(bad[i], &id) == -1);
    }
    CHECK(id.rev == 7 && id.seq == 7); /* untouched */
}

TEST(test_ids_order_by_rev_then_seq)
{
    struct cl_wid a = {5, 1}, b = {5, 2}, c = {6, 0};
    CHECK(cl_wid_cmp(a, b) < 0 && cl_wid_cmp(b, a) > 0 && cl_wid_cmp(b, c) < 0);
    CHECK(cl_wid_cmp(a, a) == 0);
}

/* XREAD's RESP2 shape: [[stream, [[id, [k, v, ...]], ...]]]. */
static const char two_entries[] =
    "*1\r\n*2\r\n$18\r\nfencelock:events:a\r\n*2\r\n"
    "*2\r\n$3\r\n7-0\r\n*6\r\n$4\r\ntype\r\n$3\r\nput\r\n$4\r\nname\r\n$2\r\nab\r\n"
    "$5\r\nvalue\r\n$3\r\nx\0y\r\n"
    "*2\r\n$3\r\n8-1\r\n*4\r\n$4\r\ntype\r\n$5\r\ngrant\r\n$5\r\ntoken\r\n$1\r\n8\r\n";

TEST(test_xread_reply_entries_parse_into_events)
{
    redisReader *rd = redisReaderCreate();
    redisReaderFeed(rd, two_entries, sizeof(two_entries) - 1);
    void *v = NULL;
    CHECK(redisReaderGetReply(rd, &v) == REDIS_OK && v);
    redisReaderFree(rd);
    redisReply *r = v;
    const redisReply *ents;
    struct cl_evbuf b = {0};
    struct fl_event ev;
    int ok = cl_xread_entries(r, "fencelock:events:a", &ents) == CL_PARSE_OK && ents &&
             ents->elements == 2 && cl_event_parse(ents->element[0], &b, &ev) == CL_PARSE_OK;
    size_t len = 0;
    const char *val = ok ? fl_event_field(&ev, "value", &len) : NULL;
    ok = ok && ev.kind == FL_WATCH_EVENT && strcmp(ev.id, "7-0") == 0 && ev.rev == 7 &&
         ev.seq == 0 && strcmp(ev.type, "put") == 0 && strcmp(ev.name, "ab") == 0 &&
         ev.n_fields == 3 && val && len == 3 && memcmp(val, "x\0y", 3) == 0 &&
         !fl_event_field(&ev, "token", NULL);
    ok = ok && cl_event_parse(ents->element[1], &b, &ev) == CL_PARSE_OK &&
         strcmp(ev.id, "8-1") == 0 && strcmp(ev.type, "grant") == 0 && ev.name[0] == 0 &&
         strcmp(fl_event_field(&ev, "token", NULL), "8") == 0;
    int other = cl_xread_entries(r, "fencelock:events", &ents);
    cl_evbuf_free(&b);
    freeReplyObject(r);
    CHECK(ok);
    CHECK(other == CL_PARSE_BAD); /* another stream's entries are not ours */
}

TEST(test_nil_xread_reply_is_no_entries)
{
    redisReply *r = resp("*-1\r\n");
    const redisReply *ents = (void *)1;
    int rc = r ? cl_xread_entries(r, "fencelock:events", &ents) : -9;
    freeReplyObject(r);
    CHECK(rc == CL_PARSE_OK && ents == NULL);
}

/* Each of these is refused as a whole, never half-delivered. */
TEST(test_malformed_xread_replies_and_entries_are_refused)
{
    static const char *replies[] = {
        ":1\r\n",
        "*0\r\n",
        "*2\r\n*-1\r\n*-1\r\n",
        "*1\r\n*1\r\n$16\r\nfencelock:events\r\n",
        "*1\r\n*2\r\n$16\r\nfencelock:events\r\n:5\r\n",
    };
    for (size_t i = 0; i < sizeof(replies) / sizeof(replies[0]); i++) {
        redisReply *r = resp(replies[i]);
        const redisReply *ents;
        int rc = r ? cl_xread_entries(r, "fencelock:events", &ents) : -9;
        freeReplyObject(r);
        CHECK(rc == CL_PARSE_BAD);
    }
    static const char nul_key[] = "*2\r\n$3\r\n1-0\r\n*2\r\n$5\r\nty\0pe\r\n$3\r\nput\r\n";
    static const char *entries[] = {
        nul_key,               /* a NUL in a field name: fed with its length below */
        "*1\r\n$3\r\n1-0\r\n", /* no fields */
        "*2\r\n$3\r\n1-x\r\n*2\r\n$4\r\ntype\r\n$3\r\nput\r\n", /* bad id */
        "*2\r\n$3\r\n1-0\r\n*1\r\n$4\r\ntype\r\n",              /* odd field list */
        "*2\r\n$3\r\n1-0\r\n*2\r\n$4\r\nname\r\n$1\r\nk\r\n",   /* no type */
        "*2\r\n$3\r\n1-0\r\n*2\r\n$4\r\ntype\r\n:1\r\n",        /* not a string */
        "*2\r\n:1\r\n*2\r\n$4\r\ntype\r\n$3\r\nput\r\n",        /* id not a string */
    };
    for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
        redisReader *rd = redisReaderCreate();
        size_t n = strlen(entries[i]);
        if (i == 0)
            n = sizeof(nul_key) - 1;
        redisReaderFeed(rd, entries[i], n);
        void *v = NULL;
        int got = redisReaderGetReply(rd, &v) == REDIS_OK && v;
        redisReaderFree(rd);
        struct cl_evbuf b = {0};
        struct fl_event ev;
        int rc = got ? cl_event_parse(v, &b, &ev) : -9;
        cl_evbuf_free(&b);
        freeReplyObject(v);
        if (rc != CL_PARSE_BAD)
            fprintf(stderr, "  entry %zu: %d\n", i, rc);
        CHECK(rc == CL_PARSE_BAD);
    }
}

TEST(test_compacted_error_names_the_oldest_retained_id)
{
    struct cl_wid id;
    redisReply *r = resp("-COMPACTED oldest=120-2: the events after the id asked for are no "
                         "longer retained; read from 0 (the oldest retained) or $\r\n");
    int rc = r ? cl_compacted_oldest(r, &id) : -9;
    freeReplyObject(r);
    CHECK(rc == 0 && id.rev == 120 && id.seq == 2);
    r = resp("-COMPACTED no id here\r\n");
    rc = r ? cl_compacted_oldest(r, &id) : -9;
    freeReplyObject(r);
    CHECK(rc == -1);
    r = resp("+COMPACTED oldest=1-0\r\n"); /* not an error reply */
    rc = r ? cl_compacted_oldest(r, &id) : -9;
    freeReplyObject(r);
    CHECK(rc == -1);
}

static int wid_is(struct cl_wid id, uint64_t rev, uint64_t seq)
{
    return id.rev == rev && id.seq == seq;
}

/* After a gap the reader goes on just before the oldest retained id, never back: a new leader
 * retaining more history would otherwise hand out again what was delivered (torture seed
 * 484069675: "read from 0" after -COMPACTED oldest=5002-0 got 4244-0 from the next leader). */
TEST(test_past_a_gap_the_reader_goes_on_before_the_oldest_never_back)
{
    CHECK(wid_is(cl_wid_past_gap((struct cl_wid){4800, 0}, (struct cl_wid){5002, 0}), 5001,
                 UINT64_MAX));
    CHECK(wid_is(cl_wid_past_gap((struct cl_wid){4800, 0}, (struct cl_wid){5002, 3}), 5002, 2));
    /* an oldest id at or before what was read (a stale report): stay where the reader is */
    CHECK(wid_is(cl_wid_past_gap((struct cl_wid){4800, 0}, (struct cl_wid){4800, 1}), 4800, 0));
    CHECK(wid_is(cl_wid_past_gap((struct cl_wid){4800, 0}, (struct cl_wid){4000, 0}), 4800, 0));
    CHECK(wid_is(cl_wid_past_gap((struct cl_wid){0, 0}, (struct cl_wid){1, 0}), 0, UINT64_MAX));
    CHECK(wid_is(cl_wid_past_gap((struct cl_wid){0, 0}, (struct cl_wid){0, 0}), 0, 0));
}

int main(void)
{
    RUN(test_ids_parse_with_and_without_seq);
    RUN(test_malformed_ids_are_refused);
    RUN(test_ids_order_by_rev_then_seq);
    RUN(test_xread_reply_entries_parse_into_events);
    RUN(test_nil_xread_reply_is_no_entries);
    RUN(test_malformed_xread_replies_and_entries_are_refused);
    RUN(test_compacted_error_names_the_oldest_retained_id);
    RUN(test_past_a_gap_the_reader_goes_on_before_the_oldest_never_back);
    TEST_MAIN_END();
}
