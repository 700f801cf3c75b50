"""World Wide Dishes image experiments (§3): text-to-image generation of the dishes (Fig. 5),
VQA probes of the generated images (App. F) and CLIP descriptor scores (App. G.1).

- ``t2i-generate`` (a text-to-image backend): the paper's one prompt per dish, over the
  whole release or a §3.1 case-study suite (``--option suite=africa5|us``), N images per dish
  with ``--repeat-seeds``.
- ``vqa-probes`` (a vision-language backend): the App. F questions about every image of one
  or more ``t2i-generate`` runs (``--option images=RUN``), answer letters parsed by fixed
  rules (an answer the rules cannot read is counted as unparsed, never guessed), answer
  shares per region x T2I model.
- ``clip-descriptors`` (analysis): App. G.1 on the authors' published embeddings
  (``--option embeddings=clip_probing``) or on the images of ``t2i-generate`` runs embedded
  with a CLIP model (``--option images=RUN --model CLIP``).
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

from culturebench.errors import CultureBenchError, Location, SourceError, UsageError
from culturebench.eval.backends.base import Request
from culturebench.eval.records import RunInfo, Sample, SampleRule
from culturebench.eval.tasks.base import AnalysisTask, Task, TaskRequest
from culturebench.hashing import sha256_file
from culturebench.inputs import csv_dict_reader
from culturebench.yamlio import load_yaml

FOLDER = Path(__file__).resolve().parent
SUITES = ("africa5", "us")
QUESTION_SETS = ("all", "paper")


@cache
def image_eval() -> dict[str, Any]:
    """``image_eval.yaml``: the shipped test suites and VQA question sets."""
    return load_yaml(FOLDER / "image_eval.yaml")


def shipped_file(entry: dict[str, Any]) -> Path:
    """A file shipped in this folder, checked against its pinned sha256."""
    path = FOLDER / entry["file"]
    if not path.is_file():
        raise SourceError(Location(str(path)), "shipped file missing (broken install?)")
    if sha256_file(path) != entry["sha256"]:
        raise SourceError(Location(str(path)), "sha256 differs from image_eval.yaml (edited copy?)")
    return path


def read_suite(name: str) -> list[dict[str, Any]]:
    """The dishes of a §3.1 test suite: ``{country, dish, region, index}`` in file order."""
    if name not in SUITES:
        raise UsageError(f"--option suite={name!r}: choose from {', '.join(SUITES)}")
    entry = image_eval()["test_suites"][name]
    path = shipped_file(entry)
    out: list[dict[str, Any]] = []
    with open(path, encoding="utf-8-sig", newline="") as handle:
        if "columns" in entry:  # one column of dish names per country
            for number, row in enumerate(csv_dict_reader(handle), start=2):
                for country in entry["columns"]:
                    dish = (row.get(country) or "").strip()
                    if dish:
                        out.append({"country": country, "dish": dish, "region": country, "line": number})
        else:
            for number, row in enumerate(csv_dict_reader(handle), start=2):
                dish = (row.get(entry["name_column"]) or "").strip()
                if dish:
                    region = (row.get(entry["region_column"]) or "").strip()
                    out.append({"country": entry["country"], "dish": dish, "region": region, "line": number})
    counts: Counter[str] = Counter()
    for item in out:
        item["index"] = counts[item["country"]]
        counts[item["country"]] += 1
        item["continent"] = entry["continent"]
    return out


def _name_key(name: str) -> str:
    """A dish name for matching suite entries to release rows: case and spacing folded."""
    return " ".join(name.casefold().split())


class T2IGenerate(Task):
    """Fig. 5: "Generate a photograph of food from {country} called {dish}. ..." per dish."""

    name = "t2i-generate"
    config = "default"
    languages: tuple[str, ...] = ("en",)
    output_kind = "image"

    def __init__(self, suite: str | None = None, **options: Any) -> None:
        if suite is not None and suite not in SUITES:
            raise UsageError(f"--option suite={suite!r}: choose from {', '.join(SUITES)}")
        super().__init__(**({"suite": suite} if suite else {}), **options)
        self.suite = suite

    def build(
        self, rows: Sequence[dict[str, Any]], langs: Sequence[str]
    ) -> tuple[list[TaskRequest], dict[str, int]]:
        template = self.templates("en")[0]
        requests: list[TaskRequest] = []
        if self.suite is None:
            for row in rows:
                countries = [c["name"] for c in row["countries"]]
                prompt = template.format(country=", ".join(countries), dish=row["local_name"])
                meta = {
                    "row_id": row["id"],
                    "dish": row["local_name"],
                    "countries": countries,
                    "continents": list(row["continents"]),
                    "regions": list(row["continents"]),
                }
                requests.append(TaskRequest(Request(f"{row['id']}:t2i", prompt), meta))
            return requests, {}
        by_name: dict[tuple[str, str], str] = {}
        for row in rows:
            for code in row["country_codes"]:
                by_name.setdefault((code, _name_key(row["local_name"])), row["id"])
        codes = image_eval()["test_suites"][self.suite]["codes"]
        unmatched = 0
        for item in read_suite(self.suite):
            row_id = by_name.get((codes[item["country"]], _name_key(item["dish"])))
            unmatched += row_id is None
            meta = {
                "row_id": row_id,
                "suite": self.suite,
                "dish": item["dish"],
                "countries": [item["country"]],
                "continents": [item["continent"]],
                "regions": [item["region"]],
            }
            key = f"{self.suite}:{item['country']}:{item['index']:02d}"
            requests.append(
                TaskRequest(Request(key, template.format(country=item["country"], dish=item["dish"])), meta)
            )
        # suite dishes are prompted whether or not the release has a row of that name
        return requests, ({"suite dishes without a matching release row": unmatched} if unmatched else {})

    def score(self, meta: dict[str, Any], output: str) -> dict[str, Any]:
        return {}

    def aggregate(self, samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        per: dict[str, dict[str, Any]] = defaultdict(lambda: {"n": 0, "dishes": set()})
        for sample in samples:
            for region in sample.get("regions") or []:
                per[region]["n"] += 1
                per[region]["dishes"].add(sample["prompt"])
        return {
            "n": len(samples),
            "n_dishes": len({s["prompt"] for s in samples}),
            "per_region": {
                r: {"n": v["n"], "n_dishes": len(v["dishes"])}
                for r, v in sorted(per.items(), key=lambda kv: (-kv[1]["n"], kv[0]))
            },
        }


# ---------------------------------------------------------------------- inputs: image runs
# one loaded t2i-generate run: (model label, folder, run.json, samples)
ImageRun = tuple[str, Path, RunInfo, list[Sample]]


def read_image_run(folder: str | Path) -> tuple[RunInfo, list[Sample]]:
    """(run.json, samples) of a ``t2i-generate`` run, every image checked against the sha256
    its sample records."""
    from culturebench.eval.run_folder import read_input_run

    return read_input_run(folder, dataset="wwd", tasks=[T2IGenerate.name])


def model_label(run: Mapping[str, Any]) -> str:
    """Short name of the T2I model of a run: the last part of its model id or folder."""
    return Path(str(run.get("model", {}).get("model", "model")).rstrip("/")).name or "model"


def _image_runs(images: Any) -> list[Path]:
    folders = images if isinstance(images, list) else [p for p in str(images).split(",") if p.strip()]
    if not folders:
        raise UsageError("--option images=RUN[,RUN...]: give at least one t2i-generate run folder")
    return [Path(str(f).strip()) for f in folders]


class _FromImageRuns:
    """Shared by the tasks that read ``t2i-generate`` runs: loading, labels, dataset pin."""

    def _load_runs(self, images: Any) -> list[ImageRun]:
        runs: list[ImageRun] = []
        for folder in _image_runs(images):
            run, samples = read_image_run(folder)
            runs.append((model_label(run), folder, run, samples))
        labels = Counter(label for label, *_ in runs)
        clash = [label for label, count in labels.items() if count > 1]
        if clash:
            raise UsageError(
                f"--option images: several runs of model {clash[0]!r}; compare one run per model"
            )
        datasets = {json.dumps(run["dataset"], sort_keys=True) for _, _, run, _ in runs}
        if len(datasets) > 1:
            raise UsageError("--option images: the runs were made from different dataset revisions")
        return runs

    def _source(self, runs: list[ImageRun]) -> dict[str, Any]:
        return dict(runs[0][2]["dataset"])


# ---------------------------------------------------------------------- VQA probes
def read_questions(spec: str) -> list[dict[str, Any]]:
    """A question set: ``all`` (Table F.8), ``paper`` (Fig. 7) or a JSON file of the same
    shape (``{"questions": [{question_id, text, choices, type}]}``)."""
    if spec in QUESTION_SETS:
        path = shipped_file(image_eval()["vqa_questions"][spec])
    else:
        path = Path(spec)
        if not path.is_file():
            raise UsageError(f"--option questions={spec!r}: not {' or '.join(QUESTION_SETS)} nor a file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        questions = data["questions"]
    except (ValueError, KeyError, TypeError):
        raise SourceError(Location(str(path)), 'not a question file ({"questions": [...]})') from None
    for number, q in enumerate(questions, start=1):
        for key in ("question_id", "text", "type"):
            if not isinstance(q.get(key), str) or not q[key]:
                raise SourceError(Location(path.name, number, key), "missing or not a string")
        if q["type"] not in ("multiple_choice", "free_form"):
            raise SourceError(Location(path.name, number, "type"), f"unknown question type {q['type']!r}")
        if q["type"] == "multiple_choice" and not (isinstance(q.get("choices"), dict) and q["choices"]):
            raise SourceError(
                Location(path.name, number, "choices"), "a multiple-choice question needs choices"
            )
    return questions


_LEAD = re.compile(r"^\s*[\(\[]?([A-Za-z])[\)\]]?(?=$|[\s.:,)\]])")
_NAMED = re.compile(r"\b(?i:answer|option|choice)\s*(?:is|:)?\s*[\(\[]?([A-Z])[\)\]]?(?=$|[\s.:,)\]])")


def parse_choice(answer: str, choices: dict[str, str]) -> str | None:
    """The letter a model chose, by fixed rules, or None (unparseable: never guessed).

    In order: (1) the answer starts with a letter, alone or as ``A.``/``A:``/``(A)``; (2) it
    names one (``answer is B``, ``Option (C)``); (3) its text equals one choice's text. The
    letter must be one of the question's choices. A leading lone "I"/"A" used as a word
    (``I think...``, ``A plate...``) does not count: the letter must stand alone or be
    followed by punctuation."""
    text = (answer or "").strip()
    valid = {k.upper(): k for k in choices}
    lead = _LEAD.match(text)
    if lead:
        rest = text[lead.end() :]
        letter = lead.group(1).upper()
        standalone = not rest.strip() or rest[:1] in ".:,)]" or text[:1] in "(["
        if standalone and letter in valid:
            return valid[letter]
    named = _NAMED.search(text)
    if named and named.group(1).upper() in valid:
        return valid[named.group(1).upper()]
    plain = re.sub(r"[\s.]+$", "", text).casefold()
    matches = [k for k, v in choices.items() if str(v).casefold() == plain]
    return matches[0] if len(matches) == 1 else None


class VQAProbes(_FromImageRuns, Task):
    """App. F: each question about each generated image; letters parsed, shares per group."""

    name = "vqa-probes"
    config = "default"
    languages: tuple[str, ...] = ("en",)
    needs_images = True
    needs_dataset = False
    # the letter read is ``answer`` (None for an open question, which is not parsed); no score
    record_rule: ClassVar[SampleRule | None] = SampleRule(
        score=(), answer=("answer",), empty_is_unparsed=False
    )

    @classmethod
    def report_sections(cls, results: dict[str, Any], folder: Path, rel: str) -> list[str]:
        from culturebench.datasets.wwd.sections import vqa_sections

        return vqa_sections(results, folder, rel)

    def __init__(self, images: Any = None, questions: str = "all", **options: Any) -> None:
        super().__init__(images=images, questions=questions, **options)
        self.image_runs = images
        self.question_spec = str(questions)
        self._runs: list | None = None

    def runs(self) -> list:
        if self._runs is None:
            if self.image_runs is None:
                raise UsageError("vqa-probes needs --option images=T2I_RUN[,T2I_RUN...]")
            self._runs = self._load_runs(self.image_runs)
        return self._runs

    def source_dataset(self) -> dict[str, Any] | None:
        return self._source(self.runs())

    def build(
        self, rows: Sequence[dict[str, Any]], langs: Sequence[str]
    ) -> tuple[list[TaskRequest], dict[str, int]]:
        choice_template, free_template = self.templates("en")
        questions = read_questions(self.question_spec)
        requests = []
        for label, folder, _run, samples in self.runs():
            for sample in samples:
                image = (folder / sample["output"]).read_bytes()
                for q in questions:
                    if q["type"] == "multiple_choice":
                        choices = " ".join(f"{k}: {v}" for k, v in q["choices"].items())
                        prompt = choice_template.format(question=q["text"], choices=choices)
                    else:
                        prompt = free_template.format(question=q["text"])
                    meta = {
                        "image": sample["id"],
                        "image_sha256": sample["image_sha256"],
                        "t2i_model": label,
                        "dish": sample.get("dish"),
                        "regions": sample.get("regions") or [],
                        "question_id": q["question_id"],
                        "question": q["text"],
                        "type": q["type"],
                        "choices": dict(q.get("choices") or {}),
                    }
                    rid = f"{label}/{sample['id']}#{sample['image_sha256'][:8]}/{q['question_id']}"
                    requests.append(TaskRequest(Request(rid, prompt, (image,)), meta))
        return requests, {}

    def score(self, meta: dict[str, Any], output: str) -> dict[str, Any]:
        if meta["type"] != "multiple_choice":
            return {"answer": None, "parsed": None}
        letter = parse_choice(output, meta["choices"])
        return {"answer": letter, "parsed": letter is not None}

    def aggregate(self, samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """Answer shares (of all images asked, unparsed included) per question x region x
        T2I model; ``n`` images asked, ``unparsed`` share beside the letters."""
        groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
        chosen = [s for s in samples if s.get("type") == "multiple_choice"]
        for s in chosen:
            for region in s.get("regions") or ["(none)"]:
                groups[f"{s['question_id']} | {region} | {s['t2i_model']}"].append(s)
        distribution = {}
        for key, group in sorted(groups.items(), key=lambda kv: _question_order(kv[0])):
            counts = Counter(s["answer"] for s in group)
            row: dict[str, Any] = {"n": len(group)}
            for letter in group[0]["choices"]:
                row[letter] = counts.get(letter, 0) / len(group)
            row["unparsed"] = counts.get(None, 0) / len(group)
            distribution[key] = row
        unparsed = sum(1 for s in chosen if not s.get("parsed"))
        return {
            "n": len(chosen),
            "n_unparsed": unparsed,
            "n_free_form": len(samples) - len(chosen),
            "parsed_rate": (len(chosen) - unparsed) / len(chosen) if chosen else float("nan"),
            "questions": {s["question_id"]: {"text": s["question"], "choices": s["choices"]} for s in chosen},
            "distribution": distribution,
        }


def _question_order(key: str) -> tuple[int, str]:
    qid = key.split(" | ", 1)[0]
    digits = re.sub(r"\D", "", qid)
    return (int(digits) if digits else 0, key)


# ---------------------------------------------------------------------- CLIP descriptors
class CLIPDescriptors(_FromImageRuns, AnalysisTask):
    """App. G.1 per continent x model, on published embeddings or on generated images."""

    name = "clip-descriptors"
    config = "default"
    languages: tuple[str, ...] = ("en",)
    needs_dataset = False

    @classmethod
    def report_sections(cls, results: dict[str, Any], folder: Path, rel: str) -> list[str]:
        from culturebench.datasets.wwd.sections import clip_sections

        return clip_sections(results, folder, rel)

    def __init__(
        self,
        embeddings: str | None = None,
        images: Any = None,
        model: str | None = None,
        model_revision: str | None = None,
        literal: bool = False,
        batch_size: int = 32,
        **options: Any,
    ) -> None:
        given = {k: v for k, v in {"embeddings": embeddings, "images": images, "model": model}.items() if v}
        super().__init__(
            **given,
            **({"model_revision": model_revision} if model_revision else {}),
            **({"literal": True} if literal else {}),
            **options,
        )
        self.embeddings = Path(embeddings) if embeddings else None
        self.image_runs = images
        self.model = model
        self.model_revision = model_revision
        self.literal = bool(literal)
        self.batch_size = int(batch_size)
        self._runs: list | None = None
        self._clip = None

    def _check(self) -> None:
        if (self.embeddings is None) == (self.image_runs is None):
            raise UsageError(
                "clip-descriptors needs exactly one of --option embeddings=CLIP_PROBING_FOLDER "
                "or --option images=T2I_RUN[,T2I_RUN...] (with --model CLIP)"
            )
        if self.image_runs is not None and not self.model:
            raise UsageError("clip-descriptors on generated images needs --model (a CLIP model)")

    def runs(self) -> list:
        if self._runs is None:
            self._check()
            self._runs = self._load_runs(self.image_runs) if self.image_runs is not None else []
        return self._runs

    def source_dataset(self) -> dict[str, Any] | None:
        runs = self.runs()
        return self._source(runs) if runs else None

    def descriptors(self) -> tuple[list[str], list[str], str]:
        spec = self.prompt_file["clip_descriptors"]
        return list(spec["positive"]), list(spec["negative"]), self.templates("en")[0]

    def _embedder(self):
        """The CLIP embedder, made once: ``inputs`` and ``analyse`` share it (and its weights hash)."""
        from culturebench.eval.embeddings import ImageEmbedder

        if self._clip is None:
            embedder = ImageEmbedder(
                str(self.model), revision=self.model_revision, batch_size=self.batch_size
            )
            if embedder.kind != "clip":
                raise UsageError(
                    f"--model {self.model!r} is a {embedder.kind} model; clip-descriptors needs CLIP"
                )
            self._clip = embedder
        return self._clip

    def inputs(self) -> dict[str, Any]:
        self._check()
        if self.embeddings is not None:
            folder = self.embeddings
            if not folder.is_dir():
                raise SourceError(Location(str(folder)), "no such folder (give the clip_probing folder)")
            files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in (".csv", ".ini"))
            return {
                "embeddings": str(folder.resolve()),
                "files_sha256": {p.relative_to(folder).as_posix(): sha256_file(p) for p in files},
            }
        from culturebench.eval.run_folder import SAMPLES

        positive, negative, template = self.descriptors()
        return {
            "images": [
                {
                    "model": label,
                    "run": str(folder.resolve()),
                    "samples_sha256": sha256_file(folder / SAMPLES),
                }
                for label, folder, _run, _samples in self.runs()
            ],
            "clip": self._embedder().identity(),
            "descriptors": {"positive": positive, "negative": negative, "template": template},
        }

    def analyse(self, out: Path, rows: Sequence[dict[str, Any]], progress: Any = None) -> dict[str, Any]:
        import numpy as np

        from culturebench.datasets.wwd.clip_descriptors import read_published, score_groups, write_scores

        self._check()
        if self.embeddings is not None:
            groups, positive, negative = read_published(self.embeddings)
            images = sum(len(matrix) for _c, _m, matrix in groups)
        else:
            embedder = self._embedder()
            pos_names, neg_names, template = self.descriptors()
            positive = embedder.embed_texts([template.format(descriptor=d) for d in pos_names])
            negative = embedder.embed_texts([template.format(descriptor=d) for d in neg_names])
            groups = []
            images = 0
            for label, folder, _run, samples in self.runs():
                vectors = embedder.embed_images(
                    [(folder / s["output"]).read_bytes() for s in samples],
                    names=[str(folder / s["output"]) for s in samples],
                    progress=progress,
                )
                images += len(samples)
                by_continent: dict[str, list[int]] = defaultdict(list)
                for i, sample in enumerate(samples):
                    for continent in sample.get("continents") or []:
                        by_continent[continent].append(i)
                for continent in sorted(by_continent):
                    groups.append((continent, label, vectors[np.asarray(by_continent[continent])]))
            if not groups:
                raise CultureBenchError("the image runs have no images with a continent")
        rows = score_groups(groups, positive, negative, literal=self.literal)
        write_scores(rows, out)
        return {
            "n": images,
            "net_score": "S+ - S- (printed formula)"
            if self.literal
            else "mean cos(positive) - mean cos(negative)",
            "per_group": {
                f"{r['continent']} / {r['model']}": {
                    "n": r["n"],
                    "score": {"mean": r["mean"], "sem": r["sem"]},
                }
                for r in rows
            },
        }


TASKS: dict[str, type[Task]] = {t.name: t for t in (T2IGenerate, VQAProbes, CLIPDescriptors)}
