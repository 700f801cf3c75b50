"""Defective upstream files: each error names file, row and field; no release is left.

Every defect is written into a copy of the real upstream snapshot.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

import pytest
from openpyxl import load_workbook
from typer.testing import CliRunner

from culturebench.builders import get_builder
from culturebench.cli import app
from culturebench.errors import SourceError

pytestmark = pytest.mark.integration


def edit_xlsx(path: Path, edit: Callable) -> None:
    workbook = load_workbook(path)
    edit(workbook.worksheets[0])
    workbook.save(path)


def build_fails(source: Path, out: Path) -> SourceError:
    with pytest.raises(SourceError) as info:
        get_builder("borsch").build(source=str(source), out_root=out)
    assert not (out / "borsch" / "1.0.0").exists()
    leftovers = list((out / "borsch").iterdir()) if (out / "borsch").exists() else []
    assert leftovers == [], f"left behind: {leftovers}"
    return info.value


def test_truncated_xlsx(upstream_copy: Path, tmp_path: Path) -> None:
    path = upstream_copy / "RU_DATA.xlsx"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    err = build_fails(upstream_copy, tmp_path / "dist")
    assert err.location.file == "RU_DATA.xlsx"
    assert "truncated or corrupt" in str(err)


def test_empty_file(upstream_copy: Path, tmp_path: Path) -> None:
    (upstream_copy / "UK_DATA.xlsx").write_bytes(b"")
    err = build_fails(upstream_copy, tmp_path / "dist")
    assert str(err) == "UK_DATA.xlsx: file is empty (0 bytes)"


def test_missing_column(upstream_copy: Path, tmp_path: Path) -> None:
    edit_xlsx(upstream_copy / "UK_DATA.xlsx", lambda ws: ws.delete_cols(4))  # 'Source'
    err = build_fails(upstream_copy, tmp_path / "dist")
    assert (err.location.file, err.location.row, err.location.field) == ("UK_DATA.xlsx", 1, "Source")
    assert "missing column" in str(err)


def test_unknown_country_code(upstream_copy: Path, tmp_path: Path) -> None:
    def edit(ws) -> None:
        ws["C5"] = "TR, XX"

    edit_xlsx(upstream_copy / "RU_DATA.xlsx", edit)
    err = build_fails(upstream_copy, tmp_path / "dist")
    assert str(err).startswith("RU_DATA.xlsx, row 5, field 'Countries of Origin': unknown ISO 3166-1")
    assert "'XX'" in str(err)


def test_duplicate_id(upstream_copy: Path, tmp_path: Path) -> None:
    def edit(ws) -> None:
        ws["A10"] = 3

    edit_xlsx(upstream_copy / "RU_DATA.xlsx", edit)
    err = build_fails(upstream_copy, tmp_path / "dist")
    assert (err.location.file, err.location.row, err.location.field) == ("RU_DATA.xlsx", 10, "ID")
    assert "duplicate ID 3 (first used on row 4)" in str(err)


def test_non_integer_id(upstream_copy: Path, tmp_path: Path) -> None:
    def edit(ws) -> None:
        ws["A7"] = "six"

    edit_xlsx(upstream_copy / "UK_DATA.xlsx", edit)
    err = build_fails(upstream_copy, tmp_path / "dist")
    assert str(err).startswith("UK_DATA.xlsx, row 7, field 'ID': expected an integer ID")


def test_parallel_id_pointing_nowhere(upstream_copy: Path, tmp_path: Path) -> None:
    def edit(ws) -> None:
        ws["C3"] = "50,99999"

    edit_xlsx(upstream_copy / "PARALLEL_RU_UK.xlsx", edit)
    err = build_fails(upstream_copy, tmp_path / "dist")
    assert str(err).startswith("PARALLEL_RU_UK.xlsx, row 3, field 'ID RU,UK': UK ID 99999 points nowhere")


def test_parallel_pair_without_any_side(upstream_copy: Path, tmp_path: Path) -> None:
    def edit(ws) -> None:
        ws["C4"] = ","

    edit_xlsx(upstream_copy / "PARALLEL_RU_UK.xlsx", edit)
    err = build_fails(upstream_copy, tmp_path / "dist")
    assert (err.location.row, err.location.field) == (4, "ID RU,UK")


def test_unknown_provenance(upstream_copy: Path, tmp_path: Path) -> None:
    def edit(ws) -> None:
        ws["D2"] = "wikipedia"

    edit_xlsx(upstream_copy / "UK_DATA.xlsx", edit)
    err = build_fails(upstream_copy, tmp_path / "dist")
    assert str(err).startswith("UK_DATA.xlsx, row 2, field 'Source': unknown provenance 'wikipedia'")


def test_image_row_belonging_to_no_dish(upstream_copy: Path, tmp_path: Path) -> None:
    path = upstream_copy / "images_manifest.csv"
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    rows[6][1] = "5000"  # dish_id of the 6th image row (line 7)
    rows[6][5] = f"data/RU/images/5000/{rows[6][2]}"
    with open(path, "w", encoding="utf-8", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows(rows)
    err = build_fails(upstream_copy, tmp_path / "dist")
    assert str(err).startswith("images_manifest.csv, row 7, field 'dish_id': image row belongs to no dish")


def test_cli_reports_bad_input_with_exit_code_2(upstream_copy: Path, tmp_path: Path) -> None:
    (upstream_copy / "PARALLEL_RU_UK.xlsx").write_bytes(b"PK\x03\x04 broken")
    result = CliRunner().invoke(
        app,
        ["build", "borsch", "--source", str(upstream_copy), "--out", str(tmp_path / "dist")],
        terminal_width=200,
    )
    assert result.exit_code == 2
    assert "PARALLEL_RU_UK.xlsx" in result.output
    assert not (tmp_path / "dist" / "borsch" / "1.0.0").exists()
