/* SPDX-License-Identifier: Apache-2.0 */
/* env.c — see env.h. */
#include "common/env.h"

#include <stdlib.h>
#include <string.h>

long env_take(const char *name, char *out, size_t cap)
{
    char *v = getenv(name);
    long rc = -1;
    if (v) {
        size_t n = strlen(v);
        rc = n < cap ? (long)n : -2;
        if (rc >= 0)
            memcpy(out, v, n + 1);
        explicit_bzero(v, n);
    }
    unsetenv(name);
    return rc;
}
