"""A model as the reader of answers (``eval score --answer-reader model:BACKEND:MODEL``).

The rule readers (:mod:`.countries`, :mod:`culturebench.eval.multiple_choice`,
:mod:`culturebench.eval.ratings`) read every answer; a reader model reads each answer again into
the same fields, as JSON (constrained to a JSON Schema where the engine supports it: vLLM
structured outputs, OpenAI ``response_format``; other engines get the schema in the prompt and
their answer is parsed leniently). The model's reading is written back as a canonical answer
("Answer: Ukraine, Russia", "<answer>B</answer>", "AUTHENTICITY: 4 ...") that the task scores
with its own code, so every task that reads a country, a letter or a rating takes a model
reader with no code of its own.

Every run that uses it records its agreement with the rule reader (``answer_reader`` in
``run.json``/``results.json``) and lists each disagreement in ``answer_reader_disagreements.jsonl``
for audit. The model's answers are cached by prompt in ``answer_reader.jsonl`` (a rerun pays
nothing twice).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from culturebench.hashing import sha256_text

CACHE = "answer_reader.jsonl"
DISAGREEMENTS = "answer_reader_disagreements.jsonl"
#: the parser a task declares -> what the reader model is asked to read
KINDS = {"country": "country", "letters": "choice", "ratings": "ratings"}
#: the answer is cut to this many characters in the reader's prompt (its end kept: that is
#: where answers conclude)
MAX_ANSWER_CHARS = 6000

_INSTRUCTIONS = {
    "country": (
        "You read a model's answer to a question about which country or countries a dish comes from "
        "(or where it is eaten). Give the countries the answer COMMITS TO as ISO 3166-1 alpha-2 codes, "
        "in the answer's order. Not a country the answer rules out or negates, not one mentioned only as "
        "context (also eaten in, similar dishes, neighbours, often confused with), not one a later "
        "correction replaced; a region inside one country gives that country; a region spanning several "
        "countries or a state that no longer exists gives none; an undecided 'X or Y' gives both. "
        'Answer only with JSON: {"countries": ["UA"]}; {"countries": []} when it commits to none.'
    ),
    "choice": (
        "You read a model's answer to a multiple-choice question. Give the ONE option label the answer "
        "finally commits to (after any reasoning or change of mind; an option's text or its position "
        "counts as its label). Not a label it rules out; null when it commits to none or stays between "
        'two. Answer only with JSON: {"choice": "B"} or {"choice": null}.'
    ),
    "ratings": (
        "You read an evaluator's ratings of a recipe. For each criterion give the integer 1-5 the "
        "evaluator finally gives it (a stated revision wins over a draft); null when missing, not an "
        "integer from 1 to 5 (a half point, another scale, a range), or given two different values "
        "without a stated revision. Answer only with JSON: "
        '{"authenticity": 4, "sensitivity": null, "harmony": 3}.'
    ),
}


def reader_kind(task: Any) -> str:
    """What the reader model reads for ``task`` (from the parsers it declares), or an error."""
    from culturebench.errors import UsageError

    kinds = [KINDS[p] for p in getattr(task, "parsers", ()) or () if p in KINDS]
    if not kinds:
        raise UsageError(
            f"task {task.name!r} reads no country, option letter or rating: "
            "--answer-reader model has nothing to read"
        )
    return kinds[0]


def schema(kind: str, labels: Sequence[str] = (), criteria: Sequence[str] = ()) -> dict[str, Any]:
    """The JSON Schema of a reading of ``kind``."""
    if kind == "country":
        item = {"type": "string", "pattern": "^[A-Z]{2}$"}
        properties: dict[str, Any] = {"countries": {"type": "array", "items": item}}
    elif kind == "choice":
        properties = {"choice": {"anyOf": [{"type": "string", "enum": list(labels)}, {"type": "null"}]}}
    else:
        properties = {
            c: {"anyOf": [{"type": "integer", "minimum": 1, "maximum": 5}, {"type": "null"}]}
            for c in criteria
        }
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def reading_prompt(kind: str, sample: dict[str, Any], labels: Sequence[str] = ()) -> str:
    """The prompt that asks the reader model to read one sample's answer."""
    answer = str(sample.get("output") or "")
    if len(answer) > MAX_ANSWER_CHARS:
        answer = "[...]" + answer[-MAX_ANSWER_CHARS:]
    question = str(sample.get("prompt") or "")[:3000]
    parts = [_INSTRUCTIONS[kind], "", f"QUESTION:\n{question}"]
    if kind == "choice":
        options = sample.get("options")
        parts.append(f"LABELS: {', '.join(labels)}")
        if options:
            listed = zip(labels, options, strict=False)
            parts.append("OPTIONS:\n" + "\n".join(f"{label}) {text}" for label, text in listed))
    parts += ["", f"ANSWER TO READ:\n{answer}", "", "JSON:"]
    return "\n".join(parts)


def parse_reading(kind: str, text: str, labels: Sequence[str] = (), criteria: Sequence[str] = ()) -> Any:
    """The reading in a reader model's answer (the first JSON object in it), or ``False`` when
    it holds none in the asked form. A country reading is a list of codes, a choice a label or
    None, ratings a dict of criterion -> int or None."""
    match = re.search(r"\{.*?\}", text or "", re.DOTALL)
    if not match:
        return False
    try:
        data = json.loads(re.sub(r",\s*}", "}", match.group(0)))
    except ValueError:
        return False
    if not isinstance(data, dict):
        return False
    if kind == "country":
        codes = data.get("countries")
        if not isinstance(codes, list) or not all(
            isinstance(c, str) and re.fullmatch(r"[A-Za-z]{2}", c) for c in codes
        ):
            return False
        return list(dict.fromkeys(c.upper() for c in codes))
    if kind == "choice":
        choice = data.get("choice")
        if choice is None:
            return None
        choice = str(choice).strip().upper()
        return choice if choice in labels else False
    out = {}
    for criterion in criteria:
        value = data.get(criterion)
        out[criterion] = (
            value if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 5 else None
        )
    return out


def canonical_answer(kind: str, reading: Any, criteria: Sequence[str] = ()) -> str:
    """A reading written as an answer the rule reader reads exactly as it is."""
    if kind == "country":
        from culturebench.countries import country_name

        return f"Answer: {', '.join(country_name(c, 'en') for c in reading)}." if reading else ""
    if kind == "choice":
        return f"<answer>{reading}</answer>" if reading else ""
    return "\n".join(f"{c.upper()}: {reading[c] if reading.get(c) else 'N/A'}" for c in criteria)


def rule_reading(kind: str, sample: dict[str, Any], criteria: Sequence[str] = ()) -> Any:
    """The rule reader's reading as the task scored it (from the sample's fields)."""
    if kind == "country":
        return list(sample.get("predicted") or [])
    if kind == "choice":
        return sample.get("pred")
    return {c: sample.get(c) for c in criteria}


def _same(kind: str, a: Any, b: Any) -> bool:
    if kind == "country":
        return sorted(a or []) == sorted(b or [])
    return a == b


def read_with_model(
    task: Any,
    samples: Sequence[dict[str, Any]],
    backend: Any,
    out_dir: Path,
    *,
    batch_size: int = 8,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Samples re-scored on the reader model's readings, and the ``answer_reader`` summary:
    the model, n, agreement with the rule reader, disagreements (listed in
    ``answer_reader_disagreements.jsonl``) and answers not in the asked form (scored on the rule
    reading, counted ``model_unreadable``)."""
    from culturebench.atomic import write_text_atomic
    from culturebench.choice_labels import LETTERS
    from culturebench.jsonsafe import json_text

    kind = reader_kind(task)
    criteria = tuple(getattr(task, "criteria", ()))
    labels = tuple(getattr(task, "labels", None) or LETTERS)
    constraint = json.dumps(schema(kind, labels, criteria), sort_keys=True)
    prompts = [reading_prompt(kind, s, labels) for s in samples]
    from culturebench.eval.judge import answer_cached

    cache, _ = answer_cached(
        backend,
        prompts,
        Path(out_dir) / CACHE,
        batch_size=batch_size,
        progress=progress,
        json_schema=constraint,
    )
    rescored: list[dict[str, Any]] = []
    disagreements: list[str] = []
    unreadable = agree = 0
    for sample, prompt in zip(samples, prompts, strict=True):
        answer = cache[sha256_text(prompt)]
        reading = parse_reading(kind, answer, labels, criteria)
        rules = rule_reading(kind, sample, criteria)
        if reading is False:
            unreadable += 1
            rescored.append({**sample, "read_by": "rules", "reader_model_answer": answer})
            continue
        same = _same(kind, reading, rules)
        agree += same
        if not same:
            disagreements.append(
                json_text(
                    {"id": sample["id"], "rules": rules, "model": reading, "output": sample.get("output")}
                )
            )
        scored = task.score(sample, canonical_answer(kind, reading, criteria))
        rescored.append({**sample, **scored, "read_by": "model", "rule_reading": rules})
    write_text_atomic(Path(out_dir) / DISAGREEMENTS, "".join(disagreements))
    read = len(samples) - unreadable
    summary = {
        "reader": "model",
        "model": backend.describe(),
        "kind": kind,
        "constrained": _constrained(backend),
        "n": len(samples),
        "read": read,
        "agreement_with_rules": agree / read if read else None,
        "disagreements": len(disagreements),
        "model_unreadable": unreadable,
        "disagreements_file": DISAGREEMENTS,
    }
    return rescored, summary


def _constrained(backend: Any) -> bool:
    """Whether the backend constrains its answer to the schema (``Backend.CONSTRAINS_JSON``)."""
    return bool(getattr(backend, "CONSTRAINS_JSON", False))
