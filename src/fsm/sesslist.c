/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/sesslist.c — a page of the live sessions in id order (SESSION.LIST).
 *
 * Owns nothing; only reads. Sessions are kept in a list ordered by sid (fsm.sess_head), so a
 * page is the sessions after a given id: found through the sid hash when that session is
 * still alive, else by walking from the first one.
 */
#include "fsm/internal.h"

size_t fsm_sessions_after(const struct fsm *f, uint64_t after, size_t limit,
                          void (*cb)(void *arg, uint64_t sid), void *arg)
{
    const struct sess *s = after ? fsm_sess_find(f, after) : NULL;
    s = s ? s->snext : f->sess_head;
    while (s && s->sid <= after) /* `after` ended: walk to the first id above it */
        s = s->snext;
    size_t n = 0;
    for (; s && n < limit; s = s->snext, n++)
        cb(arg, s->sid);
    return n;
}
