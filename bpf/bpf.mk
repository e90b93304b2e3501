# SPDX-License-Identifier: GPL-2.0
#
# BPF programs (included by the top-level Makefile).
#
# vmlinux.h is generated from the target kernel's BTF: $(KDIR)/vmlinux (the
# BTF-only vmlinux Debian's linux-headers package ships) when present, else
# the running kernel's /sys/kernel/btf/vmlinux. It is never committed.
#
# Every bpf/<stem>.bpf.c becomes build/bpf/<stem>.bpf.o and a libbpf skeleton
# build/include/<stem>.skel.h (skeleton struct `<stem>`); a loader bpf/<stem>.c (if present) becomes
# build/bin/<stem>, linked with libbpf and with the objects LOADER_OBJS lists
# for it (the hint server, scx_wsched_hintsrv.c, and the per-cgroup figures,
# scx_wsched_cgstat.c, for scx_wsched).
#
# BPF programs and loaders include the sched_ext headers of the kernel source
# (scx/common.bpf.h, scx/compat.bpf.h, scx/common.h) from $(KSRC)/tools/
# sched_ext/include at build time; they are not copied into the tree. The lab
# rootfs has them under /usr/src/linux-source-<ver> (Debian linux-source).

VMLINUX_BTF ?= $(firstword $(wildcard $(KDIR)/vmlinux /sys/kernel/btf/vmlinux))
VMLINUX_H   := $(BUILD)/include/vmlinux.h
KSRC        ?= $(patsubst %/tools/sched_ext/include,%,$(lastword $(sort $(wildcard /usr/src/linux-source-*/tools/sched_ext/include))))
SCX_INC     := $(KSRC)/tools/sched_ext/include
BPF_ARCH    := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
BPF_CFLAGS  := -g -O2 -mcpu=v3 -Wall -Wno-missing-declarations -target bpf \
	       -D__TARGET_ARCH_$(BPF_ARCH) -I$(BUILD)/include -I$(TOP)/bpf -I$(TOP)/userspace/include -I$(SCX_INC)
LIBBPF_LIBS := $(shell pkg-config --libs libbpf 2>/dev/null || echo -lbpf -lelf -lz)

BPF_SRC     := $(wildcard $(TOP)/bpf/*.bpf.c)
BPF_OBJ     := $(patsubst $(TOP)/bpf/%.bpf.c,$(BUILD)/bpf/%.bpf.o,$(BPF_SRC))
BPF_SKEL    := $(patsubst $(TOP)/bpf/%.bpf.c,$(BUILD)/include/%.skel.h,$(BPF_SRC))
BPF_LOADERS := $(patsubst $(TOP)/bpf/%.c,$(BUILD)/bin/%,$(wildcard $(BPF_SRC:.bpf.c=.c)))
# The loaders also include the library's internal llc_internal.h (the sysfs
# LLC reader, static inline) from userspace/lib/.
LOADER_CFLAGS = $(BASE_CFLAGS) -Wmissing-prototypes \
		-I$(BUILD)/include -I$(TOP)/bpf -I$(TOP)/userspace/include -I$(TOP)/userspace/lib \
		-I$(SCX_INC)
LOADER_HDRS := $(wildcard $(TOP)/bpf/*.h $(TOP)/userspace/include/wsched/*.h) \
	       $(TOP)/userspace/lib/llc_internal.h
# The other userspace files of bpf/, each linked into one loader.
LOADER_OBJS := $(BUILD)/bpf/scx_wsched_hintsrv.o $(BUILD)/bpf/scx_wsched_cgstat.o
$(BUILD)/bin/scx_wsched: $(BUILD)/bpf/scx_wsched_hintsrv.o $(BUILD)/bpf/scx_wsched_cgstat.o

ALL += $(VMLINUX_H) $(BPF_OBJ) $(BPF_SKEL) $(BPF_LOADERS)
# The loaders carry their BPF object in the skeleton: only they are installed.
INSTALL_FILES += $(foreach l,$(BPF_LOADERS),755:$(l):$(SBINDIR)/$(notdir $(l)))

$(VMLINUX_H):
	$(Q)test -n "$(VMLINUX_BTF)" || { echo "make: no kernel BTF found (looked for" \
	  "$(KDIR)/vmlinux and /sys/kernel/btf/vmlinux); set KDIR or VMLINUX_BTF" >&2; exit 1; }
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c >$@.tmp && mv $@.tmp $@

$(BUILD)/bpf/%.bpf.o: $(TOP)/bpf/%.bpf.c $(VMLINUX_H) $(wildcard $(TOP)/bpf/*.h $(TOP)/userspace/include/wsched/*.h) | scx-inc-check
	$(call msg,CLANG-BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# Every included fragment bpf/<name>.bpf.h compiles on its own: a file that
# includes only it, built with the program's flags into
# build/bpf/fragment/<name>.o (`make check-build`). So a fragment states its
# own includes and can be included in any order.
BPF_FRAGMENTS := $(patsubst $(TOP)/bpf/%.bpf.h,$(BUILD)/bpf/fragment/%.o,$(wildcard $(TOP)/bpf/*.bpf.h))
CHECK_BUILD += $(BPF_FRAGMENTS)

$(BUILD)/bpf/fragment/%.o: $(TOP)/bpf/%.bpf.h $(VMLINUX_H) $(wildcard $(TOP)/bpf/*.h $(TOP)/userspace/include/wsched/*.h) | scx-inc-check
	$(call msg,CLANG-BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)printf '#include "%s"\n' $(notdir $<) >$(@:.o=.c)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $(@:.o=.c) -o $@

$(BUILD)/include/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $* >$@.tmp && mv $@.tmp $@

$(LOADER_OBJS): $(BUILD)/bpf/%.o: $(TOP)/bpf/%.c $(LOADER_HDRS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LOADER_CFLAGS) -c -o $@ $<

$(BUILD)/bin/%: $(TOP)/bpf/%.c $(BUILD)/include/%.skel.h $(LOADER_HDRS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LOADER_CFLAGS) -o $@ $< $(filter %.o,$^) $(LDFLAGS) $(LIBBPF_LIBS)

.PHONY: scx-inc-check
scx-inc-check:
	$(Q)test -f $(SCX_INC)/scx/common.bpf.h || { \
	  echo "make: $(SCX_INC)/scx/common.bpf.h not found: set KSRC to a kernel" \
	       "source tree with tools/sched_ext (Debian linux-source-<ver>)" >&2; exit 1; }

# The kernel's example scheduler scx_simple, built from $(KSRC) for
# `make bench-sched` only (never copied into the tree).
SCX_SIMPLE_SRC := $(KSRC)/tools/sched_ext
SCX_SIMPLE     := $(BUILD)/bench/scx_simple
CHECK_BUILD += $(SCX_SIMPLE)

$(BUILD)/bench/scx_simple.bpf.o: $(SCX_SIMPLE_SRC)/scx_simple.bpf.c $(VMLINUX_H) | scx-inc-check
	$(call msg,CLANG-BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) -g -O2 -mcpu=v3 -w -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -I$(BUILD)/include -I$(SCX_INC) -c $< -o $@

$(BUILD)/bench/scx_simple.bpf.skel.h: $(BUILD)/bench/scx_simple.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name scx_simple >$@.tmp && mv $@.tmp $@

$(SCX_SIMPLE): $(SCX_SIMPLE_SRC)/scx_simple.c $(BUILD)/bench/scx_simple.bpf.skel.h
	$(call msg,CC,$@)
	$(Q)$(CC) -O2 -g -D_GNU_SOURCE -w -I$(BUILD)/bench -I$(SCX_INC) -o $@ $< $(LDFLAGS) $(LIBBPF_LIBS)

# ------------------------------------------------- stress and benchmarks
# These recipes run where `make LAB=0 <target>` runs: in the lab guest when
# the top-level Makefile is used with LAB=1 (LAB_CPUS vCPUs, default 4;
# STRESS_CPUS, default 16, for stress-guest).

# The stall-freedom run again, for 60 s, on every CPU of the machine: 16
# vCPUs when `make stress-guest` boots the lab guest (STRESS_CPUS). Then the
# hostile-hints case of scx_wsched_hint for 60 s under the same stress-ng
# load (10 s in `make check`), and its array churn for 50,000 cycles (400).
.PHONY: stress-scx-wsched
stress-guest: stress-scx-wsched
stress-scx-wsched: $(BUILD)/tests/guest/scx_wsched_stall $(BUILD)/tests/guest/scx_wsched_hint $(BPF_LOADERS)
	$(Q)if [ "$$(nproc)" -lt 16 ]; then \
	  echo "stress-scx-wsched: $$(nproc) CPUs here; the 16-vCPU run is make stress-guest through the lab (STRESS_CPUS=16)"; fi
	$(Q)WSCHED_STALL_SECS=60 $(TOP)/tests/run-tests --suite stress-sched $<
	$(Q)WSCHED_HOSTILE_SECONDS=60 $(BUILD)/tests/guest/scx_wsched_hint \
		-t random_bytes_in_every_slot_under_stress_change_nothing_fatal
	$(Q)WSCHED_CHURN_CYCLES=50000 $(BUILD)/tests/guest/scx_wsched_hint \
		-t churned_arrays_are_bounded_per_user

.PHONY: bench-scx-wsched
bench-sched: bench-scx-wsched
bench-scx-wsched: $(BPF_LOADERS) $(SCX_SIMPLE)
	$(Q)$(TOP)/bpf/scx_wsched_bench
