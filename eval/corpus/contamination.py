"""Image-hash contamination at scale: a release's image pHashes against a reference collection
of any size (Parquet shards with ``phash`` and ``source``, e.g. pHashes of LAION images),
one engine task per reference shard.

The small side is indexed (the release's hashes, a few thousand); every task streams its shard
in batches through the same function the release validation uses
(:func:`culturebench.validation.images.match_reference_shard`), so the result equals the
validation's and brute force (recall 1.0 at the threshold). Each task writes one part file; the
merge reads one part per shard, so a retried shard never counts twice.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from culturebench.errors import CultureBenchError
from culturebench.eval.corpus.shards import CorpusError
from culturebench.jsonsafe import json_text


def release_hashes(folder: Path) -> list[dict[str, Any]]:
    """Every image record with a pHash in a release folder (all configs and splits):
    ``{config, row_id, file, phash}``, in file order."""
    import pyarrow.parquet as pq

    from culturebench.manifest import read_manifest

    manifest = read_manifest(folder)
    out = []
    for config, info in manifest["configs"].items():
        for split in info["splits"].values():
            for entry in split["files"]:
                table = pq.read_table(folder / entry["path"])
                columns = [c for c in ("images", "links") if c in table.column_names]
                for row in table.select(["id", *columns]).to_pylist():
                    for column in columns:
                        for record in row[column] or []:
                            if isinstance(record, dict) and record.get("phash"):
                                out.append(
                                    {
                                        "config": config,
                                        "row_id": row["id"],
                                        "file": record.get("file"),
                                        "phash": record["phash"],
                                    }
                                )
    return out


def match_shard(shard: Any, hashes: list[str], threshold: int, parts_dir: str) -> str:
    """One engine task: the reference shard's matches against the release hashes, written to
    ``parts/<shard id>.json`` (kept when already there for the same inputs)."""
    import hashlib

    from culturebench.eval.corpus.engine import has_part, part_path, write_part
    from culturebench.images.index import HashIndex
    from culturebench.images.phash import to_array
    from culturebench.validation.images import match_reference_shard

    # the order of the hashes matters: matches name them by index
    digest = hashlib.sha256(json.dumps([hashes, threshold]).encode()).hexdigest()[:20]
    path = part_path(parts_dir, shard.id)
    if has_part(path, shard.id, digest):
        return str(path)
    index = HashIndex(to_array(hashes), threshold)
    _check_reference_shard(shard.url)
    try:
        matches = match_reference_shard(index, shard.url)
    except CultureBenchError:
        raise
    except _reference_errors() as exc:
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise CorpusError(
            f"reference shard {shard.url}: unreadable or not hex pHashes ({type(exc).__name__}: {first})"
        ) from None
    return write_part(path, {"shard": shard.id, "url": shard.url, "spec": digest, "matches": matches})


def _reference_errors() -> tuple[type[BaseException], ...]:
    import pyarrow as pa

    return (OSError, EOFError, ValueError, OverflowError, pa.ArrowException)


def _check_reference_shard(url: str) -> None:
    """A reference shard is Parquet whose ``phash`` holds hex strings (a number column would
    be read as hex digits, silently wrong) and that has a ``source`` column."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from culturebench.eval.corpus.shards import _open_raw

    try:
        with _open_raw(url) as handle:
            schema = pq.ParquetFile(handle).schema_arrow
    except CultureBenchError:
        raise
    except _reference_errors() as exc:
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise CorpusError(
            f"reference shard {url}: not a readable Parquet file ({type(exc).__name__}: {first})"
        ) from None
    for column in ("phash", "source"):
        if column not in schema.names:
            raise CorpusError(f"reference shard {url}: no column {column!r} (needs phash, source)")
    kind = schema.field("phash").type
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind)):
        raise CorpusError(
            f"reference shard {url}: column 'phash' holds {kind}, not hex strings (e.g. 'c3a1...')"
        )


def corpus_contamination(
    dataset: str,
    references: str,
    out: Path,
    *,
    threshold: int = 10,
    local: str | None = None,
    revision: str | None = None,
    repo: str | None = None,
    scheduler: str | None = None,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Match a release's images against a reference collection; ``contamination.parquet`` and
    ``contamination.json`` (provenance) in ``out`` (new, empty, or an earlier contamination
    run of ours, whose finished parts are reused; locked while it runs)."""
    from culturebench.eval.corpus.engine import check_scheduler
    from culturebench.eval.run_folder import check_out_dir
    from culturebench.outputs import OutputKind, resumable_output

    if scheduler is not None:
        scheduler = check_scheduler(scheduler)  # before any work: a bad address is a usage error
    check_out_dir(out)
    with resumable_output(out, OutputKind("corpus-contamination", ("parts",))):
        return _contamination(dataset, references, out, threshold, local, revision, repo, scheduler, workers,
                              progress)  # fmt: skip


def _contamination(
    dataset: str,
    references: str,
    out: Path,
    threshold: int,
    local: str | None,
    revision: str | None,
    repo: str | None,
    scheduler: str | None,
    workers: int,
    progress: Callable[[int, int], None] | None,
) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from culturebench.atomic import write_text_atomic
    from culturebench.eval.corpus.engine import run_tasks
    from culturebench.eval.corpus.shards import list_shards
    from culturebench.eval.dataset_ref import resolve_dataset
    from culturebench.eval.run_folder import git_sha
    from culturebench.images.phash import hamming
    from culturebench.safe_http import redact

    ref = resolve_dataset(dataset, revision=revision, local=local, repo=repo)
    if ref.source != "local":
        from huggingface_hub import snapshot_download

        from culturebench.hub_http import hub_deadline

        hub_deadline()
        folder = Path(snapshot_download(ref.location, repo_type="dataset", revision=ref.commit_sha))
    else:
        folder = Path(ref.location)
    records = release_hashes(folder)
    if not records:
        raise CultureBenchError(f"{folder}: the release has no image hashes (build it with --images)")
    shards = list_shards(references, option="--references")
    other = [s.url for s in shards if not s.url.lower().endswith(".parquet")]
    if other:  # never left out in silence
        raise CultureBenchError(
            f"--references {references}: {other[0]} is not Parquet (reference shards are Parquet "
            f"with phash and source columns){f'; {len(other) - 1} more' if len(other) > 1 else ''}"
        )
    hashes = [r["phash"] for r in records]
    start = time.perf_counter()
    kwargs = {"hashes": hashes, "threshold": threshold, "parts_dir": str(out / "parts")}
    run_tasks(
        match_shard,
        shards,
        kwargs=kwargs,
        scheduler=scheduler,
        workers=workers,
        progress=progress,
        sizes=[s.size for s in shards],
    )
    seconds = time.perf_counter() - start
    rows = []
    for shard in shards:
        path = out / "parts" / f"{shard.id}.json"
        try:
            part = json.loads(path.read_text(encoding="utf-8"))
            for a, ref_hash, source in part["matches"]:
                record = records[a]
                rows.append({**record, "reference_phash": ref_hash, "source": source,
                             "distance": hamming(record["phash"], ref_hash), "shard": shard.url})  # fmt: skip
        except (OSError, ValueError, RecursionError, KeyError, TypeError, IndexError, AttributeError):
            raise CultureBenchError(
                f"{path}: a damaged part (delete it; the next run matches its shard again)"
            ) from None
    rows.sort(key=lambda r: (r["config"], r["row_id"], str(r["file"]), r["source"], r["reference_phash"]))
    columns = ["config", "row_id", "file", "phash", "reference_phash", "source", "distance", "shard"]
    pq.write_table(pa.table({c: [r[c] for r in rows] for c in columns}), out / "contamination.parquet")
    record = {
        "dataset": ref.to_pin(),
        "references": redact(references),
        "shards": [s.to_dict() for s in shards],
        "threshold": threshold,
        "release_images": len(records),
        "matches": len(rows),
        "images_matched": len({(r["config"], r["row_id"], r["file"]) for r in rows}),
        "engine": {"scheduler": redact(scheduler) if scheduler else "local", "workers": workers},
        "seconds": round(seconds, 3),
        "culturebench_git": git_sha(),
    }
    write_text_atomic(out / "contamination.json", json_text(record, indent=2))
    return record
