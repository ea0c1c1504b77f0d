"""The harness's outputs: a text table, the JSON document and PNG charts (matplotlib)."""

from __future__ import annotations

import json
import os
from typing import Any

__all__ = ["table", "write_json", "charts"]

_PEERS = ("numpy", "torch", "jax", "machine")
# Peers only some cases have (torch's own op through torch.ops, torch.compile): their columns
# follow torch's.
_MORE_PEERS = ("torch.aten", "torch.compile")
_CTENSOR = ("ctensor", "ctensor.bind", "ctensor.opencl")
# How the speedups and targets of each ctensor implementation are labelled.
_TAGS = {"ctensor": "", "ctensor.bind": "bind ", "ctensor.opencl": "opencl "}


def _value(record: dict, name: str) -> str:
    entry = record["results"].get(name)
    check = record["checks"].get(name, {})
    if check.get("status") in ("wrong", "error"):
        return check["status"].upper()
    if not entry:
        return "-"
    if "error" in entry:
        return "ERROR"
    if record["unit"] == "ns":
        return f"{entry['median_s'] * 1e9:.0f}"
    return f"{entry['throughput']:.3g}"


def _speedups(record: dict) -> str:
    parts = []
    for impl, ratios in record["speedup"].items():
        if impl == "ctensor.opencl":
            # its ratios to the peers are in the JSON; the table sets it beside the CPU backend
            if "ctensor" in ratios:
                parts.append(f"opencl {ratios['ctensor']:.3g}x cpu")
            continue
        tag = _TAGS.get(impl, f"{impl} ")
        for peer, ratio in ratios.items():
            parts.append(f"{tag}{ratio:.2f}x {peer}")
    return ", ".join(parts)


def _targets(record: dict) -> str:
    parts = []
    for t in record["targets"]:
        who = f"{_TAGS.get(t['impl'], t['impl'] + ' ').strip()}: " if t["impl"] != "ctensor" else ""
        ratio = "n/a" if t["ratio"] is None else f"{t['ratio']:.2f}"
        parts.append(f"{who}{t['text']}: {ratio} {'met' if t['met'] else 'MISSED'}")
    return "; ".join(parts)


def table(document: dict) -> str:
    """Medians per implementation (throughput in the case's unit, or ns per call), speedups of
    ctensor over each peer (peer time / ctensor time; for ctensor.opencl, CPU ctensor time /
    OpenCL time) and targets. A line above the table says
    why the ctensor.opencl column is absent, when it is."""
    records = document["cases"]
    names = [*_CTENSOR, *_PEERS[:2], *_MORE_PEERS, *_PEERS[2:]]
    used = [n for n in names if any(n in r["results"] or n in r["checks"] for r in records)]
    widths = {n: max(12, len(n)) for n in used}
    width = max([len(r["name"]) for r in records] + [4])
    header = f"{'case':<{width}}  {'unit':<7}" + "".join(f"  {n:>{widths[n]}}" for n in used)
    lines = []
    opencl = document.get("meta", {}).get("opencl")
    if opencl:
        state = "on" if opencl["available"] else "not run:"
        lines.append(f"ctensor.opencl {state} {opencl['detail']}")
    lines += [header + "  speedup (peer time / ctensor time) | target", "-" * len(header)]
    for r in records:
        row = f"{r['name']:<{width}}  {r['unit']:<7}"
        row += "".join(f"  {_value(r, n):>{widths[n]}}" for n in used)
        extra = _speedups(r)
        targets = _targets(r)
        if targets:
            extra = f"{extra} | {targets}" if extra else f"| {targets}"
        lines.append(f"{row}  {extra}".rstrip())
        for name, check in r["checks"].items():
            if check["status"] != "ok":
                lines.append(f"{'':<{width}}  {name}: {check['status']}: {check['detail']}")
    for a in document.get("accuracy", []):
        detail = ", ".join(
            f"{row['input']}: ctensor {row['ctensor_rel_error']:.2e} vs NumPy "
            f"{row['numpy_rel_error']:.2e}"
            for row in a["rows"]
        )
        lines.append(
            f"{a['name']:<{width}}  {a['target']}: {'met' if a['met'] else 'MISSED'} ({detail})"
        )
    summary = document.get("summary", {})
    if summary:
        lines.append("")
        lines.append(f"targets met: {summary['met']} of {summary['total']}")
    return "\n".join(lines)


def write_json(document: dict, path: str) -> None:
    """Writes the run to path, making its directory first (a run takes minutes: a missing
    directory must not lose it)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(document, f, indent=1)
        f.write("\n")


def charts(document: dict, directory: str) -> list[str]:
    """One PNG per case group (bars per implementation, log scale for ns) and one of the
    targets (measured ratio over the threshold; 1.0 is the line to reach). Returns the paths;
    raises ImportError when matplotlib is missing."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(directory, exist_ok=True)
    written = []
    groups: dict[str, list[dict]] = {}
    for record in document["cases"]:
        groups.setdefault(record["group"], []).append(record)
    colors = {
        "ctensor": "#d62728",
        "ctensor.bind": "#ff9896",
        "ctensor.opencl": "#9467bd",
        "numpy": "#1f77b4",
        "torch": "#ff7f0e",
        "torch.aten": "#ffbb78",
        "torch.compile": "#8c564b",
        "jax": "#2ca02c",
        "machine": "#7f7f7f",
    }
    for group, records in groups.items():
        impls = [
            n
            for n in colors
            if any(n in r["results"] and "median_s" in r["results"][n] for r in records)
        ]
        if not impls:
            continue
        # at least 1.5 inches: a group of one case and two implementations still fits its
        # title and axis label
        height_in = max(1.5, 0.5 + 0.45 * len(records) * max(1, len(impls)) / 2)
        fig, ax = plt.subplots(figsize=(10, height_in))
        height = 0.8 / len(impls)
        for k, impl in enumerate(impls):
            values, positions = [], []
            for i, r in enumerate(records):
                entry = r["results"].get(impl, {})
                value = (
                    entry.get("median_s", 0) * 1e9
                    if r["unit"] == "ns"
                    else entry.get("throughput", 0)
                )
                values.append(value or 0)
                positions.append(i + k * height)
            ax.barh(positions, values, height=height, label=impl, color=colors[impl])
        ax.set_yticks([i + 0.4 - height / 2 for i in range(len(records))])
        ax.set_yticklabels([f"{r['name']} [{r['unit']}]" for r in records], fontsize=8)
        ax.invert_yaxis()
        unit = records[0]["unit"]
        ax.set_xlabel(
            "ns per call (lower is better)"
            if unit == "ns"
            else f"{'/'.join(sorted({r['unit'] for r in records}))} (higher is better)"
        )
        if unit == "ns":
            ax.set_xscale("log")
        ax.legend(fontsize=8, loc="best")
        ax.set_title(f"{group} - {document['meta']['date']}, {document['meta']['threads']} threads")
        fig.tight_layout()
        path = os.path.join(directory, f"{group}.png")
        fig.savefig(path, dpi=90, bbox_inches="tight")
        plt.close(fig)
        written.append(path)
    targets = [
        (
            f"{r['name']}{'' if t['impl'] == 'ctensor' else ' (' + t['impl'] + ')'}: {t['text']}",
            (t["ratio"] or 0) / t["threshold"],
            t["met"],
        )
        for r in document["cases"]
        for t in r["targets"]
    ]
    if targets:
        fig, ax = plt.subplots(figsize=(10, 0.5 + 0.3 * len(targets)))
        ax.barh(
            range(len(targets)),
            [v for _, v, _ in targets],
            color=["#2ca02c" if met else "#d62728" for _, _, met in targets],
        )
        ax.axvline(1.0, color="black", linewidth=1)
        ax.set_yticks(range(len(targets)))
        ax.set_yticklabels([label for label, _, _ in targets], fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("measured / target (>= 1 is met)")
        ax.set_title("targets")
        fig.tight_layout()
        path = os.path.join(directory, "targets.png")
        fig.savefig(path, dpi=90, bbox_inches="tight")
        plt.close(fig)
        written.append(path)
    return written


def summarize(document: dict) -> dict[str, Any]:
    """Counts of targets met (case targets and the accuracy target)."""
    flags = [t["met"] for r in document["cases"] for t in r["targets"]]
    flags += [a["met"] for a in document.get("accuracy", [])]
    return {"met": sum(flags), "total": len(flags)}
