"""Strict readers for the files a command reads (CSV tables, JSON, JSON Lines).

Every reader reads the whole file or raises :class:`~culturebench.errors.SourceError` whose
message starts with the file, the row (line) and, where there is one, the field, e.g.
``ratings.csv, row 1, field 'annotator': column 'annotator' appears twice in the header
(columns 3 and 5); one would silently replace the other``. Nothing is guessed and nothing is
silently dropped or replaced:

* text is UTF-8 (a UTF-8 byte-order mark is allowed and removed); a UTF-16/UTF-32
  byte-order mark, a NUL byte (binary data, or UTF-16 without a mark) or invalid UTF-8 is an
  error naming the line of the first bad byte;
* a missing path is ``no such file``; a folder, or anything else that is not a regular file
  (a FIFO would block), given where a file is expected, is an error saying so;
* CSV: the header is the first non-blank row; a header cell repeated, a header without any
  name, a value in a column without a header, or a row with more values than the header has
  columns is an error (``csv.DictReader`` would silently keep the last of two equal
  columns and file extra values under ``None``);
* CSV: a cell of any length is read (Python's ``csv`` refuses cells over 131,072 characters
  unless told otherwise; every CSV reader goes through :func:`csv_reader`, which lifts that
  limit): a long recorded answer is scored on its first 20,000 characters and counted, not
  refused as malformed;
* JSON: a key repeated in one object is an error naming its line (``json`` keeps the last
  value), and so is nesting too deep for the parser (``RecursionError``).

Row numbers are the ones a person sees: in a CSV file the spreadsheet row (the header is row
1, a value spanning several lines is one row); in JSON and JSON Lines the line number. Errors
about bytes (encoding, NUL) give the line of the file in ``row``.

Names in messages: ``name`` (default: the file's name, ``path.name``) is what errors call
the file; pass ``str(path)`` where two inputs may share a name.

API (all raise ``SourceError``):

* :func:`read_text` -> ``str``
* :func:`decode_text` -> ``str`` (the same checks on bytes already read)
* :func:`csv_reader` -> ``csv.reader`` with no practical cell-length limit
* :func:`read_csv_rows` -> ``[(row, [cells])]``, the header included (no header checks)
* :func:`check_header` (duplicate / empty / missing columns)
* :func:`read_csv_records` -> ``[(row, {column: value})]``, the header checked
* :func:`loads_json_strict` -> any JSON value (duplicate keys and deep nesting refused)
* :func:`read_json` -> any JSON value of a file
* :func:`read_jsonl` -> ``[(line, {object})]``, optionally with a unique key per line
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import re
import stat
import sys
from collections.abc import Iterable, Sequence
from json.decoder import scanstring  # type: ignore[attr-defined]  # in the module, not in typeshed's stub
from pathlib import Path
from typing import TYPE_CHECKING, Any

from culturebench.errors import Location, SourceError

if TYPE_CHECKING:
    from _csv import Reader

__all__ = [
    "CSV_FIELD_LIMIT",
    "check_header",
    "csv_dict_reader",
    "csv_reader",
    "decode_text",
    "loads_json_strict",
    "read_csv_records",
    "read_csv_rows",
    "read_json",
    "read_jsonl",
    "read_text",
]

#: byte-order marks of encodings that are not UTF-8 (UTF-32 first: its LE mark starts with
#: the UTF-16 LE one)
_FOREIGN_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)
_SAVE_AS = "save it as UTF-8"


def _name(path: Path, name: str | None) -> str:
    return name if name is not None else (path.name or str(path))


# ---------------------------------------------------------------------------------- text
def read_text(path: str | Path, *, what: str = "a file", name: str | None = None) -> str:
    """The whole file as text, decoded by :func:`decode_text` (line endings kept as they are).

    ``what`` says what the file should be, for the error when the path is a folder, e.g.
    ``what="a CSV table"`` -> ``runs: a folder, expected a CSV table``.
    """
    path = Path(path)
    label = _name(path, name)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise SourceError(Location(label), "no such file") from None
    except OSError as exc:
        raise SourceError(Location(label), f"cannot read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(mode):
        raise SourceError(Location(label), f"a folder, expected {what}")
    if not stat.S_ISREG(mode):
        raise SourceError(Location(label), f"not a regular file, expected {what}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SourceError(Location(label), f"cannot read ({exc.strerror or exc})") from None
    return decode_text(data, label)


def _line_and_byte(data: bytes, index: int) -> tuple[int, int]:
    """1-based line and byte-in-line of ``data[index]``."""
    start = data.rfind(b"\n", 0, index) + 1
    return data.count(b"\n", 0, index) + 1, index - start + 1


def decode_text(data: bytes, name: str) -> str:
    """``data`` as UTF-8 text without a leading byte-order mark; ``name`` is the file in the
    errors: a UTF-16/32 byte-order mark (row 1), a NUL byte or invalid UTF-8 (the line of the
    first bad byte)."""
    for bom, encoding in _FOREIGN_BOMS:
        if data.startswith(bom):
            why = f"{encoding} text (it starts with a {encoding} byte-order mark), not UTF-8"
            raise SourceError(Location(name, 1), f"{why}; {_SAVE_AS}")
    try:
        text = data.decode("utf-8")
        bad = len(data)
    except UnicodeDecodeError as exc:
        text, bad = "", exc.start
    nul = data.find(b"\x00", 0, bad)
    if nul >= 0:
        line, byte = _line_and_byte(data, nul)
        raise SourceError(
            Location(name, line),
            f"NUL byte at line {line}, byte {byte}: a binary file, or UTF-16/32 text without a "
            f"byte-order mark; {_SAVE_AS}",
        )
    if bad < len(data):
        line, byte = _line_and_byte(data, bad)
        raise SourceError(
            Location(name, line),
            f"not valid UTF-8: byte 0x{data[bad]:02x} at line {line}, byte {byte}; {_SAVE_AS}",
        )
    return text.removeprefix("\ufeff")


# ----------------------------------------------------------------------------------- CSV
#: The longest CSV cell read, in characters: as long as the C ``long`` behind
#: ``csv.field_size_limit`` allows (Python's default, 131,072, refused a long recorded answer,
#: even in a column nothing reads, as "malformed CSV"). A file is read whole anyway, so its
#: size, not this, is what bounds memory; long answers are cut for scoring later
#: (``MAX_SCORED_CHARS``, counted in ``outputs_cut_for_scoring``).
CSV_FIELD_LIMIT = min(sys.maxsize, 2**31 - 1)


def csv_reader(lines: Iterable[str], **options: Any) -> Reader:
    """``csv.reader(lines, **options)`` with the cell-length limit lifted to
    :data:`CSV_FIELD_LIMIT`: the one way culturebench reads CSV (the limit is process-wide
    state of the ``csv`` module, set here before every read)."""
    if csv.field_size_limit() < CSV_FIELD_LIMIT:
        csv.field_size_limit(CSV_FIELD_LIMIT)
    return csv.reader(lines, **options)


def csv_dict_reader(lines: Iterable[str], **options: Any) -> csv.DictReader[str]:
    """``csv.DictReader`` with the limit of :func:`csv_reader` (for a dataset's own shipped
    tables; files a user gives go through :func:`read_csv_records`, which checks the header)."""
    if csv.field_size_limit() < CSV_FIELD_LIMIT:
        csv.field_size_limit(CSV_FIELD_LIMIT)
    return csv.DictReader(lines, **options)


def read_csv_rows(
    path: str | Path, *, what: str = "a CSV file", name: str | None = None
) -> list[tuple[int, list[str]]]:
    """Every non-blank row of a CSV file as ``(row, cells)``, the header included and
    unchecked (for tables whose first column holds row labels under an empty title). Blank
    rows are left out but counted, so ``row`` is the spreadsheet row. An empty file, or one
    of blank lines only, is an error."""
    path = Path(path)
    label = _name(path, name)
    text = read_text(path, what=what, name=label)
    if not text.strip():
        raise SourceError(Location(label), "empty file: no header row")
    reader = csv_reader(io.StringIO(text, newline=""))
    out: list[tuple[int, list[str]]] = []
    row = 0
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise SourceError(Location(label, row + 1), f"malformed CSV: {exc}") from None
        row += 1
        if cells:
            out.append((row, cells))
    return out


def check_header(header: Sequence[str], name: str, *, row: int = 1, required: Iterable[str] = ()) -> None:
    """Refuse a header without any column name, a column name given twice, or a missing
    ``required`` column; ``name`` and ``row`` place the error."""
    if not any(title.strip() for title in header):
        raise SourceError(Location(name, row), "the header row has no column names")
    seen: dict[str, int] = {}
    for column, title in enumerate(header, start=1):
        if not title:
            continue
        if title in seen:
            raise SourceError(
                Location(name, row, title),
                f"column {title!r} appears twice in the header (columns {seen[title]} and {column}); "
                "one would silently replace the other",
            )
        seen[title] = column
    missing = [column for column in required if column not in seen]
    if missing:
        raise SourceError(
            Location(name, row, missing[0]),
            f"missing column(s) {', '.join(map(repr, missing))}; the header has {list(header)}",
        )


def read_csv_records(
    path: str | Path,
    *,
    what: str = "a CSV file",
    name: str | None = None,
    required: Iterable[str] = (),
    fold_case: bool = False,
) -> list[tuple[int, dict[str, str]]]:
    """The data rows of a CSV file with a header as ``(row, {column: value})``.

    Header names are stripped of surrounding spaces (and lowercased with ``fold_case``, so
    ``Name`` and ``name`` are the same column) and checked by :func:`check_header`
    (``required``: columns that must be there). A row shorter than the header is an error
    (a file cut mid-row would otherwise be read as half a row of empty answers; CSV writers
    write every cell); a value beyond the header, or under a column without a name, is an
    error naming the row and ``column N``. Values are returned as written (not
    stripped). A header with no rows below it gives ``[]``.
    """
    path = Path(path)
    label = _name(path, name)
    rows = read_csv_rows(path, what=what, name=label)
    header_row, raw_header = rows[0]
    header = [title.strip().lower() if fold_case else title.strip() for title in raw_header]
    check_header(header, label, row=header_row, required=required)
    out: list[tuple[int, dict[str, str]]] = []
    for row, cells in rows[1:]:
        if len(cells) < len(raw_header):
            raise SourceError(
                Location(label, row, f"column {len(cells) + 1}"),
                f"the row has {len(cells)} values, the header {len(raw_header)} columns "
                "(the file may be cut short; write empty cells as ,,)",
            )
        for index, cell in enumerate(cells):
            if cell.strip() and (index >= len(header) or not header[index]):
                why = (
                    f"the row has {len(cells)} values, the header {len(header)} columns"
                    if index >= len(header)
                    else "a value in a column without a name in the header"
                )
                raise SourceError(Location(label, row, f"column {index + 1}"), f"{why}; it would be dropped")
        out.append(
            (row, {title: cells[i] if i < len(cells) else "" for i, title in enumerate(header) if title})
        )
    return out


# ---------------------------------------------------------------------------------- JSON
class DuplicateKey(ValueError):
    """A JSON object names one key twice (raised by :func:`unique_pairs`)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for :func:`json.loads` that refuses a repeated key."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(key)
        out[key] = value
    return out


def _first_repeated_key(text: str) -> tuple[str, int] | None:
    """The first key repeated in one object of JSON ``text``, in reading order, and the index
    of its second occurrence; a scan without recursion (only run once parsing has failed)."""
    stack: list[list[Any]] = []  # per open container: [is an object, keys seen, expecting a key]
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char == '"':
            try:
                value, end = scanstring(text, i + 1)
            except ValueError:
                return None
            top = stack[-1] if stack else None
            if top is not None and top[0] and top[2]:
                if value in top[1]:
                    return value, i
                top[1].add(value)
                top[2] = False
            i = end
            continue
        if char in "{[":
            stack.append([char == "{", set(), True])
        elif char in "}]":
            if stack:
                stack.pop()
        elif char == "," and stack and stack[-1][0]:
            stack[-1][2] = True
        i += 1
    return None


def _deepest(text: str) -> tuple[int, int]:
    """The deepest nesting of JSON ``text`` and the index where it is first reached (strings
    skipped; a scan without recursion)."""
    depth, best, at, i, n = 0, 0, 0, 0, len(text)
    while i < n:
        char = text[i]
        if char == '"':
            try:
                i = scanstring(text, i + 1)[1]
            except ValueError:
                break
            continue
        if char in "{[":
            depth += 1
            if depth > best:
                best, at = depth, i
        elif char in "}]":
            depth -= 1
        i += 1
    return best, at


_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "true/false", type(None): "null"}


def loads_json_strict(text: str, where: str | Location) -> Any:
    """Parse JSON ``text``; ``where`` is the file's name, or a :class:`Location` whose row is
    the line ``text`` starts on (a line of JSON Lines). Errors: not valid JSON (its line and
    column), a key repeated in one object (its line, the key as the field), nesting too deep
    for the parser (``RecursionError``; the line where the nesting is deepest). ``NaN`` and
    ``Infinity`` are accepted (Python's ``json`` writes them)."""
    file, base = (where.file, where.row) if isinstance(where, Location) else (str(where), None)

    def line_of(index: int) -> int:
        line = text.count("\n", 0, index) + 1
        return line if base is None else base + line - 1

    try:
        return json.loads(text, object_pairs_hook=unique_pairs)
    except json.JSONDecodeError as exc:
        row: int | None = exc.lineno if base is None else base + exc.lineno - 1
        at = f"line {exc.lineno}, column {exc.colno}" if base is None else f"column {exc.colno}"
        raise SourceError(Location(file, row), f"not valid JSON: {exc.msg} ({at})") from None
    except DuplicateKey as exc:
        found = _first_repeated_key(text)
        key, row = (found[0], line_of(found[1])) if found else (exc.key, base)
        raise SourceError(
            Location(file, row, key),
            "key appears twice in one object; the second value would silently replace the first",
        ) from None
    except RecursionError:
        depth, index = _deepest(text)
        raise SourceError(
            Location(file, line_of(index)), f"JSON nested too deeply to read ({depth} levels)"
        ) from None
    except ValueError as exc:  # int() refuses a number of more than 4,300 digits
        long = re.search(rf"\d{{{sys.get_int_max_str_digits() + 1},}}", text)
        why = str(exc).split(";")[0]
        raise SourceError(
            Location(file, line_of(long.start()) if long else base), f"a number too long to read ({why})"
        ) from None


def read_json(path: str | Path, *, what: str = "a JSON file", name: str | None = None) -> Any:
    """A whole JSON file (:func:`read_text` + :func:`loads_json_strict`); any JSON value, the
    caller checks its shape. An empty file is an error."""
    path = Path(path)
    label = _name(path, name)
    text = read_text(path, what=what, name=label)
    if not text.strip():
        raise SourceError(Location(label), "empty file: no JSON value")
    return loads_json_strict(text, label)


def read_jsonl(
    path: str | Path,
    *,
    what: str = "a JSON Lines file",
    name: str | None = None,
    unique_key: str | None = None,
) -> list[tuple[int, dict[str, Any]]]:
    """A JSON Lines file as ``(line, object)``: one JSON object per line, blank lines skipped
    (an empty file gives ``[]``). A line that is not an object is an error; a last line
    without a newline that does not parse says the file may be cut short.

    ``unique_key``: every object must have a non-empty string under this key, and no two
    lines the same one (the error names both lines); e.g. ``"id"`` for run samples.
    """
    path = Path(path)
    label = _name(path, name)
    text = read_text(path, what=what, name=label)
    lines = text.split("\n")  # not splitlines(): a JSON string may hold U+2028 and friends
    out: list[tuple[int, dict[str, Any]]] = []
    first: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        try:
            value = loads_json_strict(line, Location(label, number))
        except SourceError as exc:
            if number == len(lines) and "not valid JSON" in exc.detail:
                raise SourceError(
                    exc.location, f"{exc.detail}; the last line has no newline: the file may be cut short"
                ) from None
            raise
        if not isinstance(value, dict):
            got = _JSON_TYPES.get(type(value), "a number")
            raise SourceError(Location(label, number), f"expected a JSON object, got {got}")
        if unique_key is not None:
            key = value.get(unique_key)
            if not isinstance(key, str) or not key:
                raise SourceError(Location(label, number, unique_key), "missing, or not a non-empty string")
            if key in first:
                raise SourceError(
                    Location(label, number, unique_key),
                    f"{key!r} appears twice (lines {first[key]} and {number}); one would be dropped",
                )
            first[key] = number
        out.append((number, value))
    return out
