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

The other 38 printed cells (Algeria 14, the United States 13, South Africa 11) are the three
countries whose reviews per model in the published file are not Table E.7's (Algeria 530 vs
910, the United States 915 vs 1,250, South Africa 1,495 vs 1,470). Traced against every
aggregation the paper allows (leaving out reviewers with one dish or the fewest reviews down to
E.7's reviewer count, reviews outside the 30-dish suites, incomplete reviews; blank answers as
no or left out; per-reviewer, per-dish or per-image means; "yes" read from ``Image_match``,
the rating or the free text; half-up rounding or truncation; reviews counted twice), none
reproduces them without breaking Cameroon, Kenya or Nigeria: 21 of the 27 Algeria and US
cells are no k/n at all at the file's n, while all 27 are k/n at E.7's n (the paper counted
reviews the file lacks; the §3.1 text's Algeria and US disturbing averages, 6.8% and 3.1%,
are those of the printed cells). In South Africa, leaving out reviewer 8 (5 DALL-E 2 reviews
of one dish) gives E.7's 455 and all five DALL-E 2 cells, and is the only 5-review block that
does; no stated rule leaves it out (E.7: "no strict minimum was enforced"), and neither the
one-dish reviewer 4 (SD) nor the dish outside the suite (Mrs. Ball's Chutney) can be among
the 10 DALL-E 3 or SD reviews the paper lacks. The items' notes say so (:func:`explain`).
"""

from __future__ import annotations

import csv
from collections import Counter, defaultdict
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


#: the items of ``eval paper wwd`` and the printed table (``results.community_review``) each shows
TABLE_OF_ITEM = {"Table 2": "table2", "Table 3": "table3"}


def review_counts(rows: list[dict[str, str]]) -> dict[str, dict[str, int]]:
    """country -> model -> reviews (as Table E.7 counts them per model)."""
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for (country, model), n in Counter((r["Country"].strip(), r["Model"].strip()) for r in rows).items():
        out[country][model] = n
    return dict(out)


def explain(
    comparison: list[dict[str, Any]], counts: dict[str, dict[str, int]], table_e7: dict[str, Any]
) -> str:
    """A note on the cells of ``comparison`` that differ: the countries they are in, and whether
    the published file holds there as many reviews per model as Table E.7 counts."""
    differ = [c for c in comparison if not c["equal"]]
    head = f"{len(comparison) - len(differ)} of {len(comparison)} printed cells equal (3 decimals)"
    if not differ:
        return head + "."
    countries = list(dict.fromkeys(c["country"] for c in differ))
    off = {}  # country -> (reviews in the file, reviews Table E.7 counts), where any model differs
    for country in countries:
        printed = table_e7.get(country) or {}
        if any(counts.get(country, {}).get(m, 0) != printed.get(m) for m in MODELS):
            off[country] = (sum(counts.get(country, {}).values()), printed.get("total"))
    parts = [f"{country} ({sum(c['country'] == country for c in differ)})" for country in countries]
    note = f"{head}; the others: {', '.join(parts)}."
    if off:
        note += (
            " There the published file holds other reviews than the paper counted (reviews vs Table "
            + "E.7: "
            + ", ".join(f"{country} {mine} vs {paper}" for country, (mine, paper) in off.items())
            + "); no aggregation the paper states reproduces those cells (traced: paper.yaml, "
            "results.community_review)."
        )
    rest = [country for country in countries if country not in off]
    if rest:
        note += f" Not explained ({', '.join(rest)}: the file's reviews per model are Table E.7's)."
    return note


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
        dict_writer = csv.DictWriter(handle, fieldnames=list(comparison[0]), lineterminator="\n")
        dict_writer.writeheader()
        dict_writer.writerows(comparison)
    return [*written, path]
