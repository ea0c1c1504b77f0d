"""Prints the folders that hold the headers of cuBLASLt (cublasLt.h) and cuDNN (cudnn.h), one per
line, for kernels/cuda/meson.build; exits 1 naming what is missing.

Looked for, in order: the folders in CTENSOR_CUDA_INCLUDE (os.pathsep-separated), the CUDA
toolkit's include folder (beside nvcc, or CUDA_HOME/CUDA_PATH), and the NVIDIA wheels
(nvidia-cublas: nvidia/cu13/include, nvidia-cudnn-cu13: nvidia/cudnn/include) on this Python's
path or in its site-packages folders. The last matters for pip's isolated builds: they run this
interpreter with its site-packages taken off sys.path, but site.getsitepackages() still names
them, so wheels installed before `pip install .` are found."""

from __future__ import annotations

import os
import shutil
import site
import sys
from pathlib import Path

HEADERS = {"cuBLASLt": "cublasLt.h", "cuDNN": "cudnn.h"}
WHEEL_FOLDERS = ("nvidia/cu13/include", "nvidia/cudnn/include")


def candidates() -> list[Path]:
    found = [Path(p) for p in os.environ.get("CTENSOR_CUDA_INCLUDE", "").split(os.pathsep) if p]
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    nvcc = shutil.which("nvcc")
    if nvcc:
        roots.append(str(Path(nvcc).resolve().parent.parent))
    found += [Path(root) / "include" for root in roots if root]
    entries = [*sys.path, *site.getsitepackages(), site.getusersitepackages()]
    for entry in entries:
        found += [Path(entry or ".") / folder for folder in WHEEL_FOLDERS]
    return found


def main() -> int:
    folders: list[str] = []
    missing = []
    for library, header in HEADERS.items():
        home = next((c for c in candidates() if (c / header).is_file()), None)
        if home is None:
            missing.append(f"{library} ({header})")
        elif str(home) not in folders:
            folders.append(str(home))
    if missing:
        print(
            f"no headers of {', '.join(missing)}: pip install nvidia-cublas nvidia-cudnn-cu13, "
            "and name their include folders in CTENSOR_CUDA_INCLUDE for an isolated build",
            file=sys.stderr,
        )
        return 1
    print("\n".join(folders))
    return 0


if __name__ == "__main__":
    sys.exit(main())
