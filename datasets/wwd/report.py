"""World Wide Dishes report sections: failure-mode keyword rates per continent (Table H.10);
the task metric per continent comes from the generic tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def sections(results: dict[str, Any], folder: Path, rel: str) -> list[str]:
    """Extra report lines for a World Wide Dishes result."""
    lines: list[str] = []
    for lang, m in results["metrics"].items():
        modes = m.get("failure_modes", {}) if isinstance(m, dict) else {}
        if not modes:
            continue
        lines += [f"Failure-mode keyword rates ({lang}, % of descriptions, mean ± SEM per continent):", ""]
        for mode, per in modes.items():
            cells = ", ".join(f"{c} {100 * e['mean']:.2f}±{100 * e['sem']:.2f}" for c, e in per.items())
            lines.append(f'- "{mode}": {cells}')
        lines.append("")
    return lines


def summary_files(results_by_task, out_dir):
    """Files summarising several scored tasks (``table_h9.csv``, the authors' layout)."""
    from culturebench.datasets.wwd.table_h9 import summary_files as write

    return write(results_by_task, out_dir)
