#!/usr/bin/env python3
"""Checks the C tree's #include graph: no file-level include cycles and no layer violations.

Quoted includes are resolved as the compiler does for this build: the including file's folder
first, then the include directories meson gives that part of the tree (INCLUDE_DIRS). Includes
that resolve to no file in the tree (system headers) are ignored.

Layers (a file may include files of its own layer or of lower ones):
  capi/             the ABI and the op table; includes nothing under kernels/
  kernels/cpu/      engine (0) < math (1) < gemm (2) < registration headers at the top (3)
                    < conv, sort (4; neither includes the other) < ops (5) < cpu_backend.c (6)
  kernels/common/, kernels/opencl/, kernels/cuda/ (device plugins) include nothing under
                    kernels/cpu/, and kernels/cpu/ includes none of them, except the headers
                    every device compiles (SHARED_DEVICE_HEADERS), which include no file of
                    the tree.

Usage: python tools/check_includes.py [--root DIR]. Prints each problem; exits 1 if any.
Standard library only.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

SOURCE_SUFFIXES = {".c", ".h", ".cu", ".cuh", ".cpp", ".cc", ".cl"}
SOURCE_ROOTS = ("capi", "kernels", "bindings", "conformance", "benchmarks", "tests/c", "examples")

# Include directories per part of the tree (the longest matching prefix wins), as meson.build
# passes them.
INCLUDE_DIRS = {
    "": ["capi"],
    "kernels/cpu/": ["capi", "kernels/cpu"],
    "kernels/common/": ["capi", "kernels/common"],
    "kernels/opencl/": ["capi", "kernels/common"],
    "kernels/cuda/": ["capi", "kernels/common"],
}

# Rank of each part of kernels/cpu; a file may include files of lower rank or of its own folder.
CPU_RANKS = {
    "engine": 0,
    "math": 1,
    "gemm": 2,
    "": 3,  # registration headers at the top (cpu_register.h, cpu_families.h)
    "conv": 4,
    "sort": 4,
    "ops": 5,
}
CPU_TOP_SOURCES_RANK = 6  # cpu_backend.c: registers every family

# Headers compiled by every device, the CPU backend included (as C, OpenCL C and CUDA C++):
# kernels/cpu/ may include them; they include no file of the tree.
SHARED_DEVICE_HEADERS = {"kernels/common/philox.h"}

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)


def include_dirs_for(rel: str) -> list[str]:
    best = ""
    for prefix in INCLUDE_DIRS:
        if rel.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return INCLUDE_DIRS[best]


def build_graph(root: Path) -> dict[str, set[str]]:
    files: list[Path] = []
    for part in SOURCE_ROOTS:
        base = root / part
        if base.is_dir():
            files += [p for p in base.rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file()]
    graph: dict[str, set[str]] = {}
    for path in sorted(files):
        rel = path.relative_to(root).as_posix()
        edges = graph.setdefault(rel, set())
        text = path.read_text(encoding="utf-8", errors="replace")
        for name in INCLUDE_RE.findall(text):
            candidates = [path.parent / name] + [root / d / name for d in include_dirs_for(rel)]
            for cand in candidates:
                if cand.is_file():
                    target = cand.resolve().relative_to(root.resolve()).as_posix()
                    if target != rel:  # a template header may include itself guarded; not a cycle
                        edges.add(target)
                    break
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one file (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    result: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    result.append(sorted(component))
    return result


def cpu_rank(rel: str) -> int | None:
    if not rel.startswith("kernels/cpu/"):
        return None
    inner = rel[len("kernels/cpu/") :]
    folder = inner.split("/")[0] if "/" in inner else ""
    if folder == "" and not inner.endswith(".h"):
        return CPU_TOP_SOURCES_RANK
    return CPU_RANKS.get(folder)


def layer_violation(src: str, dst: str) -> str | None:
    if src.startswith("capi/") and dst.startswith("kernels/"):
        return "capi/ includes kernels/"
    if src in SHARED_DEVICE_HEADERS:
        return "a header every device compiles includes a file of the tree"
    plugin_parts = ("kernels/common/", "kernels/opencl/", "kernels/cuda/")
    if src.startswith(plugin_parts) and dst.startswith("kernels/cpu/"):
        return "a device plugin includes the CPU backend"
    if src.startswith("kernels/cpu/") and dst.startswith(plugin_parts):
        if dst in SHARED_DEVICE_HEADERS:
            return None
        return "the CPU backend includes a device plugin"
    s, d = cpu_rank(src), cpu_rank(dst)
    if s is None or d is None:
        return None
    same_folder = src.rsplit("/", 1)[0] == dst.rsplit("/", 1)[0]
    if same_folder or d < s:
        return None
    return f"kernels/cpu layer {s} includes layer {d}"


def check(root: Path) -> list[str]:
    graph = build_graph(root)
    problems = []
    for cycle in find_cycles(graph):
        problems.append("include cycle among: " + ", ".join(cycle))
    for src in sorted(graph):
        for dst in sorted(graph[src]):
            why = layer_violation(src, dst)
            if why:
                problems.append(f"layer violation: {src} includes {dst} ({why})")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_root = Path(__file__).resolve().parent.parent
    parser.add_argument("--root", type=Path, default=default_root, help="repository root")
    args = parser.parse_args(argv)
    problems = check(args.root.resolve())
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} include problem(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
