"""World Wide Dishes built from the real CSV: parsing of every list spelling, countries
mapped to ISO with the contributors' words kept, links, the 50/50 split, bad input."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from culturebench.builders import get_builder
from culturebench.datasets.wwd.builder import parse_multi
from culturebench.errors import SourceError
from culturebench.validation import validate_release
from datasets import load_dataset

pytestmark = pytest.mark.integration


def rows(result, config: str = "default", split: str = "test") -> list[dict]:
    files = result.manifest["configs"][config]["splits"][split]["files"]
    return [r for f in files for r in pq.read_table(result.folder / f["path"]).to_pylist()]


def dish(result, upstream_id: int) -> dict:
    return next(r for r in rows(result) if r["upstream_id"] == upstream_id)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("['lunch', 'dinner']", ["lunch", "dinner"]),
        ("['Main dish - stand alone (e.g. one pot meal)']", ["Main dish - stand alone (e.g. one pot meal)"]),
        ("Tanzania, Kenya", ["Tanzania", "Kenya"]),
        ("rice; beans; 'palm oil'", ["rice", "beans", "palm oil"]),
        ("", []),
        ("[broken, list", ["broken", "list"]),
    ],
)
def test_parse_multi_spellings(raw: str, expected: list[str]) -> None:
    assert parse_multi(raw) == expected


def test_counts_match_the_paper(wwd_release) -> None:
    assert len(rows(wwd_release)) == 765
    stats = wwd_release.log.stats["default"]
    assert stats["per_continent"] == {
        "Africa": 512,
        "Asia": 172,
        "Europe": 58,
        "North America": 39,
        "South America": 11,
        "Oceania": 3,
    }
    assert wwd_release.report.ok


def test_every_row_parsed_into_vocabularies(wwd_release) -> None:
    data = rows(wwd_release)
    assert {t for r in data for t in r["time_of_day"]} <= {
        "breakfast",
        "lunch",
        "dinner",
        "snack",
        "anytime",
        "other",
    }
    assert (
        Counter(tuple(r["occasions"]) for r in data)[("regular", "special")] == 188
    )  # 187 "both" + 1 "special, both"
    khdawedj = dish(wwd_release, 899)
    assert khdawedj["time_of_day"] == ["lunch", "dinner"] and khdawedj["utensils"] == ["spoon", "fork"]
    assert khdawedj["ingredients"] == ["ghee", "butter", "chickpea", "chicken", "cinnamon", "onions"]


def test_countries_keep_contributor_words(wwd_release) -> None:
    by_name = {c["name"]: c for r in rows(wwd_release) for c in r["countries"]}
    assert by_name["England"] == {
        "name": "England",
        "alpha2": "GB",
        "subdivision": "GB-ENG",
        "status": "subnational",
    }
    assert by_name["Catalonia"]["subdivision"] == "ES-CT"
    assert by_name["West Papua"] == {
        "name": "West Papua",
        "alpha2": None,
        "subdivision": None,
        "status": "disputed",
    }
    assert by_name["Burma"]["alpha2"] == by_name["Myanmar"]["alpha2"] == "MM"
    assert by_name["United States of America (USA)"]["alpha2"] == "US"
    assert by_name["Namibia"]["alpha2"] == "NA"  # the upstream table lost this code; pycountry has it
    assert wwd_release.log.stats["default"]["names_not_iso_countries"] == [
        "Catalonia (subnational)",
        "England (subnational)",
        "Wales (subnational)",
        "West Papua (disputed)",
        "Zanzibar (subnational)",
    ]


def test_language_codes(wwd_release) -> None:
    data = rows(wwd_release)
    unknown = [r for r in data if r["language_codes_raw"] == "Unknown"]
    assert len(unknown) == 10 and all(r["language_codes"] == [] for r in unknown)
    multi = next(r for r in data if r["language_codes_raw"] == "mal, tam, kan")
    assert multi["language_codes"] == ["mal", "tam", "kan"]
    report = json.loads((wwd_release.folder / "build_report.json").read_text(encoding="utf-8"))
    invalid = {q["message"].split("'")[1] for q in report["quirks"] if q["code"] == "language_code_invalid"}
    assert {"Unknown", "nah", "btb"} <= invalid


def test_links_and_licence_status(wwd_release) -> None:
    links = [link for r in rows(wwd_release) for link in r["links"]]
    kinds = Counter((link["kind"], link["license_status"]) for link in links)
    assert kinds[("cc_image", "none")] == 131  # "No CC Images Available"
    assert kinds[("contributor_photo", "contributor-consented")] == 71
    assert all(
        link["url"].startswith("https://drive.google.com")
        for link in links
        if link["kind"] == "contributor_photo"
    )
    assert all(
        link["url"] is None
        for link in links
        if link["license_status"] == "none" and link["kind"] == "cc_image"
    )


def test_country_split_is_balanced_and_deterministic(wwd_release, upstream_wwd: Path, tmp_path: Path) -> None:
    train, test = rows(wwd_release, "country_split", "train"), rows(wwd_release, "country_split", "test")
    assert len(train) + len(test) == 765 and not {r["id"] for r in train} & {r["id"] for r in test}
    primary = Counter(r["countries"][0]["name"] for r in test)
    primary.subtract(Counter(r["countries"][0]["name"] for r in train))
    assert set(primary.values()) <= {0, 1}
    again = get_builder("wwd").build(source=str(upstream_wwd), out_root=tmp_path)
    for split in ("train", "test"):
        assert [r["id"] for r in rows(again, "country_split", split)] == [
            r["id"] for r in rows(wwd_release, "country_split", split)
        ]
    for config in ("default", "country_split"):
        for split, info in wwd_release.manifest["configs"][config]["splits"].items():
            assert info["files"] == again.manifest["configs"][config]["splits"][split]["files"]


def test_load_dataset_both_configs(wwd_release, tmp_path: Path) -> None:
    split = load_dataset(str(wwd_release.folder), "country_split", cache_dir=str(tmp_path))
    assert (split["train"].num_rows, split["test"].num_rows) == (360, 405)
    default = load_dataset(str(wwd_release.folder), "default", split="test", cache_dir=str(tmp_path))
    assert default.num_rows == 765 and default.features["countries"].feature["alpha2"].dtype == "string"
    card = (wwd_release.folder / "README.md").read_text(encoding="utf-8")
    assert "## Terms of use" in card and "developing prompt templates" in card


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d[5].__setitem__(0, d[4][0]), "row 6, field 'id': duplicate id"),
        (
            lambda d: d[3].__setitem__(15, "sometimes"),
            "row 4, field 'occasions': unknown occasion 'sometimes'",
        ),
        (
            lambda d: d[2].__setitem__(6, "Atlantis"),
            "row 3, field 'continent': unknown continent(s) ['Atlantis']",
        ),
        (lambda d: [r.pop(5) for r in d], "row 1, field 'countries': missing column"),
    ],
)
def test_bad_input_names_file_row_field(
    wwd_copy: Path, tmp_path: Path, edit, message: str, csv_editor
) -> None:
    source = wwd_copy
    csv_editor(source / "WorldWideDishes_2024_June_World_Wide_Dishes.csv", edit)
    with pytest.raises(SourceError) as info:
        get_builder("wwd").build(source=str(source), out_root=tmp_path / "dist")
    assert str(info.value).startswith("WorldWideDishes_2024_June_World_Wide_Dishes.csv, ")
    assert message in str(info.value)
    assert not (tmp_path / "dist" / "wwd" / "1.0.0").exists()


def test_validation_catches_an_unbalanced_split(wwd_release, tmp_path: Path) -> None:
    import pyarrow as pa

    from culturebench.manifest import read_manifest, write_manifest
    from culturebench.parquet_io import write_split

    folder = tmp_path / "release"
    shutil.copytree(wwd_release.folder, folder)
    manifest = read_manifest(folder)
    moved = {}
    for split in ("train", "test"):
        rel = manifest["configs"]["country_split"]["splits"][split]["files"][0]["path"]
        moved[split] = pq.read_table(folder / rel)
        (folder / rel).unlink()
    test_rows = moved["test"].to_pylist()
    train_rows = moved["train"].to_pylist() + test_rows[:20]  # 20 test dishes moved to train
    for split, data in (("train", train_rows), ("test", test_rows[20:])):
        files = write_split(
            pa.Table.from_pylist(data, schema=moved[split].schema), folder, "country_split", split
        )
        manifest["configs"]["country_split"]["splits"][split].update(files=files, num_rows=len(data))
    write_manifest(folder, manifest)
    report = validate_release(folder, croissant_records=False)
    assert any(f.check == "cross:split_balanced_per_country" for f in report.errors)


def test_card_lists_validated_language_codes_not_mul(wwd_release) -> None:
    import yaml

    card = (wwd_release.folder / "README.md").read_text(encoding="utf-8")
    meta = yaml.safe_load(card.split("---")[1])
    assert "mul" not in meta["language"]
    assert meta["language"][0] == "en" and {"swa", "yor", "ary"} <= set(meta["language"])
    assert (
        len(meta["language"])
        == 1
        + wwd_release.log.stats["default"]["languages"]
        - ("eng" in wwd_release.log.stats["default"]["language_codes"])
        or len(meta["language"]) >= 100
    )
