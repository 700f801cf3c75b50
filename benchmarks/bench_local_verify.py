"""Benchmark: what re-hashing a ``--local`` release against its manifest costs a run.

``eval run``/``score``/``reproduce --local REL`` read a split only after checking its Parquet
files' sha256 against ``manifest.json`` (``--trust-local`` skips the check). For each split of
the given releases, and of a synthetic release whose one split holds images (the shape of a
BORSCH VQA config, where the bytes are), this prints the time of a trusted read, of a verified
read (a fresh process's first read: the hash is kept per process while size and mtime hold),
their ratio, and the hashing throughput.

    python benchmarks/bench_local_verify.py [RELEASE ...]    (default: dist/*/*)
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

RUNS = 3


def _timed(fn) -> float:
    best = float("inf")
    for _ in range(RUNS):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _synthetic(folder: Path, megabytes: int) -> Path:
    """A release-shaped folder: one config whose split holds ``megabytes`` of image bytes."""
    import os

    import pyarrow as pa
    import pyarrow.parquet as pq

    from culturebench.hashing import sha256_file

    data = folder / "data" / "vqa"
    data.mkdir(parents=True)
    rows = megabytes * 4  # 256 kB per row
    table = pa.table(
        {"id": [f"d{i}" for i in range(rows)], "image": [os.urandom(256 * 1024) for _ in range(rows)]}
    )
    path = data / "test-00000-of-00001.parquet"
    pq.write_table(table, path)
    entry = {"path": "data/vqa/test-00000-of-00001.parquet", "sha256": sha256_file(path), "num_rows": rows}
    manifest = {"dataset": "synthetic", "configs": {"vqa": {"splits": {"test": {"files": [entry]}}}}}
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


def _bench(folder: Path, dataset: str) -> None:
    from culturebench.eval import dataset_ref
    from culturebench.hashing import sha256_file

    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    ref = dataset_ref.DatasetRef(
        dataset, "local", str(folder.resolve()), None, None, sha256_file(folder / "manifest.json"), None
    )
    for config, info in manifest.get("configs", {}).items():
        for split, entry in info.get("splits", {}).items():
            size = sum((folder / f["path"]).stat().st_size for f in entry.get("files", []))

            def verified(config: str = config, split: str = split) -> None:
                dataset_ref._HASHED.clear()  # a fresh process: nothing hashed yet
                dataset_ref._TRUSTED.discard(ref.location)
                dataset_ref._open_split(ref, config, split)

            def trusted(config: str = config, split: str = split) -> None:
                dataset_ref._TRUSTED.add(ref.location)
                dataset_ref._open_split(ref, config, split)

            t_trusted, t_verified = _timed(trusted), _timed(verified)
            extra = t_verified - t_trusted
            rate = size / extra / 1e6 if extra > 0 else float("inf")
            print(
                f"{dataset:<10} {config:<14} {split:<6} {size / 1e6:8.1f} MB  trusted {t_trusted:7.3f} s  "
                f"verified {t_verified:7.3f} s  ratio {t_verified / t_trusted:5.2f}  hash {rate:7.0f} MB/s"
            )


def main() -> None:
    given = [Path(p) for p in sys.argv[1:]] or sorted(Path("dist").glob("*/*"))
    for folder in given:
        if (folder / "manifest.json").is_file():
            name = json.loads((folder / "manifest.json").read_text(encoding="utf-8")).get("dataset", "?")
            _bench(folder, name)
    with tempfile.TemporaryDirectory() as tmp:
        _bench(_synthetic(Path(tmp), 200), "synthetic")


if __name__ == "__main__":
    main()
