"""Probe cases (issue 12, release integrity and data loss): tampered release folders, stray
files and links, edited metadata, credentials in source URLs, and git targets that are not
ours. Each case failed (passed validation, got published, or lost data) on the old main."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from culturebench.errors import SourceError
from culturebench.hashing import sha256_file
from culturebench.manifest import read_manifest, write_manifest
from culturebench.registry import builtin_names
from culturebench.release.targets import GitTarget, PublishError, release_files
from culturebench.validation import validate_release

pytestmark = pytest.mark.integration


@pytest.fixture
def release(borsch_release, tmp_path: Path) -> Path:
    folder = tmp_path / "borsch" / "1.0.0"
    shutil.copytree(borsch_release.folder, folder)
    return folder


def _errors(folder: Path) -> list[str]:
    report = validate_release(folder, croissant_records=False)
    return [f"{f.check}: {f.message}" for f in report.findings if f.severity == "error"]


# 4. unlisted files, symlinks, special files: refused by validation and by every target
@pytest.mark.parametrize(
    "tamper",
    [
        lambda f: (f / "notes.txt").write_text("hello"),
        lambda f: (f / ".hidden").write_text("x"),
        lambda f: (f / "data" / "run.sh").write_text("#!/bin/sh\n"),
        lambda f: (f / "hostname").symlink_to("/etc/hostname"),
        lambda f: (f / "data" / "linkdir").symlink_to("/etc"),
        lambda f: os.mkfifo(f / "pipe"),
    ],
    ids=["stray", "dotfile", "script-in-data", "symlink-file", "symlink-dir", "fifo"],
)
def test_stray_entries_fail_validation_and_publish(release: Path, tmp_path: Path, tamper) -> None:
    tamper(release)
    errors = _errors(release)
    assert any(e.startswith("inventory:") for e in errors), errors
    with pytest.raises(PublishError, match="refusing to publish"):
        release_files(release)
    target = GitTarget(tmp_path / "target")
    with pytest.raises(PublishError):
        target.publish(release, "Release borsch 1.0.0", "v1.0.0")
    assert target.tags() == []


def test_clean_release_lists_exactly_the_manifest(release: Path) -> None:
    assert _errors(release) == []
    paths = {f.path for f in release_files(release)}
    manifest = read_manifest(release)
    assert paths == {
        "manifest.json",
        *manifest["files"],
        *(f["path"] for c in manifest["configs"].values() for s in c["splits"].values() for f in s["files"]),
    }


# 5. edited metadata does not validate, even with the manifest hash updated
def _rehash(folder: Path, name: str) -> None:
    manifest = read_manifest(folder)
    manifest["files"][name] = sha256_file(folder / name)
    write_manifest(folder, manifest)


@pytest.mark.parametrize(
    ("name", "edit"),
    [
        ("README.md", lambda t: t.replace("license: mit", "license: cc-by-nc-4.0", 1)),
        ("README.md", lambda t: t + "\nThis dataset is endorsed by nobody.\n"),
        ("croissant.json", lambda t: t.replace('"license": "', '"license": "https://example.org/x', 1)),
    ],
    ids=["card-licence", "card-body", "croissant-licence"],
)
def test_edited_metadata_fails_validation(release: Path, name: str, edit) -> None:
    path = release / name
    text = path.read_text(encoding="utf-8")
    assert edit(text) != text
    path.write_text(edit(text), encoding="utf-8")
    _rehash(release, name)
    errors = _errors(release)
    assert any(e.startswith("card:regenerated:") and name in e for e in errors), errors


def test_manifest_without_files_is_invalid(release: Path) -> None:
    manifest = read_manifest(release)
    del manifest["files"]
    write_manifest(release, manifest)
    assert any("lists no metadata files" in e for e in _errors(release))


def test_missing_croissant_is_not_a_pass(release: Path) -> None:
    (release / "croissant.json").unlink()
    report = validate_release(release, croissant_records=False)
    assert any(f.check == "croissant" and "missing" in f.message for f in report.findings)


# 6. credentials in --source URLs are never printed or recorded
def test_source_url_credentials_are_redacted(servers, tmp_path: Path, caplog) -> None:
    from culturebench.builders import get_builder
    from culturebench.safe_http import redact

    assert redact("https://user:s3cret@host/x?token=abc&a=1") == "https://***@host/x?token=***&a=1"
    assert "hf_abcdefghijkl" not in redact("Authorization: Bearer hf_abcdefghijklmnop")
    folder = tmp_path / "empty"
    folder.mkdir()
    with servers.serve_folder(folder) as base:
        url = base.replace("http://", "http://alice:s3cret@") + "/"
        with pytest.raises(SourceError) as info:
            get_builder("borsch").build(source=url, out_root=tmp_path / "dist")
    assert "s3cret" not in str(info.value) and "alice" not in str(info.value)
    assert "***@" in str(info.value)
    assert "s3cret" not in caplog.text


# 8. git targets: never wipe a repository that is not ours, never lose untracked/ignored files
def _git(path: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "u",
        "GIT_AUTHOR_EMAIL": "u@x",
        "GIT_COMMITTER_NAME": "u",
        "GIT_COMMITTER_EMAIL": "u@x",
    }
    return subprocess.run(
        ["git", "-C", str(path), *args], check=True, capture_output=True, text=True, env=env
    ).stdout


def test_foreign_git_repo_is_refused_and_untouched(release: Path, tmp_path: Path) -> None:
    repo = tmp_path / "project"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "main.py").write_text("print('precious')\n")
    (repo / ".gitignore").write_text("secrets.env\n")
    (repo / "secrets.env").write_text("KEY=1\n")
    _git(repo, "add", "main.py", ".gitignore")
    _git(repo, "commit", "-q", "-m", "mine")
    with pytest.raises(PublishError, match="not a culturebench dataset repo"):
        GitTarget(repo).publish(release, "Release", "v1.0.0")
    assert (repo / "main.py").read_text() == "print('precious')\n"
    assert (repo / "secrets.env").read_text() == "KEY=1\n"


def test_non_empty_plain_folder_is_refused(release: Path, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "thesis.tex").write_text("x")
    with pytest.raises(PublishError, match="non-empty folder"):
        GitTarget(folder).publish(release, "Release", "v1.0.0")
    assert (folder / "thesis.tex").exists()


def test_ignored_and_untracked_files_in_our_repo_are_never_deleted(release: Path, tmp_path: Path) -> None:
    target = GitTarget(tmp_path / "mirror")
    target.publish(release, "Release borsch 1.0.0", "v1.0.0")
    assert _git(target.path, "status", "--porcelain") == ""
    (target.path / ".git" / "info" / "exclude").write_text("local/\n")
    (target.path / "local").mkdir()
    (target.path / "local" / "keep.txt").write_text("mine")
    with pytest.raises(PublishError, match="untracked or ignored"):
        target.publish(release, "Release again", "v1.0.1")
    assert (target.path / "local" / "keep.txt").read_text() == "mine"


def test_publish_killed_after_branch_move_is_finished_by_the_next_run(
    release: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = GitTarget(tmp_path / "mirror")
    first = target.publish(release, "Release borsch 1.0.0", "v1.0.0")
    manifest = read_manifest(release)
    changelog = release / "CHANGELOG.md"
    changelog.write_text(changelog.read_text() + "\n", encoding="utf-8")
    manifest["files"]["CHANGELOG.md"] = sha256_file(changelog)
    write_manifest(release, manifest)
    real = GitTarget._git

    def killed(self, *args, **kwargs):
        if args[:1] == ("reset",):
            raise KeyboardInterrupt  # the process dies right after the branch moved
        return real(self, *args, **kwargs)

    monkeypatch.setattr(GitTarget, "_git", killed)
    with pytest.raises(KeyboardInterrupt):
        target.publish(release, "Release borsch 1.0.1", "v1.0.1")
    monkeypatch.setattr(GitTarget, "_git", real)
    head = target._git("rev-parse", "HEAD").stdout.strip()
    assert head != first
    target.check_ready()  # finishes the interrupted publish instead of refusing a "dirty" tree
    assert _git(target.path, "status", "--porcelain") == ""
    assert (target.path / "CHANGELOG.md").read_text() == changelog.read_text()
    assert json.loads((target.path / "manifest.json").read_text())["files"] == manifest["files"]


# 18. Croissant RAI fields mapped by field, not by datasheet position
def test_rai_fields_are_mapped_by_field(wwd_release) -> None:
    croissant = json.loads((wwd_release.folder / "croissant.json").read_text(encoding="utf-8"))
    missing = croissant["rai:dataCollectionMissingData"]
    assert "Optional fields" in missing and "split" not in missing
    assert "children" in croissant["rai:personalSensitiveInformation"]
    assert "terms of use" in croissant["rai:dataLimitations"]


@pytest.mark.parametrize("name", builtin_names())
def test_every_dataset_answers_personal_information(name: str) -> None:
    from culturebench.cards.croissant import _rai
    from culturebench.spec import load_spec

    rai = _rai(load_spec(name), {"upstream": {}})
    assert rai.get("rai:personalSensitiveInformation"), name
    assert rai.get("rai:dataUseCases"), name


def test_card_check_agrees_with_a_fresh_wwd_build(wwd_release) -> None:
    from typer.testing import CliRunner

    from culturebench.cli import app

    result = CliRunner().invoke(app, ["card", "--check", str(wwd_release.folder)])
    assert result.exit_code == 0, result.output


# 10. validation stays linear: no per-row Series (iterrows copied the frame's attrs into
# every row), split ids beside the frames rather than in attrs. Timings: bench_scale.py.
def test_validation_builds_no_per_row_series(release: Path, monkeypatch) -> None:
    import pandas as pd

    from culturebench.spec import load_spec
    from culturebench.validation.findings import ValidationReport
    from culturebench.validation.release import _check_data

    def refuse(self):
        raise AssertionError("iterrows() in validation (quadratic with attrs, slow without)")

    monkeypatch.setattr(pd.DataFrame, "iterrows", refuse)
    report = validate_release(release, croissant_records=False)
    assert report.ok, report.summary()
    manifest = read_manifest(release)
    frames = _check_data(release, load_spec("borsch"), manifest, {}, ValidationReport(target="x"))
    assert all(not frame.attrs for frame in frames.values())
    assert frames.split_ids["ru"]["test"][:1] == [frames["ru"]["id"].iloc[0]]
