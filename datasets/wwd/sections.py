"""World Wide Dishes report sections, each declared by its task class
(``Task.report_sections``): failure-mode keyword rates per continent (Table H.10,
``description``), VQA answer-share plots (App. F, ``vqa-probes``) and the descriptor-score
plot (App. G, ``clip-descriptors``); the task metric per continent comes from the generic
tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def failure_mode_sections(results: dict[str, Any], folder: Path, rel: str) -> list[str]:
    """Table H.10 style: failure-mode keyword rates per continent, per prompt language."""
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


def vqa_sections(results: dict[str, Any], folder: Path, rel: str) -> list[str]:
    """Figs. F.9-F.14 style: per question, answer shares per region, one panel per T2I model."""
    import re
    from collections import defaultdict

    from culturebench.eval.plots import plot_stacked_shares

    metrics = results["metrics"]
    panels: dict[str, dict[str, dict[str, dict[str, float]]]] = defaultdict(lambda: defaultdict(dict))
    for key, row in metrics.get("distribution", {}).items():
        qid, region, model = key.split(" | ", 2)
        panels[qid][model][region] = row
    lines = ["### Answer shares per question (App. F)", ""]
    for qid, info in metrics.get("questions", {}).items():
        labels = {letter: f"{letter}: {text}" for letter, text in info["choices"].items()}
        labels["unparsed"] = "unparsed"
        name = "vqa_" + re.sub(r"[^A-Za-z0-9]+", "_", qid) + ".png"
        plot_stacked_shares(panels.get(qid, {}), labels, folder / name, title=f"{qid}: {info['text']}")
        lines += [f"![{qid}]({rel}/{name})", ""]
    return lines


def clip_sections(results: dict[str, Any], folder: Path, rel: str) -> list[str]:
    if not (folder / "descriptor_scores.png").is_file():
        return []
    return [
        "### Descriptor scores per continent x model (Fig. 8 style)",
        "",
        f"Net score: {results['metrics'].get('net_score')}; min-max normalised to [-1, 1] over all images "
        f"scored together. Table: `descriptor_scores.csv`.",
        "",
        f"![descriptor scores]({rel}/descriptor_scores.png)",
        "",
    ]
