"""The ``culturebench`` application: global options, the command groups, dataset commands,
and the entry point that turns any unanticipated error into one line."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import typer
from rich.markup import escape
from typer.core import TyperGroup

from culturebench.cli.errors import EXIT_BAD_INPUT, report_error
from culturebench.cli.output import (
    err_console,
)
from culturebench.errors import CultureBenchError


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
    """The top-level command group and the command line's one error handler: an error of the
    package (:class:`~culturebench.errors.CultureBenchError`, raised anywhere in a command)
    prints as its one line with the exit code its class carries
    (:func:`~culturebench.cli.errors.report_error`); a usage error (an unknown option, a value
    of the wrong type, a missing argument) prints as one line naming the command and the
    option, instead of click's usage box; help and exit codes are unchanged."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **kwargs: Any,
    ) -> Any:
        given = {
            "args": args,
            "prog_name": prog_name,
            "complete_var": complete_var,
            "windows_expand_args": windows_expand_args,
            **kwargs,
        }
        if not standalone_mode:
            return super().main(**given, standalone_mode=False)
        try:
            code = super().main(**given, standalone_mode=False)
        except (CultureBenchError, OSError) as exc:  # the one handler of the package's own errors
            code = report_error(exc)
            if code is None:  # a system error that names no path: unexpected (`main`)
                raise
            sys.exit(code)
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


@dataclass
class GlobalOptions:
    """The global options that :func:`main` reads after the app has returned or raised (the
    app callback sets them from the command line)."""

    debug: bool = False  # --debug: an unexpected error shows its traceback instead of one line


GLOBAL_OPTIONS = GlobalOptions()


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
    from culturebench.cli.progress import set_quiet

    GLOBAL_OPTIONS.debug = debug
    set_quiet(quiet)
    _setup_logging(verbose)


eval_app = typer.Typer(
    help="Run the papers' evaluations against pinned dataset revisions.", no_args_is_help=True
)


def _register_dataset_commands() -> None:
    """Commands that belong to one dataset (``dataset.yaml`` code.cli): ``register(eval_app)``
    adds evaluation commands to ``eval``; an optional ``register_corpus(corpus_app)`` adds the
    dataset's analyses of a corpus count to ``corpus``; an optional ``maintain(group)`` fills a
    command group named after the dataset (``culturebench <dataset> ...``). A registry error is
    not raised here: commands that use the registry report it."""
    from culturebench import registry
    from culturebench.cli.corpus import corpus_app

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


def _assemble() -> None:
    """Every command group, in the order ``--help`` lists them, then the datasets' own
    commands: done once, when this module is first imported (``culturebench.cli.app`` or the
    entry point), never by importing a helper module."""
    from culturebench.cli import datasets, eval_models, eval_runs, eval_scoring, results, site, urls
    from culturebench.cli.corpus import corpus_app
    from culturebench.cli.export import export_app
    from culturebench.cli.response_cache import cache_app

    datasets.commands.register(app)
    urls.commands.register(app)
    site.commands.register(app)
    for module in (eval_models, eval_runs, eval_scoring):
        module.commands.register(eval_app)
    results.register(eval_app)
    app.add_typer(eval_app, name="eval")
    app.add_typer(corpus_app, name="corpus")
    app.add_typer(export_app, name="export")
    app.add_typer(cache_app, name="cache")
    _register_dataset_commands()


_assemble()


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
    except CultureBenchError as exc:  # raised outside a command (e.g. discovery): the same policy
        sys.exit(report_error(exc))
    except Exception as exc:
        if GLOBAL_OPTIONS.debug:
            raise
        from culturebench.extras import install_line, missing_extra

        needed = missing_extra(exc)
        if needed is not None:  # an optional extra that is not installed
            err_console.print(f"[red]error:[/] {escape(install_line(*needed))}", soft_wrap=True)
            sys.exit(EXIT_BAD_INPUT)
        from culturebench.safe_http import redact

        message = (str(exc).strip().splitlines() or [""])[0][:300]
        err_console.print(
            f"[red]error:[/] {type(exc).__name__}: {escape(redact(message))}\n"
            "(unexpected; rerun with `culturebench --debug ...` for the traceback)",
            soft_wrap=True,
        )
        sys.exit(EXIT_BAD_INPUT)
