/* SPDX-License-Identifier: Apache-2.0 */
#include "common/log.h"
#include "common/io.h"
#include "common/num.h"
#include "common/timefmt.h"

#include "common/text.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LOG_LINE_MAX 4096
#define ELLIPSIS "..." /* marks a message cut at LOG_LINE_MAX */

static char level_char(enum log_level lv)
{
    switch (lv) {
    case LOG_DEBUG:
        return 'D';
    case LOG_INFO:
        return 'I';
    case LOG_WARN:
        return 'W';
    case LOG_ERROR:
        return 'E';
    }
    return '?';
}

/* Now, as timefmt.h's RFC 3339 form; TIME_RFC3339_NONE if the clock cannot be read. */
static void format_time(char out[TIME_RFC3339_BUF])
{
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0 || ts.tv_sec < 0) {
        memcpy(out, TIME_RFC3339_NONE, TIME_RFC3339_BUF);
        return;
    }
    (void)time_rfc3339(out, (uint64_t)ts.tv_sec * 1000 + (uint64_t)(ts.tv_nsec / 1000000L));
}

/* One line per entry: a newline inside a message would forge a second, unprefixed entry. */
static void flatten(char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] == '\n' || p[i] == '\r')
            p[i] = ' ';
}

/* Logging must never fail: a line that cannot be written whole is dropped silently. */
static void write_line(const char *p, size_t n)
{
    (void)io_write_all(STDERR_FILENO, p, n);
}

/* sd-daemon(3)'s prefixes: LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG of syslog(3). */
static const char *journal_prefix(enum log_level lv)
{
    switch (lv) {
    case LOG_DEBUG:
        return "<7>";
    case LOG_INFO:
        return "<6>";
    case LOG_WARN:
        return "<4>";
    case LOG_ERROR:
        return "<3>";
    }
    return "<6>";
}

bool log_stderr_is_journal(const char *journal_stream)
{
    const char *colon = journal_stream ? strchr(journal_stream, ':') : NULL;
    uint64_t dev, ino;
    struct stat st;
    if (!colon || num_parse_u64(journal_stream, (size_t)(colon - journal_stream), &dev) ||
        num_parse_u64_str(colon + 1, 0, UINT64_MAX, &ino) || fstat(STDERR_FILENO, &st) != 0)
        return false;
    return (uint64_t)st.st_dev == dev && (uint64_t)st.st_ino == ino;
}

static const char *level_name(enum log_level lv)
{
    static const char *const names[] = {"debug", "info", "warn", "error"};
    return (unsigned)lv < 4 ? names[lv] : "?";
}

/* The text line's message as a JSON object; cut with "..." if the escaped form outgrows it. */
static void write_json(const struct logger *l, enum log_level lv, const char *ts, const char *msg,
                       size_t n)
{
    char line[LOG_LINE_MAX * 2];
    int h =
        snprintf(line, sizeof line, "%s{\"time\":\"%s\",\"level\":\"%s\",\"node\":%d,\"msg\":\"",
                 l && l->journal ? journal_prefix(lv) : "", ts, level_name(lv), l ? l->id : 0);
    if (h < 0 || (size_t)h >= sizeof line)
        return;
    const char tail[] = "\"}\n";
    size_t room = sizeof line - (size_t)h - (sizeof ELLIPSIS - 1) - (sizeof tail - 1);
    size_t used = text_json_escape(msg, n, line + h, room + 1);
    size_t o = (size_t)h + strlen(line + h);
    if (used < n) {
        memcpy(line + o, ELLIPSIS, sizeof ELLIPSIS - 1);
        o += sizeof ELLIPSIS - 1;
    }
    memcpy(line + o, tail, sizeof tail - 1);
    write_line(line, o + sizeof tail - 1);
}

void log_msg(const struct logger *l, enum log_level lv, const char *fmt, ...)
{
    enum log_level min = l ? l->level : LOG_INFO;
    if (lv < min)
        return;
    char line[LOG_LINE_MAX];
    char ts[TIME_RFC3339_BUF];
    format_time(ts);
    int h = 0; /* a JSON line is built by write_json from the bare message */
    if (l && l->format != LOG_JSON && l->journal)
        h = snprintf(line, sizeof(line), "%s%c [%d] ", journal_prefix(lv), level_char(lv), l->id);
    else if (!l || l->format != LOG_JSON)
        h = snprintf(line, sizeof(line), "%s %c [%d] ", ts, level_char(lv), l ? l->id : 0);
    if (h < 0 || (size_t)h >= sizeof(line))
        return;
    size_t room = sizeof(line) - (size_t)h - 1; /* keep one byte for the newline */
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + h, room + 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        m = 0;
    size_t len = (size_t)m;
    if (len > room) {
        len = room;
        memcpy(line + h + len - (sizeof(ELLIPSIS) - 1), ELLIPSIS, sizeof(ELLIPSIS) - 1);
    }
    if (l && l->format == LOG_JSON) {
        write_json(l, lv, ts, line, len);
        return;
    }
    flatten(line + h, len);
    line[(size_t)h + len] = '\n';
    write_line(line, (size_t)h + len + 1);
}

int log_level_parse(const char *s, enum log_level *out)
{
    static const struct {
        const char *name;
        enum log_level lv;
    } names[] = {{"debug", LOG_DEBUG},
                 {"info", LOG_INFO},
                 {"warn", LOG_WARN},
                 {"warning", LOG_WARN},
                 {"error", LOG_ERROR}};
    if (!s)
        return -1;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcasecmp(s, names[i].name) == 0) {
            *out = names[i].lv;
            return 0;
        }
    }
    return -1;
}

int log_format_parse(const char *s, enum log_format *out)
{
    if (s && !strcmp(s, "text"))
        *out = LOG_TEXT;
    else if (s && !strcmp(s, "json"))
        *out = LOG_JSON;
    else
        return -1;
    return 0;
}
