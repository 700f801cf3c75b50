"""The plan in money and time (eval/plan_cost.py, `eval reproduce --plan --price`): the
arithmetic of one cell, the response cache's expected hits counted from the planned prompts,
and the BORSCH plan against counts made here from its own requests."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from culturebench.cli import app
from culturebench.eval.backends.base import Request
from culturebench.eval.plan_cost import Price, RateLimit, cell_cost, expected_hits


def test_one_cell_in_money_and_time() -> None:
    cell = {"generations": 1_000, "prompt_tokens_planned": 200_000, "max_new_tokens": 100}
    cost = cell_cost(cell, Price(2.5, 10.0, 0.5), RateLimit(rpm=100, tpm=60_000), hits=250)
    # planned: 0.2 M input at $2.5 + 0.1 M output at $10 = $1.50
    assert cost["cost_usd"] == 1.5
    # a quarter of the generations come from the cache: 0.15 M input, 75,000 output = $1.125
    assert cost["cost_usd_with_cache"] == pytest.approx(1.12, abs=0.01)
    assert cost["cost_usd_batch_with_cache"] == pytest.approx(0.56, abs=0.01)
    # 750 requests at 100/min = 7.5 min; 225,000 tokens at 60,000/min = 3.75 min: the first binds
    assert cost["hours_at_rate_limit"] == pytest.approx(7.5 / 60, abs=0.01)


def test_expected_hits_repeat_only_greedy_prompts() -> None:
    greedy = SimpleNamespace(name="a", seeds=None, temperature=0.0)
    again = SimpleNamespace(name="b", seeds=(0, 1, 2), temperature=0.0)
    sampled = SimpleNamespace(name="c", seeds=(0, 1), temperature=0.7)
    requests = {
        "a": [Request("1", "p"), Request("2", "q"), Request("3", "p")],  # one repeat in the cell
        "b": [Request("4", "q"), Request("5", "r")],  # q asked in a; 3 seeds of a greedy prompt ask once
        "c": [Request("6", "p")],  # sampled: never a hit
    }
    hits = expected_hits([greedy, again, sampled], requests)
    assert hits == {"a": 1, "b": 3 + 2, "c": 0}


def test_price_is_checked() -> None:
    from culturebench.errors import UsageError

    for bad in ("2.5", "a,b", "-1,2", "1,2,3", "nan,1"):
        with pytest.raises(UsageError):
            Price.parse(bad)


def test_borsch_plan_in_money(borsch_release, tmp_path: Path) -> None:
    out = tmp_path / "plan"
    done = CliRunner().invoke(
        app,
        ["eval", "reproduce", "borsch", "--plan", "--local", str(borsch_release.folder), "--price", "2.50,10",
         "--rpm", "500", "--out", str(out)],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "the plan in money" in done.output and "$" in done.output
    plan = json.loads((out / "plan.json").read_text(encoding="utf-8"))
    cells = {c["cell"]: c for c in plan["cells"]}
    # the ru cell repeats the parallel cell's Russian prompts: count them from the tasks' requests
    from culturebench.eval.dataset_ref import load_run_rows, resolve_dataset
    from culturebench.eval.tasks import get_task

    ref = resolve_dataset("borsch", revision=None, local=str(borsch_release.folder), repo=None)
    parallel, ru = (
        get_task("borsch", "origin-qa", config="parallel"),
        get_task("borsch", "origin-qa", config="ru"),
    )
    parallel_rows, _ = load_run_rows(ref, "parallel", "test", None)
    ru_rows, _ = load_run_rows(ref, "ru", "test", None)
    asked = {r.request.prompt for r in parallel.build(parallel_rows, ["ru", "uk"])[0]}
    repeats = 0  # a Russian prompt the parallel cell asked, or one asked twice in the cell
    for request in ru.build(ru_rows, ["ru"])[0]:
        repeats += request.request.prompt in asked
        asked.add(request.request.prompt)
    assert cells["origin-qa-ru"]["cache_hits_expected"] == repeats > 0
    assert cells["origin-qa-ru"]["cost_usd_with_cache"] < cells["origin-qa-ru"]["cost_usd"]
    total = plan["total"]
    assert total["cost_usd"] == pytest.approx(sum(c.get("cost_usd") or 0 for c in plan["cells"]), abs=0.02)
    assert plan["money_assumes"]["estimate"] is True
    assert plan["money_assumes"]["price_usd_per_million_tokens"] == {"input": 2.5, "output": 10.0}
