"""Which packages and data files the wheel holds, found rather than listed.

The repository's top-level folders are sub-packages of ``culturebench`` through the committed
links in ``culturebench/`` (``culturebench/eval`` -> ``../eval``, ...; docs/layout.md): the
links are the one place that mapping is written, and setuptools follows them like folders, so
the wheel holds one import name (no generic ``eval``/``builders``/``datasets``). Every package
below ``culturebench/`` is found by ``setuptools.find_packages``. A package's data files are
the non-Python files in its folder and in its sub-folders that are not packages (prompts,
declarations, shipped samples, templates). Everything else about the project is in
``pyproject.toml``.
"""

from __future__ import annotations

from pathlib import Path

from setuptools import find_packages, setup

ROOT = Path(__file__).resolve().parent
TOP = "culturebench"
# Namespace packages (no ``__init__.py``): the top-level ``datasets/`` folder must never shadow
# the Hugging Face ``datasets`` library when Python runs from the repository root.
NAMESPACES = ("culturebench.datasets",)
SKIPPED = {"__pycache__"}


def _unfollowed_links() -> dict[str, str]:
    """Package -> repository folder for the links of ``culturebench/`` that the checkout holds as
    plain files (git without symbolic links, e.g. on Windows without ``core.symlinks``, writes a
    link as a small file holding its target). Real links need no entry: they are folders."""
    out: dict[str, str] = {}
    for entry in sorted((ROOT / TOP).iterdir()):
        if entry.is_symlink() or not entry.is_file() or entry.suffix:
            continue
        target = (entry.parent / entry.read_text(encoding="utf-8").strip()).resolve()
        if target.is_dir() and ROOT in target.parents:
            out[f"{TOP}.{entry.name}"] = target.relative_to(ROOT).as_posix()
    return out


PACKAGE_DIR = _unfollowed_links()


def _folder(package: str) -> Path:
    for name in sorted(PACKAGE_DIR, key=len, reverse=True):
        if package == name or package.startswith(name + "."):
            return ROOT / PACKAGE_DIR[name] / package[len(name) :].lstrip(".").replace(".", "/")
    return ROOT / package.replace(".", "/")


def _packages() -> list[str]:
    found: set[str] = set()
    for name in (TOP, *PACKAGE_DIR, *NAMESPACES):
        found |= {name, *(f"{name}.{sub}" for sub in find_packages(str(_folder(name))))}
    return sorted(found)


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
                name = ".".join([package, *path.relative_to(folder).parts])
                if path.name in SKIPPED or path.name.startswith(".") or name in PACKAGE_DIR:
                    continue
                if path.is_dir():
                    if name not in packages:  # a sub-package ships its own data
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
