#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# kmod/bench/run-handoff.sh: the handoff benchmark (build/bin/wsbench handoff)
# under EEVDF and, when build/bin/scx_wsched exists, under scx_wsched. Needs
# root on a sched_ext kernel (the lab guest: `make bench-sched`). Loads
# build/kmod/wsched.ko if /dev/wsched is missing and unloads it afterwards.
# Prints JSON lines on stdout; extra arguments go to wsbench handoff.
set -euo pipefail

TOP=$(dirname "$(dirname "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")")")
WSBENCH=$TOP/build/bin/wsbench
SCX=$TOP/build/bin/scx_wsched
KO=$TOP/build/kmod/wsched.ko
say() { echo "run-handoff: $*" >&2; }

[ -x "$WSBENCH" ] || { say "no $WSBENCH; run make first"; exit 1; }
BENCH=("$WSBENCH" handoff)
loaded_here=
scx_pid=
cleanup() {
	if [ -n "$scx_pid" ]; then kill -INT "$scx_pid" 2>/dev/null || true; wait "$scx_pid" 2>/dev/null || true; fi
	if [ -n "$loaded_here" ]; then rmmod wsched 2>/dev/null || say "could not unload wsched"; fi
}
trap cleanup EXIT

if [ ! -e /dev/wsched ]; then
	insmod "$KO" || { say "insmod $KO failed"; exit 1; }
	loaded_here=1
fi

state=$(cat /sys/kernel/sched_ext/state 2>/dev/null || echo none)
if [ "$state" != disabled ]; then
	say "sched_ext state is '$state', not 'disabled': measuring the current scheduler only"
	"${BENCH[@]}" --json "$@"
	exit
fi

"${BENCH[@]}" --json "$@"
"${BENCH[@]}" --json --method yield_to --fallback "$@"

if [ ! -x "$SCX" ]; then
	say "no $SCX yet: scx_wsched not measured"
	exit 0
fi
"$SCX" >/tmp/run-handoff.scx.log 2>&1 &
scx_pid=$!
for _ in $(seq 300); do
	[ "$(cat /sys/kernel/sched_ext/state)" = enabled ] && break
	kill -0 "$scx_pid" 2>/dev/null || { say "scx_wsched exited; see /tmp/run-handoff.scx.log"; scx_pid=; exit 1; }
	sleep 0.05
done
[ "$(cat /sys/kernel/sched_ext/state)" = enabled ] || { say "scx_wsched did not enable"; exit 1; }
"${BENCH[@]}" --json "$@"
"${BENCH[@]}" --json --method yield_to --fallback "$@"
