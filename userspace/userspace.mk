# SPDX-License-Identifier: GPL-2.0
#
# libwsched, its tests and wsbench (included by the top-level Makefile).
#
#   build/lib/libwsched.a, build/lib/libwsched.so.$(WS_VERSION)  the library,
#   build/lib/libwsched.so.0, build/lib/libwsched.so               and links
#   build/bin/wsbench                                the benchmark tool
#   build/tests/native/ws_*_test                     tests, normal build
#   build/tsan/tests/ws_*_test-tsan                  ThreadSanitizer build
#                                                    (fence-free deque)
#   build/asan/tests/ws_*_test-asan                  ASan+UBSan build
#   build/tests/valgrind/ws_*_test-valgrind          wrappers: the normal
#                                                    tests under memcheck
#   build/tests/native/ws_relacy_deque               Relacy model test
#   build/tests/native/ws_relacy_wdeque              ... of the split deque
#   build/bin/wsbench-llvm                           wsbench built with clang
#                                                    (OpenMP = LLVM libomp)
#   build/lib/libwsched-preload.so, build/bin/wsched-run  cooperation for
#                                                    unmodified programs
#   build/tests/native/preload_test                  their test
# `make` builds the library, wsbench, the preload and wsched-run; the tests
# and benchmark helpers are in CHECK_BUILD, and every test goes into
# NATIVE_TESTS. `make stress-native` adds the long stress runs (ws-stress),
# `make bench-lib` runs every wsbench benchmark (wsbench-all). See
# userspace/README.md.

WS_DIR        := $(TOP)/userspace
WS_LIB_SRC    := $(wildcard $(WS_DIR)/lib/*.c)
WS_HDRS       := $(wildcard $(WS_DIR)/include/wsched/*.h $(WS_DIR)/lib/*.h)
WS_TEST_SRC   := $(wildcard $(WS_DIR)/tests/ws_*_test.c)
WS_TEST_NAMES := $(patsubst $(WS_DIR)/tests/%.c,%,$(WS_TEST_SRC))
CXX           ?= c++
VALGRIND      ?= valgrind

WS_CFLAGS      = $(BASE_CFLAGS) -I$(WS_DIR)/include -I$(WS_DIR)/lib -pthread
# The library's own sources: every external function has a prototype in a
# header (public, or lib/*_internal.h).
WS_LIB_CFLAGS  = -Wmissing-prototypes
WS_TEST_CFLAGS = -I$(KSFT_INC) -I$(WS_DIR)/tests -Wno-sign-compare
WS_TSAN_FLAGS := -fsanitize=thread -DWS_NO_FENCES -DWT_TEST_SCALE_DEFAULT=4
WS_ASAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all \
		 -fno-omit-frame-pointer -DWT_TEST_SCALE_DEFAULT=10

# ws_variant NAME, extra flags, build subdir, test dir, test suffix
define ws_variant
WS_$(1)_OBJ   := $$(patsubst $$(WS_DIR)/lib/%.c,$$(BUILD)/$(3)/obj/%.o,$$(WS_LIB_SRC))
WS_$(1)_LIB   := $$(BUILD)/$(3)/libwsched.a
WS_$(1)_TESTS := $$(patsubst %,$(4)/%$(5),$$(WS_TEST_NAMES))

$$(BUILD)/$(3)/obj/%.o: $$(WS_DIR)/lib/%.c $$(WS_HDRS)
	$$(call msg,CC,$$@)
	$$(Q)mkdir -p $$(@D)
	$$(Q)$$(CC) $$(WS_CFLAGS) $$(WS_LIB_CFLAGS) -fPIC $(2) -c -o $$@ $$<

$$(WS_$(1)_LIB): $$(WS_$(1)_OBJ)
	$$(call msg,AR,$$@)
	$$(Q)rm -f $$@ && $$(AR) rcs $$@ $$^

$(4)/%$(5): $$(WS_DIR)/tests/%.c $$(WS_$(1)_LIB) $$(WS_DIR)/tests/test_util.h \
	      $$(WS_DIR)/tests/fake_loader.h | ksft-check
	$$(call msg,CC,$$@)
	$$(Q)mkdir -p $$(@D)
	$$(Q)$$(CC) $$(WS_CFLAGS) $$(WS_TEST_CFLAGS) $(2) -o $$@ $$< $$(WS_$(1)_LIB) $$(LDFLAGS)
endef

AR ?= ar
$(eval $(call ws_variant,NORM,,lib,$(BUILD)/tests/native,))
$(eval $(call ws_variant,TSAN,$(WS_TSAN_FLAGS) -O1,tsan/lib,$(BUILD)/tsan/tests,-tsan))
$(eval $(call ws_variant,ASAN,$(WS_ASAN_FLAGS) -O1,asan/lib,$(BUILD)/asan/tests,-asan))

# libwsched's version, MAJOR.MINOR.PATCH (the library's own, apart from
# scx_wsched's WSCHED_VERSION in bpf/scx_wsched.h). MAJOR is the SONAME's number
# (libwsched.so.MAJOR) and changes with any incompatible change of the ABI,
# which includes the struct layouts and inline functions of the public
# headers (wsched/task.h, wsched/wdeque_impl.h), not only the functions;
# MINOR changes when symbols or features are added, PATCH for anything
# else. The file is libwsched.so.MAJOR.MINOR.PATCH, libwsched.so.MAJOR
# (what programs load) and libwsched.so (what -lwsched finds) link to it.
WS_VERSION    := 0.1.0
WS_SONAME     := libwsched.so.$(firstword $(subst ., ,$(WS_VERSION)))
WS_SO_REAL    := $(BUILD)/lib/libwsched.so.$(WS_VERSION)
WS_SO_MAJOR   := $(BUILD)/lib/$(WS_SONAME)
WS_SO         := $(BUILD)/lib/libwsched.so
WS_MAP        := $(WS_DIR)/lib/libwsched.map
$(WS_SO_REAL): $(WS_NORM_OBJ) $(WS_MAP)
	$(call msg,LD,$@)
	$(Q)$(CC) -shared -pthread -Wl,-soname,$(WS_SONAME) -Wl,--version-script=$(WS_MAP) \
	  -Wl,-z,defs -o $@ $(WS_NORM_OBJ) $(LDFLAGS)
$(WS_SO_MAJOR): $(WS_SO_REAL)
	$(call msg,LN,$@)
	$(Q)ln -sfn $(notdir $<) $@
$(WS_SO): $(WS_SO_MAJOR)
	$(call msg,LN,$@)
	$(Q)ln -sfn $(notdir $<) $@

# Valgrind (memcheck, leak check) over the normal test binaries, smaller.
WS_VG_TESTS := $(patsubst %,$(BUILD)/tests/valgrind/%-valgrind,$(WS_TEST_NAMES))
$(BUILD)/tests/valgrind/%-valgrind: $(BUILD)/tests/native/% $(WS_DIR)/userspace.mk
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)printf '%s\n' '#!/bin/sh' \
	  '# generated by userspace/userspace.mk: $* under valgrind memcheck' \
	  'command -v $(VALGRIND) >/dev/null || { echo "1..0 # SKIP valgrind not installed"; exit 4; }' \
	  'export WSCHED_TEST_SCALE=$${WSCHED_TEST_SCALE:-1}' \
	  'exec $(VALGRIND) -q --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect --error-exitcode=99 --fair-sched=yes $< "$$@"' \
	  >$@.tmp && chmod +x $@.tmp && mv $@.tmp $@

# Relacy model test of the deque: the same deque_impl.h through a C++ shim.
WS_RELACY := $(BUILD)/tests/native/ws_relacy_deque
$(WS_RELACY): $(WS_DIR)/tests/relacy_deque.cpp $(WS_DIR)/tests/relacy_shim.hpp $(WS_DIR)/tests/relacy_run.hpp $(WS_DIR)/lib/deque_impl.h | ksft-check
	$(call msg,CXX,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) -std=gnu++14 -fno-sized-deallocation -O1 -g -w -I$(WS_DIR)/lib -I$(WS_DIR)/include -I$(WS_DIR)/tests \
	  -o $@ $< $(LDFLAGS)

# Relacy model test of the runtime's split deque: wsched/wdeque_impl.h, the
# header the library's spawn/sync and thieves compile, through the same shim.
WS_RELACY_WDQ := $(BUILD)/tests/native/ws_relacy_wdeque
$(WS_RELACY_WDQ): $(WS_DIR)/tests/relacy_wdeque.cpp $(WS_DIR)/tests/relacy_shim.hpp $(WS_DIR)/tests/relacy_run.hpp \
		  $(WS_DIR)/include/wsched/wdeque_impl.h | ksft-check
	$(call msg,CXX,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) -std=gnu++14 -fno-sized-deallocation -O1 -g -w -I$(WS_DIR)/lib -I$(WS_DIR)/include -I$(WS_DIR)/tests \
	  -o $@ $< $(LDFLAGS)

ALL += $(WS_NORM_LIB) $(WS_SO_REAL) $(WS_SO_MAJOR) $(WS_SO)
CHECK_BUILD += $(WS_NORM_TESTS) $(WS_TSAN_TESTS) $(WS_ASAN_TESTS) $(WS_VG_TESTS) \
	       $(WS_RELACY) $(WS_RELACY_WDQ)
NATIVE_TESTS += $(WS_NORM_TESTS) $(WS_RELACY) $(WS_RELACY_WDQ) $(WS_TSAN_TESTS) $(WS_ASAN_TESTS) \
		$(WS_VG_TESTS)

.PHONY: ws-stress
stress-native: ws-stress
ws-stress: $(WS_NORM_TESTS) $(WS_TSAN_TESTS) $(WS_RELACY) $(WS_RELACY_WDQ)
	$(Q)WSCHED_TEST_SCALE=1000 $(TOP)/tests/run-tests --suite ws-stress-deque \
	  $(BUILD)/tests/native/ws_deque_test
	$(Q)WSCHED_TEST_SCALE=300 $(TOP)/tests/run-tests --suite ws-stress-runtime \
	  $(BUILD)/tests/native/ws_runtime_test
	$(Q)WSCHED_TEST_SCALE=50 $(TOP)/tests/run-tests --suite ws-stress-tsan \
	  $(BUILD)/tsan/tests/ws_deque_test-tsan $(BUILD)/tsan/tests/ws_runtime_test-tsan
	$(Q)WSCHED_TEST_SCALE=1000 $(TOP)/tests/run-tests --suite ws-stress-relacy $(WS_RELACY) \
	  $(WS_RELACY_WDQ)

# ---------------------------------------------------------------- wsbench
WS_BENCH_DIR := $(WS_DIR)/bench
WS_HAVE_TBB  := $(shell test -f /usr/include/oneapi/tbb/task_group.h && echo 1)
WSBENCH      := $(BUILD)/bin/wsbench
WS_BENCH_OBJ := $(BUILD)/bench/wsbench.o $(BUILD)/bench/bench_c.o $(BUILD)/bench/bench_omp.o \
		$(BUILD)/bench/handoff.o $(BUILD)/bench/lockbench.o
WS_BENCH_LIBS := -fopenmp -lm
ifeq ($(WS_HAVE_TBB),1)
WS_BENCH_OBJ += $(BUILD)/bench/bench_tbb.o
WS_BENCH_LIBS += -ltbb
else
WS_BENCH_NOTBB := -DWSBENCH_NO_TBB
endif
WS_BENCH_CFLAGS = $(WS_CFLAGS) -I$(WS_BENCH_DIR)

$(BUILD)/bench/%.o: $(WS_BENCH_DIR)/%.c $(WS_BENCH_DIR)/bench.h $(WS_BENCH_DIR)/bench_kernels.h $(WS_HDRS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(WS_BENCH_CFLAGS) $(WS_BENCH_NOTBB) -c -o $@ $<

$(BUILD)/bench/bench_omp.o: $(WS_BENCH_DIR)/bench_omp.c $(WS_BENCH_DIR)/bench.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(WS_BENCH_CFLAGS) -fopenmp -Wno-unknown-pragmas -c -o $@ $<

$(BUILD)/bench/bench_tbb.o: $(WS_BENCH_DIR)/bench_tbb.cpp $(WS_BENCH_DIR)/bench.h
	$(call msg,CXX,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) -std=gnu++17 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter $(CFLAGS) \
	  -I$(WS_BENCH_DIR) -c -o $@ $<

$(WSBENCH): $(WS_BENCH_OBJ) $(WS_NORM_LIB)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) -pthread -o $@ $(WS_BENCH_OBJ) $(WS_NORM_LIB) $(WS_BENCH_LIBS) $(LDFLAGS)

ALL += $(WSBENCH)

# wsbench's command line (userspace/tests/wsbench_cli.sh), run by
# test-native through a two-line wrapper that names this build's wsbench.
WS_CLI_TEST := $(BUILD)/tests/native/wsbench_cli
$(WS_CLI_TEST): $(WS_DIR)/tests/wsbench_cli.sh $(WSBENCH)
	$(call script_test_wrapper,$< $(WSBENCH))
CHECK_BUILD += $(WS_CLI_TEST)
NATIVE_TESTS += $(WS_CLI_TEST)

# wsbench-llvm: the same driver built with clang, so that its "omp" runtime
# (reported as omp-llvm) is LLVM's libomp. Only when clang can do OpenMP.
CLANG_CC     ?= clang
WS_HAVE_LIBOMP := $(shell echo 'int main(void){return 0;}' | $(CLANG_CC) -fopenmp -x c - -o /dev/null 2>/dev/null && echo 1)
ifeq ($(WS_HAVE_LIBOMP),1)
WSBENCH_LLVM := $(BUILD)/bin/wsbench-llvm
WS_BENCH_LLVM_SRC := $(WS_BENCH_DIR)/wsbench.c $(WS_BENCH_DIR)/bench_c.c $(WS_BENCH_DIR)/bench_omp.c \
		     $(WS_BENCH_DIR)/handoff.c $(WS_BENCH_DIR)/lockbench.c
$(WSBENCH_LLVM): $(WS_BENCH_LLVM_SRC) $(WS_BENCH_DIR)/bench.h $(WS_BENCH_DIR)/bench_kernels.h $(WS_NORM_LIB)
	$(call msg,CLANG,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG_CC) -std=gnu11 -D_GNU_SOURCE $(CFLAGS) -Wno-unknown-pragmas -fopenmp \
	  -I$(WS_DIR)/include -I$(WS_BENCH_DIR) -DWSBENCH_NO_TBB -DWSBENCH_OMP_NAME='"omp-llvm"' \
	  -o $@ $(WS_BENCH_LLVM_SRC) $(WS_NORM_LIB) -pthread -lm $(LDFLAGS)
CHECK_BUILD += $(WSBENCH_LLVM)
endif

# `make bench-lib`: every benchmark on every runtime at 1 and 2 workers (and
# the machine's CPU count if larger), JSON lines into build/bench/, then a
# table. WSBENCH_REPEAT and WSBENCH_WORKERS override the defaults.
.PHONY: wsbench-all ws-bench-coop
# `make bench-coop` (in the lab guest): wsbench lock, pairs of
# work-stealing programs (multiprog), unmodified programs of ours (unmod)
# and Debian's multi-threaded programs (real, userspace/bench/real-progs.sh),
# under EEVDF and scx_wsched (userspace/bench/bench-coop; BENCH_COOP_PARTS
# picks parts).
bench-coop: ws-bench-coop
ws-bench-coop: $(WSBENCH) $(BUILD)/bin/scx_wsched $(WS_UNMOD) $(WS_PRELOAD_SO) $(WSCHED_RUN)
	$(Q)$(WS_BENCH_DIR)/bench-coop
bench-lib: wsbench-all
wsbench-all: $(WSBENCH) $(WSBENCH_LLVM) $(WS_PRELOAD_COST) $(WS_PRELOAD_SO)
	$(Q)$(WS_BENCH_DIR)/wsbench-all $(WSBENCH) $(BUILD)/bench/wsbench.jsonl

# ---------------------------------------------------------------- wsched-run
# libwsched-preload.so (preload/preload.c plus lib/hint.c: registration and
# critical sections for programs not built against libwsched) and
# wsched-run, which runs a program with it. build/bin/wsched-run finds the
# preload in ../lib/ beside itself; the wsched-run that make install installs
# (built into INSTALL_STAGE) has the installed preload's path compiled in
# instead, WSCHED_PRELOAD_INSTALLED, so that no stray ../lib/ copy is used.
WS_PRELOAD_DIR := $(WS_DIR)/preload
WS_PRELOAD_SO  := $(BUILD)/lib/libwsched-preload.so
WSCHED_RUN     := $(BUILD)/bin/wsched-run
WSCHED_RUN_INSTALLED := $(INSTALL_STAGE)/wsched-run
WSCHED_PRELOAD_INSTALLED := $(PKGLIBDIR)/libwsched-preload.so

$(WS_PRELOAD_SO): $(WS_PRELOAD_DIR)/preload.c $(WS_DIR)/lib/hint.c $(WS_HDRS)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(WS_CFLAGS) $(WS_LIB_CFLAGS) -fPIC -shared -Wl,-z,defs -o $@ \
	  $(WS_PRELOAD_DIR)/preload.c $(WS_DIR)/lib/hint.c -ldl $(LDFLAGS)

$(WSCHED_RUN): $(WS_PRELOAD_DIR)/wsched-run.c $(WS_DIR)/userspace.mk
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -o $@ $< $(LDFLAGS)

$(WSCHED_RUN_INSTALLED): $(WS_PRELOAD_DIR)/wsched-run.c $(WS_DIR)/userspace.mk $(INSTALL_PATHS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -DWSCHED_PRELOAD_INSTALLED='"$(WSCHED_PRELOAD_INSTALLED)"' \
	  -o $@ $< $(LDFLAGS)

# preload_cost: an uncontended lock/unlock pair, plain or preloaded
# (bench-lib runs it both ways).
WS_PRELOAD_COST := $(BUILD)/bench/preload_cost
$(WS_PRELOAD_COST): $(WS_DIR)/bench/preload_cost.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -pthread -o $@ $< -ldl $(LDFLAGS)

# unmod: lock-heavy and oneTBB programs without libwsched, for
# bench-coop's unmod part (under wsched-run or not).
WS_UNMOD := $(BUILD)/bench/unmod
$(WS_UNMOD): $(WS_DIR)/bench/unmod.cpp
	$(call msg,CXX,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) -std=gnu++17 -D_GNU_SOURCE -Wall -Wextra $(CFLAGS) -fopenmp -pthread \
	  $(if $(filter 1,$(WS_HAVE_TBB)),,-DUNMOD_NO_TBB) -o $@ $< \
	  $(if $(filter 1,$(WS_HAVE_TBB)),-ltbb) -ldl $(LDFLAGS)

ALL += $(WS_PRELOAD_SO) $(WSCHED_RUN) $(WSCHED_RUN_INSTALLED)
CHECK_BUILD += $(WS_PRELOAD_COST) $(WS_UNMOD)

# lockdemo: the plain pthread_spin_lock program `make run` shows
# (scripts/demo); RUN_BUILD: what make run needs besides ALL.
WS_LOCKDEMO := $(BUILD)/demo/lockdemo
$(WS_LOCKDEMO): $(WS_DIR)/demo/lockdemo.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -pthread -o $@ $< $(LDFLAGS)
CHECK_BUILD += $(WS_LOCKDEMO)
RUN_BUILD += $(WS_LOCKDEMO)

# preload_test: libwsched-preload.so and wsched-run against a fake loader.
# Built without libwsched (like the programs wsched-run is for), with
# OpenMP; preload_static is the statically linked program it runs.
WS_PRELOAD_TEST   := $(BUILD)/tests/native/preload_test
WS_PRELOAD_STATIC := $(BUILD)/tests/native/preload_static
$(WS_PRELOAD_TEST): $(WS_DIR)/tests/preload_test.c $(WS_DIR)/tests/fake_loader.h \
		    $(WS_DIR)/include/wsched/hint.h \
		    $(WS_PRELOAD_SO) $(WSCHED_RUN) $(WS_PRELOAD_STATIC) | ksft-check
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -I$(KSFT_INC) -I$(WS_DIR)/include -Wno-sign-compare -fopenmp \
	  -pthread -o $@ $< -ldl $(LDFLAGS)
$(WS_PRELOAD_STATIC): $(WS_DIR)/tests/preload_static.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -static -o $@ $<
# preload_dlopen (not linked with libgomp) opens preload_plugin.so, which is.
WS_PRELOAD_DLOPEN := $(BUILD)/tests/native/preload_dlopen
WS_PRELOAD_PLUGIN := $(BUILD)/tests/native/preload_plugin.so
$(WS_PRELOAD_DLOPEN): $(WS_DIR)/tests/preload_dlopen.c $(WS_DIR)/include/wsched/hint.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -I$(WS_DIR)/include -o $@ $< -ldl $(LDFLAGS)
$(WS_PRELOAD_PLUGIN): $(WS_DIR)/tests/preload_plugin.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -fPIC -shared -fopenmp -o $@ $< $(LDFLAGS)
$(WS_PRELOAD_TEST): $(WS_PRELOAD_DLOPEN) $(WS_PRELOAD_PLUGIN)
CHECK_BUILD += $(WS_PRELOAD_TEST) $(WS_PRELOAD_STATIC) $(WS_PRELOAD_DLOPEN) $(WS_PRELOAD_PLUGIN)
NATIVE_TESTS += $(WS_PRELOAD_TEST)

# ---------------------------------------------------------------- install
# libwsched.pc, for the installation directories. Paths under PREFIX are
# written relative to ${prefix}, so that pkg-config --define-prefix works.
WS_PC := $(INSTALL_STAGE)/libwsched.pc
ws_pc_path = $(patsubst $(PREFIX)/%,$${prefix}/%,$(1))
$(WS_PC): $(INSTALL_PATHS) $(WS_DIR)/userspace.mk
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)printf '%s\n' \
	  'prefix=$(PREFIX)' \
	  'libdir=$(call ws_pc_path,$(LIBDIR))' \
	  'includedir=$(call ws_pc_path,$(INCLUDEDIR))' \
	  '' \
	  'Name: libwsched' \
	  'Description: Work-stealing deques and a fork/join runtime that cooperate with scx_wsched' \
	  'Version: $(WS_VERSION)' \
	  'Cflags: -I$${includedir}' \
	  'Libs: -L$${libdir} -lwsched' \
	  'Libs.private: -pthread' >$@.tmp && mv $@.tmp $@
ALL += $(WS_PC)

# The public headers, all of wsched/ (task.h includes task_internal.h and
# wdeque_impl.h); the preload in PKGLIBDIR, where only wsched-run and
# LD_PRELOAD look for it, not the link editor.
INSTALL_FILES += 644:$(WS_SO_REAL):$(LIBDIR)/$(notdir $(WS_SO_REAL)) \
		 644:$(WS_NORM_LIB):$(LIBDIR)/libwsched.a \
		 644:$(WS_PC):$(PKGCONFIGDIR)/libwsched.pc \
		 $(foreach h,$(sort $(wildcard $(WS_DIR)/include/wsched/*.h)),\
		   644:$(h):$(INCLUDEDIR)/wsched/$(notdir $(h))) \
		 644:$(WS_PRELOAD_SO):$(WSCHED_PRELOAD_INSTALLED) \
		 755:$(WSCHED_RUN_INSTALLED):$(BINDIR)/wsched-run \
		 755:$(WSBENCH):$(BINDIR)/wsbench
INSTALL_LINKS += $(notdir $(WS_SO_REAL)):$(LIBDIR)/$(WS_SONAME) \
		 $(WS_SONAME):$(LIBDIR)/libwsched.so
INSTALL_OWN_DIRS += $(INCLUDEDIR)/wsched $(PKGLIBDIR)
