"""Benchmark: build + validate BORSCH from its upstream tables.

Prints wall times (min and median of N runs) and ratios against a baseline measured in the
same run: the I/O floor of reading the three xlsx tables and the image manifest with
openpyxl/csv and writing three Parquet files, with no parsing, card or validation. The last
lines are the verdicts: build + validate under 10 s, and validate (with Croissant records) at
most 3x the baseline.

    python benchmarks/bench_build.py [--source ../shared/upstream/borsch] [--repeat 3]
"""

from __future__ import annotations

import argparse
import csv
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from openpyxl import load_workbook

from culturebench.builders import get_builder
from culturebench.builders.sources import default_source
from culturebench.spec import load_spec
from culturebench.validation import validate_release

TARGET_S = 10.0
TARGET_VALIDATE_RATIO = 3.0


def baseline(source: Path) -> None:
    """Read the raw tables and write them to Parquet: the floor any builder pays."""
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("RU_DATA.xlsx", "UK_DATA.xlsx", "PARALLEL_RU_UK.xlsx"):
            sheet = load_workbook(source / name, read_only=True).worksheets[0]
            rows = list(sheet.iter_rows(values_only=True))
            header, body = rows[0], rows[1:]
            table = pa.table({str(h): [str(r[i]) for r in body] for i, h in enumerate(header)})
            pq.write_table(table, Path(tmp) / f"{name}.parquet", compression="zstd")
        with open(source / "images_manifest.csv", encoding="utf-8") as handle:
            list(csv.DictReader(handle))


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    source = args.source or default_source(load_spec("borsch"))[0]
    builder = get_builder("borsch")
    root = Path(tempfile.mkdtemp(prefix="cb-bench-"))

    def build() -> object:
        return builder.build(source=str(source), out_root=root, overwrite=True)

    folder = build().folder  # warm-up: imports, babel/CLDR and pycountry tables
    results = {
        "baseline (xlsx read + parquet write)": timed(lambda: baseline(source), args.repeat),
        "build + validate (full pipeline)": timed(build, args.repeat),
        "validate only (with Croissant records)": timed(lambda: validate_release(folder), args.repeat),
        "validate only (no Croissant records)": timed(
            lambda: validate_release(folder, croissant_records=False), args.repeat
        ),
    }
    base = statistics.median(results["baseline (xlsx read + parquet write)"])
    print(f"BORSCH from {source} ({args.repeat} runs each)")
    print(f"{'step':42s} {'min s':>8s} {'median s':>9s} {'x baseline':>11s}")
    for name, times in results.items():
        med = statistics.median(times)
        print(f"{name:42s} {min(times):8.2f} {med:9.2f} {med / base:11.1f}")
    full = statistics.median(results["build + validate (full pipeline)"])
    verdict = "meets" if full < TARGET_S else "MISSES"
    print(f"build + validate median {full:.2f} s {verdict} the < {TARGET_S:.0f} s target")
    validate = statistics.median(results["validate only (with Croissant records)"])
    ratio = validate / base
    verdict = "meets" if ratio <= TARGET_VALIDATE_RATIO else "MISSES"
    print(
        f"validate / baseline = {validate:.2f} s / {base:.2f} s = {ratio:.1f}x "
        f"{verdict} the <= {TARGET_VALIDATE_RATIO:.0f}x target"
    )


if __name__ == "__main__":
    main()
