"""``culturebench eval score``, ``eval compare``, ``eval report`` and ``eval paper``: what a run's
answers are worth, beside another run or the paper."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from culturebench.cli.commands import CommandSet
from culturebench.cli.errors import claim_file
from culturebench.cli.options import (
    DEFAULT_SOURCE,
    DatasetSource,
    EngineChoice,
    FileOverwriteOption,
    model_name,
    with_dataset_source,
)
from culturebench.cli.output import (
    console,
    fit_table,
    print_fitted,
    print_headlines,
)
from culturebench.cli.parsing import parse_inputs, parse_task_options
from culturebench.cli.progress import progress_bar
from culturebench.errors import UsageError
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
    from culturebench.eval import score

    names = score.choose_tasks(dataset, task, generations, layout, note=console.print)
    options = parse_task_options(option or [])
    model = model_name(model)
    judge_model = model_name(judge_model, "--judge-model")
    score.check_matcher(matcher, judge_model)
    judge = None
    if matcher == "recorded":
        from culturebench.eval.judge import RECORDED

        judge = RECORDED  # tasks without a matcher to replay score as they always do
    if matcher == "llm":
        judge = EngineChoice(
            backend=judge_backend,
            model=judge_model,
            base_url=judge_base_url,
            model_arg=tuple(judge_model_arg or ()),
        ).make()
    reading = score.answer_reader_choice(answer_reader, answer_reader_arg or [])
    reader = None
    if reading is not None:
        reader = EngineChoice(
            backend=reading.backend, model=reading.model, base_url=reading.base_url,
            model_arg=reading.model_args, max_new_tokens=120,
        ).make()  # fmt: skip
    with progress_bar() as bar:
        jobs: dict[str, int] = {}

        def show(name: str, done: int, total: int) -> None:
            if name not in jobs:
                jobs[name] = bar.add_task(f"scoring {dataset}/{name}", total=total)
            bar.update(jobs[name], completed=done, total=total)

        done, written = score.score_dataset(
            dataset, names, generations, out, layout=layout, **source.as_kwargs(), task_options=options,
            judge=judge, reader=reader, progress=show, model_name=model,
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
        raise UsageError("give B, or --paper DATASET:MODEL (one of the two)")
    for given in (a, b):
        if given is not None and not given.exists():
            raise UsageError(f"{given}: no such file or folder")
    if paper is not None:
        _compare_printed(a, paper, out, overwrite)
        return
    assert b is not None
    claim_file(out, overwrite, [a, b])
    rows = compare(a, b)
    if not rows:  # two runs of other tasks, or tables with no row and column in common
        raise UsageError(
            f"{a} and {b} share no metric or cell to compare "
            "(runs of one task, or tables with the same row and column labels)"
        )
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

        write_text_atomic(out, markdown(rows, str(a), str(b)))
        console.print(f"wrote {out}")


def _compare_printed(table_file: Path, paper: str, out: Path | None, overwrite: bool) -> None:
    """`eval compare TABLE --paper DATASET:MODEL`."""
    from culturebench.eval.compare import compare_printed, printed_markdown, printed_row, tally

    dataset, sep, model = paper.partition(":")
    if not sep or not dataset.strip() or not model.strip():
        raise UsageError(f"--paper {paper!r}: DATASET:MODEL (a printed model of the paper)")
    if not table_file.is_file() or table_file.suffix != ".csv":
        raise UsageError(f"{table_file}: --paper compares a CSV table of ours")
    claim_file(out, overwrite, [table_file])
    rows, printed = compare_printed(table_file, dataset.strip(), model.strip())
    if not rows:  # the right file name, other contents
        raise UsageError(
            f"{table_file}: no cell in common with {printed.source} "
            f"(the printed table of {model.strip()}); is it the table `eval score` wrote?"
        )
    d = printed.digits
    columns = [("row", "text"), ("column", "text"), ("ours", "word"), ("printed", "word"),
               ("printed - ours", "num"), ("equal", "word")]  # fmt: skip
    cells = [[escape(text) for text in printed_row(row, d)] for row in rows]
    title = f"{escape(str(table_file))} vs {escape(str(printed.source))} (printed)"
    print_fitted(*fit_table(title, columns, cells))
    console.print(tally(rows, printed))
    if out:
        from culturebench.atomic import write_text_atomic

        write_text_atomic(out, printed_markdown(rows, str(table_file), printed))
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
        raise UsageError(f"no results.json in {', '.join(missing)}")
    console.print(f"wrote {write_report(folders, out, sections=report_sections_of)}")


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

    inputs: dict[str, str | Path] = dict(parse_inputs(input or []))
    report = build_report(
        dataset, folders or [], out, **source.as_kwargs(),
        inputs=inputs, overwrite=overwrite,
    )  # fmt: skip
    counts = "; ".join(f"{n} {s}" for s, n in report["status_counts"].items() if n)  # statuses hold commas
    console.print(f"{len(report['items'])} items ({counts}); wrote {out / 'paper_report.md'}")
