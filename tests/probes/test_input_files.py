"""Probe cases (reliability issue: input files): every file a command reads is read whole or
refused with one line naming the file, row (line) and field, never the catch-all
``error: UnicodeDecodeError ... (unexpected ...)``; duplicates are errors, not silently
taken. Covers the strict readers of :mod:`culturebench.inputs` and the commands that use
them: ``eval compare`` (tables and runs), ``eval wwd-community-review``, ``eval paper
--input`` (human ratings and answers, reviews, WorldCuisines KB) and ``eval ash-summary``."""

from __future__ import annotations

import codecs
import csv
import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from culturebench.cli import app
from culturebench.errors import Location, SourceError
from culturebench.eval.runner import run_eval
from culturebench.inputs import (
    check_header,
    decode_text,
    loads_json_strict,
    read_csv_records,
    read_csv_rows,
    read_json,
    read_jsonl,
    read_text,
)

pytestmark = pytest.mark.unit

runner = CliRunner()
REVIEWS = "Community_Review_Generated_Dish_Images.csv"
STATS = "gpt35_dish_info_cleaned_stats.csv"
DEEP = "[" * 100_000 + "]" * 100_000


def cli(*args: str) -> tuple[int, str]:
    """As in test_cli_first_contact.py: exit code and output of the real CLI (Click >= 8.2 mixes
    stderr into ``output``, so it is not added twice)."""
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def one_line_error(code: int, output: str, *expected: str) -> str:
    """Exit 2, one line, no traceback or catch-all, naming what ``expected`` lists."""
    assert code == 2, output
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1, output
    assert "Traceback" not in output and "unexpected" not in output, output
    for text in expected:
        assert text in lines[0], output
    return lines[0]


def raises(fn, *args, **kwargs) -> SourceError:
    with pytest.raises(SourceError) as info:
        fn(*args, **kwargs)
    assert "\n" not in str(info.value)
    return info.value


def where(err: SourceError) -> tuple[str, int | None, str | None]:
    return err.location.file, err.location.row, err.location.field


# ============================================================== culturebench.inputs: text
def test_read_text_utf8_and_bom(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(codecs.BOM_UTF8 + "Борщ,é\r\nx\n".encode())
    assert read_text(path) == "Борщ,é\r\nx\n"  # BOM removed, line endings kept


@pytest.mark.parametrize(
    ("data", "row", "message"),
    [
        ("a,b\n".encode("utf-16"), 1, "UTF-16 text"),
        (codecs.BOM_UTF16_BE + "a".encode("utf-16-be"), 1, "UTF-16 text"),
        ("a\n".encode("utf-32"), 1, "UTF-32 text"),
        ("a,b\n".encode("utf-16-le"), 1, "NUL byte at line 1, byte 2"),
        (b"a,b\nc,d\nok\x00\n", 3, "NUL byte at line 3, byte 3"),
        (b"a,b\nc,\xe9t\xe9\n", 2, "not valid UTF-8: byte 0xe9 at line 2, byte 3"),
        (b"ok\n\xff\x00", 2, "not valid UTF-8: byte 0xff at line 2, byte 1"),  # the first bad byte
    ],
)
def test_read_text_refuses_what_is_not_utf8(tmp_path: Path, data: bytes, row: int, message: str) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes(data)
    err = raises(read_text, path)
    assert where(err) == ("t.csv", row, None)
    assert message in str(err) and "save it as UTF-8" in str(err)
    assert str(raises(decode_text, data, "t.csv")) == str(err)


def test_read_text_missing_folder_and_fifo(tmp_path: Path) -> None:
    assert str(raises(read_text, tmp_path / "nope.csv")) == "nope.csv: no such file"
    assert str(raises(read_text, tmp_path, what="a CSV table", name="runs")) == (
        "runs: a folder, expected a CSV table"
    )
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "pipe")
        assert "not a regular file" in str(raises(read_text, tmp_path / "pipe"))


# =============================================================== culturebench.inputs: CSV
def _csv(tmp_path: Path, text: str, name: str = "t.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8", newline="")
    return path


def test_read_csv_records_rows_are_spreadsheet_rows(tmp_path: Path) -> None:
    path = _csv(tmp_path, '\nid, note \n\n1,"two\nlines"\n2,\n3,x,,\n')
    assert read_csv_records(path) == [
        (4, {"id": "1", "note": "two\nlines"}),
        (5, {"id": "2", "note": ""}),  # an empty cell written as such
        (6, {"id": "3", "note": "x"}),  # empty values beyond the header are no loss
    ]
    assert read_csv_records(_csv(tmp_path, "id,note\n", "header.csv")) == []
    assert read_csv_rows(path)[0] == (2, ["id", " note "])


@pytest.mark.parametrize(
    ("text", "place", "message"),
    [
        ("a,b,a\n1,2,3\n", (1, "a"), "column 'a' appears twice in the header (columns 1 and 3)"),
        ("a, b,b \n1,2,3\n", (1, "b"), "column 'b' appears twice"),
        (",,\n1,2,3\n", (1, None), "the header row has no column names"),
        ("a,b\n1,2\n3,4,5\n", (3, "column 3"), "the row has 3 values, the header 2 columns"),
        ("a,b,c\n1,2,3\n4,5\n", (3, "column 3"), "the row has 2 values, the header 3 columns (the file may"),
        ("a,,b\n1,,2\n3,4,5\n", (3, "column 2"), "a value in a column without a name"),
        ("", (None, None), "empty file: no header row"),
        ("\n \n", (None, None), "empty file: no header row"),
    ],
)
def test_read_csv_records_refuses(tmp_path: Path, text: str, place: tuple, message: str) -> None:
    err = raises(read_csv_records, _csv(tmp_path, text))
    assert where(err) == ("t.csv", *place)
    assert message in str(err)


def test_read_csv_records_reads_a_cell_beyond_pythons_limit(tmp_path: Path) -> None:
    """Issue 53: a cell over Python csv's 131,072 characters was "malformed CSV"; it is read
    whole (long answers are cut for scoring later, and counted)."""
    path = _csv(tmp_path, "a,b\n1," + '"' + "x" * 200_000 + '"\n')
    assert read_csv_records(path) == [(2, {"a": "1", "b": "x" * 200_000})]


def test_read_csv_records_required_and_fold_case(tmp_path: Path) -> None:
    path = _csv(tmp_path, "Name,Aliases\nx,y\n")
    assert read_csv_records(path, fold_case=True, required=["name"]) == [(2, {"name": "x", "aliases": "y"})]
    err = raises(read_csv_records, path, required=["name", "countries"])
    assert where(err) == ("t.csv", 1, "name") and "missing column(s) 'name', 'countries'" in str(err)
    err = raises(read_csv_records, _csv(tmp_path, "Name,name\nx,y\n"), fold_case=True)
    assert where(err) == ("t.csv", 1, "name") and "appears twice" in str(err)
    check_header(["a", "", "", "b"], "t.csv")  # empty titles are allowed (checked per row)


# ============================================================== culturebench.inputs: JSON
def test_loads_json_strict_duplicate_keys_name_their_line() -> None:
    assert loads_json_strict('{"a": {"a": 1}, "b": [{"a": 2}, {"a": 3}]}', "f.json")["b"][1] == {"a": 3}
    err = raises(
        loads_json_strict, '{"run": 1,\n "dataset": {"dataset": "ash",\n  "dataset": "x"}}', "f.json"
    )
    assert where(err) == ("f.json", 3, "dataset") and "key appears twice in one object" in str(err)
    err = raises(loads_json_strict, '{"id": "a", "x": {"y": 1, "y": 2}}', Location("s.jsonl", 7))
    assert where(err) == ("s.jsonl", 7, "y")
    assert loads_json_strict("[NaN]", "f.json")[0] != 0  # what Python's json writes is read


def test_loads_json_strict_deep_nesting_and_syntax() -> None:
    err = raises(loads_json_strict, "\n\n" + DEEP, "deep.json")
    assert where(err) == ("deep.json", 3, None) and "nested too deeply" in str(err)
    err = raises(loads_json_strict, '{"a": 1,\n "b": }', "f.json")
    assert where(err) == ("f.json", 2, None) and "not valid JSON: Expecting value (line 2, column 7)" in str(
        err
    )


def test_read_json_and_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text("", encoding="utf-8")
    assert "empty file" in str(raises(read_json, path))
    path.write_text('{"a": 1, "a": 2}', encoding="utf-8")
    assert where(raises(read_json, path)) == ("r.json", 1, "a")
    lines = tmp_path / "s.jsonl"
    lines.write_text('{"id": "a"}\n\n{"id": "b\u2028c"}\r\n', encoding="utf-8")
    assert read_jsonl(lines, unique_key="id") == [(1, {"id": "a"}), (3, {"id": "b\u2028c"})]


@pytest.mark.parametrize(
    ("text", "kwargs", "place", "message"),
    [
        (
            '{"id": "a"}\n{"id": "b"}\n{"id": "a"}\n',
            {"unique_key": "id"},
            (3, "id"),
            "'a' appears twice (lines 1 and 3)",
        ),
        ('{"id": "a"}\n{"x": 1}\n', {"unique_key": "id"}, (2, "id"), "missing, or not a non-empty string"),
        ('{"id": "a"}\n[1]\n', {}, (2, None), "expected a JSON object, got an array"),
        ('{"id": "a"}\n{"id": "b", "x": [1,', {}, (2, None), "the file may be cut short"),
        ('{"id": "a"}\n{"id": "b", "id": "c"}\n', {}, (2, "id"), "key appears twice in one object"),
        ('{"id": "a"}\n' + DEEP + "\n", {}, (2, None), "nested too deeply"),
    ],
)
def test_read_jsonl_refuses(tmp_path: Path, text: str, kwargs: dict, place: tuple, message: str) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(text, encoding="utf-8")
    err = raises(read_jsonl, path, **kwargs)
    assert where(err) == ("s.jsonl", *place)
    assert message in str(err)


# ======================================================================== eval compare
@pytest.fixture
def stats(upstream_wwd: Path) -> Path:
    return upstream_wwd / "llm_probing" / STATS


def _bad_tables(tmp_path: Path, stats: Path) -> list[tuple[Path, tuple[str, ...]]]:
    text = stats.read_text(encoding="utf-8")
    rows = text.splitlines()
    cases: list[tuple[str, bytes, tuple[str, ...]]] = [
        ("utf16.csv", text.encode("utf-16"), ("row 1", "UTF-16 text")),
        ("utf16le.csv", text.encode("utf-16-le"), ("NUL byte at line 1",)),
        ("binary.csv", bytes(range(256)) * 4, ("row 1", "NUL byte")),
        ("latin1.csv", text.replace("count", "compté").encode("latin-1"), ("row 2", "not valid UTF-8")),
        ("empty.csv", b"", ("empty file",)),
        ("blank.csv", b"\n\n", ("empty file",)),
        ("header.csv", (rows[0] + "\n").encode(), ("row 1", "no rows below the header")),
        ("labels.csv", b"x\na\nb\n", ("row 1", "no columns beside the row labels")),
        (
            "dupcol.csv",
            "\n".join([rows[0].replace("Asia", "Africa"), *rows[1:]]).encode(),
            ("row 1", "field 'Africa'", "appears twice in the header"),
        ),
        (
            "duprow.csv",
            "\n".join([*rows, rows[2]]).encode(),
            ("row 12", "'country_acc' appears twice (rows 3 and 12)"),
        ),
        ("extra.csv", "\n".join([*rows[:3], rows[3] + ",9"]).encode(), ("row 4", "column 8", "7 columns")),
    ]
    out = []
    for name, data, expected in cases:
        path = tmp_path / name
        path.write_bytes(data)
        out.append((path, (str(path), *expected)))
    (tmp_path / "folder.csv").mkdir()
    out.append((tmp_path / "folder.csv", (str(tmp_path / "folder.csv"), "a folder, expected a CSV table")))
    out.append((tmp_path / "missing.csv", (str(tmp_path / "missing.csv"), "no such file or folder")))
    return out


@pytest.mark.integration
def test_compare_tables_read_whole_or_refused(stats: Path, tmp_path: Path) -> None:
    code, output = cli("eval", "compare", str(stats), str(stats))
    assert code == 0 and "country_acc" in output, output
    failures = []
    for bad, expected in _bad_tables(tmp_path, stats):
        for args in ((str(bad), str(stats)), (str(stats), str(bad))):
            code, output = cli("eval", "compare", *args)
            try:
                one_line_error(code, output, *expected)
            except AssertionError:
                failures.append((bad.name, args.index(str(bad)), code, output[-300:]))
    assert failures == []


@pytest.fixture(scope="module")
def judge_runs(ash_release, scripted_backend, tmp_path_factory) -> list[Path]:
    """A generate run and two judge runs over it (2 recipes, 2 repeats), made once."""
    root = tmp_path_factory.mktemp("ash_runs")
    local = str(ash_release.folder)
    run_eval(
        "ash",
        "generate",
        scripted_backend("ingredients: x steps: y", model="gen-a"),
        root / "gen",
        local=local,
        limit=2,
    )
    runs = []
    for judge, answer in (
        ("judge-a", "AUTHENTICITY: 5\nSENSITIVITY: 4\nHARMONY: 3"),
        ("judge-b", "AUTHENTICITY: 2\nSENSITIVITY: 2\nHARMONY: junk"),
    ):
        options = {"generations": str(root / "gen"), "repeats": 2}
        run_eval(
            "ash",
            "judge",
            scripted_backend(answer, model=judge),
            root / judge,
            local=local,
            limit=2,
            task_options=options,
        )
        runs.append(root / judge)
    return runs


def _copy_run(run: Path, tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    shutil.copytree(run, folder)
    return folder


def _edit_samples(folder: Path, edit) -> Path:
    path = folder / "samples.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join(edit(lines)) + "\n", encoding="utf-8")
    return path


def test_compare_runs_read_strictly(judge_runs: list[Path], tmp_path: Path) -> None:
    a, b = judge_runs
    code, output = cli("eval", "compare", str(a), str(b))
    assert code == 0, output
    deep = _copy_run(b, tmp_path, "deep")
    (deep / "results.json").write_text(DEEP, encoding="utf-8")
    one_line_error(*cli("eval", "compare", str(a), str(deep)), "results.json, row 1", "nested too deeply")
    dupkey = _copy_run(b, tmp_path, "dupkey")
    text = (dupkey / "results.json").read_text(encoding="utf-8")
    (dupkey / "results.json").write_text(text.replace("{", '{"metrics": 0, ', 1), encoding="utf-8")
    one_line_error(*cli("eval", "compare", str(a), str(dupkey)), "results.json", "field 'metrics'", "twice")
    dupid = _copy_run(b, tmp_path, "dupid")
    _edit_samples(dupid, lambda lines: [*lines, lines[0]])
    one_line_error(
        *cli("eval", "compare", str(a), str(dupid)), "samples.jsonl, row 5, field 'id'", "(lines 1 and 5)"
    )
    utf16 = _copy_run(b, tmp_path, "utf16")
    (utf16 / "samples.jsonl").write_bytes(
        (utf16 / "samples.jsonl").read_text(encoding="utf-8").encode("utf-16")
    )
    one_line_error(*cli("eval", "compare", str(a), str(utf16)), "samples.jsonl, row 1", "UTF-16")


# ========================================================== eval wwd-community-review
@pytest.fixture
def reviews(upstream_wwd: Path) -> Path:
    path = upstream_wwd / "community_review" / REVIEWS
    if not path.is_file():
        pytest.skip("no community review file in this upstream snapshot")
    return path


@pytest.mark.integration
def test_real_review_file_has_no_duplicate_review(reviews: Path) -> None:
    """The natural key (country, reviewer, dish, model, image) is unique in the published file:
    duplicates are therefore errors, and the real file reads as before."""
    from culturebench.datasets.wwd.community_review import REVIEW_KEY, read_reviews

    kept, dropped = read_reviews(reviews)
    assert (len(kept), dropped) == (5980, 2)
    assert len({tuple(r[c].strip() for c in REVIEW_KEY) for r in kept}) == len(kept)


def _review_rows(reviews: Path) -> list[list[str]]:
    with open(reviews, encoding="utf-8-sig", newline="") as handle:
        return list(csv.reader(handle))


def _write_rows(path: Path, rows: list[list[str]]) -> Path:
    with open(path, "w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows(rows)
    return path


@pytest.mark.integration
def test_community_review_bad_files(reviews: Path, tmp_path: Path) -> None:
    rows = _review_rows(reviews)
    header = rows[0]
    text = reviews.read_text(encoding="utf-8-sig")
    lines = text.encode().split(b"\n")
    lines[9] = b"\x00" + lines[9][1:]  # physical line 10
    dup_header = [c if c != "Gross" else "Disturbing" for c in header]
    cases = {
        "utf16.csv": (text.encode("utf-16"), ("utf16.csv, row 1", "UTF-16 text")),
        "nul.csv": (b"\n".join(lines), ("nul.csv, row 10", "NUL byte at line 10, byte 1")),
        "empty.csv": (b"", ("empty.csv", "empty file")),
        "header.csv": (",".join(header).encode() + b"\n", ("header.csv", "no reviews")),
    }
    failures = []
    for name, (data, expected) in cases.items():
        (tmp_path / name).write_bytes(data)
        code, output = cli("eval", "wwd-community-review", str(tmp_path / name), "--out", str(tmp_path / "o"))
        try:
            one_line_error(code, output, *expected)
        except AssertionError:
            failures.append((name, code, output[-300:]))
    assert failures == []
    path = _write_rows(tmp_path / "dupcol.csv", [dup_header, *rows[1:]])
    column = header.index("Gross") + 1
    one_line_error(
        *cli("eval", "wwd-community-review", str(path), "--out", str(tmp_path / "o")),
        "dupcol.csv, row 1, field 'Disturbing'",
        f"(columns {column} and {header.index('Disturbing') + 1})",
    )
    path = _write_rows(tmp_path / "dupreview.csv", [*rows[:10], rows[4], *rows[10:]])
    one_line_error(
        *cli("eval", "wwd-community-review", str(path), "--out", str(tmp_path / "o")),
        "dupreview.csv, row 11, field 'Rater_id'",
        "twice (rows 5 and 11)",
    )
    one_line_error(
        *cli("eval", "wwd-community-review", str(tmp_path), "--out", str(tmp_path / "o")),
        "a folder, expected",
    )
    one_line_error(*cli("eval", "wwd-community-review", str(tmp_path / "no.csv")), "no.csv: no such file")
    (tmp_path / "file").write_text("x")
    one_line_error(
        *cli("eval", "wwd-community-review", str(reviews), "--out", str(tmp_path / "file")),
        "is a file, not a folder",
    )


# ============================================================== eval paper --input FILES
@pytest.mark.integration
def test_paper_inputs_wwd_reviews_and_worldcuisines(reviews: Path, tmp_path: Path) -> None:
    rows = _review_rows(reviews)
    bad = tmp_path / "reviews.csv"
    bad.write_bytes(reviews.read_bytes().replace(b"Yes", b"Y\xe9s", 1))
    line = reviews.read_bytes()[: reviews.read_bytes().index(b"Yes")].count(b"\n") + 1
    args = ["eval", "paper", "wwd", "--out", str(tmp_path / "r")]
    one_line_error(*cli(*args, "--input", f"reviews={bad}"), f"reviews.csv, row {line}", "not valid UTF-8")
    _write_rows(bad, [*rows[:3], rows[1]])
    one_line_error(*cli(*args, "--input", f"reviews={bad}"), "reviews.csv, row 4", "twice (rows 2 and 4)")
    kb = tmp_path / "wc.csv"
    kb.write_text("name,aliases,Name\nEru,,x\n", encoding="utf-8")
    one_line_error(
        *cli(*args, "--input", f"worldcuisines={kb}"), "wc.csv, row 1, field 'name'", "appears twice"
    )
    kb.write_bytes("name,aliases\nEru,okazi\n".encode("utf-16"))
    one_line_error(*cli(*args, "--input", f"worldcuisines={kb}"), "wc.csv, row 1", "UTF-16")


def test_paper_inputs_ash_human_ratings(tmp_path: Path) -> None:
    human = tmp_path / "human.csv"
    args = ["eval", "paper", "ash", "--out", str(tmp_path / "r"), "--input", f"human={human}"]
    good = "row_id,generator,annotator,authenticity,sensitivity,harmony\nash-x,gen-a,h1,4,4,4\n"
    human.write_bytes(good.encode("utf-16"))
    one_line_error(*cli(*args), "human.csv, row 1", "UTF-16 text")
    human.write_bytes(good.encode() + b"ash-y,gen-a,h1,4,\x00,4\n")
    one_line_error(*cli(*args), "human.csv, row 3", "NUL byte")
    human.write_text(good.replace("harmony", "authenticity"), encoding="utf-8")
    one_line_error(*cli(*args), "human.csv, row 1, field 'authenticity'", "appears twice")
    human.write_text(good + "ash-x,gen-a,h1,3,3,3\n", encoding="utf-8")
    one_line_error(*cli(*args), "human.csv, row 3, field 'annotator'", "twice (rows 2 and 3)")
    human.write_text(good + "ash-x,gen-a,h2,3,3,3,3\n", encoding="utf-8")
    one_line_error(*cli(*args), "human.csv, row 3, field 'column 7'", "would be dropped")
    human.write_text("", encoding="utf-8")
    one_line_error(*cli(*args), "human.csv", "empty file")


def test_foodieqa_human_answers_reader(tmp_path: Path) -> None:
    from culturebench.datasets.foodieqa.human import read_human_answers

    human = tmp_path / "human.csv"
    good = "question_id,annotator,answer\nsivqa-1,h1,A\n"
    human.write_bytes(good.encode("utf-16"))
    assert where(raises(read_human_answers, human)) == ("human.csv", 1, None)
    human.write_text(good.replace("answer\n", "answer,annotator\n"), encoding="utf-8")
    assert where(raises(read_human_answers, human)) == ("human.csv", 1, "annotator")
    human.write_text(good + "sivqa-1,h1,B\n", encoding="utf-8")
    err = raises(read_human_answers, human)
    assert where(err) == ("human.csv", 3, "annotator") and "(rows 2 and 3)" in str(err)
    human.write_text(good, encoding="utf-8")
    assert read_human_answers(human) == [{"question_id": "sivqa-1", "annotator": "h1", "answer": 0}]


# ===================================================================== eval ash-summary
def test_ash_summary_reads_runs_strictly(judge_runs: list[Path], tmp_path: Path) -> None:
    a, b = judge_runs
    out = ["--out", str(tmp_path / "s")]
    code, output = cli("eval", "ash-summary", str(a), str(b), *out)
    assert code == 0, output

    def bad(name: str, edit) -> str:
        folder = _copy_run(b, tmp_path, name)
        edit(folder)
        return str(folder)

    def run_json(text: str):
        return lambda folder: (folder / "run.json").write_text(text, encoding="utf-8")

    def samples(edit):
        return lambda folder: _edit_samples(folder, edit)

    def utf16(folder: Path) -> None:
        path = folder / "samples.jsonl"
        path.write_bytes(path.read_text(encoding="utf-8").encode("utf-16"))

    run = json.loads((b / "run.json").read_text(encoding="utf-8"))
    dup_key = json.dumps(run, indent=1).replace('"task": "judge"', '"task": "judge",\n "task": "judge"', 1)
    cases = [
        (bad("deep", run_json(DEEP)), ("run.json, row 1", "nested too deeply")),
        (bad("dupkey", run_json(dup_key)), ("run.json, row", "field 'task'", "appears twice")),
        (
            bad("binary", lambda f: (f / "run.json").write_bytes(b"\x89PNG\r\n\x1a\n\x00")),
            ("run.json, row 1", "not valid UTF-8"),
        ),
        (bad("utf16", utf16), ("samples.jsonl, row 1", "UTF-16")),
        (
            bad("dupid", samples(lambda lines: [*lines, lines[1]])),
            ("samples.jsonl, row 5, field 'id'", "(lines 2 and 5)"),
        ),
        (
            bad(
                "samplekey", samples(lambda lines: [lines[0].replace("{", '{"harmony": 1, ', 1), *lines[1:]])
            ),
            ("samples.jsonl, row 1, field 'harmony'", "twice"),
        ),
        (
            bad("deepsample", samples(lambda lines: [*lines[:2], DEEP, *lines[2:]])),
            ("samples.jsonl, row 3", "nested too deeply"),
        ),
        (
            bad(
                "torn",
                lambda f: (f / "samples.jsonl").write_text(
                    (f / "samples.jsonl").read_text(encoding="utf-8")[:-9], encoding="utf-8"
                ),
            ),
            ("samples.jsonl, row 4", "cut short"),
        ),
        (
            bad(
                "norating",
                samples(
                    lambda lines: [
                        json.dumps({k: v for k, v in json.loads(x).items() if k != "sensitivity"})
                        for x in lines
                    ]
                ),
            ),
            ("samples.jsonl, row 1, field 'sensitivity'", "missing"),
        ),
        (
            bad(
                "badrating",
                samples(
                    lambda lines: [lines[0].replace('"authenticity": 2', '"authenticity": 7'), *lines[1:]]
                ),
            ),
            ("samples.jsonl, row 1, field 'authenticity'", "7 is not an integer 1-5"),
        ),
        (
            bad("nosamples", lambda f: (f / "samples.jsonl").unlink()),
            ("nosamples/samples.jsonl: no such file",),
        ),
        (bad("emptysamples", lambda f: (f / "samples.jsonl").write_text("")), ("emptysamples: no samples",)),
    ]
    runs = [([str(a), folder], expected) for folder, expected in cases]
    runs.append(([str(a), str(b), str(b)], ("samples.jsonl, row 1, field 'id'", "already", "given twice")))
    failures = []
    fresh = ["--out", str(tmp_path / "never")]  # the first summary's folder would be refused first
    for folders, expected in runs:
        code, output = cli("eval", "ash-summary", *folders, *fresh)
        try:
            one_line_error(code, output, *expected)
        except AssertionError:
            failures.append((Path(folders[-1]).name, code, output[-300:]))
    assert failures == []
    assert not (tmp_path / "never").exists()
    code, output = cli("eval", "ash-summary", str(a), str(b), *out)  # ours: only with --overwrite
    one_line_error(code, output, "already exists (use --overwrite")
    assert cli("eval", "ash-summary", str(a), str(b), *out, "--overwrite")[0] == 0


# ---------------------------------------------------------------------- eval score's generations
@pytest.mark.integration
def test_score_generations_read_strictly(borsch_release, scripted_backend, tmp_path: Path) -> None:
    live = tmp_path / "live"
    run_eval(
        "borsch", "origin-qa", scripted_backend("Россия"), live, local=str(borsch_release.folder), limit=1
    )
    first = json.loads((live / "samples.jsonl").read_text(encoding="utf-8").splitlines()[0])["id"]
    good = json.dumps({"id": first, "output": "Россия"}, ensure_ascii=False)
    cases = {
        "utf16.jsonl": (good + "\n").encode("utf-16"),
        "binary.jsonl": b"\x89PNG\r\n\x1a\n\x00\x00",
        "dupkey.jsonl": f'{{"id": "{first}", "output": "a", "output": "b"}}\n'.encode(),
        "deep.jsonl": (good + "\n" + '{"id": "x", "output": ' + DEEP + "}\n").encode(),
        "dupcol.csv": f"id,output,output\n{first},a,b\n".encode(),
        "extra.csv": f"id,output\n{first},a,b\n".encode(),
        "latin1.csv": f"id,output\n{first},caf\xe9\n".encode("latin-1"),
    }
    expected = {
        "utf16.jsonl": "UTF-16",
        "binary.jsonl": "binary.jsonl, row 1",
        "dupkey.jsonl": "dupkey.jsonl, row 1, field 'output'",
        "deep.jsonl": "deep.jsonl, row 2",
        "dupcol.csv": "column 'output' appears twice",
        "extra.csv": "extra.csv, row 2, field 'column 3'",
        "latin1.csv": "latin1.csv, row 2",
    }
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        code, output = cli(
            "eval", "score", "borsch", "--task", "origin-qa", "--generations", str(path),
            "--local", str(borsch_release.folder), "--out", str(tmp_path / "out" / name),
        )  # fmt: skip
        one_line_error(code, output, expected[name])
        assert not (tmp_path / "out" / name).exists(), name
