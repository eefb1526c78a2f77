# SPDX-License-Identifier: MIT OR Apache-2.0
SHELL := /bin/bash
# hub: a shared-memory plugin hub. GNU make.
#   make              build everything
#   make run          build, then run hubd in the foreground with conf/hubd.conf
#                     and the example guests
#   make check        install missing build deps (Debian), build, run every test
#   make test-python  the Python binding's tests (pytest, real hubd processes)
#   make check-asan   the same tests under AddressSanitizer + UBSan
#   make check-tsan   the lock-free tests under ThreadSanitizer
#   make spec-coverage  which spec rules code and tests cite
#   make deb          Debian packages (debian/) into build/deb/

SANITIZE ?=
ifeq ($(SANITIZE),)
B := build
else ifeq ($(SANITIZE),address)
B := build-asan
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
else ifeq ($(SANITIZE),thread)
B := build-tsan
# TSan does not model standalone fences; ours only order the wake
# protocol's store->load (endpoint.h), data moves through acquire/release
# pairs it does see.
SANFLAGS := -fsanitize=thread -Wno-tsan
else
$(error SANITIZE must be empty, address or thread)
endif

CC ?= cc
CFLAGS ?= -O2 -g
WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wpointer-arith -Wcast-qual -Wsign-compare
# Hardening for a daemon that runs as root: a stack protector, glibc's
# checked string and memory functions (they need an optimised build: not
# with a last -O0 or none), and relocations read-only once resolved, all
# at start (full RELRO).
HARDEN_CFLAGS := -fstack-protector-strong \
	$(if $(filter-out -O0,$(lastword $(filter -O%,$(CFLAGS)))),-U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2)
HARDEN_LDFLAGS := -Wl,-z,relro,-z,now
# libbsd without its overlay: daemon/ includes <bsd/...> by name, and
# proto/ and libguest stay on plain libc headers.
BSD_CFLAGS := $(shell pkg-config --cflags libbsd 2>/dev/null)
# -fPIC everywhere: proto is linked into libguest.so as well as hubd.
ALL_CFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) $(HARDEN_CFLAGS) $(SANFLAGS) -fPIC \
	-I. -Iguestlib $(BSD_CFLAGS) -MMD -MP
ALL_LDFLAGS := $(LDFLAGS) $(HARDEN_LDFLAGS) $(SANFLAGS)

PROTO_SRC := $(wildcard proto/*.c)
PROTO_OBJ := $(PROTO_SRC:%.c=$(B)/%.o)
PROTO_LIB := $(B)/libhubproto.a
HEADERS := $(wildcard proto/*.h daemon/*.h guestlib/*.h mt/*.h hubctl/*.h nats/*.h)

# hubctl: a program apart, in a folder of its own, never in libhubd.a.
HUBCTL_SRC := $(wildcard hubctl/*.c)
# Its objects beside, not under, $(B)/hubctl: that is the program.
HUBCTL_OBJ := $(HUBCTL_SRC:hubctl/%.c=$(B)/hubctl-obj/%.o)
# Daemon modules as a library, so the tests link the same code hubd runs.
DAEMON_SRC := $(filter-out daemon/hubd.c,$(wildcard daemon/*.c))
DAEMON_OBJ := $(DAEMON_SRC:%.c=$(B)/%.o)
DAEMON_LIB := $(B)/libhubd.a
DAEMON_LIBS = $(shell pkg-config --libs inih json-c libbsd libxxhash libseccomp) -lev -lresolv \
	$(PROTO_LIBS)
# hubctl: JSON, sizes, values by their signature (pcjson: -lresolv's
# base64) and the segment's code; no event loop, no config parser
HUBCTL_LIBS = $(shell pkg-config --libs json-c libbsd) -lresolv $(PROTO_LIBS)

# libguest: its own files and the generic microthread runtime (mt/)
GUEST_SRC := $(wildcard guestlib/*.c mt/*.c)
GUEST_OBJ := $(GUEST_SRC:%.c=$(B)/%.o)
GUEST_SO := $(B)/libguest.so
# The stream hash (hub.sink, hub.source) for the guests that check it.
HASH_LIBS = -Wl,--as-needed $(shell pkg-config --libs libxxhash) -Wl,--no-as-needed
GUEST_A := $(B)/libguest.a
# What libguest itself links: the microthreads' context switch (Boost's
# fcontext, no system call per switch), their processors' threads, and
# proto's own.
GUEST_LIBS = -lboost_context -lpthread $(PROTO_LIBS)
# libguest's version is guest.h's GUEST_VERSION_*, the one in the tree: the
# soname, the library's file name and libguest.pc's Version come from it.
guest_version = $(shell awk '$$2 == "GUEST_VERSION_$(1)" { print $$3 }' guestlib/guest.h)
GUEST_MAJOR := $(call guest_version,MAJOR)
GUEST_VER := $(GUEST_MAJOR).$(call guest_version,MINOR).$(call guest_version,PATCH)
ifeq ($(shell echo '$(GUEST_VER)' | grep -xE '[0-9]+\.[0-9]+\.[0-9]+'),)
$(error guestlib/guest.h: GUEST_VERSION_MAJOR, _MINOR, _PATCH not found (got "$(GUEST_VER)"))
endif
GUEST_SONAME := libguest.so.$(GUEST_MAJOR)
GUEST_REAL := libguest.so.$(GUEST_VER)
EXAMPLES := $(patsubst guestlib/examples/%.c,$(B)/guests/%,$(wildcard guestlib/examples/*.c))
TEST_GUESTS := $(patsubst tests/guests/%.c,$(B)/tests/guests/%,$(wildcard tests/guests/*.c))
# A host written from the spec alone, with a layout of its own (check_interop)
SPECHOST := $(B)/tests/host/spechost
# LD_PRELOAD shims for the daemon under test: no sanitizer in them (it
# would have to come first in the library list)
TEST_SHIMS := $(patsubst tests/shim/%.c,$(B)/tests/shim/%.so,$(wildcard tests/shim/*.c))
BENCH_PROGS := $(B)/tests/bench/baseline $(B)/tests/bench/benchguest \
	$(B)/tests/bench/poolbench $(B)/tests/bench/mtbench $(B)/tests/bench/natsbase \
	$(B)/tests/bench/psguest
# plain NATS publish-subscribe, against topics across hub-nats
BENCH_PROGS += $(B)/tests/bench/natsps
# Peers built for make bench only (their packages come with BENCH=1 deps;
# make all and make check never need them): iceoryx and sd-bus.
BENCH_PEERS := $(B)/tests/bench/iox $(B)/tests/bench/dbus $(B)/tests/bench/ioxps \
	$(B)/tests/bench/dbusps
# iceoryx keeps its headers in a versioned directory
IOX_INC = $(lastword $(sort $(wildcard /usr/include/iceoryx/v*)))
SDBUS_CFLAGS = $(shell pkg-config --cflags libsystemd 2>/dev/null)
SDBUS_LIBS = $(shell pkg-config --libs libsystemd 2>/dev/null)
ZMQ_FLAGS = $(shell pkg-config --exists libzmq 2>/dev/null && echo -DHAVE_ZMQ)
ZMQ_LIBS = $(shell pkg-config --libs libzmq 2>/dev/null)
# hub-nats: the guest that bridges hubs on many hosts through NATS
# (nats/, on libguest and Debian's libnats). -I. finds <nats/nats.h> in
# nats/ first: no file there is named as one of libnats's headers.
HUBNATS_OBJ := $(patsubst %.c,$(B)/%.o,$(wildcard nats/*.c))
NATS_LIBS = $(shell pkg-config --libs libnats 2>/dev/null || echo -lnats)
# its keys: Ed25519 signatures, X25519 and BLAKE2b (nats/trust.c); and
# proto's method ids (SipHash-2-4), which everything that links proto needs
SODIUM_LIBS = $(shell pkg-config --libs libsodium 2>/dev/null || echo -lsodium)
PROTO_LIBS = $(SODIUM_LIBS)
PROGS := $(B)/hubd $(B)/hubctl $(B)/hub-run $(B)/hub-nats

SUITE_SRC := $(sort $(wildcard tests/unit/check_*.c tests/e2e/check_*.c))
TEST_OBJ := $(SUITE_SRC:%.c=$(B)/%.o) $(B)/tests/check_main.o $(B)/tests/e2e/harness.o \
	$(B)/tests/e2e/natsd.o $(B)/tests/e2e/natshubs.o $(B)/nats/conf.o $(B)/nats/batch.o
SUITES := $(basename $(notdir $(SUITE_SRC)))
CHECK_CFLAGS = $(shell pkg-config --cflags check)
CHECK_LIBS = $(shell pkg-config --libs check)

FUZZERS := postcard msg segment desc config control varslot natsbatch
FUZZ_SECONDS ?= 60
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -DHP_WRITER -g -O1 -I. -Iguestlib \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_SRC_config := daemon/config.c daemon/config_keys.c daemon/size.c
FUZZ_LIBS_config = -linih $(shell pkg-config --libs libbsd)
FUZZ_SRC_control := daemon/request.c daemon/pcjson.c
FUZZ_SRC_natsbatch := nats/batch.c
FUZZ_LIBS_natsbatch = $(NATS_LIBS)
FUZZ_LIBS_control := -ljson-c -lresolv

.PHONY: all run check check-asan check-tsan test test-tsan test-install test-python check-man \
	deps headers spec-coverage install uninstall clean bench fuzz fuzz-smoke deb test-deb

PREFIX ?= /usr/local
# /etc for /usr and /usr/local, where hubd looks by default (hubd.8) and a
# config kept from an earlier install is; PREFIX/etc for any other prefix,
# so that an install there writes nothing outside it.
SYSCONFDIR ?= $(if $(filter /usr /usr/local,$(PREFIX)),/etc,$(PREFIX)/etc)
LIBDIR ?= $(PREFIX)/lib
# The control socket's directory: /run/hub for /usr and /usr/local, as
# hubd and hubctl have it built in; inside any other prefix, so that a hub
# installed there never takes a system hub's socket (install builds hubd
# and hubctl again with it, and SYSCONFDIR's config, as their defaults).
RUNDIR ?= $(if $(filter /usr /usr/local,$(PREFIX)),/run/hub,$(PREFIX)/var/run/hub)
# State: hub-nats's key (nats.key) by default, as RUNDIR: /var/lib/hub,
# or inside any other prefix (install builds hub-nats again with it).
STATEDIR ?= $(if $(filter /usr /usr/local,$(PREFIX)),/var/lib/hub,$(PREFIX)/var/lib/hub)
# The installed example guests find libguest in LIBDIR by a RUNPATH, but
# where the dynamic loader looks anyway (Debian's LIBDIR among them).
MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)
SYSTEM_LIBDIRS := /lib /usr/lib /lib64 /usr/lib64 $(if $(MULTIARCH),/lib/$(MULTIARCH) /usr/lib/$(MULTIARCH))
INSTALL_RPATH := $(if $(filter $(SYSTEM_LIBDIRS),$(LIBDIR)),,-Wl,-rpath,$(LIBDIR))
MANDIR ?= $(PREFIX)/share/man
# Where python3 looks for modules under PREFIX: Debian's own dist-packages
# for /usr, the versioned one it adds to sys.path for anything else.
PYTHONDIR ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/python3/dist-packages,$(PREFIX)/lib/$(shell \
	python3 -c 'import sys; print("python%d.%d" % sys.version_info[:2])' 2>/dev/null || echo python3)/dist-packages)
DESTDIR ?=
# The manual pages (doc/man/NAME.SECTION) and the Python binding's package.
MANPAGES := $(wildcard doc/man/*.[1-8])
# The doc pages, installed beside README.md in share/doc/hub: their links
# to each other hold there, the README's lose their doc/.
DOCPAGES := $(wildcard doc/*.md)
PY_PKG := $(wildcard bindings/python/hubguest/*.py)
# The example guest in Python, beside the C ones (the default config runs
# it as /usr/local/libexec/hub/greeter).
PY_EXAMPLE := bindings/python/examples/greeter.py
all: $(PROTO_LIB) $(DAEMON_LIB) $(GUEST_SO) $(GUEST_A) $(PROGS) $(EXAMPLES) $(B)/guests/greeter

$(B)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<
$(B)/hubctl-obj/%.o: hubctl/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(PROTO_LIB): $(PROTO_OBJ)
	@rm -f $@
	ar rcs $@ $^
$(DAEMON_LIB): $(DAEMON_OBJ)
	@rm -f $@
	ar rcs $@ $^

# libguest: guestlib/*.c and mt/*.c with proto inside; only guest.h's names are
# exported: everything is built hidden but what guest.h marks GUEST_API, and
# libguest.map's local: * hides what might slip through.
$(PROTO_OBJ) $(GUEST_OBJ): ALL_CFLAGS += -fvisibility=hidden
# Stores into shared memory compile in proto/ and the tests alone (atomic.h);
# private: a test's flags must not reach the product objects it depends on.
$(B)/proto/%.o $(B)/tests/%: private ALL_CFLAGS += -DHP_WRITER
$(GUEST_SO): $(GUEST_OBJ) $(PROTO_OBJ) guestlib/libguest.map
	$(CC) $(ALL_LDFLAGS) -shared -Wl,-soname,$(GUEST_SONAME) \
		-Wl,--version-script=guestlib/libguest.map -o $(B)/$(GUEST_REAL) $(filter %.o,$^) \
		$(GUEST_LIBS)
	ln -sf $(GUEST_REAL) $(B)/$(GUEST_SONAME)
	ln -sf $(GUEST_SONAME) $@
$(GUEST_A): $(GUEST_OBJ) $(PROTO_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(B)/hubd: $(B)/daemon/hubd.o $(DAEMON_LIB) $(PROTO_LIB)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(DAEMON_LIBS)
# hub-run: a shell script, beside hubd and hubctl as it is once installed
$(B)/hub-run: scripts/hub-run.sh
	@mkdir -p $(@D)
	install -m 755 $< $@
$(B)/hubctl: $(HUBCTL_OBJ) $(B)/daemon/size.o $(B)/daemon/jsonout.o $(B)/daemon/poolfig.o \
		$(B)/daemon/escape.o $(B)/daemon/pcjson.o $(PROTO_LIB)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(HUBCTL_LIBS)

# Static libguest: hub-nats is installed beside hubd, not with the examples
$(B)/hub-nats: $(HUBNATS_OBJ) $(GUEST_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(NATS_LIBS) $(SODIUM_LIBS) $(shell pkg-config --libs json-c inih) \
		$(GUEST_LIBS)

# Example guests link the shared library, found next to them.
$(B)/guests/%: $(B)/guestlib/examples/%.o $(GUEST_SO)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -o $@ $< -L$(B) -lguest -Wl,-rpath,'$$ORIGIN/..' $(HASH_LIBS)
$(B)/guests/greeter: $(PY_EXAMPLE)
	@mkdir -p $(@D)
	install -m 755 $< $@
# Test guests: libguest-based or on proto directly (to break the rules).
$(B)/tests/guests/%: $(B)/tests/guests/%.o $(GUEST_A) $(PROTO_LIB)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(HASH_LIBS) $(GUEST_LIBS)

# The spec host: proto's pieces, never hubd's code or its segment layout.
$(SPECHOST): $(B)/tests/host/spechost.o $(PROTO_LIB)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(PROTO_LIBS)

$(B)/tests/shim/%.so: tests/shim/%.c
	@mkdir -p $(@D)
	$(CC) $(filter-out $(SANFLAGS) -MMD -MP,$(ALL_CFLAGS)) $(HARDEN_LDFLAGS) -shared -o $@ $< -ldl

# Benchmarks: the baselines (ZeroMQ when libzmq is there), a guest, the pools.
$(B)/tests/bench/baseline: tests/bench/baseline.c $(PROTO_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(ZMQ_FLAGS) -o $@ $< $(PROTO_LIB) $(PROTO_LIBS) $(ZMQ_LIBS)
$(B)/tests/bench/benchguest: $(B)/tests/bench/benchguest.o $(GUEST_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(HASH_LIBS) $(GUEST_LIBS)
# The pools on their own, and the segment sizes (proto only).
$(B)/tests/bench/poolbench: $(B)/tests/bench/poolbench.o $(PROTO_LIB)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(PROTO_LIBS)

# Microthreads against a bare fcontext pair (Boost.Context, declared in
# mtbench.c) and a condvar ping-pong.
$(B)/tests/bench/mtbench: $(B)/tests/bench/mtbench.o $(GUEST_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(GUEST_LIBS)

# Plain NATS request/reply on libnats, against a call across hub-nats.
$(B)/tests/bench/natsbase: $(B)/tests/bench/natsbase.o $(PROTO_LIB)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(NATS_LIBS) $(PROTO_LIBS) -lpthread

# Plain NATS publish-subscribe, against topics across hub-nats.
$(B)/tests/bench/natsps: $(B)/tests/bench/natsps.o $(PROTO_LIB)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(NATS_LIBS) $(PROTO_LIBS) -lpthread

# A topic's publisher and subscribers (tests/bench/pubsub.sh).
$(B)/tests/bench/psguest: $(B)/tests/bench/psguest.o $(GUEST_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(GUEST_LIBS)

# Eclipse iceoryx's request/response and publish-subscribe, against a
# RouDi the bench starts.
$(B)/tests/bench/iox $(B)/tests/bench/ioxps: $(B)/tests/bench/%: tests/bench/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -isystem $(IOX_INC) $(ALL_LDFLAGS) -o $@ $< -liceoryx_binding_c
# D-Bus method calls and signals through a private dbus-daemon (dbus.sh)
$(B)/tests/bench/dbus $(B)/tests/bench/dbusps: $(B)/tests/bench/%: tests/bench/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(SDBUS_CFLAGS) -o $@ $< $(ALL_LDFLAGS) $(SDBUS_LIBS)

# libFuzzer targets, built with clang: each decoder and parser that reads
# what someone else wrote. make fuzz runs each FUZZ_SECONDS (crashes land
# in results/fuzz/); make check runs each a few seconds from the corpus.
build-fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(PROTO_SRC) $(wildcard proto/*.h daemon/*.h) $(FUZZ_SRC_config) $(FUZZ_SRC_control) \
		$(FUZZ_SRC_natsbatch) nats/hubnats.h
	@mkdir -p $(@D)
	clang $(FUZZ_CFLAGS) -o $@ $< $(PROTO_SRC) $(FUZZ_SRC_$*) $(FUZZ_LIBS_$*) $(PROTO_LIBS)

fuzz: deps $(FUZZERS:%=build-fuzz/fuzz_%)
	@mkdir -p results/fuzz
	@for f in $(FUZZERS); do \
		d=$$(mktemp -d) && cp tests/fuzz/corpus/$$f/* $$d/ && \
		echo "fuzz $$f: $(FUZZ_SECONDS) s" && \
		build-fuzz/fuzz_$$f -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
			-artifact_prefix=results/fuzz/$$f- -print_final_stats=0 $$d 2>&1 | \
			grep -E "^(#[0-9]+.*DONE|==.*ERROR|SUMMARY)" ; \
		rc=$${PIPESTATUS[0]}; rm -rf $$d; [ $$rc -eq 0 ] || exit $$rc; \
	done; echo "fuzz: $(words $(FUZZERS)) passed, 0 failed"
fuzz-smoke:
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=4

# One Check runner; a suite per check_NAME.c, found by name.
$(B)/tests/suites.inc: $(SUITE_SRC) Makefile
	@mkdir -p $(@D)
	@printf '$(foreach s,$(SUITES),SUITE($(s:check_%=%))\n)' > $@.tmp && mv $@.tmp $@
$(B)/tests/check_main.o: tests/check_main.c $(B)/tests/suites.inc
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(CHECK_CFLAGS) -I$(B)/tests -c -o $@ $<
$(B)/tests/%.o: tests/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(CHECK_CFLAGS) -DBUILD_DIR='"$(abspath $(B))"' -c -o $@ $<
$(B)/check_hub: $(TEST_OBJ) $(GUEST_OBJ) $(DAEMON_LIB) $(PROTO_LIB) | $(TEST_SHIMS) $(SPECHOST) \
		$(B)/hub-nats
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(DAEMON_LIBS) $(GUEST_LIBS) $(NATS_LIBS) \
		$(SODIUM_LIBS)

# Every header compiles on its own; libguest's public one as C++ too.
headers:
	@for h in $(HEADERS); do \
		echo "#include \"$$h\"" | $(CC) $(filter-out -MMD -MP,$(ALL_CFLAGS)) -fsyntax-only -x c - || exit 1; \
	done
	@echo '#include "guestlib/guest.h"' | \
		$(CXX) -std=c++11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only -x c++ -

deps:
	@sh scripts/deps.sh

# make bench: everything measured side by side, results in results/;
# then the memory of hubs of 16 and 255 idle guests (tests/bench/memory.sh),
# beside that of another build when BEFORE=BUILD_DIR names one.
bench:
	@BENCH=1 sh scripts/deps.sh
	@rm -f $(B)/tests/bench/baseline	# built again: with ZeroMQ now there
	@$(MAKE) --no-print-directory all $(BENCH_PROGS)
	@for p in $(BENCH_PEERS); do $(MAKE) --no-print-directory $$p || \
		echo "bench: $$p not built: its peer is left out" >&2; done
	bash tests/bench/run.sh $(B)
	bash tests/bench/memory.sh $(B) $(BEFORE)

# The sub-make runs after deps so pkg-config sees what was just installed.
check: deps
	@$(MAKE) --no-print-directory test
check-asan: deps
	@$(MAKE) --no-print-directory test SANITIZE=address
check-tsan: deps
	@$(MAKE) --no-print-directory test-tsan SANITIZE=thread

# Check's per-test timeouts catch hangs, not slowness: six suites side by
# side on a loaded machine get twice theirs, sanitizers (slower) four times.
TIMEOUT_MULT := $(if $(SANITIZE),4,2)
# The tests side by side (scripts/run-tests.sh): each Check suite on its
# own (CK_RUN_SUITE) and each step that is not Check's, TEST_JOBS at a
# time (three per CPU unless given; one under a sanitizer, whose
# processes are heavier: its slower guests with tight heartbeats, such as
# faults' 50 ms, were taken for hung at two per CPU beside other work),
# each one's output in
# $(B)/tests/log/NAME.log, shown in full when it fails. They share no
# path: every hub is in a directory of its own (tests/e2e/harness.c).
# The slowest start first: as the last run took them, else as listed
# here (the builds of fuzz-smoke and test-deb first).
TEST_JOBS ?= $(if $(SANITIZE),$(shell nproc))
# The steps' make under another name: make -n runs a line that names
# $(MAKE), and would run every test
SUBMAKE = $(MAKE) --no-print-directory
RUN_TESTS = bash scripts/run-tests.sh $(if $(TEST_JOBS),-j $(TEST_JOBS)) $(B)/tests/log
SUITE_JOBS = $(foreach s,$(SUITES:check_%=%),'$(s)=CK_RUN_SUITE=$(s) $(B)/check_hub')
test: headers all $(TEST_GUESTS) $(TEST_SHIMS) $(SPECHOST) $(BENCH_PROGS) $(B)/check_hub
	CK_TIMEOUT_MULTIPLIER=$(TIMEOUT_MULT) $(RUN_TESTS) \
		$(if $(SANITIZE),,'fuzz-smoke=$(SUBMAKE) fuzz-smoke' \
		'test-deb=$(SUBMAKE) test-deb' \
		'bench-smoke=bash tests/bench/run.sh $(B) --smoke' \
		'bench-wake-smoke=BENCH_ONLY=wake bash tests/bench/run.sh $(B) --smoke' \
		'test-python=$(SUBMAKE) test-python' \
		'test-install=$(SUBMAKE) test-install' \
		'check-readme=sh scripts/check-readme.sh $(B)' \
		'check-man=$(SUBMAKE) check-man') \
		'check-stores=sh scripts/check-stores.sh' \
		'test-kv=sh guestlib/examples/test-kv.sh $(B)' $(SUITE_JOBS)
# halt_on_error: a race in a guest ends it, which its test sees
test-tsan: all $(TEST_GUESTS) $(B)/check_hub
	TSAN_OPTIONS=halt_on_error=1 CK_TIMEOUT_MULTIPLIER=$(TIMEOUT_MULT) \
		CK_INCLUDE_TAGS=tsan $(RUN_TESTS) $(SUITE_JOBS)

# make install [PREFIX=/usr/local] [DESTDIR=staging]: binaries, libguest,
# its header and pkg-config file, the example guests, hub-nats (beside
# them: a guest, not a command), the unit, the configs hubd.conf and
# nats.conf (an existing one is kept), the docs. make uninstall with the
# same variables takes it all away again (doc/packaging.md).
INSTALLED = $(PREFIX)/sbin/hubd $(PREFIX)/bin/hubctl $(PREFIX)/bin/hub-run \
	$(addprefix $(LIBDIR)/,$(GUEST_REAL) $(GUEST_SONAME) libguest.so libguest.a \
	pkgconfig/libguest.pc) $(PREFIX)/include/guest.h \
	$(addprefix $(PREFIX)/libexec/hub/,$(notdir $(EXAMPLES)) greeter hub-nats) \
	$(PREFIX)/lib/systemd/system/hubd.service \
	$(addprefix $(PREFIX)/share/doc/hub/,README.md $(notdir $(DOCPAGES))) \
	$(foreach m,$(MANPAGES),$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m))) \
	$(addprefix $(PYTHONDIR)/hubguest/,$(notdir $(PY_PKG)))
# Directories of hub's own, gone at uninstall once empty
INSTALLED_DIRS = $(PREFIX)/libexec/hub $(PREFIX)/share/doc/hub $(SYSCONFDIR)/hub \
	$(PYTHONDIR)/hubguest $(filter $(PREFIX)/%,$(RUNDIR) $(STATEDIR))
# hubd and hubctl as installed: their default config and control socket
# this install's (daemon/config.h, daemon/hubd.c), built in a directory
# of their own so that the tree's build/hubd and build/hubctl stay as
# they are.
INSTALL_PATHS := -DHUB_CONF_DEFAULT='"$(SYSCONFDIR)/hub/hubd.conf"' \
	-DHUB_CONTROL_DEFAULT='"$(RUNDIR)/hubd.sock"' -DBR_KEY_DEFAULT='"$(STATEDIR)/nats.key"'
INSTALL_CFLAGS = $(filter-out -MMD -MP,$(ALL_CFLAGS)) $(INSTALL_PATHS)
# The config install writes: the examples from PREFIX; where python3 or the
# loader would not look, the Python example is told where the binding and
# libguest are.
GREETER_ENV = $(strip $(if $(filter /usr /usr/local,$(PREFIX)),,PYTHONPATH=$(PYTHONDIR)) \
	$(if $(INSTALL_RPATH),HUB_LIBGUEST=$(LIBDIR)/$(GUEST_SONAME)))
INSTALL_CONF = sed -e 's|/usr/local/libexec/hub/|$(PREFIX)/libexec/hub/|' \
	-e 's|/etc/hub/|$(SYSCONFDIR)/hub/|' -e 's|^control = /run/hub/|control = $(RUNDIR)/|' \
	$(if $(GREETER_ENV),-e '/^exec = .*\/greeter$$/a env = $(GREETER_ENV)') conf/hubd.conf
# hub-nats's example config: its paths where this install put things
INSTALL_NATS_CONF = sed -e 's|/usr/local/libexec/hub/|$(PREFIX)/libexec/hub/|' \
	-e 's|/etc/hub/|$(SYSCONFDIR)/hub/|' -e 's|/var/lib/hub/|$(STATEDIR)/|' conf/nats.conf
install: all
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/bin \
		$(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(PREFIX)/include \
		$(DESTDIR)$(PREFIX)/libexec/hub $(DESTDIR)$(PREFIX)/lib/systemd/system \
		$(DESTDIR)$(PREFIX)/share/doc/hub $(DESTDIR)$(SYSCONFDIR)/hub
	t=$$(mktemp -d) && trap 'rm -rf "$$t"' EXIT && \
	$(CC) $(INSTALL_CFLAGS) -c -o $$t/hubd.o daemon/hubd.c && \
	$(CC) $(INSTALL_CFLAGS) -c -o $$t/config.o daemon/config.c && \
	$(CC) $(INSTALL_CFLAGS) -c -o $$t/main.o hubctl/main.c && \
	$(CC) $(ALL_LDFLAGS) -o $$t/hubd $$t/hubd.o $$t/config.o $(DAEMON_LIB) $(PROTO_LIB) \
		$(DAEMON_LIBS) && \
	$(CC) $(ALL_LDFLAGS) -o $$t/hubctl $$t/main.o $(filter-out %/main.o,$(HUBCTL_OBJ)) \
		$(B)/daemon/size.o $(B)/daemon/jsonout.o $(B)/daemon/poolfig.o \
		$(B)/daemon/escape.o $(B)/daemon/pcjson.o $(PROTO_LIB) $(HUBCTL_LIBS) && \
	$(CC) $(INSTALL_CFLAGS) -c -o $$t/natsconf.o nats/conf.c && \
	$(CC) $(ALL_LDFLAGS) -o $$t/hub-nats $$t/natsconf.o $(filter-out $(B)/nats/conf.o,$(HUBNATS_OBJ)) \
		$(GUEST_A) $(NATS_LIBS) $(SODIUM_LIBS) $(shell pkg-config --libs json-c inih) \
		$(GUEST_LIBS) && \
	install -m 755 $$t/hubd $(DESTDIR)$(PREFIX)/sbin/hubd && \
	install -m 755 $$t/hubctl $(DESTDIR)$(PREFIX)/bin/hubctl && \
	install -m 755 $$t/hub-nats $(DESTDIR)$(PREFIX)/libexec/hub/hub-nats
	$(if $(filter $(PREFIX)/%,$(STATEDIR)),install -d $(DESTDIR)$(STATEDIR))
	@# hub-run: Python guests find the binding where install puts it
	sed 's|^installed_pythondir=$$|installed_pythondir=$(PYTHONDIR)|' $(B)/hub-run \
		> $(DESTDIR)$(PREFIX)/bin/hub-run && chmod 755 $(DESTDIR)$(PREFIX)/bin/hub-run
	$(if $(filter $(PREFIX)/%,$(RUNDIR)),install -d $(DESTDIR)$(RUNDIR))
	install -m 755 $(B)/$(GUEST_REAL) $(DESTDIR)$(LIBDIR)/$(GUEST_REAL)
	ln -sf $(GUEST_REAL) $(DESTDIR)$(LIBDIR)/$(GUEST_SONAME)
	ln -sf $(GUEST_SONAME) $(DESTDIR)$(LIBDIR)/libguest.so
	install -m 644 $(B)/libguest.a $(DESTDIR)$(LIBDIR)/libguest.a
	install -m 644 guestlib/guest.h $(DESTDIR)$(PREFIX)/include/guest.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@VERSION@|$(GUEST_VER)|' \
		guestlib/libguest.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/libguest.pc
	@# linked again: a RUNPATH to LIBDIR, not the build tree's $$ORIGIN/..
	for g in $(notdir $(EXAMPLES)); do \
		$(CC) $(ALL_LDFLAGS) -o $(DESTDIR)$(PREFIX)/libexec/hub/$$g \
		$(B)/guestlib/examples/$$g.o -L$(B) -lguest $(INSTALL_RPATH) $(HASH_LIBS) || exit 1; \
	done
	install -m 755 $(PY_EXAMPLE) $(DESTDIR)$(PREFIX)/libexec/hub/greeter
	sed -e 's|/usr/local/sbin/|$(PREFIX)/sbin/|g' -e 's|/etc/hub/|$(SYSCONFDIR)/hub/|g' \
		-e 's|/usr/local/share/|$(PREFIX)/share/|g' systemd/hubd.service \
		> $(DESTDIR)$(PREFIX)/lib/systemd/system/hubd.service
	test -e $(DESTDIR)$(SYSCONFDIR)/hub/hubd.conf || \
		$(INSTALL_CONF) > $(DESTDIR)$(SYSCONFDIR)/hub/hubd.conf
	test -e $(DESTDIR)$(SYSCONFDIR)/hub/nats.conf || \
		$(INSTALL_NATS_CONF) > $(DESTDIR)$(SYSCONFDIR)/hub/nats.conf
	sed 's|](doc/|](|g' README.md > $(DESTDIR)$(PREFIX)/share/doc/hub/README.md
	for p in $(DOCPAGES); do sed 's|](\.\./README\.md|](README.md|g' $$p \
		> $(DESTDIR)$(PREFIX)/share/doc/hub/$${p##*/} || exit 1; done
	chmod 644 $(DESTDIR)$(PREFIX)/share/doc/hub/*.md
	for m in $(MANPAGES); do install -D -m 644 $$m \
		$(DESTDIR)$(MANDIR)/man$${m##*.}/$${m##*/} || exit 1; done
	$(if $(PY_PKG),install -d $(DESTDIR)$(PYTHONDIR)/hubguest && \
		install -m 644 $(PY_PKG) $(DESTDIR)$(PYTHONDIR)/hubguest/)

# Every file install wrote, each config only as install wrote it (a changed
# one is kept, and said so), then the directories left empty: hub's own
# always; under DESTDIR, or a PREFIX other than /usr and /usr/local, every
# one up to DESTDIR or PREFIX's parent.
uninstall:
	@conf=$(DESTDIR)$(SYSCONFDIR)/hub/hubd.conf; \
	if [ -f $$conf ] && $(INSTALL_CONF) | cmp -s - $$conf; then rm -f $$conf; \
	elif [ -e $$conf ]; then echo "uninstall: $$conf kept: changed since install"; fi; \
	conf=$(DESTDIR)$(SYSCONFDIR)/hub/nats.conf; \
	if [ -f $$conf ] && $(INSTALL_NATS_CONF) | cmp -s - $$conf; then rm -f $$conf; \
	elif [ -e $$conf ]; then echo "uninstall: $$conf kept: changed since install"; fi; \
	rm -f $(addprefix $(DESTDIR),$(INSTALLED)) && \
	rm -rf $(DESTDIR)$(PYTHONDIR)/hubguest/__pycache__ && \
	for d in $(addprefix $(DESTDIR),$(INSTALLED_DIRS)); do \
		[ ! -d $$d ] || rmdir --ignore-fail-on-non-empty $$d || exit 1; done; \
	stop='$(if $(DESTDIR),$(DESTDIR),$(if $(filter /usr /usr/local,$(PREFIX)),,$(dir $(PREFIX))))'; \
	stop=$${stop%/}; [ -n "$$stop" ] || exit 0; \
	for f in $(addprefix $(DESTDIR),$(INSTALLED) $(INSTALLED_DIRS)); do \
		d=$${f%/*}; \
		while [ "$${d#$$stop/}" != "$$d" ] && rmdir "$$d" 2>/dev/null; do d=$${d%/*}; done; \
	done

# An install into a staging tree: everything lands, the config checks,
# a guest builds against the installed header with pkg-config, and
# libguest's exports, version and C++ use check (scripts/check-libguest.sh);
# make uninstall then leaves the tree empty. Then an install used in place
# under a prefix of its own (scripts/check-install.sh).
test-install: all
	@d=$$(mktemp -d) && t=$$(mktemp -d) && trap 'rm -rf $$d $$t' EXIT && \
	$(MAKE) --no-print-directory -s install DESTDIR=$$d PREFIX=/usr/local >/dev/null && \
	for f in sbin/hubd bin/hubctl bin/hub-run lib/libguest.so lib/$(GUEST_SONAME) lib/$(GUEST_REAL) \
		lib/libguest.a include/guest.h \
		lib/pkgconfig/libguest.pc libexec/hub/echo libexec/hub/greeter libexec/hub/hub-nats \
		lib/systemd/system/hubd.service \
		share/doc/hub/README.md share/doc/hub/protocol.md share/doc/hub/security.md \
		share/doc/hub/nats.md \
		share/man/man1/hubctl.1 share/man/man1/hub-run.1 share/man/man3/libguest.3 \
		share/man/man5/hubd.conf.5 share/man/man8/hubd.8 share/man/man8/hub-nats.8; do \
		test -e $$d/usr/local/$$f || { echo "install: $$f missing"; exit 1; }; done && \
	test -e $$d/etc/hub/nats.conf || { echo "install: etc/hub/nats.conf missing"; exit 1; } && \
	{ ! readelf -d $$d/usr/local/libexec/hub/hub-nats | grep -q 'NEEDED.*libguest' || \
		{ echo "install: hub-nats links libguest.so, not libguest.a"; exit 1; }; } && \
	for p in 1:hubctl 1:hub-run 3:libguest 5:hubd.conf 8:hubd 8:hub-nats; do \
		test "$$(MANPATH=$$d/usr/local/share/man man -w $${p%%:*} $${p#*:})" = \
		$$d/usr/local/share/man/man$${p%%:*}/$${p#*:}.$${p%%:*} || \
		{ echo "install: man $${p%%:*} $${p#*:} does not find the installed page"; exit 1; }; \
	done && \
	py=$$d$(PYTHONDIR) && \
	PYTHONPATH=$$py HUB_LIBGUEST=$$d/usr/local/lib/$(GUEST_SONAME) python3 -c \
		'import sys, hubguest, hubguest._lib as l; l.load(); \
		sys.exit(not hubguest.__file__.startswith(sys.argv[1]))' $$py || \
		{ echo "install: hubguest does not load from $$py"; exit 1; } && \
	sed 's|/usr/local/libexec/|'$$d'/usr/local/libexec/|' $$d/etc/hub/hubd.conf > $$t/check.conf && \
	$$d/usr/local/sbin/hubd -n -f $$t/check.conf >/dev/null && \
	PKG_CONFIG_SYSROOT_DIR=$$d PKG_CONFIG_LIBDIR=$$d/usr/local/lib/pkgconfig \
		$(CC) -o $$t/kv guestlib/examples/kv.c $$(PKG_CONFIG_SYSROOT_DIR=$$d \
		PKG_CONFIG_LIBDIR=$$d/usr/local/lib/pkgconfig pkg-config --cflags --libs libguest) && \
	echo "install: 1 passed, 0 failed" && \
	CC="$(CC)" CXX="$(CXX)" sh scripts/check-libguest.sh $$d/usr/local && \
	$(MAKE) --no-print-directory -s uninstall DESTDIR=$$d PREFIX=/usr/local && \
	{ test -z "$$(ls -A $$d)" || { find $$d | sed 's/^/  left: /'; \
		echo "uninstall: files or directories left in the staging tree"; exit 1; }; } && \
	MAKE="$(MAKE)" CC="$(CC)" sh scripts/check-install.sh

# The Debian packages hub, libguest0, libguest-dev and python3-hubguest,
# built by dpkg-buildpackage in a copy of the tree (scripts/deb.sh).
deb: deps
	@sh scripts/deb.sh $(B)/deb $(GUEST_VER)

# The packages installed on this machine, a hub run from them alone, a guest
# built against libguest-dev, then all of it purged (scripts/test-deb.sh).
test-deb: deb
	@bash scripts/test-deb.sh $(B)/deb $(GUEST_VER)

# The default config, with the example guests taken from this build; the
# Python one finds the binding and libguest in the tree (guests inherit
# hubd's environment).
run: deps
	@$(MAKE) --no-print-directory all
	@sed 's|/usr/local/libexec/hub/|$(abspath $(B))/guests/|' conf/hubd.conf > $(B)/hubd-run.conf
	PYTHONPATH=$(abspath bindings/python) HUB_LIBGUEST=$(abspath $(B))/libguest.so \
		$(B)/hubd -f $(B)/hubd-run.conf

# The Python binding's tests: pytest with real hubd processes and guests in
# C and Python (tests/python), under a python3 that has pytest (the one on
# PATH, else Debian's, where deps.sh installs python3-pytest).
test-python: all $(B)/tests/guests/prober
	@py=python3; $$py -c 'import pytest' 2>/dev/null || py=/usr/bin/python3; \
	echo "PYTHONPATH=bindings/python HUB_BUILD=$(abspath $(B)) $$py -m pytest -q -p no:cacheprovider tests/python"; \
	PYTHONPATH=$(abspath bindings/python) HUB_BUILD=$(abspath $(B)) $$py -m pytest -q -p no:cacheprovider tests/python

spec-coverage:
	@sh scripts/spec-coverage.sh

# The manual pages: mandoc's lint and groff's warnings clean, and each
# page still documents what the code has (scripts/check-man.sh).
check-man:
	@sh scripts/check-man.sh

clean:
	rm -rf build build-asan build-tsan build-fuzz results

-include $(shell find $(B) -name '*.d' 2>/dev/null)
