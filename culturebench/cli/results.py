"""``culturebench eval results``: finished runs as Hub leaderboard entries
(``.eval_results/<dataset>.yaml``) and Every Eval Ever records, optionally proposed to a model
repo as a pull request (:mod:`culturebench.eval.hub_results`)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from culturebench.cli.options import deprecated_alias
from culturebench.cli.output import console, err_console
from culturebench.errors import UsageError

RELATIONSHIPS = ("first_party", "third_party", "collaborative", "other")


def register(eval_app: typer.Typer) -> None:
    """Add ``results`` to the ``eval`` command group."""
    eval_app.command("results")(eval_results_cmd)


@deprecated_alias("--to-repo", "to")
def eval_results_cmd(
    runs: Annotated[list[Path], typer.Argument(help="Finished run folders (eval run / eval score).")],
    out: Annotated[Path, typer.Option(help="Folder for .eval_results/ and every_eval_ever/.")],
    to: Annotated[
        str | None,
        typer.Option(
            "--to", help="Open a pull request adding the .eval_results files to this model repo (ORG/MODEL)."
        ),
    ] = None,
    dataset_id: Annotated[
        str,
        typer.Option(help="Hub dataset of runs that read a local release ({dataset}: the dataset's name)."),
    ] = "culturebench/{dataset}",
    source_url: Annotated[
        str | None,
        typer.Option(
            help="Where the samples are published ({dataset}, {task}, {path}: the EEE samples file "
            "under --out); without it the notes name samples.jsonl and its sha256."
        ),
    ] = None,
    model_id: Annotated[
        str | None,
        typer.Option(help="The model as DEVELOPER/MODEL (default: --to, else the runs' model)."),
    ] = None,
    organization: Annotated[
        str | None, typer.Option(help="Who provides the results (EEE; default: the --to owner).")
    ] = None,
    relationship: Annotated[
        str, typer.Option(help="Evaluator and model (EEE): " + ", ".join(RELATIONSHIPS) + ".")
    ] = "third_party",
    endpoint: Annotated[
        str | None, typer.Option(help="Hub endpoint for --to (default: $HF_ENDPOINT, else the Hub).")
    ] = None,
    timeout: Annotated[
        float,
        typer.Option(
            help="--to: seconds to wait for the Hub, for each request and for the whole pull request."
        ),
    ] = 60.0,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace an earlier `eval results` output at --out.")
    ] = False,
) -> None:
    """Write each run's Hub leaderboard entry to OUT/.eval_results/<dataset>.yaml and its Every
    Eval Ever record (validated) under OUT/every_eval_ever/; with --to, open a pull
    request adding the .eval_results files to that model repo."""
    from culturebench.eval.hub_results import export_results, hub_dataset, open_pull_request

    if relationship not in RELATIONSHIPS:
        raise UsageError(f"--relationship {relationship!r}: one of {', '.join(RELATIONSHIPS)}")
    if to is not None and (to.count("/") != 1 or not all(to.split("/"))):
        raise UsageError(f"--to {to!r}: expected ORG/MODEL")
    if not (math.isfinite(timeout) and timeout > 0):
        raise UsageError(f"--timeout {timeout:g}: a number of seconds above 0")
    if model_id is not None and not model_id.strip():
        raise UsageError(f"--model-id {model_id!r}: an empty model name; give DEVELOPER/MODEL")
    export = export_results(
        runs,
        out,
        dataset_id=dataset_id,
        source_url=source_url,
        model_id=model_id or to,
        organization=organization or (to.split("/")[0] if to else "unknown"),
        relationship=relationship,
        overwrite=overwrite,
    )
    for result, (record, samples) in zip(export.runs, export.every_eval_ever, strict=True):
        value = result.value
        console.print(
            f"{escape(result.dataset)}/{escape(result.task)}: {result.hub.result.metric} = {value.value:.4g}"
            + (f" (n={value.n})" if value.n is not None else "")
            + f"; Every Eval Ever: {escape(str(record))}, {escape(samples.name)}",
            soft_wrap=True,
        )
        if result.ref.get("source") != "hub":
            err_console.print(
                f"note: {escape(str(result.folder))} read a local release (manifest sha256 "
                f"{result.ref.get('manifest_sha256')}): its entry names "
                f"{escape(hub_dataset(result, dataset_id)[0])} without a revision",
                soft_wrap=True,
            )
        if result.provenance.get("limit"):
            from culturebench.eval.coverage import coverage_of, limit_text

            err_console.print(
                f"[yellow]warning:[/] {escape(str(result.folder))} covers only part of the release "
                f"({escape(str(limit_text(coverage_of(result.results))))}); its notes say so",
                soft_wrap=True,
            )
    for path in export.eval_results.values():
        console.print(f"wrote {escape(str(path))}", soft_wrap=True)
    if to is None:
        return
    files = {name: path.read_bytes() for name, path in export.eval_results.items()}
    url = open_pull_request(to, files, endpoint=endpoint, timeout=timeout)
    console.print(f"pull request: {escape(url)}", soft_wrap=True)
