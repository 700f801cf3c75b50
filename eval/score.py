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
        list_outputs: [task-name, ...]         # columns that hold answers as Python list literals
        outputs: {task-name: column, ...}      # which column answers which task
        ids_from:                              # optional: ids/seeds live in a sibling file,
          check: [countries]                   # the given file that has the id and seed
                                               # columns and these, aligned row by row (checked)
        judgments:                             # optional: a judge's recorded answers, read
          task-name: {judgment-name: column}   # beside the output (``--matcher recorded``)

Each (item, seed) is one sample, scored once. Only a structural fault is an error naming
file, row and column: a missing or unknown id, a duplicate (item, seed), a bad seed, a missing
output column, files whose rows do not line up, a file that is not CSV or JSON Lines. What a
cell says is the model's output, read as it is and scored by the task with the same parser as
``eval run``: an answer not in the asked form (prose or a refusal where a list was asked, an
empty string, junk) is the model's failure, scored as the task defines it and counted (the
WWD list tasks' ``n_unparsed``, the multiple-choice tasks' ``unparseable``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from culturebench.errors import CultureBenchError, Location, SourceError, UsageError
from culturebench.eval.generation import Generation
from culturebench.eval.records import Results, RunInfo
from culturebench.eval.tasks.base import job_id, split_job_id
from culturebench.file_memo import FileMemo
from culturebench.hashing import sha256_file
from culturebench.jsonsafe import json_text
from culturebench.outputs import OutputKind


def load_layout(dataset: str, name: str) -> dict[str, Any]:
    """The named layout from ``datasets/<dataset>/generations.yaml``."""
    from culturebench import registry
    from culturebench.errors import UsageError
    from culturebench.yamlio import load_yaml

    path = registry.get(dataset).folder / "generations.yaml"
    layouts = (load_yaml(path) or {}).get("layouts", {}) if path.is_file() else {}
    if name not in layouts:
        raise UsageError(
            f"{dataset} has no generations layout {name!r} (have: {', '.join(layouts) or 'none'})"
        )
    return layouts[name]


# Files read in this process: `eval score` of several tasks reads each generations file once,
# however many tasks take a column from it (a few files at most: the WWD authors' layout reads
# three; callers never mutate them).
_READ: FileMemo[tuple[list[str], list[tuple[int, dict[str, Any]]]]] = FileMemo()


def _table(path: Path) -> tuple[list[str], list[tuple[int, dict[str, Any]]]]:
    """``(column names, [(row, record)])`` of a generations file (CSV, header = row 1, or JSON
    Lines, a row per line), read whole and strictly (:mod:`culturebench.inputs`): UTF-8 only,
    a column or key given twice, values beyond the header and nesting beyond reason are errors
    naming file, row and field."""
    if not path.is_file():
        raise SourceError(Location(str(path)), "no such file" if not path.exists() else "not a file")
    return _READ.get(path, _read_table)


def _read_table(path: Path) -> tuple[list[str], list[tuple[int, dict[str, Any]]]]:
    from culturebench.inputs import read_csv_records, read_csv_rows, read_jsonl

    what = "a generations file"
    if path.suffix.lower() in (".jsonl", ".json"):
        records: list[tuple[int, dict[str, Any]]] = list(read_jsonl(path, what=what))
        return (list(records[0][1]) if records else []), records
    records = list(read_csv_records(path, what=what))
    header = list(records[0][1]) if records else [c.strip() for c in read_csv_rows(path)[0][1]]
    return header, records


def _records(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """``(row number as a person sees it, record)`` of a generations file."""
    return _table(path)[1]


def _header(path: Path) -> list[str]:
    """Column names of a CSV, or the keys of a JSONL file's first record."""
    return _table(path)[0]


def _seed(value: Any, where: Location) -> int | None:
    if value is None or value == "":
        return None
    text = str(value).strip()
    if not (text.isascii() and text.lstrip("-").isdigit()):
        raise SourceError(where, f"seed {value!r} is not an integer")
    return int(text)


def read_generations(
    path: str | Path,
    task: str,
    *,
    layout: dict[str, Any] | None = None,
    id_prefix: str = "",
    judgment_columns: dict[str, str] | None = None,
    siblings: Sequence[str | Path] = (),
) -> list[Generation]:
    """Recorded outputs of ``task`` from ``path`` (generic layout unless ``layout``);
    ``judgment_columns`` (judgment name -> column): the recorded judge answers read beside
    each output (``--matcher recorded``), a missing column being an error. ``siblings``: the
    other files given with it, where a file without ids finds them (layout ``ids_from``)."""
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
        records = _borrow_ids(path, records, ids_from, [id_column, seed_column], siblings)
    if records and output_column not in records[0][1]:
        raise SourceError(
            Location(path.name, 1, output_column), f"no column {output_column!r} for task {task!r}"
        )
    for name, column in (judgment_columns or {}).items():
        if records and column not in records[0][1]:
            raise SourceError(
                Location(path.name, 1, column),
                f"no column {column!r}: --matcher recorded reads task {task!r}'s judgment {name!r} there",
            )
    out = []
    for number, record in records:
        raw_id = record.get(id_column)
        if raw_id is None or str(raw_id).strip() == "":
            raise SourceError(Location(path.name, number, id_column), "missing id")
        if output_column not in record:
            raise SourceError(Location(path.name, number, output_column), "no output")
        output = record[output_column]  # read as it is: the task parses it (a list, a letter, ...)
        request_id, id_seed = split_job_id(str(raw_id).strip())  # `eval run` ids: <request>@<seed>
        seed_value = record.get(seed_column) if record.get(seed_column) not in (None, "") else id_seed
        out.append(
            Generation(
                request_id=id_prefix + id_format.format(request_id),
                seed=_seed(seed_value, Location(path.name, number, seed_column)),
                output=output,  # non-text JSON values stay as they are: the model's failure
                file=path.name,
                row=number,
                judgments=None
                if judgment_columns is None
                else {
                    name: "" if record.get(c) is None else str(record.get(c))
                    for name, c in judgment_columns.items()
                },
            )
        )
    return out


def _borrow_ids(
    path: Path,
    records: list[tuple[int, dict[str, Any]]],
    ids_from: dict[str, Any],
    columns: Sequence[str],
    siblings: Sequence[str | Path],
) -> list[tuple[int, dict[str, Any]]]:
    """Copy the id/seed ``columns`` from the one other given file that has them and the
    ``check`` columns and lines up with ``path`` row by row (the check columns agree on every
    row). Files are recognised by their columns, never by their names or folder."""
    check = list(ids_from.get("check", []))
    wanted = [*columns, *check]
    candidates = [
        Path(p)
        for p in siblings
        if Path(p).resolve() != path.resolve() and set(wanted) <= set(_header(Path(p)))
    ]
    if not candidates:
        raise SourceError(
            Location(path.name),
            f"has no {' or '.join(repr(c) for c in columns)} column: give the file it lines up with "
            f"(columns {', '.join(wanted)}) as another --generations",
        )
    faults: list[str] = []
    aligned = []
    for sibling in candidates:
        fault = _misalignment(path, records, sibling, check)
        if fault:
            faults.append(fault)
        else:
            aligned.append(sibling)
    if not aligned:
        raise SourceError(Location(path.name), faults[0])
    if len(aligned) > 1:
        raise SourceError(
            Location(path.name),
            f"lines up with {len(aligned)} given files ({', '.join(p.name for p in aligned)}): "
            "give the answers of one model at a time",
        )
    other = _records(aligned[0])
    return [
        (number, {**record, **{c: source.get(c) for c in columns if c in source}})
        for (number, record), (_, source) in zip(records, other, strict=True)
    ]


def _misalignment(
    path: Path, records: list[tuple[int, dict[str, Any]]], sibling: Path, check: Sequence[str]
) -> str | None:
    """Why ``records`` (of ``path``) do not line up with ``sibling`` row by row, or None."""
    other = _records(sibling)
    if len(other) != len(records):
        return f"{len(records)} rows, but {sibling.name} (its ids) has {len(other)}"
    for (number, record), (_, source) in zip(records, other, strict=True):
        for column in check:
            if record.get(column) != source.get(column):
                return (
                    f"row {number} column {column!r} does not line up with {sibling.name} row {number} "
                    f"({record.get(column)!r} vs {source.get(column)!r})"
                )
    return None


def match_requests(
    task_requests: Sequence[Any], generations: Sequence[Generation]
) -> tuple[list[tuple[Any, Generation]], int]:
    """Pair each generation with its task request; returns the pairs and how many identical
    duplicates were dropped. A bare row id means the task's first prompt (index 0) of that
    row; an id the task never asks is an error; (request, seed) pairs are unique: a repeat
    within one file, or a repeat in another file with a different output, is an error naming
    both places. The same answer in two files (the WWD authors' files repeat a column) is
    scored once and counted."""
    by_id = {r.request.id: r for r in task_requests}
    first: dict[Any, Any] = {}
    for r in task_requests:
        first.setdefault(r.meta.get("row_id"), r)
    unknown = [g for g in generations if g.request_id not in by_id and g.request_id not in first]
    if unknown:
        gen = unknown[0]
        more = (
            f"; nor are {', '.join(repr(g.request_id) for g in unknown[1:4])}"
            f"{' ...' if len(unknown) > 4 else ''} ({len(unknown)} of {len(generations)} ids unknown: "
            "another release or task?)"
            if len(unknown) > 1
            else ""
        )
        raise SourceError(
            Location(gen.file, gen.row, "id"), f"{gen.request_id!r} is not an item of this task{more}"
        )
    seen: dict[tuple[str, int | None], Generation] = {}
    out = []
    duplicates = 0
    for gen in generations:
        request = by_id.get(gen.request_id) or first[gen.request_id]
        key = (request.request.id, gen.seed)
        if key in seen:
            before = seen[key]
            if before.file != gen.file and (before.output, before.judgments) == (gen.output, gen.judgments):
                duplicates += 1
                continue
            where = f"row {before.row}" if before.file == gen.file else f"{before.file} row {before.row}"
            differs = (
                ""
                if before.file == gen.file
                else (
                    " with a different output"
                    if before.output != gen.output
                    else " with a different judgment"
                )
            )
            raise SourceError(
                Location(gen.file, gen.row, "id"),
                f"{gen.request_id!r} seed {gen.seed} appears twice{differs} (first on {where})",
            )
        seen[key] = gen
        out.append((request, gen))
    return out, duplicates


@dataclass
class PreparedScoring:
    """A task's recorded outputs, read whole and matched to its requests: nothing written yet."""

    dataset: str
    task_name: str
    task: Any
    ref: Any
    skipped: dict[str, int]
    pairs: list[tuple[Any, Generation]]
    files: list[Path]
    layout: str | None
    duplicates: int
    harness: str | None = None  # "inspect-ai" / "lm-eval": the outputs are that harness's log
    model: dict[str, Any] | None = None  # the model and settings the harness log names
    model_name: str | None = None  # `eval score --model`: the model that wrote the outputs


def prepare_scoring(
    dataset: str,
    task_name: str,
    files: Sequence[str | Path],
    *,
    layout: str | None = None,
    revision: str | None = None,
    local: str | None = None,
    repo: str | None = None,
    task_options: dict[str, Any] | None = None,
    refs: dict[str, Any] | None = None,
    recorded_judgments: bool = False,
    model_name: str | None = None,
) -> PreparedScoring:
    """Read every generations file that holds ``task_name``'s column (all of them, not the
    first), match the outputs to the task's requests and check them; raises on any fault
    before anything is written. ``refs``: a cache so several tasks resolve the release once.
    ``recorded_judgments``: read the judge's recorded answers beside each output, from the
    layout's ``judgments:`` columns (generic layout: columns named as ``Task.judge_names``),
    for a task that has a judge (the others score as they always do)."""
    from culturebench.eval.tasks import get_task

    task = get_task(dataset, task_name, **(task_options or {}))
    task_name = task.name  # an old name (alias) scores as the task's current name
    logs = harness_logs(files)
    if logs and model_name:
        from culturebench.errors import UsageError

        raise UsageError("--model names the model of recorded outputs; a harness log names its own")
    if logs:  # Inspect / lm-eval logs: their own task, model and release
        return _prepare_logs(
            dataset, task, logs, files, revision=revision, local=local, repo=repo, refs=refs
        )  # fmt: skip
    shape = load_layout(dataset, layout) if layout else None
    column = (shape.get("outputs") or {}).get(task_name) if shape else "output"
    if column is None:
        raise CultureBenchError(f"layout {layout!r} has no column for task {task_name!r}")
    paths = [Path(f) for f in files]
    seen: dict[Path, Path] = {}
    for path in paths:
        if path.resolve() in seen:
            raise SourceError(
                Location(str(path)), f"given twice as --generations (also as {seen[path.resolve()]})"
            )
        seen[path.resolve()] = path
    used = [p for p in paths if column in _header(p)]
    if not used:
        raise SourceError(
            Location(", ".join(p.name for p in paths), 1, column),
            f"no generations file has the column {column!r} for task {task_name!r}",
        )
    replay = recorded_judgments and task.supports_judge()  # the others score as they always do
    judgment_columns = _judgment_columns(task, layout, shape) if replay else None
    generations: list[Generation] = []
    for path in used:
        generations += read_generations(
            path, task_name, layout=shape, judgment_columns=judgment_columns, siblings=paths
        )
    if not generations:  # a score of nothing is not a result
        raise SourceError(
            Location(", ".join(p.name for p in used)), f"no generations for task {task_name!r} (no rows)"
        )
    ref, requests, skipped = _requests(dataset, task, refs, revision=revision, local=local, repo=repo)
    pairs, duplicates = match_requests(requests, generations)
    return PreparedScoring(
        dataset, task_name, task, ref, skipped, pairs, used, layout, duplicates, model_name=model_name
    )


def _requests(
    dataset: str,
    task: Any,
    refs: dict[Any, Any] | None,
    *,
    revision: str | None,
    local: str | None,
    repo: str | None,
    pin: dict[str, Any] | None = None,
) -> tuple[Any, list[Any], dict[str, int]]:
    """The release (resolved once per command through ``refs``) and ``task``'s requests from
    it, in every language; ``pin``: an exact revision recorded in a harness log."""
    from culturebench.eval.dataset_ref import load_rows, resolve_dataset

    cache = refs if refs is not None else {}
    key = ("ref", revision, local, repo, json.dumps(pin, sort_keys=True) if pin else None)
    if key not in cache:
        if pin:
            from culturebench.eval.harness.common import pinned

            cache[key] = pinned(dataset, pin)
        else:
            cache[key] = resolve_dataset(dataset, revision=revision, local=local, repo=repo)
    ref = cache[key]
    rows_key = ("rows", ref, task.config, task.split)
    if rows_key not in cache:
        cache[rows_key] = load_rows(ref, task.config, task.split, None)
    requests, skipped = task.build(cache[rows_key], list(task.languages))
    return ref, requests, skipped


def harness_logs(files: Sequence[str | Path]) -> list[Any]:
    """The Inspect / lm-eval logs among ``files`` (read), or [] when they are plain generations
    files; a mix of both is an error."""
    from culturebench.eval.harness.logs import harness_of, read_harness_log

    paths = [Path(f) for f in files]
    kinds = [harness_of(p) for p in paths]
    if not any(kinds):
        return []
    if not all(kinds):
        plain = next(p for p, k in zip(paths, kinds, strict=True) if not k)
        raise SourceError(
            Location(plain.name), "a plain generations file given with harness logs: score them separately"
        )
    return [read_harness_log(p) for p in paths]


def harness_log_tasks(files: Sequence[str | Path]) -> list[str] | None:
    """The tasks the harness logs among ``files`` hold (None: no harness logs)."""
    logs = harness_logs(files)
    return list(dict.fromkeys(log.task for log in logs)) if logs else None


def _prepare_logs(
    dataset: str,
    task: Any,
    logs: Sequence[Any],
    files: Sequence[str | Path],
    *,
    revision: str | None,
    local: str | None,
    repo: str | None,
    refs: dict[Any, Any] | None,
) -> PreparedScoring:
    """Harness logs of ``task``: one model per command; the release is the one given, else
    the one the logs recorded (an exact pin); ids the release does not have are an error."""
    foreign = [log for log in logs if log.dataset != dataset]
    if foreign:
        raise SourceError(
            Location(foreign[0].path.name),
            f"a log of {foreign[0].dataset}/{foreign[0].task}, not of {dataset}",
        )
    mine = [log for log in logs if log.task == task.name]
    if not mine:
        raise SourceError(
            Location(", ".join(log.path.name for log in logs)),
            f"no log of task {task.name!r} (they hold: {', '.join(sorted({log.task for log in logs}))})",
        )
    models = {json.dumps(log.model.get("model")) for log in mine}
    if len(models) > 1:
        raise SourceError(
            Location(", ".join(log.path.name for log in mine)),
            f"logs of {len(models)} different models for one task: score each model into its own --out",
        )
    given = revision or local or repo
    pins = {json.dumps(log.pin, sort_keys=True) for log in mine if log.pin}
    pin = json.loads(next(iter(pins))) if len(pins) == 1 and not given else None
    ref, requests, skipped = _requests(
        dataset, task, refs, revision=revision, local=local, repo=repo, pin=pin
    )  # fmt: skip
    if given:  # the release named must be the one the logs were made from
        from culturebench.eval.harness.logs import check_log_release

        check_log_release(mine, ref, "--local" if local else "--revision" if revision else "--repo")
    generations = [g for log in mine for g in log.generations]
    pairs, duplicates = match_requests(requests, generations)
    model = {**mine[0].model, "logs": [log.path.name for log in mine]}
    return PreparedScoring(
        dataset, task.name, task, ref, skipped, pairs, [log.path for log in mine], None, duplicates,
        harness=mine[0].harness, model=model,
    )  # fmt: skip


def _judgment_columns(task: Any, layout: str | None, shape: dict[str, Any] | None) -> dict[str, str]:
    """Judgment name -> column of the recorded judge answers of ``task`` (``--matcher recorded``)."""
    from culturebench.errors import UsageError

    if shape is None:
        return {name: name for name in task.judge_names}
    columns = (shape.get("judgments") or {}).get(task.name)
    if not columns:
        raise UsageError(f"layout {layout!r} records no judgments of task {task.name!r} (--matcher recorded)")
    return {name: columns.get(name, name) for name in task.judge_names}


def check_score_dir(out: Path) -> None:
    """``out`` may be new, empty, or an earlier ``eval score`` of any task or tasks (replaced
    whole, its judge caches reused); an ``eval run`` folder (its samples are a model's
    generations), a symbolic link, or a folder of anything else is refused."""
    from culturebench.eval.run_folder import RUN, check_out_dir
    from culturebench.outputs import check_folder_path

    check_folder_path(out)
    check_out_dir(out)
    if not out.is_dir() or not any(out.iterdir()):
        return
    run_file = out / RUN
    if run_file.is_file():
        try:
            mode = json.loads(run_file.read_text(encoding="utf-8")).get("mode")
        except (ValueError, UnicodeDecodeError, AttributeError):
            mode = None
        if mode == "score":
            return
        raise CultureBenchError(
            f"--out {out} holds an `eval run` (its samples.jsonl are the model's generations); scoring "
            "would replace them: use another --out"
        )
    from culturebench.outputs import kind_of

    if kind_of(out) != SCORE_SET.name:
        raise CultureBenchError(
            f"--out {out} holds files that are not an `eval score` output; refusing to replace them "
            "(give a new or empty folder)"
        )


def write_scoring(
    prepared: PreparedScoring,
    out_dir: str | Path,
    *,
    judge: Any = None,
    reader: Any = None,
    progress: Callable[[int, int], None] | None = None,
    final: Path | None = None,
) -> Results:
    """Score ``prepared`` into ``out_dir``: ``run.json``, ``samples.jsonl``, ``results.json``
    and ``report.md`` (each written atomically; an earlier score there is replaced). ``reader``,
    a backend, reads the answers again as the answer reader
    (:mod:`culturebench.eval.answers.model_reader`). ``final``: the folder ``out_dir`` is
    published as, when it is a staging folder (the provenance names the final paths)."""
    from culturebench.atomic import write_text_atomic
    from culturebench.eval.judge import RECORDED
    from culturebench.eval.run_folder import (
        RESULTS,
        RUN,
        SAMPLES,
        keep_thumbnails,
        output_counts,
        task_identity,
        write_json,
    )
    from culturebench.eval.run_report import write_report

    task, used = prepared.task, prepared.files
    out = Path(out_dir)
    if final is None:  # a staging folder (holding the earlier judge caches) was checked as --out
        check_score_dir(out)
    run_info: RunInfo = {
        **task_identity(prepared.ref, prepared.task_name, task),
        "mode": "score",
        "generations": [{"file": str(f.resolve()), "sha256": sha256_file(f)} for f in used],
        "layout": prepared.layout,
        "model": prepared.model or _recorded_model(prepared.model_name, used),
    }
    if prepared.harness:
        run_info["harness"] = prepared.harness
    samples = []
    total = len(prepared.pairs)
    for done, (request, gen) in enumerate(prepared.pairs, start=1):
        sample = task.scored_sample(request, gen.output)
        sample["id"] = job_id(request.request.id, gen.seed)
        sample["seed"] = gen.seed
        samples.append(sample)
        if progress and (done % 200 == 0 or done == total):
            progress(done, total)
    extra: Results = {}
    if judge == RECORDED and task.supports_judge():
        from culturebench.eval.judge import RecordedJudgment, replay_judgments

        recorded = [
            RecordedJudgment(gen.judgments or {}, f"{gen.file} row {gen.row}") for _, gen in prepared.pairs
        ]
        # refuses (missing judgments) before anything is written
        samples, run_info["matcher"] = replay_judgments(task, samples, recorded, out)
        _record_final(run_info["matcher"], final)
        extra["judge_missing"] = run_info["matcher"]["judge_missing"]
        extra["judge_unparsed"] = run_info["matcher"]["judge_unparsed"]
    elif judge is not None and judge != RECORDED:
        from culturebench.eval.judge import run_judge

        out.mkdir(parents=True, exist_ok=True)  # the judge's cache lives in the run folder
        samples, run_info["matcher"] = run_judge(task, samples, judge, out)
        _record_final(run_info["matcher"], final)
        extra["judge_unparsed"] = run_info["matcher"]["judge_unparsed"]
    if reader is not None:
        from culturebench.eval.answers.model_reader import read_with_model

        out.mkdir(parents=True, exist_ok=True)  # the reader's cache lives in the run folder
        samples, run_info["answer_reader"] = read_with_model(task, samples, reader, out)
        extra["answer_reader"] = run_info["answer_reader"]
    samples = [task.with_record_fields(s) for s in samples]  # as a judge or reader left them
    out.mkdir(parents=True, exist_ok=True)  # scored: only now is anything written
    images = {job_id(r.request.id, g.seed): r.request.images for r, g in prepared.pairs if r.request.images}
    for sample in samples:
        if sample["id"] in images:  # a viewer draws them from the run folder
            sample["images"] = keep_thumbnails(out, images[sample["id"]])
    write_json(out / RUN, run_info)
    text = "".join(json_text(s, sort_keys=True) for s in samples)
    write_text_atomic(out / SAMPLES, text)
    from culturebench.eval.coverage import scored_coverage

    results: Results = {
        "coverage": scored_coverage(task, run_info, samples),
        "provenance": {**run_info, "culturebench_version": _version()},
        "skipped_rows": prepared.skipped,
        "samples": len(samples),
        "items": len({s["row_id"] for s in samples}),
        "seeds": sorted({s["seed"] for s in samples if s["seed"] is not None}),
        "duplicate_generations": prepared.duplicates,
        **output_counts(samples),
        **extra,
        "metrics": task.aggregate(samples),
    }
    from culturebench.eval.runner import schema_fields

    results.update(schema_fields(task, results["provenance"], samples, results["metrics"]))
    write_json(out / RESULTS, results)
    write_report([out], out / "report.md", sections=lambda _results: task.report_sections)
    return results


def _record_final(matcher: dict[str, Any], final: Path | None) -> None:
    """The judge cache named where the output is published, not in its staging folder."""
    if final is not None and matcher.get("judge_cache"):
        matcher["judge_cache"] = str(final / Path(matcher["judge_cache"]).name)


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
) -> Results:
    """Score the recorded outputs of ``task_name`` in ``files``; write ``run.json``,
    ``samples.jsonl``, ``results.json`` and ``report.md`` to ``out_dir``.
    ``judge``: a backend that scores with the task's LLM matcher (``--matcher llm``), or
    ``"recorded"`` to replay the judge answers recorded beside the outputs. Written as
    :func:`score_tasks` writes: nothing at ``out_dir`` changes unless the whole score succeeds."""
    done = score_tasks(
        dataset, [task_name], files, out_dir, judge=judge, layout=layout, revision=revision, local=local,
        repo=repo, task_options=task_options,
    )  # fmt: skip
    return done[task_name]


def _recorded_model(name: str | None, used: Sequence[Path]) -> dict[str, Any]:
    """The ``model`` of recorded outputs: the name given with ``--model`` (``named``), else the
    files' names (which the paper's ``models:`` aliases may recognise, e.g. ``gpt35_*``)."""
    files = ", ".join(f.name for f in used)
    if name:
        return {"backend": "recorded", "model": name, "files": files, "named": True}
    return {"backend": "recorded", "model": files}


SCORE_SET = OutputKind("score-set")


def tasks_without_outputs(
    dataset: str, names: Sequence[str], files: Sequence[str | Path], layout: str
) -> dict[str, str]:
    """The tasks of ``names`` whose ``layout`` column no file of ``files`` has, with that
    column (``eval score`` of every task lists them as not scored instead of refusing: the
    WWD authors published no failures file for Llama 3-8B, whose other tasks still score)."""
    shape = load_layout(dataset, layout)
    columns = shape.get("outputs") or {}
    headers = [set(_header(Path(f))) for f in files]
    return {
        name: columns[name]
        for name in names
        if name in columns and not any(columns[name] in header for header in headers)
    }


def score_tasks(
    dataset: str,
    names: Sequence[str],
    files: Sequence[str | Path],
    out: str | Path,
    *,
    judge: Any = None,
    reader: Any = None,
    progress: Callable[[str, int, int], None] | None = None,
    summary: Callable[[dict[str, Results], Path], object] | None = None,
    **options: Any,
) -> dict[str, Results]:
    """``eval score`` of several tasks: every task's outputs are read and checked first (a
    fault in the last task writes nothing), then each is scored into ``out/<task>`` (one
    task: ``out`` itself), and ``summary(results_by_task, folder)`` writes the dataset's
    summary files. The whole output is built in a staging folder beside ``out`` and renamed
    onto it at the end (:mod:`culturebench.outputs`): a refusal or failure at any step (a
    missing recorded judgment, a judge that cannot be reached) leaves ``out`` as it was, and
    an earlier ``eval score`` there, of any task or tasks, is replaced whole, never mixed with
    the new one (its judge and reader caches are reused). ``out`` is locked for the whole
    command."""
    from culturebench.atomic import no_room_named, publish_dir, staging_dir
    from culturebench.eval.judge import RECORDED
    from culturebench.outputs import write_marker, writer_lock

    out = Path(out)
    check_score_dir(out)
    with writer_lock(out):
        refs: dict[Any, Any] = {}
        recorded = judge == RECORDED
        prepared = [
            prepare_scoring(dataset, name, files, refs=refs, recorded_judgments=recorded, **options)
            for name in names
        ]
        if judge is not None and not recorded:  # every task can be judged before any judge call
            from culturebench.errors import UsageError

            for p in prepared:
                if not p.task.supports_judge():
                    raise UsageError(
                        f"task {p.task_name!r} has no LLM matcher (--matcher llm; nothing written)"
                    )
        done: dict[str, Results] = {}
        with staging_dir(out) as staged, no_room_named(out, kept="nothing was changed there"):
            for p in prepared:
                where = Path(p.task_name) if len(names) > 1 else Path()
                _reuse_caches(out, p.task_name, staged / where)
                step = (lambda d, t, name=p.task_name: progress(name, d, t)) if progress else None
                done[p.task_name] = write_scoring(
                    p, staged / where, judge=judge, reader=reader, progress=step, final=out / where
                )
            if len(names) > 1:
                write_marker(staged, SCORE_SET, dataset=dataset)
                if summary is not None:
                    summary(done, staged)
            check_score_dir(out)  # still an earlier score (or nothing) now the work is done
            publish_dir(staged, out, overwrite=out.exists())
    return done


def _reuse_caches(out: Path, task_name: str, staged: Path) -> None:
    """Copy the judge's and the answer reader's answers of ``task_name`` from the earlier
    score at ``out`` (one task, or one folder per task) into its staged folder, so a rescore
    asks no prompt twice; the earlier folder itself is only read."""
    import shutil

    from culturebench.eval.answers.model_reader import CACHE
    from culturebench.eval.judge import JUDGMENTS
    from culturebench.eval.run_folder import RUN

    for earlier in (out / task_name, out):
        try:
            info = json.loads((earlier / RUN).read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            continue
        if not isinstance(info, dict) or info.get("mode") != "score" or info.get("task") != task_name:
            continue
        for name in (JUDGMENTS, CACHE):
            if (earlier / name).is_file() and not (earlier / name).is_symlink():
                staged.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(earlier / name, staged / name)
        return


def _version() -> str:
    from culturebench import __version__

    return __version__


# ------------------------------------------------------------------ `eval score`, step by step
MATCHERS = ("deterministic", "llm", "recorded")  # --matcher: the rules, the paper's LLM, its answers


def choose_tasks(
    dataset: str,
    requested: Sequence[str] | None,
    files: Sequence[str | Path],
    layout: str | None = None,
    note: Callable[[str], object] = lambda _line: None,
) -> list[str]:
    """The tasks ``eval score`` scores: those ``requested``, else those Inspect / lm-eval logs
    name, else every task scored from text outputs of dataset rows (not image or analysis
    tasks), less (with a ``layout``) the tasks no given file has a column for (each ``note``d
    as not scored). Every task is checked before any is scored or anything is written: an
    unknown task, or no task left, is a :class:`UsageError`."""
    from culturebench import registry
    from culturebench.eval.tasks import registry as task_registry

    tasks: dict[str, Any] = task_registry().get(dataset) or registry.get(dataset).tasks()
    in_logs = harness_log_tasks(files)
    names = list(
        requested
        or in_logs
        or [name for name, cls in tasks.items() if cls.output_kind == "text" and cls.needs_dataset]
    )
    unknown = [name for name in names if name not in tasks]
    if unknown:
        raise UsageError(
            f"--task {unknown[0]}: {dataset} has no task {unknown[0]!r} (tasks: {', '.join(tasks)})"
        )
    if not requested and not in_logs and layout:  # every task: those no given file answers are listed
        absent = tasks_without_outputs(dataset, names, files, layout)
        names = [n for n in names if n not in absent]
        for name, column in absent.items():
            note(f"{name}: not scored: no given file has its column {column!r}")
        if not names:
            raise UsageError(f"no given file answers any task of {dataset}")
    return names


def check_matcher(matcher: str, judge_model: str | None) -> None:
    """``--matcher`` is one of :data:`MATCHERS`; ``llm`` needs ``--judge-model``."""
    if matcher not in MATCHERS:
        raise UsageError(f"--matcher {matcher!r}: deterministic, llm or recorded")
    if matcher == "llm" and not judge_model:
        raise UsageError("--matcher llm needs --judge-model")


@dataclass(frozen=True)
class ReaderChoice:
    """``--answer-reader model:BACKEND:MODEL`` and its ``--answer-reader-arg`` options."""

    backend: str
    model: str
    base_url: str | None
    model_args: tuple[str, ...]


def answer_reader_choice(spec: str, args: Sequence[str]) -> ReaderChoice | None:
    """``--answer-reader``: None for ``rules`` (the committed-answer rules), else the model that
    reads each answer; a bad spec is a :class:`UsageError`."""
    if spec == "rules":
        if args:
            raise UsageError("--answer-reader-arg needs --answer-reader model:BACKEND:MODEL")
        return None
    kind, _, rest = spec.partition(":")
    backend, _, name = rest.partition(":")
    if kind != "model" or not backend or not name:
        raise UsageError(
            f"--answer-reader {spec!r}: rules, or model:BACKEND:MODEL "
            "(e.g. model:vllm:Qwen/Qwen2.5-7B-Instruct, model:openai:gpt-4o-mini)"
        )
    base_url = next((a.split("=", 1)[1] for a in args if a.startswith("base_url=")), None)
    rest_args = tuple(a for a in args if not a.startswith("base_url="))
    return ReaderChoice(backend, name, base_url, rest_args)


def score_dataset(
    dataset: str, names: Sequence[str], files: Sequence[str | Path], out: str | Path, **options: Any
) -> tuple[dict[str, Results], list[Path]]:
    """:func:`score_tasks` with the dataset's summary files (its ``report`` code part's
    ``summary_files``) written into the staged output: the results per task, and the summary
    files as they lie under ``out`` once it is renamed into place."""
    from culturebench import registry

    hooks = registry.get(dataset).report()
    written: list[Path] = []

    def summary(results: dict[str, Results], folder: Path) -> None:  # into the staged output
        if hooks is not None and hasattr(hooks, "summary_files"):
            written.extend(
                Path(out) / Path(p).relative_to(folder) for p in hooks.summary_files(results, folder)
            )

    return score_tasks(dataset, names, files, out, summary=summary, **options), written
