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

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from culturebench.errors import Location, SourceError

COLUMNS = ("question_id", "annotator", "answer")


def read_human_answers(path: str | Path, known_ids: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Validated rows: ``answer`` as 0-3 or None; errors name the file, row and field. The
    file is read strictly (:func:`culturebench.inputs.read_csv_records`: UTF-8, no column
    twice, no value beyond the header)."""
    from culturebench.inputs import read_csv_records

    path = Path(path)
    known = set(known_ids) if known_ids is not None else None
    records = read_csv_records(path, what="a human-answers CSV", required=COLUMNS)
    rows: list[dict[str, Any]] = []
    seen: dict[tuple[str, str], int] = {}
    for number, raw in records:
        qid, who = raw["question_id"].strip(), raw["annotator"].strip()
        if not qid:
            raise SourceError(Location(path.name, number, "question_id"), "empty")
        if not who:
            raise SourceError(Location(path.name, number, "annotator"), "empty")
        if known is not None and qid not in known:
            raise SourceError(
                Location(path.name, number, "question_id"), f"{qid!r} is not a question of the release"
            )
        text = raw["answer"].strip().upper()
        if len(text) > 1 or (text and text not in "ABCD0123"):
            raise SourceError(Location(path.name, number, "answer"), f"{text!r} is not A-D or 0-3")
        answer = None if not text else ("ABCD".index(text) if text in "ABCD" else int(text))
        if (qid, who) in seen:
            raise SourceError(
                Location(path.name, number, "annotator"),
                f"this annotator answered this question twice (rows {seen[(qid, who)]} and {number})",
            )
        seen[(qid, who)] = number
        rows.append({"question_id": qid, "annotator": who, "answer": answer})
    if not rows:
        raise SourceError(Location(path.name), "no answers")
    return rows
