/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cluster status and membership changes.
 *
 * Membership commands carry no session, so they are sent once: a lost answer is FL_EUNKNOWN
 * (check with fl_status before repeating).
 */
#include <stdlib.h>
#include <string.h>

#include "client/client.h"

static fl_err simple_call(fl_client *c, struct cl_cmd *m, unsigned flags, redisReply **r)
{
    fl_err e = cl_call(c, m, cl_deadline(c), flags, r);
    if (e == FL_OK && (*r)->type == REDIS_REPLY_ERROR) {
        e = cl_reply_err(c, *r);
        freeReplyObject(*r);
        *r = NULL;
    }
    return e;
}

static fl_err fill_members(fl_client *c, const redisReply *r, struct fl_status *st)
{
    if (r->type != REDIS_REPLY_ARRAY)
        return cl_fail(c, FL_EPROTO, "CLUSTER.MEMBERS: unexpected reply");
    st->members = calloc(r->elements ? r->elements : 1, sizeof(*st->members));
    if (!st->members)
        return cl_fail(c, FL_ENOMEM, "out of memory");
    for (size_t i = 0; i < r->elements; i++, st->n_members++) {
        const redisReply *it = r->element[i];
        struct fl_member *mb = &st->members[i];
        mb->id = cl_field_u64(it, "id");
        mb->leader = cl_field_u64(it, "leader") != 0;
        mb->raft_address = cl_field_dup(it, "raft_address");
        mb->client_address = cl_field_dup(it, "client_address");
        mb->role = cl_field_dup(it, "role");
        if (!mb->raft_address || !mb->client_address || !mb->role)
            return cl_fail(c, FL_ENOMEM, "out of memory");
    }
    return FL_OK;
}

static fl_err fill_info(fl_client *c, const redisReply *r, struct fl_status *st)
{
    if (r->type != REDIS_REPLY_ARRAY)
        return cl_fail(c, FL_EPROTO, "CLUSTER.INFO: unexpected reply");
    st->id = cl_field_u64(r, "id");
    st->leader_id = cl_field_u64(r, "leader_id");
    st->term = cl_field_u64(r, "term");
    st->commit_index = cl_field_u64(r, "commit_index");
    st->applied_index = cl_field_u64(r, "applied_index");
    st->revision = cl_field_u64(r, "revision");
    st->role = cl_field_dup(r, "role");
    st->leader = cl_field_dup(r, "leader");
    return st->role && st->leader ? FL_OK : cl_fail(c, FL_ENOMEM, "out of memory");
}

/* The node asked, then the leader it names: a second follower's answer is taken as it is. */
#define INFO_TRIES 2

/* CLUSTER.INFO of whichever node answers; a follower names the leader, which is asked
   instead (a follower's view of the members and revision may lag). */
static fl_err info_from_leader(fl_client *c, struct fl_status *out)
{
    struct cl_cmd m;
    redisReply *r;
    fl_err e = FL_OK;
    for (int tries = 0; tries < INFO_TRIES; tries++) {
        if (tries)
            fl_status_free(out);
        cl_cmd_init(&m, "CLUSTER.INFO");
        e = simple_call(c, &m, CL_RETRY | CL_ANYNODE, &r);
        if (e)
            return e;
        e = fill_info(c, r, out);
        freeReplyObject(r);
        if (e || strcmp(out->role, "leader") == 0 || !out->leader[0])
            return e;
        cl_set_leader(c, out->leader, strlen(out->leader));
    }
    return e;
}

/* CLUSTER.INFO then CLUSTER.MEMBERS, from the leader when one is known. */
fl_err fl_status(fl_client *c, struct fl_status *out)
{
    if (!c || !out)
        return FL_EINVAL;
    memset(out, 0, sizeof(*out));
    struct cl_cmd m;
    redisReply *r;
    fl_err e = info_from_leader(c, out);
    if (e == FL_OK) {
        cl_cmd_init(&m, "CLUSTER.MEMBERS");
        e = simple_call(c, &m, CL_RETRY | CL_ANYNODE, &r);
        if (e == FL_OK) {
            e = fill_members(c, r, out);
            freeReplyObject(r);
        }
    }
    if (e)
        fl_status_free(out);
    return e;
}

/* CLUSTER.INFO of the node that answers, as it is: no redirect to the leader, no members. */
fl_err fl_node_status(fl_client *c, struct fl_status *out)
{
    if (!c || !out)
        return FL_EINVAL;
    memset(out, 0, sizeof(*out));
    struct cl_cmd m;
    redisReply *r;
    cl_cmd_init(&m, "CLUSTER.INFO");
    fl_err e = simple_call(c, &m, CL_RETRY | CL_ANYNODE, &r);
    if (e)
        return e;
    e = fill_info(c, r, out);
    freeReplyObject(r);
    if (e)
        fl_status_free(out);
    return e;
}

void fl_status_free(struct fl_status *st)
{
    if (!st)
        return;
    for (size_t i = 0; i < st->n_members; i++) {
        free(st->members[i].raft_address);
        free(st->members[i].client_address);
        free(st->members[i].role);
    }
    free(st->members);
    free(st->role);
    free(st->leader);
    memset(st, 0, sizeof(*st));
}

/* A membership change: the server answers when it committed (an add after the catch-up), so
 * the reply may legitimately take the whole timeout, not just the connect timeout after which
 * a silent server is taken for gone. */
static fl_err admin(fl_client *c, struct cl_cmd *m)
{
    redisReply *r;
    m->block_ms = c->opt.timeout_ms;
    fl_err e = simple_call(c, m, 0, &r);
    if (e == FL_OK)
        freeReplyObject(r);
    return e;
}

fl_err fl_member_add(fl_client *c, uint64_t id, const char *raft_address)
{
    if (!c || !id || !raft_address || !raft_address[0])
        return FL_EINVAL;
    struct cl_cmd m;
    cl_cmd_init(&m, "CLUSTER.ADD");
    cl_arg_u64(&m, id);
    cl_arg_str(&m, raft_address);
    return admin(c, &m);
}

static fl_err member_remove(fl_client *c, uint64_t id, bool force)
{
    if (!c || !id)
        return FL_EINVAL;
    struct cl_cmd m;
    cl_cmd_init(&m, "CLUSTER.REMOVE");
    cl_arg_u64(&m, id);
    if (force)
        cl_arg_str(&m, "FORCE");
    return admin(c, &m);
}

fl_err fl_member_remove(fl_client *c, uint64_t id)
{
    return member_remove(c, id, false);
}

fl_err fl_member_remove_force(fl_client *c, uint64_t id)
{
    return member_remove(c, id, true);
}

fl_err fl_member_transfer(fl_client *c, uint64_t id)
{
    if (!c)
        return FL_EINVAL;
    struct cl_cmd m;
    cl_cmd_init(&m, "CLUSTER.TRANSFER");
    if (id)
        cl_arg_u64(&m, id);
    return admin(c, &m);
}
