/* SPDX-License-Identifier: Apache-2.0 */
/*
 * peer_guard — the start-up checks that keep the Raft port a members-only port:
 * whether an address is loopback, and whether the peer CA trusts a certificate the client port
 * trusts too. Pure functions over the configuration and the PEM files; nothing kept, nothing
 * to free. Called by cfg_check (config.c) before anything listens.
 */
#ifndef FENCELOCK_PEER_GUARD_H
#define FENCELOCK_PEER_GUARD_H

#include <stdbool.h>
#include <stddef.h>

/* Whether `host` (an address's host part, brackets removed) only reaches this machine:
 * 127.0.0.0/8, ::1 (also as ::ffff:127.x.y.z) or the name "localhost". Any other name is
 * treated as routable: what it resolves to is not known here. */
bool srv_host_loopback(const char *host);

/* Whether the PEM files `a` and `b` hold a certificate in common (the same file, a copy, or
 * a bundle that contains the other's CA): 1 yes, 0 no, -1 with err filled if one cannot be
 * read or holds no certificate. */
int srv_pem_share_cert(const char *a, const char *b, char *err, size_t errlen);

#endif
