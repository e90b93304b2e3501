#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The man pages against the programs and the headers they describe: each
# program's page names exactly the long options its --help names
# (wsbench's also those of `wsbench handoff --help` and `wsbench lock
# --help`); libwsched(3) names exactly the ws_ functions the public headers
# declare, and the environment variable the library reads; groff renders
# every page without a warning (skipped where groff is not installed).
# Usage: man_test.sh [top of the tree] (default: this script's tree), after
# make all.
set -u
TOP=${1:-$(dirname "$(dirname "$(dirname "$(readlink -f "$0")")")")}
. "$TOP/tests/tap.sh"
MAN=$TOP/man
BIN=$TOP/build/bin

# Long options named in text on stdin, one per line, sorted. A roff page
# writes them with escaped hyphens (\-\-name).
long_opts() { sed 's/\\-/-/g' | grep -o -E -- '--[a-z][a-z0-9-]*[a-z0-9]' | sort -u; }

# compare NAME PAGE HELP-TEXT: one TAP line.
compare() {
	local name=$1 page=$2 help=$3 d
	d=$(diff <(long_opts <<<"$help") <(long_opts <"$page"))
	tap_result $? "$name: the page names exactly the options of --help" \
		"< only in --help, > only in $(basename "$page"):" "$d"
}

tap_plan 5

compare scx_wsched "$MAN/scx_wsched.8" "$("$BIN/scx_wsched" --help 2>&1)"
compare wsched-run "$MAN/wsched-run.1" "$("$BIN/wsched-run" --help 2>&1)"
compare wsbench "$MAN/wsbench.1" "$("$BIN/wsbench" --help 2>&1; "$BIN/wsbench" handoff --help 2>&1;
	"$BIN/wsbench" lock --help 2>&1)"

# libwsched(3): every function the headers declare (public: no leading _),
# inline or not, is in the page, every ws_ name the page uses exists in
# the headers, and the page names WSCHED_HINT_SOCKET.
names() { grep -o -E '\bws_[a-z0-9_]*[a-z0-9]\b' | sort -u; }
hdr_fns=$(cat "$TOP"/userspace/include/wsched/*.h | grep -v -E '^ ?\*' |
	grep -o -E '\bws_[a-z0-9_]+\(' | tr -d '(' | sort -u)
hdr_names=$(cat "$TOP"/userspace/include/wsched/*.h | names)
page_names=$(sed 's/\\f[BIRP]//g' "$MAN/libwsched.3" | names)
missing=$(comm -23 <(echo "$hdr_fns") <(echo "$page_names"))
stale=$(comm -13 <(echo "$hdr_names") <(echo "$page_names"))
env_ok=0
grep -q 'WSCHED_HINT_SOCKET' "$MAN/libwsched.3" || env_ok=1
[ -z "$missing" ] && [ -z "$stale" ] && [ $env_ok = 0 ] && [ -n "$hdr_fns" ]
tap_result $? "libwsched(3) names every function of the public headers, and no other ws_ name" \
	"declared but not in the page: $missing" "in the page, in no header: $stale" \
	"WSCHED_HINT_SOCKET missing: $env_ok"

if command -v groff >/dev/null; then
	out=$(for p in "$MAN"/*.[0-9]; do groff -man -ww -z "$p" 2>&1 | sed "s|^|$(basename "$p"): |"; done)
	[ -z "$out" ]
	tap_result $? "groff renders every page without a warning" "$out"
else
	tap_skip "groff renders every page without a warning" "groff not installed"
fi

tap_done
