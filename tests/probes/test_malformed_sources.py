"""Probe cases (issue 12, malformed sources): duplicated headers, extra fields, hostile or
absurd cells, zip bombs, entity XML, BOM CSVs. Each is written into a copy of the real
upstream files; the build must stop with one SourceError naming file, row and field (or,
for the BOM, read the file) and leave nothing behind."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from openpyxl import load_workbook

from culturebench.builders import get_builder, tables
from culturebench.errors import SourceError

pytestmark = pytest.mark.integration


def build(name: str, source: Path, out: Path):
    return get_builder(name).build(source=str(source), out_root=out)


def build_fails(name: str, source: Path, out: Path) -> SourceError:
    with pytest.raises(SourceError) as info:
        build(name, source, out)
    assert not (out / name).exists() or list((out / name).iterdir()) == []
    return info.value


def edit_sheet(path: Path, edit) -> None:
    workbook = load_workbook(path)
    edit(workbook.worksheets[0])
    workbook.save(path)


def wwd_csv(folder: Path) -> Path:
    return next(folder.glob("WorldWideDishes_*.csv"))


# 7. duplicated headers and extra fields are errors, not silent replacement or loss
def test_duplicate_xlsx_header(upstream_copy: Path, tmp_path: Path) -> None:
    edit_sheet(
        upstream_copy / "RU_DATA.xlsx", lambda ws: ws.cell(row=1, column=ws.max_column + 1, value="Dish")
    )
    err = build_fails("borsch", upstream_copy, tmp_path / "dist")
    assert (err.location.file, err.location.row, err.location.field) == ("RU_DATA.xlsx", 1, "Dish")
    assert "appears twice" in str(err)


def test_duplicate_csv_header(wwd_copy: Path, tmp_path: Path, csv_editor) -> None:
    path = wwd_csv(wwd_copy)

    def edit(rows):
        column = rows[0].index("local_name")
        for row in rows:
            row.append(row[column] if row is rows[0] else "другое имя")

    csv_editor(path, edit)
    err = build_fails("wwd", wwd_copy, tmp_path / "dist")
    assert (err.location.file, err.location.row, err.location.field) == (path.name, 1, "local_name")


def test_extra_csv_fields(wwd_copy: Path, tmp_path: Path, csv_editor) -> None:
    path = wwd_csv(wwd_copy)
    csv_editor(path, lambda rows: rows[3].append("stray value"))
    err = build_fails("wwd", wwd_copy, tmp_path / "dist")
    assert err.location.file == path.name and err.location.row is not None and err.location.row >= 4
    assert "extra fields" in str(err)


def test_value_in_headerless_xlsx_column(upstream_copy: Path, tmp_path: Path) -> None:
    edit_sheet(upstream_copy / "UK_DATA.xlsx", lambda ws: ws.cell(row=7, column=ws.max_column + 2, value="x"))
    err = build_fails("borsch", upstream_copy, tmp_path / "dist")
    assert (err.location.file, err.location.row) == ("UK_DATA.xlsx", 7)


# 17. names that are not names; file names that are paths
@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("\u200b\u200d\ufeff", "nothing visible"),
        ("Щ" * 1_000_000, "characters long"),
    ],
    ids=["zero-width", "1M-chars"],
)
def test_bad_dish_names(upstream_copy: Path, tmp_path: Path, value: str, message: str) -> None:
    edit_sheet(upstream_copy / "RU_DATA.xlsx", lambda ws: ws.cell(row=5, column=2, value=value))
    err = build_fails("borsch", upstream_copy, tmp_path / "dist")
    assert (err.location.file, err.location.row) == ("RU_DATA.xlsx", 5)
    assert message in str(err)


@pytest.mark.parametrize("char", ["\x00", "\x07", "\x1b"])
def test_control_characters_in_names(wwd_copy: Path, tmp_path: Path, char: str, csv_editor) -> None:
    path = wwd_csv(wwd_copy)

    def edit(rows):
        column = rows[0].index("local_name")
        rows[4][column] = f"Jollof{char}rice"

    csv_editor(path, edit)
    err = build_fails("wwd", wwd_copy, tmp_path / "dist")
    assert (err.location.file, err.location.field) == (path.name, "local_name")
    assert f"U+{ord(char):04X}" in str(err)


def test_image_file_name_with_dotdot(upstream_copy: Path, tmp_path: Path, csv_editor) -> None:
    path = upstream_copy / "images_manifest.csv"

    def edit(rows):
        header = rows[0]
        f, p = header.index("file"), header.index("path")
        rows[1][p] = rows[1][p].rsplit("/", 1)[0] + "/../../../../etc/passwd"
        rows[1][f] = "../../../../etc/passwd"

    csv_editor(path, edit)
    err = build_fails("borsch", upstream_copy, tmp_path / "dist")
    assert (err.location.file, err.location.row, err.location.field) == ("images_manifest.csv", 2, "file")


def test_bom_csv_is_read(wwd_copy: Path, tmp_path: Path) -> None:
    path = wwd_csv(wwd_copy)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    result = build("wwd", wwd_copy, tmp_path / "dist")
    assert result.manifest["configs"]["default"]["splits"]["test"]["num_rows"] == 765


# 13. xlsx expansion is capped; 16. hostile XML is a clean error
def test_xlsx_zip_bomb_is_refused(upstream_copy: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(tables, "MAX_XLSX_UNCOMPRESSED", 2_000_000)
    path = upstream_copy / "RU_DATA.xlsx"
    with zipfile.ZipFile(path) as archive:
        sheet = archive.read("xl/worksheets/sheet1.xml")
    _replace_member(path, "xl/worksheets/sheet1.xml", sheet + b"<!--" + b"A" * 3_000_000 + b"-->")
    assert (upstream_copy / "RU_DATA.xlsx").stat().st_size < 200_000  # compresses to almost nothing
    err = build_fails("borsch", upstream_copy, tmp_path / "dist")
    assert err.location.file == "RU_DATA.xlsx" and "zip bomb" in str(err)


def test_long_cell_is_refused(upstream_copy: Path, tmp_path: Path) -> None:
    edit_sheet(upstream_copy / "RU_DATA.xlsx", lambda ws: ws.cell(row=9, column=4, value="A" * 200_000))
    err = build_fails("borsch", upstream_copy, tmp_path / "dist")
    assert (err.location.file, err.location.row, err.location.field) == ("RU_DATA.xlsx", 9, "Source")


def _replace_member(path: Path, member: str, data: bytes) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info, data if info.filename == member else src.read(info.filename))
    path.write_bytes(buf.getvalue())


@pytest.mark.parametrize(
    "xml",
    [
        b"<worksheet><sheetData><row r='1'><c r='A1'",
        b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;'
        b'&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><worksheet xmlns="http://schemas.'
        b'openxmlformats.org/spreadsheetml/2006/main"><sheetData><row r="1"><c r="A1" t="inlineStr">'
        b"<is><t>&c;</t></is></c></row></sheetData></worksheet>",
    ],
    ids=["malformed", "entities"],
)
def test_hostile_sheet_xml(upstream_copy: Path, tmp_path: Path, xml: bytes) -> None:
    _replace_member(upstream_copy / "RU_DATA.xlsx", "xl/worksheets/sheet1.xml", xml)
    err = build_fails("borsch", upstream_copy, tmp_path / "dist")
    assert err.location.file == "RU_DATA.xlsx"


@pytest.mark.unit
def test_duplicate_json_key(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "1", "question": "a", "question": "b"}\n', encoding="utf-8")
    with pytest.raises(SourceError) as info:
        tables.read_jsonl_table(path)
    assert (info.value.location.row, info.value.location.field) == (1, "question")
