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

import csv
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from culturebench.errors import Location, SourceError

CRITERIA = ("authenticity", "sensitivity", "harmony")
COLUMNS = ("row_id", "generator", "annotator", *CRITERIA)


def read_human_ratings(path: str | Path, known_ids: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """The rows of a ratings CSV, validated; ``known_ids``: the release's instruction ids (an
    unknown ``row_id`` is then an error)."""
    path = Path(path)
    known = set(known_ids) if known_ids is not None else None
    try:
        handle = path.open(encoding="utf-8-sig", newline="")
    except OSError as exc:
        raise SourceError(Location(path.name), f"cannot read ({exc.strerror})") from None
    rows: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str]] = set()
    with handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames or []
        missing = [c for c in COLUMNS if c not in header]
        if missing:
            raise SourceError(
                Location(path.name, 1, missing[0]), f"missing column (need {', '.join(COLUMNS)})"
            )
        if len(set(header)) != len(header):
            dup = next(c for c in header if header.count(c) > 1)
            raise SourceError(Location(path.name, 1, dup), "duplicated column")
        for number, raw in enumerate(reader, start=2):
            if None in raw:
                raise SourceError(Location(path.name, number), "more fields than columns")
            record: dict[str, Any] = {}
            for key in ("row_id", "generator", "annotator"):
                value = (raw[key] or "").strip()
                if not value:
                    raise SourceError(Location(path.name, number, key), "empty")
                record[key] = value
            if known is not None and record["row_id"] not in known:
                raise SourceError(
                    Location(path.name, number, "row_id"),
                    f"{record['row_id']!r} is not an instruction of the release",
                )
            for criterion in CRITERIA:
                text = (raw[criterion] or "").strip()
                if not text:
                    record[criterion] = None
                    continue
                if not (text.isascii() and text.isdigit() and 1 <= int(text) <= 5):
                    raise SourceError(
                        Location(path.name, number, criterion), f"{text!r} is not an integer 1-5"
                    )
                record[criterion] = int(text)
            key = (record["row_id"], record["generator"], record["annotator"])
            if key in seen:
                raise SourceError(
                    Location(path.name, number, "annotator"), "this annotator rated this recipe twice"
                )
            seen.add(key)
            rows.append(record)
    if not rows:
        raise SourceError(Location(path.name), "no ratings")
    return rows
