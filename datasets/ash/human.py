"""Human ratings of generated recipes (the paper's stratified human sample, §3.3), read from a
documented CSV and compared with the LLM judges.

CSV schema (UTF-8, header row, one row per annotator x recipe):

============== ===============================================================================
``row_id``     the instruction id of the release (``ash-<cuisine>-<dish>``)
``generator``  the recipe generator's name, as the judge runs name it (the last part of the
               ``generate`` run's model id, e.g. ``llama3.1:8b``)
``annotator``  any stable id of the person
``authenticity``, ``sensitivity``, ``harmony``: an integer 1-5, or empty when not rated
============== ===============================================================================

Bad rows are one-line errors naming the file, the row and the field; nothing is guessed.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from culturebench.errors import Location, SourceError

CRITERIA = ("authenticity", "sensitivity", "harmony")
COLUMNS = ("row_id", "generator", "annotator", *CRITERIA)


def read_human_ratings(path: str | Path, known_ids: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """The rows of a ratings CSV, validated; ``known_ids``: the release's instruction ids (an
    unknown ``row_id`` is then an error). The file is read strictly
    (:func:`culturebench.inputs.read_csv_records`: UTF-8, no column twice, no value beyond
    the header)."""
    from culturebench.inputs import read_csv_records

    path = Path(path)
    known = set(known_ids) if known_ids is not None else None
    records = read_csv_records(path, what="a ratings CSV", required=COLUMNS)
    rows: list[dict[str, Any]] = []
    seen: dict[tuple[str, str, str], int] = {}
    for number, raw in records:
        record: dict[str, Any] = {}
        for key in ("row_id", "generator", "annotator"):
            value = raw[key].strip()
            if not value:
                raise SourceError(Location(path.name, number, key), "empty")
            record[key] = value
        if known is not None and record["row_id"] not in known:
            raise SourceError(
                Location(path.name, number, "row_id"),
                f"{record['row_id']!r} is not an instruction of the release",
            )
        for criterion in CRITERIA:
            text = raw[criterion].strip()
            if not text:
                record[criterion] = None
                continue
            if not (text.isascii() and text.isdigit() and 1 <= int(text) <= 5):
                raise SourceError(Location(path.name, number, criterion), f"{text!r} is not an integer 1-5")
            record[criterion] = int(text)
        rating = (record["row_id"], record["generator"], record["annotator"])
        if rating in seen:
            raise SourceError(
                Location(path.name, number, "annotator"),
                f"this annotator rated this recipe twice (rows {seen[rating]} and {number})",
            )
        seen[rating] = number
        rows.append(record)
    if not rows:
        raise SourceError(Location(path.name), "no ratings")
    return rows
