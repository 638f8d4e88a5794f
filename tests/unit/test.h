/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test.h — the project's tiny unit-test runner.
 *
 * A test is `TEST(name) { ... }` registered in main with RUN(name). CHECK(cond) records a
 * failure with file:line and returns from the test; CHECK_EQ_U64 prints both values.
 * A test with a fixture is `TEST_F(type, name) { ... fx->... }` registered with
 * RUN_F(type, name): the runner calls type_setup(&fx) (0 = ready), the test, and
 * type_teardown(&fx) always, so resources the fixture owns are freed even when a CHECK returns
 * early (teardown must also cope with a setup that failed half-way).
 * TEST_MAIN_END prints "tests: N passed, N failed" (the line CI reads) and returns non-zero on
 * any failure. Only for test binaries: the globals below live in each test executable.
 */
#ifndef FENCELOCK_TEST_H
#define FENCELOCK_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* A seeded xorshift64 step (*x must not be 0): random test data that replays from its seed. */
static inline uint64_t test_rnd(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* A name or prefix of 0..4 bytes over "ab/" into out (4 bytes at least): many shared prefixes,
 * some names equal (the watch index and the wake index tests). Returns its length. */
static inline size_t test_rnd_name(uint64_t *x, char *out)
{
    static const char abc[] = "ab/";
    size_t len = test_rnd(x) % 5;
    for (size_t i = 0; i < len; i++)
        out[i] = abc[test_rnd(x) % 3];
    return len;
}

static int test_passed_, test_failed_, test_cur_failed_;

#define TEST(name) static void name(void)

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "  FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                      \
            test_cur_failed_ = 1;                                                                  \
            return;                                                                                \
        }                                                                                          \
    } while (0)

#define CHECK_EQ_U64(a, b)                                                                         \
    do {                                                                                           \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                                           \
        if (a_ != b_) {                                                                            \
            fprintf(stderr, "  FAIL %s:%d: %s == %s (%" PRIu64 " != %" PRIu64 ")\n", __FILE__,     \
                    __LINE__, #a, #b, a_, b_);                                                     \
            test_cur_failed_ = 1;                                                                  \
            return;                                                                                \
        }                                                                                          \
    } while (0)

#define CHECK_STR_PREFIX(s, prefix) CHECK(strncmp((s), (prefix), strlen(prefix)) == 0)

#define TEST_REPORT_(name)                                                                         \
    do {                                                                                           \
        if (test_cur_failed_) {                                                                    \
            test_failed_++;                                                                        \
            fprintf(stderr, "not ok %s\n", name);                                                  \
        } else {                                                                                   \
            test_passed_++;                                                                        \
            fprintf(stderr, "ok %s\n", name);                                                      \
        }                                                                                          \
    } while (0)

#define RUN(name)                                                                                  \
    do {                                                                                           \
        test_cur_failed_ = 0;                                                                      \
        name();                                                                                    \
        TEST_REPORT_(#name);                                                                       \
    } while (0)

#define TEST_F(type, name) static void name(struct type *fx)

#define RUN_F(type, name)                                                                          \
    do {                                                                                           \
        struct type fx_;                                                                           \
        test_cur_failed_ = 0;                                                                      \
        if (type##_setup(&fx_) == 0) {                                                             \
            name(&fx_);                                                                            \
        } else {                                                                                   \
            fprintf(stderr, "  FAIL %s: fixture setup\n", #name);                                  \
            test_cur_failed_ = 1;                                                                  \
        }                                                                                          \
        type##_teardown(&fx_);                                                                     \
        TEST_REPORT_(#name);                                                                       \
    } while (0)

#define TEST_MAIN_END()                                                                            \
    do {                                                                                           \
        printf("tests: %d passed, %d failed\n", test_passed_, test_failed_);                       \
        return test_failed_ ? 1 : 0;                                                               \
    } while (0)

#endif
