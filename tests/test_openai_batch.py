"""Batch mode of the OpenAI-compatible backend (eval/backends/openai_batch.py): the input and
output file formats, splitting at the provider's limits, and whole runs against
tests/fake_batch_api.py, a hand-written FAKE of OpenAI's files and batches endpoints (no open
implementation exists here) whose batches are answered by a real server (`transformers serve`
with the tiny model). The round trip through `vllm run-batch` is in tests/test_vllm.py."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

pytest.importorskip("msgspec")  # the batch schema (the eval extra)

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

pytestmark = pytest.mark.unit

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
    with pytest.raises(BatchError, match=r"^out, line 2: JSON is malformed.*\(not a batch output line\)$"):
        read_output(json.dumps(ok) + "\n{oops\n", "out")


SHA = "a" * 64
GOOD = {"input_sha256": SHA, "batch_id": "batch_1", "requests": 6, "created_at": 1, "status": "in_progress"}


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("[1, 2]", r"batches.json: expected object, got array"),
        ('{"batches": [1]}', r"batches.json, field batches\[0\]: expected object, got int"),
        ('{"batches": [{"batch_id": "b"}]}', r"batches.json, field batches\[0\].input_sha256: missing"),
        (
            json.dumps({"batches": [{**GOOD, "requests": "six"}]}),
            r"field batches\[0\].requests: expected int",
        ),
        (
            json.dumps({"batches": [{**GOOD, "completed": -1}]}),
            r"field batches\[0\].completed: expected int >= 0",
        ),
        (json.dumps({"batches": [{**GOOD, "status": "paused"}]}), r"field batches\[0\].status: invalid enum"),
        (
            json.dumps({"batches": [{**GOOD, "input_sha256": "x"}]}),
            r"field batches\[0\].input_sha256: expected",
        ),
        ('{"batches": [', r"batches.json: (JSON is malformed|input data was truncated)"),
    ],
)
def test_a_damaged_or_hand_edited_record_is_one_line_naming_the_field(
    tmp_path: Path, text: str, field: str
) -> None:
    (tmp_path / LEDGER).write_text(text, encoding="utf-8")
    with pytest.raises(
        BatchError, match=field + r".*; not a batch record: fix it, or move it away"
    ) as caught:
        Ledger(tmp_path)
    assert "\n" not in str(caught.value)


def test_a_record_reads_back_as_written(tmp_path: Path) -> None:
    (tmp_path / LEDGER).write_text(json.dumps({"batches": [GOOD]}), encoding="utf-8")
    ledger = Ledger(tmp_path)
    ledger.update(ledger.entries[0], status="completed", completed=6)
    again = json.loads((tmp_path / LEDGER).read_text(encoding="utf-8"))["batches"]
    assert (
        again[0]["status"] == "completed" and again[0]["completed"] == 6 and again[0]["batch_id"] == "batch_1"
    )
    assert Ledger(tmp_path).entries == ledger.entries


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


@pytest.mark.e2e
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


@pytest.mark.e2e
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


@pytest.mark.e2e
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


@pytest.mark.e2e
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


@pytest.mark.e2e
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


@pytest.mark.e2e
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


@pytest.mark.e2e
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


# ------------------------------------------------------------- a provider that misbehaves
# These run the fake batch API's batches through a hand-written chat endpoint (tests/servers.py,
# scripted_chat: a fixed answer) instead of a model: what is tested is what batch mode makes of
# the provider's answers, not the answers.


@pytest.fixture
def chat(servers):
    with servers.scripted_chat([]) as server:
        yield server


TWO = [Request("q0", "Borscht?"), Request("q1", "Paella?")]


def _run_thread(client, folder: Path) -> tuple[Any, list[BaseException]]:
    """BatchRun.answers(TWO) on a thread (joined by the test, so that old code that polls
    forever fails the test instead of hanging it)."""
    import threading

    failed: list[BaseException] = []

    def run() -> None:
        try:
            BatchRun(client, folder, say=lambda _: None).answers(TWO)
        except BaseException as exc:  # (the test inspects it)
            failed.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, failed


def _one_line(failed: list[BaseException], pattern: str) -> str:
    assert len(failed) == 1 and isinstance(failed[0], BatchError), failed
    message = str(failed[0])
    assert "\n" not in message
    assert re.search(pattern, message), message
    return message


@pytest.mark.integration
@pytest.mark.parametrize(("status", "shown"), [(None, "null"), ("paused", '"paused"'), (7, "7")])
def test_a_status_the_batch_api_does_not_define_ends_in_one_line_naming_it(
    chat, batch_api, tmp_path: Path, status, shown: str
) -> None:
    """A batch whose status the Batch API does not define (null, a new word): one line naming
    it, not polling forever; the record keeps the batch as it was, so a rerun polls it again."""
    with batch_api.fake_batch_api(batch_api.forward_to(chat.url), held=True) as api:
        api.tamper = lambda batch: {**batch, "status": status}
        client = _client(api.url, "m", batch_max_wait="60")
        thread, failed = _run_thread(client, tmp_path)
        thread.join(120)
    field = "field status" if isinstance(status, str | None) else "field status: expected"
    _one_line(failed, rf"^provider batch batch_\d+, {field}")
    if status != 7:
        assert f"{shown} is not a status of the Batch API (validating, failed, " in str(failed[0])
    assert [b.status for b in Ledger(tmp_path).entries] in (["validating"], ["in_progress"])


@pytest.mark.integration
def test_the_wait_ends_at_batch_max_wait_and_a_rerun_resumes(chat, batch_api, tmp_path: Path) -> None:
    """batch_max_wait ends the wait in one line; the batch stays recorded as running, and the
    rerun polls it to the end without creating another."""
    with batch_api.fake_batch_api(batch_api.forward_to(chat.url), held=True) as api:
        thread, failed = _run_thread(_client(api.url, "m", batch_max_wait="0.3"), tmp_path)
        thread.join(120)
        message = _one_line(
            failed, r"^batch: waited batch_max_wait=0.3s, 0/2 requests answered; 1 batch\(es\) "
        )
        assert "rerun to resume polling them" in message and str(tmp_path / LEDGER) in message
        assert [b.status for b in Ledger(tmp_path).entries] in (["validating"], ["in_progress"])
        api.hold.set()
        answers = BatchRun(_client(api.url, "m"), tmp_path, say=lambda _: None).answers(TWO)
    assert answers == ["Україна", "Україна"] and api.creates == 1


@pytest.mark.integration
def test_a_batch_still_running_past_its_completion_window_ends_in_one_line(
    chat, batch_api, tmp_path: Path
) -> None:
    """The provider keeps a batch in_progress two hours after its window ended (its
    expires_at): the wait ends in one line, without any batch_max_wait."""
    with batch_api.fake_batch_api(batch_api.forward_to(chat.url), held=True) as api:
        api.tamper = lambda batch: {**batch, "status": "in_progress", "expires_at": int(time.time()) - 7200}
        thread, failed = _run_thread(_client(api.url, "m"), tmp_path)
        thread.join(120)
    _one_line(
        failed, r"^batch batch_\d+: still in_progress 2(\.0)? ?h.* after the end of its completion window"
    )
    assert Ledger(tmp_path).entries[0].status == "in_progress"


def _with_extra_line(executor, line: dict):
    def run(data: bytes) -> bytes:
        return executor(data) + json.dumps(line).encode() + b"\n"

    return run


def _answer_line(custom_id: str, content: str) -> dict:
    body = {"choices": [{"message": {"role": "assistant", "content": content}}]}
    return {"id": "batch_req_x", "custom_id": custom_id, "response": {"status_code": 200, "body": body}}


@pytest.mark.integration
@pytest.mark.parametrize(
    ("extra", "pattern"),
    [
        (_answer_line("q0", "Spain"), r'output_file_id file-\d+: custom_id "q0" answered more than once'),
        (
            _answer_line("zz", "Spain"),
            r'output_file_id file-\d+: custom_id "zz" answered, but not sent in this',
        ),
    ],
)
def test_an_output_file_answering_a_request_twice_or_one_never_sent_is_refused(
    chat, batch_api, tmp_path: Path, extra: dict, pattern: str
) -> None:
    with batch_api.fake_batch_api(_with_extra_line(batch_api.forward_to(chat.url), extra)) as api:
        thread, failed = _run_thread(_client(api.url, "m"), tmp_path)
        thread.join(120)
    _one_line(failed, r"^batch batch_\d+ " + pattern)


@pytest.mark.integration
@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"request_counts": "many"}, r"field request_counts: expected object \| null, got str"),
        ({"request_counts": {"completed": "x"}}, r"field request_counts.completed: expected int, got str"),
        ({"request_counts": {"failed": -2}}, r"field request_counts.failed: expected int >= 0"),
        ({"request_counts": {"total": 1.5}}, r"field request_counts.total: expected int, got float"),
        ({"completion_window": "forever"}, r"field completion_window: expected str matching"),
        ({"output_file_id": 12}, r"field output_file_id: expected str \| null, got int"),
        ({"errors": {"data": "boom"}}, r"field errors.data: expected array \| null, got str"),
        ({"id": None}, r"field id: expected str, got null"),
    ],
)
def test_a_malformed_batch_object_is_one_line_naming_the_field(
    chat, batch_api, tmp_path: Path, change: dict, field: str
) -> None:
    with batch_api.fake_batch_api(batch_api.forward_to(chat.url)) as api:
        api.tamper = lambda batch: {**batch, **change}
        thread, failed = _run_thread(_client(api.url, "m"), tmp_path)
        thread.join(120)
    _one_line(failed, r"^provider batch batch_\d+, " + field)


@pytest.mark.parametrize("window", ["soon", "0h", "24", "1y", "none", ""])
def test_a_bad_batch_window_is_one_line(window: str) -> None:
    from culturebench.errors import UsageError
    from culturebench.eval.backends.openai_backend import OpenAIBackend

    with pytest.raises(
        UsageError, match=r"^--model-arg batch_window=.*: openai expects a duration such as 24h"
    ):
        if window in ("none", ""):  # read as no value: refused when the backend is made
            OpenAIBackend("m", batch=True, **check_model_args("openai", [("batch_window", window)]))
        else:
            check_model_args("openai", [("batch_window", window)])
    with pytest.raises(UsageError, match="batch_window"):
        OpenAIBackend("m", batch=True, batch_window=window)


# ------------------------------------------------------------- any answer: a result or one line
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
BATCH_FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "id": st.one_of(st.text(max_size=6), JSON),
        "status": st.one_of(st.sampled_from(["completed", "in_progress", "failed"]), JSON),
        "request_counts": st.one_of(
            st.fixed_dictionaries(
                {}, optional={k: JSON | st.integers() for k in ("total", "completed", "failed")}
            ),
            JSON,
        ),
        "output_file_id": JSON,
        "error_file_id": JSON,
        "completion_window": st.one_of(st.just("24h"), JSON),
        "created_at": JSON,
        "expires_at": JSON,
        "metadata": JSON,
        "errors": st.one_of(st.fixed_dictionaries({"data": st.lists(JSON, max_size=3)}), JSON),
    },
)


@settings(max_examples=150, deadline=None)
@given(st.one_of(BATCH_FIELDS, JSON))
def test_any_batch_object_gives_a_batch_or_one_line(value) -> None:
    from culturebench.eval.backends import batch_schema as schema
    from culturebench.eval.backends.openai_batch import _state

    try:
        batch = schema.convert(value, schema.BatchObject, "provider batch b", BatchError)
        schema.check_status(batch, "provider batch b", BatchError)
    except BatchError as exc:
        assert str(exc).startswith("provider batch b") and "\n" not in str(exc)
        return
    state = _state(batch)
    assert state["status"] in schema.STATUSES and state["completed"] >= 0 and state["failed"] >= 0


OUTPUT_LINE = st.fixed_dictionaries(
    {},
    optional={
        "custom_id": st.one_of(st.sampled_from(["a", "b"]), JSON),
        "response": st.one_of(
            st.fixed_dictionaries(
                {},
                optional={
                    "status_code": st.one_of(st.just(200), JSON),
                    "body": st.one_of(
                        st.fixed_dictionaries(
                            {"choices": st.lists(st.fixed_dictionaries({"message": JSON}))}
                        ),
                        JSON,
                    ),
                },
            ),
            JSON,
        ),
        "error": JSON,
    },
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(OUTPUT_LINE.map(json.dumps), st.text(max_size=20)), max_size=4))
def test_any_output_file_gives_answers_or_one_line(lines: list[str]) -> None:
    try:
        found = read_output("\n".join(lines), "out", {"a", "b"})
    except BatchError as exc:
        assert str(exc).startswith("out") and "\n" not in str(exc)
        return
    assert set(found) <= {"a", "b"}
    for answer, why in found.values():
        assert (answer is None) != (why is None) and isinstance(answer or why, str)


@settings(max_examples=100, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=40),
        st.fixed_dictionaries({"batches": st.lists(JSON, max_size=2)}).map(lambda d: json.dumps(d).encode()),
    )
)
def test_any_record_file_gives_a_record_or_one_line(data: bytes) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / LEDGER).write_bytes(data)
        try:
            Ledger(Path(folder))
        except BatchError as exc:
            assert LEDGER in str(exc) and "\n" not in str(exc)
