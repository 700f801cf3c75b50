"""Scoring recorded generations: the World Wide Dishes authors' own GPT-3.5 outputs (real
data, shared/upstream/wwd/llm_probing) scored end to end into Table H.9, compared cell by
cell with the published table; generic JSONL generations for other datasets; bad files."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from culturebench.cli import app
from culturebench.datasets.wwd.table_h9 import CONTINENTS, read_published
from culturebench.errors import CultureBenchError, SourceError
from culturebench.eval.score import score_generations

pytestmark = pytest.mark.integration

PROBING_STATS = "gpt35_dish_info_cleaned_stats.csv"
PROBING = (
    "gpt35_dish_info_cleaned_results.csv",
    "gpt35_dish_info_cleaned_compared.csv",
    "gpt35_dish_info_failures.csv",
)


@pytest.fixture(scope="module")
def probing(wwd_probing: Path) -> Path:
    return wwd_probing


@pytest.fixture(scope="module")
def table(gpt35_scored: Path, wwd_probing: Path) -> dict:
    """The authors' GPT-3.5 files scored by `eval score --layout wwd-probing` (conftest)."""
    return {
        "ours": read_published(gpt35_scored / "table_h9.csv"),
        "paper": read_published(wwd_probing / PROBING_STATS),
        "out": gpt35_scored,
    }


def test_gpt35_table_h9_reproduces_the_deterministic_rows(table) -> None:
    ours, paper = table["ours"], table["paper"]
    assert list(ours) == list(paper)  # the authors' row layout, in their order
    for row in ("count", "time_of_day_iou", "apologize", "not known", "not real", "take a guess"):
        assert ours[row] == paper[row], row  # exact, all six continents
    for continent in CONTINENTS:  # type of dish: within one rounding step
        assert abs(ours["type_of_dish_iou"][continent] - paper["type_of_dish_iou"][continent]) <= 0.011


def test_scored_runs_carry_provenance_and_every_seed(table, probing: Path) -> None:
    from culturebench.hashing import sha256_file

    results = json.loads((table["out"] / "utensils" / "results.json").read_text(encoding="utf-8"))
    assert results["samples"] == 3825 and results["items"] == 765 and results["seeds"] == [0, 1, 2, 3, 4]
    (used,) = results["provenance"]["generations"]
    assert used["sha256"] == sha256_file(probing / PROBING[0])
    assert results["metrics"]["en"]["n"] + results["metrics"]["en"]["n_without_gold"] == 3825
    report = (table["out"] / "utensils" / "report.md").read_text(encoding="utf-8")
    assert "| en | iou |" in report and "per_continent" in report


def _copy(probing: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "probing"
    folder.mkdir()
    for name in PROBING:
        (folder / name).write_bytes((probing / name).read_bytes())
    return folder


@pytest.mark.parametrize(
    ("edit", "where", "message"),
    [
        (lambda rows: rows[3].__setitem__(0, ""), (4, "id"), "missing id"),
        (lambda rows: rows[3].__setitem__(0, "99999"), (4, "id"), "not an item of this task"),
        (lambda rows: rows[3].__setitem__(3, rows[2][3]), (4, "id"), "appears twice"),
        (lambda rows: rows[5].__setitem__(3, "x"), (6, "seed"), "not an integer"),
    ],
    ids=["missing-id", "unknown-id", "duplicate-id-seed", "bad-seed"],
)
def test_bad_generation_files_name_file_row_column(
    probing: Path, wwd_release, tmp_path: Path, edit, where, message: str, csv_editor
) -> None:
    folder = _copy(probing, tmp_path)
    csv_editor(folder / PROBING[1], edit)
    with pytest.raises(SourceError) as info:
        score_generations(
            "wwd",
            "country",
            [folder / PROBING[1]],
            tmp_path / "out",
            layout="wwd-probing",
            local=str(wwd_release.folder),
        )
    assert (info.value.location.file, info.value.location.row, info.value.location.field) == (
        PROBING[1],
        *where,
    )
    assert message in str(info.value)


def test_answers_not_in_the_asked_form_are_the_models_failure(
    probing: Path, wwd_release, tmp_path: Path, csv_editor
) -> None:
    """A list cut short and an empty country answer are outputs, not file faults: scored (IoU 0,
    wrong) and counted, with no error (tests/test_unparsed_outputs.py covers every list task)."""
    folder = _copy(probing, tmp_path)

    def edit(rows):
        rows[4][rows[0].index("ingredients_llm")] = "['chicken', 'onion'"  # cut short
        rows[6][rows[0].index("country_llm")] = " "

    csv_editor(folder / PROBING[1], edit)
    common = {"layout": "wwd-probing", "local": str(wwd_release.folder)}
    result = score_generations("wwd", "ingredients", [folder / PROBING[1]], tmp_path / "ing", **common)
    assert result["samples"] == 3825 and result["metrics"]["en"]["n_unparsed"] == 1
    samples = [json.loads(line) for line in (tmp_path / "ing" / "samples.jsonl").open(encoding="utf-8")]
    (cut,) = [s for s in samples if s["unparsed"]]
    assert cut["output"] == "['chicken', 'onion'" and cut["iou"] == 0.0 and cut["predicted"] == []
    result = score_generations("wwd", "country", [folder / PROBING[1]], tmp_path / "country", **common)
    samples = [json.loads(line) for line in (tmp_path / "country" / "samples.jsonl").open(encoding="utf-8")]
    (empty,) = [s for s in samples if s["output"] == " "]
    assert empty["correct"] == 0.0 and empty["predicted"] == []


def test_misaligned_sibling_file_is_refused(probing: Path, wwd_release, tmp_path: Path, csv_editor) -> None:
    folder = _copy(probing, tmp_path)
    csv_editor(
        folder / PROBING[0], lambda rows: rows.insert(2, rows.pop(9))
    )  # a row of another dish moved up
    with pytest.raises(SourceError, match="does not line up"):
        score_generations(
            "wwd",
            "time-of-day",
            [folder / PROBING[0], folder / "gpt35_dish_info_cleaned_compared.csv"],
            tmp_path / "out",
            layout="wwd-probing",
            local=str(wwd_release.folder),
        )


def test_generic_jsonl_for_another_dataset(borsch_release, tmp_path: Path) -> None:
    """Any tool's output: `{id, output, seed}` lines, scored like `eval run` (BORSCH origin QA)."""
    from datasets import load_dataset

    first = load_dataset(str(borsch_release.folder), "parallel", split="test")[0]
    lines = [
        {"id": f"{first['id']}:ru:0", "output": "Узбекистан", "seed": 0},
        {"id": f"{first['id']}:ru:0", "output": "Россия", "seed": 1},
        {"id": f"{first['id']}:uk:2", "output": "Таджикистан"},
    ]
    path = tmp_path / "gen.jsonl"
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    results = score_generations(
        "borsch", "origin-qa", [path], tmp_path / "out", local=str(borsch_release.folder)
    )
    assert results["samples"] == 3 and results["seeds"] == [0, 1]
    samples = [
        json.loads(s) for s in (tmp_path / "out" / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert [s["predicted"] for s in samples] == [["UZ"], ["RU"], ["TJ"]]
    assert samples[0]["jaccard"] == pytest.approx(1 / len(first["origins"]))


def test_compare_table_h9_with_the_published_stats(table, probing: Path, tmp_path: Path) -> None:
    out = tmp_path / "compare.md"
    result = CliRunner().invoke(
        app,
        [
            "eval",
            "compare",
            str(table["out"] / "table_h9.csv"),
            str(probing / PROBING_STATS),
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    assert "| Oceania | time_of_day_iou | 0.550 | 0.550 | +0.000 | |" in text
    assert "| Africa | country_acc |" in text


def test_compare_two_runs_has_a_paired_bootstrap_ci(borsch_release, scripted_backend, tmp_path: Path) -> None:
    from culturebench.eval.compare import compare
    from culturebench.eval.runner import run_eval

    def run(answer: str, name: str) -> Path:
        run_eval(
            "borsch",
            "origin-qa",
            scripted_backend(answer),
            tmp_path / name,
            local=str(borsch_release.folder),
            limit=12,
        )
        return tmp_path / name

    rows = {(r["group"], r["metric"]): r for r in compare(run("Узбекистан", "a"), run("Россия", "b"))}
    jaccard = rows[("ru", "jaccard")]
    assert jaccard["difference"] == pytest.approx(jaccard["b"] - jaccard["a"])
    lo, hi = jaccard["ci95"]
    assert lo <= jaccard["difference"] <= hi


class _CountingJudge:
    """Our Backend interface answering judge prompts by rule, counting its calls (scripted;
    not a fake of anyone's API)."""

    def __init__(self, scripted_backend) -> None:
        self.calls = 0
        self.prompts: list[str] = []

        def answer(prompt: str) -> str:
            self.calls += 1
            self.prompts.append(prompt)
            if prompt.startswith("COUNTRY:"):
                return "True" if "Algeria" in prompt.split("COUNTRIES:")[0] else "False"
            return "['chicken']" if "**BOTH**" in prompt else "['chicken', 'onion', 'garlic', 'salt']"

        self.backend = scripted_backend(answer)


def test_llm_matcher_uses_the_paper_prompts_and_caches(
    probing: Path, wwd_release, scripted_backend, tmp_path, csv_editor
) -> None:
    folder = _copy(probing, tmp_path)
    csv_editor(folder / PROBING[1], lambda rows: rows.__delitem__(slice(11, None)))  # two dishes x 5 seeds
    judge = _CountingJudge(scripted_backend)
    args = dict(layout="wwd-probing", local=str(wwd_release.folder))
    country = score_generations(
        "wwd", "country", [folder / PROBING[1]], tmp_path / "c", judge=judge.backend, **args
    )
    assert country["provenance"]["matcher"]["matcher"] == "llm" and country["samples"] == 10
    assert judge.prompts[0].startswith("COUNTRY: `Algeria`\\nCOUNTRIES: `Algeria`")  # literal \n, as upstream
    first = judge.calls
    assert first == len({p for p in judge.prompts})  # one call per distinct prompt
    again = score_generations(
        "wwd", "country", [folder / PROBING[1]], tmp_path / "c", judge=judge.backend, **args
    )
    assert judge.calls == first and again["metrics"] == country["metrics"]  # answered from judgments.jsonl
    ingredients = score_generations(
        "wwd", "ingredients", [folder / PROBING[1]], tmp_path / "i", judge=judge.backend, **args
    )
    assert ingredients["metrics"]["en"]["iou"]["mean"] == pytest.approx(0.25)  # 1 of 4 by the judge's lists


@pytest.mark.e2e
def test_llm_matcher_on_the_tiny_model(
    probing: Path, wwd_release, tiny_model: Path, tmp_path: Path, csv_editor
) -> None:
    from culturebench.eval.backends.base import SamplingParams
    from culturebench.eval.backends.transformers_backend import TransformersBackend

    folder = _copy(probing, tmp_path)
    csv_editor(folder / PROBING[1], lambda rows: rows.__delitem__(slice(6, None)))
    judge = TransformersBackend(str(tiny_model), sampling=SamplingParams(max_new_tokens=6))
    # random weights never say True/False: a judge that answers nothing in the asked form is an
    # error (it used to report `mean NaN` and exit 0), and a refusal writes nothing (issue 53)
    with pytest.raises(CultureBenchError, match="answered none of 5 samples in the asked form"):
        score_generations(
            "wwd", "country", [folder / PROBING[1]], tmp_path / "c", layout="wwd-probing",
            local=str(wwd_release.folder), judge=judge,
        )  # fmt: skip
    assert not (tmp_path / "c").exists()


def test_unparsed_judge_answers_are_counted_not_nan(
    probing: Path, wwd_release, scripted_backend, tmp_path: Path, csv_editor
) -> None:
    folder = _copy(probing, tmp_path)
    csv_editor(folder / PROBING[1], lambda rows: rows.__delitem__(slice(15, None)))  # 3 dishes x 5 seeds
    answers = iter(["True", "I cannot tell", "False"] * 10)  # one answer per distinct judge prompt
    result = score_generations(
        "wwd", "country", [folder / PROBING[1]], tmp_path / "c", layout="wwd-probing",
        local=str(wwd_release.folder), judge=scripted_backend(lambda _prompt: next(answers)),
    )  # fmt: skip
    en = result["metrics"]["en"]
    unparsed = result["judge_unparsed"]
    assert (
        unparsed > 0
        and en["n_judge_unparsed"] == unparsed
        and en["n"] + unparsed + en["n_without_gold"] == result["samples"] >= 10
    )
    text = (tmp_path / "c" / "results.json").read_text(encoding="utf-8")
    assert "NaN" not in text and json.loads(text)["judge_unparsed"] == unparsed
    assert f"judge answers not in the asked form (those samples unscored): {unparsed}" in (
        tmp_path / "c" / "report.md"
    ).read_text(encoding="utf-8")


def test_a_finished_run_can_be_rescored(borsch_release, scripted_backend, tmp_path: Path) -> None:
    from culturebench.eval.runner import run_eval

    live = run_eval(
        "borsch",
        "origin-qa",
        scripted_backend("Узбекистан"),
        tmp_path / "live",
        local=str(borsch_release.folder),
        limit=2,
        seeds=[0, 1],
    )
    again = score_generations(
        "borsch",
        "origin-qa",
        [tmp_path / "live" / "samples.jsonl"],
        tmp_path / "re",
        local=str(borsch_release.folder),
    )
    assert again["samples"] == live["samples"] == 2 * 2 * 5 * 2 and again["seeds"] == [0, 1]
    assert again["metrics"]["ru"]["jaccard"]["mean"] == live["metrics"]["ru"]["jaccard"]["mean"]


@pytest.mark.parametrize(("dataset", "task"), [("rubin", "mcqa"), ("foodieqa", "text")])
def test_score_path_for_other_datasets(
    dataset, task, request: pytest.FixtureRequest, scripted_backend, tmp_path: Path
) -> None:
    """Any tool's `{id, output}` lines score like a live run: here the live run's own lines,
    and a hand-written file answering each item's first prompt by its bare row id."""
    from culturebench.eval.runner import run_eval

    folder = request.getfixturevalue(f"{dataset}_release").folder
    live = run_eval(dataset, task, scripted_backend("B"), tmp_path / "live", local=str(folder), limit=3)
    rescored = score_generations(
        dataset, task, [tmp_path / "live" / "samples.jsonl"], tmp_path / "re", local=str(folder)
    )
    assert rescored["samples"] == live["samples"] and rescored["metrics"] == live["metrics"]
    rows = [
        json.loads(line)
        for line in (tmp_path / "live" / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    bare = tmp_path / "bare.csv"
    with open(bare, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "output"])
        for row_id in dict.fromkeys(r["row_id"] for r in rows):
            writer.writerow([row_id, "Answer: B"])
    first = score_generations(dataset, task, [bare], tmp_path / "bare", local=str(folder))
    assert first["samples"] == first["items"] == len({r["row_id"] for r in rows})


def test_community_review_tables_2_and_3(upstream_wwd: Path, tmp_path: Path) -> None:
    """Tables 2 and 3 from the authors' review file: every printed cell of Cameroon, Kenya and
    Nigeria reproduced; the other countries' cells are reported as they are."""
    reviews = upstream_wwd / "community_review" / "Community_Review_Generated_Dish_Images.csv"
    if not reviews.is_file():
        pytest.skip("no community review file in this upstream snapshot")
    out = tmp_path / "cr"
    result = CliRunner().invoke(app, ["eval", "wwd-community-review", str(reviews), "--out", str(out)])
    assert result.exit_code == 0, result.output
    again = CliRunner().invoke(app, ["eval", "wwd-community-review", str(reviews), "--out", str(out)])
    assert again.exit_code == 2 and "already exists (use --overwrite" in again.output
    tmp_path = out
    with open(tmp_path / "comparison.csv", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 90  # 6 countries x 3 models x 5 metrics
    for country in ("Cameroon", "Kenya", "Nigeria"):
        assert all(r["equal"] == "True" for r in rows if r["country"] == country), country
    header = (tmp_path / "table2.csv").read_text(encoding="utf-8").splitlines()[0]
    assert header.startswith("country,food_generated Dalle2,")
