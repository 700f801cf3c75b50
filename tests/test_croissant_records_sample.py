"""The Croissant records check reads a row-limited copy of the data (issue 31) and still fails
when a record set does not match the Parquet files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import mlcroissant as mlc
import pyarrow.parquet as pq
import pytest

from culturebench.validation import validate_release
from culturebench.validation.release import CROISSANT_RECORDS_CHECKED, _croissant_sample

pytestmark = pytest.mark.integration


def _copy(release, tmp_path: Path) -> Path:
    folder = tmp_path / "release"
    shutil.copytree(release.folder, folder)
    return folder


def _edit_croissant(folder: Path, edit) -> None:
    path = folder / "croissant.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    edit(doc)
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=2), encoding="utf-8")


def _records_errors(folder: Path) -> list:
    report = validate_release(folder)
    assert "croissant:records" in report.checks_run
    return [f for f in report.errors if f.check == "croissant:records"]


def test_sample_reads_only_the_first_rows(borsch_release, tmp_path: Path) -> None:
    folder = borsch_release.folder
    dataset = mlc.Dataset(jsonld=str(folder / "croissant.json"))
    sample = _croissant_sample(mlc, dataset.metadata, folder, tmp_path)
    for record_set in sample.metadata.record_sets:
        records = list(sample.records(record_set=record_set.uuid))
        assert len(records) == CROISSANT_RECORDS_CHECKED
    for copy in tmp_path.rglob("*.parquet"):
        original = pq.ParquetFile(folder / copy.relative_to(tmp_path))
        assert pq.ParquetFile(copy).schema_arrow == original.schema_arrow


def test_field_naming_a_missing_column_fails(borsch_release, tmp_path: Path) -> None:
    folder = _copy(borsch_release, tmp_path)

    def edit(doc: dict) -> None:
        field = doc["recordSet"][0]["field"][0]
        field["source"]["extract"]["column"] = "no_such_column"

    _edit_croissant(folder, edit)
    errors = _records_errors(folder)
    assert errors, "a recordSet field that does not match the data must fail"
    assert errors[0].config == "ru"


def test_field_with_an_uncastable_type_fails(borsch_release, tmp_path: Path) -> None:
    folder = _copy(borsch_release, tmp_path)

    def edit(doc: dict) -> None:
        for field in doc["recordSet"][0]["field"]:
            if field.get("dataType") == "sc:Text" and not field.get("isArray"):
                field["dataType"] = "sc:Integer"  # names are not integers
                return
        raise AssertionError("no text field in the first record set")

    _edit_croissant(folder, edit)
    assert _records_errors(folder)


def test_sharded_release_samples_the_first_shard(upstream_borsch, tmp_path: Path, monkeypatch) -> None:
    """A split written as several shards is a ``cr:FileSet``: its records still load (from the
    first shard's first rows) and the release validates."""
    from culturebench import parquet_io
    from culturebench.builders import get_builder

    monkeypatch.setattr(parquet_io, "MAX_SHARD_BYTES", 64 * 1024)
    result = get_builder("borsch").build(source=str(upstream_borsch), out_root=tmp_path / "dist")
    assert result.report.ok, result.report.errors
    doc = json.loads((result.folder / "croissant.json").read_text(encoding="utf-8"))
    assert any(d["@type"] == "cr:FileSet" for d in doc["distribution"])
    dataset = mlc.Dataset(jsonld=str(result.folder / "croissant.json"))
    sample = _croissant_sample(mlc, dataset.metadata, result.folder, tmp_path / "sample")
    for record_set in sample.metadata.record_sets:
        records = list(sample.records(record_set=record_set.uuid))
        assert len(records) == CROISSANT_RECORDS_CHECKED, record_set.name
