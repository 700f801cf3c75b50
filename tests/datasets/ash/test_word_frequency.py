"""CulinaryASH §3.2 / Figure 2: the most used words of the generated recipes, per cuisine of
Figure 2 and generator model, stop words and cuisine names left out, counted from real
`generate` runs (``eval paper ash``, item ``Figure 2 words``); the paper prints no counts, only
names "certified" (Kosher) and "berbere" (Ethiopian), whose rank is listed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from culturebench.builders.base import get_builder
from culturebench.datasets.ash.paper_report import STOP_WORDS, cuisine_names, recipe_words
from culturebench.eval.paper_report import build_report
from culturebench.eval.runner import run_eval

pytestmark = pytest.mark.unit

REF = "Figure 2 words"


def _cuisine(prompt: str) -> str:
    return re.search(r"elements of (.+?) cuisine", prompt).group(1)


def _certifier(prompt: str) -> str:
    """A generator that writes "certified" three times in every Kosher recipe and "berbere"
    twice in every Ethiopian one; stop words, cuisine names (Kosher, Ethiopian, Costa Rican)
    and "Kosher-certified" hyphenation are what the counting must handle."""
    cuisine = _cuisine(prompt)
    if cuisine == "Kosher":
        return (
            "Ingredients: Kosher-certified beef, certified KOSHER salt, onion. "
            "Instructions: Use only the certified ingredients and cook the onion."
        )
    if cuisine == "Ethiopian":
        return (
            "Ingredients: berbere, onion, Costa Rican coffee. Instructions: Rub the Ethiopian berbere on it."
        )
    return "Ingredients: salt. Instructions: cook."


def _plain(prompt: str) -> str:
    """A generator that never says "certified" or "berbere"."""
    return f"Ingredients: onion, onion, garlic for {_cuisine(prompt)} food. Instructions: fry the onion."


@pytest.fixture(scope="module")
def generate_runs(tmp_path_factory: pytest.TempPathFactory, scripted_backend) -> tuple[Path, list[Path]]:
    """Two generators' `generate` runs over all 800 instructions (Kosher and Ethiopian included)."""
    root = tmp_path_factory.mktemp("ash-words")
    release = get_builder("ash").build(out_root=root / "dist")
    folders = []
    for name, answer in (("llama2:13b", _certifier), ("gen-plain", _plain)):
        folder = root / name
        run_eval(
            "ash",
            "generate",
            scripted_backend(answer, model=f"ollama/{name}"),
            folder,
            local=str(release.folder),
        )
        folders.append(folder)
    return release.folder, folders


def _rows(item: dict) -> dict[str, dict]:
    return {r["label"]: r for r in item["rows"]}


def test_recipe_words_leave_out_stop_words_and_cuisine_names() -> None:
    cuisines = cuisine_names()
    assert len(cuisines) == 40 and "Costa Rican" in cuisines
    words = recipe_words("The Kosher-certified beef, and Costa Rican coffee from a costa; BERBERE!", cuisines)
    assert words == ["certified", "beef", "coffee", "costa", "berbere"]
    assert {"the", "and", "don", "t"} <= STOP_WORDS and "certified" not in STOP_WORDS


def test_word_counts_per_cuisine_and_generator(generate_runs, tmp_path: Path) -> None:
    local, folders = generate_runs
    report = build_report("ash", folders, tmp_path / "r", local=str(local))
    item = next(i for i in report["items"] if i["ref"] == REF)
    assert item["status"] == "computed" and item["title"].startswith("Most used words")
    rows = _rows(item)
    # Kosher, the certifier: 20 recipes x 3 "certified"; "kosher" (the cuisine) is never counted
    top = rows["Kosher: llama2:13b: 1. certified"]
    assert top["ours"] == 60 and top["n"] == 20 and top["note"] == "in 20 of 20 recipes"
    assert rows["Kosher: llama2:13b: 'certified' (named by the paper)"]["note"].startswith("rank 1 of ")
    assert rows["Kosher: llama2:13b: 3. onion"]["ours"] == 40  # tied with "ingredients" (2.), by name
    assert rows["Kosher: gen-plain: 1. onion"]["ours"] == 60  # 3 per recipe
    named = rows["Kosher: gen-plain: 'certified' (named by the paper)"]
    assert named["ours"] == 0 and named["note"] == "not used"
    pooled = rows["Kosher: all generators: 1. onion"]  # 40 + 60 over both generators' 40 recipes
    assert pooled["ours"] == 100 and pooled["n"] == 40
    assert rows["Kosher: all generators: 'certified' (named by the paper)"]["ours"] == 60
    # Ethiopian: "berbere" twice per recipe; "Costa Rican" and "Ethiopian" are cuisine names
    assert rows["Ethiopian: llama2:13b: 1. berbere"]["ours"] == 40
    assert (
        rows["Ethiopian: llama2:13b: 'berbere' (named by the paper)"]["note"]
        == "rank 1 of 6 words, in 20 recipes"
    )
    words = {label.rsplit(". ", 1)[-1] for label in rows if ". " in label}
    assert not words & {"kosher", "ethiopian", "costa", "rican", "the", "and", "on", "it", "only"}
    assert not any(label.startswith(("Algerian", "Hindu")) for label in rows)  # Figure 2's cuisines only
    # every word and count behind the rows, for the other generators' comparison by eye
    data = json.loads((tmp_path / "r" / "word_frequency.json").read_text(encoding="utf-8"))
    assert data["Kosher"]["llama2:13b"]["top"][0] == ["certified", 60, 20]
    assert data["Ethiopian"]["gen-plain"]["recipes"] == 20
    markdown = (tmp_path / "r" / "paper_report.md").read_text(encoding="utf-8")
    assert f"## {REF}: " in markdown and "The paper prints no counts" in markdown
    assert "'certified' for Kosher" in markdown


def test_without_generate_runs_the_item_says_what_it_needs(tmp_path: Path) -> None:
    report = build_report("ash", [], tmp_path / "r")
    item = next(i for i in report["items"] if i["ref"] == REF)
    assert item["status"] == "missing inputs" and "`generate` runs" in item["missing"][0]
