"""The response cache shared across runs (eval/response_cache.py): what a key covers, that it
is safe under two writing processes, bounding its size, and, end to end against a real
OpenAI-compatible server (`transformers serve` with the tiny model, behind a proxy of ours
that counts the completions it forwards), that a second reproduction into a new folder sends
no request and writes the same samples. The cache leaves no trace in a run's files: a cold
run, a warm run and a merge of warm shards are the same bytes. A cache path that cannot be this
cache (under a file, another database, not a database) and an absurd ``--max-size`` are one
line, exit 2."""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from culturebench.cli import app
from culturebench.eval.backends.base import Request
from culturebench.eval.response_cache import ResponseCache, model_identity, request_key

pytestmark = pytest.mark.unit

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


@pytest.mark.e2e
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
            return done.output

        reproduce("first")
        sent = proxy.completions
        planned = CliRunner().invoke(app, [
            *("eval", "reproduce", "borsch", "--plan", "--backend", "openai", "--model", str(tiny_model)),
            *("--base-url", url, "--local", str(borsch_release.folder), "--limit", "4"),
            *("--only", "origin-qa,origin-qa-ru", "--price", "1,1", "--out", str(tmp_path / "plan")),
        ])  # fmt: skip
        assert planned.exit_code == 0, planned.output
        told = reproduce("second")
        assert proxy.completions == sent  # not one request the second time
        assert re.search(r"response cache: ([\d,]+) of \1 answers reused, 0 asked of the model", told), told
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
    # the parallel cell repeats the ru and uk dishes: the first reproduction asked each once
    assert 0 < answered < len(first), proxy.statuses
    assert second == first  # the same samples, whether the model or the cache answered
    for cell in cells:
        for name in ("samples.jsonl", "results.json", "run.json"):
            a, b = tmp_path / "first" / cell / name, tmp_path / "second" / cell / name
            assert a.read_bytes() == b.read_bytes(), (cell, name)


@pytest.mark.e2e
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
    assert proxy.completions == 2 * len(samples)


FILES = ("samples.jsonl", "results.json", "run.json", "report.md")


@pytest.mark.e2e
def test_the_cache_leaves_no_trace_in_a_run(
    tiny_model: Path, borsch_release, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold run, the same run warm (every answer from the cache) and three warm shards
    merged: the same bytes (a warm merge used to carry ``"cached": true`` in every sample and
    ``hits`` in results.json where the cold run had none). Only the terminal tells them apart."""
    monkeypatch.setenv("CULTUREBENCH_RESPONSE_CACHE", str(tmp_path / "cache"))
    cli = CliRunner()
    base = ["eval", "run", "borsch", "--task", "origin-qa", "--model", str(tiny_model)]
    base += ["--max-new-tokens", "6", "--local", str(borsch_release.folder), "--limit", "3", "--lang", "ru"]

    def run(name: str, *extra: str) -> str:
        done = cli.invoke(app, [*base, *extra, "--out", str(tmp_path / name)])
        assert done.exit_code == 0, done.output
        return " ".join(done.output.split())

    told = {name: run(name) for name in ("cold", "warm")}
    told.update({f"part{k}": run(f"part{k}", "--shard", f"{k}/3") for k in (1, 2, 3)})
    parts = [str(tmp_path / f"part{k}") for k in (1, 2, 3)]
    merged = cli.invoke(app, ["eval", "merge", *parts, "--out", str(tmp_path / "merged")])
    assert merged.exit_code == 0, merged.output
    for name in FILES:
        cold = (tmp_path / "cold" / name).read_bytes()
        assert (tmp_path / "warm" / name).read_bytes() == cold, name
        assert (tmp_path / "merged" / name).read_bytes() == cold, name
    # what the cache did is told on the terminal only
    count = len(_samples(tmp_path / "cold"))
    assert f"response cache: 0 of {count} answers reused, {count} asked of the model" in told["cold"]
    assert f"response cache: {count} of {count} answers reused, 0 asked of the model" in told["warm"]
    reused = [
        re.search(r"response cache: (\d+) of \1 answers reused, 0 asked", told[f"part{k}"]) for k in (1, 2, 3)
    ]
    assert sum(int(m.group(1)) for m in reused if m) == count, told


def _foreign_database(path: Path, table: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    db.execute(f"CREATE TABLE {table} (x TEXT)")
    db.execute(f"INSERT INTO {table} VALUES ('theirs')")
    db.commit()
    db.close()


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("other tables", "is another SQLite database (tables: notes), not this cache"),
        ("other columns", "its table 'responses' has the columns x, not this cache's key, model"),
        ("not a database", "is not an SQLite database"),
        ("under a file", "is a file, not a folder"),
    ],
)
def test_a_cache_path_that_is_not_this_cache_is_one_line(
    kind: str, said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_model: Path
) -> None:
    """Another program's SQLite file, a file that is not a database, a path under a regular
    file: `cache info`, `cache prune` and `eval run` say so in one line naming the path, exit 2,
    and leave the file as it was (the foreign database is not switched to WAL nor given a
    table); the run writes nothing."""
    folder = tmp_path / "cache"
    path = folder / "responses.sqlite"
    if kind == "other tables":
        _foreign_database(path, "notes")
    elif kind == "other columns":
        _foreign_database(path, "responses")
    elif kind == "not a database":
        folder.mkdir()
        path.write_text("a note, not a database\n", encoding="utf-8")
    else:
        (tmp_path / "afile").write_text("x", encoding="utf-8")
        folder = tmp_path / "afile" / "cache"
        path = folder / "responses.sqlite"
    before = path.read_bytes() if path.is_file() else None
    monkeypatch.setenv("CULTUREBENCH_RESPONSE_CACHE", str(folder))
    release = tmp_path / "dist"
    from culturebench.builders import get_builder

    sample = Path(__file__).resolve().parent.parent / "datasets" / "borsch" / "sample"
    built = get_builder("borsch").build(source=str(sample), out_root=release).folder
    run = ["eval", "run", "borsch", "--task", "origin-qa", "--model", str(tiny_model), "--local", str(built)]
    run += ["--limit", "1", "--lang", "ru", "--max-new-tokens", "2", "--out", str(tmp_path / "run")]
    for args in (["cache", "info"], ["cache", "prune", "--max-size", "1GB"], run):
        done = CliRunner().invoke(app, args, terminal_width=400)
        lines = [line for line in done.output.splitlines() if line.startswith("error:")]
        assert done.exit_code == 2, (args, done.output)
        assert len(lines) == 1 and f"response cache {path}: " in lines[0] and said in lines[0], done.output
        assert "unexpected" not in done.output and "Traceback" not in done.output
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").iterdir())
    if before is not None:
        assert path.read_bytes() == before
        assert sorted(p.name for p in folder.iterdir()) == ["responses.sqlite"]  # no -wal, no -shm


@pytest.mark.parametrize("size", ["1e400GB", "inf", "nan", "2PB", "1e999"])
def test_max_size_must_be_a_finite_sensible_size(
    size: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CULTUREBENCH_RESPONSE_CACHE", str(tmp_path / "cache"))
    done = CliRunner().invoke(app, ["cache", "prune", "--max-size", size])
    assert done.exit_code == 2 and f"--max-size {size!r}: " in done.output, done.output
    assert "unexpected" not in done.output and len(done.output.strip().splitlines()) == 1, done.output
    done = CliRunner().invoke(app, ["cache", "prune", "--older-than-days", "inf"])
    assert done.exit_code == 2 and "--older-than-days" in done.output, done.output
