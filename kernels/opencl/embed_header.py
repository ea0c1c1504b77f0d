"""Turns a C header that the OpenCL kernels compile (kernels/common/philox.h) into a C string
at build time, so that the OpenCL program text and the C and CUDA builds read one file.

Usage: python embed_header.py INPUT OUTPUT NAME. Comments and indentation are dropped (the
generated program text has a size limit); every line is kept, so preprocessor directives
stay intact. Standard library only.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path


def embed(text: str, name: str, source: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.DOTALL)
    lines = [line.strip() for line in text.splitlines()]
    body = "\n".join(
        '    "' + line.replace("\\", "\\\\").replace('"', '\\"') + '\\n"' for line in lines if line
    )
    return (
        f"/* Generated from {source} by kernels/opencl/embed_header.py: do not edit. */\n"
        f"static const char {name}[] =\n{body};\n"
    )


def main(argv: list[str]) -> int:
    source, output, name = argv[1:4]
    text = Path(source).read_text(encoding="utf-8")
    Path(output).write_text(embed(text, name, Path(source).name), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
