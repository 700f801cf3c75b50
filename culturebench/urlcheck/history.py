"""The check history: what each URL looked like at every run, so a run can report what is
newly broken, newly fixed and still broken (since when), and keep each image's first
perceptual hash as the baseline for detecting silent replacement."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from culturebench.atomic import write_text_atomic
from culturebench.urlcheck.checker import UrlResult

HISTORY_FORMAT = 1
MAX_RUNS_KEPT = 200


@dataclass
class Diff:
    """Changes since the previous run."""

    newly_broken: list[str] = field(default_factory=list)
    newly_fixed: list[str] = field(default_factory=list)
    still_broken: dict[str, str] = field(default_factory=dict)  # url -> broken since

    def to_dict(self) -> dict[str, Any]:
        return {
            "newly_broken": self.newly_broken,
            "newly_fixed": self.newly_fixed,
            "still_broken": self.still_broken,
        }


def load_history(path: Path | None) -> dict[str, Any]:
    if path is None or not path.exists():
        return {"format": HISTORY_FORMAT, "urls": {}, "runs": []}
    from culturebench.errors import CultureBenchError

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise CultureBenchError(
            f"{path}: corrupt history file ({exc}); move it aside to start a new history"
        ) from None
    if not isinstance(data, dict) or data.get("format") != HISTORY_FORMAT:
        got = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise CultureBenchError(f"{path}: unsupported history format {got!r}")
    if not isinstance(data.get("urls"), dict) or not isinstance(data.get("runs"), list):
        raise CultureBenchError(f"{path}: corrupt history file (no 'urls' / 'runs')")
    return data


def baseline_phashes(history: dict[str, Any]) -> dict[str, str]:
    """URL -> the first perceptual hash ever recorded for it."""
    return {
        url: entry["baseline_phash"] for url, entry in history["urls"].items() if entry.get("baseline_phash")
    }


def update_history(history: dict[str, Any], results: list[UrlResult], now: str) -> Diff:
    """Fold this run's results into ``history`` (in place) and return what changed."""
    diff = Diff()
    urls = history["urls"]
    for result in results:
        entry = urls.get(result.url)
        broken = result.status == "broken"
        if entry is None:
            entry = urls[result.url] = {"first_checked": now, "broken_since": None, "baseline_phash": None}
            was_broken = False
        else:
            was_broken = entry.get("status") == "broken"
        if broken and not was_broken:
            diff.newly_broken.append(result.url)
            entry["broken_since"] = now
        elif broken:
            diff.still_broken[result.url] = entry.get("broken_since") or now
        elif was_broken:
            diff.newly_fixed.append(result.url)
            entry["broken_since"] = None
        if result.phash and not entry.get("baseline_phash") and not broken:
            entry["baseline_phash"] = result.phash
        entry.update(
            status=result.status,
            problems=result.problems,
            last_checked=now,
            http_status=result.http_status,
            final_url=result.final_url,
        )
    history["runs"] = [
        *history["runs"],
        {
            "at": now,
            "checked": len(results),
            "broken": sum(r.status == "broken" for r in results),
            "newly_broken": len(diff.newly_broken),
            "newly_fixed": len(diff.newly_fixed),
        },
    ][-MAX_RUNS_KEPT:]
    return diff


def save_history(path: Path, history: dict[str, Any]) -> None:
    write_text_atomic(path, json.dumps(history, ensure_ascii=False, indent=1, sort_keys=True) + "\n")
