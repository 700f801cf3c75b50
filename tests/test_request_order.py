"""The engine order of a chunk (eval/request_order.py): requests that share images run
together, and the samples file keeps the canonical order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from culturebench.eval.backends.base import Backend, Request
from culturebench.eval.request_order import engine_order, in_engine_order

pytestmark = pytest.mark.unit


def test_requests_sharing_images_run_together_in_canonical_order() -> None:
    a, b = b"image-a", b"image-b"
    requests = [
        Request("d1-t0", "Where is X from?", (a,)),
        Request("d2-t0", "Where is Y from?", (b,)),
        Request("d1-t1", "Name the dish X", (a,)),
        Request("t-only-1", "Откуда блюдо Z?"),
        Request("d2-t1", "Name the dish Y", (b,)),
        Request("t-only-0", "Where is Z from?"),
    ]
    order = [requests[i].id for i in engine_order(requests)]
    assert order == ["d1-t0", "d1-t1", "d2-t0", "d2-t1", "t-only-1", "t-only-0"]
    assert in_engine_order(lambda batch: [r.id.upper() for r in batch], requests) == [
        r.id.upper() for r in requests
    ]


class _Recording(Backend):
    """Answers each prompt with its own id, and records the order the engine was given."""

    name = "recording"
    CACHEABLE = False

    def __init__(self) -> None:
        super().__init__("m")
        self.seen: list[str] = []

    def generate(self, requests):  # type: ignore[override]
        self.seen += [r.id for r in requests]
        return [r.prompt for r in requests]


@pytest.mark.integration
def test_whatever_the_engine_order_the_samples_file_is_canonical(
    wwd_release, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runner hands each chunk over in the engine order (here made the reverse of the
    canonical one, since the tasks' own orders already group a dish's images) and writes
    the answers back in the canonical order, each under its own request."""
    from culturebench.eval import request_order
    from culturebench.eval.runner import run_eval

    monkeypatch.setattr(request_order, "engine_order", lambda requests: list(range(len(requests)))[::-1])
    backend = _Recording()
    out = tmp_path / "run"
    run_eval("wwd", "country", backend, out, local=str(wwd_release.folder), limit=6, batch_size=100)
    samples = [json.loads(x) for x in (out / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    written = [s["id"] for s in samples]
    assert backend.seen == written[::-1] and len(written) > 1  # sent reversed, written canonical
    assert all(s["output"] == s["prompt"] for s in samples)  # each answer under its own request
