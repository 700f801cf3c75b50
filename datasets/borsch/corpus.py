"""BORSCH in pretraining corpora (§4.2-4.3, App. C): which names to look for.

``parallel`` (default): both names of every parallel dish, for code mixing (§4.2: the
Ukrainian and the Russian name counted in each language's corpus). ``ru`` / ``uk``: the full
language sets (§4.3: co-occurrence on the full dataset, each in its own corpus).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

DEFAULT_CONFIG = "parallel"


def corpus_terms(
    rows: Sequence[dict[str, Any]], config: str
) -> tuple[list[tuple[str, str, str]], dict[str, list[str]]]:
    """``(dishes, origins)``: (dish id, name language, name) triples and each dish's origins."""
    dishes: list[tuple[str, str, str]] = []
    origins: dict[str, list[str]] = {}
    for row in rows:
        if config == "parallel":
            for lang in ("ru", "uk"):
                if row.get(f"name_{lang}"):
                    dishes.append((row["id"], lang, row[f"name_{lang}"]))
        else:
            dishes.append((row["id"], config, row["name"]))
        origins[row["id"]] = list(row["origins"])
    return dishes, origins
