"""Batch mode of the OpenAI-compatible backend (eval/backends/openai_batch.py): the input and
output file formats, splitting at the provider's limits, and whole runs against
tests/fake_batch_api.py, a hand-written FAKE of OpenAI's files and batches endpoints (no open
implementation exists here) whose batches are answered by a real server (`transformers serve`
with the tiny model). The round trip through `vllm run-batch` is in tests/test_vllm.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from culturebench.cli import app
from culturebench.eval.backends import check_model_args, make_backend
from culturebench.eval.backends.base import Request, SamplingParams
from culturebench.eval.backends.openai_batch import (
    LEDGER,
    BatchError,
    BatchRun,
    Ledger,
    input_line,
    read_output,
    split_parts,
)

CLI = [sys.executable, "-c", "from culturebench.cli import main; main()"]


def _lines(n: int, size: int = 10) -> list[tuple[str, bytes]]:
    return [
        (f"r{i}", input_line(f"r{i}", {"messages": [{"role": "user", "content": "x" * size}]}))
        for i in range(n)
    ]


def test_parts_stay_within_the_request_and_byte_limits() -> None:
    lines = _lines(10)
    by_count = split_parts(lines, 4, 10**6)
    assert [len(p.ids) for p in by_count] == [4, 4, 2]
    assert [i for p in by_count for i in p.ids] == [f"r{i}" for i in range(10)]  # order kept
    one = len(lines[0][1])
    by_bytes = split_parts(lines, 100, 3 * one)
    assert [len(p.ids) for p in by_bytes] == [3, 3, 3, 1] and all(len(p.data) <= 3 * one for p in by_bytes)
    assert len({p.sha256 for p in by_bytes}) == 4
    with pytest.raises(BatchError, match=r"request r0: its batch line is .* bytes, over the 1,024"):
        split_parts(_lines(1, size=2000), 100, 1024)


def test_output_lines_give_answers_and_failures_by_custom_id() -> None:
    ok = {
        "custom_id": "a",
        "response": {"status_code": 200, "body": {"choices": [{"message": {"content": " Italy "}}]}},
    }
    refused = {"custom_id": "b", "response": {"status_code": 400, "body": {"error": {"message": "too long"}}}}
    failed = {"custom_id": "c", "response": None, "error": {"code": "x", "message": "server error"}}
    empty = {"custom_id": "d", "response": {"status_code": 200, "body": {"choices": []}}}
    text = "\n".join(json.dumps(x) for x in (ok, refused, failed, empty)) + "\n"
    assert read_output(text, "out") == {
        "a": ("Italy", None),
        "b": (None, "HTTP 400: too long"),
        "c": (None, "server error"),
        "d": (None, "answer has no choices[0].message.content"),
    }
    with pytest.raises(BatchError, match=r"^out, line 2: not a batch output line"):
        read_output(json.dumps(ok) + "\n{oops\n", "out")


def test_a_damaged_record_is_one_line(tmp_path: Path) -> None:
    (tmp_path / LEDGER).write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(BatchError, match=r"batches.json: not a batch record .* move it away"):
        Ledger(tmp_path)


def _client(url: str, model: str, **args: str):
    given = [("base_url", url), ("batch", "true"), ("batch_poll", "0.05"), *args.items()]
    return make_backend(
        "openai",
        model,
        sampling=SamplingParams(max_new_tokens=8),
        model_args=check_model_args("openai", given),
    )


def _run_args(model: Path, url: str, release, out: Path, *extra: str) -> list[str]:
    return [
        *("eval", "run", "wwd", "--task", "country", "--backend", "openai", "--model", str(model)),
        *("--base-url", url, "--local", str(release.folder), "--limit", "6", "--max-new-tokens", "8"),
        *("--no-cache", "--out", str(out), *extra),
    ]


def _without_run_key(folder: Path) -> list[dict]:
    lines = (folder / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    return [{k: v for k, v in json.loads(line).items() if k != "run"} for line in lines]


BATCH = ("--model-arg", "batch=true", "--model-arg", "batch_poll=0.05")


def test_a_batch_run_writes_the_samples_a_direct_run_writes(
    served: str, tiny_model: Path, wwd_release, batch_api, tmp_path: Path
) -> None:
    """A WWD cell in batch mode, split into parts of 4, gives byte-identical samples to the
    same cell sent request by request to the same server; the parts are recorded."""
    with batch_api.fake_batch_api(batch_api.forward_to(served)) as api:
        direct = CliRunner().invoke(app, _run_args(tiny_model, served, wwd_release, tmp_path / "direct"))
        assert direct.exit_code == 0, direct.output
        args = _run_args(tiny_model, api.url, wwd_release, tmp_path / "batch", *BATCH)
        batched = CliRunner().invoke(app, [*args, "--model-arg", "batch_max_requests=4"])
        assert batched.exit_code == 0, batched.output
    assert (api.uploads, api.creates) == (2, 2)
    direct_samples, batch_samples = (_without_run_key(tmp_path / name) for name in ("direct", "batch"))
    assert len(direct_samples) == 6 and batch_samples == direct_samples  # (the run key covers the base URL)
    record = json.loads((tmp_path / "batch" / LEDGER).read_text(encoding="utf-8"))["batches"]
    assert [b["requests"] for b in record] == [4, 2] and {b["status"] for b in record} == {"completed"}
    run = json.loads((tmp_path / "batch" / "run.json").read_text(encoding="utf-8"))
    assert run["model"]["runtime"]["batch"] is True  # recorded, not part of the run's identity
    assert "batch" not in run["model"].get("model_args", {})


def test_a_run_killed_while_polling_resumes_its_batch(
    served: str, tiny_model: Path, wwd_release, batch_api, tmp_path: Path
) -> None:
    """The process is killed (SIGKILL) while its batch runs; the rerun polls the batch it
    recorded and creates none (nothing paid twice)."""
    out = tmp_path / "run"
    env = {**os.environ, "CULTUREBENCH_RESPONSE_CACHE": "off"}
    with batch_api.fake_batch_api(batch_api.forward_to(served), held=True) as api:
        args = _run_args(tiny_model, api.url, wwd_release, out, *BATCH)
        proc = subprocess.Popen(
            [*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        try:
            deadline = time.monotonic() + 120
            while api.polls < 2 and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.05)
            assert api.polls >= 2, proc.communicate(timeout=10)
            proc.send_signal(signal.SIGKILL)
            proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
        record = json.loads((out / LEDGER).read_text(encoding="utf-8"))["batches"]
        assert [b["status"] for b in record] == ["in_progress"] and not (out / "results.json").exists()
        api.hold.set()
        again = subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, timeout=300)
        assert again.returncode == 0, again.stderr
    assert (api.uploads, api.creates) == (1, 1)
    assert f"resuming {record[0]['batch_id']} (6 requests)" in again.stderr
    assert "6/6 requests answered" in again.stderr
    assert len((out / "samples.jsonl").read_text(encoding="utf-8").splitlines()) == 6


def test_failed_and_expired_lines_go_in_a_new_batch(
    served: str, tiny_model: Path, batch_api, tmp_path: Path
) -> None:
    """Two lines fail and the first batch expires after three lines: the unanswered ones are
    sent again in a second round, and every answer equals the direct one."""
    requests = [Request(f"q{i}", f"Where is dish {d} from?") for i, d in enumerate("ABCDEFG")]
    direct = _client(served, str(tiny_model))
    direct.batch = False
    expected = direct.generate(requests)
    with batch_api.fake_batch_api(batch_api.forward_to(served)) as api:
        api.fail_once.update({"q1", "q5"})
        api.expire_after = 3
        said: list[str] = []
        answers = BatchRun(_client(api.url, str(tiny_model)), tmp_path, say=said.append).answers(requests)
    assert answers == expected
    record = json.loads((tmp_path / LEDGER).read_text(encoding="utf-8"))["batches"]
    assert [(b["status"], b["requests"]) for b in record] == [("expired", 7), ("completed", 4)]
    assert any("sending 4 unanswered request(s) again" in line for line in said), said


def test_requests_still_failing_after_every_round_are_one_line_and_a_rerun_pays_only_for_them(
    served: str, tiny_model: Path, batch_api, tmp_path: Path
) -> None:
    requests = [Request("q0", "a"), Request("q1", "b")]
    with batch_api.fake_batch_api(batch_api.forward_to(served)) as api:
        api.fail_once.update({"q0"})
        client = _client(api.url, str(tiny_model), batch_rounds="1")
        with pytest.raises(
            BatchError, match=r"^batch: 1 of 2 request\(s\) unanswered after 1 round\(s\), e.g. q0: "
        ):
            BatchRun(client, tmp_path, say=lambda _: None).answers(requests)
        answers = BatchRun(client, tmp_path, say=lambda _: None).answers(requests)
    assert len(answers) == 2 and api.creates == 2  # the rerun read the first batch, sent only q0
    record = json.loads((tmp_path / LEDGER).read_text(encoding="utf-8"))["batches"]
    assert [b["requests"] for b in record] == [2, 1]


def test_a_batch_made_but_not_recorded_is_found_at_the_provider(
    served: str, tiny_model: Path, batch_api, tmp_path: Path
) -> None:
    """A process killed between creating a batch and recording it: the rerun finds the batch
    among the provider's by its input's sha256 and creates no second one."""
    requests = [Request("q0", "Borscht?"), Request("q1", "Paella?")]
    with batch_api.fake_batch_api(batch_api.forward_to(served)) as api:
        BatchRun(_client(api.url, str(tiny_model)), tmp_path / "first", say=lambda _: None).answers(requests)
        said: list[str] = []
        again = BatchRun(_client(api.url, str(tiny_model)), tmp_path / "second", say=said.append).answers(
            requests
        )
    assert api.creates == 1 and len(again) == 2
    assert any("at the provider, resuming it" in line for line in said), said


def test_a_batch_the_provider_lost_is_one_line_and_the_rerun_sends_again(
    served: str, tiny_model: Path, batch_api, tmp_path: Path
) -> None:
    """The provider forgets a batch while it is polled (deleted, or past its retention): the
    call ends in one line, the record says "lost", and the rerun creates a new batch."""
    import threading

    requests = [Request("q0", "Borscht?"), Request("q1", "Paella?")]
    with batch_api.fake_batch_api(batch_api.forward_to(served), held=True) as api:
        failed: list[BaseException] = []

        def first() -> None:
            try:
                BatchRun(_client(api.url, str(tiny_model)), tmp_path, say=lambda _: None).answers(requests)
            except BaseException as exc:
                failed.append(exc)

        thread = threading.Thread(target=first)
        thread.start()
        deadline = time.monotonic() + 60
        while api.polls < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        with api.lock:
            api.batches.clear()  # the provider no longer knows it
        thread.join(60)
        assert len(failed) == 1 and isinstance(failed[0], BatchError), failed
        assert "HTTP 404" in str(failed[0]) and "rerun to send its requests again" in str(failed[0])
        assert "\n" not in str(failed[0])
        record = json.loads((tmp_path / LEDGER).read_text(encoding="utf-8"))["batches"]
        assert [b["status"] for b in record] == ["lost"]
        api.hold.set()
        answers = BatchRun(_client(api.url, str(tiny_model)), tmp_path, say=lambda _: None).answers(requests)
    assert len(answers) == 2 and api.creates == 2


def test_a_lone_failed_request_goes_in_a_new_batch_not_back_to_the_one_it_failed_in(
    served: str, tiny_model: Path, batch_api, tmp_path: Path
) -> None:
    """A single request that fails: the next round's input is the same file, which this call
    has already read; it is sent as a new batch, not found again at the provider (that batch
    would fail it again, and the rounds would never end)."""
    with batch_api.fake_batch_api(batch_api.forward_to(served)) as api:
        api.fail_once.update({"q0"})
        answers = BatchRun(_client(api.url, str(tiny_model)), tmp_path, say=lambda _: None).answers(
            [Request("q0", "Borscht?")]
        )
    assert len(answers) == 1 and api.creates == 2
