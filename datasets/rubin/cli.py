"""RuBIN commands: ``culturebench eval rubin-distractors``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from culturebench.cli_support import (
    BackendOption,
    BaseUrlOption,
    BatchSizeOption,
    ConcurrencyOption,
    MaxNewTokensOption,
    ModelRevisionOption,
    TemperatureOption,
    console,
    make_engine,
    or_exit,
    progress_bar,
)


def register(eval_app: typer.Typer) -> None:
    """Add this dataset's commands to ``culturebench eval``."""
    eval_app.command("rubin-distractors")(eval_rubin_distractors_cmd)


def eval_rubin_distractors_cmd(
    questions: Annotated[
        Path, typer.Argument(help="JSON Lines: id, question, answer, category, year (or null).")
    ],
    model: Annotated[str, typer.Option(help="Generator model (paper: Qwen2.5-14B).")],
    out: Annotated[Path, typer.Option(help="Output folder (must not exist unless --overwrite).")],
    backend: BackendOption = "transformers",
    model_revision: ModelRevisionOption = None,
    seed: Annotated[
        int, typer.Option(min=0, max=2**32 - 1, help="Seed of the answer-slot draw and of sampling.")
    ] = 0,
    batch_size: BatchSizeOption = 8,
    max_new_tokens: MaxNewTokensOption = 200,
    temperature: TemperatureOption = 0.0,
    base_url: BaseUrlOption = None,
    concurrency: ConcurrencyOption = 4,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing output folder.")] = False,
) -> None:
    """RuBIN: generate three distractors per question with a model, draw the correct slot at
    random (balanced), apply the paper's filters; writes questions.jsonl for `build rubin`."""
    from culturebench.datasets.rubin.distractors import generate_distractors

    engine = make_engine(
        backend,
        model,
        model_revision=model_revision,
        max_new_tokens=max_new_tokens,
        seed=seed,
        temperature=temperature,
        batch_size=batch_size,
        base_url=base_url,
        concurrency=concurrency,
    )
    with progress_bar() as bar:
        job = bar.add_task("rubin distractors", total=None)
        report = or_exit(
            lambda: generate_distractors(
                questions,
                engine,
                out,
                seed=seed,
                batch_size=batch_size,
                overwrite=overwrite,
                progress=lambda done, total: bar.update(job, completed=done, total=total),
            )
        )
    console.print(
        f"{report['accepted']} accepted, {report['rejected']} rejected "
        f"{report['rejection_reasons'] or ''}; label positions {report['label_positions_accepted']}"
    )
    console.print(f"wrote {out / 'questions.jsonl'} (review {out / 'generations.jsonl'} before annotation)")
