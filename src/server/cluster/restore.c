/* SPDX-License-Identifier: Apache-2.0 */
/*
 * restore.c — `fencelockd --restore FILE`: the checks and the transformation between a backup
 * file and the data directory of a new cluster (rn_restore writes it).
 *
 * Nothing of FILE is trusted before it passed every check: the header and SHA-256 (snapfile.h),
 * then a full decode into a scratch FSM (fsm_restore validates every record and the
 * invariants), then the header's revision against the decoded one. The member table is emptied
 * (the old cluster's addresses would send clients away; the new nodes announce themselves) and
 * the state is serialised again, so the new cluster starts from canonical bytes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/snapfile.h"
#include "server/server.h"

/* The largest backup read: what a Raft snapshot may carry (InstallSnapshot's limit). */
#define RESTORE_MAX_BYTES (4ull << 30)

/* The whole file into *out (malloc'ed). 0, or -1 with the reason. */
static int read_file(const char *path, uint8_t **out, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open: %s", strerror(errno));
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *p = malloc(cap);
    while (p) {
        n += fread(p + n, 1, cap - n, f);
        if (n < cap || cap >= RESTORE_MAX_BYTES + SNAPFILE_HEADER)
            break;
        uint8_t *q = realloc(p, cap * 2);
        if (!q) {
            free(p);
            p = NULL;
            break;
        }
        p = q;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (!p || bad || n > RESTORE_MAX_BYTES + SNAPFILE_HEADER) {
        snprintf(err, errlen, "%s",
                 !p    ? "out of memory"
                 : bad ? "read error"
                       : "larger than 4 GiB");
        free(p);
        return -1;
    }
    *out = p;
    *len = n;
    return 0;
}

/* Check the payload and re-serialise it without the member table into `out`. */
static int transform(const uint8_t *payload, size_t n, uint64_t revision, struct buf *out,
                     struct fsm_stats *st, char *err, size_t errlen)
{
    struct fsm *scratch = fsm_new();
    if (!scratch) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    char why[256];
    int rc = -1;
    if (fsm_restore(scratch, payload, n, why, sizeof why))
        snprintf(err, errlen, "the state does not decode: %s", why);
    else if (fsm_revision(scratch) != revision)
        snprintf(err, errlen, "header revision %llu, state revision %llu: not the same backup",
                 (unsigned long long)revision, (unsigned long long)fsm_revision(scratch));
    else if (fsm_check_invariants(scratch, why, sizeof why))
        snprintf(err, errlen, "the state breaks an invariant: %s", why);
    else {
        fsm_forget_members(scratch);
        fsm_stats(scratch, st);
        rc = fsm_snapshot(scratch, out) ? (snprintf(err, errlen, "out of memory"), -1) : 0;
    }
    fsm_free(scratch);
    return rc;
}

int srv_restore(struct srv *s)
{
    char err[384];
    uint8_t *file = NULL;
    size_t len = 0, n = 0;
    const uint8_t *payload;
    uint64_t revision = 0;
    struct fsm_stats st;
    struct buf b;
    buf_init(&b);
    int rc = read_file(s->cfg.restore, &file, &len, err, sizeof err) ||
                     snapfile_parse(file, len, &payload, &n, &revision, err, sizeof err) ||
                     transform(payload, n, revision, &b, &st, err, sizeof err) ||
                     rn_restore(s->rn, (const uint8_t *)b.p, b.len, err, sizeof err)
                 ? -1
                 : 0;
    if (rc)
        LOGE(&s->log, "--restore %s: %s", s->cfg.restore, err);
    else
        LOGI(&s->log,
             "restored %s into %s: revision %llu, %llu sessions, %llu locks, %llu keys; start "
             "fencelockd with this --data-dir (and the same --initial-cluster) to serve it",
             s->cfg.restore, s->cfg.data_dir, (unsigned long long)revision,
             (unsigned long long)st.sessions, (unsigned long long)st.locks,
             (unsigned long long)st.keys);
    buf_free(&b);
    free(file);
    return rc;
}
