"""Benchmark: ``eval score`` of the WWD authors' recorded GPT-3.5 answers (3 files, 3,825 dishes
x 5 seeds, 6 tasks = 22,950 samples) against reading the same files with pandas.

Both in one process, after a warm-up run of each (imports, the release's Arrow cache, the
country names), then 3 timed runs each; prints min / median and the ratio of the minima
(issue 31's goal: ``eval score`` of the whole WWD scoring <= 20x the pandas read). A second
baseline parses every list answer too (``ast.literal_eval``), what any scorer must do at least.
Then ``eval results`` of two of the scored runs (country, meal-type: 7,650 Every Eval Ever
sample lines, each checked against the schema) with the compiled schema (fastjsonschema) and
with jsonschema alone, the validator it had before. Last, the cold figures a user meets: the
`culturebench eval score` command in a fresh process against a fresh Python process that only
reads and parses the three files (pandas + ``literal_eval``), 3 runs each (issue 45's goal:
<= 3x).

    python benchmarks/bench_score.py [--release dist/wwd/1.1.0] [--upstream ../shared/upstream/wwd]
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

FILES = (
    "gpt35_dish_info_cleaned_results.csv",
    "gpt35_dish_info_cleaned_compared.csv",
    "gpt35_dish_info_failures.csv",
)
TASKS = ("description", "country", "time-of-day", "meal-type", "utensils", "ingredients")
RUNS = 3


def pandas_read(folder: Path) -> int:
    import pandas as pd

    return sum(len(pd.read_csv(folder / name)) for name in FILES)


def pandas_read_and_parse(folder: Path) -> int:
    """The pandas read plus ``ast.literal_eval`` of every cell that holds a list."""
    import pandas as pd

    parsed = 0
    for name in FILES:
        for column in pd.read_csv(folder / name, dtype=str).itertuples(index=False):
            for value in column:
                if isinstance(value, str) and value.startswith("["):
                    with contextlib.suppress(ValueError, SyntaxError):
                        ast.literal_eval(value)
                        parsed += 1
    return parsed


def timed(job: Callable[[int], object]) -> list[float]:
    """Seconds of :data:`RUNS` calls of ``job(k)`` after one warm-up call."""
    job(0)
    out = []
    for k in range(1, RUNS + 1):
        start = time.perf_counter()
        job(k)
        out.append(time.perf_counter() - start)
    return out


def show(name: str, seconds: list[float], base: float | None = None) -> None:
    ratio = f"  {min(seconds) / base:6.1f}x the pandas read" if base else ""
    print(f"{name:<38} min {min(seconds):7.3f} s  median {statistics.median(seconds):7.3f} s{ratio}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", type=Path, default=None, help="a built WWD release folder")
    parser.add_argument("--upstream", type=Path, default=None)
    args = parser.parse_args()
    from culturebench.builders import get_builder
    from culturebench.builders.sources import default_source
    from culturebench.eval.score import score_tasks
    from culturebench.spec import load_spec

    upstream = args.upstream or default_source(load_spec("wwd"))[0]
    probing = upstream / "llm_probing"
    files = [probing / f for f in FILES]
    with tempfile.TemporaryDirectory() as tmp:
        release = args.release or get_builder("wwd").build(out_root=Path(tmp) / "dist").folder
        read = timed(lambda k: pandas_read(probing))
        parse = timed(lambda k: pandas_read_and_parse(probing))
        done: dict = {}

        def score(k: int) -> None:
            done.update(
                score_tasks(
                    "wwd", TASKS, files, Path(tmp) / f"score-{k}", layout="wwd-probing", local=str(release)
                )
            )

        scored = timed(score)
        runs = [Path(tmp) / "score-0" / task for task in ("country", "meal-type")]
        compiled = timed(lambda k: results(runs, Path(tmp) / f"results-{k}"))
        reference = timed(lambda k: results(runs, Path(tmp) / f"results-js-{k}", compiled=False))
    samples = sum(r["samples"] for r in done.values())
    base = min(read)
    show("pandas read of the 3 files (baseline)", read)
    show("  + ast.literal_eval of every list", parse, base)
    show(f"eval score, {len(TASKS)} tasks, {samples:,} samples", scored, base)
    print(f"eval score: {samples / min(scored):,.0f} samples/s")
    show("eval results, jsonschema only", reference)
    show("eval results, compiled schema", compiled)
    print(f"eval results: {min(reference) / min(compiled):.1f}x faster with the compiled schema")
    cold(files, release if args.release else None)


PARSE_ONLY = """
import ast, contextlib, sys
import pandas as pd
for name in sys.argv[1:]:
    for row in pd.read_csv(name, dtype=str).itertuples(index=False):
        for value in row:
            if isinstance(value, str) and value.startswith("["):
                with contextlib.suppress(ValueError, SyntaxError):
                    ast.literal_eval(value)
"""


def cold(files: list[Path], release: Path | None) -> None:
    """The command in a fresh process against a fresh process that reads and parses."""
    import subprocess
    import sys

    exe = str(Path(sys.executable).with_name("culturebench"))
    with tempfile.TemporaryDirectory() as tmp:
        if release is None:
            from culturebench.builders import get_builder

            release = get_builder("wwd").build(out_root=Path(tmp) / "dist").folder
        generations = [arg for f in files for arg in ("--generations", str(f))]

        def command(k: int) -> None:
            args = [
                exe,
                "eval",
                "score",
                "wwd",
                "--layout",
                "wwd-probing",
                *generations,
                "--local",
                str(release),
            ]
            subprocess.run([*args, "--out", f"{tmp}/cold-{k}"], check=True, capture_output=True)

        parse = timed(
            lambda k: subprocess.run([sys.executable, "-c", PARSE_ONLY, *map(str, files)], check=True)
        )
        scored = timed(command)
    show("fresh process: read + parse", parse)
    show("fresh process: eval score", scored)
    print(f"fresh process: eval score is {min(scored) / min(parse):.2f}x the read + parse")


def results(runs: list[Path], out: Path, compiled: bool = True) -> None:
    """``eval results`` of ``runs`` into ``out``; ``compiled=False``: jsonschema alone."""
    from unittest import mock

    from culturebench.eval import every_eval_ever
    from culturebench.eval.hub_results import export_results

    with (
        mock.patch.object(every_eval_ever, "_compiled", lambda name: None)
        if not compiled
        else contextlib.nullcontext()
    ):
        export_results(runs, out, model_id="openai/gpt-3.5-turbo")


if __name__ == "__main__":
    main()
