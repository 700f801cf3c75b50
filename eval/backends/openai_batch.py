"""Batch mode of the OpenAI-compatible backend (``--model-arg batch=true``): the pending
requests go to the provider's Batch API, which answers within a day at about half the price.

1. The requests are written as Batch input lines (``custom_id``, ``method``, ``url``,
   ``body``: the body a direct request would send) and split into parts within the
   provider's limits (``batch_max_requests`` lines, ``batch_max_bytes`` bytes per file).
2. Each part is uploaded (``POST /files``, purpose ``batch``) and its batch created
   (``POST /batches``, tagged with the part's sha256 in ``metadata``).
3. The batches are polled (``GET /batches/{id}``) with a progress line and an ETA.
4. Their output files (``GET /files/{id}/content``) are imported as answers, in request
   order. Lines that failed, and lines an expired or cancelled batch never ran, are sent again
   in a new batch (``batch_rounds`` rounds in all); what still fails ends the call with one
   line counting them.

Every batch is recorded in the run folder's ``batches.json`` as soon as it exists, keyed by the
sha256 of its input. A killed process, rerun, finds its pending requests' parts there (or, if
it was killed between creating a batch and recording it, among the provider's recent batches
by that sha256) and resumes polling them instead of paying for them again.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from culturebench.errors import CultureBenchError
from culturebench.hashing import sha256_bytes
from culturebench.safe_http import redact

LEDGER = "batches.json"  # in the run folder
ENDPOINT = "/v1/chat/completions"
FINAL = ("completed", "failed", "expired", "cancelled")
# a batch that ran nothing (the provider refused its file), or that the provider no longer
# knows (its batch or output file answers 404: "lost"); an expired or cancelled one is read
# again on a rerun (its answered lines are paid for), and its unanswered lines re-sent
REFUSED = ("failed", "lost")


class BatchError(CultureBenchError):
    """A batch could not be made, ran into the provider's validation, or left requests
    unanswered after every round."""


@dataclass(frozen=True)
class Part:
    """One batch input file: its lines' request ids, its bytes and their sha256."""

    ids: tuple[str, ...]
    data: bytes
    sha256: str


def input_line(custom_id: str, body: dict[str, Any]) -> bytes:
    """One Batch input line: the request a direct call would send, under its ``custom_id``."""
    line = {"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": body}
    return (json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")


def split_parts(lines: Sequence[tuple[str, bytes]], max_requests: int, max_bytes: int) -> list[Part]:
    """``lines`` (request id, input line) cut, in order, into files of at most
    ``max_requests`` lines and ``max_bytes`` bytes; a single line over ``max_bytes`` is an
    error naming its request."""
    parts: list[Part] = []
    ids: list[str] = []
    chunks: list[bytes] = []
    size = 0

    def close() -> None:
        if ids:
            data = b"".join(chunks)
            parts.append(Part(tuple(ids), data, sha256_bytes(data)))
            ids.clear()
            chunks.clear()

    for request_id, line in lines:
        if len(line) > max_bytes:
            raise BatchError(
                f"request {request_id}: its batch line is {len(line):,} bytes, over the "
                f"{max_bytes:,} bytes a batch file may hold (batch_max_bytes); run it without batch=true"
            )
        if len(ids) >= max_requests or size + len(line) > max_bytes:
            close()
            size = 0
        ids.append(request_id)
        chunks.append(line)
        size += len(line)
    close()
    return parts


def read_output(text: str, source: str) -> dict[str, tuple[str | None, str | None]]:
    """The answers in a batch output (or error) file: ``custom_id`` -> (answer, None), or
    (None, why) for a line that failed. A line that is not a Batch output line is an error
    naming ``source`` and the line."""
    found: dict[str, tuple[str | None, str | None]] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
            custom_id = str(line["custom_id"])
        except (ValueError, KeyError, TypeError):
            raise BatchError(
                f"{source}, line {number}: not a batch output line (no JSON with custom_id)"
            ) from None
        response = line.get("response") or {}
        error = line.get("error")
        status = response.get("status_code") if isinstance(response, dict) else None
        body = response.get("body") if isinstance(response, dict) else None
        if error or status != 200 or not isinstance(body, dict):
            why = error.get("message") if isinstance(error, dict) else error
            if not why and isinstance(body, dict) and isinstance(body.get("error"), dict):
                why = body["error"].get("message")
            found[custom_id] = (None, f"HTTP {status}: {why}" if status else str(why or "no response"))
            continue
        try:
            content = body["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            found[custom_id] = (None, "answer has no choices[0].message.content")
            continue
        found[custom_id] = (str(content or "").strip(), None)
    return found


class Ledger:
    """The run folder's ``batches.json``: every batch made for the run (part sha256, batch id,
    input file id, requests, last status and counts), written atomically on every change.
    Without a folder it lives in memory (a backend used outside a run)."""

    def __init__(self, folder: Path | None) -> None:
        self.path = folder / LEDGER if folder is not None else None
        self.entries: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        if self.path is not None and self.path.exists():
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                self.entries = list(data["batches"])
            except (ValueError, KeyError, TypeError, UnicodeDecodeError):
                why = "not a batch record (JSON with a 'batches' list)"
                raise BatchError(f"{self.path}: {why}; move it away to start over") from None

    def live(self, sha256: str) -> dict[str, Any] | None:
        """The newest batch of this input that may still answer, or has answered (in part)."""
        for entry in reversed(self.entries):
            if entry.get("input_sha256") == sha256 and entry.get("status") not in REFUSED:
                return entry
        return None

    def add(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self.entries.append(entry)
            self._save()

    def update(self, entry: dict[str, Any], **fields: Any) -> None:
        with self._lock:
            if all(entry.get(k) == v for k, v in fields.items()):
                return
            entry.update(fields)
            self._save()

    def _save(self) -> None:
        if self.path is None:
            return
        from culturebench.atomic import write_text_atomic

        text = json.dumps({"batches": self.entries}, indent=2, sort_keys=True) + "\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(self.path, text)


class BatchRun:
    """Sends ``requests`` through the Batch API of ``client`` (an
    :class:`~culturebench.eval.backends.openai_backend.OpenAIBackend`) and returns their
    answers in order; see the module's docstring."""

    def __init__(self, client: Any, folder: Path | None, *, say: Callable[[str], None] | None = None) -> None:
        self.client = client
        self.ledger = Ledger(folder)
        self.say = say or _to_stderr
        self._read: set[str] = set()  # the inputs whose batches this call has read

    def answers(self, requests: Sequence[Any]) -> list[str]:
        """The answer to every request, in order: rounds of batches until all are answered or
        ``batch_rounds`` rounds have sent new batches (a round that only read batches an earlier
        process made, resumed, does not count)."""
        answers: dict[str, str] = {}
        todo = list(requests)
        why: dict[str, str] = {}
        sent = 0
        while todo and sent < self.client.batch_rounds:
            if len(todo) < len(requests):
                self.say(f"batch: sending {len(todo)} unanswered request(s) again")
            found, created = self._one_round(todo)
            sent += created
            why = {}
            for request in todo:
                answer, error = found.get(request.id, (None, "not in the batch output"))
                if answer is not None:
                    answers[request.id] = answer
                else:
                    why[request.id] = error or "no answer"
            todo = [r for r in todo if r.id not in answers]
        if todo:
            first = todo[0].id
            raise BatchError(
                f"batch: {len(todo)} of {len(requests)} request(s) unanswered after "
                f"{self.client.batch_rounds} round(s), e.g. {first}: {why.get(first, 'no answer')}; "
                "rerun to try again: the batches that answered are read again, not paid again"
            )
        return [answers[r.id] for r in requests]

    def _one_round(self, requests: Sequence[Any]) -> tuple[dict[str, tuple[str | None, str | None]], bool]:
        """The answers one round of batches gives (by request id), and whether it created any
        batch (or only read recorded ones)."""
        client = self.client
        lines = [(r.id, input_line(r.id, client.payload(r))) for r in requests]
        parts = split_parts(lines, client.batch_max_requests, client.batch_max_bytes)
        made = len(self.ledger.entries)
        entries = [self._batch_of(part, index, len(parts)) for index, part in enumerate(parts, 1)]
        created = any(not e.get("found_at_provider") for e in self.ledger.entries[made:])
        self._poll(entries)
        found: dict[str, tuple[str | None, str | None]] = {}
        for entry in entries:
            found.update(self._results(entry))
        return found, created

    def _batch_of(self, part: Part, index: int, count: int) -> dict[str, Any]:
        """The batch that answers ``part``: the one recorded for it (resumed), one the provider
        holds with its sha256 (a process killed before it recorded it), or a new one. An input
        already read in this call (its lines failed) is sent again as a new batch."""
        again = part.sha256 in self._read
        self._read.add(part.sha256)
        entry = None if again else self.ledger.live(part.sha256)
        if entry is not None:
            self.say(f"batch {index}/{count}: resuming {entry['batch_id']} ({entry['requests']} requests)")
            return entry
        entry = None if again else self._find_remote(part.sha256)
        if entry is not None:
            entry["found_at_provider"] = True  # (made by a process killed before it recorded it)
            self.say(f"batch {index}/{count}: found {entry['batch_id']} at the provider, resuming it")
        else:
            file_id = self._upload(part)
            batch = self.client.call(
                "POST",
                "batches",
                f"batch part {part.sha256[:12]}",
                json={
                    "input_file_id": file_id,
                    "endpoint": ENDPOINT,
                    "completion_window": self.client.batch_window,
                    "metadata": {"culturebench_input_sha256": part.sha256},
                },
            )
            entry = _entry(batch, part.sha256, len(part.ids), file_id)
            self.say(f"batch {index}/{count}: created {entry['batch_id']} ({len(part.ids)} requests)")
        self.ledger.add(entry)
        return entry

    def _find_remote(self, sha256: str) -> dict[str, Any] | None:
        """A batch of this input among the provider's recent ones (``GET /batches``), or None
        (also when the provider does not list batches)."""
        try:
            listing = self.client.call("GET", "batches", "list batches", params={"limit": 100})
        except CultureBenchError:
            return None
        batches = listing.get("data") if isinstance(listing, dict) else None
        for batch in batches if isinstance(batches, list) else []:
            metadata = batch.get("metadata") or {}
            if metadata.get("culturebench_input_sha256") == sha256 and batch.get("status") not in REFUSED:
                return _entry(batch, sha256, int((batch.get("request_counts") or {}).get("total") or 0), None)
        return None

    def _upload(self, part: Part) -> str:
        answer = self.client.call(
            "POST",
            "files",
            f"upload of batch part {part.sha256[:12]}",
            files={"file": (f"culturebench-{part.sha256[:12]}.jsonl", part.data, "application/jsonl")},
            data={"purpose": "batch"},
        )
        file_id = answer.get("id") if isinstance(answer, dict) else None
        if not file_id:
            raise BatchError(f"{redact(self.client.base_url)}/files: the upload's answer has no file id")
        return str(file_id)

    def _poll(self, entries: list[dict[str, Any]]) -> None:
        """Poll every unfinished batch until all are final, saying progress and an ETA when
        they change."""
        started = time.monotonic()
        first_done: int | None = None
        shown = ""
        while True:
            for entry in entries:
                if entry.get("status") in FINAL:
                    continue
                batch = self._get(entry, f"batches/{entry['batch_id']}")
                self.ledger.update(entry, **_state(batch))
            total = sum(int(e.get("requests") or 0) for e in entries)
            done = sum(int(e.get("completed") or 0) + int(e.get("failed") or 0) for e in entries)
            running = [e for e in entries if e.get("status") not in FINAL]
            if first_done is None:
                first_done = done
            line = (
                f"batch: {done}/{total} requests answered, {len(running)} of {len(entries)} batch(es) running"
            )
            if line != shown:
                self.say(line + _eta(done - first_done, total - done, time.monotonic() - started))
                shown = line
            if not running:
                return
            time.sleep(self.client.batch_poll)

    def _get(self, entry: dict[str, Any], path: str, *, text: bool = False) -> Any:
        """``GET path`` for a recorded batch; a 404 (the provider no longer has the batch or
        its output: deleted, or past its retention) marks the batch lost, so that the rerun
        sends its requests again, and says so in one line."""
        try:
            return self.client.call("GET", path, f"batch {entry['batch_id']}", text=text)
        except CultureBenchError as exc:  # the client's EndpointError carries the HTTP status
            if getattr(exc, "status", None) != 404:
                raise
            self.ledger.update(entry, status="lost")
            raise BatchError(
                f"batch {entry['batch_id']}: the provider has no {path.split('/')[0][:-1]} at "
                f"{path!r} (HTTP 404); marked lost in {self.ledger.path or 'memory'}: rerun to send "
                "its requests again"
            ) from None

    def _results(self, entry: dict[str, Any]) -> dict[str, tuple[str | None, str | None]]:
        """The answers of a finished batch (its output and error files)."""
        status = entry.get("status")
        found: dict[str, tuple[str | None, str | None]] = {}
        for key in ("output_file_id", "error_file_id"):
            file_id = entry.get(key)
            if file_id:
                text = self._get(entry, f"files/{file_id}/content", text=True)
                found.update(read_output(text, f"batch {entry['batch_id']} {key} {file_id}"))
        if status == "failed" and not found:  # the provider refused the file: nothing ran
            raise BatchError(
                f"batch {entry['batch_id']} failed: {entry.get('errors') or 'no reason given'} "
                f"(recorded in {self.ledger.path or 'memory'})"
            )
        return found


def _entry(batch: Any, sha256: str, requests: int, file_id: str | None) -> dict[str, Any]:
    if not isinstance(batch, dict) or not batch.get("id"):
        raise BatchError("the batch endpoint's answer has no batch id")
    return {
        "input_sha256": sha256,
        "batch_id": str(batch["id"]),
        "input_file_id": file_id or batch.get("input_file_id"),
        "requests": requests,
        "created_at": int(batch.get("created_at") or time.time()),
        **_state(batch),
    }


def _state(batch: Any) -> dict[str, Any]:
    """What the ledger keeps of a batch's current state."""
    if not isinstance(batch, dict):
        raise BatchError("the batch endpoint's answer is not a batch object")
    counts = batch.get("request_counts") or {}
    state = {
        "status": str(batch.get("status") or "unknown"),
        "completed": int(counts.get("completed") or 0),
        "failed": int(counts.get("failed") or 0),
        "output_file_id": batch.get("output_file_id"),
        "error_file_id": batch.get("error_file_id"),
    }
    errors = (batch.get("errors") or {}).get("data") if isinstance(batch.get("errors"), dict) else None
    if errors:
        state["errors"] = "; ".join(str(e.get("message", e)) for e in errors[:3] if isinstance(e, dict))
    return state


def _eta(gained: int, remaining: int, elapsed_s: float) -> str:
    if remaining <= 0:
        return ""
    if gained <= 0 or elapsed_s <= 0:
        return "; ETA: unknown yet"
    from culturebench.durations import duration_text

    return f"; ETA {duration_text(remaining * elapsed_s / gained)}"


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
