/*
 * buf — a growable byte buffer.
 *
 * Owns: its heap block `p` (capacity `cap`, `len` bytes used). A zeroed struct is a valid empty
 * buffer. buf_free releases the block; pointers into `p` are invalidated by any append.
 * Appends return 0, or -1 when memory runs out (the buffer is then unchanged).
 */
#ifndef FENCELOCK_BUF_H
#define FENCELOCK_BUF_H

#include <stddef.h>
#include <stdint.h>

struct buf {
    char *p;
    size_t len, cap;
};

void buf_init(struct buf *b);
void buf_free(struct buf *b);
/* Ensure room for `extra` more bytes. */
int buf_reserve(struct buf *b, size_t extra);
int buf_append(struct buf *b, const void *data, size_t n);
int buf_append_str(struct buf *b, const char *s);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Drop the first n bytes (n <= len). */
void buf_consume(struct buf *b, size_t n);
static inline void buf_reset(struct buf *b)
{
    b->len = 0;
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
