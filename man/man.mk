# SPDX-License-Identifier: GPL-2.0
#
# The man pages (included by the top-level Makefile): man/NAME.SECTION is
# installed as MANDIR/manSECTION/NAME.SECTION, uncompressed. Their test,
# tests/native/man_test.sh, compares each program's page with its --help, and
# libwsched(3) with the public headers.

MAN_PAGES := $(sort $(wildcard $(TOP)/man/*.[0-9]))
INSTALL_FILES += $(foreach m,$(MAN_PAGES),\
		   644:$(m):$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m)))

MAN_TEST := $(BUILD)/tests/native/man_test
$(MAN_TEST): $(TOP)/tests/native/man_test.sh $(TOP)/man/man.mk | $(BPF_LOADERS) $(WSBENCH) $(WSCHED_RUN)
	$(call script_test_wrapper,$< $(TOP))
CHECK_BUILD  += $(MAN_TEST)
NATIVE_TESTS += $(MAN_TEST)
