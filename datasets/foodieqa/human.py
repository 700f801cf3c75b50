"""Human answers to FoodieQA questions (the paper's Table 1 validation), read from a documented
CSV; human accuracy and Fleiss' kappa per task.

CSV schema (UTF-8, header row, one row per annotator x question):

=============== ==============================================================================
``question_id`` the release's question ``id`` (``mivqa-...``, ``sivqa-...``, ``textqa-...``)
``annotator``   any stable id of the person
``answer``      ``A``-``D`` or ``0``-``3``; empty when the annotator marked the question as
                outside their knowledge (counted, not scored)
=============== ==============================================================================
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from culturebench.errors import Location, SourceError

COLUMNS = ("question_id", "annotator", "answer")


def read_human_answers(path: str | Path, known_ids: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Validated rows: ``answer`` as 0-3 or None; errors name the file, row and field."""
    path = Path(path)
    if not path.is_file():
        raise SourceError(Location(path.name), "no such file")
    known = set(known_ids) if known_ids is not None else None
    rows, seen = [], set()
    with open(path, encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise SourceError(
                Location(path.name, 1, missing[0]), f"missing column (need {', '.join(COLUMNS)})"
            )
        for number, raw in enumerate(reader, start=2):
            qid, who = (raw["question_id"] or "").strip(), (raw["annotator"] or "").strip()
            if not qid:
                raise SourceError(Location(path.name, number, "question_id"), "empty")
            if not who:
                raise SourceError(Location(path.name, number, "annotator"), "empty")
            if known is not None and qid not in known:
                raise SourceError(
                    Location(path.name, number, "question_id"), f"{qid!r} is not a question of the release"
                )
            text = (raw["answer"] or "").strip().upper()
            if len(text) > 1 or (text and text not in "ABCD0123"):
                raise SourceError(Location(path.name, number, "answer"), f"{text!r} is not A-D or 0-3")
            answer = None if not text else ("ABCD".index(text) if text in "ABCD" else int(text))
            if (qid, who) in seen:
                raise SourceError(
                    Location(path.name, number, "annotator"), "this annotator answered this question twice"
                )
            seen.add((qid, who))
            rows.append({"question_id": qid, "annotator": who, "answer": answer})
    if not rows:
        raise SourceError(Location(path.name), "no answers")
    return rows
