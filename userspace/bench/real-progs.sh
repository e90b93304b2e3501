# SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
# shellcheck shell=bash disable=SC2034
#
# userspace/bench/real-progs.sh: the programs of bench-coop's real part,
# sourced by userspace/bench/bench-coop. Each is a multi-threaded program
# packaged by Debian (scripts/lab setup --bench installs them), run as a
# user would run it, on inputs made once per boot (real_prepare), its
# output checked after every run (real_verify). Work, not time, is fixed:
# a run's result is its wall time.
#
# Programs (REAL_PROGS picks a subset; one whose command is missing is
# skipped with a note):
#   xz        xz -T N -3 in 1 MiB blocks (so that N threads have work) of a
#             text file; verified by decompressing it
#   zstd      zstd -T N -9 of the same file; the same check
#   pigz      pigz -p N -6 of it; the same check
#   pbzip2    pbzip2 -p N -9 of it; the same check
#   sort      GNU sort --parallel N of a file of random lines; verified by
#             sort -c and the line count
#   numpy     matrix products by numpy on OpenBLAS's threads
#             (OPENBLAS_NUM_THREADS=N); verified by an exact checksum
#             (integer-valued matrices: every sum is exact in doubles)
#   7z        7-Zip's benchmark (7z b -mmt N), which checks its own
#             decompressed data's CRC and fails on a mismatch
#   convert   ImageMagick's resize and blur, on OpenMP's threads
#             (MAGICK_THREAD_LIMIT=N); verified against the image the
#             same command makes with one thread
#   make      a parallel build: make -j N driving gcc -O2 -g over 2 copies
#             of libwsched's sources (the programs timed are make and gcc,
#             the sources only their input); verified by every object made
#   sysbench  sysbench threads (threads that yield while holding one of 8
#             mutexes) with a fixed number of events; verified by the
#             count it reports
#
# REAL_MB (default 8) sizes the compressors' and sort's inputs.

REAL_ALL="xz zstd pigz pbzip2 sort numpy 7z convert make sysbench"
REAL_MB=${REAL_MB:-8}

# real_cmd_of PROG: the command that must exist for PROG.
real_cmd_of() {
	case $1 in
	numpy) echo python3 ;;
	convert) echo convert ;;
	sysbench) echo sysbench ;;
	make) echo gcc ;;
	*) echo "$1" ;;
	esac
}

# real_pkg_of PROG: the Debian package whose version a row records.
real_pkg_of() {
	case $1 in
	xz) echo xz-utils ;;
	sort) echo coreutils ;;
	numpy) echo python3-numpy ;;
	7z) echo 7zip ;;
	convert) echo imagemagick-7.q16 ;;
	make) echo gcc ;;
	*) echo "$1" ;;
	esac
}

real_version() {
	dpkg-query -W -f '${Version}' "$(real_pkg_of "$1")" 2>/dev/null || echo unknown
}

# real_available: the programs of REAL_ALL (or REAL_PROGS) whose command is
# installed, on one line.
real_available() {
	local p out=
	for p in ${REAL_PROGS:-$REAL_ALL}; do
		case " $REAL_ALL " in
		*" $p "*) ;;
		*) echo "bench-coop: REAL_PROGS: '$p' is not one of: $REAL_ALL" >&2; return 1 ;;
		esac
		if command -v "$(real_cmd_of "$p")" >/dev/null; then
			out="$out $p"
		else
			echo "bench-coop: $(real_cmd_of "$p") not installed (scripts/lab setup --bench); real $p skipped" >&2
		fi
	done
	echo "${out# }"
}

# real_prepare DIR: the inputs, made once, and the references.
real_prepare() {
	local d=$1 i
	mkdir -p "$d/src"
	# text: words drawn from a fixed vocabulary with a fixed seed
	# (compresses about 3:1, as prose does); lines: random keys for sort.
	python3 - "$d" "$REAL_MB" <<'EOF' || return 1
import random, sys
d, mb = sys.argv[1], int(sys.argv[2])
rng = random.Random(12345)
vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 10)))
         for _ in range(5000)]
with open(d + "/text", "w") as f:
    n = 0
    while n < mb << 20:
        line = " ".join(rng.choice(vocab) for _ in range(12)) + "\n"
        f.write(line)
        n += len(line)
with open(d + "/lines", "w") as f:
    for i in range((mb << 20) // 40):
        f.write("%016x %s %d\n" % (rng.getrandbits(64), rng.choice(vocab), i))
EOF
	wc -l <"$d/lines" >"$d/lines.count"
	convert -size 640x480 gradient:red-blue -swirl 270 "$d/in.png" || return 1
	MAGICK_THREAD_LIMIT=1 convert "$d/in.png" -resize 200% -blur 0x3 "$d/ref.png" || return 1
	identify -format '%#' "$d/ref.png" >"$d/ref.sig" || return 1
	# make: 2 copies of libwsched's sources, each a translation unit of
	# its own, with the include paths a build would give
	for i in 1 2; do
		for f in "$TOP"/userspace/lib/*.c; do
			cp "$f" "$d/src/$(basename "$f" .c)_$i.c"
		done
	done
	cat >"$d/src/Makefile" <<EOF
SRCS := \$(wildcard *.c)
OBJS := \$(SRCS:.c=.o)
CFLAGS := -O2 -g -D_GNU_SOURCE -pthread -I$TOP/userspace/include -I$TOP/userspace/lib -I$TOP/bpf -I$TOP/build/include
all: \$(OBJS)
%.o: %.c
	\$(CC) \$(CFLAGS) -c -o \$@ \$<
EOF
	# the job is only fair if it compiles at all here
	make -s -C "$d/src" -j2 >/dev/null 2>"$d/make.err" ||
		{ echo "bench-coop: real make: the sources do not compile: $(head -n 3 "$d/make.err")" >&2; return 1; }
	rm -f "$d/src"/*.o
	touch "$d/prepared"
}

# real_cmd PROG THREADS DIR OUT: sets CMD (argv), CMD_ENV (NAME=VALUE
# words for env) and CMD_OUT (where its stdout goes) for one run whose
# files are DIR's inputs and OUT (a directory of its own).
real_cmd() {
	local p=$1 t=$2 d=$3 o=$4
	CMD_ENV=() CMD_OUT=/dev/null
	case $p in
	xz) CMD=(xz -T "$t" --block-size=1MiB -3 -c "$d/text") CMD_OUT=$o/out ;;
	zstd) CMD=(zstd -q -T"$t" -9 -c "$d/text") CMD_OUT=$o/out ;;
	pigz) CMD=(pigz -p "$t" -6 -c "$d/text") CMD_OUT=$o/out ;;
	pbzip2) CMD=(pbzip2 -p"$t" -9 -c "$d/text") CMD_OUT=$o/out ;;
	sort) CMD=(sort --parallel="$t" -S 256M -T "$o" -o "$o/out" "$d/lines") ;;
	numpy)
		CMD_ENV=(OPENBLAS_NUM_THREADS="$t")
		CMD=(python3 -c '
import numpy as np
n = 384
a = (np.arange(n * n, dtype=np.float64).reshape(n, n) % 7) - 3
b = (np.arange(n * n, dtype=np.float64).reshape(n, n).T % 5) - 2
s = 0.0
for i in range(10):
    c = a @ b
    s += c.sum()
    a = (c % 7) - 3
print(int(s))')
		CMD_OUT=$o/out ;;
	7z) CMD=(7z b 1 -mmt"$t" -md20) CMD_OUT=$o/out ;;
	convert)
		CMD_ENV=(MAGICK_THREAD_LIMIT="$t")
		CMD=(convert "$d/in.png" -resize 200% -blur 0x3 "$o/out.png") ;;
	make) rm -rf "$o/src" && cp -r "$d/src" "$o/src"
		CMD=(make -s -C "$o/src" -j"$t") ;;
	sysbench) CMD=(sysbench threads --threads="$t" --thread-yields=100 --thread-locks=8
		--events=$((2000 * t)) --time=0 run) CMD_OUT=$o/out ;;
	esac
}

# The numpy checksum, computed once per boot without timing (1 thread).
real_numpy_ref() {
	local d=$1
	[ -f "$d/numpy.ref" ] && return 0
	real_cmd numpy 1 "$d" "$d"
	env "${CMD_ENV[@]}" "${CMD[@]}" >"$d/numpy.ref" || return 1
}

# real_verify PROG THREADS DIR OUT: 0 when the run's output is right.
real_verify() {
	local p=$1 t=$2 d=$3 o=$4
	case $p in
	xz) xz -dc "$o/out" | cmp -s - "$d/text" ;;
	zstd) zstd -qdc "$o/out" | cmp -s - "$d/text" ;;
	pigz) pigz -dc "$o/out" | cmp -s - "$d/text" ;;
	pbzip2) pbzip2 -dc "$o/out" | cmp -s - "$d/text" ;;
	sort) LC_ALL=${LC_ALL:-} sort -c "$o/out" && [ "$(wc -l <"$o/out")" = "$(cat "$d/lines.count")" ] ;;
	numpy) real_numpy_ref "$d" && cmp -s "$o/out" "$d/numpy.ref" ;;
	7z) grep -q '^Tot:' "$o/out" && ! grep -qi 'error' "$o/out" ;;
	convert) [ "$(identify -format '%#' "$o/out.png")" = "$(cat "$d/ref.sig")" ] ;;
	make) [ "$(find "$o/src" -name '*.o' | wc -l)" = "$(find "$o/src" -name '*.c' | wc -l)" ] ;;
	sysbench) grep -Eq "total number of events: +$((2000 * t))\$" "$o/out" ;;
	esac
}
