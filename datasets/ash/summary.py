"""CulinaryASH summary over several ``judge`` runs (one per generator x judge pair): mean and SD
per pair and criterion (the paper's Figure 1 heatmaps, as PNG), top/bottom cuisines over all
pairs (Table 2), and inter-judge agreement.

Agreement is Krippendorff's alpha at the interval level (ratings 1-5 treated as equally spaced;
missing ratings allowed): per criterion over all judges, and per judge pair averaged over the
criteria (the paper's Figure 4 view). A unit is one (instruction, generator) recipe; a judge's
value for it is the mean of its repeats.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from itertools import combinations
from pathlib import Path
from statistics import mean
from typing import Any

from culturebench.datasets.ash.tasks import CRITERIA, ranked_cuisines, summary
from culturebench.errors import CultureBenchError, Location, SourceError
from culturebench.eval.agreement import interval_alpha
from culturebench.eval.records import RunInfo
from culturebench.eval.run_folder import RUN, SAMPLES, read_run
from culturebench.inputs import read_json, read_jsonl
from culturebench.jsonsafe import json_text


def load_judge_runs(folders: Sequence[str | Path]) -> list[dict[str, Any]]:
    """Every scored judge sample of the folders, tagged with its judge's name.

    ``run.json`` and ``samples.jsonl`` are read strictly (:mod:`culturebench.inputs`: UTF-8,
    no key twice in an object, no deep nesting, no sample id twice, no torn line); a sample
    without its generator, cuisine, row id or ratings (an integer 1-5 or null), and the same
    judge's sample in two folders (a run given twice), are errors naming file, line, field."""
    out = []
    first: dict[tuple[str, str], str] = {}
    for folder in map(Path, folders):
        run = _read_run(folder)
        judge = Path(run["model"]["model"].rstrip("/")).name
        path = folder / SAMPLES
        records = read_jsonl(path, what="a samples file", name=str(path), unique_key="id")
        if not records:
            raise CultureBenchError(f"{folder}: no samples ({SAMPLES} is empty)")
        for number, sample in records:
            _check_sample(sample, str(path), number)
            key = (judge, sample["id"])
            where = f"{path}, line {number}"
            if key in first:
                raise SourceError(
                    Location(str(path), number, "id"),
                    f"judge {judge!r} rated {sample['id']!r} already ({first[key]}): the same run "
                    "given twice? its ratings would count twice",
                )
            first[key] = where
            out.append({**sample, "judge": judge})
        if all(sample[c] is None for _, sample in records for c in CRITERIA):
            raise CultureBenchError(
                f"{path}: judge {judge!r} rated nothing (every {', '.join(CRITERIA)} of its "
                f"{len(records)} samples is null: a failed judge run? see its run.json)"
            )
    return out


def _read_run(folder: Path) -> RunInfo:
    """``run.json`` of an ash judge run, read strictly, then checked by the runner."""
    path = folder / RUN
    if path.is_file():
        read_json(path, what="a run file", name=str(path))  # encoding, duplicate keys, nesting
    run = read_run(folder)  # missing, not an object, no dataset/task
    if run["dataset"].get("dataset") != "ash" or run["task"] != "judge":
        raise CultureBenchError(f"{folder} is not an ash judge run")
    model = run.get("model")
    if (
        not isinstance(model, dict)
        or not isinstance(model.get("model"), str)
        or not model["model"].strip("/")
    ):
        raise SourceError(Location(str(path), None, "model"), "no model id (model.model)")
    return run


def _check_sample(sample: dict[str, Any], file: str, line: int) -> None:
    for field in ("row_id", "generator", "cuisine"):
        if not isinstance(sample.get(field), str) or not sample[field]:
            raise SourceError(Location(file, line, field), "missing, or not a non-empty string")
    for criterion in CRITERIA:
        if criterion not in sample:
            raise SourceError(Location(file, line, criterion), "missing (not a scored judge sample)")
        value = sample[criterion]
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 5
        ):
            raise SourceError(Location(file, line, criterion), f"{value!r} is not an integer 1-5 or null")


def summarize(folders: Sequence[str | Path], out_dir: str | Path) -> dict[str, Any]:
    """Write ``ash_summary.json`` and one heatmap PNG per criterion to ``out_dir``."""
    samples = load_judge_runs(folders)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    generators = sorted({s["generator"] for s in samples})
    judges = sorted({s["judge"] for s in samples})
    result: dict[str, Any] = {"generators": generators, "judges": judges, "criteria": {}}
    pair_alpha: dict[str, list[float]] = defaultdict(list)
    for criterion in CRITERIA:
        cells: dict[str, dict[str, Any]] = {}
        for g in generators:
            for j in judges:
                values = [s[criterion] for s in samples if s["generator"] == g and s["judge"] == j]
                rated = [v for v in values if v is not None]
                cells[f"{g}|{j}"] = {**summary(rated), "missing": len(values) - len(rated)}
        per_cuisine: dict[str, list[int]] = defaultdict(list)
        units: dict[tuple[str, str], dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
        for s in samples:
            if s[criterion] is not None:
                per_cuisine[s["cuisine"]].append(s[criterion])
                units[(s["row_id"], s["generator"])][s["judge"]].append(s[criterion])
        unit_means = {k: {j: mean(v) for j, v in per.items()} for k, per in units.items()}
        for a, b in combinations(judges, 2):
            value = interval_alpha(unit_means, [a, b])
            if value is not None:
                pair_alpha[f"{a}|{b}"].append(value)
        result["criteria"][criterion] = {
            "cells": cells,
            **ranked_cuisines(per_cuisine),
            "alpha_interval_all_judges": interval_alpha(unit_means, judges),
        }
        plot_heatmap(cells, generators, judges, out / f"heatmap_{criterion}.png", criterion)
    result["alpha_interval_judge_pairs"] = {k: mean(v) for k, v in sorted(pair_alpha.items())}
    (out / "ash_summary.json").write_text(json_text(result, indent=2), encoding="utf-8")
    return result


def plot_heatmap(
    cells: dict[str, dict[str, Any]], generators: list[str], judges: list[str], path: Path, title: str
) -> None:
    """Generator (rows) x judge (columns) mean rating with the SD in each cell."""
    from culturebench.eval.plots import plot_heatmap as heatmap

    values = [[cells[f"{g}|{j}"]["mean"] for j in judges] for g in generators]
    texts = [
        [
            f"{c['mean']:.2f}" + (f"\n±{c['sd']:.2f}" if c["sd"] is not None else "")
            if c["mean"] is not None
            else ""
            for c in (cells[f"{g}|{j}"] for j in judges)
        ]
        for g in generators
    ]
    heatmap(
        values,
        generators,
        judges,
        path,
        title=f"{title}: mean (±SD)",
        vmin=1,
        vmax=5,
        label="mean rating (1-5)",
        texts=texts,
        cmap="RdYlGn",
        axis_labels=("generator", "judge"),
    )
