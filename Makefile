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
#   userspace/userspace.mk, bpf/bpf.mk, kmod/kmod.mk, man/man.mk,
#   tests/tests.mk
# and appends to ALL (what `make` builds: what `make install` installs, and
# nothing that needs a test-only package such as the kselftest headers,
# Relacy or valgrind), CHECK_BUILD (the tests and benchmark helpers that
# `make check-build` adds, and `make check` builds), NATIVE_TESTS (test
# programs that need no kernel support), GUEST_TESTS (tests that need root
# on a sched_ext kernel: run in the lab guest) and PARALLEL_TESTS (the same,
# needing CPUs that run at once).

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
EXEC_TARGETS := all check-build test-native stress-native bench-lib report run-build deb
GUEST_TARGETS := test-guest test-parallel stress-guest bench-sched bench-coop
.PHONY: $(EXEC_TARGETS) $(GUEST_TARGETS) check run help clean lab-setup lab-shell stress bench \
	install uninstall test-packages

help:
	@echo 'wsched: a work-stealing system for Linux (README.md)'
	@echo
	@echo 'targets:'
	@echo '  all          build what make install installs, under build/ (the default)'
	@echo '  check-build  build everything: all, the tests and the benchmark helpers'
	@echo '  check        build, run the unit tests natively and the integration'
	@echo '               tests in the lab guest; last line: N passed, N failed, N skipped'
	@echo '  run          build, boot the lab, and show a lock-heavy and a fork/join program'
	@echo '               under EEVDF and scx_wsched, with its counters (scripts/demo)'
	@echo '  test-native  run only the unit tests (no kernel support needed)'
	@echo '  test-guest   run only the integration tests (root on a sched_ext kernel)'
	@echo '  test-parallel  the integration tests that need CPUs running at once'
	@echo '               (with LAB=1 a guest with multi-threaded TCG, 2 vCPUs)'
	@echo '  stress       long stress runs (stress-native, stress-guest; not in check)'
	@echo '  bench        benchmarks printing JSON lines (bench-lib, bench-sched, bench-coop)'
	@echo '  report       tables and plots of Documentation/results/ from their saved JSON'
	@echo '  lab-setup    create or update the cached lab rootfs (scripts/lab setup)'
	@echo '  lab-shell    an interactive shell in the lab rootfs (chroot)'
	@echo '  install      install what all builds (PREFIX, DESTDIR; README.md "Install")'
	@echo '  uninstall    remove what install installed (the same variables)'
	@echo '  deb          the Debian packages, in build/deb/ (Documentation/packaging.md)'
	@echo '  test-packages  install, use and purge them in a lab guest booting systemd'
	@echo '  clean        remove build/'
	@echo
	@echo 'variables: LAB=auto|0|1 (build in the lab rootfs), V=1 (verbose),'
	@echo '  KERNEL=default|sid|debian-6.12|ubuntu-6.14|ubuntu-6.17|ubuntu-7.0 (the kernel the lab guest boots),'
	@echo '  LAB_CPUS (vCPUs of the guest, default 4, for run the host CPUs, 2 to 4;'
	@echo '  STRESS_CPUS for stress-guest, 16),'
	@echo '  KDIR (kernel build dir, default /lib/modules/$$(uname -r)/build),'
	@echo '  CC, CLANG, BPFTOOL, KSFT_INC (kselftest harness headers),'
	@echo '  PREFIX (default /usr/local), DESTDIR, BINDIR, SBINDIR, LIBDIR, INCLUDEDIR,'
	@echo '  MANDIR, PKGCONFIGDIR, UDEVRULESDIR, ... (install; README.md "Install")'

check:
	$(Q)$(TOP)/scripts/check

run: run-build
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
# then repeat from run to run. test-parallel's guest has 2 vCPUs under
# multi-threaded TCG, one host thread each, so that they run at once.
$(GUEST_TARGETS):
	$(Q)$(LABSH) setup --no-update --quiet $(if $(filter bench-coop,$@),--bench) \
		$(if $(KERNEL),--kernel $(KERNEL))
	$(Q)$(LABSH) exec -- $(MAKE) LAB=0 check-build
	$(Q)$(if $(filter bench-sched,$@),WSCHED_LAB_TCG=$${WSCHED_LAB_TCG:-icount}) \
		$(if $(filter test-parallel,$@),WSCHED_LAB_TCG=multi) \
		$(LABSH) run --cpus $(if $(filter stress-guest,$@),$(STRESS_CPUS),$(if \
		$(filter test-parallel,$@),2,$(LAB_CPUS))) \
		--timeout $(LAB_TIMEOUT) -- $(MAKE) LAB=0 $@

# The Debian packages installed, used and purged in a guest booting
# systemd over a throwaway overlay of the rootfs (tests/packages/pkg_guest_test.sh).
test-packages:
	$(Q)$(LABSH) setup --no-update --quiet
	$(Q)$(LABSH) exec -- $(MAKE) LAB=0 deb
	$(Q)$(LABSH) run --systemd --cpus 2 --timeout $(LAB_TIMEOUT) -- \
		$(TOP)/tests/run-tests --suite packages $(TOP)/tests/packages/pkg_guest_test.sh

# What the lab builds links against the lab rootfs's libraries (libbpf,
# glibc), not this host's: installing it here would give broken programs.
install uninstall:
	@echo "make $@: this host has no sched_ext, so make builds in the lab rootfs" \
	  "(LAB=1); install from a native build: make LAB=0 && make LAB=0 $@" >&2; exit 1

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
RUN_BUILD :=
NATIVE_TESTS :=
GUEST_TESTS :=
PARALLEL_TESTS :=

# Installation directories: the GNU names, in upper case. DESTDIR is
# prepended to each at install time only (staged installs); the others are
# the final paths, compiled into wsched-run and written into libwsched.pc,
# so they must be absolute. udev reads /usr/local/lib/udev/rules.d as well
# as /usr/lib/udev/rules.d, hence PREFIX/lib, not LIBDIR (which may be a
# multiarch directory); so do systemd's unit and sysusers.d directories.
PREFIX         ?= /usr/local
EXEC_PREFIX    ?= $(PREFIX)
BINDIR         ?= $(EXEC_PREFIX)/bin
SBINDIR        ?= $(EXEC_PREFIX)/sbin
LIBDIR         ?= $(EXEC_PREFIX)/lib
PKGLIBDIR      ?= $(LIBDIR)/wsched
INCLUDEDIR     ?= $(PREFIX)/include
DATAROOTDIR    ?= $(PREFIX)/share
MANDIR         ?= $(DATAROOTDIR)/man
PKGCONFIGDIR   ?= $(LIBDIR)/pkgconfig
UDEVRULESDIR   ?= $(PREFIX)/lib/udev/rules.d
SYSCONFDIR     ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR    ?= $(PREFIX)/lib/sysusers.d
INSTALL        ?= install
INSTALL_DIR_VARS := PREFIX EXEC_PREFIX BINDIR SBINDIR LIBDIR PKGLIBDIR INCLUDEDIR DATAROOTDIR \
		    MANDIR PKGCONFIGDIR UDEVRULESDIR SYSCONFDIR SYSTEMDUNITDIR SYSUSERSDIR
# One absolute path: one word, a leading /, no ':' (the separator of
# INSTALL_FILES below) and no quote (the recipes quote the paths).
install_path_ok = $(and $(filter 1,$(words $(1))),$(filter /%,$(1)),\
  $(if $(findstring :,$(1))$(findstring ',$(1))$(findstring ",$(1)),,1))
$(foreach v,$(INSTALL_DIR_VARS),$(if $(call install_path_ok,$($(v))),,\
  $(error $(v) must be an absolute path without spaces, quotes or ':', not '$($(v))')))
$(if $(DESTDIR),$(if $(call install_path_ok,$(DESTDIR)),,\
  $(error DESTDIR must be empty or an absolute path without spaces, quotes or ':', not '$(DESTDIR)')))

# What `make install` installs, appended to by the fragments:
#   INSTALL_FILES     MODE:SOURCE:DESTINATION (an installation path)
#   INSTALL_CONFIG    the same, for configuration an administrator edits:
#                     installed only where the destination does not exist
#   INSTALL_LINKS     TARGET:DESTINATION (a symbolic link)
#   INSTALL_OWN_DIRS  directories only wsched's files use, removed by
#                     uninstall when it leaves them empty
# `make uninstall` removes exactly these, so it must be given the same
# variables (PREFIX, LIBDIR, ...) as the install was.
INSTALL_FILES :=
INSTALL_CONFIG :=
# Shell commands run after a real install (no DESTDIR), appended by the
# fragments; each ends with ';'.
INSTALL_HOOKS :=
INSTALL_LINKS :=
INSTALL_OWN_DIRS :=

# Files whose contents depend on the installation directories (the
# installed wsched-run, libwsched.pc) are built into INSTALL_STAGE and
# depend on INSTALL_PATHS, which changes only when those directories do.
INSTALL_STAGE := $(BUILD)/install
INSTALL_PATHS := $(INSTALL_STAGE)/paths

# $(call script_test_wrapper,SCRIPT ARGS...): the recipe of a test program
# that is a two-line wrapper running a TAP script with this build's paths,
# so that run-tests runs it like any other test program.
define script_test_wrapper
$(call msg,GEN,$@)
$(Q)mkdir -p $(@D)
$(Q)printf '#!/bin/sh\nexec %s\n' '$(1)' >$@
$(Q)chmod +x $@
endef

include $(wildcard $(TOP)/userspace/userspace.mk $(TOP)/bpf/bpf.mk \
		   $(TOP)/kmod/kmod.mk $(TOP)/man/man.mk $(TOP)/systemd/systemd.mk \
		   $(TOP)/debian/deb.mk $(TOP)/tests/tests.mk)

all: $(ALL)

# make run: what scripts/demo runs.
run-build: $(ALL) $(RUN_BUILD)

.PHONY: FORCE
FORCE:

$(INSTALL_PATHS): FORCE
	$(Q)mkdir -p $(@D)
	$(Q)printf '%s\n' $(foreach v,$(INSTALL_DIR_VARS),'$(v)=$($(v))') >$@.tmp
	$(Q)if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

# The dynamic linker's cache is refreshed after a real install (no
# DESTDIR) as root, so that programs find libwsched.so.0 in LIBDIR at once.
install_ldconfig = $(if $(DESTDIR),,if [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then \
	ldconfig; fi)

install: all
	$(Q)set -e; for e in $(INSTALL_FILES); do \
		IFS=: read -r mode src dst <<<"$$e"; \
		$(if $(Q),printf '  %-9s %s\n' INSTALL "$(DESTDIR)$$dst";) \
		$(INSTALL) -D -m "$$mode" "$$src" "$(DESTDIR)$$dst"; \
	done; \
	for e in $(INSTALL_CONFIG); do \
		IFS=: read -r mode src dst <<<"$$e"; \
		if [ -e "$(DESTDIR)$$dst" ]; then \
			$(if $(Q),printf '  %-9s %s (kept)\n' CONFIG "$(DESTDIR)$$dst",:); \
		else \
			$(if $(Q),printf '  %-9s %s\n' INSTALL "$(DESTDIR)$$dst",:); \
			$(INSTALL) -D -m "$$mode" "$$src" "$(DESTDIR)$$dst"; \
		fi; \
	done; \
	for e in $(INSTALL_LINKS); do \
		IFS=: read -r target dst <<<"$$e"; \
		$(if $(Q),printf '  %-9s %s -> %s\n' LN "$(DESTDIR)$$dst" "$$target";) \
		mkdir -p "$(DESTDIR)$${dst%/*}"; \
		ln -sfn "$$target" "$(DESTDIR)$$dst"; \
	done
	$(Q)$(install_ldconfig)
	$(Q)$(INSTALL_HOOKS)

uninstall:
	$(Q)set -e; for e in $(INSTALL_FILES) $(INSTALL_CONFIG) $(INSTALL_LINKS); do \
		dst=$${e##*:}; \
		if [ -e "$(DESTDIR)$$dst" ] || [ -L "$(DESTDIR)$$dst" ]; then \
			$(if $(Q),printf '  %-9s %s\n' RM "$(DESTDIR)$$dst";) \
			rm -f "$(DESTDIR)$$dst"; \
		fi; \
	done; \
	for d in $(INSTALL_OWN_DIRS); do \
		if [ -d "$(DESTDIR)$$d" ]; then rmdir --ignore-fail-on-non-empty "$(DESTDIR)$$d"; fi; \
	done
	$(Q)$(install_ldconfig)

check-build: $(ALL) $(CHECK_BUILD)

test-packages:
	@echo "make test-packages: installs packages system-wide, so it runs only in a lab" \
	  "guest (LAB=1): make LAB=1 test-packages" >&2; exit 1

test-native: $(NATIVE_TESTS)
	$(Q)$(TOP)/tests/run-tests --suite native $(NATIVE_TESTS)

# scripts/check runs the integration tests in two guests, one host CPU
# each: GUEST_PART=1 (suite "guest") is all but GUEST_PART2, and
# GUEST_PART=2 (suite "guest2") is GUEST_PART2, which its guest starts once
# the lab's own tests are done, beside part 1 when a host CPU is idle for
# it (the two parts then end at about the same time), else after it.
# Without GUEST_PART, test-guest runs them all as one suite.
# GUEST_PART=2 builds nothing: its guest starts while part 1's make may
# be bringing the build up to date (build/install/paths is rewritten by
# every make), and two makes in one tree race on the same temporary
# files; scripts/check built everything before either part starts.
GUEST_PART2 := $(BUILD)/tests/guest/scx_wsched_policy
ifneq ($(filter-out 1 2,$(GUEST_PART)),)
$(error GUEST_PART must be 1 or 2, not '$(GUEST_PART)')
endif
GUEST_RUN = $(if $(filter 2,$(GUEST_PART)),$(GUEST_PART2),$(if $(GUEST_PART),$(filter-out \
	$(GUEST_PART2),$(GUEST_TESTS)),$(GUEST_TESTS)))

test-guest: $(if $(filter 2,$(GUEST_PART)),,$(GUEST_TESTS))
	$(Q)$(TOP)/tests/run-tests --suite guest$(filter 2,$(GUEST_PART)) $(GUEST_RUN)

test-parallel: $(PARALLEL_TESTS)
	$(Q)$(TOP)/tests/run-tests --suite parallel $(PARALLEL_TESTS)

# Documentation/results/: tables and plots from the JSON lines saved in
# Documentation/results/data/ (scripts/report; gnuplot-nox).
report:
	$(Q)$(TOP)/scripts/report

# Parts add their own stress-native/stress-guest/bench-lib/bench-sched/
# bench-coop prerequisites; with none, these targets only say so.
stress-native stress-guest bench-lib bench-sched bench-coop:
	@echo "make $@: done"

$(BUILD)/:
	$(Q)mkdir -p $@
endif
