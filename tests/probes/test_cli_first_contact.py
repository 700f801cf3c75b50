"""Probe cases (issue 12, first contact): killed and concurrent builds, and every command
line that used to end in a Python traceback. Each must give one short error line and the
documented exit code (2 bad input, 1 validation failed, 3 release refused)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from culturebench.cli import app

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def cli(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output + (result.stderr if result.stderr_bytes else "")


def _one_clean_error(code: int, output: str, expected: int = 2) -> None:
    assert code == expected, output
    assert "Traceback" not in output, output


# 14. killed builds leave nothing for long; failed builds leave no empty <out>/<name>
def test_staging_of_killed_builds_is_cleaned(upstream_borsch: Path, tmp_path: Path) -> None:
    out = tmp_path / "dist"
    script = textwrap.dedent(
        f"""
        import os, signal
        from culturebench.atomic import staging_dir
        with staging_dir({str(out / "borsch" / "1.0.0")!r}) as tmp:
            (tmp / "data.parquet").write_bytes(b"half")
            os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    for _ in range(4):
        proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, check=False)
        assert proc.returncode == -9
    # each new staging call already removed the previous dead ones: one folder (+ its lock) is left
    assert len([p for p in (out / "borsch").iterdir() if "staging" in p.name]) == 2
    code, output = cli("build", "borsch", "--out", str(out), "--source", str(upstream_borsch))
    assert code == 0, output
    assert sorted(p.name for p in (out / "borsch").iterdir()) == ["1.0.0"]


def test_failed_build_leaves_no_dataset_folder(upstream_copy: Path, tmp_path: Path) -> None:
    (upstream_copy / "UK_DATA.xlsx").write_bytes(b"")
    out = tmp_path / "dist"
    code, output = cli("build", "borsch", "--out", str(out), "--source", str(upstream_copy))
    _one_clean_error(code, output)
    assert not (out / "borsch").exists()


def test_concurrent_builds_one_wins_the_other_fails_cleanly(upstream_borsch: Path, tmp_path: Path) -> None:
    out = tmp_path / "dist"
    cmd = [
        str(Path(sys.executable).with_name("culturebench")),
        "build",
        "borsch",
        "--out",
        str(out),
        "--source",
        str(upstream_borsch),
    ]
    procs = [
        subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for _ in range(2)
    ]
    results = [(p.wait(timeout=300), p.stdout.read()) for p in procs]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 2], results
    for _code, output in results:
        assert "Traceback" not in output
    assert sorted(p.name for p in (out / "borsch").iterdir()) == ["1.0.0"]


# 16. first contact: one line, exit 2 (3 for a refused release), never a traceback
def _edit_id(upstream_copy: Path, value) -> None:
    from openpyxl import load_workbook

    workbook = load_workbook(upstream_copy / "RU_DATA.xlsx")
    workbook.worksheets[0].cell(row=4, column=1, value=value)
    workbook.save(upstream_copy / "RU_DATA.xlsx")


@pytest.mark.parametrize(
    "value", ["²", "٣", str(2**63), str(10**30)], ids=["superscript", "arabic", "int64+1", "huge"]
)
def test_odd_ids_are_one_line_errors(upstream_copy: Path, tmp_path: Path, value: str) -> None:
    _edit_id(upstream_copy, value)
    code, output = cli("build", "borsch", "--out", str(tmp_path / "dist"), "--source", str(upstream_copy))
    _one_clean_error(code, output)
    assert "RU_DATA.xlsx, row 4, field 'ID'" in output


def test_image_size_beyond_int64(upstream_copy: Path, tmp_path: Path, csv_editor) -> None:
    where = {}

    def edit(rows):
        size = rows[0].index("size")
        where["row"] = next(i for i, row in enumerate(rows[1:], start=1) if row[size])
        rows[where["row"]][size] = str(2**64)

    csv_editor(upstream_copy / "images_manifest.csv", edit)
    code, output = cli("build", "borsch", "--out", str(tmp_path / "dist"), "--source", str(upstream_copy))
    _one_clean_error(code, output)
    assert f"images_manifest.csv, row {where['row'] + 1}, field 'size'" in output


def _cases(tmp: Path, ash: Path) -> list[tuple[list[str], str]]:
    (tmp / "afile").write_text("x")
    (tmp / "corrupt").mkdir()
    (tmp / "corrupt" / "manifest.json").write_text("{")
    (tmp / "history.json").write_text("{not json")
    (tmp / "res").mkdir()
    (tmp / "res" / "results.json").write_text('{"x": 1}')
    (tmp / "run").mkdir()
    (tmp / "run" / "run.json").write_text("[")
    gen = f"eval run ash --task generate --out {tmp / 'runs' / 'r'}".split()
    local = ["--local", str(ash)]
    table = [
        ("build borsch --out {tmp}/afile", "is a file"),
        ("build nope", "unknown dataset"),
        ("check-urls {ash} --allow garbage --report {tmp}/rep", "--allow 'garbage'"),
        ("check-urls {ash} --history {tmp}/history.json --report {tmp}/rep", "corrupt history"),
        ("check-urls {tmp}/corrupt", "not valid JSON"),
        ("eval report {tmp}/res --out {tmp}/r.md", "not a culturebench results file"),
        ("eval ash-summary {tmp}/run --out {tmp}/s", "run.json, row 1: not valid JSON"),
        ("eval ash-summary {tmp}/nowhere --out {tmp}/s", "not an eval run folder"),
        ("eval tiny-model {tmp}/afile", "not an empty folder"),
        ("release ash --version 1.x --to git:{tmp}/g", "malformed version"),
        ("card {tmp}/corrupt", "not valid JSON"),
    ]
    cases = [(text.format(tmp=tmp, ash=ash).split(), expected) for text, expected in table]
    return [
        *cases,
        ([*gen, "--task", "nope", "--model", "m", *local], "unknown task"),
        (
            ["eval", "run", "nope", "--task", "x", "--model", "m", *local, "--out", str(tmp / "o")],
            "no evaluation tasks",
        ),
        ([*gen, "--backend", "nope", "--model", "m", *local], "unknown backend"),
        ([*gen, "--lang", "xx", "--model", "m", *local], "no prompts in 'xx'"),
        ([*gen, "--model", str(tmp / "no-model"), *local], "cannot load model"),
        ([*gen, "--model", "m", "--local", str(tmp / "corrupt")], "not valid JSON"),
        (
            ["eval", "run", "borsch", "--task", "origin-qa", "--model", "m", "--local", str(ash)],
            "not 'borsch'",
        ),
    ]


def test_first_contact_errors_are_one_line(ash_release, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    failures = []
    for args, expected in _cases(tmp_path, ash_release.folder):
        code, output = cli(*args)
        if code != 2 or "Traceback" in output or expected not in output:
            failures.append((args, code, output[-300:]))
    assert failures == []
    assert not (tmp_path / "runs" / "r" / "run.json").exists()


def test_offline_revision_is_one_line(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, output = cli(
        *["eval", "run", "ash", "--task", "generate", "--model", "m", "--revision", "v1.0.0", "--out"],
        str(tmp_path),
    )
    _one_clean_error(code, output)
    assert "cannot resolve dataset culturebench/ash@v1.0.0" in output


def test_validate_json_into_missing_folder(ash_release, tmp_path: Path) -> None:
    target = tmp_path / "new" / "dir" / "report.json"
    code, output = cli("validate", str(ash_release.folder), "--no-records", "--json", str(target))
    assert code == 0, output
    assert json.loads(target.read_text())["target"] == str(ash_release.folder)


def test_release_gate_exits_3_for_a_folder_that_fails_validation(ash_release, tmp_path: Path) -> None:
    out = tmp_path / "dist"
    shutil.copytree(ash_release.folder, out / "ash" / "1.0.0")
    (out / "ash" / "1.0.0" / "notes.txt").write_text("stray")
    code, output = cli(
        "release",
        "ash",
        "--version",
        "1.0.0",
        "--to",
        f"git:{tmp_path / 'g'}",
        "--out",
        str(out),
        "--dry-run",
    )
    assert code == 3, output
    assert "Traceback" not in output


def test_unexpected_errors_get_one_line_and_a_debug_hint(tmp_path: Path) -> None:
    env = {**os.environ, "CULTUREBENCH_DATASETS": str(tmp_path / "datasets")}
    shutil.copytree(REPO / "datasets", tmp_path / "datasets")
    spec = tmp_path / "datasets" / "ash" / "dataset.yaml"
    spec.write_text(spec.read_text(encoding="utf-8").replace("configs:", "configs: 3\nunused:", 1))
    exe = str(Path(sys.executable).with_name("culturebench"))
    proc = subprocess.run([exe, "info", "ash"], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "--debug" in proc.stderr
    debug = subprocess.run(
        [exe, "--debug", "info", "ash"], capture_output=True, text=True, env=env, check=False
    )
    assert "Traceback" in debug.stderr
