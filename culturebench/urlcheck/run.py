"""Check a release's URLs end to end: collect, check, update the history, write the reports."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from culturebench.manifest import read_manifest
from culturebench.urlcheck.checker import CheckConfig, UrlChecker, UrlResult
from culturebench.urlcheck.collect import collect_urls
from culturebench.urlcheck.history import (
    Diff,
    baseline_phashes,
    load_history,
    save_history,
    update_history,
)
from culturebench.urlcheck.run_files import write_reports

EXIT_NEWLY_BROKEN = 1
EXIT_NETWORK_DOWN = 6  # the network itself looked down: nothing recorded, no issue to open
NETWORK_DOWN_SHARE = 0.9  # at least this share of the distinct hosts never reached ...
NETWORK_DOWN_MIN_HOSTS = 3  # ... out of at least this many hosts, and no HTTP answer at all


@dataclass
class CheckOutcome:
    """What one scheduled check found and where it wrote it."""

    summary: dict[str, Any]
    diff: Diff
    report_dir: Path
    network_down: dict[str, Any] | None = None
    sample: dict[str, Any] | None = None


def week_seed(today: date | None = None) -> int:
    """The default ``--seed`` of a sample: the ISO week as a number (2026-W48 -> 202648), so
    each scheduled (monthly) sample draws other URLs, and a rerun in the same week the same."""
    year, week, _ = (today or datetime.now(timezone.utc).date()).isocalendar()
    return year * 100 + week


def network_verdict(results: list[UrlResult]) -> dict[str, Any] | None:
    """Evidence that the network, not the links, failed; None when it looks up.

    The network looks down when no URL got an HTTP answer and at least
    :data:`NETWORK_DOWN_SHARE` of at least :data:`NETWORK_DOWN_MIN_HOSTS` distinct hosts
    (``host:port``) were never reached: every URL of the host failed name resolution or
    connection (refused, unreachable, timed out while connecting). A check of fewer hosts
    cannot tell a dead host from a dead network and is reported as usual."""
    if any(r.http_status is not None for r in results):
        return None
    by_host: dict[str, list[UrlResult]] = defaultdict(list)
    for r in results:
        by_host[urlsplit(r.url).netloc.lower()].append(r)
    unreachable = {h: rs for h, rs in by_host.items() if all(r.unreachable for r in rs)}
    if len(by_host) < NETWORK_DOWN_MIN_HOSTS or len(unreachable) < NETWORK_DOWN_SHARE * len(by_host):
        return None
    dns = sum(any(r.unreachable == "dns" for r in rs) for rs in unreachable.values())
    return {
        "hosts": len(by_host),
        "unreachable_hosts": len(unreachable),
        "dns_hosts": dns,
        "connect_hosts": len(unreachable) - dns,
    }


def check_release(
    folder: Path,
    config: CheckConfig,
    *,
    report_dir: Path | None = None,
    history_path: Path | None = None,
    sample: int | None = None,
    seed: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> CheckOutcome:
    """Check every URL of the release in ``folder`` (or a sample of ``sample`` drawn with
    ``seed``, default :func:`week_seed`), compare with the history, write the reports to
    ``report_dir`` (default ``url-reports/<dataset>``) and save the history (default
    ``<report_dir>/history.json``). When the network looks down (:func:`network_verdict`)
    the history is left as it was and the outcome says so. An interrupted check writes
    nothing (every file is written atomically, after the checks)."""
    from culturebench.outputs import OutputKind, resumable_output

    manifest = read_manifest(folder)
    report_dir = report_dir or Path("url-reports") / manifest["dataset"]
    if sample is not None and seed is None:
        seed = week_seed()
    # the report folder accumulates the history: ours (or new), never someone else's; one
    # check at a time (a second scheduled check would race on history.json)
    with resumable_output(report_dir, OutputKind("url-check", ("history.json",)), flag="--report"):
        return _check(folder, manifest, config, report_dir, history_path, sample, seed, progress)


def _check(
    folder: Path,
    manifest: dict[str, Any],
    config: CheckConfig,
    report_dir: Path,
    history_path: Path | None,
    sample: int | None,
    seed: int | None,
    progress: Callable[[int, int], None] | None,
) -> CheckOutcome:
    history_path = history_path or report_dir / "history.json"
    past = load_history(history_path)
    items = collect_urls(folder, sample=sample, seed=seed or 0)
    drawn = {"size": len(items), "seed": seed} if sample is not None else None
    checker = UrlChecker(config, baseline_phash=baseline_phashes(past))
    if progress:
        progress(0, len(items))
    results = checker.check_all(items, progress=progress)
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    down = network_verdict(results)
    if down:  # not the links' fault: the history keeps what it knew
        diff = Diff()
    else:
        diff = update_history(past, results, now)
        save_history(history_path, past)
    target = f"{manifest['dataset']} {manifest['version']}"
    written = write_reports(report_dir, target, results, diff, now, sample=drawn, network_down=down)
    return CheckOutcome(written["summary"], diff, report_dir, down, drawn)
