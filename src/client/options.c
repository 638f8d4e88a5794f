/* SPDX-License-Identifier: Apache-2.0 */
/*
 * options.c — struct fl_options across library versions, and the library's own version.
 *
 * The caller allocates struct fl_options, so a program built against an older header hands in
 * a shorter struct than this library's. The struct's first field is its size as the caller
 * compiled it (fl_options_init, inline in the header, passes sizeof); this file is the only
 * place that reads a caller's options, and it reads no byte past that size. Fields past it
 * take their defaults; bytes past this library's struct must be zero (an option this library
 * does not know, left at its default 0, is fine; one that was set cannot be honoured).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "client/client.h"

/* fl_options defaults (fencelock.h documents them). */
#define CL_DEFAULT_TIMEOUT_MS 5000
#define CL_DEFAULT_CONNECT_TIMEOUT_MS 1000
#define CL_DEFAULT_MARGIN_MS 10
#define CL_DEFAULT_DRIFT_PPM 10000 /* 1%: far more than any NTP-disciplined clock drifts */

/* The first sized layout ends after tls_server_name: the smallest size any caller can have.
 * Fixed forever; fields added later end after it. */
#define CL_OPTIONS_SIZE_0 (offsetof(struct fl_options, tls_server_name) + sizeof(const char *))

static void defaults(struct fl_options *o)
{
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
    o->timeout_ms = CL_DEFAULT_TIMEOUT_MS;
    o->connect_timeout_ms = CL_DEFAULT_CONNECT_TIMEOUT_MS;
    o->margin_ms = CL_DEFAULT_MARGIN_MS;
    o->drift_ppm = CL_DEFAULT_DRIFT_PPM;
}

/* Write only `size` bytes: the caller's struct may be shorter (an older header) or longer (a
 * newer one: its extra fields default to 0) than ours. */
void fl_options_init_size(struct fl_options *opt, size_t size)
{
    if (!opt || size < sizeof opt->size)
        return;
    struct fl_options d;
    defaults(&d);
    d.size = size;
    memcpy(opt, &d, size < sizeof d ? size : sizeof d);
    if (size > sizeof d)
        memset((char *)opt + sizeof d, 0, size - sizeof d);
}

int cl_options_read(struct fl_options *out, const struct fl_options *opt)
{
    defaults(out);
    if (!opt)
        return 0;
    size_t size = opt->size;
    if (size < CL_OPTIONS_SIZE_0)
        return -1;
    if (size > sizeof *out) {
        const unsigned char *extra = (const unsigned char *)opt + sizeof *out;
        for (size_t i = 0; i < size - sizeof *out; i++)
            if (extra[i])
                return -1;
        size = sizeof *out;
    }
    memcpy(out, opt, size);
    out->size = sizeof *out;
    return 0;
}

void cl_options_apply(struct fl_options *to, const struct fl_options *o)
{
    if (o->timeout_ms > 0)
        to->timeout_ms = o->timeout_ms;
    if (o->connect_timeout_ms > 0)
        to->connect_timeout_ms = o->connect_timeout_ms;
    if (o->margin_ms >= 0)
        to->margin_ms = o->margin_ms;
    if (o->drift_ppm >= 0 && o->drift_ppm < CL_PPM)
        to->drift_ppm = o->drift_ppm;
    if (o->refused_ms > 0)
        to->refused_ms = o->refused_ms;
}

/* The numbers the library was built with (its own copy of the header's FL_VERSION_*). */
const char *fl_version(int *major, int *minor, int *patch)
{
    if (major)
        *major = FL_VERSION_MAJOR;
    if (minor)
        *minor = FL_VERSION_MINOR;
    if (patch)
        *patch = FL_VERSION_PATCH;
    return FL_VERSION;
}
