"""Benchmark: how build + validate of BORSCH grows with the number of rows.

Builds and validates BORSCH at 1x, 10x and 100x its rows and prints one line per size with
its wall time as a multiple of the 1x time measured in the same run, e.g.
``100x rows: 612.0 s = 97.3x``. Target: linear, 100x rows in <= 150x the 1x time.

A warm-up build + validate at 1x runs first and is not reported: the first build of a process
pays the imports, babel/CLDR and pycountry tables and mlcroissant's set-up (seconds), which
would inflate the 1x time and make growth look sub-linear (a cold 1x once showed 100x rows as
15.8x where the warm growth was 42.6x).

Synthetic rows: every dish of RU_DATA.xlsx, UK_DATA.xlsx and PARALLEL_RU_UK.xlsx is
repeated k-1 more times with its ID shifted by ``k * 1_000_000`` and `` #k`` appended to its
name (parallel pairs point at the shifted IDs); the image manifest is the real one, so the
synthetic dishes have no images. The expected-row guard (``expected_rows`` and the source
pins in ``dataset.yaml``) is passed the documented way, without touching the checkout: a
temporary copy of ``datasets/`` declares the scaled row counts and pins the scaled tables'
sha256, and ``CULTUREBENCH_DATASETS`` points the build at it.

    python benchmarks/bench_scale.py [--factors 1,10,100] [--source ../shared/upstream/borsch]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

from openpyxl import Workbook, load_workbook

REPO = Path(__file__).resolve().parent.parent
SHIFT = 1_000_000
TABLES = {"ru": "RU_DATA.xlsx", "uk": "UK_DATA.xlsx", "parallel": "PARALLEL_RU_UK.xlsx"}
TARGET_RATIO_AT_100X = 150.0


def _rows(path: Path) -> list[tuple]:
    sheet = load_workbook(path, read_only=True).worksheets[0]
    return [tuple(r) for r in sheet.iter_rows(values_only=True)]


def _write(path: Path, rows: list[tuple]) -> None:
    workbook = Workbook(write_only=True)
    sheet = workbook.create_sheet()
    for row in rows:
        sheet.append(list(row))
    workbook.save(path)


def _shift_pair(pair: str, k: int) -> str:
    ru, _, uk = str(pair).partition(",")
    shift = lambda v: str(int(v) + k * SHIFT) if v.strip() else ""  # noqa: E731
    return f"{shift(ru)},{shift(uk)}"


def scaled_upstream(source: Path, dest: Path, factor: int) -> dict[str, int]:
    """Write the scaled tables into ``dest``; return the data rows per config."""
    dest.mkdir(parents=True)
    shutil.copy(source / "images_manifest.csv", dest / "images_manifest.csv")
    counts = {}
    for config, name in TABLES.items():
        header, *body = _rows(source / name)
        body = [r for r in body if any(c is not None and str(c).strip() for c in r)]
        out = [header, *body]
        for k in range(1, factor):
            for row in body:
                if config == "parallel":
                    out.append((f"{row[0]} #{k}", f"{row[1]} #{k}", _shift_pair(row[2], k), *row[3:]))
                else:
                    out.append((int(row[0]) + k * SHIFT, f"{str(row[1]).strip()} #{k}", *row[2:]))
        _write(dest / name, out)
        counts[config] = len(out) - 1
    return counts


def scaled_declarations(dest: Path, upstream: Path, counts: dict[str, int]) -> Path:
    """A copy of ``datasets/`` whose BORSCH declares the scaled counts and pins."""
    from culturebench.hashing import sha256_file

    shutil.copytree(REPO / "datasets", dest)
    spec = dest / "borsch" / "dataset.yaml"
    text = spec.read_text(encoding="utf-8")
    for config, expected in (("ru", 1147), ("uk", 823), ("parallel", 433)):
        text = text.replace(f"expected_rows: {expected}", f"expected_rows: {counts[config]}", 1)
    for name in TABLES.values():
        text = re.sub(
            rf"(file: {re.escape(name)}\n(?:\s+\w+: .*\n)*?\s+sha256: )\w+",
            lambda m, name=name: m.group(1) + sha256_file(upstream / name),
            text,
        )
    spec.write_text(text, encoding="utf-8")
    return dest


def build_and_validate(upstream: Path, out: Path) -> float:
    from culturebench.builders import get_builder

    started = time.perf_counter()
    result = get_builder("borsch").build(source=str(upstream), out_root=out)
    assert result.report.ok, result.report.summary()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--factors", default="1,10,100", help="comma-separated row multiples; 1 first")
    parser.add_argument("--source", type=Path, default=None, help="BORSCH upstream folder")
    args = parser.parse_args()
    from culturebench.builders.sources import default_source
    from culturebench.spec import load_spec

    source = args.source or default_source(load_spec("borsch"))[0]
    factors = [int(f) for f in args.factors.split(",")]
    base: float | None = None
    with tempfile.TemporaryDirectory() as tmp:
        warm = Path(tmp) / "warm-up"
        counts = scaled_upstream(source, warm / "upstream", 1)
        os.environ["CULTUREBENCH_DATASETS"] = str(
            scaled_declarations(warm / "datasets", warm / "upstream", counts)
        )
        seconds = build_and_validate(warm / "upstream", warm / "dist")
        print(f"warm-up 1x build + validate (not counted): {seconds:.1f} s", flush=True)
        shutil.rmtree(warm)
        for factor in factors:
            work = Path(tmp) / f"x{factor}"
            counts = scaled_upstream(source, work / "upstream", factor)
            os.environ["CULTUREBENCH_DATASETS"] = str(
                scaled_declarations(work / "datasets", work / "upstream", counts)
            )
            seconds = build_and_validate(work / "upstream", work / "dist")
            base = base if base is not None else seconds / factor
            rows = sum(counts.values())
            print(
                f"{factor}x rows ({rows:,}): {seconds:.1f} s = {seconds / base:.1f}x"
                + (f" (target <= {TARGET_RATIO_AT_100X:.0f}x)" if factor == 100 else ""),
                flush=True,
            )
            shutil.rmtree(work)


if __name__ == "__main__":
    main()
