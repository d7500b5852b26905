# kforge: one GNU Makefile. `make` builds the CLI and the worker; `make test`
# runs the tests; `make check` runs them under ASan and UBSan; `make deps`
# installs what is missing from Debian's packages.

# Objects build on every core unless the caller chose (make -jN): the
# README's commands say plain `make`, and a serial build of both trees (the
# plain one and make check's sanitized one) cost CI about 4 minutes.
ifeq ($(filter -j%,$(MAKEFLAGS)),)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 1)
endif

BUILD ?= build
CC ?= cc
OPT ?= -O2
SAN ?=
CFLAGS = -std=c11 -D_GNU_SOURCE $(OPT) -g -Wall -Wextra -Werror -Wshadow \
	 -Wstrict-prototypes -Iinclude $(SAN) -MMD -MP
# Full RELRO and BIND_NOW: every GOT slot is resolved at start and then
# read-only (the candidate's runner seals it), so no candidate rewrites the
# runner's clock through it.
LDFLAGS = $(SAN) -Wl,-rpath,'$$ORIGIN/lib' -Wl,-z,relro,-z,now
LDLIBS = -lsqlite3 -lcurl -lcjson -lm -ldl -lpthread
# OpenEnv's WebSocket (src/server/websocket.c): libwslay frames the
# messages, nettle hashes the handshake's key. Only the binaries that serve
# or test it link them (kforge and the worker reach no code of that file).
WS_LIBS = -lwslay -lnettle
# The farm on Redis Streams (src/farm/redis.c): hiredis, linked by kforge,
# kforge-serve (--redis) and the tests, not by the worker. Without its header the farm's Redis functions say
# so at run time (make deps installs it, and redis-server for the tests).
ifneq ($(wildcard /usr/include/hiredis/hiredis.h),)
REDIS_LIBS = -lhiredis
SHIP_HIREDIS = $(BUILD)/lib/libhiredis.so.0.14
$(BUILD)/src/farm/redis.o: CFLAGS += -DKF_HAVE_HIREDIS
else
$(info kforge: no hiredis (make deps): the Redis farm is left out)
endif

SRC := $(sort $(wildcard src/*/*.c))
OBJ := $(SRC:%.c=$(BUILD)/%.o)
TEST_SRC := $(sort $(wildcard tests/*.c))
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/%.o)
BINS := $(BUILD)/kforge $(BUILD)/kforge-worker
# The reward service's server needs libmicrohttpd (DEB_PKGS); where its
# header is missing (the GPU machine), `all` leaves it out and says so.
ifneq ($(wildcard /usr/include/microhttpd.h),)
BINS += $(BUILD)/kforge-serve
else
$(info kforge: no libmicrohttpd (make deps): build/kforge-serve is not built)
endif

# python3-torch (CPU) runs the tests of KernelBench-format tasks
# (docs/kernelbench.md); about two minutes to install.
DEB_PKGS = gcc make python3-venv libcjson-dev libdlpack-dev libcurl4-openssl-dev \
	   libsqlite3-dev libmicrohttpd-dev libwslay-dev nettle-dev python3-torch \
	   bubblewrap rsync libjs-chart.js chromium redis-server libhiredis-dev

# The runners of KernelBench-format tasks run under bubblewrap; the build
# ships Debian's copy beside kforge for machines without it (its libraries,
# libselinux, libcap and libpcre2, are in every Ubuntu and Debian base).
ifneq ($(wildcard /usr/bin/bwrap),)
SHIP_BWRAP = $(BUILD)/bin/bwrap
else
$(info kforge: no bubblewrap (make deps): build/bin/bwrap is not shipped)
endif

# `kforge report` embeds Debian's Chart.js (libjs-chart.js, MIT) in each
# report with its license notice; the build copies both beside kforge
# (build/share/chart.js). Chromium renders the reports in the tests.
CHARTJS = /usr/share/javascript/chart.js/chart.min.js
CHARTJS_LICENSE = /usr/share/doc/libjs-chart.js/copyright
ifneq ($(wildcard $(CHARTJS)),)
SHIP_CHARTJS = $(BUILD)/share/chart.js/chart.min.js \
	       $(BUILD)/share/chart.js/LICENSE
else
$(info kforge: no libjs-chart.js (make deps): kforge report cannot draw charts)
endif

# The cuda backend opens CUDA at run time; at build time it only borrows the
# CUPTI record layouts from the toolkit's headers, when they are there.
CUDA_HOME ?= /usr/local/cuda
ifneq ($(wildcard $(CUDA_HOME)/include/cupti_activity.h),)
$(BUILD)/src/backend/cuda.o: CFLAGS += -isystem $(CUDA_HOME)/include
endif

.PHONY: all test check deps clean format test-gpu
all: $(BINS) $(BUILD)/lib/libcjson.so.1 $(BUILD)/lib/libsqlite3.so.0 \
	$(BUILD)/lib/libwslay.so.1 $(BUILD)/include/dlpack/dlpack.h \
	$(BUILD)/runner/kforge_bridge.py $(SHIP_BWRAP) $(SHIP_CHARTJS) $(SHIP_HIREDIS)

# The attention generator's kernel template (src/attention/*.tmpl) becomes
# C string literals that gen.c includes (docs/attention.md).
ATTN_TMPL := $(wildcard src/attention/*.tmpl)
ATTN_INC := $(ATTN_TMPL:src/attention/%.tmpl=$(BUILD)/src/attention/%.inc)
$(BUILD)/src/attention/%.inc: src/attention/%.tmpl
	@mkdir -p $(dir $@)
	sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $< > $@
$(BUILD)/src/attention/gen.o: $(ATTN_INC)
$(BUILD)/src/attention/gen.o: CFLAGS += -I$(BUILD)/src/attention

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/libkforge.a: $(OBJ)
	@rm -f $@
	ar rcs $@ $^

# The CLI: tools/kforge.c holds the table of subcommands; a command may live
# in a file of its own, tools/kforge_<name>.c (tools/commands.h).
CLI_SRC := tools/kforge.c $(sort $(wildcard tools/kforge_*.c))
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)

$(BUILD)/kforge: $(CLI_OBJ) $(BUILD)/libkforge.a
	$(CC) $(LDFLAGS) -o $@ $^ $(REDIS_LIBS) $(LDLIBS)

$(BUILD)/kforge-worker: $(BUILD)/tools/kforge-worker.o $(BUILD)/libkforge.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The reward service's HTTP server (`kforge serve` runs it): the only
# binary linked with libmicrohttpd, which the GPU machine lacks.
$(BUILD)/kforge-serve: $(BUILD)/tools/kforge-serve.o $(BUILD)/libkforge.a
	$(CC) $(LDFLAGS) -o $@ $^ -lmicrohttpd $(WS_LIBS) $(REDIS_LIBS) $(LDLIBS)

$(BUILD)/kforge-tests: $(TEST_OBJ) $(BUILD)/libkforge.a
	$(CC) $(LDFLAGS) -o $@ $^ $(WS_LIBS) $(REDIS_LIBS) $(LDLIBS)

# The GPU machine lacks cJSON: ship Debian's copy beside the binaries.
$(BUILD)/lib/libcjson.so.1:
	@mkdir -p $(dir $@)
	cp -L $$(for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib; do \
		[ -e $$d/libcjson.so.1 ] && echo $$d/libcjson.so.1 && break; \
		done) $@

# Nor does every machine have SQLite's library (the store): ship it too.
$(BUILD)/lib/libsqlite3.so.0:
	@mkdir -p $(dir $@)
	cp -L $$(for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib; do \
		[ -e $$d/libsqlite3.so.0 ] && echo $$d/libsqlite3.so.0 && break; \
		done) $@

# Nor libwslay (kforge-serve's and the tests' WebSocket frames). nettle,
# the other one they add, is not shipped: libcurl's librtmp needs it, so
# every machine that runs kforge has it.
$(BUILD)/lib/libwslay.so.1:
	@mkdir -p $(dir $@)
	cp -L $$(for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib; do \
		[ -e $$d/libwslay.so.1 ] && echo $$d/libwslay.so.1 && break; \
		done) $@

# Nor hiredis (the Redis farm's client).
$(BUILD)/lib/libhiredis.so.0.14:
	@mkdir -p $(dir $@)
	cp -L $$(for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib; do \
		[ -e $$d/libhiredis.so.0.14 ] && echo $$d/libhiredis.so.0.14 && break; \
		done) $@

# The GPU machine lacks DLPack's header too: candidates compiled there
# find this copy (see src/compile).
$(BUILD)/include/dlpack/dlpack.h: /usr/include/dlpack/dlpack.h
	@mkdir -p $(dir $@)
	cp $< $@

$(BUILD)/bin/bwrap: /usr/bin/bwrap
	@mkdir -p $(dir $@)
	cp $< $@

$(BUILD)/share/chart.js/chart.min.js: $(CHARTJS)
	@mkdir -p $(dir $@)
	cp -L $< $@

$(BUILD)/share/chart.js/LICENSE: $(CHARTJS_LICENSE)
	@mkdir -p $(dir $@)
	cp -L $< $@

# The PyTorch bridge for KernelBench-format tasks, found beside kforge.
$(BUILD)/runner/kforge_bridge.py: runner/kforge_bridge.py
	@mkdir -p $(dir $@)
	cp $< $@

test: all $(BUILD)/kforge-tests
	$(TEST_ENV) KFORGE_BUILD=$(BUILD) $(BUILD)/kforge-tests $(TESTS)

test-gpu: all $(BUILD)/kforge-tests
	KFORGE_BUILD=$(BUILD) KFORGE_REQUIRE_GPU=1 $(BUILD)/kforge-tests gpu

# Sanitizers: a separate build tree, so that both can coexist. The slow
# groups run once, in `make test`: the red-team corpora (under the
# sanitizers they only repeat the same worker code over many candidates);
# the cases whose time is torch building extensions (the custom-code
# probe's, the compiled baseline's: 2.5 minutes); the KernelBench-format
# cases, whose time is torch's, but for SAN_KB, which take every C path of
# the bridge's supervisor (a batch with warm bridges, a crash, an exception,
# oversized replies, a wrong answer, an alias, both protocols, the bench,
# a kforge kernel, one request of the server's and one search: the batch's
# second test, the episode's and the model policy's KernelBench cases reach
# no C path those do not, 64 s under the sanitizers); the attention
# family's evaluations but one, and its builds with nvcc (the expression parser's and the spec checker's cases
# do run). The report's and export's fixtures (a tuner's run, a bench, a store of evaluations: 2
# and 1.8 minutes under the sanitizers) are read from make test's build
# (KFORGE_TEST_DATA, tests' kf_test_data_dir).
SAN_KB = +kernelbench_modelnew_passes +kernelbench_wrong_values \
	+kernelbench_input_alias_is +kernelbench_exception \
	+kernelbench_oversized +kernelbench_protocol_kernelbench \
	+kernelbench_kforge_kernel_fast +kernelbench_candidate_crash \
	+kernelbench_warm_bridges_in \
	+kernelbench_bench_jsonl +server_score_kernelbench \
	+search_replay_kernelbench_dir +eval_kernelbench_protocol \
	+gpu_kernelbench +attention_causal_generated
check:
	$(MAKE) BUILD=build/san OPT=-O1 TEST_ENV="KFORGE_TEST_DATA=$(CURDIR)/build/test-data" \
		TESTS="$(or $(TESTS),-corpus -kernelbench -_host_ok -compiles_with_nvcc $(SAN_KB))" \
		SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" test

deps:
	@missing=""; for p in $(DEB_PKGS); do \
		dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq $$missing; \
	fi

format:
	clang-format -i $(SRC) $(TEST_SRC) tools/*.c include/kforge/*.h

clean:
	rm -rf build

-include $(OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(BUILD)/tools/kforge.d $(BUILD)/tools/kforge-worker.d \
	$(BUILD)/tools/kforge-serve.d $(CLI_OBJ:.o=.d)
