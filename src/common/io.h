/* SPDX-License-Identifier: Apache-2.0 */
/*
 * io — writing a whole buffer to a blocking file descriptor (a file, stderr).
 *
 * Owns: nothing (the caller owns fd and p). Invariant: io_write_all returns 0 only once all n
 * bytes were written; it retries short writes and EINTR, and stops at the first other error.
 * Not for non-blocking sockets or TLS: those wait on a deadline and keep the connection's
 * state (src/client/link.c link_send_all).
 */
#ifndef FENCELOCK_IO_H
#define FENCELOCK_IO_H

#include <stddef.h>

/* 0 when all n bytes of p are written; -1 with errno set otherwise (EIO if write(2) wrote
 * nothing without an error), and an unknown prefix of p may have been written. */
int io_write_all(int fd, const void *p, size_t n);

#endif
