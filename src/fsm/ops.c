/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fsm/ops.c — the op descriptor as data: the rows of FSM_OPS (ops.h) indexed by op value, the
 * field table of each payload, and the readers that answer per-op questions from them (which
 * session a command acts on, what it may queue for, which format introduced it).
 *
 * Owns only constant tables; pure and thread-safe.
 */
#include <stddef.h>

#include "fsm/internal.h"

#define FIELD_(p, kind, member, what)                                                              \
    {FSM_F_##kind, offsetof(struct fsm_cmd_##p, member), what, #member},
#define FIELDS_(p)                                                                                 \
    static const struct fsm_field fields_##p[] = {FSM_PAYLOAD_##p(FIELD_, p)};                     \
    enum { nfields_##p = sizeof(fields_##p) / sizeof(fields_##p[0]) };
FSM_PAYLOADS(FIELDS_)
static const struct fsm_field fields_none[1]; /* NOOP: no fields */
enum { nfields_none = 0 };

#define DESC_(op, value, member, payload, format, grow, admin)                                     \
    [FSM_OP_##op] = {#op, format, FSM_GROW_##grow, admin, nfields_##payload, fields_##payload},
static const struct fsm_op_desc ops[FSM_OP__COUNT] = {FSM_OPS(DESC_)};

/* Every payload is a member of one anonymous union: they all start where NOOP's does. */
static const char *payload_of(const struct fsm_cmd *c)
{
    return (const char *)&c->noop;
}

const struct fsm_op_desc *fsm_op_desc(unsigned op)
{
    return op < FSM_OP__COUNT && ops[op].name ? &ops[op] : NULL;
}

const char *fsm_op_name(unsigned op)
{
    const struct fsm_op_desc *d = fsm_op_desc(op);
    return d ? d->name : "?";
}

unsigned fsm_op_format(unsigned op)
{
    const struct fsm_op_desc *d = fsm_op_desc(op);
    return d ? d->format : FSM_FORMAT_MAX + 1;
}

/* The first field of `kind` in the payload of `c`, NULL if none. */
static const struct fsm_field *field_of(const struct fsm_cmd *c, enum fsm_field_kind kind)
{
    const struct fsm_op_desc *d = fsm_op_desc(c->op);
    for (size_t i = 0; d && i < d->nfields; i++)
        if (d->fields[i].kind == kind)
            return &d->fields[i];
    return NULL;
}

const struct fsm_str *fsm_cmd_str(const struct fsm_cmd *c, enum fsm_field_kind kind)
{
    const struct fsm_field *f = field_of(c, kind);
    return f ? (const struct fsm_str *)(payload_of(c) + f->off) : NULL;
}

uint64_t *fsm_cmd_u64(struct fsm_cmd *c, enum fsm_field_kind kind)
{
    const struct fsm_field *f = field_of(c, kind);
    return f ? (uint64_t *)((char *)&c->noop + f->off) : NULL;
}

static uint64_t u64_or_0(const struct fsm_cmd *c, enum fsm_field_kind kind)
{
    const struct fsm_field *f = field_of(c, kind);
    return f ? *(const uint64_t *)(payload_of(c) + f->off) : 0;
}

uint64_t fsm_cmd_acting_sid(const struct fsm_cmd *c)
{
    return u64_or_0(c, FSM_F_SID);
}

bool fsm_cmd_wait_of(const struct fsm_cmd *c, struct fsm_wait_ref *w)
{
    const struct fsm_str *name = fsm_cmd_str(c, FSM_F_NAME);
    const struct fsm_field *names = field_of(c, FSM_F_NAMES);
    struct fsm_str first;
    if (!name && names) { /* a LOCK_MULTI: its first name stands for the request */
        struct fsm_names_it it;
        bool shared;
        fsm_names_begin(&it, (const struct fsm_names *)(payload_of(c) + names->off));
        if (!fsm_names_next(&it, &first, &shared))
            return false;
        name = &first;
    }
    if (!field_of(c, FSM_F_WAIT) || !name)
        return false;
    *w = (struct fsm_wait_ref){*name, u64_or_0(c, FSM_F_SID), u64_or_0(c, FSM_F_WAIT)};
    return true;
}
