"""Validate a release folder: layout, checksums, card, features, row counts, per-dataset
schemas and cross-field rules, Croissant (metadata and records) and the Hub benchmark file
``eval.yaml``."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from culturebench.changelog import changelog_section
from culturebench.errors import CultureBenchError
from culturebench.hashing import sha256_file
from culturebench.manifest import MANIFEST_NAME, data_files, read_manifest
from culturebench.spec import DatasetSpec, load_spec
from culturebench.validation.findings import Finding, ValidationReport
from culturebench.validation.pandera_utils import run_schema
from culturebench.validation.rows import Frames

logger = logging.getLogger("culturebench.validation")

REQUIRED_FILES = ("README.md", "croissant.json", "eval.yaml", "CHANGELOG.md", MANIFEST_NAME)
REQUIRED_CARD_KEYS = (
    "pretty_name",
    "license",
    "language",
    "task_categories",
    "size_categories",
    "configs",
    "dataset_info",
)
#: Rows per data file whose Croissant records are loaded (see ``_check_croissant``).
CROISSANT_RECORDS_CHECKED = 3


def validate_release(
    folder: str | Path,
    *,
    spec: DatasetSpec | None = None,
    croissant_records: bool = True,
    contact_sheet: Path | None = None,
) -> ValidationReport:
    """Run every check on ``folder`` and return the report (never raises for bad data)."""
    folder = Path(folder)
    report = ValidationReport(target=str(folder))
    report.ran("layout")
    for name in REQUIRED_FILES:
        if not (folder / name).is_file() or (folder / name).is_symlink():
            report.add(Finding("layout", f"missing {name}", field=name))
    if not (folder / MANIFEST_NAME).is_file():
        return report
    try:
        manifest = read_manifest(folder)
        spec = spec or load_spec(manifest["dataset"])
    except (CultureBenchError, KeyError) as exc:
        report.add(Finding("manifest", f"unusable manifest: {exc}"))
        return report

    _check_inventory(folder, manifest, report)
    _check_checksums(folder, manifest, report)
    _check_changelog(folder, manifest, report)
    _check_regenerated(folder, spec, manifest, report)
    features = _check_card(folder, manifest, report)
    frames = _check_data(folder, spec, manifest, features, report)
    _check_dataset_rules(spec, manifest, frames, report)
    if manifest.get("schema_version") == spec.schema_version:
        from culturebench.validation.images import check_images

        check_images(frames, spec, report, contact_sheet)
    _check_croissant(folder, spec, report, records=croissant_records)
    _check_eval_yaml(folder, report)
    return report


def _check_inventory(folder: Path, manifest: dict[str, Any], report: ValidationReport) -> None:
    """Nothing in the folder but what the manifest lists: no stray or hidden files, no
    symlinks, no special files (a publish would upload what validation never looked at)."""
    from culturebench.manifest import inventory_problems

    report.ran("inventory")
    for rel, problem in inventory_problems(folder, manifest):
        report.add(
            Finding(
                "inventory",
                f"{rel} {problem}" if problem.startswith("is ") else f"{rel}: {problem}",
                field=rel,
            )
        )


def _check_regenerated(
    folder: Path, spec: DatasetSpec, manifest: dict[str, Any], report: ValidationReport
) -> None:
    """The card and Croissant must equal what this package renders from the manifest and
    the build report (``card --check``): an edited licence or body does not pass."""
    from culturebench.cards.write import stale_card_files

    report.ran("card:regenerated")
    if manifest.get("version") != spec.version or manifest.get("schema_version") != spec.schema_version:
        report.add(
            Finding(
                "card:regenerated",
                f"release {manifest.get('version')} (schema {manifest.get('schema_version')}) is not the "
                f"version this checkout declares ({spec.version}, schema {spec.schema_version}): "
                "card and Croissant were not regenerated for comparison",
                severity="warning",
            )
        )
        return
    try:
        stale = stale_card_files(folder, spec, manifest)
    except Exception as exc:  # a tampered build report or manifest can break rendering
        report.add(Finding("card:regenerated", f"cannot render the card from the manifest: {exc}"))
        return
    for name in stale:
        if (folder / name).is_file():  # a missing file is reported by the layout check
            report.add(
                Finding(
                    "card:regenerated",
                    f"{name} differs from the one generated from manifest.json and the data "
                    "(edited by hand?); run `culturebench card FOLDER` to regenerate it",
                    field=name,
                )
            )


def _check_checksums(folder: Path, manifest: dict[str, Any], report: ValidationReport) -> None:
    report.ran("checksums")
    listed = data_files(manifest)
    for rel, info in sorted(listed.items()):
        path = folder / rel
        if not path.is_file():
            report.add(Finding("checksums", f"listed data file {rel} is missing", field=rel))
        elif sha256_file(path) != info["sha256"]:
            report.add(Finding("checksums", f"{rel}: sha256 differs from the manifest", field=rel))
    for path in sorted((folder / "data").rglob("*")) if (folder / "data").is_dir() else []:
        rel = path.relative_to(folder).as_posix()
        if path.is_file() and rel not in listed:
            report.add(Finding("checksums", f"{rel} is not listed in the manifest", field=rel))
    for rel, sha in sorted(manifest.get("files", {}).items()):
        path = folder / rel
        if not path.is_file():
            report.add(Finding("checksums", f"listed file {rel} is missing", field=rel))
        elif sha256_file(path) != sha:
            report.add(Finding("checksums", f"{rel}: sha256 differs from the manifest", field=rel))


def _check_changelog(folder: Path, manifest: dict[str, Any], report: ValidationReport) -> None:
    report.ran("changelog")
    path = folder / "CHANGELOG.md"
    if path.is_file() and changelog_section(path.read_text(encoding="utf-8"), manifest["version"]) is None:
        report.add(Finding("changelog", f"CHANGELOG.md has no entry for {manifest['version']}"))


def _check_card(folder: Path, manifest: dict[str, Any], report: ValidationReport) -> dict[str, Any]:
    """Check the card's YAML header; return {config: Features} declared there."""
    from culturebench.cards.card import parse_card
    from datasets import Features

    report.ran("card")
    path = folder / "README.md"
    if not path.is_file():
        return {}
    try:
        meta, _body = parse_card(path.read_text(encoding="utf-8"))
    except Exception as exc:  # ValueError from parse_card, yaml.YAMLError and friends
        report.add(Finding("card", f"README.md header: {exc}"))
        return {}
    for key in REQUIRED_CARD_KEYS:
        if not meta.get(key):
            report.add(Finding("card", f"README.md header lacks {key!r}", field=key))
    declared: dict[str, Any] = {}
    for info in meta.get("dataset_info") or []:
        try:
            declared[info["config_name"]] = Features._from_yaml_list(info["features"])
        except Exception as exc:
            report.add(
                Finding("card", f"dataset_info features unreadable: {exc}", config=info.get("config_name"))
            )
        for split in info.get("splits", []):
            expected = manifest["configs"].get(info["config_name"], {}).get("splits", {}).get(split["name"])
            if expected and split.get("num_examples") != expected["num_rows"]:
                report.add(
                    Finding(
                        "card",
                        f"num_examples {split.get('num_examples')} != {expected['num_rows']} rows",
                        config=info["config_name"],
                    )
                )
    cards_configs = {c.get("config_name"): c for c in meta.get("configs") or []}
    for config, cfg in manifest["configs"].items():
        entry = cards_configs.get(config)
        if entry is None:
            report.add(Finding("card", "config missing from the card's `configs`", config=config))
            continue
        for df in entry.get("data_files", []):
            matched = sorted(p.relative_to(folder).as_posix() for p in folder.glob(df["path"]))
            listed = sorted(f["path"] for f in cfg["splits"].get(df["split"], {}).get("files", []))
            if matched != listed:
                report.add(
                    Finding(
                        "card",
                        f"data_files {df['path']!r} matches {matched}, manifest lists {listed}",
                        config=config,
                    )
                )
    return declared


def _check_data(
    folder: Path,
    spec: DatasetSpec,
    manifest: dict[str, Any],
    card_features: dict[str, Any],
    report: ValidationReport,
) -> Frames:
    """Features and row counts; return one DataFrame per config (splits concatenated) and
    each split's ids (``Frames.split_ids``)."""
    from culturebench.parquet_io import read_split
    from datasets import Features

    report.ran("features")
    report.ran("row_counts")
    same_schema = manifest.get("schema_version") == spec.schema_version
    if not same_schema:
        report.add(
            Finding(
                "features",
                f"release schema_version {manifest.get('schema_version')} differs from "
                f"this checkout's {spec.schema_version}: declared-feature and pandera checks skipped",
                severity="warning",
            )
        )
    frames = Frames()
    for config, cfg in manifest["configs"].items():
        parts = []
        split_ids: dict[str, list[str]] = {}
        for split, info in cfg["splits"].items():
            files = [f["path"] for f in info["files"]]
            if not all((folder / f).is_file() for f in files):
                continue
            try:
                table = read_split(folder, files)
            except Exception as exc:
                report.add(Finding("features", f"cannot read parquet: {exc}", config=config))
                continue
            got = Features.from_arrow_schema(table.schema)
            if same_schema and config in spec.configs and got != spec.configs[config].features:
                report.add(Finding("features", "parquet features differ from dataset.yaml", config=config))
            if config in card_features and got != card_features[config]:
                report.add(Finding("features", "parquet features differ from the card", config=config))
            if table.num_rows != info["num_rows"]:
                report.add(
                    Finding(
                        "row_counts",
                        f"{split}: {table.num_rows} rows, manifest says {info['num_rows']}",
                        config=config,
                    )
                )
            expected = spec.configs[config].expected_rows if config in spec.configs else None
            if same_schema and not manifest.get("sample") and expected and table.num_rows != expected:
                report.add(
                    Finding(
                        "row_counts",
                        f"{split}: {table.num_rows} rows, the full dataset has {expected}",
                        config=config,
                    )
                )
            part = pd.DataFrame(table.to_pylist(), columns=table.column_names)
            if "id" in part.columns:
                split_ids[split] = list(part["id"])
            parts.append(part)
        if parts:
            frames[config] = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
            frames.split_ids[config] = split_ids
    return frames


def _check_dataset_rules(
    spec: DatasetSpec,
    manifest: dict[str, Any],
    frames: dict[str, pd.DataFrame],
    report: ValidationReport,
) -> None:
    from culturebench import registry

    module = registry.get(spec.name).checks()
    if manifest.get("schema_version") != spec.schema_version:
        return
    for config, schema in module.SCHEMAS.items():
        report.ran(f"schema:{config}")
        if config not in frames:
            report.add(Finding(f"schema:{config}", "config has no readable data", config=config))
            continue
        report.extend(run_schema(schema, frames[config], config))
    if set(module.SCHEMAS) <= set(frames):
        for check in getattr(module, "CROSS_CHECKS", ("cross-field",)):
            report.ran(check)
        report.extend(module.cross_checks(frames))


def _check_croissant(folder: Path, spec: DatasetSpec, report: ValidationReport, *, records: bool) -> None:
    """mlcroissant accepts ``croissant.json`` (the whole document: metadata, distribution, every
    record set and field) and, with ``records``, each record set's first records load.

    The records are read from a row-limited copy of the data, not from the release files:
    mlcroissant's reader materialises every row of every file of a record set before it yields
    the first record (a pandas ``apply`` per row: most of a BORSCH validate), however few records
    are then read. :func:`_croissant_sample` writes the first :data:`CROISSANT_RECORDS_CHECKED`
    rows of each Parquet file (the first shard of a ``FileSet``), with the same Arrow schema and
    metadata, at the same relative path in a temporary folder; the parsed document is pointed
    at that folder and its ``sha256`` at the copies, and every record of the copy is loaded.
    What this checks is what the full read checked on those rows: each field's ``source``
    (file, column, ``jsonPath`` transforms) resolves against the Parquet schema and its values
    cast to the declared ``dataType``; a field naming a missing column or an uncastable type
    still fails. The release files' checksums are checked against the manifest
    (``checksums``) and the document against the one regenerated from it (``card:regenerated``),
    so the hash check mlcroissant would do on the full files adds nothing. Cost: constant in
    the number of rows instead of ~0.75 ms per row."""
    report.ran("croissant")
    path = folder / "croissant.json"
    if not path.is_file():
        report.add(
            Finding("croissant", "croissant.json is missing: nothing to validate", field="croissant.json")
        )
        return
    try:
        import mlcroissant as mlc

        dataset = mlc.Dataset(jsonld=str(path))
    except Exception as exc:
        report.add(Finding("croissant", f"mlcroissant rejects croissant.json: {exc}"))
        return
    if not records:
        return
    report.ran("croissant:records")
    with tempfile.TemporaryDirectory(prefix="cb-croissant-") as tmp:
        try:
            sample = _croissant_sample(mlc, dataset.metadata, folder, Path(tmp))
        except Exception as exc:
            report.add(Finding("croissant:records", f"cannot read the data files it lists: {exc}"))
            return
        for record_set in sample.metadata.record_sets:
            try:
                for _record in sample.records(record_set=record_set.uuid):
                    pass
            except Exception as exc:
                report.add(
                    Finding(
                        "croissant:records",
                        f"records of {record_set.name} do not load: {exc}",
                        config=record_set.name,
                    )
                )


def _croissant_sample(mlc: Any, metadata: Any, folder: Path, tmp: Path) -> Any:
    """An mlcroissant dataset for ``metadata`` (parsed from ``folder``) that reads the first
    :data:`CROISSANT_RECORDS_CHECKED` rows of each Parquet file, written under ``tmp`` (see
    :func:`_check_croissant`). ``metadata`` is modified: its folder is ``tmp`` afterwards."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from etils import epath

    def sample(rel: str) -> str:
        source, dest = folder / rel, tmp / rel
        if not source.resolve().is_relative_to(folder.resolve()):
            raise ValueError(f"{rel} is outside the release folder")
        dest.parent.mkdir(parents=True, exist_ok=True)
        parquet = pq.ParquetFile(source)
        batches = parquet.iter_batches(batch_size=CROISSANT_RECORDS_CHECKED)
        first = next(batches, None)
        table = pa.Table.from_batches([first] if first is not None else [], schema=parquet.schema_arrow)
        pq.write_table(table, dest)
        return sha256_file(dest)

    for node in metadata.distribution:
        if isinstance(node, mlc.FileObject) and node.content_url and "://" not in node.content_url:
            node.sha256 = sample(node.content_url)
            node.md5 = None
        elif isinstance(node, mlc.FileSet):
            for pattern in node.includes or []:
                matches = sorted(folder.glob(pattern))
                if matches:
                    sample(matches[0].relative_to(folder).as_posix())
    metadata.ctx.folder = epath.Path(tmp)
    return mlc.Dataset.from_metadata(metadata)


def _check_eval_yaml(folder: Path, report: ValidationReport) -> None:
    """The Hub benchmark file (:func:`culturebench.cards.eval_yaml.check_eval_yaml`): each fault
    a finding naming eval.yaml and the task id and field (a missing file is the layout's)."""
    from culturebench.cards.eval_yaml import EVAL_YAML, check_eval_yaml

    report.ran("eval.yaml")
    if not (folder / EVAL_YAML).is_file():
        return
    for problem in check_eval_yaml(folder):
        report.add(Finding("eval.yaml", problem.message, config=problem.config, field=problem.field))
