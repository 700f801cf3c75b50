"""Error types that name exactly where bad input sits (file, row, field)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


class CultureBenchError(Exception):
    """Base class for every error this package raises on purpose."""


@dataclass(frozen=True)
class Location:
    """Where a problem is: a file, optionally a 1-based spreadsheet/CSV row and a field."""

    file: str
    row: int | None = None
    field: str | None = None

    def __str__(self) -> str:
        parts = [self.file]
        if self.row is not None:
            parts.append(f"row {self.row}")
        if self.field is not None:
            parts.append(f"field {self.field!r}")
        return ", ".join(parts)


class SourceError(CultureBenchError):
    """An upstream source file is unreadable or violates its declared shape.

    The message always starts with the location, e.g.
    ``RU_DATA.xlsx, row 901, field 'Countries of Origin': unknown ISO 3166-1 code 'XX'``.
    """

    def __init__(self, location: Location, message: str) -> None:
        self.location = location
        self.detail = message
        super().__init__(f"{location}: {message}")


class ChecksumError(CultureBenchError):
    """A downloaded or local source does not match its pinned sha256."""


class BuildError(CultureBenchError):
    """The build could not produce a release folder (nothing was written)."""


class RendersFindings(Protocol):
    """A validation report: findings that print themselves (``validation.findings``)."""

    def render(self, console: Any = None) -> None: ...


class ValidationFailed(CultureBenchError):
    """A release folder failed validation; ``report`` holds the findings."""

    def __init__(self, report: RendersFindings, message: str = "validation failed") -> None:
        self.report = report
        super().__init__(message)


class UnknownDatasetError(CultureBenchError):
    """The dataset name is not registered."""


class UsageError(CultureBenchError):
    """A command-line option or argument is invalid (unknown task, bad ``--allow``, ...)."""
