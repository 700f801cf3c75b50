"""The docs-in-order tier: every page's shell lines run in order in a fresh folder, as a new
user runs them (``tests/docs_walk.py``: the plan of what runs, with which placeholder filled,
and what cannot run offline and why).

CI walks the pages in :data:`CI_PAGES` (about 2 minutes on 2 cores);
``CULTUREBENCH_DOCS_WALK=all`` walks every page (about 10 minutes):

    CULTUREBENCH_DOCS_WALK=all .venv/bin/python -m pytest tests/test_docs_walk.py
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests import docs_walk

pytestmark = pytest.mark.e2e


PLAN, Entry, filled = docs_walk.PLAN, docs_walk.Entry, docs_walk.filled
plan_problems, walk_page = docs_walk.plan_problems, docs_walk.walk_page

# the README's main job and harness routes, building, and the FoodieQA smoke run (the BORSCH §5
# smoke run on the sample's images has its own test: tests/datasets/borsch/test_sample_images.py)
CI_PAGES = ("README.md", "docs/building.md", "docs/datasets/foodieqa.md")
# the longest a command may print nothing: the progress interval (30 s) and some slack for a
# loaded machine
MAX_SILENCE_S = 35.0


def test_every_documented_line_has_a_plan_entry() -> None:
    """A new command in the docs needs a decision: it runs in the walk, or it says why not."""
    assert plan_problems() == []


def test_the_plan_check_catches_an_unplanned_line(monkeypatch) -> None:
    monkeypatch.setitem(PLAN, "docs/building.md", ((), (Entry(r"culturebench list"),)))
    problems = plan_problems()
    assert any("docs/building.md: no plan entry for 'culturebench info borsch'" in p for p in problems)


def test_fills_put_the_walks_own_tmp_and_the_harness_outputs() -> None:
    tmp = Path("/tmp/W")
    entry = docs_walk.match("README.md", "inspect eval culturebench/borsch_origin_qa --model hf/PATH")
    assert entry is not None
    line = "inspect eval culturebench/borsch_origin_qa -T local=dist/borsch/1.0.0 --model hf/PATH"
    assert filled(line, entry, tmp).endswith("--model hf//tmp/W/tiny")
    score = "culturebench eval score borsch --generations out/logs/inspect/<time>_borsch-origin-qa_<id>.eval"
    entry = docs_walk.match("README.md", score)
    assert entry is not None
    assert filled(score, entry, tmp).endswith("out/logs/inspect/*_borsch-origin-qa_*.eval")
    plain = docs_walk.match("README.md", "culturebench eval tiny-model /tmp/tiny")
    assert plain is not None and filled("culturebench eval tiny-model /tmp/tiny", plain, tmp).endswith(
        " /tmp/W/tiny"
    )


@pytest.mark.slow
@pytest.mark.parametrize("page", list(PLAN))
def test_the_page_runs_in_order(page: str, tmp_path: Path) -> None:
    if page not in CI_PAGES and os.environ.get("CULTUREBENCH_DOCS_WALK") != "all":
        pytest.skip("walked with CULTUREBENCH_DOCS_WALK=all (CI walks the pages in CI_PAGES)")
    outcomes = walk_page(page, tmp_path)
    failed = [o for o in outcomes if o.ran and o.status != "ok"]
    assert not failed, "\n\n".join(f"{o.line}\n-> {o.status}\n" + "\n".join(o.tail) for o in failed)
    silent = [f"{o.line}: {o.longest_silence:.0f} s" for o in outcomes if o.longest_silence > MAX_SILENCE_S]
    assert not silent, silent
