"""The documentation stays runnable as written: every ``culturebench ...`` command in a fenced
shell block of README.md and docs/**/*.md names a command the CLI has and only options of that
command (with a value where the option takes one, and one of its choices where it has
choices); every relative link points at a file that exists (and at a heading that exists); the
README's install and test commands are the ones ``.ci/run`` runs, within its first screen."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
SHELL = {"bash", "sh", "shell", "console"}
OPERATORS = {"&&", "||", ";", "|", "&", ";;"}
PLACEHOLDER = re.compile(r"^(<[^>]*>|\[.*\]|\.\.\.|…)$")
FENCE = re.compile(r"^([ \t]*)```([\w-]*)[^\n]*\n(.*?)^[ \t]*```[ \t]*$", re.M | re.S)


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced block, indented ones (inside list items) included."""
    blocks = []
    for match in FENCE.finditer(text):
        indent = len(match.group(1))
        body = "\n".join(line[indent:] for line in match.group(3).splitlines())
        blocks.append((match.group(2).lower(), body))
    return blocks


def shell_commands(path: Path) -> list[list[str]]:
    """Every simple command (argv) of the file's fenced shell blocks: line continuations joined,
    comments dropped, `&&`, `;` and `|` lists split."""
    commands = []
    for language, body in fenced_blocks(path.read_text(encoding="utf-8")):
        if language not in SHELL:
            continue
        for line in body.replace("\\\n", " ").splitlines():
            lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
            lexer.whitespace_split = True
            current: list[str] = []
            for token in lexer:
                if token in OPERATORS:
                    commands.append(current)
                    current = []
                else:
                    current.append(token)
            commands.append(current)
    return [c for c in commands if c]


def culturebench_argv(command: list[str]) -> list[str] | None:
    """The arguments after ``culturebench`` (also ``.venv/bin/culturebench``, after ``VAR=x``
    assignments), or None for any other program."""
    words = list(command)
    while words and re.match(r"^[A-Za-z_]\w*=", words[0]):
        words.pop(0)
    if words and (words[0] == "culturebench" or words[0].endswith("/culturebench")):
        return words[1:]
    return None


def _options(command: Any) -> dict[str, Any]:
    table = {"--help": None}
    for param in command.params:
        if getattr(param, "param_type_name", "") == "option":
            for name in [*param.opts, *param.secondary_opts]:
                table[name] = param
    return table


def _arguments(command: Any) -> list[Any]:
    return [p for p in command.params if getattr(p, "param_type_name", "") == "argument"]


def _root() -> Any:
    import typer.main

    from culturebench.cli import app

    return typer.main.get_command(app)


def check(argv: list[str], root: Any = None) -> list[str]:
    """Why ``culturebench ARGV`` would not run as written (empty when it would): an unknown
    command, an option the command does not have or keeps only as a deprecated spelling, an
    option without its value, a value that is not one of the option's choices, too many or too
    few arguments."""
    node = root if root is not None else _root()
    path = ["culturebench"]
    problems: list[str] = []
    positionals: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        i += 1
        if PLACEHOLDER.match(word) and hasattr(node, "commands"):
            return [f"{' '.join(path)}: a placeholder {word!r} where a command belongs"]
        if word.startswith("-") and word != "-":
            name, eq, value = word.partition("=")
            options = _options(node)
            if name not in options:
                problems.append(f"{' '.join(path)}: no option {name}")
                continue
            param = options[name]
            if getattr(param, "hidden", False):  # a deprecated spelling (docs/commands.md#names)
                problems.append(f"{' '.join(path)}: {name} is a deprecated spelling")
            if param is None or param.is_flag or getattr(param, "count", False):
                if eq:
                    problems.append(f"{' '.join(path)}: {name} takes no value")
                continue
            values = [value] if eq else argv[i : i + max(param.nargs, 1)]
            if not eq:
                i += len(values)
            if len(values) < max(param.nargs, 1) or any(v.startswith("--") for v in values):
                problems.append(f"{' '.join(path)}: {name} needs a value")
                continue
            choices = getattr(getattr(param, "type", None), "choices", None)  # click.Choice
            for v in values:
                if choices and v not in choices and not v.startswith("$") and not PLACEHOLDER.match(v):
                    problems.append(f"{' '.join(path)}: {name} {v!r} is not one of {list(choices)}")
            continue
        if hasattr(node, "commands"):
            if word not in node.commands:
                return [f"{' '.join(path)}: no command {word!r} (has {sorted(node.commands)})"]
            node = node.commands[word]
            path.append(word)
            continue
        if PLACEHOLDER.match(word):
            if word in {"...", "…"}:
                return problems  # "and so on": the rest is not written out
            continue
        positionals.append(word)
    if hasattr(node, "commands"):
        if "--help" not in argv:
            problems.append(f"{' '.join(path)}: a command group, not a command")
        return problems
    arguments = _arguments(node)
    most = None if any(a.nargs == -1 for a in arguments) else sum(a.nargs for a in arguments)
    least = sum(max(a.nargs, 1) if a.required else 0 for a in arguments)
    if "--help" not in argv:
        if most is not None and len(positionals) > most:
            problems.append(f"{' '.join(path)}: {len(positionals)} arguments, at most {most}")
        if len(positionals) < least:
            problems.append(f"{' '.join(path)}: {len(positionals)} arguments, needs {least}")
    return problems


def documented_commands() -> list[tuple[str, list[str]]]:
    out = []
    for path in DOCS:
        for command in shell_commands(path):
            argv = culturebench_argv(command)
            if argv is not None:
                out.append((str(path.relative_to(REPO)), argv))
    return out


def test_every_documented_command_runs_as_written() -> None:
    root = _root()
    commands = documented_commands()
    assert len(commands) > 80  # the docs really are parsed
    pages = {page for page, _ in commands}
    assert "README.md" in pages and len(pages) >= 10, pages
    bad = [
        f"{page}: culturebench {shlex.join(argv)}: {why}"
        for page, argv in commands
        for why in check(argv, root)
    ]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("culturebench build borsch --overwrit", "no option --overwrit"),
        ("culturebench validate dist/borsch/1.0.0 --jsn out/v.json", "no option --jsn"),
        ("culturebench eval run rubin --tsk mcqa --model M", "no option --tsk"),
        ("culturebench biuld borsch", "no command 'biuld'"),
        ("culturebench eval rnu borsch", "no command 'rnu'"),
        ("culturebench eval run borsch --task", "--task needs a value"),
        ("culturebench build borsch --overwrite=yes", "--overwrite takes no value"),
        ("culturebench validate", "0 arguments, needs 1"),
        ("culturebench eval", "a command group, not a command"),
        ("culturebench corpus count borsch --corpus x --lang uk --wrokers 2", "no option --wrokers"),
        ("culturebench eval run wwd --task country --model M --seeds 0,1", "--seeds is a deprecated"),
        ("culturebench eval results out/r --out o --to-repo a/b", "--to-repo is a deprecated spelling"),
    ],
)
def test_the_check_catches_a_misspelt_command(line: str, why: str) -> None:
    problems = check(culturebench_argv(shlex.split(line)) or [])
    assert any(why in p for p in problems), problems


def test_the_check_accepts_what_the_docs_write() -> None:
    for line in (
        "culturebench --debug build borsch --overwrite --source path/to/snapshot",
        ".venv/bin/culturebench validate dist/borsch/1.0.0",
        "culturebench eval run borsch --task origin-qa --model M --option config=ru --limit=5",
        "culturebench eval run wwd --task country --model M --repeat-seeds 0,1,2 ...",
        "culturebench eval --help",
    ):
        assert check(culturebench_argv(shlex.split(line)) or []) == [], line


def test_shell_blocks_are_split_into_commands(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "text `culturebench nothing` here\n\n"
        "```bash\n"
        "U=x culturebench build wwd   # a comment --bogus\n"
        "culturebench eval tiny-model /tmp/a && culturebench eval run wwd \\\n"
        "    --task country --model /tmp/a\n"
        "```\n\n"
        "1. a list item\n"
        "   ```sh\n"
        "   .venv/bin/culturebench list; echo done\n"
        "   ```\n"
        "```python\nculturebench = 1\n```\n",
        encoding="utf-8",
    )
    argvs = [culturebench_argv(c) for c in shell_commands(page)]
    assert [a for a in argvs if a is not None] == [
        ["build", "wwd"],
        ["eval", "tiny-model", "/tmp/a"],
        ["eval", "run", "wwd", "--task", "country", "--model", "/tmp/a"],
        ["list"],
    ]


# --- links --------------------------------------------------------------------------------

LINK = re.compile(r"(?<!\!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|<[^>]+>", "", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    for _, body in fenced_blocks(text):
        text = text.replace(body, "")
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*$", text, re.M)}


def _links(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    for _, body in fenced_blocks(text):
        text = text.replace(body, "")
    text = re.sub(r"`[^`\n]*`", "", text)  # code spans are not links
    return LINK.findall(text)


def broken_links(pages: list[Path]) -> tuple[int, list[str]]:
    """(relative links seen, the broken ones): a file that does not exist, or a `#heading` that
    the Markdown file it points into does not have."""
    bad, seen = [], 0
    for page in pages:
        for target in _links(page):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            seen += 1
            file_part, _, anchor = target.partition("#")
            dest = (page.parent / file_part).resolve() if file_part else page
            where = f"{page.name}: ({target})"
            if not dest.exists():
                bad.append(f"{where}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                bad.append(f"{where}: no heading #{anchor} in {dest.name}")
    return seen, bad


def test_every_relative_link_points_at_an_existing_file() -> None:
    seen, bad = broken_links(DOCS)
    assert seen > 100
    assert not bad, "\n".join(bad)


def test_the_link_check_catches_a_broken_link(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other page\n\n## The gate (§3.1, App. L)\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md) [ok](other.md#the-gate-31-app-l) [ok](#a-heading) [web](https://x.org/y)\n"
        "[gone](missing.md) [bad anchor](other.md#no-such-heading) `[code](nowhere.md)`\n\n"
        "## A heading\n\n```bash\necho [not](a-link.md)\n```\n",
        encoding="utf-8",
    )
    seen, bad = broken_links([page])
    assert seen == 5
    assert bad == [
        "page.md: (missing.md): no such file",
        "page.md: (other.md#no-such-heading): no heading #no-such-heading in other.md",
    ]


def test_every_docs_page_is_reachable_from_the_readme() -> None:
    reached, todo = set(), [REPO / "README.md"]
    while todo:
        page = todo.pop()
        if page in reached:
            continue
        reached.add(page)
        for target in _links(page):
            file_part = target.partition("#")[0]
            if file_part.endswith(".md") and not re.match(r"^[a-z][a-z0-9+.-]*:", file_part):
                todo.append((page.parent / file_part).resolve())
    missing = [str(p.relative_to(REPO)) for p in DOCS if p.resolve() not in reached]
    assert not missing, missing


# --- the first screen -----------------------------------------------------------------------


def _section_commands(text: str, heading: str) -> list[str]:
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return [body.strip() for language, body in fenced_blocks(section) if language in SHELL]


def test_readme_install_and_test_commands_are_what_ci_runs() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    install, test = _section_commands(text, "Install"), _section_commands(text, "Test")
    engines = _section_commands(text, "Engine tests (vLLM)")
    types = _section_commands(text, "Type check")
    wheel = _section_commands(text, "Wheel install")
    assert all(len(c) == 1 for c in (install, test, engines, types, wheel)), (install, test)
    ci = [
        line
        for line in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith(("#", "set ", "cd "))
    ]
    assert ci == [install[0], test[0], types[0], wheel[0], engines[0]]
    head = "\n".join(text.splitlines()[:40])
    assert install[0] in head and test[0] in head  # the first screen


def _leaves(node: Any, path: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    if not hasattr(node, "commands"):
        return {path}
    return {leaf for name, sub in node.commands.items() for leaf in _leaves(sub, (*path, name))}


def test_the_command_table_lists_every_command() -> None:
    """docs/commands.md's table (between its markers) names each CLI command once, and only
    commands the CLI has, dataset plugins' commands included."""
    root = _root()
    text = (REPO / "docs" / "commands.md").read_text(encoding="utf-8")
    block = text.split("<!-- commands:start -->")[1].split("<!-- commands:end -->")[0]
    listed = []
    for row in re.findall(r"^\| `culturebench ([^`]+)`", block, re.M):
        node, path = root, []
        for word in row.split():
            if not hasattr(node, "commands") or word not in node.commands:
                break
            node, path = node.commands[word], [*path, word]
        listed.append(tuple(path))
    assert sorted(listed) == sorted(_leaves(root))


# --- the docs run in order (issue 41) ------------------------------------------------------


def _lines(path: Path) -> list[str]:
    """Every line of the page's fenced shell blocks, continuations joined, comments dropped."""
    out = []
    for language, body in fenced_blocks(path.read_text(encoding="utf-8")):
        if language in SHELL:
            out += [line.split(" #")[0].strip() for line in body.replace("\\\n", " ").splitlines()]
    return [line for line in out if line]


def test_inspect_logs_go_under_out() -> None:
    """Every documented `inspect eval` names `--log-dir out/...` (Inspect's default is ./logs in
    the checkout), and ./logs is ignored by git as a safety net."""
    runs = [(p.name, line) for p in DOCS for line in _lines(p) if line.startswith("inspect eval ")]
    assert len(runs) >= 5, runs
    stray = [(page, line) for page, line in runs if not re.search(r"--log-dir out/\S+", line)]
    assert not stray, stray
    assert "/logs/" in (REPO / ".gitignore").read_text(encoding="utf-8").split()


def test_inspect_logs_scored_are_logs_the_page_made() -> None:
    """A page's `eval score --generations <dir>/<time>_<task>_<id>.eval` reads a log that an
    `inspect eval` line of the same page wrote: same folder, same task (README's example made
    a BORSCH log and scored a WWD one)."""
    seen = 0
    for page in DOCS:
        made = set()
        for line in _lines(page):
            run = re.match(r"inspect eval culturebench/(\w+) .*--log-dir (\S+)", line)
            if run:
                made.add((run.group(2).rstrip("/"), run.group(1).replace("_", "-")))
            scored = re.search(r"--generations (\S+)/<time>_([\w-]+)_<id>\.eval", line)
            if scored:
                seen += 1
                assert (scored.group(1), scored.group(2)) in made, f"{page.name}: {line}"
    assert seen >= 2


def test_paper_reports_do_not_share_a_folder() -> None:
    """Two documented `eval paper` commands of different inputs never write the same --out."""
    by_out: dict[str, set[str]] = {}
    for page in DOCS:
        for command in shell_commands(page):
            argv = culturebench_argv(command) or []
            if argv[:2] == ["eval", "paper"] and "--out" in argv:
                out = argv[argv.index("--out") + 1]
                by_out.setdefault(out, set()).add(" ".join(a for a in argv if a != out))
    assert by_out
    shared = {out: cmds for out, cmds in by_out.items() if len(cmds) > 1}
    assert not shared, shared


def test_releasing_lists_the_steps_of_a_new_version() -> None:
    """docs/releasing.md teaches what the gate's refusals otherwise teach: bump the version,
    a CHANGELOG entry with its Kind, build, validate, release --dry-run, release; and how a
    user loads a `git:` mirror by revision."""
    text = (REPO / "docs" / "releasing.md").read_text(encoding="utf-8")
    steps = text.split("\n## Release a new version\n", 1)[1].split("\n## ", 1)[0]
    order = [
        "dataset.yaml",
        "CHANGELOG.md",
        "Kind:",
        "culturebench build",
        "culturebench validate",
        "--dry-run",
        "without `--dry-run`",
    ]
    where = [steps.find(word) for word in order]
    assert -1 not in where and where == sorted(where), list(zip(order, where, strict=True))
    mirror = text.split("\n## Load a `git:` mirror by revision\n", 1)[1].split("\n## ", 1)[0]
    for needed in ("olah-cli", "mirrors-path", "HF_ENDPOINT=", 'revision="v1.0.0"'):
        assert needed in mirror, needed
