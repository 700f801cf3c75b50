"""Corpus shards: where they are and how to read their text, through fsspec.

A corpus SPEC is one of
- a local file, folder or glob (``data/mc4-ru/*.json.gz``),
- any fsspec URL or glob (``hf://datasets/allenai/c4/multilingual/c4-uk.*.json.gz``, ``s3://...``),
- ``hub:REPO[@REVISION][:GLOB]``: the files of a Hub dataset repo at a revision (its commit
  sha is resolved and recorded), e.g. ``hub:allenai/c4@main:multilingual/c4-uk.tfrecord-000*.json.gz``.

Shards are Parquet (``.parquet``) or JSON Lines (``.jsonl``/``.json``, optionally ``.gz``,
``.bz2``, ``.xz`` or ``.zst``). Each has an identity recorded in provenance: size and sha256
for local files, size and ETag (or the Hub's blob id) for remote ones.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from culturebench.errors import CultureBenchError

TEXT_SUFFIXES = (".jsonl", ".json", ".parquet")
COMPRESSION = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zst": "zstd"}


class CorpusError(CultureBenchError):
    """The corpus cannot be listed or a shard cannot be read."""


@dataclass(frozen=True)
class Shard:
    """One input file. ``fingerprint`` names its content (sha256 or ETag); ``revision`` the
    Hub commit it was listed at (None elsewhere)."""

    url: str
    size: int
    fingerprint: str
    revision: str | None = None

    @property
    def id(self) -> str:
        """Stable id of this shard's content at this place: the name of its part file."""
        return hashlib.sha256(f"{self.url}\n{self.fingerprint}".encode()).hexdigest()[:20]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _kind(url: str) -> tuple[str, str | None]:
    """(format, compression) from a file name."""
    name = url.rsplit("/", 1)[-1].lower()
    compression = None
    for suffix, codec in COMPRESSION.items():
        if name.endswith(suffix):
            compression, name = codec, name[: -len(suffix)]
    for suffix in TEXT_SUFFIXES:
        if name.endswith(suffix):
            return ("parquet" if suffix == ".parquet" else "jsonl"), compression
    raise CorpusError(f"{url}: not a Parquet or JSON Lines shard (.parquet, .jsonl[.gz|.zst|...])")


def list_shards(spec: str, *, fingerprint_local: bool = True) -> list[Shard]:
    """The shards of a corpus SPEC, sorted by URL (so every engine sees one order)."""
    if spec.startswith("hub:"):
        return _hub_shards(spec[4:])
    import fsspec

    path = Path(spec)
    if "://" not in spec and path.is_dir():
        files = sorted(str(p) for p in path.rglob("*") if p.is_file() and _is_text_shard(p.name))
        return [_local(Path(f), fingerprint_local) for f in files]
    if "://" not in spec:
        import glob

        files = (
            sorted(glob.glob(spec)) if any(c in spec for c in "*?[") else ([spec] if path.is_file() else [])
        )
        if not files:
            raise CorpusError(f"--corpus {spec}: no such file, folder or matching files")
        return [_local(Path(f), fingerprint_local) for f in files if _is_text_shard(f)]
    fs, _, paths = fsspec.get_fs_token_paths(spec)
    out = []
    for p in sorted(paths):
        info = fs.info(p)
        tag = str(
            info.get("ETag")
            or info.get("etag")
            or info.get("lfs", {}).get("sha256")
            or info.get("blob_id")
            or ""
        )
        out.append(
            Shard(fs.unstrip_protocol(p), int(info.get("size") or 0), tag or f"size:{info.get('size')}")
        )
    if not out:
        raise CorpusError(f"--corpus {spec}: no matching files")
    return out


def _is_text_shard(name: str) -> bool:
    try:
        _kind(name)
    except CorpusError:
        return False
    return True


def _local(path: Path, fingerprint: bool) -> Shard:
    from culturebench.hashing import sha256_file

    return Shard(
        str(path.resolve()),
        path.stat().st_size,
        sha256_file(path) if fingerprint else f"mtime:{path.stat().st_mtime_ns}",
    )


def _hub_shards(rest: str) -> list[Shard]:
    import fnmatch

    from huggingface_hub import HfApi

    repo, _, pattern = rest.partition(":")
    repo, _, revision = repo.partition("@")
    try:
        api = HfApi()
        sha = api.dataset_info(repo, revision=revision or "main").sha
        tree = api.list_repo_tree(repo, repo_type="dataset", revision=sha, recursive=True)
        files = [
            f
            for f in tree
            if hasattr(f, "size")
            and (not pattern or fnmatch.fnmatch(f.path, pattern))
            and _is_text_shard(f.path)
        ]
    except Exception as exc:  # offline, no such repo or revision
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        raise CorpusError(f"--corpus hub:{rest}: cannot list the repo: {first}") from None
    if not files:
        raise CorpusError(f"--corpus hub:{rest}: no Parquet or JSON Lines files match")
    return sorted(
        (
            Shard(
                f"hf://datasets/{repo}@{sha}/{f.path}",
                int(f.size),
                str(getattr(getattr(f, "lfs", None), "sha256", None) or f.blob_id),
                sha,
            )
            for f in files
        ),
        key=lambda s: s.url,
    )


def iter_texts(shard: Shard, column: str, batch_size: int = 1024) -> Iterator[list[str]]:
    """The ``column`` values of a shard, in batches, in file order (None becomes "")."""
    import fsspec

    fmt, compression = _kind(shard.url)
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            with fsspec.open(shard.url, "rb") as handle:
                parquet = pq.ParquetFile(handle)
                if column not in parquet.schema_arrow.names:
                    raise CorpusError(
                        f"{shard.url}: no column {column!r} (has {', '.join(parquet.schema_arrow.names)})"
                    )
                for batch in parquet.iter_batches(batch_size=batch_size, columns=[column]):
                    yield [t or "" for t in batch.column(0).to_pylist()]
            return
        with fsspec.open(shard.url, "rt", compression=compression, encoding="utf-8") as handle:
            batch: list[str] = []
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise CorpusError(f"{shard.url}, line {number}: not JSON ({exc.msg})") from None
                if not isinstance(record, dict) or column not in record:
                    raise CorpusError(f"{shard.url}, line {number}: no field {column!r}")
                batch.append(str(record[column] or ""))
                if len(batch) >= batch_size:
                    yield batch
                    batch = []
            if batch:
                yield batch
    except CorpusError:
        raise
    except (OSError, EOFError, ValueError) as exc:
        raise CorpusError(f"{shard.url}: unreadable ({type(exc).__name__}: {exc})") from None
