"""Error types that name exactly where bad input sits (file, row, field)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

#: Exit codes of the command line (docs/commands.md): each error class carries its own.
EXIT_VALIDATION = 1
EXIT_BAD_INPUT = 2
EXIT_REFUSED = 3
EXIT_PUBLISH_FAILED = 4
EXIT_VERIFY_FAILED = 5


class CultureBenchError(Exception):
    """Base class for every error this package raises on purpose. ``exit_code`` is the
    command line's exit code for it and ``headline`` the word its one line starts with
    (``error: ...``); subclasses override them."""

    exit_code: int = EXIT_BAD_INPUT
    headline: ClassVar[str] = "error"


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

    headline: ClassVar[str] = "bad input"

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
    """A release folder failed validation; ``report`` holds the findings. Exit 1, or
    ``exit_code`` when given (a release whose folder fails validation is refused: 3)."""

    exit_code: int = EXIT_VALIDATION

    def __init__(
        self, report: RendersFindings, message: str = "validation failed", *, exit_code: int | None = None
    ) -> None:
        self.report = report
        if exit_code is not None:
            self.exit_code = exit_code
        super().__init__(message)


class UnknownDatasetError(CultureBenchError):
    """The dataset name is not registered."""


class UsageError(CultureBenchError):
    """A command-line option or argument is invalid (unknown task, bad ``--allow``, a command
    that needs ``--model`` without it, ...): one line, exit 2."""


class ReleaseRefused(CultureBenchError):
    """The release gate refused (a folder that fails validation, a target that is not ready);
    nothing was published. Exit 3."""

    exit_code: int = EXIT_REFUSED
    headline: ClassVar[str] = "release refused"


class PublishFailed(CultureBenchError):
    """Publishing a release failed; the target was left as it was (no tag). Exit 4."""

    exit_code: int = EXIT_PUBLISH_FAILED
    headline: ClassVar[str] = "publish failed"


class VerificationFailed(CultureBenchError):
    """The published revision does not match the release folder (loudly reported). Exit 5;
    ``problems``: one line each, ``subject``: what was checked (``TAG on TARGET``)."""

    exit_code: int = EXIT_VERIFY_FAILED

    def __init__(self, problems: list[str], subject: str = "") -> None:
        self.problems = problems
        self.subject = subject
        super().__init__("published release does not match the manifest:\n  " + "\n  ".join(problems))
