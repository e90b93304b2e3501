#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The Debian packages that `make deb` built (build/deb/, debian/): each
# package holds exactly the expected files with their modes; the versions
# of the changelog, the library, the module's dkms.conf and libwsched.pc
# agree; the dependencies tie libwsched-dev to its library, wsched-dkms to
# dkms and wsched to the sysusers tool; the maintainer scripts create the
# group, never enable or start the service, stop it before removal, and
# run DKMS; the symbols file lists the library's ABI; lintian reports
# nothing that is not overridden; and the build wrote nothing in the tree
# outside build/. tests/packages/pkg_guest_test.sh installs the packages.
# Usage: deb_test.sh [top of the tree] (default: this script's tree).
set -u
TOP=${1:-$(dirname "$(dirname "$(dirname "$(readlink -f "$0")")")")}
. "$TOP/tests/tap.sh"
DEB=$TOP/build/deb
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

if ! command -v dpkg-deb >/dev/null || ! command -v dh >/dev/null; then
	echo "1..0 # SKIP dpkg-dev or debhelper missing: make deb cannot build the packages here"
	exit 0
fi

V=$(sed -n 's/^WS_VERSION *:= *//p' "$TOP/userspace/userspace.mk")
ARCH=$(dpkg --print-architecture)
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
declare -A FILE=(
	[wsched]=$DEB/wsched_${V}_$ARCH.deb
	[libwsched0]=$DEB/libwsched0_${V}_$ARCH.deb
	[libwsched-dev]=$DEB/libwsched-dev_${V}_$ARCH.deb
	[wsched-dkms]=$DEB/wsched-dkms_${V}_all.deb
)
PKGS=(wsched libwsched0 libwsched-dev wsched-dkms)

tap_plan 9

# 1. all four built, from this version
missing=()
for p in "${PKGS[@]}"; do [ -f "${FILE[$p]}" ] || missing+=("${FILE[$p]}"); done
tap_result ${#missing[@]} "make deb built the four packages of version $V" \
	"missing: ${missing[*]}" "$(tail -n 5 "$DEB/build.log" 2>/dev/null)"
[ ${#missing[@]} = 0 ] || { echo "# the other checks need the packages (make deb)"; tap_done; }

# 2. exactly the expected files, links and modes (directories and the
# doc directory's changelog and copyright left out)
listing() { # PKG: "MODE TYPE PATH" lines of its files, sorted
	dpkg-deb -c "${FILE[$1]}" | awk '
		$1 !~ /^d/ {
			t = substr($1, 1, 1); p = $6; sub(/^\./, "", p)
			if (p ~ "^/usr/share/doc/[^/]*/(changelog\\.gz|copyright)$") next
			m = (t == "l") ? "777" : ""
			if (t != "l") {
				for (i = 2; i <= 10; i += 3) {
					v = 0
					if (substr($1, i, 1) == "r") v += 4
					if (substr($1, i + 1, 1) == "w") v += 2
					if (substr($1, i + 2, 1) == "x") v += 1
					m = m v
				}
			}
			print m, (t == "-" ? "f" : t), p
		}' | sort
}
mans() { # SECTION...: the man pages of man/ in those sections, compressed
	local n m
	for n in "$@"; do
		for m in "$TOP"/man/*."$n"; do [ -e "$m" ] && echo "644 f /usr/share/man/man$n/${m##*/}.gz"; done
	done
}
expected() { # PKG
	case $1 in
	wsched)
		printf '%s\n' "644 f /etc/default/scx_wsched" "755 f /usr/bin/wsbench" \
			"755 f /usr/bin/wsched-run" "755 f /usr/sbin/scx_wsched" \
			"644 f /usr/lib/$MA/wsched/libwsched-preload.so" \
			"644 f /usr/lib/systemd/system/scx_wsched.service" \
			"644 f /usr/lib/sysusers.d/wsched.conf" \
			"644 f /usr/share/lintian/overrides/wsched"
		mans 1 8 ;;
	libwsched0)
		printf '%s\n' "644 f /usr/lib/$MA/libwsched.so.$V" "777 l /usr/lib/$MA/libwsched.so.0" ;;
	libwsched-dev)
		for h in "$TOP"/userspace/include/wsched/*.h; do echo "644 f /usr/include/wsched/${h##*/}"; done
		printf '%s\n' "644 f /usr/lib/$MA/libwsched.a" "777 l /usr/lib/$MA/libwsched.so" \
			"644 f /usr/lib/$MA/pkgconfig/libwsched.pc"
		mans 3 ;;
	wsched-dkms)
		for f in Kbuild Makefile dkms.conf wsched.c include/wsched/wsched_ioctl.h; do
			echo "644 f /usr/src/wsched-$V/$f"
		done
		printf '%s\n' "644 f /usr/lib/udev/rules.d/70-wsched.rules" \
			"644 f /usr/share/doc/wsched-dkms/README.md" \
			"644 f /usr/share/doc/wsched-dkms/examples/modules-load.d/wsched.conf" \
			"644 f /usr/share/lintian/overrides/wsched-dkms" ;;
	esac | sort
}
diags=()
for p in "${PKGS[@]}"; do
	d=$(diff <(expected "$p") <(listing "$p")) || diags+=("$p (< expected, > in the package):" "$d")
done
tap_result ${#diags[@]} "each package holds exactly the expected files and modes" "${diags[@]}"

# 3. one version everywhere
dpkg-deb -x "${FILE[libwsched-dev]}" "$T/dev"
dpkg-deb -x "${FILE[wsched-dkms]}" "$T/dkms"
vs="changelog=$(dpkg-parsechangelog -l "$TOP/debian/changelog" -S Version)"
vs+=" libwsched.pc=$(sed -n 's/^Version: //p' "$T/dev/usr/lib/$MA/pkgconfig/libwsched.pc")"
vs+=" dkms.conf=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$T/dkms/usr/src/wsched-$V/dkms.conf")"
vs+=" package=$(dpkg-deb -f "${FILE[wsched]}" Version)"
bad=$(tr ' ' '\n' <<<"$vs" | grep -vx ".*=$V")
tap_result $([ -z "$bad" ]; echo $?) "changelog, libwsched.pc, dkms.conf and package versions are WS_VERSION $V" "$vs"

# 4. dependencies
dep() { dpkg-deb -f "${FILE[$1]}" Depends; }
diags=()
grep -q "libwsched0 (= $V)" <<<"$(dep libwsched-dev)" || diags+=("libwsched-dev: $(dep libwsched-dev)")
grep -qw dkms <<<"$(dep wsched-dkms)" || diags+=("wsched-dkms: $(dep wsched-dkms)")
grep -q "systemd-sysusers" <<<"$(dep wsched)" || diags+=("wsched: $(dep wsched)")
grep -q "libbpf1" <<<"$(dep wsched)" || diags+=("wsched (no libbpf1): $(dep wsched)")
tap_result ${#diags[@]} "libwsched-dev needs its library, wsched-dkms dkms, wsched libbpf1 and systemd-sysusers" "${diags[@]}"

# 5. maintainer scripts
script() { dpkg-deb --ctrl-tarfile "${FILE[$1]}" | tar -xOf - "./$2" 2>/dev/null; }
diags=()
script wsched postinst | grep -q 'systemd-sysusers.* wsched.conf' || diags+=("wsched postinst does not run systemd-sysusers wsched.conf")
# dh_installsystemd --no-enable: the unit is enabled again only where it
# was before (deb-systemd-helper debian-installed, was-enabled); --no-start:
# an upgrade restarts it only if it runs (try-restart), nothing starts it.
script wsched postinst | grep -q "deb-systemd-helper debian-installed 'scx_wsched.service'" ||
	diags+=("wsched postinst lacks the no-enable snippet")
script wsched postinst | grep -E "deb-systemd-invoke (start|restart|\\$)|systemctl [^|]*(start|enable)" &&
	diags+=("wsched postinst starts or enables the service")
script wsched prerm | grep -q 'deb-systemd-invoke stop scx_wsched.service' || diags+=("wsched prerm does not stop the service")
script wsched-dkms postinst | grep -q "DKMS_VERSION=$V" || diags+=("wsched-dkms postinst does not run DKMS for wsched $V")
script wsched-dkms prerm | grep -q 'dkms remove' || diags+=("wsched-dkms prerm does not dkms remove")
tap_result ${#diags[@]} "maintainer scripts: group created, service neither enabled nor started, stopped on removal; DKMS run" "${diags[@]}"

# 6. the ABI
syms=$(script libwsched0 symbols)
grep -q "^libwsched.so.0 libwsched0 #MINVER#" <<<"$syms" && grep -q ' ws_thread_register@Base' <<<"$syms"
tap_result $? "libwsched0's symbols file lists libwsched.so.0's ABI" "$syms"

# 7. the modules-load.d file is shipped as an example only
dpkg-deb -c "${FILE[wsched-dkms]}" | grep -E '\./(etc|usr/lib)/modules-load\.d/'
tap_result $([ $? = 1 ]; echo $?) "wsched-dkms does not load the module at boot (modules-load.d only under examples)"

# 8. lintian
if command -v lintian >/dev/null; then
	lintian -I --pedantic --display-experimental "$DEB"/wsched_"${V}"_"$ARCH".changes >"$T/lintian" 2>&1
	tags=$(grep -E '^[EWIPX]: ' "$T/lintian")
	tap_result $([ -z "$tags" ]; echo $?) "lintian (pedantic, experimental): no tag left that is not overridden" "$tags"
else
	tap_skip "lintian (pedantic, experimental): no tag left that is not overridden" "lintian not installed"
fi

# 9. the tree outside build/ untouched by the package build
new=$(find "$TOP" \( -path "$TOP/build" -o -path "$TOP/.git" \) -prune -o -newer "$DEB/.started" -print)
tap_result $([ -z "$new" ]; echo $?) "the package build wrote nothing in the tree outside build/" "$new"

tap_done
