"""Probe cases (issue 25, reliability round 3): never delete what we did not write, never drop
input silently, one writer per folder. Each former failure is reproduced through the real
command or the function it calls, and asserts what is left on disk."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from culturebench.cli import app
from culturebench.errors import CultureBenchError

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def cli(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.output + (result.stderr if result.stderr_bytes else "")


def _one_line_error(code: int, output: str, *needles: str) -> None:
    assert code == 2, output
    assert "Traceback" not in output and "unexpected" not in output, output
    flat = " ".join(output.split())
    for needle in needles:
        assert needle in flat, output


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _users_folder(path: Path) -> dict[str, bytes]:
    path.mkdir(parents=True)
    (path / "thesis.tex").write_text("months of work", encoding="utf-8")
    (path / "sub").mkdir()
    (path / "sub" / "data.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    return _tree(path)


# ---------------------------------------------------------------------- data loss
def test_eval_paper_never_empties_a_folder_it_did_not_write(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    before = _users_folder(folder)
    for extra in ([], ["--overwrite"]):
        code, output = cli("eval", "paper", "rubin", "--out", folder, *extra)
        _one_line_error(code, output, "files culturebench did not write", "even with --overwrite")
        assert _tree(folder) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]  # nothing staged or moved aside


def test_eval_paper_never_turns_a_file_into_a_folder(tmp_path: Path) -> None:
    target = tmp_path / "notes.md"
    target.write_text("my notes", encoding="utf-8")
    for extra in ([], ["--overwrite"]):
        code, output = cli("eval", "paper", "rubin", "--out", target, *extra)
        _one_line_error(code, output, "is a file, not a folder")
    assert target.read_text(encoding="utf-8") == "my notes"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.md"]  # no .notes.md.old-PID


def test_eval_paper_replaces_its_own_report_only_with_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "report"
    assert cli("eval", "paper", "rubin", "--out", out)[0] == 0
    first = (out / "paper_report.json").read_bytes()
    code, output = cli("eval", "paper", "rubin", "--out", out)
    _one_line_error(code, output, "already exists (use --overwrite")
    assert cli("eval", "paper", "rubin", "--out", out, "--overwrite")[0] == 0
    assert (out / "paper_report.json").read_bytes() == first
    assert (
        json.loads((out / ".culturebench-output.json").read_text(encoding="utf-8"))["kind"] == "paper-report"
    )


def test_eval_paper_refuses_unknown_input_keys_and_a_run_given_twice(
    borsch_release, scripted_backend, tmp_path: Path
) -> None:
    code, output = cli("eval", "paper", "wwd", "--input", f"review={tmp_path}", "--out", tmp_path / "r")
    _one_line_error(code, output, "unknown input key 'review'", "reviews")
    from culturebench.eval.runner import run_eval

    run = tmp_path / "run"
    run_eval(
        "borsch", "origin-qa", scripted_backend("Россия"), run, local=str(borsch_release.folder), limit=2
    )
    code, output = cli("eval", "paper", "borsch", run, run, "--out", tmp_path / "r")
    _one_line_error(code, output, "the same run is given twice")
    assert not (tmp_path / "r").exists()


def test_wikidata_diff_overwrite_keeps_a_foreign_folder(borsch_release, tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    before = _users_folder(folder)
    code, output = cli(
        "borsch", "wikidata-diff", tmp_path / "nowhere", "--out", folder, "--overwrite",
        "--local", borsch_release.folder,
    )  # fmt: skip
    _one_line_error(code, output, "files culturebench did not write")
    assert _tree(folder) == before


def test_build_overwrite_refuses_a_folder_that_is_not_this_release(
    upstream_borsch: Path, tmp_path: Path
) -> None:
    target = tmp_path / "dist" / "borsch" / "1.0.0"
    before = _users_folder(target)
    code, output = cli(
        "build", "borsch", "--out", tmp_path / "dist", "--source", upstream_borsch, "--overwrite"
    )
    _one_line_error(code, output, "not a borsch release", "even with --overwrite")
    assert _tree(target) == before


def test_eval_run_refuses_a_foreign_folder(borsch_release, scripted_backend, tmp_path: Path) -> None:
    from culturebench.eval.runner import run_eval

    folder = tmp_path / "mine"
    before = _users_folder(folder)
    with pytest.raises(CultureBenchError, match="not a culturebench run"):
        run_eval(
            "borsch", "origin-qa", scripted_backend("x"), folder, local=str(borsch_release.folder), limit=1
        )
    assert _tree(folder) == before


def test_scoring_into_a_run_folder_keeps_the_models_generations(
    borsch_release, scripted_backend, tmp_path: Path
) -> None:
    from culturebench.eval.runner import run_eval

    live = tmp_path / "live"
    run_eval(
        "borsch", "origin-qa", scripted_backend("Узбекистан"), live, local=str(borsch_release.folder), limit=2
    )
    before = _tree(live)
    code, output = cli(
        "eval", "score", "borsch", "--task", "origin-qa", "--generations", live / "samples.jsonl",
        "--out", live, "--local", borsch_release.folder,
    )  # fmt: skip
    _one_line_error(code, output, "holds an `eval run`", "model's generations")
    assert _tree(live) == before
    # an earlier score is ours: scoring again into it replaces it
    for _ in range(2):
        code, output = cli(
            "eval", "score", "borsch", "--task", "origin-qa", "--generations", live / "samples.jsonl",
            "--out", tmp_path / "scored", "--local", borsch_release.folder,
        )  # fmt: skip
        assert code == 0, output


# ---------------------------------------------------------------------- nothing half-done
def test_a_bad_task_after_a_good_one_writes_nothing(borsch_release, scripted_backend, tmp_path: Path) -> None:
    from culturebench.eval.runner import run_eval

    live = tmp_path / "live"
    run_eval(
        "borsch", "origin-qa", scripted_backend("Россия"), live, local=str(borsch_release.folder), limit=2
    )
    out = tmp_path / "scored"
    code, output = cli(
        "eval", "score", "borsch", "--task", "origin-qa", "--task", "no-such-task",
        "--generations", live / "samples.jsonl", "--out", out, "--local", borsch_release.folder,
    )  # fmt: skip
    _one_line_error(code, output, "no task 'no-such-task'")
    assert not out.exists()
    # a layout fault in the second task (its column is missing) also writes nothing
    code, output = cli(
        "eval", "score", "borsch", "--task", "origin-qa", "--task", "origin-vqa",
        "--generations", live / "samples.jsonl", "--out", out, "--local", borsch_release.folder,
    )  # fmt: skip
    assert code == 2, output
    assert not out.exists()


def test_unknown_task_option_is_an_error(borsch_release, tmp_path: Path) -> None:
    code, output = cli(
        "eval", "run", "borsch", "--task", "origin-qa", "--model", "m", "--option", "tensor_parallel_size=4",
        "--local", borsch_release.folder, "--out", tmp_path / "r",
    )  # fmt: skip
    _one_line_error(code, output, "no option 'tensor_parallel_size'", "its options: config")
    assert not (tmp_path / "r").exists()


# ---------------------------------------------------------------------- every input read
def _lines(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def test_every_generations_file_is_read(borsch_release, scripted_backend, tmp_path: Path) -> None:
    from culturebench.eval.run_folder import read_samples
    from culturebench.eval.runner import run_eval
    from culturebench.eval.score import score_generations

    live = tmp_path / "live"
    run_eval(
        "borsch", "origin-qa", scripted_backend("Россия"), live, local=str(borsch_release.folder), limit=3
    )
    samples = [{"id": s["id"], "output": s["output"]} for s in read_samples(live / "samples.jsonl")]
    half = len(samples) // 2
    a = _lines(tmp_path / "a.jsonl", samples[:half])
    b = _lines(tmp_path / "b.jsonl", samples[half:])
    got = score_generations("borsch", "origin-qa", [a, b], tmp_path / "s1", local=str(borsch_release.folder))
    assert got["samples"] == len(samples)  # the second file used to be ignored
    # the same answers in two files: scored once, counted
    c = _lines(tmp_path / "c.jsonl", samples[:2])
    got = score_generations(
        "borsch", "origin-qa", [a, b, c], tmp_path / "s2", local=str(borsch_release.folder)
    )
    assert got["samples"] == len(samples) and got["duplicate_generations"] == 2
    # a different answer for the same request in another file is an error naming both places
    d = _lines(tmp_path / "d.jsonl", [{"id": samples[0]["id"], "output": "Украина"}])
    with pytest.raises(
        CultureBenchError, match=r"d\.jsonl, row 1, field 'id'.*different output.*a\.jsonl row 1"
    ):
        score_generations("borsch", "origin-qa", [a, b, d], tmp_path / "s3", local=str(borsch_release.folder))
    with pytest.raises(CultureBenchError, match="given twice"):
        score_generations("borsch", "origin-qa", [a, a], tmp_path / "s4", local=str(borsch_release.folder))
    assert not (tmp_path / "s3").exists() and not (tmp_path / "s4").exists()


def test_non_text_outputs_are_the_models_failure(borsch_release, scripted_backend, tmp_path: Path) -> None:
    from culturebench.eval.run_folder import read_samples
    from culturebench.eval.runner import run_eval
    from culturebench.eval.score import score_generations
    from culturebench.eval.tasks.base import MAX_SCORED_CHARS

    live = tmp_path / "live"
    run_eval(
        "borsch", "origin-qa", scripted_backend("Россия"), live, local=str(borsch_release.folder), limit=2
    )
    ids = [s["id"] for s in read_samples(live / "samples.jsonl")]
    records = [
        {"id": ids[0], "output": ["Россия"]},
        {"id": ids[1], "output": 12},
        {"id": ids[2], "output": None},
    ]
    records.append({"id": ids[3], "output": "Россия " * (MAX_SCORED_CHARS // 3)})
    gens = _lines(tmp_path / "g.jsonl", records)
    got = score_generations("borsch", "origin-qa", [gens], tmp_path / "s", local=str(borsch_release.folder))
    assert got["invalid_outputs"] == 3 and got["outputs_cut_for_scoring"] == 1
    scored = {s["id"]: s for s in read_samples(tmp_path / "s" / "samples.jsonl")}
    assert [scored[i]["invalid_output"] for i in ids[:3]] == ["array", "number", "null"]
    assert all(scored[i]["jaccard"] == 0.0 for i in ids[:3])  # never read as "['Россия']"
    plain = {s["id"]: s for s in read_samples(live / "samples.jsonl")}[ids[3]]  # "Россия" once
    assert scored[ids[3]]["scored_chars"] == MAX_SCORED_CHARS
    assert scored[ids[3]]["predicted"] == plain["predicted"] and scored[ids[3]]["jaccard"] == plain["jaccard"]
    report = (tmp_path / "s" / "report.md").read_text(encoding="utf-8")
    assert "outputs that are not text (scored as failures): 3" in report


def test_csv_cells_beyond_pythons_limit_are_read_and_long_answers_cut(
    borsch_release, scripted_backend, tmp_path: Path
) -> None:
    """Issue 53: a CSV cell over 131,072 characters (Python's csv default), in a column nothing
    reads or in the answer column, was refused as "malformed CSV". Now the file is read, the
    long answer scored on its first MAX_SCORED_CHARS characters and counted."""
    import csv

    from culturebench.eval.run_folder import read_samples
    from culturebench.eval.runner import run_eval
    from culturebench.eval.tasks.base import MAX_SCORED_CHARS

    live = tmp_path / "live"
    run_eval(
        "borsch", "origin-qa", scripted_backend("Россия"), live, local=str(borsch_release.folder), limit=1
    )
    ids = [s["id"] for s in read_samples(live / "samples.jsonl")][:2]
    long_answer = ("Россия " * 40_000)[:200_000]
    gens = tmp_path / "g.csv"
    with gens.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "output", "notes"])
        writer.writerow([ids[0], "Россия", "x" * 200_000])  # the long cell in a column nothing reads
        writer.writerow([ids[1], long_answer, ""])
    code, output = cli(
        "eval", "score", "borsch", "--task", "origin-qa", "--generations", gens,
        "--local", borsch_release.folder, "--out", tmp_path / "s",
    )  # fmt: skip
    assert code == 0, output
    scored = {s["id"]: s for s in read_samples(tmp_path / "s" / "samples.jsonl")}
    assert set(scored) == set(ids)
    assert "scored_chars" not in scored[ids[0]]
    assert scored[ids[1]]["scored_chars"] == MAX_SCORED_CHARS
    assert scored[ids[1]]["output"] == long_answer  # the whole output is kept, only scoring is cut
    results = json.loads((tmp_path / "s" / "results.json").read_text(encoding="utf-8"))
    assert results["outputs_cut_for_scoring"] == 1


@pytest.mark.e2e
def test_a_run_of_nothing_exits_non_zero(borsch_release, tmp_path: Path, tiny_vlm: Path) -> None:
    """BORSCH VQA on a release without embedded images: every row is skipped."""
    code, output = cli(
        "eval", "run", "borsch", "--task", "origin-vqa", "--model", tiny_vlm,
        "--local", borsch_release.folder, "--out", tmp_path / "r",
    )  # fmt: skip
    _one_line_error(code, output, "nothing to run", "with images first")
    assert not (tmp_path / "r").exists()


# ---------------------------------------------------------------------- one writer
def _hold_lock(path: Path) -> subprocess.Popen:
    script = textwrap.dedent(
        f"""
        import sys, time
        from culturebench.outputs import writer_lock
        with writer_lock({str(path)!r}):
            print("held", flush=True)
            time.sleep(120)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_writer_is_refused_and_a_killed_one_leaves_no_lock(
    borsch_release, scripted_backend, tmp_path: Path
) -> None:
    from culturebench.eval.runner import run_eval

    out = tmp_path / "run"
    holder = _hold_lock(out)
    try:
        with pytest.raises(CultureBenchError, match=rf"is being written by pid {holder.pid} "):
            run_eval(
                "borsch", "origin-qa", scripted_backend("x"), out, local=str(borsch_release.folder), limit=1
            )
        assert not out.exists()
    finally:
        os.kill(holder.pid, signal.SIGKILL)  # by PID; the kernel drops its lock with it
        holder.wait(10)
    deadline = time.monotonic() + 5
    while True:  # the lock went with the process: no stale lock to clean by hand
        try:
            run_eval(
                "borsch", "origin-qa", scripted_backend("x"), out, local=str(borsch_release.folder), limit=1
            )
            break
        except CultureBenchError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    assert (out / "results.json").is_file()
    assert not (tmp_path / ".run.lock").exists()  # removed on a normal exit


def test_the_lock_names_the_holder_in_the_cli(tmp_path: Path) -> None:
    out = tmp_path / "report"
    holder = _hold_lock(out)
    try:
        code, output = cli("eval", "paper", "rubin", "--out", out)
        _one_line_error(code, output, f"is being written by pid {holder.pid}")
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(10)
    assert not out.exists()


# ---------------------------------------------------------------------- disk full
def _limited(args: list[str], limit: int, cwd: Path) -> subprocess.CompletedProcess:
    """Run the CLI with files capped at ``limit`` bytes (RLIMIT_FSIZE: a write past it fails
    with EFBIG, as a full disk fails with ENOSPC; SIGXFSZ ignored so the write returns)."""
    import resource

    def cap() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    exe = str(Path(sys.executable).with_name("culturebench"))
    return subprocess.run(
        [exe, *args], cwd=cwd, capture_output=True, text=True, preexec_fn=cap, check=False, timeout=300
    )


def test_a_full_disk_names_the_path_and_changes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "report"
    proc = _limited(["eval", "paper", "rubin", "--out", str(out)], 2000, tmp_path)
    assert proc.returncode == 2, proc.stderr
    line = " ".join(proc.stderr.split())
    assert f"cannot write {out}: File too large; nothing was changed there" in line, proc.stderr
    assert "unexpected" not in line
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no staging folder or lock left


def test_a_full_disk_during_an_atomic_write_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "notes.json"
    target.write_text("{}", encoding="utf-8")
    script = textwrap.dedent(
        f"""
        import resource, signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100))
        from culturebench.atomic import write_text_atomic
        write_text_atomic({str(target)!r}, "x" * 1000)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert f"WriteFailed: cannot write {target}: File too large" in proc.stderr
    assert target.read_text(encoding="utf-8") == "{}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.json"]


def test_resumable_folders_refuse_what_they_did_not_write(borsch_release, tmp_path: Path) -> None:
    """corpus count and contamination resume into their own folder; never into someone else's."""
    folder = tmp_path / "mine"
    before = _users_folder(folder)
    for args in (
        ["corpus", "count", "borsch", "--corpus", str(tmp_path / "none.jsonl"), "--lang", "uk"],
        ["corpus", "contamination", "borsch", "--references", str(tmp_path / "none.parquet")],
    ):
        code, output = cli(*args, "--local", borsch_release.folder, "--out", folder)
        _one_line_error(code, output, "files culturebench did not write", "refusing to write into it")
    assert _tree(folder) == before


def test_description_pipeline_refuses_a_foreign_root(borsch_release, tmp_path: Path) -> None:
    from culturebench.datasets.borsch.pipeline import PipelineSpec, run_pipeline

    folder = tmp_path / "mine"
    before = _users_folder(folder)
    spec = PipelineSpec(out=folder, local=str(borsch_release.folder))
    with pytest.raises(CultureBenchError, match="files culturebench did not write"):
        run_pipeline(spec)
    assert _tree(folder) == before


def test_url_check_report_folder_is_ours_or_new(borsch_release, tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    before = _users_folder(folder)
    code, output = cli("check-urls", borsch_release.folder, "--report", folder, "--sample", "1")
    _one_line_error(code, output, "--report", "files culturebench did not write")
    assert _tree(folder) == before


def test_an_empty_folder_is_taken(tmp_path: Path) -> None:
    out = tmp_path / "empty"
    out.mkdir()
    code, output = cli("eval", "paper", "rubin", "--out", out)
    assert code == 0, output
    assert (out / "paper_report.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]


def test_no_bare_nan_in_any_json_we_write(tmp_path: Path) -> None:
    from culturebench.jsonsafe import json_text

    text = json_text({"mean": float("nan"), "n": 0, "ci": [float("inf"), -float("inf")], "ok": 0.5})
    assert json.loads(text) == {"mean": None, "n": 0, "ci": [None, None], "ok": 0.5}
    import numpy as np

    assert json.loads(json_text({"x": np.float64("nan"), "y": np.int64(3)})) == {"x": None, "y": 3}


# ---------------------------------------------------------------------- third probe (issue 25)
def test_single_file_outputs_never_replace_a_users_file_or_an_input(borsch_release, tmp_path: Path) -> None:
    precious = tmp_path / "precious.md"
    precious.write_text("mine", encoding="utf-8")
    code, output = cli("validate", borsch_release.folder, "--json", precious, "--no-records")
    _one_line_error(code, output, "--json", "already exists (use --overwrite")
    assert precious.read_text(encoding="utf-8") == "mine"
    table = tmp_path / "t.csv"
    table.write_text(",a\nx,1\n", encoding="utf-8")
    code, output = cli("eval", "compare", table, table, "--out", table, "--overwrite")
    _one_line_error(code, output, "is also an input of this command")
    assert table.read_text(encoding="utf-8") == ",a\nx,1\n"
    code, output = cli("eval", "compare", table, table, "--out", borsch_release.folder / "cmp.md")
    _one_line_error(code, output, "is inside the release folder")
    assert not (borsch_release.folder / "cmp.md").exists()
    ann = tmp_path / "a.csv"
    ann.write_text("annotated", encoding="utf-8")
    code, output = cli("corpus", "annotations", ann, ann)
    _one_line_error(code, output, "given twice")
    code, output = cli("eval", "compare", tmp_path / "nowhere", table)
    _one_line_error(code, output, "nowhere: no such file or folder")


def test_outputs_inside_a_release_folder_are_refused(borsch_release, tmp_path: Path) -> None:
    before = _tree(borsch_release.folder)
    for args in (
        ["eval", "paper", "rubin", "--out", borsch_release.folder / "p"],
        ["build", "ash", "--out", borsch_release.folder / "dist"],
        ["eval", "tiny-model", borsch_release.folder / "model"],
    ):
        code, output = cli(*args)
        _one_line_error(code, output, "is inside the release folder")
    assert _tree(borsch_release.folder) == before


def test_build_overwrite_keeps_files_added_to_a_release(tmp_path: Path) -> None:
    assert cli("build", "ash", "--out", tmp_path)[0] == 0
    notes = tmp_path / "ash" / "1.0.0" / "notes.txt"
    notes.write_text("mine", encoding="utf-8")
    code, output = cli("build", "ash", "--out", tmp_path, "--overwrite")
    _one_line_error(code, output, "1 file(s) the release did not write (notes.txt)")
    assert notes.read_text(encoding="utf-8") == "mine"


def test_sigterm_and_kill_leave_no_lock_or_staging(tmp_path: Path, servers) -> None:
    out = tmp_path / "report"
    script = textwrap.dedent(
        f"""
        import sys, time
        from culturebench.outputs import OutputKind, staged_output
        with staged_output({str(out)!r}, OutputKind("paper-report"), overwrite=False) as staged:
            print("writing", flush=True)
            time.sleep(120)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "writing"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    assert any(p.name.endswith(".lock") for p in tmp_path.iterdir())  # the kernel dropped the lock ...
    code, output = cli("eval", "paper", "rubin", "--out", out)  # ... and the next command clears the rest
    assert code == 0 and sorted(p.name for p in tmp_path.iterdir()) == ["report"], output
    # SIGTERM (a scheduler's kill) of the CLI unwinds like Ctrl-C: no lock, no staging left. The
    # build is held in its image stage by a mirror that never answers, so the signal always lands
    # mid-build (a build left to run could finish before the signal on a fast machine).
    exe = str(Path(sys.executable).with_name("culturebench"))
    dist = tmp_path / "dist"
    with servers.never_answers() as (mirror, accepted):
        args = ["build", "borsch", "--out", str(dist), "--images", "--image-mirror", mirror]
        args += ["--commons-api", "none", "--allow", "127.0.0.1"]
        proc = subprocess.Popen([exe, *args], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 60
            while not accepted and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.05)
            assert accepted, "the build never reached its image stage"
            assert (dist / "borsch" / ".1.0.0.lock").exists()  # mid-build: the release is locked
            os.kill(proc.pid, signal.SIGTERM)
            assert proc.wait(60) == 128 + signal.SIGTERM
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert not dist.exists() or not [
        p.name for p in dist.rglob("*") if ".lock" in p.name or ".staging-" in p.name
    ]
