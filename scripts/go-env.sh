# SPDX-License-Identifier: Apache-2.0
# Sourced by every script that builds Go code (gobench.sh, porcupine.sh, go-client-tests.sh,
# deps.sh): sets GO to the Go toolchain to use -- `go` on PATH, else the machine's
# /usr/local/go, else Debian's golang-go -- or to "" when none is installed. GOTOOLCHAIN=local:
# the installed Go builds, none is downloaded. (Each caller sets its own GOFLAGS.)
export GOTOOLCHAIN=local
GO=$(command -v go || true)
for g in /usr/local/go/bin/go /usr/lib/go/bin/go; do
  [ -n "$GO" ] && break
  [ -x "$g" ] && GO=$g
done
