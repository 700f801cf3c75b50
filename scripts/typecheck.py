"""Type-check culturebench with mypy against a baseline that may only shrink.

mypy reads the checkout as it is: the repository's folders are sub-packages of
``culturebench`` through the links in ``culturebench/`` (``culturebench/eval`` -> ``../eval``,
docs/layout.md), which mypy follows like folders; its configuration is pyproject.toml's
``[tool.mypy]``. It checks the whole package (the ``culturebench`` modules and ``builders``,
``validation``, ``eval``, ``cards``, ``datasets``), counts mypy's errors per file and compares
them with ``scripts/typecheck_baseline.json``:

- a file with more errors than its baseline (or a new file with any) fails the check;
- a file with fewer errors is reported, and ``--update`` writes the smaller baseline.

    .venv/bin/python scripts/typecheck.py            # check (exit 1 when errors grew)
    .venv/bin/python scripts/typecheck.py --update   # after fixing errors: lower the baseline
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "culturebench"
BASELINE = REPO / "scripts" / "typecheck_baseline.json"
UNCHECKED: tuple[str, ...] = ()  # culturebench/ entries left out of the check
ERROR = re.compile(r"^(?P<file>[^:\s]+\.py):\d+: error: ")


def targets() -> list[str]:
    """mypy ``-p``/``-m`` arguments: each culturebench module and sub-package, links included."""
    out: list[str] = []
    for entry in sorted(PACKAGE.iterdir()):
        if entry.name in UNCHECKED:
            continue
        if entry.suffix == ".py" and entry.name != "__init__.py":
            out += ["-m", f"culturebench.{entry.stem}"]
        elif entry.is_dir() and ((entry / "__init__.py").exists() or any(entry.glob("*/__init__.py"))):
            out += ["-p", f"culturebench.{entry.name}"]  # a package, or a namespace one (datasets)
    return out


def run_mypy() -> tuple[Counter[str], list[str]]:
    """Errors per file and the error lines (repository-relative paths)."""
    command = [
        sys.executable,
        "-m",
        "mypy",
        *targets(),
        "--no-error-summary",
        "--no-color-output",
        "--cache-dir",
        str(REPO / ".mypy_cache"),
    ]  # the rest of the configuration: pyproject.toml [tool.mypy]
    env = {"PATH": "", "MYPYPATH": ""}
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"mypy did not run (exit {done.returncode}): {done.stderr.strip()[:500]}")
    counts: Counter[str] = Counter()
    lines: list[str] = []
    for line in done.stdout.splitlines():
        match = ERROR.match(line)
        if match:
            file = _repository_path(match.group("file"))
            counts[file] += 1
            lines.append(file + line[len(match.group("file")) :])
    return counts, lines


def _repository_path(path: str) -> str:
    """``culturebench/eval/x.py`` (through the link) -> ``eval/x.py`` (the file in the repository)."""
    return Path(os.path.realpath(REPO / path)).relative_to(REPO).as_posix()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--update", action="store_true", help="Write the current counts as the baseline.")
    parser.add_argument(
        "--show", action="store_true", help="Print the errors of the files over their baseline."
    )
    args = parser.parse_args(argv)
    counts, lines = run_mypy()
    total = sum(counts.values())
    if args.update or not BASELINE.exists():
        BASELINE.write_text(json.dumps(dict(sorted(counts.items())), indent=1) + "\n", encoding="utf-8")
        print(f"typecheck: baseline written: {total} errors in {len(counts)} files ({BASELINE.name})")
        return 0
    baseline: dict[str, int] = json.loads(BASELINE.read_text(encoding="utf-8"))
    grew = {f: (baseline.get(f, 0), n) for f, n in counts.items() if n > baseline.get(f, 0)}
    shrank = {f: (n, counts.get(f, 0)) for f, n in baseline.items() if counts.get(f, 0) < n}
    print(f"typecheck: {total} mypy errors in {len(counts)} files (baseline {sum(baseline.values())})")
    for file, (before, now) in sorted(shrank.items()):
        print(f"  fewer: {file} {before} -> {now}")
    if shrank and not grew:
        print("  lower the baseline: .venv/bin/python scripts/typecheck.py --update")
    for file, (before, now) in sorted(grew.items()):
        print(f"  MORE: {file} {before} -> {now} (see them: scripts/typecheck.py --show)")
        if args.show:
            for line in lines:
                if line.startswith(file + ":"):
                    print("    " + line)
    return 1 if grew else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
