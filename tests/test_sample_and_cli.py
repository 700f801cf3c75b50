"""The shipped sample (offline default without ../shared) and the CLI commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from openpyxl import load_workbook
from typer.testing import CliRunner

from culturebench.builders import get_builder, sources
from culturebench.cli import app
from culturebench.spec import load_spec

pytestmark = pytest.mark.unit

runner = CliRunner()


def sheet_rows(path: Path) -> int:
    return load_workbook(path, read_only=True).worksheets[0].max_row - 1


def test_default_source_falls_back_to_the_shipped_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sources, "_shared_candidates", lambda name: [])
    spec = load_spec("borsch")
    folder, kind = sources.default_source(spec)
    assert (folder, kind) == (spec.sample_dir, "sample")
    result = get_builder("borsch").build(out_root=tmp_path)
    assert result.manifest["sample"] is True
    counts = {c: i["splits"]["test"]["num_rows"] for c, i in result.manifest["configs"].items()}
    assert counts == {
        "ru": sheet_rows(spec.sample_dir / "RU_DATA.xlsx"),
        "uk": sheet_rows(spec.sample_dir / "UK_DATA.xlsx"),
        "parallel": sheet_rows(spec.sample_dir / "PARALLEL_RU_UK.xlsx"),
    }
    assert "SAMPLE build" in (result.folder / "README.md").read_text(encoding="utf-8")
    # The sample keeps real quirk rows, so the quirk handling runs offline too.
    assert {"empty_country_token", "duplicate_name", "mixed_script_name", "parallel_one_side"} <= set(
        result.log.counts()
    )


@pytest.mark.integration
def test_default_source_prefers_the_shared_snapshot(upstream_borsch: Path) -> None:
    folder, kind = sources.default_source(load_spec("borsch"))
    assert kind == "shared" and folder.resolve() == upstream_borsch.resolve()


def test_cli_list_and_info() -> None:
    listed = runner.invoke(app, ["list"], terminal_width=200)
    assert listed.exit_code == 0 and "borsch" in listed.output and "1.0.0" in listed.output
    info = runner.invoke(app, ["info", "borsch"], terminal_width=250)
    assert info.exit_code == 0
    assert "e697041065f09dcf120ffb7ba622b112f3611816" in info.output
    assert "6f88a16a3520e86a2bae46c7baf06663c84c36e26b626f6930913b2f46741da5" in info.output
    unknown = runner.invoke(app, ["info", "nosuch"])
    assert unknown.exit_code == 2 and "unknown dataset 'nosuch'" in unknown.output


@pytest.mark.integration
def test_cli_build_validate_card(upstream_borsch: Path, tmp_path: Path) -> None:
    out = tmp_path / "dist"
    built = runner.invoke(
        app, ["build", "borsch", "--source", str(upstream_borsch), "--out", str(out)], terminal_width=250
    )
    assert built.exit_code == 0, built.output
    assert "empty_country_token" in built.output
    assert "ru dishes per country of origin: RU 203, UA 112" in built.output
    folder = out / "borsch" / "1.0.0"
    before = {p.name: p.stat().st_mtime_ns for p in folder.rglob("*")}
    again = runner.invoke(app, ["build", "borsch", "--source", str(upstream_borsch), "--out", str(out)])
    assert again.exit_code == 0 and "is up to date" in " ".join(again.output.split())  # same build
    assert {p.name: p.stat().st_mtime_ns for p in folder.rglob("*")} == before
    other = runner.invoke(app, ["build", "borsch", "--out", str(out), "--source", "datasets/borsch/sample"])
    assert other.exit_code == 2 and "already exists, built from other sources" in other.output

    assert runner.invoke(app, ["card", str(folder), "--check"]).exit_code == 0
    card = folder / "README.md"
    card.write_text(card.read_text(encoding="utf-8").replace("## Usage", "## Use"), encoding="utf-8")
    stale = runner.invoke(app, ["card", str(folder), "--check"])
    assert stale.exit_code == 1 and "README.md" in stale.output
    assert runner.invoke(app, ["validate", str(folder), "--no-records"]).exit_code == 1
    fixed = runner.invoke(app, ["card", str(folder)])
    assert fixed.exit_code == 0 and "changed: README.md" in fixed.output
    assert "## Usage" in card.read_text(encoding="utf-8")
    assert runner.invoke(app, ["validate", str(folder), "--no-records"]).exit_code == 0
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["validation"]["status"] == "passed"


def test_cli_validate_missing_folder(tmp_path: Path) -> None:
    result = runner.invoke(app, ["validate", str(tmp_path / "nope")])
    assert result.exit_code == 2
