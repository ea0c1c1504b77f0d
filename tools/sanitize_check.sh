#!/usr/bin/env bash
# Builds libctensor with AddressSanitizer + UndefinedBehaviorSanitizer (meson's b_sanitize; UBSan
# reports abort, see meson.build), runs the C ABI tests on it, then the fuzz driver for
# CT_FUZZ_SECONDS (default 120) seconds. Any sanitizer report, crash, hang, empty error message
# or write outside an output fails the run. Prints the fuzz counts (calls, statuses, crashes).
#
#   bash tools/sanitize_check.sh [build-dir]        # default build-sanitize
#
# Needs meson and ninja (pip install meson ninja) and a C compiler with the sanitizers (gcc or
# clang). CT_FUZZ_SEED picks another seed (default 1); rerun a reported iteration with
#   <build-dir>/tests/fuzz/ct_fuzz --seed S --replay I
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-sanitize}
seconds=${CT_FUZZ_SECONDS:-120}
seed=${CT_FUZZ_SEED:-1}

# -O1 with line tables only (-g1): about half the compile time of -O2 -g (3 CPU-minutes instead
# of 7.5 here), still with file:line in every report.
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=plain \
    "-Dc_args=-O1 -g1 -fno-omit-frame-pointer" -Dcuda=disabled -Dopencl=disabled
fi
ninja -C "$build" tests/fuzz/ct_fuzz tests/fuzz/test_abi tests/fuzz/test_plan tests/fuzz/test_profiler

# LeakSanitizer on; libgomp's thread pool is not a leak of ours. Abort on the first report.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}

for program in test_abi test_plan test_profiler; do
  log=$(mktemp)
  if ! "$build/tests/fuzz/$program" >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "sanitized $program failed" >&2
    exit 1
  fi
  if grep -q "runtime error\|ERROR: AddressSanitizer\|ERROR: LeakSanitizer" "$log"; then
    grep -A20 "runtime error\|ERROR: AddressSanitizer\|ERROR: LeakSanitizer" "$log" | head -60
    echo "sanitized $program: sanitizer report" >&2
    exit 1
  fi
  echo "sanitized $program: $(grep -c '^ok' "$log") checks ok"
  rm -f "$log"
done

# The fuzz driver exits 1 on any crash, hang or report; a sanitizer report kills its child,
# which counts as a crash.
"$build/tests/fuzz/ct_fuzz" --seed "$seed" --seconds "$seconds"
