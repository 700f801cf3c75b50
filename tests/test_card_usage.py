"""The dataset card tells a reader what to type (issue 41, item 9): its ``load_dataset`` line
names the Hub repo the release is published to (never a literal ``<org>``), the paper is cited
by its reference (authors, year, title, venue, arXiv id), never by a file on the builder's
machine (``shared/papers/...``), and a "How to evaluate" section gives that dataset's
``culturebench eval`` / Inspect / lm-eval lines, each runnable as written. Checked on the card
rendered for every dataset, and on a real build of the shipped FoodieQA sample."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from culturebench.cards.card import render_card
from culturebench.cards.paper import paper_source
from culturebench.cards.usage import paper_reference
from culturebench.registry import builtin_names
from culturebench.spec import load_spec

pytestmark = pytest.mark.unit

DATASETS = ("ash", "borsch", "foodieqa", "rubin", "wwd")


def _docs_commands() -> Any:
    """tests/test_docs_commands.py: its check of a command line."""
    from tests import test_docs_commands

    return test_docs_commands


def _manifest(spec: Any) -> dict[str, Any]:
    """The parts of a manifest the card reads, for a release of one row per split."""
    one = {"num_rows": 1, "num_bytes": 10, "files": [{"size": 10}]}
    return {
        "configs": {name: {"splits": {split: dict(one) for split in spec.splits}} for name in spec.configs},
        "upstream": {},
        "builder": {"class": "Builder", "code_version": "1"},
        "libraries": {"culturebench": "0"},
        "source": {"files": {}},
        "sample": False,
        "version": spec.version,
    }


def _section(card: str, heading: str) -> str:
    return card.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


@pytest.mark.parametrize("name", DATASETS)
def test_card_names_the_repo_cites_the_paper_and_says_how_to_evaluate(name: str) -> None:
    docs = _docs_commands()
    _root, check, culturebench_argv = docs._root, docs.check, docs.culturebench_argv
    spec = load_spec(name)
    card = render_card(spec, _manifest(spec), {})
    assert "<org>" not in card and "shared/papers" not in card and ".txt" not in card

    usage = _section(card, "Usage")
    for config in spec.configs:
        assert f'load_dataset("culturebench/{name}", "{config}", revision="v{spec.version}"' in usage

    paper_line = next(line for line in card.splitlines() if line.startswith("- **Paper:**"))
    assert str(spec.raw["paper_title"]).split(":")[0] in paper_line or name == "wwd"
    assert re.search(r"\(20\d\d\)", paper_line), paper_line  # authors (year)

    how = _section(card, "How to evaluate")
    block = how.split("```bash\n", 1)[1].split("```", 1)[0]
    lines = [line for line in block.splitlines() if line and not line.startswith("#")]
    starts = [line.split()[0:3] for line in lines if line.split()]
    assert ["culturebench", "eval", "run"] in starts
    assert ["culturebench", "eval", "reproduce"] in starts
    assert ["culturebench", "export", "lm-eval"] in starts
    inspect = [line for line in lines if line.startswith("inspect eval ")]
    assert len(inspect) == 1 and f"culturebench/{name}_" in inspect[0]
    assert "--log-dir out/logs/inspect" in inspect[0]
    assert any(line.startswith("lm_eval ") and f"culturebench_{name}_" in line for line in lines)
    root = _root()
    for line in lines:
        argv = culturebench_argv(shlex.split(line))
        if argv is not None:
            assert check(argv, root) == [], line


def test_the_inspect_log_scored_is_the_one_the_card_made() -> None:
    """The card's `eval score` line reads the log its `inspect eval` line writes."""
    card = render_card(load_spec("rubin"), _manifest(load_spec("rubin")), {})
    how = _section(card, "How to evaluate")
    task = re.search(r"inspect eval culturebench/(\w+) ", how).group(1)
    score = re.search(r"--generations out/logs/inspect/<time>_([\w-]+)_<id>\.eval", how).group(1)
    assert score == task.replace("_", "-")


def test_paper_reference_reads_the_citation() -> None:
    ref = paper_reference(load_spec("foodieqa"))
    assert ref.startswith("Li et al. (2024). *FoodieQA: A Multimodal Dataset")
    assert "Proceedings of EMNLP" in ref and "arXiv:2406.11030" in ref
    borsch = paper_reference(load_spec("borsch"))
    assert borsch == "Lavrouk et al. (2025). *What are Foundation Models Cooking in the Post-Soviet World?*"
    rubin = paper_reference(load_spec("rubin"))
    assert rubin.startswith("Lazukova and Piontkovskaya (2026).")


def test_paper_source_drops_the_local_path() -> None:
    local = "Lee et al., Culinary Class Wars (paper text in shared/papers/ash.txt)"
    assert paper_source({"paper": local}) == "Lee et al., Culinary Class Wars"
    both = {"paper": "x (text in shared/papers/x.txt)", "reference": "A (2024), T"}
    assert paper_source(both) == "A (2024), T"


def test_foodieqa_builds_offline_from_its_synthetic_sample(tmp_path: Path, monkeypatch) -> None:
    """Without --source FoodieQA builds from the sample shipped in datasets/foodieqa/sample/
    (as RuBIN does): 8 questions per config, our own CC0 pictures, marked SAMPLE and synthetic
    in the card, validation passing."""
    from culturebench.builders.base import get_builder
    from datasets import load_dataset

    monkeypatch.setenv("CULTUREBENCH_UPSTREAM", str(tmp_path / "none"))
    release = get_builder("foodieqa").build(out_root=tmp_path / "dist")
    folder = Path(release.folder)

    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["sample"] is True
    for config in ("multi_image", "single_image", "text"):
        rows = load_dataset(str(folder), config, split="test")
        assert rows.num_rows == 8
    multi = load_dataset(str(folder), "multi_image", split="test")
    assert {img["license"] for row in multi["images"] for img in row} == {"CC0-1.0"}
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert "This is a SAMPLE build" in card and "**synthetic**" in card
    sample = Path(load_spec("foodieqa").sample_dir)
    assert "synthetic" in (sample / "SAMPLE.md").read_text(encoding="utf-8").lower()
    assert "CC0" in (sample / "SAMPLE.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", builtin_names())
def test_one_paper_per_dataset_named_the_same_everywhere(name: str) -> None:
    """``paper_title``, the citation's title, and paper.yaml's ``reference`` (what the card's
    "Differences from the paper" cites) name one paper: the one whose text the tables are
    compared with."""
    import yaml

    spec = load_spec(name)
    title = str(spec.raw["paper_title"]).strip()
    assert f"*{title}*" in paper_reference(spec)
    paper = yaml.safe_load((spec.folder / "paper.yaml").read_text(encoding="utf-8"))
    assert title in paper["reference"] and "shared/papers" not in paper["reference"]
    assert paper_source(paper) == paper["reference"]
