"""Readers for upstream tables (xlsx, csv) that report problems by file, row and field.

Row numbers are the ones a person sees when opening the file: the header is row 1.
"""

from __future__ import annotations

import csv
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from culturebench.errors import Location, SourceError


@dataclass(frozen=True)
class SourceRow:
    """One data row of a source table with its position for error messages."""

    file: str
    row: int
    values: dict[str, Any]

    def loc(self, field: str | None = None) -> Location:
        return Location(self.file, self.row, field)

    def __getitem__(self, key: str) -> Any:
        return self.values[key]


def _check_readable(path: Path, name: str) -> None:
    if not path.is_file():
        raise SourceError(Location(name), "no such file")
    if path.stat().st_size == 0:
        raise SourceError(Location(name), "file is empty (0 bytes)")


def _check_header(name: str, header: list[str], required: list[str]) -> None:
    missing = [col for col in required if col not in header]
    if missing:
        raise SourceError(
            Location(name, 1, missing[0]),
            f"missing column(s) {missing}; the header has {header}",
        )


def read_xlsx(path: Path, required: list[str], *, name: str | None = None) -> list[SourceRow]:
    """Read the first sheet of an .xlsx file into rows keyed by the header (row 1).

    Fully empty rows are skipped. A truncated or corrupt workbook, a missing header or a
    missing required column raises :class:`SourceError` naming the file (and row/field).
    """
    from openpyxl import load_workbook
    from openpyxl.utils.exceptions import InvalidFileException

    name = name or path.name
    _check_readable(path, name)
    try:
        workbook = load_workbook(path, read_only=True, data_only=True)
    except (zipfile.BadZipFile, InvalidFileException, KeyError, OSError, ValueError) as exc:
        raise SourceError(
            Location(name), f"not a readable .xlsx workbook (truncated or corrupt?): {exc}"
        ) from exc
    try:
        sheet = workbook.worksheets[0]
        rows = sheet.iter_rows(values_only=True)
        try:
            header_cells = next(rows)
        except StopIteration:
            raise SourceError(Location(name, 1), "the sheet is empty: no header row") from None
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            raise SourceError(Location(name), f"cannot read the sheet: {exc}") from exc
        header = [str(c).strip() if c is not None else "" for c in header_cells]
        _check_header(name, header, required)
        out: list[SourceRow] = []
        try:
            for number, cells in enumerate(rows, start=2):
                if all(c is None or (isinstance(c, str) and not c.strip()) for c in cells):
                    continue
                values = {h: cells[i] if i < len(cells) else None for i, h in enumerate(header) if h}
                out.append(SourceRow(name, number, values))
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
            raise SourceError(
                Location(name, len(out) + 2), f"the workbook is truncated or corrupt: {exc}"
            ) from exc
        return out
    finally:
        workbook.close()


def read_csv(path: Path, required: list[str], *, name: str | None = None) -> list[SourceRow]:
    """Read a UTF-8 CSV with a header row into :class:`SourceRow` records."""
    name = name or path.name
    _check_readable(path, name)
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            header = [h.strip() for h in (reader.fieldnames or [])]
            _check_header(name, header, required)
            return [
                SourceRow(name, reader.line_num, {k.strip(): v for k, v in rec.items() if k})
                for rec in _iter_csv(reader, name)
            ]
    except UnicodeDecodeError as exc:
        raise SourceError(Location(name), f"not valid UTF-8: {exc}") from exc


def _iter_csv(reader: csv.DictReader, name: str) -> Iterator[dict[str, Any]]:
    try:
        yield from reader
    except csv.Error as exc:
        raise SourceError(Location(name, reader.line_num), f"malformed CSV: {exc}") from exc


def read_jsonl(path: Path, *, name: str | None = None) -> list[SourceRow]:
    """Read a JSON Lines file (one object per line; blank lines skipped) into
    :class:`SourceRow` records whose ``row`` is the 1-based line number."""
    import json

    name = name or path.name
    _check_readable(path, name)
    out = []
    try:
        with open(path, encoding="utf-8") as handle:
            for line_no, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    value = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise SourceError(Location(name, line_no), f"not valid JSON: {exc.msg}") from exc
                if not isinstance(value, dict):
                    raise SourceError(Location(name, line_no), "each line must be a JSON object")
                out.append(SourceRow(name, line_no, value))
    except UnicodeDecodeError as exc:
        raise SourceError(Location(name), f"not valid UTF-8: {exc}") from exc
    return out
