"""Compare a build with the numbers its paper publishes (``datasets/<name>/paper.yaml``).

Each published count and each cell of a published table is compared with the build's own
statistics (``build_report.json`` ``stats``, by dotted path). The result feeds the card's
"Differences from the paper" section: what is reproduced exactly, what is not, and the
traced reason for each difference, or an explicit "not explained".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from culturebench.spec import DatasetSpec

UNEXPLAINED = "not explained"


def load_paper(spec: DatasetSpec) -> dict[str, Any] | None:
    """The dataset's ``paper.yaml`` (None when it has none)."""
    path = spec.folder / "paper.yaml"
    if not path.is_file():
        return None
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


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
        built = lookup_stat(stats, table["stat"]) or {}
        published = table.get("paper") or {}
        reasons = table.get("why") or {}
        keys = list(published) + sorted(k for k in built if k not in published)
        diffs = [
            {
                "key": key,
                "paper": published.get(key),
                "built": built.get(key),
                "why": str(reasons.get(key) or UNEXPLAINED).strip(),
            }
            for key in keys
            if published.get(key) != built.get(key)
        ]
        tables.append(
            {
                "what": table["what"],
                "cells": len(keys),
                "matched": len(keys) - len(diffs),
                "diffs": diffs,
            }
        )
    reproduced = sum(c["match"] for c in counts) + sum(t["matched"] for t in tables)
    total = len(counts) + sum(t["cells"] for t in tables)
    unexplained = sum(1 for c in counts if not c["match"] and _unexplained(c["why"])) + sum(
        1 for t in tables for d in t["diffs"] if _unexplained(d["why"])
    )
    return {
        "source": paper.get("paper", ""),
        "sample": sample,
        "counts": counts,
        "tables": tables,
        "reproduced": reproduced,
        "total": total,
        "unexplained": unexplained,
        "notes": [str(n).strip() for n in paper.get("notes") or []],
    }
