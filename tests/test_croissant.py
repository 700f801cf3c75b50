"""croissant.json passes mlcroissant's validation and its records load through mlcroissant."""

from __future__ import annotations

import json

import mlcroissant as mlc
import pytest

pytestmark = pytest.mark.integration


def test_croissant_validates_and_declares_1_1(borsch_release) -> None:
    path = borsch_release.folder / "croissant.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["conformsTo"] == "http://mlcommons.org/croissant/1.1"
    assert doc["version"] == borsch_release.manifest["version"]
    assert doc["rai:dataCollection"] and doc["rai:dataBiases"] and doc["rai:dataLimitations"]
    shas = {d["@id"]: d["sha256"] for d in doc["distribution"]}
    for _config, info in borsch_release.manifest["configs"].items():
        for f in info["splits"]["test"]["files"]:
            assert shas[f["path"]] == f["sha256"]
    dataset = mlc.Dataset(jsonld=str(path))
    assert {rs.name for rs in dataset.metadata.record_sets} == {"ru", "uk", "parallel"}


def test_croissant_records_load(borsch_release) -> None:
    dataset = mlc.Dataset(jsonld=str(borsch_release.folder / "croissant.json"))
    records = list(dataset.records(record_set="parallel"))
    assert len(records) == 433
    first = records[0]
    assert first["parallel/id"] == b"par-ru39-uk61"
    assert first["parallel/origins"] == [b"UZ", b"TJ"]
    images = first["parallel/images"]
    assert len(images["parallel/images/url"]) == 5
    assert images["parallel/images/image"] == [None] * 5
    ru_first = next(iter(dataset.records(record_set="ru")))
    assert ru_first["ru/upstream_id"] == 1 and ru_first["ru/name"] == "ДАКОС".encode()
