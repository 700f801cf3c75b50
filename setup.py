"""Which packages and data files the wheel holds, found rather than listed.

The repository's top-level folders are installed as sub-packages of ``culturebench`` (one
import name in site-packages: no generic ``eval``/``builders``/``datasets``); every package
below them is found by ``setuptools.find_packages``. A package's data files are the non-Python
files in its folder and in its sub-folders that are not packages (prompts, declarations,
shipped samples, templates). Everything else about the project is in ``pyproject.toml``.
"""

from __future__ import annotations

from pathlib import Path

from setuptools import find_packages, setup

ROOT = Path(__file__).resolve().parent
# installed package -> folder in the repository
PACKAGE_DIR = {
    "culturebench": "culturebench",
    "culturebench.builders": "builders",
    "culturebench.validation": "validation",
    "culturebench.eval": "eval",
    "culturebench.cards": "cards",
    "culturebench.datasets": "datasets",
}
SKIPPED = {"__pycache__"}


def _packages() -> list[str]:
    found = []
    for name, folder in PACKAGE_DIR.items():
        found += [name, *(f"{name}.{sub}" for sub in find_packages(str(ROOT / folder)))]
    return sorted(found)


def _folder(package: str) -> Path:
    for name in sorted(PACKAGE_DIR, key=len, reverse=True):
        if package == name or package.startswith(name + "."):
            rest = package[len(name) :].lstrip(".").replace(".", "/")
            return ROOT / PACKAGE_DIR[name] / rest
    raise ValueError(package)


def _data(packages: list[str]) -> dict[str, list[str]]:
    """Non-Python files of each package, its non-package sub-folders included."""
    out: dict[str, list[str]] = {}
    for package in packages:
        folder = _folder(package)
        files: list[str] = []
        stack = [folder]
        while stack:
            current = stack.pop()
            for path in sorted(current.iterdir()):
                if path.name in SKIPPED or path.name.startswith("."):
                    continue
                if path.is_dir():
                    if not (path / "__init__.py").is_file():  # a sub-package ships its own data
                        stack.append(path)
                elif path.suffix not in (".py", ".pyc"):
                    files.append(path.relative_to(folder).as_posix())
        if files:
            out[package] = sorted(files)
    return out


PACKAGES = _packages()
setup(
    packages=PACKAGES,
    package_dir=PACKAGE_DIR,
    package_data=_data(PACKAGES),
    include_package_data=False,
)
