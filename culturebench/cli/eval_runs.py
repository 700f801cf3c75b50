"""``culturebench eval run``, ``eval reproduce`` (a paper's grid, or its plan) and ``eval merge``."""

from __future__ import annotations

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
    from culturebench.eval.grid import DEFAULT_KINDS

    with progress_bar() as bar:

        def counting(total: int):
            job = bar.add_task("counting the work", total=total)
            return lambda name: bar.update(job, advance=1, description=f"counting {name}")

        text_model = engine.model and not engine.makes_images
        planned = rep.prepare(
            dataset, out=out, source=source.as_kwargs(), model=engine.model,
            model_revision=engine.model_revision, model_args=engine.checked_model_args,
            backend=engine.backend, kinds=kind or DEFAULT_KINDS["image" if engine.makes_images else "text"],
            only=names_list(only), skip=names_list(skip), plan_only=plan_only, limit=limit, first=first,
            shard=shard, throughput=throughput, throughput_file=throughput_file, image_tokens=image_tokens,
            price=price, batch_discount=batch_discount, rpm=rpm, tpm=tpm, counting=counting,
            cache_holds=lambda: rep.cache_holds(cache, engine.make if text_model else None, engine.seed),
        )  # fmt: skip
    print_plan_table(planned.document, planned.grid)
    if planned.priced:
        print_plan_money(planned.document)
    if plan_only:
        console.print(f"wrote {rep.write_plan(planned)}")
        return
    rep.check_runnable(planned.plans)
    if not engine.model:
        raise UsageError(f"eval reproduce {dataset} needs --model (or --plan)")
    backend = engine.make()
    out = planned.out
    counted: list[CacheCount] = []
    stopped = on_stop("eval reproduce", resumable(out))
    with rep.writing(planned, engine.model, backend), stopped, progress_bar() as bar:

        def on_cell(cell):
            job = bar.add_task(f"{dataset}/{cell.name}", total=None)
            return lambda done, total: bar.update(job, completed=done, total=total)

        rep.run_cells(
            planned.grid, planned.cells, backend, out, source=source.as_kwargs(), limit=limit,
            batch_size=engine.batch_size, shard=planned.shard, on_cell=on_cell, first=first,
            response_cache=cache, on_cache=counted.append,
        )  # fmt: skip
    print_cache_count(counted)
    if planned.shard:
        console.print(
            f"shard {planned.shard} of {len(planned.cells)} cells in {out}; when every shard is done: "
            f"culturebench eval merge SHARD_FOLDERS... --out MERGED, then this command with --out MERGED"
        )
        return
    folders, report = rep.write_report(planned, source.as_kwargs())
    counts = "; ".join(f"{n} {s}" for s, n in report["status_counts"].items() if n)  # statuses hold commas
    console.print(f"{len(folders)} cell runs; paper report: {len(report['items'])} items ({counts}); "
                  f"wrote {out / rep.PAPER / 'paper_report.md'}")  # fmt: skip


def resumable(out: Path) -> str:
    """What a stopped run leaves, and how to go on."""
    return f"the samples written so far are kept in {out}; rerun the same command to resume"


def print_cache_count(counted: list[CacheCount]) -> None:
    """One line on what the response cache gave this command's runs (its only record: the
    run folders are the same bytes with or without it); nothing when it was off or nothing was
    generated (a finished run re-aggregated)."""
    from culturebench.eval.response_cache import CacheCount

    total = CacheCount.total(counted)
    if total.hits + total.sent:
        console.print(total.line())


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
