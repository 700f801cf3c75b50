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

Every wait ends: a batch still running past the end of its completion window (the batch's
``expires_at``, else its ``created_at`` plus its ``completion_window``) by more than
:data:`EXPIRY_GRACE_S`, or a call that has waited ``batch_max_wait`` seconds, ends in one line;
the batches stay recorded, so a rerun resumes polling them. A status the Batch API does not
define ends the call in one line naming it. Everything the provider answers, and
``batches.json``, is read through the schemas of
:mod:`~culturebench.eval.backends.batch_schema`; an output file that answers a request twice,
or answers one the batch was not sent, is refused naming the ids.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from culturebench.errors import CultureBenchError
from culturebench.eval.backends import batch_schema as schema
from culturebench.eval.backends.batch_schema import BatchObject, LedgerEntry
from culturebench.hashing import sha256_bytes
from culturebench.safe_http import redact

LEDGER = "batches.json"  # in the run folder
ENDPOINT = "/v1/chat/completions"
FINAL = ("completed", "failed", "expired", "cancelled")
# a batch that ran nothing (the provider refused its file), or that the provider no longer
# knows (its batch or output file answers 404: "lost"); an expired or cancelled one is read
# again on a rerun (its answered lines are paid for), and its unanswered lines re-sent
REFUSED = ("failed", schema.LOST)
# how long past the end of its completion window a batch may still run: OpenAI moves such a
# batch to "expired" eventually, not at once (and "cancelling" takes up to 10 minutes)
EXPIRY_GRACE_S = 3600


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


def read_output(
    text: str, source: str, expected: Collection[str] | None = None
) -> dict[str, tuple[str | None, str | None]]:
    """The answers in a batch output (or error) file: ``custom_id`` -> (answer, None), or
    (None, why) for a line that failed. A line that is not a Batch output line is an error
    naming ``source``, the line and the field; so is a file that answers a ``custom_id``
    twice, or one not in ``expected`` (the ids the batch was sent), naming the ids."""
    found: dict[str, tuple[str | None, str | None]] = {}
    twice: list[str] = []
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        line = schema.decode(raw, schema.OutputLine, f"{source}, line {number}", _not_an_output_line)
        if line.custom_id in found:
            twice.append(line.custom_id)
        found[line.custom_id] = _answer(line)
    if twice:
        raise BatchError(f"{source}: {_ids(twice)} answered more than once; the output is refused")
    unknown = [i for i in found if expected is not None and i not in expected]
    if unknown:
        raise BatchError(
            f"{source}: {_ids(unknown)} answered, but not sent in this batch; the output is refused"
        )
    return found


def _not_an_output_line(line: str) -> BatchError:
    return BatchError(f"{line} (not a batch output line)")


def _answer(line: schema.OutputLine) -> tuple[str | None, str | None]:
    """(answer, None) for a line answered with a chat completion, else (None, why)."""
    response = line.response
    status = response.status_code if response is not None else None
    body = response.body if response is not None else None
    error = line.error
    failed = bool(error.code or error.message) if isinstance(error, schema.LineError) else bool(error)
    if failed or status != 200 or not isinstance(body, dict):
        why = error.message if isinstance(error, schema.LineError) else error
        if not why and isinstance(body, dict):
            said = _lenient(body, schema.ErrorBody)
            inner = said.error if said is not None else None
            why = inner.message if isinstance(inner, schema.LineError) else inner
        return None, f"HTTP {status}: {why}" if status else str(why or "no response")
    chat = _lenient(body, schema.ChatBody)
    if chat is None or not chat.choices:
        return None, "answer has no choices[0].message.content"
    return (chat.choices[0].message.content or "").strip(), None


def _lenient(value: Any, kind: type[schema.T]) -> schema.T | None:
    """``value`` read as ``kind``, or None (an answer's body: a body of another shape is a
    failed line, sent again, not a broken file)."""
    try:
        return schema.convert(value, kind, "", BatchError)
    except BatchError:
        return None


def _ids(ids: Sequence[str]) -> str:
    """``custom_id a, b`` (the first five, each once, and how many more)."""
    unique = list(dict.fromkeys(ids))
    more = f" and {len(unique) - 5} more" if len(unique) > 5 else ""
    return "custom_id " + ", ".join(json.dumps(i, ensure_ascii=False) for i in unique[:5]) + more


class Ledger:
    """The run folder's ``batches.json``: every batch made for the run (part sha256, batch id,
    input file id, requests, the end of its completion window, last status and counts),
    written atomically on every change. Without a folder it lives in memory (a backend used
    outside a run). A file that is not such a record (hand-edited, damaged) is one line naming
    it and the field."""

    def __init__(self, folder: Path | None) -> None:
        self.path = folder / LEDGER if folder is not None else None
        self.entries: list[LedgerEntry] = []
        self._lock = threading.Lock()
        if self.path is not None and self.path.exists():

            def refused(line: str) -> BatchError:
                return BatchError(f"{line}; not a batch record: fix it, or move it away to start over")

            self.entries = schema.read_ledger(self.path, refused)

    def live(self, sha256: str) -> LedgerEntry | None:
        """The newest batch of this input that may still answer, or has answered (in part)."""
        for entry in reversed(self.entries):
            if entry.input_sha256 == sha256 and entry.status not in REFUSED:
                return entry
        return None

    def add(self, entry: LedgerEntry) -> None:
        with self._lock:
            self.entries.append(entry)
            self._save()

    def update(self, entry: LedgerEntry, **fields: Any) -> None:
        with self._lock:
            if all(getattr(entry, k) == v for k, v in fields.items()):
                return
            for key, value in fields.items():
                setattr(entry, key, value)
            self._save()

    def _save(self) -> None:
        if self.path is None:
            return
        from culturebench.atomic import write_text_atomic

        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(self.path, schema.ledger_text(self.entries))


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
        created = any(not e.found_at_provider for e in self.ledger.entries[made:])
        self._poll(entries)
        found: dict[str, tuple[str | None, str | None]] = {}
        for entry, part in zip(entries, parts, strict=True):
            found.update(self._results(entry, part.ids))
        return found, created

    def _batch_of(self, part: Part, index: int, count: int) -> LedgerEntry:
        """The batch that answers ``part``: the one recorded for it (resumed), one the provider
        holds with its sha256 (a process killed before it recorded it), or a new one. An input
        already read in this call (its lines failed) is sent again as a new batch."""
        again = part.sha256 in self._read
        self._read.add(part.sha256)
        entry = None if again else self.ledger.live(part.sha256)
        if entry is not None:
            self.say(f"batch {index}/{count}: resuming {entry.batch_id} ({entry.requests} requests)")
            return entry
        batch = None if again else self._find_remote(part.sha256)
        if batch is not None:
            entry = self._entry(batch, part, None, found_at_provider=True)
            self.say(f"batch {index}/{count}: found {entry.batch_id} at the provider, resuming it")
            self.ledger.add(entry)
            return entry
        file_id = self._upload(part)
        answer = self.client.call(
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
        batch = schema.convert(answer, BatchObject, f"{redact(self.client.base_url)}/batches", BatchError)
        entry = self._entry(batch, part, file_id)
        self.say(f"batch {index}/{count}: created {entry.batch_id} ({len(part.ids)} requests)")
        self.ledger.add(entry)  # recorded before anything else can fail: never paid twice
        self._status(batch)
        return entry

    def _entry(self, batch: BatchObject, part: Part, file_id: str | None, **more: Any) -> LedgerEntry:
        """The record of a new (or found) batch of ``part``."""
        created = batch.created_at if batch.created_at is not None else int(time.time())
        window = schema.window_seconds(batch.completion_window or self.client.batch_window)
        fields = {
            **_state(batch),
            "expires_at": batch.expires_at if batch.expires_at is not None else created + window,
            "status": batch.status if batch.status in schema.STATUSES else None,  # (refused once recorded)
            **more,
        }
        return LedgerEntry(
            input_sha256=part.sha256,
            batch_id=batch.id,
            input_file_id=file_id or batch.input_file_id,
            requests=len(part.ids),
            created_at=created,
            **fields,
        )

    def _find_remote(self, sha256: str) -> BatchObject | None:
        """A batch of this input among the provider's recent ones (``GET /batches``), or None
        (also when the provider does not list batches)."""
        try:
            listing = self.client.call("GET", "batches", "list batches", params={"limit": 100})
        except CultureBenchError:
            return None
        source = f"{redact(self.client.base_url)}/batches"
        for batch in schema.convert(listing, schema.BatchList, source, BatchError).data:
            ours = (batch.metadata or {}).get("culturebench_input_sha256") == sha256
            if ours and batch.status not in REFUSED:
                self._status(batch)
                return batch
        return None

    def _upload(self, part: Part) -> str:
        answer = self.client.call(
            "POST",
            "files",
            f"upload of batch part {part.sha256[:12]}",
            files={"file": (f"culturebench-{part.sha256[:12]}.jsonl", part.data, "application/jsonl")},
            data={"purpose": "batch"},
        )
        source = f"{redact(self.client.base_url)}/files"
        return schema.convert(answer, schema.FileObject, source, BatchError).id

    def _poll(self, entries: list[LedgerEntry]) -> None:
        """Poll every unfinished batch until all are final, saying progress and an ETA when
        they change; a batch past its completion window (and :data:`EXPIRY_GRACE_S`), or
        ``batch_max_wait`` seconds of waiting, ends the call in one line (the batches stay
        recorded: a rerun resumes polling them)."""
        started = time.monotonic()
        max_wait = self.client.batch_max_wait
        first_done: int | None = None
        shown = ""
        while True:
            for entry in entries:
                if entry.status in FINAL:
                    continue
                batch = self._batch(entry)
                self.ledger.update(entry, **_state(batch))
            total = sum(e.requests for e in entries)
            done = sum(e.completed + e.failed for e in entries)
            running = [e for e in entries if e.status not in FINAL]
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
            left = self._time_left(running, done, total)
            if max_wait is not None:
                waited = time.monotonic() - started
                if waited >= max_wait:
                    raise BatchError(
                        f"batch: waited batch_max_wait={max_wait:g}s, {done}/{total} requests answered; "
                        f"{_still(running)} recorded in {self.ledger.path or 'memory'}: rerun to resume "
                        "polling them (nothing is paid again)"
                    )
                left = min(left, max_wait - waited)
            time.sleep(max(0.0, min(self.client.batch_poll, left)))

    def _time_left(self, running: list[LedgerEntry], done: int, total: int) -> float:
        """Seconds until the first running batch is past the end of its completion window by
        :data:`EXPIRY_GRACE_S`; a batch already past it ends the call in one line."""
        from culturebench.durations import duration_text

        window = schema.window_seconds(self.client.batch_window)  # (a record that has no end of its own)
        now = time.time()
        ends = [(e.expires_at if e.expires_at is not None else e.created_at + window, e) for e in running]
        end, first = min(ends, key=lambda pair: pair[0])
        if now > end + EXPIRY_GRACE_S:
            raise BatchError(
                f"batch {first.batch_id}: still {first.status} {duration_text(now - end)} after the end of "
                f"its completion window (the provider should have ended it); {done}/{total} requests "
                f"answered; {_still(running)} recorded in {self.ledger.path or 'memory'}: rerun to poll again"
            )
        return end + EXPIRY_GRACE_S - now

    def _batch(self, entry: LedgerEntry) -> BatchObject:
        """The provider's batch of ``entry`` (``GET /batches/{id}``), read and checked; a status
        the Batch API does not define ends the call in one line (the record keeps the last
        status it had, so a rerun polls again)."""
        source = f"provider batch {entry.batch_id}"
        batch = schema.convert(self._get(entry, f"batches/{entry.batch_id}"), BatchObject, source, BatchError)
        if batch.id != entry.batch_id:
            raise BatchError(f"{source}, field id: the answer is batch {batch.id}")
        self._status(batch)
        return batch

    def _status(self, batch: BatchObject) -> str:
        def refused(line: str) -> BatchError:
            where = self.ledger.path or "memory"
            return BatchError(f"{line}; batch mode cannot follow it (the batch is recorded in {where})")

        return schema.check_status(batch, f"provider batch {batch.id}", refused)

    def _get(self, entry: LedgerEntry, path: str, *, text: bool = False) -> Any:
        """``GET path`` for a recorded batch; a 404 (the provider no longer has the batch or
        its output: deleted, or past its retention) marks the batch lost, so that the rerun
        sends its requests again, and says so in one line."""
        try:
            return self.client.call("GET", path, f"batch {entry.batch_id}", text=text)
        except CultureBenchError as exc:  # the client's EndpointError carries the HTTP status
            if getattr(exc, "status", None) != 404:
                raise
            self.ledger.update(entry, status=schema.LOST)
            raise BatchError(
                f"batch {entry.batch_id}: the provider has no {path.split('/')[0][:-1]} at "
                f"{path!r} (HTTP 404); marked lost in {self.ledger.path or 'memory'}: rerun to send "
                "its requests again"
            ) from None

    def _results(self, entry: LedgerEntry, ids: Sequence[str]) -> dict[str, tuple[str | None, str | None]]:
        """The answers of a finished batch (its output and error files) to the requests ``ids``
        it was sent; a request answered in both files is refused like one answered twice."""
        found: dict[str, tuple[str | None, str | None]] = {}
        for key in ("output_file_id", "error_file_id"):
            file_id = getattr(entry, key)
            if file_id:
                text = self._get(entry, f"files/{file_id}/content", text=True)
                source = f"batch {entry.batch_id} {key} {file_id}"
                answers = read_output(text, source, set(ids))
                twice = [i for i in answers if i in found]
                if twice:
                    raise BatchError(
                        f"{source}: {_ids(twice)} also answered in the output file; the output is refused"
                    )
                found.update(answers)
        if entry.status == "failed" and not found:  # the provider refused the file: nothing ran
            raise BatchError(
                f"batch {entry.batch_id} failed: {entry.errors or 'no reason given'} "
                f"(recorded in {self.ledger.path or 'memory'})"
            )
        return found


def _state(batch: BatchObject) -> dict[str, Any]:
    """What the ledger keeps of a batch's current state (its status already checked)."""
    counts = batch.request_counts or schema.RequestCounts()
    state: dict[str, Any] = {
        "status": batch.status,
        "completed": counts.completed,
        "failed": counts.failed,
        "output_file_id": batch.output_file_id,
        "error_file_id": batch.error_file_id,
    }
    if batch.expires_at is not None:
        state["expires_at"] = batch.expires_at
    reasons = batch.reasons()
    if reasons:
        state["errors"] = reasons
    return state


def _still(running: Sequence[LedgerEntry]) -> str:
    """``2 batch(es) still running (batch_1 in_progress, batch_2 validating),``."""
    shown = ", ".join(f"{e.batch_id} {e.status}" for e in running[:3]) + (", ..." if len(running) > 3 else "")
    return f"{len(running)} batch(es) still running ({shown}),"


def _eta(gained: int, remaining: int, elapsed_s: float) -> str:
    if remaining <= 0:
        return ""
    if gained <= 0 or elapsed_s <= 0:
        return "; ETA: unknown yet"
    from culturebench.durations import duration_text

    return f"; ETA {duration_text(remaining * elapsed_s / gained)}"


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
