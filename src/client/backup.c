/* SPDX-License-Identifier: Apache-2.0 */
/*
 * backup.c — fl_snapshot_save: SNAPSHOT.SAVE from the leader into a file (snapfile.h layout).
 *
 * The bytes are checked against the leader's SHA-256 before the file is touched, and the file
 * is replaced atomically (temporary file, fsync, rename, fsync of the directory), so a crash or
 * a bad transfer never leaves a damaged backup under `path`.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/client.h"
#include "common/io.h"
#include "common/snapfile.h"

/* fsync of the directory holding path, so the rename itself is durable. */
static int sync_dir(const char *path)
{
    char *copy = strdup(path);
    if (!copy)
        return -1;
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(copy);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

static fl_err write_file(fl_client *c, const char *path, const uint8_t hdr[SNAPFILE_HEADER],
                         const char *data, size_t n)
{
    /* A fresh name next to path made with O_EXCL (mkostemp), mode 0600: a file or symlink
       someone planted at a predictable "path.tmp" in a shared directory is never followed,
       truncated or left readable by others. */
    size_t tl = strlen(path) + 8;
    char *tmp = malloc(tl);
    if (!tmp)
        return cl_fail(c, FL_ENOMEM, "out of memory");
    snprintf(tmp, tl, "%s.XXXXXX", path);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return cl_fail(c, FL_EIO, "cannot write %s: %s", path, strerror(e));
    }
    int ok = fchmod(fd, 0600) == 0 && io_write_all(fd, hdr, SNAPFILE_HEADER) == 0 &&
             io_write_all(fd, data, n) == 0 && fsync(fd) == 0;
    int e = errno;
    if (close(fd) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = 0;
        e = errno;
    }
    if (!ok)
        unlink(tmp);
    free(tmp);
    if (!ok)
        return cl_fail(c, FL_EIO, "cannot write %s: %s", path, strerror(e));
    if (sync_dir(path) != 0)
        return cl_fail(c, FL_EIO, "%s written, but its directory could not be synced: %s", path,
                       strerror(errno));
    return FL_OK;
}

/* The reply's fields, checked: data, its size and SHA-256 as the leader computed them. */
static fl_err check_reply(fl_client *c, const redisReply *r, struct fl_snapshot_info *info,
                          const redisReply **data)
{
    const redisReply *sha = cl_field(r, "sha256");
    *data = cl_field(r, "data");
    if (r->type != REDIS_REPLY_ARRAY || !*data || (*data)->type != REDIS_REPLY_STRING || !sha ||
        sha->type != REDIS_REPLY_STRING || sha->len != 2 * SNAPFILE_SHA_LEN)
        return cl_fail(c, FL_EPROTO, "SNAPSHOT.SAVE: a reply of an unexpected shape");
    info->revision = cl_field_u64(r, "revision");
    info->size = cl_field_u64(r, "size");
    memcpy(info->sha256, sha->str, sha->len);
    info->sha256[sha->len] = 0;
    char got[SNAPFILE_SHA_HEX];
    if (info->size != (*data)->len ||
        snapfile_sha256_hex((const uint8_t *)(*data)->str, (*data)->len, got) ||
        strcmp(got, info->sha256) != 0)
        return cl_fail(c, FL_EPROTO,
                       "SNAPSHOT.SAVE: the bytes received do not match the "
                       "leader's size and SHA-256; nothing was written");
    return FL_OK;
}

fl_err fl_snapshot_save(fl_client *c, const char *path, struct fl_snapshot_info *info)
{
    if (!c || !path || !path[0])
        return FL_EINVAL;
    struct fl_snapshot_info local;
    if (!info)
        info = &local;
    memset(info, 0, sizeof(*info));
    struct cl_cmd m;
    redisReply *r;
    cl_cmd_init(&m, "SNAPSHOT.SAVE");
    fl_err e = cl_call(c, &m, cl_deadline(c), CL_RETRY, &r);
    if (e)
        return e;
    const redisReply *data;
    uint8_t hdr[SNAPFILE_HEADER];
    if (r->type == REDIS_REPLY_ERROR)
        e = cl_reply_err(c, r);
    else if ((e = check_reply(c, r, info, &data)) == FL_OK) {
        if (snapfile_header(hdr, info->revision, data->len, info->sha256))
            e = cl_fail(c, FL_EPROTO, "SNAPSHOT.SAVE: a bad SHA-256");
        else
            e = write_file(c, path, hdr, data->str, data->len);
    }
    freeReplyObject(r);
    return e;
}
