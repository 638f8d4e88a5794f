/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/codec.c — the binary command format (header versions 1 and 2), the canonical readers and
 * the request digest.
 *
 * Owns fsm_cmd_encode/fsm_cmd_decode. Layout (varint = LEB128, str = varint length + bytes):
 *
 *   u8 version, u8 op, varint now_ms, varint req_sid, varint req_seq,
 *   version 2 only: str user (0..FSM_MAX_USER), u8 flags (bit 0: admin; bit 1: traced; other
 *   bits 0), traced only: 26 bytes, the traceparent's binary form (common/trace.h: version 0,
 *   a trace id and a parent id that are not all zeros, the trace flags),
 *   then the op's payload: the fields of its FSM_PAYLOAD_* list in src/fsm/ops.h, in that
 *   order, each written as its kind says (enum fsm_field_kind); NOOP has none.
 *
 * The encoder and decoder walk that field list (fsm_op_desc), so a payload's layout is written
 * once. The C structs became per-op payloads, and then field lists, without changing a byte:
 * tests/fixtures/fsm_golden holds entries and a snapshot written before, and
 * test_fsm_codec_golden checks the code against them.
 *
 * Version 2 (session ownership) is written only for a checked command (fsm.h: struct
 * fsm_cmd); every other command is written as version 1, byte for byte as before, and a
 * version-1 entry decodes unchecked (nothing is checked or recorded), so old logs replay
 * identically. The server writes version 2 (and the ops whose row names format 2) only once
 * the cluster's log format is 2, i.e. every voter reads them (src/fsm/format.c,
 * src/server/cluster/format.c).
 *
 * The request digest (fsm_cmd_digest) is FNV-1a 64 over the op byte and the payload bytes as
 * encoded here, without the trailing WAIT field of an op that has one (LOCK, LOCK_SHARED,
 * SEM_ACQUIRE, ELECT_CAMPAIGN, LOCK_MULTI: a client resends it asking for the wait that is left).
 * It is stored in snapshots: never change its definition.
 *
 * Decoding is strict — shortest-form varints only, no unknown flag bits, no trailing bytes — so
 * every accepted byte string has exactly one form: encode(decode(x)) == x.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsm/internal.h"

#define FLAG_FENCE 1u
#define FLAG_IFREV 2u
#define HDR_FLAG_ADMIN 1u /* version-2 header flags */
#define HDR_FLAG_TRACE 2u /* a traceparent follows the flags */
#define FNV64_OFFSET 0xcbf29ce484222325ull
#define FNV64_PRIME 0x100000001b3ull
#define LEB128_BITS 7     /* payload bits per varint byte */
#define LEB128_MORE 0x80u /* a varint byte's "more bytes follow" bit */

static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= LEB128_MORE) {
        v >>= LEB128_BITS;
        n++;
    }
    return n;
}

int fsm_rd_varint(struct rd *r, uint64_t *v)
{
    size_t start = r->off;
    if (rd_varint(r, v))
        return -1;
    if (r->off - start != varint_len(*v))
        return r->err = -1;
    return 0;
}

int fsm_rd_str(struct rd *r, const char **p, uint32_t *n, uint32_t max)
{
    uint64_t len;
    if (fsm_rd_varint(r, &len))
        return -1;
    if (len > max || len > r->len - r->off)
        return r->err = -1;
    *p = (const char *)r->p + r->off;
    *n = (uint32_t)len;
    r->off += len;
    return 0;
}

/* ---- encode ---- */

static int put_str(struct buf *b, struct fsm_str s)
{
    return buf_put_bytes(b, s.p, s.len);
}

static int encode_cond(const struct fsm_kv_cond *c, struct buf *b)
{
    int rc =
        buf_put_u8(b, (uint8_t)((c->has_fence ? FLAG_FENCE : 0) | (c->has_ifrev ? FLAG_IFREV : 0)));
    if (c->has_fence)
        rc = rc || put_str(b, c->fence_name) || buf_put_varint(b, c->fence_token);
    if (c->has_ifrev)
        rc = rc || buf_put_varint(b, c->ifrev);
    return rc;
}

static int encode_field(const struct fsm_field *f, const char *payload, struct buf *b)
{
    const char *p = payload + f->off;
    switch ((enum fsm_field_kind)f->kind) {
    case FSM_F_U64:
    case FSM_F_SID:
    case FSM_F_WAIT:
    case FSM_F_ID:
        return buf_put_varint(b, *(const uint64_t *)p);
    case FSM_F_NAME:
    case FSM_F_LABEL:
    case FSM_F_VALUE:
    case FSM_F_EVALUE:
    case FSM_F_ADDR:
        return put_str(b, *(const struct fsm_str *)p);
    case FSM_F_COND:
        return encode_cond((const struct fsm_kv_cond *)p, b);
    case FSM_F_NAMES: {
        const struct fsm_names *ns = (const struct fsm_names *)p;
        return buf_put_varint(b, ns->n) || buf_append(b, ns->raw.p, ns->raw.len);
    }
    case FSM_F_TXN: {
        const struct fsm_txn *t = (const struct fsm_txn *)p;
        return buf_put_varint(b, t->ncmp) || buf_put_varint(b, t->nthen) ||
               buf_put_varint(b, t->nelse) || buf_append(b, t->raw.p, t->raw.len);
    }
    }
    return -1;
}

/* The payload's fields in the order of its list; nothing for NOOP or a value that is not an op
 * (the decoder rejects it). */
static int encode_body(const struct fsm_cmd *c, struct buf *b)
{
    const struct fsm_op_desc *d = fsm_op_desc(c->op);
    for (size_t i = 0; d && i < d->nfields; i++)
        if (encode_field(&d->fields[i], (const char *)&c->noop, b))
            return -1;
    return 0;
}

/* Version 2's user and flags; nothing for a version-1 header. */
static bool is_checked(const struct fsm_cmd *c)
{
    return c->checked || c->user.len || c->traced;
}

static int encode_user(const struct fsm_cmd *c, struct buf *b)
{
    if (!is_checked(c))
        return 0;
    uint8_t flags = (uint8_t)((c->admin ? HDR_FLAG_ADMIN : 0) | (c->traced ? HDR_FLAG_TRACE : 0));
    return put_str(b, c->user) || buf_put_u8(b, flags) ||
           (c->traced && buf_append(b, c->trace.b, TRACE_BIN_LEN));
}

int fsm_cmd_encode(const struct fsm_cmd *c, struct buf *out)
{
    size_t mark = out->len;
    if (c->user.len > FSM_MAX_USER)
        return -1;
    int rc = buf_put_u8(out, is_checked(c) ? FSM_CMD_VERSION_USER : FSM_CMD_VERSION) ||
             buf_put_u8(out, c->op) || buf_put_varint(out, c->now_ms) ||
             buf_put_varint(out, c->req_sid) || buf_put_varint(out, c->req_seq) ||
             encode_user(c, out) || encode_body(c, out);
    if (rc) {
        buf_truncate(out, mark);
        return -1;
    }
    return 0;
}

/* ---- decode ---- */

struct dec {
    struct rd r;
    char *err;
    size_t errlen;
};

static int fail(struct dec *d, const char *what, const char *why)
{
    if (d->errlen)
        snprintf(d->err, d->errlen, "%s %s", what, why);
    return -1;
}

static int get_u64(struct dec *d, const char *what, uint64_t *v)
{
    if (fsm_rd_varint(&d->r, v))
        return fail(d, what, d->r.off >= d->r.len ? "truncated" : "malformed");
    return 0;
}

/* A string of min..max bytes; the length is checked before the bounds for a clear message. */
static int get_str(struct dec *d, const char *what, struct fsm_str *s, uint32_t min, uint32_t max)
{
    uint64_t len;
    if (get_u64(d, what, &len))
        return -1;
    if (len > max)
        return fail(d, what, "too long");
    if (len < min)
        return fail(d, what, "empty");
    if (len > d->r.len - d->r.off)
        return fail(d, what, "truncated");
    s->p = (const char *)d->r.p + d->r.off;
    s->len = (uint32_t)len;
    d->r.off += len;
    return 0;
}

static int decode_cond(struct dec *d, struct fsm_kv_cond *c)
{
    uint8_t flags;
    if (rd_u8(&d->r, &flags))
        return fail(d, "flags", "truncated");
    if (flags & ~(FLAG_FENCE | FLAG_IFREV))
        return fail(d, "flags", "has unknown bits");
    c->has_fence = flags & FLAG_FENCE;
    c->has_ifrev = (flags & FLAG_IFREV) != 0;
    if (c->has_fence && (get_str(d, "fence name", &c->fence_name, 1, FSM_MAX_NAME) ||
                         get_u64(d, "fence token", &c->fence_token)))
        return -1;
    if (c->has_ifrev && get_u64(d, "ifrev", &c->ifrev))
        return -1;
    return 0;
}

/* A string of `kind`'s bounds (ops.h: enum fsm_field_kind). */
static int get_kind_str(struct dec *d, const struct fsm_field *f, struct fsm_str *s)
{
    uint32_t min = 0, max = FSM_MAX_NAME;
    if (f->kind == FSM_F_NAME || f->kind == FSM_F_ADDR)
        min = 1;
    if (f->kind == FSM_F_VALUE)
        max = FSM_MAX_VALUE;
    else if (f->kind == FSM_F_EVALUE)
        max = FSM_MAX_ELECT_VALUE;
    else if (f->kind == FSM_F_ADDR)
        max = FSM_MAX_ADDR;
    return get_str(d, f->what, s, min, max);
}

/* A LOCK_MULTI's names: each entry checked here (mode, bounds, strictly increasing order),
 * so the op and fsm_names_next walk only entries the decoder accepted. */
static int decode_names(struct dec *d, const struct fsm_field *f, struct fsm_names *ns)
{
    uint64_t n;
    struct fsm_str prev = {NULL, 0}, name;
    if (get_u64(d, f->what, &n))
        return -1;
    if (n == 0 || n > FSM_MAX_MULTI_NAMES)
        return fail(d, f->what, n ? "too many" : "empty");
    size_t start = d->r.off;
    for (uint64_t i = 0; i < n; i++) {
        uint8_t mode;
        if (rd_u8(&d->r, &mode))
            return fail(d, f->what, "truncated");
        if (mode & ~FSM_NAME_SHARED)
            return fail(d, f->what, "mode has unknown bits");
        if (get_str(d, f->what, &name, 1, FSM_MAX_NAME))
            return -1;
        if (i && fsm_name_cmp(prev.p, prev.len, name.p, name.len) >= 0)
            return fail(d, f->what, "not in strictly increasing order");
        prev = name;
    }
    ns->n = (uint32_t)n;
    ns->raw.p = (const char *)d->r.p + start;
    ns->raw.len = (uint32_t)(d->r.off - start);
    return 0;
}

/* A TXN's lists: the counts, then every entry checked here (its type in the right part, the
 * fields its type uses, the others 0 / empty: one form per meaning), so the op and
 * fsm_txn_next walk only entries the decoder accepted. */
static int decode_txn(struct dec *d, const struct fsm_field *f, struct fsm_txn *t)
{
    uint64_t nc, nt, ne;
    if (get_u64(d, f->what, &nc) || get_u64(d, f->what, &nt) || get_u64(d, f->what, &ne))
        return -1;
    if (nc > FSM_MAX_TXN_ITEMS || nt > FSM_MAX_TXN_ITEMS || ne > FSM_MAX_TXN_ITEMS ||
        nc + nt + ne > FSM_MAX_TXN_ITEMS)
        return fail(d, f->what, "has too many compares and ops");
    if (nc + nt + ne == 0)
        return fail(d, f->what, "empty");
    size_t start = d->r.off;
    for (uint64_t i = 0; i < nc + nt + ne; i++) {
        struct fsm_txn_item x;
        if (rd_u8(&d->r, &x.type) || rd_u8(&d->r, &x.rel))
            return fail(d, f->what, "truncated");
        if (get_str(d, "txn name", &x.name, 1, FSM_MAX_NAME) || get_u64(d, "txn number", &x.n) ||
            get_str(d, "txn value", &x.value, 0, FSM_MAX_VALUE))
            return -1;
        const char *bad = fsm_txn_item_bad(&x, i < nc);
        if (bad)
            return fail(d, f->what, bad);
        if (d->r.off - start > UINT32_MAX)
            return fail(d, f->what, "too long");
    }
    t->ncmp = (uint32_t)nc;
    t->nthen = (uint32_t)nt;
    t->nelse = (uint32_t)ne;
    t->raw.p = (const char *)d->r.p + start;
    t->raw.len = (uint32_t)(d->r.off - start);
    return 0;
}

static int decode_field(struct dec *d, const struct fsm_field *f, char *payload)
{
    char *p = payload + f->off;
    switch ((enum fsm_field_kind)f->kind) {
    case FSM_F_U64:
    case FSM_F_SID:
    case FSM_F_WAIT:
        return get_u64(d, f->what, (uint64_t *)p);
    case FSM_F_ID:
        if (get_u64(d, f->what, (uint64_t *)p))
            return -1;
        return *(uint64_t *)p ? 0 : fail(d, f->what, "is 0");
    case FSM_F_NAME:
    case FSM_F_LABEL:
    case FSM_F_VALUE:
    case FSM_F_EVALUE:
    case FSM_F_ADDR:
        return get_kind_str(d, f, (struct fsm_str *)p);
    case FSM_F_COND:
        return decode_cond(d, (struct fsm_kv_cond *)p);
    case FSM_F_NAMES:
        return decode_names(d, f, (struct fsm_names *)p);
    case FSM_F_TXN:
        return decode_txn(d, f, (struct fsm_txn *)p);
    }
    return fail(d, f->what, "has an unknown kind");
}

static int decode_body(struct dec *d, struct fsm_cmd *c)
{
    const struct fsm_op_desc *od = fsm_op_desc(c->op);
    if (!od)
        return fail(d, "op", "unknown");
    for (size_t i = 0; i < od->nfields; i++)
        if (decode_field(d, &od->fields[i], (char *)&c->noop))
            return -1;
    return 0;
}

/* Version 2: the acting user and its flags. */
static int decode_user(struct dec *d, struct fsm_cmd *c)
{
    uint8_t flags;
    c->checked = true;
    if (get_str(d, "user", &c->user, 0, FSM_MAX_USER))
        return -1;
    if (rd_u8(&d->r, &flags))
        return fail(d, "user flags", "truncated");
    if (flags & ~(HDR_FLAG_ADMIN | HDR_FLAG_TRACE))
        return fail(d, "user flags", "has unknown bits");
    c->admin = flags & HDR_FLAG_ADMIN;
    c->traced = flags & HDR_FLAG_TRACE;
    if (!c->traced)
        return 0;
    if (d->r.err || d->r.len - d->r.off < TRACE_BIN_LEN)
        return fail(d, "traceparent", "truncated");
    memcpy(c->trace.b, d->r.p + d->r.off, TRACE_BIN_LEN);
    d->r.off += TRACE_BIN_LEN;
    if (!trace_bin_valid(c->trace.b))
        return fail(d, "traceparent", "not a version-00 traceparent");
    return 0;
}

static int decode_header(struct dec *d, struct fsm_cmd *c)
{
    uint8_t version;
    if (rd_u8(&d->r, &version))
        return fail(d, "entry", "empty");
    if (version != FSM_CMD_VERSION && version != FSM_CMD_VERSION_USER)
        return fail(d, "version", "unsupported");
    if (rd_u8(&d->r, &c->op))
        return fail(d, "op", "truncated");
    if (c->op >= FSM_OP__COUNT)
        return fail(d, "op", "unknown");
    if (get_u64(d, "now", &c->now_ms) || get_u64(d, "req sid", &c->req_sid) ||
        get_u64(d, "req seq", &c->req_seq))
        return -1;
    if ((c->req_sid == 0) != (c->req_seq == 0))
        return fail(d, "REQ", "needs both sid and seq");
    return version == FSM_CMD_VERSION_USER ? decode_user(d, c) : 0;
}

int fsm_cmd_decode(const uint8_t *data, size_t len, struct fsm_cmd *c, char *err, size_t errlen)
{
    size_t body_off;
    return fsm_cmd_decode_at(data, len, c, &body_off, err, errlen);
}

int fsm_cmd_decode_at(const uint8_t *data, size_t len, struct fsm_cmd *c, size_t *body_off,
                      char *err, size_t errlen)
{
    struct dec d = {.err = err, .errlen = errlen};
    memset(c, 0, sizeof(*c));
    if (errlen)
        err[0] = '\0';
    rd_init(&d.r, data, len);
    int rc = decode_header(&d, c);
    *body_off = d.r.off;
    if (rc || decode_body(&d, c)) {
        memset(c, 0, sizeof(*c));
        return -1;
    }
    if (d.r.off != len) {
        memset(c, 0, sizeof(*c));
        return fail(&d, "entry", "has trailing bytes");
    }
    return 0;
}

/* ---- request digest ---- */

static uint64_t fnv1a(uint64_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= FNV64_PRIME;
    }
    return h;
}

uint64_t fsm_cmd_digest(const struct fsm_cmd *c, const uint8_t *body, size_t n)
{
    struct fsm_wait_ref w;
    if (fsm_cmd_wait_of(c, &w)) /* the wait is the payload's last field (LOCK, SEM, CAMPAIGN) */
        n -= varint_len(w.wait_ms);
    uint64_t h = fnv1a(FNV64_OFFSET, &c->op, 1);
    h = fnv1a(h, body, n);
    return h ? h : 1; /* 0 means "no digest recorded" */
}
