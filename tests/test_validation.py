"""`validate_release` and `culturebench validate` on good and deliberately broken releases.

Each broken release is a copy of a real build with one defect written into its Parquet;
the manifest checksum is updated so the rule under test (not the checksum) must catch it.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from culturebench.cli import app
from culturebench.manifest import read_manifest, write_manifest
from culturebench.parquet_io import write_split
from culturebench.validation import validate_release

pytestmark = pytest.mark.integration


def test_good_release_passes(borsch_release) -> None:
    report = validate_release(borsch_release.folder)
    assert report.ok, report.errors
    for check in (
        "layout",
        "checksums",
        "card",
        "features",
        "row_counts",
        "schema:ru",
        "schema:uk",
        "schema:parallel",
        "cross:parallel_link_exists",
        "cross:image_belongs_to_dish",
        "cross:unique_ids",
        "croissant",
        "croissant:records",
    ):
        assert check in report.checks_run


def tamper(release, tmp_path: Path, config: str, edit: Callable[[list[dict]], None]) -> Path:
    """Copy the release, apply ``edit`` to the rows of ``config`` and re-write it consistently."""
    folder = tmp_path / "release"
    shutil.copytree(release.folder, folder)
    rel = f"data/{config}/test-00000-of-00001.parquet"
    table = pq.read_table(folder / rel)
    rows = table.to_pylist()
    edit(rows)
    (folder / rel).unlink()
    files = write_split(pa.Table.from_pylist(rows, schema=table.schema), folder, config, "test")
    manifest = read_manifest(folder)
    manifest["configs"][config]["splits"]["test"]["files"] = files
    manifest["configs"][config]["splits"]["test"]["num_rows"] = len(rows)
    write_manifest(folder, manifest)
    return folder


def errors(folder: Path) -> list:
    report = validate_release(folder, croissant_records=False)
    assert not report.ok
    return report.errors


def test_duplicate_stable_id_is_named(borsch_release, tmp_path: Path) -> None:
    def edit(rows: list[dict]) -> None:
        rows[10]["id"] = rows[9]["id"]

    found = errors(tamper(borsch_release, tmp_path, "ru", edit))
    dup = [f for f in found if f.check == "schema:ru" and f.field == "id"]
    assert dup and {f.row for f in dup} >= {9, 10}


def test_unknown_origin_code_is_named(borsch_release, tmp_path: Path) -> None:
    def edit(rows: list[dict]) -> None:
        rows[3]["origins"] = ["XX"]

    found = errors(tamper(borsch_release, tmp_path, "uk", edit))
    bad = [f for f in found if f.field == "origins"]
    assert [(f.config, f.row, f.row_id) for f in bad] == [("uk", 3, "uk-4")]
    assert "XX" in bad[0].message


def test_parallel_id_pointing_nowhere_is_named(borsch_release, tmp_path: Path) -> None:
    def edit(rows: list[dict]) -> None:
        rows[0].update(ru_id=99999, ru_ref="ru-99999", id="par-ru99999-uk61")

    found = errors(tamper(borsch_release, tmp_path, "parallel", edit))
    link = [f for f in found if f.check == "cross:parallel_link_exists"]
    assert [(f.config, f.row, f.row_id, f.field) for f in link] == [
        ("parallel", 0, "par-ru99999-uk61", "ru_id")
    ]
    assert "points nowhere" in link[0].message


def test_image_of_another_dish_is_named(borsch_release, tmp_path: Path) -> None:
    def edit(rows: list[dict]) -> None:
        rows[0]["images"][0]["upstream_path"] = "data/RU/images/2/image_14.png"

    found = errors(tamper(borsch_release, tmp_path, "ru", edit))
    wrong = [f for f in found if f.check == "cross:image_belongs_to_dish"]
    assert [(f.config, f.row_id) for f in wrong] == [("ru", "ru-1")]


def test_backlink_mismatch_is_named(borsch_release, tmp_path: Path) -> None:
    def edit(rows: list[dict]) -> None:
        row = next(r for r in rows if r["id"] == "uk-61")
        row["parallel_ids"] = ["par-nonexistent"]

    found = errors(tamper(borsch_release, tmp_path, "uk", edit))
    assert {f.check for f in found} >= {"cross:parallel_backlink"}
    assert any(f.row_id == "uk-61" for f in found)


def test_tampered_file_fails_checksums(borsch_release, tmp_path: Path) -> None:
    folder = tmp_path / "release"
    shutil.copytree(borsch_release.folder, folder)
    card = folder / "README.md"
    card.write_text(card.read_text(encoding="utf-8") + "\nedited by hand\n", encoding="utf-8")
    (folder / "data" / "ru" / "extra.parquet").write_bytes(b"not listed")
    found = errors(folder)
    messages = [f.message for f in found if f.check == "checksums"]
    assert any("README.md: sha256 differs" in m for m in messages)
    assert any("extra.parquet is not listed" in m for m in messages)


def test_card_without_licence_fails(borsch_release, tmp_path: Path) -> None:
    folder = tmp_path / "release"
    shutil.copytree(borsch_release.folder, folder)
    card = folder / "README.md"
    card.write_text(card.read_text(encoding="utf-8").replace("license: mit\n", ""), encoding="utf-8")
    found = errors(folder)
    assert any(f.check == "card" and f.field == "license" for f in found)


@pytest.mark.unit
def test_missing_manifest_is_reported(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("---\n---\n")
    report = validate_release(tmp_path)
    assert not report.ok
    assert {f.field for f in report.errors} >= {"manifest.json", "croissant.json"}


def test_cli_validate_exit_codes_and_report(borsch_release, tmp_path: Path) -> None:
    runner = CliRunner()
    ok = runner.invoke(app, ["validate", str(borsch_release.folder), "--no-records"])
    assert ok.exit_code == 0, ok.output
    assert "validation passed" in ok.output

    def edit(rows: list[dict]) -> None:
        rows[3]["origins"] = ["XX"]

    bad = tamper(borsch_release, tmp_path, "uk", edit)
    out_json = tmp_path / "report.json"
    result = runner.invoke(
        app, ["validate", str(bad), "--no-records", "--json", str(out_json)], terminal_width=200
    )
    assert result.exit_code == 1
    assert "FAIL schema:uk" in result.output and "uk-4" in result.output
    assert '"status": "failed"' in out_json.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", ["README.md", "manifest.json"])
def test_validate_never_raises_on_garbage(borsch_release, tmp_path: Path, name: str) -> None:
    folder = tmp_path / "release"
    shutil.copytree(borsch_release.folder, folder)
    (folder / name).write_text("{{{ not yaml or json", encoding="utf-8")
    assert not validate_release(folder, croissant_records=False).ok
