/* SPDX-License-Identifier: Apache-2.0 */
/*
 * status.c — the STATUS= line and the watchdog ping (status.h says when each is sent).
 */
#include "server/obs/status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "server/server.h"

#define STATUS_MIN_GAP_MS 1000 /* STATUS-only datagrams: at most one a second */
/* A live peer sends something at least once per election timeout (a vote answer, a heartbeat):
 * one not heard from for this many election timeouts counts as unreachable. */
#define HEARD_TIMEOUTS 3

void srv_status_init(struct srv *s)
{
    uint64_t usec =
        notify_watchdog_usec(getenv("WATCHDOG_USEC"), getenv("WATCHDOG_PID"), (long)getpid());
    if (!usec || s->notify.fd < 0)
        return;
    s->notify.watchdog_period_ms = usec / 2000 ? usec / 2000 : 1;
    LOGI(&s->log,
         "systemd watchdog: WatchdogSec is %llu ms, WATCHDOG=1 every %llu ms from the loop",
         (unsigned long long)(usec / 1000), (unsigned long long)s->notify.watchdog_period_ms);
}

/* Why a node that is not serving yet waits: the join in progress, or how many voters answer. */
static void waiting_text(struct srv *s, char *out, size_t cap)
{
    if (s->cfg.n_join && !s->cluster.joined) {
        snprintf(out, cap, "joining: asking %s to add node %llu",
                 s->cluster.join_target[0] ? s->cluster.join_target : s->cfg.join[0],
                 (unsigned long long)s->cfg.id);
        return;
    }
    unsigned voters, heard;
    rn_voters_heard(s->rn, (uint64_t)HEARD_TIMEOUTS * s->cfg.election_ms, &voters, &heard);
    unsigned need = voters / 2 + 1;
    if (voters == 0)
        snprintf(out, cap, "waiting: not a voter of any configuration yet");
    else if (heard < need)
        snprintf(out, cap, "waiting for a quorum: %u of %u voters unreachable (%u needed)",
                 voters - heard, voters, need);
    else
        snprintf(out, cap, "electing a leader: %u of %u voters reachable", heard, voters);
}

void srv_status_text(struct srv *s, char *out, size_t cap)
{
    uint64_t leader = 0;
    const char *addr = NULL;
    rn_leader(s->rn, &leader, &addr);
    if (srv_ready(s))
        snprintf(out, cap, "ready, leader in term %llu (this node)",
                 (unsigned long long)s->cluster.ready_term);
    else if (s->cluster.role == RN_FOLLOWER && leader)
        snprintf(out, cap, "ready, leader is node %llu", (unsigned long long)leader);
    else if (s->cluster.role == RN_LEADER)
        snprintf(out, cap, "leader in term %llu, applying its first entry",
                 (unsigned long long)rn_term(s->rn));
    else
        waiting_text(s, out, cap);
}

void srv_status_tick(struct srv *s)
{
    if (s->notify.fd < 0 || s->stopping)
        return;
    uint64_t now = clock_ms();
    if (s->notify.watchdog_period_ms &&
        (!s->notify.watchdog_ms || now - s->notify.watchdog_ms >= s->notify.watchdog_period_ms)) {
        s->notify.watchdog_ms = now;
        if (notify_watchdog(&s->notify))
            LOGW(&s->log, "NOTIFY_SOCKET: WATCHDOG=1 not sent: %s", strerror(errno));
    }
    if (s->notify.status_ms && now - s->notify.status_ms < STATUS_MIN_GAP_MS)
        return;
    char text[NOTIFY_STATUS_MAX];
    srv_status_text(s, text, sizeof text);
    if (!strcmp(text, s->notify.status))
        return;
    s->notify.status_ms = now;
    if (notify_status(&s->notify, text))
        LOGW(&s->log, "NOTIFY_SOCKET: STATUS not sent: %s", strerror(errno));
}
