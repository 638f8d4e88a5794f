/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/snap_sect.c — the snapshot's tagged sections (version 8): replicated state a feature
 * keeps beside the base records, one row per feature in FSM_SNAP_SECTIONS (snap_sect.h).
 *
 * Owns the framing. After the members, a version-8 snapshot holds
 *   varint n_sections (>= 1), per section in strictly increasing tag order:
 *     varint tag (a row's), varint len (1..the bytes left), then len bytes: the row's payload
 * A section is written only while its feature holds state (the row's `present`), so a state
 * with none is written as version 7 or older, byte for byte as before (snapshot.c's rule: the
 * oldest version that holds the state).
 *
 * Restore calls a row's `restore` on exactly its len bytes, after the base records are read and
 * linked, so a section may refer to sessions and locks. The row validates as the base records
 * are validated (canonical: only what its `emit` could have written) and must consume every
 * byte; afterwards its `present` must hold (an empty section is not canonical). An unknown tag
 * is refused: a newer release wrote it. Rows own their payload format, and document it in their
 * own file.
 *
 * Why sections instead of another linear version: features added side by side (lock metadata,
 * latches, lock history) each add a row and a file, and no feature renumbers another's format.
 */
#include <stdio.h>

#include "fsm/internal.h"
#include "fsm/snap_sect.h"

#define ROW(tag, name, present, emit, restore) {tag, name, present, emit, restore},
static const struct fsm_snap_section sections[] = {
    FSM_SNAP_SECTIONS(ROW){0, NULL, NULL, NULL, NULL}};
#undef ROW

const struct fsm_snap_section *fsm_snap_section_rows(void)
{
    return sections;
}

bool fsm_snap_sections_present(const struct fsm *f)
{
    for (const struct fsm_snap_section *s = sections; s->name; s++)
        if (s->present(f))
            return true;
    return false;
}

int fsm_snap_sections_emit(const struct fsm *f, struct buf *b)
{
    uint64_t n = 0;
    for (const struct fsm_snap_section *s = sections; s->name; s++)
        n += s->present(f) ? 1 : 0;
    if (buf_put_varint(b, n))
        return -1;
    /* Each payload is built aside and copied once: its length precedes it, and canonical
     * varints leave no room to patch a length in afterwards. */
    struct buf tmp;
    buf_init(&tmp);
    int rc = 0;
    for (const struct fsm_snap_section *s = sections; s->name && !rc; s++) {
        if (!s->present(f))
            continue;
        buf_truncate(&tmp, 0);
        rc = s->emit(f, &tmp) || buf_put_varint(b, s->tag) || buf_put_bytes(b, tmp.p, tmp.len);
    }
    buf_free(&tmp);
    return rc ? -1 : 0;
}

static const struct fsm_snap_section *row(uint64_t tag)
{
    for (const struct fsm_snap_section *s = sections; s->name; s++)
        if (s->tag == tag)
            return s;
    return NULL;
}

int fsm_snap_sections_restore(struct fsm *nf, struct rd *r, char *err, size_t errlen)
{
    uint64_t n, prev = 0;
    const char *why = NULL;
    if (fsm_rd_varint(r, &n))
        why = "truncated section count";
    else if (n == 0)
        why = "a version-8 snapshot without sections";
    for (uint64_t i = 0; i < n && !why; i++) {
        uint64_t tag, len;
        const struct fsm_snap_section *s;
        if (fsm_rd_varint(r, &tag) || fsm_rd_varint(r, &len)) {
            why = "truncated section header";
        } else if (i && tag <= prev) {
            why = "sections not in strictly increasing tag order";
        } else if (!(s = row(tag))) {
            why = "unknown section (a newer release wrote it: upgrade this node)";
        } else if (len == 0 || len > r->len - r->off) {
            why = "bad section length";
        } else {
            struct rd sub;
            rd_init(&sub, r->p + r->off, (size_t)len);
            why = s->restore(nf, &sub);
            if (!why && sub.off != sub.len)
                why = "trailing bytes in a section";
            if (!why && !s->present(nf))
                why = "an empty section";
            if (why && errlen) {
                snprintf(err, errlen, "snapshot: section %s: %s (at byte %zu)", s->name, why,
                         r->off + sub.off);
                return -1;
            }
            r->off += (size_t)len;
        }
        prev = tag;
    }
    if (why && errlen)
        snprintf(err, errlen, "snapshot: %s (at byte %zu)", why, r->off);
    return why ? -1 : 0;
}
