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
from culturebench.inputs import DuplicateKey, csv_reader, unique_pairs
from culturebench.text import cell_problem

#: Workbooks are zip files; their XML parts are capped when uncompressed (the real upstream
#: workbooks are under 1 MB uncompressed) so a small file cannot expand into gigabytes.
MAX_XLSX_UNCOMPRESSED = 64 * 1024 * 1024


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
    from culturebench.inputs import check_header

    check_header(header, name, row=1, required=required)


def read_xlsx(path: Path, required: list[str], *, name: str | None = None) -> list[SourceRow]:
    """Read the first sheet of an .xlsx file into rows keyed by the header (row 1).

    Fully empty rows are skipped. A truncated or corrupt workbook, a missing header or a
    missing required column raises :class:`SourceError` naming the file (and row/field).
    """
    from openpyxl import load_workbook

    name = name or path.name
    _check_readable(path, name)
    _check_expansion(path, name)
    try:
        workbook = load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises zip, XML-parser and value errors alike
        raise SourceError(
            Location(name), f"not a readable .xlsx workbook (truncated or corrupt?): {_short(exc)}"
        ) from None
    try:
        sheet = workbook.worksheets[0]
        rows = sheet.iter_rows(values_only=True)
        try:
            header_cells = next(rows)
        except StopIteration:
            raise SourceError(Location(name, 1), "the sheet is empty: no header row") from None
        except Exception as exc:  # malformed or hostile sheet XML
            raise SourceError(Location(name), f"cannot read the sheet: {_short(exc)}") from None
        header = [str(c).strip() if c is not None else "" for c in header_cells]
        _check_header(name, header, required)
        out: list[SourceRow] = []
        try:
            for number, cells in enumerate(rows, start=2):
                if all(c is None or (isinstance(c, str) and not c.strip()) for c in cells):
                    continue
                for i, cell in enumerate(cells):
                    title = header[i] if i < len(header) else ""
                    if not title and cell is not None and str(cell).strip():
                        raise SourceError(
                            Location(name, number, f"column {i + 1}"),
                            f"value {str(cell)[:40]!r} in a column without a header; it would be dropped",
                        )
                    if isinstance(cell, str):
                        _check_cell(name, number, title, cell)
                values = {h: cells[i] if i < len(cells) else None for i, h in enumerate(header) if h}
                out.append(SourceRow(name, number, values))
        except SourceError:
            raise
        except Exception as exc:  # truncated zip member, malformed XML mid-sheet
            raise SourceError(
                Location(name, len(out) + 2), f"the workbook is truncated or corrupt: {_short(exc)}"
            ) from None
        return out
    finally:
        workbook.close()


def read_csv(path: Path, required: list[str], *, name: str | None = None) -> list[SourceRow]:
    """Read a UTF-8 CSV with a header row into :class:`SourceRow` records."""
    name = name or path.name
    _check_readable(path, name)
    try:  # utf-8-sig: a byte-order mark (what Excel writes) is read, not part of the header
        with open(path, encoding="utf-8-sig", newline="") as handle:
            reader = csv_reader(handle)
            try:
                header = [h.strip() for h in next(reader)]
            except StopIteration:
                raise SourceError(Location(name, 1), "the file is empty: no header row") from None
            except csv.Error as exc:
                raise SourceError(Location(name, 1), f"malformed CSV: {exc}") from None
            _check_header(name, header, required)
            out = []
            for cells in _iter_csv(reader, name):
                row = reader.line_num
                if not cells:
                    continue
                if len(cells) > len(header) and any(c.strip() for c in cells[len(header) :]):
                    raise SourceError(
                        Location(name, row, f"column {len(header) + 1}"),
                        f"the row has {len(cells)} fields, the header {len(header)}; "
                        "extra fields would be dropped",
                    )
                for title, cell in zip(header, cells, strict=False):
                    _check_cell(name, row, title, cell)
                values = {h: (cells[i] if i < len(cells) else None) for i, h in enumerate(header) if h}
                out.append(SourceRow(name, row, values))
            return out
    except UnicodeDecodeError as exc:
        raise SourceError(Location(name), f"not valid UTF-8: {exc}") from None


def _iter_csv(reader: Any, name: str) -> Iterator[list[str]]:
    try:
        yield from reader
    except csv.Error as exc:
        raise SourceError(Location(name, reader.line_num), f"malformed CSV: {exc}") from None


def _check_cell(name: str, row: int, field: str, value: str) -> None:
    problem = cell_problem(value)
    if problem:
        raise SourceError(Location(name, row, field or None), f"the value {problem}")


def _check_expansion(path: Path, name: str) -> None:
    """Refuse a workbook whose parts would expand beyond :data:`MAX_XLSX_UNCOMPRESSED`."""
    try:
        with zipfile.ZipFile(path) as archive:
            total = sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise SourceError(
            Location(name), f"not a readable .xlsx workbook (truncated or corrupt?): {_short(exc)}"
        ) from None
    if total > MAX_XLSX_UNCOMPRESSED:
        raise SourceError(
            Location(name),
            f"the workbook expands to {total:,} bytes (limit {MAX_XLSX_UNCOMPRESSED:,}): refused "
            "as a possible zip bomb",
        )


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]


def read_jsonl_table(path: Path, *, name: str | None = None) -> list[SourceRow]:
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
                    value = json.loads(line, object_pairs_hook=unique_pairs)
                except json.JSONDecodeError as exc:
                    raise SourceError(Location(name, line_no), f"not valid JSON: {exc.msg}") from None
                except DuplicateKey as exc:
                    raise SourceError(
                        Location(name, line_no, exc.key), "key appears twice in one object"
                    ) from None
                except RecursionError:
                    raise SourceError(Location(name, line_no), "JSON nested too deeply") from None
                except ValueError as exc:  # int() refuses a number of more than 4,300 digits
                    raise SourceError(Location(name, line_no), f"not readable JSON: {_short(exc)}") from None
                if not isinstance(value, dict):
                    raise SourceError(Location(name, line_no), "each line must be a JSON object")
                for key, item in value.items():
                    if isinstance(item, str):
                        _check_cell(name, line_no, key, item)
                out.append(SourceRow(name, line_no, value))
    except UnicodeDecodeError as exc:
        raise SourceError(Location(name), f"not valid UTF-8: {exc}") from None
    return out


INT64_MAX = 2**63 - 1


def parse_int(value: Any, where: Location, what: str = "an integer", *, minimum: int = 0) -> int:
    """A whole number from a cell: an int, an integral float, or ASCII digits. Refuses
    booleans, look-alike digits (``²``, ``٣``), and values outside ``minimum``..int64 (they
    would overflow the Parquet column) with a SourceError naming ``where``."""
    number: int | None = None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str):
        text = value.strip()
        if text.isascii() and text.isdigit():
            number = int(text)
    if number is None:
        raise SourceError(where, f"expected {what}, got {value!r}")
    if not minimum <= number <= INT64_MAX:
        raise SourceError(where, f"{what} {number} is out of range ({minimum}..{INT64_MAX})")
    return number
