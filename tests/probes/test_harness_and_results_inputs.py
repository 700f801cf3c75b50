"""Harness logs and `eval results` inputs are checked like any input (issue 40).

Every case is a real file: lm-evaluation-harness samples files in each shape lm-eval writes,
Inspect logs written by Inspect itself (its Python API with its own ``mockllm`` model) and
edited with Inspect's own log writer, run folders written by `culturebench eval score`, and
Hub servers on 127.0.0.1 that accept a connection and never answer. Each bad input must be
one line naming the file, line, field or option, exit 2 (Inspect: its own one-line error),
never a traceback, and nothing written.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from culturebench.cli import app

pytestmark = pytest.mark.integration

pytest.importorskip("inspect_ai")

EXE = str(Path(sys.executable).with_name("culturebench"))
INSPECT = str(Path(sys.executable).with_name("inspect"))
STAMP = "2026-01-01T00-00-00.000000"
LM_TASK = "culturebench_wwd_country"


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def _one_line(output: str) -> str:
    """The output is exactly one line (rich may wrap it: joined back), with no traceback."""
    assert "Traceback" not in output, output
    lines = [line for line in output.splitlines() if line.strip()]
    assert lines, output
    return " ".join(" ".join(lines).split())


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


@pytest.fixture(scope="module")
def requests(wwd_release) -> list:
    """The first requests of WWD country (culturebench's own ids and scoring data)."""
    from culturebench.eval.harness.common import harness_requests

    return harness_requests("wwd", "country", local=str(wwd_release.folder)).requests[:6]


# ------------------------------------------------------------------ 1. lm-eval answers
def _lm_line(item, index: int, answer_fields: dict, *, seed: int | None = None, task: str = "wwd/country"):
    from culturebench.eval.harness.common import sample_record

    return {"doc_id": index, "doc": {**sample_record(item, seed), "task": task}, **answer_fields}


def _write_lm(folder: Path, lines: list[dict], *, seeds: object = "absent") -> Path:
    """An lm-eval samples file (and, with ``seeds``, the results file lm-eval writes beside it,
    whose task config carries the export's ``metadata.culturebench``)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"samples_{LM_TASK}_{STAMP}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    if seeds != "absent":
        meta = {"dataset": "wwd", "task": "country", "seeds": seeds, "languages": ["en"]}
        results = {
            "configs": {LM_TASK: {"metadata": {"version": 1.0, "culturebench": meta}}},
            "config": {"model": "hf", "model_args": "pretrained=tiny"},
            "lm_eval_version": "0.4.13",
        }
        (folder / f"results_{STAMP}.json").write_text(json.dumps(results), encoding="utf-8")
    return path


def _score(path: Path, release: Path, out: Path, *extra: str) -> tuple[int, str]:
    args = ["eval", "score", "wwd", "--generations", str(path), "--local", str(release), "--out", str(out)]
    return _cli(*args, *extra)


def test_lm_eval_answers_are_read_in_every_shape_lm_eval_writes(
    requests, wwd_release, tmp_path: Path
) -> None:
    """``filtered_resps`` as a list of strings, a list of lists, a plain string, and ``resps``
    alone: each is the whole answer "France" (a string was once read as its first letter)."""
    shapes = [
        {"resps": [["France"]], "filtered_resps": ["France"]},
        {"resps": [["France"]], "filtered_resps": [["France"]]},
        {"resps": [["France"]], "filtered_resps": "France"},
        {"resps": [["France"]]},
        {"resps": "France", "filtered_resps": None},
    ]
    lines = [_lm_line(item, i, shape) for i, (item, shape) in enumerate(zip(requests, shapes, strict=False))]
    path = _write_lm(tmp_path / "lm", lines)
    code, output = _score(path, wwd_release.folder, tmp_path / "out")
    assert code == 0, output
    samples = [json.loads(s) for s in (tmp_path / "out" / "samples.jsonl").read_text("utf-8").splitlines()]
    assert len(samples) == len(shapes)
    assert [s["output"] for s in samples] == ["France"] * len(shapes)
    assert all(s["predicted"] == ["FR"] for s in samples)


def test_lm_eval_scoring_inside_the_harness_takes_every_shape_too(requests) -> None:
    """The exported task's ``process_results`` (what lm-eval calls) reads the same shapes:
    the answer is "France", never "F"; several answers for one document are an error."""
    from culturebench.errors import CultureBenchError
    from culturebench.eval.harness.common import sample_record
    from culturebench.eval.harness.lm_eval_support import process_results

    doc = {**sample_record(requests[0], None), "task": "wwd/country"}
    for shape in (["France"], [["France"]], "France", ("France",)):
        (sample,) = process_results(doc, shape, ["correct"]).values()
        assert sample["output"] == "France" and sample["predicted"] == ["FR"], shape
    with pytest.raises(CultureBenchError, match=r"gave 2 answers .*culturebench scores exactly one"):
        process_results(doc, [["France", "Peru"]], ["correct"])


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"resps": [["a", "b"]], "filtered_resps": [["a", "b"]]}, "field 'filtered_resps': holds 2 answers"),
        ({"resps": [["a"]], "filtered_resps": []}, "field 'filtered_resps': empty: no answer"),
        (
            {"resps": [["a"]], "filtered_resps": [7]},
            "field 'filtered_resps': expected the answer text, got a",
        ),
        ({"resps": [[None]]}, "field 'resps': expected the answer text, got null"),
        ({"doc_hash": "x"}, "field 'resps': no answer (no filtered_resps or resps)"),
    ],
)
def test_an_lm_eval_answer_that_is_not_one_text_is_one_line(
    requests, wwd_release, tmp_path: Path, fields: dict, message: str
) -> None:
    good = _lm_line(requests[0], 0, {"resps": [["France"]], "filtered_resps": ["France"]})
    path = _write_lm(tmp_path / "lm", [good, _lm_line(requests[1], 1, fields)])
    code, output = _score(path, wwd_release.folder, tmp_path / "out")
    assert code == 2
    line = _one_line(output)
    assert f"{path.name}, row 2, {message}" in line
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ 2. Inspect logs
@pytest.fixture(scope="module")
def inspect_log(wwd_release, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real Inspect log of WWD country: 2 requests x 2 epochs, each epoch answering
    differently (epoch 1 "Nigeria", epoch 2 "France")."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    asked: dict[str, int] = {}

    def answer(messages, tools, tool_choice, config):
        asked[messages[-1].text] = asked.get(messages[-1].text, 0) + 1
        text = "Nigeria" if asked[messages[-1].text] == 1 else "France"
        out = ModelOutput.from_content(model="mockllm", content=text)
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    logs = tmp_path_factory.mktemp("inspect-logs")
    (log,) = inspect_eval(
        "culturebench/wwd_country",
        task_args={"local": str(wwd_release.folder), "epochs": 2},
        model=get_model("mockllm/model", custom_outputs=answer),
        limit=2,
        log_dir=str(logs),
        display="none",
        max_connections=1,
    )
    assert log.status == "success" and len(log.samples) == 4
    return Path(log.location)


def _edited(source: Path, dest: Path, edit, fmt: str = "eval") -> Path:
    """A copy of an Inspect log changed by ``edit`` and written by Inspect's own writer."""
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(source))
    edit(log)
    write_eval_log(log, str(dest), format=fmt)
    return dest


def test_an_inspect_log_without_samples_is_an_error_naming_it(inspect_log: Path, tmp_path: Path) -> None:
    def empty(log) -> None:
        log.samples = []

    def null(log) -> None:
        log.samples = None

    cases = {
        "zero.eval": (_edited(inspect_log, tmp_path / "zero.eval", empty), "the log holds 0 samples"),
        "null.json": (
            _edited(inspect_log, tmp_path / "null.json", null, "json"),
            "the log holds no samples (samples: null",
        ),
    }
    assert "samples" not in json.loads((tmp_path / "null.json").read_text("utf-8"))  # no samples at all
    for name, (path, message) in cases.items():
        out = tmp_path / f"out-{name}"
        code, output = _cli("eval", "score", "wwd", "--generations", str(path), "--out", str(out))
        assert code == 2, (name, output)
        line = _one_line(output)
        assert f"{name}, field 'samples': {message}" in line and "nothing to score" in line, line
        assert not out.exists()


def test_an_unfinished_inspect_log_says_its_status_in_words(inspect_log: Path, tmp_path: Path) -> None:
    """A log whose run ended in an error or was cancelled names its status (Inspect's writers
    refuse a log without one; the reader says "records no status" rather than "None")."""

    def errored(log) -> None:
        log.status = "error"

    def cancelled(log) -> None:
        log.status = "cancelled"

    cases = {
        "error.json": (_edited(inspect_log, tmp_path / "error.json", errored, "json"), "(status error)"),
        "cancelled.eval": (_edited(inspect_log, tmp_path / "c.eval", cancelled), "(status cancelled)"),
    }
    for name, (path, message) in cases.items():
        out = tmp_path / f"out-{name}"
        code, output = _cli("eval", "score", "wwd", "--generations", str(path), "--out", str(out))
        line = _one_line(output)
        assert code == 2 and "did not finish" in line and message in line, (name, line)
        assert "None" not in line and not out.exists()


def _ids_and_outputs(folder: Path) -> dict[str, str]:
    lines = (folder / "samples.jsonl").read_text("utf-8").splitlines()
    return {s["id"]: s["output"] for s in map(json.loads, lines)}


def test_inspect_epochs_are_read_as_the_seeds_they_are(inspect_log: Path, tmp_path: Path) -> None:
    """Two epochs of one id with different answers are two samples, seeds 0 and 1, also when
    the log's config lost its epoch count (once: 'appears twice'; elsewhere: NaN)."""

    def one_epoch(log) -> None:
        log.eval.config.epochs = 1

    logs = {"as-run": inspect_log, "config-says-1": _edited(inspect_log, tmp_path / "e1.eval", one_epoch)}
    for name, path in logs.items():
        out = tmp_path / name
        code, output = _cli("eval", "score", "wwd", "--generations", str(path), "--out", str(out))
        assert code == 0, (name, output)
        got = _ids_and_outputs(out)
        assert len(got) == 4, got
        assert sorted({i.rsplit("@", 1)[1] for i in got}) == ["0", "1"]
        assert {v for k, v in got.items() if k.endswith("@0")} == {"Nigeria"}
        assert {v for k, v in got.items() if k.endswith("@1")} == {"France"}
        results = json.loads((out / "results.json").read_text("utf-8"))
        assert results["seeds"] == [0, 1] and results["samples"] == 4
        assert results["metrics"]["en"]["n"] == 4
        assert results["metrics"]["en"]["correct"]["mean"] == results["metrics"]["en"]["correct"]["mean"]


# ------------------------------------------------ 3. another task, seed or release
def test_lm_eval_samples_of_another_task_or_seed_are_refused(requests, wwd_release, tmp_path: Path) -> None:
    answer = {"resps": [["France"]], "filtered_resps": ["France"]}
    cases = {
        "another task": (
            [_lm_line(requests[0], 0, answer), _lm_line(requests[1], 1, answer, task="wwd/utensils")],
            None,
            "row 2, field 'doc.task': a document of 'wwd/utensils' in a log of wwd/country",
        ),
        "another seed": (
            [_lm_line(requests[0], 0, answer, seed=0), _lm_line(requests[1], 1, answer, seed=9)],
            [0, 1],
            "row 2, field 'doc.id': ",
        ),
        "seeds in a run without seeds": (
            [_lm_line(requests[0], 0, answer, seed=3)],
            None,
            "row 1, field 'doc.id': ",
        ),
    }
    details = {
        "another seed": "has seed 9, not one of the task's seeds [0, 1] (metadata.culturebench.seeds of "
        f"results_{STAMP}.json)",
        "seeds in a run without seeds": "has seed 3, but the task ran without seeds",
    }
    for name, (lines, seeds, message) in cases.items():
        folder = tmp_path / name.replace(" ", "-")
        path = _write_lm(folder, lines, seeds=seeds)
        code, output = _score(path, wwd_release.folder, folder / "out")
        assert code == 2, (name, output)
        line = _one_line(output)
        assert f"{path.name}, {message}" in line, (name, line)
        assert details.get(name, "") in line, (name, line)
        assert not (folder / "out").exists()


def test_a_log_of_another_release_than_the_one_named_is_refused(
    inspect_log: Path, wwd_release, tmp_path: Path
) -> None:
    """The same rows under another manifest (another release): the ids all match, so only the
    recorded pin can tell; once it scored without a word."""
    other = tmp_path / "wwd-other"
    shutil.copytree(wwd_release.folder, other)
    manifest = json.loads((other / "manifest.json").read_text("utf-8"))
    (other / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    code, output = _score(inspect_log, other, tmp_path / "out")
    assert code == 2, output
    line = _one_line(output)
    assert f"{inspect_log.name}, field 'release': the log was made from wwd 1.1.0 (manifest sha256 " in line
    assert "but --local names wwd 1.1.0 (manifest sha256 " in line
    assert not (tmp_path / "out").exists()
    code, output = _score(inspect_log, wwd_release.folder, tmp_path / "same")  # its own release: fine
    assert code == 0, output


# ------------------------------------------------------------ 4. eval results inputs
@pytest.fixture(scope="module")
def scored_run(requests, wwd_release, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run folder: six WWD country answers scored by `eval score`."""
    root = tmp_path_factory.mktemp("scored")
    answers = ["France", "Nigeria", "Algeria", "Japan", "Peru", "Italy"]
    lines = [{"id": item.request.id, "output": a} for item, a in zip(requests, answers, strict=True)]
    (root / "gen.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    code, output = _cli("eval", "score", "wwd", "--task", "country", "--generations", str(root / "gen.jsonl"),
                        "--local", str(wwd_release.folder), "--out", str(root / "run"))  # fmt: skip
    assert code == 0, output
    return root / "run"


def _run_copy(run: Path, dest: Path, results=None, samples=None) -> Path:
    shutil.copytree(run, dest)
    if results is not None:
        data = json.loads((dest / "results.json").read_text("utf-8"))
        results(data)
        (dest / "results.json").write_text(json.dumps(data), encoding="utf-8")  # NaN as JSON's NaN
    if samples is not None:
        (dest / "samples.jsonl").write_bytes(samples((dest / "samples.jsonl").read_bytes()))
    return dest


def _results(*args: str) -> tuple[int, str]:
    return _cli("eval", "results", *args, "--model-id", "local/test")


def test_results_refuse_a_leaderboard_value_that_is_nan_or_out_of_range(
    scored_run: Path, tmp_path: Path
) -> None:
    def value(number):
        def edit(data: dict) -> None:
            data["metrics"]["en"]["correct"]["mean"] = number

        return edit

    cases = {
        "nan": (value(float("nan")), "correct is nan, not a number: no leaderboard value"),
        "above": (value(1.5), "correct is 1.5, outside the metric's range [0, 1] (hub.result.range)"),
        "below": (value(-0.25), "correct is -0.25, outside the metric's range [0, 1]"),
    }
    for name, (edit, message) in cases.items():
        run = _run_copy(scored_run, tmp_path / name, results=edit)
        before = _tree(run)
        code, output = _results(str(run), "--out", str(tmp_path / f"out-{name}"))
        assert code == 2, (name, output)
        line = _one_line(output)
        assert f"{run / 'results.json'}: {message}" in line, (name, line)
        assert not (tmp_path / f"out-{name}").exists() and _tree(run) == before


def test_results_refuse_samples_that_disagree_or_are_cut(scored_run: Path, tmp_path: Path) -> None:
    def drop_last(data: bytes) -> bytes:
        return b"".join(data.splitlines(keepends=True)[:-1])

    def rescore(data: bytes) -> bytes:  # one wrong answer scored as right
        lines = [json.loads(x) for x in data.splitlines()]
        wrong = next(s for s in lines if s["correct"] == 0.0)
        wrong["correct"] = 1.0
        return b"".join(json.dumps(s).encode() + b"\n" for s in lines)

    def cut(data: bytes) -> bytes:
        return data[: len(data) - 40]

    def corrupt(data: bytes) -> bytes:
        lines = data.splitlines(keepends=True)
        return lines[0] + b"{not json\n" + b"".join(lines[1:])

    samples = "samples.jsonl disagrees with results.json"
    cases = {
        "fewer": (drop_last, f"{samples}: it holds 5 samples, results.json says 6"),
        "rescored": (rescore, f"{samples}: correct recomputed from the samples is "),
        "cut": (cut, "samples.jsonl, line 6: truncated (the last line is cut short"),
        "corrupt": (corrupt, "samples.jsonl, line 2: not a JSON sample"),
    }
    for name, (edit, message) in cases.items():
        run = _run_copy(scored_run, tmp_path / name, samples=edit)
        before = _tree(run)
        code, output = _results(str(run), "--out", str(tmp_path / f"out-{name}"))
        assert code == 2, (name, output)
        line = _one_line(output)
        assert f"{run}/{message}" in line, (name, line)
        assert not (tmp_path / f"out-{name}").exists()
        assert _tree(run) == before  # the cut line is not cut off the input


def test_results_refuse_the_same_run_twice(scored_run: Path, tmp_path: Path) -> None:
    copy = _run_copy(scored_run, tmp_path / "copy")
    cases = {
        "twice": ([str(scored_run), str(scored_run)], f"{scored_run} is given twice (also as {scored_run})"),
        "a copy": ([str(scored_run), str(copy)], f"{copy} is the same run as {scored_run}"),
    }
    for name, (runs, message) in cases.items():
        code, output = _results(*runs, "--out", str(tmp_path / "out"))
        assert code == 2, (name, output)
        assert message in _one_line(output), (name, output)
        assert not (tmp_path / "out").exists()


# ------------------------------------------------------------ 5. the output policy
def test_results_out_follows_the_output_policy(scored_run: Path, wwd_release, tmp_path: Path) -> None:
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "mine.txt").write_text("keep me", encoding="utf-8")
    run = _run_copy(scored_run, tmp_path / "run")
    release = tmp_path / "release"
    shutil.copytree(wwd_release.folder, release)
    cases = {
        "a foreign folder": (foreign, "holds files culturebench did not write; refusing to replace it"),
        "the input run": (run, f"--out {run} is the input run {run}"),
        "inside the input run": (run / "hub", f"--out {run / 'hub'} is inside the input run {run}"),
        "holding the input run": (tmp_path, f"--out {tmp_path} holds the input run {run}"),
        "a release": (release, f"--out {release} holds files culturebench did not write"),
        "inside a release": (release / "hub", f"is inside the release folder {release}"),
    }
    before = {p: _tree(p) for p in (foreign, run, release)}
    for name, (out, message) in cases.items():
        code, output = _results(str(run), "--out", str(out))
        assert code == 2, (name, output)
        assert message in _one_line(output), (name, output)
        assert {p: _tree(p) for p in before} == before, name
    assert not (run / "hub").exists() and not (release / "hub").exists()


def test_results_check_everything_before_writing(scored_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    for url in ("https://x/{nope}", "https://x/{path.attr}", "https://x/{0}", "https://x/{"):
        code, output = _results(str(scored_run), "--out", str(out), "--source-url", url)
        assert code == 2, (url, output)
        assert f"--source-url {url!r}: the placeholders are" in _one_line(output)
        assert not out.exists()  # the Every Eval Ever files were once written first
    assert list(tmp_path.iterdir()) == []  # no lock, no staging folder


def test_results_replace_only_their_own_output(
    scored_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    code, output = _results(str(scored_run), "--out", str(out))
    assert code == 0, output
    first = _tree(out)
    assert ".eval_results/wwd.yaml" in first and any(k.startswith("every_eval_ever/data/") for k in first)
    code, output = _results(str(scored_run), "--out", str(out))
    assert code == 2 and "already exists (use --overwrite to replace it)" in _one_line(output)
    assert _tree(out) == first
    # an error part-way (here: the disk is full while staging) leaves the output as it was
    from culturebench.eval import every_eval_ever as eee

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(eee, "write", fail)
    code, output = _results(str(scored_run), "--out", str(out), "--overwrite")
    assert code == 2 and "No space left on device" in _one_line(output)
    assert _tree(out) == first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no staging folder left behind
    monkeypatch.undo()
    code, output = _results(str(scored_run), "--out", str(out), "--overwrite")
    assert code == 0, output
    assert _tree(out) == first


# ------------------------------------------------------------ 6. Hub deadlines
@contextmanager
def _stalled_hub(answer_preupload: bool = False) -> Iterator[tuple[str, list[str]]]:
    """A server on 127.0.0.1 that accepts every connection and never answers (with
    ``answer_preupload``: it answers the pre-upload call as the Hub does, then stalls on the
    commit). Yields its URL and the request lines it read."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    seen: list[str] = []
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        conn.settimeout(0.2)
        data = b""
        while not stop.is_set():
            try:
                chunk = conn.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            if not chunk:
                return
            data += chunk
            while b"\r\n\r\n" in data:
                head, _, rest = data.partition(b"\r\n\r\n")
                length = next(
                    (
                        int(h.split(b":")[1])
                        for h in head.split(b"\r\n")
                        if h.lower().startswith(b"content-length")
                    ),
                    0,
                )
                if len(rest) < length:
                    break
                data = rest[length:]
                line = head.split(b"\r\n")[0].decode()
                seen.append(line)
                if answer_preupload and "/preupload/" in line:
                    files = json.loads(rest[:length])["files"]
                    body = json.dumps(
                        {
                            "files": [
                                {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                                for f in files
                            ]
                        }
                    ).encode()
                    conn.sendall(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                        + str(len(body)).encode()
                        + b"\r\n\r\n"
                        + body
                    )

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            held.append(conn)
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}", seen
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        server.close()


def _pr_env(url: str, tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "HF_ENDPOINT": url, "HF_HUB_OFFLINE": "0", "HF_HOME": str(tmp_path / "hf")}
    return {**env, "HF_TOKEN": "hf_stalledtesttoken123456", "NO_COLOR": "1", "COLUMNS": "400"}


@pytest.mark.parametrize("answer_preupload", [False, True], ids=["stalls-at-once", "stalls-on-the-commit"])
def test_to_repo_against_a_hub_that_never_answers_ends_within_the_timeout(
    scored_run: Path, tmp_path: Path, answer_preupload: bool
) -> None:
    out = tmp_path / "out"
    args = [
        EXE,
        "eval",
        "results",
        str(scored_run),
        "--out",
        str(out),
        "--to",
        "someone/m",
        "--timeout",
        "2",
    ]
    with _stalled_hub(answer_preupload) as (url, seen):
        started = time.monotonic()
        done = subprocess.run(args, capture_output=True, text=True, env=_pr_env(url, tmp_path), timeout=60)
        took = time.monotonic() - started
    assert done.returncode == 2, done.stdout + done.stderr
    assert took < 30, took
    assert "Traceback" not in done.stderr and "hf_stalledtesttoken" not in done.stdout + done.stderr
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("error:")]  # after the run's notes
    assert line.startswith("error: cannot open a pull request on someone/m: ")
    if answer_preupload:
        assert f"{url}/api/models/someone/m/commit/main did not answer within 2 s (--timeout)" in line
        assert f"the pull request may have been opened: check {url}/someone/m/discussions" in line
        assert any("/commit/main" in request for request in seen)
    else:
        assert f"{url}/api/models/someone/m/preupload/main did not answer within 2 s (--timeout)" in line
        assert line.endswith("nothing was published")
    assert (out / ".eval_results" / "wwd.yaml").is_file()  # the files are written first, and kept


def test_a_bad_timeout_is_one_line(scored_run: Path, tmp_path: Path) -> None:
    for value in ("0", "-1", "nan", "inf"):
        code, output = _results(
            str(scored_run), "--out", str(tmp_path / "o"), "--to", "a/b", "--timeout", value
        )
        assert code == 2, (value, output)
        assert "--timeout" in _one_line(output) and "a number of seconds above 0" in output
        assert not (tmp_path / "o").exists()


# ------------------------------------------------------------ 7. Inspect -T values
def test_inspect_task_arguments_are_one_line_naming_the_option(wwd_release, tmp_path: Path) -> None:
    """Through Inspect's own CLI: each bad ``-T`` value is Inspect's one-line error, naming the
    task and the option (once a Python traceback)."""
    local = f"local={wwd_release.folder}"
    foreign = tmp_path / "foreign-release"  # a release of another dataset (its manifest says so)
    shutil.copytree(wwd_release.folder, foreign)
    manifest = json.loads((foreign / "manifest.json").read_text("utf-8"))
    (foreign / "manifest.json").write_text(json.dumps({**manifest, "dataset": "borsch"}), encoding="utf-8")
    cases = {
        "missing release": (["-T", f"local={tmp_path / 'nope'}"], f"-T local={tmp_path / 'nope'}: ",
                            "is not a release folder (no manifest.json)"),
        "foreign release": (["-T", f"local={foreign}"], f"-T local={foreign}: ",
                            "is a release of 'borsch', not 'wwd'"),
        "unknown language": (["-T", local, "-T", "lang=xx"], "-T lang=xx: ", "has no prompts in 'xx'"),
        "epochs 0": (["-T", local, "-T", "epochs=0"], "-T epochs=0: ", "expected a whole number from 1"),
        "epochs x": (["-T", local, "-T", "epochs=x"], "-T epochs=x: ", "expected a whole number from 1"),
        "two releases": (["-T", local, "-T", "revision=v1.0.0"], "-T local=",
                         "-T local and -T revision both name a release"),
    }  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "NO_COLOR": "1", "COLUMNS": "400"}
    procs = {}
    for name, (args, _, _) in cases.items():
        command = [INSPECT, "eval", "culturebench/wwd_country", *args, "--model", "mockllm/model",
                   "--display", "plain", "--log-dir", str(tmp_path / "logs")]  # fmt: skip
        procs[name] = subprocess.Popen(
            command, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
    for name, (_, option, message) in cases.items():
        stdout, stderr = procs[name].communicate(timeout=120)
        assert procs[name].returncode == 1, (name, stdout, stderr)
        assert "Traceback" not in stdout + stderr, (name, stderr)
        lines = [line for line in (stdout + stderr).splitlines() if line.strip()]
        assert len(lines) == 1, (name, lines)
        assert lines[0].startswith(f"culturebench/wwd_country {option}"), (name, lines)
        assert message in lines[0], (name, lines)
    assert not (tmp_path / "logs").exists()  # refused before Inspect starts a log
