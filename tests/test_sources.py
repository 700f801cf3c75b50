"""Sources: the upstream repository layout on disk and over HTTP (pinned sha256)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from culturebench.builders import get_builder
from culturebench.builders.sources import resolve_sources
from culturebench.errors import ChecksumError, SourceError
from culturebench.spec import load_spec

pytestmark = pytest.mark.integration


def repo_layout(upstream: Path, dest: Path) -> Path:
    """Lay the snapshot out as the upstream repository does (data/RU/RU_DATA.xlsx, ...)."""
    for src in load_spec("borsch").sources.values():
        if src.upstream_path:
            target = dest / src.upstream_path
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(upstream / src.file, target)
    return dest


def parquet_bytes(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*.parquet"))}


def test_url_source_builds_the_same_release(
    borsch_release, upstream_borsch: Path, tmp_path: Path, servers
) -> None:
    served = repo_layout(upstream_borsch, tmp_path / "repo")
    with servers.serve_folder(served) as url:
        result = get_builder("borsch").build(source=url, out_root=tmp_path / "dist")
    # the manifest records what was read (kind, pins, sha256), never where it was read from:
    # the same bytes from a URL or a folder are the same release
    assert result.manifest["source"]["kind"] == "upstream"
    files = result.manifest["source"]["files"]
    assert all("origin" not in f for f in files.values()) and url not in json.dumps(result.manifest)
    assert result.manifest["source"] == borsch_release.manifest["source"]
    assert all(f["matches_pin"] for f in files.values())
    assert parquet_bytes(result.folder) == parquet_bytes(borsch_release.folder)


def test_url_source_refuses_a_file_that_is_not_the_pinned_one(
    upstream_borsch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, servers
) -> None:
    monkeypatch.setenv("CULTUREBENCH_CACHE", str(tmp_path / "fresh-cache"))
    served = repo_layout(upstream_borsch, tmp_path / "repo")
    target = served / "data" / "UK" / "UK_DATA.xlsx"
    target.write_bytes(target.read_bytes() + b"\0")
    with (
        servers.serve_folder(served) as url,
        pytest.raises(ChecksumError, match="does not match the pinned"),
    ):
        get_builder("borsch").build(source=url, out_root=tmp_path / "dist")
    assert not (tmp_path / "dist" / "borsch" / "1.0.0").exists()


def test_cached_download_is_reused_offline(
    upstream_borsch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, servers
) -> None:
    monkeypatch.setenv("CULTUREBENCH_CACHE", str(tmp_path / "cache"))
    served = repo_layout(upstream_borsch, tmp_path / "repo")
    with servers.serve_folder(served) as url:
        first = resolve_sources(load_spec("borsch"), url)
    # The server is gone: the same URL still resolves from the content-addressed cache.
    again = resolve_sources(load_spec("borsch"), url)
    assert {k: f.sha256 for k, f in again.files.items()} == {k: f.sha256 for k, f in first.files.items()}
    assert (tmp_path / "cache" / "sources" / "borsch").is_dir()


def test_url_source_missing_file(
    upstream_borsch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, servers
) -> None:
    monkeypatch.setenv("CULTUREBENCH_CACHE", str(tmp_path / "fresh-cache"))
    served = repo_layout(upstream_borsch, tmp_path / "repo")
    (served / "data" / "PARALLEL" / "PARALLEL_RU_UK.xlsx").unlink()
    with servers.serve_folder(served) as url, pytest.raises(SourceError, match="404"):
        resolve_sources(load_spec("borsch"), url)


def test_repo_layout_on_disk_is_accepted(borsch_release, upstream_borsch: Path, tmp_path: Path) -> None:
    folder = repo_layout(upstream_borsch, tmp_path / "repo")
    sources = resolve_sources(load_spec("borsch"), str(folder))
    assert sources.files["ru"].path == folder / "data" / "RU" / "RU_DATA.xlsx"
    # images_manifest.csv is not an upstream file: the shipped copy is used, and it is pinned.
    assert sources.files["images"].matches_pin
    assert "datasets/borsch/images_manifest.csv" in sources.files["images"].path.as_posix()


def test_local_file_differing_from_pin_is_recorded(upstream_copy: Path) -> None:
    path = upstream_copy / "images_manifest.csv"
    path.write_text(path.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    sources = resolve_sources(load_spec("borsch"), str(upstream_copy))
    assert not sources.files["images"].matches_pin
    assert sources.files["ru"].matches_pin


@pytest.mark.unit
def test_source_that_is_neither_folder_nor_url(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="neither a folder nor an http"):
        resolve_sources(load_spec("borsch"), str(tmp_path / "nope"))
