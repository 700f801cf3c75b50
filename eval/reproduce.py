"""``culturebench eval reproduce <dataset> --model M``: the paper's whole grid
(:mod:`culturebench.eval.grid`) for one model, then the ``eval paper`` report of its runs.

Each cell is an ordinary run folder ``<out>/<cell>``, so a killed reproduction resumes and a
rerun with the same settings does no new work; ``--shard K/N`` runs part K of every cell
(``eval merge`` joins reproduction folders cell by cell). Before any model loads, every cell's
requests are built from the release (:func:`plan`): a cell with nothing to run stops the
reproduction with one line saying what to build first, and ``--plan`` prints only this
count of the work (requests, images, prompt characters and tokens, new tokens, GPU-hours)
and writes it to ``plan.json``.

A reproduction folder follows the package's output policy (:mod:`culturebench.outputs`): it is
new, empty or a reproduction folder of the same dataset (and, for a run, the same model and
shard); never a release, a run folder, a file, a folder of the user's or a folder inside a
release or run. Everything is checked (:func:`check_out`, :func:`check_shard_units`, the plan
inputs) before ``reproduce.json`` or ``plan.json`` is written, so a refusal changes nothing;
both are written atomically, and a new folder appears only whole (:func:`write_into`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from culturebench.errors import CultureBenchError, UsageError
from culturebench.eval.grid import Cell, Grid
from culturebench.outputs import OutputKind, OutputRefused

REPRODUCE = "reproduce.json"  # what a reproduction folder holds: dataset, model, cells, shard
PLAN = "plan.json"  # what `--plan` writes into the reproduction folder
PAPER = "paper"  # the report's folder inside the reproduction folder
CHARS_PER_TOKEN = 4.0  # the estimate used when no tokenizer of the model is at hand
# a reproduction folder's kind (its marker); older folders are recognised by reproduce.json
REPRODUCTION = OutputKind("reproduction", (REPRODUCE,))
_CELL_NAME = re.compile(r"(?!\.\.?$)[A-Za-z0-9._-]+")  # a folder name, never . or ..


@dataclass
class CellPlan:
    """The work of one cell, counted without a model."""

    cell: str
    task: str
    kind: str
    langs: list[str]
    seeds: list[int] | None
    units: int | None  # dishes / questions
    requests: int | None  # prompts (rows x languages x templates)
    generations: int | None  # requests x seeds
    images_per_request: float | None
    prompt_chars: int | None  # over all generations
    prompt_tokens: int | None  # over all generations, by the model's own tokenizer (+ image tokens)
    # the prompt tokens the GPU-hours count: the tokenizer's, else characters / 4, + image tokens
    prompt_tokens_planned: float | None
    max_new_tokens: int
    temperature: float
    gpu_hours: float | None
    skipped: dict[str, int]
    note: str = ""
    runnable: bool = True  # False: the release lacks what the cell needs (note says what)


class Throughput:
    """Tokens (prompt and generated) one GPU processes per second: the user's number, or the
    one ``benchmarks/bench_eval_throughput.py --save FILE`` measured for the backend."""

    def __init__(self, tokens_per_s: float | None, source: str) -> None:
        self.tokens_per_s = tokens_per_s
        self.source = source

    @classmethod
    def choose(
        cls, given: float | None, saved: Path | None, backend: str, *, saved_given: bool = False
    ) -> Throughput:
        """The throughput ``given`` on the command line (checked: positive and finite), else the
        ``backend``'s entry of the benchmark's ``saved`` file (checked the same way; an entry that
        is not ``{"tokens_per_s": N, ...}`` is an error naming the file and key), else none.
        ``saved_given``: the file was named on the command line, so a missing one, or one without
        an entry for ``backend``, is an error."""
        if given is not None:
            return cls(check_rate(given, "--throughput"), "given (--throughput)")
        if saved is None:
            return cls(None, "none given (--throughput TOKENS_PER_S, or the benchmark's --save file)")
        if saved_given and not saved.is_file():
            raise UsageError(f"--throughput-file {saved}: no such file (the benchmark's --save file)")
        if saved.is_file():
            from culturebench.eval.run_folder import read_json_object

            data = read_json_object(saved, "a throughput file")
            entry = data.get(backend)
            if entry is None and saved_given:  # named on the command line: it must hold the backend
                held = ", ".join(sorted(str(k) for k in data)) or "none"
                raise UsageError(
                    f"--throughput-file {saved}: no entry for backend {backend} (its entries: {held}); "
                    f"measure it with benchmarks/bench_eval_throughput.py --save, or give --throughput"
                )
            if entry is not None:
                if not isinstance(entry, dict):
                    raise UsageError(
                        f"{saved}: {backend}: expected an object with tokens_per_s, got {json.dumps(entry)}"
                    )
                rate = check_rate(entry.get("tokens_per_s"), f"{saved}: {backend}.tokens_per_s =")
                return cls(rate, f"measured by the throughput benchmark ({saved}, {entry.get('model', '?')})")
        return cls(None, "none given (--throughput TOKENS_PER_S, or the benchmark's --save file)")

    def hours(self, tokens: float | None) -> float | None:
        """GPU-hours for ``tokens`` (None without a throughput)."""
        return None if tokens is None or not self.tokens_per_s else tokens / self.tokens_per_s / 3600


def check_rate(value: Any, where: str) -> float:
    """A throughput (tokens per second): a positive, finite number; ``where`` names the option
    or the file and key in the one-line error, followed by the value."""
    from culturebench.checked_numbers import checked_number

    return checked_number(value, where, above=0, what="a positive, finite number of tokens per second")


MAX_IMAGE_TOKENS = 1_000_000  # far above any model's tokens per image; a larger value is a typo


def check_image_tokens(value: int) -> int:
    """``--image-tokens``: the prompt tokens one image takes, 0 to :data:`MAX_IMAGE_TOKENS`."""
    if not 0 <= value <= MAX_IMAGE_TOKENS:
        raise UsageError(f"--image-tokens {value}: expected an integer from 0 to {MAX_IMAGE_TOKENS:,}")
    return value


def _tokenizer(model: str | None, revision: str | None, model_args: Mapping[str, Any]) -> Any:
    """The model's tokenizer when it is on this machine (a folder, or the Hub cache), else None;
    never downloads."""
    if not model:
        return None
    try:
        from transformers import AutoTokenizer

        kwargs: dict[str, Any] = {"local_files_only": True, "revision": revision}
        if model_args.get("gguf_file"):
            kwargs["gguf_file"] = model_args["gguf_file"]
        if model_args.get("trust_remote_code"):
            kwargs["trust_remote_code"] = True
        return AutoTokenizer.from_pretrained(model, **kwargs)
    except Exception:  # no tokenizer at hand (or unreadable): the plan estimates from characters
        return None


def _count_tokens(tokenizer: Any, prompts: Sequence[str]) -> int:
    from culturebench.eval.backends.base import Request
    from culturebench.eval.backends.transformers_backend import TransformersBackend

    texts = [TransformersBackend.text_prompt(tokenizer, Request("-", p)) for p in prompts]
    return sum(len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"])


def plan(
    grid: Grid,
    cells: Sequence[Cell],
    *,
    out: Path,
    source: Mapping[str, Any],
    limit: int | None = None,
    first: bool = False,
    model: str | None = None,
    model_revision: str | None = None,
    model_args: Mapping[str, Any] | None = None,
    throughput: Throughput | None = None,
    image_tokens: int = 0,
    progress: Callable[[str], None] | None = None,
    requests_of: dict[str, list[Any]] | None = None,
) -> list[CellPlan]:
    """Count every cell's work from the release, without loading a model. A cell that reads
    another cell's run is counted once that run exists in ``out``. ``image_tokens``: the
    prompt tokens one image takes (model-dependent; added to the prompt tokens). ``limit`` and
    ``first`` choose rows as ``eval run`` does (:func:`~culturebench.eval.dataset_ref.load_run_rows`).
    ``requests_of``: filled with each counted cell's requests (the plan in money counts the
    response cache's expected hits from them)."""
    from culturebench.eval.dataset_ref import load_run_rows, resolve_dataset
    from culturebench.eval.shards import unit_of
    from culturebench.eval.tasks import get_task

    tokenizer = _tokenizer(model, model_revision, model_args or {})
    throughput = throughput or Throughput(None, "none")
    folders = {c.name: out / c.name for c in grid.cells}
    ref = None
    rows_of: dict[tuple[str, str, str | None], list[dict[str, Any]]] = {}
    plans = []
    for cell in cells:
        if progress:
            progress(cell.name)
        waiting = [n for n in cell.needs if not (folders[n] / "results.json").is_file()]
        base: dict[str, Any] = {
            "cell": cell.name, "task": cell.task, "kind": cell.kind, "langs": list(cell.langs),
            "seeds": list(cell.seeds) if cell.seeds else None, "max_new_tokens": cell.max_new_tokens,
            "temperature": cell.temperature,
        }  # fmt: skip
        if waiting:
            plans.append(
                CellPlan(
                    **base,
                    units=None,
                    requests=None,
                    generations=None,
                    images_per_request=None,
                    prompt_chars=None,
                    prompt_tokens=None,
                    prompt_tokens_planned=None,
                    gpu_hours=None,
                    skipped={},
                    note=f"counted once cell {', '.join(waiting)} has run",
                )
            )
            continue
        task = get_task(grid.dataset, cell.task, **cell.options_for(folders))
        rows: list[dict[str, Any]] = []
        if task.needs_dataset:
            if ref is None:
                ref = resolve_dataset(grid.dataset, **source)
            key = (task.config, task.split, task.limit_group)
            if key not in rows_of:
                rows_of[key], _ = load_run_rows(
                    ref, task.config, task.split, limit, first=first, group_field=task.group_field
                )
            rows = rows_of[key]
        requests, skipped = task.build(rows, list(cell.langs))
        if not task.needs_dataset and limit is not None:
            requests = requests[:limit]
        runnable, note = bool(requests), ""
        if not requests:
            note = _nothing_to_run(grid.dataset, cell, len(rows), skipped)
            if task.needs_images and any("image" in why for why in skipped):
                requests, _ = _with_listed_images(task).build(rows, list(cell.langs))
                note += "; counted here as if built with images"
        copies = cell.generations_per_request
        if requests_of is not None:
            requests_of[cell.name] = [r.request for r in requests]
        prompts = [r.request.prompt for r in requests]
        chars = sum(map(len, prompts)) * copies
        tokens = _count_tokens(tokenizer, prompts) * copies if tokenizer is not None and prompts else None
        generations = len(requests) * copies
        images = sum(len(r.request.images) for r in requests)
        if tokens is not None:
            tokens += images * copies * image_tokens
        planned = tokens if tokens is not None else chars / CHARS_PER_TOKEN + images * copies * image_tokens
        work = planned + generations * cell.max_new_tokens
        plans.append(
            CellPlan(
                **base,
                units=len({unit_of(r) for r in requests}),
                requests=len(requests),
                generations=generations,
                images_per_request=round(images / len(requests), 2) if requests else 0.0,
                prompt_chars=chars,
                prompt_tokens=tokens,
                prompt_tokens_planned=planned,
                gpu_hours=throughput.hours(work) if cell.kind in ("text", "vision") else None,
                skipped=dict(skipped),
                note=note,
                runnable=runnable,
            )
        )
    return plans


def _with_listed_images(task: Any) -> Any:
    """The task asking as if the release held every image it lists (one empty placeholder per
    listed image): how many requests and images a release built with images gives."""

    def images(row: dict[str, Any], skipped: dict[str, int]) -> tuple[bytes, ...] | None:
        listed = [i for i in row.get("images") or [] if isinstance(i, dict)]
        return tuple(b"" for _ in listed) or None

    task.images = images
    return task


def _nothing_to_run(dataset: str, cell: Cell, rows: int, skipped: Mapping[str, int]) -> str:
    """What to build first when a cell has no request."""
    if any("image" in reason for reason in skipped):
        return (
            f"no request: the release has no image bytes ({rows} rows, "
            f"{', '.join(f'{n} {why}' for why, n in skipped.items())}); build it with images first: "
            f"culturebench build {dataset} --images ..."
        )
    return f"no request ({rows} rows; skipped: {dict(skipped) or 'none'}); check the release and --limit"


def plan_document(
    dataset: str,
    plans: Sequence[CellPlan],
    throughput: Throughput,
    model: str | None,
    image_tokens: int = 0,
) -> dict[str, Any]:
    """``plan.json``: the cells' counts, totals and what the GPU-hours assume."""
    tokenizer = any(p.prompt_tokens is not None for p in plans)  # the model's own was at hand

    def total(field: str) -> float:
        return sum(getattr(p, field) or 0 for p in plans)

    return {
        "dataset": dataset,
        "model": model,
        "tokens": "the model's tokenizer" if tokenizer else f"estimated as characters / {CHARS_PER_TOKEN:g}",
        "tokens_counted": tokenizer,
        "image_tokens_per_image": image_tokens,
        "throughput_tokens_per_s": throughput.tokens_per_s,
        "throughput_source": throughput.source,
        "gpu_hours_assume": (
            "every generation runs to max_new_tokens; prompt and new tokens at the throughput given"
        ),
        "cells": [asdict(p) for p in plans],
        "total": {
            "requests": int(total("requests")),
            "generations": int(total("generations")),
            "prompt_tokens": int(total("prompt_tokens")) if tokenizer else None,
            "prompt_chars": int(total("prompt_chars")),
            "gpu_hours": round(total("gpu_hours"), 2) if throughput.tokens_per_s else None,
        },
    }


def check_runnable(plans: Sequence[CellPlan]) -> None:
    """Stop before any model loads when a cell would produce no sample."""
    for p in plans:
        if not p.runnable:
            raise CultureBenchError(f"cell {p.cell} ({p.task}): {p.note}")


def run_cells(
    grid: Grid,
    cells: Sequence[Cell],
    backend: Any,
    out: Path,
    *,
    source: Mapping[str, Any],
    limit: int | None = None,
    batch_size: int = 8,
    shard: Any = None,
    on_cell: Callable[[Cell], Callable[[int, int], None] | None] | None = None,
    first: bool = False,
    response_cache: bool = True,
    on_cache: Callable[[Any], None] | None = None,
) -> list[Path]:
    """Run (or resume) each cell into ``out/<cell>`` with the cell's sampling settings (each
    run's coverage records them, where they come from and which are assumed); returns the cell
    folders. The backend loads once and serves every cell. ``on_cache``: told each cell's
    :class:`~culturebench.eval.response_cache.CacheCount` (when the cache is on)."""
    from culturebench.eval.runner import run_eval

    folders = {c.name: out / c.name for c in grid.cells}
    base_sampling = backend.sampling
    done = []
    try:
        for cell in cells:
            if hasattr(base_sampling, "max_new_tokens"):  # text and vision models
                backend.sampling = replace(
                    base_sampling, max_new_tokens=cell.max_new_tokens, temperature=cell.temperature
                )
            run_eval(
                grid.dataset,
                cell.task,
                backend,
                folders[cell.name],
                **source,
                langs=list(cell.langs),
                limit=limit,
                batch_size=batch_size,
                progress=on_cell(cell) if on_cell else None,
                task_options=cell.options_for(folders),
                seeds=list(cell.seeds) if cell.seeds else None,
                shard=shard,
                first=first,
                sampling_source=cell.sampling_source(grid.path.name),
                response_cache=response_cache,
                on_cache=on_cache,
            )
            done.append(folders[cell.name])
    finally:
        backend.sampling = base_sampling
    return done


def check_shard_units(plans: Sequence[CellPlan], shard: Any) -> None:
    """Refuse ``--shard K/N`` when a counted cell has fewer than N units (dishes, questions):
    that cell's split would leave shards with nothing to do and could never be merged. Names
    the cell, its units and the largest accepted count (the smallest cell's units). A cell
    counted only once its input cell has run is checked when it runs."""
    from culturebench.eval.shards import check_count

    counted = [p for p in plans if p.units]  # None: not counted yet; 0: refused as not runnable
    if shard is None or not counted:
        return
    smallest = min(counted, key=lambda p: p.units or 0)
    check_count(shard, smallest.units or 0, f"cell {smallest.cell!r}")


def _plan_dataset(folder: Path) -> str | None:
    """The dataset of the ``plan.json`` that ``--plan`` wrote into ``folder`` (None when there is
    none, or the file is not a plan)."""
    try:
        data = json.loads((folder / PLAN).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    keys = ("dataset", "cells", "throughput_source")
    if isinstance(data, dict) and all(k in data for k in keys) and isinstance(data["dataset"], str):
        return data["dataset"]
    return None


def _same_model(recorded: Any, given: str) -> bool:
    """Whether the model recorded in ``reproduce.json`` is the one given (paths compared resolved)."""
    if recorded == given:
        return True
    if isinstance(recorded, str) and Path(recorded).exists() and Path(given).exists():
        return Path(recorded).resolve() == Path(given).resolve()
    return False


def check_out(
    out: Path,
    dataset: str,
    *,
    run: bool = False,
    model: str | None = None,
    shard: Any = None,
    cells: Sequence[str] = (),
    flag: str = "--out",
) -> None:
    """Refuse ``out`` as a reproduction folder unless it is new, empty, or a reproduction folder
    of ``dataset`` (its marker, ``reproduce.json``, or the ``plan.json`` of ``--plan``): never a
    file, a link, a release or run folder, a folder of the user's or a folder inside a release or
    run, and never a folder this process cannot write (read-only). With ``run`` (not ``--plan``)
    the folder's ``reproduce.json`` must also name the same ``model`` and ``shard``, and each of
    ``cells`` already there must be a run folder of that shard. One line each; nothing written."""
    from culturebench.eval.run_folder import RUN, check_run_dir, check_shard, read_run
    from culturebench.outputs import (
        check_folder_path,
        check_parents,
        check_writable,
        kind_of,
        protected_folder,
    )

    out = check_folder_path(out, flag)
    what = protected_folder(out) if out.is_dir() else None
    if what:
        raise OutputRefused(
            f"{flag} {out} is a {what}; write the reproduction elsewhere (nothing was written)"
        )
    check_parents(out, flag)
    check_writable(out, flag)
    if not out.is_dir() or not any(out.iterdir()):
        return
    record = read_record(out, strict=True)
    found = kind_of(out, [REPRODUCTION])
    planned = _plan_dataset(out)
    if found != REPRODUCTION.name and planned is None:
        held = f"a {found} output" if found else "files culturebench did not write"
        raise OutputRefused(
            f"{flag} {out} holds {held}; refusing to write into it (give a new or empty folder, or a "
            "reproduction folder)"
        )
    recorded = (record or {}).get("dataset") or planned
    if recorded and recorded != dataset:
        raise OutputRefused(
            f"{flag} {out} holds a reproduction of {recorded}, not {dataset}; give another {flag}"
        )
    if not run:
        return
    if record is not None:
        was = record.get("shard")
        if was != (str(shard) if shard else None):
            now = f"shard {shard}" if shard else "the whole grid"
            held = f"shard {was}" if was else "the whole grid (no --shard)"
            hint = f"--shard {was}" if was else "no --shard"
            raise OutputRefused(
                f"{flag} {out} holds {held} (reproduce.json); resume it with {hint}, or give another "
                f"{flag} for {now}"
            )
        if model and record.get("model") and not _same_model(record["model"], model):
            raise OutputRefused(
                f"{flag} {out} holds a reproduction of the model {record['model']} (reproduce.json), not "
                f"{model}; give another {flag}"
            )
    if not shard:  # the paper report is replaced at the end: our own report, or nothing there yet
        from culturebench.eval.paper_report import PAPER_REPORT
        from culturebench.outputs import check_output

        check_output(out / PAPER, PAPER_REPORT, overwrite=True)
    wanted = {"shard": shard.to_dict() if shard else None}
    for cell in cells:
        folder = out / cell
        check_run_dir(folder)  # a file or a folder of the user's where a cell goes: refused
        if (folder / RUN).is_file():
            check_shard(read_run(folder), wanted, folder)


def write_into(out: Path, dataset: str, files: Mapping[str, str], **check: Any) -> None:
    """Write ``files`` (name -> text) into the reproduction folder ``out`` under its writer lock,
    after :func:`check_out` (with ``check``'s arguments) passes again under the lock. Each text
    is refused (nothing written) when it holds a credential; each file is replaced atomically,
    and a new or empty ``out`` is staged and renamed into place, so a failure part-way leaves
    nothing half-written."""
    from culturebench.atomic import publish_dir, staging_dir, write_text_atomic
    from culturebench.outputs import kind_of, write_marker, writer_lock
    from culturebench.secrets import refuse_credentials

    out = Path(out)
    for name, text in files.items():
        refuse_credentials(out / name, text, formats=True)
    with writer_lock(out):
        check_out(out, dataset, **check)
        if not out.is_dir() or not any(out.iterdir()):
            with staging_dir(out) as staged:
                for name, text in files.items():
                    write_text_atomic(staged / name, text)
                write_marker(staged, REPRODUCTION, dataset=dataset)
                publish_dir(staged, out, overwrite=out.is_dir())
            return
        for name, text in files.items():
            write_text_atomic(out / name, text)
        if kind_of(out) != REPRODUCTION.name:  # a folder of an older version: mark it now
            write_marker(out, REPRODUCTION, dataset=dataset)


def record_text(dataset: str, model: str | None, cells: Sequence[str], shard: Any) -> dict[str, Any]:
    """The ``reproduce.json`` record: the dataset, the model, the cells and the shard."""
    return {"dataset": dataset, "model": model, "cells": list(cells), "shard": str(shard) if shard else None}


def write_record(
    out: Path,
    dataset: str,
    model: str | None,
    cells: Sequence[str],
    shard: Any,
    check: Mapping[str, Any] | None = None,
    prepare: Callable[[], Any] | None = None,
) -> None:
    """``reproduce.json``: which grid cells this folder holds (``eval merge`` reads it); the cells
    of an earlier record are kept. Written only when it changes, through :func:`write_into`
    (``check``: the arguments of :func:`check_out` besides the dataset). ``prepare`` runs just
    before a change is written (the model's load: a model that cannot load fails before the
    folder changes; a rerun with nothing new loads nothing)."""
    from culturebench.jsonsafe import json_text

    old = read_record(out) or {}
    names = list(dict.fromkeys([*old.get("cells", []), *cells]))
    record = record_text(dataset, model, names, shard)
    if old == record:
        return  # nothing to change: the folder keeps every byte
    if prepare is not None:
        prepare()
    write_into(out, dataset, {REPRODUCE: json_text(record, indent=2, sort_keys=True)}, **(check or {}))


def read_record(folder: Path, *, strict: bool = False) -> dict[str, Any] | None:
    """A reproduction folder's ``reproduce.json`` (None when the folder is not one). A corrupt
    file is a one-line error; with ``strict``, so is one that is not a record (no dataset, cells
    that are not cell names, a shard that is not ``K/N``)."""
    from culturebench.eval.run_folder import read_json_object

    path = Path(folder) / REPRODUCE
    if not path.is_file():
        return None
    data = read_json_object(path, "a reproduction folder")  # corrupt: a one-line error
    cells = data.get("cells")
    good = (
        isinstance(data.get("dataset"), str)
        and isinstance(cells, list)
        and all(isinstance(c, str) and _CELL_NAME.fullmatch(c) for c in cells)
        and (data.get("shard") is None or isinstance(data.get("shard"), str))
        and (data.get("model") is None or isinstance(data.get("model"), str))
    )
    if good:
        return data
    if strict:
        raise CultureBenchError(
            f"{path}: not a reproduction record (needs dataset, cells: a list of cell names, shard)"
        )
    return None


def report_folders(out: Path, grid: Grid) -> list[Path]:
    """The finished, whole (not shard) cell runs in ``out``, for the paper report."""
    from culturebench.eval.run_folder import RESULTS, read_json_object

    found = []
    for cell in grid.cells:
        folder = out / cell.name
        finished = (folder / RESULTS).is_file()
        if finished and not read_json_object(folder / RESULTS, "a finished run").get("shard"):
            found.append(folder)
    return found


# ------------------------------------------------------------------ the workflow, step by step
@dataclass
class Reproduction:
    """A reproduction planned and checked by :func:`prepare`, before any model loads: the
    grid's chosen cells, the folder, the shard, each cell's counted work (``plans``) and the
    plan document (``document``; ``priced``: it holds the money section)."""

    dataset: str
    grid: Grid
    cells: list[Cell]
    out: Path
    shard: Any
    check: dict[str, Any]
    plans: list[CellPlan]
    document: dict[str, Any]
    priced: bool

    @property
    def cell_names(self) -> list[str]:
        return [c.name for c in self.cells]


DEFAULT_OUT = Path("out/reproduce")  # the reproduction folder is DEFAULT_OUT/<dataset> by default
DEFAULT_THROUGHPUT_FILE = Path("out/bench/throughput.json")  # the throughput benchmark's --save


def prepare(
    dataset: str,
    *,
    out: Path | None,
    source: Mapping[str, Any],
    model: str | None,
    model_revision: str | None,
    model_args: Callable[[], Mapping[str, Any]],
    backend: str,
    kinds: Sequence[str],
    only: Sequence[str] = (),
    skip: Sequence[str] = (),
    plan_only: bool = False,
    limit: int | None = None,
    first: bool = False,
    shard: str | None = None,
    throughput: float | None = None,
    throughput_file: Path | None = None,
    image_tokens: int = 0,
    price: str | None = None,
    batch_discount: float = 0.5,
    rpm: float | None = None,
    tpm: float | None = None,
    cache_holds: Callable[[], Any] = lambda: None,
    counting: Callable[[int], Callable[[str], None] | None] | None = None,
) -> Reproduction:
    """Every check and count of ``eval reproduce`` before a model loads, in order: the grid's
    cells (``only``/``skip``/``kinds``), the shard, ``image_tokens``, the reproduction folder
    (:func:`check_out`), the backend's options (``model_args``, called once the folder passed),
    the throughput, the price and rate limits; then every cell's work is counted from the
    release (:func:`plan`; ``counting(number of cells)`` returns the per-cell progress) and,
    with a price or a rate limit, priced (``cache_holds``: what the response cache holds
    for the model, or None). Raises the package's errors; writes nothing."""
    from culturebench.eval.grid import load_grid
    from culturebench.eval.plan_cost import Price, RateLimit, money_section
    from culturebench.eval.shards import Shard

    grid = load_grid(dataset)
    out = out or DEFAULT_OUT / dataset
    cells = grid.select(only=list(only), skip=list(skip), kinds=tuple(kinds))
    part = Shard.parse(shard) if shard is not None else None
    check_image_tokens(image_tokens)
    # the reproduction folder, checked before any work and again before anything is written
    check: dict[str, Any] = {
        "run": not plan_only,
        "model": model,
        "shard": part,
        "cells": [c.name for c in cells],
    }
    check_out(out, dataset, **check)
    options = model_args() if model else {}
    saved = throughput_file or DEFAULT_THROUGHPUT_FILE
    rate = Throughput.choose(throughput, saved, backend, saved_given=throughput_file is not None)
    cost = Price.parse(price, batch_discount) if price else None
    limits = RateLimit(rpm, tpm) if rpm is not None or tpm is not None else None
    requests_of: dict[str, list[Any]] = {}
    plans = plan(
        grid, cells, out=out, source=source, limit=limit, first=first, model=model,
        model_revision=model_revision, model_args=options, throughput=rate, image_tokens=image_tokens,
        requests_of=requests_of, progress=counting(len(cells)) if counting else None,
    )  # fmt: skip
    check_shard_units(plans, part)  # N shards need N units in every cell
    document = plan_document(dataset, plans, rate, model, image_tokens)
    priced = cost is not None or limits is not None
    if priced:
        money_section(cells, document, requests_of, cost, limits, cache_holds())
    return Reproduction(dataset, grid, cells, out, part, check, plans, document, priced)


def write_plan(reproduction: Reproduction) -> Path:
    """``OUT/plan.json``, through the reproduction folder's output policy (checked again under
    its writer lock; refused, with nothing written, when it would hold a credential: a plan
    names the model and its options)."""
    from culturebench.jsonsafe import json_text

    r = reproduction
    write_into(r.out, r.dataset, {PLAN: json_text(r.document, indent=2)}, **r.check)
    return r.out / PLAN


def cache_holds(cache: bool, make_backend: Callable[[], Any] | None, seed: int) -> Any:
    """What the response cache holds for the model ``make_backend`` makes
    (``plan_cost.held_in_cache``), or None when the cache is off, no text model is named
    (``make_backend`` None), or the model cannot be described here."""
    from culturebench.eval.plan_cost import held_in_cache
    from culturebench.eval.response_cache import open_cache

    store = open_cache(cache)
    if store is None or make_backend is None:
        return None
    try:
        backend = make_backend()
        if not backend.CACHEABLE:
            return None
        return held_in_cache(backend.describe(), store, int(seed))
    except (CultureBenchError, OSError, ImportError):
        return None


@contextmanager
def writing(reproduction: Reproduction, model: str | None, backend: Any) -> Iterator[None]:
    """The reproduction folder while its cells run: its writer lock held; a first attempt that
    gets no answer at all leaves it as it was (absent stays absent); ``reproduce.json``
    written first, after the model loads (a model that cannot load fails before the folder
    changes; nothing loads for a rerun with nothing new)."""
    from culturebench.eval.run_folder import holds_work
    from culturebench.eval.runner import RUN_RECORDS
    from culturebench.outputs import MARKER, kept_only_if_used, writer_lock

    r = reproduction
    records = (*RUN_RECORDS, REPRODUCE, MARKER)  # what a reproduction writes before its first answer
    with writer_lock(r.out), kept_only_if_used(r.out, lambda f: holds_work(f, records)):
        write_record(r.out, r.dataset, model, r.cell_names, r.shard, check=r.check, prepare=backend.load)
        yield


def write_report(reproduction: Reproduction, source: Mapping[str, Any]) -> tuple[list[Path], dict[str, Any]]:
    """The ``eval paper`` report of a finished (unsharded) reproduction into ``OUT/paper``:
    the cell run folders it read, and the report."""
    from culturebench.eval.paper_report import build_report

    r = reproduction
    folders = report_folders(r.out, r.grid)
    return folders, build_report(r.dataset, folders, r.out / PAPER, **source, overwrite=True)
