/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm_golden.h — what the golden fixture (tests/fixtures/fsm_golden/golden.h) records per entry,
 * and the text digest of an apply's events that it stores.
 *
 * Shared by gen_fsm_golden.c (which writes the fixture) and test_fsm_codec_golden.c (which
 * checks the code against it). golden_events_digest returns a malloc'd string the caller frees.
 */
#ifndef FENCELOCK_FSM_GOLDEN_H
#define FENCELOCK_FSM_GOLDEN_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/buf.h"
#include "fsm/fsm.h"

struct golden_entry {
    const uint8_t *p; /* the encoded entry */
    size_t len;
    uint8_t reply_kind; /* enum fsm_reply_kind of applying it after the entries before it */
    uint64_t reply_value;
    const char *reply_err; /* "" unless ERR */
    uint64_t revision;     /* fsm_revision after it */
    const char *events;    /* golden_events_digest of its events */
};

#define GOLDEN_NAME_SHOWN 16 /* event names are cut to this many bytes; their length is kept */

/* "type:sid:token:ms:expired:namelen:name;" per event, names cut and made printable. */
static char *golden_events_digest(const struct fsm_events *ev)
{
    struct buf b;
    buf_init(&b);
    for (size_t i = 0; i < ev->n; i++) {
        const struct fsm_event *e = &ev->ev[i];
        char line[160], name[GOLDEN_NAME_SHOWN + 1];
        size_t n = e->name.len < GOLDEN_NAME_SHOWN ? e->name.len : GOLDEN_NAME_SHOWN;
        for (size_t k = 0; k < n; k++) {
            char ch = e->name.p[k];
            name[k] = ch >= ' ' && ch <= '~' && ch != '"' && ch != '\\' ? ch : '?';
        }
        name[n] = '\0';
        int len = snprintf(line, sizeof(line),
                           "%u:%" PRIu64 ":%" PRIu64 ":%" PRIu64 ":%d:%" PRIu32 ":%s;", e->type,
                           e->sid, e->token, e->ms, e->expired, e->name.len, name);
        if (buf_append(&b, line, (size_t)len)) {
            buf_free(&b);
            return NULL;
        }
    }
    if (buf_put_u8(&b, 0)) {
        buf_free(&b);
        return NULL;
    }
    return b.p;
}

#endif
