"""RuBIN: the shipped sample builds into `full`/`easy`, the paper's integrity filters run as
build exclusions and as validation, malformed records name their line and field, a release
from user-supplied files is published and loads with `load_dataset`, and the MCQA task runs on
the tiny local model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from culturebench.builders.base import get_builder
from culturebench.errors import SourceError
from culturebench.eval.multiple_choice import extract_letter
from culturebench.eval.runner import run_eval
from culturebench.spec import load_spec

pytestmark = pytest.mark.unit

SAMPLE = load_spec("rubin").sample_dir


def _user_copy(tmp_path: Path, edit=None) -> Path:
    """The sample as a user's own files (no SAMPLE.md), optionally with edited records."""
    folder = tmp_path / "rubin_src"
    folder.mkdir()
    lines = (SAMPLE / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    if edit:
        edit(records)
    (folder / "questions.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8"
    )
    shutil.copy(SAMPLE / "human_answers.csv", folder / "human_answers.csv")
    return folder


def test_sample_builds_full_and_easy(rubin_release) -> None:
    manifest, log = rubin_release.manifest, rubin_release.log
    assert manifest["sample"] is True
    assert rubin_release.report.ok
    rows = {c: manifest["configs"][c]["splits"]["test"]["num_rows"] for c in ("full", "easy")}
    assert rows["full"] == 68
    # easy = questions with >= 50% correct synthetic answers, recomputed here from the raw file
    import csv

    gold = {}
    for line in (SAMPLE / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        gold[rec["id"]] = rec["label"]
    votes: dict[str, list[bool]] = {}
    with open(SAMPLE / "human_answers.csv", encoding="utf-8") as handle:
        for rec in csv.DictReader(handle):
            votes.setdefault(rec["question_id"], []).append(rec["answer"] == gold[rec["question_id"]])
    expected_easy = sum(sum(v) / len(v) >= 0.5 for v in votes.values())
    assert rows["easy"] == expected_easy < 68
    assert log.stats["label_positions_full"] == {"A": 17, "B": 17, "C": 17, "D": 17}
    card = (rubin_release.folder / "README.md").read_text(encoding="utf-8")
    assert "SAMPLE build" in card


def test_sample_options_pass_the_paper_filters() -> None:
    from culturebench.datasets.rubin.filters import is_russian_text, option_problems

    for line in (SAMPLE / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        assert option_problems(rec["options"]) == [], rec["id"]
        assert is_russian_text(rec["question"])


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda r: r[2].update(options=r[2]["options"][:3]), "row 3, field 'options': 3 options"),
        (lambda r: r[4].update(options=[*r[4]["options"], "ещё"]), "row 5, field 'options': 5 options"),
        (lambda r: r[0].update(label="E"), "row 1, field 'label'"),
        (lambda r: r[1].update(year="1970-е"), "row 2, field 'year'"),
        (lambda r: r[3].update(id=r[2]["id"]), "row 4, field 'id'"),
    ],
)
def test_malformed_questions_name_line_and_field(tmp_path: Path, edit, needle: str) -> None:
    source = _user_copy(tmp_path, edit)
    with pytest.raises(SourceError) as err:
        get_builder("rubin").build(source=str(source), out_root=tmp_path / "dist")
    assert needle in str(err.value)
    assert not (tmp_path / "dist" / "rubin").exists() or not any((tmp_path / "dist" / "rubin").iterdir())


def test_content_filters_exclude_and_report(tmp_path: Path) -> None:
    def edit(records):
        records[0]["options"][1] = records[0]["options"][0].upper()  # duplicate after case folding
        records[1]["options"][2] = "  "  # empty slot
        records[2]["options"][3] = "fish from the pond"  # not Russian

    result = get_builder("rubin").build(source=str(_user_copy(tmp_path, edit)), out_root=tmp_path / "dist")
    counts = json.loads((result.folder / "build_report.json").read_text(encoding="utf-8"))["quirk_counts"]
    assert counts == {
        "excluded_duplicate_option": 1,
        "excluded_empty_option": 1,
        "excluded_non_russian_option": 1,
    }
    assert result.manifest["configs"]["full"]["splits"]["test"]["num_rows"] == 65
    assert result.manifest["source"]["files"]["questions"]["user_supplied"] is True


def test_validation_catches_a_hand_edited_release(rubin_release, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from culturebench.validation import validate_release

    folder = tmp_path / "edited"
    shutil.copytree(rubin_release.folder, folder)
    path = next((folder / "data" / "full").glob("*.parquet"))
    table = pq.read_table(path)
    options = table.column("options").to_pylist()
    options[5][1] = options[5][0]
    table = table.set_column(table.schema.get_field_index("options"), "options", [options])
    pq.write_table(table, path)
    report = validate_release(folder, croissant_records=False)
    checks = {f.check for f in report.errors}
    assert "cross:option_integrity" in checks


def test_user_supplied_release_publishes_and_loads(tmp_path: Path) -> None:
    from culturebench.release import plan_release, publish_release
    from culturebench.release.targets import GitTarget

    target = GitTarget(str(tmp_path / "hub" / "rubin"))
    plan = plan_release(
        "rubin", "1.0.0", target, source=str(_user_copy(tmp_path)), out_root=tmp_path / "dist"
    )
    result = publish_release(plan, target)
    assert result.plan.tag == "v1.0.0" and result.verified
    from datasets import load_dataset

    full = load_dataset(str(tmp_path / "hub" / "rubin"), "full", split="test")
    assert full.num_rows == 68
    assert full.features["label"].names == ["A", "B", "C", "D"]


def test_sample_release_is_refused(rubin_release, tmp_path: Path) -> None:
    from culturebench.release import plan_release
    from culturebench.release.pipeline import ReleaseRefused
    from culturebench.release.targets import GitTarget

    with pytest.raises(ReleaseRefused, match="sample"):
        plan_release(
            "rubin", "1.0.0", GitTarget(str(tmp_path / "t")), out_root=rubin_release.folder.parents[1]
        )


@pytest.mark.parametrize(
    ("output", "letter"),
    [
        ("<answer>C</answer>", "C"),
        ("<answer> (b) </answer> потому что", "B"),
        ("В", "B"),  # Cyrillic look-alike
        ("Ответ: D", "D"),
        ("D) он всё в лес смотрит", "D"),
        ("The answer is A.", "A"),
        ("答案为：图C", "C"),
        ("B)", "B"),
        ("Я думаю, что это вариант A или B", None),  # two letters, no statement: unparseable
        ("не знаю", None),
        ("", None),
    ],
)
def test_answer_letter_extraction_is_deterministic(output: str, letter: str | None) -> None:
    assert extract_letter(output) == letter


def test_metrics_accuracy_na_and_position_bias(rubin_release, scripted_backend, tmp_path: Path) -> None:
    ScriptedBackend = scripted_backend
    local = str(rubin_release.folder)
    results = run_eval("rubin", "mcqa", ScriptedBackend("<answer>A</answer>"), tmp_path / "a", local=local)
    m = results["metrics"]
    assert m["accuracy"] == pytest.approx(17 / 68) and m["na_rate"] == 0
    assert m["position_bias"]["wrong_picks"] == {"A": 51, "B": 0, "C": 0, "D": 0}
    assert m["position_bias"]["wrong_share"]["A"] == 1.0
    assert m["per_decade"]["1970s"]["n"] == sum(
        1
        for line in (SAMPLE / "questions.jsonl").read_text().splitlines()
        if 1970 <= (json.loads(line)["year"] or 0) < 1980
    )
    assert set(m["per_category"]) == {"Proverbs", "Riddles", "Twisters", "Poems", "Films", "Cartoons"}
    na = run_eval("rubin", "mcqa-easy", ScriptedBackend("не знаю"), tmp_path / "b", local=local)["metrics"]
    assert na["na_rate"] == 1.0 and na["accuracy"] == 0.0


@pytest.mark.e2e
@pytest.mark.parametrize(("task", "config"), [("mcqa", "full"), ("mcqa-easy", "easy")])
def test_mcqa_runs_on_the_tiny_model(
    rubin_release, tiny_model: Path, tmp_path: Path, task: str, config: str
) -> None:
    from culturebench.eval.backends import SamplingParams
    from culturebench.eval.backends.transformers_backend import TransformersBackend

    engine = TransformersBackend(str(tiny_model), sampling=SamplingParams(max_new_tokens=6))
    results = run_eval("rubin", task, engine, tmp_path / "run", local=str(rubin_release.folder), limit=6)
    assert results["samples"] == 6 and results["provenance"]["config"] == config
    m = results["metrics"]
    assert m["n"] == 6 and 0 <= m["na"] <= 6
    assert m["na_rate"] == m["na"] / 6
    lines = (tmp_path / "run" / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    assert all(json.loads(line)["pred"] in (None, "A", "B", "C", "D") for line in lines)
    assert (tmp_path / "run" / "report.md").is_file()


def _with_ages(tmp_path: Path, age_of, answer_of) -> Path:
    """A user copy whose human answers carry ``annotator_age``: 8 annotators per question,
    ages 22-65; ``answer_of(question, age)`` says whether that annotator answers correctly."""
    folder = _user_copy(tmp_path)
    records = [json.loads(line) for line in (folder / "questions.jsonl").read_text().splitlines()]
    lines = ["question_id,annotator_id,answer,annotator_age"]
    for q in records:
        for k in range(8):
            age = age_of(k)
            right = answer_of(q, age)
            letter = q["label"] if right else "ABCD"[("ABCD".index(q["label"]) + 1) % 4]
            lines.append(f"{q['id']},ann-{k},{letter},{age}")
    (folder / "human_answers.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def _expected_chi2(observed: list[list[int]]) -> float:
    """Pearson's statistic computed by hand, to check the table the builder assembled."""
    total = sum(map(sum, observed))
    rows, cols = [sum(r) for r in observed], [sum(c) for c in zip(*observed, strict=True)]
    return sum(
        (observed[i][j] - rows[i] * cols[j] / total) ** 2 / (rows[i] * cols[j] / total)
        for i in range(len(rows))
        for j in range(len(cols))
    )


def test_age_year_check_finds_a_generational_effect(tmp_path: Path) -> None:
    """Older annotators know the pre-1970 phrases, younger ones the later ones (the sample is
    dated 1960-1989): independence is rejected. A plain age effect would not be an association
    in this table, hence the crossed pattern."""
    ages = [22, 27, 33, 38, 44, 47, 55, 65]

    def knows(q: dict, age: int) -> bool:
        if q["year"] is None:
            return True
        return (q["year"] < 1970) == (age >= 40)

    release = get_builder("rubin").build(
        source=str(_with_ages(tmp_path, ages.__getitem__, knows)), out_root=tmp_path / "dist"
    )
    check = json.loads((release.folder / "build_report.json").read_text())["stats"]["human_age_year_check"]
    assert check["computed"] == "yes" and check["correct_independence_rejected_at_0.01"]
    assert check["correct_p_value"] < 0.01
    records = [json.loads(line) for line in (SAMPLE / "questions.jsonl").read_text().splitlines()]
    dated = [q for q in records if q["year"] is not None]
    assert check["answers_used"] == 8 * len(dated)
    assert check["answers_skipped_undated_question"] == 8 * (len(records) - len(dated))
    periods = ["before 1970", "1970-1989", "1990-2009", "2010 on"]

    def period(year: int) -> str:
        return periods[(year >= 1970) + (year >= 1990) + (year >= 2010)]

    groups = ["20-29", "30-39", "40-49", "50+"]
    observed = [[0] * 4 for _ in periods]
    for q in dated:
        for age in ages:
            observed[periods.index(period(q["year"]))][min(age // 10 - 2, 3)] += knows(q, age)
    observed = [r for r in observed if any(r)]
    assert check["correct_chi2"] == pytest.approx(_expected_chi2(observed), abs=1e-3)
    assert check["accuracy_by_period_and_age"]["1970-1989 / 20-29"] == 1.0
    assert check["accuracy_by_period_and_age"]["1970-1989 / 50+"] == 0.0
    assert check["accuracy_by_period_and_age"]["before 1970 / 50+"] == 1.0
    assert set(k.split(" / ")[1] for k in check["accuracy_by_period_and_age"]) == set(groups)


def test_age_year_check_does_not_reject_without_an_effect(tmp_path: Path, rubin_release) -> None:
    ages = [22, 27, 33, 38, 44, 47, 55, 65]
    release = get_builder("rubin").build(
        source=str(_with_ages(tmp_path, ages.__getitem__, lambda q, age: True)), out_root=tmp_path / "dist"
    )
    check = json.loads((release.folder / "build_report.json").read_text())["stats"]["human_age_year_check"]
    assert check["correct_chi2"] == pytest.approx(0.0, abs=1e-9)
    assert not check["correct_independence_rejected_at_0.01"]
    shipped = json.loads((rubin_release.folder / "build_report.json").read_text())["stats"]
    assert shipped["human_age_year_check"] == {
        "computed": "no: the human answers have no annotator_age column"
    }


def test_bad_annotator_age_names_row_and_field(tmp_path: Path) -> None:
    folder = _with_ages(tmp_path, lambda k: 30 + k, lambda q, age: True)
    lines = (folder / "human_answers.csv").read_text().splitlines()
    lines[5] = lines[5].rsplit(",", 1)[0] + ",thirty"
    (folder / "human_answers.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(SourceError, match=r"human_answers.csv, row 6, field 'annotator_age'"):
        get_builder("rubin").build(source=str(folder), out_root=tmp_path / "dist")


def test_an_old_task_name_still_works_with_a_warning(tmp_path: Path) -> None:
    """`mcqa_easy` was renamed `mcqa-easy` (CHANGELOG): the old name finds the task, with a
    FutureWarning, and a run folder recorded under it reads under the new name."""
    import json

    from culturebench.eval.run_folder import read_run
    from culturebench.eval.tasks import canonical_name, registry, task_class

    assert "mcqa-easy" in registry()["rubin"] and "mcqa_easy" not in registry()["rubin"]
    with pytest.warns(FutureWarning, match="now called 'mcqa-easy'"):
        assert task_class("rubin", "mcqa_easy").name == "mcqa-easy"
    assert canonical_name("rubin", "mcqa_easy") == "mcqa-easy"
    assert canonical_name("rubin", "no-such-task") == "no-such-task"
    (tmp_path / "run.json").write_text(json.dumps({"dataset": {"dataset": "rubin"}, "task": "mcqa_easy"}))
    assert read_run(tmp_path)["task"] == "mcqa-easy"


def test_eval_list_names_a_renamed_tasks_old_name() -> None:
    from typer.testing import CliRunner

    from culturebench.cli import app

    result = CliRunner().invoke(app, ["eval", "list", "--long"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "rubin/mcqa-easy: The same task on RuBIN-EASY. (formerly mcqa_easy)" in result.output
