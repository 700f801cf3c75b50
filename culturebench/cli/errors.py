"""The command line's error policy: exit codes, and the one line a refused input, a failed
validation, a refused release or a system error becomes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from culturebench.cli.output import err_console
from culturebench.errors import CultureBenchError, SourceError, ValidationFailed

EXIT_VALIDATION = 1


EXIT_BAD_INPUT = 2


EXIT_REFUSED = 3


EXIT_PUBLISH_FAILED = 4


EXIT_VERIFY_FAILED = 5


def or_exit(fn, *, validation_exit: int = EXIT_VALIDATION):
    """Run ``fn``; turn the package's own errors into one redacted line and an exit code
    (2 bad input, ``validation_exit`` for a failed validation, 3 release refused)."""
    from culturebench.safe_http import redact

    try:
        return fn()
    except SourceError as exc:
        err_console.print(f"[red]bad input:[/] {escape(redact(exc))}", soft_wrap=True)
        raise typer.Exit(EXIT_BAD_INPUT) from exc
    except ValidationFailed as exc:
        exc.report.render(err_console)
        err_console.print(f"[red]{escape(redact(exc))}[/]: nothing was written")
        raise typer.Exit(validation_exit) from exc
    except OSError as exc:  # permissions, a folder where a file goes, a full disk: name the path
        line = os_error_line(exc)
        if line is None:
            raise
        err_console.print(f"[red]error:[/] {escape(line)}", soft_wrap=True)
        raise typer.Exit(EXIT_BAD_INPUT) from exc
    except CultureBenchError as exc:
        from culturebench.release.pipeline import ReleaseRefused

        if isinstance(exc, ReleaseRefused):
            err_console.print(f"[red]release refused:[/] {escape(redact(exc))}", soft_wrap=True)
            raise typer.Exit(EXIT_REFUSED) from exc
        err_console.print(f"[red]error:[/] {escape(redact(exc))}", soft_wrap=True)
        raise typer.Exit(EXIT_BAD_INPUT) from exc


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


FileOverwriteOption = Annotated[
    bool, typer.Option("--overwrite", help="Replace an existing --out file (never a folder or an input).")
]


def claim_file(out: Path | None, overwrite: bool, inputs=(), flag: str = "--out") -> None:
    """Check a single-file output before any work (:func:`culturebench.outputs.check_output_file`);
    a refusal is one line, exit 2."""
    if out is None:
        return
    from culturebench.outputs import check_output_file

    or_exit(lambda: check_output_file(out, overwrite=overwrite, inputs=[i for i in inputs if i], flag=flag))


def os_error_line(exc: OSError) -> str | None:
    """The one line for a system error we can place: ``PATH: reason`` when it names its file,
    ``cannot write: reason`` for a full disk without one; None when neither (unexpected)."""
    from culturebench.atomic import NO_ROOM

    reason = exc.strerror or type(exc).__name__
    if exc.filename:
        return f"{exc.filename}: {reason}"
    return f"cannot write: {reason}" if exc.errno in NO_ROOM else None
