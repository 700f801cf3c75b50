"""The command line's one error path and its option names (docs/commands.md): every error class
carries its exit code and one handler prints it; no command exits by hand with the bad-input
code; the deprecated spellings still work, each printing one deprecation line."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

from culturebench.cli import app
from culturebench.cli.application import _OneLineUsageErrors
from culturebench.cli.options import deprecated_alias, deprecation_line
from culturebench.errors import (
    CultureBenchError,
    Location,
    PublishFailed,
    ReleaseRefused,
    SourceError,
    UsageError,
    ValidationFailed,
    VerificationFailed,
)
from culturebench.outputs import OutputRefused

pytestmark = pytest.mark.unit  # the CLI in process (CliRunner): no server, no subprocess

ROOT = Path(__file__).resolve().parents[1]
HANDLER = ("errors.py", "application.py")  # the one handler: report_error and the entry point
COMMAND_MODULES = sorted((ROOT / "culturebench" / "cli").glob("*.py")) + sorted(
    ROOT.glob("datasets/*/cli.py")
)


def _one_app(raise_it) -> typer.Typer:
    """An application with the top-level group of `culturebench` and one command raising."""
    one = typer.Typer(cls=_OneLineUsageErrors, add_completion=False)

    @one.command("boom")
    def boom() -> None:
        raise_it()

    @one.command("other")
    def other() -> None:  # a second command, so `boom` is a subcommand as in the real CLI
        pass

    return one


def _report():
    from culturebench.validation.findings import Finding, ValidationReport

    report = ValidationReport(target="dist/x/1.0.0")
    report.add(Finding(check="schema:rows", severity="error", message="row 3 has no id"))
    return report


def _oserror() -> OSError:
    return PermissionError(13, "Permission denied", "/somewhere/out.json")


CASES = {
    "bad input": (
        lambda: SourceError(Location("data.csv", 5, "country"), "unknown code 'XX'"),
        2,
        "bad input: data.csv, row 5, field 'country': unknown code 'XX'",
    ),
    "usage": (lambda: UsageError("eval run x needs --model"), 2, "error: eval run x needs --model"),
    "output refused": (lambda: OutputRefused("--out f is a folder"), 2, "error: --out f is a folder"),
    "any of ours": (lambda: CultureBenchError("something named"), 2, "error: something named"),
    "validation": (
        lambda: ValidationFailed(_report(), "x: validation failed"),
        1,
        "x: validation failed: nothing was written",
    ),
    "validation in a release": (
        lambda: ValidationFailed(_report(), "x: dirty", exit_code=3),
        3,
        "x: dirty: nothing was written",
    ),
    "refused": (lambda: ReleaseRefused("no CHANGELOG entry"), 3, "release refused: no CHANGELOG entry"),
    "publish": (lambda: PublishFailed("upload failed"), 4, "publish failed: upload failed"),
    "verify": (
        lambda: VerificationFailed(["a.parquet: sha256 differs"], "v1.0.0 on git:x"),
        5,
        "VERIFICATION FAILED for v1.0.0 on git:x:",
    ),
    "system error with a path": (_oserror, 2, "error: /somewhere/out.json: Permission denied"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_each_error_class_maps_to_its_exit_code_through_the_cli(name: str) -> None:
    make, code, line = CASES[name]

    def raise_it() -> None:
        raise make()

    result = CliRunner().invoke(_one_app(raise_it), ["boom"])
    assert result.exit_code == code, (name, result.output, result.exception)
    assert line in result.output and "Traceback" not in result.output, result.output
    if isinstance(make(), ValidationFailed):
        assert "row 3 has no id" in result.output  # the findings, then the line
    if isinstance(make(), VerificationFailed):
        assert "a.parquet: sha256 differs" in result.output


def test_the_documented_exit_codes_are_the_classes_codes() -> None:
    """docs/commands.md's exit-code table and the classes' ``exit_code`` agree."""
    import culturebench.errors as errors
    import culturebench.outputs as outputs

    text = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    table = text[text.index("## Exit codes and errors") : text.index("## Option names")]
    seen = {}
    for exit_code, classes in re.findall(r"^\| (\d) \|[^|]*\| ([^|]*)\|$", table, re.M):
        for name in re.findall(r"`(\w+)`", classes):
            seen[name] = int(exit_code)
    assert {"ValidationFailed", "CultureBenchError", "ReleaseRefused", "PublishFailed"} <= set(seen)
    for name, code in seen.items():
        assert getattr(errors, name, None) or getattr(outputs, name), name
        assert (getattr(errors, name, None) or getattr(outputs, name)).exit_code == code, name


def test_a_real_command_raises_and_the_handler_prints() -> None:
    """Through the real application: a refused input is one line and exit 2, from an error
    the command raised (no hand-written exit)."""
    result = CliRunner().invoke(app, ["validate", "/nonexistent/folder"])
    assert result.exit_code == 2 and result.output.strip() == "error: /nonexistent/folder is not a folder"


def _calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            yield name, node


def test_no_command_exits_by_hand_with_the_bad_input_code_and_or_exit_is_gone() -> None:
    """Commands raise the package's errors: no ``or_exit`` anywhere, and outside the one handler
    (cli/errors.py, cli/application.py) no ``typer.Exit``/``sys.exit`` with code 2
    (``EXIT_BAD_INPUT``) and no hand-printed ``error:`` line."""
    problems = []
    for path in COMMAND_MODULES:
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        where = path.relative_to(ROOT)
        names = {getattr(n, "id", None) or getattr(n, "name", None) for n in ast.walk(tree)}
        if "or_exit" in names:
            problems.append(f"{where}: or_exit")
        if path.name in HANDLER:
            continue
        for name, call in _calls(tree):
            if name in ("Exit", "exit") and call.args:
                arg = call.args[0]
                if (isinstance(arg, ast.Name) and arg.id == "EXIT_BAD_INPUT") or (
                    isinstance(arg, ast.Constant) and arg.value == 2
                ):
                    problems.append(f"{where}:{call.lineno}: exits with the bad-input code by hand")
        if "[red]error:" in source:
            problems.append(f"{where}: prints an error line by hand")
    assert problems == []


def test_the_check_above_catches_a_hand_written_exit(tmp_path: Path) -> None:
    """The AST check is not vacuous: the old pattern is found."""
    old = "import typer\ndef f():\n    raise typer.Exit(EXIT_BAD_INPUT)\n"
    assert [name for name, _ in _calls(ast.parse(old))] == ["Exit"]


# ------------------------------------------------------------------------ deprecated spellings
def _deprecations(output: str, old: str, new: str) -> int:
    return output.count(deprecation_line(old, new))


def test_an_alias_sets_the_new_option_and_warns_once() -> None:
    """The mechanism, on a command of its own: the old spelling sets the new parameter (when
    the new one is not given), prints the line once, and is hidden from --help."""
    seen = {}
    one = typer.Typer(cls=_OneLineUsageErrors, add_completion=False)

    @one.command("publish")
    @deprecated_alias("--to-space", "to")
    def publish(to: Annotated[str | None, typer.Option("--to")] = None) -> None:
        seen["to"] = to

    @one.command("other")
    def other() -> None:
        pass

    runner = CliRunner()
    result = runner.invoke(one, ["publish", "--to-space", "org/site"])
    assert result.exit_code == 0 and seen["to"] == "org/site", result.output
    assert _deprecations(result.output, "--to-space", "--to") == 1
    result = runner.invoke(one, ["publish", "--to", "org/new"])
    assert seen["to"] == "org/new" and "deprecated" not in result.output
    assert "--to-space" not in runner.invoke(one, ["publish", "--help"]).output


def test_to_repo_is_read_as_to() -> None:
    result = CliRunner().invoke(
        app, ["eval", "results", "/nonexistent", "--out", "/tmp/x", "--to-repo", "no"]
    )
    assert result.exit_code == 2
    assert "--to 'no': expected ORG/MODEL" in result.output  # the value reached --to
    assert _deprecations(result.output, "--to-repo", "--to") == 1


def test_to_space_is_read_as_to_and_hidden() -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["site", "/nonexistent/runs", "--to-space", "org/site"])
    assert result.exit_code == 2 and _deprecations(result.output, "--to-space", "--to") == 1
    assert "--to-space" not in runner.invoke(app, ["site", "--help"]).output


def test_seeds_is_read_as_repeat_seeds() -> None:
    args = ["eval", "run", "borsch", "--task", "origin-qa", "--model", "m", "--seeds", "1,1"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "--repeat-seeds '1,1': give distinct integers" in result.output  # the value was parsed
    assert _deprecations(result.output, "--seeds", "--repeat-seeds") == 1


def test_model_args_is_still_read_and_warns_once(tmp_path: Path) -> None:
    model, out = str(tmp_path / "m"), str(tmp_path / "run")
    args = ["eval", "run", "borsch", "--task", "origin-qa", "--model", model, "--backend", "vllm",
            "--model-args", "tensor_parallel=4,dtype=bfloat16", "--out", out]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "backend vllm has no option 'tensor_parallel'" in result.output  # split and checked
    assert _deprecations(result.output, "--model-args", "--model-arg") == 1


def test_overwrite_json_is_read_as_overwrite(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text("{}", encoding="utf-8")
    args = ["release", "ash", "--version", "1.x", "--to", f"git:{tmp_path / 'g'}", "--json", str(plan)]
    runner = CliRunner()
    refused = runner.invoke(app, args)  # an existing --json file needs --overwrite
    assert refused.exit_code == 2 and "--overwrite" in refused.output and "malformed" not in refused.output
    result = runner.invoke(app, [*args, "--overwrite-json"])
    assert "malformed version '1.x'" in result.output  # past the --json check: the flag was read
    assert _deprecations(result.output, "--overwrite-json", "--overwrite") == 1
