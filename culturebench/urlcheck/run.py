"""Check a release's URLs end to end: collect, check, update the history, write the reports."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from culturebench.manifest import read_manifest
from culturebench.urlcheck.checker import CheckConfig, UrlChecker
from culturebench.urlcheck.collect import collect_urls
from culturebench.urlcheck.history import (
    Diff,
    baseline_phashes,
    load_history,
    save_history,
    update_history,
)
from culturebench.urlcheck.run_files import write_reports


@dataclass
class CheckOutcome:
    """What one scheduled check found and where it wrote it."""

    summary: dict[str, Any]
    diff: Diff
    report_dir: Path


def check_release(
    folder: Path,
    config: CheckConfig,
    *,
    report_dir: Path | None = None,
    history_path: Path | None = None,
    sample: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> CheckOutcome:
    """Check every URL of the release in ``folder`` (or a sample), compare with the history,
    write ``report.json`` and ``summary.md`` to ``report_dir`` (default
    ``url-reports/<dataset>``) and save the history (default ``<report_dir>/history.json``)."""
    from culturebench.outputs import OutputKind, resumable_output

    manifest = read_manifest(folder)
    report_dir = report_dir or Path("url-reports") / manifest["dataset"]
    # the report folder accumulates the history: ours (or new), never someone else's; one
    # check at a time (a second scheduled check would race on history.json)
    with resumable_output(report_dir, OutputKind("url-check", ("history.json",)), flag="--report"):
        return _check(folder, manifest, config, report_dir, history_path, sample, progress)


def _check(
    folder: Path,
    manifest: dict[str, Any],
    config: CheckConfig,
    report_dir: Path,
    history_path: Path | None,
    sample: int | None,
    progress: Callable[[int, int], None] | None,
) -> CheckOutcome:
    history_path = history_path or report_dir / "history.json"
    past = load_history(history_path)
    items = collect_urls(folder, sample=sample)
    checker = UrlChecker(config, baseline_phash=baseline_phashes(past))
    if progress:
        progress(0, len(items))
    results = checker.check_all(items, progress=progress)
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    diff = update_history(past, results, now)
    save_history(history_path, past)
    written = write_reports(report_dir, f"{manifest['dataset']} {manifest['version']}", results, diff, now)
    return CheckOutcome(written["summary"], diff, report_dir)
