"""Which dataset revision a run reads: a Hub revision pinned to its commit sha, or a local
release folder pinned by its manifest's sha256; and its rows, in file order.

``--limit N`` (:func:`load_run_rows`) takes N rows spread over the split's reporting groups
(continent, country, category: :func:`choose_rows`), so a limited run still covers every
group it can; ``--limit N --first`` takes the first N rows in file order, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
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

    def to_pin(self) -> dict[str, Any]:
        """The pin a run folder records (``run.json``'s and the provenance's ``dataset``), the
        harness exports and logs carry: this ref's fields as a JSON object."""
        return asdict(self)

    @classmethod
    def from_pin(cls, pin: Mapping[str, Any], *, where: str = "the recorded dataset pin") -> DatasetRef:
        """The ref a pin (:meth:`to_pin`) records; a pin that is not one (not an object, an
        unknown field, no ``dataset``) raises ``CultureBenchError`` naming ``where``. A field a
        pin of an older culturebench lacks reads as None."""
        names = [f.name for f in fields(cls)]
        if not isinstance(pin, Mapping) or set(pin) - set(names) or not isinstance(pin.get("dataset"), str):
            raise CultureBenchError(f"{where} is malformed: {pin!r}")
        values: dict[str, Any] = {name: pin.get(name) for name in names}
        return cls(**values)


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
    from huggingface_hub import HfApi, constants

    from culturebench.hub_http import hub_deadline, timeout_note

    seconds = hub_deadline()
    repo_id = repo or f"culturebench/{dataset}"
    try:  # dataset_info passes its own timeout (None: no limit) over the client's
        hub_info = HfApi().dataset_info(repo_id, revision=revision or "main", timeout=seconds)
    except Exception as exc:  # offline, no such repo or revision, HTTP errors, no answer
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        raise CultureBenchError(
            f"cannot resolve dataset {repo_id}@{revision or 'main'} on the Hub ({constants.ENDPOINT}): "
            f"{type(exc).__name__}: {first}{timeout_note(exc)} (offline? use --local with a release folder)"
        ) from None
    version = revision if revision and revision.startswith("v") else None
    return DatasetRef(dataset, "hub", repo_id, revision, hub_info.sha, None, version)


_TRUSTED: set[str] = set()  # release folders read as they are (``--trust-local``)


def trust_local(folder: str | Path) -> None:
    """Read the release folder ``folder`` without re-hashing its data files against its
    manifest (``--trust-local``): for a folder being edited on purpose."""
    _TRUSTED.add(str(Path(folder).resolve()))


def _local_files(ref: DatasetRef, config: str, split: str) -> list[Path] | None:
    """The data files of ``config``/``split`` of a local release, each checked against the
    sha256 its manifest records (unless the folder is trusted); None when the manifest lists
    no files for the split (an older release: read through its README's configs)."""
    import json

    from culturebench.hashing import sha256_bytes

    folder = Path(ref.location)
    manifest_path = folder / "manifest.json"
    try:
        raw = manifest_path.read_bytes()
        manifest = json.loads(raw)
    except (OSError, ValueError) as exc:
        raise CultureBenchError(f"{manifest_path}: cannot read it ({exc})") from None
    trusted = ref.location in _TRUSTED
    if not trusted and ref.manifest_sha256 and sha256_bytes(raw) != ref.manifest_sha256:
        raise CultureBenchError(
            f"{manifest_path} changed while the run was reading the release; rerun the command"
        )
    if not trusted:  # every data file of the release, not only the split's: the run records
        _verify_release(folder, manifest)  # the manifest as the release it read
    info = (manifest.get("configs") or {}).get(config, {}).get("splits", {}).get(split)
    if not isinstance(info, dict) or not info.get("files"):
        return None
    paths = [folder / entry["path"] for entry in info["files"]]
    missing = next((path for path in paths if not path.is_file()), None)
    if missing is not None:
        raise CultureBenchError(f"{missing}: missing from the release folder (listed in manifest.json)")
    return paths


def _verify_release(folder: Path, manifest: dict[str, Any]) -> None:
    """Every data file the manifest lists is there with the sha256 it records."""
    from culturebench.manifest import data_files

    for relative, entry in sorted(data_files(manifest).items()):
        path = folder / relative
        if not path.is_file():
            raise CultureBenchError(f"{path}: missing from the release folder (listed in manifest.json)")
        if sha256_of(path) != entry.get("sha256"):
            raise CultureBenchError(
                f"{path}: its sha256 differs from the one manifest.json records (the release "
                "changed after it was built); rebuild it, or pass --trust-local to read it as it is"
            )


_HASHED: dict[tuple[str, int, int], str] = {}  # (path, size, mtime_ns) -> sha256, per process


def sha256_of(path: Path) -> str:
    """sha256 of a release file, hashed once per process while its size and mtime hold."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _HASHED:
        _HASHED[key] = sha256_file(path)
    return _HASHED[key]


class ArrowRows:
    """A local release's split read with pyarrow alone: the part of ``datasets.Dataset`` the
    runs use (``num_rows``, ``column_names``, a column, ``select``, ``to_list``), without
    importing ``datasets`` (half a second of every command's start). Rows are what
    ``Dataset.to_list()`` gives with images left encoded (``{"bytes", "path"}``), which the
    runs want; ``tests/test_load_dataset.py`` checks both readers give the same rows."""

    def __init__(self, table: Any) -> None:
        self.table = table

    @property
    def num_rows(self) -> int:
        return int(self.table.num_rows)

    @property
    def column_names(self) -> list[str]:
        return list(self.table.column_names)

    def __getitem__(self, column: str) -> list[Any]:
        return self.table.column(column).to_pylist()

    def select(self, indices: Any) -> ArrowRows:
        return ArrowRows(self.table.take(list(indices)))

    def to_list(self) -> list[dict[str, Any]]:
        return self.table.to_pylist()


def _read_parquet(paths: Sequence[Path]) -> ArrowRows:
    """The files as one in-memory table, read from the bytes on disk now: never from a cache of
    an earlier read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = [pq.read_table(path) for path in paths]
    return ArrowRows(tables[0] if len(tables) == 1 else pa.concat_tables(tables))


def _open_split(ref: DatasetRef, config: str, split: str) -> Any:
    """The split as a ``datasets.Dataset`` from the pinned revision, or, for a local release
    whose files are checked against its manifest (:func:`_local_files`), as
    :class:`ArrowRows`."""
    try:
        if ref.source == "local":
            paths = _local_files(ref, config, split)
            if paths is not None:
                return _read_parquet(paths)
        from datasets.utils.logging import disable_progress_bar

        from datasets import load_dataset

        disable_progress_bar()
        if ref.source == "local":
            return load_dataset(ref.location, config, split=split)
        return load_dataset(ref.location, config, split=split, revision=ref.commit_sha)
    except (CultureBenchError, OSError):
        raise
    except Exception as exc:  # a damaged Parquet file, an unknown config, a schema mismatch
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise CultureBenchError(
            f"cannot read config {config!r} ({split}) of {ref.location}: {type(exc).__name__}: {first} "
            "(check the release with `culturebench validate`)"
        ) from None


def _as_rows(ds: Any) -> list[dict[str, Any]]:
    """The rows as iteration gives them, images kept as encoded bytes (backends decode)."""
    if isinstance(ds, ArrowRows):  # nothing is decoded: images are their encoded bytes already
        return ds.to_list()
    from datasets import Image

    if "images" in ds.features:  # keep encoded bytes; backends decode themselves
        feature = ds.features["images"]
        inner = dict(feature.feature)
        inner["image"] = Image(decode=False)
        ds = ds.cast_column("images", type(feature)(inner))
    return ds.to_list()  # the rows as iteration gives them (nothing to decode), in one Arrow pass


def load_rows(ref: DatasetRef, config: str, split: str, limit: int | None) -> list[dict[str, Any]]:
    """Rows of one split, in file order, from the pinned revision (the first ``limit``)."""
    ds = _open_split(ref, config, split)
    if limit is not None:
        ds = ds.select(range(min(limit, ds.num_rows)))
    return _as_rows(ds)


# How a run's rows were chosen (RowChoice.how)
ALL_ROWS = "all"  # every row of the split (no --limit, or --limit at least the split's rows)
FIRST_ROWS = "first"  # the first N rows in file order (--first, or no group field to spread over)
SPREAD_ROWS = "spread"  # N rows spread over the groups of a row field (:func:`choose_rows`)
NO_GROUP = "(none)"  # the group of a row whose group field is empty


@dataclass(frozen=True)
class RowChoice:
    """Which rows of its release split a run read: how many the split has, how many were used,
    and, with ``--limit``, how they were chosen (``how``: :data:`ALL_ROWS`, :data:`FIRST_ROWS`,
    :data:`SPREAD_ROWS`) and, when spread, over which row field and how many per group."""

    release_rows: int
    used: int
    limit: int | None = None
    how: str = ALL_ROWS
    group_field: str | None = None
    groups: dict[str, int] = field(default_factory=dict)  # group -> rows used (spread)
    release_groups: int = 0  # groups of the field in the whole split (spread)
    reason: str = ""  # why rows were not spread though --limit was given without --first

    def describe(self) -> str:
        """How the rows were chosen, in one line."""
        if self.how == SPREAD_ROWS:
            per = ", ".join(f"{g} {n}" for g, n in self.groups.items())
            return (
                f"--limit {self.limit}: {self.used} of {self.release_rows} rows spread over "
                f"{len(self.groups)} of the {self.release_groups} groups of {self.group_field!r} "
                f"(round-robin over the groups in sorted order, rows in release order within a group: "
                f"{per})"
            )
        if self.how == FIRST_ROWS:
            why = f" ({self.reason})" if self.reason else ""
            return (
                f"--limit {self.limit}: the first {self.used} of {self.release_rows} rows in release "
                f"order{why}"
            )
        if self.limit is not None:
            return f"--limit {self.limit}: all {self.used} rows (the split has no more)"
        return f"all {self.used} rows"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "text": self.describe()}


def group_of(value: Any) -> str:
    """A row's group from its group field: the value, or a list's first value; empty -> (none)."""
    if isinstance(value, list | tuple):
        value = value[0] if value else None
    if value is None or (isinstance(value, str) and not value.strip()):
        return NO_GROUP
    return str(value)


def choose_rows(groups: Sequence[str], limit: int) -> list[int]:
    """``limit`` row indices spread over ``groups`` (one group per row, in release order):
    round-robin over the distinct groups in sorted order, taking each group's rows in release
    order, until ``limit`` are taken; returned in release order. Deterministic: the same split
    and limit always give the same rows."""
    members: dict[str, list[int]] = {}
    for index, group in enumerate(groups):
        members.setdefault(group, []).append(index)
    order = sorted(members)
    chosen: list[int] = []
    depth = 0
    while len(chosen) < min(limit, len(groups)):
        for group in order:
            if depth < len(members[group]) and len(chosen) < limit:
                chosen.append(members[group][depth])
        depth += 1
    return sorted(chosen)


def load_run_rows(
    ref: DatasetRef,
    config: str,
    split: str,
    limit: int | None,
    *,
    first: bool = False,
    group_field: str | Callable[[Sequence[str]], str | None] | None = None,
) -> tuple[list[dict[str, Any]], RowChoice]:
    """The rows a run reads and how they were chosen: every row; with ``limit``, ``limit``
    rows spread over ``group_field`` (:func:`choose_rows`; a callable picks it from the split's
    column names: :meth:`Task.group_field`), or the first ``limit`` with ``first`` or when the
    split has no such field."""
    ds = _open_split(ref, config, split)
    total = ds.num_rows
    if limit is None or limit >= total:
        return _as_rows(ds), RowChoice(total, total, limit)
    if callable(group_field):
        group_field = group_field(list(ds.column_names))
    if first or not group_field or group_field not in ds.column_names:
        reason = "" if first else f"no group field in config {config!r} to spread them over"
        return _as_rows(ds.select(range(limit))), RowChoice(total, limit, limit, FIRST_ROWS, reason=reason)
    groups = [group_of(v) for v in ds[group_field]]
    chosen = choose_rows(groups, limit)
    counts: dict[str, int] = {}
    for index in chosen:
        counts[groups[index]] = counts.get(groups[index], 0) + 1
    choice = RowChoice(
        total, len(chosen), limit, SPREAD_ROWS, group_field, dict(sorted(counts.items())), len(set(groups))
    )
    return _as_rows(ds.select(chosen)), choice


def source_ref(dataset: str, info: dict[str, Any] | None) -> DatasetRef:
    """The dataset revision of a task's inputs (``Task.source_dataset``); a ref with source
    ``none`` when the inputs are published files outside any release."""
    if info is None:
        return DatasetRef(dataset, "none", "", None, None, None, None)
    return DatasetRef.from_pin(info, where="the input run's dataset reference")
