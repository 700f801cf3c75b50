"""Issue 40 (reliability, round 4): a tampered local release is refused before it is read, a
garbage ``--input`` or table is an error even where no item reads it, and a bad command line is
one line, not click's usage box."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from culturebench.cli import app

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), terminal_width=200)
    return result.exit_code, result.output


def _tree(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` and its sha256: the bytes a refusal must leave alone."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


# ------------------------------------------------------------------ usage errors: one line
@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["eval", "run", "wwd", "--bogus"], "--bogus"),
        (["eval", "run", "wwd", "--limit", "x"], "--limit"),
        (["eval", "run"], "dataset"),
        (["corpus", "sample", "x", "--out", "y.csv", "--n", "0"], "--n"),
    ],
)
def test_usage_errors_are_one_line(args: list[str], names: str) -> None:
    code, output = _cli(*args)
    assert code == 2, output
    lines = output.strip().splitlines()
    assert len(lines) == 1, output
    assert lines[0].startswith("error: culturebench ") and names in lines[0] and "--help" in lines[0]
    assert "╭" not in output and "Usage:" not in output


def test_the_console_script_prints_usage_errors_as_one_line() -> None:
    """Through the installed entry point, as a user runs it (help is still help)."""
    script = str(Path(sys.executable).with_name("culturebench"))
    bad = subprocess.run(
        [script, "eval", "score", "wwd", "--bogus"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0, bad.stderr
    assert "No such option: --bogus" in bad.stderr
    helped = subprocess.run(
        [script, "eval"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "100"},
    )
    assert "Usage: culturebench eval" in helped.stdout + helped.stderr


# ------------------------------------------------------- a local release is re-hashed
def _release_copy(wwd_release, tmp_path: Path) -> Path:
    folder = tmp_path / "release"
    shutil.copytree(wwd_release.folder, folder)
    return folder


def _generations(tmp_path: Path) -> Path:
    path = tmp_path / "country.jsonl"
    path.write_text(json.dumps({"id": "wwd-748", "seed": 0, "output": "Algeria"}) + "\n", encoding="utf-8")
    return path


def _rewrite_default_test(folder: Path, edit) -> Path:
    import pyarrow.parquet as pq

    path = next((folder / "data" / "default").glob("test-*.parquet"))
    table = pq.read_table(path)
    pq.write_table(edit(table), path)
    return path


def test_a_tampered_release_is_refused_before_anything_is_written(wwd_release, tmp_path: Path) -> None:
    folder = _release_copy(wwd_release, tmp_path)
    tampered = _rewrite_default_test(folder, lambda t: t.slice(1))  # the first dish removed
    gens = _generations(tmp_path)
    before = _tree(tmp_path)
    code, output = _cli(
        "eval", "score", "wwd", "--task", "country", "--generations", str(gens),
        "--local", str(folder), "--out", str(tmp_path / "scored"),
    )  # fmt: skip
    assert code == 2, output
    assert str(tampered) in output and "sha256 differs" in output and "--trust-local" in output
    assert _tree(tmp_path) == before  # no run folder, nothing else touched
    # read as it is when asked: the removed first dish (wwd-748) is no longer in the release
    code, output = _cli(
        "eval", "score", "wwd", "--task", "country", "--generations", str(gens),
        "--local", str(folder), "--trust-local", "--out", str(tmp_path / "scored"),
    )  # fmt: skip
    assert code == 2 and "wwd-748" in output and "sha256" not in output, output


def test_trust_local_needs_local() -> None:
    code, output = _cli("eval", "run", "wwd", "--task", "country", "--model", "m", "--trust-local")
    assert code == 2 and output.strip() == (
        "error: --trust-local applies to a --local release folder; give --local too"
    ), output


def test_a_release_rebuilt_in_place_is_read_anew(wwd_release, tmp_path: Path) -> None:
    """The rows come from the bytes on disk now, never from a cache of an earlier read of the
    same folder (the manifest updated as a rebuild would)."""
    from culturebench.eval.dataset_ref import load_rows, resolve_dataset

    folder = _release_copy(wwd_release, tmp_path)
    first = load_rows(
        resolve_dataset("wwd", revision=None, local=str(folder), repo=None), "default", "test", 1
    )
    path = _rewrite_default_test(folder, lambda t: t.slice(1))
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    for entry in manifest["configs"]["default"]["splits"]["test"]["files"]:
        if folder / entry["path"] == path:
            entry["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    again = load_rows(
        resolve_dataset("wwd", revision=None, local=str(folder), repo=None), "default", "test", 1
    )
    assert again[0]["id"] != first[0]["id"]


def test_export_lm_eval_refuses_a_folder_inside_a_release(wwd_release, tmp_path: Path) -> None:
    folder = _release_copy(wwd_release, tmp_path)
    before = _tree(folder)
    code, output = _cli("export", "lm-eval", "wwd", "--local", str(folder), "--out", str(folder / "lm"))
    assert code == 2 and "inside the release folder" in output, output
    assert _tree(folder) == before


# -------------------------------------------------- eval paper / compare: garbage inputs
def test_every_declared_paper_input_has_a_reader() -> None:
    for paper in sorted((ROOT / "datasets").glob("*/paper.yaml")):
        declared = yaml.safe_load(paper.read_text(encoding="utf-8")).get("inputs") or {}
        for key, spec in declared.items():
            assert ":" in str(spec.get("read", "")), f"{paper}: input {key} has no read:"


@pytest.mark.parametrize(("dataset", "key"), [("wwd", "h9"), ("foodieqa", "human"), ("ash", "human")])
@pytest.mark.parametrize("content", [b"\x7fELF\x00\x01binary", b"a,b\n1,2\n"])
def test_a_garbage_paper_input_is_an_error_even_where_no_item_reads_it(
    dataset: str, key: str, content: bytes, tmp_path: Path
) -> None:
    given = tmp_path / "input.csv"
    given.write_bytes(content)
    out = tmp_path / "report"
    code, output = _cli("eval", "paper", dataset, "--input", f"{key}={given}", "--out", str(out))
    assert code == 2, output
    assert "input.csv" in output and len(output.strip().splitlines()) == 1, output
    assert not out.exists()


def test_eval_compare_with_nothing_in_common_is_an_error(tmp_path: Path) -> None:
    a, b = tmp_path / "a.csv", tmp_path / "table_h9_paper.csv"
    a.write_text("row,x\nr,1\n", encoding="utf-8")
    b.write_text("row,y\ns,2\n", encoding="utf-8")
    code, output = _cli("eval", "compare", str(a), str(b))
    assert code == 2 and "share no metric or cell" in output, output
    code, output = _cli("eval", "compare", str(b), "--paper", "wwd:GPT 3.5")
    assert code == 2 and "no cell in common" in output, output
