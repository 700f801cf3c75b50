"""Reports over one or more result folders: Markdown tables (per language, per country, with
bootstrap 95% CIs) and PNG plots (multi-label confusion matrices, Figure-4 style
over-prediction bars)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from culturebench.eval.tasks.borsch import POST_SOVIET


def _fmt(entry: dict[str, Any]) -> str:
    lo, hi = entry["ci95"]
    return f"{entry['mean']:.3f} [{lo:.3f}, {hi:.3f}]"


def _header(results: dict[str, Any]) -> list[str]:
    prov = results["provenance"]
    ds = prov["dataset"]
    pin = ds["commit_sha"] or f"manifest sha256 {ds['manifest_sha256']}"
    model = prov["model"]
    return [
        f"## {ds['dataset']} / {prov['task']} / {model['model']} ({model['backend']})",
        "",
        f"- dataset: {ds['location']} @ {pin} (version {ds.get('version')})",
        f"- model revision: {model.get('model_revision')}; weights sha256: {model.get('weights_sha256')}",
        f"- sampling: {model['sampling']}; samples: {results['samples']}",
        f"- skipped rows: {results['skipped_rows']}",
        f"- culturebench: {prov.get('culturebench_git')}",
        "",
    ]


def _origin_sections(results: dict[str, Any], folder: Path, rel: str) -> list[str]:
    lines = [
        "| language | n | Jaccard | Dice | Overlap | no country named |",
        "| --- | ---: | --- | --- | --- | ---: |",
    ]
    for lang, m in results["metrics"].items():
        lines.append(
            f"| {lang} | {m['n']} | {_fmt(m['jaccard'])} | {_fmt(m['dice'])} | {_fmt(m['overlap'])} | "
            f"{m['no_country_rate']:.3f} |"
        )
    lines.append("")
    for lang, m in results["metrics"].items():
        lines += [
            f"### {lang}: Jaccard per gold country (95% CI)",
            "",
            "| country | n | Jaccard |",
            "| --- | ---: | --- |",
        ]
        per = m["per_country"]
        ordered = [c for c in POST_SOVIET if c in per] + [c for c in per if c not in POST_SOVIET]
        for code in ordered:
            e = per[code]
            lines.append(
                f"| {code} | {e['n']} | {e['jaccard']:.3f} [{e['ci95'][0]:.3f}, {e['ci95'][1]:.3f}] |"
            )
        over = m["over_prediction"]
        lines += [
            "",
            f"Over-prediction ({lang}): on {over['ru_ua_dishes']} answers about dishes from both Russia "
            f"and Ukraine, Russia named in {_pct(over['predicts_RU'])}, Ukraine in "
            f"{_pct(over['predicts_UA'])}, both in {_pct(over['predicts_both'])}; "
            f"{over['language_country']} named for dishes not from it: "
            f"{_pct(over['false_language_country_rate'])}.",
            "",
            f"![confusion {lang}]({rel}/confusion_{lang}.png)",
            "",
        ]
        plot_confusion(
            m["confusion"], folder / f"confusion_{lang}.png", f"{results['provenance']['task']} ({lang})"
        )
    plot_over_prediction(results["metrics"], folder / "over_prediction.png")
    lines += [f"![over-prediction]({rel}/over_prediction.png)", ""]
    return lines


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _name_sections(results: dict[str, Any]) -> list[str]:
    lines = ["| language | n | accuracy (within 1 edit) |", "| --- | ---: | --- |"]
    for lang, m in results["metrics"].items():
        lines.append(f"| {lang} | {m['n']} | {_fmt(m['accuracy'])} |")
    return [*lines, ""]


def _continent_sections(results: dict[str, Any]) -> list[str]:
    """World Wide Dishes: the task metric per continent, mean ± standard error (Table H.9/H.10)."""
    lines: list[str] = []
    for lang, m in results["metrics"].items():
        metric = next(k for k, v in m.items() if isinstance(v, dict) and "sem" in v)
        overall = m[metric]
        lines += [
            f"{metric} ({lang}): {100 * overall['mean']:.1f} ± {100 * overall['sem']:.1f} % (n={m['n']})",
            "",
            "| continent | dishes | " + metric + " (%) |",
            "| --- | ---: | --- |",
        ]
        for continent, e in m["per_continent"].items():
            lines.append(f"| {continent} | {e['n']} | {100 * e['mean']:.1f} ± {100 * e['sem']:.1f} |")
        lines.append("")
        for mode, per in m.get("failure_modes", {}).items():
            cells = ", ".join(f"{c} {100 * e['mean']:.2f}±{100 * e['sem']:.2f}" for c, e in per.items())
            lines.append(f'- "{mode}" rate (%): {cells}')
        lines.append("")
    return lines


def plot_confusion(confusion: dict[str, Any], path: Path, title: str) -> None:
    """Row-normalised multi-label confusion matrix as a heat map."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matrix = confusion["matrix"]
    norm = [[v / max(1, sum(row)) for v in row] for row in matrix]
    fig, ax = plt.subplots(figsize=(8, 7))
    ax.imshow(norm, cmap="Blues", vmin=0, vmax=1)
    ax.set_xticks(range(len(confusion["columns"])), confusion["columns"], rotation=90)
    ax.set_yticks(range(len(confusion["labels"])), confusion["labels"])
    ax.set_xlabel("predicted")
    ax.set_ylabel("true origin")
    ax.set_title(title)
    for i, row in enumerate(matrix):
        for j, value in enumerate(row):
            if value:
                ax.text(j, i, str(value), ha="center", va="center", fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)


def plot_over_prediction(metrics: dict[str, Any], path: Path) -> None:
    """Figure 4: share of answers naming Russia / Ukraine for dishes from both, per language."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    langs = list(metrics)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    width = 0.35
    for k, code in enumerate(("RU", "UA")):
        values = [metrics[lang]["over_prediction"][f"predicts_{code}"] or 0.0 for lang in langs]
        ax.bar([i + (k - 0.5) * width for i in range(len(langs))], values, width, label=f"predicts {code}")
    ax.set_xticks(range(len(langs)), [f"prompt {lang}" for lang in langs])
    ax.set_ylim(0, 1)
    ax.set_ylabel("share of answers")
    ax.set_title("Dishes from both Russia and Ukraine")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)


def _metric_sections(results: dict[str, Any]) -> list[str]:
    """RuBIN, FoodieQA, CulinaryASH: headline numbers, then every metric as JSON."""
    metrics = results["metrics"]
    lines = []
    for key in ("accuracy", "na_rate", "unparseable", "n", "format_ok_rate", "unparseable_outputs"):
        if key in metrics:
            value = metrics[key]
            lines.append(f"- {key}: {value:.4f}" if isinstance(value, float) else f"- {key}: {value}")
    lines += ["", "```json", json.dumps(metrics, ensure_ascii=False, indent=1, sort_keys=True), "```", ""]
    return lines


def write_report(folders: Sequence[str | Path], path: str | Path) -> Path:
    """Write a Markdown report covering every result folder (plots go beside each result)."""
    from culturebench.eval.runner import read_results

    out = Path(path)
    lines = ["# culturebench evaluation report", ""]
    for folder in map(Path, folders):
        results = read_results(folder)
        lines += _header(results)
        if results["provenance"]["dataset"]["dataset"] in ("rubin", "foodieqa", "ash"):
            lines += _metric_sections(results)
        elif results["provenance"]["dataset"]["dataset"] == "wwd":
            lines += _continent_sections(results)
        elif results["provenance"]["task"] == "dish-name-vqa":
            lines += _name_sections(results)
        elif results["samples"]:
            lines += _origin_sections(results, folder, Path(os.path.relpath(folder, out.parent)).as_posix())
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out
