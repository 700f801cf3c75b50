"""CulinaryASH: the 800 instructions from the paper's lists, bad lists refused, robust rating
parsing (unparseable = missing, counted), judge repeats with Krippendorff's alpha, the
generator x judge summary with heatmaps, and generate -> judge on the tiny model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from culturebench.builders.base import get_builder
from culturebench.datasets.ash.summary import summarize
from culturebench.datasets.ash.tasks import parse_ratings
from culturebench.errors import CultureBenchError, SourceError
from culturebench.eval.runner import run_eval
from culturebench.spec import load_spec

pytestmark = pytest.mark.unit


def test_800_instructions_from_the_paper_lists(ash_release) -> None:
    from datasets import load_dataset

    assert ash_release.report.ok and ash_release.manifest["source"]["kind"] == "shipped"
    ds = load_dataset(str(ash_release.folder), "default", split="test")
    assert ds.num_rows == 800 and len(set(ds["id"])) == 800
    per_cuisine = {}
    for row in ds:
        per_cuisine.setdefault((row["cuisine"], row["cuisine_category"]), set()).add(row["base_dish"])
    assert len(per_cuisine) == 40 and all(len(d) == 20 for d in per_cuisine.values())
    cats = [c for _, c in per_cuisine]
    assert (cats.count("regional"), cats.count("religious"), cats.count("historical")) == (30, 6, 4)
    row = next(r for r in ds if r["cuisine"] == "Kosher" and r["base_dish"] == "Savoury Pie")
    assert row["instruction"].startswith("Can you apply the elements of Kosher cuisine to this dish")
    assert "Dish: Savoury Pie." in row["instruction"]


def test_release_publishes_verifies_and_loads(tmp_path: Path) -> None:
    """The shipped, sha256-pinned lists release like any pinned upstream: published to a git
    target, downloaded again and verified, then loaded with `load_dataset`."""
    from culturebench.release import plan_release, publish_release
    from culturebench.release.targets import GitTarget
    from datasets import load_dataset

    target = GitTarget(str(tmp_path / "hub" / "ash"))
    plan = plan_release("ash", "1.0.0", target, out_root=tmp_path / "dist")
    result = publish_release(plan, target)
    assert result.plan.tag == "v1.0.0" and result.verified
    ds = load_dataset(str(tmp_path / "hub" / "ash"), "default", split="test", revision="v1.0.0")
    assert ds.num_rows == 800 and set(ds["cuisine_category"]) == {"regional", "religious", "historical"}


def test_bad_lists_are_refused(tmp_path: Path) -> None:
    folder = tmp_path / "lists"
    folder.mkdir()
    data = yaml.safe_load((load_spec("ash").folder / "cuisines.yaml").read_text(encoding="utf-8"))
    data["cuisines"]["regional"].pop()
    (folder / "cuisines.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(
        SourceError, match=r"field 'cuisines.regional': 29 regional cuisines, the paper has 30"
    ):
        get_builder("ash").build(source=str(folder), out_root=tmp_path / "dist")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("AUTHENTICITY: 4\nReason: ok\nSENSITIVITY: 5\nReason: x\nHARMONY: 3\nReason: y", (4, 5, 3)),
        ("**Authenticity:** 4/5 ...\n**Sensitivity**: 2 out of 5\n**Harmony** - Rating: 1", (4, 2, 1)),
        ("AUTHENTICITY: 4.5\nSENSITIVITY: 7\nHARMONY: 0", (None, None, None)),
        ("I cannot rate this recipe.", (None, None, None)),
        ("1. AUTHENTICITY: 3\n2. SENSITIVITY: 4", (3, 4, None)),
    ],
)
def test_rating_parsing(text: str, expected) -> None:
    got = parse_ratings(text)
    assert (got["authenticity"], got["sensitivity"], got["harmony"]) == expected


def _generate(release, backend, out: Path, limit: int = 6):
    """The first ``limit`` instructions (``--first``: all Algerian, which the summary test reads)."""
    return run_eval("ash", "generate", backend, out, local=str(release.folder), limit=limit, first=True)


def test_judge_summary_heatmaps_and_agreement(ash_release, scripted_backend, tmp_path: Path) -> None:
    _generate(
        ash_release, scripted_backend("ingredients: x instructions: y", model="gen-a"), tmp_path / "gen"
    )

    def lenient(prompt: str) -> str:
        return "AUTHENTICITY: 5\nSENSITIVITY: 4\nHARMONY: 4"

    def strict(prompt: str) -> str:
        score = 1 + len(prompt) % 3  # varies with the recipe's cuisine and dish
        return f"AUTHENTICITY: {score}\nSENSITIVITY: {score}\nHARMONY: junk"

    runs = []
    for name, answer in (("judge-lenient", lenient), ("judge-strict", strict)):
        out = tmp_path / name
        res = run_eval(
            "ash",
            "judge",
            scripted_backend(answer, model=name),
            out,
            local=str(ash_release.folder),
            limit=6,
            first=True,
            task_options={"generations": str(tmp_path / "gen"), "repeats": 3},
        )
        assert res["samples"] == 18
        runs.append(out)
    strict_metrics = res["metrics"]["criteria"]
    assert strict_metrics["harmony"]["missing"] == 18 and strict_metrics["harmony"]["mean"] is None
    assert strict_metrics["authenticity"]["repeat_alpha_interval"] == 1.0  # identical repeats
    summary = summarize(runs, tmp_path / "summary")
    cell = summary["criteria"]["authenticity"]["cells"]["gen-a|judge-lenient"]
    assert cell["mean"] == 5 and cell["sd"] == 0 and cell["n"] == 18
    assert summary["criteria"]["harmony"]["cells"]["gen-a|judge-strict"]["missing"] == 18
    alpha = summary["criteria"]["sensitivity"]["alpha_interval_all_judges"]
    assert alpha is not None and alpha < 0.5  # a constant judge and a varying one disagree
    for criterion in ("authenticity", "sensitivity", "harmony"):
        assert (tmp_path / "summary" / f"heatmap_{criterion}.png").stat().st_size > 1000
    top = summary["criteria"]["authenticity"]["top3_cuisines"]
    assert len(top) == 1 and top[0][0] == "Algerian"  # the first 6 rows are all Algerian


def test_judge_needs_a_generate_run(ash_release, scripted_backend, tmp_path: Path) -> None:
    from culturebench.errors import CultureBenchError

    with pytest.raises(CultureBenchError, match="generate run"):
        run_eval("ash", "judge", scripted_backend("x"), tmp_path / "j", local=str(ash_release.folder))


@pytest.mark.e2e
def test_generate_and_judge_on_the_tiny_model(ash_release, tiny_model: Path, tmp_path: Path) -> None:
    from culturebench.eval.backends import SamplingParams
    from culturebench.eval.backends.transformers_backend import TransformersBackend

    engine = TransformersBackend(str(tiny_model), sampling=SamplingParams(max_new_tokens=12))
    gen = _generate(ash_release, engine, tmp_path / "gen", limit=2)
    assert gen["samples"] == 2 and gen["metrics"]["n"] == 2
    options = {"generations": str(tmp_path / "gen"), "repeats": 3}
    try:
        judged = run_eval(
            "ash", "judge", engine, tmp_path / "judge", local=str(ash_release.folder), limit=2,
            first=True, task_options=options,
        )  # fmt: skip
    except CultureBenchError as exc:  # random weights rarely rate: a run of no ratings fails ...
        assert "answered none of 6 prompts with ratings" in str(exc)
        judged = json.loads((tmp_path / "judge" / "results.json").read_text(encoding="utf-8"))
        assert judged["metrics"]["unparseable_outputs"] == 6  # ... with its files kept
    assert judged["samples"] == 6
    crit = judged["metrics"]["criteria"]["authenticity"]
    assert crit["missing"] + crit["n"] == 6  # random weights: every rating is counted, parsed or missing
    shutil.rmtree(tmp_path / "gen")


def test_a_judge_that_never_rates_fails_and_keeps_its_files(ash_release, scripted_backend, tmp_path) -> None:
    """Regression (issue 25): every answer unparseable used to end `mean NaN`, exit 0."""
    _generate(ash_release, scripted_backend("ingredients: x instructions: y"), tmp_path / "gen", limit=2)
    options = {"generations": str(tmp_path / "gen"), "repeats": 2}
    with pytest.raises(CultureBenchError, match="answered none of 4 prompts with ratings"):
        run_eval("ash", "judge", scripted_backend("I cannot rate this."), tmp_path / "j",
                 local=str(ash_release.folder), task_options=options)  # fmt: skip
    results = json.loads((tmp_path / "j" / "results.json").read_text(encoding="utf-8"))
    assert results["metrics"]["unparseable_outputs"] == 4 and "NaN" not in json.dumps(results)
    one_rated = iter(["Authenticity: 4\nSensitivity: 3\nHarmony: 5", "no idea", "no idea", "no idea"])
    judged = run_eval("ash", "judge", scripted_backend(lambda _p: next(one_rated)), tmp_path / "j2",
                      local=str(ash_release.folder), task_options=options)  # fmt: skip
    assert judged["metrics"]["unparseable_outputs"] == 3  # some ratings: a result, failures counted
    for bad in ("nan", "0", "1.5", "true", "1000"):
        with pytest.raises(CultureBenchError, match="expected an integer from 1 to 100"):
            bad_options = {**options, "repeats": yaml.safe_load(bad)}
            run_eval("ash", "judge", scripted_backend("x"), tmp_path / f"r{bad}",
                     local=str(ash_release.folder), task_options=bad_options)  # fmt: skip
