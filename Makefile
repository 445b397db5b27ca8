# heaptrace: external heap tracer (CO-RE eBPF + C loader)
PREFIX ?= /usr/local
CC ?= gcc
CLANG ?= clang
BPFTOOL ?= bpftool
ARCH := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')

BUILD := build
# CFLAGS is the caller's to set (optimisation, sanitizers); HT_CFLAGS is not optional.
CFLAGS ?= -O2 -g
HT_CFLAGS := -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -Ibpf -Iuser -I. -I$(BUILD)
LDLIBS := -lbpf -lelf -ldw -lz -lcapstone -lmicrohttpd -lpthread -lstdc++ -lm
BPF_CFLAGS := -target bpf -mcpu=v3 -g -O2 -D__TARGET_ARCH_$(ARCH) -Ivmlinux -Ibpf -Wall -Werror

USER_SRCS := $(wildcard user/*.c user/*/*.c)
USER_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(USER_SRCS))
BPF_SRCS := $(wildcard bpf/*.bpf.c)
SKELS := $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRCS)) $(BUILD)/heaptrace_uprobes.skel.h
# Named, so that make keeps them (intermediates of the skeletons otherwise):
# check reads their call chains (tests/check/stack.sh).
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(BUILD)/%.bpf.o,$(BPF_SRCS)) $(BUILD)/heaptrace_uprobes.bpf.o

# t_dlopen and its plugin are built without frame pointers only, t_inline
# optimised (below).
TEST_SRCS := $(filter-out tests/targets/t_dlopen.c tests/targets/t_inline.c tests/targets/lib%.c,$(wildcard tests/targets/*.c))
TEST_BINS := $(patsubst tests/targets/%.c,$(BUILD)/tests/%,$(TEST_SRCS))
# Test targets keep frame pointers and no inlining so that the function that
# called the allocator is the innermost frame of every stack.
TEST_CFLAGS := -O0 -g -fno-omit-frame-pointer -fno-inline -pthread -Wall -Wextra

.PHONY: all clean install deb deps demo test test-noinject test-kernels check golden bench bench-redis bench-gcc bench-python bench-postgres bench-postgres-fork bench-postgres-cgroup test-targets fuzz check-asan
# heaptrace(8) and the bash completion come from the binary's own option
# tables (heaptrace --dump-options, dist/), so that they list what it parses.
MAN_PAGE := $(BUILD)/heaptrace.8
BASH_COMPLETION := $(BUILD)/heaptrace.bash-completion
all: $(BUILD)/heaptrace $(MAN_PAGE) $(BASH_COMPLETION)

$(MAN_PAGE): $(BUILD)/heaptrace dist/man.sh dist/heaptrace.8.in README.md
	sh dist/man.sh $(BUILD)/heaptrace README.md dist/heaptrace.8.in >$@.tmp && mv $@.tmp $@

$(BASH_COMPLETION): $(BUILD)/heaptrace dist/bash-completion.sh
	sh dist/bash-completion.sh $(BUILD)/heaptrace >$@.tmp && mv $@.tmp $@

$(BUILD)/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) | $(BUILD)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $* > $@

# heaptrace.bpf.c again, with its checked-once functions inlined (config.bpf.h's
# HT_CHECKED_ONCE): the uprobe programs' object (user/tracer/uprobe_obj.c).  Its
# skeleton is named as the main one's, so that the tracer holds an instance of
# either alike.  Their struct heaptrace must have the same members (checked
# here), in the same order: the main one's is put in (clang may order the maps
# otherwise; a skeleton binds them by name).  The globals' places are checked
# at load (tracer.c: same_globals).
$(BUILD)/heaptrace_uprobes.bpf.o: bpf/heaptrace.bpf.c $(wildcard bpf/*.h) | $(BUILD)
	$(CLANG) $(BPF_CFLAGS) -DHT_UPROBE_OBJECT -c $< -o $@

$(BUILD)/heaptrace_uprobes.skel.h: $(BUILD)/heaptrace_uprobes.bpf.o $(BUILD)/heaptrace.skel.h
	$(BPFTOOL) gen skeleton $< name heaptrace > $@.tmp
	sed -n '/^struct heaptrace {/,/^};/p' $@.tmp | sort > $@.mine
	sed -n '/^struct heaptrace {/,/^};/p' $(BUILD)/heaptrace.skel.h | sort > $@.main
	cmp -s $@.mine $@.main || { echo "$@: its struct heaptrace has other members than the main object's" >&2; exit 1; }
	awk 'FNR == NR { if (/^struct heaptrace {/) f = 1; if (f) main = main $$0 "\n"; if (/^};/) f = 0; next } \
	     /^struct heaptrace {/ { printf "%s", main; skip = 1 } skip { if (/^};/) skip = 0; next } { print }' \
	     $(BUILD)/heaptrace.skel.h $@.tmp > $@.mine && mv $@.mine $@.tmp
	rm -f $@.main
	mv $@.tmp $@

# The in-process fast path's stub (stub/): freestanding, position independent,
# no red zone (it calls its record sites from inline assembly) and no SSE,
# linked into a flat blob whose entry points sit at the offsets of stub.h,
# then embedded in heaptrace as a C array.  Structs zeroed by stores, not
# rep stos, whose start-up costs more than zeroing a 64-byte event.
STUB_CFLAGS := -O2 -g -ffreestanding -fno-builtin -nostdlib -fPIC -fvisibility=hidden -fno-stack-protector \
	-fno-asynchronous-unwind-tables -mno-red-zone -mgeneral-regs-only -fcf-protection=none -mstringop-strategy=unrolled_loop \
	-Wall -Wextra -Werror -Ibpf -Istub

$(BUILD)/stub/%.o: stub/%.c stub/stub.h stub/unwind.h stub/ring.h stub/python.h bpf/heaptrace.h bpf/heaptrace_ring.h bpf/sample.h
	@mkdir -p $(dir $@)
	$(CC) $(STUB_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/stub/%.o: stub/%.S
	@mkdir -p $(dir $@)
	$(CC) $(STUB_CFLAGS) -c $< -o $@

STUB_OBJS := $(BUILD)/stub/entry.o $(BUILD)/stub/sites.o $(BUILD)/stub/decide.o $(BUILD)/stub/unwind.o $(BUILD)/stub/ring.o $(BUILD)/stub/python.o
# entry.o, then sites.o: the entry points, then the record sites, at the offsets stub.h fixes.
# Where the config and data lie from the code: stub.h's offsets, the one place they are set.
STUB_OFF = $(shell awk '$$1 ~ /^.define$$/ && $$2 == "$(1)" { print $$3 }' stub/stub.h)
$(BUILD)/stub/stub.bin: $(STUB_OBJS) stub/stub.lds stub/stub.h
	$(LD) -T stub/stub.lds --defsym=stub_cfg=$(call STUB_OFF,STUB_CFG_OFF) \
		--defsym=stub_data=$(call STUB_OFF,STUB_DATA_OFF) -o $(BUILD)/stub/stub.elf $(STUB_OBJS)
	@if readelf -r $(BUILD)/stub/stub.elf | grep -q 'R_X86'; then echo "stub: relocations left"; exit 1; fi
	objcopy -O binary -j .text $(BUILD)/stub/stub.elf $@

$(BUILD)/stub_blob.h: $(BUILD)/stub/stub.bin
	{ echo '/* Generated from stub/ by the Makefile. */'; echo 'static const unsigned char stub_blob[] = {'; \
	  od -An -v -tx1 $< | sed 's/ *\([0-9a-f][0-9a-f]\)/0x\1,/g'; echo '};'; } > $@

# -f html's page: the template with its style and script inlined, embedded
# like the stub (the writer puts the profile's data in place of @DATA@).
REPORT_SRCS := $(wildcard user/output/report/*)

$(BUILD)/report_html.h: $(REPORT_SRCS) | $(BUILD)
	sed -e '/@STYLE@/{r user/output/report/report.css' -e 'd}' -e '/@SCRIPT@/{r user/output/report/report.js' -e 'd}' \
		user/output/report/report.html > $(BUILD)/report.html
	{ echo '/* Generated from user/output/report/ by the Makefile. */'; echo 'static const unsigned char report_html[] = {'; \
	  od -An -v -tx1 $(BUILD)/report.html | sed 's/ *\([0-9a-f][0-9a-f]\)/0x\1,/g'; echo '};'; } > $@

$(BUILD)/user/output/html.o: $(BUILD)/report_html.h

$(BUILD)/user/%.o: user/%.c $(SKELS) $(BUILD)/stub_blob.h $(wildcard user/*/*.h) stub/stub.h bpf/heaptrace.h bpf/heaptrace_ring.h bpf/sample.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(HT_CFLAGS) -MMD -MP -c $< -o $@

# What each object included, as the compiler saw it: a header listed by
# hand above can be missed, and a stale object after a merge is a wrong
# binary (a stub whose layout the injector no longer shares).
-include $(USER_OBJS:.o=.d) $(BUILD)/stub/decide.d $(BUILD)/stub/unwind.d $(BUILD)/stub/ring.d $(BUILD)/stub/python.d

$(BUILD)/heaptrace: $(USER_OBJS)
	$(CC) $(CFLAGS) $(HT_CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD):
	mkdir -p $(BUILD)

# The ring's consumer against a producer of its own (tests/ring/, scenario ring): heaptrace's objects but main.
$(BUILD)/tests/ring_drain: tests/ring/ring_drain.c $(filter-out $(BUILD)/user/main.o,$(USER_OBJS))
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(HT_CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/tests/%: tests/targets/%.c tests/targets/sync.h
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) $< -o $@

# t_kidstub reads a stub's data: where it lies is stub/stub.h's.
$(BUILD)/tests/t_kidstub: TEST_CFLAGS += -DSTUB_DATA_OFF=$(shell sed -n 's/^\#define STUB_DATA_OFF //p' stub/stub.h)
$(BUILD)/tests/t_kidstub: stub/stub.h

# t_wrapfree's code in a shared library, whose mapping lies near libc's (one
# stub reaches both: the wrappers' frees batched; scenario custom, wrapring),
# run by t_wrapso.
$(BUILD)/tests/libt_wrapfree.so: tests/targets/t_wrapfree.c
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -fPIC -shared -DWRAP_SO $< -o $@

$(BUILD)/tests/t_wrapso: tests/targets/t_wrapso.c $(BUILD)/tests/libt_wrapfree.so
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) $< -o $@ -L$(BUILD)/tests -lt_wrapfree -Wl,-rpath,'$$ORIGIN'

# Targets for --unwind (tests/run.sh, scenario unwind): the same sources
# built the way distributions build code, -O2 without frame pointers, so
# that only a CFI (DWARF) unwinder gets their stacks right.  Chosen: the
# targets whose per-function numbers the core scenarios check exactly.
# -O2 keeps every test function a frame of its own (they are NOINLINE and
# store their block to a volatile), except that t_entrypoints' realloc(NULL,
# 333) becomes malloc(333): the same numbers, at the same function.
NOFP_CFLAGS := -O2 -g -fomit-frame-pointer -pthread -Wall -Wextra
NOFP_NAMES := t_entrypoints t_deep t_threads t_sighandler t_stubwalk t_samesp
# t_threads' thr_* are "return malloc(n);", which -O2 turns into a sibling
# call (jmp malloc): the function would leave the stack before malloc runs,
# in gdb's backtrace too, and its numbers go to worker.
NOFP_EXTRA_t_threads := -fno-optimize-sibling-calls
NOFP_BINS := $(patsubst %,$(BUILD)/tests/nofp/%,$(NOFP_NAMES)) $(BUILD)/tests/nofp/t_shop

$(BUILD)/tests/nofp/%: tests/targets/%.c tests/targets/sync.h
	@mkdir -p $(dir $@)
	$(CC) $(NOFP_CFLAGS) $(NOFP_EXTRA_$*) $< -o $@

# scenario dlopen: t_dlopen dlopen()s libt_plugin.so (and libt_plugin_b.so,
# its variant), all built like the targets above; the plugin's functions
# call on without tail calls, so each is a frame of its own (in gdb's
# backtrace too).
DLOPEN_BINS := $(BUILD)/tests/nofp/t_dlopen $(BUILD)/tests/nofp/libt_plugin.so $(BUILD)/tests/nofp/libt_plugin_b.so \
	$(BUILD)/tests/nofp/libt_cfi_a.so $(BUILD)/tests/nofp/libt_cfi_b.so
NOFP_BINS += $(DLOPEN_BINS)

$(BUILD)/tests/nofp/t_dlopen: tests/targets/t_dlopen.c tests/targets/sync.h
	@mkdir -p $(dir $@)
	$(CC) $(NOFP_CFLAGS) $< -o $@ -ldl

$(BUILD)/tests/nofp/libt_plugin.so: tests/targets/libt_plugin.c
	@mkdir -p $(dir $@)
	$(CC) $(NOFP_CFLAGS) -fno-optimize-sibling-calls -fPIC -shared $< -o $@

$(BUILD)/tests/nofp/libt_plugin_b.so: tests/targets/libt_plugin.c
	@mkdir -p $(dir $@)
	$(CC) $(NOFP_CFLAGS) -fno-optimize-sibling-calls -fPIC -shared -DPLUGIN_B $< -o $@

# The same code at the same offsets with other CFI (assembly): the stub's pc cache across a dlopen.
$(BUILD)/tests/nofp/libt_cfi_%.so: tests/targets/libt_cfi.S
	@mkdir -p $(dir $@)
	$(CC) -fPIC -shared $(if $(filter b,$*),-DVARIANT_B) $< -o $@

# C++ through Debian's libstdc++ (no frame pointers in operator new), built
# without frame pointers (nofp/) and with them: a frame-pointer walk loses
# the frame above operator new even in the second.
SHOP_CXXFLAGS := -O2 -g -Wall -Wextra

$(BUILD)/tests/nofp/t_shop: tests/targets/t_shop.cc
	@mkdir -p $(dir $@)
	$(CXX) $(SHOP_CXXFLAGS) -fomit-frame-pointer $< -o $@

$(BUILD)/tests/t_shop: tests/targets/t_shop.cc
	@mkdir -p $(dir $@)
	$(CXX) $(SHOP_CXXFLAGS) -fno-omit-frame-pointer $< -o $@

# --preset jemalloc: jemalloc's own API, from Debian's libjemalloc2 (no
# -dev package: the library by its path), which is then the program's
# malloc too.
JEMALLOC_SO := /usr/lib/x86_64-linux-gnu/libjemalloc.so.2

$(BUILD)/tests/t_jemalloc: tests/targets/t_jemalloc.c
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) $< -o $@ $(JEMALLOC_SO)

# scenario cgroup: a process that cannot be traced (static, no symbols: no malloc to probe).
$(BUILD)/tests/t_service_static: tests/targets/t_service.c tests/targets/sync.h
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -static -s $< -o $@

# scenario inline: inline frames need the optimiser (-O2 -g, as distributions
# build code); always_inline makes them whatever the compiler's judgement.
$(BUILD)/tests/t_inline: tests/targets/t_inline.c tests/targets/t_inline.h
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -Wall -Wextra $< -o $@

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/unit/%,$(UNIT_SRCS))

# Unit tests link the one module they test.
$(BUILD)/unit/test_symbolize: tests/unit/test_symbolize.c tests/unit/check.h user/symbolize/symbolize.c user/symbolize/symbolize.h \
		user/symbolize/pyframes.c user/symbolize/pyframes.h user/util/time.c user/util/time.h bpf/heaptrace.h
	@mkdir -p $(dir $@)
	$(CC) -O0 -g -fno-omit-frame-pointer -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -Iuser -Ibpf -I. \
		tests/unit/test_symbolize.c user/symbolize/symbolize.c user/symbolize/pyframes.c user/util/time.c -o $@ \
		-ldw -lelf -ldl -lstdc++ -lpthread

# unwind_table reads ELF files through elfobj.  Its fixtures are shared
# objects with known CFI (tests/unit/unwind_fixture.c), outside build/unit/
# where every executable is run as a test.
FIXTURES := $(BUILD)/fixtures
UNWIND_FIXTURES := $(patsubst %,$(FIXTURES)/unwind_fixture_%.so,o2 o0 dbg dbgz nocfi)
FIXTURE_CFLAGS := -fPIC -shared -nostdlib -Wall -Wextra -Werror
FIXTURE_CFLAGS_o2 := -O2 -fomit-frame-pointer
FIXTURE_CFLAGS_o0 := -O0 -fno-omit-frame-pointer
FIXTURE_CFLAGS_dbg := -O2 -g -fno-asynchronous-unwind-tables -Wl,--build-id=none
FIXTURE_CFLAGS_dbgz := $(FIXTURE_CFLAGS_dbg) -gz
FIXTURE_CFLAGS_nocfi := -O2 -DFIXTURE_NO_CFI -fno-asynchronous-unwind-tables -fno-unwind-tables

$(FIXTURES)/unwind_fixture_%.so: tests/unit/unwind_fixture.c
	@mkdir -p $(dir $@)
	$(CC) $(FIXTURE_CFLAGS) $(FIXTURE_CFLAGS_$*) $< -o $@

$(BUILD)/unit/test_unwind_table: tests/unit/test_unwind_table.c tests/unit/readelf_cfi.c tests/unit/readelf_cfi.h \
		tests/unit/check.h user/unwind/table.c user/unwind/table.h user/unwind/rows.h \
		user/unwind/cache.c user/unwind/cache.h user/util/elfobj.c user/util/elfobj.h user/util/log.c user/util/log.h user/util/cache.c user/util/cache.h \
		user/util/io.c user/util/io.h \
		bpf/heaptrace.h $(UNWIND_FIXTURES)
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -Iuser -Ibpf \
		tests/unit/test_unwind_table.c tests/unit/readelf_cfi.c user/unwind/table.c user/unwind/cache.c user/util/elfobj.c user/util/log.c user/util/cache.c user/util/io.c \
		-o $@ -ldw -lelf -lz -ldl

$(BUILD)/unit/test_symspec: tests/unit/test_symspec.c tests/unit/check.h user/probe/malloc_family.c user/probe/symspec.c \
		user/probe/symspec.h user/probe/presets.c user/probe/presets.h user/util/log.c bpf/heaptrace.h
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -Iuser -Ibpf \
		tests/unit/test_symspec.c user/probe/malloc_family.c user/probe/symspec.c user/probe/presets.c \
		user/util/log.c -o $@

$(BUILD)/unit/test_rss: tests/unit/test_rss.c tests/unit/check.h user/util/rss.c user/util/rss.h user/util/procfs.c \
		user/util/procfs.h user/util/time.c user/util/time.h
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -Iuser \
		tests/unit/test_rss.c user/util/rss.c user/util/procfs.c user/util/time.c -o $@ -lpthread

$(BUILD)/unit/test_sample: tests/unit/test_sample.c tests/unit/check.h bpf/sample.h stub/stub.h
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -std=gnu11 -Wall -Wextra -Werror -Ibpf -Istub $< -o $@ -lm

# Fuzzing: libFuzzer targets for the --sym parser and the profile readers of
# `heaptrace diff`.  `make fuzz` runs each for FUZZ_SECONDS and keeps what
# crashes in tests/fuzz/regressions/; the replays (ASan+UBSan, no libFuzzer)
# run the seeds and regressions in `make test`.
FUZZ_SECONDS ?= 60
FUZZ_NAMES := symspec profile
FUZZ_SRCS_symspec := user/probe/symspec.c
FUZZ_SRCS_profile := user/profile/model.c user/profile/read_text.c user/profile/read_proto.c user/profile/pycode.c user/symbolize/pyframes.c user/util/log.c user/util/procfs.c
FUZZ_FLAGS := -g -O1 -std=gnu11 -D_GNU_SOURCE -Iuser -Ibpf -I. -fno-omit-frame-pointer

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(wildcard user/*/*.c user/*/*.h)
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_FLAGS) -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all $< $(FUZZ_SRCS_$*) -o $@ -lz -lpthread -lm

$(BUILD)/unit/replay_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c $(wildcard user/*/*.c user/*/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(FUZZ_FLAGS) -fsanitize=address,undefined -fno-sanitize-recover=all \
		-DREPLAY_CORPUS='"tests/fuzz/corpus/$*"' -DREPLAY_REGRESSIONS='"tests/fuzz/regressions/$*"' \
		tests/fuzz/replay.c $< $(FUZZ_SRCS_$*) -o $@ -lz -lpthread -lm

fuzz: deps
	$(MAKE) $(patsubst %,$(BUILD)/fuzz/fuzz_%,$(FUZZ_NAMES))
	@for t in $(FUZZ_NAMES); do \
		mkdir -p $(BUILD)/fuzz/corpus-$$t tests/fuzz/regressions/$$t; \
		echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
		$(BUILD)/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -close_fd_mask=2 -max_len=65536 \
			-artifact_prefix=tests/fuzz/regressions/$$t/ $(BUILD)/fuzz/corpus-$$t tests/fuzz/corpus/$$t \
			|| { echo "fuzz: $$t crashed; the input is in tests/fuzz/regressions/$$t/"; exit 1; }; \
	done

# bench/churn too: scenario inject_symkill runs its --pool loop (a --sym allocator that runs for as long as asked).
test-targets: $(TEST_BINS) $(BUILD)/tests/t_service_static $(NOFP_BINS) $(BUILD)/tests/t_shop $(BUILD)/tests/t_inline $(UNIT_BINS) $(patsubst %,$(BUILD)/unit/replay_%,$(FUZZ_NAMES)) \
		$(BUILD)/bench/churn $(BUILD)/tests/ring_drain

# check: what needs no root, no BPF, no network and no package beyond the
# build's (tests/check/run.sh): unit tests, fuzz replays, golden files,
# options, specs, bad profiles, the include graph, the BPF programs' stack
# depth (scripts/bpf_stack.py).  golden: rewrite the golden files' expected
# outputs after a change of output that is meant.
CHECK_BINS := $(BUILD)/heaptrace $(MAN_PAGE) $(BASH_COMPLETION) $(UNIT_BINS) $(patsubst %,$(BUILD)/unit/replay_%,$(FUZZ_NAMES)) $(BUILD)/check/pbdump \
	$(BPF_OBJS)

# -f proto's golden files as text: profile.proto's fields by name.
$(BUILD)/check/pbdump: tests/check/pbdump.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -std=gnu11 -Wall -Wextra -Werror $< -o $@

# The BPF objects again with clang's frame size of each function
# (-fstack-size-section: a section libbpf is not handed), against which
# check holds the depths scripts/bpf_stack.py reads from the instructions.
STACK_OBJS := $(patsubst $(BUILD)/%.bpf.o,$(BUILD)/check/%.stack.o,$(BPF_OBJS))
CHECK_BINS += $(STACK_OBJS)

$(BUILD)/check/%.stack.o: bpf/%.bpf.c $(wildcard bpf/*.h)
	@mkdir -p $(dir $@)
	$(CLANG) $(BPF_CFLAGS) -fstack-size-section -c $< -o $@

$(BUILD)/check/heaptrace_uprobes.stack.o: bpf/heaptrace.bpf.c $(wildcard bpf/*.h)
	@mkdir -p $(dir $@)
	$(CLANG) $(BPF_CFLAGS) -DHT_UPROBE_OBJECT -fstack-size-section -c $< -o $@

check: $(CHECK_BINS)
	bash tests/check/run.sh

golden: $(BUILD)/heaptrace $(BUILD)/check/pbdump
	bash tests/check/golden.sh --update

$(BUILD)/demo: tests/demo/demo.c | $(BUILD)
	$(CC) -O1 -g -fno-omit-frame-pointer $< -o $@

install: $(BUILD)/heaptrace $(MAN_PAGE) $(BASH_COMPLETION)
	install -D -m 0755 $(BUILD)/heaptrace $(DESTDIR)$(PREFIX)/bin/heaptrace
	install -D -m 0644 $(MAN_PAGE) $(DESTDIR)$(PREFIX)/share/man/man8/heaptrace.8
	install -D -m 0644 $(BASH_COMPLETION) $(DESTDIR)$(PREFIX)/share/bash-completion/completions/heaptrace

# deb: build/heaptrace_VERSION_ARCH.deb (dist/deb.sh, docs/install.md), from a
# build of its own with all of Debian's hardening flags (dpkg-buildflags).
DEB_BUILD := build-deb
DEB_FLAGS := DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get
deb:
	$(MAKE) BUILD=$(DEB_BUILD) CFLAGS="$$($(DEB_FLAGS) CFLAGS) $$($(DEB_FLAGS) CPPFLAGS)" \
		LDFLAGS="$$($(DEB_FLAGS) LDFLAGS)" all
	rm -rf $(DEB_BUILD)/root
	$(MAKE) BUILD=$(DEB_BUILD) DESTDIR=$(CURDIR)/$(DEB_BUILD)/root PREFIX=/usr install
	sh dist/deb.sh $(DEB_BUILD)/root $(BUILD)

deps:
	@sh scripts/deps.sh

demo: deps
	$(MAKE) all $(BUILD)/demo
	sh scripts/demo.sh

test: deps
	$(MAKE) all test-targets
	bash tests/run.sh $(T)

# The areas whose checks are exact counts, again with the fast path off
# (--no-inject: uprobes only): both paths must give the same numbers.
NOINJECT_AREAS := core custom sampling unwinding formats fork faults temporary batch
test-noinject: deps
	$(MAKE) all test-targets
	bash tests/run.sh --no-inject $(or $(T),$(NOINJECT_AREAS))

# The exact areas again inside Debian's own kernels, 6.1 and 6.12, under QEMU
# (scripts/kernels/, docs/kernels.md): fetched with apt-get download, never
# installed.  KERNELS, KERNEL_AREAS, KERNEL_NOINJECT_AREAS and KERNEL_TIMEOUT
# (seconds per guest) choose.
test-kernels: deps
	@sh scripts/deps.sh qemu-system-x86 busybox-static kmod xz-utils
	$(MAKE) all test-targets
	bash scripts/kernels/test.sh

# bench: heaptrace's per-allocation overhead against trap floors and peers
# (bench/run.sh).  churn keeps frame pointers and -O2, like a typical build.
BENCH := $(BUILD)/bench

$(BENCH)/churn: bench/churn.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -fno-omit-frame-pointer -pthread -Wall -Wextra -Werror $< -o $@

$(BENCH)/resets: bench/resets.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -fno-omit-frame-pointer -Wall -Wextra -Werror $< -o $@

$(BENCH)/floor.bpf.o: bench/floor.bpf.c
	@mkdir -p $(dir $@)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BENCH)/floor.skel.h: $(BENCH)/floor.bpf.o
	$(BPFTOOL) gen skeleton $< name floor > $@

$(BENCH)/lookup.bpf.o: bench/lookup.bpf.c
	@mkdir -p $(dir $@)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BENCH)/lookup.skel.h: $(BENCH)/lookup.bpf.o
	$(BPFTOOL) gen skeleton $< name lookup > $@

$(BENCH)/lookup: bench/lookup.c $(BENCH)/lookup.skel.h
	$(CC) $(CFLAGS) $(HT_CFLAGS) -I$(BENCH) bench/lookup.c -o $@ -lbpf -lelf -lz

$(BENCH)/floor: bench/floor.c user/tracer/uprobe_multi.c user/tracer/uprobe_multi.h $(BENCH)/floor.skel.h
	$(CC) $(CFLAGS) $(HT_CFLAGS) -I$(BENCH) bench/floor.c user/tracer/uprobe_multi.c -o $@ -lbpf -lelf -lz

bench: deps
	$(MAKE) all $(BENCH)/churn $(BENCH)/resets $(BENCH)/floor $(BENCH)/lookup $(BUILD)/tests/nofp/t_shop
	bash bench/run.sh

# A real server: redis-server (jemalloc) under heaptrace -p, driven by
# redis-benchmark on 127.0.0.1 (bench/redis.sh installs both).
bench-redis: deps
	$(MAKE) all
	bash bench/redis.sh

# A compiler under --follow-fork: gcc -O2 -c, cc1 exec'd by the driver,
# against cc1 traced directly (bench/gcc.sh; GCC_FUNCS, GCC_RUNS).
bench-gcc: deps
	$(MAKE) all
	bash bench/gcc.sh

# A Python program under --preset python against tracemalloc, exact and
# sampled (bench/python.sh; PY_ITEMS, PY_RUNS, PY_BIN).
bench-python: deps
	$(MAKE) all
	bash bench/python.sh

# PostgreSQL: one backend under heaptrace -p (malloc, then palloc specs),
# driven by pgbench -c 1 on 127.0.0.1 (bench/postgres.sh installs postgresql).
bench-postgres: deps
	$(MAKE) all
	bash bench/postgres.sh

# PostgreSQL's postmaster under --follow-fork --merge (a backend per pgbench
# connection, each followed), sampled and exact, with and without the fast path.
bench-postgres-fork: deps
	$(MAKE) all
	bash bench/postgres-fork.sh

# A running PostgreSQL server's cgroup (postmaster and helpers moved into a
# cgroup of its own) under --cgroup --sample-rate 512K --merge.
bench-postgres-cgroup: deps
	$(MAKE) all
	bash bench/postgres-cgroup.sh

# The whole test suite against a heaptrace built with ASan and UBSan (all but
# the valgrind scenario, which cannot run an ASan binary).
ASAN_BUILD := build-asan
check-asan: deps
	$(MAKE) all test-targets
	$(MAKE) BUILD=$(ASAN_BUILD) CFLAGS="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all" \
		LDFLAGS="-fsanitize=address,undefined" $(ASAN_BUILD)/heaptrace
	HEAPTRACE=$(CURDIR)/$(ASAN_BUILD)/heaptrace HEAPTRACE_PRELOAD_BIN=$(CURDIR)/$(BUILD)/heaptrace \
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
		UBSAN_OPTIONS=print_stacktrace=1 \
		bash tests/run.sh --skip valgrind $(T)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(DEB_BUILD)
