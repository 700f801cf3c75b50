"""``culturebench eval run``, ``eval reproduce`` (a paper's grid, or its plan) and ``eval merge``."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from culturebench.cli.commands import CommandSet
from culturebench.cli.errors import on_stop
from culturebench.cli.options import (
    DEFAULT_ENGINE,
    DEFAULT_SOURCE,
    CacheOption,
    DatasetSource,
    EngineChoice,
    FirstOption,
    ShardOption,
    deprecated_alias,
    with_dataset_source,
    with_engine,
)
from culturebench.cli.output import (
    console,
    print_headlines,
    print_limit,
)
from culturebench.cli.parsing import names_list, parse_seeds, parse_shard, parse_task_options
from culturebench.cli.plan_output import print_plan_money, print_plan_table
from culturebench.cli.progress import progress_bar
from culturebench.errors import UsageError

if TYPE_CHECKING:
    from culturebench.eval.response_cache import CacheCount

commands = CommandSet()


@commands.command("run")
@with_dataset_source
@with_engine(image=True)
@deprecated_alias("--seeds", "seeds")
def eval_run_cmd(
    dataset: Annotated[str, typer.Argument(help="Dataset name (see `culturebench list`).")],
    task: Annotated[str, typer.Option(help="Task name (see `culturebench eval list`).")],
    source: DatasetSource = DEFAULT_SOURCE,
    engine: EngineChoice = DEFAULT_ENGINE,
    lang: Annotated[list[str] | None, typer.Option(help="Language(s) to prompt in (default: all).")] = None,
    limit: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Only N rows, spread over the dataset's reporting groups (continent, country, "
            "category; round-robin, deterministic); with --first the first N rows.",
        ),
    ] = None,
    first: FirstOption = False,
    out: Annotated[Path, typer.Option(help="Output folder (resumes if it holds the same run).")] = Path(
        "out/runs/eval"
    ),
    seeds: Annotated[
        str | None,
        typer.Option(
            "--repeat-seeds",
            help="Generate every prompt once per seed, e.g. 0,1,2,3,4 (the WWD paper: 5 seeds).",
        ),
    ] = None,
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option",
            help="Task option KEY=VALUE (repeatable), e.g. --option generations=runs/gen "
            "--option repeats=3. `culturebench eval list` shows each task's options.",
        ),
    ] = None,
    shard: ShardOption = None,
    cache: CacheOption = True,
) -> None:
    """Run (or resume) one evaluation; writes run.json, samples.jsonl, results.json, report.md.
    Text-to-image tasks store one PNG per (item, seed) under images/. With --shard K/N only
    the K-th of N parts (cut by dish or question); `eval merge` joins the parts."""
    from culturebench.eval.runner import run_eval
    from culturebench.eval.tasks import AnalysisTask
    from culturebench.eval.tasks import task_class as find_task

    task_options = parse_task_options(option or [])
    seed_list = parse_seeds(seeds)
    part = parse_shard(shard)
    backend = None
    if issubclass(find_task(dataset, task), AnalysisTask):
        if engine.model:  # the analysis's own model (e.g. CLIP), passed as a task option
            task_options.setdefault("model", engine.model)
            if engine.model_revision:
                task_options.setdefault("model_revision", engine.model_revision)
    elif not engine.model:
        raise UsageError(f"{dataset}/{task} needs --model")
    else:
        backend = engine.make()
    counted: list[CacheCount] = []
    with on_stop("eval run", resumable(out)), progress_bar() as bar:
        job = bar.add_task(f"{dataset}/{task}", total=None)
        results = run_eval(
            dataset,
            task,
            backend,
            out,
            **source.as_kwargs(),
            langs=lang,
            limit=limit,
            batch_size=engine.batch_size,
            progress=lambda done, total: bar.update(job, completed=done, total=total),
            task_options=task_options,
            seeds=seed_list,
            shard=part,
            first=first,
            response_cache=cache,
            on_cache=counted.append,
        )
    print_cache_count(counted)
    what = f"{results['samples']} samples" + (f" (shard {part})" if part else "")
    print_limit(results)
    console.print(f"{what}; results: {out / 'results.json'}; report: {out / 'report.md'}")
    print_headlines(f"{dataset}/{task}", results["metrics"])


@commands.command("reproduce")
@with_dataset_source
@with_engine(image=True)
def eval_reproduce_cmd(
    dataset: Annotated[str, typer.Argument(help="Dataset whose paper to reproduce.")],
    source: DatasetSource = DEFAULT_SOURCE,
    engine: EngineChoice = DEFAULT_ENGINE,
    out: Annotated[
        Path | None, typer.Option(help="Reproduction folder: one run folder per cell, paper/ report.")
    ] = None,
    only: Annotated[
        str | None, typer.Option(help="Only these cells or tasks, e.g. country,utensils.")
    ] = None,
    skip: Annotated[str | None, typer.Option(help="Leave out these cells or tasks.")] = None,
    kind: Annotated[
        list[str] | None,
        typer.Option(help="Cells for this kind of model: text, vision, image (default: the backend's)."),
    ] = None,
    plan_only: Annotated[
        bool,
        typer.Option("--plan", help="Count the work (requests, tokens, GPU-hours) and stop: no model loads."),
    ] = False,
    limit: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Only N rows of every cell (a smoke run), spread over the dataset's reporting groups; "
            "with --first the first N rows.",
        ),
    ] = None,
    first: FirstOption = False,
    shard: ShardOption = None,
    throughput: Annotated[
        float | None,
        typer.Option(
            help="Tokens (prompt + new) one GPU processes per second, for --plan's GPU-hours "
            "(positive, finite)."
        ),
    ] = None,
    throughput_file: Annotated[
        Path | None,
        typer.Option(
            help="The throughput benchmark's --save file, read when --throughput is not given "
            "[default: out/bench/throughput.json, when it exists]."
        ),
    ] = None,
    image_tokens: Annotated[
        int,
        typer.Option(
            help="--plan: prompt tokens one image takes (576 for 336px LLaVA; model-dependent; "
            "0 to 1,000,000)."
        ),
    ] = 576,
    price: Annotated[
        str | None,
        typer.Option(
            help="--plan: dollars per million input and output tokens, e.g. 2.50,10: cost per cell and in "
            "total, with the response cache's expected hits and with a batch endpoint."
        ),
    ] = None,
    batch_discount: Annotated[
        float,
        typer.Option(min=0, max=0.99, help="--plan --price: the batch endpoint's discount (0.5: half)."),
    ] = 0.5,
    rpm: Annotated[
        float | None, typer.Option(min=1, help="--plan: the provider's requests per minute.")
    ] = None,
    tpm: Annotated[
        float | None, typer.Option(min=1, help="--plan: the provider's tokens per minute.")
    ] = None,
    cache: CacheOption = True,
) -> None:
    """Run the paper's whole grid for one model (every task, language, template and seed the
    paper used, with its sampling; `grid:` in the dataset's paper.yaml), then write the
    `eval paper` report with the model beside the paper's models. Cells resume; a rerun does
    no new work. The grid's sampling replaces --max-new-tokens and --temperature."""
    from culturebench.eval import reproduce as rep
    from culturebench.eval.grid import DEFAULT_KINDS, load_grid
    from culturebench.eval.plan_cost import Price, RateLimit, money_section

    grid = load_grid(dataset)
    out = out or Path("out/reproduce") / dataset
    kinds = tuple(kind or DEFAULT_KINDS["image" if engine.makes_images else "text"])
    cells = grid.select(only=names_list(only), skip=names_list(skip), kinds=kinds)
    part = parse_shard(shard)
    rep.check_image_tokens(image_tokens)
    # the reproduction folder, checked before any work and again before anything is written
    check = {"run": not plan_only, "model": engine.model, "shard": part, "cells": [c.name for c in cells]}
    rep.check_out(out, dataset, **check)
    model_args = engine.checked_model_args() if engine.model else {}
    saved = throughput_file or Path("out/bench/throughput.json")
    rate = rep.Throughput.choose(throughput, saved, engine.backend, saved_given=throughput_file is not None)
    cost = Price.parse(price, batch_discount) if price else None
    limits = RateLimit(rpm, tpm) if rpm is not None or tpm is not None else None
    requests_of: dict[str, list] = {}
    with progress_bar() as bar:
        job = bar.add_task("counting the work", total=len(cells))
        plans = rep.plan(
            grid, cells, out=out, source=source.as_kwargs(), limit=limit, first=first, model=engine.model,
            model_revision=engine.model_revision, model_args=model_args, throughput=rate,
            image_tokens=image_tokens, requests_of=requests_of,
            progress=lambda name: bar.update(job, advance=1, description=f"counting {name}"),
        )  # fmt: skip
    rep.check_shard_units(plans, part)  # N shards need N units in every cell
    document = rep.plan_document(dataset, plans, rate, engine.model, image_tokens)
    in_money = cost is not None or limits is not None
    if in_money:
        money_section(cells, document, requests_of, cost, limits, _cache_holds(engine, cache))
    print_plan_table(document, grid)
    if in_money:
        print_plan_money(document)
    if plan_only:
        _write_plan(out, document, check)
        console.print(f"wrote {out / rep.PLAN}")
        return
    rep.check_runnable(plans)
    if not engine.model:
        raise UsageError(f"eval reproduce {dataset} needs --model (or --plan)")
    backend = engine.make()
    names = [c.name for c in cells]
    from culturebench.eval.run_folder import holds_work
    from culturebench.eval.runner import RUN_RECORDS
    from culturebench.outputs import MARKER, kept_only_if_used, writer_lock

    records = (*RUN_RECORDS, rep.REPRODUCE, MARKER)  # what a reproduction writes before its first answer
    counted: list[CacheCount] = []

    with contextlib.ExitStack() as held:
        held.enter_context(writer_lock(out))
        # a first attempt that gets no answer at all leaves --out as it was (absent stays absent)
        held.enter_context(kept_only_if_used(out, lambda f: holds_work(f, records)))
        # a model that cannot load fails before reproduce.json is written (nothing loads for a rerun)
        rep.write_record(out, dataset, engine.model, names, part, check=check, prepare=backend.load)
        with on_stop("eval reproduce", resumable(out)), progress_bar() as bar:

            def on_cell(cell):
                job = bar.add_task(f"{dataset}/{cell.name}", total=None)
                return lambda done, total: bar.update(job, completed=done, total=total)

            rep.run_cells(
                grid, cells, backend, out, source=source.as_kwargs(), limit=limit,
                batch_size=engine.batch_size, shard=part, on_cell=on_cell, first=first,
                response_cache=cache, on_cache=counted.append,
            )  # fmt: skip
    print_cache_count(counted)
    if part:
        console.print(
            f"shard {part} of {len(cells)} cells in {out}; when every shard is done: "
            f"culturebench eval merge SHARD_FOLDERS... --out MERGED, then this command with --out MERGED"
        )
        return
    _reproduce_report(dataset, grid, out, source)


def resumable(out: Path) -> str:
    """What a stopped run leaves, and how to go on."""
    return f"the samples written so far are kept in {out}; rerun the same command to resume"


def print_cache_count(counted: list[CacheCount]) -> None:
    """One line on what the response cache gave this command's runs (its only record: the
    run folders are the same bytes with or without it); nothing when it was off or nothing was
    generated (a finished run re-aggregated)."""
    from culturebench.eval.response_cache import CacheCount

    total = CacheCount()
    for count in counted:
        total.add(count.hits, count.hits + count.sent)
    if total.hits + total.sent:
        console.print(total.line())


def _cache_holds(engine, cache: bool):
    """What the response cache holds for this model (``plan_cost.held_in_cache``), or None
    when the cache is off, no text model is named, or the model cannot be described here."""
    from culturebench.errors import CultureBenchError
    from culturebench.eval.plan_cost import held_in_cache
    from culturebench.eval.response_cache import open_cache

    store = open_cache(cache)
    if store is None or not engine.model or engine.makes_images:
        return None
    try:
        backend = engine.make()
        if not backend.CACHEABLE:
            return None
        return held_in_cache(backend.describe(), store, int(engine.seed))
    except (CultureBenchError, OSError, ImportError):
        return None


def _write_plan(out: Path, document: dict, check: dict) -> None:
    """``OUT/plan.json``, through the reproduction folder's output policy (checked again under
    its writer lock; refused, with nothing written, when it would hold a credential: a plan
    names the model and its options)."""
    from culturebench.eval.reproduce import PLAN, write_into
    from culturebench.jsonsafe import json_text

    write_into(out, document["dataset"], {PLAN: json_text(document, indent=2)}, **check)


def _reproduce_report(dataset: str, grid, out: Path, source: DatasetSource) -> None:
    from culturebench.eval.paper_report import build_report
    from culturebench.eval.reproduce import PAPER, report_folders

    folders = report_folders(out, grid)
    report = build_report(dataset, folders, out / PAPER, **source.as_kwargs(), overwrite=True)
    counts = "; ".join(f"{n} {s}" for s, n in report["status_counts"].items() if n)  # statuses hold commas
    console.print(f"{len(folders)} cell runs; paper report: {len(report['items'])} items ({counts}); "
                  f"wrote {out / PAPER / 'paper_report.md'}")  # fmt: skip


@commands.command("merge")
def eval_merge_cmd(
    folders: Annotated[list[Path], typer.Argument(help="The finished shard folders (every part 1..N once).")],
    out: Annotated[Path, typer.Option(help="The merged run folder (new or empty).")],
) -> None:
    """Join the N shards of one run (`eval run --shard K/N`) into the folder one process
    writes: same samples, results and report, byte for byte."""
    from culturebench.eval.merge import merge_reproductions, merge_shards
    from culturebench.eval.reproduce import REPRODUCE, read_record

    records = [read_record(f, strict=True) for f in folders]  # corrupt: one line
    if any(records) and not all(records):
        whole, part = folders[records.index(None)], folders[[bool(r) for r in records].index(True)]
        line = (
            f"{part} is a reproduction folder ({REPRODUCE}), {whole} is not; merge the shard folders "
            "of one `eval reproduce --shard` or of one `eval run --shard`"
        )
        raise UsageError(f"{line}")
    if all(records):
        cells = merge_reproductions(folders, out)
        console.print(
            f"merged {len(folders)} shards of {len(cells)} cells into {out}; the paper report: "
            f"culturebench eval reproduce DATASET --model M --out {out}"
        )
        return
    results = merge_shards(folders, out)
    console.print(
        f"merged {len(folders)} shards: {results['samples']} samples; results: {out / 'results.json'}; "
        f"report: {out / 'report.md'}"
    )
    print_headlines(
        f"{results['provenance']['dataset']['dataset']}/{results['provenance']['task']}", results["metrics"]
    )
