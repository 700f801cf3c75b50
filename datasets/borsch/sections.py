"""BORSCH report sections, each declared by its task class (``Task.report_sections``): the
Figure-4 over-prediction summary and the confusion matrices (§4, origin tasks), the §5
reference frame and heat map (``description-scores``), Tables 3-4 and the scatter plots
(``description-correlations``). Headline metrics and the per-country tables come from the
generic report."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from culturebench.eval.plots import plot_confusion, plot_grouped_bars


def origin_sections(results: dict[str, Any], folder: Path, rel: str) -> list[str]:
    """§4 (country of origin): the Figure-4 over-prediction summary and bars, and one
    multi-label confusion matrix over the post-Soviet countries per prompt language."""
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


def description_sections(
    results: dict[str, Any], folder: Path, rel: str, countries_in_order: Sequence[str]
) -> list[str]:
    """§5: the reference frame and the Fig. 8 heat map (language x origin country, the
    countries of ``countries_in_order`` that have scores)."""
    from culturebench.eval.plots import plot_heatmap

    metrics = results["metrics"]
    ref = metrics["reference"]
    langs = [k for k in ("ru", "uk") if isinstance(metrics.get(k), dict)]
    countries = [c for c in countries_in_order if any(c in metrics[lang]["per_country"] for lang in langs)]
    values = [
        [metrics[lang]["per_country"].get(c, {}).get("score_mean") for c in countries] for lang in langs
    ]
    texts = [
        [
            f"{v:.2f}\nn={metrics[lang]['per_country'][c]['n']}" if v is not None else ""
            for c, v in zip(countries, row, strict=True)
        ]
        for lang, row in zip(langs, values, strict=True)
    ]
    plot_heatmap(
        values, [f"prompt {lang}" for lang in langs], countries, folder / "description_scores.png",
        title="Mean DINOv2 cosine, generated vs release images (Fig. 8)", vmin=0.0, vmax=1.0,
        label="mean cosine", texts=texts, axis_labels=("language", "origin country"),
    )  # fmt: skip
    return [
        f"Reference frame over the release's {ref['n_images']} images of {ref['n_dishes']} dishes: "
        f"intra-dish mean cosine {_num(ref['intra_dish'])} ({ref['pairs']['intra_dish']} pairs), inter-dish "
        f"{_num(ref['inter_dish'])} ({ref['pairs']['inter_dish']} pairs); {_paper_frame()}. "
        "Rows without embedded images skipped: "
        f"{metrics.get('n_skipped_no_ground_truth', 0)}. Per dish: `description_scores.csv`.",
        "",
        f"![description scores]({rel}/description_scores.png)",
        "",
    ]


def _paper_frame() -> str:
    """The paper's §5 reference frame, from ``paper.yaml`` (the one place it is written)."""
    from culturebench import registry
    from culturebench.cards.paper import read_catalogue

    results = (read_catalogue(registry.get("borsch").folder) or {}).get("results") or {}
    frame = results.get("reference_frame")
    if not frame:
        return "the paper's frame: not in paper.yaml"
    return f"the paper: {frame['intra_dish']:.2f} and {frame['inter_dish']:.2f} with {frame['model']}"


def correlation_sections(results: dict[str, Any], folder: Path, rel: str) -> list[str]:
    """App. J: Table 4 (vs QA/VQA), Table 3 (vs human ratings) and the scatter plots."""
    import json

    from culturebench.eval.plots import plot_scatter

    metrics = results["metrics"]
    lines: list[str] = []
    symbols = {"pearson": "r", "spearman": "rho", "kendall": "tau", "lin_ccc": "Lin's rho_c"}
    for key, label in (("vs_qa", "QA"), ("vs_vqa", "VQA")):
        table = metrics.get(key)
        if not table:
            continue
        langs = [k for k in ("ru", "uk") if k in table]
        lines += [
            f"### Description score vs {label} set overlap (Table 4; {label} model {table['model']}, "
            f"same as the describer: {table['same_model_as_describer']})",
            "",
            "| | " + " | ".join(langs) + " |",
            "| --- |" + " ---: |" * len(langs),
        ]
        for metric in ("jaccard", "dice", "overlap"):
            for stat in ("pearson", "spearman", "kendall"):
                cells = [_num(table[lang][metric][stat]) for lang in langs]
                lines.append(f"| {label} {metric.title()} {symbols[stat]} | " + " | ".join(cells) + " |")
        lines.append("| n dishes | " + " | ".join(str(table[lang]["jaccard"]["n"]) for lang in langs) + " |")
        lines.append("")
    human = metrics.get("vs_human")
    if human:
        langs = [k for k in ("ru", "uk") if k in human]
        lines += ["### Description score vs human ratings (Table 3)", "", "| | " + " | ".join(langs) + " |",
                  "| --- |" + " ---: |" * len(langs)]  # fmt: skip
        for stat in ("pearson", "spearman", "kendall", "lin_ccc"):
            lines.append(
                f"| {symbols[stat]} | " + " | ".join(_num(human[lang][stat]) for lang in langs) + " |"
            )
        lines += ["| n | " + " | ".join(str(human[lang]["n"]) for lang in langs) + " |", ""]
    scatter_path = folder / "scatter.json"
    scatter = json.loads(scatter_path.read_text(encoding="utf-8")) if scatter_path.is_file() else {}
    for kind, xlabel in (("qa", "QA Jaccard"), ("vqa", "VQA Jaccard"), ("human", "human rating")):
        series = {
            k.split("_", 1)[1]: [tuple(p[:2]) for p in v]
            for k, v in scatter.items()
            if k.startswith(kind + "_")
        }
        if series:
            name = f"scatter_{kind}.png"
            title = "Fig. 9" if kind != "human" else "Fig. 15"
            plot_scatter(series, folder / name, title=f"Description score vs {xlabel} ({title})",
                         xlabel=xlabel, ylabel="DINOv2 cosine (mean)")  # fmt: skip
            lines += [f"![{kind}]({rel}/{name})", ""]
    return lines


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"
