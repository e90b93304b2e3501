# SPDX-License-Identifier: GPL-2.0
#
# wsched.ko (included by the top-level Makefile).
#
# The module is built out of tree with kbuild's MO= (Linux 6.13+): sources
# stay in kmod/, every generated file goes to build/kmod/. KDIR must be the
# build directory of the kernel the module is for, compiled with that
# kernel's gcc (the lab rootfs has both for the lab kernel).
#
#   build/kmod/wsched.ko        the module
#
# The guest tests tests/guest/kmod_*.c also need the UAPI header and the
# module; `make stress-guest` runs their long variants, `make bench-sched`
# the handoff benchmark (kmod/bench/run-handoff.sh, which runs
# `build/bin/wsbench handoff`, userspace/bench/handoff.c).

KMOD_DIR    := $(BUILD)/kmod
KMOD_KO     := $(KMOD_DIR)/wsched.ko
KMOD_DEPS   := $(TOP)/kmod/wsched.c $(TOP)/kmod/Kbuild $(TOP)/userspace/include/wsched/wsched_ioctl.h
KMOD_TESTS  := $(patsubst $(TOP)/tests/guest/%.c,$(BUILD)/tests/guest/%,$(wildcard $(TOP)/tests/guest/kmod_*.c))

# `make` builds the module when KDIR holds a kernel build directory and
# otherwise says it skipped it (a user of the library and the scheduler
# needs no kernel headers); `make check-build` always builds it. KMOD=0
# leaves it out of `make`: a distribution package (debian/rules) ships the
# module's source for DKMS instead.
KMOD ?= auto
ifeq ($(KMOD),0)
else ifneq ($(wildcard $(KDIR)/Makefile),)
ALL += $(KMOD_KO)
else
ALL += kmod-skip
endif
CHECK_BUILD += $(KMOD_KO)

# make install installs the udev rule for /dev/wsched; the module itself is
# installed with DKMS or make -C kmod install (kmod/README.md).
INSTALL_FILES += 644:$(TOP)/kmod/70-wsched.rules:$(UDEVRULESDIR)/70-wsched.rules

.PHONY: kmod-skip
kmod-skip:
	@echo "make: no kernel build directory at KDIR=$(KDIR): wsched.ko not built" \
	  "(install linux-headers-$(KVER) or set KDIR to build it)"

$(KMOD_KO): $(KMOD_DEPS) | kmod-check
	$(call msg,KMOD,$@)
	$(Q)mkdir -p $(KMOD_DIR)
	$(Q)$(MAKE) -C $(KDIR) M=$(TOP)/kmod MO=$(KMOD_DIR) $(if $(filter 1,$(V)),V=1,-s) modules
	$(Q)test -s $@ || { echo "make: kbuild left no $@ (a kernel older than 6.13 ignores" \
	  "MO=; build with make -C kmod KDIR=... instead)" >&2; exit 1; }
	$(Q)touch $@

.PHONY: kmod-check
kmod-check:
	$(Q)test -f $(KDIR)/Makefile || { \
	  echo "make: no kernel build directory at KDIR=$(KDIR); install the kernel's" \
	       "headers (Debian: linux-headers-$(KVER)) or set KDIR" >&2; exit 1; }

# The kmod tests: the UAPI header, their shared helpers, and the module
# present (built, not a reason to rebuild them) when they run.
$(KMOD_TESTS): KSFT_CFLAGS += -I$(TOP)/userspace/include -pthread
$(KMOD_TESTS): $(TOP)/tests/guest/kmod_util.h $(TOP)/userspace/include/wsched/wsched_ioctl.h | $(KMOD_KO)
# kmod_pool_test drives libwsched's directed yield through the module.
$(BUILD)/tests/guest/kmod_pool_test: LDFLAGS += $(WS_NORM_LIB)
$(BUILD)/tests/guest/kmod_pool_test: $(WS_NORM_LIB) $(WS_HDRS)

.PHONY: kmod-stress kmod-bench
stress-guest: kmod-stress
bench-sched: kmod-bench

# Long runs: 2,000,000 random ioctls (about 20x the test), 10,000,000 more
# with scx_wsched loaded and slots scribbled on (about 30x), every attack on
# /dev/wsched and the hint socket at once beside another user's CPU hogs
# for 60 s (alone, then attacked), 500 load/unload cycles with ioctls
# racing the unload, and the directed-yield ring beside its victim for 40 s
# (past the watchdog's 30 s).
kmod-stress: $(KMOD_TESTS) $(KMOD_KO)
	$(Q)WSCHED_KMOD_FUZZ_CALLS=2000000 WSCHED_KMOD_FUZZ_SCX_CALLS=10000000 \
	  WSCHED_ATTACK_SECONDS=60 WSCHED_KMOD_LOAD_CYCLES=500 WSCHED_YIELD_RING_SECONDS=40 \
	  $(TOP)/tests/run-tests --suite kmod-stress \
	  $(filter %/kmod_fuzz_test %/kmod_load_test %/kmod_sched_test,$(KMOD_TESTS))

kmod-bench: $(WSBENCH) $(KMOD_KO)
	$(Q)$(TOP)/kmod/bench/run-handoff.sh

# The lab pacer (kmod/bench/pacer/wsched_pacer.c) for bench-sched's
# PACER_US: per-CPU timers that give every scheduler the same emulator
# turns in the instruction-counted guest. Built like the module, into
# build/bench/pacer/; never installed.
PACER_KO := $(BUILD)/bench/pacer/wsched_pacer.ko
CHECK_BUILD += $(PACER_KO)
bench-scx-wsched: $(PACER_KO)

$(PACER_KO): $(TOP)/kmod/bench/pacer/wsched_pacer.c $(TOP)/kmod/bench/pacer/Kbuild | kmod-check
	$(call msg,KMOD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(MAKE) -C $(KDIR) M=$(TOP)/kmod/bench/pacer MO=$(@D) $(if $(filter 1,$(V)),V=1,-s) modules
	$(Q)test -s $@ || { echo "make: kbuild left no $@" >&2; exit 1; }
	$(Q)touch $@
