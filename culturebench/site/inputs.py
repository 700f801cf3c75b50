"""What each folder given to ``culturebench site`` is: a finished run (``run.json`` and
``results.json``; an ``eval score`` output and the cells of an ``eval reproduce`` folder are
runs too), an ``eval paper`` output (``paper_report.json``), a release folder
(``manifest.json`` beside ``data/``) or a URL-check report (``history.json``). Any other
folder is searched below, so ``culturebench site out/ dist/`` finds everything under them.
A given folder that holds none of these is an error naming it.

Links are never followed out of an input: a folder below a given one that is a link to
outside it, and an input any of whose files or folders is a link to outside it (a
``samples.jsonl`` pointing at another user's file), are passed over with the reason, listed
under "Not shown" like an unfinished run."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from culturebench.errors import UsageError

MAX_DEPTH = 6  # how far below a given folder the search goes
# folders of a run or a release that hold no further inputs
NOT_INPUTS = {"images", "data", "figures", "__pycache__"}


@dataclass
class Found:
    """The folders of each kind, in a stable order, and what was passed over (and why)."""

    runs: list[Path] = field(default_factory=list)
    papers: list[Path] = field(default_factory=list)
    releases: list[Path] = field(default_factory=list)
    url_checks: list[Path] = field(default_factory=list)
    passed_over: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.runs) + len(self.papers) + len(self.releases) + len(self.url_checks)


def kind(folder: Path) -> str | None:
    """``run``, ``unfinished-run``, ``paper``, ``release``, ``url-check`` or None."""
    if (folder / "run.json").is_file():
        return "run" if (folder / "results.json").is_file() else "unfinished-run"
    if (folder / "results.json").is_file() and (folder / "samples.jsonl").is_file():
        return "run-without-record"
    if (folder / "paper_report.json").is_file():
        return "paper"
    if (folder / "manifest.json").is_file() and (folder / "data").is_dir():
        return "release"
    if (folder / "history.json").is_file() and _marker(folder) == "url-check":
        return "url-check"
    return None


def _marker(folder: Path) -> str | None:
    from culturebench.outputs import MARKER

    try:
        data = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data.get("kind") if isinstance(data, dict) else None


def find_inputs(folders: Sequence[str | Path]) -> Found:
    """Every input under ``folders`` (each given folder must exist and hold at least one)."""
    found = Found()
    seen: set[Path] = set()
    for given in folders:
        path = Path(given)
        if not path.is_dir():
            raise UsageError(
                f"{path}: not a folder (give run, reproduction, paper-report or release folders)"
            )
        if path.resolve() in seen:  # given twice (or through a link): once is enough
            continue
        before, passed = found.total, len(found.passed_over)
        _walk(path, 0, found, seen, path)
        if found.total == before:
            raise UsageError(
                f"{path}: no finished run, eval paper output, release or URL-check report in it"
                + (f" ({found.passed_over[-1]})" if len(found.passed_over) > passed else "")
            )
    return found


def _walk(folder: Path, depth: int, found: Found, seen: set[Path], given: Path) -> None:
    from culturebench.site.safety import inside, link_out

    if folder != given and folder.is_symlink() and not inside(given, folder):
        found.passed_over.append(f"{folder}: a link to outside {given} (not followed)")
        return
    real = folder.resolve()
    if real in seen:
        return
    seen.add(real)
    what = kind(folder)
    if what in ("run", "paper", "release", "url-check") and (link := link_out(folder)) is not None:
        found.passed_over.append(f"{folder}: {link} is a link to outside the folder (not followed)")
        return
    if what == "run":
        found.runs.append(folder)
        return
    if what == "unfinished-run":
        found.passed_over.append(f"{folder}: a run without results.json (unfinished)")
        return
    if what == "run-without-record":
        found.passed_over.append(
            f"{folder}: results.json and samples.jsonl without run.json (not a whole run)"
        )
        return
    if what == "paper":
        found.papers.append(folder)
        return
    if what == "release":
        found.releases.append(folder)
        return
    if what == "url-check":
        found.url_checks.append(folder)
        return
    if depth >= MAX_DEPTH:
        return
    try:
        children = sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError as exc:
        raise UsageError(f"{folder}: cannot be read ({exc.strerror or exc})") from None
    for child in children:
        if child.name not in NOT_INPUTS:
            _walk(child, depth + 1, found, seen, given)
