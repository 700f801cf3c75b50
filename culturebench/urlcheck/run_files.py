"""Write a URL-check run as ``report.json`` (every result) and ``summary.md`` (for people)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from culturebench.atomic import write_text_atomic
from culturebench.jsonsafe import json_text
from culturebench.text import md_row
from culturebench.urlcheck.checker import UrlResult
from culturebench.urlcheck.history import Diff


def summarize(results: list[UrlResult]) -> dict[str, Any]:
    return {
        "checked": len(results),
        "by_status": dict(sorted(Counter(r.status for r in results).items())),
        "by_problem": dict(sorted(Counter(p for r in results for p in r.problems).items())),
        "by_kind": dict(sorted(Counter(r.kind for r in results).items())),
    }


def write_reports(
    folder: Path, target: str, results: list[UrlResult], diff: Diff, now: str
) -> dict[str, Any]:
    """Write both files into ``folder``; return the report dict."""
    folder.mkdir(parents=True, exist_ok=True)
    report = {
        "target": target,
        "checked_at": now,
        "summary": summarize(results),
        "changes": diff.to_dict(),
        "results": [r.to_dict() for r in results],
    }
    write_text_atomic(folder / "report.json", json_text(report, indent=1))
    write_text_atomic(folder / "summary.md", render_markdown(report))
    return report


def render_markdown(report: dict[str, Any]) -> str:
    summary, changes = report["summary"], report["changes"]
    by_url = {r["url"]: r for r in report["results"]}
    lines = [
        f"# URL check: {report['target']}",
        "",
        f"Checked {summary['checked']} URLs at {report['checked_at']}: "
        + ", ".join(f"{n} {s}" for s, n in summary["by_status"].items())
        + ".",
        "",
        f"**Newly broken: {len(changes['newly_broken'])}** · newly fixed: {len(changes['newly_fixed'])} · "
        f"still broken: {len(changes['still_broken'])}",
        "",
    ]
    if summary["by_problem"]:
        lines += ["| problem | URLs |", "| --- | ---: |"]
        lines += [md_row([f"`{p}`", n]) for p, n in summary["by_problem"].items()]
        lines.append("")

    def table(title: str, urls: list[str], since: dict[str, str] | None = None) -> None:
        if not urls:
            return
        lines.extend(
            [
                f"## {title}",
                "",
                "| url | row | problems | status | final url |" + (" since |" if since else ""),
                "| --- | --- | --- | --- | --- |" + (" --- |" if since else ""),
            ]
        )
        for url in urls:
            r = by_url.get(url, {})
            cells = [
                url,
                r.get("row_id"),
                ", ".join(r.get("problems", [])),
                r.get("http_status"),
                r.get("final_url") or "",
            ]
            lines.append(md_row([*cells, since[url]] if since else cells))
        lines.append("")

    table("Newly broken", changes["newly_broken"])
    table("Still broken", sorted(changes["still_broken"]), changes["still_broken"])
    table("Newly fixed", changes["newly_fixed"])
    warnings = [r["url"] for r in report["results"] if r["status"] == "warning"]
    table("Warnings (review: cross-host redirects, content-type mismatches)", warnings)
    return "\n".join(lines) + "\n"
