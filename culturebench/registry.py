"""The dataset registry: every dataset is one folder, found by its ``dataset.yaml``.

A dataset folder holds its declarations (``dataset.yaml``, datasheet, changelog, prompts)
and its code, named in ``dataset.yaml``::

    code:
      builder: builder:BorschBuilder   # module:class, a DatasetBuilder
      checks: checks                   # SCHEMAS (+ CROSS_CHECKS, cross_checks(frames))
      tasks: tasks, description        # TASKS: {name: Task class}, merged from each module
      paper: paper_report              # optional: the functions paper.yaml's items name
      cli: cli                         # optional: register(eval_app) adds `eval` commands,
                                       #   register_corpus(corpus_app) `corpus` commands
      corpus: corpus                   # optional: which names a corpus count looks for
      report: report                   # optional: summary_files(results, out) for `eval score`

Modules are relative to the dataset's code package. Built-in datasets live in
``datasets/<name>/`` (package ``culturebench.datasets.<name>``); a separate package
registers its own with an entry point in the group ``culturebench.datasets`` whose value is
the import name of a package holding ``dataset.yaml`` and the modules, e.g. in its
``pyproject.toml``::

    [project.entry-points."culturebench.datasets"]
    toy = "culturebench_toy"

A dataset's name is its folder's (or its entry point's) and is written nowhere else: task
classes and the builder read it (:class:`DatasetName`), and a ``dataset.yaml`` ``name``, a
task or a builder that says otherwise is refused, as is a task name that is not lowercase
words joined by hyphens. Discovery checks that every declared module exists; a missing piece
is an error then, naming the dataset, not a warning in the middle of a run. Shared code asks
the registry and never names a dataset.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from culturebench.errors import CultureBenchError, UnknownDatasetError
from culturebench.yamlio import load_yaml

ENTRY_POINT_GROUP = "culturebench.datasets"
TASK_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
REQUIRED_PARTS = ("builder", "checks", "tasks")
OPTIONAL_PARTS = ("report", "cli", "corpus", "paper")


class RegistryError(CultureBenchError):
    """A dataset folder is incomplete or declares code that does not exist."""


@dataclass(frozen=True)
class DatasetEntry:
    """One registered dataset: where its declarations are and where its code lives."""

    name: str
    folder: Path
    package: str
    code: dict[str, str] = field(default_factory=dict)
    origin: str = "built-in"  # or the entry point's distribution

    def module(self, part: str) -> ModuleType | None:
        """The imported module of a code part (None for an undeclared optional part)."""
        target = self.code.get(part)
        if target is None:
            if part in REQUIRED_PARTS:
                raise RegistryError(f"dataset {self.name!r} declares no {part} (dataset.yaml code.{part})")
            return None
        return importlib.import_module(f"{self.package}.{target.partition(':')[0]}")

    def _declared(self, part: str) -> ModuleType:
        """The module of a part the dataset must declare."""
        module = self.module(part)
        if module is None:
            raise RegistryError(f"dataset {self.name!r} declares no {part} (dataset.yaml code.{part})")
        return module

    def _attr(self, part: str, default_attr: str) -> Any:
        target = self.code[part]
        attr = target.partition(":")[2] or default_attr
        module = self._declared(part)
        try:
            return getattr(module, attr)
        except AttributeError:
            raise RegistryError(
                f"dataset {self.name!r}: {module.__name__} has no {attr!r} (dataset.yaml code.{part})"
            ) from None

    def checks(self) -> ModuleType:
        """The module with ``SCHEMAS`` and optionally ``CROSS_CHECKS``/``cross_checks``."""
        module = self._declared("checks")
        if not hasattr(module, "SCHEMAS"):
            raise RegistryError(f"dataset {self.name!r}: {module.__name__} has no SCHEMAS")
        return module

    def builder_class(self) -> type:
        cls = self._attr("builder", "Builder")
        self._check_owner(cls, cls.name, "code.builder")
        return cls

    def tasks(self) -> dict[str, type]:
        """Task name -> Task class; every class belongs to this dataset and is listed under
        its own name."""
        tasks: dict[str, type] = {}
        for target in _targets(self.code["tasks"]):
            module = importlib.import_module(f"{self.package}.{target.partition(':')[0]}")
            attr = target.partition(":")[2] or "TASKS"
            if not isinstance(getattr(module, attr, None), dict):
                raise RegistryError(
                    f"dataset {self.name!r}: {module.__name__} has no {attr!r} (dataset.yaml code.tasks)"
                )
            tasks.update(getattr(module, attr))
        for key, cls in tasks.items():
            self._check_owner(cls, getattr(cls, "dataset", None), "code.tasks")
            name = getattr(cls, "name", None)
            if key != name:
                raise RegistryError(f"dataset {self.name!r}: task {name!r} is listed as {key!r}")
            if not TASK_NAME.fullmatch(key):
                raise RegistryError(
                    f"dataset {self.name!r}: task name {key!r} is not lowercase words joined by hyphens "
                    "(keep an old name in the class's `aliases`)"
                )
        return tasks

    def _check_owner(self, cls: type, declared: str | None, part: str) -> None:
        if declared != self.name:
            raise RegistryError(
                f"dataset {self.name!r}: {cls.__module__}.{cls.__qualname__} ({part}) says it belongs to "
                f"{declared!r}; a dataset's name is its folder's (leave it undeclared)"
            )

    def report(self) -> ModuleType | None:
        return self.module("report")


def _targets(value: str) -> list[str]:
    """The ``module[:attr]`` targets of a code part (``tasks`` may list several, comma-separated)."""
    return [t.strip() for t in value.split(",") if t.strip()]


def _read_code(folder: Path, name: str) -> dict[str, str]:
    path = folder / "dataset.yaml"
    try:
        raw = load_yaml(path) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise RegistryError(f"{path}: unreadable ({exc})") from None
    code = raw.get("code")
    if not isinstance(code, dict):
        raise RegistryError(f"{path}: no `code:` block naming the dataset's builder, checks and tasks")
    unknown = sorted(set(code) - set(REQUIRED_PARTS) - set(OPTIONAL_PARTS))
    if unknown:
        raise RegistryError(f"{path}: unknown code part(s) {unknown}")
    return {str(k): str(v) for k, v in code.items()}


def _checked(entry: DatasetEntry) -> DatasetEntry:
    path = entry.folder / "dataset.yaml"
    declared = (load_yaml(path) or {}).get("name")
    if declared != entry.name:
        raise RegistryError(f"{path}: name {declared!r} is not the dataset's name {entry.name!r}")
    for part in REQUIRED_PARTS:
        if part not in entry.code:
            raise RegistryError(
                f"dataset {entry.name!r} ({entry.folder}): dataset.yaml code.{part} is missing"
            )
    for part, target in ((p, t) for p, value in entry.code.items() for t in _targets(value)):
        module = f"{entry.package}.{target.partition(':')[0]}"
        try:
            found = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            found = None
        if found is None:
            raise RegistryError(f"dataset {entry.name!r}: code.{part} names {module}, which does not exist")
    return entry


BUILTIN_PACKAGE = "culturebench.datasets"


def _package_candidates() -> list[Path]:
    """The folder of the ``culturebench.datasets`` package, as Python imports it: inside the
    package in a wheel install, the repository's top-level ``datasets/`` in a checkout (through
    the link ``culturebench/datasets``, or an editable install's mapping)."""
    spec = importlib.util.find_spec(BUILTIN_PACKAGE)
    locations = spec.submodule_search_locations if spec is not None else None
    return [Path(p).resolve() for p in locations or () if Path(p).is_dir()]


def _first_with_datasets(candidates: list[Path], what: str) -> Path:
    for cand in candidates:
        if any(cand.glob("*/dataset.yaml")):
            return cand
    raise CultureBenchError(f"{what} not found (looked in " + ", ".join(map(str, candidates)) + ")")


def builtin_datasets_folder() -> Path:
    """Where the built-in dataset folders (declarations and code) are installed: inside the
    package when installed from a wheel, the repository's top-level ``datasets/`` in a
    source checkout."""
    return _first_with_datasets(_package_candidates(), "built-in datasets")


def datasets_root() -> Path:
    """Folder holding ``<name>/dataset.yaml`` for every dataset: the built-in folder, unless
    ``$CULTUREBENCH_DATASETS`` names another."""
    env = os.environ.get("CULTUREBENCH_DATASETS")
    candidates = [Path(env)] if env else []
    return _first_with_datasets([*candidates, *_package_candidates()], "dataset declarations")


def _builtin() -> dict[str, DatasetEntry]:
    out = {}
    for path in sorted(datasets_root().glob("*/dataset.yaml")):
        folder = path.parent
        out[folder.name] = DatasetEntry(
            folder.name, folder, f"{BUILTIN_PACKAGE}.{folder.name}", _read_code(folder, folder.name)
        )
    return out


def builtin_names() -> list[str]:
    """The datasets culturebench ships (its ``datasets/`` folders), sorted; entry-point
    plugins aside."""
    return sorted(_builtin())


def _third_party() -> dict[str, DatasetEntry]:
    from importlib.metadata import entry_points

    out = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        package = ep.value.split(":")[0].strip()
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise RegistryError(f"entry point {ep.name} = {ep.value}: {package} is not an importable package")
        folder = Path(next(iter(spec.submodule_search_locations)))
        if not (folder / "dataset.yaml").is_file():
            raise RegistryError(f"entry point {ep.name} = {ep.value}: {folder} has no dataset.yaml")
        dist = getattr(ep, "dist", None)
        origin = f"{dist.name} {dist.version}" if dist is not None else ep.value
        out[ep.name] = DatasetEntry(ep.name, folder, package, _read_code(folder, ep.name), origin)
    return out


@lru_cache(maxsize=8)
def _discover(_key: tuple[str, ...]) -> dict[str, DatasetEntry]:
    entries = _builtin()
    for name, entry in _third_party().items():
        if name in entries:
            raise RegistryError(
                f"dataset {name!r} is registered twice: built in and by {entry.origin} ({entry.folder})"
            )
        entries[name] = entry
    return {name: _checked(entry) for name, entry in sorted(entries.items())}


def _cache_key() -> tuple[str, ...]:
    """Discovery depends on the declarations folder and on what is importable (sys.path)."""
    import sys

    return (os.environ.get("CULTUREBENCH_DATASETS", ""), *sys.path)


def datasets() -> dict[str, DatasetEntry]:
    """Every registered dataset, by name (built-ins and entry points), checked."""
    return _discover(_cache_key())


def get(name: str) -> DatasetEntry:
    """The registered dataset ``name``; :class:`UnknownDatasetError` naming the known ones."""
    entries = datasets()
    if name not in entries:
        raise UnknownDatasetError(f"unknown dataset {name!r} (known: {', '.join(entries) or 'none'})")
    return entries[name]


def dataset_of(cls: type) -> str:
    """The name of the dataset whose code package defines ``cls`` (or the nearest base class
    defined in one): a dataset's name is written once, as its folder or entry-point name."""
    entries = datasets()
    for klass in cls.__mro__:
        module = klass.__module__
        for name, entry in entries.items():
            if module == entry.package or module.startswith(entry.package + "."):
                return name
    raise RegistryError(f"{cls.__module__}.{cls.__qualname__} is not in a registered dataset's package")


class DatasetName:
    """A class attribute whose value is :func:`dataset_of` the class it is read on
    (``Task.dataset``, ``DatasetBuilder.name``)."""

    def __get__(self, instance: object, owner: type) -> str:
        return dataset_of(owner)
