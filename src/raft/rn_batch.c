/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rn_batch.c — proposals: group commit, lazy batches, barriers, and the delivery of each
 * proposal's outcome exactly once. See rn_internal.h for the proposal life cycle.
 *
 * Group commit: proposals made during one turn of the event loop are packed into one log entry
 * (a batch of up to RN_BATCH_MAX commands), submitted from a uv_prepare handle just before the
 * loop blocks. One entry per turn instead of one per command: fewer raft_apply calls, smaller
 * AppendEntries, one envelope. A barrier or membership change first submits the open batches,
 * so the log keeps the order in which the server asked.
 *
 * Lazy commands (rn_propose_lazy) are ones whose outcome nobody waits on right away, such as a
 * LOCK that will queue behind another holder. A batch holding only lazy commands is not
 * submitted by the prepare handle. It goes with the next eager command, a barrier or a
 * membership change, or after cfg.lazy_ms. So a queueing LOCK rides in the entry of the next
 * UNLOCK instead of taking an entry (and a disk write on every node) of its own just ahead of
 * it.
 */
#include "common/list.h"
#include "raft/rn_internal.h"

#include <stdlib.h>
#include <string.h>

/* libraft's segment encoder requires entry lengths in multiples of this (see pad8). */
#define RN_ENTRY_ALIGN 8

static void pending_unlink(struct rn *rn, struct prop *p)
{
    DLIST_UNLINK_ENDS(rn->head, rn->tail, p);
    p->prev = p->next = NULL;
}

static void pending_push(struct rn *rn, struct prop *p)
{
    DLIST_APPEND(rn->head, rn->tail, p);
}

/* Proposals apply in the order they were made, so the match is almost always the head. */
static struct prop *pending_find(struct rn *rn, uint64_t pid)
{
    for (struct prop *p = rn->head; p; p = p->next)
        if (p->pid == pid)
            return p;
    return NULL;
}

void rn_batch_deliver(struct rn *rn, uint64_t pid, const struct fsm_reply *reply)
{
    struct prop *p = pending_find(rn, pid);
    if (!p)
        return; /* told already: leadership was lost in between (RN_UNKNOWN) */
    pending_unlink(rn, p);
    p->state = PROP_DELIVERED;
    p->cb(p->ctx, RN_OK, reply);
}

/*
 * libraft's segment encoder requires every entry length to be a multiple of 8 (an assert that
 * release builds compile out: an unpadded entry is written, then the segment fails its checksum
 * on the next start). The envelope's decoder ignores the zero padding after the n commands.
 */
static int pad8(struct buf *b)
{
    static const char zeros[RN_ENTRY_ALIGN] = {0};
    size_t rem = b->len % RN_ENTRY_ALIGN;
    return rem ? buf_append(b, zeros, RN_ENTRY_ALIGN - rem) : 0;
}

static void batch_link(struct rn *rn, struct batch *b)
{
    DLIST_PUSH(rn->batches, b);
}

static void batch_free(struct rn *rn, struct batch *b)
{
    DLIST_UNLINK(rn->batches, b);
    buf_free(&b->body);
    free(b);
}

/* Tell every prop of `b` not yet delivered: `open_status` if it never reached libraft,
 * `pending_status` if it did. */
static void batch_tell(struct rn *rn, struct batch *b, int open_status, int pending_status)
{
    for (unsigned i = 0; i < b->n; i++) {
        struct prop *p = &b->props[i];
        if (p->state == PROP_DELIVERED)
            continue;
        int status = p->state == PROP_PENDING ? pending_status : open_status;
        if (p->state == PROP_PENDING)
            pending_unlink(rn, p);
        p->state = PROP_DELIVERED;
        p->cb(p->ctx, status, NULL);
    }
}

static void batch_cb(struct raft_apply *req, int status, void *result)
{
    struct batch *b = (struct batch *)req;
    (void)result;
    if (status == 0) /* applied here, while leader in the term it was appended in */
        rn_lease_renew(b->rn, b->term, b->submit_ns);
    /* Appended but not applied here: the outcome cannot be known. */
    int st = status == RAFT_NOTLEADER ? RN_NOTLEADER : RN_UNKNOWN;
    batch_tell(b->rn, b, st, st);
    batch_free(b->rn, b);
}

/* Hand the open batch to libraft. On failure its props are told from the prepare handle.
 * Only while RUNNING: once rn_close has called raft_close, libraft 0.22.1's raft_apply stops its
 * event loop before the submit yet may return 0, so the entry would be neither applied nor freed
 * and no callback would come. The open batch then stays where it is until rn_batch_fail_all
 * tells its props RN_ERR (they never reached libraft: certainly not applied). */
void rn_batch_submit_open(struct rn *rn)
{
    struct batch *b = rn->open;
    if (!b || !rn_running(rn))
        return;
    rn->open = NULL;
    struct buf env;
    buf_init(&env);
    int rv = RAFT_NOMEM;
    if (!buf_put_u8(&env, RN_ENTRY_VERSION) && !buf_put_varint(&env, rn->cfg.id) &&
        !buf_put_varint(&env, b->props[0].pid) && !buf_put_varint(&env, b->n) &&
        !buf_append(&env, b->body.p, b->body.len) && !pad8(&env)) {
        struct raft_buffer rb = {.base = env.p, .len = env.len}; /* raft heap is malloc */
        for (unsigned i = 0; i < b->n; i++) {
            b->props[i].state = PROP_PENDING;
            pending_push(rn, &b->props[i]);
        }
        b->term = rn->raft->current_term;
        b->submit_ns = rn_lease_now_ns(rn); /* before libraft can send it */
        rv = raft_apply(rn->raft, &b->req, &rb, 1, batch_cb);
        if (rv == 0)
            return;
        for (unsigned i = 0; i < b->n; i++) {
            pending_unlink(rn, &b->props[i]);
            b->props[i].state = PROP_OPEN;
        }
    }
    buf_free(&env);
    b->status = rv == RAFT_NOTLEADER ? RN_NOTLEADER : RN_ERR;
    b->req.data = rn->failed; /* the failed list is chained through req.data */
    rn->failed = b;
}

static void lazy_cb(uv_timer_t *t)
{
    rn_batch_submit_open(t->data);
}

/* Runs every loop turn just before the loop blocks: submit (a lazy-only batch waits for the
 * timer or company), then tell refused batches. */
static void flush_cb(uv_prepare_t *h)
{
    struct rn *rn = h->data;
    if (rn->open && !rn->open->eager) {
        if (!uv_is_active((uv_handle_t *)&rn->lazy))
            uv_timer_start(&rn->lazy, lazy_cb, rn->cfg.lazy_ms, 0);
    } else {
        rn_batch_submit_open(rn);
    }
    while (rn->failed) {
        struct batch *b = rn->failed;
        rn->failed = b->req.data;
        batch_tell(rn, b, b->status, b->status);
        batch_free(rn, b);
    }
}

static int propose(struct rn *rn, const void *cmd, size_t len, rn_propose_cb cb, void *ctx,
                   bool lazy)
{
    if (!rn_running(rn))
        return RN_ERR;
    if (raft_state(rn->raft) != RAFT_LEADER)
        return RN_NOTLEADER;
    if (rn->open && (rn->open->n == RN_BATCH_MAX || rn->open->body.len >= RN_BATCH_BYTES))
        rn_batch_submit_open(rn);
    struct batch *b = rn->open;
    if (!b) {
        b = malloc(sizeof(*b));
        if (!b)
            return RN_ERR;
        memset(b, 0, offsetof(struct batch, props));
        b->rn = rn;
        buf_init(&b->body);
        batch_link(rn, b);
        rn->open = b;
    }
    size_t mark = b->body.len;
    if (buf_put_bytes(&b->body, cmd, len)) {
        buf_truncate(
            &b->body,
            mark); /* a half-written length must not reach the entry; clears the sticky error */
        if (b->n == 0) {
            rn->open = NULL;
            batch_free(rn, b);
        }
        return RN_ERR;
    }
    b->eager |= !lazy;
    struct prop *p = &b->props[b->n++];
    memset(p, 0, sizeof(*p));
    p->pid = rn->next_pid++;
    p->state = PROP_OPEN;
    p->cb = cb;
    p->ctx = ctx;
    return RN_OK;
}

int rn_propose(struct rn *rn, const void *cmd, size_t len, rn_propose_cb cb, void *ctx)
{
    return propose(rn, cmd, len, cb, ctx, false);
}

int rn_propose_lazy(struct rn *rn, const void *cmd, size_t len, rn_propose_cb cb, void *ctx)
{
    return propose(rn, cmd, len, cb, ctx, rn->cfg.lazy_ms > 0);
}

uint64_t rn_proposals_pending(struct rn *rn)
{
    uint64_t n = 0;
    for (struct batch *b = rn->batches; b; b = b->next)
        for (unsigned i = 0; i < b->n; i++)
            n += b->props[i].state != PROP_DELIVERED;
    return n;
}

static void bar_cb(struct raft_barrier *req, int status)
{
    struct bar *b = (struct bar *)req;
    if (status == 0)
        rn_lease_renew(b->rn, b->term, b->submit_ns);
    b->cb(b->ctx, status == 0 ? RN_OK : (status == RAFT_NOTLEADER ? RN_NOTLEADER : RN_UNKNOWN));
    free(b);
}

int rn_barrier(struct rn *rn, rn_barrier_cb cb, void *ctx)
{
    if (!rn_running(rn))
        return RN_ERR;
    if (raft_state(rn->raft) != RAFT_LEADER)
        return RN_NOTLEADER;
    rn_batch_submit_open(rn); /* the barrier goes after everything proposed before it */
    struct bar *b = calloc(1, sizeof(*b));
    if (!b)
        return RN_ERR;
    b->rn = rn;
    b->cb = cb;
    b->ctx = ctx;
    b->term = rn->raft->current_term;
    b->submit_ns = rn_lease_now_ns(rn);
    int rv = raft_barrier(rn->raft, &b->req, bar_cb);
    if (rv) {
        free(b);
        return rv == RAFT_NOTLEADER ? RN_NOTLEADER : RN_ERR;
    }
    return RN_OK;
}

void rn_batch_fail_all(struct rn *rn)
{
    while (rn->batches) {
        struct batch *b = rn->batches;
        batch_tell(rn, b, RN_ERR, RN_UNKNOWN);
        batch_free(rn, b);
    }
    rn->open = rn->failed = NULL;
}

void rn_batch_init(struct rn *rn)
{
    uv_prepare_init(rn->loop, &rn->flush);
    rn->flush.data = rn;
    uv_prepare_start(&rn->flush, flush_cb);
    uv_unref((uv_handle_t *)&rn->flush); /* never what keeps the loop running */
    uv_timer_init(rn->loop, &rn->lazy);
    rn->lazy.data = rn;
    uv_unref((uv_handle_t *)&rn->lazy);
}
