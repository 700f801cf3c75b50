"""The commands of the README and of every page under docs/ write only under ignored folders
(``out/`` for runs, reports and mirrors, ``dist/`` for releases, ``/tmp`` for throwaway
models): a newcomer following them never litters the checkout (issue 25, newcomer walk)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parent.parent
FLAGS = ("--out", "--report", "--contact-sheet", "--history", "--json")
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
SHELL_BLOCK = re.compile(r"^[ \t]*```(?:bash|sh|shell|console)[ \t]*\n(.*?)^[ \t]*```", re.M | re.S)


def _commands(pages: list[Path] = PAGES) -> list[str]:
    """Every line of a fenced shell block (README.md and docs/**/*.md) that runs culturebench,
    line continuations joined and comments dropped."""
    blocks = [b for page in pages for b in SHELL_BLOCK.findall(page.read_text(encoding="utf-8"))]
    joined = "\n".join(blocks).replace("\\\n", " ")
    return [line.split(" #")[0] for line in joined.splitlines() if "culturebench " in line]


def _written_paths(command: str) -> list[str]:
    words = shlex.split(command.replace("&&", ";").replace(";", " ; "), posix=True)
    out = []
    for i, word in enumerate(words):
        if word in FLAGS and i + 1 < len(words):
            out.append(words[i + 1])
        elif word.startswith("--to") and i + 1 < len(words) and words[i + 1].startswith("git:"):
            out.append(words[i + 1][4:])
        elif word == "tiny-model" and i + 1 < len(words):
            out.append(words[i + 1])
    return out


def test_readme_outputs_go_under_ignored_folders() -> None:
    ignored = (REPO / ".gitignore").read_text(encoding="utf-8").split()
    assert "/out/" in ignored and "/dist/" in ignored
    paths = [(c, p) for c in _commands() for p in _written_paths(c)]
    assert len(paths) > 60  # the README and docs really are parsed
    stray = [(c, p) for c, p in paths if not p.startswith(("out/", "dist/", "/tmp/", "$"))]
    assert not stray, stray


def test_readme_rebuilds_say_overwrite() -> None:
    """A second `build NAME --source/--images` into dist/ after the first would stop at
    "exists" (a build into its own `--out` folder is a first build there; the docs walk runs
    every page in order and would fail on "exists")."""
    builds = [c for c in _commands() if re.search(r"culturebench build \w+", c)]
    assert builds
    for command in builds:
        if ("--source" in command or "--images" in command) and "--out" not in command:
            assert "--overwrite" in command or "foodieqa" in command, command


def test_every_page_with_commands_is_read() -> None:
    """The README and the docs pages are all parsed (a page's commands count)."""
    with_commands = [p for p in PAGES if _commands([p])]
    assert REPO / "README.md" in with_commands
    assert REPO / "docs" / "datasets" / "borsch.md" in with_commands
    assert len(with_commands) >= 10, with_commands


def test_url_checks_name_their_report() -> None:
    """Without --report, check-urls writes url-reports/<dataset> inside the checkout."""
    checks = [c for c in _commands() if "culturebench check-urls " in c]
    assert checks
    assert all("--report" in c for c in checks), checks
