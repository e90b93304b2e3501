# SPDX-License-Identifier: GPL-2.0
#
# Tests under tests/ (included by the top-level Makefile):
#   tests/native/     tests that need no kernel support, run natively (in
#                     the lab rootfs) by `make test-native`: kselftest-harness
#                     programs (*.c) and TAP scripts (install_test.sh here,
#                     man_test.sh from man/man.mk);
#   tests/guest/*.c   kselftest-harness programs that need root on a sched_ext
#                     kernel, run in the lab guest by `make test-guest`;
#   tests/parallel/*.c the same, for what needs CPUs that really run at
#                     once: `make test-parallel` (with LAB=1 a guest with
#                     multi-threaded TCG and 2 vCPUs);
#   tests/host/*.sh   TAP scripts run on the host by scripts/check (only
#                     when the lab is used): scripts/lab's own tests, and
#                     the commit messages' form (the rootfs has no git).
# Other parts add their own tests to NATIVE_TESTS/GUEST_TESTS the same way.

KSFT_CFLAGS = $(BASE_CFLAGS) -I$(KSFT_INC) -Wno-sign-compare

TESTS_NATIVE_SRC := $(wildcard $(TOP)/tests/native/*.c)
TESTS_GUEST_SRC  := $(wildcard $(TOP)/tests/guest/*.c)
TESTS_PAR_SRC    := $(wildcard $(TOP)/tests/parallel/*.c)
TESTS_NATIVE_BIN := $(patsubst $(TOP)/tests/native/%.c,$(BUILD)/tests/native/%,$(TESTS_NATIVE_SRC))
TESTS_GUEST_BIN  := $(patsubst $(TOP)/tests/guest/%.c,$(BUILD)/tests/guest/%,$(TESTS_GUEST_SRC))
TESTS_PAR_BIN    := $(patsubst $(TOP)/tests/parallel/%.c,$(BUILD)/tests/parallel/%,$(TESTS_PAR_SRC))

CHECK_BUILD    += $(TESTS_NATIVE_BIN) $(TESTS_GUEST_BIN) $(TESTS_PAR_BIN)
NATIVE_TESTS   += $(TESTS_NATIVE_BIN)
GUEST_TESTS    += $(TESTS_GUEST_BIN)
PARALLEL_TESTS += $(TESTS_PAR_BIN)

$(BUILD)/tests/native/%: $(TOP)/tests/native/%.c $(wildcard $(TOP)/tests/native/*.h) | ksft-check
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(KSFT_CFLAGS) -o $@ $< $(LDFLAGS)

$(BUILD)/tests/guest/%: $(TOP)/tests/guest/%.c $(wildcard $(TOP)/tests/guest/*.h) | ksft-check
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(KSFT_CFLAGS) -o $@ $< $(LDFLAGS)

# They share the guest tests' helpers.
$(BUILD)/tests/parallel/%: $(TOP)/tests/parallel/%.c $(wildcard $(TOP)/tests/guest/*.h) | ksft-check
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(KSFT_CFLAGS) -I$(TOP)/tests/guest -o $@ $< $(LDFLAGS)

.PHONY: ksft-check
ksft-check:
	$(Q)test -f $(KSFT_INC)/kselftest_harness.h || { \
	  echo "make: kselftest_harness.h not found in KSFT_INC=$(KSFT_INC);" \
	       "set KSFT_INC to tools/testing/selftests of your kernel source" >&2; exit 1; }

# The hint test uses libwsched (registration, critical sections) and reads
# the scheduler's maps with libbpf.
HINT_TEST := $(BUILD)/tests/guest/scx_wsched_hint
$(HINT_TEST): $(WS_NORM_LIB) $(TOP)/bpf/scx_wsched.h $(wildcard $(TOP)/userspace/include/wsched/*.h)
$(HINT_TEST): KSFT_CFLAGS += -I$(TOP)/bpf -I$(TOP)/userspace/include -pthread
$(HINT_TEST): LDFLAGS += $(WS_NORM_LIB) -pthread $(LIBBPF_LIBS)

# The unit test of the policy arithmetic compiles the scheduler's
# fragments over tests/native/bpf_shim (a fake scx/common.bpf.h), not the
# kernel's headers.
ARITH_TEST := $(BUILD)/tests/native/scx_wsched_arith_test
$(ARITH_TEST): $(wildcard $(TOP)/bpf/*.bpf.h $(TOP)/tests/native/bpf_shim/scx/*.h) $(TOP)/bpf/scx_wsched.h
$(ARITH_TEST): $(TOP)/userspace/include/wsched/hint.h
$(ARITH_TEST): KSFT_CFLAGS += -I$(TOP)/tests/native/bpf_shim -I$(TOP)/bpf -I$(TOP)/userspace/include

# The unit test of the loader's per-cgroup figures links their object.
CGSTAT_TEST := $(BUILD)/tests/native/scx_wsched_cgstat_test
CGSTAT_OBJ  := $(BUILD)/bpf/scx_wsched_cgstat.o
$(CGSTAT_TEST): $(CGSTAT_OBJ) $(TOP)/bpf/scx_wsched.h $(TOP)/bpf/scx_wsched_cgstat.h
$(CGSTAT_TEST): KSFT_CFLAGS += -I$(TOP)/bpf
$(CGSTAT_TEST): LDFLAGS += $(CGSTAT_OBJ) $(LIBBPF_LIBS)

# The policy test takes the loader's defaults from the scheduler's header.
POLICY_TEST := $(BUILD)/tests/guest/scx_wsched_policy
$(POLICY_TEST): $(TOP)/bpf/scx_wsched.h
$(POLICY_TEST): KSFT_CFLAGS += -I$(TOP)/bpf

# The cgroup test sizes its checks by the scheduler's header, and its
# liars register for hints with libwsched.
CGROUP_TEST := $(BUILD)/tests/parallel/scx_wsched_cgroup
$(CGROUP_TEST): $(WS_NORM_LIB) $(TOP)/bpf/scx_wsched.h $(wildcard $(TOP)/userspace/include/wsched/*.h)
$(CGROUP_TEST): KSFT_CFLAGS += -I$(TOP)/bpf -I$(TOP)/userspace/include -pthread
$(CGROUP_TEST): LDFLAGS += $(WS_NORM_LIB) -pthread

# make install and uninstall (tests/native/install_test.sh), through a wrapper that
# names this tree; it runs make install itself, on what make all built.
INSTALL_TEST := $(BUILD)/tests/native/install_test
$(INSTALL_TEST): $(TOP)/tests/native/install_test.sh $(TOP)/tests/tests.mk | $(ALL)
	$(call script_test_wrapper,$< $(TOP))
CHECK_BUILD  += $(INSTALL_TEST)
NATIVE_TESTS += $(INSTALL_TEST)

# make run's demo (tests/guest/demo_test.sh), in the guest suite: it loads
# scx_wsched itself.
DEMO_TEST := $(BUILD)/tests/guest/demo_test
$(DEMO_TEST): $(TOP)/tests/guest/demo_test.sh | run-build
	$(call script_test_wrapper,$< $(TOP))
CHECK_BUILD += $(DEMO_TEST)
GUEST_TESTS += $(DEMO_TEST)
