"""Shards: ``eval run --shard K/N`` cuts a run by dish/question, and ``eval merge`` joins the
parts into the folder one process writes, byte for byte (also after a killed and resumed
shard); everything that would make a wrong whole is refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from culturebench.cli import app
from culturebench.errors import UsageError
from culturebench.eval.backends.base import SamplingParams
from culturebench.eval.backends.transformers_backend import TransformersBackend
from culturebench.eval.merge import MergeError, merge_shards
from culturebench.eval.run_folder import RunMismatch, read_samples
from culturebench.eval.runner import run_eval
from culturebench.eval.shards import Shard

pytestmark = pytest.mark.e2e

LIMIT = 5  # parallel rows -> 5 dishes x 2 languages x 5 prompts x 2 seeds = 100 generations
SEEDS = [0, 1]
FILES = ("run.json", "samples.jsonl", "results.json", "report.md")


def engine(model: Path) -> TransformersBackend:
    return TransformersBackend(str(model), sampling=SamplingParams(max_new_tokens=6), batch_size=4)


def run(release, model: Path, out: Path, shard: Shard | None = None, backend=None) -> dict:
    return run_eval(
        "borsch",
        "origin-qa",
        backend or engine(model),
        out,
        local=str(release.folder),
        limit=LIMIT,
        seeds=SEEDS,
        shard=shard,
    )


def lines(folder: Path) -> list[dict]:
    return read_samples(folder / "samples.jsonl")


@pytest.fixture(scope="module")
def runs(borsch_release, tiny_model: Path, tmp_path_factory: pytest.TempPathFactory):
    """The one-process run and its three shards."""
    root = tmp_path_factory.mktemp("shards")
    whole = root / "whole"
    run(borsch_release, tiny_model, whole)
    parts = [root / f"part{k}" for k in (1, 2, 3)]
    for k, folder in enumerate(parts, start=1):
        run(borsch_release, tiny_model, folder, Shard(k, 3))
    return whole, parts


def test_shards_partition_the_run_by_dish(runs) -> None:
    whole, parts = runs
    by_part = [lines(p) for p in parts]
    ids = [s["id"] for part in by_part for s in part]
    assert sorted(ids) == sorted(s["id"] for s in lines(whole))  # every generation once
    dishes = [{s["row_id"] for s in part} for part in by_part]
    assert all(dishes) and sum(map(len, dishes)) == LIMIT  # a dish is never split
    for part in by_part:  # all languages, prompts and seeds of a dish stay together
        per_dish = {}
        for s in part:
            per_dish.setdefault(s["row_id"], set()).add(s["id"].split(":", 1)[1])
        assert all(len(v) == 2 * 5 * len(SEEDS) for v in per_dish.values())
    results = json.loads((parts[0] / "results.json").read_text(encoding="utf-8"))
    assert results["shard"] == "1/3" and results["samples"] == len(by_part[0])
    run_json = json.loads((parts[0] / "run.json").read_text(encoding="utf-8"))
    assert run_json["shard"] == {"index": 1, "count": 3}
    assert run_json["requests"] == LIMIT * 2 * 5  # the whole run's requests, pinned by hash


def test_merged_shards_equal_the_one_process_run_byte_for_byte(runs, tmp_path: Path) -> None:
    whole, parts = runs
    merged = tmp_path / "merged"
    merge_shards([parts[2], parts[0], parts[1]], merged)  # any order
    for name in FILES:
        assert (merged / name).read_bytes() == (whole / name).read_bytes(), name
    assert sorted(p.name for p in merged.iterdir()) == sorted(p.name for p in whole.iterdir())


def test_a_killed_and_resumed_shard_merges_to_the_same_bytes(
    runs, borsch_release, tiny_model: Path, tmp_path: Path
) -> None:
    whole, parts = runs
    killed = tmp_path / "part2"
    shutil.copytree(parts[1], killed)
    raw = (killed / "samples.jsonl").read_bytes().splitlines(keepends=True)
    # killed mid-write: 7 whole lines and half of the 8th, no results yet
    (killed / "samples.jsonl").write_bytes(b"".join(raw[:7]) + raw[7][: len(raw[7]) // 2])
    (killed / "results.json").unlink()
    with pytest.raises(MergeError, match="not finished"):
        merge_shards([parts[0], killed, parts[2]], tmp_path / "early")
    assert not (tmp_path / "early").exists()  # nothing half-written

    class Counting(TransformersBackend):
        asked = 0

        def generate(self, requests):
            type(self).asked += len(requests)
            return super().generate(requests)

    resumed = Counting(str(tiny_model), sampling=SamplingParams(max_new_tokens=6), batch_size=4)
    run(borsch_release, tiny_model, killed, Shard(2, 3), backend=resumed)
    assert Counting.asked == len(raw) - 7  # only the missing generations
    merged = tmp_path / "merged"
    merge_shards([parts[0], killed, parts[2]], merged)
    for name in FILES:
        assert (merged / name).read_bytes() == (whole / name).read_bytes(), name


def test_merge_refuses_what_is_not_one_whole_run(
    runs, borsch_release, tiny_model: Path, tmp_path: Path
) -> None:
    whole, parts = runs
    with pytest.raises(MergeError, match=r"missing shard 3 of 3"):
        merge_shards(parts[:2], tmp_path / "a")
    with pytest.raises(MergeError, match="given twice"):
        merge_shards([parts[0], parts[0], parts[1], parts[2]], tmp_path / "b")
    with pytest.raises(MergeError, match="not a shard"):
        merge_shards([whole, *parts], tmp_path / "c")
    other = tmp_path / "other"  # a shard of a run with other seeds
    run_eval(
        "borsch", "origin-qa", engine(tiny_model), other, local=str(borsch_release.folder),
        limit=LIMIT, seeds=[0], shard=Shard(3, 3),
    )  # fmt: skip
    with pytest.raises(MergeError, match=r"another run .*differs in: .*seeds"):
        merge_shards([parts[0], parts[1], other], tmp_path / "d")
    full = tmp_path / "full"
    full.mkdir()
    (full / "x.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(Exception, match=r"not a culturebench run|not empty"):
        merge_shards(parts, full)
    assert (full / "x.txt").read_text(encoding="utf-8") == "mine"
    assert not any((tmp_path / n).exists() for n in "abcd")


def test_a_shard_folder_resumes_only_as_that_shard(runs, borsch_release, tiny_model: Path) -> None:
    whole, parts = runs
    with pytest.raises(RunMismatch, match=r"holds shard 1/3 .*--shard 1/3"):
        run(borsch_release, tiny_model, parts[0], Shard(2, 3))
    with pytest.raises(RunMismatch, match="holds shard 1/3"):
        run(borsch_release, tiny_model, parts[0])
    with pytest.raises(RunMismatch, match="unsharded"):
        run(borsch_release, tiny_model, whole, Shard(1, 3))


def test_shard_option_is_checked(borsch_release, tiny_model: Path, tmp_path: Path) -> None:
    for bad in ("0/3", "4/3", "2", "a/b", "1/0"):
        with pytest.raises(UsageError, match="--shard"):
            Shard.parse(bad)
    with pytest.raises(UsageError, match=r"nothing to do .*5 units"):
        run(borsch_release, tiny_model, tmp_path / "many", Shard(7, 7))


def test_cli_runs_shards_and_merges(borsch_release, tiny_model: Path, tmp_path: Path) -> None:
    cli = CliRunner()
    whole = tmp_path / "whole"
    base = [
        "eval",
        "run",
        "borsch",
        "--task",
        "origin-qa",
        "--model",
        str(tiny_model),
        "--max-new-tokens",
        "4",
    ]
    base += ["--local", str(borsch_release.folder), "--limit", "2"]
    assert cli.invoke(app, [*base, "--out", str(whole)]).exit_code == 0
    for k in (1, 2):
        result = cli.invoke(app, [*base, "--shard", f"{k}/2", "--out", str(tmp_path / f"s{k}")])
        assert result.exit_code == 0, result.output
        assert f"(shard {k}/2)" in result.output
    result = cli.invoke(
        app, ["eval", "merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "--out", str(tmp_path / "m")]
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "m" / "samples.jsonl").read_bytes() == (whole / "samples.jsonl").read_bytes()
    bad = cli.invoke(app, [*base, "--shard", "3/2", "--out", str(tmp_path / "bad")])
    assert bad.exit_code == 2 and "K must be between 1 and N" in bad.output
    missing = cli.invoke(app, ["eval", "merge", str(tmp_path / "s1"), "--out", str(tmp_path / "m2")])
    assert missing.exit_code != 0 and "missing shard 2 of 2" in missing.output


def test_sampling_does_not_depend_on_the_batch(tiny_model: Path) -> None:
    """transformers samples each request from its own random stream (run seed + request id):
    alone or batched with others, a request gets the same tokens, so sampled runs shard and
    resume exactly; another seed samples differently."""
    from culturebench.eval.backends.base import Request

    requests = [Request(f"r{i}", f"Which country is dish number {i} from?" + " really" * i) for i in range(5)]

    def sample(seed: int, batch_size: int, todo=requests) -> list[str]:
        hot = SamplingParams(max_new_tokens=12, temperature=1.0, seed=seed)
        return TransformersBackend(str(tiny_model), sampling=hot, batch_size=batch_size).generate(todo)

    together = sample(0, 5)
    assert together == sample(0, 1)
    assert together[2:] == sample(0, 2, requests[2:])
    assert sample(1, 5) != together


@pytest.mark.unit
def test_answers_with_unicode_line_separators_read_back(tmp_path: Path) -> None:
    """A sampled answer may hold U+2028, U+0085 or U+001C, which ``str.splitlines`` treats as
    line ends; a sample line holding them is still one sample (found by a sampled tiny run)."""
    from culturebench.eval.run_folder import read_samples
    from culturebench.jsonsafe import json_text

    odd = "a\u2028b\x85c\x1cd\u2029e"
    path = tmp_path / "samples.jsonl"
    path.write_text(json_text({"id": "x", "output": odd}) + json_text({"id": "y", "output": "z"}), "utf-8")
    assert [s["output"] for s in read_samples(path)] == [odd, "z"]
