/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keyfile — the one reader of a key file's bytes (--token-key, --http-token-key): the file's
 * bytes with one trailing newline dropped, within the caller's bounds, the read buffer wiped
 * after. No state; no dependency on the server (the fuzz targets link it alone). The file's
 * permissions are secret.c's to check, before it is read.
 */
#ifndef FENCELOCK_KEYFILE_H
#define FENCELOCK_KEYFILE_H

#include <stddef.h>

#define KEYFILE_MAX 1024 /* the longest key file any flag takes (bytes) */

/* The bytes of key file `path` (named by the flag `what` in messages) into out (room for max
   bytes), one trailing "\n" dropped: 0 with *n = min..max bytes, else -1 with why in err (not
   readable, too short, too long; a file one byte over max is read to tell "too long" from
   "exactly the limit"). out is the caller's to wipe. */
int keyfile_read(const char *what, const char *path, unsigned char *out, size_t min, size_t max,
                 size_t *n, char *err, size_t errlen);

#endif
