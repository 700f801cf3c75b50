"""`datasets.load_dataset(<release folder>, config)` reads every config with the declared
features, exactly as it would from the Hub."""

from __future__ import annotations

from pathlib import Path

import pytest

from culturebench.spec import load_spec
from datasets import load_dataset

pytestmark = pytest.mark.integration


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


@pytest.mark.unit
@pytest.mark.parametrize("release", ["borsch_release", "wwd_release", "borsch_image_release"])
def test_runs_read_a_local_release_as_datasets_reads_it(release: str, request: pytest.FixtureRequest) -> None:
    """The runs read a local release's Parquet with pyarrow alone (eval/dataset_ref.py
    ArrowRows, no `datasets` import); every config and split gives the rows `datasets` gives
    (images left encoded, as the runs want them), and the same rows when a subset is taken."""
    import json

    from datasets.table import InMemoryTable

    from culturebench.eval.dataset_ref import ArrowRows, _as_rows, _open_split, resolve_dataset
    from datasets import Dataset

    built = request.getfixturevalue(release)
    folder = Path(getattr(built, "folder", built))
    ref = resolve_dataset(folder.parent.name, revision=None, local=str(folder), repo=None)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    checked = 0
    for config, info in manifest["configs"].items():
        for split in info["splits"]:
            ours = _open_split(ref, config, split)
            assert isinstance(ours, ArrowRows)
            theirs = Dataset(InMemoryTable(ours.table))
            assert _as_rows(ours) == _as_rows(theirs), (config, split)
            picked = [i for i in range(0, ours.num_rows, 3)][::-1]
            assert _as_rows(ours.select(picked)) == _as_rows(theirs.select(picked))
            assert ours.column_names == theirs.column_names
            checked += ours.num_rows
    assert checked > 0
