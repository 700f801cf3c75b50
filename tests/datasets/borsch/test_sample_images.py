"""The BORSCH sample's drawn stand-in images: ``build borsch --source sample --images`` embeds
them offline (no mirror, no Commons), a local folder works as ``--image-mirror`` with the
same checksum checks, and the §5 pipeline runs end to end on the sample release."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from culturebench.cli import app

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "datasets" / "borsch" / "sample"


def manifest_rows() -> list[dict[str, str]]:
    with open(SAMPLE / "images_manifest.csv", encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def image_statuses(release: Path) -> dict[str, list[dict]]:
    import pyarrow.parquet as pq

    out = {}
    for config in ("ru", "uk", "parallel"):
        rows = pq.read_table(next((release / "data" / config).glob("*.parquet"))).to_pylist()
        out[config] = [image for row in rows for image in row["images"]]
    return out


@pytest.fixture(scope="module")
def sample_image_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``build borsch --source sample --images`` from a cold image cache, with no network."""
    import os

    root = tmp_path_factory.mktemp("sample-images")
    old = os.environ["CULTUREBENCH_CACHE"]
    os.environ["CULTUREBENCH_CACHE"] = str(root / "cache")  # nothing fetched before
    try:
        result = CliRunner().invoke(
            app, ["--quiet", "build", "borsch", "--source", "sample", "--images", "--out", str(root / "dist")]
        )
    finally:
        os.environ["CULTUREBENCH_CACHE"] = old
    assert result.exit_code == 0, result.output
    assert "SAMPLE data" in result.output
    return root / "dist" / "borsch" / "1.0.0"


def test_the_sample_manifest_describes_the_drawn_files() -> None:
    import hashlib

    rows = manifest_rows()
    assert len(rows) == 165
    for row in rows:
        data = (SAMPLE / "images" / row["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == row["sha256"] and len(data) == int(row["size"])
        assert row["license"] == "CC0-1.0" and "stand-in" in row["attribution"]
    # one drawing per distinct upstream image: upstream's duplicate rows stay duplicates
    upstream = {}
    with open(SAMPLE.parent / "images_manifest.csv", encoding="utf-8", newline="") as handle:
        upstream = {row["path"]: row["sha256"] for row in csv.DictReader(handle)}
    pairs = {(upstream[row["path"]], row["sha256"]) for row in rows}
    assert len({u for u, _ in pairs}) == len({s for _, s in pairs}) == len(pairs)


def test_sample_build_embeds_every_drawn_image_offline(sample_image_release: Path) -> None:
    images = image_statuses(sample_image_release)
    assert len(images["ru"]) + len(images["uk"]) == len(manifest_rows())
    for config, records in images.items():
        assert records, config
        assert {r["status"] for r in records} == {"embedded"}, config
        assert {r["license"] for r in records} == {"CC0-1.0"}
        assert all(r["image"]["bytes"] and r["phash"] for r in records)
    manifest = json.loads((sample_image_release / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["source"]["kind"] == "sample"
    card = (sample_image_release / "README.md").read_text(encoding="utf-8")
    # the attribution table points at the drawings, not at upstream's photos
    table = card.split("Embedded images and their licences")[1]
    drawn = "datasets/borsch/sample/images/data/RU/images/1/"
    assert f"| culturebench (drawn stand-in) | CC0-1.0 | {drawn}" in table
    assert "media.githubusercontent.com" not in table


def test_a_local_folder_mirror_is_checked_like_a_server(tmp_path: Path, monkeypatch) -> None:
    """A tampered file fails its checksum and a missing one is unavailable; with too few
    images left the stage fails naming both, and nothing is written."""
    mirror = tmp_path / "mirror"
    shutil.copytree(SAMPLE / "images", mirror)
    rows = manifest_rows()
    distinct = list({row["sha256"]: row for row in rows}.values())
    for row in distinct[:70]:
        path = mirror / row["path"]
        for other in rows:  # every path holding these bytes
            if other["sha256"] == row["sha256"]:
                (mirror / other["path"]).unlink(missing_ok=True)
        if row is distinct[0]:
            path.write_bytes(b"not the drawing")
    monkeypatch.setenv("CULTUREBENCH_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "dist"
    result = CliRunner().invoke(
        app,
        ["--quiet", "build", "borsch", "--source", "sample", "--images", "--image-mirror", str(mirror),
         "--min-images-fetched", "0.5", "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    gone = [row for row in rows if row["sha256"] in {r["sha256"] for r in distinct[:70]}]
    assert f"{len(rows) - len(gone)} of {len(rows)} images fetched" in result.output, result.output
    assert f"unavailable {len(gone) - 1}," in result.output and "checksum_mismatch 1;" in result.output
    assert not out.exists()


@pytest.mark.e2e
@pytest.mark.slow
def test_section5_pipeline_runs_on_the_sample_release(
    sample_image_release: Path, tiny_model: Path, tiny_sd: Path, tiny_dinov2: Path, tmp_path: Path
) -> None:
    """The documented offline smoke run of §5: every stage, and scores for every dish asked
    (none skipped for want of release images)."""
    out = tmp_path / "s5"
    result = CliRunner().invoke(
        app,
        ["--quiet", "eval", "borsch-description", "--local", str(sample_image_release),
         "--model", str(tiny_model), "--t2i", str(tiny_sd), "--dinov2", str(tiny_dinov2), "--limit", "3",
         "--images-per-dish", "2",
         "--size", "64x64", "--steps", "2", "--max-new-tokens", "8", "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    stages = [s["stage"] for s in json.loads((out / "pipeline.json").read_text())["stages"]]
    assert stages == ["1-description", "2-translation", "3-images", "4-scores"]
    with open(out / "4-scores" / "description_scores.csv", encoding="utf-8", newline="") as handle:
        scores = list(csv.DictReader(handle))
    assert len(scores) == 6 and all(int(row["n_ground_truth"]) > 0 for row in scores)
    assert all(-1.0 <= float(row["score_mean"]) <= 1.0 for row in scores)


def test_a_mirror_that_is_neither_a_url_nor_a_folder_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["build", "borsch", "--source", "sample", "--images", "--image-mirror", str(tmp_path / "nowhere"),
         "--out", str(tmp_path / "dist")],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "--image-mirror" in result.output and "neither an http(s) URL nor a folder" in result.output
    assert not (tmp_path / "dist").exists()
