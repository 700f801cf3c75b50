"""Issue 41, items 1-3 (image stage): progress that reaches a pipe or a log (plain lines at
10% steps and a fixed interval, ``--quiet`` silences them), an image stage that SIGTERM stops
within seconds while its threads are blocked on a server that never answers, an image stage
that fetched (nearly) nothing fails and keeps the earlier release, and ``validate
--contact-sheet`` that always writes its sheet or says why it is empty.

Every server is real and local (127.0.0.1); the CLI runs as a subprocess wherever what is
tested is what a pipe receives or how the process dies."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from culturebench.builders import get_builder
from culturebench.cli import app

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "datasets" / "borsch" / "sample"
CLI = [sys.executable, "-c", "from culturebench.cli import main; main()"]
LINE = re.compile(r": (\d[\d,]*)/(\d[\d,]*) \((\d+)%\)")


def cli_env(**extra: str) -> dict[str, str]:
    """The test environment for a CLI subprocess (isolated caches come from conftest)."""
    env = {**os.environ, "CULTUREBENCH_PROGRESS_INTERVAL": "0.2", "COLUMNS": "100", **extra}
    env.pop("FORCE_COLOR", None)
    return env


def closed_port() -> str:
    """A loopback URL nothing listens on (connections are refused at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/"


@pytest.fixture
def image_sample(tmp_path: Path, image_source, servers):
    """The BORSCH sample whose manifest pins one distinct PNG per image row; returns
    (source folder, folder of the bytes to serve, manifest rows)."""
    source, served, _titles, rows = image_source(
        tmp_path, lambda k, _row: (servers.png_bytes(seed=k), servers.png_bytes(seed=k)), lambda k: False
    )
    return source, served, rows


def earlier_release(source: Path, out: Path) -> bytes:
    """Build the release without images (what a user had before); return its manifest bytes."""
    result = get_builder("borsch").build(source=str(source), out_root=out)
    return (result.folder / "manifest.json").read_bytes()


# ---------------------------------------------------------------------------- 1. progress
def test_progress_lines_at_steps_and_interval_with_rate_and_eta(monkeypatch, capsys) -> None:
    """Off a terminal: one line when a task starts, one per 10% step (not per update) with
    done/total, rate and ETA, and a heartbeat line when a step takes longer than the interval."""
    from culturebench.cli import progress as cli_support

    monkeypatch.setenv("CULTUREBENCH_PROGRESS_INTERVAL", "0.3")
    cli_support.set_quiet(False)
    bar = cli_support.progress_bar()  # pytest's stderr is not a terminal
    with bar:
        job = bar.add_task("checking", total=1000)
        bar.update(job, completed=0)
        for done in range(1, 501):
            bar.update(job, completed=done)
        time.sleep(0.8)  # no update for more than two intervals: the line still comes
        for done in range(501, 1001):
            bar.update(job, completed=done)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("checking: 0/1,000 (0%)"), lines
    assert lines[-1].startswith("checking: 1,000/1,000 (100%), ") and "/s" in lines[-1]
    halfway = [line for line in lines if line.startswith("checking: 500/1,000 (50%)")]
    assert len(halfway) >= 2, lines  # the 50% step, then at least one heartbeat while waiting
    assert all("ETA" in line for line in halfway) and all("/s" in line for line in halfway)
    assert len(lines) <= 11 + 4, lines  # the 0..100% steps and a few heartbeats


def test_each_stage_of_one_task_has_its_own_lines(monkeypatch, capsys) -> None:
    """A pipeline counts its stages on one task, renaming it: a stage after a finished one
    still writes its steps and heartbeats (the §5 image stage was silent for over 30 s)."""
    from culturebench.cli import progress as cli_support

    monkeypatch.setenv("CULTUREBENCH_PROGRESS_INTERVAL", "0.3")
    cli_support.set_quiet(False)
    with cli_support.progress_bar() as bar:
        job = bar.add_task("pipeline", total=None)
        for done in range(7):
            bar.update(job, description="1-description", completed=done, total=6)
        bar.update(job, description="3-images", completed=0, total=12)
        time.sleep(0.8)  # a slow first image: the heartbeat says the stage is alive
        for done in range(1, 13):
            bar.update(job, description="3-images", completed=done, total=12)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("1-description: 0/6 (0%)")
    assert any(x.startswith("1-description: 6/6") for x in lines)
    images = [line for line in lines if line.startswith("3-images: ")]
    assert images[0].startswith("3-images: 0/12 (0%)"), lines
    assert sum(line.startswith("3-images: 0/12") for line in images) >= 2, lines  # and a heartbeat
    assert images[-1].startswith("3-images: 12/12 (100%)"), lines


def test_quiet_shows_no_progress(monkeypatch, capsys) -> None:
    from culturebench.cli import progress as cli_support

    monkeypatch.setenv("CULTUREBENCH_PROGRESS_INTERVAL", "0.1")
    cli_support.set_quiet(True)
    try:
        with cli_support.progress_bar() as bar:
            job = bar.add_task("checking", total=10)
            for done in range(11):
                bar.update(job, completed=done)
            time.sleep(0.3)
    finally:
        cli_support.set_quiet(False)
    assert capsys.readouterr().err == ""


@pytest.mark.e2e
def test_eval_run_reports_generation_progress_into_a_pipe(tmp_path: Path, tiny_model: Path) -> None:
    """`eval run` with its stderr a pipe (a scheduler's log): progress lines while
    generating (not only 0 and the end), done/total, rate, ETA; `--quiet` prints none of it."""
    release = tmp_path / "dist"
    quiet = subprocess.run(
        [*CLI, "--quiet", "build", "borsch", "--source", str(SAMPLE), "--out", str(release)],
        capture_output=True, text=True, env=cli_env(), check=False, timeout=120,
    )  # fmt: skip
    assert quiet.returncode == 0, quiet.stderr
    assert "building borsch" not in quiet.stderr and not LINE.search(quiet.stderr), quiet.stderr
    folder = next((release / "borsch").iterdir())
    args = ["eval", "run", "borsch", "--task", "origin-qa", "--backend", "transformers"]
    args += ["--model", str(tiny_model), "--local", str(folder), "--limit", "2", "--lang", "uk"]
    args += ["--max-new-tokens", "8", "--batch-size", "4", "--out", str(tmp_path / "run")]
    proc = subprocess.run(
        [*CLI, *args], capture_output=True, text=True, env=cli_env(), check=False, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("borsch/origin-qa")]
    assert lines and any(LINE.search(line) for line in lines), proc.stderr
    counts = [(int(m.group(1)), int(m.group(2))) for m in map(LINE.search, lines) if m]
    assert counts[-1] == (10, 10), proc.stderr
    assert any(0 < done < 10 for done, _ in counts), proc.stderr  # progress while generating
    assert any("/s" in line and "ETA" in line for line in lines if "(100%)" not in line), proc.stderr
    assert "\x1b[" not in proc.stderr  # plain lines, no terminal redraws


# ------------------------------------------------------------------ 2. a stoppable image stage
def test_sigterm_stops_the_image_stage_while_downloads_hang(servers, tmp_path: Path, image_sample) -> None:
    """Workers blocked on a server that accepts and never answers: SIGTERM ends the build
    within a few seconds (exit 143, one line, no traceback), the earlier release stays byte
    for byte and nothing half-written is left beside it."""
    source, _served, _rows = image_sample
    out = tmp_path / "dist"
    before = earlier_release(source, out)
    with servers.never_answers() as (mirror, accepted):
        args = ["build", "borsch", "--source", str(source), "--out", str(out), "--overwrite", "--images"]
        args += ["--image-mirror", mirror, "--commons-api", "none", "--allow", "127.0.0.1"]
        proc = subprocess.Popen(
            [*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env()
        )
        try:
            deadline = time.monotonic() + 60
            while not accepted and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.05)
            assert accepted, "the image stage never connected"
            time.sleep(0.3)  # the workers are now blocked reading
            sent = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            try:
                _stdout, stderr = proc.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                pytest.fail("SIGTERM did not stop the image stage within 5 s")
            took = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 143, stderr
    assert took < 5 and "Traceback" not in stderr, stderr
    folder = out / "borsch"
    release = next(p for p in folder.iterdir() if (p / "manifest.json").is_file())
    assert (release / "manifest.json").read_bytes() == before
    assert sorted(p.name for p in folder.iterdir()) == [release.name]  # no staging, no lock


# --------------------------------------------------------- 3. nothing that failed looks done
def test_an_image_stage_that_fetched_nothing_fails_and_keeps_the_release(
    tmp_path: Path, image_sample
) -> None:
    source, _served, rows = image_sample
    out = tmp_path / "dist"
    before = earlier_release(source, out)
    args = ["build", "borsch", "--source", str(source), "--out", str(out), "--overwrite", "--images"]
    args += ["--image-mirror", closed_port(), "--commons-api", "none", "--allow", "127.0.0.1"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    message = " ".join(result.output.split())
    assert f"0 of {len({r['path'] for r in rows}):,} images fetched (0%)" in message, message
    assert "unavailable" in message and "earlier release stays as it was" in message
    assert "Traceback" not in result.output
    release = next((out / "borsch").iterdir())
    assert (release / "manifest.json").read_bytes() == before


def test_min_images_fetched_sets_the_share_a_stage_needs(tmp_path: Path, image_sample, servers) -> None:
    """Half of the images are served: the default passes (the missing ones are failed rows),
    `--min-images-fetched 0.9` fails and leaves the earlier release alone."""
    source, served, rows = image_sample
    for k, row in enumerate(rows):
        if k % 2:
            (served / row["path"]).unlink()
    out = tmp_path / "dist"
    before = earlier_release(source, out)
    with servers.serve_folder(served) as mirror:
        args = ["build", "borsch", "--source", str(source), "--out", str(out), "--overwrite", "--images"]
        args += ["--image-mirror", mirror, "--commons-api", "none", "--allow", "127.0.0.1"]
        strict = CliRunner().invoke(app, [*args, "--min-images-fetched", "0.9"])
        assert strict.exit_code == 2, strict.output
        assert "--min-images-fetched 0.9 needs 90%" in " ".join(strict.output.split())
        release = next((out / "borsch").iterdir())
        assert (release / "manifest.json").read_bytes() == before
        lenient = CliRunner().invoke(app, args)
        assert lenient.exit_code == 0, lenient.output
        assert (release / "manifest.json").read_bytes() != before
    bad = CliRunner().invoke(app, [*args[:6], "--images", "--min-images-fetched", "1.5"])
    assert bad.exit_code == 2
    alone = CliRunner().invoke(app, [*args[:6], "--min-images-fetched", "0.5"])
    assert alone.exit_code == 2 and "need --images" in alone.output


def test_contact_sheet_is_written_or_says_why(tmp_path: Path) -> None:
    """A release without images: the sheet is still written, saying why it is empty, and the
    console says so too (it used to exit 0 writing nothing and saying nothing)."""
    release = get_builder("borsch").build(source=str(SAMPLE), out_root=tmp_path / "dist").folder
    sheet = tmp_path / "out" / "findings.html"
    result = CliRunner().invoke(
        app, ["validate", str(release), "--no-records", "--contact-sheet", str(sheet)], terminal_width=200
    )
    assert result.exit_code == 0, result.output
    assert sheet.is_file() and "no image records" in sheet.read_text(encoding="utf-8")
    assert "contact sheet:" in result.output and "no image records" in result.output


# ------------------------------------------------- 4. a stoppable eval run (issue 53, item 5)
@pytest.mark.e2e
@pytest.mark.parametrize(
    ("command", "signum"),
    [
        ("run", signal.SIGTERM),
        pytest.param("reproduce", signal.SIGINT, marks=pytest.mark.slow),  # the cell's 200 new tokens
    ],
    ids=["eval-run-SIGTERM", "eval-reproduce-Ctrl-C"],
)
def test_eval_stops_within_seconds_while_every_request_hangs_and_resumes(
    command: str, signum: signal.Signals, served: str, tiny_model: Path, servers, tmp_path: Path
) -> None:
    """Every request of an `eval run` / `eval reproduce` hangs (an endpoint that accepts and
    never answers, `--model-arg timeout=600`): SIGTERM or Ctrl-C ends the process within
    seconds (it went on printing `0/8 (0%)` every 30 s), with one line, the signal's exit code
    and no traceback, keeping the chunk answered before; the same command, once the endpoint
    answers, resumes the folder and asks only what is missing."""
    release = get_builder("borsch").build(source=str(SAMPLE), out_root=tmp_path / "dist").folder
    out = tmp_path / "out"
    what = ["run", "borsch", "--task", "origin-qa", "--lang", "ru"]
    if command == "reproduce":
        what = ["reproduce", "borsch", "--only", "origin-qa-ru"]
    with servers.counting_proxy(served) as (url, proxy):
        args = [*CLI, "eval", *what, "--backend", "openai", "--model", str(tiny_model), "--base-url", url]
        args += ["--model-arg", "timeout=600", "--local", str(release), "--limit", "2", "--out", str(out)]
        args += ["--max-new-tokens", "8"] if command == "run" else []
        proxy.let_through = 8  # the first chunk (a tenth of 10, at least a batch of 8) is answered,
        proxy.hold.set()  # then every request is read and never answered
        proc = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env()
        )
        try:
            deadline = time.monotonic() + 120
            while not proxy.held and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.05)
            assert proxy.held, f"no request reached the endpoint: {proc.communicate()}"
            time.sleep(0.3)  # the request threads are now blocked reading
            proc.send_signal(signum)
            try:
                _stdout, stderr = proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                pytest.fail(f"{signum.name} did not stop `eval {command}` within 10 s")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        assert proc.returncode == 128 + signum, stderr
        assert f"eval {command} stopped ({signum.name})" in stderr and "Traceback" not in stderr, stderr
        assert "rerun the same command to resume" in stderr, stderr
        folder = out if command == "run" else out / "origin-qa-ru"
        kept = (folder / "samples.jsonl").read_text(encoding="utf-8").splitlines()
        assert proxy.completions == len(kept) == 8  # the answered chunk is on disk
        proxy.hold.clear()
        resumed = subprocess.run(
            args, capture_output=True, text=True, env=cli_env(), check=False, timeout=600
        )
        assert resumed.returncode == 0, resumed.stderr
    samples = (folder / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    assert samples[:8] == kept  # resumed: the kept samples stay, only the missing are asked
    assert len(samples) == proxy.completions == 10  # 2 dishes x 5 prompts, each answered once
    assert (folder / "results.json").is_file()
