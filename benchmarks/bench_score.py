"""Benchmark: scoring throughput of recorded generations (the WWD authors' 3,825 GPT-3.5
answers x 6 tasks) against the cost of just parsing the files.

Baseline, measured in the same run: read the three CSV files and parse every list column
with ``ast.literal_eval`` (what any scorer must do). Prints samples/s and the ratio.

    python benchmarks/bench_score.py [--release dist/wwd/1.1.0] [--upstream ../shared/upstream/wwd]
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import csv
import tempfile
import time
from pathlib import Path

FILES = (
    "gpt35_dish_info_cleaned_results.csv",
    "gpt35_dish_info_cleaned_compared.csv",
    "gpt35_dish_info_failures.csv",
)
TASKS = ("description", "country", "time-of-day", "meal-type", "utensils", "ingredients")


def parse_only(folder: Path) -> int:
    rows = 0
    for name in FILES:
        with open(folder / name, encoding="utf-8", newline="") as handle:
            for row in csv.DictReader(handle):
                rows += 1
                for value in row.values():
                    if value.startswith("["):
                        with contextlib.suppress(ValueError, SyntaxError):
                            ast.literal_eval(value)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", type=Path, default=None, help="a built WWD release folder")
    parser.add_argument("--upstream", type=Path, default=None)
    args = parser.parse_args()
    from culturebench.builders import get_builder
    from culturebench.builders.sources import default_source
    from culturebench.eval.score import score_generations
    from culturebench.spec import load_spec

    upstream = args.upstream or default_source(load_spec("wwd"))[0]
    probing = upstream / "llm_probing"
    with tempfile.TemporaryDirectory() as tmp:
        release = args.release or get_builder("wwd").build(out_root=Path(tmp) / "dist").folder
        start = time.perf_counter()
        parse_only(probing)
        parse_s = time.perf_counter() - start
        samples = 0
        start = time.perf_counter()
        for task in TASKS:
            result = score_generations(
                "wwd",
                task,
                [probing / f for f in FILES],
                Path(tmp) / task,
                layout="wwd-probing",
                local=str(release),
            )
            samples += result["samples"]
        score_s = time.perf_counter() - start
    print(f"parse only (baseline): {parse_s:.2f} s")
    print(
        f"score {samples:,} samples ({len(TASKS)} tasks): {score_s:.2f} s = "
        f"{samples / score_s:,.0f} samples/s = {score_s / parse_s:.1f}x the parse-only time"
    )


if __name__ == "__main__":
    main()
