"""Generates the C source of cffi's part of ctensor._native (API, out-of-line mode).

cffi's declarations are derived from C headers, so the headers stay the single source of truth:
capi/ctensor.h (the C ABI), src/dlpack_managed.h (DLPack's managed tensors) and src/ctpy_api.h
(the binding's C functions the Python side calls). For each header:

* comments are removed;
* of ``#if defined(DLPACK_DLPACK_H_) ... #else ... #endif`` only the ``#else`` branch is kept
  (the self-contained declarations), and ``#ifdef __cplusplus`` blocks are dropped;
* every other preprocessor line (``#if``/``#ifdef``/``#ifndef``/``#elif``/``#else``/``#endif``,
  ``#include``, function-like or non-integer ``#define``) is removed; ``#define NAME <integer>``
  is kept;
* the ``CT_API`` export macro is removed.

The only declarations written here are cffi's own: the ``extern "Python"`` callbacks (the
allocator of dynamic-allocating ops, the profiler of ``ctensor.profile``). The generated source
is one line, ``#include "ctpy_api.h"``; the C it calls lives in src/ and is linked into the same
extension module (see meson.build).

Usage: ``python build_cffi.py ctensor.h dlpack_managed.h ctpy_api.h output.c``
"""

from __future__ import annotations

import re
import sys

import cffi

_INT_DEFINE = re.compile(
    r"^#\s*define\s+([A-Za-z_]\w*)\s+(\(?-?(?:0[xX][0-9a-fA-F]+|\d+)[uUlL]*\)?)\s*$"
)


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def cdef_from_header(text: str) -> str:
    """Turns the public header into declarations pycparser (and so cffi) understands."""
    out: list[str] = []
    # Stack of (keep_this_branch, keep_else_branch, parent_keeps).
    stack: list[tuple[bool, bool, bool]] = []
    depth = 0  # braces open in the kept text

    def active() -> bool:
        return all(keep for keep, _, _ in stack)

    for raw in _strip_comments(text).splitlines():
        line = raw.strip()
        if line.startswith("#"):
            directive = line[1:].strip()
            word = directive.split(None, 1)[0] if directive else ""
            rest = directive[len(word) :].strip()
            if word in ("if", "ifdef", "ifndef"):
                if word == "ifdef" and rest == "__cplusplus":
                    stack.append((False, False, True))
                elif word == "if" and re.fullmatch(r"defined\s*\(?\s*DLPACK_DLPACK_H_\s*\)?", rest):
                    stack.append((False, True, True))
                else:
                    stack.append((True, True, True))
            elif word in ("elif", "else"):
                if not stack:
                    raise ValueError(f"unbalanced #{word} in header")
                keep, keep_else, parent = stack.pop()
                stack.append((keep_else, keep_else, parent))
            elif word == "endif":
                if not stack:
                    raise ValueError("unbalanced #endif in header")
                stack.pop()
            elif word == "define" and active():
                match = _INT_DEFINE.match(line)
                if match:
                    value = match.group(2).strip("()").rstrip("uUlL")
                    out.append(f"#define {match.group(1)} {value}")
            # #include, #error, #pragma, #undef and other defines: dropped.
            continue
        if not active():
            continue
        if line == 'extern "C" {' or (line == "}" and depth == 0):
            continue  # C++ linkage guard outside an #ifdef __cplusplus block
        depth += line.count("{") - line.count("}")
        line = re.sub(r"\bCT_API\b\s*", "", raw)
        if line.strip():
            out.append(line.rstrip())
    if stack:
        raise ValueError("unterminated #if in header")
    return "\n".join(out) + "\n"


# Python functions C can call (cffi generates them): the allocator of dynamic-allocating ops,
# and the profiler callbacks of ctensor.profile() (ct_profiler.begin / end).
EXTERN_PYTHON_CDEF = """
extern "Python" int ctpy_allocate(void* user_data, int32_t output_index,
                                  const ct_tensor_info* info, int32_t device_type,
                                  int32_t device_id, void** data);
extern "Python" void ctpy_profile_begin(void* user_data, const ct_profile_event* event);
extern "Python" void ctpy_profile_end(void* user_data, const ct_profile_event* event,
                                      int status);
"""


def make_ffibuilder(header_texts: list[str]) -> cffi.FFI:
    """The cffi builder of ctensor._native from the texts of the headers, in include order."""
    ffibuilder = cffi.FFI()
    ffibuilder.cdef("".join(cdef_from_header(text) for text in header_texts) + EXTERN_PYTHON_CDEF)
    ffibuilder.set_source("ctensor._native", '#include "ctpy_api.h"')
    return ffibuilder


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    *headers, output = argv[1:]
    texts = []
    for header in headers:
        with open(header, encoding="utf-8") as f:
            texts.append(f.read())
    make_ffibuilder(texts).emit_c_code(output)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
