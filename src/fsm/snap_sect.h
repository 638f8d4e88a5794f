/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/snap_sect.h — the table of the snapshot's tagged sections (version 8; the framing is
 * src/fsm/snap_sect.c's, each payload its row's module's).
 *
 * Adding replicated state that the base records cannot hold: a row in FSM_SNAP_SECTIONS
 *   X(tag, "name", present, emit, restore)
 * with a tag never used before (tags are on disk: never reused or renumbered), and
 *   bool present(const struct fsm *f)          the feature holds state (then, and only then,
 *                                              the section is written)
 *   int emit(const struct fsm *f, struct buf *b)   the payload; 0 or -1 (out of memory)
 *   const char *restore(struct fsm *nf, struct rd *r)  read the payload into the state being
 *                                              restored (its sessions and locks are linked);
 *                                              NULL, or what is wrong (nf is then discarded)
 * A row's emit must be deterministic (the same state gives the same bytes on every replica) and
 * its restore must accept only what emit can write (snapshot(restore(x)) == x), as the base
 * records are; tests/unit/test_fsm_snapshot.c and the snapshot fuzz target hold it to that.
 */
#ifndef FENCELOCK_FSM_SNAP_SECT_H
#define FENCELOCK_FSM_SNAP_SECT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"

struct fsm;

/* The rows, in increasing tag order. */
#define FSM_SNAP_SECTIONS(X)                                                                       \
    X(1, "lockmeta", fsm_lockmeta_present, fsm_lockmeta_emit, fsm_lockmeta_restore)                \
    X(2, "reentrant", fsm_reent_present, fsm_reent_emit, fsm_reent_restore) /* reent.c */          \
    X(3, "latches", fsm_latch_snap_present, fsm_latch_snap_emit, fsm_latch_snap_restore)           \
    X(4, "lock history", fsm_history_present, fsm_history_emit, fsm_history_restore)               \
    X(5, "semaphore limits", fsm_semlim_present, fsm_semlim_emit, fsm_semlim_restore)              \
    X(6, "member http", fsm_member_http_present, fsm_member_http_emit, fsm_member_http_restore)

struct fsm_snap_section {
    uint64_t tag; /* 0 ends the table */
    const char *name;
    bool (*present)(const struct fsm *f);
    int (*emit)(const struct fsm *f, struct buf *b);
    const char *(*restore)(struct fsm *nf, struct rd *r);
};

/* The rows, ended by one whose name is NULL. */
const struct fsm_snap_section *fsm_snap_section_rows(void);
/* Whether any section would be written (then the snapshot is version 8). */
bool fsm_snap_sections_present(const struct fsm *f);
/* varint n, then each present section framed; 0 or -1. */
int fsm_snap_sections_emit(const struct fsm *f, struct buf *b);
/* Read the framed sections into nf; 0, or -1 with err set ("snapshot: ..."). */
int fsm_snap_sections_restore(struct fsm *nf, struct rd *r, char *err, size_t errlen);

#endif
