# SPDX-License-Identifier: GPL-2.0
#
# wsched top-level Makefile. `make help` lists the targets.
#
# Everything is built out of tree under build/. On a host whose kernel has
# sched_ext (or inside the lab), the build is native; elsewhere (LAB=auto
# finds no /sys/kernel/sched_ext) every target runs inside the lab rootfs
# through scripts/lab, so the compiler, headers and libbpf match the lab
# kernel. Force either with LAB=0 or LAB=1.
#
# Each part adds its own rules in a fragment included below:
#   userspace/userspace.mk, bpf/bpf.mk, kmod/kmod.mk, tests/tests.mk
# and appends to ALL (what `make` builds: what `make install` installs, and
# nothing that needs a test-only package such as the kselftest headers,
# Relacy or valgrind), CHECK_BUILD (the tests and benchmark helpers that
# `make check-build` adds, and `make check` builds), NATIVE_TESTS (test
# programs that need no kernel support) and GUEST_TESTS (tests that need root
# on a sched_ext kernel: run in the lab guest).

TOP   := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
BUILD := $(TOP)/build
LABSH := $(TOP)/scripts/lab
SHELL := /bin/bash

.DEFAULT_GOAL := all
.DELETE_ON_ERROR:
.SUFFIXES:

V ?= 0
ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-9s %s\n' '$(1)' '$(patsubst $(TOP)/%,%,$(2))';
MAKEFLAGS += --no-print-directory
endif

LAB ?= auto
ifeq ($(LAB),auto)
ifneq ($(WSCHED_IN_LAB),)
override LAB := 0
else ifneq ($(wildcard /sys/kernel/sched_ext/state),)
override LAB := 0
else
override LAB := 1
endif
endif
export LAB
# KERNEL=sid, KERNEL=debian-6.12 or KERNEL=ubuntu-6.14 (6.17, 7.0): boot
# Debian sid's kernel, a 6.12 built from Debian's linux-source-6.12, or an
# Ubuntu kernel in the guest instead of the default (trixie-backports) one;
# `scripts/lab setup --kernel NAME` sets it up (the guest targets call it).
ifdef KERNEL
export WSCHED_LAB_KERNEL := $(KERNEL)
endif
LAB_CPUS ?= 4
# stress-guest boots a bigger guest: the stall runs want 16 vCPUs.
STRESS_CPUS ?= 16
LAB_TIMEOUT ?= 3000

# Targets that run in the lab rootfs (chroot) and those that need the lab
# guest (a running sched_ext kernel), when LAB=1.
EXEC_TARGETS := all check-build test-native stress-native bench-lib
GUEST_TARGETS := test-guest stress-guest bench-sched bench-coop
.PHONY: $(EXEC_TARGETS) $(GUEST_TARGETS) check run help clean lab-setup lab-shell stress bench

help:
	@echo 'wsched: a work-stealing system for Linux (README.md)'
	@echo
	@echo 'targets:'
	@echo '  all          build what make install installs, under build/ (the default)'
	@echo '  check-build  build everything: all, the tests and the benchmark helpers'
	@echo '  check        build, run the unit tests natively and the integration'
	@echo '               tests in the lab guest; last line: N passed, N failed, N skipped'
	@echo '  run          boot the lab and show its state with a demo workload'
	@echo '  test-native  run only the unit tests (no kernel support needed)'
	@echo '  test-guest   run only the integration tests (root on a sched_ext kernel)'
	@echo '  stress       long stress runs (stress-native, stress-guest; not in check)'
	@echo '  bench        benchmarks printing JSON lines (bench-lib, bench-sched, bench-coop)'
	@echo '  lab-setup    create or update the cached lab rootfs (scripts/lab setup)'
	@echo '  lab-shell    an interactive shell in the lab rootfs (chroot)'
	@echo '  clean        remove build/'
	@echo
	@echo 'variables: LAB=auto|0|1 (build in the lab rootfs), V=1 (verbose),'
	@echo '  KERNEL=default|sid|debian-6.12|ubuntu-6.14|ubuntu-6.17|ubuntu-7.0 (the kernel the lab guest boots),'
	@echo '  LAB_CPUS (vCPUs of the guest, default 4; STRESS_CPUS for stress-guest, 16),'
	@echo '  KDIR (kernel build dir, default /lib/modules/$$(uname -r)/build),'
	@echo '  CC, CLANG, BPFTOOL, KSFT_INC (kselftest harness headers)'

check:
	$(Q)$(TOP)/scripts/check

run:
	$(Q)$(TOP)/scripts/demo

lab-setup:
	$(Q)$(LABSH) setup

lab-shell:
	$(Q)$(LABSH) exec -- bash -i

clean:
	$(Q)rm -rf $(BUILD)

stress: stress-native stress-guest
bench: bench-lib bench-sched bench-coop

ifeq ($(LAB),1)
# ---------------------------------------------------------------- via the lab
$(EXEC_TARGETS):
	$(Q)$(LABSH) setup --no-update --quiet
	$(Q)$(LABSH) exec -- $(MAKE) LAB=0 $@

# Built in the rootfs, run in the guest (make there finds the build current).
# bench-sched's guest counts time in instructions (WSCHED_LAB_TCG=icount,
# Documentation/lab.md) unless WSCHED_LAB_TCG says otherwise: its ratios
# then repeat from run to run.
$(GUEST_TARGETS):
	$(Q)$(LABSH) setup --no-update --quiet $(if $(KERNEL),--kernel $(KERNEL))
	$(Q)$(LABSH) exec -- $(MAKE) LAB=0 check-build
	$(Q)$(if $(filter bench-sched,$@),WSCHED_LAB_TCG=$${WSCHED_LAB_TCG:-icount}) \
		$(LABSH) run --cpus $(if $(filter stress-guest,$@),$(STRESS_CPUS),$(LAB_CPUS)) \
		--timeout $(LAB_TIMEOUT) -- $(MAKE) LAB=0 $@

else
# ---------------------------------------------------------------- native
CC       ?= cc
CLANG    ?= clang
BPFTOOL  ?= bpftool
KVER     ?= $(shell uname -r)
KDIR     ?= /lib/modules/$(KVER)/build
KSFT_INC ?= /usr/local/include/kselftest
CFLAGS   ?= -O2 -g
WARNINGS := -Wall -Wextra -Wshadow -Wno-unused-parameter -Wstrict-prototypes
BASE_CFLAGS := -std=gnu11 -D_GNU_SOURCE $(WARNINGS) $(CFLAGS)

ALL :=
CHECK_BUILD :=
NATIVE_TESTS :=
GUEST_TESTS :=

include $(wildcard $(TOP)/userspace/userspace.mk $(TOP)/bpf/bpf.mk \
		   $(TOP)/kmod/kmod.mk $(TOP)/tests/tests.mk)

all: $(ALL)

check-build: $(ALL) $(CHECK_BUILD)

test-native: $(NATIVE_TESTS)
	$(Q)$(TOP)/tests/run-tests --suite native $(NATIVE_TESTS)

test-guest: $(GUEST_TESTS)
	$(Q)$(TOP)/tests/run-tests --suite guest $(GUEST_TESTS)

# Parts add their own stress-native/stress-guest/bench-lib/bench-sched/
# bench-coop prerequisites; with none, these targets only say so.
stress-native stress-guest bench-lib bench-sched bench-coop:
	@echo "make $@: done"

$(BUILD)/:
	$(Q)mkdir -p $@
endif
