"""Model output is data, not input: an answer that is not in the asked form (a refusal, prose
where a list was asked, an empty string, junk) is the model's failure, scored as the task
defines it and counted, in `eval score` of the World Wide Dishes authors' own file and in a
live `eval run` alike, never an error."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from culturebench.datasets.wwd.tasks import keywords_in, parse_list
from culturebench.eval.multiple_choice import accuracy_block, score_letter
from culturebench.eval.runner import run_eval
from culturebench.eval.score import score_generations, score_tasks
from culturebench.eval.tasks import get_task

pytestmark = pytest.mark.integration

RESULTS = "gpt35_dish_info_cleaned_results.csv"  # time of day, meal type, utensils (no ids)
COMPARED = "gpt35_dish_info_cleaned_compared.csv"  # ids, seeds and ingredients
REFUSALS = (
    "I'm sorry, but I cannot provide information about this dish as it may be fictional.",
    "",
    "Dinner and lunch",
    "\ufffd\x07\x1b\x7f\u200b",  # junk (a NUL byte makes the CSV a binary file: that stays an error)
    "I'm happy to provide an answer about the fictional dish, but I do not know it.",
)
# task -> (file, column); the results file's rows follow the compared file's one to one
COLUMNS = {
    "time-of-day": (RESULTS, "time_of_day_llm"),
    "meal-type": (RESULTS, "type_of_dish_llm"),
    "utensils": (RESULTS, "utensils_llm"),
    "ingredients": (COMPARED, "ingredients_llm"),
}
LIST_TASKS = tuple(COLUMNS)


def _read(path: Path) -> list[list[str]]:
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.reader(handle))


def _samples(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "samples.jsonl").open(encoding="utf-8")]


def _failed_as_defined(task_name: str, sample: dict) -> bool:
    """IoU 0, or no score at all where the dish has no gold answer the task can score."""
    if sample["iou"] == 0.0:
        return True
    task = get_task("wwd", task_name)
    return (
        sample["iou"] is None
        and task_name != "ingredients"
        and not keywords_in(sample["gold"], task.keywords())
    )


def test_refusals_in_the_authors_probing_file_are_scored_and_counted(
    upstream_wwd: Path, wwd_release, tmp_path: Path
) -> None:
    source = upstream_wwd / "llm_probing"
    if not (source / RESULTS).is_file():
        pytest.skip("the WWD probing files are not in this upstream snapshot")
    folder = tmp_path / "probing"
    folder.mkdir()
    tables = {name: _read(source / name) for name in (RESULTS, COMPARED)}
    ids = tables[COMPARED]
    id_at, seed_at = ids[0].index("id"), ids[0].index("seed")
    replaced: dict[str, set[tuple[str, int]]] = {task: set() for task in LIST_TASKS}
    for t, (task, (name, column)) in enumerate(COLUMNS.items()):
        rows = tables[name]
        at = rows[0].index(column)
        for k, refusal in enumerate(REFUSALS):
            line = 10 + 97 * k + 13 * t  # distinct rows, spread over the file
            rows[line][at] = refusal
            replaced[task].add((f"wwd-{ids[line][id_at]}", int(ids[line][seed_at])))
    for name, rows in tables.items():
        with open(folder / name, "w", encoding="utf-8", newline="") as handle:
            csv.writer(handle).writerows(rows)

    before = score_tasks(
        "wwd", list(LIST_TASKS), [source / RESULTS, source / COMPARED], tmp_path / "authors",
        layout="wwd-probing", local=str(wwd_release.folder),
    )  # fmt: skip
    done = score_tasks(
        "wwd", list(LIST_TASKS), [folder / RESULTS, folder / COMPARED], tmp_path / "edited",
        layout="wwd-probing", local=str(wwd_release.folder),
    )  # fmt: skip
    for task in LIST_TASKS:
        result, en = done[task], done[task]["metrics"]["en"]
        authors = before[task]["metrics"]["en"]["n_unparsed"]
        assert result["samples"] == 3825 and result["invalid_outputs"] == 0, task
        assert en["n_unparsed"] == authors + len(REFUSALS), task  # the authors' own: all lists
        assert en["unparsed_rate"] == pytest.approx(en["n_unparsed"] / 3825)
        assert sum(en["unparsed_per_continent"].values()) >= en["n_unparsed"]  # a dish: 1+ continents
        hit = [s for s in _samples(tmp_path / "edited" / task) if (s["row_id"], s["seed"]) in replaced[task]]
        assert len(hit) == len(REFUSALS), task
        for sample in hit:
            assert sample["unparsed"] and not sample["parsed_list"] and sample["predicted"] == [], sample
            assert _failed_as_defined(task, sample), sample
        # the authors' own answers are all lists; the few counted name no option offered
        # (e.g. time of day ['dessert'], utensils ['Hands']): scored 0 as before, now counted
        theirs = [s for s in _samples(tmp_path / "authors" / task) if s["unparsed"]]
        assert all(s["parsed_list"] and _failed_as_defined(task, s) for s in theirs), task
        assert len(theirs) == authors and (task == "ingredients") == (authors == 0), task


@pytest.mark.parametrize("task", LIST_TASKS)
def test_live_run_refusals_are_counted_and_score_like_eval_score(
    task: str, wwd_release, scripted_backend, tmp_path: Path
) -> None:
    answers = iter((*REFUSALS, "\x00\ufffd", "['Lunch', 'rice']"))

    def answer(prompt: str) -> str:
        return next(answers, "I cannot answer that.")

    results = run_eval(
        "wwd", task, scripted_backend(answer), tmp_path / "run", local=str(wwd_release.folder), limit=8
    )
    en = results["metrics"]["en"]
    samples = _samples(tmp_path / "run")
    failed = [s for s in samples if s["unparsed"]]
    assert results["samples"] == 8 and en["n_unparsed"] == len(failed) >= 7
    assert all(s["predicted"] == [] and _failed_as_defined(task, s) for s in failed)
    # the run's own samples, scored again as recorded generations: the same parse, the same count
    again = score_generations(
        "wwd", task, [tmp_path / "run" / "samples.jsonl"], tmp_path / "score", local=str(wwd_release.folder)
    )
    assert again["metrics"]["en"]["n_unparsed"] == en["n_unparsed"]
    assert [s["iou"] for s in _samples(tmp_path / "score")] == [s["iou"] for s in samples]


@pytest.mark.unit
def test_one_parser_tolerates_text_around_a_list_and_nothing_else() -> None:
    assert parse_list('["Main dish - eaten with sides"] - United States of America (USA)') == [
        "Main dish - eaten with sides"
    ]
    for text in ("", "Dinner and lunch", "\x00\ufffd", "['chicken', 'onion'", "[\x00]", None, 12):
        assert parse_list(text) is None, text
    tod = get_task("wwd", "time-of-day")
    listed = tod.score({"gold": ["lunch"]}, "['brunch']")  # a list naming no option offered
    assert listed["unparsed"] and listed["iou"] == 0.0
    assert not tod.score({"gold": ["lunch"]}, "[]")["unparsed"]  # an empty choice is an answer


@pytest.mark.unit
def test_mcq_and_country_answers_keep_their_rules() -> None:
    samples = [{**score_letter(text, 0), "gold": 0} for text in ("", "\x00\ufffd", "E", "A")]
    assert [s["parsed"] for s in samples] == [False, False, False, True]
    assert accuracy_block(samples)["unparseable"] == 3 and accuracy_block(samples)["accuracy"] == 0.25
    origin = get_task("borsch", "origin-qa")
    for text in ("", " ", "\x00\ufffd", "I'm sorry, I cannot say."):
        scored = origin.score({"gold_origins": ["UA"], "lang": "en"}, text)
        assert scored["predicted"] == [] and scored["jaccard"] == 0.0
    country = get_task("wwd", "country")
    assert country.score({"gold_countries": ["DZ"]}, "")["correct"] == 0.0
