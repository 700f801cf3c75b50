"""RuBIN commands: ``culturebench eval rubin-distractors``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from culturebench.cli.options import DEFAULT_ENGINE, EngineChoice, with_engine
from culturebench.cli.output import console
from culturebench.cli.progress import progress_bar
from culturebench.errors import EXIT_VALIDATION, CultureBenchError, UsageError


def register(eval_app: typer.Typer) -> None:
    """Add this dataset's commands to ``culturebench eval``."""
    eval_app.command("rubin-distractors")(eval_rubin_distractors_cmd)


class NothingAccepted(CultureBenchError):
    """The distractor stage accepted no question (exit 1: it ran, and failed its own check)."""

    exit_code = EXIT_VALIDATION


@with_engine()
def eval_rubin_distractors_cmd(
    questions: Annotated[
        Path, typer.Argument(help="JSON Lines: id, question, answer, category, year (or null).")
    ],
    out: Annotated[Path, typer.Option(help="Output folder (must not exist unless --overwrite).")],
    engine: EngineChoice = DEFAULT_ENGINE,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing output folder.")] = False,
) -> None:
    """RuBIN: generate three distractors per question with a model (paper: Qwen2.5-14B), draw
    the correct slot at random (balanced; --seed also seeds that draw), apply the paper's
    filters; writes questions.jsonl for `build rubin`."""
    from culturebench.datasets.rubin.distractors import generate_distractors

    if not engine.model:
        raise UsageError("rubin-distractors needs --model (the generator; paper: Qwen2.5-14B)")
    seed = engine.seed
    backend = engine.make()
    with progress_bar() as bar:
        job = bar.add_task("rubin distractors", total=None)
        report = generate_distractors(
            questions,
            backend,
            out,
            seed=seed,
            batch_size=engine.batch_size,
            overwrite=overwrite,
            progress=lambda done, total: bar.update(job, completed=done, total=total),
        )
    console.print(
        f"{report['accepted']} accepted, {report['rejected']} rejected "
        f"{report['rejection_reasons'] or ''}; label positions {report['label_positions_accepted']}"
    )
    if not report["accepted"]:  # an empty questions.jsonl builds an empty RuBIN: not a success
        raise NothingAccepted(
            f"none of the {report['rejected']} questions was accepted; "
            f"{out / 'questions.jsonl'} is empty (the model's outputs are in "
            f"{out / 'generations.jsonl'}: check --model and its chat template)"
        )
    console.print(f"wrote {out / 'questions.jsonl'} (review {out / 'generations.jsonl'} before annotation)")
