# hub: a shared-memory plugin hub. GNU make.
#   make              build everything
#   make check        install missing build deps (Debian), build, run every test
#   make check-asan   the same tests under AddressSanitizer + UBSan
#   make check-tsan   the lock-free tests under ThreadSanitizer
#   make spec-coverage  which spec rules code and tests cite

SANITIZE ?=
ifeq ($(SANITIZE),)
B := build
else ifeq ($(SANITIZE),address)
B := build-asan
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
else ifeq ($(SANITIZE),thread)
B := build-tsan
SANFLAGS := -fsanitize=thread
else
$(error SANITIZE must be empty, address or thread)
endif

CC ?= cc
CFLAGS ?= -O2 -g
WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wpointer-arith -Wcast-qual -Wsign-compare
ALL_CFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) $(SANFLAGS) -I. -MMD -MP
ALL_LDFLAGS := $(LDFLAGS) $(SANFLAGS)

PROTO_SRC := $(wildcard proto/*.c)
PROTO_OBJ := $(PROTO_SRC:%.c=$(B)/%.o)
PROTO_LIB := $(B)/libhubproto.a
HEADERS := $(wildcard proto/*.h)

UNIT_SRC := $(sort $(wildcard tests/unit/check_*.c))
UNIT_OBJ := $(UNIT_SRC:%.c=$(B)/%.o) $(B)/tests/check_main.o
SUITES := $(patsubst tests/unit/check_%.c,%,$(UNIT_SRC))
CHECK_CFLAGS = $(shell pkg-config --cflags check)
CHECK_LIBS = $(shell pkg-config --libs check)

.PHONY: all check check-asan check-tsan test test-tsan deps headers spec-coverage clean
all: $(PROTO_LIB)

$(B)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(PROTO_LIB): $(PROTO_OBJ)
	@rm -f $@
	ar rcs $@ $^

# One Check runner; a suite per tests/unit/check_NAME.c, found by name.
$(B)/tests/suites.inc: $(UNIT_SRC) Makefile
	@mkdir -p $(@D)
	@printf '$(foreach s,$(SUITES),SUITE($(s))\n)' > $@.tmp && mv $@.tmp $@
$(B)/tests/check_main.o: tests/check_main.c $(B)/tests/suites.inc
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(CHECK_CFLAGS) -I$(B)/tests -c -o $@ $<
$(B)/tests/unit/%.o: tests/unit/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(CHECK_CFLAGS) -c -o $@ $<
$(B)/check_hub: $(UNIT_OBJ) $(PROTO_LIB)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(CHECK_LIBS) -lpthread

# Every header compiles on its own.
headers:
	@for h in $(HEADERS); do \
		echo "#include \"$$h\"" | $(CC) $(ALL_CFLAGS) -fsyntax-only -x c - || exit 1; \
	done

deps:
	@sh scripts/deps.sh

# The sub-make runs after deps so pkg-config sees what was just installed.
check: deps
	@$(MAKE) --no-print-directory test
check-asan: deps
	@$(MAKE) --no-print-directory test SANITIZE=address
check-tsan: deps
	@$(MAKE) --no-print-directory test-tsan SANITIZE=thread

# Sanitizers slow things down: give Check's per-test timeouts room.
TIMEOUT_MULT := $(if $(SANITIZE),10,1)
test: headers $(B)/check_hub
	CK_TIMEOUT_MULTIPLIER=$(TIMEOUT_MULT) $(B)/check_hub
test-tsan: $(B)/check_hub
	CK_TIMEOUT_MULTIPLIER=$(TIMEOUT_MULT) CK_INCLUDE_TAGS=tsan $(B)/check_hub

spec-coverage:
	@sh scripts/spec-coverage.sh

clean:
	rm -rf build build-asan build-tsan

-include $(wildcard $(B)/*/*.d $(B)/*/*/*.d)
