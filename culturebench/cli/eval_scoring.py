"""``culturebench eval score``, ``eval compare``, ``eval report`` and ``eval paper``: what a run's
answers are worth, beside another run or the paper."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from culturebench.cli.commands import CommandSet
from culturebench.cli.errors import (
    EXIT_BAD_INPUT,
    FileOverwriteOption,
    claim_file,
    or_exit,
)
from culturebench.cli.options import (
    DEFAULT_SOURCE,
    DatasetSource,
    EngineChoice,
    model_name,
    with_dataset_source,
)
from culturebench.cli.output import (
    console,
    err_console,
    fit_table,
    print_fitted,
    print_headlines,
)
from culturebench.cli.parsing import parse_inputs, parse_task_options
from culturebench.cli.progress import progress_bar
from culturebench.eval.backends import DEFAULT_BACKEND

commands = CommandSet()


@commands.command("score")
@with_dataset_source
def eval_score_cmd(
    dataset: Annotated[str, typer.Argument(help="Dataset name (see `culturebench list`).")],
    generations: Annotated[
        list[Path],
        typer.Option(
            "--generations",
            help="Recorded outputs (JSONL or CSV), Inspect .eval logs, lm-eval samples_*.jsonl; repeatable.",
        ),
    ],
    task: Annotated[
        list[str] | None, typer.Option("--task", help="Task(s) to score (repeatable; default: every task).")
    ] = None,
    layout: Annotated[
        str | None, typer.Option(help="A layout shipped with the dataset (datasets/<name>/generations.yaml).")
    ] = None,
    source: DatasetSource = DEFAULT_SOURCE,
    out: Annotated[Path, typer.Option(help="Output folder (one sub-folder per task).")] = Path(
        "out/runs/score"
    ),
    model: Annotated[
        str | None,
        typer.Option(
            help="The model that wrote the recorded outputs, as the paper names it or its Hub id "
            "(e.g. 'Llama 3-8B'); `eval paper` sets the run beside that model's printed column."
        ),
    ] = None,
    option: Annotated[list[str] | None, typer.Option("--option", help="Task option KEY=VALUE.")] = None,
    matcher: Annotated[
        str,
        typer.Option(
            help="deterministic (default); llm: the paper's LLM string matcher run by --judge-model; "
            "recorded: that matcher's answers as recorded beside the outputs (the layout's judgments)."
        ),
    ] = "deterministic",
    judge_model: Annotated[str | None, typer.Option(help="--matcher llm: the judge model.")] = None,
    judge_backend: Annotated[
        str, typer.Option(help="--matcher llm: the judge's backend (a text backend, see `eval backends`).")
    ] = DEFAULT_BACKEND["text"],
    judge_base_url: Annotated[
        str | None, typer.Option(help="--matcher llm, a backend on an endpoint: its base URL.")
    ] = None,
    judge_model_arg: Annotated[
        list[str] | None,
        typer.Option(
            "--judge-model-arg", help="--matcher llm: a judge backend option KEY=VALUE (repeatable)."
        ),
    ] = None,
    answer_reader: Annotated[
        str,
        typer.Option(
            help="rules (default): the committed-answer rules; model:BACKEND:MODEL: a model reads each "
            "answer into the same fields (its agreement with the rules is recorded, disagreements listed)."
        ),
    ] = "rules",
    answer_reader_arg: Annotated[
        list[str] | None,
        typer.Option(
            "--answer-reader-arg",
            help="--answer-reader model: a reader backend option KEY=VALUE (repeatable; base_url=URL).",
        ),
    ] = None,
) -> None:
    """Score generations recorded elsewhere with the same task code, metrics and report as
    `eval run`; several tasks at once write the dataset's summary files too."""
    from culturebench import registry
    from culturebench.eval.score import score_tasks
    from culturebench.eval.tasks import registry as task_registry

    tasks = or_exit(lambda: task_registry().get(dataset) or registry.get(dataset).tasks())
    from culturebench.eval.score import harness_log_tasks

    # Inspect / lm-eval logs name their task; other files: every task scored from text outputs
    # of dataset rows (not image or analysis tasks)
    in_logs = or_exit(lambda: harness_log_tasks(generations))
    names = (
        task
        or in_logs
        or [name for name, cls in tasks.items() if cls.output_kind == "text" and cls.needs_dataset]
    )
    options = or_exit(lambda: parse_task_options(option or []))
    model = or_exit(lambda: model_name(model))
    judge_model = or_exit(lambda: model_name(judge_model, "--judge-model"))
    judge = None
    if matcher not in ("deterministic", "llm", "recorded"):
        err_console.print(f"[red]error:[/] --matcher {matcher!r}: deterministic, llm or recorded")
        raise typer.Exit(EXIT_BAD_INPUT)
    if matcher == "recorded":
        from culturebench.eval.judge import RECORDED

        judge = RECORDED  # tasks without a matcher to replay score as they always do
    if matcher == "llm":
        if not judge_model:
            err_console.print("[red]error:[/] --matcher llm needs --judge-model")
            raise typer.Exit(EXIT_BAD_INPUT)
        judge = EngineChoice(
            backend=judge_backend,
            model=judge_model,
            base_url=judge_base_url,
            model_arg=tuple(judge_model_arg or ()),
        ).make()
    reader = _answer_reader(answer_reader, answer_reader_arg or [])
    unknown = [name for name in names if name not in tasks]
    if unknown:  # every task is checked before any is scored or anything is written
        err_console.print(
            f"[red]error:[/] --task {unknown[0]}: {dataset} has no task {unknown[0]!r} "
            f"(tasks: {', '.join(tasks)})"
        )
        raise typer.Exit(EXIT_BAD_INPUT)
    if not task and not in_logs and layout:  # every task: those no given file answers are listed
        from culturebench.eval.score import tasks_without_outputs

        absent = or_exit(lambda: tasks_without_outputs(dataset, names, generations, layout))
        names = [n for n in names if n not in absent]
        for name, column in absent.items():
            console.print(f"{name}: not scored: no given file has its column {column!r}")
        if not names:
            err_console.print(f"[red]error:[/] no given file answers any task of {dataset}")
            raise typer.Exit(EXIT_BAD_INPUT)
    hooks = registry.get(dataset).report()
    written: list[Path] = []

    def summary(results: dict[str, Any], folder: Path) -> None:  # into the staged output
        if hooks is not None and hasattr(hooks, "summary_files"):
            written.extend(out / Path(p).relative_to(folder) for p in hooks.summary_files(results, folder))

    with progress_bar() as bar:
        jobs: dict[str, int] = {}

        def show(name: str, done: int, total: int) -> None:
            if name not in jobs:
                jobs[name] = bar.add_task(f"scoring {dataset}/{name}", total=total)
            bar.update(jobs[name], completed=done, total=total)

        done = or_exit(
            lambda: score_tasks(
                dataset, names, generations, out, layout=layout, **source.as_kwargs(), task_options=options,
                judge=judge, reader=reader, progress=show, summary=summary, model_name=model,
            )
        )  # fmt: skip
    for name, results in done.items():
        folder = out / name if len(names) > 1 else out
        console.print(f"{name}: {results['samples']} samples of {results['items']} items -> {folder}")
        if results.get("duplicate_generations"):
            console.print(
                f"  {results['duplicate_generations']} identical duplicates across files scored once"
            )
        print_headlines(f"{dataset}/{name}", results["metrics"])
    for path in written:
        console.print(f"wrote {path}")


def _answer_reader(spec: str, args: list[str]) -> Any:
    """The backend of ``--answer-reader model:BACKEND:MODEL`` (None for ``rules``); a bad spec
    exits with one line."""
    if spec == "rules":
        if args:
            err_console.print("[red]error:[/] --answer-reader-arg needs --answer-reader model:BACKEND:MODEL")
            raise typer.Exit(EXIT_BAD_INPUT)
        return None
    kind, _, rest = spec.partition(":")
    backend, _, name = rest.partition(":")
    if kind != "model" or not backend or not name:
        err_console.print(
            f"[red]error:[/] --answer-reader {spec!r}: rules, or model:BACKEND:MODEL "
            "(e.g. model:vllm:Qwen/Qwen2.5-7B-Instruct, model:openai:gpt-4o-mini)"
        )
        raise typer.Exit(EXIT_BAD_INPUT)
    base_url = next((a.split("=", 1)[1] for a in args if a.startswith("base_url=")), None)
    rest_args = tuple(a for a in args if not a.startswith("base_url="))
    return EngineChoice(
        backend=backend, model=name, base_url=base_url, model_arg=rest_args, max_new_tokens=120
    ).make()


@commands.command("compare")
def eval_compare_cmd(
    a: Annotated[Path, typer.Argument(help="Run folder A, or a CSV table (e.g. runs/x/table_h9.csv).")],
    b: Annotated[
        Path | None,
        typer.Argument(help="Run folder B, or a CSV table (e.g. the published stats); not with --paper."),
    ] = None,
    paper: Annotated[
        str | None,
        typer.Option(
            help="DATASET:MODEL: compare table A (a printed-layout table `eval score` wrote) with the "
            "numbers the dataset's paper prints for MODEL, cell by cell."
        ),
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Also write the comparison as Markdown.")] = None,
    overwrite: FileOverwriteOption = False,
) -> None:
    """Side by side: every metric (or table cell) the two share, B - A, and for runs A, B, B - A
    and a paired 95% interval of the difference over the items both scored, with how many items
    each run had and shared (a warning when they differ); or (--paper) a table of ours
    against the paper's printed row of a model, with which cells are equal at the printed precision."""
    from culturebench.eval.compare import compare, interval_text, items_line, markdown, warnings

    if (b is None) == (paper is None):
        err_console.print("[red]error:[/] give B, or --paper DATASET:MODEL (one of the two)")
        raise typer.Exit(EXIT_BAD_INPUT)
    for given in (a, b):
        if given is not None and not given.exists():
            err_console.print(f"[red]error:[/] {escape(str(given))}: no such file or folder", soft_wrap=True)
            raise typer.Exit(EXIT_BAD_INPUT)
    if paper is not None:
        _compare_printed(a, paper, out, overwrite)
        return
    assert b is not None
    claim_file(out, overwrite, [a, b])
    rows = or_exit(lambda: compare(a, b))
    if not rows:  # two runs of other tasks, or tables with no row and column in common
        err_console.print(
            f"[red]error:[/] {escape(str(a))} and {escape(str(b))} share no metric or cell to compare "
            "(runs of one task, or tables with the same row and column labels)",
            soft_wrap=True,
        )
        raise typer.Exit(EXIT_BAD_INPUT)
    runs = any(row.get("items") for row in rows)
    columns = [("group", "text"), ("metric", "text"), ("A", "num"), ("B", "num"), ("B - A", "num"),
               ("95% CI of B - A", "word")] + ([("items A/B/shared", "word")] if runs else [])  # fmt: skip
    cells = []
    for row in rows:
        line = [escape(row["group"]), escape(row["metric"]), f"{row['a']:.3f}", f"{row['b']:.3f}",
                f"{row['difference']:+.3f}", escape(interval_text(row))]  # fmt: skip
        if runs:
            line.append("/".join(map(str, row["items"])) if row.get("items") else "")
        cells.append(line)
    print_fitted(
        *fit_table(
            f"A = {escape(str(a))}   B = {escape(str(b))}", columns, cells, drop=("items A/B/shared",)
        ),
        " (--out writes them all)" if out else "",
    )
    if runs:
        console.print(escape(items_line(rows)), soft_wrap=True)
        for warning in warnings(rows):
            console.print(f"[yellow]warning:[/] {escape(warning)}", soft_wrap=True)
    if out:
        from culturebench.atomic import write_text_atomic

        or_exit(lambda: write_text_atomic(out, markdown(rows, str(a), str(b))))
        console.print(f"wrote {out}")


def _compare_printed(table_file: Path, paper: str, out: Path | None, overwrite: bool) -> None:
    """`eval compare TABLE --paper DATASET:MODEL`."""
    from culturebench.eval.compare import compare_printed, printed_markdown, printed_row, tally

    dataset, sep, model = paper.partition(":")
    if not sep or not dataset.strip() or not model.strip():
        err_console.print(f"[red]error:[/] --paper {paper!r}: DATASET:MODEL (a printed model of the paper)")
        raise typer.Exit(EXIT_BAD_INPUT)
    if not table_file.is_file() or table_file.suffix != ".csv":
        err_console.print(f"[red]error:[/] {escape(str(table_file))}: --paper compares a CSV table of ours")
        raise typer.Exit(EXIT_BAD_INPUT)
    claim_file(out, overwrite, [table_file])
    rows, printed = or_exit(lambda: compare_printed(table_file, dataset.strip(), model.strip()))
    if not rows:  # the right file name, other contents
        err_console.print(
            f"[red]error:[/] {escape(str(table_file))}: no cell in common with {escape(str(printed.source))} "
            f"(the printed table of {escape(model.strip())}); is it the table `eval score` wrote?",
            soft_wrap=True,
        )
        raise typer.Exit(EXIT_BAD_INPUT)
    d = printed.digits
    columns = [("row", "text"), ("column", "text"), ("ours", "word"), ("printed", "word"),
               ("printed - ours", "num"), ("equal", "word")]  # fmt: skip
    cells = [[escape(text) for text in printed_row(row, d)] for row in rows]
    title = f"{escape(str(table_file))} vs {escape(str(printed.source))} (printed)"
    print_fitted(*fit_table(title, columns, cells))
    console.print(tally(rows, printed))
    if out:
        from culturebench.atomic import write_text_atomic

        or_exit(lambda: write_text_atomic(out, printed_markdown(rows, str(table_file), printed)))
        console.print(f"wrote {out}")


@commands.command("report")
def eval_report_cmd(
    folders: Annotated[list[Path], typer.Argument(help="Result folders of `eval run`.")],
    out: Annotated[Path, typer.Option(help="Report file.")] = Path("out/report.md"),
    overwrite: FileOverwriteOption = False,
) -> None:
    """Write one Markdown report (tables with 95% CIs, plots) over several runs."""
    from culturebench.eval.run_report import write_report
    from culturebench.eval.tasks import report_sections_of

    claim_file(out, overwrite, folders)
    missing = [str(f) for f in folders if not (f / "results.json").is_file()]
    if missing:
        err_console.print(f"[red]error:[/] no results.json in {', '.join(missing)}")
        raise typer.Exit(EXIT_BAD_INPUT)
    console.print(f"wrote {or_exit(lambda: write_report(folders, out, sections=report_sections_of))}")


@commands.command("paper")
@with_dataset_source
def eval_paper_cmd(
    dataset: Annotated[str, typer.Argument(help="Dataset whose paper to report on.")],
    folders: Annotated[list[Path] | None, typer.Argument(help="Finished `eval run` folders.")] = None,
    out: Annotated[Path, typer.Option(help="Report folder (paper_report.md, .json, figures).")] = Path(
        "out/reports/paper"
    ),
    source: DatasetSource = DEFAULT_SOURCE,
    input: Annotated[
        list[str] | None,
        typer.Option(
            "--input",
            help="Other files an item reads, KEY=PATH (e.g. human=RATINGS.csv; docs/paper-reports.md).",
        ),
    ] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace an earlier paper report at --out.")] = False,
) -> None:
    """Every table and figure of the dataset's paper: computed from the runs and the release
    where possible, beside the paper's number and the difference; the rest listed with what
    it needs or why it cannot be reproduced."""
    from culturebench.eval.paper_report import build_report

    inputs = or_exit(lambda: parse_inputs(input or []))
    report = or_exit(
        lambda: build_report(
            dataset, folders or [], out, **source.as_kwargs(),
            inputs=inputs, overwrite=overwrite,
        )
    )  # fmt: skip
    counts = "; ".join(f"{n} {s}" for s, n in report["status_counts"].items() if n)  # statuses hold commas
    console.print(f"{len(report['items'])} items ({counts}); wrote {out / 'paper_report.md'}")
