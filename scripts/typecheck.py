"""Type-check culturebench with mypy against a baseline that may only shrink.

The repository's folders are sub-packages of ``culturebench`` (``eval/`` is
``culturebench.eval``, see setup.py), a mapping mypy cannot read; so the check runs on a tree
of symbolic links laid out as the installed package. It checks the shared code (the
``culturebench`` modules and ``builders``, ``validation``, ``eval``, ``cards``), counts mypy's
errors per file and compares them with ``scripts/typecheck_baseline.json``:

- a file with more errors than its baseline (or a new file with any) fails the check;
- a file with fewer errors is reported, and ``--update`` writes the smaller baseline.

    .venv/bin/python scripts/typecheck.py            # check (exit 1 when errors grew)
    .venv/bin/python scripts/typecheck.py --update   # after fixing errors: lower the baseline
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BASELINE = REPO / "scripts" / "typecheck_baseline.json"
MAPPED = ("builders", "validation", "eval", "cards", "datasets")  # folder -> culturebench.<folder>
CHECKED = ("builders", "validation", "eval", "cards")  # and every culturebench/ module
ERROR = re.compile(r"^(?P<file>[^:\s]+\.py):\d+: error: ")


def package_tree(root: Path) -> Path:
    """``root/culturebench``: links to culturebench/'s entries and the mapped folders."""
    package = root / "culturebench"
    package.mkdir()
    for entry in (REPO / "culturebench").iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    for folder in MAPPED:
        (package / folder).symlink_to(REPO / folder)
    return package


def targets(package: Path) -> list[str]:
    """mypy ``-p``/``-m`` arguments: each culturebench module and sub-package, the checked folders."""
    out: list[str] = []
    for entry in sorted(package.iterdir()):
        if entry.name in MAPPED and entry.name not in CHECKED:
            continue
        if entry.suffix == ".py" and entry.name != "__init__.py":
            out += ["-m", f"culturebench.{entry.stem}"]
        elif entry.is_dir() and (entry / "__init__.py").exists():
            out += ["-p", f"culturebench.{entry.name}"]
    return out


def run_mypy() -> tuple[Counter[str], list[str]]:
    """Errors per file and the error lines (repository-relative paths)."""
    with tempfile.TemporaryDirectory(prefix="cb-typecheck-") as tmp:
        package = package_tree(Path(tmp))  # (links: mypy's cache still keys on the real files)
        command = [
            sys.executable, "-m", "mypy", *targets(package), "--ignore-missing-imports",
            "--follow-imports=silent", "--no-error-summary", "--show-error-codes", "--no-color-output",
            "--cache-dir", str(REPO / ".mypy_cache"),
        ]  # fmt: skip
        done = subprocess.run(
            command, cwd=tmp, env={"MYPYPATH": tmp, "PATH": ""}, capture_output=True, text=True
        )
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
    """``culturebench/eval/x.py`` (in the link tree) -> ``eval/x.py`` (in the repository)."""
    parts = Path(path).parts
    if len(parts) > 1 and parts[0] == "culturebench" and parts[1] in MAPPED:
        return str(Path(*parts[1:]))
    return path


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
