"""World Wide Dishes tasks: parsing and scoring on hand-computed cases, and an end-to-end run
with the tiny local model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from culturebench.datasets.wwd.tasks import fuzzy_iou, iou, keywords_in, parse_list, per_continent, sem
from culturebench.eval.backends.base import SamplingParams
from culturebench.eval.backends.transformers_backend import TransformersBackend
from culturebench.eval.runner import run_eval
from culturebench.eval.tasks import get_task

pytestmark = pytest.mark.unit


def test_parse_and_keyword_matching() -> None:
    assert parse_list("Sure! ['lunch', 'dinner']") == ["lunch", "dinner"]
    assert parse_list("no list here") is None
    keywords = get_task("wwd", "time-of-day").keywords()
    assert keywords_in(["Lunch", "DINNER", "brunch"], keywords) == ["lunch", "dinner"]
    meal = get_task("wwd", "meal-type").keywords()
    # the prompt's spelling and the contributed one (with " - ") name the same option
    assert keywords_in(["Main dish stand alone (e.g. one pot meal)"], meal) == ["main dish stand alone"]
    assert keywords_in(["Main dish - stand alone (e.g. one pot meal)"], meal) == ["main dish stand alone"]
    utensils = get_task("wwd", "utensils").keywords()
    assert keywords_in(["Right Hand", "Left Hand", "Fingers", "Other food"], utensils) == ["finger", "hand"]


def test_choice_tasks_follow_the_paper() -> None:
    tod = get_task("wwd", "time-of-day")
    assert tod.score({"gold": ["lunch", "dinner", "other"]}, "['lunch', 'other']")["iou"] == pytest.approx(
        0.5
    )
    ut = get_task("wwd", "utensils")
    scored = ut.score({"gold": ["right hand", "spoon"]}, "['Left Hand', 'Spoon', 'Other food']")
    assert (
        scored["predicted"] == ["spoon", "hand"] and scored["iou"] == 1.0
    )  # hands merged, other food removed
    meal = get_task("wwd", "meal-type")
    gold = ["Main dish - stand alone (e.g. one pot meal)", "Side dish"]
    assert meal.score({"gold": gold}, "['Main dish stand alone (e.g. one pot meal)']")[
        "iou"
    ] == pytest.approx(0.5)


def test_ingredients_fuzzy_iou() -> None:
    assert fuzzy_iou(
        ["Chickpeas", "olive oil", "salt"], ["chickpea", "Olive Oil", "garlic"]
    ) == pytest.approx(2 / 4)
    assert fuzzy_iou([], []) == 1.0 and fuzzy_iou(["rice"], []) == 0.0
    assert iou(["a"], ["a", "b"]) == 0.5


def test_country_and_failure_modes() -> None:
    country = get_task("wwd", "country")
    assert country.score({"gold_countries": ["DZ"]}, "Algeria.")["correct"] == 1.0
    assert country.score({"gold_countries": ["DZ"]}, "Morocco")["correct"] == 0.0
    desc = get_task("wwd", "description")
    flags = desc.score({}, "I'm sorry, but this seems to be a fictional dish; I could guess.")
    assert (flags["apologize"], flags["not_real"], flags["guess"], flags["not_known"]) == (1.0, 1.0, 1.0, 0.0)


def test_per_continent_mean_and_sem() -> None:
    samples = [
        {"continents": ["Africa"], "x": 1.0},
        {"continents": ["Africa"], "x": 0.0},
        {"continents": ["Africa", "Asia"], "x": 1.0},
    ]
    got = per_continent(samples, "x")
    assert got["Africa"]["n"] == 3 and got["Africa"]["mean"] == pytest.approx(2 / 3)
    assert got["Africa"]["sem"] == pytest.approx(sem([1.0, 0.0, 1.0]))
    assert got["Asia"] == {"n": 1, "mean": 1.0, "sem": 0.0}


@pytest.mark.e2e
@pytest.mark.parametrize("task", ["country", "utensils", "ingredients", "description"])
def test_end_to_end_on_the_real_release(wwd_release, tiny_model: Path, tmp_path: Path, task: str) -> None:
    engine = TransformersBackend(str(tiny_model), sampling=SamplingParams(max_new_tokens=8))
    results = run_eval("wwd", task, engine, tmp_path / task, local=str(wwd_release.folder), limit=6)
    assert results["samples"] == 6
    sample = json.loads((tmp_path / task / "samples.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert sample["prompt"].startswith("Given an item of food called ")
    assert "per_continent" in results["metrics"]["en"]
    assert "± " in (tmp_path / task / "report.md").read_text(encoding="utf-8")
