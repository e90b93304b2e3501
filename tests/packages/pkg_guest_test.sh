#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The Debian packages as a user meets them, in a lab guest booting systemd
# over a throwaway overlay of the rootfs (scripts/lab run --systemd; what
# make check runs):
#   scripts/lab run --systemd -- tests/packages/pkg_guest_test.sh
# apt-get installs the four packages of build/deb (make deb); DKMS builds
# and installs wsched.ko for the running kernel; modprobe loads it from
# DKMS's directory and udev gives /dev/wsched the rule's mode; the service
# is installed disabled and stopped, and `systemctl start` loads
# scx_wsched; a member of the group wsched builds a program with
# `pkg-config --cflags --libs libwsched` whose threads register (a user
# outside the group is refused); `systemctl stop` unloads it; apt-get
# purge removes everything: the rootfs equals the one before the
# installation, save the group wsched, which Debian leaves on purge; and
# systemd-analyze security rates the running service's sandbox. It refuses to run anywhere but a lab guest under systemd: it
# installs packages system-wide.
set -u
TOP=${1:-$(dirname "$(dirname "$(dirname "$(readlink -f "$0")")")")}
. "$TOP/tests/tap.sh"
DEB=$TOP/build/deb
# Scratch files live on /run, a tmpfs outside the overlay the snapshots
# walk: in /tmp they would be differences of their own.
T=$(mktemp -d -p /run)
trap 'rm -rf "$T"' EXIT

if [ -z "${WSCHED_IN_GUEST:-}" ] || [ "$(cat /proc/1/comm)" != systemd ] ||
	[ "$(findmnt -no FSTYPE /)" != overlay ] || [ ! -d /run/wslab/upper ]; then
	echo "1..0 # SKIP needs a lab guest booting systemd over an overlay: scripts/lab run --systemd -- $0"
	exit 0
fi
V=$(sed -n 's/^WS_VERSION *:= *//p' "$TOP/userspace/userspace.mk")
ARCH=$(dpkg --print-architecture)
DEBS=("$DEB/wsched_${V}_$ARCH.deb" "$DEB/libwsched0_${V}_$ARCH.deb"
      "$DEB/libwsched-dev_${V}_$ARCH.deb" "$DEB/wsched-dkms_${V}_all.deb")
for d in "${DEBS[@]}"; do
	[ -f "$d" ] || { echo "1..0 # SKIP $d missing: build the packages first (make deb)"; exit 0; }
done
KV=$(uname -r)
# How long each step took, as TAP comments (the guest is slow: the DKMS
# build and the systemd boot dominate).
t0=$SECONDS
took() { echo "# $1: $((SECONDS - t0)) s"; t0=$SECONDS; }

tap_plan 11

# What the guest changed in the rootfs so far, from the overlay's upper
# layer (scripts/lab-init): one line per path that differs from the
# rootfs below (/run/wslab/lower), less the package managers' own state,
# logs and caches, and with the group wsched taken out of the group files
# (Debian leaves a package's system group on purge). A directory or file
# that was only copied up, unchanged, is no difference. Only the upper
# layer is walked: a walk of the whole rootfs would cache more inodes than
# virtiofsd may hold files open.
U=/run/wslab/upper L=/run/wslab/lower
describe() { # PATH (relative to /)
	local p=$1 u=$U/$1 l=$L/$1
	case "$p" in
	# shadow's backups of the previous version, rewritten by every change
	etc/group-|etc/gshadow-|etc/passwd-|etc/shadow-|etc/subuid-|etc/subgid-) return ;;
	# DKMS's own signing key, made by its first build on a machine and
	# kept for every module it builds, not wsched's
	var/lib/dkms/mok.key|var/lib/dkms/mok.pub) return ;;
	etc/group|etc/gshadow)
		echo "$p $(grep -v '^wsched:' "$u" | md5sum)"; return ;;
	esac
	if [ -c "$u" ] && [ "$(stat -c %t:%T "$u")" = 0:0 ]; then
		echo "$p removed"
	elif [ -L "$u" ]; then
		[ -L "$l" ] && [ "$(readlink "$u")" = "$(readlink "$l")" ] || echo "$p -> $(readlink "$u")"
	elif [ -d "$u" ]; then
		[ -d "$l" ] || echo "$p dir"
	elif [ -f "$u" ]; then
		[ -f "$l" ] && cmp -s "$u" "$l" || echo "$p $(md5sum <"$u")"
	else
		echo "$p $(stat -c %F "$u")"
	fi
}
snapshot() { # OUT
	(cd "$U" && find . -xdev \( -path ./var/log -o -path ./var/cache -o -path ./var/lib/dpkg \
		-o -path ./var/lib/apt -o -path ./var/lib/systemd -o -path ./etc/ld.so.cache \) \
		-prune -o ! -path . -print) | sed 's|^\./||' | sort |
		while read -r p; do describe "$p"; done >"$1"
}
useradd -m wsuser && useradd -m wsother
# man-db's index update after each install and removal takes half a
# minute in the emulated guest and checks nothing of ours (man-db(8): it
# runs only while this flag file exists).
rm -f /var/lib/man-db/auto-update
snapshot "$T/before"
took "users, snapshot"

# 1. install
apt-get install -y -q -o Dpkg::Use-Pty=0 "${DEBS[@]}" >"$T/install.log" 2>&1
rc=$?
took "apt-get install (DKMS build included)"
tap_result $rc "apt-get install of the four packages succeeds" "exit $rc:" "$(tail -n 15 "$T/install.log")"

# 2. DKMS built and installed the module for this kernel
st=$(dkms status -m wsched -v "$V" -k "$KV" 2>&1)
path=$(modinfo -n -k "$KV" wsched 2>&1)
[[ "$st" == *installed* ]] && [[ "$path" == /lib/modules/$KV/updates/dkms/wsched.ko* || "$path" == /usr/lib/modules/$KV/updates/dkms/wsched.ko* ]]
tap_result $? "dkms installed wsched/$V for $KV in updates/dkms" "dkms status: $st" "modinfo -n: $path"

# 3. modprobe loads that module; udev applies the rule's mode. dev_mode=0600
# would give 0600 without the rule: 0666 shows the rule was applied.
modprobe wsched dev_mode=0600 2>"$T/modprobe.err"
rc=$?
udevadm settle --timeout=30
mode=$(stat -c %a /dev/wsched 2>&1)
srcv=$(cat /sys/module/wsched/srcversion 2>&1)
[ $rc = 0 ] && [ "$mode" = 666 ] && [ "$srcv" = "$(modinfo -F srcversion "$path")" ]
tap_result $? "modprobe wsched loads the DKMS module; udev sets /dev/wsched to the rule's 0666 over dev_mode=0600" \
	"modprobe exit $rc: $(cat "$T/modprobe.err")" "mode: $mode" "srcversion loaded $srcv, file $(modinfo -F srcversion "$path" 2>&1)" \
	"udevd: $(systemctl is-active systemd-udevd)"

# 4. the service: installed disabled and inactive; the group exists
en=$(systemctl is-enabled scx_wsched 2>&1); act=$(systemctl is-active scx_wsched 2>&1)
grp=$(getent group wsched)
[ "$en" = disabled ] && [ "$act" = inactive ] && [ -n "$grp" ]
tap_result $? "scx_wsched.service is installed disabled and stopped; the group wsched exists" \
	"is-enabled: $en, is-active: $act, group: $grp"

# 5. systemctl start loads the scheduler
state() { cat /sys/kernel/sched_ext/state 2>&1; }
wait_state() { # STATE: up to 60 s
	local i
	for i in $(seq 1 120); do [ "$(state)" = "$1" ] && return 0; sleep 0.5; done
	return 1
}
systemctl start scx_wsched
rc=$?
wait_state enabled
ok=$?
ops=$(cat /sys/kernel/sched_ext/root/ops 2>&1)
[ $rc = 0 ] && [ $ok = 0 ] && [ "$ops" = wsched ]
tap_result $? "systemctl start scx_wsched: sched_ext enabled with ops wsched" \
	"start exit $rc, state $(state), ops $ops" "$(journalctl -u scx_wsched --no-pager -n 15 2>&1)"

# 5b. the sandbox: systemd-analyze security's overall exposure (0 safest,
# 10 no sandbox; a unit with only ProtectSystem=full, ProtectHome and
# PrivateTmp is above 8) at most 4.0; the service runs in it (5 above,
# 6-8 below)
sec=$(systemd-analyze security --no-pager scx_wsched 2>&1)
exp=$(sed -n 's/.*Overall exposure level for scx_wsched.service: \([0-9.]*\).*/\1/p' <<<"$sec")
awk -v e="$exp" 'BEGIN { exit !(e != "" && e + 0 <= 4.0) }'
tap_result $? "systemd-analyze security scx_wsched: overall exposure ${exp:-?} (at most 4.0)" \
	"$(grep -E 'Overall|✗' <<<"$sec" | tail -n 25)"

# 6-7. a member of wsched builds with pkg-config and its threads register;
# someone outside the group builds the same and is refused
usermod -aG wsched wsuser
cat >"$T/reg.c" <<'EOF'
#include <pthread.h>
#include <stdio.h>
#include <wsched/thread.h>

static void *reg(void *arg)
{
	*(int *)arg = ws_thread_register();
	return NULL;
}

int main(void)
{
	pthread_t t[3];
	int rc[3], i, bad = 0;

	for (i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, reg, &rc[i]);
	for (i = 0; i < 3; i++) {
		pthread_join(t[i], NULL);
		printf("thread %d: ws_thread_register() = %d\n", i, rc[i]);
		bad |= rc[i] != 0;
	}
	return bad;
}
EOF
chmod 755 "$T"; chmod 644 "$T/reg.c"
as_user() { # USER: build reg.c with pkg-config and run it
	runuser -u "$1" -- sh -c 'cd /tmp && cc -o "$0" "$1" $(pkg-config --cflags --libs libwsched) -pthread && "$0"' \
		"/tmp/reg-$1" "$T/reg.c" 2>&1
}
took "modprobe, service start"
out=$(as_user wsuser)
tap_result $? "a member of wsched builds with pkg-config --cflags --libs libwsched; its threads register" "$out"
out=$(as_user wsother)
rc=$?
[ $rc = 1 ] && grep -q 'ws_thread_register() = -' <<<"$out"
tap_result $? "a user outside wsched builds the same program and is refused registration" "exit $rc:" "$out"
rm -f /tmp/reg-wsuser /tmp/reg-wsother
took "two builds with pkg-config"

# 8. systemctl stop unloads it
systemctl stop scx_wsched
rc=$?
wait_state disabled
tap_result $([ $rc = 0 ] && [ "$(state)" = disabled ]; echo $?) "systemctl stop scx_wsched: sched_ext disabled" \
	"stop exit $rc, state $(state)"

# 9. purge
modprobe -r wsched
apt-get purge -y -q -o Dpkg::Use-Pty=0 wsched wsched-dkms libwsched-dev libwsched0 >"$T/purge.log" 2>&1
rc=$?
took "stop, apt-get purge"
tap_result $rc "apt-get purge of the four packages succeeds" "exit $rc:" "$(tail -n 15 "$T/purge.log")"

# 10. nothing left behind
snapshot "$T/after"
took "snapshot"
d=$(diff "$T/before" "$T/after")
tap_result $? "after the purge the rootfs equals the one before the install (the group wsched aside)" \
	"changes (< before, > after):" "$d"

tap_done
