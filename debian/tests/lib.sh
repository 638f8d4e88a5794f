# SPDX-License-Identifier: Apache-2.0
# Sourced by the autopkgtests: start the installed fencelockd as a one-node cluster on loopback
# with a data directory of its own (not the packaged service: systemd need not run in the
# testbed), wait until it serves, stop it on exit. FL_SMOKE_PORT (default 17480) is its client
# port; the Raft and HTTP ports are the next two.
set -eu
tmp=${AUTOPKGTEST_TMP:-$(mktemp -d)}
port=${FL_SMOKE_PORT:-17480}
raft_port=$((port + 1))
http_port=$((port + 2))
endpoint=127.0.0.1:$port
/usr/sbin/fencelockd --id 1 --data-dir "$tmp/data" --listen "$endpoint" \
    --raft-listen "127.0.0.1:$raft_port" --http-listen "127.0.0.1:$http_port" \
    >"$tmp/fencelockd.log" 2>&1 &
server_pid=$!
stop_server() {
    kill -TERM "$server_pid" 2>/dev/null || return 0
    status=0
    wait "$server_pid" || status=$?
    [ "$status" -eq 0 ] || { echo "fencelockd exited with status $status" >&2; cat "$tmp/fencelockd.log" >&2; exit 1; }
}
trap 'kill -KILL "$server_pid" 2>/dev/null || true' EXIT
tries=0
until fencelock --endpoints "$endpoint" status >/dev/null 2>&1; do
    tries=$((tries + 1))
    if [ "$tries" -ge 120 ] || ! kill -0 "$server_pid" 2>/dev/null; then
        echo "fencelockd did not serve on $endpoint" >&2
        cat "$tmp/fencelockd.log" >&2
        exit 1
    fi
    sleep 0.5
done
