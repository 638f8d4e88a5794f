/* SPDX-License-Identifier: Apache-2.0 */
/* test_client_options.c — struct fl_options across library versions (src/client/options.c):
 * the caller's size decides how much is written and read, a struct of unknown size is refused,
 * and an option the library does not know is refused unless left at its default 0. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "client/client.h"
#include "test.h"

/* The first sized layout: what the oldest caller that can exist hands in. */
#define SIZE_0 (offsetof(struct fl_options, tls_server_name) + sizeof(const char *))

TEST(test_init_fills_the_defaults_and_the_callers_size)
{
    struct fl_options o;
    memset(&o, 0x55, sizeof o);
    fl_options_init(&o);
    CHECK_EQ_U64(o.size, sizeof o);
    CHECK(o.timeout_ms == 5000 && o.connect_timeout_ms == 1000);
    CHECK(o.margin_ms == 10 && o.drift_ppm == 10000 && o.refused_ms == 0);
    CHECK(!o.user && !o.password && !o.tls && !o.tls_ca && !o.tls_cert && !o.tls_key);
    CHECK(!o.tls_server_name);
}

TEST(test_init_writes_no_byte_past_the_callers_size)
{
    _Alignas(struct fl_options) unsigned char buf[sizeof(struct fl_options) + 32];
    memset(buf, 0xAA, sizeof buf);
    fl_options_init_size((struct fl_options *)(void *)buf, SIZE_0);
    for (size_t i = SIZE_0; i < sizeof buf; i++)
        CHECK(buf[i] == 0xAA);
    CHECK_EQ_U64(((struct fl_options *)(void *)buf)->size, SIZE_0);
    memset(buf, 0xAA, sizeof buf);
    fl_options_init_size((struct fl_options *)(void *)buf, 0); /* too small to hold a size */
    for (size_t i = 0; i < sizeof buf; i++)
        CHECK(buf[i] == 0xAA);
}

/* An older program's struct: exactly as long as its size says (ASan would see a read past). */
TEST(test_an_older_callers_struct_is_read_only_as_far_as_its_size)
{
    struct fl_options *o = malloc(SIZE_0);
    CHECK(o != NULL);
    fl_options_init_size(o, SIZE_0);
    o->timeout_ms = 1234;
    o->refused_ms = 77;
    struct fl_options in;
    int rc = cl_options_read(&in, o);
    fl_err e = FL_EPROTO;
    fl_client *c = fl_client_new("127.0.0.1:1", o, &e);
    free(o);
    CHECK(rc == 0);
    CHECK(in.timeout_ms == 1234 && in.refused_ms == 77 && in.connect_timeout_ms == 1000);
    CHECK_EQ_U64(in.size, sizeof in);
    CHECK(c != NULL && e == FL_OK);
    fl_client_free(c);
}

TEST(test_a_struct_without_a_size_is_refused)
{
    struct fl_options o;
    fl_options_init(&o);
    fl_err e = FL_OK;
    o.size = 0; /* filled by hand, fl_options_init never called */
    CHECK(fl_client_new("127.0.0.1:1", &o, &e) == NULL && e == FL_EINVAL);
    o.size = SIZE_0 - 1;
    e = FL_OK;
    CHECK(fl_client_new("127.0.0.1:1", &o, &e) == NULL && e == FL_EINVAL);
    fl_client *c = fl_client_new("127.0.0.1:1", NULL, &e); /* NULL: every default */
    CHECK(c != NULL && e == FL_OK);
    fl_client_free(c);
}

/* A newer program's struct: an option this library does not know, at its default 0 or set. */
TEST(test_a_newer_callers_unknown_option_must_be_left_at_zero)
{
    struct newer {
        struct fl_options o;
        uint64_t later;
    } w;
    memset(&w, 0x55, sizeof w);
    fl_options_init_size(&w.o, sizeof w);
    CHECK_EQ_U64(w.o.size, sizeof w);
    CHECK(w.later == 0 && w.o.timeout_ms == 5000);
    fl_err e = FL_EPROTO;
    fl_client *c = fl_client_new("127.0.0.1:1", &w.o, &e);
    CHECK(c != NULL && e == FL_OK);
    fl_client_free(c);
    w.later = 7;
    CHECK(fl_client_new("127.0.0.1:1", &w.o, &e) == NULL && e == FL_EINVAL);
}

TEST(test_the_library_version_is_the_headers)
{
    int ma = -1, mi = -1, pa = -1;
    CHECK(strcmp(fl_version(&ma, &mi, &pa), FL_VERSION) == 0);
    CHECK(ma == FL_VERSION_MAJOR && mi == FL_VERSION_MINOR && pa == FL_VERSION_PATCH);
    char s[48];
    snprintf(s, sizeof s, "%d.%d.%d", FL_VERSION_MAJOR, FL_VERSION_MINOR, FL_VERSION_PATCH);
    CHECK(strcmp(s, FL_VERSION) == 0);
}

int main(void)
{
    RUN(test_init_fills_the_defaults_and_the_callers_size);
    RUN(test_init_writes_no_byte_past_the_callers_size);
    RUN(test_an_older_callers_struct_is_read_only_as_far_as_its_size);
    RUN(test_a_struct_without_a_size_is_refused);
    RUN(test_a_newer_callers_unknown_option_must_be_left_at_zero);
    RUN(test_the_library_version_is_the_headers);
    TEST_MAIN_END();
}
