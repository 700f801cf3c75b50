"""``culturebench export``: culturebench's tasks written out for another harness
(lm-evaluation-harness today; Inspect needs no export: its entry point finds the tasks)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from culturebench.cli.options import DEFAULT_SOURCE, DatasetSource, with_dataset_source
from culturebench.cli.output import console
from culturebench.cli.progress import progress_bar

export_app = typer.Typer(
    help="Write a dataset's tasks for the harness you already run (lm-evaluation-harness).",
    no_args_is_help=True,
)


@export_app.command("lm-eval")
@with_dataset_source
def export_lm_eval_cmd(
    dataset: Annotated[str, typer.Argument(help="Dataset name (see `culturebench list`).")],
    out: Annotated[
        Path, typer.Option(help="Task folder for `lm_eval --include_path` (new, or an earlier export).")
    ],
    task: Annotated[
        list[str] | None,
        typer.Option("--task", help="Task(s) to export (repeatable; default every text task)."),
    ] = None,
    source: DatasetSource = DEFAULT_SOURCE,
) -> None:
    """A task folder for lm-evaluation-harness: one YAML per text task pinned to the release
    (its Hub commit or its local manifest sha256), culturebench's prompts, scoring and metrics,
    and the paper's generation settings."""
    from culturebench.eval.harness.lm_eval_export import export_lm_eval

    with progress_bar() as bar:
        job = bar.add_task(f"exporting {dataset} for lm-eval", total=None)
        files = export_lm_eval(
            dataset, out, tasks=task, **source.as_kwargs(),
            progress=lambda done, total: bar.update(job, completed=done, total=total),
        )  # fmt: skip
    names = [f.stem for f in files if f.suffix == ".yaml"]
    console.print(f"wrote {len(files)} files to {out}")
    console.print(f"tasks: {', '.join(names)}")
    example = names[0]  # a task (the group file comes last)
    console.print(
        f"run: lm_eval --model hf --model_args pretrained=MODEL --include_path {out} --tasks {example} "
        "--log_samples --output_path OUT\nthen: culturebench eval score "
        f"{dataset} --generations OUT/<model>/samples_{example}_<time>.jsonl"
    )
