/* SPDX-License-Identifier: Apache-2.0 */
/*
 * help.c — `fencelockd --help`, written from the settings table (table.c): one entry per row,
 * its help text wrapped to 80 columns, then its default and, for a row whose files SIGHUP reads
 * again, that note. The few flags that are no setting (--config, --print-config, --version,
 * --hash-password, --help) are listed here, around the rows. Nothing here allocates.
 */
#include <stdio.h>
#include <string.h>

#include "server/config/config_int.h"
#include "server/server.h"

#define HELP_COL 26   /* where the text of an entry starts */
#define HELP_WIDTH 80 /* the line it must not pass */

/* The flags that are no setting: what --help says of each (before and after the rows). */
static const struct {
    const char *flag, *help;
} head[] =
    {
        {"--config FILE",
         "read settings from FILE: `key = value` lines named as the flags (listen = "
         "127.0.0.1:7480); FENCELOCK_<FLAG> variables override the file, flags override both "
         "(a value follows its flag, or an '=' after it)"},
        {"--print-config", "print the effective settings and where each came from, then exit"},
},
  tail[] = {
      {"--version, -V", "print the version and exit"},
      {"--hash-password",
       "read a password from stdin, print its HASH for --acl-file, exit (must be the only flag)"},
      {"--help", "this text"},
};

/* `text` from column HELP_COL, broken at blanks before HELP_WIDTH; `col` is where the line
 * stands now (past HELP_COL: the text starts on the next line). */
static void wrap(FILE *f, size_t col, const char *text)
{
    if (col >= HELP_COL) {
        fputc('\n', f);
        col = 0;
    }
    fprintf(f, "%*s", (int)(HELP_COL - col), "");
    col = HELP_COL;
    for (const char *p = text; *p;) {
        size_t w = strcspn(p, " ");
        if (col > HELP_COL && col + 1 + w > HELP_WIDTH) {
            fprintf(f, "\n%*s", HELP_COL, "");
            col = HELP_COL;
        } else if (col > HELP_COL) {
            fputc(' ', f);
            col++;
        }
        fwrite(p, 1, w, f);
        col += w;
        p += w;
        p += strspn(p, " ");
    }
    fputc('\n', f);
}

static void entry(FILE *f, const char *flag, const char *text)
{
    fprintf(f, "  %s", flag);
    wrap(f, 2 + strlen(flag), text);
}

static const char *metavar(const struct cfg_row *r)
{
    if (r->arg || r->type == CFG_BOOL)
        return r->arg;
    return r->unit == CFG_BYTES ? "BYTES"
           : r->unit == CFG_MS  ? "MS"
           : r->unit == CFG_SEC ? "S"
                                : "N";
}

static void row_entry(FILE *f, const struct cfg_row *r)
{
    char flag[128], text[1024], def[128];
    const char *arg = metavar(r);
    snprintf(flag, sizeof flag, "%s%s%s", r->name, arg ? " " : "", arg ? arg : "");
    cfg_default_text(r, def, sizeof def);
    snprintf(text, sizeof text, "%s%s%s%s%s", r->help, *def ? " (default " : "", def,
             *def ? ")" : "", r->flags & CFG_RELOAD ? "; reloaded on SIGHUP" : "");
    entry(f, flag, text);
}

void srv_config_usage(FILE *f)
{
    fputs("usage: fencelockd [options]\n"
          "\n"
          "A distributed lock service with fencing tokens, replicated with Raft.\n"
          "Clients speak the Redis protocol (RESP2/RESP3) on --listen.\n"
          "Sizes take KiB, MiB, GiB or TiB (64MiB), durations ms, s, m or h (10s); a plain\n"
          "number is in the unit shown (BYTES, MS, S).\n"
          "\n",
          f);
    for (size_t i = 0; i < sizeof head / sizeof head[0]; i++)
        entry(f, head[i].flag, head[i].help);
    for (size_t id = 0; id < cfg_n_rows; id++)
        row_entry(f, &cfg_rows[id]);
    for (size_t i = 0; i < sizeof tail / sizeof tail[0]; i++)
        entry(f, tail[i].flag, tail[i].help);
}
