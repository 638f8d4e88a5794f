# SPDX-License-Identifier: Apache-2.0
# fencelockd in a container: Debian 12 slim plus the packages `make deb` built, installed by
# deploy/container/install-debs.sh (the tests run that same script against the built packages;
# docs/operations.md "Containers" says what is and is not tested).
#
#   make deb && docker build -t fencelock:0.1.0 .
#   docker compose up            # docker-compose.yml: three nodes
#
# The image runs fencelockd as user fencelock (uid/gid 999) with its data in /var/lib/fencelock
# (a volume). Its settings come from flags (the compose file and the Kubernetes example give
# them) over /etc/fencelock/fencelockd.conf, the packaged file.
FROM debian:12-slim
COPY build/deb/*.deb /tmp/debs/
COPY deploy/container/install-debs.sh /usr/local/lib/fencelock/install-debs.sh
RUN sh /usr/local/lib/fencelock/install-debs.sh --image /tmp/debs && rm -rf /tmp/debs
USER fencelock
WORKDIR /var/lib/fencelock
VOLUME /var/lib/fencelock
# client (RESP), Raft, HTTP (/metrics, /health)
EXPOSE 7480 7481 7482
ENTRYPOINT ["/usr/sbin/fencelockd", "--config", "/etc/fencelock/fencelockd.conf"]
# One node on its own; a cluster passes --id, the addresses and --initial-cluster instead.
CMD ["--listen", "0.0.0.0:7480", "--http-listen", "0.0.0.0:7482", "--insecure-no-auth"]
