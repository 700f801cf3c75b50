"""A hand-written FAKE of the part of OpenAI's API that batch mode uses (files and batches),
since no open implementation of it exists here:

* ``POST /v1/files`` (multipart, ``purpose=batch``) keeps the uploaded bytes;
* ``POST /v1/batches`` creates a batch over an uploaded file and runs it in a thread;
* ``GET /v1/batches`` lists them (newest first), ``GET /v1/batches/{id}`` shows one;
* ``GET /v1/files/{id}/content`` returns a file's bytes (the output and error files).

What runs a batch is real: an *executor* turns the input file's bytes into the output file's
bytes. :func:`forward_to` sends each line's body to a real OpenAI-compatible server
(``transformers serve``); :func:`vllm_run_batch` runs ``vllm run-batch`` on the file, as a
provider would. The fake adds only the bookkeeping: statuses (``validating``,
``in_progress``, ``completed``, ``expired``), request counts, and ``hold``, an event that keeps
batches ``in_progress`` until the test sets it (to kill a client while it polls). To play a
provider that misbehaves, ``tamper`` rewrites the batch object ``GET /v1/batches/{id}`` answers
(an unknown status, malformed ``request_counts``, a past ``expires_at``).
"""

from __future__ import annotations

import email
import email.policy
import itertools
import json
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.servers import _Handler, running

Executor = Callable[[bytes], bytes]


def forward_to(base_url: str) -> Executor:
    """An executor that sends every input line's body to ``base_url``'s chat endpoint (a real
    server) and writes the Batch output lines, as OpenAI does."""

    def run(data: bytes) -> bytes:
        out = []
        for raw in data.splitlines():
            line = json.loads(raw)
            request = urllib.request.Request(
                base_url.rstrip("/") + "/chat/completions",
                data=json.dumps(line["body"]).encode(),
                headers={"Content-Type": "application/json"},
            )
            try:
                with urllib.request.urlopen(request, timeout=300) as answer:
                    status, body = answer.status, json.loads(answer.read())
            except urllib.error.HTTPError as exc:
                status, body = exc.code, {"error": {"message": exc.read().decode(errors="replace")[:200]}}
            out.append(
                {
                    "id": f"batch_req_{len(out)}",
                    "custom_id": line["custom_id"],
                    "response": {"status_code": status, "request_id": f"req_{len(out)}", "body": body},
                    "error": None,
                }
            )
        return b"".join(json.dumps(o).encode() + b"\n" for o in out)

    return run


def vllm_run_batch(python: str, model: Path, work: Path, *engine_args: str) -> Executor:
    """An executor that runs vLLM's own batch runner (``vllm run-batch``) on the input file."""
    counter = itertools.count()

    def run(data: bytes) -> bytes:
        n = next(counter)
        source, target = work / f"in-{n}.jsonl", work / f"out-{n}.jsonl"
        source.write_bytes(data)
        with open(work / f"run-batch-{n}.log", "wb") as log:
            subprocess.run(
                [python, "-m", "vllm.entrypoints.openai.run_batch", "-i", str(source), "-o", str(target),
                 "--model", str(model), *engine_args],
                stdout=log, stderr=subprocess.STDOUT, check=True, timeout=600,
            )  # fmt: skip
        return target.read_bytes()

    return run


class _BatchHandler(_Handler):
    def _json(self, status: int, body: object) -> None:
        self._send(status, json.dumps(body).encode(), "application/json")

    def do_POST(self) -> None:
        api = self.server  # type: ignore[assignment]
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/v1/files":
            message = email.message_from_bytes(
                b"Content-Type: " + self.headers["Content-Type"].encode() + b"\r\n\r\n" + body,
                policy=email.policy.HTTP,
            )
            fields = {
                part.get_param("name", header="content-disposition"): part for part in message.iter_parts()
            }
            if "file" not in fields or fields["purpose"].get_content() != "batch":
                return self._json(400, {"error": {"message": "file and purpose=batch are required"}})
            with api.lock:
                file_id = f"file-{next(api.ids)}"
                api.files[file_id] = fields["file"].get_payload(decode=True)
                api.uploads += 1
            return self._json(200, {"id": file_id, "object": "file", "purpose": "batch",
                                    "bytes": len(api.files[file_id])})  # fmt: skip
        if self.path == "/v1/batches":
            request = json.loads(body)
            data = api.files.get(request.get("input_file_id"))
            if data is None:
                return self._json(404, {"error": {"message": "no such file"}})
            with api.lock:
                batch = {
                    "id": f"batch_{next(api.ids)}",
                    "object": "batch",
                    "endpoint": request["endpoint"],
                    "input_file_id": request["input_file_id"],
                    "completion_window": request["completion_window"],
                    "status": "validating",
                    "created_at": int(time.time()),
                    "expires_at": int(time.time()) + 86400,
                    "metadata": request.get("metadata") or {},
                    "output_file_id": None,
                    "error_file_id": None,
                    "request_counts": {"total": len(data.splitlines()), "completed": 0, "failed": 0},
                }
                api.batches[batch["id"]] = batch
                api.creates += 1
            threading.Thread(target=_execute, args=(api, batch, data), daemon=True).start()
            return self._json(200, batch)
        return self._json(404, {"error": {"message": f"no route {self.path}"}})

    def do_GET(self) -> None:
        api = self.server  # type: ignore[assignment]
        path = self.path.split("?")[0]
        with api.lock:
            if path == "/v1/batches":
                listing = sorted(api.batches.values(), key=lambda b: b["created_at"], reverse=True)
                return self._json(200, {"object": "list", "data": listing})
            if path.startswith("/v1/batches/"):
                api.polls += 1
                batch = api.batches.get(path.rsplit("/", 1)[1])
                if batch and api.tamper is not None:
                    batch = api.tamper(dict(batch))
                return (
                    self._json(200, batch)
                    if batch
                    else self._json(404, {"error": {"message": "no such batch"}})
                )
            if path.startswith("/v1/files/") and path.endswith("/content"):
                data = api.files.get(path.split("/")[3])
                if data is None:
                    return self._json(404, {"error": {"message": "no such file"}})
                return self._send(200, data, "application/jsonl")
        return self._json(404, {"error": {"message": f"no route {path}"}})


def _execute(api, batch: dict, data: bytes) -> None:
    """Run one batch: ``in_progress`` (held while ``api.hold`` is clear), the executor over the
    lines the fake does not fail or expire on purpose, then ``completed`` (or ``expired``)."""
    with api.lock:
        batch["status"] = "in_progress"
    api.hold.wait()
    lines = data.splitlines(keepends=True)
    keep, failed = [], []
    for line in lines:
        custom_id = json.loads(line)["custom_id"]
        if custom_id in api.fail_once:
            api.fail_once.discard(custom_id)
            failed.append(custom_id)
        else:
            keep.append(line)
    expire = api.expire_after is not None and api.expire_after < len(keep)
    run = keep[: api.expire_after] if expire else keep
    try:
        output = api.executor(b"".join(run)) if run else b""
    except Exception as exc:  # the executor broke: the batch fails, as a provider's would
        with api.lock:
            batch["status"] = "failed"
            batch["errors"] = {"data": [{"code": "executor", "message": f"{type(exc).__name__}: {exc}"}]}
        return
    why = {"code": "server_error", "message": "the fake failed this line on purpose"}
    errors = b"".join(
        json.dumps({"id": f"batch_req_e{i}", "custom_id": c, "response": None, "error": why}).encode() + b"\n"
        for i, c in enumerate(failed)
    )
    with api.lock:
        if output:
            batch["output_file_id"] = f"file-{next(api.ids)}"
            api.files[batch["output_file_id"]] = output
        if errors:
            batch["error_file_id"] = f"file-{next(api.ids)}"
            api.files[batch["error_file_id"]] = errors
        batch["request_counts"].update(completed=len(run), failed=len(failed))
        batch["status"] = "expired" if expire else "completed"
        if expire:
            api.expire_after = None  # only the first batch expires


@contextmanager
def fake_batch_api(executor: Executor, *, held: bool = False) -> Iterator:
    """The fake on a free loopback port; ``api.url`` is its ``/v1`` base. ``api.uploads``,
    ``api.creates`` and ``api.polls`` count calls; ``api.fail_once`` (custom ids) fail their
    first batch; ``api.expire_after = N`` expires the first batch after N lines; with ``held``
    batches stay ``in_progress`` until ``api.hold.set()``; ``api.tamper`` (a function of the batch
    object) rewrites what ``GET /v1/batches/{id}`` answers."""
    hold = threading.Event()
    if not held:
        hold.set()
    with running(
        _BatchHandler, executor=executor, files={}, batches={}, ids=itertools.count(1), lock=threading.Lock(),
        uploads=0, creates=0, polls=0, hold=hold, fail_once=set(), expire_after=None, tamper=None,
    ) as api:  # fmt: skip
        api.url = f"http://127.0.0.1:{api.server_address[1]}/v1"  # type: ignore[attr-defined]
        try:
            yield api
        finally:
            hold.set()  # let executor threads end
