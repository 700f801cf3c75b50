"""Score recorded generations: outputs made elsewhere (a cluster job, a closed API, the
authors' published model outputs) go through the same task code, metrics, provenance and
report as ``eval run``.

Input: JSON Lines or CSV. The generic layout has one record per output with ``id`` (the
request id ``eval run`` uses, e.g. ``wwd-748:en:0``, or a dataset row id, which means the
task's first prompt; ``eval run``'s ``<request>@<seed>`` ids are understood, so a finished
run's ``samples.jsonl`` can be re-scored, e.g. with ``--matcher llm``), ``output`` and an
optional ``seed``. A dataset can ship named layouts
for its authors' files in ``datasets/<name>/generations.yaml``::

    layouts:
      NAME:
        id: {column: id, format: "wwd-{}"}     # how a row names the dataset row
        seed: seed                             # optional seed column
        list_outputs: [task-name, ...]         # columns that must hold Python list literals
        outputs: {task-name: column, ...}      # which column answers which task
        ids_from:                              # optional: ids/seeds live in a sibling file
          file: other.csv                      # aligned row by row ...
          check: [countries]                   # ... and these columns must agree

Each (item, seed) is one sample, scored once; a duplicate (item, seed), an unknown id, an
empty output or an unreadable file is an error naming file, row and column.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from culturebench.errors import CultureBenchError, Location, SourceError
from culturebench.hashing import sha256_file


@dataclass(frozen=True)
class Generation:
    """One recorded output: which request it answers, with which seed, and where it came from."""

    request_id: str
    seed: int | None
    output: str
    file: str
    row: int


def load_layout(dataset: str, name: str) -> dict[str, Any]:
    """The named layout from ``datasets/<dataset>/generations.yaml``."""
    from culturebench.errors import UsageError
    from culturebench.spec import load_spec

    path = load_spec(dataset).folder / "generations.yaml"
    layouts = (
        (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("layouts", {}) if path.is_file() else {}
    )
    if name not in layouts:
        raise UsageError(
            f"{dataset} has no generations layout {name!r} (have: {', '.join(layouts) or 'none'})"
        )
    return layouts[name]


def _records(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """``(row number as a person sees it, record)`` from a CSV (header = row 1) or JSONL."""
    if not path.is_file():
        raise SourceError(Location(str(path)), "no such file")
    if path.suffix.lower() in (".jsonl", ".json"):
        out = []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SourceError(Location(path.name, number), f"not valid JSON: {exc.msg}") from None
            if not isinstance(value, dict):
                raise SourceError(Location(path.name, number), "each line must be a JSON object")
            out.append((number, value))
        return out
    with open(path, encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle)
        try:
            return [(reader.line_num, dict(row)) for row in reader]
        except csv.Error as exc:
            raise SourceError(Location(path.name, reader.line_num), f"malformed CSV: {exc}") from None


def _check_list_literal(text: str, where: Location) -> None:
    """A column the layout declares as parsed lists must hold a Python list literal (text
    after it is tolerated: one of the WWD authors' 3,825 answers reads
    ``["Main dish - eaten with sides"] - United States of America (USA)``)."""
    import ast
    import re

    candidates = [text.strip()]
    match = re.match(r"\s*(\[[^\[\]]*\])", text)
    if match:
        candidates.append(match.group(1))
    value = None
    for candidate in candidates:
        try:
            value = ast.literal_eval(candidate)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        if isinstance(value, list):
            break
    if not isinstance(value, list):
        raise SourceError(where, f"not a Python list literal: {text[:60]!r}")


def _header(path: Path) -> list[str]:
    """Column names of a CSV, or the keys of a JSONL file's first record; reads only that
    much (the file is parsed in full once, by :func:`read_generations`, if it is used)."""
    if not path.is_file():
        raise SourceError(Location(str(path)), "no such file")
    with open(path, encoding="utf-8-sig", newline="") as handle:
        if path.suffix.lower() in (".jsonl", ".json"):
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    try:
                        value = json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise SourceError(Location(path.name, number), f"not valid JSON: {exc.msg}") from None
                    return list(value) if isinstance(value, dict) else []
            return []
        try:
            return next(csv.reader(handle), [])
        except csv.Error as exc:
            raise SourceError(Location(path.name, 1), f"malformed CSV: {exc}") from None


def _seed(value: Any, where: Location) -> int | None:
    if value is None or value == "":
        return None
    text = str(value).strip()
    if not (text.isascii() and text.lstrip("-").isdigit()):
        raise SourceError(where, f"seed {value!r} is not an integer")
    return int(text)


def read_generations(
    path: str | Path, task: str, *, layout: dict[str, Any] | None = None, id_prefix: str = ""
) -> list[Generation]:
    """Recorded outputs of ``task`` from ``path`` (generic layout unless ``layout``)."""
    path = Path(path)
    records = _records(path)
    layout = layout or {}
    id_spec = layout.get("id", {"column": "id"})
    id_column = id_spec["column"] if isinstance(id_spec, dict) else str(id_spec)
    id_format = id_spec.get("format", "{}") if isinstance(id_spec, dict) else "{}"
    seed_column = layout.get("seed", "seed")
    output_column = (layout.get("outputs") or {}).get(task, "output") if layout else "output"
    ids_from = layout.get("ids_from")
    if ids_from and records and id_column not in records[0][1]:  # this file has no ids of its own
        records = _borrow_ids(path, records, ids_from, [id_column, seed_column])
    if records and output_column not in records[0][1]:
        raise SourceError(
            Location(path.name, 1, output_column), f"no column {output_column!r} for task {task!r}"
        )
    list_output = task in (layout.get("list_outputs") or [])
    out = []
    for number, record in records:
        raw_id = record.get(id_column)
        if raw_id is None or str(raw_id).strip() == "":
            raise SourceError(Location(path.name, number, id_column), "missing id")
        output = record.get(output_column)
        if output is None or str(output).strip() == "":
            raise SourceError(Location(path.name, number, output_column), "empty output")
        if list_output:
            _check_list_literal(str(output), Location(path.name, number, output_column))
        request_id, _, id_seed = str(raw_id).strip().partition("@")  # `eval run` ids: <request>@<seed>
        seed_value = record.get(seed_column) if record.get(seed_column) not in (None, "") else id_seed
        out.append(
            Generation(
                request_id=id_prefix + id_format.format(request_id),
                seed=_seed(seed_value, Location(path.name, number, seed_column)),
                output=str(output),
                file=path.name,
                row=number,
            )
        )
    return out


def _borrow_ids(
    path: Path, records: list[tuple[int, dict[str, Any]]], ids_from: dict[str, Any], columns: Sequence[str]
) -> list[tuple[int, dict[str, Any]]]:
    """Copy id/seed columns from a sibling file aligned row by row, checking the alignment."""
    sibling = path.with_name(ids_from["file"])
    other = _records(sibling)
    if len(other) != len(records):
        raise SourceError(
            Location(path.name), f"{len(records)} rows, but {sibling.name} (its ids) has {len(other)}"
        )
    out = []
    for (number, record), (_, source) in zip(records, other, strict=True):
        for column in ids_from.get("check", []):
            if record.get(column) != source.get(column):
                raise SourceError(
                    Location(path.name, number, column),
                    f"does not line up with {sibling.name} row {number} ({record.get(column)!r} vs "
                    f"{source.get(column)!r})",
                )
        out.append((number, {**record, **{c: source.get(c) for c in columns if c in source}}))
    return out


def match_requests(
    task_requests: Sequence[Any], generations: Sequence[Generation]
) -> list[tuple[Any, Generation]]:
    """Pair each generation with its task request. A bare row id means the task's first
    prompt (index 0) of that row; an id the task never asks is an error; (request, seed)
    pairs are unique."""
    by_id = {r.request.id: r for r in task_requests}
    first = {}
    for r in task_requests:
        first.setdefault(r.meta.get("row_id"), r)
    seen: dict[tuple[str, int | None], Generation] = {}
    out = []
    for gen in generations:
        request = by_id.get(gen.request_id) or first.get(gen.request_id)
        if request is None:
            raise SourceError(
                Location(gen.file, gen.row, "id"), f"{gen.request_id!r} is not an item of this task"
            )
        key = (request.request.id, gen.seed)
        if key in seen:
            raise SourceError(
                Location(gen.file, gen.row, "id"),
                f"{gen.request_id!r} seed {gen.seed} appears twice (first on row {seen[key].row})",
            )
        seen[key] = gen
        out.append((request, gen))
    return out


def score_generations(
    dataset: str,
    task_name: str,
    files: Sequence[str | Path],
    out_dir: str | Path,
    *,
    layout: str | None = None,
    revision: str | None = None,
    local: str | None = None,
    repo: str | None = None,
    task_options: dict[str, Any] | None = None,
    judge: Any = None,
) -> dict[str, Any]:
    """Score the recorded outputs of ``task_name`` in ``files``; write ``run.json``,
    ``samples.jsonl``, ``results.json`` and ``report.md`` to ``out_dir`` (replaced whole).
    ``judge``: a backend that scores with the task's LLM matcher (``--matcher llm``)."""
    from culturebench.eval.runner import (
        RESULTS,
        RUN,
        SAMPLES,
        _sample,
        _write_json,
        check_out_dir,
        load_rows,
        resolve_dataset,
        task_identity,
    )
    from culturebench.eval.tasks import get_task

    task = get_task(dataset, task_name, **(task_options or {}))
    shape = load_layout(dataset, layout) if layout else None
    column = (shape.get("outputs") or {}).get(task_name) if shape else "output"
    if column is None:
        raise CultureBenchError(f"layout {layout!r} has no column for task {task_name!r}")
    # the first file that carries the task's column answers it (the WWD authors' files repeat
    # some columns, e.g. country_llm, in two of them)
    used = [Path(f) for f in files if column in _header(Path(f))][:1]
    if not used:
        raise SourceError(
            Location(", ".join(Path(f).name for f in files), 1, column),
            f"no generations file has the column {column!r} for task {task_name!r}",
        )
    generations: list[Generation] = []
    for f in used:
        generations += read_generations(f, task_name, layout=shape)
    ref = resolve_dataset(dataset, revision=revision, local=local, repo=repo)
    rows = load_rows(ref, task.config, task.split, None)
    requests, skipped = task.build(rows, list(task.languages))
    pairs = match_requests(requests, generations)
    out = Path(out_dir)
    check_out_dir(out)
    out.mkdir(parents=True, exist_ok=True)
    run_info = {
        **task_identity(ref, task_name, task),
        "mode": "score",
        "generations": [{"file": str(f.resolve()), "sha256": sha256_file(f)} for f in used],
        "layout": layout,
        "model": {"backend": "recorded", "model": ", ".join(f.name for f in used)},
    }
    _write_json(out / RUN, run_info)
    samples = []
    for request, gen in pairs:
        sample = _sample(task, request, gen.output)
        sample["id"] = f"{request.request.id}@{gen.seed}" if gen.seed is not None else request.request.id
        sample["seed"] = gen.seed
        samples.append(sample)
    if judge is not None:
        from culturebench.eval.judge import run_judge

        samples, run_info["matcher"] = run_judge(task, samples, judge, out)
        _write_json(out / RUN, run_info)
    text = "".join(json.dumps(s, ensure_ascii=False, sort_keys=True) + "\n" for s in samples)
    from culturebench.atomic import write_text_atomic

    write_text_atomic(out / SAMPLES, text)
    results = {
        "provenance": {**run_info, "culturebench_version": _version()},
        "skipped_rows": skipped,
        "samples": len(samples),
        "items": len({s["row_id"] for s in samples}),
        "seeds": sorted({s["seed"] for s in samples if s["seed"] is not None}),
        "metrics": task.aggregate(samples),
    }
    _write_json(out / RESULTS, results)
    from culturebench.eval.report import write_report

    write_report([out], out / "report.md")
    return results


def _version() -> str:
    from culturebench import __version__

    return __version__
