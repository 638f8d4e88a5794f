/* SPDX-License-Identifier: Apache-2.0 */
/* test_client_txn.c — libfencelock's reading of a TXN refused on an op (src/client/txn.c
 * cl_txn_op): "ERR TXN op N: ..." names op N, counted from 1, as the Go, Java, Node and Python
 * clients read it; any other text names none. The builder's accessor without a commit. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "client/client.h"
#include "test.h"

static int op_of(const char *s)
{
    return cl_txn_op(s, strlen(s));
}

TEST(test_the_failing_op_is_read_from_the_servers_text)
{
    CHECK(op_of("ERR TXN op 2: value of key k is not a signed 64-bit decimal integer") == 2);
    CHECK(op_of("ERR TXN op 1: increment would overflow: key n is 9223372036854775807") == 1);
    CHECK(op_of("ERR TXN op 64: key k is written twice in one branch") == 64);
    char big[64];
    snprintf(big, sizeof(big), "ERR TXN op %d: x", INT_MAX);
    CHECK(op_of(big) == INT_MAX);
    /* only the bytes given count: the same text cut before the colon names nothing */
    const char *s = "ERR TXN op 2: x";
    CHECK(cl_txn_op(s, strlen("ERR TXN op 2")) == 0);
    CHECK(cl_txn_op(s, strlen("ERR TXN op 2:")) == 2);
}

TEST(test_other_texts_name_no_op)
{
    CHECK(op_of("ERR TXN op 0: x") == 0);          /* ops count from 1 */
    CHECK(op_of("ERR TXN op : x") == 0);           /* no number */
    CHECK(op_of("ERR TXN op 2 x") == 0);           /* no colon after it */
    CHECK(op_of("ERR TXN op 2x: x") == 0);         /* not only digits */
    CHECK(op_of("ERR TXN op -2: x") == 0);         /* no sign */
    CHECK(op_of("ERR TXN op 2147483648: x") == 0); /* over INT_MAX */
    CHECK(op_of("ERR TXN op 99999999999999999999999: x") == 0);
    CHECK(op_of("ERR TXN op 2") == 0);
    CHECK(op_of("ERR syntax error in TXN op 2: x") == 0);
    CHECK(op_of("STALE TXN op 2: x") == 0);
    CHECK(op_of("ERR txn op 2: x") == 0); /* the servers' words, exactly */
    CHECK(op_of("") == 0);
    CHECK(cl_txn_op(NULL, 0) == 0);
}

TEST(test_a_builder_never_committed_names_no_op)
{
    fl_txn *t = fl_txn_new();
    CHECK(t != NULL);
    CHECK(fl_txn_failed_op(t) == 0);
    CHECK(fl_txn_then_incr(t, "k", 1) == FL_OK);
    CHECK(fl_txn_failed_op(t) == 0);
    CHECK(fl_txn_failed_op(NULL) == 0);
    fl_txn_free(t);
}

int main(void)
{
    RUN(test_the_failing_op_is_read_from_the_servers_text);
    RUN(test_other_texts_name_no_op);
    RUN(test_a_builder_never_committed_names_no_op);
    TEST_MAIN_END();
}
