/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rn_bind.c — before libraft listens: wait while this node's raft address is still taken.
 *
 * A node restarted a moment after the previous process on its ports died may find the port
 * still in use. libraft's listen failure is a bare RAFT_IOERR, and a failed raft_start cannot be
 * retried on the same struct raft (it has loaded the log), so rn_start probes and waits first.
 * Runs before the loop does (nothing else is waiting), so it may sleep.
 */
#include "raft/rn_internal.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/addr.h"
#include "common/proto.h"

/* How long rn_start waits for this node's raft address to become free, and how often it looks. */
#define RN_BIND_WAIT_MS 5000
#define RN_BIND_STEP_MS 100
#define RN_NS_PER_MS 1000000L

/* Bind a throw-away socket to the raft address, as a listener would (SO_REUSEADDR, like
 * libuv). 0 if it could be bound, else the errno. A host that is no IP literal is not probed
 * (0): the transport resolves it itself. */
int rn_bind_probe(const char *address)
{
    struct sockaddr_storage sa;
    if (addr_ip_parse(address, strlen(address), &sa))
        return 0;
    int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0; /* cannot probe: let the transport try and report */
    int one = 1, rc = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&sa, addr_ip_len(&sa)))
        rc = errno;
    close(fd);
    return rc;
}

/* Wait up to RN_BIND_WAIT_MS while the address is in use (EADDRINUSE), with a log line; fail
 * with the reason if it stays taken or cannot be bound at all. */
int rn_bind_wait(const char *address, const struct logger *log, char *err, size_t errlen)
{
    unsigned waited = 0;
    for (;;) {
        int e = rn_bind_probe(address);
        if (e == 0) {
            if (waited)
                LOGI(log, "raft: %s free after %u ms", address, waited);
            return 0;
        }
        if (e != EADDRINUSE || waited >= RN_BIND_WAIT_MS) {
            snprintf(err, errlen, "raft address %s: cannot listen: %s (waited %u ms)", address,
                     strerror(e), waited);
            return -1;
        }
        if (waited == 0)
            LOGW(log, "raft: %s is in use; waiting up to %u ms for it", address, RN_BIND_WAIT_MS);
        struct timespec ts = {0, RN_BIND_STEP_MS * RN_NS_PER_MS};
        nanosleep(&ts, NULL);
        waited += RN_BIND_STEP_MS;
    }
}
