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
    "country": "Countries the answer commits to (`eval/answers/countries.py`)",
    "letters": "Option the answer commits to (`eval/multiple_choice.py`)",
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


def _independent_text(block: dict[str, Any]) -> str:
    """The independent measurement in words: exact, unparsed and wrong, with n, per language."""
    n = block["n"]
    per_language = ", ".join(
        f"{lang} {v['right']}/{v['n']} ({v['right'] / v['n']:.1%})"
        for lang, v in block["languages"].items()
        if v["n"]
    )
    return (
        f"on {n} answers written independently (held out, measured once) "
        f"{block['right'] / n:.1%} read exactly "
        f"({per_language}), {block['unparsed'] / n:.1%} unparsed, {block['wrong'] / n:.1%} read wrong"
    )


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
        line = f"- **{title}**, version {entry['version']} (tasks {', '.join(tasks)}): "
        # the newest independent set measured once by these rules (round 2), else round 1
        independent = entry.get("independent_round2") or {}
        if not independent.get("n"):
            independent = entry.get("independent") or {}
        if independent.get("n"):
            line += _independent_text(independent) + "; "
        line += (
            f"development and earlier sets {_fraction(right, n)} read exactly "
            f"({right / n:.1%}; {per_language})"
        )
        heldout = entry.get("heldout")
        if heldout and heldout.get("n"):
            line += (
                f"; held out, written after the rules were final: "
                f"{_fraction(heldout['right'], heldout['n'])} ({heldout['right'] / heldout['n']:.1%})"
            )
        lines.append(line + ".")
    return lines
