/* SPDX-License-Identifier: Apache-2.0 */
/*
 * console — the web console's static files (src/server/obs/ui/: HTML, CSS, plain JavaScript),
 * served at GET /ui/ on the HTTP port behind the same gate as /v1/ (http_api.c).
 *
 * Owns nothing at run time: the files are embedded into the binary at build time (the Makefile
 * runs scripts/embed-assets.c, which writes console_assets[]); the table and the bytes are
 * static and read-only. The console reads every figure from the JSON API with the browser's
 * credentials, so it has exactly its user's rights; these files hold no data.
 */
#ifndef FENCELOCK_CONSOLE_H
#define FENCELOCK_CONSOLE_H

#include <stdbool.h>
#include <stddef.h>

struct console_asset {
    const char *name; /* the file's base name: index.html, console.js, ... */
    const unsigned char *data;
    size_t len;
};

/* Written by the build (scripts/embed-assets.c). */
extern const struct console_asset console_assets[];
extern const size_t console_n_assets;

/* Whether path is the console's (/ui or under /ui/). */
bool srv_console_path(const char *path);

/* The file for a console path ("/ui" and "/ui/" give index.html), its Content-Type in *ctype,
 * and in *headers the extra header lines every console answer carries (CSP, cache, nosniff);
 * NULL when there is no such file. */
const struct console_asset *srv_console_find(const char *path, const char **ctype,
                                             const char **headers);

#endif
