"""What every command line module shares: consoles, exit codes, the error-to-exit-code
mapping, progress display, and the backend options and engine factory of commands that run
a model. Dataset folders import it to add their own commands (``dataset.yaml`` code.cli)."""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

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
def steps(title: str) -> Iterator[Callable[[str], None]]:
    """A spinner naming the current step of short work on a terminal; nothing when piped or
    with ``--quiet`` (the step function is then a no-op)."""
    if _QUIET["on"] or not err_console.is_terminal:
        yield lambda _msg: None
        return
    with Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    ) as progress:
        task = progress.add_task(title, total=None)
        yield lambda msg: progress.update(task, description=f"{title}: {msg}")


# `culturebench --quiet ...` silences every progress display (set by the app callback).
_QUIET = {"on": False}

PROGRESS_INTERVAL_ENV = "CULTUREBENCH_PROGRESS_INTERVAL"
DEFAULT_PROGRESS_INTERVAL_S = 30.0


def set_quiet(quiet: bool) -> None:
    """``--quiet``: no progress display at all (bars, spinners and plain progress lines)."""
    _QUIET["on"] = bool(quiet)


def progress_interval() -> float:
    """Seconds between two plain progress lines of one task (``CULTUREBENCH_PROGRESS_INTERVAL``,
    default 30; a value that is not a positive number falls back to the default)."""
    text = os.environ.get(PROGRESS_INTERVAL_ENV, "")
    try:
        value = float(text) if text.strip() else DEFAULT_PROGRESS_INTERVAL_S
    except ValueError:
        return DEFAULT_PROGRESS_INTERVAL_S
    return value if math.isfinite(value) and value > 0 else DEFAULT_PROGRESS_INTERVAL_S


def _duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``2h07m``: how people write a duration."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def _rate_text(rate: float) -> str:
    """Items per second, or per minute when slower than one every 10 s."""
    return f"{rate:.1f}/s" if rate >= 0.1 else f"{rate * 60:.1f}/min"


@dataclass
class _Task:
    """What :class:`_LineProgress` knows about one task."""

    description: str
    total: float | None
    completed: float = 0.0
    started: float = field(default_factory=time.monotonic)
    base: float | None = None  # the count when counting began (a resumed run starts above 0)
    base_at: float | None = None
    step: int = -1  # the last 10% step a line was written for
    last_line: float = field(default_factory=time.monotonic)
    finished: bool = False


class _LineProgress:
    """Progress when stderr is not a terminal (a pipe, a scheduler's log, CI): plain lines,
    never redraws. Each task writes one line when it starts, at every 10% step, and at least
    every :func:`progress_interval` seconds while it runs (a background timer, so a long
    step with no update still shows it is alive), e.g.
    ``images: 710/7,095 (10%), 23.5/s, elapsed 30s, ETA 4m32s``."""

    def __init__(self, interval: float | None = None) -> None:
        self.interval = interval if interval is not None else progress_interval()
        self._tasks: dict[int, _Task] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._timer: threading.Thread | None = None

    def __enter__(self) -> _LineProgress:
        self._timer = threading.Thread(target=self._heartbeat, name="culturebench-progress", daemon=True)
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        return None

    def add_task(self, description: str, total: float | None = None, **_: object) -> int:
        """Start a task (``total`` None: a count without a known end)."""
        with self._lock:
            task = len(self._tasks)
            # no "started" line: a command refused right after it starts stays one line
            self._tasks[task] = _Task(description, total)
        return task

    def update(
        self,
        task: int,
        *,
        completed: float | None = None,
        total: float | None = None,
        advance: float | None = None,
        description: str | None = None,
        **_: object,
    ) -> None:
        """Record progress; write a line at a new 10% step or when the interval has passed."""
        with self._lock:
            state = self._tasks[task]
            now = time.monotonic()
            if description is not None and description != state.description:
                state.description = description
                if state.total is None and completed is None and advance is None:
                    self._line(state, now)  # a build step: say which
                else:  # a new stage counted on the same task (a pipeline): its own steps, rate, ETA
                    state.started, state.base, state.base_at = now, None, None
                    state.step, state.finished, state.completed = -1, False, 0.0
                    state.last_line = now
            if total is not None:
                state.total = total
            if advance is not None:
                state.completed += advance
            if completed is not None:
                state.completed = completed
            if state.base is None and completed is not None:  # counting from here (resumes)
                state.base, state.base_at = completed, now
            elif state.base is None and advance is not None:
                state.base, state.base_at = 0.0, state.started
            if state.finished:
                return
            if state.total:
                step = min(10, int(10 * state.completed / state.total))
                if step > state.step:
                    state.step = step
                    state.finished = state.completed >= state.total
                    self._line(state, now)
                    return
            if now - state.last_line >= self.interval:
                self._line(state, now)

    def _heartbeat(self) -> None:
        """Every task that has been quiet for an interval writes its line."""
        while not self._stop.wait(min(self.interval, 1.0)):
            now = time.monotonic()
            with self._lock:
                for state in self._tasks.values():
                    if not state.finished and now - state.last_line >= self.interval:
                        self._line(state, now)

    def _line(self, state: _Task, now: float) -> None:
        state.last_line = now
        self._write(self.render(state, now))

    @staticmethod
    def render(state: _Task, now: float) -> str:
        """One progress line: done/total (share), rate, elapsed time and ETA."""
        done = state.completed
        if not state.total and state.base is None:  # a step, not a count
            return f"{state.description} (elapsed {_duration(now - state.started)})"
        if state.total:
            parts = [f"{done:,.0f}/{state.total:,.0f} ({100 * done / state.total:.0f}%)"]
        else:
            parts = [f"{done:,.0f} done"]
        rate = None
        if state.base is not None and state.base_at is not None and now > state.base_at:
            rate = (done - state.base) / (now - state.base_at)
            if rate > 0:
                parts.append(_rate_text(rate))
        parts.append(f"elapsed {_duration(now - state.started)}")
        if state.total and done < state.total:
            parts.append(f"ETA {_duration((state.total - done) / rate)}" if rate else "ETA -")
        return f"{state.description}: " + ", ".join(parts)

    @staticmethod
    def _write(line: str) -> None:
        err_console.print(line, markup=False, highlight=False, soft_wrap=True)


_LogProgress = _LineProgress  # the former name


class _NoProgress:
    """``--quiet``: the progress interface, showing nothing."""

    def __enter__(self) -> _NoProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def add_task(self, *_: object, **__: object) -> int:
        return 0

    def update(self, *_: object, **__: object) -> None:
        return None


def progress_bar() -> Any:
    """The one progress display of long work (runs, scoring, corpus counts, image stages,
    builds): on a terminal a transient bar on stderr with count, rate, elapsed time and ETA;
    when stderr is not a terminal, plain lines (:class:`_LineProgress`); nothing with
    ``--quiet``."""
    from rich.progress import BarColumn, MofNCompleteColumn, TaskProgressColumn, TimeRemainingColumn

    if _QUIET["on"]:
        return _NoProgress()
    if not err_console.is_terminal:
        return _LineProgress()
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
    str | None,
    typer.Option("--image-mirror", help="Base URL or local folder serving the upstream image paths."),
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


MinImagesFetchedOption = Annotated[
    float | None,
    typer.Option(
        "--min-images-fetched",
        min=0.0,
        max=1.0,
        callback=finite,
        help="Fail the image stage when fewer than this share of its images (0 to 1) were fetched "
        "(default: only when none were); the earlier release is kept.",
    ),
]


def image_options(
    images: bool,
    mirror: str | None,
    offline: bool,
    commons_api: str | None,
    allow: list[str] | None,
    min_fetched: float | None = None,
) -> Any:
    """The image stage's options from the command line (None when ``--images`` is absent);
    a flag that needs ``--images`` without it is a usage error."""
    from culturebench.errors import UsageError
    from culturebench.images.licenses import COMMONS_API
    from culturebench.images.stage import ImageOptions
    from culturebench.safe_http import parse_allow

    if not images:
        if mirror or offline or commons_api or min_fetched is not None:
            raise UsageError(
                "--image-mirror, --offline-images, --commons-api and --min-images-fetched need --images"
            )
        return None
    parse_allow(allow or ())
    api = None if (commons_api or "").lower() == "none" or offline else (commons_api or COMMONS_API)
    return ImageOptions(
        mirror=mirror,
        commons_api=api,
        allow=tuple(allow or ()),
        offline=offline,
        min_fetched=min_fetched or 0.0,
    )


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
