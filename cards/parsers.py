"""The "Answer parsers" section of a dataset card: for every answer parser the dataset's tasks
read model outputs with (``Task.parsers``), its version and its measured accuracy on the
annotated answer sets (``eval/data/parser_accuracy.yaml``, written from
``tests/data/answers/`` by ``python tests/answer_sets.py --write`` and checked equal to a
fresh measurement by the test suite)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from culturebench.yamlio import load_yaml

ACCURACY = Path(__file__).resolve().parents[1] / "eval" / "data" / "parser_accuracy.yaml"
TITLES = {
    "country": "Country extraction (`eval/country_extractor.py`)",
    "letters": "Option letters (`eval/multiple_choice.py`)",
    "ratings": "Judge ratings (`eval/ratings.py`)",
    "dish-name": "Dish name within one edit (`eval/metrics.py:contains_within_edits`)",
}


def parsers_used(dataset: str) -> dict[str, list[str]]:
    """Parser name -> the dataset's tasks that use it (empty when the tasks cannot be loaded,
    e.g. a core install without the ``eval`` extra)."""
    from culturebench import registry

    try:
        tasks = registry.get(dataset).tasks()
    except (ImportError, LookupError, KeyError):
        return {}
    used: dict[str, list[str]] = {}
    for name, task in tasks.items():
        for parser in getattr(task, "parsers", ()) or ():
            used.setdefault(parser, []).append(name)
    return used


def _fraction(right: int, n: int) -> str:
    return f"{right:,}/{n:,}"


def parser_lines(dataset: str, accuracy_file: Path = ACCURACY) -> list[str]:
    """One Markdown bullet per parser the dataset's tasks use: version, accuracy per answer
    language and in all, the held-out measurement when there is one."""
    used = parsers_used(dataset)
    if not used or not accuracy_file.is_file():
        return []
    measured: dict[str, Any] = (load_yaml(accuracy_file) or {}).get("parsers", {})
    lines = []
    for parser, tasks in sorted(used.items()):
        entry = measured.get(parser)
        title = TITLES.get(parser, parser)
        if not entry:
            lines.append(f"- **{title}** (tasks {', '.join(tasks)}): not measured yet")
            continue
        n, right = entry["n"], entry["right"]
        per_language = ", ".join(
            f"{lang} {_fraction(v['right'], v['n'])}" for lang, v in sorted(entry["languages"].items())
        )
        line = (
            f"- **{title}**, version {entry['version']} (tasks {', '.join(tasks)}): "
            f"{_fraction(right, n)} annotated answers read exactly ({right / n:.1%}; {per_language})"
        )
        heldout = entry.get("heldout")
        if heldout and heldout.get("n"):
            line += (
                f"; held out, written after the rules were final: "
                f"{_fraction(heldout['right'], heldout['n'])} ({heldout['right'] / heldout['n']:.1%})"
            )
        lines.append(line + ".")
    return lines
