"""The CUDA plugin's GEMMs mapped onto cuBLASLt, checked on the host without a GPU:
kernels/cuda/cu_matmul.cu's run functions (matmul, matmul_backward, linear) and cu_blaslt.cu's
ct_cu_gemm are compiled with nvcc into tests/cuda_gemm_stand_in.cu, which installs a stand-in
cuBLASLt computing cublasLtMatmul's documented result on host memory and checking everything the
library requires or was promised (transposes and shapes, leading dims, batch strides, C == D,
compute types, each pointer's alignment against the heuristic's preferences, the workspace,
float16's reduction scheme, every access inside the buffers). Random calls over transposed,
padded, offset, reversed, zero-stride and broadcast views are compared with libctensor's CPU
kernels. Collected where nvcc and the vendor headers are (tests/conftest.py)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cuda_arrays import VENDOR_HEADERS_PROBE

import ctensor  # noqa: F401  (maps libctensor into this process)

ROOT = Path(__file__).resolve().parents[1]
STAND_IN = ROOT / "tests" / "cuda_gemm_stand_in.cu"
SOURCES = [
    STAND_IN,
    ROOT / "kernels" / "cuda" / "cu_blaslt.cu",
    *(
        ROOT / "kernels" / "common" / f"plugin_{name}.c"
        for name in ("layout", "geometry", "grad_geometry", "dtypes")
    ),
]
CASES_PER_DTYPE = 600


def _libctensor() -> Path:
    """The libctensor this process loaded (ctensor's binding links it)."""
    for line in Path("/proc/self/maps").read_text().splitlines():
        fields = line.split()
        if len(fields) >= 6 and Path(fields[-1]).name.startswith("libctensor.so"):
            return Path(fields[-1])
    raise AssertionError("libctensor is not mapped into this process")


@pytest.fixture(scope="module")
def stand_in(tmp_path_factory: pytest.TempPathFactory) -> Path:
    probe = subprocess.run(
        [sys.executable, str(VENDOR_HEADERS_PROBE)], capture_output=True, text=True, check=True
    )
    includes = [ROOT / "kernels" / "cuda", ROOT / "kernels" / "common", ROOT / "capi"]
    includes += [Path(line) for line in probe.stdout.split("\n") if line.strip()]
    library = _libctensor()
    program = tmp_path_factory.mktemp("gemm") / "cuda_gemm_stand_in"
    command = [
        shutil.which("nvcc") or "nvcc",
        "-std=c++17",
        "-O1",
        "-arch=sm_90",  # the kernels are compiled, never launched
        *(f"-I{folder}" for folder in includes),
        *map(str, SOURCES),
        f"-L{library.parent}",
        f"-l:{library.name}",
        f"-Xlinker=-rpath={library.parent}",
        "-o",
        str(program),
    ]
    build = subprocess.run(command, capture_output=True, text=True, check=False)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    return program


def test_gemms_map_onto_cublaslt_and_match_the_cpu(stand_in: Path) -> None:
    run = subprocess.run(
        [str(stand_in), str(CASES_PER_DTYPE)], capture_output=True, text=True, timeout=300
    )
    report = run.stdout + run.stderr
    assert run.returncode == 0, report[-6000:]
    assert "failures 0" in report, report[-6000:]
    # Every dtype ran some calls on cuBLASLt, and every kind of call was seen: the BIAS
    # epilogue, accumulating loops over summed products, strided batches, all four transposes.
    for dtype in ("float32", "float64", "float16"):
        on_blaslt = re.search(rf"{dtype}: \d+ cases, (\d+) on cuBLASLt", report)
        assert on_blaslt and int(on_blaslt.group(1)) > 0, report
    for kind in ("with bias", "accumulating", "batched", "NN", "NT", "TN", "TT", "compared"):
        count = re.search(rf"{kind} (\d+)", report)
        assert count and int(count.group(1)) > 0, f"{kind}: {report[-2000:]}"
    # A problem seen before skips the heuristic: one query for two identical calls.
    assert "repeated problem: 1 heuristic calls" in report, report
