"""Compare a build with the numbers its paper publishes (``datasets/<name>/paper.yaml``).

``paper.yaml`` is the one catalogue of a paper's published numbers: the card reads it here,
``culturebench eval paper`` (:mod:`culturebench.eval.paper_report`) and the commands that
repeat one of its items read it through :func:`read_catalogue` too.

Each published count and each cell of a published table is compared with the build's own
statistics (``build_report.json`` ``stats``, by dotted path). The result feeds the card's
"Differences from the paper" section: what is reproduced exactly, what is not, and the
traced reason for each difference, or an explicit "not explained". The cells of a published
table are paired with the build's by :func:`table_cells`, the same function the ``eval
paper`` items of those tables (counted from the release) use.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from culturebench.spec import DatasetSpec
from culturebench.yamlio import load_yaml

UNEXPLAINED = "not explained"


def read_catalogue(folder: Path) -> dict[str, Any] | None:
    """The ``paper.yaml`` of a dataset folder (None when it has none)."""
    path = Path(folder) / "paper.yaml"
    if not path.is_file():
        return None
    return load_yaml(path) or {}


def load_paper(spec: DatasetSpec) -> dict[str, Any] | None:
    """The dataset's ``paper.yaml`` (None when it has none)."""
    return read_catalogue(spec.folder)


def published_table(paper: Mapping[str, Any], stat: str) -> dict[str, Any]:
    """The entry of ``tables`` compared with the statistic ``stat`` ({} when none is)."""
    return next((t for t in paper.get("tables") or [] if t.get("stat") == stat), {})


def table_cells(table: Mapping[str, Any], built: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every cell of a published table beside ours: the published keys in their order, then
    keys only we have (sorted); ``why`` is the catalogue's reason for the cell, or None."""
    published = table.get("paper") or {}
    reasons = table.get("why") or {}
    keys = list(published) + sorted(k for k in built if k not in published)
    return [
        {"key": key, "paper": published.get(key), "built": built.get(key), "why": reasons.get(key)}
        for key in keys
    ]


def lookup_stat(stats: Mapping[str, Any], dotted: str) -> Any:
    """A build statistic by dotted path (``ru.per_country``); None when absent."""
    value: Any = stats
    for part in dotted.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _unexplained(why: str) -> bool:
    return why.lower().startswith(UNEXPLAINED)


def compare(spec: DatasetSpec, stats: Mapping[str, Any], *, sample: bool) -> dict[str, Any] | None:
    """Every published number next to the build's; None when the dataset declares none."""
    paper = load_paper(spec)
    if paper is None:
        return None
    counts = []
    for item in paper.get("counts") or []:
        built = lookup_stat(stats, item["stat"])
        counts.append(
            {
                "what": item["what"],
                "paper": item["paper"],
                "built": built,
                "match": built == item["paper"],
                "why": str(item.get("why") or UNEXPLAINED).strip(),
            }
        )
    tables = []
    for table in paper.get("tables") or []:
        cells = table_cells(table, lookup_stat(stats, table["stat"]) or {})
        diffs = [
            {**cell, "why": str(cell["why"] or UNEXPLAINED).strip()}
            for cell in cells
            if cell["paper"] != cell["built"]
        ]
        tables.append(
            {
                "what": table["what"],
                "cells": len(cells),
                "matched": len(cells) - len(diffs),
                "diffs": diffs,
            }
        )
    reproduced = sum(c["match"] for c in counts) + sum(t["matched"] for t in tables)
    total = len(counts) + sum(t["cells"] for t in tables)
    unexplained = sum(1 for c in counts if not c["match"] and _unexplained(c["why"])) + sum(
        1 for t in tables for d in t["diffs"] if _unexplained(d["why"])
    )
    return {
        "source": paper_source(paper),
        "sample": sample,
        "counts": counts,
        "tables": tables,
        "reproduced": reproduced,
        "total": total,
        "unexplained": unexplained,
        "notes": [str(n).strip() for n in paper.get("notes") or []],
    }


LOCAL_TEXT = re.compile(r"\s*\((?:paper )?text in [^)]*\)")


def paper_source(paper: dict[str, Any]) -> str:
    """The paper a card compares with, as a reference people can look up: ``paper.yaml``'s
    ``reference:`` when it has one, else its ``paper:`` line without the note on where a local
    copy of the text lies (``(text in shared/papers/...)`` is a path on the builder's machine)."""
    if paper.get("reference"):
        return " ".join(str(paper["reference"]).split())
    return LOCAL_TEXT.sub("", str(paper.get("paper", ""))).strip()
