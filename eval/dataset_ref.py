"""Which dataset revision a run reads: a Hub revision pinned to its commit sha, or a local
release folder pinned by its manifest's sha256; and its rows, in file order."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from culturebench.errors import CultureBenchError
from culturebench.hashing import sha256_file


@dataclass(frozen=True)
class DatasetRef:
    """An immutable dataset revision: a Hub commit sha or a local release's manifest hash."""

    dataset: str
    source: str  # "hub" or "local"
    location: str  # repo id or folder
    requested_revision: str | None
    commit_sha: str | None
    manifest_sha256: str | None
    version: str | None


def resolve_dataset(dataset: str, *, revision: str | None, local: str | None, repo: str | None) -> DatasetRef:
    """Pin the dataset before any model runs: a Hub revision becomes its commit sha."""
    if local:
        from culturebench.manifest import read_manifest

        folder = Path(local)
        manifest = folder / "manifest.json"
        if not manifest.is_file():
            raise CultureBenchError(f"{folder} is not a release folder (no manifest.json)")
        info = read_manifest(folder)
        if info.get("dataset") != dataset:
            raise CultureBenchError(f"{folder} is a release of {info.get('dataset')!r}, not {dataset!r}")
        return DatasetRef(
            dataset, "local", str(folder.resolve()), None, None, sha256_file(manifest), info.get("version")
        )
    from huggingface_hub import HfApi

    repo_id = repo or f"culturebench/{dataset}"
    try:
        info = HfApi().dataset_info(repo_id, revision=revision or "main")
    except Exception as exc:  # offline, no such repo or revision, HTTP errors
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        raise CultureBenchError(
            f"cannot resolve dataset {repo_id}@{revision or 'main'} on the Hub: {first} "
            "(offline? use --local with a release folder)"
        ) from None
    version = revision if revision and revision.startswith("v") else None
    return DatasetRef(dataset, "hub", repo_id, revision, info.sha, None, version)


def load_rows(ref: DatasetRef, config: str, split: str, limit: int | None) -> list[dict[str, Any]]:
    """Rows of one split, in file order, from the pinned revision."""
    from datasets.utils.logging import disable_progress_bar

    from datasets import Image, load_dataset

    disable_progress_bar()
    try:
        if ref.source == "local":
            ds = load_dataset(ref.location, config, split=split)
        else:
            ds = load_dataset(ref.location, config, split=split, revision=ref.commit_sha)
    except (CultureBenchError, OSError):
        raise
    except Exception as exc:  # a damaged Parquet file, an unknown config, a schema mismatch
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise CultureBenchError(
            f"cannot read config {config!r} ({split}) of {ref.location}: {type(exc).__name__}: {first} "
            "(check the release with `culturebench validate`)"
        ) from None
    if limit is not None:
        ds = ds.select(range(min(limit, ds.num_rows)))
    if "images" in ds.features:  # keep encoded bytes; backends decode themselves
        feature = ds.features["images"]
        inner = dict(feature.feature)
        inner["image"] = Image(decode=False)
        ds = ds.cast_column("images", type(feature)(inner))
    return ds.to_list()  # the rows as iteration gives them (nothing to decode), in one Arrow pass


def source_ref(dataset: str, info: dict[str, Any] | None) -> DatasetRef:
    """The dataset revision of a task's inputs (``Task.source_dataset``); a ref with source
    ``none`` when the inputs are published files outside any release."""
    if info is None:
        return DatasetRef(dataset, "none", "", None, None, None, None)
    try:
        return DatasetRef(**info)
    except TypeError:
        raise CultureBenchError(f"input run's dataset reference is malformed: {info!r}") from None
