"""Probe cases (issue 25): bounds on every numeric option, image sizes, missing optional
engines, and what a person sees (tables at 80 columns, quiet progress when piped)."""

from __future__ import annotations

import json
import sys

import pytest
from typer.testing import CliRunner

from culturebench.cli import app

pytestmark = pytest.mark.unit

runner = CliRunner()


def cli(*args: str, width: int = 80) -> tuple[int, str]:
    result = runner.invoke(app, [str(a) for a in args], terminal_width=width)
    return result.exit_code, result.output + (result.stderr if result.stderr_bytes else "")


RUN = ["eval", "run", "borsch", "--task", "origin-qa", "--model", "m", "--local", "nowhere"]


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--batch-size", "0"], "--batch-size"),
        (["--concurrency", "0"], "--concurrency"),
        (["--max-new-tokens", "0"], "--max-new-tokens"),
        (["--temperature", "nan"], "--temperature"),
        (["--temperature", "inf"], "not a finite number"),
        (["--temperature", "-1"], "--temperature"),
        (["--limit", "0"], "--limit"),
    ],
)
def test_numeric_options_are_bounded(extra: list[str], needle: str) -> None:
    code, output = cli(*RUN, *extra)
    assert code == 2 and needle in output, output
    assert "Traceback" not in output


@pytest.mark.parametrize(
    ("size", "needle"),
    [
        ("63x65", "multiples of 8"),
        ("100000x100000", "8 to 4096 pixels"),
        ("4x4", "8 to 4096 pixels"),
        ("big", "expected WIDTHxHEIGHT"),
    ],
)
def test_image_sizes_are_bounded(size: str, needle: str, tmp_path) -> None:
    code, output = cli(
        "eval", "run", "wwd", "--task", "t2i-generate", "--backend", "diffusers", "--model", tmp_path,
        "--size", size, "--out", tmp_path / "r",
    )  # fmt: skip
    assert code == 2 and needle in " ".join(output.split()), output
    assert not (tmp_path / "r").exists()


def test_check_urls_options_are_bounded(tmp_path) -> None:
    for extra in (["--concurrency", "0"], ["--timeout", "nan"], ["--per-host", "0"], ["--delay", "-1"]):
        code, output = cli("check-urls", tmp_path, *extra)
        assert code == 2 and extra[0] in output, output


def test_a_missing_engine_names_its_extra(monkeypatch, tmp_path) -> None:
    monkeypatch.setitem(sys.modules, "diffusers", None)  # as if not installed
    code, output = cli(
        "eval", "run", "wwd", "--task", "t2i-generate", "--backend", "diffusers", "--model", tmp_path,
        "--out", tmp_path / "r",
    )  # fmt: skip
    flat = " ".join(output.split())
    assert code == 2 and "needs diffusers, which is not installed: pip install 'culturebench[eval]'" in flat
    if "vllm" not in sys.modules:
        monkeypatch.setitem(sys.modules, "vllm", None)
    code, output = cli(*RUN, "--backend", "vllm")
    assert code == 2 and "pip install 'culturebench[gpu]'" in " ".join(output.split()), output


def test_error_text_with_brackets_is_printed_as_written(tmp_path) -> None:
    """Rich markup used to eat ``[gpu]`` or ``[0, 1]`` out of error messages."""
    code, output = cli(
        "eval", "run", "borsch", "--task", "origin-qa", "--model", "m", "--repeat-seeds", "[0,1]"
    )
    assert code == 2 and "--repeat-seeds '[0,1]'" in output, output


def test_eval_list_fits_80_columns() -> None:
    code, output = cli("eval", "list", width=80)
    assert code == 0
    assert max(len(line) for line in output.splitlines()) <= 80
    assert "clip-descriptors" in output and "descriptions: culturebench eval list --long" in output
    code, output = cli("eval", "list", "--long", width=80)
    assert "wwd/clip-descriptors: App. G.1" in " ".join(output.split())


def test_release_dry_run_fits_80_columns(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # the release builds into ./dist
    code, output = cli("release", "ash", "--version", "1.0.0", "--to", f"git:{tmp_path / 'm'}", "--dry-run")
    assert code == 0, output
    assert max(len(line) for line in output.splitlines()) <= 80, output
    assert "data/default/test-00000-of-00001.parquet" in output and "dry run: nothing was uploaded" in output


# ---------------------------------------------------------------------- second probe (issue 25)
def _release_copy(tmp_path, name: str = "ash"):
    import shutil

    from culturebench.builders import get_builder

    folder = get_builder(name).build(out_root=tmp_path / "dist").folder
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    return copy


def test_damaged_release_files_are_one_line(tmp_path) -> None:
    copy = _release_copy(tmp_path)
    (copy / "build_report.json").write_text('{"broken', encoding="utf-8")
    code, output = cli("card", copy)
    assert code == 2 and "build_report.json, row 1: not valid JSON" in output, output
    for content in (b"[1, 2]", "\ufeff".encode("utf-16") + b"{"):
        (copy / "manifest.json").write_bytes(content)
        for args in (["card", copy], ["check-urls", copy, "--report", tmp_path / "rep"], ["validate", copy]):
            code, output = cli(*args)
            assert code in (1, 2) and "manifest.json" in output, (args, output)
            assert "unexpected" not in output and "Traceback" not in output, output


def test_a_truncated_data_file_is_one_line(tmp_path) -> None:
    copy = _release_copy(tmp_path)
    data = next((copy / "data").rglob("*.parquet"))
    data.write_bytes(data.read_bytes()[:200])
    code, output = cli("eval", "run", "ash", "--task", "generate", "--model", "m", "--local", copy,
                       "--out", tmp_path / "r")  # fmt: skip
    flat = " ".join(output.split())
    assert code == 2 and data.name in flat and "differs from the one manifest.json records" in flat
    assert not (tmp_path / "r").exists()
    # read as it is (--trust-local), the damaged file is still one line
    code, output = cli("eval", "run", "ash", "--task", "generate", "--model", "m", "--local", copy,
                       "--trust-local", "--out", tmp_path / "r")  # fmt: skip
    flat = " ".join(output.split())
    assert code == 2 and "cannot read config 'default' (test)" in flat and "culturebench validate" in flat
    assert not (tmp_path / "r").exists()


def test_paths_under_a_file_and_huge_seeds(tmp_path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x", encoding="utf-8")
    for args in (
        ["build", "ash", "--out", afile / "dist"],
        ["eval", "run", "borsch", "--task", "origin-qa", "--model", "m", "--out", afile / "r"],
        ["eval", "paper", "rubin", "--out", afile / "p"],
        ["eval", "tiny-model", afile / "t"],
    ):
        code, output = cli(*args)
        assert code == 2 and str(afile) in " ".join(output.split()), (args, output)
        assert "unexpected" not in output, output
    for args in (RUN, ["eval", "tiny-model", tmp_path / "t"]):
        code, output = cli(*args, "--seed", str(2**40))
        assert code == 2 and "--seed" in output, output


def test_results_with_a_non_object_metrics_field(tmp_path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    prov = {"dataset": {"dataset": "ash"}, "task": "generate"}
    (folder / "results.json").write_text(json.dumps({"provenance": prov, "metrics": "x"}), encoding="utf-8")
    code, output = cli("eval", "report", folder, "--out", tmp_path / "r.md")
    assert code == 2 and "not a culturebench results file" in output, output


def test_a_damaged_manifest_field_is_named(tmp_path) -> None:
    copy = _release_copy(tmp_path)
    manifest = json.loads((copy / "manifest.json").read_text(encoding="utf-8"))
    for key, value in (("files", "x"), ("configs", [1]), ("version", 123)):
        (copy / "manifest.json").write_text(json.dumps({**manifest, key: value}), encoding="utf-8")
        code, output = cli("card", copy)
        assert code == 2 and "damaged manifest" in output and key in output, output


def test_a_dry_run_refuses_a_target_the_release_would_refuse(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "notarepo"
    target.mkdir()
    (target / "mine.txt").write_text("x", encoding="utf-8")
    for extra in (["--dry-run"], []):
        code, output = cli("release", "ash", "--version", "1.0.0", "--to", f"git:{target}", *extra)
        assert (
            code == 3 and "release refused" in output and "not a git repository" in " ".join(output.split())
        )
    assert sorted(p.name for p in target.iterdir()) == ["mine.txt"]


@pytest.mark.integration
def test_a_csv_cut_mid_row_is_refused(upstream_wwd, tmp_path) -> None:
    reviews = upstream_wwd / "community_review" / "Community_Review_Generated_Dish_Images.csv"
    text = reviews.read_text(encoding="utf-8")
    cut = tmp_path / "cut.csv"
    cut.write_text(text[: text.rindex("\n", 0, len(text) - 1) + 40], encoding="utf-8")
    code, output = cli("eval", "wwd-community-review", cut, "--out", tmp_path / "o")
    assert code == 2 and "the file may be cut short" in " ".join(output.split()), output
    assert not (tmp_path / "o").exists()
