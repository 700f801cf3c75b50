"""Progress displays of long work: a bar on a terminal, plain lines in logs and pipes, nothing
with ``--quiet``; a spinner for short steps; one display for a build and its image stage."""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from rich.progress import Progress, ProgressColumn, SpinnerColumn, TextColumn, TimeElapsedColumn

from culturebench.cli.output import err_console
from culturebench.durations import duration_text


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


_duration = duration_text  # ``42s``, ``3m05s``, ``2h07m``


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
