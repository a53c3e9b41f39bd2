# cachefsd — plain GNU make. `make help` lists the targets.
#   make                  build (debug build with asserts, into build/); on a
#                         fresh Debian machine it installs the build's packages
#                         first (as root), or names the command to run
#   make run              build, start a demo upstream + cachefsd, serve until Ctrl-C
#   make test             install what is missing, build, run every test (about
#                         20 minutes: unit tests on both builds, integration tests
#                         once under ASan+UBSan, TEST_JOBS at a time, and a smoke
#                         set on the release build)
#   make test-full        every test on the debug build, then all again under
#                         ASan+UBSan, one at a time (the old `make test`)
#   make SANITIZER=address,undefined   sanitizer build (into build-san/)
#   make RELEASE=1        -O2 -DNDEBUG build (into build-release/)
#   make install PREFIX=/usr/local DESTDIR=   the release build, unless
#                         RELEASE, SANITIZER or BUILD says which
#   make uninstall        the same PREFIX= DESTDIR= as the install
#   make deb              the Debian package (build/deb/cachefsd_*.deb)
#
# CFLAGS, CPPFLAGS and LDFLAGS are the builder's (command line or
# environment: dpkg-buildflags' hardening, -O0 for a debugger) and go after
# the project's own (CFS_*), which are always added: a distribution's
# -D_FORTIFY_SOURCE=2 or -O2 is honoured and the build still finds its
# headers. WERROR=1 (warnings fail the build) is the default in a git
# checkout, which is where development happens; a tarball or the package
# build (WERROR=0) must not break on a newer compiler's new warning.

CC       ?= cc
PREFIX   ?= /usr/local
DESTDIR  ?=
# `make install` alone installs what users run, the release build: a
# debug build (asserts, -O1) is for development. RELEASE=, SANITIZER= or
# BUILD= on the command line or in the environment still chooses.
ifneq ($(filter install,$(MAKECMDGOALS)),)
ifeq ($(origin RELEASE)$(origin SANITIZER)$(origin BUILD),undefinedundefinedundefined)
RELEASE  := 1
endif
endif
SANITIZER ?=
RELEASE  ?=
WERROR   ?= $(if $(wildcard .git),1,0)

ifneq ($(SANITIZER),)
BUILD    ?= build-san
# libnfs 4.0 allocates decoded structs (READDIR entries) at 4-byte aligned
# addresses; x86 does not care, UBSan would stop on every directory listing.
SANFLAGS := -fsanitize=$(SANITIZER) -fno-omit-frame-pointer -fno-sanitize-recover=all \
            $(if $(findstring undefined,$(SANITIZER)),-fno-sanitize=alignment)
else ifneq ($(RELEASE),)
BUILD    ?= build-release
SANFLAGS :=
else
BUILD    ?= build
SANFLAGS :=
endif

WARN     := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
            $(if $(filter 1,$(WERROR)),-Werror)
ifneq ($(RELEASE),)
OPT      := -O2
OPT_CPP  := -DNDEBUG
else
OPT      := -O1
OPT_CPP  :=
endif
CFLAGS   ?= -g
CPPFLAGS ?=
LDFLAGS  ?=

# The libraries' flags from their pkg-config files (Debian 12 ships one for
# each: libnfs.pc, lmdb.pc, libxxhash.pc, libmicrohttpd.pc); -l names when
# pkg-config is not there yet (before deps-build installed it). Evaluated
# once, when first used (a recipe: after deps-build ran).
PKG_MODULES := libnfs lmdb libxxhash libmicrohttpd
PKG_CFLAGS = $(eval PKG_CFLAGS := $(shell pkg-config --cflags $(PKG_MODULES) 2>/dev/null))$(PKG_CFLAGS)
PKG_LIBS = $(eval PKG_LIBS := $(shell pkg-config --libs $(PKG_MODULES) 2>/dev/null || \
                                      echo -lnfs -llmdb -lxxhash -lmicrohttpd))$(PKG_LIBS)

# The project's own flags, always added (before the builder's, which win
# where they disagree, e.g. -O0): C11 with GNU extensions, the public
# headers, dependency files, warnings, the sanitizer.
CFS_CPPFLAGS = -D_GNU_SOURCE -Iinclude $(OPT_CPP) $(PKG_CFLAGS)
CFS_CFLAGS   = -std=c11 $(OPT) $(WARN) $(SANFLAGS) -MMD -MP
CFS_LDFLAGS  = $(SANFLAGS)
COMPILE      = $(CFS_CPPFLAGS) $(CPPFLAGS) $(CFS_CFLAGS) $(CFLAGS)
LINK         = $(CFS_LDFLAGS) $(CFLAGS) $(LDFLAGS)
# glibc's pthread has no .pc file
LIBS         = $(PKG_LIBS) -lpthread

# Debian 12 packages each target needs; `make deps-*` installs the missing ones.
PKGS_BUILD := gcc make pkg-config libnfs-dev liblmdb-dev libxxhash-dev libmicrohttpd-dev
PKGS_RUN   := nfs-ganesha nfs-ganesha-vfs rpcbind libnfs-utils iproute2 procps openssl curl jq
# make deb and its test (tests/integ/97-deb.sh)
PKGS_DEB   := debhelper dpkg-dev lintian
PKGS_TEST  := $(PKGS_DEB) libcmocka-dev qemu-system-x86 linux-image-amd64 busybox-static cpio e2fsprogs \
              kmod zstd xz-utils clang libclang-rt-14-dev faketime \
              systemd prometheus haproxy

# The daemon's rooms (docs/design.md, "The map"): cachefsd/main.c and a folder
# each. A room's private header (engine_int.h, store_int.h) sits in its folder,
# where only that room's own quoted includes find it: -Iinclude holds the public
# headers, so one room cannot reach into another's. cachefsd/ctl/ is the second
# binary (the operator's tool), not the daemon.
ROOMS       := base store upstream engine locks ops
DAEMON_SRCS := $(wildcard cachefsd/*.c $(ROOMS:%=cachefsd/%/*.c)) $(wildcard proto/*.c)
DAEMON_LIB  := $(filter-out cachefsd/main.c,$(DAEMON_SRCS))
DAEMON_OBJS := $(DAEMON_SRCS:%.c=$(BUILD)/obj/%.o)
LIB_OBJS    := $(DAEMON_LIB:%.c=$(BUILD)/obj/%.o)
UNIT_SRCS   := $(wildcard tests/unit/test_*.c)
UNIT_BINS   := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
TOOL_SRCS   := $(wildcard tests/tools/*.c)
TOOL_BINS   := $(TOOL_SRCS:tests/tools/%.c=$(BUILD)/tests/%)

.PHONY: all clean run test test-full test-prep help unit unit-bins integ tools deps-build deps-run deps-test install check-format

all: $(BUILD)/cachefsd $(BUILD)/cachefsctl

# deps-build first (order only): a fresh clone's `make` installs what the
# build needs, or stops at once with the command to run, instead of failing
# on a missing header
$(BUILD)/obj/%.o: %.c | deps-build
	@mkdir -p $(dir $@)
	$(CC) $(COMPILE) -c -o $@ $<

$(BUILD)/cachefsd: $(DAEMON_OBJS)
	$(CC) $(LINK) -o $@ $^ $(LIBS)

# cachefsctl uses the daemon's config parser (config.o, log.o from the library)
$(BUILD)/cachefsctl: $(BUILD)/obj/cachefsd/ctl/cachefsctl.o $(BUILD)/libcachefsd.a
	$(CC) $(LINK) -o $@ $^ $(LIBS)

$(BUILD)/libcachefsd.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/tests/test_%: tests/unit/test_%.c $(BUILD)/libcachefsd.a
	@mkdir -p $(dir $@)
	$(CC) $(COMPILE) $(LINK) -o $@ $< $(BUILD)/libcachefsd.a $(LIBS) -lcmocka

$(BUILD)/tests/%: tests/tools/%.c | deps-build
	@mkdir -p $(dir $@)
	$(CC) $(COMPILE) $(LINK) -o $@ $< $(LIBS)

# nfs4probe and nfsop (its NFSv4 mode) run the daemon's NFSv4.0 upstream
# module: they link the library
$(BUILD)/tests/nfs4probe $(BUILD)/tests/nfsop: $(BUILD)/tests/%: tests/tools/%.c $(BUILD)/libcachefsd.a | deps-build
	@mkdir -p $(dir $@)
	$(CC) $(COMPILE) $(LINK) -o $@ $< $(BUILD)/libcachefsd.a $(LIBS)

# The lock tool the qemu guest runs (tests/guest/locker.c): static, since the
# guest has no libc of its own, and without sanitizers (they need one).
$(BUILD)/tests/guest-locker: tests/guest/locker.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 $(WARN) -static -o $@ $<

# The file exerciser for the guest (tests/tools/fsxcheck.c): the same source
# as the host's $(BUILD)/tests/fsxcheck, built the guest's way.
$(BUILD)/tests/guest-fsxcheck: tests/tools/fsxcheck.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 $(WARN) -static -o $@ $<

tools: $(TOOL_BINS) $(BUILD)/tests/guest-locker $(BUILD)/tests/guest-fsxcheck

# --- dependencies: install what is missing (Debian 12, as root) -------------
define apt_install
	@command -v dpkg-query >/dev/null || exit 0; \
	missing=""; for p in $(1); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || \
			missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" != 0 ]; then \
			echo "missing Debian packages:$$missing" >&2; \
			echo "run as root: make $@   (or: apt-get install$$missing)" >&2; exit 1; \
		fi; \
		echo "installing:$$missing"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get update -q && apt-get install -y -q --no-install-recommends $$missing; \
	fi
endef

deps-build:
	$(call apt_install,$(PKGS_BUILD))
deps-run: deps-build
	$(call apt_install,$(PKGS_RUN))
deps-test: deps-run
	$(call apt_install,$(PKGS_TEST))
deps-deb: deps-build
	$(call apt_install,$(PKGS_DEB))

# --- the two set-up commands ------------------------------------------------
run: deps-run
	$(MAKE) all
	tests/lib/demo.sh $(BUILD) "$(UPSTREAM)"

# The guest images (kernel client, plain client host, kernel nfsd) are
# built once per run into one folder every build's tests share.
export GUEST_IMAGES ?= $(CURDIR)/build/guest-images
# How many integration tests `make test` runs at once (each in namespaces
# of its own, tests/run-all.sh -j). 2 on this 2-core machine: the qemu
# guests (TCG) take a core each; see docs/design.md "Testing".
TEST_JOBS ?= 2
# What the release build (-O2 -DNDEBUG, what users run) runs in `make test`:
# the bench smoke tests and an end-to-end read through the kernel client.
RELEASE_SMOKE := 80-bench-smoke 81-bench-guest-smoke 81-bench-knfsd-smoke 50-kernel-client
SAN_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1

# test-prep: every build the suite runs, and what the tests inside network
# namespaces cannot download there
test-prep: deps-test
	$(MAKE) all tools $(UNIT_BINS)
	$(MAKE) SANITIZER=address,undefined BUILD=build-san all tools unit-bins
	$(MAKE) RELEASE=1 all tools
	$(MAKE) fuzz-build
	@# the kernel NFS server guest's nfs-kernel-server .deb, downloaded (not
	@# installed) while there is network: tests run inside isolate.sh have none
	-tests/guest/mkimage.sh --fetch $(GUEST_IMAGES)/guest-server
	@# nfs-common's rpc.statd, sm-notify, showmount, mount.nfs (not installed:
	@# its scripts start services) for the lock and plain-mount tests
	-tests/lib/debs.sh fetch build/debs nfs-common

# Unit tests on the debug build; unit and integration tests under
# ASan+UBSan (every integration test once: the sanitizer build catches what
# the plain one does, and more); the release build's smoke set.
test: test-prep
	tests/run-all.sh --unit-only build
	$(SAN_ENV) tests/run-all.sh -j $(TEST_JOBS) build-san
	tests/run-all.sh --integ-only build-release "$(RELEASE_SMOKE)"

# The whole suite on the debug build, then all again under ASan+UBSan.
test-full: test-prep
	tests/run-all.sh build
	$(SAN_ENV) tests/run-all.sh build-san

help:
	@echo 'cachefsd targets (Debian 12; the deps-* targets apt-get install what is missing, as root):'
	@echo '  make                 debug build into build/ (installs the build packages first)'
	@echo '  make run             build, start a demo upstream and cachefsd, serve until Ctrl-C'
	@echo '                       (UPSTREAM=nfs://server/export fronts that server instead)'
	@echo '  make test            unit tests on both builds, integration tests once under'
	@echo '                       ASan+UBSan (TEST_JOBS=N at a time), release-build smoke set'
	@echo '  make test-full       every test on the debug build, then again under ASan+UBSan'
	@echo '  make unit            unit tests on the debug build'
	@echo '  make integ           integration tests on the debug build'
	@echo '  tests/run-all.sh [-j N] [--unit-only|--integ-only] BUILD [FILTER]'
	@echo '                       selected tests (e.g. tests/run-all.sh build-san 60-data)'
	@echo '  make SANITIZER=address,undefined   ASan+UBSan build into build-san/'
	@echo '  make RELEASE=1       -O2 -DNDEBUG build into build-release/'
	@echo '  make bench [QUICK=1] the bench suite (docs/bench.md)'
	@echo '  make fuzz | fuzz-index [FUZZ_SECONDS=N]   libFuzzer runs'
	@echo '  make install [PREFIX=/usr/local DESTDIR=]   the release build (RELEASE=1 unless'
	@echo '                       RELEASE/SANITIZER/BUILD is given): daemon, cachefsctl, man'
	@echo '                       pages, systemd units, sysusers.d user, /etc/cachefsd.conf'
	@echo '                       (only if absent); make uninstall with the same PREFIX/DESTDIR'
	@echo '  make deb             the Debian package into build/deb/ (docs/operations.md,'
	@echo '                       "Installing"): apt install ./build/deb/cachefsd_*.deb'
	@echo '  CFLAGS= CPPFLAGS= LDFLAGS=   added after the project flags; WERROR=0 turns -Werror'
	@echo '                       off (on by default in a git checkout)'
	@echo '  make deps-build | deps-run | deps-test      install the packages each needs'
	@echo '  make check-format    clang-format check'
	@echo '  make clean           remove build directories'

unit-bins: $(UNIT_BINS)

unit: all $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; $$t; done

integ: all tools
	tests/run-all.sh --integ-only $(BUILD)

# --- install, uninstall, the Debian package --------------------------------
# make install: the daemon and cachefsctl in $(SBINDIR), their man pages,
# every unit in cachefsd/units/ (@SBINDIR@ replaced by the installed
# daemon's directory) in $(SYSTEMDDIR), the sysusers.d file that makes the
# cachefsd system user, this guide and the example configuration in the doc
# directory, and the default configuration as /etc/cachefsd.conf (the path
# the units and cachefsctl read) unless one is there already: an operator's
# configuration is never overwritten. DESTDIR= prefixes every path (a
# package's staging tree). make uninstall with the same PREFIX/DESTDIR
# removes what install put there, /etc/cachefsd.conf only while it is still
# the unedited default; the cache (/var/cache/cachefsd) and the user stay.
SBINDIR    ?= $(PREFIX)/sbin
MANDIR     ?= $(PREFIX)/share/man
DOCDIR     ?= $(PREFIX)/share/doc/cachefsd
# the operator's guide, the coherence contract, the example configuration,
# the Prometheus rules and the Grafana dashboard (the manual pages name them
# by these paths: the package keeps them uncompressed)
DOCS       := docs/operations.md docs/coherence.md docs/cachefsd.conf.example docs/alerts.yml \
              docs/dashboard.json
SYSTEMDDIR ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
SYSCONFDIR ?= /etc
UNITS      := $(notdir $(wildcard cachefsd/units/*.service))
DEFAULT_CONF := docs/cachefsd.conf.example

install: $(BUILD)/cachefsd $(BUILD)/cachefsctl
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(SYSTEMDDIR) \
		$(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(DOCDIR) $(DESTDIR)$(SYSCONFDIR)
	install -m 0755 $(BUILD)/cachefsd $(DESTDIR)$(SBINDIR)/cachefsd
	install -m 0755 $(BUILD)/cachefsctl $(DESTDIR)$(SBINDIR)/cachefsctl
	install -m 0644 docs/cachefsd.8 docs/cachefsctl.8 $(DESTDIR)$(MANDIR)/man8/
	install -m 0644 docs/cachefsd.conf.5 $(DESTDIR)$(MANDIR)/man5/
	set -e; for u in $(UNITS); do \
		sed 's|@SBINDIR@|$(SBINDIR)|g' cachefsd/units/$$u >$(DESTDIR)$(SYSTEMDDIR)/$$u; \
		chmod 0644 $(DESTDIR)$(SYSTEMDDIR)/$$u; \
	done
	install -m 0644 docs/cachefsd.sysusers $(DESTDIR)$(SYSUSERSDIR)/cachefsd.conf
	install -m 0644 $(DOCS) $(DESTDIR)$(DOCDIR)/
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/cachefsd.conf ]; then \
		echo "kept $(DESTDIR)$(SYSCONFDIR)/cachefsd.conf (the default is $(DOCDIR)/cachefsd.conf.example)"; \
	else \
		echo "install -m 0644 $(DEFAULT_CONF) $(DESTDIR)$(SYSCONFDIR)/cachefsd.conf"; \
		install -m 0644 $(DEFAULT_CONF) $(DESTDIR)$(SYSCONFDIR)/cachefsd.conf; \
	fi

uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/cachefsd $(DESTDIR)$(SBINDIR)/cachefsctl \
		$(DESTDIR)$(MANDIR)/man8/cachefsd.8 $(DESTDIR)$(MANDIR)/man8/cachefsctl.8 \
		$(DESTDIR)$(MANDIR)/man5/cachefsd.conf.5 \
		$(UNITS:%=$(DESTDIR)$(SYSTEMDDIR)/%) $(DESTDIR)$(SYSUSERSDIR)/cachefsd.conf \
		$(DOCS:docs/%=$(DESTDIR)$(DOCDIR)/%)
	-rmdir $(DESTDIR)$(DOCDIR) 2>/dev/null
	@if cmp -s $(DEFAULT_CONF) $(DESTDIR)$(SYSCONFDIR)/cachefsd.conf; then \
		echo "rm -f $(DESTDIR)$(SYSCONFDIR)/cachefsd.conf"; rm -f $(DESTDIR)$(SYSCONFDIR)/cachefsd.conf; \
	elif [ -e $(DESTDIR)$(SYSCONFDIR)/cachefsd.conf ]; then \
		echo "kept $(DESTDIR)$(SYSCONFDIR)/cachefsd.conf (edited)"; \
	fi

# make deb: the package from a copy of the tracked files (git ls-files, or
# every file outside build directories when there is no git) in
# build/deb/src, built there with dpkg-buildpackage (debian/rules: the
# release build with dpkg-buildflags, WERROR=0); the .debs, .buildinfo and
# .changes land in build/deb/. Nothing is written outside build/deb.
DEB_DIR ?= build/deb
.PHONY: deb uninstall deps-deb
deb: deps-deb
	rm -rf $(DEB_DIR)
	mkdir -p $(DEB_DIR)/src
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
		git ls-files -z --cached --others --exclude-standard | \
			xargs -0 sh -c 'for f; do [ -e "$$f" ] && printf "%s\0" "$$f"; done' sh | \
			tar --null -T - -cf - | tar -xf - -C $(DEB_DIR)/src; \
	else \
		find . -path ./build -prune -o -path ./build-san -prune -o -path ./build-release \
			-prune -o -path ./build-fuzz -prune -o -type f -print0 | \
			tar --null -T - -cf - | tar -xf - -C $(DEB_DIR)/src; \
	fi
	cd $(DEB_DIR)/src && dpkg-buildpackage -b -us -uc -j2
	@ls -1 $(DEB_DIR)/*.deb

include tests/fuzz/fuzz.mk

check-format:
	clang-format --dry-run --Werror cachefsd/*.c cachefsd/*/*.c proto/*.c include/*.h

clean:
	rm -rf build build-san build-release

-include $(DAEMON_OBJS:.o=.d) $(BUILD)/obj/cachefsd/ctl/cachefsctl.d $(UNIT_BINS:=.d) $(TOOL_BINS:=.d)

# --- bench (bench/, docs/bench.md) ------------------------------------------
#   make bench            full run (about 1.5 h), release build, results in
#                         bench/results/<date>/; BENCH_ARGS="..." replaces the
#                         default options (n=20, 5 warm-ups, 600 s per cell)
#   make bench QUICK=1    a few minutes: quick data set, n=3
PKGS_BENCH  := nfs-ganesha-proxy-v4 gnuplot-nox
BENCH_ARGS  ?= --budget 600
BENCH_TOOLS := nfsbench nfs4bench nfsput benchgen benchstat relay relayprobe costcurve
BENCH_BINS  := $(BENCH_TOOLS:%=$(BUILD)/bench/%)
BENCH_OBJS  := $(BUILD)/obj/bench/dataset.o $(BUILD)/obj/bench/stats.o
BENCH_ALLOBJS := $(BENCH_TOOLS:%=$(BUILD)/obj/bench/%.o) $(BENCH_OBJS)

.PHONY: bench bench-tools deps-bench
deps-bench: deps-run
	$(call apt_install,$(PKGS_BENCH))
bench-tools: $(BENCH_BINS)
tools: bench-tools
$(BUILD)/bench/nfsbench: $(BUILD)/obj/bench/nfsbench.o
	@mkdir -p $(dir $@)
	$(CC) $(LINK) -o $@ $^ -lnfs
$(BUILD)/bench/nfs4bench: $(BUILD)/obj/bench/nfs4bench.o
	@mkdir -p $(dir $@)
	$(CC) $(LINK) -o $@ $^ -lnfs
$(BUILD)/bench/nfsput: $(BUILD)/obj/bench/nfsput.o
	@mkdir -p $(dir $@)
	$(CC) $(LINK) -o $@ $^ -lnfs
$(BUILD)/bench/benchgen: $(BUILD)/obj/bench/benchgen.o $(BUILD)/obj/bench/dataset.o
	@mkdir -p $(dir $@)
	$(CC) $(LINK) -o $@ $^ -lxxhash
$(BUILD)/bench/benchstat: $(BUILD)/obj/bench/benchstat.o $(BUILD)/obj/bench/stats.o
	@mkdir -p $(dir $@)
	$(CC) $(LINK) -o $@ $^ -lm
$(BUILD)/bench/relay: $(BUILD)/obj/bench/relay.o
	@mkdir -p $(dir $@)
	$(CC) $(LINK) -o $@ $^
$(BUILD)/bench/relayprobe: $(BUILD)/obj/bench/relayprobe.o
	@mkdir -p $(dir $@)
	$(CC) $(LINK) -o $@ $^ -lpthread
# the cost-curve tool fills and measures an index through the store's API
$(BUILD)/bench/costcurve: $(BUILD)/obj/bench/costcurve.o $(BUILD)/libcachefsd.a
	@mkdir -p $(dir $@)
	$(CC) $(LINK) -o $@ $^ $(LIBS) -lm
# unit tests of the bench's own code (statistics, data-set generator)
$(BUILD)/tests/test_bench_%: tests/unit/test_bench_%.c $(BENCH_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(COMPILE) -Ibench $(LINK) -o $@ $< $(BENCH_OBJS) -lxxhash -lm -lcmocka
# The bench measures the release build (-O2 -DNDEBUG, build-release/).
bench: deps-bench
	$(MAKE) RELEASE=1 all bench-tools
	BENCH_CMD="make bench$(if $(QUICK), QUICK=1)$(if $(BENCH_ARGS), BENCH_ARGS=\"$(BENCH_ARGS)\")" \
		bench/bench.sh --build build-release $(if $(QUICK),--quick) $(BENCH_ARGS)
-include $(BENCH_ALLOBJS:.o=.d)
deps-test: deps-bench
