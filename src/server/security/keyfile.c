/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "server/security/keyfile.h"

int keyfile_read(const char *what, const char *path, unsigned char *out, size_t min, size_t max,
                 size_t *n, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s %s cannot be read: %s", what, path, strerror(errno));
        return -1;
    }
    unsigned char tmp[KEYFILE_MAX + 2];
    size_t got = fread(tmp, 1, max + 2 < sizeof tmp ? max + 2 : sizeof tmp, f);
    int bad = ferror(f);
    fclose(f);
    if (got && tmp[got - 1] == '\n')
        got--;
    int rc = -1;
    if (bad)
        snprintf(err, errlen, "%s %s cannot be read", what, path);
    else if (got < min)
        snprintf(err, errlen, "%s %s holds %zu bytes: a key needs at least %zu", what, path, got,
                 min);
    else if (got > max)
        snprintf(err, errlen, "%s %s is longer than %zu bytes", what, path, max);
    else {
        memcpy(out, tmp, got);
        *n = got;
        rc = 0;
    }
    explicit_bzero(tmp, sizeof tmp);
    return rc;
}
