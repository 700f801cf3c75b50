"""A paper's experiment grid: every run the paper made for one model, declared in the dataset
folder (``grid:`` of ``paper.yaml``) and read here.

Each cell of the grid is one ``eval run``: a task with its options, the languages it prompts in,
the seeds and the sampling settings the paper used. ``eval reproduce`` runs the cells (each an
ordinary run folder named after the cell), ``eval reproduce --plan`` counts their work before a
model is loaded. A cell may read another cell's run folder (CulinaryASH's judge reads the
generations): ``"{cell:NAME}"`` in an option value is that cell's folder.

The block::

    grid:
      sampling: {max_new_tokens: 200, temperature: 0.0}   # every cell's default
      assumed: [temperature]     # the settings the paper does not state (default: none)
      cells:
        - name: country            # the cell's folder (default: the task name); unique
          task: country
          kind: text               # text | vision | image (text-to-image) | analysis
          langs: [en]              # default: all the task's languages
          seeds: [0, 1, 2, 3, 4]   # default: one greedy pass, no seed
          sampling: {temperature: 1.0}
          assumed: [temperature]   # default: the grid's
          options: {}              # task options (``--option``)
          source: Table H.9, footnote 9 (5 seeds)
          why: what the paper does not state and what this package assumes instead

Every run of a cell records its sampling, where it came from and which settings are assumed
(``assumed``, with the grid's and the cell's ``why``) in its coverage block
(:mod:`culturebench.eval.coverage`): an assumption is written down, not only printed. A grid
that does not declare ``assumed`` says so there ("not declared").

A grid that does not read (unknown key, a task the dataset does not have, an option the task
does not take, a cell read before it is run) is a one-line error naming ``paper.yaml``, the
cell and the field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from culturebench.errors import CultureBenchError

KINDS = ("text", "vision", "image", "analysis")
# which cells a backend runs by default: text backends the text cells, image backends the
# text-to-image cells; vision-language models are named with --kind vision
DEFAULT_KINDS = {"text": ("text",), "image": ("image",)}
SAMPLING_KEYS = ("max_new_tokens", "temperature")
CELL_KEYS = {"name", "task", "kind", "langs", "seeds", "sampling", "assumed", "options", "source", "why"}
_CELL_REF = re.compile(r"^\{cell:([A-Za-z0-9._-]+)\}$")


class GridError(CultureBenchError):
    """A ``grid:`` block that does not read, or a cell that cannot run."""


@dataclass(frozen=True)
class Cell:
    """One run of the paper's grid."""

    name: str
    task: str
    kind: str
    langs: tuple[str, ...]
    seeds: tuple[int, ...] | None
    max_new_tokens: int
    temperature: float
    options: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""
    why: str = ""
    # the sampling settings the paper does not state (None: the grid does not declare them)
    assumed: tuple[str, ...] | None = None
    grid_why: str = ""  # what the grid as a whole says the paper leaves unstated

    def sampling_source(self, grid_file: str) -> dict[str, Any]:
        """Where this cell's sampling comes from, for a run's coverage: the grid cell, the
        settings it assumes and why."""
        why = " ".join(part for part in (self.grid_why, self.why) if part)
        return {
            "source": f"{grid_file} grid cell {self.name!r} (eval reproduce)",
            "assumed": None if self.assumed is None else list(self.assumed),
            "why": why,
        }

    @property
    def needs(self) -> tuple[str, ...]:
        """Names of the cells whose run folders this cell reads (through its options)."""
        return tuple(m.group(1) for v in self.options.values() if (m := _CELL_REF.match(str(v))))

    def options_for(self, folders: Mapping[str, Path]) -> dict[str, Any]:
        """The task options with every ``{cell:NAME}`` replaced by that cell's folder."""
        out: dict[str, Any] = {}
        for key, value in self.options.items():
            match = _CELL_REF.match(str(value))
            out[key] = str(folders[match.group(1)]) if match else value
        return out

    @property
    def generations_per_request(self) -> int:
        """How many times each request is generated (one per seed)."""
        return len(self.seeds) if self.seeds else 1


@dataclass(frozen=True)
class Grid:
    """A dataset's grid: its cells in run order."""

    dataset: str
    cells: tuple[Cell, ...]
    path: Path
    why: str = ""  # what the paper leaves unstated, for every cell

    def cell(self, name: str) -> Cell:
        for cell in self.cells:
            if cell.name == name:
                return cell
        raise GridError(f"{self.path}: grid has no cell {name!r} (cells: {', '.join(self.names)})")

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.cells]

    def select(
        self, *, only: Sequence[str] = (), skip: Sequence[str] = (), kinds: Sequence[str] = ()
    ) -> list[Cell]:
        """The cells to run: ``only`` (cell or task names; default every cell of ``kinds``),
        minus ``skip``. A name that is neither a cell nor a task of the grid is an error; a cell
        whose input cell is left out is kept (its input must then exist in the output folder)."""
        for flag, names in (("--only", only), ("--skip", skip)):
            for name in names:
                if not any(name in (c.name, c.task) for c in self.cells):
                    raise GridError(
                        f"{flag} {name}: not a cell or task of the {self.dataset} grid "
                        f"(cells: {', '.join(self.names)})"
                    )
        chosen = [
            c
            for c in self.cells
            if (any(n in (c.name, c.task) for n in only) if only else c.kind in kinds)
            and not any(n in (c.name, c.task) for n in skip)
        ]
        if not chosen:
            raise GridError(
                f"no cell of the {self.dataset} grid to run (kinds {', '.join(kinds) or '-'}; "
                f"cells: {', '.join(f'{c.name} ({c.kind})' for c in self.cells)})"
            )
        return chosen


def load_grid(dataset: str) -> Grid:
    """The ``grid:`` block of the dataset's ``paper.yaml``, checked against the dataset's tasks."""
    from culturebench import registry
    from culturebench.cards.paper import read_catalogue

    folder = registry.get(dataset).folder
    path = folder / "paper.yaml"
    block = (read_catalogue(folder) or {}).get("grid")
    if not block:
        raise GridError(f"{path}: no 'grid:' block (the runs of the paper); `eval reproduce` needs one")
    return parse_grid(dataset, block, path)


def parse_grid(dataset: str, block: Any, path: Path) -> Grid:
    """A grid from its YAML block; errors name ``path``, the cell and the field."""
    if not isinstance(block, Mapping) or not isinstance(block.get("cells"), list) or not block["cells"]:
        raise GridError(f"{path}: grid: needs 'cells:', a list of runs")
    unknown = set(block) - {"sampling", "assumed", "cells", "why"}
    if unknown:
        raise GridError(
            f"{path}: grid: unknown key {sorted(unknown)[0]!r} (keys: sampling, assumed, cells, why)"
        )
    defaults = _sampling(block.get("sampling") or {}, f"{path}: grid.sampling")
    assumed = _assumed(block.get("assumed"), f"{path}: grid.assumed")
    why = " ".join(str(block.get("why", "")).split())
    cells: list[Cell] = []
    for index, raw in enumerate(block["cells"]):
        cell = _cell(dataset, raw, index, defaults, path, {c.name for c in cells})
        if cell.assumed is None:
            cell = replace(cell, assumed=assumed)
        cells.append(replace(cell, grid_why=why))
    return Grid(dataset, tuple(cells), path, why)


def _assumed(raw: Any, where: str) -> tuple[str, ...] | None:
    """``assumed:``: a list of sampling settings (:data:`SAMPLING_KEYS`); None when absent."""
    if raw is None:
        return None
    if not isinstance(raw, list) or any(key not in SAMPLING_KEYS for key in raw):
        raise GridError(f"{where}: expected a list of {', '.join(SAMPLING_KEYS)}, got {raw!r}")
    return tuple(raw)


def _sampling(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise GridError(f"{where}: expected a mapping of {', '.join(SAMPLING_KEYS)}")
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in SAMPLING_KEYS:
            raise GridError(f"{where}: unknown setting {key!r} (settings: {', '.join(SAMPLING_KEYS)})")
        if key == "max_new_tokens" and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise GridError(f"{where}.max_new_tokens: expected a positive integer, got {value!r}")
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if key == "temperature" and (not number or value < 0):
            raise GridError(f"{where}.temperature: expected a number >= 0, got {value!r}")
        out[key] = value
    return out


def _cell(
    dataset: str, raw: Any, index: int, defaults: Mapping[str, Any], path: Path, earlier: set[str]
) -> Cell:
    from culturebench.eval.tasks import task_class

    if not isinstance(raw, Mapping) or not isinstance(raw.get("task"), str):
        raise GridError(f"{path}: grid cell {index + 1}: needs 'task:' (a task name)")
    name = str(raw.get("name") or raw["task"])
    where = f"{path}: grid cell {name!r}"
    unknown = set(raw) - CELL_KEYS
    if unknown:
        raise GridError(f"{where}: unknown key {sorted(unknown)[0]!r} (keys: {', '.join(sorted(CELL_KEYS))})")
    if not re.fullmatch(r"[A-Za-z0-9._-]+", name) or name in earlier:
        why = "given twice" if name in earlier else "letters, digits, '.', '_' and '-' only (a folder name)"
        raise GridError(f"{where}: name: {why}")
    try:
        klass = task_class(dataset, raw["task"])
    except CultureBenchError as exc:
        raise GridError(f"{where}: task: {exc}") from None
    kind = raw.get("kind", "text")
    if kind not in KINDS:
        raise GridError(f"{where}: kind: {kind!r} is not one of {', '.join(KINDS)}")
    langs = tuple(raw.get("langs") or klass.languages)
    bad = [lang for lang in langs if lang not in klass.languages]
    if bad:
        known = ", ".join(klass.languages)
        raise GridError(f"{where}: langs: {bad[0]!r} is not a language of the task ({known})")
    seeds = raw.get("seeds")
    if seeds is not None and (
        not isinstance(seeds, list)
        or not seeds
        or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in seeds)
        or len(set(seeds)) != len(seeds)
    ):
        raise GridError(f"{where}: seeds: expected distinct integers >= 0, got {seeds!r}")
    options = raw.get("options") or {}
    if not isinstance(options, Mapping):
        raise GridError(f"{where}: options: expected a mapping of task options")
    accepted = klass.accepted_options()
    for key, value in options.items():
        if key not in accepted:
            raise GridError(
                f"{where}: options: {klass.dataset}/{klass.name} has no option {key!r} "
                f"(its options: {', '.join(sorted(accepted)) or 'none'})"
            )
        match = _CELL_REF.match(str(value))
        if match and match.group(1) not in earlier:
            raise GridError(f"{where}: options.{key}: {value} names no earlier cell")
    sampling = {**defaults, **_sampling(raw.get("sampling") or {}, f"{where}: sampling")}
    return Cell(
        name=name,
        task=klass.name,
        kind=kind,
        langs=langs,
        seeds=tuple(seeds) if seeds else None,
        max_new_tokens=int(sampling.get("max_new_tokens", 200)),
        temperature=float(sampling.get("temperature", 0.0)),
        options=dict(options),
        source=" ".join(str(raw.get("source", "")).split()),
        why=" ".join(str(raw.get("why", "")).split()),
        assumed=_assumed(raw.get("assumed"), f"{where}: assumed"),
    )
