"""The README's commands write only under ignored folders (``out/`` for runs, reports and
mirrors, ``dist/`` for releases, ``/tmp`` for throwaway models): a newcomer following it never
litters the checkout (issue 25, newcomer walk)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FLAGS = ("--out", "--report", "--contact-sheet", "--history")


def _commands() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
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
    assert len(paths) > 40  # the README really is parsed
    stray = [(c, p) for c, p in paths if not p.startswith(("out/", "dist/", "/tmp/", "$"))]
    assert not stray, stray


def test_readme_rebuilds_say_overwrite() -> None:
    """A second `build NAME --source/--images` after the first would stop at "exists"."""
    builds = [c for c in _commands() if re.search(r"culturebench build \w+", c)]
    assert builds
    for command in builds:
        if "--source" in command or "--images" in command:
            assert "--overwrite" in command or "foodieqa" in command, command
