"""Releases: staged to a git repo laid out like a Hub dataset repo, served over HTTP by a
real Hub-compatible server (olah), loaded with `load_dataset(..., revision=...)`; and the
release gate refusing every bad case before anything is published.

Code that needs the network (olah, the failing-upload fake) runs in a subprocess with
`HF_ENDPOINT` set, because huggingface_hub reads its endpoint and offline mode at import.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from openpyxl import load_workbook
from typer.testing import CliRunner

from culturebench.cli import app
from culturebench.errors import BuildError, ValidationFailed
from culturebench.hashing import sha256_file
from culturebench.release import plan_release, publish_release
from culturebench.release.pipeline import ReleaseRefused
from culturebench.release.targets import GitTarget, HubTarget, PublishError

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parent.parent
REPO_ID = "culturebench/borsch"
NEW_DISH = (1148, "КАЛИТКИ", "FI, RU", "bootstrap-2")


def make_version(
    tmp: Path, upstream: Path, version: str, *, kind: str | None = "minor", add_row: bool = True
) -> tuple[Path, Path]:
    """A maintainer's next version: upstream with one more RU dish, dataset.yaml bumped and
    re-pinned, a CHANGELOG entry. Returns (datasets dir, source dir)."""
    source = tmp / f"upstream-{version}"
    shutil.copytree(upstream, source)
    for path in source.iterdir():
        path.chmod(0o644)
    if add_row:
        workbook = load_workbook(source / "RU_DATA.xlsx")
        workbook.worksheets[0].append(NEW_DISH)
        workbook.save(source / "RU_DATA.xlsx")
    datasets = tmp / f"datasets-{version}"
    shutil.copytree(REPO / "datasets", datasets)
    spec = datasets / "borsch" / "dataset.yaml"
    text = spec.read_text(encoding="utf-8").replace("version: 1.0.0 ", f"version: {version} ", 1)
    if add_row:
        text = text.replace("expected_rows: 1147", "expected_rows: 1148")
        text = re.sub(
            r"(file: RU_DATA.xlsx\n\s+upstream_path: \S+\n\s+sha256: )\w+",
            lambda m: m.group(1) + sha256_file(source / "RU_DATA.xlsx"),
            text,
        )
    spec.write_text(text, encoding="utf-8")
    if kind is not None:
        changelog = datasets / "borsch" / "CHANGELOG.md"
        entry = f"## {version} - 2026-11-22\nKind: {kind}\n\n- Added the Karelian dish КАЛИТКИ (FI, RU).\n\n"
        old = changelog.read_text(encoding="utf-8")
        changelog.write_text(old.replace("## 1.0.0", entry + "## 1.0.0", 1), encoding="utf-8")
    return datasets, source


def run_py(code: str, env: dict[str, str], timeout: int = 240) -> dict:
    """Run Python in a subprocess (online mode, given env); return the JSON it prints last."""
    full_env = {**os.environ, "HF_HUB_OFFLINE": "0", "HF_DATASETS_OFFLINE": "0", **env}
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture
def v110(upstream_borsch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    datasets, source = make_version(tmp_path, upstream_borsch, "1.1.0")
    monkeypatch.setenv("CULTUREBENCH_DATASETS", str(datasets))
    return source


def publish(version: str, target, out: Path, source: str | None = None):
    plan = plan_release("borsch", version, target, source=source, out_root=out)
    return plan, publish_release(plan, target)


# --------------------------------------------------------------------------- over HTTP
def test_two_versions_load_by_revision_over_http(
    upstream_borsch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, servers
) -> None:
    with servers.local_hub(tmp_path / "hub") as hub:
        target = GitTarget(hub.repo_path(REPO_ID))
        out = tmp_path / "dist"
        plan1, result1 = publish("1.0.0", target, out, str(upstream_borsch))
        assert plan1.kind == "major" and result1.verified and target.tags() == ["v1.0.0"]

        datasets, source = make_version(tmp_path, upstream_borsch, "1.1.0")
        monkeypatch.setenv("CULTUREBENCH_DATASETS", str(datasets))
        env = {
            "HF_ENDPOINT": hub.url,
            "CULTUREBENCH_DATASETS": str(datasets),
            "HF_HOME": str(tmp_path / "hf"),
        }

        # Dry run of 1.1.0 against the Hub endpoint, private + gated: a plan, no writes.
        dry = subprocess.run(
            [
                sys.executable,
                "-m",
                "culturebench.cli",
                "release",
                "borsch",
                "--version",
                "1.1.0",
                "--repo",
                REPO_ID,
                "--endpoint",
                hub.url,
                "--private",
                "--gated",
                "--dry-run",
                "--source",
                str(source),
                "--out",
                str(out),
                "--json",
                str(tmp_path / "plan.json"),
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "HF_HUB_OFFLINE": "0", **env},
            cwd=REPO,
            timeout=240,
        )
        assert dry.returncode == 0, dry.stderr[-3000:]
        assert "dry run" in dry.stdout
        plan = json.loads((tmp_path / "plan.json").read_text(encoding="utf-8"))
        assert plan["repo_flags"] == {"private": True, "gated": "auto"}
        assert (plan["tag"], plan["action"], plan["change_kind"], plan["previous"]) == (
            "v1.1.0",
            "publish",
            "minor",
            "1.0.0",
        )
        folder = out / "borsch" / "1.1.0"
        assert {f["path"]: f["sha256"] for f in plan["files"]} == {
            p.relative_to(folder).as_posix(): sha256_file(p) for p in folder.rglob("*") if p.is_file()
        }
        assert "source ru: RU_DATA.xlsx sha256:" in plan["commit_message"]
        assert target.tags() == ["v1.0.0"]  # the dry run touched nothing

        plan2, result2 = publish("1.1.0", target, out)
        assert (plan2.kind, str(plan2.previous)) == ("minor", "1.0.0")
        assert sorted(target.tags()) == ["v1.0.0", "v1.1.0"]

        got = run_py(
            f"""
            import json
            from datasets import load_dataset
            from huggingface_hub import HfApi
            from culturebench.release.pipeline import plan_release, verify_release
            from culturebench.release.targets import HubTarget
            out = {{}}
            for rev in ["v1.0.0", "v1.1.0", "{result1.commit}", "{result2.commit[:12]}", "main"]:
                ds = load_dataset("{REPO_ID}", "ru", revision=rev, split="test")
                out[rev] = [ds.num_rows, "ru-1148" in set(ds["id"])]
            par = load_dataset("{REPO_ID}", "parallel", revision="v1.0.0", split="test")
            out["parallel_v1"] = par.num_rows
            refs = HfApi().list_repo_refs("{REPO_ID}", repo_type="dataset")
            out["tags"] = sorted(t.name for t in refs.tags)
            hub = HubTarget("{REPO_ID}")
            plan = plan_release("borsch", "1.1.0", hub, out_root="{out}")
            out["republish_action"] = plan.action
            out["verify_problems"] = verify_release(hub, plan)
            print(json.dumps(out))
            """,
            env,
        )
    assert got["v1.0.0"] == [1147, False]
    assert got["v1.1.0"] == [1148, True]
    assert got[result1.commit] == [1147, False]
    assert got[result2.commit[:12]] == [1148, True]
    assert got["main"] == [1148, True]
    assert got["parallel_v1"] == 433
    assert got["tags"] == ["v1.0.0", "v1.1.0"]
    assert got["republish_action"] == "noop"  # identical content already tagged: nothing to do
    assert got["verify_problems"] == []


# --------------------------------------------------------------------------- the gate
def test_rerelease_identical_content_is_a_noop(upstream_borsch: Path, tmp_path: Path) -> None:
    target = GitTarget(tmp_path / "repo")
    publish("1.0.0", target, tmp_path / "dist", str(upstream_borsch))
    plan = plan_release("borsch", "1.0.0", target, out_root=tmp_path / "dist")
    assert plan.action == "noop"
    assert publish_release(plan, target).commit is None


def test_refuses_tag_with_different_content(upstream_borsch: Path, tmp_path: Path) -> None:
    target = GitTarget(tmp_path / "repo")
    publish("1.0.0", target, tmp_path / "dist", str(upstream_borsch))
    (target.path / "NOTE.md").write_text("someone else's v1.0.0\n")
    target._git("add", "-A")
    target._git("commit", "-q", "-m", "other content")
    target._git("tag", "-f", "v1.0.0")
    with pytest.raises(ReleaseRefused, match=r"v1\.0\.0 already exists .* with different content"):
        plan_release("borsch", "1.0.0", target, out_root=tmp_path / "dist")


def test_refuses_version_not_greater_than_latest(
    borsch_release, v110: Path, upstream_borsch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = GitTarget(tmp_path / "repo")
    out = tmp_path / "dist"
    shutil.copytree(borsch_release.folder, out / "borsch" / "1.0.0")
    monkeypatch.delenv("CULTUREBENCH_DATASETS")
    publish("1.0.0", target, out)
    monkeypatch.setenv("CULTUREBENCH_DATASETS", str(v110.parent / "datasets-1.1.0"))
    publish("1.1.0", target, out, str(v110))
    datasets, source = make_version(tmp_path, upstream_borsch, "1.0.5", kind="minor")
    monkeypatch.setenv("CULTUREBENCH_DATASETS", str(datasets))
    with pytest.raises(
        ReleaseRefused, match=re.escape("1.0.5 is not greater than the latest published 1.1.0")
    ):
        plan_release("borsch", "1.0.5", target, source=str(source), out_root=out)
    assert sorted(target.tags()) == ["v1.0.0", "v1.1.0"]


def test_refuses_a_bump_smaller_than_the_change(
    upstream_borsch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = GitTarget(tmp_path / "repo")
    publish("1.0.0", target, tmp_path / "dist", str(upstream_borsch))
    datasets, source = make_version(tmp_path, upstream_borsch, "1.0.1", kind="minor")
    monkeypatch.setenv("CULTUREBENCH_DATASETS", str(datasets))
    with pytest.raises(ReleaseRefused, match=r"1.0.0 -> 1.0.1 is a patch bump, but the change is minor"):
        plan_release("borsch", "1.0.1", target, source=str(source), out_root=tmp_path / "dist")


def test_refuses_changelog_kind_that_contradicts_the_change(
    upstream_borsch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = GitTarget(tmp_path / "repo")
    publish("1.0.0", target, tmp_path / "dist", str(upstream_borsch))
    datasets, source = make_version(tmp_path, upstream_borsch, "2.0.0", kind="major")
    monkeypatch.setenv("CULTUREBENCH_DATASETS", str(datasets))
    with pytest.raises(ReleaseRefused, match="says 'Kind: major', but the change is minor"):
        plan_release("borsch", "2.0.0", target, source=str(source), out_root=tmp_path / "dist")


def test_refuses_without_changelog_entry(
    upstream_borsch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    datasets, source = make_version(tmp_path, upstream_borsch, "1.1.0", kind=None)
    monkeypatch.setenv("CULTUREBENCH_DATASETS", str(datasets))
    with pytest.raises(BuildError, match=re.escape("no entry for version 1.1.0")):
        plan_release(
            "borsch", "1.1.0", GitTarget(tmp_path / "repo"), source=str(source), out_root=tmp_path / "dist"
        )
    assert not (tmp_path / "repo").exists() and not (tmp_path / "dist" / "borsch" / "1.1.0").exists()


def test_refuses_a_dirty_release_folder(borsch_release, tmp_path: Path) -> None:
    out = tmp_path / "dist"
    shutil.copytree(borsch_release.folder, out / "borsch" / "1.0.0")
    card = out / "borsch" / "1.0.0" / "README.md"
    card.write_text(card.read_text(encoding="utf-8") + "\nhand edit\n", encoding="utf-8")
    with pytest.raises(ValidationFailed, match="dirty build"):
        plan_release("borsch", "1.0.0", GitTarget(tmp_path / "repo"), out_root=out)
    assert not (tmp_path / "repo").exists()


def test_refuses_unpinned_and_sample_builds(upstream_copy: Path, tmp_path: Path) -> None:
    workbook = load_workbook(upstream_copy / "UK_DATA.xlsx")
    workbook.worksheets[0]["B2"] = "БАКСО "
    workbook.save(upstream_copy / "UK_DATA.xlsx")
    with pytest.raises(ReleaseRefused, match=r"do not match their pinned sha256 \(uk\)"):
        plan_release(
            "borsch",
            "1.0.0",
            GitTarget(tmp_path / "repo"),
            source=str(upstream_copy),
            out_root=tmp_path / "dist",
        )
    sample = str(REPO / "datasets" / "borsch" / "sample")
    with pytest.raises(ReleaseRefused, match="built from the shipped sample"):
        plan_release(
            "borsch", "1.0.0", GitTarget(tmp_path / "repo"), source=sample, out_root=tmp_path / "dist2"
        )


def test_refuses_version_other_than_declared(tmp_path: Path) -> None:
    with pytest.raises(ReleaseRefused, match=re.escape("declares version 1.0.0, not 3.0.0")):
        plan_release("borsch", "3.0.0", GitTarget(tmp_path / "repo"), out_root=tmp_path / "dist")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["release", "borsch", "--version", "1.0", "--to", "git:X"], "malformed version '1.0'"),
        (["release", "nosuch", "--version", "1.0.0", "--to", "git:X"], "unknown dataset 'nosuch'"),
        (["release", "borsch", "--version", "1.0.0"], "give exactly one target"),
        (["release", "borsch", "--version", "1.0.0", "--repo", "noslash", "--dry-run"], "ORG/NAME"),
        (["release", "borsch", "--version", "1.0.0", "--to", "git:X", "--gated"], "apply to Hub repos"),
    ],
)
def test_cli_bad_input_exit_2(args: list[str], message: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "dist")], terminal_width=200)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not (tmp_path / "dist").exists()


def test_cli_noop_dry_run_and_refusal(borsch_release, tmp_path: Path) -> None:
    out = tmp_path / "dist"
    shutil.copytree(borsch_release.folder, out / "borsch" / "1.0.0")
    target = GitTarget(tmp_path / "repo")
    publish("1.0.0", target, out)
    runner = CliRunner()
    ok = runner.invoke(
        app, ["release", "borsch", "--version", "1.0.0", "--to", f"git:{target.path}", "--out", str(out)]
    )
    assert ok.exit_code == 0 and "nothing to do" in ok.output

    plan_json = tmp_path / "plan.json"
    dry = runner.invoke(
        app,
        [
            "release",
            "borsch",
            "--version",
            "1.0.0",
            "--to",
            f"git:{tmp_path / 'r2'}",
            "--out",
            str(out),
            "--dry-run",
            "--json",
            str(plan_json),
        ],
    )
    assert dry.exit_code == 0 and "dry run: nothing was uploaded or tagged" in dry.output
    plan = json.loads(plan_json.read_text(encoding="utf-8"))
    assert plan["tag"] == "v1.0.0" and plan["repo_flags"] == {"private": False, "gated": False}
    assert "data/ru/test-00000-of-00001.parquet" in {f["path"] for f in plan["files"]}
    assert not (tmp_path / "r2").exists()

    refused = runner.invoke(
        app,
        ["release", "borsch", "--version", "3.0.0", "--to", f"git:{target.path}", "--out", str(out)],
        terminal_width=200,
    )
    assert refused.exit_code == 3 and "release refused" in refused.output
    assert target.tags() == ["v1.0.0"]


# --------------------------------------------------------------------------- failures
def test_failed_git_commit_leaves_no_tag(
    borsch_release, v110: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = GitTarget(tmp_path / "repo")
    out = tmp_path / "dist"
    monkeypatch.delenv("CULTUREBENCH_DATASETS")
    shutil.copytree(borsch_release.folder, out / "borsch" / "1.0.0")
    publish("1.0.0", target, out)
    before = target._git("rev-parse", "HEAD").stdout
    monkeypatch.setenv("CULTUREBENCH_DATASETS", str(v110.parent / "datasets-1.1.0"))
    plan = plan_release("borsch", "1.1.0", target, source=str(v110), out_root=out)
    # Another git process holds the branch lock: moving the branch fails (git's own error).
    lock = target.path / ".git" / "refs" / "heads" / "main.lock"
    lock.write_text("")
    with pytest.raises(PublishError, match="update-ref"):
        publish_release(plan, target)
    lock.unlink()
    assert target.tags() == ["v1.0.0"]
    assert target._git("rev-parse", "HEAD").stdout == before
    assert target._git("status", "--porcelain").stdout == ""


def test_missing_token_refuses_before_any_request(borsch_release, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    target = HubTarget("culturebench/borsch", endpoint="http://127.0.0.1:9")  # nothing listens there
    with pytest.raises(PublishError, match="no Hugging Face token found"):
        target.publish(borsch_release.folder, "Release borsch 1.0.0", "v1.0.0")


def test_network_failure_mid_upload_creates_no_tag(borsch_release, tmp_path: Path, servers) -> None:
    token = "hf_culturebench_test_not_a_real_token"
    with servers.failing_hub() as (url, requests):
        got = run_py(
            f"""
            import json
            from pathlib import Path
            from culturebench.release.targets import HubTarget, PublishError
            try:
                target = HubTarget("org/x", endpoint="{url}")
                target.publish(Path("{borsch_release.folder}"), "Release", "v1.0.0")
                print(json.dumps({{"error": None}}))
            except PublishError as exc:
                print(json.dumps({{"error": str(exc)}}))
            """,
            {"HF_TOKEN": token, "HF_HOME": str(tmp_path / "hf")},
        )
        seen = list(requests)
    assert got["error"] and "no tag was created" in got["error"]
    assert token not in got["error"]
    assert any(path.startswith("/api/repos/create") for _, path in seen)
    assert any("preupload" in path or "commit" in path for _, path in seen)
    assert not any("/tag/" in path for _, path in seen)


# --------------------------------------------------------------------------- Hub verification
def test_hub_verification_uses_the_file_listing(borsch_release, tmp_path: Path, servers) -> None:
    """`HubTarget.verify_files` against a real Hub-compatible server (olah): the published
    tag is checked from `list_repo_tree` (git blob ids here), without downloading files."""
    with servers.local_hub(tmp_path / "hub") as hub:
        folder = tmp_path / "rel"
        shutil.copytree(borsch_release.folder, folder)
        GitTarget(hub.repo_path(REPO_ID)).publish(folder, "Release borsch 1.0.0", "v1.0.0")
        edited = tmp_path / "edited"
        shutil.copytree(folder, edited)
        (edited / "CHANGELOG.md").write_text("changed\n", encoding="utf-8")
        got = run_py(
            f"""
            import json
            from pathlib import Path
            from culturebench.release.targets import HubTarget, release_files
            target = HubTarget({REPO_ID!r}, endpoint={hub.url!r})
            same = target.verify_files("v1.0.0", Path({str(folder)!r}), release_files(Path({str(folder)!r})))
            files = release_files(Path({str(folder)!r}))
            differ = target.verify_files("v1.0.0", Path({str(edited)!r}), files)
            print(json.dumps({{"same": same, "differ": differ}}))
            """,
            {"HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf")},
        )
    assert got["same"] == []
    assert len(got["differ"]) == 1 and got["differ"][0].startswith("CHANGELOG.md: the published git blob")


def test_listing_comparison_checks_lfs_sha256(tmp_path: Path) -> None:
    from huggingface_hub.hf_api import RepoFile

    from culturebench.release.targets import ReleaseFile, compare_listing, git_blob_sha1

    (tmp_path / "a.txt").write_text("hello\n")
    files = [ReleaseFile("a.txt", 6, "x" * 64), ReleaseFile("data/b.parquet", 10, "b" * 64)]
    listed = {
        "a.txt": RepoFile(type="file", oid=git_blob_sha1(tmp_path / "a.txt"), size=6, path="a.txt"),
        "data/b.parquet": RepoFile(
            type="file",
            oid="0" * 40,
            size=10,
            path="data/b.parquet",
            lfs={"oid": "c" * 64, "size": 10, "pointerSize": 1},
        ),
        ".gitattributes": RepoFile(type="file", oid="1" * 40, size=1, path=".gitattributes"),
        "stray.txt": RepoFile(type="file", oid="2" * 40, size=1, path="stray.txt"),
    }
    problems = compare_listing(listed, tmp_path, files)
    assert problems == [
        f"data/b.parquet: expected sha256 {'b' * 64}, published {'c' * 64}",
        "stray.txt: published but not part of the release",
    ]
