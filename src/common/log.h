/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log — leveled log lines on stderr.
 *
 * Owns nothing and keeps no global state: the caller owns a struct logger (threshold level and
 * the node id printed on each line) and passes it to every call; a NULL logger means "info, id
 * 0". Each line is `2026-12-02T16:05:41.123Z I [1] message`, UTC wall clock, emitted with one
 * write(2) so lines from threads and processes sharing stderr do not interleave. Newlines in
 * the message become spaces; a message longer than the line buffer is cut and ends in "...".
 * With LOG_JSON each line is one object instead:
 * {"time":"2026-12-02T16:05:41.123Z","level":"info","node":1,"msg":"..."}; the message is
 * escaped by text_json_escape (common/text.h, the one JSON policy: the audit log's and the
 * CLI's too), so any byte a log line quotes (a client's key, say) stays inside its string; an
 * escape is never cut by the line's bound.
 * With `journal` set (stderr is systemd's journal stream: log_stderr_is_journal) a text line
 * drops its timestamp (journald stamps each entry itself) and both formats start with the
 * sd-daemon(3) priority prefix journald turns into PRIORITY=: `<3>` error, `<4>` warn,
 * `<6>` info, `<7>` debug, so `journalctl -p warning` selects by level:
 * `<4>W [1] message`.
 */
#ifndef FENCELOCK_LOG_H
#define FENCELOCK_LOG_H

#include <stdbool.h>
#include <stddef.h>

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

enum log_format { LOG_TEXT, LOG_JSON };

struct logger {
    enum log_level level;   /* lines below this level are dropped */
    int id;                 /* node id printed in each line */
    enum log_format format; /* LOG_TEXT (the zero value) or LOG_JSON */
    bool journal;           /* stderr is the journal: priority prefix, no timestamp */
};

void log_msg(const struct logger *l, enum log_level lv, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "debug" "info" "warn" (or "warning") "error", case-insensitive. 0, or -1 if unknown. */
int log_level_parse(const char *s, enum log_level *out);
/* True when `journal_stream` ($JOURNAL_STREAM, "DEVICE:INODE" in decimal, as systemd sets it
 * for a unit whose stderr goes to the journal) names the file stderr is now: a process that
 * inherited the variable but whose stderr was redirected elsewhere keeps plain lines. */
bool log_stderr_is_journal(const char *journal_stream);
/* "text" or "json". 0, or -1 if unknown. */
int log_format_parse(const char *s, enum log_format *out);

#define LOGD(l, ...) log_msg((l), LOG_DEBUG, __VA_ARGS__)
#define LOGI(l, ...) log_msg((l), LOG_INFO, __VA_ARGS__)
#define LOGW(l, ...) log_msg((l), LOG_WARN, __VA_ARGS__)
#define LOGE(l, ...) log_msg((l), LOG_ERROR, __VA_ARGS__)

#endif
