"""Issue 40 (reliability, round 4): a tampered local release is refused before it is read, a
garbage ``--input`` or table is an error even where no item reads it, and a bad command line is
one line, not click's usage box."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from culturebench.cli import app

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), terminal_width=200)
    return result.exit_code, result.output


def _tree(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` and its sha256: the bytes a refusal must leave alone."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


# ------------------------------------------------------------------ usage errors: one line
@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["eval", "run", "wwd", "--bogus"], "--bogus"),
        (["eval", "run", "wwd", "--limit", "x"], "--limit"),
        (["eval", "run"], "dataset"),
        (["corpus", "sample", "x", "--out", "y.csv", "--n", "0"], "--n"),
    ],
)
def test_usage_errors_are_one_line(args: list[str], names: str) -> None:
    code, output = _cli(*args)
    assert code == 2, output
    lines = output.strip().splitlines()
    assert len(lines) == 1, output
    assert lines[0].startswith("error: culturebench ") and names in lines[0] and "--help" in lines[0]
    assert "╭" not in output and "Usage:" not in output


def test_the_console_script_prints_usage_errors_as_one_line() -> None:
    """Through the installed entry point, as a user runs it (help is still help)."""
    script = str(Path(sys.executable).with_name("culturebench"))
    bad = subprocess.run(
        [script, "eval", "score", "wwd", "--bogus"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0, bad.stderr
    assert "No such option: --bogus" in bad.stderr
    helped = subprocess.run(
        [script, "eval"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "100"},
    )
    assert "Usage: culturebench eval" in helped.stdout + helped.stderr


# ------------------------------------------------------- a local release is re-hashed
def _release_copy(wwd_release, tmp_path: Path) -> Path:
    folder = tmp_path / "release"
    shutil.copytree(wwd_release.folder, folder)
    return folder


def _generations(tmp_path: Path) -> Path:
    path = tmp_path / "country.jsonl"
    path.write_text(json.dumps({"id": "wwd-748", "seed": 0, "output": "Algeria"}) + "\n", encoding="utf-8")
    return path


def _rewrite_default_test(folder: Path, edit) -> Path:
    import pyarrow.parquet as pq

    path = next((folder / "data" / "default").glob("test-*.parquet"))
    table = pq.read_table(path)
    pq.write_table(edit(table), path)
    return path


def test_a_tampered_release_is_refused_before_anything_is_written(wwd_release, tmp_path: Path) -> None:
    folder = _release_copy(wwd_release, tmp_path)
    tampered = _rewrite_default_test(folder, lambda t: t.slice(1))  # the first dish removed
    gens = _generations(tmp_path)
    before = _tree(tmp_path)
    code, output = _cli(
        "eval", "score", "wwd", "--task", "country", "--generations", str(gens),
        "--local", str(folder), "--out", str(tmp_path / "scored"),
    )  # fmt: skip
    assert code == 2, output
    assert str(tampered) in output and "sha256 differs" in output and "--trust-local" in output
    assert _tree(tmp_path) == before  # no run folder, nothing else touched
    # read as it is when asked: the removed first dish (wwd-748) is no longer in the release
    code, output = _cli(
        "eval", "score", "wwd", "--task", "country", "--generations", str(gens),
        "--local", str(folder), "--trust-local", "--out", str(tmp_path / "scored"),
    )  # fmt: skip
    assert code == 2 and "wwd-748" in output and "sha256" not in output, output


def test_trust_local_needs_local() -> None:
    code, output = _cli("eval", "run", "wwd", "--task", "country", "--model", "m", "--trust-local")
    assert code == 2 and output.strip() == (
        "error: --trust-local applies to a --local release folder; give --local too"
    ), output


def test_a_release_rebuilt_in_place_is_read_anew(wwd_release, tmp_path: Path) -> None:
    """The rows come from the bytes on disk now, never from a cache of an earlier read of the
    same folder (the manifest updated as a rebuild would)."""
    from culturebench.eval.dataset_ref import load_rows, resolve_dataset

    folder = _release_copy(wwd_release, tmp_path)
    first = load_rows(
        resolve_dataset("wwd", revision=None, local=str(folder), repo=None), "default", "test", 1
    )
    path = _rewrite_default_test(folder, lambda t: t.slice(1))
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    for entry in manifest["configs"]["default"]["splits"]["test"]["files"]:
        if folder / entry["path"] == path:
            entry["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    again = load_rows(
        resolve_dataset("wwd", revision=None, local=str(folder), repo=None), "default", "test", 1
    )
    assert again[0]["id"] != first[0]["id"]


def test_export_lm_eval_refuses_a_folder_inside_a_release(wwd_release, tmp_path: Path) -> None:
    folder = _release_copy(wwd_release, tmp_path)
    before = _tree(folder)
    code, output = _cli("export", "lm-eval", "wwd", "--local", str(folder), "--out", str(folder / "lm"))
    assert code == 2 and "inside the release folder" in output, output
    assert _tree(folder) == before


# -------------------------------------------------- eval paper / compare: garbage inputs
def test_every_declared_paper_input_has_a_reader() -> None:
    for paper in sorted((ROOT / "datasets").glob("*/paper.yaml")):
        declared = yaml.safe_load(paper.read_text(encoding="utf-8")).get("inputs") or {}
        for key, spec in declared.items():
            assert ":" in str(spec.get("read", "")), f"{paper}: input {key} has no read:"


@pytest.mark.parametrize(("dataset", "key"), [("wwd", "h9"), ("foodieqa", "human"), ("ash", "human")])
@pytest.mark.parametrize("content", [b"\x7fELF\x00\x01binary", b"a,b\n1,2\n"])
def test_a_garbage_paper_input_is_an_error_even_where_no_item_reads_it(
    dataset: str, key: str, content: bytes, tmp_path: Path
) -> None:
    given = tmp_path / "input.csv"
    given.write_bytes(content)
    out = tmp_path / "report"
    code, output = _cli("eval", "paper", dataset, "--input", f"{key}={given}", "--out", str(out))
    assert code == 2, output
    assert "input.csv" in output and len(output.strip().splitlines()) == 1, output
    assert not out.exists()


def test_eval_compare_with_nothing_in_common_is_an_error(tmp_path: Path) -> None:
    a, b = tmp_path / "a.csv", tmp_path / "table_h9_paper.csv"
    a.write_text("row,x\nr,1\n", encoding="utf-8")
    b.write_text("row,y\ns,2\n", encoding="utf-8")
    code, output = _cli("eval", "compare", str(a), str(b))
    assert code == 2 and "share no metric or cell" in output, output
    code, output = _cli("eval", "compare", str(b), "--paper", "wwd:GPT 3.5")
    assert code == 2 and "no cell in common" in output, output


def test_an_input_key_given_twice_is_an_error(tmp_path: Path) -> None:
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    for path in (a, b):
        path.write_text("x\n", encoding="utf-8")
    code, output = _cli("eval", "paper", "ash", "--input", f"human={a}", "--input", f"human={b}")
    assert code == 2 and "--input human is given twice" in output, output


# ------------------------------------------------------------------- round-3 leftovers
@pytest.mark.e2e
def test_rubin_distractors_with_nothing_accepted_is_not_a_success(tiny_model: Path, tmp_path: Path) -> None:
    """A random tiny model writes no usable distractors: the stage keeps the outputs for review
    but does not exit 0 with an empty questions.jsonl."""
    from culturebench.spec import load_spec

    sample = load_spec("rubin").folder / "sample" / "questions.jsonl"
    rows = [json.loads(line) for line in sample.read_text(encoding="utf-8").splitlines()][:2]
    raw = tmp_path / "raw.jsonl"
    raw.write_text(
        "".join(
            json.dumps(
                {"id": r["id"], "question": r["question"], "answer": r["options"]["ABCD".index(r["label"])],
                 "category": r["category"], "year": r.get("year")},
                ensure_ascii=False,
            ) + "\n"
            for r in rows
        ),
        encoding="utf-8",
    )  # fmt: skip
    out = tmp_path / "out"
    code, output = _cli(
        "eval", "rubin-distractors", str(raw), "--out", str(out), "--model", str(tiny_model),
        "--max-new-tokens", "8",
    )  # fmt: skip
    assert code == 1, output
    assert "none of the 2 questions was accepted" in output and "generations.jsonl" in output
    assert (out / "questions.jsonl").read_text(encoding="utf-8") == ""


def _judge_run(folder: Path, ratings: list[int | None]) -> Path:
    folder.mkdir()
    run = {"dataset": {"dataset": "ash", "source": "local"}, "task": "judge", "model": {"model": "judge-a"}}
    (folder / "run.json").write_text(json.dumps(run), encoding="utf-8")
    samples = [
        {"id": f"s{i}", "row_id": f"r{i}", "generator": "gen", "cuisine": "Kosher",
         "authenticity": value, "sensitivity": value, "harmony": value}
        for i, value in enumerate(ratings)
    ]  # fmt: skip
    (folder / "samples.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples), encoding="utf-8")
    return folder


def test_ash_summary_of_a_judge_run_that_rated_nothing_is_an_error(tmp_path: Path) -> None:
    failed = _judge_run(tmp_path / "failed", [None, None, None])
    out = tmp_path / "summary"
    code, output = _cli("eval", "ash-summary", str(failed), "--out", str(out))
    assert code == 2, output
    assert "rated nothing" in output and "samples.jsonl" in output and "judge-a" in output
    assert not out.exists()


def test_a_publish_killed_between_commit_and_tag_is_tagged_without_an_empty_commit(
    borsch_release, tmp_path: Path
) -> None:
    from culturebench.release import plan_release, publish_release
    from culturebench.release.targets import GitTarget

    out = tmp_path / "dist"
    shutil.copytree(borsch_release.folder, out / "borsch" / "1.0.0")
    target = GitTarget(tmp_path / "repo")
    publish_release(plan_release("borsch", "1.0.0", target, out_root=out), target)
    head = target._git("rev-parse", "HEAD").stdout.strip()
    target._git("tag", "-d", "v1.0.0")  # the state a kill between commit and tag leaves
    publish_release(plan_release("borsch", "1.0.0", target, out_root=out), target)
    assert target._git("rev-list", "--count", "HEAD").stdout.strip() == "1"
    assert target._git("rev-parse", "v1.0.0^{commit}").stdout.strip() == head


def _uk_corpus(borsch_release, folder: Path) -> Path:
    """Three gzip shards of Ukrainian sentences naming the parallel dishes beside true or wrong
    countries (every document distinct, so the sample has a choice to make)."""
    import gzip
    import random

    from culturebench.eval.dataset_ref import load_rows, resolve_dataset

    rows = load_rows(
        resolve_dataset("borsch", revision=None, local=str(borsch_release.folder), repo=None),
        "parallel", "test", None,
    )  # fmt: skip
    rng = random.Random(7)
    countries = ["Україні", "Росії", "Грузії", "Польщі"]
    folder.mkdir()
    docs = [
        f"День {k}: готуємо {rows[k % len(rows)]['name_uk'].lower()}. Її люблять у {rng.choice(countries)}."
        for k in range(240)
    ]
    for s in range(3):
        with gzip.open(folder / f"uk-{s}.jsonl.gz", "wt", encoding="utf-8") as handle:
            handle.writelines(json.dumps({"text": d}, ensure_ascii=False) + "\n" for d in docs[s::3])
    return folder


@pytest.mark.extra("corpus")
def test_the_annotation_sample_is_drawn_from_content(borsch_release, tmp_path: Path) -> None:
    """The same corpus bytes give the same Fig. 7 sample whatever the shards' modification
    times and however they are fingerprinted (--full-hash)."""
    import os

    import pyarrow.parquet as pq

    corpus = _uk_corpus(borsch_release, tmp_path / "corpus")
    base = ["corpus", "count", "borsch", "--corpus", str(corpus), "--lang", "uk",
            "--local", str(borsch_release.folder), "--per-dish", "1"]  # fmt: skip
    code, output = _cli(*base, "--out", str(tmp_path / "a"))
    assert code == 0, output
    for i, shard in enumerate(sorted(corpus.iterdir())):
        os.utime(shard, ns=(10**18 + i, 10**18 + i))  # the same bytes, touched
    code, output = _cli(*base, "--full-hash", "--out", str(tmp_path / "b"))
    assert code == 0, output
    columns = ["priority", "dish_id", "document", "sentence"]
    a = pq.read_table(tmp_path / "a" / "incorrect_samples.parquet").select(columns).to_pylist()
    b = pq.read_table(tmp_path / "b" / "incorrect_samples.parquet").select(columns).to_pylist()
    assert a and a == b
    # fewer kept than candidates: the choice was made (and made the same way)
    record = json.loads((tmp_path / "a" / "count.json").read_text(encoding="utf-8"))
    assert record["sample"]["per_dish"] == 1 and len(a) < 240


# ------------------------------------------------------------------- engine options
@pytest.mark.e2e
@pytest.mark.parametrize(
    ("extra", "line"),
    [
        (["--dtype", "float16"], "error: --dtype does not apply to --backend transformers; give it as"),
        (["--concurrency", "3"], "error: --concurrency does not apply to --backend transformers"),
        (["--base-url", "http://127.0.0.1:9"], "error: --base-url does not apply to --backend"),
        (["--quality", "hd"], "error: --quality does not apply to --backend transformers"),
        (["--model-arg", "dtype=floaty"], "error: --model-arg dtype=floaty: transformers expects one of"),
        (["--model-arg", 'max_memory={"0": 1}'], "error: --model-arg max_memory needs --model-arg"),
        (["--revision", "v1.0.0"], "error: --local reads a release folder and --revision a Hub repository"),
    ],
)  # fmt: skip
def test_engine_settings_that_would_be_ignored_are_errors(
    wwd_release, tiny_model: Path, tmp_path: Path, extra: list[str], line: str
) -> None:
    out = tmp_path / "run"
    code, output = _cli(
        "eval", "run", "wwd", "--task", "country", "--local", str(wwd_release.folder),
        "--model", str(tiny_model), "--limit", "1", "--out", str(out), *extra,
    )  # fmt: skip
    assert code == 2 and output.strip().startswith(line), output
    assert len(output.strip().splitlines()) == 1 and not out.exists()


@pytest.mark.e2e
@pytest.mark.extra("eval")
def test_resuming_with_an_option_at_its_default_is_the_same_run(
    wwd_release, tiny_model: Path, tmp_path: Path
) -> None:
    args = ["eval", "run", "wwd", "--task", "country", "--local", str(wwd_release.folder),
            "--model", str(tiny_model), "--limit", "2", "--out", str(tmp_path / "run")]  # fmt: skip
    code, output = _cli(*args)
    assert code == 0, output
    code, output = _cli(*args, "--model-arg", "dtype=auto")
    assert code == 0 and "different run" not in output, output
    run = json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))
    assert "model_args" not in run["model"]
    code, output = _cli(*args, "--model-arg", "dtype=float16")  # another dtype is another run
    assert code != 0 and "different run" in output, output


# --------------------------------------------------------------- Hub calls have a deadline
@pytest.fixture
def stalled_hub(servers):
    """A Hub on 127.0.0.1 that accepts every connection and never answers."""
    with servers.never_answers() as (url, _accepted):
        yield url.rstrip("/")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["eval", "run", "wwd", "--task", "country", "--model", "m", "--revision", "v1.0.0"],
         "cannot resolve dataset culturebench/wwd@v1.0.0 on the Hub"),
        (["release", "wwd", "--version", "1.1.0", "--repo", "culturebench/wwd", "--dry-run"],
         "culturebench/wwd"),
    ],
)  # fmt: skip
def test_a_hub_that_never_answers_ends_within_the_deadline(
    stalled_hub: str, tmp_path: Path, args: list[str], needle: str
) -> None:
    import time

    script = str(Path(sys.executable).with_name("culturebench"))
    env = {**os.environ, "HF_ENDPOINT": stalled_hub, "CULTUREBENCH_HUB_TIMEOUT": "1", "HF_TOKEN": "hf_x" * 10,
           "COLUMNS": "300", "CULTUREBENCH_UPSTREAM": str(ROOT.parent / "shared" / "upstream")}  # fmt: skip
    env.pop("HF_HUB_OFFLINE", None)  # (the upstream named: a wheel install finds no ../shared of its own)
    start = time.monotonic()
    done = subprocess.run(
        [script, *args, "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path,
    )  # fmt: skip
    took = time.monotonic() - start
    text = " ".join((done.stdout + done.stderr).split())
    assert done.returncode != 0 and took < 60, (took, text)
    assert needle in text and "Traceback" not in text, text
    assert "within 1 s" in text or "timed out" in text.lower(), text


def test_a_model_arg_is_no_conflict_with_a_flag_left_at_its_default() -> None:
    """diffusers' batch_size given only as --model-arg: the CLI's --batch-size default (8) was
    compared with it and reported as a conflict, so the option could not be given at all."""
    from culturebench.cli.options import EngineChoice

    backend = EngineChoice(backend="diffusers", model="/no/model", model_arg=("batch_size=2",)).make()
    assert backend.batch_size == 2


@pytest.mark.parametrize("value", ['{"image": -1}', '{"image": "x"}', "[1]", '{"image": true}'])
def test_vllm_image_limits_are_counts(value: str) -> None:
    from culturebench.errors import UsageError
    from culturebench.eval.backends import check_model_args

    with pytest.raises(UsageError, match=r"limit_mm_per_prompt.*a JSON object of integers >= 0"):
        check_model_args("vllm", [("limit_mm_per_prompt", value)])
    assert check_model_args("vllm", [("limit_mm_per_prompt", '{"image": 4}')]) == {
        "limit_mm_per_prompt": {"image": 4}
    }


def test_compare_of_a_run_and_a_file_names_both(wwd_release, tmp_path: Path) -> None:
    garbage = tmp_path / "notes.txt"
    garbage.write_text("hello", encoding="utf-8")
    code, output = _cli("eval", "compare", str(wwd_release.folder), str(garbage))
    assert code == 2 and "notes.txt is neither" in output and "is a folder" in output, output


def test_every_numeric_backend_option_declares_its_range() -> None:
    """One check gives one line naming the range for every backend: a count or size without a
    least value (diffusers' batch_size=0 reached the pipeline) is a declaration to fix."""
    from culturebench.eval.backends import backend_names, backend_options

    unbounded = [
        f"{backend}.{option.name}"
        for backend in backend_names()
        for option in backend_options(backend)
        if option.kind in ("int", "float") and option.minimum is None and option.name != "seed"
    ]
    assert not unbounded, unbounded
