/* SPDX-License-Identifier: Apache-2.0 */
/*
 * server — fencelockd's service layer: one libuv loop, one thread, for state and network.
 *
 * Owns struct srv, the only mutable state outside main. It is a composition: each folder of
 * src/server owns its part, declared in that folder's header with its invariants:
 *   net/net.h          the client port: listener, connections, request slots (`net`)
 *   cluster/cluster.h  leadership, barrier reads, members, the upgrade gate (`cluster`)
 *   lease/glue.h       the lease rules' state, hold times, parked LOCKs (`lease`)
 *   watch/parked.h     parked XREADs and ELECT.OBSERVEs (`xread`, `observe`); the event
 *                      history is watch/watch.h (`watch`)
 *   cmd/quota.h        quota reservations in flight (`quota`); cmd/dispatch.h runs commands
 *   security/          users and AUTH (`auth`), pre-auth limits (`limits`), the audit log
 *                      (`audit`), token keys (`tsig`)
 *   obs/               metrics (`m`, `cmdstat`), the HTTP endpoint (`http`), sd_notify
 *   config/            the settings (struct srv_config, `cfg`)
 * server.c creates, starts, stops and frees them in that order of dependence; this header
 * declares only the lifecycle (the clock is common/clock.h). A member is changed only by its
 * folder's code, except where that folder's header says otherwise.
 */
#ifndef FENCELOCK_SERVER_H
#define FENCELOCK_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <uv.h>

#include "common/buf.h"
#include "common/log.h"
#include "common/map.h"
#include "common/proto.h"
#include "common/resp.h"
#include "fsm/fsm.h"
#include "raft/rn.h"
#include "server/cluster/cluster.h"
#include "server/cmd/cmdstat.h"
#include "server/cmd/dispatch.h"
#include "server/cmd/latch_wait.h"
#include "server/cmd/quota.h"
#include "server/config/config.h"
#include "server/lease/glue.h"
#include "server/net/net.h"
#include "server/net/tls.h"
#include "server/obs/certexp.h"
#include "server/obs/http.h"
#include "server/obs/http_api.h"
#include "server/obs/http_fence.h"
#include "server/obs/metrics.h"
#include "server/obs/notify.h"
#include "server/security/audit.h"
#include "server/security/auth.h"
#include "server/security/httptoken.h"
#include "server/security/limits.h"
#include "server/security/tokensig.h"
#include "server/watch/parked.h"
#include "server/watch/watch.h"

/* The release, defined once as FL_VERSION in include/fencelock.h; the Makefile passes it here
 * (-DFENCELOCK_VERSION) so that the server does not include the client library's header. */
#ifndef FENCELOCK_VERSION
#error "FENCELOCK_VERSION is not defined: build with the Makefile (it reads include/fencelock.h)"
#endif

struct srv {
    uv_loop_t *loop;
    struct srv_config cfg;
    struct logger log;
    struct fsm *fsm;
    struct rn *rn;
    uv_timer_t tick;
    uv_signal_t sig_term, sig_int;
    uv_signal_t sig_hup; /* reloads the ACL, TLS and peer password files, reopens the audit log */
    bool hup_started;
    bool stopping, listening;
    uint64_t started_ms;
    struct srv_net net;            /* net/net.h */
    struct srv_cluster cluster;    /* cluster/cluster.h */
    struct srv_leases lease;       /* lease/glue.h */
    struct watch watch;            /* the event history XREAD reads (watch/watch.h) */
    struct srv_xread xread;        /* parked XREADs (watch/parked.h) */
    struct srv_observe observe;    /* parked ELECT.OBSERVEs (watch/parked.h) */
    struct srv_push push;          /* sid -> connections, for RESP3 pushes (watch/parked.h) */
    struct srv_latch_waits latchw; /* parked latch and barrier waits (cmd/latch_wait.h) */
    struct srv_quotas quota;       /* cmd/quota.h */
    struct srv_auth auth;          /* --acl-file users, AUTH (security/auth.h) */
    struct srv_limits limits;      /* pre-auth caps, output total, log rate (security/limits.h) */
    struct audit audit;            /* --audit-log (security/audit.h) */
    struct tsig tsig;              /* --token-key keys (cmd/cmd_sign.c; never logged) */
    struct htok htok;              /* bearer-token key (security/httptoken.h; never logged) */
    struct srv_http *http;         /* obs/http.h */
    struct srv_hfence hfence;      /* GET /v1/fence checks awaiting a barrier (obs/http_fence.h) */
    struct srv_hapi hapi;          /* /v1/ API requests awaiting a barrier (obs/http_api.h) */
    struct srv_metrics m;          /* obs/metrics.h */
    struct srv_certs certs;        /* expiry of the TLS files in use (obs/certexp.h) */
    struct cmdstat cmdstat;        /* fencelock_commands_total{command,result} */
    struct notify notify;          /* $NOTIFY_SOCKET: READY=1 once serving, STOPPING=1 (leader.c) */
    struct buf scratch;
};

/* server.c: lifecycle */
int srv_init(struct srv *s, uv_loop_t *loop, const struct srv_config *cfg);
int srv_start(struct srv *s);
/* --recover: force the configuration on the stopped node's data dir; 0 or -1. */
int srv_recover(struct srv *s);
/* --restore (cluster/restore.c): check cfg.restore (a `fencelock snapshot save` file), and make
 * the empty data dir a new cluster starting from it. 0, or -1 with the reason logged. */
int srv_restore(struct srv *s);
void srv_stop(struct srv *s); /* begins shutdown; the loop ends when everything closed */
void srv_free(struct srv *s);

#endif
