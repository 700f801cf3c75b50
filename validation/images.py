"""Image checks of a release: embedded bytes intact (decode, sha256, pHash), licences allowed
by the dataset's policy, near-duplicate images inside the dataset (all configs and splits),
and contamination against reference hash lists of known web images (Parquet with columns
``phash``, ``source``). Waived findings (reviewed, in ``waivers.yaml``) are kept as warnings."""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from culturebench.errors import CultureBenchError
from culturebench.hashing import sha256_bytes
from culturebench.images.decode import ImageError
from culturebench.images.index import HashIndex
from culturebench.images.licenses import allowed
from culturebench.images.phash import hamming, hash_image_bytes, to_array
from culturebench.images.policy import ImagePolicy, load_policy
from culturebench.spec import DatasetSpec
from culturebench.validation.findings import Finding, ValidationReport
from culturebench.validation.rows import iter_rows

CHECKS = ("images:integrity", "images:licence_policy", "images:near_duplicates", "images:contamination")


def _records(frames: dict[str, pd.DataFrame]) -> list[tuple[str, int, str, dict[str, Any]]]:
    out = []
    for config, frame in frames.items():
        columns = [c for c in ("images", "links") if c in frame.columns]
        for index, row in iter_rows(frame):
            for column in columns:
                for record in row[column] or []:
                    if isinstance(record, dict) and record.get("phash"):
                        out.append((config, int(index), str(row.get("id")), record))
    return out


def check_images(
    frames: dict[str, pd.DataFrame],
    spec: DatasetSpec,
    report: ValidationReport,
    contact_sheet: Path | None = None,
) -> list[dict[str, Any]]:
    """Run the image checks; return near-duplicate/contamination pairs (for a contact sheet)."""
    records = _records(frames)
    if not records:
        return []
    policy = load_policy(spec)
    for check in CHECKS:
        report.ran(check)
    unique: dict[str, tuple[str, int, str, dict[str, Any]]] = {}
    for item in records:
        record = item[3]
        key = record.get("sha256") or record["url"]
        if key in unique:
            continue
        unique[key] = item
        _integrity(item, policy, report)
    hashed = [item for item in unique.values() if item[3].get("phash")]
    pairs = _near_duplicates(hashed, policy, report) + _contamination(hashed, policy, report)
    if contact_sheet is not None and pairs:
        write_contact_sheet(pairs, contact_sheet)
    return pairs


def _integrity(item, policy: ImagePolicy, report: ValidationReport) -> None:
    config, index, row_id, record = item
    image = record.get("image")
    data = image.get("bytes") if isinstance(image, dict) else None
    if not data:
        if record.get("status") == "embedded":
            report.add(
                Finding(
                    "images:integrity",
                    "status embedded but no bytes",
                    config=config,
                    row=index,
                    row_id=row_id,
                    field="images",
                )
            )
        return
    try:
        facts = hash_image_bytes(data, max_bytes=policy.max_bytes, max_pixels=policy.max_pixels)
    except ImageError as exc:
        report.add(
            Finding(
                "images:integrity",
                f"{record.get('file')}: {exc}",
                config=config,
                row=index,
                row_id=row_id,
                field="images",
            )
        )
        return
    if record.get("sha256") and sha256_bytes(data) != record["sha256"]:
        report.add(
            Finding(
                "images:integrity",
                f"{record.get('file')}: sha256 of the bytes differs from the record",
                config=config,
                row=index,
                row_id=row_id,
                field="images",
            )
        )
    if record.get("phash") and facts["phash"] != record["phash"]:
        report.add(
            Finding(
                "images:integrity",
                f"{record.get('file')}: pHash differs from the record",
                config=config,
                row=index,
                row_id=row_id,
                field="images",
            )
        )
    if not allowed(record.get("license") or "unknown", policy.embed_licenses):
        report.add(
            Finding(
                "images:licence_policy",
                f"{record.get('file')}: licence {record.get('license')!r} is not allowed for embedding",
                config=config,
                row=index,
                row_id=row_id,
                field="images",
            )
        )


def _near_duplicates(hashed, policy: ImagePolicy, report: ValidationReport) -> list[dict[str, Any]]:
    if len(hashed) < 2:
        return []
    hashes = to_array([item[3]["phash"] for item in hashed])
    index = HashIndex(hashes, policy.near_duplicate_threshold)
    first, second = index.pairs_within()  # each near pair once (a < b): the index's self-join
    pairs = []
    for a, b in zip(first.tolist(), second.tolist(), strict=True):
        left, right = hashed[a], hashed[b]
        distance = hamming(left[3]["phash"], right[3]["phash"])
        waiver = policy.waived("images:near_duplicates", left[3].get("sha256"), right[3].get("sha256"))
        message = (
            f"{left[3].get('file')} ({left[2]}) and {right[3].get('file')} ({right[2]}) are near-duplicates "
            f"(pHash distance {distance} <= {policy.near_duplicate_threshold})"
        )
        if waiver:
            message += f"; waived by {waiver.get('reviewer')}: {waiver.get('reason')}"
        report.add(
            Finding(
                "images:near_duplicates",
                message,
                severity="warning",
                config=left[0],
                row=left[1],
                row_id=left[2],
                field="images",
            )
        )
        pairs.append(
            {
                "kind": "near-duplicate",
                "distance": distance,
                "a": left[3],
                "b": right[3],
                "a_row": left[2],
                "b_row": right[2],
            }
        )
    return pairs


REFERENCE_BATCH = 1 << 16  # reference hashes per query batch: memory stays bounded


def reference_shards(path: Path) -> list[Path]:
    """The Parquet shards of a reference list: one file, every ``*.parquet`` below a folder,
    or a glob; sorted."""
    import glob

    if path.is_dir():
        return sorted(path.rglob("*.parquet"))
    if any(c in str(path) for c in "*?["):
        return sorted(Path(p) for p in glob.glob(str(path)))
    return [path]


def match_reference_shard(index: HashIndex, shard: str | Path) -> list[tuple[int, str, str]]:
    """(release index, reference pHash, source) for one reference shard (a local path or any
    fsspec URL), read in batches of :data:`REFERENCE_BATCH` and queried against ``index``."""
    import fsspec
    import pyarrow.parquet as pq

    out: list[tuple[int, str, str]] = []
    with fsspec.open(str(shard), "rb") as handle:
        parquet = pq.ParquetFile(handle)
        missing = [c for c in ("phash", "source") if c not in parquet.schema_arrow.names]
        if missing:
            raise CultureBenchError(f"reference list {shard}: no column {missing[0]!r} (needs phash, source)")
        for batch in parquet.iter_batches(batch_size=REFERENCE_BATCH, columns=["phash", "source"]):
            phashes = [str(v) for v in batch.column("phash").to_pylist()]
            sources = batch.column("source").to_pylist()
            # queries = the reference batch, stored = the release: pairs (batch row, release index)
            qi, ii = index.query_many(to_array(phashes))
            out.extend(
                (int(a), phashes[b], str(sources[b])) for b, a in zip(qi.tolist(), ii.tolist(), strict=True)
            )
    return out


def stream_reference_matches(release: np.ndarray, path: Path, threshold: int) -> list[tuple[int, str, str]]:
    """(release index, reference pHash, source) of every reference hash within ``threshold``
    bits of a release hash. The small side (the release) is indexed; the reference list, of
    any size, is read shard by shard in batches and each batch is queried against it, so
    memory does not grow with the list (recall 1.0: the index is exact). ``culturebench
    corpus contamination`` runs the same per-shard function on a Dask cluster."""
    shards = reference_shards(path)
    if not shards or not all(s.is_file() for s in shards):
        raise CultureBenchError(
            f"reference list {path}: no such Parquet file(s) (image_policy.yaml reference_lists)"
        )
    index = HashIndex(release, threshold)
    out = [match for shard in shards for match in match_reference_shard(index, shard)]
    return sorted(out, key=lambda m: (m[0], m[2], m[1]))


def _contamination(hashed, policy: ImagePolicy, report: ValidationReport) -> list[dict[str, Any]]:
    pairs: list[dict[str, Any]] = []
    if not hashed:
        return pairs
    release = to_array([item[3]["phash"] for item in hashed])
    for path in policy.reference_lists:
        for a, ref_hash, source in stream_reference_matches(
            release, Path(path), policy.contamination_threshold
        ):
            config, row, row_id, record = hashed[a]
            distance = hamming(record["phash"], ref_hash)
            waiver = policy.waived("images:contamination", record.get("sha256"), record["phash"])
            message = (
                f"{record.get('file')} matches known web image {source} in {Path(path).name} "
                f"(pHash distance {distance} <= {policy.contamination_threshold})"
            )
            if waiver:
                message += f"; waived by {waiver.get('reviewer')}: {waiver.get('reason')}"
            report.add(
                Finding(
                    "images:contamination",
                    message,
                    severity="warning" if waiver else "error",
                    config=config,
                    row=row,
                    row_id=row_id,
                    field="images",
                )
            )
            pairs.append(
                {
                    "kind": "contamination",
                    "distance": distance,
                    "a": record,
                    "b": {"url": source},
                    "a_row": row_id,
                    "b_row": Path(path).name,
                }
            )
    return pairs


def _thumb(record: dict[str, Any]) -> str:
    image = record.get("image")
    data = image.get("bytes") if isinstance(image, dict) else None
    if data:
        return f'<img src="data:image/png;base64,{base64.b64encode(data).decode()}" width="200">'
    url = html.escape(record.get("url") or "")
    return f'<img src="{url}" width="200"><br><small>{url}</small>'


def write_contact_sheet(pairs: list[dict[str, Any]], path: Path) -> Path:
    """An HTML page showing each flagged pair side by side, for a person to judge."""
    rows = "\n".join(
        f"<tr><td>{p['kind']}<br>distance {p['distance']}</td>"
        f"<td>{_thumb(p['a'])}<br>{html.escape(str(p['a_row']))}</td>"
        f"<td>{_thumb(p['b'])}<br>{html.escape(str(p['b_row']))}</td></tr>"
        for p in sorted(pairs, key=lambda p: p["distance"])
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "<!doctype html><meta charset='utf-8'><title>Image findings</title>"
        "<h1>Near-duplicate and contamination findings</h1><table border='1' cellpadding='6'>"
        f"<tr><th>finding</th><th>image</th><th>match</th></tr>{rows}</table>",
        encoding="utf-8",
    )
    return path


__all__ = ["check_images", "write_contact_sheet"]
