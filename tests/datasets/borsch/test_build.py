"""The BORSCH release built from the real upstream tables: counts, quirks, links, images."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from culturebench.spec import load_spec

pytestmark = pytest.mark.integration


def rows(result, config: str) -> list[dict]:
    files = result.manifest["configs"][config]["splits"]["test"]["files"]
    out: list[dict] = []
    for f in files:
        out += pq.read_table(result.folder / f["path"]).to_pylist()
    return out


def by_id(result, config: str) -> dict[str, dict]:
    return {r["id"]: r for r in rows(result, config)}


def quirks(result, code: str) -> list[dict]:
    report = json.loads((result.folder / "build_report.json").read_text(encoding="utf-8"))
    return [q for q in report["quirks"] if q["code"] == code]


def test_row_counts_match_the_paper(borsch_release) -> None:
    counts = {c: len(rows(borsch_release, c)) for c in ("ru", "uk", "parallel")}
    assert counts == {"ru": 1147, "uk": 823, "parallel": 433}
    for config, n in counts.items():
        assert borsch_release.manifest["configs"][config]["splits"]["test"]["num_rows"] == n
    assert borsch_release.report.ok
    assert borsch_release.manifest["validation"]["status"] == "passed"


def test_release_folder_layout(borsch_release) -> None:
    names = {
        p.relative_to(borsch_release.folder).as_posix()
        for p in borsch_release.folder.rglob("*")
        if p.is_file()
    }
    assert {"README.md", "croissant.json", "CHANGELOG.md", "manifest.json", "build_report.json"} <= names
    assert {f"data/{c}/test-00000-of-00001.parquet" for c in ("ru", "uk", "parallel")} <= names
    assert borsch_release.folder.name == load_spec("borsch").version
    assert not [p for p in borsch_release.folder.parent.iterdir() if p.name.startswith(".")]


def test_manifest_records_sources_and_versions(borsch_release) -> None:
    manifest = borsch_release.manifest
    spec = load_spec("borsch")
    assert manifest["schema_version"] == spec.schema_version
    assert manifest["builder"]["class"] == "culturebench.datasets.borsch.builder:BorschBuilder"
    for key, src in spec.sources.items():
        got = manifest["source"]["files"][key]
        assert got["sha256"] == src.sha256
        assert got["matches_pin"] is True
    assert manifest["upstream"]["commit"] == "e697041065f09dcf120ffb7ba622b112f3611816"
    assert manifest["sample"] is False


def test_origins_and_country_names(borsch_release) -> None:
    ru = by_id(borsch_release, "ru")
    dish = ru["ru-4"]  # ДЖОЛОФ: GH, NG, SN
    assert dish["origins"] == ["GH", "NG", "SN"]
    assert dish["origin_names_en"] == ["Ghana", "Nigeria", "Senegal"]
    assert dish["origin_names_uk"][0] == "Гана"
    for row in ru.values():
        assert len(row["origins"]) == len(row["origin_names_ru"]) == len(row["origin_names_uk"])


def test_quirk_empty_country_token(borsch_release) -> None:
    found = quirks(borsch_release, "empty_country_token")
    assert [(q["file"], q["row"], q["field"]) for q in found] == [
        ("RU_DATA.xlsx", 901, "Countries of Origin")
    ]
    assert by_id(borsch_release, "ru")["ru-900"]["origins"] == ["ES", "MX"]


def test_quirk_trailing_space_in_country_list(borsch_release) -> None:
    rows_ = {(q["file"], q["row"]) for q in quirks(borsch_release, "country_token_whitespace")}
    assert ("UK_DATA.xlsx", 770) in rows_
    assert by_id(borsch_release, "uk")["uk-769"]["origins"] == ["UA"]


def test_quirk_duplicate_names_kept(borsch_release) -> None:
    found = quirks(borsch_release, "duplicate_name")
    assert len(found) == 12 and all(q["file"] == "RU_DATA.xlsx" for q in found)
    names = Counter(r["name_normalized"] for r in rows(borsch_release, "ru"))
    assert names["паэлья"] == 2


def test_quirk_whitespace_and_homoglyph_names(borsch_release) -> None:
    ru = rows(borsch_release, "ru")
    stir = [r for r in ru if r["name_normalized"] == "стир-фраи"]
    assert len(stir) == 1 and stir[0]["name"] == "СТИР-ФРАИ"
    tempura = [r for r in ru if r["name"] == "ТЭМПYPА"]
    assert len(tempura) == 1 and tempura[0]["name_normalized"] == "тэмпура"
    assert {q["row"] for q in quirks(borsch_release, "mixed_script_name") if q["file"] == "RU_DATA.xlsx"} == {
        868
    }


def test_apostrophes_kept_as_published(borsch_release) -> None:
    uk = rows(borsch_release, "uk")
    names = {r["name"] for r in uk}
    assert "КУЛЕБ'ЯКА" in names and "КУРАБ’Є" in names
    assert {r["name_normalized"] for r in uk if r["name"] == "КУРАБ’Є"} == {"кураб'є"}


def test_parallel_links_either_side_may_be_absent(borsch_release) -> None:
    par = rows(borsch_release, "parallel")
    both = [r for r in par if r["ru_id"] is not None and r["uk_id"] is not None]
    ru_only = [r for r in par if r["uk_id"] is None]
    uk_only = [r for r in par if r["ru_id"] is None]
    assert (len(both), len(ru_only), len(uk_only)) == (174, 126, 133)  # the paper's 40/29/31 %
    plov = next(r for r in par if r["id"] == "par-ru39-uk61")
    assert (plov["name_ru"], plov["ru_ref"], plov["uk_ref"]) == ("ПЛОВ", "ru-39", "uk-61")
    assert plov["provenance_ru"] == by_id(borsch_release, "ru")["ru-39"]["provenance"]
    lone = next(r for r in uk_only if r["id"] == "par-uk411")
    assert lone["ru_ref"] is None and lone["provenance_ru"] is None
    assert "par-ru39-uk61" in by_id(borsch_release, "uk")["uk-61"]["parallel_ids"]


def test_parallel_images_are_the_deduplicated_union(borsch_release) -> None:
    ru, uk = by_id(borsch_release, "ru"), by_id(borsch_release, "uk")
    checked = 0
    for row in rows(borsch_release, "parallel"):
        sides = [ru[row["ru_ref"]]] if row["ru_ref"] else []
        sides += [uk[row["uk_ref"]]] if row["uk_ref"] else []
        keys = {i["sha256"] or i["upstream_path"] for side in sides for i in side["images"]}
        assert len(row["images"]) == len(keys)
        assert {i["sha256"] or i["upstream_path"] for i in row["images"]} == keys
        checked += 1
    assert checked == 433
    assert max(len(r["images"]) for r in rows(borsch_release, "parallel")) <= 10


def test_image_records(borsch_release) -> None:
    commit = "e697041065f09dcf120ffb7ba622b112f3611816"
    images = [i for c in ("ru", "uk") for r in rows(borsch_release, c) for i in r["images"]]
    assert len(images) == 7095
    assert all(
        i["url"].startswith(f"https://media.githubusercontent.com/media/alavrouk/BORSch/{commit}/data/")
        for i in images
    )
    assert all(i["image"] is None and i["license"] == "unknown" for i in images)
    missing = [i for i in images if i["sha256"] is None]
    assert len(missing) == 9 and all(i["size_bytes"] is None for i in missing)
    assert len(quirks(borsch_release, "image_missing_checksum")) == 9
    first = by_id(borsch_release, "ru")["ru-1"]["images"][0]
    assert first["upstream_path"] == "data/RU/images/1/image_849.png"
    assert first["sha256"] == "2860cb977eb63a12b855d403bba9fc392a3cf4de8b3b2b77b2422299b4c9594f"
    assert first["size_bytes"] == 376388


@pytest.mark.parametrize("config", ["ru", "uk", "parallel"])
def test_per_country_statistics_match_the_rows(borsch_release, config: str) -> None:
    expected = Counter(code for r in rows(borsch_release, config) for code in r["origins"])
    assert borsch_release.log.stats[config]["per_country"] == dict(expected)
    assert borsch_release.log.stats[config]["rows"] == len(rows(borsch_release, config))


def test_headline_country_counts(borsch_release) -> None:
    stats = borsch_release.log.stats
    assert (stats["ru"]["per_country"]["RU"], stats["ru"]["per_country"]["UA"]) == (203, 112)
    assert (stats["uk"]["per_country"]["UA"], stats["uk"]["per_country"]["RU"]) == (167, 157)
    assert stats["ru"]["per_provenance"] == {
        "bootstrap-0": 311,
        "bootstrap-1": 144,
        "bootstrap-2": 16,
        "wikidata": 676,
    }


def test_card_lists_differences_from_the_paper(borsch_release) -> None:
    """Every published count and every cell of Tables 7 and 8 compared with the build; each
    difference carries its traced cause, or says it is not explained."""
    card = (borsch_release.folder / "README.md").read_text(encoding="utf-8")
    section = card.split("## Differences from the paper")[1].split("## Provenance")[0]
    assert "216 of 222 published numbers are reproduced exactly" in section
    assert "1 difference(s) are not explained" in section
    assert "| UA | 166 | 167 |" in section and "'UA ' with a trailing space" in section
    assert "| HU | 15 | 14 |" in section and "МАКОВНИК" in section
    assert "| IE | (no row) | 2 | Not explained" in section
    assert "| Images (Appendix C" in section and "| 8192 | 7095 |" in section


@pytest.mark.unit
def test_paper_comparison_flags_unexplained_and_missing(tmp_path: Path) -> None:
    from culturebench.cards.paper import compare
    from culturebench.spec import DatasetSpec

    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "paper.yaml").write_text(
        "paper: P\ncounts:\n  - {what: a, paper: 3, stat: x.rows}\n  - {what: b, paper: 2, stat: nowhere}\n"
        'tables:\n  - what: t\n    stat: x.per\n    paper: {"A": 1, "B": 2}\n    why: {B: traced}\n'
    )
    spec = DatasetSpec(name="d", folder=folder, raw={})
    got = compare(spec, {"x": {"rows": 3, "per": {"A": 1, "B": 5, "C": 1}}}, sample=False)
    assert (got["reproduced"], got["total"]) == (2, 5)
    assert got["counts"][1]["built"] is None and got["counts"][1]["why"] == "not explained"
    diffs = {d["key"]: d for d in got["tables"][0]["diffs"]}
    assert diffs["B"]["why"] == "traced" and diffs["C"]["paper"] is None
    assert got["unexplained"] == 2  # count b, cell C


def test_default_config_and_byte_sized_row_groups(borsch_release, tmp_path: Path) -> None:
    import pyarrow as pa

    from culturebench.parquet_io import ROW_GROUP_BYTES, ROW_GROUP_SIZE, row_group_rows, write_split
    from datasets import load_dataset

    assert load_dataset(str(borsch_release.folder), split="test").num_rows == 433  # default: parallel
    small = pa.table({"x": list(range(5000))})
    assert row_group_rows(small) == ROW_GROUP_SIZE
    big = pa.table({"image": [b"\0" * 1_100_000] * 200})  # ~1.1 MB a row, like embedded images
    rows = row_group_rows(big)
    assert rows * 1_100_000 <= ROW_GROUP_BYTES < (rows + 1) * 1_100_000
    record = write_split(big, tmp_path, "images", "test")[0]
    meta = pq.ParquetFile(tmp_path / record["path"]).metadata
    assert meta.num_row_groups == -(-200 // rows) and meta.row_group(0).num_rows == rows
    assert meta.row_group(0).column(0).has_offset_index  # page index written
