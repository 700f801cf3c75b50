"""CulinaryASH tasks: recipe generation over the 800 instructions, and LLM-as-a-judge ratings
of generated recipes (authenticity, sensitivity, harmony; integers 1-5) with the paper's
Appendix D prompt, repeated (3 times by default, as in the paper).

``judge`` takes the folder of a finished ``generate`` run (task option ``generations``); the
generator's name is that run's model. Ratings are parsed from free text; a criterion with no
integer 1-5 is *missing* and counted, never imputed. Cross-run summaries (generator x judge
heatmaps, top/bottom cuisines, inter-judge agreement) are in :mod:`culturebench.datasets.ash.summary`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from statistics import mean, stdev
from typing import Any, ClassVar

from culturebench.errors import CultureBenchError
from culturebench.eval.agreement import interval_alpha
from culturebench.eval.answers.reading import unparsed_block
from culturebench.eval.backends.base import Request
from culturebench.eval.ratings import read_ratings as read_criteria
from culturebench.eval.tasks.base import Task, TaskRequest

CRITERIA = ("authenticity", "sensitivity", "harmony")
#: the criteria's names in the languages judges answer in (regular expression fragments; Cyrillic
#: stems take every case), so "Автентичність: 4" and "真实性：4" are read
CRITERION_NAMES = {
    "authenticity": [r"auth\.?", r"аутентичн\w*", r"подлинност\w*", r"автентичн\w*", r"справжн\w*",
                     "真实性", "正宗性", "正宗度", "地道性", "真实度"],
    "sensitivity": [r"sens\.?", r"чувствительност\w*", r"чуткост\w*", r"сенситивн\w*", r"чутлив\w*",
                    "敏感性", "敏感度", "适应性", "契合度", "适配性"],
    "harmony": [r"harm\.?", r"гармони\w*", r"гармоничн\w*", r"гармоні\w*", r"гармонійн\w*",
                "和谐性", "和谐度", "协调性", "协调度", "平衡性", "平衡度"],
}  # fmt: skip
DEFAULT_REPEATS = 3


def read_ratings(text: str) -> dict[str, Any]:
    """The judge's committed rating of each criterion, as readings (an integer 1-5, or None with
    a reason: missing, invalid, conflict); the rules are :func:`culturebench.eval.ratings.read_ratings`'s."""
    return read_criteria(text, CRITERIA, CRITERION_NAMES)


def parse_ratings(text: str) -> dict[str, int | None]:
    """The judge's rating of each criterion (an integer 1-5, or None when missing or invalid)."""
    return {criterion: reading.value for criterion, reading in read_ratings(text).items()}


def model_name(run_dir: Path) -> str:
    """Short name of the model of a run folder (last path part of its model id)."""
    from culturebench.eval.run_folder import read_run

    model = read_run(run_dir).get("model")
    name = model.get("model") if isinstance(model, dict) else None
    if not isinstance(name, str) or not name:
        raise CultureBenchError(f"{Path(run_dir) / 'run.json'}: no model id")
    return Path(name.rstrip("/")).name


def load_generations(run_dir: str | Path) -> tuple[str, dict[str, str]]:
    """(generator name, row id -> recipe) from a finished ``generate`` run folder; a sample
    without a row id or with a non-text recipe is an error naming the folder and sample."""
    from culturebench.eval.run_folder import read_input_run

    folder = Path(run_dir)
    _, samples = read_input_run(folder, dataset="ash", tasks=["generate"])
    recipes = {}
    for sample in samples:
        row, recipe = sample.get("row_id"), sample.get("output")
        if not isinstance(row, str) or not isinstance(recipe, str):
            raise CultureBenchError(
                f"{folder / 'samples.jsonl'}: sample {sample['id']!r} has no row_id or no text output"
            )
        recipes[row] = recipe
    return model_name(folder), recipes


def summary(values: Sequence[float]) -> dict[str, Any]:
    return {
        "n": len(values),
        "mean": mean(values) if values else None,
        "sd": stdev(values) if len(values) > 1 else None,
    }


def repeat_alpha(samples: Sequence[Mapping[str, Any]], criterion: str) -> float | None:
    """Alpha between the repeats of one judge: repeats are the coders, (row, generator) the
    units; missing ratings are left out."""
    units: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
    for s in samples:
        if s[criterion] is not None:
            units[(s["row_id"], s["generator"])][s["repeat"]] = s[criterion]
    return interval_alpha(units, sorted({r for u in units.values() for r in u}))


def ranked_cuisines(per_cuisine: dict[str, list[int]], k: int = 3) -> dict[str, list[tuple[str, float]]]:
    """Top and bottom ``k`` cuisines by mean rating (ties by name), as the paper's Table 2."""
    ranked = sorted(per_cuisine, key=lambda c: (-mean(per_cuisine[c]), c))
    return {
        f"top{k}_cuisines": [(c, mean(per_cuisine[c])) for c in ranked[:k]],
        f"bottom{k}_cuisines": [(c, mean(per_cuisine[c])) for c in ranked[::-1][:k]],
    }


class Generate(Task):
    """Recipe generation for each instruction (Appendix C prompt, sent as is)."""

    name = "generate"
    config = "default"
    languages: tuple[str, ...] = ("en",)

    def meta(self, row: dict[str, Any], lang: str) -> dict[str, Any]:
        return {"cuisine": row["cuisine"], "category": row["cuisine_category"], "dish": row["base_dish"]}

    def score(self, meta: dict[str, Any], output: str) -> dict[str, Any]:
        lowered = (output or "").lower()
        return {
            "chars": len(output or ""),
            "has_ingredients": "ingredients" in lowered,
            "has_instructions": "instructions" in lowered,
        }

    def aggregate(self, samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        n = len(samples)
        return {
            "n": n,
            "format_ok_rate": sum(s["has_ingredients"] and s["has_instructions"] for s in samples) / n
            if n
            else None,
            "mean_chars": mean(s["chars"] for s in samples) if n else None,
            "empty": sum(s["chars"] == 0 for s in samples),
        }


class Judge(Task):
    """LLM-as-a-judge ratings of one generator's recipes (Appendix D prompt), ``repeats`` times."""

    name = "judge"
    config = "default"
    parsers: ClassVar[tuple[str, ...]] = ("ratings",)  # eval/ratings.py
    criteria: ClassVar[tuple[str, ...]] = CRITERIA  # what a model reader reads (--answer-reader)
    languages: tuple[str, ...] = ("en",)
    in_harnesses = False  # it judges another run's images/recipes, not the model under test

    def __init__(
        self, generations: str | None = None, repeats: int = DEFAULT_REPEATS, **options: Any
    ) -> None:
        if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= 100:
            raise CultureBenchError(f"--option repeats={repeats!r}: expected an integer from 1 to 100")
        super().__init__(generations=str(generations) if generations else None, repeats=repeats, **options)
        self.generations = generations
        self.repeats = repeats

    def build(
        self, rows: Sequence[dict[str, Any]], langs: Sequence[str]
    ) -> tuple[list[TaskRequest], dict[str, int]]:
        if not self.generations:
            raise CultureBenchError("ash judge needs the folder of a generate run (--generations DIR)")
        self.generator, self.recipes = load_generations(self.generations)
        template = self.templates("en")[0]
        requests, skipped = [], 0
        for row in rows:
            recipe = self.recipes.get(row["id"])
            if recipe is None:
                skipped += 1
                continue
            prompt = template.format(
                dish=row["base_dish"], cuisine=f"{row['cuisine']} cuisine", recipe=recipe
            )
            for repeat in range(self.repeats):
                meta = {
                    "row_id": row["id"],
                    "lang": "en",
                    "prompt_index": 0,
                    "generator": self.generator,
                    "repeat": repeat,
                    "cuisine": row["cuisine"],
                    "category": row["cuisine_category"],
                }
                rid = f"{row['id']}:{self.generator}:r{repeat}"
                requests.append(TaskRequest(Request(rid, prompt), meta))
        return requests, ({"no_generated_recipe": skipped} if skipped else {})

    def score(self, meta: dict[str, Any], output: str) -> dict[str, Any]:
        readings = read_ratings(output)
        ratings = {c: r.value for c, r in readings.items()}
        return {
            **ratings,
            "missing": sorted(c for c, v in ratings.items() if v is None),
            "unparsed_reasons": {c: r.reason for c, r in readings.items() if r.reason},
        }

    def aggregate(self, samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {"n": len(samples), "criteria": {}}
        for criterion in CRITERIA:
            values = [s[criterion] for s in samples if s[criterion] is not None]
            per_cuisine: dict[str, list[int]] = defaultdict(list)
            per_category: dict[str, list[int]] = defaultdict(list)
            for s in samples:
                if s[criterion] is not None:
                    per_cuisine[s["cuisine"]].append(s[criterion])
                    per_category[s["category"]].append(s[criterion])
            out["criteria"][criterion] = {
                **summary(values),
                "missing": len(samples) - len(values),
                "per_category": {k: summary(v) for k, v in sorted(per_category.items())},
                **ranked_cuisines(per_cuisine),
                "repeat_alpha_interval": repeat_alpha(samples, criterion),
            }
        out["unparseable_outputs"] = sum(len(s["missing"]) == len(CRITERIA) for s in samples)
        # one row per criterion read (judge answers x criteria), with the reasons it was not
        ratings = [
            {
                "unparsed_reason": (s.get("unparsed_reasons") or {}).get(c)
                or ("missing" if c in s["missing"] else None)
            }
            for s in samples
            for c in CRITERIA
        ]
        out["unparsed"] = unparsed_block(ratings)
        return out

    def unusable(self, samples: Sequence[Mapping[str, Any]]) -> str | None:
        if samples and all(len(s["missing"]) == len(CRITERIA) for s in samples):
            return (
                f"the judge answered none of {len(samples)} prompts with ratings in the asked form "
                f"(first output: {str(samples[0].get('output', ''))[:60]!r})"
            )
        return None


TASKS: dict[str, type[Task]] = {"generate": Generate, "judge": Judge}
