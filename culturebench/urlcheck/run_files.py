"""Write a URL-check run: ``report.json`` (every result), ``summary.md`` (for people, short
enough to be a GitHub issue body), ``summary_full.md`` (every row) and ``broken.csv`` (every
newly broken, still broken, newly fixed and warning URL, one row each)."""

from __future__ import annotations

import csv
import io
from collections import Counter
from pathlib import Path
from typing import Any

from culturebench.atomic import write_text_atomic
from culturebench.jsonsafe import json_text
from culturebench.text import md_row
from culturebench.urlcheck.checker import UrlResult
from culturebench.urlcheck.history import Diff

SUMMARY_LIMIT = 60_000  # characters; GitHub caps an issue body at 65,536
FULL_SUMMARY = "summary_full.md"
FULL_CSV = "broken.csv"
_CELL_LIMIT = 400  # characters per cell in summary.md (a URL can be very long)
_NOTE_RESERVE = 1_500  # room kept for the notes that say what was left out
CSV_FIELDS = (
    "section", "url", "status", "problems", "http_status", "final_url", "since", "dataset",
    "row_id", "field", "kind", "error",
)  # fmt: skip


def summarize(results: list[UrlResult]) -> dict[str, Any]:
    """Counts by status, problem and kind."""
    return {
        "checked": len(results),
        "by_status": dict(sorted(Counter(r.status for r in results).items())),
        "by_problem": dict(sorted(Counter(p for r in results for p in r.problems).items())),
        "by_kind": dict(sorted(Counter(r.kind for r in results).items())),
    }


def write_reports(
    folder: Path,
    target: str,
    results: list[UrlResult],
    diff: Diff,
    now: str,
    *,
    sample: dict[str, Any] | None = None,
    network_down: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Write the four files into ``folder`` (each atomically: never half-written); return
    the report dict. ``sample`` records the sample size and seed, ``network_down`` the
    evidence that the network itself was down (see :func:`~culturebench.urlcheck.run.network_verdict`)."""
    folder.mkdir(parents=True, exist_ok=True)
    report = {
        "target": target,
        "checked_at": now,
        "sample": sample,
        "network_down": network_down,
        "summary": summarize(results),
        "changes": diff.to_dict(),
        "results": [r.to_dict() for r in results],
    }
    write_text_atomic(folder / "report.json", json_text(report, indent=1))
    write_text_atomic(folder / FULL_CSV, render_csv(report))
    write_text_atomic(folder / FULL_SUMMARY, render_markdown(report))
    write_text_atomic(folder / "summary.md", render_markdown(report, limit=SUMMARY_LIMIT))
    return report


def _sections(report: dict[str, Any]) -> list[tuple[str, str, list[str], dict[str, str] | None]]:
    """(key, title, urls, since) for each table, in the order they are shown."""
    changes = report["changes"]
    warnings = [r["url"] for r in report["results"] if r["status"] == "warning"]
    if report.get("network_down"):  # nothing was compared with the history: list what failed
        failed = [r["url"] for r in report["results"] if r["status"] == "broken"]
        return [("failed", "Failed (network down: not recorded in the history)", failed, None)]
    return [
        ("newly_broken", "Newly broken", changes["newly_broken"], None),
        ("still_broken", "Still broken", sorted(changes["still_broken"]), changes["still_broken"]),
        ("newly_fixed", "Newly fixed", changes["newly_fixed"], None),
        ("warning", "Warnings (review: cross-host redirects, content-type mismatches)", warnings, None),
    ]


def render_csv(report: dict[str, Any]) -> str:
    """Every row of every table of the summary, as CSV (the full list summary.md may cut)."""
    by_url = {r["url"]: r for r in report["results"]}
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for key, _title, urls, since in _sections(report):
        for url in urls:
            r = by_url.get(url, {})
            row = {name: r.get(name) for name in CSV_FIELDS if name in r}
            row.update(section=key, url=url, problems=" ".join(r.get("problems", [])))
            row["since"] = (since or {}).get(url)
            writer.writerow(row)
    return out.getvalue()


def render_markdown(report: dict[str, Any], *, limit: int | None = None) -> str:
    """The summary in Markdown. With ``limit`` (characters), table rows stop before the text
    would exceed it, cells are shortened, and a note names the files holding every row."""
    summary, changes = report["summary"], report["changes"]
    by_url = {r["url"]: r for r in report["results"]}
    lines = [
        f"# URL check: {report['target']}",
        "",
        f"Checked {summary['checked']} URLs at {report['checked_at']}: "
        + ", ".join(f"{n} {s}" for s, n in summary["by_status"].items())
        + ".",
        "",
    ]
    sample = report.get("sample")
    if sample:
        lines += [
            f"A random sample of {sample['size']} URLs, seed {sample['seed']} "
            f"(`--sample {sample['size']} --seed {sample['seed']}` draws the same URLs).",
            "",
        ]
    down = report.get("network_down")
    if down:
        lines += [
            f"**The network looks down:** {down['unreachable_hosts']} of {down['hosts']} hosts failed "
            f"name resolution or connection ({down['dns_hosts']} DNS, {down['connect_hosts']} connect) "
            "and no URL got an HTTP answer. Nothing was recorded in the history; "
            "rerun when the network is back.",
            "",
        ]
    else:
        lines += [
            f"**Newly broken: {len(changes['newly_broken'])}** · "
            f"newly fixed: {len(changes['newly_fixed'])} · still broken: {len(changes['still_broken'])}",
            "",
        ]
    if summary["by_problem"]:
        lines += ["| problem | URLs |", "| --- | ---: |"]
        lines += [md_row([p, n]) for p, n in summary["by_problem"].items()]
        lines.append("")
    size = sum(len(line) + 1 for line in lines)
    budget = None if limit is None else limit - _NOTE_RESERVE
    left_out: list[tuple[str, int]] = []

    def cell(value: Any) -> Any:
        if limit is None or not isinstance(value, str) or len(value) <= _CELL_LIMIT:
            return value
        return value[: _CELL_LIMIT - 1] + "…"

    for _key, title, urls, since in _sections(report):
        if not urls:
            continue
        head = [
            f"## {title}",
            "",
            "| url | row | problems | status | final url |" + (" since |" if since else ""),
            "| --- | --- | --- | --- | --- |" + (" --- |" if since else ""),
        ]
        head_size = sum(len(line) + 1 for line in head)
        if budget is not None and size + head_size > budget:
            left_out.append((title, len(urls)))
            continue
        lines += head
        size += head_size
        for shown, url in enumerate(urls):
            r = by_url.get(url, {})
            cells = [
                cell(url),
                cell(r.get("row_id")),
                ", ".join(r.get("problems", [])),
                r.get("http_status"),
                cell(r.get("final_url") or ""),
            ]
            row = md_row([*cells, since[url]] if since else cells)
            if budget is not None and size + len(row) + 1 > budget:
                left_out.append((title, len(urls) - shown))
                break
            lines.append(row)
            size += len(row) + 1
        lines.append("")
        size += 1
    if left_out:
        what = "; ".join(f"{n} more under “{title.split(' (')[0]}”" for title, n in left_out)
        lines += [
            f"**This summary is cut to fit an issue body: {what}.** Every row is in "
            f"`{FULL_CSV}` and `{FULL_SUMMARY}` beside this file (in the workflow run's "
            "`url-report-<dataset>` artifact).",
            "",
        ]
    return "\n".join(lines) + "\n"
