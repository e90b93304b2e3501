# SPDX-License-Identifier: GPL-2.0
#
# `make deb`: the Debian packages (included by the top-level Makefile).
# dpkg-buildpackage writes its .deb files into the parent of the source
# tree, so it builds a copy of the tree (without build/ and .git) in
# build/deb/wsched-VERSION: the packages land in build/deb/, and the tree
# stays clean. Documentation/packaging.md describes the packages.
DEB_DIR  := $(BUILD)/deb
DEB_SRC  := $(DEB_DIR)/wsched-$(WS_VERSION)
DEB_ARCH := $(shell dpkg --print-architecture 2>/dev/null)
DEB_PKGS := $(foreach p,wsched libwsched0 libwsched-dev,$(DEB_DIR)/$(p)_$(WS_VERSION)_$(DEB_ARCH).deb) \
	    $(DEB_DIR)/wsched-dkms_$(WS_VERSION)_all.deb

.PHONY: deb
deb:
	$(call msg,DEB,$(DEB_DIR))
	$(Q)command -v dpkg-buildpackage >/dev/null || { echo "make deb: dpkg-buildpackage not found;" \
	  "install dpkg-dev and debhelper (the lab rootfs has them)" >&2; exit 1; }
	$(Q)rm -rf $(DEB_DIR) && mkdir -p $(DEB_SRC)
	$(Q)tar -C $(TOP) --exclude=./build --exclude=./.git -cf - . | tar -C $(DEB_SRC) -xf -
	$(Q)cd $(DEB_SRC) && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES \
	  dpkg-buildpackage -us -uc -b -jauto >$(DEB_DIR)/build.log 2>&1 || \
	  { tail -n 30 $(DEB_DIR)/build.log >&2; echo "make deb: dpkg-buildpackage failed" \
	    "(log: $(DEB_DIR)/build.log)" >&2; exit 1; }
	$(Q)ls $(DEB_PKGS) >/dev/null
