"""What a newcomer reads (issue 41, items 3c, 4 and 8): releases made from content, not
paths; analyses with no input rows fail naming what is missing; every CLI table fits 80
columns with plain values."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from culturebench.cli import app
from culturebench.release import plan_release, publish_release
from culturebench.release.pipeline import same_content
from culturebench.release.targets import GitTarget

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parent.parent


def release_bytes(folder: Path) -> dict[str, bytes]:
    """Every file of a release folder, relative path -> bytes."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


# --------------------------------------------------------------------------- 4: content, not paths
@pytest.mark.integration
def test_rebuild_from_another_path_is_the_same_release(
    borsch_release, upstream_borsch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "elsewhere" / "borsch"
    shutil.copytree(upstream_borsch, copy)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    built = runner.invoke(app, ["build", "borsch", "--source", "elsewhere/borsch", "--out", "d2"])
    assert built.exit_code == 0, built.output
    first, second = release_bytes(borsch_release.folder), release_bytes(tmp_path / "d2" / "borsch" / "1.0.0")
    assert sorted(first) == sorted(second)
    for name, data in first.items():
        assert data == second[name], f"{name} differs between builds of the same bytes"
    for data in (*first.values(), *second.values()):  # no local path in any file a release holds
        for path in (str(upstream_borsch), str(copy), "elsewhere/borsch", str(tmp_path)):
            assert path.encode() not in data
    source = json.loads(first["manifest.json"])["source"]
    assert source["kind"] == "upstream" and "origin" not in source
    assert all(set(f) == {"file", "sha256", "size", "pinned_sha256", "matches_pin", "user_supplied"}
               for f in source["files"].values())  # fmt: skip

    target = GitTarget(tmp_path / "repo")  # v1.0.0 published from the first build ...
    shutil.copytree(borsch_release.folder, tmp_path / "d1" / "borsch" / "1.0.0")
    publish_release(plan_release("borsch", "1.0.0", target, out_root=tmp_path / "d1"), target)
    again = runner.invoke(app, ["release", "borsch", "--version", "1.0.0", "--to", f"git:{target.path}",
                                "--out", "d2"])  # fmt: skip
    assert again.exit_code == 0, again.output  # ... and the copy's build is the same release
    assert "nothing to do" in again.output


@pytest.mark.integration
def test_a_manifest_that_recorded_paths_is_the_same_release(borsch_release) -> None:
    """A release published before manifests left paths out is not 'different content'."""
    new = json.loads((borsch_release.folder / "manifest.json").read_text(encoding="utf-8"))
    old = json.loads(json.dumps(new))
    old["source"]["origin"] = "/home/someone/shared/upstream/borsch"
    old["source"]["kind"] = "shared"
    for _key, f in old["source"]["files"].items():
        f["origin"] = f"/home/someone/shared/upstream/borsch/{f['file']}"
    assert same_content(old, new)
    old["source"]["files"]["ru"]["sha256"] = "0" * 64
    assert not same_content(old, new)


# --------------------------------------------------------------------------- 3c: no input rows
def write_count(
    folder: Path, config: str, lang: str, dish_ids: list[str], names: dict[str, list[str]]
) -> Path:
    """A small corpus-count folder (count.json, mentions and dishes tables) of ``dish_ids``;
    ``names``: per name language the dishes' names (an empty mentions table when none)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True)
    (folder / "count.json").write_text(json.dumps({"corpus_lang": lang, "config": config}), encoding="utf-8")
    mentions = [
        {"dish_id": d, "name_lang": name_lang, "name": name, "occurrences": 3, "documents": 2}
        for name_lang, listed in names.items()
        for d, name in zip(dish_ids, listed, strict=True)
    ]
    schema = pa.schema([("dish_id", pa.string()), ("name_lang", pa.string()), ("name", pa.string()),
                        ("occurrences", pa.int64()), ("documents", pa.int64())])  # fmt: skip
    pq.write_table(pa.Table.from_pylist(mentions, schema=schema), folder / "mentions.parquet")
    dishes = [{"dish_id": d, "correct_cooccurrence": 2, "correct_ratio": 0.5} for d in dish_ids]
    schema = pa.schema([("dish_id", pa.string()), ("correct_cooccurrence", pa.int64()),
                        ("correct_ratio", pa.float64())])  # fmt: skip
    pq.write_table(pa.Table.from_pylist(dishes, schema=schema), folder / "dishes.parquet")
    return folder


@pytest.fixture(scope="module")
def ru_qa_run(borsch_release, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An origin-qa run of config ru (dish ids ru-N), 6 dishes."""
    from culturebench.eval.runner import run_eval

    from .scripted_backend import ScriptedBackend

    out = tmp_path_factory.mktemp("qa") / "qa-ru"
    run_eval("borsch", "origin-qa", ScriptedBackend("Россия."), out, local=str(borsch_release.folder),
             langs=["ru"], limit=6, first=True, task_options={"config": "ru"})  # fmt: skip
    return out


@pytest.mark.integration
def test_cooccurrence_over_a_run_of_another_config_is_an_error(ru_qa_run: Path, tmp_path: Path) -> None:
    parallel = [f"par-ru{k}-uk{k}" for k in range(1, 9)]
    names = {"ru": [f"БЛЮДО{k}" for k in range(8)], "uk": [f"СТРАВА{k}" for k in range(8)]}
    count = write_count(tmp_path / "count", "parallel", "ru", parallel, names)
    out = tmp_path / "co.json"
    result = CliRunner().invoke(
        app, ["corpus", "cooccurrence", str(count), "--qa", str(ru_qa_run), "--out", str(out)]
    )
    assert result.exit_code == 2, result.output
    line = " ".join(result.output.split())
    assert "none of its 6 scored dishes (config ru)" in line and "config parallel" in line, line
    assert "Traceback" not in result.output and not out.exists()
    mixing = CliRunner().invoke(app, ["corpus", "code-mixing", str(count), "--qa", str(ru_qa_run)])
    assert mixing.exit_code == 2 and "none of its 6 scored dishes (config ru)" in " ".join(
        mixing.output.split()
    )


def test_code_mixing_of_a_count_without_two_names_is_an_error(tmp_path: Path) -> None:
    count = write_count(tmp_path / "count", "ru", "ru", ["ru-1", "ru-2"], {"ru": ["БОРЩ", "ЩИ"]})
    result = CliRunner().invoke(app, ["corpus", "code-mixing", str(count)])
    assert result.exit_code == 2, result.output
    line = " ".join(result.output.split())
    assert "no dish has both a ru and a uk name" in line and "config ru" in line, line


def test_captions_and_annotations_without_rows_are_errors(tmp_path: Path) -> None:
    count = write_count(tmp_path / "count", "parallel", "ru", ["par-ru1-uk1"], {})
    captions = CliRunner().invoke(app, ["corpus", "captions", str(count)])
    assert captions.exit_code == 2 and "mentions table has no rows" in " ".join(captions.output.split())
    empty = tmp_path / "uk.csv"
    empty.write_text("id,language,category\n", encoding="utf-8")
    annotations = CliRunner().invoke(app, ["corpus", "annotations", str(empty)])
    assert annotations.exit_code == 2, annotations.output
    assert "uk.csv: no annotated rows" in " ".join(annotations.output.split())


# --------------------------------------------------------------------------- 8: 80 columns
def wide_lines(output: str, width: int = 80) -> list[str]:
    """The lines of ``output`` wider than ``width``."""
    return [line for line in output.splitlines() if len(line) > width]


def cut(output: str) -> list[str]:
    """Cells cut short by rich (a word or number ending in an ellipsis)."""
    import re

    return re.findall(r"\S*[\w,.]…", output)


@pytest.mark.integration
def test_plan_table_fits_80_columns_with_whole_numbers(borsch_release, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["eval", "reproduce", "borsch", "--model", "/tmp/tiny", "--plan",
         "--local", str(borsch_release.folder), "--out", str(tmp_path / "plan")],
        terminal_width=80, env={"COLUMNS": "80"},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert not wide_lines(result.output), wide_lines(result.output)
    assert not cut(result.output), cut(result.output)
    plan = json.loads((tmp_path / "plan" / "plan.json").read_text(encoding="utf-8"))
    for cell in plan["cells"]:  # every cell's name and numbers are printed whole
        line = next(line for line in result.output.splitlines() if line.split()[:1] == [cell["cell"]])
        if cell["generations"] is not None:
            assert f"{cell['generations']:,}" in line.split(), line
        if cell["units"] is not None:
            assert f"{cell['units']:,}" in line.split(), line
    total = next(line for line in result.output.splitlines() if line.startswith("total"))
    assert f"{plan['total']['generations']:,}" in total.split()


@pytest.mark.parametrize("args", [["list"], ["eval", "list"], ["eval", "backends"], ["info", "borsch"]])
def test_tables_fit_80_columns_and_never_break_a_word(args: list[str]) -> None:
    result = CliRunner().invoke(app, args, terminal_width=80, env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert not wide_lines(result.output), wide_lines(result.output)
    assert not cut(result.output), cut(result.output)
    if args == ["list"]:
        for word in ("multi_image,", "single_image,", "country_split", "cc-by-nc-nd-4.0", "built-in"):
            assert word in result.output.split(), word
    if args == ["eval", "list"]:
        for word in ("model_revision,", "description-correlations", "generations,"):
            assert word in result.output.split(), word


def test_breakdown_counts_are_integers_and_ids_sort_naturally() -> None:
    from culturebench.cli.output import console, print_breakdown

    rows = {f"Q{k}": {"n": 8.0, "accuracy": 0.5} for k in (1, 10, 11, 2, 3)}
    with console.capture() as captured:
        print_breakdown("per question", rows)
    text = captured.get()
    labels = [line.split()[0] for line in text.splitlines() if line.strip().startswith("Q")]
    assert labels == ["Q1", "Q2", "Q3", "Q10", "Q11"]
    assert "8.00" not in text and "8.000" not in text and " 8 " in text + " "
    assert "None" not in text


@pytest.mark.e2e
def test_a_run_report_prints_values_as_people_write_them(
    wwd_release, tiny_model: Path, tmp_path: Path
) -> None:
    """report.md's provenance: no Python None or dict reprs (a model without a pinned revision
    says so; the sampling is `key value` pairs)."""
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        ["eval", "run", "wwd", "--task", "country", "--local", str(wwd_release.folder),
         "--model", str(tiny_model), "--limit", "1", "--max-new-tokens", "4", "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = (out / "report.md").read_text(encoding="utf-8")
    provenance = report.split("### Provenance", 1)[1]
    assert "model revision: not pinned" in provenance
    assert "None" not in provenance and "{" not in provenance, provenance
    assert "- sampling: max_new_tokens 4" in provenance, provenance
