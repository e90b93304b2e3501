# SPDX-License-Identifier: GPL-2.0
#
# BPF programs (included by the top-level Makefile).
#
# vmlinux.h is generated from the target kernel's BTF: $(KDIR)/vmlinux (the
# BTF-only vmlinux Debian's linux-headers package ships) when present, else
# the running kernel's /sys/kernel/btf/vmlinux. It is never committed.
#
# Every bpf/<stem>.bpf.c becomes build/bpf/<stem>.bpf.o and a libbpf skeleton
# build/include/<stem>.skel.h; a loader bpf/<stem>.c (if present) becomes
# build/bin/<stem>, linked with libbpf.

VMLINUX_BTF ?= $(firstword $(wildcard $(KDIR)/vmlinux /sys/kernel/btf/vmlinux))
VMLINUX_H   := $(BUILD)/include/vmlinux.h
BPF_ARCH    := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
BPF_CFLAGS  := -g -O2 -Wall -Wno-missing-declarations -target bpf \
	       -D__TARGET_ARCH_$(BPF_ARCH) -I$(BUILD)/include -I$(TOP)/bpf -I$(TOP)/userspace/include
LIBBPF_LIBS := $(shell pkg-config --libs libbpf 2>/dev/null || echo -lbpf -lelf -lz)

BPF_SRC     := $(wildcard $(TOP)/bpf/*.bpf.c)
BPF_OBJ     := $(patsubst $(TOP)/bpf/%.bpf.c,$(BUILD)/bpf/%.bpf.o,$(BPF_SRC))
BPF_SKEL    := $(patsubst $(TOP)/bpf/%.bpf.c,$(BUILD)/include/%.skel.h,$(BPF_SRC))
BPF_LOADERS := $(patsubst $(TOP)/bpf/%.c,$(BUILD)/bin/%,$(filter-out %.bpf.c,$(wildcard $(TOP)/bpf/*.c)))

ALL += $(VMLINUX_H) $(BPF_OBJ) $(BPF_SKEL) $(BPF_LOADERS)

$(VMLINUX_H):
	$(Q)test -n "$(VMLINUX_BTF)" || { echo "make: no kernel BTF found (looked for" \
	  "$(KDIR)/vmlinux and /sys/kernel/btf/vmlinux); set KDIR or VMLINUX_BTF" >&2; exit 1; }
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c >$@.tmp && mv $@.tmp $@

$(BUILD)/bpf/%.bpf.o: $(TOP)/bpf/%.bpf.c $(VMLINUX_H) $(wildcard $(TOP)/bpf/*.h $(TOP)/userspace/include/wsched/*.h)
	$(call msg,CLANG-BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/include/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< >$@.tmp && mv $@.tmp $@

$(BUILD)/bin/%: $(TOP)/bpf/%.c $(BUILD)/include/%.skel.h $(wildcard $(TOP)/bpf/*.h $(TOP)/userspace/include/wsched/*.h)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -I$(BUILD)/include -I$(TOP)/bpf -I$(TOP)/userspace/include -o $@ $< $(LDFLAGS) $(LIBBPF_LIBS)
