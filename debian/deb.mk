# SPDX-License-Identifier: GPL-2.0
#
# `make deb`: the Debian packages (included by the top-level Makefile).
# dpkg-buildpackage writes its .deb files into the parent of the source
# tree, so it builds a copy of the tree (without build/ and .git) in
# build/deb/wsched-VERSION: the packages land in build/deb/, and the tree
# stays clean. They are rebuilt when a file of the tree changed.
# `make check-build` builds them where debhelper is installed (the lab
# rootfs has it): tests/native/deb_test.sh checks them, tests/packages/pkg_guest_test.sh
# installs them in a guest booting systemd. Documentation/packaging.md
# describes the packages.
DEB_DIR    := $(BUILD)/deb
DEB_SRC    := $(DEB_DIR)/wsched-$(WS_VERSION)
DEB_STAMP  := $(DEB_DIR)/.built
DEB_INPUTS := $(shell find $(TOP) \( -path $(TOP)/build -o -path $(TOP)/.git \) -prune -o -type f -print)

.PHONY: deb
deb: $(DEB_STAMP)

# .started marks the build's start: the test finds any file of the tree
# outside build/ that is newer.
$(DEB_STAMP): $(DEB_INPUTS)
	$(call msg,DEB,$(DEB_DIR))
	$(Q)command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null || { \
	  echo "make deb: dpkg-buildpackage or dh not found; install dpkg-dev and" \
	       "debhelper (the lab rootfs has them)" >&2; exit 1; }
	$(Q)rm -rf $(DEB_DIR) && mkdir -p $(DEB_SRC) && touch $(DEB_DIR)/.started
	$(Q)tar -C $(TOP) --exclude=./build --exclude=./.git -cf - . | tar -C $(DEB_SRC) -xf -
	$(Q)cd $(DEB_SRC) && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES \
	  dpkg-buildpackage -us -uc -b -jauto >$(DEB_DIR)/build.log 2>&1 || \
	  { tail -n 30 $(DEB_DIR)/build.log >&2; echo "make deb: dpkg-buildpackage failed" \
	    "(log: $(DEB_DIR)/build.log)" >&2; exit 1; }
	$(Q)touch $@

ifneq ($(shell command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null && echo y),)
CHECK_BUILD += $(DEB_STAMP)
endif

DEB_TEST := $(BUILD)/tests/native/deb_test
$(DEB_TEST): $(TOP)/tests/native/deb_test.sh $(TOP)/debian/deb.mk
	$(call script_test_wrapper,$< $(TOP))
CHECK_BUILD  += $(DEB_TEST)
NATIVE_TESTS += $(DEB_TEST)
