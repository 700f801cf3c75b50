"""RuBIN tasks: zero-shot four-option MCQA in Russian on ``full`` and ``easy``. Metrics as in
the paper: accuracy, NA rate (no extractable answer), accuracy per category and per decade,
and the distribution of wrong answers over positions A-D."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from culturebench.eval.multiple_choice import accuracy_block, score_letter, wrong_positions
from culturebench.eval.tasks.base import Task


def grouped(samples: Sequence[Mapping[str, Any]], key: str) -> dict[str, Any]:
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for sample in samples:
        groups[str(sample.get(key) or "undated")].append(sample)
    return {k: accuracy_block(v) for k, v in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))}


class _RuBINTask(Task):
    languages: tuple[str, ...] = ("ru",)
    parsers: ClassVar[tuple[str, ...]] = ("letters",)  # eval/multiple_choice.py (VERSION recorded)

    def fields(self, row: dict[str, Any], lang: str) -> dict[str, Any]:
        a, b, c, d = row["options"]
        return {"question": row["question"], "a": a, "b": b, "c": c, "d": d}

    def meta(self, row: dict[str, Any], lang: str) -> dict[str, Any]:
        return {
            "gold": int(row["label"]),
            "category": row["category"],
            "decade": row["decade"],
            "options": list(row["options"]),  # an answer given as an option's text is read
        }

    def score(self, meta: dict[str, Any], output: str) -> dict[str, Any]:
        return score_letter(output, meta["gold"], meta.get("options"))

    def aggregate(self, samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        overall = accuracy_block(samples)
        return {
            "accuracy": overall["accuracy"],
            "na_rate": overall["unparseable_rate"],
            "na": overall["unparseable"],
            "n": overall["n"],
            "per_category": grouped(samples, "category"),
            "per_decade": grouped(samples, "decade"),
            "position_bias": wrong_positions(samples),
        }


class MCQA(_RuBINTask):
    """RuBIN (full)."""

    name = "mcqa"
    config = "full"


class MCQAEasy(_RuBINTask):
    """RuBIN-EASY."""

    name = "mcqa-easy"
    aliases = ("mcqa_easy",)
    config = "easy"


TASKS: dict[str, type[Task]] = {task.name: task for task in (MCQA, MCQAEasy)}
