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

REPO = Path(__file__).resolve().parent.parent
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
