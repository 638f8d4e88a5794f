/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace.c — fl_trace_set: the calling thread's W3C traceparent, which its LOCK, UNLOCK and
 * fenced writes carry (TRACEPARENT, docs/protocol.md "Trace context").
 *
 * Owns one thread-local copy of the text (common/trace.h's exact form), so each thread of a
 * program carries its own current span, as OpenTelemetry's context is per thread; "" = none.
 */
#include <string.h>

#include "client/client.h"
#include "common/trace.h"

static _Thread_local char current[TRACE_TEXT_LEN + 1];

fl_err fl_trace_set(const char *traceparent)
{
    struct trace_ctx t;
    if (!traceparent || !traceparent[0]) {
        current[0] = '\0';
        return FL_OK;
    }
    if (trace_parse(traceparent, strlen(traceparent), &t))
        return FL_EINVAL;
    trace_format(&t, current);
    return FL_OK;
}

const char *fl_trace_get(void)
{
    return current;
}

void cl_arg_trace(struct cl_cmd *m)
{
    if (!current[0])
        return;
    cl_arg_str(m, "TRACEPARENT");
    cl_arg_str(m, current);
}
