"""RuBIN distractor generation (the paper's Section 3.2) through any evaluation backend.

Input: a JSON Lines file of raw questions, one object per line with ``id``, ``question``,
``answer`` (the correct option), ``category`` and ``year`` (integer or null). For each
question:

1. the correct answer's slot A-D is drawn at random (seeded); the draw is *balanced*: the
   slots are a shuffled run of A, B, C, D, so every slot gets n/4 questions (+-1), which
   removes positional bias by construction rather than only in expectation;
2. the model receives the question, the correct answer and that letter (the Russian prompt
   in ``datasets/rubin/prompts.yaml``, key ``distractors``) and writes four lines ``A) ...``
   to ``D) ...``;
3. the four options are read deterministically (Latin A-D, Cyrillic А-Г, or the look-alikes
   А/В/С); the drawn slot always holds the correct answer verbatim (when the model changed it,
   that is counted as ``answer_rewritten``);
4. the paper's filters (:func:`culturebench.datasets.rubin.filters.option_problems`) reject
   the question when an option is empty, repeats another one (including the correct answer) or
   is not in Russian; an output without exactly one line per letter is rejected as
   ``unparseable_output``.

Output folder (written to a temp folder, then renamed; never half-written):

- ``questions.jsonl``: accepted questions in the RuBIN builder's input format;
- ``rejected.jsonl``: rejected ones with the model output and the reasons;
- ``generations.jsonl``: every prompt's raw output and outcome, for the manual review the
  paper did on every item;
- ``distractors_report.json``: counts by outcome and reason, label positions, model,
  sampling, prompt and input hashes.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from culturebench.builders.tables import read_jsonl_table
from culturebench.choice_labels import LETTERS
from culturebench.datasets.rubin.builder import parse_year, required_text
from culturebench.datasets.rubin.filters import normalize_option, option_problems
from culturebench.errors import SourceError
from culturebench.eval.backends.base import Backend, Request
from culturebench.eval.tasks.base import load_prompts
from culturebench.hashing import sha256_file, sha256_text
from culturebench.outputs import OutputKind, claimed_output, staged_output

QUESTIONS = "questions.jsonl"
REJECTED = "rejected.jsonl"
GENERATIONS = "generations.jsonl"
REPORT = "distractors_report.json"

_OPTION_LINE = re.compile(
    r"^\s*(?:[-*]\s+)?(?:\*\*)?[(\[]?\s*([A-Da-dА-ГСа-гс])\s*[)\].:]\s*(?:\*\*)?\s*(.*?)\s*$"
)
# Cyrillic letters as a sequence (А Б В Г) when Б or Г is used, else as Latin look-alikes.
_CYRILLIC_SEQUENCE = {"А": "A", "Б": "B", "В": "C", "Г": "D"}
_LOOKALIKES = {"А": "A", "В": "B", "С": "C"}


@dataclass(frozen=True)
class RawQuestion:
    """One question before distractors: the correct answer and its drawn slot."""

    id: str
    question: str
    answer: str
    category: str
    year: int | None
    slot: int


def prompt_template() -> str:
    """The Russian distractor prompt from ``datasets/rubin/prompts.yaml``."""
    return load_prompts("rubin")["distractors"]["ru"]


def balanced_slots(n: int, seed: int) -> list[int]:
    """``n`` slot indices, each of 0-3 used n/4 times (+-1), in a seeded random order."""
    slots = [i % len(LETTERS) for i in range(n)]
    random.Random(seed).shuffle(slots)
    return slots


def read_raw_questions(path: Path, seed: int) -> list[RawQuestion]:
    """Parse the raw questions file; malformed records raise SourceError (file, line, field)."""
    records = read_jsonl_table(path)
    slots = balanced_slots(len(records), seed)
    seen: dict[str, int] = {}
    out = []
    for rec, slot in zip(records, slots, strict=True):
        qid = required_text(rec, "id")
        if qid in seen:
            raise SourceError(rec.loc("id"), f"id {qid!r} repeats line {seen[qid]}")
        seen[qid] = rec.row
        out.append(
            RawQuestion(
                id=qid,
                question=required_text(rec, "question"),
                answer=required_text(rec, "answer"),
                category=required_text(rec, "category"),
                year=parse_year(rec),
                slot=slot,
            )
        )
    return out


def parse_options(output: str) -> dict[str, str] | None:
    """The four options of a model output keyed A-D, or None unless each letter has exactly
    one line. Surrounding markdown emphasis is dropped; the text is otherwise kept as written."""
    found: list[tuple[str, str]] = []
    for line in output.splitlines():
        match = _OPTION_LINE.match(line)
        if match:
            found.append((match.group(1).upper(), match.group(2).strip("*_ ").strip()))
    cyrillic = _CYRILLIC_SEQUENCE if any(letter in "БГ" for letter, _ in found) else _LOOKALIKES
    options: dict[str, str] = {}
    for letter, text in found:
        key = cyrillic.get(letter, letter)
        if key not in LETTERS or key in options:
            return None
        options[key] = text
    return options if len(options) == len(LETTERS) else None


def assemble(question: RawQuestion, output: str) -> dict[str, Any]:
    """The outcome for one model output: ``status`` accepted/rejected, ``reasons``, the four
    ``options`` (correct answer in its slot) and whether the model had rewritten the answer."""
    parsed = parse_options(output)
    if parsed is None:
        return {"status": "rejected", "reasons": ["unparseable_output"], "options": None, "rewritten": False}
    options = [parsed[letter] for letter in LETTERS]
    rewritten = normalize_option(options[question.slot]) != normalize_option(question.answer)
    options[question.slot] = question.answer
    reasons = [code for code, _ in option_problems(options)]
    return {
        "status": "rejected" if reasons else "accepted",
        "reasons": reasons,
        "options": options,
        "rewritten": rewritten,
    }


def _request(template: str, question: RawQuestion) -> Request:
    prompt = template.format(
        question=question.question, answer=question.answer, letter=LETTERS[question.slot]
    )
    return Request(question.id, prompt)


def _positions(labels: Iterable[str]) -> dict[str, int]:
    counts = Counter(labels)
    return {letter: counts.get(letter, 0) for letter in LETTERS}


def _jsonl(rows: Sequence[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)


def generate_distractors(
    input_path: str | Path,
    backend: Backend,
    out_dir: str | Path,
    *,
    seed: int = 0,
    batch_size: int = 8,
    overwrite: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Run the stage over ``input_path`` with ``backend``; write the output folder and return
    the report. Refuses an existing ``out_dir`` unless ``overwrite``."""
    input_path, out_dir = Path(input_path), Path(out_dir)
    with claimed_output(out_dir, DISTRACTORS_OUTPUT, overwrite=overwrite):
        return _generate(input_path, backend, out_dir, seed, batch_size, overwrite, progress)


DISTRACTORS_OUTPUT = OutputKind("rubin-distractors", (REPORT, QUESTIONS))


def _generate(
    input_path: Path,
    backend: Backend,
    out_dir: Path,
    seed: int,
    batch_size: int,
    overwrite: bool,
    progress: Callable[[int, int], None] | None,
) -> dict[str, Any]:
    questions = read_raw_questions(input_path, seed)
    template = prompt_template()
    outputs: list[str] = []
    for start in range(0, len(questions), batch_size):
        batch = questions[start : start + batch_size]
        outputs += backend.generate([_request(template, q) for q in batch])
        if progress:
            progress(len(outputs), len(questions))

    accepted, rejected, generations = [], [], []
    reasons: Counter[str] = Counter()
    rewritten = 0
    for question, output in zip(questions, outputs, strict=True):
        outcome = assemble(question, output)
        rewritten += outcome["rewritten"]
        reasons.update(outcome["reasons"])
        base = {"id": question.id, "question": question.question, "category": question.category}
        generations.append({**base, "slot": LETTERS[question.slot], "output": output, **outcome})
        if outcome["status"] == "accepted":
            accepted.append(
                {
                    **base,
                    "options": outcome["options"],
                    "label": LETTERS[question.slot],
                    "year": question.year,
                }
            )
        else:
            rejected.append(
                {**base, "answer": question.answer, "output": output, "reasons": outcome["reasons"]}
            )

    report = {
        "input": {"file": input_path.name, "sha256": sha256_file(input_path), "questions": len(questions)},
        "accepted": len(accepted),
        "rejected": len(rejected),
        "rejection_reasons": dict(reasons.most_common()),
        "answer_rewritten_by_model": rewritten,
        "label_positions_drawn": _positions(LETTERS[q.slot] for q in questions),
        "label_positions_accepted": _positions(row["label"] for row in accepted),
        "seed": seed,
        "prompt_sha256": sha256_text(template),
        "model": backend.describe(),
    }
    with staged_output(out_dir, DISTRACTORS_OUTPUT, overwrite=overwrite) as staged:
        (staged / QUESTIONS).write_text(_jsonl(accepted), encoding="utf-8")
        (staged / REJECTED).write_text(_jsonl(rejected), encoding="utf-8")
        (staged / GENERATIONS).write_text(_jsonl(generations), encoding="utf-8")
        (staged / REPORT).write_text(
            json.dumps(report, ensure_ascii=False, indent=2, sort_keys=True) + "\n", encoding="utf-8"
        )
    return report
