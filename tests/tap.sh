# SPDX-License-Identifier: GPL-2.0
#
# Minimal TAP helpers for shell tests (sourced).
#   tap_plan N; tap_ok COND-EXIT "name" ["diagnostic"]; tap_skip "name" "why"
# tap_check NAME CMD... runs CMD and reports ok/not ok by its exit status.
# tap_done exits 1 when anything failed.

TAP_N=0
TAP_FAILED=0

tap_plan() { echo "TAP version 13"; echo "1..$1"; }

tap_result() { # STATUS(0=ok) NAME [DIAG...]
	local st=$1 name=$2; shift 2
	TAP_N=$((TAP_N + 1))
	if [ "$st" = 0 ]; then
		echo "ok $TAP_N $name"
	else
		echo "not ok $TAP_N $name"
		TAP_FAILED=$((TAP_FAILED + 1))
		local d
		for d in "$@"; do printf '%s\n' "$d" | sed 's/^/# /'; done
	fi
}

tap_skip() { TAP_N=$((TAP_N + 1)); echo "ok $TAP_N $1 # SKIP $2"; }

tap_done() { [ "$TAP_FAILED" = 0 ]; exit $?; }
