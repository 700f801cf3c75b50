"""Tables 2 and 3 of the World Wide Dishes paper (§3.1) from the authors' published
community-review responses (``Community_Review_Generated_Dish_Images.csv``), compared cell
by cell with the printed tables (``paper.yaml`` ``results.community_review``, the only place
they are written). ``culturebench eval paper wwd --input reviews=CSV`` (items Table 2 and
Table 3) computes them; ``culturebench eval wwd-community-review`` is that item, writing the
tables with :func:`write_outputs`.

Aggregation per country x model, the one that reproduces the printed cells where the
published file and the paper agree (Cameroon, Kenya and Nigeria):

* % food generated: "Is this an image of food?" = Yes, among all reviews (a blank answer
  counts as no: with Yes/No answers only, Kenya DALL-E 3 would miss its printed cell);
* % correct food: "Is this an image of the dish_name" = Yes, among all reviews (a review
  that stopped after "not food" left it blank and counts as not correct);
* % image quality: ``Good_quality`` = Yes, among Yes/No;
* % disturbing / % unappetising: ``Disturbing`` / ``Unappetising_combined`` = Yes, among all.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from culturebench.errors import Location, SourceError

MODELS = ("Dalle2", "Dalle3", "Stable Diffusion")
COUNTRIES = ("Algeria", "Cameroon", "Kenya", "Nigeria", "South Africa", "United States")
#: metric -> (column, denominator: "answered" = Yes/No answers only, "all" = every review)
METRICS = {
    "food_generated": ("Is this an image of food?", "all"),
    "correct_food": ("Is this an image of the dish_name", "all"),
    "image_quality": ("Good_quality", "answered"),
    "disturbing": ("Disturbing", "all"),
    "unappetising": ("Unappetising_combined", "all"),
}


#: a review's natural key: one reviewer (ids are per country) rates one generated image (a
#: dish's ``Generation_count``-th image of a model) once; the published file has no key twice
REVIEW_KEY = ("Country", "Rater_id", "Dish name", "Model", "Generation_count")


def read_reviews(path: Path) -> tuple[list[dict[str, str]], int]:
    """The reviews with a model (rows without one are counted and left out).

    Read strictly (:func:`culturebench.inputs.read_csv_records`: UTF-8, no column twice);
    a review given twice (:data:`REVIEW_KEY`) is an error naming both rows, since it would
    count twice in every share."""
    from culturebench.inputs import read_csv_records

    path = Path(path)
    required = [*dict.fromkeys([*REVIEW_KEY, *(column for column, _ in METRICS.values())])]
    records = read_csv_records(path, what="the community-review CSV", required=required)
    kept: list[dict[str, str]] = []
    first: dict[tuple[str, ...], int] = {}
    for number, row in records:
        if not row["Model"].strip():
            continue
        key = tuple(row[column].strip() for column in REVIEW_KEY)
        if key in first:
            raise SourceError(
                Location(path.name, number, "Rater_id"),
                f"reviewer {key[1]!r} of {key[0]} reviewed {key[2]!r} ({key[3]}, image {key[4]!r}) "
                f"twice (rows {first[key]} and {number}); the review would count twice",
            )
        first[key] = number
        kept.append(row)
    if not kept:
        raise SourceError(Location(path.name), "no reviews (no row with a model)")
    return kept, len(records) - len(kept)


def tables(rows: list[dict[str, str]]) -> dict[str, dict[str, dict[str, dict[str, Any]]]]:
    """metric -> country -> model -> {value, n}."""
    groups: dict[tuple[str, str], list[dict[str, str]]] = defaultdict(list)
    for row in rows:
        groups[(row["Country"].strip(), row["Model"].strip())].append(row)
    out: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    for metric, (column, denominator) in METRICS.items():
        for (country, model), group in sorted(groups.items()):
            answers = [r[column].strip() for r in group]
            pool = [a for a in answers if a in ("Yes", "No")] if denominator == "answered" else answers
            value = sum(a == "Yes" for a in pool) / len(pool) if pool else None
            out.setdefault(metric, {}).setdefault(country, {})[model] = {"value": value, "n": len(pool)}
    return out


def compare_with_paper(ours: dict[str, Any], published: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per printed cell of ``published`` (``paper.yaml`` ``results.community_review``):
    paper, ours (3 decimals), equal or not."""
    rows = []
    for table in ("table2", "table3"):
        for metric, by_country in published[table].items():
            for country, values in by_country.items():
                for model, paper in zip(MODELS, values, strict=True):
                    cell = ours.get(metric, {}).get(country, {}).get(model, {})
                    value = cell.get("value")
                    # rounded like pandas/numpy (half to even on the binary value): Kenya SD
                    # 26/160 = .1625 rounds to .162
                    mine = None if value is None else float(np.round(value, 3))
                    rows.append(
                        {
                            "table": table,
                            "metric": metric,
                            "country": country,
                            "model": model,
                            "paper": paper,
                            "ours": mine,
                            "n": cell.get("n"),
                            "equal": mine is not None and abs(mine - paper) < 0.0005,
                        }
                    )
    return rows


def write_outputs(ours: dict[str, Any], comparison: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    """``table2.csv``, ``table3.csv`` (the paper's layout) and ``comparison.csv``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, metrics in (
        ("table2", ("food_generated", "correct_food", "image_quality")),
        ("table3", ("disturbing", "unappetising")),
    ):
        path = out_dir / f"{name}.csv"
        with open(path, "w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(["country", *(f"{m} {model}" for m in metrics for model in MODELS)])
            for country in COUNTRIES:
                cells = []
                for metric in metrics:
                    for model in MODELS:
                        value = ours.get(metric, {}).get(country, {}).get(model, {}).get("value")
                        cells.append("" if value is None else f"{value:.3f}")
                writer.writerow([country, *cells])
        written.append(path)
    path = out_dir / "comparison.csv"
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(comparison[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(comparison)
    return [*written, path]
