#!/usr/bin/env bash
# The CUDA checks that need a GPU, as one prepared run for a machine with an NVIDIA GPU, CUDA 13,
# PyTorch and CuPy but no network (the device machine lent to some sessions; see
# docs/contributing.md). Two steps:
#
#   bash tools/cuda_device_check.sh prepare   # here, with network or the local index: fetches
#                                             # the build's Python wheels for the GPU machine's
#                                             # Python (CT_GPU_PYTHON, default 3.12) into .whl/
#   bash tools/cuda_device_check.sh run       # there, from the repository root (carry .whl)
#
# `run` installs the carried wheels (cffi, meson-python) into /tmp/site, builds and installs
# ctensor into that Python with the CUDA plugin required, puts the NVIDIA wheels' libraries on
# LD_LIBRARY_PATH, then runs, each with its own time limit and log under $OUT (default
# /tmp/ctensor-gpu): the backend table, the CUDA tests, `python -m ctensor.bench.cuda` (its JSON
# and its table, <gpu>.txt, go to $OUT too) and the conformance suite on cuda:0. It goes on after
# a failing step and exits non-zero if any failed. The limits add up to about ten minutes, one
# device call's limit.
set -uo pipefail
cd "$(dirname "$0")/.."

prepare() {
  local version="${CT_GPU_PYTHON:-3.12}"
  mkdir -p .whl .git/info
  grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >>.git/info/exclude
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$version" \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d .whl cffi pycparser meson-python pyproject-metadata
  ls .whl
}

# step NAME SECONDS COMMAND...: runs COMMAND with a time limit, logging to $OUT/NAME.log.
failed=()
step() {
  local name="$1" limit="$2"
  shift 2
  echo "== $name ($(date -u +%T), limit ${limit}s)"
  timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
  local status=$?
  tail -n 25 "$OUT/$name.log"
  echo "== $name: exit $status"
  [ "$status" -eq 0 ] || failed+=("$name")
}

run() {
  OUT="${OUT:-/tmp/ctensor-gpu}"
  mkdir -p "$OUT"
  export PYTHONUNBUFFERED=1 CTENSOR_REQUIRE_CUDA_PLUGIN=1
  if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl ||
      exit 1
    export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
  fi
  nvidia=$(python3 -c "import nvidia, os; print(':'.join(os.path.join(p, d) for p in nvidia.__path__ for d in ('cu13/lib', 'cudnn/lib')))")
  export LD_LIBRARY_PATH="$nvidia${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
  step build 240 python3 -m pip install --no-build-isolation --no-deps --no-index \
    -Csetup-args=-Dcuda=enabled -Csetup-args=-Dopencl=disabled -Csetup-args=-Dxla_ffi=disabled \
    -Cbuild-dir=build-gpu .
  [ "${#failed[@]}" -eq 0 ] || exit 1
  step backends 30 python3 -c "import ctensor; [print(b) for b in ctensor.backends()]"
  step tests 170 python3 -m pytest -q -p no:cacheprovider --timeout=60 \
    tests/test_cuda_plugin.py tests/test_cuda_vendor_libraries.py tests/test_cuda_device.py \
    tests/test_cuda_scatter.py
  # --record "$OUT" writes the table as $OUT/<gpu>.txt: copy it to benchmarks/results/cuda/.
  step bench 120 python3 -m ctensor.bench.cuda --json "$OUT/bench.json" --record "$OUT"
  step conformance 60 python3 -m ctensor.conformance --backend cuda --device cuda:0
  if [ "${#failed[@]}" -ne 0 ]; then
    echo "failed: ${failed[*]}"
    exit 1
  fi
  echo "all steps passed"
}

case "${1:-}" in
  prepare) prepare ;;
  run) run ;;
  *)
    echo "usage: $0 prepare|run" >&2
    exit 2
    ;;
esac
