# Sourced by tools/sanitize_check.sh and tools/tsan_check.sh (not run on its own). The sourcing
# script sets, before calling these functions:
#   label       the prefix of every line printed ("sanitized", "ThreadSanitizer")
#   reports     a grep pattern matching the first line of the sanitizer's reports
#   python_env  (stage_install's callers) VAR=value words added to the Python runs' environment

# check_run DESCRIPTION SUMMARY COMMAND...: runs COMMAND with its output in a log. A sanitizer
# report in the log, or a non-zero exit status, fails the whole run, showing the report (or the
# log's last lines, Python traceback frames left out). Otherwise prints the description and
# SUMMARY's view of the log: `checks` counts its lines starting with ok (the C tests), `last`
# gives its last non-empty line (pytest's and the conformance suite's summary).
check_run() {
  local what="$1" summary="$2" log status=0
  shift 2
  log=$(mktemp)
  "$@" >"$log" 2>&1 || status=$?
  if grep -q "$reports" "$log"; then
    grep -A40 "$reports" "$log" | head -n 80
    echo "$label $what: sanitizer report (exit status $status)" >&2
    exit 1
  fi
  if [ "$status" -ne 0 ]; then
    grep -v '^  File ' "$log" | tail -n 80
    echo "$label $what failed (exit status $status)" >&2
    exit 1
  fi
  if [ "$summary" = checks ]; then
    echo "$label $what: $(grep -c '^ok' "$log") checks ok"
  else
    echo "$label $what: $(grep -v '^$' "$log" | tail -n 1)"
  fi
  rm -f "$log"
}

# stage_install BUILD RUNTIMES: installs (meson install) the package built in BUILD into
# BUILD/stage, and sets `site` (the staged folder holding ctensor, put first on PYTHONPATH),
# `python` (the interpreter itself, sys.executable of $PYTHON, default python3, so that no
# wrapper script runs between the preload and it) and `preload` (the sanitizer runtimes the
# extension was linked with whose paths match the awk pattern RUNTIMES, in name order: ASan's
# before UBSan's). CPython is not built with the sanitizers, so their runtimes are preloaded and
# must come first. Where $python has ctensor installed editable (pip install -e), meson-python's
# import hook would import that build instead of the staged package, whatever PYTHONPATH says:
# `editable` lists its build folders, which run_python passes in MESONPY_EDITABLE_SKIP, the
# variable the hook itself reads to step aside for a build folder.
stage_install() {
  python=$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)')
  editable=$("$python" -c 'import os, sys
print(os.pathsep.join(f._build_path for f in sys.meta_path if hasattr(f, "_build_path")))')
  rm -rf "$1/stage"
  meson install -C "$1" --no-rebuild --quiet --destdir stage >/dev/null
  site=$(find "$PWD/$1/stage" -path '*/ctensor/__init__.py' | head -n 1)
  site=$(dirname "$(dirname "$site")")
  preload=$(ldd "$site"/ctensor/_native*.so | awk "/$2/ {print \$3}" | sort | tr '\n' ' ')
}

# run_python DESCRIPTION ARGUMENTS...: check_run (summary: last line) of the staged package
# under $python with ARGUMENTS, the runtimes preloaded, an editable install set aside and
# python_env added; the OpenCL requirement of the caller's environment is dropped (the sanitized
# builds have no plugins).
run_python() {
  local what="$1"
  shift
  check_run "$what" last env -u CTENSOR_REQUIRE_OPENCL PYTHONPATH="$site" \
    MESONPY_EDITABLE_SKIP="$editable" LD_PRELOAD="$preload" "${python_env[@]}" "$python" "$@"
}
