"""The annotated answer sets of ``tests/data/answers/`` (README there) and the accuracy of each
answer parser on them, exact match per answer. ``python tests/answer_sets.py`` prints the
table that docs/evaluating.md ("How answers are read") and the dataset cards publish;
``tests/test_answer_sets.py`` fails when a set reads below :data:`GOAL`."""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).parent / "data" / "answers"
GOAL = 0.995
#: answers written in a language whose names the country extractor does not read (an item's
#: ``answer_lang``): measured and reported on their own, outside the goal
OUT_OF_SCOPE = ("fr", "es", "de", "it")


@dataclass
class Measured:
    """Exact-match accuracy of one parser on one set, by language, with the misses."""

    parser: str
    set_name: str
    total: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    right: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    misses: list[tuple[dict[str, Any], Any, str]] = field(default_factory=list)

    @property
    def n(self) -> int:
        """Items within the parser's scope (the goal's denominator)."""
        return sum(v for k, v in self.total.items() if k not in OUT_OF_SCOPE)

    @property
    def n_right(self) -> int:
        return sum(v for k, v in self.right.items() if k not in OUT_OF_SCOPE)

    @property
    def accuracy(self) -> float:
        return self.n_right / self.n if self.n else float("nan")


def load(path: Path) -> list[dict[str, Any]]:
    """The items of one set (a YAML list)."""
    items = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    for i, item in enumerate(items, 1):
        if not isinstance(item, dict) or "text" not in item or "expected" not in item:
            raise ValueError(f"{path}: item {i} has no text or expected")
    return items


def _measure(parser: str, set_name: str, items: list[dict[str, Any]], read: Callable, same: Callable) -> Measured:
    out = Measured(parser, set_name)
    for item in items:
        lang = str(item.get("answer_lang") or item.get("lang", "en"))
        got = read(item)
        out.total[lang] += 1
        if same(got, item["expected"]):
            out.right[lang] += 1
        else:
            out.misses.append((item, got, lang))
    return out


def measure_all() -> list[Measured]:
    """Every parser on every set present."""
    from culturebench.datasets.ash.tasks import parse_ratings
    from culturebench.eval.country_extractor import default_extractor
    from culturebench.eval.mcqa import extract_letter
    from culturebench.eval.metrics import contains_within_edits

    results = []
    extractor = default_extractor()
    for path in sorted((ROOT / "country").glob("*.yaml")):
        results.append(
            _measure(
                "country", f"country/{path.name}", load(path),
                lambda i: extractor.extract(i["text"], i["lang"]),
                lambda got, want: list(got) == [str(c) for c in want],
            )
        )  # fmt: skip
    for path in sorted((ROOT / "letters").glob("*.yaml")):
        results.append(
            _measure(
                "letters", f"letters/{path.name}", load(path),
                lambda i: extract_letter(i["text"], i.get("options")),
                lambda got, want: got == want,
            )
        )  # fmt: skip
    if (ROOT / "ratings.yaml").is_file():
        results.append(
            _measure(
                "ratings", "ratings.yaml", load(ROOT / "ratings.yaml"),
                lambda i: parse_ratings(i["text"]),
                lambda got, want: got == want,
            )
        )  # fmt: skip
    if (ROOT / "dish_name.yaml").is_file():
        results.append(
            _measure(
                "dish-name", "dish_name.yaml", load(ROOT / "dish_name.yaml"),
                lambda i: contains_within_edits(i["text"], i["gold"], 1),
                lambda got, want: got == want,
            )
        )  # fmt: skip
    return results


def table(results: list[Measured]) -> str:
    """Markdown: parser, set, language, n, correct, accuracy."""
    lines = [
        "| parser | set | answers in | n | read exactly | accuracy |",
        "| --- | --- | --- | ---: | ---: | ---: |",
    ]
    for m in results:
        for lang in sorted(m.total, key=lambda k: (k in OUT_OF_SCOPE, k)):
            n, right = m.total[lang], m.right[lang]
            scope = " (not read: outside the goal)" if lang in OUT_OF_SCOPE else ""
            lines.append(f"| {m.parser} | `{m.set_name}` | {lang}{scope} | {n} | {right} | {right / n:.1%} |")
        lines.append(f"| {m.parser} | `{m.set_name}` | **in scope** | {m.n} | {m.n_right} | {m.accuracy:.1%} |")
    return "\n".join(lines)


if __name__ == "__main__":
    measured = measure_all()
    print(table(measured))
    if "-v" in sys.argv:
        for m in measured:
            for item, got, lang in m.misses:
                print(f"{m.set_name} [{lang}]: got {got!r} want {item['expected']!r}: {item['text'][:300]!r}")
