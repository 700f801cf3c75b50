"""`culturebench eval paper`: every item of a paper's catalogue, computed from runs and the
release beside the paper's number; numbers checked by hand on scripted runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from culturebench.builders import get_builder
from culturebench.cli import app
from culturebench.eval.runner import run_eval


@pytest.fixture(scope="module")
def rubin_release(tmp_path_factory: pytest.TempPathFactory):
    return get_builder("rubin").build(out_root=tmp_path_factory.mktemp("rubin"))


def _rows(release, config: str) -> list[dict]:
    import pyarrow.parquet as pq

    return pq.read_table(next((release.folder / "data" / config).glob("*.parquet"))).to_pylist()


def _item(report: dict, ref: str) -> dict:
    return next(i for i in report["items"] if i["ref"] == ref)


def _row(item: dict, label: str) -> dict:
    return next(r for r in item["rows"] if r["label"] == label)


def test_rubin_tables_from_runs_beside_the_papers_numbers(
    rubin_release, scripted_backend, tmp_path: Path
) -> None:
    """A run whose model the paper names is set beside the printed row: always answering A
    gives accuracy = share of questions whose answer is A, every wrong answer in slot A."""
    from culturebench.eval.paper_report import build_report

    local = str(rubin_release.folder)
    model = "yandex/YandexGPT-5-Lite-8B-instruct"  # the paper's YandexGPT-8B, by the aliases
    backend = scripted_backend("<answer>A</answer>", model=model)
    run_eval("rubin", "mcqa", backend, tmp_path / "full", local=local)
    run_eval("rubin", "mcqa_easy", backend, tmp_path / "easy", local=local)
    other = scripted_backend("не знаю", model="my/own-model")
    run_eval("rubin", "mcqa", other, tmp_path / "other", local=local)
    report = build_report(
        "rubin", [tmp_path / "full", tmp_path / "easy", tmp_path / "other"], tmp_path / "report", local=local
    )

    full, easy = _rows(rubin_release, "full"), _rows(rubin_release, "easy")
    acc = 100 * sum(r["label"] == 0 for r in full) / len(full)
    acc_e = 100 * sum(r["label"] == 0 for r in easy) / len(easy)
    t3 = _item(report, "Table 3")
    assert t3["status"] == "reproduced"
    row = _row(t3, "YandexGPT-8B: Acc.")
    assert row["ours"] == pytest.approx(acc) and row["paper"] == 59.94 and row["n"] == len(full)
    assert row["ci95"][0] <= acc <= row["ci95"][1]
    assert _row(t3, "YandexGPT-8B: Acc. E")["ours"] == pytest.approx(acc_e)
    delta = _row(t3, "YandexGPT-8B: Δ (E - full, pp)")
    assert delta["ours"] == pytest.approx(acc_e - acc) and delta["paper"] == 3.89
    assert delta["ci95"][0] <= acc_e - acc <= delta["ci95"][1]
    assert _row(t3, "YandexGPT-8B: NA")["ours"] == 0 and _row(t3, "own-model: NA")["ours"] == 100
    assert _row(t3, "own-model: Acc.")["paper"] is None  # a model the paper does not have
    t5 = _item(report, "Table 5")
    assert _row(t5, "YandexGPT-8B: A")["ours"] == 100 and _row(t5, "YandexGPT-8B: A")["paper"] == 48.1
    assert _row(t5, "YandexGPT-8B: B")["ours"] == 0
    t4 = _item(report, "Table 4")
    proverbs = [r for r in full if r["category"] == "Proverbs"]
    row = _row(t4, "YandexGPT-8B: Proverbs")
    assert (
        row["ours"] == pytest.approx(sum(r["label"] == 0 for r in proverbs) / len(proverbs))
        and row["paper"] == 0.67
    )
    assert (
        _row(t4, "size: Proverbs")["ours"] == len(proverbs)
        and "sample build" in _row(t4, "size: Proverbs")["note"]
    )
    assert _item(report, "Figure 4")["status"] == "not reproducible"
    assert (tmp_path / "report" / "figure5_accuracy_by_decade.png").stat().st_size > 0
    markdown = (tmp_path / "report" / "paper_report.md").read_text(encoding="utf-8")
    assert all(f"## {i['ref']}:" in markdown for i in report["items"])


def test_missing_runs_are_listed_not_skipped(rubin_release, scripted_backend, tmp_path: Path) -> None:
    from culturebench.eval.paper_report import build_report

    local = str(rubin_release.folder)
    run_eval("rubin", "mcqa_easy", scripted_backend("<answer>B</answer>"), tmp_path / "easy", local=local)
    report = build_report("rubin", [tmp_path / "easy"], tmp_path / "report")  # no release either
    assert (
        _item(report, "Table 5")["status"] == "missing inputs"
        and "`mcqa` runs" in _item(report, "Table 5")["missing"][0]
    )
    assert _item(report, "Table 3")["status"] == "computed"  # EASY alone
    assert _item(report, "Figure 2")["status"] == "missing inputs"  # needs the release


def test_cli_and_wrong_input(rubin_release, scripted_backend, tmp_path: Path) -> None:
    local = str(rubin_release.folder)
    run_eval("rubin", "mcqa", scripted_backend("<answer>C</answer>"), tmp_path / "run", local=local)
    runner = CliRunner()
    result = runner.invoke(
        app, ["eval", "paper", "rubin", str(tmp_path / "run"), "--local", local, "--out", str(tmp_path / "r")]
    )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "r" / "paper_report.json").read_text(encoding="utf-8"))
    assert sum(report["status_counts"].values()) == len(report["items"]) == 11
    for args in (
        ["eval", "paper", "rubin", str(tmp_path / "nothing"), "--out", str(tmp_path / "x")],
        ["eval", "paper", "nosuch", "--out", str(tmp_path / "x")],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and len(result.output.strip().splitlines()) <= 2, result.output


def test_every_catalogue_names_functions_that_exist() -> None:
    import yaml

    from culturebench import registry
    from culturebench.eval.paper_report import NOT_A_RESULT, NOT_REPRODUCIBLE

    checked = 0
    for entry in registry.datasets().values():
        if "paper" not in entry.code:
            continue
        module = entry.module("paper")
        for item in yaml.safe_load((entry.folder / "paper.yaml").read_text(encoding="utf-8"))["items"]:
            assert item.get("ref") and item.get("title"), item
            if "compute" in item:
                assert callable(getattr(module, item["compute"], None)), (entry.name, item)
            else:
                assert item["status"] in (NOT_A_RESULT, NOT_REPRODUCIBLE) and item.get("why"), (
                    entry.name,
                    item,
                )
            checked += 1
    assert checked >= 11
