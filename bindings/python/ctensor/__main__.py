"""``python -m ctensor``: what is installed, and where.

    python -m ctensor                 version, ABI, threads and the operator table
    python -m ctensor --markdown-ops  the operator table, generated from the registry
    python -m ctensor --operators-page  docs/operators.md (that table with its key)
    python -m ctensor --gradients-page  docs/gradients.md (every op's gradient entry)
    python -m ctensor --pkgconfigdir  directory holding ctensor.pc
    python -m ctensor --includedir    directory holding ctensor.h
    python -m ctensor --libdir        directory holding libctensor

``ctensor-config`` (console script) takes the same directory flags, plus --cflags and --libs.
"""

from __future__ import annotations

import argparse
import sys

import ctensor

from ._dtypes import DTYPE_INDEX

_REAL = {name for name in DTYPE_INDEX if not name.startswith("complex")}


def _dtypes_text(names: list[str]) -> str:
    """Compact dtype list: 'all' when every dtype is there, 'all real' for every non-complex
    one."""
    if set(names) == set(DTYPE_INDEX):
        return "all"
    if set(names) == _REAL:
        return "all real"
    return ", ".join(names)


def _attr_text(attr: dict) -> str:
    text = f"{attr['name']}: {attr['type']}"
    if attr.get("nullable"):
        text += "?"
    if attr.get("required"):
        return text + " (required)"
    return f"{text} = {attr.get('default')!r}"


def _input_text(param: dict) -> str:
    name = param["name"]
    if param.get("variadic"):
        return f"*{name}"
    if param.get("optional"):
        return f"{name}?"
    return name


def markdown_ops(devices: list[str] | None = None) -> str:
    """The operator table as Markdown: op, category, inputs, attributes, dtypes, devices (of the
    loaded backends; only those in ``devices`` when given)."""
    rows = [
        "| op | category | inputs | attributes | dtypes (cpu) | devices |",
        "|---|---|---|---|---|---|",
    ]
    for name in ctensor.list_ops():
        info = ctensor.op_info(name)
        inputs = ", ".join(_input_text(p) for p in info["inputs"])
        attrs = "<br>".join(f"`{_attr_text(a)}`" for a in info["attrs"]) or "—"
        dtypes = _dtypes_text(info["dtypes"].get("cpu", [])) or "—"
        shown = [d for d in info["devices"] if devices is None or d in devices]
        rows.append(
            f"| `{name}` | {info['category']} | {inputs} | {attrs} | {dtypes} | "
            f"{', '.join(shown) or '—'} |"
        )
    return "\n".join(rows)


OPERATORS_PAGE_COMMAND = "python -m ctensor --operators-page > docs/operators.md"


OPERATORS_PAGE_KEY = """\
The devices column shows the
<<<<<<< HEAD
backends CI runs; the CUDA backend registers the opencl column's kernels, conv_transpose2d and
conv_transpose2d_backward_input (float16, float32, float64), and the cumulative ops
(cumulative_sum, cumulative_prod and their backward ops). The
=======
backends CI runs; the CUDA backend registers exactly the opencl column's kernels, and
conv_transpose2d, conv_transpose2d_backward_input and linear (float16, float32, float64). The
>>>>>>> blas
dtypes are those the first input takes on the CPU (the output's for ops without inputs);
`all` means all fifteen: bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
float16, bfloat16, float32, float64, complex64, complex128; `all real` the first thirteen.
`ctensor.op_info(name)["kernels"]` (or `ct_op_kernel_info` in C) gives every exact
dtype signature; any other combination is refused with the unsupported-dtype error, never
computed wrongly. To add an element-wise op, see [adding-an-op.md](adding-an-op.md)."""


def operators_page() -> str:
    """docs/operators.md: the operator table of the devices CI has (cpu, opencl) with its key."""
    header = (
        f"# Operators\n\nGenerated from the registry by `{OPERATORS_PAGE_COMMAND}`; a test\n"
        f"(tests/test_readme.py) fails when this file is stale. {OPERATORS_PAGE_KEY}"
    )
    return "\n".join([header, "", markdown_ops(["cpu", "opencl"]), ""])


GRADIENTS_PAGE_COMMAND = "python -m ctensor --gradients-page > docs/gradients.md"

GRADIENTS_PAGE_KEY = """\
Every operator's gradient entry, as the registry holds it (`ct_op_gradient` in C,
`ctensor.op_info(name)["gradient"]` in Python, `"gradient"` in the schema JSON). A formula is
a program of registered operators: `grad_<input>` is the cotangent of that input,
`grad_<output>` the cotangent given for that output, and every other name an input, an output
or an earlier step. `ctensor.autodiff.vjp` runs it; a framework builds its autograd from it
with no code per op. The row format is in `capi/gradients/gradient_rows.h`.

Subgradients follow PyTorch: relu'(0) = 0, abs'(0) = 0, and the notes below say how each op
with a kink or ties chooses."""


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


def gradients_page() -> str:
    """docs/gradients.md: the differentiable ops with their formulas, then the ops that are not
    differentiable with the reason."""
    differentiable, other, backward = [], [], []
    for name in ctensor.list_ops():
        entry = ctensor.op_info(name)["gradient"]
        if entry.get("differentiable"):
            saved = [
                p["name"]
                for p, s in zip(ctensor.op_info(name)["inputs"], entry["saved_inputs"], strict=True)
                if s
            ]
            saved += [
                p["name"]
                for p, s in zip(
                    ctensor.op_info(name)["outputs"], entry["saved_outputs"], strict=True
                )
                if s
            ]
            differentiable.append(
                f"| `{name}` | `{_escape(entry['formula'])}` | {', '.join(saved) or '—'} | "
                f"{_escape(entry['note']) or '—'} |"
            )
        elif "_backward" in name:
            backward.append(f"`{name}`")
        else:
            other.append(f"| `{name}` | {_escape(entry.get('note') or entry.get('error', ''))} |")
    return "\n".join(
        [
            f"# Gradients\n\nGenerated from the registry by `{GRADIENTS_PAGE_COMMAND}`; a test\n"
            f"(tests/test_gradients.py) fails when this file is stale.\n\n{GRADIENTS_PAGE_KEY}",
            "",
            f"## Differentiable operators ({len(differentiable)})",
            "",
            "| op | vector-Jacobian product | saved | note |",
            "|---|---|---|---|",
            *differentiable,
            "",
            f"## Operators that are not differentiable ({len(other)})",
            "",
            "| op | why |",
            "|---|---|",
            *other,
            "",
            f"## Backward operators ({len(backward)})",
            "",
            "These compute the gradients above; they have no gradient of their own (no second",
            "derivatives): " + (", ".join(backward) or "none") + ".",
            "",
        ]
    )


def summary() -> str:
    lines = [
        f"ctensor {ctensor.__version__}",
        f"ABI version: {'.'.join(map(str, ctensor.abi_version()))} (binding built against "
        f"{'.'.join(map(str, ctensor.ABI_VERSION))})",
        f"threads: {ctensor.get_num_threads()}",
        f"package: {ctensor._HERE}",
        "",
        "backends:",
    ]
    for backend in ctensor.backends():
        where = backend.path or "built in"
        state = backend.state + (f": {backend.reason}" if backend.reason else "")
        lines.append(
            f"  {backend.name} {backend.version} ({where}): {state}; "
            f"{backend.device_type} x{backend.device_count}"
        )
    lines.append("")
    infos = [ctensor.op_info(name) for name in ctensor.list_ops()]
    width = max([len(i["name"]) for i in infos] + [2])
    lines.append(f"{'op':<{width}}  {'category':<12}  dtypes (cpu)")
    lines.append(f"{'-' * width}  {'-' * 12}  {'-' * 12}")
    for info in infos:
        dtypes = _dtypes_text(info["dtypes"].get("cpu", [])) or "-"
        lines.append(f"{info['name']:<{width}}  {info['category']:<12}  {dtypes}")
    lines.append(f"\n{len(infos)} operators")
    return "\n".join(lines)


def _dir_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--pkgconfigdir", action="store_true", help="print the directory holding ctensor.pc"
    )
    group.add_argument(
        "--includedir", action="store_true", help="print the directory holding ctensor.h"
    )
    group.add_argument(
        "--libdir", action="store_true", help="print the directory holding libctensor"
    )
    group.add_argument("--cflags", action="store_true", help="print compiler flags")
    group.add_argument("--libs", action="store_true", help="print linker flags")
    group.add_argument("--version", action="store_true", help="print the version")
    parser.set_defaults(_group=group)


def _dir_answer(args: argparse.Namespace) -> str | None:
    if args.pkgconfigdir:
        return ctensor.get_pkgconfig_dir()
    if args.includedir:
        return ctensor.get_include()
    if args.libdir:
        return ctensor.get_lib_dir()
    if args.cflags:
        return f"-I{ctensor.get_include()}"
    if args.libs:
        libdir = ctensor.get_lib_dir()
        return f"-L{libdir} -Wl,-rpath,{libdir} -lctensor"
    if args.version:
        return ctensor.__version__
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ctensor", description=__doc__.split("\n")[0])
    _dir_flags(parser)
    parser.add_argument(
        "--operators-page",
        action="store_true",
        help="print docs/operators.md, generated from the registry",
    )
    parser.add_argument(
        "--gradients-page",
        action="store_true",
        help="print docs/gradients.md, generated from the registry's gradient entries",
    )
    parser.add_argument(
        "--markdown-ops", action="store_true", help="print the operator table as Markdown"
    )
    parser.add_argument(
        "--devices",
        metavar="LIST",
        help="with --markdown-ops: show only these devices (comma-separated)",
    )
    args = parser.parse_args(argv)
    answer = _dir_answer(args)
    if answer is not None:
        print(answer)
    elif args.operators_page:
        print(operators_page(), end="")
    elif args.gradients_page:
        print(gradients_page(), end="")
    elif args.markdown_ops:
        print(markdown_ops(args.devices.split(",") if args.devices else None))
    else:
        print(summary())
    return 0


def config_main(argv: list[str] | None = None) -> int:
    """The ``ctensor-config`` console script."""
    parser = argparse.ArgumentParser(
        prog="ctensor-config",
        description="Where ctensor's C header, library and pkg-config file are installed.",
    )
    _dir_flags(parser)
    args = parser.parse_args(argv)
    answer = _dir_answer(args)
    if answer is None:
        parser.print_help()
        return 1
    print(answer)
    return 0


def _run(entry) -> int:  # noqa: ANN001
    try:
        return entry()
    except BrokenPipeError:  # e.g. `python -m ctensor | head`
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(_run(main))
