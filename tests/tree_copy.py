"""A copy of the working tree as git sees it (tracked files and untracked ones that are not
ignored), for tests that need a fresh checkout: the wheel build, the docs walk."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def clean_copy(dest: Path) -> Path:
    """Copy the tree to ``dest`` (no ``build/``, ``dist/``, ``out/`` or caches: a wheel built
    in the checkout itself would reuse a stale ``build/`` folder and ship deleted modules)."""
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        check=True,
        capture_output=True,
    ).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        source, target = REPO / rel, dest / rel
        if source.is_symlink():  # the package's links (culturebench/eval -> ../eval): kept as links
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(os.readlink(source))
        elif source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return dest
