/* SPDX-License-Identifier: Apache-2.0 */
/*
 * env — taking a secret (a password) out of the process environment, for the server
 * (FENCELOCK_PEER_PASSWORD) and the CLI (FENCELOCK_PASSWORD).
 *
 * Owns: nothing (the caller owns out). Invariant: after env_take the variable is gone: its
 * bytes were zeroed in place (they stay visible in /proc/PID/environ otherwise, which
 * unsetenv does not touch) and it is unset, so nothing this process starts inherits it. The
 * value is copied first, whole or not at all.
 */
#ifndef FENCELOCK_ENV_H
#define FENCELOCK_ENV_H

#include <stddef.h>

/* Copy variable name's value into out (cap bytes, NUL-terminated) and remove the variable.
 * Returns the value's length, -1 when the variable is not set, -2 when the value does not fit
 * (nothing copied; the variable is removed all the same). */
long env_take(const char *name, char *out, size_t cap);

#endif
