/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quota — state quotas (--max-sessions, --max-locks, --max-keys, --max-waiters,
 * --max-data-bytes, --max-parked, and the per-user shares of --acl-file), checked on the leader
 * before a command is proposed (quota.c).
 *
 * Owns (struct srv_quotas, in struct srv as `quota`): what the proposals in flight have
 * reserved, all users together and per user, and each user's parked requests on this node.
 * Invariant: a reservation (struct srv_quota, carried by the request's slot) is released exactly
 * once, when its proposal completed or failed; the in-flight totals are the sum of the
 * unreleased reservations. The per-user tables' counters live until srv_quota_free.
 */
#ifndef FENCELOCK_QUOTA_H
#define FENCELOCK_QUOTA_H

#include <stdint.h>

#include "common/buf.h"
#include "common/map.h"
#include "fsm/fsm.h"
#include "server/obs/metrics.h"
#include "server/security/acl.h"

struct srv;
struct srv_req;

/* Quotas, indexed like the counters in struct srv_quota. */
enum { SRV_QUOTA_SESSIONS, SRV_QUOTA_LOCKS, SRV_QUOTA_KEYS, SRV_QUOTA_WAITERS, SRV_QUOTA_BYTES };

/* One proposal's reservation, or (in struct srv_quotas) the sum of those in flight. */
struct srv_quota {
    uint64_t n[SRV_QUOTA_N];
    /* the acting user's share (per-user quotas, ACL_QUOTA_* order), "" = none */
    char user[ACL_NAME_MAX + 1];
    uint64_t u[ACL_QUOTA_N];
};

struct srv_quotas {
    struct srv_quota pending; /* reserved by proposals in flight */
    struct map user_pending;  /* user name -> uint64_t[ACL_QUOTA_N] in flight */
    struct map user_parked;   /* user name -> uint64_t parked XREAD/OBSERVE here */
};

/* Reserve what `cmd` may add; 0, or -1 with a NOSPACE error written to out (nothing
 * reserved). Release exactly once when the proposal completed or failed. */
int srv_quota_reserve(struct srv *s, const struct fsm_cmd *cmd, const struct acl_user *user,
                      struct srv_quota *res, struct buf *out);
void srv_quota_release(struct srv *s, struct srv_quota *res);
/* Before parking an XREAD ... BLOCK or ELECT.OBSERVE ... WAIT: 0, or -1 with -NOSPACE written
 * when --max-parked (all users) or the user's max_parked= is reached. */
int srv_parked_admit(struct srv_req *r);
/* The counter of user u's parked requests on this node (NULL for no user, or out of memory):
 * a request that parks adds 1 to it and keeps the pointer, and takes the 1 back when it is
 * unparked, however it ends (the counters live until srv_quota_free). */
uint64_t *srv_parked_counter(struct srv *s, const struct acl_user *u);
/* Teardown: the per-user tables. */
void srv_quota_free(struct srv *s);
void srv_quota_render(struct srv *s, struct buf *out);
const char *srv_quota_name(int q);

#endif
