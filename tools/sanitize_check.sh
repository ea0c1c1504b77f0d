#!/usr/bin/env bash
# Builds the package (libctensor and the binding's extension, ctensor._native) with
# AddressSanitizer + UndefinedBehaviorSanitizer (meson's b_sanitize; UBSan reports abort, see
# meson.build), runs the C ABI tests on it, a Python subset on the sanitized package, then the
# fuzz driver for CT_FUZZ_SECONDS (default 120) seconds. Any sanitizer report, crash, hang, empty
# error message or write outside an output fails the run. Prints the fuzz counts (calls,
# statuses, crashes).
#
#   bash tools/sanitize_check.sh [build-dir]        # default build-sanitize
#
# Needs meson and ninja (pip install meson ninja), a C compiler with the sanitizers (gcc or
# clang), and the test dependencies of the Python subset (pip install ".[test]") in $PYTHON
# (default python3). CT_FUZZ_SEED picks another seed (default 1); rerun a reported iteration with
#   <build-dir>/tests/fuzz/ct_fuzz --seed S --replay I
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-sanitize}
seconds=${CT_FUZZ_SECONDS:-120}
seed=${CT_FUZZ_SEED:-1}
label=sanitized
reports="runtime error\|ERROR: AddressSanitizer\|ERROR: LeakSanitizer"
# check_run, stage_install, run_python
source tools/sanitizer_common.sh

# -O1 with line tables only (-g1): about half the compile time of -O2 -g (3 CPU-minutes instead
# of 7.5 here), still with file:line in every report. No device plugins and no XLA handler: the
# default targets are then libctensor and ctensor._native alone.
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=plain \
    "-Dc_args=-O1 -g1 -fno-omit-frame-pointer" -Dcuda=disabled -Dopencl=disabled \
    -Dxla_ffi=disabled
fi
ninja -C "$build" all tests/fuzz/ct_fuzz tests/fuzz/test_abi tests/fuzz/test_plan \
  tests/fuzz/test_profiler

# LeakSanitizer on; libgomp's thread pool is not a leak of ours. Abort on the first report.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}

for program in test_abi test_plan test_profiler; do
  check_run "$program" checks "$build/tests/fuzz/$program"
done

# The Python subset, on the sanitized package installed (meson install) into $build/stage and
# put first on PYTHONPATH. CPython is not built with ASan, so its runtime is preloaded (it must
# come first); the interpreter's own allocations are never freed, so leak checks are off here.
# Chosen for coverage of the C per second: the binding's C (fast paths, capsules, out=, scratch,
# bound calls, threads, errors) by its tests, the reliability and kernel-arithmetic regressions
# (extreme extents, steps and windows: overflows that only a sanitizer sees), and every kernel by
# the conformance suite over every op and dtype (its fixed shape and attribute sets, two threads
# in the concurrency check: thread start-up is what costs most under ASan). Sanitizer reports
# go to stderr, so pytest captures only sys-level output (an abort would lose captured fds).
stage_install "$build" 'libasan|libubsan|clang_rt'
python_env=(
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:allocator_may_return_null=1:malloc_context_size=5
)
run_python "ctensor import" -c \
  "import ctensor, sys; print(ctensor.__file__); assert ctensor.__file__.startswith(sys.argv[1])" \
  "$site"
run_python pytest -m pytest -q -p no:cacheprovider --capture=sys tests/test_reliability.py \
  tests/test_binding_bind.py tests/test_binding_capsules.py tests/test_binding_cdef.py \
  tests/test_binding_dynamic.py tests/test_binding_errors.py tests/test_binding_fast_path.py \
  tests/test_binding_introspection.py tests/test_binding_out.py tests/test_binding_promotion.py \
  tests/test_binding_scratch.py tests/test_binding_threads.py tests/test_binding_zero_copy.py \
  tests/test_scatter.py tests/test_kernel_arithmetic.py
run_python conformance -m ctensor.conformance --cases 0 --threads 2 -q

# The fuzz driver exits 1 on any crash, hang or report; a sanitizer report kills its child,
# which counts as a crash.
"$build/tests/fuzz/ct_fuzz" --seed "$seed" --seconds "$seconds"
