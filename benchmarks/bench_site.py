"""Benchmark: `culturebench site` on the World Wide Dishes grid, and the samples page of a
25,000-sample run in a real browser.

1. Build: the WWD release from ../shared/upstream, the authors' GPT-3.5 files scored with
   their recorded judgments (`eval score --matcher recorded`: six task folders, about 23,000
   samples), then the site of that grid. Prints the build time and the site's size.
2. First page at 25,000 samples: one task folder's samples repeated (new ids) to 25,000 and
   to a 1,000-sample baseline; each samples page opened in Debian's Chromium over file://,
   timed from navigation to the first page of rows drawn. Prints both times and the ratio
   (the target: under 2 s at 25,000).

    python benchmarks/bench_site.py [--upstream ../shared/upstream] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from typer.testing import CliRunner

from culturebench.cli import app

TARGET_FIRST_PAGE_S = 2.0
TASKS = ("country", "description", "ingredients", "meal-type", "time-of-day", "utensils")


def _invoke(args: list[str]) -> None:
    done = CliRunner().invoke(app, args)
    if done.exit_code != 0:
        raise SystemExit(f"culturebench {' '.join(args[:3])} failed: {done.output}")


def grid(upstream: Path, work: Path) -> Path:
    """The WWD release and the GPT-3.5 grid scored from the authors' files."""
    _invoke(["build", "wwd", "--source", str(upstream / "wwd"), "--out", str(work / "dist")])
    (release,) = (work / "dist" / "wwd").iterdir()
    probing = upstream / "wwd" / "llm_probing"
    args = [
        "eval",
        "score",
        "wwd",
        "--layout",
        "wwd-probing",
        "--local",
        str(release),
        "--matcher",
        "recorded",
    ]
    for name in ("cleaned_results", "cleaned_compared", "failures"):
        args += ["--generations", str(probing / f"gpt35_dish_info_{name}.csv")]
    _invoke([*args, "--out", str(work / "grid")])
    return work / "grid"


def scaled_run(source: Path, out: Path, n: int) -> Path:
    """``source``'s run folder with its samples repeated to ``n`` (ids made unique)."""
    shutil.copytree(source, out)
    lines = [json.loads(x) for x in (source / "samples.jsonl").read_text(encoding="utf-8").splitlines() if x]
    with open(out / "samples.jsonl", "w", encoding="utf-8") as handle:
        for i in range(n):
            sample = dict(lines[i % len(lines)])
            sample["id"] = f"{sample['id']}#{i}"
            handle.write(json.dumps(sample, ensure_ascii=False, sort_keys=True) + "\n")
    return out


def first_page_s(site: Path, browser) -> float:
    page = browser.new_page()
    start = time.perf_counter()
    (samples_page,) = sorted((site / "samples").glob("*.html"))
    page.goto(samples_page.resolve().as_uri())
    page.wait_for_selector("#samples tbody tr")
    took = time.perf_counter() - start
    page.close()
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--upstream", type=Path, default=Path("../shared/upstream"))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from culturebench.site.build import build_site

    with tempfile.TemporaryDirectory(prefix="cb-bench-site-") as tmp:
        work = Path(tmp)
        folder = grid(args.upstream, work)
        samples = sum(sum(1 for _ in (folder / t / "samples.jsonl").open(encoding="utf-8")) for t in TASKS)
        start = time.perf_counter()
        summary = build_site([folder], work / "site-grid")
        took = time.perf_counter() - start
        print(
            f"WWD grid ({len(TASKS)} runs, {samples:,} samples): site built in {took:.1f} s, "
            f"{summary.files} files, {summary.bytes / 1e6:.1f} MB"
        )
        sites = {}
        for n in (1_000, 25_000):
            run = scaled_run(folder / "country", work / f"run-{n}", n)
            sites[n] = work / f"site-{n}"
            build_site([run], sites[n])
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
            times = {
                n: [first_page_s(site, browser) for _ in range(args.repeat)] for n, site in sites.items()
            }
            browser.close()
        base = statistics.median(times[1_000])
        for n, values in times.items():
            median = statistics.median(values)
            data = sites[n] / "data"
            size = sum(p.stat().st_size for p in data.rglob("samples.js"))
            print(
                f"samples page, {n:>6,} samples: first page {median:.2f} s (min {min(values):.2f}), "
                f"{median / base:.1f}x the 1,000-sample page; data script {size / 1e6:.1f} MB"
            )
        verdict = "PASS" if statistics.median(times[25_000]) < TARGET_FIRST_PAGE_S else "FAIL"
        print(f"{verdict}: first page at 25,000 samples under {TARGET_FIRST_PAGE_S} s")


if __name__ == "__main__":
    main()
