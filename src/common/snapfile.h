/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snapfile — the backup file of `fencelock snapshot save` and `fencelockd --restore`.
 *
 * Layout (big-endian integers):
 *   0   8  magic "FLSNAP01" (the 01 is the file format's version)
 *   8   8  revision of the state (informational; --restore checks it against the payload)
 *   16  8  payload length
 *   24 32  SHA-256 of the payload
 *   56  .. payload: the FSM snapshot exactly as fsm_snapshot() wrote it on the leader
 * The checksum is the leader's (SNAPSHOT.SAVE sends it with the bytes), so a file that verifies
 * holds what the leader serialised, end to end. Pure functions over caller-owned buffers.
 */
#ifndef FENCELOCK_SNAPFILE_H
#define FENCELOCK_SNAPFILE_H

#include <stddef.h>
#include <stdint.h>

#define SNAPFILE_MAGIC "FLSNAP01"
#define SNAPFILE_HEADER 56
#define SNAPFILE_SHA_LEN 32
#define SNAPFILE_SHA_HEX (2 * SNAPFILE_SHA_LEN + 1) /* lowercase hex and its NUL */

/* SHA-256 of p[0..n) as lowercase hex. 0, or -1 if the digest could not be computed. */
int snapfile_sha256_hex(const uint8_t *p, size_t n, char out[SNAPFILE_SHA_HEX]);

/* The header of a file holding payload p[0..n) (whose SHA-256 is sha_hex) at `revision`.
 * -1 if sha_hex is not 64 hex digits. */
int snapfile_header(uint8_t out[SNAPFILE_HEADER], uint64_t revision, size_t n, const char *sha_hex);

/* Check a whole file: magic, length and checksum. 0 with the payload (borrowed from `file`)
 * and the header's revision, or -1 with the reason in err. */
int snapfile_parse(const uint8_t *file, size_t len, const uint8_t **payload, size_t *n,
                   uint64_t *revision, char *err, size_t errlen);

#endif
