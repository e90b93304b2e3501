#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make install and make uninstall into a DESTDIR, as a packager runs them:
# the installed file list is exactly the expected one, with its modes;
# libwsched.so's SONAME and links; only names the headers declare exported;
# pkg-config finds libwsched with the installed paths; a program built from
# the installed headers runs against the installed shared library, and
# links statically with pkg-config --static; the installed wsched-run has
# the installed preload's path compiled in; a relative PREFIX is refused;
# the systemd unit verifies (systemd-analyze, where present) and a
# reinstall keeps an edited defaults file; uninstall removes what install
# installed and leaves other files in the same directories alone. Needs the
# tree built (make all).
# Usage: install_test.sh [top of the tree] (default: this script's tree).
set -u
TOP=${1:-$(dirname "$(dirname "$(dirname "$(readlink -f "$0")")")")}
. "$TOP/tests/tap.sh"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
D=$T/root
VERSION=0.1.0

# A make of its own: not the jobserver or the variables of a make that
# runs this test.
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES
mk() { make -C "$TOP" LAB=0 "$@"; }

tap_plan 12

# Files of someone else's in the same directories: uninstall keeps them.
mkdir -p "$D/usr/lib" "$D/usr/include"
touch "$D/usr/lib/libother.so" "$D/usr/include/other.h"

# 1. install
mk install DESTDIR="$D" PREFIX=/usr >"$T/install.log" 2>&1
rc=$?
tap_result $rc "make install DESTDIR=... PREFIX=/usr succeeds" "exit $rc:" "$(tail -n 5 "$T/install.log")"

# 2. exactly the expected files, links and modes
{
	for h in "$TOP"/userspace/include/wsched/*.h; do
		echo "644 f /usr/include/wsched/${h##*/}"
	done
	for m in "$TOP"/man/*.[0-9]; do
		echo "644 f /usr/share/man/man${m##*.}/${m##*/}"
	done
	for l in /usr/sbin/scx_wsched /usr/bin/wsbench /usr/bin/wsched-run; do
		echo "755 f $l"
	done
	cat <<EOF
644 f /usr/lib/libwsched.so.$VERSION
777 l /usr/lib/libwsched.so.0
777 l /usr/lib/libwsched.so
644 f /usr/lib/libwsched.a
644 f /usr/lib/pkgconfig/libwsched.pc
644 f /usr/lib/wsched/libwsched-preload.so
644 f /usr/lib/udev/rules.d/70-wsched.rules
644 f /usr/lib/systemd/system/scx_wsched.service
644 f /usr/lib/sysusers.d/wsched.conf
644 f /etc/default/scx_wsched
EOF
} | sort -k3 >"$T/want"
(cd "$D" && find . ! -type d ! -name libother.so ! -name other.h -printf '%m %y /%P\n' |
	sort -k3) >"$T/got"
diff -u "$T/want" "$T/got" >"$T/diff"
tap_result $? "the installed files are exactly the expected ones, with their modes" "$(cat "$T/diff")"

# 3. SONAME and links
soname=$(readelf -d "$D/usr/lib/libwsched.so.$VERSION" 2>&1 | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
l0=$(readlink "$D/usr/lib/libwsched.so.0") l=$(readlink "$D/usr/lib/libwsched.so")
[ "$soname" = libwsched.so.0 ] && [ "$l0" = "libwsched.so.$VERSION" ] && [ "$l" = libwsched.so.0 ]
tap_result $? "SONAME libwsched.so.0; libwsched.so -> libwsched.so.0 -> libwsched.so.$VERSION" \
	"SONAME '$soname', libwsched.so.0 -> '$l0', libwsched.so -> '$l'"

# 4. exported symbols: each declared in an installed header
undeclared= n=0
for sym in $(nm -D --defined-only "$D/usr/lib/libwsched.so.$VERSION" | awk '{ print $3 }'); do
	n=$((n + 1))
	grep -qw -- "$sym" "$D"/usr/include/wsched/*.h || undeclared="$undeclared $sym"
done
[ -z "$undeclared" ] && [ "$n" -gt 20 ]
tap_result $? "libwsched.so exports only names its installed headers declare" \
	"$n exported; not declared in any header:$undeclared"

# 5. pkg-config
export PKG_CONFIG_PATH=$D/usr/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$D
export PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1
# (echo drops the trailing blank pkg-config prints)
# shellcheck disable=SC2046,SC2116
flags=$(echo $(pkg-config --cflags --libs libwsched 2>&1))
# shellcheck disable=SC2046,SC2116
sflags=$(echo $(pkg-config --static --libs libwsched 2>&1))
ver=$(pkg-config --modversion libwsched 2>&1)
[ "$flags" = "-I$D/usr/include -L$D/usr/lib -lwsched" ] && [ "$ver" = "$VERSION" ] &&
	[ "$sflags" = "-L$D/usr/lib -lwsched -pthread" ]
tap_result $? "pkg-config --cflags --libs libwsched names the installed directories" \
	"--cflags --libs: '$flags'" "--static --libs: '$sflags'" "--modversion: '$ver'"

# 6, 7. a program against the installed headers and libraries: deque and
# fork/join (the inline spawn and sync call into the library).
cat >"$T/prog.c" <<'EOF'
#include <stdio.h>
#include <wsched/deque.h>
#include <wsched/pool.h>
#include <wsched/task.h>

/* The sum of [lo, hi), halved recursively down to 64 numbers. */
struct range { long lo, hi, sum; };

static int sum_task(struct ws_worker *w, void *arg)
{
	struct range *r = arg;
	long mid = r->lo + (r->hi - r->lo) / 2;
	struct range left = { r->lo, mid, 0 }, right = { mid, r->hi, 0 };
	struct ws_task t;

	if (r->hi - r->lo <= 64) {
		for (long i = r->lo; i < r->hi; i++)
			r->sum += i;
		return 0;
	}
	ws_spawn(w, &t, sum_task, &left);
	sum_task(w, &right);
	if (ws_sync(w, &t))
		return -1;
	r->sum = left.sum + right.sum;
	return 0;
}

int main(void)
{
	struct ws_deque *dq = ws_deque_create(16);
	struct ws_pool_attr attr;
	struct ws_pool *pool;
	struct range all = { 0, 100000, 0 };
	int x = 42;
	void *item = NULL;

	if (!dq || ws_deque_push(dq, &x) || !ws_deque_pop(dq, &item) || item != &x)
		return 1;
	ws_deque_destroy(dq);
	ws_pool_attr_init(&attr);
	attr.nr_workers = 2;
	if (ws_pool_create(&pool, &attr) || ws_pool_run(pool, sum_task, &all) ||
	    ws_pool_destroy(pool))
		return 2;
	printf("sum = %ld\n", all.sum);
	return all.sum != 4999950000L;
}
EOF
# shellcheck disable=SC2086
cc -std=c11 -Wall -Wextra -Werror -o "$T/prog" "$T/prog.c" $flags >"$T/cc.log" 2>&1 &&
	out=$(LD_LIBRARY_PATH=$D/usr/lib "$T/prog" 2>&1) && [ "$out" = "sum = 4999950000" ] &&
	LD_LIBRARY_PATH=$D/usr/lib ldd "$T/prog" | grep -q "libwsched.so.0 => $D/usr/lib/libwsched.so.0 "
tap_result $? "a C11 program built with pkg-config's flags runs against the installed libwsched.so.0" \
	"$(cat "$T/cc.log")" "output: ${out:-}" "$(LD_LIBRARY_PATH=$D/usr/lib ldd "$T/prog" 2>&1 | grep wsched)"

# shellcheck disable=SC2086
cc -std=c11 -static -o "$T/prog-static" "$T/prog.c" $(pkg-config --cflags libwsched) $sflags \
	>"$T/cc-static.log" 2>&1 && out=$("$T/prog-static" 2>&1) && [ "$out" = "sum = 4999950000" ]
tap_result $? "the same program links statically with pkg-config --static (libwsched.a)" \
	"$(cat "$T/cc-static.log")" "output: ${out:-}"

# 8. the installed wsched-run looks for the installed preload
help=$("$D/usr/bin/wsched-run" --help 2>&1)
WSCHED_PRELOAD=$D/usr/lib/wsched/libwsched-preload.so "$D/usr/bin/wsched-run" -q -- true
rc=$?
grep -qF 'else /usr/lib/wsched/libwsched-preload.so)' <<<"$(tr -s ' \n' ' ' <<<"$help")" && [ $rc = 0 ]
tap_result $? "the installed wsched-run defaults to /usr/lib/wsched/libwsched-preload.so and runs a program" \
	"--preload help: $(grep -A1 -- --preload <<<"$help")" "wsched-run -q -- true with WSCHED_PRELOAD: exit $rc"

# 9. the unit: what systemd-analyze says of it (where systemd is), its
# paths, and sched_ext as its condition
unit=$D/usr/lib/systemd/system/scx_wsched.service
if command -v systemd-analyze >/dev/null; then
	# A copy naming the staged files, checked against this system's units.
	sed "s|=-/etc/|=-$D/etc/|; s|=/usr/sbin/|=$D/usr/sbin/|" "$unit" >"$T/scx_wsched.service"
	verify=$(systemd-analyze verify --man=no "$T/scx_wsched.service" 2>&1)
	vrc=$?
else
	verify="(no systemd-analyze here)" vrc=0
fi
[ $vrc = 0 ] && [ -z "${verify%(no systemd-analyze here)}" ] &&
	grep -qx 'ExecStart=/usr/sbin/scx_wsched $SCX_WSCHED_FLAGS' "$unit" &&
	grep -qx 'EnvironmentFile=-/etc/default/scx_wsched' "$unit" &&
	grep -qx 'ConditionPathIsDirectory=/sys/kernel/sched_ext' "$unit" &&
	grep -qx 'Conflicts=scx.service' "$unit"
tap_result $? "the installed unit verifies and runs the installed loader with the defaults file's flags" \
	"systemd-analyze verify: exit $vrc" "$verify" "$(grep -E '^(ExecStart|EnvironmentFile|Condition|Conflicts)' "$unit")"

# 10. a reinstall keeps the administrator's defaults file
echo 'SCX_WSCHED_FLAGS="--grace-us 500"' >"$D/etc/default/scx_wsched"
mk install DESTDIR="$D" PREFIX=/usr >"$T/reinstall.log" 2>&1
rc=$?
[ $rc = 0 ] && [ "$(cat "$D/etc/default/scx_wsched")" = 'SCX_WSCHED_FLAGS="--grace-us 500"' ]
tap_result $? "make install again keeps an edited /etc/default/scx_wsched" \
	"exit $rc" "now: $(cat "$D/etc/default/scx_wsched")"

# 11. a relative PREFIX: one line, non-zero, nothing installed
mk install DESTDIR="$T/bad" PREFIX=usr >"$T/bad.out" 2>"$T/bad.err"
rc=$?
[ $rc != 0 ] && [ "$(wc -l <"$T/bad.err")" = 1 ] && grep -q "PREFIX must be an absolute path" "$T/bad.err" &&
	[ ! -e "$T/bad" ]
tap_result $? "make install PREFIX=usr fails with one line and installs nothing" "exit $rc:" "$(cat "$T/bad.err")"

# 12. uninstall
mk uninstall DESTDIR="$D" PREFIX=/usr >"$T/uninstall.log" 2>&1
rc=$?
left=$(cd "$D" && find . ! -type d | sort | tr '\n' ' ')
wsdirs=$(cd "$D" && find . -type d -name wsched)
[ $rc = 0 ] && [ "$left" = "./usr/include/other.h ./usr/lib/libother.so " ] && [ -z "$wsdirs" ]
tap_result $? "make uninstall removes what install installed, and only that" \
	"exit $rc" "left: $left $wsdirs" "$(tail -n 5 "$T/uninstall.log")"

tap_done
