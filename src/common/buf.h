/* SPDX-License-Identifier: Apache-2.0 */
/*
 * buf — a growable byte buffer with a sticky error flag.
 *
 * Owns: its heap block `p` (capacity `cap`, `len` bytes used). A zeroed struct is a valid empty
 * buffer. buf_free releases the block; pointers into `p` are invalidated by any append.
 * Appends return 0, or -1 when memory runs out or the buffer's `max` would be passed; the
 * failing append changes no byte.
 *
 * Sticky error (like struct rd's): the first append (or reserve) that fails sets `err`, and
 * while it is set every later append fails at once and changes nothing. So a writer may issue a
 * whole reply or record unchecked and test `err` once at the end: the bytes are then either all
 * there or a prefix to discard. Only these clear the flag: buf_reset (empty again),
 * buf_truncate (rolled back to a length known to be complete), buf_init and buf_free. Code that
 * empties a buffer by assigning `len` keeps the flag: go through buf_reset.
 */
#ifndef FENCELOCK_BUF_H
#define FENCELOCK_BUF_H

#include <stddef.h>
#include <stdint.h>

struct buf {
    char *p;
    size_t len, cap;
    size_t max; /* 0: unbounded; else len never exceeds it (a longer append fails as OOM does) */
    int err;    /* sticky: an append failed since the last reset/truncate */
};

void buf_init(struct buf *b);
void buf_free(struct buf *b);
/* Ensure room for `extra` more bytes. */
int buf_reserve(struct buf *b, size_t extra);
int buf_append(struct buf *b, const void *data, size_t n);
int buf_append_str(struct buf *b, const char *s);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Drop the first n bytes (n <= len). The flag stays as it was. */
void buf_consume(struct buf *b, size_t n);
/* Empty the buffer (keeping its block) and clear the flag. */
static inline void buf_reset(struct buf *b)
{
    b->len = 0;
    b->err = 0;
}
/* Keep the first n bytes (n <= len) and clear the flag: whatever failed after n is dropped. */
void buf_truncate(struct buf *b, size_t n);
/* 1 if an append failed since the last reset or truncate. */
static inline int buf_failed(const struct buf *b)
{
    return b->err != 0;
}
/* Cap the buffer at max bytes (0: no cap): appends past it fail and set the flag. Lets a caller
 * bound a buffer, and tests inject an allocation failure at an exact byte. */
static inline void buf_set_max(struct buf *b, size_t max)
{
    b->max = max;
}

/* Little-endian fixed-width and LEB128 varint helpers for binary codecs. */
int buf_put_u8(struct buf *b, uint8_t v);
int buf_put_u64(struct buf *b, uint64_t v);
int buf_put_varint(struct buf *b, uint64_t v);
/* varint length + bytes */
int buf_put_bytes(struct buf *b, const void *p, size_t n);

/* A bounds-checked reader over borrowed bytes. Every get returns 0 or -1 (past the end /
 * malformed), and once it fails, `err` stays set and later gets fail too. */
struct rd {
    const uint8_t *p;
    size_t len, off;
    int err;
};
static inline void rd_init(struct rd *r, const void *p, size_t len)
{
    r->p = p;
    r->len = len;
    r->off = 0;
    r->err = 0;
}
int rd_u8(struct rd *r, uint8_t *v);
int rd_u64(struct rd *r, uint64_t *v);
int rd_varint(struct rd *r, uint64_t *v);
/* Borrowed pointer into the reader's bytes; fails if the length exceeds `max` or the input. */
int rd_bytes(struct rd *r, const char **p, uint32_t *n, uint32_t max);

#endif
