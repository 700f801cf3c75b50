"""The ``culturebench`` command line (typer + rich)."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from typer.core import TyperGroup

from culturebench import __version__
from culturebench.cli_options import (
    DEFAULT_ENGINE,
    DEFAULT_SOURCE,
    DatasetSource,
    EngineChoice,
    with_dataset_source,
    with_engine,
    with_image_stage,
)
from culturebench.cli_support import (
    EXIT_BAD_INPUT,
    EXIT_PUBLISH_FAILED,
    EXIT_REFUSED,
    EXIT_VALIDATION,
    EXIT_VERIFY_FAILED,
    BuildProgress,
    FileOverwriteOption,
    claim_file,
    console,
    err_console,
    finite,
    or_exit,
    os_error_line,
    progress_bar,
    steps,
)
from culturebench.errors import CultureBenchError
from culturebench.jsonsafe import json_text


def _click_errors() -> tuple[type[BaseException], ...]:
    """The exception class(es) click raises for bad command lines: typer >= 0.29 vendors click
    (``typer.TyperException``), older typers use click's own ``ClickException``."""
    found: list[type[BaseException]] = []
    if hasattr(typer, "TyperException"):
        found.append(typer.TyperException)
    try:
        import click

        found.append(click.ClickException)
    except ImportError:  # pragma: no cover - typer >= 0.29 alone
        pass
    return tuple(found)


class _OneLineUsageErrors(TyperGroup):
    """The top-level command group: a usage error (an unknown option, a value of the wrong
    type, a missing argument) prints as one line naming the command and the option, instead
    of click's usage box; help and exit codes are unchanged."""

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        try:
            code = super().main(*args, standalone_mode=False, **kwargs)
        except _click_errors() as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":  # `culturebench eval`: its help
                exc.show()  # type: ignore[attr-defined]
                sys.exit(getattr(exc, "exit_code", EXIT_BAD_INPUT))
            where = getattr(getattr(exc, "ctx", None), "command_path", None) or "culturebench"
            message = " ".join(exc.format_message().split())  # type: ignore[attr-defined]
            usage = any(kind.__name__ == "UsageError" for kind in type(exc).__mro__)
            hint = f" (see `{where} --help`)" if usage else ""
            err_console.print(f"[red]error:[/] {escape(where)}: {escape(message)}{hint}", soft_wrap=True)
            sys.exit(getattr(exc, "exit_code", EXIT_BAD_INPUT))
        sys.exit(code if isinstance(code, int) else 0)


app = typer.Typer(
    cls=_OneLineUsageErrors,
    name="culturebench",
    help="Build, validate, document, publish and evaluate cultural-knowledge benchmarks.",
    no_args_is_help=True,
    add_completion=False,
)


def _setup_logging(verbose: int) -> None:
    from rich.logging import RichHandler

    level = logging.WARNING if verbose == 0 else (logging.INFO if verbose == 1 else logging.DEBUG)
    if verbose == 0:
        _quiet_libraries()
    logging.basicConfig(
        level=level,
        format="%(message)s",
        handlers=[RichHandler(console=err_console, show_path=False)],
        force=True,
    )


_DEBUG = {"on": False}

# Libraries whose advisory warnings and log chatter (deprecations, "generation flags are not
# valid", torchvision fallbacks) would bury our own lines; shown again with -v.
_NOISY = ("transformers", "diffusers", "torch", "torchvision", "accelerate", "huggingface_hub", "datasets")


def _quiet_libraries() -> None:
    import os
    import warnings

    for name in ("TRANSFORMERS_VERBOSITY", "DIFFUSERS_VERBOSITY"):
        os.environ.setdefault(name, "error")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    if not err_console.is_terminal:  # no tqdm redraws in logs and pipes (downloads keep theirs)
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    for module in _NOISY:
        warnings.filterwarnings("ignore", module=module)
        logging.getLogger(module).setLevel(logging.ERROR)


@app.callback()
def _main(
    verbose: Annotated[
        int, typer.Option("--verbose", "-v", count=True, help="-v info, -vv debug (every quirk).")
    ] = 0,
    debug: Annotated[
        bool, typer.Option("--debug", help="Show the Python traceback of an unexpected error.")
    ] = False,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet", "-q", help="No progress display (bars on a terminal, progress lines in logs)."
        ),
    ] = False,
) -> None:
    # global options: verbosity, tracebacks, progress (no docstring: it would replace the app's help)
    from culturebench.cli_support import set_quiet

    _DEBUG["on"] = debug
    set_quiet(quiet)
    _setup_logging(verbose)


@app.command("version")
def version_cmd() -> None:
    """Print the package version."""
    console.print(__version__)


@app.command("list")
def list_cmd() -> None:
    """List the datasets this package knows, with version and configs."""
    from culturebench import registry
    from culturebench.spec import load_spec

    rows = []
    for name, entry in or_exit(registry.datasets).items():
        spec = load_spec(name)
        rows.append(
            [name, spec.version, ", ".join(spec.configs), ", ".join(spec.languages),
             _plain(spec.raw.get("license")), ", ".join(entry.code), entry.origin]
        )  # fmt: skip
    columns = [("dataset", "word"), ("version", "word"), ("configs", "text"), ("languages", "text"),
               ("licence", "word"), ("code", "text"), ("from", "text")]  # fmt: skip
    _print_fitted(*_fit_table("culturebench datasets", columns, rows, drop=("from", "code")))


@app.command("info")
def info_cmd(name: Annotated[str, typer.Argument(help="Dataset name (see `culturebench list`).")]) -> None:
    """Show a dataset's version, configs, features, licence and pinned sources."""
    from culturebench.builders.sources import default_source
    from culturebench.cards.card import describe_type
    from culturebench.spec import load_spec

    spec = or_exit(lambda: load_spec(name))
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
            [feat["name"], describe_type(feat), _plain(spec.field_docs.get(feat["name"]))]
            for feat in cfg.features_yaml
        ]
        rows_text = f"{cfg.expected_rows:,} rows" if cfg.expected_rows else "rows not fixed"
        title = f"config {cfg.name} ({rows_text}): {cfg.description}"
        heads = [("field", "word"), ("type", "text"), ("description", "text")]
        _print_fitted(*_fit_table(title, heads, rows))
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


def _natural_key(text: str) -> tuple:
    """Sort key reading digit runs as numbers: Q1, Q2, ..., Q10 (not Q1, Q10, Q2)."""
    import re

    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", text))


def _plain(value: Any) -> str:
    """A value as people write it: blank for None, integers without decimals, lists and
    mappings as ``a, b`` / ``k v`` (never a Python repr)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return f"{int(value)}"
    if isinstance(value, dict):
        return ", ".join(f"{k} {_plain(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple, set)):
        return ", ".join(_plain(v) for v in value)
    return str(value)


def _fit_table(
    title: str | None,
    columns: list[tuple[str, str]],
    rows: list[list[str]],
    *,
    drop: tuple[str, ...] = (),
    width: int | None = None,
) -> tuple[Table, list[str]]:
    """A table that fits the console (80 columns in a pipe) with nothing cut: ``columns`` are
    ``(header, "text" | "num" | "word")``; numbers and words never wrap, text wraps between
    words only (each column at least its longest word wide), headers between words. While the
    table would be wider than the console, the columns named in ``drop`` are left out, in that
    order; the headers left out are returned (for a note)."""
    from rich import box

    width = width or console.width
    keep = list(range(len(columns)))

    def least(k: int) -> int:
        head, kind = columns[k]
        cells = [row[k] for row in rows]
        words = [w for text in cells for w in text.split()] if kind == "text" else cells
        return max((len(w) for w in (*head.split(), *words)), default=1)

    def natural(k: int) -> int:
        return max((len(row[k]) for row in rows), default=0) or least(k)

    def needed() -> int:
        return sum(least(k) for k in keep) + 2 * (len(keep) - 1)

    dropped = []
    for head in drop:
        if needed() <= width:
            break
        k = next(k for k in keep if columns[k][0] == head)
        keep.remove(k)
        dropped.append(head)
    widths = {k: max(least(k), natural(k)) for k in keep}
    spare = width - 2 * (len(keep) - 1)
    if sum(widths.values()) > spare:  # text columns share what the others leave, by their length
        widths = {k: least(k) for k in keep}
        texts = [k for k in keep if columns[k][1] == "text"]
        room = spare - sum(widths.values())
        while room > 0 and texts:
            grow = [k for k in texts if widths[k] < max(natural(k), len(columns[k][0]))]
            if not grow:
                break
            k = max(grow, key=lambda k: natural(k) - widths[k])
            widths[k] += 1
            room -= 1
    room = width - 2 * (len(keep) - 1) - sum(widths.values())
    for k in sorted(keep, key=lambda k: len(columns[k][0]) - widths[k]):  # whole headers, if room
        extra = len(columns[k][0]) - widths[k]
        if 0 < extra <= room:
            widths[k] += extra
            room -= extra
    table = Table(
        title=title,
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1),
        collapse_padding=True,
    )
    for k in keep:
        head, kind = columns[k]
        table.add_column(
            _wrap_words(head, widths[k]),
            justify="right" if kind == "num" else "left",
            no_wrap=kind != "text",
            overflow="fold",
            width=widths[k],
        )
    for row in rows:
        table.add_row(*(row[k] for k in keep))
    return table, dropped


def _wrap_words(text: str, width: int) -> str:
    """``text`` broken into lines of at most ``width`` characters between words."""
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "\n".join(lines)


def _count(value: Any) -> str:
    """A count as an integer with thousands separators (blank when there is none)."""
    from culturebench.eval.run_report import count_text

    return count_text(value) if value is not None and not isinstance(value, bool) else _plain(value)


def _print_fitted(table: Table, dropped: list[str], where: str = "") -> None:
    """Print a :func:`_fit_table` table and name the columns it left out."""
    console.print(table)
    if dropped:
        console.print(f"(columns left out at this width: {', '.join(dropped)}{where})", highlight=False)


def _print_build(result) -> None:
    stats = result.log.stats
    counts = result.log.counts()
    if counts:
        actions = result.log.actions()
        quirks = [[code, f"{count:,}", _plain(actions[code])] for code, count in counts.items()]
        _print_fitted(
            *_fit_table("upstream quirks handled (details: build_report.json, or -vv)",
                        [("quirk", "word"), ("count", "num"), ("action", "text")], quirks)
        )  # fmt: skip
    table = []
    for config, info in result.manifest["configs"].items():
        cstats = stats.get(config, {}) if isinstance(stats.get(config), dict) else {}
        for split, split_info in info["splits"].items():
            images, dishes = _count(cstats.get("images")), _count(cstats.get("dishes_with_images"))
            table.append([config, split, f"{split_info['num_rows']:,}", images, dishes])
    columns = [("config", "word"), ("split", "word"), ("rows", "num"), ("images", "num"),
               ("dishes with images", "num")]  # fmt: skip
    _print_fitted(*_fit_table("rows per config", columns, table))
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


@app.command("build")
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
    builder = or_exit(lambda: get_builder(name))

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
        result = or_exit(lambda: run(progress))
    if isinstance(result, UpToDate):
        console.print(f"{escape(str(result))} (--overwrite rebuilds it)")
        return
    _print_build(result)


@app.command("validate")
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
        err_console.print(f"[red]error:[/] {escape(str(folder))} is not a folder", soft_wrap=True)
        raise typer.Exit(EXIT_BAD_INPUT)
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
            or_exit(lambda: write_text_atomic(contact_sheet, page))
            console.print(
                f"contact sheet: {escape(str(contact_sheet))}: empty, {escape(why)}", soft_wrap=True
            )
    if json_out:
        from culturebench.atomic import write_text_atomic

        text = json_text(report.to_dict(), indent=2)
        or_exit(lambda: write_text_atomic(json_out, text))  # WriteFailed names the path
    if not report.ok:
        raise typer.Exit(EXIT_VALIDATION)


@app.command("card")
def card_cmd(
    folder: Annotated[Path, typer.Argument(help="A release folder, e.g. dist/NAME/VERSION.")],
    check: Annotated[
        bool, typer.Option(help="Only report whether the card, Croissant or eval.yaml are stale (exit 1).")
    ] = False,
) -> None:
    """Regenerate README.md (card + datasheet), croissant.json and eval.yaml (the Hub's benchmark
    file) of a release folder."""
    from culturebench.cards.write import CARD_FILES, card_inputs, stale_card_files, write_card_files

    spec, manifest = or_exit(lambda: card_inputs(folder))
    stale = or_exit(lambda: stale_card_files(folder, spec, manifest))
    if check:
        if stale:
            console.print(f"[red]stale:[/] {', '.join(stale)}")
            raise typer.Exit(EXIT_VALIDATION)
        console.print("card, croissant and eval.yaml are up to date")
        return
    or_exit(lambda: write_card_files(folder, spec, manifest))
    console.print(
        f"wrote {', '.join(CARD_FILES)} ({'changed: ' + ', '.join(stale) if stale else 'unchanged'})"
    )


@app.command("release")
@with_image_stage
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
    overwrite_json: Annotated[bool, typer.Option(help="Replace an existing --json file.")] = False,
    image_stage: Any = None,
) -> None:
    """Build -> validate (blocking) -> gate -> publish one commit + tag vX.Y.Z -> verify."""
    from culturebench.release import plan_release, publish_release

    claim_file(json_out, overwrite_json, flag="--json")
    from culturebench.release.pipeline import VerificationFailed
    from culturebench.release.targets import PublishError, parse_target
    from culturebench.spec import load_spec

    if repo:  # Hub flags not given on the command line come from the dataset's declaration
        from culturebench.release.targets import hub_flags

        private, gated = hub_flags(or_exit(lambda: load_spec(name)), private, gated)
    target = or_exit(
        lambda: parse_target(repo, to, private=bool(private), gated=bool(gated), endpoint=endpoint)
    )
    options = image_stage
    with steps(f"planning {name} {version}"):
        plan = or_exit(  # a folder that fails validation is a refused release (exit 3)
            lambda: plan_release(
                name, version, target, source=source, out_root=out, rebuild=rebuild, images=options
            ),
            validation_exit=EXIT_REFUSED,
        )
    _print_plan(plan)
    if json_out:
        from culturebench.atomic import write_text_atomic

        or_exit(lambda: write_text_atomic(json_out, json_text(plan.to_dict(), indent=2)))
    if plan.action == "noop":
        console.print(f"[green]{plan.tag} already published with identical content:[/] nothing to do")
        return
    try:  # a target that is not ready (not ours, dirty, no token) refuses the release (exit 3)
        target.check_ready(dry_run=dry_run)
    except PublishError as exc:
        err_console.print(f"[red]release refused:[/] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(EXIT_REFUSED) from exc
    if dry_run:
        console.print("[yellow]dry run:[/] nothing was uploaded or tagged")
        return
    try:
        with steps(f"publishing {plan.tag} to {plan.target}"):
            result = publish_release(plan, target)
    except PublishError as exc:
        err_console.print(f"[red]publish failed:[/] {exc}")
        raise typer.Exit(EXIT_PUBLISH_FAILED) from exc
    except VerificationFailed as exc:
        err_console.print(f"[bold red]VERIFICATION FAILED[/] for {plan.tag} on {plan.target}:")
        for problem in exc.problems:
            err_console.print(f"  [red]{problem}[/]")
        raise typer.Exit(EXIT_VERIFY_FAILED) from exc
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
    _print_fitted(*_fit_table(title, [("path", "word"), ("bytes", "num"), ("sha256", "word")], rows))


@app.command("check-urls")
def check_urls_cmd(
    target: Annotated[
        str, typer.Argument(help="Release folder, dataset name (latest in --dist), or hub:ORG/NAME[@REV].")
    ],
    sample: Annotated[int | None, typer.Option(min=1, help="Check a random sample of N URLs.")] = None,
    seed: Annotated[
        int | None,
        typer.Option(
            min=0, help="Seed of --sample (default: the ISO week, e.g. 2026-W48 -> 202648; printed)."
        ),
    ] = None,
    report: Annotated[
        Path | None, typer.Option(help="Report folder (default url-reports/<dataset>).")
    ] = None,
    history: Annotated[
        Path | None, typer.Option(help="History file (default <report>/history.json).")
    ] = None,
    dist: Annotated[Path, typer.Option(help="Root of release folders.")] = Path("dist"),
    allow: Annotated[
        list[str] | None, typer.Option(help="Private address/network to allow (e.g. 127.0.0.1).")
    ] = None,
    concurrency: Annotated[int, typer.Option(min=1, max=1024, help="Requests in flight overall.")] = 16,
    per_host: Annotated[int, typer.Option(min=1, max=64, help="Requests in flight per host.")] = 2,
    delay: Annotated[
        float,
        typer.Option(
            min=0.0, max=3600.0, callback=finite, help="Seconds between request starts to one host."
        ),
    ] = 0.5,
    timeout: Annotated[
        float,
        typer.Option(
            min=0.1,
            max=3600.0,
            callback=finite,
            help="Per-request timeout in seconds (also bounds each name resolution).",
        ),
    ] = 15.0,
    retries: Annotated[int, typer.Option(min=0, max=20, help="Retries on 5xx/429/timeouts.")] = 3,
    backoff: Annotated[
        float,
        typer.Option(min=0.0, max=600.0, callback=finite, help="First retry delay in seconds (doubles)."),
    ] = 1.0,
) -> None:
    """Check every external URL of a release; exit 1 if anything is newly broken, 6 if the
    network itself looks down (nothing recorded). SIGTERM or Ctrl-C stops it within seconds,
    writing nothing."""
    import signal

    from culturebench.release.locate import locate_release
    from culturebench.safe_http import parse_allow
    from culturebench.urlcheck import CheckConfig
    from culturebench.urlcheck.run import EXIT_NETWORK_DOWN, EXIT_NEWLY_BROKEN, check_release, week_seed

    or_exit(lambda: parse_allow(allow or ()))  # a bad --allow fails before any work
    folder = or_exit(lambda: locate_release(target, dist))
    config = CheckConfig(
        timeout_s=timeout,
        retries=retries,
        backoff_s=backoff,
        concurrency=concurrency,
        per_host=per_host,
        per_host_delay_s=delay,
        allow=tuple(allow or ()),
    )
    if sample is not None:
        seed = week_seed() if seed is None else seed
        console.print(f"sample: {sample} URLs drawn with seed {seed} (`--seed {seed}` draws the same)")
    try:
        with progress_bar() as bar:
            job = bar.add_task(f"checking {folder}", total=None)
            outcome = or_exit(
                lambda: check_release(
                    folder,
                    config,
                    report_dir=report,
                    history_path=history,
                    sample=sample,
                    seed=seed,
                    progress=lambda done, total: bar.update(job, completed=done, total=total),
                )
            )
    except (KeyboardInterrupt, SystemExit) as exc:  # Ctrl-C, or SIGTERM through main()'s handler
        code = 130 if isinstance(exc, KeyboardInterrupt) else exc.code
        if not isinstance(code, int) or code <= 128:
            raise
        try:
            why = signal.Signals(code - 128).name
        except ValueError:
            why = f"signal {code - 128}"
        err_console.print(
            f"[yellow]check-urls stopped ({why}):[/] no report written, the history is unchanged",
            soft_wrap=True,
        )
        raise SystemExit(code) from None
    summary, diff = outcome.summary, outcome.diff
    counts = ", ".join(f"{n} {status}" for status, n in summary["by_status"].items()) or "nothing"
    problems = ", ".join(f"{p} {n}" for p, n in summary["by_problem"].items()) or "none"
    console.print(f"checked {summary['checked']} URLs: {counts}; problems: {problems}")
    where = outcome.report_dir / "summary.md"
    if outcome.network_down:
        down = outcome.network_down
        err_console.print(
            f"[red]network looks down:[/] {down['unreachable_hosts']} of {down['hosts']} hosts failed "
            f"name resolution or connection and no URL answered; nothing recorded in the history "
            f"(exit {EXIT_NETWORK_DOWN}); report: {escape(str(where))}",
            soft_wrap=True,
        )
        raise typer.Exit(EXIT_NETWORK_DOWN)
    console.print(
        f"newly broken {len(diff.newly_broken)}, newly fixed {len(diff.newly_fixed)}, "
        f"still broken {len(diff.still_broken)}; report: {where} (every row: {where.parent / 'broken.csv'})"
    )
    if diff.newly_broken:
        raise typer.Exit(EXIT_NEWLY_BROKEN)


eval_app = typer.Typer(
    help="Run the papers' evaluations against pinned dataset revisions.", no_args_is_help=True
)
app.add_typer(eval_app, name="eval")


def _add_corpus_app() -> None:
    from culturebench.cli_corpus import corpus_app

    app.add_typer(corpus_app, name="corpus")


_add_corpus_app()


def _add_results_command() -> None:
    from culturebench.cli_results import register

    register(eval_app)


_add_results_command()


def _add_export_app() -> None:
    from culturebench.cli_interop import export_app

    app.add_typer(export_app, name="export")


_add_export_app()


@eval_app.command("list")
def eval_list_cmd(
    long: Annotated[bool, typer.Option("--long", help="Each task's description, in full.")] = False,
) -> None:
    """List evaluation tasks per dataset (with --long: their descriptions). Fits 80 columns."""
    from culturebench.eval.tasks import registry
    from culturebench.eval.tasks.base import load_prompts

    rows: list[list[str]] = []
    described = []
    for dataset, tasks in registry().items():
        prompts = load_prompts(dataset).get("tasks", {})
        for name, cls in tasks.items():  # class attributes: some tasks need options to exist
            options = ", ".join(sorted(cls.accepted_options())) or "-"
            rows.append([dataset, name, cls.config, "yes" if cls.needs_images else "no",
                         ",".join(cls.languages), options])  # fmt: skip
            text = str((prompts.get(name) or {}).get("description", ""))
            if cls.aliases:  # renamed tasks: the old names still work until they are dropped
                text += f" (formerly {', '.join(cls.aliases)})"
            described.append((f"{dataset}/{name}", text))
    columns = [("dataset", "word"), ("task", "word"), ("config", "word"), ("img", "word"), ("langs", "word"),
               ("options", "text")]  # fmt: skip
    _print_fitted(*_fit_table("evaluation tasks", columns, rows, drop=("img", "langs", "config")))
    if long:
        for title, text in described:
            console.print(f"[bold]{title}[/]: {text}", highlight=False)
    else:
        console.print("descriptions: culturebench eval list --long", highlight=False)


@eval_app.command("backends")
def eval_backends_cmd(
    backend: Annotated[str | None, typer.Argument(help="One backend (default: all).")] = None,
) -> None:
    """Each backend's options (--model-arg KEY=VALUE): type, default, and whether the option
    changes the outputs (part of a run's identity) or only the speed."""
    from culturebench.eval.backends import backend_names, backend_options

    names = [backend] if backend else backend_names()
    for name in names:
        options = or_exit(lambda name=name: backend_options(name))
        rows = [
            [o.name, _plain(o.kind), "-" if o.default is None else _plain(o.default),
             "outputs" if o.identity else "speed", _plain(o.help)]
            for o in options
        ]  # fmt: skip
        columns = [("option", "word"), ("type", "text"), ("default", "text"), ("changes", "word"),
                   ("help", "text")]  # fmt: skip
        _print_fitted(*_fit_table(f"--backend {name}", columns, rows))


ShardOption = Annotated[
    str | None,
    typer.Option(
        "--shard",
        help="Run only part K of N, e.g. 2/4 (cut by dish or question; one per GPU or array task); "
        "`culturebench eval merge` joins the N folders.",
    ),
]


FirstOption = Annotated[
    bool,
    typer.Option(
        "--first",
        help="With --limit N: the first N rows in release order (instead of N spread over the groups).",
    ),
]


def _print_limit(results: dict) -> None:
    """How --limit chose the rows, when it did (also in results.json and report.md)."""
    from culturebench.eval.coverage import limit_text

    text = limit_text(results.get("coverage") or {})
    if text:
        console.print(f"[yellow]{escape(text)}[/]", soft_wrap=True)


def parse_shard(text: str | None):
    """``K/N`` -> :class:`~culturebench.eval.shards.Shard`; None when not given."""
    from culturebench.eval.shards import Shard

    return Shard.parse(text) if text is not None else None


@eval_app.command("run")
@with_dataset_source
@with_engine(image=True)
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
        typer.Option(help="Generate every prompt once per seed, e.g. 0,1,2,3,4 (the WWD paper: 5 seeds)."),
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
) -> None:
    """Run (or resume) one evaluation; writes run.json, samples.jsonl, results.json, report.md.
    Text-to-image tasks store one PNG per (item, seed) under images/. With --shard K/N only
    the K-th of N parts (cut by dish or question); `eval merge` joins the parts."""
    from culturebench.eval.runner import run_eval
    from culturebench.eval.tasks import AnalysisTask
    from culturebench.eval.tasks import task_class as find_task

    task_options = or_exit(lambda: parse_task_options(option or []))
    seed_list = or_exit(lambda: parse_seeds(seeds))
    part = or_exit(lambda: parse_shard(shard))
    backend = None
    if issubclass(or_exit(lambda: find_task(dataset, task)), AnalysisTask):
        if engine.model:  # the analysis's own model (e.g. CLIP), passed as a task option
            task_options.setdefault("model", engine.model)
            if engine.model_revision:
                task_options.setdefault("model_revision", engine.model_revision)
    elif not engine.model:
        err_console.print(f"[red]error:[/] {dataset}/{task} needs --model")
        raise typer.Exit(EXIT_BAD_INPUT)
    else:
        backend = engine.make()
    with progress_bar() as bar:
        job = bar.add_task(f"{dataset}/{task}", total=None)
        results = or_exit(
            lambda: run_eval(
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
            )
        )
    what = f"{results['samples']} samples" + (f" (shard {part})" if part else "")
    _print_limit(results)
    console.print(f"{what}; results: {out / 'results.json'}; report: {out / 'report.md'}")
    _print_headlines(f"{dataset}/{task}", results["metrics"])


@eval_app.command("reproduce")
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
) -> None:
    """Run the paper's whole grid for one model (every task, language, template and seed the
    paper used, with its sampling; `grid:` in the dataset's paper.yaml), then write the
    `eval paper` report with the model beside the paper's models. Cells resume; a rerun does
    no new work. The grid's sampling replaces --max-new-tokens and --temperature."""
    from culturebench.eval import reproduce as rep
    from culturebench.eval.grid import DEFAULT_KINDS, load_grid

    grid = or_exit(lambda: load_grid(dataset))
    out = out or Path("out/reproduce") / dataset
    kinds = tuple(kind or DEFAULT_KINDS["image" if engine.makes_images else "text"])
    cells = or_exit(lambda: grid.select(only=_names(only), skip=_names(skip), kinds=kinds))
    part = or_exit(lambda: parse_shard(shard))
    or_exit(lambda: rep.check_image_tokens(image_tokens))
    # the reproduction folder, checked before any work and again before anything is written
    check = {"run": not plan_only, "model": engine.model, "shard": part, "cells": [c.name for c in cells]}
    or_exit(lambda: rep.check_out(out, dataset, **check))
    model_args = engine.checked_model_args() if engine.model else {}
    saved = throughput_file or Path("out/bench/throughput.json")
    rate = or_exit(
        lambda: rep.Throughput.choose(
            throughput, saved, engine.backend, saved_given=throughput_file is not None
        )
    )
    with progress_bar() as bar:
        job = bar.add_task("counting the work", total=len(cells))
        plans = or_exit(
            lambda: rep.plan(
                grid, cells, out=out, source=source.as_kwargs(), limit=limit, first=first, model=engine.model,
                model_revision=engine.model_revision, model_args=model_args, throughput=rate,
                image_tokens=image_tokens,
                progress=lambda name: bar.update(job, advance=1, description=f"counting {name}"),
            )
        )  # fmt: skip
    or_exit(lambda: rep.check_shard_units(plans, part))  # N shards need N units in every cell
    document = rep.plan_document(dataset, plans, rate, engine.model, image_tokens)
    _print_plan_table(document, grid)
    if plan_only:
        or_exit(lambda: _write_plan(out, document, check))
        console.print(f"wrote {out / rep.PLAN}")
        return
    or_exit(lambda: rep.check_runnable(plans))
    if not engine.model:
        err_console.print(f"[red]error:[/] eval reproduce {dataset} needs --model (or --plan)")
        raise typer.Exit(EXIT_BAD_INPUT)
    backend = engine.make()
    names = [c.name for c in cells]
    # a model that cannot load fails before reproduce.json is written (nothing loads for a rerun)
    or_exit(
        lambda: rep.write_record(out, dataset, engine.model, names, part, check=check, prepare=backend.load)
    )
    with progress_bar() as bar:

        def on_cell(cell):
            job = bar.add_task(f"{dataset}/{cell.name}", total=None)
            return lambda done, total: bar.update(job, completed=done, total=total)

        or_exit(
            lambda: rep.run_cells(
                grid, cells, backend, out, source=source.as_kwargs(), limit=limit,
                batch_size=engine.batch_size, shard=part, on_cell=on_cell, first=first,
            )
        )  # fmt: skip
    if part:
        console.print(
            f"shard {part} of {len(cells)} cells in {out}; when every shard is done: "
            f"culturebench eval merge SHARD_FOLDERS... --out MERGED, then this command with --out MERGED"
        )
        return
    _reproduce_report(dataset, grid, out, source)


def _names(text: str | None) -> list[str]:
    return [n.strip() for n in (text or "").split(",") if n.strip()]


def _write_plan(out: Path, document: dict, check: dict) -> None:
    """``OUT/plan.json``, through the reproduction folder's output policy (checked again under
    its writer lock; refused, with nothing written, when it would hold a credential: a plan
    names the model and its options)."""
    from culturebench.eval.reproduce import PLAN, write_into
    from culturebench.jsonsafe import json_text

    write_into(out, document["dataset"], {PLAN: json_text(document, indent=2)}, **check)


def _print_plan_table(document: dict, grid) -> None:
    """The plan as a table: per cell the requests, images, prompt size, new tokens, GPU-hours."""
    estimated = not document["tokens_counted"]
    model = f" for {document['model']}" if document["model"] else ""
    title = f"{document['dataset']}: the paper's grid{model}"

    def num(value, digits: int = 0) -> str:
        return "-" if value is None else f"{value:,.{digits}f}"

    rows = []
    for p in document["cells"]:
        seeds = str(len(p["seeds"])) if p["seeds"] else "1"
        rows.append([
            p["cell"], p["kind"], ",".join(p["langs"]), num(p["units"]), num(p["requests"]), seeds,
            num(p["generations"]), num(p["images_per_request"], 2), num(p["prompt_tokens_planned"]),
            num(p["max_new_tokens"]), num(p["gpu_hours"], 2),
        ])  # fmt: skip
    total = document["total"]
    rows.append(["total", "", "", "", num(total["requests"]), "", num(total["generations"]), "", "", "",
                 num(total["gpu_hours"], 2)])  # fmt: skip
    columns = [("cell", "word"), ("kind", "word"), ("langs", "word"), ("units", "num"), ("requests", "num"),
               ("seeds", "num"), ("generations", "num"), ("img per req", "num"),
               ("prompt tokens" + (" (est.)" if estimated else ""), "num"), ("max new", "num"),
               ("GPU-h", "num")]  # fmt: skip
    drop = ("requests", "kind", "seeds", "langs", "img per req")
    _print_fitted(*_fit_table(title, columns, rows, drop=drop), " (all in plan.json)")
    for p in document["cells"]:
        if p["note"]:
            console.print(f"  {p['cell']}: {p['note']}")
    images = any(p["images_per_request"] for p in document["cells"])
    per_image = f"; {document['image_tokens_per_image']} per image (--image-tokens)" if images else ""
    console.print(f"Prompt tokens: {document['tokens']}{per_image}.")
    console.print(f"GPU-hours: {document['throughput_source']}; {document['gpu_hours_assume']}.")
    if grid.why:
        console.print(f"Grid: {grid.why}")


def _reproduce_report(dataset: str, grid, out: Path, source: DatasetSource) -> None:
    from culturebench.eval.paper_report import build_report
    from culturebench.eval.reproduce import PAPER, report_folders

    folders = report_folders(out, grid)
    report = or_exit(
        lambda: build_report(dataset, folders, out / PAPER, **source.as_kwargs(), overwrite=True)
    )
    counts = "; ".join(f"{n} {s}" for s, n in report["status_counts"].items() if n)  # statuses hold commas
    console.print(f"{len(folders)} cell runs; paper report: {len(report['items'])} items ({counts}); "
                  f"wrote {out / PAPER / 'paper_report.md'}")  # fmt: skip


@eval_app.command("merge")
def eval_merge_cmd(
    folders: Annotated[list[Path], typer.Argument(help="The finished shard folders (every part 1..N once).")],
    out: Annotated[Path, typer.Option(help="The merged run folder (new or empty).")],
) -> None:
    """Join the N shards of one run (`eval run --shard K/N`) into the folder one process
    writes: same samples, results and report, byte for byte."""
    from culturebench.eval.merge import merge_reproductions, merge_shards
    from culturebench.eval.reproduce import REPRODUCE, read_record

    records = [or_exit(lambda f=f: read_record(f, strict=True)) for f in folders]  # corrupt: one line
    if any(records) and not all(records):
        whole, part = folders[records.index(None)], folders[[bool(r) for r in records].index(True)]
        line = (
            f"{part} is a reproduction folder ({REPRODUCE}), {whole} is not; merge the shard folders "
            "of one `eval reproduce --shard` or of one `eval run --shard`"
        )
        err_console.print(f"[red]error:[/] {escape(line)}", soft_wrap=True)
        raise typer.Exit(EXIT_BAD_INPUT)
    if all(records):
        cells = or_exit(lambda: merge_reproductions(folders, out))
        console.print(
            f"merged {len(folders)} shards of {len(cells)} cells into {out}; the paper report: "
            f"culturebench eval reproduce DATASET --model M --out {out}"
        )
        return
    results = or_exit(lambda: merge_shards(folders, out))
    console.print(
        f"merged {len(folders)} shards: {results['samples']} samples; results: {out / 'results.json'}; "
        f"report: {out / 'report.md'}"
    )
    _print_headlines(
        f"{results['provenance']['dataset']['dataset']}/{results['provenance']['task']}", results["metrics"]
    )


def _print_headlines(title: str, metrics: dict) -> None:
    """The run's headline metrics as a table: value with its 95% CI (or ± SEM) and n; a run
    whose results are all breakdowns (e.g. per continent x model) prints those instead."""
    from culturebench.eval.run_report import breakdowns, headlines

    items = headlines(metrics)
    if not items:
        for group, name, rows in breakdowns(metrics):
            _print_breakdown(f"{title}: {name if group == 'all' else group + ' ' + name}", rows)
        return
    rows = [[_plain(h.group), _plain(h.metric), h.formatted(), _count(h.n)] for h in items]
    columns = [("group", "text"), ("metric", "text"), ("value (95% CI or ± SEM)", "text"), ("n", "num")]
    _print_fitted(*_fit_table(f"{title}: headline metrics", columns, rows))


def _print_breakdown(title: str, rows: dict, limit: int = 40) -> None:
    from culturebench.eval.run_report import cell_text, is_count_column

    columns = list(dict.fromkeys(k for row in rows.values() for k in row if cell_text(row[k])))

    def cell(column: str, value: Any) -> str:  # a count reads 8, not 8.000
        if is_count_column(column) and isinstance(value, (int, float)) and float(value).is_integer():
            return _count(value)
        return cell_text(value)

    labels = sorted(rows, key=lambda label: _natural_key(str(label)))[:limit]
    table_rows = [[str(label), *(cell(c, rows[label].get(c)) for c in columns)] for label in labels]
    heads = [("", "word"), *((str(c), "num") for c in columns)]
    # too many columns for the width: the rightmost are left out (all are in results.json)
    _print_fitted(*_fit_table(title, heads, table_rows, drop=tuple(str(c) for c in reversed(columns[1:]))),
                  " (in results.json)")  # fmt: skip
    if len(rows) > limit:
        console.print(f"... {len(rows) - limit} more rows in results.json")


@eval_app.command("score")
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
        str, typer.Option(help="--matcher llm: transformers, vllm or openai.")
    ] = "transformers",
    judge_base_url: Annotated[
        str | None, typer.Option(help="--matcher llm, openai backend: base URL.")
    ] = None,
    judge_model_arg: Annotated[
        list[str] | None,
        typer.Option(
            "--judge-model-arg", help="--matcher llm: a judge backend option KEY=VALUE (repeatable)."
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
    with progress_bar() as bar:
        jobs: dict[str, int] = {}

        def show(name: str, done: int, total: int) -> None:
            if name not in jobs:
                jobs[name] = bar.add_task(f"scoring {dataset}/{name}", total=total)
            bar.update(jobs[name], completed=done, total=total)

        done = or_exit(
            lambda: score_tasks(
                dataset, names, generations, out, layout=layout, **source.as_kwargs(), task_options=options,
                judge=judge, progress=show, model_name=model,
            )
        )  # fmt: skip
    for name, results in done.items():
        folder = out / name if len(names) > 1 else out
        console.print(f"{name}: {results['samples']} samples of {results['items']} items -> {folder}")
        if results.get("duplicate_generations"):
            console.print(
                f"  {results['duplicate_generations']} identical duplicates across files scored once"
            )
        _print_headlines(f"{dataset}/{name}", results["metrics"])
    hooks = registry.get(dataset).report()
    if len(names) > 1 and hooks is not None and hasattr(hooks, "summary_files"):
        for path in hooks.summary_files(done, out):
            console.print(f"wrote {path}")


@eval_app.command("compare")
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
    _print_fitted(
        *_fit_table(
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
    _print_fitted(*_fit_table(title, columns, cells))
    console.print(tally(rows, printed))
    if out:
        from culturebench.atomic import write_text_atomic

        or_exit(lambda: write_text_atomic(out, printed_markdown(rows, str(table_file), printed)))
        console.print(f"wrote {out}")


@eval_app.command("tiny-model")
def eval_tiny_model_cmd(
    path: Annotated[Path, typer.Argument(help="Folder to create.")],
    seed: Annotated[int, typer.Option(min=0, max=2**32 - 1, help="Weight initialisation seed.")] = 0,
    vision: Annotated[
        bool, typer.Option("--vision", help="A LLaVA-style vision-language model (image tasks).")
    ] = False,
    t2i: Annotated[
        bool, typer.Option("--t2i", help="A Stable Diffusion pipeline (text-to-image tasks, 64x64).")
    ] = False,
    clip: Annotated[bool, typer.Option("--clip", help="A CLIP model (image and text embeddings).")] = False,
    dinov2: Annotated[
        bool, typer.Option("--dinov2", help="A DINOv2 model ([CLS] image embeddings).")
    ] = False,
) -> None:
    """Build a tiny random model locally (no download) for offline smoke runs; default: a
    2-layer Llama text model."""
    from culturebench.eval import tiny

    chosen = [
        name for name, flag in (("vision", vision), ("t2i", t2i), ("clip", clip), ("dinov2", dinov2)) if flag
    ]
    if len(chosen) > 1:
        err_console.print(
            f"[red]error:[/] choose one of --vision, --t2i, --clip, --dinov2 (got {', '.join(chosen)})"
        )
        raise typer.Exit(EXIT_BAD_INPUT)
    kind = chosen[0] if chosen else "text"
    build = {
        "text": tiny.build_tiny_llama,
        "vision": tiny.build_tiny_llava,
        "t2i": tiny.build_tiny_sd,
        "clip": tiny.build_tiny_clip,
        "dinov2": tiny.build_tiny_dinov2,
    }[kind]
    from culturebench.outputs import MARKER, OutputKind, check_parents, kind_of, write_marker

    or_exit(lambda: check_parents(path, "tiny-model"))
    mark = OutputKind(f"tiny-model-{kind}")
    if path.is_dir() and kind_of(path) == mark.name:
        recorded = json.loads((path / MARKER).read_text(encoding="utf-8")).get("seed")
        if recorded == seed:  # a rerun (the docs build /tmp/tiny in two sections)
            console.print(f"tiny {kind} model already in {path} (seed {seed}); nothing to do")
            return
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        err_console.print(
            f"[red]error:[/] {escape(str(path))} exists and is not an empty folder", soft_wrap=True
        )
        raise typer.Exit(EXIT_BAD_INPUT)
    what = {
        "text": "",
        "vision": "vision-language ",
        "t2i": "text-to-image ",
        "clip": "CLIP ",
        "dinov2": "DINOv2 ",
    }
    from huggingface_hub.utils import disable_progress_bars

    disable_progress_bars()  # "Writing model shards" for a model of a few kB
    written = or_exit(lambda: build(path, seed=seed))
    write_marker(Path(written), mark, seed=seed)
    console.print(f"tiny {what[kind]}model written to {written}")


@eval_app.command("report")
def eval_report_cmd(
    folders: Annotated[list[Path], typer.Argument(help="Result folders of `eval run`.")],
    out: Annotated[Path, typer.Option(help="Report file.")] = Path("out/report.md"),
    overwrite: FileOverwriteOption = False,
) -> None:
    """Write one Markdown report (tables with 95% CIs, plots) over several runs."""
    from culturebench.eval.run_report import write_report

    claim_file(out, overwrite, folders)
    missing = [str(f) for f in folders if not (f / "results.json").is_file()]
    if missing:
        err_console.print(f"[red]error:[/] no results.json in {', '.join(missing)}")
        raise typer.Exit(EXIT_BAD_INPUT)
    console.print(f"wrote {or_exit(lambda: write_report(folders, out))}")


@eval_app.command("paper")
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


def _key_value(item: str, flag: str, shape: str, *, need_value: bool) -> tuple[str, str]:
    """``KEY=VALUE`` split once at the first ``=``; a one-line error naming ``flag`` otherwise."""
    from culturebench.errors import UsageError

    key, sep, value = item.partition("=")
    if not sep or not key.strip() or (need_value and not value.strip()):
        raise UsageError(f"{flag} {item!r}: expected {shape}")
    return key.strip(), value


def parse_inputs(items: list[str]) -> dict[str, str]:
    """``KEY=PATH`` items -> {key: path}; a key given twice is an error (one would be lost)."""
    from culturebench.errors import UsageError

    out: dict[str, str] = {}
    for item in items:
        key, path = _key_value(item, "--input", "KEY=PATH", need_value=True)
        if key in out:
            raise UsageError(f"--input {key} is given twice ({out[key]} and {path.strip()}); give it once")
        out[key] = path.strip()
    return out


def parse_seeds(text: str | None) -> list[int] | None:
    """``0,1,2`` -> [0, 1, 2] (distinct integers); None when not given."""
    from culturebench.errors import UsageError

    if not text:
        return None
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UsageError(f"--seeds {text!r}: expected integers separated by commas, e.g. 0,1,2,3,4") from None
    if not values or len(set(values)) != len(values):
        raise UsageError(f"--seeds {text!r}: give distinct integers")
    return values


def parse_task_options(items: list[str]) -> dict:
    """``KEY=VALUE`` pairs as a dict; values read as YAML scalars (``3`` -> 3, ``true``)."""
    import yaml

    from culturebench.yamlio import load_yaml

    out = {}
    for item in items:
        key, value = _key_value(item, "--option", "KEY=VALUE", need_value=False)
        try:
            out[key] = load_yaml(value) if value.strip() else None
        except yaml.YAMLError:
            out[key] = value
    return out


def _register_dataset_commands() -> None:
    """Commands that belong to one dataset (``dataset.yaml`` code.cli): ``register(eval_app)``
    adds evaluation commands to ``eval``; an optional ``register_corpus(corpus_app)`` adds the
    dataset's analyses of a corpus count to ``corpus``; an optional ``maintain(group)`` fills a
    command group named after the dataset (``culturebench <dataset> ...``). A registry error is
    not raised here: commands that use the registry report it."""
    from culturebench import registry
    from culturebench.cli_corpus import corpus_app

    try:
        entries = registry.datasets()
    except CultureBenchError:
        return
    for entry in entries.values():
        module = entry.module("cli")
        if module is None:
            continue
        module.register(eval_app)
        if hasattr(module, "register_corpus"):
            module.register_corpus(corpus_app)
        if hasattr(module, "maintain"):
            group = typer.Typer(
                help=f"Maintain {entry.name}: stages and checks of its own.", no_args_is_help=True
            )
            module.maintain(group)
            app.add_typer(group, name=entry.name)


_register_dataset_commands()


def main() -> None:
    """Console-script entry point. Any error the package did not anticipate becomes one
    line (exit 2) with a hint; ``--debug`` shows the traceback instead."""
    import signal
    import sys

    def terminate(signum: int, _frame: object) -> None:  # SIGTERM (a scheduler's kill, `timeout`)
        raise SystemExit(128 + signum)  # unwinds like Ctrl-C: locks released, staging removed

    signal.signal(signal.SIGTERM, terminate)
    try:
        app()
    except KeyboardInterrupt:
        err_console.print("[yellow]interrupted[/]")
        sys.exit(130)
    except CultureBenchError as exc:  # raised outside a command's own handling (e.g. discovery)
        from culturebench.safe_http import redact

        err_console.print(f"[red]error:[/] {escape(redact(exc))}", soft_wrap=True)
        sys.exit(EXIT_BAD_INPUT)
    except Exception as exc:
        if _DEBUG["on"]:
            raise
        line = os_error_line(exc) if isinstance(exc, OSError) else None
        if line is not None:  # permissions, a folder where a file goes, a full disk
            err_console.print(f"[red]error:[/] {escape(line)}", soft_wrap=True)
            sys.exit(EXIT_BAD_INPUT)
        from culturebench.safe_http import redact

        message = (str(exc).strip().splitlines() or [""])[0][:300]
        err_console.print(
            f"[red]error:[/] {type(exc).__name__}: {escape(redact(message))}\n"
            "(unexpected; rerun with `culturebench --debug ...` for the traceback)",
            soft_wrap=True,
        )
        sys.exit(EXIT_BAD_INPUT)


if __name__ == "__main__":  # pragma: no cover
    main()
