# cachefsd — plain GNU make.
#   make                  build (debug build with asserts, into build/)
#   make run              build, start a demo upstream + cachefsd, serve until Ctrl-C
#   make test             install what is missing, build, run every test
#   make SANITIZER=address,undefined   sanitizer build (into build-san/)
#   make RELEASE=1        -O2 -DNDEBUG build (into build-release/)
#   make install PREFIX=/usr/local DESTDIR=

CC       ?= cc
PREFIX   ?= /usr/local
DESTDIR  ?=
SANITIZER ?=
RELEASE  ?=

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

WARN     := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror
ifneq ($(RELEASE),)
OPT      := -O2 -DNDEBUG
else
OPT      := -O1
endif
CFLAGS   ?= -g
CFLAGS   += -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) $(SANFLAGS) -Iinclude -MMD -MP
LDFLAGS  += $(SANFLAGS)
LIBS     := -lnfs -llmdb -lxxhash -lpthread -lmicrohttpd

# Debian 12 packages each target needs; `make deps-*` installs the missing ones.
PKGS_BUILD := gcc make pkg-config libnfs-dev liblmdb-dev libxxhash-dev libmicrohttpd-dev
PKGS_RUN   := nfs-ganesha nfs-ganesha-vfs rpcbind libnfs-utils iproute2 procps openssl curl jq
PKGS_TEST  := libcmocka-dev qemu-system-x86 linux-image-amd64 busybox-static cpio e2fsprogs \
              kmod zstd xz-utils clang libclang-rt-14-dev

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

.PHONY: all clean run test unit unit-bins integ tools deps-build deps-run deps-test install check-format

all: $(BUILD)/cachefsd $(BUILD)/cachefsctl

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/cachefsd: $(DAEMON_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

# cachefsctl uses the daemon's config parser (config.o, log.o from the library)
$(BUILD)/cachefsctl: $(BUILD)/obj/cachefsd/ctl/cachefsctl.o $(BUILD)/libcachefsd.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

$(BUILD)/libcachefsd.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/tests/test_%: tests/unit/test_%.c $(BUILD)/libcachefsd.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libcachefsd.a $(LIBS) -lcmocka

$(BUILD)/tests/%: tests/tools/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIBS)

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
	@missing=""; for p in $(1); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || \
			missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		if [ "$$(id -u)" != 0 ]; then echo "need root to apt-get install:$$missing" >&2; exit 1; fi; \
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

# --- the two set-up commands ------------------------------------------------
run: deps-run
	$(MAKE) all
	tests/lib/demo.sh $(BUILD) "$(UPSTREAM)"

# The whole suite, then again under ASan+UBSan in build-san/.
test: deps-test
	$(MAKE) all tools $(UNIT_BINS)
	$(MAKE) SANITIZER=address,undefined BUILD=build-san all tools unit-bins
	$(MAKE) fuzz-build
	@# the kernel NFS server guest's nfs-kernel-server .deb, downloaded (not
	@# installed) while there is network: tests run inside isolate.sh have none
	-tests/guest/mkimage.sh --fetch $(BUILD)/guest-server
	-tests/guest/mkimage.sh --fetch build-san/guest-server
	@# nfs-common's rpc.statd, sm-notify, showmount, mount.nfs (not installed:
	@# its scripts start services) for the lock and plain-mount tests
	-tests/lib/debs.sh fetch build/debs nfs-common
	tests/run-all.sh $(BUILD)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
		tests/run-all.sh build-san

unit-bins: $(UNIT_BINS)

unit: all $(UNIT_BINS)
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; $$t; done

integ: all tools
	tests/run-all.sh --integ-only $(BUILD)

# The systemd unit goes to $(SYSTEMDDIR) with the installed daemon's path;
# the example configuration to the doc directory (never over /etc).
SYSTEMDDIR ?= $(PREFIX)/lib/systemd/system
install: $(BUILD)/cachefsd $(BUILD)/cachefsctl
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/share/man/man8 \
		$(DESTDIR)$(SYSTEMDDIR) $(DESTDIR)$(PREFIX)/share/doc/cachefsd
	install -m 0755 $(BUILD)/cachefsd $(DESTDIR)$(PREFIX)/sbin/cachefsd
	install -m 0755 $(BUILD)/cachefsctl $(DESTDIR)$(PREFIX)/sbin/cachefsctl
	install -m 0644 docs/cachefsd.8 $(DESTDIR)$(PREFIX)/share/man/man8/cachefsd.8
	install -m 0644 docs/cachefsctl.8 $(DESTDIR)$(PREFIX)/share/man/man8/cachefsctl.8
	sed 's|@SBINDIR@|$(PREFIX)/sbin|g' docs/cachefsd.service >$(DESTDIR)$(SYSTEMDDIR)/cachefsd.service
	chmod 0644 $(DESTDIR)$(SYSTEMDDIR)/cachefsd.service
	install -m 0644 docs/cachefsd.conf.example docs/operations.md \
		$(DESTDIR)$(PREFIX)/share/doc/cachefsd/

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
BENCH_TOOLS := nfsbench nfsput benchgen benchstat relay relayprobe costcurve
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
	$(CC) $(LDFLAGS) -o $@ $^ -lnfs
$(BUILD)/bench/nfsput: $(BUILD)/obj/bench/nfsput.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lnfs
$(BUILD)/bench/benchgen: $(BUILD)/obj/bench/benchgen.o $(BUILD)/obj/bench/dataset.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lxxhash
$(BUILD)/bench/benchstat: $(BUILD)/obj/bench/benchstat.o $(BUILD)/obj/bench/stats.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lm
$(BUILD)/bench/relay: $(BUILD)/obj/bench/relay.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^
$(BUILD)/bench/relayprobe: $(BUILD)/obj/bench/relayprobe.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lpthread
# the cost-curve tool fills and measures an index through the store's API
$(BUILD)/bench/costcurve: $(BUILD)/obj/bench/costcurve.o $(BUILD)/libcachefsd.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS) -lm
# unit tests of the bench's own code (statistics, data-set generator)
$(BUILD)/tests/test_bench_%: tests/unit/test_bench_%.c $(BENCH_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Ibench $(LDFLAGS) -o $@ $< $(BENCH_OBJS) -lxxhash -lm -lcmocka
# The bench measures the release build (-O2 -DNDEBUG, build-release/).
bench: deps-bench
	$(MAKE) RELEASE=1 all bench-tools
	BENCH_CMD="make bench$(if $(QUICK), QUICK=1)$(if $(BENCH_ARGS), BENCH_ARGS=\"$(BENCH_ARGS)\")" \
		bench/bench.sh --build build-release $(if $(QUICK),--quick) $(BENCH_ARGS)
-include $(BENCH_ALLOBJS:.o=.d)
deps-test: deps-bench
