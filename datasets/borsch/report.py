"""BORSCH report sections: the Figure-4 over-prediction summary and bars, and the multi-label
confusion matrices over the post-Soviet countries (paper, Section 4). Headline metrics and
the per-country tables come from the generic report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from culturebench.eval.plots import plot_confusion, plot_grouped_bars


def sections(results: dict[str, Any], folder: Path, rel: str) -> list[str]:
    """Extra report lines for a BORSCH result (the generic tables come first)."""
    metrics = results["metrics"]
    if not metrics or not all(isinstance(m, dict) and "over_prediction" in m for m in metrics.values()):
        return []
    lines: list[str] = []
    for lang, m in metrics.items():
        over = m["over_prediction"]
        lines += [
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
            m["confusion"],
            folder / f"confusion_{lang}.png",
            f"{results['provenance']['task']} ({lang})",
            row_label="true origin",
        )
    langs = list(metrics)
    plot_grouped_bars(
        {
            f"predicts {code}": [metrics[lang]["over_prediction"][f"predicts_{code}"] for lang in langs]
            for code in ("RU", "UA")
        },
        [f"prompt {lang}" for lang in langs],
        folder / "over_prediction.png",
        title="Dishes from both Russia and Ukraine",
        ylabel="share of answers",
    )
    return [*lines, f"![over-prediction]({rel}/over_prediction.png)", ""]


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"
