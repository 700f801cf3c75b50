"""The response cache shared across runs (eval/response_cache.py): what a key covers, that it
is safe under two writing processes, bounding its size, and, end to end against a real
OpenAI-compatible server (`transformers serve` with the tiny model, behind a proxy of ours
that counts the completions it forwards), that a second reproduction into a new folder sends
no request and writes the same samples apart from their ``cached`` flag."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from culturebench.cli import app
from culturebench.eval.backends.base import Request
from culturebench.eval.response_cache import ResponseCache, model_identity, request_key

MODEL = {"backend": "openai", "model": "m", "model_revision": "abc", "versions": {"x": "1"}}
GREEDY = {"max_new_tokens": 20, "temperature": 0.0, "seed": 0}
SAMPLED = {"max_new_tokens": 20, "temperature": 0.7, "seed": 0}


def test_a_key_covers_the_model_the_request_and_the_sampling() -> None:
    model = model_identity(MODEL)
    assert "versions" not in model  # library versions do not change answers
    a, b = Request("x:ru:0", "Борщ?"), Request("y:uk:0", "Борщ?")
    # greedy: the content decides; the same prompt under another id (or seed) is the same answer
    assert request_key(model, a, GREEDY) == request_key(model, b, GREEDY)
    assert request_key(model, a, GREEDY) == request_key(model, a, {**GREEDY, "seed": 3})
    # sampled: each request samples with its own seed; another id or run seed is another answer
    assert request_key(model, a, SAMPLED) != request_key(model, b, SAMPLED)
    assert request_key(model, a, SAMPLED) != request_key(model, a, {**SAMPLED, "seed": 1})
    assert request_key(model, a, {**SAMPLED, "seed": None}) is None  # not reproducible: never cached
    # another revision, another token limit, another image: another answer
    other = model_identity({**MODEL, "model_revision": "def"})
    assert request_key(other, a, GREEDY) != request_key(model, a, GREEDY)
    assert request_key(model, a, {**GREEDY, "max_new_tokens": 21}) != request_key(model, a, GREEDY)
    pictured = Request("x:ru:0", "Борщ?", (b"\x89PNG one",))
    assert request_key(model, pictured, GREEDY) != request_key(
        model, Request("x:ru:0", "Борщ?", (b"two",)), GREEDY
    )


WRITER = """
import sys
from pathlib import Path
from culturebench.eval.response_cache import ResponseCache
cache = ResponseCache(Path(sys.argv[1]))
start = int(sys.argv[2])
for i in range(start, start + 400, 20):
    cache.put_many([(f"k{j}", "m", f"answer {j}") for j in range(i, i + 20)])
    cache.get_many([f"k{j}" for j in range(0, i, 7)])
"""


def test_two_processes_write_at_once(tmp_path: Path) -> None:
    """Shards of one reproduction share the cache: two processes writing overlapping keys at
    the same time lose nothing and fail nothing."""
    import subprocess

    path = tmp_path / "c" / "responses.sqlite"
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), str(start)], stderr=subprocess.PIPE, text=True
        )
        for start in (0, 200)
    ]
    errors = [w.communicate(timeout=120)[1] for w in workers]
    assert [w.returncode for w in workers] == [0, 0], errors
    cache = ResponseCache(path)
    assert cache.stats().entries == 600
    assert cache.get_many(["k0", "k599"]) == {"k0": "answer 0", "k599": "answer 599"}


def test_prune_by_age_and_size(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "responses.sqlite")
    cache.put_many([(f"k{i}", "m", "x" * 2000) for i in range(300)])
    before = cache.stats()
    assert before.entries == 300 and before.bytes > 600_000
    assert cache.prune(older_than_s=3600) == 0  # all used just now
    dropped = cache.prune(max_bytes=200_000)
    after = cache.stats()
    assert dropped > 0 and after.entries == 300 - dropped and after.bytes <= 260_000


def test_cache_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CULTUREBENCH_RESPONSE_CACHE", str(tmp_path / "cache"))
    ResponseCache(tmp_path / "cache" / "responses.sqlite").put_many([("k", "m", "a"), ("l", "n", "b")])
    done = CliRunner().invoke(app, ["cache", "info"])
    assert done.exit_code == 0 and "2 answers of 2 models" in done.output, done.output
    done = CliRunner().invoke(app, ["cache", "prune", "--max-size", "lots"])
    assert done.exit_code == 2 and "--max-size 'lots'" in done.output, done.output
    done = CliRunner().invoke(app, ["cache", "prune", "--max-size", "0"])
    assert done.exit_code == 0 and "dropped 2 answers; 0 left" in done.output, done.output


def _samples(folder: Path) -> list[dict]:
    return [json.loads(x) for x in (folder / "samples.jsonl").read_text(encoding="utf-8").splitlines() if x]


def test_a_second_reproduction_into_a_new_folder_sends_nothing(
    served: str, tiny_model: Path, borsch_release, servers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """BORSCH's origin-qa cells (parallel, ru, uk: the parallel config repeats the ru and uk
    dishes) through `eval reproduce`, twice, into two folders."""
    monkeypatch.setenv("CULTUREBENCH_RESPONSE_CACHE", str(tmp_path / "cache"))
    with servers.counting_proxy(served) as (url, proxy):

        def reproduce(name: str) -> None:
            args = [
                *("eval", "reproduce", "borsch", "--backend", "openai", "--model", str(tiny_model)),
                *("--base-url", url, "--local", str(borsch_release.folder), "--limit", "4"),
                *("--only", "origin-qa,origin-qa-ru", "--out", str(tmp_path / name)),
            ]
            done = CliRunner().invoke(app, args)
            assert done.exit_code == 0, done.output

        reproduce("first")
        sent = proxy.completions
        planned = CliRunner().invoke(app, [
            *("eval", "reproduce", "borsch", "--plan", "--backend", "openai", "--model", str(tiny_model)),
            *("--base-url", url, "--local", str(borsch_release.folder), "--limit", "4"),
            *("--only", "origin-qa,origin-qa-ru", "--price", "1,1", "--out", str(tmp_path / "plan")),
        ])  # fmt: skip
        assert planned.exit_code == 0, planned.output
        reproduce("second")
        assert proxy.completions == sent  # not one request the second time
    plan = json.loads((tmp_path / "plan" / "plan.json").read_text(encoding="utf-8"))
    # the plan knew: every generation is held by the cache, so the cached cost is nothing
    assert all(c["cache_hits_expected"] == c["generations"] > 0 for c in plan["cells"]), plan["cells"]
    assert plan["total"]["cost_usd_with_cache"] == 0
    assert "from earlier runs of this model" in plan["money_assumes"]["cache_hits"]
    cells = sorted(p.parent.name for p in (tmp_path / "first").glob("*/samples.jsonl"))
    assert {"origin-qa", "origin-qa-ru"} <= set(cells)  # (--only origin-qa takes every origin-qa cell)
    first = [s for cell in cells for s in _samples(tmp_path / "first" / cell)]
    second = [s for cell in cells for s in _samples(tmp_path / "second" / cell)]
    answered = sum(status == 200 for status in proxy.statuses)  # (the backend retries a failed request)
    assert answered == len(first) - sum(bool(s.get("cached")) for s in first) > 0, proxy.statuses
    assert all(s.get("cached") for s in second)
    assert [{k: v for k, v in s.items() if k != "cached"} for s in second] == [
        {k: v for k, v in s.items() if k != "cached"} for s in first
    ]
    run = json.loads((tmp_path / "second" / "origin-qa-ru" / "run.json").read_text(encoding="utf-8"))
    count = len(_samples(tmp_path / "second" / "origin-qa-ru"))
    assert run["cache"] == {"hits": count, "samples": count}


def test_no_cache_sends_every_request(
    served: str, tiny_model: Path, borsch_release, servers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CULTUREBENCH_RESPONSE_CACHE", str(tmp_path / "cache"))
    with servers.counting_proxy(served) as (url, proxy):
        for name, flag in (("a", "--cache"), ("b", "--no-cache")):
            args = [
                *("eval", "run", "borsch", "--task", "origin-qa", "--backend", "openai"),
                *("--model", str(tiny_model), "--base-url", url, "--local", str(borsch_release.folder)),
                *("--limit", "2", "--lang", "ru", flag, "--out", str(tmp_path / name)),
            ]
            done = CliRunner().invoke(app, args)
            assert done.exit_code == 0, done.output
    samples = _samples(tmp_path / "b")
    assert proxy.completions == 2 * len(samples) and not any(s.get("cached") for s in samples)
    assert "cache" not in json.loads((tmp_path / "b" / "run.json").read_text(encoding="utf-8"))
