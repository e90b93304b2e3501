# SPDX-License-Identifier: GPL-2.0
#
# The loader as a systemd service (included by the top-level Makefile):
# the unit, generated for the installation directories, its defaults file
# and the sysusers.d entry that creates the hint group. Installed by
# `make install`; the defaults file is installed only where none exists,
# so a reinstall keeps an administrator's flags (uninstall removes it).
SYSTEMD_DIR  := $(TOP)/systemd
SYSTEMD_UNIT := $(INSTALL_STAGE)/scx_wsched.service

$(SYSTEMD_UNIT): $(SYSTEMD_DIR)/scx_wsched.service.in $(INSTALL_PATHS)
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)sed -e 's|@SBINDIR@|$(SBINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' $< >$@.tmp
	$(Q)mv $@.tmp $@

ALL += $(SYSTEMD_UNIT)
INSTALL_FILES += 644:$(SYSTEMD_UNIT):$(SYSTEMDUNITDIR)/scx_wsched.service \
		 644:$(SYSTEMD_DIR)/wsched.sysusers:$(SYSUSERSDIR)/wsched.conf
INSTALL_CONFIG += 644:$(SYSTEMD_DIR)/scx_wsched.default:$(SYSCONFDIR)/default/scx_wsched

# After a real install (no DESTDIR) as root, the group is created at once
# rather than at the next boot, so that the service can start.
INSTALL_HOOKS += $(if $(DESTDIR),,if [ "$$(id -u)" = 0 ] && command -v systemd-sysusers >/dev/null; then \
	systemd-sysusers '$(SYSUSERSDIR)/wsched.conf'; fi;)
