/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `fencelock watch`: print the event stream (fl_watch) one line per event until a signal, or
 * --count events, or an error.
 *
 * Threads: fl_watch's thread runs the callback, which alone writes stdout. The main thread
 * blocks SIGINT, SIGTERM and SIGHUP before the watcher exists (so that thread inherits the
 * mask), then waits for one of them or for the watcher to end, and stops and joins it.
 * Ownership: struct watch_out lives on cli_cmd_watch's stack; the callback borrows it.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/out.h"

#define WATCH_POLL_MS 200 /* how often the main thread looks whether the watcher ended */
#define NUM_DIGITS_MAX 19 /* a field shown as a JSON number fits a signed 64-bit integer */

static const char usage_watch[] =
    "usage: fencelock watch [PREFIX] [--from ID] [--count N] [--json]\n"
    "Print the events of every key, lock and session (or of the keys and locks whose name\n"
    "starts with PREFIX) as they are applied, one line per event, until SIGINT or SIGTERM:\n"
    "  ID TYPE [NAME] FIELD=VALUE ...\n"
    "(a value with spaces, quotes or bytes that are not printable ASCII is shown in double\n"
    "quotes with C escapes). After a leader change or a reconnect the watch resumes after the\n"
    "last event printed: each event is printed once, in order (a note goes to stderr).\n"
    "While no server answers, it says so on stderr and keeps trying.\n"
    "  --from ID   start after event ID (as printed), 0 for every retained event, $ (default)\n"
    "              for the events after now\n"
    "  --count N   exit 0 after N events\n"
    "  --json      one JSON object per line: id, type, name, the other fields (numbers as\n"
    "              numbers; value, or value_base64 if it is not UTF-8)\n"
    "Exit status: 0 on SIGINT/SIGTERM/SIGHUP or after --count; 1 if the events after ID are no\n"
    "longer retained (start again with --from 0 or --from '$'); 2 usage; 4 other errors.\n";

struct watch_out {
    int json;
    uint64_t count; /* 0: no limit */
    uint64_t printed;
    atomic_int write_failed;
};

/* Shown as is: printable ASCII without spaces, quotes or backslashes, not empty. */
static int plain(const char *s, size_t n)
{
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch <= ' ' || ch >= 0x7f || ch == '"' || ch == '\\' || ch == '=')
            return 0;
    }
    return 1;
}

static void print_quoted(const char *s, size_t n)
{
    if (plain(s, n)) {
        fwrite(s, 1, n, stdout);
        return;
    }
    putchar('"');
    out_esc(stdout, s, n, OUT_QUOTE | OUT_ASCII);
    putchar('"');
}

static void print_line(const struct fl_event *ev)
{
    printf("%s %s", ev->id, ev->type);
    if (ev->name[0]) {
        putchar(' ');
        print_quoted(ev->name, strlen(ev->name));
    }
    for (size_t i = 0; i < ev->n_fields; i++) {
        const struct fl_watch_field *f = &ev->fields[i];
        if (strcmp(f->key, "type") == 0 || strcmp(f->key, "name") == 0)
            continue;
        printf(" %s=", f->key);
        print_quoted(f->value, f->value_len);
    }
    putchar('\n');
}

/* A decimal that a JSON reader takes as an exact integer. */
static int is_number(const char *s, size_t n)
{
    if (n == 0 || n > NUM_DIGITS_MAX || (n > 1 && s[0] == '0'))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

static void print_json(const struct fl_event *ev)
{
    struct jw w;
    jw_init(&w, stdout);
    jw_obj(&w);
    jw_key(&w, "id");
    jw_str(&w, ev->id);
    for (size_t i = 0; i < ev->n_fields; i++) {
        const struct fl_watch_field *f = &ev->fields[i];
        if (strcmp(f->key, "value") == 0) {
            jw_bytes(&w, "value", f->value, f->value_len);
            continue;
        }
        jw_key(&w, f->key);
        if (strcmp(f->key, "name") != 0 && strcmp(f->key, "type") != 0 &&
            is_number(f->value, f->value_len))
            jw_u64(&w, strtoull(f->value, NULL, 10));
        else
            jw_strn(&w, f->value, f->value_len);
    }
    jw_end(&w);
}

static int on_event(const struct fl_event *ev, void *ctx)
{
    struct watch_out *o = ctx;
    if (ev->kind == FL_WATCH_COMPACTED) {
        cli_say("watch: %s", ev->message);
        return 1;
    }
    if (ev->kind == FL_WATCH_INTERRUPTED) {
        cli_say("watch: no answer (%s); retrying", ev->message);
        return 0;
    }
    if (ev->kind == FL_WATCH_RESUMED) {
        cli_say("watch: resumed after %s (%s)", ev->id[0] ? ev->id : "the start", ev->message);
        return 0;
    }
    if (o->json)
        print_json(ev);
    else
        print_line(ev);
    if (fflush(stdout) != 0) { /* a closed pipe (`| head`): nobody reads any more */
        atomic_store(&o->write_failed, 1);
        return 1;
    }
    o->printed++;
    return o->count && o->printed >= o->count;
}

/* Wait for a terminating signal or the watcher's end. */
static void wait_end(fl_watcher *w, const sigset_t *set)
{
    struct timespec slice = {0, WATCH_POLL_MS * 1000000L};
    while (!fl_watch_done(w)) {
        int sig = sigtimedwait(set, NULL, &slice);
        if (sig > 0)
            return;
        if (sig < 0 && errno != EAGAIN && errno != EINTR)
            return;
    }
}

enum { O_FROM = 1, O_COUNT };

const struct opt_spec cli_opts_watch[] = {
    {"from", 0, 1, O_FROM, "ID"},
    {"count", 0, 1, O_COUNT, "N"},
    {NULL, 0, 0, 0, NULL},
};

static int run_watch(struct cli *c, struct sub_args *a, const char *prefix, const char *from,
                     struct watch_out *o)
{
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    fl_watcher *w;
    fl_err e = fl_watch(c->client, prefix, from, on_event, o, &w);
    if (e) {
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (e == FL_EINVAL)
            return sub_err(a, "--from: bad id '%s' (an id as printed, REV, 0 or $)", from);
        cli_fail(c, e, "watch");
        return cli_exit_for(e);
    }
    wait_end(w, &set);
    fl_watch_stop(w);
    char msg[256];
    e = fl_watch_join(w, NULL, msg, sizeof msg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (atomic_load(&o->write_failed)) {
        cli_say("watch: writing the output failed");
        return EXIT_ERROR;
    }
    if (e == FL_ECOMPACTED)
        return EXIT_NO;
    if (e) {
        cli_say("watch: %s: %s", fl_strerror(e), msg);
        return EXIT_ERROR;
    }
    return EXIT_OK;
}

int cli_cmd_watch(struct cli *c, int argc, char **argv)
{
    struct watch_out o = {.json = 0};
    const char *from = "$";
    struct sub_args a;
    int id, r;
    sub_start(&a, argc, argv, 1, usage_watch);
    while ((r = sub_next(c, &a, cli_opts_watch, &id)) == SUB_OPT) {
        if (id == O_FROM)
            from = a.it.v[0];
        else if (cli_parse_u64(a.it.v[0], &o.count) || o.count == 0)
            return sub_err(&a, "--count: bad number '%s' (1 or more)", a.it.v[0]);
    }
    if (r == SUB_STOP)
        return a.code;
    if (!cli_client(c))
        return c->client_code;
    o.json = c->json;
    return run_watch(c, &a, a.n_pos ? a.pos[0] : "", from, &o);
}
