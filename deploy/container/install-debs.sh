#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The container image's build step (the Dockerfile's RUN), kept in this script so that the tests
# run the very same steps against the built packages (tests/integration/test_packages.py, on a
# Debian 12 machine like the image's base):
#
#   install-debs.sh [--image] DEB_DIR
#
# Installs fencelockd, fencelock and libfencelock0 from DEB_DIR (make deb's build/deb) with
# apt-get, their dependencies from Debian: libraft0 >= 0.22 from bookworm-backports, which is
# added to the sources when missing (as scripts/deps.sh does). Before that, the system user
# fencelock is made with uid and gid FL_UID (default 999) when it does not exist and that id is
# free, so that the Kubernetes example's fsGroup and runAsUser can name it; the package's
# postinst then finds it. Then what systemd would make for the unit: /var/lib/fencelock and
# /var/log/fencelock, owned by fencelock, mode 0750.
# --image: also the image's clean-up (apt's lists and caches), never wanted on a host.
set -eu
image=0
if [ "${1:-}" = --image ]; then
    image=1
    shift
fi
dir=${1:?usage: install-debs.sh [--image] DEB_DIR}
uid=${FL_UID:-999}
set --
for p in fencelockd fencelock libfencelock0; do
    f=
    for c in "$dir"/"$p"_*.deb; do
        [ -f "$c" ] && f=$c
    done
    if [ -z "$f" ]; then
        echo "install-debs: no ${p}_*.deb in $dir (make deb builds them)" >&2
        exit 1
    fi
    case "$f" in /*) ;; *) f=$(pwd)/$f ;; esac
    set -- "$@" "$f"
done
export DEBIAN_FRONTEND=noninteractive
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
update=$image
if ! grep -rqs "${codename}-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
    printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: %s-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        "$codename" >"/etc/apt/sources.list.d/${codename}-backports.sources"
    update=1
fi
[ "$update" = 1 ] && apt-get update -qq
if ! getent passwd fencelock >/dev/null && ! getent passwd "$uid" >/dev/null &&
    ! getent group fencelock >/dev/null && ! getent group "$uid" >/dev/null; then
    groupadd --system --gid "$uid" fencelock
    useradd --system --uid "$uid" --gid fencelock --home-dir /var/lib/fencelock --no-create-home \
        --shell /usr/sbin/nologin --comment "fencelock lock service" fencelock
fi
apt-get install -y -qq --no-install-recommends "libraft0/${codename}-backports" "$@"
install -d -o fencelock -g fencelock -m 0750 /var/lib/fencelock /var/log/fencelock
if [ "$image" = 1 ]; then
    apt-get clean
    rm -rf /var/lib/apt/lists/*
fi
echo "install-debs: $(/usr/sbin/fencelockd --version) installed; user fencelock is uid $(id -u fencelock)"
