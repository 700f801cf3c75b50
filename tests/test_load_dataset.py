"""`datasets.load_dataset(<release folder>, config)` reads every config with the declared
features, exactly as it would from the Hub."""

from __future__ import annotations

from pathlib import Path

import pytest

from culturebench.spec import load_spec
from datasets import load_dataset


@pytest.mark.parametrize(("config", "n_rows"), [("ru", 1147), ("uk", 823), ("parallel", 433)])
def test_load_dataset_every_config(borsch_release, tmp_path: Path, config: str, n_rows: int) -> None:
    ds = load_dataset(str(borsch_release.folder), config, split="test", cache_dir=str(tmp_path))
    assert ds.num_rows == n_rows
    assert ds.features == load_spec("borsch").configs[config].features
    assert ds.features["images"].feature["image"].__class__.__name__ == "Image"
    first = ds[0]
    assert first["id"].startswith({"ru": "ru-", "uk": "uk-", "parallel": "par-"}[config])
    assert isinstance(first["origins"], list) and first["origins"]


def test_load_dataset_parallel_rows(borsch_release, tmp_path: Path) -> None:
    ds = load_dataset(str(borsch_release.folder), "parallel", split="test", cache_dir=str(tmp_path))
    plov = ds.filter(lambda r: r["id"] == "par-ru39-uk61")[0]
    assert (plov["name_ru"], plov["name_uk"], plov["origins"]) == ("ПЛОВ", "ПЛОВ", ["UZ", "TJ"])
    assert plov["origin_names_uk"] == ["Узбекистан", "Таджикистан"]
    assert all(img["image"] is None for img in plov["images"])
    one_sided = ds.filter(lambda r: r["uk_id"] is None)
    assert one_sided.num_rows == 126
