"""The plan in money and time (eval/plan_cost.py, `eval reproduce --plan --price`): the
arithmetic of one cell, the response cache's expected hits counted from the planned prompts,
and the BORSCH plan against counts made here from its own requests."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from culturebench.cli import app
from culturebench.eval.backends.base import Request
from culturebench.eval.plan_cost import Price, RateLimit, cell_cost, expected_hits

pytestmark = pytest.mark.unit


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


@pytest.mark.integration
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


def test_a_price_so_large_the_cost_overflows_is_one_line() -> None:
    """``--price 1e308,1`` is a finite price, but the plan's cost overflows to infinity
    (before, ``Infinity`` was written into plan.json)."""
    from culturebench.errors import UsageError
    from culturebench.eval.plan_cost import totals

    cell = {"cell": "c", "generations": 1_000, "prompt_tokens_planned": 200_000_000, "max_new_tokens": 100}
    with pytest.raises(UsageError, match=r"^--price 1e\+308,1: cell c: the result is too large to count"):
        cell_cost(cell, Price.parse("1e308,1"), None, hits=0)
    with pytest.raises(UsageError, match=r"^the plan's total cost_usd: the result is too large to count"):
        totals([{"cost_usd": 1e308}, {"cost_usd": 1e308}])


@pytest.mark.parametrize(
    ("rpm", "tpm"), [(math.inf, None), (None, math.nan), (0, None), (None, -5), (True, None)]
)
def test_a_rate_must_be_finite_and_above_zero(rpm, tpm) -> None:
    from culturebench.errors import UsageError

    with pytest.raises(UsageError, match=r"^--[rt]pm .*: expected a finite number above 0$"):
        RateLimit(rpm=rpm, tpm=tpm)


def test_a_throughput_file_given_without_the_backend_is_one_line(tmp_path: Path) -> None:
    """A throughput file named with --throughput-file must have an entry for the backend
    (before, it was silently ignored); the default file, when it lacks one, still is."""
    from culturebench.errors import UsageError
    from culturebench.eval.reproduce import Throughput

    saved = tmp_path / "throughput.json"
    saved.write_text(json.dumps({"vllm": {"tokens_per_s": 5000, "model": "m"}}), encoding="utf-8")
    with pytest.raises(
        UsageError, match=rf"^--throughput-file {saved}: no entry for backend openai \(its entries: vllm\)"
    ):
        Throughput.choose(None, saved, "openai", saved_given=True)
    assert Throughput.choose(None, saved, "openai").tokens_per_s is None  # the default file: none
    assert Throughput.choose(None, saved, "vllm", saved_given=True).tokens_per_s == 5000


@pytest.mark.integration
@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--rpm", "inf"], "--rpm inf: expected a finite number above 0"),
        (["--tpm", "1e999"], "--tpm inf: expected a finite number above 0"),
        (["--price", "1e308,1e308"], "the result is too large to count"),
    ],
)
def test_the_plan_refuses_rates_and_prices_it_cannot_count_in_one_line(
    borsch_release, tmp_path: Path, extra: list[str], message: str
) -> None:
    out = tmp_path / "plan"
    args = ["eval", "reproduce", "borsch", "--plan", "--local", str(borsch_release.folder), "--out", str(out)]
    done = CliRunner().invoke(app, [*args, *extra])
    assert done.exit_code == 2, done.output
    assert message in done.output and "Traceback" not in done.output
    assert not (out / "plan.json").exists()
