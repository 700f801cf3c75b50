"""Metrics on hand-computed cases, and country extraction accuracy on a written test set."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from culturebench.eval.country_extractor import default_extractor
from culturebench.eval.metrics import (
    bootstrap_ci,
    contains_within_edits,
    dice,
    jaccard,
    multilabel_confusion,
    overlap,
)

pytestmark = pytest.mark.unit

CASES = yaml.safe_load(
    (Path(__file__).parent / "data" / "country_extraction.yaml").read_text(encoding="utf-8")
)


@pytest.mark.parametrize(
    ("gold", "pred", "j", "d", "o"),
    [
        (["UA"], ["UA"], 1.0, 1.0, 1.0),
        (["UA", "RU"], ["UA"], 0.5, 2 / 3, 1.0),
        (["UA", "RU", "BY"], ["RU", "PL"], 1 / 4, 2 / 5, 1 / 2),
        (["GE"], [], 0.0, 0.0, 0.0),
        ([], [], 1.0, 1.0, 1.0),
        (["UZ", "TJ"], ["KZ", "KG"], 0.0, 0.0, 0.0),
    ],
)
def test_set_metrics(gold, pred, j, d, o) -> None:
    assert jaccard(gold, pred) == pytest.approx(j)
    assert dice(gold, pred) == pytest.approx(d)
    assert overlap(gold, pred) == pytest.approx(o)


def test_dish_name_within_one_edit() -> None:
    assert contains_within_edits("Это блюдо называется борщ.", "БОРЩ")
    assert contains_within_edits("Это, скорее всего, борща", "БОРЩ")  # one edit (declension)
    assert contains_within_edits("Вероятно, это вареники с картошкой", "ВАРЕНИКИ")
    assert contains_within_edits("Я думаю, это салат оливье", "САЛАТ ОЛИВЬЕ")
    assert not contains_within_edits("Это пельмени", "ВАРЕНИКИ")
    assert not contains_within_edits("Это борщами", "БОРЩ")  # three edits
    assert not contains_within_edits("", "БОРЩ")


def test_multilabel_confusion_hand_computed() -> None:
    labels = ["RU", "UA", "BY"]
    golds = [["UA"], ["UA", "RU"], ["BY"], ["RU"]]
    preds = [["UA"], ["RU"], ["RU", "UA"], []]
    m = multilabel_confusion(golds, preds, labels)
    # sample 1: UA correct -> (UA, UA); sample 2: RU correct, UA missed, nothing wrong ->
    # (RU, RU) and (UA, none); sample 3: BY missed, RU and UA wrong -> (BY, RU), (BY, UA);
    # sample 4: nothing predicted -> (RU, none).
    assert m == [
        [1, 0, 0, 1],
        [0, 1, 0, 1],
        [1, 1, 0, 0],
    ]


def test_bootstrap_ci_is_deterministic_and_brackets_the_mean() -> None:
    values = [0.0, 1.0, 1.0, 0.5, 0.25, 1.0, 0.0, 0.75]
    mean, lo, hi = bootstrap_ci(values, seed=3)
    assert mean == pytest.approx(sum(values) / len(values))
    assert lo <= mean <= hi and 0.0 <= lo < hi <= 1.0
    assert bootstrap_ci(values, seed=3) == (mean, lo, hi)


def test_country_extraction_accuracy_on_the_written_set() -> None:
    assert len(CASES) >= 60
    extractor = default_extractor()
    misses = [c for c in CASES if set(extractor.extract(c["text"], c["lang"])) != set(c["expected"])]
    accuracy = 1 - len(misses) / len(CASES)
    print(f"country extraction: {len(CASES) - len(misses)}/{len(CASES)} = {accuracy:.3f}")
    assert accuracy >= 0.95, misses


@pytest.mark.parametrize(
    ("text", "lang", "expected"),
    [
        ("в Украине", "ru", ["UA"]),
        ("з України", "uk", ["UA"]),
        ("России", "ru", ["RU"]),
        ("Грузії", "uk", ["GE"]),
        ("грузинская кухня", "ru", ["GE"]),
        ("stuffed turkey", "en", []),
        ("того же", "ru", []),
    ],
)
def test_inflections_aliases_adjectives(text: str, lang: str, expected: list[str]) -> None:
    assert default_extractor().extract(text, lang) == expected


def test_country_extraction_accuracy_on_held_out_sentences() -> None:
    held_out = yaml.safe_load(
        (Path(__file__).parent / "data" / "country_extraction_heldout.yaml").read_text(encoding="utf-8")
    )
    extractor = default_extractor()
    hits = sum(set(extractor.extract(c["text"], c["lang"])) == set(c["expected"]) for c in held_out)
    print(f"country extraction (held out): {hits}/{len(held_out)}")
    assert hits / len(held_out) >= 0.9
