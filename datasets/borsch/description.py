"""BORSCH §5 and App. J: dish descriptions judged by the images they generate.

Stages, each an ``eval run`` task whose outputs the next stage pins by sha256 (a task option
``<input>_sha256`` recorded in its ``run.json``, so an input that changes makes the stage a
different run):

1. ``description``: the model describes the dish from its name in Russian or Ukrainian (the
   paper's "Image Generation" prompt of Tables 5-6). Where the answer names the dish anyway,
   the name is replaced by the word for "dish" and counted (the paper redacts it).
2. ``translate``: the description in English through any text backend (the paper used Google
   Translate; the prompt is in ``prompts.yaml``). Skipped for models that describe in English.
3. ``description-images``: N images per description with a text-to-image backend (the paper:
   FLUX.1-dev), one seed each.
4. ``description-scores``: DINOv2 [CLS] cosine between every generated image and every
   embedded image of the dish in the release, mean and max per image, averaged over the
   dish's generated images; per language x origin country with bootstrap CIs over dishes
   (Fig. 8); the reference frame of intra- and inter-dish cosine over the release's images.
5. ``description-correlations``: per dish, the score against the same model's QA/VQA Jaccard,
   Dice and Overlap (Pearson, Spearman, Kendall: Table 4, Fig. 9) and against human ratings
   (Pearson, Spearman, Kendall, Lin's CCC: Table 3).

``culturebench eval borsch-description`` runs stages 1-5 in one folder and reruns only the
stages whose inputs changed.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from culturebench.datasets.borsch.tasks import CONFIG_LANGUAGES, POST_SOVIET, _BorschTask, per_country
from culturebench.errors import CultureBenchError, Location, SourceError, UsageError
from culturebench.eval.backends.base import Request
from culturebench.eval.records import RunInfo
from culturebench.eval.tasks.base import AnalysisTask, Task, TaskRequest, row_images
from culturebench.inputs import csv_dict_reader
from culturebench.jsonsafe import json_text

DISH_WORD = {"ru": "блюдо", "uk": "страва"}  # what a redacted dish name becomes
SCORES_CSV = "description_scores.csv"


# ---------------------------------------------------------------------- 1. description
def name_pattern(names: Sequence[str]) -> re.Pattern[str] | None:
    """A case-insensitive pattern for any of ``names`` in running text, inflected by the
    package's one inflection rule (:func:`culturebench.text.inflection_stem`: each word as its
    stem plus a few letters: БОРЩ -> борща, борщом; ВАРЕНИКИ -> варениками), words of a
    multi-word name separated by any non-letters."""
    from culturebench.text import inflection_stem

    alternatives = []
    for name in names:
        words = re.findall(r"\w+", name.casefold().replace("ё", "е"))
        if not words:
            continue
        parts = []
        for word in words:
            stem, extra = inflection_stem(word)
            parts.append(re.escape(stem) + r"\w{0," + str(extra) + "}")
        alternatives.append(r"\W+".join(parts))
    if not alternatives:
        return None
    return re.compile(
        r"(?<!\w)(?:" + "|".join(sorted(alternatives, key=len, reverse=True)) + r")(?!\w)", re.I
    )


def redact(text: str, names: Sequence[str], lang: str) -> tuple[str, int]:
    """``text`` with every mention of the dish replaced by the word for "dish"; the count."""
    pattern = name_pattern(names)
    if pattern is None:
        return text, 0
    return pattern.subn(DISH_WORD.get(lang, "dish"), text)


class DescriptionTask(_BorschTask):
    """§5 stage 1: "Describe the dish [DISH] without using its name." (greedy by default)."""

    name = "description"

    def meta(self, row: dict[str, Any], lang: str) -> dict[str, Any]:
        return {**super().meta(row, lang), "names": _names(row, self.config)}

    def score(self, meta: dict[str, Any], output: str) -> dict[str, Any]:
        text, count = redact(output or "", meta["names"], meta["lang"])
        return {"description": text.strip(), "redacted": count}

    def aggregate(self, samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for lang in sorted({s["lang"] for s in samples}):
            group = [s for s in samples if s["lang"] == lang]
            out[lang] = {
                "n": len(group),
                "n_dishes": len({s["row_id"] for s in group}),
                "n_with_name_redacted": sum(1 for s in group if s["redacted"]),
                "n_empty": sum(1 for s in group if not s["description"]),
                "mean_characters": sum(len(s["description"]) for s in group) / len(group),
            }
        return out


def _names(row: dict[str, Any], config: str) -> list[str]:
    if config == "parallel":
        return [n for n in (row.get("name_ru"), row.get("name_uk")) if n]
    return [row["name"]]


# ---------------------------------------------------------------------- shared: input runs
class _Stage(Task):
    """A stage that reads the samples of an earlier stage's run (task option ``source``)."""

    config = "parallel"
    languages: tuple[str, ...] = ("ru", "uk")
    needs_dataset = False
    source_tasks: ClassVar[tuple[str, ...]] = ()
    location_options = ("source",)

    def __init__(self, source: str | None = None, **options: Any) -> None:
        from culturebench.eval.run_folder import samples_sha256

        if source is None:
            raise UsageError(
                f"{self.name} needs --option source=RUN (a {' or '.join(self.source_tasks)} run)"
            )
        super().__init__(source=str(source), **options)
        self.source = Path(source)
        self.task_options["source_sha256"] = samples_sha256(self.source)  # pins the input
        self._input: tuple[RunInfo, Sequence[Mapping[str, Any]]] | None = None

    def input_run(self) -> tuple[RunInfo, Sequence[Mapping[str, Any]]]:
        from culturebench.eval.run_folder import read_input_run

        if self._input is None:
            self._input = read_input_run(self.source, dataset="borsch", tasks=self.source_tasks)
        return self._input

    def source_dataset(self) -> dict[str, Any] | None:
        return dict(self.input_run()[0]["dataset"])

    def templates(self, lang: str) -> list[str]:
        return list(
            self.prompt_file["tasks"][self.name].get(lang) or self.prompt_file["tasks"][self.name]["en"]
        )


def _carry(sample: Mapping[str, Any]) -> dict[str, Any]:
    """What every stage carries forward from a description sample."""
    keys = ("row_id", "lang", "gold_origins", "describer")
    return {k: sample[k] for k in keys if k in sample}


# ---------------------------------------------------------------------- 2. translate
class TranslateTask(_Stage):
    """§5 stage 2: the description in English (``source`` = a ``description`` run)."""

    name = "translate"
    source_tasks = ("description",)

    def build(
        self, rows: Sequence[dict[str, Any]], langs: Sequence[str]
    ) -> tuple[list[TaskRequest], dict[str, int]]:
        run, samples = self.input_run()
        describer = run.get("model", {}).get("model")
        requests: list[TaskRequest] = []
        skipped: defaultdict[str, int] = defaultdict(int)
        for sample in samples:
            if sample["lang"] not in langs:
                continue
            if not sample.get("description"):
                skipped["empty description"] += 1
                continue
            prompt = self.templates(sample["lang"])[0].format(text=sample["description"])
            meta = {**_carry(sample), "describer": describer, "description": sample["description"]}
            requests.append(TaskRequest(Request(f"{sample['id']}:en", prompt), meta))
        return requests, dict(skipped)

    def score(self, meta: dict[str, Any], output: str) -> dict[str, Any]:
        return {"text_en": (output or "").strip()}

    def aggregate(self, samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        return {
            lang: {"n": len(group), "n_empty": sum(1 for s in group if not s["text_en"])}
            for lang, group in _by_lang(samples).items()
        }


def _by_lang(samples: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    out: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for sample in samples:
        out[sample["lang"]].append(sample)
    return dict(sorted(out.items()))


# ---------------------------------------------------------------------- 3. images
class DescriptionImagesTask(_Stage):
    """§5 stage 3: images from the English description (``source`` = a ``translate`` run, or
    a ``description`` run of a model that describes in English); ``--repeat-seeds`` = N per dish."""

    name = "description-images"
    output_kind = "image"
    source_tasks = ("translate", "description")

    def build(
        self, rows: Sequence[dict[str, Any]], langs: Sequence[str]
    ) -> tuple[list[TaskRequest], dict[str, int]]:
        run, samples = self.input_run()
        describer = run.get("model", {}).get("model") if run["task"] == "description" else None
        requests: list[TaskRequest] = []
        skipped: defaultdict[str, int] = defaultdict(int)
        for sample in samples:
            if sample["lang"] not in langs:
                continue
            text = sample.get("text_en") if run["task"] == "translate" else sample.get("description")
            if not text:
                skipped["empty text"] += 1
                continue
            meta = {**_carry(sample), "describer": sample.get("describer") or describer}
            requests.append(TaskRequest(Request(f"{sample['row_id']}:{sample['lang']}:img", text), meta))
        return requests, dict(skipped)

    def score(self, meta: dict[str, Any], output: str) -> dict[str, Any]:
        return {}

    def aggregate(self, samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        return {
            lang: {"n": len(group), "n_dishes": len({s["row_id"] for s in group})}
            for lang, group in _by_lang(samples).items()
        }


# ---------------------------------------------------------------------- 4. scores
def reference_frame(vectors: Any, dishes: Sequence[str]) -> dict[str, Any]:
    """Mean cosine of image pairs of the same dish (intra) and of different dishes (inter),
    over all distinct pairs, exactly, in O(n d): with unit rows u, the sum of cosines over
    ordered pairs of a set is |sum u|^2 minus its n self-pairs."""
    import numpy as np

    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    groups: dict[str, list[int]] = defaultdict(list)
    for i, dish in enumerate(dishes):
        groups[dish].append(i)
    total = unit.sum(axis=0)
    block_sq = 0.0
    intra_sum = 0.0
    intra_pairs = 0
    for members in groups.values():
        s = unit[members].sum(axis=0)
        block_sq += float(s @ s)
        intra_sum += float(s @ s) - len(members)
        intra_pairs += len(members) * (len(members) - 1)
    n = len(unit)
    inter_pairs = n * n - sum(len(m) ** 2 for m in groups.values())
    inter_sum = float(total @ total) - block_sq
    return {
        "intra_dish": intra_sum / intra_pairs if intra_pairs else None,
        "inter_dish": inter_sum / inter_pairs if inter_pairs else None,
        "n_images": n,
        "n_dishes": len(groups),
        "pairs": {"intra_dish": intra_pairs // 2, "inter_dish": inter_pairs // 2},
    }


class DescriptionScoresTask(AnalysisTask):
    """§5 stage 4 (``source`` = a ``description-images`` run, ``--model`` = DINOv2)."""

    name = "description-scores"
    config = "parallel"
    languages: tuple[str, ...] = ("ru", "uk")
    source_tasks: ClassVar[tuple[str, ...]] = ("description-images",)
    location_options = ("source",)

    @classmethod
    def report_sections(cls, results: dict[str, Any], folder: Path, rel: str) -> list[str]:
        from culturebench.datasets.borsch.sections import description_sections

        return description_sections(results, folder, rel, POST_SOVIET)

    def __init__(
        self,
        source: str | None = None,
        model: str | None = None,
        model_revision: str | None = None,
        config: str = "parallel",
        batch_size: int = 32,
        **options: Any,
    ) -> None:
        from culturebench.eval.run_folder import samples_sha256

        if source is None or not model:
            raise UsageError(
                "description-scores needs --option source=IMAGES_RUN and --model (a DINOv2 model)"
            )
        if config not in CONFIG_LANGUAGES:
            raise UsageError(f"borsch config {config!r}: choose one of {', '.join(CONFIG_LANGUAGES)}")
        extra = {"config": config} if config != "parallel" else {}
        super().__init__(source=str(source), model=model, **extra, **options)
        if model_revision:
            self.task_options["model_revision"] = model_revision
        self.task_options["source_sha256"] = samples_sha256(source)
        self.source, self.model, self.model_revision = Path(source), model, model_revision
        self.config, self.languages, self.batch_size = config, CONFIG_LANGUAGES[config], int(batch_size)
        self._embedder = None

    def embedder(self):
        from culturebench.eval.embeddings import ImageEmbedder

        if self._embedder is None:
            self._embedder = ImageEmbedder(
                self.model, revision=self.model_revision, batch_size=self.batch_size
            )
            if self._embedder.kind != "dinov2":
                raise UsageError(f"--model {self.model!r} is a {self._embedder.kind} model; §5 uses DINOv2")
        return self._embedder

    def inputs(self) -> dict[str, Any]:
        return {"dinov2": self.embedder().identity()}  # the source: pinned in the task options

    def analyse(self, out: Path, rows: Sequence[dict[str, Any]], progress: Any = None) -> dict[str, Any]:
        import numpy as np

        from culturebench.eval.run_folder import read_input_run

        run, samples = read_input_run(self.source, dataset="borsch", tasks=self.source_tasks)
        embedder = self.embedder()
        # ground truth: every embedded image of every dish in the release config
        gt_bytes, gt_dish = [], []
        for row in rows:
            for data in row_images(row):
                gt_bytes.append(data)
                gt_dish.append(row["id"])
        if not gt_bytes:
            raise CultureBenchError("the release has no embedded images (build it with --images)")
        gt = embedder.embed_images(gt_bytes, progress=progress)
        frame = reference_frame(gt, gt_dish)
        gt_unit = gt / np.linalg.norm(gt, axis=1, keepdims=True)
        by_dish: dict[str, list[int]] = defaultdict(list)
        for i, dish in enumerate(gt_dish):
            by_dish[dish].append(i)
        generated = embedder.embed_images(
            [(self.source / s["output"]).read_bytes() for s in samples],
            names=[str(self.source / s["output"]) for s in samples],
        )
        gen_unit = generated / np.linalg.norm(generated, axis=1, keepdims=True)
        per_item: dict[tuple[str, str], dict[str, Any]] = {}
        skipped = 0
        for sample, vector in zip(samples, gen_unit, strict=True):
            members = by_dish.get(sample["row_id"])
            if not members:
                skipped += 1
                continue
            cosines = gt_unit[members] @ vector
            item = per_item.setdefault(
                (sample["row_id"], sample["lang"]),
                {**_carry(sample), "means": [], "maxes": [], "n_ground_truth": len(members)},
            )
            item["means"].append(float(cosines.mean()))
            item["maxes"].append(float(cosines.max()))
        scored = []
        for item in per_item.values():
            scored.append(
                {
                    "row_id": item["row_id"],
                    "lang": item["lang"],
                    "gold_origins": item["gold_origins"],
                    "score_mean": sum(item["means"]) / len(item["means"]),
                    "score_max": sum(item["maxes"]) / len(item["maxes"]),
                    "n_generated": len(item["means"]),
                    "n_ground_truth": item["n_ground_truth"],
                }
            )
        _write_scores(out / SCORES_CSV, scored)
        metrics: dict[str, Any] = {
            "n": len(scored),
            "n_skipped_no_ground_truth": skipped,
            "reference": {"n": frame["n_images"], **frame},
            "describer": samples[0].get("describer"),
            "t2i_model": run.get("model", {}).get("model"),
        }
        from culturebench.eval.metrics import bootstrap_ci

        for lang, group in _by_lang(scored).items():
            entry: dict[str, Any] = {"n": len(group), "n_dishes": len({s["row_id"] for s in group})}
            for metric in ("score_mean", "score_max"):
                mean, lo, hi = bootstrap_ci([s[metric] for s in group], units=[s["row_id"] for s in group])
                entry[metric] = {"mean": mean, "ci95": [lo, hi]}
            entry["per_country"] = per_country(group, "score_mean")
            metrics[lang] = entry
        return metrics


def _write_scores(path: Path, scored: list[dict[str, Any]]) -> None:
    from culturebench.atomic import write_text_atomic

    lines = ["row_id,lang,origins,score_mean,score_max,n_generated,n_ground_truth"]
    for s in sorted(scored, key=lambda s: (s["lang"], s["row_id"])):
        lines.append(
            f"{s['row_id']},{s['lang']},{' '.join(s['gold_origins'])},{s['score_mean']:.6f},"
            f"{s['score_max']:.6f},{s['n_generated']},{s['n_ground_truth']}"
        )
    write_text_atomic(path, "\n".join(lines) + "\n")


def read_scores(folder: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """(row_id, lang) -> scores, from a ``description-scores`` run's CSV."""
    path = folder / SCORES_CSV
    if not path.is_file():
        raise CultureBenchError(f"{folder} is not a description-scores run (no {SCORES_CSV})")
    with open(path, encoding="utf-8", newline="") as handle:
        return {
            (r["row_id"], r["lang"]): {
                **r,
                "score_mean": float(r["score_mean"]),
                "score_max": float(r["score_max"]),
            }
            for r in csv_dict_reader(handle)
        }


# ---------------------------------------------------------------------- 5. correlations
def read_human_ratings(path: Path) -> dict[tuple[str, str], float]:
    """A ratings CSV (``dish_id``, ``language`` ru/uk, ``rating`` in [0, 1]); errors name the
    file, row and field."""
    if not path.is_file():
        raise SourceError(Location(str(path)), "no such file")
    out: dict[tuple[str, str], float] = {}
    with open(path, encoding="utf-8-sig", newline="") as handle:
        reader = csv_dict_reader(handle)
        missing = [c for c in ("dish_id", "language", "rating") if c not in (reader.fieldnames or [])]
        if missing:
            raise SourceError(
                Location(path.name, 1, missing[0]), "missing column (need dish_id, language, rating)"
            )
        for number, row in enumerate(reader, start=2):
            dish, lang = (row["dish_id"] or "").strip(), (row["language"] or "").strip()
            if not dish:
                raise SourceError(Location(path.name, number, "dish_id"), "empty")
            if lang not in ("ru", "uk"):
                raise SourceError(Location(path.name, number, "language"), f"{lang!r} is not ru or uk")
            try:
                rating = float(row["rating"])
            except (TypeError, ValueError):
                raise SourceError(
                    Location(path.name, number, "rating"), f"{row['rating']!r} is not a number"
                ) from None
            if not 0.0 <= rating <= 1.0:
                raise SourceError(Location(path.name, number, "rating"), f"{rating} is outside [0, 1]")
            if (dish, lang) in out:
                raise SourceError(
                    Location(path.name, number, "dish_id"), f"duplicate rating for {dish} ({lang})"
                )
            out[(dish, lang)] = rating
    return out


def qa_per_dish(folder: Path) -> tuple[RunInfo, dict[tuple[str, str], dict[str, float]]]:
    """(run.json, (row_id, lang) -> mean Jaccard/Dice/Overlap over the prompts and seeds) of an
    origin QA/VQA run."""
    from culturebench.eval.metrics import SET_METRICS
    from culturebench.eval.run_folder import read_input_run

    run, found = read_input_run(
        folder, dataset="borsch", tasks=["origin-qa", "origin-vqa", "origin-vqa-dish"]
    )
    samples: Sequence[Mapping[str, Any]] = found  # read through the task's own fields (the set metrics)
    sums: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for s in samples:
        for metric in SET_METRICS:
            sums[(s["row_id"], s["lang"])][metric].append(float(s[metric]))
    return run, {k: {m: sum(v) / len(v) for m, v in d.items()} for k, d in sums.items()}


class DescriptionCorrelationsTask(AnalysisTask):
    """§5 / App. J: description scores against QA/VQA set overlap and human ratings."""

    name = "description-correlations"
    config = "parallel"
    languages: tuple[str, ...] = ("ru", "uk")
    needs_dataset = False
    location_options = ("scores", "qa", "vqa", "human")  # their contents: sha256 in inputs

    @classmethod
    def report_sections(cls, results: dict[str, Any], folder: Path, rel: str) -> list[str]:
        from culturebench.datasets.borsch.sections import correlation_sections

        return correlation_sections(results, folder, rel)

    def __init__(
        self,
        scores: str | None = None,
        qa: str | None = None,
        vqa: str | None = None,
        human: str | None = None,
        **options: Any,
    ) -> None:
        if scores is None or not (qa or vqa or human):
            raise UsageError(
                "description-correlations needs --option scores=SCORES_RUN and at least one of "
                "qa=RUN, vqa=RUN, human=RATINGS.csv"
            )
        given = {k: str(v) for k, v in {"scores": scores, "qa": qa, "vqa": vqa, "human": human}.items() if v}
        super().__init__(**given, **options)
        self.scores, self.qa, self.vqa = Path(scores), qa and Path(qa), vqa and Path(vqa)
        self.human = human and Path(human)

    def source_dataset(self) -> dict[str, Any] | None:
        from culturebench.eval.run_folder import read_run

        return dict(read_run(self.scores)["dataset"])

    def inputs(self) -> dict[str, Any]:
        """sha256 of every input file (their paths are in the task options)."""
        from culturebench.hashing import sha256_file

        files = {"scores": self.scores / SCORES_CSV}
        for key in ("qa", "vqa"):
            if getattr(self, key):
                files[key] = getattr(self, key) / "samples.jsonl"
        if self.human:
            files["human"] = self.human
        return {f"{k}_sha256": sha256_file(p) if p.is_file() else None for k, p in files.items()}

    def analyse(self, out: Path, rows: Sequence[dict[str, Any]], progress: Any = None) -> dict[str, Any]:
        from culturebench.eval.correlation import correlations
        from culturebench.eval.metrics import SET_METRICS
        from culturebench.eval.run_folder import read_results

        scores = read_scores(self.scores)
        describer = read_results(self.scores)["metrics"].get("describer")
        metrics: dict[str, Any] = {"n": len(scores), "describer": describer}
        scatter: dict[str, list[tuple[float, float, str]]] = defaultdict(list)
        for key in ("qa", "vqa"):
            folder = getattr(self, key)
            if not folder:
                continue
            run, per_dish = qa_per_dish(folder)
            qa_model = run.get("model", {}).get("model")
            table: dict[str, Any] = {"model": qa_model, "same_model_as_describer": qa_model == describer}
            for lang in self.languages:
                pairs = [
                    (scores[k]["score_mean"], per_dish[k]) for k in scores if k[1] == lang and k in per_dish
                ]
                table[lang] = {
                    metric: correlations([p[0] for p in pairs], [p[1][metric] for p in pairs])
                    for metric in SET_METRICS
                }
                scatter[f"{key}_{lang}"] = [(p[1]["jaccard"], p[0], lang) for p in pairs]
            metrics[f"vs_{key}"] = table
        if self.human:
            ratings = read_human_ratings(self.human)
            table = {}
            for lang in self.languages:
                keys = [k for k in ratings if k[1] == lang and k in scores]
                table[lang] = correlations(
                    [ratings[k] for k in keys], [scores[k]["score_mean"] for k in keys], lin=True
                )
                scatter[f"human_{lang}"] = [(ratings[k], scores[k]["score_mean"], lang) for k in keys]
            missing = [k for k in ratings if k not in scores]
            metrics["vs_human"] = {**table, "n_ratings_without_score": len(missing)}
        (out / "scatter.json").write_text(json_text(scatter), encoding="utf-8")
        return metrics


TASKS: dict[str, type[Task]] = {
    task.name: task
    for task in (
        DescriptionTask,
        TranslateTask,
        DescriptionImagesTask,
        DescriptionScoresTask,
        DescriptionCorrelationsTask,
    )
}
