"""`culturebench eval paper`: which model a run is. A run is matched to the paper's model rows
by its model id, revision and weights sha256 (``models:`` aliases of paper.yaml); each model
with runs is its own column beside the printed ones; two runs of one task and one model with
the same options are an error naming both folders."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from culturebench.cli import app
from culturebench.errors import CultureBenchError
from culturebench.eval.paper_report import PAPER, Context, ModelId, Run, build_report, load_runs
from culturebench.eval.runner import run_eval

pytestmark = pytest.mark.unit

WWD_LLM_TASKS = ("country", "time-of-day", "meal-type", "utensils", "ingredients", "description")


def _item(report: dict, ref: str) -> dict:
    return next(i for i in report["items"] if i["ref"] == ref)


def _columns(item: dict) -> list[tuple[str, str, str | None]]:
    return [(c["label"], c["source"], c["model"]) for c in item["table"]["columns"]]


def _weights(folder: Path, content: str) -> str:
    """A local model folder (its files are what weights_sha256 hashes)."""
    folder.mkdir(parents=True)
    (folder / "model.bin").write_text(content, encoding="utf-8")
    return str(folder)


# ------------------------------------------------------------------ identity and aliases
def _run(folder: str, task: str = "mcqa", **model: Any) -> Run:
    prov: dict[str, Any] = {"task": task, "model": {"backend": "transformers", **model}}
    if model.get("backend") == "recorded":
        prov["layout"] = model.pop("layout", None)
        prov["model"] = model
    return Run.from_results(Path(folder), {"provenance": prov, "metrics": {}})


def _context(runs: list[Run], models: dict[str, list[Any]]) -> Context:
    return Context("rubin", runs, {"models": models}, Path("."), lambda c: [], None)


def test_a_run_is_matched_by_id_revision_and_weights_sha256() -> None:
    """A string alias matches the last path part of the id; a mapping alias also pins the
    revision or the weights' sha256; recorded outputs match by their `eval score` layout."""
    models = {
        "Pinned": [{"model": "own-model", "revision": "abc"}],
        "Weights": [{"weights_sha256": "f" * 64}],
        "Plain": ["org/plain-7B-Instruct"],
        "GPT 3.5": [{"layout": "wwd-probing"}],
    }
    runs = {
        "pinned": _run("a", model="me/own-model", model_revision="abc"),
        "other revision": _run("b", model="me/own-model", model_revision="def"),
        "weights": _run("c", model="/models/anything", weights_sha256="f" * 64),
        "plain": _run("d", model="elsewhere/plain-7B-Instruct"),
        "recorded": _run("e", backend="recorded", model="x.csv", layout="wwd-probing"),
        "recorded elsewhere": _run("f", backend="recorded", model="x.csv", layout="other"),
    }
    ctx = _context(list(runs.values()), models)
    names = {k: ctx.paper_model(r) for k, r in runs.items()}
    assert names == {
        "pinned": "Pinned",
        "other revision": None,
        "weights": "Weights",
        "plain": "Plain",
        "recorded": "GPT 3.5",
        "recorded elsewhere": None,
    }
    assert ctx.printed({"Pinned": {"acc": 1}}, runs["pinned"]) == {"acc": 1}
    assert ctx.printed({"Pinned": {"acc": 1}}, runs["other revision"]) is None
    with pytest.raises(CultureBenchError, match="neither a Hub id nor a mapping"):
        _context([], {"Bad": [{"sha": "x"}]}).paper_model(runs["plain"])


def test_labels_tell_two_models_of_one_name_apart() -> None:
    """The same weights at two paths are one model; two different folders named `tiny` get a
    short sha each; two Hub ids of one name get their full id; a paper name wins."""
    a = _run("r1", model="/x/tiny", weights_sha256="a" * 64)
    a_moved = _run("r2", task="mcqa-easy", model="/y/tiny", weights_sha256="a" * 64)
    b = _run("r3", model="/z/tiny", weights_sha256="b" * 64)
    hub1, hub2 = _run("r4", model="me/own-model"), _run("r5", model="you/own-model")
    ctx = _context([a, a_moved, b, hub1, hub2], {})
    assert a.identity.key == a_moved.identity.key != b.identity.key
    assert [ctx.model_label(r) for r in (a, a_moved, b, hub1, hub2)] == [
        "tiny (aaaaaaaa)",
        "tiny (aaaaaaaa)",
        "tiny (bbbbbbbb)",
        "own-model (me/own-model)",
        "own-model (you/own-model)",
    ]
    assert list(ctx.runs_by_model("mcqa", "mcqa-easy")) == [
        "tiny (aaaaaaaa)",
        "tiny (bbbbbbbb)",
        "own-model (me/own-model)",
        "own-model (you/own-model)",
    ]
    assert ctx.runs_by_model("mcqa", "mcqa-easy")["tiny (aaaaaaaa)"] == [a, a_moved]
    assert ModelId("org/m", revision="r1").key != ModelId("org/m", revision="r2").key


# ------------------------------------------------------------------ duplicates
def test_two_runs_of_one_task_and_model_are_an_error_naming_both(
    rubin_release, scripted_backend, tmp_path: Path
) -> None:
    local = str(rubin_release.folder)
    backend = scripted_backend("<answer>A</answer>", model="my/own-model")
    run_eval("rubin", "mcqa", backend, tmp_path / "a", local=local)
    run_eval("rubin", "mcqa", backend, tmp_path / "b", local=local, limit=5)  # fewer rows: same cell
    run_eval("rubin", "mcqa-easy", backend, tmp_path / "easy", local=local)
    other = scripted_backend("<answer>B</answer>", model="your/other-model")
    run_eval("rubin", "mcqa", other, tmp_path / "c", local=local)
    folders = [tmp_path / "a", tmp_path / "easy", tmp_path / "c", tmp_path / "b"]
    with pytest.raises(CultureBenchError) as info:
        load_runs(folders, "rubin")
    message = str(info.value)
    assert f"{tmp_path / 'a'} and {tmp_path / 'b'} are both rubin/mcqa of model own-model" in message
    assert "give one" in message
    load_runs(folders[:3], "rubin")  # another task, another model: no duplicate
    result = CliRunner().invoke(
        app, ["eval", "paper", "rubin", *map(str, folders), "--local", local, "--out", str(tmp_path / "r")]
    )
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) <= 2, result.output
    assert str(tmp_path / "b") in result.output.replace("\n", "")
    assert not (tmp_path / "r").exists()


@pytest.mark.integration
def test_runs_that_differ_in_an_option_or_language_are_not_duplicates(
    borsch_release, scripted_backend, tmp_path: Path
) -> None:
    local = str(borsch_release.folder)
    backend = scripted_backend("Россия", model="my/own-model")
    for lang in ("ru", "uk"):
        run_eval("borsch", "origin-qa", backend, tmp_path / lang, local=local, langs=[lang], limit=3)
    runs = load_runs([tmp_path / "ru", tmp_path / "uk"], "borsch")
    assert [r.setup["languages"] for r in runs] == [["ru"], ["uk"]]
    ctx = Context("borsch", runs, {}, tmp_path, lambda c: [], None)
    assert list(ctx.runs_by_model("origin-qa")) == ["own-model"]  # one model, both runs
    assert list(ctx.columns(runs)) == ["own-model [languages=ru]", "own-model [languages=uk]"]


# ------------------------------------------------------------------ side by side
def test_each_model_is_its_own_column_beside_the_printed_ones(
    rubin_release, scripted_backend, tmp_path: Path
) -> None:
    """RuBIN Table 3: the 24 printed models, then one column per model that has runs; only the
    run whose model is a printed one (by an alias) is compared with a printed row."""
    local = str(rubin_release.folder)
    yandex = scripted_backend("<answer>A</answer>", model="yandex/YandexGPT-5-Lite-8B-instruct")
    run_eval("rubin", "mcqa", yandex, tmp_path / "y", local=local)
    tiny_a = scripted_backend("<answer>B</answer>", model=_weights(tmp_path / "m1" / "tiny", "one"))
    tiny_b = scripted_backend("<answer>C</answer>", model=_weights(tmp_path / "m2" / "tiny", "two"))
    run_eval("rubin", "mcqa", tiny_a, tmp_path / "ta", local=local)
    run_eval("rubin", "mcqa", tiny_b, tmp_path / "tb", local=local)
    report = build_report(
        "rubin", [tmp_path / "y", tmp_path / "ta", tmp_path / "tb"], tmp_path / "r", local=local
    )
    t3 = _item(report, "Table 3")
    printed = json.loads(json.dumps(t3["table"]["columns"][:24]))
    assert [c["source"] for c in printed] == [PAPER] * 24 and printed[0]["label"] == "Qwen2-0.5B"
    ours = _columns(t3)[24:]
    labels = [label for label, _, _ in ours]
    assert labels[0] == "YandexGPT-8B" and ours[0][1:] == ("ours", "YandexGPT-8B")
    assert labels[1].startswith("tiny (") and labels[2].startswith("tiny (") and labels[1] != labels[2]
    assert ours[1][2] is None and ours[2][2] is None  # not a model the paper prints
    rows = {r["label"]: r for r in t3["rows"]}
    assert rows["YandexGPT-8B: Acc."]["paper"] == 59.94
    assert rows[f"{labels[1]}: Acc."]["paper"] is None and rows[f"{labels[2]}: Acc."]["paper"] is None
    column = t3["table"]["columns"][25]
    assert column["cells"]["Acc."] == pytest.approx(rows[f"{labels[1]}: Acc."]["ours"])
    assert column["runs"] == [str(tmp_path / "ta")]
    assert t3["table"]["columns"][17]["cells"]["Acc."] == 59.94  # the printed YandexGPT-8B
    markdown = (tmp_path / "r" / "paper_report.md").read_text(encoding="utf-8")
    assert "| YandexGPT-8B | paper | 59.94 | 63.83 | 3.89 | 0.06 |" in markdown
    assert f"| {labels[1]} | ours |" in markdown
    t5 = _item(report, "Table 5")  # the paper prints YandexGPT-8B only
    assert _columns(t5)[0] == ("YandexGPT-8B", PAPER, "YandexGPT-8B")
    assert {r["label"]: r["paper"] for r in t5["rows"]}[f"{labels[1]}: A"] is None


# ------------------------------------------------------------------ WWD Tables H.9 / H.10
@pytest.fixture(scope="module")
def wwd_runs(wwd_release, scripted_backend, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The six LLM tasks for a local model `tiny` and for `gpt-3.5-turbo` (the paper's GPT 3.5)."""
    tmp = tmp_path_factory.mktemp("wwd-models")
    local = str(wwd_release.folder)
    answers = {
        "tiny": "['lunch'] I'm sorry, I don't know this dish. Nigeria",
        "gpt": "['dinner', 'Fork'] Kenya",
    }
    models = {"tiny": _weights(tmp / "weights" / "tiny", "tiny"), "gpt": "openai/gpt-3.5-turbo"}
    folders: dict[str, list[Path]] = {}
    for name, model in models.items():
        backend = scripted_backend(answers[name], model=model)
        for task in WWD_LLM_TASKS:
            run_eval("wwd", task, backend, tmp / name / task, local=local, limit=12)
        folders[name] = [tmp / name / task for task in WWD_LLM_TASKS]
    return {"folders": folders, "tmp": tmp, "local": local}


@pytest.mark.integration
def test_wwd_h9_sets_a_local_model_beside_the_three_printed_models(wwd_runs) -> None:
    tmp, folders = wwd_runs["tmp"], wwd_runs["folders"]
    report = build_report("wwd", folders["tiny"], tmp / "r-tiny", local=wwd_runs["local"])
    h9 = _item(report, "Table H.9")
    assert _columns(h9) == [
        ("GPT 3.5", PAPER, "GPT 3.5"),
        ("Llama 3-8B", PAPER, "Llama 3-8B"),
        ("Llama 3-70B", PAPER, "Llama 3-70B"),
        ("tiny", "ours", None),
    ]
    gpt, llama8, _llama70, tiny = h9["table"]["columns"]
    assert (gpt["cells"]["Country: Africa"], gpt["pm"]["Country: Africa"]) == (61.0, 1.0)
    assert llama8["cells"]["Ingredients: Oceania"] == 27.2 and gpt["cells"]["Dish count: Africa"] == 512
    results = json.loads((folders["tiny"][0] / "results.json").read_text(encoding="utf-8"))
    per = results["metrics"]["en"]["per_continent"]
    for continent, block in per.items():
        assert tiny["cells"][f"Country: {continent}"] == pytest.approx(100 * block["mean"])
        assert tiny["cells"][f"Dish count: {continent}"] == block["n"]  # one seed: one answer per dish
    tod = json.loads((folders["tiny"][1] / "results.json").read_text(encoding="utf-8"))
    block = tod["metrics"]["en"]["per_continent"]["Africa"]
    assert block["mean"] > 0 and tiny["cells"]["Time of day: Africa"] == pytest.approx(100 * block["mean"])
    n = block["n"]  # the ± as printed: the SD with divisor n over √n
    assert tiny["pm"]["Time of day: Africa"] == pytest.approx(100 * block["sem"] * ((n - 1) / n) ** 0.5)
    assert h9["status"] == "computed"  # tiny is none of the paper's models
    assert all(r["label"].startswith("tiny: ") and r["paper"] is None for r in h9["rows"])
    h10 = _item(report, "Table H.10")
    assert [c[0] for c in _columns(h10)] == ["GPT 3.5", "Llama 3-8B", "Llama 3-70B", "tiny"]
    assert h10["table"]["columns"][2]["cells"]['"Not a real dish": Europe'] == 3.45
    assert h10["table"]["columns"][3]["cells"]['"I apologize": Africa'] == 100.0  # "I'm sorry" every time
    markdown = (tmp / "r-tiny" / "paper_report.md").read_text(encoding="utf-8")
    assert "| | GPT 3.5 (paper) | Llama 3-8B (paper) | Llama 3-70B (paper) | tiny (ours) |" in markdown
    assert "| Country: Africa | 61.0 ± 1.0 | 45.2 ± 1.0 | 50.2 ± 2.2 |" in markdown


@pytest.mark.integration
def test_wwd_h9_groups_runs_by_model_and_compares_only_gpt35(wwd_runs) -> None:
    """Runs of two models: one column each (no run of one task overwrites another's); the
    authors' stats file (GPT 3.5's) is set beside the GPT 3.5 run only."""
    tmp, folders = wwd_runs["tmp"], wwd_runs["folders"]
    stats = tmp / "stats.csv"
    stats.write_text(",Africa,Asia\ncountry_acc,0.61,0.96\n", encoding="utf-8")
    report = build_report(
        "wwd",
        [*folders["gpt"], *folders["tiny"]],
        tmp / "r-two",
        local=wwd_runs["local"],
        inputs={"h9": stats},
    )
    h9 = _item(report, "Table H.9")
    assert [c[:2] for c in _columns(h9)][3:] == [("GPT 3.5", "ours"), ("tiny", "ours")]
    assert h9["table"]["columns"][3]["model"] == "GPT 3.5"
    assert h9["status"].startswith("computed, differs by")  # 12 scripted dishes are not the print
    rows = {r["label"]: r for r in h9["rows"]}
    africa = [k for k in rows if k.endswith("Country: Africa")]
    assert sorted(africa) == ["GPT 3.5: Country: Africa", "tiny: Country: Africa"]
    # the paper column is the print (GPT 3.5 only); the stats file stands in the note
    assert rows["GPT 3.5: Country: Africa"]["paper"] == 61.0
    assert "authors' stats file: 61.0" in rows["GPT 3.5: Country: Africa"]["note"]
    assert rows["tiny: Country: Africa"]["paper"] is None
    assert "stats file" not in rows["tiny: Country: Africa"]["note"]
    gpt_country = json.loads((folders["gpt"][0] / "results.json").read_text(encoding="utf-8"))
    tiny_country = json.loads((folders["tiny"][0] / "results.json").read_text(encoding="utf-8"))
    for label, results in (("GPT 3.5", gpt_country), ("tiny", tiny_country)):
        mean = results["metrics"]["en"]["per_continent"]["Africa"]["mean"]
        assert rows[f"{label}: Country: Africa"]["ours"] == pytest.approx(100 * mean)
    assert {k["label"] for k in report["runs"]} == {"GPT 3.5", "tiny"}


@pytest.mark.integration
def test_a_pinned_alias_in_the_catalogue(monkeypatch, wwd_runs) -> None:
    """An alias that pins the weights' sha256 makes the local `tiny` the paper's Llama 3-8B."""
    from culturebench.cards import paper as cards_paper

    tmp, folders = wwd_runs["tmp"], wwd_runs["folders"]
    sha = json.loads((folders["tiny"][0] / "results.json").read_text())["provenance"]["model"][
        "weights_sha256"
    ]
    real = cards_paper.read_catalogue

    def edited(folder):
        data = copy.deepcopy(real(folder))
        if data and "table_h9" in (data.get("results") or {}):
            data["models"]["Llama 3-8B"].append({"weights_sha256": sha})
        return data

    monkeypatch.setattr(cards_paper, "read_catalogue", edited)
    report = build_report("wwd", folders["tiny"], tmp / "r-pinned", local=wwd_runs["local"])
    h9 = _item(report, "Table H.9")
    assert _columns(h9)[3] == ("Llama 3-8B", "ours", "Llama 3-8B")
    assert h9["status"].startswith("computed, differs by") and h9["cells_compared"]
