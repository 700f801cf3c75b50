"""CulinaryASH builder: the paper's cuisine and dish lists (``datasets/ash/cuisines.yaml``,
sha256-pinned) crossed with its Appendix C prompt template -> 800 instructions.

Order is the paper's: cuisine category (regional, religious, historical), then cuisine and
dish in list order, so row ``i`` is stable across builds.
"""

from __future__ import annotations

import re
from typing import Any

from culturebench.builders.base import DatasetBuilder, Rows
from culturebench.builders.sources import SourceSet
from culturebench.buildlog import BuildLog
from culturebench.errors import Location, SourceError
from culturebench.yamlio import load_yaml

CATEGORIES = ("regional", "religious", "historical")
EXPECTED = {"regional": 30, "religious": 6, "historical": 4}
EXPECTED_DISHES = 20


def slug(text: str) -> str:
    """Lower-case, hyphenated ASCII id part ("Southern US" -> "southern-us")."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def load_lists(path: str) -> dict[str, Any]:
    """Read and check the lists file: category sizes, 20 dishes, no duplicates, template fields."""
    with open(path, encoding="utf-8") as handle:
        data = load_yaml(handle) or {}
    cuisines = data.get("cuisines") or {}
    for category in CATEGORIES:
        names = cuisines.get(category) or []
        if len(names) != EXPECTED[category]:
            raise SourceError(
                Location(path, field=f"cuisines.{category}"),
                f"{len(names)} {category} cuisines, the paper has {EXPECTED[category]}",
            )
    unknown = set(cuisines) - set(CATEGORIES)
    if unknown:
        raise SourceError(Location(path, field="cuisines"), f"unknown categories {sorted(unknown)}")
    dishes = data.get("base_dishes") or []
    if len(dishes) != EXPECTED_DISHES:
        raise SourceError(
            Location(path, field="base_dishes"), f"{len(dishes)} base dishes, the paper has {EXPECTED_DISHES}"
        )
    every = [c for cat in CATEGORIES for c in cuisines[cat]]
    for field, values in (("cuisines", every), ("base_dishes", dishes)):
        slugs = [slug(v) for v in values]
        dupes = sorted({v for v, s in zip(values, slugs, strict=True) if slugs.count(s) > 1})
        if dupes:
            raise SourceError(Location(path, field=field), f"duplicate entries {dupes}")
    template = data.get("instruction_template") or ""
    if "{cuisine}" not in template or "{dish}" not in template:
        raise SourceError(
            Location(path, field="instruction_template"), "the template must contain {cuisine} and {dish}"
        )
    return data


def instruction(template: str, cuisine: str, dish: str) -> str:
    """The Appendix C instruction for one pair."""
    return template.format(cuisine=cuisine, dish=dish)


class ASHBuilder(DatasetBuilder):
    """Builds the 800 CulinaryASH instructions."""

    def generate(self, sources: SourceSet, log: BuildLog) -> Rows:
        data = load_lists(str(sources["lists"].path))
        template = data["instruction_template"]
        rows = [
            {
                "id": f"ash-{slug(cuisine)}-{slug(dish)}",
                "cuisine": cuisine,
                "cuisine_category": category,
                "base_dish": dish,
                "instruction": instruction(template, cuisine, dish),
            }
            for category in CATEGORIES
            for cuisine in data["cuisines"][category]
            for dish in data["base_dishes"]
        ]
        log.stats["instructions"] = len(rows)
        log.stats["per_category"] = {c: EXPECTED[c] * len(data["base_dishes"]) for c in CATEGORIES}
        return {"default": {"test": rows}}
