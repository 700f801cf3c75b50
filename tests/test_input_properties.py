"""Property-based tests of every reader of outside input (issue 53).

Property: whatever the bytes (random bytes, random text in any encoding, with or without a
byte-order mark, structurally valid files with wrong types, missing fields, NaN/inf, numbers
with thousands of digits), a reader returns a result or raises the package's error
(:class:`~culturebench.errors.CultureBenchError`, mostly its ``SourceError``): one line that
names the file. Never another exception (a traceback or the CLI's generic "unexpected" line).

Readers: :mod:`culturebench.inputs` (CSV, JSON, JSON Lines), :func:`culturebench.yamlio.load_yaml`,
:func:`culturebench.parquet_io.read_split`, the builders' source tables (:mod:`builders.tables`),
the recorded outputs ``eval score`` reads (generations files, lm-eval and Inspect logs) and the
run folders ``eval compare``/``merge``/``score`` read back (:mod:`culturebench.eval.run_folder`),
and the judge's answer cache. Each property runs a bounded number of examples.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from culturebench.errors import CultureBenchError, SourceError

pytestmark = pytest.mark.unit

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_count = itertools.count()

# ------------------------------------------------------------------------------ strategies
ENCODINGS = ["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "latin-1", "cp1251"]
#: characters that break naive readers: quotes, separators, line breaks of every kind, NUL,
#: a BOM in the middle, surrogate-free astral characters
_AWKWARD = st.sampled_from(
    ['"', ",", ";", "\n", "\r", "\r\n", "\x00", "\ufeff", "\u2028", "\x85", "𝔘", "\t", " "]
)
TEXT = st.lists(st.one_of(st.text(max_size=6), _AWKWARD), max_size=12).map("".join)
HUGE_NUMBER = st.integers(4_200, 6_000).map(lambda n: "9" * n)  # beyond int()'s 4,300 digits


def _encoded(text: str, encoding: str) -> bytes:
    return text.encode(encoding, errors="replace")


RAW = st.one_of(
    st.binary(max_size=300),
    st.builds(_encoded, TEXT, st.sampled_from(ENCODINGS)),
)

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=2**63, max_value=2**200),
    st.floats(allow_nan=True, allow_infinity=True),
    TEXT,
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)),
    max_leaves=8,
)
FIELDS = ["id", "output", "seed", "judgment", "doc", "resps", "filtered_resps", "doc_id", "task", "run"]
#: objects with the field names readers look for, values of any type, some missing
RECORDS = st.dictionaries(st.one_of(st.sampled_from(FIELDS), TEXT), JSON_VALUES, max_size=5)


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=True)  # NaN, Infinity as Python writes them


def _jsonl(records: list[Any], tail: str) -> str:
    return "\n".join(_json_text(r) for r in records) + tail


JSONL_TEXT = st.one_of(
    st.builds(_jsonl, st.lists(RECORDS, max_size=4), st.sampled_from(["", "\n", "\r\n", "\n{", "\n[1]"])),
    st.builds(lambda n: '{"id": "a", "output": ' + n + "}\n", HUGE_NUMBER),
    st.builds(lambda d: "[" * d + "]" * d + "\n", st.integers(1, 5_000)),
    TEXT,
)


def _csv_text(rows: list[list[str]], delimiter: str) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, delimiter=delimiter).writerows(rows)
    return buffer.getvalue()


CSV_TEXT = st.one_of(
    st.builds(
        _csv_text,
        st.lists(st.lists(TEXT, max_size=5), max_size=5).map(lambda rows: [["id", "output", "seed"], *rows]),
        st.sampled_from([",", ";", "\t"]),
    ),
    st.builds(lambda n: f'id,output\n"a",{n}\n', HUGE_NUMBER),
    TEXT.map(lambda t: "id,output\n" + t),
    TEXT,
)
TEXT_FILES = st.one_of(
    RAW,
    st.builds(_encoded, st.one_of(JSONL_TEXT, CSV_TEXT), st.sampled_from(ENCODINGS)),
)


# ------------------------------------------------------------------------------ the check
@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("properties")


def _file(work: Path, name: str, data: bytes | str) -> Path:
    """``data`` in a fresh folder (readers cache files by path, size and mtime)."""
    folder = work / str(next(_count))
    folder.mkdir()
    path = folder / name
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def holds(read: Callable[[], Any], *names: str) -> Any:
    """``read()``'s result, or None when it raised the package's error; that error must be one
    line naming the file (one of ``names``). Any other exception fails the property."""
    try:
        return read()
    except CultureBenchError as exc:
        message = str(exc)
        assert "\n" not in message and "\r" not in message, message
        assert any(name in message for name in names), message
        if isinstance(exc, SourceError):
            assert any(name in exc.location.file for name in names), exc.location
        return None


# ------------------------------------------------------------------ culturebench.inputs
@SETTINGS
@given(data=TEXT_FILES)
@example(data=b"id,output\n" + b"x" * 200_000 + b",y\n")  # a cell over csv's default limit
@example(data=b'id,output\n"a",1\n"b\n')  # an unclosed quote at the end
def test_csv_readers(work: Path, data: bytes) -> None:
    from culturebench.inputs import read_csv_records, read_csv_rows

    path = _file(work, "table.csv", data)
    rows = holds(lambda: read_csv_rows(path), "table.csv")
    records = holds(lambda: read_csv_records(path, required=["id"], fold_case=True), "table.csv")
    if records is not None:
        assert rows is not None and all(isinstance(row, int) and row >= 2 for row, _ in records)


@SETTINGS
@given(data=TEXT_FILES)
@example(data=b'{"a": 1, "a": 2}')
@example(data=b'{"a": ' + b"9" * 5000 + b"}")
@example(data=b"[" * 100_000)
def test_json_readers(work: Path, data: bytes) -> None:
    from culturebench.inputs import read_json, read_jsonl

    holds(lambda: read_json(_file(work, "value.json", data)), "value.json")
    got = holds(lambda: read_jsonl(_file(work, "lines.jsonl", data), unique_key="id"), "lines.jsonl")
    if got is not None:
        assert all(isinstance(record, dict) and isinstance(record["id"], str) for _, record in got)


def test_a_number_too_long_for_int_is_an_error_naming_its_line(work: Path) -> None:
    """Python's int() refuses more than 4,300 digits with a ValueError (not a JSONDecodeError):
    it was raised as is, a traceback, from every JSON reader."""
    from culturebench.inputs import read_jsonl

    path = _file(work, "big.jsonl", '{"id": "a"}\n{"id": "b", "n": ' + "9" * 5000 + "}\n")
    with pytest.raises(SourceError, match=r"big\.jsonl, row 2: .*digits") as info:
        read_jsonl(path)
    assert info.value.location.row == 2


# ------------------------------------------------------------------------------- YAML
YAML_TEXT = st.one_of(
    TEXT,
    st.builds(lambda v: json.dumps(v, allow_nan=True), JSON_VALUES),  # JSON is YAML (mostly)
    st.sampled_from(
        [
            "a: 2024-02-30\n",  # a date that does not exist: ValueError in the constructor
            "a: !!python/object:os.system x\n",
            "a: !!binary '%%%'\n",
            "a: &x [*x]\n",
            "? [a, b]\n: 1\n",
            "a: b: c\n",
            "[" * 2000,
            "a: *nowhere\n",
            "!!set {a, b}\n",
        ]
    ),
)


@SETTINGS
@given(data=st.one_of(RAW, st.builds(_encoded, YAML_TEXT, st.sampled_from(ENCODINGS))))
@example(data=b"a: 2024-02-30\n")
def test_yaml_reader(work: Path, data: bytes) -> None:
    import yaml

    from culturebench.yamlio import YamlError, load_yaml

    path = _file(work, "conf.yaml", data)
    holds(lambda: load_yaml(path), "conf.yaml")
    try:
        load_yaml(path)
    except YamlError as exc:
        assert isinstance(exc, yaml.YAMLError)  # callers catching yaml.YAMLError still do


# ---------------------------------------------------------------------------- Parquet
def _parquet_bytes() -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(pa.table({"id": ["a", "b", "c"], "n": [1, 2, 3]}), buffer)
    return buffer.getvalue()


PARQUET = _parquet_bytes()


def _damage(data: bytes, cut: int, flips: list[tuple[int, int]]) -> bytes:
    out = bytearray(data[: max(0, len(data) - cut)])
    for at, value in flips:
        if out:
            out[at % len(out)] = value
    return bytes(out)


@SETTINGS
@given(
    data=st.one_of(
        RAW,
        st.builds(
            _damage,
            st.just(PARQUET),
            st.integers(0, 64),
            st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=4),
        ),
    )
)
def test_parquet_reader(work: Path, data: bytes) -> None:
    from culturebench.parquet_io import read_split

    path = _file(work, "train-00000-of-00001.parquet", data)
    holds(lambda: read_split(path.parent, [path.name]), path.name)


def test_parquet_files_of_one_split_with_other_columns(work: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from culturebench.parquet_io import read_split

    folder = work / "split"
    folder.mkdir()
    pq.write_table(pa.table({"id": ["a"]}), folder / "a.parquet")
    pq.write_table(pa.table({"other": [1]}), folder / "b.parquet")
    with pytest.raises(SourceError, match=r"^b\.parquet: its columns differ from a\.parquet's"):
        read_split(folder, ["a.parquet", "b.parquet"])
    with pytest.raises(SourceError, match=r"^c\.parquet: no such file"):
        read_split(folder, ["c.parquet"])


# ---------------------------------------------------------------------- builders' tables
@SETTINGS
@given(data=TEXT_FILES)
def test_builder_source_tables(work: Path, data: bytes) -> None:
    from culturebench.builders.tables import read_csv, read_jsonl_table

    holds(lambda: read_csv(_file(work, "source.csv", data), ["id"]), "source.csv")
    holds(lambda: read_jsonl_table(_file(work, "source.jsonl", data)), "source.jsonl")


# --------------------------------------------------------------- eval score: recorded outputs
def _records_csv(records: list[dict[str, Any]]) -> str:
    columns = list(dict.fromkeys(key for record in records for key in record)) or ["id"]
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(columns)
    for record in records:
        writer.writerow(["" if record.get(c) is None else str(record.get(c)) for c in columns])
    return buffer.getvalue()


@SETTINGS
@given(records=st.lists(RECORDS, max_size=4), data=TEXT_FILES, kind=st.sampled_from(["csv", "jsonl"]))
def test_generations_files(work: Path, records: list[dict[str, Any]], data: bytes, kind: str) -> None:
    from culturebench.eval.score import read_generations

    structured = _records_csv(records) if kind == "csv" else _jsonl(records, "\n")
    for content in (structured, data):
        path = _file(work, f"answers.{kind}", content)
        got = holds(
            lambda p=path: read_generations(p, "a-task", judgment_columns={"j": "judgment"}), path.name
        )
        for generation in got or []:
            assert isinstance(generation.request_id, str) and isinstance(generation.row, int)
            assert generation.seed is None or isinstance(generation.seed, int)


LM_EVAL_TASK = "culturebench_borsch_origin_qa"  # a task `export lm-eval` writes
LM_EVAL_RECORDS = st.fixed_dictionaries(
    {
        "doc_id": JSON_VALUES,
        "doc": st.one_of(
            RECORDS, JSON_VALUES, st.fixed_dictionaries({"id": TEXT}, optional={"task": JSON_VALUES})
        ),
        "resps": JSON_VALUES,
    },
    optional={"filtered_resps": JSON_VALUES, "arguments": JSON_VALUES},
)
LM_EVAL_RESULTS = st.one_of(
    JSON_VALUES,
    st.fixed_dictionaries(
        {},
        optional={
            "configs": st.one_of(
                JSON_VALUES, st.dictionaries(st.just(LM_EVAL_TASK), JSON_VALUES, max_size=1)
            ),
            "config": st.one_of(JSON_VALUES, st.fixed_dictionaries({"model_args": JSON_VALUES})),
            "model_name": JSON_VALUES,
            "lm_eval_version": JSON_VALUES,
        },
    ),
)


@SETTINGS
@given(records=st.lists(LM_EVAL_RECORDS, min_size=1, max_size=3), results=LM_EVAL_RESULTS, raw=RAW)
def test_lm_eval_logs(work: Path, records: list[dict[str, Any]], results: Any, raw: bytes) -> None:
    from culturebench.eval.harness.logs import read_harness_log

    samples = _file(work, f"samples_{LM_EVAL_TASK}_2024-01-01T00-00-00.jsonl", _jsonl(records, "\n"))
    (samples.parent / "results_2024-01-01T00-00-00.json").write_text(_json_text(results), encoding="utf-8")
    names = (samples.name, "results_2024-01-01T00-00-00.json")
    holds(lambda: read_harness_log(samples), *names)
    (samples.parent / "results_2024-01-01T00-00-00.json").write_bytes(raw)
    holds(lambda: read_harness_log(samples), *names)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    body=st.one_of(
        st.builds(
            lambda e: '{"version": 2, "status": "success", "eval": ' + _json_text(e) + "}", JSON_VALUES
        ),
        st.builds(lambda s: '{"version": 2, "status": ' + _json_text(s) + ', "eval": {}}', JSON_VALUES),
    ),
    raw=RAW,
)
def test_inspect_logs(work: Path, body: str, raw: bytes) -> None:
    from culturebench.eval.harness.logs import read_harness_log

    log = _file(work, "run.json", body)
    holds(lambda: read_harness_log(log), "run.json")
    holds(lambda: read_harness_log(_file(work, "run.eval", raw)), "run.eval")


# --------------------------------------------------------------------------- run folders
SAMPLE_LINES = st.builds(
    _jsonl,
    st.lists(
        st.one_of(RECORDS, st.fixed_dictionaries({"id": TEXT}, optional={"run": JSON_VALUES})), max_size=4
    ),
    st.sampled_from(["\n", "", "\n{"]),
)


@SETTINGS
@given(
    samples=st.one_of(RAW, SAMPLE_LINES.map(str.encode)),
    run=st.one_of(RAW, JSON_VALUES.map(_json_text).map(str.encode)),
    results=st.one_of(RAW, JSON_VALUES.map(_json_text).map(str.encode)),
)
def test_run_folders(work: Path, samples: bytes, run: bytes, results: bytes) -> None:
    from culturebench.eval.run_folder import read_results, read_run, read_samples

    folder = _file(work, "samples.jsonl", samples).parent
    (folder / "run.json").write_bytes(run)
    (folder / "results.json").write_bytes(results)
    got = holds(lambda: read_samples(folder / "samples.jsonl", run_key="k"), "samples.jsonl")
    assert got is None or all(isinstance(s, dict) and isinstance(s["id"], str) for s in got)
    holds(lambda: read_run(folder), "run.json")
    holds(lambda: read_results(folder), "results.json")


@SETTINGS
@given(data=st.one_of(RAW, SAMPLE_LINES.map(str.encode)))
def test_judge_answer_cache(work: Path, data: bytes) -> None:
    """The judge's answer cache (a file culturebench wrote, possibly torn or edited): entries it
    cannot use are skipped (asked again), never a crash."""
    from culturebench.eval.judge import _load_cache

    cache = _load_cache(_file(work, "judge_cache.jsonl", data))
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in cache.items())


# ------------------------------------------------------------------------ one CSV reader
def test_every_csv_read_goes_through_the_one_reader() -> None:
    """``csv.reader``/``csv.DictReader`` keep Python's 131,072-character cell limit: shipped code
    reads CSV through :func:`culturebench.inputs.csv_reader` (or ``csv_dict_reader``) only."""
    root = Path(__file__).resolve().parents[1]
    direct = re.compile(r"\bcsv\.(reader|DictReader)\(")
    offenders = [
        str(path.relative_to(root))
        for folder in ("culturebench", "eval", "builders", "validation", "cards", "datasets")
        for path in sorted((root / folder).rglob("*.py"))
        if path.name != "inputs.py" and direct.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
