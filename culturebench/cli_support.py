"""What every command line module shares: consoles, exit codes, the error-to-exit-code
mapping, progress display, and the backend options and engine factory of commands that run
a model. Dataset folders import it to add their own commands (``dataset.yaml`` code.cli)."""

from __future__ import annotations

import logging
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, ProgressColumn, SpinnerColumn, TextColumn, TimeElapsedColumn

from culturebench.errors import CultureBenchError, SourceError, ValidationFailed

console = Console()
err_console = Console(stderr=True)

EXIT_VALIDATION = 1
EXIT_BAD_INPUT = 2
EXIT_REFUSED = 3
EXIT_PUBLISH_FAILED = 4
EXIT_VERIFY_FAILED = 5


@contextmanager
def steps(title: str):
    with Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    ) as progress:
        task = progress.add_task(title, total=None)
        yield lambda msg: progress.update(task, description=f"{title}: {msg}")


class _LogProgress:
    """Progress when stderr is not a terminal (CI logs, files, pipes): quiet by default; with
    ``-v`` one log line at the start, then about every 10% and at the end, never redraws."""

    def __init__(self) -> None:
        self._tasks: dict[int, dict] = {}

    def __enter__(self) -> _LogProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def add_task(self, description: str, total: int | None = None, **_: object) -> int:
        task = len(self._tasks)
        self._tasks[task] = {"description": description, "total": total, "shown": -1}
        _progress_log.info("%s: started", description)
        return task

    def update(
        self, task: int, *, completed: int | None = None, total: int | None = None, **_: object
    ) -> None:
        state = self._tasks[task]
        if total is not None:
            state["total"] = total
        if completed is None or not state["total"]:
            return
        step = int(10 * completed / state["total"])
        if step > state["shown"]:
            state["shown"] = step
            _progress_log.info("%s: %d/%d", state["description"], completed, state["total"])


_progress_log = logging.getLogger("culturebench.progress")


def progress_bar():
    """The one progress display of long work (runs, scoring, corpus counts, image stages,
    builds): a transient bar on stderr with count, rate, elapsed time and ETA; when stderr is
    not a terminal, :class:`_LogProgress` (quiet unless ``-v``)."""
    from rich.progress import BarColumn, MofNCompleteColumn, TaskProgressColumn, TimeRemainingColumn

    if not err_console.is_terminal:
        return _LogProgress()
    return Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        BarColumn(bar_width=24),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        _RateColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
    )


class _RateColumn(ProgressColumn):
    """Items per second (or per minute when slow), e.g. ``3.2/s``."""

    def render(self, task):  # type: ignore[override]
        from rich.text import Text

        speed = task.finished_speed or task.speed
        if not speed:
            return Text("  -/s", style="progress.data.speed")
        text = f"{speed:.1f}/s" if speed >= 0.1 else f"{speed * 60:.1f}/min"
        return Text(text, style="progress.data.speed")


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


# Backend options shared by every command that runs a model.
ModelRevisionOption = Annotated[str | None, typer.Option(help="Model revision (Hub models).")]


def finite(value: float | None) -> float | None:
    """Typer callback: a float option must be a finite number (``nan`` and ``inf`` pass
    ``min=``/``max=`` checks, so they are refused here)."""
    import math

    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"{value!r} is not a finite number")
    return value


BatchSizeOption = Annotated[int, typer.Option(min=1, max=100_000, help="Prompts per backend call.")]
BaseUrlOption = Annotated[str | None, typer.Option(help="openai backend: endpoint base URL (…/v1).")]
ConcurrencyOption = Annotated[int, typer.Option(min=1, max=1024, help="openai backend: requests in flight.")]
MaxNewTokensOption = Annotated[
    int, typer.Option(min=1, max=1_000_000, help="Generation length (paper: 200).")
]
TemperatureOption = Annotated[
    float,
    typer.Option(
        min=0.0, callback=finite, help="Sampling temperature (0 = greedy; repeated ratings need > 0)."
    ),
]
GuidanceOption = Annotated[
    float | None,
    typer.Option(min=0.0, callback=finite, help="Text-to-image: guidance scale (default: the pipeline's)."),
]


# Image-stage options shared by `build` and `release`.
ImagesOption = Annotated[
    bool, typer.Option("--images", help="Run the image stage: fetch, verify, hash, licence, embed.")
]
ImageMirrorOption = Annotated[
    str | None, typer.Option("--image-mirror", help="Base URL serving the upstream image paths.")
]
OfflineImagesOption = Annotated[
    bool, typer.Option("--offline-images", help="Use only images already in the cache (no network).")
]
CommonsApiOption = Annotated[
    str | None,
    typer.Option("--commons-api", help="Wikimedia Commons API for licences ('none' to skip lookups)."),
]
AllowOption = Annotated[
    list[str] | None,
    typer.Option("--allow", help="Private address/network the image fetcher may contact (e.g. 127.0.0.1)."),
]


def image_options(
    images: bool, mirror: str | None, offline: bool, commons_api: str | None, allow: list[str] | None
):
    """The image stage's options from the command line (None when ``--images`` is absent);
    a flag that needs ``--images`` without it is a usage error."""
    from culturebench.errors import UsageError
    from culturebench.images.licenses import COMMONS_API
    from culturebench.images.stage import ImageOptions
    from culturebench.safe_http import parse_allow

    if not images:
        if mirror or offline or commons_api:
            raise UsageError("--image-mirror, --offline-images and --commons-api need --images")
        return None
    parse_allow(allow or ())
    api = None if (commons_api or "").lower() == "none" or offline else (commons_api or COMMONS_API)
    return ImageOptions(mirror=mirror, commons_api=api, allow=tuple(allow or ()), offline=offline)


class BuildProgress:
    """One display for a build: a spinner naming the current step and, when the image stage
    runs, a bar counting images (log lines instead when stderr is not a terminal)."""

    def __init__(self, title: str) -> None:
        self.title = title
        self._bar = progress_bar()
        self._job: int | None = None
        self._images: int | None = None

    def __enter__(self) -> BuildProgress:
        self._bar.__enter__()
        self._job = self._bar.add_task(self.title, total=None)
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.__exit__(*exc)

    def step(self, message: str) -> None:
        self._bar.update(self._job, description=f"{self.title}: {message}")

    def images(self, done: int, total: int) -> None:
        if self._images is None:
            self._images = self._bar.add_task("images", total=total)
        self._bar.update(self._images, completed=done, total=total)
