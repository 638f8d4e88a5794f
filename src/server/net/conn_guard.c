/* SPDX-License-Identifier: Apache-2.0 */
/*
 * conn_guard.c — cross-protocol defence on the client port: an HTTP request is never a
 * command. Owns nothing; counts into srv.m.cross_protocol_closes.
 */
#include <string.h>

#include "common/clock.h"
#include "server/server.h"

/*
 * An HTTP request sent to the client port: a web page can make a browser POST to
 * 127.0.0.1:7480, and each line of the body would run as a command. As Redis does
 * (securityWarningCommand), "POST" and "Host:" are never commands: seeing one closes the
 * connection before anything after it runs. A request line "METHOD target HTTP/x" is caught
 * too when sent inline (not as a RESP array: a real client may store the value "HTTP/1.1"),
 * so "PUT / HTTP/1.1" or "GET / HTTP/1.1" does not run as fencelock's PUT or GET.
 */
bool srv_conn_is_http(bool inline_cmd, size_t argc, const struct resp_arg *argv)
{
    static const char *const methods[] = {"GET",     "PUT",     "DELETE", "HEAD",
                                          "OPTIONS", "CONNECT", "TRACE",  "PATCH"};
    if (resp_arg_is(&argv[0], "post") || resp_arg_is(&argv[0], "host:"))
        return true;
    if (!inline_cmd || argc != 3 || argv[2].len < 5 || strncmp(argv[2].p, "HTTP/", 5) != 0)
        return false;
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
        if (resp_arg_is(&argv[0], methods[i]))
            return true;
    return false;
}

/* Close a connection that speaks HTTP (srv_conn_is_http); logged at most once a minute. */
void srv_conn_close_http(struct srv_conn *c)
{
    struct srv *s = c->srv;
    uint64_t now = clock_ms();
    s->m.cross_protocol_closes++;
    if (!s->m.cross_protocol_logged_ms || now - s->m.cross_protocol_logged_ms >= 60000) {
        s->m.cross_protocol_logged_ms = now;
        LOGW(&s->log,
             "possible SECURITY ATTACK: client %llu sent an HTTP request to the client port "
             "(a web page reaching fencelockd through a browser?); connection closed (%llu so "
             "far)",
             (unsigned long long)c->id, (unsigned long long)s->m.cross_protocol_closes);
    }
    srv_conn_close(c);
}
