/* SPDX-License-Identifier: Apache-2.0 */
/*
 * console.c — which embedded console file a /ui/ path names, its Content-Type, and the headers
 * that confine the page: a Content-Security-Policy that allows only this origin's own script,
 * style, images and fetches (no inline script or style, no frames, no forms, no plugins), so a
 * name shown by the console can never run as code even if it slipped past textContent; nosniff;
 * and no-cache, so a new binary's console is used at once (the files are small).
 */
#include <string.h>

#include "server/obs/console.h"

#define CONSOLE_HEADERS                                                                            \
    "Content-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self'; "           \
    "img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; "                    \
    "frame-ancestors 'none'\r\n"                                                                   \
    "X-Content-Type-Options: nosniff\r\n"                                                          \
    "X-Frame-Options: DENY\r\n"                                                                    \
    "Referrer-Policy: no-referrer\r\n"                                                             \
    "Cache-Control: no-cache\r\n"

bool srv_console_path(const char *path)
{
    return !strcmp(path, "/ui") || !strncmp(path, "/ui/", 4);
}

static const char *ctype_of(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (!dot)
        return "application/octet-stream";
    if (!strcmp(dot, ".html"))
        return "text/html; charset=utf-8";
    if (!strcmp(dot, ".js"))
        return "text/javascript; charset=utf-8";
    if (!strcmp(dot, ".css"))
        return "text/css; charset=utf-8";
    if (!strcmp(dot, ".svg"))
        return "image/svg+xml";
    return "application/octet-stream";
}

const struct console_asset *srv_console_find(const char *path, const char **ctype,
                                             const char **headers)
{
    if (!srv_console_path(path))
        return NULL;
    const char *name = path[3] == '/' && path[4] ? path + 4 : "index.html";
    for (size_t i = 0; i < console_n_assets; i++)
        if (!strcmp(console_assets[i].name, name)) {
            *ctype = ctype_of(name);
            *headers = CONSOLE_HEADERS;
            return &console_assets[i];
        }
    return NULL;
}
