"""World Wide Dishes tasks (paper, Appendix H): country, time of day, meal type, utensils,
ingredients, and failure-mode keyword rates of free descriptions; every metric per continent
with its standard error of the mean, as in Tables H.9 and H.10."""

from __future__ import annotations

import ast
import math
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from culturebench.eval.tasks.base import Task

_LIST = re.compile(r"\[[^\[\]]*\]", re.DOTALL)
FUZZY_THRESHOLD = 80


def parse_list(text: Any) -> list[str] | None:
    """The first Python-style list of strings in a model answer (None if there is none).

    The one parser of every WWD list answer, in ``eval run`` and ``eval score`` alike: text
    around the list is tolerated (one of the authors' 3,825 answers reads ``["Main dish -
    eaten with sides"] - United States of America (USA)``); an answer with no list (prose, a
    refusal, an empty string, junk bytes, a value that is not text) is None: the model's
    failure, scored 0 and counted as unparsed by the tasks, never an error."""
    if not isinstance(text, str):
        return None
    items = _parsed(text)
    return None if items is None else list(items)


@lru_cache(maxsize=65536)
def _parsed(text: str) -> tuple[str, ...] | None:
    """:func:`parse_list` of one text, cached: models repeat their list answers (the authors'
    3,825 time-of-day answers hold a few hundred distinct lists)."""
    items = _first_list(text)
    return None if items is None else tuple(s for s in (v.strip() for v in items) if s)


def _first_list(text: str) -> list[str] | None:
    """The items of the first Python list literal in ``text``, as written (None: no list)."""
    for candidate in _LIST.findall(text):
        try:
            value = ast.literal_eval(candidate)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
        if isinstance(value, list):
            return [str(v) for v in value]
    return None


def _as_written(text: str) -> list[str]:
    """The judge's list item for item as written, empty strings kept (the authors' ``len()``
    of ``['']`` is 1); only called on text :func:`parse_list` has read as a list."""
    return _first_list(text) or []


_WORD = re.compile(r"[a-z]+")


@lru_cache(maxsize=65536)
def _plain(text: str) -> str:
    """Lowercase words separated by single spaces: what keyword matching compares."""
    return " ".join(_WORD.findall(text.lower()))


def keywords_in(items: Sequence[str], keywords: Sequence[str]) -> list[str]:
    """The ``keywords`` found in ``items`` (each item and keyword compared as lowercase words,
    punctuation ignored; a keyword inside a longer phrase counts: "hand" in "Right Hand",
    "finger" in "Fingers"), in keyword order. The paper's keyword matching (App. H.2)."""
    text = " | ".join(_plain(i) for i in items)
    return [k for k in keywords if _plain(k) in text]


def iou(a: Sequence[str], b: Sequence[str]) -> float:
    x, y = set(a), set(b)
    return len(x & y) / len(x | y) if x | y else 1.0


def fuzzy_iou(pred: Sequence[str], gold: Sequence[str], threshold: int = FUZZY_THRESHOLD) -> float:
    """IoU where two ingredients match when their rapidfuzz token-set ratio >= ``threshold``
    (greedy one-to-one matching, best pairs first)."""
    import numpy as np
    from rapidfuzz import fuzz, process

    p = list(dict.fromkeys(s.lower().strip() for s in pred if s.strip()))
    g = list(dict.fromkeys(s.lower().strip() for s in gold if s.strip()))
    if not p and not g:
        return 1.0
    if not p or not g:
        return 0.0
    scores = process.cdist(p, g, scorer=fuzz.token_set_ratio, dtype=np.float64)  # all pairs at once
    rows, cols = np.nonzero(scores >= threshold)
    # best pairs first; ties: later prediction, then later gold first (as sorting (score, i, j) down)
    order = np.lexsort((-cols, -rows, -scores[rows, cols]))
    used_p, used_g, matches = set(), set(), 0
    for i, j in zip(rows[order].tolist(), cols[order].tolist(), strict=True):
        if i not in used_p and j not in used_g:
            used_p.add(i)
            used_g.add(j)
            matches += 1
    return matches / (len(p) + len(g) - matches)


def sem(values: Sequence[float]) -> float:
    n = len(values)
    if n < 2:
        return 0.0
    mean = sum(values) / n
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) / math.sqrt(n)


def per_continent(samples: Sequence[Mapping[str, Any]], metric: str) -> dict[str, Any]:
    """Mean and SEM of ``metric`` per continent (a dish counts for each of its continents);
    samples without a score (no usable gold answer) are left out."""
    groups: dict[str, list[float]] = defaultdict(list)
    for sample in samples:
        if sample.get(metric) is None:
            continue
        for continent in sample["continents"]:
            groups[continent].append(float(sample[metric]))
    return {
        c: {"n": len(v), "mean": sum(v) / len(v), "sem": sem(v)}
        for c, v in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    }


def _count_continents(samples: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """How many of ``samples`` fall in each continent (a dish counts for each of its own)."""
    counts: dict[str, int] = defaultdict(int)
    for sample in samples:
        for continent in sample["continents"]:
            counts[continent] += 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _countries(row: dict[str, Any]) -> str:
    return ", ".join(c["name"] for c in row["countries"])


class _WWDTask(Task):
    config = "default"
    languages: tuple[str, ...] = ("en",)
    metric: ClassVar[str] = "score"

    def fields(self, row: dict[str, Any], lang: str) -> dict[str, Any]:
        return {"dish": row["local_name"], "country": _countries(row)}

    def meta(self, row: dict[str, Any], lang: str) -> dict[str, Any]:
        return {
            "continents": list(row["continents"]),
            "gold_countries": list(row["country_codes"]),
            "countries_text": _countries(row),
            "gold": self.gold(row),
        }

    def render(self, template: str, fields: dict[str, Any], lang: str) -> str:
        """The App. H prompt: the shared opening sentence, then the question."""
        return (self.prompt_file["initial"] + " " + template).format(**fields)

    def gold(self, row: dict[str, Any]) -> list[str]:
        return []

    def aggregate(self, samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        values = [float(s[self.metric]) for s in samples if s.get(self.metric) is not None]
        unparsed = sum(s.get("judge_parsed") is False for s in samples)
        missing = sum(bool(s.get("judge_missing")) for s in samples)  # --matcher recorded: no judgment
        counts: dict[str, Any] = {"n_judge_unparsed": unparsed} if unparsed else {}
        if missing:
            counts["n_judge_missing"] = missing
        on_unparsed = sum(bool(s.get("judge_on_unparsed")) for s in samples)
        if on_unparsed:  # --matcher recorded: a recorded judgment of an answer we cannot read
            counts["n_judge_on_unparsed"] = on_unparsed
        if any("unparsed" in s for s in samples):  # the list tasks: answers not in the asked form
            failed = [s for s in samples if s.get("unparsed")]
            counts["n_unparsed"] = len(failed)
            counts["unparsed_rate"] = len(failed) / len(samples)
            counts["unparsed_per_continent"] = _count_continents(failed)
        return {
            "en": {
                "n": len(values),
                "n_without_gold": len(samples) - len(values) - unparsed - missing,
                **counts,
                self.metric: {
                    "mean": sum(values) / len(values) if values else float("nan"),
                    "sem": sem(values),
                },
                "per_continent": per_continent(samples, self.metric),
            }
        }


class CountryTask(_WWDTask):
    name = "country"
    metric = "correct"
    parsers: ClassVar[tuple[str, ...]] = ("country",)  # eval/country_extractor.py
    judge_names = ("country_match",)

    def score(self, meta: dict[str, Any], output: str) -> dict[str, Any]:
        from culturebench.eval.answers.countries import read_countries

        reading = read_countries(output, "en")
        named = reading.value or []
        return {
            "predicted": named,
            "unparsed_reason": reading.reason,
            "correct": float(bool(named) and named[0] in meta["gold_countries"]),
        }

    # --matcher llm: the paper's own GPT string matcher (App. H), through any backend
    def judge_prompts(self, sample: dict[str, Any]) -> list[tuple[str, str]]:
        template = self.prompt_file["judge"]["country_match"]
        return [
            (
                "country_match",
                template.format(country_llm=sample["output"], countries=sample["countries_text"]),
            )
        ]

    def apply_judgments(self, sample: dict[str, Any], answers: dict[str, str]) -> dict[str, Any]:
        verdict = re.search(r"\b(true|false)\b", answers.get("country_match", ""), re.IGNORECASE)
        correct = None if verdict is None else float(verdict.group(1).lower() == "true")
        return {
            **sample,
            "correct": correct,
            "matcher": "llm",
            "judge_answer": answers.get("country_match"),
            "judge_parsed": verdict is not None,
        }


class _ChoiceTask(_WWDTask):
    metric = "iou"
    option_key: ClassVar[str]

    def keywords(self) -> list[str]:
        """The options' keywords (prompts.yaml ``keywords:``): "other" and "other food" have
        none (removed, App. H.2), "hand" stands for right and left hand (merged)."""
        return list(self.prompt_file["keywords"][self.option_key])

    def score(self, meta: dict[str, Any], output: str) -> dict[str, Any]:
        """IoU of the keywords named in the answer's list with those named in the contributed
        answers (App. H.2: "Keyword matching was used"; reproduces all 18 printed cells of
        Table H.9's time of day, type of meal and utensils rows from the authors' GPT-3.5
        file). A dish whose contributed answers name no keyword (empty, only "other") gets no
        score (``iou`` null) and is left out of the means, as in the paper. An answer that is
        not a list (prose, a refusal, empty, junk), or a list naming no option, is the model's
        failure: ``unparsed``, nothing chosen, IoU 0."""
        keywords = self.keywords()
        items = parse_list(output)
        predicted = keywords_in(items, keywords) if items is not None else []
        gold = keywords_in(meta["gold"], keywords)
        return {
            "predicted": predicted,
            "parsed_list": items is not None,
            "unparsed": items is None or (bool(items) and not predicted),
            "iou": iou(predicted, gold) if gold else None,
        }


class TimeOfDayTask(_ChoiceTask):
    name = "time-of-day"
    option_key = "time_of_day"

    def gold(self, row: dict[str, Any]) -> list[str]:
        return list(row["time_of_day"])


class MealTypeTask(_ChoiceTask):
    name = "meal-type"
    option_key = "meal_type"

    def gold(self, row: dict[str, Any]) -> list[str]:
        return list(row["type_of_dish"])


class UtensilsTask(_ChoiceTask):
    name = "utensils"
    option_key = "utensils"

    def gold(self, row: dict[str, Any]) -> list[str]:
        return list(row["utensils"])


class IngredientsTask(_WWDTask):
    name = "ingredients"
    metric = "iou"
    judge_names = ("ingredients_intersect", "ingredients_union")

    def gold(self, row: dict[str, Any]) -> list[str]:
        return list(row["ingredients"])

    def score(self, meta: dict[str, Any], output: str) -> dict[str, Any]:
        """Fuzzy IoU of the first ten listed ingredients with the gold ones; an answer that is
        not a list (prose, a refusal, empty, junk) is the model's failure: ``unparsed``, IoU 0."""
        items = parse_list(output)
        if items is None:
            return {"predicted": [], "parsed_list": False, "unparsed": True, "iou": 0.0}
        return {
            "predicted": items[:10],
            "parsed_list": True,
            "unparsed": False,
            "iou": fuzzy_iou(items[:10], meta["gold"]),
        }

    # --matcher llm: the paper's GPT intersection and union of the two ingredient lists
    def judge_prompts(self, sample: dict[str, Any]) -> list[tuple[str, str]]:
        if sample.get("unparsed"):
            return []  # the model gave no list: nothing to match, IoU stays 0
        judge = self.prompt_file["judge"]
        fields = {"ingredients": ", ".join(sample["gold"]), "ingredients_llm": str(sample["predicted"])}
        return [(name, judge[name].format(**fields)) for name in self.judge_names]

    def apply_judgments(self, sample: dict[str, Any], answers: dict[str, str]) -> dict[str, Any]:
        recorded = sample.get("matcher") == "recorded"
        if sample.get("unparsed") and not (recorded and answers):
            return {**sample, "iou": 0.0, "matcher": "llm"}
        both = parse_list(answers.get("ingredients_intersect", ""))
        either = parse_list(answers.get("ingredients_union", ""))
        if recorded and both is not None and either is not None:
            # --matcher recorded reproduces the authors' computation: len() of the list as the
            # judge wrote it, so an intersection recorded as [''] counts one ingredient
            both = _as_written(answers["ingredients_intersect"])
            either = _as_written(answers["ingredients_union"])
        # no list from the judge: no score, counted. Else the ratio of the judge's two lists, as
        # App. H states it, not clipped to 1: a judge may list more shared ingredients than
        # ingredients (7 of the authors' 3,825 GPT-3.5 judgments do; the printed row counts them so)
        value = (
            (len(both) / len(either) if either else 1.0) if both is not None and either is not None else None
        )
        return {
            **sample,
            "iou": value,
            "matcher": "recorded" if recorded else "llm",
            "judge_intersect": both,
            "judge_union": either,
            "judge_parsed": both is not None and either is not None,
        }


class DescriptionTask(_WWDTask):
    """Free description; failure-mode keyword rates per continent (Table H.10)."""

    name = "description"
    metric = "any_failure"

    @classmethod
    def report_sections(cls, results: dict[str, Any], folder: Path, rel: str) -> list[str]:
        from culturebench.datasets.wwd.sections import failure_mode_sections

        return failure_mode_sections(results, folder, rel)

    def score(self, meta: dict[str, Any], output: str) -> dict[str, Any]:
        text = (output or "").lower()
        flags = {
            mode: float(any(k.lower() in text for k in words))
            for mode, words in self.prompt_file["failure_keywords"].items()
        }
        return {**flags, "any_failure": float(any(flags.values()))}

    def aggregate(self, samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        out = super().aggregate(samples)
        out["en"]["failure_modes"] = {
            mode: per_continent(samples, mode) for mode in self.prompt_file["failure_keywords"]
        }
        return out


TASKS: dict[str, type[Task]] = {
    t.name: t
    for t in (DescriptionTask, CountryTask, TimeOfDayTask, MealTypeTask, UtensilsTask, IngredientsTask)
}
