#!/usr/bin/env bash
# Builds the package (libctensor and ctensor._native) with ThreadSanitizer and runs the thread
# tests on it: the C ABI tests (tests/c/test_abi.c: per-thread errors and eight threads running
# ops at once; test_profiler.c: threads running ops while the profiler is swapped; test_plan.c)
# and the binding's (tests/test_binding_threads.py: eight Python threads calling ops, the GIL
# released around each C call), then every op's float32 kernels overlapped on two threads by the
# conformance suite. Any data race or other TSan report fails the run.
#
#   bash tools/tsan_check.sh [build-dir]        # default build-tsan
#
# Needs meson and ninja, a C compiler with ThreadSanitizer (gcc or clang) and the test
# dependencies (pip install ".[test]") in $PYTHON (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-tsan}

# Without OpenMP: libgomp is not built with TSan, so TSan cannot see its synchronisation and
# would report the hand-offs of every parallel region. The threads here are the callers' own,
# which is what the ABI promises about (any number of threads calling at once). -O1 -g1 as in
# tools/sanitize_check.sh; no device plugins and no XLA handler.
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" -Db_sanitize=thread -Db_lundef=false -Dbuildtype=plain \
    "-Dc_args=-O1 -g1 -fno-omit-frame-pointer" -Dopenmp=disabled -Dcuda=disabled \
    -Dopencl=disabled -Dxla_ffi=disabled
fi
ninja -C "$build" all tests/fuzz/test_abi tests/fuzz/test_plan tests/fuzz/test_profiler

# The first report ends the run with TSan's exit status (66); the logs are searched as well.
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
label=ThreadSanitizer
reports="WARNING: ThreadSanitizer\|ERROR: ThreadSanitizer\|FATAL: ThreadSanitizer"
# check_run, stage_install, run_python
source tools/sanitizer_common.sh

for program in test_abi test_plan test_profiler; do
  check_run "$program" checks "$build/tests/fuzz/$program"
done

# The binding's thread tests, then the conformance suite's concurrency check over every op's
# float32 kernels (each signature run on two threads at once, with distinct buffers, against its
# serial result), on the package installed (meson install) into $build/stage and put first on
# PYTHONPATH. CPython is not built with TSan, so its runtime is preloaded; the interpreter is
# started directly (sys.executable), not through a wrapper script. One OpenMP and one OpenBLAS
# thread: torch's and NumPy's own thread pools (the suite's second-opinion references) are not
# built with TSan either, and TSan would report their hand-offs.
stage_install "$build" 'libtsan|clang_rt'
python_env=(OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1)
run_python tests/test_binding_threads.py -m pytest -q -p no:cacheprovider --capture=sys \
  tests/test_binding_threads.py
run_python "conformance (float32, threads)" -m ctensor.conformance --ops '*:float32' --cases 0 \
  --threads 2 -q
