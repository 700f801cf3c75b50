"""One output policy for every writer (issue 40): every command that takes ``--out`` (or
``--json``) is walked through the same targets (a folder of the user's, a release folder and a
folder inside it, a run folder and a folder inside it, an existing file) and must refuse each
with a line naming the flag or the path, changing no byte anywhere.

The commands get otherwise valid inputs (built once per module), so the only thing wrong is
the target; a test at the end checks the walk covers every such command of the CLI."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from culturebench.cli import app

pytestmark = pytest.mark.e2e

# target kinds for folder outputs and for single-file outputs
FOLDER_TARGETS = ("foreign", "release", "in-release", "run", "in-run", "file")
FILE_TARGETS = ("folder", "in-release", "in-run", "existing-file")
# commands whose output location is not a plain output (checked elsewhere or not an output)
NOT_WALKED = {
    ("release", "--out"): "the root of the release folders the release reads (tests/test_release.py)",
}


def _snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        for p in sorted(root.rglob("*"))
    }


@pytest.fixture(scope="module")
def inputs(wwd_release, borsch_release, tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Valid inputs of every walked command, made once."""
    import gzip

    base = tmp_path_factory.mktemp("inputs")
    gens = base / "country.jsonl"
    gens.write_text(
        "".join(json.dumps({"id": i, "seed": 0, "output": "Algeria"}) + "\n" for i in ("wwd-748", "wwd-745")),
        encoding="utf-8",
    )
    run = base / "scored"
    result = CliRunner().invoke(
        app,
        ["eval", "score", "wwd", "--task", "country", "--generations", str(gens),
         "--local", str(wwd_release.folder), "--out", str(run)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    corpus = base / "corpus"
    corpus.mkdir()
    with gzip.open(corpus / "uk-0.jsonl.gz", "wt", encoding="utf-8") as handle:
        handle.write(json.dumps({"text": "Борщ і вареники люблять у Польщі."}, ensure_ascii=False) + "\n")
    count = base / "count"
    result = CliRunner().invoke(
        app,
        ["corpus", "count", "borsch", "--corpus", str(corpus), "--lang", "uk",
         "--local", str(borsch_release.folder), "--out", str(count)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    judge = base / "judge"
    judge.mkdir()
    run_info = {"dataset": {"dataset": "ash", "source": "local"}, "task": "judge", "model": {"model": "j"}}
    (judge / "run.json").write_text(json.dumps(run_info), encoding="utf-8")
    (judge / "samples.jsonl").write_text(
        json.dumps({"id": "s", "row_id": "r", "generator": "g", "cuisine": "Kosher", "authenticity": 4,
                    "sensitivity": 4, "harmony": 4}) + "\n",
        encoding="utf-8",
    )  # fmt: skip
    annotations = base / "annotations.csv"
    annotations.write_text("language,category\nuk,Wrong origin\n", encoding="utf-8")
    raw = base / "raw.jsonl"
    question = {"id": "q1", "question": "Столица России?", "answer": "Москва", "category": "x", "year": None}
    raw.write_text(json.dumps(question, ensure_ascii=False) + "\n", encoding="utf-8")
    scored = run / "country" if (run / "country").is_dir() else run
    return {
        "wwd": str(wwd_release.folder), "borsch": str(borsch_release.folder), "model": str(tiny_model),
        "gens": str(gens), "run": str(scored), "count": str(count), "judge": str(judge),
        "annotations": str(annotations), "raw": str(raw), "corpus": str(corpus),
    }  # fmt: skip


# command -> (arguments before the target, flag); FILE_OUTPUTS write one file, the others a folder
FILE_OUTPUTS = {
    "validate", "release", "eval compare", "eval report", "corpus code-mixing", "corpus cooccurrence",
    "corpus sample", "corpus annotations", "corpus captions",
}  # fmt: skip


def _commands(i: dict) -> dict[str, tuple[list[str], str]]:
    local = ["--local", i["wwd"]]
    model = ["--model", i["model"]]
    repo = "git:" + i["corpus"] + "-repo"
    return {
        "build": (["build", "wwd"], "--out"),
        "validate": (["validate", i["wwd"]], "--json"),
        "release": (["release", "wwd", "--version", "9.9.9", "--to", repo, "--dry-run"], "--json"),
        "eval results": (["eval", "results", i["run"]], "--out"),
        "eval run": (["eval", "run", "wwd", "--task", "country", *local, *model, "--limit", "1"], "--out"),
        "eval reproduce": (
            ["eval", "reproduce", "wwd", *local, *model, "--limit", "1", "--only", "country"],
            "--out",
        ),
        "eval reproduce --plan": (["eval", "reproduce", "wwd", *local, *model, "--plan"], "--out"),
        "eval merge": (["eval", "merge", i["run"]], "--out"),
        "eval score": (
            ["eval", "score", "wwd", "--task", "country", "--generations", i["gens"], *local],
            "--out",
        ),
        "eval compare": (["eval", "compare", i["run"], i["run"]], "--out"),
        "eval report": (["eval", "report", i["run"]], "--out"),
        "eval paper": (["eval", "paper", "wwd", i["run"], *local], "--out"),
        "eval ash-summary": (["eval", "ash-summary", i["judge"]], "--out"),
        "eval rubin-distractors": (["eval", "rubin-distractors", i["raw"], *model], "--out"),
        "eval wwd-community-review": (["eval", "wwd-community-review", i["annotations"]], "--out"),
        "corpus count": (
            ["corpus", "count", "borsch", "--corpus", i["corpus"], "--lang", "uk", "--local", i["borsch"]],
            "--out",
        ),
        "corpus contamination": (
            ["corpus", "contamination", "borsch", "--references", i["corpus"], "--local", i["borsch"]],
            "--out",
        ),
        "corpus code-mixing": (["corpus", "code-mixing", i["count"]], "--out"),
        "corpus cooccurrence": (["corpus", "cooccurrence", i["count"], "--qa", i["run"]], "--out"),
        "corpus sample": (["corpus", "sample", i["count"]], "--out"),
        "corpus annotations": (["corpus", "annotations", i["annotations"]], "--out"),
        "corpus captions": (["corpus", "captions", i["count"]], "--out"),
        "export lm-eval": (["export", "lm-eval", "wwd", *local], "--out"),
        "site": (["site", i["run"]], "--out"),
        "borsch wikidata": (
            ["borsch", "wikidata", "--lang", "uk", "--endpoint", "http://127.0.0.1:9/q"],
            "--out",
        ),
        "borsch wikidata-diff": (["borsch", "wikidata-diff", i["gens"], "--local", i["borsch"]], "--out"),
        "eval borsch-description": (
            [
                "eval",
                "borsch-description",
                *model,
                "--t2i",
                i["model"],
                "--dinov2",
                i["model"],
                "--local",
                i["borsch"],
            ],
            "--out",
        ),
    }


def _target(kind: str, world: Path) -> Path:
    return {
        "foreign": world / "mine",
        "folder": world / "mine",
        "release": world / "release",
        "in-release": world / "release" / "out",
        "run": world / "run",
        "in-run": world / "run" / "out",
        "file": world / "notes.txt",
        "existing-file": world / "notes.txt",
    }[kind]


@pytest.fixture
def world(inputs: dict, tmp_path: Path) -> Path:
    """The targets: a user's folder and file, a copy of a release and of a run folder."""
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("my work", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("my notes", encoding="utf-8")
    shutil.copytree(inputs["wwd"], tmp_path / "release")
    shutil.copytree(inputs["run"], tmp_path / "run")
    return tmp_path


NAMES = [
    "build", "validate", "release", "eval results", "eval run", "eval reproduce", "eval reproduce --plan",
    "eval merge", "eval score", "eval compare", "eval report", "eval paper", "eval ash-summary",
    "eval rubin-distractors", "eval wwd-community-review", "corpus count", "corpus contamination",
    "corpus code-mixing", "corpus cooccurrence", "corpus sample", "corpus annotations", "corpus captions",
    "export lm-eval", "borsch wikidata", "borsch wikidata-diff", "eval borsch-description", "site",
]  # fmt: skip
CASES = [(n, kind) for n in NAMES for kind in (FILE_TARGETS if n in FILE_OUTPUTS else FOLDER_TARGETS)]


# a target that is the command's own kind of output, or an ordinary place for it
OWN = {
    ("build", "foreign"): "the root of release folders may hold the user's other files",
    ("eval score", "run"): "the target is this very scored run: scoring it again is its own output",
}


@pytest.mark.parametrize(("name", "kind"), [c for c in CASES if c not in OWN])
def test_every_writer_refuses_every_target_it_does_not_own(
    inputs: dict, world: Path, name: str, kind: str
) -> None:
    args, flag = _commands(inputs)[name]
    target = _target(kind, world)
    before = _snapshot(world)
    result = CliRunner().invoke(app, [*args, flag, str(target)], terminal_width=300)
    output = " ".join(result.output.split())
    assert result.exit_code != 0, f"{name} {flag} {kind}: accepted\n{result.output}"
    assert "Traceback" not in result.output and "unexpected" not in output, result.output
    assert flag in output or str(target) in output or target.name in output, (
        name,
        kind,
        result.output,
        result.exception,
    )
    assert _snapshot(world) == before, f"{name} {flag} {kind}: changed bytes\n{result.output}"


@pytest.mark.parametrize("name", ["eval run", "eval score", "eval results", "eval paper", "export lm-eval"])
def test_a_read_only_target_is_one_line(inputs: dict, world: Path, name: str, read_only) -> None:
    args, flag = _commands(inputs)[name]
    locked = world / "locked"
    locked.mkdir()
    with read_only(locked):
        result = CliRunner().invoke(app, [*args, flag, str(locked / "out")], terminal_width=300)
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output


@pytest.mark.unit
def test_the_walk_covers_every_command_with_an_output() -> None:
    """A new command with ``--out``/``--json`` must join the walk (or say why not)."""
    from typer.main import get_command

    def walk(cmd, path):
        if hasattr(cmd, "commands"):
            for name, sub in cmd.commands.items():
                yield from walk(sub, [*path, name])
        else:
            for param in cmd.params:
                for opt in getattr(param, "opts", []):
                    if opt in ("--out", "--json"):
                        yield (*path, opt)

    keys = ("wwd", "borsch", "model", "gens", "run", "count", "judge", "annotations", "raw", "corpus")
    commands = _commands(dict.fromkeys(keys, "x"))
    flags = {name: commands[name][1] for name in NAMES}
    walked = {(*(w for w in name.split() if not w.startswith("--")), flags[name]) for name in NAMES}
    missing = [key for key in walk(get_command(app), []) if key not in walked and key not in NOT_WALKED]
    assert not missing, f"commands with an output the walk does not cover: {missing}"
