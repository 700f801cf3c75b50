"""A refusal writes nothing, anywhere (issue 53): every command that writes several folders is
given each class of bad input the probe named (a blank recorded judgment, a judge or model
endpoint on 127.0.0.1 where nothing listens, a malformed samples or generations file, a task
that does not exist), into a target that is absent or holds an earlier output of the command.
Each must exit 2 with one error line and leave the target's tree byte for byte as it was: the
same paths (hidden ones too: no staging folder or lock left) and the same sha256 of each file.

The probe's cases that failed before the fix: `eval score --matcher recorded` of two tasks
wrote the first task's folder before refusing the second's blank judgment; `--matcher llm`
with a dead judge (or a task without a matcher) left empty task folders; `eval run` and `eval
reproduce` with a dead endpoint left a run.json (and reproduce.json) that no answer ever
filled. A last test: a score of one task into an earlier every-task score replaces it whole
(and the reverse), never two layouts side by side."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from culturebench.cli import app

pytestmark = pytest.mark.integration

HEADER = (
    "id,seed,describe,ingredients_llm,country_llm,country_match,ingredients_intersect,ingredients_union\n"
)
ROWS = ("748,0,A stew,\"['rice', 'lamb']\",Algeria,True,\"['rice']\",\"['rice', 'lamb']\"\n",
        "745,0,A soup,\"['beet']\",Morocco,False,\"['beet']\",\"['beet']\"\n")  # fmt: skip


def _snapshot(root: Path) -> dict[str, str]:
    """Every path under ``root`` (hidden ones too) with the sha256 of each file."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        for p in sorted(root.rglob("*"))
    }


def _cli(args: list[str]):
    return CliRunner().invoke(app, args, terminal_width=400)


@pytest.fixture(scope="module")
def inputs(wwd_release, servers, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Generations files (good, one blank judgment, a malformed seed), earlier outputs of each
    command (a score of two tasks, of one task, a paper report, an lm-eval export), run folders
    whose samples.jsonl is malformed or whose results.json is cut short, and a port on 127.0.0.1
    with nothing listening."""
    base = tmp_path_factory.mktemp("refusals")
    local = str(wwd_release.folder)
    good, blank, malformed = base / "good.csv", base / "blank.csv", base / "malformed.csv"
    good.write_text(HEADER + "".join(ROWS), encoding="utf-8")
    blank.write_text(HEADER + ROWS[0] + ROWS[1].replace(",False,", ",,"), encoding="utf-8")
    malformed.write_text(HEADER + ROWS[0] + ROWS[1].replace("745,0,", "745,x,"), encoding="utf-8")
    score = ["eval", "score", "wwd", "--generations", str(good), "--layout", "wwd-probing", "--local", local]
    earlier = {"every-task": base / "every", "single-task": base / "single"}
    for args in (
        [*score, "--task", "description", "--task", "country", "--matcher", "recorded", "--out",
         str(base / "every")],
        [*score, "--task", "country", "--out", str(base / "single")],
        [*score, "--task", "country", "--out", str(base / "run")],
        ["eval", "paper", "wwd", str(base / "run"), "--local", local, "--out", str(base / "paper")],
        ["export", "lm-eval", "wwd", "--task", "country", "--local", local, "--out", str(base / "export")],
    ):  # fmt: skip
        result = _cli(args)
        assert result.exit_code == 0, result.output
    earlier |= {"paper": base / "paper", "export": base / "export"}
    broken = base / "broken"
    shutil.copytree(base / "run", broken)
    with open(broken / "samples.jsonl", "a", encoding="utf-8") as handle:
        handle.write('{"id": "wwd-748:en:0@0", "output": \n')  # a torn line, then more
        handle.write(json.dumps({"id": "x"}) + "\n")
    cut = base / "cut"  # results.json cut short (a killed copy)
    shutil.copytree(base / "run", cut)
    (cut / "results.json").write_text(
        (base / "run" / "results.json").read_text(encoding="utf-8")[:200], "utf-8"
    )
    dead = f"http://127.0.0.1:{servers.free_port()}/v1"
    return {"local": local, "good": str(good), "blank": str(blank), "malformed": str(malformed),
            "broken": str(broken), "cut": str(cut), "dead": dead, "earlier": earlier}  # fmt: skip


def _cases(i: dict) -> dict[str, list[str]]:
    """Command and bad input -> the arguments before ``--out TARGET``."""
    local = ["--local", i["local"]]
    score = ["eval", "score", "wwd", "--layout", "wwd-probing", *local]
    judge = [
        "--matcher",
        "llm",
        "--judge-model",
        "m",
        "--judge-backend",
        "openai",
        "--judge-base-url",
        i["dead"],
    ]
    model = ["--backend", "openai", "--model", "m", "--base-url", i["dead"]]
    two = ["--task", "description", "--task", "country"]
    reproduce = ["eval", "reproduce", "wwd", *local, *model]
    return {
        "eval score/blank judgment": [*score, *two, "--generations", i["blank"], "--matcher", "recorded"],
        "eval score/dead judge": [
            *score, "--task", "ingredients", "--task", "country", "--generations", i["good"], *judge
        ],
        "eval score/task without a matcher": [*score, *two, "--generations", i["good"], *judge],
        "eval score/malformed generations": [*score, *two, "--generations", i["malformed"]],
        "eval score/missing task": [*score, "--task", "description", "--task", "nope",
                                    "--generations", i["good"]],
        "eval run/dead endpoint": ["eval", "run", "wwd", "--task", "country", "--limit", "2", *local, *model],
        "eval run/missing task": ["eval", "run", "wwd", "--task", "nope", *local, *model],
        "eval reproduce/dead endpoint": [*reproduce, "--only", "country", "--limit", "1"],
        "eval reproduce/missing task": [*reproduce, "--only", "nope", "--limit", "1"],
        "eval merge/malformed samples": ["eval", "merge", i["broken"], i["broken"]],
        "eval paper/malformed results": ["eval", "paper", "wwd", i["cut"], *local, "--overwrite"],
        "eval results/malformed samples": ["eval", "results", i["broken"], "--overwrite"],
        "export lm-eval/missing task": ["export", "lm-eval", "wwd", "--task", "country", "--task", "nope",
                                        *local],
    }  # fmt: skip


# the earlier outputs each command may be pointed at (besides an absent target)
EARLIER = {
    "eval score": ("every-task", "single-task"),
    "eval paper": ("paper",),
    "export lm-eval": ("export",),
}
NAMES = list(_cases(dict.fromkeys(("local", "good", "blank", "malformed", "broken", "cut", "dead"), "x")))
CASES = [(n, t) for n in NAMES for t in ("absent", *EARLIER.get(n.split("/")[0], ()))]


@pytest.mark.parametrize(("name", "target"), CASES)
def test_a_refusal_leaves_the_target_as_it_was(
    inputs: dict, name: str, target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "not-a-key")  # the endpoint refuses before any key is read
    world = tmp_path / "world"
    world.mkdir()
    out = world / "out"
    if target != "absent":
        shutil.copytree(inputs["earlier"][target], out)
    before = _snapshot(world)
    result = _cli([*_cases(inputs)[name], "--out", str(out)])
    errors = [line for line in result.output.splitlines() if line.startswith(("error:", "bad input:"))]
    assert result.exit_code == 2, f"{name} into {target}: exit {result.exit_code}\n{result.output}"
    assert len(errors) == 1 and "Traceback" not in result.output, result.output
    assert _snapshot(world) == before, f"{name} into {target}: changed the target\n{result.output}"


def test_a_score_replaces_an_earlier_score_whole(inputs: dict, tmp_path: Path) -> None:
    """One task into an every-task score, and every task into a one-task score: the new layout
    only, never both side by side; the earlier judge answers are kept for the rescore."""
    score = ["eval", "score", "wwd", "--generations", inputs["good"], "--layout", "wwd-probing"]
    out = tmp_path / "out"
    shutil.copytree(inputs["earlier"]["every-task"], out)
    result = _cli([*score, "--local", inputs["local"], "--task", "country", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["report.md", "results.json", "run.json", "samples.jsonl"]
    result = _cli(
        [*score, "--local", inputs["local"], "--task", "description", "--task", "country", "--matcher",
         "recorded", "--out", str(out)]
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert not (out / "run.json").exists() and (out / "country" / "run.json").is_file()
    run = json.loads((out / "country" / "run.json").read_text(encoding="utf-8"))
    assert run["matcher"]["judge_cache"] == str(out / "country" / "judgments_recorded.jsonl")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging or lock left


@pytest.mark.unit
@pytest.mark.parametrize(
    ("written", "kept"),
    [
        ({"run.json": "{}", "samples.jsonl": ""}, False),  # no answer yet: nothing to resume
        ({"run.json": "{}", "samples.jsonl": '{"id": "a"}\n'}, True),  # an answer: resumed later
        ({"run.json": "{}", "batches.json": "{}"}, True),  # a submitted (paid) batch: polled later
    ],
    ids=["no-answer", "an-answer", "a-batch"],
)
def test_a_failed_first_run_keeps_only_what_a_resume_needs(tmp_path: Path, written: dict, kept: bool) -> None:
    """The rollback of a first attempt (eval run, eval reproduce) removes the folder only when
    nothing in it is worth resuming; an interrupted batch or any answer stays."""
    from culturebench.eval.run_folder import holds_work
    from culturebench.eval.runner import RUN_RECORDS
    from culturebench.outputs import kept_only_if_used

    out = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt), kept_only_if_used(out, lambda f: holds_work(f, RUN_RECORDS)):
        (out / "cell").mkdir(parents=True)
        for name, text in written.items():
            (out / "cell" / name).write_text(text, encoding="utf-8")
        raise KeyboardInterrupt
    assert out.exists() is kept
