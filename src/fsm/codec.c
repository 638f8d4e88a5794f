/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/codec.c — the binary command format (header versions 1 and 2), the canonical readers and
 * the request digest.
 *
 * Owns fsm_cmd_encode/fsm_cmd_decode. Layout (varint = LEB128, str = varint length + bytes):
 *
 *   u8 version, u8 op, varint now_ms, varint req_sid, varint req_seq,
 *   version 2 only: str user (0..FSM_MAX_USER), u8 flags (bit 0: admin; other bits 0),
 *   then the op's payload (struct fsm_cmd_<payload> in fsm.h), its fields in this order:
 *     NOOP               -
 *     SESSION_OPEN       varint ttl_ms, varint lockdelay_ms, str name (0..FSM_MAX_NAME)
 *     SESSION_CLOSE      varint sid
 *     SESSION_EXPIRE     varint sid
 *     LOCK               str name, varint sid, varint wait_ms
 *     UNLOCK             str name, varint sid
 *     CANCEL_WAIT        str name, varint sid
 *     LOCKDELAY_END      str name
 *     PUT                str key, str value, varint lease_sid, cond
 *     DEL                str key, cond
 *     MEMBER_SET         varint id (> 0), str client_addr, str raft_addr (1..FSM_MAX_ADDR each)
 *     MEMBER_DEL         varint id (> 0)
 *     SESSION_CHECKPOINT varint sid, varint remaining_ms
 *     LOCK_SHARED        str name, varint sid, varint wait_ms (as LOCK)
 *     SESSION_REVOKE     varint sid
 *     SEM_ACQUIRE        str name, varint sid, varint limit, varint wait_ms
 *     SEM_RELEASE        str name, varint sid
 *     ELECT_CAMPAIGN     str name, varint sid, str value (0..FSM_MAX_ELECT_VALUE), varint wait_ms
 *     ELECT_PROCLAIM     str name, varint sid, varint token, str value (0..FSM_MAX_ELECT_VALUE)
 *     ELECT_RESIGN       str name, varint sid
 *     CLUSTER_FORMAT     varint format
 *   cond: u8 flags, [str fence_name, varint fence_token], [varint ifrev]; flags bit 0 = fence
 *   present, bit 1 = ifrev present, other bits must be 0. Lock names, keys and fence names are
 *   1..FSM_MAX_NAME bytes, values up to FSM_MAX_VALUE. The C structs became per-op payloads
 *   without changing a byte: tests/fixtures/fsm_golden holds entries and a snapshot
 *   written before, and test_fsm_codec_golden checks the code against them.
 *
 * Version 2 (session ownership) is written only for a checked command (fsm.h: struct
 * fsm_cmd); every other command is written as version 1, byte for byte as before, and a
 * version-1 entry decodes unchecked (nothing is checked or recorded), so old logs replay
 * identically. The server writes version 2 (and ops 14-20) only once the cluster's log format
 * is 2, i.e. every voter reads them (src/fsm/format.c, src/server/cluster/format.c).
 *
 * The request digest (fsm_cmd_digest) is FNV-1a 64 over the op byte and the payload bytes as
 * encoded here, for LOCK and LOCK_SHARED without the trailing wait_ms (a client resends a LOCK
 * asking for the wait that is left). It is stored in snapshots: never change its definition.
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

static int encode_lock(const struct fsm_cmd_lock *p, struct buf *b)
{
    return put_str(b, p->name) || buf_put_varint(b, p->sid) || buf_put_varint(b, p->wait_ms);
}

static int encode_lock_ref(const struct fsm_cmd_lock_ref *p, struct buf *b)
{
    return put_str(b, p->name) || buf_put_varint(b, p->sid);
}

static int encode_put(const struct fsm_cmd_put *p, struct buf *b)
{
    return put_str(b, p->key) || put_str(b, p->value) || buf_put_varint(b, p->lease_sid) ||
           encode_cond(&p->cond, b);
}

static int encode_member_set(const struct fsm_cmd_member_set *p, struct buf *b)
{
    return buf_put_varint(b, p->id) || put_str(b, p->client_addr) || put_str(b, p->raft_addr);
}

static int encode_prim(const struct fsm_cmd *c, struct buf *b)
{
    const struct fsm_cmd_sem_acquire *sa = &c->sem_acquire;
    const struct fsm_cmd_elect_campaign *ec = &c->elect_campaign;
    const struct fsm_cmd_elect_proclaim *ep = &c->elect_proclaim;
    switch (c->op) {
    case FSM_OP_SEM_ACQUIRE:
        return put_str(b, sa->name) || buf_put_varint(b, sa->sid) || buf_put_varint(b, sa->limit) ||
               buf_put_varint(b, sa->wait_ms);
    case FSM_OP_SEM_RELEASE:
        return encode_lock_ref(&c->sem_release, b);
    case FSM_OP_ELECT_CAMPAIGN:
        return put_str(b, ec->name) || buf_put_varint(b, ec->sid) || put_str(b, ec->value) ||
               buf_put_varint(b, ec->wait_ms);
    case FSM_OP_ELECT_PROCLAIM:
        return put_str(b, ep->name) || buf_put_varint(b, ep->sid) || buf_put_varint(b, ep->token) ||
               put_str(b, ep->value);
    case FSM_OP_ELECT_RESIGN:
        return encode_lock_ref(&c->elect_resign, b);
    default:
        return 0;
    }
}

static int encode_body(const struct fsm_cmd *c, struct buf *b)
{
    switch (c->op) {
    case FSM_OP_SESSION_OPEN:
        return buf_put_varint(b, c->session_open.ttl_ms) ||
               buf_put_varint(b, c->session_open.lockdelay_ms) || put_str(b, c->session_open.name);
    case FSM_OP_SESSION_CLOSE:
        return buf_put_varint(b, c->session_close.sid);
    case FSM_OP_SESSION_EXPIRE:
        return buf_put_varint(b, c->session_expire.sid);
    case FSM_OP_SESSION_REVOKE:
        return buf_put_varint(b, c->session_revoke.sid);
    case FSM_OP_SESSION_CHECKPOINT:
        return buf_put_varint(b, c->session_checkpoint.sid) ||
               buf_put_varint(b, c->session_checkpoint.remaining_ms);
    case FSM_OP_LOCK:
    case FSM_OP_LOCK_SHARED:
        return encode_lock(fsm_cmd_lock_of(c), b);
    case FSM_OP_UNLOCK:
        return encode_lock_ref(&c->unlock, b);
    case FSM_OP_CANCEL_WAIT:
        return encode_lock_ref(&c->cancel_wait, b);
    case FSM_OP_LOCKDELAY_END:
        return put_str(b, c->lockdelay_end.name);
    case FSM_OP_PUT:
        return encode_put(&c->put, b);
    case FSM_OP_DEL:
        return put_str(b, c->del.key) || encode_cond(&c->del.cond, b);
    case FSM_OP_MEMBER_SET:
        return encode_member_set(&c->member_set, b);
    case FSM_OP_MEMBER_DEL:
        return buf_put_varint(b, c->member_del.id);
    case FSM_OP_CLUSTER_FORMAT:
        return buf_put_varint(b, c->cluster_format.format);
    default:
        return encode_prim(c, b); /* semaphores, elections; NOOP or an op the decoder rejects */
    }
}

/* Version 2's user and flags; nothing for a version-1 header. */
static bool is_checked(const struct fsm_cmd *c)
{
    return c->checked || c->user.len;
}

static int encode_user(const struct fsm_cmd *c, struct buf *b)
{
    if (!is_checked(c))
        return 0;
    return put_str(b, c->user) || buf_put_u8(b, c->admin ? HDR_FLAG_ADMIN : 0);
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

static int get_name(struct dec *d, const char *what, struct fsm_str *s)
{
    return get_str(d, what, s, 1, FSM_MAX_NAME);
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
    if (c->has_fence &&
        (get_name(d, "fence name", &c->fence_name) || get_u64(d, "fence token", &c->fence_token)))
        return -1;
    if (c->has_ifrev && get_u64(d, "ifrev", &c->ifrev))
        return -1;
    return 0;
}

static int get_member_id(struct dec *d, uint64_t *id)
{
    if (get_u64(d, "member id", id))
        return -1;
    return *id ? 0 : fail(d, "member id", "is 0");
}

static int get_addr(struct dec *d, const char *what, struct fsm_str *s)
{
    return get_str(d, what, s, 1, FSM_MAX_ADDR);
}

static int decode_session_open(struct dec *d, struct fsm_cmd_session_open *p)
{
    return get_u64(d, "ttl", &p->ttl_ms) || get_u64(d, "lockdelay", &p->lockdelay_ms) ||
           get_str(d, "session name", &p->name, 0, FSM_MAX_NAME);
}

static int decode_lock(struct dec *d, struct fsm_cmd_lock *p)
{
    return get_name(d, "lock name", &p->name) || get_u64(d, "sid", &p->sid) ||
           get_u64(d, "wait", &p->wait_ms);
}

static int decode_lock_ref(struct dec *d, struct fsm_cmd_lock_ref *p)
{
    return get_name(d, "lock name", &p->name) || get_u64(d, "sid", &p->sid);
}

static int decode_put(struct dec *d, struct fsm_cmd_put *p)
{
    return get_name(d, "key", &p->key) || get_str(d, "value", &p->value, 0, FSM_MAX_VALUE) ||
           get_u64(d, "lease", &p->lease_sid) || decode_cond(d, &p->cond);
}

static int decode_member_set(struct dec *d, struct fsm_cmd_member_set *p)
{
    return get_member_id(d, &p->id) || get_addr(d, "member client address", &p->client_addr) ||
           get_addr(d, "member raft address", &p->raft_addr);
}

static int decode_prim(struct dec *d, struct fsm_cmd *c)
{
    struct fsm_cmd_sem_acquire *sa = &c->sem_acquire;
    struct fsm_cmd_elect_campaign *ec = &c->elect_campaign;
    struct fsm_cmd_elect_proclaim *ep = &c->elect_proclaim;
    switch (c->op) {
    case FSM_OP_SEM_ACQUIRE:
        return get_name(d, "semaphore name", &sa->name) || get_u64(d, "sid", &sa->sid) ||
               get_u64(d, "limit", &sa->limit) || get_u64(d, "wait", &sa->wait_ms);
    case FSM_OP_SEM_RELEASE:
        return decode_lock_ref(d, &c->sem_release);
    case FSM_OP_ELECT_CAMPAIGN:
        return get_name(d, "election name", &ec->name) || get_u64(d, "sid", &ec->sid) ||
               get_str(d, "value", &ec->value, 0, FSM_MAX_ELECT_VALUE) ||
               get_u64(d, "wait", &ec->wait_ms);
    case FSM_OP_ELECT_PROCLAIM:
        return get_name(d, "election name", &ep->name) || get_u64(d, "sid", &ep->sid) ||
               get_u64(d, "token", &ep->token) ||
               get_str(d, "value", &ep->value, 0, FSM_MAX_ELECT_VALUE);
    case FSM_OP_ELECT_RESIGN:
        return decode_lock_ref(d, &c->elect_resign);
    default:
        return fail(d, "op", "unknown");
    }
}

static int decode_body(struct dec *d, struct fsm_cmd *c)
{
    switch (c->op) {
    case FSM_OP_NOOP:
        return 0;
    case FSM_OP_SESSION_OPEN:
        return decode_session_open(d, &c->session_open);
    case FSM_OP_SESSION_CLOSE:
        return get_u64(d, "sid", &c->session_close.sid);
    case FSM_OP_SESSION_EXPIRE:
        return get_u64(d, "sid", &c->session_expire.sid);
    case FSM_OP_SESSION_REVOKE:
        return get_u64(d, "sid", &c->session_revoke.sid);
    case FSM_OP_SESSION_CHECKPOINT:
        return get_u64(d, "sid", &c->session_checkpoint.sid) ||
               get_u64(d, "remaining", &c->session_checkpoint.remaining_ms);
    case FSM_OP_LOCK:
        return decode_lock(d, &c->lock);
    case FSM_OP_LOCK_SHARED:
        return decode_lock(d, &c->lock_shared);
    case FSM_OP_UNLOCK:
        return decode_lock_ref(d, &c->unlock);
    case FSM_OP_CANCEL_WAIT:
        return decode_lock_ref(d, &c->cancel_wait);
    case FSM_OP_LOCKDELAY_END:
        return get_name(d, "lock name", &c->lockdelay_end.name);
    case FSM_OP_PUT:
        return decode_put(d, &c->put);
    case FSM_OP_DEL:
        return get_name(d, "key", &c->del.key) || decode_cond(d, &c->del.cond);
    case FSM_OP_MEMBER_SET:
        return decode_member_set(d, &c->member_set);
    case FSM_OP_MEMBER_DEL:
        return get_member_id(d, &c->member_del.id);
    case FSM_OP_CLUSTER_FORMAT:
        return get_u64(d, "format", &c->cluster_format.format);
    default:
        return decode_prim(d, c);
    }
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
    if (flags & ~HDR_FLAG_ADMIN)
        return fail(d, "user flags", "has unknown bits");
    c->admin = flags & HDR_FLAG_ADMIN;
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
