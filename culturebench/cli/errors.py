"""The command line's error policy: the one line a refused input, a failed validation, a
refused release or a system error becomes, with the exit code its error class carries
(:mod:`culturebench.errors`). Commands raise the package's errors; :func:`report_error`, called
once by the application (:mod:`culturebench.cli.application`), prints them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.markup import escape

from culturebench.cli.output import err_console
from culturebench.errors import (
    EXIT_BAD_INPUT,
    EXIT_PUBLISH_FAILED,
    EXIT_REFUSED,
    EXIT_VALIDATION,
    EXIT_VERIFY_FAILED,
    CultureBenchError,
    ValidationFailed,
    VerificationFailed,
)

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_PUBLISH_FAILED",
    "EXIT_REFUSED",
    "EXIT_VALIDATION",
    "EXIT_VERIFY_FAILED",
    "claim_file",
    "on_stop",
    "os_error_line",
    "report_error",
]


def report_error(exc: BaseException) -> int | None:
    """THE error policy: print the one line (or, for a failed validation or verification, the
    findings and one line) of the package's own error ``exc``, or of a system error that names
    its path, on stderr, and return its exit code (``exc.exit_code``: 2 bad input, 1
    validation failed, 3 release refused, 4 publish failed, 5 verification failed). None:
    not ours to place (an unexpected error)."""
    from culturebench.safe_http import redact

    # emoji=False everywhere: a path or target such as git:x: stays as written
    if isinstance(exc, ValidationFailed):
        exc.report.render(err_console)  # type: ignore[attr-defined]
        err_console.print(f"[red]{escape(redact(exc))}[/]: nothing was written", emoji=False)
    elif isinstance(exc, VerificationFailed):
        err_console.print(f"[bold red]VERIFICATION FAILED[/] for {escape(exc.subject)}:", emoji=False)
        for problem in exc.problems:
            err_console.print(f"  [red]{escape(redact(problem))}[/]", emoji=False)
    elif isinstance(exc, CultureBenchError):
        err_console.print(f"[red]{exc.headline}:[/] {escape(redact(exc))}", soft_wrap=True, emoji=False)
    elif isinstance(exc, OSError) and (line := os_error_line(exc)) is not None:
        # permissions, a folder where a file goes, a full disk: name the path
        err_console.print(f"[red]error:[/] {escape(line)}", soft_wrap=True, emoji=False)
        return EXIT_BAD_INPUT
    else:
        return None
    return exc.exit_code


@contextmanager
def on_stop(what: str, left: str) -> Iterator[None]:
    """Ctrl-C, or SIGTERM (``main()`` turns it into ``SystemExit(143)``), inside the block: one
    line, ``<what> stopped (SIGTERM): <left>``, and the exit code 128 + the signal (130, 143).
    Anything else passes through unchanged."""
    import signal

    try:
        yield
    except (KeyboardInterrupt, SystemExit) as exc:
        code = 128 + signal.SIGINT if isinstance(exc, KeyboardInterrupt) else exc.code
        if not isinstance(code, int) or code <= 128:
            raise
        try:
            why = signal.Signals(code - 128).name
        except ValueError:
            why = f"signal {code - 128}"
        err_console.print(f"[yellow]{escape(what)} stopped ({why}):[/] {escape(left)}", soft_wrap=True)
        raise SystemExit(code) from None


def claim_file(
    out: Path | None, overwrite: bool, inputs: Iterable[Path | None] = (), flag: str = "--out"
) -> None:
    """Check a single-file output before any work (:func:`culturebench.outputs.check_output_file`);
    a refusal raises :class:`~culturebench.outputs.OutputRefused` (one line, exit 2)."""
    if out is None:
        return
    from culturebench.outputs import check_output_file

    check_output_file(out, overwrite=overwrite, inputs=[i for i in inputs if i], flag=flag)


def os_error_line(exc: OSError) -> str | None:
    """The one line for a system error we can place: ``PATH: reason`` when it names its file,
    ``cannot write: reason`` for a full disk without one; None when neither (unexpected)."""
    from culturebench.atomic import NO_ROOM

    reason = exc.strerror or type(exc).__name__
    if exc.filename:
        return f"{exc.filename}: {reason}"
    return f"cannot write: {reason}" if exc.errno in NO_ROOM else None
