/* SPDX-License-Identifier: Apache-2.0 */
/* io — the whole-buffer write (io.h). */
#include "common/io.h"

#include <errno.h>
#include <unistd.h>

int io_write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        if (w == 0) { /* no progress and no error: do not spin */
            errno = EIO;
            return -1;
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}
