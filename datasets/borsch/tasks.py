"""BORSCH tasks (paper sections 4.1, 4.2 and Appendix H): country-of-origin QA, VQA,
VQA with the dish name, and dish-name VQA, in Russian and Ukrainian, five prompt variants
each; on the `parallel` config by default, or on `ru` / `uk` (task option ``config``)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from culturebench.eval.answers.reading import unparsed_block
from culturebench.eval.metrics import SET_METRICS, bootstrap_ci, contains_within_edits, multilabel_confusion
from culturebench.eval.tasks.base import Task

POST_SOVIET = ("RU", "UA", "BY", "MD", "LT", "LV", "EE", "AM", "AZ", "GE", "KZ", "KG", "TJ", "TM", "UZ")
LANGUAGE_COUNTRY = {"ru": "RU", "uk": "UA"}
OTHER = "other"


def display_name(name: str) -> str:
    """Dish names are published in upper case; prompts use sentence case (БОРЩ -> Борщ)."""
    return name[:1].upper() + name[1:].lower()


def by_language(samples: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[Mapping[str, Any]]]]:
    """Samples grouped by prompt language, languages sorted."""
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for sample in samples:
        groups[sample["lang"]].append(sample)
    return sorted(groups.items())


def per_country(group: Sequence[Mapping[str, Any]], metric: str) -> dict[str, Any]:
    """Mean of ``metric`` per gold country (a sample counts for each of its origins), with
    bootstrap 95% CIs over dishes (a dish's prompts resampled together); most frequent
    countries first."""
    values: dict[str, list[float]] = defaultdict(list)
    dishes: dict[str, list[str]] = defaultdict(list)
    for sample in group:
        for code in sample["gold_origins"]:
            values[code].append(sample[metric])
            dishes[code].append(sample["row_id"])
    out = {}
    for code in sorted(values, key=lambda c: (-len(values[c]), c)):
        mean, lo, hi = bootstrap_ci(values[code], units=dishes[code])
        out[code] = {
            "n": len(values[code]),
            "n_dishes": len(set(dishes[code])),
            metric: mean,
            "ci95": [lo, hi],
        }
    return out


CONFIG_LANGUAGES: dict[str, tuple[str, ...]] = {"parallel": ("ru", "uk"), "ru": ("ru",), "uk": ("uk",)}


class _BorschTask(Task):
    """Shared by every BORSCH task. Task option ``config``: ``parallel`` (default, the
    paper's 433 dishes named in both languages), or ``ru`` / ``uk``, the full language sets
    (1,147 and 823 dishes) that the pretraining co-occurrence analysis needs QA on; a
    language config is prompted in its own language only."""

    config = "parallel"
    languages: tuple[str, ...] = ("ru", "uk")

    def __init__(self, config: str = "parallel", **options: Any) -> None:
        if config not in CONFIG_LANGUAGES:
            from culturebench.errors import UsageError

            raise UsageError(f"borsch config {config!r}: choose one of {', '.join(CONFIG_LANGUAGES)}")
        super().__init__(**({"config": config} if config != "parallel" else {}), **options)
        self.config = config
        self.languages = CONFIG_LANGUAGES[config]

    def fields(self, row: dict[str, Any], lang: str) -> dict[str, Any]:
        return {"dish": display_name(self._name(row, lang))}

    def meta(self, row: dict[str, Any], lang: str) -> dict[str, Any]:
        return {"gold_origins": list(row["origins"]), "gold_name": self._name(row, lang)}

    def _name(self, row: dict[str, Any], lang: str) -> str:
        return row[f"name_{lang}"] if self.config == "parallel" else row["name"]


class OriginTask(_BorschTask):
    """Country of origin from the dish name (QA); scored by set overlap with the gold origins."""

    name = "origin-qa"
    parsers: ClassVar[tuple[str, ...]] = ("country",)  # eval/country_extractor.py (VERSION recorded)

    @classmethod
    def report_sections(cls, results: dict[str, Any], folder: Path, rel: str) -> list[str]:
        from culturebench.datasets.borsch.sections import origin_sections

        return origin_sections(results, folder, rel)

    def score(self, meta: dict[str, Any], output: str) -> dict[str, Any]:
        from culturebench.eval.answers.countries import read_countries

        reading = read_countries(output, meta["lang"], self._question(meta))
        predicted = reading.value or []
        gold = meta["gold_origins"]
        return {
            "predicted": predicted,
            "unparsed_reason": reading.reason,
            **{k: fn(gold, predicted) for k, fn in SET_METRICS.items()},
        }

    def _question(self, meta: dict[str, Any]) -> str | None:
        """The question the sample asked (its template with the dish's name), which tells the
        reader whether "also eaten in Y" answers it; None when the template is not known."""
        try:
            template = self.templates(meta["lang"])[int(meta["prompt_index"])]
        except (KeyError, IndexError, TypeError, ValueError):
            return None
        return template.replace("{dish}", str(meta.get("gold_name") or ""))

    def aggregate(self, samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for lang, group in by_language(samples):
            dishes = [s["row_id"] for s in group]
            entry: dict[str, Any] = {"n": len(group), "n_dishes": len(set(dishes))}
            for metric in SET_METRICS:
                mean, lo, hi = bootstrap_ci([s[metric] for s in group], units=dishes)
                entry[metric] = {"mean": mean, "ci95": [lo, hi]}
            entry["per_country"] = per_country(group, "jaccard")
            entry["per_prompt"] = {
                str(i): sum(s["jaccard"] for s in group if s["prompt_index"] == i)
                / max(1, sum(1 for s in group if s["prompt_index"] == i))
                for i in sorted({s["prompt_index"] for s in group})
            }
            entry["confusion"] = self._confusion(group)
            entry["over_prediction"] = self._over_prediction(group, lang)
            entry["no_country_rate"] = sum(1 for s in group if not s["predicted"]) / len(group)
            entry["unparsed"] = unparsed_block(group)
            out[lang] = entry
        return out

    @staticmethod
    def _confusion(group: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        labels = [*POST_SOVIET, OTHER]

        def fold(codes: Sequence[str]) -> list[str]:
            return sorted({c if c in POST_SOVIET else OTHER for c in codes})

        matrix = multilabel_confusion(
            [fold(s["gold_origins"]) for s in group], [fold(s["predicted"]) for s in group], labels
        )
        return {"labels": labels, "columns": [*labels, "none"], "matrix": matrix}

    @staticmethod
    def _over_prediction(group: Sequence[Mapping[str, Any]], lang: str) -> dict[str, Any]:
        """Figure 4: on dishes whose origins include both Russia and Ukraine, how often the
        answer names Russia, Ukraine, or both; and how often the prompt language's country is
        predicted for dishes that are not from it."""
        both = [s for s in group if {"RU", "UA"} <= set(s["gold_origins"])]
        own = LANGUAGE_COUNTRY.get(lang)
        not_own = [s for s in group if own and own not in s["gold_origins"]]

        def rate(items: Sequence[Mapping[str, Any]], code: str) -> float | None:
            return sum(1 for s in items if code in s["predicted"]) / len(items) if items else None

        return {
            "ru_ua_dishes": len(both),
            "predicts_RU": rate(both, "RU"),
            "predicts_UA": rate(both, "UA"),
            "predicts_both": (sum(1 for s in both if {"RU", "UA"} <= set(s["predicted"])) / len(both))
            if both
            else None,
            "language_country": own,
            "false_language_country_rate": rate(not_own, own) if own else None,
        }


class OriginVQATask(OriginTask):
    """Country of origin from the dish's images only."""

    name = "origin-vqa"
    needs_images = True


class OriginVQADishTask(OriginTask):
    """Country of origin from the images and the dish name (Appendix H)."""

    name = "origin-vqa-dish"
    needs_images = True


class DishNameTask(_BorschTask):
    """Name the dish in the images; correct when the answer contains the language's name
    within one Levenshtein edit."""

    name = "dish-name-vqa"
    parsers: ClassVar[tuple[str, ...]] = ("dish-name",)  # eval/metrics.py:contains_within_edits
    needs_images = True

    def score(self, meta: dict[str, Any], output: str) -> dict[str, Any]:
        return {"correct": float(contains_within_edits(output, meta["gold_name"], 1))}

    def aggregate(self, samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for lang, group in by_language(samples):
            dishes = [s["row_id"] for s in group]
            mean, lo, hi = bootstrap_ci([s["correct"] for s in group], units=dishes)
            out[lang] = {
                "n": len(group),
                "n_dishes": len(set(dishes)),
                "accuracy": {"mean": mean, "ci95": [lo, hi]},
                "per_country": per_country(group, "correct"),
            }
        return out


TASKS: dict[str, type[Task]] = {
    task.name: task for task in (OriginTask, OriginVQATask, OriginVQADishTask, DishNameTask)
}
