"""Rebuilding the same version from the same sources gives identical bytes; failures leave
nothing behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from culturebench.builders import get_builder
from culturebench.datasets.borsch.builder import BorschBuilder
from culturebench.errors import BuildError, ValidationFailed

pytestmark = pytest.mark.integration


def release_files(folder: Path) -> dict[str, bytes]:
    """Every file of a release folder, relative path -> bytes."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_rebuild_is_byte_identical(borsch_release, upstream_borsch: Path, tmp_path: Path) -> None:
    again = get_builder("borsch").build(source=str(upstream_borsch), out_root=tmp_path)
    first, second = release_files(borsch_release.folder), release_files(again.folder)
    assert sorted(first) == sorted(second)
    parquet = [name for name in first if name.endswith(".parquet")]
    assert len(parquet) == 3
    for name in first:
        assert first[name] == second[name], f"{name} differs between two builds"


def test_existing_release_is_not_overwritten(borsch_release, upstream_borsch: Path) -> None:
    from culturebench.builders.base import UpToDate

    before = release_files(borsch_release.folder)
    root = borsch_release.folder.parent.parent
    with pytest.raises(UpToDate):  # the same sources, builder and libraries: nothing to do
        get_builder("borsch").build(source=str(upstream_borsch), out_root=root)
    sample = Path(__file__).resolve().parent.parent / "datasets" / "borsch" / "sample"
    with pytest.raises(BuildError, match="already exists, built from other sources"):
        get_builder("borsch").build(source=str(sample), out_root=root)
    assert release_files(borsch_release.folder) == before


def test_overwrite_replaces_atomically(upstream_borsch: Path, tmp_path: Path) -> None:
    first = get_builder("borsch").build(source=str(upstream_borsch), out_root=tmp_path)
    (first.folder / "stray.txt").write_text("left from an older build")
    with pytest.raises(BuildError, match=r"1 file\(s\) the release did not write \(stray.txt\)"):
        get_builder("borsch").build(source=str(upstream_borsch), out_root=tmp_path, overwrite=True)
    assert (first.folder / "stray.txt").read_text() == "left from an older build"  # never deleted
    (first.folder / "stray.txt").unlink()
    second = get_builder("borsch").build(source=str(upstream_borsch), out_root=tmp_path, overwrite=True)
    assert sorted(p.name for p in (tmp_path / "borsch").iterdir()) == [second.folder.name]


class _CorruptingBuilder(BorschBuilder):
    """A real BORSCH build whose output is then corrupted, to prove the validation gate."""

    def generate(self, sources, log):
        rows = super().generate(sources, log)
        rows["ru"]["test"][5]["origins"] = ["XX"]
        rows["parallel"]["test"][0]["ru_id"] = 999_999
        return rows


def test_release_that_fails_validation_is_never_written(upstream_borsch: Path, tmp_path: Path) -> None:
    with pytest.raises(ValidationFailed) as info:
        _CorruptingBuilder().build(source=str(upstream_borsch), out_root=tmp_path)
    report = info.value.report
    assert not report.ok
    failing = {(f.check, f.config, f.row_id) for f in report.errors}
    assert ("schema:ru", "ru", "ru-6") in failing
    assert any(f.check == "cross:parallel_link_exists" and f.field == "ru_id" for f in report.errors)
    assert not (tmp_path / "borsch" / "1.0.0").exists()
    assert list(tmp_path.iterdir()) == []  # no staging folder, lock or empty dataset folder left
