"""Commands on datasets and releases: ``version``, ``list``, ``info``, ``build``, ``validate``,
``card`` and ``release``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from culturebench import __version__
from culturebench.cli.commands import CommandSet
from culturebench.cli.errors import EXIT_REFUSED, EXIT_VALIDATION, claim_file
from culturebench.cli.options import FileOverwriteOption, deprecated_alias, with_image_stage
from culturebench.cli.output import (
    console,
    count_cell,
    fit_table,
    plain,
    print_fitted,
)
from culturebench.cli.progress import BuildProgress, steps
from culturebench.errors import CultureBenchError, UsageError, ValidationFailed
from culturebench.jsonsafe import json_text

commands = CommandSet()


@commands.command("version")
def version_cmd() -> None:
    """Print the package version."""
    console.print(__version__)


@commands.command("list")
def list_cmd() -> None:
    """List the datasets this package knows, with version and configs."""
    from culturebench import registry
    from culturebench.spec import load_spec

    rows = []
    for name, entry in registry.datasets().items():
        spec = load_spec(name)
        rows.append(
            [name, spec.version, ", ".join(spec.configs), ", ".join(spec.languages),
             plain(spec.raw.get("license")), ", ".join(entry.code), entry.origin]
        )  # fmt: skip
    columns = [("dataset", "word"), ("version", "word"), ("configs", "text"), ("languages", "text"),
               ("licence", "word"), ("code", "text"), ("from", "text")]  # fmt: skip
    print_fitted(*fit_table("culturebench datasets", columns, rows, drop=("from", "code")))


@commands.command("info")
def info_cmd(name: Annotated[str, typer.Argument(help="Dataset name (see `culturebench list`).")]) -> None:
    """Show a dataset's version, configs, features, licence and pinned sources."""
    from culturebench.builders.sources import default_source
    from culturebench.cards.card import describe_type
    from culturebench.spec import load_spec

    spec = load_spec(name)
    console.print(f"[bold]{spec.pretty_name}[/] ({spec.name} {spec.version}, schema {spec.schema_version})")
    console.print(
        f"licence: {spec.raw.get('license')}  languages: {', '.join(spec.languages)}  "
        f"splits: {', '.join(spec.splits)}"
    )
    upstream = spec.upstream
    if upstream:
        console.print(f"upstream: {upstream.get('repo')} @ {upstream.get('commit')}")
    for cfg in spec.configs.values():
        rows = [
            [feat["name"], describe_type(feat), plain(spec.field_docs.get(feat["name"]))]
            for feat in cfg.features_yaml
        ]
        rows_text = f"{cfg.expected_rows:,} rows" if cfg.expected_rows else "rows not fixed"
        title = f"config {cfg.name} ({rows_text}): {cfg.description}"
        heads = [("field", "word"), ("type", "text"), ("description", "text")]
        print_fitted(*fit_table(title, heads, rows))
    console.print("[bold]pinned sources[/]")
    for src in spec.sources.values():
        upstream_path = src.upstream_path or "(shipped with culturebench)"
        console.print(f"  {src.key}: {src.file}, upstream {upstream_path}", highlight=False)
        console.print(f"    sha256 {src.sha256 or '(user-supplied: recorded at build)'}", highlight=False)
    try:
        folder, kind = default_source(spec)
        console.print(f"default source: {folder} ({kind})")
    except CultureBenchError as exc:
        console.print(f"default source: none ({exc})")


def _print_build(result) -> None:
    stats = result.log.stats
    counts = result.log.counts()
    if counts:
        actions = result.log.actions()
        quirks = [[code, f"{count:,}", plain(actions[code])] for code, count in counts.items()]
        print_fitted(
            *fit_table("upstream quirks handled (details: build_report.json, or -vv)",
                        [("quirk", "word"), ("count", "num"), ("action", "text")], quirks)
        )  # fmt: skip
    table = []
    for config, info in result.manifest["configs"].items():
        cstats = stats.get(config, {}) if isinstance(stats.get(config), dict) else {}
        for split, split_info in info["splits"].items():
            images, dishes = count_cell(cstats.get("images")), count_cell(cstats.get("dishes_with_images"))
            table.append([config, split, f"{split_info['num_rows']:,}", images, dishes])
    columns = [("config", "word"), ("split", "word"), ("rows", "num"), ("images", "num"),
               ("dishes with images", "num")]  # fmt: skip
    print_fitted(*fit_table("rows per config", columns, table))
    for config, cstats in stats.items():
        if isinstance(cstats, dict) and "per_country" in cstats:
            per = ", ".join(f"{code} {n}" for code, n in cstats["per_country"].items())
            console.print(f"[bold]{config}[/] dishes per country of origin: {per}", highlight=False)
    summary = result.report.summary()
    console.print(
        f"validation {summary['status']}: {summary['checks']} checks, {summary['errors']} errors, "
        f"{summary['warnings']} warnings"
    )
    sample = " [yellow](SAMPLE data, not the full dataset)[/]" if result.manifest["sample"] else ""
    console.print(f"[green]release folder:[/] {result.folder}{sample}")


@commands.command("build")
@with_image_stage
def build_cmd(
    name: Annotated[str, typer.Argument(help="Dataset name (see `culturebench list`).")],
    source: Annotated[
        str | None,
        typer.Option(
            help="Folder with the upstream files, base URL of the upstream repo at a pinned "
            "commit, or 'sample' (the shipped sample). Default: ../shared/upstream/<name> if "
            "present, else the shipped sample."
        ),
    ] = None,
    out: Annotated[Path, typer.Option(help="Root of release folders.")] = Path("dist"),
    overwrite: Annotated[bool, typer.Option(help="Replace an existing release folder.")] = False,
    image_stage: Any = None,
) -> None:
    """Build, validate and write dist/<name>/<version>/ atomically."""
    from culturebench.builders import get_builder
    from culturebench.builders.base import UpToDate

    options = image_stage
    builder = get_builder(name)

    def run(progress: BuildProgress):
        try:
            return builder.build(
                source=source,
                out_root=out,
                overwrite=overwrite,
                on_step=progress.step,
                images=options,
                image_progress=progress.images,
            )
        except UpToDate as same:  # a rerun of the same build: nothing to do
            return same

    with BuildProgress(f"building {name} {builder.spec.version}") as progress:
        result = run(progress)
    if isinstance(result, UpToDate):
        console.print(f"{escape(str(result))} (--overwrite rebuilds it)")
        return
    _print_build(result)


@commands.command("validate")
def validate_cmd(
    folder: Annotated[Path, typer.Argument(help="A release folder, e.g. dist/NAME/VERSION.")],
    json_out: Annotated[Path | None, typer.Option("--json", help="Also write the report as JSON.")] = None,
    records: Annotated[bool, typer.Option(help="Load records through mlcroissant.")] = True,
    contact_sheet: Annotated[
        Path | None, typer.Option(help="Write flagged image pairs to this HTML file.")
    ] = None,
    overwrite: FileOverwriteOption = False,
) -> None:
    """Validate a release folder; exit 1 when any check fails."""
    from culturebench.validation import validate_release

    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder")
    claim_file(json_out, overwrite, [folder], flag="--json")  # before the validation runs
    claim_file(contact_sheet, overwrite, [folder], flag="--contact-sheet")
    sheet_before = contact_sheet.stat().st_mtime_ns if contact_sheet and contact_sheet.is_file() else None
    with steps(f"validating {folder}"):
        report = validate_release(folder, croissant_records=records, contact_sheet=contact_sheet)
    report.render(console)
    if contact_sheet is not None:  # the sheet, or a page (and a line) saying why there is none
        if contact_sheet.is_file() and contact_sheet.stat().st_mtime_ns != sheet_before:
            console.print(f"contact sheet: {escape(str(contact_sheet))}", soft_wrap=True)
        else:
            from html import escape as html_escape

            from culturebench.atomic import write_text_atomic

            why = (
                "no near-duplicate or contamination pairs were flagged"
                if "images:integrity" in report.checks_run
                else f"{folder} has no image records (build it with --images)"
            )
            page = (
                "<!doctype html><meta charset='utf-8'><title>Image findings</title>"
                f"<h1>Near-duplicate and contamination findings</h1><p>None: {html_escape(why)}.</p>"
            )
            write_text_atomic(contact_sheet, page)
            console.print(
                f"contact sheet: {escape(str(contact_sheet))}: empty, {escape(why)}", soft_wrap=True
            )
    if json_out:
        from culturebench.atomic import write_text_atomic

        text = json_text(report.to_dict(), indent=2)
        write_text_atomic(json_out, text)  # WriteFailed names the path
    if not report.ok:
        raise typer.Exit(EXIT_VALIDATION)


@commands.command("card")
def card_cmd(
    folder: Annotated[Path, typer.Argument(help="A release folder, e.g. dist/NAME/VERSION.")],
    check: Annotated[
        bool, typer.Option(help="Only report whether the card, Croissant or eval.yaml are stale (exit 1).")
    ] = False,
) -> None:
    """Regenerate README.md (card + datasheet), croissant.json and eval.yaml (the Hub's benchmark
    file) of a release folder."""
    from culturebench.cards.write import CARD_FILES, card_inputs, stale_card_files, write_card_files

    spec, manifest = card_inputs(folder)
    stale = stale_card_files(folder, spec, manifest)
    if check:
        if stale:
            console.print(f"[red]stale:[/] {', '.join(stale)}")
            raise typer.Exit(EXIT_VALIDATION)
        console.print("card, croissant and eval.yaml are up to date")
        return
    write_card_files(folder, spec, manifest)
    console.print(
        f"wrote {', '.join(CARD_FILES)} ({'changed: ' + ', '.join(stale) if stale else 'unchanged'})"
    )


@commands.command("release")
@with_image_stage
@deprecated_alias("--overwrite-json", "overwrite")
def release_cmd(
    name: Annotated[str, typer.Argument(help="Dataset name (see `culturebench list`).")],
    version: Annotated[
        str, typer.Option("--version", help="Version to release, X.Y.Z (must match dataset.yaml).")
    ],
    repo: Annotated[str | None, typer.Option(help="Hub dataset repo ORG/NAME.")] = None,
    to: Annotated[str | None, typer.Option(help="Local git target instead of the Hub: git:PATH.")] = None,
    private: Annotated[
        bool | None, typer.Option("--private/--public", help="Hub repo visibility (default: dataset.yaml).")
    ] = None,
    gated: Annotated[
        bool | None,
        typer.Option(
            "--gated/--no-gated",
            help="Gate access on the Hub: users accept the terms (default: dataset.yaml; FoodieQA is gated).",
        ),
    ] = None,
    endpoint: Annotated[
        str | None, typer.Option(help="Hub-compatible endpoint (default: HF_ENDPOINT).")
    ] = None,
    dry_run: Annotated[bool, typer.Option(help="Print the files, tag and flags; touch nothing.")] = False,
    source: Annotated[str | None, typer.Option(help="Upstream folder or URL for the build.")] = None,
    out: Annotated[Path, typer.Option(help="Root of release folders.")] = Path("dist"),
    rebuild: Annotated[bool, typer.Option(help="Rebuild the release folder even if it exists.")] = False,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the plan as JSON.")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing --json file.")] = False,
    image_stage: Any = None,
) -> None:
    """Build -> validate (blocking) -> gate -> publish one commit + tag vX.Y.Z -> verify."""
    from culturebench.errors import PublishFailed, ReleaseRefused
    from culturebench.release import plan_release, publish_release

    claim_file(json_out, overwrite, flag="--json")
    from culturebench.release.targets import PublishError, parse_target
    from culturebench.spec import load_spec

    if repo:  # Hub flags not given on the command line come from the dataset's declaration
        from culturebench.release.targets import hub_flags

        private, gated = hub_flags(load_spec(name), private, gated)
    target = parse_target(repo, to, private=bool(private), gated=bool(gated), endpoint=endpoint)
    options = image_stage
    with steps(f"planning {name} {version}"):
        try:
            plan = plan_release(
                name, version, target, source=source, out_root=out, rebuild=rebuild, images=options
            )
        except ValidationFailed as exc:  # a folder that fails validation is a refused release
            exc.exit_code = EXIT_REFUSED
            raise
    _print_plan(plan)
    if json_out:
        from culturebench.atomic import write_text_atomic

        write_text_atomic(json_out, json_text(plan.to_dict(), indent=2))
    if plan.action == "noop":
        console.print(f"[green]{plan.tag} already published with identical content:[/] nothing to do")
        return
    try:  # a target that is not ready (not ours, dirty, no token) refuses the release (exit 3)
        target.check_ready(dry_run=dry_run)
    except PublishError as exc:
        raise ReleaseRefused(str(exc)) from exc
    if dry_run:
        console.print("[yellow]dry run:[/] nothing was uploaded or tagged")
        return
    try:
        with steps(f"publishing {plan.tag} to {plan.target}"):
            result = publish_release(plan, target)
    except PublishError as exc:  # VerificationFailed (exit 5) passes: the handler lists its problems
        raise PublishFailed(str(exc)) from exc
    console.print(
        f"[green]published[/] {plan.tag} = commit {result.commit} on {plan.target}; "
        "verified: files and row counts match the manifest"
    )


def _print_plan(plan) -> None:
    data = plan.to_dict()
    console.print(
        f"[bold]{data['dataset']} {data['version']}[/] -> {data['target']}  tag [bold]{data['tag']}[/]"
    )
    console.print(
        f"change: {data['change_kind']} ({data['change_reason']}); previous: {data['previous'] or 'none'}"
    )
    flags = data["repo_flags"]
    console.print(f"repo flags: private={flags['private']} gated={flags['gated']}")
    title = f"files ({len(data['files'])}, {data['total_bytes']:,} bytes; sha256 in the manifest)"
    rows = [[f["path"], f"{f['size']:,}", f["sha256"][:12]] for f in data["files"]]  # 12 digits tell apart
    print_fitted(*fit_table(title, [("path", "word"), ("bytes", "num"), ("sha256", "word")], rows))
