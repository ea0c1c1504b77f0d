"""tools/check_includes.py: the C tree has no include cycle and no layer violation, and the
checker itself finds both kinds of problem (so that it cannot silently rot)."""

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "check_includes.py"


def load_tool():
    spec = importlib.util.spec_from_file_location("check_includes", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tree_has_no_include_problems():
    result = subprocess.run(
        [sys.executable, str(TOOL)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_checker_reports_a_cycle_and_layer_violations(tmp_path):
    tool = load_tool()
    write(tmp_path, "capi/internal.h", '#include "../kernels/cpu/engine/a.h"\n')
    write(tmp_path, "kernels/cpu/engine/a.h", '#include "engine/b.h"\n')
    write(tmp_path, "kernels/cpu/engine/b.h", '#include "ops/c.h"\n')
    write(tmp_path, "kernels/cpu/ops/c.h", '#include "engine/a.h"\n#include "internal.h"\n')
    problems = tool.check(tmp_path)
    cycles = [p for p in problems if p.startswith("include cycle")]
    layers = [p for p in problems if p.startswith("layer violation")]
    assert len(cycles) == 1
    for name in ("engine/a.h", "engine/b.h", "ops/c.h"):
        assert name in cycles[0]
    assert any("capi/internal.h includes kernels/cpu/engine/a.h" in p for p in layers)
    assert any("engine/b.h includes kernels/cpu/ops/c.h" in p for p in layers)
    assert len(layers) == 2
    assert tool.main(["--root", str(tmp_path)]) == 1


def test_checker_accepts_a_clean_tree(tmp_path):
    tool = load_tool()
    write(tmp_path, "capi/internal.h", "#include <stdint.h>\n")
    write(tmp_path, "kernels/cpu/engine/a.h", '#include "internal.h"\n')
    write(tmp_path, "kernels/cpu/ops/c.c", '#include "engine/a.h"\n#include "engine/a.h"\n')
    assert tool.check(tmp_path) == []
    assert tool.main(["--root", str(tmp_path)]) == 0
