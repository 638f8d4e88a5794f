# SPDX-License-Identifier: Apache-2.0
# fencelock build. `make` builds the release binaries into build/release; `make test` builds
# with ASan+UBSan into build/asan and runs every test; `make run` starts one node.
# Every target that needs Debian packages first runs scripts/deps.sh, which installs only
# what `dpkg -s` reports missing.

SAN ?= 0
ifeq ($(SAN),1)
B ?= build/asan
OPT = -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
else
B ?= build/release
OPT = -O2 -g
endif

CC ?= gcc
# The version is defined once, as FL_VERSION_MAJOR/MINOR/PATCH in the public header
# include/fencelock.h; the server (which must not include the client's header: make
# check-layers) gets it as FENCELOCK_VERSION.
FL_VERSION := $(shell sed -n 's/^\#define FL_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9][0-9]*\)$$/\2/p' \
                include/fencelock.h | paste -sd. -)
CFLAGS_BASE = -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter \
              -Isrc -Iinclude -DFENCELOCK_VERSION='"$(FL_VERSION)"' \
              $(shell pkg-config --cflags raft libuv 2>/dev/null)
CFLAGS += $(CFLAGS_BASE) $(OPT) -MMD -MP
LDLIBS = $(shell pkg-config --libs raft libuv 2>/dev/null || echo -lraft -luv) -lsodium -lssl -lcrypto -lm
CLIENT_LIBS = -lhiredis -lssl -lcrypto -lpthread
LDFLAGS += $(OPT)

COMMON_SRC := $(wildcard src/common/*.c)
FSM_SRC    := $(wildcard src/fsm/*.c)
RAFT_SRC   := $(wildcard src/raft/*.c)
SERVER_SRC := $(filter-out src/server/main.c,$(wildcard src/server/*.c src/server/*/*.c))
LIB_SRC    := $(COMMON_SRC) $(FSM_SRC) $(RAFT_SRC) $(SERVER_SRC)
LIB_OBJ    := $(LIB_SRC:%.c=$(B)/obj/%.o) $(B)/obj/gen/console_assets.o
# The web console's files (HTML, CSS, plain JavaScript; no build step of their own) are embedded
# into fencelockd: scripts/embed-assets.c (built with the host compiler) writes them as C arrays.
CONSOLE_ASSETS := $(sort $(wildcard src/server/obs/ui/*))
# The client library shares with the server, built PIC: src/common's address parser
# (proto.h), the backup file format (snapfile.h), the text policies (text.h: the CLI's --json
# and names), whole writes (io.h), the decimal parser (num.h) and the RFC 3339 time (timefmt.h).
CLIENT_COMMON_SRC := src/common/addr.c src/common/env.c src/common/io.c src/common/num.c \
              src/common/snapfile.c src/common/text.c src/common/timefmt.c src/common/trace.c
CLIENT_SRC := $(wildcard src/client/*.c) $(CLIENT_COMMON_SRC)
CLIENT_OBJ := $(CLIENT_SRC:%.c=$(B)/pic/%.o)
CLI_SRC    := $(wildcard src/cli/*.c)
CLI_OBJ    := $(CLI_SRC:%.c=$(B)/obj/%.o)
SOVER      := 0
UNIT_SRC   := $(wildcard tests/unit/test_*.c)
UNIT_BIN   := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)

.PHONY: all client bench-tools deps run test unit unit-tests fuzz clean format check-format check-layers check-docs check-purity check-static cluster cluster-stop install

all: $(B)/fencelockd $(UNIT_BIN) client

# The client side: libfencelock (static and shared), the fencelock CLI, and the C programs the
# integration tests drive (tests/client/*.c, linked with the static library).
CLIENT_TEST_SRC := $(wildcard tests/client/*.c)
CLIENT_TEST_BIN := $(CLIENT_TEST_SRC:tests/client/%.c=$(B)/tests/client/%)
client: $(B)/libfencelock.a $(B)/libfencelock.so $(B)/fencelock $(CLIENT_TEST_BIN) \
        $(B)/examples/inventory $(B)/examples/inventory_sale \
        $(B)/tests/torture/worker

# bench/flpair: libfencelock LOCK+UNLOCK round trips (`make bench-tools`, release build).
# bench/deadlock_fsm: the deadlock search's cost inside fsm_apply (no server).
bench-tools: $(B)/bench/flpair $(B)/bench/deadlock_fsm
$(B)/bench/deadlock_fsm: bench/deadlock_fsm.c $(B)/libfencelockd.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(B)/libfencelockd.a $(LDLIBS)
$(B)/bench/%: bench/%.c $(B)/libfencelock.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(B)/libfencelock.a $(CLIENT_LIBS)

$(B)/examples/%: examples/c/%.c $(B)/libfencelock.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(B)/libfencelock.a $(CLIENT_LIBS)

$(B)/tests/client/%: tests/client/%.c $(B)/libfencelock.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(B)/libfencelock.a $(CLIENT_LIBS)

# fl_abi tests the shared library as an application sees it: linked against libfencelock.so
# (found at run time through its rpath, the build directory), with the public header only.
$(B)/tests/client/fl_abi: tests/client/fl_abi.c $(B)/libfencelock.so
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< -L$(B) -Wl,-rpath,'$$ORIGIN/../..' -lfencelock $(CLIENT_LIBS)

deps:
	@scripts/deps.sh build

# -Wswitch-enum in the state machine and the server: a switch on an enum names every value,
# default or not, so a new op (src/fsm/ops.h), field kind or growth kind fails the build wherever
# it is not handled. (The CLI and the client tests still have defaults on fl_err and their own
# enums.)
$(B)/obj/src/fsm/%.o $(B)/obj/src/server/%.o: CFLAGS += -Wswitch-enum
$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(B)/embed-assets: scripts/embed-assets.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O1 -Wall -Wextra -Werror -o $@ $<
$(B)/gen/console_assets.c: $(B)/embed-assets $(CONSOLE_ASSETS)
	@mkdir -p $(dir $@)
	$(B)/embed-assets $@ $(CONSOLE_ASSETS)
$(B)/obj/gen/console_assets.o: $(B)/gen/console_assets.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(B)/libfencelockd.a: $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(B)/fencelockd: $(B)/obj/src/server/main.o $(B)/libfencelockd.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Unit tests of libfencelock's pure parts (tests/unit/test_client_*.c) link the client library.
$(B)/tests/test_client_%: $(B)/obj/tests/unit/test_client_%.o $(B)/libfencelock.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(CLIENT_LIBS)

$(B)/tests/%: $(B)/obj/tests/unit/%.o $(B)/libfencelockd.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(CLIENT_LIBS)

# libfencelock: position-independent objects for the shared library, the same for the static.
# Hidden by default: only FL_API (include/fencelock.h) is exported from the shared library,
# under the version script src/client/libfencelock.map; debian/libfencelock0.symbols lists the
# exports (make check-abi). Hidden symbols still link statically, so the archive's users
# (the torture worker's cl_* calls) are unaffected.
$(B)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -fvisibility=hidden -c $< -o $@

$(B)/libfencelock.a: $(CLIENT_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

CLIENT_MAP := src/client/libfencelock.map
$(B)/libfencelock.so: $(CLIENT_OBJ) $(CLIENT_MAP)
	$(CC) $(LDFLAGS) -shared -Wl,-soname,libfencelock.so.$(SOVER) -Wl,--version-script=$(CLIENT_MAP) \
	  -o $@.$(SOVER) $(CLIENT_OBJ) $(CLIENT_LIBS)
	ln -sf libfencelock.so.$(SOVER) $@

# The shared library's exports equal debian/libfencelock0.symbols (scripts/check-abi.py; also
# run by tests/integration/test_abi.py).
.PHONY: check-abi
check-abi: $(B)/libfencelock.so
	@python3 scripts/check-abi.py $(B)/libfencelock.so.$(SOVER)

# CLI_SHARED=1 (the Debian package): the CLI links libfencelock.so instead of the archive. The
# library exports only the API, so the parts of src/common the CLI uses too (numbers, addresses,
# the time format) are linked into the CLI itself.
ifeq ($(CLI_SHARED),1)
$(B)/fencelock: $(CLI_OBJ) $(CLIENT_COMMON_SRC:%.c=$(B)/pic/%.o) $(B)/libfencelock.so
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(CLIENT_COMMON_SRC:%.c=$(B)/pic/%.o) -L$(B) -lfencelock \
	  $(CLIENT_LIBS)
else
$(B)/fencelock: $(CLI_OBJ) $(B)/libfencelock.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(CLIENT_LIBS)
endif

# make install [PREFIX=/usr/local] [DESTDIR=]: fencelockd (sbin), the CLI, the client library,
# header, pkg-config file, man pages fencelock(1) and fencelockd(8), the CLI's bash and zsh
# completion (BASHCOMPDIR, ZSHCOMPDIR), and the user documentation
# the man pages refer to (DOCDIR). ldconfig runs when installing into the live system (no
# DESTDIR). make uninstall removes the same files. install-files copies from IB without building
# (debian/rules builds with dpkg-buildflags first).
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
DOCDIR ?= $(PREFIX)/share/doc/fencelock
# Shell completion, where bash-completion and Debian's zsh look for a package's scripts; the
# scripts are made by the CLI itself from its command table (`fencelock completion bash|zsh`).
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/vendor-completions
IB ?= build/release
USER_DOCS := docs/protocol.md docs/server.md docs/operations.md docs/security.md docs/client.md \
             docs/monitoring.md docs/fencing.md docs/python.md
.PHONY: install-files uninstall deb
install: deps
	$(MAKE) SAN=0 build/release/fencelockd build/release/fencelock build/release/libfencelock.a build/release/libfencelock.so
	$(MAKE) install-files
	[ -n "$(DESTDIR)" ] || ldconfig

install-files:
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SBINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig \
	  $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(DOCDIR)
	install -m 755 $(IB)/fencelockd $(DESTDIR)$(SBINDIR)/
	install -m 755 $(IB)/fencelock $(DESTDIR)$(BINDIR)/
	install -m 644 $(IB)/libfencelock.a $(DESTDIR)$(LIBDIR)/
	install -m 644 $(IB)/libfencelock.so.$(SOVER) $(DESTDIR)$(LIBDIR)/
	ln -sf libfencelock.so.$(SOVER) $(DESTDIR)$(LIBDIR)/libfencelock.so
	install -m 644 include/fencelock.h $(DESTDIR)$(INCLUDEDIR)/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
	  -e 's|@VERSION@|$(FL_VERSION)|' scripts/fencelock.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/fencelock.pc
	# The man pages name the documents where the packages put them; here, where DOCDIR is.
	sed 's|/usr/share/doc/fencelock/|$(DOCDIR)/|g' docs/fencelock.1 > $(DESTDIR)$(MANDIR)/man1/fencelock.1
	sed 's|/usr/share/doc/fencelock/|$(DOCDIR)/|g' docs/fencelockd.8 > $(DESTDIR)$(MANDIR)/man8/fencelockd.8
	chmod 644 $(DESTDIR)$(MANDIR)/man1/fencelock.1 $(DESTDIR)$(MANDIR)/man8/fencelockd.8
	install -m 644 $(USER_DOCS) $(DESTDIR)$(DOCDIR)/
	install -d $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR)
	LD_LIBRARY_PATH=$(IB) $(IB)/fencelock completion bash > $(DESTDIR)$(BASHCOMPDIR)/fencelock
	LD_LIBRARY_PATH=$(IB) $(IB)/fencelock completion zsh > $(DESTDIR)$(ZSHCOMPDIR)/_fencelock
	chmod 644 $(DESTDIR)$(BASHCOMPDIR)/fencelock $(DESTDIR)$(ZSHCOMPDIR)/_fencelock

uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/fencelockd $(DESTDIR)$(BINDIR)/fencelock \
	  $(DESTDIR)$(LIBDIR)/libfencelock.a $(DESTDIR)$(LIBDIR)/libfencelock.so \
	  $(DESTDIR)$(LIBDIR)/libfencelock.so.$(SOVER) $(DESTDIR)$(LIBDIR)/pkgconfig/fencelock.pc \
	  $(DESTDIR)$(INCLUDEDIR)/fencelock.h $(DESTDIR)$(MANDIR)/man1/fencelock.1 \
	  $(DESTDIR)$(MANDIR)/man8/fencelockd.8 $(addprefix $(DESTDIR)$(DOCDIR)/,$(notdir $(USER_DOCS))) \
	  $(DESTDIR)$(BASHCOMPDIR)/fencelock $(DESTDIR)$(ZSHCOMPDIR)/_fencelock
	-rmdir $(DESTDIR)$(DOCDIR) 2>/dev/null
	[ -n "$(DESTDIR)" ] || ldconfig

# make deb: the Debian packages (debian/, docs/operations.md "Install from packages") built from
# a copy of the tree in build/deb/fencelock-VERSION, so that debian/rules' clean never touches
# build/; the .deb files land in build/deb/. Release build with dpkg-buildflags (hardening), no
# sanitizers; the unit tests run on the way (DEB_BUILD_OPTIONS=nocheck skips them).
DEB_JOBS ?= 2
deb:
	@scripts/deps.sh deb
	rm -rf build/deb && mkdir -p build/deb/fencelock-$(FL_VERSION)
	tar --exclude=./build --exclude=./.git --exclude=./var -cf - . | tar -xf - -C build/deb/fencelock-$(FL_VERSION)
	# Debian's own tools only: pybuild runs `python3.X` from PATH, and a Python installed
	# elsewhere (pyenv, a venv) lacks Debian's build modules and dist-packages.
	cd build/deb/fencelock-$(FL_VERSION) && env PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	  dpkg-buildpackage -us -uc -b -j$(DEB_JOBS)
	@ls build/deb/*.deb

# make run: what the README's quick start uses (redis-cli from redis-tools, the fencelock CLI)
# is installed and built too.
run:
	@scripts/deps.sh run
	$(MAKE) -j$(JOBS) SAN=0 build/release/fencelockd build/release/fencelock
	./build/release/fencelockd $(ARGS)

# A local N-node cluster (scripts/cluster.sh: ports 7480+10*(i-1), data in ./var/node<i>;
# BASE_PORT=P moves the ports to P+10*(i-1) and the data to ./var/portP/node<i>).
N ?= 3
cluster: deps
	$(MAKE) SAN=0 build/release/fencelockd
	scripts/cluster.sh start $(N)

cluster-stop:
	scripts/cluster.sh stop $(N)

# The build uses every CPU (JOBS=N to change it); scripts/run-tests.sh runs the parts.
JOBS ?= $(shell nproc)
test:
	@scripts/deps.sh test
	$(MAKE) SAN=1 check-purity check-format check-layers check-docs check-static
	$(MAKE) -j$(JOBS) SAN=1 all
	scripts/run-tests.sh build/asan

unit: all
	@for t in $(UNIT_BIN); do $$t || exit 1; done

# The unit-test binaries alone, built and run (debian/rules' dh_auto_test, on the package's
# release build: B=build/debpkg SAN=0); the first failing one stops the run.
unit-tests: $(UNIT_BIN)
	@for t in $(UNIT_BIN); do echo "== $$t"; $$t || exit 1; done

# The FSM must stay pure: no clocks, no I/O, no randomness, no sockets.
check-purity:
	@if grep -nE 'uv_|clock_gettime|gettimeofday|\btime\(|\brand\(|random\(|socket|fopen|\bopen\(|\bread\(|\bwrite\(' src/fsm/*.c src/fsm/*.h; then \
	  echo "purity check failed: src/fsm must not read clocks or do I/O"; exit 1; fi
	@echo "purity check: src/fsm is clean"
	@# One clock in the server (src/common/clock.h says why): no second way to read it.
	@if grep -rnE 'uv_now|uv_hrtime|clock_gettime|gettimeofday|\btime\(NULL' src/server; then \
	  echo "clock check failed: src/server reads the clock only through common/clock.h"; exit 1; fi
	@echo "clock check: src/server reads one clock (common/clock.h)"

FUZZ_CFLAGS = $(CFLAGS_BASE) -g -O1 -fsanitize=fuzzer,address,undefined
# fuzz_raft_msg compiles libraft's own decoders (read-only source tree, never copied into this
# repo nor shipped) so that what the validator accepts is run through the real thing.
# scripts/deps.sh fuzz unpacks Debian's source of the installed libraft into build/libraft-src.
LIBRAFT_SRC ?= build/libraft-src
LIBRAFT_FUZZ_SRC = uv_encoding.c configuration.c heap.c
fuzz:
	@scripts/deps.sh fuzz
	@mkdir -p build/fuzz
	clang $(FUZZ_CFLAGS) -o build/fuzz/fuzz_resp fuzz/fuzz_resp.c $(COMMON_SRC) -lsodium -lcrypto
	clang $(FUZZ_CFLAGS) -o build/fuzz/fuzz_cmd fuzz/fuzz_cmd.c $(COMMON_SRC) $(FSM_SRC) -lsodium -lcrypto
	clang $(FUZZ_CFLAGS) -o build/fuzz/fuzz_acl fuzz/fuzz_acl.c src/server/security/acl.c $(COMMON_SRC) -lsodium -lcrypto
	clang $(FUZZ_CFLAGS) -o build/fuzz/fuzz_watch fuzz/fuzz_watch.c src/server/watch/watch.c $(COMMON_SRC) $(FSM_SRC) -lsodium -lcrypto
	clang $(FUZZ_CFLAGS) -o build/fuzz/fuzz_http_args fuzz/fuzz_http_args.c src/server/obs/http_args.c -lsodium
	clang $(FUZZ_CFLAGS) -o build/fuzz/fuzz_http_head fuzz/fuzz_http_head.c src/server/obs/http_parse.c $(COMMON_SRC) -lsodium -lcrypto
	clang $(FUZZ_CFLAGS) -o build/fuzz/fuzz_http_token fuzz/fuzz_http_token.c src/server/security/httptoken.c src/server/security/keyfile.c src/server/security/acl.c $(COMMON_SRC) -lsodium -lcrypto
	@[ -d $(LIBRAFT_SRC)/src ] || { echo "fuzz_raft_msg needs libraft 0.22.1's source in LIBRAFT_SRC=$(LIBRAFT_SRC)"; exit 1; }
	@mkdir -p build/fuzz/libraft/src build/fuzz/libraft/include
	ln -sf /usr/include/raft.h build/fuzz/libraft/include/raft.h
	for f in $(LIBRAFT_FUZZ_SRC); do clang $(FUZZ_CFLAGS) -w -Ibuild/fuzz/libraft/src \
	  -c $(LIBRAFT_SRC)/src/$$f -o build/fuzz/libraft/$${f%.c}.o || exit 1; done
	clang $(FUZZ_CFLAGS) -o build/fuzz/fuzz_raft_msg fuzz/fuzz_raft_msg.c src/raft/wire.c \
	  $(LIBRAFT_FUZZ_SRC:%.c=build/fuzz/libraft/%.o) -luv
	@echo "run: build/fuzz/fuzz_resp -max_total_time=600 fuzz/corpus/resp"
	@echo "run: build/fuzz/fuzz_raft_msg -max_total_time=3600 fuzz/corpus/raft"

FORMAT_SRC = $(wildcard src/*/*.c src/*/*.h src/*/*/*.c src/*/*/*.h tests/unit/*.c tests/unit/*.h tests/client/*.c \
  fuzz/*.c include/*.h bench/*.c bench/*.h tests/torture/*.c tests/torture/*.h examples/c/*.c)
format:
	clang-format -i $(FORMAT_SRC)

# Includes run only downwards (docs/design.md "Layers"): scripts/check-layers.py.
check-layers:
	@python3 scripts/check-layers.py

# The static analyser, cppcheck, with zero findings (scripts/check-static.sh: which checks are
# on and why, and each suppression's reason); 10-15 s cold, under 2 s cached (build/cppcheck).
check-static:
	@scripts/check-static.sh

# design.md's file tables and "Where to change what" name what exists, doc paths and
# docs/x.md "Heading" references resolve, no tracker references: scripts/check-docs.py.
check-docs:
	@python3 scripts/check-docs.py

# The C sources as clang-format (Debian 12's 14, .clang-format) writes them; make test runs it.
check-format:
	@clang-format --dry-run --Werror $(FORMAT_SRC) || \
	  { echo "format check failed: run make format"; exit 1; }
	@echo "format check: the C sources are clang-formatted"

clean:
	rm -rf build

-include $(LIB_OBJ:.o=.d) $(CLIENT_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(B)/obj/src/server/main.d $(UNIT_SRC:tests/unit/%.c=$(B)/obj/tests/unit/%.d)

# make torture: the Jepsen-style suite (tests/torture/, docs/testing.md "Torture") on real 3-
# and 5-node clusters under ASan; TORTURE_SECONDS per 3-node run (the 5-node run gets a third),
# TORTURE_SEED to replay a run (default: a fresh seed, printed first). Then the snapshot-heavy
# mode (--snapshots: tiny thresholds, leader pauses, lagging followers) on 3 nodes
# for TORTURE_SNAPSHOT_SECONDS.
TORTURE_SECONDS ?= 600
TORTURE_SNAPSHOT_SECONDS ?= 300
TORTURE_SEED ?=
$(B)/tests/torture/worker: tests/torture/worker.c tests/torture/worker_rw.c tests/torture/worker_watch.c tests/torture/worker_prims.c \
  tests/torture/worker_deadlock.c tests/torture/worker_multi.c tests/torture/worker_latch.c \
  tests/torture/worker.h $(B)/libfencelock.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $(filter %.c,$^) $(B)/libfencelock.a $(CLIENT_LIBS)

.PHONY: torture
torture:
	@scripts/deps.sh test
	$(MAKE) SAN=1 build/asan/fencelockd build/asan/libfencelock.a build/asan/tests/torture/worker
	scripts/porcupine.sh build/porcupine
	python3 tests/torture/torture.py --bin build/asan/fencelockd --nodes 3 \
	  --seconds $(TORTURE_SECONDS) $(if $(TORTURE_SEED),--seed $(TORTURE_SEED)) --out build/torture/n3 \
	  --porcupine build/porcupine/porcupine-check
	python3 tests/torture/torture.py --bin build/asan/fencelockd --nodes 5 \
	  --seconds $$(( $(TORTURE_SECONDS) / 3 + 1 )) $(if $(TORTURE_SEED),--seed $(TORTURE_SEED)) \
	  --out build/torture/n5 --porcupine build/porcupine/porcupine-check
	python3 tests/torture/torture.py --bin build/asan/fencelockd --nodes 3 --snapshots \
	  --seconds $(TORTURE_SNAPSHOT_SECONDS) $(if $(TORTURE_SEED),--seed $(TORTURE_SEED)) \
	  --out build/torture/snap --porcupine build/porcupine/porcupine-check

# make bench: the side-by-side lock benchmark (bench/README.md, docs/performance.md):
# fencelock (3 nodes, release build, fsync on), Redis SET NX, Redlock (5 Redis), etcd and
# ZooKeeper, workloads W1-W3 (and W4 for fencelock; W3's floor on this machine, bench/w3floor)
# in one run by bench/run.sh; results in
# bench/results/. lockbench links every bench/drv_*.c present (one driver per system). Beside
# it, the anchors through their own clients: etcd through its Go client and Redlock through
# redsync are bench/go's gobench (scripts/gobench.sh: the pinned modules of bench/go/go.sum);
# ZooKeeper through Apache Curator and Redis through Redisson are bench/java (built offline into
# build/java from the artifacts scripts/deps.sh bench fetched).
BENCH_DRV := $(wildcard bench/drv_*.c)
BENCH_LIBS := $(B)/libfencelock.a -lhiredis -lssl -lcrypto -lpthread -lzookeeper_mt -lcurl
.PHONY: bench
bench:
	@scripts/deps.sh bench
	$(MAKE) SAN=0 build/release/fencelockd build/release/bench/lockbench build/release/bench/w3floor build/java/fencelock-bench.jar
	scripts/gobench.sh build/release/bench || echo "bench/go not built: its rows are skipped"
	bench/run.sh

# The Java clients' drivers: one jar and its dependencies (build/java/lib, emptied first so that
# no other version of a jar stays on the class path), Maven offline.
BENCH_JAVA_SRC := bench/java/pom.xml $(shell find bench/java/src -type f 2>/dev/null)
build/java/fencelock-bench.jar: $(BENCH_JAVA_SRC)
	rm -rf build/java/lib
	mvn -B -q -o -f bench/java/pom.xml package

# W9 (read-write locks), W10 (watch: the harness and one file per system), W11 (semaphores),
# W12 (election fail-over: the harness and one file per system), W13 (multi-lock) and W14 (the
# coordination primitives) beside them.
BENCH_EXTRA := bench/fl_reads.c bench/rwbench.c bench/watchbench.c bench/watch_fl.c bench/watch_etcd.c \
  bench/sembench.c bench/electbench.c bench/elect_fl.c bench/elect_etcd.c bench/multibench.c \
  bench/primbench.c
# make bench-check: W9-W14 once, short, on the sanitizer build; judges what they report
# (errors, missed events, starvation, readers' overlap, semaphore limit, fail-overs observed,
# whole multi-lock sets taken),
# never speed (bench/check.sh).
.PHONY: bench-check
bench-check:
	@scripts/deps.sh bench
	$(MAKE) SAN=1 build/asan/fencelockd build/asan/bench/lockbench build/asan/bench/w3floor build/java/fencelock-bench.jar
	scripts/gobench.sh build/release/bench
	bench/check.sh

$(B)/bench/lockbench: bench/lockbench.c $(BENCH_DRV) $(BENCH_EXTRA) bench/driver.h bench/flraw.h bench/watch.h bench/elect.h $(B)/libfencelock.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ bench/lockbench.c $(BENCH_DRV) $(BENCH_EXTRA) $(BENCH_LIBS)
