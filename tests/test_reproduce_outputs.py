"""Issue 40 (reliability round 4): ``eval reproduce``, ``--plan``, ``--shard`` and ``eval merge``
under bad input. One output policy for every writer (a foreign, release, run, file or read-only
``--out`` is refused with one line and every byte left as it was); everything checked before
``reproduce.json`` is written or rewritten; shard counts above the number of units refused
everywhere; a merge of reproduction shards with one broken cell leaves nothing behind; plan
inputs (throughput, image tokens) checked with one line naming the option or the file and key.

Reproduction shards are made with the real grid runner and our scripted backend (no model);
the refusals come before any model loads, so ``--model`` is a folder that is no model at all."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from culturebench.cli import app
from culturebench.errors import UsageError
from culturebench.eval.shards import Shard, shard_jobs

pytestmark = pytest.mark.integration

CELLS = ("country", "time-of-day")
LIMIT = 2  # dishes per cell: 2 units, x 5 seeds


def cli(*args: object) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.output


def one_line(code: int, output: str, *needles: str) -> None:
    """Exit 2, one line (no traceback, no usage box), naming every needle. Progress lines of the
    work done before the refusal (plain lines off a terminal: planning counts the cells) are not
    the error."""
    assert code == 2, output
    progress = re.compile(r": [\d,]+/[\d,]+ \(\d+%\)")
    lines = [line for line in output.splitlines() if line.strip() and not progress.search(line)]
    assert len(lines) == 1, output
    assert "Traceback" not in output and "Usage:" not in output, output
    for needle in needles:
        assert needle in lines[0], (needle, output)


def tree(folder: Path) -> dict[str, str]:
    """Every entry below ``folder`` (and ``folder`` itself): a file's sha256, 'dir' for a folder."""
    if not folder.exists():
        return {}
    if folder.is_file():
        return {".": hashlib.sha256(folder.read_bytes()).hexdigest()}
    found = {".": "dir"}
    for path in sorted(folder.rglob("*")):
        key = str(path.relative_to(folder))
        found[key] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
    return found


def users_folder(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "thesis.tex").write_text("months of work", encoding="utf-8")
    (path / "sub").mkdir()
    (path / "sub" / "data.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    return path


class Shards:
    """Two shard folders of one WWD reproduction (cells country and time-of-day), the release
    and the model name their ``reproduce.json`` records."""

    def __init__(self, parts: list[Path], release: Path, model: Path) -> None:
        self.parts, self.release, self.model = parts, release, model

    def copies(self, dest: Path) -> list[Path]:
        out = []
        for part in self.parts:
            out.append(Path(shutil.copytree(part, dest / part.name)))
        return out


@pytest.fixture(scope="module")
def shards(wwd_release, scripted_backend, tmp_path_factory: pytest.TempPathFactory) -> Shards:
    from culturebench.eval import reproduce as rep
    from culturebench.eval.grid import load_grid

    root = tmp_path_factory.mktemp("repro-shards")
    model = root / "no-model"  # the name the records carry; never loaded
    model.mkdir()
    grid = load_grid("wwd")
    cells = grid.select(only=list(CELLS))
    parts = []
    for k in (1, 2):
        out, shard = root / f"part{k}", Shard(k, 2)
        rep.write_record(out, "wwd", str(model), [c.name for c in cells], shard)
        rep.run_cells(
            grid, cells, scripted_backend("Italy"), out, source={"local": str(wwd_release.folder)},
            limit=LIMIT, shard=shard,
        )  # fmt: skip
        parts.append(out)
    return Shards(parts, Path(wwd_release.folder), model)


def reproduce(shards: Shards, out: Path, *extra: object) -> tuple[int, str]:
    return cli(
        "eval", "reproduce", "wwd", "--model", shards.model, "--local", shards.release, "--only",
        ",".join(CELLS), "--limit", LIMIT, "--out", out, *extra,
    )  # fmt: skip


# ---------------------------------------------------------------------- one output policy
TARGETS = ("foreign", "release", "run", "file", "read-only", "inside-read-only")


@pytest.mark.parametrize("target", TARGETS)
def test_every_out_refuses_the_same_targets_and_changes_nothing(
    read_only, target: str, shards: Shards, scripted_backend, tmp_path: Path
) -> None:
    """``eval reproduce --out``, ``eval reproduce --plan --out`` and ``eval merge --out`` walked
    through one set of targets: each is refused with one line naming --out, nothing is written
    there or beside it (no staging folder, lock or marker left)."""
    from culturebench.eval.runner import run_eval

    parts = shards.copies(tmp_path / "shards")
    place = tmp_path / "place"
    place.mkdir()
    if target == "foreign":
        out, needle = users_folder(place / "mine"), "files culturebench did not write"
    elif target == "release":
        out, needle = Path(shutil.copytree(shards.release, place / "release")), "release folder"
    elif target == "run":
        out, needle = place / "run", "run folder"
        run_eval("wwd", "country", scripted_backend("Italy"), out, local=str(shards.release), limit=1)
    elif target == "file":
        out, needle = place / "notes.md", "is a file"
        out.write_text("my notes", encoding="utf-8")
    else:
        (place / "ro").mkdir()
        out = place / "ro" if target == "read-only" else place / "ro" / "new"
        needle = "not writable"
    commands = {
        "reproduce": lambda: reproduce(shards, out),
        "plan": lambda: reproduce(shards, out, "--plan"),
        "merge": lambda: cli("eval", "merge", *parts, "--out", out),
    }
    before, beside, shard_bytes = tree(out), sorted(os.listdir(place)), tree(tmp_path / "shards")
    guard = read_only(place / "ro") if target.endswith("read-only") else contextlib.nullcontext()
    with guard:
        for name, command in commands.items():
            code, output = command()
            one_line(code, output, f"--out {out}", needle)
            assert tree(out) == before, name
            assert sorted(os.listdir(place)) == beside, name  # nothing staged or locked beside it
    assert tree(tmp_path / "shards") == shard_bytes  # the inputs are read, never written


def test_a_refused_reproduce_never_writes_or_rewrites_reproduce_json(shards: Shards, tmp_path: Path) -> None:
    """Every check comes before ``reproduce.json``: a wrong shard for the folder, another model,
    another dataset, or more shards than units leave the folder exactly as it was, and a new
    folder is not created."""
    part1 = shards.copies(tmp_path / "shards")[0]
    before = tree(part1)
    cases = [
        (("--shard", "2/2"), "holds shard 1/2"),
        ((), "holds shard 1/2"),  # the whole grid into a shard's folder
    ]
    for extra, needle in cases:
        code, output = reproduce(shards, part1, *extra)
        one_line(code, output, f"--out {part1}", needle)
        assert tree(part1) == before, extra
    other = Shards(shards.parts, shards.release, tmp_path)  # another model, the right shard
    code, output = reproduce(other, part1, "--shard", "1/2")
    one_line(code, output, f"--out {part1}", "holds a reproduction of the model")
    assert tree(part1) == before
    code, output = cli("eval", "reproduce", "rubin", "--model", shards.model, "--out", part1, "--plan")
    one_line(code, output, f"--out {part1}", "holds a reproduction of wwd, not rubin")
    assert tree(part1) == before
    fresh = tmp_path / "fresh"
    code, output = reproduce(shards, fresh, "--shard", "1/8")  # the cells have 2 units each
    one_line(code, output, "--shard 1/8", "2 units", "at most 2 shards")
    assert not fresh.exists()
    code, output = reproduce(shards, fresh)  # a model that cannot load: before the folder exists
    assert code == 2 and "Traceback" not in output, output  # after the plan's table, one error line
    assert output.strip().splitlines()[-1].startswith("error: cannot load model"), output
    assert not fresh.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shards"]


def test_a_cell_folder_of_the_wrong_shard_is_refused_before_reproduce_json(
    shards: Shards, tmp_path: Path
) -> None:
    """A reproduction folder whose record is missing but whose cell folder is shard 1/2: the
    whole grid is refused before ``reproduce.json`` is written."""
    part1 = shards.copies(tmp_path)[0]
    (part1 / "reproduce.json").unlink()
    (part1 / ".culturebench-output.json").unlink()
    (part1 / "plan.json").write_text(
        json.dumps({"dataset": "wwd", "cells": [], "throughput_source": "none"}), encoding="utf-8"
    )  # what --plan leaves: the folder is a reproduction folder of wwd
    before = tree(part1)
    code, output = reproduce(shards, part1)
    one_line(code, output, "country", "holds shard 1/2")
    assert tree(part1) == before


# ---------------------------------------------------------------------- shard counts
@pytest.mark.unit
def test_shard_counts_above_the_units_are_refused_in_the_api() -> None:
    from culturebench.eval.backends.base import Request
    from culturebench.eval.tasks.base import TaskRequest

    requests = [
        TaskRequest(Request(f"d{row}:{lang}", "?"), {"row_id": f"d{row}"})
        for row in range(6)
        for lang in "ab"
    ]
    jobs = [(request, seed) for seed in (0, 1) for request in requests]
    assert len(shard_jobs(jobs, Shard(6, 6))[0]) == 4  # one dish: 2 languages x 2 seeds
    for k in range(1, 9):
        with pytest.raises(UsageError, match=r"--shard \d/8: .*6 units.*at most 6 shards"):
            shard_jobs(jobs, Shard(k, 8))
    from culturebench.eval.shards import check_count

    with pytest.raises(UsageError, match="at most 6 shards"):
        check_count(Shard(1, 99999999999999999999), 6)


@pytest.mark.parametrize("shard", ["1/8", "6/8", "1/99999999999999999999"])
def test_eval_run_refuses_more_shards_than_units(shard: str, wwd_release, tmp_path: Path) -> None:
    """6 dishes: every part of an 8-way split is refused (not only 7/8 and 8/8), naming the units
    and the largest accepted count; nothing is written (the model, no model at all, never loads)."""
    not_a_model = tmp_path / "no-model"
    not_a_model.mkdir()
    out = tmp_path / "run"
    code, output = cli(
        "eval", "run", "wwd", "--task", "country", "--model", not_a_model, "--local", wwd_release.folder,
        "--limit", 6, "--shard", shard, "--out", out,
    )  # fmt: skip
    one_line(code, output, f"--shard {shard}", "6 units", "at most 6 shards")
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["no-model"]


@pytest.mark.parametrize("plan", [False, True])
def test_eval_reproduce_refuses_more_shards_than_units(plan: bool, shards: Shards, tmp_path: Path) -> None:
    out = tmp_path / "repro"
    extra = ("--plan",) if plan else ()
    for shard in ("1/3", "3/3", "1/99999999999999999999"):
        code, output = reproduce(shards, out, "--shard", shard, *extra)
        one_line(code, output, f"--shard {shard}", "cell 'country' has 2 units", "at most 2 shards")
        assert not out.exists()


# ---------------------------------------------------------------------- merging reproductions
def test_a_merge_with_one_broken_cell_leaves_nothing_and_merges_once_fixed(
    shards: Shards, tmp_path: Path
) -> None:
    parts = shards.copies(tmp_path / "shards")
    results = parts[1] / "time-of-day" / "results.json"  # the second cell of shard 2 not finished
    kept = results.read_bytes()
    results.unlink()
    merged = tmp_path / "merged"
    code, output = cli("eval", "merge", *parts, "--out", merged)
    one_line(code, output, "time-of-day", "not finished")
    assert not merged.exists()  # no merged country/, no reproduce.json
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shards"]  # nothing staged beside it
    empty = tmp_path / "empty"  # an empty folder given as --out stays as it was
    empty.mkdir()
    code, output = cli("eval", "merge", *parts, "--out", empty)
    one_line(code, output, "not finished")
    assert tree(empty) == {".": "dir"}
    results.write_bytes(kept)  # the user fixes the cell: the same command now merges
    code, output = cli("eval", "merge", *parts, "--out", merged)
    assert code == 0, output
    record = json.loads((merged / "reproduce.json").read_text(encoding="utf-8"))
    assert record["cells"] == list(CELLS) and record["shard"] is None
    for cell in CELLS:
        assert (merged / cell / "results.json").is_file()
        assert not json.loads((merged / cell / "results.json").read_text(encoding="utf-8")).get("shard")
    code, output = cli("eval", "merge", *parts, "--out", empty)  # into the empty folder, too
    assert code == 0, output
    assert (empty / "country" / "samples.jsonl").read_bytes() == (
        merged / "country" / "samples.jsonl"
    ).read_bytes()


def test_a_merge_into_one_of_its_shards_is_refused(shards: Shards, tmp_path: Path) -> None:
    parts = shards.copies(tmp_path / "shards")
    before = tree(tmp_path / "shards")
    for out in (parts[0] / "merged", parts[1] / "country" / "merged"):
        code, output = cli("eval", "merge", *parts, "--out", out)
        one_line(code, output, f"--out {out}", "inside the")
    assert tree(tmp_path / "shards") == before


@pytest.mark.parametrize(
    ("record", "needle"),
    [
        ("{not json", "corrupt"),
        (
            json.dumps({"dataset": "wwd", "cells": ["../../escape"], "shard": "2/2"}),
            "not a reproduction record",
        ),
        (json.dumps({"dataset": "wwd", "cells": "country"}), "not a reproduction record"),
    ],
)
def test_a_bad_reproduce_json_in_a_shard_is_one_line(
    record: str, needle: str, shards: Shards, tmp_path: Path
) -> None:
    parts = shards.copies(tmp_path / "shards")
    (parts[1] / "reproduce.json").write_text(record, encoding="utf-8")
    merged = tmp_path / "merged"
    code, output = cli("eval", "merge", *parts, "--out", merged)
    one_line(code, output, str(parts[1] / "reproduce.json"), needle)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shards"]


# ---------------------------------------------------------------------- plan inputs
@pytest.mark.parametrize("value", [0, -5, "NaN", "Infinity", '"fast"', "true", "null"])
def test_a_bad_throughput_in_the_file_is_one_line_naming_file_and_key(
    value: object, wwd_release, tmp_path: Path
) -> None:
    saved = tmp_path / "throughput.json"
    saved.write_text(f'{{"transformers": {{"tokens_per_s": {value}, "model": "m"}}}}', encoding="utf-8")
    out = tmp_path / "plan"
    code, output = cli(
        "eval", "reproduce", "wwd", "--plan", "--only", "country", "--local", wwd_release.folder,
        "--out", out, "--throughput-file", saved,
    )  # fmt: skip
    one_line(code, output, str(saved), "transformers.tokens_per_s", "positive, finite")
    assert not out.exists()


def test_a_throughput_entry_that_is_not_an_object_and_a_missing_file_are_one_line(
    wwd_release, tmp_path: Path
) -> None:
    saved = tmp_path / "throughput.json"
    saved.write_text('{"transformers": 5000}', encoding="utf-8")
    args = ["eval", "reproduce", "wwd", "--plan", "--only", "country", "--local", wwd_release.folder,
            "--out", tmp_path / "plan"]  # fmt: skip
    one_line(*cli(*args, "--throughput-file", saved), str(saved), "transformers", "tokens_per_s")
    missing = tmp_path / "nope.json"
    one_line(*cli(*args, "--throughput-file", missing), f"--throughput-file {missing}", "no such file")
    assert not (tmp_path / "plan").exists()


@pytest.mark.parametrize(
    ("option", "value", "needle"),
    [
        ("--throughput", "0", "positive, finite"),
        ("--throughput", "-100", "positive, finite"),
        ("--throughput", "nan", "positive, finite"),
        ("--throughput", "inf", "positive, finite"),
        ("--image-tokens", "-1", "from 0 to 1,000,000"),
        ("--image-tokens", "5000000", "from 0 to 1,000,000"),
    ],
)
def test_plan_options_out_of_range_are_one_line_naming_option_and_value(
    option: str, value: str, needle: str, wwd_release, tmp_path: Path
) -> None:
    out = tmp_path / "plan"
    code, output = cli(
        "eval", "reproduce", "wwd", "--plan", "--only", "country", "--local", wwd_release.folder,
        "--out", out, option, value,
    )  # fmt: skip
    one_line(code, output, f"{option} {value}", needle)
    assert not out.exists()


def test_a_plan_is_written_into_a_new_folder_whole_and_beside_its_reproduction(
    shards: Shards, tmp_path: Path
) -> None:
    """The accepted targets: a new folder (marked as a reproduction folder) and a reproduction
    folder of the same dataset, where only plan.json changes."""
    fresh = tmp_path / "fresh"
    code, output = reproduce(shards, fresh, "--plan", "--throughput", "1000")
    assert code == 0, output
    assert sorted(p.name for p in fresh.iterdir()) == [".culturebench-output.json", "plan.json"]
    part1 = shards.copies(tmp_path / "shards")[0]
    before = tree(part1)
    code, output = reproduce(shards, part1, "--plan")
    assert code == 0, output
    after = tree(part1)
    assert {k for k in after if after[k] != before.get(k)} == {"plan.json"}
