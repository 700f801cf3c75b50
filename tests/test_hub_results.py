"""`culturebench eval results`: real runs as Hub leaderboard entries (`.eval_results`) and
Every Eval Ever records, and the pull request that proposes the entries to a model repo.

The runs are made by culturebench itself: the WWD authors' recorded GPT-3.5 outputs scored by
`eval score` (conftest's `gpt35_scored`), the tiny local model on a local BORSCH release and
on the same release published to a git repository served by olah (a real Hub download
server), so the run pins a Hub commit. The pull request goes to `servers.fake_hub` (tests/servers.py), a
hand-written fake of the Hub's two commit endpoints on 127.0.0.1 (no local implementation of
the upload protocol exists).
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from culturebench.cards.hub_tasks import hub_tasks
from culturebench.cli import app
from culturebench.errors import CultureBenchError
from culturebench.eval import every_eval_ever as eee
from culturebench.eval.hub_runs import read_run_result

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parent.parent
WWD_TASKS = ("country", "description", "ingredients", "meal-type", "time-of-day", "utensils")
GPT35 = "openai/gpt-3.5-turbo"
EXE = str(Path(sys.executable).with_name("culturebench"))


def _results(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["eval", "results", *args])
    return result.exit_code, result.output


def _entries(path: Path) -> list:
    from huggingface_hub import parse_eval_result_entries

    return parse_eval_result_entries(yaml.safe_load(path.read_text(encoding="utf-8")))


def _eval_yaml_ids(release: Path) -> list[str]:
    data = yaml.safe_load((release / "eval.yaml").read_text(encoding="utf-8"))
    return [task["id"] for task in data["tasks"]]


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def _validate(data: dict, schema: str) -> None:
    """Validate with jsonschema directly against the vendored file (not through our helper)."""
    from jsonschema import Draft7Validator

    path = REPO / "eval" / "data" / "every_eval_ever" / schema
    Draft7Validator(json.loads(path.read_text(encoding="utf-8"))).validate(data)


@pytest.fixture(scope="module")
def tiny_run(borsch_release, tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`eval run borsch --task origin-qa` on the tiny model, both languages, two dishes."""
    out = tmp_path_factory.mktemp("tiny-run") / "origin-qa"
    result = CliRunner().invoke(
        app,
        [
            "eval",
            "run",
            "borsch",
            "--task",
            "origin-qa",
            "--model",
            str(tiny_model),
            "--local",
            str(borsch_release.folder),
            "--limit",
            "2",
            "--max-new-tokens",
            "4",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    return out


# ------------------------------------------------------------------- .eval_results
def test_recorded_runs_become_leaderboard_entries(gpt35_scored: Path, wwd_release, tmp_path: Path) -> None:
    runs = [str(gpt35_scored / task) for task in WWD_TASKS]
    code, output = _results(*runs, "--out", str(tmp_path / "out"), "--model-id", GPT35)
    assert code == 0, output
    path = tmp_path / "out" / ".eval_results" / "wwd.yaml"
    assert sorted(p.name for p in (tmp_path / "out" / ".eval_results").iterdir()) == ["wwd.yaml"]
    entries = _entries(path)
    assert [e.task_id for e in entries] == list(WWD_TASKS)
    assert set(WWD_TASKS) == set(_eval_yaml_ids(wwd_release.folder))  # the release's eval.yaml ids
    declared = hub_tasks("wwd")
    for task, entry in zip(WWD_TASKS, entries, strict=True):
        results = json.loads((gpt35_scored / task / "results.json").read_text(encoding="utf-8"))
        metric = declared[task].result.metric
        assert entry.value == results["metrics"]["en"][metric]["mean"]
        assert entry.dataset_id == "culturebench/wwd" and entry.dataset_revision is None  # a local release
        assert entry.source_url is None and entry.date and len(entry.date) == 10
        samples_sha = hashlib.sha256((gpt35_scored / task / "samples.jsonl").read_bytes()).hexdigest()
        assert f"samples: {task}/samples.jsonl sha256 {samples_sha}" in entry.notes
        assert f"value: {metric} over {results['metrics']['en']['n']} samples" in entry.notes
        assert "read a local release 1.1.0 (manifest sha256 " in entry.notes
        assert "seeds: 0,1,2,3,4" in entry.notes and "via recorded" in entry.notes
        assert f"scorer: culturebench wwd/{task}" in entry.notes
    assert "(lower is better)" in entries[1].notes  # description: failure-mode rate
    assert f"date: '{entries[0].date}'" in path.read_text(encoding="utf-8")  # quoted, a string


def test_every_eval_ever_records_validate_and_are_reproducible(gpt35_scored: Path, tmp_path: Path) -> None:
    runs = [str(gpt35_scored / task) for task in ("country", "meal-type")]
    for name in ("a", "b"):
        code, output = _results(*runs, "--out", str(tmp_path / name), "--model-id", GPT35)
        assert code == 0, output
    assert _tree(tmp_path / "a") == _tree(tmp_path / "b")  # same runs, same files (uuid from the run)
    root = tmp_path / "a" / "every_eval_ever"
    records = sorted(root.glob("data/wwd/openai/gpt-3.5-turbo/*.json"))
    assert len(records) == 2
    for record in records:
        data = json.loads(record.read_text(encoding="utf-8"))
        _validate(data, "eval.schema.json")
        detail = data["detailed_evaluation_results"]
        lines_path = root / detail["file_path"]
        assert lines_path == record.with_name(record.stem + "_samples.jsonl")
        assert detail["checksum"] == hashlib.sha256(lines_path.read_bytes()).hexdigest()
        lines = [json.loads(line) for line in lines_path.read_text(encoding="utf-8").splitlines()]
        assert detail["total_rows"] == len(lines) > 0
        for line in lines[:50]:
            _validate(line, "instance_level_eval.schema.json")
        result = data["evaluation_results"][0]
        task = result["evaluation_name"]
        assert {line["evaluation_result_id"] for line in lines} == {result["evaluation_result_id"]}
        results = json.loads((gpt35_scored / task / "results.json").read_text(encoding="utf-8"))
        metric = hub_tasks("wwd")[task].result.metric
        assert result["score_details"]["score"] == results["metrics"]["en"][metric]["mean"]
        assert result["source_data"]["source_type"] == "other"  # a local release, not a Hub revision
        samples = [json.loads(s) for s in (gpt35_scored / task / "samples.jsonl").open(encoding="utf-8")]
        scored = [s for s in samples if s.get(metric) is not None]
        assert len(lines) == len(scored)  # meal-type: answers without a gold are not scored
        assert [line["evaluation"]["score"] for line in lines] == [float(s[metric]) for s in scored]
        assert lines[0]["input"]["raw"] == scored[0]["prompt"]
        assert data["model_info"]["id"] == GPT35 and data["eval_library"]["name"] == "culturebench"


@pytest.mark.e2e
def test_a_two_language_run_pools_its_groups(
    tiny_run: Path, gpt35_scored: Path, borsch_release, tmp_path: Path
) -> None:
    """Runs of two datasets give two files; a value over two prompt languages is their
    sample-weighted mean; notes carry the sampling and say the run covers a few rows only."""
    code, output = _results(
        str(tiny_run), str(gpt35_scored / "country"), "--out", str(tmp_path), "--model-id", "local/tiny"
    )
    assert code == 0, output
    assert "covers only part of the release (--limit 2: 2 of " in " ".join(output.split())
    assert sorted(p.name for p in (tmp_path / ".eval_results").iterdir()) == ["borsch.yaml", "wwd.yaml"]
    (entry,) = _entries(tmp_path / ".eval_results" / "borsch.yaml")
    metrics = json.loads((tiny_run / "results.json").read_text(encoding="utf-8"))["metrics"]
    ru, uk = metrics["ru"], metrics["uk"]
    expected = (ru["jaccard"]["mean"] * ru["n"] + uk["jaccard"]["mean"] * uk["n"]) / (ru["n"] + uk["n"])
    assert entry.value == pytest.approx(expected, abs=1e-12)
    assert entry.task_id == "origin-qa" and entry.task_id in _eval_yaml_ids(borsch_release.folder)
    assert "the sample-weighted mean of ru " in entry.notes and ", uk " in entry.notes
    assert "max_new_tokens=4" in entry.notes and "temperature=0.0 (greedy)" in entry.notes
    assert "limit: --limit 2: 2 of " in entry.notes and "spread over" in entry.notes
    assert "languages: ru, uk" in entry.notes
    assert "(a local folder) via transformers" in entry.notes and str(tiny_run.parent) not in entry.notes
    (record,) = (tmp_path / "every_eval_ever" / "data" / "borsch" / "local" / "tiny").glob("*.json")
    data = json.loads(record.read_text(encoding="utf-8"))
    _validate(data, "eval.schema.json")
    generation = data["evaluation_results"][0]["generation_config"]["generation_args"]
    assert generation == {"temperature": 0.0, "max_tokens": 4}
    details = data["evaluation_results"][0]["generation_config"]["additional_details"]
    assert (details["limit"], details["limit_rows"]) == ("2", "spread")  # how --limit chose the rows


@pytest.mark.e2e
def test_a_hub_run_names_the_commit_it_read(
    borsch_release, tiny_model: Path, tmp_path: Path, servers
) -> None:
    """A run of a Hub revision: its entry names the repo and the commit sha the run pinned,
    which is the commit of the release's tag."""
    run = tmp_path / "run"
    out_root = tmp_path / "dist"
    shutil.copytree(borsch_release.folder, out_root / "borsch" / "1.0.0")
    with servers.local_hub(tmp_path / "hub") as hub:
        hub.publish("borsch", "1.0.0", out_root=out_root)
        env = hub.client_env(tmp_path / "hf")
        args = ["eval", "run", "borsch", "--task", "origin-qa", "--revision", "v1.0.0", "--lang", "ru"]
        args += ["--model", str(tiny_model), "--limit", "2", "--max-new-tokens", "4", "--out", str(run)]
        proc = subprocess.run([EXE, *args], capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        tag = subprocess.run(
            ["git", "-C", str(hub.repo_path("culturebench/borsch")), "rev-list", "-n", "1", "v1.0.0"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    code, output = _results(str(run), "--out", str(tmp_path / "out"))
    assert code == 0, output
    assert "read a local release" not in output
    (entry,) = _entries(tmp_path / "out" / ".eval_results" / "borsch.yaml")
    pinned = json.loads((run / "results.json").read_text(encoding="utf-8"))["provenance"]["dataset"]
    assert entry.dataset_id == "culturebench/borsch"
    assert entry.dataset_revision == pinned["commit_sha"] == tag
    assert f"dataset: culturebench/borsch@{tag} (requested v1.0.0)" in entry.notes
    (record,) = (tmp_path / "out" / "every_eval_ever" / "data" / "borsch" / "local").glob("*/*.json")
    source = json.loads(record.read_text(encoding="utf-8"))["evaluation_results"][0]["source_data"]
    assert source["source_type"] == "hf_dataset" and source["hf_repo"] == "culturebench/borsch"
    assert source["additional_details"]["revision"] == tag


def test_source_url_names_the_published_samples(gpt35_scored: Path, tmp_path: Path) -> None:
    url = "https://huggingface.co/datasets/someone/evals/resolve/main/{path}"
    code, output = _results(
        str(gpt35_scored / "country"), "--out", str(tmp_path), "--model-id", GPT35, "--source-url", url
    )
    assert code == 0, output
    (entry,) = _entries(tmp_path / ".eval_results" / "wwd.yaml")
    (samples,) = (tmp_path / "every_eval_ever").rglob("*_samples.jsonl")
    assert entry.source_url == url.format(path=samples.relative_to(tmp_path).as_posix())
    assert entry.source_name == "culturebench samples of wwd/country"
    assert "samples.jsonl sha256" not in entry.notes


# ------------------------------------------------------------------- the pull request
def _pr_env(url: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "HF_ENDPOINT": url, "HF_HUB_OFFLINE": "0", "HF_HOME": str(tmp_path / "hf")}
    env.pop("HF_TOKEN", None)
    return {**env, **extra}


def test_to_repo_opens_a_pull_request(gpt35_scored: Path, tmp_path: Path, servers) -> None:
    runs = [str(gpt35_scored / task) for task in ("country", "utensils")]
    args = [
        EXE,
        "eval",
        "results",
        *runs,
        "--out",
        str(tmp_path / "out"),
        "--to",
        "someone/gpt35-probing",
    ]
    with servers.fake_hub() as hub:
        proc = subprocess.run(
            args, capture_output=True, text=True, env=_pr_env(hub.url, tmp_path, HF_TOKEN="hf_test_token")
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (pull,) = hub.pulls
    assert f"pull request: {hub.url}/someone/gpt35-probing/discussions/1" in proc.stdout
    assert (pull.repo, pull.revision, pull.create_pr) == ("someone/gpt35-probing", "main", True)
    assert pull.authorization == "Bearer hf_test_token"
    local = tmp_path / "out" / ".eval_results" / "wwd.yaml"
    assert pull.files == {".eval_results/wwd.yaml": local.read_bytes()}
    assert [e.task_id for e in _entries(local)] == ["country", "utensils"]
    assert pull.summary == "Add evaluation results (.eval_results/wwd.yaml)"
    posts = [path.split("?")[0] for method, path in hub.requests if method == "POST"]
    assert posts == [
        "/api/models/someone/gpt35-probing/preupload/main",
        "/api/models/someone/gpt35-probing/commit/main",
    ]
    # the model repo names the model of the EEE records when --model-id is not given
    assert [p.name for p in (tmp_path / "out" / "every_eval_ever" / "data" / "wwd").iterdir()] == ["someone"]


def test_no_pull_request_offline_or_without_a_token(gpt35_scored: Path, tmp_path: Path, servers) -> None:
    args = [EXE, "eval", "results", str(gpt35_scored / "country"), "--to", "someone/m"]
    with servers.fake_hub() as hub:
        offline = subprocess.run(
            [*args, "--out", str(tmp_path / "a")],
            capture_output=True,
            text=True,
            env=_pr_env(hub.url, tmp_path, HF_TOKEN="hf_x", HF_HUB_OFFLINE="1"),
        )
        tokenless = subprocess.run(
            [*args, "--out", str(tmp_path / "b")],
            capture_output=True,
            text=True,
            env=_pr_env(hub.url, tmp_path),
        )
    assert offline.returncode == 2 and "HF_HUB_OFFLINE is set: cannot open a pull request" in offline.stderr
    assert tokenless.returncode == 2 and "no Hugging Face token" in tokenless.stderr
    assert hub.pulls == [] and "Traceback" not in offline.stderr + tokenless.stderr
    assert (tmp_path / "a" / ".eval_results" / "wwd.yaml").is_file()  # the files are written first


# ------------------------------------------------------------------------- bad input
def test_a_broken_record_fails_the_schemas_and_is_not_written(gpt35_scored: Path, tmp_path: Path) -> None:
    result = read_run_result(gpt35_scored / "country")
    record = eee.build(result, dataset_id="culturebench/wwd", revision=None, model_id=GPT35)
    assert eee.schema_errors(record.aggregate, eee.AGGREGATE_SCHEMA) == []
    broken = copy.deepcopy(record.aggregate)
    broken["source_metadata"]["evaluator_relationship"] = "self"
    del broken["model_info"]
    errors = eee.schema_errors(broken, eee.AGGREGATE_SCHEMA)
    assert any(e.startswith("source_metadata/evaluator_relationship: 'self' is not one of") for e in errors)
    assert any("'model_info' is a required property" in e for e in errors)
    line = copy.deepcopy(record.samples[0])
    line["evaluation"]["score"] = "high"
    assert eee.schema_errors(line, eee.INSTANCE_SCHEMA) == [
        "evaluation/score: 'high' is not of type 'number'"
    ]
    with pytest.raises(
        CultureBenchError, match=r"_samples\.jsonl, line 1: not valid Every Eval Ever 0\.3\.0"
    ):
        eee.write(eee.Record(record.folder, record.uuid, record.aggregate, [line]), tmp_path)
    with pytest.raises(
        CultureBenchError,
        match=r"\.json: not valid Every Eval Ever 0\.3\.0: \(top\): 'model_info' is a required",
    ):
        eee.write(
            eee.Record(
                record.folder,
                record.uuid,
                {**broken, "source_metadata": record.aggregate["source_metadata"]},
                [],
            ),
            tmp_path,
        )
    assert list(tmp_path.iterdir()) == []


def _mutations(data: dict) -> list[dict]:
    """Broken copies of a record: each key (at the top and one level down) removed, given a
    value of another JSON type, and an unknown key added beside it."""
    out = []
    for path in [(k,) for k in data] + [(k, j) for k, v in data.items() if isinstance(v, dict) for j in v]:
        for value in (None, 7, "x", [], {}, True):
            broken = copy.deepcopy(data)
            parent = broken if len(path) == 1 else broken[path[0]]
            parent[path[-1]] = value
            out.append(broken)
        removed = copy.deepcopy(data)
        parent = removed if len(path) == 1 else removed[path[0]]
        del parent[path[-1]]
        parent["not_in_the_schema"] = 1
        out.append(removed)
    return out


def test_the_compiled_schema_agrees_with_jsonschema(gpt35_scored: Path) -> None:
    """``schema_errors`` takes fastjsonschema's yes as valid and asks jsonschema otherwise: on
    real records and on hundreds of broken copies the two must judge alike."""
    from jsonschema import Draft7Validator

    assert eee._compiled(eee.INSTANCE_SCHEMA) is not None  # the interop extra has fastjsonschema
    result = read_run_result(gpt35_scored / "meal-type")
    record = eee.build(result, dataset_id="culturebench/wwd", revision=None, model_id=GPT35)
    cases = [(record.aggregate, eee.AGGREGATE_SCHEMA)] + [(s, eee.INSTANCE_SCHEMA) for s in record.samples]
    cases += [(m, eee.AGGREGATE_SCHEMA) for m in _mutations(record.aggregate)]
    cases += [(m, eee.INSTANCE_SCHEMA) for m in _mutations(record.samples[0])]
    judged = {"valid": 0, "invalid": 0}
    for data, schema in cases:
        before = copy.deepcopy(data)
        path = REPO / "eval" / "data" / "every_eval_ever" / schema
        reference = Draft7Validator(json.loads(path.read_text(encoding="utf-8"))).is_valid(data)
        assert (eee.schema_errors(data, schema) == []) == reference, data
        assert data == before  # no default written into the record
        judged["valid" if reference else "invalid"] += 1
    assert judged["valid"] > len(record.samples) and judged["invalid"] > 100, judged


def _copy_run(source: Path, dest: Path, edit) -> Path:
    shutil.copytree(source, dest)
    for name in ("run.json", "results.json"):
        data = json.loads((dest / name).read_text(encoding="utf-8"))
        edit(name, data)
        (dest / name).write_text(json.dumps(data), encoding="utf-8")
    return dest


@pytest.mark.e2e
def test_bad_input_is_one_line(
    gpt35_scored: Path, tiny_run: Path, borsch_release, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = str(tmp_path / "out")
    empty = tmp_path / "empty"
    empty.mkdir()

    def task(name: str, data: dict) -> None:
        (data if name == "run.json" else data["provenance"])["task"] = "t2i-generate"

    def shard(name: str, data: dict) -> None:
        if name == "results.json":
            data["shard"] = "1/2"

    cases = {
        "not a run": ([str(empty)], f"{empty} is not an eval run folder (no run.json)"),
        "a release": ([str(borsch_release.folder)], "is not an eval run folder (no run.json)"),
        "no such folder": ([str(tmp_path / "nope")], "is not a run folder (no such folder)"),
        "not a Hub task": (
            [str(_copy_run(gpt35_scored / "country", tmp_path / "t2i", task))],
            "wwd/t2i-generate is not a task of the Hub's eval.yaml",
        ),
        "a shard": (
            [str(_copy_run(gpt35_scored / "country", tmp_path / "shard", shard))],
            "join the shards first (culturebench eval merge)",
        ),
        "two models": ([str(tiny_run), str(gpt35_scored / "country")], "the runs are of 2 models"),
        "bad repo": ([str(tiny_run), "--to", "no-slash"], "--to 'no-slash': expected ORG/MODEL"),
    }
    for name, (args, message) in cases.items():
        code, output = _results(*args, "--out", out)
        assert code == 2, (name, output)
        assert message in " ".join(output.split()), (name, output)
        assert "Traceback" not in output
    assert not (tmp_path / "out" / ".eval_results").exists()  # nothing written for bad input
    monkeypatch.setitem(sys.modules, "jsonschema", None)
    code, output = _results(str(tiny_run), "--out", out)
    assert code == 2 and "pip install 'culturebench[interop]'" in output
