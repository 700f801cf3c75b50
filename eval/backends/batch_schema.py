"""Every file batch mode reads that it did not write itself, checked against a schema here and
nowhere else: what the provider answers (a file object, a batch object and its
``request_counts``, the list of batches, the output and error files' JSON Lines) and what a
user may edit (the run folder's ``batches.json``, the ``batch_window`` option). A value of the
wrong shape is one line naming the file (or ``provider batch <id>``), the line where there is
one, and the field, raised as :class:`~culturebench.eval.backends.openai_batch.BatchError`
by the caller's ``error`` class; never an ``AttributeError``, ``KeyError`` or ``ValueError``.

The provider's objects are read leniently where the Batch API leaves room (fields it may add
are ignored, optional ones may be missing or null) and strictly where batch mode relies on
them: ids are non-empty strings, counts and times whole numbers from 0, a completion window a
duration such as ``24h``, a status one the Batch API defines (:data:`STATUSES`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, get_args

import msgspec

# the statuses of OpenAI's Batch API (https://platform.openai.com/docs/api-reference/batch/object)
ProviderStatus = Literal[
    "validating", "failed", "in_progress", "finalizing", "completed", "expired", "cancelling", "cancelled"
]
STATUSES: tuple[str, ...] = get_args(ProviderStatus)
LOST = "lost"  # a batch the provider no longer knows (recorded by batch mode, never the provider's)
WINDOW = r"^[1-9][0-9]{0,3}[smhd]$"  # "24h"; up to 9999 of a unit
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}

Id = Annotated[str, msgspec.Meta(min_length=1)]
Count = Annotated[int, msgspec.Meta(ge=0, le=10**12)]
Time = Annotated[int, msgspec.Meta(ge=0, le=10**12)]  # Unix seconds
Window = Annotated[str, msgspec.Meta(pattern=WINDOW)]
Sha256 = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{64}$")]
Status = Literal[ProviderStatus, "lost"]  # what batches.json records


class FileObject(msgspec.Struct):
    """The answer to an upload (``POST /files``)."""

    id: Id


class RequestCounts(msgspec.Struct):
    total: Count = 0
    completed: Count = 0
    failed: Count = 0


class ErrorItem(msgspec.Struct):
    code: str | None = None
    message: str | None = None
    line: int | None = None
    param: str | None = None


class Errors(msgspec.Struct):
    data: list[ErrorItem] | None = None


class BatchObject(msgspec.Struct):
    """A batch (``POST /batches``, ``GET /batches/{id}``, an item of ``GET /batches``)."""

    id: Id
    status: str | None = None  # checked by :func:`check_status`, whose line names it
    input_file_id: str | None = None
    output_file_id: Id | None = None
    error_file_id: Id | None = None
    completion_window: Window | None = None
    created_at: Time | None = None
    expires_at: Time | None = None
    request_counts: RequestCounts | None = None
    metadata: dict[str, Any] | None = None
    errors: Errors | None = None

    def reasons(self) -> str | None:
        """The first three reasons the provider gives for a failed batch, or None."""
        items = (self.errors.data if self.errors is not None else None) or []
        said = [i.message or i.code or "" for i in items[:3]]
        return "; ".join(s for s in said if s) or None


class BatchList(msgspec.Struct):
    """The answer to ``GET /batches``."""

    data: list[BatchObject]


class LineError(msgspec.Struct):
    code: str | None = None
    message: str | None = None


class LineResponse(msgspec.Struct):
    status_code: int | None = None
    body: Any = None


class OutputLine(msgspec.Struct):
    """One line of a batch's output or error file."""

    custom_id: Id
    response: LineResponse | None = None
    error: LineError | str | None = None


class _Message(msgspec.Struct):
    content: str | None = None


class _Choice(msgspec.Struct):
    message: _Message


class ChatBody(msgspec.Struct):
    """The part of a chat completion batch mode reads: ``choices[0].message.content``."""

    choices: list[_Choice]


class ErrorBody(msgspec.Struct):
    error: LineError | str | None = None


class LedgerEntry(msgspec.Struct, kw_only=True):
    """One batch in the run folder's ``batches.json``."""

    input_sha256: Sha256
    batch_id: Id
    input_file_id: str | None = None
    requests: Count
    created_at: Time
    expires_at: Time | None = None  # the end of its completion window (Unix seconds)
    status: Status | None = None  # None: not known yet (the provider answered with no known status)
    completed: Count = 0
    failed: Count = 0
    output_file_id: Id | None = None
    error_file_id: Id | None = None
    errors: str | None = None
    found_at_provider: bool = False


class LedgerFile(msgspec.Struct):
    batches: list[LedgerEntry]


T = TypeVar("T")


def one_line(source: str, exc: msgspec.MsgspecError) -> str:
    """msgspec's ``Expected `int`, got `str` - at `$.request_counts.completed``` as
    ``{source}, field request_counts.completed: expected int, got str``."""
    text = str(exc).replace("`", "")
    message, _, where = text.partition(" - at ")
    path = where.removeprefix("$").lstrip(".")
    missing = re.fullmatch(r"Object missing required field (.+)", message)
    if missing:
        path = f"{path}.{missing[1]}" if path else missing[1]
        message = "missing"
    if message.startswith("JSON is malformed") or message.startswith("Input data was truncated"):
        path = ""
    if message[1:2].islower():  # "Expected ..." -> "expected ...", "JSON ..." stays
        message = message[:1].lower() + message[1:]
    return f"{source}, field {path}: {message}" if path else f"{source}: {message}"


def convert(value: Any, kind: type[T], source: str, error: Callable[[str], Exception]) -> T:
    """``value`` (decoded JSON) read as ``kind``; ``error(line)`` naming ``source`` and the field
    when it is not one."""
    try:
        return msgspec.convert(value, kind)
    except msgspec.ValidationError as exc:
        raise error(one_line(source, exc)) from None


def decode(data: bytes | str, kind: type[T], source: str, error: Callable[[str], Exception]) -> T:
    """JSON text ``data`` read as ``kind``; ``error(line)`` naming ``source`` and the field."""
    try:
        return msgspec.json.decode(data, type=kind)
    except msgspec.MsgspecError as exc:
        raise error(one_line(source, exc)) from None


def check_status(batch: BatchObject, source: str, error: Callable[[str], Exception]) -> str:
    """The batch's status when the Batch API defines it; else ``error`` naming it."""
    if batch.status not in STATUSES:
        raise error(
            f"{source}, field status: {json.dumps(batch.status)} is not a status of the Batch API "
            f"({', '.join(STATUSES)})"
        )
    return batch.status


def window_seconds(text: Any) -> int:
    """Seconds of a completion window such as ``24h`` (a whole number of ``s``, ``m``, ``h`` or
    ``d``, 1 to 9999); ValueError saying what is expected otherwise."""
    if not isinstance(text, str) or not re.fullmatch(WINDOW, text):
        raise ValueError("a duration such as 24h (1 to 9999, then s, m, h or d)")
    return int(text[:-1]) * _UNIT_S[text[-1]]


def read_ledger(path: Path, error: Callable[[str], Exception]) -> list[LedgerEntry]:
    """The batches recorded in ``path`` (``batches.json``); ``error`` naming the file and field."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise error(f"{path}: cannot read it ({exc.strerror or type(exc).__name__})") from None
    return decode(data, LedgerFile, str(path), error).batches


def ledger_text(entries: list[LedgerEntry]) -> str:
    """``batches.json``'s text for ``entries``."""
    return json.dumps(msgspec.to_builtins(LedgerFile(entries)), indent=2, sort_keys=True) + "\n"
