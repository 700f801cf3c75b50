"""Probe cases (issue 12, evaluation): resume that double-counted, run.json left by a model
that never loaded, runs written into release folders, retries on configuration errors, and
bootstrap intervals that resampled prompts instead of dishes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from culturebench.errors import CultureBenchError
from culturebench.eval.backends.base import ModelLoadError
from culturebench.eval.backends.openai_backend import EndpointError, OpenAIBackend
from culturebench.eval.backends.transformers_backend import TransformersBackend
from culturebench.eval.metrics import bootstrap_ci
from culturebench.eval.run_folder import RunMismatch, SamplesError
from culturebench.eval.runner import run_eval

pytestmark = pytest.mark.integration

LIMIT = 4


def _answers(prompt: str) -> str:
    return "Россия" if "Плов" in prompt or "Борщ" in prompt else "Україна"


@pytest.fixture
def run(borsch_release, scripted_backend, tmp_path: Path):
    out = tmp_path / "run"
    results = run_eval(
        "borsch", "origin-qa", scripted_backend(_answers), out, local=str(borsch_release.folder), limit=LIMIT
    )
    return out, results


def _again(out: Path, borsch_release, backend):
    return run_eval("borsch", "origin-qa", backend, out, local=str(borsch_release.folder), limit=LIMIT)


# 9. resume: each id once; lines of another run and corrupt lines are errors
def test_duplicated_lines_do_not_change_the_metrics(run, borsch_release, scripted_backend) -> None:
    out, first = run
    lines = (out / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    with open(out / "samples.jsonl", "a", encoding="utf-8") as handle:
        for line in lines[:3]:  # three duplicates of samples already there
            handle.write(line + "\n")
    again = _again(out, borsch_release, scripted_backend(_answers))
    assert again["samples"] == first["samples"] == LIMIT * 2 * 5
    assert again["metrics"]["ru"]["jaccard"]["mean"] == first["metrics"]["ru"]["jaccard"]["mean"]


def test_lines_of_another_run_are_refused(run, borsch_release, scripted_backend) -> None:
    out, _ = run
    line = json.loads((out / "samples.jsonl").read_text(encoding="utf-8").splitlines()[0])
    line["run"] = "0123456789abcdef"  # same id, another run (e.g. another model's samples pasted in)
    with open(out / "samples.jsonl", "a", encoding="utf-8") as handle:
        handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    with pytest.raises(SamplesError, match=r"samples\.jsonl, line 41: .*belongs to another run"):
        _again(out, borsch_release, scripted_backend(_answers))


def test_unknown_sample_id_is_refused(run, borsch_release, scripted_backend) -> None:
    out, _ = run
    line = json.loads((out / "samples.jsonl").read_text(encoding="utf-8").splitlines()[0])
    line["id"] = "par-999:ru:0"
    with open(out / "samples.jsonl", "a", encoding="utf-8") as handle:
        handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    with pytest.raises(SamplesError, match="line 41: sample 'par-999:ru:0' is not a request of this run"):
        _again(out, borsch_release, scripted_backend(_answers))


def test_corrupt_middle_line_is_reported(run, borsch_release, scripted_backend) -> None:
    out, _ = run
    lines = (out / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    lines[5] = lines[5][: len(lines[5]) // 2]
    (out / "samples.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(SamplesError, match="line 6: corrupt sample"):
        _again(out, borsch_release, scripted_backend(_answers))


def test_torn_last_line_is_still_resumed(run, borsch_release, scripted_backend) -> None:
    out, first = run
    raw = (out / "samples.jsonl").read_bytes()
    (out / "samples.jsonl").write_bytes(raw[:-25])  # killed mid-write of the last sample
    again = _again(out, borsch_release, scripted_backend(_answers))
    assert again["samples"] == first["samples"]


def test_corrupt_run_json_is_a_clear_error(run, borsch_release, scripted_backend) -> None:
    out, _ = run
    (out / "run.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(RunMismatch, match=r"run\.json is corrupt"):
        _again(out, borsch_release, scripted_backend(_answers))


# 15. a model that does not load leaves nothing; --out inside a release folder is refused
@pytest.mark.e2e
def test_wrong_model_leaves_no_run_json(borsch_release, tiny_model: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    wrong = TransformersBackend(str(tmp_path / "no-such-model"))
    with pytest.raises(ModelLoadError, match="cannot load model"):
        run_eval("borsch", "origin-qa", wrong, out, local=str(borsch_release.folder), limit=1)
    assert not (out / "run.json").exists()
    right = TransformersBackend(str(tiny_model))
    right.sampling = type(right.sampling)(max_new_tokens=4)
    results = run_eval("borsch", "origin-qa", right, out, local=str(borsch_release.folder), limit=1)
    assert results["samples"] == 10


def test_out_inside_release_folder_is_refused(borsch_release, scripted_backend, tmp_path: Path) -> None:
    import shutil

    release = tmp_path / "rel"
    shutil.copytree(borsch_release.folder, release)
    with pytest.raises(CultureBenchError, match="inside the release folder"):
        run_eval(
            "borsch", "origin-qa", scripted_backend("x"), release / "runs" / "a", local=str(release), limit=1
        )
    assert not (release / "runs").exists()
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(CultureBenchError, match="is a file"):
        run_eval("borsch", "origin-qa", scripted_backend("x"), afile, local=str(release), limit=1)


# 18. --base-url without a scheme fails at once, not after a minute of retries
@pytest.mark.unit
@pytest.mark.parametrize("url", ["127.0.0.1:8000/v1", "localhost", "ftp://127.0.0.1/v1", "http:///v1"])
def test_base_url_without_scheme_fails_fast(url: str) -> None:
    with pytest.raises(EndpointError, match="must be an http"):  # at construction: no request made
        OpenAIBackend("m", base_url=url)


def test_client_errors_are_not_retried(servers) -> None:
    from http.server import BaseHTTPRequestHandler

    from culturebench.eval.backends.base import Request

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            self.server.hits += 1
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(400)
            self.send_header("Retry-After", "3600")
            self.end_headers()
            self.wfile.write(b'{"error": "bad model"}')

    with servers.running(Handler, hits=0) as server:
        backend = OpenAIBackend("m", base_url=f"http://127.0.0.1:{server.server_address[1]}/v1", backoff_s=0)
        with pytest.raises(EndpointError, match="HTTP 400"):
            backend.generate([Request("a", "hi")])
        assert server.hits == 1


# 19. bootstrap over dishes, not prompts
@pytest.mark.unit
def test_bootstrap_resamples_dishes() -> None:
    import random

    rng = random.Random(0)
    values, units = [], []
    for dish in range(300):  # five prompts per dish that agree with each other
        level = float(rng.random() < 0.4)
        for _ in range(5):
            values.append(level)
            units.append(f"dish{dish}")
    mean, lo, hi = bootstrap_ci(values, units=units)
    mean_p, lo_p, hi_p = bootstrap_ci(values)
    assert mean == mean_p
    width, width_prompts = hi - lo, hi_p - lo_p
    # Prompts of a dish are perfectly correlated: the honest interval is sqrt(5) ~ 2.2x wider.
    assert 1.8 < width / width_prompts < 2.7, (width, width_prompts)
    assert lo <= mean <= hi
    assert bootstrap_ci(values, units=units) == (mean, lo, hi)  # deterministic


def test_reported_intervals_use_dishes(run) -> None:
    _out, results = run
    ru = results["metrics"]["ru"]
    assert ru["n"] == LIMIT * 5 and ru["n_dishes"] == LIMIT


@pytest.mark.unit
def test_base_url_credentials_are_not_recorded() -> None:
    backend = OpenAIBackend("m", base_url="http://alice:s3cret@127.0.0.1:9/v1")
    assert "s3cret" not in json.dumps(backend.describe())
